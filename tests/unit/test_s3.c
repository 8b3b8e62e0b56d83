/*
 * tests/unit/test_s3.c: the object store's XML answers (fetchers/s3xml.c)
 * and a purge (s3_purge, fetchers/s3.c) against a fake store that lies.
 *
 * The fake is an evhttp server on the test's own event loop, the loop the
 * purge's transfers run on: each case sets how it answers a listing (GET
 * ?list-type=2) and records every request and DeleteObjects body.  It
 * repeats its continuation token, names keys outside the prefix, goes
 * backwards, never ends, or answers well over three pages; the purge must
 * end each one (with an error where the store lied), and delete only keys
 * under the exact prefix.
 */
#include <sys/socket.h>

#include <netinet/in.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fetchers/s3.h"
#include "fetchers/s3xml.h"
#include "tests/tap.h"

#define PREFIX "pre/abcd/"
/* The fake's own bound: past it, it answers 503 (a purge that would not
 * end otherwise then does, failing the test's count). */
#define FAKE_LISTS_MAX 20000

enum mode {
	M_PAGES, /* three good pages */
	M_REPEAT, /* every page gives the same token */
	M_CYCLE, /* tokens A, B, A, ... */
	M_OUTSIDE, /* keys outside the prefix among good ones */
	M_BACKWARD, /* the second page starts before the first one's end */
	M_ENDLESS, /* empty pages, a new token each, forever */
	M_DOCTYPE, /* an entity-laden DTD */
	M_NO_TOKEN, /* truncated, without a token */
};

static struct fake {
	enum mode mode;
	unsigned lists, deletes;
	char deleted[64 * 1024]; /* the <Key>s of every DeleteObjects */
} fake;

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Page n of the listing as the mode answers it, into b. */
static void
listing(struct evbuffer *b, unsigned n)
{
	unsigned i;

	evbuffer_add_printf(b,
	    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
	    "<ListBucketResult xmlns=\"http://s3.amazonaws."
	    "com/doc/2006-03-01/\"><Name>b</Name>");
	switch (fake.mode) {
	case M_PAGES:
		for (i = 0; i < 1000 && n * 1000 + i < 2500; i++)
			evbuffer_add_printf(b,
			    "<Contents><Key>" PREFIX "k%05u</Key><Size>1</Size>"
			    "</Contents>",
			    n * 1000 + i);
		evbuffer_add_printf(b,
		    "<IsTruncated>%s</IsTruncated>"
		    "<NextContinuationToken>t%u&amp;x</NextContinuationToken>",
		    n < 2 ? "true" : "false", n + 1);
		break;
	case M_REPEAT:
	case M_CYCLE:
		evbuffer_add_printf(b,
		    "<Contents><Key>" PREFIX "k%05u</Key></Contents>"
		    "<IsTruncated>true</IsTruncated>"
		    "<NextContinuationToken>%s</NextContinuationToken>",
		    n, fake.mode == M_REPEAT || n % 2 == 0 ? "A" : "B");
		break;
	case M_OUTSIDE:
		evbuffer_add_printf(b,
		    "<Contents><Key>other/thing</Key></Contents>"
		    "<Contents><Key>" PREFIX "debuginfo</Key></Contents>"
		    "<Contents><Key>" PREFIX "source/0123</Key></Contents>"
		    "<Contents><Key>pre/abcdef/debuginfo</Key></Contents>"
		    "<Contents><Key>" PREFIX "../../secret</Key></Contents>"
		    "<Contents><Key>" PREFIX "a&lt;b</Key></Contents>"
		    "<Contents><Key>" PREFIX "</Key></Contents>"
		    "<IsTruncated>false</IsTruncated>");
		break;
	case M_BACKWARD:
		evbuffer_add_printf(b,
		    "<Contents><Key>" PREFIX "%s</Key></Contents>"
		    "<Contents><Key>" PREFIX "m</Key></Contents>"
		    "<IsTruncated>true</IsTruncated>"
		    "<NextContinuationToken>t%u</NextContinuationToken>",
		    n == 0 ? "b" : "c", n);
		break;
	case M_ENDLESS:
		evbuffer_add_printf(b,
		    "<IsTruncated>true</IsTruncated>"
		    "<NextContinuationToken>t%u</NextContinuationToken>",
		    n);
		break;
	case M_DOCTYPE:
		evbuffer_drain(b, evbuffer_get_length(b));
		evbuffer_add_printf(b,
		    "<?xml version=\"1.0\"?><!DOCTYPE l [<!ENTITY a "
		    "\"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;\">]>"
		    "<ListBucketResult><Contents><Key>" PREFIX
		    "&b;</Key></Contents><IsTruncated>false</IsTruncated>");
		break;
	case M_NO_TOKEN:
		evbuffer_add_printf(b, "<IsTruncated>true</IsTruncated>");
		break;
	}
	evbuffer_add_printf(b, "</ListBucketResult>");
}

static void
fake_cb(struct evhttp_request *req, void *arg)
{
	struct evbuffer *out = evbuffer_new(), *in;
	const char *uri = evhttp_request_get_uri(req);
	size_t len, have;
	char *body, *k, *e;

	(void)arg;
	if (evhttp_request_get_command(req) == EVHTTP_REQ_GET &&
	    strstr(uri, "list-type=2") != NULL) {
		if (fake.lists >= FAKE_LISTS_MAX) {
			evhttp_send_reply(req, 503, "Enough", out);
			evbuffer_free(out);
			return;
		}
		listing(out, fake.lists++);
	} else if (evhttp_request_get_command(req) == EVHTTP_REQ_POST &&
	    strstr(uri, "delete") != NULL) {
		fake.deletes++;
		in = evhttp_request_get_input_buffer(req);
		len = evbuffer_get_length(in);
		body = calloc(1, len + 1);
		evbuffer_remove(in, body, len);
		/* Keep the keys as sent (XML-escaped), one per line. */
		for (k = body; (k = strstr(k, "<Key>")) != NULL; k = e) {
			k += 5;
			if ((e = strstr(k, "</Key>")) == NULL)
				break;
			have = strlen(fake.deleted);
			snprintf(fake.deleted + have,
			    sizeof(fake.deleted) - have, "%.*s\n", (int)(e - k),
			    k);
		}
		free(body);
		evbuffer_add_printf(out, "<DeleteResult/>");
	}
	evhttp_send_reply(req, 200, "OK", out);
	evbuffer_free(out);
}

struct outcome {
	struct event_base *base;
	int done, ok;
	uint64_t deleted;
	char why[512];
};

static void
timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct outcome *o = arg;

	(void)fd;
	(void)what;
	snprintf(o->why, sizeof(o->why), "the purge did not end in 120 s");
	event_base_loopbreak(o->base);
}

static void
purged(void *arg, int ok, uint64_t deleted, const char *why)
{
	struct outcome *o = arg;

	o->done = 1;
	o->ok = ok;
	o->deleted = deleted;
	snprintf(o->why, sizeof(o->why), "%s", why != NULL ? why : "");
	event_base_loopbreak(o->base);
}

/* A purge of PREFIX against the fake answering in mode m. */
static void
purge(struct event_base *base, int port, enum mode m, struct outcome *o)
{
	struct timeval bound = { 120, 0 };
	char url[64], err[256];
	struct event *timer;
	struct s3_conf sc;
	struct s3 *st;

	memset(&fake, 0, sizeof(fake));
	fake.mode = m;
	memset(o, 0, sizeof(*o));
	o->base = base;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/bucket", port);
	memset(&sc, 0, sizeof(sc));
	sc.url = url;
	sc.name = "fake";
	sc.region = "us-east-1";
	sc.access_key = "ak";
	sc.secret_key = "sk";
	sc.timeout = 10;
	sc.part_size = 64u << 20;
	sc.transfer_timeout = 30;
	sc.stall_timeout = 30;
	sc.min_rate = 1;
	sc.breaker_failures = 1000000;
	sc.breaker_backoff = 1;
	sc.breaker_backoff_max = 1;
	sc.proxy = "";
	sc.now_ns = now_ns;
	if ((st = s3_new(&sc, base, NULL, err, sizeof(err))) == NULL) {
		snprintf(o->why, sizeof(o->why), "s3_new: %s", err);
		return;
	}
	timer = evtimer_new(base, timeout_cb, o);
	evtimer_add(timer, &bound);
	if (s3_purge(st, PREFIX, purged, o) == 0)
		event_base_dispatch(base);
	event_free(timer);
	s3_free(st);
}

static void
test_purges(void)
{
	struct event_base *base = event_base_new();
	struct evhttp *http = evhttp_new(base);
	struct evhttp_bound_socket *bs;
	struct sockaddr_in sin;
	socklen_t slen = sizeof(sin);
	struct outcome o;
	int port;

	bs = evhttp_bind_socket_with_handle(http, "127.0.0.1", 0);
	if (!ok(bs != NULL &&
		    getsockname(evhttp_bound_socket_get_fd(bs),
			(struct sockaddr *)&sin, &slen) == 0,
		"a fake store on the test's loop"))
		return;
	port = ntohs(sin.sin_port);
	evhttp_set_gencb(http, fake_cb, NULL);

	purge(base, port, M_PAGES, &o);
	ok(o.done && o.ok && o.deleted == 2500,
	    "three pages of 2500 keys: all deleted");
	is_int(fake.lists, 3, "... in three listings");
	ok(strstr(fake.deleted, PREFIX "k02499\n") != NULL,
	    "... the last key among them");

	purge(base, port, M_REPEAT, &o);
	ok(o.done && !o.ok &&
		strstr(o.why, "a continuation token it gave before") != NULL,
	    "a store repeating its continuation token: the purge ends, failed");
	is_int(fake.lists, 2, "... after the second listing");

	purge(base, port, M_CYCLE, &o);
	ok(o.done && !o.ok &&
		strstr(o.why, "a continuation token it gave before") != NULL,
	    "tokens going round in a cycle: the same");
	is_int(fake.lists, 3, "... after the third listing");

	purge(base, port, M_OUTSIDE, &o);
	ok(o.done && !o.ok &&
		strstr(o.why, "the listing named 5 keys outside " PREFIX) !=
		    NULL,
	    "keys outside the prefix: the purge says so, failed");
	is_str(fake.deleted, PREFIX "debuginfo\n" PREFIX "source/0123\n",
	    "... and deleted only the keys under the exact prefix");
	is_int(o.deleted, 2, "... counted");

	purge(base, port, M_BACKWARD, &o);
	ok(o.done && !o.ok && strstr(o.why, "does not move forward") != NULL,
	    "a listing that goes backwards: ended, failed");

	purge(base, port, M_ENDLESS, &o);
	ok(o.done && !o.ok && strstr(o.why, "past 10000 pages") != NULL,
	    "a listing that never ends: ended at the page cap");
	is_int(fake.lists, 10001, "... 10001 listings");
	is_int(fake.deletes, 0, "... nothing deleted");

	purge(base, port, M_DOCTYPE, &o);
	ok(o.done && !o.ok &&
		strstr(o.why, "a document type declaration") != NULL,
	    "a listing with a DTD and entities: refused");
	is_int(fake.deletes, 0, "... nothing deleted");

	purge(base, port, M_NO_TOKEN, &o);
	ok(o.done && !o.ok && strstr(o.why, "without a continuation") != NULL,
	    "a truncated listing without a token: refused");

	evhttp_free(http);
	event_base_free(base);
}

static void
test_xml(void)
{
	struct s3xml_page p;
	struct s3xml_error e;
	char err[256], id[16], big[S3XML_TEXT_MAX + 128];
	const char *s;

	s = "<ListBucketResult xmlns=\"x\"><Contents><Key>a&amp;b</Key>"
	    "<Owner><ID>o</ID></Owner></Contents><Contents><Key>c</Key>"
	    "</Contents><IsTruncated>true</IsTruncated>"
	    "<NextContinuationToken>t/+=</NextContinuationToken>"
	    "</ListBucketResult>";
	ok(s3xml_page(s, strlen(s), &p, err, sizeof(err)) == 0 &&
		p.nkeys == 2 && strcmp(p.keys[0], "a&b") == 0 &&
		strcmp(p.keys[1], "c") == 0 && p.truncated && p.token != NULL &&
		strcmp(p.token, "t/+=") == 0,
	    "a page: keys decoded, truncated, its token");
	s3xml_page_free(&p);
	s = "<ListBucketResult><Contents><Key>x<!-- c --></Key></Contents>"
	    "<IsTruncated>maybe</IsTruncated></ListBucketResult>";
	ok(s3xml_page(s, strlen(s), &p, err, sizeof(err)) == -1 &&
		strstr(err, "IsTruncated") != NULL,
	    "IsTruncated neither true nor false: refused");
	s3xml_page_free(&p);
	s = "<Error><Key>k</Key></Error>";
	ok(s3xml_page(s, strlen(s), &p, err, sizeof(err)) == -1,
	    "an <Error> is no page");
	s3xml_page_free(&p);
	s = "<ListBucketResult><Contents><Key>a</Key></Contents>";
	ok(s3xml_page(s, strlen(s), &p, err, sizeof(err)) == -1,
	    "a page cut short: refused");
	s3xml_page_free(&p);
	snprintf(big, sizeof(big),
	    "<ListBucketResult><Contents><Key>%0*d"
	    "</Key></Contents></ListBucketResult>",
	    S3XML_TEXT_MAX + 1, 0);
	ok(s3xml_page(big, strlen(big), &p, err, sizeof(err)) == -1 &&
		strstr(err, "too long") != NULL,
	    "a key longer than the bound: refused, not cut");
	s3xml_page_free(&p);

	s = "<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Key>a/b"
	    "</Key><Message>m</Message></Error>";
	is_int(s3xml_error(s, strlen(s), &e), 1, "an <Error> answer");
	ok(strcmp(e.code, "NoSuchKey") == 0 && strcmp(e.key, "a/b") == 0,
	    "... its code and key");
	s = "<DeleteResult><Deleted><Key>x</Key></Deleted><Error><Key>y</Key>"
	    "<Code>AccessDenied</Code></Error><Error><Key>z</Key></Error>"
	    "</DeleteResult>";
	ok(s3xml_error(s, strlen(s), &e) == 1 && strcmp(e.key, "y") == 0 &&
		strcmp(e.code, "AccessDenied") == 0,
	    "a DeleteResult's first <Error>");
	s = "<DeleteResult><Deleted><Key>x</Key></Deleted></DeleteResult>";
	is_int(s3xml_error(s, strlen(s), &e), 0, "a DeleteResult without one");
	s = "<CompleteMultipartUploadResult><Key>k</Key><Other><Error>"
	    "</Error></Other></CompleteMultipartUploadResult>";
	is_int(s3xml_error(s, strlen(s), &e), 0,
	    "an <Error> deep inside another answer is no error of it");
	s = "<html><body>503</body>";
	is_int(s3xml_error(s, strlen(s), &e), -1, "HTML that is not XML");

	s = "<InitiateMultipartUploadResult><Bucket>b</Bucket><UploadId>"
	    "2~xyz</UploadId></InitiateMultipartUploadResult>";
	ok(s3xml_upload_id(s, strlen(s), id, sizeof(id)) == 0 &&
		strcmp(id, "2~xyz") == 0,
	    "an UploadId");
	s = "<InitiateMultipartUploadResult><UploadId>0123456789abcdefg"
	    "</UploadId></InitiateMultipartUploadResult>";
	is_int(s3xml_upload_id(s, strlen(s), id, sizeof(id)), -1,
	    "one too long for the buffer: refused");
	s = "<Other><UploadId>x</UploadId></Other>";
	is_int(s3xml_upload_id(s, strlen(s), id, sizeof(id)), -1,
	    "an UploadId in another answer: none");
}

int
main(void)
{
	test_xml();
	test_purges();
	return tap_done();
}
