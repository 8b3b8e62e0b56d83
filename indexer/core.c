/*
 * indexer/core.c: the mapped objects of a core file and their build-ids.
 *
 * The core's PT_NOTE segments hold NT_FILE (the files mapped: start, end
 * and page offset of each mapping, then their names) and NT_AUXV (the
 * vDSO's address).  An object mapped from its first byte has its ELF
 * header at the start of the mapping; when the kernel saved that memory
 * (coredump_filter keeps ELF headers by default) its program headers and
 * build-id note are read back from the PT_LOAD segments of the core, at
 * the object's load address plus their own.  Nothing is taken on trust:
 * each read is bounded by the segment that holds it and the file's size.
 */
#include "indexer/core.h"

#include <sys/stat.h>

#include <elf.h>
#include <endian.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "indexer/elf.h"

#ifndef NT_FILE
#define NT_FILE 0x46494c45
#endif
#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

/* The largest note segment of a core read (NT_FILE of a big process). */
#define CORE_NOTES_MAX (64u << 20)
/* Bytes of an object's first page(s) read for its headers. */
#define HEAD_MAX (64u << 10)
/* The largest note segment of a mapped object read. */
#define OBJ_NOTES_MAX (64u << 10)

struct core {
	int fd;
	uint64_t filesize;
	int cls;
	GElf_Phdr *loads;
	size_t nloads;
	unsigned char *head; /* HEAD_MAX bytes: an object's headers */
	unsigned char *notes; /* OBJ_NOTES_MAX bytes: its notes */
};

/* Bytes of the process's memory at vaddr saved in the core, up to len. */
static size_t
core_read(const struct core *c, uint64_t vaddr, void *buf, size_t len)
{
	const GElf_Phdr *p;
	uint64_t in, n;
	ssize_t r;
	size_t i;

	for (i = 0; i < c->nloads; i++) {
		p = &c->loads[i];
		if (vaddr < p->p_vaddr || vaddr - p->p_vaddr >= p->p_filesz)
			continue;
		in = vaddr - p->p_vaddr;
		n = p->p_filesz - in;
		if (n > len)
			n = len;
		if (p->p_offset > c->filesize || in > c->filesize - p->p_offset)
			return 0;
		if (n > c->filesize - p->p_offset - in)
			n = c->filesize - p->p_offset - in;
		r = pread(c->fd, buf, (size_t)n, (off_t)(p->p_offset + in));
		return r > 0 ? (size_t)r : 0;
	}
	return 0;
}

/*
 * The build-id of the ELF object whose header the process had at start;
 * returns what core_module.elf says.
 */
static int
object_buildid(const struct core *c, uint64_t start, uint64_t pagesz,
    struct buildid *id)
{
	unsigned char *head = c->head, *notes = c->notes;
	uint64_t bias = 0;
	GElf_Ehdr eh;
	GElf_Phdr ph;
	size_t n, i, phnum, got;
	int have_bias = 0;
	Elf *e;

	id->len = 0;
	n = core_read(c, start, head, HEAD_MAX);
	if (n < SELFMAG)
		return -1;
	if (!elf_has_magic(head, n))
		return 0;
	if ((e = elf_memory((char *)head, n)) == NULL)
		return 1;
	if (gelf_getehdr(e, &eh) == NULL || elf_getphdrnum(e, &phnum) != 0 ||
	    eh.e_phentsize == 0 || eh.e_phoff > n ||
	    phnum > (n - eh.e_phoff) / eh.e_phentsize) {
		elf_end(e);
		return 1;
	}
	/* Where the mapping from offset 0 (the first PT_LOAD) was put. */
	for (i = 0; i < phnum && !have_bias; i++) {
		if (gelf_getphdr(e, (int)i, &ph) != NULL &&
		    ph.p_type == PT_LOAD) {
			bias = start - (ph.p_vaddr & ~(pagesz - 1));
			have_bias = 1;
		}
	}
	for (i = 0; have_bias && i < phnum && id->len == 0; i++) {
		if (gelf_getphdr(e, (int)i, &ph) == NULL ||
		    ph.p_type != PT_NOTE || ph.p_filesz > OBJ_NOTES_MAX)
			continue;
		got =
		    core_read(c, bias + ph.p_vaddr, notes, (size_t)ph.p_filesz);
		/* Sets id only when it finds one, which ends the loop. */
		if (got == ph.p_filesz)
			(void)elf_notes_buildid(notes, got,
			    ph.p_align == 8 ? 8 : 4, id);
	}
	elf_end(e);
	return 1;
}

/* A word of the core's class at p. */
static uint64_t
word_at(const struct core *c, const unsigned char *p)
{
	uint32_t w32;
	uint64_t w64;

	if (c->cls == ELFCLASS64) {
		memcpy(&w64, p, sizeof(w64));
		return w64;
	}
	memcpy(&w32, p, sizeof(w32));
	return w32;
}

/* The objects of one NT_FILE note desc[0..n). */
static void
nt_file(const struct core *c, const unsigned char *d, size_t n,
    core_module_fn fn, void *arg)
{
	size_t w = c->cls == ELFCLASS64 ? 8 : 4, i, j, len;
	uint64_t count, pagesz, start, ofs;
	const char *name = (const char *)d, *end = (const char *)d + n;
	struct core_module m;

	if (n < 2 * w)
		return;
	count = word_at(c, d);
	pagesz = word_at(c, d + w);
	if (pagesz == 0 || (pagesz & (pagesz - 1)) != 0 ||
	    count > (n - 2 * w) / (3 * w))
		return;
	name += 2 * w + count * 3 * w;
	for (i = 0; i < count && name < end; i++) {
		if ((len = strnlen(name, (size_t)(end - name))) ==
		    (size_t)(end - name))
			return;
		start = word_at(c, d + 2 * w + i * 3 * w);
		ofs = word_at(c, d + 2 * w + i * 3 * w + 2 * w);
		/* Its first mapping from offset 0, once per name. */
		if (ofs == 0) {
			const char *prev =
			    (const char *)d + 2 * w + count * 3 * w;

			for (j = 0; j < i; j++) {
				if (strcmp(prev, name) == 0 &&
				    word_at(c, d + 2 * w + j * 3 * w + 2 * w) ==
					0)
					break;
				prev += strlen(prev) + 1;
			}
			if (j == i) {
				memset(&m, 0, sizeof(m));
				m.start = start;
				m.path = name;
				m.elf = object_buildid(c, start, pagesz, &m.id);
				fn(&m, arg);
			}
		}
		name += len + 1;
	}
}

/* The vDSO named by an NT_AUXV note desc[0..n). */
static void
nt_auxv(const struct core *c, const unsigned char *d, size_t n,
    core_module_fn fn, void *arg)
{
	size_t w = c->cls == ELFCLASS64 ? 8 : 4, i;
	struct core_module m;

	for (i = 0; i + 2 * w <= n; i += 2 * w) {
		if (word_at(c, d + i) != AT_SYSINFO_EHDR)
			continue;
		memset(&m, 0, sizeof(m));
		m.start = word_at(c, d + i + w);
		m.path = "[vdso]";
		m.elf = object_buildid(c, m.start, 4096, &m.id);
		if (m.id.len > 0)
			fn(&m, arg);
		return;
	}
}

/* Walk one PT_NOTE segment of the core. */
static void
core_notes(const struct core *c, const unsigned char *p, size_t n,
    core_module_fn fn, void *arg)
{
	Elf32_Nhdr nh;
	size_t off = 0, name, desc;

	while (n - off >= sizeof(nh)) {
		memcpy(&nh, p + off, sizeof(nh));
		off += sizeof(nh);
		name = ((size_t)nh.n_namesz + 3) & ~(size_t)3;
		desc = ((size_t)nh.n_descsz + 3) & ~(size_t)3;
		if (name > n - off || nh.n_descsz > n - off - name)
			return;
		if (nh.n_namesz == 5 && memcmp(p + off, "CORE", 5) == 0) {
			if (nh.n_type == NT_FILE)
				nt_file(c, p + off + name, nh.n_descsz, fn,
				    arg);
			else if (nh.n_type == NT_AUXV)
				nt_auxv(c, p + off + name, nh.n_descsz, fn,
				    arg);
		}
		if (desc > n - off - name)
			return;
		off += name + desc;
	}
}

int
core_modules(int fd, core_module_fn fn, void *arg, char *err, size_t errlen)
{
	struct elf_file ef;
	struct core c;
	GElf_Ehdr eh;
	GElf_Phdr ph;
	unsigned char *notes;
	size_t phnum, i;
	int rc;

	if ((rc = elf_file_open(&ef, fd, err, errlen)) != 0)
		return rc;
	memset(&c, 0, sizeof(c));
	c.fd = fd;
	c.filesize = ef.filesize;
	c.cls = gelf_getclass(ef.elf);
	if (gelf_getehdr(ef.elf, &eh) == NULL || eh.e_type != ET_CORE) {
		elf_file_close(&ef);
		return ELF_NOTFOUND;
	}
	rc = -1;
	if (eh.e_ident[EI_DATA] !=
	    (__BYTE_ORDER == __LITTLE_ENDIAN ? ELFDATA2LSB : ELFDATA2MSB)) {
		snprintf(err, errlen, "a core of the other byte order");
		goto out;
	}
	if ((c.head = malloc(HEAD_MAX)) == NULL ||
	    (c.notes = malloc(OBJ_NOTES_MAX)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (elf_getphdrnum(ef.elf, &phnum) != 0 ||
	    (c.loads = calloc(phnum + 1, sizeof(*c.loads))) == NULL) {
		snprintf(err, errlen, "bad program headers: %s",
		    elf_errmsg(-1));
		goto out;
	}
	for (i = 0; i < phnum; i++)
		if (gelf_getphdr(ef.elf, (int)i, &ph) != NULL &&
		    ph.p_type == PT_LOAD)
			c.loads[c.nloads++] = ph;
	for (i = 0; i < phnum; i++) {
		if (gelf_getphdr(ef.elf, (int)i, &ph) == NULL ||
		    ph.p_type != PT_NOTE)
			continue;
		if (ph.p_filesz > CORE_NOTES_MAX || ph.p_offset > c.filesize ||
		    ph.p_filesz > c.filesize - ph.p_offset) {
			snprintf(err, errlen, "a note segment out of bounds");
			goto out;
		}
		if ((notes = malloc(ph.p_filesz + 1)) == NULL) {
			snprintf(err, errlen, "out of memory");
			goto out;
		}
		if (pread(fd, notes, ph.p_filesz, (off_t)ph.p_offset) ==
		    (ssize_t)ph.p_filesz)
			core_notes(&c, notes, ph.p_filesz, fn, arg);
		free(notes);
	}
	rc = 0;
out:
	free(c.loads);
	free(c.head);
	free(c.notes);
	elf_file_close(&ef);
	return rc;
}
