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
#include <stdatomic.h>
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
	const struct config *cfg; /* the last upstreams_apply's */
	struct producers *pc;
	struct upstream_set *set;
	const char *
	    *listeners; /* the first configuration's: never a reload's */
	size_t nlisteners;
	/*
	 * The name of each metrics slot (daemon/metrics.h) given out, which
	 * is the id of its upstream in the set: kept while the process
	 * lives, so that an upstream that leaves and comes back keeps its
	 * counters.  ids: the slot of cfg's upstream i.
	 */
	char *slots[METRICS_MAX_UPSTREAMS];
	unsigned ids[CONFIG_UPSTREAMS_MAX];
	atomic_uint enabled; /* upstreams to ask; any thread */
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

/* How upstream id is shown. */
static const char *
obs_name(const struct upstreams *us, unsigned id)
{
	return id < METRICS_MAX_UPSTREAMS && us->slots[id] != NULL
	    ? us->slots[id]
	    : "?";
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
	const struct resolve_deps *d = rq->d;
	struct prod_what w;
	const char *why;

	rq_txn_end(rq);
	if (d->prod == NULL || !upstreams_enabled(d->upstreams))
		return SRC_ABSENT;
	if ((why = resolve_loop(rq->cl.origin, d->via_token,
		 d->cfg->max_forwarded_for)) != NULL)
		return rq_outcome(rq, ANSWER_LOOP, why, 0, NULL);
	rq_what(rq, &w);
	return rq_produce(rq, &w, NULL);
}

/*
 * An upstream whose breaker is open is not asked: a miss of the others
 * then says less than that none has the file, which p's readers are told.
 */
static void
upstream_unasked(struct upstreams *us, struct prod *p)
{
	char text[256];
	size_t i;

	for (i = 0; i < us->cfg->nupstreams; i++) {
		if (!us->cfg->upstreams[i].enabled ||
		    upstream_usable(us->set, us->ids[i]))
			continue;
		snprintf(text, sizeof(text),
		    "upstream %.200s: its breaker is open",
		    us->cfg->upstreams[i].name);
		produce_unasked(p, text);
		return;
	}
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
	upstream_unasked(us, p);
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
 * The metrics slot of the upstream named name: the one it had, a free
 * one, or one whose upstream is not in cfg; METRICS_MAX_UPSTREAMS when
 * none (more upstreams than slots).  Out of memory, too.
 */
static unsigned
slot_of(struct upstreams *us, const struct config *cfg, const char *name)
{
	unsigned i, spare = METRICS_MAX_UPSTREAMS;
	size_t j;

	for (i = 0; i < METRICS_MAX_UPSTREAMS; i++) {
		if (us->slots[i] != NULL && strcmp(us->slots[i], name) == 0)
			return i;
		if (us->slots[i] == NULL && spare == METRICS_MAX_UPSTREAMS)
			spare = i;
	}
	for (i = 0; spare == METRICS_MAX_UPSTREAMS && i < METRICS_MAX_UPSTREAMS;
	     i++) {
		for (j = 0; j < cfg->nupstreams; j++)
			if (strcmp(us->slots[i], cfg->upstreams[j].name) == 0)
				break;
		if (j == cfg->nupstreams)
			spare = i;
	}
	if (spare == METRICS_MAX_UPSTREAMS)
		return spare;
	free(us->slots[spare]);
	if ((us->slots[spare] = strdup(name)) == NULL)
		return METRICS_MAX_UPSTREAMS;
	return spare;
}

/*
 * The upstream set's options from cfg, whose strings they borrow (the set
 * copies them); the array of upstreams is *ucf, the caller's to free.  -1
 * when out of memory.
 */
static int
upstream_opts_of(struct upstreams *us, const struct config *cfg,
    struct upstream_opts *o, struct upstream_conf **ucf)
{
	size_t i;

	memset(o, 0, sizeof(*o));
	*ucf = NULL;
	if (cfg->nupstreams > 0 &&
	    (*ucf = calloc(cfg->nupstreams, sizeof(**ucf))) == NULL)
		return -1;
	for (i = 0; i < cfg->nupstreams; i++) {
		const struct config_upstream *cu = &cfg->upstreams[i];

		(*ucf)[i] = (struct upstream_conf){
			.id = us->ids[i],
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
	o->upstreams = *ucf;
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
	o->nlisteners = us->nlisteners;
	o->now_ns = clock_mono_ns;
	return 0;
}

int
upstreams_enabled(const struct upstreams *us)
{
	return us != NULL && atomic_load(&us->enabled) > 0;
}

int
upstreams_apply(struct upstreams *us, const struct config *cfg,
    struct upstream_changes *ch)
{
	unsigned negative_ttl = cfg->negative_ttl, error_ttl = cfg->error_ttl;
	unsigned enabled = 0, shown[METRICS_MAX_UPSTREAMS] = { 0 }, i;
	struct upstream_conf *ucf;
	struct upstream_opts uo;
	int rc;

	for (i = 0; i < cfg->nupstreams; i++) {
		const struct config_upstream *u = &cfg->upstreams[i];

		us->ids[i] = slot_of(us, cfg, u->name);
		if (us->ids[i] < METRICS_MAX_UPSTREAMS)
			shown[us->ids[i]] = 1;
		if (!u->enabled)
			continue;
		enabled++;
		if (u->negative_ttl < negative_ttl)
			negative_ttl = u->negative_ttl;
		if (u->error_ttl < error_ttl)
			error_ttl = u->error_ttl;
	}
	memset(ch, 0, sizeof(*ch));
	/* The loop's reads are cfg's from now on, whatever happens below. */
	us->cfg = cfg;
	if (upstream_opts_of(us, cfg, &uo, &ucf) == -1)
		return -1;
	rc = us->set == NULL ? 0 : upstream_set_apply(us->set, &uo, ch);
	free(ucf);
	if (rc == -1)
		return -1;
	/* Only the configured upstreams are shown; the others keep counts. */
	for (i = 0; i < METRICS_MAX_UPSTREAMS; i++)
		metrics_upstream_name(i, shown[i] ? us->slots[i] : NULL);
	atomic_store(&us->enabled, enabled);
	if (us->pc != NULL)
		producers_ttls(us->pc, negative_ttl, error_ttl);
	return 0;
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
	struct upstream_changes ch;
	struct upstream_conf *ucf;
	struct upstream_opts uo;
	struct upstreams *us;
	size_t i;

	if ((us = calloc(1, sizeof(*us))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	us->pc = pc;
	pthread_mutex_init(&us->mu, NULL);
	us->queue_ev = event_new(base, -1, 0, meta_queue_cb, us);
	if (us->queue_ev == NULL ||
	    (cfg->nlisten > 0 &&
		(us->listeners = calloc(cfg->nlisten, sizeof(char *))) ==
		    NULL)) {
		snprintf(err, errlen, "out of memory");
		upstreams_free(us);
		return NULL;
	}
	for (i = 0; i < cfg->nlisten; i++)
		us->listeners[i] = cfg->listen[i].text;
	us->nlisteners = cfg->nlisten;
	/* The slots first, then the set of the upstreams they name. */
	if (upstreams_apply(us, cfg, &ch) == -1 ||
	    upstream_opts_of(us, cfg, &uo, &ucf) == -1) {
		snprintf(err, errlen, "out of memory");
		upstreams_free(us);
		return NULL;
	}
	obs.arg = us;
	us->set = upstream_set_new(&uo, base, &obs, err, errlen);
	free(ucf);
	if (us->set == NULL) {
		upstreams_free(us);
		return NULL;
	}
	return us;
}

void
upstreams_free(struct upstreams *us)
{
	struct upstreams_meta *m;
	unsigned i;

	if (us == NULL)
		return;
	while ((m = us->queue) != NULL) {
		us->queue = m->next;
		m->done(m, NULL, 0);
	}
	upstream_set_free(us->set);
	if (us->queue_ev != NULL)
		event_free(us->queue_ev);
	for (i = 0; i < METRICS_MAX_UPSTREAMS; i++)
		free(us->slots[i]);
	free(us->listeners);
	pthread_mutex_destroy(&us->mu);
	free(us);
}
