/*
 * fetchers/headers.c: read the head of an upstream's answer line by line.
 *
 * libcurl calls its header function once per line, for the head of every
 * answer of a transfer: the interim ones (100 Continue), each redirect,
 * then the final answer.  So a status line starts everything over.  Lines
 * are taken as bytes with a length, never as C strings.
 *
 * X-DEBUGINFOD-FILE, -ARCHIVE and -IMASIGNATURE are the values the server
 * interprets (REFERENCE: the file, its package, its IMA signature); any
 * other X-DEBUGINFOD-* line is relayed as it came, as debuginfod does.
 */
#include "fetchers/headers.h"

#include <string.h>
#include <strings.h>

void
headers_reset(struct headers *h)
{
	h->code = 0;
	h->range_start = -1;
	h->date[0] = '\0';
	h->file[0] = h->archive[0] = h->imasig[0] = '\0';
	h->keeplen = 0;
	h->kept = 0;
	h->date_meta = 0;
}

/*
 * The status of a status line of n bytes, "HTTP/<version> <three digits>"
 * and then a space or the line's end; 0 when it is not spelt so.
 */
static int
status_code(const char *p, size_t n)
{
	const char *sp = memchr(p, ' ', n), *end = p + n;
	int code = 0, i;

	if (sp == NULL || end - sp < 4)
		return 0;
	for (i = 1; i <= 3; i++) {
		if (sp[i] < '0' || sp[i] > '9')
			return 0;
		code = code * 10 + (sp[i] - '0');
	}
	if (sp + 4 < end && sp[4] != ' ' && sp[4] != '\r' && sp[4] != '\n')
		return 0;
	return code >= 100 ? code : 0;
}

/*
 * The first byte a Content-Range value of n bytes at p announces,
 * " bytes N-...", or -1 when it does not spell one (as "bytes *" and a
 * length, which only says how long the file is, does not).
 */
static int64_t
range_first(const char *p, size_t n)
{
	const char *end = p + n;
	int64_t v = 0;

	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (end - p < 6 || strncasecmp(p, "bytes ", 6) != 0)
		return -1;
	for (p += 6; p < end && *p == ' '; p++)
		;
	if (p == end || *p < '0' || *p > '9')
		return -1;
	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		if (v > (INT64_MAX - (*p - '0')) / 10)
			return -1;
		v = v * 10 + (*p - '0');
	}
	return p < end && *p == '-' ? v : -1;
}

/*
 * 1 for a byte of a token (RFC 9110 5.6.2): printable ASCII but the
 * delimiters.
 */
static int
is_token_byte(unsigned char c)
{
	return c > 0x20 && c < 0x7f && strchr("\"(),/:;<=>?@[\\]{}", c) == NULL;
}

/* The value h keeps of the header name[0..len), or NULL for a line. */
static char *
field_of(struct headers *h, const char *name, size_t len)
{
	if (len == 17 && strncasecmp(name, "x-debuginfod-file", len) == 0)
		return h->file;
	if (len == 20 && strncasecmp(name, "x-debuginfod-archive", len) == 0)
		return h->archive;
	if (len == 25 &&
	    strncasecmp(name, "x-debuginfod-imasignature", len) == 0)
		return h->imasig;
	return NULL;
}

/*
 * Take an X-DEBUGINFOD-* line when it may be replayed as it is: a token
 * before the colon, so that our answer stays well-formed, and no control
 * or 8-bit byte after it.  The first of a field the server interprets
 * goes to its value, any other line to h->keep.
 */
static void
keep_header(struct headers *h, const char *line, size_t n, int upper)
{
	static const char prefix[] = "x-debuginfod-";
	const char *colon, *v, *end;
	char *field;
	size_t name, i;

	while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		n--;
	if ((colon = memchr(line, ':', n)) == NULL)
		return;
	name = (size_t)(colon - line);
	if (name < sizeof(prefix) - 1 ||
	    strncasecmp(line, prefix, sizeof(prefix) - 1) != 0)
		return;
	/* Our own X-DEBUGINFOD-SIZE is sent from the bytes we have. */
	if (name == 17 && strncasecmp(line, "x-debuginfod-size", 17) == 0)
		return;
	for (i = 0; i < name; i++)
		if (!is_token_byte((unsigned char)line[i]))
			return;
	for (i = name + 1; i < n; i++)
		if (((unsigned char)line[i] < 0x20 && line[i] != '\t') ||
		    (unsigned char)line[i] >= 0x7f)
			return;
	if (h->kept + n + 2 > UPSTREAM_HEADERS_MAX)
		return;
	h->kept += n + 2;
	if ((field = field_of(h, line, name)) != NULL && field[0] == '\0') {
		for (v = colon + 1; v < line + n && (*v == ' ' || *v == '\t');
		     v++)
			;
		for (end = line + n;
		     end > v && (end[-1] == ' ' || end[-1] == '\t'); end--)
			;
		memcpy(field, v, (size_t)(end - v));
		field[end - v] = '\0';
		return;
	}
	memcpy(h->keep + h->keeplen, line, n);
	for (i = 0; upper && i < name; i++)
		if (h->keep[h->keeplen + i] >= 'a' &&
		    h->keep[h->keeplen + i] <= 'z')
			h->keep[h->keeplen + i] -= 'a' - 'A';
	memcpy(h->keep + h->keeplen + n, "\r\n", 2);
	h->keeplen += n + 2;
}

/* A Last-Modified value of n bytes at p; "" when it does not fit. */
static void
keep_date(struct headers *h, const char *p, size_t n)
{
	if (n < sizeof(h->date)) {
		memcpy(h->date, p, n);
		h->date[n] = '\0';
		h->date[strcspn(h->date, "\r\n")] = '\0';
	} else {
		h->date[0] = '\0';
	}
}

enum headers_line
headers_line(struct headers *h, const char *p, size_t n, const char **value,
    size_t *vlen)
{
	if (n >= 5 && strncmp(p, "HTTP/", 5) == 0) {
		headers_reset(h);
		h->code = status_code(p, n);
		return HEADERS_STATUS;
	}
	if (h->code >= 300 && h->code < 400 && n > 9 &&
	    strncasecmp(p, "location:", 9) == 0) {
		*value = p + 9;
		*vlen = n - 9;
		return HEADERS_LOCATION;
	}
	if (h->amz_meta && n > 11 && strncasecmp(p, "x-amz-meta-", 11) == 0) {
		/* Metadata this server wrote with the object. */
		p += 11;
		n -= 11;
		if (n > 14 && strncasecmp(p, "last-modified:", 14) == 0) {
			keep_date(h, p + 14, n - 14);
			h->date_meta = 1;
		} else {
			keep_header(h, p, n, 1);
		}
		return HEADERS_FIELD;
	}
	if (n > 14 && strncasecmp(p, "last-modified:", 14) == 0) {
		if (!h->date_meta)
			keep_date(h, p + 14, n - 14);
	} else if (n > 14 && strncasecmp(p, "content-range:", 14) == 0) {
		h->range_start = range_first(p + 14, n - 14);
	}
	if (!h->amz_meta)
		keep_header(h, p, n, 0);
	return HEADERS_FIELD;
}

/* Append "name: value\r\n" at *len when it fits in cap; *len grows anyway. */
static void
put_line(char *buf, size_t cap, size_t *len, const char *name,
    const char *value)
{
	size_t n = strlen(name), v = strlen(value);

	if (buf != NULL && *len + n + v + 4 <= cap) {
		memcpy(buf + *len, name, n);
		memcpy(buf + *len + n, ": ", 2);
		memcpy(buf + *len + n + 2, value, v);
		memcpy(buf + *len + n + 2 + v, "\r\n", 2);
	}
	*len += n + v + 4;
}

size_t
headers_format(char *buf, size_t cap, const char *file, const char *archive,
    const char *imasig, const char *extra, size_t extra_len)
{
	size_t len = 0;

	if (file != NULL && file[0] != '\0')
		put_line(buf, cap, &len, "X-DEBUGINFOD-FILE", file);
	if (archive != NULL && archive[0] != '\0')
		put_line(buf, cap, &len, "X-DEBUGINFOD-ARCHIVE", archive);
	if (imasig != NULL && imasig[0] != '\0')
		put_line(buf, cap, &len, "X-DEBUGINFOD-IMASIGNATURE", imasig);
	if (extra != NULL && buf != NULL && len + extra_len <= cap)
		memcpy(buf + len, extra, extra_len);
	return len + (extra != NULL ? extra_len : 0);
}
