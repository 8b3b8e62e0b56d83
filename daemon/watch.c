/*
 * daemon/watch.c: inotify on the scan directories (daemon/watch.h).
 *
 * Watches.  The scan hands every directory it walks to watch_dir(), from
 * its worker; the kernel gives each watched directory a watch descriptor,
 * which the table dirs maps to the directory's path and kind (scan-dir or
 * package root), under the mutex mu.  A directory is watched without
 * following a symbolic link (but a configured root, which may be one),
 * for what makes a file appear, change or go: created, written and
 * closed, moved in or out, deleted, attributes changed (touch).  A
 * directory that moves away has its watch dropped, since its path no
 * longer says where it is; the directory it moved to, when watched,
 * reports the move, and the scan of it watches it again.  IN_IGNORED (a
 * directory deleted, a file system unmounted) drops the entry.
 *
 * Events.  On the loop, each event becomes the path it names (the
 * watched directory's path and the entry's name), added once to the
 * batch being gathered with whether it is a directory; a timer runs the
 * ready callback once the events have been quiet for WATCH_QUIET_MS, and
 * at most WATCH_MAX_DELAY_MS after the batch's first event, so that a
 * package install of a thousand files costs one scan of a thousand
 * paths, not a thousand scans.
 *
 * Falling back.  Events can be lost: the kernel's queue overflows
 * (IN_Q_OVERFLOW), or more than WATCH_PENDING_MAX paths change at once;
 * the batch then asks for a whole scan instead.  Directories can go
 * unwatched: at the user's watch limit (fs.inotify.max_user_watches)
 * inotify_add_watch() fails with ENOSPC, which is logged once with what
 * to do, and changes under those directories wait for the periodic
 * rescan, which stays the safety net for everything (files a symbolic
 * link leads to outside the scan directories included).
 */
#include "daemon/watch.h"

#include <sys/inotify.h>

#include <errno.h>
#include <event2/event.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/clock.h"
#include "daemon/log.h"

#define WATCH_MASK \
	(IN_CREATE | IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | \
	    IN_DELETE | IN_ATTRIB | IN_MOVE_SELF | IN_ONLYDIR)
/* Reads of the inotify descriptor per wake-up, before the loop moves on. */
#define READS_MAX 64

/* A watched directory; wd 0 marks a free slot (the kernel's start at 1). */
struct wdir {
	int wd;
	int pkg;
	int root;
	char *path;
};

struct watch {
	int fd;
	struct event *ev, *timer;
	void (*ready)(void *arg);
	void *arg;

	pthread_mutex_t mu; /* the table of directories and what follows */
	struct wdir *dirs; /* open addressing by wd, cap a power of two */
	size_t cap, n;
	unsigned limit; /* DBGMIRROR_TEST_WATCH_MAX, when limited */
	int limited;    /* the variable is set: 0 watches none */
	int warned; /* the watch limit has been logged */

	/* The batch being gathered, on the loop. */
	struct scan_change *pend;
	size_t np, pcap;
	uint32_t *slots; /* open addressing over pend: index + 1; 0 free */
	size_t scap;
	int full;
	int64_t first_ns; /* clock_mono_ns() of its first event; 0: none */
};

/* ------------------------------------------------- the directory table */

static size_t
wd_slot(const struct watch *w, int wd)
{
	size_t i = ((uint32_t)wd * 2654435761u) & (w->cap - 1);

	while (w->dirs[i].wd != 0 && w->dirs[i].wd != wd)
		i = (i + 1) & (w->cap - 1);
	return i;
}

/* Under mu: wd's entry, or NULL. */
static struct wdir *
wd_find(struct watch *w, int wd)
{
	size_t i;

	if (w->cap == 0)
		return NULL;
	i = wd_slot(w, wd);
	return w->dirs[i].wd == wd ? &w->dirs[i] : NULL;
}

/* Under mu: room for one more entry; -1 when out of memory. */
static int
wd_room(struct watch *w)
{
	struct wdir *old = w->dirs;
	size_t oldcap = w->cap, i;

	if ((w->n + 1) * 2 <= w->cap)
		return 0;
	w->cap = oldcap == 0 ? 256 : 2 * oldcap;
	if ((w->dirs = calloc(w->cap, sizeof(*w->dirs))) == NULL) {
		w->dirs = old;
		w->cap = oldcap;
		return -1;
	}
	for (i = 0; i < oldcap; i++)
		if (old[i].wd != 0)
			w->dirs[wd_slot(w, old[i].wd)] = old[i];
	free(old);
	return 0;
}

/* Under mu: drop wd's entry, moving later ones of its run back. */
static void
wd_del(struct watch *w, int wd)
{
	size_t i, j, home;

	if (w->cap == 0 || w->dirs[i = wd_slot(w, wd)].wd != wd)
		return;
	free(w->dirs[i].path);
	w->dirs[i].wd = 0;
	w->n--;
	for (j = (i + 1) & (w->cap - 1); w->dirs[j].wd != 0;
	     j = (j + 1) & (w->cap - 1)) {
		home = ((uint32_t)w->dirs[j].wd * 2654435761u) & (w->cap - 1);
		/* Leave it when its home lies cyclically in (i, j]. */
		if (i <= j ? (home > i && home <= j) : (home > i || home <= j))
			continue;
		w->dirs[i] = w->dirs[j];
		w->dirs[j].wd = 0;
		i = j;
	}
}

/* Under mu: 1 when path is watched already (for the test limit only). */
static int
path_watched(const struct watch *w, const char *path)
{
	size_t i;

	for (i = 0; i < w->cap; i++)
		if (w->dirs[i].wd != 0 && strcmp(w->dirs[i].path, path) == 0)
			return 1;
	return 0;
}

void
watch_dir(struct watch *w, const char *path, int root, int pkg)
{
	uint32_t mask = WATCH_MASK | (root ? 0 : IN_DONT_FOLLOW);
	struct wdir *d;
	char *copy;
	int wd;

	if (w == NULL)
		return;
	pthread_mutex_lock(&w->mu);
	if (w->limited && w->n >= w->limit && !path_watched(w, path)) {
		wd = -1;
		errno = ENOSPC;
	} else {
		wd = inotify_add_watch(w->fd, path, mask);
	}
	if (wd == -1) {
		if (errno == ENOSPC && !w->warned)
			log_warnx("watch: %s: the inotify watch limit is "
				  "reached (raise the sysctl "
				  "fs.inotify.max_user_watches); new files in "
				  "directories not watched are found by the "
				  "periodic rescan",
			    path);
		else if (errno != ENOSPC)
			log_info("watch: %s: %s; left to the periodic rescan",
			    path, strerror(errno));
		w->warned |= errno == ENOSPC;
		pthread_mutex_unlock(&w->mu);
		return;
	}
	if ((copy = strdup(path)) == NULL ||
	    ((d = wd_find(w, wd)) == NULL && wd_room(w) == -1)) {
		free(copy);
		inotify_rm_watch(w->fd, wd);
		pthread_mutex_unlock(&w->mu);
		return;
	}
	if (d == NULL) {
		d = &w->dirs[wd_slot(w, wd)];
		d->wd = wd;
		w->n++;
	}
	free(d->path);
	d->path = copy;
	d->pkg = pkg;
	d->root = root;
	pthread_mutex_unlock(&w->mu);
}

/* ------------------------------------------------------------ the batch */

static uint64_t
str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

/* The slot of path in the batch's set (free or holding it). */
static size_t
pend_slot(const struct watch *w, const char *path)
{
	size_t i = (size_t)str_hash(path) & (w->scap - 1);

	while (w->slots[i] != 0 &&
	    strcmp(w->pend[w->slots[i] - 1].path, path) != 0)
		i = (i + 1) & (w->scap - 1);
	return i;
}

/* The batch is past repair: only a whole scan will do. */
static void
pend_full(struct watch *w, const char *why)
{
	if (!w->full)
		log_info("watch: %s: rescanning everything", why);
	w->full = 1;
	watch_changes_free(w->pend, w->np);
	free(w->slots);
	w->pend = NULL;
	w->slots = NULL;
	w->np = w->pcap = w->scap = 0;
}

/* Room for one more path in the batch; -1 when out of memory. */
static int
pend_room(struct watch *w)
{
	struct scan_change *v;
	size_t cap, i;

	if (w->np == w->pcap) {
		cap = w->pcap == 0 ? 64 : 2 * w->pcap;
		if ((v = realloc(w->pend, cap * sizeof(*v))) == NULL)
			return -1;
		w->pend = v;
		w->pcap = cap;
	}
	if ((w->np + 1) * 2 > w->scap) {
		free(w->slots);
		w->scap = w->scap == 0 ? 128 : 2 * w->scap;
		if ((w->slots = calloc(w->scap, sizeof(*w->slots))) == NULL) {
			w->scap = 0;
			return -1;
		}
		for (i = 0; i < w->np; i++)
			w->slots[pend_slot(w, w->pend[i].path)] =
			    (uint32_t)i + 1;
	}
	return 0;
}

/* Add path (a directory when dir) to the batch, once. */
static void
pend_add(struct watch *w, const char *path, int pkg, int dir)
{
	struct scan_change *c;
	size_t i;

	if (w->full)
		return;
	if (w->np == WATCH_PENDING_MAX) {
		pend_full(w, "more paths changed than a batch holds");
		return;
	}
	if (pend_room(w) == -1) {
		pend_full(w, "out of memory");
		return;
	}
	i = pend_slot(w, path);
	if (w->slots[i] != 0) {
		c = &w->pend[w->slots[i] - 1];
		c->dir |= dir != 0;
		return;
	}
	c = &w->pend[w->np];
	if ((c->path = strdup(path)) == NULL) {
		pend_full(w, "out of memory");
		return;
	}
	c->pkg = pkg != 0;
	c->dir = dir != 0;
	w->slots[i] = (uint32_t)++w->np;
}

/*
 * The events in buf[0..len): each becomes the path it names in the
 * batch, or changes the table of directories.
 */
static void
watch_events(struct watch *w, const char *buf, size_t len)
{
	const struct inotify_event *ev;
	char dir[PATH_MAX], path[PATH_MAX];
	struct wdir *d;
	size_t off;
	int pkg, root, n;

	for (off = 0; off + sizeof(*ev) <= len; off += sizeof(*ev) + ev->len) {
		ev = (const struct inotify_event *)(const void *)(buf + off);
		if (off + sizeof(*ev) + ev->len > len)
			break;
		if (ev->mask & IN_Q_OVERFLOW) {
			pend_full(w,
			    "events were lost (the inotify queue "
			    "overflowed)");
			continue;
		}
		pthread_mutex_lock(&w->mu);
		if ((d = wd_find(w, ev->wd)) == NULL) {
			pthread_mutex_unlock(&w->mu);
			continue;
		}
		snprintf(dir, sizeof(dir), "%s", d->path);
		pkg = d->pkg;
		root = d->root;
		if (ev->mask & IN_IGNORED)
			wd_del(w, ev->wd);
		pthread_mutex_unlock(&w->mu);
		if (ev->mask & IN_IGNORED)
			continue;
		if (ev->mask & IN_MOVE_SELF) {
			/* Its path is stale; a root's parent says nothing. */
			inotify_rm_watch(w->fd, ev->wd);
			if (root)
				pend_add(w, dir, pkg, 1);
			continue;
		}
		if (ev->len == 0 || ev->name[0] == '\0')
			continue; /* about the directory itself */
		n = snprintf(path, sizeof(path), "%s/%s",
		    strcmp(dir, "/") == 0 ? "" : dir, ev->name);
		if (n < 0 || (size_t)n >= sizeof(path))
			continue;
		pend_add(w, path, pkg, (ev->mask & IN_ISDIR) != 0);
	}
}

/* Run the ready callback once quiet, and not later than the max delay. */
static void
watch_arm(struct watch *w)
{
	int64_t now = clock_mono_ns(), elapsed, delay;
	struct timeval tv;

	if (w->np == 0 && !w->full)
		return;
	if (w->first_ns == 0)
		w->first_ns = now;
	elapsed = (now - w->first_ns) / 1000000;
	delay = WATCH_QUIET_MS;
	if (elapsed + delay > WATCH_MAX_DELAY_MS)
		delay = elapsed >= WATCH_MAX_DELAY_MS
		    ? 0
		    : WATCH_MAX_DELAY_MS - elapsed;
	tv.tv_sec = (time_t)(delay / 1000);
	tv.tv_usec = (suseconds_t)(delay % 1000 * 1000);
	evtimer_add(w->timer, &tv);
}

static void
watch_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct watch *w = arg;
	char buf[16384]
	    __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;
	int i;

	for (i = 0; i < READS_MAX; i++) {
		if ((n = read(fd, buf, sizeof(buf))) <= 0) {
			if (n == -1 && errno != EAGAIN && errno != EINTR)
				log_warn("watch: read");
			break;
		}
		watch_events(w, buf, (size_t)n);
	}
	watch_arm(w);
}

static void
watch_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct watch *w = arg;

	w->ready(w->arg);
}

int
watch_take(struct watch *w, struct scan_change **v, size_t *n, int *full)
{
	int any = w->np > 0 || w->full;

	*v = w->pend;
	*n = w->np;
	*full = w->full;
	free(w->slots);
	w->pend = NULL;
	w->slots = NULL;
	w->np = w->pcap = w->scap = 0;
	w->full = 0;
	w->first_ns = 0;
	evtimer_del(w->timer);
	return any;
}

void
watch_changes_free(struct scan_change *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i].path);
	free(v);
}

struct watch *
watch_new(struct event_base *base, void (*ready)(void *arg), void *arg,
    char *err, size_t errlen)
{
	const char *limit = getenv("DBGMIRROR_TEST_WATCH_MAX");
	struct watch *w;

	if ((w = calloc(1, sizeof(*w))) == NULL) {
		snprintf(err, errlen, "watch: out of memory");
		return NULL;
	}
	pthread_mutex_init(&w->mu, NULL);
	w->ready = ready;
	w->arg = arg;
	if (limit != NULL) {
		w->limited = 1;
		w->limit = (unsigned)strtoul(limit, NULL, 10);
	}
	if ((w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) == -1) {
		snprintf(err, errlen, "watch: inotify: %s", strerror(errno));
		pthread_mutex_destroy(&w->mu);
		free(w);
		return NULL;
	}
	if ((w->ev = event_new(base, w->fd, EV_READ | EV_PERSIST, watch_read_cb,
		 w)) == NULL ||
	    event_add(w->ev, NULL) == -1 ||
	    (w->timer = evtimer_new(base, watch_timer_cb, w)) == NULL) {
		snprintf(err, errlen, "watch: out of memory");
		watch_free(w);
		return NULL;
	}
	return w;
}

void
watch_free(struct watch *w)
{
	size_t i;

	if (w == NULL)
		return;
	if (w->ev != NULL)
		event_free(w->ev);
	if (w->timer != NULL)
		event_free(w->timer);
	close(w->fd);
	for (i = 0; i < w->cap; i++)
		if (w->dirs[i].wd != 0)
			free(w->dirs[i].path);
	free(w->dirs);
	watch_changes_free(w->pend, w->np);
	free(w->slots);
	pthread_mutex_destroy(&w->mu);
	free(w);
}
