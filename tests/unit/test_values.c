/*
 * tests/unit/test_values.c: single option values (conf/values.c) as
 * config_set() and the command line take them: numbers with their
 * bounds and suffixes, booleans and words, listen addresses with and
 * without TLS, upstream lines with their own numbers and headers, public
 * URLs, and the object store's line and credentials (conf/objstore.c).
 *
 * Uses only the public interface.  Temporary files live in a mkdtemp
 * directory under /tmp and are removed at the end.
 */
#include "conf/config.h"
#include "conf/objstore.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/conftest.h"
#include "tests/tap.h"

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

static int
port_of(const struct config_listen *l)
{
	if (l->addr.ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)&l->addr)->sin_port);
	return ntohs(((const struct sockaddr_in6 *)&l->addr)->sin6_port);
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

int
main(void)
{
	if (conftest_mkdir("test_values") == -1)
		return 1;
	test_numbers();
	test_words();
	test_listen();
	test_listen_tls();
	test_upstreams();
	test_url_public();
	test_store();
	cleanup();
	return tap_done();
}
