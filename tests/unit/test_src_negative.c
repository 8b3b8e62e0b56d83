/*
 * tests/unit/test_src_negative.c: remembered misses and failures as a
 * source (sources/negative.c), on both sides, with the real index,
 * producer core and resolver, and test sources around it (tests/tsrc.h):
 * one that holds files before it, one that forwards after it.
 *
 * Checked: on the request side a live miss is a 404 whose max-age is what
 * is left of the entry, a failure a 502 (a section's 503) whose
 * Retry-After is, both at once and counted as NEGATIVE; an entry that
 * expired passes the request on.  In a flight the source before it passed
 * on, an entry ends the flight (not found, or failed) before the source
 * after it is asked, for the whole herd; without one the same flight goes
 * on; the answer of a flight an entry ended says that no source was asked
 * (unasked).  An upload's judgement is never answered by an entry, on
 * either side: the sources after it are asked.  Time is the test clock;
 * every wait is bounded.
 */
#include "tests/rig.h"
#include "tests/tsrc.h"

#include "sources/sources.h"

#define HERD 4

static const char *ID_A = "a6a6a6a6a6a6a6a6a6a6a6a6a6a6a6a6a6a6a6a6";
static const char *ID_B = "b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6";
static const char *ID_C = "c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6";
static const char *ID_D = "d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6";
static const char *ID_F = "f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6";
static const char *ID_G = "a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7";

static struct tsrc held, forward;
static const struct source *const table[] = { &held.s, &source_negative,
	&forward.s, NULL };

static void
test_request_side(void)
{
	struct client c;

	rig_remember(ID_A, CACHE_DEBUGINFO, "", NEG_NOTFOUND, 100);
	client_get(&c, rig_path(ID_A, "debuginfo"));
	ok(c.answered && !c.waited && c.status == 404 &&
		c.outcome == ANSWER_REMEMBERED_MISS,
	    "a remembered miss: 404 at once");
	is_int(c.seconds, 100, "... max-age what is left of the entry");
	is_int(c.result, METRICS_NEGATIVE, "... counted as NEGATIVE");
	ok(forward.lookups == 0, "... the source after it not asked");
	client_free(&c);
	rig_clock(NOW + 40);
	client_get(&c, rig_path(ID_A, "debuginfo"));
	is_int(c.seconds, 60, "40 s later: max-age 60");
	client_free(&c);

	rig_remember(ID_B, CACHE_SECTION, ".debug_line", NEG_ERROR, 20);
	client_get(&c,
	    "/buildid/b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6/"
	    "section/.debug_line");
	ok(c.answered && c.status == 503 &&
		c.outcome == ANSWER_REMEMBERED_ERROR && c.seconds == 20,
	    "a remembered failure of a section: 503, Retry-After what is left");
	client_free(&c);
	rig_remember(ID_B, CACHE_EXECUTABLE, "", NEG_ERROR, 20);
	client_get(&c, rig_path(ID_B, "executable"));
	ok(c.status == 502 && c.seconds == 20,
	    "... of an executable: 502, Retry-After what is left");
	client_free(&c);

	rig_clock(NOW + 101);
	client_get(&c, rig_path(ID_A, "debuginfo"));
	ok(forward.lookups == 1 && c.outcome == ANSWER_NOT_FOUND,
	    "an entry that expired passes the request on");
	client_free(&c);
	rig_clock(NOW);
}

/*
 * A herd whose flight held makes and passes on, reaching this source with
 * entry kind nk (0: none) written meanwhile.
 */
static void
herd(const char *hex, enum neg_kind nk, struct client *cs)
{
	size_t i;

	held.lookup = TS_JOIN;
	held.produce = TS_HOLD;
	held.p = NULL;
	forward.lookup = TS_JOIN;
	forward.p = NULL;
	forward.lookups = forward.produced = 0;
	for (i = 0; i < HERD; i++)
		client_get(&cs[i], rig_path(hex, "debuginfo"));
	RUN_UNTIL(held.p != NULL);
	if (nk != 0)
		rig_remember(hex, CACHE_DEBUGINFO, "", nk, 50);
	produce_absent(held.p);
}

static int
ended(const struct client *cs, int status)
{
	int i, n = 0;

	for (i = 0; i < HERD; i++)
		n += cs[i].ended && cs[i].status == status;
	return n;
}

static void
test_flight_side(void)
{
	struct client cs[HERD];
	size_t i;

	herd(ID_C, NEG_NOTFOUND, cs);
	RUN_UNTIL(ended(cs, 404) == HERD);
	is_int(ended(cs, 404), HERD,
	    "a flight passed on meets a remembered miss: not found");
	ok(cs[0].outcome == ANSWER_FILL_NOT_FOUND && cs[0].seconds == 50,
	    "... max-age the entry's");
	ok(forward.lookups == 0 && forward.produced == 0,
	    "... the source after it never asked, for the whole herd");
	is_str(cs[0].unasked, "a remembered miss or failure",
	    "... which the answer says: no source was asked");
	for (i = 0; i < HERD; i++)
		client_free(&cs[i]);

	herd(ID_D, NEG_ERROR, cs);
	RUN_UNTIL(ended(cs, 502) == HERD);
	is_int(ended(cs, 502), HERD, "a remembered failure: 502");
	ok(cs[0].seconds == 50 && forward.produced == 0,
	    "... Retry-After the entry's, nothing asked");
	for (i = 0; i < HERD; i++)
		client_free(&cs[i]);

	rig_mkelf("e.debug",
	    "--type dyn --build-id e6e6e6e6e6e6e6e6e6e6e6e6e6"
	    "e6e6e6e6e6e6e6 --debug .debug_info:3000");
	herd("e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6", 0, cs);
	RUN_UNTIL(forward.p != NULL);
	ok(forward.produced == 1 && forward.f == held.f,
	    "without an entry, the same flight goes on to the source after it");
	is_int(forward.lookups, 0, "... no request asked it for another");
	ts_serve(forward.p, at("e.debug"));
	RUN_UNTIL(ended(cs, 200) == HERD);
	is_int(ended(cs, 200), HERD, "... which answers the herd");
	for (i = 0; i < HERD; i++)
		client_free(&cs[i]);
}

/* An upload's judgement: entries are no answer, the sources are asked. */
static void
test_judge(void)
{
	struct client c, cs[HERD];
	size_t i;

	rig_remember(ID_F, CACHE_DEBUGINFO, "", NEG_NOTFOUND, 100);
	held.lookup = forward.lookup = TS_PASS;
	forward.lookups = 0;
	client_init(&c, 0);
	c.whole = c.judge = 1;
	client_ask(&c, rig_path(ID_F, "debuginfo"), RESOLVE_ALL);
	ok(c.answered && forward.lookups == 1 &&
		c.outcome == ANSWER_NOT_FOUND && c.unasked[0] == '\0',
	    "a judgement past a remembered miss: the source after it asked");
	client_free(&c);

	held.lookup = forward.lookup = TS_JOIN;
	held.produce = TS_HOLD;
	held.p = forward.p = NULL;
	forward.produced = 0;
	for (i = 0; i < HERD; i++) {
		client_init(&cs[i], 0);
		cs[i].whole = cs[i].judge = 1;
		client_ask(&cs[i], rig_path(ID_G, "debuginfo"), RESOLVE_ALL);
	}
	RUN_UNTIL(held.p != NULL);
	rig_remember(ID_G, CACHE_DEBUGINFO, "", NEG_NOTFOUND, 50);
	produce_absent(held.p);
	RUN_UNTIL(forward.p != NULL);
	ok(forward.produced == 1,
	    "... and its fill past an entry written meanwhile: the same "
	    "flight goes on");
	ts_end(forward.p, UPSTREAM_NOTFOUND, NULL);
	RUN_UNTIL(ended(cs, 404) == HERD);
	ok(ended(cs, 404) == HERD && cs[0].unasked[0] == '\0',
	    "... whose not-found every source gave");
	for (i = 0; i < HERD; i++)
		client_free(&cs[i]);
}

int
main(void)
{
	if (rig_open("test_src_negative", NULL, NULL, table) == -1)
		return 1;
	ts_init(&held, "held", 1, 0, 1, 0);
	ts_init(&forward, "forward", 0, 1, 1, 0);

	test_request_side();
	test_flight_side();
	test_judge();

	rig_close();
	return tap_done();
}
