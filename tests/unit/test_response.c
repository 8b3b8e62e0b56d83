/*
 * tests/unit/test_response.c: daemon/response.c (status decisions for
 * artifacts, ETags, response heads) and daemon/httpdate.c (HTTP dates,
 * ISO and common log format times).
 *
 * Requests are built by hand: each header value is a heap copy of exactly
 * its bytes, without a NUL after it, as the request parser leaves them, so
 * a read past a slice is an AddressSanitizer report.  The artifact is 1000
 * bytes modified at 784111777 ("Sun, 06 Nov 1994 08:49:37 GMT").  Heads
 * are written into buffers followed by a guard byte.  No files, no clock.
 */
#include "daemon/response.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autoconf.h"
#include "daemon/httpdate.h"
#include "tests/tap.h"

#define MTIME 784111777
#define MTIME_DATE "Sun, 06 Nov 1994 08:49:37 GMT"
#define NOW_DATE "Tue, 19 Jan 2038 03:14:08 GMT"
#define SERVER PACKAGE_NAME "/" PACKAGE_VERSION

/* Heap copies behind the slices of the current test, freed together. */
static char *copies[32];
static int ncopies;

static void
free_copies(void)
{
	while (ncopies > 0)
		free(copies[--ncopies]);
}

/* A slice holding exactly the bytes of s, with no NUL after them. */
static struct slice
mkslice(const char *s)
{
	struct slice sl;
	size_t n = strlen(s);
	char *p = malloc(n > 0 ? n : 1);

	if (p == NULL || ncopies == (int)(sizeof(copies) / sizeof(copies[0]))) {
		fprintf(stderr, "mkslice: out of room\n");
		exit(1);
	}
	memcpy(p, s, n);
	copies[ncopies++] = p;
	sl.p = p;
	sl.n = n;
	return sl;
}

static void
art_init(struct artifact *art, uint64_t size)
{
	memset(art, 0, sizeof(*art));
	art->size = size;
	art->mtime = MTIME;
	response_etag(art, size, (int64_t)MTIME * 1000000000 + 123, 0);
}

/* A request carrying only the headers given (NULL: absent). */
struct hdrs {
	const char *range, *if_range, *inm, *ims, *maxsize;
};

static void
plan_for(const struct hdrs *h, const struct artifact *art, struct plan *plan)
{
	struct request req;

	memset(&req, 0, sizeof(req));
	req.method = METHOD_GET;
	req.minor = 1;
	req.keepalive = 1;
	if (h->range != NULL)
		req.range = mkslice(h->range);
	if (h->if_range != NULL)
		req.if_range = mkslice(h->if_range);
	if (h->inm != NULL)
		req.if_none_match = mkslice(h->inm);
	if (h->ims != NULL)
		req.if_modified_since = mkslice(h->ims);
	if (h->maxsize != NULL)
		req.maxsize = mkslice(h->maxsize);
	memset(plan, 0xa5, sizeof(*plan));
	response_plan(&req, art, plan);
	free_copies();
}

/* After a helper's checks: name the calling line if any of them failed. */
static void
called_from(int failed_before, int line)
{
	if (tap_failed > failed_before)
		printf("#   case at %s:%d\n", __FILE__, line);
}

/*
 * The plan for h against art is status with the body range off, len; a
 * 406 or 416 has a reason, the others none.
 */
static void
check_plan_at(int line, const struct hdrs *h, const struct artifact *art,
    int status, uint64_t off, uint64_t len, const char *what)
{
	int failed = tap_failed;
	struct plan plan;
	char msg[200];

	plan_for(h, art, &plan);
	snprintf(msg, sizeof(msg), "%s: status", what);
	is_int(plan.status, status, msg);
	snprintf(msg, sizeof(msg), "%s: offset", what);
	is_int(plan.offset, off, msg);
	snprintf(msg, sizeof(msg), "%s: length", what);
	is_int(plan.length, len, msg);
	snprintf(msg, sizeof(msg), "%s: reason", what);
	if (status == 406 || status == 416)
		ok(plan.why != NULL && plan.why[0] != '\0', msg);
	else
		ok(plan.why == NULL, msg);
	called_from(failed, line);
}

#define check_plan(...) check_plan_at(__LINE__, __VA_ARGS__)

static void
test_plan_plain(void)
{
	struct artifact art;
	struct hdrs h = { 0 };

	art_init(&art, 1000);
	check_plan(&h, &art, 200, 0, 1000, "no conditionals: 200 whole");
	art_init(&art, 0);
	check_plan(&h, &art, 200, 0, 0, "empty artifact: 200 empty");
	art_init(&art, UINT64_MAX);
	check_plan(&h, &art, 200, 0, UINT64_MAX, "huge artifact: 200 whole");
}

static void
test_plan_if_none_match(void)
{
	struct artifact art;
	struct hdrs h = { 0 };
	char list[200], weak[100], prefix[100], longer[100], bare[100];

	art_init(&art, 1000);
	h.inm = art.etag;
	check_plan(&h, &art, 304, 0, 0, "If-None-Match exact: 304");
	snprintf(list, sizeof(list), "\"x\", %s ,\"y\"", art.etag);
	h.inm = list;
	check_plan(&h, &art, 304, 0, 0, "If-None-Match in a list: 304");
	snprintf(list, sizeof(list), "\"x\",%s", art.etag);
	h.inm = list;
	check_plan(&h, &art, 304, 0, 0, "If-None-Match last in a list: 304");
	snprintf(weak, sizeof(weak), "W/%s", art.etag);
	h.inm = weak;
	check_plan(&h, &art, 304, 0, 0, "If-None-Match weak form: 304");
	snprintf(list, sizeof(list), "W/\"x\", W/%s", art.etag);
	h.inm = list;
	check_plan(&h, &art, 304, 0, 0, "weak tags in a list: 304");
	h.inm = "*";
	check_plan(&h, &art, 304, 0, 0, "If-None-Match *: 304");
	h.inm = " \t* ";
	check_plan(&h, &art, 304, 0, 0, "If-None-Match * with blanks: 304");

	h.inm = "\"other\"";
	check_plan(&h, &art, 200, 0, 1000, "If-None-Match other tag: 200");
	h.inm = "\"a\", W/\"b\", \"c\"";
	check_plan(&h, &art, 200, 0, 1000, "If-None-Match other list: 200");
	h.inm = "";
	check_plan(&h, &art, 200, 0, 1000, "If-None-Match empty: 200");
	snprintf(prefix, sizeof(prefix), "%.*s\"", (int)strlen(art.etag) - 2,
	    art.etag);
	h.inm = prefix;
	check_plan(&h, &art, 200, 0, 1000, "a prefix of our tag: 200");
	snprintf(longer, sizeof(longer), "%.*s0\"", (int)strlen(art.etag) - 1,
	    art.etag);
	h.inm = longer;
	check_plan(&h, &art, 200, 0, 1000, "our tag plus a digit: 200");
	snprintf(bare, sizeof(bare), "%.*s", (int)strlen(art.etag) - 2,
	    art.etag + 1);
	h.inm = bare;
	check_plan(&h, &art, 200, 0, 1000, "our tag without quotes: 200");
	snprintf(weak, sizeof(weak), "w/%s", art.etag);
	h.inm = weak;
	check_plan(&h, &art, 200, 0, 1000, "lowercase w/ is not weak: 200");
}

static void
test_plan_if_modified_since(void)
{
	struct artifact art;
	struct hdrs h = { 0 };
	char date[HTTPDATE_LEN], later[HTTPDATE_LEN], earlier[HTTPDATE_LEN];

	art_init(&art, 1000);
	httpdate_format(MTIME, date);
	httpdate_format(MTIME + 1, later);
	httpdate_format(MTIME - 1, earlier);
	h.ims = date;
	check_plan(&h, &art, 304, 0, 0, "If-Modified-Since = mtime: 304");
	h.ims = later;
	check_plan(&h, &art, 304, 0, 0, "If-Modified-Since > mtime: 304");
	h.ims = "Sunday, 06-Nov-94 08:49:37 GMT";
	check_plan(&h, &art, 304, 0, 0, "RFC 850 If-Modified-Since: 304");
	h.ims = "Sun Nov  6 08:49:37 1994";
	check_plan(&h, &art, 304, 0, 0, "asctime If-Modified-Since: 304");
	h.ims = earlier;
	check_plan(&h, &art, 200, 0, 1000, "If-Modified-Since < mtime: 200");
	h.ims = "yesterday";
	check_plan(&h, &art, 200, 0, 1000,
	    "unparseable If-Modified-Since: 200");
	h.ims = "";
	check_plan(&h, &art, 200, 0, 1000, "empty If-Modified-Since: 200");

	/* If-None-Match, when present, decides alone (RFC 9110 13.2.2). */
	h.ims = date;
	h.inm = "\"other\"";
	check_plan(&h, &art, 200, 0, 1000,
	    "non-matching If-None-Match overrides If-Modified-Since");
	h.ims = earlier;
	h.inm = art.etag;
	check_plan(&h, &art, 304, 0, 0,
	    "matching If-None-Match wins over an old If-Modified-Since");
}

static void
test_plan_maxsize(void)
{
	struct artifact art;
	struct hdrs h = { 0 };
	struct plan plan;

	art_init(&art, 1000);
	h.maxsize = "999";
	check_plan(&h, &art, 406, 0, 0, "MAXSIZE smaller: 406");
	plan_for(&h, &art, &plan);
	ok(plan.why != NULL && strstr(plan.why, "MAXSIZE") != NULL,
	    "406 says it is about MAXSIZE");
	h.maxsize = "1";
	check_plan(&h, &art, 406, 0, 0, "MAXSIZE 1: 406");
	h.maxsize = "1000";
	check_plan(&h, &art, 200, 0, 1000, "MAXSIZE equal: 200");
	h.maxsize = "1001";
	check_plan(&h, &art, 200, 0, 1000, "MAXSIZE larger: 200");
	h.maxsize = "0";
	check_plan(&h, &art, 200, 0, 1000, "MAXSIZE 0: no limit, 200");
	h.maxsize = "abc";
	check_plan(&h, &art, 200, 0, 1000, "MAXSIZE garbage: 200");
	h.maxsize = "";
	check_plan(&h, &art, 200, 0, 1000, "MAXSIZE empty: 200");
	h.maxsize = "-5";
	check_plan(&h, &art, 200, 0, 1000, "MAXSIZE negative: 200");
	h.maxsize = "5x";
	check_plan(&h, &art, 200, 0, 1000, "MAXSIZE with junk: 200");
	h.maxsize = "99999999999999999999999";
	check_plan(&h, &art, 200, 0, 1000, "MAXSIZE overflowing: 200");

	/* A 304 has no body: it comes before MAXSIZE. */
	h.maxsize = "10";
	h.inm = art.etag;
	check_plan(&h, &art, 304, 0, 0, "If-None-Match hit with small MAXSIZE");
	h.inm = NULL;
	h.ims = MTIME_DATE;
	check_plan(&h, &art, 304, 0, 0,
	    "If-Modified-Since hit with small MAXSIZE");
	/* MAXSIZE is about the whole artifact, not the range asked for. */
	h.ims = NULL;
	h.range = "bytes=0-9";
	check_plan(&h, &art, 406, 0, 0, "small range of a too large artifact");
	h.range = "bytes=5000-";
	check_plan(&h, &art, 406, 0, 0, "406 comes before 416");
}

static void
test_plan_range(void)
{
	struct artifact art;
	struct hdrs h = { 0 };

	art_init(&art, 1000);
	h.range = "bytes=0-9";
	check_plan(&h, &art, 206, 0, 10, "bytes=0-9");
	h.range = "bytes=5-";
	check_plan(&h, &art, 206, 5, 995, "bytes=5-");
	h.range = "bytes=0-";
	check_plan(&h, &art, 206, 0, 1000, "bytes=0-");
	h.range = "bytes=-3";
	check_plan(&h, &art, 206, 997, 3, "bytes=-3");
	h.range = "bytes=-1000";
	check_plan(&h, &art, 206, 0, 1000, "suffix of exactly the size");
	h.range = "bytes=-5000";
	check_plan(&h, &art, 206, 0, 1000, "suffix larger than the size");
	h.range = "bytes=999-999";
	check_plan(&h, &art, 206, 999, 1, "the last byte");
	h.range = "bytes=999-";
	check_plan(&h, &art, 206, 999, 1, "open range at the last byte");
	h.range = "bytes=0-1000";
	check_plan(&h, &art, 206, 0, 1000, "end at the size is clamped");
	h.range = "bytes=0-999";
	check_plan(&h, &art, 206, 0, 1000, "end at the last byte");
	h.range = "bytes=990-5000";
	check_plan(&h, &art, 206, 990, 10, "end beyond the size is clamped");
	h.range = "bytes=0-1844674407370955160";
	check_plan(&h, &art, 206, 0, 1000, "19-digit end is clamped");
	/* A valid uint64 end near UINT64_MAX is clamped the same way. */
	h.range = "bytes=0-18446744073709551610";
	check_plan(&h, &art, 206, 0, 1000, "end UINT64_MAX - 5 is clamped");
	h.range = "bytes=0-99999999999999999999";
	check_plan(&h, &art, 200, 0, 1000, "end beyond uint64 is ignored");
	h.range = "bytes=5-5";
	check_plan(&h, &art, 206, 5, 1, "a one-byte range");
	h.range = "bytes= 0-9 ";
	check_plan(&h, &art, 206, 0, 10, "spaces around the range");
	h.range = "bytes=\t10-19\t";
	check_plan(&h, &art, 206, 10, 10, "TABs around the range");
	h.range = "BYTES=0-9";
	check_plan(&h, &art, 206, 0, 10, "BYTES= in capitals");
	h.range = "Bytes=-1";
	check_plan(&h, &art, 206, 999, 1, "Bytes= in mixed case");

	h.range = "bytes=-0";
	check_plan(&h, &art, 416, 0, 0, "bytes=-0: 416");
	h.range = "bytes=1000-";
	check_plan(&h, &art, 416, 0, 0, "start at the size: 416");
	h.range = "bytes=1000-1005";
	check_plan(&h, &art, 416, 0, 0, "range just past the end: 416");
	h.range = "bytes=2000-3000";
	check_plan(&h, &art, 416, 0, 0, "range far past the end: 416");

	h.range = "bytes=9-5";
	check_plan(&h, &art, 200, 0, 1000, "reversed range ignored");
	h.range = "bytes=0-1,5-6";
	check_plan(&h, &art, 200, 0, 1000, "several ranges ignored");
	h.range = "bytes=0-1, 5-6";
	check_plan(&h, &art, 200, 0, 1000, "several ranges with a space");
	h.range = "items=0-9";
	check_plan(&h, &art, 200, 0, 1000, "another unit ignored");
	h.range = "bytes";
	check_plan(&h, &art, 200, 0, 1000, "unit alone ignored");
	h.range = "bytes=";
	check_plan(&h, &art, 200, 0, 1000, "empty range set ignored");
	h.range = "bytes=-";
	check_plan(&h, &art, 200, 0, 1000, "lone dash ignored");
	h.range = "bytes=5";
	check_plan(&h, &art, 200, 0, 1000, "no dash ignored");
	h.range = "bytes=a-9";
	check_plan(&h, &art, 200, 0, 1000, "non-numeric start ignored");
	h.range = "bytes=0-9x";
	check_plan(&h, &art, 200, 0, 1000, "junk after the end ignored");
	h.range = "bytes=0 - 9";
	check_plan(&h, &art, 200, 0, 1000, "spaces around the dash ignored");
	h.range = "bytes=-a";
	check_plan(&h, &art, 200, 0, 1000, "non-numeric suffix ignored");
	h.range = "bytes=--5";
	check_plan(&h, &art, 200, 0, 1000, "double dash ignored");
	h.range = "bytes =0-9";
	check_plan(&h, &art, 200, 0, 1000, "space before = ignored");
	h.range = "";
	check_plan(&h, &art, 200, 0, 1000, "empty Range ignored");

	art_init(&art, 0);
	h.range = "bytes=0-";
	check_plan(&h, &art, 416, 0, 0, "empty artifact, bytes=0-: 416");
	h.range = "bytes=0-0";
	check_plan(&h, &art, 416, 0, 0, "empty artifact, bytes=0-0: 416");
	h.range = "bytes=-5";
	check_plan(&h, &art, 416, 0, 0, "empty artifact, suffix: 416");
	art_init(&art, 1);
	h.range = "bytes=0-0";
	check_plan(&h, &art, 206, 0, 1, "one-byte artifact, bytes=0-0");
	h.range = "bytes=-9";
	check_plan(&h, &art, 206, 0, 1, "one-byte artifact, suffix");
	h.range = "bytes=1-";
	check_plan(&h, &art, 416, 0, 0, "one-byte artifact, bytes=1-: 416");
}

static void
test_plan_if_range(void)
{
	struct artifact art;
	struct hdrs h = { 0 };
	char weak[100], date[HTTPDATE_LEN], later[HTTPDATE_LEN];

	art_init(&art, 1000);
	httpdate_format(MTIME, date);
	httpdate_format(MTIME + 1, later);
	h.range = "bytes=0-9";
	h.if_range = art.etag;
	check_plan(&h, &art, 206, 0, 10, "If-Range with our ETag: 206");
	h.if_range = "\"other\"";
	check_plan(&h, &art, 200, 0, 1000, "If-Range with another ETag: 200");
	h.if_range = "\"\"";
	check_plan(&h, &art, 200, 0, 1000, "If-Range with an empty tag: 200");
	/* If-Range compares strongly (RFC 9110 13.1.5). */
	snprintf(weak, sizeof(weak), "W/%s", art.etag);
	h.if_range = weak;
	check_plan(&h, &art, 200, 0, 1000, "If-Range with a weak tag: 200");
	h.if_range = date;
	check_plan(&h, &art, 206, 0, 10, "If-Range with Last-Modified: 206");
	h.if_range = "Sunday, 06-Nov-94 08:49:37 GMT";
	check_plan(&h, &art, 206, 0, 10, "If-Range with an RFC 850 date");
	h.if_range = later;
	check_plan(&h, &art, 200, 0, 1000, "If-Range with a later date: 200");
	h.if_range = "garbage";
	check_plan(&h, &art, 200, 0, 1000, "If-Range garbage: 200");
	h.if_range = "";
	check_plan(&h, &art, 200, 0, 1000, "If-Range empty: 200");
	h.range = "bytes=5000-";
	h.if_range = art.etag;
	check_plan(&h, &art, 416, 0, 0, "If-Range holds, range unsatisfiable");
	h.if_range = "\"other\"";
	check_plan(&h, &art, 200, 0, 1000,
	    "If-Range fails, unsatisfiable range ignored");
	h.range = NULL;
	h.if_range = art.etag;
	check_plan(&h, &art, 200, 0, 1000, "If-Range without Range: 200");
}

static void
test_etag(void)
{
	struct artifact a, b;
	size_t n;

	response_etag(&a, 1000, 5, 0);
	n = strlen(a.etag);
	ok(n >= 3 && a.etag[0] == '"' && a.etag[n - 1] == '"' &&
		strchr(a.etag + 1, '"') == a.etag + n - 1,
	    "etag is one quoted string");
	ok(strncmp(a.etag, "W/", 2) != 0, "etag is strong");
	response_etag(&b, 1000, 5, 0);
	is_str(b.etag, a.etag, "same inputs, same etag");
	response_etag(&b, 1001, 5, 0);
	ok(strcmp(a.etag, b.etag) != 0, "size changes the etag");
	response_etag(&b, 1000, 6, 0);
	ok(strcmp(a.etag, b.etag) != 0, "mtime changes the etag");
	response_etag(&b, 1000, 5, 1);
	ok(strcmp(a.etag, b.etag) != 0, "offset changes the etag");
	response_etag(&a, 1000, 5, 2);
	ok(strcmp(a.etag, b.etag) != 0, "offsets 1 and 2 differ");
	response_etag(&a, 1000, 1000000005, 0);
	response_etag(&b, 1000, 1000000006, 0);
	ok(strcmp(a.etag, b.etag) != 0, "nanoseconds change the etag");
	response_etag(&a, 0x10, 0x2, 0);
	response_etag(&b, 0x1, 0x2, 0);
	ok(strcmp(a.etag, b.etag) != 0, "size 16 and size 1 differ");
	/* What clients keep for If-None-Match: the same text across versions. */
	response_etag(&a, 5984, 1764268800123456789, 0);
	is_str(a.etag, "\"1760-187bf1204fa9cd15\"",
	    "etag: \"SIZE-MTIME\" in hex");
	response_etag(&a, 0, 0, 0x1000);
	is_str(a.etag, "\"0-0-1000\"", "... and -OFFSET when not 0");
	response_etag(&a, UINT64_MAX, -1, 0xabcdef);
	is_str(a.etag, "\"ffffffffffffffff-ffffffffffffffff-abcdef\"",
	    "... lower-case, 64 bits each");

	memset(a.etag, 'x', sizeof(a.etag));
	response_etag(&a, UINT64_MAX, INT64_MIN, UINT64_MAX);
	n = strnlen(a.etag, sizeof(a.etag));
	ok(n < sizeof(a.etag) && n >= 3 && a.etag[0] == '"' &&
		a.etag[n - 1] == '"',
	    "the largest etag fits, quotes and all");
	response_etag(&b, UINT64_MAX, INT64_MIN, UINT64_MAX - 1);
	ok(strcmp(a.etag, b.etag) != 0, "large offsets still differ");
}

/* Does the head contain the line "name: value" exactly? */
static int
has_line(const char *head, const char *name, const char *value)
{
	char line[600];

	snprintf(line, sizeof(line), "\r\n%s: %s\r\n", name, value);
	return strstr(head, line) != NULL;
}

/* How many header lines named name (any value, exact case)? */
static int
count_header(const char *head, const char *name)
{
	char start[100];
	const char *p = head;
	int count = 0;

	snprintf(start, sizeof(start), "\r\n%s:", name);
	while ((p = strstr(p, start)) != NULL) {
		count++;
		p++;
	}
	return count;
}

/* Any line starting with s? */
static int
has_line_start(const char *head, const char *s)
{
	const char *p;

	if (strncmp(head, s, strlen(s)) == 0)
		return 1;
	for (p = head; (p = strchr(p, '\n')) != NULL; p++)
		if (strncmp(p + 1, s, strlen(s)) == 0)
			return 1;
	return 0;
}

#define GUARD 0x5a

static void
test_hbuf_start(void)
{
	char buf[512];
	struct hbuf hb;
	static const int codes[] = { 200, 206, 304, 404, 406, 416, 503 };
	char want[200];
	size_t i;

	memset(buf, 0, sizeof(buf));
	hbuf_start(&hb, buf, sizeof(buf) - 1, 200, MTIME_DATE);
	is_int(hb.overflow, 0, "hbuf_start fits");
	is_str(buf,
	    "HTTP/1.1 200 OK\r\nDate: " MTIME_DATE "\r\nServer: " SERVER "\r\n",
	    "status line, Date and Server");
	is_int(hb.len, strlen(buf), "len counts the bytes written");
	ok(hb.buf == buf && hb.cap == sizeof(buf) - 1, "buffer and cap kept");

	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		memset(buf, 0, sizeof(buf));
		hbuf_start(&hb, buf, sizeof(buf) - 1, codes[i], NOW_DATE);
		snprintf(want, sizeof(want), "HTTP/1.1 %d %s\r\n", codes[i],
		    response_reason(codes[i]));
		ok(strncmp(buf, want, strlen(want)) == 0,
		    "status line names code and reason");
	}

	/* hbuf_start resets a used buffer. */
	memset(buf, 0, sizeof(buf));
	hb.len = 100;
	hb.overflow = 1;
	hbuf_start(&hb, buf, sizeof(buf) - 1, 404, NOW_DATE);
	is_int(hb.overflow, 0, "hbuf_start clears overflow");
	ok(strncmp(buf, "HTTP/1.1 404 Not Found\r\n", 24) == 0,
	    "hbuf_start writes from the start");
}

static void
test_hbuf_header(void)
{
	char buf[1024];
	struct hbuf hb;
	const char *body;

	memset(buf, 0, sizeof(buf));
	hbuf_start(&hb, buf, sizeof(buf) - 1, 200, NOW_DATE);
	body = buf + hb.len;
	hbuf_header(&hb, "X-Plain", "a b:c/d~");
	is_str(body, "X-Plain: a b:c/d~\r\n", "printable value as is");

	hbuf_start(&hb, buf, sizeof(buf) - 1, 200, NOW_DATE);
	memset(buf + hb.len, 0, sizeof(buf) - 1 - hb.len);
	hbuf_header(&hb, "X-File", "/a\r\nSet-Cookie: x=1\r\n\r\nbody");
	is_str(body, "X-File: /a%0D%0ASet-Cookie: x=1%0D%0A%0D%0Abody\r\n",
	    "CR and LF escaped");
	ok(!has_line_start(buf, "Set-Cookie"), "no injected header line");
	is_int(count_header(buf, "Set-Cookie"), 0, "no Set-Cookie header");

	hbuf_start(&hb, buf, sizeof(buf) - 1, 200, NOW_DATE);
	memset(buf + hb.len, 0, sizeof(buf) - 1 - hb.len);
	hbuf_header(&hb, "X-C", "\x01\x1f\x7f\t%41 100%");
	is_str(body, "X-C: %01%1F%7F%09%2541 100%25\r\n",
	    "control bytes, DEL, TAB and % escaped");

	hbuf_start(&hb, buf, sizeof(buf) - 1, 200, NOW_DATE);
	memset(buf + hb.len, 0, sizeof(buf) - 1 - hb.len);
	hbuf_header(&hb, "X-U", "caf\xc3\xa9");
	is_str(body, "X-U: caf\xc3\xa9\r\n", "bytes above 0x7f kept");

	hbuf_start(&hb, buf, sizeof(buf) - 1, 200, NOW_DATE);
	memset(buf + hb.len, 0, sizeof(buf) - 1 - hb.len);
	hbuf_header(&hb, "X-E", "");
	is_str(body, "X-E: \r\n", "empty value");

	hbuf_start(&hb, buf, sizeof(buf) - 1, 200, NOW_DATE);
	memset(buf + hb.len, 0, sizeof(buf) - 1 - hb.len);
	hbuf_header_u64(&hb, "Content-Length", 0);
	hbuf_header_u64(&hb, "X-Big", UINT64_MAX);
	hbuf_header_u64(&hb, "X-2^32", 4294967296ULL);
	is_str(body,
	    "Content-Length: 0\r\nX-Big: 18446744073709551615\r\n"
	    "X-2^32: 4294967296\r\n",
	    "u64 headers, 0 to UINT64_MAX");
	is_int(hb.overflow, 0, "no overflow in a large buffer");
	is_int(hb.len, strlen(buf), "len matches the text");
}

static void
test_hbuf_end(void)
{
	static const struct {
		int keepalive, http10;
		const char *tail;
	} cases[] = {
		{ 0, 0, "Connection: close\r\n\r\n" },
		{ 0, 1, "Connection: close\r\n\r\n" },
		{ 1, 1, "Connection: keep-alive\r\n\r\n" },
		{ 1, 0, "\r\n" },
	};
	char buf[512], msg[100];
	struct hbuf hb;
	const char *tail;
	size_t i, start;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(buf, 0, sizeof(buf));
		hbuf_start(&hb, buf, sizeof(buf) - 1, 200, NOW_DATE);
		start = hb.len;
		hbuf_end(&hb, cases[i].keepalive, cases[i].http10);
		tail = buf + start;
		snprintf(msg, sizeof(msg), "hbuf_end keepalive %d, HTTP/1.%d",
		    cases[i].keepalive, cases[i].http10 ? 0 : 1);
		is_str(tail, cases[i].tail, msg);
		snprintf(msg, sizeof(msg), "one blank line, at the end (%zu)",
		    i);
		ok(strstr(buf, "\r\n\r\n") == buf + strlen(buf) - 4, msg);
	}
}

/* hbuf_start then two headers and the end into cap bytes; 1 if all fit. */
static int
fill(char *buf, size_t cap, size_t *len)
{
	struct hbuf hb;

	hbuf_start(&hb, buf, cap, 200, NOW_DATE);
	hbuf_header(&hb, "X-A", "0123456789\r\n");
	hbuf_header_u64(&hb, "X-B", UINT64_MAX);
	hbuf_end(&hb, 0, 0);
	*len = hb.len;
	return !hb.overflow;
}

static void
test_hbuf_overflow(void)
{
	char big[1024], small[64], msg[100];
	struct hbuf hb;
	size_t full, len, cap;
	int fits, guards_ok = 1, flags_ok = 1;

	memset(big, 0, sizeof(big));
	ok(fill(big, sizeof(big) - 1, &full), "the full head fits 1023 bytes");
	is_int(full, strlen(big), "full head length");

	/* Every cap below the full length overflows, and writes nothing
	   past cap. */
	for (cap = 0; cap <= full; cap++) {
		char *mem = malloc(cap + 1);

		if (mem == NULL) {
			perror("malloc");
			exit(1);
		}
		mem[cap] = GUARD;
		fits = fill(mem, cap, &len);
		if (mem[cap] != GUARD || len > cap)
			guards_ok = 0;
		if (fits != (cap == full))
			flags_ok = 0;
		if (cap == full && memcmp(mem, big, full) != 0)
			flags_ok = 0;
		free(mem);
	}
	ok(guards_ok, "no byte written or counted past cap, for every cap");
	ok(flags_ok, "overflow exactly when cap is short of the full length");

	/* Overflow is sticky: a later short header is not glued on. */
	memset(small, GUARD, sizeof(small));
	hbuf_start(&hb, small, 20, 200, NOW_DATE);
	is_int(hb.overflow, 1, "Date does not fit in 20 bytes");
	len = hb.len;
	hbuf_header(&hb, "X", "");
	hbuf_end(&hb, 1, 0);
	is_int(hb.len, len, "nothing appended after an overflow");
	is_int(hb.overflow, 1, "overflow stays set");
	ok(small[20] == GUARD, "guard after a 20-byte buffer intact");
	snprintf(msg, sizeof(msg), "status line intact (%zu bytes)", len);
	ok(len >= 17 && memcmp(small, "HTTP/1.1 200 OK\r\n", 17) == 0, msg);

	/* A name too long for the room left: the rest of that line and the
	   lines after it must not be written either. */
	memset(big, 0, sizeof(big));
	hbuf_start(&hb, big, sizeof(big) - 1, 200, NOW_DATE);
	len = hb.len;
	hb.cap = len + 10;
	hbuf_header(&hb, "X-A-Header-Name-Longer-Than-Ten-Bytes", "v");
	is_int(hb.overflow, 1, "a long name overflows");
	is_int(hb.len, len, "no part of an overflowing line is kept");
	hbuf_header(&hb, "X", "y");
	hbuf_end(&hb, 1, 0);
	is_int(hb.len, len, "short lines after an overflow are dropped");

	memset(small, GUARD, sizeof(small));
	hbuf_start(&hb, small, 0, 200, NOW_DATE);
	ok(hb.overflow && hb.len == 0 && small[0] == GUARD,
	    "cap 0: nothing written, overflow set");
}

/* The head for plan and art, ended, into buf (cap - 1 bytes + NUL). */
static void
head_for(char *buf, size_t cap, const struct plan *plan,
    const struct artifact *art)
{
	struct hbuf hb;

	memset(buf, 0, cap);
	hbuf_start(&hb, buf, cap - 1, plan->status, NOW_DATE);
	response_artifact_head(&hb, plan, art);
	hbuf_end(&hb, 1, 0);
	ok(!hb.overflow, "artifact head fits");
	is_int(hb.len, strlen(buf), "artifact head length");
}

static void
test_artifact_head(void)
{
	char buf[2048], num[32];
	struct artifact art;
	struct plan plan;
	struct hbuf hb;
	struct hdrs h = { 0 };
	char small[65];
	static const char other[] = "X-Debuginfod-Other: as\tit came\r\n";
	const struct cache_meta meta = { "/usr/src/a%20b.c", "a_1.0.deb",
		"0302ab", other, sizeof(other) - 1 };

	art_init(&art, 1000);
	art.file = "/usr/lib/debug/.build-id/ab/cdef.debug";
	art.archive = "/srv/pkgs/foo-dbgsym_1.0_amd64.deb";
	art.cache = "HIT";
	plan_for(&h, &art, &plan);
	head_for(buf, sizeof(buf), &plan, &art);
	ok(strncmp(buf, "HTTP/1.1 200 OK\r\n", 17) == 0, "200: status line");
	ok(has_line(buf, "Date", NOW_DATE), "200: Date");
	ok(has_line(buf, "Server", SERVER), "200: Server");
	ok(has_line(buf, "Content-Type", "application/octet-stream"),
	    "200: Content-Type octet-stream");
	ok(has_line(buf, "Content-Length", "1000"), "200: Content-Length");
	ok(has_line(buf, "X-DEBUGINFOD-SIZE", "1000"),
	    "200: X-DEBUGINFOD-SIZE");
	ok(has_line(buf, "X-DEBUGINFOD-FILE", art.file),
	    "200: X-DEBUGINFOD-FILE");
	ok(has_line(buf, "X-DEBUGINFOD-ARCHIVE", art.archive),
	    "200: X-DEBUGINFOD-ARCHIVE");
	ok(has_line(buf, "Last-Modified", MTIME_DATE), "200: Last-Modified");
	ok(has_line(buf, "ETag", art.etag), "200: ETag");
	ok(has_line(buf, "Accept-Ranges", "bytes"), "200: Accept-Ranges");
	ok(has_line(buf, "Cache-Control", "public"), "200: Cache-Control");
	ok(has_line(buf, "X-Cache", "HIT"), "200: X-Cache");
	is_int(count_header(buf, "Content-Range"), 0, "200: no Content-Range");
	is_int(count_header(buf, "Content-Length"), 1,
	    "200: one Content-Length");
	is_int(count_header(buf, "Content-Type"), 1, "200: one Content-Type");
	ok(strstr(buf, "\r\n\r\n") == buf + strlen(buf) - 4,
	    "200: the head ends once");

	art.file = NULL;
	art.archive = NULL;
	art.cache = NULL;
	head_for(buf, sizeof(buf), &plan, &art);
	is_int(count_header(buf, "X-DEBUGINFOD-FILE"), 0, "no FILE when unset");
	is_int(count_header(buf, "X-DEBUGINFOD-ARCHIVE"), 0,
	    "no ARCHIVE when unset");
	is_int(count_header(buf, "X-Cache"), 0, "no X-Cache when unset");
	ok(has_line(buf, "X-DEBUGINFOD-SIZE", "1000"), "SIZE always there");

	art.max_age = 604800;
	head_for(buf, sizeof(buf), &plan, &art);
	ok(has_line(buf, "Cache-Control", "public, max-age=604800"),
	    "a hit's max-age in Cache-Control");
	art.max_age = UINT_MAX;
	head_for(buf, sizeof(buf), &plan, &art);
	ok(has_line(buf, "Cache-Control", "public, max-age=4294967295"),
	    "... the largest");
	art.max_age = 0;

	art.file = "/x\r\nSet-Cookie: a=b";
	head_for(buf, sizeof(buf), &plan, &art);
	ok(!has_line_start(buf, "Set-Cookie"), "a file name cannot inject");
	art.file = NULL;

	/* A source's values and lines go out as they were taken. */
	art.meta = &meta;
	head_for(buf, sizeof(buf), &plan, &art);
	ok(has_line(buf, "X-DEBUGINFOD-FILE", "/usr/src/a%20b.c") &&
		has_line(buf, "X-DEBUGINFOD-ARCHIVE", "a_1.0.deb") &&
		has_line(buf, "X-DEBUGINFOD-IMASIGNATURE", "0302ab") &&
		has_line(buf, "X-Debuginfod-Other", "as\tit came"),
	    "a source's X-DEBUGINFOD-* values and lines, as they are");
	is_int(count_header(buf, "X-DEBUGINFOD-FILE"), 1, "... each once");
	ok(response_meta_len(&meta) ==
		strlen("X-DEBUGINFOD-FILE: /usr/src/a%20b.c\r\n"
		       "X-DEBUGINFOD-ARCHIVE: a_1.0.deb\r\n"
		       "X-DEBUGINFOD-IMASIGNATURE: 0302ab\r\n"
		       "X-Debuginfod-Other: as\tit came\r\n"),
	    "... and response_meta_len measures them");
	art.meta = NULL;

	h.range = "bytes=10-29";
	plan_for(&h, &art, &plan);
	is_int(plan.status, 206, "206 plan");
	head_for(buf, sizeof(buf), &plan, &art);
	ok(strncmp(buf, "HTTP/1.1 206 Partial Content\r\n", 30) == 0,
	    "206: status line");
	ok(has_line(buf, "Content-Range", "bytes 10-29/1000"),
	    "206: Content-Range");
	ok(has_line(buf, "Content-Length", "20"), "206: Content-Length");
	ok(has_line(buf, "Content-Type", "application/octet-stream"),
	    "206: Content-Type");
	ok(has_line(buf, "X-DEBUGINFOD-SIZE", "1000"),
	    "206: X-DEBUGINFOD-SIZE is the whole size");
	h.range = "bytes=-1";
	plan_for(&h, &art, &plan);
	head_for(buf, sizeof(buf), &plan, &art);
	ok(has_line(buf, "Content-Range", "bytes 999-999/1000"),
	    "206: Content-Range of the last byte");

	h.range = NULL;
	h.inm = art.etag;
	plan_for(&h, &art, &plan);
	is_int(plan.status, 304, "304 plan");
	head_for(buf, sizeof(buf), &plan, &art);
	ok(strncmp(buf, "HTTP/1.1 304 Not Modified\r\n", 27) == 0,
	    "304: status line");
	is_int(count_header(buf, "Content-Length"), 0,
	    "304: no Content-Length");
	is_int(count_header(buf, "Content-Type"), 0, "304: no Content-Type");
	ok(has_line(buf, "ETag", art.etag), "304: ETag");
	ok(has_line(buf, "Last-Modified", MTIME_DATE), "304: Last-Modified");

	h.inm = NULL;
	h.maxsize = "10";
	plan_for(&h, &art, &plan);
	is_int(plan.status, 406, "406 plan");
	head_for(buf, sizeof(buf), &plan, &art);
	ok(strncmp(buf, "HTTP/1.1 406 Not Acceptable\r\n", 29) == 0,
	    "406: status line");
	ok(has_line(buf, "Content-Type", "text/plain"), "406: text/plain");
	snprintf(num, sizeof(num), "%zu",
	    plan.why != NULL ? strlen(plan.why) + 1 : 0);
	ok(has_line(buf, "Content-Length", num),
	    "406: Content-Length is the reason and a newline");
	is_int(count_header(buf, "Content-Range"), 0, "406: no Content-Range");
	ok(has_line(buf, "X-DEBUGINFOD-SIZE", "1000"), "406: the real size");
	is_int(count_header(buf, "Cache-Control"), 0,
	    "406: no Cache-Control (it depends on a request header)");

	h.maxsize = NULL;
	h.range = "bytes=1000-";
	plan_for(&h, &art, &plan);
	is_int(plan.status, 416, "416 plan");
	head_for(buf, sizeof(buf), &plan, &art);
	ok(strncmp(buf, "HTTP/1.1 416 Range Not Satisfiable\r\n", 36) == 0,
	    "416: status line");
	ok(has_line(buf, "Content-Type", "text/plain"), "416: text/plain");
	snprintf(num, sizeof(num), "%zu",
	    plan.why != NULL ? strlen(plan.why) + 1 : 0);
	ok(has_line(buf, "Content-Length", num),
	    "416: Content-Length is the reason and a newline");
	ok(has_line(buf, "Content-Range", "bytes */1000"),
	    "416: Content-Range bytes */size");

	/* The head goes into the buffer the hbuf was given, within cap. */
	memset(small, GUARD, sizeof(small));
	h.range = NULL;
	plan_for(&h, &art, &plan);
	hbuf_start(&hb, small, sizeof(small) - 1, plan.status, NOW_DATE);
	response_artifact_head(&hb, &plan, &art);
	is_int(hb.overflow, 1, "artifact head in 64 bytes overflows");
	ok(small[sizeof(small) - 1] == GUARD, "nothing past the cap");
	ok(hb.buf == small && memcmp(small, "HTTP/1.1 200 OK\r\n", 17) == 0,
	    "written into the hbuf's own buffer");
}

static void
test_reasons(void)
{
	static const struct {
		int code;
		const char *reason;
	} r[] = {
		{ 200, "OK" },
		{ 206, "Partial Content" },
		{ 304, "Not Modified" },
		{ 400, "Bad Request" },
		{ 404, "Not Found" },
		{ 405, "Method Not Allowed" },
		{ 406, "Not Acceptable" },
		{ 408, "Request Timeout" },
		{ 413, "Content Too Large" },
		{ 414, "URI Too Long" },
		{ 416, "Range Not Satisfiable" },
		{ 431, "Request Header Fields Too Large" },
		{ 500, "Internal Server Error" },
		{ 503, "Service Unavailable" },
		{ 505, "HTTP Version Not Supported" },
	};
	char msg[64];
	size_t i;

	for (i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		snprintf(msg, sizeof(msg), "reason for %d", r[i].code);
		is_str(response_reason(r[i].code), r[i].reason, msg);
	}
	ok(response_reason(299) != NULL && response_reason(299)[0] != '\0',
	    "an unknown status still has a reason");
}

/* httpdate_format(t) is s, in exactly HTTPDATE_LEN bytes. */
static void
check_format(time_t t, const char *s)
{
	char out[HTTPDATE_LEN + 8], msg[100];

	memset(out, 'x', sizeof(out));
	httpdate_format(t, out);
	snprintf(msg, sizeof(msg), "format %lld", (long long)t);
	is_str(out, s, msg);
	ok(out[HTTPDATE_LEN] == 'x', "format stays within HTTPDATE_LEN");
}

/* httpdate_iso(t) is s, in exactly HTTPDATE_ISO_LEN bytes. */
static void
check_iso(time_t t, const char *s)
{
	char out[HTTPDATE_ISO_LEN + 8], msg[100];

	memset(out, 'x', sizeof(out));
	httpdate_iso(t, out);
	snprintf(msg, sizeof(msg), "iso %lld", (long long)t);
	is_str(out, s, msg);
	ok(out[HTTPDATE_ISO_LEN] == 'x', "iso stays within HTTPDATE_ISO_LEN");
}

/* httpdate_clf(t) is s, in exactly HTTPDATE_CLF_LEN bytes. */
static void
check_clf(time_t t, const char *s)
{
	char out[HTTPDATE_CLF_LEN + 8], msg[100];

	memset(out, 'x', sizeof(out));
	httpdate_clf(t, out);
	snprintf(msg, sizeof(msg), "clf %lld", (long long)t);
	is_str(out, s, msg);
	ok(out[HTTPDATE_CLF_LEN] == 'x', "clf stays within HTTPDATE_CLF_LEN");
}

/* Parse a heap copy of exactly the bytes of s[0..len). */
static int
parse_n(const char *s, size_t len, time_t *t)
{
	char *copy = malloc(len > 0 ? len : 1);
	int rc;

	if (copy == NULL) {
		perror("malloc");
		exit(1);
	}
	memcpy(copy, s, len);
	rc = httpdate_parse(copy, len, t);
	free(copy);
	return rc;
}

static void
check_parse(const char *s, long long want, const char *what)
{
	time_t t = -7;
	int rc = parse_n(s, strlen(s), &t);

	is_int(rc, 0, what);
	is_int(rc == 0 ? (long long)t : -7, want, what);
}

static void
check_bad_date(const char *s, const char *what)
{
	time_t t;

	is_int(parse_n(s, strlen(s), &t), -1, what);
}

static void
test_httpdate_format(void)
{
	check_format(0, "Thu, 01 Jan 1970 00:00:00 GMT");
	check_format(784111777, "Sun, 06 Nov 1994 08:49:37 GMT");
	check_format(951782400, "Tue, 29 Feb 2000 00:00:00 GMT");
	check_format(2147483647, "Tue, 19 Jan 2038 03:14:07 GMT");
	check_format(2147483648LL, "Tue, 19 Jan 2038 03:14:08 GMT");
	check_format(4102444800LL, "Fri, 01 Jan 2100 00:00:00 GMT");
	check_format(253402300799LL, "Fri, 31 Dec 9999 23:59:59 GMT");
	check_format(-1, "Wed, 31 Dec 1969 23:59:59 GMT");
	is_int(HTTPDATE_LEN, 30, "HTTPDATE_LEN holds 29 bytes and a NUL");
}

static void
test_httpdate_iso(void)
{
	check_iso(0, "1970-01-01T00:00:00Z");
	check_iso(784111777, "1994-11-06T08:49:37Z");
	check_iso(951782400, "2000-02-29T00:00:00Z");
	check_iso(2147483648LL, "2038-01-19T03:14:08Z");
	check_iso(253402300799LL, "9999-12-31T23:59:59Z");
	check_iso(253402300800LL, "9999-12-31T23:59:59Z");
	check_iso(-1, "1969-12-31T23:59:59Z");
	check_iso(-62167219201LL, "0000-01-01T00:00:00Z");
}

static void
test_httpdate_clf(void)
{
	check_clf(0, "01/Jan/1970:00:00:00 +0000");
	check_clf(784111777, "06/Nov/1994:08:49:37 +0000");
	check_clf(951782400, "29/Feb/2000:00:00:00 +0000");
	check_clf(253402300800LL, "31/Dec/9999:23:59:59 +0000");
	check_clf(-1, "31/Dec/1969:23:59:59 +0000");
}

static void
test_httpdate_parse(void)
{
	check_parse("Sun, 06 Nov 1994 08:49:37 GMT", 784111777, "IMF-fixdate");
	check_parse("Thu, 01 Jan 1970 00:00:00 GMT", 0, "IMF-fixdate epoch");
	check_parse("Fri, 01 Jan 2100 00:00:00 GMT", 4102444800LL,
	    "IMF-fixdate 2100");
	check_parse("Sunday, 06-Nov-94 08:49:37 GMT", 784111777, "RFC 850");
	check_parse("Sunday, 06-Nov-05 08:49:37 GMT", 1131266977,
	    "RFC 850, two-digit year 05 is 2005");
	/* RFC 9110 5.6.7: a year no more than 50 years ahead is taken as is;
	   "70" is 2070 for any present between 2020 and 2169. */
	check_parse("Wednesday, 01-Jan-70 00:00:00 GMT", 3155760000LL,
	    "RFC 850, year 70 is 2070, not 1970");
	check_parse("Sun Nov  6 08:49:37 1994", 784111777, "asctime");
	check_parse("Wed Nov 16 08:49:37 1994", 784975777,
	    "asctime with a two-digit day");
	check_parse("Tue Feb 29 00:00:00 2000", 951782400, "asctime leap day");
	check_parse("Sun, 06 Nov 1994 08:49:60 GMT", 784111800,
	    "a leap second is accepted");

	check_bad_date("", "empty");
	check_bad_date("garbage", "garbage");
	check_bad_date("Sun, 06 Foo 1994 08:49:37 GMT", "wrong month name");
	check_bad_date("Sun, 06 nov 1994 08:49:37 GMT", "lowercase month");
	check_bad_date("Sun, 32 Nov 1994 08:49:37 GMT", "day 32");
	check_bad_date("Sun, 00 Nov 1994 08:49:37 GMT", "day 0");
	check_bad_date("Sun, 06 Nov 1994 24:00:00 GMT", "hour 24");
	check_bad_date("Sun, 06 Nov 1994 08:60:00 GMT", "minute 60");
	check_bad_date("Sun, 06 Nov 1994 08:49:61 GMT", "second 61");
	check_bad_date("Sun, 06 Nov 1994 08:49:37", "missing GMT");
	check_bad_date("Sun, 06 Nov 1994 08:49:37 UTC", "UTC for GMT");
	check_bad_date("Sun, 06 Nov 1994 08:49:37 gmt", "lowercase gmt");
	check_bad_date("Sun, 06 Nov 1994 08:49:37 GMTx", "trailing junk");
	check_bad_date("Sun, 06 Nov 1994 08:49:37 GMT ", "trailing space");
	check_bad_date(" Sun, 06 Nov 1994 08:49:37 GMT", "leading space");
	check_bad_date("Sun, 6 Nov 1994 08:49:37 GMT", "one-digit day");
	check_bad_date("Sun, 06 Nov 94 08:49:37 GMT", "two-digit year");
	check_bad_date("Sun, 06 Nov 1994 8:49:37 GMT", "one-digit hour");
	check_bad_date("Sun, 06 Nov 1994 08.49.37 GMT", "dots in the time");
	check_bad_date("Sun, 06-Nov-1994 08:49:37 GMT", "dashes in IMF");
	check_bad_date("Sun,06 Nov 1994 08:49:37 GMT", "no space after comma");
	check_bad_date("Sun, +6 Nov 1994 08:49:37 GMT", "signed day");
	check_bad_date("Sunday, 06-Nov-94 08:49:37", "RFC 850 without GMT");
	check_bad_date("Sunday, 06 Nov 94 08:49:37 GMT", "RFC 850 no dashes");
	check_bad_date("Sunday, 06-Nov-1994 08:49:37 GMT",
	    "RFC 850 four-digit year");
	check_bad_date("Sunday, 32-Nov-94 08:49:37 GMT", "RFC 850 day 32");
	check_bad_date("Sunday, 06-Nov-94 25:49:37 GMT", "RFC 850 hour 25");
	check_bad_date("Sun Nov 32 08:49:37 1994", "asctime day 32");
	check_bad_date("Sun Nov  0 08:49:37 1994", "asctime day 0");
	check_bad_date("Sun Xyz  6 08:49:37 1994", "asctime wrong month");
	check_bad_date("Sun Nov  6 24:49:37 1994", "asctime hour 24");
	check_bad_date("Sun Nov  6 08:49:37 1994 ", "asctime trailing space");
	check_bad_date("Sun Nov 6 08:49:37 1994", "asctime unpadded day");
	check_bad_date("Sun Nov  6 08:49:37 94", "asctime two-digit year");
	check_bad_date("Sun Nov  6 08:49:37 GMT", "asctime with GMT");
	check_bad_date("Sun Nov   6 08:49:3 1994", "asctime, two pad spaces");
}

static void
test_httpdate_truncated(void)
{
	static const char *const dates[] = {
		"Sun, 06 Nov 1994 08:49:37 GMT",
		"Sunday, 06-Nov-94 08:49:37 GMT",
		"Sun Nov  6 08:49:37 1994",
		"Wed Nov 16 08:49:37 1994",
	};
	char msg[100];
	size_t i, n, accepted;
	time_t t;

	for (i = 0; i < sizeof(dates) / sizeof(dates[0]); i++) {
		accepted = 0;
		for (n = 0; n < strlen(dates[i]); n++)
			if (parse_n(dates[i], n, &t) != -1)
				accepted++;
		snprintf(msg, sizeof(msg), "every truncation fails: %s",
		    dates[i]);
		is_int(accepted, 0, msg);
		snprintf(msg, sizeof(msg), "the whole one parses: %s",
		    dates[i]);
		is_int(parse_n(dates[i], strlen(dates[i]), &t), 0, msg);
	}
}

/* A small deterministic generator (xorshift64*) for the round trip. */
static uint64_t rng_state = 0x2545f4914f6cdd1dULL;

static uint64_t
rng_next(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

static void
test_httpdate_round_trip(void)
{
	static const long long edges[] = { 0, 1, 59, 60, 86399, 86400, 68255999,
		68256000, 951782399, 951782400, 2147483647, 2147483648LL,
		4107542399LL, 4107542400LL, 253402300799LL };
	char out[HTTPDATE_LEN];
	size_t i, bad = 0;
	long long first_bad = -1, v;
	time_t t;

	for (i = 0; i < 20000 + sizeof(edges) / sizeof(edges[0]); i++) {
		v = i < sizeof(edges) / sizeof(edges[0])
		    ? edges[i]
		    : (long long)(rng_next() % 253402300800ULL);
		httpdate_format((time_t)v, out);
		if ((parse_n(out, strlen(out), &t) != 0 || t != (time_t)v) &&
		    bad++ == 0)
			first_bad = v;
	}
	if (!ok(bad == 0, "format then parse gives the same instant"))
		printf("#   %zu failed, first %lld\n", bad, first_bad);

	/* After 9999 an HTTP date cannot be exact; it must not go back to
	   year 0000. */
	httpdate_format((time_t)253402300800LL, out);
	ok(parse_n(out, strlen(out), &t) == 0 && t >= 253402300799LL,
	    "a date after 9999 does not wrap around");
	/* gmtime_r fails for years beyond int; the clamp comes first. */
	httpdate_format((time_t)INT64_MAX, out);
	is_str(out, "Fri, 31 Dec 9999 23:59:59 GMT",
	    "the largest time_t is clamped to the last HTTP date");
	httpdate_format((time_t)INT64_MIN, out);
	is_str(out, "Sat, 01 Jan 0000 00:00:00 GMT",
	    "the smallest time_t is clamped to the first HTTP date");
}

int
main(void)
{
	test_plan_plain();
	test_plan_if_none_match();
	test_plan_if_modified_since();
	test_plan_maxsize();
	test_plan_range();
	test_plan_if_range();
	test_etag();
	test_hbuf_start();
	test_hbuf_header();
	test_hbuf_end();
	test_hbuf_overflow();
	test_artifact_head();
	test_reasons();
	test_httpdate_format();
	test_httpdate_iso();
	test_httpdate_clf();
	test_httpdate_parse();
	test_httpdate_truncated();
	test_httpdate_round_trip();
	return tap_done();
}
