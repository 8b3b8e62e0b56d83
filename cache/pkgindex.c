/*
 * cache/pkgindex.c: package members in three of the index's tables.
 *
 *   INDEX_PKGS         P -> the package as an index file record
 *   INDEX_MEMBERS      K, P -> member_hdr, package path, NUL, member path, NUL
 *   INDEX_PKG_MEMBERS  P, K -> nothing
 *
 * P is the path key of the package (SHA-256 of its path, as the files
 * table keys paths); K is the cache key of (id, kind, "") from cache/key.h,
 * the same 32 bytes the blob store uses for that request.  For /source, K
 * is the cache key of (id, source, path) for a source path a debuginfo
 * member names (PKG_REC_SOURCE), and of (no id, source, path) for a
 * regular file a package ships (PKG_REC_FILE).  A lookup walks
 * the members under the prefix K; replacing or dropping a package walks
 * INDEX_PKG_MEMBERS under the prefix P to find the member records it owns,
 * so neither reads the whole of a table.  Records are host byte order and
 * checked when read back (lengths, NULs, id, kinds), since a damaged map
 * must not become a path handed to the extractor.
 *
 * Each ELF member also has its entry in the path index
 * (cache/pathindex.h), made and dropped with its records.
 *
 * A local file's sources (PKG_REC_LOCAL) use the same two tables with P
 * the path key of the file (as the files table keys it) and K the cache
 * key of (id, source, path), the key PKG_REC_SOURCE records have: so one
 * prefix walk finds the records of both, told apart by their kind.  The
 * walks that unlink a package's records, or a local file's, pass by the
 * other's: a path could name both (an ELF file with a package's name in
 * both scan-dir and scan-packages).
 *
 * The index's counter "pkg_members" is the number of ELF member records,
 * kept in the same transactions as they change, so that /metrics and
 * stats read it without a walk; an index written before it existed is
 * counted once, by the first batch that changes packages or prunes them.
 *
 * Runs on whatever thread holds the reader or the batch.
 */
#include "cache/pkgindex.h"

#include <string.h>

#include "cache/key.h"
#include "cache/negative.h"
#include "cache/pathindex.h"

#define PKG_KEY_LEN INDEX_PATHKEY_LEN
#define MEMBER_KEY_LEN (CACHE_KEY_LEN + PKG_KEY_LEN)
#define PATH_LEN_MAX 4095
#define PKG_REC_ANY (PKG_REC_FILE | PKG_REC_SOURCE | PKG_REC_LOCAL)
#define MEMBERS_COUNTER "pkg_members"

_Static_assert(MEMBER_KEY_LEN <= INDEX_KEY_MAX, "member keys fit");

/* The stored member record: this header, then the two paths with NULs. */
struct member_hdr {
	uint64_t size;
	int64_t mtime;
	uint16_t pkglen;
	uint16_t memberlen;
	uint8_t kinds;
	uint8_t idlen;
	uint8_t id[BUILDID_MAX];
};

/*
 * The key prefix of a record: (id, kind) for ELF members; (id, path) for a
 * source a debuginfo names; (path) alone for a file a package ships.
 */
static void
rec_key(const struct buildid *id, unsigned kind, const char *path,
    uint8_t out[CACHE_KEY_LEN])
{
	static const struct buildid none;
	struct cache_key k;

	if (kind == PKG_REC_FILE)
		cache_key_make(&k, &none, CACHE_SOURCE, path);
	else if (kind == PKG_REC_SOURCE || kind == PKG_REC_LOCAL)
		cache_key_make(&k, id, CACHE_SOURCE, path);
	else
		cache_key_make(&k, id,
		    kind == ELF_KIND_DEBUGINFO ? CACHE_DEBUGINFO
					       : CACHE_EXECUTABLE,
		    "");
	memcpy(out, k.hash, CACHE_KEY_LEN);
}

/* 1 when the len bytes at s and its NUL make an absolute path. */
static int
path_ok(const char *s, size_t len)
{
	return len > 0 && s[0] == '/' && s[len] == '\0' &&
	    memchr(s, '\0', len) == NULL;
}

/* A package record is a file record of the index, with an absolute path. */
int
pkgidx_package_decode(const struct index_rec *r, struct index_file *f)
{
	if (index_file_decode(r->val, r->vallen, f) == -1 ||
	    !path_ok(f->path, strlen(f->path)))
		return -1;
	return 0;
}

/* 1 when kinds is a valid combination for a record with an id of idlen. */
static int
kinds_ok(unsigned kinds, unsigned idlen)
{
	if (kinds == PKG_REC_FILE)
		return idlen == 0;
	if (kinds == PKG_REC_SOURCE || kinds == PKG_REC_LOCAL)
		return idlen > 0;
	return idlen > 0 && kinds != 0 && (kinds & ~ELF_KIND_ALL) == 0;
}

int
pkgidx_member_decode(const struct index_rec *r, struct pkg_rec *m)
{
	struct member_hdr h;
	const char *pkg, *member;

	if (r->keylen != MEMBER_KEY_LEN || r->vallen < sizeof(h) + 4)
		return -1;
	memcpy(&h, r->val, sizeof(h));
	pkg = (const char *)r->val + sizeof(h);
	member = pkg + h.pkglen + 1;
	if (r->vallen != sizeof(h) + h.pkglen + 1 + h.memberlen + 1 ||
	    !path_ok(pkg, h.pkglen) || !path_ok(member, h.memberlen) ||
	    h.idlen > BUILDID_MAX || !kinds_ok(h.kinds, h.idlen))
		return -1;
	m->package = pkg;
	m->member = member;
	m->size = h.size;
	m->mtime = h.mtime;
	m->kinds = h.kinds;
	m->id.len = h.idlen;
	memcpy(m->id.bytes, h.id, h.idlen);
	return 0;
}

struct find {
	const struct buildid *id;
	unsigned kind;
	int (*cb)(const struct pkg_rec *r, void *arg);
	void *arg;
};

struct find_path {
	const struct buildid *id; /* NULL: any */
	const char *path;
	unsigned kind;
	int (*cb)(const struct pkg_rec *r, void *arg);
	void *arg;
};

static int
find_cb(const struct index_rec *r, void *arg)
{
	struct find *fd = arg;
	struct pkg_rec m;

	/* The key says (id, kind); the record must agree. */
	if (pkgidx_member_decode(r, &m) == -1 ||
	    !buildid_equal(&m.id, fd->id) || (m.kinds & fd->kind) == 0)
		return 0;
	return fd->cb(&m, fd->arg);
}

int
pkgidx_find(struct index_reader *rd, const struct buildid *id,
    enum elf_kind kind, int (*cb)(const struct pkg_rec *r, void *arg),
    void *arg)
{
	struct find fd = { id, kind, cb, arg };
	uint8_t prefix[CACHE_KEY_LEN];

	if (kind != ELF_KIND_DEBUGINFO && kind != ELF_KIND_EXECUTABLE)
		return -1;
	rec_key(id, kind, NULL, prefix);
	return index_walk_prefix(rd, INDEX_MEMBERS, prefix, sizeof(prefix),
	    find_cb, &fd);
}

/* A record of kind fd->kind for path fd->path (and id, when given). */
static int
path_cb(const struct index_rec *r, void *arg)
{
	struct find_path *fp = arg;
	struct pkg_rec m;

	if (pkgidx_member_decode(r, &m) == -1 || m.kinds != fp->kind ||
	    strcmp(m.member, fp->path) != 0 ||
	    (fp->id != NULL && !buildid_equal(&m.id, fp->id)))
		return 0;
	return fp->cb(&m, fp->arg);
}

static int
stop_cb(const struct pkg_rec *r, void *arg)
{
	(void)r;
	(void)arg;
	return 1;
}

int
pkgidx_find_source(struct index_reader *rd, const struct buildid *id,
    const char *path, int (*cb)(const struct pkg_rec *r, void *arg), void *arg)
{
	struct find_path named = { id, path, PKG_REC_SOURCE, stop_cb, NULL };
	struct find_path shipped = { NULL, path, PKG_REC_FILE, cb, arg };
	uint8_t prefix[CACHE_KEY_LEN];
	int rc;

	rec_key(id, PKG_REC_SOURCE, path, prefix);
	rc = index_walk_prefix(rd, INDEX_MEMBERS, prefix, sizeof(prefix),
	    path_cb, &named);
	if (rc != 1)
		return rc; /* no debuginfo of id names path (or an error) */
	rec_key(NULL, PKG_REC_FILE, path, prefix);
	return index_walk_prefix(rd, INDEX_MEMBERS, prefix, sizeof(prefix),
	    path_cb, &shipped);
}

struct local_find {
	const struct buildid *id;
	const char *path;
	int (*cb)(const struct pkg_rec *r, void *arg);
	void *arg;
};

/* A local file's record of lf->path for lf->id. */
static int
local_cb(const struct index_rec *r, void *arg)
{
	struct local_find *lf = arg;
	struct pkg_rec m;

	if (pkgidx_member_decode(r, &m) == -1 || m.kinds != PKG_REC_LOCAL ||
	    strcmp(m.member, lf->path) != 0 || !buildid_equal(&m.id, lf->id))
		return 0;
	return lf->cb(&m, lf->arg);
}

int
pkgidx_find_local_source(struct index_reader *rd, const struct buildid *id,
    const char *path, int (*cb)(const struct pkg_rec *r, void *arg), void *arg)
{
	struct local_find lf = { id, path, cb, arg };
	uint8_t prefix[CACHE_KEY_LEN];

	rec_key(id, PKG_REC_LOCAL, path, prefix);
	return index_walk_prefix(rd, INDEX_MEMBERS, prefix, sizeof(prefix),
	    local_cb, &lf);
}

struct members {
	struct index_reader *rd;
	int (*cb)(const struct pkg_rec *r, void *arg);
	void *arg;
};

/* An INDEX_PKG_MEMBERS key (P, K): hand out the ELF member record (K, P). */
static int
members_cb(const struct index_rec *back, void *arg)
{
	struct members *ms = arg;
	uint8_t key[MEMBER_KEY_LEN];
	struct index_rec r;
	struct pkg_rec m;

	if (back->keylen != MEMBER_KEY_LEN)
		return 0;
	memcpy(key, (const uint8_t *)back->key + PKG_KEY_LEN, CACHE_KEY_LEN);
	memcpy(key + CACHE_KEY_LEN, back->key, PKG_KEY_LEN);
	if (index_get_rec(ms->rd, INDEX_MEMBERS, key, sizeof(key), &r) != 0 ||
	    pkgidx_member_decode(&r, &m) == -1 || (m.kinds & ELF_KIND_ALL) == 0)
		return 0;
	return ms->cb(&m, ms->arg);
}

int
pkgidx_package_members(struct index_reader *rd, const char *path,
    int (*cb)(const struct pkg_rec *r, void *arg), void *arg)
{
	struct members ms = { rd, cb, arg };
	uint8_t pkey[PKG_KEY_LEN];

	index_path_key(path, pkey);
	return index_walk_prefix(rd, INDEX_PKG_MEMBERS, pkey, sizeof(pkey),
	    members_cb, &ms);
}

int
pkgidx_get_package(struct index_reader *rd, const char *path,
    struct index_file *out)
{
	uint8_t key[PKG_KEY_LEN];
	struct index_rec r;
	int rc;

	index_path_key(path, key);
	if ((rc = index_get_rec(rd, INDEX_PKGS, key, sizeof(key), &r)) != 0)
		return rc;
	return pkgidx_package_decode(&r, out);
}

struct unlink {
	struct index_batch *b;
	int local; /* a local file's source records, else a package's */
	uint64_t elf; /* ELF member records deleted */
};

/*
 * 1 when the member record of key in b belongs to the owner u unlinks (a
 * local file's PKG_REC_LOCAL, or a package's other records); a damaged
 * record belongs to whoever unlinks it.
 */
static int
owned(struct unlink *u, const uint8_t key[MEMBER_KEY_LEN])
{
	struct index_rec r;
	struct pkg_rec m;

	if (index_batch_get_rec(u->b, INDEX_MEMBERS, key, MEMBER_KEY_LEN, &r) !=
		0 ||
	    pkgidx_member_decode(&r, &m) == -1)
		return 1;
	return (m.kinds == PKG_REC_LOCAL) == u->local;
}

/* 1 when the member record of key in b is an ELF member's. */
static int
is_elf_member(struct index_batch *b, const uint8_t key[MEMBER_KEY_LEN])
{
	struct index_rec r;
	struct pkg_rec m;

	if (index_batch_get_rec(b, INDEX_MEMBERS, key, MEMBER_KEY_LEN, &r) !=
		0 ||
	    pkgidx_member_decode(&r, &m) == -1)
		return 0;
	return (m.kinds & ELF_KIND_ALL) != 0;
}

/*
 * Drop the path index's entry of the ELF member whose record is under
 * key, if it is one: 1 when it was, 0 when not, -1.
 */
static int
unlink_member_path(struct index_batch *b, const uint8_t key[MEMBER_KEY_LEN])
{
	struct index_rec r;
	struct pkg_rec m;

	if (index_batch_get_rec(b, INDEX_MEMBERS, key, MEMBER_KEY_LEN, &r) !=
		0 ||
	    pkgidx_member_decode(&r, &m) == -1 || (m.kinds & ELF_KIND_ALL) == 0)
		return 0;
	/* Another kind's record of the member may have dropped it. */
	return pathidx_del(b, PATHIDX_PACKAGE, m.member, m.package) == -1 ? -1
									  : 1;
}

/* Delete the member record that a INDEX_PKG_MEMBERS key names, and it. */
static int
unlink_member_cb(const struct index_rec *r, void *arg)
{
	struct unlink *u = arg;
	uint8_t key[MEMBER_KEY_LEN];
	int elf;

	if (r->keylen == MEMBER_KEY_LEN) {
		memcpy(key, (const uint8_t *)r->key + PKG_KEY_LEN,
		    CACHE_KEY_LEN);
		memcpy(key + CACHE_KEY_LEN, r->key, PKG_KEY_LEN);
		if (!owned(u, key))
			return 0;
		if ((elf = unlink_member_path(u->b, key)) == -1)
			return -1;
		u->elf += (uint64_t)elf;
		if (index_batch_del_rec(u->b, INDEX_MEMBERS, key,
			sizeof(key)) == -1)
			return -1;
	}
	return INDEX_WALK_DELETE;
}

/*
 * Drop the member records of the package whose key is pkey (with local,
 * the source records of the local file whose key it is); add the ELF ones
 * to *elf.
 */
static int
unlink_members(struct index_batch *b, const uint8_t pkey[PKG_KEY_LEN],
    int local, uint64_t *elf)
{
	struct unlink u = { b, local, 0 };
	int rc;

	rc = index_batch_walk_prefix(b, INDEX_PKG_MEMBERS, pkey, PKG_KEY_LEN,
	    unlink_member_cb, &u);
	*elf += u.elf;
	return rc;
}

/* Walk of INDEX_MEMBERS: count the ELF member records. */
static int
count_elf_cb(const struct index_rec *r, void *arg)
{
	struct pkg_rec m;

	if (pkgidx_member_decode(r, &m) == 0 && (m.kinds & ELF_KIND_ALL) != 0)
		(*(uint64_t *)arg)++;
	return 0;
}

/*
 * After a change: move the ELF member count by plus and minus, or count
 * the records (the change included) when the index has no count yet.
 */
static int
members_add(struct index_batch *b, uint64_t plus, uint64_t minus)
{
	uint64_t n = 0;
	int rc;

	rc = index_batch_get_counter(b, MEMBERS_COUNTER, &n);
	if (rc == -1)
		return -1;
	if (rc == INDEX_NOTFOUND) {
		plus = minus = 0;
		if (index_batch_walk(b, INDEX_MEMBERS, count_elf_cb, &n) != 0)
			return -1;
	}
	return index_batch_set_counter(b, MEMBERS_COUNTER,
	    (n > minus ? n - minus : 0) + plus);
}

int
pkgidx_count(struct index_reader *rd, uint64_t *packages, uint64_t *members)
{
	if (index_count(rd, INDEX_PKGS, packages) == -1 ||
	    index_get_counter(rd, MEMBERS_COUNTER, members) == -1)
		return -1;
	return 0;
}

struct under {
	const char *dir;
	size_t len;
	uint64_t n;
};

static int
under_cb(const struct index_rec *r, void *arg)
{
	struct under *u = arg;
	struct index_file f;

	if (pkgidx_package_decode(r, &f) == 0 &&
	    strncmp(f.path, u->dir, u->len) == 0 && f.path[u->len] == '/')
		u->n++;
	return 0;
}

int
pkgidx_count_under(struct index_reader *rd, const char *dir, uint64_t *packages)
{
	struct under u = { dir, strlen(dir), 0 };

	while (u.len > 1 && dir[u.len - 1] == '/')
		u.len--;
	if (index_walk_prefix(rd, INDEX_PKGS, NULL, 0, under_cb, &u) != 0)
		return -1;
	*packages = u.n;
	return 0;
}

/*
 * Record member m of the package under pkey as kind: 1 when that made a
 * new ELF member record, 0 when not, -1.
 */
static int
put_member(struct index_batch *b, const uint8_t pkey[PKG_KEY_LEN],
    const char *pkg, size_t pkglen, const struct pkg_rec *m, unsigned kind)
{
	uint8_t key[MEMBER_KEY_LEN], back[MEMBER_KEY_LEN];
	uint8_t val[sizeof(struct member_hdr) + 2 * (PATH_LEN_MAX + 1)];
	struct member_hdr h;
	struct cache_key ck;
	size_t mlen = strlen(m->member), len;
	int added;

	memset(&h, 0, sizeof(h));
	h.size = m->size;
	h.mtime = m->mtime;
	h.pkglen = (uint16_t)pkglen;
	h.memberlen = (uint16_t)mlen;
	h.kinds = (uint8_t)(kind & PKG_REC_ANY ? kind : m->kinds);
	h.idlen = m->id.len;
	memcpy(h.id, m->id.bytes, m->id.len);
	memcpy(val, &h, sizeof(h));
	memcpy(val + sizeof(h), pkg, pkglen + 1);
	memcpy(val + sizeof(h) + pkglen + 1, m->member, mlen + 1);
	len = sizeof(h) + pkglen + 1 + mlen + 1;

	rec_key(&m->id, kind, m->member, key);
	memcpy(&ck.hash, key, CACHE_KEY_LEN);
	memcpy(key + CACHE_KEY_LEN, pkey, PKG_KEY_LEN);
	memcpy(back, pkey, PKG_KEY_LEN);
	memcpy(back + PKG_KEY_LEN, key, CACHE_KEY_LEN);
	/* Two members of a package may share an (id, kind): one record. */
	added = (kind & ELF_KIND_ALL) != 0 && !is_elf_member(b, key);
	if (index_batch_put_rec(b, INDEX_MEMBERS, key, sizeof(key), val, len) ==
		-1 ||
	    index_batch_put_rec(b, INDEX_PKG_MEMBERS, back, sizeof(back), "",
		0) == -1)
		return -1;
	/* Found now: a miss remembered for it no longer holds. */
	return neg_batch_del(b, &ck) == -1 ? -1 : added;
}

/* 1 when m can be recorded. */
static int
member_ok(const struct pkg_rec *m)
{
	size_t mlen = strlen(m->member);

	return m->id.len <= BUILDID_MAX && kinds_ok(m->kinds, m->id.len) &&
	    path_ok(m->member, mlen) && mlen <= PATH_LEN_MAX;
}

int
pkgidx_put(struct index_batch *b, const struct index_file *pkg,
    const struct pkg_rec *recs, size_t n)
{
	uint8_t pkey[PKG_KEY_LEN];
	uint8_t val[512 + PATH_LEN_MAX];
	struct index_file rec = *pkg;
	struct pathidx_entry e = { .archive = pkg->path,
		.origin = PATHIDX_PACKAGE };
	size_t pathlen = strlen(pkg->path), vlen, i;
	uint64_t gone = 0, added = 0;
	unsigned kind, kinds = 0;
	int rc;

	if (!path_ok(pkg->path, pathlen) || pathlen > PATH_LEN_MAX)
		return -1;
	index_path_key(pkg->path, pkey);
	if (unlink_members(b, pkey, 0, &gone) == -1)
		return -1;
	for (i = 0; i < n; i++) {
		if (!member_ok(&recs[i]))
			continue;
		if (recs[i].kinds & PKG_REC_ANY) {
			if (put_member(b, pkey, pkg->path, pathlen, &recs[i],
				recs[i].kinds) == -1)
				return -1;
			continue;
		}
		for (kind = ELF_KIND_DEBUGINFO; kind <= ELF_KIND_EXECUTABLE;
		     kind <<= 1) {
			if ((recs[i].kinds & kind) == 0)
				continue;
			if ((rc = put_member(b, pkey, pkg->path, pathlen,
				 &recs[i], kind)) == -1)
				return -1;
			added += (uint64_t)rc;
		}
		e.path = recs[i].member;
		e.kinds = recs[i].kinds & ELF_KIND_ALL;
		e.id = recs[i].id;
		if (pathidx_put(b, &e) == -1)
			return -1;
		kinds |= recs[i].kinds & ELF_KIND_ALL;
	}
	if (members_add(b, added, gone) == -1)
		return -1;

	rec.kinds = kinds;
	rec.id.len = 0;
	if ((vlen = index_file_encode(&rec, val, sizeof(val))) == 0)
		return -1;
	return index_batch_put_rec(b, INDEX_PKGS, pkey, sizeof(pkey), val,
	    vlen);
}

struct prune {
	struct index_batch *b;
	int (*keep)(const char *path, void *arg);
	void *arg;
	uint64_t removed;
	uint64_t elf; /* ELF member records dropped with them */
};

static int
prune_cb(const struct index_rec *r, void *arg)
{
	struct prune *p = arg;
	struct index_file f;
	uint8_t pkey[PKG_KEY_LEN];

	if (pkgidx_package_decode(r, &f) == 0 && p->keep(f.path, p->arg))
		return 0;
	/* The key first: changing the other tables may move the record. */
	if (r->keylen == PKG_KEY_LEN) {
		memcpy(pkey, r->key, PKG_KEY_LEN);
		if (unlink_members(p->b, pkey, 0, &p->elf) == -1)
			return -1;
	}
	p->removed++;
	return INDEX_WALK_DELETE;
}

int
pkgidx_prune(struct index_batch *b, int (*keep)(const char *path, void *arg),
    void *arg, uint64_t *removed)
{
	struct prune p = { b, keep, arg, 0, 0 };
	int rc;

	rc = index_batch_walk(b, INDEX_PKGS, prune_cb, &p);
	*removed = p.removed;
	if (rc != 0)
		return -1;
	return members_add(b, 0, p.elf);
}

int
pkgidx_put_local_sources(struct index_batch *b, const char *file,
    const struct buildid *id, char *const *paths, size_t n)
{
	uint8_t pkey[PKG_KEY_LEN];
	size_t filelen = strlen(file), i;
	struct pkg_rec m;
	uint64_t gone = 0;

	if (!path_ok(file, filelen) || filelen > PATH_LEN_MAX ||
	    id->len > BUILDID_MAX)
		return -1;
	index_path_key(file, pkey);
	if (unlink_members(b, pkey, 1, &gone) == -1)
		return -1;
	memset(&m, 0, sizeof(m));
	m.package = file;
	m.kinds = PKG_REC_LOCAL;
	m.id = *id;
	for (i = 0; i < n; i++) {
		m.member = paths[i];
		if (id->len > 0 && member_ok(&m) &&
		    put_member(b, pkey, file, filelen, &m, PKG_REC_LOCAL) == -1)
			return -1;
	}
	return 0;
}

int
pkgidx_del_local_sources(struct index_batch *b, const char *file)
{
	uint8_t pkey[PKG_KEY_LEN];
	uint64_t gone = 0;

	index_path_key(file, pkey);
	return unlink_members(b, pkey, 1, &gone);
}
