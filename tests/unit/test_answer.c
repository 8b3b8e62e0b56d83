/*
 * tests/unit/test_answer.c: the one answer table (resolver/answer.c), and
 * how daemon/serve.c's client turns each answer into HTTP.
 *
 * Every row is checked against the table as it is spelt here, apart from
 * the code: the status (and a section's), the access log's result, the
 * header that says when to ask again and whether its seconds are fixed,
 * and whether the outcome goes into the missing-id report; with what the
 * rows must keep (a failure is never a 404, which clients cache for
 * long; a section's failure is a 503, on which clients cut the section
 * themselves).  Then real requests go through serve.c and daemon/conn.c
 * (tests/httploop.h) to the resolver, whose test source answers each
 * outcome: the status line, Cache-Control max-age or Retry-After (or
 * neither), the reason in the body and the access log's result and
 * source; and the two answers with a file, a cache hit and a fill
 * streamed.  Time is the test clock; every wait is bounded.
 */
#include "tests/rig.h"
#include "tests/tsrc.h"

#include "daemon/access.h"
#include "daemon/serve.h"
#include "sources/sources.h"
#include "tests/httploop.h"

/* An outcome spelt apart from resolver/answer.c. */
struct want {
	enum answer_outcome o;
	const char *name;
	int status, section_status;
	const char *label; /* the access log's */
	enum answer_seconds seconds;
	unsigned fixed;
	int missed;
};

static const struct want wants[] = {
	/* Short while a source may have the id soon (a refresh runs). */
	{ ANSWER_NOT_FOUND, "not found", 404, 404, "MISS", ANSWER_MAX_AGE, 0,
	    1 },
	{ ANSWER_LOOP, "loop", 404, 404, "MISS", ANSWER_NO_SECONDS, 0, 0 },
	{ ANSWER_REMEMBERED_MISS, "remembered miss", 404, 404, "NEGATIVE",
	    ANSWER_MAX_AGE, 0, 1 },
	{ ANSWER_REMEMBERED_ERROR, "remembered error", 502, 503, "NEGATIVE",
	    ANSWER_RETRY_AFTER, 0, 0 },
	{ ANSWER_REPO_FAILING, "repository failing", 502, 503, "NEGATIVE",
	    ANSWER_RETRY_AFTER, 0, 0 },
	{ ANSWER_FILL_NOT_FOUND, "fill not found", 404, 404, "MISS",
	    ANSWER_MAX_AGE, 0, 1 },
	{ ANSWER_FILL_FAILED, "fill failed", 502, 503, "ERROR",
	    ANSWER_RETRY_AFTER, 0, 0 },
	{ ANSWER_UNAVAILABLE, "unavailable", 503, 503, "ERROR",
	    ANSWER_RETRY_AFTER, 30, 0 },
	{ ANSWER_TOO_BIG, "too big", 406, 406, "MISS", ANSWER_NO_SECONDS, 0,
	    0 },
	{ ANSWER_INTERNAL, "internal", 503, 503, "ERROR", ANSWER_NO_SECONDS, 0,
	    0 },
};
#define NWANTS (sizeof(wants) / sizeof(wants[0]))

static void
test_rows(void)
{
	const struct answer_row *row;
	char what[160];
	size_t i;
	int bad;

	is_int(NWANTS, ANSWER_OUTCOMES, "every outcome has a row here");
	for (i = 0; i < NWANTS; i++) {
		const struct want *w = &wants[i];

		row = answer_row(w->o);
		snprintf(what, sizeof(what), "%s: %d, a section's %d", w->name,
		    w->status, w->section_status);
		ok(row->status == w->status &&
			row->section_status == w->section_status &&
			answer_status(w->o, 0) == w->status &&
			answer_status(w->o, 1) == w->section_status,
		    what);
		snprintf(what, sizeof(what), "%s: the access log says %s",
		    w->name, w->label);
		is_str(answer_label(row->result), w->label, what);
		snprintf(what, sizeof(what), "%s: %s%s", w->name,
		    w->seconds == ANSWER_MAX_AGE           ? "max-age"
			: w->seconds == ANSWER_RETRY_AFTER ? "Retry-After"
							   : "no seconds",
		    w->fixed != 0 ? ", always 30" : "");
		ok(row->seconds == w->seconds && row->fixed_seconds == w->fixed,
		    what);
		snprintf(what, sizeof(what), "%s: %sin the missing-id report",
		    w->name, w->missed ? "" : "not ");
		ok(row->missed == w->missed, what);
		snprintf(what, sizeof(what), "%s: a reason and a source",
		    w->name);
		ok(row->why != NULL && row->why[0] != '\0' &&
			row->section_why != NULL &&
			row->section_why[0] != '\0' && row->source != NULL,
		    what);
	}
	for (bad = 0, i = 0; i < NWANTS; i++)
		bad += answer_row(wants[i].o)->missed &&
		    answer_row(wants[i].o)->status != 404;
	is_int(bad, 0, "only not-founds are noted as missing");
	for (bad = 0, i = 0; i < NWANTS; i++)
		bad += answer_row(wants[i].o)->seconds == ANSWER_MAX_AGE &&
		    answer_row(wants[i].o)->status != 404;
	is_int(bad, 0, "max-age goes only on a 404");
	for (bad = 0, i = 0; i < NWANTS; i++)
		bad += answer_row(wants[i].o)->status == 502 &&
		    answer_row(wants[i].o)->section_status != 503;
	is_int(bad, 0, "a failure is a 502, and a section's a 503");
	is_str(answer_why(ANSWER_NOT_FOUND, 1, NULL),
	    "no such section for this build-id",
	    "a section's reason is its own");
	is_str(answer_why(ANSWER_FILL_FAILED, 0, "upstream said 500"),
	    "upstream said 500", "a reason given wins over the table's");
	is_str(answer_label(METRICS_JOINED), "JOINED", "JOINED is labelled");
	is_str(answer_label(METRICS_HIT), "HIT", "... HIT");
	is_str(answer_label(METRICS_BAD), "ERROR", "... a bad request ERROR");
	is_str(answer_label(METRICS_NOTFOUND), "MISS", "... a not-found MISS");
}

/* ------------------------------------------------- through serve.c */

/*
 * Answers the outcome the build-id's first byte names, with the seconds
 * its second byte says; passes any other id.
 */
static enum src_result
outcome_lookup(struct rq *rq)
{
	const struct buildid *id = &rq->rt->id;

	if (id->bytes[0] >= ANSWER_OUTCOMES)
		return SRC_ABSENT;
	return rq_outcome(rq, (enum answer_outcome)id->bytes[0], NULL,
	    id->bytes[1], NULL);
}

static const struct source outcome_source = {
	.name = "outcome",
	.held = 1,
	.lookup = outcome_lookup,
};

/* The rest of a 20-byte build-id after those two. */
#define ZEROS "000000000000000000000000000000000000"

static struct tsrc fill;
static const struct source *const table[] = { &source_cache, &outcome_source,
	&fill.s, NULL };

/* What c's last exchange left for the access log. */
static const char *
logged_result(void)
{
	return hl.t.conns != NULL ? hl.t.conns->result : "(gone)";
}

static const char *
logged_source(void)
{
	return hl.t.conns != NULL ? hl.t.conns->source : "(gone)";
}

/* GET (or HEAD) target on c; the response in r. */
static int
request(struct hc *c, const char *method, const char *target, struct hresp *r)
{
	char req[512];

	snprintf(req, sizeof(req),
	    "%s %s HTTP/1.1\r\nHost: t\r\nUser-Agent: test\r\n\r\n", method,
	    target);
	hc_say(c->fd, req);
	return hc_response(c, r, strcmp(method, "HEAD") == 0);
}

static void
check_outcome(struct hc *c, const struct want *w, int section, unsigned seconds)
{
	char target[160], what[200], value[32], body[512];
	const char *cc, *ra;
	const struct answer_row *row = answer_row(w->o);
	struct hresp r;
	unsigned shown = w->fixed != 0 ? w->fixed : seconds;

	snprintf(target, sizeof(target), "/buildid/%02x%02x%s/%s",
	    (unsigned)w->o, seconds, ZEROS,
	    section ? "section/.debug_info" : "debuginfo");
	request(c, "GET", target, &r);
	snprintf(what, sizeof(what), "%s%s: HTTP %d", w->name,
	    section ? " (a section)" : "",
	    section ? w->section_status : w->status);
	is_int(r.status, section ? w->section_status : w->status, what);
	cc = hc_header(&r, "Cache-Control");
	ra = hc_header(&r, "Retry-After");
	snprintf(value, sizeof(value), "max-age=%u", shown);
	if (w->seconds == ANSWER_MAX_AGE && shown > 0) {
		snprintf(what, sizeof(what), "... Cache-Control: %s", value);
		ok(cc != NULL && strcmp(cc, value) == 0 && ra == NULL, what);
	} else if (w->seconds == ANSWER_RETRY_AFTER && shown > 0) {
		snprintf(value, sizeof(value), "%u", shown);
		snprintf(what, sizeof(what), "... Retry-After: %s", value);
		ok(ra != NULL && strcmp(ra, value) == 0 && cc == NULL, what);
	} else {
		ok(cc == NULL && ra == NULL,
		    "... neither max-age nor Retry-After");
	}
	snprintf(body, sizeof(body), "%s\n",
	    section ? row->section_why : row->why);
	ok(r.body != NULL && strcmp(r.body, body) == 0,
	    "... the reason in the body");
	snprintf(what, sizeof(what), "... logged %s from %s", w->label,
	    row->source);
	ok(strcmp(logged_result(), w->label) == 0 &&
		strcmp(logged_source(), row->source) == 0,
	    what);
	hresp_free(&r);
}

static void
test_http(void)
{
	struct hc c;
	struct hresp r;
	size_t i, len;
	uint8_t *bytes;
	char target[160];

	hc_open(&c);
	ok(c.fd != -1, "a client connects to serve.c's handler");
	for (i = 0; i < NWANTS; i++) {
		check_outcome(&c, &wants[i], 0, 7);
		check_outcome(&c, &wants[i], 1, 7);
	}
	/* Seconds 0 (an entry that just ended): no header at all. */
	check_outcome(&c, &wants[ANSWER_REMEMBERED_MISS], 0, 0);
	check_outcome(&c, &wants[ANSWER_REMEMBERED_ERROR], 0, 0);

	/* A HEAD of an outcome has its head only. */
	snprintf(target, sizeof(target), "/buildid/%02x07%s/debuginfo",
	    (unsigned)ANSWER_FILL_FAILED, ZEROS);
	request(&c, "HEAD", target, &r);
	ok(r.status == 502 && r.body_len == 0 &&
		hc_header(&r, "Retry-After") != NULL,
	    "a HEAD: the status and Retry-After, no body");
	hresp_free(&r);

	/* A cache hit: a file. */
	rig_mkelf("bb.debug",
	    "--type dyn --build-id bbbbbbbbbbbbbbbbbbbbbbbb"
	    "bbbbbbbbbbbbbbbb --debug .debug_info:3000");
	rig_publish("bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", CACHE_DEBUGINFO,
	    "", at("bb.debug"), "http://up");
	request(&c, "GET",
	    "/buildid/bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb/debuginfo", &r);
	bytes = slurp(at("bb.debug"), &len);
	ok(r.status == 200 && r.whole && r.body_len == len &&
		memcmp(r.body, bytes, len) == 0,
	    "a cached file: 200 with its bytes");
	is_str(hc_header(&r, "X-Cache"), "HIT", "... X-Cache: HIT");
	is_str(hc_header(&r, "Cache-Control"), "public, max-age=604800",
	    "... cacheable for a week: a build-id's bytes never change");
	ok(hc_header(&r, "ETag") != NULL &&
		hc_header(&r, "Last-Modified") != NULL,
	    "... with its validators");
	ok(strcmp(logged_result(), "HIT") == 0 &&
		strcmp(logged_source(), "cache") == 0,
	    "... logged HIT from the cache");
	hresp_free(&r);
	free(bytes);

	/* A fill: streamed. */
	rig_mkelf("aa.debug",
	    "--type dyn --build-id aaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaa --debug .debug_info:9000");
	hc_say(c.fd,
	    "GET /buildid/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/"
	    "debuginfo HTTP/1.1\r\nHost: t\r\n\r\n");
	RUN_UNTIL(fill.p != NULL);
	ts_serve(fill.p, at("aa.debug"));
	hc_response(&c, &r, 0);
	bytes = slurp(at("aa.debug"), &len);
	ok(r.status == 200 && r.whole && r.body_len == len &&
		memcmp(r.body, bytes, len) == 0,
	    "a fill: 200, streamed whole");
	is_str(hc_header(&r, "X-Cache"), "MISS", "... X-Cache: MISS");
	is_str(hc_header(&r, "X-DEBUGINFOD-FILE"), "/fake",
	    "... the source's X-DEBUGINFOD-* lines replayed");
	ok(strcmp(logged_result(), "MISS") == 0 &&
		strcmp(logged_source(), "http://fake") == 0,
	    "... logged MISS from where it came");
	hresp_free(&r);
	free(bytes);
	hc_close(&c);
}

int
main(void)
{
	static const char *const opts[] = { "--access-log", "off", NULL };
	struct http_handler handler;
	struct serve_deps sd;
	struct serve *srv;
	struct access *acc;
	char err[256];

	if (rig_open("test_answer", opts, NULL, table) == -1)
		return 1;
	ts_init(&fill, "fill", 0, 1, 1, 0);
	fill.lookup = TS_JOIN;
	test_rows();

	if ((acc = access_new(&rig.cfg, NULL, NULL, err, sizeof(err))) ==
	    NULL) {
		printf("Bail out! %s\n", err);
		return 1;
	}
	memset(&sd, 0, sizeof(sd));
	sd.idx = rig.idx;
	sd.pool = rig.pool;
	sd.bs = rig.bs;
	sd.ft = rig.ft;
	sd.rd = &rig.d;
	srv = serve_new(&sd);
	serve_handler(srv, &handler);
	if (hloop_open(&rig.cfg, &handler, rig.base, rig.inbox) == -1) {
		printf("Bail out! cannot listen\n");
		return 1;
	}
	hl.snap.access = acc;
	hl.snap.rd = &rig.d;
	test_http();

	RUN_UNTIL(rig_flights() == 0);
	hloop_close();
	serve_free(srv);
	access_free(acc);
	rig_close();
	return tap_done();
}
