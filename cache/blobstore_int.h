/*
 * cache/blobstore_int.h: what the files of the blob store share; nothing
 * else includes it.
 *
 * cache/blobstore.c is the running store (entries, publish, lookups,
 * eviction, purge); cache/blobrecover.c the recovery at start-up
 * (blobstore_recover), which uses the helpers below.  Calls go that way
 * only: blobstore.c never calls blobrecover.c.
 *
 * Threads: as cache/blobstore.h says; the helpers that take a batch run
 * in that batch's thread, inside its write transaction.
 */
#ifndef CACHE_BLOBSTORE_INT_H
#define CACHE_BLOBSTORE_INT_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "cache/blobstore.h"
#include "cache/index.h"

#define PIN_BUCKETS 1024
#define BYTES_COUNTER "blob_bytes"
#define UPLOAD_COUNTER "upload_bytes"

struct touch;

struct blobstore {
	struct index *idx;
	char *dir;
	char *updir; /* uploads; NULL: none */
	pthread_mutex_t lim_lock; /* lim, which SIGHUP may change */
	struct blob_limits lim;

	pthread_mutex_t touch_lock; /* touches, ntouches */
	struct touch *touches;
	size_t ntouches;
	pthread_mutex_t flush_lock; /* one flusher; spare */
	struct touch *spare;

	atomic_uint pins[PIN_BUCKETS];
	atomic_uint_fast64_t evictions;
	atomic_uint_fast64_t evicted_bytes;
	atomic_uint_fast64_t tmp_bytes; /* of fills in tmp/, not yet blobs */

	blob_sink_fn sink; /* set before any publish */
	void *sink_arg;
};

/* The file of hash: in blobs/, or for an upload in the upload directory. */
void blob_path(const struct blobstore *bs, const uint8_t hash[CACHE_KEY_LEN],
    int uploaded, char path[PATH_MAX]);

/* 0 when name is the hex of a key (lowercase); the key in *k. */
int blob_parse_hex_key(const char *name, struct cache_key *k);

/* Encode info as an entry in a new buffer of *len bytes; NULL when a
 * string is too long (or no memory). */
uint8_t *blob_encode(const struct blob_info *info, int64_t now, size_t *len);

/* Drop the LRU key of the entry of hash, decoded as h. */
int blob_lru_del(struct index_batch *b, const uint8_t hash[CACHE_KEY_LEN],
    const struct blob_hdr *h);

/*
 * The entry an LRU key stands for, decoded into *h, when the key is still
 * its key; INDEX_NOTFOUND for a stale or damaged key; -1.
 */
int blob_lru_entry(struct index_batch *b, const struct index_rec *r,
    uint8_t hash[CACHE_KEY_LEN], struct blob_hdr *h);

/* Drop the path index's entries of the entry decoded as h. */
int blob_paths_del(struct index_batch *b, const struct blob_hdr *h);

/* rename(2) into blobs/xx/, making the directory on first use. */
int blob_rename_in(const char *from, char *to);

#endif /* CACHE_BLOBSTORE_INT_H */
