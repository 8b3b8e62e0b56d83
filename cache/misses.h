/*
 * cache/misses.h: the missing-id report's table: which build-ids were
 * asked for and not found, how often, when, and by whom.
 *
 * One record per build-id (whatever kinds were asked for), with a count,
 * the first and last time it was missed, the kinds asked for, and one
 * sample client (the last one's User-Agent and address).  The table is
 * bounded by count: miss_evict drops the least missed ids, the longest
 * unseen first among equals, down to a maximum.
 *
 * Threads: miss_record, miss_evict and miss_purge write the index and
 * belong on a worker (or in the CLI); miss_batch_served works in the
 * caller's write transaction, the readers in its read transaction.
 */
#ifndef CACHE_MISSES_H
#define CACHE_MISSES_H

#include <stddef.h>
#include <stdint.h>

#include "cache/key.h"
#include "indexer/buildid.h"

struct index;
struct index_batch;
struct index_reader;

/* Longest sample kept, NUL included; longer ones are cut. */
#define MISS_UA_MAX 128
#define MISS_ADDR_MAX 48

/*
 * Requests for one kind of one id that ended not-found, folded into one
 * event: count of them (0 counts as 1), the first and the last (when; a
 * first of 0 is when), and the client of the last.
 */
struct miss_event {
	struct buildid id;
	enum cache_kind kind;
	uint64_t count;
	int64_t first; /* unix seconds of the daemon's clock */
	int64_t when;
	char ua[MISS_UA_MAX];
	char addr[MISS_ADDR_MAX];
};

/* What the table knows of one missing build-id. */
struct miss_info {
	struct buildid id;
	uint64_t count;
	int64_t first;
	int64_t last;
	unsigned kinds; /* 1 << enum cache_kind, for each kind asked for */
	char ua[MISS_UA_MAX];
	char addr[MISS_ADDR_MAX];
};

/*
 * Worker: add n events in one write transaction.  Refused (-1, err says
 * so) when the index map is nearly full.
 */
int miss_record(struct index *idx, const struct miss_event *ev, size_t n,
    char *err, size_t errlen);
/*
 * Worker: while more than max ids are kept, drop the least missed (the
 * longest unseen first among equals).  *n = ids dropped.
 */
int miss_evict(struct index *idx, uint64_t max, uint64_t *n, char *err,
    size_t errlen);

/*
 * In the caller's write transaction: id was served as the kinds of mask
 * (1 << enum cache_kind each), so it misses them no more: they leave its
 * record, and the record goes when no kind is left (its count and times
 * go with it).  Nothing when id is not kept.
 */
int miss_batch_served(struct index_batch *b, const struct buildid *id,
    unsigned kinds);
/*
 * Forget id (NULL: every id) whatever its kinds: *n = ids dropped.  In
 * transactions of its own (a sweep, for a table of any size).
 */
int miss_purge(struct index *idx, const struct buildid *id, uint64_t *n,
    char *err, size_t errlen);

/* Ids kept. */
int miss_count(struct index_reader *rd, uint64_t *n);
/*
 * Call cb for each id kept, the most missed first (the last seen first
 * among equals), until cb returns non-zero.  0 when all were visited,
 * what cb returned, or -1.  Damaged records are skipped.
 */
typedef int (*miss_cb)(const struct miss_info *mi, void *arg);
int miss_walk(struct index_reader *rd, miss_cb cb, void *arg);

#endif /* CACHE_MISSES_H */
