/*
 * daemon/metrics.c: counters for /metrics and their Prometheus text
 * exposition (version 0.0.4).
 *
 * Every counter is an atomic_uint_fast64_t updated with relaxed ordering:
 * event-loop and worker threads bump them without locks, and a render sees
 * each value as of some recent moment, which is all a scrape needs.  The
 * gauges callback and the start time are plain variables written only by
 * the start-up calls (metrics_init(), metrics_set_gauges()) before other
 * threads run, and only read afterwards, so they need no lock.  The
 * upstreams' names change with the configuration (SIGHUP), under
 * names_mu, which renders hold while they print them; so do the
 * reloads' record and its reason.
 *
 * The histograms (upstream latency, request duration) keep one
 * non-cumulative count per bucket; the render adds them up, so _count
 * always equals the +Inf bucket.  Their sums are kept in whole
 * microseconds so that they can be atomic integers.
 *
 * Names follow Prometheus' conventions: base units as suffixes (_seconds,
 * _bytes), _total on counters, and the process_* metrics of its client
 * libraries, read from /proc/self at each render.
 */
#include "daemon/metrics.h"

#include <sys/resource.h>

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "autoconf.h"
#include "daemon/clock.h"

#define NENDPOINTS (METRICS_EP_OTHER + 1)
#define NRESULTS (METRICS_BAD + 1)
#define NUPERRS (METRICS_UPERR_BREAKER + 1)
#define NACCEPTERRS (METRICS_ACCEPT_ENFILE + 1)
#define NREFUSALS (METRICS_REFUSED_DESCRIPTORS + 1)
#define NBUCKETS (sizeof(buckets) / sizeof(buckets[0]))
#define NDBUCKETS (sizeof(dbuckets) / sizeof(dbuckets[0]))
/* Beyond this an observation is clamped so its microseconds fit. */
#define MAX_SECONDS 1e9

static const char *const endpoint_names[NENDPOINTS] = { "debuginfo",
	"executable", "section", "source", "metadata", "symbolicate", "other" };
static const char *const result_names[NRESULTS] = { "hit", "miss", "negative",
	"joined", "error", "notfound", "bad" };
static const char *const uperr_names[NUPERRS] = { "connect", "timeout", "http",
	"transfer", "content", "breaker" };
static const char *const accept_err_names[NACCEPTERRS] = { "emfile", "enfile" };
static const char *const refusal_names[NREFUSALS] = { "max_connections",
	"descriptors" };
static const char *const breaker_names[3] = { "closed", "open", "probing" };

/* The upper bound of a histogram bucket; the last one is +Inf (le 0). */
struct bucket {
	double le;
	const char *label;
};

/* Upstream latency. */
static const struct bucket buckets[] = {
	{ 0.005, "0.005" },
	{ 0.01, "0.01" },
	{ 0.025, "0.025" },
	{ 0.05, "0.05" },
	{ 0.1, "0.1" },
	{ 0.25, "0.25" },
	{ 0.5, "0.5" },
	{ 1, "1" },
	{ 2.5, "2.5" },
	{ 5, "5" },
	{ 10, "10" },
	{ 30, "30" },
	{ 0, "+Inf" },
};

/* Request duration: a local hit takes well under a millisecond. */
static const struct bucket dbuckets[] = {
	{ 0.0005, "0.0005" },
	{ 0.001, "0.001" },
	{ 0.0025, "0.0025" },
	{ 0.005, "0.005" },
	{ 0.01, "0.01" },
	{ 0.025, "0.025" },
	{ 0.05, "0.05" },
	{ 0.1, "0.1" },
	{ 0.25, "0.25" },
	{ 0.5, "0.5" },
	{ 1, "1" },
	{ 2.5, "2.5" },
	{ 5, "5" },
	{ 10, "10" },
	{ 30, "30" },
	{ 60, "60" },
	{ 0, "+Inf" },
};

struct upstream_counters {
	atomic_uint_fast64_t requests;
	atomic_uint_fast64_t latency[NBUCKETS];
	atomic_uint_fast64_t latency_us;
	atomic_uint_fast64_t errors[NUPERRS];
	atomic_uint_fast64_t verify_failures;
	atomic_int breaker;
	atomic_llong last_error; /* clock_now() of the last; 0: none */
	atomic_int last_error_kind;
};

/*
 * One thread's requests of the last minutes: slot m % RECENT_SLOTS counts
 * minute m.  Only the owning thread writes its rings; it resets a slot
 * when a new minute comes to it.  A reader summing meanwhile may see a
 * slot half reset, which costs the status page a few requests, never the
 * request path a lock.  The rings are never freed (threads may outlive a
 * metrics_init()); the list keeps them reachable.
 */
#define RECENT_SLOTS (METRICS_RECENT_MINUTES + 1)
struct recent_slot {
	atomic_llong minute;
	atomic_uint_fast64_t n[NRESULTS];
	atomic_uint_fast64_t timed, us, max_us; /* request durations */
};
struct recent {
	struct recent *next;
	struct recent_slot slot[RECENT_SLOTS];
};
static _Atomic(struct recent *) recents;
static _Thread_local struct recent *my_recent;

static atomic_uint_fast64_t requests[NENDPOINTS][NRESULTS];
static atomic_uint_fast64_t durations[NENDPOINTS][NRESULTS][NDBUCKETS];
static atomic_uint_fast64_t duration_us[NENDPOINTS][NRESULTS];
static atomic_uint_fast64_t bytes_sent;
static atomic_uint_fast64_t package_passes;
static atomic_uint_fast64_t local_write_errors;
static atomic_uint_fast64_t misses_dropped;
static atomic_uint_fast64_t sandbox_refused;
static atomic_uint_fast64_t accept_errors[NACCEPTERRS];
static atomic_uint_fast64_t refused[NREFUSALS];
static atomic_uint_fast64_t tls_handshake_failures;
#define NDENIALS 2
static const char *const denial_names[NDENIALS] = { "unauthorized",
	"forbidden" };
static atomic_uint_fast64_t denied[NDENIALS];
#define NUPLOADS 5
static const char *const upload_names[NUPLOADS] = { "created", "same",
	"conflict", "rejected", "unjudged" };
static atomic_uint_fast64_t uploads[NUPLOADS];
static atomic_uint_fast64_t upload_bytes;
static struct upstream_counters upstreams[METRICS_MAX_UPSTREAMS];
#define NSYMREQS ((size_t)METRICS_SYM_ERROR + 1)
static const char *const symreq_names[NSYMREQS] = { "ok", "pending", "partial",
	"bad", "error" };
static atomic_uint_fast64_t symreqs[NSYMREQS];
static const char *const symframe_names[METRICS_SYM_FRAME_STATUSES] = { "ok",
	"no_line", "no_symbol", "bad_address", "missing", "pending", "error" };
static atomic_uint_fast64_t symframes[METRICS_SYM_FRAME_STATUSES];
#define NSYMHITS ((size_t)METRICS_SYMTAB_STORE + 1)
static const char *const symhit_names[NSYMHITS] = { "open", "cache", "store" };
static atomic_uint_fast64_t symhits[NSYMHITS];
static atomic_uint_fast64_t symtab_corrupt;
/* Builds by result (0 ok, 1 failed): count by bucket, time, bytes. */
static atomic_uint_fast64_t symbuild_secs[2][NBUCKETS];
static atomic_uint_fast64_t symbuild_us[2];
static atomic_uint_fast64_t symbuild_bytes;
static atomic_uint symbuild_running, symbuild_waiting, symtabs_tables;
static atomic_uint_fast64_t symtabs_bytes;
#define NSTORE ((size_t)METRICS_STORE_DELETED + 1)
static atomic_uint_fast64_t store_counts[NSTORE];
static atomic_int store_breaker;
static atomic_int store_credentials;
static atomic_uint store_waiting, store_running;
static char *store_name; /* NULL: no store */

/* Under names_mu: each slot's upstream, and whether it is configured. */
static pthread_mutex_t names_mu = PTHREAD_MUTEX_INITIALIZER;
static char *upstream_names[METRICS_MAX_UPSTREAMS];
static int upstream_shown[METRICS_MAX_UPSTREAMS];

/* The configuration's loads (metrics_config_*), under names_mu. */
static struct metrics_config config_state;

/* Start-up state, see above. */
static void (*gauges_fn)(struct metrics_gauges *, void *);
static void *gauges_arg;
static time_t start_time;

static void
add(atomic_uint_fast64_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

static uint64_t
get(atomic_uint_fast64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

static void
zero(atomic_uint_fast64_t *c)
{
	atomic_store_explicit(c, 0, memory_order_relaxed);
}

/* Slot i's counters back to zero (it changes hands). */
static void
upstream_zero(unsigned i)
{
	struct upstream_counters *u = &upstreams[i];
	size_t k;

	zero(&u->requests);
	for (k = 0; k < NBUCKETS; k++)
		zero(&u->latency[k]);
	zero(&u->latency_us);
	for (k = 0; k < NUPERRS; k++)
		zero(&u->errors[k]);
	zero(&u->verify_failures);
	atomic_store_explicit(&u->breaker, 0, memory_order_relaxed);
	atomic_store(&u->last_error, 0);
}

void
metrics_init(void)
{
	size_t e, r, i, k;

	for (e = 0; e < NENDPOINTS; e++)
		for (r = 0; r < NRESULTS; r++) {
			zero(&requests[e][r]);
			zero(&duration_us[e][r]);
			for (k = 0; k < NDBUCKETS; k++)
				zero(&durations[e][r][k]);
		}
	zero(&bytes_sent);
	zero(&package_passes);
	zero(&local_write_errors);
	zero(&misses_dropped);
	zero(&sandbox_refused);
	for (k = 0; k < NACCEPTERRS; k++)
		zero(&accept_errors[k]);
	for (k = 0; k < NREFUSALS; k++)
		zero(&refused[k]);
	for (k = 0; k < NSTORE; k++)
		zero(&store_counts[k]);
	atomic_store(&store_breaker, 0);
	atomic_store(&store_credentials, -1);
	atomic_store(&store_waiting, 0);
	atomic_store(&store_running, 0);
	free(store_name);
	store_name = NULL;
	zero(&tls_handshake_failures);
	for (k = 0; k < NDENIALS; k++)
		zero(&denied[k]);
	for (k = 0; k < NUPLOADS; k++)
		zero(&uploads[k]);
	zero(&upload_bytes);
	for (k = 0; k < NSYMREQS; k++)
		zero(&symreqs[k]);
	for (k = 0; k < METRICS_SYM_FRAME_STATUSES; k++)
		zero(&symframes[k]);
	for (k = 0; k < NSYMHITS; k++)
		zero(&symhits[k]);
	zero(&symtab_corrupt);
	for (r = 0; r < 2; r++) {
		for (k = 0; k < NBUCKETS; k++)
			zero(&symbuild_secs[r][k]);
		zero(&symbuild_us[r]);
	}
	zero(&symbuild_bytes);
	atomic_store(&symbuild_running, 0);
	atomic_store(&symbuild_waiting, 0);
	atomic_store(&symtabs_tables, 0);
	zero(&symtabs_bytes);
	for (i = 0; i < METRICS_MAX_UPSTREAMS; i++)
		upstream_zero((unsigned)i);
	pthread_mutex_lock(&names_mu);
	memset(&config_state, 0, sizeof(config_state));
	pthread_mutex_unlock(&names_mu);
	for (struct recent *rc = atomic_load(&recents); rc != NULL;
	     rc = rc->next)
		for (k = 0; k < RECENT_SLOTS; k++) {
			struct recent_slot *sl = &rc->slot[k];

			atomic_store(&sl->minute, 0);
			for (r = 0; r < NRESULTS; r++)
				zero(&sl->n[r]);
			zero(&sl->timed);
			zero(&sl->us);
			zero(&sl->max_us);
		}
	metrics_free();
	gauges_fn = NULL;
	gauges_arg = NULL;
	start_time = (time_t)clock_now();
}

/* This thread's ring, made on its first request; NULL when out of memory. */
static struct recent *
recent_mine(void)
{
	struct recent *rc;

	if (my_recent != NULL)
		return my_recent;
	if ((rc = calloc(1, sizeof(*rc))) == NULL)
		return NULL;
	rc->next = atomic_load(&recents);
	while (!atomic_compare_exchange_weak(&recents, &rc->next, rc))
		;
	return my_recent = rc;
}

/* This thread's slot of the current minute, reset when new; or NULL. */
static struct recent_slot *
recent_now(void)
{
	struct recent_slot *sl;
	struct recent *rc;
	long long minute;
	size_t r;

	if ((rc = recent_mine()) == NULL)
		return NULL;
	minute = (long long)(clock_now_coarse() / 60);
	sl = &rc->slot[minute % RECENT_SLOTS];
	if (atomic_load_explicit(&sl->minute, memory_order_relaxed) != minute) {
		for (r = 0; r < NRESULTS; r++)
			zero(&sl->n[r]);
		zero(&sl->timed);
		zero(&sl->us);
		zero(&sl->max_us);
		atomic_store_explicit(&sl->minute, minute,
		    memory_order_relaxed);
	}
	return sl;
}

void
metrics_request(enum metrics_endpoint ep, enum metrics_result res)
{
	struct recent_slot *sl;

	if ((unsigned)ep >= NENDPOINTS || (unsigned)res >= NRESULTS)
		return;
	add(&requests[ep][res], 1);
	if ((sl = recent_now()) != NULL)
		add(&sl->n[res], 1);
}

/*
 * seconds as whole microseconds, clamped: NaN and a clock stepping back
 * are 0, and no more than MAX_SECONDS.
 */
static uint64_t
micros(double seconds)
{
	if (!(seconds >= 0))
		seconds = 0;
	if (seconds > MAX_SECONDS)
		seconds = MAX_SECONDS;
	return (uint64_t)(seconds * 1e6 + 0.5);
}

/* One observation of a histogram of n buckets b, counts and sum. */
static void
observe(const struct bucket *b, size_t n, atomic_uint_fast64_t *counts,
    atomic_uint_fast64_t *sum_us, uint64_t us)
{
	size_t k;

	for (k = 0; k < n - 1; k++)
		if ((double)us <= b[k].le * 1e6)
			break;
	add(&counts[k], 1);
	add(sum_us, us);
}

void
metrics_request_duration(enum metrics_endpoint ep, enum metrics_result res,
    double seconds)
{
	struct recent_slot *sl;
	uint64_t us = micros(seconds);

	if ((unsigned)ep >= NENDPOINTS || (unsigned)res >= NRESULTS)
		return;
	observe(dbuckets, NDBUCKETS, durations[ep][res], &duration_us[ep][res],
	    us);
	if ((sl = recent_now()) == NULL)
		return;
	add(&sl->timed, 1);
	add(&sl->us, us);
	/* Only this thread writes its slots. */
	if (us > get(&sl->max_us))
		atomic_store_explicit(&sl->max_us, us, memory_order_relaxed);
}

enum metrics_result
metrics_result_of(const char *xcache, int status)
{
	if (strcmp(xcache, "HIT") == 0)
		return METRICS_HIT;
	if (strcmp(xcache, "JOINED") == 0)
		return METRICS_JOINED;
	if (strcmp(xcache, "NEGATIVE") == 0)
		return METRICS_NEGATIVE;
	if (status == 404)
		return METRICS_NOTFOUND;
	if (strcmp(xcache, "MISS") == 0)
		return METRICS_MISS;
	if (status >= 500 || strcmp(xcache, "ERROR") == 0)
		return METRICS_ERROR;
	if (status >= 400)
		return METRICS_BAD;
	return METRICS_HIT;
}

void
metrics_recent(unsigned minutes, struct metrics_recent *out)
{
	long long now = (long long)(clock_now_coarse() / 60), m;
	struct recent *rc;
	size_t k, r;

	memset(out, 0, sizeof(*out));
	if (minutes > METRICS_RECENT_MINUTES)
		minutes = METRICS_RECENT_MINUTES;
	for (rc = atomic_load(&recents); rc != NULL; rc = rc->next)
		for (k = 0; k < RECENT_SLOTS; k++) {
			m = atomic_load_explicit(&rc->slot[k].minute,
			    memory_order_relaxed);
			if (m > now || m <= now - (long long)minutes)
				continue;
			for (r = 0; r < NRESULTS; r++)
				out->results[r] += get(&rc->slot[k].n[r]);
		}
}

void
metrics_minutes(struct metrics_minute out[METRICS_RECENT_MINUTES])
{
	long long now = (long long)(clock_now_coarse() / 60), m;
	struct metrics_minute *o;
	struct recent_slot *sl;
	struct recent *rc;
	double max;
	size_t k, r;

	memset(out, 0, METRICS_RECENT_MINUTES * sizeof(*out));
	for (rc = atomic_load(&recents); rc != NULL; rc = rc->next)
		for (k = 0; k < RECENT_SLOTS; k++) {
			sl = &rc->slot[k];
			m = atomic_load_explicit(&sl->minute,
			    memory_order_relaxed);
			if (m > now || m <= now - METRICS_RECENT_MINUTES)
				continue;
			o = &out[now - m];
			for (r = 0; r < NRESULTS; r++)
				o->results[r] += get(&sl->n[r]);
			o->timed += get(&sl->timed);
			o->seconds += (double)get(&sl->us) / 1e6;
			max = (double)get(&sl->max_us) / 1e6;
			if (max > o->max_seconds)
				o->max_seconds = max;
		}
}

void
metrics_bytes_sent(uint64_t n)
{
	add(&bytes_sent, n);
}

void
metrics_local_write_error(void)
{
	add(&local_write_errors, 1);
}

void
metrics_misses_dropped(uint64_t n)
{
	add(&misses_dropped, n);
}

void
metrics_sandbox_refused(void)
{
	add(&sandbox_refused, 1);
}

void
metrics_package_pass(void)
{
	add(&package_passes, 1);
}

void
metrics_accept_error(enum metrics_accept_err reason)
{
	if ((unsigned)reason >= NACCEPTERRS)
		return;
	add(&accept_errors[reason], 1);
}

void
metrics_connection_refused(enum metrics_refusal reason)
{
	if ((unsigned)reason >= NREFUSALS)
		return;
	add(&refused[reason], 1);
}

void
metrics_tls_handshake_failed(void)
{
	add(&tls_handshake_failures, 1);
}

void
metrics_access_denied(enum metrics_denial reason)
{
	if ((unsigned)reason < NDENIALS)
		add(&denied[reason], 1);
}

void
metrics_upload(enum metrics_upload result, uint64_t bytes)
{
	if ((unsigned)result < NUPLOADS)
		add(&uploads[result], 1);
	add(&upload_bytes, bytes);
}

void
metrics_symbolicate_request(enum metrics_symreq result)
{
	if ((unsigned)result < NSYMREQS)
		add(&symreqs[result], 1);
}

void
metrics_symbolicate_frames(const uint64_t counts[METRICS_SYM_FRAME_STATUSES])
{
	size_t k;

	for (k = 0; k < METRICS_SYM_FRAME_STATUSES; k++)
		if (counts[k] > 0)
			add(&symframes[k], counts[k]);
}

void
metrics_symtab_hit(enum metrics_symtab_hit where)
{
	if ((unsigned)where < NSYMHITS)
		add(&symhits[where], 1);
}

void
metrics_symtab_corrupt(void)
{
	add(&symtab_corrupt, 1);
}

void
metrics_symtab_build(int ok, double seconds, uint64_t bytes)
{
	int r = ok ? 0 : 1;

	observe(buckets, NBUCKETS, symbuild_secs[r], &symbuild_us[r],
	    micros(seconds));
	add(&symbuild_bytes, bytes);
}

void
metrics_symtab_building(unsigned running, unsigned waiting)
{
	atomic_store(&symbuild_running, running);
	atomic_store(&symbuild_waiting, waiting);
}

void
metrics_symtabs_open(unsigned tables, uint64_t bytes)
{
	atomic_store(&symtabs_tables, tables);
	atomic_store_explicit(&symtabs_bytes, bytes, memory_order_relaxed);
}

void
metrics_upstream_name(unsigned i, const char *url)
{
	if (i >= METRICS_MAX_UPSTREAMS)
		return;
	pthread_mutex_lock(&names_mu);
	upstream_shown[i] = url != NULL;
	if (url != NULL &&
	    (upstream_names[i] == NULL ||
		strcmp(upstream_names[i], url) != 0)) {
		free(upstream_names[i]);
		upstream_zero(i);
		/* Out of memory only leaves the upstream out of the render. */
		upstream_names[i] = strdup(url);
	}
	pthread_mutex_unlock(&names_mu);
}

unsigned
metrics_upstream_find(const char *url)
{
	unsigned i;

	pthread_mutex_lock(&names_mu);
	for (i = 0; i < METRICS_MAX_UPSTREAMS; i++)
		if (upstream_names[i] != NULL &&
		    strcmp(upstream_names[i], url) == 0)
			break;
	pthread_mutex_unlock(&names_mu);
	return i;
}

/* 1 when slot i is rendered: named, and configured.  Under names_mu. */
static int
upstream_rendered(unsigned i)
{
	return upstream_names[i] != NULL && upstream_shown[i];
}

void
metrics_config_loaded(int64_t when)
{
	pthread_mutex_lock(&names_mu);
	config_state.loaded = when;
	pthread_mutex_unlock(&names_mu);
}

void
metrics_config_reload(int ok, int64_t when, const char *why)
{
	pthread_mutex_lock(&names_mu);
	config_state.reloads[ok ? 0 : 1]++;
	config_state.last = when;
	config_state.last_ok = ok;
	if (ok) {
		config_state.loaded = when;
		config_state.why[0] = '\0';
	} else {
		snprintf(config_state.why, sizeof(config_state.why), "%s",
		    why != NULL ? why : "");
	}
	pthread_mutex_unlock(&names_mu);
}

void
metrics_config_read(struct metrics_config *out)
{
	pthread_mutex_lock(&names_mu);
	*out = config_state;
	pthread_mutex_unlock(&names_mu);
}

void
metrics_upstream_request(unsigned i)
{
	if (i >= METRICS_MAX_UPSTREAMS)
		return;
	add(&upstreams[i].requests, 1);
}

void
metrics_upstream_latency(unsigned i, double seconds)
{
	if (i >= METRICS_MAX_UPSTREAMS)
		return;
	observe(buckets, NBUCKETS, upstreams[i].latency,
	    &upstreams[i].latency_us, micros(seconds));
}

void
metrics_upstream_error(unsigned i, enum metrics_uperr kind)
{
	if (i >= METRICS_MAX_UPSTREAMS || (unsigned)kind >= NUPERRS)
		return;
	add(&upstreams[i].errors[kind], 1);
	atomic_store(&upstreams[i].last_error_kind, (int)kind);
	atomic_store(&upstreams[i].last_error, (long long)clock_now());
}

int64_t
metrics_upstream_last_error(unsigned i, enum metrics_uperr *kind)
{
	if (i >= METRICS_MAX_UPSTREAMS)
		return 0;
	*kind = (enum metrics_uperr)atomic_load(&upstreams[i].last_error_kind);
	return atomic_load(&upstreams[i].last_error);
}

void
metrics_upstream_read(unsigned i, struct metrics_upstream *out)
{
	struct upstream_counters *u;
	size_t k;

	memset(out, 0, sizeof(*out));
	if (i >= METRICS_MAX_UPSTREAMS)
		return;
	u = &upstreams[i];
	out->requests = get(&u->requests);
	for (k = 0; k < NUPERRS; k++)
		out->errors += get(&u->errors[k]);
	for (k = 0; k < NBUCKETS; k++)
		out->answers += get(&u->latency[k]);
	if (out->answers > 0)
		out->mean_seconds =
		    (double)get(&u->latency_us) / 1e6 / (double)out->answers;
	out->breaker = atomic_load_explicit(&u->breaker, memory_order_relaxed);
}

const char *
metrics_breaker_name(int state)
{
	return state >= 0 && state < 3 ? breaker_names[state] : "closed";
}

const char *
metrics_uperr_name(enum metrics_uperr kind)
{
	return (unsigned)kind < NUPERRS ? uperr_names[kind] : "?";
}

void
metrics_upstream_verify_failure(unsigned i)
{
	if (i >= METRICS_MAX_UPSTREAMS)
		return;
	add(&upstreams[i].verify_failures, 1);
}

void
metrics_upstream_breaker(unsigned i, int state)
{
	if (i >= METRICS_MAX_UPSTREAMS)
		return;
	atomic_store_explicit(&upstreams[i].breaker, state,
	    memory_order_relaxed);
}

void
metrics_store_name(const char *name)
{
	free(store_name);
	store_name = strdup(name);
}

void
metrics_store(enum metrics_store what)
{
	if ((size_t)what < NSTORE)
		add(&store_counts[what], 1);
}

void
metrics_store_breaker(int state)
{
	atomic_store(&store_breaker, state);
}

void
metrics_store_credentials(int ok)
{
	atomic_store(&store_credentials, ok);
}

void
metrics_store_queue(unsigned waiting)
{
	atomic_store(&store_waiting, waiting);
}

void
metrics_store_uploading(unsigned running)
{
	atomic_store(&store_running, running);
}

void
metrics_store_read(struct metrics_store_state *out)
{
	size_t k;

	memset(out, 0, sizeof(*out));
	out->name = store_name;
	out->breaker = atomic_load(&store_breaker);
	out->credentials = atomic_load(&store_credentials);
	out->waiting = atomic_load(&store_waiting);
	out->running = atomic_load(&store_running);
	for (k = 0; k < NSTORE; k++)
		out->counts[k] = get(&store_counts[k]);
}

void
metrics_set_gauges(void (*fn)(struct metrics_gauges *g, void *arg), void *arg)
{
	gauges_fn = fn;
	gauges_arg = arg;
}

/* "# HELP" and "# TYPE" lines of one metric. */
static void
put_header(FILE *fp, const char *name, const char *type, const char *help)
{
	fprintf(fp, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value, escaped as the text format asks. */
static void
put_label(FILE *fp, const char *s)
{
	for (; *s != '\0'; s++) {
		switch (*s) {
		case '\\':
			fputs("\\\\", fp);
			break;
		case '"':
			fputs("\\\"", fp);
			break;
		case '\n':
			fputs("\\n", fp);
			break;
		default:
			putc(*s, fp);
		}
	}
}

/* A metric without labels, with its header. */
static void
put_single(FILE *fp, const char *name, const char *type, const char *help,
    uint64_t v)
{
	put_header(fp, name, type, help);
	fprintf(fp, "%s %llu\n", name, (unsigned long long)v);
}

/* name{upstream="URL"} v, for a named upstream i. */
static void
put_upstream(FILE *fp, const char *name, unsigned i, uint64_t v)
{
	fprintf(fp, "%s{upstream=\"", name);
	put_label(fp, upstream_names[i]);
	fprintf(fp, "\"} %llu\n", (unsigned long long)v);
}

/*
 * name{LABEL="value",state="closed|open|probing"}: 1 for the state the
 * breaker is in, 0 for the others.
 */
static void
put_breaker(FILE *fp, const char *name, const char *label, const char *value,
    int state)
{
	int k;

	for (k = 0; k < 3; k++) {
		fprintf(fp, "%s{%s=\"", name, label);
		put_label(fp, value);
		fprintf(fp, "\",state=\"%s\"} %d\n", breaker_names[k],
		    k == state);
	}
}

/* Microseconds as seconds, without trailing zeros. */
static void
put_seconds(FILE *fp, uint64_t us)
{
	char frac[8];
	size_t n;

	fprintf(fp, "%llu", (unsigned long long)(us / 1000000));
	if (us % 1000000 == 0)
		return;
	snprintf(frac, sizeof(frac), "%06u", (unsigned)(us % 1000000));
	for (n = strlen(frac); frac[n - 1] == '0'; n--)
		frac[n - 1] = '\0';
	fprintf(fp, ".%s", frac);
}

/*
 * One line per result of the store's counter name: counts[i] is
 * store_counts[first + i].
 */
static void
put_store_results(FILE *fp, const char *name, const char *const *results,
    size_t n, size_t first)
{
	size_t i;

	for (i = 0; i < n; i++) {
		fprintf(fp, "%s{store=\"", name);
		put_label(fp, store_name);
		fprintf(fp, "\",result=\"%s\"} %llu\n", results[i],
		    (unsigned long long)get(&store_counts[first + i]));
	}
}

/* The object store's lines, when there is one. */
static void
render_store(FILE *fp)
{
	static const char *const lookups[] = { "hit", "miss", "error" };
	static const char *const upload_results[] = { "queued", "done",
		"failed", "dropped" };

	if (store_name == NULL)
		return;
	put_header(fp, "dbgmirror_store_lookups_total", "counter",
	    "Lookups in the shared object store, by result.");
	put_store_results(fp, "dbgmirror_store_lookups_total", lookups, 3,
	    METRICS_STORE_HIT);
	put_header(fp, "dbgmirror_store_uploads_total", "counter",
	    "Uploads to the object store: queued, then done, failed or "
	    "dropped (queue full, store down or slow).");
	put_store_results(fp, "dbgmirror_store_uploads_total", upload_results,
	    4, METRICS_STORE_QUEUED);
	put_single(fp, "dbgmirror_store_corrupt_objects_total", "counter",
	    "Objects in the store whose bytes did not verify: deleted, never "
	    "served.",
	    get(&store_counts[METRICS_STORE_CORRUPT]));
	put_single(fp, "dbgmirror_store_deletes_total", "counter",
	    "Objects deleted from the store (corrupt or purged).",
	    get(&store_counts[METRICS_STORE_DELETED]));
	put_header(fp, "dbgmirror_store_breaker_state", "gauge",
	    "The store's breaker: 1 for the state it is in (open: skipped, "
	    "uploads dropped), 0 for the others.");
	put_breaker(fp, "dbgmirror_store_breaker_state", "store", store_name,
	    atomic_load(&store_breaker));
	put_header(fp, "dbgmirror_store_uploads_waiting", "gauge",
	    "Uploads to the store queued, not started (at most "
	    "store-upload-queue).");
	fprintf(fp, "dbgmirror_store_uploads_waiting{store=\"");
	put_label(fp, store_name);
	fprintf(fp, "\"} %u\n", atomic_load(&store_waiting));
	put_header(fp, "dbgmirror_store_uploads_running", "gauge",
	    "Uploads to the store under way.");
	fprintf(fp, "dbgmirror_store_uploads_running{store=\"");
	put_label(fp, store_name);
	fprintf(fp, "\"} %u\n", atomic_load(&store_running));
	put_header(fp, "dbgmirror_store_credentials_ok", "gauge",
	    "The store took the credentials (1), refused them (0), or has "
	    "not answered yet (-1).");
	fprintf(fp, "dbgmirror_store_credentials_ok %d\n",
	    atomic_load(&store_credentials));
}

/*
 * name_bucket{LABELS,le=...}, name_sum{LABELS} and name_count{LABELS} of
 * one histogram: counts[] of the n buckets b, sum_us; labels is printed
 * as it is (escaped already).
 */
static void
put_histogram(FILE *fp, const char *name, const char *labels,
    const struct bucket *b, size_t n, atomic_uint_fast64_t *counts,
    atomic_uint_fast64_t *sum_us)
{
	uint64_t total = 0;
	size_t k;

	for (k = 0; k < n; k++) {
		total += get(&counts[k]);
		fprintf(fp, "%s_bucket{%s,le=\"%s\"} %llu\n", name, labels,
		    b[k].label, (unsigned long long)total);
	}
	fprintf(fp, "%s_sum{%s} ", name, labels);
	put_seconds(fp, get(sum_us));
	fprintf(fp, "\n%s_count{%s} %llu\n", name, labels,
	    (unsigned long long)total);
}

/*
 * The request duration, by endpoint and result: only the pairs that have
 * been observed, as client libraries make a series at its first
 * observation (all 42 would be some 700 lines of zeros).
 */
static void
render_durations(FILE *fp)
{
	const char *name = "dbgmirror_request_duration_seconds";
	char labels[96];
	uint64_t n;
	size_t e, r, k;

	put_header(fp, name, "histogram",
	    "Time from a request to the last byte of its answer, by endpoint "
	    "and result.");
	for (e = 0; e < NENDPOINTS; e++)
		for (r = 0; r < NRESULTS; r++) {
			for (n = 0, k = 0; k < NDBUCKETS; k++)
				n += get(&durations[e][r][k]);
			if (n == 0)
				continue;
			snprintf(labels, sizeof(labels),
			    "endpoint=\"%s\",result=\"%s\"", endpoint_names[e],
			    result_names[r]);
			put_histogram(fp, name, labels, dbuckets, NDBUCKETS,
			    durations[e][r], &duration_us[e][r]);
		}
}

static void
render_requests(FILE *fp)
{
	size_t e, r;

	put_header(fp, "dbgmirror_requests_total", "counter",
	    "Requests answered, by endpoint and cache result.");
	for (e = 0; e < NENDPOINTS; e++)
		for (r = 0; r < NRESULTS; r++)
			fprintf(fp,
			    "dbgmirror_requests_total{endpoint=\"%s\","
			    "result=\"%s\"} %llu\n",
			    endpoint_names[e], result_names[r],
			    (unsigned long long)get(&requests[e][r]));
	render_durations(fp);
	put_single(fp, "dbgmirror_sent_bytes_total", "counter",
	    "Bytes of response bodies sent.", get(&bytes_sent));
	put_single(fp, "dbgmirror_package_passes_total", "counter",
	    "Decompression passes over packages to extract members.",
	    get(&package_passes));
	put_single(fp, "dbgmirror_local_write_errors_total", "counter",
	    "Fills this server could not write (a full disk): answered 503, "
	    "never held against the source.",
	    get(&local_write_errors));
	put_single(fp, "dbgmirror_misses_dropped_total", "counter",
	    "Not-found requests left out of the missing-id report: its "
	    "queue was full, or the index could not take them.",
	    get(&misses_dropped));
	put_single(fp, "dbgmirror_sandbox_refused_total", "counter",
	    "System calls of the parsing workers refused by their sandbox.",
	    get(&sandbox_refused));
}

/* name{label="names[k]"} counts[k], for each of n, with its header. */
static void
put_labelled(FILE *fp, const char *name, const char *type, const char *help,
    const char *label, const char *const *names, atomic_uint_fast64_t *counts,
    size_t n)
{
	size_t k;

	put_header(fp, name, type, help);
	for (k = 0; k < n; k++)
		fprintf(fp, "%s{%s=\"%s\"} %llu\n", name, label, names[k],
		    (unsigned long long)get(&counts[k]));
}

/* /symbolicate, the symbol tables it opens and the builds of them. */
static void
render_symbolicate(FILE *fp)
{
	static const char *const results[2] = { "result=\"ok\"",
		"result=\"failed\"" };
	const char *name = "dbgmirror_symtab_build_seconds";
	size_t r;

	put_labelled(fp, "dbgmirror_symbolicate_requests_total", "counter",
	    "/symbolicate requests: every module ok, some pending "
	    "(Retry-After), "
	    "some missing or in error, refused (400), failed (503).",
	    "result", symreq_names, symreqs, NSYMREQS);
	put_labelled(fp, "dbgmirror_symbolicate_frames_total", "counter",
	    "Frames /symbolicate answered, by status.", "status",
	    symframe_names, symframes, METRICS_SYM_FRAME_STATUSES);
	put_labelled(fp, "dbgmirror_symtab_hits_total", "counter",
	    "Symbol tables a request used: kept open, opened from the cache, "
	    "fetched from the object store.",
	    "where", symhit_names, symhits, NSYMHITS);
	put_single(fp, "dbgmirror_symtab_corrupt_total", "counter",
	    "Cached symbol tables that did not verify when opened: deleted "
	    "and built again.",
	    get(&symtab_corrupt));
	put_header(fp, name, "histogram",
	    "Symbol table builds, by result, and the time each took.");
	for (r = 0; r < 2; r++)
		put_histogram(fp, name, results[r], buckets, NBUCKETS,
		    symbuild_secs[r], &symbuild_us[r]);
	put_single(fp, "dbgmirror_symtab_built_bytes_total", "counter",
	    "Bytes of the symbol tables built.", get(&symbuild_bytes));
	put_single(fp, "dbgmirror_symtab_builds_running", "gauge",
	    "Symbol tables being built (at most symbolicate-builds).",
	    atomic_load(&symbuild_running));
	put_single(fp, "dbgmirror_symtab_builds_waiting", "gauge",
	    "Symbol table builds waiting for their turn.",
	    atomic_load(&symbuild_waiting));
	put_single(fp, "dbgmirror_symtabs_open", "gauge",
	    "Symbol tables kept open for requests (at most "
	    "symbolicate-open-tables).",
	    atomic_load(&symtabs_tables));
	put_single(fp, "dbgmirror_symtabs_open_bytes", "gauge",
	    "Bytes the open symbol tables map (at most "
	    "symbolicate-open-bytes).",
	    get(&symtabs_bytes));
}

/* name{reason="..."} for each of n reasons. */
static void
put_reasons(FILE *fp, const char *name, const char *help,
    const char *const *names, atomic_uint_fast64_t *counts, size_t n)
{
	size_t k;

	put_header(fp, name, "counter", help);
	for (k = 0; k < n; k++)
		fprintf(fp, "%s{reason=\"%s\"} %llu\n", name, names[k],
		    (unsigned long long)get(&counts[k]));
}

static void
render_connections(FILE *fp)
{
	put_reasons(fp, "dbgmirror_accept_errors_total",
	    "Failed accepts for want of file descriptors.", accept_err_names,
	    accept_errors, NACCEPTERRS);
	put_reasons(fp, "dbgmirror_connections_refused_total",
	    "Connections closed unserved: over max-connections, or shed "
	    "while out of file descriptors.",
	    refusal_names, refused, NREFUSALS);
	put_single(fp, "dbgmirror_tls_handshake_failures_total", "counter",
	    "TLS handshakes that failed (no common protocol, a client "
	    "certificate missing or not trusted).",
	    get(&tls_handshake_failures));
	put_reasons(fp, "dbgmirror_access_denied_total",
	    "Requests the access rules refused: 401 without valid "
	    "credentials, 403 with credentials that do not allow it.",
	    denial_names, denied, NDENIALS);
	put_header(fp, "dbgmirror_uploads_total", "counter",
	    "PUT uploads by result: created, same (those bytes were there), "
	    "conflict (other bytes were), rejected (failed verification or "
	    "limits), unjudged (a source could not answer: nothing stored).");
	for (size_t k = 0; k < NUPLOADS; k++)
		fprintf(fp, "dbgmirror_uploads_total{result=\"%s\"} %llu\n",
		    upload_names[k], (unsigned long long)get(&uploads[k]));
	put_single(fp, "dbgmirror_upload_bytes_total", "counter",
	    "Bytes of upload bodies received.", get(&upload_bytes));
}

static void
render_latency(FILE *fp)
{
	const char *name = "dbgmirror_upstream_latency_seconds";
	char *labels;
	size_t size;
	FILE *lf;
	unsigned i;

	put_header(fp, name, "histogram",
	    "Time to a complete answer from an upstream.");
	for (i = 0; i < METRICS_MAX_UPSTREAMS; i++) {
		if (!upstream_rendered(i))
			continue;
		labels = NULL;
		if ((lf = open_memstream(&labels, &size)) == NULL)
			continue;
		fputs("upstream=\"", lf);
		put_label(lf, upstream_names[i]);
		putc('"', lf);
		if (fclose(lf) == 0)
			put_histogram(fp, name, labels, buckets, NBUCKETS,
			    upstreams[i].latency, &upstreams[i].latency_us);
		free(labels);
	}
}

/* The upstreams' families; under names_mu. */
static void
render_upstream_series(FILE *fp)
{
	unsigned i;
	size_t k;

	put_header(fp, "dbgmirror_upstream_requests_total", "counter",
	    "Requests sent to each upstream.");
	for (i = 0; i < METRICS_MAX_UPSTREAMS; i++)
		if (upstream_rendered(i))
			put_upstream(fp, "dbgmirror_upstream_requests_total", i,
			    get(&upstreams[i].requests));
	render_latency(fp);
	put_header(fp, "dbgmirror_upstream_errors_total", "counter",
	    "Failed upstream requests, by kind of failure.");
	for (i = 0; i < METRICS_MAX_UPSTREAMS; i++) {
		if (!upstream_rendered(i))
			continue;
		for (k = 0; k < NUPERRS; k++) {
			fputs("dbgmirror_upstream_errors_total{upstream=\"",
			    fp);
			put_label(fp, upstream_names[i]);
			fprintf(fp, "\",kind=\"%s\"} %llu\n", uperr_names[k],
			    (unsigned long long)get(&upstreams[i].errors[k]));
		}
	}
	put_header(fp, "dbgmirror_upstream_verify_failures_total", "counter",
	    "Upstream answers that failed verification.");
	for (i = 0; i < METRICS_MAX_UPSTREAMS; i++)
		if (upstream_rendered(i))
			put_upstream(fp,
			    "dbgmirror_upstream_verify_failures_total", i,
			    get(&upstreams[i].verify_failures));
	put_header(fp, "dbgmirror_upstream_breaker_state", "gauge",
	    "Circuit breaker of each upstream: 1 for the state it is in "
	    "(closed, open: skipped, probing), 0 for the others.");
	for (i = 0; i < METRICS_MAX_UPSTREAMS; i++)
		if (upstream_rendered(i))
			put_breaker(fp, "dbgmirror_upstream_breaker_state",
			    "upstream", upstream_names[i],
			    atomic_load_explicit(&upstreams[i].breaker,
				memory_order_relaxed));
}

static void
render_upstreams(FILE *fp)
{
	pthread_mutex_lock(&names_mu);
	render_upstream_series(fp);
	pthread_mutex_unlock(&names_mu);
}

/* The configuration's reloads (SIGHUP). */
static void
render_config(FILE *fp)
{
	struct metrics_config st;

	metrics_config_read(&st);
	put_header(fp, "dbgmirror_config_reloads_total", "counter",
	    "Reloads of the configuration file (SIGHUP), by result: failed "
	    "when it did not load or a check failed.");
	fprintf(fp,
	    "dbgmirror_config_reloads_total{result=\"ok\"} %llu\n"
	    "dbgmirror_config_reloads_total{result=\"failed\"} %llu\n",
	    (unsigned long long)st.reloads[0],
	    (unsigned long long)st.reloads[1]);
	put_header(fp, "dbgmirror_config_last_reload_success_timestamp_seconds",
	    "gauge",
	    "When the configuration in effect was loaded, at start-up or by "
	    "the last reload that succeeded, since the Unix epoch.");
	fprintf(fp,
	    "dbgmirror_config_last_reload_success_timestamp_seconds %lld\n",
	    (long long)st.loaded);
}

/* name{state="seen|queued|read"}. */
static void
put_states(FILE *fp, const char *name, const char *help, uint64_t seen,
    uint64_t queued, uint64_t read)
{
	put_header(fp, name, "gauge", help);
	fprintf(fp, "%s{state=\"seen\"} %llu\n", name,
	    (unsigned long long)seen);
	fprintf(fp, "%s{state=\"queued\"} %llu\n", name,
	    (unsigned long long)queued);
	fprintf(fp, "%s{state=\"read\"} %llu\n", name,
	    (unsigned long long)read);
}

static void
render_scan(FILE *fp, const struct metrics_scan *sc)
{
	put_single(fp, "dbgmirror_scan_running", "gauge",
	    "1 while a scan of scan-dir and scan-packages runs.", sc->running);
	put_states(fp, "dbgmirror_scan_files",
	    "Files under scan-dir in the current scan (the last one when none "
	    "runs): walked, new or changed, read.",
	    sc->files_seen, sc->files_queued, sc->files_read);
	put_states(fp, "dbgmirror_scan_packages",
	    "Packages under scan-packages in the current scan (the last one "
	    "when none runs): walked, new or changed, read.",
	    sc->packages_seen, sc->packages_queued, sc->packages_read);
	put_single(fp, "dbgmirror_scan_package_members", "gauge",
	    "Servable members of the packages the current or last scan read.",
	    sc->members);
	put_single(fp, "dbgmirror_scan_errors", "gauge",
	    "Files and packages the current or last scan could not index.",
	    sc->errors);
	put_single(fp, "dbgmirror_scan_removed", "gauge",
	    "Records of vanished files and packages the last scan dropped.",
	    sc->removed);
	put_header(fp, "dbgmirror_scan_start_time_seconds", "gauge",
	    "Start of the current or last scan since the Unix epoch; 0: "
	    "never.");
	fprintf(fp, "dbgmirror_scan_start_time_seconds %lld\n",
	    (long long)sc->started);
	put_header(fp, "dbgmirror_scan_last_end_time_seconds", "gauge",
	    "End of the last scan that ended since the Unix epoch; 0: none.");
	fprintf(fp, "dbgmirror_scan_last_end_time_seconds %lld\n",
	    (long long)sc->ended);
	put_header(fp, "dbgmirror_scan_last_duration_seconds", "gauge",
	    "How long the last scan that ended took.");
	fputs("dbgmirror_scan_last_duration_seconds ", fp);
	put_seconds(fp, sc->ended_ms * 1000);
	putc('\n', fp);
}

void
metrics_gauges_read(struct metrics_gauges *g)
{
	memset(g, 0, sizeof(*g));
	if (gauges_fn != NULL)
		gauges_fn(g, gauges_arg);
}

int64_t
metrics_start_time(void)
{
	return (int64_t)start_time;
}

static void
render_gauges(FILE *fp)
{
	struct metrics_gauges g;

	metrics_gauges_read(&g);
	put_single(fp, "dbgmirror_fills_in_flight", "gauge",
	    "Upstream fills in progress.", g.fills);
	put_single(fp, "dbgmirror_fill_waiters", "gauge",
	    "Requests waiting on a fill in progress.", g.fill_waiters);
	put_single(fp, "dbgmirror_cache_entries", "gauge",
	    "Entries in the cache.", g.cache_entries);
	put_single(fp, "dbgmirror_cache_bytes", "gauge",
	    "Bytes of cached files.", g.cache_bytes);
	put_single(fp, "dbgmirror_cache_tmp_bytes", "gauge",
	    "Bytes of fills in progress or not yet published, counted with "
	    "the cached files against cache-size.",
	    g.cache_tmp_bytes);
	put_single(fp, "dbgmirror_negative_entries", "gauge",
	    "Negative cache entries.", g.negative_entries);
	put_single(fp, "dbgmirror_index_files", "gauge",
	    "Local files indexed (scan-dir), servable or not.", g.index_files);
	put_single(fp, "dbgmirror_index_packages", "gauge",
	    "Packages indexed (scan-packages).", g.index_packages);
	put_single(fp, "dbgmirror_index_package_members", "gauge",
	    "Servable members of the indexed packages, one per ELF member "
	    "and kind.",
	    g.index_members);
	put_single(fp, "dbgmirror_missing_ids", "gauge",
	    "Distinct build-ids in the missing-id report.", g.missing_ids);
	put_single(fp, "dbgmirror_connections", "gauge",
	    "Open client connections.", g.connections);
	put_single(fp, "dbgmirror_cache_evictions_total", "counter",
	    "Cache entries evicted.", g.evictions);
	put_single(fp, "dbgmirror_cache_evicted_bytes_total", "counter",
	    "Bytes of cache entries evicted.", g.evicted_bytes);
	render_scan(fp, &g.scan);
}

/* Entries of /proc/self/fd, this listing's own included; -1. */
static long
open_fds(void)
{
	struct dirent *de;
	long n = 0;
	DIR *dir;

	if ((dir = opendir("/proc/self/fd")) == NULL)
		return -1;
	while ((de = readdir(dir)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(dir);
	return n;
}

/*
 * The process_* metrics every Prometheus client library exports, from
 * /proc/self/stat (CPU time in clock ticks, virtual size in bytes,
 * resident set in pages), /proc/self/fd and the open files limit.  A
 * value that cannot be read is left out.
 */
static void
render_process(FILE *fp)
{
	unsigned long long utime, stime, vsize;
	long long rss;
	char buf[1024], *p;
	struct rlimit rl;
	long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE), fds;
	FILE *sf;
	int got = 0;

	if ((sf = fopen("/proc/self/stat", "re")) != NULL) {
		/* The command may hold blanks and ')': after the last ')'. */
		if (fgets(buf, sizeof(buf), sf) != NULL &&
		    (p = strrchr(buf, ')')) != NULL &&
		    sscanf(p + 2,
			"%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu "
			"%llu %*d %*d %*d %*d %*d %*d %*u %llu %lld",
			&utime, &stime, &vsize, &rss) == 4)
			got = 1;
		fclose(sf);
	}
	if (got && tick > 0) {
		put_header(fp, "process_cpu_seconds_total", "counter",
		    "Total user and system CPU time spent in seconds.");
		fprintf(fp, "process_cpu_seconds_total %.2f\n",
		    (double)(utime + stime) / (double)tick);
	}
	if (got && page > 0) {
		put_single(fp, "process_virtual_memory_bytes", "gauge",
		    "Virtual memory size in bytes.", vsize);
		put_single(fp, "process_resident_memory_bytes", "gauge",
		    "Resident memory size in bytes.",
		    rss > 0 ? (uint64_t)rss * (uint64_t)page : 0);
	}
	if ((fds = open_fds()) > 0)
		/* Less the descriptor of the listing itself. */
		put_single(fp, "process_open_fds", "gauge",
		    "Number of open file descriptors.", (uint64_t)fds - 1);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		put_single(fp, "process_max_fds", "gauge",
		    "Maximum number of open file descriptors.",
		    (uint64_t)rl.rlim_cur);
	put_header(fp, "process_start_time_seconds", "gauge",
	    "Start time of the process since unix epoch in seconds.");
	fprintf(fp, "process_start_time_seconds %lld\n", (long long)start_time);
}

/* More lines of another module (sources/repo.c), set at start-up. */
static void (*extra_fn)(FILE *fp, void *arg);
static void *extra_arg;

void
metrics_set_extra(void (*fn)(FILE *fp, void *arg), void *arg)
{
	extra_fn = fn;
	extra_arg = arg;
}

char *
metrics_render(size_t *len)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *fp;
	int failed;

	if ((fp = open_memstream(&buf, &size)) == NULL)
		return NULL;
	render_requests(fp);
	render_connections(fp);
	render_upstreams(fp);
	render_config(fp);
	render_store(fp);
	render_symbolicate(fp);
	render_gauges(fp);
	if (extra_fn != NULL)
		extra_fn(fp, extra_arg);
	put_header(fp, "dbgmirror_build_info", "gauge",
	    "Always 1; its labels say which dbgmirror this is.");
	fputs("dbgmirror_build_info{version=\"", fp);
	put_label(fp, PACKAGE_VERSION);
	fputs("\"} 1\n", fp);
	render_process(fp);
	failed = ferror(fp);
	if (fclose(fp) != 0 || failed) {
		free(buf);
		return NULL;
	}
	if (len != NULL)
		*len = size;
	return buf;
}

void
metrics_free(void)
{
	unsigned i;

	pthread_mutex_lock(&names_mu);
	for (i = 0; i < METRICS_MAX_UPSTREAMS; i++) {
		free(upstream_names[i]);
		upstream_names[i] = NULL;
		upstream_shown[i] = 0;
	}
	pthread_mutex_unlock(&names_mu);
}
