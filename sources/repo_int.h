/*
 * sources/repo_int.h: what the files of the remote repositories share:
 * sources/repo.c (the request side), sources/repodl.c (downloads),
 * sources/reposync.c (refreshes) and sources/repoready.c (readiness,
 * progress and the helpers they all use); nothing else includes it.  Calls
 * go one way: repo.c calls the three others, repodl.c and reposync.c call
 * repoready.c, which calls none of them.
 */
#ifndef SOURCES_REPO_INT_H
#define SOURCES_REPO_INT_H

#include <event2/util.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "fetchers/repofetch.h"
#include "sources/pass.h"
#include "sources/repo.h"

struct dl;
struct event;
struct index_reader;
struct parked;
struct prod;

/* Directories of ours, so that the files in them fit in PATH_MAX. */
#define DIR_MAX 2048
/* Index files of one refresh at most. */
#define FILES_MAX 64
/* Largest metadata file (decompressed sizes are bounded by the parser). */
#define META_MAX (4ull << 30)
/* Consecutive failures that open a repository's breaker, and its backoff. */
#define BREAKER_FAILURES 5
#define BREAKER_BACKOFF 30
/* The kind of cache key of a package download. */
#define PKG_KEY_ARG "repo-package"

enum refresh_step {
	R_IDLE,
	R_START,
	R_INRELEASE,
	R_RELEASE,
	R_RELEASE_GPG,
	R_VERIFY,
	R_FILES,
	R_BUILD,
};

/* An index file to fetch, as Release lists it. */
struct ifile {
	char name[256]; /* relative to dists/SUITE/ */
	uint64_t size;
	uint8_t sha256[32];
	int contents; /* a Contents file, else Packages */
	char arch[64];
	int kept; /* a copy of that SHA-256 is kept: no GET */
	int whole; /* a 304 contradicted the checksum: ask unconditionally */
	char etag[256]; /* of its last answer; "" when none */
	int64_t last_modified; /* of its last answer; -1 when none */
};

/*
 * A repository's slot, never freed while the daemon runs: downloads and
 * refresh steps under way may name it after it left the configuration.
 */
struct repo {
	struct repos *rs;
	unsigned i;
	char *line; /* its repo line: the same line is the same repository */
	/* Configured now: looked up and refreshed; any thread reads it. */
	atomic_int live;
	int due; /* the loop: its first refresh is to start (kick_cb) */
	struct config_repo *cr;
	uint8_t key[REPOIDX_KEY_LEN];
	char dir[DIR_MAX]; /* its work directory */
	char label[1400]; /* its metric labels: repo="URL",suite="SUITE" */
	/* The refresh, on the loop (and its worker steps). */
	enum refresh_step step;
	int again; /* asked to refresh while one ran */
	struct repofetch *rf;
	int fd;
	int inline_sig; /* InRelease, else Release + Release.gpg */
	char etag[256]; /* of the last verified InRelease */
	int64_t last_modified;
	struct ifile files[FILES_MAX];
	size_t nfiles, cur;
	/* The files of the last refresh that succeeded, for validators. */
	struct ifile last[FILES_MAX];
	size_t nlast;
	int ok; /* worker's verdict */
	int unchanged; /* worker: what the generation was made from, again */
	char why[512];
	char url[2048]; /* of the transfer running, without userinfo */
	/* What this refresh verified, digested (see refresh_digest). */
	uint8_t digest[REPOIDX_DIGEST_LEN];
	/* The index's state of it, as the last worker step read it. */
	struct repoidx_state st;
	int64_t t0; /* clock_mono_ns() when the refresh began */
	int first_ended; /* loop: its first refresh has ended */
	struct event *retry; /* the next try after a failed refresh */
	unsigned backoff; /* seconds of the last wait; 0 after a success */
	/* Its progress, under rs->pmu. */
	struct repos_progress prog;
	/* Counters, any thread. */
	atomic_uint_fast64_t refreshes, refresh_failures, refreshes_unchanged,
	    downloads, download_failures, timeouts, http_errors,
	    checksum_errors, members_revoked;
	atomic_int failures_in_row;
	atomic_int_fast64_t open_until; /* breaker: skipped until then */
	atomic_int_fast64_t last_refresh; /* the last that succeeded */
	/* For /status and /metrics (repos_state), any thread. */
	atomic_int state; /* enum repos_refresh_state */
	atomic_int_fast64_t last_end; /* of the last refresh, either way */
	atomic_int_fast64_t next_refresh; /* the timer's next; 0: never */
	char last_why[512]; /* of the last failed refresh, under rs->mu */
};

struct repos {
	struct repos_deps d; /* d.cfg: the last repos_apply's, for the loop */
	/*
	 * The slots: n in use, of cap, each made once by repos_apply for a
	 * line it had not seen (and taken back when the line comes back):
	 * any thread reads up to n.
	 */
	struct repo *v;
	atomic_size_t n;
	size_t cap;
	/* Settings the workers read (repos_apply). */
	atomic_uint_fast64_t cache_size; /* repo-cache-size */
	atomic_uint min_free; /* min-free-disk */
	atomic_uint error_ttl;
	struct curlev *cv;
	struct repofetch_opts fo, dlo;
	const char **listeners; /* the config's, for the redirect policy */
	char pkgdir[DIR_MAX];
	char tmpdir[DIR_MAX]; /* for members a scan inspects */
	struct event *timer, *kick;
	pthread_mutex_t mu;
	struct dl *queue, **queue_tail; /* under mu, oldest first */
	atomic_uint active; /* downloads started and not ended */
	struct dl *running; /* downloads begun, under mu, by ->rnext */
	struct dl *held; /* whose packages no trim evicts; mu, by ->inext */
	atomic_int refresh_asked;
	atomic_int trim_again; /* a trim stopped at a held package */
	int stopping; /* repos_stop(): no more pool jobs; the loop's */
	/* Requests parked until the first refreshes end; under mu. */
	struct parked *parked;
	int watching; /* its watcher is registered */
	int ready_seen; /* the first refreshes ended */
	/* Readiness and progress: pmu guards these and each repo's prog. */
	pthread_mutex_t pmu;
	size_t first_ended; /* repositories whose first refresh ended */
	struct repos_watcher *watchers; /* to call when no more starting */
	atomic_int starting; /* see repos_starting() */
	atomic_int refreshing; /* refreshes running */
	struct event *ready_timer; /* repo-ready-timeout */
	void (*on_progress)(void *arg); /* repos_on_progress(); loop */
	void *progress_arg;
	unsigned seed; /* of the retries' jitter; loop */
};

/* A repos_when_ready() registration. */
struct repos_watcher {
	void (*cb)(void *arg);
	void *arg;
	struct repos_watcher *next;
};

/* Where an id was found. */
struct repos_hit {
	unsigned repo;
	enum repoidx_kind kind; /* what named it */
	char file[REPOIDX_FILE_MAX + 1];
	uint64_t size;
	uint8_t sha256[32];
	struct cache_key key; /* of the package's download */
};

/* What a member fill (prod.data) of a repository's package wants. */
struct repo_want {
	struct pass_want pw; /* first: a pass reads the fill's data as this */
	struct repos_hit hit;
	struct prod *p;
	struct repo_want *next; /* in its package's after list */
};

/*
 * sources/repodl.c, in rd's transaction: the first repository (whose breaker is closed)
 * holding id as a debug file, or (executable) as an executable: one a
 * usr/lib/.build-id/ link names in any repository first, then one only a
 * debug package's suffix-less link names (cache/repoidx.h).  A package
 * downloaded and indexed already is passed by (the package step had it).
 * 1 and *hit, 0 when none, 2 when one holds it but its package failed a
 * moment ago (*retry: seconds left), -1 on error.  *open is 1 + the first
 * repository passed by that holds it (its breaker open), else 0.
 */
int repo_find(struct repos *rs, struct index_reader *rd,
    const struct buildid *id, int executable, struct repos_hit *hit,
    unsigned *retry, size_t *open);
/*
 * sources/repodl.c, any thread: fill p (its data a struct repo_want) from
 * its package's download; the source's produce.
 */
void repo_produce(struct prod *p);
/* sources/repodl.c, the loop: start queued downloads while slots are free. */
void repo_dl_kick(struct repos *rs);
/* sources/repodl.c, any thread: downloads waiting for a slot. */
size_t repo_dl_waiting(struct repos *rs);

/* sources/repoready.c: mkdir -p path: 0, or -1 with errno. */
int repo_mkdirs(const char *path);
/* sources/repoready.c: the SHA-256 and size of the file at path: 0, -1. */
int repo_file_sha256(const char *path, uint8_t out[32], uint64_t *size);
/* sources/reposync.c, the loop: refresh r now, or after the one running. */
void reposync_start(struct repo *r);
/* sources/repoready.c: a byte count in decimal units: "151.2 kB". */
const char *repo_size_text(uint64_t n, char *out, size_t len);
/*
 * sources/repoready.c, the loop: the repositories are no longer starting
 * (timed out or not): the watchers are called.
 */
void repo_ready(struct repos *rs, int timed_out);
/* sources/reposync.c, the loop: the retry timer of r (event callback). */
void reposync_retry_cb(evutil_socket_t fd, short what, void *arg);
/*
 * The loop: r left the configuration (r->live is 0): no refresh of it
 * starts again, and the one that runs ends at its next step (a transfer
 * at once).
 */
void reposync_stop(struct repo *r);

#endif /* SOURCES_REPO_INT_H */
