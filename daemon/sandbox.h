/*
 * daemon/sandbox.h: the fence around the worker threads that parse
 * hostile input (ELF and DWARF of unknown origin, package archives,
 * later repository metadata).  The why and the how are in sandbox.c.
 */
#ifndef DAEMON_SANDBOX_H
#define DAEMON_SANDBOX_H

#include <stddef.h>

struct sandbox;

/* What the workers may touch on disk. */
struct sandbox_paths {
	char *const *dirs; /* read-only trees: the scan directories */
	size_t ndirs;
	char *const *packages; /* and the package directories */
	size_t npackages;
	const char *write; /* the one read-write tree: the cache directory */
};

/*
 * Prepare the fence (the Landlock rule set, the seccomp filter) on the
 * main thread; it is entered by each worker with sandbox_enter().  Parts
 * the kernel lacks are left out with a warning.  NULL when out of memory
 * or the filter cannot be built (err says).
 */
struct sandbox *sandbox_new(const struct sandbox_paths *paths, char *err,
    size_t errlen);
void sandbox_free(struct sandbox *sb);

/*
 * A pool thread-start hook (pool_new_init): fence in the calling thread
 * for good, and clear its capabilities.  arg is the struct sandbox.
 */
void sandbox_enter(void *arg);

/*
 * Test hook, called where a worker starts parsing a file: when the
 * environment has DBGMIRROR_TEST_SANDBOX_PROBE, do once per process what a
 * compromised parser would -- "connect:PORT" (send GET /sandbox-probe to
 * 127.0.0.1:PORT), "open:PATH" (read a file), "exec:PATH" (run a
 * program) -- and log whether it was allowed.  Nothing otherwise.
 */
void sandbox_probe(void);

#endif /* DAEMON_SANDBOX_H */
