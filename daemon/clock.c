/*
 * daemon/clock.c: the programs' clocks, and the test clock behind them
 * (daemon/clock.h).
 *
 * The test clock's file and its time at start-up are written once, before
 * any thread; the monotonic clock's lead is the only state shared between
 * threads afterwards, an atomic that only grows.
 */
#include "daemon/clock.h"

#include <sys/stat.h>

#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NS 1000000000

/* The test clock's file; "" in production. */
static char test_file[PATH_MAX];
/* Its modification time at start-up, in ns. */
static int64_t test_start_ns;
/* How far the test clock moved forward at most: the monotonic clock's
 * lead over the real one. */
static _Atomic int64_t mono_lead_ns;

static int64_t
read_clock(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

/* The test file's time in ns: 0, or -1 when it cannot be read. */
static int
test_time(int64_t *ns)
{
	struct stat sb;

	if (stat(test_file, &sb) == -1)
		return -1;
	*ns = (int64_t)sb.st_mtim.tv_sec * NS + sb.st_mtim.tv_nsec;
	return 0;
}

int
clock_init(char *msg, size_t msglen)
{
	const char *p = getenv("DBGMIRROR_TEST_CLOCK");

	if (p == NULL || *p == '\0')
		return 0;
	if (snprintf(test_file, sizeof(test_file), "%s", p) >=
	    (int)sizeof(test_file)) {
		test_file[0] = '\0';
		snprintf(msg, msglen,
		    "DBGMIRROR_TEST_CLOCK: path too long; ignored");
		return -1;
	}
	/* A file missing now starts where the real clock is. */
	if (test_time(&test_start_ns) == -1)
		test_start_ns = read_clock(CLOCK_REALTIME);
	snprintf(msg, msglen,
	    "the cache's clock is the mtime of %s (a test clock)", test_file);
	return 1;
}

int64_t
clock_now_ns(void)
{
	int64_t ns;

	/* A test that removed its clock file gets the real time back. */
	if (test_file[0] != '\0' && test_time(&ns) == 0)
		return ns;
	return read_clock(CLOCK_REALTIME);
}

int64_t
clock_now(void)
{
	int64_t ns = clock_now_ns();

	/* Rounded down, also before the epoch. */
	return ns >= 0 ? ns / NS : -((-ns + NS - 1) / NS);
}

int64_t
clock_now_coarse(void)
{
	struct timespec ts;

	if (test_file[0] != '\0')
		return clock_now();
	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	return (int64_t)ts.tv_sec;
}

int64_t
clock_mono_ns(void)
{
	int64_t ns, want, lead;

	if (test_file[0] == '\0')
		return read_clock(CLOCK_MONOTONIC);
	lead = atomic_load(&mono_lead_ns);
	if (test_time(&ns) == 0) {
		/* Only forward: another thread may raise it meanwhile. */
		want = ns - test_start_ns;
		while (want > lead &&
		    !atomic_compare_exchange_weak(&mono_lead_ns, &lead, want))
			;
		if (want > lead)
			lead = want;
	}
	return read_clock(CLOCK_MONOTONIC) + lead;
}

int64_t
clock_stamp_ns(void)
{
	return read_clock(CLOCK_REALTIME);
}
