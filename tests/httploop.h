/*
 * tests/httploop.h: daemon/conn.c's connections on a unit test's own
 * loop, and a client that speaks to them over loopback TCP.
 *
 * hloop_open() builds what daemon/http.c would for one event-loop thread
 * (struct httpd, struct http_thread of daemon/http_int.h: the handler and
 * its thread state, a snapshot of the configuration (whose access rules
 * and request path the test sets in hl.snap), the configured timeouts as
 * common timeouts of the base) on the test's loop, and a listener on 127.0.0.1 port 0 whose
 * accepted sockets become connections (conn_new), as accept_cb does.
 * The client side is a non-blocking socket of the test: hc_send writes a
 * request, hc_response reads one response while the loop turns (bounded
 * by WAIT_SECONDS), so connection and client share the one thread and
 * every step is deterministic.
 *
 * Header-only; link daemon/conn.c (and daemon/tls.c) with the test.
 */
#ifndef TESTS_HTTPLOOP_H
#define TESTS_HTTPLOOP_H

#include <sys/socket.h>

#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "daemon/http_int.h"

#ifndef WAIT_SECONDS
#define WAIT_SECONDS 30
#endif

struct hloop {
	struct httpd h;
	struct http_thread t;
	struct snapshot snap; /* the thread's: cfg, access and rd the test's */
	struct event_base *base;
	int lfd;
	unsigned short port;
	struct event *lev;
};

static struct hloop hl;

static void
hloop_accept_cb(evutil_socket_t lfd, short what, void *arg)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int fd;

	while ((fd = accept4(lfd, (struct sockaddr *)&ss, &len,
		    SOCK_NONBLOCK | SOCK_CLOEXEC)) != -1) {
		atomic_fetch_add(&hl.h.nconns, 1);
		conn_new(&hl.t, fd, &ss, NULL);
		len = sizeof(ss);
	}
}

static const struct timeval *
hloop_timeout(unsigned seconds)
{
	struct timeval tv = { (time_t)seconds, 0 };

	return event_base_init_common_timeout(hl.base, &tv);
}

/*
 * Connections of handler on base (whose pool completions come to inbox),
 * with cfg's timeouts and limits.  0, or -1.
 */
static int
hloop_open(const struct config *cfg, const struct http_handler *handler,
    struct event_base *base, struct pool_inbox *inbox)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);

	memset(&hl, 0, sizeof(hl));
	hl.base = base;
	atomic_init(&hl.snap.refs, 1);
	hl.snap.cfg = cfg;
	hl.h.cfg = cfg;
	hl.h.handler = *handler;
	hl.h.nthreads = 1;
	hl.h.threads = &hl.t;
	pthread_rwlock_init(&hl.h.fdlock, NULL);
	hl.t.h = &hl.h;
	hl.t.snap = &hl.snap;
	hl.t.base = base;
	hl.t.inbox = inbox;
	hl.t.spare_fd = -1;
	if (http_thread_timeouts(&hl.t) == -1)
		return -1;
	hl.t.tv_linger = hloop_timeout(LINGER_SECONDS);
	if (handler->thread_start != NULL)
		hl.t.state = handler->thread_start(handler->arg, base, inbox);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((hl.lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0)) == -1 ||
	    bind(hl.lfd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(hl.lfd, 64) == -1 ||
	    getsockname(hl.lfd, (struct sockaddr *)&sin, &len) == -1)
		return -1;
	hl.port = ntohs(sin.sin_port);
	hl.lev = event_new(base, hl.lfd, EV_READ | EV_PERSIST, hloop_accept_cb,
	    NULL);
	return hl.lev == NULL ? -1 : event_add(hl.lev, NULL);
}

/* Connections open now. */
static unsigned hloop_conns(void) __attribute__((unused));

static unsigned
hloop_conns(void)
{
	return atomic_load(&hl.h.nconns);
}

/* Free every connection left, the handler's state and the listener. */
static void
hloop_close(void)
{
	while (hl.t.conns != NULL) {
		hl.t.conns->depth = 0;
		conn_free(hl.t.conns);
	}
	if (hl.t.state != NULL && hl.h.handler.thread_stop != NULL)
		hl.h.handler.thread_stop(hl.t.state);
	logbuf_flush(&hl.t.log);
	event_free(hl.lev);
	close(hl.lfd);
	pthread_rwlock_destroy(&hl.h.fdlock);
}

/*
 * A client socket connected to the listener, non-blocking, with a receive
 * buffer of rcvbuf bytes (0: the system's); -1.
 */
static int
hc_connect(int rcvbuf)
{
	struct sockaddr_in sin;
	int fd;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(hl.port);
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		return -1;
	if (rcvbuf > 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1) {
		close(fd);
		return -1;
	}
	evutil_make_socket_nonblocking(fd);
	return fd;
}

/* Send all of text (a request, or part of one). */
static void
hc_send(int fd, const char *text, size_t len)
{
	ssize_t n;

	while (len > 0) {
		n = send(fd, text, len, MSG_NOSIGNAL);
		if (n == -1 && errno == EAGAIN) {
			event_base_loop(hl.base, EVLOOP_NONBLOCK);
			continue;
		}
		if (n <= 0)
			return;
		text += n;
		len -= (size_t)n;
	}
}

static void
hc_say(int fd, const char *text)
{
	hc_send(fd, text, strlen(text));
}

/* What a client read on a connection, across responses. */
struct hc {
	int fd;
	char *buf;
	size_t len, cap;
	int eof; /* the server closed (FIN or reset) */
};

/* One response, parsed. */
struct hresp {
	int status; /* 0: none came */
	char head[8192];
	char *body;
	size_t body_len;
	int whole; /* the body as long as Content-Length said */
};

static void
hc_open(struct hc *c)
{
	memset(c, 0, sizeof(*c));
	c->fd = hc_connect(0);
}

/* A client that reads slowly: a small receive buffer. */
static void hc_open_small(struct hc *c) __attribute__((unused));

static void
hc_open_small(struct hc *c)
{
	memset(c, 0, sizeof(*c));
	c->fd = hc_connect(4096);
}

static void
hc_close(struct hc *c)
{
	if (c->fd != -1)
		close(c->fd);
	c->fd = -1;
	free(c->buf);
	c->buf = NULL;
	c->len = c->cap = 0;
}

/* Read what the socket has; 1 when something came (or the end). */
static int
hc_pump(struct hc *c)
{
	ssize_t n;
	int got = 0;

	for (;;) {
		if (c->cap - c->len < 65536) {
			char *nb = realloc(c->buf, c->cap + (1u << 20));

			if (nb == NULL)
				return got;
			c->buf = nb;
			c->cap += 1u << 20;
		}
		n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
		if (n > 0) {
			c->len += (size_t)n;
			got = 1;
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			c->eof = 1;
			return 1;
		}
		return got;
	}
}

/* The value of header name in a head, in a static buffer; NULL: none. */
static const char *
hc_header(const struct hresp *r, const char *name)
{
	static char val[1024];
	const char *p = strstr(r->head, "\r\n"), *e;
	size_t n = strlen(name);

	while (p != NULL && p[2] != '\0') {
		p += 2;
		e = strstr(p, "\r\n");
		if (strncasecmp(p, name, n) == 0 && p[n] == ':') {
			const char *v = p + n + 1;

			while (*v == ' ')
				v++;
			snprintf(val, sizeof(val), "%.*s",
			    (int)(e != NULL ? e - v : (long)strlen(v)), v);
			return val;
		}
		p = e;
	}
	return NULL;
}

/*
 * Take the first complete response off c's bytes into r (head_only: the
 * answer to a HEAD, which has no body).  1 when there was one.
 */
static int
hc_take(struct hc *c, struct hresp *r, int head_only)
{
	const char *end, *cl;
	size_t hlen, blen = 0, have;

	if (c->len == 0)
		return 0;
	if ((end = memmem(c->buf, c->len, "\r\n\r\n", 4)) == NULL)
		return 0;
	hlen = (size_t)(end - c->buf) + 4;
	if (hlen >= sizeof(r->head))
		return 0;
	memset(r, 0, sizeof(*r));
	memcpy(r->head, c->buf, hlen);
	r->head[hlen] = '\0';
	if (sscanf(r->head, "HTTP/1.%*d %d", &r->status) != 1)
		r->status = -1;
	/* 1xx answers have no body. */
	if (!head_only && r->status >= 200 &&
	    (cl = hc_header(r, "Content-Length")) != NULL)
		blen = strtoull(cl, NULL, 10);
	have = c->len - hlen;
	if (have < blen && !c->eof)
		return 0;
	if (have > blen)
		have = blen;
	r->body = malloc(have + 1);
	memcpy(r->body, c->buf + hlen, have);
	r->body[have] = '\0';
	r->body_len = have;
	r->whole = have == blen;
	memmove(c->buf, c->buf + hlen + have, c->len - hlen - have);
	c->len -= hlen + have;
	return 1;
}

/*
 * The next response on c, the loop turning until it is whole or the
 * server closed (then what came of it).  0 when none came in time.
 */
static int
hc_response(struct hc *c, struct hresp *r, int head_only)
{
	time_t until = time(NULL) + WAIT_SECONDS;

	for (;;) {
		hc_pump(c);
		if (hc_take(c, r, head_only))
			return 1;
		if (c->eof || time(NULL) > until) {
			memset(r, 0, sizeof(*r));
			return 0;
		}
		event_base_loop(hl.base, EVLOOP_ONCE);
	}
}

/* Turn the loop until the server closed c (1), or WAIT_SECONDS (0). */
static int hc_wait_eof(struct hc *c) __attribute__((unused));

static int
hc_wait_eof(struct hc *c)
{
	time_t until = time(NULL) + WAIT_SECONDS;

	while (!c->eof && time(NULL) <= until) {
		hc_pump(c);
		if (!c->eof)
			event_base_loop(hl.base, EVLOOP_ONCE);
	}
	return c->eof;
}

static void
hresp_free(struct hresp *r)
{
	free(r->body);
	r->body = NULL;
}

#endif /* TESTS_HTTPLOOP_H */
