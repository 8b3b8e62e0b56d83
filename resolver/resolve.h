/*
 * resolver/resolve.h: the request path of an artifact (debuginfo,
 * executable, section, source), one state machine; see resolve.c.
 */
#ifndef RESOLVER_RESOLVE_H
#define RESOLVER_RESOLVE_H

#include <stddef.h>

struct blobstore;
struct config;
struct conn;
struct fill;
struct repos;
struct index;
struct index_reader;
struct misses;
struct pool;
struct request;
struct route;

/* What requests are answered from; all must outlive the resolver. */
struct resolve_deps {
	const struct config *cfg;
	struct index *idx;
	struct pool *pool;
	struct blobstore *bs;
	struct fill *fill; /* NULL: no fills (nothing beyond local files) */
	struct repos *repos; /* NULL: no remote repositories */
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

/*
 * The loop guard of every request forwarded upstream: NULL when req may
 * be, else why not (it went through this server already, as its Via
 * says, or its X-Forwarded-For has max_forwarded_for entries).
 */
const char *resolve_loop(const struct request *req, const char *via_token,
    unsigned max_forwarded_for);
/*
 * The X-Forwarded-For, Via and User-Agent to send upstream for c's
 * request, this server being via_token.
 */
void resolve_forward_headers(struct conn *c, const char *via_token, char *xff,
    size_t xfflen, char *via, size_t vialen, char *ua, size_t ualen);

#endif /* RESOLVER_RESOLVE_H */
