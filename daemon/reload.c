/*
 * daemon/reload.c: the configuration's generations, and SIGHUP's reload
 * (daemon/reload.h).
 *
 * A generation is a snapshot (daemon/snapshot.h) with what it owns: its
 * configuration, the access rules made from it, and the request path's
 * parts with that configuration in them.  The first is made at start-up
 * from the configuration the daemon started with, which it does not own
 * (the parts made at start-up keep pointers into it).  Each reload makes
 * the next one, the main thread holds the newest, and each goes when its
 * last holder lets it go (the event-loop threads and their exchanges).
 *
 * A reload reads the file again with the command line over it, exactly as
 * at start-up, then:
 *
 *   - what differs from the running configuration is listed
 *     (conf/diff.h); each setting that cannot change live keeps its
 *     running value in the new configuration (config_keep_restart) and is
 *     logged, with both values, as needing a restart;
 *   - the result is checked as --check-config does (reload_check);
 *   - the long-lived parts get their new settings: the upstreams
 *     (sources/upstream.h: kept ones keep their breakers, fills under way
 *     finish with theirs), the repositories (sources/repo.h: kept ones keep
 *     their state and index), the package passes, the producers' TTLs and
 *     size limit, the cache's limits, the fills' limit, the missing-id
 *     report's size, the symbol tables kept open, the log level and the
 *     access log's file;
 *   - the symbol tables' builder takes the new snapshot, whose request
 *     path the files of tables begun from now on are asked on, and its
 *     number of builds at once (sources/symbuild.h);
 *   - the event-loop threads switch to the new snapshot (daemon/http.h),
 *     each on its own loop: requests begun before finish under theirs,
 *     and no connection is dropped;
 *   - once the last thread has taken it (or a later one), the reload's
 *     line is logged, counted in the metrics and told to the caller, on
 *     that thread: an operator, or a test, who sees "reloaded" and then
 *     sends a request has it answered under the new settings, whichever
 *     thread takes it.
 *
 * A file that does not load (a parse error, a check that fails) changes
 * nothing, but for the access rules, which are security-relevant and so
 * never keep what the file no longer says: they are made from the file as
 * far as it reads (access_new_failsafe: each access line that parses
 * applies, a class whose line does not parse denies everyone), and a
 * setting of the file that did not read (a bad value, or a line whose name
 * is, or is close to, the setting's: conf/config.h) closes what it
 * governs -- metrics-access: /metrics and /status; admin-access,
 * admin-token: the admin endpoints; access, trusted-proxy: every class --
 * until a reload reads it.  Token files are read again either way, each
 * line that does not parse dropped, a file that cannot be read leaving
 * none of its tokens valid.
 */
#include "daemon/reload.h"

#include <openssl/ssl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/blobstore.h"
#include "cache/flight.h"
#include "conf/check.h"
#include "conf/config.h"
#include "conf/diff.h"
#include "daemon/clock.h"
#include "daemon/http.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/misses.h"
#include "daemon/snapshot.h"
#include "daemon/symtabs.h"
#include "daemon/tls.h"
#include "fetchers/upstream.h"
#include "resolver/produce.h"
#include "resolver/resolve.h"
#include "sources/pass.h"
#include "sources/repo.h"
#include "sources/symbuild.h"
#include "sources/upstream.h"

struct generation {
	struct snapshot s;
	struct config cfg; /* its own, when own_cfg */
	int own_cfg;
	/* The generation whose configuration s shares, held; NULL: none. */
	struct snapshot *base;
	struct resolve_deps rd;
};

static void
generation_release(struct snapshot *s)
{
	struct generation *g = (struct generation *)s;

	access_free(s->access);
	if (g->own_cfg)
		config_free(&g->cfg);
	snapshot_unref(g->base);
	free(g);
}

/* g's snapshot of cfg and a, the request path's parts p->rd with cfg. */
static void
generation_set(struct generation *g, const struct reload_parts *p,
    const struct config *cfg, struct access *a)
{
	atomic_init(&g->s.refs, 1);
	g->s.release = generation_release;
	g->s.cfg = cfg;
	g->s.access = a;
	g->rd = *p->rd;
	g->rd.cfg = cfg;
	g->rd.misses = cfg->misses_max > 0 ? p->misses : NULL;
	g->s.rd = &g->rd;
}

struct snapshot *
reload_first(const struct reload_parts *p, const struct config *cfg,
    struct access *a)
{
	struct generation *g;

	if ((g = calloc(1, sizeof(*g))) == NULL)
		return NULL;
	generation_set(g, p, cfg, a);
	symbuilds_switch(p->symbuild, &g->s);
	return &g->s;
}

/* ------------------------------------------------------------- checks */

/* reload_check's problems: counted, then told to the caller's say. */
struct counted {
	access_say_fn say;
	void *arg;
	size_t n;
};

static void
count_problem(void *arg, const char *msg)
{
	struct counted *c = arg;

	c->n++;
	c->say(c->arg, msg);
}

void
reload_audit(const struct config *cfg, const struct access *a,
    access_say_fn say, void *arg)
{
	char msg[512];

	access_audit(a, cfg, say, arg);
	if (cfg->upstream_redirects == CONFIG_REDIRECTS_ANY) {
		snprintf(msg, sizeof(msg),
		    "upstream-redirects = any (%s): an upstream's redirects "
		    "are followed to any host but this server's listeners, "
		    "internal services included",
		    config_where(cfg, "upstream-redirects", 0));
		say(arg, msg);
	}
	if (cfg->repo_redirects == CONFIG_REDIRECTS_ANY) {
		snprintf(msg, sizeof(msg),
		    "repo-redirects = any (%s): a repository's redirects are "
		    "followed to any host but this server's listeners, "
		    "internal services included",
		    config_where(cfg, "repo-redirects", 0));
		say(arg, msg);
	}
	if (!cfg->sandbox) {
		snprintf(msg, sizeof(msg),
		    "sandbox = off (%s): the workers that parse packages, "
		    "ELF files and repository metadata from outside run "
		    "unfenced",
		    config_where(cfg, "sandbox", 0));
		say(arg, msg);
	}
}

size_t
reload_check(const struct config *cfg, access_say_fn problem,
    access_say_fn warning, void *arg, struct access **ap)
{
	struct counted c = { problem, arg, 0 };
	struct config_diag diag = { 0 };
	char err[512], msg[700];
	struct access *a;
	SSL_CTX *ctx;
	size_t i;

	config_check_paths(cfg, &diag);
	for (i = 0; i < diag.n; i++)
		count_problem(&c, diag.msgs[i]);
	config_diag_free(&diag);
	/* Each TLS listener's cert and key load and match. */
	for (i = 0; i < cfg->nlisten; i++) {
		if (!cfg->listen[i].tls)
			continue;
		if ((ctx = tls_ctx_new(&cfg->listen[i], err, sizeof(err))) ==
		    NULL) {
			snprintf(msg, sizeof(msg), "listen %s: %s",
			    cfg->listen[i].text, err);
			count_problem(&c, msg);
		}
		SSL_CTX_free(ctx);
	}
	/* The access rules, token-file (a line dropped is a problem too). */
	if ((a = access_new(cfg, count_problem, &c, err, sizeof(err))) ==
	    NULL) {
		count_problem(&c, err);
	} else {
		reload_audit(cfg, a, warning, arg);
		if (ap != NULL)
			*ap = a;
		else
			access_free(a);
	}
	return c.n;
}

/* ------------------------------------------------------------- reload */

static void
say_warn(void *arg, const char *msg)
{
	(void)arg;
	log_warnx("reload: %s", msg);
}

/* A reload's problems: logged as they come, the first kept for /status. */
struct problems {
	size_t n;
	char first[512];
};

static void
say_problem(void *arg, const char *msg)
{
	struct problems *pr = arg;

	if (pr->n++ == 0)
		snprintf(pr->first, sizeof(pr->first), "%s", msg);
	log_warnx("reload: %s", msg);
}

/*
 * The classes of access a file that did not load cannot be trusted with,
 * from the settings its problems are about (see the top of this file).
 */
static unsigned
untrusted(const struct config_diag *diag)
{
	static const struct {
		const char *name;
		unsigned classes;
	} closes[] = {
		{ "access", ACCESS_ALL },
		{ "trusted-proxy", ACCESS_ALL },
		{ "metrics-access",
		    1u << ACCESS_METRICS | 1u << ACCESS_STATUS },
		{ "admin-access", 1u << ACCESS_ADMIN },
		{ "admin-token", 1u << ACCESS_ADMIN },
	};
	unsigned closed = 0;
	size_t i, k;

	for (i = 0; i < diag->n; i++)
		for (k = 0; diag->opts[i] != NULL &&
		     k < sizeof(closes) / sizeof(closes[0]);
		     k++)
			if (strcmp(diag->opts[i], closes[k].name) == 0)
				closed |= closes[k].classes;
	return closed;
}

/* What the configuration says in words, for the log. */
static const char *
source_of(const struct config *cfg, const struct config_args *args)
{
	if (cfg->config_file != NULL)
		return cfg->config_file;
	return args->no_config ? "the command line (--no-config)"
			       : "the command line (no file)";
}

/*
 * 1 when an upstream's number is the same in its lines a and b, or each
 * is its configuration's global one (ga, gb): a change of the global
 * setting, which the summary names itself.
 */
static int
same_number(unsigned a, unsigned b, unsigned ga, unsigned gb)
{
	return a == b || (a == ga && b == gb);
}

/* 1 when upstream lines a of ca and b of cb (one URL) say the same. */
static int
upstream_same(const struct config *ca, const struct config_upstream *a,
    const struct config *cb, const struct config_upstream *b)
{
	size_t i;

	if (a->enabled != b->enabled ||
	    !same_number(a->connect_timeout, b->connect_timeout,
		ca->upstream_connect_timeout, cb->upstream_connect_timeout) ||
	    !same_number(a->first_byte_timeout, b->first_byte_timeout,
		ca->upstream_first_byte_timeout,
		cb->upstream_first_byte_timeout) ||
	    !same_number(a->min_rate, b->min_rate, ca->upstream_min_rate,
		cb->upstream_min_rate) ||
	    !same_number(a->negative_ttl, b->negative_ttl, ca->negative_ttl,
		cb->negative_ttl) ||
	    !same_number(a->error_ttl, b->error_ttl, ca->error_ttl,
		cb->error_ttl) ||
	    a->headers.n != b->headers.n)
		return 0;
	for (i = 0; i < a->headers.n; i++)
		if (strcmp(a->headers.v[i], b->headers.v[i]) != 0)
			return 0;
	return 1;
}

/* Upstreams of both old and now whose own settings differ. */
static unsigned
upstreams_changed(const struct config *old, const struct config *now)
{
	unsigned n = 0;
	size_t i, j;

	for (i = 0; i < now->nupstreams; i++)
		for (j = 0; j < old->nupstreams; j++)
			if (strcmp(now->upstreams[i].url,
				old->upstreams[j].url) == 0 &&
			    !upstream_same(old, &old->upstreams[j], now,
				&now->upstreams[i]))
				n++;
	return n;
}

/* 1 when option name is one of the access settings. */
static int
is_access(const char *name)
{
	static const char *const names[] = { "access", "trusted-proxy",
		"token-file", "admin-token", "metrics-access", "admin-access" };
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(name, names[i]) == 0)
			return 1;
	return 0;
}

/* "N things verb" as a part of the summary line, if N. */
static void
counted_part(FILE *fp, const char **sep, unsigned n, const char *one,
    const char *many, const char *verb)
{
	if (n == 0)
		return;
	fprintf(fp, "%s%u %s %s", *sep, n, n == 1 ? one : many, verb);
	*sep = ", ";
}

/*
 * The one line that says what a reload changed: "1 upstream added, 1
 * repository removed, access rules changed, negative-ttl changed; listen
 * needs a restart".
 */
static void
summary(FILE *fp, const struct config_diff *d,
    const struct upstream_changes *uc, unsigned uchanged,
    const struct repos_changes *rc)
{
	const char *sep = "";
	int access = 0, other = 0, restart = 0;
	size_t i;

	counted_part(fp, &sep, uc->added, "upstream", "upstreams", "added");
	counted_part(fp, &sep, uc->removed, "upstream", "upstreams", "removed");
	counted_part(fp, &sep, uchanged, "upstream", "upstreams", "changed");
	counted_part(fp, &sep, rc->added, "repository", "repositories",
	    "added");
	counted_part(fp, &sep, rc->removed, "repository", "repositories",
	    "removed");
	for (i = 0; i < d->n; i++)
		access |= is_access(d->v[i].name);
	if (access) {
		fprintf(fp, "%saccess rules changed", sep);
		sep = ", ";
	}
	for (i = 0; i < d->n; i++) {
		if (d->v[i].restart || is_access(d->v[i].name) ||
		    strcmp(d->v[i].name, "upstream") == 0 ||
		    strcmp(d->v[i].name, "repo") == 0)
			continue;
		fprintf(fp, "%s%s", sep, d->v[i].name);
		sep = ", ";
		other++;
	}
	if (other > 0)
		fputs(" changed", fp);
	for (i = 0; i < d->n; i++) {
		if (!d->v[i].restart)
			continue;
		fprintf(fp, "%s%s",
		    restart++ > 0      ? ", "
			: *sep != '\0' ? "; "
				       : "",
		    d->v[i].name);
	}
	if (restart > 0)
		fprintf(fp, " need%s a restart", restart == 1 ? "s" : "");
	else if (*sep == '\0')
		fputs("nothing changed", fp);
}

/* A value of a setting that needs a restart, on one line. */
static void
one_line(char *s)
{
	for (; *s != '\0'; s++)
		if (*s == '\n')
			*s = ';';
}

/* The parts get what changed of their settings (see the top). */
static void
apply(const struct reload_parts *p, const struct config *old,
    const struct config *cfg, struct upstream_changes *uc,
    struct repos_changes *rc)
{
	struct blob_limits lim;
	char err[512];
	int level = (int)cfg->log_level + p->verbose;

	if (upstreams_apply(p->upstreams, cfg, uc) == -1)
		log_warnx("reload: upstreams: out of memory; some may keep "
			  "their settings of before");
	if (repos_apply(p->repos, cfg, rc, err, sizeof(err)) == -1)
		log_warnx("reload: %s", err);
	passes_apply(p->passes, cfg);
	producers_max_size(p->prod, cfg->max_object_size);
	lim.max_bytes = cfg->cache_size;
	lim.high_pct = cfg->cache_high_watermark;
	lim.low_pct = cfg->cache_low_watermark;
	lim.min_free_pct = cfg->min_free_disk;
	lim.upload_max_bytes = cfg->upload_size;
	blobstore_set_limits(p->bs, &lim);
	flight_table_set_max(p->ft, cfg->max_fills);
	misses_set_max(p->misses, cfg->misses_max);
	symtabs_set_limits(p->tabs, cfg->symbolicate_open_tables,
	    cfg->symbolicate_open_bytes);
	log_set_level(level > LOG_DEBUG ? LOG_DEBUG : level);
	if (old->access_log_file != NULL && cfg->access_log_file != NULL &&
	    strcmp(old->access_log_file, cfg->access_log_file) != 0 &&
	    log_access_reopen(cfg->access_log_file, err, sizeof(err)) == -1)
		log_warnx("reload: %s; the access log goes on in %s", err,
		    old->access_log_file);
}

/*
 * What a reload tells once every event-loop thread has switched to its
 * snapshot: its line, its count in the metrics, the caller's done.
 */
struct told {
	struct httpd_switched sw;
	int ok; /* the file loaded */
	char *line; /* the log line */
	char why[700]; /* a failure's, for the metrics and /status */
	reload_done_fn *done;
	void *arg;
};

/* The told's line, made with fmt. */
static void __attribute__((format(printf, 2, 3)))
told_line(struct told *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&t->line, fmt, ap) == -1)
		t->line = NULL;
	va_end(ap);
}

/* Any thread: t's news, unless the threads stopped before taking it. */
static void
told_cb(struct httpd_switched *sw, int taken)
{
	struct told *t = (struct told *)sw;
	const char *line = t->line != NULL ? t->line : "reload: out of memory";

	if (taken) {
		/* Counted first: who sees the line sees the count. */
		metrics_config_reload(t->ok, clock_now(),
		    t->ok ? NULL : t->why);
		if (t->ok)
			log_info("%s", line);
		else
			log_warnx("%s", line);
		if (t->done != NULL)
			t->done(t->arg, t->ok);
	}
	free(t->line);
	free(t);
}

/*
 * The file did not load: g becomes a generation of cur's configuration
 * with the access rules of g's as far as they read.  NULL when out of
 * memory.
 */
static struct snapshot *
failed(const struct reload_parts *p, struct snapshot *cur, struct generation *g,
    const struct config_diag *diag, const struct problems *pr, struct told *t)
{
	struct access *a;

	a = access_new_failsafe(&g->cfg, untrusted(diag), say_warn, NULL);
	if (a == NULL)
		return NULL;
	config_free(&g->cfg);
	g->own_cfg = 0;
	g->base = snapshot_ref(cur);
	generation_set(g, p, cur->cfg, a);
	if (pr->n == 1)
		snprintf(t->why, sizeof(t->why), "%s", pr->first);
	else
		snprintf(t->why, sizeof(t->why), "%zu problems, the first: %s",
		    pr->n, pr->first);
	told_line(t,
	    "reload failed: %s did not load (%zu problem%s above): "
	    "nothing changed but the access rules, taken from it as "
	    "far as they read%s",
	    source_of(cur->cfg, p->args), pr->n, pr->n == 1 ? "" : "s",
	    access_closed(a) != 0 ? ", some classes closed to every client"
				  : "");
	return &g->s;
}

struct snapshot *
reload_run(const struct reload_parts *p, struct snapshot *cur,
    reload_done_fn *done, void *arg)
{
	const struct config *old = cur->cfg;
	struct config_args args = *p->args;
	struct config_diag diag = { 0 };
	struct config_diff d = { 0 };
	struct upstream_changes uc;
	struct repos_changes rc;
	struct problems pr = { 0, "" };
	struct generation *g = NULL;
	struct snapshot *s = NULL;
	struct access *a = NULL;
	struct told *t;
	char *line = NULL;
	size_t i, len = 0;
	unsigned uchanged;
	FILE *fp;
	int loaded;

	/* The same file as at start-up: gone, it is an error, not none. */
	if (old->config_file != NULL)
		args.config_file = old->config_file;
	if ((t = calloc(1, sizeof(*t))) == NULL ||
	    (g = calloc(1, sizeof(*g))) == NULL || config_init(&g->cfg) == -1)
		goto nomem;
	t->sw.fn = told_cb;
	t->done = done;
	t->arg = arg;
	g->own_cfg = 1;
	loaded = config_load(&g->cfg, &args, &diag) == 0;
	for (i = 0; i < diag.n; i++)
		say_problem(&pr, diag.msgs[i]);
	if (loaded) {
		if (g->cfg.threads == 0)
			g->cfg.threads = p->cpus;
		if (g->cfg.workers == 0)
			g->cfg.workers = p->cpus;
		if (config_diff(old, &g->cfg, &d) == -1)
			goto nomem;
	}
	if (config_keep_restart(&g->cfg, old) == -1)
		goto nomem;
	if (loaded &&
	    reload_check(&g->cfg, say_problem, say_warn, &pr, &a) > 0) {
		access_free(a);
		loaded = 0;
	}
	if (!loaded) {
		if ((s = failed(p, cur, g, &diag, &pr, t)) == NULL)
			goto nomem;
		config_diag_free(&diag);
		config_diff_free(&d);
		httpd_switch(p->httpd, s, &t->sw);
		return s;
	}
	config_diag_free(&diag);
	for (i = 0; i < d.n; i++) {
		if (!d.v[i].restart)
			continue;
		one_line(d.v[i].was);
		one_line(d.v[i].now);
		log_warnx("reload: %s: %s in the file, %s running: it needs a "
			  "restart",
		    d.v[i].name, d.v[i].now, d.v[i].was);
	}
	uchanged = upstreams_changed(old, &g->cfg);
	generation_set(g, p, &g->cfg, a);
	apply(p, old, &g->cfg, &uc, &rc);
	symbuilds_switch(p->symbuild, &g->s);
	if ((fp = open_memstream(&line, &len)) != NULL) {
		summary(fp, &d, &uc, uchanged, &rc);
		fclose(fp);
	}
	t->ok = 1;
	told_line(t, "reloaded %s: %s", source_of(&g->cfg, p->args),
	    line != NULL ? line : "out of memory");
	free(line);
	config_diff_free(&d);
	httpd_switch(p->httpd, &g->s, &t->sw);
	return &g->s;
nomem:
	log_warnx("reload: out of memory: nothing changed");
	metrics_config_reload(0, clock_now(), "out of memory");
	config_diag_free(&diag);
	config_diff_free(&d);
	if (g != NULL && g->own_cfg)
		config_free(&g->cfg);
	free(g);
	free(t);
	if (done != NULL)
		done(arg, 0);
	return snapshot_ref(cur);
}
