/*
 * daemon/reload.h: the configuration's generations (daemon/snapshot.h),
 * and SIGHUP's reload, which reads the file again and applies what
 * changed to the running daemon (daemon/reload.c).
 *
 * Main thread only: the reload runs on the main loop, which also drives
 * the upstreams and the repositories it applies to.
 */
#ifndef DAEMON_RELOAD_H
#define DAEMON_RELOAD_H

#include <stddef.h>

#include "daemon/access.h"

struct blobstore;
struct config;
struct config_args;
struct flight_table;
struct httpd;
struct misses;
struct passes;
struct producers;
struct repos;
struct resolve_deps;
struct snapshot;
struct symbuilds;
struct symtabs;
struct upstreams;

/*
 * What a reload reads and applies to: the command line it read at
 * start-up, and the long-lived parts, which each get what changed of
 * their settings rather than being made again.  All must outlive the
 * snapshots.
 */
struct reload_parts {
	const struct config_args *args; /* read again over the file */
	unsigned cpus; /* what threads = 0 and workers = 0 stand for */
	int verbose; /* the -v of the command line, over log-level */
	/* The request path's parts; its cfg the configuration at start-up. */
	const struct resolve_deps *rd;
	struct httpd *httpd; /* its threads switch to each new snapshot */
	struct producers *prod;
	struct upstreams *upstreams;
	struct repos *repos;
	struct passes *passes;
	struct blobstore *bs;
	struct flight_table *ft;
	struct misses *misses; /* there whatever misses-max says */
	struct symbuilds *symbuild; /* NULL: none */
	struct symtabs *tabs; /* NULL: none */
};

/*
 * Everything --check-config checks beyond the parse (conf/check.c's
 * files and directories, each TLS listener's certificate and key, the
 * access rules and token files), each problem told to problem and each
 * weakened default (the audit) to warning, with arg: how many problems.
 * *ap (unless ap is NULL) gets the access rules when they could be made.
 */
size_t reload_check(const struct config *cfg, access_say_fn problem,
    access_say_fn warning, void *arg, struct access **ap);
/*
 * What in cfg weakens a default security property, each said to say: the
 * access configuration's (access_audit of a), then redirects followed to
 * any host and the sandbox turned off.
 */
void reload_audit(const struct config *cfg, const struct access *a,
    access_say_fn say, void *arg);

/*
 * The first snapshot: of cfg, the configuration at start-up (which must
 * outlive every snapshot, as parts keep it), with the access rules a
 * (taken over).  A reference, or NULL when out of memory.
 */
struct snapshot *reload_first(const struct reload_parts *p,
    const struct config *cfg, struct access *a);

/*
 * A reload is over: every event-loop thread has the new snapshot; ok says
 * whether the file loaded.  On the thread of the last to switch (any).
 */
typedef void reload_done_fn(void *arg, int ok);

/*
 * SIGHUP: read the configuration again as at start-up (the file cur was
 * read from, the command line over it), check it as --check-config does,
 * apply what changed to the parts and switch the event-loop threads to the
 * new snapshot; each setting that needs a restart is logged in one line
 * of its own at once, and once every thread has switched, what changed in
 * one line ("reloaded FILE: ..."), then done(arg, ok) (done may be NULL).
 * A file that does not load changes nothing but the access rules (see
 * reload.c), and the reload is told as failed (its line "reload failed:
 * ...", metrics, /status).  Returns the current snapshot from now on, a
 * reference for the caller, who lets cur go.
 */
struct snapshot *reload_run(const struct reload_parts *p, struct snapshot *cur,
    reload_done_fn *done, void *arg);

#endif /* DAEMON_RELOAD_H */
