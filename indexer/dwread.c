/*
 * indexer/dwread.c: reading DWARF through windows (indexer/dwread.h).
 *
 * A cursor on an uncompressed section preads DWR_WINDOW bytes at a time
 * around its position; on a zlib stream (.debug_info compressed) the
 * window ends where inflate is, and a seek behind it starts the stream
 * again.  Other compressed sections are inflated whole into the
 * dwr_file's temp file by dwr_file_load(), then read like any other.
 */
#include "indexer/dwread.h"

#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "indexer/elf.h"
#include "indexer/file.h"

/* Compressed bytes read at once, by a cursor and by the decompressor. */
#define ZBLOCK (64u << 10)

static const char *const sec_names[DWR_SEC_N] = { "info", "abbrev", "line",
	"str", "line_str", "str_offsets" };

/* ------------------------------------------------------------- cursors */

void
dwr_cur_init(struct dwr_cur *c, const struct dwr_sect *s, int big)
{
	c->s = s;
	c->big = big;
	c->pos = c->end = c->wpos = 0;
	c->wlen = 0;
	c->bad = s->fd == -1;
}

int
dwr_cur_seek(struct dwr_cur *c, uint64_t pos, uint64_t end)
{
	c->bad = c->s->fd == -1 || end > c->s->size || pos > end;
	if (!c->bad) {
		c->pos = pos;
		c->end = end;
	}
	return c->bad ? -1 : 0;
}

void
dwr_cur_free(struct dwr_cur *c)
{
	if (c->z != NULL)
		inflateEnd(c->z);
	free(c->z);
	free(c->zin);
	c->z = NULL;
	c->zin = NULL;
}

/* Inflate up to len bytes into out: *got of them; -1 on a bad stream. */
static int
cur_inflate(struct dwr_cur *c, unsigned char *out, size_t len, size_t *got)
{
	uint64_t left;
	ssize_t n;
	int rc = Z_OK;

	c->z->next_out = out;
	c->z->avail_out = (uInt)len;
	while (c->z->avail_out > 0 && rc != Z_STREAM_END) {
		if (c->z->avail_in == 0) {
			left = c->s->zlen - c->zused;
			if (left == 0)
				break;
			n = pread(c->s->fd, c->zin,
			    left < ZBLOCK ? (size_t)left : ZBLOCK,
			    (off_t)(c->s->off + c->zused));
			if (n <= 0)
				return -1;
			c->zused += (uint64_t)n;
			c->z->next_in = c->zin;
			c->z->avail_in = (uInt)n;
		}
		rc = inflate(c->z, Z_NO_FLUSH);
		if (rc != Z_OK && rc != Z_STREAM_END)
			return -1;
	}
	*got = len - c->z->avail_out;
	return 0;
}

/*
 * Make the window of a zlib stream start at pos with n bytes or more:
 * what it holds from pos on is kept, the stream is inflated on (skipping
 * to pos), and started again when pos is behind the window.
 */
static int
cur_zfill(struct dwr_cur *c, size_t n)
{
	uint64_t zpos = c->wpos + c->wlen;
	size_t keep = 0, got;

	if (c->z == NULL) {
		if ((c->z = calloc(1, sizeof(*c->z))) == NULL ||
		    (c->zin = malloc(ZBLOCK)) == NULL ||
		    inflateInit(c->z) != Z_OK) {
			free(c->z);
			c->z = NULL;
			return -1;
		}
		c->wpos = c->wlen = zpos = 0;
	}
	if (c->pos < c->wpos) {
		if (inflateReset(c->z) != Z_OK)
			return -1;
		c->z->avail_in = 0;
		c->zused = 0;
		c->wpos = c->wlen = zpos = 0;
	}
	if (c->pos < zpos) {
		keep = (size_t)(zpos - c->pos);
		memmove(c->win, c->win + (c->pos - c->wpos), keep);
	}
	while (zpos < c->pos) {
		if (cur_inflate(c, c->win,
			c->pos - zpos < DWR_WINDOW ? (size_t)(c->pos - zpos)
						   : DWR_WINDOW,
			&got) == -1 ||
		    got == 0)
			return -1;
		zpos += got;
	}
	c->wpos = c->pos;
	c->wlen = keep;
	if (cur_inflate(c, c->win + keep, DWR_WINDOW - keep, &got) == -1)
		return -1;
	c->wlen += got;
	return c->wlen >= n ? 0 : -1;
}

/* n (<= DWR_WINDOW) bytes at the cursor, which moves past them, or NULL. */
const unsigned char *
dwr_cur_take(struct dwr_cur *c, size_t n)
{
	const unsigned char *p;
	uint64_t left;
	ssize_t got;

	if (c->bad || n > c->end - c->pos) {
		c->bad = 1;
		return NULL;
	}
	if (c->pos >= c->wpos && c->pos + n <= c->wpos + c->wlen) {
		/* In the window. */
	} else if (c->s->zlen > 0) {
		if (cur_zfill(c, n) == -1) {
			c->bad = 1;
			return NULL;
		}
	} else {
		left = c->s->size - c->pos;
		got = pread(c->s->fd, c->win,
		    left < DWR_WINDOW ? (size_t)left : DWR_WINDOW,
		    (off_t)(c->s->off + c->pos));
		if (got < (ssize_t)n) {
			c->bad = 1;
			return NULL;
		}
		c->wpos = c->pos;
		c->wlen = (size_t)got;
	}
	p = c->win + (c->pos - c->wpos);
	c->pos += n;
	return p;
}

uint64_t
dwr_cur_uint(struct dwr_cur *c, size_t n)
{
	const unsigned char *p = dwr_cur_take(c, n);

	return p != NULL ? elf_uint(p, n, c->big) : 0;
}

/* An unsigned LEB128; also skips a signed one. */
uint64_t
dwr_cur_uleb(struct dwr_cur *c)
{
	const unsigned char *p;
	uint64_t v = 0;
	unsigned shift = 0;

	do {
		if ((p = dwr_cur_take(c, 1)) == NULL)
			return 0;
		if (shift < 64)
			v |= (uint64_t)(*p & 0x7f) << shift;
		shift += 7;
	} while (*p & 0x80);
	return v;
}

void
dwr_cur_skip(struct dwr_cur *c, uint64_t n)
{
	if (c->bad || n > c->end - c->pos)
		c->bad = 1;
	else
		c->pos += n;
}

/*
 * The NUL-terminated string at the cursor, which moves past it, copied to
 * out (when not NULL); NULL when it does not fit in outlen or is not
 * terminated before end (bad is then set).
 */
const char *
dwr_cur_str(struct dwr_cur *c, char *out, size_t outlen)
{
	const unsigned char *p, *nul;
	size_t len = 0, n;
	int fits = out != NULL;

	do {
		if (dwr_cur_take(c, 1) == NULL)
			return NULL;
		p = c->win + (--c->pos - c->wpos);
		n = (size_t)(c->wpos + c->wlen - c->pos);
		if (n > c->end - c->pos)
			n = (size_t)(c->end - c->pos);
		if ((nul = memchr(p, '\0', n)) != NULL)
			n = (size_t)(nul - p);
		if (fits && len + n < outlen)
			memcpy(out + len, p, n);
		else
			fits = 0;
		len += n;
		c->pos += n + (nul != NULL);
	} while (nul == NULL);
	if (!fits)
		return NULL;
	out[len] = '\0';
	return out;
}

/* The string at off in c's section, into out, or NULL. */
const char *
dwr_str_at(struct dwr_cur *c, uint64_t off, char *out, size_t outlen)
{
	if (dwr_cur_seek(c, off, c->s->size) == -1)
		return NULL;
	return dwr_cur_str(c, out, outlen);
}

/* Read a unit or table length at c: 4, or 8 after 0xffffffff. */
uint64_t
dwr_read_length(struct dwr_cur *c, unsigned *off_size)
{
	uint64_t len = dwr_cur_uint(c, 4);

	*off_size = 4;
	if (len == 0xffffffff) {
		*off_size = 8;
		return dwr_cur_uint(c, 8);
	}
	if (len >= 0xfffffff0)
		c->bad = 1;
	return len;
}

/* --------------------------------------------------------------- forms */

/* Skip a value of form; -1 for a form this reader does not know. */
int
dwr_skip_form(struct dwr_cur *c, unsigned form, const struct dwr_unit *u)
{
	switch (form) {
	case DWR_FORM_flag_present:
	case DWR_FORM_implicit_const:
		break;
	case DWR_FORM_addr:
		dwr_cur_skip(c, u->addr_size);
		break;
	case DWR_FORM_data1:
	case DWR_FORM_ref1:
	case DWR_FORM_flag:
	case DWR_FORM_strx1:
	case DWR_FORM_addrx1:
		dwr_cur_skip(c, 1);
		break;
	case DWR_FORM_data2:
	case DWR_FORM_ref2:
	case DWR_FORM_strx2:
	case DWR_FORM_addrx2:
		dwr_cur_skip(c, 2);
		break;
	case DWR_FORM_strx3:
	case DWR_FORM_addrx3:
		dwr_cur_skip(c, 3);
		break;
	case DWR_FORM_data4:
	case DWR_FORM_ref4:
	case DWR_FORM_ref_sup4:
	case DWR_FORM_strx4:
	case DWR_FORM_addrx4:
		dwr_cur_skip(c, 4);
		break;
	case DWR_FORM_data8:
	case DWR_FORM_ref8:
	case DWR_FORM_ref_sig8:
	case DWR_FORM_ref_sup8:
		dwr_cur_skip(c, 8);
		break;
	case DWR_FORM_data16:
		dwr_cur_skip(c, 16);
		break;
	case DWR_FORM_string:
		dwr_cur_str(c, NULL, 0);
		break;
	case DWR_FORM_block1:
		dwr_cur_skip(c, dwr_cur_uint(c, 1));
		break;
	case DWR_FORM_block2:
		dwr_cur_skip(c, dwr_cur_uint(c, 2));
		break;
	case DWR_FORM_block4:
		dwr_cur_skip(c, dwr_cur_uint(c, 4));
		break;
	case DWR_FORM_block:
	case DWR_FORM_exprloc:
		dwr_cur_skip(c, dwr_cur_uleb(c));
		break;
	case DWR_FORM_sdata:
	case DWR_FORM_udata:
	case DWR_FORM_ref_udata:
	case DWR_FORM_strx:
	case DWR_FORM_addrx:
	case DWR_FORM_loclistx:
	case DWR_FORM_rnglistx:
	case DWR_FORM_GNU_addr_index:
	case DWR_FORM_GNU_str_index:
		dwr_cur_uleb(c);
		break;
	case DWR_FORM_strp:
	case DWR_FORM_line_strp:
	case DWR_FORM_sec_offset:
	case DWR_FORM_strp_sup:
	case DWR_FORM_GNU_ref_alt:
	case DWR_FORM_GNU_strp_alt:
		dwr_cur_skip(c, u->off_size);
		break;
	case DWR_FORM_ref_addr:
		dwr_cur_skip(c, u->version == 2 ? u->addr_size : u->off_size);
		break;
	default:
		return -1;
	}
	return c->bad ? -1 : 0;
}

/*
 * Read a value of form at c as a string reference.  An inline string is
 * copied to buf (DWR_REF_READY), or with buf NULL remembered by its place in
 * .debug_line (DWR_REF_AT_LINE).  Forms that are no strings are skipped
 * (DWR_REF_NONE).  -1 when the value cannot be read.
 */
int
dwr_read_strref(struct dwr_cur *c, unsigned form, const struct dwr_unit *u,
    struct dwr_strref *r, char *buf, size_t buflen)
{
	r->kind = DWR_REF_NONE;
	switch (form) {
	case DWR_FORM_string:
		if (buf == NULL) {
			r->kind = DWR_REF_AT_LINE;
			r->v = c->pos;
			dwr_cur_str(c, NULL, 0);
		} else if ((r->s = dwr_cur_str(c, buf, buflen)) != NULL)
			r->kind = DWR_REF_READY;
		break;
	case DWR_FORM_strp:
		r->kind = DWR_REF_STRP;
		r->v = dwr_cur_uint(c, u->off_size);
		break;
	case DWR_FORM_line_strp:
		r->kind = DWR_REF_LINE_STRP;
		r->v = dwr_cur_uint(c, u->off_size);
		break;
	case DWR_FORM_strp_sup:
	case DWR_FORM_GNU_strp_alt:
		r->kind = DWR_REF_ALT;
		r->v = dwr_cur_uint(c, u->off_size);
		break;
	case DWR_FORM_strx:
	case DWR_FORM_GNU_str_index:
		r->kind = DWR_REF_STRX;
		r->v = dwr_cur_uleb(c);
		break;
	case DWR_FORM_strx1:
	case DWR_FORM_strx2:
	case DWR_FORM_strx3:
	case DWR_FORM_strx4:
		r->kind = DWR_REF_STRX;
		r->v = dwr_cur_uint(c, form - DWR_FORM_strx1 + 1);
		break;
	default:
		return dwr_skip_form(c, form, u);
	}
	return c->bad ? -1 : 0;
}

/* ------------------------------------------------------------ sections */

void
dwr_file_init(struct dwr_file *d)
{
	int i;

	memset(d, 0, sizeof(*d));
	d->tmp = -1;
	for (i = 0; i < DWR_SEC_N; i++)
		d->sec[i].fd = -1;
}

void
dwr_file_close(struct dwr_file *d)
{
	if (d->tmp != -1)
		close(d->tmp);
	dwr_file_init(d);
}

/* The index in sec_names of a .debug_ or .zdebug_ section name, or -1. */
static int
sec_id(const char *name)
{
	int i;

	name += name[1] == 'z' ? 8 : 7;
	for (i = 0; i < DWR_SEC_N; i++)
		if (strcmp(name, sec_names[i]) == 0)
			return i;
	return -1;
}

/*
 * The size section sh (named name) has once decompressed, and where its
 * zlib stream starts (*zhdr bytes in; 0 when it is not compressed).
 */
static int
section_size(int fd, const struct dwr_file *d, const GElf_Shdr *sh,
    const char *name, uint64_t *size, uint64_t *zhdr)
{
	unsigned char h[24];
	size_t n = d->class64 ? 24 : 12;

	*size = sh->sh_size;
	*zhdr = 0;
	if ((sh->sh_flags & SHF_COMPRESSED) != 0) {
		/* Elf32_Chdr or Elf64_Chdr: type, (reserved,) size. */
		if (sh->sh_size < n ||
		    pread(fd, h, n, (off_t)sh->sh_offset) != (ssize_t)n ||
		    elf_uint(h, 4, d->big) != ELFCOMPRESS_ZLIB)
			return -1;
		*size = d->class64 ? elf_uint(h + 8, 8, d->big)
				   : elf_uint(h + 4, 4, d->big);
		*zhdr = n;
	} else if (strncmp(name, ".zdebug_", 8) == 0) {
		/* "ZLIB", then the size as 8 big-endian bytes. */
		if (sh->sh_size < 12 ||
		    pread(fd, h, 12, (off_t)sh->sh_offset) != 12 ||
		    memcmp(h, "ZLIB", 4) != 0)
			return -1;
		*size = elf_uint(h + 4, 8, 1);
		*zhdr = 12;
	}
	return 0;
}

/*
 * Decompress the zlib stream of zlen bytes at zoff in fd, which must come
 * to size bytes exactly, to the end of d's temporary file: that is where s
 * is read from then.
 */
static int
inflate_section(struct dwr_file *d, int fd, uint64_t zoff, uint64_t zlen,
    uint64_t size, const char *tmpdir, struct dwr_sect *s, char *err,
    size_t errlen)
{
	unsigned char *in, *out;
	uint64_t done = 0, used = 0;
	z_stream z;
	ssize_t n;
	size_t len;
	int zrc = Z_OK;

	if (d->tmp == -1 && (d->tmp = file_tmp_open(tmpdir, err, errlen)) == -1)
		return -1;
	memset(&z, 0, sizeof(z));
	if ((in = malloc(2 * ZBLOCK)) == NULL || inflateInit(&z) != Z_OK) {
		free(in);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	out = in + ZBLOCK;
	while (zrc != Z_STREAM_END) {
		if (z.avail_in == 0 && used < zlen) {
			len = zlen - used < ZBLOCK ? (size_t)(zlen - used)
						   : ZBLOCK;
			if ((n = pread(fd, in, len, (off_t)(zoff + used))) <= 0)
				break;
			used += (uint64_t)n;
			z.next_in = in;
			z.avail_in = (uInt)n;
		}
		z.next_out = out;
		z.avail_out = ZBLOCK;
		zrc = inflate(&z, Z_NO_FLUSH);
		if (zrc != Z_OK && zrc != Z_STREAM_END)
			break;
		len = ZBLOCK - z.avail_out;
		if (len > size - done ||
		    file_pwrite(d->tmp, out, len, d->tmp_end + done) == -1)
			break;
		done += len;
		if (zrc == Z_OK && len == 0 && z.avail_in == 0 && used == zlen)
			break;
	}
	inflateEnd(&z);
	free(in);
	if (zrc != Z_STREAM_END || done != size) {
		snprintf(err, errlen, "section .debug_%s: cannot decompress",
		    sec_names[s - d->sec]);
		return -1;
	}
	s->fd = d->tmp;
	s->off = d->tmp_end;
	s->size = size;
	d->tmp_end += size;
	return 0;
}

/* 1 when the last byte of string section s is a NUL, or s is absent. */
static int
strings_end(const struct dwr_sect *s)
{
	char last;

	return s->fd == -1 ||
	    (pread(s->fd, &last, 1, (off_t)(s->off + s->size - 1)) == 1 &&
		last == '\0');
}

/*
 * Find the sections of the ELF file at fd that list its sources, every
 * debug section checked first.  Compressed ones are decompressed by
 * dwr_file_load() when they are needed, but for .debug_info, which is read in
 * order and inflated as it is read.  Returns 1 when there is a .debug_info
 * to read, 0 when there is none, -1 with err.
 */
int
dwr_file_open(struct dwr_file *d, int fd, char *err, size_t errlen)
{
	struct elf_file f;
	GElf_Ehdr eh;
	GElf_Shdr sh;
	Elf_Scn *scn = NULL;
	const char *name;
	uint64_t size, zhdr;
	int rc, i;

	if ((rc = elf_file_open(&f, fd, err, errlen)) == ELF_NOTFOUND)
		snprintf(err, errlen, "not an ELF file");
	if (rc != 0)
		return -1;
	if (gelf_getehdr(f.elf, &eh) == NULL) {
		snprintf(err, errlen, "bad ELF header: %s", elf_errmsg(-1));
		elf_file_close(&f);
		return -1;
	}
	d->big = eh.e_ident[EI_DATA] == ELFDATA2MSB;
	d->class64 = eh.e_ident[EI_CLASS] == ELFCLASS64;
	while (rc == 0 && (scn = elf_nextscn(f.elf, scn)) != NULL) {
		if (gelf_getshdr(scn, &sh) == NULL ||
		    (name = elf_strptr(f.elf, f.shstrndx, sh.sh_name)) ==
			NULL) {
			snprintf(err, errlen, "bad section header: %s",
			    elf_errmsg(-1));
			rc = -1;
		} else if (!elf_is_debug_name(name) ||
		    sh.sh_type == SHT_NOBITS || sh.sh_size == 0) {
			continue;
		} else if (sh.sh_offset > f.filesize ||
		    sh.sh_size > f.filesize - sh.sh_offset) {
			snprintf(err, errlen,
			    "section %s extends past the end of the file",
			    name);
			rc = -1;
		} else if (section_size(fd, d, &sh, name, &size, &zhdr) == -1) {
			snprintf(err, errlen,
			    "section %s: bad compression header", name);
			rc = -1;
		} else if (sh.sh_size > DWR_SECTION_MAX ||
		    size > DWR_SECTION_MAX) {
			snprintf(err, errlen, "section %s is too large", name);
			rc = -1;
		} else if ((i = sec_id(name)) != -1 &&
		    (sh.sh_flags & SHF_GROUP) == 0 && d->sec[i].size == 0 &&
		    size > 0) {
			/* The first of a name counts, as for libdw. */
			d->sec[i].fd = fd;
			d->sec[i].off = sh.sh_offset + zhdr;
			d->sec[i].size = size;
			/* .debug_info is read in order: inflated as read. */
			if (zhdr > 0 && i == DWR_SEC_INFO) {
				d->sec[i].zlen = sh.sh_size - zhdr;
			} else if (zhdr > 0) {
				d->z[i].zoff = sh.sh_offset + zhdr;
				d->z[i].zlen = sh.sh_size - zhdr;
				d->z[i].size = size;
			}
		}
	}
	elf_file_close(&f);
	/* Uncompressed string sections cost nothing to check now. */
	for (i = DWR_SEC_STR; rc == 0 && i <= DWR_SEC_LINE_STR; i++)
		if (d->z[i].size == 0 && !strings_end(&d->sec[i])) {
			snprintf(err, errlen,
			    "a string section is not NUL-terminated");
			rc = -1;
		}
	if (rc == -1)
		return -1;
	return d->sec[DWR_SEC_INFO].fd != -1;
}

/*
 * Make the sections in mask (1 << section) of d readable: decompress those
 * that are compressed into d's temporary file, check that string sections
 * end in a NUL.  Each section once.
 */
int
dwr_file_load(struct dwr_file *d, unsigned mask, const char *tmpdir, char *err,
    size_t errlen)
{
	struct dwr_sect *s;
	int i;

	for (i = 0; i < DWR_SEC_N; i++) {
		if ((mask & 1u << i) == 0 || (d->loaded & 1u << i) != 0)
			continue;
		s = &d->sec[i];
		if (d->z[i].size > 0 &&
		    inflate_section(d, s->fd, d->z[i].zoff, d->z[i].zlen,
			d->z[i].size, tmpdir, s, err, errlen) == -1)
			return -1;
		if ((i == DWR_SEC_STR || i == DWR_SEC_LINE_STR) &&
		    !strings_end(s)) {
			snprintf(err, errlen,
			    "a string section is not NUL-terminated");
			return -1;
		}
		d->loaded |= 1u << i;
	}
	return 0;
}
