/*
 * resolver/fill.c: one fill per key, from the upstreams or a package into the
 * cache.
 *
 * A fill from upstreams (a "job") lives on the main loop.  It begins by
 * looking again in the cache and the negative entries: a request may have
 * missed both just before another fill of the same key published and left
 * the table, and asking upstream again would be a waste.  Then it opens a
 * temp file and asks every upstream (fetchers/upstream.c).  Bytes go to the
 * temp file and the flight tells its readers; readers stream them as they
 * arrive.
 *
 * Verification happens twice.  Early, on the loop, as the opening bytes
 * arrive: they must be ELF, and the build-id note among the first
 * PREFIX_CHECK bytes (executables and split debug files have it in the
 * first few KB) must name the requested id, else the answer is refused.
 * Readers are not told the length, so send nothing, until this check has
 * passed (or PREFIX_CHECK bytes came without a note to check): a wrong
 * build-id is then a clean 502, never a started 200.  Finally,
 * on a worker once the body is complete: libelf reads the whole file, which
 * must carry the requested build-id and be of the requested kind
 * (debuginfo: .debug_* sections, which dwz alt files have too).  Until then
 * readers may stream all but the last byte (cache/flight.h), so a file that
 * fails this check reaches its clients as a cut connection, never as a
 * complete-looking wrong file; only a verified file is published.  The
 * verdict lets the readers finish at once (flight_verified): the fsync,
 * the rename and the index's commit come after their last byte, and a
 * failure there only means the cache did not keep the file.  Sections
 * and sources forwarded from upstream are raw bytes that cannot be checked
 * this way; they are cached as the upstream sent them.
 *
 * The end of a fill that found nothing writes a negative entry, on a worker,
 * before the flight leaves the table, so that the next request for the key
 * finds the entry instead of starting another fill.
 *
 * A fill from a package runs in a decompression pass on a worker (see
 * "passes" below), streamed and verified the same way.
 */
#include "resolver/fill.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <event2/event.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache/blobstore.h"
#include "cache/flight.h"
#include "cache/index.h"
#include "cache/negative.h"
#include "cache/pkgindex.h"
#include "conf/config.h"
#include "daemon/clock.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/pool.h"
#include "sources/objstore.h"
#include "fetchers/upstream.h"
#include "indexer/elf.h"
#include "indexer/file.h"
#include "indexer/package.h"
#include "indexer/rpmhdr.h"

/* Bytes of an upstream's answer to a metadata query kept at most. */
#define META_BODY_MAX (16u << 20)

/* Bytes read back from the temp file for the early build-id check. */
#define PREFIX_CHECK (64u << 10)

/*
 * Bytes of an answer gathered before they are written.  libcurl hands a
 * body over in pieces of at most 16 KiB, and ext4 spends more per write
 * than on the copy: written one by one, the pieces of a 100 MiB store hit
 * took more CPU than receiving and sending them did.
 */
#define WBUF_SIZE (256u << 10)

struct job {
	struct fill *fl;
	struct job *next; /* in the start queue, or a pass's lists */
	struct job *aprev, *anext; /* among the running upstream jobs */
	int listed; /* in that list */
	struct flight *f;
	struct fill_what w;
	struct cache_key key;
	struct upstream_fetch *uf;
	int fd;
	uint64_t written;
	uint64_t length; /* announced by the upstream; UINT64_MAX: not */
	int checked; /* the early build-id check is over */
	int has_upstream;
	unsigned upstream;
	int64_t mtime;
	enum upstream_result res;
	int verified; /* worker: the final check passed */
	int wrong; /* worker: the final check failed */
	int found; /* the cache answered it: job_lookup()'s code */
	int local_errno; /* writing the fill failed here */
	int told; /* readers know the length: they may have bytes */
	int room_tried; /* room was made once for it after a local failure */
	int room_made; /* room_work evicted something */
	int paused; /* the transfer waits for room_work */
	int ended; /* the fetch ended while paused: sink_done is due */
	uint64_t tmp_counted; /* its bytes in tmp/, told to the blob store */
	int in_store; /* the fetch is the object store's (sources/objstore.h) */
	int store_refused; /* the store's object failed the early check */
	char *wbuf; /* WBUF_SIZE bytes: received, not yet in the file */
	size_t wlen;
	struct event *wev; /* writes them when their burst is in */
	char why[256];
};

struct fill {
	struct fill_deps d;
	struct pkg_limits lim; /* for extracting members */
	struct upstream_set *us;
	/* What the upstream set was told, kept for its life. */
	struct upstream_conf *ucf;
	const char **listeners;
	struct index_reader *rd;
	unsigned negative_ttl; /* the shortest over the upstreams */
	unsigned error_ttl;
	pthread_mutex_t mu;
	struct job *queue;
	struct fill_meta *meta_queue; /* under mu */
	struct event *queue_ev;
	struct job *active; /* begun and not ended, on the loop's thread */
	struct pass *passes; /* open package passes, under mu */
	struct objstore *tier; /* the object store; NULL: none */
};

static void job_end(struct job *j, enum flight_state st, const char *why);
static void job_fetch(struct job *j);
static void room_work(void *arg);
static void room_resume(void *arg);
static void sink_end(struct job *j);

/*
 * The bytes of a fill in tmp/ count against cache-size with the cached
 * files (cache/blobstore.h): j's temp file now ends at end.
 */
static void
job_tmp_grow(struct job *j, uint64_t end)
{
	if (end > j->tmp_counted) {
		blob_tmp_add(j->fl->d.bs, end - j->tmp_counted, 0);
		j->tmp_counted = end;
	}
}

/* j's temp file is published, deleted or emptied: it counts no more. */
static void
job_tmp_release(struct job *j)
{
	blob_tmp_add(j->fl->d.bs, 0, j->tmp_counted);
	j->tmp_counted = 0;
}

/* Empty j's temp file for a fill that starts over; -1 when it cannot. */
static int
job_forget_bytes(struct job *j)
{
	if (ftruncate(j->fd, 0) == -1)
		return -1;
	job_tmp_release(j);
	j->written = 0;
	j->wlen = 0;
	j->checked = 0;
	j->has_upstream = 0;
	j->local_errno = 0;
	j->length = UINT64_MAX;
	return 0;
}

/*
 * Worker: make room in the cache for bytes more, after a write found none;
 * 1 when something was evicted.  Also the package extractor's room hook.
 */
static int
fill_room(uint64_t bytes, void *arg)
{
	struct fill *fl = arg;
	uint64_t n, b;
	char err[256];

	if (blob_make_room(fl->d.bs, bytes, &n, &b, err, sizeof(err)) == -1)
		log_warnx("making room for a fill: %s", err);
	if (n > 0)
		log_info("no room for a fill: %llu cached files (%llu bytes) "
			 "evicted, and the write tried again",
		    (unsigned long long)n, (unsigned long long)b);
	return n > 0;
}

static int
is_elf_kind(enum cache_kind kind)
{
	return kind == CACHE_DEBUGINFO || kind == CACHE_EXECUTABLE;
}

/* ------------------------------------------------------------- metrics */

static void
obs_request(unsigned i)
{
	metrics_upstream_request(i);
}

static void
obs_latency(unsigned i, double seconds)
{
	metrics_upstream_latency(i, seconds);
}

/* The metric of an upstream error; a new kind must be named here. */
static enum metrics_uperr
uperr_metric(enum upstream_err kind)
{
	switch (kind) {
	case UPSTREAM_ERR_CONNECT:
		return METRICS_UPERR_CONNECT;
	case UPSTREAM_ERR_TIMEOUT:
		return METRICS_UPERR_TIMEOUT;
	case UPSTREAM_ERR_HTTP:
		return METRICS_UPERR_HTTP;
	case UPSTREAM_ERR_TRANSFER:
		return METRICS_UPERR_TRANSFER;
	case UPSTREAM_ERR_CONTENT:
		return METRICS_UPERR_CONTENT;
	case UPSTREAM_ERR_BREAKER:
		return METRICS_UPERR_BREAKER;
	}
	return METRICS_UPERR_TRANSFER;
}

static void
obs_error(unsigned i, enum upstream_err kind)
{
	metrics_upstream_error(i, uperr_metric(kind));
	if (kind == UPSTREAM_ERR_CONTENT)
		metrics_upstream_verify_failure(i);
}

/*
 * Every move of a breaker is logged with its reason, so that an operator
 * sees why an upstream is skipped and when it is back.  The observer has
 * no argument: the upstreams are named from the configuration the one
 * upstream set of the process was made from (set once, in fill_new).
 */
static const struct config *obs_cfg;

/* How upstream i is shown. */
static const char *
obs_name(unsigned i)
{
	return obs_cfg != NULL && i < obs_cfg->nupstreams
	    ? obs_cfg->upstreams[i].name
	    : "?";
}

static void
obs_breaker(unsigned i, enum upstream_breaker state, const char *why,
    unsigned backoff)
{
	const char *name = obs_name(i);

	metrics_upstream_breaker(i, (int)state);
	if (why == NULL)
		return; /* the initial state, not a move */
	switch (state) {
	case UPSTREAM_OPEN:
		log_warnx("upstream %s: breaker open (%s): skipped, probed "
			  "again in %us",
		    name, why, backoff);
		break;
	case UPSTREAM_PROBING:
		log_info("upstream %s: breaker probing (%s)", name, why);
		break;
	case UPSTREAM_CLOSED:
		log_info("upstream %s: breaker closed (%s): asked again", name,
		    why);
		break;
	}
}

static void
obs_working(unsigned i, const char *path, unsigned seconds)
{
	log_info("upstream %s: no answer for %s after %us, but it answers: "
		 "waited for",
	    obs_name(i), path, seconds);
}

static const struct upstream_observer observer = {
	obs_request,
	obs_latency,
	obs_error,
	obs_breaker,
	obs_working,
};

/* ------------------------------------------------------ upstream sink */

static int
sink_accept(void *arg, const struct upstream_head *h, const void *buf,
    size_t len)
{
	struct job *j = arg;

	if (is_elf_kind(j->w.kind) &&
	    (!elf_has_magic(buf, len) ||
		elf_prefix_check(buf, len, &j->w.id) == -1)) {
		log_info("%s%s refused: not an ELF file with the build-id "
			 "asked for",
		    h->url, j->w.path);
		return -1;
	}
	if (h->length != UINT64_MAX &&
	    h->length > j->fl->d.cfg->max_object_size) {
		log_info("%s%s refused: %llu bytes is over max-object-size",
		    h->url, j->w.path, (unsigned long long)h->length);
		return -1;
	}
	j->has_upstream = 1;
	j->upstream = h->upstream;
	j->mtime = h->mtime >= 0 ? h->mtime : clock_now();
	j->length = h->length;
	/* Readers over their X-DEBUGINFOD-MAXSIZE need not wait for more. */
	if (h->length != UINT64_MAX)
		flight_announce(j->f, h->length);
	/* ELF waits for early_check() before readers learn the length. */
	if (flight_set_head(j->f,
		is_elf_kind(j->w.kind) ? UINT64_MAX : h->length, j->mtime,
		h->headers, h->headers_len, h->url) == -1)
		return -1;
	j->told = !is_elf_kind(j->w.kind) && h->length != UINT64_MAX;
	return 0;
}

/*
 * The early build-id check, as each piece arrives, until the opening bytes
 * decide it or PREFIX_CHECK bytes or the whole body are there: -1 when the
 * id is another, else 0.  Readers are let in (told the length) when the
 * prefix names the id asked for, or when it cannot tell and more is coming;
 * a whole small body that cannot be told waits for the final check, so
 * that it is answered with the verdict, not streamed.
 */
static int
early_check(struct job *j)
{
	static _Thread_local char buf[PREFIX_CHECK];
	size_t n =
	    j->written < PREFIX_CHECK ? (size_t)j->written : PREFIX_CHECK;
	int whole = j->written == j->length, rc;

	if (pread(j->fd, buf, n, 0) != (ssize_t)n)
		return -1;
	if ((rc = elf_prefix_check(buf, n, &j->w.id)) == -1)
		return -1;
	if (rc == 0 && n < PREFIX_CHECK && !whole)
		return 0; /* more bytes may tell */
	j->checked = 1;
	if (j->length != UINT64_MAX && (rc == 1 || !whole)) {
		flight_set_length(j->f, j->length);
		j->told = 1;
	}
	return 0;
}

/*
 * Write len bytes at the end of j's file and tell its readers.  A failure
 * here is this server's: 0, UPSTREAM_SINK_LOCAL, or (can_pause, in a
 * transfer's data callback) UPSTREAM_SINK_PAUSE while room is made; -1
 * when the early check refuses the answer.
 */
static int
sink_write(struct job *j, const void *buf, size_t len, int can_pause)
{
	const char *p = buf;
	ssize_t n;
	size_t done = 0;

	while (done < len) {
		n = pwrite(j->fd, p + done, len - done,
		    (off_t)(j->written + done));
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			/*
			 * Ours, not the source's: a full disk must not open
			 * the upstream's breaker.  The maintenance job evicts
			 * while the disk is short of min-free-disk.
			 */
			j->local_errno = n == 0 ? EIO : errno;
			log_warnx("cannot write a fill to %s: %s",
			    flight_tmp_path(j->f), strerror(j->local_errno));
			metrics_local_write_error();
			/*
			 * Readers stream it: pause the transfer while room
			 * is made, and write this piece again.  (Before any
			 * reader has a byte, the fill starts over instead:
			 * sink_done.)
			 */
			if (can_pause && j->told && j->written > 0 &&
			    !j->room_tried && j->local_errno == ENOSPC) {
				j->room_tried = j->paused = 1;
				if (pool_submit(j->fl->d.pool, room_work,
					j->fl->d.inbox, room_resume, j) == 0)
					return UPSTREAM_SINK_PAUSE;
				j->paused = 0;
			}
			return UPSTREAM_SINK_LOCAL;
		}
		done += (size_t)n;
	}
	job_tmp_grow(j, j->written + len);
	j->written += len;
	flight_progress(j->f, j->written);
	if (is_elf_kind(j->w.kind) && !j->checked && early_check(j) == -1) {
		log_info("fill of %s refused: its build-id is another one",
		    j->w.path);
		return -1;
	}
	return 0;
}

/*
 * Write what j gathered; kept for another try when that fails (the next
 * piece, or the end, tries again first).
 */
static int
job_flush(struct job *j, int can_pause)
{
	int rc;

	if (j->wlen == 0)
		return 0;
	if ((rc = sink_write(j, j->wbuf, j->wlen, can_pause)) == 0) {
		j->wlen = 0;
		j->local_errno = 0;
	}
	return rc;
}

/* The burst is in: its bytes go to the file and the readers. */
static void
job_flush_cb(evutil_socket_t fd, short what, void *arg)
{
	struct job *j = arg;

	(void)fd;
	(void)what;
	if (!j->paused)
		job_flush(j, 0);
}

static int
sink_data(void *arg, const void *buf, size_t len)
{
	struct job *j = arg;
	int rc;

	/* The opening bytes go in at once: early_check reads them there. */
	if (is_elf_kind(j->w.kind) && !j->checked)
		return sink_write(j, buf, len, 1);
	if (j->wlen > 0 && (j->local_errno != 0 || j->wlen + len > WBUF_SIZE) &&
	    (rc = job_flush(j, 1)) != 0)
		return rc;
	if (j->wbuf == NULL && len <= WBUF_SIZE) {
		j->wbuf = malloc(WBUF_SIZE);
		j->wev = event_new(j->fl->d.base, -1, 0, job_flush_cb, j);
	}
	if (j->wbuf == NULL || j->wev == NULL || len > WBUF_SIZE)
		return sink_write(j, buf, len, 1);
	memcpy(j->wbuf + j->wlen, buf, len);
	j->wlen += len;
	event_active(j->wev, 0, 0);
	return 0;
}

int
fill_verify_publish(struct blobstore *bs, struct flight *f, int fd,
    const struct buildid *id, enum cache_kind kind, const char *arg,
    uint64_t written, int64_t mtime, int upstream, int from_store, char *why,
    size_t whylen)
{
	struct blob_info bi;
	char err[256];
	int64_t now = clock_now();
	int rc;

	if (is_elf_kind(kind) &&
	    elf_check_artifact(fd, id,
		kind == CACHE_DEBUGINFO ? ELF_KIND_DEBUGINFO
					: ELF_KIND_EXECUTABLE,
		err, sizeof(err)) == -1) {
		snprintf(why, whylen, "%.100s: wrong content (%.100s)",
		    flight_source(f), err);
		return -1;
	}
	/*
	 * Readers finish now; making the file durable is the cache's.  A
	 * store hit is counted first, so /metrics agrees with the client.
	 */
	if (from_store)
		metrics_store(METRICS_STORE_HIT);
	flight_verified(f);
	memset(&bi, 0, sizeof(bi));
	bi.headers = flight_headers(f, &bi.headers_len);
	bi.size = written;
	bi.mtime = mtime;
	bi.stored = now;
	bi.atime = now;
	bi.id = *id;
	bi.kind = kind;
	bi.arg = arg;
	bi.source = flight_source(f);
	bi.upstream = upstream;
	bi.no_sink = from_store;
	bi.begun = flight_begun(f);
	rc = blob_publish(bs, flight_key(f), flight_tmp_path(f), &bi, now, err,
	    sizeof(err));
	if (rc == -1)
		log_warnx("%s: %s", __func__, err);
	else if (rc == BLOB_TOO_BIG)
		log_info("an answer from %s was served but not cached: larger "
			 "than the cache",
		    flight_source(f));
	else if (rc == BLOB_PURGED)
		log_info("an answer from %s was served but not cached: purged "
			 "while it was fetched",
		    flight_source(f));
	return 0;
}

/* Worker: the final check, then publish or remember the failure. */
static void
finish_work(void *arg)
{
	struct job *j = arg;
	struct fill *fl = j->fl;
	char err[256];
	int64_t now = clock_now();
	int rc;

	job_tmp_release(j); /* published or deleted from here on */
	if (j->res == UPSTREAM_OK) {
		if (fill_verify_publish(fl->d.bs, j->f, j->fd, &j->w.id,
			j->w.kind, j->w.arg, j->written, j->mtime,
			j->w.package[0] == '\0', j->in_store, j->why,
			sizeof(j->why)) == 0) {
			j->verified = 1;
			return;
		}
		j->wrong = 1;
	}
	if (j->w.package[0] != '\0')
		return; /* the package is indexed: no miss to remember */
	if (j->in_store)
		return; /* the store's fault: the upstreams were not asked */
	if (j->res == UPSTREAM_LOCAL || j->res == UPSTREAM_TOOBIG)
		return; /* nothing to remember: ours, or one client's limit */
	if (j->res == UPSTREAM_NOTFOUND && fl->negative_ttl > 0)
		rc = neg_put(fl->d.idx, &j->key, &j->w.id, NEG_NOTFOUND,
		    now + fl->negative_ttl, err, sizeof(err));
	else if (j->res != UPSTREAM_NOTFOUND && fl->error_ttl > 0)
		rc = neg_put(fl->d.idx, &j->key, &j->w.id, NEG_ERROR,
		    now + fl->error_ttl, err, sizeof(err));
	else
		rc = 0;
	if (rc == -1)
		log_warnx("%s: %s", __func__, err);
}

static void
finish_done(void *arg)
{
	struct job *j = arg;

	if (j->in_store && !j->verified) /* a hit is counted already */
		objstore_looked(j->fl->tier, j->res, j->verified);
	if (j->verified) {
		job_end(j, FLIGHT_READY, NULL);
	} else if (j->wrong) {
		log_warnx("refused after the final check: %s", j->why);
		if (j->in_store)
			objstore_corrupt(j->fl->tier, &j->w.id, j->w.kind,
			    j->w.arg, j->why);
		else if (j->has_upstream)
			upstream_blame(j->fl->us, j->upstream);
		job_end(j, FLIGHT_FAILED, j->why);
	} else if (j->res == UPSTREAM_NOTFOUND) {
		job_end(j, FLIGHT_NOTFOUND, "not found");
	} else if (j->res == UPSTREAM_LOCAL) {
		job_end(j, FLIGHT_UNAVAILABLE, j->why);
	} else if (j->res == UPSTREAM_TOOBIG) {
		job_end(j, FLIGHT_TOOBIG, "larger than X-DEBUGINFOD-MAXSIZE");
	} else {
		job_end(j, FLIGHT_FAILED, j->why);
	}
}

/* Worker: room for the fill j could not write (the whole of it). */
static void
room_work(void *arg)
{
	struct job *j = arg;
	uint64_t need = j->length != UINT64_MAX ? j->length : j->written;

	j->room_made = fill_room(need + PKG_ROOM_STEP, j->fl);
}

/* After room_work for a paused transfer: go on, or end it. */
static void
room_resume(void *arg)
{
	struct job *j = arg;

	j->paused = 0;
	if (j->ended) {
		/* It ended meanwhile (a deadline): what sink_done saw. */
		sink_end(j);
	} else if (j->room_made) {
		log_info("fill of %s: goes on, now that there is room",
		    j->w.path);
		upstream_resume(j->uf);
	} else {
		upstream_cancel(j->uf);
		j->uf = NULL;
		j->res = UPSTREAM_LOCAL;
		snprintf(j->why, sizeof(j->why),
		    "this server cannot keep it now: %s",
		    strerror(j->local_errno));
		sink_end(j);
	}
}

/*
 * After room_work: a fill whose readers have no byte yet starts again
 * from its first byte; one that streamed, or found no room, ends as this
 * server's failure (503, or a cut connection).
 */
static void
room_done(void *arg)
{
	struct job *j = arg;

	/* Only the gathered bytes could not be written: now they can. */
	if (j->room_made && j->wlen > 0 && job_flush(j, 0) == 0) {
		log_info("fill of %s: goes on, now that there is room",
		    j->w.path);
		j->res = UPSTREAM_OK;
		j->why[0] = '\0';
		sink_end(j);
		return;
	}
	if (j->room_made && !j->told && job_forget_bytes(j) == 0) {
		log_info("fill of %s: asked again, now that there is room",
		    j->w.path);
		job_fetch(j);
		return;
	}
	sink_end(j);
}

static void
sink_done(void *arg, enum upstream_result res, const char *why)
{
	struct job *j = arg;

	/* What is gathered is written here, or by room_done: not by wev. */
	if (j->wev != NULL)
		event_del(j->wev);
	if (res == UPSTREAM_OK && j->length != UINT64_MAX &&
	    j->length != j->written + j->wlen) {
		res = UPSTREAM_FAILED;
		why = "short body";
	}
	/*
	 * A failed answer is not kept: its gathered bytes go with it.  Those
	 * of a whole one that cannot be written yet are kept for room_done.
	 */
	if (res != UPSTREAM_OK)
		j->wlen = 0;
	else if (job_flush(j, 0) != 0)
		res = UPSTREAM_LOCAL;
	j->uf = NULL;
	j->res = res;
	snprintf(j->why, sizeof(j->why), "%s", why != NULL ? why : "");
	if (res == UPSTREAM_LOCAL)
		snprintf(j->why, sizeof(j->why),
		    "this server cannot keep it now: %s",
		    strerror(j->local_errno));
	if (j->paused) {
		/* room_resume ends it, when room_work is over. */
		j->ended = 1;
		return;
	}
	if (res == UPSTREAM_LOCAL && !j->room_tried) {
		/* Make room, then try once more unless readers have bytes. */
		j->room_tried = 1;
		if (pool_submit(j->fl->d.pool, room_work, j->fl->d.inbox,
			room_done, j) == 0)
			return;
	}
	sink_end(j);
}

/* The end of j's fetch, as j->res says: the final check on a worker. */
static void
sink_end(struct job *j)
{
	if (j->res != UPSTREAM_OK)
		log_info("fill of %s: %s", j->w.path,
		    j->res == UPSTREAM_NOTFOUND ? "not found upstream"
			: j->res == UPSTREAM_TOOBIG
			? "larger than the X-DEBUGINFOD-MAXSIZE sent upstream"
			: j->why);
	if (pool_submit(j->fl->d.pool, finish_work, j->fl->d.inbox, finish_done,
		j) == -1)
		job_end(j, FLIGHT_FAILED, "server is shutting down");
}

static const struct upstream_sink sink = {
	sink_accept,
	sink_data,
	sink_done,
};

/* ---------------------------------------------------------- the store */

static int
store_accept(void *arg, const struct upstream_head *h, const void *buf,
    size_t len)
{
	struct job *j = arg;

	if (sink_accept(arg, h, buf, len) == 0)
		return 0;
	j->store_refused = 1;
	return -1;
}

/*
 * The store's lookup ended.  An object goes on like an upstream's answer
 * (the final check, then publishing, without an upload back).  Anything
 * else, before a reader had a byte: the fill starts over as one from the
 * upstreams, after a look at what the cache learnt meanwhile.
 */
static void
store_done(void *arg, enum upstream_result res, const char *why)
{
	struct job *j = arg;
	struct fill *fl = j->fl;

	if (res == UPSTREAM_OK || res == UPSTREAM_LOCAL || j->told) {
		sink_done(arg, res, why);
		return;
	}
	j->uf = NULL;
	objstore_looked(fl->tier, res, 0);
	if (j->store_refused)
		objstore_corrupt(fl->tier, &j->w.id, j->w.kind, j->w.arg,
		    "not an ELF file with the build-id asked for");
	if (j->w.store_only) {
		job_end(j, FLIGHT_NOTFOUND, FILL_NOT_IN_STORE);
		return;
	}
	if (res == UPSTREAM_FAILED && !j->store_refused)
		log_info("fill of %s: the store failed (%s): asking the "
			 "upstreams",
		    j->w.path, why != NULL ? why : "breaker open");
	if (job_forget_bytes(j) == -1) {
		snprintf(j->why, sizeof(j->why), "cannot store the file");
		sink_done(arg, UPSTREAM_LOCAL, j->why);
		return;
	}
	j->in_store = 0;
	/* The step after the store: a remembered miss or failure. */
	if (fl->rd != NULL && index_reader_begin(fl->rd) == 0) {
		struct neg_entry ne;
		int rc = neg_get(fl->rd, &j->key, clock_now(), &ne);

		index_reader_end(fl->rd);
		if (rc == 0) {
			job_end(j,
			    ne.kind == NEG_NOTFOUND ? FLIGHT_NOTFOUND
						    : FLIGHT_FAILED,
			    "a recent attempt failed");
			return;
		}
	}
	job_fetch(j);
}

static int
store_data(void *arg, const void *buf, size_t len)
{
	struct job *j = arg;
	int rc = sink_data(arg, buf, len);

	if (rc == -1)
		j->store_refused = 1;
	return rc;
}

static const struct upstream_sink store_sink = {
	store_accept,
	store_data,
	store_done,
};

/* Ask the store for j, whose temp file is open and empty. */
static void
job_store(struct job *j)
{
	enum upstream_result res;

	j->in_store = 1;
	j->uf = objstore_get(j->fl->tier, &j->w.id, j->w.kind, j->w.arg,
	    j->fl->d.cfg->max_object_size, &store_sink, j, &res);
	if (j->uf == NULL)
		store_done(j, res, NULL);
}

/* ---------------------------------------------------------------- jobs */

/* End flight f, which no fill will fill, as failed. */
static void
flight_fail(struct flight *f, const char *why)
{
	flight_end(f, FLIGHT_FAILED, why);
	flight_detach(f);
	flight_unref(f);
}

/* A job for flight f; the caller fills in j->w. */
static struct job *
job_new(struct fill *fl, struct flight *f)
{
	struct job *j;

	if ((j = calloc(1, sizeof(*j))) == NULL)
		return NULL;
	j->fl = fl;
	j->f = f;
	j->key = *flight_key(f);
	j->fd = -1;
	return j;
}

static void
job_end(struct job *j, enum flight_state st, const char *why)
{
	job_tmp_release(j);
	free(j->wbuf);
	if (j->wev != NULL)
		event_free(j->wev);
	if (j->uf != NULL)
		upstream_cancel(j->uf);
	flight_end(j->f, st, why);
	flight_detach(j->f);
	flight_unref(j->f);
	if (j->listed) {
		if (j->aprev != NULL)
			j->aprev->anext = j->anext;
		else
			j->fl->active = j->anext;
		if (j->anext != NULL)
			j->anext->aprev = j->aprev;
	}
	free(j);
}

/*
 * What the cache learnt of j's key since the request missed, read with rd
 * (in a transaction): 1 the file, which j's flight now serves; 2 a
 * negative entry for a miss, 3 one for a failure; 0 nothing.
 */
static int
job_lookup(struct fill *fl, struct index_reader *rd, struct job *j)
{
	struct blob_info bi;
	struct neg_entry ne;
	int fd;

	if (blob_lookup(rd, &j->key, &bi) == 0 &&
	    (fd = blob_open(fl->d.bs, &j->key)) != -1) {
		flight_set_file(j->f, fd, NULL);
		flight_set_head(j->f, bi.size, bi.mtime, bi.headers,
		    bi.headers_len, bi.source);
		flight_progress(j->f, bi.size);
		j->written = bi.size;
		return 1;
	}
	if (neg_get(rd, &j->key, clock_now(), &ne) == 0)
		return ne.kind == NEG_NOTFOUND ? 2 : 3;
	return 0;
}

/* End j as job_lookup() found it. */
static void
job_end_found(struct job *j, int found)
{
	if (found == 1)
		job_end(j, FLIGHT_READY, NULL);
	else
		job_end(j, found == 2 ? FLIGHT_NOTFOUND : FLIGHT_FAILED,
		    "a recent attempt failed");
}

/* Serve the flight from what the cache learnt since the request missed. */
static int
job_from_cache(struct job *j)
{
	struct fill *fl = j->fl;
	int found;

	if (fl->rd == NULL || index_reader_begin(fl->rd) == -1)
		return 0;
	found = job_lookup(fl, fl->rd, j);
	index_reader_end(fl->rd);
	if (found != 0)
		job_end_found(j, found);
	return found;
}

/*
 * Worker, after each piece pkg_extract wrote: readers follow the extraction
 * as they follow an upstream transfer, after the same early check for ELF.
 */
static void
package_progress(uint64_t end, void *arg)
{
	struct job *j = arg;

	job_tmp_grow(j, end);
	j->written = end;
	flight_progress(j->f, end);
	if (is_elf_kind(j->w.kind) && !j->checked && early_check(j) == -1)
		j->checked = 1; /* wrong: the final check will say so */
}

/* See resolver/fill.h. */
int
fill_member_headers(const struct rpmhdr *rh, const char *archive,
    const char *member, char *buf, size_t len)
{
	char sig[FILL_RPM_SIG_MAX], err[256];
	int n, m, rc;

	n = snprintf(buf, len,
	    "X-DEBUGINFOD-ARCHIVE: %s\r\nX-DEBUGINFOD-FILE: %s\r\n", archive,
	    member);
	if (n < 0 || (size_t)n >= len)
		return -1;
	if (rh == NULL)
		return n;
	rc = rpmhdr_ima_signature(rh, member, sig, sizeof(sig), err,
	    sizeof(err));
	if (rc == -1)
		log_info("%s: %s", archive, err);
	if (rc == 1) {
		m = snprintf(buf + n, len - (size_t)n,
		    "X-DEBUGINFOD-IMASIGNATURE: %s\r\n", sig);
		if (m < 0 || (size_t)m >= len - (size_t)n)
			return -1;
		n += m;
	}
	return n;
}

/* The RPM header of package when it is an RPM that signs files; or NULL. */
static struct rpmhdr *
package_rpmhdr(const char *package)
{
	struct rpmhdr *rh = NULL;
	struct stat st;
	char err[256];
	int fd;

	if ((fd = file_open_regular(package, &st)) == -1)
		return NULL;
	if (rpmhdr_open(fd, &rh, err, sizeof(err)) == -1)
		log_info("%s: %s", package, err);
	close(fd);
	return rh;
}

/* ------------------------------------------------------------- passes */

/*
 * One decompression pass over a package serves every fill of its members
 * that can catch it.  A member fill joins the open pass of its package
 * (else starts one) under fl->mu, in the same critical section that
 * created its flight, so a pass never misses a fill that was coming.  It
 * can join until the pass has read past its member; a later one waits for
 * the next pass, which is queued while a pass of the package runs and
 * begins when that pass ends, so that however many fills come too late for
 * the running pass, they cost one more pass, not one each.  While reading,
 * the pass also claims members nothing asked for, so that the next
 * requests of a debugger are hits: dwz alt files always, as every debug
 * file of the package may point at them, and up to package-coextract
 * others.  Those go to the members clients are likeliest to ask for next,
 * best first:
 *
 *   1. members sharing the build-id of a member a fill of the pass wants:
 *      the debug file an executable's .gnu_debuglink names, the executable
 *      of a debug file, which a client asks for once it has the other;
 *   2. members whose build-id is cached as the other ELF kind: a client
 *      had the executable (or the debug file) of that id from this server
 *      and is likely to want the rest;
 *   3. debug files, which debuggers ask for far more than executables;
 *   4. the rest.
 *
 * A member met is claimed when fewer than budget members still ahead
 * outrank it, so that the budget is not spent on the first members met
 * when better ones come later; among equals the first met wins.  A member
 * already cached is never claimed again.  Sources lead a pass of their own
 * (their member may be a link, which sides do not follow), which ELF fills
 * can still join.
 */
enum pm_state {
	PM_AHEAD, /* not met yet */
	PM_TAKEN, /* met, extracted for a fill */
	PM_BEHIND, /* met and passed by */
};

/* How likely a member nothing asked for is to be asked for next. */
enum pm_rank {
	PR_SIBLING, /* shares its build-id with a member a fill wants */
	PR_ASKED, /* its build-id is cached as the other kind */
	PR_DEBUG, /* a debug file */
	PR_OTHER,
	PR_NONE, /* not claimed for its rank: met, wanted, cached or dwz */
};

/* An indexed ELF member of the package of a pass. */
struct pmember {
	struct pkg_rec rec; /* member malloc'ed; package not set */
	enum pm_state state;
	enum pm_rank rank;
	int dwz; /* a dwz alt file not cached yet */
	struct job *job; /* the fill that wants it, if any */
	struct pkg_side side;
};

struct pass {
	struct fill *fl;
	struct pass *next; /* among fl->passes until closed */
	char package[PATH_MAX];
	const char *archive; /* as X-DEBUGINFOD-ARCHIVE shows it */
	struct rpmhdr *rh; /* when an RPM that signs files */
	struct job *lead; /* a source fill: its member leads the pass */
	struct job *early; /* ELF fills that joined before it began */
	struct job *answered; /* fills it ends without extracting them */
	struct pmember *m; /* by name, once begun */
	size_t n, cap;
	size_t budget; /* members it may still claim unasked */
	size_t wanted; /* members ahead that a fill wants */
	size_t ranked[PR_NONE]; /* members ahead that it may claim, by rank */
	size_t ahead_dwz; /* dwz alt files not met yet */
	int queued; /* waits for a pass of its package to end */
	int begun, closed;
};

static int
pmember_cmp(const void *a, const void *b)
{
	return strcmp(((const struct pmember *)a)->rec.member,
	    ((const struct pmember *)b)->rec.member);
}

/* The member of p named name, or NULL. */
static struct pmember *
pass_member(struct pass *p, const char *name)
{
	struct pmember key;

	key.rec.member = name;
	return p->n == 0
	    ? NULL
	    : bsearch(&key, p->m, p->n, sizeof(*p->m), pmember_cmp);
}

static int
pass_load_cb(const struct pkg_rec *r, void *arg)
{
	struct pass *p = arg;
	struct pmember *v;
	size_t cap;

	if (p->n == p->cap) {
		cap = p->cap == 0 ? 16 : 2 * p->cap;
		if ((v = realloc(p->m, cap * sizeof(*v))) == NULL)
			return 1;
		p->m = v;
		p->cap = cap;
	}
	memset(&p->m[p->n], 0, sizeof(p->m[p->n]));
	p->m[p->n].rec = *r;
	p->m[p->n].rec.package = NULL;
	if ((p->m[p->n].rec.member = strdup(r->member)) == NULL)
		return 1;
	p->n++;
	return 0;
}

/* The kind a member of kinds is filled as when nothing asked for it. */
static enum cache_kind
pm_kind(unsigned kinds)
{
	return kinds & ELF_KIND_DEBUGINFO ? CACHE_DEBUGINFO : CACHE_EXECUTABLE;
}

/* Worker, in rd's transaction: 1 when (id, kind) is cached. */
static int
pm_cached(struct index_reader *rd, const struct buildid *id,
    enum cache_kind kind)
{
	struct cache_key k;
	struct blob_info bi;

	cache_key_make(&k, id, kind, "");
	return blob_lookup(rd, &k, &bi) == 0;
}

/* Worker, in rd's transaction: pm's rank before any fill wants it. */
static enum pm_rank
pm_rank_of(struct index_reader *rd, const struct pmember *pm)
{
	enum cache_kind kind = pm_kind(pm->rec.kinds);

	if (pm_cached(rd, &pm->rec.id, kind))
		return PR_NONE;
	if (pm_cached(rd, &pm->rec.id,
		kind == CACHE_DEBUGINFO ? CACHE_EXECUTABLE : CACHE_DEBUGINFO))
		return PR_ASKED;
	return kind == CACHE_DEBUGINFO ? PR_DEBUG : PR_OTHER;
}

/* fl->mu held (or p not begun): pm is no more a member p may claim. */
static void
pm_unrank(struct pass *p, struct pmember *pm)
{
	if (pm->rank != PR_NONE)
		p->ranked[pm->rank]--;
	pm->rank = PR_NONE;
}

/*
 * fl->mu held: a fill wants the member of build-id id; the other members
 * of that id come first among those p may claim.
 */
static void
pass_favour(struct pass *p, const struct buildid *id)
{
	struct pmember *pm;
	size_t i;

	for (i = 0; i < p->n; i++) {
		pm = &p->m[i];
		if (pm->rank == PR_NONE || pm->rank == PR_SIBLING ||
		    !buildid_equal(&pm->rec.id, id))
			continue;
		pm_unrank(p, pm);
		pm->rank = PR_SIBLING;
		p->ranked[PR_SIBLING]++;
	}
}

/* fl->mu held: members ahead that p may claim and that outrank r. */
static size_t
pass_outranked(const struct pass *p, enum pm_rank r)
{
	size_t n = 0;
	int i;

	for (i = 0; i < (int)r; i++)
		n += p->ranked[i];
	return n;
}

/*
 * Worker: the indexed ELF members of p's package, by name, one entry per
 * file (a file indexed as two kinds is one member), ranked with rd.
 */
static void
pass_load(struct pass *p, struct index_reader *rd)
{
	size_t i, k;

	pkgidx_package_members(rd, p->package, pass_load_cb, p);
	if (p->n == 0)
		return;
	qsort(p->m, p->n, sizeof(*p->m), pmember_cmp);
	for (i = k = 1; i < p->n; i++) {
		if (strcmp(p->m[i].rec.member, p->m[k - 1].rec.member) == 0) {
			p->m[k - 1].rec.kinds |= p->m[i].rec.kinds;
			free((char *)p->m[i].rec.member);
		} else {
			p->m[k++] = p->m[i];
		}
	}
	p->n = k;
	for (i = 0; i < p->n; i++) {
		p->m[i].rank = pm_rank_of(rd, &p->m[i]);
		if (p->m[i].rank != PR_NONE &&
		    strncmp(p->m[i].rec.member, PKG_DWZ_DIR,
			strlen(PKG_DWZ_DIR)) == 0) {
			p->m[i].dwz = 1;
			p->m[i].rank = PR_NONE;
			p->ahead_dwz++;
		}
		if (p->m[i].rank != PR_NONE)
			p->ranked[p->m[i].rank]++;
	}
}

/* fl->mu held: p takes no more fills. */
static void
pass_close(struct pass *p)
{
	struct pass **pp;

	if (p->closed)
		return;
	p->closed = 1;
	for (pp = &p->fl->passes; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
}

/*
 * fl->mu held: member fill j joins p, which has begun; -1 when p has read
 * past the member or another fill has it.
 */
static int
pass_want(struct pass *p, struct job *j)
{
	struct pmember *pm;

	if (!is_elf_kind(j->w.kind) ||
	    (pm = pass_member(p, j->w.member)) == NULL ||
	    pm->state != PM_AHEAD || pm->job != NULL)
		return -1;
	pm->job = j;
	p->wanted++;
	pm_unrank(p, pm);
	pass_favour(p, &j->w.id);
	return 0;
}

static void pass_work(void *arg);
static void pass_done(void *arg);

/*
 * fl->mu held: a new pass for member fill j, queued (not begun until
 * pass_release) when queued; -1 when none can start.
 */
static int
pass_new(struct fill *fl, struct job *j, int queued)
{
	struct pass *p;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return -1;
	p->fl = fl;
	memcpy(p->package, j->w.package, sizeof(p->package));
	j->next = NULL;
	if (is_elf_kind(j->w.kind))
		p->early = j;
	else
		p->lead = j;
	p->queued = queued;
	if (!queued &&
	    pool_submit_long(fl->d.pool, pass_work, fl->d.inbox, pass_done,
		p) == -1) {
		free(p);
		return -1;
	}
	p->next = fl->passes;
	fl->passes = p;
	return 0;
}

/*
 * fl->mu held: member fill j joins an open pass of its package that has
 * not read past its member, else one that has not begun, else starts one,
 * queued behind the passes of the package that run.
 */
static int
pass_join(struct fill *fl, struct job *j)
{
	struct pass *p, *later = NULL;
	int running = 0;

	for (p = fl->passes; p != NULL; p = p->next) {
		if (strcmp(p->package, j->w.package) != 0)
			continue;
		if (!p->begun) {
			if (later == NULL)
				later = p;
		} else if (pass_want(p, j) == 0) {
			return 0;
		} else {
			running = 1;
		}
	}
	if (later != NULL && is_elf_kind(j->w.kind)) {
		j->next = later->early;
		later->early = j;
		return 0;
	}
	return pass_new(fl, j, running);
}

/*
 * The fills' loop, as a pass of package ends: begin the passes queued
 * behind it.  Fills of one that cannot begin end as failures.
 */
static void
pass_release(struct fill *fl, const char *package)
{
	struct pass *p, *next, *failed = NULL;
	struct job *j;

	pthread_mutex_lock(&fl->mu);
	for (p = fl->passes; p != NULL; p = next) {
		next = p->next;
		if (!p->queued || strcmp(p->package, package) != 0)
			continue;
		p->queued = 0;
		if (pool_submit_long(fl->d.pool, pass_work, fl->d.inbox,
			pass_done, p) == -1) {
			pass_close(p);
			p->next = failed;
			failed = p;
		}
	}
	pthread_mutex_unlock(&fl->mu);
	for (p = failed; p != NULL; p = next) {
		next = p->next;
		if (p->lead != NULL)
			job_end(p->lead, FLIGHT_FAILED,
			    "server is shutting down");
		while ((j = p->early) != NULL) {
			p->early = j->next;
			job_end(j, FLIGHT_FAILED, "server is shutting down");
		}
		free(p);
	}
}

/* Worker: member fill j's temp file and head, as its pass gets to it. */
static int
job_open_member(struct pass *p, struct job *j)
{
	char path[PATH_MAX], headers[FILL_MEMBER_HEADERS_MAX], err[256];
	int n;

	j->mtime = j->w.member_mtime;
	j->length = j->w.member_size;
	j->fd = blob_tmp_new(j->fl->d.bs, path, sizeof(path), err, sizeof(err));
	if (j->fd == -1) {
		log_warnx("%s: %s", __func__, err);
		snprintf(j->why, sizeof(j->why), "cannot store the file");
		return -1;
	}
	flight_set_file(j->f, j->fd, path);
	n = fill_member_headers(p->rh, p->archive, j->w.member, headers,
	    sizeof(headers));
	/* ELF waits for early_check() before readers learn the length. */
	if (n < 0 ||
	    flight_set_head(j->f,
		is_elf_kind(j->w.kind) ? UINT64_MAX : j->length, j->mtime,
		headers, (size_t)n, j->w.package) == -1) {
		snprintf(j->why, sizeof(j->why), "out of memory");
		return -1;
	}
	return 0;
}

/*
 * fl->mu held: a fill of member pm that nothing asked for, or NULL when
 * something else fills it or no fill can start.
 */
static struct job *
job_unasked(struct pass *p, const struct pmember *pm)
{
	enum cache_kind kind = pm_kind(pm->rec.kinds);
	struct cache_key k;
	struct flight *f;
	struct job *j;
	int created;

	cache_key_make(&k, &pm->rec.id, kind, "");
	if ((f = flight_join(p->fl->d.ft, &k, 0, &created)) == NULL)
		return NULL;
	if (!created) {
		flight_unref(f);
		return NULL;
	}
	if ((j = job_new(p->fl, f)) == NULL) {
		flight_fail(f, "out of memory");
		return NULL;
	}
	j->w.id = pm->rec.id;
	j->w.kind = kind;
	memcpy(j->w.package, p->package, sizeof(j->w.package));
	snprintf(j->w.member, sizeof(j->w.member), "%s", pm->rec.member);
	snprintf(j->w.path, sizeof(j->w.path), "%s", pm->rec.member);
	j->w.member_mtime = pm->rec.mtime;
	j->w.member_size = pm->rec.size;
	return j;
}

/*
 * Worker, from pkg_extract_watch: the pass meets member.  Extract it for
 * the fill that wants it, or for a fill of its own when the pass may
 * claim it.
 */
static struct pkg_side *
pass_side(const char *member, void *arg)
{
	struct pass *p = arg;
	struct pmember *pm;
	struct job *j = NULL;
	enum pm_rank r;

	pthread_mutex_lock(&p->fl->mu);
	if ((pm = pass_member(p, member)) != NULL && pm->state == PM_AHEAD) {
		r = pm->rank;
		pm_unrank(p, pm);
		p->ahead_dwz -= (size_t)pm->dwz;
		if (pm->job != NULL)
			p->wanted--;
		else if (pm->dwz)
			pm->job = job_unasked(p, pm);
		else if (r != PR_NONE && pass_outranked(p, r) < p->budget &&
		    (pm->job = job_unasked(p, pm)) != NULL)
			p->budget--;
		j = pm->job;
		pm->state = j != NULL ? PM_TAKEN : PM_BEHIND;
	}
	pthread_mutex_unlock(&p->fl->mu);
	if (j == NULL || job_open_member(p, j) == -1)
		return NULL;
	pm->side.fd = j->fd;
	pm->side.progress = package_progress;
	pm->side.arg = j;
	return &pm->side;
}

/* Worker, from pkg_extract_watch: the lead's member is coming out. */
static void
pass_progress(uint64_t end, void *arg)
{
	struct pass *p = arg;

	package_progress(end, p->lead);
}

/* Worker, from pkg_extract_watch: 1 while members ahead are wanted. */
static int
pass_more(void *arg)
{
	struct pass *p = arg;
	int more;

	pthread_mutex_lock(&p->fl->mu);
	more = p->wanted > 0 || p->ahead_dwz > 0 ||
	    (p->budget > 0 && pass_outranked(p, PR_NONE) > 0);
	if (!more)
		pass_close(p);
	pthread_mutex_unlock(&p->fl->mu);
	return more;
}

/*
 * Worker: the end of member fill j's extraction (ok, else err says why
 * when the pass as a whole failed); then the final check and publishing,
 * as for an upstream answer.
 */
static void
job_extracted(struct pass *p, struct job *j, int ok, const char *err)
{
	struct stat st;

	if (!ok || j->fd == -1 || fstat(j->fd, &st) == -1 ||
	    (uint64_t)st.st_size != j->length) {
		j->res = UPSTREAM_FAILED;
		if (j->why[0] == '\0')
			snprintf(j->why, sizeof(j->why), "%.100s: %.100s",
			    p->archive,
			    err[0] != '\0'
				? err
				: "member missing or changed since indexed");
		log_warnx("%s: %s %s: %s", __func__, p->package, j->w.member,
		    j->why);
		return;
	}
	j->written = (uint64_t)st.st_size;
	flight_progress(j->f, j->written);
	j->res = UPSTREAM_OK;
	finish_work(j);
}

/*
 * Worker: the fills that joined p before it began, its lead among them,
 * each answered by the cache (job_lookup) or wanted from p (else from a
 * pass of its own).
 */
static void
pass_begin(struct pass *p, struct index_reader *rd)
{
	struct fill *fl = p->fl;
	struct job *early, *j, *next, *want = NULL;
	int indexed;

	pthread_mutex_lock(&fl->mu);
	p->begun = 1;
	p->budget = fl->d.cfg->package_coextract;
	early = p->early;
	p->early = NULL;
	pthread_mutex_unlock(&fl->mu);
	if (p->lead != NULL && rd != NULL &&
	    (p->lead->found = job_lookup(fl, rd, p->lead)) != 0) {
		p->lead->next = p->answered;
		p->answered = p->lead;
		p->lead = NULL;
	}
	for (j = early; j != NULL; j = next) {
		next = j->next;
		if (rd != NULL && (j->found = job_lookup(fl, rd, j)) != 0) {
			j->next = p->answered;
			p->answered = j;
		} else {
			j->next = want;
			want = j;
		}
	}
	pthread_mutex_lock(&fl->mu);
	for (j = want; j != NULL; j = next) {
		next = j->next;
		/* A member another fill has (as another kind) waits a pass. */
		indexed = pass_member(p, j->w.member) != NULL;
		if (pass_want(p, j) == 0 || (indexed && pass_join(fl, j) == 0))
			continue;
		j->res = UPSTREAM_FAILED;
		snprintf(j->why, sizeof(j->why), "%s",
		    indexed ? "server is shutting down"
			    : "member no longer indexed");
		j->next = p->answered;
		p->answered = j;
	}
	if (p->lead == NULL && p->wanted == 0)
		pass_close(p); /* nothing to extract */
	pthread_mutex_unlock(&fl->mu);
}

/*
 * Worker: the pass.  Every fill that joined it ends in pass_done, on the
 * fills' loop.
 */
static void
pass_work(void *arg)
{
	struct pass *p = arg;
	struct fill *fl = p->fl;
	struct pkg_watch watch = { pass_progress, pass_side, pass_more, p,
		NULL };
	struct index_reader *rd;
	const char *name = strrchr(p->package, '/'), *member = NULL;
	char err[256] = "";
	size_t i;
	int rc, fd = -1;

	p->archive = fl->d.cfg->archive_full_path || name == NULL ? p->package
								  : name + 1;
	rd = index_reader_new(fl->d.idx);
	if (rd != NULL && index_reader_begin(rd) == 0) {
		pass_load(p, rd);
		pass_begin(p, rd);
		index_reader_end(rd);
	} else {
		pass_begin(p, NULL);
	}
	index_reader_free(rd);
	if (p->closed)
		return;
	p->rh = package_rpmhdr(p->package);
	if (p->lead != NULL && job_open_member(p, p->lead) == 0) {
		member = p->lead->w.member;
		fd = p->lead->fd;
	}
	rc = pkg_extract_watch(p->package, member, fd, &fl->lim, &watch, err,
	    sizeof(err));
	metrics_package_pass();
	pthread_mutex_lock(&fl->mu);
	pass_close(p);
	pthread_mutex_unlock(&fl->mu);
	rpmhdr_free(p->rh);
	if (rc != 0)
		log_warnx("%s: %s: %s", __func__, p->package,
		    err[0] != '\0' ? err : "member not found");
	if (p->lead != NULL)
		job_extracted(p, p->lead, member != NULL && rc == 0,
		    rc == -1 ? err : "");
	for (i = 0; i < p->n; i++)
		if (p->m[i].job != NULL)
			job_extracted(p, p->m[i].job,
			    p->m[i].state == PM_TAKEN && p->m[i].side.done == 1,
			    rc == -1 ? err : "");
}

/* The fills' loop: end every fill of the pass. */
static void
pass_done(void *arg)
{
	struct pass *p = arg;
	struct job *j, *next;
	size_t i;

	pass_release(p->fl, p->package);
	if (p->lead != NULL)
		finish_done(p->lead);
	for (i = 0; i < p->n; i++) {
		if (p->m[i].job != NULL)
			finish_done(p->m[i].job);
		free((char *)p->m[i].rec.member);
	}
	for (j = p->answered; j != NULL; j = next) {
		next = j->next;
		if (j->found != 0)
			job_end_found(j, j->found);
		else
			finish_done(j);
	}
	free(p->m);
	free(p);
}

static void
job_begin(struct job *j)
{
	struct fill *fl = j->fl;
	char path[PATH_MAX], err[256];

	j->anext = fl->active;
	if (fl->active != NULL)
		fl->active->aprev = j;
	fl->active = j;
	j->listed = 1;
	if (job_from_cache(j))
		return;
	j->fd = blob_tmp_new(fl->d.bs, path, sizeof(path), err, sizeof(err));
	if (j->fd == -1) {
		log_warnx("%s: %s", __func__, err);
		job_end(j, FLIGHT_FAILED, "cannot store the file");
		return;
	}
	flight_set_file(j->f, j->fd, path);
	if (j->w.store && objstore_usable(fl->tier))
		job_store(j);
	else if (j->w.store_only)
		job_end(j, FLIGHT_NOTFOUND, FILL_NOT_IN_STORE);
	else
		job_fetch(j);
}

/* Ask the upstreams for j, whose temp file is open and empty. */
static void
job_fetch(struct job *j)
{
	struct fill *fl = j->fl;
	enum upstream_result res;

	j->uf = upstream_fetch(fl->us, j->w.path,
	    j->w.xff[0] != '\0' ? j->w.xff : NULL, j->w.via,
	    j->w.ua[0] != '\0' ? j->w.ua : NULL, j->w.limit,
	    fl->d.cfg->max_object_size, &sink, j, &res);
	if (j->uf == NULL) {
		j->res = res;
		snprintf(j->why, sizeof(j->why), "%s",
		    res == UPSTREAM_NOTFOUND ? "not found"
					     : "every upstream is failing");
		if (pool_submit(fl->d.pool, finish_work, fl->d.inbox,
			finish_done, j) == -1)
			job_end(j, FLIGHT_FAILED, "server is shutting down");
	}
}

/* Any thread but under no lock: begin upstream job j on the fills' loop. */
static void
job_queue(struct fill *fl, struct job *j)
{
	pthread_mutex_lock(&fl->mu);
	j->next = fl->queue;
	fl->queue = j;
	pthread_mutex_unlock(&fl->mu);
	event_active(fl->queue_ev, EV_READ, 1);
}

/* upstream_meta_fn: the answers of a metadata query, to its asker. */
static void
meta_answered(void *arg, const struct upstream_meta_answer *answers, unsigned n)
{
	struct fill_meta *m = arg;

	m->done(m, answers, n);
}

static void
fill_queue_cb(evutil_socket_t fd, short what, void *arg)
{
	struct fill *fl = arg;
	struct job *j, *next;
	struct fill_meta *m, *mnext;

	pthread_mutex_lock(&fl->mu);
	j = fl->queue;
	fl->queue = NULL;
	m = fl->meta_queue;
	fl->meta_queue = NULL;
	pthread_mutex_unlock(&fl->mu);
	for (; j != NULL; j = next) {
		next = j->next;
		job_begin(j);
	}
	for (; m != NULL; m = mnext) {
		mnext = m->next;
		if (upstream_metadata(fl->us, m->path,
			m->xff[0] != '\0' ? m->xff : NULL, m->via,
			m->ua[0] != '\0' ? m->ua : NULL,
			fl->d.cfg->metadata_timeout, META_BODY_MAX,
			meta_answered, m) == NULL)
			m->done(m, NULL, 0);
	}
}

void
fill_metadata(struct fill *fl, struct fill_meta *m)
{
	pthread_mutex_lock(&fl->mu);
	m->next = fl->meta_queue;
	fl->meta_queue = m;
	pthread_mutex_unlock(&fl->mu);
	event_active(fl->queue_ev, EV_READ, 1);
}

/* Name a new flight after what it fills: "KIND ID[ ARG][ from PACKAGE]". */
static void
flight_label(struct flight *f, const struct fill_what *w)
{
	char id[BUILDID_HEX_MAX], label[320]; /* cut by flight_set_label */
	const char *pkg = strrchr(w->package, '/');

	buildid_format(&w->id, id);
	snprintf(label, sizeof(label), "%s %s%s%.64s%s%.64s",
	    cache_kind_name(w->kind), id, w->arg[0] != '\0' ? " " : "", w->arg,
	    w->package[0] != '\0' ? " from " : "",
	    pkg != NULL ? pkg + 1 : w->package);
	flight_set_label(f, label);
}

struct flight *
fill_join(struct fill *fl, const struct cache_key *k, int from_package,
    fill_what_fn what, void *arg, int *created)
{
	struct flight *f;
	struct job *j;

	/* A pass meets no flight of its package whose fill has not joined. */
	if (from_package)
		pthread_mutex_lock(&fl->mu);
	f = flight_join(fl->d.ft, k, !from_package, created);
	if (f != NULL && *created) {
		flight_ref(f); /* the fill's */
		if ((j = job_new(fl, f)) == NULL) {
			flight_fail(f, "out of memory");
		} else {
			what(&j->w, arg);
			flight_label(f, &j->w);
			if (!from_package) {
				flight_set_limit(f, j->w.limit);
				job_queue(fl, j);
			} else {
				flight_announce(f, j->w.member_size);
				if (pass_join(fl, j) == -1)
					job_end(j, FLIGHT_FAILED,
					    "server is shutting down");
			}
		}
	}
	if (from_package)
		pthread_mutex_unlock(&fl->mu);
	return f;
}

/*
 * The upstream set's options from the configuration, whose strings they
 * borrow; the arrays are fl's.  -1 when out of memory.
 */
static int
upstream_opts_of(struct fill *fl, const struct config *cfg,
    struct upstream_opts *o)
{
	size_t i;

	memset(o, 0, sizeof(*o));
	if (cfg->nupstreams > 0 &&
	    (fl->ucf = calloc(cfg->nupstreams, sizeof(*fl->ucf))) == NULL)
		return -1;
	if (cfg->nlisten > 0 &&
	    (fl->listeners = calloc(cfg->nlisten, sizeof(char *))) == NULL)
		return -1;
	for (i = 0; i < cfg->nupstreams; i++) {
		const struct config_upstream *cu = &cfg->upstreams[i];

		fl->ucf[i] = (struct upstream_conf){
			.url = cu->url,
			.name = cu->name,
			.enabled = cu->enabled,
			.connect_timeout = cu->connect_timeout,
			.first_byte_timeout = cu->first_byte_timeout,
			.min_rate = cu->min_rate,
			.headers = cu->headers.v,
			.nheaders = cu->headers.n,
		};
	}
	for (i = 0; i < cfg->nlisten; i++)
		fl->listeners[i] = cfg->listen[i].text;
	o->upstreams = fl->ucf;
	o->n = cfg->nupstreams;
	o->stall_timeout = cfg->upstream_stall_timeout;
	o->timeout = cfg->upstream_timeout;
	o->retries = cfg->upstream_retries;
	o->breaker_failures = cfg->breaker_failures;
	o->breaker_backoff = cfg->breaker_backoff;
	o->breaker_backoff_max = cfg->breaker_backoff_max;
	switch (cfg->upstream_redirects) {
	case CONFIG_REDIRECTS_NONE:
		o->redirects = REDIRECT_NONE;
		break;
	case CONFIG_REDIRECTS_SAME_HOST:
		o->redirects = REDIRECT_SAME_HOST;
		break;
	case CONFIG_REDIRECTS_ANY:
		o->redirects = REDIRECT_ANY;
		break;
	}
	o->proxy = cfg->proxy;
	o->ca_file = cfg->ca_file;
	o->user_agent = cfg->user_agent;
	o->listeners = fl->listeners;
	o->nlisteners = cfg->nlisten;
	o->now_ns = clock_mono_ns;
	return 0;
}

int
fill_store_usable(struct fill *fl)
{
	return objstore_usable(fl->tier);
}

int
fill_enabled(const struct fill *fl)
{
	return upstream_count(fl->us) > 0;
}

struct fill *
fill_new(const struct fill_deps *deps, char *err, size_t errlen)
{
	const struct config *cfg = deps->cfg;
	struct upstream_opts uo;
	struct fill *fl;
	size_t i;

	if ((fl = calloc(1, sizeof(*fl))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	fl->d = *deps;
	fl->lim = pkg_default_limits;
	fl->lim.min_free_pct = cfg->min_free_disk;
	fl->lim.room = fill_room;
	fl->lim.room_arg = fl;
	pthread_mutex_init(&fl->mu, NULL);
	fl->negative_ttl = cfg->negative_ttl;
	fl->error_ttl = cfg->error_ttl;
	for (i = 0; i < cfg->nupstreams; i++) {
		const struct config_upstream *u = &cfg->upstreams[i];

		if (!u->enabled)
			continue;
		if (u->negative_ttl < fl->negative_ttl)
			fl->negative_ttl = u->negative_ttl;
		if (u->error_ttl < fl->error_ttl)
			fl->error_ttl = u->error_ttl;
		metrics_upstream_name((unsigned)i, u->name);
	}
	fl->queue_ev = event_new(deps->base, -1, 0, fill_queue_cb, fl);
	fl->rd = index_reader_new(deps->idx);
	obs_cfg = cfg;
	if (upstream_opts_of(fl, cfg, &uo) == -1) {
		snprintf(err, errlen, "out of memory");
		fill_free(fl);
		return NULL;
	}
	fl->us = upstream_set_new(&uo, deps->base, &observer, err, errlen);
	if (fl->queue_ev == NULL || fl->rd == NULL || fl->us == NULL) {
		if (fl->us != NULL)
			snprintf(err, errlen, "out of memory");
		fill_free(fl);
		return NULL;
	}
	if (cfg->store != NULL &&
	    (fl->tier = objstore_new(cfg, deps->base, deps->bs, err, errlen)) ==
		NULL) {
		fill_free(fl);
		return NULL;
	}
	return fl;
}

void
fill_free(struct fill *fl)
{
	struct job *j;
	struct fill_meta *m;

	if (fl == NULL)
		return;
	/* Fills still queued or running end as failures. */
	while ((j = fl->queue) != NULL) {
		fl->queue = j->next;
		job_end(j, FLIGHT_FAILED, "server is shutting down");
	}
	while ((m = fl->meta_queue) != NULL) {
		fl->meta_queue = m->next;
		m->done(m, NULL, 0);
	}
	while (fl->active != NULL)
		job_end(fl->active, FLIGHT_FAILED, "server is shutting down");
	upstream_set_free(fl->us);
	objstore_free(fl->tier);
	if (fl->queue_ev != NULL)
		event_free(fl->queue_ev);
	index_reader_free(fl->rd);
	free(fl->ucf);
	free(fl->listeners);
	pthread_mutex_destroy(&fl->mu);
	free(fl);
}
