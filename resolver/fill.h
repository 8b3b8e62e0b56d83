/*
 * resolver/fill.h: fill the cache from upstreams, one fill per key.
 *
 * Request handlers on any event-loop thread join the flight of a key
 * (cache/flight.h) here, which starts its fill when there is none.  Fills
 * from upstreams run on the main thread's event loop, which drives
 * libcurl; fills from packages run on the worker pool, one decompression
 * pass serving every member fill of a package that can catch it.
 * Verification and publishing (ELF parsing, fsync, rename, LMDB writes)
 * run on the worker pool and report back to that loop.  /metadata
 * queries for the upstreams are handed to that loop here too.
 */
#ifndef RESOLVER_FILL_H
#define RESOLVER_FILL_H

#include <stddef.h>

#include <limits.h>
#include <stdint.h>

#include "cache/key.h"
#include "daemon/route.h"
#include "indexer/buildid.h"

struct blobstore;
struct config;
struct event_base;
struct flight;
struct flight_table;
struct index;
struct pool;
struct pool_inbox;
struct fill;

/* What a fill fetches, and on whose behalf. */
struct fill_what {
	struct buildid id;
	enum cache_kind kind;
	char arg[ROUTE_PATH_MAX + 1]; /* section name or source path */
	char path[3 * ROUTE_PATH_MAX + 64]; /* to ask upstreams, escaped */
	char xff[2048]; /* X-Forwarded-For to send; "" for none */
	char via[1024]; /* Via to send */
	char ua[256]; /* the client's User-Agent; "" for none */
	/*
	 * X-DEBUGINFOD-MAXSIZE to send upstream, 0 for none: the limit of
	 * the client whose request started the fill (see resolver/resolve.c).
	 */
	uint64_t limit;
	/* From a package instead of upstreams when package is not "". */
	char package[PATH_MAX]; /* the package file */
	char member[PATH_MAX]; /* the member's path in it */
	int64_t member_mtime;
	uint64_t member_size; /* as indexed */
	/*
	 * Ask the object store first (sources/objstore.h), then, when it has
	 * nothing usable, go on as a fill from the upstreams does.
	 */
	int store;
	/*
	 * With store: the store only.  When it has nothing usable the fill
	 * ends FLIGHT_NOTFOUND, why FILL_NOT_IN_STORE, remembering nothing:
	 * a section's request asks it for a whole file to cut the section
	 * from, and a request that joined such a fill for the file itself
	 * asks again (resolver/resolve.c).
	 */
	int store_only;
};

#define FILL_NOT_IN_STORE "not in the object store"

struct fill_deps {
	const struct config *cfg;
	struct index *idx;
	struct blobstore *bs;
	struct flight_table *ft;
	struct pool *pool;
	struct pool_inbox *inbox; /* of base's loop */
	struct event_base *base; /* the loop fills run on */
};

struct fill *fill_new(const struct fill_deps *deps, char *err, size_t errlen);
/* On the fills' loop thread, after it stopped: cancel and free. */
void fill_free(struct fill *fl);
/* 1 when there are upstreams to ask. */
int fill_enabled(const struct fill *fl);
/* Any thread: 1 when there is an object store and its breaker is closed. */
int fill_store_usable(struct fill *fl);

/* Fill in w (zeroed) for a fill that starts; arg as given to fill_join. */
typedef void (*fill_what_fn)(struct fill_what *w, void *arg);

/*
 * Any thread: join the flight of key k, starting its fill when there is
 * none (*created = 1), for what what(w, arg) then says: from the package
 * member w names when from_package (which w must then name), else from the
 * upstreams.  Returns a reference to the flight, or NULL when the flight
 * table is full or out of memory.
 */
struct flight *fill_join(struct fill *fl, const struct cache_key *k,
    int from_package, fill_what_fn what, void *arg, int *created);

/*
 * Worker: the final check of the written bytes of flight f (in its temp
 * file, open at fd), for (id, kind, arg); once it passed, f's readers may
 * send every byte (flight_verified) while the bytes are published into bs
 * (upstream: an upstream's answer, not a package member's; from_store:
 * the object store's, counted as a store hit and not uploaded back to
 * it).  0 when they verified (published, or too big to cache); -1 when
 * they are wrong, with why.
 */
int fill_verify_publish(struct blobstore *bs, struct flight *f, int fd,
    const struct buildid *id, enum cache_kind kind, const char *arg,
    uint64_t written, int64_t mtime, int upstream, int from_store, char *why,
    size_t whylen);

struct rpmhdr;

/* An IMA signature in hex, and the header lines of a package member. */
#define FILL_RPM_SIG_MAX 2048
#define FILL_MEMBER_HEADERS_MAX (2 * PATH_MAX + FILL_RPM_SIG_MAX + 128)

/*
 * The X-DEBUGINFOD-* lines of a package member: ARCHIVE (as archive shows
 * the package), FILE, and IMASIGNATURE when rh, the package's RPM header
 * (NULL for other packages), signs that file.  Their length, or -1 when
 * they do not fit in len bytes (FILL_MEMBER_HEADERS_MAX always do, for a
 * member name of at most PATH_MAX).
 */
int fill_member_headers(const struct rpmhdr *rh, const char *archive,
    const char *member, char *buf, size_t len);

struct upstream_meta_answer;

/* A /metadata query for the upstreams, made on any thread. */
struct fill_meta {
	char path[3 * ROUTE_PATH_MAX + 64]; /* "/metadata?...", escaped */
	char xff[2048]; /* X-Forwarded-For to send; "" for none */
	char via[1024]; /* Via to send */
	char ua[256]; /* the client's User-Agent; "" for none */
	/*
	 * On the fills' loop: the answers of the n enabled upstreams (NULL:
	 * none could be asked, for want of memory or at shutdown).
	 */
	void (*done)(struct fill_meta *m,
	    const struct upstream_meta_answer *answers, unsigned n);
	struct fill_meta *next; /* in the fill's queue */
};

/*
 * Any thread: ask every enabled upstream m's query at once, each given
 * metadata-timeout; m must live until m->done has run.
 */
void fill_metadata(struct fill *fl, struct fill_meta *m);

#endif /* RESOLVER_FILL_H */
