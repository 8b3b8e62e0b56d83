/*
 * daemon/response.c: status decisions for artifacts and response heads.
 *
 * The order of checks follows RFC 9110 section 13.2.2: If-None-Match, else
 * If-Modified-Since (a 304 sends no body, so it comes before everything
 * about the body), then X-DEBUGINFOD-MAXSIZE against the whole artifact
 * (decided before a single body byte), then Range guarded by If-Range.
 * If-Match and If-Unmodified-Since are not supported and are ignored, as
 * for a resource without a current representation to protect.
 */
#include "daemon/response.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "autoconf.h"
#include "daemon/httpdate.h"
#include "fetchers/headers.h"

const char *
response_reason(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 201:
		return "Created";
	case 206:
		return "Partial Content";
	case 304:
		return "Not Modified";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 406:
		return "Not Acceptable";
	case 408:
		return "Request Timeout";
	case 409:
		return "Conflict";
	case 411:
		return "Length Required";
	case 413:
		return "Content Too Large";
	case 414:
		return "URI Too Long";
	case 416:
		return "Range Not Satisfiable";
	case 431:
		return "Request Header Fields Too Large";
	case 500:
		return "Internal Server Error";
	case 502:
		return "Bad Gateway";
	case 503:
		return "Service Unavailable";
	case 505:
		return "HTTP Version Not Supported";
	case 507:
		return "Insufficient Storage";
	}
	return "Unknown";
}

/*
 * v in base 10 or 16 (lower case) as printf's %llu and %llx write it, at
 * p; past its last digit.  The head of every hit has several, written
 * without printf.
 */
static char *
put_num(char *p, uint64_t v, unsigned base)
{
	char d[20];
	size_t n = 0;

	do {
		d[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v != 0);
	while (n > 0)
		*p++ = d[--n];
	return p;
}

/*
 * "SIZE-MTIME" or "SIZE-MTIME-OFFSET" in hex, quoted: written by hand, as
 * every hit's answer makes one (at most 53 bytes of art->etag's 64).
 */
void
response_etag(struct artifact *art, uint64_t size, int64_t mtime_ns,
    uint64_t offset)
{
	char *p = art->etag;

	*p++ = '"';
	p = put_num(p, size, 16);
	*p++ = '-';
	p = put_num(p, (uint64_t)mtime_ns, 16);
	if (offset != 0) {
		*p++ = '-';
		p = put_num(p, offset, 16);
	}
	*p++ = '"';
	*p = '\0';
}

/* Does the If-None-Match list contain our tag (weak comparison)? */
static int
etag_list_matches(struct slice list, const char *etag)
{
	const char *p = list.p, *end = list.p + list.n, *tag;
	size_t n = strlen(etag);

	while (p < end) {
		while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
			p++;
		if (p < end && *p == '*')
			return 1;
		if (end - p >= 2 && p[0] == 'W' && p[1] == '/')
			p += 2;
		tag = p;
		if (p < end && *p == '"') {
			p++;
			while (p < end && *p != '"')
				p++;
			if (p < end)
				p++;
		} else {
			while (p < end && *p != ',')
				p++;
		}
		if ((size_t)(p - tag) == n && memcmp(tag, etag, n) == 0)
			return 1;
	}
	return 0;
}

/* Parse a decimal uint64; -1 on anything else or overflow. */
static int
parse_u64(const char *p, const char *end, uint64_t *v)
{
	uint64_t n = 0;

	if (p == end)
		return -1;
	for (; p < end; p++) {
		uint64_t d = (uint64_t)(*p - '0');

		if (*p < '0' || *p > '9' || n > (UINT64_MAX - d) / 10)
			return -1;
		n = n * 10 + d;
	}
	*v = n;
	return 0;
}

uint64_t
response_maxsize(const struct request *req)
{
	uint64_t max;

	if (req->maxsize.p == NULL ||
	    parse_u64(req->maxsize.p, req->maxsize.p + req->maxsize.n, &max) ==
		-1)
		return 0;
	return max;
}

/*
 * One byte range "bytes=a-b", "bytes=a-" or "bytes=-n".  Returns 1 with
 * the range, 0 to ignore the header (another unit, several ranges, bad
 * syntax), -1 when it cannot be satisfied.
 */
static int
parse_range(struct slice r, uint64_t size, uint64_t *off, uint64_t *len)
{
	const char *p = r.p, *end = r.p + r.n, *dash;
	uint64_t a, b;

	if (r.n < 6 || strncasecmp(p, "bytes=", 6) != 0)
		return 0;
	p += 6;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	if (memchr(p, ',', (size_t)(end - p)) != NULL)
		return 0;
	if ((dash = memchr(p, '-', (size_t)(end - p))) == NULL)
		return 0;
	if (dash == p) {
		/* Suffix: the last b bytes. */
		if (parse_u64(dash + 1, end, &b) == -1)
			return 0;
		if (b == 0 || size == 0)
			return -1;
		if (b > size)
			b = size;
		*off = size - b;
		*len = b;
		return 1;
	}
	if (parse_u64(p, dash, &a) == -1)
		return 0;
	if (dash + 1 == end) {
		b = size == 0 ? 0 : size - 1;
	} else if (parse_u64(dash + 1, end, &b) == -1 || b < a) {
		return 0;
	}
	if (a >= size)
		return -1;
	if (b >= size)
		b = size - 1;
	*off = a;
	*len = b - a + 1;
	return 1;
}

/* If-Range: does the validator still describe our bytes? */
static int
if_range_holds(struct slice v, const struct artifact *art)
{
	time_t t;

	if (v.n > 0 && v.p[0] == '"')
		return v.n == strlen(art->etag) &&
		    memcmp(v.p, art->etag, v.n) == 0;
	return httpdate_parse(v.p, v.n, &t) == 0 && t == art->mtime;
}

void
response_plan(const struct request *req, const struct artifact *art,
    struct plan *plan)
{
	uint64_t max, off, len;
	time_t since;
	int rc;

	plan->status = 200;
	plan->offset = 0;
	plan->length = art->size;
	plan->why = NULL;

	if (req->if_none_match.p != NULL) {
		if (etag_list_matches(req->if_none_match, art->etag)) {
			plan->status = 304;
			plan->length = 0;
			return;
		}
	} else if (req->if_modified_since.p != NULL &&
	    httpdate_parse(req->if_modified_since.p, req->if_modified_since.n,
		&since) == 0 &&
	    art->mtime <= since) {
		plan->status = 304;
		plan->length = 0;
		return;
	}

	if ((max = response_maxsize(req)) > 0 && art->size > max) {
		plan->status = 406;
		plan->length = 0;
		plan->why = RESPONSE_TOOBIG;
		return;
	}

	if (req->range.p == NULL ||
	    (req->if_range.p != NULL && !if_range_holds(req->if_range, art)))
		return;
	rc = parse_range(req->range, art->size, &off, &len);
	if (rc == 1) {
		plan->status = 206;
		plan->offset = off;
		plan->length = len;
	} else if (rc == -1) {
		plan->status = 416;
		plan->length = 0;
		plan->why = "range not satisfiable";
	}
}

static void
hbuf_append(struct hbuf *hb, const char *s, size_t n)
{
	if (hb->overflow || n > hb->cap - hb->len) {
		hb->overflow = 1;
		return;
	}
	memcpy(hb->buf + hb->len, s, n);
	hb->len += n;
}

static void
hbuf_str(struct hbuf *hb, const char *s)
{
	hbuf_append(hb, s, strlen(s));
}

void
hbuf_start(struct hbuf *hb, char *buf, size_t cap, int status, const char *date)
{
	char code[4] = { (char)('0' + status / 100 % 10),
		(char)('0' + status / 10 % 10), (char)('0' + status % 10),
		' ' };

	hb->buf = buf;
	hb->cap = cap;
	hb->len = 0;
	hb->overflow = 0;
	/* Every status this server sends has three digits. */
	hbuf_append(hb, "HTTP/1.1 ", 9);
	hbuf_append(hb, code, sizeof(code));
	hbuf_str(hb, response_reason(status));
	hbuf_append(hb, "\r\n", 2);
	hbuf_header(hb, "Date", date);
	hbuf_header(hb, "Server", PACKAGE_NAME "/" PACKAGE_VERSION);
}

void
hbuf_header(struct hbuf *hb, const char *name, const char *value)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *v = (const unsigned char *)value;
	char esc[3] = { '%' };
	size_t n;

	hbuf_str(hb, name);
	hbuf_append(hb, ": ", 2);
	for (;;) {
		/* The bytes that go as they are, at once; then one escaped. */
		for (n = 0; v[n] >= 0x20 && v[n] != 0x7f && v[n] != '%'; n++)
			;
		hbuf_append(hb, (const char *)v, n);
		v += n;
		if (*v == '\0')
			break;
		esc[1] = hex[*v >> 4];
		esc[2] = hex[*v & 0xf];
		hbuf_append(hb, esc, 3);
		v++;
	}
	hbuf_append(hb, "\r\n", 2);
}

/* The lines of meta (fetchers/headers.h), as they are: checked by whoever
 * took them. */
static void
hbuf_meta(struct hbuf *hb, const struct cache_meta *m)
{
	size_t n = response_meta_len(m);

	if (hb->overflow || n > hb->cap - hb->len) {
		hb->overflow = 1;
		return;
	}
	headers_format(hb->buf + hb->len, n, m->file, m->archive, m->imasig,
	    m->extra, m->extra_len);
	hb->len += n;
}

size_t
response_meta_len(const struct cache_meta *m)
{
	return headers_format(NULL, 0, m->file, m->archive, m->imasig, m->extra,
	    m->extra_len);
}

void
hbuf_header_u64(struct hbuf *hb, const char *name, uint64_t value)
{
	char num[24];

	*put_num(num, value, 10) = '\0';
	hbuf_header(hb, name, num);
}

void
hbuf_end(struct hbuf *hb, int keepalive, int http10)
{
	if (!keepalive)
		hbuf_header(hb, "Connection", "close");
	else if (http10)
		hbuf_header(hb, "Connection", "keep-alive");
	hbuf_append(hb, "\r\n", 2);
}

void
response_artifact_head(struct hbuf *hb, const struct plan *plan,
    const struct artifact *art)
{
	char lm[HTTPDATE_LEN], cr[80];

	httpdate_format(art->mtime, lm);
	if (plan->status == 206) {
		snprintf(cr, sizeof(cr),
		    "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, plan->offset,
		    plan->offset + plan->length - 1, art->size);
		hbuf_header(hb, "Content-Range", cr);
	} else if (plan->status == 416) {
		snprintf(cr, sizeof(cr), "bytes */%" PRIu64, art->size);
		hbuf_header(hb, "Content-Range", cr);
	}
	if (plan->why != NULL) {
		/* An error: a one-line text body saying why. */
		hbuf_header(hb, "Content-Type", "text/plain");
		hbuf_header_u64(hb, "Content-Length", strlen(plan->why) + 1);
	} else if (plan->status != 304) {
		hbuf_header(hb, "Content-Type", "application/octet-stream");
		hbuf_header_u64(hb, "Content-Length", plan->length);
	}
	hbuf_header_u64(hb, "X-DEBUGINFOD-SIZE", art->size);
	if (art->file != NULL)
		hbuf_header(hb, "X-DEBUGINFOD-FILE", art->file);
	if (art->archive != NULL)
		hbuf_header(hb, "X-DEBUGINFOD-ARCHIVE", art->archive);
	if (art->meta != NULL)
		hbuf_meta(hb, art->meta);
	hbuf_header(hb, "Last-Modified", lm);
	hbuf_header(hb, "ETag", art->etag);
	hbuf_header(hb, "Accept-Ranges", "bytes");
	/* 406 depends on a request header: no shared cache may keep it. */
	if (plan->why == NULL && art->max_age > 0) {
		memcpy(cr, "public, max-age=", 16);
		*put_num(cr + 16, art->max_age, 10) = '\0';
		hbuf_header(hb, "Cache-Control", cr);
	} else if (plan->why == NULL) {
		hbuf_header(hb, "Cache-Control", "public");
	}
	if (art->cache != NULL)
		hbuf_header(hb, "X-Cache", art->cache);
}
