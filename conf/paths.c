/*
 * conf/paths.c: the directories and paths of the configuration: the
 * defaults that depend on who runs the program (cache-dir, upload-dir),
 * relative paths made absolute when the configuration is loaded, and the
 * sources this machine's distribution offers (what to suggest to a user
 * whose server has none).
 *
 * It uses only the bottom of conf/ (conf/settings.h, conf/diag.h);
 * conf/config.c's loader calls it.  Runs at start-up on one thread;
 * getpwuid() is not thread-safe.
 */
#include "conf/paths.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* "dir/name", without doubling a '/' that dir ends with. */
static char *
path_join(const char *dir, const char *name)
{
	size_t len = strlen(dir);
	char *s;

	if (asprintf(&s, "%s%s%s", dir,
		(len > 0 && dir[len - 1] == '/') ? "" : "/", name) < 0)
		return NULL;
	return s;
}

/*
 * A directory of this user: as root, the system's (rootdir); else under
 * $xdg when it is absolute, or under home/homesub, with leaf appended.
 */
static char *
user_dir(const char *rootdir, const char *xdg, const char *homesub,
    const char *leaf)
{
	const char *dir;
	struct passwd *pw;
	char *base, *s;

	if (geteuid() == 0)
		return strdup(rootdir);
	dir = getenv(xdg);
	if (dir != NULL && dir[0] == '/')
		return path_join(dir, leaf);
	dir = getenv("HOME");
	if (dir == NULL || dir[0] != '/') {
		pw = getpwuid(geteuid());
		dir = pw != NULL ? pw->pw_dir : NULL;
	}
	if (dir == NULL || dir[0] != '/' ||
	    (base = path_join(dir, homesub)) == NULL)
		return NULL;
	s = path_join(base, leaf);
	free(base);
	return s;
}

char *
config_default_cache_dir(void)
{
	return user_dir("/var/cache/dbgmirror", "XDG_CACHE_HOME", ".cache",
	    "dbgmirror");
}

char *
config_default_upload_dir(void)
{
	return user_dir("/var/lib/dbgmirror/uploads", "XDG_DATA_HOME",
	    ".local/share", "dbgmirror/uploads");
}

/* Prefix a relative path with cwd; the path need not exist. */
static int
make_absolute(char **path, const char *cwd)
{
	char *s;

	if ((*path)[0] == '/')
		return 0;
	if ((s = path_join(cwd, *path)) == NULL)
		return -1;
	free(*path);
	*path = s;
	return 0;
}

int
config_paths_absolute(struct config *cfg, struct config_diag *diag)
{
	char *cwd;
	size_t i;
	int rc = 0, relative;

	relative = (cfg->cache_dir != NULL && cfg->cache_dir[0] != '/') ||
	    (cfg->upload_dir != NULL && cfg->upload_dir[0] != '/') ||
	    (cfg->access_log_file != NULL && cfg->access_log_file[0] != '/') ||
	    (cfg->ca_file != NULL && cfg->ca_file[0] != '/') ||
	    (cfg->token_file != NULL && cfg->token_file[0] != '/');
	for (i = 0; i < cfg->scan_dirs.n; i++)
		if (cfg->scan_dirs.v[i][0] != '/')
			relative = 1;
	for (i = 0; i < cfg->scan_packages.n; i++)
		if (cfg->scan_packages.v[i][0] != '/')
			relative = 1;
	for (i = 0; i < cfg->source_roots.n; i++)
		if (cfg->source_roots.v[i][0] != '/')
			relative = 1;
	if (!relative)
		return 0;
	if ((cwd = getcwd(NULL, 0)) == NULL) {
		config_diag_add(diag, "%s: current directory: %s", __func__,
		    strerror(errno));
		return -1;
	}
	if (cfg->cache_dir != NULL && make_absolute(&cfg->cache_dir, cwd) == -1)
		rc = -1;
	if (cfg->upload_dir != NULL &&
	    make_absolute(&cfg->upload_dir, cwd) == -1)
		rc = -1;
	if (cfg->ca_file != NULL && make_absolute(&cfg->ca_file, cwd) == -1)
		rc = -1;
	if (cfg->access_log_file != NULL &&
	    make_absolute(&cfg->access_log_file, cwd) == -1)
		rc = -1;
	if (cfg->token_file != NULL &&
	    make_absolute(&cfg->token_file, cwd) == -1)
		rc = -1;
	for (i = 0; i < cfg->scan_dirs.n; i++)
		if (make_absolute(&cfg->scan_dirs.v[i], cwd) == -1)
			rc = -1;
	for (i = 0; i < cfg->scan_packages.n; i++)
		if (make_absolute(&cfg->scan_packages.v[i], cwd) == -1)
			rc = -1;
	for (i = 0; i < cfg->source_roots.n; i++)
		if (make_absolute(&cfg->source_roots.v[i], cwd) == -1)
			rc = -1;
	free(cwd);
	if (rc == -1)
		config_diag_add(diag, "%s: out of memory", __func__);
	return rc;
}

void
config_distro(struct config_distro *d)
{
	static const struct {
		const char *id, *upstream;
	} known[] = {
		{ "debian", "https://debuginfod.debian.net" },
		{ "ubuntu", "https://debuginfod.ubuntu.com" },
		{ "fedora", "https://debuginfod.fedoraproject.org" },
		{ "arch", "https://debuginfod.archlinux.org" },
		{ "opensuse-tumbleweed", "https://debuginfod.opensuse.org" },
	};
	char line[256], id[64] = "", codename[64] = "", *v;
	FILE *fp;
	size_t i;

	memset(d, 0, sizeof(*d));
	if ((fp = fopen("/etc/os-release", "re")) == NULL)
		return;
	while (fgets(line, sizeof(line), fp) != NULL) {
		line[strcspn(line, "\r\n")] = '\0';
		if ((v = strchr(line, '=')) == NULL)
			continue;
		*v++ = '\0';
		if (*v == '"') {
			v++;
			v[strcspn(v, "\"")] = '\0';
		}
		if (strcmp(line, "ID") == 0)
			snprintf(id, sizeof(id), "%s", v);
		else if (strcmp(line, "VERSION_CODENAME") == 0)
			snprintf(codename, sizeof(codename), "%s", v);
	}
	fclose(fp);
	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(id, known[i].id) == 0)
			snprintf(d->upstream, sizeof(d->upstream), "%s",
			    known[i].upstream);
	/* Debian's debug archive is signed with its archive keyring. */
	if (strcmp(id, "debian") == 0 && codename[0] != '\0')
		snprintf(d->repo, sizeof(d->repo),
		    "deb http://deb.debian.org/debian-debug %s-debug main",
		    codename);
}
