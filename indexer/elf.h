/*
 * indexer/elf.h: what the server needs to know about an ELF file.
 *
 * Everything here reads with pread-backed libelf (never mmap: a file
 * truncated under us must give an error, not SIGBUS), bounds every size it
 * trusts, and runs on worker threads only.
 */
#ifndef INDEXER_ELF_H
#define INDEXER_ELF_H

#include <stddef.h>
#include <stdint.h>

#include "indexer/buildid.h"

/* Artifact kinds, as bits: an unstripped binary is both. */
enum elf_kind {
	ELF_KIND_DEBUGINFO = 1,
	ELF_KIND_EXECUTABLE = 2,
};
#define ELF_KIND_ALL (ELF_KIND_DEBUGINFO | ELF_KIND_EXECUTABLE)

/* Result of the readers besides 0 and -1. */
#define ELF_NOTFOUND 1

/* The longest .gnu_debugaltlink path kept. */
#define ELF_ALTPATH_MAX 1024

struct elf_info {
	struct buildid id; /* len 0: no GNU build-id note */
	unsigned kinds; /* ELF_KIND_* */
	struct buildid alt_id; /* len 0: no .gnu_debugaltlink */
	char alt_path[ELF_ALTPATH_MAX];
};

struct elf_section {
	uint64_t offset; /* in the file */
	uint64_t size;
};

struct Elf; /* libelf's */

/*
 * An ELF file open with libelf, with what every reader needs first: its
 * size (to bound offsets) and its section-name string table.
 */
struct elf_file {
	struct Elf *elf;
	uint64_t filesize;
	size_t shstrndx;
	size_t shnum;
};

/*
 * Open the file at fd with libelf (ELF_C_READ), its section and program
 * header tables and section-name table checked to lie inside the file.
 * Returns 0, ELF_NOTFOUND when it is not a regular file that starts like
 * ELF, or -1 with err; only 0 leaves f to elf_file_close().
 */
int elf_file_open(struct elf_file *f, int fd, char *err, size_t errlen);
void elf_file_close(struct elf_file *f);

/* Process-wide libelf set-up; call once before any thread uses the rest. */
int elf_init(void);

/* The name of a kind as the URL spells it ("debuginfo", "executable"). */
const char *elf_kind_name(enum elf_kind kind);

/* 1 when a section of that name holds DWARF (.debug_*, .zdebug_*). */
int elf_is_debug_name(const char *name);

/* The unsigned of n (at most 8) bytes at p, big- or little-endian. */
uint64_t elf_uint(const unsigned char *p, size_t n, int big);

/* 1 when the first len bytes at buf start an ELF file. */
int elf_has_magic(const void *buf, size_t len);

/*
 * Find the GNU build-id among the notes in buf[0..n), whose names and
 * descriptors are padded to align (4, or 8 in 8-aligned segments).
 * Returns 1 with *id, 0 when there is none (or the notes end malformed
 * before it), -1 when its note is of a size no build-id has.
 */
int elf_notes_buildid(const void *buf, size_t n, size_t align,
    struct buildid *id);

/*
 * Check the first len bytes of a file that should carry GNU build-id want,
 * before the rest has arrived.  -1 when they are not ELF, or when a build-id
 * note they contain names another id; 1 when such a note matches; 0 when
 * nothing can be told yet (the note lies beyond the prefix, or the file is
 * of the other byte order).
 */
int elf_prefix_check(const void *buf, size_t len, const struct buildid *want);

/*
 * Read fd's build-id, kinds and dwz alt link.  Returns 0; ELF_NOTFOUND when
 * fd is not an ELF file at all; -1 when it is ELF but malformed or
 * unreadable, with the reason in err.
 */
int elf_read_info(int fd, struct elf_info *info, char *err, size_t errlen);

/*
 * The check every artifact passes before it is cached: fd is ELF with
 * build-id want and of kind (ELF_KIND_DEBUGINFO: .debug_* sections;
 * ELF_KIND_EXECUTABLE: loadable code).  0, or -1 with why.
 */
int elf_check_artifact(int fd, const struct buildid *want, unsigned kind,
    char *why, size_t whylen);

/*
 * Find section name in fd and give its place in the file.  Only a section
 * with bytes counts: SHT_NOBITS or empty sections are ELF_NOTFOUND, so the
 * caller can fall back to another file.  -1 with err on a malformed file.
 */
int elf_find_section(int fd, const char *name, struct elf_section *sec,
    char *err, size_t errlen);

#endif /* INDEXER_ELF_H */
