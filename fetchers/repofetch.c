/*
 * fetchers/repofetch.c: one GET of a repository file into a descriptor,
 * on a curlev loop (see fetchers/repofetch.h).  The head of each answer
 * (a redirect's too) is read line by line with headers_line, which says
 * when a line is the Location of a 3xx; that one goes to the redirect
 * policy before libcurl follows it.
 */
#include "fetchers/repofetch.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "fetchers/curlev.h"
#include "fetchers/headers.h"

struct repofetch {
	struct curlev *cv;
	CURL *easy;
	struct curl_slist *hdrs;
	int fd;
	uint64_t max_size;
	char *url; /* the first asked: a redirect's origin */
	const struct redirect_policy *redirects;
	struct headers head; /* of the answer arriving */
	int write_failed;
	void (*progress)(void *arg, uint64_t bytes);
	repofetch_done_fn done;
	void *arg;
	struct repofetch_result r;
	char errbuf[CURL_ERROR_SIZE];
	char why[300]; /* a redirect refused */
};

static size_t
write_cb(char *p, size_t size, size_t n, void *arg)
{
	struct repofetch *rf = arg;
	size_t len = size * n, off = 0;
	ssize_t w;
	long status = 0;

	curl_easy_getinfo(rf->easy, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200)
		return len; /* an error page: not the file */
	if (rf->r.bytes + len > rf->max_size) {
		rf->write_failed = 1;
		rf->r.error = "larger than allowed";
		return 0;
	}
	while (off < len) {
		w = write(rf->fd, p + off, len - off);
		if (w == -1 && errno == EINTR)
			continue;
		if (w <= 0) {
			rf->write_failed = 1;
			rf->r.error = "cannot write the download";
			return 0;
		}
		off += (size_t)w;
	}
	rf->r.bytes += len;
	if (rf->progress != NULL)
		rf->progress(rf->arg, rf->r.bytes);
	return len;
}

static size_t
header_cb(char *p, size_t size, size_t n, void *arg)
{
	struct repofetch *rf = arg;
	size_t len = size * n, vl;
	const char *v;

	switch (headers_line(&rf->head, p, len, &v, &vl)) {
	case HEADERS_STATUS:
		/* A new answer (after a redirect): its own ETag or none. */
		rf->r.etag[0] = '\0';
		return len;
	case HEADERS_LOCATION:
		if (!redirect_allowed(rf->redirects, rf->easy, rf->url, v, vl,
			"repo-redirects", rf->why, sizeof(rf->why))) {
			rf->r.error = rf->why;
			return 0; /* libcurl ends the transfer */
		}
		return len;
	case HEADERS_FIELD:
		break;
	}
	if (len > 5 && strncasecmp(p, "ETag:", 5) == 0) {
		v = p + 5;
		while (*v == ' ')
			v++;
		vl = len - (size_t)(v - p);
		while (vl > 0 && (v[vl - 1] == '\r' || v[vl - 1] == '\n'))
			vl--;
		if (vl < sizeof(rf->r.etag)) {
			memcpy(rf->r.etag, v, vl);
			rf->r.etag[vl] = '\0';
		}
	}
	return len;
}

static void
done_cb(CURL *easy, CURLcode rc, void *arg)
{
	struct repofetch *rf = arg;
	curl_off_t t = -1;

	curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &rf->r.status);
	curl_easy_getinfo(easy, CURLINFO_FILETIME_T, &t);
	rf->r.last_modified = t;
	if (rc != CURLE_OK && rf->r.error == NULL) {
		rf->r.error =
		    rf->errbuf[0] != '\0' ? rf->errbuf : curl_easy_strerror(rc);
		rf->r.timeout = rc == CURLE_OPERATION_TIMEDOUT;
	}
	rf->done(rf->arg, &rf->r);
	repofetch_cancel(rf);
}

struct repofetch *
repofetch_get(struct curlev *cv, const struct repofetch_opts *o,
    const char *url, int fd, const char *etag, int64_t ims,
    void (*progress)(void *arg, uint64_t bytes), repofetch_done_fn done,
    void *arg)
{
	struct repofetch *rf;
	char line[300];

	if ((rf = calloc(1, sizeof(*rf))) == NULL)
		return NULL;
	if ((rf->url = strdup(url)) == NULL ||
	    (rf->easy = curl_easy_init()) == NULL) {
		free(rf->url);
		free(rf);
		return NULL;
	}
	rf->redirects = &o->redirects;
	headers_reset(&rf->head);
	rf->cv = cv;
	rf->fd = fd;
	rf->max_size = o->max_size;
	rf->progress = progress;
	rf->done = done;
	rf->arg = arg;
	rf->r.last_modified = -1;
	if (etag != NULL && etag[0] != '\0' &&
	    snprintf(line, sizeof(line), "If-None-Match: %s", etag) <
		(int)sizeof(line))
		rf->hdrs = curl_slist_append(rf->hdrs, line);
	curl_easy_setopt(rf->easy, CURLOPT_URL, url);
	curl_easy_setopt(rf->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(rf->easy, CURLOPT_PROTOCOLS_STR, "http,https");
	redirect_setup(rf->easy);
	curl_easy_setopt(rf->easy, CURLOPT_USERAGENT, o->user_agent);
	curl_easy_setopt(rf->easy, CURLOPT_CONNECTTIMEOUT,
	    (long)o->connect_timeout);
	curl_easy_setopt(rf->easy, CURLOPT_TIMEOUT, (long)o->timeout);
	curl_easy_setopt(rf->easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(rf->easy, CURLOPT_LOW_SPEED_TIME,
	    (long)o->stall_timeout);
	if (o->proxy != NULL)
		curl_easy_setopt(rf->easy, CURLOPT_PROXY, o->proxy);
	if (o->ca_file != NULL)
		curl_easy_setopt(rf->easy, CURLOPT_CAINFO, o->ca_file);
	if (rf->hdrs != NULL)
		curl_easy_setopt(rf->easy, CURLOPT_HTTPHEADER, rf->hdrs);
	if (ims >= 0) {
		curl_easy_setopt(rf->easy, CURLOPT_TIMECONDITION,
		    (long)CURL_TIMECOND_IFMODSINCE);
		curl_easy_setopt(rf->easy, CURLOPT_TIMEVALUE_LARGE,
		    (curl_off_t)ims);
	}
	curl_easy_setopt(rf->easy, CURLOPT_FILETIME, 1L);
	curl_easy_setopt(rf->easy, CURLOPT_ERRORBUFFER, rf->errbuf);
	curl_easy_setopt(rf->easy, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(rf->easy, CURLOPT_WRITEDATA, rf);
	curl_easy_setopt(rf->easy, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(rf->easy, CURLOPT_HEADERDATA, rf);
	if (curlev_add(cv, rf->easy, done_cb, rf) == -1) {
		curl_slist_free_all(rf->hdrs);
		curl_easy_cleanup(rf->easy);
		free(rf->url);
		free(rf);
		return NULL;
	}
	return rf;
}

void
repofetch_cancel(struct repofetch *rf)
{
	if (rf == NULL)
		return;
	curlev_remove(rf->cv, rf->easy);
	curl_easy_cleanup(rf->easy);
	curl_slist_free_all(rf->hdrs);
	free(rf->url);
	free(rf);
}

struct curlev *
repofetch_loop_new(struct event_base *base)
{
	return curlev_new(base);
}

void
repofetch_loop_free(struct curlev *cv)
{
	curlev_free(cv);
}
