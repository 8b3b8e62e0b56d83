/*
 * tests/unit/test_misses.c: the missing-id report: its table
 * (cache/misses.c: events folded into one record per build-id, the walk
 * from the most missed, eviction by count down to a bound) and its
 * recorder's queue (daemon/misses.c: what the request path notes reaches
 * the index through the pool; a full queue drops and counts).
 *
 * Indexes in a mkdtemp directory, removed at the end.  The queue test
 * holds the pool's workers on a gate the test opens, so the queue fills
 * by the recorder's rules, not by timing; its wait is bounded.
 */
#include "cache/misses.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

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
		index_close(idx);
	}
	test_queue();
	testdir_remove();
	return tap_done();
}
