/*
 * tests/fuzz/fuzz_symbuild.c: fuzz symbuild_run(), which reads debuginfo
 * files, their dwz alt files and executables from anywhere (through
 * indexer/symdwarf.c and libdw) to build symbol tables.
 *
 * The input is a whole file, or two: when it holds ALT_MARK, what comes
 * before the last one is the debug file and what comes after it is its
 * dwz alt file.  Each is written to a memfd made once, as the server
 * hands over descriptors; the file is also given as its own executable.
 * Besides memory errors (in our code or in libelf and libdw under it),
 * the target aborts when a build breaks the contract: an error without a
 * message, or a table written that symtab_open() refuses or whose
 * lookups break their contract: whatever the input, what the builder
 * writes is a table.
 */
#include "symbolizer/build.h"
#include "symbolizer/symtab.h"

#include "indexer/elf.h"
#include "tests/fuzz/fuzz.h"

#define ALT_MARK "\n--dbgmirror-alt--\n"

static int memfd = -1, altfd = -1, outfd = -1;
static struct symtab_result result;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	if (elf_init() == -1) {
		fprintf(stderr, "fuzz_symbuild: elf_init failed\n");
		exit(1);
	}
	memfd = fuzz_memfd("fuzz_symbuild: memfd_create");
	altfd = fuzz_memfd("fuzz_symbuild: memfd_create");
	outfd = fuzz_memfd("fuzz_symbuild: memfd_create");
	return 0;
}

/* The last ALT_MARK in data, or NULL. */
static const uint8_t *
last_mark(const uint8_t *data, size_t size)
{
	size_t n = strlen(ALT_MARK), i;

	for (i = size >= n ? size - n + 1 : 0; i-- > 0;)
		if (memcmp(data + i, ALT_MARK, n) == 0)
			return data + i;
	return NULL;
}

static void
check_table(void)
{
	const char *why = NULL;
	struct symtab *t;
	uint8_t head[72];
	uint64_t base = 0, limit = 0, va, step;
	int i;

	t = symtab_open(outfd, &why);
	if (t == NULL)
		fprintf(stderr, "fuzz_symbuild: %s\n", why);
	FUZZ_CHECK(t != NULL);
	if (pread(outfd, head, sizeof(head), 0) == (ssize_t)sizeof(head)) {
		for (i = 7; i >= 0; i--) {
			base = base << 8 | head[56 + i];
			limit = limit << 8 | head[64 + i];
		}
	}
	FUZZ_CHECK(base <= limit);
	step = (limit - base) / 31 + 1;
	for (i = 0, va = base; i < 33; i++, va += step) {
		symtab_lookup(t, va, &result);
		FUZZ_CHECK(result.nframes <= SYMTAB_FRAMES_MAX);
		FUZZ_CHECK(result.symbol == NULL || result.sym_addr <= va);
	}
	symtab_close(t);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *mark = last_mark(data, size);
	struct symbuild_in in = { memfd, -1, memfd, NULL };
	char err[512];
	int rc;

	if (mark != NULL) {
		if (fuzz_load(memfd, data, (size_t)(mark - data)) == -1 ||
		    fuzz_load(altfd, mark + strlen(ALT_MARK),
			size - (size_t)(mark - data) - strlen(ALT_MARK)) == -1)
			return 0;
		in.alt_fd = altfd;
	} else if (fuzz_load(memfd, data, size) == -1) {
		return 0;
	}
	if (ftruncate(outfd, 0) == -1)
		return 0;
	err[0] = '\0';
	rc = symbuild_run(&in, outfd, NULL, err, sizeof(err));
	FUZZ_CHECK(rc == 0 || rc == -1);
	if (rc == -1) {
		FUZZ_CHECK(err[0] != '\0');
		return 0;
	}
	check_table();
	return 0;
}
