/*
 * cache/index.c: the LMDB index.
 *
 * Thirteen databases in one environment:
 *
 *   meta   "schema" -> uint32 version; "scan" -> struct index_scan;
 *          counters (e.g. the cache's blob bytes) -> uint64
 *   files  SHA-256(path) -> file record (fixed header, then path and NUL)
 *   ids    kind byte + build-id -> SHA-256(path) of each file holding it
 *          (MDB_DUPSORT | MDB_DUPFIXED: one key, many 32-byte values)
 *   blobs, lru, neg, negexp, pkgs, members, pkgmembers, misses,
 *          missrank, paths   the generic tables (enum index_table), whose
 *          records cache/blobstore.c, cache/negative.c, cache/pkgindex.c,
 *          cache/misses.c and cache/pathindex.c lay out
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
#include "cache/pathindex.h"
#include "cache/pkgindex.h"

#include <sys/stat.h>

#include <errno.h>
#include <pthread.h>
#include <lmdb.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATHKEY_LEN INDEX_PATHKEY_LEN
/* In file_hdr.kinds beside ELF_KIND_*: index_file.sources. */
#define HDR_SOURCES 0x80
#define MAX_READERS 1024
#define PATH_LEN_MAX 4095
#define NTABLES 11

/* The LMDB names of enum index_table, in its order. */
static const char *const table_names[NTABLES] = { "blobs", "lru", "neg",
	"negexp", "pkgs", "members", "pkgmembers", "misses", "missrank",
	"paths", "repo" };

_Static_assert(PATHKEY_LEN == SHA256_DIGEST_LENGTH, "path keys are SHA-256");

/*
 * Another process (the CLI) may grow the map: LMDB then answers
 * MDB_MAP_RESIZED, and this process must adopt the new size with
 * mdb_env_set_mapsize(env, 0) while none of its transactions is active.
 * Every transaction holds resize for reading from begin to end; adopting
 * takes it for writing.
 */
struct index {
	pthread_rwlock_t resize;
	MDB_env *env;
	MDB_dbi meta;
	MDB_dbi files;
	MDB_dbi ids;
	MDB_dbi tables[NTABLES];
};

struct index_reader {
	struct index *idx;
	MDB_txn *txn;
	int active;
};

struct index_batch {
	struct index *idx;
	MDB_txn *txn;
	int rc; /* first LMDB error, 0 when none */
};

/* The stored file record: this header, then the path and its NUL. */
struct file_hdr {
	uint64_t size;
	int64_t mtime_sec;
	uint64_t ino;
	uint64_t dev;
	uint32_t mtime_nsec;
	uint16_t pathlen;
	uint8_t kinds;
	uint8_t idlen;
	uint8_t id[BUILDID_MAX];
};

void
index_path_key(const char *path, uint8_t key[INDEX_PATHKEY_LEN])
{
	SHA256((const unsigned char *)path, strlen(path), key);
}

/* The ids key of (kind, id) into buf; returns its length. */
static size_t
id_key(enum elf_kind kind, const struct buildid *id,
    uint8_t buf[1 + BUILDID_MAX])
{
	buf[0] = (uint8_t)kind;
	memcpy(buf + 1, id->bytes, id->len);
	return 1 + (size_t)id->len;
}

int
index_file_unchanged(const struct index_file *rec, const struct stat *st)
{
	return rec->size == (uint64_t)st->st_size &&
	    rec->mtime_sec == (int64_t)st->st_mtim.tv_sec &&
	    rec->mtime_nsec == (uint32_t)st->st_mtim.tv_nsec &&
	    rec->ino == (uint64_t)st->st_ino &&
	    rec->dev == (uint64_t)st->st_dev;
}

size_t
index_file_encode(const struct index_file *f, void *buf, size_t cap)
{
	size_t pathlen = strlen(f->path);
	struct file_hdr h;

	if (pathlen > PATH_LEN_MAX || f->id.len > BUILDID_MAX ||
	    cap < sizeof(h) + pathlen + 1)
		return 0;
	memset(&h, 0, sizeof(h));
	h.size = f->size;
	h.mtime_sec = f->mtime_sec;
	h.mtime_nsec = f->mtime_nsec;
	h.ino = f->ino;
	h.dev = f->dev;
	h.pathlen = (uint16_t)pathlen;
	h.kinds = (uint8_t)((f->kinds & ELF_KIND_ALL) |
	    (f->sources ? HDR_SOURCES : 0));
	h.idlen = f->id.len;
	memcpy(h.id, f->id.bytes, f->id.len);
	memcpy(buf, &h, sizeof(h));
	memcpy((char *)buf + sizeof(h), f->path, pathlen + 1);
	return sizeof(h) + pathlen + 1;
}

int
index_file_decode(const void *val, size_t len, struct index_file *f)
{
	struct file_hdr h;
	const char *path;

	if (len < sizeof(h) + 1)
		return -1;
	memcpy(&h, val, sizeof(h));
	path = (const char *)val + sizeof(h);
	if (len != sizeof(h) + h.pathlen + 1 || path[h.pathlen] != '\0' ||
	    h.idlen > BUILDID_MAX ||
	    (h.kinds & ~(ELF_KIND_ALL | HDR_SOURCES)) != 0)
		return -1;
	f->path = path;
	f->size = h.size;
	f->mtime_sec = h.mtime_sec;
	f->mtime_nsec = h.mtime_nsec;
	f->ino = h.ino;
	f->dev = h.dev;
	f->kinds = h.kinds & ELF_KIND_ALL;
	f->sources = (h.kinds & HDR_SOURCES) != 0;
	f->id.len = h.idlen;
	memcpy(f->id.bytes, h.id, h.idlen);
	return 0;
}

static int
file_decode(const MDB_val *v, struct index_file *f)
{
	return index_file_decode(v->mv_data, v->mv_size, f);
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

static int
get_by_key(MDB_txn *txn, struct index *idx, const uint8_t key[PATHKEY_LEN],
    struct index_file *out)
{
	MDB_val k = { PATHKEY_LEN, (void *)key }, v;
	int rc;

	rc = mdb_get(txn, idx->files, &k, &v);
	if (rc == MDB_NOTFOUND)
		return INDEX_NOTFOUND;
	if (rc != 0 || file_decode(&v, out) == -1)
		return -1;
	return 0;
}

int
index_find(struct index_reader *rd, const struct buildid *id,
    enum elf_kind kind, index_file_cb cb, void *arg)
{
	uint8_t keybuf[1 + BUILDID_MAX];
	MDB_val k, v;
	MDB_cursor *cur;
	struct index_file f;
	int rc, ret = 0;

	k.mv_size = id_key(kind, id, keybuf);
	k.mv_data = keybuf;
	if (mdb_cursor_open(rd->txn, rd->idx->ids, &cur) != 0)
		return -1;
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_KEY);
	while (rc == 0) {
		if (v.mv_size == PATHKEY_LEN &&
		    get_by_key(rd->txn, rd->idx, v.mv_data, &f) == 0) {
			if ((ret = cb(&f, arg)) != 0)
				break;
		}
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT_DUP);
	}
	if (rc != 0 && rc != MDB_NOTFOUND)
		ret = -1;
	mdb_cursor_close(cur);
	return ret;
}

int
index_get_file(struct index_reader *rd, const char *path,
    struct index_file *out)
{
	uint8_t key[PATHKEY_LEN];

	index_path_key(path, key);
	return get_by_key(rd->txn, rd->idx, key, out);
}

/* Call cb on every decodable file record of txn. */
static int
foreach_file(MDB_txn *txn, struct index *idx, index_file_cb cb, void *arg)
{
	MDB_cursor *cur;
	MDB_val k, v;
	struct index_file f;
	int rc, ret = 0;

	if (mdb_cursor_open(txn, idx->files, &cur) != 0)
		return -1;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (file_decode(&v, &f) == -1)
			continue;
		if ((ret = cb(&f, arg)) != 0)
			break;
	}
	if (rc != 0 && rc != MDB_NOTFOUND)
		ret = -1;
	mdb_cursor_close(cur);
	return ret;
}

int
index_foreach_file(struct index_reader *rd, index_file_cb cb, void *arg)
{
	return foreach_file(rd->txn, rd->idx, cb, arg);
}

static int
stats_file_cb(const struct index_file *f, void *arg)
{
	struct index_stats *st = arg;

	st->files++;
	if (f->kinds != 0)
		st->bytes += f->size;
	return 0;
}

int
index_stats(struct index_reader *rd, struct index_stats *st)
{
	MDB_val k, v;
	MDB_cursor *cur;
	size_t dups;
	int rc;

	memset(st, 0, sizeof(*st));
	if (foreach_file(rd->txn, rd->idx, stats_file_cb, st) == -1)
		return -1;
	if (mdb_cursor_open(rd->txn, rd->idx->ids, &cur) != 0)
		return -1;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT_NODUP)) {
		if (k.mv_size < 1 || mdb_cursor_count(cur, &dups) != 0)
			continue;
		if (((uint8_t *)k.mv_data)[0] == ELF_KIND_DEBUGINFO)
			st->debuginfo++;
		else if (((uint8_t *)k.mv_data)[0] == ELF_KIND_EXECUTABLE)
			st->executable++;
	}
	mdb_cursor_close(cur);
	if (rc != MDB_NOTFOUND)
		return -1;
	return index_get_scan(rd, &st->scan);
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

/* Remember the first failure; later operations become no-ops. */
static int
batch_fail(struct index_batch *b, int rc)
{
	if (b->rc == 0)
		b->rc = rc;
	return -1;
}

/* Remove the ids entries that point at the record under key. */
static int
unlink_ids(struct index_batch *b, const uint8_t key[PATHKEY_LEN],
    const struct index_file *old)
{
	uint8_t keybuf[1 + BUILDID_MAX];
	MDB_val k, v = { PATHKEY_LEN, (void *)key };
	unsigned kind;
	int rc;

	if (old->id.len == 0)
		return 0;
	for (kind = ELF_KIND_DEBUGINFO; kind <= ELF_KIND_EXECUTABLE;
	     kind <<= 1) {
		if ((old->kinds & kind) == 0)
			continue;
		k.mv_size = id_key(kind, &old->id, keybuf);
		k.mv_data = keybuf;
		rc = mdb_del(b->txn, b->idx->ids, &k, &v);
		if (rc != 0 && rc != MDB_NOTFOUND)
			return batch_fail(b, rc);
	}
	return 0;
}

/* Keep the path index's entry of a local file in step with its record. */
static int
local_path_put(struct index_batch *b, const struct index_file *f)
{
	struct pathidx_entry e = { f->path, "", f->kinds, f->id,
		PATHIDX_LOCAL };

	if (f->id.len > 0 && f->kinds != 0)
		return pathidx_put(b, &e);
	return pathidx_del(b, PATHIDX_LOCAL, f->path, NULL) == -1 ? -1 : 0;
}

int
index_batch_put_file(struct index_batch *b, const struct index_file *f)
{
	uint8_t key[PATHKEY_LEN], keybuf[1 + BUILDID_MAX];
	struct index_file old, rec = *f;
	size_t pathlen = strlen(f->path);
	MDB_val k = { PATHKEY_LEN, key }, v, idk;
	unsigned kind;
	int rc;

	if (b->rc != 0)
		return -1;
	if (pathlen > PATH_LEN_MAX || f->id.len > BUILDID_MAX)
		return batch_fail(b, EINVAL);
	index_path_key(f->path, key);
	rc = get_by_key(b->txn, b->idx, key, &old);
	if (rc == -1)
		return batch_fail(b, MDB_CORRUPTED);
	if (rc == 0 && unlink_ids(b, key, &old) == -1)
		return -1;
	if (local_path_put(b, f) == -1)
		return -1;

	v.mv_size = sizeof(struct file_hdr) + pathlen + 1;
	if ((rc = mdb_put(b->txn, b->idx->files, &k, &v, MDB_RESERVE)) != 0)
		return batch_fail(b, rc);
	/* Kinds without a build-id mean nothing to serve. */
	if (rec.id.len == 0)
		rec.kinds = 0;
	index_file_encode(&rec, v.mv_data, v.mv_size);

	for (kind = ELF_KIND_DEBUGINFO; kind <= ELF_KIND_EXECUTABLE;
	     kind <<= 1) {
		if ((rec.kinds & kind) == 0)
			continue;
		idk.mv_size = id_key(kind, &f->id, keybuf);
		idk.mv_data = keybuf;
		v.mv_size = PATHKEY_LEN;
		v.mv_data = key;
		rc = mdb_put(b->txn, b->idx->ids, &idk, &v, MDB_NODUPDATA);
		if (rc != 0 && rc != MDB_KEYEXIST)
			return batch_fail(b, rc);
	}
	return 0;
}

int
index_batch_del_file(struct index_batch *b, const char *path)
{
	uint8_t key[PATHKEY_LEN];
	struct index_file old;
	MDB_val k = { PATHKEY_LEN, key };
	int rc;

	if (b->rc != 0)
		return -1;
	index_path_key(path, key);
	rc = get_by_key(b->txn, b->idx, key, &old);
	if (rc != 0)
		return rc == INDEX_NOTFOUND ? rc : batch_fail(b, MDB_CORRUPTED);
	if (pathidx_del(b, PATHIDX_LOCAL, old.path, NULL) == -1 ||
	    pkgidx_del_local_sources(b, old.path) == -1 ||
	    unlink_ids(b, key, &old) == -1)
		return -1;
	if ((rc = mdb_del(b->txn, b->idx->files, &k, NULL)) != 0)
		return batch_fail(b, rc);
	return 0;
}

int
index_batch_prune(struct index_batch *b,
    int (*keep)(const char *path, void *arg), void *arg, uint64_t *removed)
{
	MDB_cursor *cur;
	MDB_val k, v;
	struct index_file f;
	int rc;

	*removed = 0;
	if (b->rc != 0)
		return -1;
	if ((rc = mdb_cursor_open(b->txn, b->idx->files, &cur)) != 0)
		return batch_fail(b, rc);
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		/* A damaged record is pruned too: the next scan redoes it. */
		if (file_decode(&v, &f) == 0) {
			if (keep(f.path, arg))
				continue;
			if (pathidx_del(b, PATHIDX_LOCAL, f.path, NULL) == -1 ||
			    pkgidx_del_local_sources(b, f.path) == -1)
				break;
			if (k.mv_size == PATHKEY_LEN &&
			    unlink_ids(b, k.mv_data, &f) == -1)
				break;
		}
		/* LMDB leaves the cursor on the next record after a delete. */
		if ((rc = mdb_cursor_del(cur, 0)) != 0) {
			batch_fail(b, rc);
			break;
		}
		(*removed)++;
	}
	mdb_cursor_close(cur);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return batch_fail(b, rc);
	return b->rc == 0 ? 0 : -1;
}

int
index_batch_set_scan(struct index_batch *b, const struct index_scan *s)
{
	MDB_val k = { 4, "scan" }, v = { sizeof(*s), (void *)s };
	int rc;

	if (b->rc != 0)
		return -1;
	if ((rc = mdb_put(b->txn, b->idx->meta, &k, &v, 0)) != 0)
		return batch_fail(b, rc);
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
	return rc == -1 ? batch_fail(b, MDB_BAD_VALSIZE) : rc;
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
		return batch_fail(b, lmdb);
	return ret;
}

int
index_batch_get_counter(struct index_batch *b, const char *name, uint64_t *v)
{
	int rc;

	if (b->rc != 0)
		return -1;
	if ((rc = counter_get(b->txn, b->idx, name, v)) == -1)
		return batch_fail(b, MDB_CORRUPTED);
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
		return batch_fail(b, MDB_BAD_VALSIZE);
	if ((rc = mdb_put(b->txn, b->idx->tables[t], &k, &v, 0)) != 0)
		return batch_fail(b, rc);
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
		return batch_fail(b, MDB_BAD_VALSIZE);
	rc = mdb_del(b->txn, b->idx->tables[t], &k, NULL);
	if (rc == MDB_NOTFOUND)
		return INDEX_NOTFOUND;
	if (rc != 0)
		return batch_fail(b, rc);
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
		return batch_fail(b, rc);
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
