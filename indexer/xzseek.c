/*
 * indexer/xzseek.c: random access into a multi-block .xz stream by its
 * index (see xzseek.h).
 *
 * The stream header and footer must agree, the index must decode and
 * account for the stream's size exactly; each block is then decoded with
 * liblzma's block decoder from its own header, told the sizes the index
 * gives, so a block that does not match its index entry is an error when
 * it is decoded through.
 */
#include "indexer/xzseek.h"

#include <errno.h>
#include <lzma.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Stream header and footer: 12 bytes each. */
#define XZ_HEADER 12
/* The largest index read: 16 bytes or so per block. */
#define INDEX_MAX (16u << 20)
/* Compressed bytes pread at once; scratch for bytes passed over. */
#define IN_BLOCK (64u << 10)

struct xzmap {
	int fd;
	uint64_t base, size, memlimit;
	lzma_index *idx;
	lzma_stream_flags flags;
	uint64_t total, block_max;
};

struct xzdec {
	const struct xzmap *m;
	lzma_stream lz;
	int active; /* lz decodes the block it points at */
	int block_end; /* ... and has ended it */
	lzma_index_iter it;
	lzma_block block; /* the decoder reads and writes it to the end */
	uint64_t pos, decoded;
	uint64_t in_off, in_end; /* the block's compressed bytes left */
	unsigned char in[IN_BLOCK];
	unsigned char scratch[IN_BLOCK];
};

/* pread exactly len bytes at off: 0, or -1. */
static int
read_at(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n;
	size_t got = 0;

	while (got < len) {
		n = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

struct xzmap *
xzmap_open(int fd, uint64_t base, uint64_t size, uint64_t memlimit)
{
	unsigned char hdr[XZ_HEADER], foot[XZ_HEADER], *buf = NULL;
	lzma_stream_flags hf;
	lzma_index_iter it;
	struct xzmap *m;
	uint64_t ilimit = 4 * INDEX_MAX;
	size_t ipos = 0;

	if (size < 2 * XZ_HEADER || (m = calloc(1, sizeof(*m))) == NULL)
		return NULL;
	m->fd = fd;
	m->base = base;
	m->size = size;
	m->memlimit = memlimit;
	if (read_at(fd, hdr, sizeof(hdr), base) == -1 ||
	    read_at(fd, foot, sizeof(foot), base + size - XZ_HEADER) == -1 ||
	    lzma_stream_header_decode(&hf, hdr) != LZMA_OK ||
	    lzma_stream_footer_decode(&m->flags, foot) != LZMA_OK ||
	    lzma_stream_flags_compare(&hf, &m->flags) != LZMA_OK ||
	    m->flags.backward_size > INDEX_MAX ||
	    m->flags.backward_size > size - 2 * XZ_HEADER ||
	    (buf = malloc(m->flags.backward_size)) == NULL ||
	    read_at(fd, buf, m->flags.backward_size,
		base + size - XZ_HEADER - m->flags.backward_size) == -1 ||
	    lzma_index_buffer_decode(&m->idx, &ilimit, NULL, buf, &ipos,
		m->flags.backward_size) != LZMA_OK ||
	    ipos != m->flags.backward_size ||
	    lzma_index_stream_flags(m->idx, &m->flags) != LZMA_OK ||
	    lzma_index_file_size(m->idx) != size ||
	    lzma_index_block_count(m->idx) < 2) {
		free(buf);
		xzmap_free(m);
		return NULL;
	}
	free(buf);
	m->total = lzma_index_uncompressed_size(m->idx);
	lzma_index_iter_init(&it, m->idx);
	while (!lzma_index_iter_next(&it, LZMA_INDEX_ITER_BLOCK))
		if (it.block.uncompressed_size > m->block_max)
			m->block_max = it.block.uncompressed_size;
	return m;
}

void
xzmap_free(struct xzmap *m)
{
	if (m == NULL)
		return;
	if (m->idx != NULL)
		lzma_index_end(m->idx, NULL);
	free(m);
}

uint64_t
xzmap_total(const struct xzmap *m)
{
	return m->total;
}

uint64_t
xzmap_block_max(const struct xzmap *m)
{
	return m->block_max;
}

struct xzdec *
xzdec_new(const struct xzmap *m)
{
	struct xzdec *d = malloc(sizeof(*d));

	if (d == NULL)
		return NULL;
	memset(d, 0, offsetof(struct xzdec, in));
	d->m = m;
	d->lz = (lzma_stream)LZMA_STREAM_INIT;
	return d;
}

void
xzdec_free(struct xzdec *d)
{
	if (d == NULL)
		return;
	lzma_end(&d->lz);
	free(d);
}

uint64_t
xzdec_pos(const struct xzdec *d)
{
	return d->pos;
}

uint64_t
xzdec_decoded(const struct xzdec *d)
{
	return d->decoded;
}

int
xzdec_near(const struct xzdec *d, uint64_t pos)
{
	return d->active && pos >= d->pos &&
	    pos <= d->it.block.uncompressed_file_offset +
		d->it.block.uncompressed_size;
}

/* Set lz up for the block d->it points at. */
static int
block_start(struct xzdec *d, char *err, size_t errlen)
{
	const struct xzmap *m = d->m;
	lzma_filter filters[LZMA_FILTERS_MAX + 1];
	unsigned char hdr[1024];
	lzma_block *block = &d->block;
	uint64_t off = m->base + d->it.block.compressed_file_offset;
	lzma_ret rc;

	d->active = 0;
	memset(block, 0, sizeof(*block));
	if (read_at(m->fd, hdr, 1, off) == -1 || hdr[0] == 0) {
		snprintf(err, errlen, "xz: cannot read a block header");
		return -1;
	}
	block->version = 1;
	block->header_size = lzma_block_header_size_decode(hdr[0]);
	block->check = m->flags.check;
	block->filters = filters;
	if (block->header_size > d->it.block.total_size ||
	    read_at(m->fd, hdr, block->header_size, off) == -1 ||
	    lzma_block_header_decode(block, NULL, hdr) != LZMA_OK) {
		snprintf(err, errlen, "xz: bad block header");
		return -1;
	}
	rc = lzma_block_compressed_size(block, d->it.block.unpadded_size);
	if (rc == LZMA_OK && block->uncompressed_size == LZMA_VLI_UNKNOWN)
		block->uncompressed_size = d->it.block.uncompressed_size;
	if (rc != LZMA_OK ||
	    block->uncompressed_size != d->it.block.uncompressed_size ||
	    lzma_raw_decoder_memusage(filters) > m->memlimit) {
		lzma_filters_free(filters, NULL);
		snprintf(err, errlen, "xz: a block does not match the index");
		return -1;
	}
	rc = lzma_block_decoder(&d->lz, block);
	lzma_filters_free(filters, NULL);
	block->filters = NULL; /* read by the set-up alone */
	if (rc != LZMA_OK) {
		snprintf(err, errlen, "xz: cannot set up a block decoder");
		return -1;
	}
	d->lz.avail_in = 0;
	d->in_off = off + block->header_size;
	d->in_end = off + d->it.block.total_size;
	d->pos = d->it.block.uncompressed_file_offset;
	d->active = 1;
	d->block_end = 0;
	return 0;
}

ssize_t
xzdec_read(struct xzdec *d, void *buf, size_t len, char *err, size_t errlen)
{
	size_t want;
	lzma_ret rc;

	while (len > 0 && d->pos < d->m->total) {
		if (!d->active) {
			if (xzdec_seek(d, d->pos, err, errlen) == -1)
				return -1;
			continue;
		}
		if (d->block_end) {
			if (lzma_index_iter_next(&d->it,
				LZMA_INDEX_ITER_BLOCK)) {
				snprintf(err, errlen,
				    "xz: the index ends early");
				d->active = 0;
				return -1;
			}
			if (block_start(d, err, errlen) == -1)
				return -1;
		}
		d->lz.next_out = buf;
		d->lz.avail_out = len;
		while (d->lz.avail_out == len && !d->block_end) {
			if (d->lz.avail_in == 0 && d->in_off < d->in_end) {
				want = d->in_end - d->in_off < IN_BLOCK
				    ? (size_t)(d->in_end - d->in_off)
				    : IN_BLOCK;
				if (read_at(d->m->fd, d->in, want, d->in_off) ==
				    -1) {
					snprintf(err, errlen, "xz: read: %s",
					    strerror(errno));
					return -1;
				}
				d->in_off += want;
				d->lz.next_in = d->in;
				d->lz.avail_in = want;
			}
			rc = lzma_code(&d->lz,
			    d->in_off == d->in_end ? LZMA_FINISH : LZMA_RUN);
			if (rc == LZMA_STREAM_END) {
				d->block_end = 1;
			} else if (rc != LZMA_OK) {
				snprintf(err, errlen, "xz: %s",
				    rc == LZMA_BUF_ERROR ? "truncated block"
							 : "corrupt block");
				d->active = 0;
				return -1;
			}
		}
		if (d->lz.avail_out < len) {
			len -= d->lz.avail_out;
			d->pos += len;
			d->decoded += len;
			return (ssize_t)len;
		}
	}
	return 0;
}

int
xzdec_seek(struct xzdec *d, uint64_t pos, char *err, size_t errlen)
{
	ssize_t n;
	uint64_t left;

	if (pos > d->m->total) {
		snprintf(err, errlen, "xz: offset past the end of the stream");
		return -1;
	}
	if (!xzdec_near(d, pos)) {
		d->active = 0;
		if (pos == d->m->total) {
			d->pos = pos;
			return 0;
		}
		lzma_index_iter_init(&d->it, d->m->idx);
		if (lzma_index_iter_locate(&d->it, pos)) {
			snprintf(err, errlen, "xz: no block holds the offset");
			return -1;
		}
		if (block_start(d, err, errlen) == -1)
			return -1;
	}
	while ((left = pos - d->pos) > 0) {
		n = xzdec_read(d, d->scratch,
		    left < IN_BLOCK ? (size_t)left : IN_BLOCK, err, errlen);
		if (n <= 0) {
			if (n == 0)
				snprintf(err, errlen,
				    "xz: the stream ends early");
			return -1;
		}
	}
	return 0;
}
