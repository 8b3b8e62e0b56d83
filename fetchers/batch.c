/*
 * fetchers/batch.c: many GETs to one server, at most jobs at once.
 *
 * Requests wait in a queue (an array, in order) and start as others end.
 * The head of each answer is watched for X-Cache: on a 200 that says HIT
 * the body is not wanted and the write callback cuts the transfer, which
 * then counts as a whole answer.  Everything runs in batch_run() on the
 * caller's thread.
 */
#include "fetchers/batch.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "autoconf.h"

/* Seconds to a connection to the daemon. */
#define CONNECT_TIMEOUT 10

struct batch_item {
	struct batch *b;
	char *url;
	batch_done_fn done;
	void *arg;
	CURL *easy;
	long status; /* of the head being read */
	int hit;
	int cut; /* we ended it after a HIT's head */
	uint64_t bytes;
	char errbuf[CURL_ERROR_SIZE];
};

struct batch {
	CURLM *multi;
	unsigned jobs;
	struct batch_item **q; /* queued and running, in order */
	size_t n, cap;
	size_t next; /* the first not started */
	unsigned running;
};

struct batch *
batch_new(unsigned jobs, char *err, size_t errlen)
{
	struct batch *b;

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(err, errlen, "libcurl cannot be set up");
		return NULL;
	}
	if ((b = calloc(1, sizeof(*b))) == NULL ||
	    (b->multi = curl_multi_init()) == NULL) {
		free(b);
		curl_global_cleanup();
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	b->jobs = jobs > 0 ? jobs : 1;
	return b;
}

static void
item_free(struct batch_item *it)
{
	if (it->easy != NULL) {
		curl_multi_remove_handle(it->b->multi, it->easy);
		curl_easy_cleanup(it->easy);
	}
	free(it->url);
	free(it);
}

void
batch_free(struct batch *b)
{
	size_t i;

	if (b == NULL)
		return;
	for (i = 0; i < b->n; i++)
		if (b->q[i] != NULL)
			item_free(b->q[i]);
	free(b->q);
	curl_multi_cleanup(b->multi);
	free(b);
	curl_global_cleanup();
}

int
batch_add(struct batch *b, const char *url, batch_done_fn done, void *arg)
{
	struct batch_item *it, **q;
	size_t cap;

	if (b->n == b->cap) {
		cap = b->cap == 0 ? 64 : 2 * b->cap;
		if ((q = realloc(b->q, cap * sizeof(*q))) == NULL)
			return -1;
		b->q = q;
		b->cap = cap;
	}
	if ((it = calloc(1, sizeof(*it))) == NULL)
		return -1;
	if ((it->url = strdup(url)) == NULL) {
		free(it);
		return -1;
	}
	it->b = b;
	it->done = done;
	it->arg = arg;
	b->q[b->n++] = it;
	return 0;
}

/* Each header line: the status line starts a head (after a 100 or a
 * redirect there may be several); X-Cache says whether it was a hit. */
static size_t
header_cb(char *buf, size_t size, size_t nitems, void *arg)
{
	struct batch_item *it = arg;
	size_t n = size * nitems, v;

	if (n >= 5 && strncmp(buf, "HTTP/", 5) == 0) {
		curl_easy_getinfo(it->easy, CURLINFO_RESPONSE_CODE,
		    &it->status);
		it->hit = 0;
	} else if (n > 8 && strncasecmp(buf, "X-Cache:", 8) == 0) {
		for (v = 8; v < n && (buf[v] == ' ' || buf[v] == '\t'); v++)
			;
		it->hit = n - v >= 3 && strncmp(buf + v, "HIT", 3) == 0 &&
		    (n - v == 3 || buf[v + 3] == '\r' || buf[v + 3] == '\n');
	}
	return n;
}

static size_t
write_cb(char *buf, size_t size, size_t nitems, void *arg)
{
	struct batch_item *it = arg;

	(void)buf;
	if (it->hit && it->status == 200) {
		it->cut = 1;
		return 0; /* a hit: the bytes are not wanted here */
	}
	it->bytes += size * nitems;
	return size * nitems;
}

static int
item_start(struct batch_item *it)
{
	CURL *e;

	if ((e = it->easy = curl_easy_init()) == NULL)
		return -1;
	curl_easy_setopt(e, CURLOPT_URL, it->url);
	curl_easy_setopt(e, CURLOPT_PRIVATE, it);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_USERAGENT,
	    PACKAGE_NAME "-prefetch/" PACKAGE_VERSION);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, (long)CONNECT_TIMEOUT);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, it);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, it);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, it->errbuf);
	if (curl_multi_add_handle(it->b->multi, e) != CURLM_OK)
		return -1;
	it->b->running++;
	return 0;
}

/* Tell the caller how it ended, and forget it. */
static void
item_end(struct batch_item *it, CURLcode rc)
{
	struct batch_result r;

	memset(&r, 0, sizeof(r));
	r.status = it->status;
	r.hit = it->hit;
	r.bytes = it->bytes;
	if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && it->cut))
		r.error =
		    it->errbuf[0] != '\0' ? it->errbuf : curl_easy_strerror(rc);
	it->done(it->arg, &r);
}

int
batch_run(struct batch *b, void (*tick)(void *arg), void *arg, char *err,
    size_t errlen)
{
	struct CURLMsg *m;
	struct batch_item *it;
	size_t i;
	int still, left;
	CURLMcode mc;

	for (;;) {
		while (b->running < b->jobs && b->next < b->n) {
			it = b->q[b->next++];
			if (item_start(it) == -1) {
				snprintf(it->errbuf, sizeof(it->errbuf),
				    "out of memory");
				item_end(it, CURLE_OUT_OF_MEMORY);
			}
		}
		if (b->running == 0)
			break;
		if ((mc = curl_multi_perform(b->multi, &still)) != CURLM_OK ||
		    (mc = curl_multi_poll(b->multi, NULL, 0, 1000, NULL)) !=
			CURLM_OK) {
			snprintf(err, errlen, "libcurl: %s",
			    curl_multi_strerror(mc));
			return -1;
		}
		while ((m = curl_multi_info_read(b->multi, &left)) != NULL) {
			if (m->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE,
			    (char **)&it);
			b->running--;
			item_end(it, m->data.result);
			curl_multi_remove_handle(b->multi, it->easy);
			curl_easy_cleanup(it->easy);
			it->easy = NULL;
		}
		if (tick != NULL)
			tick(arg);
	}
	for (i = 0; i < b->n; i++) {
		item_free(b->q[i]);
		b->q[i] = NULL;
	}
	b->n = b->next = 0;
	return 0;
}
