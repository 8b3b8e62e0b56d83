/*
 * cache/index.c: the LMDB index: the environment, its transactions and
 * the tables' raw records.
 *
 * Thirteen databases in one environment:
 *
 *   meta   "schema" -> uint32 version; "scan" -> struct index_scan;
 *          counters (e.g. the cache's blob bytes) -> uint64
 *   files, ids   the local files' records (cache/files.c lays them out)
 *   blobs, lru, neg, negexp, pkgs, members, pkgmembers, misses,
 *          missrank, paths, repo   the generic tables (enum index_table),
 *          whose records cache/blobstore.c, cache/negative.c,
 *          cache/pkgindex.c, cache/misses.c, cache/pathindex.c and
 *          cache/repoidx.c lay out
 *
 * A file record dropped takes its entry in the path index and the
 * records of the sources it names (cache/pkgindex.c) along.
 *
 * Paths are keyed by their hash because LMDB keys are limited to 511 bytes
 * and paths are not.  Records are stored in host byte order: an index is
 * never moved between machines.
 *
 * The environment is opened MDB_NOTLS so that a reader's transaction is not
 * tied to the thread that created it; each reader is still used by one
 * thread at a time.  Writers follow LMDB's rule of one write transaction at
 * a time, and must finish on the thread that began.
 */
#include "cache/index.h"
#include "cache/index_int.h"

#include <sys/stat.h>

#include <errno.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_READERS 1024
#define NTABLES INDEX_NTABLES

/* The LMDB names of enum index_table, in its order. */
static const char *const table_names[NTABLES] = { "blobs", "lru", "neg",
	"negexp", "pkgs", "members", "pkgmembers", "misses", "missrank",
	"paths", "repo" };

_Static_assert(INDEX_PATHKEY_LEN == SHA256_DIGEST_LENGTH,
    "path keys are SHA-256");
_Static_assert(INDEX_REPO + 1 == NTABLES, "one name per table");

void
index_path_key(const char *path, uint8_t key[INDEX_PATHKEY_LEN])
{
	SHA256((const unsigned char *)path, strlen(path), key);
}

/* The schema version stored in txn; 0 when there is none. */
static int
schema_read(struct index *idx, MDB_txn *txn, uint32_t *found)
{
	MDB_val k = { 6, "schema" }, v;
	int rc;

	*found = 0;
	rc = mdb_get(txn, idx->meta, &k, &v);
	if (rc == 0 && v.mv_size == sizeof(*found))
		memcpy(found, v.mv_data, sizeof(*found));
	else if (rc != 0 && rc != MDB_NOTFOUND)
		return rc;
	return 0;
}

/* Another layout: start over; the next scan fills it again. */
static int
schema_reset(struct index *idx, MDB_txn *txn)
{
	MDB_val k = { 6, "schema" }, v;
	uint32_t version = INDEX_SCHEMA_VERSION;
	int i, rc;

	if ((rc = mdb_drop(txn, idx->files, 0)) != 0 ||
	    (rc = mdb_drop(txn, idx->ids, 0)) != 0 ||
	    (rc = mdb_drop(txn, idx->meta, 0)) != 0)
		return rc;
	for (i = 0; i < NTABLES; i++)
		if ((rc = mdb_drop(txn, idx->tables[i], 0)) != 0)
			return rc;
	v.mv_size = sizeof(version);
	v.mv_data = &version;
	return mdb_put(txn, idx->meta, &k, &v, 0);
}

struct index *
index_open(const char *dir, unsigned flags, uint64_t mapsize, char *err,
    size_t errlen)
{
	struct index *idx;
	unsigned envflags = MDB_NOTLS, dbflags = 0;
	int keep = (flags & (INDEX_RDONLY | INDEX_EXISTING)) != 0;
	MDB_txn *txn = NULL;
	uint32_t found;
	int i, rc;

	if ((idx = calloc(1, sizeof(*idx))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_rwlock_init(&idx->resize, NULL);
	if (flags & INDEX_RDONLY)
		envflags |= MDB_RDONLY;
	else if (!keep) {
		dbflags = MDB_CREATE;
		if (mkdir(dir, 0755) == -1 && errno != EEXIST) {
			snprintf(err, errlen, "%s: %s", dir, strerror(errno));
			goto fail;
		}
	}
	if ((rc = mdb_env_create(&idx->env)) != 0 ||
	    (rc = mdb_env_set_maxdbs(idx->env, 3 + NTABLES)) != 0 ||
	    (rc = mdb_env_set_maxreaders(idx->env, MAX_READERS)) != 0 ||
	    (rc = mdb_env_set_mapsize(idx->env, (size_t)mapsize)) != 0 ||
	    (rc = mdb_env_open(idx->env, dir, envflags, 0644)) != 0) {
		snprintf(err, errlen, "%s: %s", dir, mdb_strerror(rc));
		goto fail;
	}
	/* Clear reader slots left by processes that died. */
	mdb_reader_check(idx->env, NULL);
	if ((rc = mdb_txn_begin(idx->env, NULL,
		 flags & INDEX_RDONLY ? MDB_RDONLY : 0, &txn)) != 0 ||
	    (rc = mdb_dbi_open(txn, "meta", dbflags, &idx->meta)) != 0)
		goto lmdb;
	/* The version first, so that an old index is named as such. */
	if ((rc = schema_read(idx, txn, &found)) != 0)
		goto lmdb;
	if (found != INDEX_SCHEMA_VERSION && keep) {
		snprintf(err, errlen,
		    found == 0 ? "%s: index is empty (has the daemon run?)"
			       : "%s: index schema %u, this program reads %u",
		    dir, found, INDEX_SCHEMA_VERSION);
		goto fail;
	}
	if ((rc = mdb_dbi_open(txn, "files", dbflags, &idx->files)) != 0 ||
	    (rc = mdb_dbi_open(txn, "ids", dbflags | MDB_DUPSORT | MDB_DUPFIXED,
		 &idx->ids)) != 0)
		goto lmdb;
	for (i = 0; i < NTABLES; i++)
		if ((rc = mdb_dbi_open(txn, table_names[i], dbflags,
			 &idx->tables[i])) != 0)
			goto lmdb;
	if (found != INDEX_SCHEMA_VERSION && (rc = schema_reset(idx, txn)) != 0)
		goto lmdb;
	rc = mdb_txn_commit(txn);
	txn = NULL;
	if (rc != 0)
		goto lmdb;
	return idx;
lmdb:
	snprintf(err, errlen, "%s: %s", dir,
	    rc == MDB_NOTFOUND ? "index is empty (has the daemon run?)"
			       : mdb_strerror(rc));
fail:
	if (txn != NULL)
		mdb_txn_abort(txn);
	if (idx->env != NULL)
		mdb_env_close(idx->env);
	pthread_rwlock_destroy(&idx->resize);
	free(idx);
	return NULL;
}

void
index_close(struct index *idx)
{
	if (idx == NULL)
		return;
	mdb_env_close(idx->env);
	pthread_rwlock_destroy(&idx->resize);
	free(idx);
}

/* The map grew under us: adopt its size (no transaction of ours open). */
static void
adopt_mapsize(struct index *idx)
{
	pthread_rwlock_wrlock(&idx->resize);
	mdb_env_set_mapsize(idx->env, 0);
	pthread_rwlock_unlock(&idx->resize);
}

/*
 * Begin a transaction holding resize for reading, adopting a grown map
 * once if need be.  On failure resize is not held.
 */
static int
txn_begin(struct index *idx, unsigned flags, MDB_txn **txn)
{
	int rc, tries;

	for (tries = 0; tries < 2; tries++) {
		pthread_rwlock_rdlock(&idx->resize);
		if ((rc = mdb_txn_begin(idx->env, NULL, flags, txn)) == 0)
			return 0;
		pthread_rwlock_unlock(&idx->resize);
		if (rc != MDB_MAP_RESIZED)
			break;
		adopt_mapsize(idx);
	}
	return rc;
}

struct index_reader *
index_reader_new(struct index *idx)
{
	struct index_reader *rd;

	if ((rd = calloc(1, sizeof(*rd))) == NULL)
		return NULL;
	rd->idx = idx;
	if (txn_begin(idx, MDB_RDONLY, &rd->txn) != 0) {
		free(rd);
		return NULL;
	}
	mdb_txn_reset(rd->txn);
	pthread_rwlock_unlock(&idx->resize);
	return rd;
}

void
index_reader_free(struct index_reader *rd)
{
	if (rd == NULL)
		return;
	mdb_txn_abort(rd->txn);
	free(rd);
}

int
index_reader_begin(struct index_reader *rd)
{
	int rc, tries;

	if (rd->active)
		return 0;
	for (tries = 0; tries < 2; tries++) {
		pthread_rwlock_rdlock(&rd->idx->resize);
		if ((rc = mdb_txn_renew(rd->txn)) == 0) {
			rd->active = 1;
			return 0;
		}
		pthread_rwlock_unlock(&rd->idx->resize);
		if (rc != MDB_MAP_RESIZED)
			break;
		adopt_mapsize(rd->idx);
	}
	return -1;
}

void
index_reader_end(struct index_reader *rd)
{
	if (!rd->active)
		return;
	mdb_txn_reset(rd->txn);
	rd->active = 0;
	pthread_rwlock_unlock(&rd->idx->resize);
}

int
index_get_scan(struct index_reader *rd, struct index_scan *sc)
{
	MDB_val k = { 4, "scan" }, v;
	int rc;

	memset(sc, 0, sizeof(*sc));
	rc = mdb_get(rd->txn, rd->idx->meta, &k, &v);
	/* One of another layout is an older program's: none. */
	if (rc == 0 && v.mv_size == sizeof(*sc))
		memcpy(sc, v.mv_data, sizeof(*sc));
	return rc == 0 || rc == MDB_NOTFOUND ? 0 : -1;
}

struct index_batch *
index_batch_begin(struct index *idx, char *err, size_t errlen)
{
	struct index_batch *b;
	int rc;

	if ((b = calloc(1, sizeof(*b))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	b->idx = idx;
	if ((rc = txn_begin(idx, 0, &b->txn)) != 0) {
		snprintf(err, errlen, "index write: %s", mdb_strerror(rc));
		free(b);
		return NULL;
	}
	return b;
}

int
index_batch_fail(struct index_batch *b, int rc)
{
	if (b->rc == 0)
		b->rc = rc;
	return -1;
}

int
index_batch_set_scan(struct index_batch *b, const struct index_scan *s)
{
	MDB_val k = { 4, "scan" }, v = { sizeof(*s), (void *)s };
	int rc;

	if (b->rc != 0)
		return -1;
	if ((rc = mdb_put(b->txn, b->idx->meta, &k, &v, 0)) != 0)
		return index_batch_fail(b, rc);
	return 0;
}

int
index_batch_commit(struct index_batch *b, char *err, size_t errlen)
{
	int rc = b->rc;

	/* mdb_txn_commit frees the transaction even when it fails. */
	if (rc != 0)
		mdb_txn_abort(b->txn);
	else
		rc = mdb_txn_commit(b->txn);
	if (rc != 0)
		snprintf(err, errlen, "index write: %s",
		    rc == EINVAL ? "path or build-id too long"
				 : mdb_strerror(rc));
	pthread_rwlock_unlock(&b->idx->resize);
	free(b);
	if (rc == 0)
		return 0;
	errno = rc == MDB_MAP_FULL ? ENOSPC : EIO;
	return -1;
}

void
index_batch_abort(struct index_batch *b)
{
	if (b == NULL)
		return;
	mdb_txn_abort(b->txn);
	pthread_rwlock_unlock(&b->idx->resize);
	free(b);
}

/* ------------------------------------------------------ the cache tables */

static int
rec_get(MDB_txn *txn, MDB_dbi dbi, const void *key, size_t keylen,
    struct index_rec *out)
{
	MDB_val k = { keylen, (void *)key }, v;
	int rc;

	if (keylen == 0 || keylen > INDEX_KEY_MAX)
		return -1;
	rc = mdb_get(txn, dbi, &k, &v);
	if (rc == MDB_NOTFOUND)
		return INDEX_NOTFOUND;
	if (rc != 0)
		return -1;
	out->key = key;
	out->keylen = keylen;
	out->val = v.mv_data;
	out->vallen = v.mv_size;
	return 0;
}

/*
 * Call cb on every record of dbi whose key starts with the plen bytes at
 * prefix.  The walk starts at the first key not below the prefix
 * (MDB_SET_RANGE) and ends at the first that does not start with it.  In a
 * write transaction (del set) cb may ask for the record to be deleted;
 * LMDB's cursor then moves on by itself and its next MDB_NEXT yields the
 * record that followed.  *lmdb receives an LMDB failure, for the batch to
 * remember.  With back, the walk goes from the last key to the first
 * (without a prefix, and never deleting).
 */
static int
rec_walk_dir(MDB_txn *txn, MDB_dbi dbi, const void *prefix, size_t plen,
    int del, int back, index_rec_cb cb, void *arg, int *lmdb)
{
	MDB_cursor *cur;
	MDB_val k = { plen, (void *)prefix }, v;
	struct index_rec r;
	int rc, ret = 0;

	*lmdb = 0;
	if (plen > INDEX_KEY_MAX) {
		*lmdb = MDB_BAD_VALSIZE;
		return -1;
	}
	if ((rc = mdb_cursor_open(txn, dbi, &cur)) != 0) {
		*lmdb = rc;
		return -1;
	}
	for (rc = mdb_cursor_get(cur, &k, &v,
		 back           ? MDB_LAST
		     : plen > 0 ? MDB_SET_RANGE
				: MDB_FIRST);
	     rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, back ? MDB_PREV : MDB_NEXT)) {
		if (plen > 0 &&
		    (k.mv_size < plen || memcmp(k.mv_data, prefix, plen) != 0))
			break;
		r.key = k.mv_data;
		r.keylen = k.mv_size;
		r.val = v.mv_data;
		r.vallen = v.mv_size;
		ret = cb(&r, arg);
		if (ret == INDEX_WALK_DELETE && del) {
			if ((rc = mdb_cursor_del(cur, 0)) != 0)
				break;
			ret = 0;
		} else if (ret != 0) {
			break;
		}
	}
	mdb_cursor_close(cur);
	if (rc != 0 && rc != MDB_NOTFOUND) {
		*lmdb = rc;
		return -1;
	}
	return ret == INDEX_WALK_DELETE ? -1 : ret;
}

static int
rec_walk(MDB_txn *txn, MDB_dbi dbi, const void *prefix, size_t plen, int del,
    index_rec_cb cb, void *arg, int *lmdb)
{
	return rec_walk_dir(txn, dbi, prefix, plen, del, 0, cb, arg, lmdb);
}

static int
counter_get(MDB_txn *txn, struct index *idx, const char *name, uint64_t *v)
{
	MDB_val k = { strlen(name), (void *)name }, val;
	int rc;

	*v = 0;
	rc = mdb_get(txn, idx->meta, &k, &val);
	if (rc == MDB_NOTFOUND)
		return INDEX_NOTFOUND;
	if (rc != 0)
		return -1;
	/* A damaged counter reads as 0; the next recovery rewrites it. */
	if (val.mv_size == sizeof(*v))
		memcpy(v, val.mv_data, sizeof(*v));
	return 0;
}

int
index_get_rec(struct index_reader *rd, enum index_table t, const void *key,
    size_t keylen, struct index_rec *out)
{
	return rec_get(rd->txn, rd->idx->tables[t], key, keylen, out);
}

int
index_walk_prefix(struct index_reader *rd, enum index_table t,
    const void *prefix, size_t len, index_rec_cb cb, void *arg)
{
	int lmdb;

	return rec_walk(rd->txn, rd->idx->tables[t], prefix, len, 0, cb, arg,
	    &lmdb);
}

int
index_walk_back(struct index_reader *rd, enum index_table t, index_rec_cb cb,
    void *arg)
{
	int lmdb;

	return rec_walk_dir(rd->txn, rd->idx->tables[t], NULL, 0, 0, 1, cb, arg,
	    &lmdb);
}

int
index_count(struct index_reader *rd, enum index_table t, uint64_t *n)
{
	MDB_stat st;

	if (mdb_stat(rd->txn, rd->idx->tables[t], &st) != 0)
		return -1;
	*n = st.ms_entries;
	return 0;
}

int
index_batch_count(struct index_batch *b, enum index_table t, uint64_t *n)
{
	MDB_stat st;

	if (b->rc != 0 || mdb_stat(b->txn, b->idx->tables[t], &st) != 0)
		return -1;
	*n = st.ms_entries;
	return 0;
}

/* The pages a table's tree holds. */
static uint64_t
pages_of(const MDB_stat *st)
{
	return st->ms_branch_pages + st->ms_leaf_pages + st->ms_overflow_pages;
}

/* Records deleted by one transaction of a sweep, at first. */
#define SWEEP_CHUNK 1024

int
index_sweep(struct index *idx, index_sweep_fn step, void *arg, uint64_t *n,
    size_t nn, char *err, size_t errlen)
{
	unsigned limit = SWEEP_CHUNK, done;
	struct index_batch *b;
	uint64_t counted[INDEX_SWEEP_COUNTS];
	size_t i;

	if (nn > INDEX_SWEEP_COUNTS) {
		snprintf(err, errlen, "index_sweep: %zu counts", nn);
		return -1;
	}
	memset(n, 0, nn * sizeof(*n));
	for (;;) {
		if ((b = index_batch_begin(idx, err, errlen)) == NULL)
			return -1;
		memset(counted, 0, sizeof(counted));
		done = step(b, limit, counted, arg);
		if (index_batch_commit(b, err, errlen) == -1) {
			if (errno != ENOSPC || limit == 1)
				return -1;
			limit /= 2;
			continue;
		}
		for (i = 0; i < nn; i++)
			n[i] += counted[i];
		if (done < limit)
			return 0;
	}
}

int
index_usage(struct index *idx, uint64_t *used, uint64_t *size)
{
	MDB_dbi dbis[3 + NTABLES];
	MDB_envinfo info;
	MDB_stat st;
	MDB_txn *txn;
	uint64_t pages;
	size_t i;
	int rc = 0;

	/*
	 * The pages in the trees, not the end of the file: pages freed by
	 * deletions are reused, and count as room.
	 */
	dbis[0] = idx->meta;
	dbis[1] = idx->files;
	dbis[2] = idx->ids;
	for (i = 0; i < NTABLES; i++)
		dbis[3 + i] = idx->tables[i];
	if (txn_begin(idx, MDB_RDONLY, &txn) != 0)
		return -1;
	if (mdb_env_info(idx->env, &info) != 0 ||
	    mdb_env_stat(idx->env, &st) != 0) {
		rc = -1;
		goto out;
	}
	pages = pages_of(&st) + 2; /* the main tree and the two metas */
	for (i = 0; i < sizeof(dbis) / sizeof(dbis[0]); i++) {
		if (mdb_stat(txn, dbis[i], &st) != 0) {
			rc = -1;
			goto out;
		}
		pages += pages_of(&st);
	}
	*used = pages * st.ms_psize;
	*size = info.me_mapsize;
out:
	mdb_txn_abort(txn);
	pthread_rwlock_unlock(&idx->resize);
	return rc;
}

int
index_get_counter(struct index_reader *rd, const char *name, uint64_t *v)
{
	return counter_get(rd->txn, rd->idx, name, v);
}

int
index_batch_get_rec(struct index_batch *b, enum index_table t, const void *key,
    size_t keylen, struct index_rec *out)
{
	int rc;

	if (b->rc != 0)
		return -1;
	rc = rec_get(b->txn, b->idx->tables[t], key, keylen, out);
	return rc == -1 ? index_batch_fail(b, MDB_BAD_VALSIZE) : rc;
}

int
index_batch_walk(struct index_batch *b, enum index_table t, index_rec_cb cb,
    void *arg)
{
	return index_batch_walk_prefix(b, t, NULL, 0, cb, arg);
}

int
index_batch_walk_prefix(struct index_batch *b, enum index_table t,
    const void *prefix, size_t len, index_rec_cb cb, void *arg)
{
	int lmdb, ret;

	if (b->rc != 0)
		return -1;
	ret =
	    rec_walk(b->txn, b->idx->tables[t], prefix, len, 1, cb, arg, &lmdb);
	if (lmdb != 0)
		return index_batch_fail(b, lmdb);
	return ret;
}

int
index_batch_get_counter(struct index_batch *b, const char *name, uint64_t *v)
{
	int rc;

	if (b->rc != 0)
		return -1;
	if ((rc = counter_get(b->txn, b->idx, name, v)) == -1)
		return index_batch_fail(b, MDB_CORRUPTED);
	return rc;
}

int
index_batch_put_rec(struct index_batch *b, enum index_table t, const void *key,
    size_t keylen, const void *val, size_t vallen)
{
	MDB_val k = { keylen, (void *)key }, v = { vallen, (void *)val };
	int rc;

	if (b->rc != 0)
		return -1;
	if (keylen == 0 || keylen > INDEX_KEY_MAX)
		return index_batch_fail(b, MDB_BAD_VALSIZE);
	if ((rc = mdb_put(b->txn, b->idx->tables[t], &k, &v, 0)) != 0)
		return index_batch_fail(b, rc);
	return 0;
}

int
index_batch_del_rec(struct index_batch *b, enum index_table t, const void *key,
    size_t keylen)
{
	MDB_val k = { keylen, (void *)key };
	int rc;

	if (b->rc != 0)
		return -1;
	if (keylen == 0 || keylen > INDEX_KEY_MAX)
		return index_batch_fail(b, MDB_BAD_VALSIZE);
	rc = mdb_del(b->txn, b->idx->tables[t], &k, NULL);
	if (rc == MDB_NOTFOUND)
		return INDEX_NOTFOUND;
	if (rc != 0)
		return index_batch_fail(b, rc);
	return 0;
}

int
index_batch_set_counter(struct index_batch *b, const char *name, uint64_t v)
{
	MDB_val k = { strlen(name), (void *)name }, val = { sizeof(v), &v };
	int rc;

	if (b->rc != 0)
		return -1;
	if ((rc = mdb_put(b->txn, b->idx->meta, &k, &val, 0)) != 0)
		return index_batch_fail(b, rc);
	return 0;
}

/* Big-endian with the sign bit flipped: memcmp order is numeric order. */
void
index_time_encode(int64_t t, uint8_t out[INDEX_TIME_LEN])
{
	uint64_t u = (uint64_t)t ^ (1ull << 63);
	int i;

	for (i = INDEX_TIME_LEN - 1; i >= 0; i--) {
		out[i] = (uint8_t)u;
		u >>= 8;
	}
}

int64_t
index_time_decode(const uint8_t in[INDEX_TIME_LEN])
{
	uint64_t u = 0;
	int i;

	for (i = 0; i < INDEX_TIME_LEN; i++)
		u = u << 8 | in[i];
	return (int64_t)(u ^ (1ull << 63));
}
