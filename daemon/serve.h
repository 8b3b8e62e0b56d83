/*
 * daemon/serve.h: the debuginfod endpoints, answered from the index.
 */
#ifndef DAEMON_SERVE_H
#define DAEMON_SERVE_H

#include "daemon/http.h"

struct index;
struct pool;
struct serve;

/* idx and pool must outlive the server. */
struct serve *serve_new(struct index *idx, struct pool *pool);
void serve_free(struct serve *srv);

/* Fill in the handler to give httpd_new(). */
void serve_handler(struct serve *srv, struct http_handler *handler);

#endif /* DAEMON_SERVE_H */
