/*
 * resolver/produce.c: the producer core (resolver/produce.h).
 *
 * A fill made by a source that runs on the loop (the object store, the
 * upstreams) begins by looking again in the cache and the negative
 * entries: a request may have missed both just before another fill of the
 * same key published and left the table, and asking again would be a
 * waste.  Sources that run anywhere (package passes) look themselves, with
 * the reader of their worker (produce_lookup).
 *
 * Verification happens twice.  Early, as the opening bytes arrive: they
 * must be ELF, and the build-id note among the first PREFIX_CHECK bytes
 * (executables and split debug files have it in the first few KB) must
 * name the requested id, else the answer is refused.  Readers are not told
 * the length, so send nothing, until this check has passed (or
 * PREFIX_CHECK bytes came without a note to check): a wrong build-id is
 * then a clean 502, never a started 200.  Finally, on a worker once the
 * body is complete: libelf reads the whole file, which must carry the
 * requested build-id and be of the requested kind (debuginfo: .debug_*
 * sections, which dwz alt files have too).  Until then readers may stream
 * all but the last byte (cache/flight.h), so a file that fails this check
 * reaches its clients as a cut connection, never as a complete-looking
 * wrong file; only a verified file is published.  The verdict lets the
 * readers finish at once (flight_verified): the fsync, the rename and the
 * index's commit come after their last byte, and a failure there only
 * means the cache did not keep the file.  Sections and sources are raw
 * bytes that cannot be checked this way; they are cached as they came.
 *
 * The end of a fill that found nothing writes a negative entry (a source
 * that remembers), on a worker, before the flight leaves the table, so
 * that the next request for the key finds the entry instead of starting
 * another fill.
 *
 * A write that finds no room (a full disk) is this server's failure, not
 * the source's: room is made on a worker (evicting), then a fill whose
 * readers have no byte yet starts over from its first byte; one that
 * streams pauses its transfer meanwhile and goes on.
 */
#include "resolver/produce.h"

#include <sys/stat.h>

#include <errno.h>
#include <event2/event.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/blobstore.h"
#include "cache/flight.h"
#include "cache/index.h"
#include "cache/negative.h"
#include "conf/config.h"
#include "daemon/clock.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/pool.h"
#include "indexer/elf.h"
#include "indexer/package.h"
#include "resolver/source.h"
#include "symbolizer/symtab.h"

/* Bytes read back from the temp file for the early build-id check. */
#define PREFIX_CHECK (64u << 10)

/*
 * Bytes of an answer gathered before they are written.  libcurl hands a
 * body over in pieces of at most 16 KiB unless told otherwise, and ext4
 * spends more per write than on the copy: written one by one, the pieces
 * of a 100 MiB object-store hit took more CPU than receiving and sending
 * them did.  Pieces of half this size or more are written as they come.
 */
#define WBUF_SIZE (256u << 10)

struct producers {
	struct producers_deps d;
	pthread_t loop; /* the thread of d.base */
	struct index_reader *reader; /* the loop's */
	/* Set on the loop, read by the workers that end fills. */
	atomic_uint negative_ttl, error_ttl;
	atomic_uint_fast64_t max_size; /* max-object-size */
	pthread_mutex_t mu;
	struct prod *queue; /* under mu: to begin on the loop */
	struct event *queue_ev;
	struct prod *active; /* begun and not ended, on the loop */
};

static void prod_run(struct prod *p);
static void prod_fetch_end(struct prod *p);
static const struct source *prod_next(const struct prod *p);
static void room_work(void *arg);
static void room_resume(void *arg);

static int
is_elf_kind(enum cache_kind kind)
{
	return kind == CACHE_DEBUGINFO || kind == CACHE_EXECUTABLE;
}

/*
 * Readers learn the length only once bytes were checked: ELF after the
 * early check, symbol tables (which have none) after the final one.
 */
static int
held_back(enum cache_kind kind)
{
	return is_elf_kind(kind) || kind == CACHE_SYMTAB;
}

static const struct source *
prod_source(const struct prod *p)
{
	return p->pc->d.rd->sources[p->src];
}

/* ---------------------------------------------------- the temp file */

/*
 * The bytes of a fill in tmp/ count against cache-size with the cached
 * files (cache/blobstore.h): p's temp file now ends at end.
 */
static void
prod_tmp_grow(struct prod *p, uint64_t end)
{
	if (end > p->tmp_counted) {
		blob_tmp_add(p->pc->d.rd->bs, end - p->tmp_counted, 0);
		p->tmp_counted = end;
	}
}

/* p's temp file is published, deleted or emptied: it counts no more. */
static void
prod_tmp_release(struct prod *p)
{
	blob_tmp_add(p->pc->d.rd->bs, 0, p->tmp_counted);
	p->tmp_counted = 0;
}

/* Empty p's temp file for a fill that starts over; -1 when it cannot. */
static int
prod_forget_bytes(struct prod *p)
{
	if (p->fd != -1 && ftruncate(p->fd, 0) == -1)
		return -1;
	prod_tmp_release(p);
	p->written = 0;
	p->wlen = 0;
	p->checked = 0;
	p->has_upstream = 0;
	p->local_errno = 0;
	p->refused = 0;
	p->no_sink = 0;
	p->released = 0;
	p->length = UINT64_MAX;
	return 0;
}

int
produce_open(struct prod *p)
{
	char path[PATH_MAX], err[256];

	if (p->fd != -1)
		return 0;
	p->fd =
	    blob_tmp_new(p->pc->d.rd->bs, path, sizeof(path), err, sizeof(err));
	if (p->fd == -1) {
		log_warnx("%s: %s", __func__, err);
		snprintf(p->why, sizeof(p->why), "cannot store the file");
		return -1;
	}
	flight_set_file(p->f, p->fd, path);
	return 0;
}

int
produce_room(struct producers *pc, uint64_t bytes)
{
	uint64_t n, b;
	char err[256];

	if (blob_make_room(pc->d.rd->bs, bytes, &n, &b, err, sizeof(err)) == -1)
		log_warnx("making room for a fill: %s", err);
	if (n > 0)
		log_info("no room for a fill: %llu cached files (%llu bytes) "
			 "evicted, and the write tried again",
		    (unsigned long long)n, (unsigned long long)b);
	return n > 0;
}

/* ---------------------------------------------------------- the head */

int
produce_head(struct prod *p, uint64_t length, int64_t mtime,
    const struct cache_meta *meta, const char *source)
{
	p->length = length;
	p->mtime = mtime;
	/* Readers over their X-DEBUGINFOD-MAXSIZE need not wait for more. */
	if (length != UINT64_MAX)
		flight_announce(p->f, length);
	/* ELF waits for the early check before readers learn the length. */
	if (flight_set_head(p->f, held_back(p->w.kind) ? UINT64_MAX : length,
		mtime, meta, source) == -1)
		return -1;
	p->told = !held_back(p->w.kind) && length != UINT64_MAX;
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
early_check(struct prod *p)
{
	static _Thread_local char buf[PREFIX_CHECK];
	size_t n =
	    p->written < PREFIX_CHECK ? (size_t)p->written : PREFIX_CHECK;
	int whole = p->written == p->length, rc;

	if (pread(p->fd, buf, n, 0) != (ssize_t)n)
		return -1;
	if ((rc = elf_prefix_check(buf, n, &p->w.id)) == -1)
		return -1;
	if (rc == 0 && n < PREFIX_CHECK && !whole)
		return 0; /* more bytes may tell */
	p->checked = 1;
	if (p->length != UINT64_MAX && (rc == 1 || !whole)) {
		flight_set_length(p->f, p->length);
		p->told = 1;
	}
	return 0;
}

void
produce_progress(struct prod *p, uint64_t end)
{
	prod_tmp_grow(p, end);
	p->written = end;
	flight_progress(p->f, end);
	if (is_elf_kind(p->w.kind) && !p->checked && early_check(p) == -1)
		p->checked = 1; /* wrong: the final check will say so */
}

int
produce_told(const struct prod *p)
{
	return p->told;
}

void
produce_unasked(struct prod *p, const char *why)
{
	flight_note_unasked(p->f, why);
}

/* ------------------------------------------------- fetches: the sink */

int
produce_accept(void *arg, const struct upstream_head *h, const void *buf,
    size_t len)
{
	struct prod *p = arg;
	struct cache_meta meta = { h->file, h->archive, h->imasig, h->extra,
		h->extra_len };

	if (is_elf_kind(p->w.kind) &&
	    (!elf_has_magic(buf, len) ||
		elf_prefix_check(buf, len, &p->w.id) == -1)) {
		log_info("%s%s refused: not an ELF file with the build-id "
			 "asked for",
		    h->url, p->w.path);
		p->refused = 1;
		return -1;
	}
	if (h->length != UINT64_MAX && h->length > produce_max_size(p)) {
		log_info("%s%s refused: %llu bytes is over max-object-size",
		    h->url, p->w.path, (unsigned long long)h->length);
		p->refused = 1;
		return -1;
	}
	p->has_upstream = 1;
	p->upstream = h->upstream;
	return produce_head(p, h->length,
	    h->mtime >= 0 ? h->mtime : clock_now(), &meta, h->url);
}

/*
 * Write len bytes at the end of p's file and tell its readers.  A failure
 * here is this server's: 0, UPSTREAM_SINK_LOCAL, or (can_pause, in a
 * transfer's data callback) UPSTREAM_SINK_PAUSE while room is made; -1
 * when the early check refuses the answer.
 */
static int
prod_write(struct prod *p, const void *buf, size_t len, int can_pause)
{
	const char *b = buf;
	ssize_t n;
	size_t done = 0;

	while (done < len) {
		n = pwrite(p->fd, b + done, len - done,
		    (off_t)(p->written + done));
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			/*
			 * Ours, not the source's: a full disk must not open
			 * the source's breaker.  The maintenance job evicts
			 * while the disk is short of min-free-disk.
			 */
			p->local_errno = n == 0 ? EIO : errno;
			log_warnx("cannot write a fill to %s: %s",
			    flight_tmp_path(p->f), strerror(p->local_errno));
			metrics_local_write_error();
			/*
			 * Readers stream it: pause the transfer while room
			 * is made, and write this piece again.  (Before any
			 * reader has a byte, the fill starts over instead:
			 * produce_fetched.)
			 */
			if (can_pause && p->told && p->written > 0 &&
			    !p->room_tried && p->local_errno == ENOSPC) {
				p->room_tried = p->paused = 1;
				if (pool_submit(p->pc->d.rd->pool, room_work,
					p->pc->d.inbox, room_resume, p) == 0)
					return UPSTREAM_SINK_PAUSE;
				p->paused = 0;
			}
			return UPSTREAM_SINK_LOCAL;
		}
		done += (size_t)n;
	}
	prod_tmp_grow(p, p->written + len);
	p->written += len;
	flight_progress(p->f, p->written);
	if (is_elf_kind(p->w.kind) && !p->checked && early_check(p) == -1) {
		log_info("fill of %s refused: its build-id is another one",
		    p->w.path);
		p->refused = 1;
		return -1;
	}
	return 0;
}

/*
 * Write what p gathered; kept for another try when that fails (the next
 * piece, or the end, tries again first).
 */
static int
prod_flush(struct prod *p, int can_pause)
{
	int rc;

	if (p->wlen == 0)
		return 0;
	if ((rc = prod_write(p, p->wbuf, p->wlen, can_pause)) == 0) {
		p->wlen = 0;
		p->local_errno = 0;
	}
	return rc;
}

/* The burst is in: its bytes go to the file and the readers. */
static void
prod_flush_cb(evutil_socket_t fd, short what, void *arg)
{
	struct prod *p = arg;

	(void)fd;
	(void)what;
	if (!p->paused)
		prod_flush(p, 0);
}

int
produce_data(void *arg, const void *buf, size_t len)
{
	struct prod *p = arg;
	/*
	 * A piece of half the buffer or more is a burst already (libcurl
	 * hands up to CURLOPT_BUFFERSIZE at once when the bytes are there):
	 * copying it into wbuf would only add a copy of every byte.
	 */
	int big = len >= WBUF_SIZE / 2, rc;

	/* The opening bytes go in at once: early_check reads them there. */
	if (is_elf_kind(p->w.kind) && !p->checked)
		return prod_write(p, buf, len, 1);
	if (p->wlen > 0 &&
	    (big || p->local_errno != 0 || p->wlen + len > WBUF_SIZE) &&
	    (rc = prod_flush(p, 1)) != 0)
		return rc;
	if (big)
		return prod_write(p, buf, len, 1);
	if (p->wbuf == NULL) {
		p->wbuf = malloc(WBUF_SIZE);
		p->wev = event_new(p->pc->d.base, -1, 0, prod_flush_cb, p);
	}
	if (p->wbuf == NULL || p->wev == NULL)
		return prod_write(p, buf, len, 1);
	memcpy(p->wbuf + p->wlen, buf, len);
	p->wlen += len;
	event_active(p->wev, 0, 0);
	return 0;
}

/* Worker: room for the fill p could not write (the whole of it). */
static void
room_work(void *arg)
{
	struct prod *p = arg;
	uint64_t need = p->length != UINT64_MAX ? p->length : p->written;

	p->room_made = produce_room(p->pc, need + PKG_ROOM_STEP);
}

/* After room_work for a paused transfer: go on, or end it. */
static void
room_resume(void *arg)
{
	struct prod *p = arg;

	p->paused = 0;
	if (p->ended) {
		/* It ended meanwhile (a deadline): what it ended with. */
		prod_fetch_end(p);
	} else if (p->room_made) {
		log_info("fill of %s: goes on, now that there is room",
		    p->w.path);
		upstream_resume(p->fetch);
	} else {
		upstream_cancel(p->fetch);
		p->fetch = NULL;
		p->res = UPSTREAM_LOCAL;
		snprintf(p->why, sizeof(p->why),
		    "this server cannot keep it now: %s",
		    strerror(p->local_errno));
		prod_fetch_end(p);
	}
}

/*
 * After room_work for an ended fetch: a fill whose readers have no byte
 * yet starts again from its first byte (the same source asked again); one
 * that streamed, or found no room, ends as this server's failure (503, or
 * a cut connection).
 */
static void
room_done(void *arg)
{
	struct prod *p = arg;

	/* Only the gathered bytes could not be written: now they can. */
	if (p->room_made && p->wlen > 0 && prod_flush(p, 0) == 0) {
		log_info("fill of %s: goes on, now that there is room",
		    p->w.path);
		p->res = UPSTREAM_OK;
		p->why[0] = '\0';
		prod_fetch_end(p);
		return;
	}
	if (p->room_made && !p->told && prod_forget_bytes(p) == 0) {
		log_info("fill of %s: asked again, now that there is room",
		    p->w.path);
		prod_run(p);
		return;
	}
	prod_fetch_end(p);
}

void
produce_fetched(void *arg, enum upstream_result res, const char *why)
{
	struct prod *p = arg;

	/* What is gathered is written here, or by room_done: not by wev. */
	if (p->wev != NULL)
		event_del(p->wev);
	if (res == UPSTREAM_OK && p->length != UINT64_MAX &&
	    p->length != p->written + p->wlen) {
		res = UPSTREAM_FAILED;
		why = "short body";
	}
	/*
	 * A failed answer is not kept: its gathered bytes go with it.  Those
	 * of a whole one that cannot be written yet are kept for room_done.
	 */
	if (res != UPSTREAM_OK)
		p->wlen = 0;
	else if (prod_flush(p, 0) != 0)
		res = UPSTREAM_LOCAL;
	p->fetch = NULL;
	p->res = res;
	/* A source's own failure comes as p->why itself. */
	if (why != p->why)
		snprintf(p->why, sizeof(p->why), "%s", why != NULL ? why : "");
	if (res == UPSTREAM_LOCAL && p->local_errno != 0)
		snprintf(p->why, sizeof(p->why),
		    "this server cannot keep it now: %s",
		    strerror(p->local_errno));
	if (p->paused) {
		/* room_resume ends it, when room_work is over. */
		p->ended = 1;
		return;
	}
	if (res == UPSTREAM_LOCAL && !p->room_tried) {
		/* Make room, then try once more unless readers have bytes. */
		p->room_tried = 1;
		if (pool_submit(p->pc->d.rd->pool, room_work, p->pc->d.inbox,
			room_done, p) == 0)
			return;
	}
	prod_fetch_end(p);
}

const struct upstream_sink produce_sink = {
	produce_accept,
	produce_data,
	produce_fetched,
};

static void produce_verify_job(void *arg);
static void produce_finish_job(void *arg);

/* The end of p's fetch, as p->res says: the final check on a worker. */
static void
prod_fetch_end(struct prod *p)
{
	if (p->res != UPSTREAM_OK)
		log_info("fill of %s: %s", p->w.path,
		    p->res == UPSTREAM_NOTFOUND ? "not found"
			: p->res == UPSTREAM_TOOBIG
			? "larger than the X-DEBUGINFOD-MAXSIZE sent upstream"
			: p->why);
	if (pool_submit(p->pc->d.rd->pool, produce_verify_job, p->pc->d.inbox,
		produce_finish_job, p) == -1)
		produce_end(p, FLIGHT_FAILED, "server is shutting down");
}

/* -------------------------------------------------- verdict and end */

/*
 * Worker: the check of a symbol table, whoever made it: it opens (its
 * checksum, every offset: symbolizer/symtab.h) and was built for the id
 * asked for.  0, or -1 with err.
 */
static int
table_check(int fd, const struct buildid *want, char *err, size_t errlen)
{
	struct symtab *t;
	struct buildid id;
	const char *why;
	int rc = 0;

	if ((t = symtab_open(fd, &why)) == NULL) {
		snprintf(err, errlen, "%s", why);
		return -1;
	}
	symtab_buildid(t, &id);
	if (!buildid_equal(&id, want)) {
		snprintf(err, errlen, "a table of another build-id");
		rc = -1;
	}
	symtab_close(t);
	return rc;
}

void
produce_release(struct prod *p)
{
	const struct source *s = prod_source(p);
	char err[256];

	if (p->released)
		return;
	p->released = 1;
	if (p->res != UPSTREAM_OK)
		return;
	if ((is_elf_kind(p->w.kind) &&
		elf_check_artifact(p->fd, &p->w.id,
		    p->w.kind == CACHE_DEBUGINFO ? ELF_KIND_DEBUGINFO
						 : ELF_KIND_EXECUTABLE,
		    err, sizeof(err)) == -1) ||
	    (p->w.kind == CACHE_SYMTAB &&
		table_check(p->fd, &p->w.id, err, sizeof(err)) == -1)) {
		snprintf(p->why, sizeof(p->why),
		    "%.100s: wrong content (%.100s)", flight_source(p->f), err);
		p->wrong = 1;
		return;
	}
	/* Readers finish now; making the file durable is the cache's. */
	if (s->verified != NULL)
		s->verified(p);
	flight_verified(p->f);
	p->verified = 1;
}

/* Worker: the verified bytes of p into the blob store. */
static void
prod_keep(struct prod *p)
{
	struct blob_info bi;
	char err[256];
	int64_t now = clock_now();
	int rc;

	memset(&bi, 0, sizeof(bi));
	bi.meta = *flight_meta(p->f);
	bi.size = p->written;
	bi.mtime = p->mtime;
	bi.stored = now;
	bi.atime = now;
	bi.id = p->w.id;
	bi.kind = p->w.kind;
	bi.arg = p->w.arg;
	bi.source = flight_source(p->f);
	bi.upstream = p->has_upstream;
	bi.no_sink = p->no_sink;
	bi.begun = flight_begun(p->f);
	rc = blob_publish(p->pc->d.rd->bs, flight_key(p->f),
	    flight_tmp_path(p->f), &bi, now, err, sizeof(err));
	if (rc == -1)
		log_warnx("%s: %s", __func__, err);
	else if (rc == BLOB_TOO_BIG)
		log_info("an answer from %s was served but not cached: larger "
			 "than the cache",
		    flight_source(p->f));
	else if (rc == BLOB_PURGED)
		log_info("an answer from %s was served but not cached: purged "
			 "while it was fetched",
		    flight_source(p->f));
	else if (rc == BLOB_EXISTS) {
		/* An upload took the key meanwhile: it stays what is served. */
		log_info("an answer from %s was served but not cached: an "
			 "upload holds its build-id",
		    flight_source(p->f));
		unlink(flight_tmp_path(p->f));
	}
}

void
produce_verify(struct prod *p)
{
	struct producers *pc = p->pc;
	char err[256];
	int64_t now = clock_now();
	unsigned ttl;
	int rc = 0;

	produce_release(p);
	prod_tmp_release(p); /* published or deleted from here on */
	if (p->verified) {
		prod_keep(p);
		return;
	}
	if (!prod_source(p)->remembers || p->res == UPSTREAM_LOCAL ||
	    p->res == UPSTREAM_TOOBIG)
		return; /* nothing to remember: ours, or one client's limit */
	ttl = atomic_load(
	    p->res == UPSTREAM_NOTFOUND ? &pc->negative_ttl : &pc->error_ttl);
	if (ttl > 0)
		rc = neg_put(pc->d.rd->idx, &p->key, &p->w.id,
		    p->res == UPSTREAM_NOTFOUND ? NEG_NOTFOUND : NEG_ERROR,
		    now + ttl, err, sizeof(err));
	if (rc == -1)
		log_warnx("%s: %s", __func__, err);
}

void
produce_revoke(struct prod *p, const char *why)
{
	p->verified = 0;
	p->res = UPSTREAM_FAILED;
	snprintf(p->why, sizeof(p->why), "%s", why);
}

void
produce_finish(struct prod *p)
{
	const struct source *s = prod_source(p);

	if (s->judged != NULL)
		s->judged(p);
	if (p->verified) {
		produce_end(p, FLIGHT_READY, NULL);
	} else if (p->wrong && p->w.kind == CACHE_SYMTAB && !p->told &&
	    prod_next(p) != NULL) {
		/*
		 * A table that does not verify (a damaged store object) is
		 * no answer, and no reader has a byte of it: the next source
		 * that makes tables does.
		 */
		log_warnx("refused after the final check: %s", p->why);
		p->wrong = 0;
		p->why[0] = '\0';
		produce_absent(p);
	} else if (p->wrong) {
		log_warnx("refused after the final check: %s", p->why);
		produce_end(p, FLIGHT_FAILED, p->why);
	} else if (p->res == UPSTREAM_NOTFOUND) {
		produce_end(p, FLIGHT_NOTFOUND,
		    p->why[0] != '\0' ? p->why : "not found");
	} else if (p->res == UPSTREAM_LOCAL) {
		produce_end(p, FLIGHT_UNAVAILABLE, p->why);
	} else if (p->res == UPSTREAM_TOOBIG) {
		produce_end(p, FLIGHT_TOOBIG,
		    "larger than X-DEBUGINFOD-MAXSIZE");
	} else {
		produce_end(p, FLIGHT_FAILED, p->why);
	}
}

static void
produce_verify_job(void *arg)
{
	produce_verify(arg);
}

static void
produce_finish_job(void *arg)
{
	produce_finish(arg);
}

void
produce_end(struct prod *p, enum flight_state st, const char *why)
{
	const struct source *s = prod_source(p);
	struct producers *pc = p->pc;

	prod_tmp_release(p);
	free(p->wbuf);
	if (p->wev != NULL)
		event_free(p->wev);
	if (p->fetch != NULL)
		upstream_cancel(p->fetch);
	if (s->release != NULL && p->data != NULL)
		s->release(p->data);
	flight_set_mark(p->f, p->src);
	flight_end(p->f, st, why);
	flight_detach(p->f);
	flight_unref(p->f);
	if (p->listed) {
		if (p->aprev != NULL)
			p->aprev->anext = p->anext;
		else
			pc->active = p->anext;
		if (p->anext != NULL)
			p->anext->aprev = p->aprev;
	}
	free(p);
}

int
produce_lookup(struct prod *p, struct index_reader *rd)
{
	struct blob_info bi;
	struct neg_entry ne;
	int fd;

	if (blob_lookup(rd, &p->key, &bi) == 0 &&
	    (fd = blob_open(p->pc->d.rd->bs, &p->key)) != -1) {
		flight_set_file(p->f, fd, NULL);
		flight_set_head(p->f, bi.size, bi.mtime, &bi.meta, bi.source);
		flight_progress(p->f, bi.size);
		p->written = bi.size;
		return 1;
	}
	if (!p->w.fresh && neg_get(rd, &p->key, clock_now(), &ne) == 0)
		return ne.kind == NEG_NOTFOUND ? 2 : 3;
	return 0;
}

void
produce_end_found(struct prod *p, int found)
{
	if (found == 1) {
		produce_end(p, FLIGHT_READY, NULL);
		return;
	}
	produce_unasked(p, "a remembered miss or failure");
	produce_end(p, found == 2 ? FLIGHT_NOTFOUND : FLIGHT_FAILED,
	    "a recent attempt failed");
}

/* ------------------------------------------------------ the sources */

/* The loop: list p among the running fills, then its source's produce. */
static void
prod_begin(struct prod *p)
{
	struct producers *pc = p->pc;
	int found = 0;

	p->anext = pc->active;
	if (pc->active != NULL)
		pc->active->aprev = p;
	pc->active = p;
	p->listed = 1;
	if (pc->reader != NULL && index_reader_begin(pc->reader) == 0) {
		found = produce_lookup(p, pc->reader);
		index_reader_end(pc->reader);
	}
	if (found != 0)
		produce_end_found(p, found);
	else
		prod_run(p);
}

/* Begin p on the loop, from any thread. */
static void
prod_queue(struct prod *p)
{
	struct producers *pc = p->pc;

	pthread_mutex_lock(&pc->mu);
	p->next = pc->queue;
	pc->queue = p;
	pthread_mutex_unlock(&pc->mu);
	event_active(pc->queue_ev, EV_READ, 1);
}

static void
producers_queue_cb(evutil_socket_t fd, short what, void *arg)
{
	struct producers *pc = arg;
	struct prod *p, *next;

	pthread_mutex_lock(&pc->mu);
	p = pc->queue;
	pc->queue = NULL;
	pthread_mutex_unlock(&pc->mu);
	for (; p != NULL; p = next) {
		next = p->next;
		prod_begin(p);
	}
}

/* s->produce(p), under s's lock when it has one. */
static void
prod_produce(const struct source *s, struct prod *p)
{
	const struct resolve_deps *rd = p->pc->d.rd;

	if (s->lock != NULL)
		s->lock(rd, 1);
	s->produce(p);
	if (s->lock != NULL)
		s->lock(rd, 0);
}

/* p's source produces: here when it may, else on the loop. */
static void
prod_run(struct prod *p)
{
	const struct source *s = prod_source(p);

	if (s->produce_anywhere || pthread_equal(pthread_self(), p->pc->loop))
		prod_produce(s, p);
	else
		prod_queue(p);
}

/*
 * The place in the table of the next source that produces within p's
 * reach, or UINT_MAX past the last; prod_next gives that source, or NULL.
 */
static unsigned
prod_next_step(const struct prod *p)
{
	const struct source *const *t = p->pc->d.rd->sources;
	unsigned i;

	for (i = p->src + 1; t[i] != NULL; i++)
		if (t[i]->produce != NULL &&
		    (p->w.reach == RESOLVE_ALL || t[i]->held))
			return i;
	return UINT_MAX;
}

static const struct source *
prod_next(const struct prod *p)
{
	unsigned i = prod_next_step(p);

	return i == UINT_MAX ? NULL : p->pc->d.rd->sources[i];
}

void
produce_absent(struct prod *p)
{
	const struct source *const *t = p->pc->d.rd->sources;
	const struct source *s = prod_source(p);
	unsigned i;

	if (s->release != NULL && p->data != NULL)
		s->release(p->data);
	p->data = NULL;
	if (prod_forget_bytes(p) == -1) {
		produce_end(p, FLIGHT_UNAVAILABLE, "cannot store the file");
		return;
	}
	if ((i = prod_next_step(p)) == UINT_MAX) {
		produce_end(p, FLIGHT_ABSENT, "not in the sources asked");
		return;
	}
	p->src = i;
	/* A fill of the loop's is listed there first, as prod_begin does. */
	if (!t[i]->produce_anywhere && !p->listed)
		prod_queue(p);
	else
		prod_run(p);
}

/* Name a new flight after what it fills: "KIND ID[ ARG][ from FROM]". */
static void
flight_label(struct flight *f, const struct prod_what *w)
{
	char id[BUILDID_HEX_MAX], label[320]; /* cut by flight_set_label */

	buildid_format(&w->id, id);
	snprintf(label, sizeof(label), "%s %s%s%.64s%s%.64s",
	    cache_kind_name(w->kind), id, w->arg[0] != '\0' ? " " : "", w->arg,
	    w->from[0] != '\0' ? " from " : "", w->from);
	flight_set_label(f, label);
}

/*
 * A producer for the flight of key k, made now (NULL when it exists or
 * there is no memory: data is then released).  *fp the flight, a
 * reference, whether made or joined (NULL when the table is full).
 */
static struct prod *
prod_make(struct producers *pc, const struct cache_key *k,
    const struct prod_what *w, unsigned src, void *data, struct flight **fp)
{
	const struct source *s = pc->d.rd->sources[src];
	struct flight *f;
	struct prod *p;
	int created;

	/*
	 * The flights of the loop's sources are counted against max-fills
	 * (upstream transfers), but for symbol tables: what a table's fill
	 * fetches are files, whose own fills are counted.
	 */
	f = flight_join(pc->d.rd->ft, k,
	    !s->produce_anywhere && w->kind != CACHE_SYMTAB, &created);
	*fp = f;
	if (f == NULL || !created || (p = calloc(1, sizeof(*p))) == NULL) {
		if (f != NULL && created) {
			flight_end(f, FLIGHT_FAILED, "out of memory");
			flight_detach(f);
		}
		if (s->release != NULL && data != NULL)
			s->release(data);
		return NULL;
	}
	flight_ref(f); /* the producer's */
	p->pc = pc;
	p->f = f;
	p->key = *k;
	p->w = *w;
	p->src = src;
	p->data = data;
	p->fd = -1;
	p->length = UINT64_MAX;
	flight_label(f, w);
	if (w->limit != 0)
		flight_set_limit(f, w->limit);
	if (w->announce != 0)
		flight_announce(f, w->announce);
	return p;
}

struct flight *
produce_join(struct producers *pc, const struct cache_key *k,
    const struct prod_what *w, unsigned src, void *data, int *created)
{
	const struct source *s = pc->d.rd->sources[src];
	struct flight *f;
	struct prod *p;

	/*
	 * A source that runs anywhere starts here, under its lock, so that
	 * what it joins (a package pass) never misses a fill that was coming.
	 */
	if (s->lock != NULL)
		s->lock(pc->d.rd, 1);
	p = prod_make(pc, k, w, src, data, &f);
	*created = p != NULL;
	if (p != NULL && s->produce_anywhere)
		s->produce(p);
	if (s->lock != NULL)
		s->lock(pc->d.rd, 0);
	if (p != NULL && !s->produce_anywhere)
		prod_queue(p);
	return f;
}

struct prod *
produce_adopt(struct producers *pc, const struct cache_key *k,
    const struct prod_what *w, unsigned src, void *data)
{
	struct flight *f;
	struct prod *p;

	p = prod_make(pc, k, w, src, data, &f);
	if (f != NULL)
		flight_unref(f); /* a made producer keeps its own */
	return p;
}

struct index_reader *
produce_reader(struct prod *p)
{
	return p->pc->reader;
}

/* ------------------------------------------------------------ the set */

const struct resolve_deps *
produce_deps(const struct prod *p)
{
	return p->pc->d.rd;
}

void
producers_ttls(struct producers *pc, unsigned negative_ttl, unsigned error_ttl)
{
	atomic_store(&pc->negative_ttl, negative_ttl);
	atomic_store(&pc->error_ttl, error_ttl);
}

void
producers_max_size(struct producers *pc, uint64_t max_size)
{
	atomic_store(&pc->max_size, max_size);
}

uint64_t
produce_max_size(const struct prod *p)
{
	return atomic_load(&p->pc->max_size);
}

struct producers *
producers_new(const struct producers_deps *d, char *err, size_t errlen)
{
	struct producers *pc;

	if ((pc = calloc(1, sizeof(*pc))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pc->d = *d;
	pc->loop = pthread_self();
	producers_ttls(pc, d->rd->cfg->negative_ttl, d->rd->cfg->error_ttl);
	producers_max_size(pc, d->rd->cfg->max_object_size);
	pthread_mutex_init(&pc->mu, NULL);
	pc->queue_ev = event_new(d->base, -1, 0, producers_queue_cb, pc);
	pc->reader = index_reader_new(d->rd->idx);
	if (pc->queue_ev == NULL || pc->reader == NULL) {
		snprintf(err, errlen, "out of memory");
		producers_free(pc);
		return NULL;
	}
	return pc;
}

void
producers_free(struct producers *pc)
{
	struct prod *p;

	if (pc == NULL)
		return;
	/* Fills still queued or running end as failures. */
	while ((p = pc->queue) != NULL) {
		pc->queue = p->next;
		produce_end(p, FLIGHT_FAILED, "server is shutting down");
	}
	while (pc->active != NULL)
		produce_end(pc->active, FLIGHT_FAILED,
		    "server is shutting down");
	if (pc->queue_ev != NULL)
		event_free(pc->queue_ev);
	index_reader_free(pc->reader);
	pthread_mutex_destroy(&pc->mu);
	free(pc);
}
