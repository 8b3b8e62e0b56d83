/*
 * daemon/request.h: parse an HTTP/1.x request head in place.
 *
 * The parser allocates nothing: the request's strings point into the
 * connection's input buffer and live as long as that request.  Only the
 * headers the server acts on are kept.
 */
#ifndef DAEMON_REQUEST_H
#define DAEMON_REQUEST_H

#include <stddef.h>
#include <stdint.h>

/* Results of request_parse() other than an HTTP status code. */
#define REQUEST_OK 0
#define REQUEST_INCOMPLETE 1

/* The most header lines a request may carry. */
#define REQUEST_MAX_HEADERS 100

enum request_method {
	METHOD_GET,
	METHOD_HEAD,
	METHOD_POST, /* admin actions only */
	METHOD_PUT, /* uploads only */
	METHOD_OTHER,
};

/* A piece of the input buffer; p is NULL when absent. */
struct slice {
	const char *p;
	size_t n;
};

struct request {
	enum request_method method;
	struct slice method_name;
	struct slice target; /* as sent, not decoded */
	int minor; /* HTTP/1.minor */
	int keepalive; /* the client wants the connection kept */
	int has_body; /* Content-Length > 0 or Transfer-Encoding */
	int chunked; /* a Transfer-Encoding: no length known */
	uint64_t content_length; /* when has_body and not chunked */
	int expect_continue; /* Expect: 100-continue */
	struct slice range;
	struct slice if_range;
	struct slice if_none_match;
	struct slice if_modified_since;
	struct slice maxsize; /* X-DEBUGINFOD-MAXSIZE */
	struct slice user_agent;
	struct slice referer; /* only logged */
	struct slice forwarded_for; /* X-Forwarded-For */
	struct slice via; /* Via: the proxies the request went through */
	struct slice authorization;
	struct slice accept; /* media types the client takes */
	size_t head_len; /* bytes of the head, including the blank line */
};

/*
 * Parse the head at buf[0..len).  Returns REQUEST_OK, REQUEST_INCOMPLETE
 * when more bytes are needed (and len < max_head), or the HTTP status to
 * answer (400, 414, 431, 505) with *why saying what was wrong.
 */
int request_parse(struct request *req, const char *buf, size_t len,
    size_t max_head, const char **why);

/* 1 when the slice equals s, ignoring ASCII case. */
int slice_eq_nocase(struct slice sl, const char *s);

#endif /* DAEMON_REQUEST_H */
