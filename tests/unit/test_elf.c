/*
 * tests/unit/test_elf.c: indexer/elf.c on real compiler output and on
 * hand-made hostile files.
 *
 * Fixtures are made at run time in a temporary directory, removed at the
 * end.  Real ones come from cc, objcopy, strip and dwz, so that kinds and
 * build-ids are checked against what the toolchain (readelf, objcopy
 * --dump-section) says; a missing tool is a failure, not a skip.  Odd ones
 * come from tests/mkelf, found as $top_builddir/tests/mkelf, then $MKELF,
 * then ./tests/mkelf.  A small fuzz loop with a fixed seed flips bytes of a
 * valid file and asks only that the reader answers sanely.
 */
#include "indexer/elf.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/shell.h"
#include "tests/tap.h"
#include "tests/testdir.h"

#define ERRLEN 256

static char mkelf[PATH_MAX];

/* Run mkelf with the NULL-terminated options, writing name; 1 on success. */
static int
mk(const char *name, ...)
{
	const char *argv[64];
	va_list ap;
	size_t n = 0;
	pid_t pid;
	int st;

	argv[n++] = mkelf;
	va_start(ap, name);
	while (n < 62 && (argv[n] = va_arg(ap, const char *)) != NULL)
		n++;
	va_end(ap);
	argv[n++] = at(name);
	argv[n] = NULL;
	fflush(stdout);
	if ((pid = fork()) == -1)
		return 0;
	if (pid == 0) {
		execv(mkelf, (char *const *)argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) == -1 || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0) {
		printf("# mkelf failed for %s\n", name);
		return 0;
	}
	return 1;
}

/* elf_read_info on a file by name; -2 when it cannot be opened. */
static int
info_of(const char *name, struct elf_info *info, char *err)
{
	int fd, rc;

	err[0] = '\0';
	memset(info, 0x5a, sizeof(*info));
	if ((fd = open(at(name), O_RDONLY)) == -1) {
		printf("# %s: %s\n", name, strerror(errno));
		memset(info, 0, sizeof(*info));
		return -2;
	}
	rc = elf_read_info(fd, info, err, ERRLEN);
	close(fd);
	return rc;
}

/* elf_find_section on a file by name; -2 when it cannot be opened. */
static int
section_of(const char *name, const char *sname, struct elf_section *sec,
    char *err)
{
	int fd, rc;

	err[0] = '\0';
	memset(sec, 0, sizeof(*sec));
	if ((fd = open(at(name), O_RDONLY)) == -1) {
		printf("# %s: %s\n", name, strerror(errno));
		return -2;
	}
	rc = elf_find_section(fd, sname, sec, err, ERRLEN);
	close(fd);
	return rc;
}

/* 1 when the file's bytes at sec are exactly the len bytes of want. */
static int
section_bytes_are(const char *name, const struct elf_section *sec,
    const uint8_t *want, size_t len)
{
	uint8_t *got;
	int fd, same;

	if (sec->size != len || (got = malloc(len + 1)) == NULL)
		return 0;
	if ((fd = open(at(name), O_RDONLY)) == -1) {
		free(got);
		return 0;
	}
	same = pread(fd, got, len, (off_t)sec->offset) == (ssize_t)len &&
	    memcmp(got, want, len) == 0;
	close(fd);
	free(got);
	return same;
}

/* Deterministic test ids: n bytes derived from seed, as bytes and hex. */
static void
make_id(size_t n, unsigned seed, uint8_t *bytes, char *hex)
{
	size_t i;

	for (i = 0; i < n; i++) {
		bytes[i] = (uint8_t)(seed * 37 + i * 13 + 1);
		sprintf(hex + 2 * i, "%02x", bytes[i]);
	}
	hex[2 * n] = '\0';
}

/* The bytes mkelf writes into a --debug or --section section. */
static uint8_t
pattern_byte(const char *name, uint64_t i)
{
	unsigned h = 0;

	while (*name != '\0')
		h += (unsigned char)*name++;
	return (uint8_t)(i * 31 + h);
}

static int
id_is(const struct buildid *id, const uint8_t *bytes, size_t len)
{
	return id->len == len && memcmp(id->bytes, bytes, len) == 0;
}

static void
test_helpers(void)
{
	ok(elf_has_magic("\177ELF\2\1\1", 7), "has_magic: an ELF header");
	ok(elf_has_magic("\177ELF", 4), "has_magic: the four magic bytes");
	ok(!elf_has_magic("\177EL", 3), "has_magic: three bytes are too few");
	ok(!elf_has_magic("\177elf", 4), "has_magic: case matters");
	ok(!elf_has_magic("MZ\220\0", 4), "has_magic: PE is not ELF");
	ok(!elf_has_magic("", 0), "has_magic: nothing is not ELF");
	is_str(elf_kind_name(ELF_KIND_DEBUGINFO), "debuginfo",
	    "kind name debuginfo");
	is_str(elf_kind_name(ELF_KIND_EXECUTABLE), "executable",
	    "kind name executable");
	is_str(elf_kind_name((enum elf_kind)ELF_KIND_ALL), "?",
	    "a set of kinds has no URL name");
}

static const char prog_c[] = "#include <stdio.h>\n"
			     "static int counter = 3;\n"
			     "int\n"
			     "main(int argc, char **argv)\n"
			     "{\n"
			     "\tprintf(\"%d\\n\", counter + argc);\n"
			     "\treturn 0;\n"
			     "}\n";

/* Two programs sharing enough types for dwz to make a multifile. */
static const char shared_h[] = "struct point {\n"
			       "\tint x, y;\n"
			       "\tlong tag;\n"
			       "\tconst char *name;\n"
			       "};\n"
			       "struct shape {\n"
			       "\tstruct point a, b;\n"
			       "\tdouble area;\n"
			       "\tint kind;\n"
			       "\tstruct shape *next;\n"
			       "};\n"
			       "struct canvas {\n"
			       "\tstruct shape *first;\n"
			       "\tunsigned count;\n"
			       "\tchar title[32];\n"
			       "};\n"
			       "static inline int\n"
			       "shape_width(const struct shape *s)\n"
			       "{\n"
			       "\treturn s->b.x - s->a.x;\n"
			       "}\n";
/* The two differ in code, so their build-ids differ too. */
static const char p1_c[] = "#include \"shared.h\"\n"
			   "int\n"
			   "main(void)\n"
			   "{\n"
			   "\tstruct canvas c = { 0 };\n"
			   "\tstruct shape s = { { 1, 2 }, { 4, 5 } };\n"
			   "\tc.first = &s;\n"
			   "\treturn shape_width(c.first) - 3;\n"
			   "}\n";
static const char p2_c[] = "#include \"shared.h\"\n"
			   "int\n"
			   "main(void)\n"
			   "{\n"
			   "\tstruct canvas c = { 0 };\n"
			   "\tstruct shape s = { { 1, 2 }, { 7, 5 } };\n"
			   "\tc.first = &s;\n"
			   "\tc.count = 1;\n"
			   "\treturn shape_width(c.first) - 6;\n"
			   "}\n";

/* Copy the file from to the file to, cut to num/den of its length. */
static int
cut_copy(const char *from, const char *to, size_t num, size_t den)
{
	uint8_t *buf;
	size_t len;
	FILE *fp;
	int rc;

	if ((buf = slurp(at(from), &len)) == NULL)
		return 0;
	len = len / den * num;
	rc =
	    (fp = fopen(at(to), "w")) != NULL && fwrite(buf, 1, len, fp) == len;
	if (fp != NULL && fclose(fp) == EOF)
		rc = 0;
	free(buf);
	return rc;
}

static void
test_compiled(void)
{
	struct elf_info full, dbg, stripped;
	struct elf_section sec;
	struct buildid rid;
	char err[ERRLEN];
	uint8_t *dump;
	size_t dumplen;
	int rc;

	write_text("prog.c", prog_c);
	if (!ok(shell("cd '%s' && cc -g -O0 -Wl,--build-id -o prog prog.c",
		    tmpdir),
		"cc builds a program with a build-id"))
		return;
	ok(shell("cd '%s' && objcopy --only-keep-debug prog prog.debug",
	       tmpdir),
	    "objcopy --only-keep-debug");
	ok(shell("cd '%s' && strip -g -o prog.stripped prog", tmpdir),
	    "strip -g");

	rc = info_of("prog", &full, err);
	is_int(rc, 0, "unstripped program: read");
	is_int(full.kinds, ELF_KIND_DEBUGINFO | ELF_KIND_EXECUTABLE,
	    "unstripped program: debuginfo and executable");
	ok(full.id.len > 0, "unstripped program: has a build-id");
	is_int(full.alt_id.len, 0, "unstripped program: no alt link");
	is_str(full.alt_path, "", "unstripped program: no alt path");

	rc = info_of("prog.debug", &dbg, err);
	is_int(rc, 0, "only-keep-debug file: read");
	is_int(dbg.kinds, ELF_KIND_DEBUGINFO,
	    "only-keep-debug file: debuginfo only");

	rc = info_of("prog.stripped", &stripped, err);
	is_int(rc, 0, "stripped program: read");
	is_int(stripped.kinds, ELF_KIND_EXECUTABLE,
	    "stripped program: executable only");

	ok(full.id.len > 0 && buildid_equal(&full.id, &dbg.id),
	    "the .debug has the program's build-id");
	ok(full.id.len > 0 && buildid_equal(&full.id, &stripped.id),
	    "the stripped program has the program's build-id");
	is_int(readelf_buildid(at("prog"), &rid), 0,
	    "readelf -n shows a build-id");
	ok(buildid_equal(&full.id, &rid), "the build-id is what readelf says");

	/* Section places, checked against objcopy's copy of the bytes. */
	rc = section_of("prog.debug", ".debug_info", &sec, err);
	is_int(rc, 0, ".debug_info found in the .debug");
	ok(shell("cd '%s' && objcopy --dump-section .debug_info=info.bin "
		 "prog.debug scratch.o",
	       tmpdir),
	    "objcopy --dump-section .debug_info");
	dump = slurp(at("info.bin"), &dumplen);
	ok(dump != NULL && dumplen > 0, "the dumped .debug_info is not empty");
	is_int(sec.size, dump != NULL ? dumplen : 0,
	    ".debug_info size is objcopy's");
	ok(dump != NULL && section_bytes_are("prog.debug", &sec, dump, dumplen),
	    ".debug_info offset holds objcopy's bytes");
	free(dump);

	rc = section_of("prog.debug", ".text", &sec, err);
	is_int(rc, ELF_NOTFOUND, ".text of the .debug is NOBITS: not found");
	rc = section_of("prog.stripped", ".text", &sec, err);
	is_int(rc, 0, ".text found in the stripped program");
	ok(shell("cd '%s' && objcopy --dump-section .text=text.bin "
		 "prog.stripped scratch.o",
	       tmpdir),
	    "objcopy --dump-section .text");
	dump = slurp(at("text.bin"), &dumplen);
	ok(dump != NULL &&
		section_bytes_are("prog.stripped", &sec, dump, dumplen),
	    ".text offset and size hold objcopy's bytes");
	free(dump);
	rc = section_of("prog.stripped", ".debug_info", &sec, err);
	is_int(rc, ELF_NOTFOUND, "no .debug_info in the stripped program");
	rc = section_of("prog", ".no_such_section", &sec, err);
	is_int(rc, ELF_NOTFOUND, "a missing section name is not found");
	rc = section_of("prog", ".debug", &sec, err);
	is_int(rc, ELF_NOTFOUND, "a prefix of a section name does not match");

	/*
	 * A partial download of real files.  GNU ld and objcopy put the
	 * section header table last, so a cut file has lost it but still has
	 * its program headers and build-id note: it must not pass for a
	 * complete file of some kind.
	 */
	ok(cut_copy("prog.stripped", "stripped.cut", 3, 4) &&
		cut_copy("prog.debug", "debug.cut", 3, 4) &&
		cut_copy("prog", "prog.cut", 3, 4),
	    "cut copies of the three files");
	rc = info_of("stripped.cut", &stripped, err);
	is_int(rc, -1, "stripped program cut to 3/4: -1");
	ok(rc != 0 || (stripped.kinds & ELF_KIND_EXECUTABLE) == 0,
	    "stripped program cut to 3/4: not an executable");
	rc = info_of("debug.cut", &dbg, err);
	is_int(rc, -1, ".debug cut to 3/4: -1");
	ok(rc != 0 || (dbg.kinds & ELF_KIND_EXECUTABLE) == 0,
	    ".debug cut to 3/4: never an executable");
	rc = info_of("prog.cut", &full, err);
	is_int(rc, -1, "unstripped program cut to 3/4: -1");
}

static void
test_dwz(void)
{
	struct elf_info p1, p2, alt;
	struct elf_section sec;
	struct buildid rid;
	char err[ERRLEN];
	uint8_t *link;
	size_t linklen, pathlen;
	int rc;

	write_text("shared.h", shared_h);
	write_text("p1.c", p1_c);
	write_text("p2.c", p2_c);
	if (!ok(shell("cd '%s' && cc -g -O0 -Wl,--build-id -o p1 p1.c && "
		      "cc -g -O0 -Wl,--build-id -o p2 p2.c",
		    tmpdir),
		"cc builds two programs sharing types"))
		return;
	if (!ok(shell("cd '%s' && dwz -m alt.debug p1 p2", tmpdir),
		"dwz -m makes a multifile"))
		return;
	ok(shell("cd '%s' && objcopy --dump-section .gnu_debugaltlink=link.bin "
		 "p1 scratch.o",
	       tmpdir),
	    "objcopy --dump-section .gnu_debugaltlink");
	link = slurp(at("link.bin"), &linklen);
	if (!ok(link != NULL && memchr(link, '\0', linklen) != NULL,
		"dwz wrote a path and a NUL"))
		linklen = 0;
	pathlen = link != NULL ? strnlen((char *)link, linklen) : 0;

	rc = info_of("alt.debug", &alt, err);
	is_int(rc, 0, "dwz multifile: read");
	is_int(alt.kinds, ELF_KIND_DEBUGINFO, "dwz multifile: debuginfo only");
	ok(alt.id.len > 0, "dwz multifile: has a build-id");
	is_int(readelf_buildid(at("alt.debug"), &rid), 0,
	    "readelf -n shows the multifile's build-id");
	ok(buildid_equal(&alt.id, &rid), "multifile build-id is readelf's");
	is_int(section_of("alt.debug", ".debug_info", &sec, err), 0,
	    "dwz multifile: has .debug_info");

	rc = info_of("p1", &p1, err);
	is_int(rc, 0, "dwz'ed program: read");
	is_int(p1.kinds, ELF_KIND_ALL, "dwz'ed program: both kinds");
	ok(p1.id.len > 0 && !buildid_equal(&p1.id, &alt.id),
	    "dwz'ed program keeps its own build-id");
	ok(alt.id.len > 0 && buildid_equal(&p1.alt_id, &alt.id),
	    "alt_id is the multifile's build-id");
	ok(link != NULL && p1.alt_id.len == linklen - pathlen - 1 &&
		memcmp(p1.alt_id.bytes, link + pathlen + 1, p1.alt_id.len) == 0,
	    "alt_id is the bytes after the path");
	ok(p1.alt_path[0] != '\0', "alt_path is not empty");
	is_str(p1.alt_path, link != NULL ? (char *)link : "",
	    "alt_path is what dwz wrote");
	free(link);

	rc = info_of("p2", &p2, err);
	is_int(rc, 0, "second dwz'ed program: read");
	ok(buildid_equal(&p2.alt_id, &alt.id),
	    "second program links the same multifile");
	ok(!buildid_equal(&p1.id, &p2.id), "the programs' build-ids differ");
}

static void
test_not_elf(void)
{
	struct elf_info info;
	struct elf_section sec;
	char err[ERRLEN];
	int fd;

	write_text("text.txt", "#!/bin/sh\necho this is not an ELF file\n");
	is_int(info_of("text.txt", &info, err), ELF_NOTFOUND,
	    "a text file is not ELF");
	is_int(section_of("text.txt", ".text", &sec, err), ELF_NOTFOUND,
	    "find_section: a text file is not ELF");
	write_text("empty", "");
	is_int(info_of("empty", &info, err), ELF_NOTFOUND,
	    "an empty file is not ELF");
	write_text("magic3", "\177EL");
	is_int(info_of("magic3", &info, err), ELF_NOTFOUND,
	    "three bytes of the magic are not ELF");

	fd = open(tmpdir, O_RDONLY | O_DIRECTORY);
	ok(fd != -1, "open the directory");
	is_int(elf_read_info(fd, &info, err, sizeof(err)), ELF_NOTFOUND,
	    "a directory is not ELF");
	is_int(elf_find_section(fd, ".text", &sec, err, sizeof(err)),
	    ELF_NOTFOUND, "find_section: a directory is not ELF");
	close(fd);

	fd = open("/dev/null", O_RDONLY);
	ok(fd != -1, "open /dev/null");
	is_int(elf_read_info(fd, &info, err, sizeof(err)), ELF_NOTFOUND,
	    "/dev/null is not ELF");
	close(fd);

	/* The magic alone starts an ELF file, a broken one. */
	write_text("magic-only", "\177ELF\2\1\1");
	is_int(info_of("magic-only", &info, err), -1,
	    "ELF magic and nothing else is a broken ELF file");
	ok(err[0] != '\0', "with a reason");
}

static void
test_buildid_lengths(void)
{
	static const size_t good[] = { 1, 8, 16, 20, 64 };
	static const size_t bad[] = { 0, 65, 200 };
	uint8_t bytes[256];
	char hex[520], name[64], msg[128], err[ERRLEN];
	struct elf_info info;
	size_t i;
	int rc;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		make_id(good[i], (unsigned)i, bytes, hex);
		snprintf(name, sizeof(name), "id%zu", good[i]);
		mk(name, "--build-id", hex, "--text", "32", NULL);
		rc = info_of(name, &info, err);
		snprintf(msg, sizeof(msg), "%zu-byte build-id: read", good[i]);
		is_int(rc, 0, msg);
		snprintf(msg, sizeof(msg), "%zu-byte build-id: the bytes",
		    good[i]);
		ok(id_is(&info.id, bytes, good[i]), msg);
		snprintf(msg, sizeof(msg), "%zu-byte build-id: executable",
		    good[i]);
		is_int(info.kinds, ELF_KIND_EXECUTABLE, msg);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		make_id(bad[i], (unsigned)i, bytes, hex);
		snprintf(name, sizeof(name), "id%zu", bad[i]);
		mk(name, "--build-id", hex, "--text", "32", NULL);
		rc = info_of(name, &info, err);
		snprintf(msg, sizeof(msg), "%zu-byte build-id: refused",
		    bad[i]);
		is_int(rc, -1, msg);
		snprintf(msg, sizeof(msg), "%zu-byte build-id: with a reason",
		    bad[i]);
		ok(err[0] != '\0', msg);
	}

	/* The same through the program headers of a file without sections. */
	make_id(65, 9, bytes, hex);
	mk("id65-nosh", "--no-shdrs", "--build-id", hex, "--text", "32", NULL);
	is_int(info_of("id65-nosh", &info, err), -1,
	    "65-byte build-id in a PT_NOTE: refused");
	ok(err[0] != '\0', "with a reason");
}

static void
test_lying_note(void)
{
	static const char *const lies[] = { "24", "40", "65", "1000",
		"4294967295" };
	uint8_t bytes[20];
	char hex[41], name[64], msg[128], err[ERRLEN];
	struct elf_info info;
	size_t i;
	int rc;

	make_id(20, 3, bytes, hex);
	for (i = 0; i < sizeof(lies) / sizeof(lies[0]); i++) {
		snprintf(name, sizeof(name), "lie%s", lies[i]);
		mk(name, "--build-id", hex, "--note-desc-len", lies[i],
		    "--text", "16", NULL);
		rc = info_of(name, &info, err);
		snprintf(msg, sizeof(msg),
		    "note claiming %s bytes: -1 or no build-id", lies[i]);
		ok(rc == -1 || (rc == 0 && info.id.len == 0), msg);

		snprintf(name, sizeof(name), "lie%s-nosh", lies[i]);
		mk(name, "--no-shdrs", "--build-id", hex, "--note-desc-len",
		    lies[i], "--text", "16", NULL);
		rc = info_of(name, &info, err);
		snprintf(msg, sizeof(msg),
		    "PT_NOTE claiming %s bytes: -1 or no build-id", lies[i]);
		ok(rc == -1 || (rc == 0 && info.id.len == 0), msg);
	}
}

static void
test_no_shdrs(void)
{
	uint8_t bytes[20];
	char hex[41], err[ERRLEN];
	struct elf_info info;
	struct elf_section sec;

	make_id(20, 4, bytes, hex);
	mk("nosh", "--no-shdrs", "--build-id", hex, "--text", "64", NULL);
	is_int(info_of("nosh", &info, err), 0, "no section headers: read");
	ok(id_is(&info.id, bytes, 20), "build-id from the PT_NOTE");
	is_int(info.kinds, ELF_KIND_EXECUTABLE, "PT_LOAD makes it executable");
	is_int(section_of("nosh", ".text", &sec, err), ELF_NOTFOUND,
	    "no sections to find");

	mk("nosh-noload", "--no-shdrs", "--build-id", hex, NULL);
	is_int(info_of("nosh-noload", &info, err), 0,
	    "no section headers, no PT_LOAD: read");
	ok(id_is(&info.id, bytes, 20), "build-id from the PT_NOTE");
	is_int(info.kinds, 0, "nothing loadable: no kind");

	mk("nosh-rel", "--no-shdrs", "--type", "rel", "--build-id", hex,
	    "--text", "64", NULL);
	is_int(info_of("nosh-rel", &info, err), 0,
	    "relocatable without section headers: read");
	is_int(info.kinds, 0, "a relocatable file is never executable");

	mk("nosh-exec", "--no-shdrs", "--type", "exec", "--build-id", hex,
	    "--text", "64", NULL);
	is_int(info_of("nosh-exec", &info, err), 0, "ET_EXEC without sections");
	is_int(info.kinds, ELF_KIND_EXECUTABLE, "ET_EXEC: executable");
}

static void
test_bad_headers(void)
{
	uint8_t bytes[20];
	char hex[41], err[ERRLEN];
	struct elf_info info;
	struct elf_section sec;
	int fd;

	make_id(20, 5, bytes, hex);
	mk("badstrndx", "--bad-shstrndx", "--build-id", hex, "--text", "16",
	    "--debug", ".debug_info:64", NULL);
	is_int(info_of("badstrndx", &info, err), -1,
	    "e_shstrndx out of range: -1");
	ok(err[0] != '\0', "with a reason");
	is_int(section_of("badstrndx", ".debug_info", &sec, err), -1,
	    "find_section: e_shstrndx out of range: -1");
	ok(err[0] != '\0', "with a reason");

	mk("shoffpast", "--shoff-past-end", "--build-id", hex, "--text", "16",
	    "--debug", ".debug_info:64", NULL);
	is_int(info_of("shoffpast", &info, err), -1, "e_shoff past EOF: -1");
	ok(err[0] != '\0', "with a reason");
	is_int(section_of("shoffpast", ".debug_info", &sec, err), -1,
	    "find_section: e_shoff past EOF: -1");
	ok(err[0] != '\0', "with a reason");

	/* No room for a message is no reason to crash. */
	fd = open(at("badstrndx"), O_RDONLY);
	is_int(elf_read_info(fd, &info, NULL, 0), -1,
	    "-1 without an err buffer");
	close(fd);
}

static void
test_truncated(void)
{
	uint8_t bytes[20];
	char hex[41], name[64], len[32], msg[128], err[ERRLEN];
	struct elf_info info;
	struct elf_section sec;
	struct stat st;
	uint64_t cuts[6];
	size_t i, ncuts;
	int rc;

	make_id(20, 6, bytes, hex);
	mk("whole", "--build-id", hex, "--text", "256", "--debug",
	    ".debug_info:2000", "--debug", ".debug_abbrev:100", NULL);
	if (!ok(stat(at("whole"), &st) == 0, "file to truncate"))
		return;
	cuts[0] = 10;
	cuts[1] = 64;
	cuts[2] = 200;
	cuts[3] = (uint64_t)st.st_size / 2;
	cuts[4] = (uint64_t)st.st_size - 1;
	ncuts = 5;
	for (i = 0; i < ncuts; i++) {
		snprintf(len, sizeof(len), "%llu", (unsigned long long)cuts[i]);
		snprintf(name, sizeof(name), "cut%s", len);
		mk(name, "--build-id", hex, "--text", "256", "--debug",
		    ".debug_info:2000", "--debug", ".debug_abbrev:100",
		    "--truncate", len, NULL);
		rc = info_of(name, &info, err);
		snprintf(msg, sizeof(msg), "cut to %s bytes: -1 or not ELF",
		    len);
		ok(rc == -1 || rc == ELF_NOTFOUND, msg);
		if (rc == 0 && info.id.len > 0 && !id_is(&info.id, bytes, 20))
			printf("#   and a garbage build-id\n");
		snprintf(msg, sizeof(msg), "cut to %s bytes: a reason for -1",
		    len);
		ok(rc != -1 || err[0] != '\0', msg);
		rc = section_of(name, ".debug_abbrev", &sec, err);
		snprintf(msg, sizeof(msg),
		    "find_section, cut to %s bytes: -1 or not ELF", len);
		ok(rc == -1 || rc == ELF_NOTFOUND, msg);
	}

	/*
	 * Without section headers the build-id is found through PT_NOTE; a
	 * file cut inside the note is malformed and must not pass as an ELF
	 * file without a build-id.
	 */
	mk("nosh-whole", "--no-shdrs", "--build-id", hex, "--text", "256",
	    NULL);
	mk("nosh-cut", "--no-shdrs", "--build-id", hex, "--text", "256",
	    "--truncate", "200", NULL);
	rc = info_of("nosh-cut", &info, err);
	ok(rc != 0 || info.id.len == 0 || id_is(&info.id, bytes, 20),
	    "PT_NOTE cut short: no garbage build-id");
	ok(rc == -1 || rc == ELF_NOTFOUND,
	    "PT_NOTE cut short: -1, not a valid file without build-id");
	if (rc == 0)
		printf("#   got 0 with kinds %u and a %u-byte build-id\n",
		    info.kinds, (unsigned)info.id.len);
}

static void
test_kinds(void)
{
	uint8_t bytes[20];
	char hex[41], err[ERRLEN];
	struct elf_info info;
	struct elf_section sec;

	make_id(20, 7, bytes, hex);
	mk("rel", "--type", "rel", "--build-id", hex, "--text", "64", "--debug",
	    ".debug_info:100", NULL);
	is_int(info_of("rel", &info, err), 0, "ET_REL: read");
	is_int(info.kinds, ELF_KIND_DEBUGINFO,
	    "ET_REL with .text and .debug_info: debuginfo only");

	mk("zdebug", "--type", "exec", "--build-id", hex, "--debug",
	    ".zdebug_info:100", NULL);
	is_int(info_of("zdebug", &info, err), 0, ".zdebug_info: read");
	is_int(info.kinds, ELF_KIND_DEBUGINFO, ".zdebug_info is debuginfo");

	mk("exec-both", "--type", "exec", "--build-id", hex, "--text", "64",
	    "--debug", ".debug_line:10", NULL);
	is_int(info_of("exec-both", &info, err), 0, "ET_EXEC with both: read");
	is_int(info.kinds, ELF_KIND_ALL, "ET_EXEC with .text and .debug_line");

	mk("nobits", "--nobits-text", "4096", "--build-id", hex, "--debug",
	    ".debug_info:100", NULL);
	is_int(info_of("nobits", &info, err), 0, "NOBITS .text: read");
	is_int(info.kinds, ELF_KIND_DEBUGINFO,
	    "NOBITS .text does not make an executable");
	is_int(section_of("nobits", ".text", &sec, err), ELF_NOTFOUND,
	    "NOBITS .text is not found");

	mk("emptydebug", "--build-id", hex, "--text", "16", "--debug",
	    ".debug_info:0", NULL);
	is_int(info_of("emptydebug", &info, err), 0, "empty .debug_info: read");
	is_int(info.kinds, ELF_KIND_EXECUTABLE,
	    "an empty .debug_info is no debuginfo");
	is_int(section_of("emptydebug", ".debug_info", &sec, err), ELF_NOTFOUND,
	    "an empty section is not found");

	mk("notdebug", "--build-id", hex, "--text", "16", "--section",
	    ".debug:100", "--section", ".debuglink:100", "--section",
	    ".comment:20", NULL);
	is_int(info_of("notdebug", &info, err), 0, "near-debug names: read");
	is_int(info.kinds, ELF_KIND_EXECUTABLE,
	    ".debug and .debuglink are not DWARF sections");

	mk("noid", "--text", "16", "--debug", ".debug_info:10", NULL);
	is_int(info_of("noid", &info, err), 0, "no build-id: read");
	is_int(info.id.len, 0, "no build-id: id.len 0");
	is_int(info.kinds, ELF_KIND_ALL, "no build-id: kinds still known");
}

static void
test_sections(void)
{
	static const char *const names[] = { ".debug_info", ".debug_abbrev",
		".debug_str" };
	uint8_t want[3000], bytes[20];
	char hex[41], msg[128], err[ERRLEN];
	struct elf_section sec;
	size_t i, j, size;

	make_id(20, 8, bytes, hex);
	mk("secs", "--build-id", hex, "--text", "100", "--debug",
	    ".debug_info:3000", "--debug", ".debug_abbrev:77", "--debug",
	    ".debug_str:1", NULL);
	for (i = 0; i < 3; i++) {
		size = i == 0 ? 3000 : i == 1 ? 77 : 1;
		for (j = 0; j < size; j++)
			want[j] = pattern_byte(names[i], j);
		snprintf(msg, sizeof(msg), "find %s", names[i]);
		is_int(section_of("secs", names[i], &sec, err), 0, msg);
		snprintf(msg, sizeof(msg), "%s: size", names[i]);
		is_int(sec.size, size, msg);
		snprintf(msg, sizeof(msg), "%s: the bytes at its offset",
		    names[i]);
		ok(section_bytes_are("secs", &sec, want, size), msg);
	}
	is_int(section_of("secs", ".text", &sec, err), 0, "find .text");
	memset(want, 0xcc, 100);
	ok(section_bytes_are("secs", &sec, want, 100), ".text bytes");
	is_int(section_of("secs", ".debug_line", &sec, err), ELF_NOTFOUND,
	    "a section that is not there");
	is_int(section_of("secs", "", &sec, err), ELF_NOTFOUND,
	    "the empty name finds nothing");
}

static void
test_altlink(void)
{
	uint8_t bytes[20], alt[65];
	char hex[41], althex[131], arg[1400], path[1100], err[ERRLEN];
	struct elf_info info;

	make_id(20, 10, bytes, hex);
	make_id(20, 11, alt, althex);
	snprintf(arg, sizeof(arg), "/usr/lib/debug/.dwz/x86_64/pkg.debug:%s",
	    althex);
	mk("alt", "--build-id", hex, "--debug", ".debug_info:10", "--altlink",
	    arg, NULL);
	is_int(info_of("alt", &info, err), 0, "altlink: read");
	is_str(info.alt_path, "/usr/lib/debug/.dwz/x86_64/pkg.debug",
	    "altlink: the path");
	ok(id_is(&info.alt_id, alt, 20), "altlink: the id");
	ok(id_is(&info.id, bytes, 20), "altlink: own build-id unchanged");

	mk("alt-noid", "--build-id", hex, "--altlink", "x.debug:", NULL);
	is_int(info_of("alt-noid", &info, err), -1, "altlink without id: -1");
	ok(err[0] != '\0', "with a reason");

	make_id(65, 12, alt, althex);
	snprintf(arg, sizeof(arg), "x.debug:%s", althex);
	mk("alt-longid", "--build-id", hex, "--altlink", arg, NULL);
	is_int(info_of("alt-longid", &info, err), -1,
	    "altlink with a 65-byte id: -1");

	make_id(20, 13, alt, althex);
	memset(path, 'p', ELF_ALTPATH_MAX - 1);
	path[0] = '/';
	path[ELF_ALTPATH_MAX - 1] = '\0';
	snprintf(arg, sizeof(arg), "%s:%s", path, althex);
	mk("alt-1023", "--build-id", hex, "--altlink", arg, NULL);
	is_int(info_of("alt-1023", &info, err), 0,
	    "altlink path of ELF_ALTPATH_MAX - 1 bytes: read");
	is_str(info.alt_path, path, "the long path whole");
	ok(id_is(&info.alt_id, alt, 20), "and the id after it");

	memset(path, 'p', ELF_ALTPATH_MAX);
	path[0] = '/';
	path[ELF_ALTPATH_MAX] = '\0';
	snprintf(arg, sizeof(arg), "%s:%s", path, althex);
	mk("alt-1024", "--build-id", hex, "--altlink", arg, NULL);
	is_int(info_of("alt-1024", &info, err), -1,
	    "altlink path of ELF_ALTPATH_MAX bytes: -1");
	ok(err[0] != '\0', "with a reason");
}

/*
 * What this process has read so far, in bytes through read(2) and pread(2)
 * (rchar in /proc/self/io) plus pages faulted in (a mapped file): the work
 * of reading a file, whatever the machine's load makes it cost in time.
 */
static uint64_t
bytes_touched(void)
{
	char line[128];
	unsigned long long rchar = 0;
	struct rusage ru;
	FILE *fp;

	if ((fp = fopen("/proc/self/io", "r")) != NULL) {
		while (fgets(line, sizeof(line), fp) != NULL)
			if (sscanf(line, "rchar: %llu", &rchar) == 1)
				break;
		fclose(fp);
	}
	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)rchar + (uint64_t)ru.ru_minflt * 4096 +
	    (uint64_t)ru.ru_majflt * 4096;
}

static void
test_big(void)
{
	uint8_t bytes[20], want[64];
	char hex[41], err[ERRLEN];
	struct elf_info info;
	struct elf_section sec, sec5;
	struct stat st;
	uint64_t t0, t;
	size_t i;
	int fd, rc, rc2, rc5;

	make_id(20, 14, bytes, hex);
	if (!ok(mk("big", "--build-id", hex, "--debug", ".debug_info:2G",
		    "--debug", ".debug_line:5G", NULL),
		"mkelf writes a sparse 7 GiB file"))
		return;
	ok(stat(at("big"), &st) == 0 && st.st_size > (7ll << 30),
	    "the file is over 7 GiB long");

	fd = open(at("big"), O_RDONLY);
	t0 = bytes_touched();
	rc = elf_read_info(fd, &info, err, sizeof(err));
	rc2 = elf_find_section(fd, ".debug_info", &sec, err, sizeof(err));
	rc5 = elf_find_section(fd, ".debug_line", &sec5, err, sizeof(err));
	t = bytes_touched() - t0;
	is_int(rc, 0, "2 GiB .debug_info: read");
	is_int(info.kinds, ELF_KIND_DEBUGINFO, "2 GiB .debug_info: debuginfo");
	ok(id_is(&info.id, bytes, 20), "2 GiB .debug_info: build-id");
	is_int(rc2, 0, "2 GiB .debug_info: found");
	is_int(sec.size, 2ull << 30, "2 GiB .debug_info: size is 2 GiB");
	is_int(rc5, 0, "5 GiB .debug_line: found");
	is_int(sec5.size, 5ull << 30, "5 GiB .debug_line: size is 5 GiB");
	ok(sec5.offset > (2ull << 30) &&
		sec5.offset + sec5.size <= (uint64_t)st.st_size,
	    "5 GiB .debug_line: offset past the 2 GiB section, inside the "
	    "file");
	ok(t < (16u << 20), "reading them touches under 16 MiB of the file");
	if (t >= (16u << 20))
		printf("#   touched %llu bytes\n", (unsigned long long)t);
	for (i = 0; i < sizeof(want); i++)
		want[i] = pattern_byte(".debug_line", i);
	ok(section_bytes_are("big", &(struct elf_section){ sec5.offset, 64 },
	       want, sizeof(want)),
	    "5 GiB .debug_line: its first bytes are at the offset");
	close(fd);
}

/* xorshift64*: a fixed sequence, the same on every run. */
static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

struct fuzz_tally {
	unsigned ok, notfound, fail, bad;
};

/*
 * Flip 1 to 8 bytes of a fresh copy of the file at base, iterations times,
 * and read each copy.  Half the flips land in the ELF header or the section
 * header table, where they do the most harm; the rest anywhere.
 */
static void
fuzz(const char *base, const char *scratch, unsigned iterations, uint64_t seed,
    struct fuzz_tally *t)
{
	struct elf_info info;
	struct elf_section sec;
	char err[ERRLEN];
	uint8_t *orig, *copy;
	size_t len, tail, pos;
	unsigned it, k, nflip;
	uint64_t r;
	int fd, rc, bad;

	memset(t, 0, sizeof(*t));
	orig = slurp(at(base), &len);
	if (orig == NULL || len < 128 || (copy = malloc(len)) == NULL) {
		t->bad = 1;
		free(orig);
		return;
	}
	/* mkelf puts the section header table last. */
	tail = len > 8 * 64 ? 8 * 64 : len;
	fd = open(at(scratch), O_RDWR | O_CREAT | O_TRUNC, 0644);
	for (it = 0; it < iterations && fd != -1; it++) {
		memcpy(copy, orig, len);
		nflip = 1 + (unsigned)(rnd(&seed) % 8);
		for (k = 0; k < nflip; k++) {
			r = rnd(&seed);
			switch (r % 4) {
			case 0:
				pos = (size_t)(r >> 8) % 64;
				break;
			case 1:
				pos = len - tail + (size_t)(r >> 8) % tail;
				break;
			default:
				pos = (size_t)(r >> 8) % len;
			}
			copy[pos] ^= (uint8_t)(1 + (r >> 40) % 255);
		}
		if (pwrite(fd, copy, len, 0) != (ssize_t)len)
			break;

		bad = 0;
		err[0] = '\0';
		rc = elf_read_info(fd, &info, err, sizeof(err));
		if (rc == 0)
			t->ok++;
		else if (rc == ELF_NOTFOUND)
			t->notfound++;
		else if (rc == -1)
			t->fail++;
		if (rc != 0 && rc != ELF_NOTFOUND && rc != -1)
			bad = 1;
		if (rc == 0 && info.id.len > BUILDID_MAX)
			bad = 1;
		if (rc == 0 && info.alt_id.len > BUILDID_MAX)
			bad = 1;
		if (rc == 0 &&
		    strnlen(info.alt_path, sizeof(info.alt_path)) ==
			sizeof(info.alt_path))
			bad = 1;
		if (rc == -1 && err[0] == '\0')
			bad = 1;

		err[0] = '\0';
		rc =
		    elf_find_section(fd, ".debug_info", &sec, err, sizeof(err));
		if (rc != 0 && rc != ELF_NOTFOUND && rc != -1)
			bad = 1;
		if (rc == 0 &&
		    (sec.size == 0 || sec.offset > len ||
			sec.size > len - sec.offset))
			bad = 1;
		if (rc == -1 && err[0] == '\0')
			bad = 1;
		if (bad && t->bad++ < 5)
			printf("#   %s iteration %u: bad answer (rc %d)\n",
			    base, it, rc);
	}
	if (fd == -1 || it != iterations)
		t->bad++;
	if (fd != -1)
		close(fd);
	free(copy);
	free(orig);
}

static void
test_fuzz(void)
{
	uint8_t bytes[20], alt[20];
	char hex[41], althex[41], arg[80];
	struct fuzz_tally t;

	make_id(20, 15, bytes, hex);
	make_id(20, 16, alt, althex);
	snprintf(arg, sizeof(arg), "alt/x.debug:%s", althex);
	mk("fuzz-base", "--build-id", hex, "--text", "48", "--debug",
	    ".debug_info:300", "--debug", ".debug_abbrev:40", "--altlink", arg,
	    "--section", ".comment:12", NULL);
	fuzz("fuzz-base", "fuzz-copy", 2000, 0x5eed0001, &t);
	printf("# fuzz: %u read, %u not ELF, %u refused\n", t.ok, t.notfound,
	    t.fail);
	is_int(t.bad, 0, "fuzz: 2000 damaged files, only sane answers");
	ok(t.ok > 0 && t.fail > 0, "fuzz: some damage is tolerated, some not");

	mk("fuzz-nosh", "--no-shdrs", "--build-id", hex, "--text", "100", NULL);
	fuzz("fuzz-nosh", "fuzz-copy", 500, 0x5eed0002, &t);
	printf("# fuzz without sections: %u read, %u not ELF, %u refused\n",
	    t.ok, t.notfound, t.fail);
	is_int(t.bad, 0, "fuzz: 500 damaged files without sections, sane");
}

/* Where mkelf is: $top_builddir/tests/mkelf, $MKELF, ./tests/mkelf. */
static int
find_mkelf(void)
{
	const char *top = getenv("top_builddir"), *env = getenv("MKELF");
	char cand[PATH_MAX];

	cand[0] = '\0';
	if (top != NULL && top[0] != '\0')
		snprintf(cand, sizeof(cand), "%s/tests/mkelf", top);
	if (cand[0] == '\0' || access(cand, X_OK) != 0) {
		if (env != NULL && env[0] != '\0')
			snprintf(cand, sizeof(cand), "%s", env);
		else
			snprintf(cand, sizeof(cand), "./tests/mkelf");
	}
	if (access(cand, X_OK) != 0 || realpath(cand, mkelf) == NULL) {
		printf("# no mkelf at %s (set MKELF or top_builddir)\n", cand);
		return 0;
	}
	return 1;
}

/*
 * elf_prefix_check on the opening bytes of real files: the program and its
 * split debug file carry their note early, so a prefix tells the id; a
 * wrong id is refused, as are HTML and a few bytes that are not ELF.
 */
static void
test_prefix(void)
{
	static const char *const files[] = { "prog", "prog.debug",
		"prog.stripped" };
	static const char html[] = "<html><body>Service unavailable</body>";
	struct elf_info info;
	struct buildid other;
	char err[ERRLEN], what[160];
	uint8_t *buf;
	size_t i, len, cut;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		if (info_of(files[i], &info, err) != 0 ||
		    (buf = slurp(at(files[i]), &len)) == NULL) {
			snprintf(what, sizeof(what), "prefix: %s readable",
			    files[i]);
			ok(0, what);
			continue;
		}
		other = info.id;
		other.bytes[0] ^= 0xff;
		cut = len < 4096 ? len : 4096;
		snprintf(what, sizeof(what), "prefix: 4 KB of %s: its id",
		    files[i]);
		is_int(elf_prefix_check(buf, cut, &info.id), 1, what);
		snprintf(what, sizeof(what), "prefix: 4 KB of %s: other id",
		    files[i]);
		is_int(elf_prefix_check(buf, cut, &other), -1, what);
		snprintf(what, sizeof(what), "prefix: 40 bytes of %s",
		    files[i]);
		is_int(elf_prefix_check(buf, 40, &other), 0, what);
		is_int(elf_prefix_check(buf, 3, &other), 0,
		    "prefix: 3 bytes of ELF magic cannot tell");
		free(buf);
	}
	is_int(elf_prefix_check(html, sizeof(html) - 1, &info.id), -1,
	    "prefix: HTML is not ELF");
	is_int(elf_prefix_check("\177EL", 3, &info.id), 0,
	    "prefix: part of the magic cannot tell");
	is_int(elf_prefix_check("\177EX", 3, &info.id), -1,
	    "prefix: a wrong magic byte is refused at once");
}

int
main(void)
{
	if (!ok(testdir_make("test_elf") == 0, "make a temporary directory"))
		return tap_done();
	if (!ok(elf_init() == 0, "elf_init"))
		return tap_done();

	test_helpers();
	test_compiled();
	test_prefix();
	test_dwz();
	test_not_elf();
	if (ok(find_mkelf(), "mkelf is there")) {
		test_buildid_lengths();
		test_lying_note();
		test_no_shdrs();
		test_bad_headers();
		test_truncated();
		test_kinds();
		test_sections();
		test_altlink();
		test_big();
		test_fuzz();
	}

	testdir_remove();
	return tap_done();
}
