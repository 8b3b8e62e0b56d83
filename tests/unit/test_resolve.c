/*
 * tests/unit/test_resolve.c: the walk over the sources (resolver/resolve.c)
 * with the real index, blob store, negative entries, flight table, pool
 * and producer core, over tables of test sources (tests/tsrc.h) whose
 * transport the test plays, and the client of tests/rig.h.  Time is the
 * test clock.
 *
 * Checked: the order of the table followed once, forward only, skipping
 * what the reach does not ask; a herd joins one flight and a client
 * leaving mid-fill changes nothing for the others; a failed verification
 * answers every waiter with a cut or a 502, never a whole file; a
 * negative entry is written before the waiters are woken and its
 * remaining TTL is their max-age, and then the next request's; a flight
 * that ends absent passes its waiters on after its mark, or to their own
 * source again, a whole request's (RESOLVE_HELD) flight joined by one of
 * every source included; TOOBIG asks the same source again, and a known
 * size answers a smaller limit at once; a request that joins after the
 * verdict is answered from the cache; a whole client never gets a stream
 * (nor a Range request before the verdict); and the answer of every other
 * outcome: the end of the table (noted for the missing-id report), no
 * index reader, this server unable to keep the file, a section's failure.
 * The production table keeps the order the marks rely on.  Every wait is
 * bounded.
 */
#include "tests/rig.h"
#include "tests/tsrc.h"

#include "daemon/misses.h"
#include "sources/sources.h"

#define HERD 8

static const char *ID_A = "a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0";
static const char *ID_B = "b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0";
static const char *ID_C = "c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0";
static const char *ID_D = "d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0";
static const char *ID_E = "e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0";
static const char *ID_F = "f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0";
static const char *ID_G = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1";
static const char *ID_H = "b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1";
static const char *ID_I = "c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1";

#define NEGATIVE_TTL 30
#define ERROR_TTL 20

static struct tsrc a, b, c, d, e;

/* Use table t (static: flights read it) once nothing is in flight. */
static void
use(const struct source *const *t)
{
	RUN_UNTIL(rig_flights() == 0);
	rig.d.sources = t;
	ts_log_clear();
}

/* How many of cs[0..n) ended. */
static int
ended(const struct client *cs, size_t n)
{
	size_t i;
	int k = 0;

	for (i = 0; i < n; i++)
		k += cs[i].ended;
	return k;
}

/* ------------------------------------------------------------- order */

static void
test_order(void)
{
	static const struct source *const t[] = { &a.s, &b.s, &c.s, &d.s, &e.s,
		NULL };
	struct misses *m = misses_new(rig.idx, rig.pool, 100);
	struct index_reader *rd;
	struct misses_query q = { 0, 0, 0 };
	struct client cl;
	char *report = NULL;
	size_t len;

	use(t);
	ts_init(&a, "a", 1, 0, 0, 0);
	ts_init(&b, "b", 0, 0, 0, 0);
	ts_init(&c, "c", 1, 0, 0, 0);
	c.s.lookup = NULL; /* a source without a request side */
	ts_init(&d, "d", 1, 0, 0, 0);
	d.lookup = TS_WORKER_PASS;
	ts_init(&e, "e", 1, 0, 0, 0);
	rig.d.misses = m;

	client_get(&cl, rig_path(ID_A, "debuginfo"));
	ok(cl.waited && !cl.answered,
	    "a source's worker job: the request "
	    "waits");
	RUN_UNTIL(cl.ended);
	is_str(ts_log_text(), "0 1 3 4",
	    "every source asked once, in the table's order, forward only; "
	    "one without a lookup passed by");
	ok(cl.answered == 1 && cl.kind == RESOLVE_OUTCOME &&
		cl.outcome == ANSWER_NOT_FOUND && cl.status == 404,
	    "past the table's end: 404");
	is_str(cl.why, "not found", "... saying so");
	ok(cl.result == METRICS_NOTFOUND, "... counted as not found");
	client_free(&cl);

	ts_log_clear();
	client_init(&cl, 0);
	client_ask(&cl, rig_path(ID_B, "debuginfo"), RESOLVE_HELD);
	RUN_UNTIL(cl.ended);
	is_str(ts_log_text(), "0 3 4",
	    "a request of RESOLVE_HELD reach skips a source that does not "
	    "hold files");
	ok(cl.outcome == ANSWER_NOT_FOUND, "... and ends not found too");
	client_free(&cl);

	rig.d.misses = NULL;
	misses_free(m); /* writes what it noted */
	rd = index_reader_new(rig.idx);
	if (rd != NULL && index_reader_begin(rd) == 0) {
		report = misses_report(rd, &q, &len);
		index_reader_end(rd);
	}
	index_reader_free(rd);
	ok(report != NULL && strstr(report, ID_A) != NULL,
	    "a client's not-found is in the missing-id report");
	ok(report != NULL && strstr(report, ID_B) == NULL,
	    "... a whole file asked by the daemon itself is not");
	free(report);
}

/* The production table: what the marks of absent flights rely on. */
static void
test_production_order(void)
{
	const struct source *const *t = sources_table;
	int forwarding = 0, held_after = 0, held_producers = 0;
	size_t i;

	for (i = 0; t[i] != NULL; i++) {
		if (t[i]->produce == NULL)
			continue;
		if (t[i]->held) {
			held_producers++;
			held_after += forwarding;
		} else {
			forwarding = 1;
		}
	}
	ok(held_producers > 0 && held_after == 0,
	    "sources_table: every producing source that holds files comes "
	    "before those that only remember or forward, so that a waiter "
	    "of a whole-file flight going on after its mark skips none of "
	    "them");
	is_str(t[0]->name, "local", "... local files first");
	ok(t[i - 1]->produce != NULL && !t[i - 1]->held,
	    "... the network last");
}

/* -------------------------------------------------------------- herd */

static void
test_herd_and_leaving(void)
{
	static const struct source *const t[] = { &a.s, NULL };
	struct client cs[HERD];
	struct cache_key k;
	char target[128];
	size_t i;
	int joined = 0, whole = 0;

	use(t);
	ts_init(&a, "fake", 0, 1, 1, 0);
	a.lookup = TS_JOIN;
	snprintf(target, sizeof(target), "/buildid/%s/source/usr/src/a.c",
	    ID_A);
	for (i = 0; i < HERD; i++)
		client_get(&cs[i], target);
	RUN_UNTIL(a.produced > 0);
	ok(a.produced == 1, "a request for what no source has starts a fill");
	is_int(a.produced, 1, "... one fill for eight requests");
	is_int(a.lookups, HERD, "... each asked the source once");
	is_str(a.path,
	    "/buildid/a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0/source/usr/src/"
	    "a.c",
	    "... asking it for the source");
	for (i = 0; i < HERD; i++)
		joined += cs[i].waited && !cs[i].answered;
	is_int(joined, HERD, "all eight wait on it");

	/* One client goes away mid-fill. */
	client_leave(&cs[HERD - 1]);
	ts_accept(a.p, 10, "int main;\n", 10);
	produce_data(a.p, "int main;\n", 10);
	produce_fetched(a.p, UPSTREAM_OK, NULL);
	RUN_UNTIL(ended(cs, HERD) == HERD);
	ok(ended(cs, HERD) == HERD, "the fill's end answers the rest");
	for (i = 0; i < HERD - 1; i++)
		whole += cs[i].status == 200 && cs[i].size == 10 &&
		    cs[i].complete &&
		    memcmp(cs[i].body, "int main;\n", 10) == 0;
	is_int(whole, HERD - 1, "... seven 200s of the whole 10 bytes");
	is_int(cs[0].result, METRICS_MISS, "... the first a MISS");
	is_int(cs[1].result, METRICS_JOINED, "... the others JOINED");
	is_int(cs[HERD - 1].answered, 0, "the one that left gets nothing");
	rig_key(&k, ID_A, CACHE_SOURCE, "/usr/src/a.c");
	write_text("a.c", "int main;\n");
	RUN_UNTIL(rig_cached(&k, NULL));
	ok(rig_cached_as(&k, at("a.c")), "the bytes are published");
	for (i = 0; i < HERD; i++)
		client_free(&cs[i]);
}

/* ------------------------------------------------- failed verification */

static void
test_failed_verification(void)
{
	static const struct source *const t[] = { &a.s, NULL };
	struct client cs[3];
	struct cache_key k;
	struct stat st;
	size_t i, len;
	uint8_t *bytes;
	int cut = 0, whole = 0, streamed = 0;
	int64_t expires = 0;

	/* An executable of the id: its opening bytes name the id. */
	rig_mkelf("b.exe",
	    "--type dyn --build-id b0b0b0b0b0b0b0b0b0b0b0b0b0b0"
	    "b0b0b0b0b0b0 --text 8K");
	stat(at("b.exe"), &st);
	bytes = slurp(at("b.exe"), &len);
	use(t);
	ts_init(&a, "fake", 0, 1, 1, 0);
	a.lookup = TS_JOIN;
	for (i = 0; i < 2; i++)
		client_get(&cs[i], rig_path(ID_B, "debuginfo"));
	RUN_UNTIL(a.p != NULL);
	ok(a.produced == 1, "a second fill starts");
	/* Streaming before verification: never the last byte. */
	ts_accept(a.p, len, bytes, len);
	produce_data(a.p, bytes, len);
	RUN_UNTIL(cs[0].streamed_before > 0 && cs[1].streamed_before > 0);
	ok(cs[0].kind == RESOLVE_STREAM && cs[0].streamed_before == len - 1,
	    "its waiters stream all but the last byte before the verdict");
	client_get(&cs[2], rig_path(ID_B, "debuginfo"));
	produce_fetched(a.p, UPSTREAM_OK, NULL);
	RUN_UNTIL(ended(cs, 3) == 3);
	ok(ended(cs, 3) == 3, "the failed verification ends them all");
	for (i = 0; i < 3; i++) {
		cut += cs[i].status == -1 || cs[i].status == 502;
		whole += cs[i].complete;
		streamed += cs[i].cut;
	}
	is_int(cut, 3, "... each cut mid-stream or answered 502, none whole");
	is_int(whole, 0, "... no complete-looking file");
	ok(streamed >= 2, "... those that streamed were cut");
	rig_key(&k, ID_B, CACHE_DEBUGINFO, "");
	ok(!rig_cached(&k, NULL), "nothing published");
	ok(rig_negative(&k, &expires) == NEG_ERROR &&
		expires == NOW + ERROR_TTL,
	    "an error entry remembered for error-ttl");
	ok(cs[2].answered &&
		(cs[2].status == -1 ||
		    (cs[2].outcome == ANSWER_FILL_FAILED &&
			cs[2].seconds == ERROR_TTL)),
	    "a 502 says to retry when the entry ends");
	for (i = 0; i < 3; i++)
		client_free(&cs[i]);
	free(bytes);
}

/* -------------------------------------------------- a local failure */

static void
test_local_failure(void)
{
	static const struct source *const t[] = { &a.s, NULL };
	struct client cs[2];
	struct cache_key k;
	size_t i;
	int unavailable = 0;

	use(t);
	ts_init(&a, "fake", 0, 1, 1, 0);
	a.lookup = TS_JOIN;
	for (i = 0; i < 2; i++)
		client_get(&cs[i], rig_path(ID_E, "debuginfo"));
	RUN_UNTIL(a.p != NULL);
	ok(a.produced == 1, "another fill starts");
	/* The sink could not keep the bytes (a full disk), none sent yet. */
	ts_end(a.p, UPSTREAM_LOCAL, NULL);
	RUN_UNTIL(ended(cs, 2) == 2);
	ok(ended(cs, 2) == 2, "the fill ends unavailable");
	for (i = 0; i < 2; i++)
		unavailable += cs[i].status == 503 && cs[i].seconds > 0 &&
		    cs[i].outcome == ANSWER_UNAVAILABLE;
	is_int(unavailable, 2, "both waiters: 503 with a Retry-After");
	rig_key(&k, ID_E, CACHE_DEBUGINFO, "");
	ok(rig_negative(&k, NULL) == -1,
	    "... and nothing remembered: the failure is this server's");
	for (i = 0; i < 2; i++)
		client_free(&cs[i]);
}

/* ------------------------------------------------------ negative entry */

static void
test_negative_before_answer(void)
{
	static const struct source *const t[] = { &source_negative, &a.s,
		NULL };
	struct client cs[3];
	struct cache_key k;
	int64_t expires = 0;
	size_t i;
	int miss = 0;

	use(t);
	ts_init(&a, "fake", 0, 1, 1, 0);
	a.lookup = TS_JOIN;
	for (i = 0; i < 2; i++)
		client_get(&cs[i], rig_path(ID_C, "executable"));
	RUN_UNTIL(a.p != NULL);
	ok(a.produced == 1, "a third fill starts");
	ts_end(a.p, UPSTREAM_NOTFOUND, "not found");
	RUN_UNTIL(ended(cs, 2) == 2);
	ok(ended(cs, 2) == 2, "a miss ends the fill");
	rig_key(&k, ID_C, CACHE_EXECUTABLE, "");
	ok(rig_negative(&k, &expires) == NEG_NOTFOUND &&
		expires == NOW + NEGATIVE_TTL,
	    "the producer remembered the miss for negative-ttl");
	/* The max-age is read from the entry: it was there at the wake. */
	for (i = 0; i < 2; i++)
		miss += cs[i].status == 404 &&
		    cs[i].outcome == ANSWER_FILL_NOT_FOUND &&
		    cs[i].seconds == NEGATIVE_TTL;
	is_int(miss, 2, "both waiters: 404, max-age 30 (the entry's)");

	rig_clock(NOW + 10);
	client_get(&cs[2], rig_path(ID_C, "executable"));
	ok(cs[2].answered && !cs[2].waited && cs[2].status == 404,
	    "the next request: 404 from the entry at once");
	is_int(cs[2].seconds, NEGATIVE_TTL - 10,
	    "... its max-age what is left of the entry");
	is_int(cs[2].result, METRICS_NEGATIVE, "... a negative hit");
	is_int(cs[2].outcome, ANSWER_REMEMBERED_MISS, "... a remembered miss");
	is_int(a.produced, 1, "... with no fill");
	rig_clock(NOW);
	for (i = 0; i < 3; i++)
		client_free(&cs[i]);
}

/* -------------------------------------------------- absent flights */

static void
test_absent(void)
{
	static const struct source *const t[] = { &a.s, &b.s, NULL };
	struct client held, all;
	struct cache_key k;

	rig_mkelf("d.debug",
	    "--type rel --build-id d0d0d0d0d0d0d0d0d0d0d0d0"
	    "d0d0d0d0d0d0d0d0 --debug .debug_info:3000");
	/* a holds files but has none; b forwards. */
	use(t);
	ts_init(&a, "held", 1, 0, 1, 0);
	a.lookup = TS_JOIN;
	a.produce = TS_ABSENT;
	ts_init(&b, "forward", 0, 1, 1, 0);
	b.lookup = TS_JOIN;

	/* A whole file asked only where files are held, and a client. */
	client_init(&held, 0);
	held.whole = 1;
	client_ask(&held, rig_path(ID_D, "debuginfo"), RESOLVE_HELD);
	client_get(&all, rig_path(ID_D, "debuginfo"));
	ok(held.waited && all.waited && a.lookups == 2,
	    "a client's request joins the flight of a whole-file request");
	RUN_UNTIL(held.ended && b.p != NULL);
	is_int(a.produced, 1, "... one flight, which a passes on");
	ok(held.outcome == ANSWER_NOT_FOUND && b.lookups == 1,
	    "... and ends absent: the whole-file request, after its mark, "
	    "is not found without asking the source that forwards");
	ok(b.produced == 1 && b.limit == 0,
	    "the client's request goes on after the mark: b fills it");
	ts_serve(b.p, at("d.debug"));
	RUN_UNTIL(all.ended);
	ok(all.status == 200 && all.complete &&
		client_body_is(&all, at("d.debug")),
	    "... and answers it whole");
	is_str(ts_log_text(), "0 0 1",
	    "... every source asked once per request, forward only");
	rig_key(&k, ID_D, CACHE_DEBUGINFO, "");
	RUN_UNTIL(rig_cached(&k, NULL));
	ok(rig_negative(&k, NULL) == -1 && rig_cached(&k, NULL),
	    "... nothing remembered of the absent flight; b's file cached");
	client_free(&held);
	client_free(&all);

	/*
	 * A request that joined the flight at a source it never reached:
	 * its own source again.
	 */
	use(t);
	ts_init(&a, "held", 1, 0, 1, 0);
	a.lookup = TS_JOIN;
	a.produce = TS_ABSENT;
	ts_init(&b, "forward", 0, 1, 1, 0);
	b.lookup = TS_JOIN;
	client_init(&held, 0);
	held.whole = 1;
	client_ask(&held, rig_path(ID_F, "debuginfo"), RESOLVE_HELD);
	a.lookup = TS_PASS;
	client_get(&all, rig_path(ID_F, "debuginfo"));
	ok(all.waited && b.lookups == 1 && b.produced == 0,
	    "a request joins at b the flight a made for a whole file");
	RUN_UNTIL(held.ended && b.p != NULL);
	ok(b.lookups == 2 && b.produced == 1,
	    "the flight ends absent before b: the request asks b again, "
	    "which fills it");
	is_str(ts_log_text(), "0 0 1 1", "... never a source before it");
	ts_end(b.p, UPSTREAM_NOTFOUND, "not found");
	RUN_UNTIL(all.ended);
	is_int(all.status, 404, "... whose answer is the request's");
	client_free(&held);
	client_free(&all);
}

/* ------------------------------------------------------------- TOOBIG */

static void
test_toobig(void)
{
	static const struct source *const t[] = { &a.s, NULL };
	struct client small, none, tiny, any;

	rig_mkelf("g.debug",
	    "--type rel --build-id a1a1a1a1a1a1a1a1a1a1a1a1"
	    "a1a1a1a1a1a1a1a1 --debug .debug_info:6000");
	use(t);
	ts_init(&a, "fake", 0, 1, 1, 0);
	a.lookup = TS_JOIN;
	client_init(&small, 100);
	client_ask(&small, rig_path(ID_G, "debuginfo"), RESOLVE_ALL);
	client_get(&none, rig_path(ID_G, "debuginfo"));
	RUN_UNTIL(a.p != NULL);
	ok(a.produced == 1 && a.limit == 100,
	    "a fill asks with the limit of the request that started it");
	ts_end(a.p, UPSTREAM_TOOBIG, NULL);
	a.p = NULL;
	RUN_UNTIL(small.ended && a.p != NULL);
	ok(small.status == 406 && small.outcome == ANSWER_TOO_BIG,
	    "larger than that limit: its request gets 406");
	ok(!none.answered && a.produced == 2 && a.limit == 0,
	    "a request without a limit asks the same source again, with "
	    "none");
	is_str(ts_log_text(), "0 0 0", "... the same source, never before");
	ts_serve(a.p, at("g.debug"));
	RUN_UNTIL(none.ended);
	ok(none.status == 200 && none.complete, "... and gets the file");
	client_free(&small);
	client_free(&none);

	/* A size known before the bytes answers a smaller limit at once. */
	client_init(&tiny, 5);
	client_ask(&tiny, rig_path(ID_H, "executable"), RESOLVE_ALL);
	client_get(&any, rig_path(ID_H, "executable"));
	RUN_UNTIL(a.produced == 3);
	ts_accept(a.p, 6000, "\177ELF", 4);
	RUN_UNTIL(tiny.ended);
	ok(tiny.status == 406 && !any.answered,
	    "an announced size over a waiter's limit: its 406 at once, while "
	    "the fill goes on");
	ts_end(a.p, UPSTREAM_NOTFOUND, NULL);
	RUN_UNTIL(any.ended);
	is_int(any.status, 404, "... for the others");
	client_free(&tiny);
	client_free(&any);
}

/* ------------------------------------------- joining after the verdict */

/*
 * Verified before its end: the client has every byte while the cache
 * still makes the file durable; a request that joins the fill then waits
 * for its end and is a cache hit.
 */
static void
test_join_after_verdict(void)
{
	static const struct source *const t[] = { &a.s, NULL };
	struct client c1, c2;
	struct cache_key k;
	char target[128];

	write_text("late.c", "int late;\n");
	use(t);
	ts_init(&a, "anywhere", 0, 0, 1, 1);
	a.lookup = TS_JOIN;
	snprintf(target, sizeof(target), "/buildid/%s/source/usr/src/l.c",
	    ID_E);
	client_get(&c1, target);
	ok(a.produced == 1 && a.p != NULL,
	    "a source's fill starts (where it runs anywhere: at once)");
	ts_write_anywhere(a.p, at("late.c"));
	a.p->res = UPSTREAM_OK;
	produce_release(a.p);
	RUN_UNTIL(c1.ended);
	ok(c1.ended,
	    "verified: its client has all its bytes before the "
	    "fill's end");
	ok(c1.status == 200 && c1.size == 10 && c1.complete,
	    "... a 200 of the 10 bytes");
	is_int(c1.result, METRICS_MISS, "... a MISS");
	client_get(&c2, target);
	rig_spin(5);
	ok(c2.waited && !c2.answered,
	    "a request joining it then waits for the end");
	produce_verify(a.p);
	rig_key(&k, ID_E, CACHE_SOURCE, "/usr/src/l.c");
	ok(rig_cached(&k, NULL), "the producer publishes the file");
	produce_finish(a.p);
	RUN_UNTIL(c2.ended);
	ok(c2.ended, "the fill's end answers it");
	ok(c2.status == 200 && c2.size == 10 && c2.kind == RESOLVE_FILE &&
		c2.complete,
	    "... a 200 from the cache");
	is_int(c2.result, METRICS_HIT, "... a HIT");
	is_str(c2.source, "cache", "... from the cache");
	is_int(a.produced, 1, "... and no second fill");
	client_free(&c1);
	client_free(&c2);
}

/* ----------------------------------------------------- whole clients */

static void
test_whole_client(void)
{
	static const struct source *const t[] = { &a.s, NULL };
	struct client whole, range, stream;
	size_t len;
	uint8_t *bytes;

	rig_mkelf("i.debug",
	    "--type dyn --build-id c1c1c1c1c1c1c1c1c1c1c1c1"
	    "c1c1c1c1c1c1c1c1 --debug .debug_info:20000");
	bytes = slurp(at("i.debug"), &len);
	use(t);
	ts_init(&a, "fake", 0, 1, 1, 0);
	a.lookup = TS_JOIN;
	client_init(&whole, 0);
	whole.whole = 1;
	client_ask(&whole, rig_path(ID_I, "debuginfo"), RESOLVE_ALL);
	client_init(&range, 0);
	range.o.range = 1;
	client_ask(&range, rig_path(ID_I, "debuginfo"), RESOLVE_ALL);
	client_get(&stream, rig_path(ID_I, "debuginfo"));
	RUN_UNTIL(a.p != NULL);
	ts_accept(a.p, len, bytes, len);
	produce_data(a.p, bytes, len / 2);
	RUN_UNTIL(stream.streamed_before > 0);
	ok(stream.kind == RESOLVE_STREAM && stream.streamed_before > 0,
	    "a client streams a fill as it comes");
	ok(!whole.answered, "a whole client is not answered while it streams");
	ok(!range.answered, "nor a Range request, which waits for the verdict");
	produce_data(a.p, bytes + len / 2, len - len / 2);
	produce_fetched(a.p, UPSTREAM_OK, NULL);
	RUN_UNTIL(whole.ended && range.ended && stream.ended);
	ok(whole.kind == RESOLVE_FILE && whole.complete &&
		client_body_is(&whole, at("i.debug")),
	    "the whole client gets the verified file, whole");
	ok(range.complete && stream.complete, "... the others theirs");
	client_free(&whole);
	client_free(&range);
	client_free(&stream);
	free(bytes);
}

/* ---------------------------------------------------- other outcomes */

static void
test_outcomes(void)
{
	static const struct source *const neg[] = { &source_negative, NULL };
	static const struct source *const t[] = { &a.s, NULL };
	struct index_reader *rd = rig.th.rd;
	struct client cl;

	/* No index reader on the thread: this server's failure. */
	use(neg);
	rig.th.rd = NULL;
	client_get(&cl, rig_path(ID_A, "debuginfo"));
	rig.th.rd = rd;
	ok(cl.answered && cl.outcome == ANSWER_INTERNAL && cl.status == 503,
	    "an index this thread cannot read: 503");
	is_int(cl.result, METRICS_ERROR, "... an error");
	client_free(&cl);

	/* A section's failure: 503, on which clients fetch the whole file. */
	use(t);
	ts_init(&a, "fake", 0, 1, 1, 0);
	a.lookup = TS_JOIN;
	client_get(&cl,
	    "/buildid/c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0/"
	    "section/.debug_line");
	RUN_UNTIL(a.p != NULL);
	ts_end(a.p, UPSTREAM_FAILED, "every upstream is failing");
	RUN_UNTIL(cl.ended);
	ok(cl.outcome == ANSWER_FILL_FAILED && cl.status == 503,
	    "a section whose fill failed: 503, not 502");
	is_int(cl.seconds, ERROR_TTL, "... with its Retry-After");
	is_str(cl.why, "every upstream is failing", "... saying why");
	client_free(&cl);
}

int
main(void)
{
	static const struct source *const none[] = { NULL };

	if (rig_open("test_resolve", NULL, NULL, none) == -1)
		return 1;
	producers_ttls(rig.prod, NEGATIVE_TTL, ERROR_TTL);

	test_order();
	test_production_order();
	test_herd_and_leaving();
	test_failed_verification();
	test_local_failure();
	test_negative_before_answer();
	test_absent();
	test_toobig();
	test_join_after_verdict();
	test_whole_client();
	test_outcomes();

	rig_close();
	return tap_done();
}
