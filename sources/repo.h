/*
 * sources/repo.h: remote distro repositories as a source of packages
 * (source_repo, sources/sources.h).
 *
 * The repositories of the configuration (repo = ...) are refreshed on the
 * producers' loop every repo-refresh seconds and on repos_refresh(): their
 * signed metadata is fetched there (fetchers/repofetch.h), verified and
 * parsed on workers, and recorded as a new generation of cache/repoidx.h
 * (sources/reposync.c).  A fill of an id a repository holds joins the
 * download of its package (one flight per package, cache/flight.h): the
 * package is fetched into the package cache, its checksum checked, its
 * members indexed like a local package's (sources/scan.h).  While it
 * downloads, one pass reads it as it grows and serves every member asked
 * for (sources/pass.h), each member's last byte as soon as it is out and
 * checked, what is kept once the package's checksum passed; anything that
 * pass cannot serve is the package step's once the package is in (the
 * same fill goes on there).
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
struct flight;
struct flight_table;
struct index;
struct index_reader;
struct pool;
struct passes;
struct pool_inbox;
struct repos;

/*
 * What the repositories work with; all must outlive them.  cfg: the
 * configuration at start-up, until repos_apply gives another.
 */
struct repos_deps {
	const struct config *cfg;
	struct index *idx;
	struct blobstore *bs;
	struct flight_table *ft;
	struct pool *pool;
	struct pool_inbox *inbox; /* of base's loop */
	struct event_base *base; /* the producers' loop */
	struct passes *passes; /* what reads packages as they download */
};

/* NULL with err; with no repository configured, an empty set. */
struct repos *repos_new(const struct repos_deps *d, char *err, size_t errlen);
/*
 * On the fills' loop thread, after it stopped and before the pool stops:
 * what waits for a download in progress (a pass reading it) gives up.
 */
void repos_stop(struct repos *rs);
/* On the fills' loop thread, after it stopped. */
void repos_free(struct repos *rs);
/* Any thread: the repositories configured now. */
size_t repos_count(const struct repos *rs);

/* What repos_apply did. */
struct repos_changes {
	unsigned added, removed;
};
/*
 * On the loop (SIGHUP): the repositories and their settings become cfg's,
 * which must live until the next call.  A repo line that was there before
 * is the same repository, its state and index untouched; a new line (or a
 * changed one, which is a removal and an addition) starts its first
 * refresh, and is served once that ends, as at start-up; a line gone is
 * looked up no more, and its refresh stops.  Downloads under way finish.
 * A process takes REPOS_SPARE (32) repositories more than it started
 * with, lines that come back aside: beyond that, -1 with err, the others
 * applied.  -1 with err too when a repository's directory cannot be made.
 */
int repos_apply(struct repos *rs, const struct config *cfg,
    struct repos_changes *ch, char *err, size_t errlen);
/* Any thread: refresh every repository now (SIGUSR1). */
void repos_refresh(struct repos *rs);

/*
 * Readiness.  At start-up each repository's first refresh runs; until
 * every one has ended (refreshed or failed) or repo-ready-timeout has
 * passed, the repositories are "starting": an id none of them maps may
 * be one a refresh is about to bring.
 *
 * repos_starting(): any thread, 1 while they are (never with no
 * repository, or repo-ready-timeout 0).  repos_refreshing(): any thread,
 * 1 while some refresh runs, first or later.  repos_when_ready(): any
 * thread; cb(arg) is called once, on the repositories' loop (the fills'
 * loop), when they stop starting, and must not block; 0 when registered,
 * 1 when they are not starting (cb is not called), -1 when out of
 * memory.  A watcher cannot be taken back: register one per consumer (say
 * one that wakes every request it holds), not one per request.
 */
int repos_starting(struct repos *rs);
int repos_refreshing(struct repos *rs);
int repos_when_ready(struct repos *rs, void (*cb)(void *arg), void *arg);

/* How repository i's refresh goes, for status lines (any thread). */
struct repos_progress {
	const char *name; /* "URL SUITE", as long as rs lives */
	int running; /* a refresh runs */
	int first_ended; /* its first refresh has ended */
	int ok; /* the last refresh that ended succeeded */
	const char *doing; /* "fetching", "checking", "indexing"; "" */
	char file[256]; /* what it does that to; "" */
	uint64_t got, size; /* bytes of that file so far; in all (0: unknown) */
	unsigned fetched, kept; /* index files fetched, read from kept copies */
	uint64_t bytes; /* fetched by the refresh, metadata included */
	uint64_t ids; /* indexed so far; when none runs, in the index */
};
void repos_progress(struct repos *rs, size_t i, struct repos_progress *p);
/*
 * Any thread: the repositories in one line.  While they are starting, how
 * far the first refreshes got ("refreshing repositories, 1 of 3 done: URL
 * SUITE: fetching main/Contents-amd64.gz, 12.0 of 20.0 MB"), else what
 * the refreshes that ended gave ("repositories: 2 of 3 refreshed (1914
 * ids); 1 failed").
 */
void repos_status(struct repos *rs, char *out, size_t len);
/*
 * Set the one callback told, on the repositories' loop, each time a
 * refresh begins a transfer or ends (cb NULL: none).  Byte counts and the
 * workers' steps change without it: poll repos_status() for those.
 */
void repos_on_progress(struct repos *rs, void (*cb)(void *arg), void *arg);

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

/* The text a repository's key hashes (sources/repokey.c). */
void repos_ident(const struct config_repo *cr, char *out, size_t len);

/* Every configured repository's name and key, for the CLI. */
size_t repos_config_keys(const struct config *cfg, char (*names)[1100],
    uint8_t (*keys)[REPOIDX_KEY_LEN], size_t max);

/*
 * Why a repository whose index state is st does not serve an id its
 * index does not map, in one line for a person (dbgmirror lookup; a 404's
 * reason): kernel when the id is a kernel's or a kernel module's.
 */
void repos_why_absent(const struct repoidx_state *st, int kernel, char *out,
    size_t len);

#endif /* SOURCES_REPO_H */
