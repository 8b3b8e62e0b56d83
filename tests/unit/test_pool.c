/*
 * tests/unit/test_pool.c: the worker pool's two urgencies (daemon/pool.h).
 *
 * Long jobs here block on a gate the test opens, so what runs while they
 * hold their workers is decided by the pool's rules, not by timing; every
 * wait is bounded (WAIT_SECONDS) and a wait that runs out fails its check.
 */
#include "daemon/pool.h"

#include <errno.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <pthread.h>
#include <time.h>

#include "tests/tap.h"

#define WAIT_SECONDS 30

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int gate_open; /* long jobs may finish */
static int long_running, long_started, long_done, long_peak;
static int short_done;

static void
long_work(void *arg)
{
	pthread_mutex_lock(&mu);
	long_started++;
	if (++long_running > long_peak)
		long_peak = long_running;
	pthread_cond_broadcast(&changed);
	while (!gate_open)
		pthread_cond_wait(&changed, &mu);
	long_running--;
	long_done++;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&mu);
}

static void
short_work(void *arg)
{
	pthread_mutex_lock(&mu);
	short_done++;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&mu);
}

/* Wait until *v >= want, WAIT_SECONDS at most: 1 when it came. */
static int
wait_for(const int *v, int want)
{
	struct timespec until;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += WAIT_SECONDS;
	pthread_mutex_lock(&mu);
	while (*v < want && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&changed, &mu, &until);
	rc = *v >= want;
	pthread_mutex_unlock(&mu);
	return rc;
}

static int
get(const int *v)
{
	int n;

	pthread_mutex_lock(&mu);
	n = *v;
	pthread_mutex_unlock(&mu);
	return n;
}

static void
open_gate(void)
{
	pthread_mutex_lock(&mu);
	gate_open = 1;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&mu);
}

/* Done callbacks: on the loop's thread, which is this one. */
static pthread_t loop_thread;
static int dones, dones_elsewhere;
static struct event_base *base;

static void
count_done(void *arg)
{
	if (!pthread_equal(pthread_self(), loop_thread))
		dones_elsewhere++;
	if (++dones == *(int *)arg)
		event_base_loopbreak(base);
}

static void
test_urgency(void)
{
	struct pool *pool;
	int i;

	/* Three workers, two of which long jobs may take. */
	pool = pool_new(3, 2);
	ok(pool != NULL, "pool_new(3, 2)");
	for (i = 0; i < 4; i++)
		ok(pool_submit_long(pool, long_work, NULL, NULL, NULL) == 0,
		    "a long job queued");
	ok(wait_for(&long_running, 2), "two long jobs run");
	ok(pool_submit(pool, short_work, NULL, NULL, NULL) == 0,
	    "a short job queued behind two more long ones");
	ok(wait_for(&short_done, 1),
	    "... it runs while the long jobs hold their workers");
	is_int(get(&long_started), 2,
	    "... and the queued long jobs still wait: no third worker for "
	    "them");
	open_gate();
	ok(wait_for(&long_done, 4), "the gate open, every long job ends");
	is_int(get(&long_peak), 2, "never more than two long jobs at once");
	pool_free(pool);
}

static void
tick_cb(evutil_socket_t fd, short what, void *arg)
{
}

static void
test_inbox_and_free(void)
{
	struct timeval tv = { 0, 10000 }, bound = { 0, 0 };
	struct pool_inbox *inbox;
	struct event *tick;
	struct pool *pool;
	int want = 6, i;

	base = event_base_new();
	inbox = pool_inbox_new(base);
	loop_thread = pthread_self();
	pool = pool_new(2, 1);
	for (i = 0; i < 3; i++) {
		pool_submit(pool, short_work, inbox, count_done, &want);
		pool_submit_long(pool, short_work, inbox, count_done, &want);
	}
	/* A timer keeps the loop alive until the last done breaks it. */
	tick = event_new(base, -1, EV_PERSIST, tick_cb, NULL);
	event_add(tick, &tv);
	bound.tv_sec = WAIT_SECONDS;
	event_base_loopexit(base, &bound);
	event_base_dispatch(base);
	event_free(tick);
	is_int(dones, 6, "every done callback ran");
	is_int(dones_elsewhere, 0, "... on the loop's thread");

	/* pool_free runs what is queued, long jobs included, then stops. */
	short_done = 0;
	gate_open = 1;
	for (i = 0; i < 5; i++)
		pool_submit_long(pool, short_work, NULL, NULL, NULL);
	pool_free(pool);
	is_int(short_done, 5, "pool_free runs the queued long jobs first");
	pool_inbox_free(inbox);
	event_base_free(base);
}

int
main(void)
{
	evthread_use_pthreads();
	ok(pool_new(2, 0) == NULL, "pool_new: long work needs a worker");
	ok(pool_new(2, 2) == NULL, "... and must leave one for short work");
	test_urgency();
	test_inbox_and_free();
	return tap_done();
}
