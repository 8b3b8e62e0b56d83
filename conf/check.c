/*
 * conf/check.c: the files and directories the configuration names, as
 * the daemon will find them (dbgmirrord --check-config): each must exist,
 * be of its kind and be readable -- the directories it writes, writable --
 * by the daemon's user: the one "user" names when the check runs as root,
 * else the one running it.  Every problem is one message naming the file
 * and line (or the command line) that set the value.
 *
 * Run as root with a user to check for, it takes that user's effective
 * ids (with no supplementary group, as the daemon does) for the duration
 * of the checks and gives them back: it must run before any thread is
 * started, and it is the only code here that changes ids.
 *
 * Above the table of options (conf/options.c: config_where); only the
 * daemon calls it, nothing of conf/.
 */
#include "conf/check.h"

#include <sys/stat.h>

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf/objstore.h"
#include "conf/options.h"
#include "conf/values.h"

enum want {
	WANT_FILE, /* a regular file to read */
	WANT_DIR, /* a directory to read */
	WANT_WRITE_DIR, /* a directory to write, made when missing */
};

struct check {
	const struct config *cfg;
	struct config_diag *diag;
	int root_makes; /* root makes missing directories at start-up */
	uid_t uid; /* ... for this user, who must own existing ones */
	const char *as; /* whom it is checked for, in messages */
	size_t n; /* problems */
};

static void problem(struct check *, const char *, size_t, const char *,
    const char *, ...) __attribute__((format(printf, 5, 6)));

/* One problem with the value idx of option name, path. */
static void
problem(struct check *ck, const char *name, size_t idx, const char *path,
    const char *fmt, ...)
{
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	config_diag_add(ck->diag, "%s: %s: %s: %s",
	    config_where(ck->cfg, name, idx), name, path, what);
	config_diag_about(ck->diag, name);
	ck->n++;
}

/*
 * A directory the daemon makes when missing: root makes it for the user,
 * else the nearest existing directory above it must take a new entry.
 */
static void
check_makeable(struct check *ck, const char *name, const char *path)
{
	char up[PATH_MAX], *slash;
	struct stat st;

	if (ck->root_makes)
		return;
	snprintf(up, sizeof(up), "%s", path);
	while ((slash = strrchr(up, '/')) != NULL) {
		*(slash == up ? slash + 1 : slash) = '\0';
		if (stat(up, &st) == 0)
			break;
	}
	if (slash == NULL)
		return;
	if (!S_ISDIR(st.st_mode) ||
	    faccessat(AT_FDCWD, up, W_OK | X_OK, AT_EACCESS) == -1)
		problem(ck, name, 0, path,
		    "missing, and %s cannot make it in %s", ck->as, up);
}

/* Check path, the value idx of option name, for what is wanted of it. */
static void
check_path(struct check *ck, const char *name, size_t idx, const char *path,
    enum want want)
{
	struct stat st;
	int fd;

	if (stat(path, &st) == -1) {
		if (errno == ENOENT && want == WANT_WRITE_DIR)
			check_makeable(ck, name, path);
		else
			problem(ck, name, idx, path, "%s", strerror(errno));
		return;
	}
	if (want == WANT_FILE) {
		if (!S_ISREG(st.st_mode)) {
			problem(ck, name, idx, path, "not a regular file");
			return;
		}
		/* Opening it is what the daemon will do; ACLs count too. */
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
			problem(ck, name, idx, path, "%s cannot read it: %s",
			    ck->as, strerror(errno));
			return;
		}
		close(fd);
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		problem(ck, name, idx, path, "not a directory");
		return;
	}
	/* Started as root, the daemon takes no directory of another user. */
	if (want == WANT_WRITE_DIR && ck->root_makes && st.st_uid != ck->uid) {
		problem(ck, name, idx, path, "belongs to uid %lu, not to %s",
		    (unsigned long)st.st_uid, ck->as);
		return;
	}
	if (faccessat(AT_FDCWD, path,
		want == WANT_WRITE_DIR ? R_OK | W_OK | X_OK : R_OK | X_OK,
		AT_EACCESS) == -1)
		problem(ck, name, idx, path, "%s cannot %s it: %s", ck->as,
		    want == WANT_WRITE_DIR ? "write in" : "read",
		    strerror(errno));
}

/* Every path of cfg, as the current effective ids. */
static void
check_all(struct check *ck)
{
	const struct config *cfg = ck->cfg;
	struct config_repo r;
	const char *why;
	size_t i;

	check_path(ck, "cache-dir", 0, cfg->cache_dir, WANT_WRITE_DIR);
	/* Made and written when uploads can come (a token-file). */
	if (cfg->token_file != NULL)
		check_path(ck, "upload-dir", 0, cfg->upload_dir,
		    WANT_WRITE_DIR);
	for (i = 0; i < cfg->scan_dirs.n; i++)
		check_path(ck, "scan-dir", i, cfg->scan_dirs.v[i], WANT_DIR);
	for (i = 0; i < cfg->scan_packages.n; i++)
		check_path(ck, "scan-packages", i, cfg->scan_packages.v[i],
		    WANT_DIR);
	if (cfg->token_file != NULL)
		check_path(ck, "token-file", 0, cfg->token_file, WANT_FILE);
	if (cfg->admin_token_file != NULL)
		check_path(ck, "admin-token", 0, cfg->admin_token_file,
		    WANT_FILE);
	if (cfg->ca_file != NULL)
		check_path(ck, "ca-file", 0, cfg->ca_file, WANT_FILE);
	for (i = 0; i < cfg->nlisten; i++) {
		if (cfg->listen[i].cert != NULL)
			check_path(ck, "listen", i, cfg->listen[i].cert,
			    WANT_FILE);
		if (cfg->listen[i].key != NULL)
			check_path(ck, "listen", i, cfg->listen[i].key,
			    WANT_FILE);
		if (cfg->listen[i].client_ca != NULL)
			check_path(ck, "listen", i, cfg->listen[i].client_ca,
			    WANT_FILE);
	}
	for (i = 0; i < cfg->repos.n; i++)
		if (config_repo_parse(cfg->repos.v[i], &r, &why) == 0 &&
		    r.keyring[0] != '\0')
			check_path(ck, "repo", i, r.keyring, WANT_FILE);
	if (cfg->store != NULL && cfg->store->key_file != NULL)
		check_path(ck, "store", 0, cfg->store->key_file, WANT_FILE);
}

size_t
config_check_paths(const struct config *cfg, struct config_diag *diag)
{
	struct check ck = { cfg, diag, 0, 0, "this user", 0 };
	struct passwd *pw;
	gid_t *groups = NULL;
	char as[300];
	int ngroups = 0, switched = 0;

	if (geteuid() == 0 && cfg->user != NULL && cfg->user[0] != '\0') {
		if ((pw = getpwnam(cfg->user)) == NULL) {
			config_diag_add(diag, "%s: user: %s: no such user",
			    config_where(cfg, "user", 0), cfg->user);
			config_diag_about(diag, "user");
			return 1;
		}
		snprintf(as, sizeof(as), "the user %s", cfg->user);
		ck.as = as;
		ck.root_makes = 1;
		ck.uid = pw->pw_uid;
		/* As the daemon will be: the user and its group alone. */
		if ((ngroups = getgroups(0, NULL)) < 0 ||
		    (groups = calloc((size_t)ngroups + 1, sizeof(*groups))) ==
			NULL ||
		    (ngroups = getgroups(ngroups, groups)) < 0 ||
		    setgroups(0, NULL) == -1 || setegid(pw->pw_gid) == -1 ||
		    seteuid(pw->pw_uid) == -1) {
			config_diag_add(diag,
			    "--check-config: cannot take the ids of user %s: "
			    "%s",
			    cfg->user, strerror(errno));
			free(groups);
			return 1;
		}
		switched = 1;
	}
	check_all(&ck);
	if (switched &&
	    (seteuid(0) == -1 || setegid(0) == -1 ||
		setgroups((size_t)ngroups, groups) == -1)) {
		config_diag_add(diag,
		    "--check-config: cannot become root again");
		ck.n++;
	}
	free(groups);
	return ck.n;
}
