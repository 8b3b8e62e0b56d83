/*
 * indexer/file.c: opening the files of scanned trees, and temp files for
 * extracted bytes (indexer/file.h).  Blocking; for worker threads.
 */
#include "indexer/file.h"

#include <sys/mman.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int
file_tmp_open(const char *tmpdir, char *err, size_t errlen)
{
	char name[PATH_MAX];
	int fd;

	if (tmpdir == NULL) {
		if ((fd = memfd_create("dbgmirror-member", MFD_CLOEXEC)) == -1)
			snprintf(err, errlen, "memfd_create: %s",
			    strerror(errno));
		return fd;
	}
	fd = open(tmpdir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd != -1 || (errno != EOPNOTSUPP && errno != EISDIR)) {
		if (fd == -1)
			snprintf(err, errlen, "%s: %s", tmpdir,
			    strerror(errno));
		return fd;
	}
	if (snprintf(name, sizeof(name), "%s/pkg-member.XXXXXX", tmpdir) >=
	    (int)sizeof(name)) {
		snprintf(err, errlen, "tmpdir path too long");
		return -1;
	}
	if ((fd = mkostemp(name, O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "%s: %s", tmpdir, strerror(errno));
		return -1;
	}
	unlink(name);
	return fd;
}

int
file_pwrite(int fd, const void *buf, size_t len, uint64_t off)
{
	const char *p = buf;
	ssize_t n;

	while (len > 0) {
		if (off > (uint64_t)INT64_MAX - len) {
			errno = EFBIG;
			return -1;
		}
		n = pwrite(fd, p, len, (off_t)off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}
