/*
 * tests/unit/test_repoidx.c: indexer/repometa.c (Release, Packages and
 * Contents of apt repositories, plain and compressed, hostile lines;
 * repomd.xml, primary.xml and filelists.xml of rpm repositories; Arch
 * .files databases; ASCII-armored keys) and
 * cache/repoidx.c (generations of a repository's ids: a reader sees the
 * old one until the flip, removed packages are forgotten, negative entries
 * of new ids dropped, an id's packages apart for each kind; the state: the
 * packages holding ids, the digest a generation was made from, a refresh
 * running, one that found it unchanged).  Empty index files of every
 * compression.  One index in a temporary directory; one thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/negative.h"
#include "cache/repoidx.h"
#include "indexer/repometa.h"
#include "tests/tap.h"
#include "tests/testdir.h"

#define ERRLEN 256
#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define ID1 "1111111111111111111111111111111111111111"
#define ID2 "2222222222222222222222222222222222222222"
#define ID3 "3333333333333333333333333333333333333333"

static void
write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	if (fp == NULL)
		abort();
	fputs(text, fp);
	fclose(fp);
}

struct seen {
	char names[8][64];
	uint64_t sizes[8];
	int n;
	char ids[8][300];
	char packages[8][80];
};

static int
release_cb(const struct repometa_entry *e, void *arg)
{
	struct seen *s = arg;

	if (s->n < 8) {
		snprintf(s->names[s->n], sizeof(s->names[0]), "%s", e->name);
		s->sizes[s->n++] = e->size;
	}
	return 0;
}

static int
packages_cb(const struct repometa_deb *d, void *arg)
{
	struct seen *s = arg;

	if (s->n < 8) {
		snprintf(s->packages[s->n], sizeof(s->packages[0]), "%s",
		    d->package);
		snprintf(s->ids[s->n], sizeof(s->ids[0]), "%s", d->build_ids);
		s->sizes[s->n++] = d->size;
	}
	return 0;
}

static int
contents_cb(const struct buildid *id, const char *packages, void *arg)
{
	struct seen *s = arg;

	if (s->n < 8) {
		buildid_format(id, s->ids[s->n]);
		snprintf(s->packages[s->n++], sizeof(s->packages[0]), "%s",
		    packages);
	}
	return 0;
}

static void
test_release(void)
{
	struct seen s = { 0 };
	int64_t vu;
	char err[ERRLEN];

	write_file(at("Release"),
	    "Origin: x\nValid-Until: Thu, 01 Jan 2099 00:00:00 UTC\n"
	    "MD5Sum:\n 0123 10 main/binary-amd64/Packages\n"
	    "SHA256:\n " SHA_A " 123 main/binary-amd64/Packages.xz\n"
	    " short 1 bad\n " SHA_A " x12 main/bad-size\n"
	    " " SHA_A " 7 main/Contents-amd64.gz\n"
	    "Description: y\n");
	ok(repometa_release(at("Release"), release_cb, &s, &vu, err,
	       sizeof(err)) == 0,
	    "Release reads");
	is_int(s.n, 2, "two SHA256 entries (MD5Sum and bad lines skipped)");
	is_str(s.names[0], "main/binary-amd64/Packages.xz", "the first name");
	ok(s.sizes[0] == 123, "its size");
	ok(vu == 4070908800, "Valid-Until as unix seconds");
}

static void
test_packages(void)
{
	struct seen s = { 0 };
	char err[ERRLEN];
	char *huge;
	size_t n = REPOMETA_LINE_MAX + 10;

	write_file(at("Packages"),
	    "Package: a-dbgsym\nArchitecture: amd64\nFilename: pool/a.deb\n"
	    "Size: 42\nSHA256: " SHA_A "\nBuild-Ids: " ID1 " " ID2 "\n"
	    "Description: multi\n line\n\n"
	    "Package: no-sha\nFilename: pool/b.deb\nSize: 1\n\n"
	    "Package: c-dbg\r\nFilename: pool/c.deb\r\nSize: 7\r\n"
	    "SHA256: " SHA_A "\r\n");
	ok(repometa_packages(at("Packages"), packages_cb, &s, err,
	       sizeof(err)) == 0,
	    "Packages reads");
	is_int(s.n, 2, "two complete stanzas (one without SHA256 skipped)");
	is_str(s.packages[0], "a-dbgsym", "the first package");
	is_str(s.ids[0], ID1 " " ID2, "its Build-Ids");
	is_str(s.packages[1], "c-dbg", "the last, without a blank line, CRLF");
	is_str(s.ids[1], "", "no Build-Ids: empty");
	/* A line longer than the bound is an error, not a crash. */
	if ((huge = malloc(n + 1)) == NULL)
		abort();
	memset(huge, 'x', n);
	huge[n] = '\0';
	write_file(at("Huge"), huge);
	free(huge);
	memset(&s, 0, sizeof(s));
	ok(repometa_packages(at("Huge"), packages_cb, &s, err, sizeof(err)) ==
		-1,
	    "a line over REPOMETA_LINE_MAX is refused");
	ok(strstr(err, "longer than") != NULL, "... saying so");
}

static void
test_compressed(void)
{
	struct seen s = { 0 };
	char cmd[PATH_MAX * 2 + 64], err[ERRLEN];

	write_file(at("P2"),
	    "Package: z\nFilename: pool/z.deb\nSize: 3\nSHA256: " SHA_A
	    "\nBuild-Ids: " ID3 "\n");
	snprintf(cmd, sizeof(cmd), "xz -k '%s' && gzip -k '%s'", at("P2"),
	    at("P2"));
	if (!ok(system(cmd) == 0, "xz and gzip copies"))
		return;
	ok(repometa_packages(at("P2.xz"), packages_cb, &s, err, sizeof(err)) ==
		    0 &&
		s.n == 1 && strcmp(s.ids[0], ID3) == 0,
	    "Packages.xz reads as the plain one");
	memset(&s, 0, sizeof(s));
	ok(repometa_packages(at("P2.gz"), packages_cb, &s, err, sizeof(err)) ==
		    0 &&
		s.n == 1,
	    "Packages.gz too");
	snprintf(cmd, sizeof(cmd), "head -c 40 '%s' >'%s'", at("P2.xz"),
	    at("Bad.xz"));
	memset(&s, 0, sizeof(s));
	ok(system(cmd) == 0 &&
		repometa_packages(at("Bad.xz"), packages_cb, &s, err,
		    sizeof(err)) == -1,
	    "a truncated xz stream is an error");
}

static void
test_contents(void)
{
	struct seen s = { 0 };
	char err[ERRLEN];

	write_file(at("Contents"),
	    "usr/lib/debug/.build-id/11/" ID1 ".debug   debug/a-dbg\n"
	    "usr/lib/debug/.build-id/22/x.debug debug/b-dbg\n"
	    "usr/lib/debug/.build-id/33/" ID3 " debug/exe\n"
	    "usr/share/doc/x/README  doc/x\n"
	    "./usr/lib/debug/.build-id/22/" ID2
	    ".debug\tdebug/b-dbg,libs/b2-dbg\n");
	ok(repometa_contents(at("Contents"), contents_cb, &s, err,
	       sizeof(err)) == 0,
	    "Contents reads");
	is_int(s.n, 2, "two .build-id debug files (bad id, no .debug skipped)");
	/* The file name is xx/rest: the id is xx followed by rest. */
	is_str(s.ids[0], "11" ID1, "the id spelled by the path");
	is_str(s.packages[1], "debug/b-dbg,libs/b2-dbg", "its package list");
}

static int
repomd_cb(const struct repometa_rpmdata *d, void *arg)
{
	struct seen *s = arg;

	if (s->n < 8) {
		snprintf(s->names[s->n], sizeof(s->names[0]), "%s:%s", d->type,
		    d->href);
		snprintf(s->ids[s->n], sizeof(s->ids[0]), "%s", d->sha256);
		s->sizes[s->n++] = d->size;
	}
	return 0;
}

static int
primary_cb(const struct repometa_rpm *p, void *arg)
{
	struct seen *s = arg;

	if (s->n < 8) {
		snprintf(s->names[s->n], sizeof(s->names[0]), "%s", p->href);
		snprintf(s->ids[s->n], sizeof(s->ids[0]), "%s%s", p->pkgid,
		    p->has_sha256 ? "" : " (not sha256)");
		s->sizes[s->n++] = p->size;
	}
	return 0;
}

static int
filelists_cb(const char *pkgid, const struct buildid *id, int kind, void *arg)
{
	struct seen *s = arg;

	if (s->n < 8) {
		snprintf(s->packages[s->n], sizeof(s->packages[0]), "%s",
		    pkgid);
		s->sizes[s->n] = (uint64_t)kind;
		buildid_format(id, s->ids[s->n++]);
	}
	return 0;
}

static void
test_rpm(void)
{
	struct seen s = { 0 };
	char err[ERRLEN];

	write_file(at("repomd.xml"),
	    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	    "<repomd xmlns=\"http://linux.duke.edu/metadata/repo\">"
	    "<revision>1</revision>"
	    "<data type=\"primary\"><checksum type=\"sha256\">" SHA_A
	    "</checksum><open-checksum type=\"sha256\">x</open-checksum>"
	    "<location href=\"repodata/p.xml.gz\"/><size>321</size>"
	    "<open-size>999</open-size></data>"
	    "<data type=\"filelists\"><checksum type=\"sha1\">abc</checksum>"
	    "<location href=\"repodata/f.xml.gz\"/></data></repomd>\n");
	ok(repometa_repomd(at("repomd.xml"), repomd_cb, &s, err, sizeof(err)) ==
		0,
	    "repomd.xml reads");
	is_int(s.n, 2, "two <data>");
	is_str(s.names[0], "primary:repodata/p.xml.gz", "primary's location");
	is_str(s.ids[0], SHA_A, "its SHA-256 (not open-checksum's)");
	ok(s.sizes[0] == 321, "its size (not open-size)");
	is_str(s.ids[1], "", "a SHA-1 checksum is no SHA-256");

	memset(&s, 0, sizeof(s));
	write_file(at("primary.xml"),
	    "<metadata xmlns=\"http://linux.duke.edu/metadata/common\" "
	    "xmlns:rpm=\"http://linux.duke.edu/metadata/rpm\">"
	    "<package type=\"rpm\"><name>a-debuginfo</name>"
	    "<checksum type=\"sha256\" pkgid=\"YES\">" SHA_A "</checksum>"
	    "<size package=\"1234\" installed=\"1\" archive=\"2\"/>"
	    "<location href=\"Packages/a.rpm\"/>"
	    "<format><rpm:license>MIT</rpm:license></format></package>"
	    "<package type=\"rpm\"><checksum type=\"sha256\">" SHA_A
	    "</checksum><location href=\"Packages/nosize.rpm\"/></package>"
	    "</metadata>");
	ok(repometa_rpm_primary(at("primary.xml"), primary_cb, &s, err,
	       sizeof(err)) == 0,
	    "primary.xml reads");
	is_int(s.n, 1, "one complete package (one without a size skipped)");
	is_str(s.names[0], "Packages/a.rpm", "its location");
	is_str(s.ids[0], SHA_A, "its pkgid, a SHA-256");
	ok(s.sizes[0] == 1234, "its package size");

	memset(&s, 0, sizeof(s));
	write_file(at("filelists.xml"),
	    "<filelists><package pkgid=\"" SHA_A "\" name=\"a\" arch=\"x\">"
	    "<file>/usr/lib/debug/.build-id/11/" ID1 ".debug</file>"
	    "<file type=\"dir\">/usr/lib/debug/.build-id/22/" ID2
	    ".debug</file>"
	    "<file>/usr/lib/debug/.build-id/33/" ID3 "</file>"
	    "<file>/usr/lib/.build-id/22/" ID2 "</file>"
	    "<file>/usr/lib/.build-id/22/" ID2 ".1</file>"
	    "<file type=\"dir\">/usr/lib/.build-id/22</file>"
	    "<file>/usr/bin/a</file></package></filelists>");
	ok(repometa_rpm_filelists(at("filelists.xml"), filelists_cb, &s, err,
	       sizeof(err)) == 0,
	    "filelists.xml reads");
	is_int(s.n, 3,
	    "three .build-id files (dirs, a .1 duplicate, /usr/bin skipped)");
	is_str(s.ids[0], "11" ID1, "a debug file's id");
	ok(s.sizes[0] == REPOMETA_DEBUGINFO, "... a debuginfo");
	is_str(s.packages[0], SHA_A, "its package's pkgid");
	is_str(s.ids[1], "33" ID3, "a debug package's suffix-less link's id");
	ok(s.sizes[1] == REPOMETA_EXECUTABLE_WEAK, "... a weak executable");
	is_str(s.ids[2], "22" ID2, "a /usr/lib/.build-id/ link's id");
	ok(s.sizes[2] == REPOMETA_EXECUTABLE, "... an executable");

	write_file(at("bad.xml"), "<filelists><package pkgid=\"x\"><file>");
	ok(repometa_rpm_filelists(at("bad.xml"), filelists_cb, &s, err,
	       sizeof(err)) == -1,
	    "unclosed XML is an error");
	ok(strstr(err, "XML") != NULL, "... saying so");
}

static int
arch_desc_cb(const struct repometa_arch *p, void *arg)
{
	struct seen *s = arg;

	if (s->n < 8) {
		snprintf(s->names[s->n], sizeof(s->names[0]), "%s %s", p->dir,
		    p->filename);
		s->sizes[s->n++] = p->size;
	}
	return 0;
}

static int
arch_file_cb(const char *dir, const struct buildid *id, int kind, void *arg)
{
	struct seen *s = arg;

	if (s->n < 8) {
		snprintf(s->names[s->n], sizeof(s->names[0]), "%s", dir);
		s->sizes[s->n] = (uint64_t)kind;
		buildid_format(id, s->ids[s->n++]);
	}
	return 0;
}

static void
test_arch(void)
{
	struct seen s = { 0 };
	char cmd[PATH_MAX * 2 + 64], err[ERRLEN];

	if (mkdir(at("db"), 0755) == -1 || mkdir(at("db/p-1-1"), 0755) == -1)
		abort();
	write_file(at("db/p-1-1/files"),
	    "%FILES%\nusr/\nusr/lib/debug/.build-id/11/" ID1 ".debug\n"
	    "usr/lib/.build-id/\nusr/lib/.build-id/33/\n"
	    "usr/lib/.build-id/33/" ID3 "\nusr/bin/p\n");
	write_file(at("db/p-1-1/desc"),
	    "%FILENAME%\np-1-1-x86_64.pkg.tar.zst\n\n%CSIZE%\n99\n\n"
	    "%SHA256SUM%\n" SHA_A "\n\n");
	snprintf(cmd, sizeof(cmd),
	    "tar -czf '%s' -C '%s' p-1-1/files p-1-1/desc", at("x.files"),
	    at("db"));
	if (!ok(system(cmd) == 0, "a .files database (files before desc)"))
		return;
	ok(repometa_arch_files(at("x.files"), arch_desc_cb, arch_file_cb, &s,
	       err, sizeof(err)) == 0,
	    "the .files database reads");
	is_int(s.n, 3, "two ids, one package");
	is_str(s.names[0], "p-1-1", "the id's package directory");
	is_str(s.ids[0], "11" ID1, "the id");
	ok(s.sizes[0] == REPOMETA_DEBUGINFO, "... of a debug file");
	is_str(s.ids[1], "33" ID3, "a usr/lib/.build-id/ link's id");
	ok(s.sizes[1] == REPOMETA_EXECUTABLE, "... an executable");
	is_str(s.names[2], "p-1-1 p-1-1-x86_64.pkg.tar.zst",
	    "the package's file name");
	ok(s.sizes[2] == 99, "its %CSIZE%");
}

/* Streams of no bytes, as gzip -n, xz, bzip2 and zstd write them. */
static const struct {
	const char *name;
	unsigned char bytes[32];
	size_t len;
} empties[] = {
	{ "plain", { 0 }, 0 },
	{ "gz",
	    { 0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x03,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00 },
	    20 },
	{ "xz",
	    { 0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00, 0x00, 0x04, 0xe6, 0xd6, 0xb4,
		0x46, 0x00, 0x00, 0x00, 0x00, 0x1c, 0xdf, 0x44, 0x21, 0x1f,
		0xb6, 0xf3, 0x7d, 0x01, 0x00, 0x00, 0x00, 0x00, 0x04, 0x59,
		0x5a },
	    32 },
	{ "bz2",
	    { 0x42, 0x5a, 0x68, 0x39, 0x17, 0x72, 0x45, 0x38, 0x50, 0x90, 0x00,
		0x00, 0x00, 0x00 },
	    14 },
	{ "zst",
	    { 0x28, 0xb5, 0x2f, 0xfd, 0x24, 0x00, 0x01, 0x00, 0x00, 0x99, 0xe9,
		0xd8, 0x51 },
	    13 },
};

/*
 * An index of no lines, compressed or not, reads as empty whatever the
 * format: Debian publishes such files (bookworm-security's 20-byte
 * Contents-amd64.gz).  libarchive's raw reader calls them "Unrecognized
 * archive format".
 */
static void
test_empty(void)
{
	struct seen s;
	char path[PATH_MAX], cmd[PATH_MAX * 2 + 64], err[ERRLEN], what[128];
	size_t i;
	FILE *fp;

	for (i = 0; i < sizeof(empties) / sizeof(empties[0]); i++) {
		snprintf(path, sizeof(path), "%s", at("empty."));
		strncat(path, empties[i].name, sizeof(path) - strlen(path) - 1);
		if ((fp = fopen(path, "wb")) == NULL ||
		    fwrite(empties[i].bytes, 1, empties[i].len, fp) !=
			empties[i].len ||
		    fclose(fp) != 0)
			abort();
		memset(&s, 0, sizeof(s));
		err[0] = '\0';
		snprintf(what, sizeof(what),
		    "an empty Packages (%s): no stanzas", empties[i].name);
		if (!ok(repometa_packages(path, packages_cb, &s, err,
			    sizeof(err)) == 0 &&
			    s.n == 0,
			what))
			printf("#   %s\n", err);
		snprintf(what, sizeof(what), "... Contents (%s): no lines",
		    empties[i].name);
		ok(repometa_contents(path, contents_cb, &s, err, sizeof(err)) ==
			    0 &&
			s.n == 0,
		    what);
		snprintf(what, sizeof(what),
		    "... primary.xml (%s): no packages", empties[i].name);
		ok(repometa_rpm_primary(path, primary_cb, &s, err,
		       sizeof(err)) == 0 &&
			s.n == 0,
		    what);
		snprintf(what, sizeof(what), "... filelists.xml (%s): no files",
		    empties[i].name);
		ok(repometa_rpm_filelists(path, filelists_cb, &s, err,
		       sizeof(err)) == 0 &&
			s.n == 0,
		    what);
		snprintf(what, sizeof(what), "... .files (%s): no packages",
		    empties[i].name);
		ok(repometa_arch_files(path, arch_desc_cb, arch_file_cb, &s,
		       err, sizeof(err)) == 0 &&
			s.n == 0,
		    what);
	}
	/* What repo-add leaves of a database whose last package went. */
	snprintf(cmd, sizeof(cmd), "tar -czf '%s' -T /dev/null",
	    at("none.files"));
	memset(&s, 0, sizeof(s));
	ok(system(cmd) == 0 &&
		repometa_arch_files(at("none.files"), arch_desc_cb,
		    arch_file_cb, &s, err, sizeof(err)) == 0 &&
		s.n == 0,
	    "a .files database that is a tar of nothing: no packages");
	write_file(at("empty-meta.xml"),
	    "<?xml version=\"1.0\"?>\n<metadata packages=\"0\"/>\n");
	ok(repometa_rpm_primary(at("empty-meta.xml"), primary_cb, &s, err,
	       sizeof(err)) == 0 &&
		s.n == 0,
	    "a primary.xml of no packages (createrepo_c's)");
	/* Still an error: a stream cut short, even of an empty file. */
	if ((fp = fopen(at("cut.gz"), "wb")) == NULL ||
	    fwrite(empties[1].bytes, 1, 12, fp) != 12 || fclose(fp) != 0)
		abort();
	ok(repometa_contents(at("cut.gz"), contents_cb, &s, err, sizeof(err)) ==
		-1,
	    "an empty gzip cut short is an error");
}

/* An armored block of the bytes 0x90..0xc1, with its CRC-24 line crc. */
#define ARMOR(crc) \
	"-----BEGIN PGP PUBLIC KEY BLOCK-----\nComment: test\n\n" \
	"kJGSk5SVlpeYmZqbnJ2en6ChoqOkpaanqKmqq6ytrq+wsbKztLW2t7i5uru8vb6/\n" \
	"wME=\n" crc "\n-----END PGP PUBLIC KEY BLOCK-----\n"

static void
test_dearmor(void)
{
	unsigned char want[50], got[64];
	char err[ERRLEN];
	size_t i, n = 0;
	FILE *fp;

	for (i = 0; i < sizeof(want); i++)
		want[i] = (unsigned char)(0x90 + i);
	write_file(at("good.asc"), "\n" ARMOR("=b9uF"));
	err[0] = '\0';
	ok(repometa_dearmor(at("good.asc"), at("good.gpg"), err, sizeof(err)) ==
		0,
	    "an armored key decodes");
	if ((fp = fopen(at("good.gpg"), "rb")) != NULL) {
		n = fread(got, 1, sizeof(got), fp);
		fclose(fp);
	}
	ok(n == sizeof(want) && memcmp(got, want, n) == 0,
	    "... into its binary bytes");
	write_file(at("two.asc"), ARMOR("=b9uF") ARMOR("=b9uF"));
	ok(repometa_dearmor(at("two.asc"), at("two.gpg"), err, sizeof(err)) ==
		0,
	    "two blocks, one after the other");
	write_file(at("nocrc.asc"), ARMOR(""));
	ok(repometa_dearmor(at("nocrc.asc"), at("nocrc.gpg"), err,
	       sizeof(err)) == 0,
	    "a block without its (optional) CRC line");
	write_file(at("badcrc.asc"), ARMOR("=b9uG"));
	ok(repometa_dearmor(at("badcrc.asc"), at("badcrc.gpg"), err,
	       sizeof(err)) == -1,
	    "a bad CRC-24 is refused");
	ok(strstr(err, "CRC-24") != NULL, "... saying so");
	ok(access(at("badcrc.gpg"), F_OK) == -1, "... leaving no keyring");
	write_file(at("cut.asc"),
	    "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n"
	    "kJGSk5SVlpeYmZqbnJ2en6ChoqOkpaanqKmqq6ytrq+wsbKztLW2t7i5uru8vb6/"
	    "\n");
	ok(repometa_dearmor(at("cut.asc"), at("cut.gpg"), err, sizeof(err)) ==
		-1,
	    "a truncated armored key is refused");
	ok(strstr(err, "cut short") != NULL, "... saying so");
	write_file(at("bad64.asc"),
	    "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nkJG*k5SV\n=b9uF\n"
	    "-----END PGP PUBLIC KEY BLOCK-----\n");
	ok(repometa_dearmor(at("bad64.asc"), at("bad64.gpg"), err,
	       sizeof(err)) == -1,
	    "bad base64 is refused");
	write_file(at("bin.gpg"), "\x99\x01\x0d binary keyring");
	ok(repometa_dearmor(at("bin.gpg"), at("bin.out"), err, sizeof(err)) ==
		1,
	    "a binary keyring is left as it is");
	ok(access(at("bin.out"), F_OK) == -1, "... nothing written");
}

static int
has_kind(struct index_reader *rd, const uint8_t *key, const char *hex,
    enum repoidx_kind kind, struct repoidx_pkg *p)
{
	struct buildid id;
	const char *why;
	int rc;

	buildid_parse(&id, hex, strlen(hex), &why);
	if (index_reader_begin(rd) == -1)
		return -1;
	rc = repoidx_find(rd, key, &id, kind, p);
	index_reader_end(rd);
	return rc;
}

static int
has(struct index_reader *rd, const uint8_t *key, const char *hex,
    struct repoidx_pkg *p)
{
	return has_kind(rd, key, hex, REPOIDX_DEBUGINFO, p);
}

static void
test_generations(struct index *idx, struct index_reader *rd)
{
	uint8_t key[REPOIDX_KEY_LEN], sha[32] = { 1, 2, 3 };
	uint8_t digest[REPOIDX_DIGEST_LEN] = { 9, 8, 7 };
	struct repoidx_writer *w;
	struct repoidx_state st;
	struct repoidx_pkg p;
	struct buildid id1, id2;
	const char *why;
	struct cache_key ck;
	struct neg_entry ne;
	char err[ERRLEN];

	buildid_parse(&id1, ID1, 40, &why);
	buildid_parse(&id2, ID2, 40, &why);
	repoidx_key("deb http://x stable main", key);
	is_int(has(rd, key, ID1, &p), INDEX_NOTFOUND,
	    "nothing before a refresh");

	ok(repoidx_note_start(idx, key, 900, err, sizeof(err)) == 0,
	    "a first refresh begins");
	index_reader_begin(rd);
	ok(repoidx_state(rd, key, &st) == 0 && st.gen == 0 && st.running == 900,
	    "... the state says it runs, before any generation");
	index_reader_end(rd);
	w = repoidx_writer_new(idx, key, err, sizeof(err));
	ok(w != NULL, "a writer");
	ok(repoidx_put_pkg(w, "amd64/a", "pool/a.deb", 42, sha) == 0,
	    "a package");
	ok(repoidx_has_pkg(w, "amd64/a") == 1 &&
		repoidx_has_pkg(w, "amd64/b") == 0,
	    "the writer knows its packages");
	ok(repoidx_put_id(w, &id1, REPOIDX_DEBUGINFO, "amd64/a", 0) == 0,
	    "an id");
	ok(repoidx_put_id(w, &id1, REPOIDX_DEBUGINFO, "amd64/z", 1) == 0,
	    "the same id, kept");
	is_int(has(rd, key, ID1, &p), INDEX_NOTFOUND,
	    "a reader does not see the new generation before the flip");
	ok(repoidx_writer_commit(w, 1000, digest, err, sizeof(err)) == 0,
	    "the flip");
	ok(has(rd, key, ID1, &p) == 0 && p.size == 42 && p.name_len == 7 &&
		p.file_len == 10 && memcmp(p.file, "pool/a.deb", 10) == 0 &&
		p.sha256[2] == 3,
	    "the id now names its package, size and SHA256");
	index_reader_begin(rd);
	ok(repoidx_state(rd, key, &st) == 0 && st.gen == 1 && st.ids == 1 &&
		st.pkgs == 1 && st.refreshed == 1000,
	    "the state: generation 1, 1 id, 1 package, when");
	ok(st.pkgs_with_ids == 1 && st.running == 0 && st.checked == 0 &&
		memcmp(st.digest, digest, sizeof(digest)) == 0,
	    "... 1 package with ids, the refresh ended, its digest");
	index_reader_end(rd);
	ok(repoidx_note_start(idx, key, 1100, err, sizeof(err)) == 0 &&
		repoidx_note_unchanged(idx, key, 1200, err, sizeof(err)) == 0,
	    "a refresh that found nothing changed");
	index_reader_begin(rd);
	ok(repoidx_state(rd, key, &st) == 0 && st.gen == 1 &&
		st.refreshed == 1000 && st.checked == 1200 && st.running == 0 &&
		st.ids == 1 && memcmp(st.digest, digest, sizeof(digest)) == 0,
	    "... the same generation, checked then, not running");
	index_reader_end(rd);

	/* A negative entry for id2, which the next generation brings. */
	cache_key_make(&ck, &id2, CACHE_DEBUGINFO, "");
	ok(neg_put(idx, &ck, &id2, NEG_NOTFOUND, 5000, err, sizeof(err)) == 0,
	    "a negative entry for a new id");
	w = repoidx_writer_new(idx, key, err, sizeof(err));
	repoidx_put_pkg(w, "amd64/b", "pool/b.deb", 7, sha);
	repoidx_put_pkg(w, "x86_64/e", "Packages/e.rpm", 11, sha);
	repoidx_put_pkg(w, "x86_64/e-debuginfo", "Packages/e-dbg.rpm", 12, sha);
	repoidx_put_id(w, &id2, REPOIDX_DEBUGINFO, "amd64/b", 0);
	ok(repoidx_put_id(w, &id2, REPOIDX_EXECUTABLE, "x86_64/e", 1) == 0 &&
		repoidx_put_id(w, &id2, REPOIDX_EXECUTABLE_WEAK,
		    "x86_64/e-debuginfo", 1) == 0,
	    "the same id as an executable, by both kinds of link");
	ok(repoidx_put_id(w, &id2, REPOIDX_EXECUTABLE, "x86_64/z", 1) == 0,
	    "... once more as an executable, kept");
	ok(repoidx_writer_commit(w, 2000, digest, err, sizeof(err)) == 0,
	    "a second generation without package a");
	ok(has_kind(rd, key, ID2, REPOIDX_EXECUTABLE, &p) == 0 && p.size == 11,
	    "an id names its executable's package");
	ok(has_kind(rd, key, ID2, REPOIDX_EXECUTABLE_WEAK, &p) == 0 &&
		p.size == 12,
	    "... and the package of its debug link, apart");
	is_int(has_kind(rd, key, ID1, REPOIDX_EXECUTABLE, &p), INDEX_NOTFOUND,
	    "an id not known as an executable is none");
	is_int(has(rd, key, ID1, &p), INDEX_NOTFOUND,
	    "the removed package's id is forgotten");
	ok(has(rd, key, ID2, &p) == 0 && p.size == 7, "the new one is there");
	index_reader_begin(rd);
	is_int(neg_get(rd, &ck, 100, &ne), INDEX_NOTFOUND,
	    "the new id's negative entry is gone");
	ok(repoidx_state(rd, key, &st) == 0 && st.gen == 2 && st.ids == 3,
	    "generation 2: one id, of three kinds");
	is_int(st.pkgs_with_ids, 3, "... in three packages");
	index_reader_end(rd);

	w = repoidx_writer_new(idx, key, err, sizeof(err));
	repoidx_put_pkg(w, "amd64/c", "pool/c.deb", 9, sha);
	repoidx_writer_abort(w);
	ok(has(rd, key, ID2, &p) == 0 && p.size == 7,
	    "an aborted refresh leaves the current generation");

	ok(repoidx_note_start(idx, key, 2900, err, sizeof(err)) == 0 &&
		repoidx_note_error(idx, key, 3000, "BADSIG", err,
		    sizeof(err)) == 0 &&
		repoidx_note_error(idx, key, 3001, "again", err, sizeof(err)) ==
		    0,
	    "two failed refreshes noted");
	{
		struct repoidx_error er;

		index_reader_begin(rd);
		ok(repoidx_get_error(rd, key, &er) == 0 && er.count == 2 &&
			er.when == 3001 && strcmp(er.why, "again") == 0,
		    "the last one and the count read back");
		ok(repoidx_state(rd, key, &st) == 0 && st.running == 0,
		    "... a failure ends the refresh running");
		index_reader_end(rd);
	}
}

int
main(void)
{
	struct index *idx;
	struct index_reader *rd;
	char err[ERRLEN];

	if (!ok(testdir_make("test_repoidx") == 0, "a temporary directory"))
		return tap_done();
	if (chdir(tmpdir) == -1)
		return tap_done();
	test_release();
	test_packages();
	test_compressed();
	test_contents();
	test_rpm();
	test_arch();
	test_empty();
	test_dearmor();
	idx = index_open(at("index"), 0, 64ull << 20, err, sizeof(err));
	if (ok(idx != NULL, "an index") &&
	    (rd = index_reader_new(idx)) != NULL) {
		test_generations(idx, rd);
		index_reader_free(rd);
	}
	index_close(idx);
	testdir_remove();
	return tap_done();
}
