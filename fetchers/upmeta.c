/*
 * fetchers/upmeta.c: /metadata queries to the upstreams of a set
 * (upstream_metadata in fetchers/upstream.h): every enabled upstream asked
 * once, whole bodies kept for the caller.  It calls fetchers/upset.c for
 * the request head and the upstreams' records, and is called by
 * fetchers/upstream.c, whose upstream_set_free ends the queries in
 * progress (fetchers/upstream_int.h).  Everything runs on the thread of
 * the set's event base (fetchers/upstream.h).
 */
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fetchers/curlev.h"
#include "fetchers/upstream.h"
#include "fetchers/upstream_int.h"

/* ------------------------------------------------------ metadata queries */

/*
 * A /metadata query asks every enabled upstream once, without retries,
 * redirects or breaker accounting (an upstream too old to know the
 * endpoint is no failing one), each with a deadline of its own
 * (CURLOPT_TIMEOUT); one whose breaker is open is not asked and counts as
 * failed.  Bodies are kept whole, up to max_body, for the caller to parse.
 * The answers are told at once when all have ended; an event does it
 * when none was asked, so that the callback never runs inside the call.
 */
struct meta_attempt {
	struct upstream_meta *m;
	struct upstream *u;
	CURL *easy;
	struct curl_slist *hdrs;
	struct upstream_meta_answer ans;
	size_t cap;
	int ended;
};

void
upstream_meta_free(struct upstream_meta *m)
{
	unsigned i;

	for (i = 0; i < m->n; i++) {
		if (m->v[i].easy != NULL) {
			curlev_remove(m->us->cv, m->v[i].easy);
			curl_easy_cleanup(m->v[i].easy);
		}
		curl_slist_free_all(m->v[i].hdrs);
		free(m->v[i].ans.body);
		upstream_unref(m->v[i].u);
	}
	if (m->prev != NULL)
		m->prev->next = m->next;
	else
		m->us->metas = m->next;
	if (m->next != NULL)
		m->next->prev = m->prev;
	if (m->kick != NULL)
		event_free(m->kick);
	free(m->v);
	free(m);
}

/* Every attempt ended: tell, then free. */
static void
meta_end(struct upstream_meta *m)
{
	struct upstream_meta_answer *ans;
	unsigned i;

	if ((ans = calloc(m->n + 1, sizeof(*ans))) != NULL) {
		for (i = 0; i < m->n; i++)
			ans[i] = m->v[i].ans;
		m->done(m->arg, ans, m->n);
	} else {
		m->done(m->arg, NULL, m->n);
	}
	free(ans);
	upstream_meta_free(m);
}

static void
meta_kick_cb(evutil_socket_t fd, short what, void *arg)
{
	meta_end(arg);
}

static size_t
meta_write_cb(char *p, size_t size, size_t nitems, void *arg)
{
	struct meta_attempt *a = arg;
	size_t n = size * nitems, cap;
	char *nb;

	if (a->ans.len + n > a->m->max_body) {
		snprintf(a->ans.why, sizeof(a->ans.why),
		    "answer larger than %zu bytes", a->m->max_body);
		return 0;
	}
	if (a->ans.len + n + 1 > a->cap) {
		cap = a->cap == 0 ? 4096 : a->cap;
		while (cap < a->ans.len + n + 1)
			cap *= 2;
		if ((nb = realloc(a->ans.body, cap)) == NULL) {
			snprintf(a->ans.why, sizeof(a->ans.why),
			    "out of memory");
			return 0;
		}
		a->ans.body = nb;
		a->cap = cap;
	}
	memcpy(a->ans.body + a->ans.len, p, n);
	a->ans.len += n;
	a->ans.body[a->ans.len] = '\0';
	return n;
}

static void
meta_done_cb(CURL *easy, CURLcode rc, void *arg)
{
	struct meta_attempt *a = arg;
	struct upstream_set *us = a->m->us;
	long code = 0;

	curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(easy);
	a->easy = NULL;
	a->ended = 1;
	if (rc == CURLE_OK && code == 200 && a->ans.body != NULL) {
		a->ans.ok = 1;
	} else if (rc != CURLE_OK) {
		if (a->ans.why[0] == '\0')
			snprintf(a->ans.why, sizeof(a->ans.why), "%s",
			    curl_easy_strerror(rc));
		if (us->obs.error != NULL && rc != CURLE_WRITE_ERROR)
			us->obs.error(us->obs.arg, a->u->index,
			    upstream_classify(rc));
	} else {
		snprintf(a->ans.why, sizeof(a->ans.why), "HTTP %ld", code);
	}
	if (--a->m->left == 0)
		meta_end(a->m);
}

/* Start attempt a; -1 when it could not start (a->ans.why says why). */
static int
meta_start(struct meta_attempt *a, const char *path, const char *xff,
    const char *via, const char *ua, unsigned timeout)
{
	struct upstream_set *us = a->m->us;
	char url[4096];

	snprintf(url, sizeof(url), "%s%s", a->u->cu->url, path);
	if ((a->easy = curl_easy_init()) == NULL)
		goto nomem;
	a->hdrs = upstream_easy_request(a->easy, a->u, url, xff, via, 0, ua);
	curl_easy_setopt(a->easy, CURLOPT_TIMEOUT, (long)timeout);
	curl_easy_setopt(a->easy, CURLOPT_WRITEFUNCTION, meta_write_cb);
	curl_easy_setopt(a->easy, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(a->easy, CURLOPT_ACCEPT_ENCODING, "");
	if (curlev_add(us->cv, a->easy, meta_done_cb, a) == -1)
		goto nomem;
	if (us->obs.request != NULL)
		us->obs.request(us->obs.arg, a->u->index);
	return 0;
nomem:
	if (a->easy != NULL)
		curl_easy_cleanup(a->easy);
	a->easy = NULL;
	snprintf(a->ans.why, sizeof(a->ans.why), "out of memory");
	return -1;
}

struct upstream_meta *
upstream_metadata(struct upstream_set *us, const char *path, const char *xff,
    const char *via, const char *ua, unsigned timeout, size_t max_body,
    upstream_meta_fn done, void *arg)
{
	struct upstream_meta *m;
	struct meta_attempt *a;
	unsigned i;

	if ((m = calloc(1, sizeof(*m))) == NULL)
		return NULL;
	m->us = us;
	m->max_body = max_body;
	m->done = done;
	m->arg = arg;
	m->next = us->metas;
	if (us->metas != NULL)
		us->metas->prev = m;
	us->metas = m;
	if ((m->v = calloc(us->n + 1, sizeof(*m->v))) == NULL ||
	    (m->kick = event_new(us->base, -1, 0, meta_kick_cb, m)) == NULL) {
		upstream_meta_free(m);
		return NULL;
	}
	for (i = 0; i < us->n; i++) {
		if (!us->v[i]->cu->enabled)
			continue;
		a = &m->v[m->n++];
		a->m = m;
		a->u = us->v[i];
		a->u->refs++;
		a->ans.upstream = a->u->index;
		a->ans.url = a->u->cu->name;
		if (a->u->state != UPSTREAM_CLOSED)
			snprintf(a->ans.why, sizeof(a->ans.why),
			    "its breaker is open");
		else if (meta_start(a, path, xff, via, ua, timeout) == 0)
			m->left++;
	}
	if (m->left == 0)
		event_active(m->kick, 0, 0);
	return m;
}

void
upstream_metadata_cancel(struct upstream_meta *m)
{
	upstream_meta_free(m);
}
