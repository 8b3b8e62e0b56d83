/*
 * tests/unit/test_localsrc.c: sources/localsrc.c, the source files of
 * local debug files that /source may serve, against every way out.
 *
 * A real index in a temporary directory records a local debug file and
 * the sources its DWARF names (as the scan records them); files, links, a
 * FIFO and a directory are laid out under a source root and beside it.
 * What is named, under the root and a regular file opens; what is not
 * named, outside the root, reached by ".." or by a link that leaves the
 * root (absolute, relative, through a linked directory), not regular,
 * gone, or named by a file that no longer has the id, does not.  The
 * fallback without openat2 (indexer/file.c, included to reach it) refuses
 * every link.  A package's records and a local file's at one path leave
 * each other alone.
 */
#include "indexer/file.c"

#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/files.h"
#include "cache/index.h"
#include "cache/pkgindex.h"
#include "conf/config.h"
#include "sources/localsrc.h"
#include "tests/tap.h"
#include "tests/testdir.h"

static struct index *idx;
static struct index_reader *rd;
static struct buildid id, other;

static int
stop_cb(const struct pkg_rec *r, void *arg)
{
	(void)r;
	(void)arg;
	return 1;
}

static void
write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd == -1 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		perror(path);
	if (fd != -1)
		close(fd);
}

/* Record the local file at file with build-id bid and its sources. */
static int
record(const char *file, const struct buildid *bid, char *const *srcs, size_t n)
{
	struct index_file f;
	struct index_batch *b;
	char err[256];

	memset(&f, 0, sizeof(f));
	f.path = file;
	f.size = 100;
	f.kinds = ELF_KIND_DEBUGINFO;
	f.sources = 1;
	f.id = *bid;
	if ((b = index_batch_begin(idx, err, sizeof(err))) == NULL)
		return -1;
	if (index_batch_put_file(b, &f) == -1 ||
	    pkgidx_put_local_sources(b, file, bid, srcs, n) == -1) {
		index_batch_abort(b);
		return -1;
	}
	return index_batch_commit(b, err, sizeof(err));
}

/*
 * localsrc_open() of path for bid among roots: the file's contents when
 * it opened (into buf), else NULL; *rc its result.
 */
static const char *
get(const struct config_strlist *roots, const struct buildid *bid,
    const char *path, int *rc)
{
	static char buf[256];
	struct stat st;
	ssize_t n;
	int fd;

	*rc = localsrc_open(rd, roots, bid, path, &fd, &st);
	if (*rc != 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static void
served(const struct config_strlist *roots, const char *path, const char *want,
    const char *what)
{
	const char *got;
	int rc;

	got = get(roots, &id, path, &rc);
	is_int(rc, 0, what);
	is_str(got, want, what);
}

static void
refused(const struct config_strlist *roots, const struct buildid *bid,
    const char *path, const char *what)
{
	int rc;

	get(roots, bid, path, &rc);
	is_int(rc, INDEX_NOTFOUND, what);
}

int
main(void)
{
	char prog[PATH_MAX], err[256], *srcs[16];
	char *rootv[1], *realv[1], *linkv[1];
	struct config_strlist roots = { rootv, 1 }, none = { NULL, 0 };
	struct config_strlist viareal = { realv, 1 }, vialink = { linkv, 1 };
	const char *why;
	struct stat st;
	size_t n = 0;
	int fd, rc;

	if (!ok(testdir_make("test_localsrc") == 0, "a temporary directory"))
		return tap_done();
	buildid_parse(&id, "aa11", 4, &why);
	buildid_parse(&other, "bb22", 4, &why);
	mkdir(at("index"), 0755);
	idx = index_open(at("index"), 0, 1 << 26, err, sizeof(err));
	if (!ok(idx != NULL && (rd = index_reader_new(idx)) != NULL,
		"an index"))
		return tap_done();

	/* The tree: a root with sources, and what lies beside it. */
	mkdir(at("root"), 0755);
	mkdir(at("root/src"), 0755);
	mkdir(at("root/src/subdir"), 0755);
	mkdir(at("outside"), 0755);
	write_file(at("root/src/a.c"), "int a;\n");
	write_file(at("root/src/notnamed.c"), "int n;\n");
	write_file(at("root/src/gone.c"), "int g;\n");
	write_file(at("outside/secret.c"), "secret\n");
	symlink("a.c", at("root/src/link-in.c"));
	symlink("../../outside/secret.c", at("root/src/link-out.c"));
	symlink(at("outside/secret.c"), at("root/src/abs-out.c"));
	symlink("../../outside", at("root/src/dirlink"));
	symlink("/proc/self/root/etc/hostname", at("root/src/magic.c"));
	mkfifo(at("root/src/fifo.c"), 0644);
	symlink(at("root"), at("rootlink"));
	snprintf(prog, sizeof(prog), "%s", at("root/prog.debug"));
	/* at()'s buffers rotate: copies. */
	rootv[0] = strdup(at("root"));
	realv[0] = strdup(at("rootlink"));
	linkv[0] = rootv[0];

	/* What the DWARF names: each a canonical absolute path. */
	srcs[n++] = strdup(at("root/src/a.c"));
	srcs[n++] = strdup(at("rootlink/src/a.c"));
	srcs[n++] = strdup(at("root/src/link-in.c"));
	srcs[n++] = strdup(at("root/src/link-out.c"));
	srcs[n++] = strdup(at("root/src/abs-out.c"));
	srcs[n++] = strdup(at("root/src/dirlink/secret.c"));
	srcs[n++] = strdup(at("root/src/magic.c"));
	srcs[n++] = strdup(at("root/src/fifo.c"));
	srcs[n++] = strdup(at("root/src/subdir"));
	srcs[n++] = strdup(at("root/src/gone.c"));
	srcs[n++] = strdup(at("outside/secret.c"));
	srcs[n++] = strdup("relative/not-absolute.c");
	is_int(record(prog, &id, srcs, n), 0, "record a file and its sources");
	unlink(at("root/src/gone.c"));

	served(&roots, at("root/src/a.c"), "int a;\n",
	    "named, under the root, regular: served");
	served(&roots, at("root/src/link-in.c"), "int a;\n",
	    "a link that stays beneath the root: served");
	refused(&roots, &id, at("root/src/notnamed.c"),
	    "under the root but named by no file: refused");
	refused(&roots, &other, at("root/src/a.c"),
	    "named by a file of another build-id: refused");
	refused(&roots, &id, at("root/src/link-out.c"),
	    "a relative link climbing out of the root: refused");
	refused(&roots, &id, at("root/src/abs-out.c"),
	    "an absolute link out of the root: refused");
	refused(&roots, &id, at("root/src/dirlink/secret.c"),
	    "through a linked directory out of the root: refused");
	refused(&roots, &id, at("root/src/magic.c"),
	    "a link through /proc: refused");
	refused(&roots, &id, at("outside/secret.c"),
	    "named, but under no source root: refused");
	refused(&roots, &id, at("root/src/../../outside/secret.c"),
	    "a path with .. (never canonical): refused");
	refused(&roots, &id, at("root//src/a.c"),
	    "a path with // (never canonical): refused");
	refused(&roots, &id, at("root/src/./a.c"),
	    "a path with /./ (never canonical): refused");
	refused(&roots, &id, at("root/src/subdir"), "a directory: refused");
	refused(&roots, &id, at("root/src/fifo.c"),
	    "a FIFO: refused, without blocking");
	refused(&roots, &id, at("root/src/gone.c"),
	    "named, but gone since: refused");
	refused(&roots, &id, "relative/not-absolute.c",
	    "a relative name: refused");
	refused(&none, &id, at("root/src/a.c"),
	    "source-root none: nothing is served");
	served(&viareal, at("root/src/a.c"), "int a;\n",
	    "a root configured through a link: its real path counts");
	served(&viareal, at("rootlink/src/a.c"), "int a;\n",
	    "... and its link's");
	refused(&vialink, &id, at("rootlink/src/a.c"),
	    "a path through a link to the root, not configured: refused");

	/* Without openat2: the walk a name at a time refuses every link. */
	fd = open(at("root"), O_RDONLY | O_DIRECTORY);
	rc = beneath_walk(fd, "src/a.c");
	ok(rc != -1, "fallback: a plain path opens");
	if (rc != -1)
		close(rc);
	rc = beneath_walk(fd, "src/link-in.c");
	ok(rc == -1 && errno == ELOOP, "fallback: even a link within: ELOOP");
	rc = beneath_walk(fd, "src/dirlink/secret.c");
	ok(rc == -1 && (errno == ELOOP || errno == ENOTDIR),
	    "fallback: a linked directory: refused");
	rc = file_open_beneath(fd, "src/../src/a.c", &st);
	ok(rc == -1 && errno == EINVAL, "beneath: a .. segment is EINVAL");
	rc = file_open_beneath(fd, "/etc/hostname", &st);
	ok(rc == -1 && errno == EINVAL, "beneath: an absolute path is EINVAL");
	close(fd);

	/* A package at the same path: each keeps its own records. */
	{
		struct index_batch *b =
		    index_batch_begin(idx, err, sizeof(err));
		struct index_file pkg;

		memset(&pkg, 0, sizeof(pkg));
		pkg.path = prog;
		pkg.size = 1;
		ok(b != NULL && pkgidx_put(b, &pkg, NULL, 0) == 0 &&
			index_batch_commit(b, err, sizeof(err)) == 0,
		    "a package recorded at the local file's path");
	}
	served(&roots, at("root/src/a.c"), "int a;\n",
	    "... the local file's sources are still there");

	/* The file changes its build-id: its old records no longer count. */
	is_int(record(prog, &other, NULL, 0), 0,
	    "the file recorded again with another id, no sources");
	refused(&roots, &id, at("root/src/a.c"),
	    "... the old id's source: refused");
	refused(&roots, &other, at("root/src/a.c"),
	    "... nor named for the new id");
	is_int(record(prog, &id, srcs, n), 0, "the first id again");
	served(&roots, at("root/src/a.c"), "int a;\n", "... served again");

	/* The file dropped from the index: its sources go with it. */
	{
		struct index_batch *b =
		    index_batch_begin(idx, err, sizeof(err));

		ok(b != NULL && index_batch_del_file(b, prog) == 0 &&
			index_batch_commit(b, err, sizeof(err)) == 0,
		    "the file dropped");
	}
	ok(index_reader_begin(rd) == 0 &&
		pkgidx_find_local_source(rd, &id, at("root/src/a.c"), stop_cb,
		    NULL) == 0,
	    "... and its source records with it");
	index_reader_end(rd);

	while (n > 0)
		free(srcs[--n]);
	free(rootv[0]);
	free(realv[0]);
	index_reader_free(rd);
	index_close(idx);
	testdir_remove();
	return tap_done();
}
