/*
 * fetchers/upstream_int.h: what the files of the upstream fetcher share:
 * fetchers/upstream.c (fetches, and the set's new and free, which end the
 * fetches and queries in progress), fetchers/upmeta.c (/metadata queries)
 * and fetchers/upset.c (each upstream of the set: its record, its breaker
 * and probes, the request head of every transfer to it, the set's changes);
 * nothing else includes it.  Calls go one way: upstream.c calls the two
 * others, upmeta.c calls upset.c, which calls neither.  Everything runs on
 * the thread of the set's event base (fetchers/upstream.h).
 */
#ifndef FETCHERS_UPSTREAM_INT_H
#define FETCHERS_UPSTREAM_INT_H

#include <curl/curl.h>
#include <stdint.h>

#include "fetchers/curlev.h"
#include "fetchers/redirect.h"
#include "fetchers/upstream.h"

struct event;
struct meta_attempt;

/*
 * One upstream, on the heap: the set holds a reference while it is
 * configured, and each attempt on it holds one, so that an upstream taken
 * out of the set by upstream_set_apply lives until its transfers end.
 */
struct upstream {
	struct upstream_set *us;
	unsigned index; /* its id (upstream_conf.id) */
	unsigned refs;
	int gone; /* out of the set: its breaker moves no more */
	struct upstream_conf conf; /* its own copy */
	const struct upstream_conf *cu; /* &conf */
	struct curl_slist *extra; /* configured request headers */
	enum upstream_breaker state;
	unsigned failures; /* in a row */
	unsigned backoff; /* seconds, doubling while probes fail */
	int64_t probe_at; /* o.now_ns() when an open breaker's backoff ends */
	struct event *probe_timer;
	CURL *probe;
	int64_t live_at; /* ns: "GET /" last answered; 0 never */
};

struct upstream_set {
	struct upstream_opts o; /* its strings the set's own */
	struct redirect_policy redirects; /* o's, for redirect_allowed */
	struct event_base *base;
	struct curlev *cv;
	struct upstream_observer obs;
	struct upstream **v;
	unsigned n;
	struct upstream_fetch *fetches;
	struct upstream_meta *metas;
	char ua[128];
};

/* A /metadata query in progress (fetchers/upmeta.c). */
struct upstream_meta {
	struct upstream_set *us;
	struct upstream_meta *prev, *next;
	struct meta_attempt *v;
	unsigned n, left;
	size_t max_body;
	struct event *kick; /* tells the end when nothing was asked */
	upstream_meta_fn done;
	void *arg;
};

/* fetchers/upset.c (each said there). */
void upstream_unref(struct upstream *u);
void upstream_remove(struct upstream *u);
void upstream_failed(struct upstream *u, enum upstream_err kind);
void upstream_answered(struct upstream *u);
CURL *upstream_probe_new(struct upstream *u, unsigned seconds,
    curlev_done_fn done, void *arg);
long upstream_probe_end(CURL *easy);
enum upstream_err upstream_classify(CURLcode rc);
struct curl_slist *upstream_easy_request(CURL *e, const struct upstream *u,
    const char *url, const char *xff, const char *via, uint64_t limit,
    const char *ua);

/* fetchers/upmeta.c: free m, ending its transfers, telling no one. */
void upstream_meta_free(struct upstream_meta *m);

#endif /* FETCHERS_UPSTREAM_INT_H */
