/*
 * sources/repo.c: remote repositories as a source, its request side:
 * finding an id in their index, the requests that wait for the first
 * refreshes, the repositories' loop, state and metrics (see
 * sources/repo.h; the downloads and the fills of members are
 * sources/repodl.c, the refresh sources/reposync.c, the readiness they
 * share sources/repoready.c).
 *
 * An id no repository maps may be the alt file of a package a pass reads:
 * the passes' flights are looked up by key (passes_find).  While the first
 * refreshes run (repos_starting()), a request for an id nothing maps waits
 * for them (parked, woken by one watcher for all) and is asked again; a
 * not-found answer while a refresh runs carries a short max-age, and the
 * reason repos_why_absent() gives.
 *
 * Threads: the repositories' state and the transfers belong to the fills'
 * loop; the download queue, the parked requests and the counters are
 * shared (mu, atomics).
 */
#include "sources/repo_int.h"

#include <event2/event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/flight.h"
#include "cache/index.h"
#include "cache/pkgindex.h"
#include "conf/config.h"
#include "daemon/clock.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "fetchers/repofetch.h"
#include "resolver/produce.h"
#include "resolver/rq.h"
#include "sources/pass.h"
#include "sources/sources.h"

/* The max-age of a not-found answer while a refresh runs. */
#define REFRESHING_MAX_AGE 5

/* A request parked until the first refreshes end. */
struct parked {
	struct rq_park *pk;
	struct parked *next;
};

/* ------------------------------------------------------------- source */

/* pkgidx_find: any member will do. */
static int
member_cb(const struct pkg_rec *r, void *arg)
{
	return 1;
}

/* A parked request's client left: forget it (rq_park's gone). */
static void
repo_park_gone(struct rq_park *pk, void *arg)
{
	struct repos *rs = arg;
	struct parked **pp, *q;

	pthread_mutex_lock(&rs->mu);
	for (pp = &rs->parked; *pp != NULL; pp = &(*pp)->next) {
		if ((*pp)->pk == pk) {
			q = *pp;
			*pp = q->next;
			free(q);
			break;
		}
	}
	pthread_mutex_unlock(&rs->mu);
}

/*
 * The fills' loop, once the first refreshes ended (the one watcher of
 * repos_when_ready): every parked request asks again, on its loop.
 */
static void
repo_ready_wake(void *arg)
{
	struct repos *rs = arg;
	struct parked *q, *next;

	pthread_mutex_lock(&rs->mu);
	rs->ready_seen = 1;
	q = rs->parked;
	rs->parked = NULL;
	for (; q != NULL; q = next) {
		next = q->next;
		rq_unpark(q->pk);
		free(q);
	}
	pthread_mutex_unlock(&rs->mu);
}

/*
 * No repository maps rq's id while their first refreshes run: 1 when rq
 * is parked until they end (*r its result: SRC_PENDING, or its answer),
 * 0 when they ended meanwhile (or no memory: it goes on).
 */
static int
repo_park(struct rq *rq, struct repos *rs, enum src_result *r)
{
	struct parked *q;
	int rc;

	pthread_mutex_lock(&rs->mu);
	if (!rs->ready_seen && !rs->watching) {
		rc = repos_when_ready(rs, repo_ready_wake, rs);
		rs->ready_seen = rc == 1;
		rs->watching = rc == 0;
	}
	if (rs->ready_seen || !rs->watching ||
	    (q = malloc(sizeof(*q))) == NULL) {
		pthread_mutex_unlock(&rs->mu);
		return 0;
	}
	if ((*r = rq_park(rq, &q->pk, repo_park_gone, rs)) == SRC_PENDING &&
	    q->pk != NULL) {
		q->next = rs->parked;
		rs->parked = q;
	} else {
		free(q);
	}
	pthread_mutex_unlock(&rs->mu);
	return 1;
}

/*
 * In rq's transaction: why no repository serves rq's id, in the words of
 * repos_why_absent(), as rq's note: of a repository in its first refresh,
 * else of one with an index, else of the first.
 */
static void
repo_note(struct rq *rq, struct repos *rs)
{
	struct repoidx_state st, best;
	char why[320];
	size_t i, b = 0;
	int rank, brank = -1;

	for (i = 0; i < rs->n; i++) {
		if (repoidx_state(rq->th->rd, rs->v[i].key, &st) == -1)
			continue;
		rank = st.gen == 0 && st.running != 0 ? 2 : st.gen != 0;
		if (rank > brank) {
			brank = rank;
			best = st;
			b = i;
		}
	}
	if (brank == -1)
		return;
	repos_why_absent(&best, 0, why, sizeof(why));
	snprintf(rq->note, sizeof(rq->note), "repo %.100s: %.290s",
	    rs->v[b].cr->name, why);
}

/*
 * For an upload's judgement (resolve_client.judge) that no repository
 * gives the id: the first that could not say (rq_unasked).  While their
 * first refreshes run, or one was never indexed, an id none maps may be
 * one it is about to bring; open (repo_find's) holds it but cannot
 * download.
 */
static void
repos_unasked(struct repos *rs, struct rq *rq, size_t open)
{
	struct repoidx_state st;
	char text[256];
	size_t i, n = rs->n;

	if (open > 0) {
		snprintf(text, sizeof(text),
		    "repository %.180s: its downloads are failing",
		    rs->v[open - 1].cr->name);
		rq_unasked(rq, text);
		return;
	}
	if (repos_starting(rs)) {
		rq_unasked(rq,
		    "repositories: their first refresh has not ended");
		return;
	}
	for (i = 0; i < n; i++) {
		if (!atomic_load(&rs->v[i].live) ||
		    (repoidx_state(rq->th->rd, rs->v[i].key, &st) == 0 &&
			st.gen != 0))
			continue;
		snprintf(text, sizeof(text),
		    "repository %.180s: not indexed yet", rs->v[i].cr->name);
		rq_unasked(rq, text);
		return;
	}
}

/*
 * The request side: a debuginfo or executable a repository's index maps to
 * a package not in the package cache yet (one that is, or a local package
 * with the member, is the package step's), or that a pass over a package
 * still downloading fills (an alt file no index maps yet).  An id nothing
 * maps waits for the first refreshes; when it passes, it says why.
 */
static enum src_result
repo_lookup(struct rq *rq)
{
	const struct resolve_deps *d = rq->d;
	struct repos *rs = d->repos;
	enum route_endpoint ep = rq->rt->endpoint;
	struct repo_want *rw;
	struct prod_what w;
	struct cache_key k;
	struct flight *f;
	enum src_result r;
	unsigned retry = 0;
	size_t open;
	int rc;

	if (rs == NULL || repos_count(rs) == 0 || d->prod == NULL ||
	    (ep != ROUTE_DEBUGINFO && ep != ROUTE_EXECUTABLE))
		return SRC_ABSENT;
	if (rq_txn(rq) == -1)
		return rq_fail(rq, "index unavailable");
	if (pkgidx_find(rq->th->rd, &rq->rt->id,
		ep == ROUTE_EXECUTABLE ? ELF_KIND_EXECUTABLE
				       : ELF_KIND_DEBUGINFO,
		member_cb, NULL) == 1)
		return SRC_ABSENT;
	if ((rw = calloc(1, sizeof(*rw))) == NULL)
		return rq_fail(rq, "out of memory");
	rc = repo_find(rs, rq->th->rd, &rq->rt->id, ep == ROUTE_EXECUTABLE,
	    &rw->hit, &retry, &open);
	if (rc != 1)
		free(rw);
	if (rc == -1)
		return rq_fail(rq, "index lookup failed");
	if (rc == 2)
		return rq_outcome(rq, ANSWER_REPO_FAILING, NULL, retry, NULL);
	if (rc == 1) {
		rq_what(rq, &w);
		w.limit = 0;
		return rq_produce(rq, &w, rw);
	}
	rq_key(rq, &k);
	if (d->packages != NULL && (f = passes_find(d->packages, &k)) != NULL)
		return rq_join(rq, f);
	/* An upload's judgement does not wait: it hears who could not say. */
	if (rq->cl.judge) {
		repos_unasked(rs, rq, open);
		return SRC_ABSENT;
	}
	if (repos_starting(rs) && repo_park(rq, rs, &r))
		return r;
	repo_note(rq, rs);
	/* A refresh may bring it: clients should ask again soon. */
	if (repos_refreshing(rs))
		rq->max_age = REFRESHING_MAX_AGE;
	return SRC_ABSENT;
}

static void
repo_release(void *data)
{
	free(data);
}

const struct source source_repo = {
	.name = "repo",
	.held = 1,
	.lookup = repo_lookup,
	.produce = repo_produce,
	.produce_anywhere = 1,
	.release = repo_release,
};

/* ---------------------------------------------------------------- loop */

static void
kick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct repos *rs = arg;
	size_t i;
	int asked;

	repo_dl_kick(rs);
	asked = atomic_exchange(&rs->refresh_asked, 0);
	for (i = 0; i < rs->n; i++) {
		if (!atomic_load(&rs->v[i].live) || !(asked || rs->v[i].due))
			continue;
		rs->v[i].due = 0;
		reposync_start(&rs->v[i]);
	}
}

/* The periodic refresh is next due repo-refresh seconds from now. */
static void
next_due(struct repos *rs)
{
	int64_t next = rs->d.cfg->repo_refresh > 0
	    ? clock_now() + (int64_t)rs->d.cfg->repo_refresh
	    : 0;
	size_t i;

	for (i = 0; i < rs->n; i++)
		atomic_store(&rs->v[i].next_refresh, next);
}

static void
timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct repos *rs = arg;
	size_t i;

	next_due(rs);
	for (i = 0; i < rs->n; i++)
		if (atomic_load(&rs->v[i].live))
			reposync_start(&rs->v[i]);
}

void
repos_refresh(struct repos *rs)
{
	if (repos_count(rs) == 0)
		return;
	atomic_store(&rs->refresh_asked, 1);
	event_active(rs->kick, EV_READ, 1);
}

/* The loop: repo-ready-timeout passed. */
static void
ready_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	repo_ready(arg, 1);
}

const char *
repos_state_name(enum repos_refresh_state s)
{
	static const char *const names[] = { "never", "refreshing", "ok",
		"failed" };

	return (unsigned)s < 4 ? names[s] : "?";
}

int
repos_state(struct repos *rs, size_t i, struct repos_state *out)
{
	struct repo *r = NULL;
	size_t k, n;

	if (rs == NULL)
		return -1;
	/* The ith of those configured now. */
	n = rs->n;
	for (k = 0; k < n; k++)
		if (atomic_load(&rs->v[k].live) && i-- == 0) {
			r = &rs->v[k];
			break;
		}
	if (r == NULL)
		return -1;
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", r->cr->name);
	out->state = (enum repos_refresh_state)atomic_load(&r->state);
	out->last_end = atomic_load(&r->last_end);
	out->last_ok = atomic_load(&r->last_refresh);
	out->next = atomic_load(&r->next_refresh);
	out->open_until = atomic_load(&r->open_until);
	memcpy(out->key, r->key, sizeof(out->key));
	pthread_mutex_lock(&rs->mu);
	snprintf(out->why, sizeof(out->why), "%s", r->last_why);
	pthread_mutex_unlock(&rs->mu);
	return 0;
}

static void
metrics_cb(FILE *fp, void *arg)
{
	struct repos *rs = arg;
	struct index_reader *rd;
	struct repoidx_state st;
	static const struct {
		const char *name, *help;
		size_t off;
	} counters[] = {
		{ "dbgmirror_repo_refreshes_total",
		    "Refreshes of a repository's metadata that succeeded.",
		    offsetof(struct repo, refreshes) },
		{ "dbgmirror_repo_refresh_failures_total",
		    "Refreshes that failed (transfer, signature, checksum, "
		    "parse).",
		    offsetof(struct repo, refresh_failures) },
		{ "dbgmirror_repo_refreshes_unchanged_total",
		    "Refreshes that found the signed metadata of the index's "
		    "generation again: nothing parsed, nothing rewritten.",
		    offsetof(struct repo, refreshes_unchanged) },
		{ "dbgmirror_repo_downloads_total",
		    "Packages downloaded, checked and indexed.",
		    offsetof(struct repo, downloads) },
		{ "dbgmirror_repo_download_failures_total",
		    "Package downloads that failed.",
		    offsetof(struct repo, download_failures) },
		{ "dbgmirror_repo_timeouts_total",
		    "Package downloads that failed for a deadline.",
		    offsetof(struct repo, timeouts) },
		{ "dbgmirror_repo_http_errors_total",
		    "Package downloads answered with an HTTP error.",
		    offsetof(struct repo, http_errors) },
		{ "dbgmirror_repo_checksum_errors_total",
		    "Packages whose size or SHA256 differed from the index.",
		    offsetof(struct repo, checksum_errors) },
		{ "dbgmirror_repo_members_revoked_total",
		    "Members whose bytes went out as their package downloaded "
		    "(each with the build-id asked for, past the ELF check), "
		    "not kept: the package then failed its download or "
		    "checksum.",
		    offsetof(struct repo, members_revoked) },
	};
	size_t c, i, n = rs->n, waiting;

	if (repos_count(rs) == 0)
		return;
	waiting = repo_dl_waiting(rs);

	fprintf(fp,
	    "# HELP dbgmirror_repo_downloads_running Package downloads "
	    "under way (at most repo-downloads).\n"
	    "# TYPE dbgmirror_repo_downloads_running gauge\n"
	    "dbgmirror_repo_downloads_running %u\n"
	    "# HELP dbgmirror_repo_downloads_waiting Package downloads "
	    "waiting for one of those to end.\n"
	    "# TYPE dbgmirror_repo_downloads_waiting gauge\n"
	    "dbgmirror_repo_downloads_waiting %zu\n",
	    atomic_load(&rs->active), waiting);
	for (c = 0; c < sizeof(counters) / sizeof(counters[0]); c++) {
		fprintf(fp, "# HELP %s %s\n# TYPE %s counter\n",
		    counters[c].name, counters[c].help, counters[c].name);
		for (i = 0; i < n; i++)
			if (atomic_load(&rs->v[i].live))
				fprintf(fp, "%s{%s} %llu\n", counters[c].name,
				    rs->v[i].label,
				    (unsigned long long)atomic_load(
					(atomic_uint_fast64_t *)((char *)&rs
								     ->v[i] +
					    counters[c].off)));
	}
	fprintf(fp,
	    "# HELP dbgmirror_repo_breaker_state A repository's breaker: 1 "
	    "for the state it is in (open: its packages are skipped after "
	    "failed downloads), 0 for the other.\n"
	    "# TYPE dbgmirror_repo_breaker_state gauge\n");
	for (i = 0; i < n; i++) {
		int open = atomic_load(&rs->v[i].open_until) > clock_now();

		if (!atomic_load(&rs->v[i].live))
			continue;
		fprintf(fp,
		    "dbgmirror_repo_breaker_state{%s,state=\"closed\"} %d\n"
		    "dbgmirror_repo_breaker_state{%s,state=\"open\"} %d\n",
		    rs->v[i].label, !open, rs->v[i].label, open);
	}
	fprintf(fp,
	    "# HELP dbgmirror_repo_refresh_state A repository's metadata: 1 "
	    "for the state it is in (never refreshed yet, refreshing, the "
	    "last refresh ok or failed), 0 for the others.\n"
	    "# TYPE dbgmirror_repo_refresh_state gauge\n");
	for (i = 0; i < n; i++) {
		int now = atomic_load(&rs->v[i].state), k;

		if (!atomic_load(&rs->v[i].live))
			continue;
		for (k = REPOS_NEVER; k <= REPOS_FAILED; k++)
			fprintf(fp,
			    "dbgmirror_repo_refresh_state{%s,state=\"%s\"} "
			    "%d\n",
			    rs->v[i].label, repos_state_name(k), k == now);
	}
	fprintf(fp,
	    "# HELP dbgmirror_repo_last_refresh_time_seconds When the last "
	    "refresh of a repository that succeeded ended, since the Unix "
	    "epoch; 0: none yet.\n"
	    "# TYPE dbgmirror_repo_last_refresh_time_seconds gauge\n");
	for (i = 0; i < n; i++)
		if (atomic_load(&rs->v[i].live))
			fprintf(fp,
			    "dbgmirror_repo_last_refresh_time_seconds{%s} "
			    "%lld\n",
			    rs->v[i].label,
			    (long long)atomic_load(&rs->v[i].last_refresh));
	if ((rd = index_reader_new(rs->d.idx)) == NULL)
		return;
	if (index_reader_begin(rd) == 0) {
		fprintf(fp,
		    "# HELP dbgmirror_repo_ids Build-ids a repository's "
		    "index maps to packages.\n"
		    "# TYPE dbgmirror_repo_ids gauge\n");
		for (i = 0; i < n; i++)
			if (atomic_load(&rs->v[i].live) &&
			    repoidx_state(rd, rs->v[i].key, &st) == 0)
				fprintf(fp, "dbgmirror_repo_ids{%s} %llu\n",
				    rs->v[i].label, (unsigned long long)st.ids);
		fprintf(fp,
		    "# HELP dbgmirror_repo_generation The generation of a "
		    "repository's index (0: none yet); a refresh that "
		    "changes it makes a new one.\n"
		    "# TYPE dbgmirror_repo_generation gauge\n");
		for (i = 0; i < n; i++)
			if (atomic_load(&rs->v[i].live) &&
			    repoidx_state(rd, rs->v[i].key, &st) == 0)
				fprintf(fp,
				    "dbgmirror_repo_generation{%s} %lu\n",
				    rs->v[i].label, (unsigned long)st.gen);
		index_reader_end(rd);
	}
	index_reader_free(rd);
}

/* repo-redirects' words are the redirect policy's modes. */
_Static_assert((int)CONFIG_REDIRECTS_NONE == (int)REDIRECT_NONE &&
	(int)CONFIG_REDIRECTS_SAME_HOST == (int)REDIRECT_SAME_HOST &&
	(int)CONFIG_REDIRECTS_ANY == (int)REDIRECT_ANY,
    "config_redirects and redirect_mode agree");

/* Repositories a reload may add beyond those of the start (REPOS_SPARE). */
#define REPOS_SPARE 32

/*
 * Make slot rs->n for repo line line (which it copies), not live yet:
 * 0, or -1 with err.
 */
static int
repo_slot(struct repos *rs, const char *line, char *err, size_t errlen)
{
	struct repo *r = &rs->v[rs->n];
	char ident[CONFIG_REPO_TEXT + 64], hex[2 * REPOIDX_KEY_LEN + 1];
	const char *why;

	if ((r->line = strdup(line)) == NULL ||
	    (r->cr = malloc(sizeof(*r->cr))) == NULL ||
	    (r->retry = event_new(rs->d.base, -1, 0, reposync_retry_cb, r)) ==
		NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (config_repo_parse(line, r->cr, &why) == -1) {
		snprintf(err, errlen, "repo %s: %s", line, why);
		goto fail;
	}
	r->rs = rs;
	r->i = (unsigned)rs->n;
	r->fd = -1;
	r->last_modified = -1;
	r->prog.name = r->cr->name;
	r->prog.doing = "";
	repos_ident(r->cr, ident, sizeof(ident));
	repoidx_key(ident, r->key);
	config_url_public(r->cr->url, ident, sizeof(ident));
	snprintf(r->label, sizeof(r->label), "repo=\"%.1100s\",suite=\"%s\"",
	    ident, r->cr->suite);
	buildid_hex(r->key, REPOIDX_KEY_LEN, hex);
	snprintf(r->dir, sizeof(r->dir), "%s/repos/%s", rs->d.cfg->cache_dir,
	    hex);
	if (repo_mkdirs(r->dir) == -1) {
		snprintf(err, errlen, "%s: %s", r->dir, strerror(errno));
		goto fail;
	}
	rs->n++; /* published: the slot is whole */
	return 0;
fail:
	if (r->retry != NULL)
		event_free(r->retry);
	free(r->cr);
	free(r->line);
	memset(r, 0, sizeof(*r));
	return -1;
}

/* The refresh timer, every repo-refresh seconds of the loop's cfg. */
static void
timer_set(struct repos *rs)
{
	struct timeval tv = { (time_t)rs->d.cfg->repo_refresh, 0 };

	event_del(rs->timer);
	if (rs->d.cfg->repo_refresh > 0)
		event_add(rs->timer, &tv);
	next_due(rs);
}

int
repos_apply(struct repos *rs, const struct config *cfg,
    struct repos_changes *ch, char *err, size_t errlen)
{
	const struct config *was = rs->d.cfg;
	size_t i, k, n = rs->n;
	int rc = 0;

	memset(ch, 0, sizeof(*ch));
	rs->d.cfg = cfg;
	atomic_store(&rs->cache_size, cfg->repo_cache_size);
	atomic_store(&rs->min_free, cfg->min_free_disk);
	atomic_store(&rs->error_ttl, cfg->error_ttl);
	rs->fo.redirects.mode = (enum redirect_mode)cfg->repo_redirects;
	rs->fo.proxy = cfg->proxy;
	rs->fo.ca_file = cfg->ca_file;
	rs->fo.user_agent =
	    cfg->user_agent != NULL ? cfg->user_agent : "dbgmirror";
	rs->fo.connect_timeout = cfg->upstream_connect_timeout;
	rs->fo.stall_timeout = cfg->upstream_stall_timeout;
	rs->fo.timeout = cfg->upstream_timeout;
	rs->fo.max_size = META_MAX;
	rs->dlo = rs->fo;
	rs->dlo.max_size = cfg->max_object_size;
	/* Lines no longer there: their slots are looked up no more. */
	for (i = 0; i < n; i++) {
		struct repo *r = &rs->v[i];

		for (k = 0; k < cfg->repos.n; k++)
			if (strcmp(cfg->repos.v[k], r->line) == 0)
				break;
		if (k < cfg->repos.n || !atomic_load(&r->live))
			continue;
		atomic_store(&r->live, 0);
		reposync_stop(r);
		log_info("repo %s: removed from the configuration",
		    r->cr->name);
		ch->removed++;
	}
	/* Each line: its slot, taken back, or a new one. */
	for (k = 0; k < cfg->repos.n; k++) {
		for (i = 0; i < rs->n; i++)
			if (strcmp(cfg->repos.v[k], rs->v[i].line) == 0)
				break;
		if (i < rs->n && atomic_load(&rs->v[i].live))
			continue;
		if (i == rs->n && rs->n == rs->cap) {
			snprintf(err, errlen,
			    "repo %s: more repositories than this process "
			    "can take (%zu): it needs a restart",
			    cfg->repos.v[k], rs->cap);
			rc = -1;
			continue;
		}
		if (i == rs->n &&
		    repo_slot(rs, cfg->repos.v[k], err, errlen) == -1) {
			rc = -1;
			continue;
		}
		atomic_store(&rs->v[i].live, 1);
		atomic_store(&rs->v[i].state, REPOS_NEVER);
		rs->v[i].due = 1;
		ch->added++;
	}
	if (ch->added > 0)
		event_active(rs->kick, EV_READ, 1);
	if (was == NULL || was->repo_refresh != cfg->repo_refresh)
		timer_set(rs);
	return rc;
}

struct repos *
repos_new(const struct repos_deps *d, char *err, size_t errlen)
{
	const struct config *cfg = d->cfg;
	struct repos_changes ch;
	struct repos *rs;
	struct timeval tv;
	size_t i;

	if ((rs = calloc(1, sizeof(*rs))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	rs->d = *d;
	rs->d.cfg = NULL;
	pthread_mutex_init(&rs->mu, NULL);
	pthread_mutex_init(&rs->pmu, NULL);
	rs->queue_tail = &rs->queue;
	rs->cap = cfg->repos.n + REPOS_SPARE;
	snprintf(rs->pkgdir, sizeof(rs->pkgdir), "%s/repo-packages",
	    cfg->cache_dir);
	snprintf(rs->tmpdir, sizeof(rs->tmpdir), "%s/tmp", cfg->cache_dir);
	if ((rs->v = calloc(rs->cap, sizeof(*rs->v))) == NULL ||
	    (rs->cv = repofetch_loop_new(d->base)) == NULL ||
	    (rs->kick = event_new(d->base, -1, 0, kick_cb, rs)) == NULL ||
	    (rs->timer = event_new(d->base, -1, EV_PERSIST, timer_cb, rs)) ==
		NULL ||
	    (rs->ready_timer = event_new(d->base, -1, 0, ready_timer_cb, rs)) ==
		NULL ||
	    (rs->listeners = calloc(cfg->nlisten + 1, sizeof(char *))) == NULL)
		goto nomem;
	if (repo_mkdirs(rs->pkgdir) == -1) {
		snprintf(err, errlen, "%s: %s", rs->pkgdir, strerror(errno));
		repos_free(rs);
		return NULL;
	}
	rs->seed = (unsigned)getpid() ^ (unsigned)clock_mono_ns();
	/* Listen addresses change only with a restart: these stay. */
	for (i = 0; i < cfg->nlisten; i++)
		rs->listeners[i] = cfg->listen[i].text;
	rs->fo.redirects.listeners = rs->listeners;
	rs->fo.redirects.nlisteners = cfg->nlisten;
	if (repos_apply(rs, cfg, &ch, err, errlen) == -1) {
		repos_free(rs);
		return NULL;
	}
	metrics_set_extra(metrics_cb, rs);
	/* Starting until the first refreshes end, or repo-ready-timeout. */
	if (rs->n > 0 && cfg->repo_ready_timeout > 0) {
		atomic_store(&rs->starting, 1);
		tv.tv_sec = cfg->repo_ready_timeout;
		tv.tv_usec = 0;
		event_add(rs->ready_timer, &tv);
	}
	return rs;
nomem:
	snprintf(err, errlen, "out of memory");
	repos_free(rs);
	return NULL;
}

void
repos_free(struct repos *rs)
{
	struct repos_watcher *w;
	struct parked *q;
	size_t i;

	if (rs == NULL)
		return;
	metrics_set_extra(NULL, NULL);
	for (i = 0; i < rs->n; i++) {
		repofetch_cancel(rs->v[i].rf);
		if (rs->v[i].fd != -1)
			close(rs->v[i].fd);
		if (rs->v[i].retry != NULL)
			event_free(rs->v[i].retry);
		free(rs->v[i].cr);
		free(rs->v[i].line);
	}
	while ((w = rs->watchers) != NULL) {
		rs->watchers = w->next;
		free(w);
	}
	while ((q = rs->parked) != NULL) {
		rs->parked = q->next;
		free(q);
	}
	if (rs->ready_timer != NULL)
		event_free(rs->ready_timer);
	if (rs->cv != NULL)
		repofetch_loop_free(rs->cv);
	if (rs->kick != NULL)
		event_free(rs->kick);
	if (rs->timer != NULL)
		event_free(rs->timer);
	free(rs->v);
	free(rs->listeners);
	pthread_mutex_destroy(&rs->mu);
	pthread_mutex_destroy(&rs->pmu);
	free(rs);
}
