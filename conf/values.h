/*
 * conf/values.h: parsers of single option values, shared by the config
 * file, the command line and the options' own checks (conf/options.c,
 * conf/config.c), and by the rest of the tree for URLs, durations and
 * repo lines (through conf/config.h).
 *
 * Each returns 0 and stores the value, or -1 with *why saying what was
 * wrong in one phrase (never quoting a secret).  They run at start-up, on
 * one thread, and use only conf/settings.h's types.
 */
#ifndef CONF_VALUES_H
#define CONF_VALUES_H

#include <stddef.h>
#include <stdint.h>

#include "conf/settings.h"

/*
 * Copy url into out (outlen bytes) without the "user:password@" of its
 * authority and without trailing '/'s: the only spelling of a URL that may
 * be shown (logs, metrics, answers) or compared with what the cache
 * recorded as an answer's source (purge --upstream).
 */
void config_url_public(const char *url, char *out, size_t outlen);

/*
 * A duration as options spell it (seconds, or a number with suffix s, m,
 * h or d): 0 and *seconds, or -1 with *why.
 */
int config_parse_duration(const char *s, uint64_t *seconds, const char **why);

/*
 * Parse a repo line into *r: 0, or -1 with *why.  An apt repository without
 * signed-by= is checked against /usr/share/keyrings/debian-archive-keyring.gpg
 * like apt does; its architectures default to amd64.
 */
int config_repo_parse(const char *line, struct config_repo *r,
    const char **why);

/* What a number may carry after its digits. */
enum config_number {
	CONFIG_NUMBER_PLAIN, /* digits only */
	CONFIG_NUMBER_DURATION, /* seconds, or a suffix s, m, h or d */
	CONFIG_NUMBER_SIZE, /* bytes, or K, M, G, T, KiB..TiB (1024), KB..TB */
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
/*
 * A listen line that starts with a port alone, "8002" or ":8002": every
 * address, as debuginfod -p, nginx's "listen 8002" and HAProxy's "bind
 * :8002" mean.  1 with the lines of each family (0.0.0.0:PORT and
 * [::]:PORT, the rest of the line after) in v4 and v6, len bytes each; 0
 * when s names an address.
 */
int config_listen_any(const char *s, char *v4, char *v6, size_t len);
/* "URL [key=value ...]" of an upstream line. */
int config_parse_upstream(const char *s, struct config_upstream *u,
    const char **why);
void config_upstream_clear(struct config_upstream *u);
/* "URL|* Name: value" of an upstream-header line. */
int config_check_header(const char *s, const char **why);
/* Append s (taken over) to l; -1 when out of memory (s freed). */
int config_strlist_add(struct config_strlist *l, char *s);
void config_strlist_clear(struct config_strlist *l);
/* A blank of the config syntax: space, tab, CR, FF, VT. */
int config_is_blank(char c);

#endif /* CONF_VALUES_H */
