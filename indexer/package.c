/*
 * indexer/package.c: walk and extract .deb/.ddeb, .rpm and Arch packages
 * with libarchive, in-process and streaming.
 *
 * A package is read through a stack of libarchive readers, each fed from
 * the one below by callbacks (archive_read_open), never through a temporary
 * copy:
 *
 *	.deb:	file -> ar ("data.tar.*" member) -> raw+filters -> tar
 *	other:	file -> raw+filters (rpm, gzip, xz, zstd...) -> tar or cpio
 *
 * xz (a .deb's data.tar.xz, an Arch .pkg.tar.xz) is decompressed with
 * liblzma in place of the raw reader, with a memory limit (XZ_MEMLIMIT)
 * that libarchive does not set: an xz stream chooses its own dictionary,
 * up to 1.5 GiB.  rpm payloads go through libarchive's xz.
 *
 * The "raw" reader (or the xz decoder) does nothing but decompress, so the
 * callback that feeds the top reader sees every decompressed byte of the
 * package.  That is where
 * max_total is enforced: libarchive also skips data on its own (unread
 * member data, cpio resynchronisation, pax headers), and a bomb hidden
 * there is stopped just as early as one in a member we read.
 *
 * A scan of a .deb on disk whose data.tar.xz carries a block index (as
 * multi-threaded xz writes it: dpkg-deb's since Debian 12) decompresses it
 * with indexer/xzseek.c instead, so that what the scan does not read is
 * skipped block by block: the rest of a large member that is not ELF, and
 * of a large DWARF 5 debug file everything but its headers, notes and line
 * tables (scan_part).  Skipped bytes count against max_total all the same.
 *
 * libarchive's cpio reader takes a newc header's name size (8 hex digits,
 * up to 4 GiB) as it comes and asks its read-ahead buffer for that many
 * bytes at once: one header in a small compressed payload would make it
 * allocate, and fill, gigabytes.  The feed of the top reader therefore
 * looks at every place where libarchive would see a newc header ("07070"
 * and '1' or '2', then hex digits to its 110th byte, as its resync scan
 * requires too) and refuses the stream when one names more than
 * NEWC_NAME_MAX bytes (newc_guard).  The other cpio headers carry at most
 * 6 octal or 4 hex digits, and tar's long names are bounded by libarchive.
 *
 * Only native decompressors are registered; a libarchive that would run an
 * external program for one of them is refused.  Member bytes we inspect go
 * to one unlinked temporary file per scan, rewritten for each ELF member.
 * Nothing here keeps state between calls; each call owns its readers.
 */
#include "indexer/package.h"

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

/* Bytes asked of the package file per read. */
#define READ_BLOCK (64 * 1024)
/* A newc cpio header, and the longest member name one may announce. */
#define NEWC_HEADER 110
#define NEWC_NAME_MAX (64 * 1024)
/* The ELF magic is this long. */
#define MAGIC_LEN 4
/* The ar magic that starts a .deb. */
#define AR_MAGIC "!<arch>\n"
#define AR_MAGIC_LEN 8
/* Members of the outer ar of a .deb looked at before giving up. */
#define DEB_MEMBERS_MAX 16
/*
 * The most memory the xz decoder may take: enough for xz -9's 64 MiB
 * dictionary.  libarchive's own xz filter sets no limit, and an xz stream
 * may ask for a 1.5 GiB dictionary, which would be held while it is read.
 */
#define XZ_MEMLIMIT (72u << 20)
/*
 * A member of at least this many of its stream's largest blocks, in a
 * stream read by its index, is read in part (scan_part): its first
 * PART_HEAD bytes, then only what a scan needs.
 */
#define PART_MIN_BLOCKS 2
#define PART_HEAD (64u << 10)
/* The xz magic that starts a stream. */
#define XZ_MAGIC \
	"\xfd" \
	"7zXZ"
#define XZ_MAGIC_LEN 6

/*
 * The reader stack of one open package.  ar is the outer ar of a .deb (else
 * NULL); raw undoes the compression; files reads the members.
 */
struct pkg_reader {
	int fd;
	const struct pkg_limits *lim; /* its grow hook */
	uint64_t off; /* bytes read from fd */
	struct archive *ar;
	struct archive *raw; /* NULL when xz is set */
	struct archive *files;
	int xz; /* decompressed here with liblzma, within XZ_MEMLIMIT */
	lzma_stream lz;
	int xz_eof, xz_end; /* no more input; the stream ended */
	unsigned char *xz_buf; /* READ_BLOCK out, then READ_BLOCK in */
	uint64_t total; /* decompressed bytes handed to files */
	uint64_t max_total;
	unsigned members;
	unsigned max_members;
	int over_total; /* the feed stopped at max_total */
	int cpio; /* files may read cpio: newc_guard watches the feed */
	/* The feed's last bytes, for a newc header across two blocks. */
	unsigned char carry[NEWC_HEADER - 1];
	size_t ncarry;
	unsigned char *file_buf; /* READ_BLOCK read from the file */
	char member[64]; /* the ar member being decompressed, for errors */
	/*
	 * A scan of a .deb on disk whose data.tar.xz has a block index:
	 * dec reads it for files in place of lz and skips what files skips;
	 * parked was left at the end of a member read in part (scan_part),
	 * to take over from dec there.
	 */
	int seek; /* the caller allows it */
	struct xzmap *map;
	struct xzdec *dec, *parked;
	uint64_t decoded; /* by decoders freed already */
	unsigned char *part_buf; /* READ_BLOCK for scan_part */
};

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
 * Register the decompressors, native ones only: ARCHIVE_WARN from a
 * support function means libarchive would run an external program.
 */
static int
add_filters(struct archive *a, int rpm, char *err, size_t errlen)
{
	static const struct {
		const char *name;
		int (*add)(struct archive *);
	} filters[] = {
		{ "gzip", archive_read_support_filter_gzip },
		{ "bzip2", archive_read_support_filter_bzip2 },
		{ "xz", archive_read_support_filter_xz },
		{ "lzma", archive_read_support_filter_lzma },
		{ "zstd", archive_read_support_filter_zstd },
	};
	size_t i;

	for (i = 0; i < sizeof(filters) / sizeof(filters[0]); i++) {
		if (filters[i].add(a) != ARCHIVE_OK) {
			snprintf(err, errlen, "libarchive has no native %s",
			    filters[i].name);
			return -1;
		}
	}
	if (rpm && archive_read_support_filter_rpm(a) != ARCHIVE_OK) {
		snprintf(err, errlen, "libarchive cannot read rpm");
		return -1;
	}
	return 0;
}

/* The next data block of src as a read callback wants it: bytes or 0. */
static la_ssize_t
pass_block(struct archive *self, struct archive *src, const void **buf)
{
	size_t size = 0;
	la_int64_t off;
	int rc;

	do {
		rc = archive_read_data_block(src, buf, &size, &off);
		if (rc == ARCHIVE_EOF)
			return 0;
		if (rc < ARCHIVE_WARN) {
			archive_set_error(self, EIO, "%s",
			    archive_error_string(src) != NULL
				? archive_error_string(src)
				: "read error");
			return -1;
		}
	} while (size == 0);
	if (size > (size_t)SSIZE_MAX) {
		archive_set_error(self, EIO, "block too large");
		return -1;
	}
	return (la_ssize_t)size;
}

/*
 * read() from the package file, waiting at its end while it grows (a
 * download: pkg_limits.grow).  Bytes, 0 at the end, -1 with errno.
 */
static ssize_t
pkg_read(struct pkg_reader *r, void *buf, size_t len)
{
	ssize_t n;
	int rc;

	for (;;) {
		n = read(r->fd, buf, len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n > 0)
			r->off += (uint64_t)n;
		if (n != 0 || r->lim == NULL || r->lim->grow == NULL)
			return n;
		if ((rc = r->lim->grow(r->off, r->lim->grow_arg)) == 0)
			return 0;
		if (rc == -1) {
			errno = EIO;
			return -1;
		}
	}
}

/* The first len bytes of the package file, waiting for them as above. */
static int
pkg_head(struct pkg_reader *r, void *buf, size_t len)
{
	ssize_t n;

	for (;;) {
		n = pread(r->fd, buf, len, 0);
		if (n == (ssize_t)len)
			return 0;
		if (n == -1 || r->lim == NULL || r->lim->grow == NULL ||
		    r->lim->grow((uint64_t)n, r->lim->grow_arg) != 1)
			return -1;
	}
}

/* Feeds the outer reader from the package file. */
static la_ssize_t
file_read_cb(struct archive *a, void *arg, const void **buf)
{
	struct pkg_reader *r = arg;
	ssize_t n;

	*buf = r->file_buf;
	if ((n = pkg_read(r, (void *)*buf, READ_BLOCK)) == -1) {
		archive_set_error(a, errno, "read: %s", strerror(errno));
		return -1;
	}
	return (la_ssize_t)n;
}

/* Feeds raw from the data.tar member of the ar: compressed bytes. */
static la_ssize_t
deb_member_read_cb(struct archive *a, void *arg, const void **buf)
{
	struct pkg_reader *r = arg;

	return pass_block(a, r->ar, buf);
}

/*
 * The next block of the xz stream as a read callback wants it: bytes, 0 at
 * its end, -1 with the error set on a.  Compressed bytes come from the ar
 * member of a .deb, else from the file.
 */
static la_ssize_t
xz_block(struct archive *a, struct pkg_reader *r, const void **buf)
{
	const void *in = r->xz_buf + READ_BLOCK;
	la_ssize_t n;
	lzma_ret rc;

	r->lz.next_out = r->xz_buf;
	r->lz.avail_out = READ_BLOCK;
	while (r->lz.avail_out == READ_BLOCK && !r->xz_end) {
		if (r->lz.avail_in == 0 && !r->xz_eof) {
			if (r->ar != NULL)
				n = pass_block(a, r->ar, &in);
			else if ((n = pkg_read(r, r->xz_buf + READ_BLOCK,
				      READ_BLOCK)) == -1)
				archive_set_error(a, errno, "read: %s",
				    strerror(errno));
			if (n == -1)
				return -1;
			r->lz.next_in = in;
			r->lz.avail_in = (size_t)n;
			r->xz_eof = n == 0;
		}
		rc = lzma_code(&r->lz, r->xz_eof ? LZMA_FINISH : LZMA_RUN);
		if (rc == LZMA_STREAM_END) {
			r->xz_end = 1;
		} else if (rc == LZMA_MEMLIMIT_ERROR) {
			archive_set_error(a, ENOMEM,
			    "xz: the stream needs more than %u MiB to "
			    "decompress",
			    XZ_MEMLIMIT >> 20);
			return -1;
		} else if (rc != LZMA_OK) {
			archive_set_error(a, EIO, "xz: %s",
			    rc == LZMA_BUF_ERROR ? "truncated stream"
						 : "corrupt stream");
			return -1;
		}
	}
	*buf = r->xz_buf;
	return (la_ssize_t)(READ_BLOCK - r->lz.avail_out);
}

/* Decompress the xz stream here rather than in a raw reader. */
static int
xz_open(struct pkg_reader *r, char *err, size_t errlen)
{
	r->xz = 1;
	if ((r->xz_buf = malloc(2 * READ_BLOCK)) == NULL ||
	    lzma_stream_decoder(&r->lz, XZ_MEMLIMIT, LZMA_CONCATENATED) !=
		LZMA_OK) {
		snprintf(err, errlen, "cannot set up an xz decoder");
		return -1;
	}
	return 0;
}

/* The next block of data.tar.xz, read by its index. */
static la_ssize_t
dec_block(struct archive *a, struct pkg_reader *r, const void **buf)
{
	char err[128];
	ssize_t n;

	if ((n = xzdec_read(r->dec, r->xz_buf, READ_BLOCK, err, sizeof(err))) ==
	    -1)
		archive_set_error(a, EIO, "%s", err);
	*buf = r->xz_buf;
	return (la_ssize_t)n;
}

/* The value of hex digit c, or -1. */
static int
hex_digit(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * 1 when the NEWC_HEADER bytes at p are a newc header as libarchive
 * takes one (magic 070701 or 070702, then hex digits) whose name size (8
 * digits at byte 94) is over NEWC_NAME_MAX.
 */
static int
newc_too_long(const unsigned char *p)
{
	uint64_t namesize = 0;
	size_t i;

	if (memcmp(p, "07070", 5) != 0 || (p[5] != '1' && p[5] != '2'))
		return 0;
	for (i = 6; i < NEWC_HEADER; i++)
		if (hex_digit(p[i]) == -1)
			return 0;
	for (i = 94; i < 102; i++)
		namesize = namesize * 16 + (uint64_t)hex_digit(p[i]);
	return namesize > NEWC_NAME_MAX;
}

/*
 * Look at every place of the feed where a newc header would start, the
 * n bytes of b joined to the carry of the blocks before: -1 when one
 * names too long a member (the stream is refused), else 0.
 */
static int
newc_guard(struct pkg_reader *r, const unsigned char *b, size_t n)
{
	unsigned char win[2 * (NEWC_HEADER - 1)];
	const unsigned char *p, *end = b + n;
	size_t take = n < NEWC_HEADER - 1 ? n : NEWC_HEADER - 1, i, keep;

	/* Headers that begin in the carry and end in b. */
	memcpy(win, r->carry, r->ncarry);
	memcpy(win + r->ncarry, b, take);
	for (i = 0; i + NEWC_HEADER <= r->ncarry + take && i < r->ncarry; i++)
		if (newc_too_long(win + i))
			return -1;
	/* Headers that begin in b: they all start with "07070". */
	for (p = b; (size_t)(end - p) >= NEWC_HEADER; p++) {
		if ((p = memmem(p, (size_t)(end - p), "07070", 5)) == NULL ||
		    (size_t)(end - p) < NEWC_HEADER)
			break;
		if (newc_too_long(p))
			return -1;
	}
	/* The carry: the last NEWC_HEADER - 1 bytes of the whole feed. */
	if (n >= NEWC_HEADER - 1) {
		memcpy(r->carry, end - (NEWC_HEADER - 1), NEWC_HEADER - 1);
		r->ncarry = NEWC_HEADER - 1;
	} else {
		keep = r->ncarry + n > NEWC_HEADER - 1 ? NEWC_HEADER - 1 - n
						       : r->ncarry;
		memmove(r->carry, r->carry + r->ncarry - keep, keep);
		memcpy(r->carry + keep, b, n);
		r->ncarry = keep + n;
	}
	return 0;
}

/* Feeds files from raw, counting what the package decompresses to. */
static la_ssize_t
files_read_cb(struct archive *a, void *arg, const void **buf)
{
	struct pkg_reader *r = arg;
	la_ssize_t n;

	if (r->dec != NULL)
		n = dec_block(a, r, buf);
	else
		n = r->xz ? xz_block(a, r, buf) : pass_block(a, r->raw, buf);
	if (n <= 0)
		return n;
	if ((uint64_t)n > r->max_total - r->total) {
		/* libarchive's own printf knows no %llu. */
		r->over_total = 1;
		archive_set_error(a, EFBIG, "%s",
		    "decompresses past max_total");
		return -1;
	}
	r->total += (uint64_t)n;
	if (r->cpio && newc_guard(r, *buf, (size_t)n) == -1) {
		archive_set_error(a, EFBIG,
		    "a cpio header names a member longer than %d bytes",
		    NEWC_NAME_MAX);
		return -1;
	}
	return n;
}

/* Drop decoder d, keeping count of what it decompressed. */
static void
dec_free(struct pkg_reader *r, struct xzdec *d)
{
	if (d == NULL)
		return;
	r->decoded += xzdec_decoded(d);
	xzdec_free(d);
}

/*
 * Skip request bytes of the stream files reads (the rest of a member it
 * was not asked for): by the block index, so that whole blocks in between
 * are never decompressed, from the decoder parked there when there is one.
 * Bytes skipped; 0 leaves libarchive to read through instead.
 */
static la_int64_t
files_skip_cb(struct archive *a, void *arg, la_int64_t request)
{
	struct pkg_reader *r = arg;
	uint64_t to;
	char err[128];

	(void)a;
	if (r->dec == NULL || request <= 0 ||
	    (uint64_t)request > r->max_total - r->total)
		return 0;
	to = xzdec_pos(r->dec) + (uint64_t)request;
	if (to > xzmap_total(r->map))
		return 0;
	if (r->parked != NULL && xzdec_near(r->parked, to)) {
		dec_free(r, r->dec);
		r->dec = r->parked;
		r->parked = NULL;
	}
	if (xzdec_seek(r->dec, to, err, sizeof(err)) == -1)
		return 0;
	r->total += (uint64_t)request;
	return request;
}

static void
pkg_reader_close(struct pkg_reader *r)
{
	dec_free(r, r->dec);
	dec_free(r, r->parked);
	xzmap_free(r->map);
	free(r->part_buf);
	if (r->files != NULL)
		archive_read_free(r->files);
	if (r->raw != NULL)
		archive_read_free(r->raw);
	if (r->ar != NULL)
		archive_read_free(r->ar);
	if (r->xz)
		lzma_end(&r->lz);
	free(r->xz_buf);
	free(r->file_buf);
	if (r->fd != -1)
		close(r->fd);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

/* Error text of a, never NULL. */
static const char *
arerr(struct archive *a)
{
	const char *s = archive_error_string(a);

	return s != NULL ? s : "unknown libarchive error";
}

/* Find the data.tar member of a .deb and make raw read from it. */
static int
open_deb(struct pkg_reader *r, char *err, size_t errlen)
{
	struct archive_entry *e;
	const char *name;
	int i, rc;

	if ((r->ar = archive_read_new()) == NULL ||
	    archive_read_support_format_ar(r->ar) != ARCHIVE_OK) {
		snprintf(err, errlen, "cannot set up an ar reader");
		return -1;
	}
	if (archive_read_open(r->ar, r, NULL, file_read_cb, NULL) !=
	    ARCHIVE_OK) {
		snprintf(err, errlen, "not an ar archive: %s", arerr(r->ar));
		return -1;
	}
	for (i = 0;; i++) {
		if (i == DEB_MEMBERS_MAX) {
			snprintf(err, errlen,
			    "no data.tar in the first %d "
			    "members",
			    DEB_MEMBERS_MAX);
			return -1;
		}
		rc = archive_read_next_header(r->ar, &e);
		if (rc == ARCHIVE_EOF) {
			snprintf(err, errlen, "not a .deb: no data.tar member");
			return -1;
		}
		if (rc < ARCHIVE_WARN) {
			snprintf(err, errlen, "ar: %s", arerr(r->ar));
			return -1;
		}
		name = archive_entry_pathname(e);
		if (name != NULL && strncmp(name, "data.tar", 8) == 0)
			break;
	}
	snprintf(r->member, sizeof(r->member), "%s", name);
	/* dpkg goes by the name too. */
	if (strcmp(name, "data.tar.xz") == 0) {
		/* An ar member's data follows its 60-byte header. */
		if (r->seek && archive_entry_size_is_set(e) &&
		    archive_read_header_position(r->ar) >= 0 &&
		    (r->map = xzmap_open(r->fd,
			 (uint64_t)archive_read_header_position(r->ar) + 60,
			 (uint64_t)archive_entry_size(e), XZ_MEMLIMIT)) !=
			NULL &&
		    ((r->dec = xzdec_new(r->map)) == NULL ||
			(r->part_buf = malloc(READ_BLOCK)) == NULL)) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		return xz_open(r, err, errlen);
	}
	if ((r->raw = archive_read_new()) == NULL ||
	    archive_read_support_format_raw(r->raw) != ARCHIVE_OK ||
	    add_filters(r->raw, 0, err, errlen) == -1) {
		if (r->raw == NULL)
			snprintf(err, errlen, "cannot set up a reader");
		return -1;
	}
	if (archive_read_open(r->raw, r, NULL, deb_member_read_cb, NULL) !=
	    ARCHIVE_OK) {
		snprintf(err, errlen, "%s: %s", r->member, arerr(r->raw));
		return -1;
	}
	return 0;
}

/*
 * rpm and Arch packages: raw decompresses the file itself, but for an xz
 * file (.pkg.tar.xz), decompressed here.
 */
static int
open_plain(struct pkg_reader *r, char *err, size_t errlen)
{
	char magic[XZ_MAGIC_LEN];

	if (pkg_head(r, magic, sizeof(magic)) == 0 &&
	    memcmp(magic, XZ_MAGIC, XZ_MAGIC_LEN) == 0)
		return xz_open(r, err, errlen);
	if ((r->raw = archive_read_new()) == NULL ||
	    archive_read_support_format_raw(r->raw) != ARCHIVE_OK ||
	    add_filters(r->raw, 1, err, errlen) == -1) {
		if (r->raw == NULL)
			snprintf(err, errlen, "cannot set up a reader");
		return -1;
	}
	if (archive_read_open(r->raw, r, NULL, file_read_cb, NULL) !=
	    ARCHIVE_OK) {
		snprintf(err, errlen, "%s", arerr(r->raw));
		return -1;
	}
	return 0;
}

/*
 * Say why files failed.  Past max_total, libarchive may report only the
 * symptom ("Truncated input file") when our feed refused to go on.
 */
static void
files_error(struct pkg_reader *r, char *err, size_t errlen)
{
	if (r->over_total)
		snprintf(err, errlen,
		    "package decompresses to more than %llu bytes",
		    (unsigned long long)r->max_total);
	else
		snprintf(err, errlen, "%s%s%s", r->member,
		    r->member[0] != '\0' ? ": " : "", arerr(r->files));
}

static int
pkg_reader_open(struct pkg_reader *r, const char *path,
    const struct pkg_limits *lim, int seek, char *err, size_t errlen)
{
	unsigned char magic[AR_MAGIC_LEN];
	struct archive_entry *e;
	struct stat st;
	int deb, rc;

	memset(r, 0, sizeof(*r));
	r->lim = lim;
	/* Out of order only in a file that is all there. */
	r->seek = seek && lim->grow == NULL;
	r->max_total = lim->max_total;
	r->max_members = lim->max_members;
	if ((r->fd = file_open_regular(path, &st)) == -1) {
		snprintf(err, errlen, "%s",
		    errno == EINVAL ? "not a regular file" : strerror(errno));
		return -1;
	}
	if ((r->file_buf = malloc(READ_BLOCK)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	deb = pkg_head(r, magic, sizeof(magic)) == 0 &&
	    memcmp(magic, AR_MAGIC, AR_MAGIC_LEN) == 0;
	if ((deb ? open_deb(r, err, errlen) : open_plain(r, err, errlen)) == -1)
		return -1;

	/* The raw format has one entry: the decompressed stream. */
	rc = r->xz ? ARCHIVE_OK : archive_read_next_header(r->raw, &e);
	if (rc == ARCHIVE_EOF) {
		snprintf(err, errlen, "empty package");
		return -1;
	}
	if (rc < ARCHIVE_WARN) {
		snprintf(err, errlen, "%s%s%s", r->member,
		    r->member[0] != '\0' ? ": " : "", arerr(r->raw));
		return -1;
	}

	r->cpio = !deb;
	if ((r->files = archive_read_new()) == NULL ||
	    archive_read_support_format_tar(r->files) != ARCHIVE_OK ||
	    (!deb &&
		archive_read_support_format_cpio(r->files) != ARCHIVE_OK)) {
		snprintf(err, errlen, "cannot set up a tar reader");
		return -1;
	}
	if (archive_read_set_skip_callback(r->files, files_skip_cb) !=
		ARCHIVE_OK ||
	    archive_read_open(r->files, r, NULL, files_read_cb, NULL) !=
		ARCHIVE_OK) {
		files_error(r, err, errlen);
		return -1;
	}
	return 0;
}

/* The next member: 0, ELF_NOTFOUND at the end, -1 with err. */
static int
pkg_reader_next(struct pkg_reader *r, struct archive_entry **e, char *err,
    size_t errlen)
{
	int rc = archive_read_next_header(r->files, e);

	if (rc == ARCHIVE_EOF)
		return ELF_NOTFOUND;
	if (rc < ARCHIVE_WARN) {
		files_error(r, err, errlen);
		return -1;
	}
	if (++r->members > r->max_members) {
		snprintf(err, errlen, "more than %u members", r->max_members);
		return -1;
	}
	return 0;
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
			files_error(r, err, errlen);
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
		dec_free(r, r->parked);
		r->parked = tail;
		tail = NULL;
	}
out:
	if (opened)
		elf_file_close(&f);
	dec_free(r, tail);
	dec_free(r, mid);
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
	dec_free(&r, r.dec);
	dec_free(&r, r.parked);
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
