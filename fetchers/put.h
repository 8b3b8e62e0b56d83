/*
 * fetchers/put.h: one file PUT to a dbgmirrord, for dbgmirror upload.
 *
 * For the command line, not the daemon: a blocking libcurl easy transfer
 * that streams the file from disk, with "Authorization: Bearer TOKEN".
 */
#ifndef FETCHERS_PUT_H
#define FETCHERS_PUT_H

#include <stddef.h>

struct put_opts {
	const char *token; /* NULL: no Authorization */
	const char *ca_file; /* trusted besides the system store; NULL */
};

/*
 * PUT the file at path to url.  0 with *status (the HTTP status) and the
 * answer's first line in msg; -1 with msg saying why there was no answer.
 */
int put_file(const char *url, const char *path, const struct put_opts *o,
    long *status, char *msg, size_t msglen);

#endif /* FETCHERS_PUT_H */
