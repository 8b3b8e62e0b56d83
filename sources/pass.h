/*
 * sources/pass.h: one decompression pass over a package file serves every
 * member fill that can catch it (sources/pass.c), for the sources that
 * extract members: local and downloaded packages, and packages still
 * downloading (a repository's), which a pass reads as they grow.
 */
#ifndef SOURCES_PASS_H
#define SOURCES_PASS_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

struct cache_key;
struct config;
struct flight;
struct pass_growth;
struct passes;
struct pool_inbox;
struct prod;
struct resolve_deps;

/*
 * What a member fill (prod.data) extracts.  A source may put it first in
 * a record of its own (prod.data then points at both).
 */
struct pass_want {
	/* The package file; for one still downloading, where it will be. */
	char package[PATH_MAX];
	char member[PATH_MAX]; /* the member's path in it */
	int64_t mtime;
	uint64_t size; /* as indexed; 0 while unknown (a download) */
	/* private to sources/pass.c */
	const struct pass_growth *growth; /* its package downloads */
	int found;
	struct prod *next;
};

/*
 * A package still being written (a download), as a pass reads it: the
 * source that downloads it says where its bytes are, when more come, and
 * what becomes of what a pass extracted.  Each function gets arg.
 */
struct pass_growth {
	/*
	 * Worker: the package's bytes open for reading (the file as it
	 * downloads, else where it went); it waits for the download to make
	 * the file.  -1 with why when there will be none.
	 */
	int (*open)(void *arg, char *why, size_t len);
	/* Worker: pkg_limits.grow over that file. */
	int (*grow)(uint64_t have, void *arg);
	/*
	 * The fills' loop: call done(darg, ok, why) on the fills' loop once
	 * the package's checksum is known (at once when it is): ok, what came
	 * out of it may be kept; else nothing of it is, and why says so.
	 * done returns the members it then did not keep, whose bytes had gone
	 * out.
	 */
	void (*checked)(void *arg,
	    size_t (*done)(void *darg, int ok, const char *why), void *darg);
	/*
	 * The fills' loop: member fill pr, of the downloading source, did not
	 * catch a pass while the package downloaded: the source hands it on
	 * once the download has ended (to the package step), or fails it.
	 */
	void (*hand_on)(void *arg, struct prod *pr);
	/* Take (1) or give back (0) a reference to arg: a pass holds one. */
	void (*hold)(void *arg, int take);
	void *arg;
};

/*
 * The passes of a process: members extracted on rd's pool, under the
 * settings of rd's configuration.
 */
struct passes *passes_new(const struct resolve_deps *rd,
    struct pool_inbox *inbox);
void passes_free(struct passes *ps);
/*
 * Any thread (SIGHUP): passes begun from now on take cfg's settings
 * (package-coextract, archive-full-path, min-free-disk).
 */
void passes_apply(struct passes *ps, const struct config *cfg);
/*
 * Take (take 1) or give back ps's lock, which a source holds while it
 * makes a member's flight and joins it to a pass (passes_join).
 */
void passes_lock(struct passes *ps, int take);
/*
 * ps locked: member fill pr joins the open pass of its package that has
 * not read past its member, else one that has not begun, else starts one
 * (queued behind the passes of the package that run).  -1 when none can.
 */
int passes_join(struct passes *ps, struct prod *pr);
/*
 * ps locked: the same for fill pr of an ELF member of a package still
 * downloading as gr says, which only passes that read it as it grows
 * serve (members are met by name: pr's is its .build-id path); held: the
 * download has not started, and a new pass waits for passes_begin.
 */
int passes_join_growing(struct passes *ps, struct prod *pr,
    const struct pass_growth *gr, int held);
/*
 * The fills' loop, ps not locked: the passes of package waiting for its
 * download begin; or (drop) their fills end failed with why, the
 * download having ended before it started.
 */
void passes_begin(struct passes *ps, const char *package);
void passes_drop(struct passes *ps, const char *package, const char *why);
/*
 * Any thread: the flight of k that a pass over a package still
 * downloading fills (a member no index maps yet, such as a dwz alt
 * file), a reference; NULL when there is none.
 */
struct flight *passes_find(struct passes *ps, const struct cache_key *k);

/* A package as flight labels show it: its file name. */
void pass_label(const char *package, char *out, size_t len);

#endif /* SOURCES_PASS_H */
