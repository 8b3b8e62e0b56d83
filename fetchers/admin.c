/*
 * fetchers/admin.c: one request to a dbgmirrord's admin endpoints (see
 * admin.h).
 */
#include "fetchers/admin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

/* The largest answer kept: admin answers are a few hundred bytes. */
#define ANSWER_MAX (64 * 1024)

static size_t
admin_write_cb(char *p, size_t size, size_t n, void *arg)
{
	struct admin_answer *a = arg;
	size_t len = size * n;
	char *b;

	if (a->len + len > ANSWER_MAX)
		return 0; /* cut: the transfer fails */
	if ((b = realloc(a->body, a->len + len + 1)) == NULL)
		return 0;
	memcpy(b + a->len, p, len);
	a->len += len;
	b[a->len] = '\0';
	a->body = b;
	return len;
}

int
admin_request(const char *method, const char *url, const char *token,
    const char *ca_file, struct admin_answer *a, char *err, size_t errlen)
{
	struct curl_slist *hdrs = NULL, *h;
	char auth[1100];
	CURLcode rc;
	CURL *e;

	memset(a, 0, sizeof(*a));
	if ((e = curl_easy_init()) == NULL) {
		snprintf(err, errlen, "libcurl: out of memory");
		return -1;
	}
	if (token != NULL) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
		if ((h = curl_slist_append(hdrs, auth)) != NULL)
			hdrs = h;
	}
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	if (strcmp(method, "POST") == 0)
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, 0L);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, admin_write_cb);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	/* Proxies are for upstreams: the daemon is asked directly. */
	curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, 2L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, 10L);
	if (ca_file != NULL)
		curl_easy_setopt(e, CURLOPT_CAINFO, ca_file);
	rc = curl_easy_perform(e);
	if (rc == CURLE_OK)
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &a->status);
	else
		snprintf(err, errlen, "%s: %s", url, curl_easy_strerror(rc));
	curl_easy_cleanup(e);
	curl_slist_free_all(hdrs);
	if (rc != CURLE_OK) {
		admin_answer_free(a);
		return -1;
	}
	return 0;
}

void
admin_answer_free(struct admin_answer *a)
{
	free(a->body);
	a->body = NULL;
	a->len = 0;
}
