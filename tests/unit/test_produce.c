/*
 * tests/unit/test_produce.c: the producer core (resolver/produce.c), the
 * only writer of a flight, with the real index, blob store, negative
 * entries, flight table and pool, and test sources (tests/tsrc.h) whose
 * transport the test plays.  The test is every fill's readers: it joins
 * flights through produce_join, as a source's lookup does, and watches
 * them.  Time is the test clock.
 *
 * Checked: the head of an ELF answer is held back from readers until the
 * early check of its opening bytes passed, so that a non-ELF answer or
 * one with another build-id is refused before any reader has a byte; the
 * verdict lets readers finish and publishes the bytes; wrong content
 * after the whole body fails every reader, who never had the last byte,
 * and caches nothing; negative and error entries are left only by a
 * source that remembers, and never for this server's failure or one
 * client's limit; a fill begins by looking in the cache and the entries
 * again; produce_absent hands the same flight to the next producing
 * source (from a worker to one that runs only on the loop, its data
 * given back), past the table's end or the reach to FLIGHT_ABSENT with
 * the mark of the last source asked, which is not joined again;
 * producers_free ends fills running and queued; the write buffer gathers
 * a burst's pieces and writes them once, so a body coming piece by piece
 * reaches its readers as it comes.  Every wait is bounded.
 */
#include "tests/rig.h"
#include "tests/tsrc.h"

#define NEGATIVE_TTL 40
#define ERROR_TTL 25

static const char *ID_A = "a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2";
static const char *ID_B = "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2";
static const char *ID_C = "c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2";
static const char *ID_D = "d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2";
static const char *ID_E = "e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2";

static struct tsrc s0, s1;

/* Use table t (static: flights read it) once nothing is in flight. */
static void
use(const struct source *const *t)
{
	RUN_UNTIL(rig_flights() == 0);
	rig.d.sources = t;
}

/* ----------------------------------------------------- the early check */

static void
test_early_check(void)
{
	static const struct source *const t[] = { &s0.s, NULL };
	static const char html[] = "<html><body>busy</body></html>\n";
	struct reader r;
	struct flight_view v;
	size_t len;
	uint8_t *other;
	int rc;

	use(t);
	/* It does not remember: each refusal leaves the key as it was. */
	ts_init(&s0, "loop", 0, 0, 1, 0);
	rig_mkelf("b.debug",
	    "--type dyn --build-id b2b2b2b2b2b2b2b2b2b2b2b2"
	    "b2b2b2b2b2b2b2b2 --debug .debug_info:100K");
	other = slurp(at("b.debug"), &len);

	reader_join(&r, ID_A, CACHE_DEBUGINFO);
	ok(r.created, "a reader makes the flight");
	RUN_UNTIL(s0.p != NULL);
	ok(s0.produced == 1 && s0.on_loop,
	    "... which its source fills, on the producers' loop");
	rc = ts_accept(s0.p, sizeof(html) - 1, html, sizeof(html) - 1);
	is_int(rc, -1, "an answer that is not ELF is refused at its head");
	produce_fetched(s0.p, UPSTREAM_FAILED, "refused");
	RUN_UNTIL(reader_ended(&r));
	ok(reader_state(&r) == FLIGHT_FAILED && r.most == 0,
	    "... the fill fails before any reader had a byte");
	reader_leave(&r);

	/* Another build-id, which its opening bytes name. */
	s0.p = NULL;
	reader_join(&r, ID_A, CACHE_DEBUGINFO);
	RUN_UNTIL(s0.p != NULL);
	rc = ts_accept(s0.p, len, other, len);
	reader_look(&r, &v);
	ok(rc == 0 && v.state == FLIGHT_WAITING && v.sendable == 0,
	    "an ELF head: readers are not told its length yet");
	ok(v.size == len, "... though its size is announced");
	/* In pieces: a check that could not tell would let readers in. */
	rc = produce_data(s0.p, other, len - 1000);
	if (rc == 0)
		rc = produce_data(s0.p, other + len - 1000, 1000);
	reader_look(&r, &v);
	is_int(rc, -1, "the early check refuses another build-id");
	ok(v.state == FLIGHT_WAITING && r.most == 0,
	    "... before any reader was let send a byte");
	produce_fetched(s0.p, UPSTREAM_FAILED, "refused");
	RUN_UNTIL(reader_ended(&r));
	is_int(reader_state(&r), FLIGHT_FAILED, "... and the fill fails");
	ok(r.most == 0, "... no reader ever had a byte");
	ok(!rig_cached(&r.k, NULL), "... nothing cached");
	reader_leave(&r);
	free(other);
}

/* ------------------------------------------------- verdict and publish */

static void
test_verdict(void)
{
	static const struct source *const t[] = { &s0.s, NULL };
	struct reader r, late;
	struct flight_view v;
	size_t len;
	uint8_t *bytes;
	int rc;

	use(t);
	ts_init(&s0, "loop", 0, 1, 1, 0);
	rig_mkelf("c.debug",
	    "--type dyn --build-id c2c2c2c2c2c2c2c2c2c2c2c2"
	    "c2c2c2c2c2c2c2c2 --debug .debug_info:30000");
	bytes = slurp(at("c.debug"), &len);
	reader_join(&r, ID_C, CACHE_DEBUGINFO);
	RUN_UNTIL(s0.p != NULL);
	ts_accept(s0.p, len, bytes, len);
	rc = produce_data(s0.p, bytes, len);
	reader_look(&r, &v);
	ok(rc == 0 && v.state == FLIGHT_STREAMING && v.length == len,
	    "the opening bytes name the id: readers learn the length");
	is_int(v.sendable, len - 1, "... and may send all but the last byte");
	reader_join(&late, ID_C, CACHE_DEBUGINFO);
	ok(!late.created && late.f == r.f, "a second reader joins the flight");
	produce_fetched(s0.p, UPSTREAM_OK, NULL);
	RUN_UNTIL(reader_ended(&r));
	reader_look(&r, &v);
	ok(v.state == FLIGHT_READY && v.sendable == len,
	    "the verdict: every byte may go");
	is_str(flight_meta(r.f)->file, "/fake", "... with the answer's head");
	is_str(flight_source(r.f), "http://fake", "... and where it came from");
	ok(rig_cached_as(&r.k, at("c.debug")),
	    "the verified bytes are published before the end");
	is_int(s0.judged, 1, "the source judged it once");
	reader_look(&late, &v);
	ok(v.state == FLIGHT_READY, "... for every reader");
	reader_leave(&r);
	reader_leave(&late);
	free(bytes);
}

/* ------------------------------------------------------- wrong content */

static void
test_wrong_content(void)
{
	static const struct source *const t[] = { &s0.s, NULL };
	struct reader rs[3];
	struct flight_view v;
	int64_t expires = 0;
	size_t len, i;
	uint8_t *bytes;
	int failed = 0, cut = 0;

	use(t);
	ts_init(&s0, "loop", 0, 1, 1, 0);
	/* The build-id, but an executable: no debug sections. */
	rig_mkelf("d.exe",
	    "--type dyn --build-id d2d2d2d2d2d2d2d2d2d2d2d2"
	    "d2d2d2d2d2d2d2d2 --text 20000");
	bytes = slurp(at("d.exe"), &len);
	for (i = 0; i < 3; i++)
		reader_join(&rs[i], ID_D, CACHE_DEBUGINFO);
	RUN_UNTIL(s0.p != NULL);
	ts_accept(s0.p, len, bytes, len);
	produce_data(s0.p, bytes, len);
	reader_look(&rs[0], &v);
	ok(v.state == FLIGHT_STREAMING && v.sendable == len - 1,
	    "wrong content that names the id streams all but the last byte");
	produce_fetched(s0.p, UPSTREAM_OK, NULL);
	for (i = 0; i < 3; i++)
		RUN_UNTIL(reader_ended(&rs[i]));
	for (i = 0; i < 3; i++) {
		failed += reader_state(&rs[i]) == FLIGHT_FAILED;
		cut += rs[i].most < len;
	}
	is_int(failed, 3, "the final check fails it, for every reader");
	is_int(cut, 3, "... none ever let send the whole answer");
	reader_look(&rs[0], &v);
	ok(strstr(v.why, "wrong content") != NULL, "... saying why");
	ok(!rig_cached(&rs[0].k, NULL), "... nothing published");
	ok(rig_negative(&rs[0].k, &expires) == NEG_ERROR &&
		expires == NOW + ERROR_TTL,
	    "... an error entry remembered instead, for error-ttl");
	for (i = 0; i < 3; i++)
		reader_leave(&rs[i]);
	free(bytes);
}

/* ---------------------------------------- what is remembered, and when */

/*
 * A fill of (hex, debuginfo) by a source that remembers or not, whose
 * fetch ends res: the entry it leaves (-1: none), the reader's end in *st.
 */
static int
entry_after(const char *hex, int remembers, enum upstream_result res,
    enum flight_state *st)
{
	static const struct source *const t[] = { &s0.s, NULL };
	struct reader r;
	int kind;

	use(t);
	ts_init(&s0, "loop", 0, remembers, 1, 0);
	reader_join(&r, hex, CACHE_DEBUGINFO);
	RUN_UNTIL(s0.p != NULL);
	ts_end(s0.p, res, res == UPSTREAM_NOTFOUND ? "not found" : "failed");
	RUN_UNTIL(reader_ended(&r));
	*st = reader_state(&r);
	ok(r.wakes > 0, "... its reader was woken by the end");
	kind = rig_negative(&r.k, NULL);
	if (kind != -1)
		ok(r.negative_at_wake,
		    "... the entry there before the end woke it");
	reader_leave(&r);
	return kind;
}

static void
test_remembering(void)
{
	enum flight_state st;
	struct cache_key k;
	int64_t expires = 0;

	is_int(entry_after("a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3", 1,
		   UPSTREAM_NOTFOUND, &st),
	    NEG_NOTFOUND,
	    "a miss of a source that remembers: a negative entry");
	is_int(st, FLIGHT_NOTFOUND, "... the fill ends not found");
	rig_key(&k, "a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3", CACHE_DEBUGINFO,
	    "");
	rig_negative(&k, &expires);
	is_int(expires, NOW + NEGATIVE_TTL, "... until now + negative-ttl");
	is_int(entry_after("a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4", 1,
		   UPSTREAM_FAILED, &st),
	    NEG_ERROR, "its failure: an error entry");
	is_int(st, FLIGHT_FAILED, "... the fill fails");
	is_int(entry_after("a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5", 0,
		   UPSTREAM_NOTFOUND, &st),
	    -1, "a miss of a source that does not remember: no entry");
	is_int(st, FLIGHT_NOTFOUND, "... the fill still ends not found");
	is_int(entry_after("a6a6a6a6a6a6a6a6a6a6a6a6a6a6a6a6a6a6a6a6", 0,
		   UPSTREAM_FAILED, &st),
	    -1, "its failure: no entry either");
	is_int(entry_after("a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7", 1,
		   UPSTREAM_LOCAL, &st),
	    -1, "this server's failure is never remembered");
	is_int(st, FLIGHT_UNAVAILABLE, "... the fill ends unavailable");
	is_int(entry_after("a8a8a8a8a8a8a8a8a8a8a8a8a8a8a8a8a8a8a8a8", 1,
		   UPSTREAM_TOOBIG, &st),
	    -1, "nor one client's X-DEBUGINFOD-MAXSIZE");
	is_int(st, FLIGHT_TOOBIG, "... the fill ends TOOBIG");
}

/* A fill begins by looking in the cache and the entries once more. */
static void
test_looks_again(void)
{
	static const struct source *const t[] = { &s0.s, NULL };
	struct reader r;
	struct flight_view v;

	use(t);
	ts_init(&s0, "loop", 0, 1, 1, 0);
	rig_mkelf("e.debug",
	    "--type dyn --build-id e2e2e2e2e2e2e2e2e2e2e2e2"
	    "e2e2e2e2e2e2e2e2 --debug .debug_info:3000");
	rig_publish(ID_E, CACHE_DEBUGINFO, "", at("e.debug"), "elsewhere");
	reader_join(&r, ID_E, CACHE_DEBUGINFO);
	RUN_UNTIL(reader_ended(&r));
	reader_look(&r, &v);
	ok(v.state == FLIGHT_READY && v.sendable > 0 && s0.produced == 0,
	    "a file published since the miss ends the fill: its source not "
	    "asked");
	reader_leave(&r);
	rig_remember(ID_B, CACHE_EXECUTABLE, "", NEG_NOTFOUND, 60);
	reader_join(&r, ID_B, CACHE_EXECUTABLE);
	RUN_UNTIL(reader_ended(&r));
	ok(reader_state(&r) == FLIGHT_NOTFOUND && s0.produced == 0,
	    "a miss remembered since: not found, its source not asked");
	reader_leave(&r);
}

/* ------------------------------------------------------- handing on */

static void
test_absent(void)
{
	static const struct source *const any_loop[] = { &s0.s, &s1.s, NULL };
	struct reader r;
	struct flight_view v;

	use(any_loop);
	/* s0 runs anywhere and passes from a worker; s1 runs on the loop. */
	ts_init(&s0, "anywhere", 1, 0, 1, 1);
	s0.produce = TS_ABSENT_WORKER;
	ts_init(&s1, "loop", 0, 1, 1, 0);
	rig_mkelf("a.debug",
	    "--type dyn --build-id a2a2a2a2a2a2a2a2a2a2a2a2"
	    "a2a2a2a2a2a2a2a2 --debug .debug_info:5000");
	reader_join_as(&r, ID_A, CACHE_DEBUGINFO, 0, ts_data_new(&s0),
	    RESOLVE_ALL);
	ok(s0.produced == 1 && s0.f == r.f,
	    "a source that runs anywhere fills the flight where it was made");
	RUN_UNTIL(s1.p != NULL);
	ok(s1.produced == 1 && s1.f == r.f,
	    "it passed: the same flight goes on to the next producing source");
	ok(s1.on_loop,
	    "... which runs on the loop, though passed from a "
	    "worker");
	is_int(s0.released, 1, "... the first source's data given back");
	ts_serve(s1.p, at("a.debug"));
	RUN_UNTIL(reader_ended(&r));
	reader_look(&r, &v);
	ok(v.state == FLIGHT_READY && v.sendable > 0,
	    "... and the reader gets what it gives");
	reader_leave(&r);
}

static void
test_off_the_end(void)
{
	static const struct source *const both[] = { &s0.s, &s1.s, NULL };
	struct reader r, again;
	struct flight_view v;

	use(both);
	ts_init(&s0, "first", 1, 0, 1, 0);
	s0.produce = TS_ABSENT;
	ts_init(&s1, "second", 0, 1, 1, 0);
	s1.produce = TS_ABSENT;
	reader_join(&r, ID_B, CACHE_DEBUGINFO);
	RUN_UNTIL(reader_ended(&r));
	reader_look(&r, &v);
	ok(v.state == FLIGHT_ABSENT && s0.produced == 1 && s1.produced == 1,
	    "no source had it: the flight ends absent past the table's end");
	is_int(v.mark, 1, "... marked with the last source asked");
	ok(!rig_cached(&r.k, NULL) && rig_negative(&r.k, NULL) == -1,
	    "... nothing remembered");
	reader_join(&again, ID_B, CACHE_DEBUGINFO);
	ok(again.created && again.f != r.f,
	    "a flight that ended absent is not joined again");
	RUN_UNTIL(reader_ended(&again));
	reader_leave(&again);
	reader_leave(&r);

	/* A whole file asked only where files are held. */
	use(both);
	ts_init(&s0, "held", 1, 0, 1, 0);
	s0.produce = TS_ABSENT;
	ts_init(&s1, "forward", 0, 1, 1, 0);
	reader_join_as(&r, ID_C, CACHE_EXECUTABLE, 0, NULL, RESOLVE_HELD);
	RUN_UNTIL(reader_ended(&r));
	reader_look(&r, &v);
	ok(v.state == FLIGHT_ABSENT && v.mark == 0 && s1.produced == 0,
	    "a flight of RESOLVE_HELD reach does not go on to a source that "
	    "only forwards: absent, marked with the last held source");
	reader_leave(&r);
}

/* -------------------------------------------------- the write buffer */

/*
 * After the early check a fill gathers the pieces a transfer hands over
 * and writes them once the burst that brought them is in (one turn of
 * the loop): a body coming piece by piece reaches its readers as it
 * comes, a burst at a time, not at the end.
 */
static void
test_write_buffer(void)
{
	static const struct source *const t[] = { &s0.s, NULL };
	const size_t piece = 16384;
	struct reader r;
	struct flight_view v;
	size_t len, off, grew = 0, turns = 0;
	uint64_t before;
	uint8_t *bytes;

	use(t);
	ts_init(&s0, "loop", 0, 1, 1, 0);
	rig_mkelf("w.debug",
	    "--type dyn --build-id c3c3c3c3c3c3c3c3c3c3c3c3"
	    "c3c3c3c3c3c3c3c3 --debug .debug_info:200K");
	bytes = slurp(at("w.debug"), &len);
	reader_join(&r, "c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3",
	    CACHE_DEBUGINFO);
	RUN_UNTIL(s0.p != NULL);
	ts_accept(s0.p, len, bytes, len);
	produce_data(s0.p, bytes, piece);
	reader_look(&r, &v);
	is_int(v.sendable, piece,
	    "the opening piece is written at once, for the early check");
	produce_data(s0.p, bytes + piece, piece);
	produce_data(s0.p, bytes + 2 * piece, piece);
	reader_look(&r, &v);
	is_int(v.sendable, piece, "the next pieces of a burst are gathered");
	rig_spin(1);
	reader_look(&r, &v);
	is_int(v.sendable, 3 * piece,
	    "... and written once the burst is in: its readers have them");
	for (off = 3 * piece; off + piece < len; off += piece) {
		before = r.most;
		produce_data(s0.p, bytes + off, piece);
		rig_spin(1);
		reader_look(&r, &v);
		turns++;
		grew += r.most > before && v.state == FLIGHT_STREAMING;
	}
	is_int(grew, turns,
	    "a body coming piece by piece reaches its reader "
	    "as it comes");
	produce_data(s0.p, bytes + off, len - off);
	produce_fetched(s0.p, UPSTREAM_OK, NULL);
	RUN_UNTIL(reader_ended(&r));
	reader_look(&r, &v);
	ok(v.state == FLIGHT_READY && v.sendable == len,
	    "... and ends verified, whole");
	ok(rig_cached_as(&r.k, at("w.debug")), "... the bytes as they came");
	reader_leave(&r);
	free(bytes);
}

/* --------------------------------------------------------- shutdown */

static void
test_producers_free(void)
{
	static const struct source *const t[] = { &s0.s, NULL };
	struct reader running, queued;
	struct flight_view v;

	use(t);
	ts_init(&s0, "loop", 0, 1, 1, 0);
	reader_join_as(&running, ID_D, CACHE_EXECUTABLE, 0, ts_data_new(&s0),
	    RESOLVE_ALL);
	RUN_UNTIL(s0.p != NULL);
	ok(s0.produced == 1, "a fill runs");
	reader_join_as(&queued, ID_E, CACHE_EXECUTABLE, 0, ts_data_new(&s0),
	    RESOLVE_ALL);
	ok(queued.created && s0.produced == 1, "... another is queued");
	rig_stop();
	reader_look(&running, &v);
	ok(v.state == FLIGHT_FAILED &&
		strcmp(v.why, "server is shutting down") == 0,
	    "producers_free ends the fill running: failed, shutting down");
	is_int(reader_state(&queued), FLIGHT_FAILED, "... and the one queued");
	is_int(s0.released, 2, "... each source's data given back");
	ok(rig_negative(&running.k, NULL) == -1,
	    "... nothing remembered of it");
	reader_leave(&running);
	reader_leave(&queued);
}

int
main(void)
{
	static const struct source *const none[] = { NULL };

	if (rig_open("test_produce", NULL, NULL, none) == -1)
		return 1;
	producers_ttls(rig.prod, NEGATIVE_TTL, ERROR_TTL);

	test_early_check();
	test_verdict();
	test_wrong_content();
	test_remembering();
	test_looks_again();
	test_absent();
	test_off_the_end();
	test_write_buffer();
	test_producers_free();

	rig_close();
	return tap_done();
}
