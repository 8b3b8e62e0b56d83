/*
 * indexer/file.c: opening the files of scanned trees (indexer/file.h).
 */
#include "indexer/file.h"

#include <linux/openat2.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
