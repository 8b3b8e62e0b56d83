/*
 * tests/conftest.h: what the unit tests of conf/ share (test_config,
 * test_values, test_help): a temporary directory under /tmp, files
 * written in it and removed at the end, the messages of a struct
 * config_diag, and a command line parsed from a NULL-terminated argv.
 * Header-only, like tap.h; not every test uses every helper.
 */
#ifndef TESTS_CONFTEST_H
#define TESTS_CONFTEST_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf/config.h"

static char tmpdir[64];
static char *tmpfiles[64];
static size_t ntmpfiles;

static const char *write_file(const char *name, const char *text, size_t len)
    __attribute__((unused));
static const char *write_text(const char *name, const char *text)
    __attribute__((unused));
static const char *msg(const struct config_diag *diag, size_t i)
    __attribute__((unused));
static int parse(struct config_args *args, struct config_diag *diag,
    char **argv) __attribute__((unused));

/* Make tmpdir, /tmp/NAME.XXXXXX: 0, or -1 with the reason printed. */
static int
conftest_mkdir(const char *name)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/%s.XXXXXX", name);
	if (mkdtemp(tmpdir) == NULL) {
		fprintf(stderr, "%s: mkdtemp: %s\n", __func__, strerror(errno));
		return -1;
	}
	return 0;
}

/* Write text to tmpdir/name; the path is freed by cleanup(). */
static const char *
write_file(const char *name, const char *text, size_t len)
{
	char *path;
	size_t i;
	FILE *fp;

	if (asprintf(&path, "%s/%s", tmpdir, name) < 0)
		abort();
	if ((fp = fopen(path, "w")) == NULL ||
	    fwrite(text, 1, len, fp) != len || fclose(fp) != 0) {
		fprintf(stderr, "%s: %s: %s\n", __func__, path,
		    strerror(errno));
		abort();
	}
	for (i = 0; i < ntmpfiles; i++) {
		if (strcmp(tmpfiles[i], path) == 0) {
			free(path);
			return tmpfiles[i];
		}
	}
	if (ntmpfiles == sizeof(tmpfiles) / sizeof(tmpfiles[0]))
		abort();
	tmpfiles[ntmpfiles++] = path;
	return path;
}

static const char *
write_text(const char *name, const char *text)
{
	return write_file(name, text, strlen(text));
}

/* Remove the files written and tmpdir. */
static void
cleanup(void)
{
	size_t i;

	for (i = 0; i < ntmpfiles; i++) {
		unlink(tmpfiles[i]);
		free(tmpfiles[i]);
	}
	rmdir(tmpdir);
}

static const char *
msg(const struct config_diag *diag, size_t i)
{
	return i < diag->n ? diag->msgs[i] : NULL;
}

/* Parse argv (NULL-terminated) into args; returns the result. */
static int
parse(struct config_args *args, struct config_diag *diag, char **argv)
{
	int argc = 0;

	while (argv[argc] != NULL)
		argc++;
	return config_parse_args(args, argc, argv, diag);
}

#endif /* TESTS_CONFTEST_H */
