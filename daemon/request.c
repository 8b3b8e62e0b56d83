/*
 * daemon/request.c: the HTTP/1.x request-head parser.
 *
 * Strict where leniency invites smuggling or confusion (no obsolete line
 * folding, no whitespace before a header colon, no control bytes, one
 * consistent Content-Length), lenient where clients differ harmlessly
 * (bare LF line ends, empty lines before the request line, any case in
 * header names).  The whole head is parsed only once its blank line has
 * arrived, so a client trickling bytes costs one scan per read, not a
 * re-parse.
 */
#include "daemon/request.h"

#include <string.h>
#include <strings.h>

/* RFC 9110 token characters. */
static int
is_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9'))
		return 1;
	return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

int
slice_eq_nocase(struct slice sl, const char *s)
{
	size_t n = strlen(s);

	return sl.p != NULL && sl.n == n && strncasecmp(sl.p, s, n) == 0;
}

/* What the header lines said, gathered while they are parsed. */
struct head_state {
	int cl_seen; /* a Content-Length was seen */
	unsigned long long cl; /* its value */
	int conn_close; /* Connection: close */
	int conn_keepalive; /* Connection: keep-alive */
};

/* Find the end of the head: the byte after the blank line, or 0. */
static size_t
head_end(const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len, *nl;

	while ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		p = nl + 1;
		if (p < end && *p == '\n')
			return (size_t)(p + 1 - buf);
		if (p + 1 < end && p[0] == '\r' && p[1] == '\n')
			return (size_t)(p + 2 - buf);
	}
	return 0;
}

/* Next line of [*p, end): sets *line (without CR LF); 0 at the end. */
static int
next_line(const char **p, const char *end, struct slice *line)
{
	const char *nl;

	if (*p >= end)
		return 0;
	nl = memchr(*p, '\n', (size_t)(end - *p));
	if (nl == NULL)
		return 0;
	line->p = *p;
	line->n = (size_t)(nl - *p);
	if (line->n > 0 && line->p[line->n - 1] == '\r')
		line->n--;
	*p = nl + 1;
	return 1;
}

static int
parse_request_line(struct request *req, struct slice line, const char **why)
{
	const char *p = line.p, *end = line.p + line.n, *sp;
	size_t i;

	sp = memchr(p, ' ', line.n);
	if (sp == NULL || sp == p) {
		*why = "malformed request line";
		return 400;
	}
	req->method_name.p = p;
	req->method_name.n = (size_t)(sp - p);
	for (i = 0; i < req->method_name.n; i++)
		if (!is_tchar((unsigned char)p[i])) {
			*why = "malformed method";
			return 400;
		}
	if (req->method_name.n == 3 && memcmp(p, "GET", 3) == 0)
		req->method = METHOD_GET;
	else if (req->method_name.n == 4 && memcmp(p, "HEAD", 4) == 0)
		req->method = METHOD_HEAD;
	else if (req->method_name.n == 4 && memcmp(p, "POST", 4) == 0)
		req->method = METHOD_POST;
	else if (req->method_name.n == 3 && memcmp(p, "PUT", 3) == 0)
		req->method = METHOD_PUT;
	else
		req->method = METHOD_OTHER;

	p = sp + 1;
	sp = memchr(p, ' ', (size_t)(end - p));
	if (sp == NULL || sp == p) {
		*why = "malformed request line";
		return 400;
	}
	req->target.p = p;
	req->target.n = (size_t)(sp - p);
	for (i = 0; i < req->target.n; i++) {
		unsigned char c = (unsigned char)p[i];

		if (c <= 0x20 || c >= 0x7f) {
			*why = "request target has a control, space or "
			       "non-ASCII byte";
			return 400;
		}
	}

	p = sp + 1;
	if (end - p != 8 || memcmp(p, "HTTP/", 5) != 0 || p[6] != '.' ||
	    p[5] < '0' || p[5] > '9' || p[7] < '0' || p[7] > '9') {
		*why = "malformed HTTP version";
		return 400;
	}
	if (p[5] != '1') {
		*why = "only HTTP/1.0 and HTTP/1.1 are supported";
		return 505;
	}
	req->minor = p[7] - '0';
	req->keepalive = req->minor >= 1;
	return REQUEST_OK;
}

/* Note the Connection header's tokens; "close" wins, whatever the order. */
static void
parse_connection(struct head_state *st, struct slice v)
{
	const char *p = v.p, *end = v.p + v.n, *tok;
	struct slice t;

	while (p < end) {
		while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
			p++;
		tok = p;
		while (p < end && *p != ',' && *p != ' ' && *p != '\t')
			p++;
		t.p = tok;
		t.n = (size_t)(p - tok);
		if (slice_eq_nocase(t, "close"))
			st->conn_close = 1;
		else if (slice_eq_nocase(t, "keep-alive"))
			st->conn_keepalive = 1;
	}
}

static int
parse_content_length(struct request *req, struct slice v, struct head_state *st,
    const char **why)
{
	unsigned long long n = 0;
	size_t i;

	if (v.n == 0 || v.n > 19) {
		*why = "bad Content-Length";
		return 400;
	}
	for (i = 0; i < v.n; i++) {
		if (v.p[i] < '0' || v.p[i] > '9') {
			*why = "bad Content-Length";
			return 400;
		}
		n = n * 10 + (unsigned long long)(v.p[i] - '0');
	}
	if (st->cl_seen && n != st->cl) {
		*why = "conflicting Content-Length headers";
		return 400;
	}
	st->cl_seen = 1;
	st->cl = n;
	req->content_length = n;
	if (n > 0)
		req->has_body = 1;
	return REQUEST_OK;
}

/* The request headers the server keeps, by name. */
static struct slice *
header_slot(struct request *req, struct slice name)
{
	static const struct {
		const char *name;
		size_t off;
	} known[] = {
		{ "range", offsetof(struct request, range) },
		{ "if-range", offsetof(struct request, if_range) },
		{ "if-none-match", offsetof(struct request, if_none_match) },
		{ "if-modified-since",
		    offsetof(struct request, if_modified_since) },
		{ "x-debuginfod-maxsize", offsetof(struct request, maxsize) },
		{ "user-agent", offsetof(struct request, user_agent) },
		{ "referer", offsetof(struct request, referer) },
		{ "x-forwarded-for", offsetof(struct request, forwarded_for) },
		{ "via", offsetof(struct request, via) },
		{ "authorization", offsetof(struct request, authorization) },
		{ "accept", offsetof(struct request, accept) },
	};
	size_t i;

	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (slice_eq_nocase(name, known[i].name))
			return (struct slice *)((char *)req + known[i].off);
	return NULL;
}

static int
parse_header(struct request *req, struct slice line, struct head_state *st,
    const char **why)
{
	const char *p = line.p, *end = line.p + line.n, *colon;
	struct slice name, value, *slot;
	size_t i;

	if (line.n > 0 && (line.p[0] == ' ' || line.p[0] == '\t')) {
		*why = "obsolete header line folding";
		return 400;
	}
	colon = memchr(p, ':', line.n);
	if (colon == NULL || colon == p) {
		*why = "malformed header line";
		return 400;
	}
	name.p = p;
	name.n = (size_t)(colon - p);
	for (i = 0; i < name.n; i++)
		if (!is_tchar((unsigned char)p[i])) {
			*why = "malformed header name";
			return 400;
		}
	p = colon + 1;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	value.p = p;
	value.n = (size_t)(end - p);
	for (i = 0; i < value.n; i++) {
		unsigned char c = (unsigned char)value.p[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f) {
			*why = "control byte in a header value";
			return 400;
		}
	}

	if (slice_eq_nocase(name, "connection"))
		parse_connection(st, value);
	else if (slice_eq_nocase(name, "content-length"))
		return parse_content_length(req, value, st, why);
	else if (slice_eq_nocase(name, "transfer-encoding"))
		req->has_body = req->chunked = 1;
	else if (slice_eq_nocase(name, "expect"))
		req->expect_continue = slice_eq_nocase(value, "100-continue");
	else if ((slot = header_slot(req, name)) != NULL)
		*slot = value;
	return REQUEST_OK;
}

int
request_parse(struct request *req, const char *buf, size_t len, size_t max_head,
    const char **why)
{
	const char *p = buf, *end;
	struct slice line;
	struct head_state st = { 0 };
	int rc;
	size_t hlen, lim, skip = 0, nheaders = 0;

	memset(req, 0, sizeof(*req));
	/* Empty lines before the request line are allowed (RFC 9112 2.2). */
	lim = len < max_head ? len : max_head;
	while (skip < lim && (buf[skip] == '\r' || buf[skip] == '\n'))
		skip++;
	hlen = head_end(buf + skip, lim - skip);
	if (hlen == 0) {
		if (len < max_head)
			return REQUEST_INCOMPLETE;
		if (memchr(buf + skip, '\n', max_head - skip) == NULL) {
			*why = "request line too long";
			return 414;
		}
		*why = "request header fields too large";
		return 431;
	}
	p = buf + skip;
	end = p + hlen;
	req->head_len = skip + hlen;
	next_line(&p, end, &line);
	if ((rc = parse_request_line(req, line, why)) != REQUEST_OK)
		return rc;

	while (next_line(&p, end, &line) && line.n > 0) {
		if (++nheaders > REQUEST_MAX_HEADERS) {
			*why = "too many header fields";
			return 431;
		}
		rc = parse_header(req, line, &st, why);
		if (rc != REQUEST_OK)
			return rc;
	}
	if (st.conn_close)
		req->keepalive = 0;
	else if (st.conn_keepalive)
		req->keepalive = 1;
	return REQUEST_OK;
}
