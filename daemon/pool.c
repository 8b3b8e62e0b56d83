/*
 * daemon/pool.c: a fixed set of worker threads fed from one FIFO queue.
 *
 * Jobs are queued under a mutex and picked up by the first idle worker.  A
 * finished job with a done callback is appended to its inbox, and the first
 * job to arrive in an empty inbox activates the inbox's event, so a burst of
 * completions costs the loop one wake-up.
 */
#include "daemon/pool.h"

#include <event2/event.h>
#include <pthread.h>
#include <stdlib.h>

struct job {
	struct job *next;
	pool_fn work;
	pool_fn done;
	struct pool_inbox *inbox;
	void *arg;
};

struct pool {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct job *head, **tail;
	int stopping;
	unsigned nthreads;
	pthread_t *threads;
};

struct pool_inbox {
	pthread_mutex_t lock;
	struct job *head, **tail;
	struct event *ev;
};

static void
inbox_put(struct pool_inbox *inbox, struct job *job)
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
	struct job *job, *next;

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

static void *
worker_main(void *arg)
{
	struct pool *pool = arg;
	struct job *job;

	for (;;) {
		pthread_mutex_lock(&pool->lock);
		while (pool->head == NULL && !pool->stopping)
			pthread_cond_wait(&pool->cond, &pool->lock);
		job = pool->head;
		if (job == NULL) {
			pthread_mutex_unlock(&pool->lock);
			return NULL;
		}
		pool->head = job->next;
		if (pool->head == NULL)
			pool->tail = &pool->head;
		pthread_mutex_unlock(&pool->lock);

		job->work(job->arg);
		if (job->done != NULL && job->inbox != NULL)
			inbox_put(job->inbox, job);
		else
			free(job);
	}
}

struct pool *
pool_new(unsigned nthreads)
{
	struct pool *pool;

	if ((pool = calloc(1, sizeof(*pool))) == NULL)
		return NULL;
	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->cond, NULL);
	pool->tail = &pool->head;
	if ((pool->threads = calloc(nthreads, sizeof(pthread_t))) == NULL) {
		pool_free(pool);
		return NULL;
	}
	for (; pool->nthreads < nthreads; pool->nthreads++) {
		if (pthread_create(&pool->threads[pool->nthreads], NULL,
			worker_main, pool) != 0) {
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
	pthread_mutex_unlock(&pool->lock);
	for (i = 0; i < pool->nthreads; i++)
		pthread_join(pool->threads[i], NULL);
	pthread_mutex_destroy(&pool->lock);
	pthread_cond_destroy(&pool->cond);
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

int
pool_submit(struct pool *pool, pool_fn work, struct pool_inbox *inbox,
    pool_fn done, void *arg)
{
	struct job *job;

	if ((job = malloc(sizeof(*job))) == NULL)
		return -1;
	job->next = NULL;
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
	*pool->tail = job;
	pool->tail = &job->next;
	pthread_cond_signal(&pool->cond);
	pthread_mutex_unlock(&pool->lock);
	return 0;
}
