/*
 * tests/unit/test_curlev.c: libcurl multi on libevent (fetchers/curlev.c)
 * against a small HTTP server on 127.0.0.1, accepted on the same loop:
 * concurrent transfers all complete (the server answers none until every
 * one has arrived, so transfers run one after the other would never end),
 * a transfer removed mid-body ends without its callback and leaves neither
 * a connection nor an event behind, and a transfer to a server that never
 * answers ends by its timeout.  Every wait is for a condition, bounded by
 * LIMIT seconds of the loop.
 */
#include "fetchers/curlev.h"

#include <sys/socket.h>

#include <netinet/in.h>

#include <arpa/inet.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/tap.h"

#define LIMIT 30 /* seconds any wait may take */
/* Longer than any wait: a transfer that ends within one did not time out. */
#define XFER_TIMEOUT_MS (2 * LIMIT * 1000L)
#define CONC 8 /* concurrent transfers */
#define HELD_LENGTH 1000000 /* announced by /held, which sends less */

static struct event_base *base;

/* ------------------------------------------------- the test server */

struct peer_conn {
	struct server *srv;
	int fd;
	struct event *ev;
	char req[2048];
	size_t len;
	int answered; /* the head (and what body it sends) went out */
	int held; /* a request of /ok/ waiting for the others */
	size_t ok_size;
};

struct server {
	int fd;
	unsigned short port;
	struct event *ev;
	struct peer_conn *conns[64];
	size_t nconns;
	size_t held; /* /ok/ requests waiting */
	size_t closed; /* connections the client closed */
};

static void
conn_close(struct peer_conn *c)
{
	event_free(c->ev);
	close(c->fd);
	c->ev = NULL;
	c->fd = -1;
}

static void
send_all(int fd, const char *buf, size_t len)
{
	ssize_t n;

	while (len > 0 && (n = send(fd, buf, len, MSG_NOSIGNAL)) > 0) {
		buf += n;
		len -= (size_t)n;
	}
}

static void
send_ok(struct peer_conn *c)
{
	char head[256], *body;
	int n;

	n = snprintf(head, sizeof(head),
	    "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n"
	    "Connection: close\r\n\r\n",
	    c->ok_size);
	send_all(c->fd, head, (size_t)n);
	if ((body = malloc(c->ok_size)) != NULL) {
		memset(body, 'x', c->ok_size);
		send_all(c->fd, body, c->ok_size);
		free(body);
	}
	c->answered = 1;
	c->held = 0;
	conn_close(c);
}

/*
 * A whole request head came: /ok/N is answered with N bytes once CONC of
 * them wait; /held gets its head and 100 of HELD_LENGTH bytes, then
 * nothing; /hang gets nothing at all.  /ok/ connections are closed once
 * answered.
 */
static void
serve(struct peer_conn *c)
{
	struct server *srv = c->srv;
	char head[256];
	size_t i;
	int n;

	if (strncmp(c->req, "GET /ok/", 8) == 0) {
		c->ok_size = strtoul(c->req + 8, NULL, 10);
		c->held = 1;
		if (++srv->held < CONC)
			return;
		for (i = 0; i < srv->nconns; i++)
			if (srv->conns[i] != NULL && srv->conns[i]->held)
				send_ok(srv->conns[i]);
		srv->held = 0;
	} else if (strncmp(c->req, "GET /held ", 10) == 0) {
		n = snprintf(head, sizeof(head),
		    "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%100s",
		    HELD_LENGTH, "");
		send_all(c->fd, head, (size_t)n);
		c->answered = 1;
	}
}

static void
conn_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct peer_conn *c = arg;
	ssize_t n;

	n = recv(fd, c->req + c->len, sizeof(c->req) - 1 - c->len, 0);
	if (n <= 0) {
		/* The client closed it (or reset it): forget it. */
		c->srv->closed++;
		c->srv->held -= (size_t)c->held;
		conn_close(c);
		return;
	}
	c->len += (size_t)n;
	c->req[c->len] = '\0';
	if (!c->answered && !c->held && strstr(c->req, "\r\n\r\n") != NULL)
		serve(c);
}

static void
server_accept_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;
	struct peer_conn *c;
	int s;

	if ((s = accept(fd, NULL, NULL)) == -1)
		return;
	if (srv->nconns == sizeof(srv->conns) / sizeof(srv->conns[0]) ||
	    (c = calloc(1, sizeof(*c))) == NULL) {
		close(s);
		return;
	}
	c->srv = srv;
	c->fd = s;
	c->ev = event_new(base, s, EV_READ | EV_PERSIST, conn_read_cb, c);
	event_add(c->ev, NULL);
	srv->conns[srv->nconns++] = c;
}

static int
server_start(struct server *srv)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);

	memset(srv, 0, sizeof(*srv));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((srv->fd = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    bind(srv->fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(srv->fd, 64) == -1 ||
	    getsockname(srv->fd, (struct sockaddr *)&sin, &len) == -1)
		return -1;
	evutil_make_socket_nonblocking(srv->fd);
	srv->port = ntohs(sin.sin_port);
	srv->ev = event_new(base, srv->fd, EV_READ | EV_PERSIST,
	    server_accept_cb, srv);
	return srv->ev == NULL ? -1 : event_add(srv->ev, NULL);
}

static void
server_stop(struct server *srv)
{
	size_t i;

	for (i = 0; i < srv->nconns; i++) {
		if (srv->conns[i]->ev != NULL)
			conn_close(srv->conns[i]);
		free(srv->conns[i]);
	}
	event_free(srv->ev);
	close(srv->fd);
}

/* ------------------------------------------------------ transfers */

struct xfer {
	CURL *easy;
	size_t bytes; /* of body received */
	int done; /* the done callback ran */
	CURLcode rc;
	long status;
};

static size_t
xfer_write_cb(char *buf, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;

	x->bytes += size * n;
	return size * n;
}

static void
xfer_done_cb(CURL *easy, CURLcode rc, void *arg)
{
	struct xfer *x = arg;

	x->done++;
	x->rc = rc;
	curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &x->status);
}

static int
xfer_start(struct curlev *cv, struct xfer *x, const struct server *srv,
    const char *path, long timeout_ms)
{
	char url[256];

	memset(x, 0, sizeof(*x));
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", srv->port, path);
	if ((x->easy = curl_easy_init()) == NULL)
		return -1;
	curl_easy_setopt(x->easy, CURLOPT_URL, url);
	curl_easy_setopt(x->easy, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(x->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(x->easy, CURLOPT_WRITEFUNCTION, xfer_write_cb);
	curl_easy_setopt(x->easy, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(x->easy, CURLOPT_TIMEOUT_MS, timeout_ms);
	return curlev_add(cv, x->easy, xfer_done_cb, x);
}

/* ------------------------------------------------------- the loop */

static int expired;

static void
limit_cb(evutil_socket_t fd, short what, void *arg)
{
	expired = 1;
	event_base_loopbreak(base);
}

/* Run the loop until cond(arg) holds: 0, or -1 after LIMIT seconds. */
static int
run_until(int (*cond)(void *), void *arg)
{
	struct timeval tv = { LIMIT, 0 };
	struct event *limit = evtimer_new(base, limit_cb, NULL);

	expired = 0;
	evtimer_add(limit, &tv);
	while (!cond(arg) && !expired)
		event_base_loop(base, EVLOOP_ONCE);
	event_free(limit);
	return cond(arg) ? 0 : -1;
}

struct many {
	struct xfer x[CONC];
};

static int
all_done(void *arg)
{
	struct many *m = arg;
	int i;

	for (i = 0; i < CONC; i++)
		if (!m->x[i].done)
			return 0;
	return 1;
}

static int
one_done(void *arg)
{
	return ((struct xfer *)arg)->done != 0;
}

static int
got_bytes(void *arg)
{
	return ((struct xfer *)arg)->bytes > 0;
}

static int
one_closed(void *arg)
{
	return ((struct server *)arg)->closed > 0;
}

/* Events added to the loop: the server's, curlev's timer, curl's sockets. */
static int
loop_events(void)
{
	return event_base_get_num_events(base, EVENT_BASE_COUNT_ADDED);
}

static void
test_concurrent(struct curlev *cv, struct server *srv)
{
	struct many m;
	char path[64];
	int i, started = 0, right = 0;

	for (i = 0; i < CONC; i++) {
		snprintf(path, sizeof(path), "/ok/%d", 1000 * (i + 1));
		started +=
		    xfer_start(cv, &m.x[i], srv, path, XFER_TIMEOUT_MS) == 0;
	}
	is_int(started, CONC, "concurrent transfers added");
	ok(run_until(all_done, &m) == 0,
	    "every one ends, though none is answered before all have asked");
	for (i = 0; i < CONC; i++) {
		right += m.x[i].done == 1 && m.x[i].rc == CURLE_OK &&
		    m.x[i].status == 200 &&
		    m.x[i].bytes == (size_t)(1000 * (i + 1));
		curl_easy_cleanup(m.x[i].easy);
	}
	is_int(right, CONC, "... each once, with 200 and its own whole body");
}

static void
test_removed(struct curlev *cv, struct server *srv)
{
	struct xfer x;
	int before = loop_events();

	srv->closed = 0;
	ok(xfer_start(cv, &x, srv, "/held", XFER_TIMEOUT_MS) == 0,
	    "a transfer of a body that stops coming");
	ok(run_until(got_bytes, &x) == 0, "... has its first bytes");
	curlev_remove(cv, x.easy);
	ok(run_until(one_closed, srv) == 0,
	    "removed mid-body: its connection is closed");
	is_int(loop_events(), before, "... no event of it is left on the loop");
	is_int(x.done, 0, "... and its done callback never runs");
	ok(x.bytes < HELD_LENGTH, "... nor did its body end");
	curl_easy_cleanup(x.easy);
}

static void
test_timeout(struct curlev *cv, struct server *srv)
{
	struct xfer x;

	ok(xfer_start(cv, &x, srv, "/hang", 200) == 0,
	    "a transfer to a server that never answers, 200 ms allowed");
	ok(run_until(one_done, &x) == 0, "... ends");
	is_int(x.rc, CURLE_OPERATION_TIMEDOUT, "... by its timeout");
	is_int(x.bytes, 0, "... with no body");
	curl_easy_cleanup(x.easy);
}

int
main(void)
{
	struct server srv;
	struct curlev *cv;

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0 ||
	    (base = event_base_new()) == NULL || server_start(&srv) == -1 ||
	    (cv = curlev_new(base)) == NULL) {
		printf(
		    "Bail out! cannot set up the loop, curl or the server\n");
		return 1;
	}
	test_concurrent(cv, &srv);
	test_removed(cv, &srv);
	test_timeout(cv, &srv);
	curlev_free(cv);
	server_stop(&srv);
	event_base_free(base);
	curl_global_cleanup();
	return tap_done();
}
