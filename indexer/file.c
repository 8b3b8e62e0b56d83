/*
 * indexer/file.c: opening the files of scanned trees, and temp files for
 * extracted bytes (indexer/file.h).  Blocking; for worker threads.
 */
#include "indexer/file.h"

#include <linux/openat2.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OPEN_FLAGS (O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)

/* fd, fstat into *st, when a regular file; else closed, -1 with errno. */
static int
regular_only(int fd, struct stat *st)
{
	int saved;

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
file_open_regular(const char *path, struct stat *st)
{
	int fd;

	if ((fd = open(path, OPEN_FLAGS)) == -1)
		return -1;
	return regular_only(fd, st);
}

/* 1 when rel is names joined by single '/', none "." or "..". */
static int
plain_relative(const char *rel)
{
	const char *p = rel, *e;
	size_t n;

	if (*p == '\0' || *p == '/')
		return 0;
	for (;;) {
		e = strchr(p, '/');
		n = e != NULL ? (size_t)(e - p) : strlen(p);
		if (n == 0 || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.'))
			return 0;
		if (e == NULL)
			return 1;
		p = e + 1;
	}
}

/*
 * Without openat2: each directory of rel opened from the last with
 * O_NOFOLLOW, then the file with O_NOFOLLOW: a symbolic link anywhere
 * fails with ELOOP (or ENOTDIR), so nothing can lead out.
 */
static int
beneath_walk(int dirfd, const char *rel)
{
	char name[NAME_MAX + 1];
	const char *p = rel, *e;
	int fd = dirfd, next, saved;
	size_t n;

	while ((e = strchr(p, '/')) != NULL) {
		n = (size_t)(e - p);
		if (n > NAME_MAX) {
			errno = ENAMETOOLONG;
			next = -1;
		} else {
			memcpy(name, p, n);
			name[n] = '\0';
			next = openat(fd, name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		saved = errno;
		if (fd != dirfd)
			close(fd);
		if (next == -1) {
			errno = saved;
			return -1;
		}
		fd = next;
		p = e + 1;
	}
	next = openat(fd, p, OPEN_FLAGS | O_NOFOLLOW);
	saved = errno;
	if (fd != dirfd)
		close(fd);
	errno = saved;
	return next;
}

int
file_open_beneath(int dirfd, const char *rel, struct stat *st)
{
	struct open_how how;
	int fd;

	if (!plain_relative(rel)) {
		errno = EINVAL;
		return -1;
	}
	memset(&how, 0, sizeof(how));
	how.flags = OPEN_FLAGS;
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
	fd = (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
	if (fd == -1 && (errno == ENOSYS || errno == EPERM))
		fd = beneath_walk(dirfd, rel);
	if (fd == -1)
		return -1;
	return regular_only(fd, st);
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
