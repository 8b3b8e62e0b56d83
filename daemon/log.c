/*
 * daemon/log.c: leveled logging to stderr, and the access-log buffer.
 *
 * Every line is formatted into a local buffer and written with one
 * write(2), which keeps lines whole across threads.  A line that does not
 * fit is cut and marked with "...".
 *
 * The access log's descriptor never changes once the file is open: a
 * reopen opens the name again and dup3()s the new file onto it, which
 * swaps the file under writers atomically (closing and reopening would
 * let a writer hit a closed descriptor, or one reused for a socket).
 */
#include "daemon/log.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/clock.h"

#define LINE_MAX_LEN 2048
/* "2024-01-02T03:04:05.678Z" is 24; room for any year the compiler fears. */
#define TIME_LEN 64

static const char *log_prog = "dbgmirror";
static atomic_int log_lvl = LOG_INFO; /* log_set_level: any time */
static int log_to_journal;

/*
 * The access log: stderr, or the file at access_path.  access_fd is set
 * at start-up; access_path and the file under access_fd change only on
 * the thread that reopens (the main one), and the writers only read
 * access_to_file.
 */
static int access_fd = STDERR_FILENO;
static char *access_path;
static atomic_int access_to_file;

/* The last warnings, for the status page: a ring, under recent_mu. */
static struct {
	pthread_mutex_t mu;
	char line[LOG_RECENT_MAX][LOG_RECENT_LEN];
	unsigned next; /* the slot the next warning takes */
	unsigned n; /* slots in use */
} recent = { PTHREAD_MUTEX_INITIALIZER, { { 0 } }, 0, 0 };

/* Keep a warning, msg[0..len), for log_recent(). */
static void
recent_keep(const char *time, const char *msg, size_t len)
{
	pthread_mutex_lock(&recent.mu);
	snprintf(recent.line[recent.next], LOG_RECENT_LEN, "%s %.*s", time,
	    (int)len, msg);
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

/*
 * 1 when JOURNAL_STREAM ("DEVICE:INODE", decimal) is the stderr this
 * process has: a child whose stderr went elsewhere inherits the variable
 * but not the stream.
 */
static int
journal_stream(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	char tail;

	if (e == NULL || sscanf(e, "%llu:%llu%c", &dev, &ino, &tail) != 2 ||
	    fstat(STDERR_FILENO, &st) == -1)
		return 0;
	return (unsigned long long)st.st_dev == dev &&
	    (unsigned long long)st.st_ino == ino;
}

void
log_init(const char *progname, int level)
{
	log_prog = progname;
	atomic_store(&log_lvl, level);
	log_to_journal = journal_stream();
}

void
log_set_level(int level)
{
	atomic_store(&log_lvl, level);
}

int
log_level(void)
{
	return atomic_load(&log_lvl);
}

int
log_journal(void)
{
	return log_to_journal;
}

/* Write all of buf to fd, retrying short writes. */
static void
write_all(int fd, const char *buf, size_t len)
{
	ssize_t n;

	while (len > 0) {
		n = write(fd, buf, len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

/* Syslog priorities (sd-daemon(3)) of the lines. */
#define PRIO_ERR '3'
#define PRIO_WARNING '4'
#define PRIO_INFO '6'
#define PRIO_DEBUG '7'

static void
vlog(char prio, const char *tag, int with_errno, const char *fmt, va_list ap)
{
	char line[LINE_MAX_LEN], now[TIME_LEN + 1];
	int saved = errno;
	int64_t ns = clock_now_ns();
	time_t sec = (time_t)(ns / 1000000000);
	struct tm tm;
	size_t len, prefix;
	int n;

	gmtime_r(&sec, &tm);
	snprintf(now, sizeof(now), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
	    tm.tm_sec, (long)(ns % 1000000000 / 1000000));
	if (log_to_journal)
		n = snprintf(line, sizeof(line), "<%c>%s", prio, tag);
	else
		n = snprintf(line, sizeof(line), "%s %s[%ld]: %s", now,
		    log_prog, (long)getpid(), tag);
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
	/* The time and the message, without name and tag. */
	if (prio == PRIO_WARNING)
		recent_keep(now, line + prefix, len - prefix);
	line[len++] = '\n';
	write_all(STDERR_FILENO, line, len);
	errno = saved;
}

void
log_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(PRIO_WARNING, "warning: ", 1, fmt, ap);
	va_end(ap);
}

void
log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(PRIO_WARNING, "warning: ", 0, fmt, ap);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list ap;

	if (atomic_load_explicit(&log_lvl, memory_order_relaxed) < LOG_INFO)
		return;
	va_start(ap, fmt);
	vlog(PRIO_INFO, "", 0, fmt, ap);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list ap;

	if (atomic_load_explicit(&log_lvl, memory_order_relaxed) < LOG_DEBUG)
		return;
	va_start(ap, fmt);
	vlog(PRIO_DEBUG, "debug: ", 0, fmt, ap);
	va_end(ap);
}

void
fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(PRIO_ERR, "fatal: ", 1, fmt, ap);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(PRIO_ERR, "fatal: ", 0, fmt, ap);
	va_end(ap);
	exit(1);
}

void
logline_put(struct logline *l, const char *s, size_t n)
{
	if (n > sizeof(l->buf) - l->len)
		n = sizeof(l->buf) - l->len;
	memcpy(l->buf + l->len, s, n);
	l->len += n;
}

void
logline_str(struct logline *l, const char *s)
{
	logline_put(l, s, strlen(s));
}

/* v's decimal digits, at least width of them (leading zeros). */
static void
logline_digits(struct logline *l, unsigned long long v, int width)
{
	char d[24];
	int n = 0;

	do {
		d[sizeof(d) - 1 - n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0 || n < width);
	logline_put(l, d + sizeof(d) - n, (size_t)n);
}

void
logline_int(struct logline *l, long long v)
{
	if (v < 0) {
		logline_put(l, "-", 1);
		logline_digits(l, -(unsigned long long)v, 1);
	} else {
		logline_digits(l, (unsigned long long)v, 1);
	}
}

void
logline_uint(struct logline *l, unsigned long long v)
{
	logline_digits(l, v, 1);
}

void
logline_fixed(struct logline *l, uint64_t us, uint64_t scale)
{
	int width = 0;
	uint64_t s;

	for (s = scale; s > 1; s /= 10)
		width++;
	logline_digits(l, us / scale, 1);
	logline_put(l, ".", 1);
	logline_digits(l, us % scale, width);
}

void
logbuf_line(struct logbuf *lb, const struct logline *l)
{
	if (l->len >= sizeof(lb->buf) - lb->len)
		logbuf_flush(lb);
	memcpy(lb->buf + lb->len, l->buf, l->len);
	lb->len += l->len;
	/* As long as the whole buffer, perhaps cut: a newline at its end. */
	if (l->len == sizeof(l->buf))
		lb->buf[lb->len - 1] = '\n';
}

void
logbuf_flush(struct logbuf *lb)
{
	if (lb->len == 0)
		return;
	write_all(access_fd, lb->buf, lb->len);
	lb->len = 0;
}

/* The access log file at path, opened for appending: fd, or -1. */
static int
access_open(const char *path, char *err, size_t errlen)
{
	int fd;

	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY,
	    0640);
	if (fd == -1)
		snprintf(err, errlen, "access-log %s: %s", path,
		    strerror(errno));
	return fd;
}

int
log_access_open(const char *path, char *err, size_t errlen)
{
	char *copy;
	int fd;

	if ((copy = strdup(path)) == NULL) {
		snprintf(err, errlen, "access-log: out of memory");
		return -1;
	}
	if ((fd = access_open(path, err, errlen)) == -1) {
		free(copy);
		return -1;
	}
	if (access_fd != STDERR_FILENO)
		close(access_fd);
	free(access_path);
	access_path = copy;
	access_fd = fd;
	atomic_store(&access_to_file, 1);
	return 0;
}

int
log_access_reopen(const char *path, char *err, size_t errlen)
{
	char *copy = NULL;
	int fd, rc = 0;

	if (access_path == NULL)
		return 0;
	if (path == NULL)
		path = access_path;
	else if ((copy = strdup(path)) == NULL) {
		snprintf(err, errlen, "access-log: out of memory");
		return -1;
	}
	if ((fd = access_open(path, err, errlen)) == -1) {
		free(copy);
		return -1;
	}
	if (dup3(fd, access_fd, O_CLOEXEC) == -1) {
		snprintf(err, errlen, "access-log %s: %s", path,
		    strerror(errno));
		rc = -1;
	} else if (copy != NULL) {
		free(access_path);
		access_path = copy;
		copy = NULL;
	}
	free(copy);
	close(fd);
	return rc;
}

int
log_access_file(void)
{
	return atomic_load_explicit(&access_to_file, memory_order_relaxed);
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
