/*
 * cache/files.c: the local files' records (cache/files.h).
 *
 * Two databases of the index (cache/index_int.h):
 *
 *   files  SHA-256(path) -> file record (fixed header, then path and NUL)
 *   ids    kind byte + build-id -> SHA-256(path) of each file holding it
 *          (MDB_DUPSORT | MDB_DUPFIXED: one key, many 32-byte values)
 *
 * Every change of a record changes its ids entries and its path index
 * entry (cache/pathindex.h) in the same batch; a record dropped takes the
 * records of the sources it names (cache/pkgindex.h) along.  Threads: the caller's
 * reader or batch.
 */
#include "cache/files.h"

#include <errno.h>
#include <string.h>

#include "cache/index_int.h"
#include "cache/pathindex.h"
#include "cache/pkgindex.h"

#define PATHKEY_LEN INDEX_PATHKEY_LEN

/* The ids key of (kind, id) into buf; returns its length. */
static size_t
id_key(enum elf_kind kind, const struct buildid *id,
    uint8_t buf[1 + BUILDID_MAX])
{
	buf[0] = (uint8_t)kind;
	memcpy(buf + 1, id->bytes, id->len);
	return 1 + (size_t)id->len;
}

static int
file_decode(const MDB_val *v, struct index_file *f)
{
	return index_file_decode(v->mv_data, v->mv_size, f);
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
			return index_batch_fail(b, rc);
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
	size_t len = index_file_size(f);
	MDB_val k = { PATHKEY_LEN, key }, v, idk;
	unsigned kind;
	int rc;

	if (b->rc != 0)
		return -1;
	if (len == 0)
		return index_batch_fail(b, EINVAL);
	index_path_key(f->path, key);
	rc = get_by_key(b->txn, b->idx, key, &old);
	if (rc == -1)
		return index_batch_fail(b, MDB_CORRUPTED);
	if (rc == 0 && unlink_ids(b, key, &old) == -1)
		return -1;
	if (local_path_put(b, f) == -1)
		return -1;

	v.mv_size = len;
	if ((rc = mdb_put(b->txn, b->idx->files, &k, &v, MDB_RESERVE)) != 0)
		return index_batch_fail(b, rc);
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
			return index_batch_fail(b, rc);
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
		return rc == INDEX_NOTFOUND
		    ? rc
		    : index_batch_fail(b, MDB_CORRUPTED);
	if (pathidx_del(b, PATHIDX_LOCAL, old.path, NULL) == -1 ||
	    pkgidx_del_local_sources(b, old.path) == -1 ||
	    unlink_ids(b, key, &old) == -1)
		return -1;
	if ((rc = mdb_del(b->txn, b->idx->files, &k, NULL)) != 0)
		return index_batch_fail(b, rc);
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
		return index_batch_fail(b, rc);
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
			index_batch_fail(b, rc);
			break;
		}
		(*removed)++;
	}
	mdb_cursor_close(cur);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return index_batch_fail(b, rc);
	return b->rc == 0 ? 0 : -1;
}
