/*
 * fetchers/upset.c: the upstreams of a set (fetchers/upstream.h): each
 * one's record (its own copy of its configuration, on the heap and
 * counted, so that one taken out of the set lives until its transfers
 * end), its circuit breaker and the probes that close it, the request
 * head every transfer to it carries, and upstream_set_apply's changes.
 *
 * Breakers count failures in a row per upstream (a 404, a 406 to the
 * X-DEBUGINFOD-MAXSIZE we sent or a good answer resets the count).  An
 * open breaker makes fetches skip the upstream at once; once the backoff
 * is over by o.now_ns() (looked at every second while it runs) "GET /"
 * probes it and closes the breaker on any answer below 500.
 *
 * It calls neither fetchers/upstream.c nor fetchers/upmeta.c
 * (fetchers/upstream_int.h).  Everything runs on the thread of the set's
 * event base (fetchers/upstream.h).
 */
#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "autoconf.h"
#include "fetchers/curlev.h"
#include "fetchers/redirect.h"
#include "fetchers/upstream.h"
#include "fetchers/upstream_int.h"

#define PROBE_TIMEOUT 5
/* How often an open breaker looks at the clock. */
#define BREAKER_TICK_NS 1000000000

static struct upstream *upstream_find(const struct upstream_set *us,
    unsigned id);

/* ------------------------------------------------------------- breaker */

static void
breaker_set(struct upstream *u, enum upstream_breaker state, const char *why)
{
	u->state = state;
	if (u->us->obs.breaker != NULL)
		u->us->obs.breaker(u->us->obs.arg, u->index, state, why,
		    u->backoff);
}

/* An upstream error kind in words, for the breaker's log lines. */
static const char *
err_words(enum upstream_err kind)
{
	switch (kind) {
	case UPSTREAM_ERR_CONNECT:
		return "could not connect";
	case UPSTREAM_ERR_TIMEOUT:
		return "timed out";
	case UPSTREAM_ERR_HTTP:
		return "an HTTP error";
	case UPSTREAM_ERR_TRANSFER:
		return "a broken transfer";
	case UPSTREAM_ERR_CONTENT:
		return "wrong content";
	case UPSTREAM_ERR_BREAKER:
		return "skipped";
	}
	return "an error";
}

static void probe_start(struct upstream *u);

/*
 * Wake at probe_at by o.now_ns(), looking at that clock at least every
 * BREAKER_TICK_NS: a clock that moved ahead (a test's: daemon/clock.h)
 * ends the backoff within a tick.
 */
static void
breaker_wait(struct upstream *u)
{
	int64_t left = u->probe_at - u->us->o.now_ns();
	struct timeval tv;

	if (left > BREAKER_TICK_NS)
		left = BREAKER_TICK_NS;
	if (left < 0)
		left = 0;
	tv.tv_sec = (time_t)(left / 1000000000);
	tv.tv_usec = (suseconds_t)(left % 1000000000 / 1000);
	evtimer_add(u->probe_timer, &tv);
}

static void
upstream_probe_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct upstream *u = arg;

	if (u->us->o.now_ns() < u->probe_at)
		breaker_wait(u);
	else
		probe_start(u);
}

static void
breaker_open(struct upstream *u, const char *why)
{
	u->probe_at = u->us->o.now_ns() + (int64_t)u->backoff * 1000000000;
	breaker_set(u, UPSTREAM_OPEN, why);
	breaker_wait(u);
}

/* Open again after a failed probe, waiting twice as long (bounded). */
static void
breaker_reopen(struct upstream *u, const char *why)
{
	unsigned max = u->us->o.breaker_backoff_max;

	u->backoff = u->backoff * 2 > max ? max : u->backoff * 2;
	breaker_open(u, why);
}

void
upstream_failed(struct upstream *u, enum upstream_err kind)
{
	const struct upstream_opts *o = &u->us->o;

	if (u->us->obs.error != NULL)
		u->us->obs.error(u->us->obs.arg, u->index, kind);
	if (u->state != UPSTREAM_CLOSED || u->gone)
		return;
	if (++u->failures >= o->breaker_failures) {
		char why[96];

		snprintf(why, sizeof(why), "%u failure%s in a row, the last %s",
		    u->failures, u->failures == 1 ? "" : "s", err_words(kind));
		u->backoff = o->breaker_backoff;
		breaker_open(u, why);
	}
}

void
upstream_answered(struct upstream *u)
{
	u->failures = 0;
}

/*
 * The end of a "GET /" (upstream_probe_new): its HTTP status (0: none), the handle
 * freed.  Any status below 500 means the upstream is there and answering.
 */
long
upstream_probe_end(CURL *easy)
{
	long code = 0;

	curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(easy);
	return code;
}

static void
upstream_probe_done_cb(CURL *easy, CURLcode rc, void *arg)
{
	struct upstream *u = arg;
	long code = upstream_probe_end(easy);

	u->probe = NULL;
	if (code > 0 && code < 500) {
		char why[64];

		snprintf(why, sizeof(why), "the probe got HTTP %ld", code);
		u->live_at = u->us->o.now_ns();
		u->failures = 0;
		u->backoff = u->us->o.breaker_backoff;
		breaker_set(u, UPSTREAM_CLOSED, why);
		return;
	}
	if (code > 0) {
		char why[64];

		snprintf(why, sizeof(why), "the probe got HTTP %ld", code);
		breaker_reopen(u, why);
	} else {
		breaker_reopen(u, curl_easy_strerror(rc));
	}
}

static size_t
discard_cb(char *p, size_t size, size_t n, void *arg)
{
	return size * n;
}

/*
 * Start "GET /" of u, given seconds, ending in done(arg); NULL when out
 * of memory.
 */
CURL *
upstream_probe_new(struct upstream *u, unsigned seconds, curlev_done_fn done,
    void *arg)
{
	char url[1024];
	CURL *e;

	snprintf(url, sizeof(url), "%s/", u->cu->url);
	if ((e = curl_easy_init()) == NULL)
		return NULL;
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, (long)seconds);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard_cb);
	curl_easy_setopt(e, CURLOPT_USERAGENT, u->us->ua);
	if (u->us->o.proxy != NULL)
		curl_easy_setopt(e, CURLOPT_PROXY, u->us->o.proxy);
	if (u->us->o.ca_file != NULL)
		curl_easy_setopt(e, CURLOPT_CAINFO, u->us->o.ca_file);
	if (curlev_add(u->us->cv, e, done, arg) == -1) {
		curl_easy_cleanup(e);
		return NULL;
	}
	return e;
}

static void
probe_start(struct upstream *u)
{
	breaker_set(u, UPSTREAM_PROBING, "the backoff is over");
	if ((u->probe = upstream_probe_new(u, PROBE_TIMEOUT,
		 upstream_probe_done_cb, u)) == NULL)
		breaker_reopen(u, "out of memory");
}

/* ------------------------------------------------------------ requests */

enum upstream_err
upstream_classify(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_CONNECT:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
		return UPSTREAM_ERR_CONNECT;
	case CURLE_OPERATION_TIMEDOUT:
		return UPSTREAM_ERR_TIMEOUT;
	case CURLE_HTTP_RETURNED_ERROR:
	case CURLE_TOO_MANY_REDIRECTS:
		return UPSTREAM_ERR_HTTP;
	default:
		return UPSTREAM_ERR_TRANSFER;
	}
}

void
upstream_sign(void *e, const struct upstream_conf *cu)
{
	if (cu->aws_sigv4 == NULL)
		return;
	curl_easy_setopt(e, CURLOPT_AWS_SIGV4, cu->aws_sigv4);
	/* Separate options: an access key may hold a ':'. */
	curl_easy_setopt(e, CURLOPT_USERNAME, cu->user);
	curl_easy_setopt(e, CURLOPT_PASSWORD, cu->password);
}

/*
 * Set what every request to u has on e: url, the transport (connect
 * timeout, proxy, CA), the configured headers, and the X-Forwarded-For,
 * Via and User-Agent of the request it is made for (each NULL for none)
 * and its X-DEBUGINFOD-MAXSIZE (limit; 0 for none).
 * Returns the header list, which the caller frees after the transfer.
 */
struct curl_slist *
upstream_easy_request(CURL *e, const struct upstream *u, const char *url,
    const char *xff, const char *via, uint64_t limit, const char *ua)
{
	const struct upstream_opts *o = &u->us->o;
	struct curl_slist *hdrs = NULL;
	const struct curl_slist *h;
	char line[1024];

	if (xff != NULL) {
		snprintf(line, sizeof(line), "X-Forwarded-For: %s", xff);
		hdrs = curl_slist_append(hdrs, line);
	}
	if (via != NULL) {
		snprintf(line, sizeof(line), "Via: %s", via);
		hdrs = curl_slist_append(hdrs, line);
	}
	if (limit > 0) {
		snprintf(line, sizeof(line), "X-DEBUGINFOD-MAXSIZE: %" PRIu64,
		    limit);
		hdrs = curl_slist_append(hdrs, line);
	}
	for (h = u->extra; h != NULL; h = h->next)
		hdrs = curl_slist_append(hdrs, h->data);
	if (ua != NULL)
		snprintf(line, sizeof(line), "%s %s", ua, u->us->ua);
	else
		snprintf(line, sizeof(line), "%s", u->us->ua);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_USERAGENT, line);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT,
	    (long)u->cu->connect_timeout);
	upstream_sign(e, u->cu);
	if (o->proxy != NULL)
		curl_easy_setopt(e, CURLOPT_PROXY, o->proxy);
	if (o->ca_file != NULL) {
		curl_easy_setopt(e, CURLOPT_CAPATH, "/etc/ssl/certs");
		curl_easy_setopt(e, CURLOPT_CAINFO, o->ca_file);
	}
	return hdrs;
}

/* ------------------------------------------------------------ outcomes */

void
upstream_blame(struct upstream_set *us, unsigned id)
{
	struct upstream *u = upstream_find(us, id);

	if (u != NULL)
		upstream_failed(u, UPSTREAM_ERR_CONTENT);
}

int
upstream_usable(const struct upstream_set *us, unsigned id)
{
	const struct upstream *u = upstream_find(us, id);

	return u != NULL && u->cu->enabled && u->state == UPSTREAM_CLOSED;
}

void
upstream_outcome(struct upstream_set *us, unsigned id, int ok,
    enum upstream_err kind)
{
	struct upstream *u = upstream_find(us, id);

	if (u == NULL)
		return;
	if (ok)
		upstream_answered(u);
	else
		upstream_failed(u, kind);
}

/* ----------------------------------------------------------- upstreams */

/* *dst becomes a copy of src (NULL stays NULL): 0, or -1. */
static int
str_copy(const char **dst, const char *src)
{
	char *s = NULL;

	if (src != NULL && (s = strdup(src)) == NULL)
		return -1;
	free((char *)*dst);
	*dst = s;
	return 0;
}

/*
 * u's configuration and headers from cu, its url and name aside (set
 * once, by upstream_new: an upstream is the one of its URL).  -1 when out
 * of memory (u keeps what it had, or part of the new).
 */
static int
upstream_reconf(struct upstream *u, const struct upstream_conf *cu)
{
	struct upstream_conf *c = &u->conf;
	struct curl_slist *extra = NULL, *l;
	char **headers = NULL;
	size_t i;

	if (cu->nheaders > 0 &&
	    (headers = calloc(cu->nheaders, sizeof(*headers))) == NULL)
		return -1;
	for (i = 0; i < cu->nheaders; i++) {
		if ((headers[i] = strdup(cu->headers[i])) == NULL ||
		    (l = curl_slist_append(extra, cu->headers[i])) == NULL)
			goto fail;
		extra = l;
	}
	if (str_copy(&c->aws_sigv4, cu->aws_sigv4) == -1 ||
	    str_copy(&c->user, cu->user) == -1 ||
	    str_copy(&c->password, cu->password) == -1)
		goto fail;
	c->enabled = cu->enabled;
	c->connect_timeout = cu->connect_timeout;
	c->first_byte_timeout = cu->first_byte_timeout;
	c->min_rate = cu->min_rate;
	for (i = 0; i < c->nheaders; i++)
		free(c->headers[i]);
	free((char **)c->headers);
	c->headers = headers;
	c->nheaders = cu->nheaders;
	curl_slist_free_all(u->extra);
	u->extra = extra;
	return 0;
fail:
	for (i = 0; i < cu->nheaders && headers != NULL; i++)
		free(headers[i]);
	free(headers);
	curl_slist_free_all(extra);
	return -1;
}

void
upstream_unref(struct upstream *u)
{
	size_t i;

	if (--u->refs > 0)
		return;
	if (u->probe_timer != NULL)
		event_free(u->probe_timer);
	curl_slist_free_all(u->extra);
	for (i = 0; i < u->conf.nheaders; i++)
		free(u->conf.headers[i]);
	free((char **)u->conf.headers);
	free((char *)u->conf.url);
	free((char *)u->conf.name);
	free((char *)u->conf.aws_sigv4);
	free((char *)u->conf.user);
	free((char *)u->conf.password);
	free(u);
}

/* A new upstream of us as cu says, its breaker closed; NULL out of memory. */
static struct upstream *
upstream_new(struct upstream_set *us, const struct upstream_conf *cu)
{
	struct upstream *u;

	if ((u = calloc(1, sizeof(*u))) == NULL)
		return NULL;
	u->us = us;
	u->refs = 1;
	u->index = cu->id;
	u->cu = &u->conf;
	u->conf.id = cu->id;
	if (str_copy(&u->conf.url, cu->url) == -1 ||
	    str_copy(&u->conf.name, cu->name) == -1 ||
	    upstream_reconf(u, cu) == -1 ||
	    (u->probe_timer = evtimer_new(us->base, upstream_probe_timer_cb,
		 u)) == NULL) {
		upstream_unref(u);
		return NULL;
	}
	breaker_set(u, UPSTREAM_CLOSED, NULL);
	return u;
}

/* Take u out of its set: no probe any more; its transfers go on. */
void
upstream_remove(struct upstream *u)
{
	u->gone = 1;
	if (u->probe != NULL) {
		curlev_remove(u->us->cv, u->probe);
		curl_easy_cleanup(u->probe);
		u->probe = NULL;
	}
	evtimer_del(u->probe_timer);
	upstream_unref(u);
}

/* The upstream of us whose id is id, or NULL. */
static struct upstream *
upstream_find(const struct upstream_set *us, unsigned id)
{
	unsigned i;

	for (i = 0; i < us->n; i++)
		if (us->v[i]->index == id)
			return us->v[i];
	return NULL;
}

/* The settings of opts but its upstreams, into us (its own strings). */
static int
set_opts(struct upstream_set *us, const struct upstream_opts *opts)
{
	struct upstream_opts o = *opts;

	o.upstreams = NULL;
	o.n = 0;
	o.proxy = us->o.proxy;
	o.ca_file = us->o.ca_file;
	o.user_agent = us->o.user_agent;
	if (str_copy(&o.proxy, opts->proxy) == -1 ||
	    str_copy(&o.ca_file, opts->ca_file) == -1 ||
	    str_copy(&o.user_agent, opts->user_agent) == -1) {
		us->o.proxy = o.proxy;
		us->o.ca_file = o.ca_file;
		us->o.user_agent = o.user_agent;
		return -1;
	}
	us->o = o;
	us->redirects =
	    (struct redirect_policy){ o.redirects, o.listeners, o.nlisteners };
	snprintf(us->ua, sizeof(us->ua), "%s",
	    o.user_agent != NULL ? o.user_agent
				 : PACKAGE_NAME "/" PACKAGE_VERSION);
	return 0;
}

int
upstream_set_apply(struct upstream_set *us, const struct upstream_opts *opts,
    struct upstream_changes *ch)
{
	struct upstream **v = NULL;
	unsigned char *fresh = NULL;
	size_t i, j;
	int rc = 0;

	memset(ch, 0, sizeof(*ch));
	if (opts->n > 0 &&
	    ((v = calloc(opts->n, sizeof(*v))) == NULL ||
		(fresh = calloc(opts->n, 1)) == NULL)) {
		free(v);
		return -1;
	}
	/* The new upstreams first: a failure leaves the set as it was. */
	for (i = 0; i < opts->n; i++) {
		for (j = 0; j < us->n; j++)
			if (strcmp(us->v[j]->cu->url, opts->upstreams[i].url) ==
			    0)
				break;
		if (j < us->n) {
			v[i] = us->v[j];
			continue;
		}
		if ((v[i] = upstream_new(us, &opts->upstreams[i])) == NULL)
			goto fail;
		fresh[i] = 1;
	}
	if (set_opts(us, opts) == -1)
		goto fail;
	/* Kept with its breaker and new settings, or gone. */
	for (i = 0; i < opts->n; i++) {
		if (fresh[i]) {
			ch->added++;
			continue;
		}
		ch->kept++;
		if (upstream_reconf(v[i], &opts->upstreams[i]) == -1)
			rc = -1;
	}
	for (j = 0; j < us->n; j++) {
		for (i = 0; i < opts->n && v[i] != us->v[j]; i++)
			continue;
		if (i == opts->n) {
			upstream_remove(us->v[j]);
			ch->removed++;
		}
	}
	free(us->v);
	free(fresh);
	us->v = v;
	us->n = (unsigned)opts->n;
	return rc;
fail:
	for (i = 0; i < opts->n; i++)
		if (fresh[i] && v[i] != NULL)
			upstream_remove(v[i]);
	free(v);
	free(fresh);
	return -1;
}
