/*
 * daemon/serve.h: the debuginfod endpoints, answered from the index.
 */
#ifndef DAEMON_SERVE_H
#define DAEMON_SERVE_H

#include "daemon/http.h"

struct blobstore;
struct flight_table;
struct index;
struct pool;
struct resolve_deps;
struct resolve_origin;
struct serve;

/*
 * The daemon's scans, as /admin/rescan asks for them and reports them
 * (daemon/main.c).  Both on any thread.
 */
struct serve_scans {
	/* Ask for a rescan (the one running, if any, does not count): its
	 * number. */
	uint64_t (*request)(void *arg);
	/* Rescans asked for so far, the last one a finished scan covered,
	 * and whether a scan runs. */
	void (
	    *counts)(void *arg, uint64_t *asked, uint64_t *done, int *running);
	void *arg;
};

/*
 * What the server answers from; all must outlive it.  The configuration,
 * the access rules and the request path's settings are each request's
 * snapshot's (conn_snapshot, daemon/snapshot.h).
 */
struct serve_deps {
	struct index *idx;
	struct pool *pool;
	struct blobstore *bs;
	struct flight_table *ft;
	const struct resolve_deps *rd; /* the request path's parts */
	const struct serve_scans *scans; /* NULL: no /admin/rescan */
};

struct serve *serve_new(const struct serve_deps *deps);
void serve_free(struct serve *srv);

/* Who asks c's request, as the resolver sees it (resolver/resolve.h). */
void serve_origin(struct conn *c, struct resolve_origin *o);

/* Fill in the handler to give httpd_new(). */
void serve_handler(struct serve *srv, struct http_handler *handler);
/* Start-up, once httpd_new() bound: the status page shows its addresses. */
void serve_set_httpd(struct serve *srv, const struct httpd *h);

#endif /* DAEMON_SERVE_H */
