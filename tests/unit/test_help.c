/*
 * tests/unit/test_help.c: what a user reads of the options: every option
 * of the table (conf/options.c) in --help (conf/help.c), aligned and
 * with its default, and in the example config and the man page, which
 * are found under $top_srcdir (default ".").
 *
 * Uses only the public interface.  Temporary files live in a mkdtemp
 * directory under /tmp and are removed at the end.
 */
#include "conf/config.h"
#include "conf/help.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/conftest.h"
#include "tests/tap.h"

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

static void
test_schema_and_usage(void)
{
	char *buf = NULL, what[96];
	size_t len = 0, i;
	const char *name;
	FILE *fp;

	for (i = 0; config_option_name(i) != NULL; i++)
		continue;
	is_int(i, 69, "sixty-nine options");
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

int
main(void)
{
	if (conftest_mkdir("test_help") == -1)
		return 1;
	test_example_and_man();
	test_schema_and_usage();
	cleanup();
	return tap_done();
}
