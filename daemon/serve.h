/*
 * daemon/serve.h: the debuginfod endpoints, answered from the index.
 */
#ifndef DAEMON_SERVE_H
#define DAEMON_SERVE_H

#include "daemon/http.h"

struct blobstore;
struct config;
struct fill;
struct repos;
struct flight_table;
struct index;
struct misses;
struct pool;
struct serve;

/* What the server answers from; all must outlive it. */
struct serve_deps {
	const struct config *cfg;
	struct index *idx;
	struct pool *pool;
	struct blobstore *bs;
	struct flight_table *ft;
	struct fill *fill; /* NULL: no upstreams */
	struct repos *repos; /* NULL: no remote repositories */
	struct misses *misses; /* NULL: no missing-id report */
	struct access *access; /* the access rules */
};

struct serve *serve_new(const struct serve_deps *deps);
void serve_free(struct serve *srv);

/* Fill in the handler to give httpd_new(). */
void serve_handler(struct serve *srv, struct http_handler *handler);

#endif /* DAEMON_SERVE_H */
