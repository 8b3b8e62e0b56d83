/*
 * sources/local.c: indexed local files (the scan's: sources/scan.h), the
 * first source.
 *
 * Debuginfo and executables are served on the loop, as a static file
 * server would: one index lookup, open, fstat (the record must still match
 * the file), and the file goes out by sendfile.  A record that no longer
 * matches sends the request to a worker, which tries every candidate of
 * the id and brings the index in line with what each file now is.
 * Sections are cut by the cut step from what this source answers.  A
 * source file is one the DWARF of an indexed local file names, under a
 * source-root, opened safely on a worker (sources/localsrc.h says what may
 * be served and why).
 */
#include "sources/sources.h"

#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/files.h"
#include "cache/index.h"
#include "daemon/log.h"
#include "indexer/elf.h"
#include "indexer/file.h"
#include "resolver/rq.h"
#include "sources/localsrc.h"
#include "sources/scan.h"
#include "conf/config.h"

/* Files tried per (build-id, kind) on a worker. */
#define CANDIDATES_MAX 8

/* Open path and check it is still the file rec describes. */
static int
open_checked(const char *path, const struct index_file *rec, struct rq_found *f)
{
	int fd;

	if ((fd = file_open_regular(path, &f->st)) == -1)
		return -1;
	if (rec != NULL && !index_file_unchanged(rec, &f->st)) {
		close(fd);
		return -1;
	}
	return fd;
}

struct fast {
	struct rq_found *f;
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

/* Worker: the candidates of rq's id and kind, re-indexing what changed. */
static void
local_work(void *arg)
{
	struct rq *rq = arg;
	enum elf_kind kind = rq->rt->endpoint == ROUTE_EXECUTABLE
	    ? ELF_KIND_EXECUTABLE
	    : ELF_KIND_DEBUGINFO;
	struct index_reader *rd;
	struct index_file rec;
	struct candidates cs = { .n = 0 };
	size_t i;
	int fd;

	rq->status = 404;
	rq->f.fd = -1;
	if ((rd = index_reader_new(rq->d->idx)) == NULL) {
		rq->status = 503;
		rq->why = "index unavailable";
		return;
	}
	if (index_reader_begin(rd) == 0) {
		index_find(rd, &rq->rt->id, kind, collect_cb, &cs);
		index_reader_end(rd);
	}
	index_reader_free(rd);
	for (i = 0; i < cs.n && rq->status != 0; i++) {
		const char *path = cs.v[i].path;

		fd = open_checked(path, NULL, &rq->f);
		if (fd == -1 ||
		    !index_file_unchanged(&cs.v[i].rec, &rq->f.st)) {
			reindex(rq->d->idx, path, fd, &rq->f.st, &rec);
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
		snprintf(rq->f.path, sizeof(rq->f.path), "%s", path);
		rq->status = 0;
	}
	for (i = 0; i < cs.n; i++)
		free(cs.v[i].path);
}

static void
local_done(void *arg)
{
	struct rq *rq = arg;

	if (rq->status == 0)
		rq_resume(rq, rq_send_found(rq, "local"));
	else if (rq->status == 404)
		rq_resume(rq, SRC_ABSENT);
	else
		rq_resume(rq, rq_fail(rq, rq->why));
}

/* Worker: the source file rq asks for, when a local file names it. */
static void
source_work(void *arg)
{
	struct rq *rq = arg;
	struct index_reader *rd;
	int rc;

	rq->status = 503;
	rq->why = "index unavailable";
	if ((rd = index_reader_new(rq->d->idx)) == NULL)
		return;
	rc = localsrc_open(rd, &rq->d->cfg->source_roots, &rq->rt->id,
	    rq->rt->arg, &rq->f.fd, &rq->f.st);
	index_reader_free(rd);
	if (rc == -1)
		return;
	rq->status = rc == 0 ? 0 : 404;
	if (rc == 0) {
		rq->f.offset = 0;
		rq->f.size = (uint64_t)rq->f.st.st_size;
		snprintf(rq->f.path, sizeof(rq->f.path), "%.*s",
		    (int)sizeof(rq->f.path) - 1, rq->rt->arg);
	}
}

static enum src_result
local_lookup(struct rq *rq)
{
	const struct route *rt = rq->rt;
	struct fast fa = { &rq->f, 0 };
	int rc;

	if (rt->endpoint == ROUTE_SOURCE) {
		/* Only a path a local file names costs a worker's open. */
		if (rq->d->cfg->source_roots.n == 0)
			return SRC_ABSENT;
		if (rq_txn(rq) == -1)
			return rq_fail(rq, "index unavailable");
		if ((rc = localsrc_named(rq->th->rd, &rt->id, rt->arg)) == -1)
			return rq_fail(rq, "index lookup failed");
		if (rc == 0)
			return SRC_ABSENT;
		return rq_on_worker(rq, source_work, local_done);
	}
	if (rt->endpoint != ROUTE_DEBUGINFO && rt->endpoint != ROUTE_EXECUTABLE)
		return SRC_ABSENT;
	if (rq_txn(rq) == -1)
		return rq_fail(rq, "index unavailable");
	rc = index_find(rq->th->rd, &rt->id,
	    rt->endpoint == ROUTE_DEBUGINFO ? ELF_KIND_DEBUGINFO
					    : ELF_KIND_EXECUTABLE,
	    fast_try_cb, &fa);
	if (rc == 1)
		return rq_send_found(rq, "local");
	if (fa.stale)
		return rq_on_worker(rq, local_work, local_done);
	if (rc != 0)
		return rq_fail(rq, "index lookup failed");
	/* Not a local file: the next steps read the same snapshot. */
	return SRC_ABSENT;
}

const struct source source_local = {
	.name = "local",
	.held = 1,
	.lookup = local_lookup,
};
