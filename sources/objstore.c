/*
 * sources/objstore.c: the object-store tier: lookups for fills, uploads of
 * every published blob, deletion of objects that do not verify.
 *
 * The upload queue is a list under one mutex, bounded by
 * store-upload-queue: publishing workers append (objstore_sink), an event
 * wakes the fills' loop, which starts up to UPLOADS_AT_ONCE uploads, each
 * reading the blob from the cache (an open descriptor keeps it readable
 * if it is evicted meanwhile).  An entry met while the store's breaker is
 * open is dropped: a store that is down is not queued for, and the
 * uploads of what is filled once it is back go through.
 */
#include "sources/objstore.h"

#include <event2/event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/blobstore.h"
#include "conf/config.h"
#include "conf/objstore.h"
#include "daemon/clock.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "fetchers/headers.h"
#include "fetchers/s3.h"
#include "resolver/produce.h"
#include "resolver/rq.h"
#include "sources/sources.h"

#define UPLOADS_AT_ONCE 4
#define OBJECT_MAX 512

struct objstore_upload {
	struct objstore_upload *next;
	struct objstore *t;
	struct cache_key k;
	char name[OBJECT_MAX];
	uint64_t size;
	int64_t mtime;
	size_t headers_len;
	char headers[]; /* the X-DEBUGINFOD-* lines: the object's metadata */
};

struct objstore {
	struct s3 *st;
	struct blobstore *bs;
	char prefix[300];
	char url[1200];
	char shown[1400];
	unsigned queue_max;
	pthread_mutex_t mu;
	struct objstore_upload *head, *tail; /* under mu */
	unsigned queued; /* under mu */
	unsigned running; /* on the loop */
	struct objstore_upload
	    *sending; /* those running, by next; on the loop */
	struct event *kick;
	atomic_int usable;
};

/* The store's breaker and errors, as for an upstream's. */
static void
obs_error(void *arg, unsigned i, enum upstream_err kind)
{
	if (kind == UPSTREAM_ERR_BREAKER)
		metrics_store(METRICS_STORE_ERROR);
}

static void
obs_breaker(void *arg, unsigned i, enum upstream_breaker state, const char *why,
    unsigned backoff)
{
	struct objstore *t = arg;

	metrics_store_breaker((int)state);
	atomic_store(&t->usable, state == UPSTREAM_CLOSED);
	if (why == NULL)
		return;
	if (state == UPSTREAM_OPEN)
		log_warnx("store %s: breaker open (%s): not asked, uploads "
			  "dropped; probed again in %us",
		    t->shown, why, backoff);
	else if (state == UPSTREAM_CLOSED)
		log_info("store %s: breaker closed (%s): asked again", t->shown,
		    why);
}

int
objstore_object(const struct objstore *t, const struct buildid *id,
    enum cache_kind kind, const char *arg, char *out, size_t len)
{
	char hex[BUILDID_HEX_MAX], kh[CACHE_KEY_HEX];
	struct cache_key k;
	int w;

	buildid_format(id, hex);
	if (kind == CACHE_SYMTAB) {
		/* Its format's version in the name: PREFIX/ID/symtab-v1. */
		w = snprintf(out, len, "%s%s/%s-%s", t->prefix, hex,
		    cache_kind_name(kind), arg);
	} else if (kind == CACHE_SECTION || kind == CACHE_SOURCE) {
		cache_key_make(&k, id, kind, arg);
		cache_key_hex(&k, kh);
		w = snprintf(out, len, "%s%s/%s/%s", t->prefix, hex,
		    cache_kind_name(kind), kh);
	} else {
		w = snprintf(out, len, "%s%s/%s", t->prefix, hex,
		    cache_kind_name(kind));
	}
	return w < 0 || (size_t)w >= len ? -1 : 0;
}

int
objstore_usable(struct objstore *t)
{
	return t != NULL && atomic_load(&t->usable);
}

/* How a lookup that gave nothing usable ended, for the metrics. */
static void
objstore_looked(enum upstream_result res)
{
	if (res == UPSTREAM_NOTFOUND)
		metrics_store(METRICS_STORE_MISS);
	else if (res != UPSTREAM_LOCAL && res != UPSTREAM_OK)
		metrics_store(METRICS_STORE_ERROR);
}

static void
deleted_cb(void *arg, int ok, long status, const char *why)
{
	if (ok)
		metrics_store(METRICS_STORE_DELETED);
	else
		log_warnx("store: deleting a corrupt object failed: %s", why);
}

/* What a lookup gave did not verify: delete the object, count it. */
static void
objstore_corrupt(struct objstore *t, const struct buildid *id,
    enum cache_kind kind, const char *arg, const char *why)
{
	char name[OBJECT_MAX];

	metrics_store(METRICS_STORE_CORRUPT);
	if (objstore_object(t, id, kind, arg, name, sizeof(name)) == -1)
		return;
	log_warnx("store %s: object %s did not verify (%s): deleted", t->shown,
	    name, why);
	if (s3_delete(t->st, name, deleted_cb, NULL) == -1)
		log_warnx("store: cannot delete %s", name);
}

/* ------------------------------------------------------------- source */

/*
 * The request side: while the breaker is closed, the key's fill, which
 * asks the store first.  A request that went round a loop of servers is
 * not asked here: the upstream step refuses it.  A store passed by (its
 * breaker open) or gone past in the fill (it failed) is said to the
 * request (rq_unasked, produce_unasked): an upload's judgement needs its
 * answer.
 */
static enum src_result
objstore_lookup(struct rq *rq)
{
	const struct resolve_deps *d = rq->d;
	struct prod_what w;

	if (d->prod == NULL || d->objstore == NULL ||
	    resolve_loop(rq->cl.origin, d->via_token,
		d->cfg->max_forwarded_for) != NULL)
		return SRC_ABSENT;
	if (!objstore_usable(d->objstore)) {
		rq_unasked(rq, "the object store: its breaker is open");
		return SRC_ABSENT;
	}
	rq_what(rq, &w);
	return rq_produce(rq, &w, NULL);
}

/* The fill goes past the store, which failed (why; NULL: breaker open). */
static void
objstore_unasked(struct prod *p, const char *why)
{
	char text[256];

	snprintf(text, sizeof(text), "the object store: %.200s",
	    why != NULL ? why : "its breaker is open");
	produce_unasked(p, text);
}

/*
 * The lookup ended.  An object goes on like an upstream's answer (the
 * final check, then publishing, without an upload back).  Anything else,
 * before a reader had a byte, passes the flight on: a remembered miss,
 * then the upstreams, in the same flight.
 */
static void
objstore_done(void *arg, enum upstream_result res, const char *why)
{
	struct prod *p = arg;
	struct objstore *t = produce_deps(p)->objstore;

	if (res == UPSTREAM_OK || res == UPSTREAM_LOCAL || produce_told(p)) {
		produce_fetched(p, res, why);
		return;
	}
	p->fetch = NULL;
	objstore_looked(res);
	/* A corrupt object is deleted: the store has nothing for the id. */
	if (res != UPSTREAM_NOTFOUND && !p->refused)
		objstore_unasked(p, why);
	if (p->refused)
		objstore_corrupt(t, &p->w.id, p->w.kind, p->w.arg,
		    "not an ELF file with the build-id asked for");
	else if (res == UPSTREAM_FAILED)
		log_info("fill of %s: the store failed (%s): %s", p->w.path,
		    why != NULL ? why : "breaker open",
		    p->w.reach == RESOLVE_ALL ? "asking the upstreams"
					      : "going on without it");
	produce_absent(p);
}

static const struct upstream_sink objstore_sink_of_lookups = {
	produce_accept,
	produce_data,
	objstore_done,
};

/* The loop: ask the store for p. */
static void
objstore_produce(struct prod *p)
{
	struct objstore *t = produce_deps(p)->objstore;
	enum upstream_result res;
	char name[OBJECT_MAX];

	if (!objstore_usable(t)) {
		objstore_unasked(p, NULL);
		produce_absent(p);
		return;
	}
	if (produce_open(p) == -1) {
		produce_fetched(p, UPSTREAM_LOCAL, p->why);
		return;
	}
	p->no_sink = 1; /* from the store: not uploaded back */
	if (objstore_object(t, &p->w.id, p->w.kind, p->w.arg, name,
		sizeof(name)) == -1) {
		objstore_done(p, UPSTREAM_FAILED, "object name too long");
		return;
	}
	p->fetch = s3_get(t->st, name, produce_max_size(p),
	    &objstore_sink_of_lookups, p, &res);
	if (p->fetch == NULL)
		objstore_done(p, res, NULL);
}

/* The verdict on what the store gave: a hit, counted before readers end. */
static void
objstore_verified(struct prod *p)
{
	metrics_store(METRICS_STORE_HIT);
}

/* The loop: what the store gave did not verify, or the fetch failed. */
static void
objstore_judged(struct prod *p)
{
	struct objstore *t = produce_deps(p)->objstore;

	if (p->verified)
		return; /* counted by objstore_verified */
	objstore_looked(p->res);
	if (p->wrong)
		objstore_corrupt(t, &p->w.id, p->w.kind, p->w.arg, p->why);
}

const struct source source_objstore = {
	.name = "objstore",
	.held = 1,
	.lookup = objstore_lookup,
	.produce = objstore_produce,
	.judged = objstore_judged,
	.verified = objstore_verified,
};

/* ------------------------------------------------------------- uploads */

static void objstore_pump(struct objstore *t);

static void
uploaded_cb(void *arg, int ok, long status, const char *why)
{
	struct objstore_upload *u = arg, **pp;
	struct objstore *t = u->t;

	for (pp = &t->sending; *pp != NULL; pp = &(*pp)->next)
		if (*pp == u) {
			*pp = u->next;
			break;
		}
	t->running--;
	metrics_store_uploading(t->running);
	if (ok) {
		metrics_store(METRICS_STORE_UPLOADED);
	} else {
		metrics_store(METRICS_STORE_UPLOAD_FAILED);
		log_warnx("store: upload of %s failed: %s", u->name, why);
		if (status == 403)
			metrics_store_credentials(0);
	}
	free(u);
	objstore_pump(t);
}

/* On the loop: start queued uploads while there is room. */
static void
objstore_pump(struct objstore *t)
{
	struct objstore_upload *u;
	int fd;

	while (t->running < UPLOADS_AT_ONCE) {
		pthread_mutex_lock(&t->mu);
		if ((u = t->head) != NULL) {
			t->head = u->next;
			if (t->head == NULL)
				t->tail = NULL;
			t->queued--;
			metrics_store_queue(t->queued);
		}
		pthread_mutex_unlock(&t->mu);
		if (u == NULL)
			return;
		if (!atomic_load(&t->usable) ||
		    (fd = blob_open(t->bs, &u->k)) == -1) {
			metrics_store(METRICS_STORE_DROPPED);
			free(u);
			continue;
		}
		if (s3_put(t->st, u->name, fd, u->size, u->headers,
			u->headers_len, u->mtime, uploaded_cb, u) == -1) {
			metrics_store(METRICS_STORE_UPLOAD_FAILED);
			free(u);
			continue;
		}
		u->next = t->sending;
		t->sending = u;
		t->running++;
		metrics_store_uploading(t->running);
	}
}

static void
objstore_kick_cb(evutil_socket_t fd, short what, void *arg)
{
	objstore_pump(arg);
}

void
objstore_sink(void *arg, const struct cache_key *k,
    const struct blob_info *info)
{
	struct objstore *t = arg;
	const struct cache_meta *m = &info->meta;
	struct objstore_upload *u;
	size_t n = headers_format(NULL, 0, m->file, m->archive, m->imasig,
	    m->extra, m->extra_len);

	if (!atomic_load(&t->usable)) {
		metrics_store(METRICS_STORE_DROPPED);
		return;
	}
	if ((u = malloc(sizeof(*u) + n + 1)) == NULL) {
		metrics_store(METRICS_STORE_DROPPED);
		return;
	}
	u->next = NULL;
	u->t = t;
	u->k = *k;
	u->size = info->size;
	u->mtime = info->mtime;
	/* As fetchers/headers.c reads them back from the object. */
	u->headers_len = headers_format(u->headers, n, m->file, m->archive,
	    m->imasig, m->extra, m->extra_len);
	u->headers[n] = '\0';
	if (objstore_object(t, &info->id, info->kind, info->arg, u->name,
		sizeof(u->name)) == -1) {
		free(u);
		metrics_store(METRICS_STORE_DROPPED);
		return;
	}
	pthread_mutex_lock(&t->mu);
	if (t->queued >= t->queue_max) {
		pthread_mutex_unlock(&t->mu);
		free(u);
		metrics_store(METRICS_STORE_DROPPED);
		return;
	}
	if (t->tail != NULL)
		t->tail->next = u;
	else
		t->head = u;
	t->tail = u;
	t->queued++;
	metrics_store_queue(t->queued);
	pthread_mutex_unlock(&t->mu);
	metrics_store(METRICS_STORE_QUEUED);
	event_active(t->kick, EV_READ, 1);
}

/* ------------------------------------------------------------ start-up */

/* The answer to the credentials check, in the log and in /metrics. */
static void
checked_cb(void *arg, int ok, long status, const char *why)
{
	struct objstore *t = arg;

	if (ok) {
		metrics_store_credentials(1);
		log_info("store %s: the bucket answers the credentials",
		    t->shown);
	} else if (status == 403 || status == 401) {
		metrics_store_credentials(0);
		log_warnx("store %s: the credentials are refused (%s): check "
			  "the access key and secret",
		    t->shown, why);
	} else {
		log_warnx("store %s: not usable yet: %s", t->shown, why);
	}
}

/* The store's settings from cfg; url and shown as config_store_* made. */
static void
objstore_conf(const struct config *cfg, const char *url, const char *shown,
    struct s3_conf *sc)
{
	const struct config_objstore *cs = cfg->store;

	memset(sc, 0, sizeof(*sc));
	sc->url = url;
	sc->name = shown;
	sc->region = cs->region;
	sc->access_key = cs->access_key;
	sc->secret_key = cs->secret_key;
	sc->timeout = cfg->store_timeout;
	sc->part_size = cfg->store_multipart_size;
	sc->transfer_timeout = cfg->upstream_timeout;
	sc->stall_timeout = cfg->upstream_stall_timeout;
	sc->min_rate = cfg->upstream_min_rate;
	sc->retries = cfg->upstream_retries;
	sc->breaker_failures = cfg->breaker_failures;
	sc->breaker_backoff = cfg->breaker_backoff;
	sc->breaker_backoff_max = cfg->breaker_backoff_max;
	sc->proxy = cfg->proxy;
	sc->ca_file = cfg->ca_file;
	sc->user_agent = cfg->user_agent;
	sc->now_ns = clock_mono_ns;
}

struct objstore *
objstore_new(const struct config *cfg, struct event_base *base,
    struct blobstore *bs, char *err, size_t errlen)
{
	const struct config_objstore *cs = cfg->store;
	struct s3_conf sc;
	struct objstore *t;
	struct upstream_observer obs = { NULL, NULL, obs_error, obs_breaker,
		NULL, NULL };

	if ((t = calloc(1, sizeof(*t))) == NULL) {
		snprintf(err, errlen, "store: out of memory");
		return NULL;
	}
	pthread_mutex_init(&t->mu, NULL);
	t->bs = bs;
	t->queue_max = cfg->store_upload_queue;
	atomic_store(&t->usable, 1);
	snprintf(t->prefix, sizeof(t->prefix), "%s", cs->prefix);
	config_objstore_public(cs, t->shown, sizeof(t->shown));
	if (config_objstore_url(cs, t->url, sizeof(t->url)) == -1 ||
	    (t->kick = event_new(base, -1, 0, objstore_kick_cb, t)) == NULL) {
		snprintf(err, errlen, "store: out of memory");
		objstore_free(t);
		return NULL;
	}
	objstore_conf(cfg, t->url, t->shown, &sc);
	obs.arg = t;
	metrics_store_name(t->shown);
	metrics_store_credentials(-1);
	if ((t->st = s3_new(&sc, base, &obs, err, errlen)) == NULL) {
		objstore_free(t);
		return NULL;
	}
	if (s3_check(t->st, checked_cb, t) == -1)
		log_warnx("store %s: cannot check the credentials", t->shown);
	blobstore_set_sink(bs, objstore_sink, t);
	log_info("store %s: shared tier (lookups after the cache, uploads "
		 "of every fill)",
	    t->shown);
	return t;
}

/* ---------------------------------------------------------------- purge */

struct objstore_purge {
	struct event_base *base;
	uint64_t deleted;
	int failed;
	char err[256];
};

static void
purged_cb(void *arg, int ok, uint64_t deleted, const char *why)
{
	struct objstore_purge *p = arg;

	p->deleted = deleted;
	if (!ok) {
		p->failed = 1;
		snprintf(p->err, sizeof(p->err), "%s", why);
	}
	event_base_loopbreak(p->base);
}

int
objstore_purge(const struct config *cfg, const struct buildid *id, uint64_t *n,
    char *err, size_t errlen)
{
	char url[1200], shown[1400], prefix[600], hex[BUILDID_HEX_MAX];
	struct s3_conf sc;
	struct s3 *st;
	struct objstore_purge p;

	*n = 0;
	memset(&p, 0, sizeof(p));
	buildid_format(id, hex);
	snprintf(prefix, sizeof(prefix), "%s%s/", cfg->store->prefix, hex);
	config_objstore_public(cfg->store, shown, sizeof(shown));
	if (config_objstore_url(cfg->store, url, sizeof(url)) == -1 ||
	    (p.base = event_base_new()) == NULL) {
		snprintf(err, errlen, "store: out of memory");
		return -1;
	}
	objstore_conf(cfg, url, shown, &sc);
	if ((st = s3_new(&sc, p.base, NULL, err, errlen)) == NULL) {
		event_base_free(p.base);
		return -1;
	}
	if (s3_purge(st, prefix, purged_cb, &p) == -1) {
		p.failed = 1;
		snprintf(p.err, sizeof(p.err), "out of memory");
	} else {
		event_base_dispatch(p.base);
	}
	s3_free(st);
	event_base_free(p.base);
	*n = p.deleted;
	if (p.failed) {
		snprintf(err, errlen, "store %s: %s", shown, p.err);
		return -1;
	}
	return 0;
}

void
objstore_free(struct objstore *t)
{
	struct objstore_upload *u;

	if (t == NULL)
		return;
	if (t->st != NULL)
		blobstore_set_sink(t->bs, NULL, NULL);
	s3_free(t->st);
	/* Their transfers ended with the store, without their callbacks. */
	while ((u = t->sending) != NULL) {
		t->sending = u->next;
		free(u);
	}
	while ((u = t->head) != NULL) {
		t->head = u->next;
		free(u);
	}
	if (t->kick != NULL)
		event_free(t->kick);
	pthread_mutex_destroy(&t->mu);
	free(t);
}
