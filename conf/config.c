/*
 * conf/config.c: the option schema, the config file and command-line
 * parsers, and the defaults.
 *
 * The table options[] is the only place an option is described: its name,
 * value type, default, help line, whether it may repeat, where it lives in
 * struct config and, for numbers, its bounds.  Everything else walks it.
 *
 * Layers: config_init() stores the fixed defaults; config_load() then
 * applies one file and the command line, each as a layer.  A layer
 * remembers which options it has set (struct layer), so that the first
 * value a layer gives a repeatable option replaces the list inherited from
 * below instead of adding to it, and a file can say where an option was
 * first set.  Defaults that depend on the machine (cache-dir, scan-dir) are
 * computed last, only for options no layer set.
 *
 * Nothing is printed: every problem becomes one "where: what" string in a
 * struct config_diag, and parsing goes on so that all are reported.  Runs at
 * start-up on one thread; getpwuid() is not thread-safe.
 */
#include "conf/config.h"
#include "conf/objstore.h"
#include "conf/values.h"

#include <sys/stat.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define LINE_MAX_BYTES 4096 /* longest config file line, without '\n' */
#define LISTEN_MAX 16 /* most listen addresses */
#define SHOWN_MAX 80 /* most bytes of a bad value quoted back */
#define DEFAULT_SCAN_DIR "/usr/lib/debug"
#define DAY (24 * 60 * 60)
#define UNSET UINT_MAX /* a per-upstream number taken from the global */

enum opt_type {
	T_LISTEN, /* IPv4:PORT or [IPv6]:PORT */
	T_UNSIGNED, /* decimal digits */
	T_DURATION, /* seconds, suffix s, m, h or d */
	T_SIZE, /* bytes, suffix K, M, G or T */
	T_BOOL, /* on/off, yes/no, true/false, 1/0 */
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
	    "address to listen on; for HTTPS add: tls cert=FILE key=FILE "
	    "[client-ca=FILE]; repeatable",
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
	{ "scan-dir", T_PATHLIST, NULL, "/usr/lib/debug if it exists",
	    "debug files to index; repeatable, none = no scan", 1,
	    FIELD(scan_dirs), 0, 0 },
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
	{ "access-log", T_BOOL, "on", NULL, "one line per request on stderr", 0,
	    FIELD(access_log), 0, 0 },
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
	    "status, admin or upload; repeatable",
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
};

#define NOPTIONS (sizeof(options) / sizeof(options[0]))

/*
 * What one layer (a file, or the command line) has set: per option, the
 * line that first set it, 0 when none did.  The command line uses 1.
 */
struct layer {
	unsigned long first[NOPTIONS];
};

static void diag_add(struct config_diag *, const char *, ...)
    __attribute__((format(printf, 2, 3)));

/* Append one message; a NULL diag (the embedded defaults) drops it. */
static void
diag_add(struct config_diag *diag, const char *fmt, ...)
{
	va_list ap;
	char *msg, **v;
	int len;

	if (diag == NULL)
		return;
	va_start(ap, fmt);
	len = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (len < 0)
		return;
	v = realloc(diag->msgs, (diag->n + 1) * sizeof(*v));
	if (v == NULL) {
		free(msg);
		return;
	}
	v[diag->n++] = msg;
	diag->msgs = v;
}

/*
 * Copy a value for quoting in a message: control characters become '?' so
 * that a hostile file cannot drive the terminal, and long values are cut.
 */
static const char *
shown(const char *value, char *buf, size_t size)
{
	size_t i;

	for (i = 0; value[i] != '\0' && i + 4 < size; i++) {
		unsigned char c = (unsigned char)value[i];

		buf[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	if (value[i] != '\0') {
		memcpy(buf + i, "...", 3);
		i += 3;
	}
	buf[i] = '\0';
	return buf;
}

static int
opt_find(const char *name)
{
	size_t i;

	for (i = 0; i < NOPTIONS; i++)
		if (strcmp(options[i].name, name) == 0)
			return (int)i;
	return -1;
}

/* Edits (insert, delete, replace) from a[0..an) to b; at most 64 long. */
static size_t
edit_distance(const char *a, size_t an, const char *b)
{
	size_t bn = strlen(b), row[65], i, j, diag, up;

	if (an > 64 || bn > 64)
		return SIZE_MAX;
	for (j = 0; j <= bn; j++)
		row[j] = j;
	for (i = 1; i <= an; i++) {
		diag = row[0];
		row[0] = i;
		for (j = 1; j <= bn; j++) {
			up = row[j];
			row[j] = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < row[j])
				row[j] = up + 1;
			if (row[j - 1] + 1 < row[j])
				row[j] = row[j - 1] + 1;
			diag = up;
		}
	}
	return row[bn];
}

/*
 * " (did you mean PREFIXNAME?)" for the option closest to the unknown
 * name (len bytes), when it is close (a third of its letters at most),
 * into buf; else "".
 */
static const char *
did_you_mean(const char *name, size_t len, const char *prefix, char *buf,
    size_t buflen)
{
	size_t i, d, best = SIZE_MAX, besti = 0;

	for (i = 0; i < NOPTIONS; i++)
		if ((d = edit_distance(name, len, options[i].name)) < best) {
			best = d;
			besti = i;
		}
	if (best == 0 || best > (len + 2) / 3) {
		buf[0] = '\0';
		return buf;
	}
	snprintf(buf, buflen, " (did you mean %s%s?)", prefix,
	    options[besti].name);
	return buf;
}

/* "dir/name", without doubling a '/' that dir ends with. */
static char *
path_join(const char *dir, const char *name)
{
	size_t len = strlen(dir);
	char *s;

	if (asprintf(&s, "%s%s%s", dir,
		(len > 0 && dir[len - 1] == '/') ? "" : "/", name) < 0)
		return NULL;
	return s;
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
 * Set option o from its text.  When layer is not NULL, the first value the
 * layer gives a repeatable option replaces the list, and the option is
 * marked as set at line.  Only a value that parses is stored or marks the
 * option.  Bad values are reported as "where: name: "value": why".
 */
static int
opt_set(struct config *cfg, size_t o, const char *value, const char *where,
    struct config_diag *diag, struct layer *layer, unsigned long line)
{
	const struct opt *op = &options[o];
	void *p = (char *)cfg + op->off;
	int fresh = layer != NULL && layer->first[o] == 0;
	const char *why = NULL;
	char buf[SHOWN_MAX];
	uint64_t n;
	char *s;

	if (*value == '\0') {
		diag_add(diag, "%s: %s: empty value", where, op->name);
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
			diag_add(diag,
			    "%s: %s: \"%s\": must be from %llu to %llu", where,
			    op->name, shown(value, buf, sizeof(buf)),
			    (unsigned long long)op->min,
			    (unsigned long long)op->max);
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
			diag_add(diag, "%s: %s: %s", where, op->name,
			    i < cfg->nupstreams ? "this URL is already listed"
						: "more than 32 upstreams");
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

		if (config_parse_listen(value, &l, &why) == -1)
			goto bad;
		if (fresh)
			listens_clear(cfg);
		if (cfg->nlisten >= LISTEN_MAX) {
			diag_add(diag, "%s: %s: more than %d addresses", where,
			    op->name, LISTEN_MAX);
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
	return 0;

bad:
	diag_add(diag, "%s: %s: \"%s\": %s", where, op->name,
	    shown(value, buf, sizeof(buf)), why);
	return -1;
nomem:
	diag_add(diag, "%s: %s: out of memory", where, op->name);
	return -1;
}

int
config_set(struct config *cfg, const char *name, const char *value,
    const char *where, struct config_diag *diag)
{
	char hint[96];
	char buf[SHOWN_MAX];
	int o;

	if ((o = opt_find(name)) == -1) {
		diag_add(diag, "%s: %s: unknown option%s", where,
		    shown(name, buf, sizeof(buf)),
		    did_you_mean(name, strlen(name), "", hint, sizeof(hint)));
		return -1;
	}
	return opt_set(cfg, (size_t)o, value, where, diag, NULL, 0);
}

/* Set option o to its embedded default: each blank-separated word of it. */
static int
opt_set_default(struct config *cfg, size_t o, struct config_diag *diag)
{
	char *copy, *word, *save;
	int rc = 0;

	if (options[o].def == NULL)
		return 0;
	if ((copy = strdup(options[o].def)) == NULL) {
		diag_add(diag, "%s: out of memory", __func__);
		return -1;
	}
	for (word = strtok_r(copy, " ", &save); word != NULL;
	     word = strtok_r(NULL, " ", &save))
		if (opt_set(cfg, o, word, "default", diag, NULL, 0) == -1)
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
		if (opt_set_default(cfg, i, NULL) == -1) {
			config_free(cfg);
			return -1;
		}
	}
	return 0;
}

void
config_free(struct config *cfg)
{
	free(cfg->config_file);
	listens_clear(cfg);
	free(cfg->listen);
	free(cfg->cache_dir);
	config_strlist_clear(&cfg->scan_dirs);
	config_strlist_clear(&cfg->scan_packages);
	upstreams_clear(cfg);
	config_strlist_clear(&cfg->upstream_headers);
	config_strlist_clear(&cfg->repos);
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

void
config_diag_free(struct config_diag *diag)
{
	size_t i;

	for (i = 0; i < diag->n; i++)
		free(diag->msgs[i]);
	free(diag->msgs);
	diag->msgs = NULL;
	diag->n = 0;
}

const char *
config_option_name(size_t i)
{
	return i < NOPTIONS ? options[i].name : NULL;
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
 * Parse one file as one layer.  Errors are reported with "path:line" and
 * the next line is read, so one run finds every problem.
 */
static int
parse_file(struct config *cfg, FILE *fp, const char *path,
    struct config_diag *diag, struct layer *layer)
{
	char hint[96];
	char line[LINE_MAX_BYTES + 1], where[64 + FILENAME_MAX];
	char buf[SHOWN_MAX];
	unsigned long lineno = 0;
	const char *why;
	int rc = 0, r;

	while ((r = read_line(fp, line, sizeof(line), &why)) != 0) {
		char *p, *eq, *end, *value;
		int o;

		lineno++;
		snprintf(where, sizeof(where), "%s:%lu", path, lineno);
		if (r == -1) {
			diag_add(diag, "%s: %s", where, why);
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
			diag_add(diag, "%s: expected name = value", where);
			rc = -1;
			continue;
		}
		for (end = eq; end > p && config_is_blank(end[-1]); end--)
			continue;
		*end = '\0';
		if (*p == '\0') {
			diag_add(diag, "%s: missing name before '='", where);
			rc = -1;
			continue;
		}
		if ((o = opt_find(p)) == -1) {
			diag_add(diag, "%s: %s: unknown option%s", where,
			    shown(p, buf, sizeof(buf)),
			    did_you_mean(p, strlen(p), "", hint, sizeof(hint)));
			rc = -1;
			continue;
		}
		if ((value = take_value(eq + 1, &why)) == NULL) {
			diag_add(diag, "%s: %s: %s", where, options[o].name,
			    why);
			rc = -1;
			continue;
		}
		if (!options[o].repeatable && layer->first[o] != 0) {
			diag_add(diag, "%s: %s: set twice; first at line %lu",
			    where, options[o].name, layer->first[o]);
			rc = -1;
			continue;
		}
		if (opt_set(cfg, (size_t)o, value, where, diag, layer,
			lineno) == -1)
			rc = -1;
	}
	if (ferror(fp)) {
		diag_add(diag, "%s: %s", path, strerror(errno));
		rc = -1;
	}
	return rc;
}

static FILE *
open_file(const char *path, struct config_diag *diag)
{
	FILE *fp;

	if ((fp = fopen(path, "re")) == NULL)
		diag_add(diag, "%s: %s", path, strerror(errno));
	return fp;
}

int
config_load_file(struct config *cfg, const char *path, struct config_diag *diag)
{
	struct layer layer;
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

static int
opt_find_len(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < NOPTIONS; i++)
		if (strlen(options[i].name) == len &&
		    strncmp(options[i].name, name, len) == 0)
			return (int)i;
	return -1;
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
	char hint[96];
	char buf[SHOWN_MAX];
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
				} else {
					diag_add(diag,
					    "command line: -%s: unknown option",
					    shown((char[]){ *a, '\0' }, buf,
						sizeof(buf)));
					rc = -1;
				}
			}
			continue;
		}

		a += 2;
		eq = strchr(a, '=');
		len = eq != NULL ? (size_t)(eq - a) : strlen(a);
		f = args_flag(a, len);
		o = f == A_NONE ? opt_find_len(a, len) : -1;
		if (f == A_NONE && o == -1 && len > 3 &&
		    strncmp(a, "no-", 3) == 0 &&
		    (o = opt_find_len(a + 3, len - 3)) != -1) {
			if (options[o].type == T_BOOL)
				negated = 1;
			else
				o = -1;
		}
		if (f == A_NONE && o == -1) {
			diag_add(diag, "command line: --%.*s: unknown option%s",
			    (int)len, shown(a, buf, sizeof(buf)),
			    did_you_mean(a, len, "--", hint, sizeof(hint)));
			rc = -1;
			continue;
		}
		if (eq != NULL && (negated || (f != A_NONE && f != A_CONFIG))) {
			diag_add(diag, "command line: --%.*s: takes no value",
			    (int)len, shown(a, buf, sizeof(buf)));
			rc = -1;
			continue;
		}

		/* Find the value of those that take one. */
		value = NULL;
		if (eq != NULL)
			value = eq + 1;
		else if (negated)
			value = "off";
		else if (o != -1 && options[o].type == T_BOOL) {
			if (i + 1 < argc &&
			    config_parse_bool(argv[i + 1], &dummy) == 0)
				value = argv[++i];
			else
				value = "on";
		} else if (f == A_CONFIG || o != -1) {
			if (i + 1 >= argc) {
				diag_add(diag,
				    "command line: --%s: missing value",
				    shown(a, buf, sizeof(buf)));
				rc = -1;
				continue;
			}
			value = argv[++i];
		}
		if (f == A_CONFIG && *value == '\0') {
			diag_add(diag, "command line: --config: empty value");
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
			if (args_add_pair(args, options[o].name, value) == -1)
				goto nomem;
			break;
		}
	}
	return rc;

nomem:
	diag_add(diag, "command line: out of memory");
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

char *
config_default_cache_dir(void)
{
	const char *dir;
	struct passwd *pw;

	if (geteuid() == 0)
		return strdup("/var/cache/dbgmirror");
	dir = getenv("XDG_CACHE_HOME");
	if (dir != NULL && dir[0] == '/')
		return path_join(dir, "dbgmirror");
	dir = getenv("HOME");
	if (dir == NULL || dir[0] != '/') {
		pw = getpwuid(geteuid());
		dir = pw != NULL ? pw->pw_dir : NULL;
	}
	if (dir == NULL || dir[0] != '/')
		return NULL;
	return path_join(dir, ".cache/dbgmirror");
}

/* Prefix a relative path with cwd; the path need not exist. */
static int
make_absolute(char **path, const char *cwd)
{
	char *s;

	if ((*path)[0] == '/')
		return 0;
	if ((s = path_join(cwd, *path)) == NULL)
		return -1;
	free(*path);
	*path = s;
	return 0;
}

static int
make_paths_absolute(struct config *cfg, struct config_diag *diag)
{
	char *cwd;
	size_t i;
	int rc = 0, relative;

	relative = (cfg->cache_dir != NULL && cfg->cache_dir[0] != '/') ||
	    (cfg->ca_file != NULL && cfg->ca_file[0] != '/') ||
	    (cfg->token_file != NULL && cfg->token_file[0] != '/');
	for (i = 0; i < cfg->scan_dirs.n; i++)
		if (cfg->scan_dirs.v[i][0] != '/')
			relative = 1;
	for (i = 0; i < cfg->scan_packages.n; i++)
		if (cfg->scan_packages.v[i][0] != '/')
			relative = 1;
	if (!relative)
		return 0;
	if ((cwd = getcwd(NULL, 0)) == NULL) {
		diag_add(diag, "%s: current directory: %s", __func__,
		    strerror(errno));
		return -1;
	}
	if (cfg->cache_dir != NULL && make_absolute(&cfg->cache_dir, cwd) == -1)
		rc = -1;
	if (cfg->ca_file != NULL && make_absolute(&cfg->ca_file, cwd) == -1)
		rc = -1;
	if (cfg->token_file != NULL &&
	    make_absolute(&cfg->token_file, cwd) == -1)
		rc = -1;
	for (i = 0; i < cfg->scan_dirs.n; i++)
		if (make_absolute(&cfg->scan_dirs.v[i], cwd) == -1)
			rc = -1;
	for (i = 0; i < cfg->scan_packages.n; i++)
		if (make_absolute(&cfg->scan_packages.v[i], cwd) == -1)
			rc = -1;
	free(cwd);
	if (rc == -1)
		diag_add(diag, "%s: out of memory", __func__);
	return rc;
}

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
		diag_add(diag, "DEBUGINFOD_URLS: out of memory");
		return -1;
	}
	for (word = strtok_r(copy, " \t\n", &save); word != NULL;
	     word = strtok_r(NULL, " \t\n", &save))
		if (opt_set(cfg, (size_t)o, word, "DEBUGINFOD_URLS", diag, NULL,
			0) == -1)
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

		if (u->connect_timeout == UNSET)
			u->connect_timeout = cfg->upstream_connect_timeout;
		if (u->first_byte_timeout == UNSET)
			u->first_byte_timeout =
			    cfg->upstream_first_byte_timeout;
		if (u->min_rate == UNSET)
			u->min_rate = cfg->upstream_min_rate;
		if (u->negative_ttl == UNSET)
			u->negative_ttl = cfg->negative_ttl;
		if (u->error_ttl == UNSET)
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
				diag_add(diag,
				    "upstream-header: out of memory");
				return -1;
			}
		}
		if (!found && !(len == 1 && h[0] == '*')) {
			diag_add(diag,
			    "upstream-header: \"%.*s\" is not a "
			    "listed upstream",
			    (int)(len > SHOWN_MAX ? SHOWN_MAX : len), h);
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
	struct layer file, cmd;
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
			diag_add(diag, "command line: --%s: unknown option%s",
			    name,
			    did_you_mean(name, strlen(name), "--", hint,
				sizeof(hint)));
			rc = -1;
			continue;
		}
		if (opt_set(cfg, (size_t)o, args->pairs[2 * i + 1],
			"command line", diag, &cmd, 1) == -1)
			rc = -1;
	}

	/* The defaults that depend on the machine, unless a layer set them. */
	if (cfg->cache_dir == NULL &&
	    (cfg->cache_dir = config_default_cache_dir()) == NULL) {
		diag_add(diag, "%s: no home directory for cache-dir", __func__);
		rc = -1;
	}
	o = opt_find("scan-dir");
	if (o != -1 && file.first[o] == 0 && cmd.first[o] == 0 &&
	    cfg->scan_dirs.n == 0 && stat(DEFAULT_SCAN_DIR, &st) == 0 &&
	    S_ISDIR(st.st_mode))
		if (opt_set(cfg, (size_t)o, DEFAULT_SCAN_DIR, "default", diag,
			NULL, 0) == -1)
			rc = -1;
	o = opt_find("listen");
	if (o != -1 && cfg->nlisten == 0 && file.first[o] == 0 &&
	    cmd.first[o] == 0 && opt_set_default(cfg, (size_t)o, diag) == -1)
		rc = -1;

	o = opt_find("upstream");
	if (o != -1 && file.first[o] == 0 && cmd.first[o] == 0 &&
	    cfg->nupstreams == 0 && upstreams_from_env(cfg, diag) == -1)
		rc = -1;
	if (resolve_upstreams(cfg, diag) == -1)
		rc = -1;
	if (cfg->cache_low_watermark >= cfg->cache_high_watermark) {
		diag_add(diag,
		    "cache-low-watermark (%u) must be below "
		    "cache-high-watermark (%u)",
		    cfg->cache_low_watermark, cfg->cache_high_watermark);
		rc = -1;
	}
	if (cfg->cache_size != 0 && cfg->cache_size < (1ULL << 20)) {
		diag_add(diag, "cache-size: must be 0 (no cap) or at least 1M");
		rc = -1;
	}

	if (make_paths_absolute(cfg, diag) == -1)
		rc = -1;
	if (cfg->store != NULL) {
		char err[512], *cwd = getcwd(NULL, 0);

		if (config_objstore_credentials(cfg->store, cwd, err,
			sizeof(err)) == -1) {
			diag_add(diag, "store: %s", err);
			rc = -1;
		}
		free(cwd);
	}
	return (rc == -1 || diag->n > n0) ? -1 : 0;
}

/* --------------------------------------------------------------- usage */

static const char *
metavar(enum opt_type t)
{
	switch (t) {
	case T_LISTEN:
		return "ADDR:PORT";
	case T_UNSIGNED:
		return "N";
	case T_DURATION:
		return "TIME";
	case T_SIZE:
		return "SIZE";
	case T_BOOL:
		return "on|off";
	case T_LOGLEVEL:
		return "LEVEL";
	case T_PATH:
	case T_PATHLIST:
		return "DIR";
	case T_STRING:
	case T_TEXTLIST:
		return "TEXT";
	case T_UPSTREAM:
		return "URL";
	case T_HEADER:
		return "HEADER";
	case T_REPO:
		return "REPO";
	case T_ADMIN:
		return "WHO";
	case T_REDIRECTS:
		return "WHERE";
	case T_STORE:
		return "STORE";
	}
	return "VALUE";
}

void
config_usage(FILE *fp)
{
	size_t i, w, width = 0;

	for (i = 0; i < NOPTIONS; i++) {
		w = strlen(options[i].name) + 1 +
		    strlen(metavar(options[i].type));
		if (w > width)
			width = w;
	}
	for (i = 0; i < NOPTIONS; i++) {
		const struct opt *op = &options[i];

		fprintf(fp, "  --%s %-*s  %s (default: %s)\n", op->name,
		    (int)(width - strlen(op->name) - 1), metavar(op->type),
		    op->help, op->def != NULL ? op->def : op->shown);
	}
}
