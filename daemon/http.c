/*
 * daemon/http.c: listeners, event-loop threads and connections.
 *
 * Each thread runs one libevent loop with its own SO_REUSEPORT listening
 * socket per address, so the kernel balances new connections and threads
 * share nothing on the request path.  A connection moves through
 *
 *   READ   -> a complete head is parsed -> the handler answers at once
 *             (WRITE), or later from a pool completion (WAIT -> WRITE)
 *   BODY   -> (uploads) the handler has the body written to a file, then
 *             answers from a completion (WAIT -> WRITE); never kept alive
 *   WRITE  -> head, then the body by sendfile -> READ for the next request
 *             on a kept-alive connection, else LINGER
 *   LINGER -> our side shut down; input drained briefly so the client
 *             reads the response rather than a reset; then closed
 *
 * Socket events are edge-triggered and registered once per connection, so
 * a request costs no epoll_ctl calls; "drained" remembers whether the last
 * read emptied the socket, which tells whether to read again or wait for
 * the next edge.  Pipelined requests wait in the input buffer until the
 * response before them is sent.
 *
 * A connection is freed only when none of its callbacks is on the stack
 * (conn_enter/conn_leave), so a handler may answer, and the answer may fail,
 * without anyone touching freed memory.
 *
 * Timeouts, one timer per connection: the whole head must arrive within
 * header-timeout of its first byte (trickling bytes does not extend it); an
 * idle kept-alive connection lasts keepalive-timeout; a response that makes
 * no progress for send-timeout is abandoned.
 *
 * Refusals: a connection over max-connections gets a fixed 503 and is
 * closed.  When accept fails for want of descriptors, the thread stops
 * accepting for ACCEPT_PAUSE_MS (the listener is level-triggered: without
 * the pause it would spin) and sheds one waiting connection the same way,
 * using a descriptor it keeps spare for that, so the client learns at once
 * instead of waiting in the backlog.  The swap of the spare excludes other
 * threads' accepts (fdlock), which would otherwise take the freed slot for
 * good and leave this thread's backlog stuck.  Both are counted in the metrics and
 * logged at most once per LOG_LIMIT_SECONDS.
 */
#include "daemon/http.h"

#include <sys/sendfile.h>
#include <sys/socket.h>

#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <limits.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "conf/config.h"
#include "daemon/clock.h"
#include "daemon/httpdate.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/pool.h"
#include "daemon/tls.h"

#define ACCEPT_BURST 64
#define LISTEN_BACKLOG 1024
#define INBUF_MIN 1024
#define OUT_FIXED 2048
/* Room for a head without a long X-DEBUGINFOD-FILE. */
#define HEAD_ROOM 1024
/* Bytes sent per wake-up before yielding to other connections. */
#define SEND_BUDGET (8u << 20)
#define LINGER_SECONDS 2
#define TICK_MS 250
#define ACCEPT_PAUSE_MS 100
#define LOG_LIMIT_SECONDS 10
/* Bytes read from a file per TLS record batch when the kernel cannot encrypt. */
#define TLS_CHUNK (64u << 10)

struct http_thread {
	struct httpd *h;
	pthread_t tid;
	struct event_base *base;
	int *lfds; /* one listening socket per address */
	struct event **levs;
	struct event *stop_ev;
	struct event *tick_ev;
	struct event *resume_ev; /* accepting again after a pause */
	int spare_fd; /* given up to shed a connection when out of fds */
	struct pool_inbox *inbox;
	void *state; /* the handler's */
	struct conn *conns;
	int stopping;
	time_t stop_deadline;
	time_t clock_sec; /* the second the cached strings below are for */
	char date[HTTPDATE_LEN];
	char logtime[HTTPDATE_ISO_LEN];
	const struct timeval *tv_header;
	const struct timeval *tv_keepalive;
	const struct timeval *tv_send;
	const struct timeval *tv_linger;
	struct logbuf log;
};

/*
 * The current context of a TLS listener: new connections take it under
 * the lock; a reload swaps it, and the old one lives on in the SSLs of the
 * connections made before.
 */
struct tls_slot {
	pthread_mutex_t mu;
	SSL_CTX *ctx; /* NULL: a plain listener (which config says) */
};

struct httpd {
	const struct config *cfg;
	struct tls_slot *tls; /* one per listen address */
	struct http_handler handler;
	unsigned nthreads;
	struct http_thread *threads;
	atomic_uint nconns;
	/* Held for reading by accepts, for writing while a spare is swapped. */
	pthread_rwlock_t fdlock;
	struct log_limit log_nofd, log_refused;
};

enum conn_state {
	CS_READ,
	CS_BODY, /* a request body is being received (conn_recv_body) */
	CS_WAIT,
	CS_WRITE,
	CS_LINGER,
	CS_CLOSED,
};

struct conn {
	struct http_thread *t;
	struct conn *prev, *next;
	int fd;
	enum conn_state state;
	int depth; /* callbacks of this connection on the stack */
	int parsing; /* process_input is on the stack */
	int drained; /* the socket had no more input at the last read */
	struct event *rev, *wev, *tev;
	char peer[INET6_ADDRSTRLEN + 8];
	char peer_addr[INET6_ADDRSTRLEN];

	/* HTTPS: the connection's TLS, and what its handshake told. */
	SSL *ssl; /* NULL: plain HTTP */
	int handshaken;
	int ktls; /* the kernel encrypts: SSL_sendfile */
	int read_wants_write, write_wants_read;
	char subject[256]; /* the client certificate's; "" when none */
	char *tbuf; /* file bytes on their way into SSL_write */
	size_t tlen, toff;
	size_t thead; /* of tbuf[toff..], response head bytes before them */

	/* A request body being received into a file (conn_recv_body). */
	int rbody_fd;
	uint64_t rbody_left;
	void (*rbody_done)(void *arg, int rc);
	void *rbody_arg;

	char *in;
	size_t inlen, incap;
	struct request req;
	int have_req;
	int keepalive;

	char outfixed[OUT_FIXED];
	char *out; /* outfixed, or a heap buffer for a larger head or body */
	size_t outcap, outlen, outsent;
	size_t outbody; /* of outlen, the bytes of an in-memory body */
	int body_fd;
	off_t body_off;
	uint64_t body_left;
	int (*stream_avail)(void *arg, uint64_t *n); /* a growing body */
	void *stream_arg;
	void (*on_end)(void *arg);
	void *on_end_arg;

	int64_t t0; /* clock_mono_ns() at the exchange's start */
	int status;
	uint64_t bytes; /* body bytes sent */
	const char *result;
	const char *source;
};

static void process_input(struct conn *c);
static void write_some(struct conn *c);

/* ------------------------------------------------------------ addresses */

static unsigned
sockaddr_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

/* "host:port", or "[host]:port" for IPv6, as logs and peers show it. */
static void
sockaddr_text(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET6) {
		inet_ntop(AF_INET6,
		    &((const struct sockaddr_in6 *)ss)->sin6_addr, host,
		    sizeof(host));
		snprintf(buf, len, "[%s]:%u", host, sockaddr_port(ss));
	} else {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr,
		    host, sizeof(host));
		snprintf(buf, len, "%s:%u", host, sockaddr_port(ss));
	}
}

/* ---------------------------------------------------------------- clock */

/* Refresh the per-second strings (Date header, log time stamp). */
static void
thread_clock(struct http_thread *t)
{
	time_t now = time(NULL);

	if (now == t->clock_sec)
		return;
	t->clock_sec = now;
	httpdate_format(now, t->date);
	httpdate_iso(now, t->logtime);
}

static double
elapsed_ms(int64_t since)
{
	return (double)(clock_mono_ns() - since) / 1e6;
}

/* ---------------------------------------------------------- connections */

/* The exchange is over: let go of what its response used. */
static void
exchange_release(struct conn *c)
{
	void (*fn)(void *) = c->on_end;

	c->stream_avail = NULL;
	c->on_end = NULL;
	if (fn != NULL)
		fn(c->on_end_arg);
}

static void
conn_free(struct conn *c)
{
	struct http_thread *t = c->t;
	void (*body_done)(void *, int) = c->rbody_done;

	c->rbody_done = NULL;
	if (body_done != NULL)
		body_done(c->rbody_arg, -1);
	exchange_release(c);

	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		t->conns = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	if (c->rev != NULL)
		event_free(c->rev);
	if (c->wev != NULL)
		event_free(c->wev);
	if (c->tev != NULL)
		event_free(c->tev);
	if (c->body_fd != -1)
		close(c->body_fd);
	SSL_free(c->ssl);
	free(c->tbuf);
	close(c->fd);
	if (c->out != c->outfixed)
		free(c->out);
	free(c->in);
	free(c);
	atomic_fetch_sub(&t->h->nconns, 1);
}

static void
conn_enter(struct conn *c)
{
	c->depth++;
}

/* Leave a callback; the last one out frees a closed connection. */
static void
conn_leave(struct conn *c)
{
	if (--c->depth == 0 && c->state == CS_CLOSED)
		conn_free(c);
}

static void
conn_close(struct conn *c)
{
	event_del(c->rev);
	event_del(c->wev);
	event_del(c->tev);
	c->state = CS_CLOSED;
}

static void
conn_timer(struct conn *c, const struct timeval *tv)
{
	event_add(c->tev, tv);
}

static void
exchange_begin(struct conn *c)
{
	c->t0 = clock_mono_ns();
	c->status = 0;
	c->bytes = 0;
	c->outbody = 0;
	c->result = "-";
	c->source = "-";
}

/* The access-log line of the exchange that just ended. */
static void
log_exchange(struct conn *c)
{
	struct http_thread *t = c->t;
	const struct request *r = &c->req;
	char ua[256];
	size_t i, n;
	int tlen;

	if (!t->h->cfg->access_log)
		return;
	n = r->user_agent.p == NULL ? 0 : r->user_agent.n;
	if (n > sizeof(ua) - 1)
		n = sizeof(ua) - 1;
	for (i = 0; i < n; i++) {
		char ch = r->user_agent.p[i];

		ua[i] = (ch == '"' || ch == '\\' || (unsigned char)ch < 0x20)
		    ? '_'
		    : ch;
	}
	ua[n] = '\0';
	tlen = r->target.p == NULL
	    ? 1
	    : (int)(r->target.n > 1024 ? 1024 : r->target.n);
	thread_clock(t);
	logbuf_printf(&t->log,
	    "%s %s \"%.*s %.*s\" %d %llu %.3fms %s %s \"%s\"\n", t->logtime,
	    c->peer, r->method_name.p != NULL ? (int)r->method_name.n : 1,
	    r->method_name.p != NULL ? r->method_name.p : "-", tlen,
	    r->target.p != NULL ? r->target.p : "-", c->status,
	    (unsigned long long)c->bytes, elapsed_ms(c->t0), c->result,
	    c->source, n > 0 ? ua : "-");
}

/* The response is out: log it, then the next request or the close. */
static void
exchange_end(struct conn *c)
{
	c->bytes += c->outbody;
	metrics_bytes_sent(c->bytes);
	log_exchange(c);
	exchange_release(c);
	if (c->body_fd != -1) {
		close(c->body_fd);
		c->body_fd = -1;
	}
	if (c->out != c->outfixed) {
		free(c->out);
		c->out = c->outfixed;
		c->outcap = OUT_FIXED;
	}
	/* An idle connection holds no file buffer (OpenSSL's go too). */
	free(c->tbuf);
	c->tbuf = NULL;
	c->tlen = c->toff = c->thead = 0;
	if (!c->keepalive || c->t->stopping) {
		if (c->ssl != NULL)
			SSL_shutdown(c->ssl);
		shutdown(c->fd, SHUT_WR);
		c->state = CS_LINGER;
		conn_timer(c, c->t->tv_linger);
		if (!c->drained)
			event_active(c->rev, EV_READ, 0);
		return;
	}
	if (c->have_req) {
		memmove(c->in, c->in + c->req.head_len,
		    c->inlen - c->req.head_len);
		c->inlen -= c->req.head_len;
	}
	c->have_req = 0;
	memset(&c->req, 0, sizeof(c->req));
	c->state = CS_READ;
	conn_timer(c, c->inlen > 0 ? c->t->tv_header : c->t->tv_keepalive);
	/*
	 * An answer given from a completion (a worker's result, a fill's
	 * progress) must not dispatch the next pipelined request from inside
	 * that completion, which may hold the thread's index read transaction:
	 * the loop reads on at its next turn.
	 */
	if (!c->parsing)
		event_active(c->rev, EV_READ, 0);
}

/* The response cannot be completed: the client gets a cut connection. */
static void
exchange_abort(struct conn *c, const char *why)
{
	log_debug("%s: %s: %s", __func__, c->peer, why);
	c->result = "ABORTED";
	metrics_bytes_sent(c->bytes);
	log_exchange(c);
	exchange_release(c);
	conn_close(c);
}

/* ------------------------------------------------------------ transport */

/* After SSL_read or SSL_write returned r <= 0: errno as recv/send set it. */
static ssize_t
tls_fail(struct conn *c, int r, int reading)
{
	switch (SSL_get_error(c->ssl, r)) {
	case SSL_ERROR_WANT_READ:
		if (!reading)
			c->write_wants_read = 1;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_WANT_WRITE:
		if (reading)
			c->read_wants_write = 1;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_ZERO_RETURN:
		return 0;
	default:
		if (!c->handshaken) {
			char msg[160];

			ERR_error_string_n(ERR_peek_error(), msg, sizeof(msg));
			log_debug("%s: %s: TLS handshake failed: %s", __func__,
			    c->peer, msg);
			metrics_tls_handshake_failed();
		}
		ERR_clear_error();
		errno = ECONNRESET;
		return -1;
	}
}

/* The handshake is done: learn the client's certificate and kTLS. */
static void
tls_established(struct conn *c)
{
	c->handshaken = 1;
	tls_peer_subject(c->ssl, c->subject, sizeof(c->subject));
	c->ktls = tls_ktls_send(c->ssl);
}

/* recv, through TLS on an HTTPS connection. */
static ssize_t
io_recv(struct conn *c, void *buf, size_t len)
{
	int r;

	if (c->ssl == NULL)
		return recv(c->fd, buf, len, 0);
	ERR_clear_error();
	r = SSL_read(c->ssl, buf, len > INT_MAX ? INT_MAX : (int)len);
	if (r > 0 && !c->handshaken)
		tls_established(c);
	return r > 0 ? r : tls_fail(c, r, 1);
}

/* send, through TLS on an HTTPS connection. */
static ssize_t
io_send(struct conn *c, const void *buf, size_t len, int more)
{
	int r;

	if (c->ssl == NULL)
		return send(c->fd, buf, len,
		    MSG_NOSIGNAL | (more ? MSG_MORE : 0));
	ERR_clear_error();
	r = SSL_write(c->ssl, buf, len > INT_MAX ? INT_MAX : (int)len);
	return r > 0 ? r : tls_fail(c, r, 0);
}

/*
 * Up to chunk bytes of the body file: sendfile for plain HTTP and for
 * kTLS, else read into a buffer and SSL_write it (the buffer is kept
 * until SSL_write has taken all of it, as OpenSSL requires of a retry).
 */
static ssize_t
io_sendfile(struct conn *c, size_t chunk)
{
	ssize_t n;

	if (c->ssl == NULL)
		return sendfile(c->fd, c->body_fd, &c->body_off, chunk);
	if (c->ktls) {
		ERR_clear_error();
		n = SSL_sendfile(c->ssl, c->body_fd, c->body_off, chunk, 0);
		if (n <= 0)
			return tls_fail(c, (int)n, 0);
		c->body_off += n;
		return n;
	}
	if (c->toff == c->tlen) {
		if (c->tbuf == NULL && (c->tbuf = malloc(TLS_CHUNK)) == NULL) {
			errno = ENOMEM;
			return -1;
		}
		n = pread(c->body_fd, c->tbuf,
		    chunk < TLS_CHUNK ? chunk : TLS_CHUNK, c->body_off);
		if (n <= 0)
			return n;
		c->body_off += n;
		c->tlen = (size_t)n;
		c->toff = 0;
	}
	/* Bytes of the head ahead of the body (tls_coalesce) are not body. */
	for (;;) {
		size_t head;

		n = io_send(c, c->tbuf + c->toff, c->tlen - c->toff, 0);
		if (n <= 0)
			return n;
		c->toff += (size_t)n;
		head = (size_t)n < c->thead ? (size_t)n : c->thead;
		c->thead -= head;
		if ((size_t)n > head)
			return n - (ssize_t)head;
	}
}

/*
 * Over TLS without kTLS, put the head and the start of a file body in one
 * buffer, so that a small answer is one TLS record and one send, as it is
 * one sendfile with MSG_MORE in plain HTTP.
 */
static int
tls_coalesce(struct conn *c)
{
	size_t head = c->outlen - c->outsent, room;
	ssize_t n;

	if (head >= TLS_CHUNK / 2 ||
	    (c->tbuf == NULL && (c->tbuf = malloc(TLS_CHUNK)) == NULL))
		return -1;
	memcpy(c->tbuf, c->out + c->outsent, head);
	room = TLS_CHUNK - head;
	if (c->body_left < room)
		room = (size_t)c->body_left;
	n = pread(c->body_fd, c->tbuf + head, room, c->body_off);
	if (n <= 0)
		return -1; /* the plain path says why */
	c->body_off += n;
	c->tlen = head + (size_t)n;
	c->toff = 0;
	c->thead = head;
	c->outsent = c->outlen;
	return 0;
}

/* --------------------------------------------------------------- output */

static void
write_some(struct conn *c)
{
	size_t budget = SEND_BUDGET, chunk;
	ssize_t n;

	if (c->ssl != NULL && !c->ktls && c->body_left > 0 &&
	    c->stream_avail == NULL && c->outsent == 0 && c->tlen == 0)
		tls_coalesce(c);
	while (c->outsent < c->outlen) {
		n = io_send(c, c->out + c->outsent, c->outlen - c->outsent,
		    c->body_left > 0);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			goto wait;
		if (n <= 0) {
			exchange_abort(c, strerror(errno));
			return;
		}
		c->outsent += (size_t)n;
	}
	while (c->body_left > 0) {
		if (budget == 0) {
			/* Give other connections a turn. */
			event_active(c->wev, EV_WRITE, 0);
			conn_timer(c, c->t->tv_send);
			return;
		}
		chunk = c->body_left < budget ? (size_t)c->body_left : budget;
		/* Bytes already read into the TLS buffer are available. */
		if (c->stream_avail != NULL && c->toff == c->tlen) {
			uint64_t avail = 0;

			if (c->stream_avail(c->stream_arg, &avail) == -1) {
				exchange_abort(c, "the fill failed");
				return;
			}
			if (avail <= (uint64_t)c->body_off) {
				/* conn_stream_wake resumes. */
				event_del(c->tev);
				return;
			}
			if (avail - (uint64_t)c->body_off < chunk)
				chunk = (size_t)(avail - (uint64_t)c->body_off);
		}
		n = io_sendfile(c, chunk);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			goto wait;
		if (n == 0) {
			exchange_abort(c, "file shrank while being sent");
			return;
		}
		if (n < 0) {
			exchange_abort(c, strerror(errno));
			return;
		}
		c->body_left -= (uint64_t)n;
		c->bytes += (uint64_t)n;
		budget -= (size_t)n;
	}
	exchange_end(c);
	return;
wait:
	/* The next write edge resumes; no progress for send-timeout aborts. */
	conn_timer(c, c->t->tv_send);
}

/* Get an output buffer of cap bytes; -1 when out of memory. */
static int
out_prepare(struct conn *c, size_t cap)
{
	if (c->out != c->outfixed)
		free(c->out);
	c->out = c->outfixed;
	c->outcap = OUT_FIXED;
	if (cap <= OUT_FIXED)
		return 0;
	if ((c->out = malloc(cap)) == NULL) {
		c->out = c->outfixed;
		return -1;
	}
	c->outcap = cap;
	return 0;
}

/* Start a head of at most head bytes followed by body bytes in c->out. */
static int
head_begin(struct conn *c, struct hbuf *hb, int status, size_t head,
    size_t body)
{
	int rc = out_prepare(c, head + body);

	thread_clock(c->t);
	if (c->t->stopping)
		c->keepalive = 0;
	c->status = status;
	hbuf_start(hb, c->out, c->outcap - (rc == 0 ? body : 0), status,
	    c->t->date);
	return rc;
}

/* Send the finished head in hb, then len bytes of body (none for HEAD). */
static void
send_head(struct conn *c, struct hbuf *hb, const char *body, size_t len)
{
	c->outlen = hb->len;
	c->outbody = 0;
	if (c->req.method != METHOD_HEAD && len > 0) {
		memcpy(c->out + c->outlen, body, len);
		c->outlen += len;
		c->outbody = len;
	}
	c->outsent = 0;
	c->state = CS_WRITE;
	write_some(c);
}

/* The last resort when a head cannot be built: a bare status, close. */
static void
send_bare(struct conn *c, int status)
{
	struct hbuf hb;

	c->keepalive = 0;
	head_begin(c, &hb, status, OUT_FIXED, 0);
	hbuf_header(&hb, "Content-Length", "0");
	hbuf_end(&hb, 0, c->req.minor == 0);
	send_head(c, &hb, NULL, 0);
}

/* ------------------------------------------------------ handler answers */

const struct request *
conn_request(struct conn *c)
{
	return &c->req;
}

struct pool_inbox *
conn_inbox(struct conn *c)
{
	return c->t->inbox;
}

void
conn_set_result(struct conn *c, const char *result, const char *source)
{
	c->result = result;
	c->source = source;
}

void
conn_wait(struct conn *c)
{
	if (c->state == CS_WAIT)
		return;
	c->state = CS_WAIT;
	/* Held until the answer: the completion calls a conn_send_*. */
	conn_enter(c);
}

struct event_base *
conn_base(struct conn *c)
{
	return c->t->base;
}

const char *
conn_peer_addr(struct conn *c)
{
	return c->peer_addr;
}

int
conn_is_tls(struct conn *c)
{
	return c->ssl != NULL;
}

const char *
conn_tls_subject(struct conn *c)
{
	return c->subject;
}

void
conn_on_end(struct conn *c, void (*fn)(void *), void *arg)
{
	c->on_end = fn;
	c->on_end_arg = arg;
}

/* Every answer runs inside enter/leave; after conn_wait, the wait's hold. */
static void
answer_begin(struct conn *c)
{
	if (c->state == CS_WAIT)
		c->state = CS_WRITE;
	else
		conn_enter(c);
}

/* A text error saying why, with one more header when hname is not NULL. */
static void
send_error(struct conn *c, int status, const char *why, const char *hname,
    const char *hval)
{
	struct hbuf hb;
	size_t n = strlen(why);

	answer_begin(c);
	if (n > 400)
		n = 400;
	head_begin(c, &hb, status, HEAD_ROOM, n + 1);
	hbuf_header(&hb, "Content-Type", "text/plain");
	hbuf_header_u64(&hb, "Content-Length", n + 1);
	if (hname != NULL)
		hbuf_header(&hb, hname, hval);
	hbuf_end(&hb, c->keepalive, c->req.minor == 0);
	c->outlen = hb.len;
	if (c->req.method != METHOD_HEAD) {
		memcpy(c->out + c->outlen, why, n);
		c->out[c->outlen + n] = '\n';
		c->outlen += n + 1;
		c->outbody = n + 1;
	}
	c->outsent = 0;
	c->state = CS_WRITE;
	write_some(c);
	conn_leave(c);
}

void
conn_send_error(struct conn *c, int status, const char *why)
{
	send_error(c, status, why, NULL, NULL);
}

void
conn_send_unauthorized(struct conn *c, const char *why)
{
	send_error(c, 401, why, "WWW-Authenticate",
	    "Bearer realm=\"dbgmirror\"");
}

void
conn_send_miss(struct conn *c, const char *why, unsigned max_age)
{
	char cc[40];

	snprintf(cc, sizeof(cc), "max-age=%u", max_age);
	send_error(c, 404, why, max_age > 0 ? "Cache-Control" : NULL, cc);
}

void
conn_send_retry(struct conn *c, int status, const char *why,
    unsigned retry_after)
{
	char ra[24];

	snprintf(ra, sizeof(ra), "%u", retry_after);
	send_error(c, status, why, retry_after > 0 ? "Retry-After" : NULL, ra);
}

void
conn_send_not_allowed(struct conn *c, const char *allow)
{
	char why[64];

	snprintf(why, sizeof(why), "only %s allowed here", allow);
	send_error(c, 405, why, "Allow", allow);
}

void
conn_send_text(struct conn *c, int status, const char *content_type,
    const char *body, size_t len)
{
	struct hbuf hb;

	answer_begin(c);
	if (head_begin(c, &hb, status, HEAD_ROOM, len) == -1) {
		send_bare(c, 503);
	} else {
		hbuf_header(&hb, "Content-Type", content_type);
		hbuf_header_u64(&hb, "Content-Length", len);
		hbuf_end(&hb, c->keepalive, c->req.minor == 0);
		send_head(c, &hb, body, len);
	}
	conn_leave(c);
}

void
conn_send_stream(struct conn *c, int fd, const struct artifact *art,
    int (*avail)(void *arg, uint64_t *n), void *arg)
{
	c->stream_avail = avail;
	c->stream_arg = arg;
	conn_send_file(c, fd, 0, art);
}

void
conn_stream_wake(struct conn *c)
{
	if (c->state != CS_WRITE || c->stream_avail == NULL)
		return;
	conn_enter(c);
	write_some(c);
	conn_leave(c);
}

void
conn_send_file(struct conn *c, int fd, uint64_t offset,
    const struct artifact *art)
{
	struct plan plan;
	struct hbuf hb;
	size_t why = 0, head = HEAD_ROOM;

	answer_begin(c);
	response_plan(&c->req, art, &plan);
	if (plan.why != NULL)
		why = strlen(plan.why);
	/* Header values may be percent-escaped: up to three bytes each. */
	if (art->file != NULL)
		head += 3 * strlen(art->file);
	if (art->archive != NULL)
		head += 3 * strlen(art->archive);
	/* Replayed header lines (upstream's, a package member's) as they are. */
	head += art->extra_len;
	if (head_begin(c, &hb, plan.status, head, why + 1) == -1) {
		close(fd);
		send_bare(c, 503);
		conn_leave(c);
		return;
	}
	response_artifact_head(&hb, &plan, art);
	hbuf_end(&hb, c->keepalive, c->req.minor == 0);
	if (hb.overflow) {
		/* Sized above for everything the head holds: a bug if here. */
		log_warnx("%s: %s: the response head overflowed %zu bytes",
		    __func__, c->peer, head);
		close(fd);
		send_bare(c, 500);
		conn_leave(c);
		return;
	}
	if (c->req.method == METHOD_GET && plan.why == NULL &&
	    plan.length > 0) {
		c->body_fd = fd;
		c->body_off = (off_t)(offset + plan.offset);
		c->body_left = plan.length;
	} else {
		close(fd);
	}
	if (plan.why != NULL) {
		memcpy(hb.buf + hb.len, plan.why, why);
		hb.buf[hb.len + why] = '\n';
	}
	c->outlen = hb.len;
	if (plan.why != NULL && c->req.method != METHOD_HEAD) {
		c->outlen += why + 1;
		c->outbody = why + 1;
	}
	c->outsent = 0;
	c->state = CS_WRITE;
	write_some(c);
	conn_leave(c);
}

/* ----------------------------------------------------------- bodies */

/* The body is in, or cannot be: state WAIT, and the handler is told. */
static void
body_end(struct conn *c, int rc)
{
	void (*fn)(void *, int) = c->rbody_done;

	c->rbody_done = NULL;
	event_del(c->tev);
	if (rc == -1) {
		/* No answer can follow: the client's side of it is lost. */
		c->result = "ABORTED";
		log_exchange(c);
		conn_close(c);
		fn(c->rbody_arg, -1);
		conn_leave(c); /* conn_recv_body's hold */
		return;
	}
	c->state = CS_WAIT;
	fn(c->rbody_arg, rc);
}

/* Write n body bytes at p to the file; an errno on failure, else 0. */
static int
body_write(struct conn *c, const char *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		w = write(c->rbody_fd, p, n);
		if (w == -1 && errno == EINTR)
			continue;
		if (w <= 0)
			return w == 0 ? EIO : errno;
		p += w;
		n -= (size_t)w;
		c->rbody_left -= (uint64_t)w;
	}
	return 0;
}

/*
 * Read what the socket has of the body into the file.  Written on the
 * event loop: an upload is rare, and the writes go to the page cache.
 */
static void
body_read(struct conn *c)
{
	char buf[16384];
	ssize_t n;
	int err;

	while (c->rbody_left > 0) {
		n = io_recv(c, buf,
		    c->rbody_left < sizeof(buf) ? (size_t)c->rbody_left
						: sizeof(buf));
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN) {
			conn_timer(c, c->t->tv_send);
			return;
		}
		if (n <= 0) {
			body_end(c, -1);
			return;
		}
		if ((err = body_write(c, buf, (size_t)n)) != 0) {
			body_end(c, err);
			return;
		}
	}
	body_end(c, 0);
}

void
conn_recv_body(struct conn *c, int fd, void (*done)(void *arg, int rc),
    void *arg)
{
	static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
	size_t have = c->inlen - c->req.head_len;
	int err;

	conn_enter(c); /* held until the answer, as by conn_wait */
	c->keepalive = 0;
	c->state = CS_BODY;
	c->rbody_fd = fd;
	c->rbody_left = c->req.content_length;
	c->rbody_done = done;
	c->rbody_arg = arg;
	if (have > c->rbody_left)
		have = (size_t)c->rbody_left;
	if (have > 0 &&
	    (err = body_write(c, c->in + c->req.head_len, have)) != 0) {
		body_end(c, err);
		return;
	}
	/* A fresh socket's buffer takes these few bytes at once. */
	if (c->req.expect_continue && have == 0 && c->rbody_left > 0 &&
	    io_send(c, cont, sizeof(cont) - 1, 0) !=
		(ssize_t)sizeof(cont) - 1) {
		body_end(c, -1);
		return;
	}
	if (c->rbody_left == 0) {
		body_end(c, 0);
		return;
	}
	conn_timer(c, c->t->tv_send);
	/* More may be in the socket already, with no edge to come. */
	if (!c->drained)
		event_active(c->rev, EV_READ, 0);
}

/* ---------------------------------------------------------------- input */

/* Grow the input buffer up to the head limit; 0 when it is full. */
static size_t
in_room(struct conn *c)
{
	size_t max = c->t->h->cfg->max_header_size, cap;
	char *p;

	if (c->inlen < c->incap)
		return c->incap - c->inlen;
	if (c->incap >= max)
		return 0;
	cap = c->incap * 2 < max ? c->incap * 2 : max;
	if ((p = realloc(c->in, cap)) == NULL)
		return 0;
	c->in = p;
	c->incap = cap;
	return c->incap - c->inlen;
}

/* Read what the socket has; 1 when bytes arrived, 0 to wait, -1 closed. */
static int
read_more(struct conn *c)
{
	size_t room;
	ssize_t n;

	if (c->drained)
		return 0;
	if ((room = in_room(c)) == 0)
		return -1;
	do {
		n = io_recv(c, c->in + c->inlen, room);
	} while (n == -1 && errno == EINTR);
	if (n == -1 && errno == EAGAIN) {
		c->drained = 1;
		return 0;
	}
	if (n <= 0)
		return -1;
	if (c->inlen == 0)
		conn_timer(c, c->t->tv_header);
	c->inlen += (size_t)n;
	/* TLS reads a record at a time: only EAGAIN says the socket is dry. */
	if ((size_t)n < room && c->ssl == NULL)
		c->drained = 1;
	return 1;
}

/* Parse and dispatch every complete request, in order, while reading. */
static void
process_input(struct conn *c)
{
	struct http_thread *t = c->t;
	const char *why = NULL;
	int rc;

	c->parsing = 1;
	while (c->state == CS_READ) {
		rc = request_parse(&c->req, c->in, c->inlen,
		    t->h->cfg->max_header_size, &why);
		if (rc == REQUEST_INCOMPLETE) {
			rc = read_more(c);
			if (rc == -1)
				conn_close(c);
			if (rc != 1)
				break;
			continue;
		}
		exchange_begin(c);
		if (rc != REQUEST_OK) {
			c->keepalive = 0;
			conn_send_error(c, rc, why);
			continue;
		}
		c->have_req = 1;
		c->keepalive = c->req.keepalive && !c->req.has_body;
		if (c->req.has_body && c->req.method != METHOD_PUT)
			conn_send_error(c, 400,
			    "request bodies are not accepted");
		else if (c->req.method == METHOD_OTHER)
			conn_send_not_allowed(c, "GET, HEAD");
		else
			t->h->handler.request(c, t->state);
	}
	c->parsing = 0;
}

static void
linger_drain(struct conn *c)
{
	char buf[4096];
	ssize_t n;

	do {
		n = recv(c->fd, buf, sizeof(buf), 0);
	} while (n > 0 || (n == -1 && errno == EINTR));
	if (n == 0 || errno != EAGAIN)
		conn_close(c);
	c->drained = 1;
}

static void
conn_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	conn_enter(c);
	c->drained = 0;
	if (c->state == CS_READ && !c->parsing)
		process_input(c);
	else if (c->state == CS_LINGER)
		linger_drain(c);
	else if (c->state == CS_BODY)
		body_read(c);
	else if (c->state == CS_WRITE && c->write_wants_read) {
		c->write_wants_read = 0;
		write_some(c);
	}
	conn_leave(c);
}

static void
conn_write_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	conn_enter(c);
	if (c->state == CS_WRITE) {
		write_some(c);
	} else if (c->state == CS_BODY && c->read_wants_write) {
		c->read_wants_write = 0;
		body_read(c);
	} else if (c->state == CS_READ && c->read_wants_write && !c->parsing) {
		/* A TLS read (a handshake) was waiting to write. */
		c->read_wants_write = 0;
		c->drained = 0;
		process_input(c);
	}
	conn_leave(c);
}

static void
conn_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	conn_enter(c);
	switch (c->state) {
	case CS_READ:
		if (c->inlen > 0) {
			exchange_begin(c);
			c->keepalive = 0;
			conn_send_error(c, 408,
			    "request head not received in time");
		} else {
			conn_close(c);
		}
		break;
	case CS_WRITE:
		exchange_abort(c, "send timeout");
		break;
	case CS_BODY:
		log_debug("%s: %s: the request body stalled", __func__,
		    c->peer);
		body_end(c, -1);
		break;
	case CS_LINGER:
		conn_close(c);
		break;
	case CS_WAIT:
	case CS_CLOSED:
		break;
	}
	conn_leave(c);
}

/* ssl: the connection's TLS (taken over), NULL for plain HTTP. */
static void
conn_new(struct http_thread *t, int fd, const struct sockaddr_storage *ss,
    SSL *ssl)
{
	struct conn *c;
	int one = 1;

	if ((c = calloc(1, sizeof(*c))) == NULL) {
		log_warnx("%s: out of memory; connection dropped", __func__);
		SSL_free(ssl);
		close(fd);
		atomic_fetch_sub(&t->h->nconns, 1);
		return;
	}
	c->t = t;
	c->fd = fd;
	c->ssl = ssl;
	c->body_fd = -1;
	c->out = c->outfixed;
	c->outcap = OUT_FIXED;
	c->next = t->conns;
	if (t->conns != NULL)
		t->conns->prev = c;
	t->conns = c;
	c->in = malloc(INBUF_MIN);
	c->incap = INBUF_MIN;
	c->rev = event_new(t->base, fd, EV_READ | EV_ET | EV_PERSIST,
	    conn_read_cb, c);
	c->wev = event_new(t->base, fd, EV_WRITE | EV_ET | EV_PERSIST,
	    conn_write_cb, c);
	c->tev = evtimer_new(t->base, conn_timeout_cb, c);
	if (ssl != NULL) {
		SSL_set_fd(ssl, fd);
		SSL_set_accept_state(ssl);
	}
	if (c->in == NULL || c->rev == NULL || c->wev == NULL ||
	    c->tev == NULL || event_add(c->rev, NULL) == -1 ||
	    event_add(c->wev, NULL) == -1) {
		log_warnx("%s: out of memory; connection dropped", __func__);
		conn_free(c);
		return;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	sockaddr_text(ss, c->peer, sizeof(c->peer));
	if (ss->ss_family == AF_INET6)
		inet_ntop(AF_INET6,
		    &((const struct sockaddr_in6 *)ss)->sin6_addr, c->peer_addr,
		    sizeof(c->peer_addr));
	else
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr,
		    c->peer_addr, sizeof(c->peer_addr));
	c->state = CS_READ;
	conn_timer(c, t->tv_header);
	conn_enter(c);
	process_input(c);
	conn_leave(c);
}

/* ------------------------------------------------------------- threads */

/*
 * Refuse a fresh connection with a 503: its request (TCP_DEFER_ACCEPT
 * waited for it) is read first so that the close is a FIN, not a reset that
 * could discard the answer; a fresh socket's buffer always takes it.
 */
static void
refuse(int fd, enum metrics_refusal why, int plain)
{
	static const char answer[] =
	    "HTTP/1.1 503 Service Unavailable\r\n"
	    "Content-Type: text/plain\r\nContent-Length: 21\r\n"
	    "Retry-After: 1\r\nConnection: close\r\n\r\n"
	    "too many connections\n";
	char buf[4096];

	metrics_connection_refused(why);
	/* A TLS client would take the text for a broken handshake: close. */
	if (!plain) {
		close(fd);
		return;
	}
	(void)!recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	(void)!send(fd, answer, sizeof(answer) - 1,
	    MSG_NOSIGNAL | MSG_DONTWAIT);
	close(fd);
}

static void
accept_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct http_thread *t = arg;
	size_t i;

	for (i = 0; i < t->h->cfg->nlisten; i++)
		if (t->levs[i] != NULL)
			event_add(t->levs[i], NULL);
}

/*
 * accept on lfd failed with err (EMFILE or ENFILE): shed one waiting
 * connection through the spare descriptor, then pause every listener of
 * the thread; accept_resume_cb starts them again.
 */
static void
accept_nofd(struct http_thread *t, int lfd, int err, int plain)
{
	struct timeval pause = { 0, ACCEPT_PAUSE_MS * 1000 };
	uint64_t held;
	size_t i;
	int fd;

	metrics_accept_error(
	    err == EMFILE ? METRICS_ACCEPT_EMFILE : METRICS_ACCEPT_ENFILE);
	pthread_rwlock_wrlock(&t->h->fdlock);
	if (t->spare_fd != -1) {
		close(t->spare_fd);
		fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd != -1)
			refuse(fd, METRICS_REFUSED_DESCRIPTORS, plain);
	}
	/* Lost only to a descriptor opened elsewhere; retried next time. */
	t->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	pthread_rwlock_unlock(&t->h->fdlock);
	thread_clock(t);
	if (log_limit_due(&t->h->log_nofd, t->clock_sec, LOG_LIMIT_SECONDS,
		&held))
		log_warnx("%s: accept: %s: shedding connections, pausing "
			  "accepts for %d ms (%llu more such failures "
			  "not logged); raise the open files limit",
		    __func__, strerror(err), ACCEPT_PAUSE_MS,
		    (unsigned long long)held);
	for (i = 0; i < t->h->cfg->nlisten; i++)
		if (t->levs[i] != NULL)
			event_del(t->levs[i]);
	evtimer_add(t->resume_ev, &pause);
}

/* A fresh SSL from the current context of TLS listener i. */
static SSL *
tls_take(struct httpd *h, size_t i)
{
	SSL *ssl;

	pthread_mutex_lock(&h->tls[i].mu);
	ssl = SSL_new(h->tls[i].ctx);
	pthread_mutex_unlock(&h->tls[i].mu);
	return ssl;
}

static void
accept_cb(evutil_socket_t lfd, short what, void *arg)
{
	struct http_thread *t = arg;
	struct sockaddr_storage ss;
	socklen_t len;
	uint64_t held;
	SSL *ssl = NULL;
	size_t li;
	int i, fd;

	for (li = 0; li < t->h->cfg->nlisten; li++)
		if (t->lfds[li] == lfd)
			break;
	if (li == t->h->cfg->nlisten)
		return;

	for (i = 0; i < ACCEPT_BURST; i++) {
		len = sizeof(ss);
		pthread_rwlock_rdlock(&t->h->fdlock);
		fd = accept4(lfd, (struct sockaddr *)&ss, &len,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		pthread_rwlock_unlock(&t->h->fdlock);
		if (fd == -1) {
			if (errno == EMFILE || errno == ENFILE)
				accept_nofd(t, lfd, errno,
				    !t->h->cfg->listen[li].tls);
			return;
		}
		if (atomic_fetch_add(&t->h->nconns, 1) >=
		    t->h->cfg->max_connections) {
			atomic_fetch_sub(&t->h->nconns, 1);
			refuse(fd, METRICS_REFUSED_MAX_CONNECTIONS,
			    !t->h->cfg->listen[li].tls);
			thread_clock(t);
			if (log_limit_due(&t->h->log_refused, t->clock_sec,
				LOG_LIMIT_SECONDS, &held))
				log_warnx("%s: refused a connection over "
					  "max-connections %u (%llu more "
					  "not logged)",
				    __func__, t->h->cfg->max_connections,
				    (unsigned long long)held);
			continue;
		}
		if (t->h->cfg->listen[li].tls &&
		    (ssl = tls_take(t->h, li)) == NULL) {
			log_warnx("%s: out of memory; connection dropped",
			    __func__);
			atomic_fetch_sub(&t->h->nconns, 1);
			close(fd);
			continue;
		}
		conn_new(t, fd, &ss, ssl);
		ssl = NULL;
	}
}

static void
close_listeners(struct http_thread *t)
{
	size_t i;

	for (i = 0; i < t->h->cfg->nlisten; i++) {
		if (t->levs[i] != NULL)
			event_free(t->levs[i]);
		t->levs[i] = NULL;
		if (t->lfds[i] != -1)
			close(t->lfds[i]);
		t->lfds[i] = -1;
	}
}

static void
stop_cb(evutil_socket_t fd, short what, void *arg)
{
	struct http_thread *t = arg;
	struct conn *c, *next;

	t->stopping = 1;
	t->stop_deadline = time(NULL) + t->h->cfg->shutdown_timeout;
	close_listeners(t);
	/* Idle connections go now; those with a request in flight finish. */
	for (c = t->conns; c != NULL; c = next) {
		next = c->next;
		if (c->state == CS_READ && c->inlen == 0 && c->depth == 0) {
			conn_close(c);
			conn_free(c);
		}
	}
}

static void
tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct http_thread *t = arg;

	logbuf_flush(&t->log);
	if (t->stopping && (t->conns == NULL || time(NULL) >= t->stop_deadline))
		event_base_loopbreak(t->base);
}

static void *
thread_main(void *arg)
{
	struct http_thread *t = arg;
	struct httpd *h = t->h;

	if (h->handler.thread_start != NULL)
		t->state = h->handler.thread_start(h->handler.arg);
	event_base_dispatch(t->base);
	logbuf_flush(&t->log);
	return NULL;
}

/* A common timeout of the base: O(1) to add however many are pending. */
static const struct timeval *
common_timeout(struct event_base *base, unsigned seconds)
{
	struct timeval tv = { (time_t)seconds, 0 };

	return event_base_init_common_timeout(base, &tv);
}

static int
thread_init(struct http_thread *t, struct httpd *h)
{
	const struct config *cfg = h->cfg;
	struct timeval tick = { 0, TICK_MS * 1000 };
	size_t i;

	t->h = h;
	t->spare_fd = -1;
	if ((t->base = event_base_new()) == NULL ||
	    (t->lfds = calloc(cfg->nlisten, sizeof(int))) == NULL ||
	    (t->levs = calloc(cfg->nlisten, sizeof(*t->levs))) == NULL)
		return -1;
	for (i = 0; i < cfg->nlisten; i++)
		t->lfds[i] = -1;
	t->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if ((t->inbox = pool_inbox_new(t->base)) == NULL ||
	    (t->stop_ev = event_new(t->base, -1, 0, stop_cb, t)) == NULL ||
	    (t->tick_ev = event_new(t->base, -1, EV_PERSIST, tick_cb, t)) ==
		NULL ||
	    event_add(t->tick_ev, &tick) == -1 ||
	    (t->resume_ev = evtimer_new(t->base, accept_resume_cb, t)) == NULL)
		return -1;
	t->tv_header = common_timeout(t->base, cfg->header_timeout);
	t->tv_keepalive = common_timeout(t->base, cfg->keepalive_timeout);
	t->tv_send = common_timeout(t->base, cfg->send_timeout);
	t->tv_linger = common_timeout(t->base, LINGER_SECONDS);
	if (t->tv_header == NULL || t->tv_keepalive == NULL ||
	    t->tv_send == NULL || t->tv_linger == NULL)
		return -1;
	return 0;
}

/* ----------------------------------------------------------- listeners */

static int
listen_socket(const struct sockaddr *sa, socklen_t len, int reuseport)
{
	int fd, one = 1, defer = 1;

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (fd == -1)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (reuseport &&
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) == -1)
		goto fail;
	if (sa->sa_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, sa, len) == -1)
		goto fail;
	/* Wake us when the request has arrived, not at the handshake. */
	setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer, sizeof(defer));
	if (reuseport && listen(fd, LISTEN_BACKLOG) == -1)
		goto fail;
	return fd;
fail:
	close(fd);
	return -1;
}

/*
 * Bind address i on every thread.  A plain bind first proves the port is
 * free: with SO_REUSEPORT alone, a second daemon of the same user would
 * silently share the port instead of failing.  Port 0 becomes whatever the
 * first thread's socket got, so all threads share one port.
 */
static int
bind_address(struct httpd *h, size_t i, char *err, size_t errlen)
{
	const struct config_listen *l = &h->cfg->listen[i];
	struct sockaddr_storage ss = l->addr;
	socklen_t len = sizeof(ss);
	char text[INET6_ADDRSTRLEN + 8];
	unsigned k;
	int probe;

	if (sockaddr_port(&ss) != 0) {
		probe = listen_socket((struct sockaddr *)&ss, l->addrlen, 0);
		if (probe == -1) {
			snprintf(err, errlen, "listen %s: %s", l->text,
			    strerror(errno));
			return -1;
		}
		close(probe);
	}
	for (k = 0; k < h->nthreads; k++) {
		struct http_thread *t = &h->threads[k];

		t->lfds[i] =
		    listen_socket((struct sockaddr *)&ss, l->addrlen, 1);
		if (t->lfds[i] == -1) {
			snprintf(err, errlen, "listen %s: %s", l->text,
			    strerror(errno));
			return -1;
		}
		if (k == 0 && sockaddr_port(&ss) == 0) {
			if (getsockname(t->lfds[i], (struct sockaddr *)&ss,
				&len) == -1) {
				snprintf(err, errlen, "listen %s: %s", l->text,
				    strerror(errno));
				return -1;
			}
		}
		t->levs[i] = event_new(t->base, t->lfds[i],
		    EV_READ | EV_PERSIST, accept_cb, t);
		if (t->levs[i] == NULL || event_add(t->levs[i], NULL) == -1) {
			snprintf(err, errlen, "listen %s: out of memory",
			    l->text);
			return -1;
		}
	}
	sockaddr_text(&ss, text, sizeof(text));
	log_info("listening on %s%s", text, l->tls ? " (TLS)" : "");
	return 0;
}

/* ------------------------------------------------------------- the API */

struct httpd *
httpd_new(const struct config *cfg, const struct http_handler *handler,
    char *err, size_t errlen)
{
	struct httpd *h;
	unsigned k;
	size_t i;

	if ((h = calloc(1, sizeof(*h))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	h->cfg = cfg;
	h->handler = *handler;
	h->nthreads = cfg->threads;
	if (pthread_rwlock_init(&h->fdlock, NULL) != 0) {
		snprintf(err, errlen, "out of memory");
		free(h);
		return NULL;
	}
	if ((h->threads = calloc(h->nthreads, sizeof(*h->threads))) == NULL) {
		snprintf(err, errlen, "out of memory");
		pthread_rwlock_destroy(&h->fdlock);
		free(h);
		return NULL;
	}
	if ((h->tls = calloc(cfg->nlisten, sizeof(*h->tls))) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	for (i = 0; i < cfg->nlisten; i++) {
		pthread_mutex_init(&h->tls[i].mu, NULL);
		if (cfg->listen[i].tls &&
		    (h->tls[i].ctx =
			    tls_ctx_new(&cfg->listen[i], err, errlen)) == NULL)
			goto fail;
	}
	for (k = 0; k < h->nthreads; k++) {
		if (thread_init(&h->threads[k], h) == -1) {
			snprintf(err, errlen, "event loop: out of memory");
			goto fail;
		}
	}
	for (i = 0; i < cfg->nlisten; i++)
		if (bind_address(h, i, err, errlen) == -1)
			goto fail;
	return h;
fail:
	httpd_free(h);
	return NULL;
}

int
httpd_start(struct httpd *h)
{
	unsigned k;

	for (k = 0; k < h->nthreads; k++) {
		if (pthread_create(&h->threads[k].tid, NULL, thread_main,
			&h->threads[k]) != 0) {
			log_warn("%s: pthread_create", __func__);
			return -1;
		}
	}
	return 0;
}

unsigned
httpd_connections(struct httpd *h)
{
	return atomic_load(&h->nconns);
}

void
httpd_stop(struct httpd *h)
{
	unsigned k;

	for (k = 0; k < h->nthreads; k++)
		event_active(h->threads[k].stop_ev, 0, 0);
	for (k = 0; k < h->nthreads; k++)
		pthread_join(h->threads[k].tid, NULL);
}

void
httpd_free(struct httpd *h)
{
	struct http_thread *t;
	unsigned k;
	size_t i;

	if (h == NULL)
		return;
	for (k = 0; k < h->nthreads; k++) {
		t = &h->threads[k];
		if (t->base == NULL)
			continue;
		/* Answers still queued by workers reach their connections. */
		pool_inbox_free(t->inbox);
		while (t->conns != NULL) {
			t->conns->depth = 0;
			conn_free(t->conns);
		}
		if (t->lfds != NULL && t->levs != NULL)
			close_listeners(t);
		if (t->state != NULL && h->handler.thread_stop != NULL)
			h->handler.thread_stop(t->state);
		if (t->stop_ev != NULL)
			event_free(t->stop_ev);
		if (t->tick_ev != NULL)
			event_free(t->tick_ev);
		if (t->resume_ev != NULL)
			event_free(t->resume_ev);
		if (t->spare_fd != -1)
			close(t->spare_fd);
		logbuf_flush(&t->log);
		event_base_free(t->base);
		free(t->lfds);
		free(t->levs);
	}
	free(h->threads);
	for (i = 0; h->tls != NULL && i < h->cfg->nlisten; i++) {
		SSL_CTX_free(h->tls[i].ctx);
		pthread_mutex_destroy(&h->tls[i].mu);
	}
	free(h->tls);
	pthread_rwlock_destroy(&h->fdlock);
	free(h);
}

int
httpd_reload(struct httpd *h)
{
	char err[512];
	SSL_CTX *ctx, *old;
	size_t i;
	int rc = 0;

	for (i = 0; i < h->cfg->nlisten; i++) {
		if (!h->cfg->listen[i].tls)
			continue;
		if ((ctx = tls_ctx_new(&h->cfg->listen[i], err, sizeof(err))) ==
		    NULL) {
			log_warnx("%s: listen %s: %s; keeping the old "
				  "certificate",
			    __func__, h->cfg->listen[i].text, err);
			rc = -1;
			continue;
		}
		pthread_mutex_lock(&h->tls[i].mu);
		old = h->tls[i].ctx;
		h->tls[i].ctx = ctx;
		pthread_mutex_unlock(&h->tls[i].mu);
		SSL_CTX_free(old);
		log_info("listen %s: certificate reloaded",
		    h->cfg->listen[i].text);
	}
	return rc;
}
