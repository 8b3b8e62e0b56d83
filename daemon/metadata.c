/*
 * daemon/metadata.c: /metadata, as elfutils' debuginfod (0.192+) answers
 * it: {"results":[{"type","buildid","file","archive"?}...],"complete":B}.
 *
 * A query (struct mq) has two parts that run at once: the walk of the
 * path index (cache/pathindex.h) on a worker, bounded by metadata-timeout,
 * and the same query sent to every enabled upstream on the producers' loop
 * (sources/upstream.h, fetchers/upstream.c), each given metadata-timeout
 * too.
 * The answer, the local results and then the upstreams' (each read and
 * written again, never copied through: daemon/json.h), goes out on the
 * connection's thread when both parts are done.  "complete" is false
 * when the walk ran out of time or room, or an upstream failed, timed
 * out, could not be asked (its breaker open), sent something that is no
 * metadata answer, or said it was incomplete.
 *
 * A query that went round a loop of servers (the loop guard of every
 * forwarded request: resolver/resolve.h) is answered from the index alone:
 * the server it came through asks the others.
 *
 * Lifetime: three holders share the record, counted under its mutex: the
 * exchange (until conn_on_end), the worker's job (until its completion
 * on the connection's thread) and the upstreams' part (until its answer
 * on the producers' loop).  That loop wakes the connection's thread
 * through an event of that thread's base, only while the exchange lasts;
 * the event is freed on that thread when the exchange ends, and when it
 * was pending then, the reference it carried is dropped there.
 */
#include "daemon/metadata.h"

#include <event2/event.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/index.h"
#include "cache/pathindex.h"
#include "conf/config.h"
#include "daemon/clock.h"
#include "daemon/http.h"
#include "daemon/json.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/pool.h"
#include "daemon/snapshot.h"
#include "resolver/resolve.h"
#include "sources/upstream.h"
#include "daemon/route.h"
#include "fetchers/upstream.h"
#include "indexer/buildid.h"
#include "indexer/elf.h"

/*
 * Bytes of results kept from the index, and from the upstreams: beyond
 * them an answer is cut (complete:false), so that a glob of everything
 * costs a bounded amount of memory.
 */
#define RESULTS_MAX (16u << 20)

struct mq {
	pthread_mutex_t mu;
	unsigned refs;
	int gone; /* the exchange ended */
	int woken; /* ev is active and holds the upstreams' reference */
	struct conn *c;
	struct event *ev; /* on c's loop: the upstreams answered */
	const struct metadata_deps *d;
	struct snapshot *snap; /* the settings of the query's exchange */
	enum pathidx_query q;
	char key[16];
	char value[ROUTE_PATH_MAX + 1];
	struct buildid id;
	/* The index's part, written by the worker. */
	struct jbuf local;
	int local_complete;
	int local_done;
	/* The upstreams' part, written on the producers' loop. */
	struct jbuf remote;
	int remote_complete;
	int remote_done;
	struct upstreams_meta fm;
};

static void
mq_unref(struct mq *m)
{
	unsigned left;

	pthread_mutex_lock(&m->mu);
	left = --m->refs;
	pthread_mutex_unlock(&m->mu);
	if (left > 0)
		return;
	jbuf_free(&m->local);
	jbuf_free(&m->remote);
	snapshot_unref(m->snap);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

/* On c's thread, once both parts are done: the answer. */
static void
mq_answer(struct mq *m)
{
	struct jbuf body = { .max = 2 * RESULTS_MAX + 64 };
	int complete = m->local_complete && m->remote_complete;
	int found = m->local.len > 0 || m->remote.len > 0;

	if (jbuf_put(&body, "{\"results\":[", 12) == -1 ||
	    (m->local.len > 0 &&
		jbuf_put(&body, m->local.p, m->local.len) == -1) ||
	    (m->local.len > 0 && m->remote.len > 0 &&
		jbuf_put(&body, ",", 1) == -1) ||
	    (m->remote.len > 0 &&
		jbuf_put(&body, m->remote.p, m->remote.len) == -1) ||
	    jbuf_put(&body, "],\"complete\":", 13) == -1 ||
	    jbuf_put(&body, complete ? "true}" : "false}", complete ? 5 : 6) ==
		-1) {
		conn_set_result(m->c, "ERROR", "metadata");
		metrics_request(METRICS_EP_METADATA, METRICS_ERROR);
		conn_send_error(m->c, 503, "out of memory");
		jbuf_free(&body);
		return;
	}
	conn_set_result(m->c, complete ? (found ? "HIT" : "MISS") : "ERROR",
	    "metadata");
	metrics_request(METRICS_EP_METADATA,
	    !complete   ? METRICS_ERROR
		: found ? METRICS_HIT
			: METRICS_NOTFOUND);
	conn_send_text(m->c, 200, "application/json", body.p, body.len);
	jbuf_free(&body);
}

/* On c's thread: one part ended; answer when both have. */
static void
mq_check(struct mq *m)
{
	int ready;

	pthread_mutex_lock(&m->mu);
	ready = !m->gone && m->local_done && m->remote_done;
	pthread_mutex_unlock(&m->mu);
	if (ready)
		mq_answer(m);
}

/* conn_on_end: the exchange is over (answered, or the client left). */
static void
mq_release(void *arg)
{
	struct mq *m = arg;
	int woken;

	pthread_mutex_lock(&m->mu);
	m->gone = 1;
	/* An event still pending is cancelled: its reference is ours. */
	woken = m->woken;
	m->woken = 0;
	if (m->ev != NULL)
		event_free(m->ev);
	m->ev = NULL;
	pthread_mutex_unlock(&m->mu);
	if (woken)
		mq_unref(m);
	mq_unref(m);
}

/* ---------------------------------------------------------- the index */

/* What an entry's archive is shown as: a package as the server's
 * X-DEBUGINFOD-ARCHIVE shows it, an upstream's as it said. */
static const char *
archive_shown(const struct mq *m, const struct pathidx_entry *e)
{
	const char *slash;

	if (e->origin != PATHIDX_PACKAGE || m->snap->cfg->archive_full_path ||
	    (slash = strrchr(e->archive, '/')) == NULL)
		return e->archive;
	return slash + 1;
}

static int
local_cb(const struct pathidx_entry *e, void *arg)
{
	struct mq *m = arg;
	char hex[BUILDID_HEX_MAX];
	const char *archive = archive_shown(m, e);

	buildid_format(&e->id, hex);
	/* An unstripped binary is both: two results. */
	if ((e->kinds & ELF_KIND_EXECUTABLE) != 0 &&
	    json_result(&m->local, "executable", hex, e->path, archive) == -1)
		return 1;
	if ((e->kinds & ELF_KIND_DEBUGINFO) != 0 &&
	    json_result(&m->local, "debuginfo", hex, e->path, archive) == -1)
		return 1;
	return 0;
}

/* Worker: walk the index. */
static void
local_work(void *arg)
{
	struct mq *m = arg;
	struct index_reader *rd;
	int64_t deadline;
	int rc = -1;

	deadline = clock_mono_ns() +
	    (int64_t)m->snap->cfg->metadata_timeout * 1000000000;
	if ((rd = index_reader_new(m->d->idx)) != NULL &&
	    index_reader_begin(rd) == 0) {
		rc = pathidx_find(rd, m->q, m->value, &m->id, deadline,
		    clock_mono_ns, local_cb, m);
		index_reader_end(rd);
	}
	index_reader_free(rd);
	if (rc == PATHIDX_TIMEOUT)
		log_info("/metadata?key=%s: the index's walk ran out of time "
			 "(%us)",
		    m->key, m->snap->cfg->metadata_timeout);
	else if (rc == -1)
		log_warnx("%s: the index could not be read", __func__);
	m->local_complete = rc == 0 && !m->local.full;
}

/* On c's thread. */
static void
local_done(void *arg)
{
	struct mq *m = arg;

	m->local_done = 1;
	mq_check(m);
	mq_unref(m);
}

/* -------------------------------------------------------- the upstreams */

/* On c's thread: the upstreams answered. */
static void
remote_event_cb(evutil_socket_t fd, short what, void *arg)
{
	struct mq *m = arg;

	pthread_mutex_lock(&m->mu);
	m->woken = 0;
	pthread_mutex_unlock(&m->mu);
	m->remote_done = 1;
	mq_check(m);
	mq_unref(m);
}

/* upstreams_meta's done, on the producers' loop: read the answers. */
static void
remote_answered(struct upstreams_meta *fm, const struct upstream_meta_answer *a,
    unsigned n)
{
	struct mq *m = (struct mq *)((char *)fm - offsetof(struct mq, fm));
	int complete = a != NULL, ok, c;
	unsigned i;

	for (i = 0; a != NULL && i < n; i++) {
		ok = a[i].ok &&
		    json_read_results(a[i].body, a[i].len, &m->remote, &c) >= 0;
		if (!ok)
			log_info("/metadata?key=%s: %s: %s", m->key, a[i].url,
			    a[i].ok ? "not a metadata answer" : a[i].why);
		complete = complete && ok && c;
	}
	m->remote_complete = complete && !m->remote.full;
	pthread_mutex_lock(&m->mu);
	if (!m->gone) {
		m->woken = 1;
		event_active(m->ev, EV_READ, 1);
		pthread_mutex_unlock(&m->mu);
		return; /* remote_event_cb, or mq_release, lets go */
	}
	pthread_mutex_unlock(&m->mu);
	mq_unref(m);
}

/* The path to ask upstreams: the query, escaped again.  0, or -1. */
static int
remote_path(const struct mq *m, char *out, size_t len)
{
	int w = snprintf(out, len, "/metadata?key=%s&value=", m->key);

	if (w < 0 || (size_t)w >= len)
		return -1;
	return route_encode(m->value, ROUTE_ENC_QUERY, out + w,
	    len - (size_t)w);
}

/* ------------------------------------------------------------- start */

/*
 * Take key and value from the query: 0, or -1 with why.  The first of
 * each counts; other parameters are ignored.
 */
static int
parse_query(struct mq *m, const char *query, const char **why)
{
	char part[ROUTE_PATH_MAX + 1], *eq;
	const char *p = query, *amp;
	int has_key = 0, has_value = 0;
	size_t n;

	while (*p != '\0') {
		amp = strchr(p, '&');
		n = amp != NULL ? (size_t)(amp - p) : strlen(p);
		if (route_decode(p, n, part, 1, why) == -1)
			return -1;
		if ((eq = strchr(part, '=')) != NULL) {
			*eq++ = '\0';
			if (strcmp(part, "key") == 0 && !has_key) {
				if (strlen(eq) >= sizeof(m->key)) {
					*why = "unknown key: use file, glob "
					       "or buildid";
					return -1;
				}
				strcpy(m->key, eq);
				has_key = 1;
			} else if (strcmp(part, "value") == 0 && !has_value) {
				strcpy(m->value, eq);
				has_value = 1;
			}
		}
		p += n + (amp != NULL);
	}
	if (!has_key || !has_value) {
		*why = "metadata needs key=file|glob|buildid and value=...";
		return -1;
	}
	if (strcmp(m->key, "file") == 0) {
		m->q = PATHIDX_FILE;
	} else if (strcmp(m->key, "glob") == 0) {
		m->q = PATHIDX_GLOB;
	} else if (strcmp(m->key, "buildid") == 0) {
		m->q = PATHIDX_BUILDID;
		if (buildid_parse(&m->id, m->value, strlen(m->value), why) ==
		    -1)
			return -1;
	} else {
		*why = "unknown key: use file, glob or buildid";
		return -1;
	}
	return 0;
}

void
metadata_start(const struct metadata_deps *d, struct conn *c, const char *query,
    const struct resolve_origin *o)
{
	const char *why = NULL;
	struct mq *m;
	int federate;

	if ((m = calloc(1, sizeof(*m))) == NULL) {
		metrics_request(METRICS_EP_METADATA, METRICS_ERROR);
		conn_send_error(c, 503, "out of memory");
		return;
	}
	m->d = d;
	m->c = c;
	if (parse_query(m, query, &why) == -1) {
		free(m);
		metrics_request(METRICS_EP_METADATA, METRICS_BAD);
		conn_send_error(c, 400, why);
		return;
	}
	m->local.max = m->remote.max = RESULTS_MAX;
	m->remote_complete = 1;
	federate = upstreams_enabled(d->upstreams) &&
	    resolve_loop(o, d->via_token,
		conn_snapshot(c)->cfg->max_forwarded_for) == NULL;
	/* A query too long to forward is answered from here, incomplete. */
	if (federate && remote_path(m, m->fm.path, sizeof(m->fm.path)) == -1) {
		federate = 0;
		m->remote_complete = 0;
	}
	pthread_mutex_init(&m->mu, NULL);
	if (federate &&
	    (m->ev = event_new(conn_base(c), -1, 0, remote_event_cb, m)) ==
		NULL) {
		pthread_mutex_destroy(&m->mu);
		free(m);
		metrics_request(METRICS_EP_METADATA, METRICS_ERROR);
		conn_send_error(c, 503, "out of memory");
		return;
	}
	m->refs = 2; /* the exchange's, the job's */
	m->snap = snapshot_ref(conn_snapshot(c));
	m->remote_done = !federate;
	conn_wait(c);
	conn_on_end(c, mq_release, m);
	if (federate) {
		m->refs++;
		resolve_forward_headers(o, d->via_token, m->fm.xff,
		    sizeof(m->fm.xff), m->fm.via, sizeof(m->fm.via), m->fm.ua,
		    sizeof(m->fm.ua));
		m->fm.done = remote_answered;
		upstreams_metadata(d->upstreams, &m->fm);
	}
	if (pool_submit(d->pool, local_work, conn_inbox(c), local_done, m) ==
	    -1) {
		mq_unref(m); /* the job's */
		conn_set_result(c, "ERROR", "metadata");
		metrics_request(METRICS_EP_METADATA, METRICS_ERROR);
		conn_send_error(c, 503, "server is shutting down");
	}
}
