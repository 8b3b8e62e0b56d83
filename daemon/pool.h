/*
 * daemon/pool.h: the worker pool, for everything that may block (ELF
 * parsing, file reads, LMDB writes, directory walks), with completions
 * delivered back to the event loop that asked.
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

struct pool *pool_new(unsigned nthreads);
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

#endif /* DAEMON_POOL_H */
