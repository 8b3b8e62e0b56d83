/*
 * daemon/main.c: dbgmirrord, the daemon's process life.
 *
 * Start-up reads the configuration, opens the index, binds every listen
 * address (any failure here exits non-zero with a message), then starts the
 * event-loop threads and the first scan.  The main thread keeps its own
 * small event loop for signals and scan scheduling:
 *
 *   SIGTERM, SIGINT  stop accepting, finish responses in flight (bounded by
 *                    shutdown-timeout), cancel a running scan, exit 0;
 *                    from then on every one of these signals is ignored,
 *                    so a second SIGTERM cannot cut the shutdown short
 *   SIGUSR1          rescan now (or right after the scan that is running);
 *                    POST /admin/rescan (dbgmirror rescan) asks the same
 *                    from an event-loop thread, counted so that it can
 *                    tell when a scan that covers it has finished
 *   SIGUSR2          reopen the access-log file (after logrotate moved it)
 *   SIGHUP           reload, told to systemd as one (RELOADING=1, then
 *                    READY=1 once every event-loop thread has switched
 *                    to the new configuration): the access-log file
 *                    reopened, the TLS listeners' certificates, keys and
 *                    client CAs read again, then the configuration
 *                    (daemon/reload.c: what changed applies, what
 *                    cannot is logged as needing a restart), then the
 *                    same rescan.  Each
 *                    security-relevant file fails closed: a listener
 *                    whose files do not load refuses connections, a
 *                    token line that does not parse is dropped, a token
 *                    file that cannot be read leaves none of its tokens
 *                    valid, a configuration that does not load keeps no
 *                    access rule it no longer has
 *
 * Scans run on the worker pool, one at a time (daemon/scansched.c says
 * when); their completion comes back to this loop, which also runs the
 * periodic rescan timer and reads the inotify watch of the scan
 * directories (daemon/watch.c): each batch of paths it saw change is
 * scanned alone (scan_changes), between whole scans, so a new debug file
 * is served within a second or so; the periodic rescan remains the safety
 * net, and the watch asks for a whole scan when it lost events.
 *
 * With remote repositories, the service manager hears READY=1 once their
 * first refreshes have ended, or repo-ready-timeout has passed
 * (sources/repo.h: repos_when_ready()), and meanwhile a STATUS= line of
 * how far they got, at each step and every second.
 *
 * Started as root, it gives root up before it opens anything in its cache
 * (daemon/priv.c): it becomes the configured user keeping only the right
 * to bind low ports, and drops that too once the listeners are bound.
 * Without a user to become, it refuses to run as root.  The worker pool's
 * threads, which parse every file and package from outside, are fenced in
 * as they start (daemon/sandbox.c).
 *
 * This loop also drives the fills from the network (resolver/produce.c: libcurl
 * runs here), and every MAINTAIN_SECONDS a maintenance job on the pool
 * writes the access times of cache hits, evicts beyond the cache's
 * watermarks and drops expired negative entries.
 */
#include <sys/file.h>

#include <sys/resource.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <limits.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/common_interface_defs.h>
#endif

#include "cache/blobstore.h"
#include "cache/flight.h"
#include "cache/files.h"
#include "cache/index.h"
#include "cache/misses.h"
#include "cache/negative.h"
#include "cache/pkgindex.h"
#include "conf/check.h"
#include "conf/config.h"
#include "conf/help.h"
#include "autoconf.h"
#include "daemon/http.h"
#include "daemon/clock.h"
#include "daemon/hints.h"
#include "daemon/log.h"
#include "daemon/main_int.h"
#include "daemon/metrics.h"
#include "daemon/misses.h"
#include "daemon/notify.h"
#include "daemon/pool.h"
#include "daemon/priv.h"
#include "daemon/reload.h"
#include "daemon/sandbox.h"
#include "daemon/access.h"
#include "daemon/serve.h"
#include "daemon/snapshot.h"
#include "daemon/spawn.h"
#include "daemon/symtabs.h"
#include "daemon/watch.h"
#include "fetchers/upstream.h"
#include "resolver/produce.h"
#include "resolver/resolve.h"
#include "sources/objstore.h"
#include "sources/pass.h"
#include "sources/repo.h"
#include "sources/scan.h"
#include "sources/sources.h"
#include "sources/symbuild.h"
#include "sources/upstream.h"
#include "indexer/elf.h"

#define MAINTAIN_SECONDS 5

static int uploads_possible(const struct config *cfg);

/* ---------------------------------------------------------- maintenance */

/*
 * Say, at most every ten minutes, when the index map is filling up: past
 * 90% new negative entries are refused, and at 100% nothing is indexed.
 */
static void
index_warn_full(struct daemon *d)
{
	static int64_t warned;
	uint64_t used, size;
	int64_t now = clock_mono_ns() / 1000000000;

	if (index_usage(d->idx, &used, &size) == -1 ||
	    used <= size / 100 * 80 || (warned != 0 && now - warned < 600))
		return;
	warned = now;
	log_warnx("the index is %llu%% full (%llu of %llu MiB): raise "
		  "index-map-size",
	    (unsigned long long)(used * 100 / size),
	    (unsigned long long)(used >> 20), (unsigned long long)(size >> 20));
}

static void
maintain_work(void *arg)
{
	struct daemon *d = arg;
	uint64_t n = 0, bytes = 0;
	char err[256];

	if (blob_flush_touches(d->bs, err, sizeof(err)) == -1)
		log_warnx("%s: %s", __func__, err);
	if (blob_evict(d->bs, &n, &bytes, err, sizeof(err)) == -1)
		log_warnx("%s: %s", __func__, err);
	else if (n > 0)
		log_info("evicted %llu cache entries, %llu bytes",
		    (unsigned long long)n, (unsigned long long)bytes);
	if (neg_expire(d->idx, clock_now(), d->negative_max, &n, err,
		sizeof(err)) == -1)
		log_warnx("%s: %s", __func__, err);
	index_warn_full(d);
}

static void
maintain_done(void *arg)
{
	struct daemon *d = arg;

	d->maintaining = 0;
}

static void
misses_cb(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *d = arg;

	misses_tick(d->misses);
}

static void
maintain_cb(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *d = arg;

	if (d->maintaining)
		return;
	d->maintaining = 1;
	d->negative_max = d->snap->cfg->negative_max;
	if (pool_submit_long(d->pool, maintain_work, d->inbox, maintain_done,
		d) == -1)
		d->maintaining = 0;
}

/* The scan's record, as /metrics shows it. */
static void
scan_gauges(const struct index_scan *is, struct metrics_scan *ms)
{
	ms->running = is->started != 0 && is->finished == 0;
	ms->files_seen = is->seen;
	ms->files_queued = is->queued;
	ms->files_read = is->read;
	ms->packages_seen = is->pkg_seen;
	ms->packages_queued = is->pkg_queued;
	ms->packages_read = is->packages;
	ms->members = is->members;
	ms->errors = is->failed;
	ms->removed = is->removed;
	ms->started = is->started;
	ms->ended = is->ended;
	ms->ended_ms = is->ended_ms;
}

/* The gauges /metrics shows, asked for when it is rendered. */
static void
gauges(struct metrics_gauges *g, void *arg)
{
	struct daemon *d = arg;
	struct index_reader *rd;
	struct index_stats is;
	struct blob_stats bs;

	flight_table_counts(d->ft, &g->fills, &g->fill_waiters);
	g->connections = httpd_connections(d->httpd);
	if ((rd = index_reader_new(d->idx)) == NULL)
		return;
	if (index_reader_begin(rd) == 0) {
		if (blob_stats(rd, d->bs, &bs) == 0) {
			g->cache_entries = bs.entries;
			g->cache_bytes = bs.bytes;
			g->negative_entries = bs.negatives;
			g->evictions = bs.evictions;
			g->evicted_bytes = bs.evicted_bytes;
			g->cache_tmp_bytes = bs.tmp_bytes;
		}
		if (index_stats(rd, &is) == 0) {
			g->index_files = is.files;
			scan_gauges(&is.scan, &g->scan);
		}
		pkgidx_count(rd, &g->index_packages, &g->index_members);
		miss_count(rd, &g->missing_ids);
		index_reader_end(rd);
	}
	index_reader_free(rd);
}

static unsigned
cpu_count(void)
{
	cpu_set_t set;
	long n;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return (unsigned)CPU_COUNT(&set);
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

/*
 * Descriptors besides those of connections: listeners, event loops,
 * workers, the index, package passes and the like.
 */
#define NOFILE_MARGIN 64

/*
 * Allow as many open files as the hard limit, and warn when even that is
 * less than the configuration needs: each connection may hold its socket
 * and a file being sent, each fill its transfer and its file.  Short of
 * descriptors the daemon sheds connections (daemon/http.c) rather than
 * failing worse.
 */
static void
raise_nofile(const struct config *cfg)
{
	uint64_t need = 2 * (uint64_t)cfg->max_connections +
	    2 * (uint64_t)cfg->max_fills + NOFILE_MARGIN;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1)
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		/* The kernel caps it at fs.nr_open: then ask for the need. */
		if (setrlimit(RLIMIT_NOFILE, &rl) == -1 && need < rl.rlim_max) {
			rl.rlim_cur = need;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need)
		log_warnx("%s: the open files limit is %llu, below the %llu "
			  "that max-connections %u and max-fills %u need; "
			  "connections will be shed when it is reached",
		    __func__, (unsigned long long)rl.rlim_cur,
		    (unsigned long long)need, cfg->max_connections,
		    cfg->max_fills);
}

/* mkdir -p for the cache directory. */
static int
mkdirs(const char *dir)
{
	char path[PATH_MAX];
	char *p;

	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (p = path + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) == -1 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(path, 0755) == -1 && errno != EEXIST)
		return -1;
	return 0;
}

/* While the repositories start: how far their first refreshes got. */
static void
starting_status(void *arg)
{
	struct daemon *d = arg;
	char line[512];

	if (!repos_starting(d->repos))
		return;
	repos_status(d->repos, line, sizeof(line));
	notify_status("starting: %s", line);
}

static void
starting_cb(evutil_socket_t fd, short what, void *arg)
{
	starting_status(arg);
}

/* The repositories' first refreshes have ended (or timed out): ready. */
static void
repos_ready_cb(void *arg)
{
	struct daemon *d = arg;
	char line[512];

	event_del(d->starting_ev);
	repos_on_progress(d->repos, NULL, NULL);
	repos_status(d->repos, line, sizeof(line));
	notify_ready("serving on %zu address%s; %s", d->cfg.nlisten,
	    d->cfg.nlisten == 1 ? "" : "es", line);
}

/* Open the access-log file's name again; said in the log either way. */
static void
access_log_reopen(const char *why)
{
	char err[512];

	if (!log_access_file())
		return;
	if (log_access_reopen(NULL, err, sizeof(err)) == -1)
		log_warnx("%s: %s; the access log goes on in the old file", why,
		    err);
	else
		log_info("%s: access log reopened", why);
}

/* A line of a file dropped, or a weakened default: logged. */
static void
say_warn(void *arg, const char *msg)
{
	(void)arg;
	log_warnx("%s", msg);
}

/* 1 when lists a and b hold the same strings in the same order. */
static int
strlist_same(const struct config_strlist *a, const struct config_strlist *b)
{
	size_t i;

	if (a->n != b->n)
		return 0;
	for (i = 0; i < a->n; i++)
		if (strcmp(a->v[i], b->v[i]) != 0)
			return 0;
	return 1;
}

/*
 * A reload is over, every event-loop thread switched (any thread): the
 * service manager hears READY=1 after its RELOADING=1, unless no READY=1
 * was told yet (the repositories' first refreshes), which would lie.
 */
static void
reloaded(void *arg, int ok)
{
	struct daemon *d = arg;

	if (!repos_starting(d->repos))
		notify_ready("serving; %s, rescanning",
		    ok ? "reloaded" : "the reload failed");
}

/*
 * SIGHUP's reload (daemon/reload.c), then what this loop keeps of the
 * configuration: the rescan timer, the watch of the scan roots (the scan
 * that follows a reload takes the new roots), the upload directory, the
 * open files limit.  *ok: the file loaded.
 */
static void
reload(struct daemon *d)
{
	struct snapshot *old = d->snap;
	const struct config *was = old->cfg, *cfg;
	struct timeval every;

	d->snap = reload_run(&d->parts, old, reloaded, d);
	cfg = d->snap->cfg;
	if (cfg != was) {
		if (cfg->rescan_interval != was->rescan_interval) {
			event_del(d->rescan_ev);
			every.tv_sec = (time_t)cfg->rescan_interval;
			every.tv_usec = 0;
			if (cfg->rescan_interval > 0)
				event_add(d->rescan_ev, &every);
		}
		if (!strlist_same(&cfg->scan_dirs, &was->scan_dirs) ||
		    !strlist_same(&cfg->scan_packages, &was->scan_packages))
			d->watch_renew = 1;
		if (uploads_possible(cfg) && mkdirs(cfg->upload_dir) == -1)
			log_warn("reload: upload directory %s",
			    cfg->upload_dir);
		if (cfg->max_connections != was->max_connections ||
		    cfg->max_fills != was->max_fills)
			raise_nofile(cfg);
	}
	snapshot_unref(old);
}

static void
signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct daemon *d = arg;

	if (sig == SIGUSR1) {
		log_info("SIGUSR1: rescanning%s",
		    repos_count(d->repos) > 0 ? ", refreshing repositories"
					      : "");
		scansched_start(d);
		repos_refresh(d->repos);
		return;
	}
	if (sig == SIGUSR2) {
		access_log_reopen("SIGUSR2");
		return;
	}
	if (sig == SIGHUP) {
		log_info("SIGHUP: reloading");
		/* Before READY=1, no reload to tell (reloaded() says why). */
		if (!repos_starting(d->repos))
			notify_reloading();
		access_log_reopen("SIGHUP");
		httpd_reload(d->httpd);
		reload(d);
		scansched_start(d);
		return;
	}
	log_info("%s: stopping", strsignal((int)sig));
	notify_stopping();
	atomic_store(&d->cancel, 1);
	event_base_loopbreak(d->base);
}

/*
 * Stopping: the signals the loop handled are ignored from now to the exit.
 * Freeing a libevent signal event puts back the disposition it found
 * (SIG_DFL, which kills), so the swap runs with them blocked; the threads
 * that could take them instead are gone by now.
 */
static void
signals_ignore(struct event **sigs, const int *signums, size_t n)
{
	sigset_t set, old;
	size_t i;

	sigemptyset(&set);
	for (i = 0; i < n; i++)
		sigaddset(&set, signums[i]);
	sigprocmask(SIG_BLOCK, &set, &old);
	for (i = 0; i < n; i++) {
		event_free(sigs[i]);
		signal(signums[i], SIG_IGN);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/* --check-config: a problem, on stderr. */
static void
say_problem(void *arg, const char *msg)
{
	(void)arg;
	fprintf(stderr, "dbgmirrord: %s\n", msg);
}

/* --check-config: a weakened default, not a problem. */
static void
say_warning(void *arg, const char *msg)
{
	(void)arg;
	fprintf(stderr, "dbgmirrord: warning: %s\n", msg);
}

/*
 * Whom to run as: 1 with *uid and *gid when the daemon, started as root,
 * must become the configured user; 0 to stay as it is.  Root without a
 * user configured exits, except under DBGMIRROR_TEST_ALLOW_ROOT=1, which
 * the test suite sets (it runs as root on CI machines) and nothing else
 * should.
 */
static int
whom(const struct config *cfg, uid_t *uid, gid_t *gid)
{
	const char *allow = getenv("DBGMIRROR_TEST_ALLOW_ROOT");
	int want = cfg->user != NULL && cfg->user[0] != '\0';
	char err[256];

	if (want && priv_lookup(cfg->user, uid, gid, err, sizeof(err)) == -1)
		fatalx("%s", err);
	if (geteuid() != 0) {
		if (want && *uid != geteuid())
			fatalx("user %s: only a daemon started as root can "
			       "become another user",
			    cfg->user);
		return 0;
	}
	if (want && *uid == 0)
		fatalx("user %s is root: name an unprivileged user", cfg->user);
	if (want)
		return 1;
	if (allow != NULL && strcmp(allow, "1") == 0) {
		log_warnx("running as root: DBGMIRROR_TEST_ALLOW_ROOT is set "
			  "(for the test suite only)");
		return 0;
	}
	fatalx("refusing to run as root: set user = NAME (or --user NAME), "
	       "the unprivileged user to become once the ports are bound");
}

/*
 * Root's part of the cache or upload directory (what: "cache-dir"...):
 * create it when missing, for the user to own.  An existing one must be
 * the user's already: root does not change what it finds.
 */
static void
dir_for(const char *what, const char *dir, const char *user, uid_t uid,
    gid_t gid)
{
	struct stat sb;

	if (stat(dir, &sb) == 0) {
		if (sb.st_uid != uid)
			fatalx("%s %s belongs to uid %lu, not to user %s: "
			       "chown -R %s %s, or set %s",
			    what, dir, (unsigned long)sb.st_uid, user, user,
			    dir, what);
		return;
	}
	if (mkdirs(dir) == -1 || chown(dir, uid, gid) == -1)
		fatal("%s %s", what, dir);
}

/*
 * Uploads need an upload-scoped token (daemon/access.h): without a
 * token-file there can be none, and the upload directory is not made.
 */
static int
uploads_possible(const struct config *cfg)
{
	return cfg->token_file != NULL;
}

/* What the cache's recovery did, when it did anything. */
static void
recovered(const struct config *cfg, const struct blob_recovery *rec)
{
	if (rec->files > 0 || rec->entries > 0)
		log_info("cache: removed %llu orphan files, %llu entries "
			 "without their file",
		    (unsigned long long)rec->files,
		    (unsigned long long)rec->entries);
	if (rec->uploads_indexed > 0)
		log_info("uploads: indexed again %llu files of %s that the "
			 "index had lost",
		    (unsigned long long)rec->uploads_indexed, cfg->upload_dir);
	if (rec->uploads_moved > 0)
		log_info("uploads: moved %llu files from %s/blobs to %s",
		    (unsigned long long)rec->uploads_moved, cfg->cache_dir,
		    cfg->upload_dir);
	if (rec->uploads_unknown > 0)
		log_warnx("uploads: %llu files of %s are no upload of this "
			  "server; left as they are",
		    (unsigned long long)rec->uploads_unknown, cfg->upload_dir);
}

/* The thread that runs gpgv for the workers: no capability either. */
static void
spawner_init(void)
{
	if (priv_drop_caps() == -1)
		log_warn("%s: capset", __func__);
}

/* Each worker of the pool, as it starts: no capability, then the fence. */
static void
worker_init(void *arg)
{
	if (priv_drop_caps() == -1)
		log_warn("%s: capset", __func__);
	if (arg != NULL)
		sandbox_enter(arg);
}

static void
usage(FILE *fp)
{
	fprintf(fp,
	    "usage: dbgmirrord [options]\n"
	    "\n"
	    "A debuginfod-compatible server: point DEBUGINFOD_URLS at it.\n"
	    "\n"
	    "  --config FILE     read FILE instead of %s\n"
	    "  --no-config       use the embedded defaults and the command "
	    "line only\n"
	    "  --check-config    report every problem in the configuration, "
	    "then exit\n"
	    "  -v, --verbose     log more (repeat for debug)\n"
	    "  --version         print the version\n"
	    "  -h, --help        this help\n"
	    "\n"
	    "Every option of the configuration file, also as --name VALUE:\n",
	    CONFIG_DEFAULT_FILE);
	config_usage(fp);
}

/*
 * One daemon per cache directory: a second one on the same directory
 * would evict, publish and recover under the first one's feet.  The lock
 * (flock on CACHE/lock, which holds the pid) is held until the process
 * ends; the CLI does not take it.  Exits when another process holds it.
 */
static void
lock_cache_dir(const char *dir)
{
	char path[PATH_MAX], pid[32] = "";
	ssize_t n;
	int fd;

	if (snprintf(path, sizeof(path), "%s/lock", dir) >= (int)sizeof(path))
		fatalx("cache directory path too long");
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) == -1) {
		struct passwd *pw;
		struct stat sb;

		/* Most often another user's directory: say whose. */
		if (errno != EACCES || stat(dir, &sb) == -1 ||
		    sb.st_uid == geteuid())
			fatal("%s", path);
		pw = getpwuid(sb.st_uid);
		fatalx("cache-dir %s belongs to %s (uid %lu), and this daemon "
		       "runs as uid %lu: it cannot take %s/lock.  Give it "
		       "its own cache-dir, or chown -R to this user",
		    dir, pw != NULL ? pw->pw_name : "another user",
		    (unsigned long)sb.st_uid, (unsigned long)geteuid(), dir);
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		if (errno != EWOULDBLOCK)
			fatal("%s", path);
		if ((n = pread(fd, pid, sizeof(pid) - 1, 0)) > 0)
			pid[n] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		fatalx("cache directory %s is in use by another dbgmirrord "
		       "(pid %s); one daemon per cache directory",
		    dir, pid[0] != '\0' ? pid : "unknown");
	}
	n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) == -1 || pwrite(fd, pid, (size_t)n, 0) != n)
		log_warn("%s", path);
	/* fd stays open, and the lock held, for the process's life. */
}

/* Which file the configuration came from, in words, into out. */
static void
config_source(const struct daemon *d, const struct config_args *args, char *out,
    size_t len)
{
	if (d->cfg.config_file != NULL)
		snprintf(out, len, "%s", d->cfg.config_file);
	else if (args->no_config)
		snprintf(out, len, "no file (--no-config): embedded defaults");
	else
		snprintf(out, len,
		    "no file (%s does not exist): embedded defaults",
		    CONFIG_DEFAULT_FILE);
}

/*
 * Read the configuration into d->cfg, the command line into d->args
 * (kept: SIGHUP reads it again); exits on --help, --version and bad
 * input.
 */
static void
configure(struct daemon *d, int argc, char **argv)
{
	struct config_args *args = &d->args;
	struct config_diag diag = { 0 };
	char source[PATH_MAX + 64];
	size_t i;
	int rc, level;

	if (config_init(&d->cfg) == -1)
		fatalx("out of memory");
	rc = config_parse_args(args, argc, argv, &diag);
	if (rc == 0 && args->help) {
		usage(stdout);
		exit(0);
	}
	if (rc == 0 && args->version) {
		printf("dbgmirrord %s\n", PACKAGE_VERSION);
		exit(0);
	}
	if (rc == 0 && args->nrest > 0) {
		fprintf(stderr, "dbgmirrord: unexpected argument \"%s\"\n",
		    args->rest[0]);
		rc = -1;
	}
	if (rc == 0)
		rc = config_load(&d->cfg, args, &diag);
	for (i = 0; i < diag.n; i++)
		fprintf(stderr, "dbgmirrord: %s\n", diag.msgs[i]);
	config_source(d, args, source, sizeof(source));
	if (args->check_config) {
		size_t nproblems = diag.n;

		if (rc == 0)
			nproblems += reload_check(&d->cfg, say_problem,
			    say_warning, NULL, NULL);
		if (rc == 0 && nproblems == 0)
			printf("%s: configuration OK\n", source);
		else
			fprintf(stderr, "dbgmirrord: %zu problem%s\n",
			    nproblems, nproblems == 1 ? "" : "s");
		exit(rc == 0 && nproblems == 0 ? 0 : 1);
	}
	if (rc != 0) {
		if (diag.n == 0)
			usage(stderr);
		exit(1);
	}
	level = (int)d->cfg.log_level + args->verbose;
	log_init("dbgmirrord", level > LOG_DEBUG ? LOG_DEBUG : level);
	log_info("configuration: %s", source);
	config_diag_free(&diag);
	if (d->cfg.threads == 0)
		d->cfg.threads = cpu_count();
	if (d->cfg.workers == 0)
		d->cfg.workers = cpu_count();
}

/* This process's name in Via headers, random, to see its own loops. */
static void
via_token_make(char *out, size_t len)
{
	uint64_t r = 0;
	int fd;

	if ((fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)) != -1) {
		if (read(fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
			r = 0;
		close(fd);
	}
	if (r == 0)
		r = (uint64_t)getpid() * 2654435761u ^
		    (uint64_t)clock_mono_ns();
	snprintf(out, len, "dbgmirror-%016llx", (unsigned long long)r);
}

int
main(int argc, char **argv)
{
	struct daemon d;
	struct http_handler handler;
	struct serve_deps sd;
	struct producers_deps pd;
	struct repos_deps rpd;
	struct blob_limits lim;
	struct blob_recovery rec;
	struct serve *srv;
	struct access *access;
	static const int signums[] = { SIGTERM, SIGINT, SIGUSR1, SIGUSR2,
		SIGHUP };
	enum { NSIGS = sizeof(signums) / sizeof(signums[0]) };
	struct event *sigs[NSIGS];
	struct timeval every;
	struct sandbox *sb = NULL;
	char path[PATH_MAX], err[512];
	uid_t uid = 0;
	gid_t gid = 0;
	int drop, rc;
	size_t i;

	memset(&d, 0, sizeof(d));
	signal(SIGPIPE, SIG_IGN);
	configure(&d, argc, argv);
	if ((rc = clock_init(err, sizeof(err))) == 1)
		log_info("%s", err);
	else if (rc == -1)
		log_warnx("%s", err);
	raise_nofile(&d.cfg);

	/*
	 * Root is given up first, keeping only the capability to bind ports
	 * below 1024 until httpd_new has bound them.  So the files the
	 * configuration names (certificates, keys, token files) are read as
	 * the user, as they are again on SIGHUP.
	 */
	if ((drop = whom(&d.cfg, &uid, &gid)) == 1) {
		dir_for("cache-dir", d.cfg.cache_dir, d.cfg.user, uid, gid);
		if (uploads_possible(&d.cfg))
			dir_for("upload-dir", d.cfg.upload_dir, d.cfg.user, uid,
			    gid);
		if (priv_drop(uid, gid, err, sizeof(err)) == -1)
			fatalx("cannot become user %s: %s", d.cfg.user, err);
	}
	/* As the user, who must be able to open it again on SIGUSR2. */
	if (d.cfg.access_log && d.cfg.access_log_file != NULL &&
	    log_access_open(d.cfg.access_log_file, err, sizeof(err)) == -1)
		fatalx("%s", err);

	if (evthread_use_pthreads() == -1)
		fatalx("libevent without thread support");
	if (elf_init() == -1)
		fatalx("libelf: version mismatch");
	if (mkdirs(d.cfg.cache_dir) == -1)
		fatal("cache directory %s", d.cfg.cache_dir);
	if (uploads_possible(&d.cfg) && mkdirs(d.cfg.upload_dir) == -1)
		fatal("upload directory %s", d.cfg.upload_dir);
	lock_cache_dir(d.cfg.cache_dir);
	if (snprintf(d.tmpdir, sizeof(d.tmpdir), "%s/tmp", d.cfg.cache_dir) >=
	    (int)sizeof(d.tmpdir))
		fatalx("cache directory path too long");
	if (snprintf(path, sizeof(path), "%s/index", d.cfg.cache_dir) >=
	    (int)sizeof(path))
		fatalx("cache directory path too long");
	if ((d.idx = index_open(path, 0, d.cfg.index_map_size, err,
		 sizeof(err))) == NULL)
		fatalx("%s", err);
	lim.max_bytes = d.cfg.cache_size;
	lim.high_pct = d.cfg.cache_high_watermark;
	lim.low_pct = d.cfg.cache_low_watermark;
	lim.min_free_pct = d.cfg.min_free_disk;
	lim.upload_max_bytes = d.cfg.upload_size;
	if ((d.bs = blobstore_new(d.idx, d.cfg.cache_dir, &lim, err,
		 sizeof(err))) == NULL ||
	    blobstore_set_upload_dir(d.bs, d.cfg.upload_dir, err,
		sizeof(err)) == -1 ||
	    blobstore_recover(d.bs, &rec, err, sizeof(err)) == -1)
		fatalx("%s", err);
	recovered(&d.cfg, &rec);
	if ((d.ft = flight_table_new(d.cfg.max_fills, clock_mono_ns,
		 clock_stamp_ns)) == NULL)
		fatalx("out of memory");
	metrics_init();
	metrics_set_gauges(gauges, &d);
	if (d.cfg.sandbox &&
	    (sb = sandbox_new(d.cfg.cache_dir, d.cfg.upload_dir, err,
		 sizeof(err))) == NULL)
		fatalx("sandbox: %s", err);
	/* Outside the workers' fence: it runs gpgv for them. */
	if (spawn_start(spawner_init) == -1)
		fatal("cannot start the spawning thread");
	/* As many again for short work as long work may take. */
	if ((d.pool = pool_new_init(2 * d.cfg.workers, d.cfg.workers,
		 worker_init, sb)) == NULL)
		fatalx("cannot start %u workers", d.cfg.workers);
	if ((d.base = event_base_new()) == NULL ||
	    (d.inbox = pool_inbox_new(d.base)) == NULL)
		fatalx("event loop: out of memory");
	if (upstream_init() == -1)
		fatalx("libcurl cannot start");
	via_token_make(d.via_token, sizeof(d.via_token));
	d.rd.cfg = &d.cfg;
	d.rd.idx = d.idx;
	d.rd.pool = d.pool;
	d.rd.bs = d.bs;
	d.rd.ft = d.ft;
	d.rd.via_token = d.via_token;
	d.rd.sources = sources_table;
	pd.rd = &d.rd;
	pd.inbox = d.inbox;
	pd.base = d.base;
	if ((d.prod = producers_new(&pd, err, sizeof(err))) == NULL)
		fatalx("%s", err);
	d.rd.prod = d.prod;
	if ((d.upstreams = upstreams_new(&d.cfg, d.base, d.prod, err,
		 sizeof(err))) == NULL)
		fatalx("%s", err);
	d.rd.upstreams = d.upstreams;
	if (d.cfg.store != NULL &&
	    (d.objstore = objstore_new(&d.cfg, d.base, d.bs, err,
		 sizeof(err))) == NULL)
		fatalx("%s", err);
	d.rd.objstore = d.objstore;
	if ((d.symbuild = symbuilds_new(&d.rd, d.base, d.inbox, d.tmpdir,
		 d.cfg.symbolicate_builds, err, sizeof(err))) == NULL ||
	    (d.tabs = symtabs_new(d.bs, d.cfg.symbolicate_open_tables,
		 d.cfg.symbolicate_open_bytes)) == NULL)
		fatalx("%s", d.symbuild == NULL ? err : "out of memory");
	d.rd.symbuild = d.symbuild;
	if ((d.passes = passes_new(&d.rd, d.inbox)) == NULL)
		fatalx("out of memory");
	d.rd.packages = d.passes;
	rpd.cfg = &d.cfg;
	rpd.idx = d.idx;
	rpd.bs = d.bs;
	rpd.ft = d.ft;
	rpd.pool = d.pool;
	rpd.inbox = d.inbox;
	rpd.base = d.base;
	rpd.passes = d.passes;
	if ((d.repos = repos_new(&rpd, err, sizeof(err))) == NULL)
		fatalx("%s", err);
	d.rd.repos = d.repos;
	sd.idx = d.idx;
	sd.pool = d.pool;
	sd.bs = d.bs;
	sd.ft = d.ft;
	sd.rd = &d.rd;
	/* Made whatever misses-max says: a reload may give it one. */
	if ((d.misses = misses_new(d.idx, d.pool, d.cfg.misses_max)) == NULL)
		fatalx("out of memory");
	d.rd.misses = d.cfg.misses_max > 0 ? d.misses : NULL;
	if ((access = access_new(&d.cfg, say_warn, NULL, err, sizeof(err))) ==
	    NULL)
		fatalx("%s", err);
	reload_audit(&d.cfg, access, say_warn, NULL);
	d.parts.args = &d.args;
	d.parts.cpus = cpu_count();
	d.parts.verbose = d.args.verbose;
	d.parts.rd = &d.rd;
	d.parts.prod = d.prod;
	d.parts.upstreams = d.upstreams;
	d.parts.repos = d.repos;
	d.parts.passes = d.passes;
	d.parts.bs = d.bs;
	d.parts.ft = d.ft;
	d.parts.misses = d.misses;
	d.parts.symbuild = d.symbuild;
	d.parts.tabs = d.tabs;
	if ((d.snap = reload_first(&d.parts, &d.cfg, access)) == NULL)
		fatalx("out of memory");
	metrics_config_loaded(clock_now());
	d.scans.request = scansched_rescan_request;
	d.scans.counts = scansched_rescan_counts;
	d.scans.arg = &d;
	sd.scans = &d.scans;
	sd.tabs = d.tabs;
	if ((d.rescan_asked_ev =
		    event_new(d.base, -1, 0, scansched_rescan_cb, &d)) == NULL)
		fatalx("event loop: out of memory");
	if ((srv = serve_new(&sd)) == NULL)
		fatalx("out of memory");
	serve_handler(srv, &handler);
	if ((d.httpd = httpd_new(d.snap, &handler, err, sizeof(err))) == NULL)
		fatalx("%s", err);
	d.parts.httpd = d.httpd;
	serve_set_httpd(srv, d.httpd);
	/*
	 * The addresses bound, port 0 made real, are where redirects must
	 * never lead (fetchers/redirect.h): no loop runs yet to read them.
	 */
	for (i = 0; i < d.cfg.nlisten; i++)
		snprintf(d.cfg.listen[i].text, sizeof(d.cfg.listen[i].text),
		    "%s", httpd_address(d.httpd, i));
	/* Bound: no capability is needed any more (systemd may hand one). */
	if (priv_drop_caps() == -1)
		fatal("capset");
	if (drop) {
		if (priv_verify(uid, gid, err, sizeof(err)) == -1)
			fatalx("giving up root: %s", err);
		log_info("running as user %s (uid %lu, gid %lu)", d.cfg.user,
		    (unsigned long)uid, (unsigned long)gid);
	}
	every.tv_sec = MAINTAIN_SECONDS;
	every.tv_usec = 0;
	d.maintain_ev = event_new(d.base, -1, EV_PERSIST, maintain_cb, &d);
	if (d.maintain_ev == NULL || event_add(d.maintain_ev, &every) == -1)
		fatalx("event loop: out of memory");
	every.tv_sec = 1;
	d.misses_ev = event_new(d.base, -1, EV_PERSIST, misses_cb, &d);
	if (d.misses_ev == NULL || event_add(d.misses_ev, &every) == -1)
		fatalx("event loop: out of memory");
	for (i = 0; i < NSIGS; i++) {
		sigs[i] = evsignal_new(d.base, signums[i], signal_cb, &d);
		if (sigs[i] == NULL || event_add(sigs[i], NULL) == -1)
			fatalx("cannot handle signals");
	}
	d.rescan_ev =
	    event_new(d.base, -1, EV_PERSIST, scansched_rescan_cb, &d);
	d.starting_ev = event_new(d.base, -1, EV_PERSIST, starting_cb, &d);
	if (d.rescan_ev == NULL || d.starting_ev == NULL)
		fatalx("event loop: out of memory");
	if (d.cfg.rescan_interval > 0) {
		every.tv_sec = (time_t)d.cfg.rescan_interval;
		every.tv_usec = 0;
		event_add(d.rescan_ev, &every);
	}
	/* The first scan makes the watch of the scan roots. */
	d.watch_renew = 1;

	if (httpd_start(d.httpd) == -1)
		fatalx("cannot start the event-loop threads");
	log_info("dbgmirrord %s: cache %s, %u threads, %u workers, %zu scan "
		 "director%s",
	    PACKAGE_VERSION, d.cfg.cache_dir, d.cfg.threads, d.cfg.workers,
	    d.cfg.scan_dirs.n, d.cfg.scan_dirs.n == 1 ? "y" : "ies");
	for (i = 0; i < d.cfg.scan_dirs.n; i++)
		log_info("scanning %s", d.cfg.scan_dirs.v[i]);
	for (i = 0; i < d.cfg.scan_packages.n; i++)
		log_info("scanning packages in %s", d.cfg.scan_packages.v[i]);
	for (i = 0; i < d.cfg.repos.n; i++)
		log_info("repository %s", d.cfg.repos.v[i]);
	for (i = 0; i < d.cfg.nupstreams; i++)
		log_info("upstream %s%s%s", d.cfg.upstreams[i].name,
		    d.cfg.upstreams_from_env ? " (from DEBUGINFOD_URLS)" : "",
		    d.cfg.upstreams[i].enabled ? "" : " (disabled)");
	hints_log(&d.cfg, d.httpd);
	if (notify_watchdog_start(d.base) == -1)
		fatalx("event loop: out of memory");
	/*
	 * Ready once the repositories' first refreshes have ended: an id
	 * asked for before may be one they are about to bring.
	 */
	switch (repos_when_ready(d.repos, repos_ready_cb, &d)) {
	case 0:
		every.tv_sec = 1;
		every.tv_usec = 0;
		event_add(d.starting_ev, &every);
		repos_on_progress(d.repos, starting_status, &d);
		starting_status(&d);
		break;
	case 1:
		notify_ready("serving on %zu address%s; scanning",
		    d.cfg.nlisten, d.cfg.nlisten == 1 ? "" : "es");
		break;
	default:
		fatalx("out of memory");
	}
	scansched_start(&d);
#if defined(__SANITIZE_THREAD__)
	/*
	 * Every thread is up, each without a capability, but the one
	 * ThreadSanitizer's runtime started with our first, which no capset
	 * of ours reaches: its sandbox notice stops that thread.
	 */
	__sanitizer_sandbox_on_notify(NULL);
#endif

	event_base_dispatch(d.base);
	/* While the loop is not running, a signal it handles is lost. */
	for (i = 0; i < NSIGS; i++)
		signal(signums[i], SIG_IGN);

	httpd_stop(d.httpd);
	/* Passes that wait for a download would hold the pool's threads. */
	repos_stop(d.repos);
	pool_free(d.pool);
	sandbox_free(sb);
	misses_free(d.misses);
	/* Fills that finished on the pool end before their readers go. */
	pool_inbox_free(d.inbox);
	scansched_drop(&d);
	httpd_free(d.httpd);
	/* No request holds a table any more. */
	symtabs_free(d.tabs);
	/* Fills end first: they cancel transfers of the sets below. */
	producers_free(d.prod);
	symbuilds_free(d.symbuild);
	upstreams_free(d.upstreams);
	objstore_free(d.objstore);
	repos_free(d.repos);
	passes_free(d.passes);
	upstream_shutdown();
	signals_ignore(sigs, signums, NSIGS);
	notify_watchdog_stop();
	watch_free(d.watch);
	watch_changes_free(d.changes, d.nchanges);
	event_free(d.rescan_ev);
	event_free(d.starting_ev);
	event_free(d.rescan_asked_ev);
	event_free(d.maintain_ev);
	event_free(d.misses_ev);
	event_base_free(d.base);
	serve_free(srv);
	snapshot_unref(d.snap);
	flight_table_free(d.ft);
	blobstore_free(d.bs);
	index_close(d.idx);
	config_args_free(&d.args);
	config_free(&d.cfg);
	metrics_free();
	libevent_global_shutdown();
	log_info("stopped");
	return 0;
}
