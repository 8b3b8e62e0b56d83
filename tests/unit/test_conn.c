/*
 * tests/unit/test_conn.c: a connection's state machine (daemon/conn.c)
 * over loopback TCP, on the test's own loop (tests/httploop.h) with a
 * handler of the test's and the real pool; the timeouts are tested with
 * short configured ones (one second each).
 *
 * Checked: READ -> handler -> WRITE -> READ again on a kept-alive
 * connection; an answer that comes later (WAIT, from the test or from a
 * pool completion) -> WRITE -> READ; pipelined requests answered in
 * order, the second not dispatched before the first is answered; a
 * growing body sent as far as it may go, then on a wake, to its end or to
 * a cut, the exchange's end told once; HEAD; a request body received
 * (BODY) for a PUT, in pieces, then the answer and the close; LINGER
 * after "Connection: close" until the client closes; a head not complete
 * within header-timeout answered 408 and closed; an idle kept-alive
 * connection closed after keepalive-timeout; a response the client does
 * not read abandoned after send-timeout; bad requests answered and
 * closed.  Waits are for conditions, bounded by WAIT_SECONDS; none is a
 * sleep.
 */
#include "tests/rig.h"

#include "tests/httploop.h"

#define BIG (64u << 20) /* more than the socket buffers hold */

static int handled; /* requests the handler was given */
static struct conn *later; /* a request answered when the test says */
static struct conn *streaming; /* a growing body */
static uint64_t stream_avail_n;
static int stream_failed, stream_ends;
static char body_got[64];
static int body_fd = -1;

static int
is(const struct request *req, const char *target)
{
	return req->target.n == strlen(target) &&
	    memcmp(req->target.p, target, req->target.n) == 0;
}

static void
pool_nothing(void *arg)
{
}

static void
pool_done(void *arg)
{
	conn_send_text(arg, 200, "text/plain", "pool\n", 5);
}

static int
stream_avail(void *arg, uint64_t *n)
{
	*n = stream_avail_n;
	return stream_failed ? -1 : 0;
}

static void
stream_end(void *arg)
{
	stream_ends++;
}

static void
body_done(void *arg, int rc)
{
	struct conn *c = arg;
	char buf[64];
	ssize_t n;
	int fd = open(at("put"), O_RDONLY);

	n = fd == -1 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd != -1)
		close(fd);
	close(body_fd);
	body_fd = -1;
	if (rc != 0) {
		snprintf(body_got, sizeof(body_got), "lost %d", rc);
		if (rc != -1)
			conn_send_error(c, 507, "no room");
		return;
	}
	snprintf(body_got, sizeof(body_got), "%.*s", n > 0 ? (int)n : 0, buf);
	conn_send_text(c, 201, "text/plain", "stored\n", 7);
}

/* An artifact of size bytes of the file at name. */
static void
send_file(struct conn *c, const char *name, int stream)
{
	struct artifact art;
	struct stat st;
	int fd = open(at(name), O_RDONLY);

	fstat(fd, &st);
	memset(&art, 0, sizeof(art));
	art.size = (uint64_t)st.st_size;
	art.mtime = NOW;
	response_etag(&art, art.size, (int64_t)NOW * 1000000000, 0);
	art.cache = "MISS";
	if (stream) {
		streaming = c;
		conn_on_end(c, stream_end, NULL);
		conn_send_stream(c, fd, &art, stream_avail, NULL);
	} else {
		conn_send_file(c, fd, 0, &art);
	}
}

static void
handler_request(struct conn *c, void *state)
{
	const struct request *req = conn_request(c);
	handled++;
	if (is(req, "/now")) {
		conn_send_text(c, 200, "text/plain", "now\n", 4);
	} else if (is(req, "/later")) {
		conn_wait(c);
		later = c;
	} else if (is(req, "/pool")) {
		conn_wait(c);
		pool_submit(rig.pool, pool_nothing, conn_inbox(c), pool_done,
		    c);
	} else if (is(req, "/small")) {
		send_file(c, "small", 0);
	} else if (is(req, "/big")) {
		send_file(c, "big", 0);
	} else if (is(req, "/stream")) {
		send_file(c, "small", 1);
	} else if (is(req, "/put") && req->method == METHOD_PUT) {
		/* The file stays the handler's until the body is in. */
		body_fd = open(at("put"), O_RDWR | O_CREAT | O_TRUNC, 0600);
		conn_recv_body(c, body_fd, body_done, c);
	} else {
		conn_send_error(c, 404, "no such thing");
	}
}

/* The one connection's state, or -1 when there is none. */
static int
state(void)
{
	return hl.t.conns != NULL ? (int)hl.t.conns->state : -1;
}

static void
get(struct hc *c, const char *target)
{
	char req[256];

	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: t\r\n\r\n",
	    target);
	hc_say(c->fd, req);
}

/* ------------------------------------------------------------- tests */

/*
 * The timeouts of the configuration are for the tests of timeouts: the
 * others run under the defaults, so that a loaded machine cannot time
 * them out between two steps.
 */
static struct config short_timeouts;

static void
test_keepalive(void)
{
	struct hresp r;
	struct hc c;

	hc_open(&c);
	get(&c, "/now");
	hc_response(&c, &r, 0);
	ok(r.status == 200 && strcmp(r.body, "now\n") == 0,
	    "READ -> the handler answers at once -> WRITE: 200");
	ok(hc_header(&r, "Connection") == NULL ||
		strcasecmp(hc_header(&r, "Connection"), "close") != 0,
	    "... the connection kept alive");
	hresp_free(&r);
	rig_spin(3);
	is_int(state(), CS_READ, "... READ again");
	get(&c, "/now");
	hc_response(&c, &r, 0);
	ok(r.status == 200 && hloop_conns() == 1,
	    "a second request on it: answered on the same connection");
	hresp_free(&r);

	/* HEAD: the head of a file, no body; the connection goes on. */
	hc_say(c.fd, "HEAD /small HTTP/1.1\r\nHost: t\r\n\r\n");
	hc_response(&c, &r, 1);
	ok(r.status == 200 && r.body_len == 0 &&
		strcmp(hc_header(&r, "Content-Length"), "10") == 0,
	    "HEAD: the length of the file, no body");
	hresp_free(&r);
	get(&c, "/small");
	hc_response(&c, &r, 0);
	ok(r.status == 200 && r.whole && strcmp(r.body, "0123456789") == 0,
	    "... and GET on the same connection the file by sendfile");
	hresp_free(&r);
	hc_close(&c);
	RUN_UNTIL(hloop_conns() == 0);
	is_int(hloop_conns(), 0, "the client closes: the connection goes");
}

static void
test_wait(void)
{
	struct hresp r;
	struct hc c;

	hc_open(&c);
	get(&c, "/later");
	RUN_UNTIL(later != NULL);
	is_int(state(), CS_WAIT, "an answer that comes later: WAIT");
	rig_spin(3);
	ok(hc_pump(&c) == 0 && c.len == 0, "... nothing sent meanwhile");
	conn_send_text(later, 200, "text/plain", "later\n", 6);
	later = NULL;
	hc_response(&c, &r, 0);
	ok(r.status == 200 && strcmp(r.body, "later\n") == 0,
	    "... then WRITE: the answer");
	hresp_free(&r);
	rig_spin(3);
	is_int(state(), CS_READ, "... and READ again");

	get(&c, "/pool");
	hc_response(&c, &r, 0);
	ok(r.status == 200 && strcmp(r.body, "pool\n") == 0,
	    "an answer from a pool completion on the connection's loop");
	hresp_free(&r);
	hc_close(&c);
	RUN_UNTIL(hloop_conns() == 0);
}

static void
test_pipelined(void)
{
	struct hresp r1, r2;
	struct hc c;
	int before = handled;

	hc_open(&c);
	hc_say(c.fd,
	    "GET /later HTTP/1.1\r\nHost: t\r\n\r\n"
	    "GET /now HTTP/1.1\r\nHost: t\r\n\r\n");
	RUN_UNTIL(later != NULL);
	rig_spin(3);
	is_int(handled, before + 1,
	    "pipelined requests: the second waits while the first does");
	conn_send_text(later, 200, "text/plain", "first\n", 6);
	later = NULL;
	hc_response(&c, &r1, 0);
	hc_response(&c, &r2, 0);
	ok(strcmp(r1.body, "first\n") == 0 && strcmp(r2.body, "now\n") == 0,
	    "... answered in order");
	is_int(handled, before + 2,
	    "... the second dispatched after the first");
	hresp_free(&r1);
	hresp_free(&r2);
	hc_close(&c);
	RUN_UNTIL(hloop_conns() == 0);
}

static void
test_stream(void)
{
	struct hresp r;
	struct hc c;
	time_t until;

	hc_open(&c);
	stream_avail_n = 4;
	stream_failed = 0;
	stream_ends = 0;
	get(&c, "/stream");
	RUN_UNTIL(streaming != NULL && (hc_pump(&c), c.len > 0));
	until = time(NULL) + WAIT_SECONDS;
	while (memmem(c.buf, c.len, "0123", 4) == NULL && time(NULL) <= until) {
		event_base_loop(rig.base, EVLOOP_ONCE);
		hc_pump(&c);
	}
	rig_spin(3);
	hc_pump(&c);
	ok(c.len >= 4 && memcmp(c.buf + c.len - 4, "0123", 4) == 0,
	    "a growing body: as far as it may go");
	is_int(stream_ends, 0, "... the exchange not over");
	stream_avail_n = 10;
	conn_stream_wake(streaming);
	hc_response(&c, &r, 0);
	ok(r.status == 200 && r.whole && strcmp(r.body, "0123456789") == 0,
	    "woken with more: to its end");
	RUN_UNTIL(stream_ends == 1);
	is_int(stream_ends, 1, "... its end told once");
	hresp_free(&r);
	streaming = NULL;

	stream_avail_n = 3;
	stream_ends = 0;
	get(&c, "/stream");
	RUN_UNTIL(streaming != NULL);
	rig_spin(3);
	stream_failed = 1;
	conn_stream_wake(streaming);
	ok(hc_wait_eof(&c), "a growing body that fails: the connection is cut");
	ok(memmem(c.buf, c.len, "012", 3) != NULL &&
		memmem(c.buf, c.len, "0123", 4) == NULL,
	    "... after the bytes it had, never the rest");
	is_int(stream_ends, 1, "... its end told once");
	streaming = NULL;
	hc_close(&c);
	RUN_UNTIL(hloop_conns() == 0);
}

static void
test_body(void)
{
	struct hresp r;
	struct hc c;

	hc_open(&c);
	hc_say(c.fd,
	    "PUT /put HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n"
	    "\r\nabc");
	RUN_UNTIL(state() == CS_BODY);
	is_int(state(), CS_BODY, "a PUT with a body: BODY, receiving it");
	rig_spin(3);
	is_int(state(), CS_BODY, "... waiting for the rest");
	hc_say(c.fd, "defghij");
	hc_response(&c, &r, 0);
	is_int(r.status, 201, "... then the handler's answer");
	is_str(body_got, "abcdefghij", "... with the whole body in its file");
	ok(hc_header(&r, "Connection") != NULL &&
		strcasecmp(hc_header(&r, "Connection"), "close") == 0,
	    "... and the connection closed after it");
	ok(hc_wait_eof(&c), "... by the server");
	hresp_free(&r);
	hc_close(&c);
	RUN_UNTIL(hloop_conns() == 0);

	/* The client leaves mid-body: the handler learns it, no answer. */
	hc_open(&c);
	hc_say(c.fd,
	    "PUT /put HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n"
	    "\r\nabc");
	RUN_UNTIL(state() == CS_BODY);
	hc_close(&c);
	RUN_UNTIL(hloop_conns() == 0);
	is_str(body_got, "lost -1",
	    "a client that leaves mid-body: the handler is told, the "
	    "connection goes");
}

static void
test_linger(void)
{
	struct hresp r;
	struct hc c;

	hc_open(&c);
	hc_say(c.fd,
	    "GET /now HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
	hc_response(&c, &r, 0);
	ok(r.status == 200 &&
		strcasecmp(hc_header(&r, "Connection"), "close") == 0,
	    "Connection: close: answered, saying so");
	hresp_free(&r);
	ok(hc_wait_eof(&c), "... then our side is shut down");
	is_int(state(), CS_LINGER, "... LINGER: waiting for the client");
	hc_close(&c);
	RUN_UNTIL(hloop_conns() == 0);
	is_int(hloop_conns(), 0, "... which closes: the connection goes");
}

static void
test_timeouts(void)
{
	struct hresp r;
	struct hc c;

	hc_open(&c);
	hc_say(c.fd, "GET /now HTTP/1.1\r\nHo");
	hc_response(&c, &r, 0);
	is_int(r.status, 408, "a head not whole within header-timeout: 408");
	ok(hc_wait_eof(&c), "... and the connection closed");
	hresp_free(&r);
	hc_close(&c);
	RUN_UNTIL(hloop_conns() == 0);

	hc_open(&c);
	get(&c, "/now");
	hc_response(&c, &r, 0);
	is_int(r.status, 200, "a request answered");
	hresp_free(&r);
	ok(hc_wait_eof(&c) && c.len == 0,
	    "an idle kept-alive connection: closed after keepalive-timeout, "
	    "without a word");
	hc_close(&c);
	RUN_UNTIL(hloop_conns() == 0);
	is_int(hloop_conns(), 0, "... and gone");

	/* The client asks for a large file and reads none of it. */
	hc_open_small(&c);
	get(&c, "/big");
	RUN_UNTIL(state() == CS_WRITE);
	is_int(state(), CS_WRITE, "a response the client does not read: WRITE");
	RUN_UNTIL(hloop_conns() == 0);
	is_int(hloop_conns(), 0, "... abandoned after send-timeout");
	hc_wait_eof(&c);
	ok(c.eof && c.len > 0 && c.len < BIG,
	    "... the client has a cut response");
	hc_close(&c);
}

static void
test_bad(void)
{
	struct hresp r;
	struct hc c;

	hc_open(&c);
	hc_say(c.fd,
	    "GET /now HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n"
	    "\r\nabc");
	hc_response(&c, &r, 0);
	is_int(r.status, 400, "a GET with a body: 400");
	ok(hc_header(&r, "Connection") != NULL &&
		strcasecmp(hc_header(&r, "Connection"), "close") == 0 &&
		hc_wait_eof(&c),
	    "... and closed at once");
	hresp_free(&r);
	hc_close(&c);

	hc_open(&c);
	hc_say(c.fd, "DELETE /now HTTP/1.1\r\nHost: t\r\n\r\n");
	hc_response(&c, &r, 0);
	ok(r.status == 405 && hc_header(&r, "Allow") != NULL,
	    "a method the server does not know: 405 with Allow");
	rig_spin(3);
	is_int(state(), CS_READ, "... the connection kept");
	hresp_free(&r);
	hc_close(&c);

	hc_open(&c);
	hc_say(c.fd, "GARBAGE\r\n\r\n");
	hc_response(&c, &r, 0);
	is_int(r.status, 400, "a request line that is not one: 400");
	ok(hc_header(&r, "Connection") != NULL &&
		strcasecmp(hc_header(&r, "Connection"), "close") == 0 &&
		hc_wait_eof(&c),
	    "... and closed at once");
	hresp_free(&r);
	hc_close(&c);
	RUN_UNTIL(hloop_conns() == 0);
}

int
main(void)
{
	static const char *const opts[] = { "--access-log", "off", NULL };
	struct http_handler handler = { NULL, NULL, handler_request, NULL };

	if (rig_open("test_conn", opts, NULL, NULL) == -1)
		return 1;
	write_text("small", "0123456789");
	shell("truncate -s %u '%s'", BIG, at("big"));
	if (hloop_open(&rig.cfg, &handler, rig.base, rig.inbox) == -1) {
		printf("Bail out! cannot listen\n");
		return 1;
	}

	test_keepalive();
	test_wait();
	test_pipelined();
	test_stream();
	test_body();
	test_linger();
	test_bad();
	hloop_close();

	/* A copy that only this test reads: its strings are rig.cfg's. */
	short_timeouts = rig.cfg;
	short_timeouts.header_timeout = 1;
	short_timeouts.keepalive_timeout = 1;
	short_timeouts.send_timeout = 1;
	if (hloop_open(&short_timeouts, &handler, rig.base, rig.inbox) == -1) {
		printf("Bail out! cannot listen\n");
		return 1;
	}
	test_timeouts();
	hloop_close();
	rig_close();
	return tap_done();
}
