/*
 * tests/fakeupstream.c: a debuginfod server that misbehaves on purpose.
 *
 * The integration tests point dbgmirrord at it to see how the daemon copes
 * with every way an upstream can fail.  Each positional argument ID=MODE[:ARG]
 * says how to answer requests for /buildid/ID/... (any artifact); "*" is the
 * rule for every id not listed, other ids get 404 "not found\n", and "/"
 * answers 200 "fakeupstream\n".  The rule of the id "metadata" (never
 * "*") answers /metadata?QUERY (ok:PATH sends PATH as the body).  The
 * modes:
 *
 *   ok:PATH        200 with the file, debuginfod headers and Last-Modified;
 *                  Range (bytes=N-, bytes=N-M, bytes=-N) gives 206; HEAD
 *   hang           read the request, never answer
 *   late:PATH      as ok, after --late MS (default 3000) without a byte,
 *                  while "/" answers at once: an upstream at work on a
 *                  large package
 *   stall:PATH     the headers of ok (real Content-Length), then nothing
 *   trickle:PATH   as ok, the body paced at --rate bytes/s (default 1000)
 *   html           200 text/html with a short "service unavailable" page
 *   truncate:PATH  as ok, half the body, then a clean close (FIN)
 *   reset:PATH     as ok, half the body, then a close with RST
 *   resumable:PATH as truncate without a Range header, as ok with one: a
 *                  transfer that breaks once and is resumed
 *   status:CODE    CODE with a short text body
 *   redirect:TGT   302 to TGT (a path or a full URL)
 *   redirectloop   302 to the very target requested
 *
 * The file modes honour Range the same way (truncate and reset send half of
 * the selected bytes), and --pad-header N adds a header X-DEBUGINFOD-PAD of N
 * bytes (of --pad-byte, a number, default 'p') to them.  --delay MS waits before every answer; --log FILE gets
 * one line per request received, written with one O_APPEND write.
 * --maxsize makes the file modes answer 406 to an X-DEBUGINFOD-MAXSIZE
 * smaller than the file, as debuginfod does (without it the header is
 * only logged).  --gate FILE holds every /buildid/ answer until FILE
 * exists (60 s at most), while "/" answers at once.  --port N
 * listens on port N instead of a free one, to restart a server where it was.
 *
 * Threads: the main thread only waits for SIGTERM or SIGINT and then exits 0;
 * one thread accepts, and each connection gets a detached thread of its own
 * that serves keep-alive requests until the peer closes, "Connection: close",
 * or a mode that ends the connection.  Nothing is shared between threads but
 * the read-only rule table and the log descriptor.  Bodies are streamed from
 * the file in pieces of at most 64 KiB, so PATH may be a huge sparse file.
 */
#define _FILE_OFFSET_BITS 64

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HEAD_MAX (16 * 1024) /* request line and headers */
#define PAD_MAX 8192 /* --pad-header */
#define OUT_MAX (HEAD_MAX + PAD_MAX + 1024) /* a response head */
#define PIECE_MAX (64 * 1024)
#define SEND_TIMEOUT_S 60 /* a peer that stops reading is given up */

enum mode {
	M_OK,
	M_HANG,
	M_LATE,
	M_STALL,
	M_TRICKLE,
	M_HTML,
	M_TRUNCATE,
	M_RESET,
	M_RESUMABLE,
	M_STATUS,
	M_REDIRECT,
	M_REDIRECTLOOP,
};

static const struct {
	const char *name;
	enum mode mode;
	int needs_arg;
} modes[] = {
	{ "ok", M_OK, 1 },
	{ "hang", M_HANG, 0 },
	{ "late", M_LATE, 1 },
	{ "stall", M_STALL, 1 },
	{ "trickle", M_TRICKLE, 1 },
	{ "html", M_HTML, 0 },
	{ "truncate", M_TRUNCATE, 1 },
	{ "reset", M_RESET, 1 },
	{ "resumable", M_RESUMABLE, 1 },
	{ "status", M_STATUS, 1 },
	{ "redirect", M_REDIRECT, 1 },
	{ "redirectloop", M_REDIRECTLOOP, 0 },
};

struct fake_rule {
	const char *id; /* hex build-id, or "*" */
	enum mode mode;
	const char *arg;
};

static struct fake_rule *rules;
static size_t nrules;
static int log_fd = -1;
static long delay_ms;
static long late_ms = 3000;
/* Bytes of an X-DEBUGINFOD-PAD header on file answers; 0 for none. */
static long pad_header;
/* What the pad is made of. */
static long pad_byte = 'p';
static long rate = 1000;
static int honour_maxsize;
static const char *gate;

struct fake_request {
	char *method;
	char *target;
	const char *xff, *ua, *range, *auth, *maxsize;
	int head_only; /* HEAD */
	int keep_alive;
};

struct fake_conn {
	int fd;
	size_t len; /* bytes in buf */
	char buf[HEAD_MAX];
	char out[OUT_MAX];
};

static const char html_page[] =
    "<!DOCTYPE html>\n"
    "<html>\n"
    "<head><title>503 Service Temporarily Unavailable</title></head>\n"
    "<body>\n"
    "<h1>Service temporarily unavailable</h1>\n"
    "<p>The server is temporarily unable to service your request due to "
    "maintenance downtime or capacity problems. Please try again later.</p>\n"
    "<hr><address>fakeupstream</address>\n"
    "</body>\n"
    "</html>\n";

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: fakeupstream [--listen ADDR] [--port N] [--port-file FILE] "
	    "[--log FILE]\n"
	    "                    [--delay MS] [--late MS] [--rate "
	    "BYTES_PER_SEC] "
	    "[--pad-header N] [--pad-byte B]\n"
	    "                    [--maxsize] [--gate FILE]\n"
	    "                    ID=MODE[:ARG] ...\n"
	    "modes: ok:PATH hang late:PATH stall:PATH trickle:PATH html\n"
	    "       truncate:PATH reset:PATH resumable:PATH status:CODE\n"
	    "       redirect:TARGET redirectloop\n"
	    "ID is a hex build-id or * for every id not listed.\n");
}

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Parses ID=MODE[:ARG] into *r; -1 with a message on stderr if malformed. */
static int
parse_rule(char *s, struct fake_rule *r)
{
	char *eq, *colon;
	size_t i, n;

	if ((eq = strchr(s, '=')) == NULL || eq == s)
		goto bad;
	*eq = '\0';
	r->id = s;
	if ((colon = strchr(eq + 1, ':')) != NULL)
		*colon = '\0';
	r->arg = colon != NULL ? colon + 1 : NULL;
	n = sizeof(modes) / sizeof(modes[0]);
	for (i = 0; i < n && strcmp(modes[i].name, eq + 1) != 0; i++)
		;
	if (i == n || modes[i].needs_arg != (r->arg != NULL) ||
	    (r->arg != NULL && r->arg[0] == '\0'))
		goto bad;
	r->mode = modes[i].mode;
	if (r->mode == M_STATUS) {
		char *end;
		long code = strtol(r->arg, &end, 10);

		if (*end != '\0' || code < 100 || code > 599)
			goto bad;
	}
	return 0;
bad:
	fprintf(stderr, "fakeupstream: bad rule (want ID=MODE[:ARG])\n");
	return -1;
}

/* The rule for build-id ID (length n), the "*" rule, or NULL. */
static const struct fake_rule *
find_rule(const char *id, size_t n)
{
	const struct fake_rule *star = NULL;
	size_t i;

	for (i = 0; i < nrules; i++) {
		if (strlen(rules[i].id) == n &&
		    strncasecmp(rules[i].id, id, n) == 0)
			return &rules[i];
		if (strcmp(rules[i].id, "*") == 0 && star == NULL)
			star = &rules[i];
	}
	return star;
}

static const char *
reason(int code)
{
	static const struct {
		int code;
		const char *text;
	} reasons[] = {
		{ 200, "OK" },
		{ 206, "Partial Content" },
		{ 302, "Found" },
		{ 400, "Bad Request" },
		{ 401, "Unauthorized" },
		{ 403, "Forbidden" },
		{ 404, "Not Found" },
		{ 405, "Method Not Allowed" },
		{ 406, "Not Acceptable" },
		{ 416, "Range Not Satisfiable" },
		{ 429, "Too Many Requests" },
		{ 431, "Request Header Fields Too Large" },
		{ 500, "Internal Server Error" },
		{ 502, "Bad Gateway" },
		{ 503, "Service Unavailable" },
		{ 504, "Gateway Timeout" },
	};
	size_t i;

	for (i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		if (reasons[i].code == code)
			return reasons[i].text;
	return "Status";
}

static int
write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	ssize_t w;

	while (n > 0) {
		if ((w = write(fd, c, n)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

static void
log_request(const struct fake_request *rq)
{
	char line[HEAD_MAX + 256];
	int n;

	if (log_fd == -1)
		return;
	n = snprintf(line, sizeof(line),
	    "%s %s xff=\"%s\" ua=\"%s\" range=\"%s\" auth=\"%s\" "
	    "maxsize=\"%s\"\n",
	    rq->method, rq->target, rq->xff ? rq->xff : "-",
	    rq->ua ? rq->ua : "-", rq->range ? rq->range : "-",
	    rq->auth ? rq->auth : "-", rq->maxsize ? rq->maxsize : "-");
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line)) {
		n = sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	(void)write_all(log_fd, line, (size_t)n);
}

/*
 * Reads one request head into c->buf (keeping what follows it there for
 * the next request).  Returns the head length, 0 when the peer closed, -1
 * on a read error, -2 when the head exceeds HEAD_MAX.
 */
static long
read_head(struct fake_conn *c)
{
	size_t i;
	ssize_t r;

	for (;;) {
		for (i = 0; i + 1 < c->len; i++) {
			if (c->buf[i] != '\n')
				continue;
			if (c->buf[i + 1] == '\n')
				return (long)i + 2;
			if (c->buf[i + 1] == '\r' && i + 2 < c->len &&
			    c->buf[i + 2] == '\n')
				return (long)i + 3;
		}
		if (c->len == sizeof(c->buf))
			return -2;
		r = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			return r == 0 ? 0 : -1;
		c->len += (size_t)r;
	}
}

/* Splits the head (NUL-terminated in place) into *rq; -1 if malformed. */
static int
parse_head(char *head, struct fake_request *rq)
{
	char *line, *next, *version, *colon, *v, *e;
	int http10, body = 0;

	memset(rq, 0, sizeof(*rq));
	if ((next = strchr(head, '\n')) == NULL)
		return -1;
	*next++ = '\0';
	line = head;
	line[strcspn(line, "\r")] = '\0';
	rq->method = line;
	if ((rq->target = strchr(line, ' ')) == NULL)
		return -1;
	*rq->target++ = '\0';
	if ((version = strchr(rq->target, ' ')) == NULL)
		return -1;
	*version++ = '\0';
	if (strncmp(version, "HTTP/1.", 7) != 0 || rq->target[0] == '\0')
		return -1;
	http10 = strcmp(version, "HTTP/1.0") == 0;
	rq->keep_alive = !http10;
	rq->head_only = strcmp(rq->method, "HEAD") == 0;

	while ((line = next) != NULL && *line != '\0') {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		line[strcspn(line, "\r")] = '\0';
		if (*line == '\0')
			break;
		if ((colon = strchr(line, ':')) == NULL)
			return -1;
		*colon = '\0';
		for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
			;
		for (e = v + strlen(v);
		     e > v && (e[-1] == ' ' || e[-1] == '\t');)
			*--e = '\0';
		if (strcasecmp(line, "X-Forwarded-For") == 0 && rq->xff == NULL)
			rq->xff = v;
		else if (strcasecmp(line, "User-Agent") == 0 && rq->ua == NULL)
			rq->ua = v;
		else if (strcasecmp(line, "Range") == 0 && rq->range == NULL)
			rq->range = v;
		else if (strcasecmp(line, "Authorization") == 0 &&
		    rq->auth == NULL)
			rq->auth = v;
		else if (strcasecmp(line, "X-DEBUGINFOD-MAXSIZE") == 0 &&
		    rq->maxsize == NULL)
			rq->maxsize = v;
		else if (strcasecmp(line, "Connection") == 0) {
			if (strcasestr(v, "close") != NULL)
				rq->keep_alive = 0;
			else if (http10 && strcasestr(v, "keep-alive") != NULL)
				rq->keep_alive = 1;
		} else if ((strcasecmp(line, "Content-Length") == 0 &&
			       strcmp(v, "0") != 0) ||
		    strcasecmp(line, "Transfer-Encoding") == 0)
			body = 1;
	}
	if (body)
		rq->keep_alive = 0; /* we do not read request bodies */
	return 0;
}

/*
 * Formats a response head into c->out: the status line, the printf-style
 * extra header lines FMT (each ending in "\r\n"), Connection when closing,
 * and the blank line.  Returns its length, or -1 if it does not fit.
 */
static int
format_head(struct fake_conn *c, const struct fake_request *rq, int code,
    const char *fmt, ...)
{
	va_list ap;
	int n, m;

	n = snprintf(c->out, sizeof(c->out),
	    "HTTP/1.1 %d %s\r\nServer: fakeupstream\r\n", code, reason(code));
	va_start(ap, fmt);
	m = vsnprintf(c->out + n, sizeof(c->out) - (size_t)n, fmt, ap);
	va_end(ap);
	if (m < 0 || (size_t)(n + m) >= sizeof(c->out))
		return -1;
	n += m;
	m = snprintf(c->out + n, sizeof(c->out) - (size_t)n, "%s\r\n",
	    rq->keep_alive ? "" : "Connection: close\r\n");
	if ((size_t)(n + m) >= sizeof(c->out))
		return -1;
	return n + m;
}

/* A complete response with an in-memory body; HEAD gets the head only. */
static int
respond(struct fake_conn *c, const struct fake_request *rq, int code,
    const char *ctype, const char *body, const char *extra)
{
	size_t blen = strlen(body);
	int n;

	n = format_head(c, rq, code,
	    "Content-Type: %s\r\nContent-Length: %zu\r\n%s", ctype, blen,
	    extra);
	if (n == -1)
		return -1;
	if (write_all(c->fd, c->out, (size_t)n) == -1)
		return -1;
	if (rq->head_only)
		return 0;
	return write_all(c->fd, body, blen);
}

/* Reads and discards until the peer closes (hang and stall modes). */
static void
wait_peer_close(struct fake_conn *c)
{
	char sink[4096];
	ssize_t r;

	while ((r = read(c->fd, sink, sizeof(sink))) != 0)
		if (r == -1 && errno != EINTR)
			return;
}

/*
 * Sends FIN, then waits (at most a second per read) for the peer's, so that
 * input still unread cannot turn the close into a reset.
 */
static void
close_gracefully(struct fake_conn *c)
{
	struct pollfd p = { c->fd, POLLIN, 0 };
	char sink[4096];

	shutdown(c->fd, SHUT_WR);
	while (poll(&p, 1, 1000) == 1 && read(c->fd, sink, sizeof(sink)) > 0)
		;
}

/*
 * Parses a single-range "bytes=" spec against SIZE into [*off, *off+*len).
 * Returns 1 for a satisfiable range, 0 to ignore the header (malformed or
 * several ranges: RFC 9110 allows serving the whole file), -1 when
 * unsatisfiable.
 */
static int
parse_range(const char *spec, off_t size, off_t *off, off_t *len)
{
	char *end;
	intmax_t first, last;

	if (strncasecmp(spec, "bytes=", 6) != 0 || strchr(spec, ',') != NULL)
		return 0;
	spec += 6;
	if (*spec == '-') { /* the last N bytes */
		last = strtoimax(spec + 1, &end, 10);
		if (end == spec + 1 || *end != '\0' || last < 0)
			return 0;
		if (last == 0 || size == 0)
			return -1;
		*len = last < size ? (off_t)last : size;
		*off = size - *len;
		return 1;
	}
	first = strtoimax(spec, &end, 10);
	if (end == spec || *end != '-' || first < 0)
		return 0;
	spec = end + 1;
	last = size - 1;
	if (*spec != '\0') {
		last = strtoimax(spec, &end, 10);
		if (*end != '\0' || last < first)
			return 0;
		if (last >= size)
			last = size - 1;
	}
	if (first >= size)
		return -1;
	*off = first;
	*len = last - first + 1;
	return 1;
}

/*
 * Sends LEN bytes of FD from OFF, in pieces of at most 64 KiB; with PACE,
 * at --rate bytes per second in pieces of a tenth of a second's worth.
 */
static int
send_body(struct fake_conn *c, int fd, off_t off, off_t len, int pace)
{
	char *buf;
	size_t piece = PIECE_MAX;
	off_t sent = 0;
	double t0 = now_s(), due;
	ssize_t r;
	int rc = 0;

	if (pace && (size_t)(rate / 10) < piece)
		piece = rate >= 10 ? (size_t)(rate / 10) : 1;
	if ((buf = malloc(piece)) == NULL)
		return -1;
	while (sent < len) {
		size_t want =
		    (size_t)(len - sent) < piece ? (size_t)(len - sent) : piece;

		if (pace && (due = t0 + (double)sent / rate - now_s()) > 0)
			sleep_ms((long)(due * 1000) + 1);
		r = pread(fd, buf, want, off + sent);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0 || write_all(c->fd, buf, (size_t)r) == -1) {
			rc = -1; /* file shrank, or the peer went away */
			break;
		}
		sent += r;
	}
	free(buf);
	return rc;
}

/*
 * The file modes.  Returns 0 to keep the connection, -1 to close it (a mode
 * that ended it closes the socket itself and sets c->fd to -1).
 */
static int
serve_file(struct fake_conn *c, const struct fake_request *rq,
    const struct fake_rule *r)
{
	static const struct linger rst = { 1, 0 }; /* close sends RST */
	struct stat st;
	struct tm tm;
	char mtime[64], crange[128] = "", pad[PAD_MAX + 32] = "";
	const char *base;
	off_t off = 0, len;
	int fd, code = 200, n, rc = 0;

	if ((fd = open(r->arg, O_RDONLY)) == -1 || fstat(fd, &st) == -1) {
		if (fd != -1)
			close(fd);
		return respond(c, rq, 500, "text/plain", "cannot open file\n",
		    "");
	}
	len = st.st_size;
	if (honour_maxsize && rq->maxsize != NULL && atoll(rq->maxsize) > 0 &&
	    st.st_size > atoll(rq->maxsize)) {
		close(fd);
		return respond(c, rq, 406, "text/plain",
		    "larger than X-DEBUGINFOD-MAXSIZE\n", "");
	}
	if (rq->range != NULL) {
		switch (parse_range(rq->range, st.st_size, &off, &len)) {
		case -1:
			close(fd);
			snprintf(crange, sizeof(crange),
			    "Content-Range: bytes */%jd\r\n",
			    (intmax_t)st.st_size);
			return respond(c, rq, 416, "text/plain",
			    "range not satisfiable\n", crange);
		case 1:
			code = 206;
			snprintf(crange, sizeof(crange),
			    "Content-Range: bytes %jd-%jd/%jd\r\n",
			    (intmax_t)off, (intmax_t)(off + len - 1),
			    (intmax_t)st.st_size);
			break;
		}
	}
	gmtime_r(&st.st_mtime, &tm);
	strftime(mtime, sizeof(mtime), "%a, %d %b %Y %H:%M:%S GMT", &tm);
	base = strrchr(r->arg, '/') != NULL ? strrchr(r->arg, '/') + 1 : r->arg;
	if (pad_header > 0) {
		memcpy(pad, "X-DEBUGINFOD-PAD: ", 18);
		memset(pad + 18, (int)pad_byte, (size_t)pad_header);
		memcpy(pad + 18 + pad_header, "\r\n", 3);
	}
	n = format_head(c, rq, code,
	    "Content-Type: application/octet-stream\r\n"
	    "Content-Length: %jd\r\n%s"
	    "Accept-Ranges: bytes\r\n"
	    "Last-Modified: %s\r\n"
	    "X-DEBUGINFOD-SIZE: %jd\r\n"
	    "X-DEBUGINFOD-FILE: /fake/%s\r\n"
	    "X-DEBUGINFOD-ARCHIVE: /fake/archive.deb\r\n%s",
	    (intmax_t)len, crange, mtime, (intmax_t)st.st_size, base, pad);
	if (n == -1 || write_all(c->fd, c->out, (size_t)n) == -1) {
		close(fd);
		return -1;
	}
	switch (r->mode == M_RESUMABLE ? (rq->range != NULL ? M_OK : M_TRUNCATE)
				       : r->mode) {
	case M_STALL:
		wait_peer_close(c);
		rc = -1;
		break;
	case M_TRUNCATE:
	case M_RESET:
		if (!rq->head_only)
			(void)send_body(c, fd, off, len / 2, 0);
		if (r->mode == M_RESET)
			setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &rst,
			    sizeof(rst));
		else
			close_gracefully(c);
		close(c->fd);
		c->fd = -1;
		rc = -1;
		break;
	default:
		if (!rq->head_only)
			rc = send_body(c, fd, off, len, r->mode == M_TRICKLE);
		break;
	}
	close(fd);
	return rc;
}

/* Answers one request; 0 to keep the connection open, -1 to close it. */
static int
answer(struct fake_conn *c, const struct fake_request *rq)
{
	const struct fake_rule *r;
	const char *id, *slash;
	char extra[OUT_MAX];
	int i;

	if (strcmp(rq->method, "GET") != 0 && !rq->head_only)
		return respond(c, rq, 405, "text/plain", "GET or HEAD only\n",
		    "Allow: GET, HEAD\r\n");
	if (strcmp(rq->target, "/") == 0)
		return respond(c, rq, 200, "text/plain", "fakeupstream\n", "");
	r = NULL;
	if (strncmp(rq->target, "/metadata?", 10) == 0) {
		r = find_rule("metadata", 8);
		if (r != NULL && strcmp(r->id, "metadata") != 0)
			r = NULL;
	} else if (strncmp(rq->target, "/buildid/", 9) == 0) {
		id = rq->target + 9;
		slash = strchr(id, '/');
		if (slash != NULL && slash > id && slash[1] != '\0')
			r = find_rule(id, (size_t)(slash - id));
	}
	if (r == NULL)
		return respond(c, rq, 404, "text/plain", "not found\n", "");
	for (i = 0; gate != NULL && i < 60 * 20 && access(gate, F_OK) != 0; i++)
		sleep_ms(50);

	switch (r->mode) {
	case M_HANG:
		wait_peer_close(c);
		return -1;
	case M_LATE:
		sleep_ms(late_ms);
		return serve_file(c, rq, r);
	case M_HTML:
		return respond(c, rq, 200, "text/html", html_page, "");
	case M_STATUS: {
		int code = atoi(r->arg);
		char body[64];

		snprintf(body, sizeof(body), "fakeupstream: status %d\n", code);
		return respond(c, rq, code, "text/plain", body, "");
	}
	case M_REDIRECT:
	case M_REDIRECTLOOP:
		snprintf(extra, sizeof(extra), "Location: %s\r\n",
		    r->mode == M_REDIRECT ? r->arg : rq->target);
		return respond(c, rq, 302, "text/plain", "redirect\n", extra);
	default:
		return serve_file(c, rq, r);
	}
}

/* Answers CODE to a request we cannot parse, and ends the connection. */
static void
refuse(struct fake_conn *c, int code, const char *body)
{
	static const struct fake_request closing = { 0 };

	if (respond(c, &closing, code, "text/plain", body, "") == 0)
		close_gracefully(c);
}

static void *
conn_main(void *arg)
{
	struct fake_conn *c = arg;
	struct fake_request rq;
	long hlen;

	for (;;) {
		if ((hlen = read_head(c)) <= 0) {
			if (hlen == -2)
				refuse(c, 431, "request head too large\n");
			break;
		}
		c->buf[hlen - 1] = '\0';
		if (parse_head(c->buf, &rq) == -1) {
			refuse(c, 400, "bad request\n");
			break;
		}
		log_request(&rq);
		if (delay_ms > 0)
			sleep_ms(delay_ms);
		if (answer(c, &rq) == -1 || !rq.keep_alive)
			break;
		c->len -= (size_t)hlen;
		memmove(c->buf, c->buf + hlen, c->len);
	}
	if (c->fd != -1)
		close(c->fd);
	free(c);
	return NULL;
}

static void *
accept_main(void *arg)
{
	int lfd = *(int *)arg, fd;
	struct timeval tv = { SEND_TIMEOUT_S, 0 };
	pthread_attr_t attr;
	pthread_t t;
	struct fake_conn *c;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	for (;;) {
		if ((fd = accept(lfd, NULL, NULL)) == -1) {
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM)
				sleep_ms(10);
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if ((c = malloc(sizeof(*c))) == NULL) {
			close(fd);
			continue;
		}
		c->fd = fd;
		c->len = 0;
		if (pthread_create(&t, &attr, conn_main, c) != 0) {
			close(fd);
			free(c);
		}
	}
	return NULL;
}

/*
 * Listens on ADDR port *port (0: any free port); returns the socket and the
 * port in *port.  SO_REUSEADDR lets a restarted server take back its port
 * while the connections it closed are in TIME_WAIT (the soak test restarts
 * an upstream this way).
 */
static int
listen_on(const char *addr, int *port)
{
	struct addrinfo hints = { 0 }, *ai;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char serv[NI_MAXSERV], want[16];
	int fd, e, one = 1;

	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(want, sizeof(want), "%d", *port);
	if ((e = getaddrinfo(addr, want, &hints, &ai)) != 0) {
		fprintf(stderr, "fakeupstream: %s: %s\n", addr,
		    gai_strerror(e));
		return -1;
	}
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) == -1 ||
	    listen(fd, 512) == -1 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) == -1 ||
	    getnameinfo((struct sockaddr *)&ss, sl, NULL, 0, serv, sizeof(serv),
		NI_NUMERICSERV) != 0) {
		fprintf(stderr, "fakeupstream: listen on %s: %s\n", addr,
		    strerror(errno));
		freeaddrinfo(ai);
		return -1;
	}
	freeaddrinfo(ai);
	*port = atoi(serv);
	return fd;
}

/* Writes "PORT\n" to PATH.tmp and renames it to PATH. */
static int
write_port_file(const char *path, int port)
{
	char tmp[PATH_MAX];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if ((f = fopen(tmp, "w")) == NULL)
		return -1;
	fprintf(f, "%d\n", port);
	if (fclose(f) == EOF || rename(tmp, path) == -1)
		return -1;
	return 0;
}

/* A non-negative decimal option value, or exit 2. */
static long
number(const char *s, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < 0) {
		fprintf(stderr, "fakeupstream: bad %s: %s\n", what, s);
		exit(2);
	}
	return v;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "port", required_argument, NULL, 'P' },
		{ "port-file", required_argument, NULL, 'p' },
		{ "log", required_argument, NULL, 'L' },
		{ "delay", required_argument, NULL, 'd' },
		{ "late", required_argument, NULL, 'T' },
		{ "rate", required_argument, NULL, 'r' },
		{ "pad-header", required_argument, NULL, 'H' },
		{ "pad-byte", required_argument, NULL, 'B' },
		{ "maxsize", no_argument, NULL, 'M' },
		{ "gate", required_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *addr = "127.0.0.1", *port_file = NULL;
	sigset_t stop;
	pthread_t t;
	int ch, i, lfd, port = 0, sig;
	long v;

	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'l':
			addr = optarg;
			break;
		case 'P':
			if ((v = number(optarg, "--port")) > 65535) {
				fprintf(stderr,
				    "fakeupstream: bad --port: %s\n", optarg);
				return 2;
			}
			port = (int)v;
			break;
		case 'p':
			port_file = optarg;
			break;
		case 'L':
			log_fd = open(optarg,
			    O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
			if (log_fd == -1) {
				fprintf(stderr, "fakeupstream: %s: %s\n",
				    optarg, strerror(errno));
				return 1;
			}
			break;
		case 'd':
			delay_ms = number(optarg, "--delay");
			break;
		case 'M':
			honour_maxsize = 1;
			break;
		case 'G':
			gate = optarg;
			break;
		case 'T':
			late_ms = number(optarg, "--late");
			break;
		case 'B':
			if ((pad_byte = number(optarg, "--pad-byte")) < 1 ||
			    pad_byte > 255) {
				fprintf(stderr,
				    "fakeupstream: bad --pad-byte\n");
				return 2;
			}
			break;
		case 'H':
			if ((pad_header = number(optarg, "--pad-header")) >
			    PAD_MAX) {
				fprintf(stderr,
				    "fakeupstream: --pad-header: at most %d\n",
				    PAD_MAX);
				return 2;
			}
			break;
		case 'r':
			if ((rate = number(optarg, "--rate")) == 0)
				rate = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	nrules = (size_t)(argc - optind);
	if ((rules = calloc(nrules + 1, sizeof(*rules))) == NULL)
		return 1;
	for (i = optind; i < argc; i++)
		if (parse_rule(argv[i], &rules[i - optind]) == -1) {
			usage(stderr);
			return 2;
		}

	/* Only the main thread takes the stop signals, with sigwait(). */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);

	if ((lfd = listen_on(addr, &port)) == -1)
		return 1;
	if (pthread_create(&t, NULL, accept_main, &lfd) != 0) {
		fprintf(stderr, "fakeupstream: cannot start a thread\n");
		return 1;
	}
	if (port_file != NULL && write_port_file(port_file, port) == -1) {
		fprintf(stderr, "fakeupstream: %s: %s\n", port_file,
		    strerror(errno));
		return 1;
	}
	printf("port %d\n", port);
	fflush(stdout);
	while (sigwait(&stop, &sig) != 0)
		;
	return 0;
}
