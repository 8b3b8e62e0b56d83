/*
 * indexer/sources.c: list the source files the DWARF of an ELF file names.
 *
 * Only what names files is read.  Where every line table is DWARF 5, that
 * is the headers of the tables in .debug_line (directories and files,
 * never the line program) and the strings they point to: a DWARF 5 table
 * names its unit's directory and primary file itself.  Otherwise it is the
 * first DIE of each unit in .debug_info (DW_AT_name, DW_AT_comp_dir,
 * DW_AT_stmt_list) with its abbreviation, and the header of its line
 * table.
 *
 * Every read goes through a cursor with a window of a few KiB over a
 * section, pread from the file: memory stays the same whatever the size of
 * the file or of its sections.  Compressed sections (SHF_COMPRESSED or
 * .zdebug_, zlib) that are needed are first decompressed, a block at a
 * time, into an unlinked file in tmpdir, and read from there; .debug_info,
 * the biggest, is read in order, so it is inflated as the walk goes
 * instead.
 *
 * Files are hostile.  Every debug section is checked to lie inside the file
 * and to stay under SOURCES_SECTION_MAX, compressed or not, before a byte
 * of it is read; every offset and length read is checked against the end
 * of its section or unit; a table that would not end is refused.  No file
 * is opened by name: not the dwz alt file a .gnu_debugaltlink names (the
 * caller finds it by build-id and hands it over, and it is checked like the
 * file itself), not a split .dwo.  Strings in an alt file we were not given
 * are skipped, and so are the relative names they would have made
 * absolute.  Thread-safe for distinct descriptors once elf_init() has run;
 * meant for worker threads.
 */
#include "indexer/sources.h"

#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "indexer/buildid.h"
#include "indexer/elf.h"
#include "indexer/file.h"

void
sources_canonicalise(char *path)
{
	char *in = path, *out = path;

	while (*in != '\0') {
		char *seg, *next;
		size_t n;

		while (*in == '/')
			in++;
		seg = in;
		next = strchr(seg, '/');
		n = next != NULL ? (size_t)(next - seg) : strlen(seg);
		in = seg + n;
		if (n == 0 || (n == 1 && seg[0] == '.'))
			continue;
		if (n == 2 && seg[0] == '.' && seg[1] == '.') {
			while (out > path && *--out != '/')
				;
			continue;
		}
		*out++ = '/';
		memmove(out, seg, n);
		out += n;
	}
	if (out == path)
		*out++ = '/';
	*out = '\0';
}

/*
 * The paths already passed on: an open-addressing hash set of strings that
 * grows by doubling; it never holds more than max_files entries, so it is
 * bounded by max_files * PATH_MAX bytes at worst.
 */
struct seen {
	char **slot;
	size_t cap; /* a power of two, or 0 */
	size_t n;
};

static uint64_t
hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	while (*s != '\0') {
		h ^= (unsigned char)*s++;
		h *= 1099511628211ull;
	}
	return h;
}

static char **
seen_find(char **slot, size_t cap, const char *s)
{
	size_t i = (size_t)hash_str(s) & (cap - 1);

	while (slot[i] != NULL && strcmp(slot[i], s) != 0)
		i = (i + 1) & (cap - 1);
	return &slot[i];
}

static int
seen_grow(struct seen *set)
{
	size_t cap = set->cap == 0 ? 64 : set->cap * 2, i;
	char **slot;

	if (cap > SIZE_MAX / sizeof(*slot) ||
	    (slot = calloc(cap, sizeof(*slot))) == NULL)
		return -1;
	for (i = 0; i < set->cap; i++)
		if (set->slot[i] != NULL)
			*seen_find(slot, cap, set->slot[i]) = set->slot[i];
	free(set->slot);
	set->slot = slot;
	set->cap = cap;
	return 0;
}

/* 1 when s is new and now in the set, 0 when it was there, -1 on ENOMEM. */
static int
seen_add(struct seen *set, const char *s)
{
	char **p;

	if ((set->n + 1) * 4 > set->cap * 3 && seen_grow(set) == -1)
		return -1;
	p = seen_find(set->slot, set->cap, s);
	if (*p != NULL)
		return 0;
	if ((*p = strdup(s)) == NULL)
		return -1;
	set->n++;
	return 1;
}

static void
seen_free(struct seen *set)
{
	size_t i;

	for (i = 0; i < set->cap; i++)
		free(set->slot[i]);
	free(set->slot);
}

/*
 * DWARF numbers this reader needs (DWARF 5, section 7, and the GNU
 * extensions dwz and split DWARF use).
 */
enum {
	FORM_addr = 0x01,
	FORM_block2 = 0x03,
	FORM_block4 = 0x04,
	FORM_data2 = 0x05,
	FORM_data4 = 0x06,
	FORM_data8 = 0x07,
	FORM_string = 0x08,
	FORM_block = 0x09,
	FORM_block1 = 0x0a,
	FORM_data1 = 0x0b,
	FORM_flag = 0x0c,
	FORM_sdata = 0x0d,
	FORM_strp = 0x0e,
	FORM_udata = 0x0f,
	FORM_ref_addr = 0x10,
	FORM_ref1 = 0x11,
	FORM_ref2 = 0x12,
	FORM_ref4 = 0x13,
	FORM_ref8 = 0x14,
	FORM_ref_udata = 0x15,
	FORM_indirect = 0x16,
	FORM_sec_offset = 0x17,
	FORM_exprloc = 0x18,
	FORM_flag_present = 0x19,
	FORM_strx = 0x1a,
	FORM_addrx = 0x1b,
	FORM_ref_sup4 = 0x1c,
	FORM_strp_sup = 0x1d,
	FORM_data16 = 0x1e,
	FORM_line_strp = 0x1f,
	FORM_ref_sig8 = 0x20,
	FORM_implicit_const = 0x21,
	FORM_loclistx = 0x22,
	FORM_rnglistx = 0x23,
	FORM_ref_sup8 = 0x24,
	FORM_strx1 = 0x25,
	FORM_strx2 = 0x26,
	FORM_strx3 = 0x27,
	FORM_strx4 = 0x28,
	FORM_addrx1 = 0x29,
	FORM_addrx2 = 0x2a,
	FORM_addrx3 = 0x2b,
	FORM_addrx4 = 0x2c,
	FORM_GNU_addr_index = 0x1f01,
	FORM_GNU_str_index = 0x1f02,
	FORM_GNU_ref_alt = 0x1f20,
	FORM_GNU_strp_alt = 0x1f21,

	AT_name = 0x03,
	AT_stmt_list = 0x10,
	AT_comp_dir = 0x1b,
	AT_str_offsets_base = 0x72,

	TAG_compile_unit = 0x11,
	TAG_partial_unit = 0x3c,
	TAG_skeleton_unit = 0x4a,

	UT_compile = 1,
	UT_partial = 3,
	UT_skeleton = 4,
	UT_split_compile = 5,
	UT_type = 2,
	UT_split_type = 6,

	LNCT_path = 1,
	LNCT_directory_index = 2,
};

/* The sections read, by their names after ".debug_" or ".zdebug_". */
enum {
	SEC_INFO,
	SEC_ABBREV,
	SEC_LINE,
	SEC_STR,
	SEC_LINE_STR,
	SEC_STROFF,
	SEC_N
};
static const char *const sec_names[SEC_N] = { "info", "abbrev", "line", "str",
	"line_str", "str_offsets" };

/* Where a section's bytes are: in the file, or decompressed into tmp. */
struct sect {
	int fd; /* -1: absent */
	uint64_t off, size;
	/* zlen > 0: a zlib stream of zlen bytes at off, inflated as read. */
	uint64_t zlen;
};

/* The DWARF of one ELF file, as far as listing its sources reads it. */
struct dfile {
	int big; /* big-endian */
	int class64;
	int tmp; /* the decompressed sections, or -1 */
	uint64_t tmp_end;
	struct sect sec[SEC_N];
	/* A compressed section not decompressed yet: its zlib stream. */
	struct {
		uint64_t zoff, zlen, size;
	} z[SEC_N];
	unsigned loaded; /* 1 << section: dfile_load() done */
};

/* Bytes pread at once by a cursor, and by the decompressor. */
#define WINDOW (16u << 10)
#define ZBLOCK (64u << 10)
/* Attributes of one abbreviation, directories of one line table. */
#define ATTRS_MAX 256
#define DIRS_MAX 65536
/* Entries of an abbreviation table looked through for one code. */
#define ABBREV_SCAN_MAX 4096
/* DW_FORM_indirect chains followed. */
#define INDIRECT_MAX 4

/*
 * A read position in one section, bounded by end, with a window of the
 * bytes around it.  Reads past end or failing set bad, which sticks until
 * the next cur_seek(); values read then are 0.
 */
struct cur {
	const struct sect *s;
	int big;
	uint64_t pos, end;
	uint64_t wpos;
	size_t wlen;
	int bad;
	/* A zlib stream: the window ends where inflate is. */
	z_stream *z;
	unsigned char *zin; /* ZBLOCK of compressed bytes */
	uint64_t zused; /* compressed bytes read */
	unsigned char win[WINDOW];
};

static void
cur_init(struct cur *c, const struct sect *s, int big)
{
	c->s = s;
	c->big = big;
	c->pos = c->end = c->wpos = 0;
	c->wlen = 0;
	c->bad = s->fd == -1;
}

static int
cur_seek(struct cur *c, uint64_t pos, uint64_t end)
{
	c->bad = c->s->fd == -1 || end > c->s->size || pos > end;
	if (!c->bad) {
		c->pos = pos;
		c->end = end;
	}
	return c->bad ? -1 : 0;
}

static void
cur_free(struct cur *c)
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
cur_inflate(struct cur *c, unsigned char *out, size_t len, size_t *got)
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
cur_zfill(struct cur *c, size_t n)
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
			c->pos - zpos < WINDOW ? (size_t)(c->pos - zpos)
					       : WINDOW,
			&got) == -1 ||
		    got == 0)
			return -1;
		zpos += got;
	}
	c->wpos = c->pos;
	c->wlen = keep;
	if (cur_inflate(c, c->win + keep, WINDOW - keep, &got) == -1)
		return -1;
	c->wlen += got;
	return c->wlen >= n ? 0 : -1;
}

/* n (<= WINDOW) bytes at the cursor, which moves past them, or NULL. */
static const unsigned char *
cur_take(struct cur *c, size_t n)
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
		    left < WINDOW ? (size_t)left : WINDOW,
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

static uint64_t
cur_uint(struct cur *c, size_t n)
{
	const unsigned char *p = cur_take(c, n);

	return p != NULL ? elf_uint(p, n, c->big) : 0;
}

/* An unsigned LEB128; also skips a signed one. */
static uint64_t
cur_uleb(struct cur *c)
{
	const unsigned char *p;
	uint64_t v = 0;
	unsigned shift = 0;

	do {
		if ((p = cur_take(c, 1)) == NULL)
			return 0;
		if (shift < 64)
			v |= (uint64_t)(*p & 0x7f) << shift;
		shift += 7;
	} while (*p & 0x80);
	return v;
}

static void
cur_skip(struct cur *c, uint64_t n)
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
static const char *
cur_str(struct cur *c, char *out, size_t outlen)
{
	const unsigned char *p, *nul;
	size_t len = 0, n;
	int fits = out != NULL;

	do {
		if (cur_take(c, 1) == NULL)
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
static const char *
str_at(struct cur *c, uint64_t off, char *out, size_t outlen)
{
	if (cur_seek(c, off, c->s->size) == -1)
		return NULL;
	return cur_str(c, out, outlen);
}

/* What a unit's forms are read with. */
struct unit {
	unsigned version, off_size, addr_size;
	uint64_t str_base; /* of its entries in .debug_str_offsets */
};

/* Skip a value of form; -1 for a form this reader does not know. */
static int
skip_form(struct cur *c, unsigned form, const struct unit *u)
{
	switch (form) {
	case FORM_flag_present:
	case FORM_implicit_const:
		break;
	case FORM_addr:
		cur_skip(c, u->addr_size);
		break;
	case FORM_data1:
	case FORM_ref1:
	case FORM_flag:
	case FORM_strx1:
	case FORM_addrx1:
		cur_skip(c, 1);
		break;
	case FORM_data2:
	case FORM_ref2:
	case FORM_strx2:
	case FORM_addrx2:
		cur_skip(c, 2);
		break;
	case FORM_strx3:
	case FORM_addrx3:
		cur_skip(c, 3);
		break;
	case FORM_data4:
	case FORM_ref4:
	case FORM_ref_sup4:
	case FORM_strx4:
	case FORM_addrx4:
		cur_skip(c, 4);
		break;
	case FORM_data8:
	case FORM_ref8:
	case FORM_ref_sig8:
	case FORM_ref_sup8:
		cur_skip(c, 8);
		break;
	case FORM_data16:
		cur_skip(c, 16);
		break;
	case FORM_string:
		cur_str(c, NULL, 0);
		break;
	case FORM_block1:
		cur_skip(c, cur_uint(c, 1));
		break;
	case FORM_block2:
		cur_skip(c, cur_uint(c, 2));
		break;
	case FORM_block4:
		cur_skip(c, cur_uint(c, 4));
		break;
	case FORM_block:
	case FORM_exprloc:
		cur_skip(c, cur_uleb(c));
		break;
	case FORM_sdata:
	case FORM_udata:
	case FORM_ref_udata:
	case FORM_strx:
	case FORM_addrx:
	case FORM_loclistx:
	case FORM_rnglistx:
	case FORM_GNU_addr_index:
	case FORM_GNU_str_index:
		cur_uleb(c);
		break;
	case FORM_strp:
	case FORM_line_strp:
	case FORM_sec_offset:
	case FORM_strp_sup:
	case FORM_GNU_ref_alt:
	case FORM_GNU_strp_alt:
		cur_skip(c, u->off_size);
		break;
	case FORM_ref_addr:
		cur_skip(c, u->version == 2 ? u->addr_size : u->off_size);
		break;
	default:
		return -1;
	}
	return c->bad ? -1 : 0;
}

/* A string attribute: where its bytes are, not read yet. */
struct strref {
	enum {
		REF_NONE,
		REF_READY,
		REF_AT_LINE,
		REF_STRP,
		REF_LINE_STRP,
		REF_STRX,
		REF_ALT
	} kind;
	uint64_t v; /* an offset, or an index for REF_STRX */
	const char *s; /* REF_READY */
};

/*
 * Read a value of form at c as a string reference.  An inline string is
 * copied to buf (REF_READY), or with buf NULL remembered by its place in
 * .debug_line (REF_AT_LINE).  Forms that are no strings are skipped
 * (REF_NONE).  -1 when the value cannot be read.
 */
static int
read_strref(struct cur *c, unsigned form, const struct unit *u,
    struct strref *r, char *buf, size_t buflen)
{
	r->kind = REF_NONE;
	switch (form) {
	case FORM_string:
		if (buf == NULL) {
			r->kind = REF_AT_LINE;
			r->v = c->pos;
			cur_str(c, NULL, 0);
		} else if ((r->s = cur_str(c, buf, buflen)) != NULL)
			r->kind = REF_READY;
		break;
	case FORM_strp:
		r->kind = REF_STRP;
		r->v = cur_uint(c, u->off_size);
		break;
	case FORM_line_strp:
		r->kind = REF_LINE_STRP;
		r->v = cur_uint(c, u->off_size);
		break;
	case FORM_strp_sup:
	case FORM_GNU_strp_alt:
		r->kind = REF_ALT;
		r->v = cur_uint(c, u->off_size);
		break;
	case FORM_strx:
	case FORM_GNU_str_index:
		r->kind = REF_STRX;
		r->v = cur_uleb(c);
		break;
	case FORM_strx1:
	case FORM_strx2:
	case FORM_strx3:
	case FORM_strx4:
		r->kind = REF_STRX;
		r->v = cur_uint(c, form - FORM_strx1 + 1);
		break;
	default:
		return skip_form(c, form, u);
	}
	return c->bad ? -1 : 0;
}

/* One abbreviation's attribute: name and form. */
struct spec {
	unsigned name, form;
};

/* The state of one sources_list() call. */
struct walk {
	struct seen seen;
	unsigned max;
	int (*cb)(const char *path, void *arg);
	void *arg;
	int base_in_alt; /* the unit's comp_dir lives in the absent alt */
	int alt_missing; /* names were skipped for want of the alt */
	int has_alt;
	unsigned refs; /* 1 << kind of the strrefs line tables used */
	struct dfile df, alt;
	/* info walks the units; the others are looked up. */
	struct cur info, abbrev, line, at_line, str, line_str, stroff, alt_str;
	struct spec spec[ATTRS_MAX];
	/* The abbreviation in spec: table, code, tag, attributes. */
	int abbrev_known;
	uint64_t abbrev_off, abbrev_code;
	unsigned abbrev_tag;
	size_t abbrev_nspec;
	struct strref dir[DIRS_MAX];
	char name[PATH_MAX], comp[PATH_MAX], dirbuf[PATH_MAX], file[PATH_MAX],
	    joined[PATH_MAX];
};

/*
 * Pass name on, made absolute against base when relative.  Returns 0 to go
 * on, 1 to stop (cb said so, or max_files reached), -1 out of memory.
 */
static int
emit(struct walk *w, const char *name, const char *base)
{
	char path[PATH_MAX];
	int n, rc;

	if (name == NULL || name[0] == '\0' ||
	    strcmp(name, "<built-in>") == 0 ||
	    strcmp(name, "<artificial>") == 0)
		return 0;
	if (name[0] == '/') {
		n = snprintf(path, sizeof(path), "%s", name);
	} else if (base != NULL && base[0] == '/') {
		n = snprintf(path, sizeof(path), "%s/%s", base, name);
	} else {
		w->alt_missing |= w->base_in_alt;
		return 0;
	}
	if (n < 0 || (size_t)n >= sizeof(path))
		return 0;
	sources_canonicalise(path);
	if ((rc = seen_add(&w->seen, path)) <= 0)
		return rc;
	if (w->cb(path, w->arg) != 0 || w->seen.n >= w->max)
		return 1;
	return 0;
}

/*
 * The string r refers to, read into out when it is not there yet; NULL
 * when there is none, and then *in_alt says whether it lives in the alt
 * file we lack.
 */
static const char *
str_get(struct walk *w, const struct strref *r, const struct unit *u, char *out,
    size_t outlen, int *in_alt)
{
	uint64_t at;

	*in_alt = 0;
	switch (r->kind) {
	case REF_NONE:
		break;
	case REF_READY:
		return r->s;
	case REF_AT_LINE:
		return str_at(&w->at_line, r->v, out, outlen);
	case REF_STRP:
		return str_at(&w->str, r->v, out, outlen);
	case REF_LINE_STRP:
		return str_at(&w->line_str, r->v, out, outlen);
	case REF_ALT:
		if (w->has_alt)
			return str_at(&w->alt_str, r->v, out, outlen);
		*in_alt = 1;
		break;
	case REF_STRX:
		if (r->v > (UINT64_MAX - u->str_base) / u->off_size)
			break;
		at = u->str_base + r->v * u->off_size;
		if (cur_seek(&w->stroff, at, w->stroff.s->size) == -1)
			break;
		at = cur_uint(&w->stroff, u->off_size);
		if (w->stroff.bad)
			break;
		return str_at(&w->str, at, out, outlen);
	}
	return NULL;
}

/* Read a unit or table length at c: 4, or 8 after 0xffffffff. */
static uint64_t
read_length(struct cur *c, unsigned *off_size)
{
	uint64_t len = cur_uint(c, 4);

	*off_size = 4;
	if (len == 0xffffffff) {
		*off_size = 8;
		return cur_uint(c, 8);
	}
	if (len >= 0xfffffff0)
		c->bad = 1;
	return len;
}

/* An entry format of a DWARF 5 line table header. */
struct lnfmt {
	unsigned n;
	struct spec f[255]; /* name: the content type */
};

static int
read_formats(struct cur *c, struct lnfmt *fmt)
{
	unsigned i;

	fmt->n = (unsigned)cur_uint(c, 1);
	for (i = 0; i < fmt->n; i++) {
		fmt->f[i].name = (unsigned)cur_uleb(c);
		fmt->f[i].form = (unsigned)cur_uleb(c);
	}
	return c->bad ? -1 : 0;
}

/*
 * One entry of a DWARF 5 directory or file table: its path and directory
 * index.  -1 when it cannot be read, or reads no byte at all (a table of
 * such entries would never end).
 */
static int
read_entry(struct walk *w, const struct lnfmt *fmt, const struct unit *u,
    struct strref *path, uint64_t *dir)
{
	struct cur *c = &w->line;
	uint64_t start = c->pos;
	unsigned i, form;

	path->kind = REF_NONE;
	*dir = 0;
	for (i = 0; i < fmt->n; i++) {
		form = fmt->f[i].form;
		if (fmt->f[i].name == LNCT_path) {
			if (read_strref(c, form, u, path, NULL, 0) == -1)
				return -1;
			w->refs |= 1u << path->kind;
		} else if (fmt->f[i].name == LNCT_directory_index &&
		    (form == FORM_data1 || form == FORM_data2 ||
			form == FORM_data4 || form == FORM_data8)) {
			*dir = cur_uint(c,
			    form == FORM_data1       ? 1
				: form == FORM_data2 ? 2
				: form == FORM_data4 ? 4
						     : 8);
		} else if (fmt->f[i].name == LNCT_directory_index &&
		    form == FORM_udata) {
			*dir = cur_uleb(c);
		} else if (skip_form(c, form, u) == -1) {
			return -1;
		}
	}
	return c->bad || c->pos == start ? -1 : 0;
}

/*
 * Pass file on, joined to its directory (when relative and the directory
 * is known) and then made absolute against base.
 */
static int
emit_file(struct walk *w, const struct strref *path, uint64_t dir,
    const struct unit *u, const char *base)
{
	const char *name, *d;
	int in_alt, n;

	name = str_get(w, path, u, w->file, sizeof(w->file), &in_alt);
	w->alt_missing |= in_alt;
	if (name == NULL)
		return 0;
	if (name[0] != '/' &&
	    (d = str_get(w, &w->dir[dir], u, w->dirbuf, sizeof(w->dirbuf),
		 &in_alt)) != NULL) {
		n = snprintf(w->joined, sizeof(w->joined), "%s/%s", d, name);
		if (n < 0 || (size_t)n >= sizeof(w->joined))
			return 0;
		name = w->joined;
	}
	return emit(w, name, base);
}

/*
 * The file table of the line table at off, for unit u with comp_dir comp
 * (NULL: unknown).  Pass 0 checks the whole table and keeps its
 * directories in w->dir (*ndirs); pass 1 passes its files on, made
 * absolute against base.  Returns what emit() does, or -2 for a
 * malformed table.  Only the header is read, never the line program.
 */
static int
line_files(struct walk *w, const struct unit *cu, uint64_t off,
    const char *comp, int pass, const char *base, size_t *ndirs)
{
	struct cur *c = &w->line;
	struct lnfmt *fmt = NULL;
	struct strref path;
	struct unit u = *cu;
	uint64_t len, hlen, end, n, i, dir;
	unsigned opbase;
	int rc = -2;

	if (cur_seek(c, off, c->s->size) == -1)
		return -2;
	len = read_length(c, &u.off_size);
	if (c->bad || len > c->end - c->pos)
		return -2;
	end = c->pos + len;
	u.version = (unsigned)cur_uint(c, 2);
	if (u.version < 2 || u.version > 5)
		return -2;
	if (u.version >= 5) {
		u.addr_size = (unsigned)cur_uint(c, 1);
		cur_skip(c, 1); /* segment selector size */
	}
	hlen = cur_uint(c, u.off_size);
	if (c->bad || hlen > end - c->pos ||
	    cur_seek(c, c->pos, c->pos + hlen) == -1)
		return -2;
	/* Instruction lengths, default_is_stmt, line_base, line_range. */
	cur_skip(c, u.version >= 4 ? 5 : 4);
	opbase = (unsigned)cur_uint(c, 1);
	cur_skip(c, opbase > 0 ? opbase - 1 : 0);
	if (c->bad)
		return -2;

	if (u.version < 5) {
		w->dir[0].kind = comp != NULL ? REF_READY : REF_NONE;
		w->dir[0].s = comp;
		for (*ndirs = 1;; ++*ndirs) {
			i = c->pos;
			cur_str(c, NULL, 0);
			if (c->bad)
				return -2;
			if (c->pos == i + 1)
				break;
			if (*ndirs == DIRS_MAX)
				return -2;
			w->dir[*ndirs].kind = REF_AT_LINE;
			w->dir[*ndirs].v = i;
		}
		for (;;) {
			path.kind = REF_AT_LINE;
			path.v = c->pos;
			cur_str(c, NULL, 0);
			if (c->bad)
				return -2;
			if (c->pos == path.v + 1)
				return 0;
			dir = cur_uleb(c);
			cur_uleb(c); /* mtime */
			cur_uleb(c); /* length */
			if (c->bad || dir >= *ndirs)
				return -2;
			if (pass &&
			    (rc = emit_file(w, &path, dir, &u, base)) != 0)
				return rc;
		}
	}

	if ((fmt = malloc(sizeof(*fmt))) == NULL)
		return -1;
	if (read_formats(c, fmt) == -1)
		goto out;
	n = cur_uleb(c);
	if (c->bad || n > DIRS_MAX || (n > 0 && fmt->n == 0))
		goto out;
	for (*ndirs = 0; *ndirs < n; ++*ndirs)
		if (read_entry(w, fmt, &u, &w->dir[*ndirs], &dir) == -1)
			goto out;
	if (read_formats(c, fmt) == -1)
		goto out;
	n = cur_uleb(c);
	if (c->bad || (n > 0 && fmt->n == 0))
		goto out;
	for (i = 0, rc = 0; i < n && rc == 0; i++) {
		if (read_entry(w, fmt, &u, &path, &dir) == -1 ||
		    dir >= *ndirs) {
			rc = -2;
			break;
		}
		if (pass)
			rc = emit_file(w, &path, dir, &u, base);
	}
out:
	free(fmt);
	return rc;
}

/*
 * Find abbreviation code in the table at off: its tag and attributes in
 * w->spec.  -1 when it is not there, cannot be read, or is not among the
 * first ABBREV_SCAN_MAX entries of the table.  Compilers put the unit's
 * own entry first, and units share tables: the last answer is kept, and
 * the bound keeps a file whose many units each point deep into a big
 * table from costing units times table.
 */
static int
abbrev_find(struct walk *w, uint64_t off, uint64_t code, unsigned *tag,
    size_t *nspec)
{
	struct cur *c = &w->abbrev;
	uint64_t k, name, form;
	unsigned t, n;

	if (w->abbrev_known && w->abbrev_off == off && w->abbrev_code == code) {
		*tag = w->abbrev_tag;
		*nspec = w->abbrev_nspec;
		return 0;
	}
	w->abbrev_known = 0;
	if (cur_seek(c, off, c->s->size) == -1)
		return -1;
	for (n = 0;; n++) {
		if (n == ABBREV_SCAN_MAX || (k = cur_uleb(c)) == 0 || c->bad)
			return -1;
		t = (unsigned)cur_uleb(c);
		cur_skip(c, 1); /* has children */
		*nspec = 0;
		for (;;) {
			name = cur_uleb(c);
			form = cur_uleb(c);
			if (c->bad)
				return -1;
			if (name == 0 && form == 0)
				break;
			if (form == FORM_implicit_const)
				cur_uleb(c);
			if (k != code)
				continue;
			if (*nspec == ATTRS_MAX)
				return -1;
			w->spec[*nspec].name = (unsigned)name;
			w->spec[(*nspec)++].form = (unsigned)form;
		}
		if (k == code) {
			*tag = w->abbrev_tag = t;
			w->abbrev_nspec = *nspec;
			w->abbrev_off = off;
			w->abbrev_code = code;
			w->abbrev_known = 1;
			return 0;
		}
	}
}

/* The start of a unit's entries in .debug_str_offsets, without the attribute. */
static uint64_t
str_base_default(struct walk *w, unsigned version)
{
	unsigned off_size;

	if (version < 5 || cur_seek(&w->stroff, 0, w->stroff.s->size) == -1)
		return 0;
	read_length(&w->stroff, &off_size);
	return off_size == 8 ? 16 : 8;
}

/*
 * The unit at start, whose header follows its length at the info cursor
 * (bounded by the unit's end): its DW_AT_name and the files of its line table.  Returns what
 * emit() does, -2 for a malformed unit header; a malformed line table
 * sets *line_err and err.
 */
static int
walk_unit(struct walk *w, uint64_t start, unsigned off_size, int *line_err,
    char *err, size_t errlen)
{
	struct cur *c = &w->info;
	struct strref name = { REF_NONE, 0, NULL }, comp = name;
	struct unit u = { 0, off_size, 0, 0 };
	uint64_t abbrev_off, code, stmt = 0, value;
	unsigned type = 0, tag, form, k;
	const char *base, *comp_s, *s;
	size_t nspec, i, ndirs = 0;
	int has_stmt = 0, has_base = 0, in_alt, rc;

	u.version = (unsigned)cur_uint(c, 2);
	if (u.version < 2 || u.version > 5)
		return -2;
	if (u.version >= 5) {
		type = (unsigned)cur_uint(c, 1);
		u.addr_size = (unsigned)cur_uint(c, 1);
		abbrev_off = cur_uint(c, off_size);
		if (type == UT_skeleton || type == UT_split_compile)
			cur_skip(c, 8);
		else if (type == UT_type || type == UT_split_type)
			return 0;
	} else {
		abbrev_off = cur_uint(c, off_size);
		u.addr_size = (unsigned)cur_uint(c, 1);
	}
	if (c->bad)
		return -2;
	/* Type units add no files; split units live in .dwo files. */
	if (u.version >= 5 && type != UT_compile && type != UT_partial &&
	    type != UT_skeleton)
		return 0;
	if ((code = cur_uleb(c)) == 0 || c->bad ||
	    abbrev_find(w, abbrev_off, code, &tag, &nspec) == -1)
		return 0;
	if (u.version < 5 && tag != TAG_compile_unit &&
	    tag != TAG_partial_unit && tag != TAG_skeleton_unit)
		return 0;

	/* The unit's DIE, up to the first attribute that cannot be read. */
	for (i = 0; i < nspec && !c->bad; i++) {
		form = w->spec[i].form;
		for (k = 0; form == FORM_indirect && k < INDIRECT_MAX; k++)
			form = (unsigned)cur_uleb(c);
		switch (w->spec[i].name) {
		case AT_name:
			rc = read_strref(c, form, &u, &name, w->name,
			    sizeof(w->name));
			break;
		case AT_comp_dir:
			rc = read_strref(c, form, &u, &comp, w->comp,
			    sizeof(w->comp));
			break;
		case AT_stmt_list:
		case AT_str_offsets_base:
			if (form == FORM_sec_offset)
				value = cur_uint(c, off_size);
			else if (form == FORM_data4 || form == FORM_data8)
				value = cur_uint(c, form == FORM_data4 ? 4 : 8);
			else {
				rc = skip_form(c, form, &u);
				break;
			}
			rc = c->bad ? -1 : 0;
			if (w->spec[i].name == AT_stmt_list) {
				stmt = value;
				has_stmt = 1;
			} else {
				u.str_base = value;
				has_base = 1;
			}
			break;
		default:
			rc = skip_form(c, form, &u);
			break;
		}
		if (rc == -1)
			break;
	}
	if (!has_base)
		u.str_base = str_base_default(w, u.version);

	comp_s = base =
	    str_get(w, &comp, &u, w->comp, sizeof(w->comp), &w->base_in_alt);
	if (has_stmt) {
		rc = line_files(w, &u, stmt, base, 0, NULL, &ndirs);
		if (rc == -2) {
			if (!*line_err)
				snprintf(err, errlen,
				    "line table of the unit at %#llx: "
				    "malformed",
				    (unsigned long long)start);
			*line_err = 1;
			has_stmt = 0;
		} else if (rc != 0)
			return rc;
	}
	/* Without DW_AT_comp_dir, DWARF 5 still has it as directory 0. */
	if ((base == NULL || base[0] != '/') && has_stmt && ndirs > 0 &&
	    (s = str_get(w, &w->dir[0], &u, w->dirbuf, sizeof(w->dirbuf),
		 &in_alt)) != NULL) {
		memmove(w->comp, s, strlen(s) + 1);
		base = w->comp;
	}
	if (base != NULL && base[0] == '/')
		w->base_in_alt = 0;
	s = str_get(w, &name, &u, w->name, sizeof(w->name), &in_alt);
	w->alt_missing |= in_alt;
	if ((rc = emit(w, s, base)) != 0 || !has_stmt)
		return rc;
	rc = line_files(w, &u, stmt, comp_s, 1, base, &ndirs);
	return rc == -2 ? 0 : rc;
}

/* The units of .debug_info, in order. */
static int
walk_units(struct walk *w, char *err, size_t errlen)
{
	struct cur *c = &w->info;
	uint64_t pos = 0, len, size = c->s->size;
	unsigned off_size;
	int rc = 0, line_err = 0;

	/* Fewer bytes than the smallest unit header are padding. */
	while (rc == 0 && size - pos >= 11) {
		if (cur_seek(c, pos, size) == -1)
			break;
		len = read_length(c, &off_size);
		if (c->bad || len > size - c->pos ||
		    cur_seek(c, c->pos, c->pos + len) == -1) {
			snprintf(err, errlen,
			    "unit list: the unit at %#llx runs past the end",
			    (unsigned long long)pos);
			return -1;
		}
		rc = walk_unit(w, pos, off_size, &line_err, err, errlen);
		pos = c->end;
	}
	if (rc == -2) {
		snprintf(err, errlen, "unit list: bad unit header at %#llx",
		    (unsigned long long)pos);
		return -1;
	}
	if (rc == -1) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return line_err ? -1 : 0;
}

static void
dfile_init(struct dfile *d)
{
	int i;

	memset(d, 0, sizeof(*d));
	d->tmp = -1;
	for (i = 0; i < SEC_N; i++)
		d->sec[i].fd = -1;
}

static void
dfile_close(struct dfile *d)
{
	if (d->tmp != -1)
		close(d->tmp);
	dfile_init(d);
}

/* The index in sec_names of a .debug_ or .zdebug_ section name, or -1. */
static int
sec_id(const char *name)
{
	int i;

	name += name[1] == 'z' ? 8 : 7;
	for (i = 0; i < SEC_N; i++)
		if (strcmp(name, sec_names[i]) == 0)
			return i;
	return -1;
}

/*
 * The size section sh (named name) has once decompressed, and where its
 * zlib stream starts (*zhdr bytes in; 0 when it is not compressed).
 */
static int
section_size(int fd, const struct dfile *d, const GElf_Shdr *sh,
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
inflate_section(struct dfile *d, int fd, uint64_t zoff, uint64_t zlen,
    uint64_t size, const char *tmpdir, struct sect *s, char *err, size_t errlen)
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
strings_end(const struct sect *s)
{
	char last;

	return s->fd == -1 ||
	    (pread(s->fd, &last, 1, (off_t)(s->off + s->size - 1)) == 1 &&
		last == '\0');
}

/*
 * Find the sections of the ELF file at fd that list its sources, every
 * debug section checked first.  Compressed ones are decompressed by
 * dfile_load() when they are needed, but for .debug_info, which is read in
 * order and inflated as it is read.  Returns 1 when there is a .debug_info
 * to read, 0 when there is none, -1 with err.
 */
static int
dfile_open(struct dfile *d, int fd, char *err, size_t errlen)
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
		} else if (sh.sh_size > SOURCES_SECTION_MAX ||
		    size > SOURCES_SECTION_MAX) {
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
			if (zhdr > 0 && i == SEC_INFO) {
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
	for (i = SEC_STR; rc == 0 && i <= SEC_LINE_STR; i++)
		if (d->z[i].size == 0 && !strings_end(&d->sec[i])) {
			snprintf(err, errlen,
			    "a string section is not NUL-terminated");
			rc = -1;
		}
	if (rc == -1)
		return -1;
	return d->sec[SEC_INFO].fd != -1;
}

/*
 * Make the sections in mask (1 << section) of d readable: decompress those
 * that are compressed into d's temporary file, check that string sections
 * end in a NUL.  Each section once.
 */
static int
dfile_load(struct dfile *d, unsigned mask, const char *tmpdir, char *err,
    size_t errlen)
{
	struct sect *s;
	int i;

	for (i = 0; i < SEC_N; i++) {
		if ((mask & 1u << i) == 0 || (d->loaded & 1u << i) != 0)
			continue;
		s = &d->sec[i];
		if (d->z[i].size > 0 &&
		    inflate_section(d, s->fd, d->z[i].zoff, d->z[i].zlen,
			d->z[i].size, tmpdir, s, err, errlen) == -1)
			return -1;
		if ((i == SEC_STR || i == SEC_LINE_STR) && !strings_end(s)) {
			snprintf(err, errlen,
			    "a string section is not NUL-terminated");
			return -1;
		}
		d->loaded |= 1u << i;
	}
	return 0;
}

/* The sections walk_lines() reads; it loads .debug_str when it needs it. */
#define LINES_NEED (1u << SEC_LINE | 1u << SEC_LINE_STR)
/* The strings a DWARF 5 line table can name without its unit. */
#define LINES_REFS \
	(1u << REF_NONE | 1u << REF_AT_LINE | 1u << REF_LINE_STRP | \
	    1u << REF_STRP)

/*
 * The files of every line table in .debug_line, without reading
 * .debug_info.  A DWARF 5 table names its unit's compilation directory
 * (directory 0) and primary source file (file 0, the unit's DW_AT_name)
 * itself, so where every table is DWARF 5 and names its paths in this
 * file's string sections, the tables alone list what the units would: the
 * biggest section, .debug_info (compressed in distributions' packages),
 * is never decompressed.  A first pass checks that; 2 when it does not
 * hold (the caller walks the units instead), else what emit() does (0
 * when passes is 1: the check alone), or -1 with err.  A unit without a line table lists its DW_AT_name in the
 * unit walk only; gcc gives every unit a table.
 */
static int
walk_lines(struct walk *w, int passes, const char *tmpdir, char *err,
    size_t errlen)
{
	struct cur *c = &w->line;
	uint64_t pos, next, len, size = c->s->size;
	struct unit u;
	const char *base;
	size_t ndirs;
	int pass, rc = 0, in_alt;

	if (c->s->fd == -1)
		return 2;
	for (pass = 0; pass < passes && rc == 0; pass++) {
		w->refs = 0;
		for (pos = 0; rc == 0 && size - pos >= 4; pos = next) {
			memset(&u, 0, sizeof(u));
			if (cur_seek(c, pos, size) == -1)
				return 2;
			len = read_length(c, &u.off_size);
			if (c->bad || len > size - c->pos)
				return 2;
			next = c->pos + len;
			if (cur_uint(c, 2) != 5 ||
			    line_files(w, &u, pos, NULL, 0, NULL, &ndirs) !=
				0 ||
			    (w->refs & ~LINES_REFS) != 0)
				return 2;
			if (pass == 0)
				continue;
			base = ndirs == 0 ? NULL
					  : str_get(w, &w->dir[0], &u, w->comp,
						sizeof(w->comp), &in_alt);
			rc = line_files(w, &u, pos, NULL, 1, base, &ndirs);
		}
		if (pass == 0 && (w->refs & 1u << REF_STRP) != 0) {
			if (dfile_load(&w->df, 1u << SEC_STR, tmpdir, err,
				errlen) == -1)
				return -1;
			cur_init(&w->str, &w->df.sec[SEC_STR], w->df.big);
		}
	}
	if (rc == -2)
		return 2;
	if (rc == -1)
		snprintf(err, errlen, "out of memory");
	return rc == 1 ? 0 : rc;
}

/*
 * Open the alt file at alt_fd into w->alt, checked like the file and to
 * carry the build-id the file at fd links to.
 */
static int
alt_open(struct walk *w, int fd, int alt_fd, const char *tmpdir, char *err,
    size_t errlen)
{
	struct elf_info *info;
	char alt_err[256] = "it has no .debug_info";
	int rc = -1;

	if ((info = calloc(2, sizeof(*info))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (dfile_open(&w->alt, alt_fd, alt_err, sizeof(alt_err)) != 1 ||
	    dfile_load(&w->alt, 1u << SEC_STR, tmpdir, alt_err,
		sizeof(alt_err)) == -1)
		;
	else if (elf_read_info(fd, &info[0], alt_err, sizeof(alt_err)) != 0 ||
	    info[0].alt_id.len == 0)
		snprintf(alt_err, sizeof(alt_err),
		    "the file links to no alt file");
	else if (elf_read_info(alt_fd, &info[1], alt_err, sizeof(alt_err)) !=
		0 ||
	    !buildid_equal(&info[0].alt_id, &info[1].id))
		snprintf(alt_err, sizeof(alt_err),
		    "not the alt file %.128s links to", info[0].alt_path);
	else
		rc = 0;
	if (rc == -1)
		snprintf(err, errlen, "alt file: %s", alt_err);
	free(info);
	return rc;
}

/* The cursors of w, on the sections as they are now. */
static void
walk_init(struct walk *w)
{
	cur_init(&w->info, &w->df.sec[SEC_INFO], w->df.big);
	cur_init(&w->abbrev, &w->df.sec[SEC_ABBREV], w->df.big);
	cur_init(&w->line, &w->df.sec[SEC_LINE], w->df.big);
	cur_init(&w->at_line, &w->df.sec[SEC_LINE], w->df.big);
	cur_init(&w->str, &w->df.sec[SEC_STR], w->df.big);
	cur_init(&w->line_str, &w->df.sec[SEC_LINE_STR], w->df.big);
	cur_init(&w->stroff, &w->df.sec[SEC_STROFF], w->df.big);
	cur_init(&w->alt_str, &w->alt.sec[SEC_STR], w->alt.big);
}

int
sources_list(int fd, int alt_fd, const char *tmpdir, unsigned max_files,
    int (*cb)(const char *path, void *arg), void *arg, int *alt_missing,
    char *err, size_t errlen)
{
	struct walk *w;
	int rc;

	if (alt_missing != NULL)
		*alt_missing = 0;
	if ((w = calloc(1, sizeof(*w))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	dfile_init(&w->df);
	dfile_init(&w->alt);
	if ((rc = dfile_open(&w->df, fd, err, errlen)) != 1)
		goto out;
	rc = -1;
	if (alt_fd != -1 && alt_open(w, fd, alt_fd, tmpdir, err, errlen) == -1)
		goto out;
	rc = 0;
	if (max_files == 0)
		goto out;
	w->max = max_files;
	w->cb = cb;
	w->arg = arg;
	w->has_alt = alt_fd != -1;
	rc = -1;
	if (dfile_load(&w->df, LINES_NEED, tmpdir, err, errlen) == -1)
		goto out;
	walk_init(w);
	if ((rc = walk_lines(w, 2, tmpdir, err, errlen)) == 2) {
		rc = -1;
		if (dfile_load(&w->df, ~0u, tmpdir, err, errlen) == -1)
			goto out;
		walk_init(w);
		rc = walk_units(w, err, errlen);
	}
	cur_free(&w->info);
	seen_free(&w->seen);
	if (alt_missing != NULL)
		*alt_missing = w->alt_missing;
out:
	dfile_close(&w->df);
	dfile_close(&w->alt);
	free(w);
	return rc;
}

int
sources_from_lines(int fd, const char *tmpdir)
{
	struct walk *w;
	char err[256];
	int rc;

	if ((w = calloc(1, sizeof(*w))) == NULL)
		return 0;
	dfile_init(&w->df);
	dfile_init(&w->alt);
	rc = dfile_open(&w->df, fd, err, sizeof(err));
	if (rc == 1) {
		rc = 0;
		if (dfile_load(&w->df, LINES_NEED, tmpdir, err, sizeof(err)) ==
		    0) {
			walk_init(w);
			rc = walk_lines(w, 1, tmpdir, err, sizeof(err)) == 0;
		}
	} else {
		/* No .debug_info: nothing more is read; unreadable: 0. */
		rc = rc == 0;
	}
	cur_free(&w->info);
	dfile_close(&w->df);
	free(w);
	return rc;
}
