/*
 * tests/shell.h: run a shell command from a C unit test, for fixtures
 * built with the distribution's tools, and what readelf says of a file.
 * Header-only, like tap.h; a failed command is reported as a TAP comment.
 */
#ifndef TESTS_SHELL_H
#define TESTS_SHELL_H

#include <sys/wait.h>

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "indexer/buildid.h"

/* Run a shell command; 1 when it exits 0. */
static int shell(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int
shell(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	fflush(stdout);
	st = system(cmd);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		printf("# command failed (status %d): %s\n", st, cmd);
		return 0;
	}
	return 1;
}

/* The build-id readelf -n prints for path; 0 when it found one. */
static int readelf_buildid(const char *path, struct buildid *id)
    __attribute__((unused));

static int
readelf_buildid(const char *path, struct buildid *id)
{
	char cmd[PATH_MAX + 64], line[1024], *p, *end;
	const char *why;
	FILE *fp;
	int rc = -1;

	snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>/dev/null", path);
	if ((fp = popen(cmd, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), fp) != NULL) {
		if (rc == 0 || (p = strstr(line, "Build ID: ")) == NULL)
			continue;
		p += strlen("Build ID: ");
		for (end = p; *end != '\0' && *end != '\n' && *end != ' ';)
			end++;
		rc = buildid_parse(id, p, (size_t)(end - p), &why);
	}
	if (pclose(fp) != 0)
		rc = -1;
	return rc;
}

#endif /* TESTS_SHELL_H */
