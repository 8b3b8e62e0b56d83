/*
 * conf/help.h: what dbgmirrord and dbgmirror say to a user who asks or
 * errs: --help's list of options, "did you mean" for a misspelt name,
 * and hints for the options of elfutils' debuginfod that users type out
 * of habit.
 *
 * Nothing here keeps state; it runs on the caller's thread.
 */
#ifndef CONF_HELP_H
#define CONF_HELP_H

#include <stddef.h>
#include <stdio.h>

/*
 * The name nth(i) gives (NULL past the end) that is closest to
 * word[0..len) when it is close, a third of its letters at most; NULL
 * when none is, or when word is itself a name.
 */
const char *config_closest(const char *word, size_t len,
    const char *(*nth)(size_t));

/*
 * " (did you mean PREFIXNAME?)" for config_closest's name, into buf, or
 * "" when there is none.  Returns buf.
 */
const char *config_did_you_mean(const char *word, size_t len,
    const char *(*nth)(size_t), const char *prefix, char *buf, size_t buflen);

/*
 * What to type instead of the short option c of elfutils' debuginfod
 * (-F, -U, -R, -p, -d, -t, -c) given with arg (the argument after it, or
 * NULL), into buf: "elfutils' debuginfod -p 8002 is dbgmirrord --listen
 * 8002 here ...".  Returns buf, or NULL when c is none of them.
 */
const char *config_elfutils_hint(char c, const char *arg, char *buf,
    size_t buflen);

/* Print every option with its value's shape, help and default. */
void config_usage(FILE *fp);

#endif /* CONF_HELP_H */
