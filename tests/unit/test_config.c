/*
 * tests/unit/test_config.c: the loader of conf/config.c: the config file
 * and command-line parsers, the layers, the defaults (conf/options.c,
 * conf/paths.c) and where each value came from.  The single values are
 * tested in test_values.c, --help and the documents of the options in
 * test_help.c.
 *
 * Uses only the public interface.  Temporary files live in a mkdtemp
 * directory under /tmp and are removed at the end.
 */
#include "conf/config.h"

#include <sys/stat.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/conftest.h"
#include "tests/tap.h"

static int
is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
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
	if (conftest_mkdir("test_config") == -1)
		return 1;
	/* These tests want no upstream from the environment. */
	unsetenv("DEBUGINFOD_URLS");
	test_defaults();
	test_file_syntax();
	test_file_errors();
	test_args();
	test_layers();
	test_cache_dir();
	test_source_root();
	test_where();
	cleanup();
	return tap_done();
}
