/*
 * sources/localsrc.c: the source files of local debug files, opened only
 * as sources/localsrc.h allows: named by an indexed file of the build-id,
 * under a source root, opened beneath it, regular.
 */
#include "sources/localsrc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/files.h"
#include "cache/index.h"
#include "cache/pkgindex.h"
#include "conf/config.h"
#include "indexer/file.h"
#include "indexer/sources.h"

/* 1 when path is absolute and canonical as the scan records paths. */
static int
canonical(const char *path)
{
	char copy[PATH_MAX];
	size_t n = strlen(path);

	if (path[0] != '/' || n >= sizeof(copy))
		return 0;
	memcpy(copy, path, n + 1);
	sources_canonicalise(copy);
	return strcmp(copy, path) == 0;
}

/*
 * pkgidx_find_local_source()'s callback: one record is enough whose file
 * is still indexed with the id, as a debug file (not one changed since).
 */
static int
named_cb(const struct pkg_rec *r, void *arg)
{
	struct index_reader *rd = arg;
	struct index_file f;

	return index_get_file(rd, r->package, &f) == 0 &&
	    buildid_equal(&f.id, &r->id) && (f.kinds & ELF_KIND_DEBUGINFO) != 0;
}

/* What follows "dir/" in path, when path lies under dir; else NULL. */
static const char *
under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (n == 1 && dir[0] == '/')
		return path[1] != '\0' ? path + 1 : NULL;
	if (strncmp(path, dir, n) != 0 || path[n] != '/' || path[n + 1] == '\0')
		return NULL;
	return path + n + 1;
}

/*
 * path opened beneath root, when it lies under root as configured or
 * under root's real path: the descriptor, or -1.
 */
static int
open_under(const char *root, const char *path, struct stat *st)
{
	char real[PATH_MAX];
	const char *rel;
	int dfd, fd;

	if ((rel = under(path, root)) == NULL && realpath(root, real) != NULL)
		rel = under(path, real);
	if (rel == NULL)
		return -1;
	if ((dfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	fd = file_open_beneath(dfd, rel, st);
	close(dfd);
	return fd;
}

int
localsrc_named(struct index_reader *rd, const struct buildid *id,
    const char *path)
{
	int rc;

	if (!canonical(path))
		return 0;
	if ((rc = pkgidx_find_local_source(rd, id, path, named_cb, rd)) == -1)
		return -1;
	return rc == 1;
}

int
localsrc_open(struct index_reader *rd, const struct config_strlist *roots,
    const struct buildid *id, const char *path, int *fd, struct stat *st)
{
	size_t i;
	int rc;

	*fd = -1;
	if (roots->n == 0)
		return INDEX_NOTFOUND;
	if (index_reader_begin(rd) == -1)
		return -1;
	rc = localsrc_named(rd, id, path);
	index_reader_end(rd);
	if (rc == -1)
		return -1;
	if (rc == 0)
		return INDEX_NOTFOUND;
	for (i = 0; i < roots->n; i++)
		if ((*fd = open_under(roots->v[i], path, st)) != -1)
			return 0;
	return INDEX_NOTFOUND;
}
