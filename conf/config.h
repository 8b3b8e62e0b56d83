/*
 * conf/config.h: the configuration of dbgmirrord and dbgmirror, as the
 * rest of the tree sees it.
 *
 * One schema (the option table in conf/options.c) drives the config file
 * parser, the command-line parser, the defaults and --help.  Every option
 * is spelled the same in both places: "scan-dir = /x" in the file,
 * "--scan-dir /x" or "--scan-dir=/x" on the command line.  Layers apply in
 * order: embedded defaults, then the file, then the command line; for a
 * repeatable option the first value from a later layer replaces the whole
 * list.
 *
 * Problems are collected, never printed here, so --check-config can report
 * every one with its file:line.
 *
 * This header declares the loader (conf/config.c) and brings in what else
 * of conf/ the tree uses: struct config (conf/settings.h), the problems
 * (conf/diag.h), the defaults and origins of options (conf/options.h),
 * the paths (conf/paths.h) and single values (conf/values.h).  Inside
 * conf/, only the loader includes it (conf/options.c says the layers).
 */
#ifndef CONF_CONFIG_H
#define CONF_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "conf/diag.h"
#include "conf/options.h"
#include "conf/paths.h"
#include "conf/settings.h"
#include "conf/values.h"

/* What a command line said, before any file is read. */
struct config_args {
	const char *config_file; /* --config FILE; NULL: the default file */
	int no_config; /* --no-config: embedded defaults only */
	int check_config; /* --check-config */
	int verbose; /* number of -v */
	int version; /* --version */
	int help; /* -h, --help */
	char **pairs; /* schema options: name, value, name, ... */
	size_t npairs; /* number of (name, value) pairs */
	char **rest; /* operands, in order (points into argv) */
	size_t nrest;
};

/* The file read when the command line names none, if it exists. */
#define CONFIG_DEFAULT_FILE SYSCONFDIR "/dbgmirror/dbgmirror.conf"

/* Split a command line; bad flags are reported in diag, returns -1. */
int config_parse_args(struct config_args *args, int argc, char **argv,
    struct config_diag *diag);
void config_args_free(struct config_args *args);

/*
 * Load cfg from the file args names (or CONFIG_DEFAULT_FILE when it
 * exists, or nothing with --no-config), apply the command-line options on
 * top, then compute the environment-dependent defaults and validate.
 * Returns 0, or -1 with every problem in diag.
 */
int config_load(struct config *cfg, const struct config_args *args,
    struct config_diag *diag);

/* Parse one file into cfg (used by config_load; exposed for the tests). */
int config_load_file(struct config *cfg, const char *path,
    struct config_diag *diag);

/*
 * Set one option by name; where is "file:line" or "command line".  A
 * repeatable option appends; config_load() resets the list when a later
 * layer first sets it.
 */
int config_set(struct config *cfg, const char *name, const char *value,
    const char *where, struct config_diag *diag);

#endif /* CONF_CONFIG_H */
