/*
 * fetchers/ask.c: one request to a dbgmirrord, for the command line (see
 * ask.h).
 */
#include "fetchers/ask.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

struct sink {
	struct ask_answer *a;
	size_t max;
	int over; /* the answer was larger than max */
};

static size_t
ask_write_cb(char *p, size_t size, size_t n, void *arg)
{
	struct sink *s = arg;
	struct ask_answer *a = s->a;
	size_t len = size * n;
	char *b;

	if (a->len + len > s->max) {
		s->over = 1;
		return 0; /* cut: the transfer fails */
	}
	if ((b = realloc(a->body, a->len + len + 1)) == NULL)
		return 0;
	memcpy(b + a->len, p, len);
	a->len += len;
	b[a->len] = '\0';
	a->body = b;
	return len;
}

/* Retry-After in seconds (the daemon sends no HTTP-date form). */
static size_t
ask_header_cb(char *p, size_t size, size_t n, void *arg)
{
	struct ask_answer *a = ((struct sink *)arg)->a;
	size_t len = size * n;
	char v[32];

	if (len > 12 && len < 12 + sizeof(v) &&
	    strncasecmp(p, "Retry-After:", 12) == 0) {
		memcpy(v, p + 12, len - 12);
		v[len - 12] = '\0';
		a->retry_after = strtol(v, NULL, 10);
		if (a->retry_after < 0)
			a->retry_after = -1;
	}
	return len;
}

int
ask_request(const char *method, const char *url, const char *json, size_t len,
    const struct ask_opts *o, struct ask_answer *a, char *err, size_t errlen)
{
	struct curl_slist *hdrs = NULL, *h;
	struct sink s = { a, o->max_answer, 0 };
	char auth[1100];
	CURLcode rc;
	CURL *e;

	memset(a, 0, sizeof(*a));
	a->retry_after = -1;
	if ((e = curl_easy_init()) == NULL) {
		snprintf(err, errlen, "libcurl: out of memory");
		return -1;
	}
	if (o->token != NULL) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s",
		    o->token);
		if ((h = curl_slist_append(hdrs, auth)) != NULL)
			hdrs = h;
	}
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	if (json != NULL) {
		if ((h = curl_slist_append(hdrs,
			 "Content-Type: application/json")) != NULL)
			hdrs = h;
		/* The daemon reads small bodies at once: no 100-continue. */
		if ((h = curl_slist_append(hdrs, "Expect:")) != NULL)
			hdrs = h;
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, json);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)len);
	} else if (strcmp(method, "POST") == 0) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, 0L);
	}
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, ask_write_cb);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, ask_header_cb);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, &s);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	/* Proxies are for upstreams: the daemon is asked directly. */
	curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, o->connect_timeout);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, o->timeout_ms);
	curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
	if (o->ca_file != NULL)
		curl_easy_setopt(e, CURLOPT_CAINFO, o->ca_file);
	rc = curl_easy_perform(e);
	if (rc == CURLE_OK)
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &a->status);
	else if (s.over)
		snprintf(err, errlen, "%s: an answer over %zu bytes", url,
		    o->max_answer);
	else
		snprintf(err, errlen, "%s: %s", url, curl_easy_strerror(rc));
	curl_easy_cleanup(e);
	curl_slist_free_all(hdrs);
	if (rc != CURLE_OK) {
		ask_answer_free(a);
		return -1;
	}
	return 0;
}

void
ask_answer_free(struct ask_answer *a)
{
	free(a->body);
	a->body = NULL;
	a->len = 0;
}
