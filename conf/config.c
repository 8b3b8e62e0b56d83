/*
 * conf/config.c: the loader of the configuration: the config file and
 * command-line parsers, the layers, and the defaults that depend on the
 * machine (conf/config.h).
 *
 * Layers: config_init() (conf/options.c) stores the fixed defaults;
 * config_load() then applies one file and the command line, each as a
 * layer.  A layer remembers which options it has set (struct
 * config_layer), so that the first value a layer gives a repeatable
 * option replaces the list inherited from below instead of adding to it,
 * and a file can say where an option was first set.  Defaults that depend
 * on the machine (cache-dir, scan-dir) are computed last, only for
 * options no layer set.
 *
 * The top of conf/: it uses the table of options (conf/options.c), help's
 * hints (conf/help.c), the paths (conf/paths.c), the value parsers and
 * the bottom (conf/settings.h, conf/diag.c); nothing of conf/ calls it.
 *
 * Nothing is printed: every problem becomes one "where: what" string in a
 * struct config_diag, and parsing goes on so that all are reported.  Runs at
 * start-up on one thread.
 */
#include "conf/config.h"
#include "conf/help.h"
#include "conf/objstore.h"

#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_SCAN_DIR "/usr/lib/debug"

/* The option named name: its index, or -1. */
static int
opt_find(const char *name)
{
	return config_opt_find(name, strlen(name));
}

/* " (did you mean PREFIXNAME?)" for an unknown option name, or "". */
static const char *
did_you_mean(const char *name, size_t len, const char *prefix, char *buf,
    size_t buflen)
{
	return config_did_you_mean(name, len, config_option_name, prefix, buf,
	    buflen);
}

int
config_set(struct config *cfg, const char *name, const char *value,
    const char *where, struct config_diag *diag)
{
	char hint[96];
	char buf[CONFIG_SHOWN_MAX];
	int o;

	if ((o = opt_find(name)) == -1) {
		config_diag_add(diag, "%s: %s: unknown option%s", where,
		    config_shown(name, buf, sizeof(buf)),
		    did_you_mean(name, strlen(name), "", hint, sizeof(hint)));
		config_diag_about(diag,
		    config_closest(name, strlen(name), config_option_name));
		return -1;
	}
	return config_opt_set(cfg, (size_t)o, value, where, diag, NULL, 0);
}

/* ------------------------------------------------------------ the file */

/*
 * Read one line into buf (without its '\n').  Returns 1 for a line, 0 at
 * the end of the file, or -1 for a line that is too long or holds a NUL
 * byte; such a line is consumed to its end and *why says what was wrong.
 */
static int
read_line(FILE *fp, char *buf, size_t size, const char **why)
{
	size_t len = 0;
	int c, got = 0;

	*why = NULL;
	while ((c = getc(fp)) != EOF) {
		got = 1;
		if (c == '\n')
			break;
		if (c == '\0' && *why == NULL)
			*why = "NUL byte in line";
		if (len + 1 < size)
			buf[len++] = (char)c;
		else if (*why == NULL)
			*why = "line longer than 4096 bytes";
	}
	buf[len] = '\0';
	if (!got)
		return 0;
	return *why == NULL ? 1 : -1;
}

/*
 * Take the value from the text after '=', in place.  A value in double
 * quotes keeps blanks and '#', and knows the escapes \" and \\; otherwise
 * a '#' after a blank starts a comment.  Outer blanks are dropped.
 * Returns the value, or NULL with *why.
 */
static char *
take_value(char *p, const char **why)
{
	char *v, *out, *end;

	while (config_is_blank(*p))
		p++;
	if (*p == '"') {
		v = out = ++p;
		for (;; p++) {
			if (*p == '\0') {
				*why = "missing closing '\"'";
				return NULL;
			}
			if (*p == '"')
				break;
			if (*p == '\\') {
				if (p[1] != '"' && p[1] != '\\') {
					*why = "only \\\" and \\\\ may follow "
					       "'\\' in quotes";
					return NULL;
				}
				p++;
			}
			*out++ = *p;
		}
		for (p++; config_is_blank(*p); p++)
			continue;
		if (*p != '\0' && !(*p == '#' && config_is_blank(p[-1]))) {
			*why = "text after the closing '\"'";
			return NULL;
		}
		*out = '\0';
		return v;
	}
	for (v = p; *p != '\0'; p++)
		if (*p == '#' && config_is_blank(p[-1]))
			break;
	for (end = p; end > v && config_is_blank(end[-1]); end--)
		continue;
	*end = '\0';
	return v;
}

/*
 * The option a line that does not parse was meant for: the one its first
 * word names, or is closest to; NULL when none is.
 */
static const char *
meant(const char *line)
{
	size_t n;
	int o;

	while (config_is_blank(*line))
		line++;
	for (n = 0;
	     line[n] != '\0' && line[n] != '=' && !config_is_blank(line[n]);
	     n++)
		continue;
	if ((o = config_opt_find(line, n)) != -1)
		return config_option_name((size_t)o);
	return config_closest(line, n, config_option_name);
}

/*
 * Parse one file as one layer.  Errors are reported with "path:line" and
 * the next line is read, so one run finds every problem.
 */
static int
parse_file(struct config *cfg, FILE *fp, const char *path,
    struct config_diag *diag, struct config_layer *layer)
{
	char hint[96];
	char line[CONFIG_LINE_MAX + 1], where[64 + FILENAME_MAX];
	char buf[CONFIG_SHOWN_MAX];
	unsigned long lineno = 0;
	const char *why;
	int rc = 0, r;

	while ((r = read_line(fp, line, sizeof(line), &why)) != 0) {
		char *p, *eq, *end, *value;
		int o;

		lineno++;
		snprintf(where, sizeof(where), "%s:%lu", path, lineno);
		if (r == -1) {
			config_diag_add(diag, "%s: %s", where, why);
			config_diag_about(diag, meant(line));
			rc = -1;
			continue;
		}
		for (p = line; config_is_blank(*p); p++)
			continue;
		if (*p == '\0' || *p == '#')
			continue;
		for (eq = p; *eq != '\0' && *eq != '='; eq++)
			if (*eq == '#' && config_is_blank(eq[-1]))
				break;
		if (*eq != '=') {
			config_diag_add(diag, "%s: expected name = value",
			    where);
			config_diag_about(diag, meant(p));
			rc = -1;
			continue;
		}
		for (end = eq; end > p && config_is_blank(end[-1]); end--)
			continue;
		*end = '\0';
		if (*p == '\0') {
			config_diag_add(diag, "%s: missing name before '='",
			    where);
			rc = -1;
			continue;
		}
		if ((o = opt_find(p)) == -1) {
			config_diag_add(diag, "%s: %s: unknown option%s", where,
			    config_shown(p, buf, sizeof(buf)),
			    did_you_mean(p, strlen(p), "", hint, sizeof(hint)));
			config_diag_about(diag, meant(p));
			rc = -1;
			continue;
		}
		if ((value = take_value(eq + 1, &why)) == NULL) {
			config_diag_add(diag, "%s: %s: %s", where,
			    config_option_name(o), why);
			config_diag_about(diag, config_option_name(o));
			rc = -1;
			continue;
		}
		if (!config_opt_repeatable(o) && layer->first[o] != 0) {
			config_diag_add(diag,
			    "%s: %s: set twice; first at line %lu", where,
			    config_option_name(o), layer->first[o]);
			config_diag_about(diag, config_option_name(o));
			rc = -1;
			continue;
		}
		if (config_opt_set(cfg, (size_t)o, value, where, diag, layer,
			lineno) == -1)
			rc = -1;
	}
	if (ferror(fp)) {
		config_diag_add(diag, "%s: %s", path, strerror(errno));
		rc = -1;
	}
	return rc;
}

static FILE *
open_file(const char *path, struct config_diag *diag)
{
	FILE *fp;

	if ((fp = fopen(path, "re")) == NULL)
		config_diag_add(diag, "%s: %s", path, strerror(errno));
	return fp;
}

int
config_load_file(struct config *cfg, const char *path, struct config_diag *diag)
{
	struct config_layer layer;
	FILE *fp;
	int rc;

	memset(&layer, 0, sizeof(layer));
	if ((fp = open_file(path, diag)) == NULL)
		return -1;
	rc = parse_file(cfg, fp, path, diag, &layer);
	fclose(fp);
	return rc;
}

/* ---------------------------------------------------- the command line */

static int
args_push(char ***v, size_t n, char *s)
{
	char **nv;

	if ((nv = realloc(*v, (n + 1) * sizeof(*nv))) == NULL)
		return -1;
	nv[n] = s;
	*v = nv;
	return 0;
}

static int
args_add_pair(struct config_args *args, const char *name, const char *value)
{
	char *n, *v;

	if ((n = strdup(name)) == NULL)
		return -1;
	if ((v = strdup(value)) == NULL ||
	    args_push(&args->pairs, 2 * args->npairs, n) == -1) {
		free(n);
		free(v);
		return -1;
	}
	if (args_push(&args->pairs, 2 * args->npairs + 1, v) == -1) {
		free(n);
		free(v);
		return -1;
	}
	args->npairs++;
	return 0;
}

/* The flags of the programs themselves, besides the schema's options. */
enum {
	A_CONFIG,
	A_NO_CONFIG,
	A_CHECK_CONFIG,
	A_VERBOSE,
	A_VERSION,
	A_HELP,
	A_NONE
};

static int
args_flag(const char *name, size_t len)
{
	static const char *const flags[] = { "config", "no-config",
		"check-config", "verbose", "version", "help" };
	size_t i;

	for (i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (strlen(flags[i]) == len &&
		    strncmp(flags[i], name, len) == 0)
			return (int)i;
	return A_NONE;
}

/*
 * Long options: "--name VALUE" or "--name=VALUE".  A boolean option alone
 * means on and "--no-name" off; it takes the next argument as its value
 * only when that argument is a boolean word, so "--access-log lookup"
 * leaves "lookup" an operand.
 */
int
config_parse_args(struct config_args *args, int argc, char **argv,
    struct config_diag *diag)
{
	char hint[256];
	char buf[CONFIG_SHOWN_MAX];
	int i, rc = 0, dummy;

	memset(args, 0, sizeof(*args));
	for (i = 1; i < argc; i++) {
		char *a = argv[i], *eq;
		const char *value;
		size_t len;
		int f, o, negated = 0;

		if (a[0] != '-' || a[1] == '\0') {
			if (args_push(&args->rest, args->nrest, a) == -1)
				goto nomem;
			args->nrest++;
			continue;
		}
		if (strcmp(a, "--") == 0) {
			for (i++; i < argc; i++) {
				if (args_push(&args->rest, args->nrest,
					argv[i]) == -1)
					goto nomem;
				args->nrest++;
			}
			break;
		}
		if (a[1] != '-') {
			for (a++; *a != '\0'; a++) {
				if (*a == 'v') {
					args->verbose++;
				} else if (*a == 'h') {
					args->help = 1;
				} else if (config_elfutils_hint(*a, NULL, hint,
					       sizeof(hint)) != NULL) {
					/* Its argument: the rest, or the next. */
					value = a[1] != '\0' ? a + 1
					    : i + 1 < argc &&
						argv[i + 1][0] != '-'
					    ? argv[++i]
					    : NULL;
					config_diag_add(diag,
					    "command line: -%c: unknown "
					    "option; %s",
					    *a,
					    config_elfutils_hint(*a,
						value == NULL
						    ? NULL
						    : config_shown(value, buf,
							  sizeof(buf)),
						hint, sizeof(hint)));
					rc = -1;
					break;
				} else {
					config_diag_add(diag,
					    "command line: -%s: unknown option",
					    config_shown((char[]){ *a, '\0' },
						buf, sizeof(buf)));
					rc = -1;
				}
			}
			continue;
		}

		a += 2;
		eq = strchr(a, '=');
		len = eq != NULL ? (size_t)(eq - a) : strlen(a);
		f = args_flag(a, len);
		o = f == A_NONE ? config_opt_find(a, len) : -1;
		if (f == A_NONE && o == -1 && len > 3 &&
		    strncmp(a, "no-", 3) == 0 &&
		    (o = config_opt_find(a + 3, len - 3)) != -1) {
			if (config_opt_arg(o) != CONFIG_ARG_VALUE)
				negated = 1;
			else
				o = -1;
		}
		if (f == A_NONE && o == -1) {
			config_diag_add(diag,
			    "command line: --%.*s: unknown option%s", (int)len,
			    config_shown(a, buf, sizeof(buf)),
			    did_you_mean(a, len, "--", hint, sizeof(hint)));
			rc = -1;
			continue;
		}
		if (eq != NULL && (negated || (f != A_NONE && f != A_CONFIG))) {
			config_diag_add(diag,
			    "command line: --%.*s: takes no value", (int)len,
			    config_shown(a, buf, sizeof(buf)));
			rc = -1;
			continue;
		}

		/* Find the value of those that take one. */
		value = NULL;
		if (eq != NULL)
			value = eq + 1;
		else if (negated)
			value = "off";
		else if (o != -1 && config_opt_arg(o) != CONFIG_ARG_VALUE) {
			if (i + 1 < argc &&
			    (config_parse_bool(argv[i + 1], &dummy) == 0 ||
				(config_opt_arg(o) == CONFIG_ARG_BOOL_OR_FILE &&
				    strchr(argv[i + 1], '/') != NULL)))
				value = argv[++i];
			else
				value = "on";
		} else if (f == A_CONFIG || o != -1) {
			if (i + 1 >= argc) {
				config_diag_add(diag,
				    "command line: --%s: missing value",
				    config_shown(a, buf, sizeof(buf)));
				rc = -1;
				continue;
			}
			value = argv[++i];
		}
		if (f == A_CONFIG && *value == '\0') {
			config_diag_add(diag,
			    "command line: --config: empty value");
			rc = -1;
			continue;
		}

		switch (f) {
		case A_CONFIG:
			args->config_file = value;
			break;
		case A_NO_CONFIG:
			args->no_config = 1;
			break;
		case A_CHECK_CONFIG:
			args->check_config = 1;
			break;
		case A_VERBOSE:
			args->verbose++;
			break;
		case A_VERSION:
			args->version = 1;
			break;
		case A_HELP:
			args->help = 1;
			break;
		default:
			if (args_add_pair(args, config_option_name(o), value) ==
			    -1)
				goto nomem;
			break;
		}
	}
	return rc;

nomem:
	config_diag_add(diag, "command line: out of memory");
	return -1;
}

void
config_args_free(struct config_args *args)
{
	size_t i;

	for (i = 0; i < 2 * args->npairs; i++)
		free(args->pairs[i]);
	free(args->pairs);
	free(args->rest);
	memset(args, 0, sizeof(*args));
}

/* ------------------------------------------------------------ loading */

/*
 * Without an upstream option, the upstreams are the ones the debuginfod
 * clients use: DEBUGINFOD_URLS, URLs separated by blanks.
 */
static int
upstreams_from_env(struct config *cfg, struct config_diag *diag)
{
	const char *env = getenv("DEBUGINFOD_URLS");
	char *copy, *word, *save;
	int rc = 0, o = opt_find("upstream");

	if (env == NULL || o == -1)
		return 0;
	if ((copy = strdup(env)) == NULL) {
		config_diag_add(diag, "DEBUGINFOD_URLS: out of memory");
		return -1;
	}
	for (word = strtok_r(copy, " \t\n", &save); word != NULL;
	     word = strtok_r(NULL, " \t\n", &save))
		if (config_opt_set(cfg, (size_t)o, word, "DEBUGINFOD_URLS",
			diag, NULL, 0) == -1)
			rc = -1;
	free(copy);
	cfg->upstreams_from_env = cfg->nupstreams > 0;
	return rc;
}

/*
 * Give each upstream the global numbers it did not set, and the
 * upstream-header lines naming it (or '*').
 */
static int
resolve_upstreams(struct config *cfg, struct config_diag *diag)
{
	size_t i, j, len;
	int rc = 0;

	for (i = 0; i < cfg->nupstreams; i++) {
		struct config_upstream *u = &cfg->upstreams[i];

		if (u->connect_timeout == CONFIG_UNSET)
			u->connect_timeout = cfg->upstream_connect_timeout;
		if (u->first_byte_timeout == CONFIG_UNSET)
			u->first_byte_timeout =
			    cfg->upstream_first_byte_timeout;
		if (u->min_rate == CONFIG_UNSET)
			u->min_rate = cfg->upstream_min_rate;
		if (u->negative_ttl == CONFIG_UNSET)
			u->negative_ttl = cfg->negative_ttl;
		if (u->error_ttl == CONFIG_UNSET)
			u->error_ttl = cfg->error_ttl;
	}
	for (j = 0; j < cfg->upstream_headers.n; j++) {
		const char *h = cfg->upstream_headers.v[j], *line;
		int found = 0;

		for (len = 0; h[len] != '\0' && !config_is_blank(h[len]); len++)
			continue;
		for (line = h + len; config_is_blank(*line); line++)
			continue;
		while (len > 1 && h[len - 1] == '/')
			len--;
		for (i = 0; i < cfg->nupstreams; i++) {
			struct config_upstream *u = &cfg->upstreams[i];
			char *s;

			if (!(len == 1 && h[0] == '*') &&
			    !(strlen(u->url) == len &&
				strncmp(u->url, h, len) == 0))
				continue;
			found = 1;
			if ((s = strdup(line)) == NULL ||
			    config_strlist_add(&u->headers, s) == -1) {
				config_diag_add(diag,
				    "upstream-header: out of memory");
				return -1;
			}
		}
		if (!found && !(len == 1 && h[0] == '*')) {
			config_diag_add(diag,
			    "upstream-header: \"%.*s\" is not a "
			    "listed upstream",
			    (int)(len > CONFIG_SHOWN_MAX ? CONFIG_SHOWN_MAX
							 : len),
			    h);
			config_diag_about(diag, "upstream-header");
			rc = -1;
		}
	}
	return rc;
}

int
config_load(struct config *cfg, const struct config_args *args,
    struct config_diag *diag)
{
	char hint[96];
	struct config_layer file, cmd;
	const char *path = NULL;
	size_t n0 = diag->n, i;
	struct stat st;
	FILE *fp;
	int rc = 0, o;

	memset(&file, 0, sizeof(file));
	memset(&cmd, 0, sizeof(cmd));

	if (args->config_file != NULL)
		path = args->config_file;
	else if (!args->no_config && access(CONFIG_DEFAULT_FILE, F_OK) == 0)
		path = CONFIG_DEFAULT_FILE;
	if (path != NULL) {
		if ((fp = open_file(path, diag)) == NULL) {
			rc = -1;
		} else {
			free(cfg->config_file);
			if ((cfg->config_file = strdup(path)) == NULL)
				rc = -1;
			if (parse_file(cfg, fp, path, diag, &file) == -1)
				rc = -1;
			fclose(fp);
		}
	}

	for (i = 0; i < args->npairs; i++) {
		const char *name = args->pairs[2 * i];

		if ((o = opt_find(name)) == -1) {
			config_diag_add(diag,
			    "command line: --%s: unknown option%s", name,
			    did_you_mean(name, strlen(name), "--", hint,
				sizeof(hint)));
			rc = -1;
			continue;
		}
		if (config_opt_set(cfg, (size_t)o, args->pairs[2 * i + 1],
			"command line", diag, &cmd, 1) == -1)
			rc = -1;
	}

	/* The defaults that depend on the machine, unless a layer set them. */
	if (cfg->cache_dir == NULL &&
	    (cfg->cache_dir = config_default_cache_dir()) == NULL) {
		config_diag_add(diag, "%s: no home directory for cache-dir",
		    __func__);
		rc = -1;
	}
	if (cfg->upload_dir == NULL &&
	    (cfg->upload_dir = config_default_upload_dir()) == NULL) {
		config_diag_add(diag, "%s: no home directory for upload-dir",
		    __func__);
		rc = -1;
	}
	o = opt_find("scan-dir");
	if (o != -1 && file.first[o] == 0 && cmd.first[o] == 0 &&
	    cfg->scan_dirs.n == 0 && stat(DEFAULT_SCAN_DIR, &st) == 0 &&
	    S_ISDIR(st.st_mode))
		if (config_opt_set(cfg, (size_t)o, DEFAULT_SCAN_DIR, "default",
			diag, NULL, 0) == -1)
			rc = -1;
	/* Sources beside the binaries, as debuginfod -F DIR serves them. */
	o = opt_find("source-root");
	for (i = 0; o != -1 && file.first[o] == 0 && cmd.first[o] == 0 &&
	     i < cfg->scan_dirs.n;
	     i++)
		if (config_opt_set(cfg, (size_t)o, cfg->scan_dirs.v[i],
			"default", diag, NULL, 0) == -1)
			rc = -1;
	o = opt_find("listen");
	if (o != -1 && cfg->nlisten == 0 && file.first[o] == 0 &&
	    cmd.first[o] == 0 &&
	    config_opt_set_default(cfg, (size_t)o, diag) == -1)
		rc = -1;

	o = opt_find("upstream");
	if (o != -1 && file.first[o] == 0 && cmd.first[o] == 0 &&
	    cfg->nupstreams == 0 && upstreams_from_env(cfg, diag) == -1)
		rc = -1;
	if (resolve_upstreams(cfg, diag) == -1)
		rc = -1;
	if (cfg->cache_low_watermark >= cfg->cache_high_watermark) {
		config_diag_add(diag,
		    "cache-low-watermark (%u) must be below "
		    "cache-high-watermark (%u)",
		    cfg->cache_low_watermark, cfg->cache_high_watermark);
		config_diag_about(diag, "cache-low-watermark");
		rc = -1;
	}
	if (cfg->cache_size != 0 && cfg->cache_size < (1ULL << 20)) {
		config_diag_add(diag,
		    "cache-size: must be 0 (no cap) or at least 1M");
		config_diag_about(diag, "cache-size");
		rc = -1;
	}

	if (config_paths_absolute(cfg, diag) == -1)
		rc = -1;
	if (cfg->store != NULL) {
		char err[512], *cwd = getcwd(NULL, 0);

		if (config_objstore_credentials(cfg->store, cwd, err,
			sizeof(err)) == -1) {
			config_diag_add(diag, "store: %s", err);
			config_diag_about(diag, "store");
			rc = -1;
		}
		free(cwd);
	}
	return (rc == -1 || diag->n > n0) ? -1 : 0;
}
