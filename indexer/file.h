/*
 * indexer/file.h: opening the files of scanned trees (debug directories,
 * package directories) safely.
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

/*
 * Open path read-only, close-on-exec, without blocking and without
 * becoming a controlling terminal; *st is its fstat.  Returns the
 * descriptor, or -1 with errno (EINVAL: not a regular file).
 */
int file_open_regular(const char *path, struct stat *st);

#endif /* INDEXER_FILE_H */
