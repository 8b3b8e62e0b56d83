/*
 * resolver/produce.h: the producer core, the only writer of a flight.
 *
 * A flight (cache/flight.h) is filled by one producer, struct prod, which
 * walks the producing sources of the table from the one whose lookup made
 * it: each either writes the bytes through the functions below or passes
 * the same flight on (produce_absent).  The core owns every step that is
 * the same for all of them:
 *
 *   head       the answer's length, mtime and X-DEBUGINFOD-* lines; for
 *              ELF kinds the length is held back from readers
 *   write      bytes into the flight's temp file (gathered and written once
 *              per burst), readers told as they come; the early check:
 *              the opening bytes must be ELF with the build-id asked for
 *   verdict    on a worker: the whole file checked (elf_check_artifact),
 *              then readers may send the last byte (flight_verified)
 *   publish    into the blob store (rename, index), or a negative or error
 *              entry for a miss or failure of a source that remembers
 *   end        the flight's state, after which it leaves the table
 *
 * Threads.  Fills from the network run on the producers' loop (the main
 * thread's, which drives libcurl); a source whose produce runs anywhere
 * (packages) writes on a worker (produce_progress) and hands its verdict
 * to the loop (produce_finish).  The verdict and publishing always run on
 * a worker, never on a loop.
 */
#ifndef RESOLVER_PRODUCE_H
#define RESOLVER_PRODUCE_H

#include <stddef.h>
#include <stdint.h>

#include "cache/flight.h"
#include "cache/key.h"
#include "daemon/route.h"
#include "fetchers/upstream.h"
#include "indexer/buildid.h"
#include "resolver/resolve.h"

struct blobstore;
struct config;
struct event_base;
struct index;
struct index_reader;
struct pool;
struct pool_inbox;
struct producers;
struct source;

/* What a flight fills, and on whose behalf. */
struct prod_what {
	struct buildid id;
	enum cache_kind kind;
	char arg[ROUTE_PATH_MAX + 1]; /* section name or source path */
	char path[3 * ROUTE_PATH_MAX + 64]; /* to ask upstreams, escaped */
	char xff[2048]; /* X-Forwarded-For to send; "" for none */
	char via[1024]; /* Via to send */
	char ua[256]; /* the client's User-Agent; "" for none */
	/*
	 * X-DEBUGINFOD-MAXSIZE to send upstream, 0 for none: the limit of
	 * the request that started the fill.
	 */
	uint64_t limit;
	/* The size known before any byte (an indexed member's); else 0. */
	uint64_t announce;
	/* Where it is taken from, as status pages show it ("" unsaid). */
	char from[64];
	enum resolve_reach reach;
	/*
	 * Past remembered misses and failures: every source asked again (an
	 * upload's judgement, resolve_client.judge).
	 */
	int fresh;
};

/* One flight's producer.  Sources read the fields above "private". */
struct prod {
	struct producers *pc;
	struct flight *f;
	struct cache_key key;
	struct prod_what w;
	unsigned src; /* the source producing now, in the table */
	void *data; /* that source's (released by its release) */
	int fd; /* the temp file, once open */
	uint64_t written; /* bytes in it */
	uint64_t length; /* announced; UINT64_MAX: unknown */
	int64_t mtime;
	enum upstream_result res; /* how the source's fetch ended */
	int verified; /* the final check passed */
	int wrong; /* it failed: why says so */
	int refused; /* the early check refused the answer */
	int has_upstream; /* an upstream answered: which one */
	unsigned upstream;
	int no_sink; /* published, it is not uploaded to the object store */
	struct upstream_fetch *fetch; /* the source's transfer, if any */
	char why[256];
	/* private to resolver/produce.c */
	struct prod *next; /* in the start queue */
	struct prod *aprev, *anext; /* among the running network fills */
	int listed;
	int checked, told, local_errno, released;
	int room_tried, room_made, paused, ended;
	uint64_t tmp_counted;
	char *wbuf;
	size_t wlen;
	struct event *wev;
};

struct producers_deps {
	/*
	 * The resolver's: the configuration at start-up, the index, the
	 * blob store, the flights, the pool, the sources' order and their
	 * states.  It must outlive the producers (its prod may be set after
	 * producers_new).  What changes on SIGHUP is set with
	 * producers_ttls and producers_max_size.
	 */
	const struct resolve_deps *rd;
	struct pool_inbox *inbox; /* of base's loop */
	struct event_base *base; /* the producers' loop */
};

struct producers *producers_new(const struct producers_deps *d, char *err,
    size_t errlen);
/* On the loop's thread, after it stopped: fills still running fail. */
void producers_free(struct producers *pc);
/* What p's flight is filled with: the resolver's deps (sources' states). */
const struct resolve_deps *produce_deps(const struct prod *p);
/*
 * Any thread: the negative and error TTLs a remembering source's miss
 * gets, and the largest object a fill takes (max-object-size), from now
 * on.  producers_new takes them from its configuration.
 */
void producers_ttls(struct producers *pc, unsigned negative_ttl,
    unsigned error_ttl);
void producers_max_size(struct producers *pc, uint64_t max_size);
uint64_t produce_max_size(const struct prod *p);

/*
 * Any thread: join the flight of key k, made (when there is none,
 * *created) from w by source src of the table, which takes data (freed
 * with it when the flight is joined).  A reference, or NULL when the table
 * is full or out of memory.
 */
struct flight *produce_join(struct producers *pc, const struct cache_key *k,
    const struct prod_what *w, unsigned src, void *data, int *created);

/*
 * Under src's lock (the caller's): a producer for the flight of key k,
 * made now and not started, for a source that fills what nothing asked for
 * (a pass's side members); NULL when the flight exists or there is no
 * memory (data is then released).
 */
struct prod *produce_adopt(struct producers *pc, const struct cache_key *k,
    const struct prod_what *w, unsigned src, void *data);

/* ---- for sources */

/* A temp file for p's bytes, the flight's from now on: 0, or -1 (why). */
int produce_open(struct prod *p);
/*
 * p's head: length (UINT64_MAX unknown), mtime, what the answer said of
 * its file (copied) and where it came from; readers of an ELF kind learn
 * the length only once the early check passed.  0, or -1 out of memory.
 */
int produce_head(struct prod *p, uint64_t length, int64_t mtime,
    const struct cache_meta *meta, const char *source);
/*
 * Worker: p's temp file now ends at end (a package pass writes it): tell
 * readers, after the early check.
 */
void produce_progress(struct prod *p, uint64_t end);
/*
 * The sink of a fetch from the network (fetchers/upstream.h) into p: a
 * source may wrap its calls (produce_accept, produce_data, produce_fetched)
 * for its own bookkeeping.
 */
extern const struct upstream_sink produce_sink;
int produce_accept(void *p, const struct upstream_head *h, const void *buf,
    size_t len);
int produce_data(void *p, const void *buf, size_t len);
void produce_fetched(void *p, enum upstream_result res, const char *why);
/*
 * The loop: this source has nothing usable for p, and no reader has a
 * byte: the same flight goes on to the next producing source of the table
 * (within its reach), or ends absent (FLIGHT_ABSENT) past the last one.
 */
void produce_absent(struct prod *p);
/* 1 when a reader may already have bytes of p (it cannot go on). */
int produce_told(const struct prod *p);
/*
 * The source goes past p without its answer (a store that failed, an
 * upstream whose breaker is open), why in words: the flight says so to
 * its readers (flight_note_unasked).
 */
void produce_unasked(struct prod *p, const char *why);
/*
 * Worker: the fill's bytes are complete (res OK) or not (res, why): the
 * final check, publishing, or the entry a remembering source leaves.
 */
void produce_verify(struct prod *p);
/*
 * Worker: the final check alone, which lets readers send the last byte
 * (p->verified) or sets p->wrong; produce_verify then only publishes.  For
 * a source that fills several flights at once (a pass): all of them are
 * released before any is published.
 */
void produce_release(struct prod *p);
/*
 * Before produce_verify: the bytes p released are not to be kept after all
 * (the package a pass took them from failed its checksum): nothing is
 * published, and the flight ends failed with why, so nothing serves them.
 */
void produce_revoke(struct prod *p, const char *why);
/* The loop, after produce_verify: the source's accounting, then the end. */
void produce_finish(struct prod *p);
/* End p's flight now (state, why), freeing p. */
void produce_end(struct prod *p, enum flight_state st, const char *why);
/*
 * In rd's transaction (any thread): what the cache learnt of p's key since
 * the request missed: 1 the file (p's flight now serves it), 2 a negative
 * entry for a miss, 3 one for a failure (neither for a fresh fill); 0
 * nothing.  produce_end_found ends p as that says.
 */
int produce_lookup(struct prod *p, struct index_reader *rd);
void produce_end_found(struct prod *p, int found);
/* The loop's index reader (only on the producers' loop). */
struct index_reader *produce_reader(struct prod *p);
/* Room for bytes more in the cache, after a write found none (a worker). */
int produce_room(struct producers *pc, uint64_t bytes);

#endif /* RESOLVER_PRODUCE_H */
