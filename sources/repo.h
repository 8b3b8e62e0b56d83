/*
 * sources/repo.h: remote distro repositories as a source of packages.
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
#ifndef SOURCES_REPO_H
#define SOURCES_REPO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cache/key.h"
#include "cache/repoidx.h"
#include "indexer/buildid.h"

struct blobstore;
struct config;
struct config_repo;
struct event_base;
struct fill_deps;
struct flight;
struct flight_table;
struct index;
struct index_reader;
struct pool;
struct pool_inbox;
struct repos;

/*
 * NULL with err; with no repository configured, an empty set.  It takes
 * what the fills take (members extracted while downloading go to bs; base
 * is the fills' loop).
 */
struct repos *repos_new(const struct fill_deps *d, char *err, size_t errlen);
/* On the fills' loop thread, after it stopped. */
void repos_free(struct repos *rs);
size_t repos_count(const struct repos *rs);
/* Any thread: refresh every repository now (SIGUSR1). */
void repos_refresh(struct repos *rs);

/* Where a repository's refreshes stand. */
enum repos_refresh_state {
	REPOS_NEVER, /* none has ended yet */
	REPOS_REFRESHING, /* one runs */
	REPOS_OK, /* the last one succeeded */
	REPOS_FAILED, /* the last one failed */
};

/* "never", "refreshing", "ok", "failed". */
const char *repos_state_name(enum repos_refresh_state s);

/* What /status and /metrics show of a repository. */
struct repos_state {
	char name[1100]; /* public URL and suite: no secret */
	enum repos_refresh_state state;
	int64_t last_end; /* clock_now() when the last refresh ended; 0 */
	int64_t last_ok; /* ... the last that succeeded; 0 */
	int64_t next; /* when the next periodic one is due; 0: never */
	int64_t open_until; /* downloads skipped until then (the breaker) */
	char why[512]; /* why the last refresh failed; "" */
	uint8_t key[REPOIDX_KEY_LEN]; /* its index's (cache/repoidx.h) */
};

/* Any thread: repository i's state; 0, or -1 when there is no such one. */
int repos_state(struct repos *rs, size_t i, struct repos_state *out);

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
 * holding id as a debug file, or (executable) as an executable: one a
 * usr/lib/.build-id/ link names in any repository first, then one only a
 * debug package's suffix-less link names (cache/repoidx.h).  A package
 * downloaded and indexed already is passed by (the package step had it).
 * 1 and *hit, 0 when none, 2 when one holds it but its package failed a
 * moment ago (*retry: seconds left), -1 on error.
 */
int repos_find(struct repos *rs, struct index_reader *rd,
    const struct buildid *id, int executable, struct repos_hit *hit,
    unsigned *retry);

/*
 * Any thread: join (or start) the download of hit's package.  A reference
 * to its flight, READY once the package is downloaded, checked and
 * indexed; FAILED with why otherwise.  NULL when out of memory.
 */
struct flight *repos_join(struct repos *rs, const struct repos_hit *hit);

/*
 * Any thread: the debuginfo of id, member of hit's package, extracted as
 * the package downloads (joining or starting that download): a reference
 * to the member's flight (*created when this call made it), which
 * streams the member while the package arrives and ends READY once the
 * whole package has checked out and the member is published, FAILED (its
 * readers cut before the last byte) when the package does not, NOTFOUND
 * when the package has no such member.  When the download it joined or
 * started has already ended (*package set), the package's download flight
 * instead, to wait on as repos_join()'s: asking again would download the
 * package again.  NULL when no flight can start.
 */
struct flight *repos_member(struct repos *rs, const struct repos_hit *hit,
    const struct buildid *id, int *created, int *package);

/* The text a repository's key hashes (sources/repokey.c). */
void repos_ident(const struct config_repo *cr, char *out, size_t len);

/* Every configured repository's name and key, for the CLI. */
size_t repos_config_keys(const struct config *cfg, char (*names)[1100],
    uint8_t (*keys)[REPOIDX_KEY_LEN], size_t max);

#endif /* SOURCES_REPO_H */
