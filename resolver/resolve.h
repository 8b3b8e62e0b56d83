/*
 * resolver/resolve.h: the request path of an artifact (debuginfo,
 * executable, section, source of a build-id), one state machine for every
 * asker: a connection (daemon/serve.c) or a consumer inside the daemon
 * (the section cut, the symbolizer).  See resolver/resolve.c.
 *
 * The resolver knows nothing of HTTP: it answers a client (struct
 * resolve_client) with a file, a growing file, or an outcome of the one
 * answer table (resolver/answer.h), and the client turns that into bytes.
 */
#ifndef RESOLVER_RESOLVE_H
#define RESOLVER_RESOLVE_H

#include <stddef.h>
#include <stdint.h>

#include "cache/meta.h"
#include "resolver/answer.h"

struct blobstore;
struct config;
struct event_base;
struct flight_table;
struct index;
struct index_reader;
struct misses;
struct objstore;
struct passes;
struct pool;
struct pool_inbox;
struct producers;
struct repos;
struct route;
struct source;
struct upstreams;

/*
 * What requests are answered from; all must outlive the resolver.  Each
 * source takes its own state from here (NULL: that source has nothing).
 */
struct resolve_deps {
	const struct config *cfg;
	struct index *idx;
	struct pool *pool;
	struct blobstore *bs;
	struct flight_table *ft;
	struct producers
	    *prod; /* NULL: no fills (nothing beyond local files) */
	struct passes *packages; /* package members' passes */
	struct repos *repos; /* remote repositories */
	struct objstore *objstore; /* the object store of a fleet */
	struct upstreams *upstreams; /* upstream debuginfods */
	const char *via_token; /* this process's name in Via headers */
	struct misses *misses; /* NULL: not-found requests are not recorded */
	/* The order of the sources, NULL-terminated: sources_table, or a test's. */
	const struct source *const *sources;
};

/* Per event-loop thread: its index reader.  NULL rd: answers are 503. */
struct resolve_thread {
	const struct resolve_deps *d; /* of clients that bring none */
	struct index_reader *rd;
	struct event_base *base; /* the thread's loop */
	struct pool_inbox *inbox; /* completions on that loop */
};

/* A piece of text that may be absent (p NULL). */
struct resolve_text {
	const char *p;
	size_t n;
};

/*
 * Who asked, as far as upstreams and reports see it: the strings must live
 * as long as the request (a connection's request buffer does).
 */
struct resolve_origin {
	const char *peer; /* the peer's address, as text */
	struct resolve_text user_agent;
	struct resolve_text forwarded_for; /* X-Forwarded-For */
	struct resolve_text via; /* Via */
	uint64_t maxsize; /* X-DEBUGINFOD-MAXSIZE; 0: none */
	int range; /* a Range request: it waits for the verdict */
};

/* What a request may ask. */
enum resolve_reach {
	RESOLVE_ALL, /* every source, remembered misses and upstreams too */
	/*
	 * Only sources that hold the file or can get it from where it is
	 * kept (local files, the cache, packages, repositories, the object
	 * store): a whole file to cut a section from, which the upstreams
	 * are asked for only as the section itself.
	 */
	RESOLVE_HELD,
};

/* How a client is answered: one of these, once. */
enum resolve_answer_kind {
	RESOLVE_FILE, /* a whole file or part of one, in fd */
	RESOLVE_STREAM, /* a file still being written: avail says how far */
	RESOLVE_OUTCOME, /* no file: an outcome of the answer table */
};

struct resolve_answer {
	enum resolve_answer_kind kind;
	const struct route *rt; /* what was asked */
	const char *source; /* where it came from, for the access log */
	/*
	 * The source of the table that gave the file or the outcome (its
	 * name: "local", "cache", "package", "upstream"...); NULL when none
	 * did (every source passed).
	 */
	const char *by;
	enum metrics_result result; /* HIT, MISS, JOINED, NEGATIVE, ... */
	/* FILE, STREAM. */
	int fd; /* the client's to close */
	uint64_t offset; /* of the artifact in fd */
	uint64_t size; /* bytes of the artifact */
	int64_t mtime; /* Last-Modified */
	int64_t etag_mtime_ns; /* with size and offset, the validator */
	uint64_t etag_size;
	const char *file; /* a local file's path, for X-DEBUGINFOD-FILE */
	/* What the file's source said of it, for X-DEBUGINFOD-*; or NULL. */
	const struct cache_meta *meta;
	unsigned max_age; /* Cache-Control max-age; 0: none */
	/* STREAM: bytes of fd that may go out now; -1 when it failed. */
	int (*avail)(void *arg, uint64_t *n);
	void *avail_arg;
	/* OUTCOME. */
	enum answer_outcome outcome;
	const char *why; /* NULL: the table's text */
	unsigned seconds; /* max-age of a 404, Retry-After of a 502/503 */
	/*
	 * A source the request went past without its answer (a breaker
	 * open, a store that failed, repositories not ready), in words:
	 * a not-found then says less than that nothing has the file.
	 * NULL when every source asked answered.
	 */
	const char *unasked;
};

/*
 * The asker.  Everything is called on the thread whose loop the request
 * runs on (resolve_thread.base).
 */
struct resolve_client_ops {
	/*
	 * The answer, once; the strings in a live until on_end's function
	 * has run (or answer returns, for a client that registered none).
	 */
	void (*answer)(void *arg, const struct resolve_answer *a);
	/* A stream has more bytes, or failed: ask avail again. */
	void (*wake)(void *arg);
	/*
	 * fn(fnarg) is to run once when the client is done with the request
	 * (its answer sent, or the asker gone); NULL fn: forget it.
	 */
	void (*on_end)(void *arg, void (*fn)(void *), void *fnarg);
	/* The answer comes later (the request waits). */
	void (*wait)(void *arg);
};

struct resolve_client {
	const struct resolve_client_ops *ops;
	void *arg;
	const struct resolve_origin *origin;
	/*
	 * The client wants a whole, verified file (a consumer inside the
	 * daemon): never a stream, which it waits out.
	 */
	int whole;
	/*
	 * What the request is answered from, the configuration it was
	 * made under included (a connection's snapshot, daemon/snapshot.h):
	 * it must outlive the request.  NULL: the thread's (th->d).
	 */
	const struct resolve_deps *d;
	/*
	 * The client judges an upload against what is served
	 * (sources/upload.c): no remembered miss or failure answers it,
	 * every source is asked again (its fills too), and its not-found
	 * is no miss of the missing-id report.
	 */
	int judge;
};

/*
 * On th's loop: answer rt for client cl, now or later.  rt and the client
 * are copied when the answer comes later.
 */
void resolve_start(struct resolve_thread *th, const struct resolve_client *cl,
    const struct route *rt, enum resolve_reach reach);

/*
 * The loop guard of every request forwarded upstream: NULL when it may be,
 * else why not (it went through this server already, as its Via says, or
 * its X-Forwarded-For has max_forwarded_for entries).
 */
const char *resolve_loop(const struct resolve_origin *o, const char *via_token,
    unsigned max_forwarded_for);
/* The X-Forwarded-For, Via and User-Agent to send upstream for o. */
void resolve_forward_headers(const struct resolve_origin *o,
    const char *via_token, char *xff, size_t xfflen, char *via, size_t vialen,
    char *ua, size_t ualen);

#endif /* RESOLVER_RESOLVE_H */
