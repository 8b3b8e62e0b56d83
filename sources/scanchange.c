/*
 * sources/scanchange.c: scan_changes(), the scan of the paths a directory
 * watch saw change (daemon/watch.h) instead of the roots: each changed
 * path is walked as a root would be (a file, or a tree), its files and
 * packages read as a scan reads them, and only the records of those paths
 * and of the files under those directories that the walk did not reach
 * are dropped; the scan record is left as the last whole scan made it.
 *
 * On the calling thread, a long job of the worker pool like scan_run()
 * (sources/scan.c says how its reads share the pool).
 */
#include <stdatomic.h>
#include <string.h>

#include "cache/pkgindex.h"
#include "daemon/log.h"
#include "sources/scan_int.h"

/* 1 when path is dir or lies under it. */
static int
under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (n == 1 && dir[0] == '/')
		return path[0] == '/';
	return strncmp(path, dir, n) == 0 &&
	    (path[n] == '\0' || path[n] == '/');
}

struct change_keep {
	struct scan *s;
	const struct scan_change *v;
	size_t n;
	int pkg;
	int exact; /* changed paths that are not directories count too */
};

/*
 * The prunes' keep(): a record under a changed directory (or, with exact,
 * of a changed path) stays only if the walk reached it; others stay.
 */
static int
keep_unchanged(const char *path, void *arg)
{
	struct change_keep *ck = arg;
	struct reach *r = ck->pkg ? &ck->s->pkgs : &ck->s->files;
	size_t i;

	for (i = 0; i < ck->n; i++) {
		const struct scan_change *c = &ck->v[i];

		if (c->pkg != ck->pkg)
			continue;
		if ((c->dir && under(path, c->path)) ||
		    (ck->exact && strcmp(path, c->path) == 0))
			return scan_reached(r, path);
	}
	return 1;
}

/*
 * Drop the records of changed paths the walk did not reach: a vanished
 * file's, one that is no longer a file's, and under a changed directory
 * every one not reached (a walk of the whole files table, only then).
 * Kinds of root whose walk could not read everything keep theirs.
 */
static int
finish_changes(struct scan *s, const struct scan_change *v, size_t n)
{
	struct change_keep files = { s, v, n, 0, 0 }, pkgs = { s, v, n, 1, 1 };
	struct index_batch *b;
	uint64_t removed = 0;
	int dirs = 0, anypkg = 0;
	char err[256];
	size_t i;

	if ((b = index_batch_begin(s->idx, err, sizeof(err))) == NULL)
		goto fail;
	for (i = 0; i < n; i++) {
		anypkg |= v[i].pkg;
		if (v[i].pkg || s->files.incomplete)
			continue;
		if (v[i].dir)
			dirs = 1;
		else if (!scan_reached(&s->files, v[i].path) &&
		    index_batch_del_file(b, v[i].path) == 0)
			s->stats.removed++;
	}
	if (dirs && !s->files.incomplete &&
	    index_batch_prune(b, keep_unchanged, &files, &removed) == 0)
		s->stats.removed += removed;
	if (anypkg && !s->pkgs.incomplete &&
	    pkgidx_prune(b, keep_unchanged, &pkgs, &removed) == 0)
		s->stats.removed += removed;
	if (index_batch_commit(b, err, sizeof(err)) == -1)
		goto fail;
	return 0;
fail:
	log_warnx("scan: %s", err);
	return -1;
}

int
scan_changes(struct index *idx, const struct scan_opts *opts,
    const struct scan_change *v, size_t n, struct index_scan *out)
{
	struct scan *s;
	size_t i;
	int rc;

	if ((s = scan_new(idx, opts)) == NULL)
		return -1;
	s->one = 1;

	for (i = 0; i < n && !atomic_load(opts->cancel); i++)
		if (!v[i].pkg)
			scan_walk_change(s, &v[i]);
	scan_flush_files(s);
	scan_relist_sources(s);
	if (opts->tmpdir == NULL)
		s->pkgs.incomplete = 1; /* no room to read packages */
	for (i = 0; i < n && !atomic_load(opts->cancel); i++)
		if (v[i].pkg && opts->tmpdir != NULL)
			scan_walk_change(s, &v[i]);
	scan_flush_packages(s);
	scan_read_waiting(s);
	rc = atomic_load(opts->cancel) || s->failed ? -1 : 0;
	if (rc == 0 && finish_changes(s, v, n) == -1)
		rc = -1;
	*out = s->stats;
	scan_free(s);
	return rc;
}
