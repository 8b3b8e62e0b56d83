/*
 * daemon/symtabs.h: the symbol tables /symbolicate answers from, kept
 * open.
 *
 * A table is asked of the resolver like any artifact (ROUTE_SYMTAB, the
 * kind CACHE_SYMTAB: the cache, the object store, else a build,
 * sources/symbuild.c), opened and checked on a worker (symtab_open: its
 * checksum and every offset), and then kept open in an LRU of counted
 * handles, keyed by build-id and bounded in tables and in bytes mapped,
 * that every HTTP thread shares: a warm request neither reopens nor
 * checks a table again.  One opening per id at a time, however many
 * requests wait for it.  A handle is dropped when the cache entry it was
 * opened from goes (a purge, an eviction: each use looks the entry up in
 * the index, a read, and an entry replaced since is another table); a
 * table the cache gave that does not verify is deleted from the cache,
 * counted, and asked for again once (the object store, a build).
 *
 * Threads.  The set is shared under one mutex; each HTTP thread has its
 * own struct symtabs_thread, whose loop runs its openings (the resolver's
 * requests, the workers' completions).  A request waits with a struct
 * symtabs_want of its own and an event of its loop, which the opening
 * activates, from whichever thread it runs on, once the want is decided.
 */
#ifndef DAEMON_SYMTABS_H
#define DAEMON_SYMTABS_H

#include <stddef.h>
#include <stdint.h>

#include "indexer/buildid.h"

struct blobstore;
struct event;
struct resolve_origin;
struct resolve_thread;
struct snapshot;
struct symtab;
struct symtabs;
struct symtabs_entry;
struct symtabs_thread;

/* The tables of bs's cache, at most max_tables open, mapping max_bytes. */
struct symtabs *symtabs_new(struct blobstore *bs, unsigned max_tables,
    uint64_t max_bytes);
/*
 * Any thread: the bounds from now on (a reload's); the least recently used
 * tables over them are closed now (those requests hold, once let go).
 */
void symtabs_set_limits(struct symtabs *st, unsigned max_tables,
    uint64_t max_bytes);
/* Once no request holds a table and every thread's set is freed. */
void symtabs_free(struct symtabs *st);

/* On the thread of th's loop, which must outlive it. */
struct symtabs_thread *symtabs_thread_new(struct symtabs *st,
    struct resolve_thread *th);
/*
 * On that thread, its loop stopped and its pool completions run: the
 * openings it runs end (their waiters are told ERROR).
 */
void symtabs_thread_free(struct symtabs_thread *tt);

enum symtabs_state {
	SYMTABS_WAITING, /* being fetched, built or opened */
	SYMTABS_OPEN, /* table is the table, held until symtabs_release */
	SYMTABS_MISSING, /* no source has the build-id */
	SYMTABS_ERROR, /* why says what failed */
};

/*
 * One request's want of a table: the request's memory, id set, the rest
 * zero.  Its fields are the set's while it is WAITING: read them through
 * symtabs_poll.
 */
struct symtabs_want {
	struct buildid id;
	enum symtabs_state state;
	const struct symtab *table;
	char why[200];
	/* private */
	struct symtabs_entry *e;
	struct symtabs_want *next;
	struct event *ev;
};

/*
 * On tt's loop: ask for w's table, for a client of origin o (what the
 * sources forward, when it has to be fetched) under the configuration
 * snap (the request's: an opening holds it, and asks its request path).
 * It is decided now (the state says) or later: ev, an event of tt's
 * loop, is then activated once it is.
 */
void symtabs_get(struct symtabs_thread *tt, struct symtabs_want *w,
    struct event *ev, const struct resolve_origin *o, struct snapshot *snap);
/* What w says now: its state (the other fields once it is decided). */
enum symtabs_state symtabs_poll(struct symtabs *st, struct symtabs_want *w);
/*
 * Stop waiting: w's state from now on, which stays WAITING when it was
 * not decided yet (the table goes on being fetched for the next request).
 */
enum symtabs_state symtabs_stop(struct symtabs *st, struct symtabs_want *w);
/* Done with w: it stops waiting, or lets its table go. */
void symtabs_release(struct symtabs *st, struct symtabs_want *w);

/* Tables open, and the bytes they map (any thread). */
void symtabs_counts(struct symtabs *st, unsigned *tables, uint64_t *bytes);

#endif /* DAEMON_SYMTABS_H */
