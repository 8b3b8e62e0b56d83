/*
 * tests/unit/test_pool.c: the worker pool's two urgencies and its
 * background class (daemon/pool.h).
 *
 * Long jobs here block on a gate the test opens, so what runs while they
 * hold their workers is decided by the pool's rules, not by timing; every
 * wait is bounded (WAIT_SECONDS) and a wait that runs out fails its check.
 */
#include "daemon/pool.h"

#include <sys/syscall.h>

#include <errno.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* What a job saw of its thread: CPU policy and I/O priority. */
struct seen {
	int policy, ioprio;
};

static int bg_done;

static void
see_work(void *arg)
{
	struct seen *s = arg;

	pthread_mutex_lock(&mu);
	s->policy = sched_getscheduler(0);
	s->ioprio = (int)syscall(SYS_ioprio_get, 1 /* IOPRIO_WHO_PROCESS */, 0);
	bg_done++;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&mu);
}

static void
test_background(void)
{
	struct seen bg = { -1, -1 }, fg = { -1, -1 };
	struct pool *pool;
	int i;

	long_done = long_started = long_running = short_done = bg_done = 0;
	gate_open = 0;
	pool = pool_new(2, 1);
	ok(pool_submit_long(pool, long_work, NULL, NULL, NULL) == 0 &&
		wait_for(&long_running, 1),
	    "a long job holds the only long place");
	ok(pool_submit_background(pool, see_work, NULL, NULL, &bg) == 0,
	    "a background job queued");
	ok(wait_for(&bg_done, 1),
	    "... it runs on a worker of its own meanwhile");
	is_int(bg.policy, SCHED_IDLE, "... at SCHED_IDLE");
	is_int(bg.ioprio >> 13, 3, "... in the idle I/O class");
	ok(pool_submit(pool, see_work, NULL, NULL, &fg) == 0 &&
		wait_for(&bg_done, 2),
	    "a short job runs");
	is_int(fg.policy, SCHED_OTHER, "... at the normal policy");
	ok(fg.ioprio >> 13 != 3, "... not in the idle I/O class");
	open_gate();
	ok(wait_for(&long_done, 1), "the long job ends");

	/* pool_free runs the queued background jobs too. */
	for (i = 0; i < 5; i++)
		pool_submit_background(pool, short_work, NULL, NULL, NULL);
	pool_free(pool);
	is_int(short_done, 5, "pool_free runs the queued background jobs");
}

/*
 * Shares.  Items count themselves and may wait on their own gate; the job
 * that runs a share is a long job, and says when it is done.
 */
#define SHARE_ITEMS 100
static int share_gate; /* items may finish */
static int items_done, items_elsewhere, in_item, share_jobs_done;
static int item_calls[SHARE_ITEMS];
static pthread_t share_thread; /* the job's */

struct share_job {
	struct pool *pool;
	unsigned helpers;
	size_t n;
};

static void
item_fn(void *arg, size_t i)
{
	pthread_mutex_lock(&mu);
	in_item++;
	pthread_cond_broadcast(&changed);
	while (!share_gate)
		pthread_cond_wait(&changed, &mu);
	in_item--;
	items_done++;
	item_calls[i]++;
	if (!pthread_equal(pthread_self(), share_thread))
		items_elsewhere++;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&mu);
}

static void
share_job(void *arg)
{
	struct share_job *j = arg;
	struct pool_share *sh;

	pthread_mutex_lock(&mu);
	share_thread = pthread_self();
	pthread_mutex_unlock(&mu);
	sh = pool_share_new(j->pool);
	pool_share_run(sh, j->helpers, item_fn, NULL, j->n);
	pool_share_free(sh);
	pthread_mutex_lock(&mu);
	share_jobs_done++;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&mu);
}

static void
share_reset(int gate)
{
	pthread_mutex_lock(&mu);
	share_gate = gate;
	items_done = items_elsewhere = in_item = share_jobs_done = 0;
	short_done = 0;
	memset(item_calls, 0, sizeof(item_calls));
	pthread_mutex_unlock(&mu);
}

/* The job holds the only long place: it must do every item itself. */
static void
test_share_alone(void)
{
	struct share_job j;
	struct pool *pool;
	int i, once = 1;

	share_reset(1);
	pool = pool_new(2, 1);
	j.pool = pool;
	j.helpers = 4;
	j.n = SHARE_ITEMS;
	ok(pool_submit_long(pool, share_job, NULL, NULL, &j) == 0,
	    "max_long 1: a long job shares 100 items with 4 helpers");
	ok(wait_for(&share_jobs_done, 1),
	    "... and completes: it waits for no helper that cannot start");
	for (i = 0; i < SHARE_ITEMS; i++)
		once &= item_calls[i] == 1;
	ok(get(&items_done) == SHARE_ITEMS && once, "every item done once");
	is_int(get(&items_elsewhere), 0, "all of them by the job itself");
	/* The queued helpers start now, find no run and free the share. */
	pool_free(pool);
}

/*
 * With two long places, the job and one helper read at once and take
 * both; a short job still runs.
 */
static void
test_share_helpers(void)
{
	struct share_job j;
	struct pool *pool;

	share_reset(0);
	pool = pool_new(3, 2);
	j.pool = pool;
	j.helpers = 3;
	j.n = 4;
	ok(pool_submit_long(pool, share_job, NULL, NULL, &j) == 0,
	    "max_long 2: a long job shares 4 items with up to 3 helpers");
	ok(wait_for(&in_item, 2), "the job and a helper read at once");
	ok(pool_submit(pool, short_work, NULL, NULL, NULL) == 0,
	    "a short job queued while the share holds every long place");
	ok(wait_for(&short_done, 1), "... it runs");
	is_int(get(&items_done), 0, "... while the items still wait");
	pthread_mutex_lock(&mu);
	share_gate = 1;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&mu);
	ok(wait_for(&share_jobs_done, 1), "the gate open, the share completes");
	is_int(get(&items_done), 4, "with every item done");
	ok(get(&items_elsewhere) > 0, "some by a helper");
	pool_free(pool);
}

/* Without a pool, or a share, the caller does it all. */
static void
test_share_no_pool(void)
{
	struct pool_share *sh;

	share_reset(1);
	share_thread = pthread_self();
	sh = pool_share_new(NULL);
	pool_share_run(sh, 3, item_fn, NULL, 10);
	pool_share_free(sh);
	pool_share_run(NULL, 3, item_fn, NULL, 10);
	is_int(items_done, 20, "no pool, no share: the caller does the items");
	is_int(items_elsewhere, 0, "... on its own thread");
}

int
main(void)
{
	evthread_use_pthreads();
	ok(pool_new(2, 0) == NULL, "pool_new: long work needs a worker");
	ok(pool_new(2, 2) == NULL, "... and must leave one for short work");
	test_urgency();
	test_share_alone();
	test_share_helpers();
	test_share_no_pool();
	test_background();
	test_inbox_and_free();
	return tap_done();
}
