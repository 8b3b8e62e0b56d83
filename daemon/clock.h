/*
 * daemon/clock.h: every clock the programs read, and the test clock
 * behind them.
 *
 * Nothing else reads a clock: cache/, fetchers/ and indexer/ functions
 * take "now" (or a clock function, for deadlines checked as they go) as a
 * parameter, and the daemon and the CLI pass what these return.
 *
 *   clock_now(), clock_now_ns()  the wall clock: TTLs, the times stored
 *       with cached files.
 *   clock_now_coarse()  the same in seconds as the kernel's last tick saw
 *       it (what time() returns): Date headers, access-log times and
 *       per-minute counts, which every exchange reads.
 *   clock_mono_ns()  the monotonic clock: durations, deadlines (the
 *       shutdown timeout, a metadata query's), breakers' backoffs, the
 *       pace of wake-ups.
 *   clock_stamp_ns()  the real wall clock, which no test moves: stamps
 *       that order events between processes, a purge (by the CLI or the
 *       daemon) and the fills it must drop (blob_info.begun), compared in
 *       the index.
 *
 * In production they are CLOCK_REALTIME and CLOCK_MONOTONIC.  A test can
 * take them over: with DBGMIRROR_TEST_CLOCK=FILE in the environment at
 * start-up, the wall clock is FILE's modification time, and the monotonic
 * clock runs ahead of the real one by as much as FILE's time has moved
 * forward since start-up.  So a test moves both with
 * `touch -d @SECONDS FILE` instead of sleeping: a TTL, a breaker's
 * backoff, a shutdown deadline are over when the test says so, and the
 * wall clock stands still between its steps however loaded the machine
 * is.  Moving FILE back moves the wall clock back, but never the
 * monotonic clock.  A test that removes FILE gets the real wall clock
 * back (and the monotonic clock keeps what it had gained).
 *
 * Timers (libevent timeouts) keep real time: they only wake the code that
 * reads these clocks, which decides.  A deadline checked on a periodic
 * tick is over on the first tick after the test clock passed it; a
 * breaker's probe is due when a request finds its backoff over, or when
 * its timer fires, whichever comes first.
 *
 * Threads: any; with a test clock, FILE is read afresh (one stat) on each
 * call.
 */
#ifndef DAEMON_CLOCK_H
#define DAEMON_CLOCK_H

#include <stddef.h>
#include <stdint.h>

/*
 * Read the environment; call once at start-up before any thread.  0: the
 * real clocks, nothing to say; 1: a test clock, and msg says which file;
 * -1: DBGMIRROR_TEST_CLOCK is ignored, and msg says why.
 */
int clock_init(char *msg, size_t msglen);
/* Seconds since the epoch, for TTLs and cache times. */
int64_t clock_now(void);
/* The same in nanoseconds, for times shown to the millisecond. */
int64_t clock_now_ns(void);
/*
 * clock_now() as of the kernel's last tick (a few ms behind at most, no
 * clock source read): for what every exchange asks, the second of its
 * Date header and log line, the minute of its per-minute counts.  The
 * test clock as clock_now().
 */
int64_t clock_now_coarse(void);
/* Nanoseconds of the monotonic clock, for durations and deadlines. */
int64_t clock_mono_ns(void);
/* Nanoseconds since the epoch that no test moves: ordering stamps. */
int64_t clock_stamp_ns(void);

#endif /* DAEMON_CLOCK_H */
