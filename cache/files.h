/*
 * cache/files.h: the index's records of local files (the files under
 * scan-dir), by path and by (build-id, kind).
 *
 * Lookups by (build-id, kind) may find several files (the same build-id
 * under several paths); callers try them in order.  The path index
 * (cache/pathindex.h) is kept in step with these records inside the same
 * batch.  Threads: as cache/index.h says for readers and batches.
 */
#ifndef CACHE_FILES_H
#define CACHE_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "cache/filerec.h"
#include "cache/index.h"
#include "indexer/buildid.h"
#include "indexer/elf.h"

struct index_stats {
	uint64_t files; /* records, servable or not */
	uint64_t debuginfo; /* build-ids with a debuginfo */
	uint64_t executable; /* build-ids with an executable */
	uint64_t bytes; /* total size of servable files */
	struct index_scan scan;
};

/*
 * Call cb for each file indexed as (id, kind) until cb returns non-zero.
 * Returns what cb returned when it stopped the walk, 0 when every file was
 * visited (none at all included), -1 on error.
 */
typedef int (*index_file_cb)(const struct index_file *file, void *arg);
int index_find(struct index_reader *rd, const struct buildid *id,
    enum elf_kind kind, index_file_cb cb, void *arg);

/* The record of path, or INDEX_NOTFOUND. */
int index_get_file(struct index_reader *rd, const char *path,
    struct index_file *out);

/* Call cb for every file record until cb returns non-zero. */
int index_foreach_file(struct index_reader *rd, index_file_cb cb, void *arg);

/* The counts of the records, and the scan's record (index_get_scan). */
int index_stats(struct index_reader *rd, struct index_stats *st);

/* Add or replace the record for file->path. */
int index_batch_put_file(struct index_batch *b, const struct index_file *f);
/* Drop the record for path; INDEX_NOTFOUND when there is none. */
int index_batch_del_file(struct index_batch *b, const char *path);
/* Drop every record for which keep() returns 0; count them in *removed. */
int index_batch_prune(struct index_batch *b,
    int (*keep)(const char *path, void *arg), void *arg, uint64_t *removed);

#endif /* CACHE_FILES_H */
