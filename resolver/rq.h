/*
 * resolver/rq.h: the request record as sources see it, and what their
 * lookups answer with (resolver/resolve.c).  Only resolver/ and sources/
 * include it.
 *
 * Everything here runs on the request's loop, but the work functions a
 * lookup hands to a worker (rq_on_worker), which may only fill rq->f,
 * rq->status and rq->why.
 */
#ifndef RESOLVER_RQ_H
#define RESOLVER_RQ_H

#include <sys/stat.h>

#include <limits.h>
#include <stdint.h>

#include "cache/key.h"
#include "daemon/pool.h"
#include "daemon/route.h"
#include "resolver/resolve.h"
#include "resolver/source.h"

struct flight;
struct prod_what;

/* A file found for a request, open and checked (a worker's outcome). */
struct rq_found {
	int fd;
	struct stat st;
	uint64_t offset; /* of the artifact in the file */
	uint64_t size;
	char path[PATH_MAX];
};

struct rq {
	struct resolve_client
	    cl; /* its origin: the caller's, or own once kept */
	struct resolve_thread *th;
	const struct resolve_deps *d; /* the client's, or the thread's */
	const struct route *rt; /* the caller's, or own once kept */
	enum resolve_reach reach;
	unsigned step; /* the source in the table asked now */
	int in_txn; /* th->rd's read transaction is ours */
	int kept; /* on the heap */
	/* A worker's outcome. */
	int status; /* 0 found, 404 absent, else this server's failure */
	const char *why;
	void *src; /* the record of a source the request waits on */
	/*
	 * The most max-age a not-found answer may carry (0: as the answer
	 * says), for an id a source may have soon.
	 */
	unsigned max_age;
	struct cache_key key; /* rq_key's, once keyed */
	int keyed;
	/*
	 * The buffers last.  The record is initialised in one expression
	 * (resolve_start), so every field starts zero; the route's and the
	 * origin's copies live in struct rq_kept, not here, so that a hit
	 * clears 5 KB, not 9.
	 */
	struct rq_found f; /* written by the source that found the file */
	/* A source's word on why it passed, which a not-found adds; "" none. */
	char note[400];
	char unasked[200]; /* the first rq_unasked; "" none */
};

/* The cache kind of what rq asks for, and its key (made once per request). */
enum cache_kind rq_kind(const struct rq *rq);
void rq_key(struct rq *rq, struct cache_key *k);
/* 1 when rq asks for a section. */
int rq_section(const struct rq *rq);

/* Open th->rd's read transaction for rq, unless it is: 0, or -1. */
int rq_txn(struct rq *rq);
void rq_txn_end(struct rq *rq);

/*
 * The record as it will wait: on the heap, with its own copies of the
 * route and the origin (a kept record is returned as it is); NULL when
 * out of memory.  rq itself must not be used afterwards.  rq_free ends
 * its transaction and frees a kept record.
 */
struct rq *rq_keep(struct rq *rq);
void rq_free(struct rq *rq);

/*
 * Hand rq to a worker: work there (it fills rq->f, status, why), then done
 * on rq's loop, which resumes it (rq_resume).
 */
enum src_result rq_on_worker(struct rq *rq, pool_fn work, pool_fn done);
/* A kept request's wait ended with r: go on from there. */
void rq_resume(struct rq *rq, enum src_result r);

/* The answers of a lookup; each ends the exchange for the record. */
/* rq->f: a file this source holds. */
enum src_result rq_send_found(struct rq *rq, const char *source);
/* The cached blob of k, when there is one (pinned while sent); else ABSENT. */
enum src_result rq_send_blob(struct rq *rq, const struct cache_key *k);
/* An outcome of the answer table; why NULL for the table's. */
enum src_result rq_outcome(struct rq *rq, enum answer_outcome o,
    const char *why, unsigned seconds, const char *source);
/* This server's failure: ANSWER_INTERNAL with why. */
enum src_result rq_fail(struct rq *rq, const char *why);
/*
 * The source passes rq on without its answer (its breaker is open, it is
 * not ready): why, for a client that must know (resolve_answer.unasked).
 * The first is kept.
 */
void rq_unasked(struct rq *rq, const char *why);

/* The forwarded path and headers of a fill of rq (struct prod_what). */
void rq_what(const struct rq *rq, struct prod_what *w);
/*
 * The origin a fill of w was made for, back from the headers rq_what
 * forwards: for a source that asks, on the fill's behalf, requests of its
 * own (the table builder's debuginfo).  o's texts point into w; its peer
 * is copied into peer (len bytes).
 */
void rq_origin_of(const struct prod_what *w, struct resolve_origin *o,
    char *peer, size_t len);
/*
 * Join the flight of rq's key, made (when there is none) by this step's
 * source from w (rq_what, then the source's own data, which the flight
 * then owns), and wait for it.
 */
enum src_result rq_produce(struct rq *rq, struct prod_what *w, void *data);
/*
 * Wait for f, the flight of rq's own key that something else made (a
 * reference, which the wait takes), as a request that joined it.
 */
enum src_result rq_join(struct rq *rq, struct flight *f);
/*
 * Leave rq waiting at its step, kept, until rq_unpark(*pk) asks the step's
 * lookup again on rq's loop.  When the client leaves first, gone(pk, arg)
 * runs on rq's loop and the source forgets pk: the source must unpark and
 * forget under one lock of its own.  SRC_PENDING, or rq's answer when out
 * of memory (*pk NULL).
 */
struct rq_park;
enum src_result rq_park(struct rq *rq, struct rq_park **pk,
    void (*gone)(struct rq_park *pk, void *arg), void *arg);
/* Any thread: pk's request asks its step again, on its own loop. */
void rq_unpark(struct rq_park *pk);
/*
 * Wait for a flight another key names (a package's download): its READY
 * passes the request on (SRC_ABSENT), its failure is answered as the
 * fill's.  f is a reference, which the wait takes.
 */
enum src_result rq_await(struct rq *rq, struct flight *f, const char *source);

#endif /* RESOLVER_RQ_H */
