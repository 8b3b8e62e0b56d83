/*
 * daemon/response.h: what to answer for an artifact (conditional requests,
 * Range, X-DEBUGINFOD-MAXSIZE) and the bytes of response heads.
 *
 * Pure functions over a request and a description of the artifact: no I/O,
 * so every status decision is unit-tested without a socket.
 */
#ifndef DAEMON_RESPONSE_H
#define DAEMON_RESPONSE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "cache/meta.h"
#include "daemon/request.h"

/* A response head under construction in a fixed buffer. */
struct hbuf {
	char *buf;
	size_t len;
	size_t cap;
	int overflow; /* something did not fit; the head is unusable */
};

/* An artifact as served: a whole file or a section of one. */
struct artifact {
	uint64_t size; /* bytes of the artifact */
	time_t mtime; /* Last-Modified */
	char etag[64]; /* quoted strong validator */
	const char *file; /* X-DEBUGINFOD-FILE, or NULL */
	const char *archive; /* X-DEBUGINFOD-ARCHIVE, or NULL */
	const char *cache; /* X-Cache: HIT, MISS, ... */
	/* X-DEBUGINFOD-* values from the file's source, sent as they are. */
	const struct cache_meta *meta; /* or NULL */
	unsigned max_age; /* Cache-Control max-age; 0: just "public" */
};

/* The answer decided for a request of an artifact. */
struct plan {
	int status; /* 200, 206, 304, 406 or 416 */
	uint64_t offset; /* of the body within the artifact */
	uint64_t length; /* of the body */
	const char *why; /* 406, 416: the text body, without its newline */
};

/* The text of a 406 for X-DEBUGINFOD-MAXSIZE. */
#define RESPONSE_TOOBIG "larger than X-DEBUGINFOD-MAXSIZE"

/*
 * The request's X-DEBUGINFOD-MAXSIZE in bytes; 0 when there is none or it
 * is not a positive decimal number (no limit, as for debuginfod).
 */
uint64_t response_maxsize(const struct request *req);

/* Decide status and body range, in RFC 9110 section 13.2.2 order. */
void response_plan(const struct request *req, const struct artifact *art,
    struct plan *plan);

/* Set a strong ETag from what identifies the bytes served. */
void response_etag(struct artifact *art, uint64_t size, int64_t mtime_ns,
    uint64_t offset);

const char *response_reason(int status);

/* Start a head: status line, Date, Server. */
void hbuf_start(struct hbuf *hb, char *buf, size_t cap, int status,
    const char *date);
/* One header line; control bytes in value are percent-escaped. */
void hbuf_header(struct hbuf *hb, const char *name, const char *value);
void hbuf_header_u64(struct hbuf *hb, const char *name, uint64_t value);
/* Connection handling and the blank line that ends the head. */
void hbuf_end(struct hbuf *hb, int keepalive, int http10);

/* Bytes the X-DEBUGINFOD-* lines of m take in a head. */
size_t response_meta_len(const struct cache_meta *m);

/*
 * Append the headers of a planned artifact response (any status of the
 * plan) to a head begun with hbuf_start(hb, ..., plan->status, ...).
 */
void response_artifact_head(struct hbuf *hb, const struct plan *plan,
    const struct artifact *art);

#endif /* DAEMON_RESPONSE_H */
