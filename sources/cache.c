/*
 * sources/cache.c: the blob store (cache/blobstore.h), where every fill's
 * verified bytes and every upload end up: a cached entry of the key asked
 * for is sent as a hit, pinned against eviction while it goes out.  A
 * section's own entry is one an upstream cut for us; sections of cached
 * whole files are the cut step's.
 */
#include "sources/sources.h"

#include "resolver/rq.h"

static enum src_result
cache_lookup(struct rq *rq)
{
	struct cache_key k;

	rq_key(rq, &k);
	return rq_send_blob(rq, &k);
}

const struct source source_cache = {
	.name = "cache",
	.held = 1,
	.lookup = cache_lookup,
};
