/*
 * cache/pathindex.h: every path the server knows an ELF file by, for
 * /metadata.
 *
 * An entry is one path of one origin: a local file under scan-dir, a
 * member of an indexed package (the package is its archive), or the
 * X-DEBUGINFOD-FILE of an upstream's answer kept in the cache (with its
 * X-DEBUGINFOD-ARCHIVE, if any).  Its kinds say what it serves (an
 * unstripped binary is both debuginfo and executable) under its build-id.
 * The index keeps entries by directory and base name, so that an exact
 * path and a glob whose directory part is literal read only their
 * directory, a glob with a literal start of the base name reads only the
 * base names that start so, and a glob of directories reads only the
 * directories that match; and by build-id.
 *
 * cache/files.c keeps local files' entries in step with the files table,
 * cache/pkgindex.c members' with the packages, cache/blobstore.c
 * upstream answers' with the blobs; all inside the caller's batch.
 */
#ifndef CACHE_PATHINDEX_H
#define CACHE_PATHINDEX_H

#include <stdint.h>

#include "indexer/buildid.h"

struct index_batch;
struct index_reader;

enum pathidx_origin {
	PATHIDX_LOCAL = 1,
	PATHIDX_PACKAGE = 2,
	PATHIDX_UPSTREAM = 3,
};

/* One entry; strings handed out point into the map (valid until the
 * reader ends). */
struct pathidx_entry {
	const char *path; /* absolute: a file, a member, X-DEBUGINFOD-FILE */
	const char *archive; /* the package, X-DEBUGINFOD-ARCHIVE, or "" */
	unsigned kinds; /* ELF_KIND_DEBUGINFO | ELF_KIND_EXECUTABLE */
	struct buildid id;
	enum pathidx_origin origin;
};

/*
 * Add or replace e (the same path, origin and archive; for upstream
 * answers the same id and kinds).  An entry that cannot be indexed (a
 * path that is not absolute or too long, no id, no kind) is left out: 0.
 */
int pathidx_put(struct index_batch *b, const struct pathidx_entry *e);
/* Drop the entry of (origin, path, archive): 0, INDEX_NOTFOUND, or -1. */
int pathidx_del(struct index_batch *b, enum pathidx_origin origin,
    const char *path, const char *archive);
/* Drop the upstream answers' entries of (id, kind). */
int pathidx_del_upstream(struct index_batch *b, const struct buildid *id,
    unsigned kind);

enum pathidx_query {
	PATHIDX_FILE, /* value is an exact path */
	PATHIDX_GLOB, /* fnmatch(value, path, FNM_PATHNAME) */
	PATHIDX_BUILDID, /* id */
};

/* What pathidx_find returns besides 0, the callback's stop and -1. */
#define PATHIDX_TIMEOUT (-2)

/*
 * Call cb for each entry that answers the query, until cb returns
 * non-zero (which is returned).  0 when every entry was visited;
 * PATHIDX_TIMEOUT when now_ns() passed deadline_ns first (read now and
 * then; deadline_ns 0: none, and now_ns may be NULL), -1 on error.
 */
int pathidx_find(struct index_reader *rd, enum pathidx_query q,
    const char *value, const struct buildid *id, int64_t deadline_ns,
    int64_t (*now_ns)(void),
    int (*cb)(const struct pathidx_entry *e, void *arg), void *arg);

#endif /* CACHE_PATHINDEX_H */
