/*
 * daemon/priv.h: giving up root.  Started as root, dbgmirrord becomes the
 * configured user in two steps: priv_drop() before it opens anything in
 * its cache (so the files it creates are the user's), keeping only the
 * capability to bind ports below 1024; priv_drop_caps() once the
 * listeners are bound.  Only daemon/main.c calls priv_drop(), from the main
 * thread before any other thread exists.
 */
#ifndef DAEMON_PRIV_H
#define DAEMON_PRIV_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Resolve user (its primary group, and no supplementary group): *uid and
 * *gid.  -1 with a message in err when there is no such user.
 */
int priv_lookup(const char *user, uid_t *uid, gid_t *gid, char *err,
    size_t errlen);

/*
 * As root: set no-new-privileges, narrow the capability bounding set to
 * CAP_NET_BIND_SERVICE, then become uid:gid with that one capability
 * kept.  -1 with a message in err on any failure.
 */
int priv_drop(uid_t uid, gid_t gid, char *err, size_t errlen);

/*
 * Clear every capability of the calling thread (capabilities are per
 * thread: threads started before this call keep theirs until they call it
 * too).  0 also when there were none.
 */
int priv_drop_caps(void);

/*
 * After priv_drop() and priv_drop_caps(): check that root cannot be
 * regained (setuid(0) and setgid(0) fail, no capability is left, the ids
 * are uid:gid everywhere).  -1 with a message in err otherwise.
 */
int priv_verify(uid_t uid, gid_t gid, char *err, size_t errlen);

#endif /* DAEMON_PRIV_H */
