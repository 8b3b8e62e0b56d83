/*
 * tests/unit/test_logline.c: daemon/log.c's access-log lines, built
 * without printf, against what snprintf makes of the same values; and
 * the per-thread buffer they go to (written out when a line does not
 * fit, a line longer than the buffer cut with a newline at its end),
 * read back from an access-log file of the test's own.
 */
#include "daemon/log.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "tests/testdir.h"

/* l's text, as a string. */
static const char *
text(const struct logline *l)
{
	static char s[sizeof(l->buf) + 1];

	memcpy(s, l->buf, l->len);
	s[l->len] = '\0';
	return s;
}

static void
test_numbers(void)
{
	static const long long ints[] = { 0, 7, -1, 200, 404, LLONG_MAX,
		LLONG_MIN };
	static const uint64_t us[] = { 0, 1, 40, 999, 1000, 1001, 79500,
		123456789, 86400000000ULL };
	struct logline l;
	char want[64];
	size_t i;

	for (i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		l.len = 0;
		logline_int(&l, ints[i]);
		snprintf(want, sizeof(want), "%lld", ints[i]);
		is_str(text(&l), want, "logline_int as %lld");
	}
	l.len = 0;
	logline_uint(&l, ULLONG_MAX);
	snprintf(want, sizeof(want), "%llu", ULLONG_MAX);
	is_str(text(&l), want, "logline_uint as %llu");
	for (i = 0; i < sizeof(us) / sizeof(us[0]); i++) {
		l.len = 0;
		logline_fixed(&l, us[i], 1000);
		snprintf(want, sizeof(want), "%llu.%03llu",
		    (unsigned long long)(us[i] / 1000),
		    (unsigned long long)(us[i] % 1000));
		is_str(text(&l), want, "logline_fixed: microseconds as ms");
		l.len = 0;
		logline_fixed(&l, us[i], 1000000);
		snprintf(want, sizeof(want), "%.6f", (double)us[i] / 1e6);
		is_str(text(&l), want, "... and as seconds, as %.6f");
	}
}

/* The access-log file's text after lines went through one buffer. */
static void
test_buffer(void)
{
	static struct logbuf lb;
	static struct logline l;
	char err[256], *long_line;
	const char *path = at("access.log");
	uint8_t *got;
	size_t len, i, n;

	if (log_access_open(path, err, sizeof(err)) == -1) {
		printf("# %s\n", err);
		ok(0, "an access-log file of the test's own");
		return;
	}
	l.len = 0;
	logline_str(&l, "first line\n");
	logbuf_line(&lb, &l);
	is_int(lb.len, 11, "a line is kept in the buffer");
	/* Lines until the next one would not fit: the buffer goes out first. */
	n = (LOGBUF_SIZE - 11) / 100;
	memset(l.buf, 'a', 99);
	l.buf[99] = '\n';
	l.len = 100;
	for (i = 0; i < n; i++)
		logbuf_line(&lb, &l);
	is_int(lb.len, 11 + n * 100, "lines up to the buffer's size stay");
	logbuf_line(&lb, &l);
	is_int(lb.len, 100, "the one that does not fit goes after a flush");
	logbuf_flush(&lb);
	got = slurp(path, &len);
	ok(got != NULL && len == 11 + (n + 1) * 100 &&
		memcmp(got, "first line\n", 11) == 0 && got[len - 1] == '\n',
	    "every line in the file, whole, in order");
	free(got);

	/* A line longer than the buffer: cut, a newline at its end. */
	if ((long_line = malloc(2 * LOGBUF_SIZE)) == NULL)
		return;
	memset(long_line, 'b', 2 * LOGBUF_SIZE);
	l.len = 0;
	logline_str(&l, "x\n");
	logbuf_line(&lb, &l);
	l.len = 0;
	logline_put(&l, long_line, 2 * LOGBUF_SIZE);
	is_int(l.len, LOGBUF_SIZE - 1, "a line is cut at the buffer's size");
	logline_put(&l, "more", 4);
	is_int(l.len, LOGBUF_SIZE - 1, "... and nothing goes past it");
	logbuf_line(&lb, &l);
	is_int(lb.len, LOGBUF_SIZE - 1, "... alone in the buffer");
	ok(lb.buf[lb.len - 1] == '\n' && lb.buf[lb.len - 2] == 'b',
	    "... ending with a newline");
	logbuf_flush(&lb);
	got = slurp(path, &len);
	ok(got != NULL && len == 11 + (n + 1) * 100 + 2 + LOGBUF_SIZE - 1 &&
		got[len - 1] == '\n',
	    "the short line before it went out first");
	free(got);
	free(long_line);
}

int
main(void)
{
	if (testdir_make("test_logline") == -1) {
		perror("testdir_make");
		return 1;
	}
	test_numbers();
	test_buffer();
	testdir_remove();
	return tap_done();
}
