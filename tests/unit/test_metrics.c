/*
 * tests/unit/test_metrics.c: daemon/metrics.c, read back from its own
 * Prometheus text.
 *
 * Each check renders, then looks up whole series lines ("name{labels} v")
 * and compares their values; a missing line reads as -1 so that it fails
 * any expected count.  The concurrency check runs four threads of updates
 * and asks for an exact total.
 */
#include "daemon/metrics.h"

#include <sys/time.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/clock.h"
#include "tests/tap.h"

#define NTHREADS 4
#define PER_THREAD 100000

/* What the whole test renders its metrics into, refreshed by render(). */
static char *text;

static void
render(void)
{
	size_t len = 0;

	free(text);
	text = metrics_render(&len);
	if (!ok(text != NULL, "render"))
		exit(1);
	is_int(len, strlen(text), "render length is strlen");
}

/* The value after "series " at the start of a line, or NULL. */
static const char *
value_str(const char *series)
{
	static char val[64];
	size_t n = strlen(series), vlen;
	const char *p = text;

	while (p != NULL && *p != '\0') {
		if (strncmp(p, series, n) == 0 && p[n] == ' ') {
			p += n + 1;
			vlen = strcspn(p, "\n");
			if (vlen >= sizeof(val))
				return NULL;
			memcpy(val, p, vlen);
			val[vlen] = '\0';
			return val;
		}
		if ((p = strchr(p, '\n')) != NULL)
			p++;
	}
	return NULL;
}

/* The integer value of a series, -1 when it is missing. */
static long long
value(const char *series)
{
	const char *v = value_str(series);

	return v != NULL ? strtoll(v, NULL, 10) : -1;
}

/* 1 when some line of the text starts with prefix. */
static int
has_line_prefix(const char *prefix)
{
	const char *p = text;

	while ((p = strstr(p, prefix)) != NULL) {
		if (p == text || p[-1] == '\n')
			return 1;
		p++;
	}
	return 0;
}

/* 1 when line is one whole line of the text. */
static int
has_line(const char *line)
{
	size_t n = strlen(line);
	const char *p = text;

	while ((p = strstr(p, line)) != NULL) {
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return 1;
		p++;
	}
	return 0;
}

static void
test_headers(void)
{
	static const char *const metrics[][2] = {
		{ "dbgmirror_requests_total", "counter" },
		{ "dbgmirror_bytes_sent_total", "counter" },
		{ "dbgmirror_upstream_requests_total", "counter" },
		{ "dbgmirror_upstream_latency_seconds", "histogram" },
		{ "dbgmirror_upstream_errors_total", "counter" },
		{ "dbgmirror_upstream_verify_failures_total", "counter" },
		{ "dbgmirror_upstream_breaker_state", "gauge" },
		{ "dbgmirror_fills_in_flight", "gauge" },
		{ "dbgmirror_fill_waiters", "gauge" },
		{ "dbgmirror_cache_entries", "gauge" },
		{ "dbgmirror_cache_bytes", "gauge" },
		{ "dbgmirror_negative_entries", "gauge" },
		{ "dbgmirror_index_files", "gauge" },
		{ "dbgmirror_index_packages", "gauge" },
		{ "dbgmirror_index_package_members", "gauge" },
		{ "dbgmirror_connections", "gauge" },
		{ "dbgmirror_cache_evictions_total", "counter" },
		{ "dbgmirror_cache_evicted_bytes_total", "counter" },
		{ "dbgmirror_scan_running", "gauge" },
		{ "dbgmirror_scan_files", "gauge" },
		{ "dbgmirror_scan_packages", "gauge" },
		{ "dbgmirror_scan_package_members", "gauge" },
		{ "dbgmirror_scan_errors", "gauge" },
		{ "dbgmirror_scan_removed", "gauge" },
		{ "dbgmirror_scan_start_time_seconds", "gauge" },
		{ "dbgmirror_scan_last_end_time_seconds", "gauge" },
		{ "dbgmirror_scan_last_duration_seconds", "gauge" },
		{ "dbgmirror_start_time_seconds", "gauge" },
	};
	char line[256];
	const char *p, *last = text;
	size_t i;
	int missing = 0, disordered = 0;

	for (i = 0; i < sizeof(metrics) / sizeof(metrics[0]); i++) {
		snprintf(line, sizeof(line), "# TYPE %s %s", metrics[i][0],
		    metrics[i][1]);
		if (!has_line(line)) {
			printf("# missing: %s\n", line);
			missing++;
			continue;
		}
		p = strstr(text, line);
		if (p < last) {
			printf("# out of order: %s\n", line);
			disordered++;
		}
		last = p;
		snprintf(line, sizeof(line), "# HELP %s ", metrics[i][0]);
		if (!has_line_prefix(line)) {
			printf("# missing HELP of %s\n", metrics[i][0]);
			missing++;
		}
	}
	is_int(missing, 0, "every metric has HELP and TYPE lines");
	is_int(disordered, 0, "metrics come in the documented order");
	ok(has_line_prefix("# HELP dbgmirror_upstream_breaker_state ") &&
		strstr(text, "0 closed, 1 open, 2 probing") != NULL,
	    "breaker HELP explains the states");
	is_int(text[strlen(text) - 1], '\n', "text ends with a newline");
}

static void
test_requests(void)
{
	static const char *const eps[] = { "debuginfo", "executable", "section",
		"source", "metadata", "other" };
	static const char *const res[] = { "hit", "miss", "negative", "joined",
		"error", "notfound", "bad" };
	char series[128];
	size_t e, r;
	int wrong = 0;

	for (e = 0; e < 6; e++) {
		for (r = 0; r < 7; r++) {
			snprintf(series, sizeof(series),
			    "dbgmirror_requests_total{endpoint=\"%s\","
			    "result=\"%s\"}",
			    eps[e], res[r]);
			if (value(series) != 0) {
				printf("# not zero: %s\n", series);
				wrong++;
			}
		}
	}
	is_int(wrong, 0, "all 42 request series are there, at zero");
	is_int(value("dbgmirror_bytes_sent_total"), 0, "no bytes sent yet");

	metrics_request(METRICS_EP_DEBUGINFO, METRICS_HIT);
	metrics_request(METRICS_EP_DEBUGINFO, METRICS_HIT);
	metrics_request(METRICS_EP_SOURCE, METRICS_NEGATIVE);
	metrics_request(METRICS_EP_OTHER, METRICS_BAD);
	metrics_bytes_sent(1000);
	metrics_bytes_sent(234);
	render();
	is_int(value("dbgmirror_requests_total{endpoint=\"debuginfo\","
		     "result=\"hit\"}"),
	    2, "debuginfo hits counted");
	is_int(value("dbgmirror_requests_total{endpoint=\"source\","
		     "result=\"negative\"}"),
	    1, "source negative counted");
	is_int(value("dbgmirror_requests_total{endpoint=\"other\","
		     "result=\"bad\"}"),
	    1, "bad request counted");
	is_int(value("dbgmirror_requests_total{endpoint=\"debuginfo\","
		     "result=\"miss\"}"),
	    0, "other series untouched");
	is_int(value("dbgmirror_bytes_sent_total"), 1234, "bytes sent summed");
}

static void
test_upstreams(void)
{
	/* http://a"b\c\nd, as a label value http://a\"b\\c\nd. */
	const char *url = "http://a\"b\\c\nd";
	const char *esc = "{upstream=\"http://a\\\"b\\\\c\\nd\"";
	char series[256];

	ok(strstr(text, "upstream=") == NULL, "no upstream series unnamed");
	metrics_upstream_name(0, url);
	metrics_upstream_name(31, "http://last");
	metrics_upstream_request(0);
	metrics_upstream_request(0);
	metrics_upstream_request(0);
	metrics_upstream_latency(0, 0.003);
	metrics_upstream_latency(0, 0.2);
	metrics_upstream_latency(0, 40);
	metrics_upstream_latency(31, 0.005);
	metrics_upstream_error(0, METRICS_UPERR_TIMEOUT);
	metrics_upstream_error(0, METRICS_UPERR_TIMEOUT);
	metrics_upstream_error(0, METRICS_UPERR_BREAKER);
	metrics_upstream_verify_failure(0);
	metrics_upstream_breaker(0, 2);
	metrics_upstream_breaker(31, 1);
	render();

	snprintf(series, sizeof(series), "dbgmirror_upstream_requests_total%s}",
	    esc);
	is_int(value(series), 3, "upstream requests, name escaped");
	ok(strstr(text, url) == NULL, "raw name never appears");

	snprintf(series, sizeof(series),
	    "dbgmirror_upstream_latency_seconds_bucket%s,le=\"0.005\"}", esc);
	is_int(value(series), 1, "le=0.005 bucket");
	snprintf(series, sizeof(series),
	    "dbgmirror_upstream_latency_seconds_bucket%s,le=\"0.1\"}", esc);
	is_int(value(series), 1, "le=0.1 bucket is cumulative");
	snprintf(series, sizeof(series),
	    "dbgmirror_upstream_latency_seconds_bucket%s,le=\"0.25\"}", esc);
	is_int(value(series), 2, "le=0.25 bucket");
	snprintf(series, sizeof(series),
	    "dbgmirror_upstream_latency_seconds_bucket%s,le=\"30\"}", esc);
	is_int(value(series), 2, "le=30 bucket");
	snprintf(series, sizeof(series),
	    "dbgmirror_upstream_latency_seconds_bucket%s,le=\"+Inf\"}", esc);
	is_int(value(series), 3, "le=+Inf bucket");
	snprintf(series, sizeof(series),
	    "dbgmirror_upstream_latency_seconds_count%s}", esc);
	is_int(value(series), 3, "histogram count");
	snprintf(series, sizeof(series),
	    "dbgmirror_upstream_latency_seconds_sum%s}", esc);
	is_str(value_str(series), "40.203", "histogram sum in seconds");
	is_int(value("dbgmirror_upstream_latency_seconds_bucket{upstream="
		     "\"http://last\",le=\"0.005\"}"),
	    1, "a bucket's bound is inclusive");
	is_str(value_str("dbgmirror_upstream_latency_seconds_sum{upstream="
			 "\"http://last\"}"),
	    "0.005", "second upstream has its own sum");

	snprintf(series, sizeof(series),
	    "dbgmirror_upstream_errors_total%s,kind=\"timeout\"}", esc);
	is_int(value(series), 2, "timeout errors");
	snprintf(series, sizeof(series),
	    "dbgmirror_upstream_errors_total%s,kind=\"breaker\"}", esc);
	is_int(value(series), 1, "breaker errors");
	snprintf(series, sizeof(series),
	    "dbgmirror_upstream_errors_total%s,kind=\"connect\"}", esc);
	is_int(value(series), 0, "connect errors at zero");
	is_int(value("dbgmirror_upstream_errors_total{upstream="
		     "\"http://last\",kind=\"content\"}"),
	    0, "every kind for every upstream");
	snprintf(series, sizeof(series),
	    "dbgmirror_upstream_verify_failures_total%s}", esc);
	is_int(value(series), 1, "verify failures");
	snprintf(series, sizeof(series), "dbgmirror_upstream_breaker_state%s}",
	    esc);
	is_int(value(series), 2, "breaker probing");
	is_int(value("dbgmirror_upstream_breaker_state{upstream="
		     "\"http://last\"}"),
	    1, "breaker open");

	metrics_upstream_breaker(0, 0);
	render();
	snprintf(series, sizeof(series), "dbgmirror_upstream_breaker_state%s}",
	    esc);
	is_int(value(series), 0, "breaker is a gauge, back to closed");
}

static void
test_out_of_range(void)
{
	metrics_upstream_name(32, "http://too-far");
	metrics_upstream_name(1000, "http://much-too-far");
	metrics_upstream_request(32);
	metrics_upstream_latency(32, 1);
	metrics_upstream_error(32, METRICS_UPERR_HTTP);
	metrics_upstream_verify_failure(UINT32_MAX);
	metrics_upstream_breaker(32, 1);
	metrics_upstream_latency(31, -1);
	render();
	ok(strstr(text, "too-far") == NULL, "index 32 and beyond ignored");
	is_int(value("dbgmirror_upstream_latency_seconds_count{upstream="
		     "\"http://last\"}"),
	    2, "a negative latency is still observed");
	is_str(value_str("dbgmirror_upstream_latency_seconds_sum{upstream="
			 "\"http://last\"}"),
	    "0.005", "as zero seconds");
}

struct gauge_probe {
	int calls;
	int zeroed;
};

static void
fill_gauges(struct metrics_gauges *g, void *arg)
{
	struct gauge_probe *gp = arg;

	gp->calls++;
	if (g->fills == 0 && g->fill_waiters == 0 && g->cache_entries == 0 &&
	    g->cache_bytes == 0 && g->negative_entries == 0 &&
	    g->index_files == 0 && g->connections == 0)
		gp->zeroed++;
	g->fills = 1;
	g->fill_waiters = 2;
	g->cache_entries = 3;
	g->cache_bytes = 4000000000000ULL;
	g->negative_entries = 5;
	g->index_files = 6;
	g->connections = 7;
	g->evictions = 8;
	g->evicted_bytes = 9;
	g->index_packages = 10;
	g->index_members = 11;
	g->scan.running = 1;
	g->scan.files_seen = 12;
	g->scan.files_queued = 13;
	g->scan.files_read = 14;
	g->scan.packages_seen = 15;
	g->scan.packages_queued = 16;
	g->scan.packages_read = 17;
	g->scan.members = 18;
	g->scan.errors = 19;
	g->scan.removed = 20;
	g->scan.started = 1700000100;
	g->scan.ended = 1700000000;
	g->scan.ended_ms = 2500;
}

static void
test_gauges(void)
{
	/* Static: the callback stays set for the later tests. */
	static struct gauge_probe gp;

	is_int(value("dbgmirror_fills_in_flight"), 0, "no callback: 0");
	is_int(value("dbgmirror_connections"), 0, "no callback: 0 too");
	metrics_set_gauges(fill_gauges, &gp);
	render();
	render();
	is_int(gp.calls, 2, "callback once per render");
	is_int(gp.zeroed, 2, "callback handed zeroed gauges each time");
	is_int(value("dbgmirror_fills_in_flight"), 1, "fills");
	is_int(value("dbgmirror_fill_waiters"), 2, "fill waiters");
	is_int(value("dbgmirror_cache_entries"), 3, "cache entries");
	is_int(value("dbgmirror_cache_bytes"), 4000000000000LL,
	    "cache bytes, 64-bit");
	is_int(value("dbgmirror_negative_entries"), 5, "negative entries");
	is_int(value("dbgmirror_index_files"), 6, "index files");
	is_int(value("dbgmirror_connections"), 7, "connections");
	is_int(value("dbgmirror_cache_evictions_total"), 8, "evictions");
	is_int(value("dbgmirror_cache_evicted_bytes_total"), 9,
	    "evicted bytes");
	is_int(value("dbgmirror_index_packages"), 10, "packages indexed");
	is_int(value("dbgmirror_index_package_members"), 11,
	    "their servable members");
	is_int(value("dbgmirror_scan_running"), 1, "a scan runs");
	is_int(value("dbgmirror_scan_files{state=\"seen\"}"), 12,
	    "files seen so far");
	is_int(value("dbgmirror_scan_files{state=\"queued\"}"), 13,
	    "files queued");
	is_int(value("dbgmirror_scan_files{state=\"read\"}"), 14, "files read");
	is_int(value("dbgmirror_scan_packages{state=\"seen\"}"), 15,
	    "packages seen");
	is_int(value("dbgmirror_scan_packages{state=\"queued\"}"), 16,
	    "packages queued");
	is_int(value("dbgmirror_scan_packages{state=\"read\"}"), 17,
	    "packages read");
	is_int(value("dbgmirror_scan_package_members"), 18,
	    "members of the packages read");
	is_int(value("dbgmirror_scan_errors"), 19, "scan errors");
	is_int(value("dbgmirror_scan_removed"), 20, "records removed");
	is_int(value("dbgmirror_scan_start_time_seconds"), 1700000100,
	    "the scan's start");
	is_int(value("dbgmirror_scan_last_end_time_seconds"), 1700000000,
	    "the last scan's end");
	is_str(value_str("dbgmirror_scan_last_duration_seconds"), "2.5",
	    "and how long it took");
}

static void *
hammer(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < PER_THREAD; i++)
		metrics_request(METRICS_EP_SECTION, METRICS_JOINED);
	return NULL;
}

static void
test_threads(void)
{
	pthread_t t[NTHREADS];
	int i, started = 0;

	for (i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, hammer, NULL) == 0)
			started++;
	is_int(started, NTHREADS, "threads started");
	for (i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	render();
	is_int(value("dbgmirror_requests_total{endpoint=\"section\","
		     "result=\"joined\"}"),
	    (long long)NTHREADS * PER_THREAD, "no update lost across threads");
}

static void
test_reinit(void)
{
	metrics_init();
	render();
	ok(strstr(text, "upstream=") == NULL, "init forgets upstream names");
	is_int(value("dbgmirror_requests_total{endpoint=\"debuginfo\","
		     "result=\"hit\"}"),
	    0, "init zeroes requests");
	is_int(value("dbgmirror_bytes_sent_total"), 0, "init zeroes bytes");
	is_int(value("dbgmirror_cache_evictions_total"), 0,
	    "init zeroes evictions");
	is_int(value("dbgmirror_cache_entries"), 0, "init drops the callback");
	metrics_upstream_name(0, "http://again");
	render();
	is_int(value("dbgmirror_upstream_requests_total{upstream="
		     "\"http://again\"}"),
	    0, "init zeroes upstream counters");
	is_int(value("dbgmirror_upstream_latency_seconds_count{upstream="
		     "\"http://again\"}"),
	    0, "init zeroes the histogram");
}

/* The test clock: its file's mtime is clock_now(). */
static char clock_file[] = "/tmp/test_metrics.clock.XXXXXX";

static void
clock_set(time_t t)
{
	struct timeval tv[2] = { { t, 0 }, { t, 0 } };

	if (utimes(clock_file, tv) == -1)
		ok(0, "set the test clock");
}

static void *
recent_thread(void *arg)
{
	metrics_request(METRICS_EP_SOURCE, METRICS_ERROR);
	return arg;
}

/*
 * The requests of the last minutes: per-minute buckets of the test clock,
 * summed over threads, a bucket reused once its minute has passed.
 */
static void
test_recent(void)
{
	char clock_msg[256];
	const time_t t0 = 1700000040; /* minute 28333334, second 0 */
	struct metrics_recent r;
	pthread_t th;
	int fd;

	if (!ok((fd = mkstemp(clock_file)) != -1, "make a test clock file"))
		return;
	close(fd);
	setenv("DBGMIRROR_TEST_CLOCK", clock_file, 1);
	clock_init(clock_msg, sizeof(clock_msg));
	clock_set(t0);
	metrics_init();
	metrics_request(METRICS_EP_DEBUGINFO, METRICS_HIT);
	metrics_request(METRICS_EP_DEBUGINFO, METRICS_HIT);
	metrics_request(METRICS_EP_EXECUTABLE, METRICS_HIT);
	metrics_request(METRICS_EP_DEBUGINFO, METRICS_NOTFOUND);
	metrics_recent(1, &r);
	is_int(r.results[METRICS_HIT], 3, "recent: 3 hits this minute");
	is_int(r.results[METRICS_NOTFOUND], 1, "... 1 not found");
	if (pthread_create(&th, NULL, recent_thread, NULL) == 0)
		pthread_join(th, NULL);
	metrics_recent(1, &r);
	is_int(r.results[METRICS_ERROR], 1, "... and another thread's error");

	clock_set(t0 + 59);
	metrics_request(METRICS_EP_DEBUGINFO, METRICS_HIT);
	metrics_recent(1, &r);
	is_int(r.results[METRICS_HIT], 4, "the same minute at its last second");

	clock_set(t0 + 120);
	metrics_request(METRICS_EP_DEBUGINFO, METRICS_MISS);
	metrics_recent(1, &r);
	is_int(r.results[METRICS_HIT], 0, "two minutes on: no hit this minute");
	is_int(r.results[METRICS_MISS], 1, "... the new miss");
	metrics_recent(5, &r);
	is_int(r.results[METRICS_HIT], 4, "... the hits are in the last 5");
	is_int(r.results[METRICS_ERROR], 1, "... the other thread's too");

	clock_set(t0 + 16 * 60);
	metrics_recent(15, &r);
	is_int(r.results[METRICS_MISS], 1,
	    "16 minutes on: the miss at +2 is in the last 15 ...");
	is_int(r.results[METRICS_HIT], 0, "... the hits at +0 are not");
	metrics_recent(100, &r);
	is_int(r.results[METRICS_MISS] * 10 + r.results[METRICS_HIT], 10,
	    "more minutes than kept: the last 15");
	clock_set(t0 + 17 * 60);
	metrics_recent(15, &r);
	is_int(r.results[METRICS_MISS], 0, "17 minutes on: not the miss");

	clock_set(t0 + 32 * 60); /* the first minute's bucket again */
	metrics_request(METRICS_EP_DEBUGINFO, METRICS_HIT);
	metrics_recent(1, &r);
	is_int(r.results[METRICS_HIT], 1,
	    "a bucket reused is reset: 1 hit, not 5");
	is_int(r.results[METRICS_NOTFOUND], 0, "... nor the old not found");

	metrics_init();
	metrics_recent(1, &r);
	is_int(r.results[METRICS_HIT], 0, "init zeroes the buckets");
	unlink(clock_file); /* the real time again */
}

int
main(void)
{
	time_t before, after;
	long long start;

	before = time(NULL);
	metrics_init();
	after = time(NULL);
	render();
	start = value("dbgmirror_start_time_seconds");
	ok(start >= (long long)before && start <= (long long)after,
	    "start time recorded by init");

	test_headers();
	test_requests();
	test_upstreams();
	test_out_of_range();
	test_gauges();
	test_threads();
	test_reinit();
	test_recent();

	metrics_free();
	free(text);
	return tap_done();
}
