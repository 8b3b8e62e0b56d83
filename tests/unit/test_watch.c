/*
 * tests/unit/test_watch.c: daemon/watch.c, included to reach its statics.
 *
 * A real inotify instance on a temporary directory tells the batch of
 * paths a burst of changes makes (each once, directories marked), and
 * that a directory watched late still reports; made-up event buffers tell
 * what no test can provoke on demand: a queue overflow, more paths than
 * a batch holds, a root moved away, a watch the kernel dropped; the
 * table of watch descriptors is checked through insertions and deletions
 * that wrap around it; and the watch limit is met through the test knob.
 */
#include "daemon/watch.c"

#include <event2/event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/tap.h"
#include "tests/testdir.h"

static int readies;

static void
ready_cb(void *arg)
{
	(void)arg;
	readies++;
}

/* Run base until the ready callback came (10 s at most): 1, or 0. */
static int
wait_ready(struct event_base *base)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	int before = readies, i;

	for (i = 0; i < 1000 && readies == before; i++) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		nanosleep(&ts, NULL);
	}
	return readies > before;
}

/* The index of path in v[0..n), or -1. */
static long
find(const struct scan_change *v, size_t n, const char *path)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(v[i].path, path) == 0)
			return (long)i;
	return -1;
}

static void
touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd != -1) {
		if (write(fd, "x", 1) != 1)
			perror(path);
		close(fd);
	}
}

/* A real burst of changes under a watched directory. */
static void
test_inotify(struct event_base *base)
{
	struct scan_change *v;
	struct watch *w;
	char err[256], path[PATH_MAX];
	size_t n;
	long k;
	int full, i;

	w = watch_new(base, ready_cb, NULL, err, sizeof(err));
	if (!ok(w != NULL, "watch_new")) {
		printf("# %s\n", err);
		return;
	}
	mkdir(at("root"), 0755);
	watch_dir(w, at("root"), 1, 0);
	is_int(w->n, 1, "one directory watched");
	for (i = 0; i < 50; i++) {
		snprintf(path, sizeof(path), "%s/f%d", at("root"), i);
		touch(path);
		touch(path); /* twice: one path in the batch */
	}
	mkdir(at("root/sub"), 0755);
	ok(wait_ready(base), "the burst makes a batch ready");
	/* Later events of the burst may wake it again: take them all. */
	is_int(watch_take(w, &v, &n, &full), 1, "watch_take: something");
	is_int(full, 0, "... not a whole scan");
	is_int(n, 51, "... 51 paths, each once");
	k = find(v, n, at("root/f7"));
	ok(k != -1 && !v[k].dir && !v[k].pkg, "... a file, not a directory");
	k = find(v, n, at("root/sub"));
	ok(k != -1 && v[k].dir, "... the new directory, marked as one");
	watch_changes_free(v, n);
	is_int(watch_take(w, &v, &n, &full), 0, "taken: nothing left");

	/* The scan watches the new directory: its files report. */
	watch_dir(w, at("root/sub"), 0, 1);
	touch(at("root/sub/g"));
	unlink(at("root/f3"));
	ok(wait_ready(base), "changes in the directory watched late");
	watch_take(w, &v, &n, &full);
	k = find(v, n, at("root/sub/g"));
	ok(k != -1 && v[k].pkg, "... a new file, its root's kind kept");
	ok(find(v, n, at("root/f3")) != -1, "... a deleted file");
	watch_changes_free(v, n);

	/* A directory removed: its watch goes with it. */
	unlink(at("root/sub/g"));
	rmdir(at("root/sub"));
	ok(wait_ready(base), "a directory removed");
	watch_take(w, &v, &n, &full);
	k = find(v, n, at("root/sub"));
	ok(k != -1 && v[k].dir, "... reported as a directory");
	watch_changes_free(v, n);
	is_int(w->n, 1, "... and no longer watched (IN_IGNORED)");
	watch_free(w);
}

/* One made-up event into buf at *len. */
static void
put_event(char *buf, size_t *len, int wd, uint32_t mask, const char *name)
{
	struct inotify_event ev;
	size_t nl = name != NULL ? strlen(name) + 1 : 0;

	/* Names are padded as the kernel pads them. */
	nl = (nl + sizeof(ev) - 1) / sizeof(ev) * sizeof(ev);
	memset(&ev, 0, sizeof(ev));
	ev.wd = wd;
	ev.mask = mask;
	ev.len = (uint32_t)nl;
	memcpy(buf + *len, &ev, sizeof(ev));
	memset(buf + *len + sizeof(ev), 0, nl);
	if (name != NULL)
		memcpy(buf + *len + sizeof(ev), name, strlen(name));
	*len += sizeof(ev) + nl;
}

/* Add a made-up watch descriptor to the table, as watch_dir() would. */
static void
fake_dir(struct watch *w, int wd, const char *path, int root)
{
	struct wdir *d;

	if (wd_room(w) == -1)
		return;
	d = &w->dirs[wd_slot(w, wd)];
	d->wd = wd;
	d->path = strdup(path);
	d->pkg = 0;
	d->root = root;
	w->n++;
}

static void
test_made_up(struct event_base *base)
{
	static char
	    buf[(sizeof(struct inotify_event) + 16) * (WATCH_PENDING_MAX + 2)];
	struct scan_change *v;
	struct watch *w;
	char err[256], name[16];
	size_t len = 0, n;
	int full, i;

	if ((w = watch_new(base, ready_cb, NULL, err, sizeof(err))) == NULL)
		return;
	fake_dir(w, 1000001, "/srv/debug", 1);
	fake_dir(w, 1000002, "/srv/debug/x", 0);
	put_event(buf, &len, 1000002, IN_CLOSE_WRITE, "a.debug");
	put_event(buf, &len, 1000002, IN_Q_OVERFLOW, NULL);
	put_event(buf, &len, 1000002, IN_CREATE, "b.debug");
	watch_events(w, buf, len);
	watch_take(w, &v, &n, &full);
	ok(full && n == 0, "a queue overflow asks for a whole scan");
	watch_changes_free(v, n);

	len = 0;
	put_event(buf, &len, 77, IN_CREATE, "unknown");
	put_event(buf, &len, 1000001, IN_ATTRIB, NULL);
	put_event(buf, &len, 1000002, IN_MOVED_TO | IN_ISDIR, "newdir");
	put_event(buf, &len, 1000002, IN_IGNORED, NULL);
	put_event(buf, &len, 1000002, IN_CREATE, "after-ignored");
	put_event(buf, &len, 1000001, IN_MOVE_SELF, NULL);
	watch_events(w, buf, len);
	watch_take(w, &v, &n, &full);
	is_int(n, 2, "made-up events: two paths");
	ok(n == 2 && strcmp(v[0].path, "/srv/debug/x/newdir") == 0 && v[0].dir,
	    "... a directory moved in");
	ok(n == 2 && strcmp(v[1].path, "/srv/debug") == 0 && v[1].dir,
	    "... a root moved away: the root, to prune it");
	ok(wd_find(w, 1000002) == NULL,
	    "IN_IGNORED dropped the watch; its later events are passed by");
	watch_changes_free(v, n);

	len = 0;
	fake_dir(w, 1000003, "/", 1);
	for (i = 0; i <= WATCH_PENDING_MAX; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		put_event(buf, &len, 1000003, IN_CLOSE_WRITE, name);
	}
	watch_events(w, buf, len);
	watch_take(w, &v, &n, &full);
	ok(full && n == 0, "more paths than a batch holds: a whole scan");
	watch_changes_free(v, n);
	len = 0;
	put_event(buf, &len, 1000003, IN_CREATE, "etc");
	watch_events(w, buf, len);
	watch_take(w, &v, &n, &full);
	ok(n == 1 && strcmp(v[0].path, "/etc") == 0, "a file under / is /NAME");
	watch_changes_free(v, n);
	watch_free(w);
}

/* Insertions and deletions of the descriptor table, wrapping around. */
static void
test_table(struct event_base *base)
{
	struct watch *w;
	char err[256], path[32];
	int wd, missing = 0, stale = 0;

	if ((w = watch_new(base, ready_cb, NULL, err, sizeof(err))) == NULL)
		return;
	for (wd = 1; wd <= 3000; wd++) {
		snprintf(path, sizeof(path), "/d%d", wd);
		fake_dir(w, wd, path, 0);
	}
	for (wd = 1; wd <= 3000; wd += 3) {
		pthread_mutex_lock(&w->mu);
		wd_del(w, wd);
		pthread_mutex_unlock(&w->mu);
	}
	for (wd = 1; wd <= 3000; wd++) {
		struct wdir *d = wd_find(w, wd);

		snprintf(path, sizeof(path), "/d%d", wd);
		if (wd % 3 == 1)
			stale += d != NULL;
		else
			missing += d == NULL || strcmp(d->path, path) != 0;
	}
	is_int(missing, 0, "table: every entry kept is found");
	is_int(stale, 0, "... no entry deleted is");
	is_int(w->n, 2000, "... 2000 entries");
	watch_free(w);
}

/* The watch limit, met through the test knob. */
static void
test_limit(struct event_base *base)
{
	struct watch *w;
	char err[256];

	setenv("DBGMIRROR_TEST_WATCH_MAX", "1", 1);
	w = watch_new(base, ready_cb, NULL, err, sizeof(err));
	unsetenv("DBGMIRROR_TEST_WATCH_MAX");
	if (w == NULL)
		return;
	mkdir(at("lim"), 0755);
	mkdir(at("lim/a"), 0755);
	watch_dir(w, at("lim"), 1, 0);
	watch_dir(w, at("lim/a"), 0, 0);
	is_int(w->n, 1, "limit 1: the second directory is not watched");
	ok(w->warned, "... which is logged once");
	watch_dir(w, at("lim"), 1, 0);
	is_int(w->n, 1, "... the first can be watched again (a rescan)");
	watch_free(w);
}

int
main(void)
{
	struct event_base *base;

	if (!ok(testdir_make("test_watch") == 0, "a temporary directory") ||
	    !ok((base = event_base_new()) != NULL, "an event base"))
		return tap_done();
	log_init("test_watch", LOG_WARN);
	test_inotify(base);
	test_made_up(base);
	test_table(base);
	test_limit(base);
	event_base_free(base);
	testdir_remove();
	return tap_done();
}
