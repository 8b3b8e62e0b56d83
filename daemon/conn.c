/*
 * daemon/conn.c: one connection's exchanges: reading and parsing
 * requests, handing them to the handler, sending answers (heads, bodies
 * from memory, files by sendfile, growing files), receiving upload bodies,
 * TLS, timeouts (see daemon/http.c for the states and threads).
 */
#include "daemon/http_int.h"

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

/* ------------------------------------------------------------ addresses */

unsigned
http_sockaddr_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

/* "host:port", or "[host]:port" for IPv6, as logs and peers show it. */
void
http_sockaddr_text(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET6) {
		inet_ntop(AF_INET6,
		    &((const struct sockaddr_in6 *)ss)->sin6_addr, host,
		    sizeof(host));
		snprintf(buf, len, "[%s]:%u", host, http_sockaddr_port(ss));
	} else {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr,
		    host, sizeof(host));
		snprintf(buf, len, "%s:%u", host, http_sockaddr_port(ss));
	}
}

/* ---------------------------------------------------------------- clock */

/* Refresh the per-second strings (Date header, log time stamps). */
void
http_thread_clock(struct http_thread *t)
{
	time_t now = (time_t)clock_now_coarse();

	if (now == t->clock_sec)
		return;
	t->clock_sec = now;
	httpdate_format(now, t->date);
	httpdate_iso(now, t->logtime);
	httpdate_clf(now, t->clftime);
}

/* ---------------------------------------------------------- connections */

/*
 * The exchange is over: let go of what its response used, then of the
 * configuration it had.
 */
static void
exchange_release(struct conn *c)
{
	void (*fn)(void *) = c->on_end;
	struct snapshot *s = c->snap;

	c->stream_avail = NULL;
	c->on_end = NULL;
	c->snap = NULL;
	if (fn != NULL)
		fn(c->on_end_arg);
	snapshot_unref(s);
}

static void body_tell(struct conn *c, int rc);

void
conn_free(struct conn *c)
{
	struct http_thread *t = c->t;

	body_tell(c, -1);
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

void
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
	c->endpoint = METRICS_EP_OTHER;
}

/*
 * A header's value for a quoted field of the access log, at most len - 1
 * bytes: quotes, backslashes and control bytes become '_', so that a
 * client cannot end the field or the line; "-" when absent.
 */
static const char *
log_field(struct slice v, char *out, size_t len)
{
	size_t i, n = v.p == NULL ? 0 : v.n;

	if (n == 0)
		return "-";
	if (n > len - 1)
		n = len - 1;
	for (i = 0; i < n; i++) {
		char ch = v.p[i];

		out[i] = (ch == '"' || ch == '\\' || (unsigned char)ch < 0x20 ||
			     ch == 0x7f)
		    ? '_'
		    : ch;
	}
	out[n] = '\0';
	return out;
}

/*
 * The access-log line of the exchange that just ended, ns after its
 * start.  On stderr:
 *
 *   TIME PEER:PORT "METHOD TARGET" STATUS BYTES DURATIONms RESULT SOURCE "UA"
 *
 * (TIME left out, "<6>" first, under the journal).  In an access-log
 * file, the combined log format and three fields more:
 *
 *   PEER - - [TIME] "METHOD TARGET HTTP/1.x" STATUS BYTES "REFERER" "UA"
 *       RESULT SOURCE SECONDS
 *
 * RESULT is the X-Cache word (HIT, MISS, JOINED, NEGATIVE, ERROR, ...),
 * SOURCE where the answer came from, SECONDS the time from the request
 * to the last byte sent (to the microsecond, as DURATION).  dbgmirrord(8)
 * documents both.  Written without printf: every exchange has one.
 */
static void
log_exchange(struct conn *c, int64_t ns)
{
	struct http_thread *t = c->t;
	const struct request *r = &c->req;
	struct logline l;
	char ua[256], ref[256];
	uint64_t us = ns > 0 ? ((uint64_t)ns + 500) / 1000 : 0;

	if (!t->snap->cfg->access_log)
		return;
	http_thread_clock(t);
	l.len = 0;
	if (log_access_file()) {
		logline_str(&l, c->peer_addr);
		logline_str(&l, " - - [");
		logline_str(&l, t->clftime);
		logline_str(&l, "] \"");
	} else {
		logline_str(&l, log_journal() ? "<6>" : t->logtime);
		if (!log_journal())
			logline_put(&l, " ", 1);
		logline_str(&l, c->peer);
		logline_put(&l, " \"", 2);
	}
	if (r->method_name.p != NULL)
		logline_put(&l, r->method_name.p,
		    strnlen(r->method_name.p, r->method_name.n));
	else
		logline_put(&l, "-", 1);
	logline_put(&l, " ", 1);
	if (r->target.p != NULL)
		logline_put(&l, r->target.p,
		    strnlen(r->target.p,
			r->target.n > 1024 ? 1024 : r->target.n));
	else
		logline_put(&l, "-", 1);
	if (log_access_file()) {
		logline_str(&l, " HTTP/1.");
		logline_int(&l, r->minor);
	}
	logline_put(&l, "\" ", 2);
	logline_int(&l, c->status);
	logline_put(&l, " ", 1);
	logline_uint(&l, (unsigned long long)c->bytes);
	if (log_access_file()) {
		logline_put(&l, " \"", 2);
		logline_str(&l, log_field(r->referer, ref, sizeof(ref)));
		logline_put(&l, "\" \"", 3);
		logline_str(&l, log_field(r->user_agent, ua, sizeof(ua)));
		logline_put(&l, "\" ", 2);
		logline_str(&l, c->result);
		logline_put(&l, " ", 1);
		logline_str(&l, c->source);
		logline_put(&l, " ", 1);
		logline_fixed(&l, us, 1000000);
	} else {
		logline_put(&l, " ", 1);
		logline_fixed(&l, us, 1000);
		logline_put(&l, "ms ", 3);
		logline_str(&l, c->result);
		logline_put(&l, " ", 1);
		logline_str(&l, c->source);
		logline_put(&l, " \"", 2);
		logline_str(&l, log_field(r->user_agent, ua, sizeof(ua)));
		logline_put(&l, "\"", 1);
	}
	logline_put(&l, "\n", 1);
	logbuf_line(&t->log, &l);
}

/* The response is out: log it, then the next request or the close. */
static void
exchange_end(struct conn *c)
{
	/* One read for both the histogram and the log line. */
	int64_t ns = clock_mono_ns() - c->t0;

	c->bytes += c->outbody;
	metrics_bytes_sent(c->bytes);
	/* A response the client cut short took no time of the server's. */
	if (strcmp(c->result, "ABORTED") != 0)
		metrics_request_duration(c->endpoint,
		    metrics_result_of(c->result, c->status), (double)ns / 1e9);
	log_exchange(c, ns);
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
		size_t used = c->req.head_len + c->rbody_in;

		memmove(c->in, c->in + used, c->inlen - used);
		c->inlen -= used;
		c->rbody_in = 0;
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
	log_exchange(c, clock_mono_ns() - c->t0);
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

	http_thread_clock(c->t);
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

struct snapshot *
conn_snapshot(struct conn *c)
{
	return c->snap;
}

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
conn_set_endpoint(struct conn *c, enum metrics_endpoint ep)
{
	c->endpoint = ep;
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

const char *
conn_tls_ca(struct conn *c)
{
	return c->ssl != NULL && c->subject[0] != '\0' ? tls_peer_ca(c->ssl)
						       : NULL;
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
conn_send_text_retry(struct conn *c, int status, const char *content_type,
    const char *body, size_t len, unsigned retry_after)
{
	struct hbuf hb;

	answer_begin(c);
	if (head_begin(c, &hb, status, HEAD_ROOM, len) == -1) {
		send_bare(c, 503);
	} else {
		hbuf_header(&hb, "Content-Type", content_type);
		hbuf_header_u64(&hb, "Content-Length", len);
		if (retry_after > 0)
			hbuf_header_u64(&hb, "Retry-After", retry_after);
		hbuf_end(&hb, c->keepalive, c->req.minor == 0);
		send_head(c, &hb, body, len);
	}
	conn_leave(c);
}

void
conn_send_text(struct conn *c, int status, const char *content_type,
    const char *body, size_t len)
{
	conn_send_text_retry(c, status, content_type, body, len, 0);
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
	/* A source's X-DEBUGINFOD-* values (upstream's, a package's). */
	if (art->meta != NULL)
		head += response_meta_len(art->meta);
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

/*
 * Tell the handler how its body's receipt ended, once (nothing when none
 * is being received): rc 0, an errno, or -1 (the connection is lost).
 */
static void
body_tell(struct conn *c, int rc)
{
	void (*fn)(void *, int) = c->rbody_done;
	void (*mfn)(void *, int, char *) = c->rbody_mem_done;
	char *buf = c->rbody_buf;

	c->rbody_done = NULL;
	c->rbody_mem_done = NULL;
	c->rbody_buf = NULL;
	if (fn != NULL) {
		fn(c->rbody_arg, rc);
	} else if (mfn != NULL) {
		if (rc != 0) {
			free(buf);
			buf = NULL;
		}
		mfn(c->rbody_arg, rc, buf);
	}
}

/* The body is in, or cannot be: state WAIT, and the handler is told. */
static void
body_end(struct conn *c, int rc)
{
	event_del(c->tev);
	if (rc == -1) {
		/* No answer can follow: the client's side of it is lost. */
		c->result = "ABORTED";
		log_exchange(c, clock_mono_ns() - c->t0);
		conn_close(c);
		body_tell(c, -1);
		conn_leave(c); /* conn_recv_body's hold */
		return;
	}
	c->state = CS_WAIT;
	body_tell(c, rc);
}

/* Take n body bytes at p: an errno on failure, else 0. */
static int
body_write(struct conn *c, const char *p, size_t n)
{
	ssize_t w;

	if (c->rbody_buf != NULL) {
		memcpy(c->rbody_buf + c->rbody_got, p, n);
		c->rbody_got += n;
		c->rbody_left -= n;
		return 0;
	}
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

/*
 * Receive the request's body (rbody_* set): into fd, or into rbody_buf.
 * keep: the connection may stay open after the answer.
 */
static void
body_start(struct conn *c, int fd, int keep)
{
	static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
	size_t have = c->inlen - c->req.head_len;
	int err;

	conn_enter(c); /* held until the answer, as by conn_wait */
	c->keepalive = keep;
	c->state = CS_BODY;
	c->rbody_fd = fd;
	c->rbody_left = c->req.content_length;
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

void
conn_recv_body(struct conn *c, int fd, void (*done)(void *arg, int rc),
    void *arg)
{
	c->rbody_done = done;
	c->rbody_arg = arg;
	body_start(c, fd, 0);
}

void
conn_recv_body_mem(struct conn *c, void (*done)(void *arg, int rc, char *body),
    void *arg)
{
	size_t have = c->inlen - c->req.head_len;
	size_t len = (size_t)c->req.content_length;

	if ((c->rbody_buf = malloc(len + 1)) == NULL) {
		conn_wait(c);
		done(arg, ENOMEM, NULL);
		return;
	}
	c->rbody_buf[len] = '\0';
	c->rbody_got = 0;
	c->rbody_mem_done = done;
	c->rbody_arg = arg;
	/* Bytes after the body in the buffer are the next request's. */
	c->rbody_in = have < len ? have : len;
	body_start(c, -1, c->req.keepalive);
}

/* ---------------------------------------------------------------- input */

/* Grow the input buffer up to the head limit; 0 when it is full. */
static size_t
in_room(struct conn *c)
{
	size_t max = c->t->snap->cfg->max_header_size, cap;
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
		    t->snap->cfg->max_header_size, &why);
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
		if (c->req.has_body && c->req.method != METHOD_PUT &&
		    c->req.method != METHOD_POST)
			conn_send_error(c, 400,
			    "request bodies are not accepted");
		else if (c->req.method == METHOD_OTHER)
			conn_send_not_allowed(c, "GET, HEAD");
		else {
			c->snap = snapshot_ref(t->snap);
			t->h->handler.request(c, t->state);
		}
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

/* See daemon/http_int.h. */
void
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
	http_sockaddr_text(ss, c->peer, sizeof(c->peer));
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
