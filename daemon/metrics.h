/*
 * daemon/metrics.h: the counters and gauges behind /metrics, rendered in the
 * Prometheus text exposition format (version 0.0.4).
 *
 * Updates are lock-free and may come from any thread; so are the reads
 * the status page makes (metrics_recent(), metrics_upstream_read()).
 * metrics_init() and metrics_set_gauges() are start-up calls: make them
 * before other threads start using the module.  Upstreams are known by a
 * slot their owner gives them (sources/upstream.c), named with
 * metrics_upstream_name() from any thread; slots of METRICS_MAX_UPSTREAMS
 * and above are ignored everywhere, and only named upstreams that are
 * configured are rendered.
 */
#ifndef DAEMON_METRICS_H
#define DAEMON_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define METRICS_MAX_UPSTREAMS 32

/* Label endpoint="debuginfo|executable|section|source|metadata|other". */
enum metrics_endpoint {
	METRICS_EP_DEBUGINFO,
	METRICS_EP_EXECUTABLE,
	METRICS_EP_SECTION,
	METRICS_EP_SOURCE,
	METRICS_EP_METADATA,
	METRICS_EP_OTHER,
};

/* Label result="hit|miss|negative|joined|error|notfound|bad". */
enum metrics_result {
	METRICS_HIT,
	METRICS_MISS,
	METRICS_NEGATIVE,
	METRICS_JOINED,
	METRICS_ERROR,
	METRICS_NOTFOUND,
	METRICS_BAD,
};

/*
 * Label kind="connect|timeout|http|transfer|content|breaker".  Same order as
 * enum upstream_err in fetchers/upstream.h, so callers may cast.
 */
enum metrics_uperr {
	METRICS_UPERR_CONNECT,
	METRICS_UPERR_TIMEOUT,
	METRICS_UPERR_HTTP,
	METRICS_UPERR_TRANSFER,
	METRICS_UPERR_CONTENT,
	METRICS_UPERR_BREAKER,
};

/* Label reason="emfile|enfile" of a failed accept. */
enum metrics_accept_err {
	METRICS_ACCEPT_EMFILE,
	METRICS_ACCEPT_ENFILE,
};

/* Label reason="max_connections|descriptors" of a refused connection. */
enum metrics_refusal {
	METRICS_REFUSED_MAX_CONNECTIONS,
	METRICS_REFUSED_DESCRIPTORS,
};

/*
 * What the gauges callback fills in; it is handed a zeroed one.  The
 * eviction counts are counters kept by the cache, read like the gauges.
 */
struct metrics_gauges {
	uint64_t fills, fill_waiters, cache_entries, cache_bytes,
	    negative_entries, index_files, connections;
	uint64_t evictions, evicted_bytes;
	uint64_t cache_tmp_bytes; /* of fills not yet in the cache */
	uint64_t index_packages, index_members; /* servable members */
	uint64_t missing_ids; /* in the missing-id report */
	/* The current scan, or the last one when none runs. */
	struct metrics_scan {
		int running;
		uint64_t files_seen, files_queued, files_read;
		uint64_t packages_seen, packages_queued, packages_read;
		uint64_t members, errors, removed;
		int64_t started; /* unix seconds; 0: never */
		int64_t ended; /* of the last scan that ended; 0: none */
		uint64_t ended_ms; /* how long that one took */
	} scan;
};

/*
 * Zero every counter, forget upstream names and the gauges callback, and
 * record the start time.  Once before threads start; tests may call it again.
 */
void metrics_init(void);

void metrics_request(enum metrics_endpoint ep, enum metrics_result res);
/*
 * One exchange ended after seconds (request to last byte): the
 * dbgmirror_request_duration_seconds histogram, and the per-minute
 * latency of metrics_minutes().  res from metrics_result_of().
 */
void metrics_request_duration(enum metrics_endpoint ep, enum metrics_result res,
    double seconds);
/*
 * The result of an exchange from its X-Cache word (HIT, MISS, JOINED,
 * NEGATIVE, ERROR, ...; see the access log) and its status: a MISS or
 * anything else answered 404 is notfound, another 4xx bad, a 5xx error,
 * and what the server answered itself (its pages, admin requests,
 * uploads) a hit.
 */
enum metrics_result metrics_result_of(const char *xcache, int status);
void metrics_bytes_sent(uint64_t n);
/* One decompression pass over a package, extracting members. */
void metrics_package_pass(void);
/* A fill's bytes could not be written here (ENOSPC and the like). */
void metrics_local_write_error(void);

/* n requests that ended not-found were left out of the missing-id report. */
void metrics_misses_dropped(uint64_t n);
/* A worker's system call refused by its sandbox (async-signal-safe). */
void metrics_sandbox_refused(void);

/* accept() failed for want of descriptors. */
void metrics_accept_error(enum metrics_accept_err reason);
/* A connection closed at once, without being served. */
void metrics_connection_refused(enum metrics_refusal reason);

/* A TLS handshake failed (bad client certificate, no common protocol). */
void metrics_tls_handshake_failed(void);

/* Label reason="unauthorized|forbidden" of a request the rules denied. */
enum metrics_denial {
	METRICS_DENIED_UNAUTHORIZED, /* 401: no or bad credentials */
	METRICS_DENIED_FORBIDDEN, /* 403 */
};
void metrics_access_denied(enum metrics_denial reason);

/* Label result="created|same|conflict|rejected|unjudged" of an upload. */
enum metrics_upload {
	METRICS_UPLOAD_CREATED, /* 201: stored */
	METRICS_UPLOAD_SAME, /* 200: the same bytes were there */
	METRICS_UPLOAD_CONFLICT, /* 409: other bytes were there */
	METRICS_UPLOAD_REJECTED, /* not ELF, wrong id, too big, cut */
	METRICS_UPLOAD_UNJUDGED, /* 503: a source could not answer */
};
/* An upload ended with result; bytes of its body were received. */
void metrics_upload(enum metrics_upload result, uint64_t bytes);

/* The shared object store (conf/objstore.h), shown once it is named. */
enum metrics_store {
	METRICS_STORE_HIT, /* a lookup found a verified object */
	METRICS_STORE_MISS, /* no such object */
	METRICS_STORE_ERROR, /* a lookup failed (or was skipped: breaker) */
	METRICS_STORE_CORRUPT, /* an object whose bytes did not verify */
	METRICS_STORE_QUEUED, /* uploads queued */
	METRICS_STORE_UPLOADED,
	METRICS_STORE_UPLOAD_FAILED,
	METRICS_STORE_DROPPED, /* uploads dropped: queue full, store down */
	METRICS_STORE_DELETED, /* objects deleted (corrupt, purged) */
};
void metrics_store_name(const char *name);
void metrics_store(enum metrics_store what);
void metrics_store_breaker(int state);
/* Uploads to the store waiting in its queue, and under way. */
void metrics_store_queue(unsigned waiting);
void metrics_store_uploading(unsigned running);
/* What /status shows of the store; name NULL when there is none. */
struct metrics_store_state {
	const char *name; /* endpoint and bucket, without secrets */
	int breaker; /* 0 closed, 1 open, 2 probing */
	int credentials; /* 1 taken, 0 refused, -1 not answered yet */
	unsigned waiting, running;
	uint64_t counts[METRICS_STORE_DELETED + 1]; /* enum metrics_store */
};
void metrics_store_read(struct metrics_store_state *out);
/* The store's answer to the credentials: 1 taken, 0 refused, -1 unknown. */
void metrics_store_credentials(int ok);

/*
 * Upstream slot i is url's (copied), and rendered; a new url zeroes the
 * slot's counters.  NULL: its upstream left the configuration, and is
 * not rendered, its name and counters kept for if it comes back.
 */
void metrics_upstream_name(unsigned i, const char *url);
/* The slot named url, or METRICS_MAX_UPSTREAMS. */
unsigned metrics_upstream_find(const char *url);
void metrics_upstream_request(unsigned i);
/* One observation of the latency histogram, in seconds. */
void metrics_upstream_latency(unsigned i, double seconds);
void metrics_upstream_error(unsigned i, enum metrics_uperr kind);
void metrics_upstream_verify_failure(unsigned i);
/* Breaker state: 0 closed, 1 open, 2 probing. */
void metrics_upstream_breaker(unsigned i, int state);
/* "closed", "open", "probing": the state label of every breaker. */
const char *metrics_breaker_name(int state);

/*
 * Start-up: fn is called on the rendering thread at each render with g
 * zeroed, to fill in the gauges.  Without it they are rendered as 0.
 */
void metrics_set_gauges(void (*fn)(struct metrics_gauges *g, void *arg),
    void *arg);

/* Fill in g as a render would (zeroed first; the callback, if any). */
void metrics_gauges_read(struct metrics_gauges *g);

/* When metrics_init() ran: the process's start, unix seconds. */
int64_t metrics_start_time(void);

/*
 * Requests of the last minutes, for the status page: each thread counts
 * its own in a ring of per-minute buckets (minutes of clock_now()), so
 * the request path shares no cache line with other threads for it.
 * RESULTS[r] is the count of result r in the last `minutes` minutes,
 * the current one included; at most METRICS_RECENT_MINUTES.
 */
#define METRICS_RECENT_MINUTES 60
struct metrics_recent {
	uint64_t results[METRICS_BAD + 1];
};
void metrics_recent(unsigned minutes, struct metrics_recent *out);

/*
 * The same rings minute by minute: out[0] is the current minute, out[i]
 * the one i minutes before, METRICS_RECENT_MINUTES of them.  Latencies
 * are those of metrics_request_duration() in the minute the exchange
 * ended.
 */
struct metrics_minute {
	uint64_t results[METRICS_BAD + 1];
	uint64_t timed; /* exchanges timed */
	double seconds; /* their durations added up */
	double max_seconds; /* the longest */
};
void metrics_minutes(struct metrics_minute out[METRICS_RECENT_MINUTES]);

/* Upstream i's last error: its kind and when (clock_now()); 0: none. */
int64_t metrics_upstream_last_error(unsigned i, enum metrics_uperr *kind);
/* Requests, errors, and the mean latency of upstream i so far. */
struct metrics_upstream {
	uint64_t requests, errors, answers;
	double mean_seconds; /* over answers; 0 when none */
	int breaker; /* 0 closed, 1 open, 2 probing */
};
void metrics_upstream_read(unsigned i, struct metrics_upstream *out);
/* "connect", "timeout"... */
const char *metrics_uperr_name(enum metrics_uperr kind);

/*
 * The configuration's loads: at start-up (metrics_config_loaded), and each
 * reload (SIGHUP: daemon/reload.c) with its result and, failed, why.
 * Any thread.
 */
struct metrics_config {
	uint64_t reloads[2]; /* that succeeded, that failed */
	int64_t loaded; /* clock_now() of the configuration in effect */
	int64_t last; /* of the last reload; 0: none */
	int last_ok;
	char why[512]; /* the last reload failed: why */
};
void metrics_config_loaded(int64_t when);
void metrics_config_reload(int ok, int64_t when, const char *why);
void metrics_config_read(struct metrics_config *out);

/*
 * The exposition text, malloc'd and NUL-terminated, its strlen in *len;
 * NULL when out of memory.  The caller frees it.
 */
char *metrics_render(size_t *len);

/* Free the upstream name copies, for a leak-free exit. */
void metrics_free(void);

/*
 * Start-up call: fn(fp, arg) adds its own lines (whole metric families)
 * to every rendering, from the thread that renders.
 */
void metrics_set_extra(void (*fn)(FILE *fp, void *arg), void *arg);

#endif /* DAEMON_METRICS_H */
