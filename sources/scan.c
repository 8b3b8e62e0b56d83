/*
 * sources/scan.c: the incremental scan of local directories and packages:
 * a scan's state, and the whole scan (scan_run) with its record.
 *
 * A scan walks the scan-dir roots (sources/scanwalk.c), reading new and
 * changed local files as it goes (sources/scanfile.c), then the package
 * roots, reading new and changed packages (sources/scanpkg.c); each queue
 * of reads is committed in one write transaction, so results become
 * visible as the scan goes.  At the end, the records of the files and
 * packages the walk did not reach are dropped, for each kind of root that
 * was read completely, and the scan's record (struct index_scan) says how
 * it ended.  scan_changes() (sources/scanchange.c) runs the same readers
 * from the paths a directory watch saw change.
 *
 * Threads.  The daemon runs scan_run() as a long job of its worker pool
 * (daemon/main.c: at start-up, on SIGUSR1 and every rescan-interval, one
 * scan at a time), and the parallel reads run there too, so that a scan
 * never takes more than the pool's max_long workers and short jobs (the
 * requests' verify, publish, stat) always have theirs.  A queue is read
 * with pool_share_run(): the scan's own thread reads items like its
 * helpers, which are long jobs queued for the run; it then waits only for
 * the helpers that started, never for one still queued.  So with max_long
 * 1, where no helper can start while the scan holds the only long place,
 * the scan reads every item itself and cannot deadlock; with more places,
 * up to threads (or pkg_threads) read at once, helpers included.  Helpers
 * touch only the queue item they took (and the index through their own
 * readers); everything else, the walk, the counts and the commits, stays
 * on the scan's thread.  Without a pool (opts->pool NULL), it reads alone.
 */
#include <pthread.h>
#include <stdlib.h>

#include "cache/pkgindex.h"
#include "daemon/clock.h"
#include "daemon/log.h"
#include "daemon/pool.h"
#include "sources/scan_int.h"

struct scan *
scan_new(struct index *idx, const struct scan_opts *opts)
{
	struct scan *s;

	if ((s = calloc(1, sizeof(*s))) == NULL ||
	    (s->rd = index_reader_new(idx)) == NULL) {
		free(s);
		log_warnx("scan: out of memory");
		return NULL;
	}
	pthread_mutex_init(&s->lock, NULL);
	s->idx = idx;
	s->opts = opts;
	s->lim = pkg_default_limits;
	s->lim.min_free_pct = opts->min_free_pct;
	s->files.visit = scan_consider_file;
	s->pkgs.visit = scan_consider_package;
	/* Without it (out of memory), this thread reads alone. */
	s->share = pool_share_new(opts->pool);
	return s;
}

void
scan_free(struct scan *s)
{
	pool_share_free(s->share);
	index_reader_free(s->rd);
	free(s->files.seen.slot);
	free(s->pkgs.seen.slot);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* The prunes' keep(): a record stays when the walk reached its path. */
static int
keep_seen(const char *path, void *arg)
{
	return scan_reached(arg, path);
}

/*
 * Record the scan's counts; with prune, also drop the files and packages
 * that were not reached, for each kind of root that was read completely.
 */
static int
finish(struct scan *s, int prune)
{
	struct index_batch *b;
	uint64_t removed = 0;
	char err[256];

	if ((b = index_batch_begin(s->idx, err, sizeof(err))) == NULL)
		goto fail;
	if (prune && !s->files.incomplete)
		index_batch_prune(b, keep_seen, &s->files, &s->stats.removed);
	if (prune && !s->pkgs.incomplete &&
	    pkgidx_prune(b, keep_seen, &s->pkgs, &removed) == 0)
		s->stats.removed += removed;
	index_batch_set_scan(b, &s->stats);
	if (index_batch_commit(b, err, sizeof(err)) == -1)
		goto fail;
	return 0;
fail:
	log_warnx("scan: %s", err);
	return -1;
}

/* The scan starts: what the last one to end did is kept beside it. */
static void
start(struct scan *s)
{
	struct index_scan last;

	if (index_reader_begin(s->rd) == 0) {
		if (index_get_scan(s->rd, &last) == 0) {
			s->stats.ended = last.ended;
			s->stats.ended_ms = last.ended_ms;
			s->stats.outcome = last.outcome;
		}
		index_reader_end(s->rd);
	}
	s->stats.started = clock_now();
	s->t0 = clock_mono_ns();
	finish(s, 0);
}

int
scan_run(struct index *idx, const struct scan_opts *opts,
    struct index_scan *out)
{
	struct scan *s;
	int rc;

	if ((s = scan_new(idx, opts)) == NULL)
		return -1;
	start(s);

	scan_walk_roots(s, &s->files, opts->roots, opts->nroots);
	scan_flush_files(s);
	scan_relist_sources(s);
	if (opts->npkg_roots > 0 && opts->tmpdir == NULL) {
		log_warnx("scan: no directory for package members; packages "
			  "not scanned");
		s->pkgs.incomplete = 1;
	} else {
		scan_walk_roots(s, &s->pkgs, opts->pkg_roots, opts->npkg_roots);
		scan_flush_packages(s);
		scan_read_waiting(s);
	}

	s->stats.finished = s->stats.ended = clock_now();
	s->stats.ended_ms = (uint64_t)(clock_mono_ns() - s->t0) / 1000000;
	s->stats.outcome = atomic_load(opts->cancel) ? INDEX_SCAN_CANCELLED
	    : s->failed                              ? INDEX_SCAN_FAILED
						     : INDEX_SCAN_DONE;
	rc = s->stats.outcome == INDEX_SCAN_DONE ? 0 : -1;
	if (finish(s, rc == 0) == -1)
		rc = -1;
	if ((s->files.incomplete || s->pkgs.incomplete) && rc == 0)
		log_info("scan: some directories could not be read; records "
			 "of vanished files are kept until a complete scan");
	*out = s->stats;
	scan_free(s);
	return rc;
}
