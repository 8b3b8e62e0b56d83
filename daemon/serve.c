/*
 * daemon/serve.c: answer the debuginfod endpoints from the index.
 *
 * The fast path runs on the event loop and does what a static file server
 * does: one LMDB read transaction, open, fstat.  The file is served only if
 * fstat still matches the record the index holds (device, inode, size,
 * mtime).  Anything else goes to a worker: a file that changed is read
 * again and re-indexed, and served only if it still carries the requested
 * build-id; a vanished file's record is dropped; sections need the ELF
 * section table.  Nothing that is not in the index is ever opened.
 */
#include "daemon/serve.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/index.h"
#include "config.h"
#include "daemon/log.h"
#include "daemon/pool.h"
#include "daemon/route.h"
#include "daemon/scan.h"
#include "indexer/elf.h"

/* Files tried per (build-id, kind) on the slow path. */
#define CANDIDATES_MAX 8

static const char banner[] =
    PACKAGE_NAME " " PACKAGE_VERSION ": a debuginfod-compatible server\n"
		 "GET /buildid/ID/debuginfo\n"
		 "GET /buildid/ID/executable\n"
		 "GET /buildid/ID/section/NAME\n";

struct serve {
	struct index *idx;
	struct pool *pool;
};

struct serve_thread {
	struct serve *srv;
	struct index_reader *rd;
};

/* A file found for a request, open and checked. */
struct found {
	int fd;
	struct stat st;
	uint64_t offset; /* of the artifact in the file */
	uint64_t size;
	char path[PATH_MAX];
};

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

/* Open path and check it is still the file rec describes. */
static int
open_checked(const char *path, const struct index_file *rec, struct found *f)
{
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd == -1)
		return -1;
	if (fstat(fd, &f->st) == -1 || !S_ISREG(f->st.st_mode) ||
	    (rec != NULL && !scan_unchanged(rec, &f->st))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* ------------------------------------------------------------ fast path */

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

/* ------------------------------------------------------------ slow path */

struct slow {
	struct conn *c;
	struct serve *srv;
	struct route rt;
	struct found f;
	int status; /* 0: found */
	const char *why;
};

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
		log_info("%s: %s changed; indexed again", __func__, path);
	} else {
		index_batch_del_file(b, path);
		rec->kinds = 0;
		log_info("%s: %s is gone or no longer ELF; dropped", __func__,
		    path);
	}
	if (index_batch_commit(b, err, sizeof(err)) == -1)
		log_warnx("%s: %s", __func__, err);
}

/*
 * Try the candidates of one kind.  0 when s->f is filled, ELF_NOTFOUND, -1
 * when some file could not be read (a section request then answers 503).
 */
static int
slow_try(struct slow *s, struct candidates *cs, enum elf_kind kind)
{
	struct elf_section sec;
	struct index_file rec;
	char err[256];
	size_t i;
	int fd, rc, ret = ELF_NOTFOUND;

	for (i = 0; i < cs->n; i++) {
		const char *path = cs->v[i].path;

		fd = open_checked(path, NULL, &s->f);
		if (fd == -1 || !scan_unchanged(&cs->v[i].rec, &s->f.st)) {
			reindex(s->srv->idx, path, fd, &s->f.st, &rec);
			if (fd == -1 || !buildid_equal(&rec.id, &s->rt.id) ||
			    (rec.kinds & kind) == 0) {
				if (fd != -1)
					close(fd);
				continue;
			}
		}
		s->f.offset = 0;
		s->f.size = (uint64_t)s->f.st.st_size;
		if (s->rt.endpoint == ROUTE_SECTION) {
			rc = elf_find_section(fd, s->rt.arg, &sec, err,
			    sizeof(err));
			if (rc != 0) {
				if (rc == -1) {
					log_info("%s: %s: %s", __func__, path,
					    err);
					ret = -1;
				}
				close(fd);
				continue;
			}
			s->f.offset = sec.offset;
			s->f.size = sec.size;
		}
		snprintf(s->f.path, sizeof(s->f.path), "%s", path);
		s->f.fd = fd;
		return 0;
	}
	return ret;
}

static void
slow_work(void *arg)
{
	struct slow *s = arg;
	struct index_reader *rd;
	struct candidates cs;
	enum elf_kind kinds[2];
	size_t nk = 0, k, i;
	int rc = ELF_NOTFOUND, err = 0;

	if (s->rt.endpoint != ROUTE_EXECUTABLE)
		kinds[nk++] = ELF_KIND_DEBUGINFO;
	if (s->rt.endpoint != ROUTE_DEBUGINFO)
		kinds[nk++] = ELF_KIND_EXECUTABLE;
	s->f.fd = -1;
	if ((rd = index_reader_new(s->srv->idx)) == NULL) {
		s->status = 503;
		s->why = "index unavailable";
		return;
	}
	for (k = 0; k < nk && rc != 0; k++) {
		cs.n = 0;
		if (index_reader_begin(rd) == 0) {
			if (index_find(rd, &s->rt.id, kinds[k], collect_cb,
				&cs) == -1)
				err = 1;
			index_reader_end(rd);
		}
		rc = slow_try(s, &cs, kinds[k]);
		if (rc == -1)
			err = 1;
		for (i = 0; i < cs.n; i++)
			free(cs.v[i].path);
	}
	index_reader_free(rd);
	if (rc == 0) {
		s->status = 0;
	} else if (err && s->rt.endpoint == ROUTE_SECTION) {
		/* 503 makes clients fetch the whole file and cut it. */
		s->status = 503;
		s->why = "section could not be read";
	} else {
		s->status = 404;
		s->why = s->rt.endpoint == ROUTE_SECTION
		    ? "no such section for this build-id"
		    : "not found";
	}
}

static void
slow_done(void *arg)
{
	struct slow *s = arg;
	struct artifact art;

	if (s->status == 0) {
		found_artifact(&s->f, &art);
		conn_set_result(s->c, "HIT", "local");
		conn_send_file(s->c, s->f.fd, s->f.offset, &art);
	} else {
		conn_set_result(s->c, s->status == 404 ? "MISS" : "ERROR",
		    "local");
		conn_send_error(s->c, s->status, s->why);
	}
	free(s);
}

static void
slow_start(struct conn *c, struct serve *srv, const struct route *rt)
{
	struct slow *s;

	if ((s = malloc(sizeof(*s))) == NULL) {
		conn_set_result(c, "ERROR", "-");
		conn_send_error(c, 503, "out of memory");
		return;
	}
	s->c = c;
	s->srv = srv;
	s->rt = *rt;
	conn_wait(c);
	if (pool_submit(srv->pool, slow_work, conn_inbox(c), slow_done, s) ==
	    -1) {
		free(s);
		conn_set_result(c, "ERROR", "-");
		conn_send_error(c, 503, "server is shutting down");
	}
}

/* ------------------------------------------------------------- requests */

static void
serve_request(struct conn *c, void *state)
{
	struct serve_thread *st = state;
	const struct request *req = conn_request(c);
	const char *why = NULL;
	struct route rt;
	struct found f;
	struct fast fa = { &f, 0 };
	struct artifact art;
	int rc;

	rc = route_parse(&rt, req->target.p, req->target.n, &why);
	if (rc != 0) {
		conn_send_error(c, rc, why);
		return;
	}
	switch (rt.endpoint) {
	case ROUTE_BANNER:
		conn_send_text(c, 200, "text/plain", banner,
		    sizeof(banner) - 1);
		return;
	case ROUTE_SOURCE:
		conn_set_result(c, "MISS", "-");
		conn_send_error(c, 404, "source files are not indexed");
		return;
	case ROUTE_SECTION:
		slow_start(c, st->srv, &rt);
		return;
	case ROUTE_DEBUGINFO:
	case ROUTE_EXECUTABLE:
		break;
	}
	if (st->rd == NULL || index_reader_begin(st->rd) == -1) {
		conn_set_result(c, "ERROR", "-");
		conn_send_error(c, 503, "index unavailable");
		return;
	}
	rc = index_find(st->rd, &rt.id,
	    rt.endpoint == ROUTE_DEBUGINFO ? ELF_KIND_DEBUGINFO
					   : ELF_KIND_EXECUTABLE,
	    fast_try_cb, &fa);
	index_reader_end(st->rd);
	if (rc == 1) {
		found_artifact(&f, &art);
		conn_set_result(c, "HIT", "local");
		conn_send_file(c, f.fd, 0, &art);
	} else if (fa.stale) {
		slow_start(c, st->srv, &rt);
	} else if (rc == -1) {
		conn_set_result(c, "ERROR", "-");
		conn_send_error(c, 503, "index lookup failed");
	} else {
		conn_set_result(c, "MISS", "local");
		conn_send_error(c, 404, "not found");
	}
}

static void *
serve_thread_start(void *arg)
{
	struct serve_thread *st;

	if ((st = calloc(1, sizeof(*st))) == NULL)
		return NULL;
	st->srv = arg;
	st->rd = index_reader_new(st->srv->idx);
	if (st->rd == NULL)
		log_warnx("%s: no index reader; requests will get 503",
		    __func__);
	return st;
}

static void
serve_thread_stop(void *state)
{
	struct serve_thread *st = state;

	index_reader_free(st->rd);
	free(st);
}

struct serve *
serve_new(struct index *idx, struct pool *pool)
{
	struct serve *srv;

	if ((srv = calloc(1, sizeof(*srv))) == NULL)
		return NULL;
	srv->idx = idx;
	srv->pool = pool;
	return srv;
}

void
serve_free(struct serve *srv)
{
	free(srv);
}

void
serve_handler(struct serve *srv, struct http_handler *handler)
{
	handler->thread_start = serve_thread_start;
	handler->thread_stop = serve_thread_stop;
	handler->request = serve_request;
	handler->arg = srv;
}
