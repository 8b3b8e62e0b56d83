/*
 * cache/repoidx.c: remote repositories' packages and build-ids, in
 * generations of the INDEX_REPO table (see cache/repoidx.h).
 *
 *   'g' KEY                  -> gen u32, ids u64, pkgs u64, refreshed i64,
 *                               pkgs_with_ids u64, checked i64, digest[32]
 *                               (the last three absent in records written
 *                               before they were: read as zeros)
 *   'p' KEY GEN(be32) NAME   -> size u64, sha256[32], file
 *   'i' KEY GEN(be32) KIND ID -> NAME (KIND: enum repoidx_kind)
 *   'm' KEY GEN(be32) NAME   -> "" (package NAME holds an id)
 *   'e' KEY                  -> when i64, count u64, why (the last
 *                               refresh that failed)
 *   's' KEY                  -> when i64 (the refresh running began)
 *
 * Records are checked when read back; a damaged one is not found.  (Ids
 * had no KIND before schema 8 of cache/index.h: an index of then is
 * emptied when opened, and the next refresh writes every repository anew.)
 */
#include "cache/repoidx.h"

#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/key.h"
#include "cache/negative.h"

#define PREFIX_LEN (1 + REPOIDX_KEY_LEN + 4)
#define STATE_V1_LEN (4 + 8 + 8 + 8)
#define STATE_LEN (STATE_V1_LEN + 8 + 8 + REPOIDX_DIGEST_LEN)
/*
 * Records written per transaction of a refresh.  One transaction keeps its
 * dirty pages in memory (~120 bytes a record), but a later transaction of
 * the same refresh reads again (maps) every page the random ids spread
 * over: for 1,000,000 ids, one transaction peaked at 143 MiB RSS, chunks
 * of 500,000 at 274 MiB, of 50,000 at 366 MiB.
 */
#define CHUNK 2000000

struct repoidx_writer {
	struct index *idx;
	struct index_batch *b;
	uint8_t key[REPOIDX_KEY_LEN];
	uint32_t old_gen, gen;
	uint64_t ids, pkgs, with_ids;
	unsigned pending; /* records in b */
	char err[256];
};

void
repoidx_key(const char *ident, uint8_t key[REPOIDX_KEY_LEN])
{
	uint8_t h[SHA256_DIGEST_LENGTH];

	SHA256((const unsigned char *)ident, strlen(ident), h);
	memcpy(key, h, REPOIDX_KEY_LEN);
}

static void
put_u64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static uint64_t
get_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* The prefix of table records of kind t of generation gen. */
static void
prefix(uint8_t *out, char t, const uint8_t key[REPOIDX_KEY_LEN], uint32_t gen)
{
	out[0] = (uint8_t)t;
	memcpy(out + 1, key, REPOIDX_KEY_LEN);
	out[1 + REPOIDX_KEY_LEN] = (uint8_t)(gen >> 24);
	out[2 + REPOIDX_KEY_LEN] = (uint8_t)(gen >> 16);
	out[3 + REPOIDX_KEY_LEN] = (uint8_t)(gen >> 8);
	out[4 + REPOIDX_KEY_LEN] = (uint8_t)gen;
}

static int
state_decode(const struct index_rec *r, struct repoidx_state *st)
{
	const uint8_t *v = r->val;
	uint32_t g;

	if (r->vallen != STATE_LEN && r->vallen != STATE_V1_LEN)
		return -1;
	memcpy(&g, v, 4);
	st->gen = g;
	st->ids = get_u64(v + 4);
	st->pkgs = get_u64(v + 12);
	st->refreshed = (int64_t)get_u64(v + 20);
	if (r->vallen == STATE_LEN) {
		st->pkgs_with_ids = get_u64(v + STATE_V1_LEN);
		st->checked = (int64_t)get_u64(v + STATE_V1_LEN + 8);
		memcpy(st->digest, v + STATE_V1_LEN + 16, REPOIDX_DIGEST_LEN);
	}
	return 0;
}

static void
state_encode(const struct repoidx_state *st, uint8_t v[STATE_LEN])
{
	memcpy(v, &st->gen, 4);
	put_u64(v + 4, st->ids);
	put_u64(v + 12, st->pkgs);
	put_u64(v + 20, (uint64_t)st->refreshed);
	put_u64(v + STATE_V1_LEN, st->pkgs_with_ids);
	put_u64(v + STATE_V1_LEN + 8, (uint64_t)st->checked);
	memcpy(v + STATE_V1_LEN + 16, st->digest, REPOIDX_DIGEST_LEN);
}

/* The key of repository key's record of type t ('g', 'e', 's'). */
static void
state_key(uint8_t k[1 + REPOIDX_KEY_LEN], char t,
    const uint8_t key[REPOIDX_KEY_LEN])
{
	k[0] = (uint8_t)t;
	memcpy(k + 1, key, REPOIDX_KEY_LEN);
}

int
repoidx_state(struct index_reader *rd, const uint8_t key[REPOIDX_KEY_LEN],
    struct repoidx_state *st)
{
	uint8_t k[1 + REPOIDX_KEY_LEN];
	struct index_rec r;
	int rc;

	memset(st, 0, sizeof(*st));
	state_key(k, 's', key);
	rc = index_get_rec(rd, INDEX_REPO, k, sizeof(k), &r);
	if (rc == 0 && r.vallen == 8)
		st->running = (int64_t)get_u64(r.val);
	else if (rc != INDEX_NOTFOUND)
		return -1;
	state_key(k, 'g', key);
	rc = index_get_rec(rd, INDEX_REPO, k, sizeof(k), &r);
	if (rc == INDEX_NOTFOUND)
		return 0;
	if (rc != 0 || state_decode(&r, st) == -1)
		return -1;
	return 0;
}

static int
pkg_decode(const struct index_rec *r, struct repoidx_pkg *out)
{
	const uint8_t *v = r->val;

	if (r->keylen <= PREFIX_LEN || r->vallen <= 8 + 32 ||
	    r->vallen - 40 > REPOIDX_FILE_MAX)
		return -1;
	out->name = (const char *)r->key + PREFIX_LEN;
	out->name_len = r->keylen - PREFIX_LEN;
	out->size = get_u64(v);
	memcpy(out->sha256, v + 8, 32);
	out->file = (const char *)v + 40;
	out->file_len = r->vallen - 40;
	return 0;
}

int
repoidx_find(struct index_reader *rd, const uint8_t key[REPOIDX_KEY_LEN],
    const struct buildid *id, enum repoidx_kind kind, struct repoidx_pkg *out)
{
	uint8_t k[PREFIX_LEN + 1 + REPOIDX_NAME_MAX];
	struct repoidx_state st;
	struct index_rec r;
	int rc;

	if (repoidx_state(rd, key, &st) == -1)
		return -1;
	if (st.gen == 0)
		return INDEX_NOTFOUND;
	prefix(k, 'i', key, st.gen);
	k[PREFIX_LEN] = (uint8_t)kind;
	memcpy(k + PREFIX_LEN + 1, id->bytes, id->len);
	if ((rc = index_get_rec(rd, INDEX_REPO, k, PREFIX_LEN + 1 + id->len,
		 &r)) != 0)
		return rc;
	if (r.vallen == 0 || r.vallen > REPOIDX_NAME_MAX)
		return INDEX_NOTFOUND;
	prefix(k, 'p', key, st.gen);
	memcpy(k + PREFIX_LEN, r.val, r.vallen);
	if ((rc = index_get_rec(rd, INDEX_REPO, k, PREFIX_LEN + r.vallen,
		 &r)) != 0)
		return rc;
	return pkg_decode(&r, out) == 0 ? 0 : INDEX_NOTFOUND;
}

int
repoidx_get_error(struct index_reader *rd, const uint8_t key[REPOIDX_KEY_LEN],
    struct repoidx_error *out)
{
	uint8_t k[1 + REPOIDX_KEY_LEN];
	struct index_rec r;
	size_t n;
	int rc;

	memset(out, 0, sizeof(*out));
	k[0] = 'e';
	memcpy(k + 1, key, REPOIDX_KEY_LEN);
	rc = index_get_rec(rd, INDEX_REPO, k, sizeof(k), &r);
	if (rc == INDEX_NOTFOUND)
		return 0;
	if (rc != 0 || r.vallen < 16)
		return -1;
	out->when = (int64_t)get_u64(r.val);
	out->count = get_u64((const uint8_t *)r.val + 8);
	n = r.vallen - 16 < sizeof(out->why) - 1 ? r.vallen - 16
						 : sizeof(out->why) - 1;
	memcpy(out->why, (const uint8_t *)r.val + 16, n);
	out->why[n] = '\0';
	return 0;
}

int
repoidx_note_start(struct index *idx, const uint8_t key[REPOIDX_KEY_LEN],
    int64_t now, char *err, size_t errlen)
{
	uint8_t k[1 + REPOIDX_KEY_LEN], v[8];
	struct index_batch *b;

	if ((b = index_batch_begin(idx, err, errlen)) == NULL)
		return -1;
	state_key(k, 's', key);
	put_u64(v, (uint64_t)now);
	if (index_batch_put_rec(b, INDEX_REPO, k, sizeof(k), v, sizeof(v)) ==
	    -1) {
		index_batch_abort(b);
		snprintf(err, errlen, "cannot write the index");
		return -1;
	}
	return index_batch_commit(b, err, errlen);
}

/* End the refresh running of repository key, in b. */
static void
end_running(struct index_batch *b, const uint8_t key[REPOIDX_KEY_LEN])
{
	uint8_t k[1 + REPOIDX_KEY_LEN];

	state_key(k, 's', key);
	index_batch_del_rec(b, INDEX_REPO, k, sizeof(k));
}

int
repoidx_note_error(struct index *idx, const uint8_t key[REPOIDX_KEY_LEN],
    int64_t now, const char *why, char *err, size_t errlen)
{
	uint8_t k[1 + REPOIDX_KEY_LEN], v[16 + 255];
	struct index_batch *b;
	struct index_rec r;
	uint64_t count = 0;
	size_t n = strlen(why) < 255 ? strlen(why) : 255;

	if ((b = index_batch_begin(idx, err, errlen)) == NULL)
		return -1;
	state_key(k, 'e', key);
	if (index_batch_get_rec(b, INDEX_REPO, k, sizeof(k), &r) == 0 &&
	    r.vallen >= 16)
		count = get_u64((const uint8_t *)r.val + 8);
	put_u64(v, (uint64_t)now);
	put_u64(v + 8, count + 1);
	memcpy(v + 16, why, n);
	index_batch_put_rec(b, INDEX_REPO, k, sizeof(k), v, 16 + n);
	end_running(b, key);
	return index_batch_commit(b, err, errlen);
}

int
repoidx_note_unchanged(struct index *idx, const uint8_t key[REPOIDX_KEY_LEN],
    int64_t now, char *err, size_t errlen)
{
	uint8_t k[1 + REPOIDX_KEY_LEN], v[STATE_LEN];
	struct repoidx_state st;
	struct index_batch *b;
	struct index_rec r;

	if ((b = index_batch_begin(idx, err, errlen)) == NULL)
		return -1;
	memset(&st, 0, sizeof(st));
	state_key(k, 'g', key);
	if (index_batch_get_rec(b, INDEX_REPO, k, sizeof(k), &r) == 0 &&
	    state_decode(&r, &st) == 0) {
		st.checked = now;
		state_encode(&st, v);
		index_batch_put_rec(b, INDEX_REPO, k, sizeof(k), v, sizeof(v));
	}
	end_running(b, key);
	return index_batch_commit(b, err, errlen);
}

/* ------------------------------------------------------------ writing */

struct sweep {
	uint8_t prefix[PREFIX_LEN];
	unsigned limit, n;
};

static int
sweep_cb(const struct index_rec *rec, void *arg)
{
	struct sweep *sw = arg;

	if (sw->n == sw->limit)
		return 1;
	sw->n++;
	return INDEX_WALK_DELETE;
}

static unsigned
sweep_step(struct index_batch *b, unsigned limit, uint64_t *counted, void *arg)
{
	struct sweep *sw = arg;

	sw->limit = limit;
	sw->n = 0;
	index_batch_walk_prefix(b, INDEX_REPO, sw->prefix, sizeof(sw->prefix),
	    sweep_cb, sw);
	counted[0] += sw->n;
	return sw->n;
}

/* Delete generation gen of repository key. */
static int
drop_gen(struct index *idx, const uint8_t key[REPOIDX_KEY_LEN], uint32_t gen,
    char *err, size_t errlen)
{
	static const char kinds[] = { 'p', 'i', 'm' };
	struct sweep sw;
	uint64_t n;
	size_t i;

	for (i = 0; i < sizeof(kinds); i++) {
		prefix(sw.prefix, kinds[i], key, gen);
		if (index_sweep(idx, sweep_step, &sw, &n, 1, err, errlen) == -1)
			return -1;
	}
	return 0;
}

struct repoidx_writer *
repoidx_writer_new(struct index *idx, const uint8_t key[REPOIDX_KEY_LEN],
    char *err, size_t errlen)
{
	struct repoidx_writer *w;
	struct index_reader *rd;
	struct repoidx_state st;
	int rc = -1;

	if ((w = calloc(1, sizeof(*w))) == NULL ||
	    (rd = index_reader_new(idx)) == NULL) {
		free(w);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (index_reader_begin(rd) == 0) {
		rc = repoidx_state(rd, key, &st);
		index_reader_end(rd);
	}
	index_reader_free(rd);
	if (rc == -1) {
		snprintf(err, errlen, "cannot read the repository's state");
		free(w);
		return NULL;
	}
	w->idx = idx;
	memcpy(w->key, key, REPOIDX_KEY_LEN);
	w->old_gen = st.gen;
	w->gen = st.gen + 1 == 0 ? 1 : st.gen + 1;
	/* What a refresh that died left of the new generation goes first. */
	if (drop_gen(idx, key, w->gen, err, errlen) == -1 ||
	    (w->b = index_batch_begin(idx, err, errlen)) == NULL) {
		free(w);
		return NULL;
	}
	return w;
}

/* One record more in w's batch; every CHUNK, a commit and a new batch. */
static int
writer_count(struct repoidx_writer *w)
{
	if (++w->pending < CHUNK)
		return 0;
	w->pending = 0;
	if (index_batch_commit(w->b, w->err, sizeof(w->err)) == -1) {
		w->b = NULL;
		return -1;
	}
	w->b = index_batch_begin(w->idx, w->err, sizeof(w->err));
	return w->b == NULL ? -1 : 0;
}

int
repoidx_put_pkg(struct repoidx_writer *w, const char *name, const char *file,
    uint64_t size, const uint8_t sha256[32])
{
	uint8_t k[PREFIX_LEN + REPOIDX_NAME_MAX], v[40 + REPOIDX_FILE_MAX];
	size_t nl = strlen(name), fl = strlen(file);

	if (w->b == NULL || nl == 0 || nl > REPOIDX_NAME_MAX || fl == 0 ||
	    fl > REPOIDX_FILE_MAX)
		return -1;
	prefix(k, 'p', w->key, w->gen);
	memcpy(k + PREFIX_LEN, name, nl);
	put_u64(v, size);
	memcpy(v + 8, sha256, 32);
	memcpy(v + 40, file, fl);
	if (index_batch_put_rec(w->b, INDEX_REPO, k, PREFIX_LEN + nl, v,
		40 + fl) == -1)
		return -1;
	w->pkgs++;
	return writer_count(w);
}

int
repoidx_has_pkg(struct repoidx_writer *w, const char *name)
{
	uint8_t k[PREFIX_LEN + REPOIDX_NAME_MAX];
	struct index_rec r;
	size_t nl = strlen(name);
	int rc;

	if (w->b == NULL || nl == 0 || nl > REPOIDX_NAME_MAX)
		return -1;
	prefix(k, 'p', w->key, w->gen);
	memcpy(k + PREFIX_LEN, name, nl);
	rc = index_batch_get_rec(w->b, INDEX_REPO, k, PREFIX_LEN + nl, &r);
	return rc == 0 ? 1 : rc == INDEX_NOTFOUND ? 0 : -1;
}

/* 1 when generation gen of w's repository has id as kind. */
static int
gen_has_kind(struct repoidx_writer *w, uint32_t gen, enum repoidx_kind kind,
    const uint8_t *id, size_t len)
{
	uint8_t k[PREFIX_LEN + 1 + BUILDID_MAX];
	struct index_rec r;

	if (gen == 0 || len == 0 || len > BUILDID_MAX)
		return 0;
	prefix(k, 'i', w->key, gen);
	k[PREFIX_LEN] = (uint8_t)kind;
	memcpy(k + PREFIX_LEN + 1, id, len);
	return index_batch_get_rec(w->b, INDEX_REPO, k, PREFIX_LEN + 1 + len,
		   &r) == 0;
}

/* 1 when generation gen of w's repository has id as any kind. */
static int
gen_has(struct repoidx_writer *w, uint32_t gen, const uint8_t *id, size_t len)
{
	return gen_has_kind(w, gen, REPOIDX_DEBUGINFO, id, len) ||
	    gen_has_kind(w, gen, REPOIDX_EXECUTABLE, id, len) ||
	    gen_has_kind(w, gen, REPOIDX_EXECUTABLE_WEAK, id, len);
}

int
repoidx_put_id(struct repoidx_writer *w, const struct buildid *id,
    enum repoidx_kind kind, const char *name, int keep)
{
	uint8_t k[PREFIX_LEN + 1 +
	    (BUILDID_MAX > REPOIDX_NAME_MAX ? BUILDID_MAX : REPOIDX_NAME_MAX)];
	struct index_rec r;
	size_t nl = strlen(name);

	if (w->b == NULL || nl == 0 || nl > REPOIDX_NAME_MAX || id->len == 0 ||
	    id->len > BUILDID_MAX)
		return -1;
	if (keep && gen_has_kind(w, w->gen, kind, id->bytes, id->len))
		return 0;
	prefix(k, 'i', w->key, w->gen);
	k[PREFIX_LEN] = (uint8_t)kind;
	memcpy(k + PREFIX_LEN + 1, id->bytes, id->len);
	if (index_batch_put_rec(w->b, INDEX_REPO, k, PREFIX_LEN + 1 + id->len,
		name, nl) == -1)
		return -1;
	w->ids++;
	if (writer_count(w) == -1)
		return -1;
	/* The first id of its package: one package more with ids. */
	prefix(k, 'm', w->key, w->gen);
	memcpy(k + PREFIX_LEN, name, nl);
	switch (index_batch_get_rec(w->b, INDEX_REPO, k, PREFIX_LEN + nl, &r)) {
	case 0:
		return 0;
	case INDEX_NOTFOUND:
		if (index_batch_put_rec(w->b, INDEX_REPO, k, PREFIX_LEN + nl,
			"", 0) == -1)
			return -1;
		w->with_ids++;
		return writer_count(w);
	default:
		return -1;
	}
}

uint64_t
repoidx_writer_ids(const struct repoidx_writer *w)
{
	return w->ids;
}

/*
 * A negative entry of an id the new generation has and the old one had
 * not is wrong from now on.  The negative table is walked rather than
 * looked up per id: it is bounded (negative-max) and usually much smaller
 * than an index of millions of ids.
 */
static int
clear_cb(const struct index_rec *rec, void *arg)
{
	struct repoidx_writer *w = arg;
	struct neg_rec nr;

	if (neg_decode(rec, &nr) == -1)
		return 0;
	return gen_has(w, w->gen, nr.id, nr.idlen) &&
		!gen_has(w, w->old_gen, nr.id, nr.idlen)
	    ? INDEX_WALK_DELETE
	    : 0;
}

int
repoidx_writer_commit(struct repoidx_writer *w, int64_t now,
    const uint8_t digest[REPOIDX_DIGEST_LEN], char *err, size_t errlen)
{
	uint8_t k[1 + REPOIDX_KEY_LEN], v[STATE_LEN];
	uint32_t old = w->old_gen;
	uint8_t key[REPOIDX_KEY_LEN];
	struct index *idx = w->idx;
	struct repoidx_state st;

	if (w->b == NULL) {
		snprintf(err, errlen, "%s", w->err);
		repoidx_writer_abort(w);
		return -1;
	}
	state_key(k, 'g', w->key);
	memset(&st, 0, sizeof(st));
	st.gen = w->gen;
	st.ids = w->ids;
	st.pkgs = w->pkgs;
	st.pkgs_with_ids = w->with_ids;
	st.refreshed = now;
	memcpy(st.digest, digest, REPOIDX_DIGEST_LEN);
	state_encode(&st, v);
	end_running(w->b, w->key);
	if (index_batch_walk(w->b, INDEX_NEG, clear_cb, w) == -1 ||
	    index_batch_put_rec(w->b, INDEX_REPO, k, sizeof(k), v, sizeof(v)) ==
		-1 ||
	    index_batch_commit(w->b, err, errlen) == -1) {
		w->b = NULL;
		repoidx_writer_abort(w);
		return -1;
	}
	memcpy(key, w->key, sizeof(key));
	free(w);
	return old == 0 ? 0 : drop_gen(idx, key, old, err, errlen);
}

void
repoidx_writer_abort(struct repoidx_writer *w)
{
	char err[256];

	if (w->b != NULL)
		index_batch_abort(w->b);
	drop_gen(w->idx, w->key, w->gen, err, sizeof(err));
	free(w);
}
