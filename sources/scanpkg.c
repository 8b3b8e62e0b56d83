/*
 * sources/scanpkg.c: the packages a scan reads: files under the package
 * roots named like packages (.deb .ddeb .rpm .pkg.tar[.zst|.xz|.gz]),
 * compared with their package record as the walk compares local files;
 * new or changed ones are queued.  Each full queue is read pkg_threads at
 * once (pkg_scan() decompresses the whole package and inspects every ELF
 * member in an unlinked file of tmpdir), then committed, each package
 * replacing its old members.  Packages whose DWARF 4 debug files need a
 * dwz alt file that no indexed package shipped when they were read are
 * read once more at the end (see struct pkg_read).  scan_package() reads
 * one package the same way, for a repository's download.
 *
 * Threads: the queue is read on the scan's thread and its helpers
 * (sources/scan.c says how); a reader touches only its package, commits a
 * big one itself, and takes the scan's lock for the counts, the failure
 * and the packages to read again.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/pkgindex.h"
#include "daemon/log.h"
#include "daemon/pool.h"
#include "indexer/file.h"
#include "indexer/sources.h"
#include "sources/scan_int.h"

/* The names of the files under package roots that are read. */
static const char *const pkg_suffixes[] = { ".deb", ".ddeb", ".rpm", ".pkg.tar",
	".pkg.tar.zst", ".pkg.tar.xz", ".pkg.tar.gz" };

/* 1 when path ends like a package and has a name before that. */
static int
is_package_name(const char *path)
{
	size_t len = strlen(path), n, i;

	for (i = 0; i < sizeof(pkg_suffixes) / sizeof(pkg_suffixes[0]); i++) {
		n = strlen(pkg_suffixes[i]);
		if (len > n + 1 && path[len - n - 1] != '/' &&
		    strcmp(path + len - n, pkg_suffixes[i]) == 0)
			return 1;
	}
	return 0;
}

static void
pkg_item_clear(struct pkg_item *it)
{
	size_t i;

	for (i = 0; i < it->nrecs; i++)
		free((char *)it->recs[i].member);
	free(it->recs);
	free(it->path);
	memset(it, 0, sizeof(*it));
}

/* Stop pkg_scan() with result r and the reason why. */
static int
member_stop(struct pkg_item *it, enum pkg_result r, const char *why)
{
	it->result = r;
	snprintf(it->err, sizeof(it->err), "%s", why);
	return -1;
}

/*
 * Add a record for path to it; -1 when the package's budget of records and
 * names is spent (*why says so) or memory is short (the package is then
 * read again at the next scan).
 */
static int
add_rec(struct pkg_item *it, const char *path, uint64_t size, int64_t mtime,
    unsigned kinds, const struct buildid *id, const char **why)
{
	struct pkg_rec *r;
	size_t len = strlen(path) + 1, cap;

	*why = NULL;
	if (it->nrecs == PKG_RECS_MAX || it->names + len > PKG_NAMES_MAX) {
		*why = "too many members";
		return -1;
	}
	if (it->nrecs == it->caprecs) {
		cap = it->caprecs == 0 ? 64 : 2 * it->caprecs;
		if ((r = realloc(it->recs, cap * sizeof(*r))) == NULL)
			return -1;
		it->recs = r;
		it->caprecs = cap;
	}
	r = &it->recs[it->nrecs];
	memset(r, 0, sizeof(*r));
	if ((r->member = strdup(path)) == NULL)
		return -1;
	r->package = it->path;
	r->size = size;
	r->mtime = mtime;
	r->kinds = kinds;
	if (id != NULL)
		r->id = *id;
	it->nrecs++;
	it->names += len;
	return 0;
}

/* The dwz alt files of a package kept while it is read, for its sources. */
#define PKG_ALTS_MAX 4

/* A debug file whose sources wait for a dwz alt file met after it. */
struct pkg_later {
	char *member;
	struct buildid id, alt_id;
	int done;
};

/*
 * One reading of a package.  dwz moves the comp_dir of DWARF 4 units into
 * the alt file, so a debug file's relative source names need it; a debug
 * file met before its alt file (a .deb's .build-id/ sorts before .dwz/) is
 * listed again in a second pass that extracts only those files, once the
 * first pass has kept the alt file, or extracted it from the indexed
 * package that ships it (Fedora's sub-package -debuginfo files link to the
 * main one's).  A package whose alt files no indexed package ships yet is
 * read again at the end of the scan, when the packages read beside it are
 * indexed too.
 */
struct pkg_read {
	struct pkg_item *it;
	struct index *idx;
	const struct pkg_limits *lim;
	const char *tmpdir;
	int last_round; /* log what is still missing */
	struct {
		struct buildid id;
		int fd; /* -1: looked for and not found */
	} alt[PKG_ALTS_MAX];
	size_t nalt;
	struct pkg_later *later; /* by member, for the second pass */
	size_t nlater, caplater;
	size_t pending; /* of them, with an alt file, not listed again yet */
	struct pkg_later *cur; /* being extracted by the second pass */
	struct pkg_side side;
};

struct source_ctx {
	struct pkg_item *it;
	const struct buildid *id;
};

/* A source file a debuginfo member names; over budget, the rest are lost. */
static int
source_cb(const char *path, void *arg)
{
	struct source_ctx *sc = arg;
	const char *why;

	return add_rec(sc->it, path, 0, 0, PKG_REC_SOURCE, sc->id, &why);
}

/* The slot of the alt file with build-id id, kept or not found, or -1. */
static int
alt_slot(const struct pkg_read *pr, const struct buildid *id)
{
	size_t i;

	for (i = 0; id->len > 0 && i < pr->nalt; i++)
		if (buildid_equal(&pr->alt[i].id, id))
			return (int)i;
	return -1;
}

/* The kept alt file with build-id id, or -1. */
static int
alt_find(const struct pkg_read *pr, const struct buildid *id)
{
	int i = alt_slot(pr, id);

	return i == -1 ? -1 : pr->alt[i].fd;
}

/* pkgidx_find()'s callback: where the first record found lives. */
static int
alt_where_cb(const struct pkg_rec *r, void *arg)
{
	char(*where)[PATH_MAX] = arg;

	if (strlen(r->package) >= PATH_MAX || strlen(r->member) >= PATH_MAX)
		return 0;
	strcpy(where[0], r->package);
	strcpy(where[1], r->member);
	return 1;
}

/*
 * Keep the alt file with build-id id from the indexed package that ships
 * it, if any; once per id and package read.
 */
static void
alt_fetch(struct pkg_read *pr, const struct buildid *id)
{
	char where[2][PATH_MAX], err[256];
	struct index_reader *rd;
	int found = 0, fd = -1;

	if (pr->nalt == PKG_ALTS_MAX || alt_slot(pr, id) != -1)
		return;
	if ((rd = index_reader_new(pr->idx)) != NULL &&
	    index_reader_begin(rd) == 0) {
		found = pkgidx_find(rd, id, ELF_KIND_DEBUGINFO, alt_where_cb,
			    where) == 1;
		index_reader_end(rd);
	}
	index_reader_free(rd);
	if (found && (fd = file_tmp_open(pr->tmpdir, err, sizeof(err))) != -1 &&
	    pkg_extract(where[0], where[1], fd, pr->lim, err, sizeof(err)) !=
		0) {
		log_info("scan: %s: alt file %s of %s: %s", pr->it->path,
		    where[1], where[0], err);
		close(fd);
		fd = -1;
	}
	pr->alt[pr->nalt].id = *id;
	pr->alt[pr->nalt].fd = fd;
	pr->nalt++;
}

/* Keep a copy of the dwz alt file m, for the debug files that follow. */
static void
alt_keep(struct pkg_read *pr, const struct pkg_member *m)
{
	static _Thread_local char buf[64 << 10];
	char err[256];
	uint64_t off = 0;
	ssize_t n = 0;
	int fd;

	if (pr->nalt == PKG_ALTS_MAX || alt_slot(pr, &m->elf.id) != -1)
		return;
	if ((fd = file_tmp_open(pr->tmpdir, err, sizeof(err))) == -1) {
		log_info("scan: %s: %s", pr->it->path, err);
		return;
	}
	while (off < m->size &&
	    (n = pread(m->fd, buf, sizeof(buf), (off_t)off)) > 0 &&
	    write(fd, buf, (size_t)n) == n)
		off += (uint64_t)n;
	if (off != m->size) {
		log_info("scan: %s: cannot keep %s: %s", pr->it->path, m->path,
		    strerror(errno));
		close(fd);
		return;
	}
	pr->alt[pr->nalt].id = m->elf.id;
	pr->alt[pr->nalt].fd = fd;
	pr->nalt++;
}

/*
 * Add the sources the debug file at fd (member, build-id id, linking to
 * the alt file alt_id) names; 1 when some need an alt file not kept yet.
 */
static int
member_sources(struct pkg_read *pr, const char *member, int fd,
    const struct buildid *id, const struct buildid *alt_id)
{
	struct source_ctx sc = { pr->it, id };
	int alt_fd = alt_find(pr, alt_id), missing = 0;
	char err[256];

	if (sources_list(fd, alt_fd, pr->tmpdir, PKG_SOURCES_MAX, source_cb,
		&sc, &missing, err, sizeof(err)) == -1)
		log_debug("scan: %s %s: sources: %s", pr->it->path, member,
		    err);
	return missing && alt_fd == -1 && alt_id->len > 0;
}

/* Remember a debug file to list again once its alt file is kept. */
static int
later_add(struct pkg_read *pr, const char *member, const struct buildid *id,
    const struct buildid *alt_id)
{
	struct pkg_later *v;
	size_t cap;

	if (pr->nlater == pr->caplater) {
		cap = pr->caplater == 0 ? 16 : 2 * pr->caplater;
		if ((v = realloc(pr->later, cap * sizeof(*v))) == NULL)
			return -1;
		pr->later = v;
		pr->caplater = cap;
	}
	v = &pr->later[pr->nlater];
	if ((v->member = strdup(member)) == NULL)
		return -1;
	v->id = *id;
	v->alt_id = *alt_id;
	v->done = 0;
	pr->nlater++;
	return 0;
}

/*
 * pkg_scan()'s callback: keep the servable members of the package, the
 * regular files it ships, and the sources its debuginfo members name.
 */
static int
member_cb(const struct pkg_member *m, void *arg)
{
	struct pkg_read *pr = arg;
	struct pkg_item *it = pr->it;
	const char *why;
	unsigned kinds;

	if (atomic_load(it->cancel))
		return member_stop(it, PKG_AGAIN, "scan cancelled");
	/* Any regular file may be the source file some debuginfo names. */
	if (m->regular && m->type != PKG_ELF &&
	    add_rec(it, m->path, m->size, m->mtime, PKG_REC_FILE, NULL, &why) ==
		-1)
		return why != NULL
		    ? 0
		    : member_stop(it, PKG_AGAIN, "out of memory");
	if (m->type != PKG_ELF || m->elf.id.len == 0)
		return 0;
	/* A dwz file answers debuginfo requests for its own build-id. */
	kinds = m->is_dwz ? ELF_KIND_DEBUGINFO : m->elf.kinds & ELF_KIND_ALL;
	if (kinds == 0)
		return 0;
	if (add_rec(it, m->path, m->size, m->mtime, kinds, &m->elf.id, &why) ==
	    -1)
		return member_stop(it, why != NULL ? PKG_BAD : PKG_AGAIN,
		    why != NULL ? "too many ELF members" : "out of memory");
	if (m->is_dwz)
		alt_keep(pr, m);
	else if ((kinds & ELF_KIND_DEBUGINFO) != 0 &&
	    member_sources(pr, m->path, m->fd, &m->elf.id, &m->elf.alt_id) &&
	    later_add(pr, m->path, &m->elf.id, &m->elf.alt_id) == -1)
		return member_stop(it, PKG_AGAIN, "out of memory");
	return 0;
}

static int
later_cmp(const void *a, const void *b)
{
	return strcmp(((const struct pkg_later *)a)->member,
	    ((const struct pkg_later *)b)->member);
}

/* The second pass: extract a debug file waiting for its alt file, if kept. */
static struct pkg_side *
later_side(const char *member, uint64_t size, void *arg)
{
	struct pkg_read *pr = arg;
	struct pkg_later key, *l;

	key.member = (char *)member;
	l = bsearch(&key, pr->later, pr->nlater, sizeof(*l), later_cmp);
	if (l == NULL || l->done || alt_find(pr, &l->alt_id) == -1 ||
	    ftruncate(pr->side.fd, 0) == -1)
		return NULL;
	pr->cur = l;
	pr->side.done = 0;
	return &pr->side;
}

/* The second pass, after each member: list the one just out; 1 for more. */
static int
later_more(void *arg)
{
	struct pkg_read *pr = arg;

	if (pr->cur != NULL) {
		if (pr->side.done == 1)
			member_sources(pr, pr->cur->member, pr->side.fd,
			    &pr->cur->id, &pr->cur->alt_id);
		pr->cur->done = 1;
		pr->cur = NULL;
		pr->pending--;
	}
	return pr->pending > 0 && !atomic_load(pr->it->cancel);
}

/*
 * After the first pass: list the debug files that waited for an alt file,
 * met later in the pass or shipped by another indexed package, extracting
 * them again in one more pass.
 */
static void
read_later(struct pkg_read *pr)
{
	struct pkg_watch watch = { NULL, later_side, later_more, pr, NULL, NULL,
		NULL };
	char err[256];
	size_t i, lost = 0;

	for (i = 0; i < pr->nlater; i++)
		alt_fetch(pr, &pr->later[i].alt_id);
	for (i = 0; i < pr->nlater; i++)
		lost += alt_find(pr, &pr->later[i].alt_id) == -1;
	pr->pending = pr->nlater - lost;
	pr->it->waits_alt = lost > 0;
	if (lost > 0 && pr->last_round)
		log_info("scan: package %s: %zu debug file(s) link to a dwz "
			 "alt file no indexed package ships; their relative "
			 "source names are not indexed",
		    pr->it->path, lost);
	if (lost == pr->nlater)
		return;
	qsort(pr->later, pr->nlater, sizeof(*pr->later), later_cmp);
	if ((pr->side.fd = file_tmp_open(pr->tmpdir, err, sizeof(err))) == -1 ||
	    pkg_extract_watch(pr->it->path, NULL, -1, pr->lim, &watch, err,
		sizeof(err)) == -1)
		log_info("scan: package %s: sources: %s", pr->it->path, err);
	if (pr->side.fd != -1)
		close(pr->side.fd);
}

/* Read one queued package; on the scan's thread or a helper. */
static void
read_package(struct scan *s, struct pkg_item *it)
{
	struct pkg_stats st_pkg;
	struct pkg_read pr;
	struct stat st;
	size_t i;
	int fd;

	it->cancel = s->opts->cancel;
	it->result = PKG_AGAIN;
	if ((fd = file_open_regular(it->path, &st)) == -1) {
		snprintf(it->err, sizeof(it->err), "%s",
		    errno == EINVAL ? "not a regular file" : strerror(errno));
		return;
	}
	close(fd);
	/* The record describes the file as it was when read. */
	it->st = st;
	it->result = PKG_READ;
	memset(&pr, 0, sizeof(pr));
	pr.it = it;
	pr.idx = s->idx;
	pr.lim = &s->lim;
	pr.tmpdir = s->opts->tmpdir;
	pr.last_round = s->last_round;
	pr.side.fd = -1;
	if (pkg_scan_stats(it->path, s->opts->tmpdir, &s->lim, member_cb, &pr,
		&st_pkg, it->err, sizeof(it->err)) == -1)
		it->result = PKG_BAD;
	else if (it->result == PKG_READ && pr.nlater > 0)
		read_later(&pr);
	for (i = 0; i < pr.nalt; i++)
		if (pr.alt[i].fd != -1)
			close(pr.alt[i].fd);
	for (i = 0; i < pr.nlater; i++)
		free(pr.later[i].member);
	free(pr.later);
	/* Short of disk space, it is read again at the next scan. */
	if (it->result == PKG_READ && st_pkg.no_room > 0) {
		it->result = PKG_AGAIN;
		snprintf(it->err, sizeof(it->err),
		    "%u ELF member(s) not inspected: less than %u%% of the "
		    "disk would be left free",
		    st_pkg.no_room, s->lim.min_free_pct);
	}
	/* Hostile members are skipped, not the package: say so. */
	if (st_pkg.bad_names > 0 || st_pkg.too_large > 0 || st_pkg.bad_elf > 0)
		log_info("scan: package %s: skipped %u member(s) with bad "
			 "names, %u too large, %u unreadable ELF",
		    it->path, st_pkg.bad_names, st_pkg.too_large,
		    st_pkg.bad_elf);
}

/* Read path again at the end of the scan, for the alt files it lacked. */
static void
wait_alt(struct scan *s, const char *path)
{
	char **v;
	size_t cap;

	if (s->nwaiting == s->capwaiting) {
		cap = s->capwaiting == 0 ? 16 : 2 * s->capwaiting;
		if ((v = realloc(s->waiting, cap * sizeof(*v))) == NULL)
			return;
		s->waiting = v;
		s->capwaiting = cap;
	}
	if ((s->waiting[s->nwaiting] = strdup(path)) != NULL)
		s->nwaiting++;
}

/*
 * Record the packages read among the n items in one write transaction and
 * free their members; items already committed (path NULL) are passed by.
 * Runs on the scan thread, or on a reader for the package it read.
 */
static void
commit_packages(struct scan *s, struct pkg_item *items, size_t n)
{
	struct index_batch *b;
	struct index_file rec;
	char err[256];
	size_t i;

	b = index_batch_begin(s->idx, err, sizeof(err));
	pthread_mutex_lock(&s->lock);
	for (i = 0; i < n; i++) {
		struct pkg_item *it = &items[i];

		if (it->path == NULL)
			continue;
		if (it->result == PKG_READ) {
			size_t j, elf = 0;

			for (j = 0; j < it->nrecs; j++)
				if (it->recs[j].kinds & ELF_KIND_ALL)
					elf++;
			/* The last round's were counted when first read. */
			if (!s->last_round) {
				s->stats.packages++;
				s->stats.members += elf;
			}
			log_debug("scan: package %s: %zu servable members, "
				  "%zu records",
			    it->path, elf, it->nrecs);
		} else if (!atomic_load(s->opts->cancel)) {
			s->stats.failed++;
			log_info("scan: package %s skipped: %s", it->path,
			    it->err);
		}
		if (it->waits_alt && !s->last_round)
			wait_alt(s, it->path);
		/* A bad package is recorded bare: not read again unchanged. */
		scan_rec_from_stat(&rec, it->path, &it->st);
		if (b != NULL && it->result != PKG_AGAIN)
			pkgidx_put(b, &rec,
			    it->result == PKG_READ ? it->recs : NULL,
			    it->result == PKG_READ ? it->nrecs : 0);
		pkg_item_clear(it);
	}
	if (b != NULL && !s->one)
		index_batch_set_scan(b, &s->stats);
	pthread_mutex_unlock(&s->lock);
	if (b == NULL || index_batch_commit(b, err, sizeof(err)) == -1) {
		log_warnx("scan: %s", err);
		pthread_mutex_lock(&s->lock);
		s->failed = 1;
		pthread_mutex_unlock(&s->lock);
	}
}

/* The records of a package read take this much memory, roughly. */
static size_t
pkg_item_held(const struct pkg_item *it)
{
	return it->names + it->caprecs * sizeof(*it->recs);
}

/* pool_item_fn: read queued package i; a big one is committed at once. */
static void
read_queued_package(void *arg, size_t i)
{
	struct scan *s = arg;
	struct pkg_item *it = &s->pkgq[i];

	read_package(s, it);
	if (pkg_item_held(it) > PKG_HELD_MAX)
		commit_packages(s, it, 1);
}

/* Largest first: a big package read last would leave the others idle. */
static int
pkg_item_cmp(const void *a, const void *b)
{
	off_t x = ((const struct pkg_item *)a)->st.st_size;
	off_t y = ((const struct pkg_item *)b)->st.st_size;

	return x < y ? 1 : x > y ? -1 : 0;
}

void
scan_flush_packages(struct scan *s)
{
	unsigned nt = s->opts->pkg_threads;
	long ncpu;

	if (s->npkgq == 0)
		return;
	if (nt == 0) {
		ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		nt = ncpu > 0 ? (unsigned)ncpu : 1;
	}
	qsort(s->pkgq, s->npkgq, sizeof(s->pkgq[0]), pkg_item_cmp);
	pool_share_run(s->share, scan_helpers(nt), read_queued_package, s,
	    s->npkgq);
	commit_packages(s, s->pkgq, s->npkgq);
	s->npkgq = 0;
}

/* Queue the package at path (st) to be read. */
static void
queue_package(struct scan *s, const char *path, const struct stat *st)
{
	struct pkg_item *it = &s->pkgq[s->npkgq];

	if ((it->path = strdup(path)) == NULL) {
		s->pkgs.incomplete = 1;
		return;
	}
	it->st = *st;
	/* The last round's were counted when first queued. */
	if (!s->last_round)
		s->stats.pkg_queued++;
	if (++s->npkgq == PKG_QUEUE_MAX)
		scan_flush_packages(s);
}

/* Queue it when new or changed. */
void
scan_consider_package(struct scan *s, const char *path, const struct stat *st)
{
	if (!is_package_name(path))
		return;
	s->stats.pkg_seen++;
	if (scan_needs_reading(s, &s->pkgs, path, st, pkgidx_get_package))
		queue_package(s, path, st);
}

/*
 * The last round: read again the packages whose debug files link to alt
 * files that were not indexed when they were read, now that every package
 * of the scan is.
 */
void
scan_read_waiting(struct scan *s)
{
	struct stat st;
	size_t i;

	s->last_round = 1;
	for (i = 0; i < s->nwaiting; i++) {
		if (!atomic_load(s->opts->cancel) &&
		    stat(s->waiting[i], &st) == 0 && S_ISREG(st.st_mode))
			queue_package(s, s->waiting[i], &st);
		free(s->waiting[i]);
	}
	free(s->waiting);
	s->waiting = NULL;
	s->nwaiting = s->capwaiting = 0;
	scan_flush_packages(s);
}

int
scan_package(struct index *idx, const char *path, const char *tmpdir,
    unsigned min_free_pct, char *err, size_t errlen)
{
	struct scan_opts opts;
	atomic_int cancel = 0;
	struct scan *s;
	int rc;

	if ((s = calloc(1, sizeof(*s))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	memset(&opts, 0, sizeof(opts));
	opts.tmpdir = tmpdir;
	opts.min_free_pct = min_free_pct;
	opts.cancel = &cancel;
	pthread_mutex_init(&s->lock, NULL);
	s->idx = idx;
	s->opts = &opts;
	s->one = 1;
	s->lim = pkg_default_limits;
	s->lim.min_free_pct = min_free_pct;
	/* Its alt files are in it (Debian), or indexed: one round. */
	s->last_round = 1;
	if ((s->pkgq[0].path = strdup(path)) == NULL) {
		free(s);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	read_package(s, &s->pkgq[0]);
	rc = s->pkgq[0].result == PKG_READ ? 0 : -1;
	if (rc == -1)
		snprintf(err, errlen, "%s", s->pkgq[0].err);
	commit_packages(s, s->pkgq, 1);
	if (s->failed) {
		snprintf(err, errlen, "cannot write the index");
		rc = -1;
	}
	pthread_mutex_destroy(&s->lock);
	free(s);
	return rc;
}
