/*
 * indexer/symdwarf.c: DWARF functions, inlined instances, line rows and ELF
 * symbols, read for the symbolizer (indexer/symdwarf.h).
 *
 * The debug file is opened with pread-backed libelf (indexer/elf.h) to
 * check it and find its sections.  The sections libdw needs for scopes and
 * lines (.debug_info, _abbrev, _line, _line_str, _str, _str_offsets,
 * _ranges, _rnglists, _addr, and the link to the alt file when there is
 * one) are copied into an unlinked file, decompressed on the way (ELF
 * compression or .zdebug_), behind a section header table of their own:
 * a small ELF file that libelf maps and libdw reads in place, never
 * inflating anything onto the heap.  The alt file gets the same.  Every
 * SYMDWARF_BATCH bytes of units the Dwarf and Elf handles are ended and
 * begun again on the same copies, which frees what libdw cached for the
 * units read so far and unmaps the pages they touched, so the resident
 * size stays near a batch's worth whatever the size of the file.
 *
 * The walk over a unit follows dwarf_getscopes(), which eu-addr2line uses:
 * it descends through namespaces, classes and structures, and through
 * functions, inlined instances and lexical blocks that have ranges (one
 * without is pruned with all it holds).  An inlined instance, and a block,
 * counts only where its parent's ranges also are: its ranges are cut to
 * them.  A function (subprogram) nested in another is a function of its
 * own, with its own ranges.  Imported (dwz partial) units are not walked:
 * dwz moves only what is shared between units, which code never is.
 */
#include "indexer/symdwarf.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "indexer/elf.h"
#include "indexer/file.h"

#define CHUNK (256u << 10)
/* The largest .gnu_debugdata, compressed and inflated. */
#define MINIDEBUG_MAX ((size_t)64 << 20)
#define MINIDEBUG_OUT_MAX ((size_t)256 << 20)

/* The sections the copy keeps, after ".debug_". */
static const char *const kept[] = { "info", "abbrev", "line", "line_str", "str",
	"str_offsets", "ranges", "rnglists", "addr" };
#define KEPT_N (sizeof(kept) / sizeof(kept[0]))
/* The copy's section names: kept[] and the two links to an alt file. */
#define COPY_MAX (KEPT_N + 2)

/* A debug file's sections, copied plain; libelf and libdw open on it. */
struct plain {
	int fd;
	Elf *elf;
	Dwarf *dbg;
};

struct rng {
	uint64_t lo, hi;
};

struct rset {
	struct rng *r;
	size_t n, cap;
};

/* A file of the unit's line table: libdw's name pointer, and its id. */
struct fptr {
	const char *p;
	uint32_t fid; /* id + 1 */
};

struct rd {
	const struct symdwarf_sink *sink;
	struct symdwarf_info *info;
	char *err;
	size_t errlen;
	struct plain main, alt;
	int have_alt;
	int big; /* the main file is big-endian */
	/* The unit being read. */
	const char *comp_dir;
	uint32_t *fids; /* by file index: id + 1, 0 none */
	size_t nfids, capfids;
	struct fptr *fptr;
	size_t nfptr, capfptr;
	char *path;
	size_t pathcap;
	struct rset lvl[SYMDWARF_NEST_MAX + 1]; /* ranges by nesting level */
	struct rset cut; /* scratch for die_ranges */
};

static int
fail(struct rd *rd, const char *fmt, const char *what)
{
	snprintf(rd->err, rd->errlen, fmt, what);
	return -1;
}

static int
sink_stopped(struct rd *rd)
{
	return fail(rd, "%s", "stopped by the sink");
}

/* ------------------------------------------------------- the plain copy */

/* Copy len bytes at off in fd to out at outoff; inflate a zlib stream of
 * exactly want bytes when z. */
static int
copy_bytes(int fd, uint64_t off, uint64_t len, int z, uint64_t want, int out,
    uint64_t outoff, char *err, size_t errlen)
{
	unsigned char *in = NULL, *buf = NULL;
	uint64_t done = 0, used = 0;
	z_stream zs;
	ssize_t n;
	int zrc = Z_OK, rc = -1;

	memset(&zs, 0, sizeof(zs));
	if ((in = malloc(CHUNK)) == NULL || (buf = malloc(CHUNK)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (z && inflateInit(&zs) != Z_OK) {
		snprintf(err, errlen, "zlib: cannot start");
		goto out;
	}
	while (used < len || (z && zrc != Z_STREAM_END)) {
		size_t want_in =
		    len - used < CHUNK ? (size_t)(len - used) : CHUNK;

		if (want_in > 0) {
			n = pread(fd, in, want_in, (off_t)(off + used));
			if (n <= 0) {
				snprintf(err, errlen, "read: %s",
				    n == 0 ? "end of file" : strerror(errno));
				goto out;
			}
			used += (uint64_t)n;
		} else {
			n = 0;
		}
		if (!z) {
			if (file_pwrite(out, in, (size_t)n, outoff + done) ==
			    -1) {
				snprintf(err, errlen, "write: %s",
				    strerror(errno));
				goto out;
			}
			done += (uint64_t)n;
			continue;
		}
		zs.next_in = in;
		zs.avail_in = (uInt)n;
		do {
			zs.next_out = buf;
			zs.avail_out = CHUNK;
			zrc = inflate(&zs, Z_NO_FLUSH);
			if (zrc != Z_OK && zrc != Z_STREAM_END &&
			    !(zrc == Z_BUF_ERROR && zs.avail_in == 0)) {
				snprintf(err, errlen, "bad zlib stream");
				goto out;
			}
			if (CHUNK - zs.avail_out > want - done) {
				snprintf(err, errlen,
				    "inflates past its stated size");
				goto out;
			}
			if (file_pwrite(out, buf, CHUNK - zs.avail_out,
				outoff + done) == -1) {
				snprintf(err, errlen, "write: %s",
				    strerror(errno));
				goto out;
			}
			done += CHUNK - zs.avail_out;
		} while (zs.avail_out == 0 && zrc != Z_STREAM_END);
		if (zrc != Z_STREAM_END && used == len) {
			snprintf(err, errlen, "cut zlib stream");
			goto out;
		}
	}
	if (z && done != want) {
		snprintf(err, errlen, "inflates short of its stated size");
		goto out;
	}
	rc = 0;
out:
	if (z)
		inflateEnd(&zs);
	free(in);
	free(buf);
	return rc;
}

/* What a debug section holds: where its bytes are, inflated or not. */
struct src {
	uint64_t off, len; /* in the file */
	int z;
	uint64_t size; /* once inflated */
};

static int
section_src(int fd, struct elf_file *f, int big, const GElf_Shdr *sh,
    const char *name, struct src *s)
{
	unsigned char h[24];
	size_t n = gelf_getclass(f->elf) == ELFCLASS64 ? 24 : 12;

	s->off = sh->sh_offset;
	s->len = s->size = sh->sh_size;
	s->z = 0;
	if (sh->sh_offset > f->filesize ||
	    sh->sh_size > f->filesize - sh->sh_offset)
		return -1;
	if ((sh->sh_flags & SHF_COMPRESSED) != 0) {
		/* Elf32_Chdr or Elf64_Chdr: type, (reserved,) size. */
		if (sh->sh_size < n ||
		    pread(fd, h, n, (off_t)sh->sh_offset) != (ssize_t)n ||
		    elf_uint(h, 4, big) != ELFCOMPRESS_ZLIB)
			return -1;
		s->size =
		    n == 24 ? elf_uint(h + 8, 8, big) : elf_uint(h + 4, 4, big);
		s->off += n;
		s->len -= n;
		s->z = 1;
	} else if (strncmp(name, ".zdebug_", 8) == 0) {
		/* "ZLIB", then the size as 8 big-endian bytes. */
		if (sh->sh_size < 12 ||
		    pread(fd, h, 12, (off_t)sh->sh_offset) != 12 ||
		    memcmp(h, "ZLIB", 4) != 0)
			return -1;
		s->size = elf_uint(h + 4, 8, 1);
		s->off += 12;
		s->len -= 12;
		s->z = 1;
	}
	return 0;
}

/* The index in kept[] of a debug section's name, or -1. */
static int
kept_index(const char *name)
{
	size_t i;

	if (strncmp(name, ".debug_", 7) == 0)
		name += 7;
	else if (strncmp(name, ".zdebug_", 8) == 0)
		name += 8;
	else
		return -1;
	for (i = 0; i < KEPT_N; i++)
		if (strcmp(name, kept[i]) == 0)
			return (int)i;
	return -1;
}

struct copied {
	char name[32];
	uint64_t off, size;
};

/* The ELF header and section header table of the copy, in f's class and
 * byte order. */
static int
write_headers(struct elf_file *f, int out, const struct copied *c, size_t n,
    uint64_t strtab_off, size_t strtab_len, const uint32_t *names,
    uint32_t strtab_name, uint64_t shoff, char *err, size_t errlen)
{
	int cls = gelf_getclass(f->elf);
	size_t shnum = n + 2, i, shsz, ehsz;
	unsigned encode;
	GElf_Ehdr eh;
	Elf_Data src, dst;
	void *mem = NULL, *file = NULL;
	int rc = -1;

	if (gelf_getehdr(f->elf, &eh) == NULL) {
		snprintf(err, errlen, "bad ELF header");
		return -1;
	}
	encode = eh.e_ident[EI_DATA];
	shsz = cls == ELFCLASS64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);
	ehsz = cls == ELFCLASS64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
	if ((mem = calloc(shnum, shsz)) == NULL ||
	    (file = calloc(shnum, shsz)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (i = 0; i <= n; i++) {
		uint64_t off = i < n ? c[i].off : strtab_off;
		uint64_t size = i < n ? c[i].size : strtab_len;
		uint32_t name = i < n ? names[i] : strtab_name;
		uint32_t type = i < n ? SHT_PROGBITS : SHT_STRTAB;

		if (cls == ELFCLASS64) {
			Elf64_Shdr *s = (Elf64_Shdr *)mem + i + 1;

			s->sh_name = name;
			s->sh_type = type;
			s->sh_offset = off;
			s->sh_size = size;
			s->sh_addralign = 1;
		} else {
			Elf32_Shdr *s = (Elf32_Shdr *)mem + i + 1;

			if (off > UINT32_MAX || size > UINT32_MAX) {
				snprintf(err, errlen,
				    "sections past 4 GiB in a 32-bit file");
				goto out;
			}
			s->sh_name = name;
			s->sh_type = type;
			s->sh_offset = (Elf32_Off)off;
			s->sh_size = (Elf32_Word)size;
			s->sh_addralign = 1;
		}
	}
	src = (Elf_Data){ .d_buf = mem,
		.d_type = ELF_T_SHDR,
		.d_size = shnum * shsz,
		.d_version = EV_CURRENT };
	dst = (Elf_Data){ .d_buf = file,
		.d_size = shnum * shsz,
		.d_version = EV_CURRENT };
	if (gelf_xlatetof(f->elf, &dst, &src, encode) == NULL ||
	    file_pwrite(out, file, shnum * shsz, shoff) == -1) {
		snprintf(err, errlen, "cannot write section headers");
		goto out;
	}
	memset(mem, 0, shsz);
	if (cls == ELFCLASS64) {
		Elf64_Ehdr *e = mem;

		memcpy(e->e_ident, eh.e_ident, EI_NIDENT);
		e->e_type = eh.e_type;
		e->e_machine = eh.e_machine;
		e->e_version = EV_CURRENT;
		e->e_shoff = shoff;
		e->e_flags = eh.e_flags;
		e->e_ehsize = (Elf64_Half)ehsz;
		e->e_shentsize = (Elf64_Half)shsz;
		e->e_shnum = (Elf64_Half)shnum;
		e->e_shstrndx = (Elf64_Half)(n + 1);
	} else {
		Elf32_Ehdr *e = mem;

		if (shoff > UINT32_MAX) {
			snprintf(err, errlen,
			    "sections past 4 GiB in a "
			    "32-bit file");
			goto out;
		}
		memcpy(e->e_ident, eh.e_ident, EI_NIDENT);
		e->e_type = eh.e_type;
		e->e_machine = eh.e_machine;
		e->e_version = EV_CURRENT;
		e->e_shoff = (Elf32_Off)shoff;
		e->e_flags = eh.e_flags;
		e->e_ehsize = (Elf32_Half)ehsz;
		e->e_shentsize = (Elf32_Half)shsz;
		e->e_shnum = (Elf32_Half)shnum;
		e->e_shstrndx = (Elf32_Half)(n + 1);
	}
	src = (Elf_Data){ .d_buf = mem,
		.d_type = ELF_T_EHDR,
		.d_size = ehsz,
		.d_version = EV_CURRENT };
	dst = (Elf_Data){ .d_buf = file,
		.d_size = ehsz,
		.d_version = EV_CURRENT };
	if (gelf_xlatetof(f->elf, &dst, &src, encode) == NULL ||
	    file_pwrite(out, file, ehsz, 0) == -1) {
		snprintf(err, errlen, "cannot write the ELF header");
		goto out;
	}
	rc = 0;
out:
	free(mem);
	free(file);
	return rc;
}

/*
 * The checksum .debug_sup carries: in a file that uses a supplementary
 * (DWARF 5 dwz) file, the one it needs; in the supplementary file itself
 * (*is_sup), its own identity, since dwz gives it no build-id note.
 */
static int
debug_sup_id(Elf_Scn *scn, struct buildid *id, int *is_sup)
{
	GElf_Shdr sh;
	Elf_Data *d;
	const unsigned char *p, *end, *nul;
	uint64_t len = 0;
	unsigned shift = 0;

	if (gelf_getshdr(scn, &sh) == NULL ||
	    ((sh.sh_flags & SHF_COMPRESSED) != 0 &&
		elf_compress(scn, 0, 0) < 0) ||
	    (d = elf_getdata(scn, NULL)) == NULL || d->d_size < 4)
		return -1;
	p = d->d_buf;
	end = p + d->d_size;
	/* version (2 bytes), is_supplementary, file name, checksum. */
	*is_sup = p[2] != 0;
	if ((nul = memchr(p + 3, '\0', (size_t)(end - p - 3))) == NULL)
		return -1;
	for (p = nul + 1; p < end && shift < 64; shift += 7) {
		len |= (uint64_t)(*p & 0x7f) << shift;
		if ((*p++ & 0x80) == 0)
			break;
	}
	if (len == 0 || len > BUILDID_MAX || len > (uint64_t)(end - p))
		return -1;
	id->len = (uint8_t)len;
	memcpy(id->bytes, p, (size_t)len);
	return 0;
}

/* The .debug_sup of the file at fd: 1 with its checksum, 0: none. */
static int
file_sup(int fd, struct buildid *id, int *is_sup)
{
	struct elf_file f;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	const char *name;
	char err[128];
	int rc = 0;

	if (elf_file_open(&f, fd, err, sizeof(err)) != 0)
		return 0;
	while (rc == 0 && (scn = elf_nextscn(f.elf, scn)) != NULL)
		if (gelf_getshdr(scn, &sh) != NULL &&
		    sh.sh_type != SHT_NOBITS &&
		    (name = elf_strptr(f.elf, f.shstrndx, sh.sh_name)) !=
			NULL &&
		    strcmp(name, ".debug_sup") == 0)
			rc = debug_sup_id(scn, id, is_sup) == 0 ? 1 : 0;
	elf_file_close(&f);
	return rc;
}

/*
 * Copy the debug sections of the file at fd into a new unlinked file in
 * tmpdir: pl->fd.  with_link keeps .gnu_debugaltlink (an alt file will be
 * set); *sup gets what .debug_sup names; the inflated size of every
 * .debug_* section is added to *bytes.
 */
static int
plain_copy(struct rd *rd, int fd, const char *tmpdir, int with_link,
    struct plain *pl, struct buildid *sup, uint64_t *bytes)
{
	struct elf_file f;
	struct copied c[COPY_MAX];
	uint32_t names[COPY_MAX];
	char cname[sizeof(c[0].name)];
	char strtab[COPY_MAX * 32 + 16];
	size_t n = 0, slen = 1, i;
	uint64_t off;
	GElf_Ehdr eh;
	int big, is_sup = 0, rc = -1;
	Elf_Scn *scn = NULL;

	if (elf_file_open(&f, fd, rd->err, rd->errlen) != 0) {
		if (rd->err[0] == '\0')
			fail(rd, "%s", "not an ELF file");
		return -1;
	}
	if (gelf_getehdr(f.elf, &eh) == NULL) {
		fail(rd, "%s", "bad ELF header");
		goto out;
	}
	big = eh.e_ident[EI_DATA] == ELFDATA2MSB;
	if (sup != NULL)
		rd->big = big;
	if ((pl->fd = file_tmp_open(tmpdir, rd->err, rd->errlen)) == -1)
		goto out;
	off = gelf_getclass(f.elf) == ELFCLASS64 ? sizeof(Elf64_Ehdr)
						 : sizeof(Elf32_Ehdr);
	strtab[0] = '\0';
	while ((scn = elf_nextscn(f.elf, scn)) != NULL) {
		GElf_Shdr sh;
		const char *name;
		struct src s;
		int k;

		if (gelf_getshdr(scn, &sh) == NULL ||
		    (name = elf_strptr(f.elf, f.shstrndx, sh.sh_name)) ==
			NULL) {
			fail(rd, "%s", "bad section header");
			goto out;
		}
		if (sh.sh_type == SHT_NOBITS)
			continue;
		if (strcmp(name, ".debug_sup") == 0 && sup != NULL &&
		    (debug_sup_id(scn, sup, &is_sup) == -1 || is_sup)) {
			/* A supplementary file itself links to nothing. */
			sup->len = 0;
			if (!is_sup) {
				fail(rd, "%s", "bad .debug_sup");
				goto out;
			}
		}
		k = kept_index(name);
		if (k == -1 &&
		    !(with_link &&
			(strcmp(name, ".gnu_debugaltlink") == 0 ||
			    strcmp(name, ".debug_sup") == 0)) &&
		    !elf_is_debug_name(name))
			continue;
		if (section_src(fd, &f, big, &sh, name, &s) == -1 ||
		    s.size > SYMDWARF_SECTION_MAX) {
			snprintf(rd->err, rd->errlen,
			    "section %.64s: malformed, or over %llu bytes",
			    name, (unsigned long long)SYMDWARF_SECTION_MAX);
			goto out;
		}
		if (elf_is_debug_name(name))
			*bytes += s.size;
		if (k == -1 &&
		    !(with_link &&
			(strcmp(name, ".gnu_debugaltlink") == 0 ||
			    strcmp(name, ".debug_sup") == 0)))
			continue;
		snprintf(cname, sizeof(cname), "%s%s",
		    k >= 0 ? ".debug_" : name, k >= 0 ? kept[k] : "");
		for (i = 0; i < n; i++)
			if (strcmp(c[i].name, cname) == 0)
				break;
		/* .debug_X and .zdebug_X, or a name twice: the first.  There
		 * are COPY_MAX names, so n stays within c[]. */
		if (i < n)
			continue;
		snprintf(c[n].name, sizeof(c[n].name), "%s", cname);
		off = (off + 7) & ~(uint64_t)7;
		if (copy_bytes(fd, s.off, s.len, s.z, s.size, pl->fd, off,
			rd->err, rd->errlen) == -1)
			goto out;
		c[n].off = off;
		c[n].size = s.size;
		off += s.size;
		names[n] = (uint32_t)slen;
		slen += (size_t)snprintf(strtab + slen, sizeof(strtab) - slen,
			    "%s", c[n].name) +
		    1;
		n++;
	}
	i = slen;
	slen += (size_t)snprintf(strtab + slen, sizeof(strtab) - slen,
		    ".shstrtab") +
	    1;
	if (file_pwrite(pl->fd, strtab, slen, off) == -1) {
		fail(rd, "write: %s", strerror(errno));
		goto out;
	}
	rc = write_headers(&f, pl->fd, c, n, off, slen, names, (uint32_t)i,
	    (off + slen + 7) & ~(uint64_t)7, rd->err, rd->errlen);
out:
	elf_file_close(&f);
	return rc;
}

static void
plain_end(struct plain *pl)
{
	if (pl->dbg != NULL)
		dwarf_end(pl->dbg);
	if (pl->elf != NULL)
		elf_end(pl->elf);
	pl->dbg = NULL;
	pl->elf = NULL;
}

static int
plain_begin(struct rd *rd, struct plain *pl)
{
	if ((pl->elf = elf_begin(pl->fd, ELF_C_READ_MMAP, NULL)) == NULL ||
	    (pl->dbg = dwarf_begin_elf(pl->elf, DWARF_C_READ, NULL)) == NULL) {
		plain_end(pl);
		return fail(rd, "cannot read the DWARF: %s", dwarf_errmsg(-1));
	}
	return 0;
}

/* End the handles of both copies (if open) and begin them again. */
static int
dwarf_reopen(struct rd *rd)
{
	plain_end(&rd->main);
	plain_end(&rd->alt);
	if (plain_begin(rd, &rd->main) == -1)
		return -1;
	if (rd->have_alt) {
		if (plain_begin(rd, &rd->alt) == -1)
			return -1;
		dwarf_setalt(rd->main.dbg, rd->alt.dbg);
	}
	return 0;
}

/* ------------------------------------------------------------ the walk */

static int
rset_add(struct rset *s, uint64_t lo, uint64_t hi)
{
	if (s->n == s->cap) {
		size_t cap = s->cap == 0 ? 8 : s->cap * 2;
		struct rng *r = realloc(s->r, cap * sizeof(*r));

		if (r == NULL)
			return -1;
		s->r = r;
		s->cap = cap;
	}
	s->r[s->n].lo = lo;
	s->r[s->n].hi = hi;
	s->n++;
	return 0;
}

static int
rng_cmp(const void *a, const void *b)
{
	const struct rng *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

/*
 * The ranges of die into rd->lvl[level]: sorted, overlaps merged, cut to
 * rd->lvl[cons] when cons >= 0.  Their number (0: none), or -1.
 */
static int
die_ranges(struct rd *rd, Dwarf_Die *die, unsigned level, int cons)
{
	struct rset *s = &rd->lvl[level], *c, t;
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	size_t i, j, n;

	s->n = 0;
	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0)
		if (hi > lo && rset_add(s, lo, hi) == -1)
			return fail(rd, "%s", "out of memory");
	if (s->n == 0)
		return 0;
	qsort(s->r, s->n, sizeof(s->r[0]), rng_cmp);
	for (i = 1, n = 1; i < s->n; i++) {
		if (s->r[i].lo <= s->r[n - 1].hi) {
			if (s->r[i].hi > s->r[n - 1].hi)
				s->r[n - 1].hi = s->r[i].hi;
		} else {
			s->r[n++] = s->r[i];
		}
	}
	s->n = n;
	if (cons < 0)
		return (int)s->n;
	/* Cut to the enclosing ranges: both lists are sorted and disjoint. */
	c = &rd->lvl[cons];
	rd->cut.n = 0;
	for (i = j = 0; i < s->n && j < c->n;) {
		uint64_t a = s->r[i].lo > c->r[j].lo ? s->r[i].lo : c->r[j].lo;
		uint64_t b = s->r[i].hi < c->r[j].hi ? s->r[i].hi : c->r[j].hi;

		if (a < b && rset_add(&rd->cut, a, b) == -1)
			return fail(rd, "%s", "out of memory");
		if (s->r[i].hi < c->r[j].hi)
			i++;
		else
			j++;
	}
	t = *s;
	*s = rd->cut;
	rd->cut = t;
	return (int)s->n;
}

/*
 * The DIE a reference attribute names.  libdw (0.188 and later) looks a
 * DW_FORM_ref_sup4/8 offset up in the file itself instead of the
 * supplementary file it points into, so those are read here.
 */
static Dwarf_Die *
ref_die(struct rd *rd, Dwarf_Attribute *r, Dwarf_Die *out)
{
	size_t n;

	if (r->form != DW_FORM_ref_sup4 && r->form != DW_FORM_ref_sup8)
		return dwarf_formref_die(r, out);
	if (!rd->have_alt || r->valp == NULL)
		return NULL;
	/* libdw checked that the value lies inside its unit. */
	n = r->form == DW_FORM_ref_sup4 ? 4 : 8;
	return dwarf_offdie(rd->alt.dbg, elf_uint(r->valp, n, rd->big), out);
}

/*
 * dwarf_attr_integrate(), through ref_die(): the attribute of d or of
 * the DIEs its DW_AT_abstract_origin and DW_AT_specification lead to.
 */
static Dwarf_Attribute *
attr_integrate(struct rd *rd, Dwarf_Die *d, unsigned name, Dwarf_Attribute *a)
{
	Dwarf_Die cur = *d, next;
	Dwarf_Attribute r;
	int i;

	for (i = 0; i < 16; i++) {
		if (dwarf_attr(&cur, name, a) != NULL)
			return a;
		if ((dwarf_attr(&cur, DW_AT_abstract_origin, &r) == NULL &&
			dwarf_attr(&cur, DW_AT_specification, &r) == NULL) ||
		    ref_die(rd, &r, &next) == NULL)
			return NULL;
		cur = next;
	}
	return NULL;
}

/* The name eu-addr2line gives a scope; *plain when not a linkage name. */
static const char *
die_name(struct rd *rd, Dwarf_Die *d, int *plain)
{
	Dwarf_Attribute a;
	const char *s;

	*plain = 0;
	s = dwarf_formstring(
	    attr_integrate(rd, d, DW_AT_MIPS_linkage_name, &a));
	if (s == NULL)
		s = dwarf_formstring(
		    attr_integrate(rd, d, DW_AT_linkage_name, &a));
	if (s == NULL) {
		*plain = 1;
		s = dwarf_formstring(attr_integrate(rd, d, DW_AT_name, &a));
	}
	return s != NULL ? s : "??";
}

static uint32_t
attr_u32(Dwarf_Die *d, unsigned name, int *has)
{
	Dwarf_Attribute a;
	Dwarf_Word v;

	if (dwarf_formudata(dwarf_attr(d, name, &a), &v) != 0) {
		*has = 0;
		return 0;
	}
	*has = 1;
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static int walk(struct rd *rd, Dwarf_Die *parent, uint32_t scope, int cons,
    unsigned level);

/* A subprogram, entry point or inlined instance, and what it holds. */
static int
scope_die(struct rd *rd, Dwarf_Die *d, int tag, uint32_t scope, int cons,
    unsigned level)
{
	const struct symdwarf_sink *k = rd->sink;
	struct symdwarf_scope s;
	struct rset *r = &rd->lvl[level + 1];
	const char *name;
	uint32_t id, v;
	int n, has, plain;
	size_t i;

	n = die_ranges(rd, d, level + 1,
	    tag == DW_TAG_inlined_subroutine ? cons : -1);
	if (n <= 0)
		return n;
	memset(&s, 0, sizeof(s));
	name = die_name(rd, d, &plain);
	s.plain_nested =
	    plain && scope != 0 && tag != DW_TAG_inlined_subroutine;
	if (k->string(k->arg, name, &s.name) == -1)
		return sink_stopped(rd);
	if (tag == DW_TAG_inlined_subroutine && scope != 0) {
		s.parent = scope;
		v = attr_u32(d, DW_AT_call_file, &has);
		if (has && v < rd->nfids && rd->fids[v] != 0) {
			s.call_file = rd->fids[v];
			s.call_line = attr_u32(d, DW_AT_call_line, &has);
			s.call_column = attr_u32(d, DW_AT_call_column, &has);
		}
	}
	if (k->scope(k->arg, &s, &id) == -1)
		return sink_stopped(rd);
	for (i = 0; i < r->n; i++)
		if (k->range(k->arg, id, r->r[i].lo, r->r[i].hi) == -1)
			return sink_stopped(rd);
	return walk(rd, d, id, (int)level + 1, level + 1);
}

/*
 * The children of parent, at nesting level (the parent's + 1), inside
 * function scope (0: none), cut to the ranges at rd->lvl[cons] (-1: none).
 */
static int
walk(struct rd *rd, Dwarf_Die *parent, uint32_t scope, int cons, unsigned level)
{
	Dwarf_Die c;
	int rc, tag, n;

	if (level >= SYMDWARF_NEST_MAX)
		return 0;
	if ((rc = dwarf_child(parent, &c)) != 0)
		return rc < 0 ? fail(rd, "bad DIE tree: %s", dwarf_errmsg(-1))
			      : 0;
	do {
		switch (tag = dwarf_tag(&c)) {
		case DW_TAG_subprogram:
		case DW_TAG_entry_point:
		case DW_TAG_inlined_subroutine:
			if (scope_die(rd, &c, tag, scope, cons, level) == -1)
				return -1;
			break;
		case DW_TAG_lexical_block:
		case DW_TAG_try_block:
		case DW_TAG_catch_block:
		case DW_TAG_with_stmt:
			if ((n = die_ranges(rd, &c, level + 1, cons)) == -1 ||
			    (n > 0 &&
				walk(rd, &c, scope, (int)level + 1,
				    level + 1) == -1))
				return -1;
			break;
		case DW_TAG_namespace:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
		case DW_TAG_module:
			if (walk(rd, &c, scope, cons, level + 1) == -1)
				return -1;
			break;
		default:
			break;
		}
	} while ((rc = dwarf_siblingof(&c, &c)) == 0);
	return rc < 0 ? fail(rd, "bad DIE tree: %s", dwarf_errmsg(-1)) : 0;
}

static int
fptr_cmp(const void *a, const void *b)
{
	const struct fptr *x = a, *y = b;

	return x->p < y->p ? -1 : x->p > y->p;
}

/* The id + 1 of a file the unit names, as eu-addr2line spells it. */
static int
file_id(struct rd *rd, const char *name, uint32_t *fid)
{
	const struct symdwarf_sink *k = rd->sink;
	size_t need;

	if (name[0] != '/' && rd->comp_dir != NULL) {
		need = strlen(rd->comp_dir) + strlen(name) + 2;
		if (need > rd->pathcap) {
			char *p = realloc(rd->path, need);

			if (p == NULL)
				return fail(rd, "%s", "out of memory");
			rd->path = p;
			rd->pathcap = need;
		}
		snprintf(rd->path, need, "%s/%s", rd->comp_dir, name);
		name = rd->path;
	}
	if (k->file(k->arg, name, fid) == -1)
		return sink_stopped(rd);
	(*fid)++;
	return 0;
}

/* The unit's file table: fids by index, and by libdw's name pointers. */
static int
unit_files(struct rd *rd, Dwarf_Die *cu)
{
	Dwarf_Files *files;
	size_t n, i;
	const char *name;

	rd->nfids = rd->nfptr = 0;
	if (dwarf_getsrcfiles(cu, &files, &n) != 0)
		return 0;
	if (n > rd->capfids) {
		uint32_t *f = realloc(rd->fids, n * sizeof(*f));
		struct fptr *p = realloc(rd->fptr, n * sizeof(*p));

		if (f != NULL)
			rd->fids = f;
		if (p != NULL)
			rd->fptr = p;
		if (f == NULL || p == NULL)
			return fail(rd, "%s", "out of memory");
		rd->capfids = rd->capfptr = n;
	}
	for (i = 0; i < n; i++) {
		rd->fids[i] = 0;
		if ((name = dwarf_filesrc(files, i, NULL, NULL)) == NULL)
			continue;
		if (file_id(rd, name, &rd->fids[i]) == -1)
			return -1;
		rd->fptr[rd->nfptr].p = name;
		rd->fptr[rd->nfptr].fid = rd->fids[i];
		rd->nfptr++;
	}
	rd->nfids = n;
	if (rd->nfptr > 1)
		qsort(rd->fptr, rd->nfptr, sizeof(rd->fptr[0]), fptr_cmp);
	return 0;
}

/* The rows of the unit's line table, one per address: libdw's pick. */
static int
unit_rows(struct rd *rd, Dwarf_Die *cu)
{
	const struct symdwarf_sink *k = rd->sink;
	Dwarf_Lines *lines;
	Dwarf_Addr addr, next;
	size_t n, i;
	bool end;
	int lineno, col;

	if (dwarf_getsrclines(cu, &lines, &n) != 0)
		return 0;
	for (i = 0; i < n; i++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, i);
		const char *src;
		struct fptr key, *f;
		uint32_t fid = 0;

		if (l == NULL || dwarf_lineaddr(l, &addr) != 0)
			return fail(rd, "%s", "bad line table");
		if (i + 1 < n &&
		    dwarf_lineaddr(dwarf_onesrcline(lines, i + 1), &next) ==
			0 &&
		    next == addr)
			continue;
		if (dwarf_lineendsequence(l, &end) != 0)
			end = true;
		if (!end && (src = dwarf_linesrc(l, NULL, NULL)) != NULL) {
			key.p = src;
			f = rd->nfptr == 0 ? NULL
					   : bsearch(&key, rd->fptr, rd->nfptr,
						 sizeof(key), fptr_cmp);
			if (f != NULL)
				fid = f->fid;
			else if (file_id(rd, src, &fid) == -1)
				return -1;
		}
		if (fid == 0) {
			if (k->row(k->arg, addr, 0, 0, 0) == -1)
				return sink_stopped(rd);
			continue;
		}
		if (dwarf_lineno(l, &lineno) != 0 || lineno < 0)
			lineno = 0;
		if (dwarf_linecol(l, &col) != 0 || col < 0)
			col = 0;
		if (k->row(k->arg, addr, fid, (uint32_t)lineno,
			(uint32_t)col) == -1)
			return sink_stopped(rd);
	}
	return 0;
}

/* The addresses the unit claims, as its DIE says. */
static int
unit_ranges(struct rd *rd, Dwarf_Die *cu)
{
	const struct symdwarf_sink *k = rd->sink;
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;

	while ((off = dwarf_ranges(cu, off, &base, &lo, &hi)) > 0)
		if (hi > lo && k->unit_range(k->arg, lo, hi) == -1)
			return sink_stopped(rd);
	return 0;
}

static int
one_unit(struct rd *rd, Dwarf_Die *cu)
{
	Dwarf_Attribute a;

	rd->comp_dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &a));
	if (unit_ranges(rd, cu) == -1 || unit_files(rd, cu) == -1 ||
	    unit_rows(rd, cu) == -1 || walk(rd, cu, 0, -1, 0) == -1)
		return -1;
	rd->info->units++;
	return rd->sink->unit_end(rd->sink->arg) == -1 ? sink_stopped(rd) : 0;
}

/* Every compilation unit of the main copy, in batches. */
static int
units(struct rd *rd)
{
	Dwarf_Off off = 0, next;
	uint64_t since = 0;
	size_t hsize;
	Dwarf_Die cu;
	Dwarf_Half version;
	uint8_t type;
	int rc;

	for (;;) {
		if (since >= SYMDWARF_BATCH) {
			if (dwarf_reopen(rd) == -1)
				return -1;
			since = 0;
		}
		rc = dwarf_next_unit(rd->main.dbg, off, &next, &hsize, NULL,
		    NULL, NULL, NULL, NULL, NULL);
		if (rc == 1)
			return 0;
		if (rc != 0 || next <= off)
			return fail(rd, "bad unit header: %s",
			    dwarf_errmsg(-1));
		if (dwarf_offdie(rd->main.dbg, off + hsize, &cu) == NULL ||
		    dwarf_cu_info(cu.cu, &version, &type, NULL, NULL, NULL,
			NULL, NULL) != 0)
			return fail(rd, "bad unit: %s", dwarf_errmsg(-1));
		if (type == DW_UT_compile &&
		    dwarf_tag(&cu) == DW_TAG_compile_unit &&
		    one_unit(rd, &cu) == -1)
			return -1;
		since += next - off;
		off = next;
	}
}

/* ------------------------------------------------------------ symbols */

/* The symbols of every section of type in elf. 1 when there was one. */
static int
symbols(struct rd *rd, Elf *elf, uint32_t type)
{
	const struct symdwarf_sink *k = rd->sink;
	Elf_Scn *scn = NULL;
	int found = 0;

	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t i, n;

		if (gelf_getshdr(scn, &sh) == NULL || sh.sh_type != type ||
		    sh.sh_entsize == 0 || (d = elf_getdata(scn, NULL)) == NULL)
			continue;
		n = d->d_size / sh.sh_entsize;
		for (i = 1; i < n; i++) {
			GElf_Sym sym;
			struct symdwarf_sym s;
			const char *name;
			int t;

			if (gelf_getsym(d, (int)i, &sym) == NULL)
				break;
			t = GELF_ST_TYPE(sym.st_info);
			if (sym.st_shndx == SHN_UNDEF ||
			    sym.st_shndx >= SHN_LORESERVE || t == STT_SECTION ||
			    t == STT_FILE || t == STT_TLS ||
			    (name = elf_strptr(elf, sh.sh_link, sym.st_name)) ==
				NULL ||
			    name[0] == '\0')
				continue;
			found = 1;
			s.addr = sym.st_value;
			s.size = sym.st_size;
			s.bind = GELF_ST_BIND(sym.st_info);
			s.type = (unsigned char)t;
			if (k->string(k->arg, name, &s.name) == -1 ||
			    k->symbol(k->arg, &s) == -1)
				return sink_stopped(rd);
		}
	}
	return found;
}

/* The symbols of the executable's .gnu_debugdata (an xz'd ELF file). */
static int
minidebug_symbols(struct rd *rd, Elf *elf, size_t shstrndx)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf_Data *d = NULL;
	const char *name;
	lzma_stream z = LZMA_STREAM_INIT;
	uint8_t *out = NULL;
	size_t cap = 0;
	Elf *mini;
	int rc = 0;
	lzma_ret zr;

	while ((scn = elf_nextscn(elf, scn)) != NULL)
		if (gelf_getshdr(scn, &sh) != NULL &&
		    sh.sh_type == SHT_PROGBITS &&
		    (name = elf_strptr(elf, shstrndx, sh.sh_name)) != NULL &&
		    strcmp(name, ".gnu_debugdata") == 0)
			break;
	if (scn == NULL || sh.sh_size > MINIDEBUG_MAX ||
	    (d = elf_getdata(scn, NULL)) == NULL)
		return 0;
	if (lzma_stream_decoder(&z, MINIDEBUG_OUT_MAX, 0) != LZMA_OK)
		return fail(rd, "%s", ".gnu_debugdata: cannot start xz");
	z.next_in = d->d_buf;
	z.avail_in = d->d_size;
	do {
		if (z.total_out == cap) {
			uint8_t *p;

			cap = cap == 0 ? (1u << 20) : cap * 2;
			if (cap > MINIDEBUG_OUT_MAX ||
			    (p = realloc(out, cap)) == NULL) {
				rc = fail(rd, "%s", ".gnu_debugdata: too big");
				goto out;
			}
			out = p;
		}
		z.next_out = out + z.total_out;
		z.avail_out = cap - (size_t)z.total_out;
		zr = lzma_code(&z, LZMA_FINISH);
	} while (zr == LZMA_OK);
	if (zr != LZMA_STREAM_END) {
		rc = fail(rd, "%s", ".gnu_debugdata: bad xz stream");
		goto out;
	}
	if ((mini = elf_memory((char *)out, (size_t)z.total_out)) == NULL ||
	    elf_kind(mini) != ELF_K_ELF) {
		if (mini != NULL)
			elf_end(mini);
		rc = fail(rd, "%s", ".gnu_debugdata: not ELF");
		goto out;
	}
	rc = symbols(rd, mini, SHT_SYMTAB);
	elf_end(mini);
out:
	lzma_end(&z);
	free(out);
	return rc;
}

/* --------------------------------------------------- sections, segments */

/* The allocated executable sections of f; 1 when there was one. */
static int
exec_sections(struct rd *rd, struct elf_file *f, int *nobits)
{
	const struct symdwarf_sink *k = rd->sink;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	int found = 0;

	*nobits = 0;
	while ((scn = elf_nextscn(f->elf, scn)) != NULL) {
		if (gelf_getshdr(scn, &sh) == NULL ||
		    (sh.sh_flags & (SHF_ALLOC | SHF_EXECINSTR)) !=
			(SHF_ALLOC | SHF_EXECINSTR) ||
		    sh.sh_size == 0)
			continue;
		if (sh.sh_type == SHT_NOBITS)
			*nobits = 1;
		found = 1;
		if (k->section(k->arg, sh.sh_addr, sh.sh_size) == -1)
			return sink_stopped(rd);
	}
	return found;
}

/*
 * The PT_LOAD segments of f into info, when they map the file: inside it,
 * and the code not NOBITS (a separate debug file keeps the headers of the
 * executable it was split from, with their sizes zeroed or pointing at
 * nothing).  1 when they do.  With as_regions, the executable ones are
 * also passed to the sink as sections (a file without section headers).
 */
static int
segments(struct rd *rd, struct elf_file *f, int nobits, int as_regions)
{
	struct symdwarf_info *info = rd->info;
	size_t n, i;
	GElf_Phdr ph;
	int usable = !nobits, code = 0;

	if (elf_getphdrnum(f->elf, &n) != 0)
		return 0;
	info->nseg = 0;
	for (i = 0; i < n; i++) {
		if (gelf_getphdr(f->elf, (int)i, &ph) == NULL ||
		    ph.p_type != PT_LOAD)
			continue;
		if (ph.p_offset > f->filesize ||
		    ph.p_filesz > f->filesize - ph.p_offset ||
		    info->nseg == SYMDWARF_SEGMENTS_MAX)
			usable = 0;
		if ((ph.p_flags & PF_X) != 0 && ph.p_filesz > 0)
			code = 1;
		if (as_regions && (ph.p_flags & PF_X) != 0 && ph.p_memsz > 0 &&
		    rd->sink->section(rd->sink->arg, ph.p_vaddr, ph.p_memsz) ==
			-1)
			return sink_stopped(rd);
		if (info->nseg < SYMDWARF_SEGMENTS_MAX) {
			struct symdwarf_segment *s = &info->seg[info->nseg++];

			s->vaddr = ph.p_vaddr;
			s->memsz = ph.p_memsz;
			s->offset = ph.p_offset;
			s->filesz = ph.p_filesz;
			s->flags = ph.p_flags;
		}
	}
	if (!usable || !code)
		info->nseg = 0;
	return info->nseg > 0;
}

/* ------------------------------------------------------------- driver */

static int
check_ids(struct rd *rd, const struct symdwarf_in *in, struct buildid *link)
{
	struct elf_info *ei;
	int rc = -1;

	link->len = 0;
	if ((ei = calloc(1, sizeof(*ei))) == NULL)
		return fail(rd, "%s", "out of memory");
	if (in->debug_fd >= 0) {
		if (elf_read_info(in->debug_fd, ei, rd->err, rd->errlen) != 0 ||
		    ei->id.len == 0) {
			if (ei->id.len == 0)
				fail(rd, "%s", "the debuginfo has no build-id");
			goto out;
		}
		rd->info->id = ei->id;
		*link = ei->alt_id;
	}
	if (in->exec_fd >= 0) {
		if (elf_read_info(in->exec_fd, ei, rd->err, rd->errlen) != 0 ||
		    ei->id.len == 0) {
			if (ei->id.len == 0)
				fail(rd, "%s",
				    "the executable has no build-id");
			goto out;
		}
		if (in->debug_fd >= 0 &&
		    !buildid_equal(&ei->id, &rd->info->id)) {
			fail(rd, "%s",
			    "the executable's build-id is not the debuginfo's");
			goto out;
		}
		rd->info->id = ei->id;
	}
	rc = 0;
out:
	free(ei);
	return rc;
}

static int
check_alt(struct rd *rd, int alt_fd, const struct buildid *link)
{
	struct elf_info *ei;
	char hex[BUILDID_HEX_MAX];
	int rc = -1, is_sup = 0;

	if (link->len == 0) {
		if (alt_fd >= 0)
			return fail(rd, "%s",
			    "an alt file, but the debuginfo names none");
		return 0;
	}
	if (alt_fd < 0) {
		buildid_format(link, hex);
		return fail(rd, "the debuginfo needs its dwz alt file %s", hex);
	}
	if ((ei = calloc(1, sizeof(*ei))) == NULL)
		return fail(rd, "%s", "out of memory");
	/* A GNU alt file by its build-id; a DWARF 5 supplementary file,
	 * which has none, by the checksum in its own .debug_sup. */
	if ((elf_read_info(alt_fd, ei, rd->err, rd->errlen) == 0 &&
		buildid_equal(&ei->id, link)) ||
	    (file_sup(alt_fd, &ei->id, &is_sup) == 1 && is_sup &&
		buildid_equal(&ei->id, link))) {
		rd->info->alt_id = *link;
		rc = 0;
	} else {
		buildid_format(link, hex);
		fail(rd, "not the alt file %s", hex);
	}
	free(ei);
	return rc;
}

static void
rd_free(struct rd *rd)
{
	size_t i;

	plain_end(&rd->main);
	plain_end(&rd->alt);
	if (rd->main.fd >= 0)
		close(rd->main.fd);
	if (rd->alt.fd >= 0)
		close(rd->alt.fd);
	free(rd->fids);
	free(rd->fptr);
	free(rd->path);
	for (i = 0; i <= SYMDWARF_NEST_MAX; i++)
		free(rd->lvl[i].r);
	free(rd->cut.r);
}

/* The DWARF of the debuginfo (and alt): 1 when it has units, 0 none. */
static int
read_dwarf(struct rd *rd, const struct symdwarf_in *in, struct buildid *link)
{
	struct buildid sup = { 0 };

	if (plain_copy(rd, in->debug_fd, in->tmpdir, in->alt_fd >= 0, &rd->main,
		&sup, &rd->info->dwarf_bytes) == -1)
		return -1;
	if (link->len == 0 && sup.len > 0)
		*link = sup;
	if (check_alt(rd, in->alt_fd, link) == -1)
		return -1;
	if (in->alt_fd >= 0) {
		if (plain_copy(rd, in->alt_fd, in->tmpdir, 0, &rd->alt, NULL,
			&rd->info->dwarf_bytes) == -1)
			return -1;
		rd->have_alt = 1;
	}
	if (dwarf_reopen(rd) == -1) {
		/* A file with no DWARF libdw would read: no units. */
		rd->err[0] = '\0';
		return 0;
	}
	if (units(rd) == -1)
		return -1;
	plain_end(&rd->main);
	plain_end(&rd->alt);
	return rd->info->units > 0;
}

int
symdwarf_read(const struct symdwarf_in *in, const struct symdwarf_sink *sink,
    struct symdwarf_info *info, char *err, size_t errlen)
{
	struct rd rd;
	struct elf_file dbg, exe;
	struct buildid link;
	int have_dbg = 0, have_exe = 0, nobits = 0, found, rc = -1;

	memset(&rd, 0, sizeof(rd));
	memset(info, 0, sizeof(*info));
	rd.sink = sink;
	rd.info = info;
	rd.err = err;
	rd.errlen = errlen;
	rd.main.fd = rd.alt.fd = -1;
	err[0] = '\0';
	if (in->debug_fd < 0 && in->exec_fd < 0)
		return fail(&rd, "%s", "no file to read");
	if (check_ids(&rd, in, &link) == -1)
		return -1;
	if (in->debug_fd >= 0) {
		if (elf_file_open(&dbg, in->debug_fd, err, errlen) != 0)
			return err[0] == '\0' ? fail(&rd, "%s", "not ELF") : -1;
		have_dbg = 1;
	}
	if (in->exec_fd >= 0) {
		if (elf_file_open(&exe, in->exec_fd, err, errlen) != 0) {
			if (err[0] == '\0')
				fail(&rd, "%s", "not ELF");
			goto out;
		}
		have_exe = 1;
	}
	/* Where code is: the debuginfo's section headers, else the
	 * executable's, else its program headers. */
	found = have_dbg ? exec_sections(&rd, &dbg, &nobits) : 0;
	if (found == 0 && have_exe)
		found = exec_sections(&rd, &exe, &nobits);
	if (found == -1)
		goto out;
	if (have_exe && segments(&rd, &exe, 0, found == 0) == -1)
		goto out;
	if (info->nseg > 0)
		info->phdrs = 1;
	else if (have_dbg &&
	    segments(&rd, &dbg, nobits, !have_exe && found == 0) == 1)
		info->phdrs = 2;
	if (have_dbg) {
		if ((rc = read_dwarf(&rd, in, &link)) == -1)
			goto out;
		if (rc == 1)
			info->source = SYMDWARF_SRC_DWARF;
		rc = -1;
	}
	found = have_dbg ? symbols(&rd, dbg.elf, SHT_SYMTAB) : 0;
	if (found == 1)
		info->symsource = SYMDWARF_SRC_DEBUG_SYMTAB;
	if (found == 0 && have_exe &&
	    (found = symbols(&rd, exe.elf, SHT_SYMTAB)) == 1)
		info->symsource = SYMDWARF_SRC_EXEC_SYMTAB;
	if (found == 0 && have_exe &&
	    (found = symbols(&rd, exe.elf, SHT_DYNSYM)) >= 0) {
		int mini = minidebug_symbols(&rd, exe.elf, exe.shstrndx);

		if (mini == 1)
			info->symsource = SYMDWARF_SRC_EXEC_MINIDEBUG;
		else if (found == 1 && mini == 0)
			info->symsource = SYMDWARF_SRC_EXEC_DYNSYM;
		found = mini == -1 ? -1 : found | mini;
	}
	if (found == -1)
		goto out;
	if (info->source == SYMDWARF_SRC_NONE)
		info->source = info->symsource;
	if (info->source == SYMDWARF_SRC_NONE) {
		fail(&rd, "%s",
		    "no DWARF and no symbols: nothing to symbolize with");
		goto out;
	}
	rc = 0;
out:
	if (have_dbg)
		elf_file_close(&dbg);
	if (have_exe)
		elf_file_close(&exe);
	rd_free(&rd);
	return rc;
}
