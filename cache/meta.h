/*
 * cache/meta.h: what a debuginfod answer says of its file besides the
 * bytes, as the cache keeps it with a fill (cache/flight.h) and with a
 * cached file (cache/blobstore.h).
 *
 * file, archive and imasig are the values of X-DEBUGINFOD-FILE,
 * X-DEBUGINFOD-ARCHIVE and X-DEBUGINFOD-IMASIGNATURE ("" when the answer
 * had none).  extra is opaque to the cache: bytes kept and handed back as
 * they came (the other X-DEBUGINFOD-* lines an upstream sent, which
 * debuginfod relays).  The cache neither builds nor parses header lines:
 * fetchers/headers.h does, where answers are read and written.
 */
#ifndef CACHE_META_H
#define CACHE_META_H

#include <stddef.h>

struct cache_meta {
	const char *file;
	const char *archive;
	const char *imasig;
	const char *extra; /* extra_len bytes, NUL-terminated */
	size_t extra_len;
};

/* Bytes cache_meta_copy() writes for m; NULL strings count as "". */
size_t cache_meta_size(const struct cache_meta *m);
/*
 * Copy m's strings, each with a NUL, into buf (cache_meta_size(m) bytes),
 * and point *out at the copies.
 */
void cache_meta_copy(struct cache_meta *out, const struct cache_meta *m,
    char *buf);

#endif /* CACHE_META_H */
