/*
 * symbolizer/format.h: the bytes of a symbol table file (version 1), shared
 * by its writer (symbolizer/build.c) and its reader (symbolizer/symtab.c);
 * nothing else includes it.
 *
 * A table is little-endian and C-native: every structure below is its own
 * layout on disk, fields naturally aligned with no implicit padding (the
 * static assertions hold that), every section 8-aligned, so that a reader
 * that mapped the file reads it in place.
 *
 *   header        struct fmt_header: magic, version, sizes, the SHA-256 of
 *                 the file, the build-ids, where it came from, and a
 *                 directory of the sections that follow
 *   strings       NUL-terminated names and paths, each once; every name
 *                 and path elsewhere is a byte offset into it
 *   files         u32 per file: its path (as eu-addr2line prints it: the
 *                 line table's name, joined with the unit's DW_AT_comp_dir
 *                 when relative)
 *   scopes        struct fmt_scope per function or inlined instance, in
 *                 the order of the walk, so an instance's parent (the
 *                 function or instance it was inlined into) comes first
 *   symbols       struct fmt_symbol per ELF symbol in code, by address
 *   segments      struct fmt_segment per PT_LOAD, when they are real
 *   three maps    address -> line row, address -> innermost scope,
 *                 address -> the ELF symbol that covers it
 *
 * Addresses are u32 offsets from header.base: a table covers the
 * executable sections of one ELF file, [base, limit), at most 4 GiB.
 *
 * A map is a step function over [0, limit - base): entry i, at address
 * a_i with value v_i, holds for [a_i, a_i+1) (the last one up to the
 * limit); below the first entry there is nothing.  Entries come in blocks
 * of FMT_BLOCK: keys[b] is the address of block b's first entry, offs[b]
 * the offset of its bytes in data (offs[nblocks] is the size of data).  A
 * lookup finds the block by binary search over keys and decodes at most
 * FMT_BLOCK entries.  Within a block, every entry after the first starts
 * with the ULEB128 distance from the previous address (at least 1); then
 * its value:
 *
 *   scope and symbol maps: the index + 1 of a scope or symbol, 0 for none;
 *     the first entry as ULEB128, the next ones as the SLEB128 difference
 *     from the previous value;
 *   line map: ULEB128 tag: 0 no row (a gap), 1 the same file as the
 *     previous entry of the block, n >= 2 file n - 2; after a tag other
 *     than 0, the SLEB128 difference of the line from the previous row's
 *     of the block (0 at its start) and the ULEB128 column (0: none).
 *
 * The reader checks all of it when it opens a table (symtab.c), so that a
 * lookup never leaves the mapping whatever the bytes were.
 */
#ifndef SYMBOLIZER_FORMAT_H
#define SYMBOLIZER_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define FMT_MAGIC "DBGMSYMT"
#define FMT_VERSION 1
#define FMT_BLOCK 16
#define FMT_ALIGN 8
/* Scopes in one chain, the innermost included. */
#define FMT_DEPTH_MAX 128
#define FMT_ID_MAX 64

enum fmt_sect {
	FMT_STRINGS,
	FMT_FILES,
	FMT_SCOPES,
	FMT_SYMBOLS,
	FMT_SEGMENTS,
	FMT_LINE_KEYS,
	FMT_LINE_OFFS,
	FMT_LINE_DATA,
	FMT_SCOPE_KEYS,
	FMT_SCOPE_OFFS,
	FMT_SCOPE_DATA,
	FMT_SYM_KEYS,
	FMT_SYM_OFFS,
	FMT_SYM_DATA,
	FMT_SECT_COUNT
};

/* Where a section is; count is its entries (a map's data: its entries). */
struct fmt_dirent {
	uint64_t offset;
	uint64_t size;
	uint64_t count;
};

struct fmt_header {
	char magic[8];
	uint32_t version;
	uint32_t header_size;
	uint64_t file_size;
	uint8_t checksum[32]; /* SHA-256 of the file, these 32 bytes zero */
	uint64_t base, limit;
	uint8_t id_len, alt_len;
	uint8_t source; /* enum symtab_source: what the functions came from */
	uint8_t symsource; /* the ELF symbols' source, 0: none */
	uint8_t phdrs; /* enum symtab_phdrs */
	uint8_t pad[3];
	uint32_t block; /* FMT_BLOCK */
	uint32_t pad2;
	uint8_t id[FMT_ID_MAX];
	uint8_t alt[FMT_ID_MAX];
	struct fmt_dirent dir[FMT_SECT_COUNT];
};

struct fmt_scope {
	uint32_t name; /* string */
	uint32_t parent; /* scope index + 1 of the caller; 0: a function */
	uint32_t call_file; /* file index + 1, 0: none */
	uint32_t call_line;
	uint32_t call_column;
};

struct fmt_symbol {
	uint32_t addr; /* from base */
	uint32_t size;
	uint32_t name;
	uint8_t bind; /* STB_* */
	uint8_t type; /* STT_* */
	uint16_t pad;
};

struct fmt_segment {
	uint64_t vaddr, memsz, offset, filesz;
	uint32_t flags; /* PF_* */
	uint32_t pad;
};

_Static_assert(sizeof(struct fmt_dirent) == 24, "fmt_dirent layout");
_Static_assert(offsetof(struct fmt_header, base) == 56, "fmt_header layout");
_Static_assert(offsetof(struct fmt_header, id) == 88, "fmt_header layout");
_Static_assert(offsetof(struct fmt_header, dir) == 216, "fmt_header layout");
_Static_assert(sizeof(struct fmt_header) == 216 + 24 * FMT_SECT_COUNT,
    "fmt_header layout");
_Static_assert(sizeof(struct fmt_scope) == 20, "fmt_scope layout");
_Static_assert(sizeof(struct fmt_symbol) == 16, "fmt_symbol layout");
_Static_assert(sizeof(struct fmt_segment) == 40, "fmt_segment layout");

#endif /* SYMBOLIZER_FORMAT_H */
