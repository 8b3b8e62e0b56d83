/*
 * tests/unit/test_fill.c: upstream fills (resolver/fill.c) with the real
 * index, blob store, negative entries, in-flight table, pool and libcurl,
 * against tests/fakeupstream on 127.0.0.1.  The test is every fill's
 * readers: it joins flights as the resolver does and watches them.  Time
 * is the test clock (daemon/clock.h).
 *
 * Checked: a herd of joins, and joins while the body trickles in, cost one
 * upstream request and all get the verified file, which is published; the
 * reader that started the fill leaving mid-fill does not stop it; the
 * bytes a fill gathers after the early check reach its readers as they
 * come, not at the end; an
 * answer with another build-id (refused at its first bytes), or with the
 * build-id but no debug info (refused by the final check, readers having
 * been let stream all but its last byte), fails every reader and
 * publishes nothing; a miss is in the negative entries before any reader
 * is woken by the end, answers the next fill without asking upstream, and
 * is asked again once the test clock passes its TTL.  Every wait is for a
 * condition, bounded by WAIT_SECONDS.
 */
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <event2/event.h>
#include <event2/thread.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache/blobstore.h"
#include "cache/flight.h"
#include "cache/index.h"
#include "cache/negative.h"
#include "conf/config.h"
#include "daemon/clock.h"
#include "resolver/fill.h"
#include "daemon/metrics.h"
#include "daemon/pool.h"
#include "fetchers/upstream.h"
#include "indexer/elf.h"
#include "tests/shell.h"
#include "tests/tap.h"
#include "tests/testdir.h"

#define HERD 8
#define WAIT_SECONDS 30
#define NOW 1700000000
#define NEGATIVE_TTL 600

static const char *ID_A = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1";
static const char *ID_B = "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2";
static const char *ID_C = "c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3";
static const char *ID_D = "d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4";
static const char *ID_E = "e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5";

static struct event_base *base;
static struct index *idx;
static struct blobstore *bs;
static struct flight_table *ft;
static struct fill *fl;

/* ------------------------------------------------------------ readers */

/* A reader of a flight, as a request waiting on a fill. */
struct reader {
	struct flight *f;
	int created;
	int wakes;
	int negative_at_wake; /* the key's negative entry, at the last wake */
	uint64_t sendable; /* the most it was ever allowed to send */
	struct cache_key k;
};

/* What the resolver would ask the upstreams for hex's debuginfo. */
static void
what_cb(struct fill_what *w, void *arg)
{
	const char *hex = arg, *why;

	buildid_parse(&w->id, hex, strlen(hex), &why);
	w->kind = CACHE_DEBUGINFO;
	snprintf(w->path, sizeof(w->path), "/buildid/%s/debuginfo", hex);
	snprintf(w->xff, sizeof(w->xff), "127.0.0.1");
	snprintf(w->via, sizeof(w->via), "1.1 dbgmirror-test");
}

/* Called with the flight's lock held: looks at the index, not the flight. */
static void
reader_wake(void *arg)
{
	struct reader *r = arg;
	struct index_reader *rd = index_reader_new(idx);
	struct neg_entry ne;

	r->wakes++;
	r->negative_at_wake = rd != NULL && index_reader_begin(rd) == 0 &&
	    neg_get(rd, &r->k, clock_now(), &ne) == 0;
	if (rd != NULL)
		index_reader_end(rd);
	index_reader_free(rd);
}

static void
key_of(struct cache_key *k, const char *hex)
{
	struct buildid id;
	const char *why;

	buildid_parse(&id, hex, strlen(hex), &why);
	cache_key_make(k, &id, CACHE_DEBUGINFO, "");
}

/* Join the fill of hex's debuginfo and watch it; 0, or -1. */
static int
reader_join(struct reader *r, const char *hex)
{
	memset(r, 0, sizeof(*r));
	key_of(&r->k, hex);
	r->f = fill_join(fl, &r->k, 0, what_cb, (void *)hex, &r->created);
	if (r->f == NULL)
		return -1;
	return flight_watch(r->f, reader_wake, r);
}

static void
reader_leave(struct reader *r)
{
	if (r->f == NULL)
		return;
	flight_unwatch(r->f, r);
	flight_unref(r->f);
	r->f = NULL;
}

static enum flight_state
reader_state(struct reader *r)
{
	struct flight_view v;

	flight_view(r->f, &v);
	return v.state;
}

static int
ended(enum flight_state st)
{
	return st != FLIGHT_WAITING && st != FLIGHT_STREAMING;
}

/* ----------------------------------------------------------- the loop */

static void
tick_cb(evutil_socket_t fd, short what, void *arg)
{
}

/*
 * Run the loop until the fill of every reader of rs[0..n) still there has
 * ended, or, with streaming, until each may send a byte.  0 after
 * WAIT_SECONDS.
 */
static int
run_until(struct reader *rs, size_t n, int streaming)
{
	time_t until = time(NULL) + WAIT_SECONDS;
	struct flight_view v;
	size_t i, there;

	for (;;) {
		for (there = 0, i = 0; i < n; i++) {
			if (rs[i].f == NULL) {
				there++;
				continue;
			}
			flight_view(rs[i].f, &v);
			if (v.sendable > rs[i].sendable)
				rs[i].sendable = v.sendable;
			there += streaming
			    ? v.state == FLIGHT_STREAMING && v.sendable > 0
			    : ended(v.state);
		}
		if (there == n)
			return 1;
		if (time(NULL) > until)
			return 0;
		event_base_loop(base, EVLOOP_ONCE);
	}
}

/* ------------------------------------------------- the fake upstream */

static pid_t fake_pid = -1;

/* Requests the fake upstream logged for hex. */
static int
upstream_asked(const char *hex)
{
	char line[4096];
	FILE *fp = fopen(at("fake.log"), "r");
	int n = 0;

	if (fp == NULL)
		return 0;
	while (fgets(line, sizeof(line), fp) != NULL)
		n += strstr(line, hex) != NULL;
	fclose(fp);
	return n;
}

/*
 * tests/fakeupstream on a free port: A's and E's debug files trickled at
 * 8000 bytes/s, B answered with A's file, C not found.  Its port, or -1.
 */
static int
fake_start(const char *top)
{
	char exe[4096], rule_a[4096], rule_b[4096], rule_d[4096], rule_e[4096];
	char port[32];
	time_t until = time(NULL) + WAIT_SECONDS;
	struct stat st;
	FILE *fp;
	int p = -1, fd;

	snprintf(exe, sizeof(exe), "%s/tests/fakeupstream", top);
	snprintf(rule_a, sizeof(rule_a), "%s=trickle:%s", ID_A, at("a.debug"));
	snprintf(rule_b, sizeof(rule_b), "%s=ok:%s", ID_B, at("a.debug"));
	snprintf(rule_d, sizeof(rule_d), "%s=ok:%s", ID_D, at("d.exe"));
	snprintf(rule_e, sizeof(rule_e), "%s=trickle:%s", ID_E, at("e.debug"));
	if ((fake_pid = fork()) == 0) {
		/*
		 * It prints its port, which is not TAP, and must not outlive
		 * a test that crashed (nor hold the harness's pipe open).
		 */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if ((fd = open(at("fake.err"), O_WRONLY | O_CREAT | O_TRUNC,
			 0600)) != -1) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		execl(exe, exe, "--port-file", at("fake.port"), "--log",
		    at("fake.log"), "--rate", "8000", rule_a, rule_b, rule_d,
		    rule_e, (char *)NULL);
		_exit(127);
	}
	while (fake_pid > 0 && time(NULL) <= until) {
		if (stat(at("fake.port"), &st) == 0 && st.st_size > 0 &&
		    (fp = fopen(at("fake.port"), "r")) != NULL) {
			if (fgets(port, sizeof(port), fp) != NULL)
				p = atoi(port);
			fclose(fp);
			break;
		}
		usleep(10000); /* polling for the port file, not timing */
	}
	return p > 0 ? p : -1;
}

static void
fake_stop(void)
{
	if (fake_pid <= 0)
		return;
	kill(fake_pid, SIGTERM);
	waitpid(fake_pid, NULL, 0);
}

/* -------------------------------------------------------------- tests */

/* 1 when the cached file of k holds the bytes of the file at path. */
static int
cached_as(const struct cache_key *k, const char *path)
{
	char a[4096], b[4096];
	ssize_t n, m;
	int fa, fb, same = 1;

	fa = blob_open(bs, k);
	fb = open(path, O_RDONLY);
	while (fa != -1 && fb != -1 && same) {
		n = read(fa, a, sizeof(a));
		m = read(fb, b, sizeof(b));
		same = n == m && n >= 0 && memcmp(a, b, (size_t)n) == 0;
		if (n <= 0)
			break;
	}
	if (fa != -1)
		close(fa);
	if (fb != -1)
		close(fb);
	return fa != -1 && fb != -1 && same;
}

static void
test_herd(void)
{
	struct reader rs[HERD + 2];
	struct flight_view v;
	struct blob_info bi;
	struct index_reader *rd;
	struct stat st;
	size_t i;
	int created = 0, ready = 0;

	for (i = 0; i < HERD; i++)
		if (reader_join(&rs[i], ID_A) == 0)
			created += rs[i].created;
	is_int(created, 1, "a herd of joins: one fill");
	ok(run_until(rs, HERD, 1),
	    "... its body trickles in from the upstream");
	/* The loop is not running: the fill is where it was seen. */
	ok(!ended(reader_state(&rs[0])), "... and is not over");
	reader_leave(&rs[0]);
	for (i = HERD; i < HERD + 2; i++)
		if (reader_join(&rs[i], ID_A) == 0)
			created += rs[i].created;
	is_int(created, 1,
	    "the reader that started it left; two more join it mid-fill");
	ok(run_until(rs, HERD + 2, 0), "the fill ends");
	stat(at("a.debug"), &st);
	for (i = 1; i < HERD + 2; i++) {
		flight_view(rs[i].f, &v);
		ready += v.state == FLIGHT_READY &&
		    v.sendable == (uint64_t)st.st_size;
		reader_leave(&rs[i]);
	}
	is_int(ready, HERD + 1, "... verified, whole, for every reader left");
	is_int(upstream_asked(ID_A), 1, "... out of one upstream request");
	rd = index_reader_new(idx);
	ok(rd != NULL && index_reader_begin(rd) == 0 &&
		blob_lookup(rd, &rs[1].k, &bi) == 0 &&
		bi.size == (uint64_t)st.st_size,
	    "... and published");
	if (rd != NULL)
		index_reader_end(rd);
	index_reader_free(rd);
	ok(cached_as(&rs[1].k, at("a.debug")), "... with the upstream's bytes");
}

/*
 * After the early check a fill gathers the pieces libcurl hands over and
 * writes them once the burst that brought them is in: a body trickling in
 * (E's, ~40 KB at 8000 bytes/s, in pieces of 800 bytes) reaches its reader
 * as it comes.  Gathered bytes left for the end would show as one jump to
 * all but the last byte; seen here: growth after the reader was told, with
 * the end still to come.
 */
static void
test_streams(void)
{
	time_t until = time(NULL) + WAIT_SECONDS;
	struct reader r;
	struct flight_view v;
	struct stat st;
	uint64_t first = 0;
	int grew = 0;

	stat(at("e.debug"), &st);
	if (reader_join(&r, ID_E) == -1) {
		ok(0, "a trickling body: joined");
		return;
	}
	for (;;) {
		flight_view(r.f, &v);
		if (v.state == FLIGHT_STREAMING && v.sendable > 0 && first == 0)
			first = v.sendable;
		if (v.state == FLIGHT_STREAMING && first > 0 &&
		    v.sendable > first && v.sendable < (uint64_t)st.st_size - 1)
			grew = 1;
		if (grew || ended(v.state) || time(NULL) > until)
			break;
		event_base_loop(base, EVLOOP_ONCE);
	}
	ok(grew, "a trickling body reaches its reader as it comes");
	ok(run_until(&r, 1, 0) && reader_state(&r) == FLIGHT_READY,
	    "... and ends verified");
	flight_view(r.f, &v);
	is_int((int)v.sendable, (int)st.st_size, "... whole");
	reader_leave(&r);
}

/*
 * An answer that fails verification (what says which) ends the fill of
 * hex as failed for every reader, none of which was ever let send the
 * last of the size bytes of path, the answer; nothing is published and
 * an error entry is remembered.
 */
static void
test_refused(const char *hex, const char *path, const char *what)
{
	struct reader rs[3];
	struct blob_info bi;
	struct neg_entry ne;
	struct index_reader *rd;
	struct stat st;
	char msg[256];
	size_t i;
	int failed = 0, cut = 0, found, neg;

	for (i = 0; i < 3; i++)
		reader_join(&rs[i], hex);
	snprintf(msg, sizeof(msg), "%s ends the fill", what);
	ok(run_until(rs, 3, 0), msg);
	stat(path, &st);
	for (i = 0; i < 3; i++) {
		failed += reader_state(&rs[i]) == FLIGHT_FAILED;
		cut += rs[i].sendable < (uint64_t)st.st_size;
		reader_leave(&rs[i]);
	}
	is_int(failed, 3, "... failed, for every reader");
	is_int(cut, 3, "... none ever let send the whole answer");
	rd = index_reader_new(idx);
	found = rd != NULL && index_reader_begin(rd) == 0 &&
	    blob_lookup(rd, &rs[0].k, &bi) == 0;
	neg = rd != NULL && neg_get(rd, &rs[0].k, clock_now(), &ne) == 0 &&
	    ne.kind == NEG_ERROR;
	if (rd != NULL)
		index_reader_end(rd);
	index_reader_free(rd);
	ok(!found, "... nothing published");
	ok(neg, "... an error entry remembered instead");
}

static void
test_negative(void)
{
	struct reader rs[2], again;
	struct neg_entry ne;
	struct index_reader *rd;
	size_t i;
	int notfound = 0, seen = 0, neg;

	for (i = 0; i < 2; i++)
		reader_join(&rs[i], ID_C);
	ok(run_until(rs, 2, 0), "a miss upstream ends the fill");
	for (i = 0; i < 2; i++) {
		notfound += reader_state(&rs[i]) == FLIGHT_NOTFOUND;
		seen += rs[i].wakes > 0 && rs[i].negative_at_wake;
		reader_leave(&rs[i]);
	}
	is_int(notfound, 2, "... not found, for both readers");
	is_int(seen, 2, "... the negative entry there when the end woke them");
	rd = index_reader_new(idx);
	neg = rd != NULL && index_reader_begin(rd) == 0 &&
	    neg_get(rd, &rs[0].k, clock_now(), &ne) == 0;
	if (rd != NULL)
		index_reader_end(rd);
	index_reader_free(rd);
	ok(neg && ne.kind == NEG_NOTFOUND && ne.expires == NOW + NEGATIVE_TTL,
	    "... until now + negative-ttl by the test clock");

	reader_join(&again, ID_C);
	ok(run_until(&again, 1, 0) && reader_state(&again) == FLIGHT_NOTFOUND,
	    "a fill of the key meanwhile: not found");
	reader_leave(&again);
	is_int(upstream_asked(ID_C), 1,
	    "... from the entry, upstream not asked");

	shell("touch -d @%d '%s'", NOW + NEGATIVE_TTL + 1, at("clock"));
	reader_join(&again, ID_C);
	ok(run_until(&again, 1, 0), "past the TTL: not found");
	reader_leave(&again);
	is_int(upstream_asked(ID_C), 2, "... asking the upstream again");
}

int
main(void)
{
	const char *top =
	    getenv("top_builddir") != NULL ? getenv("top_builddir") : ".";
	struct blob_limits lim = { 0, 90, 80, 0, 0 };
	struct timeval tv = { 0, 20000 };
	struct config cfg;
	struct config_args args;
	struct config_diag diag = { 0 };
	struct fill_deps deps;
	struct pool *pool;
	struct pool_inbox *inbox;
	struct event *tick;
	char err[256], url[64], ttl[32];
	char *argv[] = { "test_fill", "--no-config", "--upstream", url,
		"--negative-ttl", ttl, "--cache-dir", NULL, NULL };
	int port;

	evthread_use_pthreads();
	elf_init();
	if (testdir_make("test_fill") == -1 || upstream_init() == -1)
		return 1;
	shell("touch -d @%d '%s'", NOW, at("clock"));
	setenv("DBGMIRROR_TEST_CLOCK", at("clock"), 1);
	clock_init();
	metrics_init();
	if (!shell("'%s/tests/mkelf' --type dyn --build-id %s "
		   "--debug .debug_info:6K --debug .debug_line:2K '%s'",
		top, ID_A, at("a.debug")) ||
	    !shell("'%s/tests/mkelf' --type dyn --build-id %s --text 8K '%s'",
		top, ID_D, at("d.exe")) ||
	    !shell("'%s/tests/mkelf' --type dyn --build-id %s "
		   "--debug .debug_info:40K '%s'",
		top, ID_E, at("e.debug")) ||
	    (port = fake_start(top)) == -1) {
		printf("Bail out! no debug file or no fake upstream\n");
		fake_stop();
		return 1;
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	snprintf(ttl, sizeof(ttl), "%d", NEGATIVE_TTL);
	argv[7] = (char *)at("cache");
	shell("mkdir -p '%s'", at("cache/index"));
	config_init(&cfg);
	if (config_parse_args(&args, 8, argv, &diag) == -1 ||
	    config_load(&cfg, &args, &diag) == -1) {
		printf("Bail out! %s\n", diag.n > 0 ? diag.msgs[0] : "config");
		fake_stop();
		return 1;
	}
	idx = index_open(at("cache/index"), 0, 64u << 20, err, sizeof(err));
	bs = idx != NULL
	    ? blobstore_new(idx, at("cache"), &lim, err, sizeof(err))
	    : NULL;
	if (bs == NULL) {
		printf("Bail out! %s\n", err);
		fake_stop();
		return 1;
	}
	pool = pool_new(2, 1);
	base = event_base_new();
	inbox = pool_inbox_new(base);
	/* A timer keeps EVLOOP_ONCE from blocking forever. */
	tick = event_new(base, -1, EV_PERSIST, tick_cb, NULL);
	event_add(tick, &tv);
	ft = flight_table_new(0, clock_mono_ns);
	memset(&deps, 0, sizeof(deps));
	deps.cfg = &cfg;
	deps.idx = idx;
	deps.bs = bs;
	deps.ft = ft;
	deps.pool = pool;
	deps.inbox = inbox;
	deps.base = base;
	if ((fl = fill_new(&deps, err, sizeof(err))) == NULL) {
		printf("Bail out! %s\n", err);
		fake_stop();
		return 1;
	}

	test_herd();
	test_streams();
	test_refused(ID_B, at("a.debug"), "an answer with another build-id");
	test_refused(ID_D, at("d.exe"),
	    "an executable with the build-id, asked for as debuginfo,");
	test_negative();

	fake_stop();
	pool_free(pool);
	pool_inbox_free(inbox);
	fill_free(fl);
	event_free(tick);
	event_base_free(base);
	flight_table_free(ft);
	blobstore_free(bs);
	index_close(idx);
	config_args_free(&args);
	config_free(&cfg);
	config_diag_free(&diag);
	metrics_free();
	upstream_shutdown();
	testdir_remove();
	return tap_done();
}
