/*
 * fetchers/batch.h: many requests to one dbgmirrord, a few at a time.
 *
 * For the command line (dbgmirror prefetch), not the daemon: a libcurl
 * multi handle driven by its own poll loop, at most jobs transfers at
 * once.  Each request is a GET whose body is read to its end and thrown
 * away, so that a fill the request starts is complete (verified and
 * cached) when the request ends; an answer that says X-Cache: HIT is cut
 * after its head, as its bytes are already where they are needed.
 * Single-threaded; callbacks run inside batch_run().
 */
#ifndef FETCHERS_BATCH_H
#define FETCHERS_BATCH_H

#include <stddef.h>
#include <stdint.h>

struct batch;

/* How one request ended. */
struct batch_result {
	long status; /* HTTP status; 0 when there was no answer */
	int hit; /* the answer said X-Cache: HIT */
	uint64_t bytes; /* body bytes read */
	const char *error; /* no answer, or a broken one: why; else NULL */
};

typedef void (*batch_done_fn)(void *arg, const struct batch_result *r);

/* NULL with err when libcurl cannot be set up. */
struct batch *batch_new(unsigned jobs, char *err, size_t errlen);
void batch_free(struct batch *b);

/* Queue a GET of url; done(arg, result) is called once it ended.  -1: out of
 * memory. */
int batch_add(struct batch *b, const char *url, batch_done_fn done, void *arg);

/*
 * Run every queued request to its end; tick(arg) is called at least once
 * a second and after each request ended (a progress display).  -1 with err
 * when libcurl failed as a whole.
 */
int batch_run(struct batch *b, void (*tick)(void *arg), void *arg, char *err,
    size_t errlen);

#endif /* FETCHERS_BATCH_H */
