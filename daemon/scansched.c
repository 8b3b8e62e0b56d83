/*
 * daemon/scansched.c: when the daemon scans.  One scan at a time, on a
 * long worker of the pool (sources/scan.h): a whole scan at start-up, on
 * the periodic rescan timer, SIGUSR1, SIGHUP and /admin/rescan; between
 * whole scans, each batch of paths the inotify watch saw change
 * (daemon/watch.c) scanned alone.  A scan asked for while one runs
 * follows it (once, however often it was asked), then the batch of
 * changes that waited; a watch that lost events asks for a whole scan,
 * and so do new scan roots, for which the watch is made again first.
 * Each scan holds the configuration it started under (scan_take) to its
 * end (scansched_drop).
 *
 * Threads: the main thread's loop runs all of it, but scan_work and
 * changes_work, on the worker, with watch_dir_cb, which the scan calls
 * there; while d->scanning is set the worker owns d->opts, d->pkg_roots,
 * d->changes, d->result and d->scan_rc, which the loop reads again in the
 * done callbacks the pool's inbox runs on it.  scansched_rescan_request
 * and scansched_rescan_counts run on the event-loop threads, and touch
 * only the atomics and the event they make active.
 */
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "daemon/clock.h"
#include "daemon/log.h"
#include "daemon/main_int.h"
#include "daemon/notify.h"
#include "daemon/pool.h"
#include "daemon/snapshot.h"
#include "daemon/watch.h"
#include "sources/repo.h"
#include "sources/scan.h"

static void watch_ready_cb(void *arg);
static void watch_dir_cb(const char *path, int root, int pkg, void *arg);

/*
 * A watch of the scan roots in effect, in place of the one before (the
 * roots changed, or none was made yet); the scan that follows adds their
 * directories to it.  Only while no scan runs: a scan's worker uses it.
 */
static void
watch_renew(struct daemon *d)
{
	const struct config *cfg = d->snap->cfg;
	char err[512];

	d->watch_renew = 0;
	d->watch_due = 0;
	watch_free(d->watch);
	d->watch = NULL;
	if (cfg->scan_dirs.n + cfg->scan_packages.n == 0)
		return;
	if ((d->watch = watch_new(d->base, watch_ready_cb, d, err,
		 sizeof(err))) == NULL)
		log_warnx("%s; new files are found by the periodic rescan "
			  "alone",
		    err);
}

/*
 * What the scan about to start scans, from the configuration in effect,
 * which it holds to its end (scansched_drop): the roots, the package roots
 * (the repositories' package cache last when there are repositories),
 * the limits.  -1 when out of memory.
 */
static int
scan_take(struct daemon *d)
{
	const struct config *cfg = d->snap->cfg;
	size_t n = cfg->scan_packages.n, i;
	char path[PATH_MAX];

	if ((d->pkg_roots = calloc(n + 1, sizeof(char *))) == NULL)
		return -1;
	for (i = 0; i < n; i++)
		d->pkg_roots[i] = cfg->scan_packages.v[i];
	/* Packages downloaded from repositories are indexed packages too. */
	if (repos_count(d->repos) > 0) {
		snprintf(path, sizeof(path), "%s/repo-packages",
		    cfg->cache_dir);
		if ((d->pkg_roots[n] = strdup(path)) == NULL) {
			free(d->pkg_roots);
			d->pkg_roots = NULL;
			return -1;
		}
	}
	d->scan_snap = snapshot_ref(d->snap);
	memset(&d->opts, 0, sizeof(d->opts));
	d->opts.roots = cfg->scan_dirs.v;
	d->opts.nroots = cfg->scan_dirs.n;
	d->opts.pool = d->pool;
	d->opts.threads = cfg->workers;
	d->opts.pkg_roots = d->pkg_roots;
	d->opts.npkg_roots = n + (d->pkg_roots[n] != NULL);
	d->opts.pkg_threads = cfg->package_jobs;
	d->opts.tmpdir = d->tmpdir;
	d->opts.min_free_pct = cfg->min_free_disk;
	d->opts.cancel = &d->cancel;
	if (d->watch != NULL) {
		d->opts.dir_cb = watch_dir_cb;
		d->opts.dir_arg = d;
	}
	return 0;
}

/* The scan that ran has ended: what it held goes. */
void
scansched_drop(struct daemon *d)
{
	if (d->scan_snap == NULL)
		return;
	free(d->pkg_roots[d->scan_snap->cfg->scan_packages.n]);
	free(d->pkg_roots);
	d->pkg_roots = NULL;
	snapshot_unref(d->scan_snap);
	d->scan_snap = NULL;
}

static void
scan_work(void *arg)
{
	struct daemon *d = arg;

	d->scan_rc = scan_run(d->idx, &d->opts, &d->result);
}

static void changes_start(struct daemon *d);

/* What follows a scan: a rescan asked for meanwhile, or the changes. */
static void
scan_next(struct daemon *d)
{
	if (d->again) {
		d->again = 0;
		scansched_start(d);
	} else if (d->watch_due) {
		d->watch_due = 0;
		changes_start(d);
	}
}

static void
changes_work(void *arg)
{
	struct daemon *d = arg;

	d->scan_rc =
	    scan_changes(d->idx, &d->opts, d->changes, d->nchanges, &d->result);
}

static void
changes_done(void *arg)
{
	struct daemon *d = arg;
	double secs = (double)(clock_mono_ns() - d->scan_t0) / 1e9;
	const struct index_scan *r = &d->result;

	d->scanning = 0;
	scansched_drop(d);
	if (atomic_load(&d->cancel))
		return;
	if (d->scan_rc == -1)
		log_warnx("watch: the scan of %zu changed paths failed",
		    d->nchanges);
	else if (r->read > 0 || r->removed > 0 || r->packages > 0)
		log_info("watch: %zu changed path%s scanned in %.2fs: %llu "
			 "files read, %llu removed, %llu not indexable, %llu "
			 "packages read",
		    d->nchanges, d->nchanges == 1 ? "" : "s", secs,
		    (unsigned long long)r->read, (unsigned long long)r->removed,
		    (unsigned long long)r->failed,
		    (unsigned long long)r->packages);
	else
		log_debug("watch: %zu changed path%s scanned in %.2fs: "
			  "nothing new",
		    d->nchanges, d->nchanges == 1 ? "" : "s", secs);
	watch_changes_free(d->changes, d->nchanges);
	d->changes = NULL;
	d->nchanges = 0;
	scan_next(d);
}

/* Scan the batch of changes the watch gathered (or all, if it lost some). */
static void
changes_start(struct daemon *d)
{
	int full;

	if (d->scanning) {
		d->watch_due = 1;
		return;
	}
	/* The roots changed: the whole scan that is due anyway. */
	if (d->watch_renew) {
		scansched_start(d);
		return;
	}
	if (!watch_take(d->watch, &d->changes, &d->nchanges, &full))
		return;
	if (full) {
		watch_changes_free(d->changes, d->nchanges);
		d->changes = NULL;
		d->nchanges = 0;
		scansched_start(d);
		return;
	}
	if (scan_take(d) == -1) {
		log_warnx("%s: out of memory: the changes wait for a scan",
		    __func__);
		watch_changes_free(d->changes, d->nchanges);
		d->changes = NULL;
		d->nchanges = 0;
		return;
	}
	d->scan_t0 = clock_mono_ns();
	d->scanning = 1;
	if (pool_submit_long(d->pool, changes_work, d->inbox, changes_done,
		d) == -1) {
		d->scanning = 0;
		scansched_drop(d);
		log_warnx("%s: cannot queue the scan of changes", __func__);
		watch_changes_free(d->changes, d->nchanges);
		d->changes = NULL;
		d->nchanges = 0;
	}
}

/* The watch has a batch ready. */
static void
watch_ready_cb(void *arg)
{
	changes_start(arg);
}

/*
 * scan_opts.dir_cb: watch what the scan walks, but the package cache of
 * the repositories, whose downloads are indexed as they are made.
 */
static void
watch_dir_cb(const char *path, int root, int pkg, void *arg)
{
	struct daemon *d = arg;
	const char *repo_pkgs;
	size_t n;

	repo_pkgs = d->pkg_roots[d->scan_snap->cfg->scan_packages.n];
	if (pkg && repo_pkgs != NULL) {
		n = strlen(repo_pkgs);
		if (strncmp(path, repo_pkgs, n) == 0 &&
		    (path[n] == '\0' || path[n] == '/'))
			return;
	}
	watch_dir(d->watch, path, root, pkg);
}

static void
scan_done(void *arg)
{
	struct daemon *d = arg;
	double secs = (double)(clock_mono_ns() - d->scan_t0) / 1e9;
	const struct config *cfg = d->scan_snap->cfg;
	int repos = d->opts.npkg_roots > cfg->scan_packages.n;

	d->scanning = 0;
	atomic_store(&d->scan_running, 0);
	if (atomic_load(&d->cancel)) {
		scansched_drop(d);
		return;
	}
	atomic_store(&d->rescans_done, d->scan_covers);
	/* It says what it scanned: no file counts where no scan-dir is. */
	if (d->scan_rc == 0 && cfg->scan_dirs.n + cfg->scan_packages.n > 0)
		log_info("scan finished in %.2fs: %llu files seen, %llu read, "
			 "%llu removed, %llu not indexable, %llu packages read "
			 "(%llu members)",
		    secs, (unsigned long long)d->result.seen,
		    (unsigned long long)d->result.read,
		    (unsigned long long)d->result.removed,
		    (unsigned long long)d->result.failed,
		    (unsigned long long)d->result.packages,
		    (unsigned long long)d->result.members);
	else if (d->scan_rc == 0 && repos)
		log_info("scan finished in %.2fs: the packages the "
			 "repositories downloaded (%s/repo-packages): %llu "
			 "read (%llu members), %llu records of vanished ones "
			 "removed",
		    secs, cfg->cache_dir,
		    (unsigned long long)d->result.packages,
		    (unsigned long long)d->result.members,
		    (unsigned long long)d->result.removed);
	else if (d->scan_rc == 0 && d->result.removed > 0)
		log_info("scan finished in %.2fs: nothing to scan (no "
			 "scan-dir, scan-packages or repo); %llu records of "
			 "what was scanned before removed",
		    secs, (unsigned long long)d->result.removed);
	else if (d->scan_rc == 0)
		log_info("scan finished in %.2fs: nothing to scan (no "
			 "scan-dir, scan-packages or repo)",
		    secs);
	else
		log_warnx("scan failed after %.2fs", secs);
	/* Until they are ready, STATUS= is the repositories' progress. */
	if (!repos_starting(d->repos))
		notify_status("serving; last scan %s after %.2fs: %llu files "
			      "read, %llu packages read",
		    d->scan_rc == 0 ? "finished" : "failed", secs,
		    (unsigned long long)d->result.read,
		    (unsigned long long)d->result.packages);
	scansched_drop(d);
	scan_next(d);
}

void
scansched_start(struct daemon *d)
{
	if (d->scanning) {
		d->again = 1;
		return;
	}
	if (d->watch_renew)
		watch_renew(d);
	if (scan_take(d) == -1) {
		log_warnx("%s: out of memory: no scan", __func__);
		return;
	}
	d->scan_t0 = clock_mono_ns();
	d->scanning = 1;
	atomic_store(&d->scan_running, 1);
	d->scan_covers = atomic_load(&d->rescans_asked);
	if (pool_submit_long(d->pool, scan_work, d->inbox, scan_done, d) ==
	    -1) {
		d->scanning = 0;
		atomic_store(&d->scan_running, 0);
		scansched_drop(d);
		log_warnx("%s: cannot queue the scan", __func__);
	}
}

void
scansched_rescan_cb(evutil_socket_t fd, short what, void *arg)
{
	scansched_start(arg);
}

/*
 * /admin/rescan, on an event-loop thread: count the request, and wake
 * the main loop to start a scan (or one more after the running one).
 */
uint64_t
scansched_rescan_request(void *arg)
{
	struct daemon *d = arg;
	uint64_t n = atomic_fetch_add(&d->rescans_asked, 1) + 1;

	event_active(d->rescan_asked_ev, 0, 0);
	return n;
}

void
scansched_rescan_counts(void *arg, uint64_t *asked, uint64_t *done,
    int *running)
{
	struct daemon *d = arg;

	*asked = atomic_load(&d->rescans_asked);
	*done = atomic_load(&d->rescans_done);
	*running = atomic_load(&d->scan_running);
}
