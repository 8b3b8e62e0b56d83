/*
 * daemon/serve.c: the request handler: route each request to its endpoint.
 *
 * Artifacts (debuginfo, executable, section, source) go to the resolver
 * (daemon/resolve.c), where the whole request path is, and /metadata to
 * daemon/metadata.c; the banner,
 * /metrics and the admin endpoint are answered here.  Each event-loop
 * thread has its own index reader, which the resolver uses.
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
#include "daemon/log.h"
#include "daemon/metadata.h"
#include "daemon/metrics.h"
#include "daemon/pool.h"
#include "daemon/resolve.h"
#include "daemon/route.h"

static const char banner[] =
    PACKAGE_NAME " " PACKAGE_VERSION ": a debuginfod-compatible server\n"
		 "GET /buildid/ID/debuginfo\n"
		 "GET /buildid/ID/executable\n"
		 "GET /buildid/ID/section/NAME\n"
		 "GET /buildid/ID/source/PATH\n"
		 "GET /metadata?key=file|glob|buildid&value=V\n"
		 "GET /metrics\n";

struct serve {
	struct serve_deps d;
	struct resolve_deps rd;
	struct metadata_deps md;
	/* This process's name in Via headers, to see its own loops. */
	char via_token[40];
};

struct serve_thread {
	struct serve *srv;
	struct resolve_thread rt;
};

/* ---------------------------------------------------------------- admin */

/* 1 when an endpoint open to who (admin-access, metrics-access) is to c. */
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

struct purge {
	struct conn *c;
	struct serve *srv;
	char query[ROUTE_PATH_MAX + 1];
	int status;
	char text[256];
};

static void
purge_work(void *arg)
{
	struct purge *p = arg;
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
		rc = blob_purge(p->srv->d.bs, &id, NULL, &blobs, err,
		    sizeof(err));
		if (rc == 0)
			rc = neg_purge(p->srv->d.idx, &id, &negs, err,
			    sizeof(err));
	} else if (strcmp(p->query, "upstream") == 0 && val != NULL) {
		config_url_public(val, url, sizeof(url));
		rc = blob_purge(p->srv->d.bs, NULL, url, &blobs, err,
		    sizeof(err));
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
	struct purge *p = arg;

	conn_set_result(p->c, p->status == 200 ? "PURGE" : "ERROR", "-");
	if (p->status == 200)
		conn_send_text(p->c, 200, "text/plain", p->text,
		    strlen(p->text));
	else
		conn_send_error(p->c, p->status, p->text);
	free(p);
}

static void
purge_start(struct conn *c, struct serve *srv, const struct route *rt)
{
	struct purge *p;

	if (!access_allowed(c, srv->d.cfg->admin_access)) {
		conn_send_error(c, 403,
		    "the admin endpoint is not open to you");
		return;
	}
	/*
	 * An action, never a GET: a redirect, a crawler or a browser page
	 * must not be able to trigger it.
	 */
	if (conn_request(c)->method != METHOD_POST) {
		conn_send_not_allowed(c, "POST");
		return;
	}
	if (srv->d.admin_token != NULL &&
	    !admin_token_ok(conn_request(c)->authorization,
		srv->d.admin_token)) {
		conn_send_error(c, 401,
		    "admin requests need Authorization: Bearer with the "
		    "admin-token");
		return;
	}
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
	switch (rt.endpoint) {
	case ROUTE_BANNER:
		conn_send_text(c, 200, "text/plain", banner,
		    sizeof(banner) - 1);
		return;
	case ROUTE_METRICS:
		if (!access_allowed(c, st->srv->d.cfg->metrics_access))
			conn_send_error(c, 403, "/metrics is not open to you");
		else
			send_metrics(c);
		return;
	case ROUTE_PURGE:
		purge_start(c, st->srv, &rt);
		return;
	case ROUTE_METADATA:
		metadata_start(&st->srv->md, c, rt.arg);
		return;
	case ROUTE_DEBUGINFO:
	case ROUTE_EXECUTABLE:
	case ROUTE_SECTION:
	case ROUTE_SOURCE:
		resolve_start(&st->rt, c, &rt);
		return;
	}
}

static void *
serve_thread_start(void *arg)
{
	struct serve_thread *st;

	if ((st = calloc(1, sizeof(*st))) == NULL)
		return NULL;
	st->srv = arg;
	st->rt.d = &st->srv->rd;
	st->rt.rd = index_reader_new(st->srv->d.idx);
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

	uint64_t r = 0;
	int fd;

	if ((srv = calloc(1, sizeof(*srv))) == NULL)
		return NULL;
	srv->d = *deps;
	if ((fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)) != -1) {
		if (read(fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
			r = 0;
		close(fd);
	}
	if (r == 0)
		r = (uint64_t)getpid() * 2654435761u ^ (uint64_t)time(NULL);
	snprintf(srv->via_token, sizeof(srv->via_token), "dbgmirror-%016llx",
	    (unsigned long long)r);
	srv->rd.cfg = deps->cfg;
	srv->rd.idx = deps->idx;
	srv->rd.pool = deps->pool;
	srv->rd.bs = deps->bs;
	srv->rd.fill = deps->fill;
	srv->rd.via_token = srv->via_token;
	srv->md.cfg = deps->cfg;
	srv->md.idx = deps->idx;
	srv->md.pool = deps->pool;
	srv->md.fill = deps->fill;
	srv->md.via_token = srv->via_token;
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
