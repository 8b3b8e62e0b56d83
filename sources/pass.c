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
 * can still join.  Each member's readers may send its last byte as soon as
 * it is out and has passed its final check; the publishing comes once the
 * pass is over (a growing pass's as a background job of the pool: nobody
 * waits for it).
 *
 * A package still downloading (a repository's) is read as it grows
 * (struct pass_growth).  Its members are not indexed yet, so such a pass
 * meets them by name: a fill wants its member by its .build-id path, and
 * a link met under that name moves the want to its target.  It claims,
 * unasked, every dwz alt file and, while package-coextract allows, the
 * debug files it meets under .build-id/ (first come: nothing says what
 * comes later).  An alt file's build-id is in its own bytes, but the debug
 * files that use it name it (.gnu_debugaltlink): as a debug file comes
 * out, before its readers may have its last byte, the pass makes the
 * flight of the alt file it names, which it fills when it meets the file,
 * so that the request a debugger makes for it next joins that flight
 * (passes_find) instead of finding nothing.  An alt file no debug file
 * named yet (an rpm's comes before them) is extracted aside, its build-id
 * read, then given the flight of that id, unless a fill of it runs
 * already.  Such a pass reads the package to its end, then waits for its
 * checksum (pass_growth.checked): passed, what came out is published;
 * failed, nothing is, and the flights end failed, though readers may have
 * had every byte (each passed its own check: the build-id asked for, the
 * ELF check every fill passes).  A fill it could not serve goes back to
 * its source, which hands it on to the package step once the package is
 * in; a local fill that joined it gets a pass of its own.
 *
 * A pass decodes an xz stream on up to PASS_XZ_THREADS threads (online
 * CPUs): a client waits for it.  Indexing a package (sources/scan.h) keeps
 * one.
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
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/blobstore.h"
#include "cache/flight.h"
#include "cache/index.h"
#include "cache/pkgindex.h"
#include "conf/config.h"
#include "daemon/clock.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/pool.h"
#include "indexer/elf.h"
#include "indexer/file.h"
#include "indexer/package.h"
#include "indexer/repometa.h"
#include "indexer/rpmhdr.h"
#include "resolver/produce.h"

/* An IMA signature in hex. */
#define RPM_SIG_MAX 2048
/*
 * The most threads decoding a pass's xz stream, which clients wait for:
 * dpkg-deb's data.tar.xz of a large package comes in 24 MiB blocks, two
 * decoded at once halve the decompression (1.3 s instead of 2.6 s for
 * binutils' 40 MB -dbg package) for 96 MiB instead of 54.
 */
#define PASS_XZ_THREADS 2

struct pass;

struct passes {
	const struct resolve_deps *rd;
	struct pool_inbox *inbox; /* of the producers' loop */
	char tmpdir[PATH_MAX]; /* for alt files extracted aside */
	pthread_mutex_t mu;
	/* The settings (passes_apply), under mu; each pass takes them. */
	struct pkg_limits lim; /* for extracting members */
	unsigned coextract; /* package-coextract */
	int archive_full_path;
	struct pass *list; /* open passes, under mu */
	/* Passes over growing packages until their fills end, under mu. */
	struct pass *growing;
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

/*
 * What the answer of a package member says of it (cache/meta.h): its
 * archive (as archive shows the package), its file (member), and its IMA
 * signature when rh, the package's RPM header (NULL for other packages),
 * signs that file, written in sig.  m points at archive, member and sig.
 */
static void
member_meta(const struct rpmhdr *rh, const char *archive, const char *member,
    char sig[RPM_SIG_MAX], struct cache_meta *m)
{
	char err[256];
	int rc = 0;

	if (rh != NULL &&
	    (rc = rpmhdr_ima_signature(rh, member, sig, RPM_SIG_MAX, err,
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

/*
 * A member of the package of a pass: an indexed ELF member, or (growing)
 * one a fill wants or the pass met and claimed.
 */
struct pmember {
	struct pass *p;
	struct pkg_rec rec; /* member malloc'ed; package not set */
	enum pm_state state;
	enum pm_rank rank;
	int dwz; /* a dwz alt file not cached yet */
	int out; /* its extraction is judged (pass_extracted) */
	int aside; /* growing: an alt file out before its id is known */
	int unasked; /* growing: the flight of an alt file a debug file named */
	struct prod *prod; /* the fill that wants it, if any */
	struct pkg_side side;
};

struct pass {
	struct passes *ps;
	unsigned src; /* the place in the table of its first fill's source */
	struct pass *next; /* among ps->list until closed */
	struct pass *gnext; /* among ps->growing */
	char package[PATH_MAX];
	const char *archive; /* as X-DEBUGINFOD-ARCHIVE shows it */
	struct rpmhdr *rh; /* when an RPM that signs files */
	struct prod *lead; /* a source fill: its member leads the pass */
	struct prod *early; /* ELF fills that joined before it began */
	struct prod *answered; /* fills it ends without extracting them */
	struct pmember **m; /* by name once begun (growing: as they come) */
	size_t n, cap;
	size_t budget; /* members it may still claim unasked */
	size_t wanted; /* members ahead that a fill wants */
	size_t ranked[PR_NONE]; /* members ahead that it may claim, by rank */
	size_t ahead_dwz; /* dwz alt files not met yet */
	int queued; /* waits for a pass of its package to end, or its start */
	int begun, closed;
	/* A package still downloading: NULL for a local one. */
	const struct pass_growth *gr;
	uint64_t *met; /* growing: hashes of the members met */
	size_t nmet, metcap;
	struct index_reader *rd; /* growing: what is cached, while it reads */
};

static int
pmember_cmp(const void *a, const void *b)
{
	return strcmp((*(struct pmember *const *)a)->rec.member,
	    (*(struct pmember *const *)b)->rec.member);
}

/* The member of p named name, or NULL. */
static struct pmember *
pass_member(struct pass *p, const char *name)
{
	struct pmember key, *kp = &key, **pm;
	size_t i;

	if (p->gr != NULL) {
		for (i = 0; i < p->n; i++)
			if (strcmp(p->m[i]->rec.member, name) == 0)
				return p->m[i];
		return NULL;
	}
	key.rec.member = name;
	pm = p->n == 0 ? NULL
		       : bsearch(&kp, p->m, p->n, sizeof(*p->m), pmember_cmp);
	return pm != NULL ? *pm : NULL;
}

/* A new member of p named name (ps->mu held, or p not begun); NULL. */
static struct pmember *
pass_add(struct pass *p, const char *name)
{
	struct pmember **v, *pm;
	size_t cap;

	if (p->n == p->cap) {
		cap = p->cap == 0 ? 16 : 2 * p->cap;
		if ((v = realloc(p->m, cap * sizeof(*v))) == NULL)
			return NULL;
		p->m = v;
		p->cap = cap;
	}
	if ((pm = calloc(1, sizeof(*pm))) == NULL)
		return NULL;
	if ((pm->rec.member = strdup(name)) == NULL) {
		free(pm);
		return NULL;
	}
	pm->p = p;
	pm->rank = PR_NONE;
	pm->side.fd = -1;
	p->m[p->n++] = pm;
	return pm;
}

/* FNV-1a of a member name: what a growing pass remembers of it. */
static uint64_t
name_hash(const char *name)
{
	uint64_t h = 14695981039346656037ull;

	for (; *name != '\0'; name++)
		h = (h ^ (unsigned char)*name) * 1099511628211ull;
	return h;
}

/*
 * ps->mu held: 1 when growing pass p has met name (a collision only costs
 * a fill the next pass).
 */
static int
pass_met(const struct pass *p, const char *name)
{
	uint64_t h = name_hash(name);
	size_t i;

	for (i = 0; i < p->nmet; i++)
		if (p->met[i] == h)
			return 1;
	return 0;
}

/* ps->mu held: growing pass p meets name. */
static void
pass_meet(struct pass *p, const char *name)
{
	uint64_t *v;
	size_t cap;

	if (p->nmet == p->metcap) {
		cap = p->metcap == 0 ? 256 : 2 * p->metcap;
		if ((v = realloc(p->met, cap * sizeof(*v))) == NULL)
			return; /* it is taken for ahead: one more pass */
		p->met = v;
		p->metcap = cap;
	}
	p->met[p->nmet++] = name_hash(name);
}

static int
pass_load_cb(const struct pkg_rec *r, void *arg)
{
	struct pass *p = arg;
	struct pmember *pm;

	if ((pm = pass_add(p, r->member)) == NULL)
		return 1;
	pm->rec.id = r->id;
	pm->rec.kinds = r->kinds;
	pm->rec.size = r->size;
	pm->rec.mtime = r->mtime;
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
		pm = p->m[i];
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
	struct pmember *pm;
	size_t i, k;

	pkgidx_package_members(rd, p->package, pass_load_cb, p);
	if (p->n == 0)
		return;
	qsort(p->m, p->n, sizeof(*p->m), pmember_cmp);
	for (i = k = 1; i < p->n; i++) {
		if (strcmp(p->m[i]->rec.member, p->m[k - 1]->rec.member) == 0) {
			p->m[k - 1]->rec.kinds |= p->m[i]->rec.kinds;
			free((char *)p->m[i]->rec.member);
			free(p->m[i]);
		} else {
			p->m[k++] = p->m[i];
		}
	}
	p->n = k;
	for (i = 0; i < p->n; i++) {
		pm = p->m[i];
		pm->rank = pm_rank_of(rd, pm);
		if (pm->rank != PR_NONE &&
		    strncmp(pm->rec.member, PKG_DWZ_DIR, strlen(PKG_DWZ_DIR)) ==
			0) {
			pm->dwz = 1;
			pm->rank = PR_NONE;
			p->ahead_dwz++;
		}
		if (pm->rank != PR_NONE)
			p->ranked[pm->rank]++;
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
 * past the member or another fill has it.  A growing pass learns the
 * member from the fill.
 */
static int
pass_want(struct pass *p, struct prod *pr)
{
	const char *name = want_of(pr)->member;
	struct pmember *pm;

	if (!is_elf_kind(pr->w.kind))
		return -1;
	if ((pm = pass_member(p, name)) == NULL && p->gr != NULL &&
	    !pass_met(p, name))
		pm = pass_add(p, name);
	if (pm == NULL || pm->state != PM_AHEAD || pm->prod != NULL)
		return -1;
	pm->prod = pr;
	pm->rec.id = pr->w.id;
	p->wanted++;
	pm_unrank(p, pm);
	pass_favour(p, &pr->w.id);
	return 0;
}

static void pass_work(void *arg);
static void pass_done(void *arg);

/*
 * ps->mu held: a new pass for member fill pr, queued (not begun until
 * pass_release) when queued; -1 when none can start.  A fill of a package
 * still downloading starts a pass that reads it as it grows.
 */
static int
pass_new(struct passes *ps, struct prod *pr, int queued)
{
	const struct pass_growth *gr = want_of(pr)->growth;
	struct pass *p;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return -1;
	p->ps = ps;
	p->src = pr->src;
	p->gr = gr;
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
	if (gr != NULL) {
		gr->hold(gr->arg, 1);
		p->gnext = ps->growing;
		ps->growing = p;
	}
	p->next = ps->list;
	ps->list = p;
	return 0;
}

/*
 * ps->mu held: member fill pr joins an open pass of its package that has
 * not read past its member, else one that has not begun, else starts one,
 * queued behind the passes of the package that run (or, held, until its
 * download starts).  A fill of a package still downloading joins only
 * passes that read it as it grows.
 */
static int
pass_join(struct passes *ps, struct prod *pr, int held)
{
	struct pass *p, *later = NULL;
	int running = 0;

	for (p = ps->list; p != NULL; p = p->next) {
		if (strcmp(p->package, want_of(pr)->package) != 0 ||
		    (want_of(pr)->growth != NULL && p->gr == NULL))
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
	return pass_new(ps, pr, running || held);
}

/*
 * The fills' loop, as a pass of package ends (or its download starts):
 * begin the passes queued behind it, or (why) end their fills failed.
 * Fills of one that cannot begin end as failures.
 */
static void
pass_release(struct passes *ps, const char *package, const char *why)
{
	struct pass *p, *next, *failed = NULL, **pp;
	struct prod *pr;

	pthread_mutex_lock(&ps->mu);
	for (p = ps->list; p != NULL; p = next) {
		next = p->next;
		if (!p->queued || strcmp(p->package, package) != 0)
			continue;
		p->queued = 0;
		if (why != NULL ||
		    pool_submit_long(ps->rd->pool, pass_work, ps->inbox,
			pass_done, p) == -1) {
			pass_close(p);
			for (pp = &ps->growing; *pp != NULL; pp = &(*pp)->gnext)
				if (*pp == p) {
					*pp = p->gnext;
					break;
				}
			p->next = failed;
			failed = p;
		}
	}
	pthread_mutex_unlock(&ps->mu);
	if (why == NULL)
		why = "server is shutting down";
	for (p = failed; p != NULL; p = next) {
		next = p->next;
		if (p->lead != NULL)
			produce_end(p->lead, FLIGHT_FAILED, why);
		while ((pr = p->early) != NULL) {
			p->early = want_of(pr)->next;
			produce_end(pr, FLIGHT_FAILED, why);
		}
		if (p->gr != NULL)
			p->gr->hold(p->gr->arg, 0);
		free(p);
	}
}

/* Worker: member fill pr's temp file and head, as its pass gets to it. */
static int
pass_open_member(struct pass *p, struct prod *pr)
{
	struct pass_want *pw = want_of(pr);
	char sig[RPM_SIG_MAX];
	struct cache_meta meta;

	if (produce_open(pr) == -1)
		return -1;
	member_meta(p->rh, p->archive, pw->member, sig, &meta);
	if (produce_head(pr, pw->size, pw->mtime, &meta, pw->package) == -1) {
		snprintf(pr->why, sizeof(pr->why), "out of memory");
		return -1;
	}
	return 0;
}

/*
 * ps->mu held: a fill of member name (its id, its kinds) that nothing
 * asked for, or NULL when something else fills it or no fill can start.
 */
static struct prod *
pass_unasked(struct pass *p, const char *name, const struct buildid *id,
    unsigned kinds, uint64_t size, int64_t mtime)
{
	struct pass_want *pw;
	struct prod_what w;
	struct cache_key k;

	memset(&w, 0, sizeof(w));
	w.id = *id;
	w.kind = pm_kind(kinds);
	w.reach = RESOLVE_ALL;
	w.announce = size;
	snprintf(w.path, sizeof(w.path), "%s", name);
	pass_label(p->package, w.from, sizeof(w.from));
	if ((pw = calloc(1, sizeof(*pw))) == NULL)
		return NULL;
	memcpy(pw->package, p->package, sizeof(pw->package));
	snprintf(pw->member, sizeof(pw->member), "%s", name);
	pw->mtime = mtime;
	pw->size = size;
	cache_key_make(&k, &w.id, w.kind, "");
	/* pw is the fill's now, or released with it. */
	return produce_adopt(p->ps->rd->prod, &k, &w, p->src, pw);
}

/*
 * Worker: growing pass p meets name, not wanted: the id of a debug file
 * under .build-id/ that it may claim (not cached, budget left), in *id;
 * 0 when it may not.
 */
static int
pass_sibling(struct pass *p, const char *name, struct buildid *id)
{
	int cached = 1;

	if (p->budget == 0 ||
	    repometa_buildid_path(name + 1, id) != REPOMETA_DEBUGINFO)
		return 0;
	if (p->rd != NULL && index_reader_begin(p->rd) == 0) {
		cached = pm_cached(p->rd, id, CACHE_DEBUGINFO);
		index_reader_end(p->rd);
	}
	return !cached;
}

/*
 * Worker, ps->mu held: growing pass p meets member name (size bytes): the
 * entry to extract it for (its fill's, a new one for a member it claims),
 * or NULL to pass it by.
 */
static struct pmember *
pass_meets(struct pass *p, const char *name, uint64_t size, int sibling,
    const struct buildid *id)
{
	struct pmember *pm;
	struct prod *pr;

	if ((pm = pass_member(p, name)) != NULL) {
		if (pm->state != PM_AHEAD)
			return NULL;
		if (pm->prod == NULL) {
			pm->state = PM_BEHIND;
			return NULL;
		}
		p->wanted--;
		want_of(pm->prod)->size = size;
		if (want_of(pm->prod)->mtime == 0)
			want_of(pm->prod)->mtime = clock_now();
	} else if (strncmp(name, PKG_DWZ_DIR, strlen(PKG_DWZ_DIR)) == 0) {
		/* Its id is in its bytes: out aside first. */
		if ((pm = pass_add(p, name)) == NULL)
			return NULL;
		pm->aside = 1;
		pm->rec.size = size;
	} else if (sibling) {
		pr = pass_unasked(p, name, id, ELF_KIND_DEBUGINFO, size,
		    clock_now());
		if (pr == NULL || (pm = pass_add(p, name)) == NULL) {
			if (pr != NULL)
				produce_end(pr, FLIGHT_FAILED, "out of memory");
			return NULL;
		}
		pm->prod = pr;
		pm->rec.id = *id;
		p->budget--;
	} else {
		return NULL;
	}
	pm->state = PM_TAKEN;
	return pm;
}

/*
 * Worker, from pkg_extract_watch: the pass meets member.  Extract it for
 * the fill that wants it, or for a fill of its own when the pass may
 * claim it.
 */
static struct pkg_side *
pass_side(const char *member, uint64_t size, void *arg)
{
	struct pass *p = arg;
	struct pmember *pm = NULL;
	struct prod *pr = NULL;
	struct buildid id;
	enum pm_rank r;
	char err[256];
	int sibling = 0;

	if (p->gr != NULL)
		sibling = pass_sibling(p, member, &id);
	pthread_mutex_lock(&p->ps->mu);
	if (p->gr != NULL) {
		pm = pass_meets(p, member, size, sibling, &id);
		pass_meet(p, member);
	} else if ((pm = pass_member(p, member)) != NULL &&
	    pm->state == PM_AHEAD) {
		r = pm->rank;
		pm_unrank(p, pm);
		p->ahead_dwz -= (size_t)pm->dwz;
		if (pm->prod != NULL)
			p->wanted--;
		else if (pm->dwz)
			pm->prod = pass_unasked(p, pm->rec.member, &pm->rec.id,
			    pm->rec.kinds, pm->rec.size, pm->rec.mtime);
		else if (r != PR_NONE && pass_outranked(p, r) < p->budget &&
		    (pm->prod = pass_unasked(p, pm->rec.member, &pm->rec.id,
			 pm->rec.kinds, pm->rec.size, pm->rec.mtime)) != NULL)
			p->budget--;
		pm->state = pm->prod != NULL ? PM_TAKEN : PM_BEHIND;
	} else {
		pm = NULL;
	}
	if (pm != NULL)
		pr = pm->prod;
	pthread_mutex_unlock(&p->ps->mu);
	if (pm == NULL)
		return NULL;
	if (pm->aside) {
		if ((pm->side.fd = file_tmp_open(p->ps->tmpdir, err,
			 sizeof(err))) == -1) {
			log_warnx("%s: %s: %s", p->package, member, err);
			return NULL;
		}
		pm->side.progress = NULL;
		return &pm->side;
	}
	if (pr == NULL || pass_open_member(p, pr) == -1)
		return NULL;
	pm->side.fd = pr->fd;
	pm->side.progress = pass_member_progress;
	pm->side.arg = pr;
	return &pm->side;
}

/*
 * Worker, from pkg_extract_watch: growing pass p meets a link.  A fill
 * that wants it wants its target, unless the pass met that already (then
 * the fill waits for the package step).
 */
static void
pass_link(const char *member, const char *target, void *arg)
{
	struct pass *p = arg;
	struct pmember *pm;
	char *name;

	pthread_mutex_lock(&p->ps->mu);
	pass_meet(p, member);
	if ((pm = pass_member(p, member)) != NULL && pm->state == PM_AHEAD &&
	    pm->prod != NULL) {
		if (pass_met(p, target) || pass_member(p, target) != NULL ||
		    (name = strdup(target)) == NULL) {
			pm->state = PM_BEHIND;
			p->wanted--;
		} else {
			free((char *)pm->rec.member);
			pm->rec.member = name;
			snprintf(want_of(pm->prod)->member,
			    sizeof(want_of(pm->prod)->member), "%s", target);
		}
	}
	pthread_mutex_unlock(&p->ps->mu);
}

/* Worker, from pkg_extract_watch: the lead's member is coming out. */
static void
pass_progress(uint64_t end, void *arg)
{
	struct pass *p = arg;

	pass_member_progress(end, p->lead);
}

/*
 * Worker, from pkg_extract_watch: 1 while members ahead are wanted; a
 * growing pass reads to the end, where alt files may be.
 */
static int
pass_more(void *arg)
{
	struct pass *p = arg;
	int more;

	pthread_mutex_lock(&p->ps->mu);
	more = p->gr != NULL || p->wanted > 0 || p->ahead_dwz > 0 ||
	    (p->budget > 0 && pass_outranked(p, PR_NONE) > 0);
	if (!more)
		pass_close(p);
	pthread_mutex_unlock(&p->ps->mu);
	return more;
}

/*
 * Worker: debug file pr of growing pass p is out: the alt file it names
 * gets its flight now, before a reader may have pr's last byte, so that
 * the request that comes for it next finds that flight.
 */
static void
pass_name_alt(struct pass *p, struct prod *pr)
{
	struct elf_info info;
	struct pmember *pm;
	struct prod *alt;
	char err[256], name[PATH_MAX];

	if (elf_read_info(pr->fd, &info, err, sizeof(err)) != 0 ||
	    info.alt_id.len == 0 ||
	    pkg_link_resolve(want_of(pr)->member, info.alt_path, name,
		sizeof(name)) == -1)
		return;
	pthread_mutex_lock(&p->ps->mu);
	if (pass_member(p, name) == NULL && !pass_met(p, name) &&
	    (alt = pass_unasked(p, name, &info.alt_id, ELF_KIND_DEBUGINFO, 0,
		 0)) != NULL) {
		if ((pm = pass_add(p, name)) == NULL) {
			produce_end(alt, FLIGHT_FAILED, "out of memory");
		} else {
			pm->prod = alt;
			pm->rec.id = info.alt_id;
			pm->unasked = 1;
			p->wanted++;
		}
	}
	pthread_mutex_unlock(&p->ps->mu);
}

/*
 * Worker: the end of member fill pr's extraction (ok, else err says why
 * when the pass as a whole failed); then the final check, which lets its
 * readers finish (the publishing comes once the pass is over, so that a
 * client asking for the next member right after its last byte finds that
 * member verified).
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
	if (p->gr != NULL && pr->w.kind == CACHE_DEBUGINFO)
		pass_name_alt(p, pr);
	produce_release(pr);
}

/*
 * ps->mu held: the flight growing pass p made for alt file id, which a
 * debug file named by another path and the pass has not met; or NULL.
 * The flight is pm's from now on.
 */
static struct prod *
pass_named_alt(struct pass *p, struct pmember *pm, const struct buildid *id)
{
	struct pmember *named;
	struct prod *pr;
	size_t i;

	for (i = 0; i < p->n; i++) {
		named = p->m[i];
		if (!named->unasked || named->state != PM_AHEAD ||
		    named->prod == NULL || !buildid_equal(&named->rec.id, id))
			continue;
		pr = named->prod;
		named->prod = NULL;
		named->state = PM_BEHIND;
		p->wanted--;
		snprintf(want_of(pr)->member, sizeof(want_of(pr)->member), "%s",
		    pm->rec.member);
		want_of(pr)->size = pm->rec.size;
		want_of(pr)->mtime = clock_now();
		return pr;
	}
	return NULL;
}

/*
 * Worker: alt file pm of growing pass p is out aside: read its build-id,
 * and give its bytes to the flight of that id: the one the pass made when
 * a debug file named it (by another path), else a new one, unless a fill
 * of it runs.
 */
static void
pass_aside(struct pass *p, struct pmember *pm)
{
	struct elf_info info;
	struct prod *pr = NULL;
	struct stat st;
	char err[256];
	off_t off = 0;

	memset(&st, 0, sizeof(st));
	if (pm->side.done == 1 && fstat(pm->side.fd, &st) == 0 &&
	    elf_read_info(pm->side.fd, &info, err, sizeof(err)) == 0 &&
	    info.id.len > 0) {
		pthread_mutex_lock(&p->ps->mu);
		pm->rec.size = (uint64_t)st.st_size;
		if ((pr = pass_named_alt(p, pm, &info.id)) == NULL)
			pr = pass_unasked(p, pm->rec.member, &info.id,
			    ELF_KIND_DEBUGINFO, (uint64_t)st.st_size,
			    clock_now());
		pm->prod = pr;
		pm->rec.id = info.id;
		pthread_mutex_unlock(&p->ps->mu);
	}
	if (pr != NULL && pass_open_member(p, pr) == 0) {
		while (off < st.st_size &&
		    copy_file_range(pm->side.fd, &off, pr->fd, NULL,
			(size_t)(st.st_size - off), 0) > 0)
			produce_progress(pr, (uint64_t)off);
	}
	close(pm->side.fd);
	pm->side.fd = -1;
	if (pr != NULL) {
		pm->out = 1;
		pass_extracted(p, pr, off == st.st_size,
		    "cannot copy the alt file");
	}
}

/* Worker, from pkg_extract_watch: a side is out: judge it at once. */
static void
pass_side_end(struct pkg_side *sd, void *arg)
{
	struct pass *p = arg;
	struct pmember *pm =
	    (struct pmember *)((char *)sd - offsetof(struct pmember, side));

	if (pm->aside) {
		pass_aside(p, pm);
		return;
	}
	pm->out = 1;
	pass_extracted(p, pm->prod, sd->done == 1, "");
}

/*
 * Worker: p's members (a local package's, from the index), then the fills
 * that joined p before it began, its lead among them, each answered by the
 * cache (produce_lookup) or wanted from p (else from a pass of its own).
 * rd (NULL: none) is read in transactions that ps->mu never overlaps.
 */
static void
pass_begin(struct pass *p, struct index_reader *rd)
{
	struct passes *ps = p->ps;
	struct prod *early, *pr, *next, *want = NULL;
	int indexed, reading;

	/* Not begun: no fill looks at p's members yet. */
	if (p->gr == NULL && rd != NULL && index_reader_begin(rd) == 0) {
		pass_load(p, rd);
		index_reader_end(rd);
	}
	pthread_mutex_lock(&ps->mu);
	p->begun = 1;
	p->budget = ps->coextract;
	early = p->early;
	p->early = NULL;
	pthread_mutex_unlock(&ps->mu);
	reading = rd != NULL && index_reader_begin(rd) == 0;
	if (p->lead != NULL && reading &&
	    (want_of(p->lead)->found = produce_lookup(p->lead, rd)) != 0) {
		want_of(p->lead)->next = p->answered;
		p->answered = p->lead;
		p->lead = NULL;
	}
	for (pr = early; pr != NULL; pr = next) {
		next = want_of(pr)->next;
		if (reading &&
		    (want_of(pr)->found = produce_lookup(pr, rd)) != 0) {
			want_of(pr)->next = p->answered;
			p->answered = pr;
		} else {
			want_of(pr)->next = want;
			want = pr;
		}
	}
	if (reading)
		index_reader_end(rd);
	pthread_mutex_lock(&ps->mu);
	for (pr = want; pr != NULL; pr = next) {
		next = want_of(pr)->next;
		/* A member another fill has (as another kind) waits a pass. */
		indexed = p->gr != NULL || pass_member(p, want_of(pr)->member);
		if (pass_want(p, pr) == 0 ||
		    (indexed && pass_join(ps, pr, 0) == 0))
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
 * Worker: the package of p, open; a growing one as it downloads, read with
 * *lim's grow.  -1 with err.
 */
static int
pass_open(struct pass *p, struct pkg_limits *lim, char *err, size_t len)
{
	struct stat st;
	int fd;

	if (p->gr == NULL) {
		p->rh = package_rpmhdr(p->package);
		if ((fd = file_open_regular(p->package, &st)) == -1)
			snprintf(err, len, "%s", "package unavailable");
		return fd;
	}
	if ((fd = p->gr->open(p->gr->arg, err, len)) == -1)
		return -1;
	lim->grow = p->gr->grow;
	lim->grow_arg = p->gr->arg;
	/*
	 * An rpm's header, which holds its files' IMA signatures, comes
	 * before its payload: waiting for it costs the members nothing, and
	 * they are signed as the package cache's are.
	 */
	if (rpmhdr_open_grow(fd, lim->grow, lim->grow_arg, &p->rh, err, len) ==
	    -1)
		log_info("%s: %s", p->package, err);
	err[0] = '\0';
	return fd;
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
	struct pkg_watch watch = { pass_progress, pass_side, pass_more, p, NULL,
		pass_side_end, p->gr != NULL ? pass_link : NULL };
	struct index_reader *rd;
	const char *name = strrchr(p->package, '/'), *member = NULL;
	struct pkg_limits lim;
	char err[256] = "", path[64];
	struct pmember *pm;
	size_t i;
	int rc = -1, fd = -1, pfd, full;

	pthread_mutex_lock(&ps->mu);
	lim = ps->lim;
	full = ps->archive_full_path;
	pthread_mutex_unlock(&ps->mu);
	p->archive = full || name == NULL ? p->package : name + 1;
	rd = index_reader_new(ps->rd->idx);
	pass_begin(p, rd);
	if (p->closed) {
		index_reader_free(rd);
		return;
	}
	p->rd = rd;
	if ((pfd = pass_open(p, &lim, err, sizeof(err))) != -1) {
		/* Counted as it begins: its members may be out before it ends. */
		metrics_package_pass();
		if (p->lead != NULL && pass_open_member(p, p->lead) == 0) {
			member = want_of(p->lead)->member;
			fd = p->lead->fd;
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%d", pfd);
		rc = pkg_extract_watch(path, member, fd, &lim, &watch, err,
		    sizeof(err));
		close(pfd);
	}
	pthread_mutex_lock(&ps->mu);
	pass_close(p);
	p->rd = NULL;
	pthread_mutex_unlock(&ps->mu);
	index_reader_free(rd);
	rpmhdr_free(p->rh);
	if (rc != 0)
		log_warnx("%s: %s: %s", __func__, p->package,
		    err[0] != '\0' ? err : "member not found");
	if (p->lead != NULL)
		pass_extracted(p, p->lead, member != NULL && rc == 0,
		    rc == -1 ? err : "");
	/* Members never out; a growing pass's fills that it never met go on. */
	for (i = 0; i < p->n; i++) {
		pm = p->m[i];
		if (pm->aside && pm->side.fd != -1) {
			close(pm->side.fd); /* the pass failed in it */
			pm->side.fd = -1;
		}
		if (pm->prod != NULL && !pm->out &&
		    (p->gr == NULL || pm->state == PM_TAKEN))
			pass_extracted(p, pm->prod, 0, rc == -1 ? err : "");
	}
	if (p->gr != NULL)
		return; /* what is kept waits for the package's checksum */
	if (p->lead != NULL)
		produce_verify(p->lead);
	for (i = 0; i < p->n; i++)
		if (p->m[i]->prod != NULL)
			produce_verify(p->m[i]->prod);
}

/* Free p, whose fills have ended. */
static void
pass_free(struct pass *p)
{
	size_t i;

	for (i = 0; i < p->n; i++) {
		free((char *)p->m[i]->rec.member);
		free(p->m[i]);
	}
	free(p->m);
	free(p->met);
	if (p->gr != NULL)
		p->gr->hold(p->gr->arg, 0);
	free(p);
}

/* The fills' loop: the fills p answered without extracting them. */
static void
pass_answered(struct pass *p)
{
	struct prod *pr, *next;

	for (pr = p->answered; pr != NULL; pr = next) {
		next = want_of(pr)->next;
		if (want_of(pr)->found != 0)
			produce_end_found(pr, want_of(pr)->found);
		else
			produce_finish(pr);
	}
	p->answered = NULL;
}

/* The fills' loop: growing pass p's kept fills end; p is no more. */
static void
pass_finish(void *arg)
{
	struct pass *p = arg;
	struct pass **pp;
	struct prod *pr;
	size_t i;

	pthread_mutex_lock(&p->ps->mu);
	for (pp = &p->ps->growing; *pp != NULL; pp = &(*pp)->gnext)
		if (*pp == p) {
			*pp = p->gnext;
			break;
		}
	pthread_mutex_unlock(&p->ps->mu);
	for (i = 0; i < p->n; i++) {
		if ((pr = p->m[i]->prod) != NULL) {
			p->m[i]->prod = NULL;
			produce_finish(pr);
		}
	}
	pass_free(p);
}

/* Worker: the verified members of growing pass p, published or not. */
static void
pass_publish(void *arg)
{
	struct pass *p = arg;
	size_t i;

	for (i = 0; i < p->n; i++)
		if (p->m[i]->prod != NULL)
			produce_verify(p->m[i]->prod);
}

/*
 * The fills' loop: the checksum of growing pass p's package is known
 * (ok): what p released is kept, or (failed) none of it; how many members
 * that had gone out are not kept.
 */
static size_t
pass_checked(void *arg, int ok, const char *why)
{
	struct pass *p = arg;
	size_t i, revoked = 0;

	for (i = 0; i < p->n && !ok; i++) {
		if (p->m[i]->prod == NULL)
			continue;
		produce_revoke(p->m[i]->prod, why);
		revoked++;
	}
	/*
	 * Nothing to publish: they end now (the pool may be gone).  Else the
	 * readers have had their last bytes, and one asking now joins the
	 * flight still open: publishing is work no client waits for.
	 */
	if (!ok)
		pass_finish(p);
	else if (pool_submit_background(p->ps->rd->pool, pass_publish,
		     p->ps->inbox, pass_finish, p) == -1) {
		for (i = 0; i < p->n; i++)
			if (p->m[i]->prod != NULL)
				produce_revoke(p->m[i]->prod,
				    "server is shutting down");
		pass_finish(p);
	}
	return revoked;
}

/*
 * The fills' loop: growing pass p is over.  Its fills with verified bytes
 * wait for the package's checksum; the others end now, or go on: a fill
 * of the downloading source back to it, a local fill to a pass of its own,
 * the flight of an alt file the pass never met to the sources after it.
 */
static void
pass_growing_done(struct pass *p)
{
	struct passes *ps = p->ps;
	struct prod *pr, *finish = NULL, *absent = NULL, *back = NULL, *next;
	struct prod **to;
	struct pmember *pm;
	size_t i, kept = 0;

	pass_answered(p);
	pthread_mutex_lock(&ps->mu);
	for (i = 0; i < p->n; i++) {
		pm = p->m[i];
		if ((pr = pm->prod) == NULL || pr->verified) {
			kept += pr != NULL;
			continue;
		}
		pm->prod = NULL;
		if (pm->state == PM_TAKEN) {
			to = &finish; /* failed: its why says so */
		} else if (pm->unasked) {
			to = &absent;
		} else if (want_of(pr)->growth != NULL) {
			to = &back;
		} else if (pass_join(ps, pr, 0) == 0) {
			continue;
		} else {
			pr->res = UPSTREAM_FAILED;
			snprintf(pr->why, sizeof(pr->why),
			    "server is shutting down");
			to = &finish;
		}
		want_of(pr)->next = *to;
		*to = pr;
	}
	pthread_mutex_unlock(&ps->mu);
	for (pr = finish; pr != NULL; pr = next) {
		next = want_of(pr)->next;
		produce_finish(pr);
	}
	for (pr = absent; pr != NULL; pr = next) {
		next = want_of(pr)->next;
		produce_end(pr, FLIGHT_ABSENT, "not in the package");
	}
	for (pr = back; pr != NULL; pr = next) {
		next = want_of(pr)->next;
		p->gr->hand_on(p->gr->arg, pr);
	}
	if (kept > 0)
		p->gr->checked(p->gr->arg, pass_checked, p);
	else
		pass_finish(p);
}

/* The fills' loop: end every fill of the pass. */
static void
pass_done(void *arg)
{
	struct pass *p = arg;
	size_t i;

	pass_release(p->ps, p->package, NULL);
	if (p->gr != NULL) {
		pass_growing_done(p);
		return;
	}
	if (p->lead != NULL)
		produce_finish(p->lead);
	for (i = 0; i < p->n; i++)
		if (p->m[i]->prod != NULL)
			produce_finish(p->m[i]->prod);
	pass_answered(p);
	pass_free(p);
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
	return pass_join(ps, pr, 0);
}

int
passes_join_growing(struct passes *ps, struct prod *pr,
    const struct pass_growth *gr, int held)
{
	want_of(pr)->growth = gr;
	return pass_join(ps, pr, held);
}

void
passes_begin(struct passes *ps, const char *package)
{
	pass_release(ps, package, NULL);
}

void
passes_drop(struct passes *ps, const char *package, const char *why)
{
	pass_release(ps, package, why);
}

struct flight *
passes_find(struct passes *ps, const struct cache_key *k)
{
	struct flight *f = NULL;
	struct pass *p;
	size_t i;

	pthread_mutex_lock(&ps->mu);
	for (p = ps->growing; p != NULL && f == NULL; p = p->gnext)
		for (i = 0; i < p->n && f == NULL; i++)
			if (p->m[i]->prod != NULL &&
			    cache_key_equal(&p->m[i]->prod->key, k)) {
				f = p->m[i]->prod->f;
				flight_ref(f);
			}
	pthread_mutex_unlock(&ps->mu);
	return f;
}

struct passes *
passes_new(const struct resolve_deps *rd, struct pool_inbox *inbox)
{
	struct passes *ps;
	long ncpu;

	if ((ps = calloc(1, sizeof(*ps))) == NULL)
		return NULL;
	ps->rd = rd;
	ps->inbox = inbox;
	ps->lim = pkg_default_limits;
	ps->lim.room = passes_room;
	ps->lim.room_arg = ps;
	ps->lim.xz_threads = PASS_XZ_THREADS;
	if ((ncpu = sysconf(_SC_NPROCESSORS_ONLN)) < PASS_XZ_THREADS)
		ps->lim.xz_threads = ncpu > 1 ? (unsigned)ncpu : 1;
	snprintf(ps->tmpdir, sizeof(ps->tmpdir), "%s/tmp", rd->cfg->cache_dir);
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
