/*
 * indexer/repometa.h: read the metadata of remote distro repositories.
 *
 * Debian: the Release file (its SHA256 list and Valid-Until), Packages
 * stanzas (Package, Architecture, Filename, Size, SHA256, Build-Ids) and
 * Contents-ARCH lines naming usr/lib/debug/.build-id/ files.  RPM:
 * repomd.xml, primary.xml and filelists.xml, through expat's streaming
 * parser (text of an element kept to REPOMETA_TEXT_MAX bytes).  Arch: the
 * .files database, a tar read with libarchive.  Files may be
 * compressed (gzip, xz, bzip2, zstd: told by content) and are read as a
 * stream, a line at a time, with lines of at most REPOMETA_LINE_MAX bytes:
 * memory stays bounded whatever the index's size.  A file with nothing in
 * it, compressed or not (archives publish valid empty gzip, xz, bzip2 and
 * zstd streams), reads as empty: no lines, no packages.  Input is hostile:
 * bad lines and fields are skipped, a line too long is an error.
 * Blocking; for worker threads.
 */
#ifndef INDEXER_REPOMETA_H
#define INDEXER_REPOMETA_H

#include <stddef.h>
#include <stdint.h>

#include "indexer/buildid.h"

#define REPOMETA_LINE_MAX (4u << 20)

/* An index file Release lists, with its size and SHA-256 in hex. */
struct repometa_entry {
	const char *name; /* relative to dists/SUITE/ */
	uint64_t size;
	const char *sha256; /* 64 hex digits */
};

/*
 * Read the Release file at path: cb for each entry of its SHA256 field
 * (until cb returns non-zero), *valid_until its Valid-Until (0: none).
 * 0, or -1 with err.
 */
int repometa_release(const char *path,
    int (*cb)(const struct repometa_entry *e, void *arg), void *arg,
    int64_t *valid_until, char *err, size_t errlen);

/* One stanza of a Packages file; strings live during the callback. */
struct repometa_deb {
	const char *package;
	const char *arch;
	const char *filename;
	uint64_t size;
	uint8_t sha256[32];
	const char *build_ids; /* blank-separated hex ids; "" when none */
};

/*
 * Read the Packages file at path: cb for each complete stanza (one with
 * Package, Filename, Size and SHA256) until cb returns non-zero.  0, or -1
 * with err (also when cb stopped it with -1).
 */
int repometa_packages(const char *path,
    int (*cb)(const struct repometa_deb *d, void *arg), void *arg, char *err,
    size_t errlen);

/*
 * Read the Contents file at path: cb(id, packages) for each line naming
 * usr/lib/debug/.build-id/xx/rest.debug, where packages is the line's
 * comma-separated "[section/]package" list.  Returns like
 * repometa_packages.
 */
int repometa_contents(const char *path,
    int (*cb)(const struct buildid *id, const char *packages, void *arg),
    void *arg, char *err, size_t errlen);

#define REPOMETA_TEXT_MAX 4096

/* A <data> of repomd.xml: the file of one kind of metadata. */
struct repometa_rpmdata {
	const char *type; /* "primary", "filelists"... */
	const char *href; /* relative to the repository URL */
	const char *sha256; /* of the file as fetched; "" when not SHA-256 */
	uint64_t size; /* 0 when not given */
};

/* Read repomd.xml at path: cb for each <data>.  Returns like below. */
int repometa_repomd(const char *path,
    int (*cb)(const struct repometa_rpmdata *d, void *arg), void *arg,
    char *err, size_t errlen);

/* A <package> of primary.xml. */
struct repometa_rpm {
	const char *pkgid; /* its checksum, hex: filelists' pkgid */
	const char *href; /* relative to the repository URL */
	uint64_t size; /* <size package=> */
	uint8_t sha256[32];
	int has_sha256; /* the checksum is a SHA-256 */
};

/*
 * Read primary.xml (compressed or not) at path: cb for each package with
 * a checksum, a location and a size.  0, or -1 with err.
 */
int repometa_rpm_primary(const char *path,
    int (*cb)(const struct repometa_rpm *p, void *arg), void *arg, char *err,
    size_t errlen);

/*
 * Read filelists.xml at path: cb(pkgid, id, kind) for each .build-id file
 * of a package that repometa_buildid_path() names (kind its result).
 */
int repometa_rpm_filelists(const char *path,
    int (*cb)(const char *pkgid, const struct buildid *id, int kind, void *arg),
    void *arg, char *err, size_t errlen);

/* A package of an Arch .files database, from its desc entry. */
struct repometa_arch {
	const char *dir; /* the entry's directory: NAME-VERSION-RELEASE */
	const char *filename; /* %FILENAME%, relative to the repository */
	uint64_t size; /* %CSIZE% */
	uint8_t sha256[32]; /* %SHA256SUM% */
};

/*
 * Read an Arch .files database at path (a tar, compressed or not, of
 * DIR/desc and DIR/files entries): desc(p) for each package with a file
 * name, size and SHA-256, file(dir, id, kind) for each .build-id file its
 * files entry lists (as repometa_buildid_path() names them), in the
 * order of the tar.  Returns like repometa_packages.
 */
int repometa_arch_files(const char *path,
    int (*desc)(const struct repometa_arch *p, void *arg),
    int (*file)(const char *dir, const struct buildid *id, int kind, void *arg),
    void *arg, char *err, size_t errlen);

/*
 * An OpenPGP key file as apt takes it for signed-by= (and dnf for gpgkey=):
 * binary, or ASCII-armored ("-----BEGIN PGP PUBLIC KEY BLOCK-----", armor
 * headers, a blank line, base64, an "=" line with the CRC-24, the END
 * line; several blocks may follow each other).  An armored file at in is
 * decoded into the binary keyring out, every block's CRC-24 checked when
 * given: 0.  1 when in is not armored (nothing written: use it as it is);
 * -1 with err when it is armored but broken (bad base64 or CRC, cut short).
 */
int repometa_dearmor(const char *in, const char *out, char *err, size_t errlen);

/*
 * What a .build-id path says of its id.  Debug files are
 * usr/lib/debug/.build-id/xx/rest.debug.  Executables (and shared
 * libraries) are named by usr/lib/.build-id/xx/rest, the link binary rpms
 * ship beside the ELF file, and, more weakly, by the suffix-less
 * usr/lib/debug/.build-id/xx/rest of debug packages: Fedora's points into
 * the binary package, so its package usually lacks the executable.
 */
enum repometa_kind {
	REPOMETA_DEBUGINFO,
	REPOMETA_EXECUTABLE, /* usr/lib/.build-id/xx/rest */
	REPOMETA_EXECUTABLE_WEAK, /* usr/lib/debug/.build-id/xx/rest */
};

/*
 * The id and kind of path (relative: "usr/lib/..."), or -1 when it is no
 * such name (other suffixes such as Fedora's ".1" duplicates included).
 */
int repometa_buildid_path(const char *path, struct buildid *id);

/* 0 and out from 64 hex digits, else -1. */
int repometa_sha256_parse(const char *hex, size_t len, uint8_t out[32]);

#endif /* INDEXER_REPOMETA_H */
