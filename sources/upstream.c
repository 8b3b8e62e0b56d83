/*
 * sources/upstream.c: the upstream debuginfods (sources/upstream.h).
 *
 * The request side refuses a request that went round a loop of servers
 * (its Via names us, or its X-Forwarded-For is full) and otherwise joins
 * the key's fill.  The flight side asks every upstream at once
 * (fetchers/upstream.c: the first valid answer wins, breakers skip the
 * failing ones) and writes the answer through the producer core, which
 * remembers a miss for the shortest negative-ttl of the upstreams and a
 * failure for the shortest error-ttl.  An upstream whose answer fails the
 * final check is blamed (its breaker counts it).
 *
 * Every move of a breaker is logged with its reason, so that an operator
 * sees why an upstream is skipped and when it is back.
 *
 * Threads: the set and the metadata queue's transfers belong to the
 * producers' loop; the queue itself is shared under mu.
 */
#include "sources/upstream.h"

#include <event2/event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"
#include "daemon/clock.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "fetchers/upstream.h"
#include "resolver/produce.h"
#include "resolver/rq.h"
#include "sources/sources.h"

/* Bytes of an upstream's answer to a metadata query kept at most. */
#define META_BODY_MAX (16u << 20)

struct upstreams {
	const struct config *cfg;
	struct upstream_set *set;
	/* What the set was told, kept for its life. */
	struct upstream_conf *ucf;
	const char **listeners;
	pthread_mutex_t mu;
	struct upstreams_meta *queue; /* under mu */
	struct event *queue_ev;
};

/* ------------------------------------------------------------ metrics */

static void
obs_request(void *arg, unsigned i)
{
	metrics_upstream_request(i);
}

static void
obs_latency(void *arg, unsigned i, double seconds)
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
obs_error(void *arg, unsigned i, enum upstream_err kind)
{
	metrics_upstream_error(i, uperr_metric(kind));
	if (kind == UPSTREAM_ERR_CONTENT)
		metrics_upstream_verify_failure(i);
}

/* How upstream i is shown. */
static const char *
obs_name(const struct upstreams *us, unsigned i)
{
	return i < us->cfg->nupstreams ? us->cfg->upstreams[i].name : "?";
}

static void
obs_breaker(void *arg, unsigned i, enum upstream_breaker state, const char *why,
    unsigned backoff)
{
	const char *name = obs_name(arg, i);

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
obs_working(void *arg, unsigned i, const char *path, unsigned seconds)
{
	log_info("upstream %s: no answer for %s after %us, but it answers: "
		 "waited for",
	    obs_name(arg, i), path, seconds);
}

/* ------------------------------------------------------------- source */

static enum src_result
upstream_lookup(struct rq *rq)
{
	const struct resolve_deps *d = rq->th->d;
	struct prod_what w;
	const char *why;

	rq_txn_end(rq);
	if (d->upstreams == NULL || d->prod == NULL ||
	    !upstreams_enabled(d->upstreams))
		return SRC_ABSENT;
	if ((why = resolve_loop(rq->cl.origin, d->via_token,
		 d->cfg->max_forwarded_for)) != NULL)
		return rq_outcome(rq, ANSWER_LOOP, why, 0, NULL);
	rq_what(rq, &w);
	return rq_produce(rq, &w, NULL);
}

/* The loop: ask every upstream for p, into its temp file. */
static void
upstream_produce(struct prod *p)
{
	struct upstreams *us = produce_deps(p)->upstreams;
	enum upstream_result res;

	if (us == NULL) {
		produce_absent(p);
		return;
	}
	if (produce_open(p) == -1) {
		produce_fetched(p, UPSTREAM_LOCAL, p->why);
		return;
	}
	p->fetch = upstream_fetch(us->set, p->w.path,
	    p->w.xff[0] != '\0' ? p->w.xff : NULL, p->w.via,
	    p->w.ua[0] != '\0' ? p->w.ua : NULL, p->w.limit,
	    us->cfg->max_object_size, &produce_sink, p, &res);
	if (p->fetch == NULL)
		produce_fetched(p, res,
		    res == UPSTREAM_NOTFOUND ? "not found"
					     : "every upstream is failing");
}

/* The loop: an upstream whose bytes failed the final check is blamed. */
static void
upstream_judged(struct prod *p)
{
	struct upstreams *us = produce_deps(p)->upstreams;

	if (p->wrong && p->has_upstream && us != NULL)
		upstream_blame(us->set, p->upstream);
}

const struct source source_upstream = {
	.name = "upstream",
	.lookup = upstream_lookup,
	.produce = upstream_produce,
	.judged = upstream_judged,
	.remembers = 1,
};

/* ----------------------------------------------------------- metadata */

/* upstream_meta_fn: the answers of a metadata query, to its asker. */
static void
meta_answered(void *arg, const struct upstream_meta_answer *answers, unsigned n)
{
	struct upstreams_meta *m = arg;

	m->done(m, answers, n);
}

static void
meta_queue_cb(evutil_socket_t fd, short what, void *arg)
{
	struct upstreams *us = arg;
	struct upstreams_meta *m, *next;

	pthread_mutex_lock(&us->mu);
	m = us->queue;
	us->queue = NULL;
	pthread_mutex_unlock(&us->mu);
	for (; m != NULL; m = next) {
		next = m->next;
		if (upstream_metadata(us->set, m->path,
			m->xff[0] != '\0' ? m->xff : NULL, m->via,
			m->ua[0] != '\0' ? m->ua : NULL,
			us->cfg->metadata_timeout, META_BODY_MAX, meta_answered,
			m) == NULL)
			m->done(m, NULL, 0);
	}
}

void
upstreams_metadata(struct upstreams *us, struct upstreams_meta *m)
{
	pthread_mutex_lock(&us->mu);
	m->next = us->queue;
	us->queue = m;
	pthread_mutex_unlock(&us->mu);
	event_active(us->queue_ev, EV_READ, 1);
}

/* ---------------------------------------------------------------- set */

/*
 * The upstream set's options from the configuration, whose strings they
 * borrow; the arrays are us's.  -1 when out of memory.
 */
static int
upstream_opts_of(struct upstreams *us, const struct config *cfg,
    struct upstream_opts *o)
{
	size_t i;

	memset(o, 0, sizeof(*o));
	if (cfg->nupstreams > 0 &&
	    (us->ucf = calloc(cfg->nupstreams, sizeof(*us->ucf))) == NULL)
		return -1;
	if (cfg->nlisten > 0 &&
	    (us->listeners = calloc(cfg->nlisten, sizeof(char *))) == NULL)
		return -1;
	for (i = 0; i < cfg->nupstreams; i++) {
		const struct config_upstream *cu = &cfg->upstreams[i];

		us->ucf[i] = (struct upstream_conf){
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
		us->listeners[i] = cfg->listen[i].text;
	o->upstreams = us->ucf;
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
	o->listeners = us->listeners;
	o->nlisteners = cfg->nlisten;
	o->now_ns = clock_mono_ns;
	return 0;
}

int
upstreams_enabled(const struct upstreams *us)
{
	return us != NULL && upstream_count(us->set) > 0;
}

struct upstreams *
upstreams_new(const struct config *cfg, struct event_base *base,
    struct producers *pc, char *err, size_t errlen)
{
	struct upstream_observer obs = {
		obs_request,
		obs_latency,
		obs_error,
		obs_breaker,
		obs_working,
		NULL,
	};
	struct upstream_opts uo;
	struct upstreams *us;
	unsigned negative_ttl = cfg->negative_ttl, error_ttl = cfg->error_ttl;
	size_t i;

	if ((us = calloc(1, sizeof(*us))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	us->cfg = cfg;
	pthread_mutex_init(&us->mu, NULL);
	for (i = 0; i < cfg->nupstreams; i++) {
		const struct config_upstream *u = &cfg->upstreams[i];

		if (!u->enabled)
			continue;
		if (u->negative_ttl < negative_ttl)
			negative_ttl = u->negative_ttl;
		if (u->error_ttl < error_ttl)
			error_ttl = u->error_ttl;
		metrics_upstream_name((unsigned)i, u->name);
	}
	if (pc != NULL)
		producers_ttls(pc, negative_ttl, error_ttl);
	us->queue_ev = event_new(base, -1, 0, meta_queue_cb, us);
	if (us->queue_ev == NULL || upstream_opts_of(us, cfg, &uo) == -1) {
		snprintf(err, errlen, "out of memory");
		upstreams_free(us);
		return NULL;
	}
	obs.arg = us;
	if ((us->set = upstream_set_new(&uo, base, &obs, err, errlen)) ==
	    NULL) {
		upstreams_free(us);
		return NULL;
	}
	return us;
}

void
upstreams_free(struct upstreams *us)
{
	struct upstreams_meta *m;

	if (us == NULL)
		return;
	while ((m = us->queue) != NULL) {
		us->queue = m->next;
		m->done(m, NULL, 0);
	}
	upstream_set_free(us->set);
	if (us->queue_ev != NULL)
		event_free(us->queue_ev);
	free(us->ucf);
	free(us->listeners);
	pthread_mutex_destroy(&us->mu);
	free(us);
}
