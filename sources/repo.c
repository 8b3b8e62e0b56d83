/*
 * sources/repo.c: remote repositories as a source: finding an id in their
 * index, downloading packages, and the passes that extract members while
 * they download (see sources/repo.h; the refresh is sources/reposync.c).
 *
 * A package download is a flight of its own key, made from the package's
 * SHA-256: requests for any of its ids join it.  At most repo-downloads
 * run at once; the others wait in a queue, oldest first, and start as
 * running ones end (their requests wait with them).  The loop fetches it into
 * a temp file of the package cache (<cache-dir>/repo-packages); a worker
 * checks size and SHA-256 and renames it into place; once no pass reads the
 * package any more (indexing decompresses it all again, which would take
 * the CPU from the pass and its clients), another indexes its members
 * (sources/scan.h) and trims the package cache to repo-cache-size, oldest
 * downloads first; only then does the flight end READY.  A failed
 * download ends FAILED, leaves nothing behind, counts against the
 * repository's breaker and is remembered for error-ttl (an error entry
 * under the package's key).
 *
 * While it downloads, the fills of its members read it in a pass that
 * follows the file as it grows (sources/pass.h, struct pass_growth): one
 * decompression serves every member asked for, the dwz alt files and the
 * siblings clients ask for next.  A member's last byte goes out as soon as
 * the member is out and has passed its own check (its build-id, the ELF
 * check of every fill); the package's checksum decides what is kept: the
 * members are published once it passed, and none is if it failed (their
 * flights then end failed, the members counted in
 * dbgmirror_repo_members_revoked_total).  A client may so hold a member of
 * a package whose checksum then fails: it carried the build-id asked for
 * and passed the check any fill passes.  A fill the passes cannot serve
 * goes on to the package step once the package is in.
 *
 * An id no repository maps may be the alt file of a package a pass reads:
 * the passes' flights are looked up by key (passes_find).  While the first
 * refreshes run (repos_starting()), a request for an id nothing maps waits
 * for them (parked, woken by one watcher for all) and is asked again; a
 * not-found answer while a refresh runs carries a short max-age, and the
 * reason repos_why_absent() gives.
 *
 * Threads: the repositories' state and the transfers belong to the fills'
 * loop; the download queue, the parked requests and the counters are
 * shared (mu, atomics).  Lock order: the passes' lock, then mu, then a
 * growing package's.
 */
#include "sources/repo_int.h"

#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/blobstore.h"
#include "cache/flight.h"
#include "cache/files.h"
#include "cache/index.h"
#include "cache/negative.h"
#include "cache/pkgindex.h"
#include "conf/config.h"
#include "daemon/clock.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/pool.h"
#include "fetchers/repofetch.h"
#include "indexer/elf.h"
#include "resolver/produce.h"
#include "resolver/rq.h"
#include "sources/pass.h"
#include "sources/scan.h"
#include "sources/sources.h"

/* The max-age of a not-found answer while a refresh runs. */
#define REFRESHING_MAX_AGE 5

/* A pass waiting for the checksum of a growing package. */
struct checked_wait {
	size_t (*done)(void *darg, int ok, const char *why);
	void *darg;
	struct checked_wait *next;
};

/*
 * A package as it downloads, shared by the download (the loop writes
 * written and the states) and the passes that read it as it grows
 * (workers wait on cv); freed with its last reference.
 */
struct growing {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t written;
	int complete; /* the transfer: 0 running, 1 every byte in, -1 failed */
	int state; /* 0 downloading, 1 checked and indexed, -1 failed */
	int checked; /* its checksum: 0 not yet, 1 passed, -1 failed (or none) */
	struct checked_wait *waiting; /* passes, for checked */
	struct repo_want *after; /* fills for the package step once it is in */
	int readers; /* passes reading it (pass_growth.hold) */
	struct dl *indexing; /* checked, to index once no pass reads it */
	int refs;
	char why[256];
	char tmp[PATH_MAX], path[PATH_MAX];
	struct repo *r;
	struct pass_growth gr; /* how passes read it */
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

/* A package download. */
struct dl {
	struct growing *g; /* its bytes, for the passes while it runs */
	struct repos *rs;
	struct dl *next; /* in the queue */
	struct repo *r;
	struct flight *f;
	struct repos_hit hit;
	struct repofetch *rf;
	int fd;
	char tmp[PATH_MAX], path[PATH_MAX];
	uint64_t bytes;
	struct dl *rnext; /* among rs->running */
	struct dl *enext; /* repos_stop's list */
	int started; /* holds one of the repo-downloads slots; under mu */
	int ok, timeout, checksum;
	char why[256];
};

/* A request parked until the first refreshes end. */
struct parked {
	struct rq_park *pk;
	struct parked *next;
};

/* ------------------------------------------------ the growing package */

static void
growing_unref(struct growing *g)
{
	int last;

	if (g == NULL)
		return;
	pthread_mutex_lock(&g->mu);
	last = --g->refs == 0;
	pthread_mutex_unlock(&g->mu);
	if (last) {
		pthread_mutex_destroy(&g->mu);
		pthread_cond_destroy(&g->cv);
		free(g);
	}
}

/* Tell the passes reading g: more bytes, or the transfer's end. */
static void
growing_set(struct growing *g, uint64_t written, int complete)
{
	pthread_mutex_lock(&g->mu);
	g->written = written;
	g->complete = complete;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

/* 1 while g's file is neither there to read nor known to fail. */
static int
growing_unsure(const struct growing *g)
{
	return g->checked == 0 && g->state == 0 && g->complete != -1;
}

/*
 * pass_growth.open: the package as it downloads, or where it went once
 * checked (not once indexed: the indexing waits for the passes).
 */
static int
growing_open(void *arg, char *why, size_t len)
{
	struct growing *g = arg;
	int fd = -1;

	pthread_mutex_lock(&g->mu);
	while (g->tmp[0] == '\0' && growing_unsure(g))
		pthread_cond_wait(&g->cv, &g->mu);
	if (growing_unsure(g))
		fd = open(g->tmp, O_RDONLY | O_CLOEXEC);
	/* Renamed into place meanwhile: wait for the checksum, then there. */
	while (fd == -1 && growing_unsure(g))
		pthread_cond_wait(&g->cv, &g->mu);
	if (fd == -1 && (g->checked == 1 || g->state == 1))
		fd = open(g->path, O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		snprintf(why, len, "%s",
		    g->why[0] != '\0' ? g->why : "package unavailable");
	pthread_mutex_unlock(&g->mu);
	return fd;
}

/* pass_growth.grow: wait for more of the package, or its end. */
static int
growing_grow(uint64_t have, void *arg)
{
	struct growing *g = arg;
	int rc;

	pthread_mutex_lock(&g->mu);
	while (g->written <= have && g->complete == 0 && g->state == 0)
		pthread_cond_wait(&g->cv, &g->mu);
	rc = g->written > have ? 1 : g->complete == 1 || g->state == 1 ? 0 : -1;
	pthread_mutex_unlock(&g->mu);
	return rc;
}

/* The loop: n members of g's package were not kept (why): say so. */
static void
growing_revoked(struct growing *g, size_t n, const char *why)
{
	if (n == 0)
		return;
	atomic_fetch_add(&g->r->members_revoked, n);
	log_warnx("repo %s: %s: %zu member(s) had gone out to clients, each "
		  "checked on its own, before the package failed: none is "
		  "kept (%s)",
	    g->r->cr->name, g->path, n, why);
}

/*
 * The loop: g's checksum passed (ok) or not: the passes waiting keep what
 * they extracted, or none of it (counted and logged).
 */
static void
growing_checked_now(struct growing *g, int ok, const char *why)
{
	struct checked_wait *w, *next;
	size_t revoked = 0;

	pthread_mutex_lock(&g->mu);
	if (g->checked != 0) {
		pthread_mutex_unlock(&g->mu);
		return;
	}
	g->checked = ok ? 1 : -1;
	if (!ok)
		snprintf(g->why, sizeof(g->why), "%s", why);
	w = g->waiting;
	g->waiting = NULL;
	pthread_cond_broadcast(&g->cv); /* growing_open */
	g->refs++; /* the passes told may end, and drop theirs */
	pthread_mutex_unlock(&g->mu);
	for (; w != NULL; w = next) {
		next = w->next;
		revoked += w->done(w->darg, ok, why);
		free(w);
	}
	growing_revoked(g, revoked, why);
	growing_unref(g);
}

/* pass_growth.checked */
static void
growing_checked(void *arg, size_t (*done)(void *darg, int ok, const char *why),
    void *darg)
{
	struct growing *g = arg;
	struct checked_wait *w;
	char why[256];
	int checked;

	pthread_mutex_lock(&g->mu);
	if ((checked = g->checked) == 0 && (w = malloc(sizeof(*w))) != NULL) {
		w->done = done;
		w->darg = darg;
		w->next = g->waiting;
		g->waiting = w;
		pthread_mutex_unlock(&g->mu);
		return;
	}
	snprintf(why, sizeof(why), "%s",
	    checked == 0 ? "out of memory" : g->why);
	/* done may end the last pass holding g, before g counts. */
	g->refs++;
	pthread_mutex_unlock(&g->mu);
	growing_revoked(g, done(darg, checked == 1, why), why);
	growing_unref(g);
}

/* The loop: the end of fill p of g's package, handed on or failed. */
static void
growing_hand_on_now(struct prod *p, int state, const char *why)
{
	if (state == 1)
		produce_absent(p); /* the package step: it is in now */
	else
		produce_end(p, FLIGHT_FAILED, why);
}

/* pass_growth.hand_on: to the package step once the download ended. */
static void
growing_hand_on(void *arg, struct prod *p)
{
	struct growing *g = arg;
	struct repo_want *rw = p->data;
	char why[256];
	int state;

	pthread_mutex_lock(&g->mu);
	if ((state = g->state) == 0) {
		rw->next = g->after;
		g->after = rw;
	}
	snprintf(why, sizeof(why), "%s", g->why);
	pthread_mutex_unlock(&g->mu);
	if (state != 0)
		growing_hand_on_now(p, state, why);
}

static void
growing_ref(struct growing *g)
{
	pthread_mutex_lock(&g->mu);
	g->refs++;
	pthread_mutex_unlock(&g->mu);
}

static void dl_index(struct dl *dl);

/*
 * pass_growth.hold: a pass reads g, or no more.  The last one out lets
 * the download's indexing begin, which waited so as not to take the CPU
 * the passes (and their clients) need.
 */
static void
growing_hold(void *arg, int take)
{
	struct growing *g = arg;
	struct dl *dl = NULL;

	pthread_mutex_lock(&g->mu);
	if (take) {
		g->refs++;
		g->readers++;
	} else if (--g->readers == 0) {
		dl = g->indexing;
		g->indexing = NULL;
	}
	pthread_mutex_unlock(&g->mu);
	/* The download holds a reference of its own while it waits. */
	if (!take)
		growing_unref(g);
	if (dl != NULL)
		dl_index(dl);
}

static struct growing *
growing_new(struct repo *r)
{
	struct growing *g;

	if ((g = calloc(1, sizeof(*g))) == NULL)
		return NULL;
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
	g->refs = 1;
	g->r = r;
	g->gr.open = growing_open;
	g->gr.grow = growing_grow;
	g->gr.checked = growing_checked;
	g->gr.hand_on = growing_hand_on;
	g->gr.hold = growing_hold;
	g->gr.arg = g;
	return g;
}

/*
 * The loop: the download of g ended (state 1: checked and indexed; -1:
 * failed, why): the passes reading it stop waiting, the fills waiting for
 * the package step go on or fail.
 */
static void
growing_end(struct growing *g, uint64_t written, int state, const char *why)
{
	struct repo_want *after, *next;

	pthread_mutex_lock(&g->mu);
	g->written = written;
	if (g->complete == 0)
		g->complete = state == 1 ? 1 : -1;
	g->state = state;
	if (why != NULL && state != 1)
		snprintf(g->why, sizeof(g->why), "%s", why);
	after = g->after;
	g->after = NULL;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
	if (state != 1)
		growing_checked_now(g, 0,
		    why != NULL ? why : "download failed");
	for (; after != NULL; after = next) {
		next = after->next;
		growing_hand_on_now(after->p, state, why);
	}
}

/* ----------------------------------------------------------- downloads */

/* The directory name in dir, open; NULL when it is none. */
static DIR *
opendir_at(DIR *dir, const char *name)
{
	DIR *d;
	int fd;

	fd = openat(dirfd(dir), name,
	    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return NULL;
	if ((d = fdopendir(fd)) == NULL)
		close(fd);
	return d;
}

/* A package in the package cache. */
struct cached {
	char path[PATH_MAX];
	int64_t mtime_ns;
	uint64_t size;
	int evicted;
};

struct trim {
	struct cached *v;
	size_t n;
};

/* pkgidx_prune: keep what was not evicted. */
static int
trim_keep(const char *path, void *arg)
{
	struct trim *t = arg;
	size_t i;

	for (i = 0; i < t->n; i++)
		if (t->v[i].evicted && strcmp(t->v[i].path, path) == 0)
			return 0;
	return 1;
}

/*
 * Worker: trim the package cache to repo-cache-size, oldest downloads
 * first (never the last one), and forget the members of what went.
 */
static void
trim_cache(struct repos *rs)
{
	struct trim t = { NULL, 0 };
	struct cached *nv;
	struct index_batch *b = NULL;
	size_t cap = 0, i, j, left;
	uint64_t total = 0, removed;
	struct dirent *de, *se;
	struct stat st;
	char err[256], *slash;
	int any = 0;
	DIR *dir, *sub;

	if ((dir = opendir(rs->pkgdir)) == NULL)
		return;
	/* DIR/HEX/NAME: one package in each directory. */
	while ((de = readdir(dir)) != NULL) {
		if (de->d_name[0] == '.' ||
		    (sub = opendir_at(dir, de->d_name)) == NULL)
			continue;
		while ((se = readdir(sub)) != NULL) {
			if (se->d_name[0] == '.' ||
			    fstatat(dirfd(sub), se->d_name, &st, 0) == -1 ||
			    !S_ISREG(st.st_mode))
				continue;
			if (t.n == cap) {
				cap = cap == 0 ? 64 : 2 * cap;
				if ((nv = realloc(t.v, cap * sizeof(*t.v))) ==
				    NULL)
					break;
				t.v = nv;
			}
			snprintf(t.v[t.n].path, sizeof(t.v[t.n].path),
			    "%s/%s/%s", rs->pkgdir, de->d_name, se->d_name);
			t.v[t.n].mtime_ns =
			    (int64_t)st.st_mtim.tv_sec * 1000000000 +
			    st.st_mtim.tv_nsec;
			t.v[t.n].size = (uint64_t)st.st_size;
			t.v[t.n].evicted = 0;
			total += t.v[t.n].size;
			t.n++;
		}
		closedir(sub);
	}
	closedir(dir);
	for (left = t.n; total > rs->d.cfg->repo_cache_size && left > 1;
	     left--) {
		for (i = SIZE_MAX, j = 0; j < t.n; j++)
			if (!t.v[j].evicted &&
			    (i == SIZE_MAX ||
				t.v[j].mtime_ns < t.v[i].mtime_ns))
				i = j;
		t.v[i].evicted = 1;
		total -= t.v[i].size;
		any = 1;
	}
	/*
	 * The index forgets them before they go, so that no request is sent
	 * to a package that is not there (a failed prune fails the commit:
	 * then they stay, and the next trim tries again).
	 */
	if (any && (b = index_batch_begin(rs->d.idx, err, sizeof(err))) != NULL)
		pkgidx_prune(b, trim_keep, &t, &removed);
	if (any &&
	    (b == NULL || index_batch_commit(b, err, sizeof(err)) == -1)) {
		log_warnx("%s: %s", __func__, err);
		any = 0;
	}
	for (i = 0; any && i < t.n; i++) {
		if (!t.v[i].evicted || unlink(t.v[i].path) == -1)
			continue;
		log_info("repo package cache: %s evicted", t.v[i].path);
		if ((slash = strrchr(t.v[i].path, '/')) != NULL) {
			*slash = '\0';
			rmdir(t.v[i].path);
			*slash = '/';
		}
	}
	free(t.v);
}

/* Worker: a package downloaded already, indexed unless it is. */
static void
dl_have_work(void *arg)
{
	struct dl *dl = arg;
	struct index_reader *rd;
	struct index_file pf;
	char err[256];
	int have = 0;

	if ((rd = index_reader_new(dl->rs->d.idx)) != NULL &&
	    index_reader_begin(rd) == 0) {
		have = pkgidx_get_package(rd, dl->path, &pf) == 0;
		index_reader_end(rd);
	}
	index_reader_free(rd);
	dl->ok = have ||
	    scan_package(dl->rs->d.idx, dl->path, dl->rs->tmpdir,
		dl->rs->d.cfg->min_free_disk, err, sizeof(err)) == 0;
	if (!dl->ok)
		snprintf(dl->why, sizeof(dl->why), "%.150s: %.90s",
		    dl->hit.file, err);
}

/* Worker: check the download's size and SHA-256, and put it in place. */
static void
dl_check_work(void *arg)
{
	struct dl *dl = arg;
	uint8_t sha[32];
	uint64_t size;
	char dir[PATH_MAX], *slash;

	dl->ok = 0;
	if (repo_file_sha256(dl->tmp, sha, &size) == -1 ||
	    size != dl->hit.size || memcmp(sha, dl->hit.sha256, 32) != 0) {
		dl->checksum = 1;
		snprintf(dl->why, sizeof(dl->why),
		    "%.150s: size or SHA256 differs from the repository's "
		    "index",
		    dl->hit.file);
		unlink(dl->tmp);
		return;
	}
	snprintf(dir, sizeof(dir), "%s", dl->path);
	if ((slash = strrchr(dir, '/')) != NULL)
		*slash = '\0';
	if ((mkdir(dir, 0755) == -1 && errno != EEXIST) ||
	    rename(dl->tmp, dl->path) == -1) {
		snprintf(dl->why, sizeof(dl->why), "rename: %s",
		    strerror(errno));
		unlink(dl->tmp);
		return;
	}
	dl->ok = 1;
}

/* Worker: index the package checked and in place, and trim the cache. */
static void
dl_index_work(void *arg)
{
	struct dl *dl = arg;
	struct repos *rs = dl->rs;
	char err[256];

	if (scan_package(rs->d.idx, dl->path, rs->tmpdir,
		rs->d.cfg->min_free_disk, err, sizeof(err)) == -1) {
		snprintf(dl->why, sizeof(dl->why), "%.150s: %.90s",
		    dl->hit.file, err);
		dl->ok = 0;
		return;
	}
	trim_cache(rs);
}

/* Worker: remember a failed download for error-ttl. */
static void
dl_fail_work(void *arg)
{
	struct dl *dl = arg;
	char err[256];

	if (dl->rs->d.cfg->error_ttl > 0 &&
	    neg_put(dl->rs->d.idx, &dl->hit.key, &(struct buildid){ 0 },
		NEG_ERROR, clock_now() + dl->rs->d.cfg->error_ttl, err,
		sizeof(err)) == -1)
		log_warnx("%s: %s", __func__, err);
}

/* The loop: the end of a download. */
static void
dl_end(struct dl *dl)
{
	struct repo *r = dl->r;
	struct dl **pp;

	if (dl->ok) {
		atomic_fetch_add(&r->downloads, 1);
		atomic_store(&r->failures_in_row, 0);
		flight_end(dl->f, FLIGHT_READY, NULL);
	} else {
		atomic_fetch_add(&r->download_failures, 1);
		if (dl->timeout)
			atomic_fetch_add(&r->timeouts, 1);
		if (dl->checksum)
			atomic_fetch_add(&r->checksum_errors, 1);
		log_warnx("repo %s: download failed: %s", r->cr->name, dl->why);
		if (atomic_fetch_add(&r->failures_in_row, 1) + 1 >=
		    BREAKER_FAILURES) {
			atomic_store(&r->open_until,
			    clock_now() + BREAKER_BACKOFF);
			log_warnx("repo %s: breaker open: skipped for %ds",
			    r->cr->name, BREAKER_BACKOFF);
		}
		flight_end(dl->f, FLIGHT_FAILED, dl->why);
	}
	flight_detach(dl->f);
	flight_unref(dl->f);
	pthread_mutex_lock(&dl->rs->mu);
	for (pp = &dl->rs->running; *pp != NULL; pp = &(*pp)->rnext)
		if (*pp == dl) {
			*pp = dl->rnext;
			break;
		}
	pthread_mutex_unlock(&dl->rs->mu);
	/* The package step extracts what the passes did not. */
	growing_end(dl->g, dl->bytes, dl->ok ? 1 : -1, dl->why);
	/* A download ended before it started: its passes never begin. */
	if (!dl->started && dl->rs->d.passes != NULL)
		passes_drop(dl->rs->d.passes, dl->path, dl->why);
	if (dl->started) {
		/* Its slot to the oldest download waiting. */
		atomic_fetch_sub(&dl->rs->active, 1);
		event_active(dl->rs->kick, EV_READ, 1);
	}
	growing_unref(dl->g);
	free(dl);
}

static void
dl_done(void *arg)
{
	struct dl *dl = arg;

	if (!dl->ok && !dl->rs->stopping &&
	    pool_submit(dl->rs->d.pool, dl_fail_work, dl->rs->d.inbox,
		(pool_fn)dl_end, dl) == 0)
		return;
	dl_end(dl);
}

/* Any thread: index the checked download. */
static void
dl_index(struct dl *dl)
{
	if (dl->rs->stopping ||
	    pool_submit_long(dl->rs->d.pool, dl_index_work, dl->rs->d.inbox,
		dl_done, dl) == -1) {
		snprintf(dl->why, sizeof(dl->why), "server is shutting down");
		dl->ok = 0;
		dl_end(dl);
	}
}

/*
 * The loop: the download's checksum is known: the passes keep what they
 * extracted, or none of it; then it is indexed, once no pass reads it
 * (indexing decompresses it all again: meanwhile it would slow the passes
 * that serve clients now).
 */
static void
dl_checked(void *arg)
{
	struct dl *dl = arg;
	struct growing *g = dl->g;
	int wait;

	growing_checked_now(g, dl->ok, dl->why);
	if (!dl->ok) {
		dl_done(dl);
		return;
	}
	pthread_mutex_lock(&g->mu);
	if ((wait = g->readers > 0))
		g->indexing = dl;
	pthread_mutex_unlock(&g->mu);
	if (!wait)
		dl_index(dl);
}

static void
dl_fetched(void *arg, const struct repofetch_result *res)
{
	struct dl *dl = arg;

	dl->rf = NULL;
	close(dl->fd);
	dl->fd = -1;
	if (res->error != NULL || res->status != 200) {
		if (res->error != NULL)
			snprintf(dl->why, sizeof(dl->why), "%.150s: %.90s",
			    dl->hit.file, res->error);
		else
			snprintf(dl->why, sizeof(dl->why),
			    "%.150s: HTTP status %ld", dl->hit.file,
			    res->status);
		if (res->status >= 400)
			atomic_fetch_add(&dl->r->http_errors, 1);
		dl->timeout = res->timeout;
		unlink(dl->tmp);
		dl->ok = 0;
		dl_done(dl);
		return;
	}
	/* Every byte is in: the passes may read to the end. */
	growing_set(dl->g, dl->bytes, 1);
	if (pool_submit_long(dl->rs->d.pool, dl_check_work, dl->rs->d.inbox,
		dl_checked, dl) == -1) {
		snprintf(dl->why, sizeof(dl->why), "server is shutting down");
		dl_end(dl);
	}
}

/* The loop: more of the package is in its temp file. */
static void
dl_progress(void *arg, uint64_t bytes)
{
	struct dl *dl = arg;

	dl->bytes = bytes;
	growing_set(dl->g, bytes, 0);
}

/* The loop: start a queued download. */
static void
dl_start(struct dl *dl)
{
	char url[2 * REPOIDX_FILE_MAX + 64];

	/* A download that ended just before this request joined it. */
	if (access(dl->path, F_OK) == 0) {
		/* In the package cache: it passed its checksum then. */
		growing_checked_now(dl->g, 1, NULL);
		if (pool_submit(dl->rs->d.pool, dl_have_work, dl->rs->d.inbox,
			dl_done, dl) == -1) {
			snprintf(dl->why, sizeof(dl->why),
			    "server is shutting down");
			dl_end(dl);
		}
		return;
	}
	snprintf(url, sizeof(url), "%s/%s", dl->r->cr->url, dl->hit.file);
	snprintf(dl->tmp, sizeof(dl->tmp), "%s/.dl-XXXXXX", dl->rs->pkgdir);
	if ((dl->fd = mkstemp(dl->tmp)) == -1) {
		snprintf(dl->why, sizeof(dl->why),
		    "cannot write the package cache: %s", strerror(errno));
		dl_end(dl);
		return;
	}
	pthread_mutex_lock(&dl->g->mu);
	snprintf(dl->g->tmp, sizeof(dl->g->tmp), "%s", dl->tmp);
	pthread_cond_broadcast(&dl->g->cv);
	pthread_mutex_unlock(&dl->g->mu);
	dl->rf = repofetch_get(dl->rs->cv, &dl->rs->dlo, url, dl->fd, NULL, -1,
	    dl_progress, dl_fetched, dl);
	if (dl->rf == NULL) {
		close(dl->fd);
		unlink(dl->tmp);
		snprintf(dl->why, sizeof(dl->why), "cannot start a transfer");
		dl_end(dl);
	}
}

/* The path of a package in the package cache: DIR/SHA256[0:16]/NAME. */
static void
pkg_path(const struct repos *rs, const struct repos_hit *hit, char *out,
    size_t len)
{
	char hex[17];
	const char *base = strrchr(hit->file, '/');

	/*
	 * A directory per package keeps its own file name, which
	 * X-DEBUGINFOD-ARCHIVE shows, and apart from a namesake's.
	 */
	buildid_hex(hit->sha256, 8, hex);
	snprintf(out, len, "%s/%s/%s", rs->pkgdir, hex,
	    base != NULL ? base + 1 : hit->file);
}

/*
 * Any thread: join (or start) the download of hit's package.  A reference
 * to its flight, READY once the package is downloaded, checked and
 * indexed; FAILED with why otherwise.  NULL when out of memory.
 */
static struct flight *
repos_join(struct repos *rs, const struct repos_hit *hit)
{
	struct flight *f;
	struct dl *dl;
	int created;
	char label[200];

	if ((f = flight_join(rs->d.ft, &hit->key, 0, &created)) == NULL)
		return NULL;
	if (!created)
		return f;
	flight_ref(f); /* the download's */
	snprintf(label, sizeof(label), "package %.100s from %.40s", hit->file,
	    rs->v[hit->repo].cr->name);
	flight_set_label(f, label);
	if ((dl = calloc(1, sizeof(*dl))) == NULL ||
	    (dl->g = growing_new(&rs->v[hit->repo])) == NULL) {
		free(dl);
		flight_end(f, FLIGHT_FAILED, "out of memory");
		flight_detach(f);
		flight_unref(f);
		return f;
	}
	dl->rs = rs;
	dl->r = &rs->v[hit->repo];
	dl->f = f;
	dl->hit = *hit;
	dl->fd = -1;
	pkg_path(rs, hit, dl->path, sizeof(dl->path));
	snprintf(dl->g->path, sizeof(dl->g->path), "%s", dl->path);
	pthread_mutex_lock(&rs->mu);
	*rs->queue_tail = dl;
	rs->queue_tail = &dl->next;
	dl->rnext = rs->running;
	rs->running = dl;
	pthread_mutex_unlock(&rs->mu);
	event_active(rs->kick, EV_READ, 1);
	return f;
}

/*
 * In rd's transaction: the first repository (whose breaker is closed)
 * holding id as a debug file, or (executable) as an executable: one a
 * usr/lib/.build-id/ link names in any repository first, then one only a
 * debug package's suffix-less link names (cache/repoidx.h).  A package
 * downloaded and indexed already is passed by (the package step had it).
 * 1 and *hit, 0 when none, 2 when one holds it but its package failed a
 * moment ago (*retry: seconds left), -1 on error.
 */
static int
repos_find(struct repos *rs, struct index_reader *rd, const struct buildid *id,
    int executable, struct repos_hit *hit, unsigned *retry)
{
	static const enum repoidx_kind debuginfo[] = { REPOIDX_DEBUGINFO },
				       exec[] = { REPOIDX_EXECUTABLE,
					       REPOIDX_EXECUTABLE_WEAK };
	const enum repoidx_kind *kinds = executable ? exec : debuginfo;
	size_t nkinds = executable ? 2 : 1, k, i;
	struct repoidx_pkg p;
	struct neg_entry ne;
	struct buildid pid;
	struct index_file pf;
	char path[PATH_MAX];
	int64_t now = clock_now();
	int rc;

	/* Strong kinds in every repository before weak ones in any. */
	for (k = 0; k < nkinds; k++) {
		for (i = 0; i < rs->n; i++) {
			if (atomic_load(&rs->v[i].open_until) > now)
				continue;
			rc = repoidx_find(rd, rs->v[i].key, id, kinds[k], &p);
			if (rc == INDEX_NOTFOUND)
				continue;
			if (rc != 0)
				return -1;
			hit->repo = (unsigned)i;
			hit->kind = kinds[k];
			memcpy(hit->file, p.file, p.file_len);
			hit->file[p.file_len] = '\0';
			hit->size = p.size;
			memcpy(hit->sha256, p.sha256, 32);
			pid.len = 32;
			memcpy(pid.bytes, p.sha256, 32);
			cache_key_make(&hit->key, &pid, CACHE_SOURCE,
			    PKG_KEY_ARG);
			/* Downloaded and indexed: the package step had it. */
			pkg_path(rs, hit, path, sizeof(path));
			if (pkgidx_get_package(rd, path, &pf) == 0)
				continue;
			if (neg_get(rd, &hit->key, now, &ne) == 0) {
				*retry = (unsigned)(ne.expires - now);
				return 2;
			}
			return 1;
		}
	}
	return 0;
}

/* ------------------------------------------------- fills of members */

/* The path a .build-id link of kind gives the member of id. */
static int
member_name(const struct buildid *id, enum repoidx_kind kind, char *out,
    size_t len)
{
	char hex[BUILDID_HEX_MAX];

	if (id->len < 2)
		return -1;
	buildid_format(id, hex);
	switch (kind) {
	case REPOIDX_DEBUGINFO:
		snprintf(out, len, "/usr/lib/debug/.build-id/%.2s/%s.debug",
		    hex, hex + 2);
		break;
	case REPOIDX_EXECUTABLE:
		snprintf(out, len, "/usr/lib/.build-id/%.2s/%s", hex, hex + 2);
		break;
	default:
		snprintf(out, len, "/usr/lib/debug/.build-id/%.2s/%s", hex,
		    hex + 2);
		break;
	}
	return 0;
}

/*
 * Any thread: fill p from its package's download.  While it downloads, p
 * joins a pass that reads it as it grows (started when the download
 * starts), by its member's .build-id path; a download that ended just now
 * hands p on at once (to the package step, which has the package then, or
 * past it).
 */
static void
repo_produce(struct prod *p)
{
	const struct resolve_deps *d = produce_deps(p);
	struct repos *rs = d->repos;
	struct repo_want *rw = p->data;
	struct flight_view v;
	struct growing *g = NULL;
	struct flight *df;
	struct dl *dl;
	char why[256];
	int held = 0, rc = -1;

	rw->p = p;
	if ((df = repos_join(rs, &rw->hit)) == NULL) {
		produce_end(p, FLIGHT_FAILED, "too many fills in flight");
		return;
	}
	if (d->packages != NULL)
		passes_lock(d->packages, 1);
	pthread_mutex_lock(&rs->mu);
	for (dl = rs->running; dl != NULL && dl->f != df; dl = dl->rnext)
		;
	if (dl != NULL) {
		g = dl->g;
		growing_ref(g);
		held = !dl->started;
		snprintf(rw->pw.package, sizeof(rw->pw.package), "%s",
		    dl->path);
	}
	pthread_mutex_unlock(&rs->mu);
	if (g != NULL && d->packages != NULL &&
	    member_name(&p->w.id, rw->hit.kind, rw->pw.member,
		sizeof(rw->pw.member)) == 0)
		rc = passes_join_growing(d->packages, p, &g->gr, held);
	if (d->packages != NULL)
		passes_lock(d->packages, 0);
	if (g != NULL && rc == -1)
		growing_hand_on(g,
		    p); /* after the download, the package step */
	growing_unref(g);
	if (g == NULL) {
		/* It ended just now: in the package cache, or failed. */
		flight_view(df, &v);
		snprintf(why, sizeof(why), "%s", v.why);
		if (v.state == FLIGHT_READY)
			produce_absent(p);
		else
			produce_end(p, FLIGHT_FAILED, why);
	}
	flight_unref(df); /* the download holds its own */
}

/* ------------------------------------------------------------- source */

/* pkgidx_find: any member will do. */
static int
member_cb(const struct pkg_rec *r, void *arg)
{
	return 1;
}

/* A parked request's client left: forget it (rq_park's gone). */
static void
repo_park_gone(struct rq_park *pk, void *arg)
{
	struct repos *rs = arg;
	struct parked **pp, *q;

	pthread_mutex_lock(&rs->mu);
	for (pp = &rs->parked; *pp != NULL; pp = &(*pp)->next) {
		if ((*pp)->pk == pk) {
			q = *pp;
			*pp = q->next;
			free(q);
			break;
		}
	}
	pthread_mutex_unlock(&rs->mu);
}

/*
 * The fills' loop, once the first refreshes ended (the one watcher of
 * repos_when_ready): every parked request asks again, on its loop.
 */
static void
repo_ready_wake(void *arg)
{
	struct repos *rs = arg;
	struct parked *q, *next;

	pthread_mutex_lock(&rs->mu);
	rs->ready_seen = 1;
	q = rs->parked;
	rs->parked = NULL;
	for (; q != NULL; q = next) {
		next = q->next;
		rq_unpark(q->pk);
		free(q);
	}
	pthread_mutex_unlock(&rs->mu);
}

/*
 * No repository maps rq's id while their first refreshes run: 1 when rq
 * is parked until they end (*r its result: SRC_PENDING, or its answer),
 * 0 when they ended meanwhile (or no memory: it goes on).
 */
static int
repo_park(struct rq *rq, struct repos *rs, enum src_result *r)
{
	struct parked *q;
	int rc;

	pthread_mutex_lock(&rs->mu);
	if (!rs->ready_seen && !rs->watching) {
		rc = repos_when_ready(rs, repo_ready_wake, rs);
		rs->ready_seen = rc == 1;
		rs->watching = rc == 0;
	}
	if (rs->ready_seen || !rs->watching ||
	    (q = malloc(sizeof(*q))) == NULL) {
		pthread_mutex_unlock(&rs->mu);
		return 0;
	}
	if ((*r = rq_park(rq, &q->pk, repo_park_gone, rs)) == SRC_PENDING &&
	    q->pk != NULL) {
		q->next = rs->parked;
		rs->parked = q;
	} else {
		free(q);
	}
	pthread_mutex_unlock(&rs->mu);
	return 1;
}

/*
 * In rq's transaction: why no repository serves rq's id, in the words of
 * repos_why_absent(), as rq's note: of a repository in its first refresh,
 * else of one with an index, else of the first.
 */
static void
repo_note(struct rq *rq, struct repos *rs)
{
	struct repoidx_state st, best;
	char why[320];
	size_t i, b = 0;
	int rank, brank = -1;

	for (i = 0; i < rs->n; i++) {
		if (repoidx_state(rq->th->rd, rs->v[i].key, &st) == -1)
			continue;
		rank = st.gen == 0 && st.running != 0 ? 2 : st.gen != 0;
		if (rank > brank) {
			brank = rank;
			best = st;
			b = i;
		}
	}
	if (brank == -1)
		return;
	repos_why_absent(&best, 0, why, sizeof(why));
	snprintf(rq->note, sizeof(rq->note), "repo %.100s: %.290s",
	    rs->v[b].cr->name, why);
}

/*
 * The request side: a debuginfo or executable a repository's index maps to
 * a package not in the package cache yet (one that is, or a local package
 * with the member, is the package step's), or that a pass over a package
 * still downloading fills (an alt file no index maps yet).  An id nothing
 * maps waits for the first refreshes; when it passes, it says why.
 */
static enum src_result
repo_lookup(struct rq *rq)
{
	const struct resolve_deps *d = rq->th->d;
	struct repos *rs = d->repos;
	enum route_endpoint ep = rq->rt->endpoint;
	struct repo_want *rw;
	struct prod_what w;
	struct cache_key k;
	struct flight *f;
	enum src_result r;
	unsigned retry = 0;
	int rc;

	if (rs == NULL || rs->n == 0 || d->prod == NULL ||
	    (ep != ROUTE_DEBUGINFO && ep != ROUTE_EXECUTABLE))
		return SRC_ABSENT;
	if (rq_txn(rq) == -1)
		return rq_fail(rq, "index unavailable");
	if (pkgidx_find(rq->th->rd, &rq->rt->id,
		ep == ROUTE_EXECUTABLE ? ELF_KIND_EXECUTABLE
				       : ELF_KIND_DEBUGINFO,
		member_cb, NULL) == 1)
		return SRC_ABSENT;
	if ((rw = calloc(1, sizeof(*rw))) == NULL)
		return rq_fail(rq, "out of memory");
	rc = repos_find(rs, rq->th->rd, &rq->rt->id, ep == ROUTE_EXECUTABLE,
	    &rw->hit, &retry);
	if (rc != 1)
		free(rw);
	if (rc == -1)
		return rq_fail(rq, "index lookup failed");
	if (rc == 2)
		return rq_outcome(rq, ANSWER_REPO_FAILING, NULL, retry, NULL);
	if (rc == 1) {
		rq_what(rq, &w);
		w.limit = 0;
		return rq_produce(rq, &w, rw);
	}
	rq_key(rq, &k);
	if (d->packages != NULL && (f = passes_find(d->packages, &k)) != NULL)
		return rq_join(rq, f);
	if (repos_starting(rs) && repo_park(rq, rs, &r))
		return r;
	repo_note(rq, rs);
	/* A refresh may bring it: clients should ask again soon. */
	if (repos_refreshing(rs))
		rq->max_age = REFRESHING_MAX_AGE;
	return SRC_ABSENT;
}

static void
repo_release(void *data)
{
	free(data);
}

const struct source source_repo = {
	.name = "repo",
	.held = 1,
	.lookup = repo_lookup,
	.produce = repo_produce,
	.produce_anywhere = 1,
	.release = repo_release,
};

/* ---------------------------------------------------------------- loop */

static void
kick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct repos *rs = arg;
	struct dl *dl;
	size_t i;

	/* Oldest first, while fewer than repo-downloads run; dl_end kicks. */
	while (atomic_load(&rs->active) < rs->d.cfg->repo_downloads) {
		pthread_mutex_lock(&rs->mu);
		if ((dl = rs->queue) != NULL) {
			if ((rs->queue = dl->next) == NULL)
				rs->queue_tail = &rs->queue;
			dl->started = 1;
		}
		pthread_mutex_unlock(&rs->mu);
		if (dl == NULL)
			break;
		atomic_fetch_add(&rs->active, 1);
		/*
		 * Its passes begin now, not when asked for: they would hold
		 * long workers, which running downloads need, while they wait.
		 */
		if (rs->d.passes != NULL)
			passes_begin(rs->d.passes, dl->path);
		dl_start(dl);
	}
	if (atomic_exchange(&rs->refresh_asked, 0))
		for (i = 0; i < rs->n; i++)
			reposync_start(&rs->v[i]);
}

/* The periodic refresh is next due repo-refresh seconds from now. */
static void
next_due(struct repos *rs)
{
	int64_t next = clock_now() + (int64_t)rs->d.cfg->repo_refresh;
	size_t i;

	for (i = 0; i < rs->n; i++)
		atomic_store(&rs->v[i].next_refresh, next);
}

static void
timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct repos *rs = arg;
	size_t i;

	next_due(rs);
	for (i = 0; i < rs->n; i++)
		reposync_start(&rs->v[i]);
}

void
repos_refresh(struct repos *rs)
{
	if (rs == NULL || rs->n == 0)
		return;
	atomic_store(&rs->refresh_asked, 1);
	event_active(rs->kick, EV_READ, 1);
}

size_t
repos_count(const struct repos *rs)
{
	return rs == NULL ? 0 : rs->n;
}

int
repos_starting(struct repos *rs)
{
	return rs != NULL && atomic_load(&rs->starting);
}

int
repos_refreshing(struct repos *rs)
{
	return rs != NULL && atomic_load(&rs->refreshing) > 0;
}

int
repos_when_ready(struct repos *rs, void (*cb)(void *arg), void *arg)
{
	struct repos_watcher *w, **pp;

	if (rs == NULL)
		return 1;
	if ((w = malloc(sizeof(*w))) == NULL)
		return -1;
	w->cb = cb;
	w->arg = arg;
	w->next = NULL;
	pthread_mutex_lock(&rs->pmu);
	if (!atomic_load(&rs->starting)) {
		pthread_mutex_unlock(&rs->pmu);
		free(w);
		return 1;
	}
	/* Called in the order they came. */
	for (pp = &rs->watchers; *pp != NULL; pp = &(*pp)->next)
		continue;
	*pp = w;
	pthread_mutex_unlock(&rs->pmu);
	return 0;
}

void
repos_progress(struct repos *rs, size_t i, struct repos_progress *p)
{
	pthread_mutex_lock(&rs->pmu);
	*p = rs->v[i].prog;
	pthread_mutex_unlock(&rs->pmu);
}

void
repos_on_progress(struct repos *rs, void (*cb)(void *arg), void *arg)
{
	rs->on_progress = cb;
	rs->progress_arg = arg;
}

/* The loop: repo-ready-timeout passed. */
static void
ready_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	reposync_ready(arg, 1);
}

const char *
repos_state_name(enum repos_refresh_state s)
{
	static const char *const names[] = { "never", "refreshing", "ok",
		"failed" };

	return (unsigned)s < 4 ? names[s] : "?";
}

int
repos_state(struct repos *rs, size_t i, struct repos_state *out)
{
	struct repo *r;

	if (rs == NULL || i >= rs->n)
		return -1;
	r = &rs->v[i];
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", r->cr->name);
	out->state = (enum repos_refresh_state)atomic_load(&r->state);
	out->last_end = atomic_load(&r->last_end);
	out->last_ok = atomic_load(&r->last_refresh);
	out->next = atomic_load(&r->next_refresh);
	out->open_until = atomic_load(&r->open_until);
	memcpy(out->key, r->key, sizeof(out->key));
	pthread_mutex_lock(&rs->mu);
	snprintf(out->why, sizeof(out->why), "%s", r->last_why);
	pthread_mutex_unlock(&rs->mu);
	return 0;
}

static void
metrics_cb(FILE *fp, void *arg)
{
	struct repos *rs = arg;
	struct index_reader *rd;
	struct repoidx_state st;
	static const struct {
		const char *name, *help;
		size_t off;
	} counters[] = {
		{ "dbgmirror_repo_refreshes_total",
		    "Refreshes of a repository's metadata that succeeded.",
		    offsetof(struct repo, refreshes) },
		{ "dbgmirror_repo_refresh_failures_total",
		    "Refreshes that failed (transfer, signature, checksum, "
		    "parse).",
		    offsetof(struct repo, refresh_failures) },
		{ "dbgmirror_repo_refreshes_unchanged_total",
		    "Refreshes that found the signed metadata of the index's "
		    "generation again: nothing parsed, nothing rewritten.",
		    offsetof(struct repo, refreshes_unchanged) },
		{ "dbgmirror_repo_downloads_total",
		    "Packages downloaded, checked and indexed.",
		    offsetof(struct repo, downloads) },
		{ "dbgmirror_repo_download_failures_total",
		    "Package downloads that failed.",
		    offsetof(struct repo, download_failures) },
		{ "dbgmirror_repo_timeouts_total",
		    "Package downloads that failed for a deadline.",
		    offsetof(struct repo, timeouts) },
		{ "dbgmirror_repo_http_errors_total",
		    "Package downloads answered with an HTTP error.",
		    offsetof(struct repo, http_errors) },
		{ "dbgmirror_repo_checksum_errors_total",
		    "Packages whose size or SHA256 differed from the index.",
		    offsetof(struct repo, checksum_errors) },
		{ "dbgmirror_repo_members_revoked_total",
		    "Members whose bytes went out as their package downloaded "
		    "(each with the build-id asked for, past the ELF check), "
		    "not kept: the package then failed its download or "
		    "checksum.",
		    offsetof(struct repo, members_revoked) },
	};
	struct dl *dl;
	size_t c, i, waiting = 0;

	pthread_mutex_lock(&rs->mu);
	for (dl = rs->queue; dl != NULL; dl = dl->next)
		waiting++;
	pthread_mutex_unlock(&rs->mu);
	fprintf(fp,
	    "# HELP dbgmirror_repo_downloads_running Package downloads "
	    "under way (at most repo-downloads).\n"
	    "# TYPE dbgmirror_repo_downloads_running gauge\n"
	    "dbgmirror_repo_downloads_running %u\n"
	    "# HELP dbgmirror_repo_downloads_waiting Package downloads "
	    "waiting for one of those to end.\n"
	    "# TYPE dbgmirror_repo_downloads_waiting gauge\n"
	    "dbgmirror_repo_downloads_waiting %zu\n",
	    atomic_load(&rs->active), waiting);
	for (c = 0; c < sizeof(counters) / sizeof(counters[0]); c++) {
		fprintf(fp, "# HELP %s %s\n# TYPE %s counter\n",
		    counters[c].name, counters[c].help, counters[c].name);
		for (i = 0; i < rs->n; i++)
			fprintf(fp, "%s{%s} %llu\n", counters[c].name,
			    rs->v[i].label,
			    (unsigned long long)atomic_load(
				(atomic_uint_fast64_t *)((char *)&rs->v[i] +
				    counters[c].off)));
	}
	fprintf(fp,
	    "# HELP dbgmirror_repo_breaker_state A repository's breaker: 1 "
	    "for the state it is in (open: its packages are skipped after "
	    "failed downloads), 0 for the other.\n"
	    "# TYPE dbgmirror_repo_breaker_state gauge\n");
	for (i = 0; i < rs->n; i++) {
		int open = atomic_load(&rs->v[i].open_until) > clock_now();

		fprintf(fp,
		    "dbgmirror_repo_breaker_state{%s,state=\"closed\"} %d\n"
		    "dbgmirror_repo_breaker_state{%s,state=\"open\"} %d\n",
		    rs->v[i].label, !open, rs->v[i].label, open);
	}
	fprintf(fp,
	    "# HELP dbgmirror_repo_refresh_state A repository's metadata: 1 "
	    "for the state it is in (never refreshed yet, refreshing, the "
	    "last refresh ok or failed), 0 for the others.\n"
	    "# TYPE dbgmirror_repo_refresh_state gauge\n");
	for (i = 0; i < rs->n; i++) {
		int now = atomic_load(&rs->v[i].state), k;

		for (k = REPOS_NEVER; k <= REPOS_FAILED; k++)
			fprintf(fp,
			    "dbgmirror_repo_refresh_state{%s,state=\"%s\"} "
			    "%d\n",
			    rs->v[i].label, repos_state_name(k), k == now);
	}
	fprintf(fp,
	    "# HELP dbgmirror_repo_last_refresh_time_seconds When the last "
	    "refresh of a repository that succeeded ended, since the Unix "
	    "epoch; 0: none yet.\n"
	    "# TYPE dbgmirror_repo_last_refresh_time_seconds gauge\n");
	for (i = 0; i < rs->n; i++)
		fprintf(fp,
		    "dbgmirror_repo_last_refresh_time_seconds{%s} %lld\n",
		    rs->v[i].label,
		    (long long)atomic_load(&rs->v[i].last_refresh));
	if ((rd = index_reader_new(rs->d.idx)) == NULL)
		return;
	if (index_reader_begin(rd) == 0) {
		fprintf(fp,
		    "# HELP dbgmirror_repo_ids Build-ids a repository's "
		    "index maps to packages.\n"
		    "# TYPE dbgmirror_repo_ids gauge\n");
		for (i = 0; i < rs->n; i++)
			if (repoidx_state(rd, rs->v[i].key, &st) == 0)
				fprintf(fp, "dbgmirror_repo_ids{%s} %llu\n",
				    rs->v[i].label, (unsigned long long)st.ids);
		fprintf(fp,
		    "# HELP dbgmirror_repo_generation The generation of a "
		    "repository's index (0: none yet); a refresh that "
		    "changes it makes a new one.\n"
		    "# TYPE dbgmirror_repo_generation gauge\n");
		for (i = 0; i < rs->n; i++)
			if (repoidx_state(rd, rs->v[i].key, &st) == 0)
				fprintf(fp,
				    "dbgmirror_repo_generation{%s} %lu\n",
				    rs->v[i].label, (unsigned long)st.gen);
		index_reader_end(rd);
	}
	index_reader_free(rd);
}

/* repo-redirects' words are the redirect policy's modes. */
_Static_assert((int)CONFIG_REDIRECTS_NONE == (int)REDIRECT_NONE &&
	(int)CONFIG_REDIRECTS_SAME_HOST == (int)REDIRECT_SAME_HOST &&
	(int)CONFIG_REDIRECTS_ANY == (int)REDIRECT_ANY,
    "config_redirects and redirect_mode agree");

struct repos *
repos_new(const struct repos_deps *d, char *err, size_t errlen)
{
	const struct config *cfg = d->cfg;
	struct repos *rs;
	char ident[CONFIG_REPO_TEXT + 64], hex[2 * REPOIDX_KEY_LEN + 1];
	const char *why;
	struct timeval tv;
	size_t i;

	if ((rs = calloc(1, sizeof(*rs))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	rs->d = *d;
	pthread_mutex_init(&rs->mu, NULL);
	pthread_mutex_init(&rs->pmu, NULL);
	rs->queue_tail = &rs->queue;
	if (cfg->repos.n == 0)
		return rs;
	if ((rs->v = calloc(cfg->repos.n, sizeof(*rs->v))) == NULL)
		goto nomem;
	snprintf(rs->pkgdir, sizeof(rs->pkgdir), "%s/repo-packages",
	    cfg->cache_dir);
	snprintf(rs->tmpdir, sizeof(rs->tmpdir), "%s/tmp", cfg->cache_dir);
	if (repo_mkdirs(rs->pkgdir) == -1) {
		snprintf(err, errlen, "%s: %s", rs->pkgdir, strerror(errno));
		repos_free(rs);
		return NULL;
	}
	for (i = 0; i < cfg->repos.n; i++) {
		struct repo *r = &rs->v[i];

		if ((r->cr = malloc(sizeof(*r->cr))) == NULL)
			goto nomem;
		rs->n++;
		if (config_repo_parse(cfg->repos.v[i], r->cr, &why) == -1) {
			snprintf(err, errlen, "repo %s: %s", cfg->repos.v[i],
			    why);
			repos_free(rs);
			return NULL;
		}
		r->rs = rs;
		r->i = (unsigned)i;
		r->fd = -1;
		r->last_modified = -1;
		r->prog.name = r->cr->name;
		r->prog.doing = "";
		if ((r->retry = event_new(d->base, -1, 0, reposync_retry_cb,
			 r)) == NULL)
			goto nomem;
		repos_ident(r->cr, ident, sizeof(ident));
		repoidx_key(ident, r->key);
		config_url_public(r->cr->url, ident, sizeof(ident));
		snprintf(r->label, sizeof(r->label),
		    "repo=\"%.1100s\",suite=\"%s\"", ident, r->cr->suite);
		buildid_hex(r->key, REPOIDX_KEY_LEN, hex);
		snprintf(r->dir, sizeof(r->dir), "%s/repos/%s", cfg->cache_dir,
		    hex);
		if (repo_mkdirs(r->dir) == -1) {
			snprintf(err, errlen, "%s: %s", r->dir,
			    strerror(errno));
			repos_free(rs);
			return NULL;
		}
	}
	if ((rs->cv = repofetch_loop_new(d->base)) == NULL ||
	    (rs->kick = event_new(d->base, -1, 0, kick_cb, rs)) == NULL ||
	    (rs->timer = event_new(d->base, -1, EV_PERSIST, timer_cb, rs)) ==
		NULL ||
	    (rs->ready_timer = event_new(d->base, -1, 0, ready_timer_cb, rs)) ==
		NULL)
		goto nomem;
	rs->seed = (unsigned)getpid() ^ (unsigned)clock_mono_ns();
	if ((rs->listeners = calloc(cfg->nlisten + 1, sizeof(char *))) == NULL)
		goto nomem;
	for (i = 0; i < cfg->nlisten; i++)
		rs->listeners[i] = cfg->listen[i].text;
	rs->fo = (struct repofetch_opts){
		.redirects = { (enum redirect_mode)cfg->repo_redirects,
		    rs->listeners, cfg->nlisten },
		.proxy = cfg->proxy,
		.ca_file = cfg->ca_file,
		.user_agent =
		    cfg->user_agent != NULL ? cfg->user_agent : "dbgmirror",
		.connect_timeout = cfg->upstream_connect_timeout,
		.stall_timeout = cfg->upstream_stall_timeout,
		.timeout = cfg->upstream_timeout,
		.max_size = META_MAX,
	};
	rs->dlo = rs->fo;
	rs->dlo.max_size = cfg->max_object_size;
	if (cfg->repo_refresh > 0) {
		tv.tv_sec = cfg->repo_refresh;
		tv.tv_usec = 0;
		event_add(rs->timer, &tv);
		next_due(rs);
	}
	metrics_set_extra(metrics_cb, rs);
	/* Starting until the first refreshes end, or repo-ready-timeout. */
	if (cfg->repo_ready_timeout > 0) {
		atomic_store(&rs->starting, 1);
		tv.tv_sec = cfg->repo_ready_timeout;
		tv.tv_usec = 0;
		event_add(rs->ready_timer, &tv);
	}
	/* The first refresh, once the loop runs. */
	repos_refresh(rs);
	return rs;
nomem:
	snprintf(err, errlen, "out of memory");
	repos_free(rs);
	return NULL;
}

void
repos_stop(struct repos *rs)
{
	static const char why[] = "server is shutting down";
	struct dl *dl, *next, *ending = NULL;

	if (rs == NULL)
		return;
	/*
	 * The downloads will not end well: transfers stop and queued ones
	 * end now, their passes read no further and keep nothing; one in a
	 * worker's step ends when that step reports, without the pool.
	 */
	rs->stopping = 1;
	pthread_mutex_lock(&rs->mu);
	for (dl = rs->running; dl != NULL; dl = dl->rnext) {
		if (dl->started && dl->rf == NULL)
			continue;
		dl->enext = ending;
		ending = dl;
	}
	rs->queue = NULL;
	rs->queue_tail = &rs->queue;
	pthread_mutex_unlock(&rs->mu);
	for (dl = rs->running; dl != NULL; dl = dl->rnext) {
		growing_end(dl->g, dl->bytes, -1, why);
		if (rs->d.passes != NULL)
			passes_drop(rs->d.passes, dl->path, why);
	}
	for (dl = ending; dl != NULL; dl = next) {
		next = dl->enext;
		if (dl->rf != NULL) {
			repofetch_cancel(dl->rf);
			dl->rf = NULL;
			close(dl->fd);
			unlink(dl->tmp);
		}
		dl->ok = 0;
		snprintf(dl->why, sizeof(dl->why), "%s", why);
		dl_end(dl);
	}
}

void
repos_free(struct repos *rs)
{
	struct repos_watcher *w;
	struct parked *q;
	size_t i;

	if (rs == NULL)
		return;
	if (rs->n > 0)
		metrics_set_extra(NULL, NULL);
	for (i = 0; i < rs->n; i++) {
		repofetch_cancel(rs->v[i].rf);
		if (rs->v[i].fd != -1)
			close(rs->v[i].fd);
		if (rs->v[i].retry != NULL)
			event_free(rs->v[i].retry);
		free(rs->v[i].cr);
	}
	while ((w = rs->watchers) != NULL) {
		rs->watchers = w->next;
		free(w);
	}
	while ((q = rs->parked) != NULL) {
		rs->parked = q->next;
		free(q);
	}
	if (rs->ready_timer != NULL)
		event_free(rs->ready_timer);
	if (rs->cv != NULL)
		repofetch_loop_free(rs->cv);
	if (rs->kick != NULL)
		event_free(rs->kick);
	if (rs->timer != NULL)
		event_free(rs->timer);
	free(rs->v);
	free(rs->listeners);
	pthread_mutex_destroy(&rs->mu);
	pthread_mutex_destroy(&rs->pmu);
	free(rs);
}
