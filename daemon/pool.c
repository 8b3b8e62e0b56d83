/*
 * daemon/pool.c: a fixed set of worker threads fed from two FIFO queues,
 * one per urgency (daemon/pool.h).
 *
 * Jobs are queued under a mutex and picked up by the first idle worker,
 * which takes a short job when there is one, else a long job as long as
 * fewer than max_long long jobs run.  So long jobs never hold more than
 * max_long workers, and the rest are always there for short ones.  A
 * finished job with a done callback is appended to its inbox, and the first
 * job to arrive in an empty inbox activates the inbox's event, so a burst of
 * completions costs the loop one wake-up.
 *
 * Background jobs have a queue and a worker of their own, which sets
 * itself to SCHED_IDLE and the idle I/O class when it starts, before the
 * pool's init (the sandbox), and never back: an unprivileged thread could
 * not raise them again.  It takes background jobs only, one at a time, so
 * they get the CPU and the disk only when nothing else wants them.
 *
 * A share (pool_share_run) hands out its items by an atomic counter to
 * the caller and to the helpers that joined the run; a helper joins only
 * while the run is open, under the share's lock, and the caller closes the
 * run when it finds no item left, then waits for the joined ones only.
 * The share is reference counted: the caller's reference, and one for
 * each helper queued, which may start after the caller has gone.
 */
#include "daemon/pool.h"

#include <sys/syscall.h>

#include <event2/event.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/log.h"

/* ioprio_set(2): no glibc wrapper, no header in Debian 12's libc. */
#define IOPRIO_WHO_PROCESS 1
#define IOPRIO_CLASS_IDLE 3
#define IOPRIO_CLASS_SHIFT 13

/* The classes of jobs, each a queue. */
enum { Q_SHORT, Q_LONG, Q_BACKGROUND, Q_N };

struct pool_job {
	struct pool_job *next;
	int cls; /* Q_SHORT, Q_LONG or Q_BACKGROUND */
	pool_fn work;
	pool_fn done;
	struct pool_inbox *inbox;
	void *arg;
};

/* A FIFO of jobs. */
struct queue {
	struct pool_job *head, **tail;
};

struct pool {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* the foreground workers wait here */
	pthread_cond_t bgcond; /* the background worker waits here */
	struct queue q[Q_N];
	unsigned running_long;
	unsigned max_long;
	int stopping;
	unsigned nthreads; /* started, the background worker first */
	pthread_t *threads;
	pool_fn init; /* run by each worker first; NULL: none */
	void *init_arg;
};

struct pool_inbox {
	pthread_mutex_t lock;
	struct pool_job *head, **tail;
	struct event *ev;
};

static void
inbox_put(struct pool_inbox *inbox, struct pool_job *job)
{
	int was_empty;

	job->next = NULL;
	pthread_mutex_lock(&inbox->lock);
	was_empty = inbox->head == NULL;
	*inbox->tail = job;
	inbox->tail = &job->next;
	pthread_mutex_unlock(&inbox->lock);
	if (was_empty)
		event_active(inbox->ev, EV_READ, 0);
}

static void
inbox_run(struct pool_inbox *inbox)
{
	struct pool_job *job, *next;

	pthread_mutex_lock(&inbox->lock);
	job = inbox->head;
	inbox->head = NULL;
	inbox->tail = &inbox->head;
	pthread_mutex_unlock(&inbox->lock);
	for (; job != NULL; job = next) {
		next = job->next;
		job->done(job->arg);
		free(job);
	}
}

static void
inbox_ready_cb(evutil_socket_t fd, short what, void *arg)
{
	inbox_run(arg);
}

static void
queue_put(struct queue *q, struct pool_job *job)
{
	job->next = NULL;
	*q->tail = job;
	q->tail = &job->next;
}

static struct pool_job *
queue_take(struct queue *q)
{
	struct pool_job *job = q->head;

	if (job != NULL && (q->head = job->next) == NULL)
		q->tail = &q->head;
	return job;
}

/* Under the lock: the job a foreground worker may run now, or NULL. */
static struct pool_job *
pool_next(struct pool *pool)
{
	if (pool->q[Q_SHORT].head != NULL)
		return queue_take(&pool->q[Q_SHORT]);
	if (pool->running_long < pool->max_long)
		return queue_take(&pool->q[Q_LONG]);
	return NULL;
}

/* Under the lock: 1 when the workers of class bg may end. */
static int
pool_over(const struct pool *pool, int bg)
{
	return pool->stopping &&
	    pool->q[bg ? Q_BACKGROUND : Q_LONG].head == NULL;
}

/* The background worker, at idle priority for the CPU and the disk. */
static void
worker_lower(void)
{
	struct sched_param sp = { .sched_priority = 0 };
	int rc;

	if ((rc = pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp)) != 0)
		log_warnx("background worker: SCHED_IDLE: %s", strerror(rc));
	if (syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0,
		IOPRIO_CLASS_IDLE << IOPRIO_CLASS_SHIFT) == -1)
		log_warn("background worker: idle I/O class");
}

static void
worker_run(struct pool *pool, int bg)
{
	struct pool_job *job;

	for (;;) {
		pthread_mutex_lock(&pool->lock);
		while ((job = bg ? queue_take(&pool->q[Q_BACKGROUND])
				 : pool_next(pool)) == NULL &&
		    !pool_over(pool, bg))
			pthread_cond_wait(bg ? &pool->bgcond : &pool->cond,
			    &pool->lock);
		if (job == NULL) {
			pthread_mutex_unlock(&pool->lock);
			return;
		}
		pool->running_long += job->cls == Q_LONG;
		pthread_mutex_unlock(&pool->lock);

		job->work(job->arg);
		if (job->cls == Q_LONG) {
			pthread_mutex_lock(&pool->lock);
			pool->running_long--;
			/* A long job may wait for this place. */
			pthread_cond_signal(&pool->cond);
			pthread_mutex_unlock(&pool->lock);
		}
		if (job->done != NULL && job->inbox != NULL)
			inbox_put(job->inbox, job);
		else
			free(job);
	}
}

static void *
worker_main(void *arg)
{
	struct pool *pool = arg;

	if (pool->init != NULL)
		pool->init(pool->init_arg);
	worker_run(pool, 0);
	return NULL;
}

static void *
worker_bg_main(void *arg)
{
	struct pool *pool = arg;

	worker_lower();
	if (pool->init != NULL)
		pool->init(pool->init_arg);
	worker_run(pool, 1);
	return NULL;
}

struct pool *
pool_new(unsigned nthreads, unsigned max_long)
{
	return pool_new_init(nthreads, max_long, NULL, NULL);
}

struct pool *
pool_new_init(unsigned nthreads, unsigned max_long, pool_fn init, void *arg)
{
	struct pool *pool;
	unsigned i;

	if (max_long == 0 || max_long >= nthreads)
		return NULL;
	if ((pool = calloc(1, sizeof(*pool))) == NULL)
		return NULL;
	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->cond, NULL);
	pthread_cond_init(&pool->bgcond, NULL);
	for (i = 0; i < Q_N; i++)
		pool->q[i].tail = &pool->q[i].head;
	pool->max_long = max_long;
	pool->init = init;
	pool->init_arg = arg;
	if ((pool->threads = calloc(nthreads + 1, sizeof(pthread_t))) == NULL) {
		pool_free(pool);
		return NULL;
	}
	for (; pool->nthreads < nthreads + 1; pool->nthreads++) {
		if (pthread_create(&pool->threads[pool->nthreads], NULL,
			pool->nthreads == 0 ? worker_bg_main : worker_main,
			pool) != 0) {
			pool_free(pool);
			return NULL;
		}
	}
	return pool;
}

void
pool_free(struct pool *pool)
{
	unsigned i;

	if (pool == NULL)
		return;
	pthread_mutex_lock(&pool->lock);
	pool->stopping = 1;
	pthread_cond_broadcast(&pool->cond);
	pthread_cond_broadcast(&pool->bgcond);
	pthread_mutex_unlock(&pool->lock);
	for (i = 0; i < pool->nthreads; i++)
		pthread_join(pool->threads[i], NULL);
	pthread_mutex_destroy(&pool->lock);
	pthread_cond_destroy(&pool->cond);
	pthread_cond_destroy(&pool->bgcond);
	free(pool->threads);
	free(pool);
}

struct pool_inbox *
pool_inbox_new(struct event_base *base)
{
	struct pool_inbox *inbox;

	if ((inbox = calloc(1, sizeof(*inbox))) == NULL)
		return NULL;
	inbox->ev = event_new(base, -1, 0, inbox_ready_cb, inbox);
	if (inbox->ev == NULL) {
		free(inbox);
		return NULL;
	}
	pthread_mutex_init(&inbox->lock, NULL);
	inbox->tail = &inbox->head;
	return inbox;
}

void
pool_inbox_free(struct pool_inbox *inbox)
{
	if (inbox == NULL)
		return;
	inbox_run(inbox);
	event_free(inbox->ev);
	pthread_mutex_destroy(&inbox->lock);
	free(inbox);
}

static int
submit(struct pool *pool, int cls, pool_fn work, struct pool_inbox *inbox,
    pool_fn done, void *arg)
{
	struct pool_job *job;

	if ((job = malloc(sizeof(*job))) == NULL)
		return -1;
	job->cls = cls;
	job->work = work;
	job->done = done;
	job->inbox = inbox;
	job->arg = arg;
	pthread_mutex_lock(&pool->lock);
	if (pool->stopping) {
		pthread_mutex_unlock(&pool->lock);
		free(job);
		return -1;
	}
	queue_put(&pool->q[cls], job);
	/* Any idle worker can take it (a long one once a place is free). */
	pthread_cond_signal(cls == Q_BACKGROUND ? &pool->bgcond : &pool->cond);
	pthread_mutex_unlock(&pool->lock);
	return 0;
}

int
pool_submit(struct pool *pool, pool_fn work, struct pool_inbox *inbox,
    pool_fn done, void *arg)
{
	return submit(pool, Q_SHORT, work, inbox, done, arg);
}

int
pool_submit_long(struct pool *pool, pool_fn work, struct pool_inbox *inbox,
    pool_fn done, void *arg)
{
	return submit(pool, Q_LONG, work, inbox, done, arg);
}

int
pool_submit_background(struct pool *pool, pool_fn work,
    struct pool_inbox *inbox, pool_fn done, void *arg)
{
	return submit(pool, Q_BACKGROUND, work, inbox, done, arg);
}

struct pool_share {
	struct pool *pool;
	pthread_mutex_t lock; /* all below but next */
	pthread_cond_t idle; /* active fell to 0 */
	unsigned refs; /* the caller's, and one per queued helper */
	unsigned queued; /* helpers not started yet */
	unsigned active; /* helpers in the open run */
	int open; /* a run takes helpers */
	pool_item_fn fn;
	void *arg;
	size_t n;
	atomic_size_t next; /* the next item to take */
};

/* Under sh's lock: drop one reference; 1 when it was the last. */
static int
share_unref(struct pool_share *sh)
{
	return --sh->refs == 0;
}

static void
share_destroy(struct pool_share *sh)
{
	pthread_mutex_destroy(&sh->lock);
	pthread_cond_destroy(&sh->idle);
	free(sh);
}

/* Take items until none is left. */
static void
share_take(struct pool_share *sh)
{
	size_t i;

	while ((i = atomic_fetch_add(&sh->next, 1)) < sh->n)
		sh->fn(sh->arg, i);
}

/* A helper: a long job that joins the open run, if any. */
static void
share_help(void *arg)
{
	struct pool_share *sh = arg;
	int joined, last;

	pthread_mutex_lock(&sh->lock);
	sh->queued--;
	if ((joined = sh->open))
		sh->active++;
	pthread_mutex_unlock(&sh->lock);
	if (joined)
		share_take(sh);
	pthread_mutex_lock(&sh->lock);
	if (joined && --sh->active == 0)
		pthread_cond_signal(&sh->idle);
	last = share_unref(sh);
	pthread_mutex_unlock(&sh->lock);
	if (last)
		share_destroy(sh);
}

struct pool_share *
pool_share_new(struct pool *pool)
{
	struct pool_share *sh;

	if ((sh = calloc(1, sizeof(*sh))) == NULL)
		return NULL;
	sh->pool = pool;
	sh->refs = 1;
	pthread_mutex_init(&sh->lock, NULL);
	pthread_cond_init(&sh->idle, NULL);
	atomic_init(&sh->next, 0);
	return sh;
}

void
pool_share_run(struct pool_share *sh, unsigned helpers, pool_item_fn fn,
    void *arg, size_t n)
{
	size_t i;

	if (sh == NULL || sh->pool == NULL) {
		for (i = 0; i < n; i++)
			fn(arg, i);
		return;
	}
	pthread_mutex_lock(&sh->lock);
	sh->fn = fn;
	sh->arg = arg;
	sh->n = n;
	atomic_store(&sh->next, 0);
	sh->open = 1;
	/* No more helpers than items besides the caller's first. */
	if (n > 0 && helpers > n - 1)
		helpers = (unsigned)(n - 1);
	while (sh->queued < helpers) {
		if (pool_submit_long(sh->pool, share_help, NULL, NULL, sh) ==
		    -1)
			break;
		sh->queued++;
		sh->refs++;
	}
	pthread_mutex_unlock(&sh->lock);

	share_take(sh);

	pthread_mutex_lock(&sh->lock);
	sh->open = 0;
	while (sh->active > 0)
		pthread_cond_wait(&sh->idle, &sh->lock);
	pthread_mutex_unlock(&sh->lock);
}

void
pool_share_free(struct pool_share *sh)
{
	int last;

	if (sh == NULL)
		return;
	pthread_mutex_lock(&sh->lock);
	last = share_unref(sh);
	pthread_mutex_unlock(&sh->lock);
	if (last)
		share_destroy(sh);
}
