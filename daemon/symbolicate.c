/*
 * daemon/symbolicate.c: POST /symbolicate and GET /buildid/ID/symbolicate
 * (daemon/symbolicate.h).
 *
 * A request is read (a POST body into memory, at most
 * symbolicate-max-body) and checked whole (symjson_parse_request or
 * _query) before anything is asked: a bad one is a 400 with a one-line
 * reason and starts nothing.  Each distinct build-id's table is then
 * asked of the open tables (daemon/symtabs.h), and the request waits for
 * them up to its timeout_ms (at most symbolicate-timeout-max).  Then it
 * answers 200 with what is ready, every frame in request order: the
 * modules still being fetched or built, and their frames, "pending", with
 * a Retry-After; those no source has "missing"; those that failed
 * "error" with the reason.  The tables a waiting request stops waiting for
 * go on being fetched and built, for its next try.
 *
 * Work on the loop stays short: a body larger than PARSE_INLINE bytes is
 * parsed on a worker, and an answer of more than INLINE_FRAMES frames
 * (the lookups and the JSON) is made on one.
 *
 * The limits are the request's configuration's (its exchange's snapshot,
 * daemon/snapshot.h, which the record holds: a reload applies them to the
 * requests that begin after it), and so are the request path's parts its
 * tables are asked of.
 *
 * The record is the exchange's: freed at its end (conn_on_end), or, when
 * the exchange ends while a job of it runs, by the job's completion.
 */
#include "daemon/symbolicate.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"
#include "daemon/clock.h"
#include "daemon/http.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/pool.h"
#include "daemon/route.h"
#include "daemon/snapshot.h"
#include "daemon/symtabs.h"
#include "resolver/resolve.h"
#include "symbolizer/symjson.h"

/*
 * Frames answered on the loop; more go to a worker.  A lookup and its
 * JSON took 2-5 us a frame on a loaded machine (10,000 frames over
 * libc6-dbg's 20 largest tables: 22 ms from request to last byte, 48 ms
 * of symtool answer on libc.so.6's alone): 256 keep a loop's turn near a
 * millisecond, and the hop to a worker costs less than that.
 */
#define INLINE_FRAMES 256
/* Bytes of a POST body parsed on the loop; more go to a worker. */
#define PARSE_INLINE (64u << 10)
/* The largest answer (10,000 frames of deep inline chains fit). */
#define ANSWER_MAX (256u << 20)
/* Seconds a client waits before asking again for pending modules. */
#define RETRY_AFTER 1

_Static_assert(SYMJSON_F_NSTATUS == METRICS_SYM_FRAME_STATUSES,
    "frame statuses are counted in symjson's order");

struct symreq {
	const struct symbolicate_deps *d;
	struct snapshot *snap; /* the exchange's, held */
	const struct config *cfg; /* snap's: the symbolicate-* limits */
	struct symtabs_thread *tt;
	struct conn *c;
	struct resolve_origin origin; /* texts in the connection's request */
	int post;
	char *body;
	size_t len;
	struct buildid id; /* GET */
	char query[ROUTE_PATH_MAX + 1]; /* GET */
	int rc; /* the parse's */
	char why[256];
	struct symjson_request req;
	int parsed;
	struct symtabs_want *wants; /* one per distinct build-id */
	size_t nwants;
	size_t scan; /* wants before it are decided */
	size_t *want_of; /* of each module */
	struct symjson_answer_module *mods;
	struct event *ev; /* a want was decided */
	struct event *timer; /* timeout_ms passed */
	int answering; /* the answer is being made: no second one */
	int working; /* a job of it runs */
	int gone; /* the exchange ended meanwhile */
	int wrote; /* the answer job's result */
	struct jbuf out;
	uint64_t counts[SYMJSON_F_NSTATUS];
	unsigned pending, missing, failed;
	char logsrc[96]; /* the access log's source */
};

static void
req_free(struct symreq *r)
{
	size_t i;

	for (i = 0; i < r->nwants; i++)
		symtabs_release(r->d->tabs, &r->wants[i]);
	if (r->ev != NULL)
		event_free(r->ev);
	if (r->timer != NULL)
		event_free(r->timer);
	if (r->parsed)
		symjson_request_free(&r->req);
	free(r->body);
	free(r->wants);
	free(r->want_of);
	free(r->mods);
	jbuf_free(&r->out);
	snapshot_unref(r->snap);
	free(r);
}

/* The exchange is over (answered, or the client gone). */
static void
req_end(void *arg)
{
	struct symreq *r = arg;

	if (r->working)
		r->gone = 1;
	else
		req_free(r);
}

/*
 * 1 once r's loop has stopped: a completion then runs at shutdown, after
 * the pool is gone (daemon/main.c), and must start nothing.
 */
static int
req_stopping(struct symreq *r)
{
	return event_base_got_break(conn_base(r->c));
}

/* Submit work, then done, for r: 0, or -1 (answered 503). */
static int
req_job(struct symreq *r, pool_fn work, pool_fn done)
{
	r->working = 1;
	conn_wait(r->c);
	if (!req_stopping(r) &&
	    pool_submit(r->d->pool, work, conn_inbox(r->c), done, r) == 0)
		return 0;
	r->working = 0;
	metrics_symbolicate_request(METRICS_SYM_ERROR);
	conn_set_result(r->c, "ERROR", "symbolicate");
	conn_send_error(r->c, 503, "server is shutting down");
	return -1;
}

/*
 * The access log's result and source ("symbolicate", with the frames and
 * modules of a request that parsed), and the request's metrics.
 */
static void
req_account(struct symreq *r, const char *result, enum metrics_symreq m)
{
	if (r->parsed)
		snprintf(r->logsrc, sizeof(r->logsrc),
		    "symbolicate:frames=%zu,modules=%zu", r->req.nframes,
		    r->req.nmodules);
	else
		snprintf(r->logsrc, sizeof(r->logsrc), "symbolicate");
	conn_set_result(r->c, result, r->logsrc);
	metrics_symbolicate_request(m);
	metrics_request(METRICS_EP_SYMBOLICATE,
	    m == METRICS_SYM_BAD         ? METRICS_BAD
		: m == METRICS_SYM_ERROR ? METRICS_ERROR
					 : METRICS_HIT);
}

/* ------------------------------------------------------------ answer */

/* Worker, or the loop for a small one: the lookups and the JSON. */
static void
answer_work(void *arg)
{
	struct symreq *r = arg;

	r->out.max = ANSWER_MAX;
	r->wrote =
	    symjson_write_answer_counted(&r->out, &r->req, r->mods, r->counts);
	if (r->wrote == 0 && jbuf_put(&r->out, "\n", 1) == -1)
		r->wrote = -1;
}

static void
answer_done(void *arg)
{
	struct symreq *r = arg;
	size_t i;

	r->working = 0;
	if (r->gone) {
		req_free(r);
		return;
	}
	/* The tables go back before the bytes go out. */
	for (i = 0; i < r->nwants; i++)
		symtabs_release(r->d->tabs, &r->wants[i]);
	if (r->wrote == -1) {
		log_warnx("a /symbolicate answer of %zu frames did not fit",
		    r->req.nframes);
		req_account(r, "ERROR", METRICS_SYM_ERROR);
		conn_send_error(r->c, 503, "the answer is too large");
		return;
	}
	metrics_symbolicate_frames(r->counts);
	if (r->pending > 0)
		req_account(r, "PENDING", METRICS_SYM_PENDING);
	else if (r->missing + r->failed > 0)
		req_account(r, "PARTIAL", METRICS_SYM_PARTIAL);
	else
		req_account(r, "OK", METRICS_SYM_OK);
	conn_send_text_retry(r->c, 200, "application/json", r->out.p,
	    r->out.len, r->pending > 0 ? RETRY_AFTER : 0);
}

/* Where each module stands now; the wants not decided stop waiting. */
static void
answer(struct symreq *r)
{
	struct symjson_answer_module *m;
	struct symtabs_want *w;
	size_t i;

	if (r->answering)
		return; /* a want decided as the timer ran out */
	r->answering = 1;
	event_del(r->timer);
	for (i = 0; i < r->nwants; i++)
		symtabs_stop(r->d->tabs, &r->wants[i]);
	event_del(r->ev);
	for (i = 0; i < r->req.nmodules; i++) {
		m = &r->mods[i];
		w = &r->wants[r->want_of[i]];
		m->table = NULL;
		m->reason = NULL;
		switch (w->state) {
		case SYMTABS_OPEN:
			m->status = SYMJSON_OK;
			m->table = w->table;
			break;
		case SYMTABS_WAITING:
			m->status = SYMJSON_PENDING;
			r->pending++;
			break;
		case SYMTABS_MISSING:
			m->status = SYMJSON_MISSING;
			r->missing++;
			break;
		case SYMTABS_ERROR:
			m->status = SYMJSON_ERROR;
			m->reason = w->why;
			r->failed++;
			break;
		}
	}
	if (r->req.nframes > INLINE_FRAMES) {
		req_job(r, answer_work, answer_done);
		return;
	}
	answer_work(r);
	answer_done(r);
}

/* 1 when every want is decided (those before r->scan were already). */
static int
all_decided(struct symreq *r)
{
	for (; r->scan < r->nwants; r->scan++)
		if (symtabs_poll(r->d->tabs, &r->wants[r->scan]) ==
		    SYMTABS_WAITING)
			return 0;
	return 1;
}

static void
decided_cb(evutil_socket_t fd, short what, void *arg)
{
	struct symreq *r = arg;

	(void)fd;
	(void)what;
	if (all_decided(r))
		answer(r);
}

static void
timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	answer(arg);
}

/* ------------------------------------------------------------- begin */

struct idx {
	struct buildid id;
	size_t module;
};

static int
idx_cmp(const void *a, const void *b)
{
	const struct idx *x = a, *y = b;

	if (x->id.len != y->id.len)
		return x->id.len < y->id.len ? -1 : 1;
	return memcmp(x->id.bytes, y->id.bytes, x->id.len);
}

/* One want per distinct build-id, and each module's; 0, or -1 (memory). */
static int
want_ids(struct symreq *r)
{
	size_t n = r->req.nmodules, i;
	struct idx *v;

	if ((v = calloc(n, sizeof(*v))) == NULL ||
	    (r->want_of = calloc(n, sizeof(*r->want_of))) == NULL ||
	    (r->wants = calloc(n, sizeof(*r->wants))) == NULL ||
	    (r->mods = calloc(n, sizeof(*r->mods))) == NULL) {
		free(v);
		return -1;
	}
	for (i = 0; i < n; i++) {
		v[i].id = r->req.modules[i].id;
		v[i].module = i;
	}
	qsort(v, n, sizeof(*v), idx_cmp);
	for (i = 0; i < n; i++) {
		if (i == 0 || idx_cmp(&v[i - 1], &v[i]) != 0)
			r->wants[r->nwants++].id = v[i].id;
		r->want_of[v[i].module] = r->nwants - 1;
	}
	free(v);
	return 0;
}

/* The request is checked: ask for its tables, wait, or answer now. */
static void
begin(struct symreq *r)
{
	unsigned max = r->cfg->symbolicate_timeout_max * 1000u;
	unsigned ms = r->req.timeout_ms < max ? r->req.timeout_ms : max;
	struct timeval tv = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000 };
	struct event_base *base = conn_base(r->c);
	size_t i;

	if (want_ids(r) == -1 ||
	    (r->ev = event_new(base, -1, 0, decided_cb, r)) == NULL ||
	    (r->timer = evtimer_new(base, timeout_cb, r)) == NULL) {
		req_account(r, "ERROR", METRICS_SYM_ERROR);
		conn_send_error(r->c, 503, "out of memory");
		return;
	}
	for (i = 0; i < r->nwants; i++)
		symtabs_get(r->tt, &r->wants[i], r->ev, &r->origin, r->snap);
	if (all_decided(r) || ms == 0) {
		answer(r);
		return;
	}
	conn_wait(r->c);
	evtimer_add(r->timer, &tv);
}

/* The parse ended (r->rc): a 400, a 503, or the tables. */
static void
parsed(struct symreq *r)
{
	if (r->rc == SYMJSON_BAD) {
		req_account(r, "BAD", METRICS_SYM_BAD);
		conn_send_error(r->c, 400, r->why);
		return;
	}
	if (r->rc != 0) {
		req_account(r, "ERROR", METRICS_SYM_ERROR);
		conn_send_error(r->c, 503, "out of memory");
		return;
	}
	r->parsed = 1;
	begin(r);
}

static void
parse_work(void *arg)
{
	struct symreq *r = arg;
	const struct config *cfg = r->cfg;
	struct symjson_limits lim = { cfg->symbolicate_max_frames,
		cfg->symbolicate_max_modules,
		(size_t)cfg->symbolicate_max_body };

	if (r->post)
		r->rc = symjson_parse_request(r->body, r->len, &lim, &r->req,
		    r->why, sizeof(r->why));
	else
		r->rc = symjson_parse_query(r->query, strlen(r->query), &r->id,
		    &lim, &r->req, r->why, sizeof(r->why));
}

static void
parse_done(void *arg)
{
	struct symreq *r = arg;

	r->working = 0;
	if (r->rc == 0)
		r->parsed = 1;
	if (r->gone) {
		req_free(r);
		return;
	}
	if (req_stopping(r)) {
		req_account(r, "ERROR", METRICS_SYM_ERROR);
		conn_send_error(r->c, 503, "server is shutting down");
		return;
	}
	parsed(r);
}

/* The POST body is in (rc 0), or not. */
static void
body_cb(void *arg, int rc, char *body)
{
	struct symreq *r = arg;

	if (rc == -1)
		return; /* the connection is gone: its end frees r */
	if (rc != 0) {
		req_account(r, "ERROR", METRICS_SYM_ERROR);
		conn_send_error(r->c, 503, "out of memory");
		return;
	}
	r->body = body;
	if (r->len > PARSE_INLINE) {
		req_job(r, parse_work, parse_done);
		return;
	}
	parse_work(r);
	parsed(r);
}

void
symbolicate_start(const struct symbolicate_deps *d, struct symtabs_thread *tt,
    struct conn *c, const struct route *rt, const struct resolve_origin *o)
{
	const struct request *hr = conn_request(c);
	struct symreq *r;
	char why[128];

	if ((r = calloc(1, sizeof(*r))) == NULL) {
		metrics_symbolicate_request(METRICS_SYM_ERROR);
		conn_send_error(c, 503, "out of memory");
		return;
	}
	r->d = d;
	r->snap = snapshot_ref(conn_snapshot(c));
	r->cfg = r->snap->cfg;
	r->tt = tt;
	r->c = c;
	r->origin = *o;
	r->post = rt->endpoint == ROUTE_SYMBOLICATE;
	conn_on_end(c, req_end, r);
	if (!r->post) {
		r->id = rt->id;
		snprintf(r->query, sizeof(r->query), "%s", rt->arg);
		parse_work(r);
		parsed(r);
		return;
	}
	if (hr->chunked) {
		req_account(r, "BAD", METRICS_SYM_BAD);
		conn_send_error(c, 411,
		    "a POST /symbolicate body needs a "
		    "Content-Length");
		return;
	}
	if (!hr->has_body ||
	    hr->content_length > r->cfg->symbolicate_max_body) {
		if (!hr->has_body)
			snprintf(why, sizeof(why),
			    "a POST /symbolicate needs a JSON body");
		else
			snprintf(why, sizeof(why),
			    "body over symbolicate-max-body (%llu bytes)",
			    (unsigned long long)r->cfg->symbolicate_max_body);
		req_account(r, "BAD", METRICS_SYM_BAD);
		conn_send_error(c, 400, why);
		return;
	}
	r->len = (size_t)hr->content_length;
	conn_recv_body_mem(c, body_cb, r);
}
