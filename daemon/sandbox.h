/*
 * daemon/sandbox.h: the fence around the worker threads that parse
 * hostile input (ELF and DWARF of unknown origin, package archives,
 * later repository metadata).  The why and the how are in sandbox.c.
 */
#ifndef DAEMON_SANDBOX_H
#define DAEMON_SANDBOX_H

#include <stddef.h>

struct sandbox;

/*
 * Prepare the fence on the main thread: the Landlock rule set, which lets
 * the workers write only beneath cache_dir and upload_dir (when it exists
 * now), and the seccomp filter.  Each
 * worker enters it with sandbox_enter().  Parts the kernel lacks are left
 * out with a warning.  NULL when out of memory or the filter cannot be
 * built (err says).
 */
struct sandbox *sandbox_new(const char *cache_dir, const char *upload_dir,
    char *err, size_t errlen);
void sandbox_free(struct sandbox *sb);

/*
 * Fence in the calling thread for good (a pool thread-start hook: see
 * pool_new_init).  arg is the struct sandbox.
 */
void sandbox_enter(void *arg);

/*
 * Test hook, called where a worker starts parsing a file: when the
 * environment has DBGMIRROR_TEST_SANDBOX_PROBE, do once per process what a
 * compromised parser would -- "connect:PORT" (send GET /sandbox-probe to
 * 127.0.0.1:PORT), "write:PATH" (create a file), "exec:PATH" (run a
 * program) -- and log whether it was allowed.  Nothing otherwise.
 */
void sandbox_probe(void);

#endif /* DAEMON_SANDBOX_H */
