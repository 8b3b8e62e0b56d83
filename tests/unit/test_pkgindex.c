/*
 * tests/unit/test_pkgindex.c: cache/pkgindex.c, package members in the
 * index, and the prefix walks of cache/index.c it stands on.
 *
 * Includes the .c to write records in its own layout, damaged on purpose,
 * under the keys it uses.  One index in a mkdtemp directory, removed at the
 * end; one thread, readers and batches interleaved.
 */
#include "cache/pkgindex.c"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/tap.h"
#include "tests/testdir.h"

#define MAPSIZE (64ull << 20)
#define ERRLEN 256

static struct buildid
make_id(unsigned seed)
{
	struct buildid id;
	size_t i;

	memset(&id, 0, sizeof(id));
	id.len = 20;
	for (i = 0; i < id.len; i++)
		id.bytes[i] = (uint8_t)(seed * 37 + i);
	return id;
}

static struct index_file
make_pkg(const char *path, uint64_t size)
{
	struct index_file f;

	memset(&f, 0, sizeof(f));
	f.path = path;
	f.size = size;
	f.mtime_sec = 1700000000 + (int64_t)size;
	f.mtime_nsec = 123456789;
	f.ino = size * 3 + 1;
	f.dev = 0x801;
	return f;
}

static struct pkg_rec
make_member(const char *member, const struct buildid *id, unsigned kinds,
    uint64_t size)
{
	struct pkg_rec r;

	memset(&r, 0, sizeof(r));
	r.member = member;
	r.id = *id;
	r.kinds = kinds;
	r.size = size;
	r.mtime = 1600000000 + (int64_t)size;
	return r;
}

/* What a find saw: how many, and the last one's strings and size. */
struct seen {
	int n;
	char package[256];
	char member[256];
	uint64_t size;
	unsigned kinds;
	int stop_at; /* non-zero: return 7 at this visit */
};

static int
seen_cb(const struct pkg_rec *r, void *arg)
{
	struct seen *s = arg;

	s->n++;
	snprintf(s->package, sizeof(s->package), "%s", r->package);
	snprintf(s->member, sizeof(s->member), "%s", r->member);
	s->size = r->size;
	s->kinds = r->kinds;
	return s->n == s->stop_at ? 7 : 0;
}

/* Find (id, kind) in a fresh snapshot; the number of members, or -1. */
static int
find(struct index_reader *rd, const struct buildid *id, enum elf_kind kind,
    struct seen *s)
{
	int rc;

	memset(s, 0, sizeof(*s));
	if (index_reader_begin(rd) == -1)
		return -1;
	rc = pkgidx_find(rd, id, kind, seen_cb, s);
	index_reader_end(rd);
	return rc == 0 ? s->n : -1;
}

static uint64_t
count(struct index_reader *rd, enum index_table t)
{
	uint64_t n = 0;

	index_reader_begin(rd);
	index_count(rd, t, &n);
	index_reader_end(rd);
	return n;
}

static int
put_pkg(struct index *idx, const struct index_file *pkg,
    const struct pkg_rec *recs, size_t n)
{
	struct index_batch *b;
	char err[ERRLEN];
	int rc;

	if ((b = index_batch_begin(idx, err, sizeof(err))) == NULL)
		return -1;
	rc = pkgidx_put(b, pkg, recs, n);
	if (index_batch_commit(b, err, sizeof(err)) == -1) {
		printf("# commit: %s\n", err);
		return -1;
	}
	return rc;
}

static int
keep_only(const char *path, void *arg)
{
	return strcmp(path, arg) == 0;
}

/* Prune every package but the one at keep; the number removed, or -1. */
static long
prune_but(struct index *idx, const char *keep)
{
	struct index_batch *b;
	char err[ERRLEN];
	uint64_t removed = 0;

	if ((b = index_batch_begin(idx, err, sizeof(err))) == NULL)
		return -1;
	if (pkgidx_prune(b, keep_only, (void *)keep, &removed) == -1 ||
	    index_batch_commit(b, err, sizeof(err)) == -1)
		return -1;
	return (long)removed;
}

static int
keep_b(const char *path, void *arg)
{
	(void)arg;
	return strcmp(path, "/pkgs/b.rpm") == 0;
}

static void
test_put_find(struct index *idx, struct index_reader *rd)
{
	struct buildid id1 = make_id(1), id2 = make_id(2), id3 = make_id(3);
	struct buildid none = { 0 };
	struct index_file a = make_pkg("/pkgs/a.deb", 1000), got;
	struct index_file pb = make_pkg("/pkgs/b.rpm", 2000);
	struct index_file pc = make_pkg("/pkgs/c.pkg.tar.zst", 3000);
	struct pkg_rec ra[4], rb[1], rc4[1];
	struct index_batch *b;
	struct seen s;
	char err[ERRLEN];
	uint64_t removed;

	ra[0] =
	    make_member("/usr/lib/debug/x.debug", &id1, ELF_KIND_DEBUGINFO, 11);
	ra[1] = make_member("/usr/bin/y", &id2, ELF_KIND_ALL, 22);
	ra[2] = make_member("/usr/lib/debug/x2.debug", &id1, ELF_KIND_DEBUGINFO,
	    33);
	ra[3] = make_member("/usr/bin/noid", &none, ELF_KIND_EXECUTABLE, 44);
	is_int(put_pkg(idx, &a, ra, 4), 0, "put a package with 4 members");

	is_int(find(rd, &id1, ELF_KIND_DEBUGINFO, &s), 1,
	    "the same (id, kind) twice is kept once");
	is_str(s.member, "/usr/lib/debug/x2.debug", "the last one");
	is_str(s.package, "/pkgs/a.deb", "with its package");
	ok(s.size == 33, "and its size");
	is_int(find(rd, &id1, ELF_KIND_EXECUTABLE, &s), 0,
	    "no executable for a debuginfo-only id");
	is_int(find(rd, &id2, ELF_KIND_DEBUGINFO, &s), 1,
	    "an unstripped member is a debuginfo");
	is_int(s.kinds, ELF_KIND_ALL, "with both kinds");
	is_int(find(rd, &id2, ELF_KIND_EXECUTABLE, &s), 1, "and an executable");
	is_int(find(rd, &id3, ELF_KIND_DEBUGINFO, &s), 0, "unknown id: none");
	is_int(count(rd, INDEX_MEMBERS), 3, "three member records");
	is_int(count(rd, INDEX_PKG_MEMBERS), 3, "and three back links");

	index_reader_begin(rd);
	is_int(pkgidx_get_package(rd, "/pkgs/a.deb", &got), 0,
	    "the package record");
	is_str(got.path, "/pkgs/a.deb", "its path");
	ok(got.size == a.size && got.mtime_sec == a.mtime_sec &&
		got.mtime_nsec == a.mtime_nsec && got.ino == a.ino &&
		got.dev == a.dev,
	    "its size, mtime, inode and device");
	is_int(got.kinds, ELF_KIND_ALL, "the union of its members' kinds");
	is_int(pkgidx_get_package(rd, "/pkgs/none.deb", &got), INDEX_NOTFOUND,
	    "an unknown package");
	index_reader_end(rd);

	/* A second package with the same id: both are found, in turn. */
	rb[0] =
	    make_member("/usr/lib/debug/x.debug", &id1, ELF_KIND_DEBUGINFO, 55);
	is_int(put_pkg(idx, &pb, rb, 1), 0, "put a second package");
	is_int(find(rd, &id1, ELF_KIND_DEBUGINFO, &s), 2,
	    "the id is found in both");
	memset(&s, 0, sizeof(s));
	s.stop_at = 1;
	index_reader_begin(rd);
	is_int(pkgidx_find(rd, &id1, ELF_KIND_DEBUGINFO, seen_cb, &s), 7,
	    "a callback stops the walk with its value");
	index_reader_end(rd);
	is_int(s.n, 1, "after one member");

	/* Replacing a package drops the members it no longer has. */
	rc4[0] = make_member("/usr/bin/z", &id3, ELF_KIND_EXECUTABLE, 66);
	a.size = 1001;
	is_int(put_pkg(idx, &a, rc4, 1), 0, "replace the first package");
	is_int(find(rd, &id1, ELF_KIND_DEBUGINFO, &s), 1,
	    "its old member is gone");
	is_str(s.package, "/pkgs/b.rpm", "the other package's stays");
	is_int(find(rd, &id2, ELF_KIND_EXECUTABLE, &s), 0,
	    "its other old member too");
	is_int(find(rd, &id3, ELF_KIND_EXECUTABLE, &s), 1, "its new member");
	is_int(count(rd, INDEX_MEMBERS), 2, "two member records");
	is_int(count(rd, INDEX_PKG_MEMBERS), 2, "two back links");
	index_reader_begin(rd);
	pkgidx_get_package(rd, "/pkgs/a.deb", &got);
	ok(got.size == 1001, "the package record is the new one");
	index_reader_end(rd);

	/* Dropping. */
	is_int(prune_but(idx, "/pkgs/b.rpm"), 1, "drop a package (prune)");
	is_int(prune_but(idx, "/pkgs/b.rpm"), 0,
	    "dropping it again: nothing to drop");
	is_int(find(rd, &id3, ELF_KIND_EXECUTABLE, &s), 0,
	    "its members are gone");
	is_int(count(rd, INDEX_PKGS), 1, "one package left");

	/* A package without members is remembered, and pruned like any. */
	is_int(put_pkg(idx, &pc, NULL, 0), 0, "put a package without members");
	index_reader_begin(rd);
	is_int(pkgidx_get_package(rd, pc.path, &got), 0, "it has a record");
	is_int(got.kinds, 0, "with no kinds");
	index_reader_end(rd);
	b = index_batch_begin(idx, err, sizeof(err));
	ok(b != NULL, "batch to prune");
	if (b == NULL)
		return;
	is_int(pkgidx_prune(b, keep_b, NULL, &removed), 0, "prune");
	is_int(index_batch_commit(b, err, sizeof(err)), 0, "commit the prune");
	is_int(removed, 1, "one package pruned");
	is_int(count(rd, INDEX_PKGS), 1, "the kept one is left");
	is_int(find(rd, &id1, ELF_KIND_DEBUGINFO, &s), 1, "with its member");

	b = index_batch_begin(idx, err, sizeof(err));
	pkgidx_prune(b, keep_b, NULL, &removed);
	index_batch_commit(b, err, sizeof(err));
	is_int(removed, 0, "nothing more to prune");

	/* Bad input to put. */
	pc.path = "relative.deb";
	is_int(put_pkg(idx, &pc, NULL, 0), -1, "a relative package path");
}

/* Keys under which the prefix walks are tried, in INDEX_NEG. */
static const char *const walk_keys[] = { "aa1", "aa2", "ab", "b", "a" };
#define NWALK (sizeof(walk_keys) / sizeof(walk_keys[0]))

static int
count_cb(const struct index_rec *r, void *arg)
{
	(*(int *)arg)++;
	return 0;
}

static int
delete_cb(const struct index_rec *r, void *arg)
{
	(*(int *)arg)++;
	return INDEX_WALK_DELETE;
}

static int
walked(struct index_reader *rd, const char *prefix)
{
	int n = 0, rc;

	index_reader_begin(rd);
	rc = index_walk_prefix(rd, INDEX_NEG, prefix, strlen(prefix), count_cb,
	    &n);
	index_reader_end(rd);
	return rc == 0 ? n : -1;
}

static void
test_prefix_walk(struct index *idx, struct index_reader *rd)
{
	struct index_batch *b;
	char err[ERRLEN];
	size_t i;
	int n = 0;

	b = index_batch_begin(idx, err, sizeof(err));
	ok(b != NULL, "batch for the walks");
	if (b == NULL)
		return;
	for (i = 0; i < NWALK; i++)
		index_batch_put_rec(b, INDEX_NEG, walk_keys[i],
		    strlen(walk_keys[i]), "", 0);
	is_int(index_batch_commit(b, err, sizeof(err)), 0, "commit the keys");

	is_int(walked(rd, "aa"), 2, "prefix aa: two keys");
	is_int(walked(rd, "a"), 4, "prefix a: the key a itself and three");
	is_int(walked(rd, "ab"), 1, "prefix ab: one key");
	is_int(walked(rd, "aa12"), 0, "a prefix longer than the keys");
	is_int(walked(rd, "c"), 0, "prefix past the last key");
	is_int(walked(rd, "0"), 0, "prefix before the first key");
	is_int(walked(rd, ""), (int)NWALK, "the empty prefix walks all");

	b = index_batch_begin(idx, err, sizeof(err));
	is_int(index_batch_walk_prefix(b, INDEX_NEG, "aa", 2, delete_cb, &n), 0,
	    "a batch prefix walk that deletes");
	is_int(index_batch_commit(b, err, sizeof(err)), 0, "commit it");
	is_int(n, 2, "it visited the two keys");
	is_int(walked(rd, "a"), 2, "and only those are gone");
	is_int(walked(rd, ""), (int)NWALK - 2, "the rest is there");
}

/* Write val raw as the member of package path under (id, kind). */
static void
raw_member(struct index *idx, const struct buildid *id, unsigned kind,
    const char *path, const void *val, size_t len)
{
	uint8_t key[MEMBER_KEY_LEN];
	struct index_batch *b;
	char err[ERRLEN];

	rec_key(id, kind, NULL, key);
	index_path_key(path, key + CACHE_KEY_LEN);
	b = index_batch_begin(idx, err, sizeof(err));
	if (b == NULL)
		return;
	index_batch_put_rec(b, INDEX_MEMBERS, key, sizeof(key), val, len);
	index_batch_commit(b, err, sizeof(err));
}

/* A well-formed member value for id: header, "/p.deb", "/m". */
static size_t
good_member(const struct buildid *id, unsigned kinds, uint8_t *buf)
{
	struct member_hdr h;

	memset(&h, 0, sizeof(h));
	h.size = 5;
	h.pkglen = 6;
	h.memberlen = 2;
	h.kinds = (uint8_t)kinds;
	h.idlen = id->len;
	memcpy(h.id, id->bytes, id->len);
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), "/p.deb\0/m", 10);
	return sizeof(h) + 10;
}

static void
test_hostile(struct index *idx, struct index_reader *rd)
{
	struct buildid id = make_id(9), other = make_id(10);
	uint8_t buf[sizeof(struct member_hdr) + 64];
	struct member_hdr h;
	struct index_file got;
	uint8_t pbuf[256];
	struct index_batch *b;
	uint8_t pkey[PKG_KEY_LEN];
	char err[ERRLEN];
	struct seen s;
	size_t len;

	len = good_member(&id, ELF_KIND_DEBUGINFO, buf);
	raw_member(idx, &id, ELF_KIND_DEBUGINFO, "/p.deb", buf, len);
	is_int(find(rd, &id, ELF_KIND_DEBUGINFO, &s), 1,
	    "a well-formed raw record is found");
	is_str(s.member, "/m", "with its member");

	raw_member(idx, &id, ELF_KIND_DEBUGINFO, "/p.deb", buf, len - 1);
	is_int(find(rd, &id, ELF_KIND_DEBUGINFO, &s), 0,
	    "a record without its last NUL is refused");

	len = good_member(&id, ELF_KIND_DEBUGINFO, buf);
	memcpy(&h, buf, sizeof(h));
	h.pkglen = 9;
	memcpy(buf, &h, sizeof(h));
	raw_member(idx, &id, ELF_KIND_DEBUGINFO, "/p.deb", buf, len);
	is_int(find(rd, &id, ELF_KIND_DEBUGINFO, &s), 0,
	    "lengths that do not add up are refused");

	len = good_member(&id, ELF_KIND_DEBUGINFO, buf);
	memcpy(&h, buf, sizeof(h));
	h.idlen = 200;
	memcpy(buf, &h, sizeof(h));
	raw_member(idx, &id, ELF_KIND_DEBUGINFO, "/p.deb", buf, len);
	is_int(find(rd, &id, ELF_KIND_DEBUGINFO, &s), 0,
	    "an id longer than BUILDID_MAX is refused");

	len = good_member(&id, 0x84, buf);
	raw_member(idx, &id, ELF_KIND_DEBUGINFO, "/p.deb", buf, len);
	is_int(find(rd, &id, ELF_KIND_DEBUGINFO, &s), 0,
	    "unknown kind bits are refused");

	len = good_member(&id, ELF_KIND_DEBUGINFO, buf);
	memcpy(buf + sizeof(h), "p.deb\0\0/m", 10);
	raw_member(idx, &id, ELF_KIND_DEBUGINFO, "/p.deb", buf, len);
	is_int(find(rd, &id, ELF_KIND_DEBUGINFO, &s), 0,
	    "a relative package path is refused");

	len = good_member(&id, ELF_KIND_DEBUGINFO, buf);
	memcpy(buf + sizeof(h), "/p\0deb\0/m", 10);
	raw_member(idx, &id, ELF_KIND_DEBUGINFO, "/p.deb", buf, len);
	is_int(find(rd, &id, ELF_KIND_DEBUGINFO, &s), 0,
	    "a NUL inside a path is refused");

	len = good_member(&other, ELF_KIND_DEBUGINFO, buf);
	raw_member(idx, &id, ELF_KIND_DEBUGINFO, "/p.deb", buf, len);
	is_int(find(rd, &id, ELF_KIND_DEBUGINFO, &s), 0,
	    "a record of another id under this key is refused");

	len = good_member(&id, ELF_KIND_EXECUTABLE, buf);
	raw_member(idx, &id, ELF_KIND_DEBUGINFO, "/p.deb", buf, len);
	is_int(find(rd, &id, ELF_KIND_DEBUGINFO, &s), 0,
	    "a record of another kind under this key is refused");

	raw_member(idx, &id, ELF_KIND_DEBUGINFO, "/p.deb", "junk", 4);
	is_int(find(rd, &id, ELF_KIND_DEBUGINFO, &s), 0,
	    "a short record is refused");

	/* A damaged package record (cut short) reads as an error. */
	memset(&got, 0, sizeof(got));
	got.path = "/q.deb";
	len = index_file_encode(&got, pbuf, sizeof(pbuf));
	ok(len > 0, "a package record encodes");
	index_path_key("/q.deb", pkey);
	b = index_batch_begin(idx, err, sizeof(err));
	index_batch_put_rec(b, INDEX_PKGS, pkey, sizeof(pkey), pbuf, len - 1);
	index_batch_commit(b, err, sizeof(err));
	index_reader_begin(rd);
	is_int(pkgidx_get_package(rd, "/q.deb", &got), -1,
	    "a damaged package record is refused");
	index_reader_end(rd);
}

/* Indexing a member forgets the miss remembered for its (id, kind). */
static void
test_clears_negative(struct index *idx, struct index_reader *rd)
{
	struct buildid id = make_id(42);
	struct index_file p = make_pkg("/pkgs/neg.deb", 4000);
	struct pkg_rec r =
	    make_member("/usr/lib/debug/n.debug", &id, ELF_KIND_DEBUGINFO, 5);
	struct cache_key dk, ek;
	struct neg_entry ne;
	char err[ERRLEN];

	cache_key_make(&dk, &id, CACHE_DEBUGINFO, "");
	cache_key_make(&ek, &id, CACHE_EXECUTABLE, "");
	is_int(neg_put(idx, &dk, &id, NEG_NOTFOUND, time(NULL) + 600, err,
		   sizeof(err)),
	    0, "a negative entry for the debuginfo");
	is_int(neg_put(idx, &ek, &id, NEG_NOTFOUND, time(NULL) + 600, err,
		   sizeof(err)),
	    0, "... and one for the executable");
	is_int(put_pkg(idx, &p, &r, 1), 0, "a package with the debuginfo");
	index_reader_begin(rd);
	is_int(neg_get(rd, &dk, time(NULL), &ne), INDEX_NOTFOUND,
	    "the debuginfo's negative entry is gone");
	is_int(neg_get(rd, &ek, time(NULL), &ne), 0,
	    "the executable's, which no package has, stays");
	index_reader_end(rd);
}

/* The packages and servable members pkgidx_count says; -1s on error. */
static void
counts(struct index_reader *rd, long long *pkgs, long long *members)
{
	uint64_t p, m;

	*pkgs = *members = -1;
	if (index_reader_begin(rd) == -1)
		return;
	if (pkgidx_count(rd, &p, &m) == 0) {
		*pkgs = (long long)p;
		*members = (long long)m;
	}
	index_reader_end(rd);
}

static int
keep_all(const char *path, void *arg)
{
	(void)path;
	(void)arg;
	return 1;
}

/*
 * The servable member count follows puts, replacements and prunes, leaves
 * out source and file records, counts a shared (id, kind) of a package
 * once, and is made by counting on an index that has none yet.
 */
static void
test_member_count(void)
{
	struct buildid a = make_id(71), b = make_id(72), c = make_id(73);
	struct index_file pa = make_pkg("/count/a.deb", 10);
	struct index_file pb = make_pkg("/count/b.deb", 20);
	struct pkg_rec ra[] = {
		make_member("/usr/bin/a", &a, ELF_KIND_ALL, 1),
		make_member("/usr/lib/debug/b.debug", &b, ELF_KIND_DEBUGINFO,
		    2),
		make_member("/usr/src/a.c", &a, PKG_REC_SOURCE, 0),
		make_member("/usr/share/doc/README", &(struct buildid){ 0 },
		    PKG_REC_FILE, 3),
	};
	struct pkg_rec rb[] = {
		make_member("/usr/bin/c", &c, ELF_KIND_EXECUTABLE, 4),
		make_member("/usr/bin/c-again", &c, ELF_KIND_EXECUTABLE, 5),
	};
	struct index_reader *rd;
	struct index_batch *bt;
	struct index *idx;
	uint8_t pkey[PKG_KEY_LEN];
	uint64_t removed;
	char err[ERRLEN];
	long long pkgs, members;

	idx = index_open(at("count"), 0, MAPSIZE, err, sizeof(err));
	if (!ok(idx != NULL && (rd = index_reader_new(idx)) != NULL,
		"count: a fresh index"))
		return;
	counts(rd, &pkgs, &members);
	ok(pkgs == 0 && members == 0, "no package, no member");
	is_int(put_pkg(idx, &pa, ra, 4), 0, "a package of 2 ELF members");
	counts(rd, &pkgs, &members);
	is_int(pkgs, 1, "one package");
	is_int(members, 3,
	    "3 servable members: one per ELF member and kind, "
	    "no source or file record");
	is_int(put_pkg(idx, &pb, rb, 2), 0, "one with a shared (id, kind)");
	counts(rd, &pkgs, &members);
	is_int(members, 4, "... counted once");
	is_int(put_pkg(idx, &pa, ra + 1, 1), 0, "the first replaced");
	counts(rd, &pkgs, &members);
	ok(pkgs == 2 && members == 2, "its old members are taken off");
	is_int(prune_but(idx, "/count/b.deb"), 1, "prune the first");
	counts(rd, &pkgs, &members);
	ok(pkgs == 1 && members == 1, "its members go with it");
	index_reader_free(rd);
	index_close(idx);

	/* An index from before the count: members written without it. */
	index_path_key(pa.path, pkey);
	idx = index_open(at("count-old"), 0, MAPSIZE, err, sizeof(err));
	if (!ok(idx != NULL && (rd = index_reader_new(idx)) != NULL,
		"count: another fresh index"))
		return;
	bt = index_batch_begin(idx, err, sizeof(err));
	ok(bt != NULL &&
		put_member(bt, pkey, pa.path, strlen(pa.path), &ra[0],
		    ELF_KIND_DEBUGINFO) == 1 &&
		put_member(bt, pkey, pa.path, strlen(pa.path), &ra[1],
		    ELF_KIND_DEBUGINFO) == 1 &&
		put_member(bt, pkey, pa.path, strlen(pa.path), &ra[2],
		    PKG_REC_SOURCE) == 0 &&
		index_batch_commit(bt, err, sizeof(err)) == 0,
	    "write records as an older program did, without a count");
	bt = index_batch_begin(idx, err, sizeof(err));
	ok(bt != NULL &&
		index_batch_get_counter(bt, MEMBERS_COUNTER, &removed) ==
		    INDEX_NOTFOUND,
	    "no count yet");
	ok(bt != NULL && pkgidx_prune(bt, keep_all, NULL, &removed) == 0 &&
		removed == 0 && index_batch_commit(bt, err, sizeof(err)) == 0,
	    "a scan's prune that keeps all");
	counts(rd, &pkgs, &members);
	is_int(members, 2, "counts the ELF member records");
	index_reader_free(rd);
	index_close(idx);
}

int
main(void)
{
	struct index *idx;
	struct index_reader *rd;
	char err[ERRLEN];

	if (!ok(testdir_make("test_pkgindex") == 0,
		"make a temporary directory"))
		return tap_done();
	idx = index_open(at("index"), 0, MAPSIZE, err, sizeof(err));
	if (!ok(idx != NULL, "open an index")) {
		printf("# %s\n", err);
		return tap_done();
	}
	rd = index_reader_new(idx);
	ok(rd != NULL, "a reader");
	if (rd != NULL) {
		test_put_find(idx, rd);
		test_prefix_walk(idx, rd);
		test_hostile(idx, rd);
		test_clears_negative(idx, rd);
	}
	test_member_count();
	index_reader_free(rd);
	index_close(idx);
	testdir_remove();
	return tap_done();
}
