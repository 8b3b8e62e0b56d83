/*
 * tests/unit/test_symtab.c: symbol tables (symbolizer/build.c,
 * symbolizer/symtab.c, indexer/symdwarf.c) on programs compiled here:
 * the frames of an address with inlined calls, the ELF symbol that covers
 * it, file offsets and process addresses mapped through the program
 * headers, the fallbacks without DWARF (.symtab, .dynsym, MiniDebugInfo),
 * dwz alt files (GNU and DWARF 5 forms), compressed debug sections, the
 * same bytes for the same input, and tables that are damaged: truncated,
 * or with bytes changed and the checksum made right again.
 *
 * Fixtures are built with gcc, objcopy, strip, dwz and xz in a temporary
 * directory (resolved with realpath(), so the paths the DWARF names are
 * the ones expected), removed at the end; a missing tool is a failure.
 */
#include "symbolizer/build.h"
#include "symbolizer/symtab.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "indexer/elf.h"
#include "tests/shell.h"
#include "tests/tap.h"
#include "tests/testdir.h"

#define ERRLEN 512
/* The header's checksum field (symbolizer/format.h). */
#define SUM_OFF 24

static const char prog_c[] =
    "#include <stdio.h>\n" /* 1 */
    "#include \"helper.h\"\n" /* 2 */
    "static inline __attribute__((always_inline)) int\n" /* 3 */
    "twice(int x)\n" /* 4 */
    "{\n" /* 5 */
    "\treturn x * 2 + helper_add(x);\n" /* 6 */
    "}\n" /* 7 */
    "__attribute__((noinline)) int\n" /* 8 */
    "outer(int x)\n" /* 9 */
    "{\n" /* 10 */
    "\treturn twice(x) + 7;\n" /* 11 */
    "}\n" /* 12 */
    "int\n" /* 13 */
    "main(int argc, char **argv)\n" /* 14 */
    "{\n" /* 15 */
    "\tprintf(\"%d\\n\", outer(argc));\n" /* 16 */
    "\treturn 0;\n" /* 17 */
    "}\n"; /* 18 */

static const char helper_h[] =
    "static inline __attribute__((always_inline)) int\n" /* 1 */
    "helper_add(int x)\n" /* 2 */
    "{\n" /* 3 */
    "\treturn x ^ 0x5a5a;\n" /* 4 */
    "}\n"; /* 5 */

/* A second program sharing helper.h, for dwz. */
static const char other_c[] = "#include <stdio.h>\n"
			      "#include \"helper.h\"\n"
			      "int\n"
			      "main(int argc, char **argv)\n"
			      "{\n"
			      "\tprintf(\"%d\\n\", helper_add(argc));\n"
			      "\treturn 0;\n"
			      "}\n";

static uint64_t outer_addr, main_addr;

static int
write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	if (fp == NULL)
		return -1;
	fputs(text, fp);
	return fclose(fp) == 0 ? 0 : -1;
}

/* The value of symbol name in the ELF file at path; 0 if none. */
static uint64_t
sym_value(const char *path, const char *name)
{
	char cmd[PATH_MAX + 128], line[256];
	unsigned long long v = 0;
	FILE *fp;

	snprintf(cmd, sizeof(cmd), "nm '%s'", path);
	if ((fp = popen(cmd, "r")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), fp) != NULL) {
		char n[128], t;
		unsigned long long a;

		if (sscanf(line, "%llx %c %127s", &a, &t, n) == 3 &&
		    strcmp(n, name) == 0)
			v = a;
	}
	pclose(fp);
	return v;
}

/* "-" opens nothing. */
static int
open_opt(const char *name)
{
	return strcmp(name, "-") == 0 ? -1 : open(at(name), O_RDONLY);
}

/* Build table from the files named in the test directory: 0 or -1. */
static int
build(const char *table, const char *debug, const char *alt, const char *exec,
    char *err)
{
	struct symbuild_in in;
	int out, rc;

	in.debug_fd = open_opt(debug);
	in.alt_fd = open_opt(alt);
	in.exec_fd = open_opt(exec);
	in.tmpdir = tmpdir;
	out = open(at(table), O_RDWR | O_CREAT | O_TRUNC, 0644);
	rc = out == -1 ? -1 : symbuild_run(&in, out, NULL, err, ERRLEN);
	if (rc == -1)
		printf("# build %s: %s\n", table, err);
	if (in.debug_fd >= 0)
		close(in.debug_fd);
	if (in.alt_fd >= 0)
		close(in.alt_fd);
	if (in.exec_fd >= 0)
		close(in.exec_fd);
	if (out >= 0)
		close(out);
	return rc;
}

static struct symtab *
topen(const char *table, const char **why)
{
	struct symtab *t = NULL;
	int fd = open(at(table), O_RDONLY);

	*why = "cannot open";
	if (fd == -1)
		return NULL;
	t = symtab_open(fd, why);
	close(fd);
	return t;
}

/* 1 when the two files hold the same bytes. */
static int
same_bytes(const char *a, const char *b)
{
	size_t na, nb;
	uint8_t *pa = slurp(at(a), &na), *pb = slurp(at(b), &nb);
	int same =
	    pa != NULL && pb != NULL && na == nb && memcmp(pa, pb, na) == 0;

	free(pa);
	free(pb);
	return same;
}

static int
fixtures(void)
{
	if (write_file(at("prog.c"), prog_c) == -1 ||
	    write_file(at("helper.h"), helper_h) == -1 ||
	    write_file(at("other.c"), other_c) == -1)
		return 0;
	if (!shell("cd '%s' && gcc -O2 -g -o prog prog.c && "
		   "gcc -O2 -g -o other other.c && "
		   "objcopy --only-keep-debug prog prog.debug && "
		   "objcopy --strip-all prog prog.exe && "
		   "objcopy --compress-debug-sections=zlib-gabi prog.debug "
		   "prog.zlib.debug && "
		   "objcopy --compress-debug-sections=zlib-gnu prog.debug "
		   "prog.gnu.debug && "
		   "objcopy --strip-debug prog.debug prog.nodwarf.debug && "
		   "strip -g -o prog.sym prog",
		tmpdir))
		return 0;
	outer_addr = sym_value(at("prog"), "outer");
	main_addr = sym_value(at("prog"), "main");
	return outer_addr != 0 && main_addr != 0;
}

/*
 * The frames of va as "func@file:line/inlined;..." (files' base names),
 * in out (2048 bytes; a static one when NULL).
 */
static const char *
frames_in(const struct symtab *t, uint64_t va, struct symtab_result *r,
    char *out)
{
	size_t i, n = 0;

	symtab_lookup(t, va, r);
	out[0] = '\0';
	for (i = 0; i < r->nframes && n < 2048 - 256; i++) {
		const struct symtab_frame *f = &r->frames[i];
		const char *base =
		    f->file != NULL ? strrchr(f->file, '/') : NULL;

		n += (size_t)snprintf(out + n, 2048 - n, "%s%s@%s:%u/%d",
		    i > 0 ? ";" : "", f->function ? f->function : "??",
		    base != NULL ? base + 1 : "??", f->line, f->inlined);
	}
	return out;
}

static const char *
frames(const struct symtab *t, uint64_t va, struct symtab_result *r)
{
	static char out[2048];

	return frames_in(t, va, r, out);
}

static void
test_build(void)
{
	char err[ERRLEN], path[PATH_MAX + 16];
	struct symtab_result *r = malloc(sizeof(*r));
	struct buildid id, want, alt;
	struct symtab *t = NULL;
	const char *why;
	uint64_t a;
	int chain = 0, in_outer = 1;

	ok(build("t1", "prog.debug", "-", "prog.exe", err) == 0,
	    "a table from a debug file and its executable");
	t = topen("t1", &why);
	if (!ok(t != NULL, "it opens") || r == NULL) {
		printf("# %s\n", why);
		free(r);
		return;
	}
	symtab_buildid(t, &id);
	symtab_altid(t, &alt);
	ok(readelf_buildid(at("prog"), &want) == 0 && buildid_equal(&id, &want),
	    "it carries the program's build-id");
	is_int(alt.len, 0, "and no alt file's");
	is_str(symtab_source_name(symtab_source(t)), "debuginfo",
	    "functions from the DWARF");
	is_str(symtab_source_name(symtab_symsource(t)), "debuginfo_symtab",
	    "symbols from the debug file's .symtab");
	is_int(symtab_phdrs(t), SYMTAB_PHDRS_EXEC,
	    "program headers from the executable");

	is_str(frames(t, outer_addr, r),
	    "helper_add@helper.h:4/1;twice@prog.c:6/1;outer@prog.c:11/0",
	    "outer's first byte: helper_add inlined into twice into outer");
	is_int(r->status, SYMTAB_OK, "status ok");
	is_str(r->symbol, "outer", "the symbol that covers it");
	is_int(r->sym_addr, outer_addr, "at outer's address");
	is_int(r->nearest, 0, "which covers it, not just the nearest");
	snprintf(path, sizeof(path), "%s/prog.c", tmpdir);
	is_str(r->frames[1].file, path, "files as the DWARF names them");
	is_int(r->frames[1].column, 17, "the call site's column");
	for (a = outer_addr; a < outer_addr + 0x40; a++) {
		symtab_lookup(t, a, r);
		if (r->nframes == 0 || r->symbol == NULL ||
		    strcmp(r->symbol, "outer") != 0)
			break;
		if (strcmp(r->frames[r->nframes - 1].function, "outer") != 0)
			in_outer = 0;
		chain |= r->nframes == 3;
	}
	ok(in_outer && chain, "every byte of outer has outer outermost");
	is_str(frames(t, main_addr, r), "main@prog.c:15/0",
	    "main's first byte");
	symtab_lookup(t, 0x10, r);
	is_int(r->status, SYMTAB_NO_SYMBOL, "an address below the code");
	is_int(r->nframes, 0, "has no frame");
	symtab_lookup(t, UINT64_MAX, r);
	is_int(r->status, SYMTAB_NO_SYMBOL, "the last address");
	ok(r->symbol != NULL && r->nearest,
	    "has the nearest symbol below it, said to be only that");
	symtab_close(t);

	ok(build("t1b", "prog.debug", "-", "prog.exe", err) == 0 &&
		same_bytes("t1", "t1b"),
	    "the same input gives the same bytes");
	ok(build("t1z", "prog.zlib.debug", "-", "prog.exe", err) == 0 &&
		same_bytes("t1", "t1z"),
	    "and so do the same sections compressed (SHF_COMPRESSED)");
	ok(build("t1g", "prog.gnu.debug", "-", "prog.exe", err) == 0 &&
		same_bytes("t1", "t1g"),
	    "or as .zdebug_ sections");
	free(r);
}

/* The executable PT_LOAD of path: its offset and address. */
static int
code_segment(const char *path, uint64_t *off, uint64_t *vaddr)
{
	int fd = open(path, O_RDONLY), rc = -1;
	Elf *e;
	size_t n, i;
	GElf_Phdr ph;

	if (fd == -1)
		return -1;
	if ((e = elf_begin(fd, ELF_C_READ, NULL)) != NULL &&
	    elf_getphdrnum(e, &n) == 0)
		for (i = 0; i < n; i++)
			if (gelf_getphdr(e, (int)i, &ph) != NULL &&
			    ph.p_type == PT_LOAD && (ph.p_flags & PF_X) != 0) {
				*off = ph.p_offset;
				*vaddr = ph.p_vaddr;
				rc = 0;
				break;
			}
	elf_end(e);
	close(fd);
	return rc;
}

static void
test_mapping(void)
{
	char err[ERRLEN];
	struct symtab *t = NULL;
	const char *why = NULL;
	uint64_t off = 0, vaddr = 0, fo, va = 0, start = 0x7f1234500000, mo;

	if (!ok(code_segment(at("prog.exe"), &off, &vaddr) == 0,
		"the executable's code segment"))
		return;
	fo = outer_addr - vaddr + off;
	mo = off & ~(uint64_t)0xfff;
	if ((t = topen("t1", &why)) == NULL)
		return;
	ok(symtab_offset_to_va(t, fo, &va, &why) == 0 && va == outer_addr,
	    "outer's file offset maps to its address");
	ok(symtab_offset_to_va(t, 1ull << 40, &va, &why) == -1 &&
		strstr(why, "no loaded segment") != NULL,
	    "an offset past every segment is refused, saying why");
	ok(symtab_abs_to_va(t, start + fo - mo, start, mo, &va, &why) == 0 &&
		va == outer_addr,
	    "a process address in a mapping (start, offset) maps too");
	ok(symtab_abs_to_va(t, start - 1, start, mo, &va, &why) == -1 &&
		strstr(why, "below") != NULL,
	    "an address below the mapping is refused");
	ok(symtab_abs_to_va(t, UINT64_MAX, 0, 2, &va, &why) == -1 &&
		strstr(why, "64 bits") != NULL,
	    "an offset beyond 64 bits is refused");
	symtab_close(t);

	ok(build("t2", "prog.debug", "-", "-", err) == 0 &&
		(t = topen("t2", &why)) != NULL,
	    "a table from the debug file alone");
	if (t == NULL)
		return;
	is_int(symtab_phdrs(t), SYMTAB_PHDRS_NONE,
	    "has no program headers: a debug file's are empty");
	ok(symtab_offset_to_va(t, fo, &va, &why) == -1 &&
		strstr(why, "program headers") != NULL,
	    "so a file offset is refused, saying why");
	symtab_close(t);
	t = NULL;
	ok(build("t3", "prog", "-", "-", err) == 0 &&
		(t = topen("t3", &why)) != NULL,
	    "a table from an unstripped program alone");
	if (t == NULL)
		return;
	is_int(symtab_phdrs(t), SYMTAB_PHDRS_DEBUG,
	    "maps with its own headers");
	ok(symtab_offset_to_va(t, fo, &va, &why) == 0 && va == outer_addr,
	    "outer's offset to its address");
	symtab_close(t);
}

static void
test_fallbacks(void)
{
	struct symtab_result *r = malloc(sizeof(*r));
	char err[ERRLEN];
	struct symtab *t = NULL;
	const char *why;

	if (r == NULL)
		return;
	ok(build("t4", "-", "-", "prog.sym", err) == 0 &&
		(t = topen("t4", &why)) != NULL,
	    "a table from an executable with .symtab only");
	if (t != NULL) {
		is_str(symtab_source_name(symtab_source(t)),
		    "executable_symtab", "says where it came from");
		is_str(frames(t, outer_addr + 3, r), "outer@??:0/0",
		    "the symbol names the function");
		is_int(r->status, SYMTAB_NO_LINE, "without a line: no_line");
		symtab_close(t);
	}
	t = NULL;
	ok(build("t5", "prog.nodwarf.debug", "-", "-", err) == 0 &&
		(t = topen("t5", &why)) != NULL,
	    "a debug file without DWARF");
	if (t != NULL) {
		is_str(symtab_source_name(symtab_source(t)), "debuginfo_symtab",
		    "falls back to its .symtab");
		symtab_close(t);
	}
	ok(build("t6", "-", "-", "prog.exe", err) == -1 &&
		strstr(err, "nothing to symbolize") != NULL,
	    "a stripped PIE exports no function: refused, saying why");
	/* MiniDebugInfo as Fedora makes it: the function symbols that
	 * .dynsym lacks, in an xz'd ELF file in .gnu_debugdata. */
	ok(shell("cd '%s' && nm -D prog --format=posix --defined-only | "
		 "awk '{print $1}' | sort > dynsyms && "
		 "nm prog --format=posix --defined-only | "
		 "awk '$2 == \"T\" || $2 == \"t\" {print $1}' | sort > funcs "
		 "&& "
		 "comm -13 dynsyms funcs > keep && "
		 "objcopy --only-keep-debug prog mini && "
		 "objcopy -S --remove-section .gdb_index --remove-section "
		 ".comment --keep-symbols=keep mini mini2 && "
		 "xz -f mini2 && objcopy --add-section .gnu_debugdata=mini2.xz "
		 "prog.exe prog.mini",
	       tmpdir),
	    "an executable with MiniDebugInfo");
	t = NULL;
	ok(build("t7", "-", "-", "prog.mini", err) == 0 &&
		(t = topen("t7", &why)) != NULL,
	    "its table");
	if (t != NULL) {
		is_str(symtab_source_name(symtab_source(t)),
		    "executable_minidebuginfo", "from .gnu_debugdata");
		is_str(frames(t, outer_addr, r), "outer@??:0/0",
		    "which names outer");
		symtab_close(t);
	}
	ok(build("t8", "prog.debug", "-", "other", err) == -1 &&
		strstr(err, "build-id") != NULL,
	    "an executable of another build-id is refused");
	free(r);
}

/* Every byte of outer and main looks up the same in tables a and b. */
static int
same_lookups(const char *a, const char *b)
{
	struct symtab_result *r = malloc(sizeof(*r));
	char first[2048];
	struct symtab *ta, *tb;
	const char *why;
	uint64_t va;
	int same = 1;

	ta = topen(a, &why);
	tb = topen(b, &why);
	for (va = outer_addr; r != NULL && ta != NULL && tb != NULL &&
	     va < outer_addr + 0x30 && same;
	     va++) {
		snprintf(first, sizeof(first), "%s", frames(ta, va, r));
		same = strcmp(first, frames(tb, va, r)) == 0;
	}
	symtab_close(ta);
	symtab_close(tb);
	free(r);
	return same && ta != NULL && tb != NULL;
}

static void
test_dwz(void)
{
	char err[ERRLEN], p[64], a[64];
	struct symtab *t = NULL;
	struct buildid alt, want;
	const char *why;
	int v;

	for (v = 4; v <= 5; v++) {
		const char *five = v == 5 ? "--dwarf-5 " : "";

		printf("# dwz %s\n", v == 5 ? "DWARF 5 (.debug_sup)" : "GNU");
		if (!ok(shell("cd '%s' && mkdir -p dwz%d && cd dwz%d && "
			      "objcopy --only-keep-debug ../prog p.debug && "
			      "objcopy --only-keep-debug ../other o.debug && "
			      "dwz %s-m alt.debug -M alt.debug p.debug o.debug",
			    tmpdir, v, v, five),
			"dwz -m on two debug files"))
			continue;

		snprintf(p, sizeof(p), "dwz%d/p.debug", v);
		snprintf(a, sizeof(a), "dwz%d/alt.debug", v);
		t = NULL;
		ok(build("tz", p, a, "prog.exe", err) == 0 &&
			(t = topen("tz", &why)) != NULL,
		    "a table through the alt file");
		if (t != NULL) {
			/* A supplementary file has no build-id note: it is
			 * named by its .debug_sup checksum. */
			symtab_altid(t, &alt);
			ok(v == 5 ? alt.len == 20
				  : readelf_buildid(at(a), &want) == 0 &&
				    buildid_equal(&alt, &want),
			    "it names the alt file's build-id");
			symtab_close(t);
		}
		ok(same_lookups("t1", "tz"),
		    "and answers as the table without dwz");
		ok(build("tn", p, "-", "prog.exe", err) == -1 &&
			strstr(err, "needs its dwz alt file") != NULL,
		    "without the alt file: refused, saying so");
		ok(build("tn", p, "prog.debug", "prog.exe", err) == -1 &&
			strstr(err, "not the alt file") != NULL,
		    "with another file as alt: refused");
	}
}

/* Make the header carry the SHA-256 of p[0..n) (its own field zero). */
static void
fix_checksum(uint8_t *p, size_t n)
{
	uint8_t sum[32];
	unsigned len;

	memset(p + SUM_OFF, 0, 32);
	EVP_Digest(p, n, sum, &len, EVP_sha256(), NULL);
	memcpy(p + SUM_OFF, sum, 32);
}

static int
write_bytes(const char *name, const uint8_t *p, size_t n)
{
	int fd = open(at(name), O_RDWR | O_CREAT | O_TRUNC, 0644);
	int rc = fd != -1 && write(fd, p, n) == (ssize_t)n ? 0 : -1;

	if (fd != -1)
		close(fd);
	return rc;
}

static void
test_hostile(void)
{
	struct symtab_result *r = malloc(sizeof(*r));
	size_t n, i, opened = 0, refused = 0, cuts[] = { 0, 8, 100, 551, 0, 0 };
	uint8_t *orig = slurp(at("t1"), &n), *p;
	struct symtab *t = NULL;
	const char *why;
	uint64_t va;
	int bad = 0;

	if (!ok(orig != NULL && r != NULL && (p = malloc(n)) != NULL,
		"the table's bytes"))
		return;
	cuts[4] = n / 2;
	cuts[5] = n - 1;
	for (i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		write_bytes("cut", orig, cuts[i]);
		t = topen("cut", &why);
		bad |= t != NULL;
		symtab_close(t);
	}
	ok(!bad, "every truncated table is refused");
	memcpy(p, orig, n);
	p[n - 1] ^= 1;
	write_bytes("flip", p, n);
	ok((t = topen("flip", &why)) == NULL &&
		strcmp(why, "bad checksum") == 0,
	    "a changed byte: bad checksum");
	symtab_close(t);
	memcpy(p, orig, n);
	p[8] = 2;
	fix_checksum(p, n);
	write_bytes("flip", p, n);
	ok((t = topen("flip", &why)) == NULL &&
		strstr(why, "another version") != NULL,
	    "version 2: refused");
	symtab_close(t);
	/* Every byte changed in turn, with a right checksum: refused, or
	 * answering without a memory error (the sanitizers watch). */
	for (i = 0; i < n; i++) {
		if (i >= SUM_OFF && i < SUM_OFF + 32)
			continue;
		memcpy(p, orig, n);
		p[i] ^= (uint8_t)(i % 7 == 0 ? 0x80 : 0x01);
		fix_checksum(p, n);
		write_bytes("flip", p, n);
		if ((t = topen("flip", &why)) == NULL) {
			refused++;
			continue;
		}
		opened++;
		for (va = outer_addr - 0x100; va < main_addr + 0x200; va += 3) {
			size_t k;

			symtab_lookup(t, va, r);
			for (k = 0; k < r->nframes; k++)
				bad |= r->frames[k].function != NULL &&
				    strlen(r->frames[k].function) > n;
		}
		symtab_close(t);
	}
	ok(!bad && opened + refused > 0, "every changed table handled");
	printf("# %zu changed tables refused, %zu opened\n", refused, opened);
	free(orig);
	free(p);
	free(r);
}

struct worker {
	const struct symtab *t;
	char expect[64][2048];
	int same;
};

static void *
work(void *arg)
{
	struct worker *w = arg;
	struct symtab_result *r = malloc(sizeof(*r));
	char buf[2048];
	int round, i;

	w->same = r != NULL;
	for (round = 0; r != NULL && round < 200; round++)
		for (i = 0; i < 64; i++)
			if (strcmp(frames_in(w->t, outer_addr + (uint64_t)i, r,
				       buf),
				w->expect[i]) != 0)
				w->same = 0;
	free(r);
	return NULL;
}

static void
test_threads(void)
{
	struct symtab_result *r = malloc(sizeof(*r));
	struct worker *w = calloc(4, sizeof(*w));
	pthread_t th[4];
	struct symtab *t = NULL;
	const char *why;
	int i, k, same = 1;

	if (r == NULL || w == NULL || (t = topen("t1", &why)) == NULL) {
		free(r);
		free(w);
		return;
	}
	for (k = 0; k < 4; k++) {
		w[k].t = t;
		for (i = 0; i < 64; i++)
			snprintf(w[k].expect[i], sizeof(w[k].expect[i]), "%s",
			    frames(t, outer_addr + (uint64_t)i, r));
	}
	for (k = 0; k < 4; k++)
		pthread_create(&th[k], NULL, work, &w[k]);
	for (k = 0; k < 4; k++) {
		pthread_join(th[k], NULL);
		same &= w[k].same;
	}
	ok(same, "four threads look up in one table at once, alike");
	symtab_close(t);
	free(r);
	free(w);
}

int
main(void)
{
	char real[PATH_MAX];

	if (elf_init() == -1 || testdir_make("test_symtab") == -1 ||
	    realpath(tmpdir, real) == NULL) {
		printf("Bail out! cannot set up\n");
		return 1;
	}
	snprintf(tmpdir, sizeof(tmpdir), "%s", real);
	if (ok(fixtures(), "fixtures built")) {
		test_build();
		test_mapping();
		test_fallbacks();
		test_dwz();
		test_hostile();
		test_threads();
	}
	testdir_remove();
	return tap_done();
}
