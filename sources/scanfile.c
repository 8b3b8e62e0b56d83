/*
 * sources/scanfile.c: the local files a scan reads: the queue of new and
 * changed files under the scan-dir roots, read several at once (opening a
 * file and reading its ELF headers is the slow part), then committed in
 * one write transaction, so results become visible as the scan goes.
 * Each commit also records the scan's progress (struct index_scan), which
 * /metrics and dbgmirror stats read.  scan_identify() is the one way a
 * local file becomes an index record.
 *
 * A file indexed with a build-id clears the negative entries of its id's
 * debuginfo and executable at once, in the batch that records it, as a
 * package member does (cache/pkgindex.c); a file that is no longer ELF
 * loses its record.
 *
 * Local sources.  Reading a debuginfo file also lists the source files its
 * DWARF names (indexer/sources.h), keeps those that exist as regular files
 * then, and records them with the file (cache/pkgindex.h, PKG_REC_LOCAL),
 * for /source (sources/localsrc.h decides what of them may be served).  A
 * dwz'd debug file's relative names need its alt file; when that is not
 * indexed yet as the file is read, the file is listed again at the end of
 * the scan, the alt file then found by build-id among what the scan
 * indexed.  A file record made without its sources (the request path
 * re-indexing a changed file, or an older version) is read again by the
 * next scan even though it is unchanged.
 *
 * Threads: a queue is read on the scan's thread and its helpers
 * (sources/scan.c says how); a helper touches only the item it took, and
 * the index through its own reader.  The commits are the scan thread's.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/key.h"
#include "cache/misses.h"
#include "cache/negative.h"
#include "cache/pkgindex.h"
#include "daemon/log.h"
#include "daemon/pool.h"
#include "daemon/sandbox.h"
#include "indexer/file.h"
#include "indexer/sources.h"
#include "sources/scan_int.h"

/* Smaller files cannot hold an ELF header. */
#define ELF_MIN_SIZE 64
#define SRC_NAMES_MAX (4u << 20) /* bytes of the names of one's sources */

/* scan_identify(), and the build-id of the file's dwz alt file. */
static int
identify(int fd, const char *path, const struct stat *st,
    struct index_file *rec, struct buildid *alt_id, char *err, size_t errlen)
{
	struct elf_info info;
	int rc;

	err[0] = '\0';
	alt_id->len = 0;
	rc = elf_read_info(fd, &info, err, errlen);
	if (rc == ELF_NOTFOUND)
		return rc;
	scan_rec_from_stat(rec, path, st);
	if (rc == 0 && info.id.len == 0)
		snprintf(err, errlen, "no GNU build-id note");
	if (rc == 0 && info.id.len > 0) {
		rec->id = info.id;
		rec->kinds = info.kinds;
		*alt_id = info.alt_id;
		if (rec->kinds == 0)
			snprintf(err, errlen,
			    "neither debuginfo nor executable");
	}
	return 0;
}

int
scan_identify(int fd, const char *path, const struct stat *st,
    struct index_file *rec, char *err, size_t errlen)
{
	struct buildid alt_id;

	return identify(fd, path, st, rec, &alt_id, err, errlen);
}

static void
srclist_clear(struct srclist *sl)
{
	size_t i;

	for (i = 0; i < sl->n; i++)
		free(sl->v[i]);
	free(sl->v);
	memset(sl, 0, sizeof(*sl));
}

/*
 * sources_list()'s callback: keep a source that exists as a regular file;
 * past the bounds of one file, stop.
 */
static int
local_source_cb(const char *path, void *arg)
{
	struct srclist *sl = arg;
	size_t len = strlen(path) + 1, cap;
	struct stat st;
	char **v;

	if (stat(path, &st) == -1 || !S_ISREG(st.st_mode))
		return 0;
	if (sl->n == PKG_SOURCES_MAX || sl->names + len > SRC_NAMES_MAX)
		return 1;
	if (sl->n == sl->cap) {
		cap = sl->cap == 0 ? 16 : 2 * sl->cap;
		if ((v = realloc(sl->v, cap * sizeof(*v))) == NULL)
			return 1;
		sl->v = v;
		sl->cap = cap;
	}
	if ((sl->v[sl->n] = strdup(path)) == NULL)
		return 1;
	sl->n++;
	sl->names += len;
	return 0;
}

/* index_find()'s callback: the path of the first file found. */
static int
alt_path_cb(const struct index_file *f, void *arg)
{
	return snprintf(arg, PATH_MAX, "%s", f->path) < PATH_MAX;
}

/* The local file indexed as the debuginfo of build-id id, open; or -1. */
static int
alt_open(struct index *idx, const struct buildid *id)
{
	struct index_reader *rd;
	char path[PATH_MAX];
	struct stat st;
	int found = 0;

	if (id->len == 0 || (rd = index_reader_new(idx)) == NULL)
		return -1;
	if (index_reader_begin(rd) == 0) {
		found = index_find(rd, id, ELF_KIND_DEBUGINFO, alt_path_cb,
			    path) == 1;
		index_reader_end(rd);
	}
	index_reader_free(rd);
	return found ? file_open_regular(path, &st) : -1;
}

/*
 * List the sources of the debuginfo file it (open at fd) into it->src,
 * with its alt file if indexed; it->alt_missing when that lacked.
 */
static void
list_sources(struct scan *s, struct scan_item *it, int fd)
{
	int alt_fd, missing = 0;
	char err[256];

	srclist_clear(&it->src);
	it->alt_missing = 0;
	if ((it->rec.kinds & ELF_KIND_DEBUGINFO) == 0)
		return;
	alt_fd = alt_open(s->idx, &it->alt_id);
	if (sources_list(fd, alt_fd, s->opts->tmpdir, PKG_SOURCES_MAX,
		local_source_cb, &it->src, &missing, err, sizeof(err)) == -1)
		log_debug("scan: %s: sources: %s", it->path, err);
	it->alt_missing = missing && alt_fd == -1 && it->alt_id.len > 0;
	if (alt_fd != -1)
		close(alt_fd);
}

/* Read one queued file; on the scan's thread or a helper. */
static void
read_item(struct scan *s, struct scan_item *it)
{
	struct stat st;
	int fd;

	it->rc = ELF_NOTFOUND;
	if ((fd = file_open_regular(it->path, &st)) == -1) {
		if (errno != EINVAL) {
			snprintf(it->err, sizeof(it->err), "%s",
			    strerror(errno));
			it->rc = -1;
		}
		return;
	}
	it->st = st;
	sandbox_probe();
	it->rc = identify(fd, it->path, &it->st, &it->rec, &it->alt_id, it->err,
	    sizeof(it->err));
	if (it->rc == 0) {
		list_sources(s, it, fd);
		it->rec.sources = 1;
	}
	close(fd);
}

/* pool_item_fn: read queued file i. */
static void
read_queued(void *arg, size_t i)
{
	struct scan *s = arg;

	read_item(s, &s->queue[i]);
}

/* List path's sources again at the end of the scan, for its alt file. */
static void
wait_src(struct scan *s, const char *path)
{
	char **v;
	size_t cap;

	if (s->nsrcwait == s->capsrcwait) {
		cap = s->capsrcwait == 0 ? 16 : 2 * s->capsrcwait;
		if ((v = realloc(s->srcwait, cap * sizeof(*v))) == NULL)
			return;
		s->srcwait = v;
		s->capsrcwait = cap;
	}
	if ((s->srcwait[s->nsrcwait] = strdup(path)) != NULL)
		s->nsrcwait++;
}

/*
 * Found now: the misses remembered for rec's id as debuginfo and as
 * executable no longer hold.
 */
static void
clear_negatives(struct index_batch *b, const struct index_file *rec)
{
	struct cache_key k;

	if (rec->id.len == 0)
		return;
	if (rec->kinds & ELF_KIND_DEBUGINFO) {
		cache_key_make(&k, &rec->id, CACHE_DEBUGINFO, "");
		neg_batch_del(b, &k);
	}
	if (rec->kinds & ELF_KIND_EXECUTABLE) {
		cache_key_make(&k, &rec->id, CACHE_EXECUTABLE, "");
		neg_batch_del(b, &k);
	}
}

/* The missing-id report's kinds (1 << enum cache_kind) of ELF kinds. */
static unsigned
served_kinds(unsigned elf_kinds)
{
	return ((elf_kinds & ELF_KIND_DEBUGINFO) ? 1u << CACHE_DEBUGINFO : 0) |
	    ((elf_kinds & ELF_KIND_EXECUTABLE) ? 1u << CACHE_EXECUTABLE : 0);
}

void
scan_flush_files(struct scan *s)
{
	struct index_batch *b;
	char err[256];
	size_t i;

	if (s->nqueue == 0)
		return;
	pool_share_run(s->share, scan_helpers(s->opts->threads), read_queued, s,
	    s->nqueue);

	b = index_batch_begin(s->idx, err, sizeof(err));
	for (i = 0; i < s->nqueue; i++) {
		struct scan_item *it = &s->queue[i];

		if (it->rc == -1) {
			s->stats.failed++;
			log_info("scan: %s: %s", it->path, it->err);
		} else if (it->rc == 0) {
			s->stats.read++;
			if (it->rec.kinds == 0) {
				s->stats.failed++;
				log_info("scan: %s: not indexed: %s", it->path,
				    it->err);
			}
			if (b != NULL) {
				index_batch_put_file(b, &it->rec);
				clear_negatives(b, &it->rec);
				pkgidx_put_local_sources(b, it->path,
				    &it->rec.id, it->src.v, it->src.n);
				/* Served from now on: not missing. */
				miss_batch_served(b, &it->rec.id,
				    served_kinds(it->rec.kinds));
			}
			if (it->alt_missing)
				wait_src(s, it->path);
		} else if (b != NULL) {
			/* Not ELF (any more): nothing to keep of it. */
			index_batch_del_file(b, it->path);
		}
		srclist_clear(&it->src);
		free(it->path);
	}
	s->nqueue = 0;
	if (b != NULL && !s->one)
		index_batch_set_scan(b, &s->stats);
	if (b == NULL || index_batch_commit(b, err, sizeof(err)) == -1) {
		log_warnx("scan: %s", err);
		s->failed = 1;
	}
}

/* Skip it when unchanged, else queue it. */
void
scan_consider_file(struct scan *s, const char *path, const struct stat *st)
{
	s->stats.seen++;
	if (st->st_size < ELF_MIN_SIZE ||
	    !scan_needs_reading(s, &s->files, path, st, index_get_file))
		return;
	s->queue[s->nqueue].path = strdup(path);
	if (s->queue[s->nqueue].path == NULL) {
		s->files.incomplete = 1;
		return;
	}
	s->queue[s->nqueue].st = *st;
	s->stats.queued++;
	if (++s->nqueue == QUEUE_MAX)
		scan_flush_files(s);
}

/*
 * The end of a scan: list again the sources of the debug files whose dwz
 * alt file was not indexed when they were read, if it is now and they
 * are unchanged; those whose alt file is still missing keep the names
 * that did not need it.
 */
void
scan_relist_sources(struct scan *s)
{
	struct index_batch *b = NULL;
	struct index_file rec;
	struct scan_item it;
	char err[256];
	size_t i;
	int fd, rc;

	for (i = 0; i < s->nsrcwait && !atomic_load(s->opts->cancel); i++) {
		memset(&it, 0, sizeof(it));
		it.path = s->srcwait[i];
		if ((fd = file_open_regular(it.path, &it.st)) == -1)
			continue;
		rc = identify(fd, it.path, &it.st, &it.rec, &it.alt_id, it.err,
		    sizeof(it.err));
		if (rc == 0 && index_reader_begin(s->rd) == 0) {
			rc = index_get_file(s->rd, it.path, &rec) == 0 &&
				index_file_unchanged(&rec, &it.st)
			    ? 0
			    : -1;
			index_reader_end(s->rd);
		}
		if (rc == 0)
			list_sources(s, &it, fd);
		close(fd);
		if (rc == 0 && it.alt_missing)
			log_debug("scan: %s: its dwz alt file is not indexed; "
				  "relative source names are not",
			    it.path);
		if (rc == 0 && b == NULL)
			b = index_batch_begin(s->idx, err, sizeof(err));
		if (rc == 0 && b != NULL)
			pkgidx_put_local_sources(b, it.path, &it.rec.id,
			    it.src.v, it.src.n);
		srclist_clear(&it.src);
	}
	for (i = 0; i < s->nsrcwait; i++)
		free(s->srcwait[i]);
	free(s->srcwait);
	s->srcwait = NULL;
	s->nsrcwait = s->capsrcwait = 0;
	if (b != NULL && index_batch_commit(b, err, sizeof(err)) == -1) {
		log_warnx("scan: %s", err);
		s->failed = 1;
	}
}
