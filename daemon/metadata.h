/*
 * daemon/metadata.h: GET /metadata?key=K&value=V, answered from the path
 * index and federated to the upstreams.
 */
#ifndef DAEMON_METADATA_H
#define DAEMON_METADATA_H

struct config;
struct conn;
struct index;
struct pool;
struct resolve_origin;
struct upstreams;

/*
 * What queries are answered from; all must outlive every query.  The
 * settings are those of each query's exchange (conn_snapshot).
 */
struct metadata_deps {
	struct index *idx;
	struct pool *pool;
	struct upstreams *upstreams; /* NULL: no upstreams */
	const char *via_token; /* this process's name in Via headers */
};

/*
 * On c's thread: answer the query (the raw query string of the target),
 * asked by o, now or later when the index's walk and the upstreams have
 * answered.
 */
void metadata_start(const struct metadata_deps *d, struct conn *c,
    const char *query, const struct resolve_origin *o);

#endif /* DAEMON_METADATA_H */
