/*
 * tests/unit/test_src_package.c: members of indexed packages as a source
 * (sources/package.c, sources/pass.c) on the real path: packages made
 * with tar and indexed by sources/scan.c, passes on the real pool, the
 * producer core, and a test source after it (tests/tsrc.h).
 *
 * Checked: a herd asking for a member costs one flight and one pass, and
 * gets the member with its X-DEBUGINFOD-ARCHIVE and -FILE; the pass also
 * extracts what nothing asked for within package-coextract (1 here): the
 * executable sharing the member's build-id before another debug file, and
 * the dwz alt file always, so that they are cache hits next; two members
 * asked at once share one pass; a member no longer indexed when its pass
 * begins passes the same flight on to the next source; a member that
 * cannot be extracted is a failure, never remembered as a miss.  Every
 * wait is bounded.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "tests/rig.h"
#include "tests/tsrc.h"

#include "sources/pass.h"
#include "sources/sources.h"

#define HERD 6
#define PACKAGE "prog-1-1-x86_64.pkg.tar.gz"

/* The debug file and executable of P, a dwz alt file Q, R, S. */
static const char *ID_P = "a8a8a8a8a8a8a8a8a8a8a8a8a8a8a8a8a8a8a8a8";
static const char *ID_Q = "b8b8b8b8b8b8b8b8b8b8b8b8b8b8b8b8b8b8b8b8";
static const char *ID_R = "c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8";
static const char *ID_S = "d8d8d8d8d8d8d8d8d8d8d8d8d8d8d8d8d8d8d8d8";
static const char *ID_T = "e8e8e8e8e8e8e8e8e8e8e8e8e8e8e8e8e8e8e8e8";
static const char *ID_U = "f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8";

static struct tsrc next;
static const struct source *const table[] = { &source_cache, &source_package,
	&next.s, NULL };

static double
passes(void)
{
	return rig_metric("dbgmirror_package_passes_total");
}

static int
cached(const char *hex, enum cache_kind kind)
{
	struct cache_key k;

	rig_key(&k, hex, kind, "");
	return rig_cached(&k, NULL);
}

static int
ended(const struct client *cs, size_t n, const char *path)
{
	size_t i;
	int k = 0;

	for (i = 0; i < n; i++)
		k += cs[i].ended && cs[i].status == 200 &&
		    client_body_is(&cs[i], path);
	return k;
}

/* The package of P, Q, R, S; 1 when made and indexed. */
static int
make_package(void)
{
	return rig_mkelf("p.debug",
		   "--type dyn --build-id a8a8a8a8a8a8a8a8a8a8"
		   "a8a8a8a8a8a8a8a8a8a8 --debug "
		   ".debug_info:4000") &&
	    rig_mkelf("p.exe",
		"--type dyn --build-id a8a8a8a8a8a8a8a8a8a8a8a8"
		"a8a8a8a8a8a8a8a8 --text 3000") &&
	    rig_mkelf("q.dwz",
		"--type rel --build-id b8b8b8b8b8b8b8b8b8b8b8b8"
		"b8b8b8b8b8b8b8b8 --debug .debug_info:2000") &&
	    rig_mkelf("r.debug",
		"--type dyn --build-id c8c8c8c8c8c8c8c8c8c8"
		"c8c8c8c8c8c8c8c8c8c8 --debug "
		".debug_info:2500") &&
	    rig_mkelf("s.exe",
		"--type dyn --build-id d8d8d8d8d8d8d8d8d8d8d8d8"
		"d8d8d8d8d8d8d8d8 --text 2000") &&
	    shell("cd '%s' && d=root/usr/lib/debug && "
		  "mkdir -p $d/.build-id/a8 $d/.build-id/c8 "
		  "$d/.dwz/x86_64-linux-gnu root/usr/bin && "
		  "cp p.debug $d/.build-id/a8/%s.debug && "
		  "cp r.debug $d/.build-id/c8/%s.debug && "
		  "cp q.dwz $d/.dwz/x86_64-linux-gnu/prog.debug && "
		  "cp p.exe root/usr/bin/prog && cp s.exe root/usr/bin/other "
		  "&& "
		  "tar -czf " PACKAGE " -C root .",
		tmpdir, ID_P + 2, ID_R + 2) &&
	    rig_index_package(at(PACKAGE));
}

static void
test_herd(void)
{
	struct client cs[HERD];
	double before = passes();
	char file[256];
	size_t i, joined;

	ok(make_package(),
	    "a package: a debug file and its executable, a "
	    "dwz alt file, another debug file and executable");
	for (i = 0; i < HERD; i++)
		client_get(&cs[i], rig_path(ID_P, "debuginfo"));
	RUN_UNTIL(ended(cs, HERD, at("p.debug")) == HERD);
	is_int(ended(cs, HERD, at("p.debug")), HERD,
	    "a herd asking for a member: each gets it");
	is_int(passes(), before + 1, "... out of one pass");
	/*
	 * The others join the flight, or (when the pass verified the member
	 * before they asked: the workers run meanwhile) are answered from
	 * the cache it goes to, as after any fill.
	 */
	for (i = 1, joined = 0; i < HERD; i++)
		joined += cs[i].result == METRICS_JOINED ||
		    (cs[i].result == METRICS_HIT &&
			strcmp(cs[i].source, "cache") == 0);
	is_int(cs[0].result, METRICS_MISS, "... the first a MISS");
	is_int(joined, HERD - 1, "... the others joined it or hit its entry");
	snprintf(file, sizeof(file),
	    "X-DEBUGINFOD-FILE: /usr/lib/debug/.build-id/a8/%s.debug\r\n"
	    "X-DEBUGINFOD-ARCHIVE: " PACKAGE "\r\n",
	    ID_P + 2);
	is_str(cs[0].extra, file, "... with its archive and file");
	for (i = 0; i < HERD; i++)
		client_free(&cs[i]);

	RUN_UNTIL(rig_flights() == 0);
	ok(cached(ID_P, CACHE_DEBUGINFO), "the member is cached");
	ok(cached(ID_P, CACHE_EXECUTABLE),
	    "... and so is the executable sharing its build-id, unasked");
	ok(cached(ID_Q, CACHE_DEBUGINFO), "... and the dwz alt file");
	ok(!cached(ID_R, CACHE_DEBUGINFO) && !cached(ID_S, CACHE_EXECUTABLE),
	    "... but no more than package-coextract allows");
	client_get(&cs[0], rig_path(ID_P, "executable"));
	ok(cs[0].answered && cs[0].result == METRICS_HIT &&
		client_body_is(&cs[0], at("p.exe")),
	    "the executable next: a cache hit");
	client_free(&cs[0]);
	is_int(passes(), before + 1, "... no other pass");
}

static void
test_two_members(void)
{
	struct client r, s;
	double before = passes();

	client_get(&r, rig_path(ID_R, "debuginfo"));
	client_get(&s, rig_path(ID_S, "executable"));
	RUN_UNTIL(r.ended && s.ended);
	ok(client_body_is(&r, at("r.debug")) && client_body_is(&s, at("s.exe")),
	    "two members of a package asked at once: both answered");
	is_int(passes(), before + 1, "... by one pass");
	client_free(&r);
	client_free(&s);
}

/* Long jobs that hold the pool's long places until released. */
static atomic_int blocking;
static pthread_mutex_t block_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t block_cv = PTHREAD_COND_INITIALIZER;
static int block_released;

static void
block_work(void *arg)
{
	pthread_mutex_lock(&block_mu);
	atomic_fetch_add(&blocking, 1);
	while (!block_released)
		pthread_cond_wait(&block_cv, &block_mu);
	atomic_fetch_sub(&blocking, 1);
	pthread_mutex_unlock(&block_mu);
}

static void
block_release(void)
{
	pthread_mutex_lock(&block_mu);
	block_released = 1;
	pthread_cond_broadcast(&block_cv);
	pthread_mutex_unlock(&block_mu);
}

static void
test_no_longer_indexed(void)
{
	struct client c;
	int i;

	rig_mkelf("t.debug",
	    "--type dyn --build-id e8e8e8e8e8e8e8e8e8e8e8e8e8"
	    "e8e8e8e8e8e8e8 --debug .debug_info:3000");
	rig_mkelf("u.debug",
	    "--type dyn --build-id f8f8f8f8f8f8f8f8f8f8f8f8f8"
	    "f8f8f8f8f8f8f8 --debug .debug_info:3000");
	shell("cd '%s' && d=root2/usr/lib/debug/.build-id && "
	      "mkdir -p $d/e8 $d/f8 && cp t.debug $d/e8/%s.debug && "
	      "cp u.debug $d/f8/%s.debug && tar -czf two.pkg.tar.gz -C root2 .",
	    tmpdir, ID_T + 2, ID_U + 2);
	rig_index_package(at("two.pkg.tar.gz"));
	/* The pass cannot begin while the long places are taken. */
	for (i = 0; i < 2; i++)
		pool_submit_long(rig.pool, block_work, NULL, NULL, NULL);
	RUN_UNTIL(atomic_load(&blocking) == 2);
	next.lookup = TS_PASS;
	client_get(&c, rig_path(ID_T, "debuginfo"));
	ok(c.waited && next.lookups == 0, "a member's fill waits for its pass");
	/* Meanwhile the package changes: the member is gone. */
	shell("cd '%s' && rm root2/usr/lib/debug/.build-id/e8/*.debug && "
	      "rm two.pkg.tar.gz && tar -czf two.pkg.tar.gz -C root2 .",
	    tmpdir);
	rig_index_package(at("two.pkg.tar.gz"));
	block_release();
	RUN_UNTIL(next.p != NULL);
	ok(next.produced == 1 && next.lookups == 0,
	    "the member no longer indexed when its pass begins: the same "
	    "flight goes on to the next source");
	ts_serve(next.p, at("t.debug"));
	RUN_UNTIL(c.ended);
	ok(c.status == 200 && client_body_is(&c, at("t.debug")),
	    "... whose answer the request gets");
	client_free(&c);
}

static void
test_cannot_extract(void)
{
	struct client c;
	struct cache_key k;

	RUN_UNTIL(rig_flights() == 0);
	/* Indexed, then cut short: the member is no longer in it. */
	shell("truncate -s 200 '%s'", at("two.pkg.tar.gz"));
	client_get(&c, rig_path(ID_U, "debuginfo"));
	RUN_UNTIL(c.ended);
	ok(c.status == 502 && c.outcome == ANSWER_FILL_FAILED,
	    "a member that cannot be extracted: 502");
	rig_key(&k, ID_U, CACHE_DEBUGINFO, "");
	is_int(rig_negative(&k, NULL), -1, "... never remembered as a miss");
	client_free(&c);
}

int
main(void)
{
	static const char *const opts[] = { "--package-coextract", "1", NULL };
	struct passes *ps;

	if (rig_open("test_src_package", opts, NULL, table) == -1)
		return 1;
	ts_init(&next, "next", 0, 1, 1, 0);
	ps = passes_new(&rig.d, rig.inbox);
	rig.d.packages = ps;

	test_herd();
	test_two_members();
	test_no_longer_indexed();
	test_cannot_extract();

	RUN_UNTIL(rig_flights() == 0);
	rig_stop();
	passes_free(ps);
	rig_close();
	return tap_done();
}
