/*
 * sources/localsrc.h: /buildid/ID/source/PATH from the local scan
 * directories, as `debuginfod -F` serves them: the source files the DWARF
 * of an indexed local debug file names, that exist.
 *
 * What may be served, and why.  A request's path is only a key, never a
 * path to open as it is (the 2025 path traversal of a Nix debuginfod
 * served any file the server could read).  A source file is served when
 * all of this holds:
 *
 *   1. a local file indexed under scan-dir with the requested build-id,
 *      still indexed with it, names that exact path (canonical: no "//",
 *      no "." or ".." segment) in its DWARF, as the scan recorded it
 *      (sources/scanfile.c, cache/pkgindex.h): nothing else is ever looked up;
 *   2. the path lies under a configured source-root (default: the scan-dir
 *      directories, where `debuginfod -F DIR` users keep their sources
 *      beside their binaries; `none`: no local sources at all), spelled as
 *      configured or as that root's real path;
 *   3. it opens beneath that root's directory without leaving it:
 *      openat2(2) with RESOLVE_BENEATH refuses ".." above the root, an
 *      absolute symbolic link and a relative one that climbs out, and
 *      /proc magic links; without openat2, any symbolic link is refused
 *      (indexer/file.h);
 *   4. it is a regular file (not a directory, FIFO or device), opened
 *      without blocking.
 *
 * So an ELF file whose DWARF names /etc/shadow or ../../secret gets
 * nothing outside the source roots, whoever put it in a scan directory;
 * what such a file can reach is what lies under a source root, which is
 * why the roots are the scan directories and not the compilation
 * directories a DWARF claims.
 *
 * Threads: any worker (it opens files); rd is the caller's reader with
 * no transaction open.
 */
#ifndef SOURCES_LOCALSRC_H
#define SOURCES_LOCALSRC_H

#include <sys/stat.h>

#include "indexer/buildid.h"

struct config_strlist;
struct index_reader;

/*
 * 1 when an indexed local file of build-id id names path (canonical
 * absolute) in its DWARF (rule 1 above), 0 when none does, -1 when the
 * index could not be read.  Any thread; rd's transaction is the caller's,
 * open: the event loop asks this before it hands the open to a worker.
 */
int localsrc_named(struct index_reader *rd, const struct buildid *id,
    const char *path);

/*
 * The source file path (canonical absolute, as the route gives it) of
 * build-id id, open in *fd with its fstat in *st, found as above among
 * roots.  0; INDEX_NOTFOUND (cache/index.h) when it may not or cannot be
 * served; -1 when the index could not be read.
 */
int localsrc_open(struct index_reader *rd, const struct config_strlist *roots,
    const struct buildid *id, const char *path, int *fd, struct stat *st);

#endif /* SOURCES_LOCALSRC_H */
