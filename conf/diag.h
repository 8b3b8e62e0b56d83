/*
 * conf/diag.h: the problems found while loading a configuration, one
 * "where: what" string each (struct config_diag), and how a value is
 * quoted in one.
 *
 * Nothing is printed here, so that --check-config can report every
 * problem with its file:line.  At the bottom of conf/ with
 * conf/settings.h: every file of conf/ may use it.
 */
#ifndef CONF_DIAG_H
#define CONF_DIAG_H

#include <stddef.h>

/*
 * Problems found while loading, one "where: what" string each, and the
 * option each is about: the one whose value or line it is, or for an
 * unknown name (or a line that is no "name = value") the option its name
 * is, or is closest to (did you mean); NULL when none is.  A reload that
 * fails reads opts to know which settings of the file it cannot trust
 * (daemon/reload.c).
 */
struct config_diag {
	char **msgs;
	const char **opts;
	size_t n;
};

void config_diag_free(struct config_diag *diag);
/* Append one "where: what" message to diag, about no option yet. */
void config_diag_add(struct config_diag *diag, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The last message of diag is about option name (a string of the schema). */
void config_diag_about(struct config_diag *diag, const char *name);

/* Most bytes of a bad value quoted back in a message. */
#define CONFIG_SHOWN_MAX 80

/*
 * Copy value into buf (size bytes) for quoting in a message: control
 * characters become '?' so that a hostile file cannot drive the terminal,
 * and long values are cut.  Returns buf.
 */
const char *config_shown(const char *value, char *buf, size_t size);

#endif /* CONF_DIAG_H */
