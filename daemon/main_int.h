/*
 * daemon/main_int.h: what the daemon's own files share; nothing else
 * includes it.
 *
 * daemon/main.c holds the process's life (start-up, signals, reload,
 * maintenance, shutdown) and struct daemon, the state of it all;
 * daemon/scansched.c schedules the scans on that state: whole scans, the
 * batches of changes the watch gathers, /admin/rescan's counts.  Calls go
 * that way only: main.c calls scansched.c, never the reverse.
 *
 * Threads: struct daemon belongs to the main thread's loop (base), but
 * for the fields whose comments say otherwise: the atomics, and what a
 * scan's worker holds while it runs (daemon/scansched.c says which).
 */
#ifndef DAEMON_MAIN_INT_H
#define DAEMON_MAIN_INT_H

#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/util.h>

#include "cache/index.h"
#include "conf/config.h"
#include "daemon/reload.h"
#include "daemon/serve.h"
#include "resolver/resolve.h"
#include "sources/scan.h"

struct daemon {
	struct config cfg; /* at start-up: some parts keep pointers into it */
	struct config_args args; /* read again on SIGHUP */
	struct reload_parts parts;
	/*
	 * The configuration in effect, read on this loop (snap->cfg): the
	 * last reload's, or cfg's.
	 */
	struct snapshot *snap;
	struct event_base *base;
	struct pool *pool;
	struct pool_inbox *inbox;
	struct index *idx;
	struct blobstore *bs;
	struct flight_table *ft;
	struct resolve_deps rd; /* the request path: sources and their order */
	char via_token[40]; /* this process's name in Via headers */
	struct producers *prod;
	struct upstreams *upstreams;
	struct objstore *objstore; /* NULL: no object store */
	struct symbuilds *symbuild; /* the symbol tables built */
	struct symtabs *tabs; /* the symbol tables kept open */
	struct passes *passes;
	struct repos *repos; /* remote repositories */
	struct misses *misses; /* kept whatever misses-max says */
	struct httpd *httpd;
	struct event *maintain_ev;
	struct event *misses_ev; /* every second: write the missing ids */
	int maintaining;
	unsigned negative_max; /* for the maintenance job */
	struct event *rescan_ev;
	struct event *starting_ev; /* STATUS= while the repositories start */
	/*
	 * What the running scan (or batch of changes) scans: opts, made
	 * from scan_snap, the configuration it was started under, held to
	 * its end; pkg_roots its package roots, the repositories' package
	 * cache last when there are repositories.
	 */
	struct snapshot *scan_snap;
	struct scan_opts opts;
	char **pkg_roots;
	char tmpdir[PATH_MAX]; /* <cache-dir>/tmp, for package members */
	atomic_int cancel;
	int scanning; /* a whole scan or a batch of changes runs */
	int again; /* a rescan was asked for while one ran */
	/* /admin/rescan: asked for, and the last a finished scan covered */
	atomic_uint_fast64_t rescans_asked, rescans_done;
	atomic_int scan_running; /* scanning, for other threads */
	uint64_t scan_covers; /* rescans_asked when the scan started */
	struct event
	    *rescan_asked_ev; /* made active by scansched_rescan_request */
	struct serve_scans scans;
	int scan_rc;
	struct index_scan result;
	int64_t scan_t0; /* clock_mono_ns() at the scan's start */
	struct watch *watch; /* NULL: no inotify, the periodic rescan alone */
	int watch_renew; /* the scan roots changed: a new watch, then a scan */
	int watch_due; /* a batch of changes waits for the scan to end */
	struct scan_change *changes; /* the batch being scanned */
	size_t nchanges;
};

/*
 * A whole scan of the configuration in effect, now, or right after the
 * scan (or batch of changes) that is running.  Main thread.
 */
void scansched_start(struct daemon *d);
/* The scan that ran has ended: what it held goes.  Main thread. */
void scansched_drop(struct daemon *d);
/* The periodic rescan timer and /admin/rescan's wake-up: a scan. */
void scansched_rescan_cb(evutil_socket_t fd, short what, void *arg);
/* serve_scans.request and .counts (daemon/serve.h), on any thread. */
uint64_t scansched_rescan_request(void *arg);
void scansched_rescan_counts(void *arg, uint64_t *asked, uint64_t *done,
    int *running);

#endif
