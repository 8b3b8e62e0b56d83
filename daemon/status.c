/*
 * daemon/status.c: /status, the page an operator keeps open.
 *
 * One self-contained HTML page (inline style and SVG, no script, no
 * outside asset) that reloads itself every STATUS_REFRESH seconds:
 * uptime, the server (configuration file, listen addresses, the disk
 * against min-free-disk), charts of the last hour (requests per second,
 * hit ratio, latency), requests and hit ratio over the last minutes, the
 * cache against its cap, the fills in flight with their waiters, every
 * configured source's health (local files, packages, each remote
 * repository, the object store, each upstream), the most missed
 * build-ids and the last warnings.  Everything comes from what the daemon
 * keeps anyway (daemon/metrics.h, sources/repo.h, the flight table, the
 * index, the log's ring), read without locks on the request path; the
 * render runs on a worker, since the gauges count what the index holds
 * and the disk is asked how full it is.
 *
 * Every string from outside (upstream names, build-ids, User-Agents, log
 * lines, repository errors) is HTML-escaped.
 */
#include "daemon/status.h"

#include <sys/statvfs.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "autoconf.h"
#include "cache/flight.h"
#include "cache/index.h"
#include "cache/misses.h"
#include "cache/repoidx.h"
#include "conf/config.h"
#include "daemon/clock.h"
#include "daemon/http.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/misses.h"
#include "sources/repo.h"

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
    ".none{color:#888}"
    "ul.log{font-family:monospace;font-size:.9em;padding-left:1.2em}"
    ".charts{display:flex;flex-wrap:wrap;gap:1em}"
    "figure{margin:0;background:#fff;border:1px solid #ddd;padding:.4em}"
    "figcaption{font-size:.9em;color:#444}"
    "svg.chart rect.col{fill:#4a8}svg.chart rect.col.hits{fill:#48a}"
    "svg.chart rect.col.lat{fill:#a84}svg.chart text{font-size:10px;"
    "fill:#666}svg.chart line{stroke:#bbb}";

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

/* -------------------------------------------------------------- server */

/*
 * The configuration file, when it was loaded and whether the last reload
 * failed (and why), the addresses listened on, and the cache's file
 * system against min-free-disk (below it, eviction frees room and fills
 * are refused rather than filling the disk).
 */
static void
render_server(FILE *fp, const struct status_deps *sd)
{
	const struct config *cfg = sd->cfg;
	struct metrics_config mc;
	const char *a;
	struct statvfs vfs;
	uint64_t avail, total;
	unsigned pct;
	size_t i;

	fputs("<section id=\"server\"><h2>Server</h2>\n<table>\n"
	      "<tr><th>configuration</th><td id=\"config-file\">",
	    fp);
	if (cfg->config_file != NULL) {
		fputs("<code>", fp);
		put_html(fp, cfg->config_file);
		fputs("</code>", fp);
	} else {
		fputs("none: embedded defaults and the command line", fp);
	}
	metrics_config_read(&mc);
	fputs("</td></tr>\n<tr><th>loaded</th><td id=\"config-loaded\">", fp);
	put_time(fp, mc.loaded);
	if (mc.last != 0 && !mc.last_ok) {
		fputs("; <span class=\"bad\" id=\"config-reload\">the last "
		      "reload failed (",
		    fp);
		put_time(fp, mc.last);
		fputs("): ", fp);
		put_html(fp, mc.why);
		fputs("</span>; the configuration loaded before is in effect",
		    fp);
	}
	fputs("</td></tr>\n<tr><th>listening on</th><td>", fp);
	for (i = 0; i < cfg->nlisten; i++) {
		a = sd->httpd != NULL ? httpd_address(sd->httpd, i) : NULL;
		fputs(i > 0 ? "<br><code class=\"listen\">"
			    : "<code class=\"listen\">",
		    fp);
		put_html(fp, a != NULL ? a : cfg->listen[i].text);
		if (cfg->listen[i].tls)
			fputs(" (TLS)", fp);
		fputs("</code>", fp);
	}
	fputs("</td></tr>\n<tr><th>cache directory</th><td><code>", fp);
	put_html(fp, cfg->cache_dir);
	fputs("</code></td></tr>\n<tr><th>disk</th>", fp);
	if (statvfs(cfg->cache_dir, &vfs) == 0 && vfs.f_blocks > 0) {
		avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
		total = (uint64_t)vfs.f_blocks * vfs.f_frsize;
		pct = (unsigned)(avail * 100 / total);
		fprintf(fp, "<td id=\"disk-free\" class=\"%s\">",
		    pct < cfg->min_free_disk ? "bad" : "ok");
		put_bytes(fp, avail);
		fputs(" free of ", fp);
		put_bytes(fp, total);
		fprintf(fp,
		    " (%u%%); min-free-disk keeps %u%% free%s</td></tr>\n", pct,
		    cfg->min_free_disk,
		    pct < cfg->min_free_disk
			? ": below it, the cache is evicted and new fills "
			  "are refused"
			: "");
	} else {
		fputs("<td id=\"disk-free\" class=\"warn\">unknown: the "
		      "cache's "
		      "file system does not say</td></tr>\n",
		    fp);
	}
	fputs("</table></section>\n", fp);
}

/* -------------------------------------------------------------- charts */

/* The charts' frame: one bar per minute, an hour from left to right. */
#define CHART_W 600
#define CHART_H 100
#define CHART_BAR (CHART_W / METRICS_RECENT_MINUTES)
#define CHART_TOP 12 /* room for the scale's label */

/*
 * One chart: an inline SVG of METRICS_RECENT_MINUTES bars, v[i] the value
 * of the minute i minutes ago (none drawn for 0), scaled to top, each
 * with a tooltip; unit says what a value is ("req/s").
 */
static void
put_chart(FILE *fp, const char *id, const char *caption, const char *cls,
    const double *v, double top, const char *fmt, const char *unit)
{
	double h;
	int i, x;

	fprintf(fp,
	    "<figure><figcaption>%s</figcaption>\n<svg class=\"chart\" "
	    "id=\"%s\" role=\"img\" width=\"%d\" height=\"%d\" "
	    "viewBox=\"0 0 %d %d\" xmlns=\"http://www.w3.org/2000/svg\">"
	    "<title>%s, the last hour</title>\n",
	    caption, id, CHART_W, CHART_H + 14, CHART_W, CHART_H + 14, caption);
	fprintf(fp, "<line x1=\"0\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n", CHART_H,
	    CHART_W, CHART_H);
	for (i = METRICS_RECENT_MINUTES - 1; i >= 0; i--) {
		if (!(v[i] > 0) || !(top > 0))
			continue;
		h = v[i] / top * (CHART_H - CHART_TOP);
		if (h < 1)
			h = 1; /* something, however little, shows */
		x = (METRICS_RECENT_MINUTES - 1 - i) * CHART_BAR;
		fprintf(fp,
		    "<rect class=\"col %s\" x=\"%d\" y=\"%.1f\" width=\"%d\" "
		    "height=\"%.1f\"><title>",
		    cls, x, CHART_H - h, CHART_BAR - 1, h);
		if (i == 0)
			fputs("this minute: ", fp);
		else
			fprintf(fp, "%d min ago: ", i);
		fprintf(fp, fmt, v[i]);
		fprintf(fp, " %s</title></rect>\n", unit);
	}
	fprintf(fp, "<text x=\"2\" y=\"9\">");
	fprintf(fp, fmt, top);
	fprintf(fp,
	    " %s</text><text x=\"0\" y=\"%d\">60 min ago</text>"
	    "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">now</text>"
	    "</svg></figure>\n",
	    unit, CHART_H + 12, CHART_W, CHART_H + 12);
}

/*
 * Requests per second, the hit ratio and the mean latency of each minute
 * of the last hour (the minute under way counts the seconds it has had).
 */
static void
render_charts(FILE *fp)
{
	struct metrics_minute m[METRICS_RECENT_MINUTES];
	double rate[METRICS_RECENT_MINUTES], hits[METRICS_RECENT_MINUTES];
	double lat[METRICS_RECENT_MINUTES], top_rate = 0, top_lat = 0,
					    slowest = 0;
	uint64_t n;
	int i, k;

	metrics_minutes(m);
	for (i = 0; i < METRICS_RECENT_MINUTES; i++) {
		for (n = 0, k = 0; k <= METRICS_BAD; k++)
			n += m[i].results[k];
		rate[i] = (double)n / (i == 0 ? clock_now() % 60 + 1 : 60);
		hits[i] = n > 0
		    ? 100.0 * (double)m[i].results[METRICS_HIT] / (double)n
		    : 0;
		lat[i] = m[i].timed > 0
		    ? 1000 * m[i].seconds / (double)m[i].timed
		    : 0;
		if (rate[i] > top_rate)
			top_rate = rate[i];
		if (lat[i] > top_lat)
			top_lat = lat[i];
		if (m[i].max_seconds > slowest)
			slowest = m[i].max_seconds;
	}
	fputs("<section id=\"charts\"><h2>The last hour</h2>\n"
	      "<div class=\"charts\">\n",
	    fp);
	put_chart(fp, "chart-requests", "Requests per second", "", rate,
	    top_rate, "%.2f", "req/s");
	put_chart(fp, "chart-hits", "Hit ratio", "hits", hits, 100, "%.0f",
	    "%");
	put_chart(fp, "chart-latency", "Mean latency", "lat", lat, top_lat,
	    "%.1f", "ms");
	fprintf(fp,
	    "</div>\n<p class=\"sub\">One bar a minute.  The slowest answer "
	    "of the hour took <span id=\"slowest\">%.3f</span> s.</p>"
	    "</section>\n",
	    slowest);
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
	unsigned slot;
	size_t i;
	int b;

	if (cfg->nupstreams == 0)
		fputs("<tr id=\"source-upstreams\"><td>upstreams</td><td "
		      "class=\"none\">none configured</td><td></td></tr>\n",
		    fp);
	for (i = 0; i < cfg->nupstreams; i++) {
		slot = metrics_upstream_find(cfg->upstreams[i].name);
		metrics_upstream_read(slot, &mu);
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
		if ((last = metrics_upstream_last_error(slot, &kind)) != 0) {
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

/* "in 5m 3s" or "4m ago" of t against now. */
static void
put_when(FILE *fp, int64_t t, int64_t now)
{
	if (t > now) {
		fputs("in ", fp);
		put_duration(fp, t - now);
	} else {
		put_duration(fp, now - t);
		fputs(" ago", fp);
	}
}

/*
 * Each remote repository: its refreshes (state, the last one and its
 * result, the next one), what its index holds, and its breaker.
 */
static void
render_repos(FILE *fp, const struct status_deps *sd)
{
	static const char *const cls[] = { "warn", "warn", "ok", "bad" };
	static const char *const said[] = { "not refreshed yet", "refreshing",
		"refreshed", "refresh failed" };
	struct repos_state rs;
	struct repoidx_state is;
	int64_t now = clock_now();
	int reading;
	size_t i;

	if (sd->cfg->repos.n == 0) {
		fputs("<tr id=\"source-repositories\"><td>remote "
		      "repositories</td><td class=\"none\">none "
		      "configured</td><td></td></tr>\n",
		    fp);
		return;
	}
	reading = sd->rd != NULL && index_reader_begin(sd->rd) == 0;
	for (i = 0; repos_state(sd->repos, i, &rs) == 0; i++) {
		fprintf(fp,
		    "<tr class=\"repo\" id=\"repo-%zu\"><td>repository "
		    "<code>",
		    i);
		put_html(fp, rs.name);
		fprintf(fp, "</code></td><td class=\"%s state\">%s</td><td>",
		    cls[rs.state], said[rs.state]);
		if (rs.last_end != 0) {
			fputs("last refresh ended ", fp);
			put_when(fp, rs.last_end, now);
			if (rs.state == REPOS_FAILED) {
				fputs(": <span class=\"bad why\">", fp);
				put_html(fp, rs.why);
				fputs("</span>", fp);
			}
			fputs("; ", fp);
		}
		if (rs.last_ok != 0 && rs.last_ok != rs.last_end) {
			fputs("last success ", fp);
			put_when(fp, rs.last_ok, now);
			fputs("; ", fp);
		}
		fputs("next refresh ", fp);
		if (rs.next != 0)
			put_when(fp, rs.next, now);
		else
			fputs("on SIGUSR1 only (repo-refresh 0)", fp);
		if (reading && repoidx_state(sd->rd, rs.key, &is) == 0)
			fprintf(fp,
			    "; <span class=\"ids\">%" PRIu64
			    "</span> build-ids "
			    "in %" PRIu64 " packages",
			    is.ids, is.pkgs);
		if (rs.open_until > now) {
			fputs("; <span class=\"bad\">breaker open</span>: "
			      "its packages are skipped for ",
			    fp);
			put_duration(fp, rs.open_until - now);
		}
		fputs("</td></tr>\n", fp);
	}
	if (reading)
		index_reader_end(sd->rd);
}

/* The object store: its breaker, its credentials, its queue, its counts. */
static void
render_store(FILE *fp)
{
	static const char *const cls[] = { "ok", "bad", "warn" };
	static const char *const creds[] = { "refused", "accepted",
		"not checked yet" };
	struct metrics_store_state st;
	int b;

	metrics_store_read(&st);
	if (st.name == NULL) {
		fputs("<tr id=\"source-object-store\"><td>object store</td>"
		      "<td class=\"none\">none configured</td><td></td></tr>\n",
		    fp);
		return;
	}
	b = st.breaker >= 0 && st.breaker <= 2 ? st.breaker : 0;
	fputs("<tr id=\"source-object-store\"><td>object store <code>", fp);
	put_html(fp, st.name);
	fprintf(fp,
	    "</code></td><td class=\"%s breaker\">breaker %s</td><td>"
	    "credentials %s; uploads: <span id=\"store-waiting\">%u</span> "
	    "waiting, <span id=\"store-running\">%u</span> running, %" PRIu64
	    " done, %" PRIu64 " failed, %" PRIu64 " dropped; lookups: %" PRIu64
	    " hits, %" PRIu64 " misses, %" PRIu64 " errors; %" PRIu64
	    " corrupt objects deleted</td></tr>\n",
	    cls[b], metrics_breaker_name(b),
	    creds[st.credentials == 1     ? 1
		    : st.credentials == 0 ? 0
					  : 2],
	    st.waiting, st.running, st.counts[METRICS_STORE_UPLOADED],
	    st.counts[METRICS_STORE_UPLOAD_FAILED],
	    st.counts[METRICS_STORE_DROPPED], st.counts[METRICS_STORE_HIT],
	    st.counts[METRICS_STORE_MISS], st.counts[METRICS_STORE_ERROR],
	    st.counts[METRICS_STORE_CORRUPT]);
}

/* In the resolver's order: local, packages, repositories, store, upstreams. */
static void
render_sources(FILE *fp, const struct status_deps *sd,
    const struct metrics_gauges *g)
{
	fputs("<section id=\"sources\"><h2>Sources</h2>\n<table>"
	      "<tr><th>source</th><th>state</th><th>detail</th></tr>\n",
	    fp);
	render_local(fp, sd->cfg, g);
	render_repos(fp, sd);
	render_store(fp);
	render_upstreams(fp, sd->cfg);
	fputs("</table></section>\n", fp);
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
status_render(const struct status_deps *sd, size_t *len)
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
	render_server(fp, sd);
	render_charts(fp);
	render_requests(fp);
	render_cache(fp, sd->cfg, &g);
	render_fills(fp, sd->ft, &g);
	render_sources(fp, sd, &g);
	render_misses(fp, sd->rd, &g);
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
