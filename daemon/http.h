/*
 * daemon/http.h: the HTTP/1.1 front end.
 *
 * Several event-loop threads, each with its own listening sockets on the
 * same addresses (SO_REUSEPORT lets the kernel spread connections), its own
 * connections, and its own state for the request handler (e.g. an index
 * reader).  Everything about one connection happens on its thread.
 *
 * Handlers answer with one of the conn_send_* calls, at once or later from
 * a pool completion on the same thread (after conn_wait).
 */
#ifndef DAEMON_HTTP_H
#define DAEMON_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/metrics.h"
#include "daemon/request.h"
#include "daemon/response.h"

struct config;
struct conn;
struct httpd;
struct event_base;
struct pool_inbox;
struct snapshot;

struct http_handler {
	/*
	 * Per-thread handler state, created on the thread that uses it, whose
	 * loop is base and whose pool completions arrive in inbox.
	 */
	void *(*thread_start)(void *arg, struct event_base *base,
	    struct pool_inbox *inbox);
	void (*thread_stop)(void *state);
	/*
	 * A parsed request of method GET, HEAD, POST or PUT; a POST or PUT
	 * may have a body, which the handler receives (conn_recv_body*) or
	 * refuses.
	 */
	void (*request)(struct conn *c, void *state);
	void *arg;
};

/*
 * Bind every listen address of s's configuration, with as many threads as
 * it says; each thread holds a reference to s.  Nothing runs yet.
 */
struct httpd *httpd_new(struct snapshot *s, const struct http_handler *handler,
    char *err, size_t errlen);
/* Start the event-loop threads. */
int httpd_start(struct httpd *h);
/*
 * What a switch tells once it is done (httpd_switch): fn(sw, 1) once
 * every event-loop thread has taken the switch's snapshot or a later
 * one, on the thread of the last to take it; fn(sw, 0) from httpd_free
 * when the threads stopped before all took it.  sw is the caller's until
 * then; gen and next are httpd's.
 */
struct httpd_switched {
	void (*fn)(struct httpd_switched *sw, int taken);
	uint64_t gen;
	struct httpd_switched *next;
};

/*
 * Any thread (SIGHUP): every event-loop thread switches to s on its own
 * loop, each taking a reference and letting its last one go.  From then
 * on its connections use s's timeouts, limits and access log, and each
 * request takes s; requests begun before keep theirs to their end.  The
 * switch is over when sw is told (sw NULL: not told); switches are
 * told in the order they were made.  The listen addresses and the
 * threads stay those of httpd_new.
 */
void httpd_switch(struct httpd *h, struct snapshot *s,
    struct httpd_switched *sw);
/*
 * Read the TLS listeners' certificates, keys and client CAs again
 * (SIGHUP): new connections use them, open ones keep theirs.  A listener
 * whose files do not load keeps nothing of before: it refuses new
 * connections until a reload succeeds (-1; logged).
 */
int httpd_reload(struct httpd *h);
/* Client connections open now, over all threads. */
unsigned httpd_connections(struct httpd *h);
/*
 * Listen address i as it was bound, "127.0.0.1:8002" (the port port 0
 * got); NULL past the last.  Any thread.
 */
#define HTTP_ADDRESS_LEN 64
const char *httpd_address(const struct httpd *h, size_t i);
/*
 * Stop accepting, let responses in flight finish (up to the configured
 * shutdown timeout), and join the threads.
 */
void httpd_stop(struct httpd *h);
/* After httpd_stop and after the pool has stopped: free everything. */
void httpd_free(struct httpd *h);

/* For handlers. */
const struct request *conn_request(struct conn *c);
/*
 * The configuration c's request was handed over with, held until its
 * response ends (daemon/snapshot.h).
 */
struct snapshot *conn_snapshot(struct conn *c);
struct pool_inbox *conn_inbox(struct conn *c);
/* The access-log result ("HIT", "MISS", ...) and source ("local"). */
void conn_set_result(struct conn *c, const char *result, const char *source);
/* The endpoint the request's duration is counted under (daemon/metrics.h). */
void conn_set_endpoint(struct conn *c, enum metrics_endpoint ep);
/* The handler will answer later, from a pool completion. */
void conn_wait(struct conn *c);

/* The loop the connection runs on, and the peer's address as text. */
struct event_base *conn_base(struct conn *c);
const char *conn_peer_addr(struct conn *c);
/*
 * 1 on HTTPS; the verified client certificate's subject, "" when none;
 * the client-ca file of the listener that verified it, NULL when none.
 */
int conn_is_tls(struct conn *c);
const char *conn_tls_subject(struct conn *c);
const char *conn_tls_ca(struct conn *c);
/*
 * fn(arg) runs once when the exchange ends: its response sent, cut, or the
 * connection gone.  For resources the response uses (pins, streams).
 */
void conn_on_end(struct conn *c, void (*fn)(void *), void *arg);

/* A one-line text/plain error body saying why. */
void conn_send_error(struct conn *c, int status, const char *why);
/* 401 with "WWW-Authenticate: Bearer": credentials missing or bad. */
void conn_send_unauthorized(struct conn *c, const char *why);
/* 405 with "Allow: allow" (e.g. "GET, HEAD"). */
void conn_send_not_allowed(struct conn *c, const char *allow);
/*
 * A failure (502, 503) with "Retry-After: retry_after" seconds (none when
 * 0): clients that cache errors learn when asking again makes sense.
 */
void conn_send_retry(struct conn *c, int status, const char *why,
    unsigned retry_after);
/* 404 with "Cache-Control: max-age=max_age": a remembered miss. */
void conn_send_miss(struct conn *c, const char *why, unsigned max_age);
/* A short in-memory body (banners, small documents). */
void conn_send_text(struct conn *c, int status, const char *content_type,
    const char *body, size_t len);
/*
 * The same with "Retry-After: retry_after" (none when 0): an answer part
 * of which is worth asking for again then.
 */
void conn_send_text_retry(struct conn *c, int status, const char *content_type,
    const char *body, size_t len, unsigned retry_after);
/*
 * An artifact stored at offset in fd, which the connection takes over.
 * Conditional requests, Range, HEAD and X-DEBUGINFOD-MAXSIZE are decided
 * here; the bytes go out with sendfile.
 */
void conn_send_file(struct conn *c, int fd, uint64_t offset,
    const struct artifact *art);

/*
 * An artifact still being written to fd (from offset 0).  avail(arg, &n)
 * says how many of its bytes may be sent now: -1 when it failed (the
 * response is cut), 0 otherwise.  When sending catches up with avail, the
 * connection waits for conn_stream_wake.  Set conn_on_end first to learn
 * when the connection is done with arg.
 */
void conn_send_stream(struct conn *c, int fd, const struct artifact *art,
    int (*avail)(void *arg, uint64_t *n), void *arg);
/* More bytes may be available: called on the connection's thread. */
void conn_stream_wake(struct conn *c);

/*
 * PUT: receive the request's Content-Length body bytes into fd (which
 * stays the caller's), answering 100 Continue when the client waits for
 * it.  done(arg, rc) runs once: rc 0 when all arrived, an errno when the
 * file could not take them (answer, e.g. 507), or -1 when the connection
 * was lost (no answer: it is gone).  After 0 or an errno the handler
 * answers as after conn_wait.  The connection closes after the answer.
 */
void conn_recv_body(struct conn *c, int fd, void (*done)(void *arg, int rc),
    void *arg);
/*
 * POST: the same into memory, for a body the caller has found small
 * enough (its Content-Length; not chunked).  done(arg, rc, body) runs
 * once: rc 0 with the body (content_length bytes and a NUL, the caller's
 * to free), ENOMEM (answer), or -1 when the connection was lost (body
 * NULL, no answer).  The connection stays open after the answer when the
 * client asked so.
 */
void conn_recv_body_mem(struct conn *c,
    void (*done)(void *arg, int rc, char *body), void *arg);

#endif /* DAEMON_HTTP_H */
