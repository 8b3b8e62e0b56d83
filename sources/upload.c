/*
 * sources/upload.c: PUT /buildid/ID/debuginfo and /executable (upload.h).
 *
 * The connection's thread receives the body into a temp file
 * (conn_recv_body); a worker verifies, compares with what the cache holds
 * for the key and publishes; the completion answers on the connection's
 * thread.  The upload owns the temp file until blob_publish takes it.
 */
#include "sources/upload.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/blobstore.h"
#include "cache/files.h"
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

struct upload {
	const struct upload_deps *d;
	struct conn *c;
	struct buildid id;
	enum cache_kind kind;
	struct cache_key key;
	char tmp[4096];
	int fd;
	uint64_t size;
	int status; /* the answer */
	enum metrics_upload result;
	char text[256];
};

static void
upload_free(struct upload *u)
{
	if (u->fd != -1)
		close(u->fd);
	if (u->tmp[0] != '\0')
		unlink(u->tmp);
	free(u);
}

/* 1 when the files at fds a and b hold the same bytes; -1 on error. */
static int
same_bytes(int a, int b)
{
	char ba[65536], bb[65536];
	off_t off = 0;
	ssize_t na, nb;

	for (;;) {
		na = pread(a, ba, sizeof(ba), off);
		nb = pread(b, bb, sizeof(bb), off);
		if (na < 0 || nb < 0)
			return -1;
		if (na != nb || memcmp(ba, bb, (size_t)na) != 0)
			return 0;
		if (na == 0)
			return 1;
		off += na;
	}
}

/* A local file indexed under the upload's id and kind. */
struct local {
	int fd; /* the upload */
	int found; /* 0 none; 1 the same bytes; 2 other bytes */
};

static int
local_cb(const struct index_file *rec, void *arg)
{
	struct local *l = arg;
	int fd, same;

	if ((fd = open(rec->path, O_RDONLY | O_CLOEXEC)) == -1)
		return 0; /* gone: the resolver will drop it */
	same = same_bytes(fd, l->fd);
	close(fd);
	if (same == -1)
		return 0;
	l->found = same ? 1 : 2;
	return 1;
}

/*
 * What is served for the key now: a local file (resolved before the
 * cache) or a cache entry.  INDEX_NOTFOUND; 0 with *same (the same bytes
 * or not) and *kept (nothing to publish: a local file, or an upload
 * already); or -1.
 */
static int
existing(struct upload *u, int *same, int *kept)
{
	struct index_reader *rd;
	struct blob_info bi;
	struct local l = { u->fd, 0 };
	int rc, fd;

	if ((rd = index_reader_new(u->d->idx)) == NULL)
		return -1;
	rc = index_reader_begin(rd) == -1 ? -1 : 0;
	if (rc == 0 &&
	    index_find(rd, &u->id,
		u->kind == CACHE_DEBUGINFO ? ELF_KIND_DEBUGINFO
					   : ELF_KIND_EXECUTABLE,
		local_cb, &l) == -1)
		rc = -1;
	if (rc == 0 && l.found == 0)
		rc = blob_lookup(rd, &u->key, &bi);
	if (rc == 0)
		*kept = l.found != 0 || bi.uploaded;
	index_reader_end(rd);
	index_reader_free(rd);
	if (rc != 0)
		return rc;
	if (l.found != 0) {
		*same = l.found == 1;
		return 0;
	}
	if ((fd = blob_open(u->d->bs, &u->key)) == -1)
		return INDEX_NOTFOUND; /* a purge got there first */
	rc = same_bytes(fd, u->fd);
	close(fd);
	if (rc == -1)
		return -1;
	*same = rc;
	return 0;
}

static void
answer(struct upload *u, int status, enum metrics_upload result,
    const char *fmt, const char *what)
{
	u->status = status;
	u->result = result;
	snprintf(u->text, sizeof(u->text), fmt, what);
}

/* Worker: verify, compare, publish. */
static void
upload_work(void *arg)
{
	struct upload *u = arg;
	struct blob_info bi;
	char why[256], err[256], hex[BUILDID_HEX_MAX];
	int64_t now = clock_now();
	uint64_t negs = 0;
	int rc, same = 0, kept = 0;

	buildid_format(&u->id, hex);
	if (elf_check_artifact(u->fd, &u->id,
		u->kind == CACHE_DEBUGINFO ? ELF_KIND_DEBUGINFO
					   : ELF_KIND_EXECUTABLE,
		why, sizeof(why)) == -1) {
		answer(u, 400, METRICS_UPLOAD_REJECTED, "refused: %.200s", why);
		return;
	}
	rc = existing(u, &same, &kept);
	if (rc == -1) {
		answer(u, 503, METRICS_UPLOAD_REJECTED, "%s",
		    "cannot read the cache");
		return;
	}
	if (rc == 0 && !same) {
		answer(u, 409, METRICS_UPLOAD_CONFLICT,
		    "%s: other bytes are served under this build-id", hex);
		return;
	}
	if (rc == 0 && kept) {
		answer(u, 200, METRICS_UPLOAD_SAME,
		    "%s: these bytes are served already", hex);
		return;
	}
	/* New, or a cached copy of the same bytes that becomes an upload. */
	memset(&bi, 0, sizeof(bi));
	bi.size = u->size;
	bi.mtime = now;
	bi.id = u->id;
	bi.kind = u->kind;
	bi.arg = "";
	bi.source = BLOB_UPLOAD_SOURCE;
	bi.uploaded = 1;
	close(u->fd);
	u->fd = -1;
	rc =
	    blob_publish(u->d->bs, &u->key, u->tmp, &bi, now, err, sizeof(err));
	u->tmp[0] = '\0'; /* blob_publish took it, or removed it */
	if (rc == BLOB_TOO_BIG) {
		answer(u, 507, METRICS_UPLOAD_REJECTED, "%s",
		    "uploads would exceed upload-size");
		return;
	}
	if (rc == -1) {
		log_warnx("%s: %s", __func__, err);
		answer(u, 503, METRICS_UPLOAD_REJECTED, "%s",
		    "cannot store the upload");
		return;
	}
	/* Every remembered miss of the id: sections and sources too. */
	if (neg_purge(u->d->idx, &u->id, &negs, err, sizeof(err)) == -1)
		log_warnx("%s: %s", __func__, err);
	if (rc == 0 && same)
		answer(u, 200, METRICS_UPLOAD_SAME,
		    "%s: these bytes were cached; now kept as an upload", hex);
	else
		answer(u, 201, METRICS_UPLOAD_CREATED, "%s: stored", hex);
}

static void
upload_done(void *arg)
{
	struct upload *u = arg;

	metrics_upload(u->result, u->size);
	conn_set_result(u->c, u->status < 300 ? "UPLOAD" : "ERROR", "upload");
	if (u->status < 300) {
		size_t n = strlen(u->text);

		u->text[n] = '\n';
		conn_send_text(u->c, u->status, "text/plain", u->text, n + 1);
	} else {
		conn_send_error(u->c, u->status, u->text);
	}
	upload_free(u);
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
	if (pool_submit(u->d->pool, upload_work, conn_inbox(u->c), upload_done,
		u) == -1) {
		conn_send_error(u->c, 503, "server is shutting down");
		upload_free(u);
	}
}

void
upload_start(const struct upload_deps *d, struct conn *c,
    const struct route *rt)
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
	if (req->content_length > d->cfg->max_upload_size) {
		metrics_upload(METRICS_UPLOAD_REJECTED, 0);
		conn_send_error(c, 413, "larger than max-upload-size");
		return;
	}
	if ((u = calloc(1, sizeof(*u))) == NULL) {
		conn_send_error(c, 503, "out of memory");
		return;
	}
	u->d = d;
	u->c = c;
	u->id = rt->id;
	u->kind = rt->endpoint == ROUTE_DEBUGINFO ? CACHE_DEBUGINFO
						  : CACHE_EXECUTABLE;
	u->size = req->content_length;
	cache_key_make(&u->key, &u->id, u->kind, "");
	u->fd = blob_upload_tmp_new(d->bs, u->tmp, sizeof(u->tmp), err,
	    sizeof(err));
	if (u->fd == -1) {
		log_warnx("%s: %s", __func__, err);
		u->tmp[0] = '\0';
		free(u);
		conn_send_error(c, 503, "cannot store the upload");
		return;
	}
	conn_recv_body(c, u->fd, upload_body_cb, u);
}
