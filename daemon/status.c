/*
 * daemon/status.c: /status, the page an operator keeps open.
 *
 * One self-contained HTML page (inline style, no script, no outside
 * asset) that reloads itself every STATUS_REFRESH seconds: uptime,
 * requests and hit ratio over the last minutes, the cache against its
 * cap, the fills in flight with their waiters, each source's health, the
 * most missed build-ids and the last warnings.  Everything comes from
 * what the daemon keeps anyway (daemon/metrics.h, the flight table, the
 * index, the log's ring), read without locks on the request path; the
 * render runs on a worker, since the gauges count what the index holds.
 *
 * Every string from outside (upstream names, build-ids, User-Agents, log
 * lines) is HTML-escaped.
 */
#include "daemon/status.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "autoconf.h"
#include "cache/flight.h"
#include "cache/index.h"
#include "cache/misses.h"
#include "conf/config.h"
#include "daemon/clock.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/misses.h"

#define STATUS_REFRESH 10
/* Rows of the tables that could grow without bound. */
#define FILLS_SHOWN 50
#define MISSES_SHOWN 10

static const char style[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;"
    "background:#fafafa}"
    "h1{font-size:1.4em;margin:0}h2{font-size:1.1em;margin:1.4em 0 .4em}"
    ".sub{color:#666;margin:.2em 0 1em}"
    "table{border-collapse:collapse;background:#fff}"
    "th,td{border:1px solid #ddd;padding:.25em .6em;text-align:left;"
    "vertical-align:top}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}"
    "code{font-size:.95em}"
    ".bar{width:30em;height:1em;border:1px solid #999;background:#fff}"
    ".bar div{height:100%;background:#4a8}"
    ".bar.high div{background:#d84}"
    ".ok{color:#262}.bad{color:#b22;font-weight:bold}.warn{color:#a60}"
    ".planned td{color:#888;font-style:italic}"
    ".none{color:#888}"
    "ul.log{font-family:monospace;font-size:.9em;padding-left:1.2em}";

/* fputs with HTML's special characters escaped. */
static void
put_html(FILE *fp, const char *s)
{
	for (; *s != '\0'; s++) {
		switch (*s) {
		case '<':
			fputs("&lt;", fp);
			break;
		case '>':
			fputs("&gt;", fp);
			break;
		case '&':
			fputs("&amp;", fp);
			break;
		case '"':
			fputs("&quot;", fp);
			break;
		default:
			putc(*s, fp);
		}
	}
}

/* Bytes as a person reads them: "1.5 GiB". */
static void
put_bytes(FILE *fp, uint64_t n)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB",
		"PiB" };
	double v = (double)n;
	size_t u = 0;

	while (v >= 1024 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		fprintf(fp, "%" PRIu64 " B", n);
	else
		fprintf(fp, "%.1f %s", v, unit[u]);
}

/* A duration in seconds as "3d 4h", "2h 5m", "4m 10s" or "7s". */
static void
put_duration(FILE *fp, int64_t s)
{
	if (s < 0)
		s = 0;
	if (s >= 86400)
		fprintf(fp, "%lldd %lldh", (long long)(s / 86400),
		    (long long)(s % 86400 / 3600));
	else if (s >= 3600)
		fprintf(fp, "%lldh %lldm", (long long)(s / 3600),
		    (long long)(s % 3600 / 60));
	else if (s >= 60)
		fprintf(fp, "%lldm %llds", (long long)(s / 60),
		    (long long)(s % 60));
	else
		fprintf(fp, "%llds", (long long)s);
}

static void
put_time(FILE *fp, int64_t t)
{
	char buf[32];
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%SZ", &tm);
	fputs(buf, fp);
}

/* ------------------------------------------------------------ requests */

/* The rows of the requests table: the results each adds up. */
#define RESULT(r) (1u << (r))
static const struct {
	const char *id; /* of its cells: ID-1m, ID-5m, ID-15m */
	const char *what;
	unsigned results; /* RESULT() of each */
} request_rows[] = {
	{ "requests", "requests", RESULT(METRICS_BAD + 1) - 1 },
	{ "hits", "hits", RESULT(METRICS_HIT) },
	{ "filled", "filled (from packages or upstreams)",
	    RESULT(METRICS_MISS) | RESULT(METRICS_JOINED) },
	{ "notfound", "not found", RESULT(METRICS_NOTFOUND) },
	{ "negative", "answered from a remembered miss or failure",
	    RESULT(METRICS_NEGATIVE) },
	{ "errors", "errors and bad requests",
	    RESULT(METRICS_ERROR) | RESULT(METRICS_BAD) },
};

static uint64_t
sum_of(const struct metrics_recent *r, unsigned results)
{
	uint64_t n = 0;
	unsigned k;

	for (k = 0; k <= METRICS_BAD; k++)
		if (results & RESULT(k))
			n += r->results[k];
	return n;
}

/* The windows of the requests table, in minutes. */
static const unsigned windows[3] = { 1, 5, 15 };

/* One row of the requests table: its results in each window. */
static void
put_request_row(FILE *fp, size_t k, const struct metrics_recent r[3])
{
	size_t i;

	fprintf(fp, "<tr><th>%s</th>", request_rows[k].what);
	for (i = 0; i < 3; i++)
		fprintf(fp, "<td class=\"n\" id=\"%s-%um\">%" PRIu64 "</td>",
		    request_rows[k].id, windows[i],
		    sum_of(&r[i], request_rows[k].results));
	fputs("</tr>\n", fp);
}

static void
render_requests(FILE *fp)
{
	struct metrics_recent r[3];
	uint64_t total;
	size_t i, k;

	for (i = 0; i < 3; i++)
		metrics_recent(windows[i], &r[i]);
	fputs("<section id=\"requests\"><h2>Requests</h2>\n<table>\n"
	      "<tr><th></th><th>last minute</th><th>last 5 minutes</th>"
	      "<th>last 15 minutes</th></tr>\n",
	    fp);
	put_request_row(fp, 0, r);
	fputs("<tr><th>hit ratio</th>", fp);
	for (i = 0; i < 3; i++) {
		total = sum_of(&r[i], request_rows[0].results);
		fprintf(fp, "<td class=\"n\" id=\"ratio-%um\">", windows[i]);
		if (total == 0)
			fputs("-", fp);
		else
			fprintf(fp, "%.0f%%",
			    100.0 * (double)r[i].results[METRICS_HIT] /
				(double)total);
		fputs("</td>", fp);
	}
	fputs("</tr>\n", fp);
	for (k = 1; k < sizeof(request_rows) / sizeof(request_rows[0]); k++)
		put_request_row(fp, k, r);
	fputs("</table>\n<p class=\"sub\">The hit ratio counts answers "
	      "from local files and the cache among all requests "
	      "answered.</p></section>\n",
	    fp);
}

/* --------------------------------------------------------------- cache */

static void
render_cache(FILE *fp, const struct config *cfg, const struct metrics_gauges *g)
{
	uint64_t used = g->cache_bytes + g->cache_tmp_bytes;
	unsigned pct = 0;

	fputs("<section id=\"cache\"><h2>Cache</h2>\n", fp);
	if (cfg->cache_size > 0) {
		pct = used >= cfg->cache_size
		    ? 100
		    : (unsigned)(used * 100 / cfg->cache_size);
		fprintf(fp,
		    "<div class=\"bar%s\" title=\"%u%%\"><div style=\"width:"
		    "%u%%\"></div></div>\n",
		    pct >= cfg->cache_high_watermark ? " high" : "", pct, pct);
	}
	fprintf(fp, "<p><span id=\"cache-used\">");
	put_bytes(fp, used);
	fputs("</span>", fp);
	if (cfg->cache_size > 0) {
		fputs(" of <span id=\"cache-cap\">", fp);
		put_bytes(fp, cfg->cache_size);
		fprintf(fp, "</span> (cache-size), %u%%", pct);
	} else {
		fputs(" (no cache-size cap)", fp);
	}
	fprintf(fp, "; files cached: %" PRIu64 "; ", g->cache_entries);
	put_bytes(fp, g->cache_tmp_bytes);
	fprintf(fp, " in fills not yet published; %" PRIu64 " evictions (",
	    g->evictions);
	put_bytes(fp, g->evicted_bytes);
	fprintf(fp,
	    "); %" PRIu64 " negative and error entries.</p></section>\n",
	    g->negative_entries);
}

/* --------------------------------------------------------------- fills */

static const char *
flight_state_name(enum flight_state s)
{
	switch (s) {
	case FLIGHT_WAITING:
		return "waiting for a source";
	case FLIGHT_STREAMING:
		return "streaming";
	case FLIGHT_READY:
		return "done";
	case FLIGHT_NOTFOUND:
		return "not found";
	case FLIGHT_FAILED:
		return "failed";
	case FLIGHT_UNAVAILABLE:
		return "no room here";
	case FLIGHT_TOOBIG:
		return "over its client's X-DEBUGINFOD-MAXSIZE";
	case FLIGHT_ABSENT:
		return "not where files are held";
	}
	return "?";
}

static void
render_fills(FILE *fp, struct flight_table *ft, const struct metrics_gauges *g)
{
	struct flight_info *fi;
	size_t n = 0, i;

	fprintf(fp,
	    "<section id=\"fills\"><h2>Fills in flight: <span "
	    "id=\"fills-count\">%" PRIu64 "</span>, with <span "
	    "id=\"fills-waiters\">%" PRIu64 "</span> waiting requests</h2>\n",
	    g->fills, g->fill_waiters);
	if (ft != NULL && (fi = calloc(FILLS_SHOWN, sizeof(*fi))) != NULL) {
		n = flight_table_list(ft, fi, FILLS_SHOWN);
		if (n > 0)
			fputs("<table><tr><th>what</th><th>source</th>"
			      "<th>state</th><th>bytes</th><th>waiters</th>"
			      "<th>age</th></tr>\n",
			    fp);
		for (i = 0; i < n; i++) {
			fputs("<tr class=\"fill\"><td><code>", fp);
			put_html(fp, fi[i].label);
			fputs("</code></td><td>", fp);
			put_html(fp,
			    fi[i].source[0] != '\0' ? fi[i].source : "-");
			fprintf(fp, "</td><td>%s</td><td class=\"n\">",
			    flight_state_name(fi[i].state));
			put_bytes(fp, fi[i].written);
			if (fi[i].length != UINT64_MAX) {
				fputs(" of ", fp);
				put_bytes(fp, fi[i].length);
			}
			fprintf(fp, "</td><td class=\"n\">%u</td><td>",
			    fi[i].watchers);
			put_duration(fp, fi[i].age_ns / 1000000000);
			fputs("</td></tr>\n", fp);
		}
		if (n > 0)
			fputs("</table>\n", fp);
		free(fi);
	}
	if (n == 0)
		fputs("<p class=\"none\">None.</p>\n", fp);
	fputs("</section>\n", fp);
}

/* ------------------------------------------------------------- sources */

static void
render_local(FILE *fp, const struct config *cfg, const struct metrics_gauges *g)
{
	const struct metrics_scan *sc = &g->scan;
	int64_t now = clock_now();
	size_t i;

	fputs("<tr id=\"source-local\"><td>local files", fp);
	for (i = 0; i < cfg->scan_dirs.n; i++) {
		fputs("<br><code>", fp);
		put_html(fp, cfg->scan_dirs.v[i]);
		fputs("</code>", fp);
	}
	fprintf(fp,
	    "</td><td class=\"%s\">%s</td><td>%" PRIu64 " files indexed",
	    cfg->scan_dirs.n > 0 ? "ok" : "none",
	    cfg->scan_dirs.n > 0 ? "scanned" : "none configured",
	    g->index_files);
	/* The scan reads scan-dir and scan-packages. */
	if (cfg->scan_dirs.n > 0 || cfg->scan_packages.n > 0) {
		if (sc->running) {
			fputs("; a scan is running since ", fp);
			put_duration(fp, now - sc->started);
		} else if (sc->ended != 0) {
			fputs("; the last scan ended ", fp);
			put_duration(fp, now - sc->ended);
			fputs(" ago", fp);
		}
		fprintf(fp, "; files it could not index: %" PRIu64, sc->errors);
	}
	fputs("</td></tr>\n", fp);
	fputs("<tr id=\"source-packages\"><td>package members", fp);
	for (i = 0; i < cfg->scan_packages.n; i++) {
		fputs("<br><code>", fp);
		put_html(fp, cfg->scan_packages.v[i]);
		fputs("</code>", fp);
	}
	fprintf(fp,
	    "</td><td class=\"%s\">%s</td><td>%" PRIu64 " packages, %" PRIu64
	    " servable members</td></tr>\n",
	    cfg->scan_packages.n > 0 ? "ok" : "none",
	    cfg->scan_packages.n > 0 ? "scanned" : "none configured",
	    g->index_packages, g->index_members);
}

static void
render_upstreams(FILE *fp, const struct config *cfg)
{
	static const char *const breaker[] = { "closed", "open", "probing" };
	static const char *const cls[] = { "ok", "bad", "warn" };
	struct metrics_upstream mu;
	enum metrics_uperr kind;
	int64_t last, now = clock_now();
	size_t i;
	int b;

	if (cfg->nupstreams == 0)
		fputs("<tr id=\"source-upstreams\"><td>upstreams</td><td "
		      "class=\"none\">none configured</td><td></td></tr>\n",
		    fp);
	for (i = 0; i < cfg->nupstreams && i < METRICS_MAX_UPSTREAMS; i++) {
		metrics_upstream_read((unsigned)i, &mu);
		b = mu.breaker >= 0 && mu.breaker <= 2 ? mu.breaker : 0;
		fputs("<tr class=\"upstream\"><td>upstream <code>", fp);
		put_html(fp, cfg->upstreams[i].name);
		if (!cfg->upstreams[i].enabled)
			fputs("</code></td><td class=\"none\">disabled</td>",
			    fp);
		else
			fprintf(fp,
			    "</code></td><td class=\"%s breaker\">breaker "
			    "%s</td>",
			    cls[b], breaker[b]);
		fprintf(fp, "<td>%" PRIu64 " requests, %" PRIu64 " errors; ",
		    mu.requests, mu.errors);
		if (mu.answers > 0)
			fprintf(fp,
			    "mean latency %.3f s over %" PRIu64 " answers",
			    mu.mean_seconds, mu.answers);
		else
			fputs("no answer yet", fp);
		if ((last = metrics_upstream_last_error((unsigned)i, &kind)) !=
		    0) {
			fprintf(fp,
			    "; last error: <span class=\"bad\">%s"
			    "</span> ",
			    metrics_uperr_name(kind));
			put_duration(fp, now - last);
			fputs(" ago", fp);
		}
		fputs("</td></tr>\n", fp);
	}
}

static void
render_sources(FILE *fp, const struct config *cfg,
    const struct metrics_gauges *g)
{
	fputs("<section id=\"sources\"><h2>Sources</h2>\n<table>"
	      "<tr><th>source</th><th>state</th><th>detail</th></tr>\n",
	    fp);
	render_local(fp, cfg, g);
	render_upstreams(fp, cfg);
	/*
	 * Room for the sources the design names that this version does not
	 * have: said so, never shown as if they were there.
	 */
	fputs("<tr class=\"planned\" id=\"source-repositories\"><td>remote "
	      "repositories</td><td>-</td><td>not in this version of "
	      "dbgmirror</td></tr>\n"
	      "<tr class=\"planned\" id=\"source-object-store\"><td>object "
	      "store</td><td>-</td><td>not in this version of "
	      "dbgmirror</td></tr>\n"
	      "</table></section>\n",
	    fp);
}

/* -------------------------------------------------------------- misses */

struct top {
	FILE *fp;
	unsigned shown;
};

static int
top_cb(const struct miss_info *mi, void *arg)
{
	struct top *t = arg;
	char id[BUILDID_HEX_MAX], kinds[64];

	if (t->shown == MISSES_SHOWN)
		return 1;
	if (t->shown++ == 0)
		fputs("<table><tr><th>count</th><th>last seen</th>"
		      "<th>kinds</th><th>build-id</th></tr>\n",
		    t->fp);
	buildid_format(&mi->id, id);
	fprintf(t->fp,
	    "<tr class=\"missing\"><td class=\"n\">%" PRIu64 "</td><td>",
	    mi->count);
	put_time(t->fp, mi->last);
	fprintf(t->fp, "</td><td>%s</td><td><code>%s</code></td></tr>\n",
	    misses_kinds(mi->kinds, kinds, sizeof(kinds)), id);
	return 0;
}

static void
render_misses(FILE *fp, struct index_reader *rd, const struct metrics_gauges *g)
{
	struct top t = { fp, 0 };

	fprintf(fp,
	    "<section id=\"misses\"><h2>Most missed build-ids (<span "
	    "id=\"missing-ids\">%" PRIu64 "</span> missing)</h2>\n",
	    g->missing_ids);
	if (rd != NULL && index_reader_begin(rd) == 0) {
		miss_walk(rd, top_cb, &t);
		index_reader_end(rd);
	}
	if (t.shown > 0)
		fputs("</table>\n", fp);
	else
		fputs("<p class=\"none\">None recorded.</p>\n", fp);
	/* Clients' addresses and User-Agents are for admins only. */
	fputs("<p class=\"sub\">All of them, with a client of each: "
	      "<code>dbgmirror misses</code> or <code>/admin/misses</code>."
	      "</p></section>\n",
	    fp);
}

/* -------------------------------------------------------------- errors */

struct errs {
	FILE *fp;
	unsigned n;
};

static void
err_cb(const char *line, void *arg)
{
	struct errs *e = arg;

	if (e->n++ == 0)
		fputs("<ul class=\"log\">\n", e->fp);
	fputs("<li>", e->fp);
	put_html(e->fp, line);
	fputs("</li>\n", e->fp);
}

static void
render_errors(FILE *fp)
{
	struct errs e = { fp, 0 };

	fputs("<section id=\"errors\"><h2>Recent errors</h2>\n", fp);
	log_recent(err_cb, &e);
	fputs(e.n > 0 ? "</ul>\n"
		      : "<p class=\"none\">No warning since the start.</p>\n",
	    fp);
	fputs("</section>\n", fp);
}

char *
status_render(const struct config *cfg, struct flight_table *ft,
    struct index_reader *rd, size_t *len)
{
	struct metrics_gauges g;
	char *buf = NULL;
	size_t size = 0;
	int64_t started = metrics_start_time(), now = clock_now();
	FILE *fp;
	int failed;

	if ((fp = open_memstream(&buf, &size)) == NULL)
		return NULL;
	metrics_gauges_read(&g);
	fprintf(fp,
	    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	    "<meta http-equiv=\"refresh\" content=\"%d\">"
	    /* An empty icon: browsers then ask for no /favicon.ico. */
	    "<link rel=\"icon\" href=\"data:,\">"
	    "<title>dbgmirror status</title><style>%s</style></head>\n<body>\n"
	    "<h1>dbgmirror " PACKAGE_VERSION "</h1>\n<p class=\"sub\">Up "
	    "<span id=\"uptime\">",
	    STATUS_REFRESH, style);
	put_duration(fp, now - started);
	fputs("</span>, since ", fp);
	put_time(fp, started);
	fprintf(fp,
	    "; connections open: <span id=\"connections\">%" PRIu64 "</span>; "
	    "this page reloads every %d s.</p>\n",
	    g.connections, STATUS_REFRESH);
	render_requests(fp);
	render_cache(fp, cfg, &g);
	render_fills(fp, ft, &g);
	render_sources(fp, cfg, &g);
	render_misses(fp, rd, &g);
	render_errors(fp);
	fputs("</body></html>\n", fp);
	failed = ferror(fp);
	if (fclose(fp) != 0 || failed) {
		free(buf);
		return NULL;
	}
	*len = size;
	return buf;
}
