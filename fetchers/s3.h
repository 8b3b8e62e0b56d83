/*
 * fetchers/s3.h: an S3-compatible object store, through libcurl.
 *
 * Lookups are fetches of the upstream machinery (fetchers/upstream.h) with
 * one upstream, the store: signed with SigV4 (CURLOPT_AWS_SIGV4), their
 * X-DEBUGINFOD-* lines read from the object's metadata, their head due
 * within the store's timeout, and one breaker.  Uploads, deletions and
 * the credentials check are transfers of their own on the same loop, and
 * count in that breaker too.  An upload of part_size bytes or more (and of
 * anything over 5 GiB, the largest single PUT) goes in parts (multipart
 * upload), one part at a time, as s3_plan says.
 *
 * Object names are keys without a leading '/', made only of unreserved
 * characters and '/', so that what libcurl 7.88 signs (the path as given,
 * not normalised) is what the store canonicalises.  Every
 * request says x-amz-content-sha256: UNSIGNED-PAYLOAD, which that libcurl
 * does not add itself.  Uploads give their length: radosgw refuses
 * chunked ones.
 *
 * Everything runs on the thread of the event base given to s3_new.
 */
#ifndef FETCHERS_S3_H
#define FETCHERS_S3_H

#include <stddef.h>
#include <stdint.h>

#include "fetchers/upstream.h"

struct event_base;
struct s3;

struct s3_conf {
	const char *url; /* objects are url/NAME; no trailing '/' */
	const char *name; /* how the store is shown; never a secret */
	const char *region;
	const char *access_key;
	const char *secret_key;
	unsigned timeout; /* seconds to connect, and to a lookup's head */
	uint64_t part_size; /* multipart from this size, in parts this big */
	/* As for the upstreams (fetchers/upstream.h). */
	unsigned transfer_timeout; /* seconds of a whole transfer */
	unsigned stall_timeout;
	unsigned min_rate;
	unsigned retries;
	unsigned breaker_failures;
	unsigned breaker_backoff;
	unsigned breaker_backoff_max;
	const char *proxy;
	const char *ca_file;
	const char *user_agent;
	int64_t (*now_ns)(void);
};

/* The end of an upload, a deletion or a check: ok, else why. */
typedef void (*s3_done_fn)(void *arg, int ok, long status, const char *why);

/* obs as for upstreams, with the store as upstream 0. */
struct s3 *s3_new(const struct s3_conf *sc, struct event_base *base,
    const struct upstream_observer *obs, char *err, size_t errlen);
/* Ends every transfer; their done callbacks do not run. */
void s3_free(struct s3 *st);

/* 1 while the breaker lets requests through. */
int s3_usable(const struct s3 *st);

/*
 * Look name up: a fetch as upstream_fetch's (NOTFOUND when the object is
 * not there; FAILED at once when the breaker is open), cancelled with
 * upstream_cancel.  The head's headers are the object's X-DEBUGINFOD-*
 * metadata, its mtime the original Last-Modified.
 */
struct upstream_fetch *s3_get(struct s3 *st, const char *name,
    uint64_t max_size, const struct upstream_sink *sink, void *arg,
    enum upstream_result *res);

/*
 * Upload size bytes of fd (which the store owns from now on, and closes)
 * as name, with headers ("Name: value\r\n" X-DEBUGINFOD-* lines) and
 * mtime (unix s) as metadata.  0, or -1 when it cannot start (done will
 * not run).
 */
int s3_put(struct s3 *st, const char *name, int fd, uint64_t size,
    const char *headers, size_t headers_len, int64_t mtime, s3_done_fn done,
    void *arg);
/* Delete name (a 404 counts as done). */
int s3_delete(struct s3 *st, const char *name, s3_done_fn done, void *arg);
/*
 * Delete every object whose name begins with prefix: a page of the
 * listing (1000 keys at most), one DeleteObjects of its keys, the next
 * page, until the last.  Only keys under prefix spelled as object names
 * are (letters, digits, - . _ ~, '/' between non-dot components) are
 * deleted; a listing that names others, repeats a continuation token,
 * goes backwards or passes 10000 pages ends it, !ok with why.  done gets
 * how many were deleted (those of the batches that went through, when
 * !ok).
 */
typedef void (
    *s3_purge_fn)(void *arg, int ok, uint64_t deleted, const char *why);
int s3_purge(struct s3 *st, const char *prefix, s3_purge_fn done, void *arg);
/* Check that the bucket answers the credentials (a signed HEAD). */
int s3_check(struct s3 *st, s3_done_fn done, void *arg);

/*
 * How an upload of size bytes goes, within S3's limits: 0, one PUT
 * (smaller than part_size and at most 5 GiB); 1, multipart, in *parts
 * parts of *part bytes (the last one smaller): part_size, raised to 5 MiB
 * and to whole MiB enough for 10000 parts, at most 5 GiB; -1, larger
 * than an S3 object may be (5 TiB).
 */
int s3_plan(uint64_t size, uint64_t part_size, uint64_t *part, unsigned *parts);

/*
 * Object-name escaping for the store's URLs: each byte of s but
 * A-Z a-z 0-9 - . _ ~ (and '/' when keep_slash) as %XX.  -1 when out
 * does not hold it.
 */
int s3_escape(const char *s, int keep_slash, char *out, size_t len);

#endif /* FETCHERS_S3_H */
