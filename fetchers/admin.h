/*
 * fetchers/admin.h: one request to a dbgmirrord's admin endpoints, for
 * the command line (dbgmirror asking the running daemon for its settings,
 * or for a rescan).
 *
 * Not for the daemon: a blocking libcurl easy transfer with short
 * deadlines, its answer kept in memory (64 KiB at most).
 */
#ifndef FETCHERS_ADMIN_H
#define FETCHERS_ADMIN_H

#include <stddef.h>

struct admin_answer {
	long status; /* the HTTP status; 0 when there was no answer */
	char *body; /* malloc'd, NUL-terminated; NULL when none */
	size_t len;
};

/*
 * method ("GET" or "POST") url, with "Authorization: Bearer token" when
 * token is not NULL, trusting ca_file (NULL: the system store) besides.
 * 0 with *a (free it with admin_answer_free), whatever the status; -1
 * with err when no answer came (nothing listens, a deadline passed).
 */
int admin_request(const char *method, const char *url, const char *token,
    const char *ca_file, struct admin_answer *a, char *err, size_t errlen);
void admin_answer_free(struct admin_answer *a);

#endif /* FETCHERS_ADMIN_H */
