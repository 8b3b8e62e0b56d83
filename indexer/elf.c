/*
 * indexer/elf.c: read build-ids, artifact kinds, dwz alt links and section
 * places from ELF files with libelf.
 *
 * Files are hostile: libelf is opened with ELF_C_READ (pread, no mmap, so a
 * file shrinking under us is an error and not SIGBUS), and every section we
 * load is bounded in size before libelf is asked for its data.  Thread-safe
 * for distinct descriptors once elf_init() has run; meant for worker threads.
 */
#include "indexer/elf.h"

#include <sys/stat.h>

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Larger note or string sections than these are refused, not loaded. */
#define NOTE_MAX (1u << 20)
#define STRTAB_MAX (64u << 20)

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

int
elf_init(void)
{
	return elf_version(EV_CURRENT) == EV_NONE ? -1 : 0;
}

const char *
elf_kind_name(enum elf_kind kind)
{
	switch (kind) {
	case ELF_KIND_DEBUGINFO:
		return "debuginfo";
	case ELF_KIND_EXECUTABLE:
		return "executable";
	}
	return "?";
}

int
elf_has_magic(const void *buf, size_t len)
{
	return len >= SELFMAG && memcmp(buf, ELFMAG, SELFMAG) == 0;
}

int
elf_notes_buildid(const void *buf, size_t n, size_t align, struct buildid *id)
{
	const unsigned char *p = buf;
	Elf32_Nhdr nh; /* the same layout in both classes */
	size_t off = 0, name, desc;

	while (n - off >= sizeof(nh)) {
		memcpy(&nh, p + off, sizeof(nh));
		off += sizeof(nh);
		name = ((size_t)nh.n_namesz + align - 1) & ~(align - 1);
		desc = ((size_t)nh.n_descsz + align - 1) & ~(align - 1);
		if (name > n - off || desc > n - off - name)
			return 0;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp(p + off, "GNU", 4) == 0) {
			if (nh.n_descsz == 0 || nh.n_descsz > BUILDID_MAX)
				return -1;
			memcpy(id->bytes, p + off + name, nh.n_descsz);
			id->len = nh.n_descsz;
			return 1;
		}
		off += name + desc;
	}
	return 0;
}

/* What the notes p[0..n) say of want: 1 it, -1 another id, 0 nothing. */
static int
prefix_notes(const unsigned char *p, size_t n, size_t align,
    const struct buildid *want)
{
	struct buildid got;
	int rc = elf_notes_buildid(p, n, align, &got);

	if (rc != 1)
		return rc;
	return got.len == want->len &&
		memcmp(got.bytes, want->bytes, want->len) == 0
	    ? 1
	    : -1;
}

int
elf_prefix_check(const void *buf, size_t len, const struct buildid *want)
{
	const unsigned char *p = buf;
	uint64_t phoff, off, size, align;
	size_t phentsize, phnum, i;
	int wide, rc;

	if (memcmp(p, ELFMAG, len < SELFMAG ? len : SELFMAG) != 0)
		return -1;
	if (len < EI_NIDENT)
		return 0;
	if (p[EI_CLASS] != ELFCLASS32 && p[EI_CLASS] != ELFCLASS64)
		return -1;
	if (p[EI_DATA] !=
	    (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB
						       : ELFDATA2MSB))
		return 0;
	wide = p[EI_CLASS] == ELFCLASS64;
	if (len < (wide ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr)))
		return 0;
	if (wide) {
		Elf64_Ehdr eh;

		memcpy(&eh, p, sizeof(eh));
		phoff = eh.e_phoff;
		phentsize = eh.e_phentsize;
		phnum = eh.e_phnum;
	} else {
		Elf32_Ehdr eh;

		memcpy(&eh, p, sizeof(eh));
		phoff = eh.e_phoff;
		phentsize = eh.e_phentsize;
		phnum = eh.e_phnum;
	}
	if (phentsize < (wide ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr)))
		return 0;
	for (i = 0; i < phnum; i++) {
		if (phoff > len || (len - phoff) / phentsize <= i)
			return 0;
		if (wide) {
			Elf64_Phdr ph;

			memcpy(&ph, p + phoff + i * phentsize, sizeof(ph));
			if (ph.p_type != PT_NOTE)
				continue;
			off = ph.p_offset;
			size = ph.p_filesz;
			align = ph.p_align;
		} else {
			Elf32_Phdr ph;

			memcpy(&ph, p + phoff + i * phentsize, sizeof(ph));
			if (ph.p_type != PT_NOTE)
				continue;
			off = ph.p_offset;
			size = ph.p_filesz;
			align = ph.p_align;
		}
		if (off > len || size > len - off)
			continue;
		rc = prefix_notes(p + off, (size_t)size, align == 8 ? 8 : 4,
		    want);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* 1 when n entries of type at off lie inside the file. */
static int
table_in_file(const struct elf_file *f, uint64_t off, size_t n, Elf_Type type)
{
	uint64_t size = (uint64_t)gelf_fsize(f->elf, type, n, EV_CURRENT);

	return size != 0 && off <= f->filesize && size <= f->filesize - off;
}

int
elf_file_open(struct elf_file *f, int fd, char *err, size_t errlen)
{
	unsigned char magic[SELFMAG];
	struct stat st;
	GElf_Ehdr eh;
	GElf_Shdr sh;
	Elf_Scn *scn;

	memset(f, 0, sizeof(*f));
	if (fstat(fd, &st) == -1) {
		snprintf(err, errlen, "fstat: %s", strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode))
		return ELF_NOTFOUND;
	if (pread(fd, magic, sizeof(magic), 0) != (ssize_t)sizeof(magic) ||
	    !elf_has_magic(magic, sizeof(magic)))
		return ELF_NOTFOUND;
	f->filesize = (uint64_t)st.st_size;

	f->elf = elf_begin(fd, ELF_C_READ, NULL);
	if (f->elf == NULL || elf_kind(f->elf) != ELF_K_ELF) {
		snprintf(err, errlen, "not a readable ELF file: %s",
		    elf_errmsg(-1));
		goto fail;
	}
	if (gelf_getehdr(f->elf, &eh) == NULL) {
		snprintf(err, errlen, "bad ELF header: %s", elf_errmsg(-1));
		goto fail;
	}
	if (elf_getshdrnum(f->elf, &f->shnum) != 0 ||
	    elf_getshdrstrndx(f->elf, &f->shstrndx) != 0) {
		snprintf(err, errlen, "bad section header table: %s",
		    elf_errmsg(-1));
		goto fail;
	}
	/*
	 * libelf reports a section header table cut off by the end of the
	 * file as "no sections"; a truncated file must not pass for an
	 * sstrip'ed one.  Same for the program headers.
	 */
	if (eh.e_shoff != 0 &&
	    (f->shnum == 0 ||
		!table_in_file(f, eh.e_shoff, f->shnum, ELF_T_SHDR))) {
		snprintf(err, errlen,
		    "section header table past the end of the "
		    "file");
		goto fail;
	}
	if (eh.e_phoff != 0 && eh.e_phnum != PN_XNUM &&
	    !table_in_file(f, eh.e_phoff, eh.e_phnum, ELF_T_PHDR)) {
		snprintf(err, errlen,
		    "program header table past the end of the "
		    "file");
		goto fail;
	}
	if (f->shnum > 0) {
		scn = elf_getscn(f->elf, f->shstrndx);
		if (scn == NULL || gelf_getshdr(scn, &sh) == NULL) {
			snprintf(err, errlen, "bad section name table: %s",
			    elf_errmsg(-1));
			goto fail;
		}
		if (sh.sh_type != SHT_STRTAB || sh.sh_size > STRTAB_MAX ||
		    sh.sh_offset > f->filesize ||
		    sh.sh_size > f->filesize - sh.sh_offset) {
			snprintf(err, errlen,
			    "section name table out of bounds");
			goto fail;
		}
	}
	return 0;
fail:
	if (f->elf != NULL)
		elf_end(f->elf);
	f->elf = NULL;
	return -1;
}

void
elf_file_close(struct elf_file *f)
{
	elf_end(f->elf);
	f->elf = NULL;
}

/* The section's name, or NULL when the header is bad. */
static const char *
section_name(struct elf_file *f, Elf_Scn *scn, GElf_Shdr *sh)
{
	if (gelf_getshdr(scn, sh) == NULL)
		return NULL;
	return elf_strptr(f->elf, f->shstrndx, sh->sh_name);
}

/* 1 when the section's bytes lie inside the file. */
static int
section_in_file(const struct elf_file *f, const GElf_Shdr *sh)
{
	return sh->sh_offset <= f->filesize &&
	    sh->sh_size <= f->filesize - sh->sh_offset;
}

/*
 * Look for the GNU build-id note in d.  Returns 0 when found, ELF_NOTFOUND,
 * or -1 for a build-id note of an impossible length.
 */
static int
notes_find_buildid(Elf_Data *d, struct buildid *id, char *err, size_t errlen)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	while (off < d->d_size &&
	    (next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp((char *)d->d_buf + name_off, "GNU", 4) == 0) {
			if (nh.n_descsz == 0 || nh.n_descsz > BUILDID_MAX) {
				snprintf(err, errlen,
				    "build-id note has length %u",
				    (unsigned)nh.n_descsz);
				return -1;
			}
			id->len = (uint8_t)nh.n_descsz;
			memcpy(id->bytes, (char *)d->d_buf + desc_off,
			    nh.n_descsz);
			return 0;
		}
		off = next;
	}
	return ELF_NOTFOUND;
}

/* Parse .gnu_debugaltlink: a NUL-terminated path, then the alt build-id. */
static int
parse_altlink(Elf_Data *d, struct elf_info *info, char *err, size_t errlen)
{
	const char *buf = d->d_buf;
	const char *nul = memchr(buf, '\0', d->d_size);
	size_t pathlen, idlen;

	if (nul == NULL) {
		snprintf(err, errlen, ".gnu_debugaltlink has no path");
		return -1;
	}
	pathlen = (size_t)(nul - buf);
	idlen = d->d_size - pathlen - 1;
	if (idlen == 0 || idlen > BUILDID_MAX || pathlen >= ELF_ALTPATH_MAX) {
		snprintf(err, errlen, ".gnu_debugaltlink is malformed");
		return -1;
	}
	memcpy(info->alt_path, buf, pathlen + 1);
	memcpy(info->alt_id.bytes, nul + 1, idlen);
	info->alt_id.len = (uint8_t)idlen;
	return 0;
}

uint64_t
elf_uint(const unsigned char *p, size_t n, int big)
{
	uint64_t v = 0;
	size_t i;

	for (i = 0; i < n; i++)
		v |= (uint64_t)p[big ? n - 1 - i : i] << (8 * i);
	return v;
}

int
elf_is_debug_name(const char *name)
{
	return strncmp(name, ".debug_", 7) == 0 ||
	    strncmp(name, ".zdebug_", 8) == 0;
}

/* Walk the section headers: notes, kinds, alt link. */
static int
read_sections(struct elf_file *f, int is_program, struct elf_info *info,
    char *err, size_t errlen)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf_Data *d;
	const char *name;
	int rc;

	while ((scn = elf_nextscn(f->elf, scn)) != NULL) {
		if ((name = section_name(f, scn, &sh)) == NULL) {
			snprintf(err, errlen, "bad section header: %s",
			    elf_errmsg(-1));
			return -1;
		}
		if (sh.sh_type == SHT_NOBITS || sh.sh_size == 0)
			continue;
		if (!section_in_file(f, &sh)) {
			snprintf(err, errlen,
			    "section %s extends past the end "
			    "of the file",
			    name);
			return -1;
		}
		if (elf_is_debug_name(name))
			info->kinds |= ELF_KIND_DEBUGINFO;
		if (is_program && sh.sh_type == SHT_PROGBITS &&
		    (sh.sh_flags & SHF_ALLOC) != 0)
			info->kinds |= ELF_KIND_EXECUTABLE;

		if (sh.sh_type == SHT_NOTE && info->id.len == 0) {
			if (sh.sh_size > NOTE_MAX)
				continue;
			if ((d = elf_getdata(scn, NULL)) == NULL) {
				snprintf(err, errlen, "note section %s: %s",
				    name, elf_errmsg(-1));
				return -1;
			}
			rc = notes_find_buildid(d, &info->id, err, errlen);
			if (rc == -1)
				return -1;
		} else if (strcmp(name, ".gnu_debugaltlink") == 0) {
			if (sh.sh_size > ELF_ALTPATH_MAX + BUILDID_MAX + 1) {
				snprintf(err, errlen,
				    ".gnu_debugaltlink is too large");
				return -1;
			}
			if ((d = elf_getdata(scn, NULL)) == NULL ||
			    d->d_size == 0) {
				snprintf(err, errlen, ".gnu_debugaltlink: %s",
				    elf_errmsg(-1));
				return -1;
			}
			if (parse_altlink(d, info, err, errlen) == -1)
				return -1;
		}
	}
	return 0;
}

/*
 * A file without section headers (sstrip'ed) still has program headers: the
 * build-id sits in a PT_NOTE and loadable bytes make it an executable.
 */
static int
read_segments(struct elf_file *f, int is_program, struct elf_info *info,
    char *err, size_t errlen)
{
	size_t i, phnum;
	GElf_Phdr ph;
	Elf_Data *d;

	if (elf_getphdrnum(f->elf, &phnum) != 0)
		return 0;
	for (i = 0; i < phnum; i++) {
		if (gelf_getphdr(f->elf, (int)i, &ph) == NULL)
			break;
		if ((ph.p_type == PT_LOAD || ph.p_type == PT_NOTE) &&
		    (ph.p_offset > f->filesize ||
			ph.p_filesz > f->filesize - ph.p_offset)) {
			snprintf(err, errlen,
			    "segment %zu extends past the end "
			    "of the file",
			    i);
			return -1;
		}
		if (ph.p_type == PT_LOAD && ph.p_filesz > 0 && is_program)
			info->kinds |= ELF_KIND_EXECUTABLE;
		if (ph.p_type != PT_NOTE || info->id.len != 0 ||
		    ph.p_filesz == 0 || ph.p_filesz > NOTE_MAX)
			continue;
		d = elf_getdata_rawchunk(f->elf, (int64_t)ph.p_offset,
		    ph.p_filesz, ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (d == NULL)
			continue;
		if (notes_find_buildid(d, &info->id, err, errlen) == -1)
			return -1;
	}
	return 0;
}

int
elf_check_artifact(int fd, const struct buildid *want, unsigned kind, char *why,
    size_t whylen)
{
	struct elf_info info;
	char err[200], hex[BUILDID_HEX_MAX];
	int rc;

	rc = elf_read_info(fd, &info, err, sizeof(err));
	if (rc == ELF_NOTFOUND) {
		snprintf(why, whylen, "not ELF");
	} else if (rc == -1) {
		snprintf(why, whylen, "%s", err);
	} else if (!buildid_equal(&info.id, want)) {
		buildid_format(&info.id, hex);
		snprintf(why, whylen, "its build-id is %s",
		    info.id.len > 0 ? hex : "missing");
	} else if ((info.kinds & kind) == 0) {
		snprintf(why, whylen, "%s",
		    kind == ELF_KIND_DEBUGINFO ? "no .debug_* sections"
					       : "no loadable code");
	} else {
		return 0;
	}
	return -1;
}

int
elf_read_info(int fd, struct elf_info *info, char *err, size_t errlen)
{
	struct elf_file f;
	GElf_Ehdr eh;
	int rc, is_program;

	memset(info, 0, sizeof(*info));
	if ((rc = elf_file_open(&f, fd, err, errlen)) != 0)
		return rc;
	if (gelf_getehdr(f.elf, &eh) == NULL) {
		snprintf(err, errlen, "bad ELF header: %s", elf_errmsg(-1));
		rc = -1;
		goto out;
	}
	is_program = eh.e_type == ET_EXEC || eh.e_type == ET_DYN;
	if (f.shnum > 0)
		rc = read_sections(&f, is_program, info, err, errlen);
	else
		rc = read_segments(&f, is_program, info, err, errlen);
out:
	elf_file_close(&f);
	return rc;
}

int
elf_find_section(int fd, const char *name, struct elf_section *sec, char *err,
    size_t errlen)
{
	struct elf_file f;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	const char *n;
	int rc;

	if ((rc = elf_file_open(&f, fd, err, errlen)) != 0)
		return rc;
	rc = ELF_NOTFOUND;
	while ((scn = elf_nextscn(f.elf, scn)) != NULL) {
		if ((n = section_name(&f, scn, &sh)) == NULL) {
			snprintf(err, errlen, "bad section header: %s",
			    elf_errmsg(-1));
			rc = -1;
			break;
		}
		if (strcmp(n, name) != 0 || sh.sh_type == SHT_NOBITS ||
		    sh.sh_size == 0)
			continue;
		if (!section_in_file(&f, &sh)) {
			snprintf(err, errlen,
			    "section %s extends past the end "
			    "of the file",
			    name);
			rc = -1;
			break;
		}
		sec->offset = sh.sh_offset;
		sec->size = sh.sh_size;
		rc = 0;
		break;
	}
	elf_file_close(&f);
	return rc;
}
