/*
 * cache/filerec.c: a file record's stored form (cache/filerec.h).
 */
#include "cache/filerec.h"

#include <string.h>

#include "indexer/elf.h"

#define PATH_LEN_MAX 4095
/* In file_hdr.kinds beside ELF_KIND_*: index_file.sources. */
#define HDR_SOURCES 0x80

/* The stored file record: this header, then the path and its NUL. */
struct file_hdr {
	uint64_t size;
	int64_t mtime_sec;
	uint64_t ino;
	uint64_t dev;
	uint32_t mtime_nsec;
	uint16_t pathlen;
	uint8_t kinds;
	uint8_t idlen;
	uint8_t id[BUILDID_MAX];
};

int
index_file_unchanged(const struct index_file *rec, const struct stat *st)
{
	return rec->size == (uint64_t)st->st_size &&
	    rec->mtime_sec == (int64_t)st->st_mtim.tv_sec &&
	    rec->mtime_nsec == (uint32_t)st->st_mtim.tv_nsec &&
	    rec->ino == (uint64_t)st->st_ino &&
	    rec->dev == (uint64_t)st->st_dev;
}

size_t
index_file_size(const struct index_file *f)
{
	size_t pathlen = strlen(f->path);

	if (pathlen > PATH_LEN_MAX || f->id.len > BUILDID_MAX)
		return 0;
	return sizeof(struct file_hdr) + pathlen + 1;
}

size_t
index_file_encode(const struct index_file *f, void *buf, size_t cap)
{
	size_t pathlen = strlen(f->path), n = index_file_size(f);
	struct file_hdr h;

	if (n == 0 || cap < n)
		return 0;
	memset(&h, 0, sizeof(h));
	h.size = f->size;
	h.mtime_sec = f->mtime_sec;
	h.mtime_nsec = f->mtime_nsec;
	h.ino = f->ino;
	h.dev = f->dev;
	h.pathlen = (uint16_t)pathlen;
	h.kinds = (uint8_t)((f->kinds & ELF_KIND_ALL) |
	    (f->sources ? HDR_SOURCES : 0));
	h.idlen = f->id.len;
	memcpy(h.id, f->id.bytes, f->id.len);
	memcpy(buf, &h, sizeof(h));
	memcpy((char *)buf + sizeof(h), f->path, pathlen + 1);
	return n;
}

int
index_file_decode(const void *val, size_t len, struct index_file *f)
{
	struct file_hdr h;
	const char *path;

	if (len < sizeof(h) + 1)
		return -1;
	memcpy(&h, val, sizeof(h));
	path = (const char *)val + sizeof(h);
	if (len != sizeof(h) + h.pathlen + 1 || path[h.pathlen] != '\0' ||
	    h.idlen > BUILDID_MAX ||
	    (h.kinds & ~(ELF_KIND_ALL | HDR_SOURCES)) != 0)
		return -1;
	f->path = path;
	f->size = h.size;
	f->mtime_sec = h.mtime_sec;
	f->mtime_nsec = h.mtime_nsec;
	f->ino = h.ino;
	f->dev = h.dev;
	f->kinds = h.kinds & ELF_KIND_ALL;
	f->sources = (h.kinds & HDR_SOURCES) != 0;
	f->id.len = h.idlen;
	memcpy(f->id.bytes, h.id, h.idlen);
	return 0;
}
