/*
 * cli/cli.c: dbgmirror, the admin command line: its commands, their
 * options and help, and the commands that need no index (token, upload,
 * prefetch).
 *
 * The configuration is the daemon's: the same file (CONFIG_DEFAULT_FILE,
 * or --config), the same options on the command line.  The commands that
 * read the index (cli/report.c) take the running daemon's cache-dir and
 * upload-dir from it when it answers (cli/admin.c: it may have had them
 * from its command line alone); prefetch, upload and rescan talk to the
 * daemon.  Each command has its own options, which may stand anywhere
 * after the command word; every other option is one of the
 * configuration's.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "autoconf.h"
#include "cache/index.h"
#include "cli/cli.h"
#include "cli/prefetch.h"
#include "conf/help.h"
#include "daemon/access.h"
#include "daemon/clock.h"
#include "fetchers/put.h"
#include "indexer/buildid.h"
#include "indexer/elf.h"

/* The commands' own options: name, whether a value follows, its field. */
struct cmd_opt {
	const char *name;
	int value; /* 1: a value (const char *), 0: a flag (int) */
	size_t off; /* in struct cli */
};

#define CLI_FIELD(m) offsetof(struct cli, m)

static const struct cmd_opt cmd_opts[] = {
	{ "json", 0, CLI_FIELD(json) },
	{ "url", 1, CLI_FIELD(url) },
	{ "top", 1, CLI_FIELD(top) },
	{ "since", 1, CLI_FIELD(since) },
	{ "negative", 0, CLI_FIELD(negative) },
	{ "misses", 0, CLI_FIELD(misses) },
	{ "keep-store", 0, CLI_FIELD(keep_store) },
	{ "upstream", 1, CLI_FIELD(upstream) },
	{ "jobs", 1, CLI_FIELD(jobs) },
	{ "executable", 0, CLI_FIELD(executable) },
	{ "scopes", 1, CLI_FIELD(scopes) },
	{ "token-file", 1, CLI_FIELD(token_file) },
	{ "wait", 1, CLI_FIELD(wait) },
};
#define NCMD_OPTS (sizeof(cmd_opts) / sizeof(cmd_opts[0]))

enum uses { USES_NOTHING, USES_INDEX, USES_INDEX_RW };

struct command {
	const char *name;
	const char *synopsis;
	const char *summary; /* one line of the general usage */
	const char *help; /* what --help adds */
	const char *opts; /* its options, blank-separated, without -- */
	enum uses uses;
	size_t min, max; /* operands */
	int (*run)(struct cli *c);
};

static int run_index(struct cli *c);
static int run_token(struct cli *c);
static int run_upload(struct cli *c);
static int run_prefetch(struct cli *c);

static const struct command commands[] = {
	{ "lookup", "lookup [--json] ID|FILE",
	    "where the daemon would find a build-id (or an ELF file's)",
	    "Where the daemon would find the debuginfo and the executable of\n"
	    "a build-id, or of the ELF file FILE (its build-id is printed\n"
	    "first): local files, package members, the cache and uploads,\n"
	    "remote repositories; else the upstreams it would ask, or\n"
	    "nowhere, with what to do about it.  Exit status 0 when one of\n"
	    "them is here, 1 when neither is.\n",
	    "json url", USES_INDEX, 1, 1, run_index },
	{ "stats", "stats [--json]",
	    "what the index holds: files, packages, cache, uploads, scans",
	    "Counts of the index: local files and packages indexed, the\n"
	    "cache and the uploads against their caps, negative entries,\n"
	    "missing ids, the last scan (or the one running) and each\n"
	    "repository's last refresh.  The first line says which index:\n"
	    "the running daemon's, --cache-dir's or the configuration's.\n",
	    "json url", USES_INDEX, 0, 0, run_index },
	{ "misses", "misses [--top N] [--since DURATION] [--json]",
	    "the build-ids asked for and not found, the most missed first",
	    "The missing-id report: each build-id asked for and not found,\n"
	    "how often, when first and last, the kinds asked for and the\n"
	    "last client.  An id leaves the report, kind by kind, once it is\n"
	    "served (from the cache, an upload, a package or a local file).\n"
	    "--top N: the N most missed; --since DURATION (e.g. 1d): the\n"
	    "ids missed within it (their counts are all-time).\n",
	    "json url top since", USES_INDEX, 0, 0, run_index },
	{ "purge", "purge [--json] ID | --negative | --misses | --upstream URL",
	    "forget cached files, negative entries, missing ids",
	    "purge ID: the cached files, uploads, negative entries and\n"
	    "missing-id record of ID, and its objects in the store unless\n"
	    "--keep-store.  --negative: every negative and error entry.\n"
	    "--misses: the whole missing-id report.  --upstream URL: the\n"
	    "files fetched from URL.\n",
	    "json url negative misses keep-store upstream", USES_INDEX_RW, 0, 1,
	    run_index },
	{ "rescan", "rescan [--wait SECONDS] [--url URL] [--json]",
	    "have the running daemon rescan now, and say what it found",
	    "Ask the running daemon (POST /admin/rescan, under admin-access\n"
	    "and admin-token) to scan its scan-dir and scan-packages now,\n"
	    "wait for that scan to finish (--wait SECONDS, 600 by default;\n"
	    "0 does not wait) and print what it found.  The daemon is the\n"
	    "one at --url, else at the configuration's first listen address.\n",
	    "json url wait", USES_NOTHING, 0, 0, cmd_rescan },
	{ "prefetch",
	    "prefetch [--jobs N] [--url URL] [--executable] [--json] "
	    "[ID|FILE|DIR|-]...",
	    "have the daemon fetch the debuginfo of ids, files, core files",
	    "Have the daemon fetch the debuginfo (and with --executable the\n"
	    "executables) of build-ids, of ELF files and the libraries they\n"
	    "load, of the objects a core file had mapped, of directories of\n"
	    "them; standard input when no operand is given.  --jobs N\n"
	    "requests at once (8).  Ends with a summary (--json: as JSON).\n",
	    "json url jobs executable", USES_NOTHING, 0, (size_t)-1,
	    run_prefetch },
	{ "token", "token NAME [--scopes LIST] [--json]",
	    "a new bearer token and its token-file line",
	    "A new random bearer token (shown once) and the token-file line\n"
	    "that allows it: its SHA-256, the scopes and NAME.  LIST: a comma\n"
	    "list of read, metadata, metrics, status, admin, upload, or all\n"
	    "(read by default).\n",
	    "json scopes", USES_NOTHING, 1, 1, run_token },
	{ "upload", "upload [--url URL] [--token-file FILE] [--json] FILE...",
	    "PUT ELF files to the daemon as debuginfo or executable",
	    "PUT each ELF file, its build-id read from it, as debuginfo when\n"
	    "it has .debug_* sections and as executable when it has loadable\n"
	    "code (an unstripped binary is both); the token from FILE (its\n"
	    "first line) or DBGMIRROR_TOKEN.\n",
	    "json url token-file", USES_NOTHING, 1, (size_t)-1, run_upload },
	{ "help", "help [COMMAND]", "this help, or a command's",
	    "The general usage, or COMMAND's.\n", "", USES_NOTHING, 0, 1,
	    NULL },
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const char *
command_name(size_t i)
{
	return i < NCOMMANDS ? commands[i].name : NULL;
}

static const struct command *
command_find(const char *name)
{
	size_t i;

	for (i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

static void
usage(FILE *fp)
{
	size_t i;

	fprintf(fp,
	    "usage: dbgmirror [--config FILE] [--OPTION VALUE...] COMMAND "
	    "[ARGS]\n\n");
	for (i = 0; i < NCOMMANDS; i++)
		fprintf(fp, "  %-9s %s\n", commands[i].name,
		    commands[i].summary);
	fprintf(fp,
	    "\n"
	    "dbgmirror COMMAND --help (or dbgmirror help COMMAND) tells more.\n"
	    "The configuration is the daemon's: %s,\n"
	    "or --config FILE; any of its options may be given as --name\n"
	    "VALUE (dbgmirrord --help lists them).  lookup, stats, misses and\n"
	    "purge read the running daemon's index when it answers at --url\n"
	    "or the first listen address, else the configuration's.\n"
	    "\n"
	    "Exit status: 0 done; 1 not found or error; 2 bad usage.\n",
	    CONFIG_DEFAULT_FILE);
}

static void
command_usage(FILE *fp, const struct command *cmd)
{
	fprintf(fp, "usage: dbgmirror %s\n\n%s", cmd->synopsis, cmd->help);
	if (cmd->opts[0] != '\0' && strstr(cmd->opts, "url") != NULL)
		fprintf(fp,
		    "\n--url URL: the daemon (else the configuration's first "
		    "listen address).\n");
	if (strstr(cmd->opts, "json") != NULL)
		fprintf(fp, "--json: one JSON object, exact numbers.\n");
}

/* 1 when word (a blank-separated list) holds name[0..len). */
static int
listed(const char *list, const char *name, size_t len)
{
	const char *p;

	for (p = list; *p != '\0'; p += strcspn(p, " "), p += *p == ' ')
		if (strcspn(p, " ") == len && strncmp(p, name, len) == 0)
			return 1;
	return 0;
}

/* The option of cmd_opts named name[0..len), or NULL. */
static const struct cmd_opt *
cmd_opt_find(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < NCMD_OPTS; i++)
		if (strlen(cmd_opts[i].name) == len &&
		    strncmp(cmd_opts[i].name, name, len) == 0)
			return &cmd_opts[i];
	return NULL;
}

/* The flags the configuration parser takes besides the options. */
static const char *const flags[] = { "config", "no-config", "check-config",
	"verbose", "version", "help" };

/*
 * For did-you-mean: the names of the current command's options, then the
 * configuration's options and flags.
 */
static const struct command *suggest_for;

static const char *
option_name(size_t i)
{
	size_t k, n = 0;

	for (k = 0; suggest_for != NULL && k < NCMD_OPTS; k++)
		if (listed(suggest_for->opts, cmd_opts[k].name,
			strlen(cmd_opts[k].name)) &&
		    n++ == i)
			return cmd_opts[k].name;
	i -= n;
	if (i < sizeof(flags) / sizeof(flags[0]))
		return flags[i];
	return config_option_name(i - sizeof(flags) / sizeof(flags[0]));
}

/* 1 when "--name" is the configuration's (an option, its no-, a flag). */
static int
config_knows(const char *name, size_t len)
{
	const char *o;
	size_t i;

	for (i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (strlen(flags[i]) == len &&
		    strncmp(flags[i], name, len) == 0)
			return 1;
	if (len > 3 && strncmp(name, "no-", 3) == 0) {
		name += 3;
		len -= 3;
	}
	for (i = 0; (o = config_option_name(i)) != NULL; i++)
		if (strlen(o) == len && strncmp(o, name, len) == 0)
			return 1;
	return 0;
}

/*
 * The index of the command word in argv, found as the first operand
 * once the commands' options (with their values) are set aside; 0 when
 * there is none.
 */
static int
command_index(int argc, char **argv)
{
	struct config_args probe;
	struct config_diag diag = { 0 };
	const struct cmd_opt *o;
	char **av;
	int i, n = 1, rc = 0;
	size_t len;

	if ((av = calloc((size_t)argc + 1, sizeof(*av))) == NULL)
		return 0;
	av[0] = argv[0];
	for (i = 1; i < argc; i++) {
		len = strcspn(argv[i], "=");
		if (strncmp(argv[i], "--", 2) == 0 &&
		    (o = cmd_opt_find(argv[i] + 2, len - 2)) != NULL) {
			if (o->value && argv[i][len] == '\0')
				i++;
			continue;
		}
		av[n++] = argv[i];
	}
	config_parse_args(&probe, n, av, &diag);
	for (i = 1; probe.nrest > 0 && i < argc; i++)
		if (argv[i] == probe.rest[0]) {
			rc = i;
			break;
		}
	config_args_free(&probe);
	config_diag_free(&diag);
	free(av);
	return rc;
}

/*
 * Take the command's own options out of argv into c, the rest into out
 * (argc + 1 entries; the command word left out).  -1 having said what was
 * wrong: an option of another command, one repeated or without its
 * value, or an option no one knows (with a suggestion).
 */
static int
cmd_split(struct cli *c, const struct command *cmd, int argc, char **argv,
    int at, char **out, int *outc)
{
	const struct cmd_opt *o;
	const char *a, *val;
	char hint[256];
	size_t len;
	int i, n = 0, operands = 0;

	suggest_for = cmd;
	for (i = 0; i < argc; i++) {
		a = argv[i];
		if (i == at)
			continue;
		if (i == 0 || operands || strncmp(a, "--", 2) != 0) {
			out[n++] = argv[i];
			continue;
		}
		if (a[2] == '\0') {
			operands = 1;
			out[n++] = argv[i];
			continue;
		}
		len = strcspn(a + 2, "=");
		o = cmd_opt_find(a + 2, len);
		if (o != NULL && listed(cmd->opts, o->name, len)) {
			if (o->value) {
				val = a[2 + len] == '=' ? a + 3 + len
				    : i + 1 < argc      ? argv[++i]
							: NULL;
				if (val == NULL ||
				    *(const char **)((char *)c + o->off) !=
					NULL) {
					fprintf(stderr,
					    "dbgmirror: %s: --%s %s\n",
					    cmd->name, o->name,
					    val == NULL ? "needs a value"
							: "given twice");
					return -1;
				}
				*(const char **)((char *)c + o->off) = val;
			} else if ((*(int *)((char *)c + o->off))++ > 0 ||
			    a[2 + len] == '=') {
				fprintf(stderr,
				    "dbgmirror: %s: --%s takes no value and "
				    "is given once\n",
				    cmd->name, o->name);
				return -1;
			}
			continue;
		}
		if (o != NULL && !config_knows(a + 2, len)) {
			fprintf(stderr,
			    "dbgmirror: %s: --%s is not one of its options "
			    "(%s)\n",
			    cmd->name, o->name, cmd->opts);
			return -1;
		}
		if (!config_knows(a + 2, len)) {
			fprintf(stderr,
			    "dbgmirror: %s: --%.*s: unknown option%s\n",
			    cmd->name, (int)len, a + 2,
			    config_did_you_mean(a + 2, len, option_name, "--",
				hint, sizeof(hint)));
			return -1;
		}
		out[n++] = argv[i];
	}
	out[n] = NULL;
	*outc = n;
	return 0;
}

/* ------------------------------------------------------ index commands */

/* lookup, stats, misses, purge: open the index, run the command. */
static int
run_index(struct cli *c)
{
	const char *name = c->command;
	int purge = strcmp(name, "purge") == 0, rc;
	struct index *idx;
	struct index_reader *rd = NULL;
	char path[PATH_MAX], err[512];

	cli_settings(c);
	if (c->settings_note[0] != '\0')
		fprintf(stderr, "dbgmirror: note: %s\n", c->settings_note);
	snprintf(path, sizeof(path), "%s/index", c->cfg.cache_dir);
	if ((idx = index_open(path, purge ? INDEX_EXISTING : INDEX_RDONLY,
		 c->cfg.index_map_size, err, sizeof(err))) == NULL) {
		fprintf(stderr, "dbgmirror: %s\n", err);
		return 1;
	}
	if (purge) {
		rc = cmd_purge(c, idx);
	} else if ((rd = index_reader_new(idx)) == NULL ||
	    index_reader_begin(rd) == -1) {
		fprintf(stderr, "dbgmirror: %s: cannot read the index\n", path);
		rc = 1;
	} else if (strcmp(name, "lookup") == 0) {
		rc = cmd_lookup(c, rd, path);
	} else if (strcmp(name, "misses") == 0) {
		rc = cmd_misses(c, rd);
	} else {
		rc = cmd_stats(c, rd, path);
	}
	index_reader_free(rd);
	index_close(idx);
	return rc;
}

/* --------------------------------------------------------------- token */

/*
 * dbgmirror token NAME [--scopes LIST]: a new random token, and the line
 * of token-file that allows it (its SHA-256, the scopes, the name).  The
 * token is shown once: only its hash is kept.  The scopes and the line
 * are checked with the daemon's own parser, so that what this prints is
 * what the daemon takes: a scope it would not know is refused here.
 */
static int
run_token(struct cli *c)
{
	const char *name = c->operands[0];
	const char *scopes = c->scopes != NULL ? c->scopes : "read";
	unsigned char raw[32];
	char token[5 + 2 * sizeof(raw) + 1], hash[65], line[1024], why[256];
	char back[65];
	unsigned bits, back_bits;
	size_t i;

	if (access_scopes_parse(scopes, &bits, why, sizeof(why)) == -1) {
		fprintf(stderr, "dbgmirror: token: --scopes %s: %s\n", scopes,
		    why);
		return 2;
	}
	for (i = 0; name[i] != '\0'; i++)
		if ((unsigned char)name[i] <= ' ' || name[i] == '#' ||
		    name[i] == 0x7f)
			break;
	if (name[0] == '\0' || name[i] != '\0') {
		fprintf(stderr,
		    "dbgmirror: token: NAME is one word, without '#'\n");
		return 2;
	}
	if (RAND_bytes(raw, sizeof(raw)) != 1) {
		fprintf(stderr, "dbgmirror: token: no random bytes\n");
		return 1;
	}
	memcpy(token, "dbgm_", 5);
	for (i = 0; i < sizeof(raw); i++)
		snprintf(token + 5 + 2 * i, 3, "%02x", raw[i]);
	if (access_token_hash(token, strlen(token), hash) == -1) {
		fprintf(stderr, "dbgmirror: token: cannot hash\n");
		return 1;
	}
	if ((size_t)snprintf(line, sizeof(line), "%s %s %s", hash, scopes,
		name) >= sizeof(line) ||
	    access_token_line(line, back, &back_bits, why, sizeof(why)) != 1 ||
	    strcmp(back, hash) != 0 || back_bits != bits) {
		fprintf(stderr,
		    "dbgmirror: token: the daemon would not take "
		    "the line\n");
		return 2;
	}
	if (c->json) {
		printf("{\"name\":");
		cli_json_str(stdout, name);
		printf(",\"scopes\":");
		cli_json_str(stdout, scopes);
		printf(",\"token\":\"%s\",\"line\":", token);
		cli_json_str(stdout, line);
		printf("}\n");
		return 0;
	}
	printf("token: %s\nline: %s\n", token, line);
	return 0;
}

/* -------------------------------------------------------------- upload */

/* The upload token: the first line of file, else $DBGMIRROR_TOKEN. */
static int
upload_token(const char *file, char *out, size_t len)
{
	const char *env = getenv("DBGMIRROR_TOKEN");
	FILE *fp;

	out[0] = '\0';
	if (file != NULL) {
		if ((fp = fopen(file, "re")) == NULL) {
			fprintf(stderr, "dbgmirror: upload: %s: %s\n", file,
			    strerror(errno));
			return -1;
		}
		if (fgets(out, (int)len, fp) == NULL)
			out[0] = '\0';
		fclose(fp);
		out[strcspn(out, " \t\r\n")] = '\0';
	} else if (env != NULL) {
		snprintf(out, len, "%s", env);
	}
	if (out[0] == '\0') {
		fprintf(stderr,
		    "dbgmirror: upload: no token (--token-file "
		    "FILE or DBGMIRROR_TOKEN)\n");
		return -1;
	}
	return 0;
}

/* One upload's outcome, as text or a JSON element. */
static void
upload_said(const struct cli *c, int *n, const char *file, const char *hex,
    const char *kind, long status, const char *msg)
{
	if (!c->json) {
		printf("%s %s %s: %ld %s\n", file, hex, kind, status, msg);
		return;
	}
	printf("%s{\"file\":", (*n)++ > 0 ? "," : "");
	cli_json_str(stdout, file);
	printf(",\"build_id\":\"%s\",\"kind\":\"%s\",\"status\":%ld,"
	       "\"message\":",
	    hex, kind, status);
	cli_json_str(stdout, msg);
	printf("}");
}

/*
 * dbgmirror upload FILE...: each file's build-id read from it, PUT as
 * debuginfo when it has .debug_* sections and as executable when it has
 * loadable code (an unstripped binary is both).  Exit 0 when every PUT
 * was taken (201 stored, 200 the same bytes were there).
 */
static int
run_upload(struct cli *c)
{
	static const struct {
		unsigned kind;
		const char *name;
	} kinds[] = { { ELF_KIND_DEBUGINFO, "debuginfo" },
		{ ELF_KIND_EXECUTABLE, "executable" } };
	struct put_opts o = { NULL, c->cfg.ca_file };
	struct elf_info info;
	char base[4096], url[4300], hex[BUILDID_HEX_MAX], token[1024];
	char msg[512];
	size_t i, k;
	long status;
	int fd, rc = 0, r, n = 0;

	if (cli_daemon_url(c, base, sizeof(base)) == -1) {
		fprintf(stderr,
		    "dbgmirror: upload: no daemon URL (--url "
		    "https://HOST:PORT)\n");
		return 2;
	}
	if (upload_token(c->token_file, token, sizeof(token)) == -1)
		return 2;
	o.token = token;
	if (c->json)
		printf("{\"results\":[");
	for (i = 0; i < c->noperands; i++) {
		const char *file = c->operands[i];

		if ((fd = open(file, O_RDONLY | O_CLOEXEC)) == -1) {
			fprintf(stderr, "dbgmirror: upload: %s: %s\n", file,
			    strerror(errno));
			rc = 1;
			continue;
		}
		r = elf_read_info(fd, &info, msg, sizeof(msg));
		close(fd);
		if (r != 0 || info.id.len == 0) {
			fprintf(stderr, "dbgmirror: upload: %s: %s\n", file,
			    r == ELF_NOTFOUND ? "not an ELF file"
				: r == -1     ? msg
					      : "no GNU build-id");
			rc = 1;
			continue;
		}
		buildid_format(&info.id, hex);
		for (k = 0; k < 2; k++) {
			if ((info.kinds & kinds[k].kind) == 0)
				continue;
			snprintf(url, sizeof(url), "%s/buildid/%s/%s", base,
			    hex, kinds[k].name);
			if (put_file(url, file, &o, &status, msg,
				sizeof(msg)) == -1) {
				fprintf(stderr, "dbgmirror: upload: %s\n", msg);
				rc = 1;
				continue;
			}
			upload_said(c, &n, file, hex, kinds[k].name, status,
			    msg);
			if (status != 200 && status != 201)
				rc = 1;
		}
	}
	if (c->json)
		printf("]}\n");
	return rc;
}

/* ------------------------------------------------------------ prefetch */

static int
run_prefetch(struct cli *c)
{
	struct prefetch_opts o;
	char url[4096], *end;
	unsigned long jobs = 8;

	if (c->jobs != NULL) {
		errno = 0;
		jobs = strtoul(c->jobs, &end, 10);
		if (errno != 0 || end == c->jobs || *end != '\0' || jobs == 0 ||
		    jobs > 1024) {
			fprintf(stderr,
			    "dbgmirror: prefetch: --jobs: 1 to 1024\n");
			return 2;
		}
	}
	if (cli_daemon_url(c, url, sizeof(url)) == -1) {
		fprintf(stderr,
		    "dbgmirror: prefetch: no daemon URL (--url "
		    "http://HOST:PORT)\n");
		return 2;
	}
	o.jobs = (unsigned)jobs;
	o.url = url;
	o.executables = c->executable;
	o.json = c->json;
	return prefetch_run(&o, c->operands, c->noperands);
}

/* ---------------------------------------------------------------- main */

/*
 * Parse the command line into c and run the command; the exit status.
 * Bad usage (2) says what was wrong; --help prints the command's help.
 */
static int
run(struct cli *c, int argc, char **argv)
{
	struct config_args args = { 0 };
	struct config_diag diag = { 0 };
	const struct command *cmd = NULL;
	char **av = NULL, hint[128];
	const char *word;
	int at, ac, rc;
	size_t i;

	if ((at = command_index(argc, argv)) > 0) {
		word = argv[at];
		if ((cmd = command_find(word)) == NULL) {
			fprintf(stderr, "dbgmirror: %s: unknown command%s\n",
			    word,
			    config_did_you_mean(word, strlen(word),
				command_name, "", hint, sizeof(hint)));
			return 2;
		}
	}
	if ((av = calloc((size_t)argc + 1, sizeof(*av))) == NULL) {
		fprintf(stderr, "dbgmirror: out of memory\n");
		return 1;
	}
	if (cmd != NULL) {
		rc = cmd_split(c, cmd, argc, argv, at, av, &ac) == -1 ? 2 : 0;
	} else {
		memcpy(av, argv, (size_t)argc * sizeof(*av));
		ac = argc;
		rc = 0;
	}
	if (rc == 0 && config_parse_args(&args, ac, av, &diag) == -1)
		rc = 2;
	for (i = 0; i < diag.n; i++)
		fprintf(stderr, "dbgmirror: %s\n", diag.msgs[i]);
	config_diag_free(&diag);
	if (rc == 0 && args.version) {
		printf("dbgmirror %s\n", PACKAGE_VERSION);
		goto out;
	}
	/* help COMMAND is COMMAND --help. */
	if (rc == 0 && cmd != NULL && strcmp(cmd->name, "help") == 0) {
		args.help = 1;
		cmd = args.nrest > 0 ? command_find(args.rest[0]) : NULL;
		if (args.nrest > 0 && cmd == NULL) {
			fprintf(stderr,
			    "dbgmirror: help %s: no such command%s\n",
			    args.rest[0],
			    config_did_you_mean(args.rest[0],
				strlen(args.rest[0]), command_name, "", hint,
				sizeof(hint)));
			rc = 2;
			goto out;
		}
	}
	if (rc == 0 && args.help) {
		if (cmd != NULL)
			command_usage(stdout, cmd);
		else
			usage(stdout);
		goto out;
	}
	if (rc == 0 && cmd == NULL) {
		fprintf(stderr, "dbgmirror: no command given\n\n");
		usage(stderr);
		rc = 2;
		goto out;
	}
	if (rc != 0)
		goto out;
	c->no_config = args.no_config;
	for (i = 0; i < args.npairs; i++)
		if (strcmp(args.pairs[2 * i], "cache-dir") == 0)
			c->cache_dir_given = 1;
	if (config_load(&c->cfg, &args, &diag) == -1) {
		for (i = 0; i < diag.n; i++)
			fprintf(stderr, "dbgmirror: %s\n", diag.msgs[i]);
		config_diag_free(&diag);
		rc = 2;
		goto out;
	}
	c->operands = args.rest;
	c->noperands = args.nrest;
	if (c->noperands < cmd->min || c->noperands > cmd->max) {
		fprintf(stderr, "dbgmirror: %s: %s\nusage: dbgmirror %s\n",
		    cmd->name,
		    c->noperands < cmd->min ? "missing operand"
					    : "too many operands",
		    cmd->synopsis);
		rc = 2;
		goto out;
	}
	if (c->keep_store && c->noperands != 1) {
		fprintf(stderr,
		    "dbgmirror: purge: --keep-store goes with an "
		    "ID\n");
		rc = 2;
		goto out;
	}
	if (strcmp(cmd->name, "purge") == 0 &&
	    (c->noperands == 1) + c->negative + c->misses +
		    (c->upstream != NULL) !=
		1) {
		fprintf(stderr,
		    "dbgmirror: purge: one of ID, --negative, "
		    "--misses or --upstream URL\n");
		rc = 2;
		goto out;
	}
	c->command = cmd->name;
	rc = cmd->run(c);
out:
	config_args_free(&args);
	free(av);
	return rc;
}

int
main(int argc, char **argv)
{
	struct cli c;
	char msg[512];
	int rc;

	memset(&c, 0, sizeof(c));
	if (config_init(&c.cfg) == -1) {
		fprintf(stderr, "dbgmirror: out of memory\n");
		return 1;
	}
	if (elf_init() == -1) {
		fprintf(stderr, "dbgmirror: libelf: version mismatch\n");
		return 1;
	}
	/* A test clock that cannot be used is said; one that can is not. */
	if (clock_init(msg, sizeof(msg)) == -1)
		fprintf(stderr, "dbgmirror: %s\n", msg);
	rc = run(&c, argc, argv);
	config_free(&c.cfg);
	return rc;
}
