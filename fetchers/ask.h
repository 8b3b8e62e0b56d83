/*
 * fetchers/ask.h: one request to a dbgmirrord, for the command line:
 * dbgmirror asking the running daemon for its settings or a rescan
 * (/admin/...), and dbgmirror symbolicate's JSON bodies (POST
 * /symbolicate).
 *
 * Not for the daemon: a blocking libcurl easy transfer, never through a
 * proxy, its answer kept in memory up to a cap the caller sets, with the
 * Retry-After the daemon sent.  One thread.
 */
#ifndef FETCHERS_ASK_H
#define FETCHERS_ASK_H

#include <stddef.h>

struct ask_opts {
	const char *token; /* "Authorization: Bearer TOKEN"; NULL: none */
	const char *ca_file; /* trusted besides the system store; NULL */
	long connect_timeout; /* seconds */
	long timeout_ms; /* the whole transfer */
	size_t max_answer; /* bytes of answer kept; more fails the transfer */
};

struct ask_answer {
	long status; /* the HTTP status; 0 when there was no answer */
	char *body; /* malloc'd, NUL-terminated; NULL when empty */
	size_t len;
	long retry_after; /* seconds (Retry-After: N); -1 when not sent */
};

/*
 * method url, with json (len bytes, Content-Type: application/json) as
 * its body when not NULL; the answer in *a, freed by ask_answer_free
 * (also after a failure).  0, or -1 with why in err when no answer came.
 */
int ask_request(const char *method, const char *url, const char *json,
    size_t len, const struct ask_opts *o, struct ask_answer *a, char *err,
    size_t errlen);
void ask_answer_free(struct ask_answer *a);

#endif /* FETCHERS_ASK_H */
