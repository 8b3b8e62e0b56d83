/*
 * resolver/source.h: the one interface every source implements.
 *
 * A source has two sides.  Its lookup runs on the request's loop and
 * answers the request (a file it holds, or an outcome), passes
 * (SRC_ABSENT: the next source of the table), or leaves the request
 * waiting (SRC_PENDING) for a worker's job or for a flight (rq_produce).
 * Its produce fills a flight through the producer core
 * (resolver/produce.h): it writes the bytes, or hands the same flight to
 * the next source of the table that produces (produce_absent), so that
 * one herd costs one lookup per source.
 *
 * The order of the sources is written once, in sources/table.c.  No
 * source calls another's code: what two sources share (the package pass)
 * is a module of its own.  A new source is one file, one line of the table
 * and one unit test.
 */
#ifndef RESOLVER_SOURCE_H
#define RESOLVER_SOURCE_H

struct prod;
struct resolve_deps;
struct rq;

enum src_result {
	SRC_ABSENT, /* not here: the next source */
	SRC_ANSWERED, /* the request has its answer */
	SRC_PENDING, /* a job or a flight will resume the (kept) request */
};

struct source {
	const char *name; /* as the access log and flight labels show it */
	/*
	 * Holds files, or gets them from where they are kept (local files,
	 * the cache, packages, repositories, the object store); else it only
	 * remembers or forwards (negative entries, upstreams), which a
	 * request of RESOLVE_HELD reach does not ask.
	 */
	int held;
	/* The request side, on the request's loop; NULL: none. */
	enum src_result (*lookup)(struct rq *rq);
	/*
	 * The flight side; NULL: the source never produces.  It runs on the
	 * producers' loop, or on whatever thread made the flight when
	 * produce_anywhere (the source takes its own locks).
	 */
	void (*produce)(struct prod *p);
	int produce_anywhere;
	/*
	 * Taken (take 1) and given back (0) around making one of its
	 * flights and running produce there, for a source whose produce
	 * joins work that meets flights of its own (a package pass).  NULL:
	 * none.
	 */
	void (*lock)(const struct resolve_deps *d, int take);
	/*
	 * On the producers' loop, once the flight's outcome is known (the
	 * final check passed or failed, or the fetch ended): the source's own
	 * accounting (a breaker, a corrupt object deleted).  NULL: none.
	 */
	void (*judged)(struct prod *p);
	/*
	 * On the worker of the final check, the moment p's bytes passed it and
	 * before readers may finish: a hit to count.  NULL: none.
	 */
	void (*verified)(struct prod *p);
	/* A producer's data (prod.data) is no more: free it.  NULL: none. */
	void (*release)(void *data);
	/*
	 * A miss or failure of its flights is remembered (a negative or an
	 * error entry); else the source's own state says what failed.
	 */
	int remembers;
};

#endif /* RESOLVER_SOURCE_H */
