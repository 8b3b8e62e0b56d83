/*
 * cache/negative.h: remembered misses.
 *
 * When every source said "not found" (NEG_NOTFOUND) or some source failed
 * (NEG_ERROR), the key is remembered until an expiry time, so that the
 * next requests are answered at once.  Entries live in the index (one
 * table by key, one by expiry time for neg_expire); publishing a blob for
 * the key deletes its negative entry (cache/blobstore.c).
 *
 * Threads: neg_get takes the calling thread's reader and is for the hot
 * path; the others write the index and belong on a worker or in the CLI.
 */
#ifndef CACHE_NEGATIVE_H
#define CACHE_NEGATIVE_H

#include <stddef.h>
#include <stdint.h>

#include "cache/key.h"

struct index;
struct index_reader;
struct index_batch;
struct index_rec;

enum neg_kind {
	NEG_NOTFOUND = 1,
	NEG_ERROR = 2,
};

struct neg_entry {
	int64_t expires;
	enum neg_kind kind;
};

/* The stored record of an entry, in host byte order. */
struct neg_rec {
	int64_t expires;
	uint8_t kind; /* enum neg_kind */
	uint8_t idlen;
	uint8_t id[BUILDID_MAX];
};

/*
 * Decode a stored record as read from the index: 0 and *out, or -1 when
 * it is damaged (another size, an unknown kind, an id too long).  r may be
 * anything; nothing outside it is read.
 */
int neg_decode(const struct index_rec *r, struct neg_rec *out);

/*
 * 0 and *out when k has a negative entry still valid at now (expires >
 * now); INDEX_NOTFOUND when none or expired; -1 (also for an entry that
 * cannot be decoded).  Hot path, any thread.
 */
int neg_get(struct index_reader *rd, const struct cache_key *k, int64_t now,
    struct neg_entry *out);
/*
 * Worker: remember a miss for k until expires.  Keeps id for purges.
 * Refused (-1, err says so) when the index map is nearly full.
 */
int neg_put(struct index *idx, const struct cache_key *k,
    const struct buildid *id, enum neg_kind kind, int64_t expires, char *err,
    size_t errlen);
/* Worker: delete negatives of id (NULL: all); *n = entries removed. */
int neg_purge(struct index *idx, const struct buildid *id, uint64_t *n,
    char *err, size_t errlen);
/*
 * Worker: delete the entries expired at now and, while there are more than
 * max (0: no bound), those that would expire soonest.  *n = entries
 * removed.  Deletes in small transactions, so that it works in a map with
 * little room left, and keeps it from filling: neg_put refuses new
 * entries once the map is nearly full.
 */
int neg_expire(struct index *idx, int64_t now, uint64_t max, uint64_t *n,
    char *err, size_t errlen);

/* Inside a batch of the caller (blob_publish): forget k's entry. */
int neg_batch_del(struct index_batch *b, const struct cache_key *k);

#endif /* CACHE_NEGATIVE_H */
