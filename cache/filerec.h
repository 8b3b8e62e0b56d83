/*
 * cache/filerec.h: the record of a file as the index keeps it, and its
 * stored form: the files table's records (cache/files.h) and the packages'
 * (cache/pkgindex.h) are both made of it.  Pure functions, any thread.
 */
#ifndef CACHE_FILEREC_H
#define CACHE_FILEREC_H

#include <sys/stat.h>

#include <stddef.h>
#include <stdint.h>

#include "indexer/buildid.h"

/*
 * A local file the index knows.  kinds is 0 for an ELF file that has
 * nothing to serve (no build-id, or malformed): it is remembered so that
 * rescans skip it while it is unchanged.  sources is 1 when the source
 * files its DWARF names were recorded with it (cache/pkgindex.h), 0 when
 * a scan must read it again for them (a record made on the request path,
 * or by an older version).  In records handed out by the index, path
 * points into the map and is valid until the reader ends.
 */
struct index_file {
	const char *path;
	uint64_t size;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	uint64_t ino;
	uint64_t dev;
	unsigned kinds;
	unsigned sources;
	struct buildid id;
};

/* 1 when st still describes the file rec was made from. */
int index_file_unchanged(const struct index_file *rec, const struct stat *st);

/*
 * The stored form of a file record: size is its length, 0 when the path
 * or the id is too long to keep; encode writes it and returns its length,
 * 0 when it does not fit in cap or cannot be kept; decode returns -1 for a
 * damaged one, and f then points into val.
 */
size_t index_file_size(const struct index_file *f);
size_t index_file_encode(const struct index_file *f, void *buf, size_t cap);
int index_file_decode(const void *val, size_t len, struct index_file *f);

#endif /* CACHE_FILEREC_H */
