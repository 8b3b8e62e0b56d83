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
 *
 * What the local files do not have comes from the cache of upstream
 * answers (cache/blobstore.h), then the negative entries, then a fill
 * (daemon/fill.h): the request joins the flight of its key and streams the
 * bytes as they arrive (struct waiter).  A section is cut from a local or
 * cached debuginfo/executable when there is one, else forwarded.
 */
#include "daemon/serve.h"

#include <sys/stat.h>

#include <errno.h>
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
#include "autoconf.h"
#include "daemon/clock.h"
#include "daemon/fill.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/pool.h"
#include "daemon/route.h"
#include "daemon/scan.h"
#include "indexer/elf.h"

/* Files tried per (build-id, kind) on the slow path. */
#define CANDIDATES_MAX 8
/* Cache-Control max-age of artifacts: a build-id's bytes never change. */
#define HIT_MAX_AGE (7 * 24 * 3600)

static const char banner[] =
    PACKAGE_NAME " " PACKAGE_VERSION ": a debuginfod-compatible server\n"
		 "GET /buildid/ID/debuginfo\n"
		 "GET /buildid/ID/executable\n"
		 "GET /buildid/ID/section/NAME\n"
		 "GET /buildid/ID/source/PATH\n"
		 "GET /metrics\n";

struct serve {
	struct serve_deps d;
	/* This process's name in Via headers, to see its own loops. */
	char via_token[40];
};

struct serve_thread {
	struct serve *srv;
	struct index_reader *rd;
};

static void remote_start(struct conn *c, struct serve_thread *st,
    const struct route *rt, int filled);
static void remote_lookup(struct conn *c, struct serve_thread *st,
    const struct route *rt, int filled);

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

/* Package fills a section request has had (struct slow, remote_start). */
#define PKG_FILLED_DEBUGINFO 0x1
#define PKG_FILLED_EXECUTABLE 0x2

struct slow {
	struct conn *c;
	struct serve *srv;
	struct serve_thread *st;
	struct route rt;
	struct found f;
	int status; /* 0: found */
	const char *why;
	int filled; /* package fills for this section: PKG_FILLED_* */
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
			reindex(s->srv->d.idx, path, fd, &s->f.st, &rec);
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

/*
 * A section from a cached debuginfo, else a cached executable: 0 when
 * s->f is filled, ELF_NOTFOUND, -1 when a cached file could not be read.
 */
static int
slow_cached_section(struct slow *s, struct index_reader *rd)
{
	static const enum cache_kind kinds[] = { CACHE_DEBUGINFO,
		CACHE_EXECUTABLE };
	struct elf_section sec;
	struct cache_key k;
	struct blob_info bi;
	char err[256];
	size_t i;
	int fd, rc, ret = ELF_NOTFOUND;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		cache_key_make(&k, &s->rt.id, kinds[i], "");
		if (index_reader_begin(rd) == -1)
			return -1;
		rc = blob_lookup(rd, &k, &bi);
		index_reader_end(rd);
		if (rc != 0 || (fd = blob_open(s->srv->d.bs, &k)) == -1)
			continue;
		rc = elf_find_section(fd, s->rt.arg, &sec, err, sizeof(err));
		if (rc != 0 || fstat(fd, &s->f.st) == -1) {
			if (rc == -1)
				ret = -1;
			close(fd);
			continue;
		}
		s->f.fd = fd;
		s->f.offset = sec.offset;
		s->f.size = sec.size;
		snprintf(s->f.path, sizeof(s->f.path), "/%s/%.*s",
		    cache_kind_name(kinds[i]), (int)sizeof(s->f.path) / 2,
		    s->rt.arg);
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
	if ((rd = index_reader_new(s->srv->d.idx)) == NULL) {
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
	if (rc != 0 && s->rt.endpoint == ROUTE_SECTION &&
	    s->srv->d.bs != NULL) {
		rc = slow_cached_section(s, rd);
		if (rc == -1)
			err = 1;
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
		metrics_request(METRICS_EP_SECTION, METRICS_HIT);
		conn_send_file(s->c, s->f.fd, s->f.offset, &art);
	} else if (s->status == 404 || s->rt.endpoint == ROUTE_SECTION) {
		/* Nothing here (or unreadable): ask upstream. */
		remote_start(s->c, s->st, &s->rt, s->filled);
	} else {
		conn_set_result(s->c, s->status == 404 ? "MISS" : "ERROR",
		    "local");
		conn_send_error(s->c, s->status, s->why);
	}
	free(s);
}

static void
slow_start(struct conn *c, struct serve_thread *st, const struct route *rt,
    int filled)
{
	struct serve *srv = st->srv;
	struct slow *s;

	if ((s = malloc(sizeof(*s))) == NULL) {
		conn_set_result(c, "ERROR", "-");
		conn_send_error(c, 503, "out of memory");
		return;
	}
	s->c = c;
	s->srv = srv;
	s->st = st;
	s->rt = *rt;
	s->filled = filled;
	conn_wait(c);
	if (pool_submit(srv->d.pool, slow_work, conn_inbox(c), slow_done, s) ==
	    -1) {
		free(s);
		conn_set_result(c, "ERROR", "-");
		conn_send_error(c, 503, "server is shutting down");
	}
}

/* --------------------------------------------------------------- remote */

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

/* A request joined to a flight, before and while it streams. */
struct waiter {
	struct conn *c;
	struct serve *srv;
	struct flight *f;
	struct event *ev;
	enum route_endpoint ep;
	int joined; /* another request started the fill */
	int streaming; /* the head is out */
	struct serve_thread *st;
	struct route *then; /* a section to cut once the file is in */
	int then_filled; /* PKG_FILLED_* once this fill is done */
};

static void
waiter_release(void *arg)
{
	struct waiter *w = arg;

	flight_unwatch(w->f, w);
	event_free(w->ev);
	flight_unref(w->f);
	free(w->then);
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
 * A section whose file a package fill brings into the cache: once it is
 * there, the waiter goes and the section is cut from the cache as for any
 * cached file.  Freeing the waiter's event from its own callback is fine
 * for a non-persistent libevent event.
 */
static void
section_after_fill(struct waiter *w, const struct flight_view *v)
{
	struct conn *c = w->c;
	struct serve_thread *st = w->st;
	struct route *rt = w->then;
	int filled = w->then_filled;

	if (v->state != FLIGHT_READY)
		return;
	w->then = NULL;
	conn_on_end(c, NULL, NULL);
	waiter_release(w);
	slow_start(c, st, rt, filled);
	free(rt);
}

/*
 * The max-age of a 404 for key k: what is left of its negative entry, which
 * a fill writes before it tells its waiters (0 when there is none: the
 * miss is not remembered).
 */
static unsigned
miss_max_age(struct serve_thread *st, const struct cache_key *k)
{
	struct neg_entry ne;
	int64_t now = clock_now();
	int rc;

	if (st->rd == NULL || index_reader_begin(st->rd) == -1)
		return 0;
	rc = neg_get(st->rd, k, now, &ne);
	index_reader_end(st->rd);
	return rc == 0 ? (unsigned)(ne.expires - now) : 0;
}

/*
 * The flight moved on.  Before the head: wait, answer the end, or start
 * streaming.  The exchange's end releases the waiter (conn_on_end), so w is
 * not touched after an answer.
 */
static void
waiter_check(struct waiter *w)
{
	struct conn *c = w->c;
	struct flight_view v;
	struct artifact art;
	const char *src;
	int fd;

	if (w->streaming) {
		conn_stream_wake(c);
		return;
	}
	flight_view(w->f, &v);
	if (w->then != NULL && v.state != FLIGHT_NOTFOUND &&
	    v.state != FLIGHT_FAILED) {
		section_after_fill(w, &v);
		return;
	}
	switch (v.state) {
	case FLIGHT_WAITING:
		return;
	case FLIGHT_STREAMING:
	case FLIGHT_READY:
		if ((fd = flight_open(w->f)) == -1) {
			conn_set_result(c, "ERROR", "-");
			metrics_request(metrics_endpoint_of(w->ep),
			    METRICS_ERROR);
			conn_send_error(c, 503, "cannot read the fill");
			return;
		}
		memset(&art, 0, sizeof(art));
		art.size = v.length;
		art.mtime = (time_t)flight_mtime(w->f);
		response_etag(&art, v.length,
		    (int64_t)flight_mtime(w->f) * 1000000000, 0);
		art.extra = flight_headers(w->f, &art.extra_len);
		art.cache = w->joined ? "JOINED" : "MISS";
		art.max_age = HIT_MAX_AGE;
		src = flight_source(w->f);
		conn_set_result(c, art.cache, src[0] != '\0' ? src : "cache");
		metrics_request(metrics_endpoint_of(w->ep),
		    w->joined ? METRICS_JOINED : METRICS_MISS);
		w->streaming = 1;
		conn_send_stream(c, fd, &art, waiter_avail, w);
		return;
	case FLIGHT_NOTFOUND:
		conn_set_result(c, "MISS", "upstream");
		metrics_request(metrics_endpoint_of(w->ep), METRICS_NOTFOUND);
		conn_send_miss(c, "not found",
		    miss_max_age(w->st, flight_key(w->f)));
		return;
	case FLIGHT_FAILED:
		conn_set_result(c, "ERROR", "upstream");
		metrics_request(metrics_endpoint_of(w->ep), METRICS_ERROR);
		/* 503 on a section makes clients fetch the whole file. */
		conn_send_error(c, w->ep == ROUTE_SECTION ? 503 : 502, v.why);
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
	static const char hex[] = "0123456789ABCDEF";
	char id[BUILDID_HEX_MAX];
	const char *p;
	size_t n;
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
	n = (size_t)w;
	for (p = rt->arg; *p != '\0'; p++) {
		unsigned char ch = (unsigned char)*p;

		if (n + 4 > len)
			return -1;
		if (ch > 0x20 && ch < 0x7f && ch != '%' && ch != '?' &&
		    ch != '#') {
			out[n++] = (char)ch;
		} else {
			out[n++] = '%';
			out[n++] = hex[ch >> 4];
			out[n++] = hex[ch & 0xf];
		}
	}
	out[n] = '\0';
	return 0;
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

/* Send a cached blob; 1 when sent, 0 when k is not cached. */
static int
send_cached(struct conn *c, struct serve_thread *st, const struct cache_key *k,
    enum route_endpoint ep)
{
	struct blobstore *bs = st->srv->d.bs;
	struct blob_info bi;
	struct artifact art;
	struct stat sb;
	struct pin *pin;
	int fd;

	if (blob_lookup(st->rd, k, &bi) != 0)
		return 0;
	if ((fd = blob_open(bs, k)) == -1)
		return 0;
	if (fstat(fd, &sb) == -1 || (uint64_t)sb.st_size != bi.size ||
	    (pin = malloc(sizeof(*pin))) == NULL) {
		close(fd);
		return 0;
	}
	pin->bs = bs;
	pin->key = *k;
	blob_pin(bs, k);
	blob_touch(bs, k, clock_now());
	memset(&art, 0, sizeof(art));
	art.size = bi.size;
	art.mtime = (time_t)bi.mtime;
	response_etag(&art, bi.size, bi.mtime * 1000000000, 0);
	art.extra = bi.headers;
	art.extra_len = bi.headers_len;
	art.cache = "HIT";
	art.max_age = HIT_MAX_AGE;
	conn_set_result(c, "HIT", "cache");
	metrics_request(metrics_endpoint_of(ep), METRICS_HIT);
	conn_on_end(c, pin_release, pin);
	/* The head is built before the reader ends: bi points into it. */
	conn_send_file(c, fd, 0, &art);
	return 1;
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

/* What a fill of a request starts from. */
struct what_src {
	struct conn *c;
	struct serve_thread *st;
	const struct route *rt;
	const struct pkg_found *pf; /* the member to extract, or NULL */
};

/* fill_what_fn: what a fill of src's request fetches. */
static void
what_of(struct fill_what *w, void *arg)
{
	const struct what_src *src = arg;
	const struct request *req = conn_request(src->c);
	const struct route *rt = src->rt;
	const struct pkg_found *pf = src->pf;
	const char *token = src->st->srv->via_token;
	const char *peer = conn_peer_addr(src->c);

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
	if (req->forwarded_for.p != NULL)
		snprintf(w->xff, sizeof(w->xff), "%.*s, %s",
		    (int)req->forwarded_for.n, req->forwarded_for.p, peer);
	else
		snprintf(w->xff, sizeof(w->xff), "%s", peer);
	slice_copy(req->user_agent, w->ua, sizeof(w->ua));
	if (req->via.p != NULL)
		snprintf(w->via, sizeof(w->via), "%.*s, 1.1 %s",
		    (int)req->via.n, req->via.p, token);
	else
		snprintf(w->via, sizeof(w->via), "1.1 %s", token);
}

/*
 * Join the fill of key k, starting it (from pf's package member when pf is
 * not NULL, else from the upstreams) when there is none, and wait for it.
 */
static void
await_fill(struct conn *c, struct serve_thread *st, const struct route *rt,
    const struct cache_key *k, const struct pkg_found *pf,
    const struct route *then, int then_filled)
{
	struct serve *srv = st->srv;
	enum metrics_endpoint mep = metrics_endpoint_of(rt->endpoint);
	struct what_src src = { c, st, rt, pf };
	struct waiter *wt;
	struct flight *f;
	int created;

	f = fill_join(srv->d.fill, k, pf != NULL, what_of, &src, &created);
	if (f == NULL) {
		conn_set_result(c, "ERROR", "-");
		metrics_request(mep, METRICS_ERROR);
		conn_send_error(c, 503, "too many fills in flight");
		return;
	}
	if ((wt = calloc(1, sizeof(*wt))) == NULL ||
	    (wt->ev = event_new(conn_base(c), -1, 0, waiter_event_cb, wt)) ==
		NULL) {
		free(wt);
		wt = NULL;
	}
	if (wt == NULL) {
		flight_unref(f);
		conn_set_result(c, "ERROR", "-");
		metrics_request(mep, METRICS_ERROR);
		conn_send_error(c, 503, "out of memory");
		return;
	}
	wt->c = c;
	wt->srv = srv;
	wt->f = f;
	wt->ep = rt->endpoint;
	wt->joined = !created;
	wt->st = st;
	wt->then_filled = then_filled;
	if (then != NULL && (wt->then = malloc(sizeof(*then))) != NULL)
		*wt->then = *then;
	conn_wait(c);
	conn_on_end(c, waiter_release, wt);
	if (flight_watch(f, waiter_wake, wt) == -1) {
		conn_set_result(c, "ERROR", "-");
		metrics_request(mep, METRICS_ERROR);
		conn_send_error(c, 503, "out of memory");
		return;
	}
	waiter_check(wt);
}

/*
 * A section of a file that an indexed package holds: fill that file (the
 * debuginfo, else the executable) from the package into the cache, then
 * cut the section from it (section_after_fill).
 */
static void
section_from_package(struct conn *c, struct serve_thread *st,
    const struct route *rt, const struct pkg_found *pf, int filled)
{
	struct route *frt;
	struct cache_key k;

	if ((frt = malloc(sizeof(*frt))) == NULL) {
		conn_set_result(c, "ERROR", "-");
		conn_send_error(c, 503, "out of memory");
		return;
	}
	*frt = *rt;
	frt->endpoint =
	    pf->kinds & ELF_KIND_DEBUGINFO ? ROUTE_DEBUGINFO : ROUTE_EXECUTABLE;
	frt->arg[0] = '\0';
	cache_key_make(&k, &frt->id, cache_kind_of(frt->endpoint), "");
	await_fill(c, st, frt, &k, pf, rt,
	    filled |
		(frt->endpoint == ROUTE_DEBUGINFO ? PKG_FILLED_DEBUGINFO
						  : PKG_FILLED_EXECUTABLE));
	free(frt);
}

/*
 * Not in the local files: the cache, then the indexed packages, then the
 * negative entries, then upstream.  filled: the PKG_FILLED_* package
 * fills that already ran for this section request.
 */
static void
remote_start(struct conn *c, struct serve_thread *st, const struct route *rt,
    int filled)
{
	if (st->rd == NULL || index_reader_begin(st->rd) == -1) {
		conn_set_result(c, "ERROR", "-");
		metrics_request(metrics_endpoint_of(rt->endpoint),
		    METRICS_ERROR);
		conn_send_error(c, 503, "index unavailable");
		return;
	}
	remote_lookup(c, st, rt, filled);
}

/* remote_start() in st->rd's read transaction, which it ends. */
static void
remote_lookup(struct conn *c, struct serve_thread *st, const struct route *rt,
    int filled)
{
	struct serve *srv = st->srv;
	const struct config *cfg = srv->d.cfg;
	const struct request *req = conn_request(c);
	enum metrics_endpoint mep = metrics_endpoint_of(rt->endpoint);
	struct pkg_found pf;
	struct cache_key k;
	struct neg_entry ne;
	int64_t now = clock_now();
	int rc;

	cache_key_make(&k, &rt->id, cache_kind_of(rt->endpoint), rt->arg);
	if (send_cached(c, st, &k, rt->endpoint)) {
		index_reader_end(st->rd);
		return;
	}
	pf.found = 0;
	if (rt->endpoint == ROUTE_DEBUGINFO || rt->endpoint == ROUTE_EXECUTABLE)
		pkgidx_find(st->rd, &rt->id,
		    rt->endpoint == ROUTE_DEBUGINFO ? ELF_KIND_DEBUGINFO
						    : ELF_KIND_EXECUTABLE,
		    pkg_found_cb, &pf);
	else if (rt->endpoint == ROUTE_SOURCE)
		pkgidx_find_source(st->rd, &rt->id, rt->arg, pkg_found_cb, &pf);
	else if (rt->endpoint == ROUTE_SECTION) {
		/* The debuginfo first; the executable when that lacked it. */
		if ((filled & PKG_FILLED_DEBUGINFO) == 0)
			pkgidx_find(st->rd, &rt->id, ELF_KIND_DEBUGINFO,
			    pkg_found_cb, &pf);
		if (!pf.found && (filled & PKG_FILLED_EXECUTABLE) == 0)
			pkgidx_find(st->rd, &rt->id, ELF_KIND_EXECUTABLE,
			    pkg_found_cb, &pf);
		if (pf.found)
			pf.kinds = (filled & PKG_FILLED_DEBUGINFO) == 0 &&
				(pf.kinds & ELF_KIND_DEBUGINFO)
			    ? ELF_KIND_DEBUGINFO
			    : ELF_KIND_EXECUTABLE;
	}
	rc = pf.found ? INDEX_NOTFOUND : neg_get(st->rd, &k, now, &ne);
	index_reader_end(st->rd);
	if (pf.found && srv->d.fill != NULL && rt->endpoint == ROUTE_SECTION) {
		section_from_package(c, st, rt, &pf, filled);
		return;
	}
	if (pf.found && srv->d.fill != NULL) {
		await_fill(c, st, rt, &k, &pf, NULL, 0);
		return;
	}
	if (rc == 0) {
		conn_set_result(c, "NEGATIVE", "cache");
		metrics_request(mep, METRICS_NEGATIVE);
		conn_send_miss(c,
		    ne.kind == NEG_NOTFOUND ? "not found"
					    : "not found (upstreams failing)",
		    (unsigned)(ne.expires - now));
		return;
	}
	if (srv->d.fill == NULL || !fill_enabled(srv->d.fill)) {
		conn_set_result(c, "MISS", "local");
		metrics_request(mep, METRICS_NOTFOUND);
		conn_send_error(c, 404,
		    rt->endpoint == ROUTE_SECTION
			? "no such section for this build-id"
			: "not found");
		return;
	}
	if (via_has(req->via, srv->via_token)) {
		conn_set_result(c, "MISS", "loop");
		metrics_request(mep, METRICS_NOTFOUND);
		conn_send_error(c, 404, "not forwarded: a request loop");
		return;
	}
	if (xff_count(req->forwarded_for) >= cfg->max_forwarded_for) {
		conn_set_result(c, "MISS", "loop");
		metrics_request(mep, METRICS_NOTFOUND);
		conn_send_error(c, 404,
		    "not forwarded: X-Forwarded-For limit reached");
		return;
	}
	await_fill(c, st, rt, &k, NULL, NULL, 0);
}

/* ---------------------------------------------------------------- admin */

/* 1 when the admin endpoint is open to this peer. */
static int
admin_allowed(struct conn *c, const struct config *cfg)
{
	const char *a = conn_peer_addr(c);

	switch (cfg->admin_access) {
	case CONFIG_ADMIN_ANY:
		return 1;
	case CONFIG_ADMIN_LOOPBACK:
		return strncmp(a, "127.", 4) == 0 || strcmp(a, "::1") == 0;
	default:
		return 0;
	}
}

struct purge {
	struct conn *c;
	struct serve *srv;
	char query[ROUTE_PATH_MAX + 1];
	int status;
	char text[256];
};

/* Decode %XX and '+' of a query value in place. */
static void
query_decode(char *s)
{
	char *o = s;

	for (; *s != '\0'; s++) {
		if (*s == '%' && buildid_hexval((unsigned char)s[1]) >= 0 &&
		    buildid_hexval((unsigned char)s[2]) >= 0) {
			*o++ = (char)(buildid_hexval((unsigned char)s[1]) * 16 +
			    buildid_hexval((unsigned char)s[2]));
			s += 2;
		} else {
			*o++ = *s == '+' ? ' ' : *s;
		}
	}
	*o = '\0';
}

static void
purge_work(void *arg)
{
	struct purge *p = arg;
	struct buildid id;
	const char *why = NULL;
	char err[256], *val;
	uint64_t blobs = 0, negs = 0;
	size_t n;
	int rc = -1;

	p->status = 200;
	if ((val = strchr(p->query, '=')) != NULL)
		*val++ = '\0';
	if (strcmp(p->query, "negative") == 0) {
		rc = neg_purge(p->srv->d.idx, NULL, &negs, err, sizeof(err));
	} else if (strcmp(p->query, "id") == 0 && val != NULL) {
		query_decode(val);
		if (buildid_parse(&id, val, strlen(val), &why) == -1) {
			p->status = 400;
			snprintf(p->text, sizeof(p->text), "bad id: %s", why);
			return;
		}
		rc = blob_purge(p->srv->d.bs, &id, NULL, &blobs, err,
		    sizeof(err));
		if (rc == 0)
			rc = neg_purge(p->srv->d.idx, &id, &negs, err,
			    sizeof(err));
	} else if (strcmp(p->query, "upstream") == 0 && val != NULL) {
		query_decode(val);
		n = strlen(val);
		while (n > 0 && val[n - 1] == '/')
			val[--n] = '\0';
		rc = blob_purge(p->srv->d.bs, NULL, val, &blobs, err,
		    sizeof(err));
	} else {
		p->status = 400;
		snprintf(p->text, sizeof(p->text),
		    "purge what? id=ID, negative or upstream=URL");
		return;
	}
	if (rc == -1) {
		p->status = 503;
		snprintf(p->text, sizeof(p->text), "purge failed: %.200s", err);
		return;
	}
	snprintf(p->text, sizeof(p->text),
	    "purged %llu entries, %llu negative\n", (unsigned long long)blobs,
	    (unsigned long long)negs);
}

static void
purge_done(void *arg)
{
	struct purge *p = arg;

	conn_set_result(p->c, p->status == 200 ? "PURGE" : "ERROR", "-");
	if (p->status == 200)
		conn_send_text(p->c, 200, "text/plain", p->text,
		    strlen(p->text));
	else
		conn_send_error(p->c, p->status, p->text);
	free(p);
}

static void
purge_start(struct conn *c, struct serve *srv, const struct route *rt)
{
	struct purge *p;

	if (!admin_allowed(c, srv->d.cfg)) {
		conn_send_error(c, 403,
		    "the admin endpoint is not open to you");
		return;
	}
	if ((p = calloc(1, sizeof(*p))) == NULL) {
		conn_send_error(c, 503, "out of memory");
		return;
	}
	p->c = c;
	p->srv = srv;
	snprintf(p->query, sizeof(p->query), "%s", rt->arg);
	conn_wait(c);
	if (pool_submit_long(srv->d.pool, purge_work, conn_inbox(c), purge_done,
		p) == -1) {
		free(p);
		conn_send_error(c, 503, "server is shutting down");
	}
}

static void
send_metrics(struct conn *c)
{
	size_t len;
	char *text;

	if ((text = metrics_render(&len)) == NULL) {
		conn_send_error(c, 503, "out of memory");
		return;
	}
	conn_send_text(c, 200, "text/plain; version=0.0.4", text, len);
	free(text);
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
		metrics_request(METRICS_EP_OTHER, METRICS_BAD);
		conn_send_error(c, rc, why);
		return;
	}
	switch (rt.endpoint) {
	case ROUTE_BANNER:
		conn_send_text(c, 200, "text/plain", banner,
		    sizeof(banner) - 1);
		return;
	case ROUTE_METRICS:
		send_metrics(c);
		return;
	case ROUTE_PURGE:
		purge_start(c, st->srv, &rt);
		return;
	case ROUTE_SOURCE:
		remote_start(c, st, &rt, 0);
		return;
	case ROUTE_SECTION:
		slow_start(c, st, &rt, 0);
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
	if (rc == 0 && !fa.stale) {
		/* Not a local file: the cache and the rest, same snapshot. */
		remote_lookup(c, st, &rt, 0);
		return;
	}
	index_reader_end(st->rd);
	if (rc == 1) {
		found_artifact(&f, &art);
		conn_set_result(c, "HIT", "local");
		metrics_request(metrics_endpoint_of(rt.endpoint), METRICS_HIT);
		conn_send_file(c, f.fd, 0, &art);
	} else if (fa.stale) {
		slow_start(c, st, &rt, 0);
	} else {
		conn_set_result(c, "ERROR", "-");
		conn_send_error(c, 503, "index lookup failed");
	}
}

static void *
serve_thread_start(void *arg)
{
	struct serve_thread *st;

	if ((st = calloc(1, sizeof(*st))) == NULL)
		return NULL;
	st->srv = arg;
	st->rd = index_reader_new(st->srv->d.idx);
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
serve_new(const struct serve_deps *deps)
{
	struct serve *srv;

	uint64_t r = 0;
	int fd;

	if ((srv = calloc(1, sizeof(*srv))) == NULL)
		return NULL;
	srv->d = *deps;
	if ((fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)) != -1) {
		if (read(fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
			r = 0;
		close(fd);
	}
	if (r == 0)
		r = (uint64_t)getpid() * 2654435761u ^ (uint64_t)time(NULL);
	snprintf(srv->via_token, sizeof(srv->via_token), "dbgmirror-%016llx",
	    (unsigned long long)r);
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
