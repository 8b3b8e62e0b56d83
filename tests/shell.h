/*
 * tests/shell.h: run a shell command from a C unit test, for fixtures
 * built with the distribution's tools.  Header-only, like tap.h; a failed
 * command is reported as a TAP comment.
 */
#ifndef TESTS_SHELL_H
#define TESTS_SHELL_H

#include <sys/wait.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

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

#endif /* TESTS_SHELL_H */
