/*
 * tests/unit/test_misses.c: the missing-id report: its table
 * (cache/misses.c: events folded into one record per build-id, the walk
 * from the most missed, eviction by count down to a bound) and its
 * recorder's queue (daemon/misses.c: what the request path notes reaches
 * the index through the pool; a full queue drops and counts).
 *
 * Indexes in a mkdtemp directory, removed at the end.  The queue test
 * holds the pool's workers on a gate the test opens, so the queue fills
 * by the recorder's rules, not by timing; its wait is bounded.  The
 * one-batch test holds the index's write lock instead.
 */
#include "cache/misses.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache/blobstore.h"
#include "cache/index.h"
#include "daemon/metrics.h"
#include "daemon/misses.h"
#include "daemon/pool.h"
#include "tests/tap.h"
#include "tests/testdir.h"

#define WAIT_SECONDS 30

#define MAPSIZE (64ull << 20)

static struct miss_event
event(uint8_t seed, size_t len, enum cache_kind kind, int64_t when,
    const char *ua)
{
	struct miss_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.id.len = (uint8_t)len;
	memset(ev.id.bytes, seed, len);
	ev.kind = kind;
	ev.when = when;
	snprintf(ev.ua, sizeof(ev.ua), "%s", ua);
	snprintf(ev.addr, sizeof(ev.addr), "192.0.2.%u", seed);
	return ev;
}

/* What a walk saw, in its order. */
struct seen {
	struct miss_info v[16];
	size_t n; /* kept in v */
	size_t all; /* walked */
	uint64_t total; /* their counts */
	size_t stop; /* stop after this many; 0: never */
};

static int
seen_cb(const struct miss_info *mi, void *arg)
{
	struct seen *s = arg;

	s->all++;
	s->total += mi->count;
	if (s->n < 16)
		s->v[s->n++] = *mi;
	return s->stop != 0 && s->n == s->stop;
}

static void
walk(struct index *idx, struct seen *s, size_t stop)
{
	struct index_reader *rd = index_reader_new(idx);

	memset(s, 0, sizeof(*s));
	s->stop = stop;
	if (rd == NULL || index_reader_begin(rd) == -1) {
		ok(0, "open a reader");
		index_reader_free(rd);
		return;
	}
	miss_walk(rd, seen_cb, s);
	index_reader_end(rd);
	index_reader_free(rd);
}

static uint64_t
count(struct index *idx)
{
	struct index_reader *rd = index_reader_new(idx);
	uint64_t n = UINT64_MAX;

	if (rd != NULL && index_reader_begin(rd) == 0) {
		miss_count(rd, &n);
		index_reader_end(rd);
	}
	index_reader_free(rd);
	return n;
}

static void
test_record_and_walk(struct index *idx)
{
	struct miss_event ev[6];
	struct seen s;
	char err[256];

	ev[0] = event(1, 20, CACHE_DEBUGINFO, 1000, "gdb/1");
	ev[1] = event(2, 20, CACHE_DEBUGINFO, 1001, "perf/1");
	ev[2] = event(1, 20, CACHE_EXECUTABLE, 1005, "gdb/2");
	ev[3] = event(3, BUILDID_MAX, CACHE_SOURCE, 999, "x");
	ev[4] = event(1, 20, CACHE_DEBUGINFO, 998, "gdb/3");
	ev[5] = event(2, 20, CACHE_SECTION, 1010, "perf/2");
	is_int(miss_record(idx, ev, 6, err, sizeof(err)), 0,
	    "record six events of three ids in one batch");
	is_int(count(idx), 3, "three ids kept");
	walk(idx, &s, 0);
	is_int(s.n, 3, "the walk sees each id once");
	is_int(s.v[0].id.bytes[0], 1, "the most missed first");
	is_int(s.v[0].count, 3, "... with its count");
	is_int(s.v[0].first, 998,
	    "... the first time it was missed, "
	    "even from an event that came late");
	is_int(s.v[0].last, 1005, "... and the last");
	is_int(s.v[0].kinds, (1u << CACHE_DEBUGINFO) | (1u << CACHE_EXECUTABLE),
	    "... the kinds asked for");
	is_str(s.v[0].ua, "gdb/3", "... and the last client's User-Agent");
	is_str(s.v[0].addr, "192.0.2.1", "... and address");
	is_int(s.v[1].id.bytes[0], 2, "then the id missed twice");
	is_int(s.v[2].id.len, BUILDID_MAX, "a longest build-id is kept whole");
	walk(idx, &s, 1);
	is_int(s.n, 1, "a walk stops when its callback says so");

	/* Equal counts: the last seen first. */
	ev[0] = event(4, 20, CACHE_DEBUGINFO, 2000, "a");
	ev[1] = event(4, 20, CACHE_DEBUGINFO, 2000, "a");
	is_int(miss_record(idx, ev, 2, err, sizeof(err)), 0,
	    "another id missed twice, later");
	walk(idx, &s, 0);
	is_int(s.v[1].id.bytes[0], 4,
	    "among equal counts the last seen comes first");
	is_int(s.v[2].id.bytes[0], 2, "... before the earlier one");
}

static void
test_evict(struct index *idx)
{
	struct miss_event ev[3];
	struct seen s;
	uint64_t n = 99;
	char err[256];

	/* Kept: 1 (3), 4 (2), 2 (2), 3 (1, at 999).  Add 5 and 6 once. */
	ev[0] = event(5, 20, CACHE_DEBUGINFO, 3000, "a");
	ev[1] = event(6, 20, CACHE_DEBUGINFO, 500, "a");
	is_int(miss_record(idx, ev, 2, err, sizeof(err)), 0,
	    "record two ids missed once");
	is_int(miss_evict(idx, 10, &n, err, sizeof(err)), 0,
	    "evict down to 10");
	is_int(n, 0, "... nothing, under the bound");
	is_int(miss_evict(idx, 4, &n, err, sizeof(err)), 0, "evict down to 4");
	is_int(n, 2, "... two ids go");
	is_int(count(idx), 4, "... four are left");
	walk(idx, &s, 0);
	is_int(s.n, 4, "the walk sees the four");
	is_int(s.v[3].id.bytes[0], 5,
	    "the least missed ids went, the longest unseen first: the one "
	    "seen last stays");
	is_int(s.v[0].id.bytes[0], 1, "the most missed stays");

	/* A record updated after its rank moved: no stale rank is left. */
	ev[0] = event(5, 20, CACHE_DEBUGINFO, 3001, "a");
	ev[1] = event(5, 20, CACHE_DEBUGINFO, 3002, "a");
	ev[2] = event(5, 20, CACHE_DEBUGINFO, 3003, "a");
	is_int(miss_record(idx, ev, 3, err, sizeof(err)), 0,
	    "miss the youngest three more times");
	is_int(miss_evict(idx, 1, &n, err, sizeof(err)), 0, "evict down to 1");
	walk(idx, &s, 0);
	is_int(s.n, 1, "one id left");
	is_int(s.v[0].id.bytes[0], 5, "... the most missed now");
	is_int(s.v[0].count, 4, "... with all its misses counted");
}

/* The pool's workers wait here until the test opens the gate. */
/* The kinds of the record of id seed (20 bytes); 0 when none is kept. */
static unsigned
kinds_of(struct index *idx, uint8_t seed)
{
	struct seen s;
	size_t i;

	walk(idx, &s, 0);
	for (i = 0; i < s.n; i++)
		if (s.v[i].id.bytes[0] == seed && s.v[i].id.len == 20)
			return s.v[i].kinds;
	return 0;
}

/*
 * Served kinds leave a record (a cached file published, a hit touched, a
 * local file indexed), and the record with the last of them; purges.
 */
static void
test_served(struct index *idx)
{
	static const struct blob_limits lim = { 0, 90, 80, 0, 0 };
	struct miss_event ev[3];
	struct seen s;
	struct blobstore *bs;
	struct blob_info bi;
	struct cache_key k;
	struct index_batch *b;
	uint64_t n = 0;
	char err[256], tmp[4096];
	int fd;

	ev[0] = event(9, 20, CACHE_DEBUGINFO, 3000, "gdb");
	ev[1] = event(9, 20, CACHE_EXECUTABLE, 3001, "perf");
	ev[2] = event(10, 20, CACHE_DEBUGINFO, 3002, "gdb");
	is_int(miss_record(idx, ev, 3, err, sizeof(err)), 0,
	    "record misses of two kinds of one id, one of another");
	if ((bs = blobstore_new(idx, at("cache"), &lim, err, sizeof(err))) ==
		NULL ||
	    (fd = blob_tmp_new(bs, tmp, sizeof(tmp), err, sizeof(err))) == -1) {
		ok(0, err);
		blobstore_free(bs);
		return;
	}
	is_int(write(fd, "x", 1), 1, "a fill of one byte");
	close(fd);
	memset(&bi, 0, sizeof(bi));
	bi.size = 1;
	bi.id = ev[0].id;
	bi.kind = CACHE_DEBUGINFO;
	bi.arg = "";
	bi.source = "";
	cache_key_make(&k, &bi.id, CACHE_DEBUGINFO, "");
	is_int(blob_publish(bs, &k, tmp, &bi, 3003, err, sizeof(err)), 0,
	    "the debuginfo is published (a fill)");
	is_int(kinds_of(idx, 9), 1u << CACHE_EXECUTABLE,
	    "... and leaves the record: the executable is still missed");
	if ((b = index_batch_begin(idx, err, sizeof(err))) != NULL) {
		miss_batch_served(b, &ev[1].id, 1u << CACHE_EXECUTABLE);
		index_batch_commit(b, err, sizeof(err));
	}
	is_int(kinds_of(idx, 9), 0,
	    "the executable served too (a local file): the record goes");
	if ((b = index_batch_begin(idx, err, sizeof(err))) != NULL) {
		struct buildid none = { 0 };

		is_int(miss_batch_served(b, &none, 1u << CACHE_DEBUGINFO), 0,
		    "a file without build-id (not indexable) is no record");
		is_int(index_batch_commit(b, err, sizeof(err)), 0,
		    "... and does not fail the scan's commit");
	}
	blob_touch(bs, &k, 3004);
	is_int(miss_record(idx, ev, 1, err, sizeof(err)), 0,
	    "the debuginfo missed again");
	is_int(kinds_of(idx, 9), 1u << CACHE_DEBUGINFO, "... in the report");
	is_int(blob_flush_touches(bs, err, sizeof(err)), 0,
	    "a hit of the cached debuginfo, written");
	is_int(kinds_of(idx, 9), 0, "... forgets it again");
	blobstore_free(bs);

	is_int(miss_purge(idx, &ev[2].id, &n, err, sizeof(err)), 0,
	    "purge one id");
	is_int(n, 1, "... one record");
	is_int(kinds_of(idx, 10), 0, "... it is gone");
	ok(count(idx) > 0, "... the others stay");
	is_int(miss_purge(idx, NULL, &n, err, sizeof(err)), 0, "purge all");
	is_int(count(idx), 0, "... none is left");
	walk(idx, &s, 0);
	is_int(s.all, 0, "... nor a key of their order");
}

static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_open, gate_waiting;

static void
gate_work(void *arg)
{
	pthread_mutex_lock(&gate_mu);
	gate_waiting++;
	pthread_cond_broadcast(&gate_cv);
	while (!gate_open)
		pthread_cond_wait(&gate_cv, &gate_mu);
	pthread_mutex_unlock(&gate_mu);
}

/* 1 when n workers wait at the gate, within WAIT_SECONDS. */
static int
gate_wait_for(int n)
{
	struct timespec until;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += WAIT_SECONDS;
	pthread_mutex_lock(&gate_mu);
	while (gate_waiting < n && rc == 0)
		rc = pthread_cond_timedwait(&gate_cv, &gate_mu, &until);
	rc = gate_waiting >= n;
	pthread_mutex_unlock(&gate_mu);
	return rc;
}

static void
test_queue(void)
{
	struct buildid id;
	struct index *idx;
	struct misses *m;
	struct pool *pool;
	struct seen s;
	char err[256], *text;
	size_t i, len;

	metrics_init();
	idx = index_open(at("queue"), 0, MAPSIZE, err, sizeof(err));
	pool = pool_new(2, 1);
	if (!ok(idx != NULL && pool != NULL, "queue: an index and a pool"))
		return;
	m = misses_new(idx, pool, 2000);
	/* Both workers held: a flush started now could not run. */
	pool_submit(pool, gate_work, NULL, NULL, NULL);
	pool_submit(pool, gate_work, NULL, NULL, NULL);
	ok(gate_wait_for(2), "both workers held at the gate");
	memset(&id, 0, sizeof(id));
	id.len = 20;
	/* 10,000 requests for 5 ids: 5 events, nothing dropped. */
	for (i = 0; i < 10000; i++) {
		id.bytes[0] = (uint8_t)(i % 5);
		misses_note(m, &id, CACHE_DEBUGINFO, "gdb/1 and more", 5,
		    "::1");
	}
	/* Then as many other ids as the queue has room for, and 3 more. */
	for (i = 5; i < MISSES_QUEUE_MAX + 3; i++) {
		id.bytes[0] = (uint8_t)(i & 0xff);
		id.bytes[1] = (uint8_t)(i >> 8);
		misses_note(m, &id, CACHE_DEBUGINFO, NULL, 0, "::1");
	}
	text = metrics_render(&len);
	ok(text != NULL &&
		strstr(text, "\ndbgmirror_misses_dropped_total 3\n") != NULL,
	    "a full queue: the 3 new ids over it dropped and counted");
	free(text);
	misses_tick(m);
	pthread_mutex_lock(&gate_mu);
	gate_open = 1;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_mu);
	pool_free(pool); /* runs the flush the tick queued, then stops */
	misses_free(m);
	walk(idx, &s, 0);
	is_int(s.all, MISSES_QUEUE_MAX,
	    "the queue reached the index: 1024 ids");
	is_int(s.total, 10000 + MISSES_QUEUE_MAX - 5,
	    "... every request the queue folded in, counted");
	is_int(s.v[0].count, 2000, "... the most missed first: 2000");
	is_str(s.v[0].ua, "gdb/1", "... the User-Agent as long as given");
	is_str(s.v[0].addr, "::1", "... the address");
	index_close(idx);
	metrics_free();
}

/* dbgmirror_misses_dropped_total as /metrics says it. */
static unsigned long
dropped(void)
{
	unsigned long n = 0;
	size_t len;
	char *text, *at;

	text = metrics_render(&len);
	if (text != NULL &&
	    (at = strstr(text, "\ndbgmirror_misses_dropped_total ")) != NULL)
		n = strtoul(at + strlen("\ndbgmirror_misses_dropped_total "),
		    NULL, 10);
	free(text);
	return n;
}

/*
 * A flush job writes the batch it took and leaves the few events that
 * came meanwhile to the next tick: under a steady flood of 404s a job
 * that wrote until the queue was empty never ended, committing back to
 * back.  The test holds the index's write lock, so the job blocks in its
 * first transaction after taking the (full) queue; an id noted then is
 * let in, which is how the test knows the queue was taken.
 */
static void
test_one_batch(void)
{
	struct index_batch *b;
	struct buildid id;
	struct index *idx;
	struct misses *m;
	struct pool *pool;
	struct seen s;
	struct timespec pause = { 0, 1000000 };
	char err[256];
	unsigned long d;
	size_t i, tries;
	int in = 0;

	metrics_init();
	idx = index_open(at("onebatch"), 0, MAPSIZE, err, sizeof(err));
	pool = pool_new(2, 1);
	if (!ok(idx != NULL && pool != NULL, "one batch: an index and a pool"))
		return;
	m = misses_new(idx, pool, 4000);
	b = index_batch_begin(idx, err, sizeof(err));
	ok(b != NULL, "the index's write lock held");
	memset(&id, 0, sizeof(id));
	id.len = 20;
	for (i = 0; i < MISSES_QUEUE_MAX; i++) {
		id.bytes[0] = (uint8_t)(i & 0xff);
		id.bytes[1] = (uint8_t)(i >> 8);
		misses_note(m, &id, CACHE_DEBUGINFO, NULL, 0, "::1");
	}
	misses_tick(m);
	/* Bounded: WAIT_SECONDS of 1 ms pauses. */
	id.bytes[2] = 1;
	for (tries = 0; !in && tries < WAIT_SECONDS * 1000u; tries++) {
		d = dropped();
		misses_note(m, &id, CACHE_DEBUGINFO, NULL, 0, "::1");
		in = dropped() == d;
		if (!in)
			nanosleep(&pause, NULL);
	}
	ok(in, "the job took the full queue: a new id is let in");
	index_batch_abort(b);
	pool_free(pool); /* the job ends, or never does */
	walk(idx, &s, 0);
	is_int(s.all, MISSES_QUEUE_MAX,
	    "the job wrote the batch it took, and left the new id");
	misses_free(m);
	walk(idx, &s, 0);
	is_int(s.all, MISSES_QUEUE_MAX + 1, "... which the last flush wrote");
	index_close(idx);
	metrics_free();
}

int
main(void)
{
	struct index *idx;
	char err[256];

	if (!ok(testdir_make("test_misses") == 0, "make a temporary directory"))
		return tap_done();
	idx = index_open(at("index"), 0, MAPSIZE, err, sizeof(err));
	if (ok(idx != NULL, "open an index")) {
		is_int(count(idx), 0, "an empty table");
		test_record_and_walk(idx);
		test_evict(idx);
		test_served(idx);
		index_close(idx);
	}
	test_queue();
	test_one_batch();
	testdir_remove();
	return tap_done();
}
