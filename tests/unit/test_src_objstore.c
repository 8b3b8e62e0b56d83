/*
 * tests/unit/test_src_objstore.c: the object store as a source and a sink
 * (sources/objstore.c) with fetchers/s3.c and libcurl on the real path,
 * against a fake S3 bucket served on the test's own loop (libevent's
 * evhttp), and a test source after it that plays the upstreams
 * (tests/tsrc.h).
 *
 * Checked: a hit is verified, published and served with the X-DEBUGINFOD-*
 * lines of the object's metadata, and never uploaded back; a miss sends
 * the same flight on to a remembered miss (which ends it: the upstreams
 * not asked) and then to the upstreams, whose answer is uploaded to the
 * store with its metadata; a store that fails is gone past the same way;
 * an object with another build-id is refused at its first bytes, deleted
 * from the store and the flight goes on; one that fails the final check
 * is deleted and the fill fails (never served whole).  The lookups are
 * counted.  Every wait is bounded.
 */
#include "tests/rig.h"
#include "tests/bucket.h"
#include "tests/tsrc.h"

#include "fetchers/upstream.h"
#include "sources/sources.h"

static const char *ID_A = "a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9";
static const char *ID_B = "b9b9b9b9b9b9b9b9b9b9b9b9b9b9b9b9b9b9b9b9";
static const char *ID_C = "c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9";
static const char *ID_D = "d9d9d9d9d9d9d9d9d9d9d9d9d9d9d9d9d9d9d9d9";
static const char *ID_E = "e9e9e9e9e9e9e9e9e9e9e9e9e9e9e9e9e9e9e9e9";
static const char *ID_F = "f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9";

static struct tsrc up;
static const struct source *const table[] = { &source_cache, &source_objstore,
	&source_negative, &up.s, NULL };

/* -------------------------------------------------------------- tests */

static char shown[1400];

/* The store's lookups counted as result. */
static double
lookups(const char *result)
{
	char name[1600];

	snprintf(name, sizeof(name),
	    "dbgmirror_store_lookups_total{store=\"%s\",result=\"%s\"}", shown,
	    result);
	return rig_metric(name);
}

static void
test_hit(void)
{
	struct client c;
	double hits = lookups("hit");

	rig_mkelf("a.debug",
	    "--type dyn --build-id a9a9a9a9a9a9a9a9a9a9a9a9a9"
	    "a9a9a9a9a9a9a9 --debug .debug_info:6000");
	object_add(ID_A, at("a.debug"), 200);
	client_get(&c, rig_path(ID_A, "debuginfo"));
	RUN_UNTIL(c.ended);
	ok(c.status == 200 && c.complete && client_body_is(&c, at("a.debug")),
	    "an object in the store: served whole");
	is_int(asked("GET", ID_A), 1, "... asked once");
	ok(strstr(c.extra,
	       "X-DEBUGINFOD-FILE: /usr/lib/debug/from-store.debug") != NULL,
	    "... with the X-DEBUGINFOD-* lines of its metadata");
	is_int(up.produced, 0, "... the upstreams not asked");
	RUN_UNTIL(rig_flights() == 0);
	is_int(lookups("hit"), hits + 1, "... counted as a hit");
	rig_spin(10);
	is_int(asked("PUT", ID_A), 0, "... and never uploaded back");
	client_free(&c);
	client_get(&c, rig_path(ID_A, "debuginfo"));
	ok(c.answered && c.result == METRICS_HIT && asked("GET", ID_A) == 1,
	    "it was published: the next request a cache hit");
	client_free(&c);
}

static void
test_miss(void)
{
	struct client c;
	char name[256];
	size_t len;
	uint8_t *bytes;
	double misses = lookups("miss");

	rig_mkelf("b.debug",
	    "--type dyn --build-id b9b9b9b9b9b9b9b9b9b9b9b9b9"
	    "b9b9b9b9b9b9b9 --debug .debug_info:5000");
	up.lookup = TS_JOIN;
	client_get(&c, rig_path(ID_B, "debuginfo"));
	RUN_UNTIL(up.p != NULL);
	ok(asked("GET", ID_B) == 1 && up.produced == 1 && up.lookups == 0,
	    "not in the store: the same flight goes on to the upstreams");
	ts_serve(up.p, at("b.debug"));
	RUN_UNTIL(c.ended);
	ok(c.status == 200 && client_body_is(&c, at("b.debug")),
	    "... whose answer the client gets");
	is_int(lookups("miss"), misses + 1, "... a miss counted");
	snprintf(name, sizeof(name), "/bucket/%s/debuginfo", ID_B);
	RUN_UNTIL(strcmp(put_name, name) == 0);
	bytes = slurp(at("b.debug"), &len);
	ok(strcmp(put_name, name) == 0 && put_len == len &&
		memcmp(put_body, bytes, len) == 0,
	    "the upstream's answer is uploaded to the store");
	ok(strcasestr(put_meta, "x-amz-meta-x-debuginfod-file: /fake") != NULL,
	    "... with its X-DEBUGINFOD-* lines as metadata");
	ok(strstr(put_meta, "x-amz-meta-last-modified: ") != NULL,
	    "... and its Last-Modified");
	free(bytes);
	client_free(&c);

	/* A miss remembered while the store is asked: the flight ends there. */
	object_add(ID_C, NULL, HELD);
	up.p = NULL;
	client_get(&c, rig_path(ID_C, "debuginfo"));
	RUN_UNTIL(objects[nobjects - 1].held != NULL);
	rig_remember(ID_C, CACHE_DEBUGINFO, "", NEG_NOTFOUND, 60);
	evhttp_send_reply(objects[nobjects - 1].held, 404, "Not Found", NULL);
	RUN_UNTIL(c.ended);
	ok(asked("GET", ID_C) == 1 && c.status == 404 &&
		c.outcome == ANSWER_FILL_NOT_FOUND,
	    "not in the store, and a miss remembered meanwhile: 404, from the "
	    "entry");
	is_int(up.produced, 1, "... the upstreams not asked");
	is_int(c.seconds, 60, "... max-age the entry's");
	client_free(&c);
}

static void
test_failing(void)
{
	struct client c;
	double errors = lookups("error");

	rig_mkelf("f.debug",
	    "--type dyn --build-id f9f9f9f9f9f9f9f9f9f9f9f9f9"
	    "f9f9f9f9f9f9f9 --debug .debug_info:3000");
	object_add(ID_F, NULL, 500);
	up.p = NULL;
	client_get(&c, rig_path(ID_F, "debuginfo"));
	RUN_UNTIL(up.p != NULL);
	ok(asked("GET", ID_F) >= 1 && up.p != NULL,
	    "a store that fails: the flight goes on to the upstreams");
	ts_serve(up.p, at("f.debug"));
	RUN_UNTIL(c.ended);
	ok(c.status == 200 && client_body_is(&c, at("f.debug")),
	    "... which answer it");
	ok(lookups("error") > errors, "... the store's error counted");
	client_free(&c);
}

static void
test_corrupt(void)
{
	struct client c;
	double corrupt = rig_metric("dbgmirror_store_corrupt_objects_total");

	/* D's object is B's file: another build-id in its first bytes. */
	rig_mkelf("d.debug",
	    "--type dyn --build-id d9d9d9d9d9d9d9d9d9d9d9d9d9"
	    "d9d9d9d9d9d9d9 --debug .debug_info:4000");
	object_add(ID_D, at("b.debug"), 200);
	up.p = NULL;
	client_get(&c, rig_path(ID_D, "debuginfo"));
	RUN_UNTIL(up.p != NULL && asked("DELETE", ID_D) == 1);
	is_int(asked("DELETE", ID_D), 1,
	    "an object of another build-id is deleted from the store");
	ok(up.p != NULL, "... and the flight goes on to the upstreams");
	ts_serve(up.p, at("d.debug"));
	RUN_UNTIL(c.ended);
	ok(c.status == 200 && client_body_is(&c, at("d.debug")),
	    "... whose right answer the client gets");
	is_int(rig_metric("dbgmirror_store_corrupt_objects_total"), corrupt + 1,
	    "... the corrupt object counted");
	client_free(&c);

	/* E's object names E, but is an executable: the final check. */
	rig_mkelf("e.exe",
	    "--type dyn --build-id e9e9e9e9e9e9e9e9e9e9e9e9e9e9"
	    "e9e9e9e9e9e9 --text 5000");
	object_add(ID_E, at("e.exe"), 200);
	client_get(&c, rig_path(ID_E, "debuginfo"));
	RUN_UNTIL(c.ended && asked("DELETE", ID_E) == 1);
	ok(!c.complete && (c.cut || c.status == 502),
	    "an object that fails the final check: cut or 502, never whole");
	is_int(asked("DELETE", ID_E), 1, "... and deleted from the store");
	is_int(rig_metric("dbgmirror_store_corrupt_objects_total"), corrupt + 2,
	    "... counted");
	client_free(&c);
}

/* The store goes away with an upload in flight (sanitizers see the rest). */
static void
test_upload_in_flight(void)
{
	struct client c;

	rig_mkelf("g.debug",
	    "--type dyn --build-id a0b0a0b0a0b0a0b0a0b0a0b0a0"
	    "b0a0b0a0b0a0b0 --debug .debug_info:3000");
	snprintf(put_hold, sizeof(put_hold),
	    "/bucket/a0b0a0b0a0b0a0b0a0b0a0b0a0b0a0b0a0b0a0b0/debuginfo");
	up.p = NULL;
	client_get(&c,
	    rig_path("a0b0a0b0a0b0a0b0a0b0a0b0a0b0a0b0a0b0a0b0", "debuginfo"));
	RUN_UNTIL(up.p != NULL);
	ts_serve(up.p, at("g.debug"));
	RUN_UNTIL(c.ended && strcmp(put_name, put_hold) == 0);
	ok(c.status == 200 && strcmp(put_name, put_hold) == 0,
	    "an upload is in flight when the store goes away");
	client_free(&c);
}

int
main(void)
{
	struct objstore *os;
	struct evhttp *h;

	if (testdir_make("test_src_objstore") == -1 || upstream_init() == -1)
		return 1;
	/* The bucket listens after the rig: it needs the loop. */
	if (rig_open("test_src_objstore", NULL, NULL, table) == -1 ||
	    bucket_open(&h, &os, shown, sizeof(shown)) == -1)
		return 1;
	ts_init(&up, "upstream", 0, 1, 1, 0);
	RUN_UNTIL(asked("HEAD", "/bucket") == 1);
	ok(asked("HEAD", "/bucket") == 1,
	    "the store's credentials are checked (a signed HEAD)");

	test_hit();
	test_miss();
	test_failing();
	test_corrupt();
	test_upload_in_flight();

	RUN_UNTIL(rig_flights() == 0);
	rig_stop();
	bucket_close(h, os);
	upstream_shutdown();
	rig_close();
	return tap_done();
}
