/*
 * conf/options.h: the table of options (conf/options.c): one option set
 * from its text, the embedded defaults, where each value came from, and
 * what --help shows of each.
 *
 * Inside conf/, the loader (conf/config.c), --help (conf/help.c) and
 * --check-config (conf/check.c) use it; the rest of the tree has its
 * public part (config_init, config_free, config_where,
 * config_option_name, config_option_text) through conf/config.h.
 */
#ifndef CONF_OPTIONS_H
#define CONF_OPTIONS_H

#include <stddef.h>

#include "conf/diag.h"
#include "conf/settings.h"

/* The longest config file line (without its '\n'): the longest value. */
#define CONFIG_LINE_MAX 4096

/* Options the table may hold (it holds fewer: conf/options.c checks). */
#define CONFIG_OPTIONS_MAX 128

/*
 * What one layer (a file, or the command line) has set: per option, the
 * line that first set it, 0 when none did.  The command line uses 1.
 */
struct config_layer {
	unsigned long first[CONFIG_OPTIONS_MAX];
};

/* Fill cfg with the embedded defaults. */
int config_init(struct config *cfg);
void config_free(struct config *cfg);

/*
 * Where value idx (0 for an option of one value) of option name came
 * from: "FILE:LINE", "command line", "DEBUGINFOD_URLS" or "default".
 */
const char *config_where(const struct config *cfg, const char *name,
    size_t idx);

/* Iterate the schema: the name of option i, or NULL past the end. */
const char *config_option_name(size_t i);
/*
 * The value of option i in cfg as text, malloc'd (NULL when out of
 * memory): one line per value of a repeatable option, in the file's
 * words where it has them, so that two configurations hold the same
 * value exactly when the texts are equal (conf/diff.c).  A listen
 * address is the one configured, not the port 0 became.  shown: as it
 * may be logged, without a URL's user:password@, a header's value or the
 * store's keys.
 */
char *config_option_text(const struct config *cfg, size_t i, int shown);

/* The option named name[0..len): its index, or -1. */
int config_opt_find(const char *name, size_t len);
/* 1 when option o may be given more than once. */
int config_opt_repeatable(size_t o);

/* How a command line gives an option its value (config_opt_arg). */
enum config_opt_arg {
	CONFIG_ARG_VALUE, /* --name VALUE, --name=VALUE */
	CONFIG_ARG_BOOL, /* --name alone is on, --no-name off */
	CONFIG_ARG_BOOL_OR_FILE, /* as BOOL, or --name FILE: a value with '/' */
};
enum config_opt_arg config_opt_arg(size_t o);

/*
 * Set option o from its text, where being "FILE:LINE", "command line"...
 * When layer is not NULL, the first value the layer gives a repeatable
 * option replaces the list, and the option is marked as set at line.
 * Only a value that parses is stored or marks the option.  Bad values are
 * reported in diag as "where: name: "value": why"; returns 0 or -1.
 */
int config_opt_set(struct config *cfg, size_t o, const char *value,
    const char *where, struct config_diag *diag, struct config_layer *layer,
    unsigned long line);
/* Set option o to its embedded default: each blank-separated word of it. */
int config_opt_set_default(struct config *cfg, size_t o,
    struct config_diag *diag);

/* What --help shows of an option (conf/help.c). */
struct config_option_info {
	const char *name;
	const char *metavar; /* the shape of its value: DIR, FILE, SIZE... */
	const char *help;
	const char *shown_default;
};
/* 0 and *oi for option i of the schema; -1 past the end. */
int config_option_info(size_t i, struct config_option_info *oi);

#endif /* CONF_OPTIONS_H */
