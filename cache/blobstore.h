/*
 * cache/blobstore.h: the files the cache holds, and their index entries.
 *
 * A blob is one cached answer (a debuginfo, an executable, a section, a
 * source file) stored as CACHE_DIR/blobs/<hex[0..2]>/<hex of its key>;
 * fills are written in CACHE_DIR/tmp/ and published by a rename followed by
 * the index commit, so an entry is absent or complete.  Uploads (PUT by
 * clients: never evicted, fetched from nowhere) live apart, in
 * UPLOAD_DIR/<hex[0..2]>/<hex of its key> through UPLOAD_DIR/tmp/, so that
 * clearing a cache directory never loses them; an upload whose entry is
 * gone (an index lost with its cache directory) is indexed again from its
 * file at recovery.  The index (one
 * LMDB environment, cache/index.h) keeps with each blob what a response
 * needs, the total of blob bytes, and a least-recently-used order that
 * eviction follows.  Upstream URLs are opaque strings here.
 *
 * Threads: blob_lookup takes the calling thread's reader (begun by the
 * caller); blob_open, blob_touch, blob_pin and blob_unpin are cheap and
 * safe on any thread, the event loops included.  Everything that writes
 * the index (publish, flush, evict, purge, recover) blocks on LMDB's single
 * writer and belongs on a worker or in the admin CLI.  Times are unix
 * seconds passed in by the caller.
 */
#ifndef CACHE_BLOBSTORE_H
#define CACHE_BLOBSTORE_H

#include <stddef.h>
#include <stdint.h>

#include "cache/key.h"
#include "cache/meta.h"

struct index;
struct index_reader;
struct blobstore;
struct index_rec;

struct blob_limits {
	uint64_t max_bytes; /* cap on blob bytes; 0 = none */
	unsigned high_pct; /* eviction starts above this % of max_bytes */
	unsigned low_pct; /* and removes LRU entries down to this % */
	unsigned min_free_pct; /* also evict while the fs has less free space */
	uint64_t upload_max_bytes; /* cap on uploaded blob bytes; 0 = none */
};

/*
 * What the index keeps with a blob.  Strings point into the LMDB map when
 * handed out by blob_lookup (valid until index_reader_end) and are
 * caller-owned when given to blob_publish.
 */
struct blob_info {
	uint64_t size;
	int64_t mtime; /* unix s, the Last-Modified to send */
	int64_t stored; /* unix s when published */
	int64_t atime; /* unix s of the last hit, as last flushed */
	struct buildid id;
	enum cache_kind kind;
	const char *arg; /* "" or section name / source path */
	/* Where it came from (an upstream's URL, a package...); may be "". */
	const char *source;
	/* What the answer said of its file (blob_publish: NULL strings ""). */
	struct cache_meta meta;
	/*
	 * blob_publish: an upstream's answer, whose meta.file (and archive)
	 * go in the path index (cache/pathindex.h).  Not stored.
	 */
	int upstream;
	/* blob_publish: not for the sink (it came from there).  Not stored. */
	int no_sink;
	/*
	 * Uploaded (PUT by a client): kept apart from the cache, in no LRU
	 * order (never evicted), counted against upload_max_bytes instead of
	 * max_bytes; only a purge removes it.
	 */
	int uploaded;
	/*
	 * blob_publish: when the fill began (flight_begun), on the clock
	 * of blob_purge's now_ns; a purge of its id, or one not of a
	 * single id, since then drops it.  0: no such check (an upload).
	 * Not stored.
	 */
	int64_t begun;
	/*
	 * blob_publish of an upload: the cached (not uploaded) entry of the
	 * key it may replace, named by its file's device and inode (the
	 * caller compared its bytes, holding it open); inode 0: none, so
	 * that the upload is published only where the key has no entry.
	 * Not stored.
	 */
	uint64_t replaces_dev, replaces_ino;
};

/* The source uploaded entries carry. */
#define BLOB_UPLOAD_SOURCE "upload"

/*
 * The stored entry, in host byte order: this header, then arg, source and
 * the meta area, each with a NUL after it.  The meta area of a version 1
 * entry is meta.file, meta.archive and meta.imasig, each with a NUL, then
 * meta.extra; of a version 0 entry (written by older programs), the
 * "Name: value\r\n" lines of the answer's X-DEBUGINFOD-* headers, which
 * read back as meta.extra (blob_decode).
 */
struct blob_hdr {
	uint64_t size;
	int64_t mtime;
	int64_t stored;
	int64_t atime;
	uint32_t arglen;
	uint32_t sourcelen;
	uint32_t metalen;
	uint8_t kind; /* enum cache_kind */
	uint8_t idlen;
	uint8_t id[BUILDID_MAX];
	uint8_t flags; /* BLOB_F_*; in what was padding, 0 in older entries */
	uint8_t version; /* BLOB_VERSION; in what was padding, 0 in older */
};
#define BLOB_F_UPLOADED 1
/* The layout blob_publish writes; blob_decode reads it and version 0. */
#define BLOB_VERSION 1

/*
 * Decode a stored entry as read from the index into *h and, when info is
 * not NULL, *info (whose strings then point into the record).  -1 when it
 * is damaged: a key that is not CACHE_KEY_LEN long, a length that does not
 * add up to the record's size, a string without its NUL, an unknown kind
 * or version, an id too long.  r may be anything; nothing outside it is
 * read.  This is the one place older entries are read: a version 0
 * entry's header lines come back as info->meta.extra, with file, archive
 * and imasig "" (they are replayed as they were; its path index entry was
 * made when it was published).
 */
int blob_decode(const struct index_rec *r, struct blob_hdr *h,
    struct blob_info *info);

/* Percentages above 100 are taken as 100. */
struct blobstore *blobstore_new(struct index *idx, const char *cache_dir,
    const struct blob_limits *lim, char *err, size_t errlen);
void blobstore_free(struct blobstore *bs);
/*
 * Any thread (SIGHUP): the limits from now on; publishes and evictions
 * under way keep the ones they began with.
 */
void blobstore_set_limits(struct blobstore *bs, const struct blob_limits *lim);

/*
 * Where uploads live (upload-dir), before recovery and any publish; it
 * need not exist (nothing is made here).  Without one, uploads are
 * refused (blob_upload_tmp_new fails) and only the cache directory is
 * looked at.  -1 with err when the path is too long or out of memory.
 */
int blobstore_set_upload_dir(struct blobstore *bs, const char *dir, char *err,
    size_t errlen);

/* What recovery did. */
struct blob_recovery {
	uint64_t files; /* temp and blob files deleted */
	uint64_t entries; /* entries dropped: no file, or a damaged one */
	uint64_t uploads_indexed; /* upload files without entry, indexed */
	uint64_t uploads_moved; /* uploads moved from the cache directory */
	uint64_t uploads_unknown; /* upload-dir files not uploads: kept */
};

/*
 * Start-up, before any fill: empty tmp/ (and the upload directory's
 * tmp/), delete blob files that have no entry and entries whose blob
 * file is gone or has the wrong size (or cannot be decoded), index the
 * upload files that have no entry (never deleted: read as ELF, their
 * build-id and kind must give their key), move uploads kept in the cache
 * directory by older versions to the upload directory, and recount the
 * byte totals.
 */
int blobstore_recover(struct blobstore *bs, struct blob_recovery *rec,
    char *err, size_t errlen);

/*
 * A new temp file for a fill, O_RDWR|O_CLOEXEC, unique name in tmp/;
 * path receives its name.  -1 with err on failure.
 */
int blob_tmp_new(struct blobstore *bs, char *path, size_t pathlen, char *err,
    size_t errlen);
/* The same for an upload, in the upload directory's tmp/. */
int blob_upload_tmp_new(struct blobstore *bs, char *path, size_t pathlen,
    char *err, size_t errlen);

/*
 * On a worker thread: fsync the temp file, rename it into blobs/, write the
 * entry (replacing a cached one for k, fixing the byte total), record an
 * upstream answer's meta.file in the path index (cache/pathindex.h: an
 * entry's paths leave with it, evicted or purged), delete any negative
 * entry for k, all so that a crash at any point leaves either no
 * entry or a complete one (rename before the index commit; recovery deletes
 * a blob without entry).  Then evict if over the high watermark.  The
 * entry's stored and atime are now (info's are ignored); the temp file
 * must hold exactly info->size bytes.  Returns 0; BLOB_TOO_BIG (> 0) when
 * info->size alone exceeds max_bytes, or for an upload when the uploads
 * would exceed upload_max_bytes; BLOB_PURGED (> 0) when a purge of its id,
 * or one not of a single id, came after info->begun (temp file removed,
 * nothing stored, in both cases); BLOB_EXISTS (> 0) when k has an entry
 * that must stay: for an upload any entry but the cached one it names
 * (info->replaces_*), for a fill an upload (a fill never replaces an
 * upload); nothing is stored and the temp file is left to the caller,
 * which may compare with the entry and publish again; -1 on error (temp
 * file removed).  The entry is judged in the writer's transaction, so
 * that of two publishes of one key the second sees the first.
 */
#define BLOB_TOO_BIG 2
#define BLOB_PURGED 3
#define BLOB_EXISTS 4
int blob_publish(struct blobstore *bs, const struct cache_key *k,
    const char *tmp_path, const struct blob_info *info, int64_t now, char *err,
    size_t errlen);

/*
 * The sink: after every blob_publish that stored k (on the publishing
 * worker, after the index commit), fn(arg, k, info) is told, unless
 * info->no_sink; info's strings are the caller's, valid during the call.
 * It must only queue (sources/objstore.c copies blobs to the object store).
 * Set before any publish.
 */
typedef void (*blob_sink_fn)(void *arg, const struct cache_key *k,
    const struct blob_info *info);
void blobstore_set_sink(struct blobstore *bs, blob_sink_fn fn, void *arg);

/* Hot path, any thread: 0 and *info when k is cached, INDEX_NOTFOUND, -1
 * (also for an entry that cannot be decoded). */
int blob_lookup(struct index_reader *rd, const struct cache_key *k,
    struct blob_info *info);
/*
 * Open the blob file of k read-only (O_CLOEXEC), in the cache directory
 * or else the upload directory; -1 when missing.
 */
int blob_open(struct blobstore *bs, const struct cache_key *k);

/*
 * Any thread, no LMDB write, no syscall, no blocking lock held long: note
 * a hit; the time is written later by blob_flush_touches in one write
 * transaction for many hits.  A bounded buffer; when full, drop (LRU is
 * approximate).
 */
void blob_touch(struct blobstore *bs, const struct cache_key *k, int64_t now);
int blob_flush_touches(struct blobstore *bs, char *err, size_t errlen);

/*
 * Pinned keys (a response streaming the blob, a fill) are never evicted.
 * Counters in hashed buckets: keys sharing a bucket pin each other, which
 * only delays an eviction.  Pins are per process: the CLI's purge does
 * not see the daemon's (an open file stays readable after its unlink).
 */
void blob_pin(struct blobstore *bs, const struct cache_key *k);
void blob_unpin(struct blobstore *bs, const struct cache_key *k);

/*
 * On a worker: when bytes (of blobs and of fills in tmp/) > high_pct% of
 * max_bytes, or the filesystem's free space < min_free_pct%, delete
 * least-recently-used (atime, then stored) unpinned entries until bytes <=
 * low_pct% and free space is enough, or nothing evictable is left.  Counts
 * what it removed.
 */
int blob_evict(struct blobstore *bs, uint64_t *entries, uint64_t *bytes,
    char *err, size_t errlen);
/*
 * The same for a fill that could not write (ENOSPC): room more bytes are
 * to come, so they count against the cap and must be free on the
 * filesystem (beyond min_free_pct), whatever the watermarks say.
 */
int blob_make_room(struct blobstore *bs, uint64_t room, uint64_t *entries,
    uint64_t *bytes, char *err, size_t errlen);
/*
 * Any thread: bytes that fills wrote to tmp/ (plus) or that left it
 * (minus: published or deleted), so that eviction counts them.
 */
void blob_tmp_add(struct blobstore *bs, uint64_t plus, uint64_t minus);

/*
 * Delete entries (and files) matching: id NULL = any id; source NULL = any
 * source (exact string match otherwise).  *n = entries removed.  The purge
 * is remembered with now_ns, the wall-clock ns it began (shared by every
 * process that uses the index), by id, or as one not of a single id: a
 * fill begun before it and published after it is dropped too
 * (blob_info.begun), since a client may have had its bytes before the
 * fill's entry was written.
 */
int blob_purge(struct blobstore *bs, const struct buildid *id,
    const char *source, int64_t now_ns, uint64_t *n, char *err, size_t errlen);

struct blob_stats {
	uint64_t entries, bytes, negatives, evictions, evicted_bytes;
	uint64_t tmp_bytes; /* of fills not yet published */
	uint64_t upload_bytes; /* of uploaded blobs, not in bytes */
};
/* bs may be NULL: no eviction counts. */
int blob_stats(struct index_reader *rd, struct blobstore *bs,
    struct blob_stats *st);

#endif /* CACHE_BLOBSTORE_H */
