/*
 * daemon/pool.h: the worker pool, for everything that may block (ELF
 * parsing, file reads, LMDB writes, directory walks), with completions
 * delivered back to the event loop that asked.
 *
 * Work comes in two urgencies.  Short jobs are what a client is waiting
 * on right now: verify and publish a fill, stat and open a file, cut a
 * section.  Long jobs may take seconds to minutes: decompression passes
 * over packages, scans, cache maintenance, purges.  Short jobs are taken
 * first, and long jobs never occupy more than max_long of the workers, so
 * a client one byte short of a verified file never waits behind a scan.
 * Background jobs are what no client waits for (publishing the members a
 * pass extracted unasked, indexing a downloaded package): one worker of
 * their own runs them, one at a time, at idle priority for the CPU
 * (SCHED_IDLE) and the disk (the idle I/O class), so they take neither
 * from the work clients wait on.
 *
 * An inbox belongs to one event loop; a job's done callback runs on that
 * loop's thread, never on a worker.  libevent must have been told to use
 * pthreads (evthread_use_pthreads) before the loop's base was created.
 */
#ifndef DAEMON_POOL_H
#define DAEMON_POOL_H

#include <stddef.h>

struct event_base;
struct pool;
struct pool_inbox;

typedef void (*pool_fn)(void *arg);

/*
 * nthreads workers, at most max_long (1 to nthreads - 1) on long jobs,
 * and the background worker.
 */
struct pool *pool_new(unsigned nthreads, unsigned max_long);
/*
 * The same, each worker running init(arg) when it starts, before any job
 * (daemon/sandbox.c fences the workers in there).
 */
struct pool *pool_new_init(unsigned nthreads, unsigned max_long, pool_fn init,
    void *arg);
/* Run every queued job, then stop and join the workers. */
void pool_free(struct pool *pool);

struct pool_inbox *pool_inbox_new(struct event_base *base);
/* Run the done callbacks still waiting, then free the inbox. */
void pool_inbox_free(struct pool_inbox *inbox);

/*
 * Run work(arg) on a worker, then done(arg) on inbox's loop when both are
 * non-NULL.  Returns -1 when the job cannot be queued (out of memory, pool
 * stopping); then neither callback runs.
 */
int pool_submit(struct pool *pool, pool_fn work, struct pool_inbox *inbox,
    pool_fn done, void *arg);
/* The same for a long job. */
int pool_submit_long(struct pool *pool, pool_fn work, struct pool_inbox *inbox,
    pool_fn done, void *arg);
/*
 * The same for a background job: nothing a client waits for may depend on
 * it, since it runs only when the machine has nothing else to do.
 */
int pool_submit_background(struct pool *pool, pool_fn work,
    struct pool_inbox *inbox, pool_fn done, void *arg);

/*
 * Work shared out: a job (a scan) splits a loop over n items among itself
 * and helper long jobs, so that one long job reads several files at once
 * and the helpers hold long places like any long job.  The caller does its
 * share, and waits only for the helpers that have started; a helper still
 * queued when the items run out is not waited for.  So a share completes
 * even when the caller holds the last long place (max_long 1): the caller
 * then does all the work itself.
 *
 * A queued helper outlives its run: it joins the next run of the same
 * share, or ends at once when it starts with no run open, and it keeps the
 * share's memory alive until then.  One thread runs a share at a time.
 */
struct pool_share;
typedef void (*pool_item_fn)(void *arg, size_t i);

/* NULL when out of memory; pool NULL: every run is done by the caller. */
struct pool_share *pool_share_new(struct pool *pool);
/*
 * Call fn(arg, i) once for each i in [0, n), on this thread and on up to
 * helpers long jobs of sh's pool (fewer when helpers of an earlier run
 * are still queued); return when every call has returned.  sh NULL: all
 * on this thread.
 */
void pool_share_run(struct pool_share *sh, unsigned helpers, pool_item_fn fn,
    void *arg, size_t n);
/* The caller lets go; queued helpers free sh when they end. */
void pool_share_free(struct pool_share *sh);

#endif /* DAEMON_POOL_H */
