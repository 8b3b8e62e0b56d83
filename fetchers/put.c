/*
 * fetchers/put.c: one file PUT to a dbgmirrord (see put.h).
 */
#include "fetchers/put.h"

#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>

/* The answer's body, kept up to its first line. */
struct answer {
	char *msg;
	size_t len, cap;
};

static size_t
answer_write_cb(char *p, size_t size, size_t n, void *arg)
{
	struct answer *a = arg;
	size_t i;

	for (i = 0; i < size * n && a->len + 1 < a->cap; i++) {
		if (p[i] == '\n')
			a->cap = a->len + 1; /* the first line is enough */
		else
			a->msg[a->len++] = p[i];
	}
	a->msg[a->len] = '\0';
	return size * n;
}

int
put_file(const char *url, const char *path, const struct put_opts *o,
    long *status, char *msg, size_t msglen)
{
	struct curl_slist *hdrs = NULL, *h;
	struct answer a = { msg, 0, msglen };
	char auth[1100];
	struct stat st;
	CURLcode rc;
	CURL *e;
	FILE *fp;

	msg[0] = '\0';
	if ((fp = fopen(path, "rbe")) == NULL || fstat(fileno(fp), &st) == -1) {
		snprintf(msg, msglen, "%s: %s", path, strerror(errno));
		if (fp != NULL)
			fclose(fp);
		return -1;
	}
	if ((e = curl_easy_init()) == NULL) {
		fclose(fp);
		snprintf(msg, msglen, "libcurl: out of memory");
		return -1;
	}
	if (o->token != NULL) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s",
		    o->token);
		if ((h = curl_slist_append(hdrs, auth)) != NULL)
			hdrs = h;
	}
	/* The server answers at once when it refuses: no 100-continue wait. */
	if ((h = curl_slist_append(hdrs, "Expect:")) != NULL)
		hdrs = h;
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
	curl_easy_setopt(e, CURLOPT_READDATA, fp);
	curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)st.st_size);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, answer_write_cb);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &a);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, 10L);
	if (o->ca_file != NULL)
		curl_easy_setopt(e, CURLOPT_CAINFO, o->ca_file);
	rc = curl_easy_perform(e);
	if (rc == CURLE_OK) {
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, status);
	} else {
		snprintf(msg, msglen, "%s: %s", url, curl_easy_strerror(rc));
	}
	curl_easy_cleanup(e);
	curl_slist_free_all(hdrs);
	fclose(fp);
	return rc == CURLE_OK ? 0 : -1;
}
