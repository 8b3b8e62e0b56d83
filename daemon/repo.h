/*
 * daemon/repo.h: remote distro repositories as a source of packages.
 *
 * The repositories of the configuration (repo = ...) are refreshed on the
 * fills' loop every repo-refresh seconds and on repos_refresh(): their
 * signed metadata is fetched there (fetchers/repofetch.h), verified and
 * parsed on workers, and recorded as a new generation of cache/repoidx.h.
 * A request for an id a repository holds joins the download of its
 * package (one flight per package, cache/flight.h): the package is
 * fetched into the package cache, its checksum checked, its members
 * indexed like a local package's (daemon/scan.h); the request then goes
 * back to the package step of the resolver, which extracts the member.
 */
#ifndef DAEMON_REPO_H
#define DAEMON_REPO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cache/key.h"
#include "cache/repoidx.h"
#include "indexer/buildid.h"

struct config;
struct event_base;
struct flight;
struct flight_table;
struct index;
struct index_reader;
struct pool;
struct pool_inbox;
struct repos;

struct repos_deps {
	const struct config *cfg;
	struct index *idx;
	struct flight_table *ft;
	struct pool *pool;
	struct pool_inbox *inbox; /* of base's loop */
	struct event_base *base; /* the fills' loop */
};

/* NULL with err; with no repository configured, an empty set. */
struct repos *repos_new(const struct repos_deps *d, char *err, size_t errlen);
/* On the fills' loop thread, after it stopped. */
void repos_free(struct repos *rs);
size_t repos_count(const struct repos *rs);
/* Any thread: refresh every repository now (SIGUSR1). */
void repos_refresh(struct repos *rs);

/* Where an id was found. */
struct repos_hit {
	unsigned repo;
	char file[REPOIDX_FILE_MAX + 1];
	uint64_t size;
	uint8_t sha256[32];
	struct cache_key key; /* of the package's download */
};

/*
 * In rd's transaction: the first repository (whose breaker is closed)
 * holding id.  1 and *hit, 0 when none, 2 when one holds it but its
 * package failed a moment ago (*retry: seconds left), -1 on error.
 */
int repos_find(struct repos *rs, struct index_reader *rd,
    const struct buildid *id, struct repos_hit *hit, unsigned *retry);

/*
 * Any thread: join (or start) the download of hit's package.  A reference
 * to its flight, READY once the package is downloaded, checked and
 * indexed; FAILED with why otherwise.  NULL when out of memory.
 */
struct flight *repos_join(struct repos *rs, const struct repos_hit *hit);

/* Every configured repository's name and key, for the CLI. */
size_t repos_config_keys(const struct config *cfg, char (*names)[1100],
    uint8_t (*keys)[REPOIDX_KEY_LEN], size_t max);

#endif /* DAEMON_REPO_H */
