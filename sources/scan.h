/*
 * sources/scan.h: index the ELF files under the scan directories, and the
 * members of the packages under the package roots.
 *
 * scan_run() blocks for the whole walk and belongs in a long job of the
 * worker pool (daemon/pool.h), which also runs the helpers that read
 * files and packages beside it; the daemon decides when scans run.
 * scan_changes() is the same scan limited to some paths, those the
 * directory watch (daemon/watch.h) saw change.  scan_identify() is the
 * one way a local file becomes an index record, shared by the scan and by
 * the request path when a file changed since it was indexed.
 */
#ifndef SOURCES_SCAN_H
#define SOURCES_SCAN_H

#include <sys/stat.h>

#include <stdatomic.h>
#include <stddef.h>

#include "cache/files.h"
#include "cache/index.h"

struct pool;

struct scan_opts {
	char **roots; /* absolute directories */
	size_t nroots;
	struct pool *pool; /* runs the helpers as long jobs; NULL: none */
	unsigned threads; /* files read at once, helpers and this thread */
	char **pkg_roots; /* absolute directories or package files, whose
			   * .deb .ddeb .rpm .pkg.tar[.zst|.xz|.gz] are read */
	size_t npkg_roots;
	unsigned pkg_threads; /* packages read at once; 0 = one per CPU */
	const char *tmpdir; /* for members being inspected: <cache-dir>/tmp */
	unsigned min_free_pct; /* of tmpdir's file system, kept free */
	atomic_int *cancel; /* non-zero: stop as soon as possible */
	/*
	 * Each directory the walk is about to read, under a scan-dir root
	 * (pkg 0) or a package root (pkg 1), root first, before its entries
	 * are read; NULL: none.  On the scan's thread.
	 */
	void (*dir_cb)(const char *path, int root, int pkg, void *arg);
	void *dir_arg;
};

/*
 * Walk every root, read the ELF headers of new and changed files, record
 * them, and drop the records of files no longer found.  Then the same for
 * the packages under pkg_roots, whose servable members are recorded
 * (cache/pkgindex.h); a package that cannot be read is logged, recorded
 * without members and skipped until it changes.  Dropping is skipped when a
 * root could not be read (a missing root counts as empty), for files and
 * packages apart.  Returns 0, or -1 when the index could not be written or
 * the scan was cancelled; *out has the counts either way.
 */
int scan_run(struct index *idx, const struct scan_opts *opts,
    struct index_scan *out);

/* A path that changed, under a scan-dir root or a package root. */
struct scan_change {
	char *path; /* absolute, without "." or ".." segments */
	unsigned pkg : 1; /* under a package root */
	unsigned dir : 1; /* it is, or was when it vanished, a directory */
};

/*
 * The scan of scan_run(), for the n paths of v only: a file is read when
 * new or changed, a directory walked, and the records of what is no
 * longer there are dropped (for a directory, of every file under it that
 * the walk did not reach).  The scan record (struct index_scan) is left
 * as the last whole scan made it; *out has this one's counts.  Newly
 * indexed files clear the negative entries of their ids.  Returns 0, or
 * -1 when the index could not be written or the scan was cancelled.
 */
int scan_changes(struct index *idx, const struct scan_opts *opts,
    const struct scan_change *v, size_t n, struct index_scan *out);

/*
 * Fill rec for the file open at fd (path, st from fstat).  Returns 0 (rec
 * filled; kinds 0 when it has nothing to serve, with the reason in err),
 * ELF_NOTFOUND when it is not ELF.
 */
int scan_identify(int fd, const char *path, const struct stat *st,
    struct index_file *rec, char *err, size_t errlen);

/*
 * Index the one package at path (its members, as a scan would), on the
 * calling worker: for packages downloaded from remote repositories.  0, or
 * -1 with err.
 */
int scan_package(struct index *idx, const char *path, const char *tmpdir,
    unsigned min_free_pct, char *err, size_t errlen);

#endif /* SOURCES_SCAN_H */
