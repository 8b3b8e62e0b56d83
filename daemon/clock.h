/*
 * daemon/clock.h: the one clock the cache's times come from.
 *
 * Negative and error entries, their expiry sweep, and the times stored
 * with cached files (when stored, when last used) all read clock_now(),
 * and only the daemon calls it: cache/ functions take "now" as a
 * parameter.  In production it is the wall clock.  A test can take it
 * over: with DBGMIRROR_TEST_CLOCK=FILE in the environment at start-up,
 * clock_now() is FILE's modification time, so a test moves time with
 * `touch -d @SECONDS FILE` instead of sleeping, and time stands still
 * between its steps however loaded the machine is.
 *
 * Durations (access-log times, scan times, the pace of wake-ups) come
 * from clock_mono_ns(), the monotonic clock, which no test moves.
 *
 * Threads: any; the test file is read afresh (one stat) on each call.
 */
#ifndef DAEMON_CLOCK_H
#define DAEMON_CLOCK_H

#include <stdint.h>

/* Read the environment; call once at start-up before any thread. */
void clock_init(void);
/* Seconds since the epoch, for TTLs and cache times. */
int64_t clock_now(void);
/* Nanoseconds of the monotonic clock, for durations. */
int64_t clock_mono_ns(void);

#endif /* DAEMON_CLOCK_H */
