/*
 * indexer/file.c: opening the files of scanned trees (indexer/file.h).
 */
#include "indexer/file.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int
file_open_regular(const char *path, struct stat *st)
{
	int fd, saved;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd == -1)
		return -1;
	if (fstat(fd, st) == -1)
		saved = errno;
	else if (!S_ISREG(st->st_mode))
		saved = EINVAL;
	else
		return fd;
	close(fd);
	errno = saved;
	return -1;
}
