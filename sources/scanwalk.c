/*
 * sources/scanwalk.c: the walk of a scan: the directories under the roots
 * (or under the paths a directory watch saw change), each file reached
 * handed to the visitor of its kind of root (struct reach: local files,
 * packages), and the set of paths reached.
 *
 * The walk only stats: a file whose size, mtime, inode and device match its
 * record is unchanged and costs nothing more (scan_needs_reading); the
 * visitors queue the others.  Symbolic links to regular files are followed
 * (that is how .build-id trees point at their files) and visited under the
 * target's real path, once; symbolic links to directories are not
 * followed, so the walk cannot loop.  Every path reached is remembered in
 * a set of 128-bit hashes, from which the end of a scan drops the records
 * of the paths not reached.
 *
 * On the scan's thread only (sources/scan_int.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/log.h"
#include "sources/scan_int.h"

#define DEPTH_MAX 64

/* Two independent 64-bit FNV-1a hashes of s; never all zero. */
static void
path_hash(const char *s, uint64_t h[2])
{
	uint64_t a = 0xcbf29ce484222325ULL, b = 0x84222325cbf29ce4ULL;

	for (; *s != '\0'; s++) {
		a = (a ^ (unsigned char)*s) * 0x100000001b3ULL;
		b = (b ^ (unsigned char)*s) * 0x100000001b3ULL;
		b ^= b >> 29;
	}
	h[0] = a;
	h[1] = b | 1;
}

static uint64_t (*pathset_find(struct pathset *ps, const uint64_t h[2]))[2]
{
	size_t i = (size_t)h[0] & (ps->cap - 1);

	while (ps->slot[i][1] != 0) {
		if (ps->slot[i][0] == h[0] && ps->slot[i][1] == h[1])
			return &ps->slot[i];
		i = (i + 1) & (ps->cap - 1);
	}
	return &ps->slot[i];
}

/* Add path; 1 when it was new, 0 when already there, -1 out of memory. */
static int
pathset_add(struct pathset *ps, const char *path)
{
	uint64_t h[2], (*s)[2], (*old)[2];
	size_t oldcap, i;

	if (ps->n * 2 >= ps->cap) {
		old = ps->slot;
		oldcap = ps->cap;
		ps->cap = oldcap == 0 ? 4096 : oldcap * 2;
		if ((ps->slot = calloc(ps->cap, sizeof(*ps->slot))) == NULL) {
			ps->slot = old;
			ps->cap = oldcap;
			return -1;
		}
		for (i = 0; i < oldcap; i++)
			if (old[i][1] != 0)
				memcpy(*pathset_find(ps, old[i]), old[i],
				    sizeof(old[i]));
		free(old);
	}
	path_hash(path, h);
	s = pathset_find(ps, h);
	if ((*s)[1] != 0)
		return 0;
	(*s)[0] = h[0];
	(*s)[1] = h[1];
	ps->n++;
	return 1;
}

int
scan_reached(struct reach *r, const char *path)
{
	struct pathset *ps = &r->seen;
	uint64_t h[2];

	if (ps->cap == 0)
		return 0;
	path_hash(path, h);
	return (*pathset_find(ps, h))[1] != 0;
}

void
scan_rec_from_stat(struct index_file *rec, const char *path,
    const struct stat *st)
{
	memset(rec, 0, sizeof(*rec));
	rec->path = path;
	rec->size = (uint64_t)st->st_size;
	rec->mtime_sec = (int64_t)st->st_mtim.tv_sec;
	rec->mtime_nsec = (uint32_t)st->st_mtim.tv_nsec;
	rec->ino = (uint64_t)st->st_ino;
	rec->dev = (uint64_t)st->st_dev;
}

unsigned
scan_helpers(unsigned nt)
{
	return nt > 1 ? nt - 1 : 0;
}

int
scan_needs_reading(struct scan *s, struct reach *r, const char *path,
    const struct stat *st,
    int (*get)(struct index_reader *, const char *, struct index_file *))
{
	struct index_file rec;
	int rc;

	rc = pathset_add(&r->seen, path);
	if (rc == 0)
		return 0;
	if (rc == -1) {
		/* Without the set, pruning would drop live records. */
		r->incomplete = 1;
	}
	if (index_reader_begin(s->rd) == 0) {
		rc = get(s->rd, path, &rec) == 0 &&
		    index_file_unchanged(&rec, st) &&
		    (r != &s->files || rec.sources);
		index_reader_end(s->rd);
		if (rc)
			return 0;
	}
	return 1;
}

/* The walk is about to read directory path (a root when root is 1). */
static void
seen_dir(struct scan *s, struct reach *r, const char *path, int root)
{
	if (s->opts->dir_cb != NULL)
		s->opts->dir_cb(path, root, r == &s->pkgs, s->opts->dir_arg);
}

static void
walk(struct scan *s, struct reach *r, int dfd, char *path, size_t len,
    int depth)
{
	struct dirent *de;
	struct stat st;
	char real[PATH_MAX];
	DIR *dir;
	int fd;
	size_t n;

	if ((dir = fdopendir(dfd)) == NULL) {
		close(dfd);
		r->incomplete = 1;
		return;
	}
	while ((de = readdir(dir)) != NULL && !atomic_load(s->opts->cancel)) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		n = strlen(de->d_name);
		if (len + 1 + n >= PATH_MAX)
			continue;
		path[len] = '/';
		memcpy(path + len + 1, de->d_name, n + 1);
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		if (S_ISDIR(st.st_mode)) {
			if (depth >= DEPTH_MAX) {
				log_info("scan: %s: deeper than %d levels; "
					 "skipped",
				    path, DEPTH_MAX);
				continue;
			}
			fd = openat(dfd, de->d_name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd == -1) {
				log_info("scan: %s: %s", path, strerror(errno));
				r->incomplete = 1;
				continue;
			}
			seen_dir(s, r, path, 0);
			walk(s, r, fd, path, len + 1 + n, depth + 1);
		} else if (S_ISREG(st.st_mode)) {
			r->visit(s, path, &st);
		} else if (S_ISLNK(st.st_mode) &&
		    fstatat(dfd, de->d_name, &st, 0) == 0 &&
		    S_ISREG(st.st_mode) && realpath(path, real) != NULL) {
			r->visit(s, real, &st);
		}
	}
	path[len] = '\0';
	closedir(dir);
}

void
scan_walk_roots(struct scan *s, struct reach *r, char **roots, size_t nroots)
{
	struct stat st;
	char path[PATH_MAX];
	size_t i, len;
	int fd;

	for (i = 0; i < nroots && !atomic_load(s->opts->cancel); i++) {
		len = strlen(roots[i]);
		while (len > 1 && roots[i][len - 1] == '/')
			len--;
		if (len >= sizeof(path))
			continue;
		memcpy(path, roots[i], len);
		path[len] = '\0';
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd == -1 && errno == ENOTDIR && stat(path, &st) == 0 &&
		    S_ISREG(st.st_mode)) {
			/* A root may name one file. */
			r->visit(s, path, &st);
			continue;
		}
		if (fd == -1) {
			/* Gone is empty; unreadable is unknown. */
			if (errno != ENOENT)
				r->incomplete = 1;
			log_info("scan: %s: %s", path, strerror(errno));
			continue;
		}
		seen_dir(s, r, path, 1);
		walk(s, r, fd, path, strcmp(path, "/") == 0 ? 0 : len, 0);
	}
}

void
scan_walk_change(struct scan *s, const struct scan_change *c)
{
	struct reach *r = c->pkg ? &s->pkgs : &s->files;
	char path[PATH_MAX], real[PATH_MAX];
	size_t len = strlen(c->path);
	struct stat st;
	int fd;

	if (len >= sizeof(path) || lstat(c->path, &st) == -1)
		return; /* gone: scan_changes() drops its records */
	memcpy(path, c->path, len + 1);
	if (S_ISDIR(st.st_mode)) {
		fd =
		    open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd == -1) {
			log_info("scan: %s: %s", path, strerror(errno));
			r->incomplete = 1;
			return;
		}
		seen_dir(s, r, path, 0);
		walk(s, r, fd, path, len, 0);
	} else if (S_ISREG(st.st_mode)) {
		r->visit(s, path, &st);
	} else if (S_ISLNK(st.st_mode) && stat(path, &st) == 0 &&
	    S_ISREG(st.st_mode) && realpath(path, real) != NULL) {
		r->visit(s, real, &st);
	}
}
