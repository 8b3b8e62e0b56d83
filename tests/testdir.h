/*
 * tests/testdir.h: one temporary directory per unit test, under $TMPDIR
 * (or /tmp), with at() to name files in it and a recursive removal at the
 * end, and slurp() to read a file whole.  Header-only, like tap.h.
 */
#ifndef TESTS_TESTDIR_H
#define TESTS_TESTDIR_H

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[PATH_MAX];

/* Make the directory; 0, or -1 with errno. */
static int
testdir_make(const char *name)
{
	const char *t = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/%s.XXXXXX",
	    t != NULL && t[0] != '\0' ? t : "/tmp", name);
	return mkdtemp(tmpdir) == NULL ? -1 : 0;
}

/*
 * The path of name in the directory.  Results live in a few rotating
 * buffers so that one call can use several of them.
 */
static const char *
at(const char *name)
{
	static char bufs[8][PATH_MAX];
	static unsigned next;
	char *b = bufs[next++ % 8];

	if (snprintf(b, PATH_MAX, "%s/%s", tmpdir, name) >= PATH_MAX) {
		printf("Bail out! path too long: %s/%s\n", tmpdir, name);
		exit(1);
	}
	return b;
}

static int
testdir_rm_cb(const char *path, const struct stat *sb, int type,
    struct FTW *ftw)
{
	if (remove(path) == -1)
		printf("# cannot remove %s: %s\n", path, strerror(errno));
	return 0;
}

static void
testdir_remove(void)
{
	nftw(tmpdir, testdir_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* The whole file, malloc'ed; NULL when it cannot be read. */
static uint8_t *slurp(const char *path, size_t *len) __attribute__((unused));

static uint8_t *
slurp(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *buf;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY)) == -1)
		return NULL;
	if (fstat(fd, &st) == -1 ||
	    (buf = malloc((size_t)st.st_size + 1)) == NULL) {
		close(fd);
		return NULL;
	}
	n = pread(fd, buf, (size_t)st.st_size, 0);
	close(fd);
	if (n != st.st_size) {
		free(buf);
		return NULL;
	}
	*len = (size_t)n;
	return buf;
}

/* Write text to the test directory's file name; a failure is a comment. */
static void write_text(const char *name, const char *text)
    __attribute__((unused));

static void
write_text(const char *name, const char *text)
{
	FILE *fp = fopen(at(name), "w");

	if (fp == NULL || fputs(text, fp) == EOF || fclose(fp) == EOF)
		printf("# cannot write %s: %s\n", name, strerror(errno));
}

#endif /* TESTS_TESTDIR_H */
