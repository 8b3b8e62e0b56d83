/*
 * daemon/hints.c: the next steps dbgmirrord logs once it serves (see
 * hints.h), for a user who just started it: the URL for DEBUGINFOD_URLS,
 * a gdb line, the status page, and how to add a source when it has none
 * -- the first thing a new user needs, and what its start-up lacked.
 *
 * Main thread, start-up only.
 */
#include "daemon/hints.h"

#include <sys/stat.h>

#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "conf/config.h"
#include "daemon/http.h"
#include "daemon/log.h"

/* The URL clients on this machine use for listen address 0. */
static void
client_url(const struct config *cfg, struct httpd *h, char *out, size_t len)
{
	const char *a = httpd_address(h, 0), *scheme;

	scheme = cfg->nlisten > 0 && cfg->listen[0].tls ? "https" : "http";
	if (a == NULL)
		snprintf(out, len, "http://127.0.0.1:8002");
	else if (strncmp(a, "0.0.0.0:", 8) == 0)
		snprintf(out, len, "%s://127.0.0.1:%s", scheme, a + 8);
	else if (strncmp(a, "[::]:", 5) == 0)
		snprintf(out, len, "%s://[::1]:%s", scheme, a + 5);
	else
		snprintf(out, len, "%s://%s", scheme, a);
}

/* 1 when dir exists and holds an entry; 0 said why not. */
static int
scan_dir_useful(const char *dir)
{
	struct dirent *de;
	DIR *d;

	if ((d = opendir(dir)) == NULL) {
		log_warn("scan-dir %s", dir);
		return 0;
	}
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0)
			break;
	closedir(d);
	if (de == NULL)
		log_info("scan-dir %s is empty: -dbgsym and -dbg packages "
			 "install their debug files in /usr/lib/debug",
		    dir);
	return de != NULL;
}

void
hints_log(const struct config *cfg, struct httpd *h)
{
	struct config_distro distro;
	char url[128];
	size_t i, useful = 0;

	client_url(cfg, h, url, sizeof(url));
	log_info("next: export DEBUGINFOD_URLS=%s for gdb, debuginfod-find, "
		 "perf and valgrind; status page %s/status",
	    url, url);
	log_info("next: DEBUGINFOD_URLS=%s gdb -iex 'set debuginfod enabled "
		 "on' PROGRAM; dbgmirror lookup PROGRAM says where its debug "
		 "file would come from",
	    url);
	for (i = 0; i < cfg->scan_dirs.n; i++)
		useful += scan_dir_useful(cfg->scan_dirs.v[i]);
	if (useful > 0 || cfg->scan_packages.n > 0 || cfg->repos.n > 0 ||
	    cfg->nupstreams > 0 || cfg->store != NULL)
		return;
	config_distro(&distro);
	log_warnx("nothing to serve yet: no scan-dir with files, no package "
		  "directory, repository or upstream.  Add one (dbgmirrord "
		  "option or %s line, see dbgmirror.conf(5)): scan-dir = DIR "
		  "of debug files%s%s%s%s%s",
	    CONFIG_DEFAULT_FILE,
	    distro.upstream[0] != '\0' ? "; upstream = " : "", distro.upstream,
	    distro.upstream[0] != '\0' ? " (the distribution's server)" : "",
	    distro.repo[0] != '\0' ? "; repo = " : "", distro.repo);
}
