/*
 * daemon/symtabs.c: the open symbol tables (daemon/symtabs.h).
 *
 * An entry is one build-id: opening (requests wait on it), then open (a
 * table, in the LRU list, most recently used first).  Its references are
 * the map's, while it is in the map, and one per want that holds its
 * table; the last one closes the table.  Evicted, invalidated or failed
 * entries leave the map at once, so a new request starts afresh while the
 * requests still using an old table finish with it.
 *
 * An opening (struct opener) belongs to the HTTP thread of the request
 * that found no entry: its resolver request (a whole-file client of
 * ROUTE_SYMTAB, RESOLVE_HELD reach: the cache, the object store, the
 * builder) answers on that loop, symtab_open runs on a worker, and the
 * end decides every waiter under the set's lock, activating their events.
 * It carries the origin of that first request (a copy) for what the
 * sources forward, and holds its configuration's snapshot
 * (daemon/snapshot.h), whose request path it asks: an opening that
 * outlives its request still runs under the configuration it began in.
 */
#include "daemon/symtabs.h"

#include <event2/event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/blobstore.h"
#include "cache/index.h"
#include "cache/key.h"
#include "daemon/clock.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/pool.h"
#include "daemon/route.h"
#include "daemon/snapshot.h"
#include "resolver/resolve.h"
#include "symbolizer/symtab.h"

#define BUCKETS 1024
/* Askings of one opening: a cached table that does not verify, again. */
#define TRIES 2
/* A table's key: its format's version, "v1" (daemon/route.h ROUTE_SYMTAB). */
#define STR(x) #x
#define XSTR(x) STR(x)
#define TABLE_ARG "v" XSTR(SYMTAB_VERSION)

struct symtabs_entry {
	struct buildid id;
	struct cache_key key;
	int open;
	struct symtab *t; /* open: the table */
	uint64_t bytes; /* it maps */
	int64_t stored; /* its cache entry's; 0: none was there */
	unsigned refs;
	int in_map;
	struct symtabs_entry *hnext; /* in its bucket */
	struct symtabs_entry *prev, *next; /* in the LRU list, when open */
	struct symtabs_want *waiters; /* opening */
};

struct symtabs {
	struct blobstore *bs;
	unsigned max_tables;
	uint64_t max_bytes;
	pthread_mutex_t mu;
	struct symtabs_entry *map[BUCKETS];
	struct symtabs_entry *head, *tail; /* open, most recently used first */
	unsigned tables;
	uint64_t bytes;
};

struct opener;

struct symtabs_thread {
	struct symtabs *st;
	struct resolve_thread *th;
	struct opener *ops; /* running on this thread */
};

/* The first request's origin, owned. */
struct origin_copy {
	struct resolve_origin o;
	char peer[64];
	char ua[256];
	char xff[2048];
	char via[1024];
};

struct opener {
	struct symtabs_thread *tt;
	struct symtabs_entry *e;
	struct opener *prev, *next;
	struct route rt;
	struct origin_copy oc;
	struct snapshot *snap; /* the first request's, held */
	struct event *ev; /* goes on, off the resolver's stack */
	int tries;
	int asking; /* the resolver's answer is due */
	int retry; /* ask again at the event */
	/* The resolver's answer. */
	enum resolve_answer_kind kind;
	enum answer_outcome outcome;
	enum metrics_result result;
	char source[64];
	char why[200];
	int fd;
	void (*end)(void *);
	void *end_arg;
	/* The opening's. */
	int64_t stored;
	struct symtab *t;
	int corrupt; /* the cache's table did not verify: dropped */
	char err[200];
};

/* ---------------------------------------------------------- entries */

static unsigned
bucket_of(const struct buildid *id)
{
	uint32_t h = 2166136261u;
	unsigned i;

	for (i = 0; i < id->len; i++)
		h = (h ^ id->bytes[i]) * 16777619u;
	return h % BUCKETS;
}

static struct symtabs_entry *
entry_find(struct symtabs *st, const struct buildid *id)
{
	struct symtabs_entry *e;

	for (e = st->map[bucket_of(id)]; e != NULL; e = e->hnext)
		if (buildid_equal(&e->id, id))
			return e;
	return NULL;
}

static void
entry_unref_locked(struct symtabs_entry *e)
{
	if (--e->refs > 0)
		return;
	if (e->t != NULL)
		symtab_close(e->t);
	free(e);
}

static void
lru_unlink(struct symtabs *st, struct symtabs_entry *e)
{
	if (e->prev != NULL)
		e->prev->next = e->next;
	else
		st->head = e->next;
	if (e->next != NULL)
		e->next->prev = e->prev;
	else
		st->tail = e->prev;
	e->prev = e->next = NULL;
}

static void
lru_push(struct symtabs *st, struct symtabs_entry *e)
{
	e->prev = NULL;
	e->next = st->head;
	if (st->head != NULL)
		st->head->prev = e;
	else
		st->tail = e;
	st->head = e;
}

/* e leaves the map (and the LRU list), with the map's reference. */
static void
map_remove_locked(struct symtabs *st, struct symtabs_entry *e)
{
	struct symtabs_entry **pp;

	for (pp = &st->map[bucket_of(&e->id)]; *pp != NULL; pp = &(*pp)->hnext)
		if (*pp == e) {
			*pp = e->hnext;
			break;
		}
	e->in_map = 0;
	if (e->open) {
		lru_unlink(st, e);
		st->tables--;
		st->bytes -= e->bytes;
	}
	entry_unref_locked(e);
}

/* Close the least recently used tables but keep while over the bounds. */
static void
bounds_locked(struct symtabs *st, const struct symtabs_entry *keep)
{
	while ((st->tables > st->max_tables || st->bytes > st->max_bytes) &&
	    st->tail != NULL && st->tail != keep)
		map_remove_locked(st, st->tail);
}

/*
 * On tt's loop: 1 while e's table is the one the cache holds (the same
 * entry, or none when none was), which is then touched as a hit; 0 once
 * it went (purged, evicted) or was replaced.  An index that cannot be
 * read keeps the table.
 */
static int
entry_current(struct symtabs_thread *tt, struct symtabs_entry *e)
{
	struct index_reader *rd = tt->th->rd;
	struct blob_info bi;
	int rc, cur = 1;

	if (rd == NULL || index_reader_begin(rd) == -1)
		return 1;
	rc = blob_lookup(rd, &e->key, &bi);
	if (rc == 0)
		cur = bi.stored == e->stored;
	else if (rc == INDEX_NOTFOUND)
		cur = e->stored == 0;
	index_reader_end(rd);
	if (cur && rc == 0)
		blob_touch(tt->st->bs, &e->key, clock_now());
	return cur;
}

/*
 * The opening of e ended: state, with t (OPEN: the entry's from now on)
 * opened from the cache entry stored, or why.  Every waiter is decided and
 * its event activated.
 */
static void
entry_finish(struct symtabs *st, struct symtabs_entry *e,
    enum symtabs_state state, struct symtab *t, int64_t stored, const char *why)
{
	struct symtabs_want *w, *next;
	unsigned tables;
	uint64_t bytes;

	pthread_mutex_lock(&st->mu);
	if (state == SYMTABS_OPEN) {
		e->open = 1;
		e->t = t;
		e->bytes = symtab_size(t);
		e->stored = stored;
		if (e->in_map) {
			lru_push(st, e);
			st->tables++;
			st->bytes += e->bytes;
			bounds_locked(st, e);
		}
	}
	for (w = e->waiters; w != NULL; w = next) {
		next = w->next;
		w->next = NULL;
		w->state = state;
		if (state == SYMTABS_OPEN) {
			w->table = t;
			e->refs++;
		} else {
			snprintf(w->why, sizeof(w->why), "%s",
			    why != NULL ? why : "");
			w->e = NULL;
		}
		event_active(w->ev, EV_READ, 1);
	}
	e->waiters = NULL;
	/* The entry's reference: the map's, or the one taken to open it. */
	if (state != SYMTABS_OPEN && e->in_map)
		map_remove_locked(st, e);
	tables = st->tables;
	bytes = st->bytes;
	pthread_mutex_unlock(&st->mu);
	metrics_symtabs_open(tables, bytes);
}

/* ---------------------------------------------------------- openings */

static void opener_ask(struct opener *op);

/* The resolver's answer given back (a pin, a waiter), its file closed. */
static void
opener_child_done(struct opener *op)
{
	void (*fn)(void *) = op->end;

	op->end = NULL;
	if (fn != NULL)
		fn(op->end_arg);
	if (op->fd != -1) {
		close(op->fd);
		op->fd = -1;
	}
}

static void
opener_end(struct opener *op, enum symtabs_state state, struct symtab *t,
    const char *why)
{
	struct symtabs_thread *tt = op->tt;

	opener_child_done(op);
	entry_finish(tt->st, op->e, state, t, op->stored, why);
	if (op->prev != NULL)
		op->prev->next = op->next;
	else
		tt->ops = op->next;
	if (op->next != NULL)
		op->next->prev = op->prev;
	if (op->ev != NULL)
		event_free(op->ev);
	snapshot_unref(op->snap);
	free(op);
}

/* Worker: open and check the table the resolver gave. */
static void
open_work(void *arg)
{
	struct opener *op = arg;
	struct buildid id;
	const char *why = NULL;
	char err[256];

	if ((op->t = symtab_open(op->fd, &why)) != NULL) {
		symtab_buildid(op->t, &id);
		if (!buildid_equal(&id, &op->e->id)) {
			symtab_close(op->t);
			op->t = NULL;
			why = "a table of another build-id";
		}
	}
	if (op->t != NULL)
		return;
	snprintf(op->err, sizeof(op->err), "%s", why);
	/* The cache's own bytes: they go, and the table is made again. */
	if (op->result == METRICS_HIT) {
		op->corrupt = 1;
		if (blob_drop(op->tt->st->bs, &op->e->key, err, sizeof(err)) ==
		    -1)
			log_warnx("cannot delete a damaged symbol table: %s",
			    err);
	}
}

static void
open_done(void *arg)
{
	struct opener *op = arg;
	char hex[BUILDID_HEX_MAX], why[256];

	opener_child_done(op);
	if (op->t != NULL) {
		if (op->result == METRICS_HIT)
			metrics_symtab_hit(METRICS_SYMTAB_CACHE);
		else if (strcmp(op->source, "symbuild") != 0)
			metrics_symtab_hit(METRICS_SYMTAB_STORE);
		opener_end(op, SYMTABS_OPEN, op->t, NULL);
		return;
	}
	buildid_format(&op->e->id, hex);
	if (op->corrupt) {
		metrics_symtab_corrupt();
		log_warnx("the cached symbol table of %s does not verify (%s): "
			  "deleted%s",
		    hex, op->err,
		    op->tries + 1 < TRIES ? ", and asked for again" : "");
	}
	if (op->corrupt && ++op->tries < TRIES) {
		/* From the loop's next turn: a worker's completion may run
		 * where no loop does any more (at shutdown). */
		op->retry = 1;
		event_active(op->ev, EV_TIMEOUT, 1);
		return;
	}
	snprintf(why, sizeof(why), "its symbol table does not verify: %s",
	    op->err);
	opener_end(op, SYMTABS_ERROR, NULL, why);
}

/* The loop: the resolver answered (or the opening asks again). */
static void
opener_cb(evutil_socket_t fd, short what, void *arg)
{
	struct opener *op = arg;
	struct index_reader *rd = op->tt->th->rd;
	struct blob_info bi;
	int missing;

	(void)fd;
	(void)what;
	if (op->retry) {
		op->retry = 0;
		opener_ask(op);
		return;
	}
	if (op->kind == RESOLVE_FILE) {
		/* The cache entry the table is (when it is cached). */
		op->stored = 0;
		if (rd != NULL && index_reader_begin(rd) == 0) {
			if (blob_lookup(rd, &op->e->key, &bi) == 0)
				op->stored = bi.stored;
			index_reader_end(rd);
		}
		if (pool_submit(op->snap->rd->pool, open_work,
			op->tt->th->inbox, open_done, op) == -1)
			opener_end(op, SYMTABS_ERROR, NULL,
			    "server is shutting down");
		return;
	}
	missing = op->kind == RESOLVE_OUTCOME &&
	    (op->outcome == ANSWER_NOT_FOUND ||
		op->outcome == ANSWER_FILL_NOT_FOUND ||
		op->outcome == ANSWER_REMEMBERED_MISS);
	opener_end(op, missing ? SYMTABS_MISSING : SYMTABS_ERROR, NULL,
	    op->why[0] != '\0' ? op->why : "failed");
}

static void
opener_answer(void *arg, const struct resolve_answer *a)
{
	struct opener *op = arg;

	op->asking = 0;
	op->kind = a->kind;
	op->outcome = a->outcome;
	op->result = a->result;
	snprintf(op->source, sizeof(op->source), "%s",
	    a->source != NULL ? a->source : "");
	snprintf(op->why, sizeof(op->why), "%s", a->why != NULL ? a->why : "");
	if (a->kind == RESOLVE_FILE) {
		op->fd = a->fd;
	} else if (a->kind == RESOLVE_STREAM && a->fd != -1) {
		close(a->fd); /* never for a whole client */
		snprintf(op->why, sizeof(op->why), "a stream, not a file");
	}
	event_active(op->ev, EV_TIMEOUT, 1);
}

static void
opener_wake(void *arg)
{
	(void)arg;
}

static void
opener_on_end(void *arg, void (*fn)(void *), void *fnarg)
{
	struct opener *op = arg;

	op->end = fn;
	op->end_arg = fnarg;
}

static void
opener_wait(void *arg)
{
	(void)arg;
}

static const struct resolve_client_ops opener_client = {
	opener_answer,
	opener_wake,
	opener_on_end,
	opener_wait,
};

static void
opener_ask(struct opener *op)
{
	struct resolve_client cl = { .ops = &opener_client,
		.arg = op,
		.origin = &op->oc.o,
		.whole = 1,
		.d = op->snap->rd };

	op->asking = 1;
	op->t = NULL;
	op->corrupt = 0;
	op->err[0] = '\0';
	resolve_start(op->tt->th, &cl, &op->rt, RESOLVE_HELD);
}

/* Copy a text into buf (len bytes) as an origin's text. */
static void
text_own(struct resolve_text *to, struct resolve_text from, char *buf,
    size_t len)
{
	size_t n = from.p == NULL ? 0 : from.n < len ? from.n : len - 1;

	to->p = from.p == NULL ? NULL : buf;
	to->n = n;
	if (n > 0)
		memcpy(buf, from.p, n);
}

/* On tt's loop: open e, as o asked under snap. */
static void
opener_start(struct symtabs_thread *tt, struct symtabs_entry *e,
    const struct resolve_origin *o, struct snapshot *snap)
{
	struct opener *op;

	if ((op = calloc(1, sizeof(*op))) == NULL ||
	    (op->ev = event_new(tt->th->base, -1, 0, opener_cb, op)) == NULL) {
		free(op);
		entry_finish(tt->st, e, SYMTABS_ERROR, NULL, 0,
		    "out of memory");
		return;
	}
	op->tt = tt;
	op->e = e;
	op->snap = snapshot_ref(snap);
	op->fd = -1;
	op->rt.endpoint = ROUTE_SYMTAB;
	op->rt.id = e->id;
	snprintf(op->rt.arg, sizeof(op->rt.arg), "%s", TABLE_ARG);
	snprintf(op->oc.peer, sizeof(op->oc.peer), "%s",
	    o->peer != NULL ? o->peer : "-");
	op->oc.o.peer = op->oc.peer;
	text_own(&op->oc.o.user_agent, o->user_agent, op->oc.ua,
	    sizeof(op->oc.ua));
	text_own(&op->oc.o.forwarded_for, o->forwarded_for, op->oc.xff,
	    sizeof(op->oc.xff));
	text_own(&op->oc.o.via, o->via, op->oc.via, sizeof(op->oc.via));
	op->next = tt->ops;
	if (tt->ops != NULL)
		tt->ops->prev = op;
	tt->ops = op;
	opener_ask(op);
}

/* ---------------------------------------------------------------- set */

void
symtabs_get(struct symtabs_thread *tt, struct symtabs_want *w, struct event *ev,
    const struct resolve_origin *o, struct snapshot *snap)
{
	struct symtabs *st = tt->st;
	struct symtabs_entry *e;
	unsigned tables;
	uint64_t bytes;

	w->ev = ev;
	w->e = NULL;
	w->next = NULL;
	w->table = NULL;
	w->why[0] = '\0';
	w->state = SYMTABS_WAITING;
	for (;;) {
		pthread_mutex_lock(&st->mu);
		e = entry_find(st, &w->id);
		if (e != NULL && e->open) {
			e->refs++;
			pthread_mutex_unlock(&st->mu);
			if (entry_current(tt, e)) {
				pthread_mutex_lock(&st->mu);
				if (e->in_map) {
					lru_unlink(st, e);
					lru_push(st, e);
				}
				pthread_mutex_unlock(&st->mu);
				w->e = e;
				w->table = e->t;
				w->state = SYMTABS_OPEN;
				metrics_symtab_hit(METRICS_SYMTAB_OPEN);
				return;
			}
			/* Its cache entry went: this table is no more. */
			pthread_mutex_lock(&st->mu);
			if (e->in_map)
				map_remove_locked(st, e);
			entry_unref_locked(e);
			tables = st->tables;
			bytes = st->bytes;
			pthread_mutex_unlock(&st->mu);
			metrics_symtabs_open(tables, bytes);
			continue;
		}
		if (e != NULL) {
			w->e = e;
			w->next = e->waiters;
			e->waiters = w;
			pthread_mutex_unlock(&st->mu);
			return;
		}
		if ((e = calloc(1, sizeof(*e))) == NULL) {
			pthread_mutex_unlock(&st->mu);
			w->state = SYMTABS_ERROR;
			snprintf(w->why, sizeof(w->why), "out of memory");
			return;
		}
		e->id = w->id;
		cache_key_make(&e->key, &e->id, CACHE_SYMTAB, TABLE_ARG);
		e->refs = 1; /* the map's */
		e->in_map = 1;
		e->hnext = st->map[bucket_of(&e->id)];
		st->map[bucket_of(&e->id)] = e;
		w->e = e;
		e->waiters = w;
		pthread_mutex_unlock(&st->mu);
		opener_start(tt, e, o, snap);
		return;
	}
}

enum symtabs_state
symtabs_poll(struct symtabs *st, struct symtabs_want *w)
{
	enum symtabs_state s;

	pthread_mutex_lock(&st->mu);
	s = w->state;
	pthread_mutex_unlock(&st->mu);
	return s;
}

/* Under the lock: w leaves the waiters of its entry, if it is one. */
static void
want_unlink_locked(struct symtabs_want *w)
{
	struct symtabs_want **pp;

	if (w->state != SYMTABS_WAITING || w->e == NULL)
		return;
	for (pp = &w->e->waiters; *pp != NULL; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	w->e = NULL;
}

enum symtabs_state
symtabs_stop(struct symtabs *st, struct symtabs_want *w)
{
	enum symtabs_state s;

	pthread_mutex_lock(&st->mu);
	want_unlink_locked(w);
	s = w->state;
	pthread_mutex_unlock(&st->mu);
	return s;
}

void
symtabs_release(struct symtabs *st, struct symtabs_want *w)
{
	pthread_mutex_lock(&st->mu);
	want_unlink_locked(w);
	if (w->state == SYMTABS_OPEN && w->e != NULL)
		entry_unref_locked(w->e);
	w->e = NULL;
	w->table = NULL;
	pthread_mutex_unlock(&st->mu);
}

void
symtabs_counts(struct symtabs *st, unsigned *tables, uint64_t *bytes)
{
	pthread_mutex_lock(&st->mu);
	*tables = st->tables;
	*bytes = st->bytes;
	pthread_mutex_unlock(&st->mu);
}

void
symtabs_set_limits(struct symtabs *st, unsigned max_tables, uint64_t max_bytes)
{
	unsigned tables;
	uint64_t bytes;

	if (st == NULL)
		return;
	pthread_mutex_lock(&st->mu);
	st->max_tables = max_tables;
	st->max_bytes = max_bytes;
	bounds_locked(st, NULL);
	tables = st->tables;
	bytes = st->bytes;
	pthread_mutex_unlock(&st->mu);
	metrics_symtabs_open(tables, bytes);
}

struct symtabs *
symtabs_new(struct blobstore *bs, unsigned max_tables, uint64_t max_bytes)
{
	struct symtabs *st;

	if ((st = calloc(1, sizeof(*st))) == NULL)
		return NULL;
	st->bs = bs;
	st->max_tables = max_tables;
	st->max_bytes = max_bytes;
	pthread_mutex_init(&st->mu, NULL);
	return st;
}

void
symtabs_free(struct symtabs *st)
{
	struct symtabs_entry *e;
	size_t i;

	if (st == NULL)
		return;
	for (i = 0; i < BUCKETS; i++)
		while ((e = st->map[i]) != NULL)
			map_remove_locked(st, e);
	pthread_mutex_destroy(&st->mu);
	free(st);
}

struct symtabs_thread *
symtabs_thread_new(struct symtabs *st, struct resolve_thread *th)
{
	struct symtabs_thread *tt;

	if ((tt = calloc(1, sizeof(*tt))) == NULL)
		return NULL;
	tt->st = st;
	tt->th = th;
	return tt;
}

void
symtabs_thread_free(struct symtabs_thread *tt)
{
	if (tt == NULL)
		return;
	while (tt->ops != NULL)
		opener_end(tt->ops, SYMTABS_ERROR, NULL,
		    "server is shutting down");
	free(tt);
}
