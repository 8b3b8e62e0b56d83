/*
 * tests/unit/test_resolve.c: the request path's state machine
 * (resolver/resolve.c) with the real index, blob store, negative entries,
 * in-flight table and pool, and two fakes: the connection (it records the
 * answer instead of writing HTTP) and the fill producer (the test writes a
 * flight's bytes and ends it, as resolver/fill.c would for an upstream or a
 * package).  Time is the test clock (daemon/clock.h).
 *
 * Checked: a herd joins one fill; a client leaving mid-fill; a failed
 * verification answering every waiter; a negative entry written before the
 * waiters are woken, its remaining TTL their max-age, and the next request
 * answered from it without a fill; a section cut from the whole file that
 * a package fill brought into the cache; a request that joins a fill
 * after its verdict, a cache hit once the file is published.  Every wait
 * is bounded.
 */
#include <sys/stat.h>

#include <event2/event.h>
#include <event2/thread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache/blobstore.h"
#include "cache/flight.h"
#include "cache/index.h"
#include "cache/negative.h"
#include "cache/pkgindex.h"
#include "conf/config.h"
#include "daemon/clock.h"
#include "resolver/fill.h"
#include "daemon/http.h"
#include "daemon/metrics.h"
#include "daemon/pool.h"
#include "sources/repo.h"
#include "resolver/resolve.h"
#include "daemon/route.h"
#include "indexer/elf.h"
#include "tests/shell.h"
#include "tests/tap.h"
#include "tests/testdir.h"

#define HERD 8
#define WAIT_SECONDS 30
#define NOW 1700000000

/* ----------------------------------------------- the fake connection */

struct conn {
	struct request req;
	int waiting;
	int ended; /* the exchange is over: answered and sent, or left */
	int answered;
	int status;
	unsigned max_age;
	char why[256];
	char result[16];
	uint64_t size;
	int streamed; /* conn_send_stream: the answer comes from a flight */
	int (*avail)(void *arg, uint64_t *n);
	void *avail_arg;
	void (*end_fn)(void *);
	void *end_arg;
};

static struct event_base *base;
static struct pool_inbox *inbox;

/* The exchange ends: what http.c does when it is sent or the peer left. */
static void
exchange_end(struct conn *c)
{
	void (*fn)(void *) = c->end_fn;

	c->ended = 1;
	c->end_fn = NULL;
	if (fn != NULL)
		fn(c->end_arg);
}

const struct request *
conn_request(struct conn *c)
{
	return &c->req;
}

struct pool_inbox *
conn_inbox(struct conn *c)
{
	return inbox;
}

void
conn_set_result(struct conn *c, const char *result, const char *source)
{
	snprintf(c->result, sizeof(c->result), "%s", result);
}

void
conn_wait(struct conn *c)
{
	c->waiting = 1;
}

struct event_base *
conn_base(struct conn *c)
{
	return base;
}

const char *
conn_peer_addr(struct conn *c)
{
	return "127.0.0.1";
}

void
conn_on_end(struct conn *c, void (*fn)(void *), void *arg)
{
	c->end_fn = fn;
	c->end_arg = arg;
}

static void
answer(struct conn *c, int status, const char *why)
{
	c->answered++;
	c->status = status;
	snprintf(c->why, sizeof(c->why), "%s", why != NULL ? why : "");
}

void
conn_send_error(struct conn *c, int status, const char *why)
{
	answer(c, status, why);
	exchange_end(c);
}

void
conn_send_miss(struct conn *c, const char *why, unsigned max_age)
{
	answer(c, 404, why);
	c->max_age = max_age;
	exchange_end(c);
}

void
conn_send_retry(struct conn *c, int status, const char *why,
    unsigned retry_after)
{
	answer(c, status, why);
	c->max_age = retry_after;
	exchange_end(c);
}

void
conn_send_text(struct conn *c, int status, const char *content_type,
    const char *body, size_t len)
{
	answer(c, status, body);
	exchange_end(c);
}

void
conn_send_file(struct conn *c, int fd, uint64_t offset,
    const struct artifact *art)
{
	answer(c, 200, NULL);
	c->size = art->size;
	close(fd);
	exchange_end(c);
}

void
conn_send_stream(struct conn *c, int fd, const struct artifact *art,
    int (*avail)(void *arg, uint64_t *n), void *arg)
{
	answer(c, 200, NULL);
	c->size = art->size;
	c->streamed = 1;
	c->avail = avail;
	c->avail_arg = arg;
	close(fd);
	/* As http.c: send what may be sent now. */
	conn_stream_wake(c);
}

void
conn_stream_wake(struct conn *c)
{
	uint64_t n;

	/* Sent all it may: the whole verified file, or a cut connection. */
	if (c->avail(c->avail_arg, &n) == -1) {
		c->status = -1;
		exchange_end(c);
	} else if (n == c->size) {
		exchange_end(c);
	}
}

/* ------------------------------------------------ the fake producer */

struct fill {
	struct flight_table *ft;
	int enabled;
	int created; /* fills started */
	struct flight *f; /* the last one, the producer's reference */
	struct fill_what w; /* what it was asked for */
	int from_package;
};

struct flight *
fill_join(struct fill *fl, const struct cache_key *k, int from_package,
    fill_what_fn what, void *arg, int *created)
{
	struct flight *f = flight_join(fl->ft, k, !from_package, created);

	if (f != NULL && *created) {
		flight_ref(f);
		fl->f = f;
		fl->created++;
		fl->from_package = from_package;
		memset(&fl->w, 0, sizeof(fl->w));
		what(&fl->w, arg);
	}
	return f;
}

int
fill_enabled(const struct fill *fl)
{
	return fl->enabled;
}

/* No object store here: tests/integration/store.sh has a real one. */
int
fill_store_usable(struct fill *fl)
{
	return 0;
}

/* No remote repositories here (sources/repo.c is the daemon's). */
size_t
repos_count(const struct repos *rs)
{
	return 0;
}

int
repos_find(struct repos *rs, struct index_reader *rd, const struct buildid *id,
    int executable, struct repos_hit *hit, unsigned *retry)
{
	return 0;
}

struct flight *
repos_join(struct repos *rs, const struct repos_hit *hit)
{
	return NULL;
}

struct flight *
repos_member(struct repos *rs, const struct repos_hit *hit,
    const struct buildid *id, int *created, int *package)
{
	return NULL;
}

/* ------------------------------------------------------------- setup */

static struct config cfg;
static struct index *idx;
static struct blobstore *bs;
static struct pool *pool;
static struct fill fill;
static struct resolve_deps deps;
static struct resolve_thread th;

static void
tick_cb(evutil_socket_t fd, short what, void *arg)
{
}

/*
 * Run the loop until the exchange of every conn of cs[0..n) is over, so
 * that nothing refers to them when the test's stack frame goes.
 */
static int
run_until_ended(struct conn *cs, size_t n)
{
	time_t until = time(NULL) + WAIT_SECONDS;
	size_t i, done;

	for (;;) {
		for (done = 0, i = 0; i < n; i++)
			done += cs[i].ended;
		if (done == n)
			return 1;
		if (time(NULL) > until)
			return 0;
		event_base_loop(base, EVLOOP_ONCE);
	}
}

/* Run the loop until fill.created reaches want. */
static int
run_until_created(int want)
{
	time_t until = time(NULL) + WAIT_SECONDS;

	while (fill.created < want) {
		if (time(NULL) > until)
			return 0;
		event_base_loop(base, EVLOOP_ONCE);
	}
	return 1;
}

static void
ask(struct conn *c, const char *target)
{
	struct route rt;
	const char *why;

	memset(c, 0, sizeof(*c));
	if (route_parse(&rt, target, strlen(target), &why) != 0) {
		printf("Bail out! route_parse %s: %s\n", target, why);
		exit(1);
	}
	resolve_start(&th, c, &rt);
}

/* The producer: write bytes to a temp file and tell the flight. */
static void
produce(const void *bytes, size_t n, const char *name)
{
	int fd = open(at(name), O_RDWR | O_CREAT | O_TRUNC, 0600);

	if (fd == -1 || write(fd, bytes, n) != (ssize_t)n)
		printf("# cannot write %s\n", at(name));
	flight_set_file(fill.f, fd, at(name));
	flight_set_head(fill.f, n, NOW, "", 0, "http://fake");
	flight_progress(fill.f, n);
}

static void
finish(enum flight_state st, const char *why)
{
	flight_end(fill.f, st, why);
	flight_detach(fill.f);
	flight_unref(fill.f);
	fill.f = NULL;
}

/* -------------------------------------------------------------- tests */

static const char *ID_A = "a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0";

static void
test_herd_and_leaving(void)
{
	struct conn cs[HERD];
	char target[128];
	size_t i;
	int joined = 0, whole = 0;

	snprintf(target, sizeof(target), "/buildid/%s/source/usr/src/a.c",
	    ID_A);
	for (i = 0; i < HERD; i++)
		ask(&cs[i], target);
	ok(run_until_created(1),
	    "a request for what no source has starts a fill");
	is_int(fill.created, 1, "... one fill for eight requests");
	ok(!fill.from_package, "... from the upstreams");
	is_str(fill.w.path,
	    "/buildid/a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0/source/usr/src/"
	    "a.c",
	    "... asking them for the source");
	for (i = 0; i < HERD; i++)
		joined += cs[i].waiting && !cs[i].answered;
	is_int(joined, HERD, "all eight wait on it");

	/* One client goes away mid-fill. */
	exchange_end(&cs[HERD - 1]);
	produce("int main;\n", 10, "src-fill");
	finish(FLIGHT_READY, NULL);
	ok(run_until_ended(cs, HERD - 1), "the fill's end answers the rest");
	for (i = 0; i < HERD - 1; i++)
		whole += cs[i].status == 200 && cs[i].size == 10;
	is_int(whole, HERD - 1, "... seven 200s of the whole 10 bytes");
	is_str(cs[0].result, "MISS", "... the first a MISS");
	is_str(cs[1].result, "JOINED", "... the others JOINED");
	is_int(cs[HERD - 1].answered, 0, "the one that left gets nothing");
}

static void
test_failed_verification(void)
{
	struct conn cs[3];
	char target[128];
	size_t i;
	int cut = 0;

	snprintf(target, sizeof(target),
	    "/buildid/b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0/debuginfo");
	for (i = 0; i < 2; i++)
		ask(&cs[i], target);
	ok(run_until_created(2), "a second fill starts");
	/* Streaming before verification: never the last byte. */
	produce("\177ELF not really", 15, "bad-fill");
	for (i = 0; i < 10; i++)
		event_base_loop(base, EVLOOP_NONBLOCK);
	ask(&cs[2], target);
	finish(FLIGHT_FAILED, "wrong content");
	ok(run_until_ended(cs, 3), "the failed verification ends them all");
	for (i = 0; i < 3; i++)
		cut += cs[i].status == -1 || cs[i].status == 502;
	is_int(cut, 3, "... each cut mid-stream or answered 502, none whole");
}

static void
test_local_failure(void)
{
	struct conn cs[2];
	char target[128];
	size_t i;
	int unavailable = 0;

	snprintf(target, sizeof(target),
	    "/buildid/e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0/debuginfo");
	for (i = 0; i < 2; i++)
		ask(&cs[i], target);
	ok(run_until_created(3), "another fill starts");
	/* What fill.c does when the disk is full before a byte went out. */
	finish(FLIGHT_UNAVAILABLE, "this server cannot keep it now: full");
	ok(run_until_ended(cs, 2), "the fill ends unavailable");
	for (i = 0; i < 2; i++)
		unavailable += cs[i].status == 503 && cs[i].max_age > 0;
	is_int(unavailable, 2, "both waiters: 503 with a Retry-After");
}

static void
test_negative_before_answer(void)
{
	struct conn cs[3];
	char target[128], err[256];
	struct cache_key k;
	struct buildid id;
	const char *why;
	int miss = 0, created;
	size_t i;

	snprintf(target, sizeof(target),
	    "/buildid/c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0/executable");
	for (i = 0; i < 2; i++)
		ask(&cs[i], target);
	ok(run_until_created(4), "a third fill starts");
	/* What fill.c does at a miss: the entry first, then the end. */
	buildid_parse(&id, target + 9, 40, &why);
	cache_key_make(&k, &id, CACHE_EXECUTABLE, "");
	ok(neg_put(idx, &k, &id, NEG_NOTFOUND, NOW + 30, err, sizeof(err)) == 0,
	    "the producer remembers the miss for 30 s");
	finish(FLIGHT_NOTFOUND, "not found");
	ok(run_until_ended(cs, 2), "then ends the fill");
	for (i = 0; i < 2; i++)
		miss += cs[i].status == 404 && cs[i].max_age == 30;
	is_int(miss, 2, "both waiters: 404, max-age 30 (the entry's)");
	created = fill.created;
	ask(&cs[2], target);
	ok(cs[2].answered && cs[2].status == 404 && cs[2].max_age == 30,
	    "the next request: 404 from the entry at once");
	is_str(cs[2].result, "NEGATIVE", "... a negative hit");
	is_int(fill.created, created, "... with no fill");
}

static void
test_section_after_package_fill(void)
{
	const char *id_s = "d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0";
	struct index_file pkg = { 0 };
	struct pkg_rec rec = { 0 };
	struct index_batch *b;
	struct blob_info bi;
	struct stat sb;
	struct conn c;
	struct elf_section sec;
	struct cache_key k;
	char target[128], err[256];
	const char *why;
	int fd;

	ok(shell("'%s/tests/mkelf' --type rel --build-id %s "
		 "--debug .debug_info:3000 '%s'",
	       getenv("top_builddir") != NULL ? getenv("top_builddir") : ".",
	       id_s, at("whole.debug")),
	    "mkelf: a debug file with a 3000-byte .debug_info");
	fd = open(at("whole.debug"), O_RDONLY);
	ok(fd != -1 && fstat(fd, &sb) == 0 &&
		elf_find_section(fd, ".debug_info", &sec, err, sizeof(err)) ==
		    0,
	    "... whose section table says where it is");
	close(fd);
	/* A package member holds the debuginfo. */
	pkg.path = "/srv/pkgs/p.deb";
	pkg.size = 1;
	rec.member = "/usr/lib/debug/.build-id/d0/d0.debug";
	rec.size = (uint64_t)sb.st_size;
	rec.kinds = ELF_KIND_DEBUGINFO;
	buildid_parse(&rec.id, id_s, 40, &why);
	b = index_batch_begin(idx, err, sizeof(err));
	ok(b != NULL && pkgidx_put(b, &pkg, &rec, 1) == 0 &&
		index_batch_commit(b, err, sizeof(err)) == 0,
	    "the package index has the member");

	snprintf(target, sizeof(target), "/buildid/%s/section/.debug_info",
	    id_s);
	ask(&c, target);
	ok(run_until_created(5), "a section request starts a package fill");
	ok(fill.from_package, "... of the member");
	is_int(fill.w.kind, CACHE_DEBUGINFO, "... of the whole debuginfo");
	is_str(fill.w.member, rec.member, "... named by the index");
	/* The producer publishes the verified file, then ends the fill. */
	shell("cp '%s' '%s'", at("whole.debug"), at("fill-whole"));
	fd = open(at("fill-whole"), O_RDWR);
	flight_set_file(fill.f, fd, at("fill-whole"));
	flight_set_head(fill.f, (uint64_t)sb.st_size, NOW, "", 0, "p.deb");
	flight_progress(fill.f, (uint64_t)sb.st_size);
	cache_key_make(&k, &rec.id, CACHE_DEBUGINFO, "");
	memset(&bi, 0, sizeof(bi));
	bi.size = (uint64_t)sb.st_size;
	bi.mtime = NOW;
	bi.stored = NOW;
	bi.atime = NOW;
	bi.id = rec.id;
	bi.kind = CACHE_DEBUGINFO;
	bi.arg = "";
	bi.source = "p.deb";
	bi.headers = "";
	ok(blob_publish(bs, &k, at("fill-whole"), &bi, NOW, err, sizeof(err)) ==
		0,
	    "... publishes the whole file");
	finish(FLIGHT_READY, NULL);
	ok(run_until_ended(&c, 1), "the fill's end resumes the request");
	is_int(c.status, 200, "... a 200");
	is_int(c.size, sec.size, "... of the section's bytes, cut from it");
	is_int(fill.created, 5, "... no second fill");
}

/*
 * Verified before its end (flight_verified): the client has every byte
 * while the cache still makes the file durable; a request that joins
 * the fill then waits for its end and is a cache hit, as after a fill
 * that published before its client's last byte.
 */
static void
test_join_after_verdict(void)
{
	const char *id_l = "e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0";
	time_t until = time(NULL) + WAIT_SECONDS;
	struct blob_info bi;
	struct cache_key k;
	struct buildid id;
	struct conn c1, c2;
	char target[128], err[256];
	const char *why;
	int created0 = fill.created;

	snprintf(target, sizeof(target), "/buildid/%s/source/usr/src/l.c",
	    id_l);
	ask(&c1, target);
	ok(run_until_created(created0 + 1), "a source's fill starts");
	produce("int late;\n", 10, "late-fill");
	flight_verified(fill.f);
	ok(run_until_ended(&c1, 1),
	    "verified: its client has all its bytes before the fill's end");
	ok(c1.status == 200 && c1.size == 10, "... a 200 of the 10 bytes");
	is_str(c1.result, "MISS", "... a MISS");
	ask(&c2, target);
	while (!c2.waiting && !c2.answered && time(NULL) <= until)
		event_base_loop(base, EVLOOP_ONCE);
	ok(c2.waiting && !c2.answered,
	    "a request joining it then waits for the end");
	buildid_parse(&id, id_l, 40, &why);
	cache_key_make(&k, &id, CACHE_SOURCE, "/usr/src/l.c");
	memset(&bi, 0, sizeof(bi));
	bi.size = 10;
	bi.mtime = NOW;
	bi.stored = NOW;
	bi.atime = NOW;
	bi.id = id;
	bi.kind = CACHE_SOURCE;
	bi.arg = "/usr/src/l.c";
	bi.source = "http://fake";
	bi.headers = "";
	ok(blob_publish(bs, &k, at("late-fill"), &bi, NOW, err, sizeof(err)) ==
		0,
	    "the producer publishes the file");
	finish(FLIGHT_READY, NULL);
	ok(run_until_ended(&c2, 1), "the fill's end answers it");
	ok(c2.status == 200 && c2.size == 10 && !c2.streamed,
	    "... a 200 from the cache");
	is_str(c2.result, "HIT", "... a HIT");
	is_int(fill.created, created0 + 1, "... and no second fill");
}

int
main(void)
{
	char err[256];
	struct blob_limits lim = { 0, 90, 80, 0, 0 };
	struct timeval tv = { 0, 20000 };
	struct event *tick;

	evthread_use_pthreads();
	elf_init();
	if (testdir_make("test_resolve") == -1)
		return 1;
	/* The test clock: the cache's "now" is this file's mtime. */
	shell("touch -d @%d '%s'", NOW, at("clock"));
	setenv("DBGMIRROR_TEST_CLOCK", at("clock"), 1);
	clock_init();
	metrics_init();
	config_init(&cfg);
	shell("mkdir -p '%s'", at("cache/index"));
	idx = index_open(at("cache/index"), 0, 64u << 20, err, sizeof(err));
	bs = idx != NULL
	    ? blobstore_new(idx, at("cache"), &lim, err, sizeof(err))
	    : NULL;
	if (bs == NULL) {
		printf("Bail out! %s\n", err);
		return 1;
	}
	pool = pool_new(2, 1);
	base = event_base_new();
	inbox = pool_inbox_new(base);
	/* A timer keeps EVLOOP_ONCE from blocking forever. */
	tick = event_new(base, -1, EV_PERSIST, tick_cb, NULL);
	event_add(tick, &tv);
	fill.ft = flight_table_new(0, clock_mono_ns);
	fill.enabled = 1;
	deps.cfg = &cfg;
	deps.idx = idx;
	deps.pool = pool;
	deps.bs = bs;
	deps.fill = &fill;
	deps.via_token = "dbgmirror-test";
	th.d = &deps;
	th.rd = index_reader_new(idx);

	test_herd_and_leaving();
	test_failed_verification();
	test_local_failure();
	test_negative_before_answer();
	test_section_after_package_fill();
	test_join_after_verdict();

	index_reader_free(th.rd);
	pool_free(pool);
	pool_inbox_free(inbox);
	event_free(tick);
	event_base_free(base);
	flight_table_free(fill.ft);
	blobstore_free(bs);
	index_close(idx);
	config_free(&cfg);
	metrics_free();
	testdir_remove();
	return tap_done();
}
