/*
 * sources/objstore.h: the shared object-store tier of a fleet of mirrors.
 *
 * A source and a sink around the object store of fetchers/s3.h.  As a
 * source (source_objstore, sources/sources.h), fills look a key up here
 * before a remembered miss and the upstreams; what it gives is verified
 * like any other source's bytes, and an object that does not verify is
 * deleted and counted.  As a sink, it is told every blob the cache
 * publishes (blobstore_set_sink) and uploads it in the background: a
 * bounded queue, a few uploads at a time on the producers' loop; what does
 * not fit, or meets the store down (its breaker open), is dropped and
 * counted, never waited for.
 *
 * Objects are named PREFIX + BUILD-ID/KIND, and for sections and sources
 * + "/" + the hex of the cache key (cache/key.h), which hashes the name:
 * any argument, however long or odd, makes a short key of safe bytes.
 * Their metadata holds the X-DEBUGINFOD-* lines and the Last-Modified of
 * the answer, which every node then replays.
 *
 * Threads: objstore_sink on any thread (it queues); objstore_usable on
 * any; the rest on the producers' loop.
 */
#ifndef SOURCES_OBJSTORE_H
#define SOURCES_OBJSTORE_H

#include <stddef.h>
#include <stdint.h>

#include "cache/key.h"
#include "fetchers/upstream.h"

struct blob_info;
struct blobstore;
struct config;
struct event_base;
struct objstore;

/* NULL with err when the store cannot be used (no memory). */
struct objstore *objstore_new(const struct config *cfg, struct event_base *base,
    struct blobstore *bs, char *err, size_t errlen);
/* On the loop, after it stopped. */
void objstore_free(struct objstore *t);

/* Any thread: 1 while lookups may be asked (the breaker is closed). */
int objstore_usable(struct objstore *t);

/* The object name of (id, kind, arg): 0, or -1 when len is too small. */
int objstore_object(const struct objstore *t, const struct buildid *id,
    enum cache_kind kind, const char *arg, char *out, size_t len);

/*
 * For the admin CLI, blocking: delete every object of build-id id from
 * cfg's store; *n how many.  0, or -1 with err.
 */
int objstore_purge(const struct config *cfg, const struct buildid *id,
    uint64_t *n, char *err, size_t errlen);

/* blob_sink_fn: queue an upload of the blob of k. */
void objstore_sink(void *arg, const struct cache_key *k,
    const struct blob_info *info);

#endif /* SOURCES_OBJSTORE_H */
