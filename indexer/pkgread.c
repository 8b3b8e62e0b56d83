/*
 * indexer/pkgread.c: the reader stack of one open package, for the walk
 * over its members (indexer/package.c; indexer/pkgread.h).
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
 * up to 1.5 GiB.  rpm payloads go through libarchive's xz.  With
 * pkg_limits.xz_threads above 1, liblzma's threaded decoder decodes several
 * xz blocks at once (dpkg-deb writes them so; a single-block stream gets
 * one thread).  The limit is then XZ_MEMLIMIT per thread, for all of them
 * together: each holds its block's input and output besides a dictionary
 * (two of dpkg-deb's 24 MiB blocks take 96 MiB); a stream whose threads
 * would need more is decoded by one thread, which may then have all of it
 * (a dictionary a one-thread reader refuses), and one that needs more even
 * so is refused.  Its threads belong to the reader and end with it.
 *
 * The "raw" reader (or the xz decoder) does nothing but decompress, so the
 * callback that feeds the top reader sees every decompressed byte of the
 * package.  That is where
 * max_total is enforced: libarchive also skips data on its own (unread
 * member data, cpio resynchronisation, pax headers), and a bomb hidden
 * there is stopped just as early as one in a member we read.
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
 * external program for one of them is refused.
 *
 * Threads: a reader belongs to its caller; nothing here is shared.
 */
#include "indexer/pkgread.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "indexer/elf.h"
#include "indexer/file.h"

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
/* The most threads an xz stream is decoded on (pkg_limits.xz_threads). */
#define XZ_THREADS_MAX 8
/*
 * How long the threaded decoder waits for its threads' output when it has
 * no input (xz_block), in ms: the bound on what a read of a download's end
 * may add to a member's bytes.
 */
#define XZ_MT_WAIT_MS 10
/* The xz magic that starts a stream. */
#define XZ_MAGIC \
	"\xfd" \
	"7zXZ"
#define XZ_MAGIC_LEN 6

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

/* 1 when a read of r's package may wait for it to grow (pkg_read). */
static int
pkg_at_end(const struct pkg_reader *r)
{
	struct stat st;

	return r->lim->grow != NULL && fstat(r->fd, &st) == 0 &&
	    (uint64_t)st.st_size <= r->off;
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
	int drain = 0;

	r->lz.next_out = r->xz_buf;
	r->lz.avail_out = READ_BLOCK;
	while (r->lz.avail_out == READ_BLOCK && !r->xz_end) {
		/*
		 * At the end of a download that grows, the threads' output
		 * first, without input (waiting for it XZ_MT_WAIT_MS at
		 * most, then LZMA_OK): the read after may wait for the
		 * download, and the bytes of a member a client waits for
		 * may be decoded already.  Elsewhere input goes on ahead of
		 * the output, which keeps the threads busy.
		 */
		drain = r->xz_mt && !drain && r->lz.avail_in == 0 &&
		    !r->xz_eof && pkg_at_end(r);
		if (!drain && r->lz.avail_in == 0 && !r->xz_eof) {
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
			    (unsigned)(r->xz_limit >> 20));
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
	lzma_mt mt = {
		.flags = LZMA_CONCATENATED,
		.threads = r->lim->xz_threads,
		.timeout = XZ_MT_WAIT_MS,
	};
	lzma_ret rc;

	r->xz = 1;
	r->xz_limit = XZ_MEMLIMIT;
	if (mt.threads > XZ_THREADS_MAX)
		mt.threads = XZ_THREADS_MAX;
	if (mt.threads > 1) {
		r->xz_mt = 1;
		r->xz_limit *= mt.threads;
		mt.memlimit_threading = mt.memlimit_stop = r->xz_limit;
		rc = lzma_stream_decoder_mt(&r->lz, &mt);
	} else
		rc =
		    lzma_stream_decoder(&r->lz, XZ_MEMLIMIT, LZMA_CONCATENATED);
	if ((r->xz_buf = malloc(2 * READ_BLOCK)) == NULL || rc != LZMA_OK) {
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

void
pkg_reader_dec_free(struct pkg_reader *r, struct xzdec *d)
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
		pkg_reader_dec_free(r, r->dec);
		r->dec = r->parked;
		r->parked = NULL;
	}
	if (xzdec_seek(r->dec, to, err, sizeof(err)) == -1)
		return 0;
	r->total += (uint64_t)request;
	return request;
}

void
pkg_reader_close(struct pkg_reader *r)
{
	pkg_reader_dec_free(r, r->dec);
	pkg_reader_dec_free(r, r->parked);
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

void
pkg_reader_error(struct pkg_reader *r, char *err, size_t errlen)
{
	if (r->over_total)
		snprintf(err, errlen,
		    "package decompresses to more than %llu bytes",
		    (unsigned long long)r->max_total);
	else
		snprintf(err, errlen, "%s%s%s", r->member,
		    r->member[0] != '\0' ? ": " : "", arerr(r->files));
}

int
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
		pkg_reader_error(r, err, errlen);
		return -1;
	}
	return 0;
}

int
pkg_reader_next(struct pkg_reader *r, struct archive_entry **e, char *err,
    size_t errlen)
{
	int rc = archive_read_next_header(r->files, e);

	if (rc == ARCHIVE_EOF)
		return ELF_NOTFOUND;
	if (rc < ARCHIVE_WARN) {
		pkg_reader_error(r, err, errlen);
		return -1;
	}
	if (++r->members > r->max_members) {
		snprintf(err, errlen, "more than %u members", r->max_members);
		return -1;
	}
	return 0;
}
