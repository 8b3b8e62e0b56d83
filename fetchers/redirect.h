/*
 * fetchers/redirect.h: which redirects a transfer follows.
 *
 * One policy for every fetch of this server that follows a Location:
 * upstream debuginfods (fetchers/upstream.c, upstream-redirects) and
 * remote repositories (fetchers/repofetch.c, repo-redirects).  A redirect
 * is judged as its answer's head arrives, before libcurl follows it:
 * none, only to the scheme, host and port the transfer started at
 * (same-host, the default), or any; and never to one of this server's
 * own listeners, whatever the mode, so that a peer cannot make the mirror
 * call its own admin endpoints.  libcurl follows at most REDIRECT_MAX of
 * them, over http and https only.
 *
 * Plain functions of their arguments; any thread (the easy handle's).
 * No libcurl header here: upstream.h, which the rest of the server
 * includes, takes the mode from this file.
 */
#ifndef FETCHERS_REDIRECT_H
#define FETCHERS_REDIRECT_H

#include <stddef.h>

/* Redirects libcurl follows at most in one transfer. */
#define REDIRECT_MAX 6

enum redirect_mode {
	REDIRECT_NONE,
	REDIRECT_SAME_HOST, /* same scheme, host and port */
	REDIRECT_ANY,
};

struct redirect_policy {
	enum redirect_mode mode;
	/* This server's listeners, "host:port", borrowed. */
	const char *const *listeners;
	size_t nlisteners;
};

/* Let easy (a CURL *) follow redirects: REDIRECT_MAX, http and https. */
void redirect_setup(void *easy);

/*
 * May easy (a CURL *), a transfer that started at origin (its URL),
 * follow the Location value v (n bytes, as the header line has it) of
 * the answer arriving?  1, or 0 with why ("redirect to URL refused
 * (option)", option naming the setting that refused it).
 */
int redirect_allowed(const struct redirect_policy *p, void *easy,
    const char *origin, const char *v, size_t n, const char *option, char *why,
    size_t whylen);

#endif /* FETCHERS_REDIRECT_H */
