/*
 * fetchers/upstream.c: parallel fetches from upstream debuginfod servers.
 *
 * A fetch starts one attempt (a curl easy handle) per usable upstream.
 * An attempt's first body bytes are held back in a small buffer until
 * there are UPSTREAM_PREFIX of them (or the body ended); then the sink
 * decides.  The first accepted attempt wins: the others are marked lost
 * and removed from the multi handle by a deferred event, because libcurl
 * forbids removing handles from inside its callbacks.
 *
 * Deadlines: connect (CURLOPT_CONNECTTIMEOUT), first byte (our timer per
 * attempt, disarmed by the first header line), a stall (once the head is
 * in, fewer than min-rate bytes/s over an upstream-stall-timeout, or no
 * byte at all: our timer too, since libcurl's low-speed limit would also
 * count the silence before the head), and the whole fetch
 * (upstream-timeout).  The first-byte timer tells an upstream that gives
 * no answer at all from one at work: a debuginfod extracting a member of
 * a large package sends nothing for seconds, then the whole file.  When
 * it fires, the upstream is asked "GET /" (unless it answered that within
 * the last first-byte timeout): an answer means it is alive and working,
 * and the attempt waits another first-byte timeout, then asks again, up
 * to the whole fetch's deadline; no answer to that either within a
 * first-byte timeout fails the attempt.  Connection refused, a connect timeout or a closed connection
 * fail at once, as before.  A transport error is retried after a backoff of
 * 100 ms doubling, up to upstream-retries times; the winner resumes with
 * "Range: bytes=N-", and when the upstream answers 200 anyway, its first
 * N bytes are skipped.
 *
 * The upstreams themselves (their records, breakers and probes, and the
 * request head every transfer to one carries) are fetchers/upset.c's;
 * /metadata queries fetchers/upmeta.c's.  This file calls both, neither
 * calls it: the set's new and free are here because freeing the set ends
 * the fetches and queries in progress.  Everything runs on the thread of
 * the set's event base (fetchers/upstream.h).
 */
#include "fetchers/upstream.h"

#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "fetchers/curlev.h"
#include "fetchers/headers.h"
#include "fetchers/redirect.h"
#include "fetchers/upstream_int.h"

#define RETRY_BASE_MS 100

struct attempt {
	struct upstream_fetch *f;
	struct upstream *u;
	struct attempt *next;
	CURL *easy;
	struct curl_slist *hdrs;
	struct event *fb_timer; /* first byte */
	CURL *live; /* "GET /" while its head is late */
	unsigned waited; /* seconds it waited for a head so far */
	struct event *retry_timer;
	struct event *stall_timer; /* the body's pace, once the head is in */
	uint64_t received; /* body bytes of this answer */
	uint64_t mark; /* received when the stall timer was last armed */
	int64_t t0; /* ns, when it started */
	unsigned tries;
	int got_head; /* a header line arrived */
	int lost; /* another attempt won, or it was given up */
	int refused; /* the sink refused its content */
	int timed_out; /* our first-byte timer fired */
	int redirect_refused; /* a Location outside upstream-redirects */
	int local; /* the sink could not keep its bytes: our failure */
	long code; /* HTTP status of the final answer */
	uint64_t length;
	uint64_t skip; /* bytes to drop from a 200 answer to a resume */
	struct headers head; /* of the answer arriving */
	char prefix[UPSTREAM_PREFIX];
	size_t prefixlen;
};

struct upstream_fetch {
	struct upstream_set *us;
	struct upstream_fetch *prev, *next;
	struct upstream_sink sink;
	void *arg;
	char *path;
	char *xff;
	char *via;
	char *ua;
	uint64_t limit; /* X-DEBUGINFOD-MAXSIZE to send; 0: none */
	uint64_t max_size;
	struct attempt *attempts;
	struct attempt *winner;
	uint64_t delivered; /* body bytes given to the sink */
	struct event *deadline;
	struct event *reap; /* removes lost attempts outside curl callbacks */
	int failed; /* some attempt failed (not 404) */
	int toobig; /* some upstream answered 406 to f->limit */
	char why[256];
};

static void attempt_start(struct attempt *a);
static void fetch_check_end(struct upstream_fetch *f);
static void fetch_free(struct upstream_fetch *f);

/* ------------------------------------------------------------ attempts */

static double
seconds_since(const struct upstream_set *us, int64_t t0)
{
	return (double)(us->o.now_ns() - t0) / 1e9;
}

/* Stop a's "GET /", if any (never from inside a libcurl callback). */
static void
attempt_unprobe(struct attempt *a)
{
	if (a->live != NULL) {
		curlev_remove(a->f->us->cv, a->live);
		curl_easy_cleanup(a->live);
		a->live = NULL;
	}
}

/* End the curl side of an attempt (not its place in the fetch). */
static void
attempt_stop(struct attempt *a)
{
	if (a->easy != NULL) {
		curlev_remove(a->f->us->cv, a->easy);
		curl_easy_cleanup(a->easy);
		a->easy = NULL;
	}
	attempt_unprobe(a);
	curl_slist_free_all(a->hdrs);
	a->hdrs = NULL;
	evtimer_del(a->fb_timer);
	evtimer_del(a->retry_timer);
	evtimer_del(a->stall_timer);
}

static void
attempt_free(struct attempt *a)
{
	attempt_stop(a);
	event_free(a->fb_timer);
	event_free(a->retry_timer);
	event_free(a->stall_timer);
	if (a->u != NULL)
		upstream_unref(a->u);
	free(a);
}

/* Mark every attempt but w lost; the reap event removes them. */
static void
fetch_lose_others(struct upstream_fetch *f, struct attempt *w)
{
	struct attempt *a;

	for (a = f->attempts; a != NULL; a = a->next)
		if (a != w)
			a->lost = 1;
	event_active(f->reap, 0, 0);
}

static size_t
attempt_header_cb(char *p, size_t size, size_t nitems, void *arg)
{
	struct attempt *a = arg;
	size_t n = size * nitems, vlen;
	char why[160];
	const char *v;

	if (!a->got_head) {
		struct timeval tv = { (time_t)a->f->us->o.stall_timeout, 0 };

		a->got_head = 1;
		evtimer_del(a->fb_timer);
		a->mark = a->received;
		evtimer_add(a->stall_timer, &tv);
	}
	if (headers_line(&a->head, p, n, &v, &vlen) == HEADERS_LOCATION &&
	    !redirect_allowed(&a->f->us->redirects, a->easy, a->u->cu->url, v,
		vlen, "upstream-redirects", why, sizeof(why))) {
		snprintf(a->f->why, sizeof(a->f->why), "%.90s: %s",
		    a->u->cu->name, why);
		a->redirect_refused = 1;
		return 0; /* libcurl ends the transfer: CURLE_WRITE_ERROR */
	}
	return n;
}

/*
 * Hand bytes of the winner to the sink: 1 taken, 0 refused (or not kept),
 * DELIVER_PAUSED when the sink wants them again after upstream_resume().
 */
#define DELIVER_PAUSED 2
static int
deliver(struct upstream_fetch *f, const char *p, size_t n)
{
	if (n == 0)
		return 1;
	if (f->delivered + n > f->max_size) {
		snprintf(f->why, sizeof(f->why), "%s: larger than %" PRIu64,
		    f->winner->u->cu->name, f->max_size);
		f->winner->refused = 1;
		return 0;
	}
	switch (f->sink.data(f->arg, p, n)) {
	case 0:
		break;
	case UPSTREAM_SINK_PAUSE:
		return DELIVER_PAUSED;
	case UPSTREAM_SINK_LOCAL:
		f->winner->local = 1;
		return 0;
	default:
		f->winner->refused = 1;
		return 0;
	}
	f->delivered += n;
	return 1;
}

/* The announced body length of the answer, once its head is in. */
static void
attempt_length(struct attempt *a)
{
	curl_off_t cl = -1;

	curl_easy_getinfo(a->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
	a->length = cl >= 0 ? (uint64_t)cl : UINT64_MAX;
}

/* Offer the prefix to the sink; 1 when this attempt now wins. */
static int
attempt_offer(struct attempt *a)
{
	struct upstream_fetch *f = a->f;
	struct upstream_head h;

	h.upstream = a->u->index;
	h.url = a->u->cu->name;
	h.length = a->length;
	h.mtime = a->head.date[0] != '\0'
	    ? (int64_t)curl_getdate(a->head.date, NULL)
	    : -1;
	h.file = a->head.file;
	h.archive = a->head.archive;
	h.imasig = a->head.imasig;
	h.extra = a->head.keep;
	h.extra_len = a->head.keeplen;
	if (f->sink.accept(f->arg, &h, a->prefix, a->prefixlen) == -1) {
		a->refused = 1;
		return 0;
	}
	f->winner = a;
	fetch_lose_others(f, a);
	/* The sink only pauses bytes it has let readers see: never these. */
	return deliver(f, a->prefix, a->prefixlen) == 1;
}

static size_t
attempt_write_cb(char *p, size_t size, size_t nitems, void *arg)
{
	struct attempt *a = arg;
	struct upstream_fetch *f = a->f;
	size_t n = size * nitems, take;

	if (a->lost || a->refused || a->local)
		return 0;
	a->received += n;
	if (a->code == 0) {
		curl_easy_getinfo(a->easy, CURLINFO_RESPONSE_CODE, &a->code);
		attempt_length(a);
		/* A resumed transfer must go on where the last one broke. */
		if (f->winner == a && a->code == 206 &&
		    a->head.range_start != (int64_t)f->delivered)
			return 0;
	}
	if (f->winner == a) {
		take = a->code == 200 && a->skip > 0
		    ? (a->skip < n ? (size_t)a->skip : n)
		    : 0;
		switch (deliver(f, p + take, n - take)) {
		case DELIVER_PAUSED:
			/* libcurl hands the same piece again on resume. */
			return CURL_WRITEFUNC_PAUSE;
		case 0:
			return 0;
		}
		a->skip -= take;
		return n;
	}
	if (f->winner != NULL)
		return 0;
	take = sizeof(a->prefix) - a->prefixlen;
	if (take > n)
		take = n;
	memcpy(a->prefix + a->prefixlen, p, take);
	a->prefixlen += take;
	if (a->prefixlen < sizeof(a->prefix))
		return n;
	if (!attempt_offer(a))
		return 0;
	return deliver(f, p + take, n - take) == 1 ? n : 0;
}

/*
 * A timer of a ran out (f->why says which): the attempt has failed, and
 * with it the fetch when a had won.  Removing here is safe: a timer is
 * not a curl callback.
 */
static void
attempt_timed_out(struct attempt *a)
{
	struct upstream_fetch *f = a->f;

	a->timed_out = 1;
	attempt_stop(a);
	upstream_failed(a->u, UPSTREAM_ERR_TIMEOUT);
	if (f->winner == a) {
		f->sink.done(f->arg, UPSTREAM_FAILED, f->why);
		fetch_free(f);
		return;
	}
	a->lost = 1;
	f->failed = 1;
	fetch_check_end(f);
}

/* Give up a's head: the upstream answers nothing at all. */
static void
attempt_no_answer(struct attempt *a)
{
	snprintf(a->f->why, sizeof(a->f->why), "%s: no answer within %us",
	    a->u->cu->name, a->waited);
	attempt_timed_out(a);
}

/*
 * Every stall timeout once the head is in: the body must have kept up
 * min-rate bytes/s, and brought one byte at least.
 */
static void
attempt_stall_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct attempt *a = arg;
	unsigned secs = a->f->us->o.stall_timeout;
	uint64_t need = (uint64_t)a->u->cu->min_rate * secs;
	struct timeval tv = { (time_t)secs, 0 };

	if (a->received - a->mark >= (need > 0 ? need : 1)) {
		a->mark = a->received;
		evtimer_add(a->stall_timer, &tv);
		return;
	}
	snprintf(a->f->why, sizeof(a->f->why),
	    "%s: slower than %u bytes/s for %us", a->u->cu->name,
	    a->u->cu->min_rate, secs);
	attempt_timed_out(a);
}

/* The upstream of a answers: wait another first-byte timeout. */
static void
attempt_wait_more(struct attempt *a)
{
	struct timeval tv = { (time_t)a->u->cu->first_byte_timeout, 0 };

	if (a->u->us->obs.working != NULL)
		a->u->us->obs.working(a->u->us->obs.arg, a->u->index,
		    a->f->path, a->waited);
	evtimer_add(a->fb_timer, &tv);
}

static void
attempt_live_done_cb(CURL *easy, CURLcode rc, void *arg)
{
	struct attempt *a = arg;
	long code = upstream_probe_end(easy);

	a->live = NULL;
	if (a->got_head || a->lost)
		return; /* the answer came meanwhile */
	if (code > 0 && code < 500) {
		a->u->live_at = a->f->us->o.now_ns();
		attempt_wait_more(a);
	} else {
		attempt_no_answer(a);
	}
}

static void
attempt_fb_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct attempt *a = arg;
	struct upstream *u = a->u;
	int64_t patience = (int64_t)u->cu->first_byte_timeout * 1000000000;

	a->waited += u->cu->first_byte_timeout;
	/* An object store that keeps its head is not at work: a failure. */
	if (u->cu->aws_sigv4 != NULL) {
		attempt_no_answer(a);
		return;
	}
	if (u->live_at != 0 && u->us->o.now_ns() - u->live_at < patience) {
		attempt_wait_more(a);
		return;
	}
	if ((a->live = upstream_probe_new(u, u->cu->first_byte_timeout,
		 attempt_live_done_cb, a)) == NULL)
		attempt_no_answer(a);
}

static void
attempt_retry_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	attempt_start(arg);
}

/* Try again later if the error is worth it and time allows; 1 if so. */
static int
attempt_retry(struct attempt *a, CURLcode rc)
{
	struct timeval tv;
	unsigned ms;

	if (a->tries >= a->f->us->o.retries || a->refused ||
	    a->redirect_refused || a->local ||
	    rc == CURLE_HTTP_RETURNED_ERROR || rc == CURLE_TOO_MANY_REDIRECTS ||
	    rc == CURLE_PEER_FAILED_VERIFICATION || a->timed_out ||
	    rc == CURLE_OPERATION_TIMEDOUT)
		return 0;
	ms = RETRY_BASE_MS << a->tries;
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	a->tries++;
	if (a->f->winner == a && a->f->delivered > 0) {
		a->skip = a->f->delivered;
	} else {
		/* Not won yet: the prefix is read again. */
		a->prefixlen = 0;
	}
	return evtimer_add(a->retry_timer, &tv) == 0;
}

static void
attempt_done_cb(CURL *easy, CURLcode rc, void *arg)
{
	struct attempt *a = arg;
	struct upstream_fetch *f = a->f;
	long code = 0;

	curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
	if (a->code == 0)
		attempt_length(a);
	/* curlev has already taken the handle out of the multi. */
	curl_easy_cleanup(easy);
	a->easy = NULL;
	evtimer_del(a->fb_timer);
	evtimer_del(a->stall_timer);
	/* Safe in a done callback, which is not one of libcurl's. */
	attempt_unprobe(a);
	curl_slist_free_all(a->hdrs);
	a->hdrs = NULL;
	if (a->lost)
		goto end;
	if (code > 0 && f->us->obs.latency != NULL)
		f->us->obs.latency(f->us->obs.arg, a->u->index,
		    seconds_since(f->us, a->t0));
	/* A body shorter than the prefix is offered when it ends. */
	if (rc == CURLE_OK && !a->refused && !a->local &&
	    (f->winner == a || (f->winner == NULL && attempt_offer(a))) &&
	    !a->local) {
		upstream_answered(a->u);
		f->sink.done(f->arg, UPSTREAM_OK, NULL);
		fetch_free(f);
		return;
	}
	if (a->local) {
		/* Not the upstream's doing: no error, no breaker. */
		f->sink.done(f->arg, UPSTREAM_LOCAL, NULL);
		fetch_free(f);
		return;
	}
	if (a->refused) {
		/*
		 * An object store that answers is up; its object is wrong,
		 * which the caller deletes (sources/objstore.c): no breaker count.
		 */
		if (a->u->cu->aws_sigv4 != NULL)
			upstream_answered(a->u);
		else
			upstream_failed(a->u, UPSTREAM_ERR_CONTENT);
		if (f->why[0] == '\0' || f->winner != a)
			snprintf(f->why, sizeof(f->why), "%s: wrong content",
			    a->u->cu->name);
	} else if (a->redirect_refused) {
		/* f->why says where it went. */
		upstream_failed(a->u, UPSTREAM_ERR_HTTP);
	} else if (rc == CURLE_HTTP_RETURNED_ERROR &&
	    (code == 404 || code == 410)) {
		upstream_answered(a->u);
		a->lost = 1;
		goto end;
	} else if (rc == CURLE_HTTP_RETURNED_ERROR && code == 406 &&
	    f->limit > 0) {
		/* An answer, not a failure: larger than what we asked for. */
		upstream_answered(a->u);
		a->lost = 1;
		f->toobig = 1;
		goto end;
	} else if (attempt_retry(a, rc)) {
		return;
	} else {
		upstream_failed(a->u, upstream_classify(rc));
		if (rc == CURLE_HTTP_RETURNED_ERROR)
			snprintf(f->why, sizeof(f->why), "%s: HTTP %ld",
			    a->u->cu->name, code);
		else
			snprintf(f->why, sizeof(f->why), "%s: %s",
			    a->u->cu->name, curl_easy_strerror(rc));
	}
	if (f->winner == a) {
		/* The winner broke: the others are gone already. */
		f->sink.done(f->arg, UPSTREAM_FAILED, f->why);
		fetch_free(f);
		return;
	}
	a->lost = 1;
	f->failed = 1;
end:
	fetch_check_end(f);
}

static void
attempt_start(struct attempt *a)
{
	struct upstream_fetch *f = a->f;
	struct upstream_set *us = f->us;
	const struct upstream_opts *o = &us->o;
	struct timeval tv = { (time_t)a->u->cu->first_byte_timeout, 0 };
	char url[4096], range[48];
	CURL *e;

	a->got_head = 0;
	a->waited = 0;
	a->code = 0;
	headers_reset(&a->head);
	a->head.amz_meta = a->u->cu->aws_sigv4 != NULL;
	snprintf(url, sizeof(url), "%s%s", a->u->cu->url, f->path);
	if ((e = a->easy = curl_easy_init()) == NULL)
		goto fail;
	a->hdrs = upstream_easy_request(e, a->u, url, f->xff, f->via, f->limit,
	    f->ua);
	curl_easy_setopt(e, CURLOPT_FAILONERROR, 1L);
	redirect_setup(e);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, attempt_header_cb);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, a);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, attempt_write_cb);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 256L * 1024);
	/*
	 * HTTP/2 over TLS when offered, sharing a connection if it can.  Only
	 * a TLS connection can turn out to multiplex: over plain http, waiting
	 * for it to tell would queue every fetch behind the one in progress.
	 */
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	if (strncasecmp(url, "https:", 6) == 0)
		curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
	if (a->skip > 0) {
		snprintf(range, sizeof(range), "%" PRIu64 "-", a->skip);
		curl_easy_setopt(e, CURLOPT_RANGE, range);
	}
	a->t0 = o->now_ns();
	if (curlev_add(us->cv, e, attempt_done_cb, a) == -1)
		goto fail;
	if (us->obs.request != NULL)
		us->obs.request(us->obs.arg, a->u->index);
	evtimer_add(a->fb_timer, &tv);
	return;
fail:
	if (a->easy != NULL) {
		curl_easy_cleanup(a->easy);
		a->easy = NULL;
	}
	a->lost = 1;
	f->failed = 1;
	snprintf(f->why, sizeof(f->why), "out of memory");
	event_active(f->reap, 0, 0);
}

/* -------------------------------------------------------------- fetches */

static void
fetch_free(struct upstream_fetch *f)
{
	struct attempt *a, *next;

	for (a = f->attempts; a != NULL; a = next) {
		next = a->next;
		attempt_free(a);
	}
	if (f->prev != NULL)
		f->prev->next = f->next;
	else
		f->us->fetches = f->next;
	if (f->next != NULL)
		f->next->prev = f->prev;
	if (f->deadline != NULL)
		event_free(f->deadline);
	if (f->reap != NULL)
		event_free(f->reap);
	free(f->path);
	free(f->xff);
	free(f->via);
	free(f->ua);
	free(f);
}

/* When no attempt is left running and none won: the verdict. */
static void
fetch_check_end(struct upstream_fetch *f)
{
	struct attempt *a;
	enum upstream_result res;

	if (f->winner != NULL)
		return;
	for (a = f->attempts; a != NULL; a = a->next)
		if (!a->lost)
			return;
	/* A 406 says the file exists: it outranks failures and 404s. */
	res = f->toobig ? UPSTREAM_TOOBIG
	    : f->failed ? UPSTREAM_FAILED
			: UPSTREAM_NOTFOUND;
	f->sink.done(f->arg, res, res == UPSTREAM_FAILED ? f->why : NULL);
	fetch_free(f);
}

static void
fetch_reap_cb(evutil_socket_t fd, short what, void *arg)
{
	struct upstream_fetch *f = arg;
	struct attempt *a;

	for (a = f->attempts; a != NULL; a = a->next)
		if (a->lost)
			attempt_stop(a);
	fetch_check_end(f);
}

static void
fetch_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct upstream_fetch *f = arg;

	snprintf(f->why, sizeof(f->why), "no upstream answered within %us",
	    f->us->o.timeout);
	f->sink.done(f->arg, UPSTREAM_FAILED, f->why);
	fetch_free(f);
}

struct upstream_fetch *
upstream_fetch(struct upstream_set *us, const char *path, const char *xff,
    const char *via, const char *ua, uint64_t limit, uint64_t max_size,
    const struct upstream_sink *sink, void *arg, enum upstream_result *res)
{
	struct upstream_fetch *f;
	struct attempt *a;
	struct timeval tv = { (time_t)us->o.timeout, 0 };
	unsigned i, usable = 0, enabled = 0;

	for (i = 0; i < us->n; i++) {
		if (!us->v[i]->cu->enabled)
			continue;
		enabled++;
		if (us->v[i]->state == UPSTREAM_CLOSED)
			usable++;
		else if (us->obs.error != NULL)
			us->obs.error(us->obs.arg, us->v[i]->index,
			    UPSTREAM_ERR_BREAKER);
	}
	if (usable == 0) {
		*res = enabled == 0 ? UPSTREAM_NOTFOUND : UPSTREAM_FAILED;
		return NULL;
	}
	if ((f = calloc(1, sizeof(*f))) == NULL)
		goto nomem;
	f->us = us;
	f->sink = *sink;
	f->arg = arg;
	f->limit = limit;
	f->max_size = max_size;
	f->path = strdup(path);
	f->xff = xff != NULL ? strdup(xff) : NULL;
	f->via = via != NULL ? strdup(via) : NULL;
	f->ua = ua != NULL ? strdup(ua) : NULL;
	f->deadline = evtimer_new(us->base, fetch_deadline_cb, f);
	f->reap = event_new(us->base, -1, 0, fetch_reap_cb, f);
	f->next = us->fetches;
	if (us->fetches != NULL)
		us->fetches->prev = f;
	us->fetches = f;
	if (f->path == NULL || (xff != NULL && f->xff == NULL) ||
	    (ua != NULL && f->ua == NULL) || (via != NULL && f->via == NULL) ||
	    f->deadline == NULL || f->reap == NULL)
		goto fail;
	for (i = 0; i < us->n; i++) {
		if (!us->v[i]->cu->enabled ||
		    us->v[i]->state != UPSTREAM_CLOSED)
			continue;
		if ((a = calloc(1, sizeof(*a))) == NULL)
			goto fail;
		a->f = f;
		a->u = us->v[i];
		a->u->refs++;
		a->fb_timer = evtimer_new(us->base, attempt_fb_timer_cb, a);
		a->retry_timer =
		    evtimer_new(us->base, attempt_retry_timer_cb, a);
		a->stall_timer =
		    evtimer_new(us->base, attempt_stall_timer_cb, a);
		a->next = f->attempts;
		f->attempts = a;
		if (a->fb_timer == NULL || a->retry_timer == NULL ||
		    a->stall_timer == NULL)
			goto fail;
	}
	evtimer_add(f->deadline, &tv);
	for (a = f->attempts; a != NULL; a = a->next)
		attempt_start(a);
	return f;
fail:
	fetch_free(f);
nomem:
	*res = UPSTREAM_FAILED;
	return NULL;
}

void
upstream_cancel(struct upstream_fetch *f)
{
	fetch_free(f);
}

void
upstream_resume(struct upstream_fetch *f)
{
	if (f->winner != NULL && f->winner->easy != NULL)
		curl_easy_pause(f->winner->easy, CURLPAUSE_CONT);
}

/* ----------------------------------------------------------------- set */

int
upstream_init(void)
{
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

void
upstream_shutdown(void)
{
	curl_global_cleanup();
}

struct upstream_set *
upstream_set_new(const struct upstream_opts *opts, struct event_base *base,
    const struct upstream_observer *obs, char *err, size_t errlen)
{
	struct upstream_changes ch;
	struct upstream_set *us;

	if ((us = calloc(1, sizeof(*us))) == NULL)
		goto nomem;
	us->base = base;
	if (obs != NULL)
		us->obs = *obs;
	if ((us->cv = curlev_new(base)) == NULL ||
	    upstream_set_apply(us, opts, &ch) == -1)
		goto nomem;
	return us;
nomem:
	snprintf(err, errlen, "upstreams: out of memory");
	upstream_set_free(us);
	return NULL;
}

void
upstream_set_free(struct upstream_set *us)
{
	unsigned i;

	if (us == NULL)
		return;
	while (us->fetches != NULL)
		fetch_free(us->fetches);
	/* A metadata query's asker holds a record until it is told. */
	while (us->metas != NULL) {
		us->metas->done(us->metas->arg, NULL, 0);
		upstream_meta_free(us->metas);
	}
	for (i = 0; i < us->n; i++)
		upstream_remove(us->v[i]);
	free(us->v);
	curlev_free(us->cv);
	free((char *)us->o.proxy);
	free((char *)us->o.ca_file);
	free((char *)us->o.user_agent);
	free(us);
}
