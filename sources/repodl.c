/*
 * sources/repodl.c: the downloads of remote repositories' packages, and
 * the fills of their members that passes serve while a package downloads
 * (see sources/repo.h; the source's request side is sources/repo.c, the
 * refresh sources/reposync.c).
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
 * downloads first, at background priority (daemon/pool.h) unless fills
 * wait for it; only then does the flight end READY.  Its repo-downloads
 * slot goes to the next download as soon as the checksum passed.  A failed
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
 * Threads: the transfers belong to the fills' loop; the download queue
 * (rs->mu) and a growing package (its mu, its cv for the passes that wait
 * on workers) are shared.  Lock order: the passes' lock, then rs->mu,
 * then a growing package's; none of them is taken inside an index read
 * transaction, nor a transaction opened under one.
 */
#include "sources/repo_int.h"

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <limits.h>
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
	struct dl *inext; /* among rs->held, from dl_start to dl_end; mu */
	int started; /* dl_start ran or will; under mu */
	int slot; /* holds one of the repo-downloads slots: until checked */
	int ok, timeout, checksum;
	char why[256];
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
	int held; /* a download in progress holds it: never evicted */
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
 * The loop: dl's package is held (take 1) from its start, so that no trim
 * evicts it before its own indexing committed (the records of a package
 * that has gone would make its members stale: 404s), until its end (0).
 */
static void
dl_hold(struct dl *dl, int take)
{
	struct dl **pp;

	pthread_mutex_lock(&dl->rs->mu);
	for (pp = &dl->rs->held; *pp != NULL && *pp != dl; pp = &(*pp)->inext)
		;
	if (take && *pp == NULL) {
		dl->inext = dl->rs->held;
		dl->rs->held = dl;
	} else if (!take && *pp != NULL) {
		*pp = dl->inext;
	}
	pthread_mutex_unlock(&dl->rs->mu);
}

/*
 * Worker: trim the package cache to repo-cache-size, oldest downloads
 * first (never the last one), and forget the members of what went.  It
 * stops at a package another download than self holds (self's is indexed
 * by now): another trim goes on once that download has ended (dl_end).
 */
static void
trim_cache(struct repos *rs, const struct dl *self)
{
	struct trim t = { NULL, 0 };
	struct cached *nv;
	struct index_batch *b = NULL;
	size_t cap = 0, i, j, left;
	uint64_t total = 0, removed;
	struct dirent *de, *se;
	struct stat st;
	struct dl *dl;
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
			t.v[t.n].held = 0;
			total += t.v[t.n].size;
			t.n++;
		}
		closedir(sub);
	}
	closedir(dir);
	pthread_mutex_lock(&rs->mu);
	for (i = 0; i < t.n; i++)
		for (dl = rs->held; dl != NULL && !t.v[i].held; dl = dl->inext)
			t.v[i].held =
			    dl != self && strcmp(dl->path, t.v[i].path) == 0;
	pthread_mutex_unlock(&rs->mu);
	for (left = t.n; total > atomic_load(&rs->cache_size) && left > 1;
	     left--) {
		for (i = SIZE_MAX, j = 0; j < t.n; j++)
			if (!t.v[j].evicted &&
			    (i == SIZE_MAX ||
				t.v[j].mtime_ns < t.v[i].mtime_ns))
				i = j;
		/* The oldest is held: a trim once it is let go will see. */
		if (t.v[i].held) {
			atomic_store(&rs->trim_again, 1);
			break;
		}
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

/* Worker: the trim a held package put off (dl_end). */
static void
trim_work(void *arg)
{
	trim_cache(arg, NULL);
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
		atomic_load(&dl->rs->min_free), err, sizeof(err)) == 0;
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
		atomic_load(&rs->min_free), err, sizeof(err)) == -1) {
		snprintf(dl->why, sizeof(dl->why), "%.150s: %.90s",
		    dl->hit.file, err);
		dl->ok = 0;
		return;
	}
	trim_cache(rs, dl);
}

/* Worker: remember a failed download for error-ttl. */
static void
dl_fail_work(void *arg)
{
	struct dl *dl = arg;
	unsigned ttl = atomic_load(&dl->rs->error_ttl);
	char err[256];

	if (ttl > 0 &&
	    neg_put(dl->rs->d.idx, &dl->hit.key, &(struct buildid){ 0 },
		NEG_ERROR, clock_now() + ttl, err, sizeof(err)) == -1)
		log_warnx("%s: %s", __func__, err);
}

/*
 * The loop: dl's slot to the oldest download waiting, once its bytes are
 * in and checked (its indexing is no download: a client's download must
 * not wait for it, nor for its end).
 */
static void
dl_unslot(struct dl *dl)
{
	if (!dl->slot)
		return;
	dl->slot = 0;
	atomic_fetch_sub(&dl->rs->active, 1);
	event_active(dl->rs->kick, EV_READ, 1);
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
	dl_hold(dl, 0);
	if (!dl->rs->stopping && atomic_exchange(&dl->rs->trim_again, 0))
		pool_submit_long(dl->rs->d.pool, trim_work, NULL, NULL, dl->rs);
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
	dl_unslot(dl);
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

/*
 * Any thread: index the checked download, in the background unless fills
 * wait for it (those the passes could not serve).
 */
static void
dl_index(struct dl *dl)
{
	int waited;

	pthread_mutex_lock(&dl->g->mu);
	waited = dl->g->after != NULL;
	pthread_mutex_unlock(&dl->g->mu);
	if (dl->rs->stopping ||
	    (waited ? pool_submit_long : pool_submit_background)(dl->rs->d.pool,
		dl_index_work, dl->rs->d.inbox, dl_done, dl) == -1) {
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
	dl_unslot(dl);
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

	dl_hold(dl, 1);
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

/* In rd's transaction: see repo_int.h. */
int
repo_find(struct repos *rs, struct index_reader *rd, const struct buildid *id,
    int executable, struct repos_hit *hit, unsigned *retry, size_t *open)
{
	static const enum repoidx_kind debuginfo[] = { REPOIDX_DEBUGINFO },
				       exec[] = { REPOIDX_EXECUTABLE,
					       REPOIDX_EXECUTABLE_WEAK };
	const enum repoidx_kind *kinds = executable ? exec : debuginfo;
	size_t nkinds = executable ? 2 : 1, k, i, n = rs->n;
	struct repoidx_pkg p;
	struct neg_entry ne;
	struct buildid pid;
	struct index_file pf;
	char path[PATH_MAX];
	int64_t now = clock_now();
	int rc;

	*open = 0;
	/* Strong kinds in every repository before weak ones in any. */
	for (k = 0; k < nkinds; k++) {
		for (i = 0; i < n; i++) {
			if (!atomic_load(&rs->v[i].live))
				continue;
			rc = repoidx_find(rd, rs->v[i].key, id, kinds[k], &p);
			if (rc == INDEX_NOTFOUND)
				continue;
			if (rc != 0)
				return -1;
			if (atomic_load(&rs->v[i].open_until) > now) {
				if (*open == 0)
					*open = i + 1;
				continue;
			}
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
 * Any thread (repo_int.h): fill p from its package's download.  While it downloads, p
 * joins a pass that reads it as it grows (started when the download
 * starts), by its member's .build-id path; a download that ended just now
 * hands p on at once (to the package step, which has the package then, or
 * past it).
 */
void
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

/* ------------------------------------------------------------- the queue */

void
repo_dl_kick(struct repos *rs)
{
	struct dl *dl;

	/* Oldest first, while fewer than repo-downloads run; dl_unslot kicks. */
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
		dl->slot = 1;
		/*
		 * Its passes begin now, not when asked for: they would hold
		 * long workers, which running downloads need, while they wait.
		 */
		if (rs->d.passes != NULL)
			passes_begin(rs->d.passes, dl->path);
		dl_start(dl);
	}
}

size_t
repo_dl_waiting(struct repos *rs)
{
	struct dl *dl;
	size_t waiting = 0;

	pthread_mutex_lock(&rs->mu);
	for (dl = rs->queue; dl != NULL; dl = dl->next)
		waiting++;
	pthread_mutex_unlock(&rs->mu);
	return waiting;
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
