/*
 * cli/cli.h: what the dbgmirror commands share: the command line as
 * parsed, the configuration (with what the running daemon said of its
 * own), and the helpers of their output.
 *
 * The commands: cli/cli.c (the table, parsing, token, upload, prefetch),
 * cli/report.c (lookup, stats, misses, purge: the index), cli/admin.c
 * (the running daemon: its settings, rescan).  One thread.
 */
#ifndef CLI_CLI_H
#define CLI_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "conf/config.h"

struct index;
struct index_reader;

/* The command line and the configuration of one dbgmirror run. */
struct cli {
	struct config cfg;
	const char *command; /* its name */
	char *const *operands; /* after the command word */
	size_t noperands;
	int no_config; /* --no-config: nothing but it and the defaults */
	int cache_dir_given; /* --cache-dir on the command line */

	/* The commands' own options (each command takes some of them). */
	int json;
	const char *url; /* the daemon: --url */
	const char *top, *since; /* misses */
	int negative, misses, keep_store; /* purge */
	const char *upstream; /* purge --upstream */
	const char *jobs; /* prefetch */
	int executable; /* prefetch */
	const char *scopes; /* token */
	const char *token_file; /* upload */
	const char *wait; /* rescan: seconds, 0 for none */

	/* The running daemon whose settings were taken (cli_settings). */
	int from_daemon;
	long daemon_pid;
	char daemon_url[4096];
	char daemon_upstreams[4096]; /* its upstreams, blank-separated */
	char settings_note[600]; /* why none were taken, when it matters */
};

/*
 * The daemon's URL: --url, else the first listen address of the
 * configuration (a wildcard address meaning this host's loopback),
 * without a trailing '/'.  -1 when there is none.
 */
int cli_daemon_url(const struct cli *c, char *out, size_t len);

/*
 * For the commands that read the index: take the running daemon's
 * cache-dir, upload-dir and limits (GET /admin/config), since it may have
 * had them from its command line alone -- unless --cache-dir or
 * --no-config was given.  No daemon: the configuration's own, silently;
 * one that would not say: settings_note says why.
 */
void cli_settings(struct cli *c);

/* dbgmirror rescan. */
int cmd_rescan(struct cli *c);

/* dbgmirror lookup, stats, misses, purge (cli/report.c). */
int cmd_lookup(struct cli *c, struct index_reader *rd, const char *index);
int cmd_stats(struct cli *c, struct index_reader *rd, const char *index);
int cmd_misses(struct cli *c, struct index_reader *rd);
int cmd_purge(struct cli *c, struct index *idx);

/* "1.2 GiB", "512 bytes": bytes for a person, into buf. */
const char *cli_bytes(uint64_t bytes, char *buf, size_t len);

/* A JSON string (quotes included) of s, on fp. */
void cli_json_str(FILE *fp, const char *s);

#endif /* CLI_CLI_H */
