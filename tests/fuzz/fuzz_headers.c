/*
 * tests/fuzz/fuzz_headers.c: fuzz headers_line(), which reads the head of
 * every answer an upstream debuginfod (or whatever it redirects to) sends
 * (fetchers/headers.h).
 *
 * The input is the head of one transfer: it is cut after each "\n" into
 * lines, as libcurl hands them over, and each line is a heap copy of its
 * exact size without a NUL, so that AddressSanitizer sees a read past it.
 *
 * Besides memory errors, the target aborts when, after any line, the state
 * breaks the contract: a status other than 0 or 100 to 999, a range start
 * below -1; a status line
 * that does not start everything over; a Location given outside a 3xx
 * answer or not as the bytes after its colon; a date with its line end or
 * without its NUL; more than UPSTREAM_HEADERS_MAX bytes taken; a value
 * (file, archive, imasig) without its NUL, with a byte other than
 * printable ASCII or tabs, or with a space or tab at either end; kept text
 * other than lines "Name: value\r\n" where the name is an X-DEBUGINFOD-*
 * token other than X-DEBUGINFOD-SIZE (nor a value's name while that value
 * is unset) and the value printable ASCII or tabs; a kept line that is not
 * the line just read; or headers_format() measuring other than it writes,
 * or writing other than such lines.
 */
#include <strings.h>

#include "fetchers/headers.h"

#include "tests/fuzz/fuzz.h"

/* 1 for the bytes a header name (an RFC 9110 token) may have. */
static int
is_tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	    (c >= 'A' && c <= 'Z') || strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Check a value: printable ASCII or tabs, trimmed, with its NUL. */
static void
check_value(const char *v, size_t cap)
{
	size_t n;

	FUZZ_CHECK(memchr(v, '\0', cap) != NULL);
	for (n = 0; v[n] != '\0'; n++)
		FUZZ_CHECK(v[n] == '\t' || (v[n] >= 0x20 && v[n] < 0x7f));
	FUZZ_CHECK(n == 0 ||
	    (v[0] != ' ' && v[0] != '\t' && v[n - 1] != ' ' &&
		v[n - 1] != '\t'));
}

/* 1 when the header name p[0..n) is name. */
static int
named(const char *p, size_t n, const char *name)
{
	return n == strlen(name) && strncasecmp(p, name, n) == 0;
}

/*
 * Check every line of the kept text; h, when not NULL, is the state that
 * kept it: a value's line is kept only when the value is set.
 */
static void
check_kept(const struct headers *h, const char *p, size_t len)
{
	static const char prefix[] = "x-debuginfod-";
	const char *end = p + len, *colon, *crlf;

	while (p < end) {
		crlf = memchr(p, '\r', (size_t)(end - p));
		FUZZ_CHECK(crlf != NULL && crlf + 1 < end && crlf[1] == '\n');
		colon = memchr(p, ':', (size_t)(crlf - p));
		FUZZ_CHECK(colon != NULL);
		FUZZ_CHECK((size_t)(colon - p) >= sizeof(prefix) - 1 &&
		    strncasecmp(p, prefix, sizeof(prefix) - 1) == 0);
		FUZZ_CHECK(!named(p, (size_t)(colon - p), "x-debuginfod-size"));
		if (h != NULL) {
			FUZZ_CHECK(!named(p, (size_t)(colon - p),
				       "x-debuginfod-file") ||
			    h->file[0] != '\0');
			FUZZ_CHECK(!named(p, (size_t)(colon - p),
				       "x-debuginfod-archive") ||
			    h->archive[0] != '\0');
			FUZZ_CHECK(!named(p, (size_t)(colon - p),
				       "x-debuginfod-imasignature") ||
			    h->imasig[0] != '\0');
		}
		for (; p < colon; p++)
			FUZZ_CHECK(is_tchar((unsigned char)*p));
		for (p++; p < crlf; p++)
			FUZZ_CHECK(*p == '\t' || (*p >= 0x20 && *p < 0x7f));
		p = crlf + 2;
	}
}

/* Check h after line (n bytes) gave rc, keep having held before bytes. */
static void
check_line(const struct headers *h, enum headers_line rc, const char *line,
    size_t n, const char *value, size_t vlen, size_t before)
{
	size_t kept;

	FUZZ_CHECK(rc == HEADERS_STATUS || rc == HEADERS_LOCATION ||
	    rc == HEADERS_FIELD);
	FUZZ_CHECK(h->code == 0 || (h->code >= 100 && h->code <= 999));
	FUZZ_CHECK((rc == HEADERS_STATUS) ==
	    (n >= 5 && memcmp(line, "HTTP/", 5) == 0));
	if (rc == HEADERS_STATUS)
		FUZZ_CHECK(h->keeplen == 0 && h->kept == 0 &&
		    h->date[0] == '\0' && h->range_start == -1 &&
		    h->file[0] == '\0' && h->archive[0] == '\0' &&
		    h->imasig[0] == '\0');
	if (rc == HEADERS_LOCATION) {
		FUZZ_CHECK(h->code >= 300 && h->code < 400);
		FUZZ_CHECK(value == line + 9 && vlen == n - 9);
	}
	FUZZ_CHECK(h->range_start >= -1);
	FUZZ_CHECK(memchr(h->date, '\0', sizeof(h->date)) != NULL);
	FUZZ_CHECK(strpbrk(h->date, "\r\n") == NULL);
	FUZZ_CHECK(h->keeplen <= h->kept && h->kept <= UPSTREAM_HEADERS_MAX);
	check_value(h->file, sizeof(h->file));
	check_value(h->archive, sizeof(h->archive));
	check_value(h->imasig, sizeof(h->imasig));
	check_kept(h, h->keep, h->keeplen);
	if (rc != HEADERS_FIELD || h->keeplen == before)
		return;
	/* What was added is this line, its own line end replaced. */
	kept = h->keeplen - before;
	FUZZ_CHECK(kept >= 2 && kept - 2 <= n);
	FUZZ_CHECK(memcmp(h->keep + before, line, kept - 2) == 0);
	for (; kept - 2 < n; kept++)
		FUZZ_CHECK(line[kept - 2] == '\r' || line[kept - 2] == '\n');
}

/* What headers_format writes of h: as long as it measured, lines. */
static void
check_format(const struct headers *h)
{
	size_t n = headers_format(NULL, 0, h->file, h->archive, h->imasig,
	    h->keep, h->keeplen);
	char *buf = malloc(n + 1);

	if (buf == NULL)
		return;
	buf[n] = 'x';
	FUZZ_CHECK(headers_format(buf, n, h->file, h->archive, h->imasig,
		       h->keep, h->keeplen) == n);
	FUZZ_CHECK(buf[n] == 'x');
	check_kept(NULL, buf, n);
	free(buf);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct headers h;
	const uint8_t *nl;
	const char *value;
	enum headers_line rc;
	size_t n, vlen, before;
	char *line;

	headers_reset(&h);
	while (size > 0) {
		nl = memchr(data, '\n', size);
		n = nl != NULL ? (size_t)(nl - data) + 1 : size;
		if ((line = fuzz_copy(data, n)) == NULL)
			return 0;
		value = NULL;
		vlen = 0;
		before = h.keeplen;
		rc = headers_line(&h, line, n, &value, &vlen);
		check_line(&h, rc, line, n, value, vlen, before);
		free(line);
		data += n;
		size -= n;
	}
	check_format(&h);
	return 0;
}
