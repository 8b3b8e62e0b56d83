/*
 * conf/diff.h: what differs between two configurations, for a running
 * daemon that reads its file again (SIGHUP: daemon/reload.c).
 *
 * Most settings apply live.  A few are bound to what the process built at
 * start-up (its listening sockets, its threads, the index's map, the
 * directories it locked and fenced, the user it became, the object store
 * it talks to): a change to one of them takes effect at the next start
 * only.  config_diff says which settings changed and which of those need
 * a restart; config_keep_restart then gives the new configuration the
 * running values of the latter, so that it says what is in effect.
 *
 * Pure functions of their arguments: any thread.
 */
#ifndef CONF_DIFF_H
#define CONF_DIFF_H

#include <stddef.h>

#include "conf/settings.h"

/* One setting that differs. */
struct config_change {
	const char *name; /* the option, as the schema spells it */
	int restart; /* cannot change live: takes effect at the next start */
	/* restart: the running value and the file's, as they may be shown */
	char *was, *now;
};

struct config_diff {
	struct config_change *v;
	size_t n;
};

/*
 * The settings whose values differ between old and now, in schema order,
 * into *d: 0, or -1 when out of memory.  Free with config_diff_free.
 */
int config_diff(const struct config *old, const struct config *now,
    struct config_diff *d);
void config_diff_free(struct config_diff *d);

/*
 * 1 when option name cannot change from old's value to now's in a
 * running daemon.  access-log is the one setting that depends on its
 * values: a file may become another file, or on/off; between stderr and
 * a file needs a restart.
 */
int config_restart_only(const char *name, const struct config *old,
    const struct config *now);

/*
 * Give now the values old has of every setting that needs a restart to
 * change (the running ones): 0, or -1 when out of memory (now is then
 * only good for config_free).
 */
int config_keep_restart(struct config *now, const struct config *old);

#endif /* CONF_DIFF_H */
