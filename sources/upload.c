/*
 * sources/upload.c: PUT /buildid/ID/debuginfo and /executable (upload.h).
 *
 * The connection's thread receives the body into a temp file
 * (conn_recv_body) and a worker verifies it (ELF, the build-id, the
 * kind).  Then the upload is judged against what serving the id gives
 * now, by the request path itself: the connection's thread asks for the
 * id as an internal client that wants whole files and judges
 * (resolve_client.judge: every source of sources/table.c in its order,
 * the upstreams too, and no remembered miss taken for an answer).  A file
 * from any source is compared with the upload on a worker: the same
 * bytes are a 200 (a copy the cache holds becomes the upload, kept from
 * then on), other bytes a 409 that names where the served ones come
 * from.  Nothing anywhere, every source having answered, is the upload's
 * to fill: it is published (201) and the id's remembered misses go.  A
 * source that could not answer (a failure, a breaker open, repositories
 * not ready: resolve_answer.unasked) leaves the upload unjudged: a 503
 * with Retry-After that names it, and nothing is stored.
 *
 * The publish is atomic with the judgement: blob_publish stores an upload
 * only where the key has no entry, or over the cached copy it compared,
 * in the index's write transaction, and says when another entry came
 * meanwhile (a fill that landed after the judgement, an upload of the
 * same id at the same time); the upload is then judged against that
 * entry, and published again when it was a cached copy of the same
 * bytes, PUBLISH_ROUNDS times at most.  So of uploads of one key at most
 * one is stored, a fill never replaces an upload (blob_publish), and an
 * upload never replaces a fill of other bytes.  What a publish cannot
 * see is a local file or package indexed after the judgement: the local
 * and package steps come before the cache and serve it from then on.
 *
 * Threads: the body, the judgement's walk and the answer on the
 * connection's loop; verification, comparison and publishing on workers.
 * The upload owns its temp file until blob_publish takes it, and the file
 * the judgement gave until the comparison is done.
 */
#include "sources/upload.h"

#include <sys/stat.h>

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/blobstore.h"
#include "cache/index.h"
#include "cache/negative.h"
#include "conf/config.h"
#include "daemon/clock.h"
#include "daemon/http.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/pool.h"
#include "daemon/route.h"
#include "indexer/elf.h"
#include "resolver/resolve.h"

/* Entries met one after another before the upload gives up (a 503). */
#define PUBLISH_ROUNDS 4
/* Retry-After of an upload that could not be judged, unless told. */
#define UNJUDGED_RETRY_AFTER 30

struct upload {
	const struct upload_deps *d;
	struct resolve_thread *th;
	const struct resolve_deps *rd; /* the request's */
	struct conn *c;
	struct route rt; /* what was PUT: the judgement asks for it */
	struct resolve_origin o; /* the uploader, as upstreams are told */
	enum cache_kind kind;
	struct cache_key key;
	char hex[BUILDID_HEX_MAX];
	char tmp[4096];
	int fd;
	uint64_t size;
	struct event *ev; /* the judgement's answer, off the resolver's stack */
	/* The judgement's answer. */
	enum resolve_answer_kind got;
	enum answer_outcome outcome;
	unsigned seconds;
	char why[256];
	char unasked[256];
	char by[32]; /* the table's source that gave it; "" none */
	char source[256]; /* where its file came from (a URL, a package) */
	int found; /* the file served, or -1 */
	uint64_t found_off, found_size;
	void (*end)(void *); /* gives the judgement's request back */
	void *end_arg;
	/* The answer. */
	int status;
	enum metrics_upload result;
	unsigned retry; /* Retry-After of a 503; 0 none */
	char text[512];
};

/* The judgement is done with: its file and its request given back. */
static void
judgement_release(struct upload *u)
{
	void (*fn)(void *) = u->end;

	u->end = NULL;
	if (u->found != -1) {
		close(u->found);
		u->found = -1;
	}
	if (fn != NULL)
		fn(u->end_arg);
}

static void
upload_free(struct upload *u)
{
	judgement_release(u);
	if (u->ev != NULL)
		event_free(u->ev);
	if (u->fd != -1)
		close(u->fd);
	if (u->tmp[0] != '\0')
		unlink(u->tmp);
	free(u);
}

static void answer(struct upload *u, int status, enum metrics_upload result,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void
answer(struct upload *u, int status, enum metrics_upload result,
    const char *fmt, ...)
{
	va_list ap;

	u->status = status;
	u->result = result;
	va_start(ap, fmt);
	vsnprintf(u->text, sizeof(u->text), fmt, ap);
	va_end(ap);
}

/* 503, nothing stored: the upload cannot be judged now (why). */
static void
unjudged(struct upload *u, const char *why, unsigned retry)
{
	answer(u, 503, METRICS_UPLOAD_UNJUDGED, "%s: cannot be judged now: %s",
	    u->hex, why);
	u->retry = retry != 0 ? retry : UNJUDGED_RETRY_AFTER;
}

/*
 * 1 when the upload's bytes and the size bytes at off in fd are the same;
 * 0 when not; -1 when one cannot be read.
 */
static int
same_bytes(const struct upload *u, int fd, uint64_t off, uint64_t size)
{
	char ba[65536], bb[65536];
	uint64_t done = 0;
	ssize_t na, nb;
	size_t want;

	if (size != u->size)
		return 0;
	while (done < size) {
		want = size - done < sizeof(ba) ? (size_t)(size - done)
						: sizeof(ba);
		na = pread(u->fd, ba, want, (off_t)done);
		nb = pread(fd, bb, want, (off_t)(off + done));
		if (na < 0 || nb < 0)
			return -1;
		if (na != nb || memcmp(ba, bb, (size_t)na) != 0)
			return 0;
		if (na == 0)
			return -1; /* shorter than it says */
		done += (uint64_t)na;
	}
	return 1;
}

/* The last part of a path. */
static const char *
base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash != NULL && slash[1] != '\0' ? slash + 1 : path;
}

/*
 * Where the bytes the judgement found come from, in words, for a 409:
 * the table's source u->by, and u->source (a cache entry's: what filled
 * it).
 */
static void
served_from(const struct upload *u, char *out, size_t len)
{
	const char *by = u->by, *src = u->source;

	if (strcmp(by, "local") == 0)
		snprintf(out, len, "a local file");
	else if (strcmp(by, "package") == 0 || strcmp(by, "repo") == 0)
		snprintf(out, len, "package %s", base_name(src));
	else if (strcmp(by, "objstore") == 0)
		snprintf(out, len, "the object store");
	else if (strcmp(by, "upstream") == 0)
		snprintf(out, len, "upstream %s", src);
	else if (strcmp(by, "cache") == 0 &&
	    strcmp(src, BLOB_UPLOAD_SOURCE) == 0)
		snprintf(out, len, "an earlier upload");
	else if (strcmp(by, "cache") == 0 && src[0] != '\0')
		snprintf(out, len, "the cache (a copy from %s)",
		    src[0] == '/' ? base_name(src) : src);
	else
		snprintf(out, len, "%s", by[0] != '\0' ? by : "this server");
}

/* The sources named by (resolve_answer.by), in words, for a 503. */
static const char *
sources_named(const char *by)
{
	static const struct {
		const char *by, *words;
	} names[] = {
		{ "local", "the local files" },
		{ "cache", "the cache" },
		{ "repo", "the repositories" },
		{ "package", "the packages" },
		{ "objstore", "the object store" },
		{ "upstream", "the upstreams" },
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(by, names[i].by) == 0)
			return names[i].words;
	return "this server";
}

/*
 * Worker: the key's entry now: 0 with *uploaded and what filled it
 * (u->source, u->by "cache"); INDEX_NOTFOUND; -1 when it cannot be read.
 */
static int
entry_info(struct upload *u, int *uploaded)
{
	struct index_reader *rd;
	struct blob_info bi;
	int rc = -1;

	if ((rd = index_reader_new(u->d->idx)) == NULL)
		return -1;
	if (index_reader_begin(rd) == 0) {
		if ((rc = blob_lookup(rd, &u->key, &bi)) == 0) {
			*uploaded = bi.uploaded;
			snprintf(u->source, sizeof(u->source), "%s", bi.source);
			snprintf(u->by, sizeof(u->by), "cache");
		}
		index_reader_end(rd);
	}
	index_reader_free(rd);
	return rc;
}

/*
 * Worker: the key's entry now, against the upload: 0 with *same, as
 * entry_info says, and the identity of its file (*dev, *ino);
 * INDEX_NOTFOUND when there is none (any more); -1 when it cannot be read.
 */
static int
entry_judge(struct upload *u, int *same, int *uploaded, uint64_t *dev,
    uint64_t *ino)
{
	struct stat st;
	int rc, fd;

	if ((rc = entry_info(u, uploaded)) != 0)
		return rc;
	if ((fd = blob_open(u->d->bs, &u->key)) == -1)
		return INDEX_NOTFOUND; /* a purge got there first */
	if (fstat(fd, &st) == -1) {
		close(fd);
		return -1;
	}
	*dev = (uint64_t)st.st_dev;
	*ino = (uint64_t)st.st_ino;
	rc = same_bytes(u, fd, 0, (uint64_t)st.st_size);
	close(fd);
	if (rc == -1)
		return -1;
	*same = rc;
	return 0;
}

/* 409: other bytes are served, from where u->by and u->source say. */
static void
conflict(struct upload *u)
{
	char from[320];

	served_from(u, from, sizeof(from));
	answer(u, 409, METRICS_UPLOAD_CONFLICT,
	    "%s: other bytes are served under this build-id, from %s", u->hex,
	    from);
}

/*
 * Worker: publish the upload where the key has no entry, or over the
 * cached copy whose file is (dev, ino), whose bytes are the upload's
 * (same).  An entry that came meanwhile judges the upload instead: other
 * bytes 409, an upload of the same bytes 200, a cached copy of them is
 * replaced in the next round.
 */
static void
publish(struct upload *u, uint64_t dev, uint64_t ino, int same)
{
	struct blob_info bi;
	char err[256];
	uint64_t negs = 0;
	int64_t now;
	int rc, round, uploaded = 0;

	for (round = 0; round < PUBLISH_ROUNDS; round++) {
		now = clock_now();
		memset(&bi, 0, sizeof(bi));
		bi.size = u->size;
		bi.mtime = now;
		bi.id = u->rt.id;
		bi.kind = u->kind;
		bi.arg = "";
		bi.source = BLOB_UPLOAD_SOURCE;
		bi.uploaded = 1;
		bi.replaces_dev = dev;
		bi.replaces_ino = ino;
		rc = blob_publish(u->d->bs, &u->key, u->tmp, &bi, now, err,
		    sizeof(err));
		if (rc != BLOB_EXISTS)
			break;
		/* An entry came meanwhile: the upload against it. */
		rc = entry_judge(u, &same, &uploaded, &dev, &ino);
		if (rc == INDEX_NOTFOUND) {
			dev = ino = 0; /* gone again */
			continue;
		}
		if (rc == -1) {
			unjudged(u, "cannot read the cache", 0);
			return;
		}
		if (!same) {
			conflict(u);
			return;
		}
		if (uploaded) {
			answer(u, 200, METRICS_UPLOAD_SAME,
			    "%s: these bytes are served already", u->hex);
			return;
		}
	}
	if (round == PUBLISH_ROUNDS) {
		unjudged(u, "its entry keeps changing", 0);
		return;
	}
	u->tmp[0] = '\0'; /* blob_publish took it, or removed it */
	if (rc == BLOB_TOO_BIG) {
		answer(u, 507, METRICS_UPLOAD_REJECTED, "%s",
		    "uploads would exceed upload-size");
		return;
	}
	if (rc != 0) {
		log_warnx("%s: %s", __func__, err);
		answer(u, 503, METRICS_UPLOAD_REJECTED, "%s",
		    "cannot store the upload");
		return;
	}
	/* Every remembered miss of the id: sections and sources too. */
	if (neg_purge(u->d->idx, &u->rt.id, &negs, err, sizeof(err)) == -1)
		log_warnx("%s: %s", __func__, err);
	if (same)
		answer(u, 200, METRICS_UPLOAD_SAME,
		    "%s: these bytes were cached; now kept as an upload",
		    u->hex);
	else
		answer(u, 201, METRICS_UPLOAD_CREATED, "%s: stored", u->hex);
}

/*
 * Worker: the judgement's file (if any) against the upload, then the
 * publish.  A local file is served before the cache: when it holds the
 * same bytes they are served already, and nothing is kept.
 */
static void
judge_work(void *arg)
{
	struct upload *u = arg;
	struct stat st;
	int same, uploaded;

	if (u->found == -1) {
		publish(u, 0, 0, 0);
		return;
	}
	same = same_bytes(u, u->found, u->found_off, u->found_size);
	if (same == -1) {
		unjudged(u, "cannot read the file served", 0);
		return;
	}
	if (!same) {
		/* A hit's entry says what filled it. */
		if (strcmp(u->by, "cache") == 0)
			entry_info(u, &uploaded);
		conflict(u);
		return;
	}
	if (strcmp(u->by, "local") == 0) {
		answer(u, 200, METRICS_UPLOAD_SAME,
		    "%s: these bytes are served already", u->hex);
		return;
	}
	/* A copy in the cache (a hit, a fill just made) becomes the upload. */
	if (fstat(u->found, &st) == -1) {
		unjudged(u, "cannot read the file served", 0);
		return;
	}
	publish(u, (uint64_t)st.st_dev, (uint64_t)st.st_ino, 1);
}

/* The loop: the answer, and the end of the upload. */
static void
upload_send(struct upload *u)
{
	metrics_upload(u->result, u->size);
	conn_set_result(u->c, u->status < 300 ? "UPLOAD" : "ERROR", "upload");
	if (u->status < 300) {
		size_t n = strlen(u->text);

		u->text[n] = '\n';
		conn_send_text(u->c, u->status, "text/plain", u->text, n + 1);
	} else if (u->retry != 0) {
		conn_send_retry(u->c, u->status, u->text, u->retry);
	} else {
		conn_send_error(u->c, u->status, u->text);
	}
	upload_free(u);
}

static void
judge_done(void *arg)
{
	upload_send(arg);
}

/* 1 when the judgement's outcome is that no source has the id. */
static int
judged_absent(const struct upload *u)
{
	return u->unasked[0] == '\0' &&
	    (u->outcome == ANSWER_NOT_FOUND ||
		u->outcome == ANSWER_FILL_NOT_FOUND);
}

/* The loop, off the resolver's stack: what the judgement's answer means. */
static void
judge_answered_cb(evutil_socket_t fd, short what, void *arg)
{
	struct upload *u = arg;
	char why[600];

	(void)fd;
	(void)what;
	if (u->got == RESOLVE_OUTCOME && !judged_absent(u)) {
		judgement_release(u);
		if (u->unasked[0] != '\0')
			snprintf(why, sizeof(why), "%s", u->unasked);
		else
			snprintf(why, sizeof(why), "%s did not answer (%s)",
			    sources_named(u->by), u->why);
		unjudged(u, why, u->seconds);
		upload_send(u);
		return;
	}
	if (pool_submit(u->d->pool, judge_work, conn_inbox(u->c), judge_done,
		u) == -1) {
		judgement_release(u);
		answer(u, 503, METRICS_UPLOAD_REJECTED, "%s",
		    "server is shutting down");
		upload_send(u);
	}
}

/* The judgement's answer (struct resolve_client_ops), on u's loop. */
static void
judge_answer(void *arg, const struct resolve_answer *a)
{
	struct upload *u = arg;

	u->got = a->kind;
	u->outcome = a->outcome;
	u->seconds = a->seconds;
	snprintf(u->why, sizeof(u->why), "%s", a->why != NULL ? a->why : "");
	snprintf(u->unasked, sizeof(u->unasked), "%s",
	    a->unasked != NULL ? a->unasked : "");
	snprintf(u->by, sizeof(u->by), "%s", a->by != NULL ? a->by : "");
	/* A hit's source is "cache": what filled it is its entry's. */
	snprintf(u->source, sizeof(u->source), "%s",
	    a->source != NULL && strcmp(u->by, "cache") != 0 ? a->source : "");
	if (a->kind == RESOLVE_FILE) {
		u->found = a->fd;
		u->found_off = a->offset;
		u->found_size = a->size;
	} else if (a->kind == RESOLVE_STREAM) {
		/* Never for a whole client; judged as what cannot be. */
		if (a->fd != -1)
			close(a->fd);
		u->got = RESOLVE_OUTCOME;
		u->outcome = ANSWER_INTERNAL;
	}
	event_active(u->ev, EV_TIMEOUT, 1);
}

static void
judge_wake(void *arg)
{
	(void)arg;
}

static void
judge_on_end(void *arg, void (*fn)(void *), void *fnarg)
{
	struct upload *u = arg;

	u->end = fn;
	u->end_arg = fnarg;
}

static void
judge_wait(void *arg)
{
	(void)arg;
}

static const struct resolve_client_ops judge_client = {
	judge_answer,
	judge_wake,
	judge_on_end,
	judge_wait,
};

/* Worker: verify the body as a fill is verified. */
static void
verify_work(void *arg)
{
	struct upload *u = arg;
	char why[256];

	if (elf_check_artifact(u->fd, &u->rt.id,
		u->kind == CACHE_DEBUGINFO ? ELF_KIND_DEBUGINFO
					   : ELF_KIND_EXECUTABLE,
		why, sizeof(why)) == -1)
		answer(u, 400, METRICS_UPLOAD_REJECTED, "refused: %.200s", why);
}

/* The loop: verified, the upload is judged; else refused. */
static void
verify_done(void *arg)
{
	struct upload *u = arg;
	struct resolve_client cl = { .ops = &judge_client,
		.arg = u,
		.origin = &u->o,
		.whole = 1,
		.d = u->rd,
		.judge = 1 };

	if (u->status != 0) {
		upload_send(u);
		return;
	}
	resolve_start(u->th, &cl, &u->rt, RESOLVE_ALL);
}

/* The body is in (rc 0), could not be written (an errno) or is lost. */
static void
upload_body_cb(void *arg, int rc)
{
	struct upload *u = arg;

	if (rc == -1) {
		metrics_upload(METRICS_UPLOAD_REJECTED, u->size);
		upload_free(u);
		return;
	}
	if (rc != 0) {
		metrics_upload(METRICS_UPLOAD_REJECTED, u->size);
		conn_set_result(u->c, "ERROR", "upload");
		conn_send_error(u->c, rc == ENOSPC ? 507 : 503,
		    rc == ENOSPC ? "no room for the upload"
				 : "cannot write the upload");
		upload_free(u);
		return;
	}
	if (pool_submit(u->d->pool, verify_work, conn_inbox(u->c), verify_done,
		u) == -1) {
		conn_send_error(u->c, 503, "server is shutting down");
		upload_free(u);
	}
}

void
upload_start(const struct upload_deps *d, struct resolve_thread *th,
    const struct resolve_deps *rd, struct conn *c, const struct route *rt,
    const struct resolve_origin *o)
{
	const struct request *req = conn_request(c);
	struct upload *u;
	char err[256];

	if (rt->endpoint != ROUTE_DEBUGINFO &&
	    rt->endpoint != ROUTE_EXECUTABLE) {
		conn_send_not_allowed(c, "GET, HEAD");
		return;
	}
	if (req->chunked || !req->has_body) {
		conn_send_error(c, req->chunked ? 411 : 400,
		    req->chunked ? "uploads need a Content-Length"
				 : "an upload needs a body");
		return;
	}
	if (req->content_length > rd->cfg->max_upload_size) {
		metrics_upload(METRICS_UPLOAD_REJECTED, 0);
		conn_send_error(c, 413, "larger than max-upload-size");
		return;
	}
	if ((u = calloc(1, sizeof(*u))) == NULL ||
	    (u->ev = event_new(th->base, -1, 0, judge_answered_cb, u)) ==
		NULL) {
		free(u);
		conn_send_error(c, 503, "out of memory");
		return;
	}
	u->d = d;
	u->th = th;
	u->rd = rd;
	u->c = c;
	u->rt = *rt;
	u->o = *o;
	u->o.maxsize = 0; /* the whole file, whatever its size */
	u->o.range = 0;
	u->found = -1;
	u->size = req->content_length;
	buildid_format(&rt->id, u->hex);
	u->kind = rt->endpoint == ROUTE_DEBUGINFO ? CACHE_DEBUGINFO
						  : CACHE_EXECUTABLE;
	cache_key_make(&u->key, &rt->id, u->kind, "");
	u->fd = blob_upload_tmp_new(d->bs, u->tmp, sizeof(u->tmp), err,
	    sizeof(err));
	if (u->fd == -1) {
		log_warnx("%s: %s", __func__, err);
		u->tmp[0] = '\0';
		upload_free(u);
		conn_send_error(c, 503, "cannot store the upload");
		return;
	}
	conn_recv_body(c, u->fd, upload_body_cb, u);
}
