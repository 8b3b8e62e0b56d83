/*
 * tests/unit/test_metrics.c: daemon/metrics.c, read back from its own
 * Prometheus text.
 *
 * Each check renders, then looks up whole series lines ("name{labels} v")
 * and compares their values; a missing line reads as -1 so that it fails
 * any expected count.  The concurrency check runs four threads of updates
 * and asks for an exact total.  The whole text is also parsed as the
 * exposition format defines it (names, labels and their escapes, a TYPE
 * before the samples of its family, cumulative histogram buckets ending
 * at +Inf, counters ending in _total, units as suffixes), and handed to
 * Prometheus' promtool when it is installed.
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

#include "autoconf.h"
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
		{ "dbgmirror_request_duration_seconds", "histogram" },
		{ "dbgmirror_sent_bytes_total", "counter" },
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
		{ "dbgmirror_build_info", "gauge" },
		{ "process_cpu_seconds_total", "counter" },
		{ "process_virtual_memory_bytes", "gauge" },
		{ "process_resident_memory_bytes", "gauge" },
		{ "process_open_fds", "gauge" },
		{ "process_start_time_seconds", "gauge" },
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
		strstr(text, "1 for the state it is in") != NULL,
	    "breaker HELP explains the states");
	ok(has_line("dbgmirror_build_info{version=\"" PACKAGE_VERSION "\"} 1"),
	    "build_info names the version, at 1");
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
	is_int(value("dbgmirror_sent_bytes_total"), 0, "no bytes sent yet");

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
	is_int(value("dbgmirror_sent_bytes_total"), 1234, "bytes sent summed");
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
	snprintf(series, sizeof(series),
	    "dbgmirror_upstream_breaker_state%s,state=\"probing\"}", esc);
	is_int(value(series), 1, "breaker probing: 1 for probing");
	snprintf(series, sizeof(series),
	    "dbgmirror_upstream_breaker_state%s,state=\"closed\"}", esc);
	is_int(value(series), 0, "... 0 for closed");
	snprintf(series, sizeof(series),
	    "dbgmirror_upstream_breaker_state%s,state=\"open\"}", esc);
	is_int(value(series), 0, "... 0 for open");
	is_int(value("dbgmirror_upstream_breaker_state{upstream="
		     "\"http://last\",state=\"open\"}"),
	    1, "the other breaker open");

	metrics_upstream_breaker(0, 0);
	render();
	snprintf(series, sizeof(series),
	    "dbgmirror_upstream_breaker_state%s,state=\"closed\"}", esc);
	is_int(value(series), 1, "breaker is a gauge, back to closed");
	snprintf(series, sizeof(series),
	    "dbgmirror_upstream_breaker_state%s,state=\"probing\"}", esc);
	is_int(value(series), 0, "... no longer probing");
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
	is_int(value("dbgmirror_sent_bytes_total"), 0, "init zeroes bytes");
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
timed_thread(void *arg)
{
	metrics_request(METRICS_EP_DEBUGINFO, METRICS_HIT);
	metrics_request_duration(METRICS_EP_DEBUGINFO, METRICS_HIT, 2.0);
	return arg;
}

/*
 * The per-minute rings minute by minute, with latencies, for the status
 * page's charts; t0 a minute's first second on the test clock.
 */
static void
test_minutes(time_t t0)
{
	struct metrics_minute m[METRICS_RECENT_MINUTES];
	pthread_t th;

	clock_set(t0);
	metrics_init();
	metrics_request(METRICS_EP_DEBUGINFO, METRICS_HIT);
	metrics_request_duration(METRICS_EP_DEBUGINFO, METRICS_HIT, 0.5);
	metrics_request(METRICS_EP_DEBUGINFO, METRICS_MISS);
	metrics_request_duration(METRICS_EP_DEBUGINFO, METRICS_MISS, 1.5);
	clock_set(t0 + 3 * 60 + 30);
	metrics_request(METRICS_EP_SOURCE, METRICS_NOTFOUND);
	metrics_request_duration(METRICS_EP_SOURCE, METRICS_NOTFOUND, 0.25);
	if (pthread_create(&th, NULL, timed_thread, NULL) == 0)
		pthread_join(th, NULL);
	metrics_minutes(m);
	is_int(m[0].results[METRICS_NOTFOUND] + m[0].results[METRICS_HIT], 2,
	    "minutes: this minute's not found and another thread's hit");
	is_int(m[0].timed, 2, "... two exchanges timed");
	ok(m[0].seconds > 2.249 && m[0].seconds < 2.251,
	    "... their durations added up (2.25 s)");
	ok(m[0].max_seconds > 1.999 && m[0].max_seconds < 2.001,
	    "... the longest, across threads (2 s)");
	is_int(m[3].results[METRICS_HIT] * 10 + m[3].results[METRICS_MISS], 11,
	    "three minutes before: a hit and a miss");
	ok(m[3].seconds > 1.999 && m[3].seconds < 2.001 &&
		m[3].max_seconds > 1.499 && m[3].max_seconds < 1.501,
	    "... 2 s in all, 1.5 s the longest");
	is_int(m[1].timed + m[2].timed + m[1].results[METRICS_HIT], 0,
	    "the minutes between: nothing");
	clock_set(t0 + METRICS_RECENT_MINUTES * 60);
	metrics_minutes(m);
	is_int(m[METRICS_RECENT_MINUTES - 1].timed, 0,
	    "an hour on: the first minute is gone ...");
	is_int(m[METRICS_RECENT_MINUTES - 3].timed, 2, "... the later kept");
	metrics_init();
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
	metrics_recent(60, &r);
	is_int(r.results[METRICS_HIT], 4, "... but in the last 60");
	clock_set(t0 + 61 * 60);
	metrics_recent(100, &r);
	is_int(r.results[METRICS_MISS] * 10 + r.results[METRICS_HIT], 10,
	    "61 minutes on, more minutes than kept: the last 60");
	clock_set(t0 + 62 * 60);
	metrics_recent(60, &r);
	is_int(r.results[METRICS_MISS], 0, "62 minutes on: not the miss");

	clock_set(t0 + 122 * 60); /* the first minute's bucket again */
	metrics_request(METRICS_EP_DEBUGINFO, METRICS_HIT);
	metrics_recent(1, &r);
	is_int(r.results[METRICS_HIT], 1,
	    "a bucket reused is reset: 1 hit, not 5");
	is_int(r.results[METRICS_NOTFOUND], 0, "... nor the old not found");

	metrics_init();
	metrics_recent(1, &r);
	is_int(r.results[METRICS_HIT], 0, "init zeroes the buckets");
	test_minutes(t0 + 200 * 60);
	unlink(clock_file); /* the real time again */
}

/* The histogram of request durations, by endpoint and result. */
static void
test_durations(void)
{
	const char *hit = "endpoint=\"debuginfo\",result=\"hit\"";
	char series[160];

	render();
	ok(has_line("# TYPE dbgmirror_request_duration_seconds histogram"),
	    "durations: a histogram");
	ok(strstr(text, "dbgmirror_request_duration_seconds_bucket") == NULL,
	    "... with no series before an observation");
	metrics_request_duration(METRICS_EP_DEBUGINFO, METRICS_HIT, 0.0004);
	metrics_request_duration(METRICS_EP_DEBUGINFO, METRICS_HIT, 0.002);
	metrics_request_duration(METRICS_EP_DEBUGINFO, METRICS_HIT, 0.002);
	metrics_request_duration(METRICS_EP_SOURCE, METRICS_NOTFOUND, 75);
	metrics_request_duration(METRICS_EP_OTHER, METRICS_BAD + 1, 1);
	render();
	snprintf(series, sizeof(series),
	    "dbgmirror_request_duration_seconds_bucket{%s,le=\"0.0005\"}", hit);
	is_int(value(series), 1, "a local hit under half a millisecond");
	snprintf(series, sizeof(series),
	    "dbgmirror_request_duration_seconds_bucket{%s,le=\"0.0025\"}", hit);
	is_int(value(series), 3, "... buckets are cumulative");
	snprintf(series, sizeof(series),
	    "dbgmirror_request_duration_seconds_count{%s}", hit);
	is_int(value(series), 3, "... count");
	snprintf(series, sizeof(series),
	    "dbgmirror_request_duration_seconds_sum{%s}", hit);
	is_str(value_str(series), "0.0044", "... sum in seconds");
	is_int(value("dbgmirror_request_duration_seconds_bucket{endpoint="
		     "\"source\",result=\"notfound\",le=\"60\"}"),
	    0, "75 s is beyond the last finite bucket");
	is_int(value("dbgmirror_request_duration_seconds_bucket{endpoint="
		     "\"source\",result=\"notfound\",le=\"+Inf\"}"),
	    1, "... in +Inf");
	ok(strstr(text, "endpoint=\"executable\",result=\"hit\",le=") == NULL,
	    "pairs never observed are left out");
	ok(strstr(text,
	       "dbgmirror_request_duration_seconds_count{endpoint="
	       "\"other\"") == NULL,
	    "a result out of range is ignored");

	is_int(metrics_result_of("HIT", 200), METRICS_HIT, "result: HIT");
	is_int(metrics_result_of("HIT", 206), METRICS_HIT, "... HIT, a range");
	is_int(metrics_result_of("JOINED", 200), METRICS_JOINED, "... JOINED");
	is_int(metrics_result_of("NEGATIVE", 404), METRICS_NEGATIVE,
	    "... NEGATIVE");
	is_int(metrics_result_of("MISS", 200), METRICS_MISS, "... MISS filled");
	is_int(metrics_result_of("MISS", 404), METRICS_NOTFOUND,
	    "... MISS found nowhere: notfound");
	is_int(metrics_result_of("ERROR", 502), METRICS_ERROR, "... ERROR");
	is_int(metrics_result_of("-", 400), METRICS_BAD, "... a bad request");
	is_int(metrics_result_of("DENIED", 401), METRICS_BAD, "... DENIED");
	is_int(metrics_result_of("-", 503), METRICS_ERROR, "... a 503");
	is_int(metrics_result_of("-", 200), METRICS_HIT,
	    "... the server's own page");
	is_int(metrics_result_of("-", 404), METRICS_NOTFOUND,
	    "... a path that names nothing");
}

/* The object store: its breaker as a labelled series, its queue. */
static void
test_store(void)
{
	struct metrics_store_state ss;

	metrics_store_read(&ss);
	ok(ss.name == NULL, "store: none named, none read");
	metrics_store_name("s3 http://127.0.0.1:1/bucket");
	metrics_store_breaker(1);
	metrics_store_queue(7);
	metrics_store_uploading(2);
	metrics_store(METRICS_STORE_UPLOADED);
	render();
	is_int(value("dbgmirror_store_breaker_state{store=\"s3 "
		     "http://127.0.0.1:1/bucket\",state=\"open\"}"),
	    1, "store breaker open: 1 for open");
	is_int(value("dbgmirror_store_breaker_state{store=\"s3 "
		     "http://127.0.0.1:1/bucket\",state=\"closed\"}"),
	    0, "... 0 for closed");
	is_int(value("dbgmirror_store_uploads_waiting{store=\"s3 "
		     "http://127.0.0.1:1/bucket\"}"),
	    7, "uploads waiting");
	is_int(value("dbgmirror_store_uploads_running{store=\"s3 "
		     "http://127.0.0.1:1/bucket\"}"),
	    2, "uploads running");
	metrics_store_read(&ss);
	ok(ss.name != NULL &&
		strcmp(ss.name, "s3 http://127.0.0.1:1/bucket") == 0 &&
		ss.breaker == 1 && ss.waiting == 7 && ss.running == 2 &&
		ss.counts[METRICS_STORE_UPLOADED] == 1,
	    "metrics_store_read: name, breaker, queue and counts");
}

/* The process_* metrics of a live process. */
static void
test_process(void)
{
	render();
	ok(value("process_open_fds") >= 3, "process_open_fds: at least 3");
	ok(value("process_resident_memory_bytes") > 1 << 20,
	    "process_resident_memory_bytes: more than a MiB");
	ok(value_str("process_cpu_seconds_total") != NULL,
	    "process_cpu_seconds_total");
	ok(value("process_max_fds") > 0, "process_max_fds");
}

/* 1 when name is a metric (colon) or label name of the exposition format. */
static int
name_ok(const char *p, size_t n, int colon)
{
	size_t i;

	if (n == 0 || (p[0] >= '0' && p[0] <= '9'))
		return 0;
	for (i = 0; i < n; i++)
		if (!((p[i] >= 'a' && p[i] <= 'z') ||
			(p[i] >= 'A' && p[i] <= 'Z') ||
			(p[i] >= '0' && p[i] <= '9') || p[i] == '_' ||
			(colon && p[i] == ':')))
			return 0;
	return 1;
}

static int
ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/*
 * Prometheus' naming: counters end in _total, nothing else does; a unit
 * (_seconds, _bytes) is the last word, before _total on a counter.
 */
static int
naming_ok(const char *name, const char *type)
{
	static const char *const units[] = { "_seconds", "_bytes" };
	size_t n = strlen(name), k;
	const char *u;

	if ((strcmp(type, "counter") == 0) != ends_with(name, n, "_total"))
		return 0;
	if (strcmp(type, "counter") == 0)
		n -= strlen("_total");
	for (k = 0; k < 2; k++)
		for (u = strstr(name, units[k]);
		     u != NULL && (size_t)(u - name) < n;
		     u = strstr(u + 1, units[k]))
			if ((size_t)(u - name) + strlen(units[k]) != n)
				return 0;
	return 1;
}

/* The family being read: its name, type, and a histogram's state. */
struct family {
	char name[128], type[16];
	char series[512]; /* labels but le of the buckets being read */
	double last; /* the last bucket's count */
	int inf; /* the last bucket read was +Inf */
};

/*
 * Read the labels of a sample at *lp ("{...}" or nothing): the ones but le
 * as "name=\"value\";" into labels, le's value into le.  0, or -1 when
 * they are malformed (names, quotes, escapes other than \\ \" \n).
 */
static int
read_labels(char **lp, char *labels, size_t llen, char *le, size_t lelen)
{
	char *p = *lp, *eq, *v;
	size_t used = 0;

	labels[0] = le[0] = '\0';
	if (*p != '{')
		return 0;
	for (p++; *p != '}'; p++) {
		if ((eq = strchr(p, '=')) == NULL ||
		    !name_ok(p, (size_t)(eq - p), 0) || eq[1] != '"')
			return -1;
		for (v = eq + 2; *v != '"'; v++) {
			if (*v == '\0')
				return -1;
			if (*v == '\\' && v[1] != '\\' && v[1] != '"' &&
			    v[1] != 'n')
				return -1;
			if (*v == '\\')
				v++;
		}
		if (strncmp(p, "le=", 3) == 0)
			snprintf(le, lelen, "%.*s", (int)(v - eq - 2), eq + 2);
		else if (used < llen)
			used += (size_t)snprintf(labels + used, llen - used,
			    "%.*s;", (int)(v + 1 - p), p);
		p = v + 1;
		if (*p == '}')
			break;
		if (*p != ',')
			return -1;
	}
	*lp = p + 1;
	return 0;
}

/* A TYPE line: the family it begins; problems counted. */
static int
type_line(const char *line, struct family *f, char (*seen)[128], size_t *nseen)
{
	char name[128], type[16];
	int problems = 0;
	size_t i;

	if (sscanf(line + 7, "%127s %15s", name, type) != 2 ||
	    !name_ok(name, strlen(name), 1) ||
	    (strcmp(type, "counter") != 0 && strcmp(type, "gauge") != 0 &&
		strcmp(type, "histogram") != 0)) {
		printf("# bad TYPE: %s\n", line);
		return 1;
	}
	for (i = 0; i < *nseen; i++)
		if (strcmp(seen[i], name) == 0) {
			printf("# TYPE again: %s\n", name);
			problems++;
		}
	if (*nseen < 64)
		snprintf(seen[(*nseen)++], sizeof(seen[0]), "%s", name);
	if (!naming_ok(name, type)) {
		printf("# naming: %s %s\n", name, type);
		problems++;
	}
	if (!f->inf) {
		printf("# %s: no +Inf bucket\n", f->name);
		problems++;
	}
	snprintf(f->name, sizeof(f->name), "%s", name);
	snprintf(f->type, sizeof(f->type), "%s", type);
	f->series[0] = '\0';
	f->inf = 1;
	return problems;
}

/* 1 when a sample named lname belongs to family f. */
static int
in_family(const char *lname, const struct family *f)
{
	size_t n = strlen(f->name);

	if (strcmp(f->type, "histogram") != 0)
		return strcmp(lname, f->name) == 0;
	return strncmp(lname, f->name, n) == 0 &&
	    (strcmp(lname + n, "_bucket") == 0 ||
		strcmp(lname + n, "_sum") == 0 ||
		strcmp(lname + n, "_count") == 0);
}

/* A histogram's sample: buckets cumulative to +Inf, which _count is. */
static int
histogram_sample(const char *line, const char *lname, const char *labels,
    const char *le, double v, struct family *f)
{
	int problems = 0;

	if (ends_with(lname, strlen(lname), "_bucket")) {
		if (strcmp(labels, f->series) != 0) {
			if (!f->inf) {
				printf("# %s{%s}: no +Inf bucket\n", f->name,
				    f->series);
				problems++;
			}
			snprintf(f->series, sizeof(f->series), "%s", labels);
			f->last = 0;
		}
		if (le[0] == '\0' || v < f->last) {
			printf("# bucket without le, or not cumulative: %s\n",
			    line);
			problems++;
		}
		f->last = v;
		f->inf = strcmp(le, "+Inf") == 0;
	} else if (ends_with(lname, strlen(lname), "_count") &&
	    (strcmp(labels, f->series) != 0 || v != f->last || !f->inf)) {
		printf("# count is not the +Inf bucket: %s\n", line);
		problems++;
	}
	return problems;
}

/*
 * Parse t as the text exposition format (version 0.0.4): each problem is
 * printed and counted.
 */
static int
check_exposition(const char *t)
{
	char seen[64][128], line[4096], lname[128], labels[512], le[32];
	struct family f = { "", "", "", 0, 1 };
	size_t nseen = 0, n, len;
	int problems = 0;
	const char *nl;
	char *lp, *end;
	double v;

	for (; *t != '\0'; t += len + (nl != NULL)) {
		nl = strchr(t, '\n');
		len = nl != NULL ? (size_t)(nl - t) : strlen(t);
		if (nl == NULL || len >= sizeof(line)) {
			printf("# no newline, or too long: %.60s\n", t);
			return problems + 1;
		}
		memcpy(line, t, len);
		line[len] = '\0';
		if (strncmp(line, "# TYPE ", 7) == 0) {
			problems += type_line(line, &f, seen, &nseen);
			continue;
		}
		if (line[0] == '#')
			continue;
		n = strcspn(line, "{ ");
		if (!name_ok(line, n, 1) || n >= sizeof(lname)) {
			printf("# bad name: %s\n", line);
			problems++;
			continue;
		}
		memcpy(lname, line, n);
		lname[n] = '\0';
		if (!in_family(lname, &f)) {
			printf("# sample outside its family: %s\n", line);
			problems++;
			continue;
		}
		lp = line + n;
		if (read_labels(&lp, labels, sizeof(labels), le, sizeof(le)) ==
		    -1) {
			printf("# bad labels: %s\n", line);
			problems++;
			continue;
		}
		if (*lp != ' ' || (v = strtod(lp + 1, &end), *end != '\0') ||
		    end == lp + 1) {
			printf("# bad value: %s\n", line);
			problems++;
			continue;
		}
		if (strcmp(f.type, "histogram") == 0)
			problems +=
			    histogram_sample(line, lname, labels, le, v, &f);
	}
	if (!f.inf) {
		printf("# %s: no +Inf bucket at the end\n", f.name);
		problems++;
	}
	return problems;
}

/* The whole text parses; and promtool, when installed, agrees. */
static void
test_exposition(void)
{
	FILE *p;
	int rc;

	render();
	is_int(check_exposition(text), 0, "the exposition parses, names ok");
	is_int(check_exposition("# TYPE x_bytes_sent_total counter\n"
				"x_bytes_sent_total 1\n"),
	    1, "the check refuses a unit before another word");
	is_int(check_exposition("# TYPE x_requests counter\nx_requests 1\n"), 1,
	    "... a counter without _total");
	is_int(check_exposition("# TYPE h_seconds histogram\n"
				"h_seconds_bucket{le=\"1\"} 2\n"
				"h_seconds_bucket{le=\"+Inf\"} 1\n"
				"h_seconds_count 1\n"),
	    1, "... buckets that are not cumulative");
	is_int(check_exposition("# TYPE g gauge\ng{a=\"x\\y\"} 1\n"), 1,
	    "... a bad escape");
	is_int(check_exposition("# TYPE g gauge\nh 1\n"), 1,
	    "... a sample outside its family");
	if (system("promtool --version >/dev/null 2>&1") != 0) {
		skip("promtool is not installed (Debian: prometheus)");
		return;
	}
	if ((p = popen("promtool check metrics >&2", "w")) == NULL) {
		ok(0, "run promtool");
		return;
	}
	fputs(text, p);
	rc = pclose(p);
	is_int(rc, 0, "promtool check metrics: no problem");
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
	start = value("process_start_time_seconds");
	ok(start >= (long long)before && start <= (long long)after,
	    "start time recorded by init");

	test_headers();
	test_requests();
	test_upstreams();
	test_out_of_range();
	test_gauges();
	test_threads();
	test_durations();
	test_store();
	test_process();
	test_exposition();
	test_reinit();
	test_recent();

	metrics_free();
	free(text);
	return tap_done();
}
