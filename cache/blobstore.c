/*
 * cache/blobstore.c: blob files on disk, their entries in the index.
 *
 * Three things change together in one write transaction of the index: the
 * entry (table blobs: cache key -> struct blob_hdr, then arg, source and
 * the meta area, each with a NUL), its place in the LRU order (table lru:
 * atime, stored, cache key -> nothing), and the byte total (counter
 * "blob_bytes").
 * Uploaded entries have no LRU key (nothing evicts them) and their bytes
 * are counted apart ("upload_bytes").
 * Files are renamed into place and unlinked while the writer holds that
 * transaction, so that publishes, evictions and purges of one key, from
 * any thread or process, are ordered by LMDB's writer lock and never
 * unlink a file that a later entry names.  The order in each is chosen for
 * crashes: publish renames, then commits (a file without entry is an
 * orphan that recovery deletes); eviction and purge unlink, then commit
 * (an entry without file is found by recovery, and until then a lookup
 * finds no file and refetches).  Eviction and purge are sweeps
 * (index_sweep): many small transactions, each unlinking then committing
 * its share, so that they work when the map is full.
 *
 * Uploads (blob_info.uploaded) are files of the upload directory, not of
 * blobs/: the same names, published the same way from the upload
 * directory's own tmp/ (a rename never crosses file systems).  Their
 * entries are in the same index, so one lookup finds either; blob_open
 * tries the cache directory first.  Recovery, at start-up, is
 * cache/blobrecover.c's (it never deletes an upload file); the two files
 * share cache/blobstore_int.h, and this one never calls that one.
 *
 * Hits do not write: blob_touch appends to a bounded buffer under a mutex
 * held for a copy, and blob_flush_touches moves the atimes of many hits in
 * one transaction, in which the missing-id report (cache/misses.h) also
 * forgets the kinds those hits served; a publish does the same in its
 * own.  Pins are atomic counters in hashed buckets.
 *
 * Everything read back from the index is checked before use; a damaged
 * entry is an error for a lookup, is skipped by eviction and removed by
 * recovery.
 */
#include "cache/blobstore.h"

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/blobstore_int.h"
#include "cache/index.h"
#include "cache/misses.h"
#include "cache/negative.h"
#include "cache/pathindex.h"
#include "indexer/elf.h"

#define TOUCH_MAX 4096
/* The longest arg, source and meta area an entry keeps. */
#define BLOB_STR_MAX 65536
#define LRUKEY_LEN (2 * INDEX_TIME_LEN + CACHE_KEY_LEN)
#define PURGE_STAMP_MAX (8 + BUILDID_HEX_MAX)

struct touch {
	struct cache_key k;
	int64_t t;
};

/* ---------------------------------------------------------------- paths */

/* The file of hash: in blobs/, or for an upload in the upload directory. */
void
blob_path(const struct blobstore *bs, const uint8_t hash[CACHE_KEY_LEN],
    int uploaded, char path[PATH_MAX])
{
	int up = uploaded && bs->updir != NULL;
	const char *dir = up ? bs->updir : bs->dir, *sub = up ? "/" : "/blobs/";
	size_t n = strlen(dir), m = strlen(sub);
	struct cache_key k;

	/*
	 * DIR/blobs/HE/HEX or UPDIR/HE/HEX, without printf: every cache hit
	 * opens one.  blobstore_new and blobstore_set_upload_dir made sure
	 * it fits.
	 */
	memcpy(k.hash, hash, CACHE_KEY_LEN);
	memcpy(path, dir, n);
	memcpy(path + n, sub, m);
	n += m;
	cache_key_hex(&k, path + n + 3);
	memcpy(path + n, path + n + 3, 2);
	path[n + 2] = '/';
}

/* 0 when name is the hex of a key (lowercase); the key in *k. */
int
blob_parse_hex_key(const char *name, struct cache_key *k)
{
	char hex[CACHE_KEY_HEX];
	size_t i;
	int hi, lo;

	if (strlen(name) != 2 * CACHE_KEY_LEN)
		return -1;
	/* buildid_hexval() folds case; a blob name is spelt lowercase. */
	for (i = 0; i < CACHE_KEY_LEN; i++) {
		hi = buildid_hexval((unsigned char)name[2 * i]);
		lo = buildid_hexval((unsigned char)name[2 * i + 1]);
		if (hi == -1 || lo == -1)
			return -1;
		k->hash[i] = (uint8_t)(hi << 4 | lo);
	}
	cache_key_hex(k, hex);
	return strcmp(hex, name) == 0 ? 0 : -1;
}

/* ------------------------------------------------------------- entries */

static void
lru_key(int64_t atime, int64_t stored, const uint8_t hash[CACHE_KEY_LEN],
    uint8_t out[LRUKEY_LEN])
{
	index_time_encode(atime, out);
	index_time_encode(stored, out + INDEX_TIME_LEN);
	memcpy(out + 2 * INDEX_TIME_LEN, hash, CACHE_KEY_LEN);
}

_Static_assert(sizeof(struct blob_hdr) == 112,
    "the version byte is in what was padding: older entries keep their size");

/*
 * The meta area of a version 1 entry, p[0..len) (a NUL after it) into *m:
 * three NUL-terminated strings, then the opaque bytes.  -1 when the NULs
 * are not there.
 */
static int
meta_decode(const char *p, size_t len, struct cache_meta *m)
{
	const char **str[3] = { &m->file, &m->archive, &m->imasig };
	const char *end = p + len, *nul;
	size_t i;

	for (i = 0; i < 3; i++) {
		if ((nul = memchr(p, '\0', (size_t)(end - p))) == NULL)
			return -1;
		*str[i] = p;
		p = nul + 1;
	}
	m->extra = p;
	m->extra_len = (size_t)(end - p);
	return 0;
}

int
blob_decode(const struct index_rec *r, struct blob_hdr *h,
    struct blob_info *info)
{
	const char *p = (const char *)r->val + sizeof(*h);
	struct cache_meta m;
	uint64_t src, meta, end;

	if (r->keylen != CACHE_KEY_LEN || r->vallen < sizeof(*h))
		return -1;
	memcpy(h, r->val, sizeof(*h));
	/* Offsets after the header, in 64 bits: no sum of them wraps. */
	src = (uint64_t)h->arglen + 1;
	meta = src + h->sourcelen + 1;
	end = meta + h->metalen + 1;
	if (end != r->vallen - sizeof(*h) || h->idlen > BUILDID_MAX ||
	    cache_kind_name((enum cache_kind)h->kind) == NULL ||
	    h->version > BLOB_VERSION || p[src - 1] != '\0' ||
	    p[meta - 1] != '\0' || p[end - 1] != '\0')
		return -1;
	if (h->version == 0) {
		/* Header lines: kept whole, as opaque bytes; no values ("",
		 * the entry's last NUL). */
		m.file = m.archive = m.imasig = p + end - 1;
		m.extra = p + meta;
		m.extra_len = h->metalen;
	} else if (meta_decode(p + meta, h->metalen, &m) == -1) {
		return -1;
	}
	if (info == NULL)
		return 0;
	memset(info, 0, sizeof(*info));
	info->size = h->size;
	info->mtime = h->mtime;
	info->stored = h->stored;
	info->atime = h->atime;
	info->id.len = h->idlen;
	memcpy(info->id.bytes, h->id, h->idlen);
	info->kind = (enum cache_kind)h->kind;
	info->arg = p;
	info->source = p + src;
	info->meta = m;
	info->uploaded = (h->flags & BLOB_F_UPLOADED) != 0;
	return 0;
}

/* Encode info as an entry in a new buffer of *len bytes; NULL when a
 * string is too long (or no memory). */
uint8_t *
blob_encode(const struct blob_info *info, int64_t now, size_t *len)
{
	const char *arg = info->arg != NULL ? info->arg : "";
	const char *source = info->source != NULL ? info->source : "";
	size_t arglen = strlen(arg), sourcelen = strlen(source);
	size_t metalen = cache_meta_size(&info->meta);
	struct cache_meta copy;
	struct blob_hdr h;
	uint8_t *buf, *p;

	/* The area's last NUL is the one every string of the entry has. */
	metalen--;
	if (arglen > BLOB_STR_MAX || sourcelen > BLOB_STR_MAX ||
	    metalen > BLOB_STR_MAX || info->id.len > BUILDID_MAX ||
	    cache_kind_name(info->kind) == NULL)
		return NULL;
	memset(&h, 0, sizeof(h));
	h.size = info->size;
	h.mtime = info->mtime;
	h.stored = now;
	h.atime = now;
	h.arglen = (uint32_t)arglen;
	h.sourcelen = (uint32_t)sourcelen;
	h.metalen = (uint32_t)metalen;
	h.kind = (uint8_t)info->kind;
	h.idlen = info->id.len;
	memcpy(h.id, info->id.bytes, info->id.len);
	h.flags = info->uploaded ? BLOB_F_UPLOADED : 0;
	h.version = BLOB_VERSION;
	*len = sizeof(h) + arglen + sourcelen + metalen + 3;
	if ((buf = malloc(*len)) == NULL)
		return NULL;
	memcpy(buf, &h, sizeof(h));
	p = buf + sizeof(h);
	memcpy(p, arg, arglen + 1);
	p += arglen + 1;
	memcpy(p, source, sourcelen + 1);
	p += sourcelen + 1;
	cache_meta_copy(&copy, &info->meta, (char *)p);
	return buf;
}

/* Drop the LRU key of the entry of hash, decoded as h. */
int
blob_lru_del(struct index_batch *b, const uint8_t hash[CACHE_KEY_LEN],
    const struct blob_hdr *h)
{
	uint8_t lk[LRUKEY_LEN];

	lru_key(h->atime, h->stored, hash, lk);
	return index_batch_del_rec(b, INDEX_LRU, lk, sizeof(lk)) == -1 ? -1 : 0;
}

/*
 * The entry an LRU key stands for, decoded into *h, when the key is still
 * its key; INDEX_NOTFOUND for a stale or damaged key; -1.
 */
int
blob_lru_entry(struct index_batch *b, const struct index_rec *r,
    uint8_t hash[CACHE_KEY_LEN], struct blob_hdr *h)
{
	struct index_rec e;
	uint8_t lk[LRUKEY_LEN];
	int rc;

	if (r->keylen != LRUKEY_LEN)
		return INDEX_NOTFOUND;
	memcpy(lk, r->key, sizeof(lk));
	memcpy(hash, lk + 2 * INDEX_TIME_LEN, CACHE_KEY_LEN);
	rc = index_batch_get_rec(b, INDEX_BLOBS, hash, CACHE_KEY_LEN, &e);
	if (rc != 0)
		return rc;
	if (blob_decode(&e, h, NULL) == -1 ||
	    h->atime != index_time_decode(lk) ||
	    h->stored != index_time_decode(lk + INDEX_TIME_LEN))
		return INDEX_NOTFOUND;
	return 0;
}

/* The ELF kind of a cache kind; 0 for sections and sources. */
static unsigned
elf_kind_of(unsigned kind)
{
	return kind == CACHE_DEBUGINFO ? ELF_KIND_DEBUGINFO
	    : kind == CACHE_EXECUTABLE ? ELF_KIND_EXECUTABLE
				       : 0;
}

/* Drop the path index's entries of the entry decoded as h. */
int
blob_paths_del(struct index_batch *b, const struct blob_hdr *h)
{
	struct buildid id;

	if (elf_kind_of(h->kind) == 0)
		return 0;
	id.len = h->idlen;
	memcpy(id.bytes, h->id, h->idlen);
	return pathidx_del_upstream(b, &id, elf_kind_of(h->kind));
}

/*
 * Record in the path index the file (and archive) that an upstream
 * answered info with; nothing for other answers.
 */
static int
paths_put(struct index_batch *b, const struct blob_info *info)
{
	struct pathidx_entry e = { info->meta.file, info->meta.archive,
		elf_kind_of(info->kind), info->id, PATHIDX_UPSTREAM };

	if (!info->upstream || e.kinds == 0 || e.path == NULL ||
	    e.path[0] == '\0')
		return 0;
	if (e.archive == NULL)
		e.archive = "";
	return pathidx_put(b, &e);
}

/*
 * Unlink the file of hash; 0 also when it was gone.  An upload's may
 * still be in blobs/, where older versions kept it.
 */
static int
file_del(const struct blobstore *bs, const uint8_t hash[CACHE_KEY_LEN],
    int uploaded)
{
	char path[PATH_MAX];

	blob_path(bs, hash, 0, path);
	if (unlink(path) == -1 && errno != ENOENT)
		return -1;
	if (!uploaded || bs->updir == NULL)
		return 0;
	blob_path(bs, hash, 1, path);
	return unlink(path) == -1 && errno != ENOENT ? -1 : 0;
}

/*
 * Add plus and take minus bytes from a stored total (BYTES_COUNTER or
 * UPLOAD_COUNTER), now *total.
 */
static int
counter_add(struct index_batch *b, const char *counter, uint64_t plus,
    uint64_t minus, uint64_t *total)
{
	*total = 0;
	if (index_batch_get_counter(b, counter, total) == -1)
		return -1;
	/* Never below 0, even when a damaged counter was read as 0. */
	*total = (*total > minus ? *total - minus : 0) + plus;
	return index_batch_set_counter(b, counter, *total);
}

/* ----------------------------------------------------------- life cycle */

static unsigned
clamp_pct(unsigned pct)
{
	return pct > 100 ? 100 : pct;
}

/* A copy of bs's limits, as they are now. */
static void
limits(struct blobstore *bs, struct blob_limits *out)
{
	pthread_mutex_lock(&bs->lim_lock);
	*out = bs->lim;
	pthread_mutex_unlock(&bs->lim_lock);
}

void
blobstore_set_limits(struct blobstore *bs, const struct blob_limits *lim)
{
	struct blob_limits l = *lim;

	l.high_pct = clamp_pct(lim->high_pct);
	l.min_free_pct = clamp_pct(lim->min_free_pct);
	/* Evicting down to above the high mark would make no room. */
	l.low_pct = clamp_pct(lim->low_pct) < l.high_pct
	    ? clamp_pct(lim->low_pct)
	    : l.high_pct;
	pthread_mutex_lock(&bs->lim_lock);
	bs->lim = l;
	pthread_mutex_unlock(&bs->lim_lock);
}

struct blobstore *
blobstore_new(struct index *idx, const char *cache_dir,
    const struct blob_limits *lim, char *err, size_t errlen)
{
	struct blobstore *bs;
	static const char *const subdirs[] = { "", "/blobs", "/tmp" };
	char path[PATH_MAX];
	size_t i;

	/* The longest name: DIR/blobs/xx/<64 hex>. */
	if (strlen(cache_dir) + 10 + 2 * CACHE_KEY_LEN >= PATH_MAX) {
		snprintf(err, errlen, "%s: path too long", cache_dir);
		return NULL;
	}
	for (i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", cache_dir, subdirs[i]);
		if (mkdir(path, 0755) == -1 && errno != EEXIST) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			return NULL;
		}
	}
	if ((bs = calloc(1, sizeof(*bs))) == NULL ||
	    (bs->dir = strdup(cache_dir)) == NULL ||
	    (bs->touches = calloc(TOUCH_MAX, sizeof(struct touch))) == NULL ||
	    (bs->spare = calloc(TOUCH_MAX, sizeof(struct touch))) == NULL) {
		snprintf(err, errlen, "out of memory");
		blobstore_free(bs);
		return NULL;
	}
	bs->idx = idx;
	pthread_mutex_init(&bs->lim_lock, NULL);
	blobstore_set_limits(bs, lim);
	pthread_mutex_init(&bs->touch_lock, NULL);
	pthread_mutex_init(&bs->flush_lock, NULL);
	for (i = 0; i < PIN_BUCKETS; i++)
		atomic_init(&bs->pins[i], 0);
	atomic_init(&bs->evictions, 0);
	atomic_init(&bs->evicted_bytes, 0);
	return bs;
}

void
blobstore_free(struct blobstore *bs)
{
	if (bs == NULL)
		return;
	if (bs->touches != NULL && bs->spare != NULL) {
		pthread_mutex_destroy(&bs->touch_lock);
		pthread_mutex_destroy(&bs->flush_lock);
		pthread_mutex_destroy(&bs->lim_lock);
	}
	free(bs->touches);
	free(bs->spare);
	free(bs->dir);
	free(bs->updir);
	free(bs);
}

int
blobstore_set_upload_dir(struct blobstore *bs, const char *dir, char *err,
    size_t errlen)
{
	char *s;

	/* The longest name: DIR/xx/<64 hex>. */
	if (strlen(dir) + 4 + 2 * CACHE_KEY_LEN >= PATH_MAX) {
		snprintf(err, errlen, "%s: path too long", dir);
		return -1;
	}
	if ((s = strdup(dir)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	free(bs->updir);
	bs->updir = s;
	return 0;
}

/* ------------------------------------------------------ the arithmetic */

/* pct% of v, rounded down, without overflow (pct <= 100). */
static uint64_t
pct_of(uint64_t v, unsigned pct)
{
	return v / 100 * pct + v % 100 * pct / 100;
}

/*
 * How many bytes eviction must free: down to low_pct% of max_bytes once
 * bytes passed high_pct%, and enough for the filesystem to have
 * min_free_pct% of total free (avail of total free now; total 0 when
 * unknown).  0: nothing to do.
 */
static uint64_t
evict_need(const struct blob_limits *lim, uint64_t bytes, uint64_t avail,
    uint64_t total)
{
	uint64_t need = 0, want;

	if (lim->max_bytes != 0 &&
	    bytes > pct_of(lim->max_bytes, lim->high_pct))
		need = bytes - pct_of(lim->max_bytes, lim->low_pct);
	want = pct_of(total, lim->min_free_pct);
	if (avail < want && want - avail > need)
		need = want - avail;
	return need;
}

/* -------------------------------------------------------------- publish */

/* A temp file named name-XXXXXX in dir/tmp/, made when missing. */
static int
tmp_new(const char *dir, const char *name, char *path, size_t pathlen,
    char *err, size_t errlen)
{
	int fd;

	if ((size_t)snprintf(path, pathlen, "%s/tmp/%s-XXXXXX", dir, name) >=
	    pathlen) {
		snprintf(err, errlen, "%s/tmp: path too long", dir);
		return -1;
	}
	if ((fd = mkostemp(path, O_CLOEXEC)) == -1 && errno == ENOENT) {
		snprintf(path, pathlen, "%s/tmp", dir);
		if (mkdir(path, 0755) == 0 || errno == EEXIST) {
			snprintf(path, pathlen, "%s/tmp/%s-XXXXXX", dir, name);
			fd = mkostemp(path, O_CLOEXEC);
		}
	}
	if (fd == -1)
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	return fd;
}

int
blob_tmp_new(struct blobstore *bs, char *path, size_t pathlen, char *err,
    size_t errlen)
{
	return tmp_new(bs->dir, "fill", path, pathlen, err, errlen);
}

int
blob_upload_tmp_new(struct blobstore *bs, char *path, size_t pathlen, char *err,
    size_t errlen)
{
	if (bs->updir == NULL) {
		snprintf(err, errlen, "no upload directory");
		return -1;
	}
	return tmp_new(bs->updir, "upload", path, pathlen, err, errlen);
}

/* fsync the temp file after checking that it has size bytes. */
static int
tmp_sync(const char *tmp_path, uint64_t size, char *err, size_t errlen)
{
	struct stat st;
	int fd, rc = -1;

	if ((fd = open(tmp_path, O_RDONLY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "%s: %s", tmp_path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1 || fsync(fd) == -1)
		snprintf(err, errlen, "%s: %s", tmp_path, strerror(errno));
	else if ((uint64_t)st.st_size != size)
		snprintf(err, errlen, "%s: %lld bytes, expected %llu", tmp_path,
		    (long long)st.st_size, (unsigned long long)size);
	else
		rc = 0;
	close(fd);
	return rc;
}

/* rename(2) into blobs/xx/, making the directory on first use. */
int
blob_rename_in(const char *from, char *to)
{
	char *slash;
	int rc;

	if (rename(from, to) == 0)
		return 0;
	if (errno != ENOENT || (slash = strrchr(to, '/')) == NULL)
		return -1;
	*slash = '\0';
	rc = mkdir(to, 0755);
	*slash = '/';
	if (rc == -1 && errno != EEXIST)
		return -1;
	return rename(from, to);
}

/*
 * The counter that remembers, as wall-clock ns (blob_purge's now_ns), the
 * last purge of id, or (id NULL) the last purge not of one id (by source,
 * or of everything).
 */
static void
purge_stamp(const struct buildid *id, char out[PURGE_STAMP_MAX])
{
	char hex[BUILDID_HEX_MAX];

	if (id == NULL) {
		snprintf(out, PURGE_STAMP_MAX, "purged:any");
		return;
	}
	buildid_format(id, hex);
	snprintf(out, PURGE_STAMP_MAX, "purged:%s", hex);
}

/* 1 when id, or more than one id, was purged at or after begun. */
static int
purged_since(struct index_batch *b, const struct buildid *id, int64_t begun)
{
	char stamp[PURGE_STAMP_MAX];
	uint64_t at = 0, by_source = 0;

	purge_stamp(id, stamp);
	index_batch_get_counter(b, stamp, &at);
	purge_stamp(NULL, stamp);
	index_batch_get_counter(b, stamp, &by_source);
	return at >= (uint64_t)begun || by_source >= (uint64_t)begun;
}

/*
 * In the writer's transaction: 1 when the entry of k whose header is oh
 * may give way to info.  A fill replaces a cached entry, never an upload;
 * an upload replaces only the cached entry info->replaces_* names, whose
 * file is the one at its path now (a rename under this lock gives a new
 * entry a new inode, and the caller's open descriptor keeps the old one
 * from being reused).
 */
static int
replaceable(const struct blobstore *bs, const struct cache_key *k,
    const struct blob_hdr *oh, const struct blob_info *info)
{
	char path[PATH_MAX];
	struct stat st;

	if (oh->flags & BLOB_F_UPLOADED)
		return 0;
	if (!info->uploaded)
		return 1;
	if (info->replaces_ino == 0)
		return 0;
	blob_path(bs, k->hash, 0, path);
	return stat(path, &st) == 0 &&
	    (uint64_t)st.st_dev == info->replaces_dev &&
	    (uint64_t)st.st_ino == info->replaces_ino;
}

int
blob_publish(struct blobstore *bs, const struct cache_key *k,
    const char *tmp_path, const struct blob_info *info, int64_t now, char *err,
    size_t errlen)
{
	struct blob_limits lim;
	struct index_batch *b;
	struct index_rec old;
	struct blob_hdr oh;
	uint8_t *rec = NULL, lk[LRUKEY_LEN];
	uint64_t minus = 0, total, n, evicted, up;
	size_t reclen;
	char path[PATH_MAX], oldpath[PATH_MAX], evict_err[256];
	int rc, moved = 0;

	limits(bs, &lim);
	if (!info->uploaded && lim.max_bytes != 0 &&
	    info->size > lim.max_bytes) {
		unlink(tmp_path);
		return BLOB_TOO_BIG;
	}
	if ((rec = blob_encode(info, now, &reclen)) == NULL) {
		snprintf(err, errlen, "cache entry: %s",
		    cache_kind_name(info->kind) == NULL
			? "bad kind"
			: "string too long (or out of memory)");
		goto fail;
	}
	if (tmp_sync(tmp_path, info->size, err, errlen) == -1)
		goto fail;
	blob_path(bs, k->hash, info->uploaded, path);
	if ((b = index_batch_begin(bs->idx, err, errlen)) == NULL)
		goto fail;
	/* In the writer's transaction: a purge is wholly before or after. */
	if (info->begun != 0 && purged_since(b, &info->id, info->begun)) {
		index_batch_abort(b);
		free(rec);
		unlink(tmp_path);
		return BLOB_PURGED;
	}
	rc = index_batch_get_rec(b, INDEX_BLOBS, k->hash, CACHE_KEY_LEN, &old);
	if (rc == 0 && blob_decode(&old, &oh, NULL) == 0) {
		if (!replaceable(bs, k, &oh, info)) {
			index_batch_abort(b);
			free(rec);
			return BLOB_EXISTS;
		}
		/* A cached entry: no upload gives way (replaceable). */
		minus = oh.size;
		blob_lru_del(b, k->hash, &oh);
		blob_paths_del(b, &oh);
		/* An upload's file goes to the other directory. */
		moved = info->uploaded && bs->updir != NULL;
	}
	if (info->uploaded) {
		up = 0;
		index_batch_get_counter(b, UPLOAD_COUNTER, &up);
		if (lim.upload_max_bytes != 0 &&
		    up + info->size > lim.upload_max_bytes) {
			index_batch_abort(b);
			free(rec);
			unlink(tmp_path);
			return BLOB_TOO_BIG;
		}
	}
	/* Under the writer lock: see the top of the file. */
	if (blob_rename_in(tmp_path, path) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		index_batch_abort(b);
		goto fail;
	}
	/* The old entry's file, in the other directory, is no one's now. */
	if (moved) {
		blob_path(bs, k->hash, 0, oldpath);
		unlink(oldpath);
	}
	lru_key(now, now, k->hash, lk);
	index_batch_put_rec(b, INDEX_BLOBS, k->hash, CACHE_KEY_LEN, rec,
	    reclen);
	if (!info->uploaded)
		index_batch_put_rec(b, INDEX_LRU, lk, sizeof(lk), "", 0);
	paths_put(b, info);
	neg_batch_del(b, k);
	/* Served from now on: the missing-id report forgets the kind. */
	miss_batch_served(b, &info->id, 1u << info->kind);
	counter_add(b, BYTES_COUNTER, info->uploaded ? 0 : info->size, minus,
	    &total);
	if (info->uploaded)
		counter_add(b, UPLOAD_COUNTER, info->size, 0, &up);
	free(rec);
	if (index_batch_commit(b, err, errlen) == -1) {
		unlink(path);
		return -1;
	}
	/* Published: the sink may copy it elsewhere (it only queues). */
	if (bs->sink != NULL && !info->no_sink)
		bs->sink(bs->sink_arg, k, info);
	/* An eviction failure is the next maintenance's. */
	if (evict_need(&lim, total, 0, 0) > 0 || lim.min_free_pct > 0)
		blob_evict(bs, &n, &evicted, evict_err, sizeof(evict_err));
	return 0;
fail:
	free(rec);
	unlink(tmp_path);
	return -1;
}

void
blobstore_set_sink(struct blobstore *bs, blob_sink_fn fn, void *arg)
{
	bs->sink = fn;
	bs->sink_arg = arg;
}

/* ----------------------------------------------------------- hot path */

int
blob_lookup(struct index_reader *rd, const struct cache_key *k,
    struct blob_info *info)
{
	struct index_rec r;
	struct blob_hdr h;
	int rc;

	rc = index_get_rec(rd, INDEX_BLOBS, k->hash, CACHE_KEY_LEN, &r);
	if (rc != 0)
		return rc;
	return blob_decode(&r, &h, info);
}

int
blob_open(struct blobstore *bs, const struct cache_key *k)
{
	char path[PATH_MAX];
	int fd;

	blob_path(bs, k->hash, 0, path);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd != -1 || errno != ENOENT || bs->updir == NULL)
		return fd;
	blob_path(bs, k->hash, 1, path);
	return open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
}

void
blob_touch(struct blobstore *bs, const struct cache_key *k, int64_t now)
{
	pthread_mutex_lock(&bs->touch_lock);
	if (bs->ntouches < TOUCH_MAX) {
		bs->touches[bs->ntouches].k = *k;
		bs->touches[bs->ntouches].t = now;
		bs->ntouches++;
	}
	pthread_mutex_unlock(&bs->touch_lock);
}

/*
 * Move the entry of t->k to atime t->t unless it is there already.  buf
 * is scratch space for the rewritten entry, grown as needed.  -1 when out
 * of memory; an LMDB failure is kept by the batch for its commit.
 */
static int
touch_one(struct index_batch *b, const struct touch *t, uint8_t **buf,
    size_t *cap)
{
	struct index_rec r;
	struct blob_hdr h;
	struct buildid id;
	uint8_t lk[LRUKEY_LEN], *nb;
	int rc;

	rc = index_batch_get_rec(b, INDEX_BLOBS, t->k.hash, CACHE_KEY_LEN, &r);
	if (rc != 0 || blob_decode(&r, &h, NULL) == -1)
		return 0;
	/* A hit: whatever a report said missing of this kind was served. */
	id.len = h.idlen;
	memcpy(id.bytes, h.id, h.idlen);
	miss_batch_served(b, &id, 1u << h.kind);
	/* Uploads are in no LRU order. */
	if (h.atime >= t->t || (h.flags & BLOB_F_UPLOADED))
		return 0;
	/* Read again: the report's writes may have moved r's page. */
	if (index_batch_get_rec(b, INDEX_BLOBS, t->k.hash, CACHE_KEY_LEN, &r) !=
	    0)
		return 0;
	if (r.vallen > *cap) {
		if ((nb = realloc(*buf, r.vallen)) == NULL)
			return -1;
		*buf = nb;
		*cap = r.vallen;
	}
	/* Copied before the writes below, which may move r's page. */
	memcpy(*buf, r.val, r.vallen);
	blob_lru_del(b, t->k.hash, &h);
	h.atime = t->t;
	memcpy(*buf, &h, sizeof(h));
	lru_key(h.atime, h.stored, t->k.hash, lk);
	index_batch_put_rec(b, INDEX_BLOBS, t->k.hash, CACHE_KEY_LEN, *buf,
	    r.vallen);
	index_batch_put_rec(b, INDEX_LRU, lk, sizeof(lk), "", 0);
	return 0;
}

int
blob_flush_touches(struct blobstore *bs, char *err, size_t errlen)
{
	struct index_batch *b;
	struct touch *t;
	uint8_t *buf = NULL;
	size_t n, i, cap = 0;
	int rc = 0;

	pthread_mutex_lock(&bs->flush_lock);
	pthread_mutex_lock(&bs->touch_lock);
	t = bs->touches;
	n = bs->ntouches;
	bs->touches = bs->spare;
	bs->ntouches = 0;
	pthread_mutex_unlock(&bs->touch_lock);
	bs->spare = t;
	if (n > 0) {
		if ((b = index_batch_begin(bs->idx, err, errlen)) == NULL) {
			rc = -1;
		} else {
			for (i = 0; i < n; i++)
				if (touch_one(b, &t[i], &buf, &cap) == -1)
					break;
			if (i < n) {
				snprintf(err, errlen, "touch: out of memory");
				index_batch_abort(b);
				rc = -1;
			} else {
				rc = index_batch_commit(b, err, errlen);
			}
		}
	}
	pthread_mutex_unlock(&bs->flush_lock);
	free(buf);
	return rc;
}

static atomic_uint *
pin_bucket(struct blobstore *bs, const uint8_t hash[CACHE_KEY_LEN])
{
	uint32_t h;

	/* The key is a SHA-256: any of its bytes are well spread. */
	memcpy(&h, hash, sizeof(h));
	return &bs->pins[h % PIN_BUCKETS];
}

void
blob_pin(struct blobstore *bs, const struct cache_key *k)
{
	atomic_fetch_add_explicit(pin_bucket(bs, k->hash), 1,
	    memory_order_relaxed);
}

void
blob_unpin(struct blobstore *bs, const struct cache_key *k)
{
	atomic_fetch_sub_explicit(pin_bucket(bs, k->hash), 1,
	    memory_order_relaxed);
}

/* ------------------------------------------------------------- eviction */

/*
 * Eviction is a sweep (index_sweep): each transaction reads the byte
 * total again, so publishes between two of them count.  The free space is
 * measured once, before the first; what the total fell by since then is
 * taken as freed on disk too, as it was when one transaction did it all.
 */
struct blob_evict_sweep {
	struct blobstore *bs;
	struct blob_limits lim; /* as the sweep began */
	struct index_batch *b;
	uint64_t avail, total; /* the file system's, before the sweep */
	uint64_t room; /* bytes more to come (blob_make_room) */
	uint64_t start; /* the byte total the first step read */
	int started;
	uint64_t need; /* bytes this step must free */
	uint64_t entries, bytes; /* freed by this step */
	unsigned left; /* deletions left to this step */
	int unlink_errno;
};

/* Walk of lru, least recently used first: remove until enough is freed. */
static int
evict_cb(const struct index_rec *r, void *arg)
{
	struct blob_evict_sweep *ev = arg;
	uint8_t hash[CACHE_KEY_LEN];
	struct blob_hdr h;
	int rc;

	if (ev->bytes >= ev->need || ev->left == 0)
		return 1;
	if ((rc = blob_lru_entry(ev->b, r, hash, &h)) != 0) {
		if (rc != INDEX_NOTFOUND)
			return rc;
		ev->left--;
		return INDEX_WALK_DELETE;
	}
	if (atomic_load_explicit(pin_bucket(ev->bs, hash),
		memory_order_relaxed) != 0)
		return 0;
	if (file_del(ev->bs, hash, 0) == -1) {
		ev->unlink_errno = errno;
		return 0;
	}
	if (index_batch_del_rec(ev->b, INDEX_BLOBS, hash, CACHE_KEY_LEN) ==
		-1 ||
	    blob_paths_del(ev->b, &h) == -1)
		return -1;
	ev->entries++;
	ev->bytes += h.size;
	ev->left--;
	return INDEX_WALK_DELETE;
}

/* index_sweep_fn: one transaction of an eviction; counts entries, bytes. */
static unsigned
evict_step(struct index_batch *b, unsigned limit, uint64_t *counted, void *arg)
{
	struct blob_evict_sweep *ev = arg;
	uint64_t cur, avail;

	ev->b = b;
	ev->left = limit;
	ev->entries = ev->bytes = 0;
	/* On failure the batch keeps the error for its commit. */
	if (index_batch_get_counter(b, BYTES_COUNTER, &cur) == -1)
		return 0;
	if (!ev->started) {
		ev->start = cur;
		ev->started = 1;
	}
	/* What the total fell by since the first step is free on disk. */
	avail = ev->avail + ev->start;
	avail = avail > cur ? avail - cur : 0;
	/* Fills in tmp/ and the room asked for count with the blobs. */
	ev->need = evict_need(&ev->lim,
	    cur + atomic_load(&ev->bs->tmp_bytes) + ev->room,
	    avail > ev->room ? avail - ev->room : 0, ev->total);
	if (avail < ev->room && ev->room - avail > ev->need)
		ev->need = ev->room - avail;
	if (ev->need == 0)
		return 0;
	index_batch_walk(b, INDEX_LRU, evict_cb, ev);
	counter_add(b, BYTES_COUNTER, 0, ev->bytes, &cur);
	counted[0] = ev->entries;
	counted[1] = ev->bytes;
	return limit - ev->left;
}

/*
 * Eviction as blob_evict says, with room more bytes to come: counted with
 * the blobs against the cap, and wanted free on the file system.
 */
static int
evict(struct blobstore *bs, uint64_t room, uint64_t *entries, uint64_t *bytes,
    char *err, size_t errlen)
{
	struct blob_evict_sweep ev;
	struct statvfs vfs;
	uint64_t n[2];
	int rc;

	*entries = *bytes = 0;
	memset(&ev, 0, sizeof(ev));
	limits(bs, &ev.lim);
	if (ev.lim.max_bytes == 0 && ev.lim.min_free_pct == 0 && room == 0)
		return 0;
	ev.bs = bs;
	ev.room = room;
	if ((ev.lim.min_free_pct != 0 || room != 0) &&
	    statvfs(bs->dir, &vfs) == 0) {
		ev.avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
		ev.total = (uint64_t)vfs.f_blocks * vfs.f_frsize;
	}
	rc = index_sweep(bs->idx, evict_step, &ev, n, 2, err, errlen);
	atomic_fetch_add(&bs->evictions, n[0]);
	atomic_fetch_add(&bs->evicted_bytes, n[1]);
	*entries = n[0];
	*bytes = n[1];
	if (rc == 0 && ev.unlink_errno != 0) {
		snprintf(err, errlen, "evict: cannot remove a blob: %s",
		    strerror(ev.unlink_errno));
		return -1;
	}
	return rc;
}

int
blob_evict(struct blobstore *bs, uint64_t *entries, uint64_t *bytes, char *err,
    size_t errlen)
{
	return evict(bs, 0, entries, bytes, err, errlen);
}

int
blob_make_room(struct blobstore *bs, uint64_t room, uint64_t *entries,
    uint64_t *bytes, char *err, size_t errlen)
{
	return evict(bs, room, entries, bytes, err, errlen);
}

void
blob_tmp_add(struct blobstore *bs, uint64_t plus, uint64_t minus)
{
	atomic_fetch_add(&bs->tmp_bytes, plus);
	atomic_fetch_sub(&bs->tmp_bytes, minus);
}

/* ---------------------------------------------------------------- purge */

struct blob_purge_sweep {
	struct blobstore *bs;
	struct index_batch *b;
	const struct buildid *id;
	const char *source;
	int64_t now_ns; /* the purge's stamp */
	int stamped; /* its purge_stamp is written */
	uint64_t n, bytes, upload_bytes; /* removed by this step */
	unsigned left; /* deletions left to this step */
	int unlink_errno;
};

/* Walk of blobs: remove the entries that match (damaged ones only when
 * everything goes). */
static int
purge_cb(const struct index_rec *r, void *arg)
{
	struct blob_purge_sweep *p = arg;
	struct blob_info info;
	struct blob_hdr h;
	uint8_t hash[CACHE_KEY_LEN];
	int ok;

	if (p->left == 0)
		return 1;
	ok = blob_decode(r, &h, &info) == 0;
	if (!ok && (p->id != NULL || p->source != NULL))
		return 0;
	if (ok &&
	    ((p->id != NULL && !buildid_equal(&info.id, p->id)) ||
		(p->source != NULL && strcmp(info.source, p->source) != 0)))
		return 0;
	if (r->keylen == CACHE_KEY_LEN) {
		memcpy(hash, r->key, sizeof(hash));
		if (file_del(p->bs, hash,
			ok && (h.flags & BLOB_F_UPLOADED) != 0) == -1) {
			p->unlink_errno = errno;
			return 0;
		}
		if (ok &&
		    (blob_lru_del(p->b, hash, &h) == -1 ||
			blob_paths_del(p->b, &h) == -1))
			return -1;
	}
	p->n++;
	if (ok && (h.flags & BLOB_F_UPLOADED))
		p->upload_bytes += h.size;
	else
		p->bytes += ok ? h.size : 0;
	p->left--;
	return INDEX_WALK_DELETE;
}

/* index_sweep_fn: one transaction of a purge. */
static unsigned
purge_step(struct index_batch *b, unsigned limit, uint64_t *counted, void *arg)
{
	struct blob_purge_sweep *p = arg;
	char stamp[PURGE_STAMP_MAX];
	uint64_t total;

	if (!p->stamped) {
		purge_stamp(p->id, stamp);
		index_batch_set_counter(b, stamp, (uint64_t)p->now_ns);
		p->stamped = 1;
	}
	p->b = b;
	p->left = limit;
	p->n = p->bytes = p->upload_bytes = 0;
	index_batch_walk(b, INDEX_BLOBS, purge_cb, p);
	counter_add(b, BYTES_COUNTER, 0, p->bytes, &total);
	if (p->upload_bytes > 0)
		counter_add(b, UPLOAD_COUNTER, 0, p->upload_bytes, &total);
	counted[0] = p->n;
	return limit - p->left;
}

int
blob_purge(struct blobstore *bs, const struct buildid *id, const char *source,
    int64_t now_ns, uint64_t *n, char *err, size_t errlen)
{
	struct blob_purge_sweep p = { .bs = bs,
		.id = id,
		.source = source,
		.now_ns = now_ns };

	if (index_sweep(bs->idx, purge_step, &p, n, 1, err, errlen) == -1)
		return -1;
	if (p.unlink_errno != 0) {
		snprintf(err, errlen, "purge: cannot remove a blob: %s",
		    strerror(p.unlink_errno));
		return -1;
	}
	return 0;
}

int
blob_drop(struct blobstore *bs, const struct cache_key *k, char *err,
    size_t errlen)
{
	struct index_batch *b;
	struct index_rec r;
	struct blob_hdr h;
	uint64_t total;
	int rc, ok, uploaded;

	if ((b = index_batch_begin(bs->idx, err, errlen)) == NULL)
		return -1;
	rc = index_batch_get_rec(b, INDEX_BLOBS, k->hash, CACHE_KEY_LEN, &r);
	if (rc != 0) {
		index_batch_abort(b);
		if (rc == INDEX_NOTFOUND)
			return INDEX_NOTFOUND;
		snprintf(err, errlen, "drop: cannot read the entry");
		return -1;
	}
	/* A damaged entry goes too: only its record and file are known. */
	ok = blob_decode(&r, &h, NULL) == 0;
	uploaded = ok && (h.flags & BLOB_F_UPLOADED) != 0;
	if (file_del(bs, k->hash, uploaded) == -1) {
		snprintf(err, errlen, "drop: cannot remove a blob: %s",
		    strerror(errno));
		index_batch_abort(b);
		return -1;
	}
	if ((ok &&
		(blob_lru_del(b, k->hash, &h) == -1 ||
		    blob_paths_del(b, &h) == -1 ||
		    counter_add(b, uploaded ? UPLOAD_COUNTER : BYTES_COUNTER, 0,
			h.size, &total) == -1)) ||
	    index_batch_del_rec(b, INDEX_BLOBS, k->hash, CACHE_KEY_LEN) == -1) {
		index_batch_abort(b);
		snprintf(err, errlen, "drop: cannot update the index");
		return -1;
	}
	return index_batch_commit(b, err, errlen);
}

int
blob_stats(struct index_reader *rd, struct blobstore *bs, struct blob_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (index_count(rd, INDEX_BLOBS, &st->entries) == -1 ||
	    index_count(rd, INDEX_NEG, &st->negatives) == -1 ||
	    index_get_counter(rd, BYTES_COUNTER, &st->bytes) == -1 ||
	    index_get_counter(rd, UPLOAD_COUNTER, &st->upload_bytes) == -1)
		return -1;
	if (bs != NULL) {
		st->evictions = atomic_load(&bs->evictions);
		st->evicted_bytes = atomic_load(&bs->evicted_bytes);
		st->tmp_bytes = atomic_load(&bs->tmp_bytes);
	}
	return 0;
}
