/*
 * daemon/scan.c: the incremental scan of local directories.
 *
 * The walk only stats: a file whose size, mtime, inode and device match its
 * record is unchanged and costs nothing more.  New and changed files are
 * queued, and each full queue is read by several threads at once (opening
 * the file and reading its ELF headers is the slow part), then committed in
 * one write transaction, so results become visible as the scan goes.
 *
 * Symbolic links to regular files are followed (that is how .build-id trees
 * point at their files) and indexed under the target's real path, once;
 * symbolic links to directories are not followed, so the walk cannot loop.
 * Every path reached is remembered in a set of 128-bit hashes; at the end,
 * records whose path was not reached are dropped.
 */
#include "daemon/scan.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/log.h"

#define QUEUE_MAX 1024
#define DEPTH_MAX 64
/* Smaller files cannot hold an ELF header. */
#define ELF_MIN_SIZE 64

/* An open-addressing set of 128-bit path hashes; 0 marks a free slot. */
struct pathset {
	uint64_t (*slot)[2];
	size_t cap, n;
};

struct item {
	char *path;
	struct stat st;
	int rc; /* of scan_identify */
	struct index_file rec;
	char err[160];
};

struct scan {
	struct index *idx;
	const struct scan_opts *opts;
	struct index_reader *rd;
	struct pathset seen;
	struct item queue[QUEUE_MAX];
	size_t nqueue;
	atomic_size_t next; /* the next queue item to read */
	int incomplete; /* a root could not be read: keep old records */
	int failed; /* the index could not be written */
	struct index_scan stats;
};

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

static int
pathset_has(struct pathset *ps, const char *path)
{
	uint64_t h[2];

	if (ps->cap == 0)
		return 0;
	path_hash(path, h);
	return (*pathset_find(ps, h))[1] != 0;
}

int
scan_unchanged(const struct index_file *rec, const struct stat *st)
{
	return rec->size == (uint64_t)st->st_size &&
	    rec->mtime_sec == (int64_t)st->st_mtim.tv_sec &&
	    rec->mtime_nsec == (uint32_t)st->st_mtim.tv_nsec &&
	    rec->ino == (uint64_t)st->st_ino &&
	    rec->dev == (uint64_t)st->st_dev;
}

int
scan_identify(int fd, const char *path, const struct stat *st,
    struct index_file *rec, char *err, size_t errlen)
{
	struct elf_info info;
	int rc;

	err[0] = '\0';
	rc = elf_read_info(fd, &info, err, errlen);
	if (rc == ELF_NOTFOUND)
		return rc;
	memset(rec, 0, sizeof(*rec));
	rec->path = path;
	rec->size = (uint64_t)st->st_size;
	rec->mtime_sec = (int64_t)st->st_mtim.tv_sec;
	rec->mtime_nsec = (uint32_t)st->st_mtim.tv_nsec;
	rec->ino = (uint64_t)st->st_ino;
	rec->dev = (uint64_t)st->st_dev;
	if (rc == 0 && info.id.len == 0)
		snprintf(err, errlen, "no GNU build-id note");
	if (rc == 0 && info.id.len > 0) {
		rec->id = info.id;
		rec->kinds = info.kinds;
		if (rec->kinds == 0)
			snprintf(err, errlen,
			    "neither debuginfo nor executable");
	}
	return 0;
}

/* Read one queued file; runs on any scan thread. */
static void
read_item(struct item *it)
{
	struct stat st;
	int fd;

	it->rc = ELF_NOTFOUND;
	fd = open(it->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd == -1) {
		snprintf(it->err, sizeof(it->err), "%s", strerror(errno));
		it->rc = -1;
		return;
	}
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		it->st = st;
		it->rc = scan_identify(fd, it->path, &it->st, &it->rec, it->err,
		    sizeof(it->err));
	}
	close(fd);
}

static void *
reader_main(void *arg)
{
	struct scan *s = arg;
	size_t i;

	while ((i = atomic_fetch_add(&s->next, 1)) < s->nqueue)
		read_item(&s->queue[i]);
	return NULL;
}

/* Read the queue in parallel, then commit what it found. */
static void
flush_queue(struct scan *s)
{
	pthread_t tids[64];
	unsigned nt = s->opts->threads, k, started = 0;
	struct index_batch *b;
	char err[256];
	size_t i;

	if (s->nqueue == 0)
		return;
	if (nt > 64)
		nt = 64;
	atomic_store(&s->next, 0);
	for (k = 1; k < nt && k < s->nqueue; k++)
		if (pthread_create(&tids[started], NULL, reader_main, s) == 0)
			started++;
	reader_main(s);
	for (k = 0; k < started; k++)
		pthread_join(tids[k], NULL);

	b = index_batch_begin(s->idx, err, sizeof(err));
	for (i = 0; i < s->nqueue; i++) {
		struct item *it = &s->queue[i];

		if (it->rc == -1) {
			s->stats.failed++;
			log_info("scan: %s: %s", it->path, it->err);
		} else if (it->rc == 0) {
			s->stats.read++;
			if (it->rec.kinds == 0) {
				s->stats.failed++;
				log_info("scan: %s: not indexed: %s", it->path,
				    it->err);
			}
			if (b != NULL)
				index_batch_put_file(b, &it->rec);
		}
		free(it->path);
	}
	s->nqueue = 0;
	if (b == NULL || index_batch_commit(b, err, sizeof(err)) == -1) {
		log_warnx("scan: %s", err);
		s->failed = 1;
	}
}

/* A file reached by the walk: skip it when unchanged, else queue it. */
static void
consider(struct scan *s, const char *path, const struct stat *st)
{
	struct index_file rec;
	int rc;

	s->stats.seen++;
	if (st->st_size < ELF_MIN_SIZE)
		return;
	rc = pathset_add(&s->seen, path);
	if (rc == 0)
		return;
	if (rc == -1) {
		/* Without the set, pruning would drop live records. */
		s->incomplete = 1;
	}
	if (index_reader_begin(s->rd) == 0) {
		rc = index_get_file(s->rd, path, &rec);
		rc = rc == 0 && scan_unchanged(&rec, st);
		index_reader_end(s->rd);
		if (rc)
			return;
	}
	s->queue[s->nqueue].path = strdup(path);
	if (s->queue[s->nqueue].path == NULL) {
		s->incomplete = 1;
		return;
	}
	s->queue[s->nqueue].st = *st;
	if (++s->nqueue == QUEUE_MAX)
		flush_queue(s);
}

static void
walk(struct scan *s, int dfd, char *path, size_t len, int depth)
{
	struct dirent *de;
	struct stat st;
	char real[PATH_MAX];
	DIR *dir;
	int fd;
	size_t n;

	if ((dir = fdopendir(dfd)) == NULL) {
		close(dfd);
		s->incomplete = 1;
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
				s->incomplete = 1;
				continue;
			}
			walk(s, fd, path, len + 1 + n, depth + 1);
		} else if (S_ISREG(st.st_mode)) {
			consider(s, path, &st);
		} else if (S_ISLNK(st.st_mode) &&
		    fstatat(dfd, de->d_name, &st, 0) == 0 &&
		    S_ISREG(st.st_mode) && realpath(path, real) != NULL) {
			consider(s, real, &st);
		}
	}
	path[len] = '\0';
	closedir(dir);
}

static int
keep_seen(const char *path, void *arg)
{
	return pathset_has(arg, path);
}

/* Record the scan's counts (and, at the end, drop what was not seen). */
static int
finish(struct scan *s, int prune)
{
	struct index_batch *b;
	char err[256];

	if ((b = index_batch_begin(s->idx, err, sizeof(err))) == NULL)
		goto fail;
	if (prune)
		index_batch_prune(b, keep_seen, &s->seen, &s->stats.removed);
	index_batch_set_scan(b, &s->stats);
	if (index_batch_commit(b, err, sizeof(err)) == -1)
		goto fail;
	return 0;
fail:
	log_warnx("scan: %s", err);
	return -1;
}

int
scan_run(struct index *idx, const struct scan_opts *opts,
    struct index_scan *out)
{
	struct scan *s;
	char path[PATH_MAX];
	size_t i, len;
	int fd, rc;

	if ((s = calloc(1, sizeof(*s))) == NULL ||
	    (s->rd = index_reader_new(idx)) == NULL) {
		free(s);
		log_warnx("scan: out of memory");
		return -1;
	}
	s->idx = idx;
	s->opts = opts;
	s->stats.started = (int64_t)time(NULL);
	finish(s, 0);

	for (i = 0; i < opts->nroots && !atomic_load(opts->cancel); i++) {
		len = strlen(opts->roots[i]);
		while (len > 1 && opts->roots[i][len - 1] == '/')
			len--;
		if (len >= sizeof(path))
			continue;
		memcpy(path, opts->roots[i], len);
		path[len] = '\0';
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd == -1) {
			/* Gone is empty; unreadable is unknown. */
			if (errno != ENOENT)
				s->incomplete = 1;
			log_info("scan: %s: %s", path, strerror(errno));
			continue;
		}
		walk(s, fd, path, strcmp(path, "/") == 0 ? 0 : len, 0);
	}
	flush_queue(s);

	rc = atomic_load(opts->cancel) ? -1 : 0;
	s->stats.finished = (int64_t)time(NULL);
	if (rc == 0 && (s->failed || finish(s, !s->incomplete) == -1))
		rc = -1;
	if (s->incomplete && rc == 0)
		log_info("scan: some directories could not be read; records "
			 "of vanished files are kept until a complete scan");
	*out = s->stats;
	index_reader_free(s->rd);
	free(s->seen.slot);
	free(s);
	return rc;
}
