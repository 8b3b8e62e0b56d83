/*
 * daemon/serve.c: the request handler: route each request to its endpoint.
 *
 * Artifacts (debuginfo, executable, section, source) go to the resolver
 * (resolver/resolve.c), where the whole request path is, and /metadata to
 * daemon/metadata.c; the banner, /metrics, /status (daemon/status.c) and
 * the admin endpoints (purges, and the missing-id report of
 * daemon/misses.c) are answered here.  Each event-loop thread has its own
 * index reader, which the resolver uses.
 */
#include "daemon/serve.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache/blobstore.h"
#include "cache/index.h"
#include "cache/negative.h"
#include "conf/config.h"
#include "autoconf.h"
#include "daemon/access.h"
#include "daemon/clock.h"
#include "daemon/log.h"
#include "daemon/metadata.h"
#include "daemon/metrics.h"
#include "daemon/misses.h"
#include "daemon/pool.h"
#include "daemon/response.h"
#include "daemon/route.h"
#include "resolver/resolve.h"
#include "daemon/status.h"
#include "sources/upload.h"

static const char banner[] =
    PACKAGE_NAME " " PACKAGE_VERSION ": a debuginfod-compatible server\n"
		 "GET /buildid/ID/debuginfo\n"
		 "GET /buildid/ID/executable\n"
		 "GET /buildid/ID/section/NAME\n"
		 "GET /buildid/ID/source/PATH\n"
		 "GET /metadata?key=file|glob|buildid&value=V\n"
		 "GET /metrics\n"
		 "GET /status\n";

struct serve {
	struct serve_deps d;
	struct metadata_deps md;
	struct upload_deps ud;
};

struct serve_thread {
	struct serve *srv;
	struct resolve_thread rt;
};

/* ---------------------------------------------------------------- admin */

/* What c's request shows about its client, for the access rules. */
static void
who_of(struct conn *c, struct access_who *who)
{
	const struct request *req = conn_request(c);

	who->peer = conn_peer_addr(c);
	who->forwarded_for = req->forwarded_for;
	who->authorization = req->authorization;
	who->subject = conn_tls_subject(c);
}

/*
 * 1 when c may use class cls under the access rules; else 0, having
 * answered 401 or 403 with a one-line reason.  Called before anything is
 * looked up, so a refusal says nothing about what exists.
 */
static int
class_allowed(struct conn *c, struct serve *srv, enum access_class cls)
{
	struct access_who who;
	const char *why = NULL;
	char text[96];
	enum access_verdict v;

	who_of(c, &who);
	v = access_check(srv->d.access, cls, &who, &why);
	if (v == ACCESS_ALLOW)
		return 1;
	conn_set_result(c, "DENIED", "-");
	snprintf(text, sizeof(text), "%s: %s", access_class_name(cls), why);
	if (v == ACCESS_UNAUTHORIZED) {
		metrics_access_denied(METRICS_DENIED_UNAUTHORIZED);
		conn_send_unauthorized(c, text);
	} else {
		metrics_access_denied(METRICS_DENIED_FORBIDDEN);
		conn_send_error(c, 403, text);
	}
	return 0;
}

/* 1 when an endpoint open to who (admin-access) is to c. */
static int
access_allowed(struct conn *c, enum config_admin who)
{
	const char *a = conn_peer_addr(c);

	switch (who) {
	case CONFIG_ADMIN_ANY:
		return 1;
	case CONFIG_ADMIN_LOOPBACK:
		return strncmp(a, "127.", 4) == 0 || strcmp(a, "::1") == 0;
	default:
		return 0;
	}
}

/* 1 when auth is "Bearer TOKEN", compared in constant time. */
static int
admin_token_ok(struct slice auth, const char *token)
{
	size_t n = strlen(token), i;
	unsigned char d = 0;

	if (auth.p == NULL || auth.n != 7 + n ||
	    strncasecmp(auth.p, "Bearer ", 7) != 0)
		return 0;
	for (i = 0; i < n; i++)
		d |= (unsigned char)(auth.p[7 + i] ^ token[i]);
	return d == 0;
}

struct serve_purge {
	struct conn *c;
	struct serve *srv;
	char query[ROUTE_PATH_MAX + 1];
	int status;
	char text[256];
};

static void
purge_work(void *arg)
{
	struct serve_purge *p = arg;
	struct buildid id;
	const char *why = NULL;
	char err[256], url[ROUTE_PATH_MAX + 1], *val;
	uint64_t blobs = 0, negs = 0;
	int rc = -1;

	p->status = 200;
	if ((val = strchr(p->query, '=')) != NULL) {
		*val++ = '\0';
		/* Decoding in place: the result is never longer. */
		if (route_decode(val, strlen(val), val, 1, &why) == -1) {
			p->status = 400;
			snprintf(p->text, sizeof(p->text), "bad query: %s",
			    why);
			return;
		}
	}
	if (strcmp(p->query, "negative") == 0) {
		rc = neg_purge(p->srv->d.idx, NULL, &negs, err, sizeof(err));
	} else if (strcmp(p->query, "id") == 0 && val != NULL) {
		if (buildid_parse(&id, val, strlen(val), &why) == -1) {
			p->status = 400;
			snprintf(p->text, sizeof(p->text), "bad id: %s", why);
			return;
		}
		rc = blob_purge(p->srv->d.bs, &id, NULL, clock_stamp_ns(),
		    &blobs, err, sizeof(err));
		if (rc == 0)
			rc = neg_purge(p->srv->d.idx, &id, &negs, err,
			    sizeof(err));
	} else if (strcmp(p->query, "upstream") == 0 && val != NULL) {
		config_url_public(val, url, sizeof(url));
		rc = blob_purge(p->srv->d.bs, NULL, url, clock_stamp_ns(),
		    &blobs, err, sizeof(err));
	} else {
		p->status = 400;
		snprintf(p->text, sizeof(p->text),
		    "purge what? id=ID, negative or upstream=URL");
		return;
	}
	if (rc == -1) {
		p->status = 503;
		snprintf(p->text, sizeof(p->text), "purge failed: %.200s", err);
		return;
	}
	snprintf(p->text, sizeof(p->text),
	    "purged %llu entries, %llu negative\n", (unsigned long long)blobs,
	    (unsigned long long)negs);
}

static void
purge_done(void *arg)
{
	struct serve_purge *p = arg;

	conn_set_result(p->c, p->status == 200 ? "PURGE" : "ERROR", "-");
	if (p->status == 200)
		conn_send_text(p->c, 200, "text/plain", p->text,
		    strlen(p->text));
	else
		conn_send_error(p->c, p->status, p->text);
	free(p);
}

/*
 * 1 when c may use an admin endpoint that answers method (POST for
 * actions, GET for reports) under admin-access and admin-token; else 0,
 * having answered.
 */
static int
admin_allowed(struct conn *c, struct serve *srv, enum request_method method)
{
	const struct request *req = conn_request(c);

	if (access_has_rules(srv->d.access, ACCESS_ADMIN)) {
		if (!class_allowed(c, srv, ACCESS_ADMIN))
			return 0;
		if (method == METHOD_POST && req->method != METHOD_POST) {
			conn_send_not_allowed(c, "POST");
			return 0;
		}
		return 1;
	}
	if (!access_allowed(c, srv->d.cfg->admin_access)) {
		conn_send_error(c, 403,
		    "the admin endpoint is not open to you");
		return 0;
	}
	if (method == METHOD_POST && req->method != METHOD_POST) {
		conn_send_not_allowed(c, "POST");
		return 0;
	}
	if (srv->d.admin_token != NULL &&
	    !admin_token_ok(req->authorization, srv->d.admin_token)) {
		conn_send_error(c, 401,
		    "admin requests need Authorization: Bearer with the "
		    "admin-token");
		return 0;
	}
	return 1;
}

static void
purge_start(struct conn *c, struct serve *srv, const struct route *rt)
{
	struct serve_purge *p;

	/*
	 * An action, never a GET: a redirect, a crawler or a browser page
	 * must not be able to trigger it.
	 */
	if (!admin_allowed(c, srv, METHOD_POST))
		return;
	if ((p = calloc(1, sizeof(*p))) == NULL) {
		conn_send_error(c, 503, "out of memory");
		return;
	}
	p->c = c;
	p->srv = srv;
	snprintf(p->query, sizeof(p->query), "%s", rt->arg);
	conn_wait(c);
	if (pool_submit_long(srv->d.pool, purge_work, conn_inbox(c), purge_done,
		p) == -1) {
		free(p);
		conn_send_error(c, 503, "server is shutting down");
	}
}

/* A report of the missing ids, read on a worker. */
struct serve_report {
	struct conn *c;
	struct serve *srv;
	struct misses_query q;
	char *text;
	size_t len;
};

/*
 * Parse /admin/misses's query: top=N, since=DURATION, format=json|text.
 * 0, or -1 with *why.
 */
static int
report_query(char *query, struct misses_query *q, const char **why)
{
	char *tok, *save = NULL, *val;

	q->top = 0;
	q->since = 0;
	q->json = 0;
	for (tok = strtok_r(query, "&", &save); tok != NULL;
	     tok = strtok_r(NULL, "&", &save)) {
		if ((val = strchr(tok, '=')) == NULL) {
			*why = "expected top=N, since=DURATION or format=json";
			return -1;
		}
		*val++ = '\0';
		if (route_decode(val, strlen(val), val, 1, why) == -1)
			return -1;
		if (strcmp(tok, "top") == 0) {
			if (misses_query_top(q, val, why) == -1)
				return -1;
		} else if (strcmp(tok, "since") == 0) {
			if (misses_query_since(q, val, clock_now(), why) == -1)
				return -1;
		} else if (strcmp(tok, "format") == 0 &&
		    (strcmp(val, "json") == 0 || strcmp(val, "text") == 0)) {
			q->json = val[0] == 'j';
		} else {
			*why = "expected top=N, since=DURATION or "
			       "format=json|text";
			return -1;
		}
	}
	return 0;
}

static void
report_work(void *arg)
{
	struct serve_report *r = arg;
	struct index_reader *rd;

	if ((rd = index_reader_new(r->srv->d.idx)) == NULL)
		return;
	if (index_reader_begin(rd) == 0) {
		r->text = misses_report(rd, &r->q, &r->len);
		index_reader_end(rd);
	}
	index_reader_free(rd);
}

static void
report_done(void *arg)
{
	struct serve_report *r = arg;

	conn_set_result(r->c, r->text != NULL ? "REPORT" : "ERROR", "-");
	if (r->text == NULL)
		conn_send_error(r->c, 503, "cannot read the index");
	else
		conn_send_text(r->c, 200,
		    r->q.json ? "application/json" : "text/plain", r->text,
		    r->len);
	free(r->text);
	free(r);
}

/*
 * /admin/misses: a report, so GET (and HEAD): reading it changes nothing,
 * so nothing is gained by refusing a GET.  It shows client addresses and
 * User-Agents, so it is under admin-access and admin-token like purges.
 */
static void
report_start(struct conn *c, struct serve *srv, struct route *rt)
{
	const char *why = NULL;
	struct serve_report *r;

	if (!admin_allowed(c, srv, METHOD_GET))
		return;
	if ((r = calloc(1, sizeof(*r))) == NULL) {
		conn_send_error(c, 503, "out of memory");
		return;
	}
	if (report_query(rt->arg, &r->q, &why) == -1) {
		free(r);
		conn_send_error(c, 400, why);
		return;
	}
	r->c = c;
	r->srv = srv;
	conn_wait(c);
	if (pool_submit(srv->d.pool, report_work, conn_inbox(c), report_done,
		r) == -1) {
		free(r);
		conn_send_error(c, 503, "server is shutting down");
	}
}

static void
send_metrics(struct conn *c)
{
	size_t len;
	char *text;

	if ((text = metrics_render(&len)) == NULL) {
		conn_send_error(c, 503, "out of memory");
		return;
	}
	conn_send_text(c, 200, "text/plain; version=0.0.4", text, len);
	free(text);
}

/*
 * The status page, made on a worker: the gauges it shows count what the
 * index holds, which is no work for an event loop.
 */
struct page {
	struct conn *c;
	struct serve *srv;
	char *html;
	size_t len;
};

static void
status_work(void *arg)
{
	struct page *p = arg;
	struct index_reader *rd = index_reader_new(p->srv->d.idx);

	p->html = status_render(p->srv->d.cfg, p->srv->d.ft, rd, &p->len);
	index_reader_free(rd);
}

static void
status_done(void *arg)
{
	struct page *p = arg;

	if (p->html == NULL)
		conn_send_error(p->c, 503, "out of memory");
	else
		conn_send_text(p->c, 200, "text/html; charset=utf-8", p->html,
		    p->len);
	free(p->html);
	free(p);
}

static void
status_start(struct conn *c, struct serve *srv)
{
	struct page *p;

	if ((p = calloc(1, sizeof(*p))) == NULL) {
		conn_send_error(c, 503, "out of memory");
		return;
	}
	p->c = c;
	p->srv = srv;
	conn_wait(c);
	if (pool_submit(srv->d.pool, status_work, conn_inbox(c), status_done,
		p) == -1) {
		free(p);
		conn_send_error(c, 503, "server is shutting down");
	}
}

/* 1 when the status class is open to c; nothing is answered. */
static int
access_check_quiet(struct serve *srv, struct conn *c)
{
	struct access_who who;
	const char *why;

	who_of(c, &who);
	return access_check(srv->d.access, ACCESS_STATUS, &who, &why) ==
	    ACCESS_ALLOW;
}

/* 1 when the client names text/html in Accept: a browser. */
static int
wants_html(const struct request *req)
{
	const char *p = req->accept.p;
	size_t i;

	for (i = 0; p != NULL && i + 9 <= req->accept.n; i++)
		if (strncasecmp(p + i, "text/html", 9) == 0)
			return 1;
	return 0;
}

/* ------------------------------------------------------------ artifacts */

static enum metrics_endpoint
metrics_endpoint_of(enum route_endpoint ep)
{
	switch (ep) {
	case ROUTE_DEBUGINFO:
		return METRICS_EP_DEBUGINFO;
	case ROUTE_EXECUTABLE:
		return METRICS_EP_EXECUTABLE;
	case ROUTE_SECTION:
		return METRICS_EP_SECTION;
	case ROUTE_SOURCE:
		return METRICS_EP_SOURCE;
	default:
		return METRICS_EP_OTHER;
	}
}

/*
 * The resolver's answer as an HTTP response: a file by sendfile, a growing
 * file as it grows, or the answer table's row for an outcome.
 */
static void
artifact_answer(void *arg, const struct resolve_answer *a)
{
	struct conn *c = arg;
	int section = a->rt->endpoint == ROUTE_SECTION;
	const struct answer_row *row;
	struct artifact art;
	int status;

	conn_set_result(c, answer_label(a->result), a->source);
	metrics_request(metrics_endpoint_of(a->rt->endpoint), a->result);
	if (a->kind == RESOLVE_OUTCOME) {
		row = answer_row(a->outcome);
		status = answer_status(a->outcome, section);
		switch (row->seconds) {
		case ANSWER_MAX_AGE:
			conn_send_miss(c, a->why, a->seconds);
			break;
		case ANSWER_RETRY_AFTER:
			conn_send_retry(c, status, a->why, a->seconds);
			break;
		case ANSWER_NO_SECONDS:
			conn_send_error(c, status, a->why);
			break;
		}
		return;
	}
	memset(&art, 0, sizeof(art));
	art.size = a->size;
	art.mtime = (time_t)a->mtime;
	response_etag(&art, a->etag_size, a->etag_mtime_ns, a->offset);
	art.file = a->file;
	art.meta = a->meta;
	art.cache = answer_label(a->result);
	art.max_age = a->max_age;
	if (a->kind == RESOLVE_STREAM)
		conn_send_stream(c, a->fd, &art, a->avail, a->avail_arg);
	else
		conn_send_file(c, a->fd, a->offset, &art);
}

static void
artifact_wake(void *arg)
{
	conn_stream_wake(arg);
}

static void
artifact_on_end(void *arg, void (*fn)(void *), void *fnarg)
{
	conn_on_end(arg, fn, fnarg);
}

static void
artifact_wait(void *arg)
{
	conn_wait(arg);
}

static const struct resolve_client_ops artifact_client = {
	artifact_answer,
	artifact_wake,
	artifact_on_end,
	artifact_wait,
};

/* Who asks for an artifact, as the resolver sees it. */
void
serve_origin(struct conn *c, struct resolve_origin *o)
{
	const struct request *req = conn_request(c);

	o->peer = conn_peer_addr(c);
	o->user_agent.p = req->user_agent.p;
	o->user_agent.n = req->user_agent.n;
	o->forwarded_for.p = req->forwarded_for.p;
	o->forwarded_for.n = req->forwarded_for.n;
	o->via.p = req->via.p;
	o->via.n = req->via.n;
	o->maxsize = response_maxsize(req);
	o->range = req->range.p != NULL;
}

static void
artifact_start(struct serve_thread *st, struct conn *c, const struct route *rt)
{
	struct resolve_origin o;
	struct resolve_client cl = { &artifact_client, c, &o, 0 };

	serve_origin(c, &o);
	resolve_start(&st->rt, &cl, rt, RESOLVE_ALL);
}

/* ------------------------------------------------------------- requests */

static void
serve_request(struct conn *c, void *state)
{
	struct serve_thread *st = state;
	const struct request *req = conn_request(c);
	const char *why = NULL;
	struct route rt;
	int rc;

	rc = route_parse(&rt, req->target.p, req->target.n, &why);
	if (rc != 0) {
		metrics_request(METRICS_EP_OTHER, METRICS_BAD);
		conn_send_error(c, rc, why);
		return;
	}
	if (req->method == METHOD_POST && rt.endpoint != ROUTE_PURGE) {
		conn_send_not_allowed(c, "GET, HEAD");
		return;
	}
	if (req->method == METHOD_PUT) {
		if (rt.endpoint != ROUTE_DEBUGINFO &&
		    rt.endpoint != ROUTE_EXECUTABLE)
			conn_send_not_allowed(c, "GET, HEAD");
		else if (class_allowed(c, st->srv, ACCESS_UPLOAD))
			upload_start(&st->srv->ud, c, &rt);
		return;
	}
	switch (rt.endpoint) {
	case ROUTE_BANNER:
		/* Browsers get the status page, when it is open to them. */
		if (wants_html(req) && access_check_quiet(st->srv, c))
			status_start(c, st->srv);
		else
			conn_send_text(c, 200, "text/plain", banner,
			    sizeof(banner) - 1);
		return;
	case ROUTE_METRICS:
		if (class_allowed(c, st->srv, ACCESS_METRICS))
			send_metrics(c);
		return;
	case ROUTE_PURGE:
		purge_start(c, st->srv, &rt);
		return;
	case ROUTE_METADATA:
		if (class_allowed(c, st->srv, ACCESS_METADATA)) {
			struct resolve_origin o;

			serve_origin(c, &o);
			metadata_start(&st->srv->md, c, rt.arg, &o);
		}
		return;
	case ROUTE_MISSES:
		report_start(c, st->srv, &rt);
		return;
	case ROUTE_STATUS:
		if (class_allowed(c, st->srv, ACCESS_STATUS))
			status_start(c, st->srv);
		return;
	case ROUTE_DEBUGINFO:
	case ROUTE_EXECUTABLE:
	case ROUTE_SECTION:
	case ROUTE_SOURCE:
		if (class_allowed(c, st->srv, ACCESS_READ))
			artifact_start(st, c, &rt);
		return;
	}
}

static void *
serve_thread_start(void *arg, struct event_base *base, struct pool_inbox *inbox)
{
	struct serve_thread *st;

	if ((st = calloc(1, sizeof(*st))) == NULL)
		return NULL;
	st->srv = arg;
	st->rt.d = st->srv->d.rd;
	st->rt.rd = index_reader_new(st->srv->d.idx);
	st->rt.base = base;
	st->rt.inbox = inbox;
	if (st->rt.rd == NULL)
		log_warnx("%s: no index reader; requests will get 503",
		    __func__);
	return st;
}

static void
serve_thread_stop(void *state)
{
	struct serve_thread *st = state;

	index_reader_free(st->rt.rd);
	free(st);
}

struct serve *
serve_new(const struct serve_deps *deps)
{
	struct serve *srv;

	if ((srv = calloc(1, sizeof(*srv))) == NULL)
		return NULL;
	srv->d = *deps;
	srv->md.cfg = deps->cfg;
	srv->md.idx = deps->idx;
	srv->md.pool = deps->pool;
	srv->md.upstreams = deps->rd->upstreams;
	srv->md.via_token = deps->rd->via_token;
	srv->ud.cfg = deps->cfg;
	srv->ud.idx = deps->idx;
	srv->ud.bs = deps->bs;
	srv->ud.pool = deps->pool;
	return srv;
}

void
serve_free(struct serve *srv)
{
	free(srv);
}

void
serve_handler(struct serve *srv, struct http_handler *handler)
{
	handler->thread_start = serve_thread_start;
	handler->thread_stop = serve_thread_stop;
	handler->request = serve_request;
	handler->arg = srv;
}
