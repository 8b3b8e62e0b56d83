/*
 * tests/unit/test_pathindex.c: cache/pathindex.c, the paths /metadata is
 * answered from, kept in step by the files table (cache/files.c), the
 * packages (cache/pkgindex.c) and written directly for upstream answers.
 *
 * Globs are checked against fnmatch over the same paths, for each of the
 * three ways a glob reads the index (a literal directory, a literal start
 * of the base name, a directory pattern).  One index in a mkdtemp
 * directory, removed at the end; one thread.
 */
#include "cache/pathindex.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/files.h"
#include "cache/index.h"
#include "cache/pkgindex.h"
#include "tests/tap.h"
#include "tests/testdir.h"

#define MAPSIZE (256ull << 20)
#define ERRLEN 256
#define NRANDOM 3000

static struct index *idx;
static struct index_reader *rd;

static struct buildid
make_id(unsigned seed)
{
	struct buildid id;
	size_t i;

	memset(&id, 0, sizeof(id));
	id.len = 20;
	for (i = 0; i < id.len; i++)
		id.bytes[i] = (uint8_t)(seed * 37 + i * 11 + 1);
	return id;
}

/* What a query saw: how many, and the last entry. */
struct seen {
	int n;
	char path[5000];
	char archive[5000];
	unsigned kinds;
	int origin;
	struct buildid id;
};

/* A clock that reads 2 ns: a deadline of 1 ns has passed. */
static int64_t
past_deadline(void)
{
	return 2;
}

static int
seen_cb(const struct pathidx_entry *e, void *arg)
{
	struct seen *s = arg;

	s->n++;
	snprintf(s->path, sizeof(s->path), "%s", e->path);
	snprintf(s->archive, sizeof(s->archive), "%s", e->archive);
	s->kinds = e->kinds;
	s->origin = (int)e->origin;
	s->id = e->id;
	return 0;
}

static int
query(enum pathidx_query q, const char *value, const struct buildid *id,
    struct seen *s)
{
	int rc;

	memset(s, 0, sizeof(*s));
	if (index_reader_begin(rd) == -1)
		return -1;
	rc = pathidx_find(rd, q, value, id, 0, NULL, seen_cb, s);
	index_reader_end(rd);
	return rc;
}

static struct index_batch *
begin(void)
{
	char err[ERRLEN];
	struct index_batch *b = index_batch_begin(idx, err, sizeof(err));

	if (b == NULL)
		printf("# %s\n", err);
	return b;
}

static int
commit(struct index_batch *b)
{
	char err[ERRLEN];

	if (b == NULL)
		return -1;
	if (index_batch_commit(b, err, sizeof(err)) == -1) {
		printf("# %s\n", err);
		return -1;
	}
	return 0;
}

static struct index_file
make_file(const char *path, const struct buildid *id, unsigned kinds)
{
	struct index_file f;

	memset(&f, 0, sizeof(f));
	f.path = path;
	f.size = 100;
	f.kinds = kinds;
	f.id = *id;
	return f;
}

/* Records of the paths table under a one-byte prefix. */
static int
count_cb(const struct index_rec *r, void *arg)
{
	(void)r;
	(*(int *)arg)++;
	return 0;
}

static int
count_keys(char prefix)
{
	int n = 0;

	if (index_reader_begin(rd) == -1)
		return -1;
	index_walk_prefix(rd, INDEX_PATHS, &prefix, 1, count_cb, &n);
	index_reader_end(rd);
	return n;
}

static void
test_local(void)
{
	struct buildid a = make_id(1), b2 = make_id(2);
	struct index_file f = make_file("/srv/debug/bin/prog", &a,
	    ELF_KIND_DEBUGINFO | ELF_KIND_EXECUTABLE);
	struct index_batch *b;
	struct seen s;

	b = begin();
	ok(b != NULL && index_batch_put_file(b, &f) == 0 && commit(b) == 0,
	    "index a local unstripped binary");
	is_int(query(PATHIDX_FILE, "/srv/debug/bin/prog", NULL, &s), 0,
	    "file query");
	is_int(s.n, 1, "one entry for the path");
	is_int(s.kinds, ELF_KIND_DEBUGINFO | ELF_KIND_EXECUTABLE, "both kinds");
	is_int(s.origin, PATHIDX_LOCAL, "a local file");
	is_str(s.archive, "", "no archive");
	ok(buildid_equal(&s.id, &a), "its build-id");
	query(PATHIDX_FILE, "/srv/debug/bin/pro", NULL, &s);
	is_int(s.n, 0, "a prefix of the path is no match");
	query(PATHIDX_FILE, "/srv/debug/bin/prog2", NULL, &s);
	is_int(s.n, 0, "a longer path is no match");
	query(PATHIDX_BUILDID, NULL, &a, &s);
	is_int(s.n, 1, "found by build-id");
	is_str(s.path, "/srv/debug/bin/prog", "with its path");
	query(PATHIDX_GLOB, "/srv/debug/bin/p*", NULL, &s);
	is_int(s.n, 1, "found by a glob");

	/* Rebuilt with another id: the old id no longer finds it. */
	f.id = b2;
	b = begin();
	ok(b != NULL && index_batch_put_file(b, &f) == 0 && commit(b) == 0,
	    "the file changes id");
	query(PATHIDX_BUILDID, NULL, &a, &s);
	is_int(s.n, 0, "the old id finds nothing");
	query(PATHIDX_BUILDID, NULL, &b2, &s);
	is_int(s.n, 1, "the new id finds it");
	query(PATHIDX_FILE, "/srv/debug/bin/prog", NULL, &s);
	is_int(s.n, 1, "still one entry for the path");

	/* No longer servable: no entry. */
	f.kinds = 0;
	b = begin();
	ok(b != NULL && index_batch_put_file(b, &f) == 0 && commit(b) == 0,
	    "the file turns unservable");
	query(PATHIDX_FILE, "/srv/debug/bin/prog", NULL, &s);
	is_int(s.n, 0, "an unservable file has no entry");
	is_int(count_keys('p'), 0, "its directory left with it");

	f.kinds = ELF_KIND_DEBUGINFO;
	b = begin();
	ok(b != NULL && index_batch_put_file(b, &f) == 0 &&
		index_batch_del_file(b, "/srv/debug/bin/prog") == 0 &&
		commit(b) == 0,
	    "put and delete");
	query(PATHIDX_BUILDID, NULL, &b2, &s);
	is_int(s.n, 0, "a deleted file is gone by id");
	is_int(count_keys('d') + count_keys('b') + count_keys('i') +
		count_keys('p'),
	    0, "no key left behind");
}

static int
keep_none(const char *path, void *arg)
{
	(void)path;
	(void)arg;
	return 0;
}

static void
test_packages(void)
{
	struct buildid a = make_id(3), c = make_id(4);
	struct pkg_rec recs[2];
	struct index_file pkg;
	struct index_batch *b;
	struct seen s;
	uint64_t removed;

	memset(&pkg, 0, sizeof(pkg));
	pkg.path = "/srv/debs/libfoo-dbg_1.0_amd64.deb";
	memset(recs, 0, sizeof(recs));
	recs[0].member = "/usr/lib/debug/.build-id/ab/cdef.debug";
	recs[0].id = a;
	recs[0].kinds = ELF_KIND_DEBUGINFO;
	recs[1].member = "/usr/lib/x86_64-linux-gnu/libfoo.so.1";
	recs[1].id = c;
	recs[1].kinds = ELF_KIND_EXECUTABLE;
	b = begin();
	ok(b != NULL && pkgidx_put(b, &pkg, recs, 2) == 0 && commit(b) == 0,
	    "index a package of two members");
	query(PATHIDX_FILE, recs[0].member, NULL, &s);
	is_int(s.n, 1, "a member by its path");
	is_str(s.archive, pkg.path, "with its package as archive");
	is_int(s.origin, PATHIDX_PACKAGE, "a package member");
	query(PATHIDX_GLOB, "/usr/lib/*/libfoo.so*", NULL, &s);
	is_int(s.n, 1, "a member by a glob of directories");
	is_str(s.path, recs[1].member, "the executable member");

	/* The same member path in a second package: two entries. */
	pkg.path = "/srv/debs/libfoo-dbg_1.1_amd64.deb";
	b = begin();
	ok(b != NULL && pkgidx_put(b, &pkg, recs, 1) == 0 && commit(b) == 0,
	    "a second package ships the same path");
	query(PATHIDX_FILE, recs[0].member, NULL, &s);
	is_int(s.n, 2, "one entry per package");

	/* The second package re-read without it. */
	b = begin();
	ok(b != NULL && pkgidx_put(b, &pkg, recs + 1, 1) == 0 && commit(b) == 0,
	    "the second package changes");
	query(PATHIDX_FILE, recs[0].member, NULL, &s);
	is_int(s.n, 1, "its old member's entry left");
	query(PATHIDX_FILE, recs[1].member, NULL, &s);
	is_int(s.n, 2, "its new member's entry came");

	b = begin();
	ok(b != NULL && pkgidx_prune(b, keep_none, NULL, &removed) == 0 &&
		commit(b) == 0,
	    "prune every package");
	query(PATHIDX_GLOB, "/usr/*/*", NULL, &s);
	is_int(s.n, 0, "no member left");
	query(PATHIDX_GLOB, "/usr/lib/*/*", NULL, &s);
	is_int(s.n, 0, "nor deeper");
	is_int(count_keys('d') + count_keys('b') + count_keys('i') +
		count_keys('p'),
	    0, "no key left behind");
}

static void
test_upstream(void)
{
	struct buildid a = make_id(5);
	struct pathidx_entry e = { "/usr/bin/ls", "", ELF_KIND_EXECUTABLE, a,
		PATHIDX_UPSTREAM };
	struct pathidx_entry d = { "/usr/lib/debug/.build-id/aa/bb.debug",
		"/pool/coreutils-dbgsym.ddeb", ELF_KIND_DEBUGINFO, a,
		PATHIDX_UPSTREAM };
	struct index_batch *b;
	struct seen s;

	b = begin();
	ok(b != NULL && pathidx_put(b, &e) == 0 && pathidx_put(b, &d) == 0 &&
		commit(b) == 0,
	    "two upstream answers of one id");
	query(PATHIDX_BUILDID, NULL, &a, &s);
	is_int(s.n, 2, "both by id");
	query(PATHIDX_FILE, d.path, NULL, &s);
	is_str(s.archive, d.archive, "the upstream's archive kept");
	b = begin();
	ok(b != NULL && pathidx_del_upstream(b, &a, ELF_KIND_DEBUGINFO) == 0 &&
		commit(b) == 0,
	    "drop the debuginfo answer");
	query(PATHIDX_BUILDID, NULL, &a, &s);
	is_int(s.n, 1, "the executable's stays");
	is_str(s.path, "/usr/bin/ls", "that one");
	b = begin();
	ok(b != NULL && pathidx_del_upstream(b, &a, ELF_KIND_EXECUTABLE) == 0 &&
		commit(b) == 0,
	    "drop the executable answer");
	is_int(count_keys('d') + count_keys('b') + count_keys('i') +
		count_keys('p'),
	    0, "no key left behind");
}

static void
test_long_names(void)
{
	char p1[400], p2[400], pat[400];
	struct buildid a = make_id(6), c = make_id(7);
	struct index_file f1, f2;
	struct index_batch *b;
	struct seen s;

	memset(pat, 0, sizeof(pat));
	snprintf(p1, sizeof(p1), "/long/");
	memset(p1 + 6, 'x', 300);
	p1[306] = '\0';
	snprintf(p2, sizeof(p2), "%s", p1);
	p1[305] = '1';
	p2[305] = '2';
	f1 = make_file(p1, &a, ELF_KIND_DEBUGINFO);
	f2 = make_file(p2, &c, ELF_KIND_DEBUGINFO);
	b = begin();
	ok(b != NULL && index_batch_put_file(b, &f1) == 0 &&
		index_batch_put_file(b, &f2) == 0 && commit(b) == 0,
	    "two 300-byte names that differ at the end");
	query(PATHIDX_FILE, p1, NULL, &s);
	ok(s.n == 1 && buildid_equal(&s.id, &a), "the first by its path");
	query(PATHIDX_FILE, p2, NULL, &s);
	ok(s.n == 1 && buildid_equal(&s.id, &c), "the second by its path");
	snprintf(pat, sizeof(pat), "/long/xx*1");
	query(PATHIDX_GLOB, pat, NULL, &s);
	is_int(s.n, 1, "a glob tells them apart");
	query(PATHIDX_GLOB, "/l*/xx*", NULL, &s);
	is_int(s.n, 2, "a glob of both");
	b = begin();
	ok(b != NULL && index_batch_del_file(b, p1) == 0 &&
		index_batch_del_file(b, p2) == 0 && commit(b) == 0,
	    "delete both");
	is_int(count_keys('d') + count_keys('p'), 0, "no key left behind");
}

/* Paths of NRANDOM files, spread over directories, some shared names. */
static char paths[NRANDOM][64];

static void
test_globs_against_fnmatch(void)
{
	static const char *const pats[] = {
		"/usr/lib/d3/*.so",
		"/usr/lib/d3/lib1*",
		"/usr/lib/d3/*",
		"/usr/lib/d3",
		"/usr/lib/*/lib12*",
		"/usr/*/d1?/*.debug",
		"/usr/lib/d[12]/*.so.?",
		"/*/*/*/*",
		"/usr/*",
		"*",
		"/usr/lib/*/\\*",
		"/usr/lib/d4/li[!b]*",
		"/usr/lib/d4/lib1.so",
		"/usr/lib/d4/lib1.so/",
		"/usr/lib/*/*.so",
		"/opt/*/bin/x*",
		"/usr/lib/d1*/lib2?.debug",
	};
	struct index_batch *b;
	struct seen s;
	size_t i, k;
	int want, bad = 0;
	char msg[200];

	srand(7);
	b = begin();
	for (i = 0; i < NRANDOM && b != NULL; i++) {
		struct buildid id = make_id((unsigned)i + 100);
		struct index_file f;
		unsigned r = (unsigned)rand();

		if (r % 10 == 0)
			snprintf(paths[i], sizeof(paths[i]),
			    "/opt/app%u/bin/x%u", r % 7, (unsigned)i);
		else
			snprintf(paths[i], sizeof(paths[i]),
			    "/usr/lib/d%u/lib%u.%s", (r >> 4) % 20,
			    (unsigned)i % 300,
			    (r >> 9) % 3 == 0       ? "so"
				: (r >> 9) % 3 == 1 ? "so.1"
						    : "debug");
		f = make_file(paths[i], &id, ELF_KIND_DEBUGINFO);
		if (index_batch_put_file(b, &f) != 0)
			break;
	}
	ok(i == NRANDOM && commit(b) == 0, "index the random paths");
	for (k = 0; k < sizeof(pats) / sizeof(pats[0]); k++) {
		want = 0;
		for (i = 0; i < NRANDOM; i++) {
			size_t j;

			/* The same path twice is one file, one entry. */
			for (j = 0; j < i; j++)
				if (strcmp(paths[j], paths[i]) == 0)
					break;
			if (j == i &&
			    fnmatch(pats[k], paths[i], FNM_PATHNAME) == 0)
				want++;
		}
		query(PATHIDX_GLOB, pats[k], NULL, &s);
		if (s.n != want) {
			bad++;
			printf("# %s: %d, fnmatch %d\n", pats[k], s.n, want);
		}
	}
	snprintf(msg, sizeof(msg), "%zu globs find what fnmatch finds",
	    sizeof(pats) / sizeof(pats[0]));
	is_int(bad, 0, msg);

	/* Out of time: said so. */
	if (index_reader_begin(rd) == 0) {
		is_int(pathidx_find(rd, PATHIDX_GLOB, "/usr/*/*", NULL, 1,
			   past_deadline, seen_cb, &s),
		    PATHIDX_TIMEOUT, "a passed deadline stops the query");
		index_reader_end(rd);
	}
}

int
main(void)
{
	char err[ERRLEN];

	if (!ok(testdir_make("test_pathindex") == 0,
		"make a temporary directory"))
		return tap_done();
	idx = index_open(at("index"), 0, MAPSIZE, err, sizeof(err));
	if (!ok(idx != NULL, "open an index")) {
		printf("# %s\n", err);
		return tap_done();
	}
	rd = index_reader_new(idx);
	if (ok(rd != NULL, "a reader")) {
		test_local();
		test_packages();
		test_upstream();
		test_long_names();
		test_globs_against_fnmatch();
	}
	index_reader_free(rd);
	index_close(idx);
	testdir_remove();
	return tap_done();
}
