/*
 * sources/repo.c: remote repositories as a source: finding an id in their
 * index, downloading packages, and members extracted as they download
 * (see sources/repo.h; the refresh is sources/reposync.c).
 *
 * A package download is a flight of its own key, made from the package's
 * SHA-256: requests for any of its ids join it.  At most repo-downloads
 * run at once; the others wait in a queue, oldest first, and start as
 * running ones end (their requests wait with them).  The loop fetches it into
 * a temp file of the package cache (<cache-dir>/repo-packages); a worker
 * checks size and SHA-256, renames it into place, indexes its members
 * (sources/scan.h) and trims the package cache to repo-cache-size, oldest
 * downloads first; only then does the flight end READY.  A failed download
 * ends FAILED, leaves nothing behind, counts against the repository's
 * breaker and is remembered for error-ttl (an error entry under the
 * package's key).
 *
 * Threads: the repositories' state and the transfers belong to the fills'
 * loop; the download queue and the counters are shared (mu, atomics).
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
#include "resolver/produce.h"
#include "resolver/rq.h"
#include "sources/pass.h"
#include "sources/sources.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/pool.h"
#include "sources/scan.h"
#include "daemon/spawn.h"
#include "fetchers/repofetch.h"
#include "indexer/elf.h"
#include "indexer/package.h"
#include "indexer/repometa.h"
#include "indexer/rpmhdr.h"

/*
 * A package as it downloads, shared by the download (the loop writes
 * written and state) and the extractions that read it as it grows
 * (workers wait on cv); freed with its last reference.
 */
struct growing {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t written;
	int complete; /* the transfer: 0 running, 1 every byte in, -1 failed */
	int state; /* 0 downloading, 1 checked and indexed, -1 failed */
	struct stream *waiting; /* extractions done, for the verdict; loop */
	int refs;
	char why[256];
	char tmp[PATH_MAX], path[PATH_MAX];
};

static struct growing *
growing_new(void)
{
	struct growing *g;

	if ((g = calloc(1, sizeof(*g))) == NULL)
		return NULL;
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
	g->refs = 1;
	return g;
}

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

/* Tell the readers of g: more bytes, or the end. */
static void
growing_set(struct growing *g, uint64_t written, int complete, int state,
    const char *why)
{
	pthread_mutex_lock(&g->mu);
	g->written = written;
	g->complete = complete;
	g->state = state;
	if (why != NULL)
		snprintf(g->why, sizeof(g->why), "%s", why);
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

/* Where an id was found. */
struct repos_hit {
	unsigned repo;
	char file[REPOIDX_FILE_MAX + 1];
	uint64_t size;
	uint8_t sha256[32];
	struct cache_key key; /* of the package's download */
};

/* What a member fill (prod.data) of a repository's package wants. */
struct repo_want {
	struct repos_hit hit;
	struct prod *p;
	struct repo_want *next; /* in its download's after list */
};

/* A package download. */
struct dl {
	struct growing *g; /* its bytes, for extractions while it runs */
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
	int started; /* holds one of the repo-downloads slots; under mu */
	/* Extractions asked for before it started, not yet submitted; mu. */
	struct stream *pending;
	/* Fills that go on to the package step once it is in; mu. */
	struct repo_want *after;
	int ok, timeout, checksum;
	char why[256];
};

static void stream_submit(struct stream *st);
static void streams_fail(struct stream *st, const char *why);
static void stream_verdicts(struct growing *g);

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
	struct index_batch *b;
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
	for (left = t.n; total > atomic_load(&rs->cache_size) && left > 1;
	     left--) {
		for (i = SIZE_MAX, j = 0; j < t.n; j++)
			if (!t.v[j].evicted &&
			    (i == SIZE_MAX ||
				t.v[j].mtime_ns < t.v[i].mtime_ns))
				i = j;
		t.v[i].evicted = 1;
		total -= t.v[i].size;
		if (unlink(t.v[i].path) == 0) {
			any = 1;
			log_info("repo package cache: %s evicted", t.v[i].path);
			if ((slash = strrchr(t.v[i].path, '/')) != NULL) {
				*slash = '\0';
				rmdir(t.v[i].path);
				*slash = '/';
			}
		}
	}
	if (any &&
	    (b = index_batch_begin(rs->d.idx, err, sizeof(err))) != NULL) {
		/* A failed prune makes the commit fail: nothing half done. */
		pkgidx_prune(b, trim_keep, &t, &removed);
		if (index_batch_commit(b, err, sizeof(err)) == -1)
			log_warnx("%s: %s", __func__, err);
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
		atomic_load(&dl->rs->min_free), err, sizeof(err)) == 0;
	if (!dl->ok)
		snprintf(dl->why, sizeof(dl->why), "%.150s: %.90s",
		    dl->hit.file, err);
}

/* Worker: check the download, put it in place and index it. */
static void
dl_work(void *arg)
{
	struct dl *dl = arg;
	struct repos *rs = dl->rs;
	uint8_t sha[32];
	uint64_t size;
	char err[256], dir[PATH_MAX], *slash;

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
	if (scan_package(rs->d.idx, dl->path, rs->tmpdir,
		atomic_load(&rs->min_free), err, sizeof(err)) == -1) {
		snprintf(dl->why, sizeof(dl->why), "%.150s: %.90s",
		    dl->hit.file, err);
		return;
	}
	trim_cache(rs);
	dl->ok = 1;
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

/* The loop: the end of a download. */
static void
dl_end(struct dl *dl)
{
	struct repo *r = dl->r;
	struct repo_want *after, *anext;
	struct stream *st;
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
	st = dl->pending; /* a download ended before it started */
	dl->pending = NULL;
	after = dl->after;
	dl->after = NULL;
	pthread_mutex_unlock(&dl->rs->mu);
	streams_fail(st, dl->why);
	/* In the package cache now: the package step extracts them. */
	for (; after != NULL; after = anext) {
		anext = after->next;
		if (dl->ok)
			produce_absent(after->p);
		else
			produce_end(after->p, FLIGHT_FAILED, dl->why);
	}
	if (dl->started) {
		/* Its slot to the oldest download waiting. */
		atomic_fetch_sub(&dl->rs->active, 1);
		event_active(dl->rs->kick, EV_READ, 1);
	}
	if (dl->g != NULL) {
		growing_set(dl->g, dl->bytes, dl->ok ? 1 : -1, dl->ok ? 1 : -1,
		    dl->why);
		stream_verdicts(dl->g);
		growing_unref(dl->g);
	}
	free(dl);
}

static void
dl_done(void *arg)
{
	struct dl *dl = arg;

	if (!dl->ok &&
	    pool_submit(dl->rs->d.pool, dl_fail_work, dl->rs->d.inbox,
		(pool_fn)dl_end, dl) == 0)
		return;
	dl_end(dl);
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
	/* Every byte is in: extractions may read to the end. */
	if (dl->g != NULL)
		growing_set(dl->g, dl->bytes, 1, 0, NULL);
	if (pool_submit_long(dl->rs->d.pool, dl_work, dl->rs->d.inbox, dl_done,
		dl) == -1) {
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
	if (dl->g != NULL)
		growing_set(dl->g, bytes, 0, 0, NULL);
}

/* The loop: start a queued download. */
static void
dl_start(struct dl *dl)
{
	char url[2 * REPOIDX_FILE_MAX + 64];

	/* A download that ended just before this request joined it. */
	if (access(dl->path, F_OK) == 0) {
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
	if (dl->g != NULL) {
		pthread_mutex_lock(&dl->g->mu);
		snprintf(dl->g->tmp, sizeof(dl->g->tmp), "%s", dl->tmp);
		pthread_cond_broadcast(&dl->g->cv);
		pthread_mutex_unlock(&dl->g->mu);
	}
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
	if ((dl = calloc(1, sizeof(*dl))) == NULL) {
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
	if ((dl->g = growing_new()) != NULL)
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
 * moment ago (*retry: seconds left), -1 on error.  *open is 1 + the first
 * repository passed by that holds it (its breaker open), else 0.
 */
static int
repos_find(struct repos *rs, struct index_reader *rd, const struct buildid *id,
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

/* ------------------------------------------- extraction while downloading */

/*
 * A member extracted from a package while it downloads: a long job reads
 * the growing temp file through pkg_extract_watch (its pkg_limits.grow
 * waits for the download), writing the member into its fill (struct prod)
 * through the producer core, so that readers stream it as it comes out,
 * once its opening bytes name the right build-id.  The last byte waits for
 * the verdict on the whole package (checked and indexed: growing state 1),
 * then the member's final check and publishing (produce_verify); a package
 * that fails leaves the readers cut short and nothing published.
 */
struct stream {
	struct repos *rs;
	struct prod *p;
	struct growing *g;
	char member[PATH_MAX];
	int rc; /* pkg_extract_watch's */
	char err[256];
	struct stream *next; /* in its growing's waiting list */
};

/* pkg_limits.grow: wait for more of the package, or its end. */
static int
stream_grow(uint64_t have, void *arg)
{
	struct stream *st = arg;
	struct growing *g = st->g;
	int rc;

	pthread_mutex_lock(&g->mu);
	while (g->written <= have && g->complete == 0 && g->state == 0)
		pthread_cond_wait(&g->cv, &g->mu);
	rc = g->written > have ? 1 : g->complete == 1 || g->state == 1 ? 0 : -1;
	pthread_mutex_unlock(&g->mu);
	return rc;
}

/* The member's size, from its header: readers learn it after the check. */
static void
stream_size(uint64_t size, void *arg)
{
	struct stream *st = arg;

	st->p->length = size;
	flight_announce(st->p->f, size);
}

static void
stream_progress(uint64_t end, void *arg)
{
	struct stream *st = arg;

	produce_progress(st->p, end);
}

/* The package of st, open: the temp file while it downloads, else its place. */
static int
stream_open(struct stream *st)
{
	struct growing *g = st->g;
	int fd = -1;

	pthread_mutex_lock(&g->mu);
	while (g->tmp[0] == '\0' && g->state == 0)
		pthread_cond_wait(&g->cv, &g->mu);
	if (g->state == 0)
		fd = open(g->tmp, O_RDONLY | O_CLOEXEC);
	/* Renamed into place meanwhile: wait for the end, then there. */
	while (fd == -1 && g->state == 0)
		pthread_cond_wait(&g->cv, &g->mu);
	if (fd == -1 && g->state == 1)
		fd = open(g->path, O_RDONLY | O_CLOEXEC);
	pthread_mutex_unlock(&g->mu);
	return fd;
}

/* Worker: extract st's member as the package comes, then the verdict. */
static void
stream_work(void *arg)
{
	struct stream *st = arg;
	struct prod *p = st->p;
	struct growing *g = st->g;
	struct pkg_limits lim = pkg_default_limits;
	struct pkg_watch watch = { stream_progress, NULL, NULL, st,
		stream_size };
	char pkg[64], sig[PASS_RPM_SIG_MAX];
	char err[256], file[PATH_MAX];
	const char *base = strrchr(g->path, '/');
	struct rpmhdr *rh = NULL;
	struct cache_meta meta;
	int pfd, rc;

	st->rc = -1;
	if ((pfd = stream_open(st)) == -1) {
		snprintf(st->err, sizeof(st->err), "%s",
		    g->why[0] != '\0' ? g->why : "package unavailable");
		return;
	}
	if (produce_open(p) == -1) {
		close(pfd);
		snprintf(st->err, sizeof(st->err), "%s", p->why);
		return;
	}
	/*
	 * An rpm's header, which holds its files' IMA signatures, comes
	 * before its payload: waiting for it costs the member nothing, and
	 * the first answer is signed like those from the package cache.
	 */
	if (rpmhdr_open_grow(pfd, stream_grow, st, &rh, err, sizeof(err)) == -1)
		log_info("repo: %s: %s", g->path, err);
	/* The file a .build-id link names, as the package cache shows it. */
	if (rh == NULL ||
	    rpmhdr_resolve(rh, st->member, file, sizeof(file)) == -1)
		snprintf(file, sizeof(file), "%s", st->member);
	pass_member_meta(rh, base != NULL ? base + 1 : g->path, file, sig,
	    &meta);
	rc = produce_head(p, UINT64_MAX, clock_now(), &meta, g->path);
	rpmhdr_free(rh);
	if (rc == -1) {
		close(pfd);
		snprintf(st->err, sizeof(st->err), "out of memory");
		return;
	}
	snprintf(pkg, sizeof(pkg), "/proc/self/fd/%d", pfd);
	lim.min_free_pct = atomic_load(&st->rs->min_free);
	lim.grow = stream_grow;
	lim.grow_arg = st;
	st->rc = pkg_extract_watch(pkg, st->member, p->fd, &lim, &watch,
	    st->err, sizeof(st->err));
	close(pfd);
}

/* Worker: the package's verdict is in; the member's, then publishing. */
static void
stream_verdict_work(void *arg)
{
	struct stream *st = arg;
	struct prod *p = st->p;
	struct growing *g = st->g;
	const char *base = strrchr(g->path, '/');

	if (g->state != 1) {
		p->res = UPSTREAM_FAILED;
		snprintf(p->why, sizeof(p->why), "%s", g->why);
	} else if (st->rc == ELF_NOTFOUND) {
		p->res = UPSTREAM_NOTFOUND;
		snprintf(p->why, sizeof(p->why), "not in its package");
	} else if (st->rc == -1) {
		p->res = UPSTREAM_FAILED;
		snprintf(p->why, sizeof(p->why), "%.120s: %.120s",
		    base != NULL ? base + 1 : g->path, st->err);
	} else {
		p->res = UPSTREAM_OK;
	}
	produce_verify(p);
}

/* The loop: the end of an extraction. */
static void
stream_end(void *arg)
{
	struct stream *st = arg;

	if (!st->p->verified)
		log_warnx("repo: %s: %s", st->member, st->p->why);
	produce_finish(st->p);
	growing_unref(st->g);
	free(st);
}

/* The loop: the verdict of st's package is in (g->state): judge st. */
static void
stream_judge(struct stream *st)
{
	if (pool_submit(st->rs->d.pool, stream_verdict_work, st->rs->d.inbox,
		stream_end, st) == -1) {
		st->p->res = UPSTREAM_FAILED;
		snprintf(st->p->why, sizeof(st->p->why),
		    "server is shutting down");
		stream_end(st);
	}
}

/* The loop: g's package has its verdict: judge the extractions waiting. */
static void
stream_verdicts(struct growing *g)
{
	struct stream *st, *next;

	st = g->waiting;
	g->waiting = NULL;
	for (; st != NULL; st = next) {
		next = st->next;
		stream_judge(st);
	}
}

/*
 * The loop: the extraction is over.  It waits for its package's verdict
 * (dl_end gives it) unless that is in already.
 */
static void
stream_done(void *arg)
{
	struct stream *st = arg;
	int state;

	pthread_mutex_lock(&st->g->mu);
	state = st->g->state;
	pthread_mutex_unlock(&st->g->mu);
	if (state != 0) {
		stream_judge(st);
		return;
	}
	st->next = st->g->waiting;
	st->g->waiting = st;
}

/*
 * Any thread: fill p from its package's download.  A debug file streams
 * out of the package as it comes; anything else goes on to the package
 * step once the package is in the package cache.  A download that ended
 * just now hands p on at once (to the package step, which has the package
 * then, or past it).
 */
static void
repo_produce(struct prod *p)
{
	struct repos *rs = produce_deps(p)->repos;
	struct repo_want *rw = p->data;
	struct stream *st = NULL;
	struct flight_view v;
	struct flight *df;
	struct growing *g;
	struct dl *dl;
	char hex[BUILDID_HEX_MAX], why[256];

	rw->p = p;
	if ((df = repos_join(rs, &rw->hit)) == NULL) {
		produce_end(p, FLIGHT_FAILED, "too many fills in flight");
		return;
	}
	if (p->w.kind == CACHE_DEBUGINFO && produce_deps(p)->bs != NULL &&
	    p->w.id.len >= 2 && (st = calloc(1, sizeof(*st))) != NULL) {
		st->rs = rs;
		st->p = p;
		buildid_format(&p->w.id, hex);
		snprintf(st->member, sizeof(st->member),
		    "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
	}
	pthread_mutex_lock(&rs->mu);
	for (dl = rs->running; dl != NULL && dl->f != df; dl = dl->rnext)
		;
	if (dl == NULL) {
		/* It ended just now: in the package cache, or failed. */
		pthread_mutex_unlock(&rs->mu);
		free(st);
		flight_view(df, &v);
		snprintf(why, sizeof(why), "%s", v.why);
		flight_unref(df);
		if (v.state == FLIGHT_READY)
			produce_absent(p);
		else
			produce_end(p, FLIGHT_FAILED, why);
		return;
	}
	if (st != NULL && (g = dl->g) != NULL) {
		pthread_mutex_lock(&g->mu);
		g->refs++;
		pthread_mutex_unlock(&g->mu);
		st->g = g;
		/*
		 * A download still queued gets its extractions when it
		 * starts: they would hold long workers, which running
		 * downloads need, while they wait.
		 */
		if (!dl->started) {
			st->next = dl->pending;
			dl->pending = st;
			st = NULL;
		}
	} else {
		free(st);
		st = NULL;
		rw->next = dl->after;
		dl->after = rw;
	}
	pthread_mutex_unlock(&rs->mu);
	flight_unref(df); /* the download holds its own */
	if (st != NULL)
		stream_submit(st);
}

/* End the extractions of list st (by ->next), never started, with why. */
static void
streams_fail(struct stream *st, const char *why)
{
	struct stream *next;

	for (; st != NULL; st = next) {
		next = st->next;
		st->p->res = UPSTREAM_FAILED;
		snprintf(st->p->why, sizeof(st->p->why), "%s", why);
		stream_end(st);
	}
}

/* Start the extraction st on a long worker. */
static void
stream_submit(struct stream *st)
{
	if (pool_submit_long(st->rs->d.pool, stream_work, st->rs->d.inbox,
		stream_done, st) == -1) {
		st->p->res = UPSTREAM_FAILED;
		snprintf(st->p->why, sizeof(st->p->why),
		    "server is shutting down");
		stream_end(st);
	}
}

/* ------------------------------------------------------------- source */

/* pkgidx_find: any member will do. */
static int
member_cb(const struct pkg_rec *r, void *arg)
{
	return 1;
}

/*
 * For an upload's judgement (resolve_client.judge) that no repository
 * gives the id: the first that could not say (rq_unasked).  While their
 * first refreshes run, or one was never indexed, an id none maps may be
 * one it is about to bring; open (repos_find's) holds it but cannot
 * download.
 */
static void
repos_unasked(struct repos *rs, struct rq *rq, size_t open)
{
	struct repoidx_state st;
	char text[256];
	size_t i, n = rs->n;

	if (open > 0) {
		snprintf(text, sizeof(text),
		    "repository %.180s: its downloads are failing",
		    rs->v[open - 1].cr->name);
		rq_unasked(rq, text);
		return;
	}
	if (repos_starting(rs)) {
		rq_unasked(rq,
		    "repositories: their first refresh has not ended");
		return;
	}
	for (i = 0; i < n; i++) {
		if (!atomic_load(&rs->v[i].live) ||
		    (repoidx_state(rq->th->rd, rs->v[i].key, &st) == 0 &&
			st.gen != 0))
			continue;
		snprintf(text, sizeof(text),
		    "repository %.180s: not indexed yet", rs->v[i].cr->name);
		rq_unasked(rq, text);
		return;
	}
}

/*
 * The request side: a debuginfo or executable a repository's index maps to
 * a package not in the package cache yet (one that is, or a local package
 * with the member, is the package step's).
 */
static enum src_result
repo_lookup(struct rq *rq)
{
	const struct resolve_deps *d = rq->d;
	struct repos *rs = d->repos;
	enum route_endpoint ep = rq->rt->endpoint;
	struct repo_want *rw;
	struct prod_what w;
	unsigned retry = 0;
	size_t open;
	int rc;

	if (rs == NULL || repos_count(rs) == 0 || d->prod == NULL ||
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
	    &rw->hit, &retry, &open);
	if (rc != 1)
		free(rw);
	if (rc == 0 && rq->cl.judge)
		repos_unasked(rs, rq, open);
	if (rc == 0)
		return SRC_ABSENT;
	if (rc == -1)
		return rq_fail(rq, "index lookup failed");
	if (rc == 2)
		return rq_outcome(rq, ANSWER_REPO_FAILING, NULL, retry, NULL);
	rq_what(rq, &w);
	w.limit = 0;
	return rq_produce(rq, &w, rw);
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
	struct stream *st = NULL, *next;
	struct dl *dl;
	size_t i;
	int asked;

	/* Oldest first, while fewer than repo-downloads run; dl_end kicks. */
	while (atomic_load(&rs->active) < rs->d.cfg->repo_downloads) {
		pthread_mutex_lock(&rs->mu);
		if ((dl = rs->queue) != NULL) {
			if ((rs->queue = dl->next) == NULL)
				rs->queue_tail = &rs->queue;
			dl->started = 1;
			st = dl->pending;
			dl->pending = NULL;
		}
		pthread_mutex_unlock(&rs->mu);
		if (dl == NULL)
			break;
		atomic_fetch_add(&rs->active, 1);
		for (; st != NULL; st = next) {
			next = st->next;
			stream_submit(st);
		}
		dl_start(dl);
	}
	asked = atomic_exchange(&rs->refresh_asked, 0);
	for (i = 0; i < rs->n; i++) {
		if (!atomic_load(&rs->v[i].live) || !(asked || rs->v[i].due))
			continue;
		rs->v[i].due = 0;
		reposync_start(&rs->v[i]);
	}
}

/* The periodic refresh is next due repo-refresh seconds from now. */
static void
next_due(struct repos *rs)
{
	int64_t next = rs->d.cfg->repo_refresh > 0
	    ? clock_now() + (int64_t)rs->d.cfg->repo_refresh
	    : 0;
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
		if (atomic_load(&rs->v[i].live))
			reposync_start(&rs->v[i]);
}

void
repos_refresh(struct repos *rs)
{
	if (repos_count(rs) == 0)
		return;
	atomic_store(&rs->refresh_asked, 1);
	event_active(rs->kick, EV_READ, 1);
}

size_t
repos_count(const struct repos *rs)
{
	size_t i, n, live = 0;

	if (rs == NULL)
		return 0;
	n = rs->n;
	for (i = 0; i < n; i++)
		live += atomic_load(&rs->v[i].live) != 0;
	return live;
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
	struct repo *r = NULL;
	size_t k, n;

	if (rs == NULL)
		return -1;
	/* The ith of those configured now. */
	n = rs->n;
	for (k = 0; k < n; k++)
		if (atomic_load(&rs->v[k].live) && i-- == 0) {
			r = &rs->v[k];
			break;
		}
	if (r == NULL)
		return -1;
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
	};
	struct dl *dl;
	size_t c, i, n = rs->n, waiting = 0;

	if (repos_count(rs) == 0)
		return;
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
		for (i = 0; i < n; i++)
			if (atomic_load(&rs->v[i].live))
				fprintf(fp, "%s{%s} %llu\n", counters[c].name,
				    rs->v[i].label,
				    (unsigned long long)atomic_load(
					(atomic_uint_fast64_t *)((char *)&rs
								     ->v[i] +
					    counters[c].off)));
	}
	fprintf(fp,
	    "# HELP dbgmirror_repo_breaker_state A repository's breaker: 1 "
	    "for the state it is in (open: its packages are skipped after "
	    "failed downloads), 0 for the other.\n"
	    "# TYPE dbgmirror_repo_breaker_state gauge\n");
	for (i = 0; i < n; i++) {
		int open = atomic_load(&rs->v[i].open_until) > clock_now();

		if (!atomic_load(&rs->v[i].live))
			continue;
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
	for (i = 0; i < n; i++) {
		int now = atomic_load(&rs->v[i].state), k;

		if (!atomic_load(&rs->v[i].live))
			continue;
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
	for (i = 0; i < n; i++)
		if (atomic_load(&rs->v[i].live))
			fprintf(fp,
			    "dbgmirror_repo_last_refresh_time_seconds{%s} "
			    "%lld\n",
			    rs->v[i].label,
			    (long long)atomic_load(&rs->v[i].last_refresh));
	if ((rd = index_reader_new(rs->d.idx)) == NULL)
		return;
	if (index_reader_begin(rd) == 0) {
		fprintf(fp,
		    "# HELP dbgmirror_repo_ids Build-ids a repository's "
		    "index maps to packages.\n"
		    "# TYPE dbgmirror_repo_ids gauge\n");
		for (i = 0; i < n; i++)
			if (atomic_load(&rs->v[i].live) &&
			    repoidx_state(rd, rs->v[i].key, &st) == 0)
				fprintf(fp, "dbgmirror_repo_ids{%s} %llu\n",
				    rs->v[i].label, (unsigned long long)st.ids);
		fprintf(fp,
		    "# HELP dbgmirror_repo_generation The generation of a "
		    "repository's index (0: none yet); a refresh that "
		    "changes it makes a new one.\n"
		    "# TYPE dbgmirror_repo_generation gauge\n");
		for (i = 0; i < n; i++)
			if (atomic_load(&rs->v[i].live) &&
			    repoidx_state(rd, rs->v[i].key, &st) == 0)
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

/* Repositories a reload may add beyond those of the start (REPOS_SPARE). */
#define REPOS_SPARE 32

/*
 * Make slot rs->n for repo line line (which it copies), not live yet:
 * 0, or -1 with err.
 */
static int
repo_slot(struct repos *rs, const char *line, char *err, size_t errlen)
{
	struct repo *r = &rs->v[rs->n];
	char ident[CONFIG_REPO_TEXT + 64], hex[2 * REPOIDX_KEY_LEN + 1];
	const char *why;

	if ((r->line = strdup(line)) == NULL ||
	    (r->cr = malloc(sizeof(*r->cr))) == NULL ||
	    (r->retry = event_new(rs->d.base, -1, 0, reposync_retry_cb, r)) ==
		NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (config_repo_parse(line, r->cr, &why) == -1) {
		snprintf(err, errlen, "repo %s: %s", line, why);
		goto fail;
	}
	r->rs = rs;
	r->i = (unsigned)rs->n;
	r->fd = -1;
	r->last_modified = -1;
	r->prog.name = r->cr->name;
	r->prog.doing = "";
	repos_ident(r->cr, ident, sizeof(ident));
	repoidx_key(ident, r->key);
	config_url_public(r->cr->url, ident, sizeof(ident));
	snprintf(r->label, sizeof(r->label), "repo=\"%.1100s\",suite=\"%s\"",
	    ident, r->cr->suite);
	buildid_hex(r->key, REPOIDX_KEY_LEN, hex);
	snprintf(r->dir, sizeof(r->dir), "%s/repos/%s", rs->d.cfg->cache_dir,
	    hex);
	if (repo_mkdirs(r->dir) == -1) {
		snprintf(err, errlen, "%s: %s", r->dir, strerror(errno));
		goto fail;
	}
	rs->n++; /* published: the slot is whole */
	return 0;
fail:
	if (r->retry != NULL)
		event_free(r->retry);
	free(r->cr);
	free(r->line);
	memset(r, 0, sizeof(*r));
	return -1;
}

/* The refresh timer, every repo-refresh seconds of the loop's cfg. */
static void
timer_set(struct repos *rs)
{
	struct timeval tv = { (time_t)rs->d.cfg->repo_refresh, 0 };

	event_del(rs->timer);
	if (rs->d.cfg->repo_refresh > 0)
		event_add(rs->timer, &tv);
	next_due(rs);
}

int
repos_apply(struct repos *rs, const struct config *cfg,
    struct repos_changes *ch, char *err, size_t errlen)
{
	const struct config *was = rs->d.cfg;
	size_t i, k, n = rs->n;
	int rc = 0;

	memset(ch, 0, sizeof(*ch));
	rs->d.cfg = cfg;
	atomic_store(&rs->cache_size, cfg->repo_cache_size);
	atomic_store(&rs->min_free, cfg->min_free_disk);
	atomic_store(&rs->error_ttl, cfg->error_ttl);
	rs->fo.redirects.mode = (enum redirect_mode)cfg->repo_redirects;
	rs->fo.proxy = cfg->proxy;
	rs->fo.ca_file = cfg->ca_file;
	rs->fo.user_agent =
	    cfg->user_agent != NULL ? cfg->user_agent : "dbgmirror";
	rs->fo.connect_timeout = cfg->upstream_connect_timeout;
	rs->fo.stall_timeout = cfg->upstream_stall_timeout;
	rs->fo.timeout = cfg->upstream_timeout;
	rs->fo.max_size = META_MAX;
	rs->dlo = rs->fo;
	rs->dlo.max_size = cfg->max_object_size;
	/* Lines no longer there: their slots are looked up no more. */
	for (i = 0; i < n; i++) {
		struct repo *r = &rs->v[i];

		for (k = 0; k < cfg->repos.n; k++)
			if (strcmp(cfg->repos.v[k], r->line) == 0)
				break;
		if (k < cfg->repos.n || !atomic_load(&r->live))
			continue;
		atomic_store(&r->live, 0);
		reposync_stop(r);
		log_info("repo %s: removed from the configuration",
		    r->cr->name);
		ch->removed++;
	}
	/* Each line: its slot, taken back, or a new one. */
	for (k = 0; k < cfg->repos.n; k++) {
		for (i = 0; i < rs->n; i++)
			if (strcmp(cfg->repos.v[k], rs->v[i].line) == 0)
				break;
		if (i < rs->n && atomic_load(&rs->v[i].live))
			continue;
		if (i == rs->n && rs->n == rs->cap) {
			snprintf(err, errlen,
			    "repo %s: more repositories than this process "
			    "can take (%zu): it needs a restart",
			    cfg->repos.v[k], rs->cap);
			rc = -1;
			continue;
		}
		if (i == rs->n &&
		    repo_slot(rs, cfg->repos.v[k], err, errlen) == -1) {
			rc = -1;
			continue;
		}
		atomic_store(&rs->v[i].live, 1);
		atomic_store(&rs->v[i].state, REPOS_NEVER);
		rs->v[i].due = 1;
		ch->added++;
	}
	if (ch->added > 0)
		event_active(rs->kick, EV_READ, 1);
	if (was == NULL || was->repo_refresh != cfg->repo_refresh)
		timer_set(rs);
	return rc;
}

struct repos *
repos_new(const struct repos_deps *d, char *err, size_t errlen)
{
	const struct config *cfg = d->cfg;
	struct repos_changes ch;
	struct repos *rs;
	struct timeval tv;
	size_t i;

	if ((rs = calloc(1, sizeof(*rs))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	rs->d = *d;
	rs->d.cfg = NULL;
	pthread_mutex_init(&rs->mu, NULL);
	pthread_mutex_init(&rs->pmu, NULL);
	rs->queue_tail = &rs->queue;
	rs->cap = cfg->repos.n + REPOS_SPARE;
	snprintf(rs->pkgdir, sizeof(rs->pkgdir), "%s/repo-packages",
	    cfg->cache_dir);
	snprintf(rs->tmpdir, sizeof(rs->tmpdir), "%s/tmp", cfg->cache_dir);
	if ((rs->v = calloc(rs->cap, sizeof(*rs->v))) == NULL ||
	    (rs->cv = repofetch_loop_new(d->base)) == NULL ||
	    (rs->kick = event_new(d->base, -1, 0, kick_cb, rs)) == NULL ||
	    (rs->timer = event_new(d->base, -1, EV_PERSIST, timer_cb, rs)) ==
		NULL ||
	    (rs->ready_timer = event_new(d->base, -1, 0, ready_timer_cb, rs)) ==
		NULL ||
	    (rs->listeners = calloc(cfg->nlisten + 1, sizeof(char *))) == NULL)
		goto nomem;
	if (repo_mkdirs(rs->pkgdir) == -1) {
		snprintf(err, errlen, "%s: %s", rs->pkgdir, strerror(errno));
		repos_free(rs);
		return NULL;
	}
	rs->seed = (unsigned)getpid() ^ (unsigned)clock_mono_ns();
	/* Listen addresses change only with a restart: these stay. */
	for (i = 0; i < cfg->nlisten; i++)
		rs->listeners[i] = cfg->listen[i].text;
	rs->fo.redirects.listeners = rs->listeners;
	rs->fo.redirects.nlisteners = cfg->nlisten;
	if (repos_apply(rs, cfg, &ch, err, errlen) == -1) {
		repos_free(rs);
		return NULL;
	}
	metrics_set_extra(metrics_cb, rs);
	/* Starting until the first refreshes end, or repo-ready-timeout. */
	if (rs->n > 0 && cfg->repo_ready_timeout > 0) {
		atomic_store(&rs->starting, 1);
		tv.tv_sec = cfg->repo_ready_timeout;
		tv.tv_usec = 0;
		event_add(rs->ready_timer, &tv);
	}
	return rs;
nomem:
	snprintf(err, errlen, "out of memory");
	repos_free(rs);
	return NULL;
}

void
repos_free(struct repos *rs)
{
	struct repos_watcher *w;
	struct dl *dl;
	size_t i;

	if (rs == NULL)
		return;
	metrics_set_extra(NULL, NULL);
	while ((dl = rs->queue) != NULL) {
		rs->queue = dl->next;
		snprintf(dl->why, sizeof(dl->why), "server is shutting down");
		dl_end(dl);
	}
	for (i = 0; i < rs->n; i++) {
		repofetch_cancel(rs->v[i].rf);
		if (rs->v[i].fd != -1)
			close(rs->v[i].fd);
		if (rs->v[i].retry != NULL)
			event_free(rs->v[i].retry);
		free(rs->v[i].cr);
		free(rs->v[i].line);
	}
	while ((w = rs->watchers) != NULL) {
		rs->watchers = w->next;
		free(w);
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
