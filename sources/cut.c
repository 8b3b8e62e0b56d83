/*
 * sources/cut.c: a section, cut from a whole file.
 *
 * A request for section NAME of an id asks, as a request of its own, for
 * the id's whole debuginfo from the sources that hold files (local files,
 * the cache, repositories, packages, the object store: RESOLVE_HELD, never
 * the upstreams, which are asked for the section itself), waits for it
 * whole and verified, and cuts the section out of it on a worker: one
 * fill (a package's pass, a download) and one cut.  A debuginfo without
 * the section (or none at all) sends it to the executable the same way;
 * when neither has it, the request goes on to the section's own sources.
 * A failure of a whole file's fill is the section's answer (a 503, on
 * which clients fetch the whole file themselves).
 *
 * The child request answers this file's client (struct cut), on the
 * section's loop.  Lifetimes: the cut record owns the section's request
 * while it waits, and ends with the later of the child's answer and the
 * section's client leaving; a file the child answered is given back (its
 * on_end: a pin, a waiter) once the cut is done.
 */
#include "sources/sources.h"

#include <sys/stat.h>

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/log.h"
#include "indexer/elf.h"
#include "resolver/rq.h"

struct cut {
	struct rq *rq; /* the section's, kept; NULL once it left */
	char name[ROUTE_PATH_MAX + 1]; /* the section's */
	struct route whole; /* the child's */
	int tries; /* whole files asked for: the debuginfo, the executable */
	int child; /* a child request runs: its answer is due */
	int working; /* the cut job runs */
	/* The child's answer. */
	void (*child_end)(void *);
	void *child_end_arg;
	enum resolve_answer_kind got;
	enum answer_outcome outcome;
	unsigned seconds;
	char why[256];
	char source[64];
	int fd;
	int cut; /* the job's verdict: 0 cut, ELF_NOTFOUND, -1 */
	struct rq_found f;
	struct event *ev; /* goes on after an answer, off its stack */
};

static void cut_next(struct cut *c);

/* The child is done with (its answer given back, if any). */
static void
cut_child_done(struct cut *c)
{
	void (*fn)(void *) = c->child_end;

	c->child_end = NULL;
	if (fn != NULL)
		fn(c->child_end_arg);
	if (c->fd != -1) {
		close(c->fd);
		c->fd = -1;
	}
}

static void
cut_free(struct cut *c)
{
	cut_child_done(c);
	if (c->ev != NULL)
		event_free(c->ev);
	free(c);
}

/* The section's client left: let go of the child, and of c once idle. */
static void
cut_parent_end(void *arg)
{
	struct cut *c = arg;

	rq_free(c->rq);
	c->rq = NULL;
	if (c->child && c->child_end != NULL) {
		/* Its waiter goes: no answer will come. */
		c->child = 0;
		cut_child_done(c);
	}
	if (!c->child && !c->working)
		cut_free(c);
}

/*
 * The section's request, taken back from c (which goes) before it is
 * answered: its client's end must not find c any more.
 */
static struct rq *
cut_take(struct cut *c)
{
	struct rq *rq = c->rq;

	c->rq = NULL;
	rq->cl.ops->on_end(rq->cl.arg, NULL, NULL);
	rq->src = NULL;
	cut_free(c);
	return rq;
}

/* The section's request goes on (r: SRC_ABSENT), or fails with why. */
static void
cut_answered(struct cut *c, enum src_result r)
{
	rq_resume(cut_take(c), r);
}

/* The whole file's fill failed (c's outcome): so does the section. */
static void
cut_failed(struct cut *c)
{
	enum answer_outcome o = c->outcome;
	unsigned seconds = c->seconds;
	char why[sizeof(c->why)], source[sizeof(c->source)];
	struct rq *rq;

	memcpy(why, c->why, sizeof(why));
	memcpy(source, c->source, sizeof(source));
	rq = cut_take(c);
	rq_resume(rq,
	    rq_outcome(rq, o, why[0] != '\0' ? why : NULL, seconds, source));
}

/* Worker: the section out of the whole file the child gave. */
static void
cut_work(void *arg)
{
	struct cut *c = arg;
	struct elf_section sec;
	char err[256];

	c->cut = elf_find_section(c->fd, c->name, &sec, err, sizeof(err));
	if (c->cut == -1)
		log_info("cannot cut a section from %s: %s", c->f.path, err);
	if (c->cut != 0 || fstat(c->fd, &c->f.st) == -1) {
		c->cut = c->cut == 0 ? -1 : c->cut;
		return;
	}
	c->f.offset = sec.offset;
	c->f.size = sec.size;
}

/* The loop: the cut is done. */
static void
cut_done(void *arg)
{
	struct cut *c = arg;
	struct rq *rq = c->rq;
	char source[sizeof(c->source)];

	c->working = 0;
	if (rq == NULL) {
		cut_free(c); /* the section's client left */
		return;
	}
	if (c->cut != 0) {
		cut_child_done(c);
		cut_next(c);
		return;
	}
	/* The section's answer takes the file; the child's goes back after. */
	rq->f = c->f;
	rq->f.fd = c->fd;
	c->fd = -1;
	snprintf(source, sizeof(source), "%s", c->source);
	rq = cut_take(c);
	rq_resume(rq, rq_send_found(rq, source));
}

/* The loop, off the child's stack: what its answer means. */
static void
cut_answer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct cut *c = arg;
	struct rq *rq = c->rq;

	(void)fd;
	(void)what;
	if (rq == NULL) {
		cut_free(c);
		return;
	}
	if (c->got == RESOLVE_FILE) {
		c->working = 1;
		if (pool_submit(rq->d->pool, cut_work, rq->th->inbox, cut_done,
			c) == -1) {
			c->working = 0;
			rq = cut_take(c);
			rq_resume(rq, rq_fail(rq, "server is shutting down"));
		}
		return;
	}
	cut_child_done(c);
	switch (c->outcome) {
	case ANSWER_NOT_FOUND:
	case ANSWER_FILL_NOT_FOUND:
	case ANSWER_REMEMBERED_MISS:
	case ANSWER_TOO_BIG:
		cut_next(c); /* not there: the next whole file */
		return;
	default:
		cut_failed(c);
		return;
	}
}

/* The child's answer (struct resolve_client_ops), on the section's loop. */
static void
cut_child_answer(void *arg, const struct resolve_answer *a)
{
	struct cut *c = arg;

	c->child = 0;
	c->got = a->kind;
	c->outcome = a->outcome;
	c->seconds = a->seconds;
	snprintf(c->why, sizeof(c->why), "%s", a->why != NULL ? a->why : "");
	snprintf(c->source, sizeof(c->source), "%s",
	    a->source != NULL ? a->source : "cache");
	if (a->kind == RESOLVE_FILE) {
		c->fd = a->fd;
		c->f.size = a->size;
		/* X-DEBUGINFOD-FILE: the file's path, else kind/section. */
		if (a->file != NULL)
			snprintf(c->f.path, sizeof(c->f.path), "%s", a->file);
		else
			snprintf(c->f.path, sizeof(c->f.path), "/%s/%.*s",
			    c->whole.endpoint == ROUTE_DEBUGINFO ? "debuginfo"
								 : "executable",
			    (int)sizeof(c->f.path) / 2, c->name);
	} else if (a->kind == RESOLVE_STREAM && a->fd != -1) {
		close(a->fd); /* never for a whole client */
	}
	event_active(c->ev, EV_TIMEOUT, 1);
}

static void
cut_child_wake(void *arg)
{
	(void)arg;
}

static void
cut_child_on_end(void *arg, void (*fn)(void *), void *fnarg)
{
	struct cut *c = arg;

	c->child_end = fn;
	c->child_end_arg = fnarg;
}

static void
cut_child_wait(void *arg)
{
	(void)arg;
}

static const struct resolve_client_ops cut_client = {
	cut_child_answer,
	cut_child_wake,
	cut_child_on_end,
	cut_child_wait,
};

/* Ask for the next whole file, or pass the section on. */
static void
cut_next(struct cut *c)
{
	struct rq *rq = c->rq;
	struct resolve_client cl = { .ops = &cut_client,
		.arg = c,
		.origin = rq->cl.origin,
		.whole = 1,
		.d = rq->d };

	if (c->tries == 2) {
		cut_answered(c, SRC_ABSENT);
		return;
	}
	c->whole.endpoint =
	    c->tries++ == 0 ? ROUTE_DEBUGINFO : ROUTE_EXECUTABLE;
	c->whole.arg[0] = '\0';
	c->child = 1;
	resolve_start(rq->th, &cl, &c->whole, RESOLVE_HELD);
}

static enum src_result
cut_lookup(struct rq *rq)
{
	struct rq *k;
	struct cut *c;

	if (!rq_section(rq) || rq->reach != RESOLVE_ALL)
		return SRC_ABSENT;
	rq_txn_end(rq);
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return rq_fail(rq, "out of memory");
	c->fd = -1;
	c->ev = event_new(rq->th->base, -1, 0, cut_answer_cb, c);
	if (c->ev == NULL || (k = rq_keep(rq)) == NULL) {
		if (c->ev != NULL)
			event_free(c->ev);
		free(c);
		return rq_fail(rq, "out of memory");
	}
	c->rq = k;
	k->src = c;
	c->whole = *k->rt;
	snprintf(c->name, sizeof(c->name), "%s", k->rt->arg);
	k->cl.ops->wait(k->cl.arg);
	k->cl.ops->on_end(k->cl.arg, cut_parent_end, c);
	cut_next(c);
	return SRC_PENDING;
}

const struct source source_cut = {
	.name = "cut",
	.lookup = cut_lookup,
};
