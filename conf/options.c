/*
 * conf/options.c: the option table, and what walks it: one option set from
 * its text (config_opt_set), the embedded defaults (config_init), where
 * each value came from (config_where), and what --help shows of each.
 *
 * The table options[] is the only place an option is described: its name,
 * value type, default, help line, whether it may repeat, where it lives in
 * struct config and, for numbers, its bounds.  Everything else walks it.
 *
 * conf/ in layers, each file using only those below it:
 *
 *   conf/config.c              the loader: the file, the command line,
 *                              the layers, the defaults of the machine
 *   conf/help.c, conf/check.c, conf/diff.c
 *                              --help and did-you-mean; --check-config;
 *                              what two configurations differ in
 *   conf/options.c             this table
 *   conf/values.c, conf/paths.c, conf/objstore.c
 *                              one value; directories; the object store
 *   conf/settings.h, conf/diag.c
 *                              struct config; the problems found
 *
 * Nothing is printed: a bad value becomes one "where: what" string in a
 * struct config_diag.  Runs at start-up on one thread.
 */
#include "conf/options.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/objstore.h"
#include "conf/values.h"

#define LISTEN_MAX 16 /* most listen addresses */
#define DAY (24 * 60 * 60)

enum opt_type {
	T_LISTEN, /* IPv4:PORT or [IPv6]:PORT */
	T_UNSIGNED, /* decimal digits */
	T_DURATION, /* seconds, suffix s, m, h or d */
	T_SIZE, /* bytes, suffix K, M, G, T, KiB... (1024) or KB... (1000) */
	T_BOOL, /* on/off, yes/no, true/false, 1/0 */
	T_ACCESSLOG, /* a T_BOOL, or a file (a value with a '/') */
	T_LOGLEVEL, /* warn, info, debug */
	T_PATH, /* non-empty; made absolute by config_load() */
	T_PATHLIST, /* repeatable T_PATH; "none" empties the list */
	T_STRING, /* any text; "none" stores "" */
	T_UPSTREAM, /* repeatable "URL [key=value ...]"; "none" empties */
	T_HEADER, /* repeatable "URL|* Name: value"; "none" empties */
	T_ADMIN, /* none, loopback, any */
	T_REDIRECTS, /* none, same-host, any */
	T_STORE, /* "s3 ENDPOINT BUCKET [key=value ...]"; "none" for none */
	T_TEXTLIST, /* repeatable text, checked by its user; "none" empties */
	T_REPO /* repeatable config_repo_parse() line; "none" empties */
};

struct opt {
	const char *name;
	enum opt_type type;
	const char *def; /* set by config_init(); repeatable: blank-separated */
	const char *shown; /* the default as --help says it, when def is NULL */
	const char *help;
	int repeatable;
	size_t off; /* member of struct config */
	size_t width; /* its size, to store numbers */
	uint64_t min; /* bounds of numbers */
	uint64_t max;
};

#define FIELD(m) offsetof(struct config, m), sizeof(((struct config *)0)->m)

static const struct opt options[] = {
	{ "listen", T_LISTEN, "127.0.0.1:8002 [::1]:8002", NULL,
	    "address to listen on (a port alone: every address); for HTTPS "
	    "add: tls cert=FILE key=FILE [client-ca=FILE]; repeatable",
	    1, FIELD(listen), 0, 0 },
	{ "threads", T_UNSIGNED, "0", NULL,
	    "event-loop threads, 0 = one per CPU", 0, FIELD(threads), 0, 256 },
	{ "workers", T_UNSIGNED, "0", NULL,
	    "worker threads for long work (as many again for short), 0 = one "
	    "per CPU",
	    0, FIELD(workers), 0, 256 },
	{ "cache-dir", T_PATH, NULL,
	    "~/.cache/dbgmirror, as root /var/cache/dbgmirror",
	    "index and cached files", 0, FIELD(cache_dir), 0, 0 },
	{ "upload-dir", T_PATH, NULL,
	    "~/.local/share/dbgmirror/uploads, as root "
	    "/var/lib/dbgmirror/uploads",
	    "uploaded files, kept apart from the cache: never evicted", 0,
	    FIELD(upload_dir), 0, 0 },
	{ "scan-dir", T_PATHLIST, NULL, "/usr/lib/debug if it exists",
	    "debug files to index; repeatable, none = no scan", 1,
	    FIELD(scan_dirs), 0, 0 },
	{ "source-root", T_PATHLIST, NULL, "the scan-dir directories",
	    "directory under which the source files that local debug files "
	    "name may be served; repeatable, none = none",
	    1, FIELD(source_roots), 0, 0 },
	{ "rescan-interval", T_DURATION, "300", NULL,
	    "between rescans, 0 = never", 0, FIELD(rescan_interval), 0,
	    365 * DAY },
	{ "scan-packages", T_PATHLIST, NULL, "none",
	    "distro packages (.deb .ddeb .rpm .pkg.tar.*) to index; repeatable",
	    1, FIELD(scan_packages), 0, 0 },
	{ "package-jobs", T_UNSIGNED, "2", NULL,
	    "packages read in parallel, 0 = one per CPU", 0,
	    FIELD(package_jobs), 0, 256 },
	{ "package-coextract", T_UNSIGNED, "32", NULL,
	    "unasked members a pass extracts, dwz alt files aside", 0,
	    FIELD(package_coextract), 0, 1024 },
	{ "archive-full-path", T_BOOL, "off", NULL,
	    "X-DEBUGINFOD-ARCHIVE shows a package's full path, not its name", 0,
	    FIELD(archive_full_path), 0, 0 },
	{ "index-map-size", T_SIZE, "64G", NULL,
	    "largest size of the index database", 0, FIELD(index_map_size),
	    1ULL << 20, 1ULL << 40 },
	{ "max-header-size", T_SIZE, "8192", NULL,
	    "largest request line plus headers", 0, FIELD(max_header_size),
	    1024, 65536 },
	{ "max-connections", T_UNSIGNED, "4096", NULL,
	    "most client connections open at once", 0, FIELD(max_connections),
	    1, 1000000 },
	{ "header-timeout", T_DURATION, "10", NULL, "to receive a request head",
	    0, FIELD(header_timeout), 1, 365 * DAY },
	{ "keepalive-timeout", T_DURATION, "60", NULL,
	    "an idle connection is kept open", 0, FIELD(keepalive_timeout), 1,
	    365 * DAY },
	{ "send-timeout", T_DURATION, "60", NULL,
	    "a response may make no sending progress", 0, FIELD(send_timeout),
	    1, 365 * DAY },
	{ "shutdown-timeout", T_DURATION, "10", NULL,
	    "to finish responses on exit", 0, FIELD(shutdown_timeout), 0,
	    3600 },
	{ "access-log", T_ACCESSLOG, "on", NULL,
	    "one line per request: on (stderr), off, or a FILE (a path with "
	    "a '/': appended to, reopened on SIGUSR2 and SIGHUP)",
	    0, FIELD(access_log), 0, 0 },
	{ "log-level", T_LOGLEVEL, "info", NULL,
	    "least important messages logged: warn, info or debug", 0,
	    FIELD(log_level), 0, 0 },
	{ "upstream", T_UPSTREAM, NULL, "DEBUGINFOD_URLS, else none",
	    "upstream debuginfod URL [enabled=, connect-timeout=, "
	    "first-byte-timeout=, negative-ttl=, error-ttl=]; repeatable",
	    1, FIELD(upstreams), 0, 0 },
	{ "repo", T_REPO, NULL, "none",
	    "remote repository: deb URL SUITE COMPONENT... [arch=A,B] "
	    "[signed-by=FILE] [check-valid-until=no], rpm URL [gpgkey=FILE] "
	    "or arch URL NAME [key=FILE]; repeatable",
	    1, FIELD(repos), 0, 0 },
	{ "repo-redirects", T_REDIRECTS, "same-host", NULL,
	    "repository redirects followed: none, same-host or any (never to "
	    "this server)",
	    0, FIELD(repo_redirects), 0, 0 },
	{ "repo-refresh", T_DURATION, "3600", NULL,
	    "between refreshes of the repositories' metadata, 0 = never", 0,
	    FIELD(repo_refresh), 0, 365 * DAY },
	{ "repo-retry", T_DURATION, "30", NULL,
	    "before a failed refresh is tried again; it doubles after each "
	    "failure in a row, up to repo-refresh",
	    0, FIELD(repo_retry), 1, DAY },
	{ "repo-ready-timeout", T_DURATION, "30", NULL,
	    "the longest wait at start-up for the first refreshes before "
	    "telling systemd the daemon is ready (and before answering an "
	    "id no repository maps), 0 = no wait",
	    0, FIELD(repo_ready_timeout), 0, DAY },
	{ "repo-cache-size", T_SIZE, "4G", NULL,
	    "downloaded repository packages kept (least recently used go)", 0,
	    FIELD(repo_cache_size), 1ULL << 20, 1ULL << 50 },
	{ "repo-downloads", T_UNSIGNED, "4", NULL,
	    "repository package downloads in flight at once (more wait in "
	    "order)",
	    0, FIELD(repo_downloads), 1, 1024 },
	{ "upstream-header", T_HEADER, NULL, "none",
	    "\"URL|* Name: value\" sent to that upstream; repeatable", 1,
	    FIELD(upstream_headers), 0, 0 },
	{ "upstream-connect-timeout", T_DURATION, "2", NULL,
	    "to connect to an upstream", 0, FIELD(upstream_connect_timeout), 1,
	    300 },
	{ "upstream-first-byte-timeout", T_DURATION, "5", NULL,
	    "of an upstream's silence before it is asked whether it is at "
	    "work (GET /): one that answers is waited for, up to "
	    "upstream-timeout",
	    0, FIELD(upstream_first_byte_timeout), 1, 3600 },
	{ "upstream-stall-timeout", T_DURATION, "10", NULL,
	    "an upstream transfer may receive nothing", 0,
	    FIELD(upstream_stall_timeout), 1, 3600 },
	{ "upstream-redirects", T_REDIRECTS, "same-host", NULL,
	    "upstream redirects followed: none, same-host or any (never to "
	    "this server)",
	    0, FIELD(upstream_redirects), 0, 0 },
	{ "upstream-min-rate", T_UNSIGNED, "1024", NULL,
	    "bytes/s below which, over the stall timeout, a transfer is given "
	    "up",
	    0, FIELD(upstream_min_rate), 1, 1U << 30 },
	{ "upstream-timeout", T_DURATION, "300", NULL,
	    "for a whole upstream transfer", 0, FIELD(upstream_timeout), 1,
	    DAY },
	{ "upstream-retries", T_UNSIGNED, "2", NULL,
	    "retries of an upstream transfer after a transport error", 0,
	    FIELD(upstream_retries), 0, 10 },
	{ "breaker-failures", T_UNSIGNED, "5", NULL,
	    "failures in a row after which an upstream is skipped", 0,
	    FIELD(breaker_failures), 1, 1000000 },
	{ "breaker-backoff", T_DURATION, "2", NULL,
	    "before a skipped upstream is first probed again", 0,
	    FIELD(breaker_backoff), 1, DAY },
	{ "breaker-backoff-max", T_DURATION, "60", NULL,
	    "the longest wait between probes (it doubles after a failed one)",
	    0, FIELD(breaker_backoff_max), 1, DAY },
	{ "max-forwarded-for", T_UNSIGNED, "8", NULL,
	    "X-Forwarded-For entries beyond which a request is refused", 0,
	    FIELD(max_forwarded_for), 1, 64 },
	{ "metadata-timeout", T_DURATION, "5", NULL,
	    "for a /metadata query: the index's part, and the upstreams'", 0,
	    FIELD(metadata_timeout), 1, 3600 },
	{ "ca-file", T_PATH, NULL, "none",
	    "PEM certificates trusted besides the system store", 0,
	    FIELD(ca_file), 0, 0 },
	{ "proxy", T_STRING, NULL, "from https_proxy and no_proxy",
	    "outbound proxy URL for upstreams, none = direct", 0, FIELD(proxy),
	    0, 0 },
	{ "user-agent", T_STRING, NULL, "dbgmirror/VERSION",
	    "appended to the client's User-Agent upstream", 0,
	    FIELD(user_agent), 0, 0 },
	{ "max-object-size", T_SIZE, "4G", NULL,
	    "largest object fetched from an upstream", 0,
	    FIELD(max_object_size), 1024, 1ULL << 40 },
	{ "max-fills", T_UNSIGNED, "64", NULL,
	    "upstream transfers in flight at once", 0, FIELD(max_fills), 1,
	    100000 },
	{ "cache-size", T_SIZE, "10G", NULL, "cap on cached bytes, 0 = no cap",
	    0, FIELD(cache_size), 0, 1ULL << 50 },
	{ "cache-high-watermark", T_UNSIGNED, "90", NULL,
	    "% of cache-size above which eviction starts", 0,
	    FIELD(cache_high_watermark), 1, 100 },
	{ "cache-low-watermark", T_UNSIGNED, "80", NULL,
	    "% of cache-size eviction goes down to", 0,
	    FIELD(cache_low_watermark), 0, 99 },
	{ "min-free-disk", T_UNSIGNED, "5", NULL,
	    "% of the cache's file system kept free", 0, FIELD(min_free_disk),
	    0, 99 },
	{ "negative-ttl", T_DURATION, "600", NULL,
	    "a not-found answer from every upstream is remembered", 0,
	    FIELD(negative_ttl), 0, 365 * DAY },
	{ "error-ttl", T_DURATION, "30", NULL,
	    "an upstream failure is remembered", 0, FIELD(error_ttl), 0,
	    365 * DAY },
	{ "negative-max", T_UNSIGNED, "1000000", NULL,
	    "negative and error entries kept at most (the soonest to expire "
	    "go first), 0 = no bound",
	    0, FIELD(negative_max), 0, 1000000000 },
	{ "misses-max", T_UNSIGNED, "100000", NULL,
	    "build-ids kept in the missing-id report (the least missed go "
	    "first), 0 = no report",
	    0, FIELD(misses_max), 0, 100000000 },
	{ "admin-access", T_ADMIN, "loopback", NULL,
	    "who may use /admin/purge and /admin/misses: none, loopback or "
	    "any",
	    0, FIELD(admin_access), 0, 0 },
	{ "metrics-access", T_ADMIN, "any", NULL,
	    "who may read /metrics and /status: none, loopback or any", 0,
	    FIELD(metrics_access), 0, 0 },
	{ "admin-token", T_PATH, NULL, "none",
	    "a file whose token admin requests must send as a Bearer", 0,
	    FIELD(admin_token_file), 0, 0 },
	{ "store", T_STORE, NULL, "none",
	    "shared object store: s3 ENDPOINT BUCKET [prefix=, region=, "
	    "access-key-file=, addressing=path|virtual]",
	    0, FIELD(store), 0, 0 },
	{ "store-timeout", T_DURATION, "2", NULL,
	    "a store lookup may take to its first byte (and to connect)", 0,
	    FIELD(store_timeout), 1, 300 },
	{ "store-upload-queue", T_UNSIGNED, "256", NULL,
	    "uploads to the store waiting at most; more are dropped", 0,
	    FIELD(store_upload_queue), 1, 1000000 },
	{ "store-multipart-size", T_SIZE, "64M", NULL,
	    "objects this large or larger are uploaded in parts of this size",
	    0, FIELD(store_multipart_size), 5ULL << 20, 5ULL << 30 },
	{ "token-file", T_PATH, NULL, "none",
	    "bearer tokens, one \"SHA256HEX SCOPE,... NAME\" a line "
	    "(dbgmirror token makes them)",
	    0, FIELD(token_file), 0, 0 },
	{ "access", T_TEXTLIST, NULL, "none (see dbgmirror.conf(5))",
	    "\"CLASS RULE ...\": who may use read, metadata, metrics, "
	    "status, admin, upload or symbolicate; repeatable",
	    1, FIELD(access), 0, 0 },
	{ "trusted-proxy", T_TEXTLIST, NULL, "none",
	    "CIDR of a proxy whose X-Forwarded-For names the client; "
	    "repeatable",
	    1, FIELD(trusted_proxies), 0, 0 },
	{ "max-upload-size", T_SIZE, "4G", NULL,
	    "largest file a PUT may upload", 0, FIELD(max_upload_size), 1024,
	    1ULL << 40 },
	{ "upload-size", T_SIZE, "10G", NULL,
	    "cap on the bytes of uploaded files, kept apart from cache-size", 0,
	    FIELD(upload_size), 0, 1ULL << 50 },
	{ "user", T_STRING, NULL, "none",
	    "started as root: the user (and its group) to run as once the "
	    "ports are bound",
	    0, FIELD(user), 0, 0 },
	{ "sandbox", T_BOOL, "on", NULL,
	    "fence in the worker threads that parse files (Landlock, seccomp)",
	    0, FIELD(sandbox), 0, 0 },
	{ "symbolicate-builds", T_UNSIGNED, "1", NULL,
	    "symbol tables built at once for /symbolicate (more wait in order)",
	    0, FIELD(symbolicate_builds), 1, 256 },
	{ "symbolicate-max-frames", T_UNSIGNED, "10000", NULL,
	    "addresses one /symbolicate request may ask", 0,
	    FIELD(symbolicate_max_frames), 1, 10000000 },
	{ "symbolicate-max-modules", T_UNSIGNED, "1000", NULL,
	    "modules one /symbolicate request may name", 0,
	    FIELD(symbolicate_max_modules), 1, 1000000 },
	{ "symbolicate-max-body", T_SIZE, "4M", NULL,
	    "largest POST /symbolicate body", 0, FIELD(symbolicate_max_body),
	    1024, 1ULL << 30 },
	{ "symbolicate-timeout-max", T_DURATION, "60", NULL,
	    "the longest a /symbolicate request waits for its tables "
	    "(options.timeout_ms is cut to it)",
	    0, FIELD(symbolicate_timeout_max), 0, 600 },
	{ "symbolicate-open-tables", T_UNSIGNED, "256", NULL,
	    "symbol tables kept open for /symbolicate at most (the least "
	    "recently used are closed)",
	    0, FIELD(symbolicate_open_tables), 1, 1000000 },
	{ "symbolicate-open-bytes", T_SIZE, "2G", NULL,
	    "bytes the open symbol tables may map at most", 0,
	    FIELD(symbolicate_open_bytes), 1ULL << 20, 1ULL << 50 },
};

#define NOPTIONS (sizeof(options) / sizeof(options[0]))

_Static_assert(NOPTIONS <= CONFIG_OPTIONS_MAX,
    "struct config_layer has no room for every option");

int
config_opt_find(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < NOPTIONS; i++)
		if (strlen(options[i].name) == len &&
		    strncmp(options[i].name, name, len) == 0)
			return (int)i;
	return -1;
}

int
config_opt_repeatable(size_t o)
{
	return options[o].repeatable;
}

enum config_opt_arg
config_opt_arg(size_t o)
{
	switch (options[o].type) {
	case T_BOOL:
		return CONFIG_ARG_BOOL;
	case T_ACCESSLOG:
		return CONFIG_ARG_BOOL_OR_FILE;
	default:
		return CONFIG_ARG_VALUE;
	}
}

/* Indexed by enum config_log_level and enum config_admin. */
static const char *const loglevel_words[] = { "warn", "info", "debug" };
static const char *const admin_words[] = { "none", "loopback", "any" };
/* Indexed by enum config_redirects. */
static const char *const redirect_words[] = { "none", "same-host", "any" };

static void
listens_clear(struct config *cfg)
{
	size_t i;

	for (i = 0; i < cfg->nlisten; i++)
		config_listen_clear(&cfg->listen[i]);
	cfg->nlisten = 0;
}

static void
store_number(void *p, size_t width, uint64_t v)
{
	if (width == sizeof(uint64_t))
		*(uint64_t *)p = v;
	else
		*(unsigned *)p = (unsigned)v;
}

static void
upstreams_clear(struct config *cfg)
{
	size_t i;

	for (i = 0; i < cfg->nupstreams; i++)
		config_upstream_clear(&cfg->upstreams[i]);
	free(cfg->upstreams);
	cfg->upstreams = NULL;
	cfg->nupstreams = 0;
}

/*
 * Remember where the value of op just set came from (where), under the
 * index it has in its list (0 for single values); nothing for a value
 * that emptied a list.  Out of memory it is forgotten: config_where then
 * says "default", which only a message shows.
 */
static void
origin_note(struct config *cfg, const struct opt *op, const char *where)
{
	struct config_origin *v;
	size_t n = 1;
	char *s;

	switch (op->type) {
	case T_PATHLIST:
	case T_TEXTLIST:
	case T_REPO:
	case T_HEADER:
		n = ((struct config_strlist *)((char *)cfg + op->off))->n;
		break;
	case T_LISTEN:
		n = cfg->nlisten;
		break;
	case T_UPSTREAM:
		n = cfg->nupstreams;
		break;
	default:
		break;
	}
	if (n == 0 ||
	    (v = realloc(cfg->origins, (cfg->norigins + 1) * sizeof(*v))) ==
		NULL)
		return;
	cfg->origins = v;
	if ((s = strdup(where)) == NULL)
		return;
	v[cfg->norigins].name = op->name;
	v[cfg->norigins].idx = n - 1;
	v[cfg->norigins++].where = s;
}

const char *
config_where(const struct config *cfg, const char *name, size_t idx)
{
	size_t i;

	/* The last one noted wins: a later layer's replaced the earlier. */
	for (i = cfg->norigins; i > 0; i--)
		if (cfg->origins[i - 1].idx == idx &&
		    strcmp(cfg->origins[i - 1].name, name) == 0)
			return cfg->origins[i - 1].where;
	return "default";
}

int
config_opt_set(struct config *cfg, size_t o, const char *value,
    const char *where, struct config_diag *diag, struct config_layer *layer,
    unsigned long line)
{
	const struct opt *op = &options[o];
	void *p = (char *)cfg + op->off;
	int fresh = layer != NULL && layer->first[o] == 0;
	const char *why = NULL;
	char buf[CONFIG_SHOWN_MAX];
	uint64_t n;
	char *s;

	if (*value == '\0') {
		config_diag_add(diag, "%s: %s: empty value", where, op->name);
		config_diag_about(diag, op->name);
		return -1;
	}
	switch (op->type) {
	case T_UNSIGNED:
	case T_DURATION:
	case T_SIZE:
		if (config_parse_number(value,
			op->type == T_DURATION   ? CONFIG_NUMBER_DURATION
			    : op->type == T_SIZE ? CONFIG_NUMBER_SIZE
						 : CONFIG_NUMBER_PLAIN,
			&n, &why) == -1)
			goto bad;
		if (n < op->min || n > op->max) {
			config_diag_add(diag,
			    "%s: %s: \"%s\": must be from %llu to %llu", where,
			    op->name, config_shown(value, buf, sizeof(buf)),
			    (unsigned long long)op->min,
			    (unsigned long long)op->max);
			config_diag_about(diag, op->name);
			return -1;
		}
		store_number(p, op->width, n);
		break;
	case T_BOOL:
		if (config_parse_bool(value, (int *)p) == -1) {
			why = "expected on/off, yes/no, true/false or 1/0";
			goto bad;
		}
		break;
	case T_ACCESSLOG:
		if (config_parse_bool(value, (int *)p) == 0) {
			free(cfg->access_log_file);
			cfg->access_log_file = NULL;
			break;
		}
		if (strchr(value, '/') == NULL) {
			why = "expected on/off, yes/no, true/false, 1/0 or a "
			      "file (a path with a '/')";
			goto bad;
		}
		if ((s = strdup(value)) == NULL)
			goto nomem;
		free(cfg->access_log_file);
		cfg->access_log_file = s;
		*(int *)p = 1;
		break;
	case T_LOGLEVEL:
		if (config_parse_word(value, loglevel_words, 3, (int *)p) ==
		    -1) {
			why = "expected warn, info or debug";
			goto bad;
		}
		break;
	case T_PATH:
		/* "none", as the defaults are shown, is no file. */
		if (strcmp(value, "none") == 0) {
			free(*(char **)p);
			*(char **)p = NULL;
			break;
		}
		if ((s = strdup(value)) == NULL)
			goto nomem;
		free(*(char **)p);
		*(char **)p = s;
		break;
	case T_PATHLIST:
	case T_TEXTLIST:
		if (fresh || strcmp(value, "none") == 0)
			config_strlist_clear(p);
		if (strcmp(value, "none") == 0)
			break;
		if ((s = strdup(value)) == NULL ||
		    config_strlist_add(p, s) == -1)
			goto nomem;
		break;
	case T_STRING:
		if ((s = strdup(strcmp(value, "none") == 0 ? "" : value)) ==
		    NULL)
			goto nomem;
		free(*(char **)p);
		*(char **)p = s;
		break;
	case T_ADMIN:
		if (config_parse_word(value, admin_words, 3, (int *)p) == -1) {
			why = "expected none, loopback or any";
			goto bad;
		}
		break;
	case T_REDIRECTS:
		if (config_parse_word(value, redirect_words, 3, (int *)p) ==
		    -1) {
			why = "expected none, same-host or any";
			goto bad;
		}
		break;
	case T_REPO: {
		struct config_repo r;

		if (fresh || strcmp(value, "none") == 0)
			config_strlist_clear(p);
		if (strcmp(value, "none") == 0)
			break;
		if (config_repo_parse(value, &r, &why) == -1)
			goto bad;
		if ((s = strdup(value)) == NULL ||
		    config_strlist_add(p, s) == -1)
			goto nomem;
		break;
	}
	case T_HEADER:
		if (fresh || strcmp(value, "none") == 0)
			config_strlist_clear(p);
		if (strcmp(value, "none") == 0)
			break;
		if (config_check_header(value, &why) == -1)
			goto bad;
		if ((s = strdup(value)) == NULL ||
		    config_strlist_add(p, s) == -1)
			goto nomem;
		break;
	case T_UPSTREAM: {
		struct config_upstream u, *v;
		size_t i;

		if (fresh || strcmp(value, "none") == 0)
			upstreams_clear(cfg);
		if (strcmp(value, "none") == 0)
			break;
		if (config_parse_upstream(value, &u, &why) == -1)
			goto bad;
		for (i = 0; i < cfg->nupstreams; i++)
			if (strcmp(cfg->upstreams[i].url, u.url) == 0)
				break;
		if (i < cfg->nupstreams ||
		    cfg->nupstreams >= CONFIG_UPSTREAMS_MAX) {
			config_diag_add(diag, "%s: %s: %s", where, op->name,
			    i < cfg->nupstreams ? "this URL is already listed"
						: "more than 32 upstreams");
			config_diag_about(diag, op->name);
			config_upstream_clear(&u);
			return -1;
		}
		v = realloc(cfg->upstreams, (cfg->nupstreams + 1) * sizeof(*v));
		if (v == NULL) {
			config_upstream_clear(&u);
			goto nomem;
		}
		v[cfg->nupstreams++] = u;
		cfg->upstreams = v;
		break;
	}
	case T_STORE: {
		struct config_objstore st, *v;

		config_objstore_free(cfg->store);
		free(cfg->store);
		cfg->store = NULL;
		if (strcmp(value, "none") == 0)
			break;
		if (config_objstore_parse(value, &st, &why) == -1)
			goto bad;
		if ((v = malloc(sizeof(*v))) == NULL) {
			config_objstore_free(&st);
			goto nomem;
		}
		*v = st;
		cfg->store = v;
		break;
	}
	case T_LISTEN: {
		struct config_listen l, *v;
		char v4[CONFIG_LINE_MAX + 16], v6[CONFIG_LINE_MAX + 16];

		if (config_listen_any(value, v4, v6, sizeof(v4)) == 1)
			return config_opt_set(cfg, o, v4, where, diag, layer,
				   line) == -1
			    ? -1
			    : config_opt_set(cfg, o, v6, where, diag, layer,
				  line);

		if (config_parse_listen(value, &l, &why) == -1)
			goto bad;
		if (fresh)
			listens_clear(cfg);
		if (cfg->nlisten >= LISTEN_MAX) {
			config_diag_add(diag, "%s: %s: more than %d addresses",
			    where, op->name, LISTEN_MAX);
			config_diag_about(diag, op->name);
			config_listen_clear(&l);
			return -1;
		}
		v = realloc(cfg->listen, (cfg->nlisten + 1) * sizeof(*v));
		if (v == NULL) {
			config_listen_clear(&l);
			goto nomem;
		}
		v[cfg->nlisten++] = l;
		cfg->listen = v;
		break;
	}
	}
	if (fresh)
		layer->first[o] = line;
	origin_note(cfg, op, where);
	return 0;

bad:
	config_diag_add(diag, "%s: %s: \"%s\": %s", where, op->name,
	    config_shown(value, buf, sizeof(buf)), why);
	config_diag_about(diag, op->name);
	return -1;
nomem:
	config_diag_add(diag, "%s: %s: out of memory", where, op->name);
	config_diag_about(diag, op->name);
	return -1;
}

int
config_opt_set_default(struct config *cfg, size_t o, struct config_diag *diag)
{
	char *copy, *word, *save;
	int rc = 0;

	if (options[o].def == NULL)
		return 0;
	if ((copy = strdup(options[o].def)) == NULL) {
		config_diag_add(diag, "%s: out of memory", __func__);
		return -1;
	}
	for (word = strtok_r(copy, " ", &save); word != NULL;
	     word = strtok_r(NULL, " ", &save))
		if (config_opt_set(cfg, o, word, "default", diag, NULL, 0) ==
		    -1)
			rc = -1;
	free(copy);
	return rc;
}

int
config_init(struct config *cfg)
{
	size_t i;

	memset(cfg, 0, sizeof(*cfg));
	for (i = 0; i < NOPTIONS; i++) {
		if (config_opt_set_default(cfg, i, NULL) == -1) {
			config_free(cfg);
			return -1;
		}
	}
	return 0;
}

void
config_free(struct config *cfg)
{
	size_t i;

	free(cfg->config_file);
	for (i = 0; i < cfg->norigins; i++)
		free(cfg->origins[i].where);
	free(cfg->origins);
	listens_clear(cfg);
	free(cfg->listen);
	free(cfg->cache_dir);
	free(cfg->upload_dir);
	config_strlist_clear(&cfg->scan_dirs);
	config_strlist_clear(&cfg->source_roots);
	config_strlist_clear(&cfg->scan_packages);
	upstreams_clear(cfg);
	config_strlist_clear(&cfg->upstream_headers);
	config_strlist_clear(&cfg->repos);
	free(cfg->access_log_file);
	free(cfg->ca_file);
	free(cfg->proxy);
	free(cfg->user_agent);
	free(cfg->admin_token_file);
	config_objstore_free(cfg->store);
	free(cfg->store);
	free(cfg->token_file);
	config_strlist_clear(&cfg->access);
	config_strlist_clear(&cfg->trusted_proxies);
	free(cfg->user);
	memset(cfg, 0, sizeof(*cfg));
}

const char *
config_option_name(size_t i)
{
	return i < NOPTIONS ? options[i].name : NULL;
}

/* A listen address as configured: from its sockaddr, not its text. */
static void
listen_text(FILE *fp, const struct config_listen *l)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (l->addr.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)&l->addr;

		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		fprintf(fp, "[%s]:%u", host, ntohs(a->sin6_port));
	} else {
		const struct sockaddr_in *a = (const void *)&l->addr;

		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		fprintf(fp, "%s:%u", host, ntohs(a->sin_port));
	}
	if (!l->tls)
		return;
	fprintf(fp, " tls cert=%s key=%s", l->cert, l->key);
	if (l->client_ca != NULL)
		fprintf(fp, " client-ca=%s client-cert=%s", l->client_ca,
		    l->client_cert_optional ? "optional" : "required");
}

/* A string option's value: NULL (the default's) and "" (none) apart. */
static void
string_text(FILE *fp, const char *s)
{
	fputs(s == NULL ? "(default)" : s[0] == '\0' ? "none" : s, fp);
}

static void
strlist_text(FILE *fp, const struct config_strlist *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		fprintf(fp, "%s%s", i > 0 ? "\n" : "", l->v[i]);
	if (l->n == 0)
		fputs("none", fp);
}

/* One upstream line; shown: its public name, its headers' names only. */
static void
upstream_text(FILE *fp, const struct config_upstream *u, int shown)
{
	size_t i;

	fprintf(fp,
	    "%s enabled=%s connect-timeout=%u first-byte-timeout=%u "
	    "min-rate=%u negative-ttl=%u error-ttl=%u",
	    shown ? u->name : u->url, u->enabled ? "yes" : "no",
	    u->connect_timeout, u->first_byte_timeout, u->min_rate,
	    u->negative_ttl, u->error_ttl);
	for (i = 0; i < u->headers.n; i++)
		fprintf(fp, " [%.*s]",
		    shown ? (int)strcspn(u->headers.v[i], ":")
			  : (int)strlen(u->headers.v[i]),
		    u->headers.v[i]);
}

static void
store_text(FILE *fp, const struct config_objstore *st, int shown)
{
	char pub[2048];

	if (st == NULL) {
		fputs("none", fp);
		return;
	}
	config_objstore_public(st, pub, sizeof(pub));
	fprintf(fp, "s3 %s addressing=%s", pub,
	    st->virtual_host ? "virtual" : "path");
	if (shown)
		return;
	fprintf(fp, " region=%s access-key-file=%s keys=%s:%s",
	    st->region != NULL ? st->region : "",
	    st->key_file != NULL ? st->key_file : "",
	    st->access_key != NULL ? st->access_key : "",
	    st->secret_key != NULL ? st->secret_key : "");
}

char *
config_option_text(const struct config *cfg, size_t o, int shown)
{
	const struct opt *op;
	const void *p;
	char *text = NULL;
	size_t len = 0, i;
	FILE *fp;

	if (o >= NOPTIONS || (fp = open_memstream(&text, &len)) == NULL)
		return NULL;
	op = &options[o];
	p = (const char *)cfg + op->off;
	switch (op->type) {
	case T_LISTEN:
		for (i = 0; i < cfg->nlisten; i++) {
			if (i > 0)
				fputc('\n', fp);
			listen_text(fp, &cfg->listen[i]);
		}
		break;
	case T_UNSIGNED:
	case T_DURATION:
	case T_SIZE:
		fprintf(fp, "%llu",
		    op->width == sizeof(uint64_t)
			? (unsigned long long)*(const uint64_t *)p
			: (unsigned long long)*(const unsigned *)p);
		break;
	case T_BOOL:
		fputs(*(const int *)p ? "on" : "off", fp);
		break;
	case T_ACCESSLOG:
		fputs(!cfg->access_log                 ? "off"
			: cfg->access_log_file != NULL ? cfg->access_log_file
						       : "on",
		    fp);
		break;
	case T_LOGLEVEL:
		fputs(loglevel_words[*(const int *)p], fp);
		break;
	case T_ADMIN:
		fputs(admin_words[*(const int *)p], fp);
		break;
	case T_REDIRECTS:
		fputs(redirect_words[*(const int *)p], fp);
		break;
	case T_PATH:
	case T_STRING:
		string_text(fp, *(char *const *)p);
		break;
	case T_PATHLIST:
	case T_TEXTLIST:
	case T_REPO:
	case T_HEADER:
		strlist_text(fp, p);
		break;
	case T_UPSTREAM:
		for (i = 0; i < cfg->nupstreams; i++) {
			if (i > 0)
				fputc('\n', fp);
			upstream_text(fp, &cfg->upstreams[i], shown);
		}
		if (cfg->nupstreams == 0)
			fputs("none", fp);
		break;
	case T_STORE:
		store_text(fp, cfg->store, shown);
		break;
	}
	if (fclose(fp) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* The shape of an option's value as --help shows it, by type. */
static const char *
metavar(const struct opt *op)
{
	static const char *const names[] = {
		[T_LISTEN] = "ADDR:PORT",
		[T_UNSIGNED] = "N",
		[T_DURATION] = "TIME",
		[T_SIZE] = "SIZE",
		[T_BOOL] = "on|off",
		[T_ACCESSLOG] = "on|off|FILE",
		[T_LOGLEVEL] = "LEVEL",
		[T_PATH] = "FILE",
		[T_PATHLIST] = "DIR",
		[T_STRING] = "TEXT",
		[T_UPSTREAM] = "URL",
		[T_HEADER] = "HEADER",
		[T_ADMIN] = "WHO",
		[T_REDIRECTS] = "WHERE",
		[T_STORE] = "STORE",
		[T_TEXTLIST] = "TEXT",
		[T_REPO] = "REPO",
	};

	/* The options whose value is not what their type says. */
	static const struct {
		const char *name, *metavar;
	} special[] = {
		{ "cache-dir", "DIR" },
		{ "upload-dir", "DIR" },
		{ "proxy", "URL" },
		{ "access", "RULE" },
		{ "trusted-proxy", "CIDR" },
		{ "user", "NAME" },
	};
	size_t i;

	for (i = 0; i < sizeof(special) / sizeof(special[0]); i++)
		if (strcmp(op->name, special[i].name) == 0)
			return special[i].metavar;
	return names[op->type];
}

int
config_option_info(size_t i, struct config_option_info *oi)
{
	if (i >= NOPTIONS)
		return -1;
	oi->name = options[i].name;
	oi->metavar = metavar(&options[i]);
	oi->help = options[i].help;
	oi->shown_default =
	    options[i].def != NULL ? options[i].def : options[i].shown;
	return 0;
}
