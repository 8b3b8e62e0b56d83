/*
 * tests/unit/test_index.c: cache/index.c, the LMDB index, and cache/files.c,
 * the local files' records in it, through their public API.
 *
 * Every part opens its own index in a subdirectory of one mkdtemp
 * directory, removed at the end.  The schema test writes the meta database
 * with raw LMDB calls, the only place a test reaches under the API.  All of
 * it runs on one thread, readers and the writer interleaved as the daemon's
 * threads would.
 */
#include "cache/files.h"
#include "cache/index.h"

#include <sys/wait.h>

#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <lmdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/tap.h"
#include "tests/testdir.h"

#define MAPSIZE (64ull << 20)
#define ERRLEN 256

static struct buildid
make_id(size_t len, unsigned seed)
{
	struct buildid id;
	size_t i;

	memset(&id, 0, sizeof(id));
	id.len = (uint8_t)len;
	/* The seed's own bytes first, so that every seed gives another id. */
	for (i = 0; i < len && i < BUILDID_MAX; i++)
		id.bytes[i] = i < 4 ? (uint8_t)(seed >> (8 * i))
				    : (uint8_t)(seed * 131 + i * 7 + 3);
	return id;
}

/* A record whose other fields are derived from size, so each is distinct. */
static struct index_file
make_file(const char *path, const struct buildid *id, unsigned kinds,
    uint64_t size)
{
	struct index_file f;

	memset(&f, 0, sizeof(f));
	f.path = path;
	f.size = size;
	f.mtime_sec = 1700000000 + (int64_t)size;
	f.mtime_nsec = (uint32_t)(999999999 - size);
	f.ino = size * 3 + 1;
	f.dev = 0x10000000801ull + size;
	f.kinds = kinds;
	if (id != NULL)
		f.id = *id;
	return f;
}

/* Put n records in one batch; the commit's result. */
static int
put_files(struct index *idx, const struct index_file *files, size_t n)
{
	struct index_batch *b;
	char err[ERRLEN];
	size_t i;

	if ((b = index_batch_begin(idx, err, sizeof(err))) == NULL) {
		printf("# batch: %s\n", err);
		return -1;
	}
	for (i = 0; i < n; i++)
		if (index_batch_put_file(b, &files[i]) != 0)
			printf("# put %s failed\n", files[i].path);
	if (index_batch_commit(b, err, sizeof(err)) != 0) {
		printf("# commit: %s\n", err);
		return -1;
	}
	return 0;
}

/* What index_find handed to the callback. */
struct collect {
	int calls;
	int stop_at; /* return stop_ret on this call; 0: never */
	int stop_ret;
	char paths[8][64];
	struct index_file seen[8];
};

static int
collect_cb(const struct index_file *f, void *arg)
{
	struct collect *c = arg;

	if (c->calls < 8) {
		snprintf(c->paths[c->calls], sizeof(c->paths[0]), "%s",
		    f->path);
		c->seen[c->calls] = *f;
		c->seen[c->calls].path = c->paths[c->calls];
	}
	c->calls++;
	return c->calls == c->stop_at ? c->stop_ret : 0;
}

/* How many files index_find gives for (id, kind); its result in *rc. */
static int
count_found(struct index_reader *rd, const struct buildid *id,
    enum elf_kind kind, int *rc)
{
	struct collect c;

	memset(&c, 0, sizeof(c));
	*rc = index_find(rd, id, kind, collect_cb, &c);
	return c.calls;
}

/* 1 when index_find hands out nothing for (id, kind) and returns 0. */
static int
finds_nothing(struct index_reader *rd, const struct buildid *id,
    enum elf_kind kind)
{
	int rc, n;

	n = count_found(rd, id, kind, &rc);
	if (n != 0 || rc != 0)
		printf("#   %d callbacks, index_find returned %d\n", n, rc);
	return n == 0 && rc == 0;
}

static int
found_path(const struct collect *c, const char *path)
{
	int i;

	for (i = 0; i < c->calls && i < 8; i++)
		if (strcmp(c->paths[i], path) == 0)
			return 1;
	return 0;
}

/* 1 when the stored record of want->path is want, field by field. */
static int
same_record(struct index_reader *rd, const struct index_file *want)
{
	struct index_file got;

	memset(&got, 0, sizeof(got));
	if (index_get_file(rd, want->path, &got) != 0)
		return 0;
	return got.path != NULL && strcmp(got.path, want->path) == 0 &&
	    got.size == want->size && got.mtime_sec == want->mtime_sec &&
	    got.mtime_nsec == want->mtime_nsec && got.ino == want->ino &&
	    got.dev == want->dev && got.kinds == want->kinds &&
	    buildid_equal(&got.id, &want->id);
}

static int
count_cb(const struct index_file *f, void *arg)
{
	(*(int *)arg)++;
	return 0;
}

static int
count_files(struct index_reader *rd)
{
	int n = 0;

	if (index_foreach_file(rd, count_cb, &n) != 0)
		return -1;
	return n;
}

static void
test_open_errors(void)
{
	struct index *idx;
	char err[ERRLEN];

	err[0] = '\0';
	idx = index_open(at("nonexistent"), INDEX_RDONLY, MAPSIZE, err,
	    sizeof(err));
	ok(idx == NULL, "read-only open of a missing directory fails");
	printf("#   %s\n", err);
	ok(strstr(err, at("nonexistent")) != NULL,
	    "and the message names the directory");
	index_close(idx);

	mkdir(at("empty"), 0755);
	err[0] = '\0';
	idx = index_open(at("empty"), INDEX_RDONLY, MAPSIZE, err, sizeof(err));
	ok(idx == NULL, "read-only open of an empty directory fails");
	printf("#   %s\n", err);
	ok(strstr(err, at("empty")) != NULL,
	    "and the message names the directory");
	index_close(idx);

	err[0] = '\0';
	idx = index_open(at("no/such/parent"), 0, MAPSIZE, err, sizeof(err));
	ok(idx == NULL, "writable open under a missing parent fails");
	ok(err[0] != '\0', "with a message");
	index_close(idx);
}

/* The records of the main index; paths are filled in by test_main. */
enum { R_A, R_A2, R_B, R_C, R_NOID, R_KIND0, R_LONG, NREC };

static char long_path[4001];

static void
setup_records(struct index_file *r, struct buildid *ids)
{
	ids[R_A] = make_id(20, 1);
	ids[R_B] = make_id(20, 2);
	ids[R_C] = make_id(8, 3);
	ids[R_KIND0] = make_id(20, 4);
	ids[R_LONG] = make_id(BUILDID_MAX, 5);

	memset(long_path, 'x', sizeof(long_path) - 1);
	memcpy(long_path, "/srv/deep/", 10);
	memcpy(long_path + sizeof(long_path) - 7, ".debug", 7);

	r[R_A] = make_file("/srv/debug/a.debug", &ids[R_A], ELF_KIND_DEBUGINFO,
	    1000);
	r[R_A2] = make_file("/srv/mirror/a.debug", &ids[R_A],
	    ELF_KIND_DEBUGINFO, 1001);
	r[R_B] = make_file("/srv/bin/b", &ids[R_B], ELF_KIND_EXECUTABLE, 2000);
	r[R_C] = make_file("/srv/bin/c", &ids[R_C], ELF_KIND_ALL, 3000);
	/* An ELF file with nothing to serve: kinds are cleared on store. */
	r[R_NOID] = make_file("/srv/junk/noid", NULL, ELF_KIND_ALL, 4000);
	r[R_KIND0] = make_file("/srv/junk/kind0", &ids[R_KIND0], 0, 4500);
	r[R_LONG] =
	    make_file(long_path, &ids[R_LONG], ELF_KIND_DEBUGINFO, 5000);
}

static void
test_find(struct index_reader *rd, const struct index_file *r,
    const struct buildid *ids)
{
	struct buildid shorter, longer;
	struct collect c;
	int rc, n;

	memset(&c, 0, sizeof(c));
	rc = index_find(rd, &ids[R_A], ELF_KIND_DEBUGINFO, collect_cb, &c);
	is_int(c.calls, 2, "same build-id under two paths: two callbacks");
	ok(found_path(&c, r[R_A].path) && found_path(&c, r[R_A2].path),
	    "both paths handed out");
	ok(c.calls == 2 && buildid_equal(&c.seen[0].id, &ids[R_A]) &&
		buildid_equal(&c.seen[1].id, &ids[R_A]) &&
		(c.seen[0].kinds & ELF_KIND_DEBUGINFO) != 0,
	    "the records handed out carry the id and kind");
	is_int(rc, 0, "a walk over every file returns 0");

	memset(&c, 0, sizeof(c));
	c.stop_at = 1;
	c.stop_ret = 1;
	rc = index_find(rd, &ids[R_A], ELF_KIND_DEBUGINFO, collect_cb, &c);
	is_int(c.calls, 1, "cb returning 1 stops the walk");
	is_int(rc, 1, "and index_find returns 1");

	memset(&c, 0, sizeof(c));
	c.stop_at = 1;
	c.stop_ret = 42;
	rc = index_find(rd, &ids[R_A], ELF_KIND_DEBUGINFO, collect_cb, &c);
	is_int(rc, 42, "whatever cb returns is passed back");
	is_int(c.calls, 1, "after one call");

	memset(&c, 0, sizeof(c));
	c.stop_at = 2;
	c.stop_ret = -1;
	rc = index_find(rd, &ids[R_A], ELF_KIND_DEBUGINFO, collect_cb, &c);
	is_int(rc, -1, "a cb's -1 on the second file is passed back");
	is_int(c.calls, 2, "after two calls");

	ok(finds_nothing(rd, &ids[R_A], ELF_KIND_EXECUTABLE),
	    "debuginfo-only id: no executable");
	n = count_found(rd, &ids[R_B], ELF_KIND_EXECUTABLE, &rc);
	is_int(n, 1, "executable found as executable");
	ok(finds_nothing(rd, &ids[R_B], ELF_KIND_DEBUGINFO),
	    "executable-only id: no debuginfo");

	memset(&c, 0, sizeof(c));
	index_find(rd, &ids[R_C], ELF_KIND_DEBUGINFO, collect_cb, &c);
	ok(c.calls == 1 && strcmp(c.paths[0], r[R_C].path) == 0,
	    "a file of both kinds is found as debuginfo");
	memset(&c, 0, sizeof(c));
	index_find(rd, &ids[R_C], ELF_KIND_EXECUTABLE, collect_cb, &c);
	ok(c.calls == 1 && strcmp(c.paths[0], r[R_C].path) == 0,
	    "and as executable");
	ok(c.calls == 1 && c.seen[0].size == r[R_C].size &&
		c.seen[0].ino == r[R_C].ino,
	    "with its record");

	ok(finds_nothing(rd, &ids[R_KIND0], ELF_KIND_DEBUGINFO),
	    "kinds 0: not found as debuginfo");
	ok(finds_nothing(rd, &ids[R_KIND0], ELF_KIND_EXECUTABLE),
	    "kinds 0: not found as executable");

	shorter = ids[R_C];
	shorter.len--;
	ok(finds_nothing(rd, &shorter, ELF_KIND_DEBUGINFO),
	    "a prefix of an id finds nothing");
	longer = ids[R_C];
	longer.bytes[longer.len++] = 0;
	ok(finds_nothing(rd, &longer, ELF_KIND_DEBUGINFO),
	    "an id with a byte more finds nothing");
	n = count_found(rd, &ids[R_LONG], ELF_KIND_DEBUGINFO, &rc);
	is_int(n, 1, "a 64-byte build-id is found");
}

static void
test_records(struct index_reader *rd, const struct index_file *r)
{
	struct index_file got, want;
	char msg[128];
	int i;

	for (i = 0; i < NREC; i++) {
		want = r[i];
		if (want.id.len == 0)
			want.kinds = 0;
		snprintf(msg, sizeof(msg), "record %.40s round-trips",
		    want.path);
		ok(same_record(rd, &want), msg);
	}
	memset(&got, 0, sizeof(got));
	is_int(index_get_file(rd, long_path, &got), 0, "4000-byte path: found");
	is_int(got.path != NULL ? strlen(got.path) : 0, 4000,
	    "4000-byte path: whole");
	is_int(index_get_file(rd, r[R_NOID].path, &got), 0,
	    "record without build-id: found");
	is_int(got.kinds, 0, "record without build-id: kinds 0");
	is_int(got.id.len, 0, "record without build-id: no id");
	is_int(index_get_file(rd, "/srv/debug/a.debu", &got), INDEX_NOTFOUND,
	    "a prefix of a path is not there");
	is_int(index_get_file(rd, "", &got), INDEX_NOTFOUND,
	    "the empty path is not there");
	is_int(count_files(rd), NREC, "foreach visits every record");
}

static void
test_stats(struct index_reader *rd, uint64_t files, uint64_t debuginfo,
    uint64_t executable, uint64_t bytes, const char *when)
{
	struct index_stats st;
	char msg[128];

	memset(&st, 0xff, sizeof(st));
	snprintf(msg, sizeof(msg), "%s: stats", when);
	is_int(index_stats(rd, &st), 0, msg);
	snprintf(msg, sizeof(msg), "%s: files", when);
	is_int(st.files, files, msg);
	snprintf(msg, sizeof(msg), "%s: debuginfo build-ids", when);
	is_int(st.debuginfo, debuginfo, msg);
	snprintf(msg, sizeof(msg), "%s: executable build-ids", when);
	is_int(st.executable, executable, msg);
	snprintf(msg, sizeof(msg), "%s: bytes", when);
	is_int(st.bytes, bytes, msg);
}

static int
keep_not_drop(const char *path, void *arg)
{
	(*(int *)arg)++;
	return strstr(path, "/drop-") == NULL;
}

static void
test_changes(struct index *idx, struct index_reader *rd,
    const struct index_file *r, const struct buildid *ids)
{
	struct index_file f, drops[3], keeps[2];
	struct index_batch *b;
	struct buildid b2, pid[5];
	char err[ERRLEN], paths[5][32];
	uint64_t removed;
	int rc, n, i, calls;

	/* Replace b's record: another build-id, another size. */
	b2 = make_id(20, 20);
	f = make_file(r[R_B].path, &b2, ELF_KIND_EXECUTABLE, 2222);
	is_int(put_files(idx, &f, 1), 0, "replace a record");
	index_reader_begin(rd);
	ok(finds_nothing(rd, &ids[R_B], ELF_KIND_EXECUTABLE),
	    "the old (id, kind) is gone");
	is_int(count_found(rd, &b2, ELF_KIND_EXECUTABLE, &rc), 1,
	    "the new (id, kind) is there");
	ok(same_record(rd, &f), "the record is the new one");
	test_stats(rd, NREC, 3, 2, 12001 + 222, "after replace");
	index_reader_end(rd);

	/* Replace c's kinds: no longer an executable. */
	f = make_file(r[R_C].path, &ids[R_C], ELF_KIND_DEBUGINFO, 3000);
	is_int(put_files(idx, &f, 1), 0, "replace a record's kinds");
	index_reader_begin(rd);
	ok(finds_nothing(rd, &ids[R_C], ELF_KIND_EXECUTABLE),
	    "the dropped kind is gone");
	is_int(count_found(rd, &ids[R_C], ELF_KIND_DEBUGINFO, &rc), 1,
	    "the kept kind is there");
	test_stats(rd, NREC, 3, 1, 12001 + 222, "after kinds change");
	index_reader_end(rd);

	/* Delete a2, and a path never indexed in the same batch. */
	b = index_batch_begin(idx, err, sizeof(err));
	ok(b != NULL, "batch for deletes");
	if (b == NULL)
		return;
	is_int(index_batch_del_file(b, r[R_A2].path), 0, "delete a record");
	is_int(index_batch_del_file(b, r[R_A2].path), INDEX_NOTFOUND,
	    "deleting it again: not found");
	is_int(index_batch_del_file(b, "/never/indexed"), INDEX_NOTFOUND,
	    "deleting an unknown path: not found");
	f = make_file("/srv/after/del", &b2, ELF_KIND_DEBUGINFO, 10);
	is_int(index_batch_put_file(b, &f), 0,
	    "a not-found delete does not spoil the batch");
	is_int(index_batch_commit(b, err, sizeof(err)), 0, "commit deletes");
	index_reader_begin(rd);
	is_int(index_get_file(rd, r[R_A2].path, &f), INDEX_NOTFOUND,
	    "deleted record is gone");
	is_int(count_found(rd, &ids[R_A], ELF_KIND_DEBUGINFO, &rc), 1,
	    "its id entry is gone, the other path's stays");
	is_int(index_get_file(rd, "/srv/after/del", &f), 0,
	    "the put after the not-found delete was committed");
	test_stats(rd, NREC, 4, 1, 12001 + 222 - 1001 + 10, "after delete");
	index_reader_end(rd);

	/* Prune: three records rejected, two kept, the rest kept too. */
	for (i = 0; i < 5; i++) {
		pid[i] = make_id(16, 40 + (unsigned)i);
		snprintf(paths[i], sizeof(paths[i]), "/prune/%s-%d",
		    i < 3 ? "drop" : "keep", i);
		if (i < 3)
			drops[i] = make_file(paths[i], &pid[i], ELF_KIND_ALL,
			    100 + (uint64_t)i);
		else
			keeps[i - 3] = make_file(paths[i], &pid[i],
			    ELF_KIND_ALL, 100 + (uint64_t)i);
	}
	is_int(put_files(idx, drops, 3), 0, "records to prune");
	is_int(put_files(idx, keeps, 2), 0, "records to keep");
	b = index_batch_begin(idx, err, sizeof(err));
	ok(b != NULL, "batch for prune");
	if (b == NULL)
		return;
	calls = 0;
	removed = 99;
	is_int(index_batch_prune(b, keep_not_drop, &calls, &removed), 0,
	    "prune");
	is_int(removed, 3, "prune counts the records it dropped");
	is_int(calls, NREC + 5, "keep() asked once per record");
	is_int(index_batch_commit(b, err, sizeof(err)), 0, "commit prune");
	index_reader_begin(rd);
	for (i = 0; i < 5; i++) {
		n = count_found(rd, &pid[i], ELF_KIND_DEBUGINFO, &rc);
		n += count_found(rd, &pid[i], ELF_KIND_EXECUTABLE, &rc);
		if (i < 3) {
			is_int(index_get_file(rd, paths[i], &f), INDEX_NOTFOUND,
			    "pruned record is gone");
			is_int(n, 0, "and so are its ids");
		} else {
			is_int(index_get_file(rd, paths[i], &f), 0,
			    "kept record stays");
			is_int(n, 2, "with both its ids");
		}
	}
	is_int(count_files(rd), NREC + 2, "only the rejected are gone");
	index_reader_end(rd);
}

static void
test_scan_and_abort(struct index *idx, struct index_reader *rd,
    const struct index_file *r, const struct buildid *ids)
{
	struct index_scan s = { 1700000000, 1700000123, 10, 7, 3, 1, 4, 9, 6, 5,
		4, 1700000123, 123000, INDEX_SCAN_DONE, 0 };
	struct index_scan running = { 1700001000, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0 };
	struct index_stats st, before;
	struct index_batch *b;
	struct index_file f;
	char err[ERRLEN];
	int rc;

	b = index_batch_begin(idx, err, sizeof(err));
	ok(b != NULL, "batch for scan");
	if (b == NULL)
		return;
	is_int(index_batch_set_scan(b, &s), 0, "set_scan");
	is_int(index_batch_commit(b, err, sizeof(err)), 0, "commit scan");
	index_reader_begin(rd);
	index_stats(rd, &st);
	ok(st.scan.started == s.started && st.scan.finished == s.finished &&
		st.scan.seen == s.seen && st.scan.read == s.read &&
		st.scan.removed == s.removed && st.scan.failed == s.failed &&
		st.scan.packages == s.packages &&
		st.scan.members == s.members &&
		memcmp(&st.scan, &s, sizeof(s)) == 0,
	    "scan round-trips through stats");
	before = st;
	index_reader_end(rd);

	/* Everything in an aborted batch is lost. */
	b = index_batch_begin(idx, err, sizeof(err));
	ok(b != NULL, "batch to abort");
	if (b == NULL)
		return;
	f = make_file("/aborted", &ids[R_B], ELF_KIND_ALL, 77);
	index_batch_put_file(b, &f);
	index_batch_del_file(b, r[R_A].path);
	index_batch_set_scan(b, &running);
	index_batch_abort(b);
	index_reader_begin(rd);
	is_int(index_get_file(rd, "/aborted", &f), INDEX_NOTFOUND,
	    "abort: the put is not there");
	is_int(index_get_file(rd, r[R_A].path, &f), 0,
	    "abort: the deleted record is still there");
	is_int(count_found(rd, &ids[R_A], ELF_KIND_DEBUGINFO, &rc), 1,
	    "abort: and still found");
	index_stats(rd, &st);
	ok(memcmp(&st, &before, sizeof(st)) == 0, "abort: stats unchanged");
	index_reader_end(rd);

	/* A scan in progress overwrites the last one. */
	b = index_batch_begin(idx, err, sizeof(err));
	ok(b != NULL, "batch for a second scan");
	if (b == NULL)
		return;
	index_batch_set_scan(b, &running);
	is_int(index_batch_commit(b, err, sizeof(err)), 0, "commit it");
	index_reader_begin(rd);
	index_stats(rd, &st);
	ok(st.scan.started == running.started && st.scan.finished == 0 &&
		st.scan.seen == 5,
	    "a second set_scan replaces the first");
	index_reader_end(rd);
}

static void
test_snapshots(struct index *idx, struct index_reader *rd)
{
	struct index_reader *rd2;
	struct index_file f, got;
	struct buildid id = make_id(20, 60);
	int n, rc;

	is_int(index_reader_begin(rd), 0, "begin a snapshot");
	n = count_files(rd);
	f = make_file("/late", &id, ELF_KIND_DEBUGINFO, 5);
	is_int(put_files(idx, &f, 1), 0, "commit while a reader is open");
	is_int(index_get_file(rd, "/late", &got), INDEX_NOTFOUND,
	    "the open snapshot does not see the commit");
	is_int(count_found(rd, &id, ELF_KIND_DEBUGINFO, &rc), 0,
	    "nor find it by id");
	is_int(count_files(rd), n, "nor count it");

	rd2 = index_reader_new(idx);
	ok(rd2 != NULL, "a second reader");
	if (rd2 != NULL) {
		index_reader_begin(rd2);
		is_int(index_get_file(rd2, "/late", &got), 0,
		    "a reader begun after the commit sees it");
		index_reader_end(rd2);
		index_reader_free(rd2);
	}

	index_reader_end(rd);
	is_int(index_reader_begin(rd), 0, "begin again");
	is_int(index_get_file(rd, "/late", &got), 0,
	    "after end and begin the commit is seen");
	is_int(count_found(rd, &id, ELF_KIND_DEBUGINFO, &rc), 1,
	    "and found by id");
	index_reader_end(rd);
}

static void
test_limits(struct index *idx, struct index_reader *rd)
{
	static char path[4097];
	struct index_batch *b;
	struct index_file f, ok_first, got;
	struct buildid id = make_id(20, 70), toolong;
	char err[ERRLEN];
	int rc;

	memset(path, 'l', sizeof(path) - 1);
	path[0] = '/';
	path[4095] = '\0';
	f = make_file(path, &id, ELF_KIND_DEBUGINFO, 1);
	is_int(put_files(idx, &f, 1), 0, "a 4095-byte path is stored");
	index_reader_begin(rd);
	ok(same_record(rd, &f), "and read back");
	index_reader_end(rd);

	path[4095] = 'l';
	path[4096] = '\0';
	ok_first = make_file("/before/too/long", &id, ELF_KIND_DEBUGINFO, 2);
	f = make_file(path, &id, ELF_KIND_DEBUGINFO, 3);
	b = index_batch_begin(idx, err, sizeof(err));
	ok(b != NULL, "batch for a too long path");
	if (b == NULL)
		return;
	is_int(index_batch_put_file(b, &ok_first), 0, "a good put first");
	is_int(index_batch_put_file(b, &f), -1, "a 4096-byte path: put fails");
	err[0] = '\0';
	is_int(index_batch_commit(b, err, sizeof(err)), -1,
	    "and the commit fails");
	ok(err[0] != '\0', "with a message");
	printf("#   %s\n", err);
	index_reader_begin(rd);
	is_int(index_get_file(rd, "/before/too/long", &got), INDEX_NOTFOUND,
	    "nothing of the failed batch is stored");
	index_reader_end(rd);

	toolong = make_id(BUILDID_MAX, 71);
	toolong.len = BUILDID_MAX + 1;
	f = make_file("/id/too/long", &toolong, ELF_KIND_DEBUGINFO, 4);
	b = index_batch_begin(idx, err, sizeof(err));
	if (b == NULL)
		return;
	rc = index_batch_put_file(b, &f);
	is_int(rc, -1, "a 65-byte build-id: put fails");
	err[0] = '\0';
	is_int(index_batch_commit(b, err, sizeof(err)), -1,
	    "and the commit fails");
	ok(err[0] != '\0', "with a message");
}

static void
test_reopen(const struct index_file *r, const struct buildid *ids)
{
	struct index *idx;
	struct index_reader *rd;
	struct index_file f;
	char err[ERRLEN];
	int rc;

	idx = index_open(at("main"), INDEX_RDONLY, MAPSIZE, err, sizeof(err));
	ok(idx != NULL, "reopen read-only");
	if (idx == NULL) {
		printf("#   %s\n", err);
		return;
	}
	rd = index_reader_new(idx);
	ok(rd != NULL && index_reader_begin(rd) == 0, "read-only reader");
	if (rd == NULL) {
		index_close(idx);
		return;
	}
	ok(same_record(rd, &r[R_A]), "read-only: a record");
	ok(same_record(rd, &r[R_LONG]), "read-only: the long-path record");
	is_int(count_found(rd, &ids[R_A], ELF_KIND_DEBUGINFO, &rc), 1,
	    "read-only: find");
	is_int(index_get_file(rd, "/late", &f), 0,
	    "read-only: the late record");
	index_reader_end(rd);
	index_reader_free(rd);

	err[0] = '\0';
	ok(index_batch_begin(idx, err, sizeof(err)) == NULL,
	    "no batch on a read-only index");
	ok(err[0] != '\0', "with a message");
	index_close(idx);
}

/* Store version as the schema of the index in dir, with LMDB alone. */
static int
raw_schema(const char *dir, uint32_t *version, int write)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_val k = { 6, "schema" }, v = { sizeof(*version), version };
	int rc;

	if ((rc = mdb_env_create(&env)) != 0)
		return rc;
	if ((rc = mdb_env_set_maxdbs(env, 4)) == 0 &&
	    (rc = mdb_env_set_mapsize(env, MAPSIZE)) == 0 &&
	    (rc = mdb_env_open(env, dir, write ? 0 : MDB_RDONLY, 0644)) == 0 &&
	    (rc = mdb_txn_begin(env, NULL, write ? 0 : MDB_RDONLY, &txn)) ==
		0) {
		if ((rc = mdb_dbi_open(txn, "meta", 0, &dbi)) == 0) {
			if (write)
				rc = mdb_put(txn, dbi, &k, &v, 0);
			else if ((rc = mdb_get(txn, dbi, &k, &v)) == 0 &&
			    v.mv_size == sizeof(*version))
				memcpy(version, v.mv_data, sizeof(*version));
			else if (rc == 0)
				rc = MDB_BAD_VALSIZE;
		}
		if (rc == 0 && write)
			rc = mdb_txn_commit(txn);
		else
			mdb_txn_abort(txn);
	}
	mdb_env_close(env);
	return rc;
}

static void
test_schema(void)
{
	struct index *idx;
	struct index_reader *rd;
	struct index_file f;
	struct buildid id = make_id(20, 80);
	uint32_t version = INDEX_SCHEMA_VERSION + 6;
	char err[ERRLEN];
	int rc;

	idx = index_open(at("schema"), 0, MAPSIZE, err, sizeof(err));
	ok(idx != NULL, "schema: create an index");
	if (idx == NULL)
		return;
	f = make_file("/old/layout", &id, ELF_KIND_ALL, 9);
	put_files(idx, &f, 1);
	index_close(idx);

	is_int(raw_schema(at("schema"), &version, 1), 0,
	    "write another schema number with LMDB");
	err[0] = '\0';
	idx = index_open(at("schema"), INDEX_RDONLY, MAPSIZE, err, sizeof(err));
	ok(idx == NULL, "read-only open of another schema fails");
	printf("#   %s\n", err);
	ok(strstr(err, "schema") != NULL, "and says it is the schema");
	index_close(idx);

	idx = index_open(at("schema"), 0, MAPSIZE, err, sizeof(err));
	ok(idx != NULL, "writable open of another schema succeeds");
	if (idx == NULL)
		return;
	rd = index_reader_new(idx);
	if (rd != NULL) {
		index_reader_begin(rd);
		is_int(index_get_file(rd, "/old/layout", &f), INDEX_NOTFOUND,
		    "the old records are gone");
		is_int(count_found(rd, &id, ELF_KIND_DEBUGINFO, &rc), 0,
		    "and their ids");
		test_stats(rd, 0, 0, 0, 0, "rebuilt index");
		index_reader_end(rd);
		index_reader_free(rd);
	}
	index_close(idx);
	version = 0;
	is_int(raw_schema(at("schema"), &version, 0), 0, "read the schema");
	is_int(version, INDEX_SCHEMA_VERSION, "the current schema is written");
	idx = index_open(at("schema"), INDEX_RDONLY, MAPSIZE, err, sizeof(err));
	ok(idx != NULL, "and a read-only open works again");
	index_close(idx);
}

/* keep() for the bulk prune: keep every third record. */
static int
keep_third(const char *path, void *arg)
{
	(*(int *)arg)++;
	return atoi(strrchr(path, '-') + 1) % 3 == 0;
}

/*
 * Prune a few thousand records of mixed sizes, long paths among them, so
 * that deleting under the cursor crosses pages and overflow pages.
 */
static void
test_bulk_prune(void)
{
	enum { N = 2000 };
	static char paths[N][1300];
	static struct index_file files[N];
	struct index *idx;
	struct index_reader *rd;
	struct index_batch *b;
	struct buildid id;
	char err[ERRLEN];
	uint64_t removed = 0, kept_bytes = 0;
	int i, calls = 0, rc, good = 1, kept = 0;

	idx = index_open(at("bulk"), 0, MAPSIZE, err, sizeof(err));
	ok(idx != NULL, "bulk: create an index");
	if (idx == NULL)
		return;
	for (i = 0; i < N; i++) {
		size_t pad = (size_t)(i * 37) % 1200;

		memset(paths[i], 'd', pad + 1);
		paths[i][0] = '/';
		snprintf(paths[i] + pad + 1, sizeof(paths[i]) - pad - 1,
		    "/file-%d", i);
		id = make_id(20, 1000 + (unsigned)i);
		files[i] = make_file(paths[i], &id,
		    i % 2 ? ELF_KIND_ALL : ELF_KIND_DEBUGINFO, (uint64_t)i);
		if (i % 3 == 0) {
			kept++;
			kept_bytes += (uint64_t)i;
		}
	}
	is_int(put_files(idx, files, N), 0, "bulk: 2000 records");
	b = index_batch_begin(idx, err, sizeof(err));
	if (b == NULL) {
		index_close(idx);
		return;
	}
	is_int(index_batch_prune(b, keep_third, &calls, &removed), 0,
	    "bulk: prune");
	is_int(calls, N, "bulk: keep() asked once per record");
	is_int(removed, N - kept, "bulk: removed counts the rejected");
	is_int(index_batch_commit(b, err, sizeof(err)), 0, "bulk: commit");

	rd = index_reader_new(idx);
	index_reader_begin(rd);
	is_int(count_files(rd), kept, "bulk: the kept records remain");
	for (i = 0; i < N; i++) {
		struct index_file got;
		int want = i % 3 == 0;

		id = make_id(20, 1000 + (unsigned)i);
		if ((index_get_file(rd, paths[i], &got) == 0) != want ||
		    (count_found(rd, &id, ELF_KIND_DEBUGINFO, &rc) == 1) !=
			want) {
			if (good)
				printf("#   record %d wrong after prune\n", i);
			good = 0;
		}
	}
	ok(good, "bulk: exactly the kept records and ids remain");
	test_stats(rd, (uint64_t)kept, (uint64_t)kept, (uint64_t)(kept / 2),
	    kept_bytes, "bulk");
	index_reader_end(rd);
	index_reader_free(rd);
	index_close(idx);
}

static void
test_main(void)
{
	struct index_file r[NREC];
	struct buildid ids[NREC];
	struct index *idx;
	struct index_reader *rd;
	struct index_file f;
	struct buildid id = make_id(20, 1);
	char err[ERRLEN];

	setup_records(r, ids);
	idx = index_open(at("main"), 0, MAPSIZE, err, sizeof(err));
	if (!ok(idx != NULL, "open a fresh index")) {
		printf("#   %s\n", err);
		return;
	}
	rd = index_reader_new(idx);
	if (!ok(rd != NULL, "a reader")) {
		index_close(idx);
		return;
	}
	is_int(index_reader_begin(rd), 0, "begin on an empty index");
	test_stats(rd, 0, 0, 0, 0, "empty index");
	ok(finds_nothing(rd, &id, ELF_KIND_DEBUGINFO),
	    "empty index: find hands out nothing");
	is_int(index_get_file(rd, "/srv/debug/a.debug", &f), INDEX_NOTFOUND,
	    "empty index: get gives not found");
	is_int(count_files(rd), 0, "empty index: foreach sees nothing");
	index_reader_end(rd);

	is_int(put_files(idx, r, NREC), 0, "put seven records");
	index_reader_begin(rd);
	test_find(rd, r, ids);
	test_records(rd, r);
	/* a, c, long: debuginfo; b, c: executable; noid, kind0: no bytes. */
	test_stats(rd, NREC, 3, 2, 1000 + 1001 + 2000 + 3000 + 5000,
	    "after puts");
	index_reader_end(rd);

	test_changes(idx, rd, r, ids);
	test_scan_and_abort(idx, rd, r, ids);
	test_snapshots(idx, rd);
	test_limits(idx, rd);

	index_reader_free(rd);
	index_close(idx);
	test_reopen(r, ids);
}

/*
 * Another process (the CLI) opens the index with a larger map and writes
 * past the end of ours: LMDB answers MDB_MAP_RESIZED, which the index
 * adopts instead of failing every transaction from then on.
 */
static void
test_map_grown_elsewhere(void)
{
	struct index_stats st;
	struct index_reader *rd;
	struct index *idx;
	char err[ERRLEN];
	pid_t pid;
	int status;

	idx = index_open(at("grown"), 0, 1u << 20, err, sizeof(err));
	if (!ok(idx != NULL, "an index with a 1 MiB map"))
		return;
	rd = index_reader_new(idx);
	fflush(stdout);
	if ((pid = fork()) == 0) {
		/* The other process: a 16 MiB map, 3 MiB of records. */
		static char paths[600][4100];
		static struct index_file files[600];
		struct index *big;
		int i;

		big = index_open(at("grown"), INDEX_EXISTING, 16u << 20, err,
		    sizeof(err));
		if (big == NULL)
			_exit(1);
		for (i = 0; i < 600; i++) {
			snprintf(paths[i], sizeof(paths[i]),
			    "/grown/%d/%04000d", i, i);
			files[i] =
			    make_file(paths[i], NULL, 0, (uint64_t)i + 1);
		}
		_exit(put_files(big, files, 600) == 0 ? 0 : 1);
	}
	ok(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		WEXITSTATUS(status) == 0,
	    "another process writes 3 MiB into it with a 16 MiB map");
	ok(rd != NULL && index_reader_begin(rd) == 0,
	    "a reader of this process begins after that");
	ok(index_stats(rd, &st) == 0 && st.files == 600,
	    "... and sees the 600 records");
	index_reader_end(rd);
	ok(put_files(idx,
	       &(struct index_file){ .path = "/grown/one", .size = 1 }, 1) == 0,
	    "a writer of this process commits too");
	index_reader_free(rd);
	index_close(idx);
}

int
main(void)
{
	if (!ok(testdir_make("test_index") == 0, "make a temporary directory"))
		return tap_done();

	test_open_errors();
	test_main();
	test_schema();
	test_bulk_prune();
	test_map_grown_elsewhere();

	testdir_remove();
	return tap_done();
}
