/*
 * tests/tsrc.h: sources a unit test scripts, for a table of its own
 * (resolve_deps.sources) beside the real ones of sources/.
 *
 * A struct tsrc is a source (its first member, which the table points
 * at) with a script: what its lookup does (pass, pass after a worker's
 * job, join the fill of the key) and what its produce does when a flight
 * reaches it (wait for the test, which plays the transport with the
 * ts_* functions below, or pass the flight on at once, on the loop or
 * from a worker).  It counts what it was asked and keeps the last
 * producer it was given, so that the test drives the real producer core
 * through it: produce_open, produce_accept, produce_data, produce_fetched
 * on the loop as fetchers/upstream.c calls them, or for a source that
 * runs anywhere the pass's calls (produce_progress, produce_release,
 * produce_verify, produce_finish).
 *
 * Lookups log the place in the table of the source asked, in order, so
 * that a test sees the walk.  Header-only; include it after tests/rig.h.
 */
#ifndef TESTS_TSRC_H
#define TESTS_TSRC_H

#include <pthread.h>

#include "resolver/rq.h"
#include "resolver/source.h"

enum ts_lookup {
	TS_PASS, /* SRC_ABSENT */
	TS_JOIN, /* join (or make) the key's flight: rq_produce */
	TS_WORKER_PASS, /* a job on a worker, then SRC_ABSENT */
};

enum ts_produce {
	TS_HOLD, /* keep p for the test to drive */
	TS_ABSENT, /* produce_absent at once */
	TS_ABSENT_WORKER, /* produce_absent from a worker's job */
};

struct tsrc {
	struct source s; /* first: the table points here */
	enum ts_lookup lookup;
	enum ts_produce produce;
	unsigned lookups; /* lookups asked */
	unsigned produced; /* flights it was asked to fill */
	unsigned released; /* its data given back (source.release) */
	unsigned judged; /* source.judged calls */
	struct prod *p; /* the last producer it was given */
	struct flight *f; /* and its flight (no reference: compare only) */
	int on_loop; /* the last produce ran on the loop's thread */
	uint64_t limit; /* the last producer's w.limit */
	char path[3 * ROUTE_PATH_MAX + 64]; /* and its w.path */
};

#define TS_LOG_MAX 64
static unsigned ts_log[TS_LOG_MAX];
static unsigned ts_nlog;
static pthread_t ts_loop;

/* Forget the log of lookups. */
static void ts_log_clear(void) __attribute__((unused));

static void
ts_log_clear(void)
{
	ts_nlog = 0;
}

/* The log as text, "0 1 3", for is_str. */
static const char *ts_log_text(void) __attribute__((unused));

static const char *
ts_log_text(void)
{
	static char buf[4 * TS_LOG_MAX];
	size_t i, n = 0;

	buf[0] = '\0';
	for (i = 0; i < ts_nlog && n + 12 < sizeof(buf); i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%u",
		    i > 0 ? " " : "", ts_log[i]);
	return buf;
}

static struct tsrc *
ts_of_step(const struct rq *rq)
{
	return (struct tsrc *)(uintptr_t)rq->th->d->sources[rq->step];
}

static struct tsrc *
ts_of_prod(const struct prod *p)
{
	return (struct tsrc *)(uintptr_t)produce_deps(p)->sources[p->src];
}

static void
ts_nothing(void *arg)
{
}

static void
ts_pass_done(void *arg)
{
	rq_resume(arg, SRC_ABSENT);
}

static enum src_result
ts_lookup_fn(struct rq *rq)
{
	struct tsrc *t = ts_of_step(rq);
	struct prod_what w;

	t->lookups++;
	if (ts_nlog < TS_LOG_MAX)
		ts_log[ts_nlog++] = rq->step;
	switch (t->lookup) {
	case TS_PASS:
		return SRC_ABSENT;
	case TS_WORKER_PASS:
		return rq_on_worker(rq, ts_nothing, ts_pass_done);
	case TS_JOIN:
		break;
	}
	rq_what(rq, &w);
	snprintf(w.from, sizeof(w.from), "%s", t->s.name);
	return rq_produce(rq, &w, NULL);
}

static void
ts_absent_job(void *arg)
{
	produce_absent(arg);
}

static void
ts_produce_fn(struct prod *p)
{
	struct tsrc *t = ts_of_prod(p);

	t->produced++;
	t->p = p;
	t->f = p->f;
	t->limit = p->w.limit;
	snprintf(t->path, sizeof(t->path), "%s", p->w.path);
	t->on_loop = pthread_equal(pthread_self(), ts_loop);
	switch (t->produce) {
	case TS_HOLD:
		return;
	case TS_ABSENT:
		t->p = NULL;
		produce_absent(p);
		return;
	case TS_ABSENT_WORKER:
		t->p = NULL;
		if (pool_submit(produce_deps(p)->pool, ts_absent_job, NULL,
			NULL, p) == -1)
			produce_end(p, FLIGHT_FAILED, "no worker");
		return;
	}
}

static void
ts_judged_fn(struct prod *p)
{
	ts_of_prod(p)->judged++;
}

/* The data a test gives a fill: which source gets it back. */
struct ts_data {
	struct tsrc *t;
};

static void
ts_release_fn(void *data)
{
	struct ts_data *d = data;

	d->t->released++;
	free(d);
}

/*
 * Make t a source named name: held, remembers, produces (0: lookups only)
 * and anywhere (its produce runs on whatever thread made the flight).
 */
static void
ts_init(struct tsrc *t, const char *name, int held, int remembers, int produces,
    int anywhere)
{
	memset(t, 0, sizeof(*t));
	t->s.name = name;
	t->s.held = held;
	t->s.remembers = remembers;
	t->s.lookup = ts_lookup_fn;
	t->s.produce = produces ? ts_produce_fn : NULL;
	t->s.produce_anywhere = anywhere;
	t->s.judged = ts_judged_fn;
	t->s.release = ts_release_fn;
	ts_loop = pthread_self();
}

/* A ts_data for a fill of t (released to t with it). */
static void *ts_data_new(struct tsrc *t) __attribute__((unused));

static void *
ts_data_new(struct tsrc *t)
{
	struct ts_data *d = malloc(sizeof(*d));

	d->t = t;
	return d;
}

/* ----------------------------------------------- playing the transport */

/*
 * The loop: the answer's head and its first bytes, as an upstream's
 * accept sees them (length UINT64_MAX: not announced).  What accept said.
 */
static int ts_accept(struct prod *p, uint64_t length, const void *buf,
    size_t len) __attribute__((unused));

static int
ts_accept(struct prod *p, uint64_t length, const void *buf, size_t len)
{
	struct upstream_head h;

	if (p == NULL || produce_open(p) == -1)
		return -1;
	memset(&h, 0, sizeof(h));
	h.url = "http://fake";
	h.length = length;
	h.mtime = NOW;
	h.file = "/fake";
	h.archive = h.imasig = h.extra = "";
	return produce_accept(p, &h, buf,
	    len < UPSTREAM_PREFIX ? len : UPSTREAM_PREFIX);
}

/*
 * The loop: serve the file at path whole as an upstream would (head,
 * body, end OK), unless accept or a write refuses it (then the fetch
 * ends FAILED, as fetchers/upstream.c ends a refused answer).  What the
 * sink last said: 0, or -1 (also when there is no p: the test failed).
 */
static int ts_serve(struct prod *p, const char *path) __attribute__((unused));

static int
ts_serve(struct prod *p, const char *path)
{
	size_t len;
	uint8_t *b;
	int rc = -1;

	if (p == NULL)
		return -1;
	b = slurp(path, &len);
	if (b != NULL && ts_accept(p, len, b, len) == 0)
		rc = produce_data(p, b, len);
	free(b);
	produce_fetched(p, rc == 0 ? UPSTREAM_OK : UPSTREAM_FAILED,
	    rc == 0 ? NULL : "refused");
	return rc;
}

/* The loop: the fetch ends with res (no body): a miss, a failure. */
static void ts_end(struct prod *p, enum upstream_result res, const char *why)
    __attribute__((unused));

static void
ts_end(struct prod *p, enum upstream_result res, const char *why)
{
	if (p == NULL)
		return;
	if (p->fd == -1)
		produce_open(p);
	produce_fetched(p, res, why);
}

/*
 * A source that runs anywhere, as a pass writes (any thread): the head,
 * then the bytes of path written into p's temp file and told.  0, or -1.
 */
static int ts_write_anywhere(struct prod *p, const char *path)
    __attribute__((unused));

static int
ts_write_anywhere(struct prod *p, const char *path)
{
	static const struct cache_meta meta = { "", "", "", "", 0 };
	size_t len;
	uint8_t *b = slurp(path, &len);
	int rc = -1;

	if (b != NULL && produce_open(p) == 0 &&
	    produce_head(p, len, NOW, &meta, "anywhere") == 0 &&
	    pwrite(p->fd, b, len, 0) == (ssize_t)len) {
		produce_progress(p, len);
		rc = 0;
	}
	free(b);
	return rc;
}

#endif /* TESTS_TSRC_H */
