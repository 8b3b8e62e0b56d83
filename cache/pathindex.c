/*
 * cache/pathindex.c: the paths table (INDEX_PATHS) of cache/index.h.
 *
 * Keys, where D is the first 16 bytes of the SHA-256 of an entry's
 * directory ("" for a file in /), B its base name as a key holds it, R 8
 * bytes naming its origin (zeros for a local file, a hash of the package's
 * path for a member, a hash of kind and id for an upstream answer):
 *
 *   'd' D B 0 R        -> the entry: kinds, origin, id, path, archive
 *   'b' B 0 D R        -> nothing: base names in order
 *   'i' len id D R B   -> nothing: by build-id
 *   'p' P D            -> the whole directory; P is the directory cut to
 *                         DIR_KEY bytes: directories in order
 *
 * B is the base name when it has at most BASE_KEY bytes, else its first
 * BASE_KEY bytes and 8 bytes of its hash, so that LMDB's 511-byte keys
 * hold any name and two long names differ.  Keys are parsed from their
 * fixed-length ends, never by looking for a 0.  Every candidate a walk
 * finds is checked against the whole path of its entry.  The 'p' record
 * of a directory lives as long as a 'd' record under its D does.
 *
 * A query reads only what its literal parts allow: an exact path or a
 * glob with a literal directory reads that directory's 'd' records from
 * the literal start of the base name on; a glob with wildcards in the
 * directory reads the 'b' records of the base name's literal start when
 * that is two bytes or more, else the 'p' records of the directory's
 * literal start and, for each directory that matches, its 'd' records.
 */
#include "cache/pathindex.h"

#include <fnmatch.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>

#include "cache/index.h"
#include "indexer/elf.h"

#define DH_LEN 16
#define REF_LEN 8
#define BASE_KEY 200
#define BASE_CUT (BASE_KEY + 8)
#define DIR_KEY 200
#define PATH_LEN_MAX 4095
/* Records visited between two looks at the clock. */
#define CHECK_EVERY 256
/* Entries of one (id, kind) from upstreams dropped per walk. */
#define DROP_BATCH 16

#define KEY_CAP (2 + BUILDID_MAX + DH_LEN + REF_LEN + BASE_CUT + 1)
_Static_assert(KEY_CAP <= INDEX_KEY_MAX, "path keys fit");
_Static_assert(1 + DIR_KEY + DH_LEN <= INDEX_KEY_MAX, "dir keys fit");

/* The stored entry: this header, then id, path and NUL, archive and NUL. */
struct path_hdr {
	uint16_t pathlen;
	uint16_t archlen;
	uint8_t kinds;
	uint8_t origin;
	uint8_t idlen;
};
#define HDR_LEN 7
#define VAL_CAP (HDR_LEN + BUILDID_MAX + 2 * (PATH_LEN_MAX + 1))

/* A path taken apart: what its keys are made of. */
struct parts {
	const char *dir; /* the path itself: dir is its first dirlen bytes */
	size_t dirlen;
	uint8_t dh[DH_LEN];
	uint8_t base[BASE_CUT];
	size_t baselen; /* of base as keys hold it */
};

/* The first outlen bytes of the SHA-256 of a[0..alen) b[0..blen). */
static void
sha(const void *a, size_t alen, const void *b, size_t blen, uint8_t *out,
    size_t outlen)
{
	uint8_t md[SHA256_DIGEST_LENGTH], buf[2 + PATH_LEN_MAX + 1];

	memcpy(buf, a, alen);
	memcpy(buf + alen, b, blen);
	SHA256(buf, alen + blen, md);
	memcpy(out, md, outlen);
}

/* The base name as keys hold it, from the len bytes at s. */
static size_t
base_key(const char *s, size_t len, uint8_t out[BASE_CUT])
{
	if (len <= BASE_KEY) {
		memcpy(out, s, len);
		return len;
	}
	memcpy(out, s, BASE_KEY);
	sha("", 0, s, len, out + BASE_KEY, BASE_CUT - BASE_KEY);
	return BASE_CUT;
}

/* Take apart path (absolute, plen bytes). */
static void
parts_of(const char *path, size_t plen, struct parts *p)
{
	const char *slash = path;
	size_t i;

	for (i = 0; i < plen; i++)
		if (path[i] == '/')
			slash = path + i;
	p->dir = path;
	p->dirlen = (size_t)(slash - path);
	sha("", 0, path, p->dirlen, p->dh, DH_LEN);
	p->baselen = base_key(slash + 1, plen - p->dirlen - 1, p->base);
}

static void
ref_of(enum pathidx_origin origin, const char *archive,
    const struct buildid *id, unsigned kinds, uint8_t ref[REF_LEN])
{
	uint8_t tag[2] = { 'u', (uint8_t)kinds };

	if (origin == PATHIDX_PACKAGE)
		sha("p", 1, archive, strlen(archive), ref, REF_LEN);
	else if (origin == PATHIDX_UPSTREAM)
		sha(tag, sizeof(tag), id->bytes, id->len, ref, REF_LEN);
	else
		memset(ref, 0, REF_LEN);
}

static size_t
d_key(uint8_t *k, const uint8_t *dh, const uint8_t *base, size_t blen,
    const uint8_t *ref)
{
	k[0] = 'd';
	memcpy(k + 1, dh, DH_LEN);
	memcpy(k + 1 + DH_LEN, base, blen);
	k[1 + DH_LEN + blen] = 0;
	memcpy(k + 2 + DH_LEN + blen, ref, REF_LEN);
	return 2 + DH_LEN + blen + REF_LEN;
}

static size_t
b_key(uint8_t *k, const uint8_t *dh, const uint8_t *base, size_t blen,
    const uint8_t *ref)
{
	k[0] = 'b';
	memcpy(k + 1, base, blen);
	k[1 + blen] = 0;
	memcpy(k + 2 + blen, dh, DH_LEN);
	memcpy(k + 2 + blen + DH_LEN, ref, REF_LEN);
	return 2 + blen + DH_LEN + REF_LEN;
}

static size_t
i_key(uint8_t *k, const struct buildid *id, const uint8_t *dh,
    const uint8_t *base, size_t blen, const uint8_t *ref)
{
	k[0] = 'i';
	k[1] = id->len;
	memcpy(k + 2, id->bytes, id->len);
	memcpy(k + 2 + id->len, dh, DH_LEN);
	memcpy(k + 2 + id->len + DH_LEN, ref, REF_LEN);
	memcpy(k + 2 + id->len + DH_LEN + REF_LEN, base, blen);
	return 2 + (size_t)id->len + DH_LEN + REF_LEN + blen;
}

static size_t
p_key(uint8_t *k, const char *dir, size_t dirlen, const uint8_t *dh)
{
	size_t n = dirlen < DIR_KEY ? dirlen : DIR_KEY;

	k[0] = 'p';
	memcpy(k + 1, dir, n);
	memcpy(k + 1 + n, dh, DH_LEN);
	return 1 + n + DH_LEN;
}

/* 1 when the len bytes at s and the NUL after them are a string. */
static int
str_ok(const char *s, size_t len)
{
	return s[len] == '\0' && memchr(s, '\0', len) == NULL;
}

/* Decode a stored entry: 0 with e pointing into val, or -1 when damaged. */
static int
entry_decode(const void *val, size_t len, struct pathidx_entry *e)
{
	const uint8_t *v = val;
	struct path_hdr h;
	const char *path, *arch;

	if (len < HDR_LEN)
		return -1;
	memcpy(&h.pathlen, v, 2);
	memcpy(&h.archlen, v + 2, 2);
	h.kinds = v[4];
	h.origin = v[5];
	h.idlen = v[6];
	if (h.idlen == 0 || h.idlen > BUILDID_MAX || h.kinds == 0 ||
	    (h.kinds & ~ELF_KIND_ALL) != 0 || h.origin < PATHIDX_LOCAL ||
	    h.origin > PATHIDX_UPSTREAM ||
	    len != HDR_LEN + (size_t)h.idlen + h.pathlen + 1 + h.archlen + 1)
		return -1;
	path = (const char *)v + HDR_LEN + h.idlen;
	arch = path + h.pathlen + 1;
	if (h.pathlen == 0 || path[0] != '/' || !str_ok(path, h.pathlen) ||
	    !str_ok(arch, h.archlen))
		return -1;
	e->path = path;
	e->archive = arch;
	e->kinds = h.kinds;
	e->origin = (enum pathidx_origin)h.origin;
	e->id.len = h.idlen;
	memcpy(e->id.bytes, v + HDR_LEN, h.idlen);
	return 0;
}

static size_t
entry_encode(const struct pathidx_entry *e, size_t plen, size_t alen,
    uint8_t *v)
{
	uint16_t pl = (uint16_t)plen, al = (uint16_t)alen;

	memcpy(v, &pl, 2);
	memcpy(v + 2, &al, 2);
	v[4] = (uint8_t)e->kinds;
	v[5] = (uint8_t)e->origin;
	v[6] = e->id.len;
	memcpy(v + HDR_LEN, e->id.bytes, e->id.len);
	memcpy(v + HDR_LEN + e->id.len, e->path, plen + 1);
	memcpy(v + HDR_LEN + e->id.len + plen + 1, e->archive, alen + 1);
	return HDR_LEN + e->id.len + plen + 1 + alen + 1;
}

/* ------------------------------------------------------------- writing */

static int
stop_cb(const struct index_rec *r, void *arg)
{
	(void)r;
	(void)arg;
	return 1;
}

/*
 * Drop the entry under the 'd' key dk (dlen bytes) with its other keys,
 * and its directory's record when it was the last there.
 */
static int
del_entry(struct index_batch *b, const uint8_t *dk, size_t dlen)
{
	uint8_t k[KEY_CAP], dh[DH_LEN], ref[REF_LEN], base[BASE_CUT];
	char path[PATH_LEN_MAX + 1];
	struct pathidx_entry e;
	struct index_rec r;
	struct buildid id;
	size_t blen = dlen - 2 - DH_LEN - REF_LEN, dirlen;
	const char *slash;
	int rc, damaged;

	if ((rc = index_batch_get_rec(b, INDEX_PATHS, dk, dlen, &r)) != 0)
		return rc;
	/* Copies first: the map moves under writes. */
	damaged = entry_decode(r.val, r.vallen, &e) == -1;
	if (!damaged) {
		id = e.id;
		snprintf(path, sizeof(path), "%s", e.path);
	}
	memcpy(dh, dk + 1, DH_LEN);
	memcpy(base, dk + 1 + DH_LEN, blen);
	memcpy(ref, dk + dlen - REF_LEN, REF_LEN);
	memcpy(k, dk, dlen);
	if (index_batch_del_rec(b, INDEX_PATHS, k, dlen) == -1 ||
	    index_batch_del_rec(b, INDEX_PATHS, k,
		b_key(k, dh, base, blen, ref)) == -1)
		return -1;
	if (damaged)
		return 0;
	if (index_batch_del_rec(b, INDEX_PATHS, k,
		i_key(k, &id, dh, base, blen, ref)) == -1)
		return -1;
	k[0] = 'd';
	memcpy(k + 1, dh, DH_LEN);
	rc = index_batch_walk_prefix(b, INDEX_PATHS, k, 1 + DH_LEN, stop_cb,
	    NULL);
	if (rc == -1)
		return -1;
	if (rc == 0) {
		slash = strrchr(path, '/');
		dirlen = (size_t)(slash - path);
		if (index_batch_del_rec(b, INDEX_PATHS, k,
			p_key(k, path, dirlen, dh)) == -1)
			return -1;
	}
	return 0;
}

/* 1 when e can be indexed, with the lengths of its strings. */
static int
entry_ok(const struct pathidx_entry *e, size_t *plen, size_t *alen)
{
	*plen = strlen(e->path);
	*alen = e->archive != NULL ? strlen(e->archive) : 0;
	return *plen > 0 && e->path[0] == '/' && *plen <= PATH_LEN_MAX &&
	    *alen <= PATH_LEN_MAX && e->id.len > 0 &&
	    e->id.len <= BUILDID_MAX && e->kinds != 0 &&
	    (e->kinds & ~ELF_KIND_ALL) == 0 && e->origin >= PATHIDX_LOCAL &&
	    e->origin <= PATHIDX_UPSTREAM;
}

int
pathidx_put(struct index_batch *b, const struct pathidx_entry *e)
{
	uint8_t k[KEY_CAP], ref[REF_LEN], v[VAL_CAP];
	char path[PATH_LEN_MAX + 1], arch[PATH_LEN_MAX + 1];
	struct pathidx_entry own;
	struct index_rec r;
	struct parts p;
	size_t plen, alen, dlen, vlen;
	int rc;

	if (!entry_ok(e, &plen, &alen))
		return 0;
	/* Copies: e's strings may point into the map that writes move. */
	memcpy(path, e->path, plen + 1);
	memcpy(arch, alen > 0 ? e->archive : "", alen + 1);
	own = *e;
	own.path = path;
	own.archive = arch;
	parts_of(path, plen, &p);
	ref_of(own.origin, arch, &own.id, own.kinds, ref);
	dlen = d_key(k, p.dh, p.base, p.baselen, ref);
	/* The entry it replaces may have had another id. */
	rc = del_entry(b, k, dlen);
	if (rc == -1)
		return -1;
	vlen = entry_encode(&own, plen, alen, v);
	if (index_batch_put_rec(b, INDEX_PATHS, k, dlen, v, vlen) == -1 ||
	    index_batch_put_rec(b, INDEX_PATHS, k,
		b_key(k, p.dh, p.base, p.baselen, ref), "", 0) == -1 ||
	    index_batch_put_rec(b, INDEX_PATHS, k,
		i_key(k, &own.id, p.dh, p.base, p.baselen, ref), "", 0) == -1)
		return -1;
	/* Most directories are there already: a read is cheaper. */
	dlen = p_key(k, path, p.dirlen, p.dh);
	if ((rc = index_batch_get_rec(b, INDEX_PATHS, k, dlen, &r)) == 0)
		return 0;
	if (rc == -1)
		return -1;
	return index_batch_put_rec(b, INDEX_PATHS, k, dlen, path, p.dirlen);
}

int
pathidx_del(struct index_batch *b, enum pathidx_origin origin, const char *path,
    const char *archive)
{
	uint8_t k[KEY_CAP], ref[REF_LEN];
	char own[PATH_LEN_MAX + 1];
	size_t plen = strlen(path);
	struct parts p;

	if (plen == 0 || path[0] != '/' || plen > PATH_LEN_MAX ||
	    origin == PATHIDX_UPSTREAM)
		return INDEX_NOTFOUND;
	memcpy(own, path, plen + 1);
	ref_of(origin, archive != NULL ? archive : "", NULL, 0, ref);
	parts_of(own, plen, &p);
	return del_entry(b, k, d_key(k, p.dh, p.base, p.baselen, ref));
}

struct drop {
	uint8_t ref[REF_LEN];
	size_t skip; /* bytes of an 'i' key before D */
	uint8_t dks[DROP_BATCH][KEY_CAP];
	size_t dlens[DROP_BATCH];
	unsigned n;
};

/* An 'i' key of the id: note the 'd' key of an entry with drop's ref. */
static int
drop_cb(const struct index_rec *r, void *arg)
{
	struct drop *d = arg;
	const uint8_t *k = r->key;
	size_t blen;

	if (r->keylen < d->skip + DH_LEN + REF_LEN ||
	    memcmp(k + d->skip + DH_LEN, d->ref, REF_LEN) != 0)
		return 0;
	blen = r->keylen - d->skip - DH_LEN - REF_LEN;
	if (blen > BASE_CUT)
		return 0;
	d->dlens[d->n] = d_key(d->dks[d->n], k + d->skip,
	    k + d->skip + DH_LEN + REF_LEN, blen, d->ref);
	return ++d->n == DROP_BATCH;
}

int
pathidx_del_upstream(struct index_batch *b, const struct buildid *id,
    unsigned kind)
{
	uint8_t prefix[2 + BUILDID_MAX];
	struct drop d;
	unsigned i;
	int rc;

	ref_of(PATHIDX_UPSTREAM, "", id, kind, d.ref);
	d.skip = 2 + (size_t)id->len;
	prefix[0] = 'i';
	prefix[1] = id->len;
	memcpy(prefix + 2, id->bytes, id->len);
	do {
		d.n = 0;
		rc = index_batch_walk_prefix(b, INDEX_PATHS, prefix, d.skip,
		    drop_cb, &d);
		if (rc == -1)
			return -1;
		for (i = 0; i < d.n; i++)
			if (del_entry(b, d.dks[i], d.dlens[i]) == -1)
				return -1;
	} while (rc == 1);
	return 0;
}

/* ------------------------------------------------------------- queries */

struct query {
	struct index_reader *rd;
	enum pathidx_query q;
	const char *value;
	const struct buildid *id;
	int64_t deadline_ns;
	int64_t (*now_ns)(void);
	unsigned visits;
	/* glob: the pattern's parts */
	const char *dirpat; /* NUL-terminated copy */
	const char *basepat;
	size_t baselit; /* literal bytes at the start of basepat */
	int (*cb)(const struct pathidx_entry *e, void *arg);
	void *arg;
};

/* PATHIDX_TIMEOUT when the query is out of time; checked now and then. */
static int
query_tick(struct query *qu)
{
	if (qu->deadline_ns != 0 && ++qu->visits % CHECK_EVERY == 0 &&
	    qu->now_ns() > qu->deadline_ns)
		return PATHIDX_TIMEOUT;
	return 0;
}

/* The entry of a stored record, handed to cb when it answers the query. */
static int
query_offer(struct query *qu, const void *val, size_t len)
{
	struct pathidx_entry e;

	if (entry_decode(val, len, &e) == -1)
		return 0;
	switch (qu->q) {
	case PATHIDX_FILE:
		if (strcmp(e.path, qu->value) != 0)
			return 0;
		break;
	case PATHIDX_GLOB:
		if (fnmatch(qu->value, e.path, FNM_PATHNAME) != 0)
			return 0;
		break;
	case PATHIDX_BUILDID:
		if (!buildid_equal(&e.id, qu->id))
			return 0;
		break;
	}
	return qu->cb(&e, qu->arg);
}

/* A 'd' record. */
static int
d_cb(const struct index_rec *r, void *arg)
{
	struct query *qu = arg;
	int rc;

	if ((rc = query_tick(qu)) != 0)
		return rc;
	return query_offer(qu, r->val, r->vallen);
}

/* The 'd' record of (dh, base, ref), offered. */
static int
offer_d(struct query *qu, const uint8_t *dh, const uint8_t *base, size_t blen,
    const uint8_t *ref)
{
	uint8_t k[KEY_CAP];
	struct index_rec r;

	if (blen > BASE_CUT ||
	    index_get_rec(qu->rd, INDEX_PATHS, k, d_key(k, dh, base, blen, ref),
		&r) != 0)
		return 0;
	return query_offer(qu, r.val, r.vallen);
}

/* A 'b' record: 'b' B 0 D R. */
static int
b_cb(const struct index_rec *r, void *arg)
{
	struct query *qu = arg;
	const uint8_t *k = r->key;
	char base[BASE_KEY + 1];
	size_t blen;
	int rc;

	if ((rc = query_tick(qu)) != 0)
		return rc;
	if (r->keylen < 2 + DH_LEN + REF_LEN)
		return 0;
	blen = r->keylen - 2 - DH_LEN - REF_LEN;
	/* An uncut name can be ruled out without reading its entry. */
	if (blen <= BASE_KEY) {
		memcpy(base, k + 1, blen);
		base[blen] = '\0';
		if (fnmatch(qu->basepat, base, FNM_PATHNAME) != 0)
			return 0;
	}
	return offer_d(qu, k + 2 + blen, k + 1, blen, k + 2 + blen + DH_LEN);
}

/* An 'i' record: 'i' len id D R B. */
static int
i_cb(const struct index_rec *r, void *arg)
{
	struct query *qu = arg;
	const uint8_t *k = r->key;
	size_t skip = 2 + (size_t)qu->id->len;
	int rc;

	if ((rc = query_tick(qu)) != 0)
		return rc;
	if (r->keylen < skip + DH_LEN + REF_LEN)
		return 0;
	return offer_d(qu, k + skip, k + skip + DH_LEN + REF_LEN,
	    r->keylen - skip - DH_LEN - REF_LEN, k + skip + DH_LEN);
}

/* Walk the 'd' records of directory dh from the base name's literal start. */
static int
walk_dir(struct query *qu, const uint8_t dh[DH_LEN], const char *lit,
    size_t litlen)
{
	uint8_t k[1 + DH_LEN + BASE_KEY];

	if (litlen > BASE_KEY)
		litlen = BASE_KEY;
	k[0] = 'd';
	memcpy(k + 1, dh, DH_LEN);
	memcpy(k + 1 + DH_LEN, lit, litlen);
	return index_walk_prefix(qu->rd, INDEX_PATHS, k, 1 + DH_LEN + litlen,
	    d_cb, qu);
}

/* A 'p' record: a directory; walk it when it matches. */
static int
p_cb(const struct index_rec *r, void *arg)
{
	struct query *qu = arg;
	char dir[PATH_LEN_MAX + 1];
	int rc;

	if ((rc = query_tick(qu)) != 0)
		return rc;
	if (r->keylen < 1 + DH_LEN || r->vallen > PATH_LEN_MAX)
		return 0;
	memcpy(dir, r->val, r->vallen);
	dir[r->vallen] = '\0';
	if (fnmatch(qu->dirpat, dir, FNM_PATHNAME) != 0)
		return 0;
	return walk_dir(qu, (const uint8_t *)r->key + r->keylen - DH_LEN,
	    qu->basepat, qu->baselit);
}

/* Bytes at the start of s before its first wildcard or escape. */
static size_t
literal_len(const char *s)
{
	return strcspn(s, "*?[\\");
}

static int
find_glob(struct query *qu)
{
	char dirpat[PATH_LEN_MAX + 1];
	const char *slash = strrchr(qu->value, '/');
	uint8_t k[1 + BASE_KEY], dh[DH_LEN];
	size_t dirlen, dirlit, n;

	if (slash == NULL ||
	    (dirlen = (size_t)(slash - qu->value)) > PATH_LEN_MAX)
		return 0; /* no absolute path matches */
	memcpy(dirpat, qu->value, dirlen);
	dirpat[dirlen] = '\0';
	qu->dirpat = dirpat;
	qu->basepat = slash + 1;
	qu->baselit = literal_len(qu->basepat);
	dirlit = literal_len(dirpat);
	if (dirlit == dirlen) {
		sha("", 0, dirpat, dirlen, dh, DH_LEN);
		return walk_dir(qu, dh, qu->basepat, qu->baselit);
	}
	if (qu->baselit >= 2) {
		n = qu->baselit < BASE_KEY ? qu->baselit : BASE_KEY;
		k[0] = 'b';
		memcpy(k + 1, qu->basepat, n);
		return index_walk_prefix(qu->rd, INDEX_PATHS, k, 1 + n, b_cb,
		    qu);
	}
	n = dirlit < DIR_KEY ? dirlit : DIR_KEY;
	k[0] = 'p';
	memcpy(k + 1, dirpat, n);
	return index_walk_prefix(qu->rd, INDEX_PATHS, k, 1 + n, p_cb, qu);
}

int
pathidx_find(struct index_reader *rd, enum pathidx_query q, const char *value,
    const struct buildid *id, int64_t deadline_ns, int64_t (*now_ns)(void),
    int (*cb)(const struct pathidx_entry *e, void *arg), void *arg)
{
	struct query qu = { .rd = rd,
		.q = q,
		.value = value,
		.id = id,
		.deadline_ns = deadline_ns,
		.now_ns = now_ns,
		.cb = cb,
		.arg = arg };
	static const uint8_t zero[REF_LEN];
	uint8_t k[KEY_CAP];
	struct parts p;
	size_t len;

	if (deadline_ns != 0 && now_ns() > deadline_ns)
		return PATHIDX_TIMEOUT;
	switch (q) {
	case PATHIDX_FILE:
		len = strlen(value);
		if (len == 0 || value[0] != '/' || len > PATH_LEN_MAX)
			return 0;
		parts_of(value, len, &p);
		len = d_key(k, p.dh, p.base, p.baselen, zero) - REF_LEN;
		return index_walk_prefix(rd, INDEX_PATHS, k, len, d_cb, &qu);
	case PATHIDX_GLOB:
		return find_glob(&qu);
	case PATHIDX_BUILDID:
		k[0] = 'i';
		k[1] = id->len;
		memcpy(k + 2, id->bytes, id->len);
		return index_walk_prefix(rd, INDEX_PATHS, k, 2 + id->len, i_cb,
		    &qu);
	}
	return -1;
}
