/*
 * indexer/package.c: walk and extract .deb/.ddeb, .rpm and Arch packages
 * with libarchive, in-process and streaming: the walk over the members
 * (scans, extraction, a pass's watcher); the reader stack that opens a
 * package and decompresses it is indexer/pkgread.c.
 *
 * A scan of a .deb on disk whose data.tar.xz carries a block index (as
 * multi-threaded xz writes it: dpkg-deb's since Debian 12) decompresses it
 * with indexer/xzseek.c instead, so that what the scan does not read is
 * skipped block by block: the rest of a large member that is not ELF, and
 * of a large DWARF 5 debug file everything but its headers, notes and line
 * tables (scan_part).  Skipped bytes count against max_total all the same.
 *
 * Member bytes we inspect go to one unlinked temporary file per scan,
 * rewritten for each ELF member.  Nothing here keeps state between calls;
 * each call owns its readers.
 */
#include "indexer/package.h"
#include "indexer/pkgread.h"

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "indexer/file.h"
#include "indexer/sources.h"
#include "indexer/xzseek.h"

/* The ELF magic is this long. */
#define MAGIC_LEN 4
/*
 * A member of at least this many of its stream's largest blocks, in a
 * stream read by its index, is read in part (scan_part): its first
 * PART_HEAD bytes, then only what a scan needs.
 */
#define PART_MIN_BLOCKS 2
#define PART_HEAD (64u << 10)

/* Where the bytes of one member go while they are read. */
struct sink {
	int fd; /* -1: nowhere */
	uint64_t limit; /* larger members are read but not written */
	int elf; /* -1: not known yet; 0: not ELF, so not written */
	unsigned char magic[MAGIC_LEN];
	size_t have;
	uint64_t end; /* bytes read, holes included */
	int over; /* the member is larger than limit, or no_room */
	unsigned min_free_pct; /* of pkg_limits */
	uint64_t room_at; /* where the next free-space check is due */
	uint64_t stop; /* > 0: read_data() returns once this much is in */
	int no_room; /* the file system is short of free space */
	const struct pkg_limits *lim; /* its room hook */
	int room_tried; /* the hook was called for this member */
	void (*progress)(uint64_t end, void *arg); /* after each write */
	void *progress_arg;
};

const struct pkg_limits pkg_default_limits = {
	.max_member = 4ull << 30,
	.max_total = 64ull << 30,
	.max_members = 1000000,
};

/*
 * Append the components of p to the len bytes already in out, dropping
 * empty and "." ones; ".." pops a component when pop is set (popping the
 * root fails) and fails otherwise.  The result is absolute, NUL-ended.
 */
static int
normalise(const char *p, char *out, size_t outlen, size_t len, int pop)
{
	const char *comp;
	size_t n;

	while (*p != '\0') {
		while (*p == '/')
			p++;
		comp = p;
		while (*p != '\0' && *p != '/')
			p++;
		n = (size_t)(p - comp);
		if (n == 0 || (n == 1 && comp[0] == '.'))
			continue;
		if (n == 2 && comp[0] == '.' && comp[1] == '.') {
			if (!pop || len == 0)
				return -1;
			while (len > 0 && out[len - 1] != '/')
				len--;
			if (len > 0)
				len--;
			continue;
		}
		if (n + 1 >= outlen - len)
			return -1;
		out[len++] = '/';
		memcpy(out + len, comp, n);
		len += n;
	}
	if (len == 0)
		out[len++] = '/';
	out[len] = '\0';
	return 0;
}

int
pkg_member_path(const char *name, char *out, size_t outlen)
{
	if (name == NULL || name[0] == '\0' || outlen < 2)
		return -1;
	return normalise(name, out, outlen, 0, 0);
}

/*
 * Links are resolved lexically, as the package would be laid out on disk
 * with nothing else around it: a relative target starts from the link's
 * directory, an absolute one from the package root, ".." pops a component
 * and popping the root is an escape.
 */
int
pkg_link_resolve(const char *link, const char *target, char *out, size_t outlen)
{
	const char *slash;
	size_t len = 0;

	if (link == NULL || target == NULL || target[0] == '\0' || outlen < 2)
		return -1;
	if (target[0] != '/' && (slash = strrchr(link, '/')) != NULL) {
		len = (size_t)(slash - link);
		if (len >= outlen)
			return -1;
		memcpy(out, link, len);
	}
	return normalise(target, out, outlen, len, 1);
}

/*
 * Take the ELF magic from a block at off.  Blocks come in order but may
 * leave holes (sparse members), and a hole reads as zeros: not ELF.
 */
static void
sink_magic(struct sink *s, const unsigned char *buf, size_t size, uint64_t off)
{
	size_t skip, n;

	if (off > s->have) {
		s->elf = 0;
		return;
	}
	skip = (size_t)(s->have - off);
	if (skip < size) {
		n = size - skip;
		if (n > MAGIC_LEN - s->have)
			n = MAGIC_LEN - s->have;
		memcpy(s->magic + s->have, buf + skip, n);
		s->have += n;
	}
	if (s->have == MAGIC_LEN)
		s->elf = elf_has_magic(s->magic, MAGIC_LEN);
}

/*
 * 1 when writing size more bytes to s->fd leaves min_free_pct of its file
 * system free (or it cannot tell).  Checked every PKG_ROOM_STEP bytes.
 */
static int
sink_room(struct sink *s, uint64_t end, size_t size)
{
	struct statvfs vfs;
	uint64_t total, avail;

	if (s->min_free_pct == 0 || end < s->room_at)
		return 1;
	s->room_at = end + PKG_ROOM_STEP;
	if (fstatvfs(s->fd, &vfs) == -1)
		return 1;
	total = (uint64_t)vfs.f_blocks * vfs.f_frsize;
	avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
	return avail >= size && avail - size >= total / 100 * s->min_free_pct;
}

/*
 * No room for size more bytes: ask the limits' hook, once per member, to
 * make some; 1 when it did.
 */
static int
sink_make_room(struct sink *s, size_t size)
{
	if (s->lim == NULL || s->lim->room == NULL || s->room_tried)
		return 0;
	s->room_tried = 1;
	if (!s->lim->room((uint64_t)size + PKG_ROOM_STEP, s->lim->room_arg))
		return 0;
	s->room_at = 0; /* check again at once */
	return 1;
}

/* Write a piece of the member: -1 with errno when it could not. */
static int
sink_write(struct sink *s, const void *buf, size_t size, uint64_t off)
{
	if (file_pwrite(s->fd, buf, size, off) == 0)
		return 0;
	if (errno != ENOSPC || !sink_make_room(s, size))
		return -1;
	return file_pwrite(s->fd, buf, size, off);
}

/*
 * Read the current member's data to its end into s.  The data is always
 * read through (what the archive really holds, not what the header
 * declares); it is written only while it may be ELF and fits the limit.
 */
static int
read_data(struct pkg_reader *r, struct sink *s, char *err, size_t errlen)
{
	const void *buf;
	size_t size;
	la_int64_t off;
	uint64_t uoff;
	int rc;

	for (;;) {
		rc = archive_read_data_block(r->files, &buf, &size, &off);
		if (rc == ARCHIVE_EOF)
			break;
		if (rc < ARCHIVE_WARN) {
			pkg_reader_error(r, err, errlen);
			return -1;
		}
		if (off < 0 || (uint64_t)off > UINT64_MAX - size) {
			snprintf(err, errlen, "bad data offset");
			return -1;
		}
		uoff = (uint64_t)off;
		if (size == 0)
			continue;
		if (s->elf == -1)
			sink_magic(s, buf, size, uoff);
		if (s->fd != -1 && s->elf != 0 && !s->over) {
			if (uoff + size > s->limit)
				s->over = 1;
			else if (!sink_room(s, uoff, size) &&
			    (!sink_make_room(s, size) ||
				!sink_room(s, uoff, size)))
				s->over = s->no_room = 1;
			else if (sink_write(s, buf, size, uoff) == -1) {
				snprintf(err, errlen, "write: %s",
				    strerror(errno));
				return -1;
			}
		}
		if (uoff + size > s->end)
			s->end = uoff + size;
		if (s->progress != NULL && !s->over)
			s->progress(s->end, s->progress_arg);
		if (s->stop > 0 && s->end >= s->stop && s->elf != -1)
			return 0;
	}
	if (s->elf == -1)
		s->elf = 0;
	return 0;
}

/* Entry name of e, or NULL when libarchive has none it can give. */
static const char *
entry_name(struct archive_entry *e)
{
	const char *s = archive_entry_pathname(e);

	return s != NULL ? s : archive_entry_pathname_utf8(e);
}

/* 1 when e is a hard link that carries no data of its own. */
static int
is_bare_hardlink(struct archive_entry *e)
{
	return archive_entry_hardlink(e) != NULL &&
	    (!archive_entry_size_is_set(e) || archive_entry_size(e) == 0);
}

/*
 * Copy bytes [from, to) of the member whose data starts at offset base of
 * the stream to the same place in fd, read by decoder d.
 */
static int
part_copy(struct pkg_reader *r, struct xzdec *d, uint64_t base, uint64_t from,
    uint64_t to, int fd, char *err, size_t errlen)
{
	ssize_t n;

	if (xzdec_seek(d, base + from, err, errlen) == -1)
		return -1;
	while (from < to) {
		n = xzdec_read(d, r->part_buf,
		    to - from < READ_BLOCK ? (size_t)(to - from) : READ_BLOCK,
		    err, errlen);
		if (n <= 0) {
			if (n == 0)
				snprintf(err, errlen,
				    "xz: the stream ends early");
			return -1;
		}
		if (file_pwrite(fd, r->part_buf, (size_t)n, from) == -1) {
			snprintf(err, errlen, "write: %s", strerror(errno));
			return -1;
		}
		from += (uint64_t)n;
	}
	return 0;
}

/*
 * 1 when what a scan reads of section name (of type) need not be read
 * beyond its first bytes: DWARF that neither elf_read_info() nor
 * sources_list()'s line-table walk reads, and symbol tables.
 */
static int
part_unread(const char *name, unsigned type)
{
	static const char *const read[] = { "line", "line_str", "str" };
	size_t i;

	if (type == SHT_SYMTAB ||
	    (type == SHT_STRTAB && strcmp(name, ".shstrtab") != 0))
		return 1;
	if (!elf_is_debug_name(name))
		return 0;
	name += name[1] == 'z' ? 8 : 7;
	for (i = 0; i < sizeof(read) / sizeof(read[0]); i++)
		if (strcmp(name, read[i]) == 0)
			return 0;
	return 1;
}

/*
 * Where the section headers of the ELF file whose first head bytes are in
 * fd start, when they and the program headers lie where a scan in part
 * can use them (the program headers in those first bytes, the section
 * headers after them); else 0.
 */
static uint64_t
part_shoff(int fd, uint64_t head)
{
	unsigned char h[64];
	uint64_t phoff, shoff, phend;
	int big, c64;

	if (head < sizeof(h) || pread(fd, h, sizeof(h), 0) != sizeof(h))
		return 0;
	c64 = h[EI_CLASS] == ELFCLASS64;
	big = h[EI_DATA] == ELFDATA2MSB;
#define FIELD(off, n) elf_uint(h + (off), (n), big)
	phoff = c64 ? FIELD(0x20, 8) : FIELD(0x1c, 4);
	shoff = c64 ? FIELD(0x28, 8) : FIELD(0x20, 4);
	phend =
	    phoff + FIELD(c64 ? 0x36 : 0x2a, 2) * FIELD(c64 ? 0x38 : 0x2c, 2);
#undef FIELD
	return phoff > head || phend > head || shoff < head ? 0 : shoff;
}

/* A byte range of a member, to copy. */
struct part_range {
	uint64_t from, to;
};

static int
part_range_cmp(const void *a, const void *b)
{
	const struct part_range *x = a, *y = b;

	return x->from < y->from ? -1 : x->from > y->from;
}

/*
 * A large ELF member of a stream read by its index, whose first bytes are
 * in fd (head of them): copy to fd, sparse, what a scan reads of it, its
 * headers and the sections elf_read_info() and the line-table walk of
 * sources_list() read, decoding only the blocks that hold them, and leave
 * a decoder at its end for files to skip to (r->parked).  1 when that
 * holds the member's answers (a debug file whose sources need its units,
 * DWARF 4, is not); 0 to read it in order after all; -1 with err.
 */
static int
scan_part(struct pkg_reader *r, uint64_t base, uint64_t size, uint64_t head,
    int fd, const char *tmpdir, char *err, size_t errlen)
{
	struct part_range *rg = NULL;
	struct xzdec *tail = NULL, *mid = NULL;
	struct elf_file f;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	const char *name;
	uint64_t shoff, at, n;
	size_t i, nrg = 0;
	int rc = 0, opened = 0;

	if (ftruncate(fd, (off_t)size) == -1) {
		snprintf(err, errlen, "ftruncate: %s", strerror(errno));
		return -1;
	}
	/* The section headers, at the end: their decoder stays there. */
	if ((shoff = part_shoff(fd, head)) == 0 || shoff >= size ||
	    (tail = xzdec_new(r->map)) == NULL)
		return 0;
	if (part_copy(r, tail, base, shoff, size, fd, err, errlen) == -1 ||
	    xzdec_seek(tail, base + size, err, errlen) == -1) {
		rc = -1;
		goto out;
	}
	if (elf_file_open(&f, fd, err, errlen) != 0)
		goto out;
	opened = 1;
	if ((rg = calloc(f.shnum + 1, sizeof(*rg))) == NULL ||
	    gelf_getshdr(elf_getscn(f.elf, f.shstrndx), &sh) == NULL)
		goto out;
	rg[nrg].from = sh.sh_offset;
	rg[nrg++].to = sh.sh_offset + sh.sh_size;
	while ((scn = elf_nextscn(f.elf, scn)) != NULL && nrg <= f.shnum) {
		if (gelf_getshdr(scn, &sh) == NULL ||
		    sh.sh_type == SHT_NOBITS || sh.sh_size == 0 ||
		    sh.sh_offset > size || sh.sh_size > size - sh.sh_offset)
			continue;
		/* Names are read below, once .shstrtab is in. */
		rg[nrg].from = sh.sh_offset;
		rg[nrg++].to = sh.sh_offset + sh.sh_size;
	}
	if ((mid = xzdec_new(r->map)) == NULL)
		goto out;
	/*
	 * .shstrtab first, what of it the head and the tail left out: the
	 * names say what else is needed.
	 */
	at = rg[0].from > head ? rg[0].from : head;
	n = rg[0].to < shoff ? rg[0].to : shoff;
	if (at < n && part_copy(r, mid, base, at, n, fd, err, errlen) == -1) {
		rc = -1;
		goto out;
	}
	for (i = 1, scn = NULL; (scn = elf_nextscn(f.elf, scn)) != NULL;) {
		if (gelf_getshdr(scn, &sh) == NULL ||
		    sh.sh_type == SHT_NOBITS || sh.sh_size == 0 ||
		    sh.sh_offset > size || sh.sh_size > size - sh.sh_offset)
			continue;
		if (i == nrg)
			break;
		name = elf_strptr(f.elf, f.shstrndx, sh.sh_name);
		/* A compressed section's header is all its size needs. */
		if (name != NULL && part_unread(name, sh.sh_type) &&
		    rg[i].to - rg[i].from > 64)
			rg[i].to = rg[i].from + 64;
		i++;
	}
	qsort(rg, nrg, sizeof(*rg), part_range_cmp);
	for (i = 0, at = head; i < nrg; i++) {
		if (rg[i].from < at)
			rg[i].from = at;
		n = rg[i].to < shoff ? rg[i].to : shoff;
		if (rg[i].from < n &&
		    part_copy(r, mid, base, rg[i].from, n, fd, err, errlen) ==
			-1) {
			rc = -1;
			goto out;
		}
		if (n > at)
			at = n;
	}
	elf_file_close(&f);
	opened = 0;
	rc = sources_from_lines(fd, tmpdir);
	if (rc == 1) {
		pkg_reader_dec_free(r, r->parked);
		r->parked = tail;
		tail = NULL;
	}
out:
	if (opened)
		elf_file_close(&f);
	pkg_reader_dec_free(r, tail);
	pkg_reader_dec_free(r, mid);
	free(rg);
	return rc;
}

/*
 * Inspect a regular member: copy it to tmp while it may be ELF, then ask
 * elf_read_info.  *tmp is made on first need and kept for the next member.
 * A large member of a stream read by its index is read in part: its first
 * PART_HEAD bytes, then only what scan_part() copies, or nothing more
 * when it is not ELF.
 */
static int
scan_regular(struct pkg_reader *r, struct archive_entry *e,
    struct pkg_member *m, const char *tmpdir, const struct pkg_limits *lim,
    int *tmp, struct pkg_stats *stats, char *err, size_t errlen)
{
	struct sink s = { .fd = -1,
		.elf = -1,
		.limit = lim->max_member,
		.min_free_pct = lim->min_free_pct };
	char eerr[256];
	uint64_t size = 0, base = 0;
	int part = 0, rc;

	if (*tmp == -1 && (*tmp = file_tmp_open(tmpdir, err, errlen)) == -1)
		return -1;
	if (ftruncate(*tmp, 0) == -1) {
		snprintf(err, errlen, "ftruncate: %s", strerror(errno));
		return -1;
	}
	s.fd = *tmp;
	if (r->dec != NULL && archive_entry_size_is_set(e) &&
	    archive_entry_sparse_count(e) == 0 &&
	    (size = (uint64_t)archive_entry_size(e)) <= lim->max_member &&
	    size >= PART_MIN_BLOCKS * xzmap_block_max(r->map) &&
	    strncmp(m->path, PKG_DWZ_DIR, strlen(PKG_DWZ_DIR)) != 0) {
		/* Where the member's data starts in the stream. */
		base = (uint64_t)archive_filter_bytes(r->files, -1);
		s.stop = PART_HEAD;
		part = 1;
	}
	if (read_data(r, &s, err, errlen) == -1)
		return -1;
	if (part && s.elf != 1) {
		/* Not ELF: the rest is skipped, never decompressed. */
		m->size = size;
		stats->part_read++;
		return 0;
	}
	if (part) {
		rc = s.over ? 0
			    : scan_part(r, base, size, s.end, *tmp, tmpdir, err,
				  errlen);
		if (rc == -1)
			return -1;
		if (rc == 1) {
			stats->part_read++;
			s.end = size;
		} else {
			s.stop = 0;
			if (read_data(r, &s, err, errlen) == -1)
				return -1;
		}
	}
	m->size = s.end;
	if (s.elf != 1)
		return 0;
	if (s.over) {
		if (s.no_room)
			stats->no_room++;
		else
			stats->too_large++;
		return 0;
	}
	/* A trailing hole is not written: give the file its full length. */
	if (ftruncate(*tmp, (off_t)s.end) == -1) {
		snprintf(err, errlen, "ftruncate: %s", strerror(errno));
		return -1;
	}
	if (elf_read_info(*tmp, &m->elf, eerr, sizeof(eerr)) != 0) {
		memset(&m->elf, 0, sizeof(m->elf));
		stats->bad_elf++;
		return 0;
	}
	m->type = PKG_ELF;
	m->fd = *tmp;
	m->is_dwz = strncmp(m->path, PKG_DWZ_DIR, strlen(PKG_DWZ_DIR)) == 0;
	return 0;
}

int
pkg_scan_stats(const char *path, const char *tmpdir,
    const struct pkg_limits *lim,
    int (*cb)(const struct pkg_member *m, void *arg), void *arg,
    struct pkg_stats *stats, char *err, size_t errlen)
{
	struct pkg_reader r;
	struct pkg_stats dummy;
	struct pkg_member m;
	struct archive_entry *e;
	char name[PATH_MAX], target[PATH_MAX];
	const char *raw;
	int rc, tmp = -1;

	if (stats == NULL)
		stats = &dummy;
	memset(stats, 0, sizeof(*stats));
	if (pkg_reader_open(&r, path, lim, 1, err, errlen) == -1) {
		pkg_reader_close(&r);
		return -1;
	}
	while ((rc = pkg_reader_next(&r, &e, err, errlen)) == 0) {
		memset(&m, 0, sizeof(m));
		m.fd = -1;
		if ((raw = entry_name(e)) == NULL ||
		    pkg_member_path(raw, name, sizeof(name)) == -1) {
			stats->bad_names++;
			continue;
		}
		m.path = name;
		m.type = PKG_OTHER;
		m.mtime = (int64_t)archive_entry_mtime(e);
		if (archive_entry_filetype(e) == AE_IFLNK) {
			if ((m.link_target = archive_entry_symlink(e)) != NULL)
				m.type = PKG_SYMLINK;
		} else if (is_bare_hardlink(e)) {
			if (pkg_member_path(archive_entry_hardlink(e), target,
				sizeof(target)) == -1) {
				stats->bad_names++;
				continue;
			}
			m.type = PKG_SYMLINK;
			m.link_target = target;
		} else if (archive_entry_filetype(e) == AE_IFREG) {
			m.regular = 1;
			rc = scan_regular(&r, e, &m, tmpdir, lim, &tmp, stats,
			    err, errlen);
			if (rc == -1)
				break;
		}
		if (cb(&m, arg) != 0) {
			rc = ELF_NOTFOUND;
			break;
		}
	}
	stats->members = r.members;
	stats->total = r.total;
	pkg_reader_dec_free(&r, r.dec);
	pkg_reader_dec_free(&r, r.parked);
	stats->decoded = r.map != NULL ? r.decoded : r.total;
	r.dec = r.parked = NULL;
	pkg_reader_close(&r);
	if (tmp != -1)
		close(tmp);
	return rc == -1 ? -1 : 0;
}

int
pkg_scan(const char *path, const char *tmpdir, const struct pkg_limits *lim,
    int (*cb)(const struct pkg_member *m, void *arg), void *arg, char *err,
    size_t errlen)
{
	return pkg_scan_stats(path, tmpdir, lim, cb, arg, NULL, err, errlen);
}

/* Copy the current member into out_fd from offset 0, telling progress. */
static int
extract_regular(struct pkg_reader *r, int out_fd, const struct pkg_limits *lim,
    void (*progress)(uint64_t end, void *arg), void *arg, char *err,
    size_t errlen)
{
	struct sink s = { .fd = out_fd,
		.elf = 1,
		.limit = lim->max_member,
		.min_free_pct = lim->min_free_pct,
		.lim = lim,
		.progress = progress,
		.progress_arg = arg };
	struct stat st;
	int regular;

	regular = fstat(out_fd, &st) == 0 && S_ISREG(st.st_mode);
	if (regular && ftruncate(out_fd, 0) == -1) {
		snprintf(err, errlen, "ftruncate: %s", strerror(errno));
		return -1;
	}
	if (read_data(r, &s, err, errlen) == -1)
		return -1;
	if (s.no_room) {
		snprintf(err, errlen,
		    "less than %u%% of the disk would be left free",
		    lim->min_free_pct);
		return -1;
	}
	if (s.over) {
		snprintf(err, errlen, "member larger than %llu bytes",
		    (unsigned long long)lim->max_member);
		return -1;
	}
	if (regular && ftruncate(out_fd, (off_t)s.end) == -1) {
		snprintf(err, errlen, "ftruncate: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* The member e, named name, is a link: tell the watcher where it leads. */
static void
tell_link(struct archive_entry *e, const char *name,
    const struct pkg_watch *watch)
{
	char target[PATH_MAX];
	int rc;

	if (archive_entry_filetype(e) == AE_IFLNK)
		rc = pkg_link_resolve(name, archive_entry_symlink(e), target,
		    sizeof(target));
	else
		rc = pkg_member_path(archive_entry_hardlink(e), target,
		    sizeof(target));
	if (rc == 0)
		watch->link(name, target, watch->arg);
}

/*
 * The member at e, named name, is not the one asked for: when it is a
 * regular file with data that the watcher wants, extract it there; a link
 * is told to a watcher that asks for links.
 */
static void
extract_side(struct pkg_reader *r, struct archive_entry *e, const char *name,
    const struct pkg_limits *lim, const struct pkg_watch *watch)
{
	struct pkg_side *sd;
	char err[256];

	if (watch == NULL)
		return;
	if (watch->link != NULL &&
	    (archive_entry_filetype(e) == AE_IFLNK || is_bare_hardlink(e))) {
		tell_link(e, name, watch);
		return;
	}
	if (watch->side == NULL || archive_entry_filetype(e) != AE_IFREG ||
	    archive_entry_size(e) == 0 ||
	    (sd = watch->side(name, (uint64_t)archive_entry_size(e),
		 watch->arg)) == NULL)
		return;
	sd->done = extract_regular(r, sd->fd, lim, sd->progress, sd->arg, err,
		       sizeof(err)) == 0
	    ? 1
	    : -1;
	if (watch->side_end != NULL)
		watch->side_end(sd, watch->arg);
}

/* Once the member is out: 1 when the watcher wants the pass to read on. */
static int
read_on(const struct pkg_watch *watch)
{
	return watch != NULL && watch->more != NULL && watch->more(watch->arg);
}

/*
 * One pass over the package looking for want.  A link named want moves
 * want to its target and the pass goes on, since the target usually comes
 * later (.build-id/ sorts before the files it points to); *moved tells the
 * caller to start again when the target was behind us.
 *
 * cpio (rpm) stores a file with several names the other way round from
 * tar: the first names come empty and the last one brings the data, which
 * libarchive reports as a hard link to the first name.  So an empty want
 * with more than one link waits for a later member that links to it.
 *
 * An empty want (never a member name) reads for the sides alone.
 */
static int
extract_pass(const char *path, char *want, size_t wantlen, int out_fd,
    const struct pkg_limits *lim, const struct pkg_watch *watch, int *hops,
    int *moved, char *err, size_t errlen)
{
	struct pkg_reader r;
	struct archive_entry *e;
	char name[PATH_MAX], next[PATH_MAX];
	const char *raw, *target;
	struct stat st;
	int rc, cpio_link = 0, got = want[0] == '\0';

	*moved = 0;
	if (pkg_reader_open(&r, path, lim, 0, err, errlen) == -1) {
		pkg_reader_close(&r);
		return -1;
	}
	while ((rc = pkg_reader_next(&r, &e, err, errlen)) == 0) {
		if ((raw = entry_name(e)) == NULL ||
		    pkg_member_path(raw, name, sizeof(name)) == -1)
			continue;
		if (cpio_link) {
			if ((target = archive_entry_hardlink(e)) != NULL &&
			    !is_bare_hardlink(e) &&
			    pkg_member_path(target, next, sizeof(next)) == 0 &&
			    strcmp(next, want) == 0) {
				rc = extract_regular(&r, out_fd, lim,
				    watch != NULL ? watch->progress : NULL,
				    watch != NULL ? watch->arg : NULL, err,
				    errlen);
				break;
			}
			continue;
		}
		if (got || strcmp(name, want) != 0) {
			extract_side(&r, e, name, lim, watch);
			if (got && !read_on(watch))
				break; /* no more sides wanted */
			continue;
		}
		if (archive_entry_filetype(e) == AE_IFLNK ||
		    is_bare_hardlink(e)) {
			if (++*hops > PKG_LINK_HOPS) {
				snprintf(err, errlen, "%s: more than %d links",
				    want, PKG_LINK_HOPS);
				rc = -1;
				break;
			}
			if (archive_entry_filetype(e) == AE_IFLNK) {
				target = archive_entry_symlink(e);
				rc = pkg_link_resolve(name, target, next,
				    sizeof(next));
			} else {
				target = archive_entry_hardlink(e);
				rc =
				    pkg_member_path(target, next, sizeof(next));
			}
			if (rc == -1 || strlen(next) >= wantlen) {
				snprintf(err, errlen,
				    "%s: link target %s leaves the package",
				    name, target != NULL ? target : "(none)");
				rc = -1;
				break;
			}
			memcpy(want, next, strlen(next) + 1);
			*moved = 1;
			continue;
		}
		if (archive_entry_filetype(e) != AE_IFREG) {
			snprintf(err, errlen, "%s: not a regular file", name);
			rc = -1;
			break;
		}
		if (archive_entry_nlink(e) > 1 &&
		    archive_entry_hardlink(e) == NULL &&
		    archive_entry_size(e) == 0) {
			cpio_link = 1;
			continue;
		}
		if (watch != NULL && watch->size != NULL &&
		    archive_entry_size_is_set(e))
			watch->size((uint64_t)archive_entry_size(e),
			    watch->arg);
		rc = extract_regular(&r, out_fd, lim,
		    watch != NULL ? watch->progress : NULL,
		    watch != NULL ? watch->arg : NULL, err, errlen);
		if (rc == -1 || !read_on(watch))
			break;
		got = 1; /* the sides still to come are read on */
	}
	if (got && rc == ELF_NOTFOUND)
		rc = 0;
	/* No later name brought data: the file is empty after all. */
	if (rc == ELF_NOTFOUND && cpio_link && fstat(out_fd, &st) == 0 &&
	    S_ISREG(st.st_mode) && ftruncate(out_fd, 0) == -1) {
		snprintf(err, errlen, "ftruncate: %s", strerror(errno));
		rc = -1;
	} else if (rc == ELF_NOTFOUND && cpio_link)
		rc = 0;
	pkg_reader_close(&r);
	return rc;
}

int
pkg_extract(const char *path, const char *member, int out_fd,
    const struct pkg_limits *lim, char *err, size_t errlen)
{
	return pkg_extract_watch(path, member, out_fd, lim, NULL, err, errlen);
}

int
pkg_extract_watch(const char *path, const char *member, int out_fd,
    const struct pkg_limits *lim, const struct pkg_watch *watch, char *err,
    size_t errlen)
{
	char want[PATH_MAX] = "";
	int rc, hops = 0, moved;

	if (member != NULL &&
	    pkg_member_path(member, want, sizeof(want)) == -1) {
		snprintf(err, errlen, "bad member name");
		return -1;
	}
	do {
		rc = extract_pass(path, want, sizeof(want), out_fd, lim, watch,
		    &hops, &moved, err, errlen);
	} while (rc == ELF_NOTFOUND && moved);
	return rc;
}
