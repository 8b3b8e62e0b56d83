/*
 * daemon/fill.c: one fill per key, from the upstreams into the cache.
 *
 * A fill (a "job") lives on the main loop.  It begins by looking again in
 * the cache and the negative entries: a request may have missed both just
 * before another fill of the same key published and left the table, and
 * asking upstream again would be a waste.  Then it opens a temp file and
 * asks every upstream (fetchers/upstream.c).  Bytes go to the temp file and
 * the flight tells its readers; readers stream them as they arrive.
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
 * complete-looking wrong file; only a verified file is published.  Sections
 * and sources forwarded from upstream are raw bytes that cannot be checked
 * this way; they are cached as the upstream sent them.
 *
 * The end of a fill that found nothing writes a negative entry, on a worker,
 * before the flight leaves the table, so that the next request for the key
 * finds the entry instead of starting another fill.
 */
#include "daemon/fill.h"

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
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/pool.h"
#include "fetchers/upstream.h"
#include "indexer/elf.h"
#include "indexer/package.h"
#include "indexer/rpmhdr.h"

/* An IMA signature in hex, and the header lines of a package member. */
#define RPM_SIG_MAX 2048
#define MEMBER_HEADERS_MAX (2 * PATH_MAX + RPM_SIG_MAX + 128)

/* Bytes read back from the temp file for the early build-id check. */
#define PREFIX_CHECK (64u << 10)

struct job {
	struct fill *fl;
	struct job *next; /* in the start queue */
	struct job *aprev, *anext; /* among the running jobs */
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
	char why[256];
};

struct fill {
	struct fill_deps d;
	struct upstream_set *us;
	struct index_reader *rd;
	unsigned negative_ttl; /* the shortest over the upstreams */
	unsigned error_ttl;
	pthread_mutex_t mu;
	struct job *queue;
	struct event *queue_ev;
	struct job *active; /* begun and not ended, on the loop's thread */
};

static void job_end(struct job *j, enum flight_state st, const char *why);

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

static void
obs_error(unsigned i, enum upstream_err kind)
{
	metrics_upstream_error(i, (enum metrics_uperr)kind);
	if (kind == UPSTREAM_ERR_CONTENT)
		metrics_upstream_verify_failure(i);
}

static void
obs_breaker(unsigned i, enum upstream_breaker state)
{
	metrics_upstream_breaker(i, (int)state);
}

static const struct upstream_observer observer = {
	obs_request,
	obs_latency,
	obs_error,
	obs_breaker,
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
		log_info("%s: %s%s: not an ELF file with the build-id asked "
			 "for",
		    __func__, h->url, j->w.path);
		return -1;
	}
	if (h->length != UINT64_MAX &&
	    h->length > j->fl->d.cfg->max_object_size) {
		log_info("%s: %s%s: %llu bytes is over max-object-size",
		    __func__, h->url, j->w.path, (unsigned long long)h->length);
		return -1;
	}
	j->has_upstream = 1;
	j->upstream = h->upstream;
	j->mtime = h->mtime >= 0 ? h->mtime : (int64_t)time(NULL);
	j->length = h->length;
	/* ELF waits for early_check() before readers learn the length. */
	if (flight_set_head(j->f,
		is_elf_kind(j->w.kind) ? UINT64_MAX : h->length, j->mtime,
		h->headers, h->headers_len, h->url) == -1)
		return -1;
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
	if (j->length != UINT64_MAX && (rc == 1 || !whole))
		flight_set_length(j->f, j->length);
	return 0;
}

static int
sink_data(void *arg, const void *buf, size_t len)
{
	struct job *j = arg;
	const char *p = buf;
	ssize_t n;
	size_t done = 0;

	while (done < len) {
		n = pwrite(j->fd, p + done, len - done,
		    (off_t)(j->written + done));
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			log_warn("%s: %s", __func__, flight_tmp_path(j->f));
			return -1;
		}
		done += (size_t)n;
	}
	j->written += len;
	flight_progress(j->f, j->written);
	if (is_elf_kind(j->w.kind) && !j->checked && early_check(j) == -1) {
		log_info("%s: %s: build-id differs from the one asked for",
		    __func__, j->w.path);
		return -1;
	}
	return 0;
}

/*
 * Worker: the final check of the written bytes of flight f, for (id, kind,
 * arg), then publish them.  0 when they verified (published, or too big to
 * cache); -1 when they are wrong, with why.
 */
static int
verify_publish(struct fill *fl, struct flight *f, int fd,
    const struct buildid *id, enum cache_kind kind, const char *arg,
    uint64_t written, int64_t mtime, char *why, size_t whylen)
{
	struct elf_info info;
	struct blob_info bi;
	char err[256];
	int64_t now = time(NULL);
	int rc;

	if (is_elf_kind(kind)) {
		rc = elf_read_info(fd, &info, err, sizeof(err));
		if (rc != 0 || !buildid_equal(&info.id, id) ||
		    (info.kinds &
			(kind == CACHE_DEBUGINFO ? ELF_KIND_DEBUGINFO
						 : ELF_KIND_EXECUTABLE)) == 0) {
			snprintf(why, whylen, "%.100s: wrong content (%.100s)",
			    flight_source(f),
			    rc == 0        ? "another build-id or kind"
				: rc == -1 ? err
					   : "not ELF");
			return -1;
		}
	}
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
	rc = blob_publish(fl->d.bs, flight_key(f), flight_tmp_path(f), &bi, now,
	    err, sizeof(err));
	if (rc == -1)
		log_warnx("%s: %s", __func__, err);
	else if (rc == BLOB_TOO_BIG)
		log_info("%s: %s not cached: larger than the cache", __func__,
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
	int64_t now = time(NULL);
	int rc;

	if (j->res == UPSTREAM_OK) {
		if (verify_publish(fl, j->f, j->fd, &j->w.id, j->w.kind,
			j->w.arg, j->written, j->mtime, j->why,
			sizeof(j->why)) == 0) {
			j->verified = 1;
			return;
		}
		j->wrong = 1;
	}
	if (j->w.package[0] != '\0')
		return; /* the package is indexed: no miss to remember */
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

	if (j->verified) {
		job_end(j, FLIGHT_READY, NULL);
	} else if (j->wrong) {
		log_warnx("%s: %s", __func__, j->why);
		if (j->has_upstream)
			upstream_blame(j->fl->us, j->upstream);
		job_end(j, FLIGHT_FAILED, j->why);
	} else if (j->res == UPSTREAM_NOTFOUND) {
		job_end(j, FLIGHT_NOTFOUND, "not found");
	} else {
		job_end(j, FLIGHT_FAILED, j->why);
	}
}

static void
sink_done(void *arg, enum upstream_result res, const char *why)
{
	struct job *j = arg;

	j->uf = NULL;
	j->res = res;
	snprintf(j->why, sizeof(j->why), "%s", why != NULL ? why : "");
	if (res == UPSTREAM_OK && j->length != UINT64_MAX &&
	    j->length != j->written) {
		j->res = UPSTREAM_FAILED;
		snprintf(j->why, sizeof(j->why), "short body");
	}
	if (res != UPSTREAM_OK)
		log_info("%s: %s: %s", __func__, j->w.path,
		    res == UPSTREAM_NOTFOUND ? "not found upstream" : j->why);
	if (pool_submit(j->fl->d.pool, finish_work, j->fl->d.inbox, finish_done,
		j) == -1)
		job_end(j, FLIGHT_FAILED, "server is shutting down");
}

static const struct upstream_sink sink = {
	sink_accept,
	sink_data,
	sink_done,
};

/* ---------------------------------------------------------------- jobs */

static void
job_end(struct job *j, enum flight_state st, const char *why)
{
	if (j->uf != NULL)
		upstream_cancel(j->uf);
	flight_end(j->f, st, why);
	flight_detach(j->f);
	flight_unref(j->f);
	if (j->aprev != NULL)
		j->aprev->anext = j->anext;
	else if (j->fl->active == j)
		j->fl->active = j->anext;
	if (j->anext != NULL)
		j->anext->aprev = j->aprev;
	free(j);
}

/* Serve the flight from what the cache learnt since the request missed. */
static int
job_from_cache(struct job *j)
{
	struct fill *fl = j->fl;
	struct blob_info bi;
	struct neg_entry ne;
	int rc, fd, found = 0;

	if (fl->rd == NULL || index_reader_begin(fl->rd) == -1)
		return 0;
	rc = blob_lookup(fl->rd, &j->key, &bi);
	if (rc == 0 && (fd = blob_open(fl->d.bs, &j->key)) != -1) {
		flight_set_file(j->f, fd, NULL);
		flight_set_head(j->f, bi.size, bi.mtime, bi.headers,
		    bi.headers_len, bi.source);
		flight_progress(j->f, bi.size);
		found = 1;
	} else if (neg_get(fl->rd, &j->key, time(NULL), &ne) == 0) {
		found = ne.kind == NEG_NOTFOUND ? 2 : 3;
	}
	index_reader_end(fl->rd);
	if (found == 1) {
		j->written = bi.size;
		job_end(j, FLIGHT_READY, NULL);
	} else if (found > 1) {
		job_end(j, found == 2 ? FLIGHT_NOTFOUND : FLIGHT_FAILED,
		    "a recent attempt failed");
	}
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

	j->written = end;
	flight_progress(j->f, end);
	if (is_elf_kind(j->w.kind) && !j->checked && early_check(j) == -1)
		j->checked = 1; /* wrong: the final check will say so */
}

/*
 * The X-DEBUGINFOD-* lines of a package member: ARCHIVE (as archive shows
 * the package), FILE, and IMASIGNATURE when rh, the package's RPM header
 * (NULL for other packages), signs that file.  Their length, or -1 when
 * they do not fit.
 */
static int
member_headers(const struct rpmhdr *rh, const char *archive, const char *member,
    char *buf, size_t len)
{
	char sig[RPM_SIG_MAX], err[256];
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
	char err[256];
	int fd;

	if ((fd = open(package, O_RDONLY | O_CLOEXEC)) == -1)
		return NULL;
	if (rpmhdr_open(fd, &rh, err, sizeof(err)) == -1)
		log_info("%s: %s", package, err);
	close(fd);
	return rh;
}

/* The other members of a package filled in the same pass. */
struct side {
	struct flight *f;
	struct pkg_rec rec; /* member is ps's */
	enum cache_kind kind;
};

struct sides {
	struct fill *fl;
	const struct job *j;
	const char *archive; /* as X-DEBUGINFOD-ARCHIVE shows it */
	const struct rpmhdr *rh; /* the package's, when an RPM signs files */
	struct side *v; /* max of each, from package-coextract */
	struct pkg_side *ps; /* member strings malloc'ed */
	size_t n, max;
	int dwz; /* this walk takes the dwz alt files, the next the rest */
};

/*
 * A member of the package being extracted: fill it in the same pass when
 * nothing has it (not cached, no fill running), as a flight of its own
 * that requests for it join.
 */
static int
side_cb(const struct pkg_rec *r, void *arg)
{
	struct sides *sd = arg;
	struct fill *fl = sd->fl;
	struct side *s = &sd->v[sd->n];
	enum cache_kind kind =
	    r->kinds & ELF_KIND_DEBUGINFO ? CACHE_DEBUGINFO : CACHE_EXECUTABLE;
	char path[PATH_MAX], headers[MEMBER_HEADERS_MAX], err[256];
	struct cache_key k;
	char *member;
	size_t i;
	int created, fd, n;

	if (sd->n == sd->max)
		return 1;
	if (strcmp(r->member, sd->j->w.member) == 0 ||
	    (strncmp(r->member, PKG_DWZ_DIR, strlen(PKG_DWZ_DIR)) == 0) !=
		sd->dwz)
		return 0;
	for (i = 0; i < sd->n; i++)
		if (strcmp(sd->ps[i].member, r->member) == 0)
			return 0; /* the other kind of the same file */
	if ((member = strdup(r->member)) == NULL)
		return 1;
	cache_key_make(&k, &r->id, kind, "");
	if ((s->f = flight_join(fl->d.ft, &k, &created)) == NULL) {
		free(member);
		return 1; /* the fill limit: enough for this pass */
	}
	if (!created) {
		flight_unref(s->f);
		free(member);
		return 0;
	}
	n = member_headers(sd->rh, sd->archive, r->member, headers,
	    sizeof(headers));
	fd = n < 0
	    ? -1
	    : blob_tmp_new(fl->d.bs, path, sizeof(path), err, sizeof(err));
	if (fd != -1)
		flight_set_file(s->f, fd, path);
	if (fd == -1 ||
	    flight_set_head(s->f, UINT64_MAX, r->mtime, headers, (size_t)n,
		sd->j->w.package) == -1) {
		flight_end(s->f, FLIGHT_FAILED, "cannot store the file");
		flight_detach(s->f);
		flight_unref(s->f);
		free(member);
		return 1;
	}
	s->rec = *r;
	s->rec.member = member;
	s->kind = kind;
	sd->ps[sd->n].member = member;
	sd->ps[sd->n].fd = fd;
	sd->ps[sd->n].done = 0;
	sd->n++;
	return 0;
}

/*
 * Worker: open the side fills of j's package, up to package-coextract,
 * the package's dwz alt files first.
 */
static struct sides *
sides_begin(struct fill *fl, const struct job *j, const char *archive,
    const struct rpmhdr *rh)
{
	struct index_reader *rd;
	struct sides *sd;
	size_t max = fl->d.cfg->package_coextract;

	if (!is_elf_kind(j->w.kind) || max == 0 ||
	    (sd = calloc(1, sizeof(*sd))) == NULL)
		return NULL;
	sd->fl = fl;
	sd->j = j;
	sd->archive = archive;
	sd->rh = rh;
	sd->max = max;
	sd->v = calloc(max, sizeof(*sd->v));
	sd->ps = calloc(max, sizeof(*sd->ps));
	if (sd->v != NULL && sd->ps != NULL &&
	    (rd = index_reader_new(fl->d.idx)) != NULL) {
		/* The dwz alt files first: every debug file may need them. */
		if (index_reader_begin(rd) == 0) {
			for (sd->dwz = 1; sd->dwz >= 0; sd->dwz--)
				pkgidx_package_members(rd, j->w.package,
				    side_cb, sd);
			index_reader_end(rd);
		}
		index_reader_free(rd);
	}
	return sd;
}

/* Worker: verify, publish and end each side fill. */
static void
sides_end(struct sides *sd)
{
	struct side *s;
	struct stat st;
	char why[256];
	size_t i;
	int ok;

	for (i = 0; i < sd->n; i++) {
		s = &sd->v[i];
		ok = sd->ps[i].done == 1 && fstat(sd->ps[i].fd, &st) == 0 &&
		    (uint64_t)st.st_size == s->rec.size;
		if (ok) {
			flight_progress(s->f, s->rec.size);
			ok = verify_publish(sd->fl, s->f, sd->ps[i].fd,
				 &s->rec.id, s->kind, "", s->rec.size,
				 s->rec.mtime, why, sizeof(why)) == 0;
			if (!ok)
				log_warnx("%s: %s", __func__, why);
		}
		flight_end(s->f, ok ? FLIGHT_READY : FLIGHT_FAILED,
		    ok ? NULL : "not extracted with its package");
		flight_detach(s->f);
		flight_unref(s->f);
		free((char *)sd->ps[i].member);
	}
	free(sd->v);
	free(sd->ps);
	free(sd);
}

/*
 * Worker: extract the member into the temp file, streamed to the readers
 * as it comes out, then verify and publish as for an upstream answer.
 */
static void
package_work(void *arg)
{
	struct job *j = arg;
	const struct config *cfg = j->fl->d.cfg;
	struct rpmhdr *rh;
	struct sides *sd;
	const char *name = strrchr(j->w.package, '/');
	char headers[MEMBER_HEADERS_MAX], err[256] = "";
	struct stat st;
	int n;

	name = cfg->archive_full_path || name == NULL ? j->w.package : name + 1;
	rh = package_rpmhdr(j->w.package);
	n = member_headers(rh, name, j->w.member, headers, sizeof(headers));
	j->mtime = j->w.member_mtime;
	j->length = j->w.member_size;
	/* ELF waits for early_check() before readers learn the length. */
	if (n < 0 ||
	    flight_set_head(j->f,
		is_elf_kind(j->w.kind) ? UINT64_MAX : j->length, j->mtime,
		headers, (size_t)n, j->w.package) == -1) {
		rpmhdr_free(rh);
		j->res = UPSTREAM_FAILED;
		snprintf(j->why, sizeof(j->why), "out of memory");
		return;
	}
	/* The package's other members come out of the same pass. */
	sd = sides_begin(j->fl, j, name, rh);
	rpmhdr_free(rh); /* the headers of every fill are made by now */
	if (sd != NULL)
		sd->rh = NULL;
	n = pkg_extract_watch(j->w.package, j->w.member, j->fd,
	    &pkg_default_limits, package_progress, j,
	    sd != NULL ? sd->ps : NULL, sd != NULL ? sd->n : 0, err,
	    sizeof(err));
	if (sd != NULL)
		sides_end(sd);
	if (n != 0 || fstat(j->fd, &st) == -1 ||
	    (uint64_t)st.st_size != j->length) {
		j->res = UPSTREAM_FAILED;
		snprintf(j->why, sizeof(j->why), "%.100s: %.100s", name,
		    err[0] != '\0' ? err
				   : "member missing or changed since indexed");
		log_warnx("%s: %s %s: %s", __func__, j->w.package, j->w.member,
		    j->why);
		return;
	}
	j->written = (uint64_t)st.st_size;
	flight_progress(j->f, j->written);
	j->res = UPSTREAM_OK;
	finish_work(j);
}

static void
job_begin(struct job *j)
{
	struct fill *fl = j->fl;
	char path[PATH_MAX], err[256];
	enum upstream_result res;

	j->anext = fl->active;
	if (fl->active != NULL)
		fl->active->aprev = j;
	fl->active = j;
	if (job_from_cache(j))
		return;
	j->fd = blob_tmp_new(fl->d.bs, path, sizeof(path), err, sizeof(err));
	if (j->fd == -1) {
		log_warnx("%s: %s", __func__, err);
		job_end(j, FLIGHT_FAILED, "cannot store the file");
		return;
	}
	flight_set_file(j->f, j->fd, path);
	if (j->w.package[0] != '\0') {
		if (pool_submit(fl->d.pool, package_work, fl->d.inbox,
			finish_done, j) == -1)
			job_end(j, FLIGHT_FAILED, "server is shutting down");
		return;
	}
	j->uf = upstream_fetch(fl->us, j->w.path,
	    j->w.xff[0] != '\0' ? j->w.xff : NULL, j->w.via,
	    j->w.ua[0] != '\0' ? j->w.ua : NULL, fl->d.cfg->max_object_size,
	    &sink, j, &res);
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

static void
fill_queue_cb(evutil_socket_t fd, short what, void *arg)
{
	struct fill *fl = arg;
	struct job *j, *next;

	pthread_mutex_lock(&fl->mu);
	j = fl->queue;
	fl->queue = NULL;
	pthread_mutex_unlock(&fl->mu);
	for (; j != NULL; j = next) {
		next = j->next;
		job_begin(j);
	}
}

void
fill_start(struct fill *fl, struct flight *f, const struct fill_what *w)
{
	struct job *j;

	if ((j = calloc(1, sizeof(*j))) == NULL) {
		flight_end(f, FLIGHT_FAILED, "out of memory");
		flight_detach(f);
		flight_unref(f);
		return;
	}
	j->fl = fl;
	j->f = f;
	j->w = *w;
	j->key = *flight_key(f);
	j->fd = -1;
	pthread_mutex_lock(&fl->mu);
	j->next = fl->queue;
	fl->queue = j;
	pthread_mutex_unlock(&fl->mu);
	event_active(fl->queue_ev, EV_READ, 1);
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
	struct fill *fl;
	size_t i;

	if ((fl = calloc(1, sizeof(*fl))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	fl->d = *deps;
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
		metrics_upstream_name((unsigned)i, u->url);
	}
	fl->queue_ev = event_new(deps->base, -1, 0, fill_queue_cb, fl);
	fl->rd = index_reader_new(deps->idx);
	fl->us = upstream_set_new(cfg, deps->base, &observer, err, errlen);
	if (fl->queue_ev == NULL || fl->rd == NULL || fl->us == NULL) {
		if (fl->us != NULL)
			snprintf(err, errlen, "out of memory");
		fill_free(fl);
		return NULL;
	}
	return fl;
}

void
fill_free(struct fill *fl)
{
	struct job *j;

	if (fl == NULL)
		return;
	/* Fills still queued or running end as failures. */
	while ((j = fl->queue) != NULL) {
		fl->queue = j->next;
		job_end(j, FLIGHT_FAILED, "server is shutting down");
	}
	while (fl->active != NULL)
		job_end(fl->active, FLIGHT_FAILED, "server is shutting down");
	upstream_set_free(fl->us);
	if (fl->queue_ev != NULL)
		event_free(fl->queue_ev);
	index_reader_free(fl->rd);
	pthread_mutex_destroy(&fl->mu);
	free(fl);
}
