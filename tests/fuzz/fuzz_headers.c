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
 * without its NUL; kept text over UPSTREAM_HEADERS_MAX, or other than
 * lines "Name: value\r\n" where the name is an X-DEBUGINFOD-* token other
 * than X-DEBUGINFOD-SIZE and the value printable ASCII or tabs; or a kept
 * line that is not the line just read.
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

/* Check every line of the kept text. */
static void
check_kept(const char *p, size_t len)
{
	static const char prefix[] = "x-debuginfod-";
	const char *end = p + len, *colon, *crlf;

	FUZZ_CHECK(len <= UPSTREAM_HEADERS_MAX);
	while (p < end) {
		crlf = memchr(p, '\r', (size_t)(end - p));
		FUZZ_CHECK(crlf != NULL && crlf + 1 < end && crlf[1] == '\n');
		colon = memchr(p, ':', (size_t)(crlf - p));
		FUZZ_CHECK(colon != NULL);
		FUZZ_CHECK((size_t)(colon - p) >= sizeof(prefix) - 1 &&
		    strncasecmp(p, prefix, sizeof(prefix) - 1) == 0);
		FUZZ_CHECK(!((size_t)(colon - p) == 17 &&
		    strncasecmp(p, "x-debuginfod-size", 17) == 0));
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
		FUZZ_CHECK(h->keeplen == 0 && h->date[0] == '\0' &&
		    h->range_start == -1);
	if (rc == HEADERS_LOCATION) {
		FUZZ_CHECK(h->code >= 300 && h->code < 400);
		FUZZ_CHECK(value == line + 9 && vlen == n - 9);
	}
	FUZZ_CHECK(h->range_start >= -1);
	FUZZ_CHECK(memchr(h->date, '\0', sizeof(h->date)) != NULL);
	FUZZ_CHECK(strpbrk(h->date, "\r\n") == NULL);
	check_kept(h->keep, h->keeplen);
	if (rc != HEADERS_FIELD || h->keeplen == before)
		return;
	/* What was added is this line, its own line end replaced. */
	kept = h->keeplen - before;
	FUZZ_CHECK(kept >= 2 && kept - 2 <= n);
	FUZZ_CHECK(memcmp(h->keep + before, line, kept - 2) == 0);
	for (; kept - 2 < n; kept++)
		FUZZ_CHECK(line[kept - 2] == '\r' || line[kept - 2] == '\n');
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
	return 0;
}
