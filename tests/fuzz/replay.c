/*
 * tests/fuzz/replay.c: the main() of a fuzz target built without libFuzzer.
 *
 * It runs every saved input through LLVMFuzzerTestOneInput() once, so that
 * "make check" replays the corpus and the committed crash inputs with
 * whatever compiler and sanitizers the tree was configured with.
 *
 * Arguments are files or directories; a directory is read recursively in
 * name order, skipping names that start with '.'.  Arguments that start
 * with '-' are libFuzzer flags and are ignored, so tests/fuzz/replay.sh
 * runs both kinds of build the same way.  Output is TAP: "# input: PATH"
 * before an input runs, "ok N - PATH" once it returned, then the plan.  A
 * crash or a broken invariant kills the process mid-way; replay.sh then
 * names the last input that started.  An unreadable argument is a
 * "not ok" and exit status 1.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"

/* Only some targets define it; without one the weak reference is NULL. */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

/* Larger saved inputs are refused: no fuzz input needs to be that big. */
#define INPUT_MAX (64u << 20)

static int ntests;
static int nfailed;

static void
fail(const char *path, const char *what)
{
	ntests++;
	nfailed++;
	printf("not ok %d - %s: %s\n", ntests, path, what);
	fflush(stdout);
}

/* Read path whole into an exactly sized heap buffer. */
static int
read_input(const char *path, uint8_t **data, size_t *size)
{
	struct stat st;
	size_t got = 0;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	if (fstat(fd, &st) == -1) {
		close(fd);
		return -1;
	}
	if (st.st_size < 0 || (uint64_t)st.st_size > INPUT_MAX) {
		close(fd);
		errno = EFBIG;
		return -1;
	}
	*size = (size_t)st.st_size;
	/* malloc(0) may be NULL; the target must not read it anyway. */
	if ((*data = malloc(*size)) == NULL && *size > 0) {
		close(fd);
		return -1;
	}
	while (got < *size) {
		n = read(fd, *data + got, *size - got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO; /* shrank while we read it */
			free(*data);
			close(fd);
			return -1;
		}
		got += (size_t)n;
	}
	close(fd);
	return 0;
}

static void
run_file(const char *path)
{
	uint8_t *data;
	size_t size;

	if (read_input(path, &data, &size) == -1) {
		fail(path, strerror(errno));
		return;
	}
	printf("# input: %s\n", path);
	fflush(stdout);
	LLVMFuzzerTestOneInput(data, size);
	free(data);
	printf("ok %d - %s\n", ++ntests, path);
	fflush(stdout);
}

static int
not_hidden(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

static void
run_path(const char *path)
{
	struct dirent **names;
	struct stat st;
	char *sub;
	int i, n;

	if (stat(path, &st) == -1) {
		fail(path, strerror(errno));
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		run_file(path);
		return;
	}
	if ((n = scandir(path, &names, not_hidden, alphasort)) == -1) {
		fail(path, strerror(errno));
		return;
	}
	for (i = 0; i < n; i++) {
		if (asprintf(&sub, "%s/%s", path, names[i]->d_name) == -1) {
			fail(path, "out of memory");
		} else {
			run_path(sub);
			free(sub);
		}
		free(names[i]);
	}
	free(names);
}

int
main(int argc, char **argv)
{
	int i;

	if (LLVMFuzzerInitialize != NULL)
		LLVMFuzzerInitialize(&argc, &argv);
	for (i = 1; i < argc; i++)
		if (argv[i][0] != '-')
			run_path(argv[i]);
	printf("1..%d\n", ntests);
	return nfailed > 0 ? 1 : 0;
}
