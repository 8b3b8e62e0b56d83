/*
 * fetchers/redirect.c: the redirect policy of every fetch (redirect.h).
 *
 * A relative Location resolves against the URL that answered it (what
 * libcurl would follow), then its scheme, host and port are compared
 * with those of the transfer's first URL and with this server's
 * listeners through libcurl's URL parser, which is the one that will
 * connect: no second opinion on what a URL means.
 */
#include "fetchers/redirect.h"

#include <curl/curl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

void
redirect_setup(void *easy)
{
	CURL *e = easy;

	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(e, CURLOPT_MAXREDIRS, (long)REDIRECT_MAX);
	curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
}

/* 1 when host names this machine: a loopback or wildcard address. */
static int
host_is_local(const char *host)
{
	return strcasecmp(host, "localhost") == 0 ||
	    strncmp(host, "127.", 4) == 0 || strcmp(host, "[::1]") == 0 ||
	    strcmp(host, "0.0.0.0") == 0 || strcmp(host, "[::]") == 0 ||
	    strcmp(host, "[::ffff:127.0.0.1]") == 0;
}

/* 1 when host:port is one of this server's own listeners. */
static int
is_own_listener(const struct redirect_policy *p, const char *host,
    const char *port)
{
	char hp[300];
	size_t i;

	snprintf(hp, sizeof(hp), "%s:%s", host, port);
	for (i = 0; i < p->nlisteners; i++) {
		const char *l = p->listeners[i], *lp = strrchr(l, ':');

		if (lp == NULL || strcmp(lp + 1, port) != 0)
			continue;
		if (host_is_local(host) || strcasecmp(l, hp) == 0 ||
		    strncmp(l, "0.0.0.0:", 8) == 0 ||
		    strncmp(l, "[::]:", 5) == 0)
			return 1;
	}
	return 0;
}

/* The scheme, host and port of h (parts freed by the caller). */
static int
url_parts(CURLU *h, char **scheme, char **host, char **port)
{
	*scheme = *host = *port = NULL;
	if (curl_url_get(h, CURLUPART_SCHEME, scheme, 0) != CURLUE_OK ||
	    curl_url_get(h, CURLUPART_HOST, host, 0) != CURLUE_OK ||
	    curl_url_get(h, CURLUPART_PORT, port, CURLU_DEFAULT_PORT) !=
		CURLUE_OK)
		return -1;
	return 0;
}

int
redirect_allowed(const struct redirect_policy *p, void *easy,
    const char *origin, const char *v, size_t n, const char *option, char *why,
    size_t whylen)
{
	CURL *e = easy;
	char loc[2048], *cur = NULL;
	char *s1 = NULL, *h1 = NULL, *p1 = NULL, *s2 = NULL, *h2 = NULL,
	     *p2 = NULL;
	CURLU *to = NULL, *from = NULL;
	int ok = 0, whole;

	while (n > 0 && (*v == ' ' || *v == '\t'))
		v++, n--;
	while (
	    n > 0 && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' '))
		n--;
	/* One too long to judge whole is refused. */
	whole = n < sizeof(loc);
	if (!whole)
		n = sizeof(loc) - 1;
	memcpy(loc, v, n);
	loc[n] = '\0';
	if (n > 0 && whole && p->mode != REDIRECT_NONE) {
		curl_easy_getinfo(e, CURLINFO_EFFECTIVE_URL, &cur);
		to = curl_url();
		from = curl_url();
		/* A relative Location resolves against the URL it answered. */
		if (to != NULL && from != NULL && cur != NULL &&
		    curl_url_set(to, CURLUPART_URL, cur, 0) == CURLUE_OK &&
		    curl_url_set(to, CURLUPART_URL, loc, 0) == CURLUE_OK &&
		    curl_url_set(from, CURLUPART_URL, origin, 0) == CURLUE_OK &&
		    url_parts(to, &s1, &h1, &p1) == 0 &&
		    url_parts(from, &s2, &h2, &p2) == 0)
			ok = !is_own_listener(p, h1, p1) &&
			    (p->mode == REDIRECT_ANY ||
				(strcasecmp(s1, s2) == 0 &&
				    strcasecmp(h1, h2) == 0 &&
				    strcmp(p1, p2) == 0));
		curl_free(s1);
		curl_free(h1);
		curl_free(p1);
		curl_free(s2);
		curl_free(h2);
		curl_free(p2);
		curl_url_cleanup(to);
		curl_url_cleanup(from);
	}
	if (!ok)
		snprintf(why, whylen, "redirect to %.80s refused (%s)", loc,
		    option);
	return ok;
}
