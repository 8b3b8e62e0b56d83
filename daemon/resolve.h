/*
 * daemon/resolve.h: the request path of an artifact (debuginfo,
 * executable, section, source), one state machine; see resolve.c.
 */
#ifndef DAEMON_RESOLVE_H
#define DAEMON_RESOLVE_H

struct blobstore;
struct config;
struct conn;
struct fill;
struct index;
struct index_reader;
struct misses;
struct pool;
struct route;

/* What requests are answered from; all must outlive the resolver. */
struct resolve_deps {
	const struct config *cfg;
	struct index *idx;
	struct pool *pool;
	struct blobstore *bs;
	struct fill *fill; /* NULL: no fills (nothing beyond local files) */
	const char *via_token; /* this process's name in Via headers */
	struct misses *misses; /* NULL: not-found requests are not recorded */
};

/* Per event-loop thread: its index reader.  NULL rd: answers are 503. */
struct resolve_thread {
	const struct resolve_deps *d;
	struct index_reader *rd;
};

/*
 * On c's thread: answer rt, an artifact endpoint, now or later (the
 * connection waits).  rt is copied when the answer comes later.
 */
void resolve_start(struct resolve_thread *th, struct conn *c,
    const struct route *rt);

#endif /* DAEMON_RESOLVE_H */
