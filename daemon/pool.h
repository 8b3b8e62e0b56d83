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
 *
 * An inbox belongs to one event loop; a job's done callback runs on that
 * loop's thread, never on a worker.  libevent must have been told to use
 * pthreads (evthread_use_pthreads) before the loop's base was created.
 */
#ifndef DAEMON_POOL_H
#define DAEMON_POOL_H

struct event_base;
struct pool;
struct pool_inbox;

typedef void (*pool_fn)(void *arg);

/* nthreads workers, at most max_long (1 to nthreads - 1) on long jobs. */
struct pool *pool_new(unsigned nthreads, unsigned max_long);
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

#endif /* DAEMON_POOL_H */
