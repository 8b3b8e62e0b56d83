/*
 * cache/blobrecover.c: the blob store's recovery at start-up
 * (blobstore_recover), after a crash or an unclean stop.
 *
 * It makes the index and the files agree again, as cache/blobstore.c's
 * crash order expects: tmp/ is emptied, an entry whose file is gone or
 * has the wrong size goes (with its LRU key and path index entries), an
 * LRU key that no entry has goes, a file of blobs/ without entry is
 * deleted, and the byte totals are counted again.  It never deletes an
 * upload file: one without entry is read (ELF: its build-id and kind must
 * give its name) and indexed again, so a cache directory cleared with its
 * index loses no upload; an upload that older versions kept in blobs/
 * moves to the upload directory.  All of it is one write transaction.
 *
 * Threads: one, at start-up, before any fill or publish; it uses
 * cache/blobstore.c's helpers (cache/blobstore_int.h), never the reverse.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/blobstore_int.h"
#include "cache/index.h"
#include "indexer/elf.h"

struct recover {
	struct blobstore *bs;
	struct index_batch *b;
	struct blob_recovery *rec;
	uint64_t bytes, upload_bytes;
};

/* Walk of blobs: keep the entries whose file is there with its size. */
static int
recover_entry_cb(const struct index_rec *r, void *arg)
{
	struct recover *rv = arg;
	struct blob_hdr h;
	uint8_t hash[CACHE_KEY_LEN];
	char path[PATH_MAX];
	struct stat st;

	int up;

	/* A damaged entry's LRU key goes in the walk of lru. */
	if (blob_decode(r, &h, NULL) == -1) {
		rv->rec->entries++;
		return INDEX_WALK_DELETE;
	}
	memcpy(hash, r->key, sizeof(hash));
	up = (h.flags & BLOB_F_UPLOADED) != 0;
	blob_path(rv->bs, hash, up, path);
	if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_size == h.size) {
		if (up)
			rv->upload_bytes += h.size;
		else
			rv->bytes += h.size;
		return 0;
	}
	/* An upload where older versions kept it: moved when it can be. */
	if (up && rv->bs->updir != NULL) {
		char old[PATH_MAX];

		blob_path(rv->bs, hash, 0, old);
		if (lstat(old, &st) == 0 && S_ISREG(st.st_mode) &&
		    (uint64_t)st.st_size == h.size) {
			if (blob_rename_in(old, path) == 0)
				rv->rec->uploads_moved++;
			rv->upload_bytes += h.size;
			return 0;
		}
	}
	if (blob_lru_del(rv->b, hash, &h) == -1 ||
	    blob_paths_del(rv->b, &h) == -1)
		return -1;
	rv->rec->entries++;
	return INDEX_WALK_DELETE;
}

/* Walk of lru: drop the keys that no entry has. */
static int
recover_lru_cb(const struct index_rec *r, void *arg)
{
	struct recover *rv = arg;
	uint8_t hash[CACHE_KEY_LEN];
	struct blob_hdr h;
	int rc;

	rc = blob_lru_entry(rv->b, r, hash, &h);
	return rc == INDEX_NOTFOUND ? INDEX_WALK_DELETE : rc;
}

/*
 * Remove from the directory fd what keep() does not want (everything when
 * keep is NULL), directories aside; count them in *n.
 */
static int
sweep_dir(int fd, int (*keep)(struct recover *, const char *, const char *),
    struct recover *rv, const char *sub, uint64_t *n)
{
	DIR *d;
	struct dirent *de;
	struct stat st;
	int ret = 0;

	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) ==
			-1 ||
		    S_ISDIR(st.st_mode))
			continue;
		if (keep != NULL && keep(rv, sub, de->d_name))
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) == -1)
			ret = -1;
		else
			(*n)++;
	}
	closedir(d);
	return ret;
}

/* 1 when name, in the directory sub, is the blob of an entry. */
static int
has_entry(struct recover *rv, const char *sub, const char *name,
    struct cache_key *k)
{
	struct index_rec r;

	return blob_parse_hex_key(name, k) == 0 && strncmp(sub, name, 2) == 0 &&
	    index_batch_get_rec(rv->b, INDEX_BLOBS, k->hash, CACHE_KEY_LEN,
		&r) == 0;
}

/* Keep a file of blobs/sub/ when it is the blob of an entry. */
static int
keep_blob(struct recover *rv, const char *sub, const char *name)
{
	struct cache_key k;

	return has_entry(rv, sub, name, &k);
}

/*
 * An upload file without entry (path, named k): indexed again when it is
 * ELF whose build-id and kind give k.  1 indexed, 0 not an upload.
 */
static int
upload_index(struct recover *rv, const char *path, const struct cache_key *k)
{
	static const enum cache_kind kinds[] = { CACHE_DEBUGINFO,
		CACHE_EXECUTABLE };
	struct elf_info ei;
	struct blob_info info;
	struct cache_key want;
	struct stat st;
	char err[256];
	uint8_t *rec;
	size_t len, i;
	int fd, rc = -1;

	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return 0;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		rc = elf_read_info(fd, &ei, err, sizeof(err));
	close(fd);
	if (rc != 0 || ei.id.len == 0)
		return 0;
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		cache_key_make(&want, &ei.id, kinds[i], "");
		if (cache_key_equal(&want, k))
			break;
	}
	if (i == sizeof(kinds) / sizeof(kinds[0]))
		return 0;
	memset(&info, 0, sizeof(info));
	info.size = (uint64_t)st.st_size;
	info.mtime = st.st_mtime;
	info.id = ei.id;
	info.kind = kinds[i];
	info.arg = "";
	info.source = BLOB_UPLOAD_SOURCE;
	info.uploaded = 1;
	if ((rec = blob_encode(&info, st.st_mtime, &len)) == NULL)
		return 0;
	rc = index_batch_put_rec(rv->b, INDEX_BLOBS, k->hash, CACHE_KEY_LEN,
	    rec, len);
	free(rec);
	if (rc == -1)
		return 0;
	rv->upload_bytes += info.size;
	return 1;
}

/*
 * Every file of the upload directory's sub/ is kept: indexed again when
 * its entry is gone, counted as unknown when it is no upload.
 */
static int
keep_upload(struct recover *rv, const char *sub, const char *name)
{
	struct cache_key k;
	char path[PATH_MAX];

	if (has_entry(rv, sub, name, &k))
		return 1;
	snprintf(path, sizeof(path), "%s/%s/%s", rv->bs->updir, sub, name);
	if (blob_parse_hex_key(name, &k) == 0 && strncmp(sub, name, 2) == 0 &&
	    upload_index(rv, path, &k))
		rv->rec->uploads_indexed++;
	else
		rv->rec->uploads_unknown++;
	return 1;
}

/* Sweep every xx/ of top with keep; a missing top has nothing to sweep. */
static int
sweep_tree(struct recover *rv, const char *top,
    int (*keep)(struct recover *, const char *, const char *))
{
	DIR *d;
	struct dirent *de;
	int fd, ret = 0;

	if ((d = opendir(top)) == NULL)
		return errno == ENOENT ? 0 : -1;
	while ((de = readdir(d)) != NULL) {
		if (strlen(de->d_name) != 2 ||
		    buildid_hexval((unsigned char)de->d_name[0]) == -1 ||
		    buildid_hexval((unsigned char)de->d_name[1]) == -1)
			continue;
		fd = openat(dirfd(d), de->d_name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd == -1 ||
		    sweep_dir(fd, keep, rv, de->d_name, &rv->rec->files) == -1)
			ret = -1;
	}
	closedir(d);
	return ret;
}

/* Empty the temp directory dir; a missing one is empty. */
static int
sweep_tmp(struct recover *rv, const char *dir)
{
	int fd;

	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return errno == ENOENT ? 0 : -1;
	return sweep_dir(fd, NULL, rv, NULL, &rv->rec->files);
}

int
blobstore_recover(struct blobstore *bs, struct blob_recovery *rec, char *err,
    size_t errlen)
{
	struct recover rv = { bs, NULL, rec, 0, 0 };
	char path[PATH_MAX];

	memset(rec, 0, sizeof(*rec));
	snprintf(path, sizeof(path), "%s/tmp", bs->dir);
	if (sweep_tmp(&rv, path) == -1)
		goto fail;
	if (bs->updir != NULL) {
		snprintf(path, sizeof(path), "%s/tmp", bs->updir);
		if (sweep_tmp(&rv, path) == -1)
			goto fail;
	}
	if ((rv.b = index_batch_begin(bs->idx, err, errlen)) == NULL)
		return -1;
	/* Entries first, so that the files of dropped ones go too. */
	index_batch_walk(rv.b, INDEX_BLOBS, recover_entry_cb, &rv);
	index_batch_walk(rv.b, INDEX_LRU, recover_lru_cb, &rv);
	snprintf(path, sizeof(path), "%s/blobs", bs->dir);
	if (sweep_tree(&rv, path, keep_blob) == -1)
		goto abort;
	if (bs->updir != NULL) {
		snprintf(path, sizeof(path), "%s", bs->updir);
		if (sweep_tree(&rv, path, keep_upload) == -1)
			goto abort;
	}
	index_batch_set_counter(rv.b, BYTES_COUNTER, rv.bytes);
	index_batch_set_counter(rv.b, UPLOAD_COUNTER, rv.upload_bytes);
	return index_batch_commit(rv.b, err, errlen);
abort:
	rec->files = errno; /* index_batch_abort may change errno */
	index_batch_abort(rv.b);
	errno = (int)rec->files;
fail:
	snprintf(err, errlen, "%s: %s", path, strerror(errno));
	return -1;
}
