/*
 * cache/flight.h: fills in flight, one per cache key.
 *
 * The first request for a key that is neither cached nor remembered as
 * missing creates a flight and starts the fill; later requests for the key
 * join it.  The filler writes the bytes to a temp file and reports its
 * progress here; every joined request watches with a wake callback, called
 * (from whatever thread reports) when there is something new to read: the
 * head, more bytes, the end.
 *
 * Streaming before the content is verified is allowed, but never the last
 * byte: a reader may send at most length - 1 bytes until the filler marks
 * the flight verified, so a client of a fill that fails verification gets
 * a cut connection, never a complete-looking wrong file.  The verdict
 * comes before the end: a filler marks the bytes verified as soon as they
 * are checked, and its readers finish while it still makes the file
 * durable and indexes it, which ends the flight (READY).  Readers start
 * only once the filler tells them the length, which it may hold back
 * until a first check of the opening bytes passed.
 *
 * Locking: the table has one mutex; each flight has its own.  Head fields
 * (length, mtime, meta, source) are written once, before the state
 * leaves FLIGHT_WAITING, and are read-only afterwards.
 */
#ifndef CACHE_FLIGHT_H
#define CACHE_FLIGHT_H

#include <stddef.h>
#include <stdint.h>

#include "cache/key.h"
#include "cache/meta.h"

struct flight;
struct flight_table;

enum flight_state {
	FLIGHT_WAITING, /* no head yet */
	FLIGHT_STREAMING, /* length known; bytes arriving */
	FLIGHT_READY, /* complete and verified */
	FLIGHT_NOTFOUND, /* every source said it does not exist */
	FLIGHT_FAILED, /* no source gave it; why says what happened */
	FLIGHT_UNAVAILABLE, /* this server could not keep it (a full disk) */
	FLIGHT_TOOBIG, /* larger than the limit the fill asked with (a 406) */
	/*
	 * The sources this fill could ask do not have it, and it was not to
	 * ask the others (a whole file asked only where files are held):
	 * nothing is remembered.  The mark says the last source it asked.
	 */
	FLIGHT_ABSENT,
};

/* A consistent snapshot for a reader. */
struct flight_view {
	enum flight_state state;
	uint64_t length; /* once STREAMING */
	uint64_t sendable; /* bytes a reader may send now */
	int verified; /* STREAMING, and flight_verified was told */
	const char *why; /* FAILED and NOTFOUND */
	/*
	 * The answer's size as soon as it is known, which may be before
	 * readers may start (flight_announce); UINT64_MAX until then.
	 */
	uint64_t size;
	uint64_t limit; /* the fill's X-DEBUGINFOD-MAXSIZE; 0: none */
	unsigned mark; /* the filler's flight_set_mark, once it ended */
	/* The first flight_note_unasked; NULL: every source answered. */
	const char *unasked;
};

/*
 * The most limited flights (upstream fills) at once; 0 means no limit.
 * now_ns() is the monotonic clock in nanoseconds, which paces wake-ups;
 * stamp_ns() the wall clock in nanoseconds that stamps a flight's
 * creation, compared with purges' stamps (flight_begun).
 */
struct flight_table *flight_table_new(unsigned max, int64_t (*now_ns)(void),
    int64_t (*stamp_ns)(void));
void flight_table_free(struct flight_table *ft);
/* Any thread (SIGHUP): the limit from now on; more flights end first. */
void flight_table_set_max(struct flight_table *ft, unsigned max);
/* What a status page shows of a flight. */
#define FLIGHT_LABEL_MAX 160
struct flight_info {
	char label[FLIGHT_LABEL_MAX]; /* flight_set_label's; "" when none */
	char source[128]; /* once the head is in; "" before */
	enum flight_state state;
	uint64_t written;
	uint64_t length; /* UINT64_MAX while unknown */
	unsigned watchers;
	int64_t age_ns; /* since it was created */
};
/* Up to max flights of the table, the oldest first; how many. */
size_t flight_table_list(struct flight_table *ft, struct flight_info *out,
    size_t max);

/* Flights in the table, and the readers watching them. */
void flight_table_counts(struct flight_table *ft, uint64_t *flights,
    uint64_t *watchers);

/*
 * Find the flight of k or create it (*created = 1: the caller starts the
 * fill), counted against the table's max when limited.  A flight that
 * ended asking its readers to ask again (TOOBIG, ABSENT) is not found: it
 * leaves the table for the new one.  Returns a
 * reference, or NULL when a limited flight would exceed the max, or out of
 * memory.
 */
struct flight *flight_join(struct flight_table *ft, const struct cache_key *k,
    int limited, int *created);
void flight_ref(struct flight *f);
void flight_unref(struct flight *f);
const struct cache_key *flight_key(const struct flight *f);

/* ---- the filler */

/* Name the flight for flight_table_list (copied, cut to fit). */
void flight_set_label(struct flight *f, const char *label);
/* The temp file the bytes go to; the flight owns fd from now on. */
void flight_set_file(struct flight *f, int fd, const char *tmp_path);
const char *flight_tmp_path(const struct flight *f);
/*
 * The answer's head; length UINT64_MAX when unknown or not yet to be told:
 * readers wait until flight_set_length() or the end.  meta and source are
 * copied.
 */
int flight_set_head(struct flight *f, uint64_t length, int64_t mtime,
    const struct cache_meta *meta, const char *source);
/*
 * The size of the answer, known before readers may start (an upstream's
 * Content-Length, an indexed member's size): readers with a smaller
 * X-DEBUGINFOD-MAXSIZE can be answered at once.  Wakes every reader.
 */
void flight_announce(struct flight *f, uint64_t size);
/* The X-DEBUGINFOD-MAXSIZE the fill asks the upstreams with; 0: none. */
void flight_set_limit(struct flight *f, uint64_t limit);
/* Let readers start streaming an answer of length bytes. */
void flight_set_length(struct flight *f, uint64_t length);
/* written bytes are now in the temp file. */
void flight_progress(struct flight *f, uint64_t written);
/*
 * The written bytes are complete and verified: readers may send them all
 * (the length is now the bytes written), while the flight stays in the
 * table until its end.  Nothing before the head.  Wakes every reader.
 */
void flight_verified(struct flight *f);
/*
 * A number the filler leaves for readers with the end (the resolver: the
 * source that ended the fill).
 */
void flight_set_mark(struct flight *f, unsigned mark);
/*
 * A source the fill went past without its answer (a store that failed, an
 * upstream whose breaker is open, a remembered miss), in words: a
 * not-found then says less than that nothing has the file.  The first is
 * kept.
 */
void flight_note_unasked(struct flight *f, const char *why);
/* The end; READY marks the bytes verified.  Wakes every reader. */
void flight_end(struct flight *f, enum flight_state state, const char *why);
/* Take the flight out of the table: new requests will not join it. */
void flight_detach(struct flight *f);

/* ---- readers */

/*
 * wake(arg) is called whenever the view may have changed, from any thread
 * and with the flight's lock held: it must only schedule the reader (e.g.
 * event_active on the reader's loop), never call back into the flight.
 * -1 when out of memory.
 */
typedef void (*flight_wake_fn)(void *arg);
int flight_watch(struct flight *f, flight_wake_fn wake, void *arg);
/* Stop the watch of arg. */
void flight_unwatch(struct flight *f, void *arg);
void flight_view(struct flight *f, struct flight_view *v);
/*
 * After the head: its fields (meta all "" before it), and a descriptor of
 * the file to read.
 */
int64_t flight_mtime(const struct flight *f);
const struct cache_meta *flight_meta(const struct flight *f);
/*
 * The table's stamp_ns() when f was created: a purge after it drops what
 * the fill brings (blob_info.begun).
 */
int64_t flight_begun(const struct flight *f);
const char *flight_source(const struct flight *f);
int flight_open(struct flight *f);

#endif /* CACHE_FLIGHT_H */
