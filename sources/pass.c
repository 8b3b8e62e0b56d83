/*
 * sources/pass.c: decompression passes over packages (sources/pass.h).
 *
 * One decompression pass over a package serves every fill of its members
 * that can catch it.  A member fill joins the open pass of its package
 * (else starts one) under ps->mu, in the same critical section that
 * created its flight, so a pass never misses a fill that was coming.  It
 * can join until the pass has read past its member; a later one waits for
 * the next pass, which is queued while a pass of the package runs and
 * begins when that pass ends, so that however many fills come too late for
 * the running pass, they cost one more pass, not one each.  While reading,
 * the pass also claims members nothing asked for, so that the next
 * requests of a debugger are hits: dwz alt files always, as every debug
 * file of the package may point at them, and up to package-coextract
 * others.  Those go to the members clients are likeliest to ask for next,
 * best first:
 *
 *   1. members sharing the build-id of a member a fill of the pass wants:
 *      the debug file an executable's .gnu_debuglink names, the executable
 *      of a debug file, which a client asks for once it has the other;
 *   2. members whose build-id is cached as the other ELF kind: a client
 *      had the executable (or the debug file) of that id from this server
 *      and is likely to want the rest;
 *   3. debug files, which debuggers ask for far more than executables;
 *   4. the rest.
 *
 * A member met is claimed when fewer than budget members still ahead
 * outrank it, so that the budget is not spent on the first members met
 * when better ones come later; among equals the first met wins.  A member
 * already cached is never claimed again.  Sources lead a pass of their own
 * (their member may be a link, which sides do not follow), which ELF fills
 * can still join.
 *
 * Threads: a pass runs as a long job of the pool and reports its fills'
 * verdicts to the producers' loop (pass_done); the list of passes and
 * every pass's members are shared under ps->mu, which the package source
 * also holds while it makes a member's flight (passes_lock), so that a
 * pass never misses a fill that was coming.
 */

#include "sources/pass.h"

#include <sys/stat.h>

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/blobstore.h"
#include "cache/flight.h"
#include "cache/index.h"
#include "cache/pkgindex.h"
#include "conf/config.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/pool.h"
#include "indexer/file.h"
#include "indexer/package.h"
#include "indexer/rpmhdr.h"
#include "resolver/produce.h"

struct pass;

struct passes {
	const struct resolve_deps *rd;
	struct pool_inbox *inbox; /* of the producers' loop */
	pthread_mutex_t mu;
	/* The settings (passes_apply), under mu; each pass takes them. */
	struct pkg_limits lim; /* for extracting members */
	unsigned coextract; /* package-coextract */
	int archive_full_path;
	struct pass *list; /* open passes, under mu */
};

static struct pass_want *
want_of(struct prod *pr)
{
	return pr->data;
}

static int
is_elf_kind(enum cache_kind kind)
{
	return kind == CACHE_DEBUGINFO || kind == CACHE_EXECUTABLE;
}

/* Worker, after each piece of a member: readers follow (pkg_side). */
static void
pass_member_progress(uint64_t end, void *arg)
{
	produce_progress(arg, end);
}

void
pass_member_meta(const struct rpmhdr *rh, const char *archive,
    const char *member, char sig[PASS_RPM_SIG_MAX], struct cache_meta *m)
{
	char err[256];
	int rc = 0;

	if (rh != NULL &&
	    (rc = rpmhdr_ima_signature(rh, member, sig, PASS_RPM_SIG_MAX, err,
		 sizeof(err))) == -1)
		log_info("%s: %s", archive, err);
	m->file = member;
	m->archive = archive;
	m->imasig = rc == 1 ? sig : "";
	m->extra = NULL;
	m->extra_len = 0;
}

/* The RPM header of package when it is an RPM that signs files; or NULL. */
static struct rpmhdr *
package_rpmhdr(const char *package)
{
	struct rpmhdr *rh = NULL;
	struct stat st;
	char err[256];
	int fd;

	if ((fd = file_open_regular(package, &st)) == -1)
		return NULL;
	if (rpmhdr_open(fd, &rh, err, sizeof(err)) == -1)
		log_info("%s: %s", package, err);
	close(fd);
	return rh;
}

enum pm_state {
	PM_AHEAD, /* not met yet */
	PM_TAKEN, /* met, extracted for a fill */
	PM_BEHIND, /* met and passed by */
};

/* How likely a member nothing asked for is to be asked for next. */
enum pm_rank {
	PR_SIBLING, /* shares its build-id with a member a fill wants */
	PR_ASKED, /* its build-id is cached as the other kind */
	PR_DEBUG, /* a debug file */
	PR_OTHER,
	PR_NONE, /* not claimed for its rank: met, wanted, cached or dwz */
};

/* An indexed ELF member of the package of a pass. */
struct pmember {
	struct pkg_rec rec; /* member malloc'ed; package not set */
	enum pm_state state;
	enum pm_rank rank;
	int dwz; /* a dwz alt file not cached yet */
	struct prod *prod; /* the fill that wants it, if any */
	struct pkg_side side;
};

struct pass {
	struct passes *ps;
	unsigned src; /* the package source's place in the table */
	struct pass *next; /* among ps->list until closed */
	char package[PATH_MAX];
	const char *archive; /* as X-DEBUGINFOD-ARCHIVE shows it */
	struct rpmhdr *rh; /* when an RPM that signs files */
	struct prod *lead; /* a source fill: its member leads the pass */
	struct prod *early; /* ELF fills that joined before it began */
	struct prod *answered; /* fills it ends without extracting them */
	struct pmember *m; /* by name, once begun */
	size_t n, cap;
	size_t budget; /* members it may still claim unasked */
	size_t wanted; /* members ahead that a fill wants */
	size_t ranked[PR_NONE]; /* members ahead that it may claim, by rank */
	size_t ahead_dwz; /* dwz alt files not met yet */
	int queued; /* waits for a pass of its package to end */
	int begun, closed;
};

static int
pmember_cmp(const void *a, const void *b)
{
	return strcmp(((const struct pmember *)a)->rec.member,
	    ((const struct pmember *)b)->rec.member);
}

/* The member of p named name, or NULL. */
static struct pmember *
pass_member(struct pass *p, const char *name)
{
	struct pmember key;

	key.rec.member = name;
	return p->n == 0
	    ? NULL
	    : bsearch(&key, p->m, p->n, sizeof(*p->m), pmember_cmp);
}

static int
pass_load_cb(const struct pkg_rec *r, void *arg)
{
	struct pass *p = arg;
	struct pmember *v;
	size_t cap;

	if (p->n == p->cap) {
		cap = p->cap == 0 ? 16 : 2 * p->cap;
		if ((v = realloc(p->m, cap * sizeof(*v))) == NULL)
			return 1;
		p->m = v;
		p->cap = cap;
	}
	memset(&p->m[p->n], 0, sizeof(p->m[p->n]));
	p->m[p->n].rec = *r;
	p->m[p->n].rec.package = NULL;
	if ((p->m[p->n].rec.member = strdup(r->member)) == NULL)
		return 1;
	p->n++;
	return 0;
}

/* The kind a member of kinds is filled as when nothing asked for it. */
static enum cache_kind
pm_kind(unsigned kinds)
{
	return kinds & ELF_KIND_DEBUGINFO ? CACHE_DEBUGINFO : CACHE_EXECUTABLE;
}

/* Worker, in rd's transaction: 1 when (id, kind) is cached. */
static int
pm_cached(struct index_reader *rd, const struct buildid *id,
    enum cache_kind kind)
{
	struct cache_key k;
	struct blob_info bi;

	cache_key_make(&k, id, kind, "");
	return blob_lookup(rd, &k, &bi) == 0;
}

/* Worker, in rd's transaction: pm's rank before any fill wants it. */
static enum pm_rank
pm_rank_of(struct index_reader *rd, const struct pmember *pm)
{
	enum cache_kind kind = pm_kind(pm->rec.kinds);

	if (pm_cached(rd, &pm->rec.id, kind))
		return PR_NONE;
	if (pm_cached(rd, &pm->rec.id,
		kind == CACHE_DEBUGINFO ? CACHE_EXECUTABLE : CACHE_DEBUGINFO))
		return PR_ASKED;
	return kind == CACHE_DEBUGINFO ? PR_DEBUG : PR_OTHER;
}

/* ps->mu held (or p not begun): pm is no more a member p may claim. */
static void
pm_unrank(struct pass *p, struct pmember *pm)
{
	if (pm->rank != PR_NONE)
		p->ranked[pm->rank]--;
	pm->rank = PR_NONE;
}

/*
 * ps->mu held: a fill wants the member of build-id id; the other members
 * of that id come first among those p may claim.
 */
static void
pass_favour(struct pass *p, const struct buildid *id)
{
	struct pmember *pm;
	size_t i;

	for (i = 0; i < p->n; i++) {
		pm = &p->m[i];
		if (pm->rank == PR_NONE || pm->rank == PR_SIBLING ||
		    !buildid_equal(&pm->rec.id, id))
			continue;
		pm_unrank(p, pm);
		pm->rank = PR_SIBLING;
		p->ranked[PR_SIBLING]++;
	}
}

/* ps->mu held: members ahead that p may claim and that outrank r. */
static size_t
pass_outranked(const struct pass *p, enum pm_rank r)
{
	size_t n = 0;
	int i;

	for (i = 0; i < (int)r; i++)
		n += p->ranked[i];
	return n;
}

/*
 * Worker: the indexed ELF members of p's package, by name, one entry per
 * file (a file indexed as two kinds is one member), ranked with rd.
 */
static void
pass_load(struct pass *p, struct index_reader *rd)
{
	size_t i, k;

	pkgidx_package_members(rd, p->package, pass_load_cb, p);
	if (p->n == 0)
		return;
	qsort(p->m, p->n, sizeof(*p->m), pmember_cmp);
	for (i = k = 1; i < p->n; i++) {
		if (strcmp(p->m[i].rec.member, p->m[k - 1].rec.member) == 0) {
			p->m[k - 1].rec.kinds |= p->m[i].rec.kinds;
			free((char *)p->m[i].rec.member);
		} else {
			p->m[k++] = p->m[i];
		}
	}
	p->n = k;
	for (i = 0; i < p->n; i++) {
		p->m[i].rank = pm_rank_of(rd, &p->m[i]);
		if (p->m[i].rank != PR_NONE &&
		    strncmp(p->m[i].rec.member, PKG_DWZ_DIR,
			strlen(PKG_DWZ_DIR)) == 0) {
			p->m[i].dwz = 1;
			p->m[i].rank = PR_NONE;
			p->ahead_dwz++;
		}
		if (p->m[i].rank != PR_NONE)
			p->ranked[p->m[i].rank]++;
	}
}

/* ps->mu held: p takes no more fills. */
static void
pass_close(struct pass *p)
{
	struct pass **pp;

	if (p->closed)
		return;
	p->closed = 1;
	for (pp = &p->ps->list; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
}

/*
 * ps->mu held: member fill pr joins p, which has begun; -1 when p has read
 * past the member or another fill has it.
 */
static int
pass_want(struct pass *p, struct prod *pr)
{
	struct pmember *pm;

	if (!is_elf_kind(pr->w.kind) ||
	    (pm = pass_member(p, want_of(pr)->member)) == NULL ||
	    pm->state != PM_AHEAD || pm->prod != NULL)
		return -1;
	pm->prod = pr;
	p->wanted++;
	pm_unrank(p, pm);
	pass_favour(p, &pr->w.id);
	return 0;
}

static void pass_work(void *arg);
static void pass_done(void *arg);

/*
 * ps->mu held: a new pass for member fill pr, queued (not begun until
 * pass_release) when queued; -1 when none can start.
 */
static int
pass_new(struct passes *ps, struct prod *pr, int queued)
{
	struct pass *p;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return -1;
	p->ps = ps;
	p->src = pr->src;
	memcpy(p->package, want_of(pr)->package, sizeof(p->package));
	want_of(pr)->next = NULL;
	if (is_elf_kind(pr->w.kind))
		p->early = pr;
	else
		p->lead = pr;
	p->queued = queued;
	if (!queued &&
	    pool_submit_long(ps->rd->pool, pass_work, ps->inbox, pass_done,
		p) == -1) {
		free(p);
		return -1;
	}
	p->next = ps->list;
	ps->list = p;
	return 0;
}

/*
 * ps->mu held: member fill pr joins an open pass of its package that has
 * not read past its member, else one that has not begun, else starts one,
 * queued behind the passes of the package that run.
 */
static int
pass_join(struct passes *ps, struct prod *pr)
{
	struct pass *p, *later = NULL;
	int running = 0;

	for (p = ps->list; p != NULL; p = p->next) {
		if (strcmp(p->package, want_of(pr)->package) != 0)
			continue;
		if (!p->begun) {
			if (later == NULL)
				later = p;
		} else if (pass_want(p, pr) == 0) {
			return 0;
		} else {
			running = 1;
		}
	}
	if (later != NULL && is_elf_kind(pr->w.kind)) {
		want_of(pr)->next = later->early;
		later->early = pr;
		return 0;
	}
	return pass_new(ps, pr, running);
}

/*
 * The fills' loop, as a pass of package ends: begin the passes queued
 * behind it.  Fills of one that cannot begin end as failures.
 */
static void
pass_release(struct passes *ps, const char *package)
{
	struct pass *p, *next, *failed = NULL;
	struct prod *pr;

	pthread_mutex_lock(&ps->mu);
	for (p = ps->list; p != NULL; p = next) {
		next = p->next;
		if (!p->queued || strcmp(p->package, package) != 0)
			continue;
		p->queued = 0;
		if (pool_submit_long(ps->rd->pool, pass_work, ps->inbox,
			pass_done, p) == -1) {
			pass_close(p);
			p->next = failed;
			failed = p;
		}
	}
	pthread_mutex_unlock(&ps->mu);
	for (p = failed; p != NULL; p = next) {
		next = p->next;
		if (p->lead != NULL)
			produce_end(p->lead, FLIGHT_FAILED,
			    "server is shutting down");
		while ((pr = p->early) != NULL) {
			p->early = want_of(pr)->next;
			produce_end(pr, FLIGHT_FAILED,
			    "server is shutting down");
		}
		free(p);
	}
}

/* Worker: member fill pr's temp file and head, as its pass gets to it. */
static int
pass_open_member(struct pass *p, struct prod *pr)
{
	struct pass_want *pw = want_of(pr);
	char sig[PASS_RPM_SIG_MAX];
	struct cache_meta meta;

	if (produce_open(pr) == -1)
		return -1;
	pass_member_meta(p->rh, p->archive, pw->member, sig, &meta);
	if (produce_head(pr, pw->size, pw->mtime, &meta, pw->package) == -1) {
		snprintf(pr->why, sizeof(pr->why), "out of memory");
		return -1;
	}
	return 0;
}

/*
 * ps->mu held: a fill of member pm that nothing asked for, or NULL when
 * something else fills it or no fill can start.
 */
static struct prod *
pass_unasked(struct pass *p, const struct pmember *pm)
{
	struct pass_want *pw;
	struct prod_what w;
	struct cache_key k;

	memset(&w, 0, sizeof(w));
	w.id = pm->rec.id;
	w.kind = pm_kind(pm->rec.kinds);
	w.reach = RESOLVE_ALL;
	w.announce = pm->rec.size;
	snprintf(w.path, sizeof(w.path), "%s", pm->rec.member);
	pass_label(p->package, w.from, sizeof(w.from));
	if ((pw = calloc(1, sizeof(*pw))) == NULL)
		return NULL;
	memcpy(pw->package, p->package, sizeof(pw->package));
	snprintf(pw->member, sizeof(pw->member), "%s", pm->rec.member);
	pw->mtime = pm->rec.mtime;
	pw->size = pm->rec.size;
	cache_key_make(&k, &w.id, w.kind, "");
	/* pw is the fill's now, or released with it. */
	return produce_adopt(p->ps->rd->prod, &k, &w, p->src, pw);
}

/*
 * Worker, from pkg_extract_watch: the pass meets member.  Extract it for
 * the fill that wants it, or for a fill of its own when the pass may
 * claim it.
 */
static struct pkg_side *
pass_side(const char *member, void *arg)
{
	struct pass *p = arg;
	struct pmember *pm;
	struct prod *pr = NULL;
	enum pm_rank r;

	pthread_mutex_lock(&p->ps->mu);
	if ((pm = pass_member(p, member)) != NULL && pm->state == PM_AHEAD) {
		r = pm->rank;
		pm_unrank(p, pm);
		p->ahead_dwz -= (size_t)pm->dwz;
		if (pm->prod != NULL)
			p->wanted--;
		else if (pm->dwz)
			pm->prod = pass_unasked(p, pm);
		else if (r != PR_NONE && pass_outranked(p, r) < p->budget &&
		    (pm->prod = pass_unasked(p, pm)) != NULL)
			p->budget--;
		pr = pm->prod;
		pm->state = pr != NULL ? PM_TAKEN : PM_BEHIND;
	}
	pthread_mutex_unlock(&p->ps->mu);
	if (pr == NULL || pass_open_member(p, pr) == -1)
		return NULL;
	pm->side.fd = pr->fd;
	pm->side.progress = pass_member_progress;
	pm->side.arg = pr;
	return &pm->side;
}

/* Worker, from pkg_extract_watch: the lead's member is coming out. */
static void
pass_progress(uint64_t end, void *arg)
{
	struct pass *p = arg;

	pass_member_progress(end, p->lead);
}

/* Worker, from pkg_extract_watch: 1 while members ahead are wanted. */
static int
pass_more(void *arg)
{
	struct pass *p = arg;
	int more;

	pthread_mutex_lock(&p->ps->mu);
	more = p->wanted > 0 || p->ahead_dwz > 0 ||
	    (p->budget > 0 && pass_outranked(p, PR_NONE) > 0);
	if (!more)
		pass_close(p);
	pthread_mutex_unlock(&p->ps->mu);
	return more;
}

/*
 * Worker: the end of member fill pr's extraction (ok, else err says why
 * when the pass as a whole failed); then the final check, which lets its
 * readers finish (the publishing comes once every fill of the pass has
 * had its check, so that a client asking for the next member right after
 * its last byte finds that member verified).
 */
static void
pass_extracted(struct pass *p, struct prod *pr, int ok, const char *err)
{
	struct stat st;

	if (!ok || pr->fd == -1 || fstat(pr->fd, &st) == -1 ||
	    (uint64_t)st.st_size != pr->length) {
		pr->res = UPSTREAM_FAILED;
		if (pr->why[0] == '\0')
			snprintf(pr->why, sizeof(pr->why), "%.100s: %.100s",
			    p->archive,
			    err[0] != '\0'
				? err
				: "member missing or changed since indexed");
		log_warnx("%s: %s %s: %s", __func__, p->package,
		    want_of(pr)->member, pr->why);
		return;
	}
	produce_progress(pr, (uint64_t)st.st_size);
	pr->res = UPSTREAM_OK;
	produce_release(pr);
}

/*
 * Worker: the fills that joined p before it began, its lead among them,
 * each answered by the cache (produce_lookup) or wanted from p (else from a
 * pass of its own).
 */
static void
pass_begin(struct pass *p, struct index_reader *rd)
{
	struct passes *ps = p->ps;
	struct prod *early, *pr, *next, *want = NULL;
	int indexed;

	pthread_mutex_lock(&ps->mu);
	p->begun = 1;
	p->budget = ps->coextract;
	early = p->early;
	p->early = NULL;
	pthread_mutex_unlock(&ps->mu);
	if (p->lead != NULL && rd != NULL &&
	    (want_of(p->lead)->found = produce_lookup(p->lead, rd)) != 0) {
		want_of(p->lead)->next = p->answered;
		p->answered = p->lead;
		p->lead = NULL;
	}
	for (pr = early; pr != NULL; pr = next) {
		next = want_of(pr)->next;
		if (rd != NULL &&
		    (want_of(pr)->found = produce_lookup(pr, rd)) != 0) {
			want_of(pr)->next = p->answered;
			p->answered = pr;
		} else {
			want_of(pr)->next = want;
			want = pr;
		}
	}
	pthread_mutex_lock(&ps->mu);
	for (pr = want; pr != NULL; pr = next) {
		next = want_of(pr)->next;
		/* A member another fill has (as another kind) waits a pass. */
		indexed = pass_member(p, want_of(pr)->member) != NULL;
		if (pass_want(p, pr) == 0 ||
		    (indexed && pass_join(ps, pr) == 0))
			continue;
		if (!indexed) {
			/* Gone from the package: the next source's to fill. */
			produce_absent(pr);
			continue;
		}
		pr->res = UPSTREAM_FAILED;
		snprintf(pr->why, sizeof(pr->why), "server is shutting down");
		want_of(pr)->next = p->answered;
		p->answered = pr;
	}
	if (p->lead == NULL && p->wanted == 0)
		pass_close(p); /* nothing to extract */
	pthread_mutex_unlock(&ps->mu);
}

/*
 * Worker: the pass.  Every fill that joined it ends in pass_done, on the
 * fills' loop.
 */
static void
pass_work(void *arg)
{
	struct pass *p = arg;
	struct passes *ps = p->ps;
	struct pkg_watch watch = { pass_progress, pass_side, pass_more, p,
		NULL };
	struct index_reader *rd;
	const char *name = strrchr(p->package, '/'), *member = NULL;
	struct pkg_limits lim;
	char err[256] = "";
	size_t i;
	int rc, fd = -1, full;

	pthread_mutex_lock(&ps->mu);
	lim = ps->lim;
	full = ps->archive_full_path;
	pthread_mutex_unlock(&ps->mu);
	p->archive = full || name == NULL ? p->package : name + 1;
	rd = index_reader_new(ps->rd->idx);
	if (rd != NULL && index_reader_begin(rd) == 0) {
		pass_load(p, rd);
		pass_begin(p, rd);
		index_reader_end(rd);
	} else {
		pass_begin(p, NULL);
	}
	index_reader_free(rd);
	if (p->closed)
		return;
	p->rh = package_rpmhdr(p->package);
	if (p->lead != NULL && pass_open_member(p, p->lead) == 0) {
		member = want_of(p->lead)->member;
		fd = p->lead->fd;
	}
	rc = pkg_extract_watch(p->package, member, fd, &lim, &watch, err,
	    sizeof(err));
	metrics_package_pass();
	pthread_mutex_lock(&ps->mu);
	pass_close(p);
	pthread_mutex_unlock(&ps->mu);
	rpmhdr_free(p->rh);
	if (rc != 0)
		log_warnx("%s: %s: %s", __func__, p->package,
		    err[0] != '\0' ? err : "member not found");
	if (p->lead != NULL)
		pass_extracted(p, p->lead, member != NULL && rc == 0,
		    rc == -1 ? err : "");
	for (i = 0; i < p->n; i++)
		if (p->m[i].prod != NULL)
			pass_extracted(p, p->m[i].prod,
			    p->m[i].state == PM_TAKEN && p->m[i].side.done == 1,
			    rc == -1 ? err : "");
	if (p->lead != NULL)
		produce_verify(p->lead);
	for (i = 0; i < p->n; i++)
		if (p->m[i].prod != NULL)
			produce_verify(p->m[i].prod);
}

/* The fills' loop: end every fill of the pass. */
static void
pass_done(void *arg)
{
	struct pass *p = arg;
	struct prod *pr, *next;
	size_t i;

	pass_release(p->ps, p->package);
	if (p->lead != NULL)
		produce_finish(p->lead);
	for (i = 0; i < p->n; i++) {
		if (p->m[i].prod != NULL)
			produce_finish(p->m[i].prod);
		free((char *)p->m[i].rec.member);
	}
	for (pr = p->answered; pr != NULL; pr = next) {
		next = want_of(pr)->next;
		if (want_of(pr)->found != 0)
			produce_end_found(pr, want_of(pr)->found);
		else
			produce_finish(pr);
	}
	free(p->m);
	free(p);
}

void
pass_label(const char *package, char *out, size_t len)
{
	const char *base = strrchr(package, '/');

	snprintf(out, len, "%.*s", (int)len - 1,
	    base != NULL ? base + 1 : package);
}

/* Worker: make room for a member's bytes (pkg_limits.room). */
static int
passes_room(uint64_t bytes, void *arg)
{
	struct passes *ps = arg;

	return produce_room(ps->rd->prod, bytes);
}

void
passes_lock(struct passes *ps, int take)
{
	if (take)
		pthread_mutex_lock(&ps->mu);
	else
		pthread_mutex_unlock(&ps->mu);
}

int
passes_join(struct passes *ps, struct prod *pr)
{
	return pass_join(ps, pr);
}

struct passes *
passes_new(const struct resolve_deps *rd, struct pool_inbox *inbox)
{
	struct passes *ps;

	if ((ps = calloc(1, sizeof(*ps))) == NULL)
		return NULL;
	ps->rd = rd;
	ps->inbox = inbox;
	ps->lim = pkg_default_limits;
	ps->lim.room = passes_room;
	ps->lim.room_arg = ps;
	pthread_mutex_init(&ps->mu, NULL);
	passes_apply(ps, rd->cfg);
	return ps;
}

void
passes_apply(struct passes *ps, const struct config *cfg)
{
	pthread_mutex_lock(&ps->mu);
	ps->lim.min_free_pct = cfg->min_free_disk;
	ps->coextract = cfg->package_coextract;
	ps->archive_full_path = cfg->archive_full_path;
	pthread_mutex_unlock(&ps->mu);
}

void
passes_free(struct passes *ps)
{
	if (ps == NULL)
		return;
	pthread_mutex_destroy(&ps->mu);
	free(ps);
}
