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
 * Every read goes through a cursor of indexer/dwread.h, with a window of
 * a few KiB over a section: memory stays the same whatever the size of
 * the file or of its sections.  Compressed sections that are needed are
 * decompressed into an unlinked file in tmpdir; .debug_info, the biggest,
 * is read in order, so it is inflated as the walk goes instead.
 *
 * Files are hostile.  Every debug section is checked to lie inside the file
 * and to stay under DWR_SECTION_MAX, compressed or not, before a byte of
 * it is read (dwr_file_open); every offset and length read is checked
 * against the end of its section or unit; a table that would not end is
 * refused.  No file
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
#include "indexer/dwread.h"
#include "indexer/elf.h"

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
struct sources_seen {
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
seen_grow(struct sources_seen *set)
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
seen_add(struct sources_seen *set, const char *s)
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
seen_free(struct sources_seen *set)
{
	size_t i;

	for (i = 0; i < set->cap; i++)
		free(set->slot[i]);
	free(set->slot);
}

/* Attributes of one abbreviation, directories of one line table. */
#define ATTRS_MAX 256
#define DIRS_MAX 65536
/* Entries of an abbreviation table looked through for one code. */
#define ABBREV_SCAN_MAX 4096
/* DW_FORM_indirect chains followed. */
#define INDIRECT_MAX 4

/* One abbreviation's attribute: name and form. */
struct spec {
	unsigned name, form;
};

/* The state of one sources_list() call. */
struct sources_walk {
	struct sources_seen seen;
	unsigned max;
	int (*cb)(const char *path, void *arg);
	void *arg;
	int base_in_alt; /* the unit's comp_dir lives in the absent alt */
	int alt_missing; /* names were skipped for want of the alt */
	int has_alt;
	unsigned refs; /* 1 << kind of the strrefs line tables used */
	struct dwr_file df, alt;
	/* info walks the units; the others are looked up. */
	struct dwr_cur info, abbrev, line, at_line, str, line_str, stroff,
	    alt_str;
	struct spec spec[ATTRS_MAX];
	/* The abbreviation in spec: table, code, tag, attributes. */
	int abbrev_known;
	uint64_t abbrev_off, abbrev_code;
	unsigned abbrev_tag;
	size_t abbrev_nspec;
	struct dwr_strref dir[DIRS_MAX];
	char name[PATH_MAX], comp[PATH_MAX], dirbuf[PATH_MAX], file[PATH_MAX],
	    joined[PATH_MAX];
};

/*
 * Pass name on, made absolute against base when relative.  Returns 0 to go
 * on, 1 to stop (cb said so, or max_files reached), -1 out of memory.
 */
static int
emit(struct sources_walk *w, const char *name, const char *base)
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
str_get(struct sources_walk *w, const struct dwr_strref *r,
    const struct dwr_unit *u, char *out, size_t outlen, int *in_alt)
{
	uint64_t at;

	*in_alt = 0;
	switch (r->kind) {
	case DWR_REF_NONE:
		break;
	case DWR_REF_READY:
		return r->s;
	case DWR_REF_AT_LINE:
		return dwr_str_at(&w->at_line, r->v, out, outlen);
	case DWR_REF_STRP:
		return dwr_str_at(&w->str, r->v, out, outlen);
	case DWR_REF_LINE_STRP:
		return dwr_str_at(&w->line_str, r->v, out, outlen);
	case DWR_REF_ALT:
		if (w->has_alt)
			return dwr_str_at(&w->alt_str, r->v, out, outlen);
		*in_alt = 1;
		break;
	case DWR_REF_STRX:
		if (r->v > (UINT64_MAX - u->str_base) / u->off_size)
			break;
		at = u->str_base + r->v * u->off_size;
		if (dwr_cur_seek(&w->stroff, at, w->stroff.s->size) == -1)
			break;
		at = dwr_cur_uint(&w->stroff, u->off_size);
		if (w->stroff.bad)
			break;
		return dwr_str_at(&w->str, at, out, outlen);
	}
	return NULL;
}

/* An entry format of a DWARF 5 line table header. */
struct lnfmt {
	unsigned n;
	struct spec f[255]; /* name: the content type */
};

static int
read_formats(struct dwr_cur *c, struct lnfmt *fmt)
{
	unsigned i;

	fmt->n = (unsigned)dwr_cur_uint(c, 1);
	for (i = 0; i < fmt->n; i++) {
		fmt->f[i].name = (unsigned)dwr_cur_uleb(c);
		fmt->f[i].form = (unsigned)dwr_cur_uleb(c);
	}
	return c->bad ? -1 : 0;
}

/*
 * One entry of a DWARF 5 directory or file table: its path and directory
 * index.  -1 when it cannot be read, or reads no byte at all (a table of
 * such entries would never end).
 */
static int
read_entry(struct sources_walk *w, const struct lnfmt *fmt,
    const struct dwr_unit *u, struct dwr_strref *path, uint64_t *dir)
{
	struct dwr_cur *c = &w->line;
	uint64_t start = c->pos;
	unsigned i, form;

	path->kind = DWR_REF_NONE;
	*dir = 0;
	for (i = 0; i < fmt->n; i++) {
		form = fmt->f[i].form;
		if (fmt->f[i].name == DWR_LNCT_path) {
			if (dwr_read_strref(c, form, u, path, NULL, 0) == -1)
				return -1;
			w->refs |= 1u << path->kind;
		} else if (fmt->f[i].name == DWR_LNCT_directory_index &&
		    (form == DWR_FORM_data1 || form == DWR_FORM_data2 ||
			form == DWR_FORM_data4 || form == DWR_FORM_data8)) {
			*dir = dwr_cur_uint(c,
			    form == DWR_FORM_data1       ? 1
				: form == DWR_FORM_data2 ? 2
				: form == DWR_FORM_data4 ? 4
							 : 8);
		} else if (fmt->f[i].name == DWR_LNCT_directory_index &&
		    form == DWR_FORM_udata) {
			*dir = dwr_cur_uleb(c);
		} else if (dwr_skip_form(c, form, u) == -1) {
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
emit_file(struct sources_walk *w, const struct dwr_strref *path, uint64_t dir,
    const struct dwr_unit *u, const char *base)
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
line_files(struct sources_walk *w, const struct dwr_unit *cu, uint64_t off,
    const char *comp, int pass, const char *base, size_t *ndirs)
{
	struct dwr_cur *c = &w->line;
	struct lnfmt *fmt = NULL;
	struct dwr_strref path;
	struct dwr_unit u = *cu;
	uint64_t len, hlen, end, n, i, dir;
	unsigned opbase;
	int rc = -2;

	if (dwr_cur_seek(c, off, c->s->size) == -1)
		return -2;
	len = dwr_read_length(c, &u.off_size);
	if (c->bad || len > c->end - c->pos)
		return -2;
	end = c->pos + len;
	u.version = (unsigned)dwr_cur_uint(c, 2);
	if (u.version < 2 || u.version > 5)
		return -2;
	if (u.version >= 5) {
		u.addr_size = (unsigned)dwr_cur_uint(c, 1);
		dwr_cur_skip(c, 1); /* segment selector size */
	}
	hlen = dwr_cur_uint(c, u.off_size);
	if (c->bad || hlen > end - c->pos ||
	    dwr_cur_seek(c, c->pos, c->pos + hlen) == -1)
		return -2;
	/* Instruction lengths, default_is_stmt, line_base, line_range. */
	dwr_cur_skip(c, u.version >= 4 ? 5 : 4);
	opbase = (unsigned)dwr_cur_uint(c, 1);
	dwr_cur_skip(c, opbase > 0 ? opbase - 1 : 0);
	if (c->bad)
		return -2;

	if (u.version < 5) {
		w->dir[0].kind = comp != NULL ? DWR_REF_READY : DWR_REF_NONE;
		w->dir[0].s = comp;
		for (*ndirs = 1;; ++*ndirs) {
			i = c->pos;
			dwr_cur_str(c, NULL, 0);
			if (c->bad)
				return -2;
			if (c->pos == i + 1)
				break;
			if (*ndirs == DIRS_MAX)
				return -2;
			w->dir[*ndirs].kind = DWR_REF_AT_LINE;
			w->dir[*ndirs].v = i;
		}
		for (;;) {
			path.kind = DWR_REF_AT_LINE;
			path.v = c->pos;
			dwr_cur_str(c, NULL, 0);
			if (c->bad)
				return -2;
			if (c->pos == path.v + 1)
				return 0;
			dir = dwr_cur_uleb(c);
			dwr_cur_uleb(c); /* mtime */
			dwr_cur_uleb(c); /* length */
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
	n = dwr_cur_uleb(c);
	if (c->bad || n > DIRS_MAX || (n > 0 && fmt->n == 0))
		goto out;
	for (*ndirs = 0; *ndirs < n; ++*ndirs)
		if (read_entry(w, fmt, &u, &w->dir[*ndirs], &dir) == -1)
			goto out;
	if (read_formats(c, fmt) == -1)
		goto out;
	n = dwr_cur_uleb(c);
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
abbrev_find(struct sources_walk *w, uint64_t off, uint64_t code, unsigned *tag,
    size_t *nspec)
{
	struct dwr_cur *c = &w->abbrev;
	uint64_t k, name, form;
	unsigned t, n;

	if (w->abbrev_known && w->abbrev_off == off && w->abbrev_code == code) {
		*tag = w->abbrev_tag;
		*nspec = w->abbrev_nspec;
		return 0;
	}
	w->abbrev_known = 0;
	if (dwr_cur_seek(c, off, c->s->size) == -1)
		return -1;
	for (n = 0;; n++) {
		if (n == ABBREV_SCAN_MAX || (k = dwr_cur_uleb(c)) == 0 ||
		    c->bad)
			return -1;
		t = (unsigned)dwr_cur_uleb(c);
		dwr_cur_skip(c, 1); /* has children */
		*nspec = 0;
		for (;;) {
			name = dwr_cur_uleb(c);
			form = dwr_cur_uleb(c);
			if (c->bad)
				return -1;
			if (name == 0 && form == 0)
				break;
			if (form == DWR_FORM_implicit_const)
				dwr_cur_uleb(c);
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

/*
 * The start of a unit's entries in .debug_str_offsets, without the
 * attribute.
 */
static uint64_t
str_base_default(struct sources_walk *w, unsigned version)
{
	unsigned off_size;

	if (version < 5 || dwr_cur_seek(&w->stroff, 0, w->stroff.s->size) == -1)
		return 0;
	dwr_read_length(&w->stroff, &off_size);
	return off_size == 8 ? 16 : 8;
}

/*
 * The unit at start, whose header follows its length at the info cursor
 * (bounded by the unit's end): its DW_AT_name and the files of its line
 * table.  Returns what emit() does, -2 for a malformed unit header; a
 * malformed line table sets *line_err and err.
 */
static int
walk_unit(struct sources_walk *w, uint64_t start, unsigned off_size,
    int *line_err, char *err, size_t errlen)
{
	struct dwr_cur *c = &w->info;
	struct dwr_strref name = { DWR_REF_NONE, 0, NULL }, comp = name;
	struct dwr_unit u = { 0, off_size, 0, 0 };
	uint64_t abbrev_off, code, stmt = 0, value;
	unsigned type = 0, tag, form, k;
	const char *base, *comp_s, *s;
	size_t nspec, i, ndirs = 0;
	int has_stmt = 0, has_base = 0, in_alt, rc;

	u.version = (unsigned)dwr_cur_uint(c, 2);
	if (u.version < 2 || u.version > 5)
		return -2;
	if (u.version >= 5) {
		type = (unsigned)dwr_cur_uint(c, 1);
		u.addr_size = (unsigned)dwr_cur_uint(c, 1);
		abbrev_off = dwr_cur_uint(c, off_size);
		if (type == DWR_UT_skeleton || type == DWR_UT_split_compile)
			dwr_cur_skip(c, 8);
		else if (type == DWR_UT_type || type == DWR_UT_split_type)
			return 0;
	} else {
		abbrev_off = dwr_cur_uint(c, off_size);
		u.addr_size = (unsigned)dwr_cur_uint(c, 1);
	}
	if (c->bad)
		return -2;
	/* Type units add no files; split units live in .dwo files. */
	if (u.version >= 5 && type != DWR_UT_compile &&
	    type != DWR_UT_partial && type != DWR_UT_skeleton)
		return 0;
	if ((code = dwr_cur_uleb(c)) == 0 || c->bad ||
	    abbrev_find(w, abbrev_off, code, &tag, &nspec) == -1)
		return 0;
	if (u.version < 5 && tag != DWR_TAG_compile_unit &&
	    tag != DWR_TAG_partial_unit && tag != DWR_TAG_skeleton_unit)
		return 0;

	/* The unit's DIE, up to the first attribute that cannot be read. */
	for (i = 0; i < nspec && !c->bad; i++) {
		form = w->spec[i].form;
		for (k = 0; form == DWR_FORM_indirect && k < INDIRECT_MAX; k++)
			form = (unsigned)dwr_cur_uleb(c);
		switch (w->spec[i].name) {
		case DWR_AT_name:
			rc = dwr_read_strref(c, form, &u, &name, w->name,
			    sizeof(w->name));
			break;
		case DWR_AT_comp_dir:
			rc = dwr_read_strref(c, form, &u, &comp, w->comp,
			    sizeof(w->comp));
			break;
		case DWR_AT_stmt_list:
		case DWR_AT_str_offsets_base:
			if (form == DWR_FORM_sec_offset)
				value = dwr_cur_uint(c, off_size);
			else if (form == DWR_FORM_data4 ||
			    form == DWR_FORM_data8)
				value = dwr_cur_uint(c,
				    form == DWR_FORM_data4 ? 4 : 8);
			else {
				rc = dwr_skip_form(c, form, &u);
				break;
			}
			rc = c->bad ? -1 : 0;
			if (w->spec[i].name == DWR_AT_stmt_list) {
				stmt = value;
				has_stmt = 1;
			} else {
				u.str_base = value;
				has_base = 1;
			}
			break;
		default:
			rc = dwr_skip_form(c, form, &u);
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
walk_units(struct sources_walk *w, char *err, size_t errlen)
{
	struct dwr_cur *c = &w->info;
	uint64_t pos = 0, len, size = c->s->size;
	unsigned off_size;
	int rc = 0, line_err = 0;

	/* Fewer bytes than the smallest unit header are padding. */
	while (rc == 0 && size - pos >= 11) {
		if (dwr_cur_seek(c, pos, size) == -1)
			break;
		len = dwr_read_length(c, &off_size);
		if (c->bad || len > size - c->pos ||
		    dwr_cur_seek(c, c->pos, c->pos + len) == -1) {
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

/* The sections walk_lines() reads; it loads .debug_str when it needs it. */
#define LINES_NEED (1u << DWR_SEC_LINE | 1u << DWR_SEC_LINE_STR)
/* The strings a DWARF 5 line table can name without its unit. */
#define LINES_REFS \
	(1u << DWR_REF_NONE | 1u << DWR_REF_AT_LINE | \
	    1u << DWR_REF_LINE_STRP | 1u << DWR_REF_STRP)

/*
 * The files of every line table in .debug_line, without reading
 * .debug_info.  A DWARF 5 table names its unit's compilation directory
 * (directory 0) and primary source file (file 0, the unit's DW_AT_name)
 * itself, so where every table is DWARF 5 and names its paths in this
 * file's string sections, the tables alone list what the units would: the
 * biggest section, .debug_info (compressed in distributions' packages),
 * is never decompressed.  A first pass checks that; 2 when it does not
 * hold (the caller walks the units instead), else what emit() does (0
 * when passes is 1: the check alone), or -1 with err.  A unit without a
 * line table lists its DW_AT_name in the unit walk only; gcc gives every
 * unit a table.
 */
static int
walk_lines(struct sources_walk *w, int passes, const char *tmpdir, char *err,
    size_t errlen)
{
	struct dwr_cur *c = &w->line;
	uint64_t pos, next, len, size = c->s->size;
	struct dwr_unit u;
	const char *base;
	size_t ndirs;
	int pass, rc = 0, in_alt;

	if (c->s->fd == -1)
		return 2;
	for (pass = 0; pass < passes && rc == 0; pass++) {
		w->refs = 0;
		for (pos = 0; rc == 0 && size - pos >= 4; pos = next) {
			memset(&u, 0, sizeof(u));
			if (dwr_cur_seek(c, pos, size) == -1)
				return 2;
			len = dwr_read_length(c, &u.off_size);
			if (c->bad || len > size - c->pos)
				return 2;
			next = c->pos + len;
			if (dwr_cur_uint(c, 2) != 5 ||
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
		if (pass == 0 && (w->refs & 1u << DWR_REF_STRP) != 0) {
			if (dwr_file_load(&w->df, 1u << DWR_SEC_STR, tmpdir,
				err, errlen) == -1)
				return -1;
			dwr_cur_init(&w->str, &w->df.sec[DWR_SEC_STR],
			    w->df.big);
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
alt_open(struct sources_walk *w, int fd, int alt_fd, const char *tmpdir,
    char *err, size_t errlen)
{
	struct elf_info *info;
	char alt_err[256] = "it has no .debug_info";
	int rc = -1;

	if ((info = calloc(2, sizeof(*info))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (dwr_file_open(&w->alt, alt_fd, alt_err, sizeof(alt_err)) != 1 ||
	    dwr_file_load(&w->alt, 1u << DWR_SEC_STR, tmpdir, alt_err,
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
walk_init(struct sources_walk *w)
{
	dwr_cur_init(&w->info, &w->df.sec[DWR_SEC_INFO], w->df.big);
	dwr_cur_init(&w->abbrev, &w->df.sec[DWR_SEC_ABBREV], w->df.big);
	dwr_cur_init(&w->line, &w->df.sec[DWR_SEC_LINE], w->df.big);
	dwr_cur_init(&w->at_line, &w->df.sec[DWR_SEC_LINE], w->df.big);
	dwr_cur_init(&w->str, &w->df.sec[DWR_SEC_STR], w->df.big);
	dwr_cur_init(&w->line_str, &w->df.sec[DWR_SEC_LINE_STR], w->df.big);
	dwr_cur_init(&w->stroff, &w->df.sec[DWR_SEC_STROFF], w->df.big);
	dwr_cur_init(&w->alt_str, &w->alt.sec[DWR_SEC_STR], w->alt.big);
}

int
sources_list(int fd, int alt_fd, const char *tmpdir, unsigned max_files,
    int (*cb)(const char *path, void *arg), void *arg, int *alt_missing,
    char *err, size_t errlen)
{
	struct sources_walk *w;
	int rc;

	if (alt_missing != NULL)
		*alt_missing = 0;
	if ((w = calloc(1, sizeof(*w))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	dwr_file_init(&w->df);
	dwr_file_init(&w->alt);
	if ((rc = dwr_file_open(&w->df, fd, err, errlen)) != 1)
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
	if (dwr_file_load(&w->df, LINES_NEED, tmpdir, err, errlen) == -1)
		goto out;
	walk_init(w);
	if ((rc = walk_lines(w, 2, tmpdir, err, errlen)) == 2) {
		rc = -1;
		if (dwr_file_load(&w->df, ~0u, tmpdir, err, errlen) == -1)
			goto out;
		walk_init(w);
		rc = walk_units(w, err, errlen);
	}
	dwr_cur_free(&w->info);
	seen_free(&w->seen);
	if (alt_missing != NULL)
		*alt_missing = w->alt_missing;
out:
	dwr_file_close(&w->df);
	dwr_file_close(&w->alt);
	free(w);
	return rc;
}

int
sources_from_lines(int fd, const char *tmpdir)
{
	struct sources_walk *w;
	char err[256];
	int rc;

	if ((w = calloc(1, sizeof(*w))) == NULL)
		return 0;
	dwr_file_init(&w->df);
	dwr_file_init(&w->alt);
	rc = dwr_file_open(&w->df, fd, err, sizeof(err));
	if (rc == 1) {
		rc = 0;
		if (dwr_file_load(&w->df, LINES_NEED, tmpdir, err,
			sizeof(err)) == 0) {
			walk_init(w);
			rc = walk_lines(w, 1, tmpdir, err, sizeof(err)) == 0;
		}
	} else {
		/* No .debug_info: nothing more is read; unreadable: 0. */
		rc = rc == 0;
	}
	dwr_cur_free(&w->info);
	dwr_file_close(&w->df);
	free(w);
	return rc;
}
