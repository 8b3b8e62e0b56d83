/*
 * tests/unit/test_flight.c: fills in flight (cache/flight.h), driven as the
 * daemon drives them but without a network or a loop: one key one flight
 * however many join at once, readers woken by every step and never handed
 * the last byte of an unverified file, a failed verification reaching
 * every reader, a reader leaving mid-fill, the limit on fills, and the
 * temp file of a fill that did not publish removed with the flight.
 */
#include "cache/flight.h"

#include <sys/stat.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/clock.h"
#include "tests/tap.h"
#include "tests/testdir.h"

#define HERD 64

static struct cache_key
key_of(unsigned char b)
{
	struct buildid id = { 20, { 0 } };
	struct cache_key k;

	memset(id.bytes, b, id.len);
	cache_key_make(&k, &id, CACHE_DEBUGINFO, "");
	return k;
}

/* A reader: counts its wake-ups. */
/* A head's values: none, and a file with one more line. */
static const struct cache_meta no_meta = { "", "", "", "", 0 };
static const struct cache_meta meta_a = { "/a", NULL, NULL,
	"X-DEBUGINFOD-X: y\r\n", 19 };

struct reader {
	atomic_int wakes;
};

static void
reader_wake(void *arg)
{
	struct reader *r = arg;

	atomic_fetch_add(&r->wakes, 1);
}

/* ---------------------------------------------------- a herd joins */

struct herd {
	struct flight_table *ft;
	struct cache_key k;
	pthread_barrier_t go;
	atomic_int created;
	struct flight *seen[HERD];
};

static void *
herd_member(void *arg)
{
	struct herd *h = arg;
	static atomic_int next;
	int i = atomic_fetch_add(&next, 1), created;

	pthread_barrier_wait(&h->go);
	h->seen[i] = flight_join(h->ft, &h->k, 1, &created);
	atomic_fetch_add(&h->created, created);
	return NULL;
}

static void
test_herd(void)
{
	struct herd h;
	pthread_t t[HERD];
	uint64_t flights, watchers;
	int i, same = 1;

	memset(&h, 0, sizeof(h));
	h.ft = flight_table_new(4, clock_mono_ns, clock_stamp_ns);
	h.k = key_of(0xaa);
	pthread_barrier_init(&h.go, NULL, HERD);
	for (i = 0; i < HERD; i++)
		pthread_create(&t[i], NULL, herd_member, &h);
	for (i = 0; i < HERD; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&h.go);
	is_int(atomic_load(&h.created), 1,
	    "64 threads join one key at once: exactly one creates the fill");
	for (i = 1; i < HERD; i++)
		same &= h.seen[i] == h.seen[0] && h.seen[i] != NULL;
	ok(same, "... and all 64 hold the same flight");
	flight_table_counts(h.ft, &flights, &watchers);
	is_int(flights, 1, "... one flight in the table");
	for (i = 0; i < HERD; i++)
		flight_unref(h.seen[i]);
	flight_table_counts(h.ft, &flights, &watchers);
	is_int(flights, 0, "the last reference gone, the table is empty");
	flight_table_free(h.ft);
}

/* ------------------------------------------- streaming and its end */

static void
test_stream(void)
{
	struct flight_table *ft =
	    flight_table_new(0, clock_mono_ns, clock_stamp_ns);
	struct cache_key k = key_of(0x11);
	struct reader r[3];
	struct flight_view v;
	struct flight *f, *g;
	const char *path = at("fill-stream");
	char buf[16];
	int created, fd, i, all;

	memset(r, 0, sizeof(r));
	f = flight_join(ft, &k, 1, &created);
	ok(f != NULL && created, "a fill starts");
	for (i = 0; i < 3; i++)
		ok(flight_watch(f, reader_wake, &r[i]) == 0,
		    "a reader watches");
	flight_view(f, &v);
	ok(v.state == FLIGHT_WAITING && v.sendable == 0,
	    "no head yet: nothing to send");

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ok(write(fd, "0123456789", 10) == 10, "ten bytes in the temp file");
	flight_set_file(f, fd, path);
	is_str(flight_meta(f)->file, "", "no head yet: no file");
	/* The early check has not passed: the head is held, length unknown. */
	flight_set_head(f, UINT64_MAX, 1000, &meta_a, "http://up");
	ok(flight_meta(f) != &meta_a &&
		strcmp(flight_meta(f)->file, "/a") == 0 &&
		strcmp(flight_meta(f)->archive, "") == 0 &&
		strcmp(flight_meta(f)->extra, "X-DEBUGINFOD-X: y\r\n") == 0,
	    "the head's values, copied");
	flight_view(f, &v);
	ok(v.state == FLIGHT_WAITING, "a head without a length: still waiting");
	flight_set_length(f, 10);
	for (all = 1, i = 0; i < 3; i++)
		all &= atomic_load(&r[i].wakes) >= 1;
	ok(all, "the length told: every reader woken");
	flight_progress(f, 10);
	flight_view(f, &v);
	ok(v.state == FLIGHT_STREAMING, "streaming");
	is_int(v.sendable, 9,
	    "all ten bytes written but not verified: nine may be sent");
	flight_progress(f, 8);
	flight_verified(f);
	flight_view(f, &v);
	ok(v.length == 10 && v.sendable == 8,
	    "verified short of the length told: the length stays, so the "
	    "last byte is still held");
	flight_progress(f, 10);
	flight_view(f, &v);
	is_int(v.sendable, 9, "... once it is written too");
	i = atomic_load(&r[0].wakes);
	flight_verified(f);
	flight_view(f, &v);
	ok(v.state == FLIGHT_STREAMING && v.sendable == 10 && v.length == 10,
	    "verified before the end: all ten bytes may be sent, still "
	    "streaming");
	ok(atomic_load(&r[0].wakes) > i, "... and the readers are woken");

	/* One reader leaves mid-fill (its client went away). */
	flight_unwatch(f, &r[2]);
	i = atomic_load(&r[2].wakes);
	flight_end(f, FLIGHT_READY, NULL);
	is_int(atomic_load(&r[2].wakes), i, "a reader that left is not woken");
	ok(atomic_load(&r[0].wakes) >= 2 && atomic_load(&r[1].wakes) >= 2,
	    "the end wakes the readers still there");
	flight_view(f, &v);
	ok(v.state == FLIGHT_READY && v.sendable == 10,
	    "verified: all ten bytes may be sent");
	fd = flight_open(f);
	ok(fd != -1 && pread(fd, buf, 10, 0) == 10 &&
		memcmp(buf, "0123456789", 10) == 0,
	    "flight_open: a descriptor of the bytes");
	close(fd);
	is_str(flight_source(f), "http://up", "the source is kept");
	is_int(flight_mtime(f), 1000, "... and the mtime");

	/* Detached: a new request starts a new fill. */
	flight_detach(f);
	g = flight_join(ft, &k, 1, &created);
	ok(g != NULL && g != f && created, "after detach, a new fill");
	flight_unref(g);
	flight_unwatch(f, &r[0]);
	flight_unwatch(f, &r[1]);
	flight_unref(f);
	/* READY: the publisher renamed the file; a test file stays. */
	ok(access(path, F_OK) == 0, "a READY fill's file is not removed");
	unlink(path);
	flight_table_free(ft);
}

static void
test_failed(void)
{
	struct flight_table *ft =
	    flight_table_new(0, clock_mono_ns, clock_stamp_ns);
	struct cache_key k = key_of(0x22);
	struct reader r[2];
	struct flight_view v;
	struct flight *f, *g;
	const char *path = at("fill-bad");
	int created, fd;

	memset(r, 0, sizeof(r));
	f = flight_join(ft, &k, 1, &created);
	g = flight_join(ft, &k, 1, &created);
	ok(g == f && !created, "a second request joins");
	flight_watch(f, reader_wake, &r[0]);
	flight_watch(f, reader_wake, &r[1]);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ok(write(fd, "BADBYTES", 8) == 8, "eight bytes of a wrong file");
	flight_set_file(f, fd, path);
	flight_set_head(f, 8, 0, &no_meta, "http://up");
	flight_progress(f, 8);
	flight_view(f, &v);
	is_int(v.sendable, 7, "streaming: seven of eight may be sent");
	flight_end(f, FLIGHT_FAILED, "wrong content");
	ok(atomic_load(&r[0].wakes) >= 2 && atomic_load(&r[1].wakes) >= 2,
	    "the failed verification wakes both readers");
	flight_view(f, &v);
	ok(v.state == FLIGHT_FAILED && v.sendable == 0,
	    "... which see FAILED and nothing more to send");
	is_str(v.why, "wrong content", "... and why");
	flight_detach(f);
	flight_unwatch(f, &r[0]);
	flight_unwatch(f, &r[1]);
	flight_unref(g);
	ok(access(path, F_OK) == 0, "the temp file lives while a reader does");
	flight_unref(f);
	ok(access(path, F_OK) == -1, "... and goes with the last reference");
	flight_table_free(ft);
}

static void
test_limit(void)
{
	struct flight_table *ft =
	    flight_table_new(1, clock_mono_ns, clock_stamp_ns);
	struct cache_key a = key_of(1), b = key_of(2);
	struct flight *f, *g, *h;
	int created;

	f = flight_join(ft, &a, 1, &created);
	ok(f != NULL, "one limited fill");
	ok(flight_join(ft, &b, 1, &created) == NULL,
	    "a second limited fill over max-fills: refused");
	g = flight_join(ft, &b, 0, &created);
	ok(g != NULL && created, "an unlimited one (a package member) is not");
	h = flight_join(ft, &a, 1, &created);
	ok(h == f && !created, "joining the limited one is always possible");
	flight_unref(h);
	flight_unref(g);
	flight_unref(f);
	f = flight_join(ft, &b, 1, &created);
	ok(f != NULL, "the first gone, another limited fill starts");
	flight_unref(f);
	flight_table_free(ft);
}

/*
 * A size announced before readers may start, for their X-DEBUGINFOD-MAXSIZE;
 * the fill's limit; and the end of a fill refused by an upstream's 406.
 */
static void
test_announce(void)
{
	struct flight_table *ft =
	    flight_table_new(0, clock_mono_ns, clock_stamp_ns);
	struct cache_key k = key_of(0x33);
	struct reader r;
	struct flight_view v;
	struct flight *f;
	int created, before;

	memset(&r, 0, sizeof(r));
	f = flight_join(ft, &k, 1, &created);
	flight_watch(f, reader_wake, &r);
	flight_view(f, &v);
	ok(v.size == UINT64_MAX && v.limit == 0,
	    "a new fill: no size known, no limit");
	flight_set_limit(f, 4096);
	flight_set_head(f, UINT64_MAX, 0, &no_meta, "http://up");
	before = atomic_load(&r.wakes);
	flight_announce(f, 10000);
	ok(atomic_load(&r.wakes) > before, "an announced size wakes readers");
	flight_view(f, &v);
	ok(v.state == FLIGHT_WAITING && v.size == 10000 && v.sendable == 0,
	    "... which see the size while they may not start yet");
	is_int(v.limit, 4096, "... and the fill's limit");
	flight_end(f, FLIGHT_TOOBIG, "larger than X-DEBUGINFOD-MAXSIZE");
	flight_view(f, &v);
	ok(v.state == FLIGHT_TOOBIG && v.limit == 4096,
	    "an upstream's 406 ends it TOOBIG, the limit still there");
	flight_detach(f);
	flight_unwatch(f, &r);
	flight_unref(f);
	flight_table_free(ft);
}

/* ------------------------------------------ the status page's list */

static void
test_list(void)
{
	struct flight_table *ft =
	    flight_table_new(0, clock_mono_ns, clock_stamp_ns);
	struct cache_key k1 = key_of(0x51), k2 = key_of(0x52);
	struct flight_info fi[4];
	struct reader r[2];
	struct flight *f1, *f2;
	int created, i;
	size_t n;

	memset(r, 0, sizeof(r));
	is_int(flight_table_list(ft, fi, 4), 0, "list: an empty table");
	f1 = flight_join(ft, &k1, 1, &created);
	flight_set_label(f1, "debuginfo 5151");
	f2 = flight_join(ft, &k2, 1, &created);
	flight_watch(f2, reader_wake, &r[0]);
	flight_watch(f2, reader_wake, &r[1]);
	flight_set_head(f2, 100, 1000, &no_meta, "http://up");
	flight_set_length(f2, 100);
	flight_progress(f2, 40);
	n = flight_table_list(ft, fi, 4);
	is_int(n, 2, "list: both flights");
	ok(fi[0].age_ns >= fi[1].age_ns, "the oldest first");
	/* Made within the same nanosecond they may come either way. */
	i = fi[0].label[0] != '\0' ? 0 : 1;
	is_str(fi[i].label, "debuginfo 5151", "the first one's label");
	ok(fi[i].state == FLIGHT_WAITING && fi[i].source[0] == '\0' &&
		fi[i].length == UINT64_MAX && fi[i].watchers == 0,
	    "... waiting, no source, no length, no watcher");
	ok(fi[1 - i].label[0] == '\0' && fi[1 - i].state == FLIGHT_STREAMING,
	    "the other: no label, streaming");
	is_str(fi[1 - i].source, "http://up", "... its source");
	ok(fi[1 - i].written == 40 && fi[1 - i].length == 100 &&
		fi[1 - i].watchers == 2,
	    "... its bytes and its two watchers");
	is_int(flight_table_list(ft, fi, 1), 1, "at most max");
	flight_unwatch(f2, &r[0]);
	flight_unwatch(f2, &r[1]);
	flight_end(f1, FLIGHT_NOTFOUND, "gone");
	flight_end(f2, FLIGHT_FAILED, "broken");
	flight_unref(f1);
	flight_unref(f2);
	is_int(flight_table_list(ft, fi, 4), 0, "ended and let go: none");
	flight_table_free(ft);
}

int
main(void)
{
	if (testdir_make("test_flight") == -1)
		return 1;
	test_herd();
	test_stream();
	test_failed();
	test_limit();
	test_announce();
	test_list();
	testdir_remove();
	return tap_done();
}
