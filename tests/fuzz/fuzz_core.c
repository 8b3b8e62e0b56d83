/*
 * tests/fuzz/fuzz_core.c: fuzz core_modules(), which reads the core files
 * an operator hands to dbgmirror prefetch (indexer/core.h).
 *
 * The input is a whole file, written to one memfd made once.  Besides
 * memory errors (in our code or in libelf under it) the target aborts when
 * a result breaks the contract: a result other than 0, -1 and
 * ELF_NOTFOUND; an error without a message; a non-ELF input not reported
 * as ELF_NOTFOUND; a module without a NUL-terminated path, with a build-id
 * longer than BUILDID_MAX, a build-id when its header was not ELF, or an
 * elf value other than -1, 0 and 1.
 */
#include "indexer/core.h"
#include "indexer/elf.h"

#include "tests/fuzz/fuzz.h"

static int memfd = -1;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	if (elf_init() == -1) {
		fprintf(stderr, "fuzz_core: elf_init failed\n");
		exit(1);
	}
	memfd = fuzz_memfd("fuzz_core: memfd_create");
	return 0;
}

static void
module_cb(const struct core_module *m, void *arg)
{
	size_t *n = arg;

	FUZZ_CHECK(m->path != NULL && strlen(m->path) < (1u << 26));
	FUZZ_CHECK(m->id.len <= BUILDID_MAX);
	FUZZ_CHECK(m->elf == -1 || m->elf == 0 || m->elf == 1);
	if (m->elf != 1)
		FUZZ_CHECK(m->id.len == 0);
	(*n)++;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	size_t n = 0;
	int rc;

	if (memfd == -1)
		LLVMFuzzerInitialize(NULL, NULL);
	if (fuzz_load(memfd, data, size) == -1)
		return 0;
	err[0] = '\0';
	rc = core_modules(memfd, module_cb, &n, err, sizeof(err));
	FUZZ_CHECK(rc == 0 || rc == -1 || rc == ELF_NOTFOUND);
	if (!elf_has_magic(data, size))
		FUZZ_CHECK(rc == ELF_NOTFOUND && n == 0);
	if (rc == -1)
		FUZZ_CHECK(err[0] != '\0');
	return 0;
}
