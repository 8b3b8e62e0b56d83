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
#include "conf/store.h"

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
	    "[signed-by=FILE], rpm URL [gpgkey=FILE] or arch URL NAME "
	    "[key=FILE]; "
	    "repeatable",
	    1, FIELD(repos), 0, 0 },
	{ "repo-refresh", T_DURATION, "3600", NULL,
	    "between refreshes of the repositories' metadata, 0 = never", 0,
	    FIELD(repo_refresh), 0, 365 * DAY },
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

/* A number suffix and what it multiplies by. */
struct suffix {
	char c;
	uint64_t mult;
};

static const struct suffix duration_suffixes[] = {
	{ 's', 1 },
	{ 'm', 60 },
	{ 'h', 60 * 60 },
	{ 'd', DAY },
	{ '\0', 0 },
};

static const struct suffix size_suffixes[] = {
	{ 'K', 1ULL << 10 },
	{ 'M', 1ULL << 20 },
	{ 'G', 1ULL << 30 },
	{ 'T', 1ULL << 40 },
	{ '\0', 0 },
};

static const struct suffix no_suffixes[] = {
	{ '\0', 0 },
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

/*
 * Numbers: decimal digits, then at most one suffix from tab.  Signs, hex
 * and blanks are refused; so is anything above UINT64_MAX after scaling.
 */
static int
parse_number(const char *s, const struct suffix *tab, int nocase, uint64_t *out,
    const char **why)
{
	uint64_t v = 0;
	const struct suffix *sf;

	if (*s == '-') {
		*why = "must not be negative";
		return -1;
	}
	if (*s < '0' || *s > '9') {
		*why = NULL; /* the caller says what was expected */
		return -1;
	}
	for (; *s >= '0' && *s <= '9'; s++) {
		unsigned d = (unsigned)(*s - '0');

		if (v > (UINT64_MAX - d) / 10) {
			*why = "number too large";
			return -1;
		}
		v = v * 10 + d;
	}
	if (*s != '\0') {
		for (sf = tab; sf->c != '\0'; sf++)
			if (*s == sf->c ||
			    (nocase && (*s | 0x20) == (sf->c | 0x20)))
				break;
		if (sf->c == '\0' || s[1] != '\0') {
			*why = NULL;
			return -1;
		}
		if (v > UINT64_MAX / sf->mult) {
			*why = "number too large";
			return -1;
		}
		v *= sf->mult;
	}
	*out = v;
	return 0;
}

/* The suffixes numbers of type t may have, and what to say if wrong. */
static const struct suffix *
number_syntax(enum opt_type t, const char **expect)
{
	switch (t) {
	case T_DURATION:
		*expect = "expected seconds, or a number with suffix s, m, h "
			  "or d";
		return duration_suffixes;
	case T_SIZE:
		*expect = "expected bytes, or a number with suffix K, M, G "
			  "or T";
		return size_suffixes;
	default:
		*expect = "expected a decimal number";
		return no_suffixes;
	}
}

int
config_parse_duration(const char *s, uint64_t *seconds, const char **why)
{
	const char *expect;
	const struct suffix *tab = number_syntax(T_DURATION, &expect);

	if (parse_number(s, tab, 0, seconds, why) == -1) {
		if (*why == NULL)
			*why = expect;
		return -1;
	}
	return 0;
}

static int
parse_bool(const char *s, int *out)
{
	static const char *const yes[] = { "on", "yes", "true", "1" };
	static const char *const no[] = { "off", "no", "false", "0" };
	size_t i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = 1;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = 0;
			return 0;
		}
	}
	return -1;
}

/*
 * A word of words[] (any case): *out is its index, which is the value of
 * the enum the words spell.
 */
static int
parse_word(const char *s, const char *const words[], size_t n, int *out)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (strcasecmp(s, words[i]) == 0) {
			*out = (int)i;
			return 0;
		}
	}
	return -1;
}

/* Indexed by enum config_log_level and enum config_admin. */
static const char *const loglevel_words[] = { "warn", "info", "debug" };
static const char *const admin_words[] = { "none", "loopback", "any" };
/* Indexed by enum config_redirects. */
static const char *const redirect_words[] = { "none", "same-host", "any" };

/*
 * A listen address: "IPv4:PORT" or "[IPv6]:PORT", numeric only, since
 * resolving names at start-up would make the daemon depend on DNS.
 */
static int
parse_address(const char *s, struct config_listen *l, const char **why)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *h, *end, *port;
	size_t hlen;
	unsigned long pn = 0;
	int family;

	if (strlen(s) >= sizeof(l->text)) {
		*why = "too long";
		return -1;
	}
	if (s[0] == '[') {
		h = s + 1;
		if ((end = strchr(h, ']')) == NULL) {
			*why = "missing ']' after the IPv6 address";
			return -1;
		}
		if (end[1] != ':') {
			*why = "missing :PORT after ']'";
			return -1;
		}
		hlen = (size_t)(end - h);
		port = end + 2;
		family = AF_INET6;
	} else {
		h = s;
		if ((end = strrchr(s, ':')) == NULL) {
			*why = "missing :PORT";
			return -1;
		}
		if (memchr(s, ':', (size_t)(end - s)) != NULL) {
			*why =
			    "an IPv6 address needs brackets, as in [::1]:8002";
			return -1;
		}
		hlen = (size_t)(end - h);
		port = end + 1;
		family = AF_INET;
	}
	if (*port == '\0') {
		*why = "missing port after ':'";
		return -1;
	}
	for (; *port != '\0'; port++) {
		if (*port < '0' || *port > '9' || pn > 65535) {
			*why = "port must be a number from 0 to 65535";
			return -1;
		}
		pn = pn * 10 + (unsigned long)(*port - '0');
	}
	if (pn > 65535) {
		*why = "port must be a number from 0 to 65535";
		return -1;
	}

	memset(l, 0, sizeof(*l));
	if (hlen >= sizeof(host))
		goto notnumeric;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	if (family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&l->addr;

		if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
			goto notnumeric;
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)pn);
		l->addrlen = sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&l->addr;

		if (inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1)
			goto notnumeric;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)pn);
		l->addrlen = sizeof(*sin6);
	}
	strcpy(l->text, s);
	return 0;

notnumeric:
	*why = "numeric address required, as in 127.0.0.1:8002 or [::1]:8002";
	return -1;
}

static void
listen_clear(struct config_listen *l)
{
	free(l->cert);
	free(l->key);
	free(l->client_ca);
	l->cert = l->key = l->client_ca = NULL;
}

static void
listens_clear(struct config *cfg)
{
	size_t i;

	for (i = 0; i < cfg->nlisten; i++)
		listen_clear(&cfg->listen[i]);
	cfg->nlisten = 0;
}

/* A copy of path, made absolute against the current directory. */
static char *
absolute_copy(const char *path, size_t len)
{
	char cwd[PATH_MAX], *s;

	if (len > 0 && path[0] == '/')
		return strndup(path, len);
	if (getcwd(cwd, sizeof(cwd)) == NULL)
		return NULL;
	if (asprintf(&s, "%s/%.*s", cwd, (int)len, path) == -1)
		return NULL;
	return s;
}

/*
 * A listen line: the address, then for HTTPS the word "tls" and
 * key=value words (cert, key, client-ca, client-cert).  On failure *why
 * says what is wrong and l holds nothing to free.
 */
static int
parse_listen(const char *s, struct config_listen *l, const char **why)
{
	char addr[sizeof(l->text) + 1];
	const char *w, *eq;
	char **slot;
	size_t n;

	n = strcspn(s, " \t");
	if (n >= sizeof(addr)) {
		*why = "too long";
		return -1;
	}
	memcpy(addr, s, n);
	addr[n] = '\0';
	if (parse_address(addr, l, why) == -1)
		return -1;
	for (w = s + n; *w != '\0'; w += n) {
		w += strspn(w, " \t");
		if ((n = strcspn(w, " \t")) == 0)
			break;
		if (n == 3 && strncmp(w, "tls", 3) == 0) {
			l->tls = 1;
			continue;
		}
		if ((eq = memchr(w, '=', n)) == NULL || eq + 1 == w + n) {
			*why =
			    "expected tls, cert=FILE, key=FILE, "
			    "client-ca=FILE or client-cert=required|optional";
			goto fail;
		}
		slot = NULL;
		if ((size_t)(eq - w) == 4 && strncmp(w, "cert", 4) == 0)
			slot = &l->cert;
		else if ((size_t)(eq - w) == 3 && strncmp(w, "key", 3) == 0)
			slot = &l->key;
		else if ((size_t)(eq - w) == 9 &&
		    strncmp(w, "client-ca", 9) == 0)
			slot = &l->client_ca;
		else if ((size_t)(eq - w) == 11 &&
		    strncmp(w, "client-cert", 11) == 0) {
			if (strncmp(eq + 1, "optional", 8) == 0 &&
			    w + n == eq + 9)
				l->client_cert_optional = 1;
			else if (!(strncmp(eq + 1, "required", 8) == 0 &&
				     w + n == eq + 9)) {
				*why = "client-cert is required or optional";
				goto fail;
			}
			continue;
		}
		if (slot == NULL) {
			*why = "unknown listen option; expected cert, key, "
			       "client-ca or client-cert";
			goto fail;
		}
		free(*slot);
		if ((*slot = absolute_copy(eq + 1, (size_t)(w + n - eq - 1))) ==
		    NULL) {
			*why = "out of memory";
			goto fail;
		}
	}
	if (!l->tls &&
	    (l->cert != NULL || l->key != NULL || l->client_ca != NULL ||
		l->client_cert_optional)) {
		*why = "cert, key and client-ca need the word tls";
		goto fail;
	}
	if (l->tls && (l->cert == NULL || l->key == NULL)) {
		*why = "tls needs cert=FILE and key=FILE";
		goto fail;
	}
	return 0;
fail:
	listen_clear(l);
	return -1;
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
strlist_clear(struct config_strlist *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* Append s to l, taking ownership of it (freed on failure). */
static int
strlist_add(struct config_strlist *l, char *s)
{
	char **v;

	if ((v = realloc(l->v, (l->n + 1) * sizeof(*v))) == NULL) {
		free(s);
		return -1;
	}
	v[l->n++] = s;
	l->v = v;
	return 0;
}

static int
is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/*
 * An upstream base URL: http:// or https://, a host, no blanks or control
 * characters, no query or fragment (the protocol paths are appended to
 * it).  Trailing '/'s are dropped so that the same server is always
 * spelled the same, in the cache's records and in purge --upstream.
 */
static char *
parse_url(const char *s, size_t len, const char **why)
{
	const char *host;
	size_t i;

	if (len > 7 && strncmp(s, "http://", 7) == 0)
		host = s + 7;
	else if (len > 8 && strncmp(s, "https://", 8) == 0)
		host = s + 8;
	else {
		*why = "expected an http:// or https:// URL";
		return NULL;
	}
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= 0x20 || c == 0x7f || c == '?' || c == '#') {
			*why = "URL with a blank, control character, "
			       "query or fragment";
			return NULL;
		}
	}
	while (len > (size_t)(host - s) && s[len - 1] == '/')
		len--;
	if (len == (size_t)(host - s) || *host == '/') {
		*why = "URL without a host";
		return NULL;
	}
	if (len > 1024) {
		*why = "URL longer than 1024 bytes";
		return NULL;
	}
	return strndup(s, len);
}

void
config_url_public(const char *url, char *out, size_t outlen)
{
	const char *auth = strstr(url, "://"), *at, *end;
	size_t n;

	auth = auth != NULL ? auth + 3 : url;
	end = auth + strcspn(auth, "/?#");
	/* The last '@' of the authority ends the userinfo. */
	at = NULL;
	for (const char *q = auth; q < end; q++)
		if (*q == '@')
			at = q;
	if (at == NULL)
		snprintf(out, outlen, "%s", url);
	else
		snprintf(out, outlen, "%.*s%s", (int)(auth - url), url, at + 1);
	n = strlen(out);
	while (n > 0 && out[n - 1] == '/')
		out[--n] = '\0';
}

static void
upstream_clear(struct config_upstream *u)
{
	free(u->url);
	free(u->name);
	strlist_clear(&u->headers);
}

static void
upstreams_clear(struct config *cfg)
{
	size_t i;

	for (i = 0; i < cfg->nupstreams; i++)
		upstream_clear(&cfg->upstreams[i]);
	free(cfg->upstreams);
	cfg->upstreams = NULL;
	cfg->nupstreams = 0;
}

/* The settings an "upstream" line may give after its URL. */
static int
upstream_setting(struct config_upstream *u, const char *key, size_t klen,
    const char *val, const char **why)
{
	static const struct {
		const char *key;
		size_t off;
	} nums[] = {
		{ "connect-timeout",
		    offsetof(struct config_upstream, connect_timeout) },
		{ "first-byte-timeout",
		    offsetof(struct config_upstream, first_byte_timeout) },
		{ "negative-ttl",
		    offsetof(struct config_upstream, negative_ttl) },
		{ "error-ttl", offsetof(struct config_upstream, error_ttl) },
	};
	uint64_t n;
	size_t i;

	if (klen == 8 && strncmp(key, "min-rate", 8) == 0) {
		if (parse_number(val, no_suffixes, 0, &n, why) == -1 ||
		    n == 0 || n > 1U << 30) {
			*why = "min-rate= expects bytes per second, 1 to 2^30";
			return -1;
		}
		u->min_rate = (unsigned)n;
		return 0;
	}

	if (klen == 7 && strncmp(key, "enabled", 7) == 0) {
		if (parse_bool(val, &u->enabled) == -1) {
			*why = "enabled= expects on or off";
			return -1;
		}
		return 0;
	}
	for (i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		if (strlen(nums[i].key) != klen ||
		    strncmp(nums[i].key, key, klen) != 0)
			continue;
		if (parse_number(val, duration_suffixes, 0, &n, why) == -1 ||
		    n > 365 * DAY) {
			*why = "a duration from 0 to 365d expected after '='";
			return -1;
		}
		*(unsigned *)(void *)((char *)u + nums[i].off) = (unsigned)n;
		return 0;
	}
	*why = "unknown setting; expected enabled, connect-timeout, "
	       "first-byte-timeout, min-rate, negative-ttl or error-ttl";
	return -1;
}

/* "URL [key=value ...]", blank-separated. */
static int
parse_upstream(const char *s, struct config_upstream *u, const char **why)
{
	const char *p, *end, *eq;
	char val[64];

	memset(u, 0, sizeof(*u));
	u->enabled = 1;
	u->connect_timeout = u->first_byte_timeout = u->min_rate = UNSET;
	u->negative_ttl = u->error_ttl = UNSET;
	for (p = s; *p != '\0' && !is_blank(*p); p++)
		continue;
	if ((u->url = parse_url(s, (size_t)(p - s), why)) == NULL)
		return -1;
	if ((u->name = strdup(u->url)) == NULL) {
		*why = "out of memory";
		upstream_clear(u);
		return -1;
	}
	config_url_public(u->url, u->name, strlen(u->name) + 1);
	for (;;) {
		while (is_blank(*p))
			p++;
		if (*p == '\0')
			return 0;
		for (end = p; *end != '\0' && !is_blank(*end); end++)
			continue;
		eq = memchr(p, '=', (size_t)(end - p));
		if (eq == NULL || eq == p || (size_t)(end - eq) > sizeof(val)) {
			*why = "expected key=value after the URL";
			break;
		}
		memcpy(val, eq + 1, (size_t)(end - eq - 1));
		val[end - eq - 1] = '\0';
		if (upstream_setting(u, p, (size_t)(eq - p), val, why) == -1)
			break;
		p = end;
	}
	upstream_clear(u);
	return -1;
}

/* The keyring apt uses for Debian's archives when none is named. */
#define DEFAULT_DEB_KEYRING "/usr/share/keyrings/debian-archive-keyring.gpg"

/* Split v at ',' into words (pointing into v): their count, or -1. */
static int
repo_list(char *v, char **out, size_t *n)
{
	char *w, *save;

	for (w = strtok_r(v, ",", &save); w != NULL;
	     w = strtok_r(NULL, ",", &save)) {
		if (*n == CONFIG_REPO_WORDS)
			return -1;
		out[(*n)++] = w;
	}
	return *n > 0 ? 0 : -1;
}

/* A word of a repo line: no '/' games, nothing a URL path cannot hold. */
static int
repo_word_ok(const char *w)
{
	if (w[0] == '\0' || strcmp(w, ".") == 0 || strstr(w, "..") != NULL)
		return 0;
	for (; *w != '\0'; w++)
		if (!isalnum((unsigned char)*w) && strchr("-_.+~/", *w) == NULL)
			return 0;
	return 1;
}

int
config_repo_parse(const char *line, struct config_repo *r, const char **why)
{
	char *w, *save, *p;
	size_t len;
	int nwords = 0;

	memset(r, 0, sizeof(*r));
	if (strlen(line) >= sizeof(r->text)) {
		*why = "too long";
		return -1;
	}
	strcpy(r->text, line);
	for (w = strtok_r(r->text, " \t", &save); w != NULL;
	     w = strtok_r(NULL, " \t", &save), nwords++) {
		if (nwords == 0) {
			if (strcmp(w, "deb") == 0)
				r->type = CONFIG_REPO_DEB;
			else if (strcmp(w, "rpm") == 0)
				r->type = CONFIG_REPO_RPM;
			else if (strcmp(w, "arch") == 0)
				r->type = CONFIG_REPO_ARCH;
			else {
				*why = "expected deb, rpm or arch first";
				return -1;
			}
			continue;
		}
		if (nwords == 1) {
			if (strncmp(w, "http://", 7) != 0 &&
			    strncmp(w, "https://", 8) != 0) {
				*why = "the URL must be http:// or https://";
				return -1;
			}
			len = strlen(w);
			while (len > 0 && w[len - 1] == '/')
				len--;
			if (len >= sizeof(r->url)) {
				*why = "URL too long";
				return -1;
			}
			memcpy(r->url, w, len);
			r->url[len] = '\0';
			continue;
		}
		if ((p = strchr(w, '=')) != NULL) {
			*p++ = '\0';
			if (strcmp(w, "arch") == 0 &&
			    r->type == CONFIG_REPO_DEB) {
				if (repo_list(p, r->archs, &r->narchs) == -1) {
					*why = "arch= needs 1 to 16 names";
					return -1;
				}
			} else if ((strcmp(w, "signed-by") == 0 &&
				       r->type == CONFIG_REPO_DEB) ||
			    (strcmp(w, "gpgkey") == 0 &&
				r->type == CONFIG_REPO_RPM) ||
			    (strcmp(w, "key") == 0 &&
				r->type == CONFIG_REPO_ARCH)) {
				if (p[0] != '/' ||
				    strlen(p) >= sizeof(r->keyring)) {
					*why = "the key file must be an "
					       "absolute path";
					return -1;
				}
				strcpy(r->keyring, p);
			} else {
				*why = "unknown setting for this kind of "
				       "repository";
				return -1;
			}
			continue;
		}
		if (!repo_word_ok(w)) {
			*why = "a suite, component or name with odd characters";
			return -1;
		}
		if (r->suite[0] == '\0' && r->type != CONFIG_REPO_RPM) {
			if (strlen(w) >= sizeof(r->suite)) {
				*why = "suite too long";
				return -1;
			}
			strcpy(r->suite, w);
		} else if (r->type == CONFIG_REPO_DEB &&
		    r->ncomponents < CONFIG_REPO_WORDS) {
			r->components[r->ncomponents++] = w;
		} else {
			*why = "too many words";
			return -1;
		}
	}
	if (r->url[0] == '\0' ||
	    (r->type == CONFIG_REPO_DEB &&
		(r->suite[0] == '\0' || r->ncomponents == 0)) ||
	    (r->type == CONFIG_REPO_ARCH && r->suite[0] == '\0')) {
		*why = r->type == CONFIG_REPO_DEB
		    ? "expected deb URL SUITE COMPONENT..."
		    : r->type == CONFIG_REPO_ARCH ? "expected arch URL NAME"
						  : "expected rpm URL";
		return -1;
	}
	if (r->type == CONFIG_REPO_DEB && r->keyring[0] == '\0')
		strcpy(r->keyring, DEFAULT_DEB_KEYRING);
	if (r->type == CONFIG_REPO_DEB && r->narchs == 0) {
		static char amd64[] = "amd64";

		r->archs[r->narchs++] = amd64;
	}
	config_url_public(r->url, r->name, sizeof(r->name) - 260);
	if (r->suite[0] != '\0') {
		len = strlen(r->name);
		snprintf(r->name + len, sizeof(r->name) - len, " %s", r->suite);
	}
	return 0;
}

/*
 * "URL|* Name: value": the URL of a listed upstream, or '*' for all; a
 * header name of token characters; a value without control characters,
 * so that no line can be split into two headers.
 */
static int
check_header(const char *s, const char **why)
{
	const char *p, *name;

	for (p = s; *p != '\0' && !is_blank(*p); p++)
		continue;
	while (is_blank(*p))
		p++;
	for (name = p; *p != '\0' && *p != ':'; p++) {
		if (strchr("!#$%&'*+-.^_`|~", *p) == NULL &&
		    !((*p >= '0' && *p <= '9') ||
			((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z'))) {
			*why = "expected \"URL|* Name: value\" with a header "
			       "name of letters, digits and -";
			return -1;
		}
	}
	if (*p != ':' || p == name) {
		*why = "expected \"URL|* Name: value\"";
		return -1;
	}
	for (; *p != '\0'; p++) {
		if ((unsigned char)*p < 0x20 && *p != '\t') {
			*why = "control character in the header value";
			return -1;
		}
	}
	return 0;
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
	const struct suffix *tab;
	const char *why = NULL, *expect;
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
		tab = number_syntax(op->type, &expect);
		if (parse_number(value, tab, op->type == T_SIZE, &n, &why) ==
		    -1) {
			if (why == NULL)
				why = expect;
			goto bad;
		}
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
		if (parse_bool(value, (int *)p) == -1) {
			why = "expected on/off, yes/no, true/false or 1/0";
			goto bad;
		}
		break;
	case T_LOGLEVEL:
		if (parse_word(value, loglevel_words, 3, (int *)p) == -1) {
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
			strlist_clear(p);
		if (strcmp(value, "none") == 0)
			break;
		if ((s = strdup(value)) == NULL || strlist_add(p, s) == -1)
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
		if (parse_word(value, admin_words, 3, (int *)p) == -1) {
			why = "expected none, loopback or any";
			goto bad;
		}
		break;
	case T_REDIRECTS:
		if (parse_word(value, redirect_words, 3, (int *)p) == -1) {
			why = "expected none, same-host or any";
			goto bad;
		}
		break;
	case T_REPO: {
		struct config_repo r;

		if (fresh || strcmp(value, "none") == 0)
			strlist_clear(p);
		if (strcmp(value, "none") == 0)
			break;
		if (config_repo_parse(value, &r, &why) == -1)
			goto bad;
		if ((s = strdup(value)) == NULL || strlist_add(p, s) == -1)
			goto nomem;
		break;
	}
	case T_HEADER:
		if (fresh || strcmp(value, "none") == 0)
			strlist_clear(p);
		if (strcmp(value, "none") == 0)
			break;
		if (check_header(value, &why) == -1)
			goto bad;
		if ((s = strdup(value)) == NULL || strlist_add(p, s) == -1)
			goto nomem;
		break;
	case T_UPSTREAM: {
		struct config_upstream u, *v;
		size_t i;

		if (fresh || strcmp(value, "none") == 0)
			upstreams_clear(cfg);
		if (strcmp(value, "none") == 0)
			break;
		if (parse_upstream(value, &u, &why) == -1)
			goto bad;
		for (i = 0; i < cfg->nupstreams; i++)
			if (strcmp(cfg->upstreams[i].url, u.url) == 0)
				break;
		if (i < cfg->nupstreams ||
		    cfg->nupstreams >= CONFIG_UPSTREAMS_MAX) {
			diag_add(diag, "%s: %s: %s", where, op->name,
			    i < cfg->nupstreams ? "this URL is already listed"
						: "more than 32 upstreams");
			upstream_clear(&u);
			return -1;
		}
		v = realloc(cfg->upstreams, (cfg->nupstreams + 1) * sizeof(*v));
		if (v == NULL) {
			upstream_clear(&u);
			goto nomem;
		}
		v[cfg->nupstreams++] = u;
		cfg->upstreams = v;
		break;
	}
	case T_STORE: {
		struct config_store st, *v;

		config_store_free(cfg->store);
		free(cfg->store);
		cfg->store = NULL;
		if (strcmp(value, "none") == 0)
			break;
		if (config_store_parse(value, &st, &why) == -1)
			goto bad;
		if ((v = malloc(sizeof(*v))) == NULL) {
			config_store_free(&st);
			goto nomem;
		}
		*v = st;
		cfg->store = v;
		break;
	}
	case T_LISTEN: {
		struct config_listen l, *v;

		if (parse_listen(value, &l, &why) == -1)
			goto bad;
		if (fresh)
			listens_clear(cfg);
		if (cfg->nlisten >= LISTEN_MAX) {
			diag_add(diag, "%s: %s: more than %d addresses", where,
			    op->name, LISTEN_MAX);
			listen_clear(&l);
			return -1;
		}
		v = realloc(cfg->listen, (cfg->nlisten + 1) * sizeof(*v));
		if (v == NULL) {
			listen_clear(&l);
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
	strlist_clear(&cfg->scan_dirs);
	strlist_clear(&cfg->scan_packages);
	upstreams_clear(cfg);
	strlist_clear(&cfg->upstream_headers);
	strlist_clear(&cfg->repos);
	free(cfg->ca_file);
	free(cfg->proxy);
	free(cfg->user_agent);
	free(cfg->admin_token_file);
	config_store_free(cfg->store);
	free(cfg->store);
	free(cfg->token_file);
	strlist_clear(&cfg->access);
	strlist_clear(&cfg->trusted_proxies);
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

	while (is_blank(*p))
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
		for (p++; is_blank(*p); p++)
			continue;
		if (*p != '\0' && !(*p == '#' && is_blank(p[-1]))) {
			*why = "text after the closing '\"'";
			return NULL;
		}
		*out = '\0';
		return v;
	}
	for (v = p; *p != '\0'; p++)
		if (*p == '#' && is_blank(p[-1]))
			break;
	for (end = p; end > v && is_blank(end[-1]); end--)
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
		for (p = line; is_blank(*p); p++)
			continue;
		if (*p == '\0' || *p == '#')
			continue;
		for (eq = p; *eq != '\0' && *eq != '='; eq++)
			if (*eq == '#' && is_blank(eq[-1]))
				break;
		if (*eq != '=') {
			diag_add(diag, "%s: expected name = value", where);
			rc = -1;
			continue;
		}
		for (end = eq; end > p && is_blank(end[-1]); end--)
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
			    parse_bool(argv[i + 1], &dummy) == 0)
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

		for (len = 0; h[len] != '\0' && !is_blank(h[len]); len++)
			continue;
		for (line = h + len; is_blank(*line); line++)
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
			    strlist_add(&u->headers, s) == -1) {
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

		if (config_store_credentials(cfg->store, cwd, err,
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
