/*
 * daemon/http_int.h: what daemon/http.c (threads, listeners) and
 * daemon/conn.c (one connection's exchanges) share; nothing else includes
 * it.
 */
#ifndef DAEMON_HTTP_INT_H
#define DAEMON_HTTP_INT_H

#include <sys/socket.h>
#include <sys/types.h>

#include <netinet/in.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "daemon/http.h"
#include "daemon/httpdate.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/request.h"

#include "daemon/pool.h"
#include "daemon/snapshot.h"
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
	/*
	 * The configuration this thread's connections read (its timeouts,
	 * limits and access log) and their requests take; only this
	 * thread's loop reads or replaces it.  next: the one httpd_switch
	 * left for it, under h->switch_mu.
	 */
	struct snapshot *snap, *next;
	/* The switches snap and next came with, under h->switch_mu. */
	uint64_t gen, next_gen;
	struct event *switch_ev;
	int stopping;
	int64_t stop_deadline; /* clock_mono_ns() */
	time_t clock_sec; /* the second the cached strings below are for */
	char date[HTTPDATE_LEN];
	char logtime[HTTPDATE_ISO_LEN];
	char clftime[HTTPDATE_CLF_LEN]; /* of an access-log file's lines */
	const struct timeval *tv_header;
	const struct timeval *tv_keepalive;
	const struct timeval *tv_send;
	const struct timeval *tv_linger;
	struct logbuf log;
};

/*
 * What each listen address has: the current context of a TLS listener
 * (new connections take it under the lock; a reload swaps it, and the old
 * one lives on in the SSLs of the connections made before), and the
 * address bound, for every listener.
 */
struct tls_slot {
	pthread_mutex_t mu;
	SSL_CTX *ctx; /* NULL: a plain listener, or a failed reload */
};

struct httpd {
	/* The configuration at start-up: the listen addresses, the threads. */
	const struct config *cfg;
	/* Each thread's next and gens, the switches made and not told. */
	pthread_mutex_t switch_mu;
	uint64_t gen; /* of the last switch */
	struct httpd_switched *switching, **switching_tail; /* in gen order */
	struct tls_slot *tls; /* one per listen address */
	struct http_handler handler;
	unsigned nthreads;
	struct http_thread *threads;
	atomic_uint nconns;
	/* Held for reading by accepts, for writing while a spare is swapped. */
	pthread_rwlock_t fdlock;
	struct log_limit log_nofd, log_refused;
	char (*bound)[HTTP_ADDRESS_LEN]; /* each listen address as bound */
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

	/*
	 * A request body being received into a file (conn_recv_body), or
	 * into memory (conn_recv_body_mem: rbody_buf, rbody_mem_done).
	 */
	int rbody_fd;
	uint64_t rbody_left;
	void (*rbody_done)(void *arg, int rc);
	void (*rbody_mem_done)(void *arg, int rc, char *body);
	void *rbody_arg;
	char *rbody_buf;
	size_t rbody_got;
	/* Bytes of in after the head that were the body (a kept-alive one). */
	size_t rbody_in;

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

	struct snapshot *snap; /* the handler's request's; NULL before */
	int64_t t0; /* clock_mono_ns() at the exchange's start */
	int status;
	uint64_t bytes; /* body bytes sent */
	const char *result;
	const char *source;
	enum metrics_endpoint endpoint; /* of the request, for its duration */
};

/* "host:port", or "[host]:port" for IPv6, as logs and peers show it. */
void http_sockaddr_text(const struct sockaddr_storage *ss, char *buf,
    size_t len);
unsigned http_sockaddr_port(const struct sockaddr_storage *ss);
/* Refresh t's per-second strings (Date header, log time stamps). */
void http_thread_clock(struct http_thread *t);
/* t's timers of connections, for its snapshot's timeouts: 0, or -1. */
int http_thread_timeouts(struct http_thread *t);

/*
 * On t's thread: a new connection on fd from ss; ssl its TLS (taken
 * over), NULL for plain HTTP.  It reads at once.
 */
void conn_new(struct http_thread *t, int fd, const struct sockaddr_storage *ss,
    SSL *ssl);
/* Shut the connection down (its state becomes CS_CLOSED). */
void conn_close(struct conn *c);
/* Free a connection none of whose callbacks is on the stack. */
void conn_free(struct conn *c);

#endif /* DAEMON_HTTP_INT_H */
