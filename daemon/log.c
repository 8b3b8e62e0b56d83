/*
 * daemon/log.c: leveled logging to stderr, and the access-log buffer.
 *
 * Every line is formatted into a local buffer and written with one
 * write(2), which keeps lines whole across threads.  A line that does not
 * fit is cut and marked with "...".
 */
#include "daemon/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/clock.h"

#define LINE_MAX_LEN 2048

static const char *log_prog = "dbgmirror";
static int log_lvl = LOG_INFO;

/* The last warnings, for the status page: a ring, under recent_mu. */
static struct {
	pthread_mutex_t mu;
	char line[LOG_RECENT_MAX][LOG_RECENT_LEN];
	unsigned next; /* the slot the next warning takes */
	unsigned n; /* slots in use */
} recent = { PTHREAD_MUTEX_INITIALIZER, { { 0 } }, 0, 0 };

/* Keep a warning, line[0..len), for log_recent(). */
static void
recent_keep(const char *time, size_t tlen, const char *msg, size_t len)
{
	pthread_mutex_lock(&recent.mu);
	snprintf(recent.line[recent.next], LOG_RECENT_LEN, "%.*s %.*s",
	    (int)tlen, time, (int)len, msg);
	recent.next = (recent.next + 1) % LOG_RECENT_MAX;
	if (recent.n < LOG_RECENT_MAX)
		recent.n++;
	pthread_mutex_unlock(&recent.mu);
}

void
log_recent(void (*cb)(const char *line, void *arg), void *arg)
{
	char lines[LOG_RECENT_MAX][LOG_RECENT_LEN];
	unsigned i, n, first;

	pthread_mutex_lock(&recent.mu);
	n = recent.n;
	first = (recent.next + LOG_RECENT_MAX - n) % LOG_RECENT_MAX;
	for (i = 0; i < n; i++)
		memcpy(lines[i], recent.line[(first + i) % LOG_RECENT_MAX],
		    LOG_RECENT_LEN);
	pthread_mutex_unlock(&recent.mu);
	for (i = n; i > 0; i--)
		cb(lines[i - 1], arg);
}

void
log_init(const char *progname, int level)
{
	log_prog = progname;
	log_lvl = level;
}

int
log_level(void)
{
	return log_lvl;
}

/* Write all of buf to stderr, retrying short writes. */
static void
write_all(const char *buf, size_t len)
{
	ssize_t n;

	while (len > 0) {
		n = write(STDERR_FILENO, buf, len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

static void
vlog(const char *tag, int with_errno, const char *fmt, va_list ap)
{
	char line[LINE_MAX_LEN];
	int saved = errno;
	int64_t ns = clock_now_ns();
	time_t sec = (time_t)(ns / 1000000000);
	struct tm tm;
	size_t len, prefix;
	int n;

	gmtime_r(&sec, &tm);
	n = snprintf(line, sizeof(line),
	    "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s[%ld]: %s",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
	    tm.tm_sec, (long)(ns % 1000000000 / 1000000), log_prog,
	    (long)getpid(), tag);
	len = prefix = (size_t)n;
	n = vsnprintf(line + len, sizeof(line) - len, fmt, ap);
	len = n < 0 ? len : len + (size_t)n;
	if (with_errno && len < sizeof(line)) {
		n = snprintf(line + len, sizeof(line) - len, ": %s",
		    strerror(saved));
		len = n < 0 ? len : len + (size_t)n;
	}
	if (len >= sizeof(line) - 1) {
		len = sizeof(line) - 5;
		memcpy(line + len, "...", 3);
		len += 3;
	}
	/* The time (24 bytes) and the message, without name and tag. */
	if (strcmp(tag, "warning: ") == 0)
		recent_keep(line, 24, line + prefix, len - prefix);
	line[len++] = '\n';
	write_all(line, len);
	errno = saved;
}

void
log_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog("warning: ", 1, fmt, ap);
	va_end(ap);
}

void
log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog("warning: ", 0, fmt, ap);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list ap;

	if (log_lvl < LOG_INFO)
		return;
	va_start(ap, fmt);
	vlog("", 0, fmt, ap);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list ap;

	if (log_lvl < LOG_DEBUG)
		return;
	va_start(ap, fmt);
	vlog("debug: ", 0, fmt, ap);
	va_end(ap);
}

void
fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog("fatal: ", 1, fmt, ap);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog("fatal: ", 0, fmt, ap);
	va_end(ap);
	exit(1);
}

void
logbuf_printf(struct logbuf *lb, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(lb->buf + lb->len, sizeof(lb->buf) - lb->len, fmt,
		    ap);
		va_end(ap);
		if (n < 0)
			return;
		if ((size_t)n < sizeof(lb->buf) - lb->len) {
			lb->len += (size_t)n;
			return;
		}
		if (lb->len == 0) {
			/* Longer than the whole buffer: keep what fits. */
			lb->len = sizeof(lb->buf) - 1;
			lb->buf[lb->len - 1] = '\n';
			return;
		}
		logbuf_flush(lb);
	}
}

void
logbuf_flush(struct logbuf *lb)
{
	if (lb->len == 0)
		return;
	write_all(lb->buf, lb->len);
	lb->len = 0;
}

int
log_limit_due(struct log_limit *ll, time_t now, unsigned interval,
    uint64_t *suppressed)
{
	long long last = atomic_load_explicit(&ll->last, memory_order_relaxed);

	/* One thread wins the interval; the others only count. */
	if ((last == 0 || now - last >= (long long)interval || now < last) &&
	    atomic_compare_exchange_strong(&ll->last, &last, (long long)now)) {
		*suppressed = atomic_exchange(&ll->suppressed, 0);
		return 1;
	}
	atomic_fetch_add_explicit(&ll->suppressed, 1, memory_order_relaxed);
	return 0;
}
