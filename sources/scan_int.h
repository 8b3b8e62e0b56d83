/*
 * sources/scan_int.h: what the files of the scan share; nothing else
 * includes it.
 *
 * sources/scan.c holds a scan's state and the whole scan (scan_run);
 * sources/scanchange.c the scan of the paths a directory watch saw change
 * (scan_changes); both walk with sources/scanwalk.c and hand what the
 * walk reaches to the readers of local files (sources/scanfile.c) and of
 * packages (sources/scanpkg.c), which commit what they read.  Calls go
 * that way only: the readers never call scan.c or scanchange.c, the walk
 * calls no reader but through its visitor (struct reach).
 *
 * Threads: a struct scan belongs to the thread that runs the scan; the
 * helpers that read queued items beside it touch only their item (and
 * what struct scan says is under its lock).
 */
#ifndef SOURCES_SCAN_INT_H
#define SOURCES_SCAN_INT_H

#include <sys/stat.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/index.h"
#include "indexer/package.h"
#include "sources/scan.h"

/* Local files read at once, then committed in one batch. */
#define QUEUE_MAX 1024

/*
 * Bounds on one package: at most PKG_RECS_MAX records (servable members,
 * the files it ships, the sources its debuginfo names) whose names take at
 * most PKG_NAMES_MAX bytes.  Memory: a queue of PKG_QUEUE_MAX packages is
 * read at once, largest first; a package whose records take more than
 * PKG_HELD_MAX bytes is committed by its reader as soon as it is read, the
 * others wait for the queue's commit.  So what is held is at most
 * PKG_QUEUE_MAX * PKG_HELD_MAX, plus one whole package per thread.
 */
#define PKG_QUEUE_MAX 64
#define PKG_HELD_MAX (256u << 10)
#define PKG_RECS_MAX 100000
#define PKG_NAMES_MAX (16u << 20)
#define PKG_SOURCES_MAX 100000 /* source files one debuginfo may name */

/* An open-addressing set of 128-bit path hashes; 0 marks a free slot. */
struct pathset {
	uint64_t (*slot)[2];
	size_t cap, n;
};

/* The source files a local debug file names that exist (read_item). */
struct srclist {
	char **v;
	size_t n, cap, names;
};

struct scan_item {
	char *path;
	struct stat st;
	int rc; /* of scan_identify */
	struct index_file rec;
	struct buildid alt_id; /* of its .gnu_debugaltlink; len 0: none */
	int alt_missing; /* relative names wait for an alt file */
	struct srclist src;
	char err[160];
};

/* How one package read went. */
enum pkg_result {
	PKG_READ, /* recs are its members */
	PKG_BAD, /* not readable as a package: recorded without members */
	PKG_AGAIN, /* cannot be read now (open, memory, cancel): left alone */
};

struct pkg_item {
	char *path;
	struct stat st;
	enum pkg_result result;
	struct pkg_rec *recs; /* member names malloc'ed */
	size_t nrecs, caprecs, names;
	const atomic_int *cancel;
	int waits_alt; /* debug files link to an alt file not indexed yet */
	char err[256];
};

struct scan;

/* One kind of root: what the walk does with a file, and what it reached. */
struct reach {
	void (*visit)(struct scan *s, const char *path, const struct stat *st);
	struct pathset seen;
	int incomplete; /* a root could not be read: keep old records */
};

struct scan {
	struct index *idx;
	const struct scan_opts *opts;
	struct index_reader *rd;
	struct reach files, pkgs;
	struct scan_item queue[QUEUE_MAX];
	size_t nqueue;
	struct pkg_item pkgq[PKG_QUEUE_MAX];
	size_t npkgq;
	char **waiting; /* packages read again at the end: waits_alt */
	size_t nwaiting, capwaiting;
	char **srcwait; /* files listed again at the end: alt_missing */
	size_t nsrcwait, capsrcwait;
	int last_round; /* reading the waiting packages */
	struct pkg_limits lim; /* on every package read */
	struct pool_share *share; /* the queues are read with helpers */
	/* Guards what package readers change: failed, stats, waiting. */
	pthread_mutex_t lock;
	int failed; /* the index could not be written */
	struct index_scan stats; /* recorded with each batch */
	int64_t t0; /* clock_mono_ns() at the start */
	int one; /* scan_package, scan_changes: no scan record to keep */
};

/* scan.c: a scan of idx with opts and its visitors; NULL out of memory. */
struct scan *scan_new(struct index *idx, const struct scan_opts *opts);
void scan_free(struct scan *s);

/* scanwalk.c: walk every root in roots with r's visitor. */
void scan_walk_roots(struct scan *s, struct reach *r, char **roots,
    size_t nroots);
/* scanwalk.c: walk one changed path as a root would be: a file, a tree. */
void scan_walk_change(struct scan *s, const struct scan_change *c);
/*
 * scanwalk.c: add path to what r reached.  1 when it is to be read:
 * reached for the first time, and without a record (as get() reads it)
 * that st matches.
 */
int scan_needs_reading(struct scan *s, struct reach *r, const char *path,
    const struct stat *st,
    int (*get)(struct index_reader *, const char *, struct index_file *));
/* scanwalk.c: 1 when the walk reached path under r's roots. */
int scan_reached(struct reach *r, const char *path);
/* scanwalk.c: a record of path as st describes it, with nothing to serve. */
void scan_rec_from_stat(struct index_file *rec, const char *path,
    const struct stat *st);
/* scanwalk.c: the helpers for nt reads at once: this thread reads too. */
unsigned scan_helpers(unsigned nt);

/* scanfile.c: a file reached under a scan-dir root (struct reach). */
void scan_consider_file(struct scan *s, const char *path,
    const struct stat *st);
/* scanfile.c: read the queued files in parallel, then commit them. */
void scan_flush_files(struct scan *s);
/* scanfile.c: at the end, list the sources that waited for an alt file. */
void scan_relist_sources(struct scan *s);

/* scanpkg.c: a file reached under a package root (struct reach). */
void scan_consider_package(struct scan *s, const char *path,
    const struct stat *st);
/* scanpkg.c: read the queued packages in parallel, then commit them. */
void scan_flush_packages(struct scan *s);
/* scanpkg.c: at the end, read again the packages that waited for alts. */
void scan_read_waiting(struct scan *s);

#endif /* SOURCES_SCAN_INT_H */
