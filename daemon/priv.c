/*
 * daemon/priv.c: giving up root (daemon/priv.h).
 *
 * The order matters.  The capability bounding set can only be narrowed
 * while the process still has CAP_SETPCAP, so that comes first; then
 * no-new-privileges (nothing exec'd later can gain privileges, and the
 * workers' seccomp filters need it); then the groups (setgroups and setgid
 * need root), and last the user, with PR_SET_KEEPCAPS so that the
 * permitted set survives the change of uid.  Of that set only
 * CAP_NET_BIND_SERVICE is made effective again, and priv_drop_caps()
 * clears it once the ports are bound.  Capabilities are raw capset(2)
 * calls: the sets of one thread, which is why the worker threads (started
 * between the two steps) clear their own.
 *
 * glibc applies setgroups, setresgid and setresuid to every thread of the
 * process; they are called before any thread exists anyway.
 */
#include "daemon/priv.h"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int
priv_lookup(const char *user, uid_t *uid, gid_t *gid, char *err, size_t errlen)
{
	struct passwd *pw;

	errno = 0;
	if ((pw = getpwnam(user)) == NULL) {
		snprintf(err, errlen, "user %s: %s", user,
		    errno != 0 ? strerror(errno) : "no such user");
		return -1;
	}
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	return 0;
}

/* The calling thread's capability sets: effective = permitted = caps. */
static int
caps_set(uint64_t caps)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3,
		0 };
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof(data));
	data[0].effective = data[0].permitted = (uint32_t)caps;
	data[1].effective = data[1].permitted = (uint32_t)(caps >> 32);
	return (int)syscall(SYS_capset, &hdr, data);
}

int
priv_drop(uid_t uid, gid_t gid, char *err, size_t errlen)
{
	int cap;

	for (cap = 0; cap <= CAP_LAST_CAP; cap++) {
		if (cap == CAP_NET_BIND_SERVICE)
			continue;
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == -1 &&
		    errno != EINVAL) {
			snprintf(err, errlen, "dropping capability %d: %s", cap,
			    strerror(errno));
			return -1;
		}
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1) {
		snprintf(err, errlen, "no-new-privileges: %s", strerror(errno));
		return -1;
	}
	if (setgroups(1, &gid) == -1 || setresgid(gid, gid, gid) == -1) {
		snprintf(err, errlen, "group %lu: %s", (unsigned long)gid,
		    strerror(errno));
		return -1;
	}
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) == -1 ||
	    setresuid(uid, uid, uid) == -1) {
		snprintf(err, errlen, "user %lu: %s", (unsigned long)uid,
		    strerror(errno));
		return -1;
	}
	if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) == -1 ||
	    caps_set(1ULL << CAP_NET_BIND_SERVICE) == -1) {
		snprintf(err, errlen, "keeping CAP_NET_BIND_SERVICE: %s",
		    strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Without a capability there is nothing to clear, and capset(2) is not
 * called: a systemd unit's SystemCallFilter=~@privileged refuses it.
 */
int
priv_drop_caps(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3,
		0 };
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data) == 0 && data[0].permitted == 0 &&
	    data[1].permitted == 0 && data[0].effective == 0 &&
	    data[1].effective == 0)
		return 0;
	return caps_set(0);
}

int
priv_verify(uid_t uid, gid_t gid, char *err, size_t errlen)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3,
		0 };
	struct __user_cap_data_struct data[2];
	uid_t r, e, s;
	gid_t rg, eg, sg;

	if (getresuid(&r, &e, &s) == -1 || r != uid || e != uid || s != uid ||
	    getresgid(&rg, &eg, &sg) == -1 || rg != gid || eg != gid ||
	    sg != gid) {
		snprintf(err, errlen, "the user or group did not change");
		return -1;
	}
	if (uid != 0 && (setuid(0) != -1 || seteuid(0) != -1)) {
		snprintf(err, errlen, "root could be regained");
		return -1;
	}
	if (gid != 0 && setgid(0) != -1) {
		snprintf(err, errlen, "group root could be regained");
		return -1;
	}
	if (syscall(SYS_capget, &hdr, data) == -1 || data[0].permitted != 0 ||
	    data[1].permitted != 0 || data[0].effective != 0 ||
	    data[1].effective != 0) {
		snprintf(err, errlen, "capabilities are left");
		return -1;
	}
	return 0;
}
