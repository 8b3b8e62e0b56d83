/*
 * tests/fuzz/fuzz_rpmhdr.c: fuzz rpmhdr_open() and rpmhdr_ima_signature(),
 * which read the header of RPM packages from scanned directories and, with
 * remote repositories, from anywhere (indexer/rpmhdr.h).
 *
 * The input is a whole file, read from a memfd as the server reads a
 * package.  Besides memory errors, the target aborts when a result breaks
 * the contract: rpmhdr_open answering other than 1, 0 and -1, or 1 without
 * a header; an error without a message; a signature that is not hex or does
 * not fit the buffer.  Lookups use paths of the shapes debug packages ship
 * and a few that the input itself may spell.
 */
#include "indexer/rpmhdr.h"

#include "tests/fuzz/fuzz.h"

static const char *const paths[] = {
	"/usr/lib/debug/.build-id/ab/cdef.debug",
	"/usr/bin/a",
	"/usr/lib/b.so",
	"/",
	"/a/",
	"noslash",
};

static int memfd = -1;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	memfd = fuzz_memfd("fuzz_rpmhdr: memfd_create");
	return 0;
}

static void
check_lookup(const struct rpmhdr *rh, const char *path)
{
	char out[64], err[256];
	size_t i;
	int rc;

	err[0] = '\0';
	memset(out, 0x5a, sizeof(out));
	rc = rpmhdr_ima_signature(rh, path, out, sizeof(out), err, sizeof(err));
	FUZZ_CHECK(rc == 1 || rc == 0 || rc == -1);
	if (rc == -1)
		FUZZ_CHECK(err[0] != '\0');
	if (rc != 1)
		return;
	FUZZ_CHECK(memchr(out, '\0', sizeof(out)) != NULL && out[0] != '\0');
	for (i = 0; out[i] != '\0'; i++)
		FUZZ_CHECK(strchr("0123456789abcdefABCDEF", out[i]) != NULL);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rpmhdr *rh = (struct rpmhdr *)1;
	char err[256];
	size_t i;
	int rc;

	if (memfd == -1)
		LLVMFuzzerInitialize(NULL, NULL);
	if (fuzz_load(memfd, data, size) == -1)
		return 0;
	err[0] = '\0';
	rc = rpmhdr_open(memfd, &rh, err, sizeof(err));
	FUZZ_CHECK(rc == 1 || rc == 0 || rc == -1);
	FUZZ_CHECK((rc == 1) == (rh != NULL));
	if (rc == -1)
		FUZZ_CHECK(err[0] != '\0');
	if (rc != 1)
		return 0;
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		check_lookup(rh, paths[i]);
	rpmhdr_free(rh);
	return 0;
}
