/*
 * cache/negative.c: remembered misses, kept in two tables of the index.
 *
 *   neg     cache key -> struct neg_rec (expiry, kind, build-id)
 *   negexp  expiry time, cache key -> nothing
 *
 * The second orders entries by expiry so that neg_expire reads only what
 * has expired.  Both change together in one write transaction; a negexp
 * key whose neg record has another expiry (or none) is stale and is just
 * dropped when its time comes.  Records are checked when read back: a
 * damaged one is an error for neg_get and is removed by a purge of all.
 */
#include "cache/negative.h"

#include <stdio.h>
#include <string.h>

#include "cache/index.h"

#define EXPKEY_LEN (INDEX_TIME_LEN + CACHE_KEY_LEN)

/*
 * New entries are refused above this share of the map (percent), so that
 * deleting them always stays possible.
 */
#define PUT_MAX_PCT 90

int
neg_decode(const struct index_rec *r, struct neg_rec *out)
{
	if (r->vallen != sizeof(*out))
		return -1;
	memcpy(out, r->val, sizeof(*out));
	if ((out->kind != NEG_NOTFOUND && out->kind != NEG_ERROR) ||
	    out->idlen > BUILDID_MAX)
		return -1;
	return 0;
}

static void
expkey(int64_t expires, const uint8_t hash[CACHE_KEY_LEN],
    uint8_t out[EXPKEY_LEN])
{
	index_time_encode(expires, out);
	memcpy(out + INDEX_TIME_LEN, hash, CACHE_KEY_LEN);
}

int
neg_get(struct index_reader *rd, const struct cache_key *k, int64_t now,
    struct neg_entry *out)
{
	struct index_rec r;
	struct neg_rec nr;
	int rc;

	rc = index_get_rec(rd, INDEX_NEG, k->hash, CACHE_KEY_LEN, &r);
	if (rc != 0)
		return rc;
	if (neg_decode(&r, &nr) == -1)
		return -1;
	if (nr.expires <= now)
		return INDEX_NOTFOUND;
	out->expires = nr.expires;
	out->kind = (enum neg_kind)nr.kind;
	return 0;
}

/* Drop the entry under hash and its expiry key; 0 also when none. */
static int
neg_forget(struct index_batch *b, const uint8_t hash[CACHE_KEY_LEN])
{
	struct index_rec r;
	struct neg_rec nr;
	uint8_t ek[EXPKEY_LEN];
	int rc;

	rc = index_batch_get_rec(b, INDEX_NEG, hash, CACHE_KEY_LEN, &r);
	if (rc == INDEX_NOTFOUND)
		return 0;
	if (rc != 0)
		return -1;
	if (neg_decode(&r, &nr) == 0) {
		expkey(nr.expires, hash, ek);
		if (index_batch_del_rec(b, INDEX_NEG_EXPIRY, ek, sizeof(ek)) ==
		    -1)
			return -1;
	}
	return index_batch_del_rec(b, INDEX_NEG, hash, CACHE_KEY_LEN) == -1 ? -1
									    : 0;
}

int
neg_batch_del(struct index_batch *b, const struct cache_key *k)
{
	return neg_forget(b, k->hash);
}

int
neg_put(struct index *idx, const struct cache_key *k, const struct buildid *id,
    enum neg_kind kind, int64_t expires, char *err, size_t errlen)
{
	struct index_batch *b;
	struct neg_rec nr;
	uint8_t ek[EXPKEY_LEN];

	uint64_t used, size;

	if ((kind != NEG_NOTFOUND && kind != NEG_ERROR) ||
	    id->len > BUILDID_MAX) {
		snprintf(err, errlen, "negative entry: bad kind or build-id");
		return -1;
	}
	if (index_usage(idx, &used, &size) == 0 &&
	    used > size / 100 * PUT_MAX_PCT) {
		snprintf(err, errlen,
		    "negative entry not kept: the index is %llu%% full "
		    "(raise index-map-size, now %llu MiB)",
		    (unsigned long long)(used * 100 / size),
		    (unsigned long long)(size >> 20));
		return -1;
	}
	memset(&nr, 0, sizeof(nr));
	nr.expires = expires;
	nr.kind = (uint8_t)kind;
	nr.idlen = id->len;
	memcpy(nr.id, id->bytes, id->len);
	expkey(expires, k->hash, ek);
	if ((b = index_batch_begin(idx, err, errlen)) == NULL)
		return -1;
	/* A failure is kept by the batch and reported by its commit. */
	neg_forget(b, k->hash);
	index_batch_put_rec(b, INDEX_NEG, k->hash, CACHE_KEY_LEN, &nr,
	    sizeof(nr));
	index_batch_put_rec(b, INDEX_NEG_EXPIRY, ek, sizeof(ek), "", 0);
	return index_batch_commit(b, err, errlen);
}

struct neg_purge_sweep {
	struct index_batch *b;
	const struct buildid *id;
	unsigned left; /* deletions left in this transaction */
};

/* Walk of neg: delete the entries of p->id, or all (damaged ones too). */
static int
purge_cb(const struct index_rec *r, void *arg)
{
	struct neg_purge_sweep *p = arg;
	struct neg_rec nr;
	uint8_t ek[EXPKEY_LEN];
	int ok = neg_decode(r, &nr) == 0;

	if (p->left == 0)
		return 1;
	if (p->id != NULL &&
	    (!ok || nr.idlen != p->id->len ||
		memcmp(nr.id, p->id->bytes, nr.idlen) != 0))
		return 0;
	if (ok && r->keylen == CACHE_KEY_LEN) {
		expkey(nr.expires, r->key, ek);
		if (index_batch_del_rec(p->b, INDEX_NEG_EXPIRY, ek,
			sizeof(ek)) == -1)
			return -1;
	}
	p->left--;
	return INDEX_WALK_DELETE;
}

/* index_sweep_fn: one transaction of a purge. */
static unsigned
purge_step(struct index_batch *b, unsigned limit, uint64_t *counted, void *arg)
{
	struct neg_purge_sweep *p = arg;

	p->b = b;
	p->left = limit;
	index_batch_walk(b, INDEX_NEG, purge_cb, p);
	*counted = limit - p->left;
	return limit - p->left;
}

int
neg_purge(struct index *idx, const struct buildid *id, uint64_t *n, char *err,
    size_t errlen)
{
	struct neg_purge_sweep p = { NULL, id, 0 };

	return index_sweep(idx, purge_step, &p, n, 1, err, errlen);
}

struct expire {
	struct index_batch *b;
	int64_t now;
	uint64_t max;
	uint64_t excess; /* entries over the bound, dropped oldest first */
	unsigned left; /* deletions left in this transaction */
	uint64_t entries; /* of them, entries (not stale keys) */
};

/*
 * Walk of negexp, soonest to expire first: drop what expired, and while
 * there are more entries than the bound, what would expire next; stop at
 * the rest.  Stale keys count as deletions too (they are).
 */
static int
expire_cb(const struct index_rec *r, void *arg)
{
	struct expire *e = arg;
	struct index_rec cur;
	struct neg_rec nr;
	uint8_t hash[CACHE_KEY_LEN];
	int64_t t;
	int rc;

	if (r->keylen != EXPKEY_LEN)
		return INDEX_WALK_DELETE;
	if (e->left == 0)
		return 1;
	/* Copied: r points into pages the writes below may move. */
	memcpy(hash, (const uint8_t *)r->key + INDEX_TIME_LEN, sizeof(hash));
	t = index_time_decode(r->key);
	if (t > e->now && e->excess == 0)
		return 1;
	rc = index_batch_get_rec(e->b, INDEX_NEG, hash, CACHE_KEY_LEN, &cur);
	if (rc == -1)
		return -1;
	/* Only when the entry still expires then; else the key is stale. */
	if (rc == 0 && neg_decode(&cur, &nr) == 0 && nr.expires == t) {
		if (index_batch_del_rec(e->b, INDEX_NEG, hash, CACHE_KEY_LEN) ==
		    -1)
			return -1;
		if (e->excess > 0)
			e->excess--;
		e->entries++;
	}
	e->left--;
	return INDEX_WALK_DELETE;
}

/* index_sweep_fn: one transaction of an expiry sweep. */
static unsigned
expire_step(struct index_batch *b, unsigned limit, uint64_t *counted, void *arg)
{
	struct expire *e = arg;
	uint64_t count;

	e->b = b;
	e->left = limit;
	e->entries = 0;
	e->excess = e->max > 0 &&
		index_batch_count(b, INDEX_NEG, &count) == 0 && count > e->max
	    ? count - e->max
	    : 0;
	index_batch_walk(b, INDEX_NEG_EXPIRY, expire_cb, e);
	*counted = e->entries;
	return limit - e->left;
}

int
neg_expire(struct index *idx, int64_t now, uint64_t max, uint64_t *n, char *err,
    size_t errlen)
{
	struct expire e = { NULL, now, max, 0, 0, 0 };

	return index_sweep(idx, expire_step, &e, n, 1, err, errlen);
}
