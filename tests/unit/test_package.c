/*
 * tests/unit/test_package.c: indexer/package.c on real packages and on a
 * hostile corpus.
 *
 * Real packages are built at run time from two small programs compiled with
 * a build-id, split with objcopy and strip, with a dwz multifile over their
 * .debug files, laid out the way distributions do and packed by dpkg-deb
 * (xz, gzip, zstd, none), rpmbuild (xz, zstd, gzip payloads) and tar (Arch
 * .pkg.tar.zst and .xz).  A missing tool is a failure, not a skip.  The
 * hostile corpus is cut from those packages or written with libarchive's
 * writer, which can name members anything.  Everything lives in one
 * temporary directory, removed at the end.
 */
#include "indexer/package.h"

#include <sys/stat.h>
#include <sys/types.h>

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "indexer/sources.h"
#include "tests/shell.h"
#include "tests/tap.h"
/* The build passes -Wno-unused-parameter; a bare -Wextra build does not. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "tests/testdir.h"
#pragma GCC diagnostic pop

#define ERRLEN 256
#define MEMBERS_MAX 64

static const struct pkg_limits limits = {
	.max_member = 256u << 20,
	.max_total = 1024u << 20,
	.max_members = 10000,
};

static int
write_file(const char *path, const void *buf, size_t len)
{
	FILE *fp = fopen(path, "w");
	int rc;

	if (fp == NULL)
		return 0;
	rc = fwrite(buf, 1, len, fp) == len;
	if (fclose(fp) == EOF)
		rc = 0;
	return rc;
}

/* 1 when files a and b hold the same bytes. */
static int
same_bytes(const char *a, const char *b)
{
	unsigned char *x, *y;
	size_t xl = 0, yl = 0;
	int same;

	x = slurp(a, &xl);
	y = slurp(b, &yl);
	same = x != NULL && y != NULL && xl == yl && memcmp(x, y, xl) == 0;
	free(x);
	free(y);
	return same;
}

static int
info_of(const char *path, struct elf_info *info)
{
	char err[ERRLEN];
	int fd, rc;

	memset(info, 0, sizeof(*info));
	if ((fd = open(path, O_RDONLY)) == -1)
		return -1;
	rc = elf_read_info(fd, info, err, sizeof(err));
	close(fd);
	return rc;
}

/* What a scan reported, copied out of the callback. */
struct seen {
	char path[PATH_MAX];
	char target[256];
	enum pkg_member_type type;
	uint64_t size;
	int64_t mtime;
	struct elf_info elf;
	int is_dwz;
};

struct seen_list {
	struct seen m[MEMBERS_MAX];
	size_t n;
	size_t calls;
	size_t stop_after; /* 0: never stop */
};

static int
collect_cb(const struct pkg_member *m, void *arg)
{
	struct seen_list *l = arg;
	struct seen *s;

	l->calls++;
	if (l->n < MEMBERS_MAX) {
		s = &l->m[l->n++];
		snprintf(s->path, sizeof(s->path), "%s", m->path);
		snprintf(s->target, sizeof(s->target), "%s",
		    m->link_target != NULL ? m->link_target : "");
		s->type = m->type;
		s->size = m->size;
		s->mtime = m->mtime;
		s->elf = m->elf;
		s->is_dwz = m->is_dwz;
	}
	return l->stop_after != 0 && l->calls >= l->stop_after ? -1 : 0;
}

static const struct seen *
find_seen(const struct seen_list *l, const char *path)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->m[i].path, path) == 0)
			return &l->m[i];
	return NULL;
}

static void
test_names(void)
{
	static const struct {
		const char *in, *out;
	} good[] = {
		{ "./usr/bin/x", "/usr/bin/x" },
		{ "usr/bin/x", "/usr/bin/x" },
		{ "/usr/bin/x", "/usr/bin/x" },
		{ "./usr//lib/./debug/", "/usr/lib/debug" },
		{ "./", "/" },
		{ ".", "/" },
		{ "//etc/x", "/etc/x" },
		{ "a/.../b", "/a/.../b" },
		{ "a/..b/c", "/a/..b/c" },
	};
	static const char *bad[] = { "", "../escape", "./a/../../b", "usr/..",
		"/..", NULL };
	static const struct {
		const char *link, *target, *out;
	} links[] = {
		{ "/usr/lib/debug/.build-id/ab/cdef", "../../../../bin/prog",
		    "/usr/bin/prog" },
		{ "/usr/lib/x", "y", "/usr/lib/y" },
		{ "/usr/lib/x", "./y/../z", "/usr/lib/z" },
		{ "/usr/lib/x", "/opt/y", "/opt/y" },
		{ "/x", "y", "/y" },
		{ "/usr/lib/x", "../..", "/" },
	};
	static const struct {
		const char *link, *target;
	} escapes[] = {
		{ "/usr/lib/x", "../../../etc/passwd" },
		{ "/x", "../y" },
		{ "/usr/x", "/../y" },
		{ "/usr/x", "" },
	};
	char out[PATH_MAX], small[8], what[256];
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(what, sizeof(what), "member name \"%s\"", good[i].in);
		out[0] = '\0';
		is_int(pkg_member_path(good[i].in, out, sizeof(out)), 0, what);
		is_str(out, good[i].out, what);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(what, sizeof(what), "member name \"%s\" refused",
		    bad[i] != NULL ? bad[i] : "(null)");
		is_int(pkg_member_path(bad[i], out, sizeof(out)), -1, what);
	}
	is_int(pkg_member_path("abcdefgh", small, sizeof(small)), -1,
	    "a name that does not fit is refused");
	is_int(pkg_member_path("abcdef", small, sizeof(small)), 0,
	    "a name that just fits is taken");
	is_str(small, "/abcdef", "and written whole");

	for (i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		snprintf(what, sizeof(what), "link %s -> %s", links[i].link,
		    links[i].target);
		out[0] = '\0';
		is_int(pkg_link_resolve(links[i].link, links[i].target, out,
			   sizeof(out)),
		    0, what);
		is_str(out, links[i].out, what);
	}
	for (i = 0; i < sizeof(escapes) / sizeof(escapes[0]); i++) {
		snprintf(what, sizeof(what), "link %s -> \"%s\" refused",
		    escapes[i].link, escapes[i].target);
		is_int(pkg_link_resolve(escapes[i].link, escapes[i].target, out,
			   sizeof(out)),
		    -1, what);
	}
}

/* Two programs sharing types, so that dwz makes a multifile. */
static const char fix_h[] = "struct rec {\n"
			    "\tint a;\n"
			    "\tlong b;\n"
			    "\tconst char *c;\n"
			    "\tdouble d[4];\n"
			    "\tstruct rec *next;\n"
			    "};\n"
			    "struct tab {\n"
			    "\tstruct rec *head;\n"
			    "\tunsigned n;\n"
			    "\tchar name[16];\n"
			    "};\n";
static const char one_c[] = "#include \"fix.h\"\n"
			    "int\n"
			    "main(void)\n"
			    "{\n"
			    "\tstruct tab t = { 0 };\n"
			    "\tstruct rec r = { 1 };\n"
			    "\tt.head = &r;\n"
			    "\treturn t.head->a - 1;\n"
			    "}\n";
static const char two_c[] = "#include \"fix.h\"\n"
			    "int\n"
			    "main(void)\n"
			    "{\n"
			    "\tstruct tab t = { 0 };\n"
			    "\tstruct rec r = { 2 };\n"
			    "\tt.head = &r;\n"
			    "\tt.n = 3;\n"
			    "\treturn t.head->a + (int)t.n - 5;\n"
			    "}\n";
static const char readme[] = "fixture package\n";
static const char control[] = "Package: fixture\n"
			      "Version: 1.0\n"
			      "Architecture: amd64\n"
			      "Maintainer: Test <test@example.org>\n"
			      "Description: test fixture\n";
static const char spec[] = "%global debug_package %{nil}\n"
			   "%global __os_install_post %{nil}\n"
			   "%define _build_id_links none\n"
			   "Name: fixture\n"
			   "Version: 1.0\n"
			   "Release: 1\n"
			   "Summary: test fixture\n"
			   "License: MIT\n"
			   "AutoReqProv: no\n"
			   "%description\n"
			   "test fixture\n"
			   "%install\n"
			   "cp -a %{fixroot}/. %{buildroot}/\n"
			   "%files\n"
			   "/usr/bin/one\n"
			   "/usr/bin/two\n"
			   "/usr/bin/two-again\n"
			   "/usr/lib/debug\n"
			   "/usr/share/doc/fixture\n";

/* What the fixtures hold, from the files before packing. */
static struct elf_info one_bin, two_bin, one_dbg, two_dbg, alt_dbg;
static char one_hex[BUILDID_HEX_MAX], two_hex[BUILDID_HEX_MAX];
static char one_dbgpath[PATH_MAX], two_dbgpath[PATH_MAX];
static char one_link[PATH_MAX];
#define DWZ_PATH "/usr/lib/debug/.dwz/fixture.debug"

/* The .build-id path of id, with suffix (".debug" or ""). */
static void
buildid_path(const char *hex, const char *suffix, char *out, size_t outlen)
{
	snprintf(out, outlen, "/usr/lib/debug/.build-id/%.2s/%s%s", hex,
	    hex + 2, suffix);
}

static int
make_fixtures(void)
{
	struct buildid rid;

	if (!write_file(at("fix.h"), fix_h, strlen(fix_h)) ||
	    !write_file(at("one.c"), one_c, strlen(one_c)) ||
	    !write_file(at("two.c"), two_c, strlen(two_c)))
		return 0;
	if (!ok(shell("cd '%s' && gcc -g -O0 -Wl,--build-id=sha1 -o one one.c "
		      "&& gcc -g -O0 -Wl,--build-id=sha1 -o two two.c",
		    tmpdir),
		"gcc builds two programs with build-ids"))
		return 0;
	if (!ok(shell("cd '%s' && objcopy --only-keep-debug one one.debug && "
		      "objcopy --only-keep-debug two two.debug && "
		      "strip -o one.bin one && strip -o two.bin two",
		    tmpdir),
		"objcopy --only-keep-debug and strip split them"))
		return 0;
	if (!ok(shell("cd '%s' && dwz -m alt.debug -M " DWZ_PATH
		      " one.debug two.debug",
		    tmpdir),
		"dwz -m makes a multifile of the two .debug files"))
		return 0;

	is_int(info_of(at("one.bin"), &one_bin), 0, "read one.bin");
	is_int(info_of(at("two.bin"), &two_bin), 0, "read two.bin");
	is_int(info_of(at("one.debug"), &one_dbg), 0, "read one.debug");
	is_int(info_of(at("two.debug"), &two_dbg), 0, "read two.debug");
	is_int(info_of(at("alt.debug"), &alt_dbg), 0, "read alt.debug");
	ok(one_bin.id.len == 20 && buildid_equal(&one_bin.id, &one_dbg.id),
	    "one: sha1 build-id shared by binary and .debug");
	ok(!buildid_equal(&one_bin.id, &two_bin.id), "the build-ids differ");
	ok(readelf_buildid(at("one.bin"), &rid) == 0 &&
		buildid_equal(&rid, &one_bin.id),
	    "one's build-id is what readelf says");
	ok(alt_dbg.id.len > 0 && buildid_equal(&one_dbg.alt_id, &alt_dbg.id),
	    "one.debug links the multifile");
	is_str(one_dbg.alt_path, DWZ_PATH, "the alt path is the .dwz path");
	if (one_bin.id.len == 0 || two_bin.id.len == 0)
		return 0;
	buildid_format(&one_bin.id, one_hex);
	buildid_format(&two_bin.id, two_hex);
	buildid_path(one_hex, ".debug", one_dbgpath, sizeof(one_dbgpath));
	buildid_path(two_hex, ".debug", two_dbgpath, sizeof(two_dbgpath));
	buildid_path(one_hex, "", one_link, sizeof(one_link));

	/* The tree, as Fedora lays it out (less the usr/lib/debug/usr part). */
	if (!ok(shell("cd '%s' && mkdir -p root/usr/bin root/usr/share/doc/"
		      "fixture root/usr/lib/debug/.dwz root/usr/lib/debug/"
		      ".build-id/%.2s root/usr/lib/debug/.build-id/%.2s && "
		      "cp one.bin root/usr/bin/one && cp two.bin "
		      "root/usr/bin/two && ln root/usr/bin/two "
		      "root/usr/bin/two-again && cp one.debug root%s && "
		      "cp two.debug root%s && cp alt.debug root%s && "
		      "ln -s ../../../../bin/one root%s && "
		      "printf '%%s' '%s' >root/usr/share/doc/fixture/README && "
		      "cp -a root debroot && mkdir debroot/DEBIAN && "
		      "printf '%%s' '%s' >debroot/DEBIAN/control && "
		      "chmod -R go-w root debroot",
		    tmpdir, one_hex, two_hex, one_dbgpath, two_dbgpath,
		    DWZ_PATH, one_link, readme, control),
		"lay out the package tree"))
		return 0;
	return 1;
}

/* Extract member from pkg into out.bin; the return of pkg_extract. */
static int
extract_to(const char *pkg, const char *member, const struct pkg_limits *lim,
    char *err)
{
	int fd, rc;

	if ((fd = open(at("out.bin"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC,
		 0600)) == -1)
		return -2;
	/* Old bytes that extraction must replace. */
	if (write(fd, "stale stale stale", 17) != 17) {
		close(fd);
		return -2;
	}
	err[0] = '\0';
	rc = pkg_extract(pkg, member, fd, lim, err, ERRLEN);
	close(fd);
	if (rc == -1)
		printf("# extract %s: %s\n", member, err);
	return rc;
}

/* 1 when the directory holds nothing but "." and "..". */
static int
dir_is_empty(const char *path)
{
	struct dirent *d;
	DIR *dp;
	int n = 0;

	if ((dp = opendir(path)) == NULL)
		return 0;
	while ((d = readdir(dp)) != NULL)
		if (strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0)
			n++;
	closedir(dp);
	return n == 0;
}

/* Everything a real package must show, whatever its format. */
static void
check_package(const char *label, const char *file)
{
	static struct seen_list l;
	const struct seen *s, *s2;
	char err[ERRLEN], what[256], pkg[PATH_MAX], scratch[PATH_MAX];
	int rc;

	/* at() reuses its buffers: keep copies. */
	snprintf(pkg, sizeof(pkg), "%s", at(file));
	snprintf(scratch, sizeof(scratch), "%s", at("scratch"));

#define WHAT(x) (snprintf(what, sizeof(what), "%s: %s", label, (x)), what)
	memset(&l, 0, sizeof(l));
	err[0] = '\0';
	rc = pkg_scan(pkg, scratch, &limits, collect_cb, &l, err, ERRLEN);
	is_int(rc, 0, WHAT("pkg_scan reads it"));
	if (rc != 0)
		printf("# %s\n", err);
	ok(dir_is_empty(scratch), WHAT("nothing is left in tmpdir"));

	s = find_seen(&l, "/usr/bin/one");
	ok(s != NULL && s->type == PKG_ELF, WHAT("/usr/bin/one is ELF"));
	ok(s != NULL && buildid_equal(&s->elf.id, &one_bin.id),
	    WHAT("/usr/bin/one has its build-id"));
	ok(s != NULL && s->elf.kinds == ELF_KIND_EXECUTABLE,
	    WHAT("/usr/bin/one is an executable only"));
	ok(s != NULL && !s->is_dwz, WHAT("/usr/bin/one is not dwz"));
	ok(s != NULL && s->mtime > 1000000000,
	    WHAT("/usr/bin/one has an mtime"));
	/*
	 * two has a second name.  tar gives the data with the first name,
	 * cpio with the last: one of the two must be ELF, the other a link
	 * (tar) or empty (cpio).
	 */
	s = find_seen(&l, "/usr/bin/two");
	s2 = find_seen(&l, "/usr/bin/two-again");
	ok(s != NULL && s2 != NULL, WHAT("both names of two are reported"));
	if (s != NULL && s->type != PKG_ELF)
		s = s2;
	ok(s != NULL && s->type == PKG_ELF &&
		buildid_equal(&s->elf.id, &two_bin.id),
	    WHAT("a name of two is ELF with its build-id"));
	s2 = find_seen(&l, "/usr/bin/two-again");
	ok(s2 != NULL &&
		(s2->type == PKG_ELF ||
		    (s2->type == PKG_SYMLINK &&
			strcmp(s2->target, "/usr/bin/two") == 0)),
	    WHAT("the second name is ELF or links to the first"));

	s = find_seen(&l, one_dbgpath);
	ok(s != NULL && s->type == PKG_ELF &&
		buildid_equal(&s->elf.id, &one_bin.id),
	    WHAT("one's .debug is ELF with one's build-id"));
	ok(s != NULL && s->elf.kinds == ELF_KIND_DEBUGINFO,
	    WHAT("one's .debug is debuginfo only"));
	ok(s != NULL && buildid_equal(&s->elf.alt_id, &alt_dbg.id) &&
		strcmp(s->elf.alt_path, DWZ_PATH) == 0,
	    WHAT("one's .debug links the dwz file"));
	s = find_seen(&l, two_dbgpath);
	ok(s != NULL && s->type == PKG_ELF &&
		buildid_equal(&s->elf.id, &two_bin.id) &&
		s->elf.kinds == ELF_KIND_DEBUGINFO,
	    WHAT("two's .debug is debuginfo with two's build-id"));

	s = find_seen(&l, DWZ_PATH);
	ok(s != NULL && s->type == PKG_ELF && s->is_dwz,
	    WHAT("the .dwz file is ELF and is_dwz"));
	ok(s != NULL && buildid_equal(&s->elf.id, &alt_dbg.id),
	    WHAT("the .dwz file has the multifile's build-id"));

	s = find_seen(&l, one_link);
	ok(s != NULL && s->type == PKG_SYMLINK, WHAT("the .build-id link"));
	is_str(s != NULL ? s->target : NULL, "../../../../bin/one",
	    WHAT("the link target as stored"));

	s = find_seen(&l, "/usr/share/doc/fixture/README");
	ok(s != NULL && s->type == PKG_OTHER, WHAT("README is other"));
	is_int(s != NULL ? s->size : 0, strlen(readme),
	    WHAT("README has its size"));
	s = find_seen(&l, "/usr/bin");
	ok(s == NULL || s->type == PKG_OTHER, WHAT("a directory is other"));

	is_int(extract_to(pkg, "/usr/bin/one", &limits, err), 0,
	    WHAT("extract /usr/bin/one"));
	ok(same_bytes(at("out.bin"), at("one.bin")),
	    WHAT("/usr/bin/one is byte-identical"));
	is_int(extract_to(pkg, "./usr/bin/two", &limits, err), 0,
	    WHAT("extract ./usr/bin/two"));
	ok(same_bytes(at("out.bin"), at("two.bin")),
	    WHAT("/usr/bin/two is byte-identical"));
	is_int(extract_to(pkg, "/usr/bin/two-again", &limits, err), 0,
	    WHAT("extract /usr/bin/two-again"));
	ok(same_bytes(at("out.bin"), at("two.bin")),
	    WHAT("the hard link's data is two's"));
	is_int(extract_to(pkg, one_dbgpath, &limits, err), 0,
	    WHAT("extract one's .debug"));
	ok(same_bytes(at("out.bin"), at("one.debug")),
	    WHAT("one's .debug is byte-identical"));
	is_int(extract_to(pkg, DWZ_PATH, &limits, err), 0,
	    WHAT("extract the dwz file"));
	ok(same_bytes(at("out.bin"), at("alt.debug")),
	    WHAT("the dwz file is byte-identical"));
	is_int(extract_to(pkg, one_link, &limits, err), 0,
	    WHAT("extract through the .build-id link"));
	ok(same_bytes(at("out.bin"), at("one.bin")),
	    WHAT("the link gives /usr/bin/one"));
	is_int(extract_to(pkg, "/usr/bin/three", &limits, err), ELF_NOTFOUND,
	    WHAT("a missing member is not found"));
	is_int(extract_to(pkg, "/usr/lib/debug", &limits, err), -1,
	    WHAT("a directory cannot be extracted"));
	ok(dir_is_empty(scratch), WHAT("tmpdir still empty"));
#undef WHAT
}

static void
test_deb(void)
{
	static const char *z[] = { "xz", "gzip", "zstd", "none" };
	char name[64], label[64];
	size_t i;

	for (i = 0; i < sizeof(z) / sizeof(z[0]); i++) {
		snprintf(name, sizeof(name), "fixture-%s.deb", z[i]);
		snprintf(label, sizeof(label), "deb -Z%s", z[i]);
		if (!ok(shell("cd '%s' && dpkg-deb --root-owner-group -Z%s "
			      "--build debroot %s >/dev/null",
			    tmpdir, z[i], name),
			label))
			continue;
		check_package(label, name);
	}
	if (ok(shell("cd '%s' && cp fixture-xz.deb fixture.ddeb", tmpdir),
		"make a .ddeb"))
		check_package("ddeb", "fixture.ddeb");
}

static void
test_arch(void)
{
	if (ok(shell("cd '%s' && tar --zstd -cf fixture.pkg.tar.zst -C root .",
		   tmpdir),
		"tar --zstd makes an Arch package"))
		check_package("pkg.tar.zst", "fixture.pkg.tar.zst");
	if (ok(shell("cd '%s' && tar -cJf fixture.pkg.tar.xz -C root .",
		   tmpdir),
		"tar -cJ makes an Arch package"))
		check_package("pkg.tar.xz", "fixture.pkg.tar.xz");
}

/* A watcher that wants two sides and tells what it was offered. */
struct scan_watcher {
	struct pkg_side side[2];
	const char *name[2];
	unsigned offered; /* members offered as sides */
	unsigned late; /* of them, offered once both sides were out */
	uint64_t last_end; /* the member's progress */
	int backwards; /* progress went down */
};

static void
watch_progress(uint64_t end, void *arg)
{
	struct scan_watcher *w = arg;

	if (end < w->last_end)
		w->backwards = 1;
	w->last_end = end;
}

static struct pkg_side *
watch_side(const char *member, uint64_t size, void *arg)
{
	struct scan_watcher *w = arg;
	size_t i;

	w->offered++;
	if (w->side[0].done != 0 && w->side[1].done != 0)
		w->late++;
	for (i = 0; i < 2; i++)
		if (strcmp(member, w->name[i]) == 0 && w->side[i].done == 0)
			return &w->side[i];
	return NULL;
}

static int
watch_more(void *arg)
{
	struct scan_watcher *w = arg;

	return w->side[0].done == 0 || w->side[1].done == 0;
}

/* The size of the file at path, or -1. */
static long long
file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* Open path for a side, emptied. */
static int
side_file(const char *name)
{
	return open(at(name), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
}

/*
 * pkg_extract_watch: the sides a watcher wants come out of the pass that
 * extracts the member, or of a pass for the sides alone, which stops once
 * the watcher wants no more.
 */
static void
test_watch(void)
{
	struct pkg_watch pw = { watch_progress, watch_side, watch_more, NULL,
		NULL, NULL, NULL };
	struct scan_watcher w;
	char pkg[PATH_MAX], err[ERRLEN];
	int fd, rc;

	snprintf(pkg, sizeof(pkg), "%s", at("fixture-xz.deb"));
	memset(&w, 0, sizeof(w));
	pw.arg = &w;
	w.name[0] = one_dbgpath;
	w.name[1] = DWZ_PATH;
	w.side[0].fd = side_file("side0.bin");
	w.side[1].fd = side_file("side1.bin");
	fd = side_file("out.bin");
	rc = pkg_extract_watch(pkg, "/usr/bin/one", fd, &limits, &pw, err,
	    ERRLEN);
	is_int(rc, 0, "watch: extract /usr/bin/one with two sides");
	ok(same_bytes(at("out.bin"), at("one.bin")),
	    "watch: the member is byte-identical");
	ok(!w.backwards && (long long)w.last_end == file_size(at("one.bin")),
	    "watch: progress rises to the member's size");
	ok(w.side[0].done == 1 && same_bytes(at("side0.bin"), at("one.debug")),
	    "watch: one's .debug came out as a side");
	ok(w.side[1].done == 1 && same_bytes(at("side1.bin"), at("alt.debug")),
	    "watch: the dwz file came out as a side");
	ok(w.offered > 2, "watch: other regular members were offered too");
	is_int(w.late, 0, "watch: nothing offered once the watcher was done");
	close(fd);
	close(w.side[0].fd);
	close(w.side[1].fd);

	memset(&w, 0, sizeof(w));
	w.name[0] = two_dbgpath;
	w.name[1] = "/usr/share/doc/fixture/README";
	w.side[0].fd = side_file("side0.bin");
	w.side[1].fd = side_file("side1.bin");
	rc = pkg_extract_watch(pkg, NULL, -1, &limits, &pw, err, ERRLEN);
	is_int(rc, 0, "watch: a pass for the sides alone");
	ok(w.side[0].done == 1 && same_bytes(at("side0.bin"), at("two.debug")),
	    "watch: two's .debug came out");
	ok(w.side[1].done == 1 &&
		file_size(at("side1.bin")) == (long long)strlen(readme),
	    "watch: a side needs not be ELF");
	is_int(w.late, 0, "watch: the pass stopped once both were out");
	is_int((long)w.last_end, 0, "watch: no member, no progress");
	close(w.side[0].fd);
	close(w.side[1].fd);
}

static void
test_rpm(void)
{
	static const struct {
		const char *name, *payload;
	} p[] = {
		{ "xz", "w9.xzdio" },
		{ "zstd", "w19.zstdio" },
		{ "gzip", "w9.gzdio" },
	};
	char name[64], label[64];
	size_t i;

	if (!write_file(at("fixture.spec"), spec, strlen(spec)))
		return;
	for (i = 0; i < sizeof(p) / sizeof(p[0]); i++) {
		snprintf(name, sizeof(name), "fixture-%s.rpm", p[i].name);
		snprintf(label, sizeof(label), "rpm %s payload", p[i].name);
		if (!ok(shell("cd '%s' && HOME='%s' rpmbuild -bb --quiet "
			      "--define '_topdir %s/rpmtop' "
			      "--define 'fixroot %s/root' "
			      "--define '_binary_payload %s' "
			      "--define '_rpmdir %s' "
			      "--define '_rpmfilename %s' "
			      "fixture.spec >/dev/null 2>rpmbuild.log || "
			      "{ cat rpmbuild.log; false; }",
			    tmpdir, tmpdir, tmpdir, tmpdir, p[i].payload,
			    tmpdir, name),
			label))
			continue;
		check_package(label, name);
	}
}

/* One member of a crafted tar. */
struct craft {
	const char *name;
	int type; /* AE_IFREG, AE_IFLNK, or 0 for a hard link */
	const void *data;
	size_t len;
	const char *target;
};

/*
 * Write a tar with libarchive's writer, which takes any name; filter is
 * "zstd", "gzip" or "none".
 */
static int
craft_tar(const char *path, const char *filter, const struct craft *c, size_t n)
{
	struct archive *a = archive_write_new();
	struct archive_entry *e;
	size_t i;
	int rc = 1;

	if (a == NULL || archive_write_set_format_pax_restricted(a) != 0)
		return 0;
	if (strcmp(filter, "zstd") == 0)
		archive_write_add_filter_zstd(a);
	else if (strcmp(filter, "gzip") == 0)
		archive_write_add_filter_gzip(a);
	if (archive_write_open_filename(a, path) != ARCHIVE_OK) {
		archive_write_free(a);
		return 0;
	}
	for (i = 0; i < n && rc; i++) {
		e = archive_entry_new();
		archive_entry_set_pathname(e, c[i].name);
		archive_entry_set_mtime(e, 1700000000, 0);
		archive_entry_set_perm(e, 0644);
		if (c[i].type == AE_IFLNK) {
			archive_entry_set_filetype(e, AE_IFLNK);
			archive_entry_set_symlink(e, c[i].target);
		} else if (c[i].type == 0) {
			archive_entry_set_filetype(e, AE_IFREG);
			archive_entry_set_hardlink(e, c[i].target);
		} else {
			archive_entry_set_filetype(e, AE_IFREG);
			archive_entry_set_size(e, (la_int64_t)c[i].len);
		}
		if (archive_write_header(a, e) != ARCHIVE_OK ||
		    (c[i].len > 0 &&
			archive_write_data(a, c[i].data, c[i].len) !=
			    (la_ssize_t)c[i].len))
			rc = 0;
		archive_entry_free(e);
	}
	if (archive_write_close(a) != ARCHIVE_OK)
		rc = 0;
	archive_write_free(a);
	return rc;
}

/* Scan pkg, expecting failure; 1 when it failed with an error message. */
static int
scan_fails(const char *pkg, const struct pkg_limits *lim, char *err)
{
	struct seen_list *l = calloc(1, sizeof(*l));
	int rc;

	err[0] = '\0';
	rc = l != NULL
	    ? pkg_scan(pkg, at("scratch"), lim, collect_cb, l, err, ERRLEN)
	    : 0;
	free(l);
	if (rc == -1)
		printf("# as expected: %s\n", err);
	return rc == -1 && err[0] != '\0';
}

static void
test_broken(void)
{
	static const unsigned char junk_ar[] = "!<arch>\nthis is not an ar "
					       "member header at all......"
					       "...........................";
	unsigned char junk[4096];
	char err[ERRLEN];
	unsigned seed = 12345;
	size_t i;

	for (i = 0; i < sizeof(junk); i++) {
		seed = seed * 1103515245 + 12345;
		junk[i] = (unsigned char)(seed >> 16);
	}
	ok(write_file(at("garbage.deb"), junk, sizeof(junk)),
	    "write garbage.deb");
	ok(scan_fails(at("garbage.deb"), &limits, err),
	    "garbage with a .deb name: error");
	is_int(extract_to(at("garbage.deb"), "/usr/bin/one", &limits, err), -1,
	    "garbage: extract is an error, not not-found");
	ok(write_file(at("junkar.deb"), junk_ar, sizeof(junk_ar)),
	    "write an ar magic followed by junk");
	ok(scan_fails(at("junkar.deb"), &limits, err),
	    "ar magic then junk: error");
	ok(write_file(at("empty.rpm"), "", 0), "write an empty file");
	ok(scan_fails(at("empty.rpm"), &limits, err), "empty file: error");
	ok(scan_fails(at("nonexistent.deb"), &limits, err),
	    "missing file: error");
	ok(scan_fails(tmpdir, &limits, err), "a directory: error");

	/* The data.tar.xz member itself cut short, the ar around it sound. */
	ok(shell("cd '%s' && mkdir cut && cd cut && ar x ../fixture-xz.deb && "
		 "head -c $(( $(stat -c %%s data.tar.xz) / 2 )) data.tar.xz "
		 ">d && mv d data.tar.xz && ar rc ../cutxz.deb debian-binary "
		 "control.tar.xz data.tar.xz",
	       tmpdir),
	    "make a .deb whose data.tar.xz is truncated");
	ok(scan_fails(at("cutxz.deb"), &limits, err),
	    "truncated data.tar.xz: error");
	is_int(extract_to(at("cutxz.deb"), "/usr/bin/nothere", &limits, err),
	    -1, "truncated data.tar.xz: extract is an error");

	ok(shell("cd '%s' && head -c $(( $(stat -c %%s fixture-zstd.deb) * 2 "
		 "/ 3 )) fixture-zstd.deb >cut.deb && "
		 "head -c 3000 fixture-none.deb >cutnone.deb && "
		 "head -c $(( $(stat -c %%s fixture-xz.rpm) - 1000 )) "
		 "fixture-xz.rpm >cut.rpm && "
		 "head -c 600 fixture-xz.rpm >cuthead.rpm && "
		 "tar -cf fixture.tar -C root . && "
		 "head -c $(( $(stat -c %%s fixture.tar) / 2 )) "
		 "fixture.tar >cut.pkg.tar",
	       tmpdir),
	    "cut packages short");
	ok(scan_fails(at("cut.deb"), &limits, err), "truncated .deb: error");
	ok(scan_fails(at("cutnone.deb"), &limits, err),
	    "truncated uncompressed .deb (sizes larger than the data): error");
	ok(scan_fails(at("cut.rpm"), &limits, err), "truncated .rpm: error");
	ok(scan_fails(at("cuthead.rpm"), &limits, err),
	    ".rpm cut in its header: error");
	ok(scan_fails(at("cut.pkg.tar"), &limits, err),
	    "tar cut inside a member: error");

	/* Bit flips in the compressed stream. */
	ok(shell("cd '%s' && cp fixture.pkg.tar.xz flip.pkg.tar.xz && "
		 "printf 'XXXXXXXX' | dd of=flip.pkg.tar.xz bs=1 seek=2000 "
		 "conv=notrunc 2>/dev/null",
	       tmpdir),
	    "corrupt an xz stream");
	ok(scan_fails(at("flip.pkg.tar.xz"), &limits, err),
	    "corrupt xz: error");
	ok(dir_is_empty(at("scratch")), "broken packages leave tmpdir empty");
}

static void
test_limits(void)
{
	struct pkg_limits lim = limits;
	struct seen_list *l = calloc(1, sizeof(*l));
	static const char *files[] = { "one.bin", "two.bin", "one.debug",
		"two.debug", "alt.debug" };
	struct pkg_stats st;
	const struct seen *s;
	struct stat sb;
	char err[ERRLEN];
	size_t i;
	int rc, n_over = 0;

	if (l == NULL)
		return;
	/* ELF members over max_member are reported, not inspected. */
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (stat(at(files[i]), &sb) == 0 && sb.st_size > 4096)
			n_over++;
	lim.max_member = 4096;
	rc = pkg_scan_stats(at("fixture-xz.deb"), at("scratch"), &lim,
	    collect_cb, l, &st, err, ERRLEN);
	is_int(rc, 0, "small max_member: the scan goes on");
	s = find_seen(l, "/usr/bin/one");
	ok(s != NULL && s->type == PKG_OTHER,
	    "an ELF member over max_member is other");
	is_int(st.too_large, n_over, "ELF members over it counted");
	ok(n_over >= 2 && n_over < 5, "some fixtures are over it, some not");
	ok(s != NULL && s->size > 4096, "its size is what was read");
	s = find_seen(l, DWZ_PATH);
	ok(s != NULL && (s->type == PKG_ELF) == (s->size <= 4096),
	    "the small dwz file is still inspected");
	is_int(extract_to(at("fixture-xz.deb"), "/usr/bin/one", &lim, err), -1,
	    "extract refuses a member over max_member");

	/* No file system keeps 100% free: no member is written. */
	lim = limits;
	lim.min_free_pct = 100;
	memset(l, 0, sizeof(*l));
	rc = pkg_scan_stats(at("fixture-xz.deb"), at("scratch"), &lim,
	    collect_cb, l, &st, err, ERRLEN);
	is_int(rc, 0, "no room: the scan goes on");
	s = find_seen(l, "/usr/bin/one");
	ok(s != NULL && s->type == PKG_OTHER,
	    "no room: an ELF member is not inspected");
	ok(st.no_room == 5 && st.too_large == 0,
	    "no room: every ELF member counted as such");
	is_int(extract_to(at("fixture-xz.deb"), "/usr/bin/one", &lim, err), -1,
	    "no room: extract refuses");
	ok(strstr(err, "left free") != NULL, "... saying why");
	lim.min_free_pct = 1;
	is_int(extract_to(at("fixture-xz.deb"), "/usr/bin/one", &lim, err), 0,
	    "1% kept free: extract works");

	lim = limits;
	lim.max_members = 3;
	ok(scan_fails(at("fixture.pkg.tar.zst"), &lim, err),
	    "more members than max_members: error");
	lim = limits;
	lim.max_total = 10000;
	ok(scan_fails(at("fixture-gzip.rpm"), &lim, err),
	    "more bytes than max_total: error");

	/* The callback stops the walk. */
	memset(l, 0, sizeof(*l));
	l->stop_after = 2;
	rc = pkg_scan(at("fixture-zstd.rpm"), at("scratch"), &limits,
	    collect_cb, l, err, ERRLEN);
	is_int(rc, 0, "a callback returning -1 ends the scan with 0");
	is_int(l->calls, 2, "and is not called again");

	/* Without a tmpdir a memfd holds the member. */
	memset(l, 0, sizeof(*l));
	rc = pkg_scan(at("fixture.pkg.tar.xz"), NULL, &limits, collect_cb, l,
	    err, ERRLEN);
	s = find_seen(l, "/usr/bin/two");
	ok(rc == 0 && s != NULL && s->type == PKG_ELF &&
		buildid_equal(&s->elf.id, &two_bin.id),
	    "memfd scan finds the build-id");
	free(l);
}

/*
 * A tar with one 2 GB member of zeros, zstd-compressed to a few hundred
 * kilobytes, written by streaming zeros into libarchive.
 */
static int
make_bomb(const char *path)
{
	static unsigned char zeros[1 << 20];
	struct archive *a = archive_write_new();
	struct archive_entry *e = archive_entry_new();
	int i, rc = 1;

	if (a == NULL || e == NULL ||
	    archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
	    archive_write_add_filter_zstd(a) != ARCHIVE_OK ||
	    archive_write_set_filter_option(a, "zstd", "compression-level",
		"1") != ARCHIVE_OK ||
	    archive_write_open_filename(a, path) != ARCHIVE_OK)
		rc = 0;
	archive_entry_set_pathname(e, "usr/share/zeros");
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	archive_entry_set_size(e, (la_int64_t)2048 << 20);
	if (rc && archive_write_header(a, e) != ARCHIVE_OK)
		rc = 0;
	for (i = 0; rc && i < 2048; i++)
		if (archive_write_data(a, zeros, sizeof(zeros)) !=
		    (la_ssize_t)sizeof(zeros))
			rc = 0;
	if (archive_write_close(a) != ARCHIVE_OK)
		rc = 0;
	archive_write_free(a);
	archive_entry_free(e);
	return rc;
}

static void
test_hostile(void)
{
	struct pkg_limits lim = limits, two;
	struct seen_list *l = calloc(1, sizeof(*l));
	unsigned char garbage[8192], *trunc = NULL;
	struct pkg_stats st;
	const struct seen *s;
	struct stat sb;
	char err[ERRLEN];
	size_t i, trunclen = 0;
	int rc;

	if (l == NULL)
		return;
	memcpy(garbage, "\177ELF", 4);
	for (i = 4; i < sizeof(garbage); i++)
		garbage[i] = (unsigned char)(i * 7 + (i >> 3));
	if ((trunc = slurp(at("one"), &trunclen)) != NULL)
		trunclen /= 2;

	const struct craft evil[] = {
		{ "../escape", AE_IFREG, "escaped\n", 8, NULL },
		{ "./usr/../../escape2", AE_IFREG, "escaped\n", 8, NULL },
		{ "/etc/x", AE_IFREG, "absolute\n", 9, NULL },
		{ "usr/lib/garbage.so", AE_IFREG, garbage, sizeof(garbage),
		    NULL },
		{ "usr/lib/half.so", AE_IFREG, trunc, trunclen, NULL },
		{ "usr/lib/out", AE_IFLNK, NULL, 0, "../../../etc/passwd" },
		{ "usr/lib/abs", AE_IFLNK, NULL, 0, "/etc/x" },
		{ "usr/lib/loop1", AE_IFLNK, NULL, 0, "loop2" },
		{ "usr/lib/loop2", AE_IFLNK, NULL, 0, "./loop1" },
		{ "usr/lib/hard", 0, NULL, 0, "etc/x" },
		{ "usr/lib/hardout", 0, NULL, 0, "../etc/passwd" },
		{ "usr/lib/back", AE_IFLNK, NULL, 0, "../../etc/x" },
		{ "usr/share/ok.txt", AE_IFREG, "fine\n", 5, NULL },
	};
	ok(trunc != NULL &&
		craft_tar(at("evil.pkg.tar.zst"), "zstd", evil,
		    sizeof(evil) / sizeof(evil[0])),
	    "craft a hostile tar");
	free(trunc);

	rc = pkg_scan_stats(at("evil.pkg.tar.zst"), at("scratch"), &limits,
	    collect_cb, l, &st, err, ERRLEN);
	is_int(rc, 0, "hostile tar: the scan goes on");
	is_int(st.bad_names, 3,
	    "the two '..' names and the escaping hard link are counted");
	is_int(st.members, sizeof(evil) / sizeof(evil[0]),
	    "every header is counted");
	is_int(l->n, sizeof(evil) / sizeof(evil[0]) - 3,
	    "the others are reported");
	for (i = 0; i < l->n; i++)
		if (strstr(l->m[i].path, "escape") != NULL)
			break;
	ok(i == l->n, "no escaping name is reported");
	s = find_seen(l, "/etc/x");
	ok(s != NULL && s->type == PKG_OTHER && s->size == 9,
	    "an absolute name is kept inside the package");
	s = find_seen(l, "/usr/lib/garbage.so");
	ok(s != NULL && s->type == PKG_OTHER,
	    "ELF magic then garbage: other, not fatal");
	s = find_seen(l, "/usr/lib/half.so");
	ok(s != NULL && s->type == PKG_OTHER, "truncated ELF: other");
	is_int(st.bad_elf, 2, "both counted as bad ELF");
	s = find_seen(l, "/usr/lib/hard");
	ok(s != NULL && s->type == PKG_SYMLINK, "a hard link is a link");
	is_str(s != NULL ? s->target : NULL, "/etc/x",
	    "to the normalised path it names");
	ok(find_seen(l, "/usr/share/ok.txt") != NULL,
	    "the member after them is reached");

	ok(stat(at("escape"), &sb) == -1 && stat(at("../escape"), &sb) == -1,
	    "nothing written for ../escape");
	is_int(extract_to(at("evil.pkg.tar.zst"), "../escape", &limits, err),
	    -1, "extract of a '..' name is refused");
	is_int(extract_to(at("evil.pkg.tar.zst"), "/etc/x", &limits, err), 0,
	    "extract the absolute member");
	ok(write_file(at("expect"), "absolute\n", 9) &&
		same_bytes(at("out.bin"), at("expect")),
	    "it went to out_fd only, stale bytes replaced");
	is_int(extract_to(at("evil.pkg.tar.zst"), "/usr/lib/abs", &limits, err),
	    0, "an absolute symlink resolves inside the package");
	ok(same_bytes(at("out.bin"), at("expect")), "to the package's /etc/x");
	is_int(extract_to(at("evil.pkg.tar.zst"), "/usr/lib/hard", &limits,
		   err),
	    0, "a hard link is followed");
	ok(same_bytes(at("out.bin"), at("expect")), "to its target");
	is_int(extract_to(at("evil.pkg.tar.zst"), "/usr/lib/back", &limits,
		   err),
	    0, "a symlink to an earlier member is followed (second pass)");
	ok(same_bytes(at("out.bin"), at("expect")), "to the right bytes");
	is_int(extract_to(at("evil.pkg.tar.zst"), "/usr/lib/out", &limits, err),
	    -1, "a symlink out of the package is an error");
	ok(strstr(err, "leaves") != NULL, "saying it leaves the package");
	is_int(extract_to(at("evil.pkg.tar.zst"), "/usr/lib/loop1", &limits,
		   err),
	    -1, "a symlink loop is an error");
	ok(strstr(err, "links") != NULL, "saying there are too many links");
	is_int(extract_to(at("evil.pkg.tar.zst"), "/usr/lib/garbage.so",
		   &limits, err),
	    0, "a bad ELF member can still be extracted");
	ok(write_file(at("expect"), garbage, sizeof(garbage)) &&
		same_bytes(at("out.bin"), at("expect")),
	    "byte for byte");

	/* The bomb, bare and inside a .deb. */
	ok(make_bomb(at("bomb.pkg.tar.zst")), "write a 2 GB zstd bomb");
	ok(stat(at("bomb.pkg.tar.zst"), &sb) == 0 && sb.st_size < (1 << 20),
	    "it is small on disk");
	ok(shell("cd '%s' && mkdir bombdeb && cd bombdeb && "
		 "printf '2.0\\n' >debian-binary && "
		 "cp ../cut/control.tar.xz . && "
		 "cp ../bomb.pkg.tar.zst data.tar.zst && "
		 "ar rc ../bomb.deb debian-binary control.tar.xz data.tar.zst",
	       tmpdir),
	    "wrap the bomb in a .deb");
	lim.max_total = 64u << 20;
	memset(l, 0, sizeof(*l));
	rc = pkg_scan_stats(at("bomb.pkg.tar.zst"), at("scratch"), &lim,
	    collect_cb, l, &st, err, ERRLEN);
	is_int(rc, -1, "bomb: error");
	ok(strstr(err, "more than") != NULL, "bomb: for max_total");
	ok(st.total <= lim.max_total, "bomb: no more than max_total read");
	ok(scan_fails(at("bomb.deb"), &lim, err), "bomb in a .deb: error");
	ok(strstr(err, "more than") != NULL, "bomb in a .deb: for max_total");
	is_int(extract_to(at("bomb.deb"), "/usr/share/zeros", &lim, err), -1,
	    "bomb in a .deb: extract is an error");
	is_int(extract_to(at("bomb.deb"), "/nothere", &lim, err), -1,
	    "bomb: skipping through it is an error too");

	/*
	 * A newc cpio header announcing a 2 GiB name: libarchive would ask
	 * its read-ahead for that much at once; the feed refuses it first.
	 * And the same header inside a file's data, where a resync scan
	 * would find it too.
	 */
	ok(shell("cd '%s' && { printf '070701'; printf '%%08X' 1 33188 0 0 1 "
		 "0 0 0 0 0 0 2147483647 0; printf 'usr/x\\0'; "
		 "head -c 4096 /dev/zero; } | gzip >namebomb.cpio.gz && "
		 "{ printf '070701'; printf '%%08X' 1 33188 0 0 1 0 200 0 0 0 "
		 "0 6 0; printf 'usr/a\\0\\0\\0\\0\\0'; printf '07070%%s' 2; "
		 "printf '%%08X' 1 33188 0 0 1 0 0 0 0 0 0 4294967295 0; "
		 "head -c 90 /dev/zero; } | gzip >namebomb2.cpio.gz",
	       tmpdir),
	    "craft cpio headers with 2 and 4 GiB names");
	ok(scan_fails(at("namebomb.cpio.gz"), &lim, err) &&
		strstr(err, "a cpio header names a member longer than") != NULL,
	    "a cpio name of 2 GiB: refused before libarchive allocates it");
	ok(scan_fails(at("namebomb2.cpio.gz"), &lim, err) &&
		strstr(err, "a cpio header names a member longer than") != NULL,
	    "... and one in a member's data, where a resync would look");

	/*
	 * An xz stream chooses its dictionary, up to 1.5 GiB, and the
	 * decoder holds it while it reads: one that asks for more memory
	 * than XZ_MEMLIMIT is refused, in a .deb and bare.
	 */
	ok(shell("cd '%s' && mkdir bigdict && cd bigdict && "
		 "printf '2.0\\n' >debian-binary && "
		 "cp ../cut/control.tar.xz . && tar -cf - -C ../root . | "
		 "xz --lzma2=dict=256MiB >data.tar.xz && "
		 "ar rc ../bigdict.deb debian-binary control.tar.xz "
		 "data.tar.xz && cp data.tar.xz ../bigdict.pkg.tar.xz",
	       tmpdir),
	    "xz with a 256 MiB dictionary, in a .deb and bare");
	ok(scan_fails(at("bigdict.deb"), &limits, err) &&
		strstr(err, "MiB to decompress") != NULL,
	    "a 256 MiB xz dictionary in a .deb: refused");
	ok(scan_fails(at("bigdict.pkg.tar.xz"), &limits, err) &&
		strstr(err, "MiB to decompress") != NULL,
	    "a 256 MiB xz dictionary in an Arch package: refused");
	is_int(extract_to(at("bigdict.deb"), "/usr/bin/one", &limits, err), -1,
	    "a 256 MiB xz dictionary: extract is an error");
	two = limits;
	two.xz_threads = 2;
	ok(extract_to(at("bigdict.deb"), "/usr/bin/one", &two, err) == -1 &&
		strstr(err, "more than 144 MiB to decompress") != NULL,
	    "... on two threads too, past 72 MiB for each");
	ok(dir_is_empty(at("scratch")), "hostile input leaves tmpdir empty");
	free(l);
}

/* What one scan of a package said, with its members' sources. */
struct part_scan {
	struct seen_list l;
	struct pkg_stats st;
	unsigned nsrc[MEMBERS_MAX];
	uint64_t src_hash[MEMBERS_MAX];
	int rc;
};

static int
part_src_cb(const char *path, void *arg)
{
	uint64_t *h = arg;

	for (; *path != '\0'; path++)
		*h = (*h ^ (unsigned char)*path) * 1099511628211u;
	*h = (*h ^ '\n') * 1099511628211u;
	return 0;
}

static int
part_cb(const struct pkg_member *m, void *arg)
{
	struct part_scan *p = arg;
	char err[ERRLEN];
	size_t i = p->l.n;
	int miss;

	if (collect_cb(m, &p->l) != 0 || i == p->l.n || m->type != PKG_ELF)
		return 0;
	p->src_hash[i] = 14695981039346656037u;
	if (sources_list(m->fd, -1, NULL, 100000, part_src_cb, &p->src_hash[i],
		&miss, err, sizeof(err)) == 0)
		p->nsrc[i] = 1;
	return 0;
}

static void
part_scan(const char *name, struct part_scan *p)
{
	char err[ERRLEN];

	memset(p, 0, sizeof(*p));
	p->rc = pkg_scan_stats(at(name), at("scratch"), &limits, part_cb, p,
	    &p->st, err, sizeof(err));
	if (p->rc != 0)
		printf("# %s: %s\n", name, err);
}

/* 1 when scans a and b said the same of the same members. */
static int
part_same(const struct part_scan *a, const struct part_scan *b)
{
	const struct seen *x, *y;
	size_t i;
	int same = a->l.n == b->l.n && a->l.n > 0;

	for (i = 0; same && i < a->l.n; i++) {
		x = &a->l.m[i];
		y = &b->l.m[i];
		if (strcmp(x->path, y->path) != 0 || x->type != y->type ||
		    x->size != y->size || x->elf.kinds != y->elf.kinds ||
		    !buildid_equal(&x->elf.id, &y->elf.id) ||
		    a->nsrc[i] != b->nsrc[i] ||
		    a->src_hash[i] != b->src_hash[i]) {
			printf("# differs: %s\n", x->path);
			same = 0;
		}
	}
	return same;
}

/*
 * Two .debs of the same tar, one with its data.tar.xz cut into 64 KiB
 * blocks as multi-threaded xz cuts them (24 MiB at dpkg-deb's level), one
 * in a single block: they must scan alike, members, kinds, build-ids and
 * sources.  1 when both scanned.
 */
static int
part_pair(const char *what, const char *dir, struct part_scan *one,
    struct part_scan *many)
{
	char label[128], name[2][64];

	snprintf(name[0], sizeof(name[0]), "%s-one.deb", dir);
	snprintf(name[1], sizeof(name[1]), "%s-many.deb", dir);
	snprintf(label, sizeof(label),
	    "%s: a .deb in 64 KiB xz blocks, and one in one", what);
	if (!ok(shell("cd '%s/%s' && "
		      "tar --format=gnu --sort=name --owner=0 --group=0 -cf "
		      "../data.tar ./usr && cd .. && printf '2.0\\n' "
		      ">debian-binary && tar -cJf control.tar.xz -T /dev/null "
		      "&& "
		      "xz -T1 --block-size=65536 -c data.tar >data.tar.xz && "
		      "rm -f %s %s && ar rcD %s debian-binary control.tar.xz "
		      "data.tar.xz && xz -T1 -c data.tar >data.tar.xz && "
		      "ar rcD %s debian-binary control.tar.xz data.tar.xz",
		    tmpdir, dir, name[0], name[1], name[1], name[0]),
		label))
		return 0;
	part_scan(name[0], one);
	part_scan(name[1], many);
	snprintf(label, sizeof(label), "%s: both scan", what);
	if (!ok(one->rc == 0 && many->rc == 0, label))
		return 0;
	snprintf(label, sizeof(label), "%s: one block, all decompressed", what);
	ok(one->st.part_read == 0 && one->st.decoded == one->st.total, label);
	snprintf(label, sizeof(label), "%s: the same scan from both", what);
	ok(part_same(one, many), label);
	return 1;
}

/*
 * Large members of a data.tar.xz in blocks are read in part: a DWARF 5
 * debug file (only its headers and line tables) and a file that is not
 * ELF (only its first bytes), so that less is decompressed.  A DWARF 4
 * debug file, whose sources need its units, is read whole.
 */
static void
test_part(void)
{
	struct part_scan one, many;
	const struct seen *a;
	FILE *fp;
	size_t i;

	if ((fp = fopen(at("big.c"), "w")) == NULL) {
		ok(0, "write big.c");
		return;
	}
	for (i = 0; i < 1500; i++)
		fprintf(fp,
		    "struct s%zu { int a%zu; long b%zu; char c%zu[%zu]; };\n"
		    "int f%zu(struct s%zu *p) { struct s%zu q = *p; "
		    "return q.a%zu + (int)q.b%zu; }\n",
		    i, i, i, i, i % 7 + 1, i, i, i, i, i);
	fprintf(fp, "int main(void) { return 0; }\n");
	if (fclose(fp) == EOF ||
	    !ok(shell("cd '%s' && rm -rf p4 p5 && for v in 4 5; do "
		      "mkdir -p p$v/usr/lib/debug/.build-id/aa && "
		      "gcc -gdwarf-$v -O0 -Wl,--build-id -o big$v big.c && "
		      "objcopy --only-keep-debug big$v "
		      "p$v/usr/lib/debug/.build-id/aa/big$v.debug || exit 1; "
		      "done && mkdir -p p5/usr/share/big && "
		      "head -c 400000 /dev/urandom >p5/usr/share/big/blob",
		    tmpdir),
		"part: DWARF 4 and 5 debug files of 290 KB, a 400 KB blob"))
		return;

	if (part_pair("part DWARF 5", "p5", &one, &many)) {
		is_int(many.st.part_read, 2,
		    "part DWARF 5: the debug file and the blob read in part");
		printf("# decoded %llu of %llu\n",
		    (unsigned long long)many.st.decoded,
		    (unsigned long long)many.st.total);
		/* The blob past its first 64 KiB, but for two blocks. */
		ok(many.st.decoded + 200000 < many.st.total,
		    "part DWARF 5: 200 KB or more never decompressed");
		a = find_seen(&many.l,
		    "/usr/lib/debug/.build-id/aa/big5.debug");
		ok(a != NULL && a->type == PKG_ELF &&
			(a->elf.kinds & ELF_KIND_DEBUGINFO) != 0 &&
			many.nsrc[a - many.l.m] == 1,
		    "part DWARF 5: a debuginfo, its sources listed");
	}
	if (part_pair("part DWARF 4", "p4", &one, &many))
		is_int(many.st.part_read, 0,
		    "part DWARF 4: the debug file read whole");
}

/*
 * A package read as it grows (a download): grow appends the next 16 KiB
 * of the whole file on the reader's own thread, and counts the threads of
 * the process meanwhile.
 */
struct growth {
	const unsigned char *all;
	size_t len, have;
	int fd;
	int calls, threads_max;
};

static int
threads_now(void)
{
	struct dirent *d;
	DIR *dp;
	int n = 0;

	if ((dp = opendir("/proc/self/task")) == NULL)
		return -1;
	while ((d = readdir(dp)) != NULL)
		n += d->d_name[0] != '.';
	closedir(dp);
	return n;
}

static int
grow_cb(uint64_t have, void *arg)
{
	struct growth *g = arg;
	size_t n = g->len - g->have < 16384 ? g->len - g->have : 16384;
	int t = threads_now();

	g->calls++;
	if (t > g->threads_max)
		g->threads_max = t;
	if (n == 0)
		return 0;
	if (write(g->fd, g->all + g->have, n) != (ssize_t)n)
		return -1;
	g->have += n;
	return 1;
}

/*
 * Extract the blob of p5 from pkg as the file grows, decoded on up to two
 * threads: 1 when it came out byte-identical; *threads: how many more
 * threads the process had at most meanwhile than before.
 */
static int
grown_extract(const char *what, const char *pkg, int *threads)
{
	struct growth g = { 0 };
	struct pkg_limits lim = limits;
	unsigned char *want = NULL, *got = NULL;
	size_t wantlen = 0, gotlen = 0;
	char err[ERRLEN], label[128];
	int before, rc = -2, out, same;

	*threads = -1;
	g.all = slurp(at(pkg), &g.len);
	want = slurp(at("p5/usr/share/big/blob"), &wantlen);
	g.fd = open(at("growing.deb"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600);
	out = open(at("out.bin"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	/* Its ar header and the start of its data, the rest in pieces. */
	g.have = 4096;
	if (g.all != NULL && want != NULL && g.fd != -1 && out != -1 &&
	    g.len > 65536 && write(g.fd, g.all, g.have) == (ssize_t)g.have) {
		lim.grow = grow_cb;
		lim.grow_arg = &g;
		lim.xz_threads = 2;
		before = threads_now();
		if ((rc = pkg_extract(at("growing.deb"), "/usr/share/big/blob",
			 out, &lim, err, sizeof(err))) != 0)
			printf("# %s\n", err);
		*threads = g.threads_max - before;
		printf("# %s: %d threads more while decoding, %d pieces\n",
		    what, *threads, g.calls);
		snprintf(label, sizeof(label),
		    "%s: the decoder's threads end with the reader", what);
		is_int(threads_now(), before, label);
	}
	if (out != -1)
		close(out);
	if (g.fd != -1)
		close(g.fd);
	got = slurp(at("out.bin"), &gotlen);
	same = rc == 0 && g.calls > 10 && got != NULL && gotlen == wantlen &&
	    memcmp(got, want, wantlen) == 0;
	free((void *)g.all);
	free(want);
	free(got);
	return same;
}

/*
 * liblzma's threaded decoder (pkg_limits.xz_threads) on a data.tar.xz in
 * 64 KiB blocks, read as the file grows: with the blocks' sizes in their
 * headers (multi-threaded xz, dpkg-deb), decoded on threads of its own;
 * without (xz -T1), on the reader's thread.
 */
static void
test_threads(void)
{
	int more;

	if (!ok(shell("cd '%s/p5' && tar --format=gnu --sort=name --owner=0 "
		      "--group=0 -cf - ./usr | xz -T2 --block-size=65536 -c "
		      ">../data.tar.xz && cd .. && rm -f p5-mt.deb && "
		      "ar rcD p5-mt.deb debian-binary control.tar.xz "
		      "data.tar.xz",
		    tmpdir),
		"threads: p5's .deb in 64 KiB blocks by xz -T2"))
		return;
	ok(grown_extract("threads, sizes in the block headers", "p5-mt.deb",
	       &more),
	    "threads: a member of it, read as it grows, is byte-identical");
	ok(more > 0, "threads: ... decoded on threads of their own");
	ok(grown_extract("threads, no sizes in the block headers",
	       "p5-many.deb", &more),
	    "threads: from xz -T1's blocks too");
	is_int(more, 0, "threads: ... decoded on the reader's thread");
}

int
main(void)
{
	if (!ok(testdir_make("test_package") == 0,
		"make a temporary directory"))
		return tap_done();
	if (!ok(elf_init() == 0, "elf_init"))
		return tap_done();
	if (!ok(mkdir(at("scratch"), 0700) == 0, "make a scratch tmpdir"))
		return tap_done();

	test_names();
	if (make_fixtures()) {
		test_deb();
		test_arch();
		test_watch();
		test_rpm();
		test_broken();
		test_limits();
		test_hostile();
	}
	test_part();
	test_threads();

	testdir_remove();
	return tap_done();
}
