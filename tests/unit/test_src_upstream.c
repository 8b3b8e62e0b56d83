/*
 * tests/unit/test_src_upstream.c: the upstream source (sources/upstream.c)
 * with the real producer core, index, blob store, negative entries,
 * flight table, pool and libcurl, against tests/fakeupstream on
 * 127.0.0.1.  The test joins flights as the resolver does and watches
 * them (readers, tests/rig.h), and asks as clients do.  Time is the test
 * clock.
 *
 * Checked: a herd of joins, and joins while the body trickles in, cost one
 * upstream request and all get the verified file, which is published; the
 * reader that started the fill leaving mid-fill does not stop it; a body
 * trickling in reaches its reader as it comes, not at the end; an answer
 * with another build-id (refused at its first bytes), or with the
 * build-id but no debug info (refused by the final check, readers having
 * been let stream all but its last byte, the upstream blamed), fails
 * every reader and publishes nothing but an error entry; a miss is in the
 * negative entries before any reader is woken by the end, answers the
 * next fill without asking upstream, and is asked again once the test
 * clock passes its TTL.  A client's request goes upstream with its
 * X-Forwarded-For, User-Agent and X-DEBUGINFOD-MAXSIZE; one that went
 * round a loop of servers (its Via, or a full X-Forwarded-For) is refused
 * without asking; a fill that cannot keep the bytes says why.  Every wait
 * is for a condition, bounded by WAIT_SECONDS.
 */
#include <sys/prctl.h>
#include <sys/wait.h>

#include <signal.h>

#include "tests/rig.h"

#include "sources/sources.h"
#include "sources/upstream.h"

#define HERD 8
#define NEGATIVE_TTL 600

static const char *ID_A = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1";
static const char *ID_B = "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2";
static const char *ID_C = "c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3";
static const char *ID_D = "d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4";
static const char *ID_E = "e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5";
static const char *ID_F = "f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6";

/* The upstream's place in the table. */
#define UPSTREAM_AT 1
static const struct source *const table[] = { &source_negative,
	&source_upstream, NULL };

static char url[64];

/* Join the upstream's fill of hex's debuginfo and watch it; 0, or -1. */
static int
join(struct reader *r, const char *hex)
{
	return reader_join_as(r, hex, CACHE_DEBUGINFO, UPSTREAM_AT, NULL,
	    RESOLVE_ALL);
}

/*
 * Turn the loop until the fill of every reader of rs[0..n) still there
 * has ended, or, with streaming, until each may send a byte.
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
			reader_look(&rs[i], &v);
			there += streaming
			    ? v.state == FLIGHT_STREAMING && v.sendable > 0
			    : v.state != FLIGHT_WAITING &&
				v.state != FLIGHT_STREAMING;
		}
		if (there == n)
			return 1;
		if (time(NULL) > until)
			return 0;
		event_base_loop(rig.base, EVLOOP_ONCE);
	}
}

/* ------------------------------------------------- the fake upstream */

static pid_t fake_pid = -1;

/* Requests the fake upstream logged for hex (with what, when not NULL). */
static int
upstream_asked(const char *hex, const char *what)
{
	char line[4096];
	FILE *fp = fopen(at("fake.log"), "r");
	int n = 0;

	if (fp == NULL)
		return 0;
	while (fgets(line, sizeof(line), fp) != NULL)
		n += strstr(line, hex) != NULL &&
		    (what == NULL || strstr(line, what) != NULL);
	fclose(fp);
	return n;
}

/*
 * tests/fakeupstream on a free port: A's and E's debug files trickled at
 * 8000 bytes/s, B answered with A's file, D with an executable of its id,
 * F's at once, C and the rest not found.  Its port, or -1.
 */
static int
fake_start(void)
{
	char exe[4096], rule_a[4096], rule_b[4096], rule_d[4096], rule_e[4096];
	char rule_f[4096], port[32];
	time_t until = time(NULL) + WAIT_SECONDS;
	struct stat st;
	FILE *fp;
	int p = -1, fd;

	snprintf(exe, sizeof(exe), "%s/tests/fakeupstream", rig_top());
	snprintf(rule_a, sizeof(rule_a), "%s=trickle:%s", ID_A, at("a.debug"));
	snprintf(rule_b, sizeof(rule_b), "%s=ok:%s", ID_B, at("a.debug"));
	snprintf(rule_d, sizeof(rule_d), "%s=ok:%s", ID_D, at("d.exe"));
	snprintf(rule_e, sizeof(rule_e), "%s=trickle:%s", ID_E, at("e.debug"));
	snprintf(rule_f, sizeof(rule_f), "%s=ok:%s", ID_F, at("f.debug"));
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
		    rule_e, rule_f, (char *)NULL);
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

static void
test_herd(void)
{
	struct reader rs[HERD + 2];
	struct flight_view v;
	struct stat st;
	uint64_t size = 0;
	size_t i;
	int created = 0, ready = 0;

	for (i = 0; i < HERD; i++)
		if (join(&rs[i], ID_A) == 0)
			created += rs[i].created;
	is_int(created, 1, "a herd of joins: one fill");
	ok(run_until(rs, HERD, 1),
	    "... its body trickles in from the upstream");
	/* The loop is not running: the fill is where it was seen. */
	ok(!reader_ended(&rs[0]), "... and is not over");
	reader_leave(&rs[0]);
	for (i = HERD; i < HERD + 2; i++)
		if (join(&rs[i], ID_A) == 0)
			created += rs[i].created;
	is_int(created, 1,
	    "the reader that started it left; two more join it mid-fill");
	ok(run_until(rs, HERD + 2, 0), "the fill ends");
	stat(at("a.debug"), &st);
	for (i = 1; i < HERD + 2; i++) {
		reader_look(&rs[i], &v);
		ready += v.state == FLIGHT_READY &&
		    v.sendable == (uint64_t)st.st_size;
		reader_leave(&rs[i]);
	}
	is_int(ready, HERD + 1, "... verified, whole, for every reader left");
	is_int(upstream_asked(ID_A, NULL), 1,
	    "... out of one upstream request");
	ok(rig_cached(&rs[1].k, &size) && size == (uint64_t)st.st_size,
	    "... and published");
	ok(rig_cached_as(&rs[1].k, at("a.debug")),
	    "... with the upstream's bytes");
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
	if (join(&r, ID_E) == -1) {
		ok(0, "a trickling body: joined");
		return;
	}
	for (;;) {
		reader_look(&r, &v);
		if (v.state == FLIGHT_STREAMING && v.sendable > 0 && first == 0)
			first = v.sendable;
		if (v.state == FLIGHT_STREAMING && first > 0 &&
		    v.sendable > first && v.sendable < (uint64_t)st.st_size - 1)
			grew = 1;
		if (grew || reader_ended(&r) || time(NULL) > until)
			break;
		event_base_loop(rig.base, EVLOOP_ONCE);
	}
	ok(grew, "a trickling body reaches its reader as it comes");
	ok(run_until(&r, 1, 0) && reader_state(&r) == FLIGHT_READY,
	    "... and ends verified");
	reader_look(&r, &v);
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
	struct stat st;
	char msg[256];
	size_t i;
	int failed = 0, cut = 0;

	for (i = 0; i < 3; i++)
		join(&rs[i], hex);
	snprintf(msg, sizeof(msg), "%s ends the fill", what);
	ok(run_until(rs, 3, 0), msg);
	stat(path, &st);
	for (i = 0; i < 3; i++) {
		failed += reader_state(&rs[i]) == FLIGHT_FAILED;
		cut += rs[i].most < (uint64_t)st.st_size;
	}
	is_int(failed, 3, "... failed, for every reader");
	is_int(cut, 3, "... none ever let send the whole answer");
	ok(!rig_cached(&rs[0].k, NULL), "... nothing published");
	ok(rig_negative(&rs[0].k, NULL) == NEG_ERROR,
	    "... an error entry remembered instead");
	for (i = 0; i < 3; i++)
		reader_leave(&rs[i]);
}

static void
test_blamed(void)
{
	char name[128];
	double before;

	snprintf(name, sizeof(name),
	    "dbgmirror_upstream_verify_failures_total{upstream=\"%s\"}", url);
	before = rig_metric(name);
	test_refused(ID_D, at("d.exe"),
	    "an executable with the build-id, asked for as debuginfo,");
	ok(before >= 0 && rig_metric(name) == before + 1,
	    "... and the upstream blamed for it once");
}

static void
test_negative(void)
{
	struct reader rs[2], again;
	int64_t expires = 0;
	size_t i;
	int notfound = 0, seen = 0;

	for (i = 0; i < 2; i++)
		join(&rs[i], ID_C);
	ok(run_until(rs, 2, 0), "a miss upstream ends the fill");
	for (i = 0; i < 2; i++) {
		notfound += reader_state(&rs[i]) == FLIGHT_NOTFOUND;
		seen += rs[i].wakes > 0 && rs[i].negative_at_wake;
		reader_leave(&rs[i]);
	}
	is_int(notfound, 2, "... not found, for both readers");
	is_int(seen, 2, "... the negative entry there when the end woke them");
	ok(rig_negative(&rs[0].k, &expires) == NEG_NOTFOUND &&
		expires == NOW + NEGATIVE_TTL,
	    "... until now + negative-ttl by the test clock");

	join(&again, ID_C);
	ok(run_until(&again, 1, 0) && reader_state(&again) == FLIGHT_NOTFOUND,
	    "a fill of the key meanwhile: not found");
	reader_leave(&again);
	is_int(upstream_asked(ID_C, NULL), 1,
	    "... from the entry, upstream not asked");

	rig_clock(NOW + NEGATIVE_TTL + 1);
	join(&again, ID_C);
	ok(run_until(&again, 1, 0), "past the TTL: not found");
	reader_leave(&again);
	is_int(upstream_asked(ID_C, NULL), 2, "... asking the upstream again");
	rig_clock(NOW);
}

/* ---------------------------------------------------------- clients */

static void
test_forwarded(void)
{
	struct client c;
	char xff[64];

	client_init(&c, 1000000);
	c.o.forwarded_for.p = "10.0.0.1";
	c.o.forwarded_for.n = 8;
	client_ask(&c, rig_path(ID_F, "debuginfo"), RESOLVE_ALL);
	RUN_UNTIL(c.ended);
	ok(c.status == 200 && c.complete && client_body_is(&c, at("f.debug")),
	    "a client's request is answered from the upstream");
	is_str(c.source, url, "... which the access log names");
	snprintf(xff, sizeof(xff), "xff=\"10.0.0.1, 127.0.0.1\"");
	is_int(upstream_asked(ID_F, xff), 1,
	    "... asked with the client's X-Forwarded-For and its address");
	is_int(upstream_asked(ID_F, "ua=\"rig/1 "), 1,
	    "... the client's User-Agent");
	is_int(upstream_asked(ID_F, "maxsize=\"1000000\""), 1,
	    "... and its X-DEBUGINFOD-MAXSIZE");
	client_free(&c);
}

static void
test_loops(void)
{
	static const char full[] = "1.1.1.1, 2.2.2.2, 3.3.3.3, 4.4.4.4, "
				   "5.5.5.5, 6.6.6.6, 7.7.7.7, 8.8.8.8";
	struct client c;

	client_init(&c, 0);
	c.o.via.p = "1.1 other, 1.1 dbgmirror-test";
	c.o.via.n = strlen(c.o.via.p);
	client_ask(&c, rig_path(ID_E, "executable"), RESOLVE_ALL);
	ok(c.answered && c.status == 404 && c.outcome == ANSWER_LOOP,
	    "a request whose Via names this server: 404 at once");
	is_str(c.why, "not forwarded: a request loop", "... saying why");
	client_free(&c);

	client_init(&c, 0);
	c.o.forwarded_for.p = full;
	c.o.forwarded_for.n = sizeof(full) - 1;
	client_ask(&c, rig_path(ID_E, "executable"), RESOLVE_ALL);
	ok(c.answered && c.outcome == ANSWER_LOOP,
	    "one with max-forwarded-for X-Forwarded-For entries: refused");
	is_str(c.why, "not forwarded: X-Forwarded-For limit reached",
	    "... saying why");
	is_int(upstream_asked(ID_E, "/executable"), 0,
	    "... neither went upstream");
	client_free(&c);
}

/* A fill that cannot keep the bytes (no temp file): 503, saying why. */
static void
test_cannot_keep(void)
{
	struct client c;

	RUN_UNTIL(rig_flights() == 0);
	shell("mv '%s' '%s' && touch '%s'", at("cache/tmp"), at("tmp.away"),
	    at("cache/tmp"));
	client_get(&c, rig_path(ID_F, "executable"));
	RUN_UNTIL(c.ended);
	ok(c.status == 503 && c.outcome == ANSWER_UNAVAILABLE,
	    "a fill whose temp file cannot be made: 503");
	is_str(c.why, "cannot store the file", "... saying why");
	shell("rm -f '%s' && mv '%s' '%s'", at("cache/tmp"), at("tmp.away"),
	    at("cache/tmp"));
	client_free(&c);
}

int
main(void)
{
	char ttl[32];
	const char *opts[] = { "--upstream", url, "--negative-ttl", ttl, NULL };
	struct upstreams *us;
	char err[256];
	int port;

	/* The fixtures and the server first: rig_open names the directory. */
	if (testdir_make("test_src_upstream") == -1 || upstream_init() == -1)
		return 1;
	if (!rig_mkelf("a.debug",
		"--type dyn --build-id a1a1a1a1a1a1a1a1a1a1"
		"a1a1a1a1a1a1a1a1a1a1 --debug "
		".debug_info:6K --debug .debug_line:2K") ||
	    !rig_mkelf("d.exe",
		"--type dyn --build-id d4d4d4d4d4d4d4d4d4d4d4"
		"d4d4d4d4d4d4d4d4d4 --text 8K") ||
	    !rig_mkelf("e.debug",
		"--type dyn --build-id e5e5e5e5e5e5e5e5e5e5"
		"e5e5e5e5e5e5e5e5e5e5 --debug "
		".debug_info:40K") ||
	    !rig_mkelf("f.debug",
		"--type dyn --build-id f6f6f6f6f6f6f6f6f6f6"
		"f6f6f6f6f6f6f6f6f6f6 --debug "
		".debug_info:4K") ||
	    (port = fake_start()) == -1) {
		printf("Bail out! no debug file or no fake upstream\n");
		fake_stop();
		return 1;
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	snprintf(ttl, sizeof(ttl), "%d", NEGATIVE_TTL);
	if (rig_open("test_src_upstream", opts, NULL, table) == -1 ||
	    (us = upstreams_new(&rig.cfg, rig.base, rig.prod, err,
		 sizeof(err))) == NULL) {
		printf("Bail out! %s\n", err);
		fake_stop();
		return 1;
	}
	rig.d.upstreams = us;

	test_herd();
	test_streams();
	test_refused(ID_B, at("a.debug"), "an answer with another build-id");
	test_blamed();
	test_negative();
	test_forwarded();
	test_loops();
	test_cannot_keep();

	fake_stop();
	RUN_UNTIL(rig_flights() == 0);
	rig_stop();
	upstreams_free(us);
	upstream_shutdown();
	rig_close();
	return tap_done();
}
