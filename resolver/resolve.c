/*
 * resolver/resolve.c: one request for an artifact, one state machine.
 *
 * A request (debuginfo, executable, section or source of a build-id) is a
 * record, struct rq, that walks the sources in the order of sources[]
 * below, which is written nowhere else:
 *
 *   STEP_LOCAL     indexed local files: open + fstat on the loop (the
 *                  index's record must still match), or on a worker when
 *                  a record is stale or a section must be cut
 *   STEP_CACHE     the blob store (upstream answers, extracted members);
 *                  for a section, first a cached whole file to cut it from
 *   STEP_PACKAGE   a member of an indexed package: a fill; a section's
 *                  whole file is filled into the cache, then the request
 *                  goes back to STEP_CACHE to cut it
 *   STEP_REPO      a debuginfo a remote repository's index maps to a
 *                  package: a fill that extracts it as the package
 *                  downloads (sources/repo.h); for an executable or a
 *                  section, the request joins the package's download,
 *                  then goes back to STEP_PACKAGE, where the downloaded
 *                  package is indexed
 *   STEP_STORE     the object store shared by a fleet (sources/objstore.h),
 *                  while its breaker is closed: a fill that asks it
 *                  first and, when it has nothing usable, goes on in the
 *                  same flight as the next two steps would (a remembered
 *                  miss, then the upstreams), so one herd costs one store
 *                  lookup and at most one upstream request; for a
 *                  section, first the store alone for a whole file
 *                  (the debuginfo, then the executable), filled into
 *                  the cache to cut the section from (STEP_CACHE)
 *   STEP_NEGATIVE  a remembered miss or failure
 *   STEP_UPSTREAM  the upstream debuginfods: a fill
 *   STEP_END       every source said no: 404
 *
 * Every answer that ends a request not-found (STEP_END, a remembered miss,
 * a fill every upstream said 404 to) is noted for the missing-id report
 * (daemon/misses.h), which only queues it.
 *
 * A new source is one lookup function and one line of that table.  A
 * lookup answers (SRC_ANSWERED), passes (SRC_ABSENT: the next step), or
 * leaves the request waiting (SRC_PENDING) for a worker's job or a fill;
 * the completion resumes the record where it stopped (rq_resume).  The
 * steps that run on the loop one after another share one read transaction
 * of the thread's index reader, so they see one snapshot; it ends before
 * the request waits for anything and before the record is freed.
 *
 * A fill is a flight (cache/flight.h) that resolver/fill.c produces; the
 * request joins it as a waiter, which streams the bytes as they arrive
 * and answers the fill's end.  Its outcome, a published blob or a negative
 * or error entry, is in the index before the waiters are woken, so the
 * answer (a 404's max-age included) reads it there.
 *
 * Records: a request answered at once lives on the caller's stack; one
 * that waits is copied to the heap (rq_keep) and owned by what it waits
 * for: a pool job, then its completion; a waiter, then the end of the
 * exchange (conn_on_end).  Everything runs on the connection's thread but
 * the pool jobs' work functions.
 */
#include "resolver/resolve.h"

#include <sys/stat.h>

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "cache/blobstore.h"
#include "cache/flight.h"
#include "cache/index.h"
#include "cache/negative.h"
#include "cache/pkgindex.h"
#include "conf/config.h"
#include "daemon/clock.h"
#include "resolver/fill.h"
#include "daemon/http.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/misses.h"
#include "daemon/pool.h"
#include "sources/repo.h"
#include "daemon/route.h"
#include "daemon/scan.h"
#include "indexer/elf.h"
#include "indexer/file.h"

/* Files tried per (build-id, kind) on a worker. */
#define CANDIDATES_MAX 8
/*
 * Retry-After of a fill this server could not keep (a full disk): the
 * maintenance job evicts every few seconds.
 */
#define LOCAL_RETRY_AFTER 30
/* Cache-Control max-age of artifacts: a build-id's bytes never change. */
#define HIT_MAX_AGE (7 * 24 * 3600)

enum step {
	STEP_LOCAL,
	STEP_CACHE,
	STEP_PACKAGE,
	STEP_REPO,
	STEP_STORE,
	STEP_NEGATIVE,
	STEP_UPSTREAM,
	STEP_END,
};

enum src {
	SRC_ABSENT, /* not here: the next step */
	SRC_ANSWERED, /* the request has its answer */
	SRC_PENDING, /* a job or a fill will resume the (kept) record */
};

/* A file found for a request, open and checked. */
struct found {
	int fd;
	struct stat st;
	uint64_t offset; /* of the artifact in the file */
	uint64_t size;
	char path[PATH_MAX];
};

struct rq {
	struct conn *c;
	struct resolve_thread *th;
	const struct route *rt; /* the caller's, or own once kept */
	enum step step;
	unsigned filled; /* ELF_KIND_* whole files package fills brought */
	int cut_tried; /* STEP_CACHE: cached whole files had no section */
	int repo_tried; /* STEP_REPO: a download came back for it */
	unsigned store_whole; /* ELF_KIND_* whole files asked of the store */
	int in_txn; /* th->rd's read transaction is ours */
	int kept; /* on the heap */
	/* A worker's outcome. */
	struct found f;
	int status; /* 0 found, 404 absent, else an error to answer */
	const char *why;
	struct route own;
};

static enum src local_lookup(struct rq *rq);
static enum src cache_lookup(struct rq *rq);
static enum src package_lookup(struct rq *rq);
static enum src repo_lookup(struct rq *rq);
static enum src store_lookup(struct rq *rq);
static enum src negative_lookup(struct rq *rq);
static enum src upstream_lookup(struct rq *rq);

/* The order of the sources: the one place it is written. */
static const struct source {
	const char *name;
	enum src (*lookup)(struct rq *rq);
} sources[STEP_END] = {
	[STEP_LOCAL] = { "local", local_lookup },
	[STEP_CACHE] = { "cache", cache_lookup },
	[STEP_PACKAGE] = { "package", package_lookup },
	[STEP_REPO] = { "repo", repo_lookup },
	[STEP_STORE] = { "store", store_lookup },
	[STEP_NEGATIVE] = { "negative", negative_lookup },
	[STEP_UPSTREAM] = { "upstream", upstream_lookup },
};

/* --------------------------------------------------------- the record */

static enum metrics_endpoint
metrics_endpoint_of(enum route_endpoint ep)
{
	switch (ep) {
	case ROUTE_DEBUGINFO:
		return METRICS_EP_DEBUGINFO;
	case ROUTE_EXECUTABLE:
		return METRICS_EP_EXECUTABLE;
	case ROUTE_SECTION:
		return METRICS_EP_SECTION;
	case ROUTE_SOURCE:
		return METRICS_EP_SOURCE;
	default:
		return METRICS_EP_OTHER;
	}
}

static enum cache_kind
cache_kind_of(enum route_endpoint ep)
{
	switch (ep) {
	case ROUTE_EXECUTABLE:
		return CACHE_EXECUTABLE;
	case ROUTE_SECTION:
		return CACHE_SECTION;
	case ROUTE_SOURCE:
		return CACHE_SOURCE;
	default:
		return CACHE_DEBUGINFO;
	}
}

/* The cache key of what rq asks for. */
static void
rq_key(const struct rq *rq, struct cache_key *k)
{
	cache_key_make(k, &rq->rt->id, cache_kind_of(rq->rt->endpoint),
	    rq->rt->arg);
}

/* Open th->rd's read transaction for rq, unless it is: 0, or -1. */
static int
rq_txn(struct rq *rq)
{
	if (rq->in_txn)
		return 0;
	if (rq->th->rd == NULL || index_reader_begin(rq->th->rd) == -1)
		return -1;
	rq->in_txn = 1;
	return 0;
}

static void
rq_txn_end(struct rq *rq)
{
	if (rq->in_txn) {
		index_reader_end(rq->th->rd);
		rq->in_txn = 0;
	}
}

/*
 * The record as it will wait: on the heap, with its own copy of the route;
 * NULL when out of memory.  rq itself must not be used afterwards.
 */
static struct rq *
rq_keep(struct rq *rq)
{
	struct rq *k;

	rq_txn_end(rq);
	if (rq->kept)
		return rq;
	if ((k = malloc(sizeof(*k))) == NULL)
		return NULL;
	*k = *rq;
	k->own = *rq->rt;
	k->rt = &k->own;
	k->kept = 1;
	return k;
}

static void
rq_free(struct rq *rq)
{
	rq_txn_end(rq);
	if (rq->kept)
		free(rq);
}

/* Answer an error; the exchange is over for the record. */
static enum src
rq_error(struct rq *rq, int status, const char *result, const char *why)
{
	rq_txn_end(rq);
	conn_set_result(rq->c, result, "-");
	metrics_request(metrics_endpoint_of(rq->rt->endpoint), METRICS_ERROR);
	conn_send_error(rq->c, status, why);
	return SRC_ANSWERED;
}

/* The request ends not-found: into the missing-id report. */
static void
rq_missed(const struct rq *rq)
{
	const struct request *req = conn_request(rq->c);

	misses_note(rq->th->d->misses, &rq->rt->id,
	    cache_kind_of(rq->rt->endpoint), req->user_agent.p,
	    req->user_agent.n, conn_peer_addr(rq->c));
}

/* Every source said no. */
static void
answer_absent(struct rq *rq)
{
	rq_missed(rq);
	conn_set_result(rq->c, "MISS", "local");
	metrics_request(metrics_endpoint_of(rq->rt->endpoint),
	    METRICS_NOTFOUND);
	conn_send_error(rq->c, 404,
	    rq->rt->endpoint == ROUTE_SECTION
		? "no such section for this build-id"
		: "not found");
}

/* Walk the steps from rq->step until one answers or leaves rq waiting. */
static void
rq_run(struct rq *rq)
{
	for (;;) {
		if (rq->step == STEP_END) {
			rq_txn_end(rq);
			answer_absent(rq);
			rq_free(rq);
			return;
		}
		switch (sources[rq->step].lookup(rq)) {
		case SRC_ABSENT:
			rq->step++;
			break;
		case SRC_ANSWERED:
			rq_free(rq);
			return;
		case SRC_PENDING:
			return;
		}
	}
}

/* A kept record's wait ended with r: go on from there. */
static void
rq_resume(struct rq *rq, enum src r)
{
	switch (r) {
	case SRC_ABSENT:
		rq->step++;
		rq_run(rq);
		break;
	case SRC_ANSWERED:
		rq_free(rq);
		break;
	case SRC_PENDING:
		break;
	}
}

/* Hand rq to a worker: work there, then done on rq's loop. */
static enum src
rq_on_worker(struct rq *rq, pool_fn work, pool_fn done)
{
	struct rq *k;

	if ((k = rq_keep(rq)) == NULL)
		return rq_error(rq, 503, "ERROR", "out of memory");
	conn_wait(k->c);
	if (pool_submit(k->th->d->pool, work, conn_inbox(k->c), done, k) ==
	    -1) {
		rq_error(k, 503, "ERROR", "server is shutting down");
		rq_free(k);
		return SRC_PENDING; /* k is gone; rq must not be freed again */
	}
	return SRC_PENDING;
}

/* ------------------------------------------------------- local files */

static void
found_artifact(const struct found *f, struct artifact *art)
{
	memset(art, 0, sizeof(*art));
	art->size = f->size;
	art->mtime = f->st.st_mtim.tv_sec;
	response_etag(art, (uint64_t)f->st.st_size,
	    (int64_t)f->st.st_mtim.tv_sec * 1000000000 + f->st.st_mtim.tv_nsec,
	    f->offset);
	art->file = f->path;
	art->cache = "HIT";
}

/* Send what rq->f holds: a hit from source src. */
static enum src
send_found(struct rq *rq, const char *src)
{
	struct artifact art;

	found_artifact(&rq->f, &art);
	conn_set_result(rq->c, "HIT", src);
	metrics_request(metrics_endpoint_of(rq->rt->endpoint), METRICS_HIT);
	conn_send_file(rq->c, rq->f.fd, rq->f.offset, &art);
	return SRC_ANSWERED;
}

/* Open path and check it is still the file rec describes. */
static int
open_checked(const char *path, const struct index_file *rec, struct found *f)
{
	int fd;

	if ((fd = file_open_regular(path, &f->st)) == -1)
		return -1;
	if (rec != NULL && !scan_unchanged(rec, &f->st)) {
		close(fd);
		return -1;
	}
	return fd;
}

struct fast {
	struct found *f;
	int stale; /* a record no longer matched its file */
};

static int
fast_try_cb(const struct index_file *rec, void *arg)
{
	struct fast *fa = arg;
	size_t n = strlen(rec->path);

	if (n >= sizeof(fa->f->path))
		return 0;
	if ((fa->f->fd = open_checked(rec->path, rec, fa->f)) == -1) {
		fa->stale = 1;
		return 0;
	}
	memcpy(fa->f->path, rec->path, n + 1);
	fa->f->offset = 0;
	fa->f->size = (uint64_t)fa->f->st.st_size;
	return 1;
}

struct candidate {
	char *path;
	struct index_file rec;
};

struct candidates {
	struct candidate v[CANDIDATES_MAX];
	size_t n;
};

static int
collect_cb(const struct index_file *rec, void *arg)
{
	struct candidates *cs = arg;
	struct candidate *c = &cs->v[cs->n];

	if ((c->path = strdup(rec->path)) == NULL)
		return 1;
	c->rec = *rec;
	c->rec.path = c->path;
	return ++cs->n == CANDIDATES_MAX;
}

/* Bring the index in line with what the file at path now is. */
static void
reindex(struct index *idx, const char *path, int fd, const struct stat *st,
    struct index_file *rec)
{
	struct index_batch *b;
	char err[256];
	int rc;

	if ((b = index_batch_begin(idx, err, sizeof(err))) == NULL) {
		log_warnx("%s: %s", __func__, err);
		return;
	}
	rc = fd == -1 ? ELF_NOTFOUND
		      : scan_identify(fd, path, st, rec, err, sizeof(err));
	if (rc == 0) {
		index_batch_put_file(b, rec);
		log_info("%s changed since it was indexed: indexed again",
		    path);
	} else {
		index_batch_del_file(b, path);
		rec->kinds = 0;
		log_info("%s is gone or no longer ELF: dropped from the index",
		    path);
	}
	if (index_batch_commit(b, err, sizeof(err)) == -1)
		log_warnx("%s: %s", __func__, err);
}

/*
 * Worker: point rq->f at section rq->rt->arg of the file open at fd, or
 * close fd.  0, ELF_NOTFOUND (no such section), -1 (unreadable).
 */
static int
cut_section(struct rq *rq, int fd, const char *path)
{
	struct elf_section sec;
	char err[256];
	int rc;

	rc = elf_find_section(fd, rq->rt->arg, &sec, err, sizeof(err));
	if (rc != 0) {
		if (rc == -1)
			log_info("cannot cut a section from %s: %s", path, err);
		close(fd);
		return rc;
	}
	rq->f.fd = fd;
	rq->f.offset = sec.offset;
	rq->f.size = sec.size;
	return 0;
}

/*
 * Worker: try the candidates of one kind, re-indexing a file that changed.
 * 0 when rq->f is filled, ELF_NOTFOUND, -1 when a file could not be read.
 */
static int
local_try(struct rq *rq, struct candidates *cs, enum elf_kind kind)
{
	struct index_file rec;
	size_t i;
	int fd, rc, ret = ELF_NOTFOUND;

	for (i = 0; i < cs->n; i++) {
		const char *path = cs->v[i].path;

		fd = open_checked(path, NULL, &rq->f);
		if (fd == -1 || !scan_unchanged(&cs->v[i].rec, &rq->f.st)) {
			reindex(rq->th->d->idx, path, fd, &rq->f.st, &rec);
			if (fd == -1 || !buildid_equal(&rec.id, &rq->rt->id) ||
			    (rec.kinds & kind) == 0) {
				if (fd != -1)
					close(fd);
				continue;
			}
		}
		rq->f.fd = fd;
		rq->f.offset = 0;
		rq->f.size = (uint64_t)rq->f.st.st_size;
		if (rq->rt->endpoint == ROUTE_SECTION &&
		    (rc = cut_section(rq, fd, path)) != 0) {
			if (rc == -1)
				ret = -1;
			continue;
		}
		snprintf(rq->f.path, sizeof(rq->f.path), "%s", path);
		return 0;
	}
	return ret;
}

/* Worker: the local files of rq's build-id, each kind it may come from. */
static void
local_work(void *arg)
{
	struct rq *rq = arg;
	struct index_reader *rd;
	struct candidates cs;
	enum elf_kind kinds[2];
	size_t nk = 0, k, i;
	int rc = ELF_NOTFOUND;

	if (rq->rt->endpoint != ROUTE_EXECUTABLE)
		kinds[nk++] = ELF_KIND_DEBUGINFO;
	if (rq->rt->endpoint != ROUTE_DEBUGINFO)
		kinds[nk++] = ELF_KIND_EXECUTABLE;
	rq->f.fd = -1;
	if ((rd = index_reader_new(rq->th->d->idx)) == NULL) {
		rq->status = 503;
		rq->why = "index unavailable";
		return;
	}
	for (k = 0; k < nk && rc != 0; k++) {
		cs.n = 0;
		if (index_reader_begin(rd) == 0) {
			index_find(rd, &rq->rt->id, kinds[k], collect_cb, &cs);
			index_reader_end(rd);
		}
		rc = local_try(rq, &cs, kinds[k]);
		for (i = 0; i < cs.n; i++)
			free(cs.v[i].path);
	}
	index_reader_free(rd);
	/*
	 * A section that could not be read here may come from elsewhere (an
	 * upstream cuts it), so it is absent like one not found.
	 */
	rq->status = rc == 0 ? 0 : 404;
}

static void
local_done(void *arg)
{
	struct rq *rq = arg;

	if (rq->status == 0)
		rq_resume(rq, send_found(rq, "local"));
	else if (rq->status == 404)
		rq_resume(rq, SRC_ABSENT);
	else
		rq_resume(rq, rq_error(rq, rq->status, "ERROR", rq->why));
}

/*
 * Debuginfo and executables: on the loop, as a static file server would,
 * unless a record no longer matches its file; sections need the ELF
 * section table: on a worker.  Sources are never local files.
 */
static enum src
local_lookup(struct rq *rq)
{
	const struct route *rt = rq->rt;
	struct fast fa = { &rq->f, 0 };
	int rc;

	switch (rt->endpoint) {
	case ROUTE_SOURCE:
		return SRC_ABSENT;
	case ROUTE_SECTION:
		return rq_on_worker(rq, local_work, local_done);
	default:
		break;
	}
	if (rq_txn(rq) == -1)
		return rq_error(rq, 503, "ERROR", "index unavailable");
	rc = index_find(rq->th->rd, &rt->id,
	    rt->endpoint == ROUTE_DEBUGINFO ? ELF_KIND_DEBUGINFO
					    : ELF_KIND_EXECUTABLE,
	    fast_try_cb, &fa);
	if (rc == 1) {
		rq_txn_end(rq);
		return send_found(rq, "local");
	}
	if (fa.stale)
		return rq_on_worker(rq, local_work, local_done);
	if (rc != 0)
		return rq_error(rq, 503, "ERROR", "index lookup failed");
	/* Not a local file: the next steps read the same snapshot. */
	return SRC_ABSENT;
}

/* --------------------------------------------------------------- cache */

/* A cache hit keeps its blob pinned (safe from eviction) while it is sent. */
struct pin {
	struct blobstore *bs;
	struct cache_key key;
};

static void
pin_release(void *arg)
{
	struct pin *p = arg;

	blob_unpin(p->bs, &p->key);
	free(p);
}

/*
 * Worker: a section cut from a cached debuginfo, else a cached
 * executable.  rq->status 0 when rq->f is filled, else 404.
 */
static void
cached_cut_work(void *arg)
{
	static const enum cache_kind kinds[] = { CACHE_DEBUGINFO,
		CACHE_EXECUTABLE };
	struct rq *rq = arg;
	struct blobstore *bs = rq->th->d->bs;
	struct index_reader *rd;
	struct cache_key k;
	struct blob_info bi;
	size_t i;
	int fd, rc;

	rq->status = 404;
	if ((rd = index_reader_new(rq->th->d->idx)) == NULL)
		return;
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		cache_key_make(&k, &rq->rt->id, kinds[i], "");
		if (index_reader_begin(rd) == -1)
			break;
		rc = blob_lookup(rd, &k, &bi);
		index_reader_end(rd);
		if (rc != 0 || (fd = blob_open(bs, &k)) == -1)
			continue;
		if (fstat(fd, &rq->f.st) == -1) {
			close(fd);
			continue;
		}
		if (cut_section(rq, fd, "cached file") != 0)
			continue;
		snprintf(rq->f.path, sizeof(rq->f.path), "/%s/%.*s",
		    cache_kind_name(kinds[i]), (int)sizeof(rq->f.path) / 2,
		    rq->rt->arg);
		rq->status = 0;
		break;
	}
	index_reader_free(rd);
}

static void
cached_cut_done(void *arg)
{
	struct rq *rq = arg;

	if (rq->status == 0) {
		rq_resume(rq, send_found(rq, "cache"));
		return;
	}
	/* No whole file to cut it from: the section's own entry, if any. */
	rq->cut_tried = 1;
	rq_run(rq);
}

/* Send the cached blob of rq's key: SRC_ANSWERED, or SRC_ABSENT. */
static enum src
send_cached(struct rq *rq)
{
	struct blobstore *bs = rq->th->d->bs;
	struct cache_key k;
	struct blob_info bi;
	struct artifact art;
	struct stat sb;
	struct pin *pin;
	int fd;

	rq_key(rq, &k);
	if (blob_lookup(rq->th->rd, &k, &bi) != 0)
		return SRC_ABSENT;
	if ((fd = blob_open(bs, &k)) == -1)
		return SRC_ABSENT;
	if (fstat(fd, &sb) == -1 || (uint64_t)sb.st_size != bi.size ||
	    (pin = malloc(sizeof(*pin))) == NULL) {
		close(fd);
		return SRC_ABSENT;
	}
	pin->bs = bs;
	pin->key = k;
	blob_pin(bs, &k);
	blob_touch(bs, &k, clock_now());
	memset(&art, 0, sizeof(art));
	art.size = bi.size;
	art.mtime = (time_t)bi.mtime;
	response_etag(&art, bi.size, bi.mtime * 1000000000, 0);
	art.extra = bi.headers;
	art.extra_len = bi.headers_len;
	art.cache = "HIT";
	art.max_age = HIT_MAX_AGE;
	conn_set_result(rq->c, "HIT", "cache");
	metrics_request(metrics_endpoint_of(rq->rt->endpoint), METRICS_HIT);
	conn_on_end(rq->c, pin_release, pin);
	/* The head is built before the transaction ends: bi points into it. */
	conn_send_file(rq->c, fd, 0, &art);
	return SRC_ANSWERED;
}

static enum src
cache_lookup(struct rq *rq)
{
	if (rq->th->d->bs == NULL)
		return SRC_ABSENT;
	if (rq->rt->endpoint == ROUTE_SECTION && !rq->cut_tried)
		return rq_on_worker(rq, cached_cut_work, cached_cut_done);
	if (rq_txn(rq) == -1)
		return rq_error(rq, 503, "ERROR", "index unavailable");
	return send_cached(rq);
}

/* ------------------------------------------------------- fills: waiters */

/* A request joined to a flight, before and while it streams. */
struct waiter {
	struct rq *rq; /* kept; freed with the waiter */
	struct flight *f;
	struct event *ev;
	int joined; /* another request started the fill */
	int streaming; /* the head is out */
	int whole; /* a section's whole file: back to STEP_CACHE when in */
	int store_whole; /* ... from the store alone: else back to STEP_STORE */
	/*
	 * Joined once the bytes were verified, while the cache makes them
	 * durable: back to STEP_CACHE when in, so that a request after a
	 * client's last byte is a cache hit, as it always was.
	 */
	int late;
	int repo; /* a package download: back to STEP_PACKAGE when in */
};

static void
waiter_release(void *arg)
{
	struct waiter *w = arg;

	flight_unwatch(w->f, w);
	event_free(w->ev);
	flight_unref(w->f);
	if (w->rq != NULL)
		rq_free(w->rq);
	free(w);
}

static int
waiter_avail(void *arg, uint64_t *n)
{
	struct waiter *w = arg;
	struct flight_view v;

	flight_view(w->f, &v);
	*n = v.sendable;
	return v.state == FLIGHT_STREAMING || v.state == FLIGHT_READY ? 0 : -1;
}

/*
 * What is left of key k's negative or error entry, which a fill writes
 * before it tells its waiters: the max-age of a 404, the Retry-After of a
 * 502 (0 when there is none: nothing is remembered).
 */
static unsigned
entry_ttl_left(struct resolve_thread *th, const struct cache_key *k)
{
	struct neg_entry ne;
	int64_t now = clock_now();
	int rc;

	if (th->rd == NULL || index_reader_begin(th->rd) == -1)
		return 0;
	rc = neg_get(th->rd, k, now, &ne);
	index_reader_end(th->rd);
	return rc == 0 ? (unsigned)(ne.expires - now) : 0;
}

/* Start streaming the flight's answer. */
static void
waiter_stream(struct waiter *w, const struct flight_view *v)
{
	struct rq *rq = w->rq;
	struct conn *c = rq->c;
	enum metrics_endpoint mep = metrics_endpoint_of(rq->rt->endpoint);
	struct artifact art;
	const char *src;
	int fd;

	if ((fd = flight_open(w->f)) == -1) {
		conn_set_result(c, "ERROR", "-");
		metrics_request(mep, METRICS_ERROR);
		conn_send_error(c, 503, "cannot read the fill");
		return;
	}
	memset(&art, 0, sizeof(art));
	art.size = v->length;
	art.mtime = (time_t)flight_mtime(w->f);
	response_etag(&art, v->length, (int64_t)flight_mtime(w->f) * 1000000000,
	    0);
	art.extra = flight_headers(w->f, &art.extra_len);
	art.cache = w->joined ? "JOINED" : "MISS";
	art.max_age = HIT_MAX_AGE;
	src = flight_source(w->f);
	conn_set_result(c, art.cache, src[0] != '\0' ? src : "cache");
	metrics_request(mep, w->joined ? METRICS_JOINED : METRICS_MISS);
	w->streaming = 1;
	conn_send_stream(c, fd, &art, waiter_avail, w);
}

/* Leave the flight and walk the sources again from step. */
static void
waiter_rerun(struct waiter *w, enum step step)
{
	struct rq *rq = w->rq;

	w->rq = NULL;
	conn_on_end(rq->c, NULL, NULL);
	waiter_release(w);
	rq->step = step;
	rq->cut_tried = 0;
	rq_run(rq);
}

/*
 * X-DEBUGINFOD-MAXSIZE and fills.  A fill is shared, so the limit sent
 * upstream is the one of the request that started it (what_of), and a
 * 406 there says only that the file is larger than that limit: it is
 * never remembered (no negative or error entry, no breaker count).  Each
 * waiter then decides for itself: a limit no larger gets the 406, any
 * other (or none) asks again, by a fill of its own or one it joins.  And
 * as soon as a fill knows its size (an upstream's Content-Length, a
 * package member's indexed size), a waiter whose limit is smaller gets
 * its 406 at once while the fill goes on for the others.  No client is
 * ever sent more than its limit.
 */
static int
waiter_over_limit(struct waiter *w, const struct flight_view *v)
{
	uint64_t max = response_maxsize(conn_request(w->rq->c));

	if (max == 0)
		return 0;
	if (v->state == FLIGHT_TOOBIG)
		return max <= v->limit;
	return !w->whole && v->size != UINT64_MAX && v->size > max;
}

/*
 * A package download moved on: once it is in (downloaded, checked,
 * indexed), the package step has the member; a failure is a 502 with
 * the error-ttl the download left.
 */
static void
waiter_check_repo(struct waiter *w, const struct flight_view *v)
{
	struct rq *rq = w->rq;

	switch (v->state) {
	case FLIGHT_READY:
		rq->repo_tried = 1;
		waiter_rerun(w, STEP_PACKAGE);
		return;
	case FLIGHT_WAITING:
	case FLIGHT_STREAMING:
		return;
	default:
		conn_set_result(rq->c, "ERROR", "repo");
		metrics_request(metrics_endpoint_of(rq->rt->endpoint),
		    METRICS_ERROR);
		conn_send_retry(rq->c,
		    rq->rt->endpoint == ROUTE_SECTION ? 503 : 502,
		    v->why != NULL ? v->why : "repository download failed",
		    rq->th->d->cfg->error_ttl);
		return;
	}
}

/*
 * The flight moved on.  Before the head: wait, answer the end, or start
 * streaming.  The exchange's end releases the waiter (conn_on_end), so w is
 * not touched after an answer.
 */
static void
waiter_check(struct waiter *w)
{
	struct rq *rq = w->rq;
	struct conn *c = rq->c;
	enum metrics_endpoint mep = metrics_endpoint_of(rq->rt->endpoint);
	struct flight_view v;

	if (w->streaming) {
		conn_stream_wake(c);
		return;
	}
	flight_view(w->f, &v);
	if (w->repo) {
		waiter_check_repo(w, &v);
		return;
	}
	/*
	 * The store had no usable whole file for the section: its own
	 * fill next.  A request for the file itself that joined such a
	 * fill asks again (a fill of its own, the upstreams included).
	 */
	if (v.state != FLIGHT_WAITING && v.state != FLIGHT_STREAMING &&
	    v.state != FLIGHT_READY &&
	    (w->store_whole ||
		(v.state == FLIGHT_NOTFOUND &&
		    strcmp(v.why, FILL_NOT_IN_STORE) == 0))) {
		waiter_rerun(w, STEP_STORE);
		return;
	}
	if ((v.state == FLIGHT_WAITING || v.state == FLIGHT_STREAMING ||
		v.state == FLIGHT_TOOBIG) &&
	    waiter_over_limit(w, &v)) {
		conn_set_result(c, w->joined ? "JOINED" : "MISS", "upstream");
		metrics_request(mep, w->joined ? METRICS_JOINED : METRICS_MISS);
		conn_send_error(c, 406, RESPONSE_TOOBIG);
		return;
	}
	switch (v.state) {
	case FLIGHT_WAITING:
		return;
	case FLIGHT_TOOBIG:
		/*
		 * Larger than a smaller limit than ours (or than one when we
		 * have none): ask again.  Each round needs another client
		 * with a smaller limit to start a fill just then.
		 */
		waiter_rerun(w, STEP_UPSTREAM);
		return;
	case FLIGHT_STREAMING:
		if (w->whole || w->late)
			return; /* the section is cut once the file is in */
		/*
		 * A range may end before the last byte, which is all that
		 * streaming holds back: it waits for the verdict.
		 */
		if (conn_request(c)->range.p != NULL)
			return;
		waiter_stream(w, &v);
		return;
	case FLIGHT_READY:
		if (w->whole || w->late) {
			/* In the cache now: cut it there (STEP_CACHE). */
			waiter_rerun(w, STEP_CACHE);
			return;
		}
		waiter_stream(w, &v);
		return;
	case FLIGHT_NOTFOUND:
		rq_missed(rq);
		conn_set_result(c, "MISS", "upstream");
		metrics_request(mep, METRICS_NOTFOUND);
		conn_send_miss(c, "not found",
		    entry_ttl_left(rq->th, flight_key(w->f)));
		return;
	case FLIGHT_UNAVAILABLE:
		conn_set_result(c, "ERROR", "local");
		metrics_request(mep, METRICS_ERROR);
		conn_send_retry(c, 503, v.why, LOCAL_RETRY_AFTER);
		return;
	case FLIGHT_FAILED:
		conn_set_result(c, "ERROR", "upstream");
		metrics_request(mep, METRICS_ERROR);
		/* 503 on a section makes clients fetch the whole file. */
		conn_send_retry(c,
		    rq->rt->endpoint == ROUTE_SECTION ? 503 : 502, v.why,
		    entry_ttl_left(rq->th, flight_key(w->f)));
		return;
	}
}

static void
waiter_event_cb(evutil_socket_t fd, short what, void *arg)
{
	waiter_check(arg);
}

/* flight_wake_fn, on the filler's thread: check again on our loop. */
static void
waiter_wake(void *arg)
{
	struct waiter *w = arg;

	event_active(w->ev, EV_READ, 1);
}

/* A package member that holds what is asked for, copied from the index. */
struct pkg_found {
	int found;
	unsigned kinds; /* of the record found */
	int64_t mtime;
	uint64_t size;
	char package[PATH_MAX];
	char member[PATH_MAX];
};

/* What a fill of a request starts from. */
struct what_src {
	struct rq *rq;
	const struct route *rt; /* the whole file's, for a section's */
	const struct pkg_found *pf; /* the member to extract, or NULL */
};

/* 1 when a Via value names token: the request went through us already. */
static int
via_has(struct slice via, const char *token)
{
	size_t n = strlen(token), i;

	if (via.p == NULL)
		return 0;
	for (i = 0; i + n <= via.n; i++)
		if (memcmp(via.p + i, token, n) == 0)
			return 1;
	return 0;
}

/* Entries in an X-Forwarded-For value. */
static size_t
xff_count(struct slice xff)
{
	size_t i, n = 1;

	if (xff.p == NULL || xff.n == 0)
		return 0;
	for (i = 0; i < xff.n; i++)
		if (xff.p[i] == ',')
			n++;
	return n;
}

/* The upstream path of a route, percent-escaping what URLs cannot hold. */
static int
upstream_path(const struct route *rt, char *out, size_t len)
{
	char id[BUILDID_HEX_MAX];
	int w;

	buildid_format(&rt->id, id);
	switch (rt->endpoint) {
	case ROUTE_SECTION:
		w = snprintf(out, len, "/buildid/%s/section/", id);
		break;
	case ROUTE_SOURCE:
		w = snprintf(out, len, "/buildid/%s/source", id);
		break;
	default:
		w = snprintf(out, len, "/buildid/%s/%s", id,
		    rt->endpoint == ROUTE_EXECUTABLE ? "executable"
						     : "debuginfo");
		return w > 0 && (size_t)w < len ? 0 : -1;
	}
	if (w < 0 || (size_t)w >= len)
		return -1;
	return route_encode(rt->arg, ROUTE_ENC_PATH, out + w, len - (size_t)w);
}

/* Copy a slice into a C string of at most len - 1 bytes. */
static void
slice_copy(struct slice sl, char *out, size_t len)
{
	size_t n = sl.p == NULL ? 0 : sl.n;

	if (n >= len)
		n = len - 1;
	if (n > 0)
		memcpy(out, sl.p, n);
	out[n] = '\0';
}

/* fill_what_fn: what a fill of src's request fetches. */
static void
what_of(struct fill_what *w, void *arg)
{
	const struct what_src *src = arg;
	struct conn *c = src->rq->c;
	const struct route *rt = src->rt;
	const struct pkg_found *pf = src->pf;
	const char *token = src->rq->th->d->via_token;

	w->id = rt->id;
	w->kind = cache_kind_of(rt->endpoint);
	snprintf(w->arg, sizeof(w->arg), "%s", rt->arg);
	if (pf != NULL) {
		strcpy(w->package, pf->package);
		strcpy(w->member, pf->member);
		w->member_mtime = pf->mtime;
		w->member_size = pf->size;
	}
	if (upstream_path(rt, w->path, sizeof(w->path)) == -1)
		w->path[0] = '\0';
	resolve_forward_headers(c, token, w->xff, sizeof(w->xff), w->via,
	    sizeof(w->via), w->ua, sizeof(w->ua));
	/* The client's X-DEBUGINFOD-MAXSIZE goes upstream with it. */
	if (pf == NULL)
		w->limit = response_maxsize(conn_request(c));
	w->store = pf == NULL && src->rq->step == STEP_STORE;
	w->store_only = w->store && rt != src->rq->rt;
}

void
resolve_forward_headers(struct conn *c, const char *token, char *xff,
    size_t xfflen, char *via, size_t vialen, char *ua, size_t ualen)
{
	const struct request *req = conn_request(c);
	const char *peer = conn_peer_addr(c);

	if (req->forwarded_for.p != NULL)
		snprintf(xff, xfflen, "%.*s, %s", (int)req->forwarded_for.n,
		    req->forwarded_for.p, peer);
	else
		snprintf(xff, xfflen, "%s", peer);
	slice_copy(req->user_agent, ua, ualen);
	if (req->via.p != NULL)
		snprintf(via, vialen, "%.*s, 1.1 %s", (int)req->via.n,
		    req->via.p, token);
	else
		snprintf(via, vialen, "1.1 %s", token);
}

/*
 * Wait for flight f (a reference, which the waiter takes): the fill of
 * rq's own route, or (whole) of a section's whole file, or (repo) a
 * package download; created when rq's request started it.
 */
static enum src
await_flight(struct rq *rq, struct flight *f, int created, int whole, int repo)
{
	struct flight_view v;
	struct waiter *wt;
	struct rq *kept;

	rq_txn_end(rq);
	if ((wt = calloc(1, sizeof(*wt))) == NULL ||
	    (wt->ev = event_new(conn_base(rq->c), -1, 0, waiter_event_cb,
		 wt)) == NULL ||
	    (kept = rq_keep(rq)) == NULL) {
		if (wt != NULL && wt->ev != NULL)
			event_free(wt->ev);
		free(wt);
		flight_unref(f);
		return rq_error(rq, 503, "ERROR", "out of memory");
	}
	wt->rq = kept;
	wt->f = f;
	wt->joined = !created;
	wt->whole = whole;
	wt->store_whole = whole && rq->step == STEP_STORE;
	flight_view(f, &v);
	wt->late = !created && v.verified;
	wt->repo = repo;
	conn_wait(kept->c);
	conn_on_end(kept->c, waiter_release, wt);
	if (flight_watch(f, waiter_wake, wt) == -1) {
		conn_set_result(kept->c, "ERROR", "-");
		metrics_request(metrics_endpoint_of(kept->rt->endpoint),
		    METRICS_ERROR);
		conn_send_error(kept->c, 503, "out of memory");
		return SRC_PENDING; /* the waiter owns kept and frees it */
	}
	waiter_check(wt);
	return SRC_PENDING;
}

/*
 * Join the fill of what rt names (rq's own route, or a section's whole
 * file), starting it (from pf's package member when pf is not NULL, else
 * from the upstreams) when there is none, and wait for it.
 */
static enum src
await_fill(struct rq *rq, const struct route *rt, const struct pkg_found *pf)
{
	struct what_src src = { rq, rt, pf };
	struct cache_key k;
	struct flight *f;
	int created;

	rq_txn_end(rq);
	cache_key_make(&k, &rt->id, cache_kind_of(rt->endpoint), rt->arg);
	f = fill_join(rq->th->d->fill, &k, pf != NULL, what_of, &src, &created);
	if (f == NULL)
		return rq_error(rq, 503, "ERROR", "too many fills in flight");
	return await_flight(rq, f, created, rt != rq->rt, 0);
}

/* ------------------------------------------------------------ packages */

static int
pkg_found_cb(const struct pkg_rec *r, void *arg)
{
	struct pkg_found *pf = arg;

	if (strlen(r->package) >= sizeof(pf->package) ||
	    strlen(r->member) >= sizeof(pf->member))
		return 0;
	strcpy(pf->package, r->package);
	strcpy(pf->member, r->member);
	pf->mtime = r->mtime;
	pf->size = r->size;
	pf->kinds = r->kinds;
	pf->found = 1;
	return 1;
}

/*
 * A member that holds what rq asks for: the file itself, or for a section
 * a whole file (the debuginfo first, then the executable) that no package
 * fill of this request brought yet; it is filled into the cache and the
 * section cut there.
 */
static enum src
package_lookup(struct rq *rq)
{
	struct index_reader *rd = rq->th->rd;
	const struct route *rt = rq->rt;
	struct pkg_found pf;
	struct route whole;

	if (rq->th->d->fill == NULL)
		return SRC_ABSENT;
	if (rq_txn(rq) == -1)
		return rq_error(rq, 503, "ERROR", "index unavailable");
	pf.found = 0;
	switch (rt->endpoint) {
	case ROUTE_DEBUGINFO:
		pkgidx_find(rd, &rt->id, ELF_KIND_DEBUGINFO, pkg_found_cb, &pf);
		break;
	case ROUTE_EXECUTABLE:
		pkgidx_find(rd, &rt->id, ELF_KIND_EXECUTABLE, pkg_found_cb,
		    &pf);
		break;
	case ROUTE_SOURCE:
		pkgidx_find_source(rd, &rt->id, rt->arg, pkg_found_cb, &pf);
		break;
	case ROUTE_SECTION:
		if ((rq->filled & ELF_KIND_DEBUGINFO) == 0)
			pkgidx_find(rd, &rt->id, ELF_KIND_DEBUGINFO,
			    pkg_found_cb, &pf);
		if (pf.found) {
			pf.kinds = ELF_KIND_DEBUGINFO;
		} else if ((rq->filled & ELF_KIND_EXECUTABLE) == 0) {
			pkgidx_find(rd, &rt->id, ELF_KIND_EXECUTABLE,
			    pkg_found_cb, &pf);
			pf.kinds = ELF_KIND_EXECUTABLE;
		}
		break;
	default:
		break;
	}
	if (!pf.found)
		return SRC_ABSENT;
	if (rt->endpoint != ROUTE_SECTION)
		return await_fill(rq, rt, &pf);
	whole = *rt;
	whole.endpoint =
	    pf.kinds == ELF_KIND_DEBUGINFO ? ROUTE_DEBUGINFO : ROUTE_EXECUTABLE;
	whole.arg[0] = '\0';
	rq->filled |= pf.kinds;
	return await_fill(rq, &whole, &pf);
}

/* ------------------------------------------------ remote repositories */

/*
 * A debuginfo, an executable, or a section (cut from either) that a
 * repository's index maps to a package not downloaded yet: join its
 * download.  Once a download came back for the request, the package step
 * had its chance; there, an executable is found among the package's
 * members by its own build-id, as in a local package.
 */
static enum src
repo_lookup(struct rq *rq)
{
	struct repos *rs = rq->th->d->repos;
	enum route_endpoint ep = rq->rt->endpoint;
	struct repos_hit hit;
	struct flight *f;
	unsigned retry = 0;
	int rc, created, package;

	if (rs == NULL || repos_count(rs) == 0 || rq->repo_tried ||
	    (ep != ROUTE_DEBUGINFO && ep != ROUTE_EXECUTABLE &&
		ep != ROUTE_SECTION))
		return SRC_ABSENT;
	if (rq_txn(rq) == -1)
		return rq_error(rq, 503, "ERROR", "index unavailable");
	rc = repos_find(rs, rq->th->rd, &rq->rt->id, ep == ROUTE_EXECUTABLE,
	    &hit, &retry);
	if (rc == 0 && ep == ROUTE_SECTION)
		rc = repos_find(rs, rq->th->rd, &rq->rt->id, 1, &hit, &retry);
	if (rc == 0)
		return SRC_ABSENT;
	if (rc == -1)
		return rq_error(rq, 503, "ERROR", "index lookup failed");
	rq_txn_end(rq);
	if (rc == 2) {
		conn_set_result(rq->c, "NEGATIVE", "repo");
		metrics_request(metrics_endpoint_of(ep), METRICS_NEGATIVE);
		conn_send_retry(rq->c, ep == ROUTE_SECTION ? 503 : 502,
		    "repository download failing; try again later", retry);
		return SRC_ANSWERED;
	}
	/* A debuginfo comes out as the package downloads. */
	if (ep == ROUTE_DEBUGINFO &&
	    (f = repos_member(rs, &hit, &rq->rt->id, &created, &package)) !=
		NULL)
		return await_flight(rq, f, created, 0, package);
	if ((f = repos_join(rs, &hit)) == NULL)
		return rq_error(rq, 503, "ERROR", "too many fills in flight");
	return await_flight(rq, f, 1, 0, 1);
}

/* -------------------------------------------------------- object store */

static enum src
store_lookup(struct rq *rq)
{
	const struct resolve_deps *d = rq->th->d;
	struct route whole;
	unsigned kind;

	rq_txn_end(rq);
	/* A looping request is refused at STEP_UPSTREAM. */
	if (d->fill == NULL || !fill_store_usable(d->fill) ||
	    resolve_loop(conn_request(rq->c), d->via_token,
		d->cfg->max_forwarded_for) != NULL)
		return SRC_ABSENT;
	if (rq->rt->endpoint != ROUTE_SECTION)
		return await_fill(rq, rq->rt, NULL);
	/* A whole file in the store: the section is cut from it. */
	kind = (rq->store_whole & ELF_KIND_DEBUGINFO) == 0 ? ELF_KIND_DEBUGINFO
	    : (rq->store_whole & ELF_KIND_EXECUTABLE) == 0 ? ELF_KIND_EXECUTABLE
							   : 0;
	if (kind == 0)
		return await_fill(rq, rq->rt, NULL);
	rq->store_whole |= kind;
	whole = *rq->rt;
	whole.endpoint =
	    kind == ELF_KIND_DEBUGINFO ? ROUTE_DEBUGINFO : ROUTE_EXECUTABLE;
	whole.arg[0] = '\0';
	return await_fill(rq, &whole, NULL);
}

/* ------------------------------------------------- remembered misses */

static enum src
negative_lookup(struct rq *rq)
{
	struct cache_key k;
	struct neg_entry ne;
	int64_t now = clock_now();

	if (rq_txn(rq) == -1)
		return rq_error(rq, 503, "ERROR", "index unavailable");
	rq_key(rq, &k);
	if (neg_get(rq->th->rd, &k, now, &ne) != 0)
		return SRC_ABSENT;
	rq_txn_end(rq);
	conn_set_result(rq->c, "NEGATIVE", "cache");
	metrics_request(metrics_endpoint_of(rq->rt->endpoint),
	    METRICS_NEGATIVE);
	/*
	 * A remembered failure is no miss: clients cache a 404 for long
	 * (debuginfod-find for 10 minutes), so it is a 502 (503 for a
	 * section, which clients then fetch whole) saying when to retry.
	 */
	if (ne.kind == NEG_NOTFOUND) {
		rq_missed(rq);
		conn_send_miss(rq->c, "not found",
		    (unsigned)(ne.expires - now));
	} else {
		conn_send_retry(rq->c,
		    rq->rt->endpoint == ROUTE_SECTION ? 503 : 502,
		    "upstreams failing; try again later",
		    (unsigned)(ne.expires - now));
	}
	return SRC_ANSWERED;
}

/* ----------------------------------------------------------- upstreams */

/* A request refused as a forwarding loop. */
static enum src
refuse_loop(struct rq *rq, const char *why)
{
	conn_set_result(rq->c, "MISS", "loop");
	metrics_request(metrics_endpoint_of(rq->rt->endpoint),
	    METRICS_NOTFOUND);
	conn_send_error(rq->c, 404, why);
	return SRC_ANSWERED;
}

static enum src
upstream_lookup(struct rq *rq)
{
	const struct request *req = conn_request(rq->c);
	const struct resolve_deps *d = rq->th->d;

	const char *why;

	rq_txn_end(rq);
	if (d->fill == NULL || !fill_enabled(d->fill))
		return SRC_ABSENT;
	if ((why = resolve_loop(req, d->via_token,
		 d->cfg->max_forwarded_for)) != NULL)
		return refuse_loop(rq, why);
	return await_fill(rq, rq->rt, NULL);
}

const char *
resolve_loop(const struct request *req, const char *via_token,
    unsigned max_forwarded_for)
{
	if (via_has(req->via, via_token))
		return "not forwarded: a request loop";
	if (xff_count(req->forwarded_for) >= max_forwarded_for)
		return "not forwarded: X-Forwarded-For limit reached";
	return NULL;
}

/* ------------------------------------------------------------- start */

void
resolve_start(struct resolve_thread *th, struct conn *c, const struct route *rt)
{
	struct rq rq;

	rq.c = c;
	rq.th = th;
	rq.rt = rt;
	rq.step = STEP_LOCAL;
	rq.filled = 0;
	rq.cut_tried = 0;
	rq.repo_tried = 0;
	rq.store_whole = 0;
	rq.in_txn = 0;
	rq.kept = 0;
	rq_run(&rq);
}
