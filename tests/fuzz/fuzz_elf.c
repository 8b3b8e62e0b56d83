/*
 * tests/fuzz/fuzz_elf.c: fuzz elf_read_info() and elf_find_section(), which
 * read ELF files that come from archives, upstreams and scanned disks
 * (indexer/elf.h).
 *
 * The input is a whole file.  It is written to one memfd, made once, so the
 * readers get what they get in the server: a regular file read with pread.
 * Besides memory errors (in our code or in libelf under it) the target
 * aborts when a result breaks the contract: a result other than 0, -1 and
 * ELF_NOTFOUND; an error without a message; a non-ELF input not reported as
 * ELF_NOTFOUND or an ELF one reported so; build-id or alt-link lengths out
 * of range, an alt path without its NUL, unknown kind bits; a section found
 * empty or reaching past the end of the file.
 */
#include "indexer/elf.h"

#include "tests/fuzz/fuzz.h"

static const char *const sections[] = {
	".debug_info",
	".gnu_debugaltlink",
	".note.gnu.build-id",
	".text",
	".shstrtab",
	"",
};

static int memfd = -1;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	if (elf_init() == -1) {
		fprintf(stderr, "fuzz_elf: elf_init failed\n");
		exit(1);
	}
	memfd = fuzz_memfd("fuzz_elf: memfd_create");
	return 0;
}

static void
check_info(int rc, const struct elf_info *info, const char *err,
    const uint8_t *data, size_t size)
{
	int magic = elf_has_magic(data, size);

	FUZZ_CHECK(rc == 0 || rc == -1 || rc == ELF_NOTFOUND);
	FUZZ_CHECK((rc == ELF_NOTFOUND) == !magic);
	if (rc == -1)
		FUZZ_CHECK(err[0] != '\0');
	if (rc != 0)
		return;
	FUZZ_CHECK(info->id.len <= BUILDID_MAX);
	FUZZ_CHECK(info->alt_id.len <= BUILDID_MAX);
	FUZZ_CHECK((info->kinds & ~(unsigned)ELF_KIND_ALL) == 0);
	FUZZ_CHECK(
	    memchr(info->alt_path, '\0', sizeof(info->alt_path)) != NULL);
	if (info->alt_id.len == 0)
		FUZZ_CHECK(info->alt_path[0] == '\0');
}

static void
check_section(int rc, const struct elf_section *sec, const char *err,
    int info_rc, size_t size)
{
	FUZZ_CHECK(rc == 0 || rc == -1 || rc == ELF_NOTFOUND);
	/* Only the checks both readers share can say "not ELF". */
	FUZZ_CHECK((rc == ELF_NOTFOUND) >= (info_rc == ELF_NOTFOUND));
	if (rc == -1)
		FUZZ_CHECK(err[0] != '\0');
	if (rc != 0)
		return;
	FUZZ_CHECK(sec->size > 0);
	FUZZ_CHECK(sec->offset <= size && sec->size <= size - sec->offset);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_info info;
	struct elf_section sec;
	char err[256];
	size_t i;
	int rc, irc;

	if (memfd == -1)
		LLVMFuzzerInitialize(NULL, NULL);
	if (fuzz_load(memfd, data, size) == -1)
		return 0;

	err[0] = '\0';
	memset(&info, 0x5a, sizeof(info));
	irc = elf_read_info(memfd, &info, err, sizeof(err));
	check_info(irc, &info, err, data, size);

	for (i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		err[0] = '\0';
		memset(&sec, 0x5a, sizeof(sec));
		rc = elf_find_section(memfd, sections[i], &sec, err,
		    sizeof(err));
		check_section(rc, &sec, err, irc, size);
	}
	return 0;
}
