/*
 * cli/admin.c: dbgmirror and the running daemon: where it is, the
 * settings it takes from it (GET /admin/config), dbgmirror rescan
 * (/admin/rescan), and the bearer token of the commands that send it
 * requests (upload, symbolicate).
 *
 * The daemon is the one at --url, else at the configuration's first
 * listen address.  Admin requests carry the admin token when the
 * configuration names an admin-token file this user can read.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "daemon/clock.h"
#include "daemon/json.h"
#include "fetchers/ask.h"

/* How often dbgmirror rescan asks how far the scan got. */
#define RESCAN_POLL_MS 200
/* How long it waits for the scan by default (--wait). */
#define RESCAN_WAIT_DEFAULT 600

int
cli_daemon_url(const struct cli *c, char *out, size_t len)
{
	const struct config *cfg = &c->cfg;
	const char *text, *colon, *scheme;

	if (c->url != NULL) {
		if (strncmp(c->url, "http://", 7) != 0 &&
		    strncmp(c->url, "https://", 8) != 0)
			return -1;
		snprintf(out, len, "%s", c->url);
	} else {
		if (cfg->nlisten == 0)
			return -1;
		text = cfg->listen[0].text;
		if ((colon = strrchr(text, ':')) == NULL)
			return -1;
		scheme = cfg->listen[0].tls ? "https" : "http";
		if (strncmp(text, "0.0.0.0:", 8) == 0)
			snprintf(out, len, "%s://127.0.0.1%s", scheme, colon);
		else if (strncmp(text, "[::]:", 5) == 0)
			snprintf(out, len, "%s://[::1]%s", scheme, colon);
		else
			snprintf(out, len, "%s://%s", scheme, text);
	}
	while (strlen(out) > 0 && out[strlen(out) - 1] == '/')
		out[strlen(out) - 1] = '\0';
	return 0;
}

/* The admin token of the configuration, when this user can read it. */
static const char *
admin_token(const struct config *cfg, char *buf, size_t len)
{
	FILE *fp;
	char *p;

	if (cfg->admin_token_file == NULL ||
	    (fp = fopen(cfg->admin_token_file, "re")) == NULL)
		return NULL;
	p = fgets(buf, (int)len, fp);
	fclose(fp);
	if (p == NULL)
		return NULL;
	p += strspn(p, " \t");
	p[strcspn(p, " \t\r\n")] = '\0';
	return *p != '\0' ? p : NULL;
}

/* One admin request to the daemon at base; the answer in *a. */
static int
ask(const struct cli *c, const char *method, const char *base, const char *path,
    struct ask_answer *a, char *err, size_t errlen)
{
	char url[4200], tok[1024];
	/* Admin answers are a few hundred bytes; short deadlines. */
	struct ask_opts o = { admin_token(&c->cfg, tok, sizeof(tok)),
		c->cfg.ca_file, 2, 10000, 64 * 1024 };

	snprintf(url, sizeof(url), "%s%s", base, path);
	return ask_request(method, url, NULL, 0, &o, a, err, errlen);
}

/* The member name of an answer's JSON, into out (len bytes): 0 or -1. */
static int
member(const struct ask_answer *a, const char *name, char *out, size_t len)
{
	struct jbuf b = { NULL, 0, 0, len, 0 };
	int rc;

	rc = a->body != NULL ? json_get(a->body, a->len, name, &b) : -1;
	if (rc == 1 && !b.full && b.p != NULL)
		snprintf(out, len, "%s", b.p);
	jbuf_free(&b);
	return rc == 1 && out[0] != '\0' ? 0 : -1;
}

/* A number member of an answer; 0 when it is not there. */
static uint64_t
member_u64(const struct ask_answer *a, const char *name)
{
	char v[32] = "";

	member(a, name, v, sizeof(v));
	return strtoull(v, NULL, 10);
}

/* Replace *field (a string of cfg) with value. */
static void
replace(char **field, const char *value)
{
	char *s;

	if ((s = strdup(value)) == NULL)
		return;
	free(*field);
	*field = s;
}

void
cli_settings(struct cli *c)
{
	struct ask_answer a;
	char v[4096], err[512];

	if (c->no_config || c->cache_dir_given ||
	    cli_daemon_url(c, c->daemon_url, sizeof(c->daemon_url)) == -1)
		return;
	/* No daemon there: the configuration's settings, said nowhere. */
	if (ask(c, "GET", c->daemon_url, "/admin/config", &a, err,
		sizeof(err)) == -1)
		return;
	if (a.status != 200 || member(&a, "cache_dir", v, sizeof(v)) == -1) {
		snprintf(c->settings_note, sizeof(c->settings_note),
		    "the dbgmirrord at %.400s did not tell its settings (HTTP "
		    "%ld%s); this is the configuration's cache-dir",
		    c->daemon_url, a.status,
		    a.status == 401 ? ": it wants the admin token" : "");
		ask_answer_free(&a);
		return;
	}
	replace(&c->cfg.cache_dir, v);
	if (member(&a, "upload_dir", v, sizeof(v)) == 0)
		replace(&c->cfg.upload_dir, v);
	if (member(&a, "upstreams", v, sizeof(v)) == 0)
		snprintf(c->daemon_upstreams, sizeof(c->daemon_upstreams), "%s",
		    v);
	c->cfg.index_map_size = member_u64(&a, "index_map_size");
	c->cfg.cache_size = member_u64(&a, "cache_size");
	c->cfg.upload_size = member_u64(&a, "upload_size");
	c->cfg.negative_max = (unsigned)member_u64(&a, "negative_max");
	c->daemon_pid = (long)member_u64(&a, "pid");
	c->from_daemon = 1;
	ask_answer_free(&a);
}

/* The scan of a GET /admin/rescan answer, in words, on fp. */
static void
print_scan(FILE *fp, const struct ask_answer *a)
{
	char secs[32] = "?", outcome[32] = "?";

	member(a, "seconds", secs, sizeof(secs));
	member(a, "outcome", outcome, sizeof(outcome));
	fprintf(fp,
	    "scan %s in %ss: %" PRIu64 " files seen, %" PRIu64
	    " new or changed, %" PRIu64 " read, %" PRIu64
	    " not indexable, %" PRIu64
	    " records of vanished files removed; %" PRIu64
	    " packages seen, %" PRIu64 " read (%" PRIu64 " servable members)\n",
	    outcome, secs, member_u64(a, "files_seen"),
	    member_u64(a, "files_new"), member_u64(a, "files_read"),
	    member_u64(a, "not_indexable"), member_u64(a, "removed"),
	    member_u64(a, "packages_seen"), member_u64(a, "packages_read"),
	    member_u64(a, "members"));
}

/* The reason of an admin answer that is not a success, for a person. */
static const char *
refusal(const struct ask_answer *a, char *buf, size_t len)
{
	size_t n = a->body != NULL ? strcspn(a->body, "\r\n") : 0;

	snprintf(buf, len, "HTTP %ld%s%.*s%s", a->status, n > 0 ? ": " : "",
	    (int)(n > 200 ? 200 : n), n > 0 ? a->body : "",
	    a->status == 401
		? " (admin-token: the token the daemon's file holds)"
		: a->status == 403 ? " (admin-access: run this on the daemon's "
				     "machine, or open it)"
				   : "");
	return buf;
}

/*
 * dbgmirror rescan: ask the daemon for a rescan now, then wait (--wait
 * SECONDS, 600 by default; 0: do not wait) for a scan that covers it to
 * finish, and say what it found.  0 done; 1 no daemon, refused, or the
 * wait ran out.
 */
int
cmd_rescan(struct cli *c)
{
	struct ask_answer a;
	char base[4096], err[512], why[512];
	uint64_t n, done = 0;
	unsigned long wait = RESCAN_WAIT_DEFAULT;
	int64_t t0 = clock_mono_ns() / 1000000, deadline;
	char *end;

	if (c->wait != NULL) {
		errno = 0;
		wait = strtoul(c->wait, &end, 10);
		if (errno != 0 || end == c->wait || *end != '\0' ||
		    wait > 86400) {
			fprintf(stderr,
			    "dbgmirror: rescan: --wait: seconds, 0 to 86400\n");
			return 2;
		}
	}
	if (cli_daemon_url(c, base, sizeof(base)) == -1) {
		fprintf(stderr,
		    "dbgmirror: rescan: no daemon URL (--url "
		    "http://HOST:PORT)\n");
		return 2;
	}
	if (ask(c, "POST", base, "/admin/rescan", &a, err, sizeof(err)) == -1) {
		fprintf(stderr,
		    "dbgmirror: rescan: no dbgmirrord answers: %s\n", err);
		return 1;
	}
	if (a.status != 202) {
		fprintf(stderr, "dbgmirror: rescan: %s refused: %s\n", base,
		    refusal(&a, why, sizeof(why)));
		ask_answer_free(&a);
		return 1;
	}
	n = member_u64(&a, "rescan");
	ask_answer_free(&a);
	if (!c->json)
		fprintf(stderr, "dbgmirror: rescan %" PRIu64 " asked of %s%s\n",
		    n, base, wait > 0 ? "; waiting for it" : "");
	if (wait == 0)
		return 0;
	deadline = t0 + (int64_t)wait * 1000;
	for (;;) {
		if (ask(c, "GET", base, "/admin/rescan", &a, err,
			sizeof(err)) == -1) {
			fprintf(stderr, "dbgmirror: rescan: %s\n", err);
			return 1;
		}
		if (a.status != 200) {
			fprintf(stderr, "dbgmirror: rescan: %s\n",
			    refusal(&a, why, sizeof(why)));
			ask_answer_free(&a);
			return 1;
		}
		if ((done = member_u64(&a, "done")) >= n)
			break;
		ask_answer_free(&a);
		if (clock_mono_ns() / 1000000 >= deadline) {
			fprintf(stderr,
			    "dbgmirror: rescan: the scan did not finish within "
			    "%lus (--wait); it goes on in the daemon\n",
			    wait);
			return 1;
		}
		usleep(RESCAN_POLL_MS * 1000);
	}
	if (c->json)
		printf("%s%s", a.body,
		    a.len > 0 && a.body[a.len - 1] == '\n' ? "" : "\n");
	else
		print_scan(stdout, &a);
	ask_answer_free(&a);
	return 0;
}

int
cli_token(const char *cmd, const char *file, char *out, size_t len)
{
	const char *env = getenv("DBGMIRROR_TOKEN");
	FILE *fp;

	out[0] = '\0';
	if (file != NULL) {
		if ((fp = fopen(file, "re")) == NULL) {
			fprintf(stderr, "dbgmirror: %s: %s: %s\n", cmd, file,
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
	return 0;
}
