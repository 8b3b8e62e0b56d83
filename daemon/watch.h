/*
 * daemon/watch.h: files added, changed and removed under the scan
 * directories, as inotify reports them, gathered into batches for
 * scan_changes() (sources/scan.h).
 *
 * The scan adds a watch on every directory it walks (scan_opts.dir_cb),
 * so the directories watched are those the last scans reached; the loop
 * reads the events, turns each into the path it names, and when they
 * have been quiet for WATCH_QUIET_MS (or have kept coming for
 * WATCH_MAX_DELAY_MS) says a batch is ready.  Nothing here reads a file.
 *
 * Threads: watch_new(), watch_take() and watch_free() on the thread of
 * the event base given, which also runs the ready callback; watch_dir()
 * on any thread (the scan's worker).
 */
#ifndef DAEMON_WATCH_H
#define DAEMON_WATCH_H

#include <stddef.h>

#include "sources/scan.h"

struct event_base;
struct watch;

#define WATCH_QUIET_MS 250
#define WATCH_MAX_DELAY_MS 2000
/* More changed paths than this in one batch: a whole scan instead. */
#define WATCH_PENDING_MAX 20000

/*
 * An inotify instance read on base; ready(arg) on base's thread when a
 * batch waits for watch_take().  NULL with err when inotify cannot be had
 * (the periodic rescan then works alone).
 */
struct watch *watch_new(struct event_base *base, void (*ready)(void *arg),
    void *arg, char *err, size_t errlen);
void watch_free(struct watch *w);

/*
 * Any thread: watch the directory at path, a configured root when root is
 * 1, under a package root when pkg is 1.  Failures are logged (the
 * user's watch limit once, with what to do); the directory is then left
 * to the periodic rescan.
 */
void watch_dir(struct watch *w, const char *path, int root, int pkg);

/*
 * The batch gathered since the last call: *v (malloc'd, each path too:
 * watch_changes_free()) of *n changed paths, and *full set when only a
 * whole scan can tell what changed (events were lost: the kernel's queue
 * overflowed, or more than WATCH_PENDING_MAX paths changed), *n then 0.
 * 1 when there was anything, 0 when not.
 */
int watch_take(struct watch *w, struct scan_change **v, size_t *n, int *full);
void watch_changes_free(struct scan_change *v, size_t n);

#endif /* DAEMON_WATCH_H */
