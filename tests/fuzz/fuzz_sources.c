/*
 * tests/fuzz/fuzz_sources.c: fuzz sources_list(), which reads the DWARF of
 * debuginfo files from archives, upstreams and scanned disks to list the
 * source files they name (indexer/sources.h).
 *
 * The input is a whole file, or two: when it holds ALT_MARK, what comes
 * before the last one is the file and what comes after it is its dwz alt
 * file.  Each is written to a memfd made once, so the reader gets what it
 * gets in the server: a regular file read with pread.  The file is listed
 * without an alt file; then with the alt file, or, when there is none, with
 * itself as its alt (which a file whose .gnu_debugaltlink names its own
 * build-id passes); and once more with max_files of 2.
 *
 * Besides memory errors (in our code or in libelf and libdw under it), the
 * target aborts when a run breaks the contract: a result other than 0 and
 * -1, an error without a message, a call for a file that is not ELF, a
 * path that is not absolute, not canonical (sources_canonicalise() would
 * change it), not under PATH_MAX or given twice, more paths than
 * max_files, or an alt_missing other than 0 and 1.
 */
#include <limits.h>

#include "indexer/elf.h"
#include "indexer/sources.h"

#include "tests/fuzz/fuzz.h"

#define ALT_MARK "\n--dbgmirror-alt--\n"
/* The most paths one run takes, so that the twice-given check is cheap. */
#define FILES_MAX 256

struct seen {
	char *path[FILES_MAX];
	unsigned n;
	unsigned max;
};

static int memfd = -1;
static int altfd = -1;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	if (elf_init() == -1) {
		fprintf(stderr, "fuzz_sources: elf_init failed\n");
		exit(1);
	}
	memfd = fuzz_memfd("fuzz_sources: memfd_create");
	altfd = fuzz_memfd("fuzz_sources: memfd_create");
	return 0;
}

static int
path_cb(const char *path, void *arg)
{
	struct seen *s = arg;
	char copy[PATH_MAX];
	size_t len = strlen(path);
	unsigned i;

	FUZZ_CHECK(s->n < s->max);
	FUZZ_CHECK(path[0] == '/' && len < PATH_MAX);
	memcpy(copy, path, len + 1);
	sources_canonicalise(copy);
	FUZZ_CHECK(strcmp(copy, path) == 0);
	for (i = 0; i < s->n; i++)
		FUZZ_CHECK(strcmp(s->path[i], path) != 0);
	if ((s->path[s->n++] = strdup(path)) == NULL)
		return 1;
	return 0;
}

static void
list(int fd, int alt, unsigned max, int elf)
{
	struct seen s;
	char err[256];
	int rc, missing = 7;
	unsigned i;

	memset(&s, 0, sizeof(s));
	s.max = max;
	err[0] = '\0';
	rc = sources_list(fd, alt, NULL, max, path_cb, &s, &missing, err,
	    sizeof(err));
	FUZZ_CHECK(rc == 0 || rc == -1);
	if (rc == -1)
		FUZZ_CHECK(err[0] != '\0');
	if (!elf)
		FUZZ_CHECK(rc == -1 && s.n == 0);
	FUZZ_CHECK(missing == 0 || missing == 1);
	for (i = 0; i < s.n; i++)
		free(s.path[i]);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *mark = NULL, *p = data;
	size_t len = size, alen = 0;
	int elf;

	if (memfd == -1)
		LLVMFuzzerInitialize(NULL, NULL);
	while ((p = memmem(p, size - (size_t)(p - data), ALT_MARK,
		    sizeof(ALT_MARK) - 1)) != NULL) {
		mark = p;
		p += sizeof(ALT_MARK) - 1;
	}
	if (mark != NULL) {
		len = (size_t)(mark - data);
		alen = size - len - (sizeof(ALT_MARK) - 1);
		if (fuzz_load(altfd, mark + sizeof(ALT_MARK) - 1, alen) == -1)
			return 0;
	}
	if (fuzz_load(memfd, data, len) == -1)
		return 0;
	elf = elf_has_magic(data, len);
	list(memfd, -1, FILES_MAX, elf);
	list(memfd, mark != NULL ? altfd : memfd, FILES_MAX, elf);
	list(memfd, -1, 2, elf);
	return 0;
}
