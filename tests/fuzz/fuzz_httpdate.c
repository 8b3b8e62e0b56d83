/*
 * tests/fuzz/fuzz_httpdate.c: fuzz httpdate_parse(), which reads the dates
 * clients send in If-Modified-Since and If-Range (daemon/httpdate.h).
 *
 * The input is one header value.  Besides memory errors the target aborts
 * when a failed parse touched its result, when an accepted date has no
 * valid time of day or a result not at that time, or when a parsed date
 * does not survive the round trip through httpdate_format() and back (for
 * the years 0 to 9999 that the four-digit IMF-fixdate can spell).
 *
 * An input of exactly 8 bytes is also a time_t (little-endian) for
 * httpdate_format(), which file times reach from the disk: whatever the
 * time, its output must be 29 characters of IMF-fixdate syntax.
 */
#include "daemon/httpdate.h"

#include "tests/fuzz/fuzz.h"

/* 0000-01-01T00:00:00Z and 10000-01-01T00:00:00Z, in Unix time. */
#define YEAR0 (-62167219200LL)
#define YEAR10000 253402300800LL

#define SENTINEL ((time_t)0x5a5a5a5a)

/* out has the shape "Sun, 06 Nov 1994 08:49:37 GMT". */
static void
check_shape(const char *out)
{
	static const char shape[] = "Aaa, 00 Aaa 0000 00:00:00 GMT";
	size_t i;

	FUZZ_CHECK(strlen(out) == HTTPDATE_LEN - 1);
	for (i = 0; i < HTTPDATE_LEN - 1; i++) {
		if (shape[i] == '0')
			FUZZ_CHECK(out[i] >= '0' && out[i] <= '9');
		else if (shape[i] == 'A')
			FUZZ_CHECK(out[i] >= 'A' && out[i] <= 'Z');
		else if (shape[i] == 'a')
			FUZZ_CHECK(out[i] >= 'a' && out[i] <= 'z');
		else if (i < 26)
			FUZZ_CHECK(out[i] == shape[i]);
	}
	FUZZ_CHECK(memcmp(out + 25, " GMT", 5) == 0);
}

static int
digit2(const uint8_t *p)
{
	if (p[0] < '0' || p[0] > '9' || p[1] < '0' || p[1] > '9')
		return -1;
	return (p[0] - '0') * 10 + (p[1] - '0');
}

/*
 * A date the parser accepted must have a real time of day, and t must be
 * at that time.  Every format ends with its "HH:MM:SS" and then at most
 * " GMT" or " YYYY", so the clock is the last such pattern (the RFC 850
 * day name, never checked, may hold another one).
 */
static void
check_clock(const uint8_t *s, size_t len, time_t t)
{
	long long day_secs, secs;
	size_t i;
	int h, m, sec;

	for (i = len >= 8 ? len - 8 + 1 : 0; i-- > 0;) {
		if (s[i + 2] != ':' || s[i + 5] != ':' ||
		    (h = digit2(s + i)) < 0 || (m = digit2(s + i + 3)) < 0 ||
		    (sec = digit2(s + i + 6)) < 0)
			continue;
		FUZZ_CHECK(h <= 23 && m <= 59 && sec <= 60);
		day_secs = ((long long)t % 86400 + 86400) % 86400;
		secs = (h * 3600LL + m * 60 + sec) % 86400;
		FUZZ_CHECK(day_secs == secs);
		return;
	}
	FUZZ_CHECK(!"accepted a date without a clock time");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s, out[HTTPDATE_LEN + 8];
	time_t t = SENTINEL, back = SENTINEL;
	uint64_t raw = 0;
	size_t i;
	int rc;

	if ((s = fuzz_copy(data, size)) == NULL)
		return 0;
	rc = httpdate_parse(s, size, &t);
	free(s);
	FUZZ_CHECK(rc == 0 || rc == -1);
	if (rc == -1)
		FUZZ_CHECK(t == SENTINEL);
	else
		check_clock(data, size, t);
	if (rc == 0 && (long long)t >= YEAR0 && (long long)t < YEAR10000) {
		memset(out, 0x5a, sizeof(out));
		httpdate_format(t, out);
		check_shape(out);
		FUZZ_CHECK(httpdate_parse(out, strlen(out), &back) == 0);
		FUZZ_CHECK(back == t);
	}

	if (size != sizeof(raw))
		return 0;
	for (i = 0; i < sizeof(raw); i++)
		raw |= (uint64_t)data[i] << (8 * i);
	memset(out, 0x5a, sizeof(out));
	httpdate_format((time_t)raw, out);
	check_shape(out);
	return 0;
}
