/*
 * conf/paths.h: the directories and paths of the configuration
 * (conf/paths.c): the defaults that depend on who runs the program,
 * relative paths made absolute, and the sources this machine's
 * distribution offers.
 */
#ifndef CONF_PATHS_H
#define CONF_PATHS_H

#include "conf/diag.h"
#include "conf/settings.h"

/* The default cache directory for this user (root, XDG, HOME). */
char *config_default_cache_dir(void);
/* The default upload directory for this user (root, XDG, HOME). */
char *config_default_upload_dir(void);

/*
 * Make the relative paths of cfg absolute against the current directory
 * (config_load does it).  -1 with the problem in diag.
 */
int config_paths_absolute(struct config *cfg, struct config_diag *diag);

/*
 * What this machine's distribution (/etc/os-release) offers as sources:
 * its public debuginfod server, and its debug archive as a repo line;
 * each "" when not known.
 */
struct config_distro {
	char upstream[128];
	char repo[256];
};
void config_distro(struct config_distro *d);

#endif /* CONF_PATHS_H */
