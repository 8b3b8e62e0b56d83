/*
 * daemon/httpdate.c: format and parse HTTP dates, and format ISO 8601
 * and common log format times, without the C locale machinery (strftime
 * and strptime follow LC_TIME; HTTP does not).
 */
#include "daemon/httpdate.h"

#include <string.h>

#include "daemon/clock.h"

static const char days[7][4] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri",
	"Sat" };
static const char months[12][4] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
	"Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };

/* Two decimal digits of v at p. */
static char *
put2(char *p, int v)
{
	*p++ = (char)('0' + v / 10 % 10);
	*p++ = (char)('0' + v % 10);
	return p;
}

/* An HTTP date spells years 0000 to 9999; times beyond are clamped. */
#define HTTPDATE_MIN (-62167219200LL) /* 0000-01-01T00:00:00Z */
#define HTTPDATE_MAX 253402300799LL /* 9999-12-31T23:59:59Z */

/* t, clamped to those years, in UTC into *tm; its year. */
static int
utc(time_t t, struct tm *tm)
{
	if ((long long)t < HTTPDATE_MIN)
		t = (time_t)HTTPDATE_MIN;
	if ((long long)t > HTTPDATE_MAX)
		t = (time_t)HTTPDATE_MAX;
	gmtime_r(&t, tm);
	return (tm->tm_year + 1900) % 10000;
}

void
httpdate_format(time_t t, char out[HTTPDATE_LEN])
{
	struct tm tm;
	char *p = out;
	int year = utc(t, &tm);

	memcpy(p, days[tm.tm_wday], 3);
	p += 3;
	*p++ = ',';
	*p++ = ' ';
	p = put2(p, tm.tm_mday);
	*p++ = ' ';
	memcpy(p, months[tm.tm_mon], 3);
	p += 3;
	*p++ = ' ';
	p = put2(p, year / 100);
	p = put2(p, year % 100);
	*p++ = ' ';
	p = put2(p, tm.tm_hour);
	*p++ = ':';
	p = put2(p, tm.tm_min);
	*p++ = ':';
	p = put2(p, tm.tm_sec);
	memcpy(p, " GMT", 5);
}

void
httpdate_clf(time_t t, char out[HTTPDATE_CLF_LEN])
{
	struct tm tm;
	char *p = out;
	int year = utc(t, &tm);

	p = put2(p, tm.tm_mday);
	*p++ = '/';
	memcpy(p, months[tm.tm_mon], 3);
	p += 3;
	*p++ = '/';
	p = put2(p, year / 100);
	p = put2(p, year % 100);
	*p++ = ':';
	p = put2(p, tm.tm_hour);
	*p++ = ':';
	p = put2(p, tm.tm_min);
	*p++ = ':';
	p = put2(p, tm.tm_sec);
	memcpy(p, " +0000", 7);
}

static int
month_index(const char *s)
{
	int i;

	for (i = 0; i < 12; i++)
		if (memcmp(s, months[i], 3) == 0)
			return i;
	return -1;
}

/* Read exactly n digits at *p into *v. */
static int
digits(const char **p, const char *end, int n, int *v)
{
	*v = 0;
	if (end - *p < n)
		return -1;
	while (n-- > 0) {
		if (**p < '0' || **p > '9')
			return -1;
		*v = *v * 10 + (*(*p)++ - '0');
	}
	return 0;
}

static int
expect(const char **p, const char *end, const char *s)
{
	size_t n = strlen(s);

	if ((size_t)(end - *p) < n || memcmp(*p, s, n) != 0)
		return -1;
	*p += n;
	return 0;
}

/*
 * RFC 9110 5.6.7: a two-digit year that would be more than 50 years in the
 * future is the most recent past year with the same last two digits.
 */
static int
rfc850_year(int yy)
{
	time_t now = (time_t)clock_now();
	struct tm tm;
	int cur, year;

	gmtime_r(&now, &tm);
	cur = tm.tm_year + 1900;
	year = cur - cur % 100 + yy;
	return year > cur + 50 ? year - 100 : year;
}

/* "HH:MM:SS" */
static int
clock_time(const char **p, const char *end, struct tm *tm)
{
	if (digits(p, end, 2, &tm->tm_hour) == -1 || expect(p, end, ":") ||
	    digits(p, end, 2, &tm->tm_min) == -1 || expect(p, end, ":") ||
	    digits(p, end, 2, &tm->tm_sec) == -1)
		return -1;
	return 0;
}

void
httpdate_iso(time_t t, char out[HTTPDATE_ISO_LEN])
{
	struct tm tm;
	char *p = out;
	int year = utc(t, &tm);

	p = put2(p, year / 100);
	p = put2(p, year % 100);
	*p++ = '-';
	p = put2(p, tm.tm_mon + 1);
	*p++ = '-';
	p = put2(p, tm.tm_mday);
	*p++ = 'T';
	p = put2(p, tm.tm_hour);
	*p++ = ':';
	p = put2(p, tm.tm_min);
	*p++ = ':';
	p = put2(p, tm.tm_sec);
	*p++ = 'Z';
	*p = '\0';
}

int
httpdate_parse(const char *s, size_t len, time_t *t)
{
	const char *p, *end = s + len, *comma;
	struct tm tm;
	char mon[4] = "";
	int year;

	memset(&tm, 0, sizeof(tm));
	comma = memchr(s, ',', len);
	if (comma != NULL && comma - s == 3) {
		/* IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT" */
		p = comma + 1;
		if (expect(&p, end, " ") || digits(&p, end, 2, &tm.tm_mday) ||
		    expect(&p, end, " ") || end - p < 4)
			return -1;
		memcpy(mon, p, 3);
		p += 3;
		if (expect(&p, end, " ") || digits(&p, end, 4, &year) ||
		    expect(&p, end, " ") || clock_time(&p, end, &tm) ||
		    expect(&p, end, " GMT") || p != end)
			return -1;
	} else if (comma != NULL) {
		/* RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT" */
		p = comma + 1;
		if (expect(&p, end, " ") || digits(&p, end, 2, &tm.tm_mday) ||
		    expect(&p, end, "-") || end - p < 4)
			return -1;
		memcpy(mon, p, 3);
		p += 3;
		if (expect(&p, end, "-") || digits(&p, end, 2, &year) ||
		    expect(&p, end, " ") || clock_time(&p, end, &tm) ||
		    expect(&p, end, " GMT") || p != end)
			return -1;
		year = rfc850_year(year);
	} else {
		/* asctime: "Sun Nov  6 08:49:37 1994" */
		if (len != 24)
			return -1;
		p = s + 4;
		memcpy(mon, p, 3);
		p += 4;
		/* The day is two characters, space-padded: " 6" or "16". */
		if (*p == ' ')
			p++;
		if (digits(&p, end, (int)(s + 10 - p), &tm.tm_mday) ||
		    expect(&p, end, " ") || clock_time(&p, end, &tm) ||
		    expect(&p, end, " ") || digits(&p, end, 4, &year) ||
		    p != end)
			return -1;
	}
	if ((tm.tm_mon = month_index(mon)) < 0 || tm.tm_mday < 1 ||
	    tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
	    tm.tm_sec > 60)
		return -1;
	tm.tm_year = year - 1900;
	*t = timegm(&tm);
	return 0;
}
