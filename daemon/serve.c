/*
 * daemon/serve.c: the request handler: route each request to its endpoint.
 *
 * Artifacts (debuginfo, executable, section, source) go to the resolver
 * (resolver/resolve.c), where the whole request path is, /metadata to
 * daemon/metadata.c and /symbolicate to daemon/symbolicate.c; the banner,
 * /metrics, /status (daemon/status.c) and the admin endpoints (purges,
 * rescans, the settings dbgmirror takes from the daemon, and the
 * missing-id report of daemon/misses.c) are answered here.  Each
 * event-loop thread has its own index reader, which the resolver uses.
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
#include "cache/misses.h"
#include "cache/negative.h"
#include "conf/config.h"
#include "autoconf.h"
#include "daemon/access.h"
#include "daemon/clock.h"
#include "daemon/json.h"
#include "daemon/log.h"
#include "daemon/metadata.h"
#include "daemon/metrics.h"
#include "daemon/misses.h"
#include "daemon/pool.h"
#include "daemon/response.h"
#include "daemon/route.h"
#include "daemon/snapshot.h"
#include "resolver/resolve.h"
#include "daemon/status.h"
#include "daemon/symbolicate.h"
#include "daemon/symtabs.h"
#include "sources/upload.h"

static const char banner[] =
    PACKAGE_NAME " " PACKAGE_VERSION ": a debuginfod-compatible server\n"
		 "GET /buildid/ID/debuginfo\n"
		 "GET /buildid/ID/executable\n"
		 "GET /buildid/ID/section/NAME\n"
		 "GET /buildid/ID/source/PATH\n"
		 "GET /buildid/ID/symbolicate?addr=A,B...\n"
		 "POST /symbolicate\n"
		 "GET /metadata?key=file|glob|buildid&value=V\n"
		 "GET /metrics\n"
		 "GET /status\n";

struct serve {
	struct serve_deps d;
	const struct httpd *httpd; /* NULL until serve_set_httpd() */
	struct metadata_deps md;
	struct upload_deps ud;
	struct symbolicate_deps sy;
};

struct serve_thread {
	struct serve *srv;
	struct resolve_thread rt;
	struct symtabs_thread *tabs; /* NULL: /symbolicate gets 503 */
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
	who->client_ca = conn_tls_ca(c);
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
	v = access_check(conn_snapshot(c)->access, cls, &who, &why);
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
	uint64_t blobs = 0, negs = 0, ids = 0;
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
	} else if (strcmp(p->query, "misses") == 0) {
		rc = miss_purge(p->srv->d.idx, NULL, &ids, err, sizeof(err));
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
		/* Everything known of the id: its misses too. */
		if (rc == 0)
			rc = miss_purge(p->srv->d.idx, &id, &ids, err,
			    sizeof(err));
	} else if (strcmp(p->query, "upstream") == 0 && val != NULL) {
		config_url_public(val, url, sizeof(url));
		rc = blob_purge(p->srv->d.bs, NULL, url, clock_stamp_ns(),
		    &blobs, err, sizeof(err));
	} else {
		p->status = 400;
		snprintf(p->text, sizeof(p->text),
		    "purge what? id=ID, negative, misses or upstream=URL");
		return;
	}
	if (rc == -1) {
		p->status = 503;
		snprintf(p->text, sizeof(p->text), "purge failed: %.200s", err);
		return;
	}
	snprintf(p->text, sizeof(p->text),
	    "purged %llu entries, %llu negative, %llu missing ids\n",
	    (unsigned long long)blobs, (unsigned long long)negs,
	    (unsigned long long)ids);
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
 * actions, GET for reports) under the access rules of the admin class
 * (admin-access and admin-token without access = admin lines); else 0,
 * having answered.
 */
static int
admin_allowed(struct conn *c, struct serve *srv, enum request_method method)
{
	if (method == METHOD_POST && conn_request(c)->method != METHOD_POST) {
		conn_send_not_allowed(c, "POST");
		return 0;
	}
	return class_allowed(c, srv, ACCESS_ADMIN);
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
	const struct config *cfg; /* the exchange's, held while it waits */
	char *html;
	size_t len;
};

static void
status_work(void *arg)
{
	struct page *p = arg;
	struct status_deps sd = { p->cfg, p->srv->d.ft, p->srv->d.rd->repos,
		p->srv->httpd, NULL };

	sd.rd = index_reader_new(p->srv->d.idx);
	p->html = status_render(&sd, &p->len);
	index_reader_free(sd.rd);
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
	p->cfg = conn_snapshot(c)->cfg;
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
	return access_check(conn_snapshot(c)->access, ACCESS_STATUS, &who,
		   &why) == ACCESS_ALLOW;
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

/* The endpoint label of a route's requests in /metrics. */
static enum metrics_endpoint
metrics_endpoint_of_route(enum route_endpoint ep)
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
	case ROUTE_METADATA:
		return METRICS_EP_METADATA;
	case ROUTE_SYMBOLICATE:
	case ROUTE_SYMBOLICATE_ID:
		return METRICS_EP_SYMBOLICATE;
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
	metrics_request(metrics_endpoint_of_route(a->rt->endpoint), a->result);
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
	struct resolve_client cl = { .ops = &artifact_client,
		.arg = c,
		.origin = &o,
		.d = conn_snapshot(c)->rd };

	serve_origin(c, &o);
	resolve_start(&st->rt, &cl, rt, RESOLVE_ALL);
}

/* ------------------------------------------- what dbgmirror asks of it */

/* A JSON answer: b, or a 503 when it did not fit. */
static void
send_json(struct conn *c, int status, struct jbuf *b)
{
	conn_set_result(c, "ADMIN", "-");
	if (b->full || jbuf_put(b, "\n", 1) == -1)
		conn_send_error(c, 503, "out of memory");
	else
		conn_send_text(c, status, "application/json", b->p, b->len);
	jbuf_free(b);
}

/* Append "name":"value" (a JSON string; NULL: null) after a comma. */
static void
json_member(struct jbuf *b, const char *name, const char *value)
{
	jbuf_put(b, ",\"", 2);
	jbuf_put(b, name, strlen(name));
	jbuf_put(b, "\":", 2);
	if (value == NULL)
		jbuf_put(b, "null", 4);
	else
		jbuf_str(b, value, strlen(value));
}

/*
 * GET /admin/config: what a dbgmirror command takes from the running
 * daemon, since the daemon may have had it from its command line alone:
 * where its index and uploads are, the limits its reports show, and the
 * upstreams a lookup would go to (their public names, blank-separated).
 * No secret is among them.
 */
static void
config_answer(struct conn *c, struct serve *srv)
{
	const struct config *cfg = conn_snapshot(c)->cfg;
	struct jbuf b = { NULL, 0, 0, 64 * 1024, 0 };
	char text[256];
	size_t i, n = 0;

	if (!admin_allowed(c, srv, METHOD_GET))
		return;
	snprintf(text, sizeof(text), "{\"version\":\"%s\",\"pid\":%ld",
	    PACKAGE_VERSION, (long)getpid());
	jbuf_put(&b, text, strlen(text));
	json_member(&b, "config_file", cfg->config_file);
	json_member(&b, "cache_dir", cfg->cache_dir);
	json_member(&b, "upload_dir", cfg->upload_dir);
	/* Their public names: no userinfo, no header. */
	for (i = 0; i < cfg->nupstreams; i++) {
		if (!cfg->upstreams[i].enabled)
			continue;
		if (n++ == 0)
			jbuf_put(&b, ",\"upstreams\":\"", 14);
		else
			jbuf_put(&b, " ", 1);
		jbuf_put(&b, cfg->upstreams[i].name,
		    strcspn(cfg->upstreams[i].name, "\"\\ "));
	}
	if (n > 0)
		jbuf_put(&b, "\"", 1);
	snprintf(text, sizeof(text),
	    ",\"index_map_size\":%llu,\"cache_size\":%llu,"
	    "\"upload_size\":%llu,\"negative_max\":%u}",
	    (unsigned long long)cfg->index_map_size,
	    (unsigned long long)cfg->cache_size,
	    (unsigned long long)cfg->upload_size, cfg->negative_max);
	jbuf_put(&b, text, strlen(text));
	send_json(c, 200, &b);
}

/*
 * /admin/rescan: POST asks for a rescan now (202, with its number); GET
 * says how far the scans got: the rescans asked for, the last one a
 * finished scan covered, and the scan record of the index (the running
 * scan's counts, or the last one's).  A rescan n is done once "done" is
 * n or more.
 */
static void
rescan_answer(struct conn *c, struct serve *srv)
{
	const struct request *req = conn_request(c);
	const struct serve_scans *sc = srv->d.scans;
	struct jbuf b = { NULL, 0, 0, 4096, 0 };
	struct index_reader *rd;
	struct index_scan rec;
	uint64_t n = 0, asked, done;
	int running;
	char text[1024];

	if (!admin_allowed(c, srv,
		req->method == METHOD_POST ? METHOD_POST : METHOD_GET))
		return;
	if (sc == NULL) {
		conn_send_error(c, 404, "this daemon has no scans");
		return;
	}
	if (req->method == METHOD_POST) {
		n = sc->request(sc->arg);
		log_info("rescan %llu asked for by %s", (unsigned long long)n,
		    conn_peer_addr(c));
	}
	sc->counts(sc->arg, &asked, &done, &running);
	memset(&rec, 0, sizeof(rec));
	if ((rd = index_reader_new(srv->d.idx)) != NULL &&
	    index_reader_begin(rd) == 0) {
		index_get_scan(rd, &rec);
		index_reader_end(rd);
	}
	index_reader_free(rd);
	snprintf(text, sizeof(text),
	    "{\"rescan\":%llu,\"asked\":%llu,\"done\":%llu,"
	    "\"running\":%s,\"started\":%lld,\"finished\":%lld,"
	    "\"files_seen\":%llu,\"files_new\":%llu,\"files_read\":%llu,"
	    "\"not_indexable\":%llu,\"removed\":%llu,"
	    "\"packages_seen\":%llu,\"packages_new\":%llu,"
	    "\"packages_read\":%llu,\"members\":%llu,\"ended\":%lld,"
	    "\"seconds\":%.3f,\"outcome\":\"%s\"}",
	    (unsigned long long)n, (unsigned long long)asked,
	    (unsigned long long)done, running ? "true" : "false",
	    (long long)rec.started, (long long)rec.finished,
	    (unsigned long long)rec.seen, (unsigned long long)rec.queued,
	    (unsigned long long)rec.read, (unsigned long long)rec.failed,
	    (unsigned long long)rec.removed, (unsigned long long)rec.pkg_seen,
	    (unsigned long long)rec.pkg_queued,
	    (unsigned long long)rec.packages, (unsigned long long)rec.members,
	    (long long)rec.ended, (double)rec.ended_ms / 1000,
	    rec.outcome == INDEX_SCAN_DONE            ? "complete"
		: rec.outcome == INDEX_SCAN_CANCELLED ? "cancelled"
						      : "failed");
	jbuf_put(&b, text, strlen(text));
	send_json(c, req->method == METHOD_POST ? 202 : 200, &b);
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
	conn_set_endpoint(c, metrics_endpoint_of_route(rt.endpoint));
	if (rt.endpoint == ROUTE_SYMBOLICATE && req->method != METHOD_POST) {
		conn_send_not_allowed(c, "POST");
		return;
	}
	if (req->method == METHOD_POST && rt.endpoint != ROUTE_PURGE &&
	    rt.endpoint != ROUTE_RESCAN && rt.endpoint != ROUTE_SYMBOLICATE) {
		conn_send_not_allowed(c, "GET, HEAD");
		return;
	}
	/* Only /symbolicate reads what a POST sends. */
	if (req->method == METHOD_POST && req->has_body &&
	    rt.endpoint != ROUTE_SYMBOLICATE) {
		conn_send_error(c, 400, "request bodies are not accepted");
		return;
	}
	if (req->method == METHOD_PUT) {
		if (rt.endpoint != ROUTE_DEBUGINFO &&
		    rt.endpoint != ROUTE_EXECUTABLE)
			conn_send_not_allowed(c, "GET, HEAD");
		else if (class_allowed(c, st->srv, ACCESS_UPLOAD)) {
			struct resolve_origin o;

			serve_origin(c, &o);
			upload_start(&st->srv->ud, &st->rt,
			    conn_snapshot(c)->rd, c, &rt, &o);
		}
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
	case ROUTE_ADMIN_CONFIG:
		config_answer(c, st->srv);
		return;
	case ROUTE_RESCAN:
		rescan_answer(c, st->srv);
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
	case ROUTE_SYMBOLICATE:
	case ROUTE_SYMBOLICATE_ID:
		if (!class_allowed(c, st->srv, ACCESS_SYMBOLICATE))
			return;
		if (st->tabs == NULL || st->srv->sy.tabs == NULL) {
			conn_send_error(c, 503, "symbol tables unavailable");
		} else {
			struct resolve_origin o;

			serve_origin(c, &o);
			symbolicate_start(&st->srv->sy, st->tabs, c, &rt, &o);
		}
		return;
	case ROUTE_SYMTAB:
		/* Asked for inside the daemon only: the store is the fleet's. */
		conn_send_error(c, 404, "no such endpoint");
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
	if (st->srv->sy.tabs != NULL &&
	    (st->tabs = symtabs_thread_new(st->srv->sy.tabs, &st->rt)) == NULL)
		log_warnx("%s: out of memory; /symbolicate will get 503",
		    __func__);
	return st;
}

static void
serve_thread_stop(void *state)
{
	struct serve_thread *st = state;

	symtabs_thread_free(st->tabs);
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
	srv->md.idx = deps->idx;
	srv->md.pool = deps->pool;
	srv->md.upstreams = deps->rd->upstreams;
	srv->md.via_token = deps->rd->via_token;
	srv->ud.idx = deps->idx;
	srv->ud.bs = deps->bs;
	srv->ud.pool = deps->pool;
	srv->sy.pool = deps->pool;
	srv->sy.tabs = deps->tabs;
	return srv;
}

void
serve_free(struct serve *srv)
{
	free(srv);
}

void
serve_set_httpd(struct serve *srv, const struct httpd *h)
{
	srv->httpd = h;
}

void
serve_handler(struct serve *srv, struct http_handler *handler)
{
	handler->thread_start = serve_thread_start;
	handler->thread_stop = serve_thread_stop;
	handler->request = serve_request;
	handler->arg = srv;
}
