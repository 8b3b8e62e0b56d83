/*
 * daemon/misses.h: the missing-id report: requests that ended not-found,
 * recorded off the request path, and the report of them.
 *
 * The request path only folds the request into a bounded in-memory queue
 * of one event per id and kind (one mutex, no I/O); every second
 * (misses_tick) a short pool job writes what the queue holds to the index
 * in one transaction (cache/misses.h) and evicts the least missed ids
 * beyond the cap, so a flood of 404s costs one transaction a second.  A
 * request for an id and kind not in a full queue is dropped and counted
 * (dbgmirror_misses_dropped_total).
 *
 * The report (the CLI's `dbgmirror misses`, /admin/misses) reads the table
 * in a read transaction of the caller.
 */
#ifndef DAEMON_MISSES_H
#define DAEMON_MISSES_H

#include <stddef.h>
#include <stdint.h>

#include "cache/key.h"

struct index;
struct index_reader;
struct pool;
struct misses;

/* Distinct ids and kinds the queue holds at most. */
#define MISSES_QUEUE_MAX 1024

/* Keep at most max ids in idx, flushing on pool's short jobs. */
struct misses *misses_new(struct index *idx, struct pool *pool, uint64_t max);
/* Any thread (SIGHUP): keep at most max ids from the next flush on. */
void misses_set_max(struct misses *m, uint64_t max);
/* Once a second, any thread: start a flush when the queue holds events. */
void misses_tick(struct misses *m);
/* Write what the queue still holds, on this thread, and free m. */
void misses_free(struct misses *m);

/*
 * Any thread: a request for kind of id, from a client at addr sending
 * User-Agent ua[0..ualen) (ua NULL: none), ended not-found.  m NULL: the
 * report is off, nothing is recorded.
 */
void misses_note(struct misses *m, const struct buildid *id,
    enum cache_kind kind, const char *ua, size_t ualen, const char *addr);

/* What a report shows. */
struct misses_query {
	unsigned top; /* ids shown at most; 0: all */
	int64_t since; /* only ids missed at or after (unix seconds); 0: all */
	int json; /* application/json instead of text */
};

/*
 * Set q->top from s (a number up to 1,000,000) or q->since from s (a
 * duration, as options spell it, back from now): 0, or -1 with *why.
 */
int misses_query_top(struct misses_query *q, const char *s, const char **why);
int misses_query_since(struct misses_query *q, const char *s, int64_t now,
    const char **why);

/*
 * The report, from the caller's read transaction on rd: malloc'd,
 * NUL-terminated, its strlen in *len; NULL when the index cannot be read
 * or out of memory.
 */
char *misses_report(struct index_reader *rd, const struct misses_query *q,
    size_t *len);

/* "debuginfo,executable" for a kinds mask of cache/misses.h, in buf. */
const char *misses_kinds(unsigned kinds, char *buf, size_t len);

#endif /* DAEMON_MISSES_H */
