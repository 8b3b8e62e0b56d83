/*
 * tests/unit/test_httpswitch.c: a reload's switch of the event-loop
 * threads to a new snapshot (httpd_switch, daemon/http.c), and when it is
 * told over: only once every thread has taken it, so that the reload's
 * "reloaded" line, logged then, follows the last thread's switch.
 *
 * The httpd is made (three threads, one listener on 127.0.0.1 port 0)
 * but not started: the test turns each thread's loop itself, one at a
 * time, so that which thread has switched is decided by the test, not by
 * the scheduler.  Checked: a switch is not told while a thread has not
 * taken it, however many others have; it is told once, when the last
 * one has; of two switches made one after the other, the first is told
 * once every thread holds it or the second, the second after it, once
 * every thread holds the second; a switch the threads never all took is
 * told as not taken when the httpd is freed.
 */
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"
#include "daemon/http_int.h"
#include "tests/tap.h"

#define NTHREADS 3

/* A switch's record: how it was told, and in which order. */
struct told {
	struct httpd_switched sw;
	int times, taken, order;
};

static int told_count;

static void
told_cb(struct httpd_switched *sw, int taken)
{
	struct told *t = (struct told *)sw;

	t->times++;
	t->taken = taken;
	t->order = ++told_count;
}

/* Turn thread k's loop once, without waiting: its switch, if any. */
static void
turn(struct httpd *h, unsigned k)
{
	event_base_loop(h->threads[k].base, EVLOOP_NONBLOCK);
}

static struct snapshot *
snap_of(struct httpd *h, unsigned k)
{
	return h->threads[k].snap;
}

int
main(void)
{
	static char *argv[] = { "test_httpswitch", "--no-config", "--listen",
		"127.0.0.1:0", "--threads", "3", "--scan-dir", "none", NULL };
	struct config_args args;
	struct config_diag diag = { 0 };
	struct config cfg;
	struct snapshot s1 = { 0 }, s2 = { 0 }, s3 = { 0 }, s4 = { 0 };
	struct told a = { { told_cb, 0, NULL }, 0, 0, 0 };
	struct told b = a, c = a, e = a;
	struct http_handler handler;
	struct httpd *h;
	char err[256];
	unsigned k;

	config_init(&cfg);
	if (config_parse_args(&args, 8, argv, &diag) == -1 ||
	    config_load(&cfg, &args, &diag) == -1) {
		printf("Bail out! %s\n", diag.n > 0 ? diag.msgs[0] : "config");
		return 1;
	}
	metrics_init();
	s1.cfg = s2.cfg = s3.cfg = s4.cfg = &cfg;
	atomic_init(&s1.refs, 1);
	atomic_init(&s2.refs, 1);
	atomic_init(&s3.refs, 1);
	atomic_init(&s4.refs, 1);
	memset(&handler, 0, sizeof(handler));
	if ((h = httpd_new(&s1, &handler, err, sizeof(err))) == NULL) {
		printf("Bail out! %s\n", err);
		return 1;
	}
	is_int((int)h->nthreads, NTHREADS, "three event-loop threads");

	/* One switch, the threads taking it one by one. */
	httpd_switch(h, &s2, &a.sw);
	ok(snap_of(h, 0) == &s1 && a.times == 0,
	    "switched: no thread has taken it yet, not told");
	for (k = 0; k + 1 < NTHREADS; k++)
		turn(h, k);
	ok(snap_of(h, 0) == &s2 && snap_of(h, 1) == &s2,
	    "two threads took the new snapshot");
	ok(snap_of(h, 2) == &s1 && a.times == 0,
	    "... the third has not: the switch is not told");
	turn(h, NTHREADS - 1);
	ok(snap_of(h, 2) == &s2, "the third took it");
	ok(a.times == 1 && a.taken == 1, "... then the switch is told, taken");
	for (k = 0; k < NTHREADS; k++)
		turn(h, k);
	is_int(a.times, 1, "... once");

	/* Two switches before any thread ran: told together, in order. */
	httpd_switch(h, &s3, &b.sw);
	turn(h, 0);
	httpd_switch(h, &s4, &c.sw);
	turn(h, 1);
	ok(b.times == 0 && c.times == 0,
	    "two switches, thread 2 has taken neither: neither told");
	turn(h, 2);
	ok(b.times == 1 && b.taken == 1 && c.times == 0,
	    "thread 2 took the second: the first told, every thread has it");
	ok(snap_of(h, 0) == &s3,
	    "... the second not: thread 0 still holds the first");
	turn(h, 0);
	ok(snap_of(h, 0) == &s4 && c.times == 1 && b.order < c.order,
	    "thread 0 takes the second: told, after the first");

	/* A switch the threads never take: told as not, at the end. */
	httpd_switch(h, &s2, &e.sw);
	turn(h, 0);
	httpd_free(h);
	ok(e.times == 1 && e.taken == 0,
	    "a switch not taken by every thread: told not taken when freed");
	is_int((int)atomic_load(&s4.refs), 1,
	    "... and every thread's reference let go");
	config_args_free(&args);
	config_free(&cfg);
	config_diag_free(&diag);
	metrics_free();
	return tap_done();
}
