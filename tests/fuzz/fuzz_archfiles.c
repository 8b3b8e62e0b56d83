/*
 * tests/fuzz/fuzz_archfiles.c: fuzz repometa_arch_files(), which reads the
 * .files database of remote Arch repositories: a tar (compressed or not)
 * of NAME/desc and NAME/files entries (indexer/repometa.h).
 *
 * The input is one file, read from a memfd by path as the server reads a
 * download.  Besides memory errors, the target aborts when a result breaks
 * the contract: a return other than 0 and -1, an error without a message,
 * a package without a directory of one path component, a file name or a
 * size, or a .build-id file whose id is empty or whose kind is unknown.
 */
#include "indexer/repometa.h"

#include "tests/fuzz/fuzz.h"

static int memfd = -1;
static char path[64];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	memfd = fuzz_memfd("fuzz_archfiles: memfd_create");
	snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	return 0;
}

static int
desc_cb(const struct repometa_arch *p, void *arg)
{
	unsigned *n = arg;

	FUZZ_CHECK(p->dir != NULL && strchr(p->dir, '/') == NULL);
	FUZZ_CHECK(p->filename != NULL && p->filename[0] != '\0');
	FUZZ_CHECK(p->size > 0);
	/* Stopping early is part of the contract too. */
	return ++*n >= 1000;
}

static int
file_cb(const char *dir, const struct buildid *id, int kind, void *arg)
{
	unsigned *n = arg;

	FUZZ_CHECK(dir != NULL && strchr(dir, '/') == NULL);
	FUZZ_CHECK(id->len > 0 && id->len <= BUILDID_MAX);
	FUZZ_CHECK(kind == REPOMETA_DEBUGINFO || kind == REPOMETA_EXECUTABLE ||
	    kind == REPOMETA_EXECUTABLE_WEAK);
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
	rc = repometa_arch_files(path, desc_cb, file_cb, &n, err, sizeof(err));
	FUZZ_CHECK(rc == 0 || rc == -1);
	if (rc == -1)
		FUZZ_CHECK(err[0] != '\0');
	return 0;
}
