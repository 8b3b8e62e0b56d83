/*
 * fetchers/headers.h: the head of an upstream's answer, read one header
 * line at a time as libcurl hands the lines over.
 *
 * The lines come from any server an upstream URL (or its redirect) names,
 * so they are hostile: nothing here trusts a length, a NUL or a digit it
 * has not checked.  What is kept is bounded: X-DEBUGINFOD-* lines, up to
 * UPSTREAM_HEADERS_MAX bytes of them; the values of X-DEBUGINFOD-FILE,
 * -ARCHIVE and -IMASIGNATURE apart, the others as lines to be replayed to
 * clients.  headers_format() writes such values and lines back, for
 * clients and for the object store.  No libcurl and no I/O, so that it can
 * be tested and fuzzed alone; one struct headers per transfer, used by one
 * thread.
 */
#ifndef FETCHERS_HEADERS_H
#define FETCHERS_HEADERS_H

#include <stddef.h>
#include <stdint.h>

#include "fetchers/upstream.h"

/* The longest Last-Modified value kept, NUL included. */
#define HEADERS_DATE_MAX 128

/* What the head of the answer arriving says so far. */
struct headers {
	int code; /* the status, 100 to 999; 0 before a status line or none */
	int64_t range_start; /* of "Content-Range: bytes N-..."; -1: none */
	char date[HEADERS_DATE_MAX]; /* the Last-Modified value; "": none */
	/* The first X-DEBUGINFOD-FILE, -ARCHIVE, -IMASIGNATURE; "": none. */
	char file[UPSTREAM_HEADERS_MAX];
	char archive[UPSTREAM_HEADERS_MAX];
	char imasig[UPSTREAM_HEADERS_MAX];
	/* The other X-DEBUGINFOD-* lines to replay, each "Name: value\r\n". */
	char keep[UPSTREAM_HEADERS_MAX];
	size_t keeplen;
	size_t kept; /* bytes of the lines taken, values and lines */
	/*
	 * Set by the caller, kept across resets: the answer is an object
	 * store's, whose user metadata (x-amz-meta-*) carries the
	 * X-DEBUGINFOD-* lines and the Last-Modified of the original answer
	 * (fetchers/s3.h); only those are kept, names in capitals.
	 */
	int amz_meta;
	int date_meta; /* date came from the metadata: it wins */
};

/* What one line was, for the caller's own decisions. */
enum headers_line {
	HEADERS_STATUS, /* a status line: the head of a new answer begins */
	HEADERS_LOCATION, /* the Location of a 3xx answer */
	HEADERS_FIELD, /* any other line */
};

/* Forget everything: no answer yet. */
void headers_reset(struct headers *h);

/*
 * Take one line of n bytes (not NUL-terminated; its CR LF included or not)
 * into h.  A status line ("HTTP/...") starts a new answer: h is reset and
 * its code read.  A Last-Modified value is kept in date ("" when it does
 * not fit), a Content-Range start in range_start, an X-DEBUGINFOD-* line
 * other than X-DEBUGINFOD-SIZE (which the server makes itself) taken when
 * its name is a token, its value has no control or 8-bit bytes (tabs
 * aside) and, with the lines taken before, it fits in
 * UPSTREAM_HEADERS_MAX bytes (with amz_meta, the same lines spelt
 * "x-amz-meta-x-debuginfod-*" and "x-amz-meta-last-modified" instead).
 * The first X-DEBUGINFOD-FILE, -ARCHIVE and -IMASIGNATURE are taken as
 * values (without the spaces and tabs around them), any other line is
 * appended to keep.  For HEADERS_LOCATION, *value and *vlen are the
 * bytes after "Location:", as they came.
 */
enum headers_line headers_line(struct headers *h, const char *line, size_t n,
    const char **value, size_t *vlen);

/*
 * The X-DEBUGINFOD-FILE, -ARCHIVE and -IMASIGNATURE lines of the values
 * file, archive and imasig (none for "" or NULL), then extra_len bytes of
 * extra (lines as headers_line kept them), into buf when they fit in cap
 * bytes (no NUL is written).  Returns their length, whether or not they
 * fit; headers_format(NULL, 0, ...) measures.
 */
size_t headers_format(char *buf, size_t cap, const char *file,
    const char *archive, const char *imasig, const char *extra,
    size_t extra_len);

#endif /* FETCHERS_HEADERS_H */
