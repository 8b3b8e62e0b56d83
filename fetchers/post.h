/*
 * fetchers/post.h: one JSON body POSTed to a dbgmirrord, for dbgmirror
 * symbolicate (POST /symbolicate).
 *
 * For the command line, not the daemon: a blocking libcurl easy transfer,
 * its answer kept in memory up to a cap the caller sets, with the
 * Retry-After the daemon sent.  One thread.
 */
#ifndef FETCHERS_POST_H
#define FETCHERS_POST_H

#include <stddef.h>

struct post_opts {
	const char *token; /* "Authorization: Bearer TOKEN"; NULL: none */
	const char *ca_file; /* trusted besides the system store; NULL */
	long timeout_ms; /* the whole transfer */
	size_t max_answer; /* bytes of answer kept; more fails the transfer */
};

struct post_answer {
	long status; /* the HTTP status */
	char *body; /* malloc'd, NUL-terminated; NULL when empty */
	size_t len;
	long retry_after; /* seconds (Retry-After: N); -1 when not sent */
};

/*
 * POST the len bytes of body (Content-Type: application/json) to url.  0
 * with *a (free it with post_answer_free), whatever the status; -1 with
 * err when no whole answer came (nothing listens, the deadline passed, the
 * answer was over max_answer).
 */
int post_json(const char *url, const char *body, size_t len,
    const struct post_opts *o, struct post_answer *a, char *err, size_t errlen);
void post_answer_free(struct post_answer *a);

#endif /* FETCHERS_POST_H */
