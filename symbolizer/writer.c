/*
 * symbolizer/writer.c: a built symbol table written out
 * (symbolizer/build_int.h): the header, the sections at 8-aligned
 * offsets in symbolizer/format.h's order, then the SHA-256 of the whole
 * file read back into the header.  Every byte written is set.
 *
 * Single-threaded: one build, one struct bld; blocking writes to its fd.
 */
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolizer/build_int.h"
#include "symbolizer/symtab.h"

/* What the checksum reads back at a time. */
#define CHUNK_SUM (1u << 20)

struct out {
	int fd;
	uint64_t off;
	struct fmt_header h;
	char *err;
	size_t errlen;
};

static int
out_write(struct out *o, const void *p, size_t n)
{
	const char *c = p;
	ssize_t w;

	while (n > 0) {
		w = pwrite(o->fd, c, n, (off_t)o->off);
		if (w == -1 && errno == EINTR)
			continue;
		if (w <= 0) {
			snprintf(o->err, o->errlen, "write: %s",
			    w == 0 ? "nothing written" : strerror(errno));
			return -1;
		}
		c += w;
		n -= (size_t)w;
		o->off += (uint64_t)w;
	}
	return 0;
}

/* Section s: n bytes (count entries) at the next 8-aligned offset. */
static int
out_sect(struct out *o, enum fmt_sect s, const void *p, size_t n,
    uint64_t count)
{
	static const char zero[FMT_ALIGN];
	size_t pad = (size_t)((FMT_ALIGN - o->off % FMT_ALIGN) % FMT_ALIGN);

	if (out_write(o, zero, pad) == -1)
		return -1;
	o->h.dir[s].offset = o->off;
	o->h.dir[s].size = n;
	o->h.dir[s].count = count;
	return n > 0 ? out_write(o, p, n) : 0;
}

static int
out_map(struct out *o, enum fmt_sect keys, const struct mapenc *m)
{
	return out_sect(o, keys, m->keys.p, m->keys.n * 4, m->keys.n) == -1 ||
		out_sect(o, keys + 1, m->offs.p, m->offs.n * 4, m->offs.n) ==
		    -1 ||
		out_sect(o, keys + 2, m->data.p, m->data.n, m->count) == -1
	    ? -1
	    : 0;
}

/* The SHA-256 of what was written, read back, into the header. */
static int
out_checksum(struct out *o)
{
	EVP_MD_CTX *ctx;
	unsigned char *buf;
	uint64_t off = 0;
	unsigned len = 0;
	ssize_t n;
	int ok = 0;

	if ((buf = malloc(CHUNK_SUM)) == NULL ||
	    (ctx = EVP_MD_CTX_new()) == NULL) {
		free(buf);
		snprintf(o->err, o->errlen, "out of memory");
		return -1;
	}
	if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
		goto out;
	while (off < o->off) {
		n = pread(o->fd, buf, CHUNK_SUM, (off_t)off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0 || EVP_DigestUpdate(ctx, buf, (size_t)n) != 1)
			goto out;
		off += (uint64_t)n;
	}
	ok = EVP_DigestFinal_ex(ctx, o->h.checksum, &len) == 1 && len == 32;
out:
	EVP_MD_CTX_free(ctx);
	free(buf);
	if (!ok)
		snprintf(o->err, o->errlen, "cannot read the table back");
	return ok ? 0 : -1;
}

int
bld_write_table(struct bld *b, const struct symdwarf_info *info, int fd,
    uint64_t *size)
{
	struct out o;
	struct fmt_segment *seg = NULL;
	uint64_t end;
	unsigned i;
	int rc = -1;

	memset(&o, 0, sizeof(o));
	o.fd = fd;
	o.err = b->err;
	o.errlen = b->errlen;
	if (info->nseg > 0 && (seg = calloc(info->nseg, sizeof(*seg))) == NULL)
		return bld_nomem(b);
	for (i = 0; i < info->nseg; i++) {
		seg[i].vaddr = info->seg[i].vaddr;
		seg[i].memsz = info->seg[i].memsz;
		seg[i].offset = info->seg[i].offset;
		seg[i].filesz = info->seg[i].filesz;
		seg[i].flags = info->seg[i].flags;
	}
	memcpy(o.h.magic, FMT_MAGIC, 8);
	o.h.version = FMT_VERSION;
	o.h.header_size = sizeof(o.h);
	o.h.base = b->base;
	o.h.limit = b->limit;
	o.h.id_len = info->id.len;
	memcpy(o.h.id, info->id.bytes, info->id.len);
	o.h.alt_len = info->alt_id.len;
	memcpy(o.h.alt, info->alt_id.bytes, info->alt_id.len);
	o.h.source = (uint8_t)info->source;
	o.h.symsource = (uint8_t)info->symsource;
	o.h.phdrs = info->phdrs == 1 ? SYMTAB_PHDRS_EXEC
	    : info->phdrs == 2       ? SYMTAB_PHDRS_DEBUG
				     : SYMTAB_PHDRS_NONE;
	o.h.block = FMT_BLOCK;
	o.off = sizeof(o.h);
	if (out_sect(&o, FMT_STRINGS, b->str.bytes.p, b->str.bytes.n,
		b->str.n) == -1 ||
	    out_sect(&o, FMT_FILES, b->files.p, b->files.n * 4, b->files.n) ==
		-1 ||
	    out_sect(&o, FMT_SCOPES, b->scopes.p,
		b->scopes.n * sizeof(struct fmt_scope), b->scopes.n) == -1 ||
	    out_sect(&o, FMT_SYMBOLS, b->symout.p,
		b->symout.n * sizeof(struct fmt_symbol), b->symout.n) == -1 ||
	    out_sect(&o, FMT_SEGMENTS, seg, info->nseg * sizeof(*seg),
		info->nseg) == -1 ||
	    out_map(&o, FMT_LINE_KEYS, &b->lmap) == -1 ||
	    out_map(&o, FMT_SCOPE_KEYS, &b->smap) == -1 ||
	    out_map(&o, FMT_SYM_KEYS, &b->ymap) == -1)
		goto out;
	end = o.off;
	o.h.file_size = end;
	o.off = 0;
	if (out_write(&o, &o.h, sizeof(o.h)) == -1)
		goto out;
	o.off = end;
	if (ftruncate(fd, (off_t)end) == -1) {
		snprintf(b->err, b->errlen, "ftruncate: %s", strerror(errno));
		goto out;
	}
	if (out_checksum(&o) == -1)
		goto out;
	o.off = 0;
	if (out_write(&o, &o.h, sizeof(o.h)) == -1)
		goto out;
	*size = end;
	rc = 0;
out:
	free(seg);
	return rc;
}
