/*
 * resolver/resolve.c: one request for an artifact, one state machine.
 *
 * A request (debuginfo, executable, section or source of a build-id) is a
 * record, struct rq, that walks the sources of its table
 * (sources/table.c) in order, forward only: each lookup answers the
 * request, passes it to the next source (SRC_ABSENT), or leaves it waiting
 * (SRC_PENDING) for a worker's job or a flight; the completion resumes the
 * record where it stopped (rq_resume).  A request of RESOLVE_HELD reach (a
 * consumer inside the daemon that wants a whole file) skips the sources
 * that only remember or forward.  The steps that run on the loop one after
 * another share one read transaction of the thread's index reader, so they
 * see one snapshot; it ends before the request waits for anything and
 * before the record is freed.
 *
 * A fill is a flight (cache/flight.h) that the producer core fills
 * (resolver/produce.h); the request joins it as a waiter, which streams
 * the bytes as they arrive and answers the fill's end.  Its outcome, a
 * published blob or a negative or error entry, is in the index before the
 * waiters are woken, so the answer (a 404's max-age included) reads it
 * there.  A flight that ends absent (it asked only where files are held)
 * passes its waiters on: to the source after the last one it asked, or,
 * for a waiter whose own source it never reached, to that source again.
 * A flight over a smaller X-DEBUGINFOD-MAXSIZE than a waiter's asks that
 * source again too.  Nothing walks backwards.
 *
 * Every answer goes through the client (struct resolve_client), and every
 * answer without a file is an outcome of the one table
 * (resolver/answer.h); those the table marks are noted for the missing-id
 * report (daemon/misses.h), which only queues them.
 *
 * Records: a request answered at once lives on the caller's stack; one
 * that waits is copied to the heap (rq_keep) and owned by what it waits
 * for: a pool job, then its completion; a waiter or a source's record,
 * then the client's end (on_end).  Everything runs on the request's loop
 * but the pool jobs' work functions.
 */
#include "resolver/rq.h"

#include <sys/stat.h>

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "cache/blobstore.h"
#include "cache/flight.h"
#include "cache/index.h"
#include "cache/negative.h"
#include "conf/config.h"
#include "daemon/clock.h"
#include "daemon/metrics.h"
#include "daemon/misses.h"
#include "resolver/produce.h"

/* Cache-Control max-age of artifacts: a build-id's bytes never change. */
#define HIT_MAX_AGE (7 * 24 * 3600)

static void rq_run(struct rq *rq);

/* --------------------------------------------------------- the record */

enum cache_kind
rq_kind(const struct rq *rq)
{
	switch (rq->rt->endpoint) {
	case ROUTE_EXECUTABLE:
		return CACHE_EXECUTABLE;
	case ROUTE_SECTION:
		return CACHE_SECTION;
	case ROUTE_SOURCE:
		return CACHE_SOURCE;
	case ROUTE_SYMTAB:
		return CACHE_SYMTAB;
	default:
		return CACHE_DEBUGINFO;
	}
}

void
rq_key(struct rq *rq, struct cache_key *k)
{
	/* A SHA-256: the cache, negative and repository steps all ask. */
	if (!rq->keyed) {
		cache_key_make(&rq->key, &rq->rt->id, rq_kind(rq), rq->rt->arg);
		rq->keyed = 1;
	}
	*k = rq->key;
}

int
rq_section(const struct rq *rq)
{
	return rq->rt->endpoint == ROUTE_SECTION;
}

int
rq_txn(struct rq *rq)
{
	if (rq->in_txn)
		return 0;
	if (rq->th->rd == NULL || index_reader_begin(rq->th->rd) == -1)
		return -1;
	rq->in_txn = 1;
	return 0;
}

void
rq_txn_end(struct rq *rq)
{
	if (rq->in_txn) {
		index_reader_end(rq->th->rd);
		rq->in_txn = 0;
	}
}

/*
 * A record that waits, with its own copies of what the caller's stack
 * held: rq first, so that a kept record is freed as itself.
 */
struct rq_kept {
	struct rq rq;
	struct route rt;
	struct resolve_origin origin;
};

struct rq *
rq_keep(struct rq *rq)
{
	struct rq_kept *k;

	rq_txn_end(rq);
	if (rq->kept)
		return rq;
	if ((k = malloc(sizeof(*k))) == NULL)
		return NULL;
	k->rq = *rq;
	k->rt = *rq->rt;
	k->rq.rt = &k->rt;
	k->origin = *rq->cl.origin;
	k->rq.cl.origin = &k->origin;
	k->rq.kept = 1;
	return &k->rq;
}

void
rq_free(struct rq *rq)
{
	rq_txn_end(rq);
	if (rq->kept)
		free(rq);
}

/* An answer to rq's client, with what every answer carries. */
static void
rq_answer(struct rq *rq, struct resolve_answer *a)
{
	a->rt = rq->rt;
	rq->cl.ops->answer(rq->cl.arg, a);
}

/* The request ends not-found: into the missing-id report. */
static void
rq_missed(const struct rq *rq)
{
	const struct resolve_origin *o = rq->cl.origin;

	/* A judgement's or a whole file's not-found is no client's miss. */
	if (rq->reach != RESOLVE_ALL || rq->cl.judge)
		return;
	misses_note(rq->d->misses, &rq->rt->id, rq_kind(rq), o->user_agent.p,
	    o->user_agent.n, o->peer);
}

/* The name of source i of rq's table; NULL past its end. */
static const char *
rq_source_name(const struct rq *rq, unsigned i)
{
	const struct source *s = rq->d->sources[i];

	return s != NULL ? s->name : NULL;
}

/* Outcome o, which the table's source named by gave (NULL: none did). */
static enum src_result
rq_outcome_by(struct rq *rq, enum answer_outcome o, const char *why,
    unsigned seconds, const char *source, const char *by)
{
	const struct answer_row *row = answer_row(o);
	struct resolve_answer a;
	char noted[sizeof(rq->note) + 64];

	rq_txn_end(rq);
	if (row->missed)
		rq_missed(rq);
	memset(&a, 0, sizeof(a));
	a.kind = RESOLVE_OUTCOME;
	a.fd = -1;
	a.outcome = o;
	a.result = row->result;
	a.source = source != NULL ? source : row->source;
	a.by = by;
	a.why = answer_why(o, rq_section(rq), why);
	a.seconds = row->fixed_seconds != 0 ? row->fixed_seconds : seconds;
	/* A miss says what a source noted, and is kept no longer than it let. */
	if (row->missed && why == NULL && rq->note[0] != '\0') {
		snprintf(noted, sizeof(noted), "%s; %s", a.why, rq->note);
		a.why = noted;
	}
	if (row->seconds == ANSWER_MAX_AGE && rq->max_age != 0 &&
	    (a.seconds == 0 || a.seconds > rq->max_age))
		a.seconds = rq->max_age;
	a.unasked = rq->unasked[0] != '\0' ? rq->unasked : NULL;
	rq_answer(rq, &a);
	return SRC_ANSWERED;
}

enum src_result
rq_outcome(struct rq *rq, enum answer_outcome o, const char *why,
    unsigned seconds, const char *source)
{
	return rq_outcome_by(rq, o, why, seconds, source,
	    rq_source_name(rq, rq->step));
}

void
rq_unasked(struct rq *rq, const char *why)
{
	if (rq->unasked[0] == '\0')
		snprintf(rq->unasked, sizeof(rq->unasked), "%s", why);
}

enum src_result
rq_fail(struct rq *rq, const char *why)
{
	return rq_outcome(rq, ANSWER_INTERNAL, why, 0, NULL);
}

/* Walk the sources from rq->step until one answers or leaves rq waiting. */
static void
rq_run(struct rq *rq)
{
	const struct source *const *t = rq->d->sources;
	const struct source *s;

	for (;;) {
		if ((s = t[rq->step]) == NULL) {
			rq_outcome(rq, ANSWER_NOT_FOUND, NULL, 0, NULL);
			rq_free(rq);
			return;
		}
		if (s->lookup == NULL ||
		    (rq->reach == RESOLVE_HELD && !s->held)) {
			rq->step++;
			continue;
		}
		switch (s->lookup(rq)) {
		case SRC_ABSENT:
			rq->step++;
			break;
		case SRC_ANSWERED:
			rq_free(rq);
			return;
		case SRC_PENDING:
			return;
		}
	}
}

void
rq_resume(struct rq *rq, enum src_result r)
{
	switch (r) {
	case SRC_ABSENT:
		rq->step++;
		rq_run(rq);
		break;
	case SRC_ANSWERED:
		rq_free(rq);
		break;
	case SRC_PENDING:
		break;
	}
}

enum src_result
rq_on_worker(struct rq *rq, pool_fn work, pool_fn done)
{
	struct rq *k;

	if ((k = rq_keep(rq)) == NULL)
		return rq_fail(rq, "out of memory");
	k->cl.ops->wait(k->cl.arg);
	if (pool_submit(k->d->pool, work, k->th->inbox, done, k) == -1) {
		rq_fail(k, "server is shutting down");
		rq_free(k);
		return SRC_PENDING; /* k is gone; rq must not be freed again */
	}
	return SRC_PENDING;
}

/* A request parked at its step (rq_park). */
struct rq_park {
	struct rq *rq; /* kept; freed with it, or going on */
	struct event *ev; /* on rq's loop: ask the step again */
	void (*gone)(struct rq_park *pk, void *arg);
	void *arg;
};

/* rq's loop: the client left while pk waited. */
static void
park_release(void *arg)
{
	struct rq_park *pk = arg;

	pk->gone(pk, pk->arg);
	event_free(pk->ev);
	rq_free(pk->rq);
	free(pk);
}

/* rq's loop: unparked, the request asks its step again. */
static void
park_cb(evutil_socket_t fd, short what, void *arg)
{
	struct rq_park *pk = arg;
	struct rq *rq = pk->rq;

	rq->cl.ops->on_end(rq->cl.arg, NULL, NULL);
	event_free(pk->ev);
	free(pk);
	rq_run(rq);
}

enum src_result
rq_park(struct rq *rq, struct rq_park **pkp,
    void (*gone)(struct rq_park *pk, void *arg), void *arg)
{
	struct rq_park *pk;
	struct rq *k;

	*pkp = NULL;
	if ((pk = calloc(1, sizeof(*pk))) == NULL ||
	    (pk->ev = event_new(rq->th->base, -1, 0, park_cb, pk)) == NULL ||
	    (k = rq_keep(rq)) == NULL) {
		if (pk != NULL && pk->ev != NULL)
			event_free(pk->ev);
		free(pk);
		return rq_fail(rq, "out of memory");
	}
	pk->rq = k;
	pk->gone = gone;
	pk->arg = arg;
	k->cl.ops->wait(k->cl.arg);
	k->cl.ops->on_end(k->cl.arg, park_release, pk);
	*pkp = pk;
	return SRC_PENDING;
}

void
rq_unpark(struct rq_park *pk)
{
	event_active(pk->ev, EV_READ, 1);
}

/* ------------------------------------------------------------ files */

enum src_result
rq_send_found(struct rq *rq, const char *source)
{
	const struct rq_found *f = &rq->f;
	struct resolve_answer a;

	rq_txn_end(rq);
	memset(&a, 0, sizeof(a));
	a.kind = RESOLVE_FILE;
	a.source = source;
	a.by = rq_source_name(rq, rq->step);
	a.result = METRICS_HIT;
	a.fd = f->fd;
	a.offset = f->offset;
	a.size = f->size;
	a.mtime = f->st.st_mtim.tv_sec;
	a.etag_size = (uint64_t)f->st.st_size;
	a.etag_mtime_ns =
	    (int64_t)f->st.st_mtim.tv_sec * 1000000000 + f->st.st_mtim.tv_nsec;
	a.file = f->path;
	rq_answer(rq, &a);
	return SRC_ANSWERED;
}

/* A cache hit keeps its blob pinned (safe from eviction) while it is sent. */
struct pin {
	struct blobstore *bs;
	struct cache_key key;
};

static void
pin_release(void *arg)
{
	struct pin *p = arg;

	blob_unpin(p->bs, &p->key);
	free(p);
}

enum src_result
rq_send_blob(struct rq *rq, const struct cache_key *k)
{
	struct blobstore *bs = rq->d->bs;
	struct resolve_answer a;
	struct blob_info bi;
	struct stat sb;
	struct pin *pin;
	int fd;

	if (bs == NULL || rq_txn(rq) == -1)
		return SRC_ABSENT;
	if (blob_lookup(rq->th->rd, k, &bi) != 0)
		return SRC_ABSENT;
	if ((fd = blob_open(bs, k)) == -1)
		return SRC_ABSENT;
	if (fstat(fd, &sb) == -1 || (uint64_t)sb.st_size != bi.size ||
	    (pin = malloc(sizeof(*pin))) == NULL) {
		close(fd);
		return SRC_ABSENT;
	}
	pin->bs = bs;
	pin->key = *k;
	blob_pin(bs, k);
	blob_touch(bs, k, clock_now());
	memset(&a, 0, sizeof(a));
	a.kind = RESOLVE_FILE;
	a.source = "cache";
	a.by = "cache";
	a.result = METRICS_HIT;
	a.fd = fd;
	a.size = bi.size;
	a.mtime = bi.mtime;
	a.etag_size = bi.size;
	a.etag_mtime_ns = bi.mtime * 1000000000;
	a.meta = &bi.meta;
	a.max_age = HIT_MAX_AGE;
	rq->cl.ops->on_end(rq->cl.arg, pin_release, pin);
	/* The answer is taken before the transaction ends: bi points in it. */
	a.rt = rq->rt;
	rq->cl.ops->answer(rq->cl.arg, &a);
	rq_txn_end(rq);
	return SRC_ANSWERED;
}

/* ---------------------------------------------------- fills: waiters */

/* A request joined to a flight, before and while it streams. */
struct waiter {
	struct rq *rq; /* kept; freed with the waiter */
	struct flight *f;
	struct event *ev;
	int joined; /* another request started the fill */
	int streaming; /* the answer is out */
	/*
	 * Joined once the bytes were verified, while the cache makes them
	 * durable: answered from the cache once they are in, so that a
	 * request after a client's last byte is a cache hit, as it always
	 * was.
	 */
	int late;
	/* A flight of another key (rq_await): its READY passes rq on. */
	int foreign;
	const char *source; /* foreign: who made it, for a failure */
};

static void
waiter_release(void *arg)
{
	struct waiter *w = arg;

	flight_unwatch(w->f, w);
	event_free(w->ev);
	flight_unref(w->f);
	if (w->rq != NULL)
		rq_free(w->rq);
	free(w);
}

/* Leave the flight; the request goes on at step. */
static void
waiter_leave(struct waiter *w, unsigned step)
{
	struct rq *rq = w->rq;

	w->rq = NULL;
	rq->cl.ops->on_end(rq->cl.arg, NULL, NULL);
	waiter_release(w);
	rq->step = step;
	rq_run(rq);
}

static int
waiter_avail(void *arg, uint64_t *n)
{
	struct waiter *w = arg;
	struct flight_view v;

	flight_view(w->f, &v);
	*n = v.sendable;
	return v.state == FLIGHT_STREAMING || v.state == FLIGHT_READY ? 0 : -1;
}

/*
 * What is left of key k's negative or error entry, which a fill writes
 * before it tells its waiters: the max-age of a 404, the Retry-After of a
 * 502 (0 when there is none: nothing is remembered).
 */
static unsigned
entry_ttl_left(struct resolve_thread *th, const struct cache_key *k)
{
	struct neg_entry ne;
	int64_t now = clock_now();
	int rc;

	if (th->rd == NULL || index_reader_begin(th->rd) == -1)
		return 0;
	rc = neg_get(th->rd, k, now, &ne);
	index_reader_end(th->rd);
	return rc == 0 ? (unsigned)(ne.expires - now) : 0;
}

/* The flight's bytes as an answer: a stream, or (READY) a whole file. */
static void
waiter_send(struct waiter *w, const struct flight_view *v, int whole)
{
	struct rq *rq = w->rq;
	struct resolve_answer a;
	const char *src;
	int fd;

	if ((fd = flight_open(w->f)) == -1) {
		rq_fail(rq, "cannot read the fill");
		return;
	}
	memset(&a, 0, sizeof(a));
	a.kind = whole ? RESOLVE_FILE : RESOLVE_STREAM;
	a.fd = fd;
	a.size = v->length;
	a.mtime = flight_mtime(w->f);
	a.etag_size = v->length;
	a.etag_mtime_ns = flight_mtime(w->f) * 1000000000;
	a.meta = flight_meta(w->f);
	a.result = w->joined ? METRICS_JOINED : METRICS_MISS;
	a.max_age = HIT_MAX_AGE;
	src = flight_source(w->f);
	a.source = src[0] != '\0' ? src : "cache";
	/* The source that filled it, known once it ended. */
	a.by = v->state == FLIGHT_READY ? rq_source_name(rq, v->mark) : NULL;
	a.avail = waiter_avail;
	a.avail_arg = w;
	w->streaming = 1;
	rq_answer(rq, &a);
}

/*
 * X-DEBUGINFOD-MAXSIZE and fills.  A fill is shared, so the limit sent
 * upstream is the one of the request that started it (rq_what), and a
 * 406 there says only that the file is larger than that limit: it is
 * never remembered (no negative or error entry, no breaker count).  Each
 * waiter then decides for itself: a limit no larger gets the 406, any
 * other (or none) asks again, by a fill of its own or one it joins.  And
 * as soon as a fill knows its size (an upstream's Content-Length, a
 * package member's indexed size), a waiter whose limit is smaller gets
 * its 406 at once while the fill goes on for the others.  No client is
 * ever sent more than its limit.
 */
static int
waiter_over_limit(struct waiter *w, const struct flight_view *v)
{
	uint64_t max = w->rq->cl.origin->maxsize;

	if (max == 0)
		return 0;
	if (v->state == FLIGHT_TOOBIG)
		return max <= v->limit;
	return v->size != UINT64_MAX && v->size > max;
}

/* 1 when the blob of k is in the cache. */
static int
blob_cached(struct rq *rq, const struct cache_key *k)
{
	struct blob_info bi;
	int rc;

	if (rq->d->bs == NULL || rq_txn(rq) == -1)
		return 0;
	rc = blob_lookup(rq->th->rd, k, &bi);
	rq_txn_end(rq);
	return rc == 0;
}

/* A flight of another key moved on: its READY passes the request on. */
static void
waiter_check_foreign(struct waiter *w, const struct flight_view *v)
{
	struct rq *rq = w->rq;

	switch (v->state) {
	case FLIGHT_READY:
		waiter_leave(w, rq->step + 1);
		return;
	case FLIGHT_WAITING:
	case FLIGHT_STREAMING:
		return;
	default:
		rq_outcome(rq, ANSWER_FILL_FAILED,
		    v->why[0] != '\0' ? v->why : NULL, rq->d->cfg->error_ttl,
		    w->source);
		return;
	}
}

/*
 * The flight moved on.  Before the answer: wait, answer the end, or start
 * streaming.  The client's end releases the waiter (on_end), so w is not
 * touched after an answer.
 */
static void
waiter_check(struct waiter *w)
{
	struct rq *rq = w->rq;
	struct flight_view v;
	struct cache_key k;
	int whole = rq->cl.whole || w->late;

	if (w->streaming) {
		rq->cl.ops->wake(rq->cl.arg);
		return;
	}
	flight_view(w->f, &v);
	if (v.unasked != NULL)
		rq_unasked(rq, v.unasked);
	if (w->foreign) {
		waiter_check_foreign(w, &v);
		return;
	}
	if ((v.state == FLIGHT_WAITING || v.state == FLIGHT_STREAMING ||
		v.state == FLIGHT_TOOBIG) &&
	    waiter_over_limit(w, &v)) {
		struct resolve_answer a;

		memset(&a, 0, sizeof(a));
		a.kind = RESOLVE_OUTCOME;
		a.fd = -1;
		a.outcome = ANSWER_TOO_BIG;
		a.result = w->joined ? METRICS_JOINED : METRICS_MISS;
		a.source = answer_row(ANSWER_TOO_BIG)->source;
		a.why = answer_why(ANSWER_TOO_BIG, 0, NULL);
		rq_answer(rq, &a);
		return;
	}
	switch (v.state) {
	case FLIGHT_WAITING:
		return;
	case FLIGHT_TOOBIG:
		/*
		 * Larger than a smaller limit than ours (or than one when we
		 * have none): this source again.  Each round needs another
		 * client with a smaller limit to start a fill just then.
		 */
		waiter_leave(w, rq->step);
		return;
	case FLIGHT_STREAMING:
		/*
		 * A range may end before the last byte, which is all that
		 * streaming holds back: it waits for the verdict.
		 */
		if (whole || rq->cl.origin->range)
			return;
		waiter_send(w, &v, 0);
		return;
	case FLIGHT_READY:
		rq_key(rq, &k);
		if (w->late && !rq->cl.whole && blob_cached(rq, &k)) {
			/* In the cache now: a hit, as the cache step gives it. */
			w->rq = NULL;
			rq->cl.ops->on_end(rq->cl.arg, NULL, NULL);
			waiter_release(w);
			if (rq_send_blob(rq, &k) == SRC_ANSWERED)
				rq_free(rq);
			else
				rq_run(
				    rq); /* evicted meanwhile: this source again */
			return;
		}
		waiter_send(w, &v, whole);
		return;
	case FLIGHT_NOTFOUND:
		rq_outcome_by(rq, ANSWER_FILL_NOT_FOUND, NULL,
		    entry_ttl_left(rq->th, flight_key(w->f)), NULL,
		    rq_source_name(rq, v.mark));
		return;
	case FLIGHT_UNAVAILABLE:
		rq_outcome_by(rq, ANSWER_UNAVAILABLE, v.why, 0, NULL,
		    rq_source_name(rq, v.mark));
		return;
	case FLIGHT_FAILED:
		rq_outcome_by(rq, ANSWER_FILL_FAILED, v.why,
		    entry_ttl_left(rq->th, flight_key(w->f)), NULL,
		    rq_source_name(rq, v.mark));
		return;
	case FLIGHT_ABSENT:
		/* After the last source it asked, or ours if it never got here. */
		waiter_leave(w, v.mark >= rq->step ? v.mark + 1 : rq->step);
		return;
	}
}

static void
waiter_event_cb(evutil_socket_t fd, short what, void *arg)
{
	waiter_check(arg);
}

/* flight_wake_fn, on the filler's thread: check again on our loop. */
static void
waiter_wake(void *arg)
{
	struct waiter *w = arg;

	event_active(w->ev, EV_READ, 1);
}

/*
 * Wait for flight f (a reference, which the waiter takes): created when
 * rq's request made it; foreign when it fills another key.
 */
static enum src_result
await_flight(struct rq *rq, struct flight *f, int created, int foreign,
    const char *source)
{
	struct flight_view v;
	struct waiter *wt;
	struct rq *kept;

	rq_txn_end(rq);
	if ((wt = calloc(1, sizeof(*wt))) == NULL ||
	    (wt->ev = event_new(rq->th->base, -1, 0, waiter_event_cb, wt)) ==
		NULL ||
	    (kept = rq_keep(rq)) == NULL) {
		if (wt != NULL && wt->ev != NULL)
			event_free(wt->ev);
		free(wt);
		flight_unref(f);
		return rq_fail(rq, "out of memory");
	}
	wt->rq = kept;
	wt->f = f;
	wt->joined = !created;
	flight_view(f, &v);
	wt->late = !created && v.verified;
	wt->foreign = foreign;
	wt->source = source;
	kept->cl.ops->wait(kept->cl.arg);
	kept->cl.ops->on_end(kept->cl.arg, waiter_release, wt);
	if (flight_watch(f, waiter_wake, wt) == -1) {
		rq_fail(kept, "out of memory");
		return SRC_PENDING; /* the waiter owns kept and frees it */
	}
	waiter_check(wt);
	return SRC_PENDING;
}

enum src_result
rq_join(struct rq *rq, struct flight *f)
{
	return await_flight(rq, f, 0, 0, NULL);
}

enum src_result
rq_await(struct rq *rq, struct flight *f, const char *source)
{
	return await_flight(rq, f, 1, 1, source);
}

enum src_result
rq_produce(struct rq *rq, struct prod_what *w, void *data)
{
	struct cache_key k;
	struct flight *f;
	int created;

	rq_txn_end(rq);
	cache_key_make(&k, &w->id, w->kind, w->arg);
	f = produce_join(rq->d->prod, &k, w, rq->step, data, &created);
	if (f == NULL)
		return rq_fail(rq, "too many fills in flight");
	return await_flight(rq, f, created, 0, NULL);
}

/* ------------------------------------------------------ forwarding */

/* 1 when a Via value names token: the request went through us already. */
static int
via_has(struct resolve_text via, const char *token)
{
	size_t n = strlen(token), i;

	if (via.p == NULL)
		return 0;
	for (i = 0; i + n <= via.n; i++)
		if (memcmp(via.p + i, token, n) == 0)
			return 1;
	return 0;
}

/* Entries in an X-Forwarded-For value. */
static size_t
xff_count(struct resolve_text xff)
{
	size_t i, n = 1;

	if (xff.p == NULL || xff.n == 0)
		return 0;
	for (i = 0; i < xff.n; i++)
		if (xff.p[i] == ',')
			n++;
	return n;
}

/* The upstream path of a route, percent-escaping what URLs cannot hold. */
static int
upstream_path(const struct route *rt, char *out, size_t len)
{
	char id[BUILDID_HEX_MAX];
	int w;

	buildid_format(&rt->id, id);
	switch (rt->endpoint) {
	case ROUTE_SECTION:
		w = snprintf(out, len, "/buildid/%s/section/", id);
		break;
	case ROUTE_SOURCE:
		w = snprintf(out, len, "/buildid/%s/source", id);
		break;
	case ROUTE_SYMTAB:
		/* Never asked of an upstream: what logs and /status show. */
		w = snprintf(out, len, "/buildid/%s/symtab-%s", id, rt->arg);
		return w > 0 && (size_t)w < len ? 0 : -1;
	default:
		w = snprintf(out, len, "/buildid/%s/%s", id,
		    rt->endpoint == ROUTE_EXECUTABLE ? "executable"
						     : "debuginfo");
		return w > 0 && (size_t)w < len ? 0 : -1;
	}
	if (w < 0 || (size_t)w >= len)
		return -1;
	return route_encode(rt->arg, ROUTE_ENC_PATH, out + w, len - (size_t)w);
}

/* Copy a text into a C string of at most len - 1 bytes. */
static void
text_copy(struct resolve_text t, char *out, size_t len)
{
	size_t n = t.p == NULL ? 0 : t.n;

	if (n >= len)
		n = len - 1;
	if (n > 0)
		memcpy(out, t.p, n);
	out[n] = '\0';
}

void
rq_what(const struct rq *rq, struct prod_what *w)
{
	const struct route *rt = rq->rt;

	memset(w, 0, sizeof(*w));
	w->id = rt->id;
	w->kind = rq_kind(rq);
	snprintf(w->arg, sizeof(w->arg), "%s", rt->arg);
	if (upstream_path(rt, w->path, sizeof(w->path)) == -1)
		w->path[0] = '\0';
	resolve_forward_headers(rq->cl.origin, rq->d->via_token, w->xff,
	    sizeof(w->xff), w->via, sizeof(w->via), w->ua, sizeof(w->ua));
	/* The client's X-DEBUGINFOD-MAXSIZE goes upstream with it. */
	w->limit = rq->cl.origin->maxsize;
	w->reach = rq->reach;
	w->fresh = rq->cl.judge;
}

/*
 * The last ", "-separated entry of the first n bytes of s: at *last; the
 * bytes before it (0 when there are none) in *before.
 */
static void
split_last(const char *s, size_t n, const char **last, size_t *before)
{
	size_t i;

	for (i = n; i >= 2; i--)
		if (s[i - 2] == ',' && s[i - 1] == ' ')
			break;
	*last = i >= 2 ? s + i : s;
	*before = i >= 2 ? i - 2 : 0;
}

void
rq_origin_of(const struct prod_what *w, struct resolve_origin *o, char *peer,
    size_t len)
{
	const char *last;
	size_t n;

	memset(o, 0, sizeof(*o));
	/* X-Forwarded-For: "[incoming, ]peer"; Via: "[incoming, ]1.1 us". */
	split_last(w->xff, strlen(w->xff), &last, &n);
	snprintf(peer, len, "%s", last);
	o->peer = peer;
	if (n > 0) {
		o->forwarded_for.p = w->xff;
		o->forwarded_for.n = n;
	}
	split_last(w->via, strlen(w->via), &last, &n);
	if (n > 0) {
		o->via.p = w->via;
		o->via.n = n;
	}
	if (w->ua[0] != '\0') {
		o->user_agent.p = w->ua;
		o->user_agent.n = strlen(w->ua);
	}
}

void
resolve_forward_headers(const struct resolve_origin *o, const char *token,
    char *xff, size_t xfflen, char *via, size_t vialen, char *ua, size_t ualen)
{
	if (o->forwarded_for.p != NULL)
		snprintf(xff, xfflen, "%.*s, %s", (int)o->forwarded_for.n,
		    o->forwarded_for.p, o->peer);
	else
		snprintf(xff, xfflen, "%s", o->peer);
	text_copy(o->user_agent, ua, ualen);
	if (o->via.p != NULL)
		snprintf(via, vialen, "%.*s, 1.1 %s", (int)o->via.n, o->via.p,
		    token);
	else
		snprintf(via, vialen, "1.1 %s", token);
}

const char *
resolve_loop(const struct resolve_origin *o, const char *via_token,
    unsigned max_forwarded_for)
{
	if (via_has(o->via, via_token))
		return "not forwarded: a request loop";
	if (xff_count(o->forwarded_for) >= max_forwarded_for)
		return "not forwarded: X-Forwarded-For limit reached";
	return NULL;
}

/* ------------------------------------------------------------- start */

void
resolve_start(struct resolve_thread *th, const struct resolve_client *cl,
    const struct route *rt, enum resolve_reach reach)
{
	struct rq rq = {
		.cl = *cl,
		.th = th,
		.d = cl->d != NULL ? cl->d : th->d,
		.rt = rt,
		.reach = reach,
	};

	rq_run(&rq);
}
