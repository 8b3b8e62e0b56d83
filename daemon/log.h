/*
 * daemon/log.h: the one logger, and buffered access-log lines.
 *
 * Messages go to stderr, one write(2) per line so that lines from several
 * threads never interleave.  Messages start with "%s: ", __func__ by
 * convention.  log_warn appends strerror(errno).
 *
 * Under systemd, when JOURNAL_STREAM names the stderr the process has,
 * each line starts with its syslog priority as sd-daemon(3) spells it
 * ("<3>" fatal, "<4>" warning, "<6>" info and access lines, "<7>" debug)
 * and carries neither a time nor the program's name: the journal records
 * both, and journalctl -p filters by the priority.
 */
#ifndef DAEMON_LOG_H
#define DAEMON_LOG_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define LOG_WARN 0
#define LOG_INFO 1
#define LOG_DEBUG 2

void log_init(const char *progname, int level);
/* Any thread (SIGHUP): the level from now on. */
void log_set_level(int level);
int log_level(void);
/* 1 when lines go to the journal (JOURNAL_STREAM names stderr). */
int log_journal(void);

void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * The last LOG_RECENT_MAX warnings, newest first, each "TIME message" cut
 * to LOG_RECENT_LEN - 1 bytes: cb(line) for each, on the caller's thread.
 */
#define LOG_RECENT_MAX 16
#define LOG_RECENT_LEN 256
void log_recent(void (*cb)(const char *line, void *arg), void *arg);

/* Start-up failures only: log and exit(1).  Only main.c and cli.c. */
void fatal(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

/*
 * A rate limit for a message that an outside party can make recur: at most
 * one line per interval, the others counted.  Shared by threads; zero it to
 * start (a static one is ready).
 */
struct log_limit {
	atomic_llong last; /* time of the last line allowed */
	atomic_uint_fast64_t suppressed;
};

/*
 * 1 when the caller should log now (then *suppressed is how many were
 * held back since the last line), 0 when this one is only counted.
 */
int log_limit_due(struct log_limit *ll, time_t now, unsigned interval,
    uint64_t *suppressed);

/*
 * Where access-log lines go: stderr until log_access_open() names a file,
 * which is opened for appending (created 0640): a start-up call, before
 * threads write lines.  log_access_reopen() opens path, or with NULL the
 * file's name again (after logrotate moved it), and puts the new file
 * under the descriptor the writers use, so that no line is lost or
 * written elsewhere: any time, from one thread (the main one); nothing
 * with no file.  Both 0, or -1 with err (a failed reopen keeps the old
 * file and name).
 */
int log_access_open(const char *path, char *err, size_t errlen);
int log_access_reopen(const char *path, char *err, size_t errlen);
/* 1 when access lines go to a file of their own. */
int log_access_file(void);

/*
 * A per-thread buffer of access-log lines.  Appending never blocks for long:
 * the buffer is written out when it fills, and the owner flushes it from a
 * timer so lines are late by at most a fraction of a second.  A flush is
 * one write(2) of whole lines.
 */
#define LOGBUF_SIZE 4096 /* PIPE_BUF: one flush is one atomic write */

struct logbuf {
	size_t len;
	char buf[LOGBUF_SIZE];
};

/*
 * One access-log line, built piece by piece without printf (every
 * exchange writes one): what goes past LOGBUF_SIZE - 1 bytes is cut.
 */
struct logline {
	size_t len;
	char buf[LOGBUF_SIZE - 1];
};

void logline_put(struct logline *l, const char *s, size_t n);
void logline_str(struct logline *l, const char *s);
void logline_int(struct logline *l, long long v);
void logline_uint(struct logline *l, unsigned long long v);
/* us as a fixed-point number of 1/scale units: "%.3f" ms for scale 1000. */
void logline_fixed(struct logline *l, uint64_t us, uint64_t scale);
/*
 * Append l to lb, written out first when l does not fit; a line as long
 * as the buffer keeps what fits, its last byte a newline.
 */
void logbuf_line(struct logbuf *lb, const struct logline *l);
void logbuf_flush(struct logbuf *lb);

#endif /* DAEMON_LOG_H */
