/*
 * tests/fuzz/fuzz.h: what every fuzz target shares.
 *
 * A target defines LLVMFuzzerTestOneInput() and, when it needs set-up done
 * once, LLVMFuzzerInitialize().  Built with -fsanitize=fuzzer, libFuzzer
 * calls them; otherwise tests/fuzz/replay.c does, over saved inputs.
 *
 * FUZZ_CHECK() states an invariant of the code under test.  A broken one
 * aborts, which libFuzzer reports like a crash (and saves the input), and
 * which kills the replay program, so a regression input fails "make check".
 */
#ifndef TESTS_FUZZ_FUZZ_H
#define TESTS_FUZZ_FUZZ_H

#include <sys/mman.h>

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond) \
	do { \
		if (!(cond)) { \
			fprintf(stderr, "%s:%d: invariant broken: %s\n", \
			    __FILE__, __LINE__, #cond); \
			abort(); \
		} \
	} while (0)

/*
 * A heap copy of exactly size bytes, with nothing after it, so that
 * AddressSanitizer reports a parser reading one byte too far.  NULL when
 * out of memory; the caller then skips the input.
 */
static inline char *
fuzz_copy(const uint8_t *data, size_t size)
{
	char *p = malloc(size);

	if (p != NULL && size > 0)
		memcpy(p, data, size);
	return p;
}

/* 1 when [p, p + n) lies inside [base, base + len). */
static inline int
fuzz_inside(const char *p, size_t n, const char *base, size_t len)
{
	return p >= base && p <= base + len && n <= (size_t)(base + len - p);
}

/* A memfd for targets that hand their input to a reader of files. */
static inline int
fuzz_memfd(const char *name)
{
	int fd;

	if ((fd = memfd_create(name, MFD_CLOEXEC)) == -1) {
		perror(name);
		exit(1);
	}
	return fd;
}

/* Make the memfd fd hold exactly data[0..size); -1 on failure. */
static inline int
fuzz_load(int fd, const uint8_t *data, size_t size)
{
	size_t done = 0;
	ssize_t n;

	if (ftruncate(fd, 0) == -1)
		return -1;
	while (done < size) {
		n = pwrite(fd, data + done, size - done, (off_t)done);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

#endif /* TESTS_FUZZ_FUZZ_H */
