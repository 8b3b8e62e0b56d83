/*
 * tests/fuzz/fuzz_deb822.c: fuzz repometa_release() and
 * repometa_packages(), which read the Release and Packages files of remote
 * apt repositories (indexer/repometa.h).  A Packages file is checked
 * against the Release's hash before it is read, but the Release itself
 * only against a signature: both readers see what a mirror sends.
 *
 * The input is one file, read from a memfd by path as the server reads a
 * download (so the readers' decompression by content runs too), and given
 * to both readers: each parses deb822 stanzas.  Besides memory errors, the
 * target aborts when a result breaks the contract: a return other than 0
 * and -1, an error without a message, a Release entry without a name or
 * whose hash is not 64 characters, a Packages stanza without a package,
 * a file name or an architecture and Build-Ids string.
 */
#include "indexer/repometa.h"

#include "tests/fuzz/fuzz.h"

static int memfd = -1;
static char path[64];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	memfd = fuzz_memfd("fuzz_deb822: memfd_create");
	snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	return 0;
}

static int
entry_cb(const struct repometa_entry *e, void *arg)
{
	unsigned *n = arg;

	FUZZ_CHECK(e->name != NULL && e->name[0] != '\0');
	FUZZ_CHECK(e->sha256 != NULL && strlen(e->sha256) == 64);
	/* Stopping early is part of the contract too. */
	return ++*n >= 1000;
}

static int
deb_cb(const struct repometa_deb *d, void *arg)
{
	unsigned *n = arg;

	FUZZ_CHECK(d->package != NULL && d->package[0] != '\0');
	FUZZ_CHECK(d->filename != NULL && d->filename[0] != '\0');
	FUZZ_CHECK(d->arch != NULL && d->build_ids != NULL);
	return ++*n >= 1000;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	int64_t valid_until;
	unsigned n = 0;
	int rc;

	if (memfd == -1)
		LLVMFuzzerInitialize(NULL, NULL);
	if (fuzz_load(memfd, data, size) == -1)
		return 0;
	err[0] = '\0';
	rc = repometa_release(path, entry_cb, &n, &valid_until, err,
	    sizeof(err));
	FUZZ_CHECK(rc == 0 || rc == -1);
	if (rc == -1)
		FUZZ_CHECK(err[0] != '\0');
	err[0] = '\0';
	n = 0;
	rc = repometa_packages(path, deb_cb, &n, err, sizeof(err));
	FUZZ_CHECK(rc == 0 || rc == -1);
	if (rc == -1)
		FUZZ_CHECK(err[0] != '\0');
	return 0;
}
