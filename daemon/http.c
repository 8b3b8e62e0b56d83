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
	http_thread_clock(t);
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

/*
 * A fresh SSL from the current context of TLS listener i; NULL out of
 * memory, or with *closed when a failed reload left the listener none.
 */
static SSL *
tls_take(struct httpd *h, size_t i, int *closed)
{
	SSL *ssl = NULL;

	pthread_mutex_lock(&h->tls[i].mu);
	*closed = h->tls[i].ctx == NULL;
	if (!*closed)
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
	int i, fd, closed;

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
		    t->snap->cfg->max_connections) {
			atomic_fetch_sub(&t->h->nconns, 1);
			refuse(fd, METRICS_REFUSED_MAX_CONNECTIONS,
			    !t->h->cfg->listen[li].tls);
			http_thread_clock(t);
			if (log_limit_due(&t->h->log_refused, t->clock_sec,
				LOG_LIMIT_SECONDS, &held))
				log_warnx("%s: refused a connection over "
					  "max-connections %u (%llu more "
					  "not logged)",
				    __func__, t->snap->cfg->max_connections,
				    (unsigned long long)held);
			continue;
		}
		if (t->h->cfg->listen[li].tls &&
		    (ssl = tls_take(t->h, li, &closed)) == NULL) {
			http_thread_clock(t);
			if (!closed)
				log_warnx("%s: out of memory; connection "
					  "dropped",
				    __func__);
			else if (log_limit_due(&t->h->log_refused, t->clock_sec,
				     LOG_LIMIT_SECONDS, &held))
				log_warnx("%s: listen %s: refused a "
					  "connection: "
					  "its certificate did not reload "
					  "(%llu more not logged)",
				    __func__, t->h->bound[li],
				    (unsigned long long)held);
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
	t->stop_deadline = clock_mono_ns() +
	    (int64_t)t->snap->cfg->shutdown_timeout * 1000000000;
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
	/* The deadline is the seam's: a test moves it (daemon/clock.h). */
	if (t->stopping &&
	    (t->conns == NULL || clock_mono_ns() >= t->stop_deadline))
		event_base_loopbreak(t->base);
}

static void *
thread_main(void *arg)
{
	struct http_thread *t = arg;
	struct httpd *h = t->h;

	if (h->handler.thread_start != NULL)
		t->state =
		    h->handler.thread_start(h->handler.arg, t->base, t->inbox);
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

int
http_thread_timeouts(struct http_thread *t)
{
	const struct config *cfg = t->snap->cfg;
	const struct timeval *header, *keepalive, *send;

	header = common_timeout(t->base, cfg->header_timeout);
	keepalive = common_timeout(t->base, cfg->keepalive_timeout);
	send = common_timeout(t->base, cfg->send_timeout);
	if (header == NULL || keepalive == NULL || send == NULL)
		return -1;
	t->tv_header = header;
	t->tv_keepalive = keepalive;
	t->tv_send = send;
	return 0;
}

/*
 * Under h->switch_mu: the switches every thread has taken (gen at most
 * the oldest a thread holds), taken off the list, in order.
 */
static struct httpd_switched *
switches_taken(struct httpd *h)
{
	struct httpd_switched *done = h->switching, **pp = &h->switching;
	uint64_t oldest = UINT64_MAX;
	unsigned k;

	for (k = 0; k < h->nthreads; k++)
		if (h->threads[k].gen < oldest)
			oldest = h->threads[k].gen;
	while (*pp != NULL && (*pp)->gen <= oldest)
		pp = &(*pp)->next;
	if (pp == &h->switching)
		return NULL;
	h->switching = *pp;
	if (h->switching == NULL)
		h->switching_tail = &h->switching;
	*pp = NULL;
	return done;
}

/* Tell the switches of list, in order (each may free its record). */
static void
switches_tell(struct httpd_switched *list, int taken)
{
	struct httpd_switched *next;

	for (; list != NULL; list = next) {
		next = list->next;
		list->fn(list, taken);
	}
}

/*
 * The snapshot httpd_switch left: the thread's own from now; its timers
 * are those of its timeouts from the next time each is armed.  The last
 * thread to take a switch tells it.
 */
static void
switch_cb(evutil_socket_t fd, short what, void *arg)
{
	struct http_thread *t = arg;
	struct httpd *h = t->h;
	struct httpd_switched *done;
	struct snapshot *s, *old;
	uint64_t gen;

	pthread_mutex_lock(&h->switch_mu);
	s = t->next;
	gen = t->next_gen;
	t->next = NULL;
	pthread_mutex_unlock(&h->switch_mu);
	if (s == NULL)
		return;
	old = t->snap;
	t->snap = s;
	if (http_thread_timeouts(t) == -1)
		log_warnx("%s: the new timeouts cannot be set: the old ones "
			  "stay",
		    __func__);
	snapshot_unref(old);
	pthread_mutex_lock(&h->switch_mu);
	t->gen = gen;
	done = switches_taken(h);
	pthread_mutex_unlock(&h->switch_mu);
	switches_tell(done, 1);
}

static int
thread_init(struct http_thread *t, struct httpd *h, struct snapshot *s)
{
	const struct config *cfg = h->cfg;
	struct timeval tick = { 0, TICK_MS * 1000 };
	size_t i;

	t->h = h;
	t->spare_fd = -1;
	if ((t->base = event_base_new()) == NULL)
		return -1;
	t->snap = snapshot_ref(s);
	if ((t->lfds = calloc(cfg->nlisten, sizeof(int))) == NULL ||
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
	    (t->resume_ev = evtimer_new(t->base, accept_resume_cb, t)) ==
		NULL ||
	    (t->switch_ev = event_new(t->base, -1, 0, switch_cb, t)) == NULL)
		return -1;
	t->tv_linger = common_timeout(t->base, LINGER_SECONDS);
	if (http_thread_timeouts(t) == -1 || t->tv_linger == NULL)
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

	if (http_sockaddr_port(&ss) != 0) {
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
		if (k == 0 && http_sockaddr_port(&ss) == 0) {
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
	http_sockaddr_text(&ss, text, sizeof(text));
	snprintf(h->bound[i], sizeof(h->bound[i]), "%s", text);
	log_info("listening on %s%s", text, l->tls ? " (TLS)" : "");
	return 0;
}

/* ------------------------------------------------------------- the API */

struct httpd *
httpd_new(struct snapshot *s, const struct http_handler *handler, char *err,
    size_t errlen)
{
	const struct config *cfg = s->cfg;
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
	pthread_mutex_init(&h->switch_mu, NULL);
	h->switching_tail = &h->switching;
	if ((h->threads = calloc(h->nthreads, sizeof(*h->threads))) == NULL) {
		snprintf(err, errlen, "out of memory");
		pthread_mutex_destroy(&h->switch_mu);
		pthread_rwlock_destroy(&h->fdlock);
		free(h);
		return NULL;
	}
	if ((h->tls = calloc(cfg->nlisten, sizeof(*h->tls))) == NULL ||
	    (h->bound = calloc(cfg->nlisten, sizeof(*h->bound))) == NULL) {
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
		if (thread_init(&h->threads[k], h, s) == -1) {
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

const char *
httpd_address(const struct httpd *h, size_t i)
{
	return i < h->cfg->nlisten ? h->bound[i] : NULL;
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
		if (t->switch_ev != NULL)
			event_free(t->switch_ev);
		snapshot_unref(t->snap);
		snapshot_unref(t->next);
		if (t->spare_fd != -1)
			close(t->spare_fd);
		logbuf_flush(&t->log);
		event_base_free(t->base);
		free(t->lfds);
		free(t->levs);
	}
	free(h->threads);
	/* The threads are gone: switches they never all took. */
	switches_tell(h->switching, 0);
	for (i = 0; h->tls != NULL && i < h->cfg->nlisten; i++) {
		SSL_CTX_free(h->tls[i].ctx);
		pthread_mutex_destroy(&h->tls[i].mu);
	}
	free(h->tls);
	free(h->bound);
	pthread_mutex_destroy(&h->switch_mu);
	pthread_rwlock_destroy(&h->fdlock);
	free(h);
}

void
httpd_switch(struct httpd *h, struct snapshot *s, struct httpd_switched *sw)
{
	struct http_thread *t;
	struct snapshot *old;
	uint64_t gen;
	unsigned k;

	pthread_mutex_lock(&h->switch_mu);
	gen = ++h->gen;
	if (sw != NULL) {
		sw->gen = gen;
		sw->next = NULL;
		*h->switching_tail = sw;
		h->switching_tail = &sw->next;
	}
	pthread_mutex_unlock(&h->switch_mu);
	for (k = 0; k < h->nthreads; k++) {
		t = &h->threads[k];
		pthread_mutex_lock(&h->switch_mu);
		old = t->next;
		t->next = snapshot_ref(s);
		t->next_gen = gen;
		pthread_mutex_unlock(&h->switch_mu);
		snapshot_unref(old);
		event_active(t->switch_ev, 0, 0);
	}
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
		/* A failure leaves no context: nothing of before is kept. */
		if ((ctx = tls_ctx_new(&h->cfg->listen[i], err, sizeof(err))) ==
		    NULL) {
			log_warnx("%s: listen %s: %s; it refuses connections "
				  "until a reload succeeds",
			    __func__, h->bound[i], err);
			rc = -1;
		}
		pthread_mutex_lock(&h->tls[i].mu);
		old = h->tls[i].ctx;
		h->tls[i].ctx = ctx;
		pthread_mutex_unlock(&h->tls[i].mu);
		SSL_CTX_free(old);
		if (ctx != NULL)
			log_info("listen %s: certificate reloaded",
			    h->bound[i]);
	}
	return rc;
}
