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
 * members indexed like a local package's (sources/scan.h).  A debug file
 * streams out of the package as it downloads; any other member is the
 * package step's once the package is in (the same fill goes on there).
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
struct pool_inbox;
struct repos;

/* What the repositories work with; all must outlive them. */
struct repos_deps {
	const struct config *cfg;
	struct index *idx;
	struct blobstore *bs;
	struct flight_table *ft;
	struct pool *pool;
	struct pool_inbox *inbox; /* of base's loop */
	struct event_base *base; /* the producers' loop */
};

/* NULL with err; with no repository configured, an empty set. */
struct repos *repos_new(const struct repos_deps *d, char *err, size_t errlen);
/* On the fills' loop thread, after it stopped. */
void repos_free(struct repos *rs);
size_t repos_count(const struct repos *rs);
/* Any thread: refresh every repository now (SIGUSR1). */
void repos_refresh(struct repos *rs);

/* The text a repository's key hashes (sources/repokey.c). */
void repos_ident(const struct config_repo *cr, char *out, size_t len);

/* Every configured repository's name and key, for the CLI. */
size_t repos_config_keys(const struct config *cfg, char (*names)[1100],
    uint8_t (*keys)[REPOIDX_KEY_LEN], size_t max);

#endif /* SOURCES_REPO_H */
