/*
 * conf/values.h: parsers of single option values, shared by the config
 * file, the command line and the options' own checks (conf/config.c).
 *
 * Each returns 0 and stores the value, or -1 with *why saying what was
 * wrong in one phrase (never quoting a secret).  They run at start-up, on
 * one thread.
 */
#ifndef CONF_VALUES_H
#define CONF_VALUES_H

#include <stddef.h>
#include <stdint.h>

#include "conf/config.h"

/* What a number may carry after its digits. */
enum config_number {
	CONFIG_NUMBER_PLAIN, /* digits only */
	CONFIG_NUMBER_DURATION, /* seconds, or a suffix s, m, h or d */
	CONFIG_NUMBER_SIZE, /* bytes, or a suffix K, M, G or T */
};

/*
 * Decimal digits, then at most one suffix of kind; signs, hex, blanks and
 * anything above UINT64_MAX after scaling are refused.
 */
int config_parse_number(const char *s, enum config_number kind, uint64_t *out,
    const char **why);
/* on/off, yes/no, true/false, 1/0. */
int config_parse_bool(const char *s, int *out);
/* One of the n words: its index in *out. */
int config_parse_word(const char *s, const char *const words[], size_t n,
    int *out);
/* A listen address, "IPv4:PORT" or "[IPv6]:PORT" (numeric only). */
int config_parse_listen(const char *s, struct config_listen *l,
    const char **why);
void config_listen_clear(struct config_listen *l);
/* "URL [key=value ...]" of an upstream line. */
int config_parse_upstream(const char *s, struct config_upstream *u,
    const char **why);
void config_upstream_clear(struct config_upstream *u);
/* "URL|* Name: value" of an upstream-header line. */
int config_check_header(const char *s, const char **why);
/*
 * Append s (taken over) to l, with where it came from (copied; NULL for
 * nowhere to say); -1 when out of memory (s freed).
 */
int config_strlist_add(struct config_strlist *l, char *s, const char *where);
void config_strlist_clear(struct config_strlist *l);
/* A blank of the config syntax: space, tab, CR, FF, VT. */
int config_is_blank(char c);

#endif /* CONF_VALUES_H */
