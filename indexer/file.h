/*
 * indexer/file.h: opening the files of scanned trees (debug directories,
 * package directories) safely, and the unlinked temp files that extracted
 * members and decompressed sections are written to.
 *
 * Anything in a scanned tree may be replaced between a scan and a read,
 * by something that is not a regular file: a FIFO would block a worker in
 * open() or read() forever, a device could do worse.  Every such file is
 * opened with O_NONBLOCK (which does nothing to reads of regular files)
 * and checked to be a regular file before a byte of it is read.
 */
#ifndef INDEXER_FILE_H
#define INDEXER_FILE_H

#include <sys/stat.h>

#include <stddef.h>
#include <stdint.h>

/*
 * Open path read-only, close-on-exec, without blocking and without
 * becoming a controlling terminal; *st is its fstat.  Returns the
 * descriptor, or -1 with errno (EINVAL: not a regular file).
 */
int file_open_regular(const char *path, struct stat *st);

/*
 * Open rel, a relative path of plain names (no "." or ".." segment, no
 * empty one), beneath the directory open at dirfd, as file_open_regular()
 * opens a file, never leaving that directory: with openat2(2) and
 * RESOLVE_BENEATH, a symbolic link is followed only while it stays
 * beneath dirfd (not to an absolute path, not up with ".."), and never
 * through a /proc magic link; where openat2 is missing (Linux before 5.6,
 * or a filter that refuses it), the path is walked a name at a time and
 * any symbolic link is refused.  Returns the descriptor, or -1 with errno
 * (EXDEV or ELOOP: it would leave dirfd, or follow a link the fallback
 * refuses; EINVAL: rel is not such a path, or not a regular file).
 */
int file_open_beneath(int dirfd, const char *rel, struct stat *st);

/*
 * An unlinked file for extracted bytes: O_TMPFILE in tmpdir (or a named
 * file unlinked at once where the file system lacks it), a memfd when
 * tmpdir is NULL.  Returns the descriptor, or -1 with err.
 */
int file_tmp_open(const char *tmpdir, char *err, size_t errlen);

/*
 * Write all len bytes of buf to fd at off with pwrite (EINTR retried).
 * Returns 0, or -1 with errno.
 */
int file_pwrite(int fd, const void *buf, size_t len, uint64_t off);

#endif /* INDEXER_FILE_H */
