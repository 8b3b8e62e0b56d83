/*
 * tests/unit/test_request.c: daemon/request.c, the HTTP/1.x request-head
 * parser.
 *
 * Every call parses a heap copy of exactly the bytes under test, so a read
 * past the end of the input is an AddressSanitizer report, not luck.  The
 * cases follow request.h: methods, the request line, versions and
 * keep-alive, the kept headers, Content-Length, line endings, the size and
 * count limits with their statuses, and every syntax error with a reason.
 * A seeded mutation loop ends the run.  No files, no sockets.
 */
#include "daemon/request.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"

#define MAX_HEAD 8192
/* A string literal and its length, NUL bytes included. */
#define LIT(s) s, (sizeof(s) - 1)

/* The last parsed input, kept so slices can be checked against it. */
static char *input;
static size_t input_len;

/* Parse buf[0..len) from a heap copy of exactly len bytes. */
static int
parse_n(struct request *req, const char *buf, size_t len, size_t max_head,
    const char **why)
{
	free(input);
	input = malloc(len > 0 ? len : 1);
	if (input == NULL) {
		perror("malloc");
		exit(1);
	}
	memcpy(input, buf, len);
	input_len = len;
	*why = NULL;
	memset(req, 0xa5, sizeof(*req));
	return request_parse(req, input, len, max_head, why);
}

static int
parse(struct request *req, const char *s, const char **why)
{
	return parse_n(req, s, strlen(s), MAX_HEAD, why);
}

/* The slice equals s exactly and lies within the last input. */
static void
slice_check(struct slice sl, const char *s, const char *file, int line,
    const char *what)
{
	size_t n = strlen(s);
	int good;

	good = sl.p != NULL && sl.p >= input && sl.n <= input_len &&
	    (size_t)(sl.p - input) <= input_len - sl.n && sl.n == n &&
	    memcmp(sl.p, s, n) == 0;
	if (!tap_check(good, file, line, what))
		printf("#   got \"%.*s\", expected \"%s\"\n",
		    sl.p != NULL ? (int)sl.n : 6,
		    sl.p != NULL ? sl.p : "(null)", s);
}

#define slice_is(sl, s, what) slice_check((sl), (s), __FILE__, __LINE__, (what))

/* request_parse(s) returns status, with a reason; line is the caller's. */
static void
check_status_at(int line, const char *s, size_t len, size_t max_head,
    int status, const char *what)
{
	int failed = tap_failed;
	struct request req;
	const char *why;
	char msg[200];

	snprintf(msg, sizeof(msg), "%s: %d", what, status);
	is_int(parse_n(&req, s, len, max_head, &why), status, msg);
	snprintf(msg, sizeof(msg), "%s: says why", what);
	ok(why != NULL && why[0] != '\0', msg);
	if (tap_failed > failed)
		printf("#   case at %s:%d\n", __FILE__, line);
}

#define check_status_n(...) check_status_at(__LINE__, __VA_ARGS__)
#define check_status(s, status, what) \
	check_status_at(__LINE__, (s), strlen(s), MAX_HEAD, (status), (what))

/* request_parse(s) accepts it. */
static void
check_ok(const char *s, const char *what)
{
	struct request req;
	const char *why;

	is_int(parse(&req, s, &why), REQUEST_OK, what);
}

static void
test_minimal_get(void)
{
	static const char s[] = "GET /buildid/ab/debuginfo HTTP/1.1\r\n\r\n";
	struct request req;
	const char *why;

	is_int(parse(&req, s, &why), REQUEST_OK, "minimal GET parses");
	ok(why == NULL, "no reason on success");
	is_int(req.method, METHOD_GET, "GET is METHOD_GET");
	slice_is(req.method_name, "GET", "method name kept");
	ok(req.method_name.p == input, "method name starts the buffer");
	slice_is(req.target, "/buildid/ab/debuginfo", "target slice exact");
	ok(req.target.p == input + 4, "target points into the buffer");
	is_int(req.minor, 1, "HTTP/1.1 minor is 1");
	is_int(req.keepalive, 1, "HTTP/1.1 keeps alive by default");
	is_int(req.has_body, 0, "no body");
	is_int(req.head_len, strlen(s), "head_len is the whole head");
	ok(req.range.p == NULL && req.if_range.p == NULL &&
		req.if_none_match.p == NULL &&
		req.if_modified_since.p == NULL && req.maxsize.p == NULL &&
		req.user_agent.p == NULL && req.forwarded_for.p == NULL,
	    "absent headers have NULL slices");
}

static void
test_methods(void)
{
	struct request req;
	const char *why;

	is_int(parse(&req, "HEAD / HTTP/1.1\r\n\r\n", &why), REQUEST_OK,
	    "HEAD parses");
	is_int(req.method, METHOD_HEAD, "HEAD is METHOD_HEAD");
	slice_is(req.method_name, "HEAD", "HEAD name kept");

	is_int(parse(&req, "POST /x HTTP/1.1\r\n\r\n", &why), REQUEST_OK,
	    "POST parses");
	is_int(req.method, METHOD_POST, "POST is METHOD_POST");
	slice_is(req.method_name, "POST", "POST name kept");
	slice_is(req.target, "/x", "POST target kept");

	is_int(parse(&req, "M-SEARCH * HTTP/1.1\r\n\r\n", &why), REQUEST_OK,
	    "a method with token punctuation parses");
	is_int(req.method, METHOD_OTHER, "M-SEARCH is METHOD_OTHER");
	slice_is(req.method_name, "M-SEARCH", "M-SEARCH name kept");
	slice_is(req.target, "*", "asterisk-form target kept");

	/* Methods are case-sensitive (RFC 9110 9.1). */
	is_int(parse(&req, "get / HTTP/1.1\r\n\r\n", &why), REQUEST_OK,
	    "lowercase get parses");
	is_int(req.method, METHOD_OTHER, "lowercase get is not METHOD_GET");
	is_int(parse(&req, "GETX / HTTP/1.1\r\n\r\n", &why), REQUEST_OK,
	    "GETX parses");
	is_int(req.method, METHOD_OTHER, "GETX is not METHOD_GET");
	is_int(parse(&req, "HEA / HTTP/1.1\r\n\r\n", &why), REQUEST_OK,
	    "HEA parses");
	is_int(req.method, METHOD_OTHER, "HEA is not METHOD_HEAD");

	check_status("G@T / HTTP/1.1\r\n\r\n", 400, "non-token method");
	check_status("G\"T / HTTP/1.1\r\n\r\n", 400, "quote in method");
}

static void
test_versions(void)
{
	struct request req;
	const char *why;

	is_int(parse(&req, "GET / HTTP/1.0\r\n\r\n", &why), REQUEST_OK,
	    "HTTP/1.0 parses");
	is_int(req.minor, 0, "HTTP/1.0 minor is 0");
	is_int(req.keepalive, 0, "HTTP/1.0 closes by default");

	is_int(parse(&req, "GET / HTTP/1.1\r\n\r\n", &why), REQUEST_OK,
	    "HTTP/1.1 parses");
	is_int(req.minor, 1, "HTTP/1.1 minor is 1");
	is_int(req.keepalive, 1, "HTTP/1.1 keeps alive");

	/* A later 1.x is served as 1.1 (RFC 9110 2.5). */
	is_int(parse(&req, "GET / HTTP/1.2\r\n\r\n", &why), REQUEST_OK,
	    "HTTP/1.2 parses");
	is_int(req.minor, 2, "HTTP/1.2 minor is 2");
	is_int(req.keepalive, 1, "HTTP/1.2 keeps alive");

	/* Well-formed versions with another major: 505. */
	check_status("GET / HTTP/2.0\r\n\r\n", 505, "HTTP/2.0");
	check_status("GET / HTTP/0.9\r\n\r\n", 505, "HTTP/0.9");
	check_status("GET / HTTP/3.1\r\n\r\n", 505, "HTTP/3.1");
	check_status("GET / HTTP/9.9\r\n\r\n", 505, "HTTP/9.9");
	/* Malformed versions: 400. */
	check_status("GET / http/1.1\r\n\r\n", 400, "lowercase http/1.1");
	check_status("GET / HTTP/1.10\r\n\r\n", 400, "HTTP/1.10");
	check_status("GET / HTTP/11\r\n\r\n", 400, "HTTP/11");
	check_status("GET / HTTP/1\r\n\r\n", 400, "HTTP/1");
	check_status("GET / HTTP/1,1\r\n\r\n", 400, "HTTP/1,1");
	check_status("GET / HTTP/a.1\r\n\r\n", 400, "HTTP/a.1");
	check_status("GET / HTTP/1.x\r\n\r\n", 400, "HTTP/1.x");
	check_status("GET / HTTPS/1.1\r\n\r\n", 400, "HTTPS/1.1");
	check_status("GET / HTTP/1.1 \r\n\r\n", 400, "space after version");
	check_status("GET / HTTP/1.1\r\r\n\r\n", 400, "CR CR LF");
	check_status("GET / HTTP/2\r\n\r\n", 400, "HTTP/2 without minor");
	check_status("GET / HTTP/10.0\r\n\r\n", 400, "HTTP/10.0");
}

static void
test_request_line(void)
{
	check_status("GET\r\n\r\n", 400, "no target");
	check_status("GET /\r\n\r\n", 400, "no version");
	check_status("GET / \r\n\r\n", 400, "empty version");
	check_status("GET  / HTTP/1.1\r\n\r\n", 400, "double space");
	check_status("GET /  HTTP/1.1\r\n\r\n", 400,
	    "double space after target");
	check_status(" GET / HTTP/1.1\r\n\r\n", 400, "leading space");
	check_status("GET /a b HTTP/1.1\r\n\r\n", 400, "space inside target");
	check_status("GET /a\tb HTTP/1.1\r\n\r\n", 400, "TAB in target");
	check_status("GET /a\x01 HTTP/1.1\r\n\r\n", 400, "control in target");
	check_status("GET /a\x7f HTTP/1.1\r\n\r\n", 400, "DEL in target");
	check_status("GET /\x80 HTTP/1.1\r\n\r\n", 400, "0x80 in target");
	check_status("GET /caf\xc3\xa9 HTTP/1.1\r\n\r\n", 400,
	    "UTF-8 in target");
	check_status("GET /a\rb HTTP/1.1\r\n\r\n", 400, "CR in target");
	check_status_n(LIT("GET /a\0b HTTP/1.1\r\n\r\n"), MAX_HEAD, 400,
	    "NUL in target");
	check_status("GET\t/ HTTP/1.1\r\n\r\n", 400, "TAB as separator");
	check_ok("GET /a%20b?x=1&y=~ HTTP/1.1\r\n\r\n",
	    "visible ASCII in target accepted");
}

/* Parse a request carrying one Connection header; return keepalive. */
static int
connection(const char *version, const char *value)
{
	char buf[256];
	struct request req;
	const char *why;

	snprintf(buf, sizeof(buf), "GET / HTTP/%s\r\nConnection: %s\r\n\r\n",
	    version, value);
	if (parse(&req, buf, &why) != REQUEST_OK)
		return -1;
	return req.keepalive;
}

static void
test_connection(void)
{
	struct request req;
	const char *why;

	is_int(connection("1.1", "close"), 0, "1.1 Connection: close");
	is_int(connection("1.1", "CLOSE"), 0, "1.1 Connection: CLOSE");
	is_int(connection("1.1", "keep-alive"), 1, "1.1 keep-alive stays on");
	is_int(connection("1.0", "keep-alive"), 1,
	    "1.0 Connection: keep-alive");
	is_int(connection("1.0", "Keep-Alive"), 1, "1.0 Keep-Alive, any case");
	is_int(connection("1.0", "close"), 0, "1.0 Connection: close");
	is_int(connection("1.0", "upgrade"), 0, "1.0 other token: still off");
	is_int(connection("1.1", "foo, close"), 0, "token list foo, close");
	is_int(connection("1.1", "close,foo"), 0, "token list close,foo");
	is_int(connection("1.1", "foo ,\tclose , bar"), 0,
	    "token list with spaces and TAB");
	is_int(connection("1.1", "foo, bar"), 1, "list without close");
	is_int(connection("1.1", "close, keep-alive"), 0,
	    "1.1 close, keep-alive closes");
	is_int(connection("1.1", "closed"), 1, "closed is not close");
	is_int(connection("1.1", "xclose"), 1, "xclose is not close");
	is_int(connection("1.1", ""), 1, "empty Connection");
	is_int(connection("1.0", "foo, keep-alive"), 1,
	    "1.0 token list with keep-alive");
	is_int(connection("1.0", "keep-alives"), 0, "keep-alives is not it");
	/* close wins over keep-alive, whatever the order (RFC 9112 9.6). */
	is_int(connection("1.0", "keep-alive, close"), 0,
	    "1.0 keep-alive, close closes");
	is_int(connection("1.0", "close, keep-alive"), 0,
	    "1.0 close, keep-alive closes");
	is_int(parse(&req,
		   "GET / HTTP/1.0\r\nConnection: close\r\n"
		   "Connection: keep-alive\r\n\r\n",
		   &why),
	    REQUEST_OK, "two Connection headers parse");
	is_int(req.keepalive, 0, "1.0 close then keep-alive headers close");

	is_int(parse(&req, "GET / HTTP/1.1\r\ncOnNeCtIoN: close\r\n\r\n", &why),
	    REQUEST_OK, "mixed-case Connection parses");
	is_int(req.keepalive, 0, "header names are case-insensitive");
	is_int(parse(&req, "GET / HTTP/1.1\r\nConnection:close\r\n\r\n", &why),
	    REQUEST_OK, "Connection without space parses");
	is_int(req.keepalive, 0, "value without leading space");
	is_int(parse(&req, "GET / HTTP/1.1\r\nX-Connection: close\r\n\r\n",
		   &why),
	    REQUEST_OK, "X-Connection parses");
	is_int(req.keepalive, 1, "X-Connection is not Connection");
}

static void
test_kept_headers(void)
{
	static const char s[] = "GET /buildid/ab/debuginfo HTTP/1.1\r\n"
				"Host: example\r\n"
				"Range:  bytes=0-9 \r\n"
				"If-Range:\t\"abc\"\t\r\n"
				"If-None-Match: W/\"x\", \"y\"\r\n"
				"If-Modified-Since: Sun, 06 Nov 1994 "
				"08:49:37 GMT\r\n"
				"X-DEBUGINFOD-MAXSIZE: 1000 \t \r\n"
				"User-Agent: \t Mozilla/5.0 (X11)  \r\n"
				"X-Forwarded-For: 10.0.0.1, 10.0.0.2\r\n"
				"Accept: */*\r\n"
				"\r\n";
	struct request req;
	const char *why;

	is_int(parse(&req, s, &why), REQUEST_OK, "request with headers");
	slice_is(req.range, "bytes=0-9", "Range trimmed");
	slice_is(req.if_range, "\"abc\"", "If-Range trimmed of TABs");
	slice_is(req.if_none_match, "W/\"x\", \"y\"", "If-None-Match kept");
	slice_is(req.if_modified_since, "Sun, 06 Nov 1994 08:49:37 GMT",
	    "If-Modified-Since kept");
	slice_is(req.maxsize, "1000", "X-DEBUGINFOD-MAXSIZE trimmed");
	slice_is(req.user_agent, "Mozilla/5.0 (X11)",
	    "User-Agent trimmed, inner spaces kept");
	slice_is(req.forwarded_for, "10.0.0.1, 10.0.0.2",
	    "X-Forwarded-For kept");
	is_int(req.head_len, strlen(s), "head_len covers all headers");
	is_int(req.keepalive, 1, "unrelated headers leave keep-alive");
	is_int(req.has_body, 0, "no body");

	is_int(parse(&req,
		   "GET / HTTP/1.1\r\nrAnGe: bytes=1-2\r\n"
		   "x-debuginfod-maxsize: 5\r\nUSER-AGENT: u\r\n"
		   "if-none-match: *\r\nIF-MODIFIED-SINCE: d\r\n"
		   "If-range: r\r\nx-forwarded-for: f\r\n\r\n",
		   &why),
	    REQUEST_OK, "headers in any case parse");
	slice_is(req.range, "bytes=1-2", "rAnGe found");
	slice_is(req.maxsize, "5", "x-debuginfod-maxsize found");
	slice_is(req.user_agent, "u", "USER-AGENT found");
	slice_is(req.if_none_match, "*", "if-none-match found");
	slice_is(req.if_modified_since, "d", "IF-MODIFIED-SINCE found");
	slice_is(req.if_range, "r", "If-range found");
	slice_is(req.forwarded_for, "f", "x-forwarded-for found");

	is_int(parse(&req,
		   "GET / HTTP/1.1\r\nX-Range: a\r\nRanges: b\r\n"
		   "Range-X: c\r\nUser-Agents: d\r\nX-Unknown: e\r\n\r\n",
		   &why),
	    REQUEST_OK, "unknown headers parse");
	ok(req.range.p == NULL && req.user_agent.p == NULL &&
		req.if_range.p == NULL && req.maxsize.p == NULL,
	    "unknown and look-alike headers are ignored");

	is_int(parse(&req, "GET / HTTP/1.1\r\nRange: \t \r\n\r\n", &why),
	    REQUEST_OK, "blank Range parses");
	ok(req.range.p != NULL && req.range.n == 0,
	    "blank Range is present and empty");
	is_int(parse(&req, "GET / HTTP/1.1\r\nRange:\r\n\r\n", &why),
	    REQUEST_OK, "empty Range parses");
	ok(req.range.p != NULL && req.range.n == 0,
	    "empty Range is present and empty");
}

static void
test_content_length(void)
{
	struct request req;
	const char *why;

	is_int(parse(&req, "GET / HTTP/1.1\r\nContent-Length: 0\r\n\r\n", &why),
	    REQUEST_OK, "Content-Length: 0 parses");
	is_int(req.has_body, 0, "Content-Length: 0 has no body");
	is_int(parse(&req,
		   "GET / HTTP/1.1\r\nContent-Length: 0000000000000000000\r\n"
		   "\r\n",
		   &why),
	    REQUEST_OK, "19 zero digits parse");
	is_int(req.has_body, 0, "19 zeros are still no body");
	is_int(parse(&req, "GET / HTTP/1.1\r\nContent-Length: 1\r\n\r\n", &why),
	    REQUEST_OK, "Content-Length: 1 parses");
	is_int(req.has_body, 1, "Content-Length: 1 has a body");
	is_int(parse(&req, "GET / HTTP/1.1\r\nContent-Length: 12\r\n\r\n",
		   &why),
	    REQUEST_OK, "Content-Length: 12 parses");
	is_int(req.has_body, 1, "Content-Length: 12 has a body");
	is_int(parse(&req, "GET / HTTP/1.1\r\ncontent-length:  7 \r\n\r\n",
		   &why),
	    REQUEST_OK, "Content-Length with spaces parses");
	is_int(req.has_body, 1, "trimmed Content-Length has a body");
	is_int(parse(&req,
		   "GET / HTTP/1.1\r\nContent-Length: 5\r\n"
		   "Content-Length: 5\r\n\r\n",
		   &why),
	    REQUEST_OK, "repeated equal Content-Length parses");
	is_int(req.has_body, 1, "repeated Content-Length has a body");
	is_int(parse(&req,
		   "GET / HTTP/1.1\r\nContent-Length: 9999999999999999999\r\n"
		   "\r\n",
		   &why),
	    REQUEST_OK, "19-digit Content-Length parses");
	is_int(req.has_body, 1, "19-digit Content-Length has a body");

	check_status("GET / HTTP/1.1\r\nContent-Length: 5\r\n"
		     "Content-Length: 6\r\n\r\n",
	    400, "conflicting Content-Length");
	check_status("GET / HTTP/1.1\r\nContent-Length: 0\r\n"
		     "Content-Length: 1\r\n\r\n",
	    400, "conflicting Content-Length 0 and 1");
	check_status("GET / HTTP/1.1\r\nContent-Length: abc\r\n\r\n", 400,
	    "non-numeric Content-Length");
	check_status("GET / HTTP/1.1\r\nContent-Length:\r\n\r\n", 400,
	    "empty Content-Length");
	check_status("GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400,
	    "negative Content-Length");
	check_status("GET / HTTP/1.1\r\nContent-Length: +1\r\n\r\n", 400,
	    "signed Content-Length");
	check_status("GET / HTTP/1.1\r\nContent-Length: 1 2\r\n\r\n", 400,
	    "Content-Length with inner space");
	check_status("GET / HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n", 400,
	    "Content-Length list");
	check_status("GET / HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n", 400,
	    "hex Content-Length");
	check_status("GET / HTTP/1.1\r\nContent-Length: "
		     "00000000000000000000\r\n\r\n",
	    400, "20-digit Content-Length");
	check_status("GET / HTTP/1.1\r\nContent-Length: "
		     "99999999999999999999999\r\n\r\n",
	    400, "overflowing Content-Length");

	is_int(parse(&req,
		   "GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
		   &why),
	    REQUEST_OK, "Transfer-Encoding parses");
	is_int(req.has_body, 1, "Transfer-Encoding means a body");
	is_int(parse(&req,
		   "GET / HTTP/1.1\r\nContent-Length: 0\r\n"
		   "transfer-encoding: gzip, chunked\r\n\r\n",
		   &why),
	    REQUEST_OK, "Transfer-Encoding with Content-Length: 0 parses");
	is_int(req.has_body, 1, "Transfer-Encoding wins over length 0");
}

static void
test_line_endings(void)
{
	static const char lf[] = "GET /a HTTP/1.0\nRange: bytes=0-1\n"
				 "Connection: keep-alive\n\n";
	static const char mixed[] = "GET /a HTTP/1.1\r\nRange: bytes=2-3\n"
				    "User-Agent: u\r\n\n";
	struct request req;
	const char *why;

	is_int(parse(&req, lf, &why), REQUEST_OK, "bare LF head parses");
	slice_is(req.target, "/a", "bare LF: target");
	slice_is(req.range, "bytes=0-1", "bare LF: Range has no LF");
	is_int(req.keepalive, 1, "bare LF: Connection applied");
	is_int(req.head_len, strlen(lf), "bare LF: head_len");

	is_int(parse(&req, mixed, &why), REQUEST_OK, "mixed line ends parse");
	slice_is(req.range, "bytes=2-3", "mixed: Range");
	slice_is(req.user_agent, "u", "mixed: User-Agent has no CR");
	is_int(req.head_len, strlen(mixed), "mixed: head_len");

	is_int(parse(&req, "GET / HTTP/1.1\r\n\n", &why), REQUEST_OK,
	    "CRLF then bare LF blank line");
	is_int(req.head_len, 17, "CRLF LF: head_len");
	is_int(parse(&req, "GET / HTTP/1.1\n\r\n", &why), REQUEST_OK,
	    "LF then CRLF blank line");
	is_int(req.head_len, 17, "LF CRLF: head_len");
}

static void
test_leading_empty_lines(void)
{
	static const char one[] = "\r\nGET /one HTTP/1.1\r\n\r\n";
	static const char lf[] = "\nGET /lf HTTP/1.1\r\n\r\n";
	static const char two[] = "\r\n\r\nGET /two HTTP/1.1\r\n\r\n";
	static const char three[] = "\n\n\nGET /three HTTP/1.1\n\n";
	struct request req;
	const char *why;

	is_int(parse(&req, one, &why), REQUEST_OK, "one empty line first");
	slice_is(req.target, "/one", "one empty line: target");
	is_int(req.head_len, strlen(one), "one empty line: head_len");
	is_int(parse(&req, lf, &why), REQUEST_OK, "one bare LF first");
	slice_is(req.target, "/lf", "one bare LF: target");

	/* "Empty lines" (request.c): more than one must work as well. */
	is_int(parse(&req, two, &why), REQUEST_OK, "two empty lines first");
	slice_is(req.target, "/two", "two empty lines: target");
	is_int(req.head_len, strlen(two), "two empty lines: head_len");
	is_int(parse(&req, three, &why), REQUEST_OK,
	    "three bare LF lines first");
	slice_is(req.target, "/three", "three bare LF lines: target");
}

/* Every strict prefix of s is INCOMPLETE, and s itself is one whole head. */
static void
check_prefixes(const char *s, const char *what)
{
	size_t n = strlen(s), i, bad = 0, first_bad = 0;
	struct request req;
	const char *why;
	char msg[200];
	int rc, first_rc = 0;

	for (i = 0; i < n; i++) {
		rc = parse_n(&req, s, i, MAX_HEAD, &why);
		if (rc != REQUEST_INCOMPLETE && bad++ == 0) {
			first_bad = i;
			first_rc = rc;
		}
	}
	snprintf(msg, sizeof(msg), "%s: every strict prefix is INCOMPLETE",
	    what);
	if (!ok(bad == 0, msg))
		printf("#   %zu prefixes failed, first at length %zu with %d\n",
		    bad, first_bad, first_rc);
	snprintf(msg, sizeof(msg), "%s: the whole request parses", what);
	is_int(parse_n(&req, s, n, MAX_HEAD, &why), REQUEST_OK, msg);
	snprintf(msg, sizeof(msg), "%s: head_len is its length", what);
	is_int(req.head_len, n, msg);
}

static void
test_prefixes(void)
{
	static const char s[] =
	    "GET /buildid/4ef383d1b23f47089d93da84d2cdb4ea0e347b0a/"
	    "debuginfo HTTP/1.1\r\n"
	    "Host: localhost:8002\r\n"
	    "User-Agent: libdebuginfod/0.188\r\n"
	    "Accept: */*\r\n"
	    "Range: bytes=0-\r\n"
	    "X-DEBUGINFOD-MAXSIZE: 1000000\r\n"
	    "\r\n";
	struct request req;
	const char *why;

	ok(strlen(s) > 150, "the prefix test request is long enough");
	check_prefixes(s, "CRLF request");
	is_int(parse(&req, s, &why), REQUEST_OK, "the long request parses");
	slice_is(req.maxsize, "1000000", "last header of the long request");
	check_prefixes("GET /a HTTP/1.0\nConnection: keep-alive\nRange: "
		       "bytes=1-2\n\n",
	    "bare LF request");
	check_prefixes("\r\n\r\n\nGET /a HTTP/1.1\r\nUser-Agent: u\r\n\r\n",
	    "request after empty lines");
	check_prefixes("GET / HTTP/1.1\r\n\r\n", "shortest request");
}

static void
test_pipelining(void)
{
	static const char first[] = "GET /first HTTP/1.1\r\nRange: bytes=1-\r\n"
				    "\r\n";
	char buf[256];
	struct request req;
	const char *why;

	snprintf(buf, sizeof(buf), "%sGET /second HTTP/1.1\r\n\r\n", first);
	is_int(parse(&req, buf, &why), REQUEST_OK, "pipelined pair parses");
	is_int(req.head_len, strlen(first), "head_len stops at the blank line");
	slice_is(req.target, "/first", "the first request is parsed");
	slice_is(req.range, "bytes=1-", "first request's header only");

	snprintf(buf, sizeof(buf), "%s\x01\x02 garbage\r\n", first);
	is_int(parse(&req, buf, &why), REQUEST_OK,
	    "bytes after the head are not looked at");
	is_int(req.head_len, strlen(first), "head_len with trailing garbage");

	snprintf(buf, sizeof(buf),
	    "POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
	is_int(parse(&req, buf, &why), REQUEST_OK, "head with a body parses");
	is_int(req.head_len, strlen(buf) - 3, "head_len excludes the body");
	is_int(req.has_body, 1, "body announced");
}

static void
test_limits(void)
{
	static const char s[] = "GET /x HTTP/1.1\r\nUser-Agent: abc\r\n\r\n";
	size_t n = strlen(s);
	char buf[512];
	struct request req;
	const char *why;
	int rc;

	is_int(parse_n(&req, s, n, n, &why), REQUEST_OK,
	    "a head of exactly max_head bytes parses");
	is_int(req.head_len, n, "exactly max_head: head_len");
	memcpy(buf, s, n);
	memcpy(buf + n, "GET /y HTTP/1.1\r\n\r\n", 19);
	is_int(parse_n(&req, buf, n + 19, n, &why), REQUEST_OK,
	    "exactly max_head with more bytes buffered parses");
	is_int(req.head_len, n, "exactly max_head, pipelined: head_len");
	check_status_n(s, n, n - 1, 431, "a head one byte over max_head");
	check_status_n(s, n, n - 2, 431, "a head two bytes over max_head");

	/* No newline within max_head: the request line is too long. */
	memset(buf, 'a', sizeof(buf));
	memcpy(buf, "GET /", 5);
	check_status_n(buf, 100, 64, 414, "request line longer than max_head");
	check_status_n(buf, 64, 64, 414, "exactly max_head without a newline");
	is_int(parse_n(&req, buf, 63, 64, &why), REQUEST_INCOMPLETE,
	    "one byte under max_head without a newline is INCOMPLETE");
	memcpy(buf + 80, " HTTP/1.1\r\n\r\n", 13);
	check_status_n(buf, 93, 64, 414,
	    "newline only past max_head is still 414");
	check_status_n(buf, 93, 90, 414,
	    "newline the first byte past max_head");
	check_status_n(buf, 93, 91, 431,
	    "newline the last byte within max_head");
	rc = parse_n(&req, buf, 93, 93, &why);
	is_int(rc, REQUEST_OK, "same request with a larger max_head parses");

	/* Request line complete, headers not: too large, 431. */
	snprintf(buf, sizeof(buf), "GET / HTTP/1.1\r\nX-Long: %0200d\r\n\r\n",
	    0);
	check_status_n(buf, strlen(buf), 64, 431,
	    "request line fits, headers do not");
	check_status_n(buf, 64, 64, 431, "exactly max_head, head unfinished");
	is_int(parse_n(&req, buf, 63, 64, &why), REQUEST_INCOMPLETE,
	    "under max_head with a request line is INCOMPLETE");

	is_int(parse_n(&req, "", 0, 64, &why), REQUEST_INCOMPLETE,
	    "no bytes at all is INCOMPLETE");

	/* Empty lines first do not count as the request line's newline. */
	memset(buf, 'a', sizeof(buf));
	memcpy(buf, "\r\n\r\nGET /", 9);
	check_status_n(buf, 100, 64, 414,
	    "empty lines, then a request line longer than max_head");
	/* Nothing but empty lines up to max_head cannot wait for more. */
	for (rc = 0; rc < 64; rc += 2)
		memcpy(buf + rc, "\r\n", 2);
	rc = parse_n(&req, buf, 64, 64, &why);
	ok(rc != REQUEST_OK && rc != REQUEST_INCOMPLETE && why != NULL &&
		why[0] != '\0',
	    "max_head bytes of empty lines are refused");
}

/* A request with count "X-Header-N: v" lines. */
static char *
many_headers(int count, size_t *len)
{
	size_t cap = 64 + (size_t)count * 32, n = 0;
	char *buf = malloc(cap);
	int i;

	if (buf == NULL) {
		perror("malloc");
		exit(1);
	}
	n += (size_t)snprintf(buf + n, cap - n, "GET / HTTP/1.1\r\n");
	for (i = 0; i < count; i++)
		n +=
		    (size_t)snprintf(buf + n, cap - n, "X-Header-%d: v\r\n", i);
	n += (size_t)snprintf(buf + n, cap - n, "\r\n");
	*len = n;
	return buf;
}

static void
test_header_count(void)
{
	struct request req;
	const char *why;
	size_t len;
	char *buf;

	buf = many_headers(REQUEST_MAX_HEADERS, &len);
	is_int(parse_n(&req, buf, len, MAX_HEAD, &why), REQUEST_OK,
	    "100 header lines parse");
	is_int(req.head_len, len, "100 header lines: head_len");
	free(buf);
	buf = many_headers(REQUEST_MAX_HEADERS + 1, &len);
	check_status_n(buf, len, MAX_HEAD, 431, "101 header lines");
	free(buf);
	is_int(REQUEST_MAX_HEADERS, 100, "the documented limit is 100");
}

static void
test_header_syntax(void)
{
	struct request req;
	const char *why;

	check_status("GET / HTTP/1.1\r\nUser-Agent: a\r\n b\r\n\r\n", 400,
	    "obsolete folding with a space");
	check_status("GET / HTTP/1.1\r\nUser-Agent: a\r\n\tb\r\n\r\n", 400,
	    "obsolete folding with a TAB");
	check_status("GET / HTTP/1.1\r\n X-A: b\r\n\r\n", 400,
	    "whitespace before the first header");
	check_status("GET / HTTP/1.1\r\nRange : bytes=0-1\r\n\r\n", 400,
	    "space before the colon");
	check_status("GET / HTTP/1.1\r\nRange\t: bytes=0-1\r\n\r\n", 400,
	    "TAB before the colon");
	check_status("GET / HTTP/1.1\r\n: value\r\n\r\n", 400,
	    "empty header name");
	check_status("GET / HTTP/1.1\r\nNoColonHere\r\n\r\n", 400,
	    "header without a colon");
	check_status("GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", 400,
	    "space inside a header name");
	check_status("GET / HTTP/1.1\r\nBad(Name): x\r\n\r\n", 400,
	    "separator inside a header name");
	check_status("GET / HTTP/1.1\r\nX-A: a\x01z\r\n\r\n", 400,
	    "control byte 0x01 in a value");
	check_status("GET / HTTP/1.1\r\nX-A: a\x1fz\r\n\r\n", 400,
	    "control byte 0x1f in a value");
	check_status("GET / HTTP/1.1\r\nX-A: a\x7fz\r\n\r\n", 400,
	    "DEL in a value");
	check_status("GET / HTTP/1.1\r\nX-A: a\rz\r\n\r\n", 400,
	    "bare CR in a value");
	check_status("GET / HTTP/1.1\r\nRange: a\rz\r\n\r\n", 400,
	    "bare CR in a kept value");
	check_status_n(LIT("GET / HTTP/1.1\r\nX-A: a\0z\r\n\r\n"), MAX_HEAD,
	    400, "NUL in a value");
	check_status_n(LIT("GET / HTTP/1.1\r\nX-\0: z\r\n\r\n"), MAX_HEAD, 400,
	    "NUL in a name");
	check_status("GET / HTTP/1.1\r\nX-A: z\r\r\n\r\n", 400,
	    "CR CR LF after a header");

	is_int(parse(&req, "GET / HTTP/1.1\r\nRange: a\tb\r\n\r\n", &why),
	    REQUEST_OK, "TAB inside a value is allowed");
	slice_is(req.range, "a\tb", "TAB kept inside the value");
	/* obs-text (RFC 9110 5.5) is not a control byte. */
	is_int(parse(&req, "GET / HTTP/1.1\r\nUser-Agent: caf\xc3\xa9\r\n\r\n",
		   &why),
	    REQUEST_OK, "non-ASCII bytes in a value are allowed");
	slice_is(req.user_agent, "caf\xc3\xa9", "non-ASCII value kept");
	is_int(parse(&req, "GET / HTTP/1.1\r\nX-A: b:c::\r\n\r\n", &why),
	    REQUEST_OK, "colons inside a value are allowed");
	is_int(parse(&req, "GET / HTTP/1.1\r\nX!#$%&'*+-.^_`|~9: v\r\n\r\n",
		   &why),
	    REQUEST_OK, "every token character in a name is allowed");
}

static void
test_slice_eq_nocase(void)
{
	struct slice none = { NULL, 0 };
	struct slice empty = { "", 0 };
	struct slice word = { "Close", 5 };
	struct slice part = { "closeXYZ", 5 };
	struct slice shorter = { "clos", 4 };
	struct slice longer = { "closed", 6 };
	struct slice other = { "clone", 5 };

	is_int(slice_eq_nocase(none, ""), 0, "absent slice equals nothing");
	is_int(slice_eq_nocase(empty, ""), 1, "empty slice equals \"\"");
	is_int(slice_eq_nocase(empty, "a"), 0, "empty slice is not \"a\"");
	is_int(slice_eq_nocase(word, "close"), 1, "Close equals close");
	is_int(slice_eq_nocase(word, "CLOSE"), 1, "Close equals CLOSE");
	is_int(slice_eq_nocase(part, "close"), 1, "only n bytes count");
	is_int(slice_eq_nocase(part, "closeXYZ"), 0,
	    "bytes past n do not count");
	is_int(slice_eq_nocase(shorter, "close"), 0, "a prefix is not equal");
	is_int(slice_eq_nocase(longer, "close"), 0, "a longer slice");
	is_int(slice_eq_nocase(other, "close"), 0, "another word");
}

/* A small deterministic generator (xorshift64*) for the fuzz loop. */
static uint64_t fuzz_state = 0x9e3779b97f4a7c15ULL;

static uint32_t
fuzz_next(void)
{
	fuzz_state ^= fuzz_state >> 12;
	fuzz_state ^= fuzz_state << 25;
	fuzz_state ^= fuzz_state >> 27;
	return (uint32_t)((fuzz_state * 0x2545f4914f6cdd1dULL) >> 32);
}

/* The slice is absent or lies within buf[0..head_len). */
static int
slice_inside(struct slice sl, const char *buf, size_t head_len)
{
	if (sl.p == NULL)
		return sl.n == 0;
	return sl.p >= buf && sl.n <= head_len &&
	    (size_t)(sl.p - buf) <= head_len - sl.n;
}

static void
test_fuzz(void)
{
	static const char base[] =
	    "GET /buildid/ab12/source/usr/a.c HTTP/1.1\r\n"
	    "Host: h\r\n"
	    "Connection: keep-alive, close\r\n"
	    "Range: bytes=0-9\r\n"
	    "If-Range: \"e\"\r\n"
	    "If-None-Match: *\r\n"
	    "If-Modified-Since: x\r\n"
	    "X-DEBUGINFOD-MAXSIZE: 9\r\n"
	    "User-Agent: u\r\n"
	    "X-Forwarded-For: f\r\n"
	    "Content-Length: 0\r\n"
	    "\r\n";
	static const char inserts[] = "\r\n\0 :\t";
	static const size_t heads[] = { 32, 100, 256, MAX_HEAD };
	char buf[512];
	size_t len, max_head, bad = 0;
	struct request req;
	const char *why;
	int iter, m, nmut, rc, good, first_bad = -1;

	for (iter = 0; iter < 20000; iter++) {
		len = sizeof(base) - 1;
		memcpy(buf, base, len);
		nmut = 1 + (int)(fuzz_next() % 4);
		for (m = 0; m < nmut && len > 0; m++) {
			size_t at = fuzz_next() % len;

			switch (fuzz_next() % 5) {
			case 0:
				buf[at] ^= (char)(1 << (fuzz_next() % 8));
				break;
			case 1:
				len = at;
				break;
			case 2:
				if (len < sizeof(buf)) {
					memmove(buf + at + 1, buf + at,
					    len - at);
					buf[at] = inserts[fuzz_next() %
					    (sizeof(inserts) - 1)];
					len++;
				}
				break;
			case 3:
				buf[at] = inserts[fuzz_next() %
				    (sizeof(inserts) - 1)];
				break;
			default:
				memmove(buf + at, buf + at + 1, len - at - 1);
				len--;
				break;
			}
		}
		max_head = heads[fuzz_next() % 4];
		rc = parse_n(&req, buf, len, max_head, &why);
		if (rc == REQUEST_OK)
			good = req.head_len > 0 && req.head_len <= len &&
			    req.head_len <= max_head &&
			    slice_inside(req.method_name, input,
				req.head_len) &&
			    slice_inside(req.target, input, req.head_len) &&
			    slice_inside(req.range, input, req.head_len) &&
			    slice_inside(req.if_range, input, req.head_len) &&
			    slice_inside(req.if_none_match, input,
				req.head_len) &&
			    slice_inside(req.if_modified_since, input,
				req.head_len) &&
			    slice_inside(req.maxsize, input, req.head_len) &&
			    slice_inside(req.user_agent, input, req.head_len) &&
			    slice_inside(req.forwarded_for, input,
				req.head_len) &&
			    (req.method == METHOD_GET ||
				req.method == METHOD_HEAD ||
				req.method == METHOD_POST ||
				req.method == METHOD_OTHER);
		else if (rc == REQUEST_INCOMPLETE)
			good = len < max_head;
		else
			good = (rc == 400 || rc == 414 || rc == 431 ||
				   rc == 505) &&
			    why != NULL && why[0] != '\0';
		if (!good && bad++ == 0)
			first_bad = iter;
	}
	if (!ok(bad == 0, "20000 mutated requests: valid results only"))
		printf("#   %zu bad results, first at iteration %d\n", bad,
		    first_bad);
}

int
main(void)
{
	test_minimal_get();
	test_methods();
	test_versions();
	test_request_line();
	test_connection();
	test_kept_headers();
	test_content_length();
	test_line_endings();
	test_leading_empty_lines();
	test_prefixes();
	test_pipelining();
	test_limits();
	test_header_count();
	test_header_syntax();
	test_slice_eq_nocase();
	test_fuzz();
	free(input);
	return tap_done();
}
