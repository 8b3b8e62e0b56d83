/*
 * fetchers/repofetch.h: GET a file of a remote repository into a file.
 *
 * For repository metadata and packages (sources/repo.c): one transfer per
 * call on the loop of a curlev, the body written to a descriptor as it
 * arrives, with the conditional headers of the copy already held
 * (If-None-Match, If-Modified-Since) and deadlines: connect, a stall (no
 * byte for stall seconds) and the whole transfer.  Redirects are followed
 * as the options' policy says (fetchers/redirect.h, repo-redirects), as
 * upstreams' are.  Runs on the curlev's loop thread; done is called
 * there, once.
 */
#ifndef FETCHERS_REPOFETCH_H
#define FETCHERS_REPOFETCH_H

#include <stddef.h>
#include <stdint.h>

#include "fetchers/redirect.h"

struct curlev;
struct repofetch;

struct repofetch_opts {
	const char *proxy; /* NULL: the environment's; "": none */
	const char *ca_file; /* NULL: the system store only */
	const char *user_agent;
	unsigned connect_timeout, stall_timeout, timeout; /* seconds */
	uint64_t max_size; /* bytes of body accepted */
	struct redirect_policy redirects; /* its listeners borrowed */
};

/* How a transfer ended. */
struct repofetch_result {
	long status; /* HTTP status; 0: no answer */
	uint64_t bytes; /* body bytes written */
	/* NULL, or why it failed (no answer, a write, a redirect refused) */
	const char *error;
	int timeout; /* it failed for a deadline */
	char etag[256]; /* of the answer; "" when none */
	int64_t last_modified; /* of the answer; -1 when none */
};

typedef void (*repofetch_done_fn)(void *arg, const struct repofetch_result *r);

struct event_base;

/* The curlev of base's loop for repository transfers; NULL when out of
 * memory.  Freeing it ends its transfers without their done callbacks. */
struct curlev *repofetch_loop_new(struct event_base *base);
void repofetch_loop_free(struct curlev *cv);

/*
 * GET url into fd (written with write(2) from its current offset); etag
 * and ims (-1: none) make it conditional.  o (its policy read at each
 * redirect) must outlive the transfer.  progress (may be NULL) is told
 * the bytes written so far after each piece.  NULL when it cannot start.
 */
struct repofetch *repofetch_get(struct curlev *cv,
    const struct repofetch_opts *o, const char *url, int fd, const char *etag,
    int64_t ims, void (*progress)(void *arg, uint64_t bytes),
    repofetch_done_fn done, void *arg);
/* Stop a transfer before it ended; done is not called. */
void repofetch_cancel(struct repofetch *rf);

#endif /* FETCHERS_REPOFETCH_H */
