/*
 * tests/fuzz/fuzz_contents.c: fuzz repometa_contents(), which reads the
 * Contents-ARCH files of remote apt repositories to map build-ids to the
 * packages that ship them (indexer/repometa.h).
 *
 * The input is one file, read from a memfd by path as the server reads a
 * download (compressed or not, told by content).  Besides memory errors,
 * the target aborts when a result breaks the contract: a return other than
 * 0 and -1, an error without a message, or a callback whose id is not a
 * build-id (empty, or longer than the most a build-id may be) or whose
 * package list is missing or holds a blank.
 */
#include "indexer/repometa.h"

#include "tests/fuzz/fuzz.h"

static int memfd = -1;
static char path[64];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	memfd = fuzz_memfd("fuzz_contents: memfd_create");
	snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	return 0;
}

static int
id_cb(const struct buildid *id, const char *packages, void *arg)
{
	unsigned *n = arg;

	FUZZ_CHECK(id->len > 0 && id->len <= BUILDID_MAX);
	FUZZ_CHECK(packages != NULL);
	FUZZ_CHECK(strpbrk(packages, " \t") == NULL);
	/* Stopping early is part of the contract too. */
	return ++*n >= 1000;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	unsigned n = 0;
	int rc;

	if (memfd == -1)
		LLVMFuzzerInitialize(NULL, NULL);
	if (fuzz_load(memfd, data, size) == -1)
		return 0;
	err[0] = '\0';
	rc = repometa_contents(path, id_cb, &n, err, sizeof(err));
	FUZZ_CHECK(rc == 0 || rc == -1);
	if (rc == -1)
		FUZZ_CHECK(err[0] != '\0');
	return 0;
}
