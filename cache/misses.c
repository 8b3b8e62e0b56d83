/*
 * cache/misses.c: the missing-id report's table, kept in two tables of the
 * index.
 *
 *   misses    build-id -> struct miss_rec
 *   missrank  count, last seen, hash of the id -> build-id
 *
 * The second orders the ids by how often they were missed: a reader walks
 * it from its end for the most missed, eviction from its start for the
 * least.  Both change together in one write transaction; a missrank key
 * whose record says otherwise (or is gone) is stale and dropped when
 * eviction meets it.  The hash (16 bytes of SHA-256) keeps the key within
 * INDEX_KEY_MAX however long the id; the id itself is the value.
 */
#include "cache/misses.h"

#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>

#include "cache/index.h"

#define HASH_LEN 16
#define RANKKEY_LEN (2 * INDEX_TIME_LEN + HASH_LEN)
/* New records are refused above this share of the map (percent). */
#define PUT_MAX_PCT 90

/* The stored record, in host byte order. */
struct miss_rec {
	uint64_t count;
	int64_t first;
	int64_t last;
	uint32_t kinds;
	uint8_t idlen;
	uint8_t pad[3];
	uint8_t id[BUILDID_MAX];
	char ua[MISS_UA_MAX];
	char addr[MISS_ADDR_MAX];
};

/* Check a stored record: 0 and *out, or -1 when damaged. */
static int
rec_decode(const void *val, size_t len, struct miss_rec *out)
{
	if (len != sizeof(*out))
		return -1;
	memcpy(out, val, sizeof(*out));
	if (out->idlen == 0 || out->idlen > BUILDID_MAX ||
	    memchr(out->ua, '\0', sizeof(out->ua)) == NULL ||
	    memchr(out->addr, '\0', sizeof(out->addr)) == NULL)
		return -1;
	return 0;
}

static void
rankkey(const struct miss_rec *r, uint8_t out[RANKKEY_LEN])
{
	uint8_t h[SHA256_DIGEST_LENGTH];

	index_time_encode((int64_t)r->count, out);
	index_time_encode(r->last, out + INDEX_TIME_LEN);
	SHA256(r->id, r->idlen, h);
	memcpy(out + 2 * INDEX_TIME_LEN, h, HASH_LEN);
}

/* Fold one event into the batch. */
static void
record_one(struct index_batch *b, const struct miss_event *ev)
{
	struct index_rec cur;
	struct miss_rec r;
	uint8_t rk[RANKKEY_LEN];
	int64_t first = ev->first != 0 ? ev->first : ev->when;
	int rc;

	rc = index_batch_get_rec(b, INDEX_MISSES, ev->id.bytes, ev->id.len,
	    &cur);
	if (rc == 0 && rec_decode(cur.val, cur.vallen, &r) == 0) {
		rankkey(&r, rk);
		index_batch_del_rec(b, INDEX_MISS_RANK, rk, sizeof(rk));
	} else {
		memset(&r, 0, sizeof(r));
		r.first = first;
		r.idlen = (uint8_t)ev->id.len;
		memcpy(r.id, ev->id.bytes, ev->id.len);
	}
	r.count += ev->count > 0 ? ev->count : 1;
	if (ev->when > r.last)
		r.last = ev->when;
	if (first < r.first)
		r.first = first;
	r.kinds |= 1u << ev->kind;
	snprintf(r.ua, sizeof(r.ua), "%s", ev->ua);
	snprintf(r.addr, sizeof(r.addr), "%s", ev->addr);
	rankkey(&r, rk);
	/* A failure is kept by the batch and reported by its commit. */
	index_batch_put_rec(b, INDEX_MISSES, r.id, r.idlen, &r, sizeof(r));
	index_batch_put_rec(b, INDEX_MISS_RANK, rk, sizeof(rk), r.id, r.idlen);
}

int
miss_record(struct index *idx, const struct miss_event *ev, size_t n, char *err,
    size_t errlen)
{
	struct index_batch *b;
	uint64_t used, size;
	size_t i;

	if (index_usage(idx, &used, &size) == 0 &&
	    used > size / 100 * PUT_MAX_PCT) {
		snprintf(err, errlen,
		    "missing ids not recorded: the index is %llu%% full "
		    "(raise index-map-size, now %llu MiB)",
		    (unsigned long long)(used * 100 / size),
		    (unsigned long long)(size >> 20));
		return -1;
	}
	if ((b = index_batch_begin(idx, err, errlen)) == NULL)
		return -1;
	for (i = 0; i < n; i++)
		if (ev[i].id.len > 0 && ev[i].id.len <= BUILDID_MAX &&
		    ev[i].kind >= CACHE_DEBUGINFO && ev[i].kind <= CACHE_SOURCE)
			record_one(b, &ev[i]);
	return index_batch_commit(b, err, errlen);
}

struct miss_evict_sweep {
	struct index_batch *b;
	uint64_t max;
	uint64_t excess; /* ids over the bound */
	unsigned left; /* deletions left in this transaction */
	uint64_t ids; /* of them, ids (not stale keys) */
};

/*
 * Walk of missrank, least missed first: drop ids while there are too many.
 * Stale keys count as deletions too (they are).
 */
static int
evict_cb(const struct index_rec *r, void *arg)
{
	struct miss_evict_sweep *e = arg;
	struct index_rec cur;
	struct miss_rec mr;
	uint8_t id[BUILDID_MAX], rk[RANKKEY_LEN];
	size_t idlen = r->vallen;
	int rc;

	if (e->left == 0 || e->excess == 0)
		return 1;
	if (r->keylen != RANKKEY_LEN || idlen == 0 || idlen > BUILDID_MAX) {
		e->left--;
		return INDEX_WALK_DELETE;
	}
	/* Copied: r points into pages the writes below may move. */
	memcpy(id, r->val, idlen);
	memcpy(rk, r->key, sizeof(rk));
	rc = index_batch_get_rec(e->b, INDEX_MISSES, id, idlen, &cur);
	if (rc == -1)
		return -1;
	/* Only when the record still ranks here; else the key is stale. */
	if (rc == 0 && rec_decode(cur.val, cur.vallen, &mr) == 0) {
		uint8_t now[RANKKEY_LEN];

		rankkey(&mr, now);
		if (memcmp(now, rk, sizeof(rk)) == 0) {
			if (index_batch_del_rec(e->b, INDEX_MISSES, id,
				idlen) == -1)
				return -1;
			e->excess--;
			e->ids++;
		}
	}
	e->left--;
	return INDEX_WALK_DELETE;
}

/* index_sweep_fn: one transaction of an eviction. */
static unsigned
evict_step(struct index_batch *b, unsigned limit, uint64_t *counted, void *arg)
{
	struct miss_evict_sweep *e = arg;
	uint64_t count;

	e->b = b;
	e->left = limit;
	e->ids = 0;
	e->excess =
	    index_batch_count(b, INDEX_MISSES, &count) == 0 && count > e->max
	    ? count - e->max
	    : 0;
	index_batch_walk(b, INDEX_MISS_RANK, evict_cb, e);
	*counted = e->ids;
	return limit - e->left;
}

int
miss_evict(struct index *idx, uint64_t max, uint64_t *n, char *err,
    size_t errlen)
{
	struct miss_evict_sweep e = { NULL, max, 0, 0, 0 };

	return index_sweep(idx, evict_step, &e, n, 1, err, errlen);
}

/* Drop the record mr of id (and its rank key) in b. */
static int
rec_del(struct index_batch *b, const struct miss_rec *mr)
{
	uint8_t rk[RANKKEY_LEN];

	rankkey(mr, rk);
	if (index_batch_del_rec(b, INDEX_MISS_RANK, rk, sizeof(rk)) == -1 ||
	    index_batch_del_rec(b, INDEX_MISSES, mr->id, mr->idlen) == -1)
		return -1;
	return 0;
}

int
miss_batch_served(struct index_batch *b, const struct buildid *id,
    unsigned kinds)
{
	struct index_rec cur;
	struct miss_rec mr;
	int rc;

	/* No id (a file that is not indexable), no record: LMDB takes no
	 * empty key, and a refused one would fail the caller's commit. */
	if (id->len == 0 || id->len > BUILDID_MAX || kinds == 0)
		return 0;
	rc = index_batch_get_rec(b, INDEX_MISSES, id->bytes, id->len, &cur);
	if (rc != 0)
		return rc == INDEX_NOTFOUND ? 0 : -1;
	if (rec_decode(cur.val, cur.vallen, &mr) == -1 ||
	    (mr.kinds & kinds) == 0)
		return 0;
	mr.kinds &= ~kinds;
	if (mr.kinds == 0)
		return rec_del(b, &mr);
	/* The rank key (count, last) is unchanged. */
	return index_batch_put_rec(b, INDEX_MISSES, mr.id, mr.idlen, &mr,
	    sizeof(mr));
}

struct purge {
	struct index_batch *b;
	const struct buildid *id;
	unsigned left;
	uint64_t ids;
};

/* Walk of misses: drop every record (the rank keys go with them). */
static int
purge_cb(const struct index_rec *r, void *arg)
{
	struct purge *p = arg;
	struct miss_rec mr;
	uint8_t rk[RANKKEY_LEN];

	if (p->left == 0)
		return 1;
	p->left--;
	if (rec_decode(r->val, r->vallen, &mr) == 0) {
		rankkey(&mr, rk);
		if (index_batch_del_rec(p->b, INDEX_MISS_RANK, rk,
			sizeof(rk)) == -1)
			return -1;
		p->ids++;
	}
	return INDEX_WALK_DELETE;
}

/* Walk of missrank: what no record ranks any more (stale keys). */
static int
purge_rank_cb(const struct index_rec *r, void *arg)
{
	struct purge *p = arg;

	if (p->left == 0)
		return 1;
	p->left--;
	return INDEX_WALK_DELETE;
}

/* index_sweep_fn: one transaction of a purge. */
static unsigned
purge_step(struct index_batch *b, unsigned limit, uint64_t *counted, void *arg)
{
	struct purge *p = arg;
	struct index_rec cur;
	struct miss_rec mr;
	int rc;

	p->b = b;
	p->left = limit;
	p->ids = 0;
	if (p->id != NULL) {
		/* One id: one step. */
		rc = index_batch_get_rec(b, INDEX_MISSES, p->id->bytes,
		    p->id->len, &cur);
		if (rc == 0 && rec_decode(cur.val, cur.vallen, &mr) == 0 &&
		    rec_del(b, &mr) == 0)
			p->ids = 1;
		*counted = p->ids;
		return 0;
	}
	index_batch_walk(b, INDEX_MISSES, purge_cb, p);
	index_batch_walk(b, INDEX_MISS_RANK, purge_rank_cb, p);
	*counted = p->ids;
	return limit - p->left;
}

int
miss_purge(struct index *idx, const struct buildid *id, uint64_t *n, char *err,
    size_t errlen)
{
	struct purge p = { NULL, id, 0, 0 };

	return index_sweep(idx, purge_step, &p, n, 1, err, errlen);
}

int
miss_count(struct index_reader *rd, uint64_t *n)
{
	return index_count(rd, INDEX_MISSES, n);
}

struct miss_walk_state {
	struct index_reader *rd;
	miss_cb cb;
	void *arg;
};

/* Walk of missrank from its end: the record each key names. */
static int
walk_cb(const struct index_rec *r, void *arg)
{
	struct miss_walk_state *w = arg;
	struct index_rec cur;
	struct miss_rec mr;
	struct miss_info mi;
	uint8_t rk[RANKKEY_LEN];

	if (r->keylen != RANKKEY_LEN || r->vallen == 0 ||
	    r->vallen > BUILDID_MAX ||
	    index_get_rec(w->rd, INDEX_MISSES, r->val, r->vallen, &cur) != 0 ||
	    rec_decode(cur.val, cur.vallen, &mr) == -1)
		return 0;
	/* A stale key: the record ranks elsewhere, and is met there. */
	rankkey(&mr, rk);
	if (memcmp(rk, r->key, sizeof(rk)) != 0)
		return 0;
	mi.id.len = mr.idlen;
	memcpy(mi.id.bytes, mr.id, mr.idlen);
	mi.count = mr.count;
	mi.first = mr.first;
	mi.last = mr.last;
	mi.kinds = mr.kinds;
	memcpy(mi.ua, mr.ua, sizeof(mi.ua));
	memcpy(mi.addr, mr.addr, sizeof(mi.addr));
	return w->cb(&mi, w->arg);
}

int
miss_walk(struct index_reader *rd, miss_cb cb, void *arg)
{
	struct miss_walk_state w = { rd, cb, arg };

	return index_walk_back(rd, INDEX_MISS_RANK, walk_cb, &w);
}
