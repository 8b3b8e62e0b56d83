/*
 * cache/index.h: the LMDB index of everything the server can serve: the
 * environment, its transactions, and the raw records of its tables.
 *
 * One environment per cache directory, shared by every thread of the daemon
 * and by the admin CLI in other processes.  Readers are cheap reusable read
 * transactions, one per thread; writers batch many changes into one write
 * transaction.  The modules of cache/ lay out the records of their tables
 * on top of this: local files (cache/files.h), blobs, negative entries,
 * packages, missing ids, paths, repositories.
 */
#ifndef CACHE_INDEX_H
#define CACHE_INDEX_H

#include <stddef.h>
#include <stdint.h>

/* Bumped whenever the record layout changes; an old index is rebuilt. */
#define INDEX_SCHEMA_VERSION 8

/* index_open() flags. */
#define INDEX_RDONLY 0x1
/* Writable, but refuse (like INDEX_RDONLY) an index that is missing or of
 * another schema instead of creating or emptying it: for the admin CLI. */
#define INDEX_EXISTING 0x2

/* Result besides 0 and -1: what was asked for is not there. */
#define INDEX_NOTFOUND 1

struct index;
struct index_reader;
struct index_batch;

/*
 * What the current or last scan did, as the scanner recorded it with each
 * batch it committed: the counts are so far while it runs.  Times are unix
 * seconds of the daemon's clock.
 */
struct index_scan {
	int64_t started;
	int64_t finished; /* 0 while a scan runs */
	uint64_t seen; /* files walked */
	uint64_t read; /* files whose ELF headers were read */
	uint64_t removed; /* records dropped */
	uint64_t failed; /* unreadable or malformed files and packages */
	uint64_t packages; /* packages read */
	uint64_t members; /* member records written for them */
	uint64_t queued; /* files new or changed, to be read */
	uint64_t pkg_seen; /* package files walked */
	uint64_t pkg_queued; /* packages new or changed, to be read */
	/* The last scan that ended (this one, once it has); 0: none yet. */
	int64_t ended;
	uint64_t ended_ms; /* how long it took */
	uint32_t outcome; /* how it ended: INDEX_SCAN_* */
	uint32_t unused;
};
#define INDEX_SCAN_DONE 0
#define INDEX_SCAN_CANCELLED 1 /* the daemon stopped */
#define INDEX_SCAN_FAILED 2 /* the index could not be written */

/*
 * Open (creating when writable) the index in dir.  mapsize is the largest
 * the index may grow.  An index of another schema version is emptied when
 * opened writable and refused when read-only.
 */
struct index *index_open(const char *dir, unsigned flags, uint64_t mapsize,
    char *err, size_t errlen);
void index_close(struct index *idx);

struct index_reader *index_reader_new(struct index *idx);
void index_reader_free(struct index_reader *rd);
/* Take a fresh snapshot; every lookup happens between begin and end. */
int index_reader_begin(struct index_reader *rd);
void index_reader_end(struct index_reader *rd);

/* The scan's record (index_batch_set_scan); zeros when none. */
int index_get_scan(struct index_reader *rd, struct index_scan *sc);

/*
 * A write transaction.  Only one is open at a time in the whole
 * environment; begin waits for the current writer.  A batch must be
 * committed or aborted by the thread that began it.
 */
struct index_batch *index_batch_begin(struct index *idx, char *err,
    size_t errlen);
/* Replace the scan's record. */
int index_batch_set_scan(struct index_batch *b, const struct index_scan *s);
/*
 * Commit (or, after a failed operation, abort) and free b.  0, or -1 with
 * err and errno: ENOSPC when the map is full, else EIO.
 */
int index_batch_commit(struct index_batch *b, char *err, size_t errlen);
void index_batch_abort(struct index_batch *b);

/*
 * The cache's tables.  Keys are byte strings of 1 to INDEX_KEY_MAX bytes,
 * kept in memcmp order; values are bytes that the owning module encodes
 * and must check when it reads them back (the index does not).
 */
enum index_table {
	INDEX_BLOBS, /* cache key -> blob record */
	INDEX_LRU, /* atime, stored, cache key -> nothing */
	INDEX_NEG, /* cache key -> negative entry */
	INDEX_NEG_EXPIRY, /* expiry time, cache key -> nothing */
	INDEX_PKGS, /* path key of a package -> package record */
	INDEX_MEMBERS, /* cache key of (id, kind), package path key -> member */
	INDEX_PKG_MEMBERS, /* package path key, cache key -> nothing */
	INDEX_MISSES, /* build-id -> missing-id record */
	INDEX_MISS_RANK, /* count, last seen, id hash -> build-id */
	INDEX_PATHS, /* paths by directory, base name, id (cache/pathindex.c) */
	INDEX_REPO, /* remote repositories' ids and packages (cache/repoidx.c) */
};
#define INDEX_KEY_MAX 400

/* The key of a path in the files table and in INDEX_PKGS: its SHA-256. */
#define INDEX_PATHKEY_LEN 32
void index_path_key(const char *path, uint8_t key[INDEX_PATHKEY_LEN]);

/* A record handed out: both point into the map, valid until the reader
 * ends or the batch changes that table. */
struct index_rec {
	const void *key;
	size_t keylen;
	const void *val;
	size_t vallen;
};

/* What a walk callback returns besides 0 (go on) and anything else (stop,
 * and the walk returns it): delete this record, then go on. */
#define INDEX_WALK_DELETE (-2)
typedef int (*index_rec_cb)(const struct index_rec *rec, void *arg);

/* 0 and *out, INDEX_NOTFOUND, or -1. */
int index_get_rec(struct index_reader *rd, enum index_table t, const void *key,
    size_t keylen, struct index_rec *out);
/* The records of t whose key starts with the len bytes at prefix (all of
 * them when len is 0), in key order, found without reading the others,
 * until cb stops; cb must not return INDEX_WALK_DELETE on a reader.  0
 * when every record was visited. */
int index_walk_prefix(struct index_reader *rd, enum index_table t,
    const void *prefix, size_t len, index_rec_cb cb, void *arg);
/* Every record of t, last key first, until cb stops (never deleting). */
int index_walk_back(struct index_reader *rd, enum index_table t,
    index_rec_cb cb, void *arg);
int index_count(struct index_reader *rd, enum index_table t, uint64_t *n);
/*
 * Bytes of the map that the index's trees hold (pages freed by deletions
 * are room again) and the map's size.  Any thread; a read transaction.
 */
int index_usage(struct index *idx, uint64_t *used, uint64_t *size);
/*
 * A uint64 kept under name in the meta table: 0, or INDEX_NOTFOUND (and
 * *v = 0) when never set, or -1.
 */
int index_get_counter(struct index_reader *rd, const char *name, uint64_t *v);

/* The same inside a write transaction.  A walk's callback may change other
 * tables of the batch, but t only by returning INDEX_WALK_DELETE. */
int index_batch_get_rec(struct index_batch *b, enum index_table t,
    const void *key, size_t keylen, struct index_rec *out);
int index_batch_walk(struct index_batch *b, enum index_table t, index_rec_cb cb,
    void *arg);
int index_batch_count(struct index_batch *b, enum index_table t, uint64_t *n);

/*
 * A sweep: step(b, limit, counted, arg) deletes at most limit records in
 * batch b, returns how many it deleted and adds to counted[0..nn-1] what
 * the caller counts (entries, bytes...; a failed operation is kept by the
 * batch and fails its commit).  index_sweep runs it in one write
 * transaction after another until a step deletes fewer than its limit;
 * LMDB copies every page it changes, so when a transaction fails for want
 * of free pages (a full map) the step is run again with half the limit,
 * down to one, and each commit frees pages for the next.  n[0..nn-1] =
 * what the committed steps counted, nn at most INDEX_SWEEP_COUNTS.  0, or
 * -1 with err.
 */
#define INDEX_SWEEP_COUNTS 2
typedef unsigned (*index_sweep_fn)(struct index_batch *b, unsigned limit,
    uint64_t *counted, void *arg);
int index_sweep(struct index *idx, index_sweep_fn step, void *arg, uint64_t *n,
    size_t nn, char *err, size_t errlen);
int index_batch_walk_prefix(struct index_batch *b, enum index_table t,
    const void *prefix, size_t len, index_rec_cb cb, void *arg);
int index_batch_get_counter(struct index_batch *b, const char *name,
    uint64_t *v);
/* Add or replace the record of key; val is copied. */
int index_batch_put_rec(struct index_batch *b, enum index_table t,
    const void *key, size_t keylen, const void *val, size_t vallen);
/* 0, INDEX_NOTFOUND when there was none, or -1. */
int index_batch_del_rec(struct index_batch *b, enum index_table t,
    const void *key, size_t keylen);
int index_batch_set_counter(struct index_batch *b, const char *name,
    uint64_t v);

/* A time as 8 key bytes that sort as the times do, and back. */
#define INDEX_TIME_LEN 8
void index_time_encode(int64_t t, uint8_t out[INDEX_TIME_LEN]);
int64_t index_time_decode(const uint8_t in[INDEX_TIME_LEN]);

#endif /* CACHE_INDEX_H */
