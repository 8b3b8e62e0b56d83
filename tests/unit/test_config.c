/*
 * tests/unit/test_config.c: the option schema, the config file and
 * command-line parsers, the layers and the defaults of conf/config.c.
 *
 * Uses only the public interface.  Temporary files live in a mkdtemp
 * directory under /tmp and are removed at the end.  The example config and
 * the man page are found under $top_srcdir (default ".").
 */
#include "conf/config.h"
#include "conf/help.h"
#include "conf/objstore.h"

#include <sys/stat.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/tap.h"

static char tmpdir[64];
static char *tmpfiles[64];
static size_t ntmpfiles;

/* Write text to tmpdir/name; the path is freed by cleanup(). */
static const char *
write_file(const char *name, const char *text, size_t len)
{
	char *path;
	size_t i;
	FILE *fp;

	if (asprintf(&path, "%s/%s", tmpdir, name) < 0)
		abort();
	if ((fp = fopen(path, "w")) == NULL ||
	    fwrite(text, 1, len, fp) != len || fclose(fp) != 0) {
		fprintf(stderr, "%s: %s: %s\n", __func__, path,
		    strerror(errno));
		abort();
	}
	for (i = 0; i < ntmpfiles; i++) {
		if (strcmp(tmpfiles[i], path) == 0) {
			free(path);
			return tmpfiles[i];
		}
	}
	if (ntmpfiles == sizeof(tmpfiles) / sizeof(tmpfiles[0]))
		abort();
	tmpfiles[ntmpfiles++] = path;
	return path;
}

static const char *
write_text(const char *name, const char *text)
{
	return write_file(name, text, strlen(text));
}

static void
cleanup(void)
{
	size_t i;

	for (i = 0; i < ntmpfiles; i++) {
		unlink(tmpfiles[i]);
		free(tmpfiles[i]);
	}
	rmdir(tmpdir);
}

/* Read a whole file, NUL-terminated; NULL if it cannot be read. */
static char *
slurp(const char *path)
{
	char *buf = NULL;
	size_t len = 0, cap = 0, got;
	FILE *fp;

	if ((fp = fopen(path, "r")) == NULL)
		return NULL;
	do {
		if (len + 4096 + 1 > cap) {
			cap = cap * 2 + 4096 + 1;
			if ((buf = realloc(buf, cap)) == NULL)
				abort();
		}
		got = fread(buf + len, 1, 4096, fp);
		len += got;
	} while (got > 0);
	fclose(fp);
	buf[len] = '\0';
	return buf;
}

/* Index of the first message containing s, or -1. */
static int
find_msg(const struct config_diag *diag, const char *s)
{
	size_t i;

	for (i = 0; i < diag->n; i++)
		if (strstr(diag->msgs[i], s) != NULL)
			return (int)i;
	return -1;
}

static const char *
msg(const struct config_diag *diag, size_t i)
{
	return i < diag->n ? diag->msgs[i] : NULL;
}

static int
port_of(const struct config_listen *l)
{
	if (l->addr.ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)&l->addr)->sin_port);
	return ntohs(((const struct sockaddr_in6 *)&l->addr)->sin6_port);
}

static int
is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Parse argv (NULL-terminated) into args; returns the result. */
static int
parse(struct config_args *args, struct config_diag *diag, char **argv)
{
	int argc = 0;

	while (argv[argc] != NULL)
		argc++;
	return config_parse_args(args, argc, argv, diag);
}

/* config_set on a fresh config; returns its result, diag keeps errors. */
static int
set1(struct config *cfg, struct config_diag *diag, const char *name,
    const char *value)
{
	config_free(cfg);
	config_diag_free(diag);
	if (config_init(cfg) == -1)
		abort();
	return config_set(cfg, name, value, "test", diag);
}

/* "ADDR:PORT tls cert= key= ..." and what is refused. */
static void
test_listen_tls(void)
{
	static const struct {
		const char *text, *why;
	} bad[] = {
		{ "127.0.0.1:1 tls cert=/c", "tls needs cert=FILE and key" },
		{ "127.0.0.1:1 cert=/c key=/k", "need the word tls" },
		{ "127.0.0.1:1 tls cert=/c key=/k color=red",
		    "unknown listen option" },
		{ "127.0.0.1:1 tls cert=/c key=/k client-cert=maybe",
		    "required or optional" },
		{ "127.0.0.1:1 tls cert= key=/k", "expected tls, cert=FILE" },
		{ "127.0.0.1:1 tls banana", "expected tls, cert=FILE" },
	};
	struct config cfg;
	struct config_diag diag = { 0 };
	const struct config_listen *l;
	size_t i;

	config_init(&cfg);
	is_int(set1(&cfg, &diag, "listen",
		   "[::1]:8443  tls cert=/etc/c.pem key=k.pem "
		   "client-ca=/etc/ca.pem client-cert=optional"),
	    0, "a TLS listen line is accepted");
	if (cfg.nlisten == 3) {
		l = &cfg.listen[2];
		is_str(l->text, "[::1]:8443", "its text is the address");
		ok(l->tls, "it is TLS");
		is_str(l->cert, "/etc/c.pem", "cert");
		ok(l->key != NULL && l->key[0] == '/' &&
			strcmp(l->key + strlen(l->key) - 6, "/k.pem") == 0,
		    "a relative key is made absolute");
		is_str(l->client_ca, "/etc/ca.pem", "client-ca");
		ok(l->client_cert_optional, "client-cert=optional");
	}
	is_int(set1(&cfg, &diag, "listen", "127.0.0.1:1"), 0, "plain");
	ok(cfg.nlisten == 3 && !cfg.listen[2].tls && cfg.listen[2].cert == NULL,
	    "a plain listen line is not TLS");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ok(set1(&cfg, &diag, "listen", bad[i].text) == -1 &&
			find_msg(&diag, bad[i].why) == 0 && cfg.nlisten == 2,
		    bad[i].text);
	config_free(&cfg);
	config_diag_free(&diag);
}

static void
test_defaults(void)
{
	struct config cfg;
	struct config_args args;
	struct config_diag diag = { 0 };
	char *argv[] = { "dbgmirrord", "--no-config", NULL };
	char *cache = config_default_cache_dir();
	const struct sockaddr_in *sin;
	const struct sockaddr_in6 *sin6;

	is_int(config_init(&cfg), 0, "config_init succeeds");
	is_int(parse(&args, &diag, argv), 0, "--no-config parses");
	is_int(args.no_config, 1, "--no-config is seen");
	is_int(config_load(&cfg, &args, &diag), 0, "defaults load");
	is_int(diag.n, 0, "defaults give no message");
	ok(cfg.config_file == NULL, "no config file read with --no-config");
	is_int(cfg.threads, 0, "default threads 0");
	is_int(cfg.workers, 0, "default workers 0");
	is_int(cfg.rescan_interval, 300, "default rescan-interval 300");
	ok(cfg.index_map_size == 64ULL << 30, "default index-map-size 64G");
	is_int(cfg.max_header_size, 8192, "default max-header-size 8192");
	is_int(cfg.max_connections, 4096, "default max-connections 4096");
	is_int(cfg.header_timeout, 10, "default header-timeout 10");
	is_int(cfg.keepalive_timeout, 60, "default keepalive-timeout 60");
	is_int(cfg.send_timeout, 60, "default send-timeout 60");
	is_int(cfg.shutdown_timeout, 10, "default shutdown-timeout 10");
	is_int(cfg.access_log, 1, "default access-log on");
	is_int(cfg.log_level, CONFIG_LOG_INFO, "default log-level info");
	ok(cache != NULL, "a default cache directory exists");
	is_str(cfg.cache_dir, cache, "default cache-dir");
	if (is_dir("/usr/lib/debug")) {
		is_int(cfg.scan_dirs.n, 1, "default scan-dir present");
		is_str(cfg.scan_dirs.n > 0 ? cfg.scan_dirs.v[0] : NULL,
		    "/usr/lib/debug", "default scan-dir /usr/lib/debug");
	} else {
		is_int(cfg.scan_dirs.n, 0, "no default scan-dir without it");
	}

	is_int(cfg.nlisten, 2, "two default listen addresses");
	if (cfg.nlisten == 2) {
		sin = (const struct sockaddr_in *)&cfg.listen[0].addr;
		sin6 = (const struct sockaddr_in6 *)&cfg.listen[1].addr;
		is_str(cfg.listen[0].text, "127.0.0.1:8002", "listen 0 text");
		is_int(sin->sin_family, AF_INET, "listen 0 is IPv4");
		is_int(ntohs(sin->sin_port), 8002, "listen 0 port 8002");
		is_int(ntohl(sin->sin_addr.s_addr), 0x7f000001,
		    "listen 0 is 127.0.0.1");
		is_int(cfg.listen[0].addrlen, sizeof(struct sockaddr_in),
		    "listen 0 addrlen");
		is_str(cfg.listen[1].text, "[::1]:8002", "listen 1 text");
		is_int(sin6->sin6_family, AF_INET6, "listen 1 is IPv6");
		is_int(ntohs(sin6->sin6_port), 8002, "listen 1 port 8002");
		ok(IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr), "listen 1 is ::1");
		is_int(cfg.listen[1].addrlen, sizeof(struct sockaddr_in6),
		    "listen 1 addrlen");
	}
	free(cache);
	config_args_free(&args);
	config_diag_free(&diag);
	config_free(&cfg);
}

static void
test_numbers(void)
{
	struct config cfg;
	struct config_diag diag = { 0 };

	config_init(&cfg);

	is_int(set1(&cfg, &diag, "threads", "8"), 0, "threads 8");
	is_int(cfg.threads, 8, "threads is 8");
	is_int(set1(&cfg, &diag, "threads", "256"), 0, "threads 256 (max)");
	is_int(set1(&cfg, &diag, "threads", "0007"), 0, "leading zeros");
	is_int(cfg.threads, 7, "0007 is 7");
	is_int(set1(&cfg, &diag, "threads", "257"), -1, "threads 257 refused");
	is_str(msg(&diag, 0), "test: threads: \"257\": must be from 0 to 256",
	    "range message names where, option and value");
	is_int(cfg.threads, 0, "a refused value is not stored");
	is_int(set1(&cfg, &diag, "threads", "18446744073709551616"), -1,
	    "2^64 overflows");
	ok(find_msg(&diag, "too large") == 0, "overflow says too large");
	is_int(set1(&cfg, &diag, "workers", "99999999999999999999999"), -1,
	    "huge number overflows");
	is_int(set1(&cfg, &diag, "threads", "-1"), -1, "negative refused");
	ok(find_msg(&diag, "negative") == 0, "negative says so");
	is_int(set1(&cfg, &diag, "threads", "+1"), -1, "sign refused");
	is_int(set1(&cfg, &diag, "threads", "0x10"), -1, "hex refused");
	ok(find_msg(&diag, "expected a decimal number") == 0,
	    "hex says decimal expected");
	is_int(set1(&cfg, &diag, "threads", "1 2"), -1, "inner blank refused");
	is_int(set1(&cfg, &diag, "threads", "4K"), -1,
	    "unsigned takes no suffix");
	is_int(set1(&cfg, &diag, "threads", ""), -1, "empty refused");
	is_str(msg(&diag, 0), "test: threads: empty value", "empty message");
	is_int(set1(&cfg, &diag, "max-connections", "0"), -1,
	    "max-connections 0 refused (min 1)");
	is_int(set1(&cfg, &diag, "max-connections", "1000000"), 0,
	    "max-connections 1000000");
	is_int(cfg.max_connections, 1000000, "max-connections stored");
	is_int(set1(&cfg, &diag, "max-connections", "1000001"), -1,
	    "max-connections 1000001 refused");

	/* Sizes. */
	is_int(set1(&cfg, &diag, "index-map-size", "1M"), 0, "size 1M");
	ok(cfg.index_map_size == 1ULL << 20, "1M is 1048576");
	is_int(set1(&cfg, &diag, "index-map-size", "2g"), 0, "size 2g");
	ok(cfg.index_map_size == 2ULL << 30, "2g is 2 GiB (case-insensitive)");
	is_int(set1(&cfg, &diag, "index-map-size", "1T"), 0, "size 1T (max)");
	ok(cfg.index_map_size == 1ULL << 40, "1T is 2^40");
	is_int(set1(&cfg, &diag, "index-map-size", "3145728"), 0,
	    "size in plain bytes");
	ok(cfg.index_map_size == 3145728, "plain bytes stored");
	is_int(set1(&cfg, &diag, "index-map-size", "2T"), -1, "2T refused");
	is_int(set1(&cfg, &diag, "index-map-size", "1023K"), -1,
	    "below 1M refused");
	is_int(set1(&cfg, &diag, "cache-size", "10GB"), 0, "size 10GB");
	ok(cfg.cache_size == 10000000000ULL, "10GB is 10^10 bytes (SI)");
	is_int(set1(&cfg, &diag, "cache-size", "10GiB"), 0, "size 10GiB");
	ok(cfg.cache_size == 10ULL << 30, "10GiB is 10 x 2^30");
	is_int(set1(&cfg, &diag, "cache-size", "10G"), 0, "size 10G");
	ok(cfg.cache_size == 10ULL << 30, "10G is 10 x 2^30, as 10GiB");
	is_int(set1(&cfg, &diag, "cache-size", "500mb"), 0, "size 500mb");
	ok(cfg.cache_size == 500000000ULL, "500mb is 5 x 10^8 (any case)");
	is_int(set1(&cfg, &diag, "index-map-size", "1TB"), 0, "size 1TB");
	ok(cfg.index_map_size == 1000000000000ULL, "1TB is 10^12");
	is_int(set1(&cfg, &diag, "index-map-size", "12KX"), -1,
	    "an unknown suffix refused");
	ok(find_msg(&diag,
	       "suffix K, M, G or T (also KiB... powers of 1024; "
	       "KB... of 1000)") == 0,
	    "size syntax named");
	is_int(set1(&cfg, &diag, "index-map-size", "12GBB"), -1,
	    "a suffix with more after it refused");
	is_int(set1(&cfg, &diag, "index-map-size", "K"), -1, "bare suffix");
	is_int(set1(&cfg, &diag, "index-map-size", "17179869184G"), -1,
	    "2^64 after scaling overflows");
	ok(find_msg(&diag, "too large") == 0, "scaled overflow says too large");
	is_int(set1(&cfg, &diag, "max-header-size", "1k"), 0, "1k header");
	is_int(cfg.max_header_size, 1024, "1k is 1024");
	is_int(set1(&cfg, &diag, "max-header-size", "64K"), 0, "64K header");
	is_int(cfg.max_header_size, 65536, "64K is 65536");
	is_int(set1(&cfg, &diag, "max-header-size", "65537"), -1,
	    "header size above 64K refused");
	is_int(set1(&cfg, &diag, "max-header-size", "1023"), -1,
	    "header size below 1024 refused");

	/* Durations. */
	is_int(set1(&cfg, &diag, "rescan-interval", "45s"), 0, "45s");
	is_int(cfg.rescan_interval, 45, "45s is 45");
	is_int(set1(&cfg, &diag, "rescan-interval", "5m"), 0, "5m");
	is_int(cfg.rescan_interval, 300, "5m is 300");
	is_int(set1(&cfg, &diag, "rescan-interval", "2h"), 0, "2h");
	is_int(cfg.rescan_interval, 7200, "2h is 7200");
	is_int(set1(&cfg, &diag, "rescan-interval", "1d"), 0, "1d");
	is_int(cfg.rescan_interval, 86400, "1d is 86400");
	is_int(set1(&cfg, &diag, "rescan-interval", "0"), 0, "0 = never");
	is_int(cfg.rescan_interval, 0, "rescan 0 stored");
	is_int(set1(&cfg, &diag, "rescan-interval", "10x"), -1, "10x refused");
	ok(find_msg(&diag, "suffix s, m, h or d") == 0,
	    "duration syntax named");
	is_int(set1(&cfg, &diag, "rescan-interval", "1M"), -1,
	    "M is not a duration suffix");
	is_int(set1(&cfg, &diag, "rescan-interval", "1ms"), -1,
	    "two suffixes refused");
	is_int(set1(&cfg, &diag, "rescan-interval", "366d"), -1,
	    "more than a year refused");
	is_int(set1(&cfg, &diag, "rescan-interval", "999999999999999999d"), -1,
	    "duration overflow refused");
	is_int(set1(&cfg, &diag, "header-timeout", "0"), -1,
	    "header-timeout 0 refused");
	is_int(set1(&cfg, &diag, "keepalive-timeout", "0"), -1,
	    "keepalive-timeout 0 refused");
	is_int(set1(&cfg, &diag, "send-timeout", "2m"), 0, "send-timeout 2m");
	is_int(cfg.send_timeout, 120, "send-timeout 120");
	is_int(set1(&cfg, &diag, "shutdown-timeout", "1h"), 0,
	    "shutdown-timeout 1h (max)");
	is_int(cfg.shutdown_timeout, 3600, "shutdown-timeout 3600");
	is_int(set1(&cfg, &diag, "shutdown-timeout", "3601"), -1,
	    "shutdown-timeout 3601 refused");
	is_int(set1(&cfg, &diag, "shutdown-timeout", "0"), 0,
	    "shutdown-timeout 0");

	config_free(&cfg);
	config_diag_free(&diag);
}

static void
test_words(void)
{
	static const char *const yes[] = { "on", "yes", "true", "1", "ON" };
	static const char *const no[] = { "off", "no", "false", "0", "No" };
	struct config cfg;
	struct config_diag diag = { 0 };
	char what[64];
	size_t i;

	config_init(&cfg);
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		set1(&cfg, &diag, "access-log", "off");
		snprintf(what, sizeof(what), "boolean \"%s\" is on", yes[i]);
		is_int(config_set(&cfg, "access-log", yes[i], "t", &diag) ==
			    0 &&
			cfg.access_log,
		    1, what);
		snprintf(what, sizeof(what), "boolean \"%s\" is off", no[i]);
		is_int(config_set(&cfg, "access-log", no[i], "t", &diag) == 0 &&
			cfg.access_log == 0,
		    1, what);
	}
	is_int(set1(&cfg, &diag, "access-log", "maybe"), -1, "maybe refused");
	ok(find_msg(&diag, "on/off") == 0, "boolean message lists words");
	ok(find_msg(&diag, "or a file") == 0,
	    "... and says a file may be given");
	is_int(cfg.access_log, 1, "refused boolean keeps the old value");
	is_int(set1(&cfg, &diag, "access-log", "/var/log/dbgmirror/a.log"), 0,
	    "access-log FILE");
	ok(cfg.access_log == 1 && cfg.access_log_file != NULL &&
		strcmp(cfg.access_log_file, "/var/log/dbgmirror/a.log") == 0,
	    "... is on, to that file");
	is_int(set1(&cfg, &diag, "access-log", "off"), 0, "access-log off");
	ok(cfg.access_log == 0 && cfg.access_log_file == NULL,
	    "... forgets the file");

	is_int(set1(&cfg, &diag, "log-level", "warn"), 0, "log-level warn");
	is_int(cfg.log_level, CONFIG_LOG_WARN, "warn stored");
	is_int(set1(&cfg, &diag, "log-level", "debug"), 0, "log-level debug");
	is_int(cfg.log_level, CONFIG_LOG_DEBUG, "debug stored");
	is_int(set1(&cfg, &diag, "log-level", "info"), 0, "log-level info");
	is_int(cfg.log_level, CONFIG_LOG_INFO, "info stored");
	is_int(set1(&cfg, &diag, "log-level", "verbose"), -1,
	    "log-level verbose refused");
	ok(find_msg(&diag, "warn, info or debug") == 0, "levels listed");

	is_int(set1(&cfg, &diag, "cache-dir", "/c"), 0, "cache-dir set");
	is_str(cfg.cache_dir, "/c", "cache-dir stored");
	is_int(config_set(&cfg, "cache-dir", "/d", "t", &diag), 0,
	    "cache-dir set again");
	is_str(cfg.cache_dir, "/d", "path replaced");
	is_int(set1(&cfg, &diag, "cache-dir", ""), -1, "empty path refused");

	is_int(set1(&cfg, &diag, "scan-dir", "/a"), 0, "scan-dir /a");
	is_int(config_set(&cfg, "scan-dir", "/b", "t", &diag), 0,
	    "scan-dir /b");
	is_int(cfg.scan_dirs.n, 2, "config_set appends to a repeatable");
	is_str(cfg.scan_dirs.n == 2 ? cfg.scan_dirs.v[1] : NULL, "/b",
	    "appended in order");
	is_int(config_set(&cfg, "scan-dir", "none", "t", &diag), 0,
	    "scan-dir none");
	is_int(cfg.scan_dirs.n, 0, "none empties the list");

	is_int(set1(&cfg, &diag, "no-such-option", "1"), -1,
	    "unknown option refused");
	is_str(msg(&diag, 0), "test: no-such-option: unknown option",
	    "unknown option message");

	config_free(&cfg);
	config_diag_free(&diag);
}

static void
test_listen(void)
{
	static const struct {
		const char *text;
		const char *why; /* NULL: good */
		int family, port;
	} cases[] = {
		{ "10.1.2.3:0", NULL, AF_INET, 0 },
		{ "0.0.0.0:65535", NULL, AF_INET, 65535 },
		{ "[2001:db8::1]:443", NULL, AF_INET6, 443 },
		{ "[::]:0", NULL, AF_INET6, 0 },
		{ "[::ffff:1.2.3.4]:80", NULL, AF_INET6, 80 },
		{ "1.2.3.4:65536", "port must be", 0, 0 },
		{ "1.2.3.4:99999999999999999999", "port must be", 0, 0 },
		{ "1.2.3.4:80a", "port must be", 0, 0 },
		{ "1.2.3.4:-1", "port must be", 0, 0 },
		{ "1.2.3.4:", "missing port", 0, 0 },
		{ "localhost:8002", "numeric address required", 0, 0 },
		{ "[localhost]:8002", "numeric address required", 0, 0 },
		{ "1.2.3.256:80", "numeric address required", 0, 0 },
		{ ":80:80", "needs brackets", 0, 0 },
		{ "[1.2.3.4]:80", "numeric address required", 0, 0 },
		{ "1.2.3.4", "missing :PORT", 0, 0 },
		{ "[::1]", "missing :PORT", 0, 0 },
		{ "[::1]8002", "missing :PORT", 0, 0 },
		{ "::1:8002", "needs brackets", 0, 0 },
		{ "[::1:8002", "missing ']'", 0, 0 },
		{ "[0000:0000:0000:0000:0000:0000:0000:0000:0000:0000:0000]:1",
		    "numeric address required", 0, 0 },
		{ "[0000:0000:0000:0000:0000:0000:0000:0000:0000:0000:0000:"
		  "0000:0000:0000:0000:0000:0000]:1",
		    "too long", 0, 0 },
	};
	struct config cfg;
	struct config_diag diag = { 0 };
	char what[160];
	size_t i;
	int rc;

	config_init(&cfg);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rc = set1(&cfg, &diag, "listen", cases[i].text);
		if (cases[i].why == NULL) {
			snprintf(what, sizeof(what), "listen %s accepted",
			    cases[i].text);
			is_int(rc, 0, what);
			is_int(cfg.nlisten, 3, "config_set appends a listen");
			if (cfg.nlisten != 3)
				continue;
			is_str(cfg.listen[2].text, cases[i].text,
			    "listen text kept as written");
			is_int(cfg.listen[2].addr.ss_family, cases[i].family,
			    "listen family");
			is_int(port_of(&cfg.listen[2]), cases[i].port,
			    "listen port");
			is_int(cfg.listen[2].addrlen,
			    cases[i].family == AF_INET
				? sizeof(struct sockaddr_in)
				: sizeof(struct sockaddr_in6),
			    "listen addrlen");
		} else {
			snprintf(what, sizeof(what), "listen %s refused: %s",
			    cases[i].text, cases[i].why);
			ok(rc == -1 && find_msg(&diag, cases[i].why) == 0,
			    what);
			is_int(cfg.nlisten, 2, "refused listen not added");
		}
	}

	/* A port alone: every address, as debuginfod -p and nginx. */
	{
		static const char *const forms[] = { "8002", ":8002" };

		for (i = 0; i < 2; i++) {
			snprintf(what, sizeof(what), "listen %s accepted",
			    forms[i]);
			is_int(set1(&cfg, &diag, "listen", forms[i]), 0, what);
			is_int(cfg.nlisten, 4, "... as two addresses more");
			if (cfg.nlisten != 4)
				continue;
			is_str(cfg.listen[2].text, "0.0.0.0:8002",
			    "... every IPv4 address");
			is_str(cfg.listen[3].text, "[::]:8002",
			    "... every IPv6 address");
			is_int(port_of(&cfg.listen[3]), 8002, "... port 8002");
		}
		is_int(set1(&cfg, &diag, "listen",
			   "8443 tls cert=/c.pem key=/k.pem"),
		    0, "a port alone with tls");
		ok(cfg.nlisten == 4 && cfg.listen[2].tls && cfg.listen[3].tls &&
			strcmp(cfg.listen[3].cert, "/c.pem") == 0,
		    "... both addresses with the certificate");
	}

	/* At most 16 addresses. */
	set1(&cfg, &diag, "listen", "127.0.0.1:1");
	for (i = 0; i < 13; i++)
		config_set(&cfg, "listen", "127.0.0.1:2", "t", &diag);
	is_int(cfg.nlisten, 16, "16 listen addresses");
	is_int(diag.n, 0, "16 listen addresses are fine");
	is_int(config_set(&cfg, "listen", "127.0.0.1:3", "t", &diag), -1,
	    "a 17th listen address is refused");
	is_int(cfg.nlisten, 16, "still 16");

	config_free(&cfg);
	config_diag_free(&diag);
}

static void
test_file_syntax(void)
{
	struct config cfg;
	struct config_diag diag = { 0 };
	const char *path;
	char *line;
	int rc;

	path = write_text("syntax.conf",
	    "# leading comment\n"
	    "\n"
	    "   # indented comment\n"
	    "\t\n"
	    "threads = 4\n"
	    "workers=2   # trailing comment\n"
	    "cache-dir = \"/tmp/with space # not a comment\"  # comment\n"
	    "scan-dir = /a#b\n"
	    "scan-dir = \"/q\\\"uote\\\\d\"\n"
	    "scan-dir =  \" padded \" \n"
	    "  log-level\t=\tdebug  \n"
	    "access-log = off #\n"
	    "listen = [::]:0\n"
	    "rescan-interval = 1m\r\n"
	    "send-timeout = 5");
	config_init(&cfg);
	rc = config_load_file(&cfg, path, &diag);
	is_int(rc, 0, "syntax file loads");
	is_int(diag.n, 0, "syntax file gives no message");
	if (diag.n > 0)
		printf("# %s\n", diag.msgs[0]);
	is_int(cfg.threads, 4, "plain assignment");
	is_int(cfg.workers, 2, "no blanks, trailing comment");
	is_str(cfg.cache_dir, "/tmp/with space # not a comment",
	    "quoted value keeps blanks and #");
	is_int(cfg.scan_dirs.n, 3, "three scan-dirs");
	if (cfg.scan_dirs.n == 3) {
		is_str(cfg.scan_dirs.v[0], "/a#b", "# without blank is text");
		is_str(cfg.scan_dirs.v[1], "/q\"uote\\d", "escapes in quotes");
		is_str(cfg.scan_dirs.v[2], " padded ", "quoted blanks kept");
	}
	is_int(cfg.log_level, CONFIG_LOG_DEBUG, "tabs around =");
	is_int(cfg.access_log, 0, "empty trailing comment");
	is_int(cfg.nlisten, 1, "the file's listen replaces the default");
	is_str(cfg.nlisten > 0 ? cfg.listen[0].text : NULL, "[::]:0",
	    "the file's listen");
	is_int(cfg.rescan_interval, 60, "CRLF line end");
	is_int(cfg.send_timeout, 5, "last line without newline");
	config_free(&cfg);
	config_diag_free(&diag);

	/* Each bad form, one per file, and what it says. */
	{
		static const struct {
			const char *text, *why;
		} bad[] = {
			{ "cache-dir = \"/abc\n", "missing closing '\"'" },
			{ "cache-dir = \"/a\" b\n", "text after the closing" },
			{ "cache-dir = \"/a\"# c\n", "text after the closing" },
			{ "cache-dir = \"/a\\n\"\n", "only \\\" and \\\\" },
			{ "threads = # only a comment\n", "empty value" },
			{ "threads =\n", "empty value" },
			{ "threads = \"\"\n", "empty value" },
			{ " = 3\n", "missing name" },
			{ "threads 3\n", "expected name = value" },
			{ "threads # = 3\n", "expected name = value" },
			{ "threads =#3\n", "expected a decimal number" },
			{ "Threads = 3\n", "Threads: unknown option" },
			{ "threads = 3 3\n", "expected a decimal number" },
			{ "threads = 1\0002\n", "NUL byte" },
		};
		size_t i;
		char what[128];

		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			path = write_file("bad.conf", bad[i].text,
			    strlen(bad[i].text) +
				(strstr(bad[i].why, "NUL") != NULL ? 3 : 0));
			config_init(&cfg);
			rc = config_load_file(&cfg, path, &diag);
			snprintf(what, sizeof(what), "bad line %zu: %s", i,
			    bad[i].why);
			ok(rc == -1 && diag.n == 1 &&
				strncmp(diag.msgs[0], path, strlen(path)) ==
				    0 &&
				strstr(diag.msgs[0], ":1: ") != NULL &&
				strstr(diag.msgs[0], bad[i].why) != NULL,
			    what);
			if (diag.n > 0 &&
			    strstr(diag.msgs[0], bad[i].why) == NULL)
				printf("# got: %s\n", diag.msgs[0]);
			config_free(&cfg);
			config_diag_free(&diag);
		}
	}

	/* The longest line is fine; one byte more is not. */
	line = malloc(2 * 4096 + 64);
	if (line == NULL)
		abort();
	strcpy(line, "cache-dir = /");
	memset(line + 13, 'a', 4096 - 13);
	strcpy(line + 4096, "\nthreads = 3\n");
	path = write_text("long.conf", line);
	config_init(&cfg);
	is_int(config_load_file(&cfg, path, &diag), 0, "4096-byte line loads");
	is_int(cfg.cache_dir != NULL ? strlen(cfg.cache_dir) : 0, 4096 - 12,
	    "4096-byte line kept whole");
	is_int(cfg.threads, 3, "the next line is read");
	config_free(&cfg);
	config_diag_free(&diag);

	/* Were its tail read as a line, it would set threads = 7. */
	strcpy(line, "threads = 1\n#");
	memset(line + 13, ' ', 4200);
	strcpy(line + 13 + 4200, "threads = 7\nworkers = 9\n");
	path = write_text("toolong.conf", line);
	config_init(&cfg);
	is_int(config_load_file(&cfg, path, &diag), -1, "long line refused");
	is_int(diag.n, 1, "one message for a long line");
	ok(strstr(msg(&diag, 0) != NULL ? msg(&diag, 0) : "",
	       ":2: line longer than 4096 bytes") != NULL,
	    "long line message has its line");
	is_int(cfg.threads, 1, "the rest of a long line is skipped");
	is_int(cfg.workers, 9, "the line after a long line is read");
	config_free(&cfg);
	config_diag_free(&diag);
	free(line);
}

static void
test_file_errors(void)
{
	struct config cfg;
	struct config_diag diag = { 0 };
	const char *path;
	char *expect;
	int i;

	path = write_text("errors.conf",
	    "# three bad lines: 2, 5 and 7\n"
	    "threads = x\n"
	    "workers = 3\n"
	    "\n"
	    "bogus = 1\n"
	    "# comment\n"
	    "max-connections\n"
	    "send-timeout = 7\n");
	config_init(&cfg);
	is_int(config_load_file(&cfg, path, &diag), -1, "bad file fails");
	is_int(diag.n, 3, "three messages");
	if (asprintf(&expect, "%s:2: threads: \"x\": expected a decimal number",
		path) < 0)
		abort();
	is_str(msg(&diag, 0), expect, "first message: file:2 and why");
	free(expect);
	if (asprintf(&expect, "%s:5: bogus: unknown option", path) < 0)
		abort();
	is_str(msg(&diag, 1), expect, "second message: file:5 unknown");
	free(expect);
	if (asprintf(&expect, "%s:7: expected name = value", path) < 0)
		abort();
	is_str(msg(&diag, 2), expect, "third message: file:7 no '='");
	free(expect);
	is_int(cfg.workers, 3, "parsing continued after line 2");
	is_int(cfg.send_timeout, 7, "parsing continued after line 7");
	config_free(&cfg);
	config_diag_free(&diag);

	/* A refused value does not count as setting the option. */
	path = write_text("twice.conf",
	    "threads = x\n"
	    "listen = 127.0.0.1:1\n"
	    "listen = 127.0.0.1:2\n"
	    "threads = 1\n"
	    "threads = 2\n");
	config_init(&cfg);
	is_int(config_load_file(&cfg, path, &diag), -1, "set twice fails");
	is_int(diag.n, 2, "bad value and set twice");
	if (asprintf(&expect, "%s:5: threads: set twice; first at line 4",
		path) < 0)
		abort();
	is_str(msg(&diag, 1), expect, "set twice names the first line");
	free(expect);
	is_int(cfg.threads, 1, "the first value stays");
	is_int(cfg.nlisten, 2, "a repeatable may be set twice");
	config_free(&cfg);
	config_diag_free(&diag);

	/* Seventeen listen lines. */
	{
		char text[17 * 32] = "";

		for (i = 0; i < 17; i++)
			snprintf(text + strlen(text),
			    sizeof(text) - strlen(text),
			    "listen = 127.0.0.1:%d\n", i + 1);
		path = write_text("many.conf", text);
	}
	config_init(&cfg);
	is_int(config_load_file(&cfg, path, &diag), -1, "17 listen lines fail");
	ok(diag.n == 1 &&
		strstr(diag.msgs[0], ":17: listen: more than 16") != NULL,
	    "the 17th line is reported");
	config_free(&cfg);
	config_diag_free(&diag);

	if (asprintf(&expect, "%s/missing.conf", tmpdir) < 0)
		abort();
	config_init(&cfg);
	is_int(config_load_file(&cfg, expect, &diag), -1, "missing file fails");
	is_int(diag.n, 1, "one message for a missing file");
	{
		char *want;

		if (asprintf(&want, "%s: %s", expect, strerror(ENOENT)) < 0)
			abort();
		is_str(msg(&diag, 0), want, "missing file: path: strerror");
		free(want);
	}
	config_free(&cfg);
	config_diag_free(&diag);

	config_init(&cfg);
	is_int(config_load_file(&cfg, tmpdir, &diag), -1, "a directory fails");
	is_int(diag.n, 1, "one message for a directory");
	config_free(&cfg);
	config_diag_free(&diag);
	free(expect);
}

static void
test_args(void)
{
	struct config_args args;
	struct config_diag diag = { 0 };

	{
		char *argv[] = { "dbgmirror", "lookup", "ABCD", "--cache-dir",
			"/x", "-vv", "--threads=3", "tail", "-v", "--verbose",
			"--", "--not-an-option", "-v", NULL };

		is_int(parse(&args, &diag, argv), 0, "interleaved parses");
		is_int(diag.n, 0, "interleaved gives no message");
		is_int(args.nrest, 5, "five operands");
		if (args.nrest == 5) {
			ok(args.rest[0] == argv[1], "operands point into argv");
			is_str(args.rest[1], "ABCD", "second operand");
			is_str(args.rest[2], "tail", "operand after options");
			is_str(args.rest[3], "--not-an-option",
			    "after --, a dash is an operand");
			is_str(args.rest[4], "-v",
			    "after --, -v is an operand");
		}
		is_int(args.verbose, 4, "-vv -v --verbose count 4");
		is_int(args.npairs, 2, "two schema options");
		if (args.npairs == 2) {
			is_str(args.pairs[0], "cache-dir", "pair 0 name");
			is_str(args.pairs[1], "/x", "pair 0 value (separate)");
			is_str(args.pairs[2], "threads", "pair 1 name");
			is_str(args.pairs[3], "3", "pair 1 value (=)");
			ok(args.pairs[1] != argv[4], "pair values are copies");
		}
		ok(args.config_file == NULL && !args.no_config &&
			!args.check_config && !args.help && !args.version,
		    "no other flag set");
		config_args_free(&args);
	}
	{
		/* elfutils' debuginfod options: what to type instead. */
		char *argv[] = { "dbgmirrord", "-F", "/srv/debug", "-p8002",
			"-U", "-v", NULL };

		is_int(parse(&args, &diag, argv), -1, "debuginfod's -F: error");
		is_str(msg(&diag, 0),
		    "command line: -F: unknown option; elfutils' debuginfod "
		    "-F /srv/debug is dbgmirrord --scan-dir /srv/debug here; "
		    "repeat it for more",
		    "-F DIR: the hint names --scan-dir DIR");
		is_str(msg(&diag, 1),
		    "command line: -p: unknown option; elfutils' debuginfod "
		    "-p 8002 is dbgmirrord --listen 8002 here (all addresses, "
		    "as debuginfod; --listen 127.0.0.1:PORT for this machine "
		    "only)",
		    "-pPORT: the hint names --listen PORT");
		ok(msg(&diag, 2) != NULL &&
			strstr(msg(&diag, 2),
			    "-U DIR is dbgmirrord --scan-packages DIR") != NULL,
		    "-U: --scan-packages");
		is_int(args.nrest, 0, "the hints took their arguments");
		is_int(args.verbose, 1, "-v after them still counts");
		config_args_free(&args);
		config_diag_free(&diag);
	}
	{
		char *argv[] = { "dbgmirrord", "-vv", NULL };

		parse(&args, &diag, argv);
		is_int(args.verbose, 2, "-vv counts 2");
		config_args_free(&args);
	}
	{
		char *argv[] = { "dbgmirrord", "--config", "/etc/x.conf",
			"--check-config", "--version", "-h", "--no-config",
			NULL };

		is_int(parse(&args, &diag, argv), 0, "flags parse");
		is_str(args.config_file, "/etc/x.conf", "--config FILE");
		is_int(args.check_config, 1, "--check-config");
		is_int(args.version, 1, "--version");
		is_int(args.help, 1, "-h");
		is_int(args.no_config, 1, "--no-config");
		is_int(args.nrest + args.npairs, 0, "nothing else");
		config_args_free(&args);
	}
	{
		char *argv[] = { "dbgmirrord", "--config=/y.conf", "--help",
			NULL };

		is_int(parse(&args, &diag, argv), 0, "--config= parses");
		is_str(args.config_file, "/y.conf", "--config=FILE");
		is_int(args.help, 1, "--help");
		config_args_free(&args);
	}
	{
		char *argv[] = { "dbgmirror", "--no-access-log", "--access-log",
			"--access-log", "off", "--access-log=yes",
			"--access-log", "lookup", NULL };

		is_int(parse(&args, &diag, argv), 0, "booleans parse");
		is_int(args.npairs, 5, "five boolean settings");
		if (args.npairs == 5) {
			is_str(args.pairs[0], "access-log", "--no-name name");
			is_str(args.pairs[1], "off", "--no-name is off");
			is_str(args.pairs[3], "on", "bare --name is on");
			is_str(args.pairs[5], "off", "--name off takes off");
			is_str(args.pairs[7], "yes", "--name=yes");
			is_str(args.pairs[9], "on", "--name before an operand");
		}
		is_int(args.nrest, 1,
		    "a non-boolean after --name is an operand");
		is_str(args.nrest > 0 ? args.rest[0] : NULL, "lookup",
		    "the operand");
		config_args_free(&args);
	}
	{
		char *argv[] = { "dbgmirrord", "--foo", "--bar=1", "-x", "-vq",
			"--no-threads", "--no-config=1", "--threads", "2",
			"--threads", NULL };

		is_int(parse(&args, &diag, argv), -1, "bad flags fail");
		is_int(diag.n, 7, "every bad flag reported");
		is_str(msg(&diag, 0), "command line: --foo: unknown option",
		    "unknown --foo");
		is_str(msg(&diag, 1), "command line: --bar: unknown option",
		    "unknown --bar=1");
		is_str(msg(&diag, 2), "command line: -x: unknown option",
		    "unknown -x");
		is_str(msg(&diag, 3), "command line: -q: unknown option",
		    "unknown -q in a cluster");
		is_str(msg(&diag, 4),
		    "command line: --no-threads: unknown option (did you "
		    "mean --threads?)",
		    "--no- only for booleans (the option itself suggested)");
		is_str(msg(&diag, 5),
		    "command line: --no-config: takes no value",
		    "a flag with =");
		is_str(msg(&diag, 6), "command line: --threads: missing value",
		    "missing value");
		is_int(args.verbose, 1, "-v of -vq counted");
		is_int(args.npairs, 1, "good option among bad ones kept");
		config_args_free(&args);
		config_diag_free(&diag);
	}
	{
		char *argv[] = { "dbgmirrord", "--config", NULL };

		is_int(parse(&args, &diag, argv), -1, "--config needs a value");
		is_str(msg(&diag, 0), "command line: --config: missing value",
		    "--config missing value");
		config_args_free(&args);
		config_diag_free(&diag);
	}
}

static void
test_layers(void)
{
	struct config cfg;
	struct config_args args;
	struct config_diag diag = { 0 };
	const char *path;
	char *cwd, *want;

	path = write_text("layers.conf",
	    "threads = 4\n"
	    "workers = 5\n"
	    "listen = 10.0.0.1:1\n"
	    "listen = 10.0.0.2:2\n"
	    "scan-dir = /f1\n"
	    "scan-dir = /f2\n");
	{
		char *argv[] = { "dbgmirrord", "--config", (char *)path,
			"--threads", "8", "--listen", "10.0.0.3:3",
			"--listen=10.0.0.4:4", "--scan-dir", "/c1", NULL };

		config_init(&cfg);
		parse(&args, &diag, argv);
		is_int(config_load(&cfg, &args, &diag), 0, "layers load");
		is_int(diag.n, 0, "layers give no message");
		is_str(cfg.config_file, path, "config_file is the file read");
		is_int(cfg.threads, 8, "command line overrides the file");
		is_int(cfg.workers, 5, "the file overrides the default");
		is_int(cfg.nlisten, 2,
		    "command-line listens replace the file's");
		if (cfg.nlisten == 2) {
			is_str(cfg.listen[0].text, "10.0.0.3:3",
			    "first command-line listen");
			is_str(cfg.listen[1].text, "10.0.0.4:4",
			    "second command-line listen appended");
		}
		is_int(cfg.scan_dirs.n, 1, "command-line scan-dir replaces");
		is_str(cfg.scan_dirs.n > 0 ? cfg.scan_dirs.v[0] : NULL, "/c1",
		    "the command-line scan-dir");
		config_free(&cfg);
		config_args_free(&args);
	}
	{
		char *argv[] = { "dbgmirrord", "--config", (char *)path, NULL };

		config_init(&cfg);
		parse(&args, &diag, argv);
		is_int(config_load(&cfg, &args, &diag), 0, "file alone loads");
		is_int(cfg.nlisten, 2,
		    "the file's listens replace the default");
		if (cfg.nlisten == 2) {
			is_str(cfg.listen[0].text, "10.0.0.1:1",
			    "file listen 1");
			is_str(cfg.listen[1].text, "10.0.0.2:2",
			    "file listen 2");
		}
		is_int(cfg.scan_dirs.n, 2,
		    "the file's two scan-dirs, no default");
		config_free(&cfg);
		config_args_free(&args);
	}

	path = write_text("none.conf", "scan-dir = none\n");
	{
		char *argv[] = { "dbgmirrord", "--config", (char *)path, NULL };

		config_init(&cfg);
		parse(&args, &diag, argv);
		is_int(config_load(&cfg, &args, &diag), 0,
		    "scan-dir none loads");
		is_int(cfg.scan_dirs.n, 0, "scan-dir = none: no default added");
		config_free(&cfg);
		config_args_free(&args);
	}
	{
		char *argv[] = { "dbgmirrord", "--no-config", "--scan-dir",
			"/s", "--scan-dir=none", NULL };

		config_init(&cfg);
		parse(&args, &diag, argv);
		is_int(config_load(&cfg, &args, &diag), 0,
		    "--scan-dir none loads");
		is_int(cfg.scan_dirs.n, 0, "--scan-dir none empties the list");
		config_free(&cfg);
		config_args_free(&args);
	}

	/* Relative paths are made absolute against the cwd. */
	{
		char *argv[] = { "dbgmirrord", "--no-config", "--cache-dir",
			"rel/cache", "--scan-dir", "sd", "--scan-dir", "/abs",
			"--scan-packages", "pk", NULL };

		cwd = getcwd(NULL, 0);
		config_init(&cfg);
		parse(&args, &diag, argv);
		is_int(config_load(&cfg, &args, &diag), 0, "relative loads");
		if (asprintf(&want, "%s%srel/cache", cwd,
			strcmp(cwd, "/") == 0 ? "" : "/") < 0)
			abort();
		is_str(cfg.cache_dir, want, "relative cache-dir made absolute");
		free(want);
		if (asprintf(&want, "%s%ssd", cwd,
			strcmp(cwd, "/") == 0 ? "" : "/") < 0)
			abort();
		is_str(cfg.scan_dirs.n == 2 ? cfg.scan_dirs.v[0] : NULL, want,
		    "relative scan-dir made absolute");
		is_str(cfg.scan_dirs.n == 2 ? cfg.scan_dirs.v[1] : NULL, "/abs",
		    "absolute scan-dir kept");
		free(want);
		if (asprintf(&want, "%s%spk", cwd,
			strcmp(cwd, "/") == 0 ? "" : "/") < 0)
			abort();
		is_str(cfg.scan_packages.n == 1 ? cfg.scan_packages.v[0] : NULL,
		    want, "relative scan-packages made absolute");
		free(want);
		free(cwd);
		config_free(&cfg);
		config_args_free(&args);
	}

	/* Booleans and bad values from the command line. */
	{
		char *argv[] = { "dbgmirrord", "--no-config", "--no-access-log",
			"--log-level", "debug", NULL };

		config_init(&cfg);
		parse(&args, &diag, argv);
		is_int(config_load(&cfg, &args, &diag), 0, "--no-access-log");
		is_int(cfg.access_log, 0, "--no-access-log turns it off");
		is_int(cfg.log_level, CONFIG_LOG_DEBUG, "--log-level debug");
		config_free(&cfg);
		config_args_free(&args);
	}
	{
		char *argv[] = { "dbgmirrord", "--no-config", "--threads", "x",
			"--cache-dir=", "--workers", "2", NULL };

		config_init(&cfg);
		parse(&args, &diag, argv);
		is_int(config_load(&cfg, &args, &diag), -1,
		    "bad command-line values fail");
		is_int(diag.n, 2, "both reported");
		is_str(msg(&diag, 0),
		    "command line: threads: \"x\": expected a decimal number",
		    "command-line value message");
		is_str(msg(&diag, 1), "command line: cache-dir: empty value",
		    "empty --cache-dir=");
		is_int(cfg.workers, 2, "the good one is applied");
		config_free(&cfg);
		config_args_free(&args);
		config_diag_free(&diag);
	}

	/* --config names a file that must exist. */
	if (asprintf(&want, "%s/absent.conf", tmpdir) < 0)
		abort();
	{
		char *argv[] = { "dbgmirrord", "--config", want, NULL };

		config_init(&cfg);
		parse(&args, &diag, argv);
		is_int(config_load(&cfg, &args, &diag), -1,
		    "missing --config file fails");
		ok(diag.n == 1 &&
			strncmp(diag.msgs[0], want, strlen(want)) == 0,
		    "missing --config file reported with its path");
		ok(cfg.config_file == NULL, "no config_file when none read");
		config_free(&cfg);
		config_args_free(&args);
		config_diag_free(&diag);
	}
	free(want);

	/* An error in the file fails config_load, which reports it. */
	path = write_text("badload.conf", "threads = 1\nnope = 2\n");
	{
		char *argv[] = { "dbgmirrord", "--config", (char *)path, NULL };

		config_init(&cfg);
		parse(&args, &diag, argv);
		is_int(config_load(&cfg, &args, &diag), -1, "bad file: -1");
		ok(diag.n == 1 &&
			strstr(diag.msgs[0], ":2: nope: unknown") != NULL,
		    "bad file: its message");
		config_free(&cfg);
		config_args_free(&args);
		config_diag_free(&diag);
	}
}

static void
test_cache_dir(void)
{
	struct config cfg;
	struct config_args args;
	struct config_diag diag = { 0 };
	char *argv[] = { "dbgmirrord", "--no-config", NULL };
	char *old_xdg = getenv("XDG_CACHE_HOME"), *old_home = getenv("HOME");
	char *d;

	old_xdg = old_xdg != NULL ? strdup(old_xdg) : NULL;
	old_home = old_home != NULL ? strdup(old_home) : NULL;

	if (geteuid() == 0) {
		setenv("XDG_CACHE_HOME", "/xdg/cache", 1);
		d = config_default_cache_dir();
		is_str(d, "/var/cache/dbgmirror", "root: /var/cache/dbgmirror");
		free(d);
	} else {
		setenv("XDG_CACHE_HOME", "/xdg/cache", 1);
		setenv("HOME", "/home/tester", 1);
		d = config_default_cache_dir();
		is_str(d, "/xdg/cache/dbgmirror", "XDG_CACHE_HOME is used");
		free(d);
		setenv("XDG_CACHE_HOME", "/xdg/", 1);
		d = config_default_cache_dir();
		is_str(d, "/xdg/dbgmirror", "XDG_CACHE_HOME with a slash");
		free(d);
		setenv("XDG_CACHE_HOME", "relative/cache", 1);
		d = config_default_cache_dir();
		is_str(d, "/home/tester/.cache/dbgmirror",
		    "relative XDG_CACHE_HOME is ignored");
		free(d);
		unsetenv("XDG_CACHE_HOME");
		d = config_default_cache_dir();
		is_str(d, "/home/tester/.cache/dbgmirror", "HOME is used");
		free(d);

		setenv("XDG_CACHE_HOME", "/xdg/cache", 1);
		config_init(&cfg);
		parse(&args, &diag, argv);
		is_int(config_load(&cfg, &args, &diag), 0, "load with XDG");
		is_str(cfg.cache_dir, "/xdg/cache/dbgmirror",
		    "config_load uses the default cache dir");
		config_free(&cfg);
		config_args_free(&args);
		config_diag_free(&diag);
	}

	if (old_xdg != NULL)
		setenv("XDG_CACHE_HOME", old_xdg, 1);
	else
		unsetenv("XDG_CACHE_HOME");
	if (old_home != NULL)
		setenv("HOME", old_home, 1);
	else
		unsetenv("HOME");
	free(old_xdg);
	free(old_home);
}

/* Is name a whole word in text (not part of a longer option name)? */
static int
has_word(const char *text, const char *name)
{
	size_t len = strlen(name);
	const char *p;

	for (p = strstr(text, name); p != NULL; p = strstr(p + 1, name)) {
		int before = p > text &&
		    (p[-1] == '-' || (p[-1] >= 'a' && p[-1] <= 'z'));
		int after = p[len] == '-' || (p[len] >= 'a' && p[len] <= 'z');

		if (!before && !after)
			return 1;
	}
	return 0;
}

/* Does text hold a line "name = ..." or "#name = ..."? */
static int
has_assignment(const char *text, const char *name)
{
	size_t len = strlen(name);
	const char *p = text;

	while (p != NULL && *p != '\0') {
		const char *q = *p == '#' ? p + 1 : p;

		if (strncmp(q, name, len) == 0 &&
		    strncmp(q + len, " = ", 3) == 0)
			return 1;
		p = strchr(p, '\n');
		if (p != NULL)
			p++;
	}
	return 0;
}

/* Is line "#name = ..."? */
static int
commented_assignment(const char *line)
{
	size_t n;

	if (line[0] != '#')
		return 0;
	n = strspn(line + 1, "abcdefghijklmnopqrstuvwxyz-");
	return n > 0 && strncmp(line + 1 + n, " = ", 3) == 0;
}

static void
test_example_and_man(void)
{
	const char *top = getenv("top_srcdir");
	struct config cfg, def;
	struct config_diag diag = { 0 };
	char *path, *text, *out, *q, what[96];
	const char *p, *name;
	size_t i;

	if (top == NULL)
		top = ".";
	if (asprintf(&path, "%s/conf/dbgmirror.conf", top) < 0)
		abort();
	text = slurp(path);
	ok(text != NULL, "the example config can be read");
	config_init(&cfg);
	is_int(config_load_file(&cfg, path, &diag), 0,
	    "the example config loads");
	is_int(diag.n, 0, "the example config gives no message");
	for (i = 0; i < diag.n; i++)
		printf("# %s\n", diag.msgs[i]);
	config_free(&cfg);
	config_diag_free(&diag);
	free(path);
	if (text == NULL)
		text = strdup("");
	ok(strstr(text, "--check-config") != NULL,
	    "the example says how to check it");
	for (i = 0; (name = config_option_name(i)) != NULL; i++) {
		snprintf(what, sizeof(what),
		    "example config sets #%s = ", name);
		ok(has_assignment(text, name), what);
	}

	/* Uncomment every "#name = value" line: it still loads, to defaults. */
	out = malloc(strlen(text) + 1);
	if (out == NULL)
		abort();
	for (p = text, q = out; *p != '\0';) {
		if (commented_assignment(p))
			p++;
		while (*p != '\0' && *p != '\n')
			*q++ = *p++;
		if (*p == '\n')
			*q++ = *p++;
	}
	*q = '\0';
	ok(strstr(out, "\nthreads = ") != NULL, "uncommented copy made");
	path = (char *)write_text("uncommented.conf", out);
	config_init(&cfg);
	config_init(&def);
	is_int(config_load_file(&cfg, path, &diag), 0,
	    "the uncommented example loads");
	is_int(diag.n, 0, "the uncommented example gives no message");
	for (i = 0; i < diag.n; i++)
		printf("# %s\n", diag.msgs[i]);
	is_int(cfg.threads, def.threads, "example threads is the default");
	is_int(cfg.workers, def.workers, "example workers is the default");
	is_int(cfg.rescan_interval, def.rescan_interval,
	    "example rescan-interval is the default");
	ok(cfg.index_map_size == def.index_map_size,
	    "example index-map-size is the default");
	is_int(cfg.max_header_size, def.max_header_size,
	    "example max-header-size is the default");
	is_int(cfg.max_connections, def.max_connections,
	    "example max-connections is the default");
	is_int(cfg.header_timeout, def.header_timeout,
	    "example header-timeout is the default");
	is_int(cfg.keepalive_timeout, def.keepalive_timeout,
	    "example keepalive-timeout is the default");
	is_int(cfg.send_timeout, def.send_timeout,
	    "example send-timeout is the default");
	is_int(cfg.shutdown_timeout, def.shutdown_timeout,
	    "example shutdown-timeout is the default");
	is_int(cfg.access_log, def.access_log,
	    "example access-log is the default");
	is_int(cfg.log_level, def.log_level,
	    "example log-level is the default");
	is_int(cfg.nlisten, def.nlisten, "example listens are the default");
	for (i = 0; i < cfg.nlisten && i < def.nlisten; i++)
		is_str(cfg.listen[i].text, def.listen[i].text,
		    "example listen is the default");
	is_str(cfg.scan_dirs.n == 1 ? cfg.scan_dirs.v[0] : NULL,
	    "/usr/lib/debug", "example scan-dir is the default");
	is_int(cfg.scan_packages.n, 0, "example scan-packages is the default");
	is_int(cfg.package_jobs, def.package_jobs,
	    "example package-jobs is the default");
	is_int(cfg.archive_full_path, def.archive_full_path,
	    "example archive-full-path is the default");
	ok(cfg.cache_dir != NULL && cfg.cache_dir[0] == '/',
	    "example cache-dir is absolute");
	config_free(&cfg);
	config_free(&def);
	config_diag_free(&diag);
	free(out);
	free(text);

	/* The man page documents every option. */
	if (asprintf(&path, "%s/packaging/man/dbgmirror.conf.5", top) < 0)
		abort();
	text = slurp(path);
	free(path);
	ok(text != NULL, "the man page can be read");
	if (text == NULL)
		text = strdup("");
	for (p = text, q = text; *p != '\0'; p++) /* "\-" is a '-' in roff */
		if (!(p[0] == '\\' && p[1] == '-'))
			*q++ = *p;
	*q = '\0';
	for (i = 0; (name = config_option_name(i)) != NULL; i++) {
		snprintf(what, sizeof(what), "the man page mentions %s", name);
		ok(has_word(text, name), what);
	}
	ok(strstr(text, "/etc/dbgmirror/dbgmirror.conf") != NULL,
	    "the man page names the file");
	free(text);
}

/* Load argv (NULL-terminated) on top of the defaults; config_load's result. */
static int
load_argv(struct config *cfg, struct config_diag *diag, char **argv)
{
	struct config_args args;
	int rc;

	config_free(cfg);
	config_diag_free(diag);
	if (config_init(cfg) == -1)
		abort();
	if (parse(&args, diag, argv) == -1) {
		config_args_free(&args);
		return -1;
	}
	rc = config_load(cfg, &args, diag);
	config_args_free(&args);
	return rc;
}

static void
test_upstreams(void)
{
	struct config cfg;
	struct config_diag diag = { 0 };
	char url[64];
	int i;

	config_init(&cfg);
	unsetenv("DEBUGINFOD_URLS");
	{
		char *argv[] = { "dbgmirrord", "--no-config", "--upstream",
			"https://a.example/// negative-ttl=1h enabled=off",
			"--upstream", "http://b.example:8002/x",
			"--upstream-connect-timeout", "7", "--negative-ttl",
			"9", "--upstream-header", "* X-All: 1",
			"--upstream-header",
			"http://b.example:8002/x/ Authorization: "
			"Bearer t",
			NULL };

		is_int(load_argv(&cfg, &diag, argv), 0, "upstreams load");
		is_int(cfg.nupstreams, 2, "two upstreams");
		is_int(cfg.upstreams_from_env, 0, "not from the environment");
	}
	if (cfg.nupstreams == 2) {
		const struct config_upstream *a = &cfg.upstreams[0];
		const struct config_upstream *b = &cfg.upstreams[1];

		is_str(a->url, "https://a.example", "trailing slashes dropped");
		is_int(a->enabled, 0, "enabled=off");
		is_int(a->negative_ttl, 3600, "per-upstream negative-ttl");
		is_int(a->connect_timeout, 7, "the global connect timeout");
		is_int(a->first_byte_timeout, 5, "the default first-byte one");
		is_int(a->error_ttl, 30, "the default error-ttl");
		is_str(b->url, "http://b.example:8002/x", "a URL with a path");
		is_int(b->enabled, 1, "enabled by default");
		is_int(b->negative_ttl, 9, "the global negative-ttl");
		is_int(a->headers.n, 1, "'*' header for the first");
		is_int(b->headers.n, 2, "'*' and its own for the second");
		if (b->headers.n == 2)
			is_str(b->headers.v[1], "Authorization: Bearer t",
			    "the header line, without the URL");
	}

	/* Bad upstream lines, each with its reason. */
	{
		static const struct {
			const char *value, *msg;
		} bad[] = {
			{ "ftp://x", "http:// or https://" },
			{ "http://", "http:// or https://" },
			{ "https:///path", "without a host" },
			{ "http://a?q=1", "query or fragment" },
			{ "http://a junk", "key=value" },
			{ "http://a frob=1", "unknown setting" },
			{ "http://a enabled=maybe", "on or off" },
			{ "http://a error-ttl=-1", "duration" },
			{ "http://a connect-timeout=400d", "duration" },
		};
		size_t k;

		for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
			char what[128];

			snprintf(what, sizeof(what), "upstream \"%s\" refused",
			    bad[k].value);
			is_int(set1(&cfg, &diag, "upstream", bad[k].value), -1,
			    what);
			snprintf(what, sizeof(what), "... saying \"%s\"",
			    bad[k].msg);
			ok(find_msg(&diag, bad[k].msg) != -1, what);
		}
	}
	set1(&cfg, &diag, "upstream", "http://a");
	is_int(config_set(&cfg, "upstream", "http://a/", "test", &diag), -1,
	    "the same upstream twice is refused");
	ok(find_msg(&diag, "already listed") != -1, "... saying so");
	for (i = 1; i < CONFIG_UPSTREAMS_MAX; i++) {
		snprintf(url, sizeof(url), "http://h%d", i);
		config_set(&cfg, "upstream", url, "test", &diag);
	}
	is_int(cfg.nupstreams, CONFIG_UPSTREAMS_MAX, "32 upstreams");
	is_int(config_set(&cfg, "upstream", "http://h99", "test", &diag), -1,
	    "a 33rd is refused");
	is_int(config_set(&cfg, "upstream", "none", "test", &diag), 0,
	    "upstream none");
	is_int(cfg.nupstreams, 0, "... empties the list");

	is_int(set1(&cfg, &diag, "upstream-header", "* Bad Name: v"), -1,
	    "a header name with a blank is refused");
	is_int(set1(&cfg, &diag, "upstream-header", "* NoColon"), -1,
	    "a header without ':' is refused");
	{
		char *argv[] = { "dbgmirrord", "--no-config", "--upstream",
			"http://a", "--upstream-header", "http://zz X: 1",
			NULL };

		is_int(load_argv(&cfg, &diag, argv), -1,
		    "a header for an unlisted upstream fails to load");
		ok(find_msg(&diag, "not a listed upstream") != -1,
		    "... saying so");
	}

	/* DEBUGINFOD_URLS when no layer names an upstream. */
	setenv("DEBUGINFOD_URLS", "http://e1.example  https://e2.example/", 1);
	{
		char *argv[] = { "dbgmirrord", "--no-config", NULL };

		is_int(load_argv(&cfg, &diag, argv), 0, "env upstreams load");
		is_int(cfg.nupstreams, 2, "two from DEBUGINFOD_URLS");
		is_int(cfg.upstreams_from_env, 1, "marked as from the env");
		is_str(cfg.nupstreams == 2 ? cfg.upstreams[1].url : NULL,
		    "https://e2.example", "... normalised");
	}
	{
		char *argv[] = { "dbgmirrord", "--no-config", "--upstream",
			"none", NULL };

		is_int(load_argv(&cfg, &diag, argv), 0,
		    "--upstream none loads");
		is_int(cfg.nupstreams, 0, "--upstream none: not the env's");
	}
	{
		char *argv[] = { "dbgmirrord", "--no-config", "--upstream",
			"http://c.example", NULL };

		load_argv(&cfg, &diag, argv);
		is_int(cfg.nupstreams, 1, "--upstream replaces the env's");
	}
	setenv("DEBUGINFOD_URLS", "not-a-url", 1);
	{
		char *argv[] = { "dbgmirrord", "--no-config", NULL };

		is_int(load_argv(&cfg, &diag, argv), -1,
		    "a bad DEBUGINFOD_URLS is an error");
		ok(find_msg(&diag, "DEBUGINFOD_URLS") != -1, "... naming it");
	}
	unsetenv("DEBUGINFOD_URLS");

	/* The other new words. */
	is_int(set1(&cfg, &diag, "admin-access", "any"), 0, "admin-access any");
	is_int(cfg.admin_access, CONFIG_ADMIN_ANY, "... is any");
	is_int(set1(&cfg, &diag, "admin-access", "all"), -1,
	    "admin-access all is refused");
	is_int(set1(&cfg, &diag, "proxy", "none"), 0, "proxy none");
	is_str(cfg.proxy, "", "... is the empty string (direct)");
	is_int(set1(&cfg, &diag, "proxy", "http://p:3128"), 0, "a proxy");
	is_str(cfg.proxy, "http://p:3128", "... kept as written");
	{
		char *argv[] = { "dbgmirrord", "--no-config",
			"--cache-low-watermark", "90", NULL };

		is_int(load_argv(&cfg, &diag, argv), -1,
		    "low watermark not below high: error");
		ok(find_msg(&diag, "cache-low-watermark") != -1,
		    "... naming it");
	}
	{
		char *argv[] = { "dbgmirrord", "--no-config", "--cache-size",
			"512K", NULL };

		is_int(load_argv(&cfg, &diag, argv), -1,
		    "cache-size 512K: error");
	}
	{
		char *argv[] = { "dbgmirrord", "--no-config", "--cache-size",
			"0", "--ca-file", "ca.pem", NULL };

		is_int(load_argv(&cfg, &diag, argv), 0, "cache-size 0 loads");
		ok(cfg.ca_file != NULL && cfg.ca_file[0] == '/',
		    "a relative ca-file is made absolute");
	}
	config_free(&cfg);
	config_diag_free(&diag);
}

/* source-root: the scan directories unless set; none; made absolute. */
static void
test_source_root(void)
{
	struct config cfg;
	struct config_args args;
	struct config_diag diag = { 0 };
	char *cwd = getcwd(NULL, 0), *want = NULL;

	{
		char *argv[] = { "dbgmirrord", "--no-config", "--scan-dir",
			"/a", "--scan-dir", "/b", NULL };

		config_init(&cfg);
		parse(&args, &diag, argv);
		is_int(config_load(&cfg, &args, &diag), 0,
		    "two scan-dirs load");
		ok(cfg.source_roots.n == 2 &&
			strcmp(cfg.source_roots.v[0], "/a") == 0 &&
			strcmp(cfg.source_roots.v[1], "/b") == 0,
		    "source-root: the scan-dirs by default");
		config_free(&cfg);
		config_args_free(&args);
	}
	{
		char *argv[] = { "dbgmirrord", "--no-config", "--scan-dir",
			"/a", "--source-root", "none", NULL };

		config_init(&cfg);
		parse(&args, &diag, argv);
		is_int(config_load(&cfg, &args, &diag), 0, "source-root none");
		is_int(cfg.source_roots.n, 0, "... no source root");
		config_free(&cfg);
		config_args_free(&args);
	}
	{
		char *argv[] = { "dbgmirrord", "--no-config", "--scan-dir",
			"/a", "--source-root", "src", "--source-root",
			"/usr/src/debug", NULL };

		config_init(&cfg);
		parse(&args, &diag, argv);
		is_int(config_load(&cfg, &args, &diag), 0, "two source-roots");
		if (asprintf(&want, "%s%ssrc", cwd,
			strcmp(cwd, "/") == 0 ? "" : "/") < 0)
			abort();
		ok(cfg.source_roots.n == 2 &&
			strcmp(cfg.source_roots.v[0], want) == 0 &&
			strcmp(cfg.source_roots.v[1], "/usr/src/debug") == 0,
		    "... replace the scan-dirs, made absolute");
		free(want);
		config_free(&cfg);
		config_args_free(&args);
	}
	config_diag_free(&diag);
	free(cwd);
}

static void
test_schema_and_usage(void)
{
	char *buf = NULL, what[96];
	size_t len = 0, i;
	const char *name;
	FILE *fp;

	for (i = 0; config_option_name(i) != NULL; i++)
		continue;
	is_int(i, 76, "seventy-six options");
	is_str(config_option_name(0), "listen", "option 0 is listen");
	ok(config_option_name(1000) == NULL, "NULL far past the end");

	if ((fp = open_memstream(&buf, &len)) == NULL)
		abort();
	config_usage(fp);
	fclose(fp);
	for (i = 0; (name = config_option_name(i)) != NULL; i++) {
		char *line;

		if (asprintf(&line, "  --%s ", name) < 0)
			abort();
		snprintf(what, sizeof(what), "usage has --%s", name);
		ok(strstr(buf, line) != NULL, what);
		free(line);
	}
	ok(strstr(buf, "(default: 300)\n") != NULL, "usage shows a default");
	ok(strstr(buf, "  --ca-file FILE ") != NULL &&
		strstr(buf, "  --token-file FILE ") != NULL &&
		strstr(buf, "  --admin-token FILE ") != NULL &&
		strstr(buf, "  --cache-dir DIR ") != NULL &&
		strstr(buf, "  --scan-dir DIR ") != NULL,
	    "usage: files are FILE, directories DIR");
	ok(strstr(buf, "(default: 127.0.0.1:8002 [::1]:8002)\n") != NULL,
	    "usage shows the listen default");
	{
		/* Help texts start in one column. */
		const char *l1 = strstr(buf, "  --threads ");
		const char *l2 = strstr(buf, "  --keepalive-timeout ");
		const char *h1 = l1 != NULL ? strstr(l1, "event-loop") : NULL;
		const char *h2 =
		    l2 != NULL ? strstr(l2, "an idle connection") : NULL;

		ok(h1 != NULL && h2 != NULL && h1 - l1 == h2 - l2,
		    "usage is aligned");
	}
	free(buf);
}

static void
test_url_public(void)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "https://u:p@host:8002", "https://host:8002" },
		{ "http://user@host/path/", "http://host/path" },
		{ "https://a@b:c@host/x@y", "https://host/x@y" },
		{ "http://host:1/a@b", "http://host:1/a@b" },
		{ "http://host///", "http://host" },
	};
	struct config cfg;
	struct config_diag diag = { 0 };
	char out[256];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		config_url_public(cases[i].in, out, sizeof(out));
		is_str(out, cases[i].out, "config_url_public drops userinfo");
	}
	config_init(&cfg);
	ok(config_set(&cfg, "upstream", "https://me:pw@mirror.example/ x", "t",
	       &diag) == -1,
	    "an upstream with a bad option is refused");
	ok(config_set(&cfg, "upstream", "https://me:pw@mirror.example/", "t",
	       &diag) == 0 &&
		cfg.nupstreams == 1 &&
		strcmp(cfg.upstreams[0].url, "https://me:pw@mirror.example") ==
		    0 &&
		strcmp(cfg.upstreams[0].name, "https://mirror.example") == 0,
	    "an upstream keeps its URL to use and a name to show");
	config_free(&cfg);
	config_diag_free(&diag);
}

/* The store option (conf/objstore.c): its syntax, URLs and credentials. */
static void
test_store(void)
{
	static const char *const bad[] = {
		"s4 http://h b-1",
		"s3 ftp://h b-1",
		"s3 http://h/path b-1",
		"s3 http://user@h b-1",
		"s3 http://h B_UPPER",
		"s3 http://h ab",
		"s3 http://h b-1 prefix=/abs",
		"s3 http://h b-1 prefix=a//b",
		"s3 http://h b-1 prefix=a?b",
		"s3 http://h b-1 region=US",
		"s3 http://h b-1 addressing=dns",
		"s3 http://h b-1 colour=blue",
		"s3 http://h",
	};
	struct config_objstore st;
	const char *why;
	char buf[256], err[256], path[600];
	size_t i;
	FILE *fp;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		snprintf(buf, sizeof(buf), "store \"%s\" refused", bad[i]);
		ok(config_objstore_parse(bad[i], &st, &why) == -1 &&
			why != NULL,
		    buf);
	}
	is_int(config_objstore_parse("s3 http://127.0.0.1:7480/ my-bucket "
				     "prefix=fleet/a region=eu-west-1",
		   &st, &why),
	    0, "a store line parses");
	is_str(st.endpoint, "http://127.0.0.1:7480", "... its endpoint");
	is_str(st.prefix, "fleet/a/", "... its prefix, with one '/' after");
	is_str(st.region, "eu-west-1", "... its region");
	ok(config_objstore_url(&st, buf, sizeof(buf)) == 0 &&
		strcmp(buf, "http://127.0.0.1:7480/my-bucket") == 0,
	    "path addressing: ENDPOINT/BUCKET");
	config_objstore_free(&st);
	is_int(config_objstore_parse("s3 https://s3.example.org b.c "
				     "addressing=virtual",
		   &st, &why),
	    0, "addressing=virtual parses");
	ok(config_objstore_url(&st, buf, sizeof(buf)) == 0 &&
		strcmp(buf, "https://b.c.s3.example.org") == 0,
	    "virtual addressing: BUCKET.host");
	is_str(st.region, "us-east-1", "... the default region");

	snprintf(path, sizeof(path), "%s/s3keys", tmpdir);
	fp = fopen(path, "w");
	if (fp != NULL) {
		fputs("AKID\nvery-secret\n", fp);
		fclose(fp);
	}
	free(st.key_file);
	st.key_file = strdup(path);
	ok(config_objstore_credentials(&st, NULL, err, sizeof(err)) == 0 &&
		strcmp(st.access_key, "AKID") == 0 &&
		strcmp(st.secret_key, "very-secret") == 0,
	    "credentials from access-key-file");
	fp = fopen(path, "w");
	if (fp != NULL) {
		fputs("only-one-line\n", fp);
		fclose(fp);
	}
	ok(config_objstore_credentials(&st, NULL, err, sizeof(err)) == -1 &&
		strstr(err, "second") != NULL,
	    "a key file without the secret line is refused");
	ok(strstr(err, "only-one-line") == NULL, "... without quoting it");
	config_objstore_free(&st);
	unlink(path);
}

/* Where each option and each list item was set, for messages. */
static void
test_where(void)
{
	struct config cfg;
	struct config_diag diag = { 0 };
	char want[PATH_MAX + 16];
	const char *path;

	path = write_text("where.conf",
	    "threads = 4\n"
	    "access = read any\n"
	    "\n"
	    "access = admin addr=10.0.0.0/8\n");
	config_init(&cfg);
	is_int(config_load_file(&cfg, path, &diag), 0, "where.conf loads");
	snprintf(want, sizeof(want), "%s:1", path);
	is_str(config_where(&cfg, "threads", 0), want, "an option's file:line");
	is_int(cfg.access.n, 2, "two access lines");
	if (cfg.access.n == 2) {
		snprintf(want, sizeof(want), "%s:2", path);
		is_str(config_where(&cfg, "access", 0), want,
		    "... the first one's line");
		snprintf(want, sizeof(want), "%s:4", path);
		is_str(config_where(&cfg, "access", 1), want,
		    "... the second one's");
	}
	is_str(config_where(&cfg, "admin-access", 0), "default",
	    "an option left alone: default");
	is_str(config_where(&cfg, "no-such-option", 0), "default",
	    "an unknown name: default");
	config_set(&cfg, "threads", "2", "command line", &diag);
	is_str(config_where(&cfg, "threads", 0), "command line",
	    "the last layer to set it");
	config_free(&cfg);
	config_diag_free(&diag);
	unlink(path);
}

int
main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_config.XXXXXX");
	if (mkdtemp(tmpdir) == NULL) {
		fprintf(stderr, "%s: mkdtemp: %s\n", __func__, strerror(errno));
		return 1;
	}
	test_defaults();
	test_numbers();
	test_words();
	test_listen();
	test_listen_tls();
	test_upstreams();
	test_file_syntax();
	test_file_errors();
	test_args();
	test_layers();
	test_cache_dir();
	test_example_and_man();
	test_schema_and_usage();
	test_source_root();
	test_url_public();
	test_store();
	test_where();
	cleanup();
	return tap_done();
}
