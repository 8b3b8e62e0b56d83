/*
 * indexer/pkgread.h: the reader stack of one open package
 * (indexer/pkgread.c), which indexer/package.c walks; nothing else
 * includes it.  A reader belongs to the thread that opened it.
 */
#ifndef INDEXER_PKGREAD_H
#define INDEXER_PKGREAD_H

#include <archive.h>
#include <archive_entry.h>
#include <lzma.h>
#include <stddef.h>
#include <stdint.h>

#include "indexer/package.h"
#include "indexer/xzseek.h"

/* Bytes asked of the package file per read. */
#define READ_BLOCK (64 * 1024)
/* A newc cpio header, and the longest member name one may announce. */
#define NEWC_HEADER 110
#define NEWC_NAME_MAX (64 * 1024)

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
	int xz; /* decompressed here with liblzma, within xz_limit */
	uint64_t xz_limit; /* XZ_MEMLIMIT per decoding thread */
	int xz_mt; /* decoded on threads of liblzma's */
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

/*
 * Open the package at path read with lim (its max_total, max_members and
 * grow hook); seek: a .deb on disk whose data.tar.xz has a block index may
 * be read by it (r->dec, r->map).  0, or -1 with err (r closed).
 */
int pkg_reader_open(struct pkg_reader *r, const char *path,
    const struct pkg_limits *lim, int seek, char *err, size_t errlen);
/* The next member: 0, ELF_NOTFOUND at the end, -1 with err. */
int pkg_reader_next(struct pkg_reader *r, struct archive_entry **e, char *err,
    size_t errlen);
/*
 * Say why the member reader failed.  Past max_total, libarchive may report
 * only the symptom ("Truncated input file") when our feed refused to go on.
 */
void pkg_reader_error(struct pkg_reader *r, char *err, size_t errlen);
/* Drop decoder d of r, keeping count of what it decompressed. */
void pkg_reader_dec_free(struct pkg_reader *r, struct xzdec *d);
/* Close r's readers and file; r may be opened again. */
void pkg_reader_close(struct pkg_reader *r);

#endif /* INDEXER_PKGREAD_H */
