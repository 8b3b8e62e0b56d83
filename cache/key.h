/*
 * cache/key.h: the key of everything the cache holds about one request.
 *
 * A request asks for (build-id, kind, arg): arg is the section name for
 * sections, the canonical source path for sources, "" otherwise.  The key
 * is the SHA-256 of the three, a fixed 32 bytes, so LMDB keys, blob file
 * names and the in-flight table never depend on the length of the arg.
 * Entries keep the id, kind and arg themselves for purges and listings.
 */
#ifndef CACHE_KEY_H
#define CACHE_KEY_H

#include <stdint.h>

#include "indexer/buildid.h"

enum cache_kind {
	CACHE_DEBUGINFO = 1,
	CACHE_EXECUTABLE = 2,
	CACHE_SECTION = 3,
	CACHE_SOURCE = 4,
};

#define CACHE_KEY_LEN 32
/* Hex spelling plus NUL, e.g. for blob file names. */
#define CACHE_KEY_HEX (2 * CACHE_KEY_LEN + 1)

struct cache_key {
	uint8_t hash[CACHE_KEY_LEN];
};

void cache_key_make(struct cache_key *k, const struct buildid *id,
    enum cache_kind kind, const char *arg);
void cache_key_hex(const struct cache_key *k, char *out);
int cache_key_equal(const struct cache_key *a, const struct cache_key *b);
/* "debuginfo", "executable", "section", "source"; NULL when out of range. */
const char *cache_kind_name(enum cache_kind kind);

#endif /* CACHE_KEY_H */
