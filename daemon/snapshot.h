/*
 * daemon/snapshot.h: one generation of the configuration, as requests see
 * it.
 *
 * The daemon reads its configuration at start-up and again on SIGHUP
 * (daemon/reload.c).  What requests read of it -- the settings, the access
 * rules built from them, the request path's dependencies -- is a
 * snapshot: made whole before anyone sees it, never changed after, and
 * freed when the last holder lets it go.  The main thread holds the
 * current one; each event-loop thread holds the one it switched to last,
 * switching on its own loop (daemon/http.c); each exchange holds its
 * thread's from the moment its request is handed over to the end of its
 * response.  So no request ever sees a half-made or freed configuration,
 * and reading one costs no lock: taking and letting go are an atomic
 * count.
 *
 * Any thread.
 */
#ifndef DAEMON_SNAPSHOT_H
#define DAEMON_SNAPSHOT_H

#include <stdatomic.h>
#include <stddef.h>

struct access;
struct config;
struct resolve_deps;

struct snapshot {
	atomic_uint refs;
	const struct config *cfg;
	struct access *access; /* the access rules of cfg */
	const struct resolve_deps *rd; /* artifacts are answered from */
	/* The last reference went (on any thread): free s.  NULL: static. */
	void (*release)(struct snapshot *s);
};

/* Take a reference to s (not NULL); returns s. */
static inline struct snapshot *
snapshot_ref(struct snapshot *s)
{
	atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
	return s;
}

/* Let a reference go; s may be NULL. */
static inline void
snapshot_unref(struct snapshot *s)
{
	if (s != NULL &&
	    atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1 &&
	    s->release != NULL)
		s->release(s);
}

#endif /* DAEMON_SNAPSHOT_H */
