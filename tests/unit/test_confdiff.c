/*
 * tests/unit/test_confdiff.c: what differs between two configurations and
 * which of it needs a restart (conf/diff.c), the values as text that the
 * comparison rests on (config_option_text), and the option each problem
 * of a file is about (struct config_diag's opts), which a failed reload
 * reads.
 *
 * Configurations are loaded from files of a mkdtemp directory, as the
 * daemon loads them; the directory is removed at the end.
 */
#include "conf/diff.c"

#include "conf/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/tap.h"

static char dir[64];
static char path[128];

/*
 * Load text as the configuration file (over the embedded defaults) into
 * cfg, problems into diag: config_load's result.
 */
static int
load(const char *text, struct config *cfg, struct config_diag *diag)
{
	char *argv[] = { "test", "--config", path, NULL };
	struct config_args args;
	FILE *fp;
	int rc;

	if ((fp = fopen(path, "w")) == NULL || fputs(text, fp) == EOF ||
	    fclose(fp) != 0) {
		printf("Bail out! %s: %s\n", path, strerror(errno));
		exit(1);
	}
	memset(diag, 0, sizeof(*diag));
	if (config_init(cfg) == -1 ||
	    config_parse_args(&args, 3, argv, diag) == -1) {
		printf("Bail out! cannot set up a configuration\n");
		exit(1);
	}
	rc = config_load(cfg, &args, diag);
	config_args_free(&args);
	return rc;
}

/* Both texts load; d is the diff of the first against the second. */
static void
diff_of(const char *a, const char *b, struct config *ca, struct config *cb,
    struct config_diff *d)
{
	struct config_diag diag;

	if (load(a, ca, &diag) == -1) {
		printf("Bail out! %s\n", diag.n > 0 ? diag.msgs[0] : "?");
		exit(1);
	}
	config_diag_free(&diag);
	if (load(b, cb, &diag) == -1) {
		printf("Bail out! %s\n", diag.n > 0 ? diag.msgs[0] : "?");
		exit(1);
	}
	config_diag_free(&diag);
	if (config_diff(ca, cb, d) == -1) {
		printf("Bail out! out of memory\n");
		exit(1);
	}
}

/* The change of d named name, or NULL. */
static const struct config_change *
change(const struct config_diff *d, const char *name)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		if (strcmp(d->v[i].name, name) == 0)
			return &d->v[i];
	return NULL;
}

#define BASE \
	"cache-dir = /tmp/dbgmirror-confdiff\n" \
	"upload-dir = /tmp/dbgmirror-confdiff-up\n" \
	"scan-dir = none\n" \
	"listen = 127.0.0.1:8002\n"

static void
test_changes(void)
{
	struct config a, b;
	struct config_diff d;
	const struct config_change *c;

	diff_of(BASE, BASE, &a, &b, &d);
	is_int(d.n, 0, "the same file: nothing differs");
	config_diff_free(&d);
	config_free(&a);
	config_free(&b);

	diff_of(BASE "negative-ttl = 600\n", BASE "negative-ttl = 5\n", &a, &b,
	    &d);
	c = change(&d, "negative-ttl");
	ok(c != NULL && !c->restart && c->was == NULL,
	    "negative-ttl changed, live");
	config_diff_free(&d);
	config_free(&a);
	config_free(&b);

	diff_of(BASE, BASE "upstream = http://127.0.0.1:1\n", &a, &b, &d);
	is_int(d.n, 1, "an upstream added: one change");
	c = change(&d, "upstream");
	ok(c != NULL && !c->restart, "... upstream, live");
	config_diff_free(&d);
	config_free(&a);
	config_free(&b);

	/* The global timeout is each upstream's that sets none. */
	diff_of(BASE "upstream = http://127.0.0.1:1\n",
	    BASE "upstream = http://127.0.0.1:1\n"
		 "upstream-connect-timeout = 7\n",
	    &a, &b, &d);
	ok(change(&d, "upstream-connect-timeout") != NULL &&
		change(&d, "upstream") != NULL,
	    "a global upstream timeout changes the upstream too");
	config_diff_free(&d);
	config_free(&a);
	config_free(&b);

	diff_of(BASE "access = read addr=10.0.0.0/8\n",
	    BASE "access = read addr=10.0.0.0/16\n", &a, &b, &d);
	ok(d.n == 1 && change(&d, "access") != NULL, "an access rule changed");
	config_diff_free(&d);
	config_free(&a);
	config_free(&b);
}

static void
test_restart(void)
{
	struct config a, b;
	struct config_diff d;
	const struct config_change *c;
	size_t i;

	for (i = 0; i < NRESTART; i++)
		if (config_opt_find(restart_names[i],
			strlen(restart_names[i])) == -1)
			break;
	ok(i == NRESTART, "every restart-only name is an option");

	diff_of(BASE,
	    "cache-dir = /tmp/dbgmirror-confdiff\n"
	    "upload-dir = /tmp/dbgmirror-confdiff-up\n"
	    "scan-dir = none\n"
	    "listen = 127.0.0.1:9000\n"
	    "threads = 3\n",
	    &a, &b, &d);
	c = change(&d, "listen");
	ok(c != NULL && c->restart, "listen changed: needs a restart");
	is_str(c != NULL ? c->was : NULL, "127.0.0.1:8002", "... was");
	is_str(c != NULL ? c->now : NULL, "127.0.0.1:9000", "... now");
	c = change(&d, "threads");
	ok(c != NULL && c->restart, "threads: needs a restart");

	/* Kept, the new one says what runs; the live changes stay. */
	ok(config_keep_restart(&b, &a) == 0, "keep the running values");
	config_diff_free(&d);
	config_diff(&a, &b, &d);
	is_int(d.n, 0, "... then nothing differs");
	config_diff_free(&d);
	config_free(&a);
	config_free(&b);

	/* Port 0 made real: the address configured is compared. */
	diff_of("listen = 127.0.0.1:0\n", "listen = 127.0.0.1:0\n", &a, &b, &d);
	config_diff_free(&d);
	snprintf(a.listen[0].text, sizeof(a.listen[0].text), "127.0.0.1:41234");
	config_diff(&a, &b, &d);
	is_int(d.n, 0, "a bound port 0 is the same listen line");
	ok(config_keep_restart(&b, &a) == 0 &&
		strcmp(b.listen[0].text, "127.0.0.1:41234") == 0,
	    "... and the kept line has the port bound");
	config_diff_free(&d);
	config_free(&a);
	config_free(&b);
}

static void
test_access_log(void)
{
	static const struct {
		const char *a, *b;
		int restart;
		const char *what;
	} cases[] = {
		{ "on", "off", 0, "access-log on to off: live" },
		{ "off", "on", 0, "access-log off to on: live" },
		{ "/tmp/a.log", "/tmp/b.log", 0,
		    "access-log one file to another: live" },
		{ "/tmp/a.log", "off", 0, "access-log file to off: live" },
		{ "on", "/tmp/a.log", 1,
		    "access-log stderr to a file: needs a restart" },
		{ "/tmp/a.log", "on", 1,
		    "access-log a file to stderr: needs a restart" },
	};
	struct config a, b;
	struct config_diff d;
	const struct config_change *c;
	char ta[256], tb[256];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(ta, sizeof(ta), BASE "access-log = %s\n", cases[i].a);
		snprintf(tb, sizeof(tb), BASE "access-log = %s\n", cases[i].b);
		diff_of(ta, tb, &a, &b, &d);
		c = change(&d, "access-log");
		ok(c != NULL && c->restart == cases[i].restart, cases[i].what);
		config_diff_free(&d);
		config_free(&a);
		config_free(&b);
	}
	/* Off keeps the file: a later file is another file, live. */
	diff_of(BASE "access-log = /tmp/a.log\n", BASE "access-log = off\n", &a,
	    &b, &d);
	config_keep_restart(&b, &a);
	is_str(b.access_log_file, "/tmp/a.log", "off keeps the file open");
	config_diff_free(&d);
	config_free(&a);
	config_free(&b);
}

static void
test_shown(void)
{
	struct config a, b;
	struct config_diff d;
	const struct config_change *c;
	char *text;

	diff_of(BASE "upstream = http://joe:hunter2@127.0.0.1:1\n"
		     "upstream-header = * Authorization: Bearer s3cr3t\n",
	    BASE, &a, &b, &d);
	text =
	    config_option_text(&a, (size_t)config_opt_find("upstream", 8), 1);
	ok(text != NULL && strstr(text, "hunter2") == NULL &&
		strstr(text, "s3cr3t") == NULL &&
		strstr(text, "127.0.0.1:1") != NULL,
	    "an upstream shown: no password, no header value");
	free(text);
	config_diff_free(&d);
	config_free(&a);
	config_free(&b);

	setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI", 1);
	diff_of(BASE "store = s3 http://127.0.0.1:1 one\n",
	    BASE "store = s3 http://127.0.0.1:1 two\n", &a, &b, &d);
	c = change(&d, "store");
	ok(c != NULL && c->restart && c->was != NULL && c->now != NULL &&
		strstr(c->was, "one") != NULL &&
		strstr(c->now, "two") != NULL &&
		strstr(c->was, "wJalrXUtnFEMI") == NULL &&
		strstr(c->now, "AKIDEXAMPLE") == NULL,
	    "a store changed: needs a restart, shown without its keys");
	config_diff_free(&d);
	config_free(&a);
	config_free(&b);
}

/* The option of the message containing s, "-" when none, NULL if none. */
static const char *
about(const struct config_diag *diag, const char *s)
{
	size_t i;

	for (i = 0; i < diag->n; i++)
		if (strstr(diag->msgs[i], s) != NULL)
			return diag->opts[i] != NULL ? diag->opts[i] : "-";
	return NULL;
}

static void
test_diag(void)
{
	struct config c;
	struct config_diag diag;

	ok(load(BASE "acess = read any\n"
		     "negative-ttl = 1x\n"
		     "what is this\n"
		     "metrics-access = some\n"
		     "zzzzzzzz = 1\n"
		     "access read any\n"
		     "access read addr=10.0.0.0/8\n",
	       &c, &diag) == -1,
	    "a file with problems does not load");
	is_str(about(&diag, "acess"), "access",
	    "an unknown name: the option it is closest to");
	is_str(about(&diag, "negative-ttl"), "negative-ttl",
	    "a bad value: its option");
	is_str(about(&diag, "expected name = value"), "-",
	    "a line that is no setting: no option");
	is_str(about(&diag, "metrics-access"), "metrics-access",
	    "a bad word: its option");
	is_str(about(&diag, "zzzzzzzz"), "-",
	    "an unknown name near none: no option");
	is_str(about(&diag, ":10: expected"), "access",
	    "a line without '=': the option its first word names");
	is_str(about(&diag, "access read addr"), "access",
	    "... and a line whose '=' comes late");
	config_diag_free(&diag);
	config_free(&c);
}

int
main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test_confdiff.XXXXXX");
	if (mkdtemp(dir) == NULL) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	snprintf(path, sizeof(path), "%s/dbgmirror.conf", dir);
	test_changes();
	test_restart();
	test_access_log();
	test_shown();
	test_diag();
	unlink(path);
	rmdir(dir);
	return tap_done();
}
