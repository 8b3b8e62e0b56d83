/*
 * tests/fuzz/fuzz_needed.c: fuzz needed_add(), which reads the programs,
 * libraries and /etc/ld.so.cache that dbgmirror prefetch is pointed at
 * (indexer/needed.h): their program headers, dynamic sections, strings
 * and the loader's cache are all outside input.
 *
 * The input is an ELF file, then after the last "\n--dbgmirror-cache--\n"
 * an ld.so.cache (else there is none).  Each goes to a memfd of its own,
 * named by its /proc/self/fd path; the default directories are one empty
 * directory, so nothing on this machine is a library unless the input's
 * own RPATH/RUNPATH names it.  Besides memory errors, the target aborts
 * when a result breaks the contract: a result other than 0, -1 and
 * ELF_NOTFOUND; an error without a message; a non-ELF input not reported
 * as ELF_NOTFOUND; a report without a name, with an empty name, with a
 * path that is not absolute, or without the file that needed it.
 */
#include "indexer/elf.h"
#include "indexer/needed.h"

#include <stdlib.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"

static const char marker[] = "\n--dbgmirror-cache--\n";
static int prog_fd = -1, cache_fd = -1;
static char prog_path[64], cache_path[64], empty_dir[64];

static void
remove_empty_dir(void)
{
	rmdir(empty_dir);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	if (elf_init() == -1) {
		fprintf(stderr, "fuzz_needed: elf_init failed\n");
		exit(1);
	}
	prog_fd = fuzz_memfd("fuzz_needed: memfd_create");
	cache_fd = fuzz_memfd("fuzz_needed: memfd_create");
	snprintf(prog_path, sizeof(prog_path), "/proc/self/fd/%d", prog_fd);
	snprintf(cache_path, sizeof(cache_path), "/proc/self/fd/%d", cache_fd);
	snprintf(empty_dir, sizeof(empty_dir), "/tmp/fuzz_needed.XXXXXX");
	if (mkdtemp(empty_dir) == NULL) {
		perror("fuzz_needed: mkdtemp");
		exit(1);
	}
	atexit(remove_empty_dir);
	return 0;
}

static void
report_cb(const char *name, const char *path, const char *needed_by, void *arg)
{
	size_t *n = arg;

	FUZZ_CHECK(name != NULL && name[0] != '\0');
	FUZZ_CHECK(path == NULL || path[0] == '/');
	FUZZ_CHECK(needed_by != NULL);
	(*n)++;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *const dirs[] = { empty_dir, NULL };
	struct needed_paths paths = { cache_path, "", dirs };
	const uint8_t *cut = NULL, *p;
	struct needed *n;
	char err[256];
	size_t count = 0, prog_len = size;
	int rc;

	if (prog_fd == -1)
		LLVMFuzzerInitialize(NULL, NULL);
	for (p = data; size >= sizeof(marker) - 1 &&
	     p <= data + size - (sizeof(marker) - 1);
	     p++)
		if (memcmp(p, marker, sizeof(marker) - 1) == 0)
			cut = p;
	if (cut != NULL)
		prog_len = (size_t)(cut - data);
	if (fuzz_load(prog_fd, data, prog_len) == -1 ||
	    fuzz_load(cache_fd, cut != NULL ? cut + sizeof(marker) - 1 : data,
		cut != NULL ? size - prog_len - (sizeof(marker) - 1) : 0) == -1)
		return 0;
	if ((n = needed_new(&paths)) == NULL)
		return 0;
	err[0] = '\0';
	rc = needed_add(n, prog_path, report_cb, &count, err, sizeof(err));
	FUZZ_CHECK(rc == 0 || rc == -1 || rc == ELF_NOTFOUND);
	if (!elf_has_magic(data, prog_len))
		FUZZ_CHECK(rc == ELF_NOTFOUND && count == 0);
	if (rc == -1)
		FUZZ_CHECK(err[0] != '\0');
	needed_free(n);
	return 0;
}
