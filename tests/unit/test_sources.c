/*
 * tests/unit/test_sources.c: indexer/sources.c on real compiler output
 * (DWARF 4 and 5, split .debug files, relative compile paths, dwz) and on
 * damaged files.
 *
 * Fixtures are built at run time with gcc, objcopy and dwz in a temporary
 * directory, removed at the end; a missing tool is a failure, not a skip.
 * The test directory is resolved with realpath() first, so that the
 * comp_dir gcc records is the canonical spelling the checks expect.  An
 * alarm turns a hang (opening a FIFO named as the alt file) into a
 * failure; it allows 10 minutes, which a ThreadSanitizer build on a loaded
 * machine needs for the byte-flip rounds, and only a hang exceeds.
 */
#include "indexer/sources.h"

#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "indexer/elf.h"
#include "tests/shell.h"
#include "tests/tap.h"
#include "tests/testdir.h"

#define ERRLEN 256
#define LIST_MAX 512

/* What one sources_list() call gave. */
struct list {
	char *path[LIST_MAX];
	size_t n;
	size_t stop_after; /* 0: never stop */
	int quiet; /* do not print errors */
	int rc;
	int alt_missing; /* sources_list() said so */
	char err[ERRLEN];
};

static int
collect_cb(const char *path, void *arg)
{
	struct list *l = arg;

	if (l->n < LIST_MAX)
		l->path[l->n++] = strdup(path);
	return l->stop_after != 0 && l->n >= l->stop_after;
}

static void
list_free(struct list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->path[i]);
	l->n = 0;
}

/*
 * sources_list on the file name in the test directory, with the alt file
 * alt when not NULL, into l.
 */
static void
list_alt(struct list *l, const char *name, const char *alt, unsigned max)
{
	int fd, alt_fd = -1;

	l->n = 0;
	l->err[0] = '\0';
	if ((fd = open(at(name), O_RDONLY)) == -1 ||
	    (alt != NULL && (alt_fd = open(at(alt), O_RDONLY)) == -1)) {
		printf("# cannot open %s: %s\n", name, strerror(errno));
		if (fd != -1)
			close(fd);
		l->rc = -2;
		return;
	}
	l->rc = sources_list(fd, alt_fd, tmpdir, max, collect_cb, l,
	    &l->alt_missing, l->err, sizeof(l->err));
	close(fd);
	if (alt_fd != -1)
		close(alt_fd);
	if (l->rc != 0 && !l->quiet)
		printf("# %s: rc %d: %s\n", name, l->rc, l->err);
}

/* list_alt() without an alt file. */
static void
list_file(struct list *l, const char *name, unsigned max)
{
	list_alt(l, name, NULL, max);
}

static int
has(const struct list *l, const char *path)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->path[i], path) == 0)
			return 1;
	return 0;
}

/* 1 when glibc's .../bits/types/FILE.h (multiarch dir or not) is there. */
static int
has_system_file_h(const struct list *l)
{
	const char *tail = "/bits/types/FILE.h";
	size_t i, n;

	for (i = 0; i < l->n; i++) {
		n = strlen(l->path[i]);
		if (strncmp(l->path[i], "/usr/include/", 13) == 0 &&
		    n > strlen(tail) &&
		    strcmp(l->path[i] + n - strlen(tail), tail) == 0)
			return 1;
	}
	return 0;
}

/* 1 when no entry starts with prefix. */
static int
none_under(const struct list *l, const char *prefix)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (strncmp(l->path[i], prefix, strlen(prefix)) == 0) {
			printf("# unexpected %s\n", l->path[i]);
			return 0;
		}
	return 1;
}

/* 1 when every path is absolute, canonical and listed once. */
static int
all_canonical(const struct list *l)
{
	size_t i, j, n;
	const char *p;

	for (i = 0; i < l->n; i++) {
		p = l->path[i];
		n = strlen(p);
		if (p[0] != '/' || strstr(p, "//") != NULL ||
		    strstr(p, "/./") != NULL || strstr(p, "/../") != NULL ||
		    (n >= 2 && strcmp(p + n - 2, "/.") == 0) ||
		    (n >= 3 && strcmp(p + n - 3, "/..") == 0) ||
		    (n > 1 && p[n - 1] == '/')) {
			printf("# not canonical: %s\n", p);
			return 0;
		}
		for (j = 0; j < i; j++)
			if (strcmp(l->path[j], p) == 0) {
				printf("# listed twice: %s\n", p);
				return 0;
			}
	}
	return 1;
}

/* 1 when a and b hold the same paths, in any order. */
static int
same_set(const struct list *a, const struct list *b)
{
	size_t i;

	if (a->n != b->n)
		return 0;
	for (i = 0; i < a->n; i++)
		if (!has(b, a->path[i]))
			return 0;
	return 1;
}

static void
test_canonicalise(void)
{
	static const char *const cases[][2] = {
		{ "/a/b/c.c", "/a/b/c.c" },
		{ "/a/./b//c.c", "/a/b/c.c" },
		{ "//a///b/", "/a/b" },
		{ "/a/b/../c.c", "/a/c.c" },
		{ "/a/b/../../../../c.c", "/c.c" },
		{ "/..", "/" },
		{ "/", "/" },
		{ "/a/.", "/a" },
		{ "/a/b/..", "/a" },
		{ "/a/..b/.c/...", "/a/..b/.c/..." },
		{ "/x/./../y/./z/../w.h", "/y/w.h" },
	};
	char buf[64], what[128];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(buf, sizeof(buf), "%s", cases[i][0]);
		sources_canonicalise(buf);
		snprintf(what, sizeof(what), "canonicalise %s", cases[i][0]);
		is_str(buf, cases[i][1], what);
	}
}

static const char main_c[] = "#include <stdio.h>\n"
			     "#include \"util.h\"\n"
			     "int\n"
			     "main(void)\n"
			     "{\n"
			     "\tprintf(\"%d\\n\", util_twice(21));\n"
			     "\treturn 0;\n"
			     "}\n";
static const char util_c[] = "#include \"util.h\"\n"
			     "int\n"
			     "util_twice(int x)\n"
			     "{\n"
			     "\treturn util_add(x, x);\n"
			     "}\n";
static const char util_h[] = "static inline int\n"
			     "util_add(int a, int b)\n"
			     "{\n"
			     "\treturn a + b;\n"
			     "}\n"
			     "int util_twice(int x);\n";

static void
write_project(void)
{
	if (mkdir(at("proj"), 0755) == -1 && errno != EEXIST)
		printf("# mkdir proj: %s\n", strerror(errno));
	if (mkdir(at("proj/inc"), 0755) == -1 && errno != EEXIST)
		printf("# mkdir proj/inc: %s\n", strerror(errno));
	if (mkdir(at("proj/build"), 0755) == -1 && errno != EEXIST)
		printf("# mkdir proj/build: %s\n", strerror(errno));
	write_text("proj/main.c", main_c);
	write_text("proj/util.c", util_c);
	write_text("proj/inc/util.h", util_h);
}

/*
 * The project built from its own directory, main.c with DWARF version v
 * and util.c with u: with both 5, the line tables alone list the files;
 * with a DWARF 4 unit among them, the units are walked.
 */
static void
test_compiled(int v, int u)
{
	struct list full = { 0 }, dbg = { 0 };
	char prog[32], debug[48], what[128];

	if (u == v)
		snprintf(prog, sizeof(prog), "proj/prog%d", v);
	else
		snprintf(prog, sizeof(prog), "proj/prog%d%d", v, u);
	snprintf(debug, sizeof(debug), "%s.debug", prog);
	snprintf(what, sizeof(what),
	    "gcc -gdwarf-%d, util.c -gdwarf-%d, builds the project", v, u);
	if (!ok(shell("cd '%s/proj' && gcc -gdwarf-%d -O0 -Iinc -c util.c && "
		      "gcc -gdwarf-%d -O0 -Iinc -o %s main.c util.o",
		    tmpdir, u, v, prog + 5),
		what))
		return;
	if (u != v)
		v = v * 10 + u;

	list_file(&full, prog, 1000);
	snprintf(what, sizeof(what), "DWARF %d: listed", v);
	is_int(full.rc, 0, what);
	snprintf(what, sizeof(what), "DWARF %d: main.c, absolute", v);
	ok(has(&full, at("proj/main.c")), what);
	snprintf(what, sizeof(what), "DWARF %d: util.c, absolute", v);
	ok(has(&full, at("proj/util.c")), what);
	snprintf(what, sizeof(what), "DWARF %d: inc/util.h, absolute", v);
	ok(has(&full, at("proj/inc/util.h")), what);
	snprintf(what, sizeof(what), "DWARF %d: /usr/include/stdio.h", v);
	ok(has(&full, "/usr/include/stdio.h"), what);
	snprintf(what, sizeof(what), "DWARF %d: all canonical, no dups", v);
	ok(all_canonical(&full), what);
	snprintf(what, sizeof(what), "DWARF %d: no <built-in>", v);
	ok(none_under(&full, at("proj/<")), what);

	snprintf(what, sizeof(what), "DWARF %d: objcopy --only-keep-debug", v);
	if (ok(shell("cd '%s' && objcopy --only-keep-debug %s %s", tmpdir, prog,
		   debug),
		what)) {
		list_file(&dbg, debug, 1000);
		snprintf(what, sizeof(what), "DWARF %d: .debug listed", v);
		is_int(dbg.rc, 0, what);
		snprintf(what, sizeof(what),
		    "DWARF %d: .debug lists the same paths", v);
		ok(full.n > 0 && same_set(&full, &dbg), what);
	}
	list_free(&full);
	list_free(&dbg);
}

/* Relative source and include paths with "./" and "../" in them. */
static void
test_relative(void)
{
	struct list l = { 0 };

	if (!ok(shell("cd '%s/proj/build' && gcc -g -O0 -I.././inc -o rel "
		      "./../main.c ../build/../util.c",
		    tmpdir),
		"gcc builds from relative dotted paths"))
		return;
	list_file(&l, "proj/build/rel", 1000);
	is_int(l.rc, 0, "relative: listed");
	ok(has(&l, at("proj/main.c")), "relative: ./../main.c canonical");
	ok(has(&l, at("proj/util.c")),
	    "relative: ../build/../util.c canonical");
	ok(has(&l, at("proj/inc/util.h")),
	    "relative: .././inc/util.h canonical");
	ok(all_canonical(&l), "relative: all canonical, no dups");
	list_free(&l);

	/* comp_dir "." cannot make relative names absolute: skip them. */
	if (!ok(shell("cd '%s/proj' && gcc -g -O0 -Iinc "
		      "-fdebug-prefix-map='%s/proj'=. -o mapped main.c util.c",
		    tmpdir, tmpdir),
		"gcc builds with a relative comp_dir"))
		return;
	list_file(&l, "proj/mapped", 1000);
	is_int(l.rc, 0, "relative comp_dir: listed");
	ok(has(&l, "/usr/include/stdio.h"),
	    "relative comp_dir: absolute names kept");
	ok(none_under(&l, at("proj")),
	    "relative comp_dir: relative names skipped");
	ok(all_canonical(&l), "relative comp_dir: nothing relative");
	list_free(&l);
}

static void
test_limits(void)
{
	struct list full = { 0 }, l = { 0 };
	size_t i;

	list_file(&full, "proj/prog5", 1000);
	if (!ok(full.n >= 4, "limits: the full list has 4 paths or more"))
		return;

	list_file(&l, "proj/prog5", 2);
	is_int(l.rc, 0, "max_files 2: rc");
	is_int(l.n, 2, "max_files 2: two paths");
	for (i = 0; i < l.n; i++)
		ok(has(&full, l.path[i]), "max_files 2: from the full list");
	list_free(&l);

	list_file(&l, "proj/prog5", 0);
	is_int(l.rc, 0, "max_files 0: rc");
	is_int(l.n, 0, "max_files 0: no calls");

	list_file(&l, "proj/prog5", (unsigned)full.n);
	is_int(l.n, full.n, "max_files = count: all of them");
	list_free(&l);

	l.stop_after = 1;
	list_file(&l, "proj/prog5", 1000);
	is_int(l.rc, 0, "cb stops: rc");
	is_int(l.n, 1, "cb stops: after one call");
	list_free(&l);
	list_free(&full);
}

/*
 * Compressed debug sections, as distributions ship them (SHF_COMPRESSED,
 * and the older .zdebug_ names): the same paths as the plain file.  A
 * damaged compressed stream is refused before any call.
 */
static void
test_compressed(void)
{
	static const char *const how[] = { "zlib-gabi", "zlib-gnu" };
	struct list full = { 0 }, l = { 0 };
	char what[128];
	size_t i;

	list_file(&full, "proj/prog5.debug", 1000);
	for (i = 0; i < sizeof(how) / sizeof(how[0]); i++) {
		snprintf(what, sizeof(what),
		    "objcopy --compress-debug-sections=%s", how[i]);
		if (!ok(shell("cd '%s' && objcopy --compress-debug-sections=%s "
			      "proj/prog5.debug z.debug",
			    tmpdir, how[i]),
			what))
			continue;
		list_file(&l, "z.debug", 1000);
		snprintf(what, sizeof(what), "%s: the same paths", how[i]);
		ok(l.rc == 0 && full.n > 0 && same_set(&full, &l), what);
		list_free(&l);
	}

	/* Zeros over the end of the zlib stream: its checksum fails. */
	if (ok(shell("cd '%s' && objcopy --compress-debug-sections=zlib-gabi "
		     "proj/prog5.debug zbad.debug && set -- $(readelf -SW "
		     "zbad.debug | sed -n 's/^ *\\[ *[0-9]*\\] *//p' | awk "
		     "'$1 == \".debug_line\" && $7 ~ /C/ { print $4, $5 }') && "
		     "[ -n \"$2\" ] && dd if=/dev/zero of=zbad.debug bs=1 "
		     "seek=$((0x$1 + 0x$2 - 8)) count=8 conv=notrunc "
		     "status=none",
		   tmpdir),
		"zeros over the end of the compressed .debug_line")) {
		l.quiet = 1;
		list_file(&l, "zbad.debug", 1000);
		ok(l.rc == -1 && l.n == 0 &&
			strstr(l.err, "decompress") != NULL,
		    "damaged compressed section: -1, no calls");
		list_free(&l);
	}
	list_free(&full);
}

/* Two programs sharing enough types for dwz to make a multifile. */
static const char shared_h[] = "#include <stdio.h>\n"
			       "struct point {\n"
			       "\tint x, y;\n"
			       "\tlong tag;\n"
			       "\tconst char *name;\n"
			       "};\n"
			       "struct shape {\n"
			       "\tstruct point a, b;\n"
			       "\tdouble area;\n"
			       "\tint kind;\n"
			       "\tstruct shape *next;\n"
			       "\tFILE *out;\n"
			       "};\n"
			       "static inline int\n"
			       "shape_width(const struct shape *s)\n"
			       "{\n"
			       "\treturn s->b.x - s->a.x;\n"
			       "}\n";
static const char p1_c[] = "#include \"shared.h\"\n"
			   "int\n"
			   "main(void)\n"
			   "{\n"
			   "\tstruct shape s = { { 1, 2 }, { 4, 5 } };\n"
			   "\treturn shape_width(&s) - 3;\n"
			   "}\n";
static const char p2_c[] = "#include \"shared.h\"\n"
			   "int\n"
			   "main(void)\n"
			   "{\n"
			   "\tstruct shape s = { { 1, 2 }, { 7, 5 } };\n"
			   "\treturn shape_width(&s) - 6;\n"
			   "}\n";

/*
 * dwz -m moves shared DIEs and strings to the alt file.  The line tables
 * stay, so a file keeps every absolute name it had; relative names need
 * the comp_dir.  gcc 12's DWARF 5 line table repeats it as directory 0 (in
 * .debug_line_str, which dwz leaves alone), so nothing is lost; in DWARF 4
 * DW_AT_comp_dir alone carries it, dwz moves it to the alt file when both
 * programs share it, and without the alt file the relative names (the .c
 * files, shared.h) are skipped, which sources_list says.  With the alt
 * file, every name comes back.
 */
static void
test_dwz(int v)
{
	struct list before = { 0 }, want = { 0 }, l = { 0 }, alt = { 0 };
	char what[128], dir[PATH_MAX], p1c[PATH_MAX], p2c[PATH_MAX];
	size_t i;

	if (mkdir(at("dwz"), 0755) == -1 && errno != EEXIST)
		printf("# mkdir dwz: %s\n", strerror(errno));
	write_text("dwz/shared.h", shared_h);
	write_text("dwz/p1.c", p1_c);
	write_text("dwz/p2.c", p2_c);
	snprintf(dir, sizeof(dir), "%s/", at("dwz"));
	snprintf(p1c, sizeof(p1c), "%s", at("dwz/p1.c"));
	snprintf(p2c, sizeof(p2c), "%s", at("dwz/p2.c"));
	snprintf(what, sizeof(what), "DWARF %d: dwz -m makes a multifile", v);
	if (!ok(shell("cd '%s/dwz' && rm -f p1 p2 alt.debug && "
		      "gcc -gdwarf-%d -O0 -o p1 p1.c && "
		      "gcc -gdwarf-%d -O0 -o p2 p2.c && "
		      "cp p1 p1.orig && dwz -m alt.debug p1 p2 && "
		      "readelf -S p1 | grep -q gnu_debugaltlink",
		    tmpdir, v, v),
		what))
		return;

	list_file(&before, "dwz/p1.orig", 1000);
	snprintf(what, sizeof(what), "DWARF %d: before dwz, p1 lists p1.c", v);
	ok(has(&before, p1c) && has(&before, at("dwz/shared.h")), what);
	for (i = 0; i < before.n; i++)
		if (v >= 5 || strncmp(before.path[i], dir, strlen(dir)) != 0)
			want.path[want.n++] = before.path[i];
	snprintf(what, sizeof(what), "DWARF %d: some names are absolute", v);
	ok(has_system_file_h(&want), what);

	list_file(&l, "dwz/p1", 1000);
	snprintf(what, sizeof(what), "DWARF %d: dwz'ed p1 listed", v);
	is_int(l.rc, 0, what);
	snprintf(what, sizeof(what),
	    v >= 5 ? "DWARF %d: dwz'ed p1 lists all it did before"
		   : "DWARF %d: dwz'ed p1 lists all its absolute names",
	    v);
	ok(same_set(&want, &l), what);
	snprintf(what, sizeof(what), "DWARF %d: dwz'ed p1 all canonical", v);
	ok(all_canonical(&l), what);
	snprintf(what, sizeof(what),
	    v < 5 ? "DWARF %d: without the alt file, names are missing"
		  : "DWARF %d: without the alt file, nothing is missing",
	    v);
	ok(l.alt_missing == (v < 5), what);
	list_free(&l);

	list_alt(&l, "dwz/p1", "dwz/alt.debug", 1000);
	snprintf(what, sizeof(what),
	    "DWARF %d: with the alt file, dwz'ed p1 lists all it did before",
	    v);
	ok(l.rc == 0 && same_set(&before, &l) && l.alt_missing == 0, what);
	list_free(&l);
	l.quiet = 1;
	list_alt(&l, "dwz/p1", "dwz/p2", 1000);
	snprintf(what, sizeof(what),
	    "DWARF %d: an alt file of another build-id is refused", v);
	ok(l.rc == -1 && strstr(l.err, "alt file") != NULL && l.n == 0, what);
	l.quiet = 0;

	list_file(&l, "dwz/p2", 1000);
	snprintf(what, sizeof(what), "DWARF %d: dwz'ed p2 listed", v);
	ok(l.rc == 0 && has_system_file_h(&l) && !has(&l, p1c) &&
		(v < 5 || has(&l, p2c)),
	    what);
	list_free(&l);

	/* The multifile holds partial units; it must read, not fail. */
	list_file(&alt, "dwz/alt.debug", 1000);
	snprintf(what, sizeof(what), "DWARF %d: the multifile reads", v);
	ok(alt.rc == 0 && all_canonical(&alt), what);
	list_free(&alt);
	list_free(&before);
}

/*
 * An alt link naming a FIFO: libdw left to itself would open it and block
 * for a writer when it first needs the alt file, here for the DWARF 4
 * DW_AT_comp_dir dwz moved there.  The alarm set in main() fails the test
 * if it does.  Runs on the p1 test_dwz(4) left.
 */
static void
test_alt_fifo(void)
{
	char link[PATH_MAX + 32];
	struct list l = { 0 };
	size_t n;
	FILE *fp;

	if (mkfifo(at("dwz/fifo"), 0600) == -1) {
		ok(0, "mkfifo");
		return;
	}
	n = (size_t)snprintf(link, sizeof(link), "%s", at("dwz/fifo")) + 1;
	memset(link + n, 0xab, 20);
	if ((fp = fopen(at("dwz/link"), "w")) == NULL ||
	    fwrite(link, 1, n + 20, fp) != n + 20 || fclose(fp) == EOF) {
		ok(0, "write the alt link");
		return;
	}
	if (!ok(shell("cd '%s/dwz' && objcopy --remove-section "
		      ".gnu_debugaltlink --add-section .gnu_debugaltlink=link "
		      "p1 p1.fifo",
		    tmpdir),
		"objcopy points the alt link at a FIFO"))
		return;
	list_file(&l, "dwz/p1.fifo", 1000);
	is_int(l.rc, 0, "alt link to a FIFO: listed without opening it");
	ok(has_system_file_h(&l), "alt link to a FIFO: lists FILE.h");
	list_free(&l);
}

static void
test_damaged(void)
{
	struct list full = { 0 }, l = { 0 };
	size_t i, sub;

	list_file(&full, "proj/prog5.debug", 1000);

	/* .debug_line replaced by junk: the header's length lies. */
	write_text("junk", "\xff\xff\xff\x7f\x05\x00\x08\x00junk junk junk");
	if (ok(shell("cd '%s' && objcopy --update-section .debug_line=junk "
		     "proj/prog5.debug cutline.debug",
		   tmpdir),
		"objcopy replaces .debug_line with junk")) {
		list_file(&l, "cutline.debug", 1000);
		is_int(l.rc, -1, "junk .debug_line: -1");
		ok(l.err[0] != '\0', "junk .debug_line: says why");
		ok(has(&l, at("proj/main.c")) && has(&l, at("proj/util.c")),
		    "junk .debug_line: the units' names still listed");
		for (i = 0, sub = 1; i < l.n; i++)
			sub &= has(&full, l.path[i]);
		ok(sub, "junk .debug_line: nothing made up");
		list_free(&l);
	}

	/* The first half of .debug_line: the second unit's table is cut. */
	if (ok(shell("cd '%s' && objcopy --dump-section .debug_line=line "
		     "proj/prog5.debug && head -c $(($(stat -c %%s line) / 2)) "
		     "line > halfline && objcopy --update-section "
		     ".debug_line=halfline proj/prog5.debug halfline.debug",
		   tmpdir),
		"objcopy halves .debug_line")) {
		list_file(&l, "halfline.debug", 1000);
		is_int(l.rc, -1, "half .debug_line: -1");
		for (i = 0, sub = 1; i < l.n; i++)
			sub &= has(&full, l.path[i]);
		ok(l.n > 0 && sub, "half .debug_line: a partial list");
		list_free(&l);
	}

	if (ok(shell("cd '%s' && objcopy --dump-section .debug_info=info "
		     "proj/prog5.debug && head -c $(($(stat -c %%s info) / 2)) "
		     "info > halfinfo && objcopy --update-section "
		     ".debug_info=halfinfo proj/prog5.debug halfinfo.debug",
		   tmpdir),
		"objcopy halves .debug_info")) {
		list_file(&l, "halfinfo.debug", 1000);
		ok(l.rc == -1 || l.rc == 0, "half .debug_info: answers");
		for (i = 0, sub = 1; i < l.n; i++)
			sub &= has(&full, l.path[i]);
		ok(sub, "half .debug_info: nothing made up");
		list_free(&l);
	}

	/* libdw 0.188 would strlen past an unterminated last string. */
	if (ok(shell("cd '%s' && objcopy --dump-section .debug_str=str "
		     "proj/prog5.debug && printf abc >> str && objcopy "
		     "--update-section .debug_str=str proj/prog5.debug "
		     "str.debug",
		   tmpdir),
		"objcopy leaves the last string of .debug_str open")) {
		list_file(&l, "str.debug", 1000);
		is_int(l.rc, -1, "unterminated .debug_str: -1");
		is_int(l.n, 0, "unterminated .debug_str: no calls");
		list_free(&l);
	}

	/* The file itself cut: sections past the end are refused. */
	if (ok(shell("cd '%s' && head -c 3000 proj/prog5.debug > cut.debug",
		   tmpdir),
		"cut the .debug file")) {
		list_file(&l, "cut.debug", 1000);
		is_int(l.rc, -1, "cut file: -1");
		is_int(l.n, 0, "cut file: no calls");
		list_free(&l);
	}

	write_text("text", "not an ELF file at all\n");
	list_file(&l, "text", 1000);
	is_int(l.rc, -1, "not ELF: -1");
	is_int(l.n, 0, "not ELF: no calls");

	if (ok(shell("cd '%s' && strip -o stripped proj/prog5", tmpdir),
		"strip")) {
		list_file(&l, "stripped", 1000);
		is_int(l.rc, 0, "no .debug_info: 0");
		is_int(l.n, 0, "no .debug_info: no calls");
	}
	list_free(&full);
}

/*
 * Flip bytes in the file with a fixed seed; the reader must answer without
 * crashing (ASan/UBSan watch) and never list more than the file could.
 */
static void
test_fuzz(void)
{
	uint8_t *orig, *buf;
	struct list l = { 0 };
	unsigned seed = 12345, round, k;
	size_t len, bad = 0;
	FILE *fp;

	if ((orig = slurp(at("proj/prog5.debug"), &len)) == NULL) {
		ok(0, "fuzz: read the .debug file");
		return;
	}
	buf = malloc(len);
	l.quiet = 1;
	for (round = 0; buf != NULL && round < 300; round++) {
		memcpy(buf, orig, len);
		for (k = 0; k < 1 + round % 8; k++) {
			seed = seed * 1103515245u + 12345u;
			buf[(seed >> 8) % len] ^= (uint8_t)(1u << (seed & 7));
		}
		if ((fp = fopen(at("fuzz.debug"), "w")) == NULL ||
		    fwrite(buf, 1, len, fp) != len || fclose(fp) == EOF)
			break;
		list_file(&l, "fuzz.debug", 1000);
		if (l.rc != 0 && l.rc != -1)
			bad++;
		list_free(&l);
	}
	ok(buf != NULL && round == 300, "fuzz: 300 rounds ran");
	is_int(bad, 0, "fuzz: every answer 0 or -1");
	free(buf);
	free(orig);
}

int
main(void)
{
	char real[PATH_MAX];

	alarm(600);
	if (!ok(testdir_make("test_sources") == 0,
		"make a temporary directory"))
		return tap_done();
	if (realpath(tmpdir, real) != NULL)
		snprintf(tmpdir, sizeof(tmpdir), "%s", real);
	if (!ok(elf_init() == 0, "elf_init"))
		return tap_done();

	test_canonicalise();
	write_project();
	test_compiled(4, 4);
	test_compiled(5, 5);
	test_compiled(5, 4);
	test_relative();
	test_limits();
	test_compressed();
	test_dwz(5);
	test_dwz(4);
	test_alt_fifo();
	test_damaged();
	test_fuzz();

	testdir_remove();
	return tap_done();
}
