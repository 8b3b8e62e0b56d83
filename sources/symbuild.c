/*
 * sources/symbuild.c: symbol tables made here (sources/symbuild.h).
 *
 * The table of an id is a fill like any other (key: the id, CACHE_SYMTAB,
 * the format version), so a herd of requests joins one flight and costs
 * one build.  Its producer, on the producers' loop, asks the resolver for
 * the files the table is made of, as internal clients that want whole,
 * verified files (struct resolve_client.whole), every source asked:
 *
 *   1. the debuginfo;
 *   2. once a worker has read its dwz link and kinds (elf_read_info): its
 *      alt file, by the alt's own build-id, when it names one; and the
 *      executable when the debuginfo is not one itself (a separate debug
 *      file's program headers do not map the file, which file offsets
 *      need), or when there is no debuginfo (the executable's .symtab,
 *      .dynsym and .gnu_debugdata are then all there is);
 *   3. the build, on a worker (a long job, in the workers' sandbox), at
 *      most `builds` at once, the others waiting in order; the table goes
 *      into the flight's temp file, and the producer core checks it
 *      (symtab_open, its build-id), publishes it into the cache and queues
 *      it for the object store like any fill.
 *
 * Outcomes.  Neither a debuginfo nor an executable: the table is not
 * found, and nothing of the table's is remembered (the files' own
 * negative entries are the memory of it, and go when the files come).
 * A failure fetching a file, an alt file that is missing, or a build that
 * fails: the fill fails, remembered as the table's error entry for
 * error-ttl, so that a herd does not build again at once.  An executable
 * that is missing only leaves the table without program headers.
 *
 * Configuration: the child requests are asked under the snapshot
 * (daemon/snapshot.h) that was current when the fill began, which the
 * record holds to its end, as a connection's exchange holds its own: a
 * reload's settings (max-forwarded-for, error-ttl, misses-max, ...) so
 * reach a table's files as they reach every request, and one table's
 * files are all asked under one configuration.  The reload hands each new
 * snapshot over (symbuilds_switch), with its number of builds at once.
 *
 * Threads: everything runs on the producers' loop but the jobs' work; the
 * child requests run there too, with a resolve_thread of their own (its
 * own index reader).  A record (struct sbuild) is its producer's data:
 * released with the flight, by which time its children have been given
 * back and no job of it runs (at shutdown the pool is drained first).
 */
#include "sources/symbuild.h"

#include <sys/stat.h>

#include <event2/event.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/index.h"
#include "conf/config.h"
#include "daemon/clock.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/snapshot.h"
#include "indexer/elf.h"
#include "resolver/produce.h"
#include "resolver/rq.h"
#include "sources/sources.h"
#include "symbolizer/build.h"
#include "symbolizer/symtab.h"

/* The files of a table, in the order they are asked for. */
enum sb_which { SB_DEBUG, SB_EXEC, SB_ALT, SB_NFILES };

/* Where a file stands. */
enum sb_state {
	SB_UNASKED,
	SB_ASKING,
	SB_FILE, /* fd is the whole file */
	SB_MISSING, /* no source has it */
	SB_FAILED, /* its source failed: why */
	SB_LOCAL, /* this server could not get it now (why): not remembered */
};

struct sbuild;

/* One file, asked for as a request of its own. */
struct sbchild {
	struct sbuild *b;
	enum sb_which which;
	enum sb_state state;
	struct route rt;
	int fd;
	void (*end)(void *); /* the resolver's, once answered */
	void *end_arg;
	char why[200];
};

struct sbuild {
	struct symbuilds *sb;
	struct prod *p;
	/* The configuration the children are asked under; NULL: sb->d. */
	struct snapshot *snap;
	struct resolve_origin origin; /* the fill's, for the children */
	char peer[64];
	struct sbchild child[SB_NFILES];
	unsigned asking; /* children not answered yet */
	struct event *ev; /* goes on, off a child's answer */
	int probing, probed, asked_more;
	struct elf_info info; /* the debuginfo's (probed) */
	char err[256];
	/* The build. */
	int queued, building;
	struct sbuild *next; /* waiting for a build */
	int rc;
	struct symbuild_stats st;
	uint64_t size;
	int64_t t0;
};

struct symbuilds {
	const struct resolve_deps *d;
	struct resolve_thread th; /* the producers' loop, for the children */
	char tmpdir[PATH_MAX];
	struct snapshot *cur; /* held; NULL before the first switch */
	unsigned max;
	atomic_uint running, waiting;
	struct sbuild *head, *tail; /* waiting for a build, in order */
};

static void sb_step(struct sbuild *b);

/* ------------------------------------------------------------ children */

/* Give a child's answer back (a pin, a waiter) and close its file. */
static void
child_done(struct sbchild *c)
{
	void (*fn)(void *) = c->end;

	c->end = NULL;
	if (fn != NULL)
		fn(c->end_arg);
	if (c->fd != -1) {
		close(c->fd);
		c->fd = -1;
	}
}

static void
child_answer(void *arg, const struct resolve_answer *a)
{
	struct sbchild *c = arg;

	c->b->asking--;
	if (a->kind == RESOLVE_FILE) {
		c->state = SB_FILE;
		c->fd = a->fd;
	} else {
		if (a->kind == RESOLVE_STREAM && a->fd != -1)
			close(a->fd); /* never for a whole client */
		switch (
		    a->kind == RESOLVE_OUTCOME ? a->outcome : ANSWER_INTERNAL) {
		case ANSWER_NOT_FOUND:
		case ANSWER_FILL_NOT_FOUND:
		case ANSWER_REMEMBERED_MISS:
			c->state = SB_MISSING;
			break;
		case ANSWER_INTERNAL:
		case ANSWER_UNAVAILABLE:
			c->state = SB_LOCAL;
			snprintf(c->why, sizeof(c->why), "%s",
			    a->why != NULL ? a->why : "failed");
			break;
		default:
			c->state = SB_FAILED;
			snprintf(c->why, sizeof(c->why), "%s",
			    a->why != NULL ? a->why : "failed");
			break;
		}
	}
	/* Off the resolver's stack: it may still hold the request. */
	event_active(c->b->ev, EV_TIMEOUT, 1);
}

static void
child_wake(void *arg)
{
	(void)arg;
}

static void
child_on_end(void *arg, void (*fn)(void *), void *fnarg)
{
	struct sbchild *c = arg;

	c->end = fn;
	c->end_arg = fnarg;
}

static void
child_wait(void *arg)
{
	(void)arg;
}

static const struct resolve_client_ops child_client = {
	child_answer,
	child_wake,
	child_on_end,
	child_wait,
};

/* Ask for file which of id, endpoint ep. */
static void
child_ask(struct sbuild *b, enum sb_which which, enum route_endpoint ep,
    const struct buildid *id)
{
	struct sbchild *c = &b->child[which];
	struct resolve_client cl = { .ops = &child_client,
		.arg = c,
		.origin = &b->origin,
		.whole = 1,
		.d = b->snap != NULL ? b->snap->rd : NULL };

	c->state = SB_ASKING;
	c->rt.endpoint = ep;
	c->rt.id = *id;
	c->rt.arg[0] = '\0';
	b->asking++;
	resolve_start(&b->sb->th, &cl, &c->rt, RESOLVE_ALL);
}

/* ------------------------------------------------------------- record */

static void
sb_release(void *data)
{
	struct sbuild *b = data, **pp, *prev = NULL;
	struct symbuilds *sb = b->sb;
	unsigned i;

	if (b->queued) {
		for (pp = &sb->head; *pp != b; pp = &(*pp)->next)
			prev = *pp;
		*pp = b->next;
		if (sb->tail == b)
			sb->tail = prev;
		atomic_fetch_sub(&sb->waiting, 1);
	}
	for (i = 0; i < SB_NFILES; i++)
		child_done(&b->child[i]);
	if (b->ev != NULL)
		event_free(b->ev);
	snapshot_unref(b->snap);
	free(b);
}

/*
 * The fill fails, "what: why" (b goes with it): remembered for error-ttl,
 * unless it was this server's (local: memory, a full table of fills, a
 * shutdown), which the next request tries again.
 */
static void
sb_fail(struct sbuild *b, const char *what, const char *why, int local)
{
	char msg[256];

	snprintf(msg, sizeof(msg), "%.60s: %.190s", what, why);
	if (local)
		produce_end(b->p, FLIGHT_UNAVAILABLE, msg);
	else
		produce_fetched(b->p, UPSTREAM_FAILED, msg);
}

/* The fill fails because the file of c could not be had. */
static void
sb_fail_child(struct sbuild *b, const struct sbchild *c)
{
	static const char *const what[SB_NFILES] = { "its debuginfo",
		"its executable", "its dwz alt file" };

	sb_fail(b, what[c->which], c->why, c->state == SB_LOCAL);
}

/* ------------------------------------------------------------- builds */

static void build_start(struct sbuild *b);

/*
 * 1 once the loop has stopped: a completion then runs at shutdown, after
 * the pool is gone (daemon/main.c), and must start nothing.
 */
static int
sb_stopping(const struct symbuilds *sb)
{
	return event_base_got_break(sb->th.base);
}

/* The loop: the builds waiting start, in order, while there is room. */
static void
builds_next(struct symbuilds *sb)
{
	struct sbuild *next;

	while (
	    atomic_load(&sb->running) < sb->max && (next = sb->head) != NULL) {
		sb->head = next->next;
		if (sb->head == NULL)
			sb->tail = NULL;
		next->queued = 0;
		atomic_fetch_sub(&sb->waiting, 1);
		build_start(next);
	}
	metrics_symtab_building(atomic_load(&sb->running),
	    atomic_load(&sb->waiting));
}

/* Worker: the table, into the flight's temp file. */
static void
build_work(void *arg)
{
	struct sbuild *b = arg;
	struct symbuild_in in = { b->child[SB_DEBUG].fd, b->child[SB_ALT].fd,
		b->child[SB_EXEC].fd, b->sb->tmpdir };
	struct stat st;

	b->rc = symbuild_run(&in, b->p->fd, &b->st, b->err, sizeof(b->err));
	if (b->rc == 0 && fstat(b->p->fd, &st) == -1) {
		snprintf(b->err, sizeof(b->err), "cannot read the table back");
		b->rc = -1;
	}
	b->size = b->rc == 0 ? (uint64_t)st.st_size : 0;
}

/* The loop: the build ended; the next one waiting starts. */
static void
build_done(void *arg)
{
	static const struct cache_meta none = { "", "", "", "", 0 };
	struct sbuild *b = arg;
	struct symbuilds *sb = b->sb;
	double seconds = (double)(clock_mono_ns() - b->t0) / 1e9;
	char hex[BUILDID_HEX_MAX];
	unsigned i;

	b->building = 0;
	atomic_fetch_sub(&sb->running, 1);
	if (sb_stopping(sb)) {
		produce_end(b->p, FLIGHT_UNAVAILABLE,
		    "server is shutting down");
		return;
	}
	builds_next(sb);
	for (i = 0; i < SB_NFILES; i++)
		child_done(&b->child[i]);
	buildid_format(&b->p->w.id, hex);
	metrics_symtab_build(b->rc == 0, seconds, b->size);
	if (b->rc != 0) {
		log_warnx("cannot build the symbol table of %s: %s", hex,
		    b->err);
		sb_fail(b, "cannot build the table", b->err, 0);
		return;
	}
	log_info("symbol table of %s built in %.2fs: %llu bytes from %llu "
		 "of DWARF, %u units",
	    hex, seconds, (unsigned long long)b->size,
	    (unsigned long long)b->st.dwarf_bytes, b->st.units);
	if (produce_head(b->p, b->size, clock_now(), &none, "symbuild") == -1) {
		produce_end(b->p, FLIGHT_UNAVAILABLE, "out of memory");
		return;
	}
	produce_progress(b->p, b->size);
	produce_fetched(b->p, UPSTREAM_OK, NULL);
}

/* The loop: build b now. */
static void
build_start(struct sbuild *b)
{
	struct symbuilds *sb = b->sb;

	if (produce_open(b->p) == -1) {
		produce_fetched(b->p, UPSTREAM_LOCAL, b->p->why);
		return;
	}
	b->building = 1;
	b->t0 = clock_mono_ns();
	atomic_fetch_add(&sb->running, 1);
	if (pool_submit_long(sb->d->pool, build_work, sb->th.inbox, build_done,
		b) == -1) {
		b->building = 0;
		atomic_fetch_sub(&sb->running, 1);
		produce_end(b->p, FLIGHT_UNAVAILABLE,
		    "server is shutting down");
	}
}

/* The loop: build b, now or in its turn. */
static void
build_queue(struct sbuild *b)
{
	struct symbuilds *sb = b->sb;

	if (atomic_load(&sb->running) < sb->max) {
		build_start(b);
	} else {
		b->queued = 1;
		b->next = NULL;
		if (sb->tail != NULL)
			sb->tail->next = b;
		else
			sb->head = b;
		sb->tail = b;
		atomic_fetch_add(&sb->waiting, 1);
	}
	metrics_symtab_building(atomic_load(&sb->running),
	    atomic_load(&sb->waiting));
}

/* -------------------------------------------------------------- steps */

/* Worker: what the debuginfo links to and is. */
static void
probe_work(void *arg)
{
	struct sbuild *b = arg;

	if (elf_read_info(b->child[SB_DEBUG].fd, &b->info, b->err,
		sizeof(b->err)) != 0 &&
	    b->err[0] == '\0')
		snprintf(b->err, sizeof(b->err), "not ELF");
}

static void
probe_done(void *arg)
{
	struct sbuild *b = arg;

	b->probing = 0;
	b->probed = 1;
	if (sb_stopping(b->sb))
		produce_end(b->p, FLIGHT_UNAVAILABLE,
		    "server is shutting down");
	else
		sb_step(b);
}

/*
 * The loop: what the files answered so far says to do next.  Each step
 * either waits (a child, a job), or ends the fill (b may be gone).
 */
static void
sb_step(struct sbuild *b)
{
	struct sbchild *d = &b->child[SB_DEBUG], *x = &b->child[SB_EXEC],
		       *a = &b->child[SB_ALT];
	char hex[BUILDID_HEX_MAX];

	if (b->asking > 0 || b->probing || b->queued || b->building)
		return;
	if (d->state == SB_FAILED || d->state == SB_LOCAL) {
		sb_fail_child(b, d);
		return;
	}
	if (d->state == SB_FILE && !b->probed) {
		b->probing = 1;
		if (pool_submit(b->sb->d->pool, probe_work, b->sb->th.inbox,
			probe_done, b) == -1) {
			b->probing = 0;
			produce_end(b->p, FLIGHT_UNAVAILABLE,
			    "server is shutting down");
		}
		return;
	}
	if (!b->asked_more) {
		b->asked_more = 1;
		if (d->state == SB_FILE && b->err[0] != '\0') {
			sb_fail(b, "its debuginfo", b->err, 0);
			return;
		}
		if (d->state == SB_FILE && b->info.alt_id.len > 0)
			child_ask(b, SB_ALT, ROUTE_DEBUGINFO, &b->info.alt_id);
		if (d->state != SB_FILE ||
		    (b->info.kinds & ELF_KIND_EXECUTABLE) == 0)
			child_ask(b, SB_EXEC, ROUTE_EXECUTABLE, &b->p->w.id);
		if (b->asking > 0)
			return;
	}
	if (a->state == SB_MISSING) {
		buildid_format(&b->info.alt_id, hex);
		sb_fail(b, "its dwz alt file is missing", hex, 0);
		return;
	}
	if (a->state == SB_FAILED || a->state == SB_LOCAL) {
		sb_fail_child(b, a);
		return;
	}
	if (x->state == SB_FAILED || x->state == SB_LOCAL) {
		sb_fail_child(b, x);
		return;
	}
	if (d->state != SB_FILE && x->state != SB_FILE) {
		/* Nothing remembered of the table: the files' entries are. */
		produce_end(b->p, FLIGHT_NOTFOUND,
		    "no debuginfo or executable has this build-id");
		return;
	}
	build_queue(b);
}

static void
sb_step_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	sb_step(arg);
}

/* ------------------------------------------------------------- source */

/* A table is asked for: its fill, which this source makes. */
static enum src_result
symbuild_lookup(struct rq *rq)
{
	struct prod_what w;

	if (rq_kind(rq) != CACHE_SYMTAB || rq->th->d->symbuild == NULL ||
	    rq->th->d->prod == NULL)
		return SRC_ABSENT;
	rq_what(rq, &w);
	snprintf(w.from, sizeof(w.from), "a build");
	return rq_produce(rq, &w, NULL);
}

/* The loop: make p's table, from the files the resolver brings. */
static void
symbuild_produce(struct prod *p)
{
	struct symbuilds *sb = produce_deps(p)->symbuild;
	struct sbuild *b;
	unsigned i;

	if (p->w.kind != CACHE_SYMTAB || sb == NULL) {
		produce_absent(p);
		return;
	}
	if ((b = calloc(1, sizeof(*b))) == NULL ||
	    (b->ev = event_new(sb->th.base, -1, 0, sb_step_cb, b)) == NULL) {
		free(b);
		produce_end(p, FLIGHT_UNAVAILABLE, "out of memory");
		return;
	}
	b->sb = sb;
	b->p = p;
	b->snap = sb->cur != NULL ? snapshot_ref(sb->cur) : NULL;
	for (i = 0; i < SB_NFILES; i++) {
		b->child[i].b = b;
		b->child[i].which = (enum sb_which)i;
		b->child[i].fd = -1;
	}
	rq_origin_of(&p->w, &b->origin, b->peer, sizeof(b->peer));
	p->data = b;
	child_ask(b, SB_DEBUG, ROUTE_DEBUGINFO, &p->w.id);
}

const struct source source_symbuild = {
	.name = "symbuild",
	.held = 1,
	.lookup = symbuild_lookup,
	.produce = symbuild_produce,
	.release = sb_release,
	.remembers = 1,
};

/* ---------------------------------------------------------------- set */

struct symbuilds *
symbuilds_new(const struct resolve_deps *d, struct event_base *base,
    struct pool_inbox *inbox, const char *tmpdir, unsigned builds, char *err,
    size_t errlen)
{
	struct symbuilds *sb;

	if ((sb = calloc(1, sizeof(*sb))) == NULL ||
	    (sb->th.rd = index_reader_new(d->idx)) == NULL) {
		free(sb);
		snprintf(err, errlen, "symbol tables: out of memory");
		return NULL;
	}
	if (snprintf(sb->tmpdir, sizeof(sb->tmpdir), "%s", tmpdir) >=
	    (int)sizeof(sb->tmpdir)) {
		snprintf(err, errlen, "symbol tables: %s: path too long",
		    tmpdir);
		symbuilds_free(sb);
		return NULL;
	}
	sb->d = d;
	sb->th.d = d;
	sb->th.base = base;
	sb->th.inbox = inbox;
	sb->max = builds > 0 ? builds : 1;
	atomic_init(&sb->running, 0);
	atomic_init(&sb->waiting, 0);
	return sb;
}

void
symbuilds_switch(struct symbuilds *sb, struct snapshot *s)
{
	if (sb == NULL)
		return;
	snapshot_unref(sb->cur);
	sb->cur = snapshot_ref(s);
	sb->max =
	    s->cfg->symbolicate_builds > 0 ? s->cfg->symbolicate_builds : 1;
	builds_next(sb);
}

void
symbuilds_free(struct symbuilds *sb)
{
	if (sb == NULL)
		return;
	snapshot_unref(sb->cur);
	index_reader_free(sb->th.rd);
	free(sb);
}

void
symbuilds_counts(struct symbuilds *sb, unsigned *running, unsigned *waiting)
{
	*running = sb != NULL ? atomic_load(&sb->running) : 0;
	*waiting = sb != NULL ? atomic_load(&sb->waiting) : 0;
}
