/*
 * cache/pkgindex.h: the members of distribution packages, in the index,
 * and the source files the DWARF of local files names.
 *
 * A package file is known by its path, with the size, mtime, inode and
 * device it had when read (struct index_file, so that scan_unchanged()
 * tells a changed package the way it tells a changed file).  Its servable
 * members are recorded under (build-id, kind): one record per kind bit a
 * member has, so a lookup finds them by key prefix without reading the
 * rest.  Writers replace a package with all its members in one call, inside
 * the caller's batch; readers get records that point into the map, valid
 * until the reader ends.  Stored records are checked when read back: a
 * damaged or hostile one is skipped, never handed out.
 *
 * A local file indexed under scan-dir owns records of the same shape, one
 * per source file its DWARF names (PKG_REC_LOCAL, the file in the place
 * of the package): they are replaced with it by the scan and dropped with
 * its record (cache/index.c); a package's records and a local file's
 * never touch each other's, even under one path.
 */
#ifndef CACHE_PKGINDEX_H
#define CACHE_PKGINDEX_H

#include <stddef.h>
#include <stdint.h>

#include "cache/filerec.h"
#include "cache/index.h"
#include "indexer/buildid.h"
#include "indexer/elf.h"

/*
 * What pkg_rec.kinds may say besides ELF_KIND_*, for /source: the package
 * ships a regular file at member (no id), or a debuginfo member of the
 * package with build-id id names the source file member (which some
 * package, maybe another, ships).
 */
#define PKG_REC_FILE 0x10
#define PKG_REC_SOURCE 0x20
/* A local file (package) of build-id id names the source file member. */
#define PKG_REC_LOCAL 0x40

/* One servable member of a package, or one of the records above. */
struct pkg_rec {
	const char *package; /* absolute path of the package file */
	const char *member; /* normalised absolute path inside it */
	uint64_t size;
	int64_t mtime;
	unsigned kinds; /* ELF_KIND_*, or one PKG_REC_* */
	struct buildid id;
};

/*
 * Decode the stored records of a package (INDEX_PKGS) and of a member
 * (INDEX_MEMBERS), as read from the index: 0 with *out pointing into r, or
 * -1 for a record that is damaged (lengths, NULs, a path that is not
 * absolute, an id too long, kinds that do not go with it) or whose key has
 * the wrong length.  r may be anything; nothing outside it is read.
 */
int pkgidx_package_decode(const struct index_rec *r, struct index_file *out);
int pkgidx_member_decode(const struct index_rec *r, struct pkg_rec *out);

/*
 * Call cb for each package that ships the source file path (canonical)
 * that a debuginfo of build-id id names; same returns as pkgidx_find.
 */
int pkgidx_find_source(struct index_reader *rd, const struct buildid *id,
    const char *path, int (*cb)(const struct pkg_rec *r, void *arg), void *arg);

/*
 * Record the n source files paths[] (canonical absolute paths) that the
 * DWARF of the local file at file, of build-id id, names, replacing
 * those recorded for file before (n 0: none left).  A path too long or
 * not absolute is left out.
 */
int pkgidx_put_local_sources(struct index_batch *b, const char *file,
    const struct buildid *id, char *const *paths, size_t n);
/* Drop the source records of the local file at file. */
int pkgidx_del_local_sources(struct index_batch *b, const char *file);

/*
 * Call cb for each local file of build-id id whose DWARF names the source
 * file path (canonical), as it was recorded: r->package being the local
 * file and r->member path, until cb returns non-zero.  Whether that file's
 * record (cache/files.h) still says id is the caller's to check.  Same
 * returns as pkgidx_find.
 */
int pkgidx_find_local_source(struct index_reader *rd, const struct buildid *id,
    const char *path, int (*cb)(const struct pkg_rec *r, void *arg), void *arg);

/*
 * Call cb for each package member indexed as (id, kind) until cb returns
 * non-zero.  Returns what cb returned when it stopped the walk, 0 when
 * every member was visited (none at all included), -1 on error.
 */
int pkgidx_find(struct index_reader *rd, const struct buildid *id,
    enum elf_kind kind, int (*cb)(const struct pkg_rec *r, void *arg),
    void *arg);

/*
 * Call cb for each servable (ELF) member of the package at path, until cb
 * returns non-zero; returns like pkgidx_find.
 */
int pkgidx_package_members(struct index_reader *rd, const char *path,
    int (*cb)(const struct pkg_rec *r, void *arg), void *arg);

/*
 * The record of the package at path, or INDEX_NOTFOUND.  kinds is the
 * union of its members' kinds (0 when none is servable); id is empty.
 */
int pkgidx_get_package(struct index_reader *rd, const char *path,
    struct index_file *out);

/*
 * Record the package pkg (path, size, mtime, inode, device) with its n
 * members, replacing whatever was recorded for pkg->path.  recs[i].package
 * is ignored.  A member is recorded once per kind bit it has; one without
 * a build-id or a kind, or with a path too long, is left out.  When two
 * members share an (id, kind), the last one is kept.
 */
int pkgidx_put(struct index_batch *b, const struct index_file *pkg,
    const struct pkg_rec *recs, size_t n);

/*
 * The packages indexed, and their servable members: one per ELF member
 * and kind (debuginfo, executable), without the source and file records.
 */
int pkgidx_count(struct index_reader *rd, uint64_t *packages,
    uint64_t *members);

/*
 * The packages indexed whose path is under the directory dir (a walk of
 * every package: for reports, not for a request).  0, or -1.
 */
int pkgidx_count_under(struct index_reader *rd, const char *dir,
    uint64_t *packages);

/*
 * Drop every package for which keep() returns 0, with its members, and
 * count the packages in *removed.  A damaged package record is dropped.
 * On an index that has no member count yet, this counts them.
 */
int pkgidx_prune(struct index_batch *b,
    int (*keep)(const char *path, void *arg), void *arg, uint64_t *removed);

#endif /* CACHE_PKGINDEX_H */
