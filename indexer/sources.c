/*
 * indexer/sources.c: list the source files the DWARF of an ELF file names.
 *
 * Files are hostile.  libelf is opened with ELF_C_READ (pread, no mmap), and
 * every debug section is checked to lie inside the file and to stay under
 * SOURCES_SECTION_MAX, compressed or not, before libdw is let near it: libdw
 * loads every debug section it knows when it opens the file.  libdw would
 * also open the dwz alt file a .gnu_debugaltlink names, from a path the file
 * chooses (a FIFO would block us, a device would be read), the first time an
 * attribute refers to it; we hand it the alt file the caller found by its
 * build-id, checked like the file itself, or else an empty alt of our own,
 * so that such attributes fail and the unit is listed without them.  Thread-safe for
 * distinct descriptors once elf_init() has run; meant for worker threads.
 */
#include "indexer/sources.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

struct walk {
	struct seen seen;
	unsigned max;
	int (*cb)(const char *path, void *arg);
	void *arg;
	int base_in_alt; /* the unit's comp_dir lives in the absent alt */
	int alt_missing; /* names were skipped for want of the alt */
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

/* The size a debug section will have once libdw has decompressed it. */
static int
section_mem_size(int fd, Elf_Scn *scn, const GElf_Shdr *sh, const char *name,
    uint64_t *size)
{
	unsigned char z[12];
	GElf_Chdr ch;
	int i;

	*size = sh->sh_size;
	if ((sh->sh_flags & SHF_COMPRESSED) != 0) {
		if (gelf_getchdr(scn, &ch) == NULL)
			return -1;
		*size = ch.ch_size;
	} else if (strncmp(name, ".zdebug_", 8) == 0) {
		/* "ZLIB", then the size as 8 big-endian bytes. */
		if (sh->sh_size < sizeof(z) ||
		    pread(fd, z, sizeof(z), (off_t)sh->sh_offset) !=
			(ssize_t)sizeof(z) ||
		    memcmp(z, "ZLIB", 4) != 0)
			return -1;
		*size = 0;
		for (i = 4; i < 12; i++)
			*size = *size << 8 | z[i];
	}
	return 0;
}

/*
 * Check every debug section of f (its headers checked by elf_file_open())
 * before libdw loads them.  Returns 1 when there is a .debug_info to read,
 * 0 when there is none, -1 with err.
 */
static int
check_sections(int fd, const struct elf_file *f, char *err, size_t errlen)
{
	Elf_Scn *scn = NULL;
	const char *name;
	GElf_Shdr sh;
	uint64_t size;
	int has_info = 0;

	while ((scn = elf_nextscn(f->elf, scn)) != NULL) {
		if (gelf_getshdr(scn, &sh) == NULL ||
		    (name = elf_strptr(f->elf, f->shstrndx, sh.sh_name)) ==
			NULL) {
			snprintf(err, errlen, "bad section header: %s",
			    elf_errmsg(-1));
			return -1;
		}
		if (!elf_is_debug_name(name) || sh.sh_type == SHT_NOBITS ||
		    sh.sh_size == 0)
			continue;
		if (sh.sh_offset > f->filesize ||
		    sh.sh_size > f->filesize - sh.sh_offset) {
			snprintf(err, errlen,
			    "section %s extends past the end of the file",
			    name);
			return -1;
		}
		if (section_mem_size(fd, scn, &sh, name, &size) == -1) {
			snprintf(err, errlen,
			    "section %s: bad compression header", name);
			return -1;
		}
		if (sh.sh_size > SOURCES_SECTION_MAX ||
		    size > SOURCES_SECTION_MAX) {
			snprintf(err, errlen, "section %s is too large", name);
			return -1;
		}
		if (strcmp(name, ".debug_info") == 0 ||
		    strcmp(name, ".zdebug_info") == 0)
			has_info = 1;
	}
	return has_info;
}

/*
 * libdw 0.188 takes strings in .debug_str and .debug_line_str to end before
 * the section does, and reads past it when the last one is unterminated.
 * Check the bytes libdw holds (decompressed, if it had to) once it has
 * opened the file.
 */
static int
check_strings(Elf *elf, char *err, size_t errlen)
{
	static const char *const names[] = { ".debug_str", ".debug_line_str",
		".zdebug_str", ".zdebug_line_str" };
	Elf_Scn *scn = NULL;
	const char *name;
	size_t shstrndx, i;
	GElf_Shdr sh;
	Elf_Data *d;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return 0;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		if (gelf_getshdr(scn, &sh) == NULL ||
		    (name = elf_strptr(elf, shstrndx, sh.sh_name)) == NULL ||
		    sh.sh_type == SHT_NOBITS)
			continue;
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (strcmp(name, names[i]) == 0)
				break;
		if (i == sizeof(names) / sizeof(names[0]) ||
		    (d = elf_getdata(scn, NULL)) == NULL || d->d_size == 0 ||
		    d->d_buf == NULL)
			continue;
		if (((const char *)d->d_buf)[d->d_size - 1] != '\0') {
			snprintf(err, errlen,
			    "section %s is not NUL-terminated", name);
			return -1;
		}
	}
	return 0;
}

/*
 * The alt file we give libdw in place of the real one: the smallest ELF
 * image it accepts as DWARF, with a .debug_info too short to hold a unit and
 * no string section, so every lookup into it fails cleanly.
 */
struct empty_alt {
	Elf64_Ehdr eh;
	Elf64_Shdr sh[4];
	char names[40];
	unsigned char info[1];
	unsigned char line[1];
};

static const char empty_alt_names[] = "\0.shstrtab\0.debug_info\0.debug_line";

static void
empty_alt_init(struct empty_alt *a)
{
	static const size_t name_off[4] = { 0, 1, 11, 23 };
	static const size_t data_off[4] = { 0,
		offsetof(struct empty_alt, names),
		offsetof(struct empty_alt, info),
		offsetof(struct empty_alt, line) };
	static const size_t data_size[4] = { 0, sizeof(empty_alt_names), 1, 1 };
	size_t i;

	memset(a, 0, sizeof(*a));
	memcpy(a->eh.e_ident, ELFMAG, SELFMAG);
	a->eh.e_ident[EI_CLASS] = ELFCLASS64;
	a->eh.e_ident[EI_DATA] = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	    ? ELFDATA2LSB
	    : ELFDATA2MSB;
	a->eh.e_ident[EI_VERSION] = EV_CURRENT;
	a->eh.e_type = ET_REL;
	a->eh.e_version = EV_CURRENT;
	a->eh.e_ehsize = sizeof(a->eh);
	a->eh.e_shoff = offsetof(struct empty_alt, sh);
	a->eh.e_shentsize = sizeof(a->sh[0]);
	a->eh.e_shnum = 4;
	a->eh.e_shstrndx = 1;
	memcpy(a->names, empty_alt_names, sizeof(empty_alt_names));
	for (i = 1; i < 4; i++) {
		a->sh[i].sh_name = (Elf64_Word)name_off[i];
		a->sh[i].sh_type = i == 1 ? SHT_STRTAB : SHT_PROGBITS;
		a->sh[i].sh_offset = data_off[i];
		a->sh[i].sh_size = data_size[i];
		a->sh[i].sh_addralign = 1;
	}
}

/*
 * A string attribute of die, or NULL: absent, or in an alt file libdw does
 * not have (*in_alt is then 1).
 */
static const char *
attr_string(Dwarf_Die *die, unsigned name, int *in_alt)
{
	Dwarf_Attribute attr;
	const char *s;

	*in_alt = 0;
	if (dwarf_attr(die, name, &attr) == NULL)
		return NULL;
	if ((s = dwarf_formstring(&attr)) == NULL)
		*in_alt = dwarf_whatform(&attr) == DW_FORM_GNU_strp_alt ||
		    dwarf_whatform(&attr) == DW_FORM_strp_sup;
	return s;
}

/*
 * One unit: its name and its line table's files.  Returns what emit()
 * does; *line_err is set when the line table is unreadable.
 */
static int
walk_unit(struct walk *w, Dwarf_Die *cudie, Dwarf_Half version, int *line_err,
    char *err, size_t errlen)
{
	const char *base, *name;
	const char *const *dirs;
	Dwarf_Files *files = NULL;
	size_t nfiles = 0, ndirs, i;
	int rc, in_alt;

	base = attr_string(cudie, DW_AT_comp_dir, &w->base_in_alt);
	if (dwarf_hasattr(cudie, DW_AT_stmt_list) &&
	    dwarf_getsrcfiles(cudie, &files, &nfiles) != 0) {
		if (!*line_err)
			snprintf(err, errlen,
			    "line table of the unit at %#llx: %s",
			    (unsigned long long)dwarf_dieoffset(cudie),
			    dwarf_errmsg(-1));
		*line_err = 1;
		files = NULL;
		nfiles = 0;
	}
	/* Without DW_AT_comp_dir, DWARF 5 still has it as directory 0. */
	if ((base == NULL || base[0] != '/') && files != NULL &&
	    dwarf_getsrcdirs(files, &dirs, &ndirs) == 0 && ndirs > 0)
		base = dirs[0];

	if (base != NULL && base[0] == '/')
		w->base_in_alt = 0;
	name = attr_string(cudie, DW_AT_name, &in_alt);
	w->alt_missing |= in_alt;
	if ((rc = emit(w, name, base)) != 0)
		return rc;
	/* Before DWARF 5, file 0 is libdw's "???" placeholder. */
	for (i = version < 5 ? 1 : 0; i < nfiles; i++) {
		name = dwarf_filesrc(files, i, NULL, NULL);
		if ((rc = emit(w, name, base)) != 0)
			return rc;
	}
	return 0;
}

static int
walk_units(struct walk *w, Dwarf *dw, char *err, size_t errlen)
{
	Dwarf_CU *cu = NULL, *next;
	Dwarf_Half version;
	uint8_t type;
	Dwarf_Die cudie;
	int rc, line_err = 0;

	while ((rc = dwarf_get_units(dw, cu, &next, &version, &type, &cudie,
		    NULL)) == 0) {
		cu = next;
		/* Type units add no files; split units live in .dwo files. */
		if (type != DW_UT_compile && type != DW_UT_partial &&
		    type != DW_UT_skeleton)
			continue;
		rc = walk_unit(w, &cudie, version, &line_err, err, errlen);
		if (rc == -1) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		if (rc == 1)
			break;
	}
	if (rc == -1) {
		snprintf(err, errlen, "unit list: %s", dwarf_errmsg(-1));
		return -1;
	}
	return line_err ? -1 : 0;
}

/*
 * Open the ELF file at fd for libdw, every debug section checked first.
 * Returns 1 with *elfp and *dwp, 0 when it has no .debug_info, -1 with err;
 * on 0 and -1, nothing is left open.
 */
static int
dwarf_open(int fd, Elf **elfp, Dwarf **dwp, char *err, size_t errlen)
{
	struct elf_file f;
	Dwarf *dw = NULL;
	int rc;

	*elfp = NULL;
	*dwp = NULL;
	if ((rc = elf_file_open(&f, fd, err, errlen)) == ELF_NOTFOUND)
		snprintf(err, errlen, "not an ELF file");
	if (rc != 0)
		return -1;
	if ((rc = check_sections(fd, &f, err, errlen)) == 1 &&
	    (dw = dwarf_begin_elf(f.elf, DWARF_C_READ, NULL)) == NULL) {
		snprintf(err, errlen, "DWARF: %s", dwarf_errmsg(-1));
		rc = -1;
	} else if (rc == 1 && check_strings(f.elf, err, errlen) == -1) {
		rc = -1;
	}
	if (rc != 1) {
		if (dw != NULL)
			dwarf_end(dw);
		elf_file_close(&f);
		return rc;
	}
	*elfp = f.elf;
	*dwp = dw;
	return 1;
}

/* 1 when alt_elf has the build-id that dw's .gnu_debugaltlink names. */
static int
alt_matches(Dwarf *dw, Elf *alt_elf, char *err, size_t errlen)
{
	const void *want, *have;
	const char *name;
	ssize_t n, m;

	if ((n = dwelf_dwarf_gnu_debugaltlink(dw, &name, &want)) <= 0) {
		snprintf(err, errlen, "the file links to no alt file");
		return 0;
	}
	m = dwelf_elf_gnu_build_id(alt_elf, &have);
	if (m != n || memcmp(want, have, (size_t)n) != 0) {
		snprintf(err, errlen, "not the alt file %s links to", name);
		return 0;
	}
	return 1;
}

int
sources_list(int fd, int alt_fd, unsigned max_files,
    int (*cb)(const char *path, void *arg), void *arg, int *alt_missing,
    char *err, size_t errlen)
{
	struct empty_alt alt_image;
	struct walk w;
	Elf *elf = NULL, *alt_elf = NULL;
	Dwarf *dw = NULL, *alt = NULL;
	char alt_err[256] = "it has no .debug_info";
	int rc;

	if (alt_missing != NULL)
		*alt_missing = 0;
	if ((rc = dwarf_open(fd, &elf, &dw, err, errlen)) != 1)
		return rc;
	/* The real alt file when it is given and sound, else an empty one. */
	if (alt_fd != -1 &&
	    (dwarf_open(alt_fd, &alt_elf, &alt, alt_err, sizeof(alt_err)) !=
		    1 ||
		!alt_matches(dw, alt_elf, alt_err, sizeof(alt_err)))) {
		snprintf(err, errlen, "alt file: %s", alt_err);
		rc = -1;
		goto out;
	}
	if (alt == NULL) {
		empty_alt_init(&alt_image);
		if ((alt_elf = elf_memory((char *)&alt_image,
			 sizeof(alt_image))) == NULL ||
		    (alt = dwarf_begin_elf(alt_elf, DWARF_C_READ, NULL)) ==
			NULL) {
			snprintf(err, errlen,
			    "cannot make the empty alt file: %s",
			    alt_elf == NULL ? elf_errmsg(-1)
					    : dwarf_errmsg(-1));
			rc = -1;
			goto out;
		}
	}
	dwarf_setalt(dw, alt);
	rc = 0;
	if (max_files == 0)
		goto out;
	memset(&w, 0, sizeof(w));
	w.max = max_files;
	w.cb = cb;
	w.arg = arg;
	rc = walk_units(&w, dw, err, errlen);
	seen_free(&w.seen);
	if (alt_missing != NULL)
		*alt_missing = w.alt_missing;
out:
	/* dwarf_end does not free an alt given with dwarf_setalt. */
	dwarf_end(dw);
	if (alt != NULL)
		dwarf_end(alt);
	if (alt_elf != NULL)
		elf_end(alt_elf);
	elf_end(elf);
	return rc;
}
