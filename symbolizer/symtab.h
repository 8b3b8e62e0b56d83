/*
 * symbolizer/symtab.h: a symbol table per build-id, opened from its file
 * and asked about addresses.
 *
 * A table (symbolizer/format.h has its bytes; symbolizer/build.h makes
 * one) is mapped read-only and checked whole when it is opened: its
 * checksum, then every offset, count, index and encoded entry, so that a
 * table from a shared object store that is damaged or hostile is refused
 * there and lookups need no checks beyond their own bounds.  The file must
 * not be truncated while it is open (blobs are replaced by rename, never
 * rewritten).
 *
 * Threads: an open table is immutable; any number of threads may look up
 * in it at once with no locking.  Open and close are the owner's.
 */
#ifndef SYMBOLIZER_SYMTAB_H
#define SYMBOLIZER_SYMTAB_H

#include <stddef.h>
#include <stdint.h>

#include "indexer/buildid.h"

/* The version in the file and in the object store's key, symtab-vN. */
#define SYMTAB_VERSION 1

/* The most frames one address has: the innermost and its callers. */
#define SYMTAB_FRAMES_MAX 128

/* What a table's functions, or its ELF symbols, came from. */
enum symtab_source {
	SYMTAB_SRC_NONE = 0,
	SYMTAB_SRC_DWARF = 1, /* the debuginfo's DWARF (and its alt file) */
	SYMTAB_SRC_DEBUG_SYMTAB = 2, /* the debuginfo's .symtab */
	SYMTAB_SRC_EXEC_SYMTAB = 3, /* the executable's .symtab */
	SYMTAB_SRC_EXEC_DYNSYM = 4, /* the executable's .dynsym */
	SYMTAB_SRC_EXEC_MINIDEBUG = 5, /* .dynsym and .gnu_debugdata */
};

/* Whose program headers map file offsets, if any. */
enum symtab_phdrs {
	SYMTAB_PHDRS_NONE = 0,
	SYMTAB_PHDRS_EXEC = 1,
	SYMTAB_PHDRS_DEBUG = 2,
};

/* The name the answers use for a source ("debuginfo", ...). */
const char *symtab_source_name(enum symtab_source s);

struct symtab;

/*
 * Open the table in the file at fd (which may be closed afterwards).
 * NULL with why (a static string: "bad checksum", "not a symbol table",
 * ...) when it is not a whole, consistent table of this version.
 */
struct symtab *symtab_open(int fd, const char **why);
void symtab_close(struct symtab *t);

/* The build-id it was built for, and its dwz alt file's (len 0: none). */
void symtab_buildid(const struct symtab *t, struct buildid *id);
void symtab_altid(const struct symtab *t, struct buildid *alt);
enum symtab_source symtab_source(const struct symtab *t);
enum symtab_source symtab_symsource(const struct symtab *t);
enum symtab_phdrs symtab_phdrs(const struct symtab *t);
/* Its size in bytes, and the SHA-256 it carries (32 bytes). */
uint64_t symtab_size(const struct symtab *t);
const uint8_t *symtab_checksum(const struct symtab *t);

/* What an address is. */
enum symtab_status {
	SYMTAB_OK, /* in a function, with a line */
	SYMTAB_NO_LINE, /* in a function (or symbol), no line row */
	SYMTAB_NO_SYMBOL, /* in no function and under no symbol */
};

/*
 * One frame.  function is the raw (mangled) name, NULL when there is none
 * (SYMTAB_NO_SYMBOL); file NULL and line 0 when there is no line; column
 * 0 when the DWARF gives none.
 */
struct symtab_frame {
	const char *function;
	const char *file;
	uint32_t line, column;
	int inlined;
};

struct symtab_result {
	enum symtab_status status;
	/*
	 * The ELF symbol that covers the address, raw, with its address;
	 * for SYMTAB_NO_SYMBOL the nearest symbol below it, if any, with
	 * nearest set.  symbol NULL when there is none.
	 */
	const char *symbol;
	uint64_t sym_addr;
	int nearest;
	/* Where the line row of the address begins (0: no row). */
	uint64_t line_addr;
	/* Innermost first: an inlined frame's line is where its code is,
	 * the next frame's the call site. */
	size_t nframes;
	struct symtab_frame frames[SYMTAB_FRAMES_MAX];
};

/* Look up the ELF virtual address va.  Pure; any thread. */
void symtab_lookup(const struct symtab *t, uint64_t va,
    struct symtab_result *r);

/*
 * A file offset to the virtual address it is loaded at, through the PT_LOAD
 * segments the table carries.  0, or -1 with why (no usable program
 * headers, or an offset in no segment's file bytes).
 */
int symtab_offset_to_va(const struct symtab *t, uint64_t off, uint64_t *va,
    const char **why);

/*
 * A process address in a mapping that starts at start and maps the file
 * from map_offset (/proc/PID/maps) to the virtual address: addr - start +
 * map_offset, then as a file offset.  0, or -1 with why.
 */
int symtab_abs_to_va(const struct symtab *t, uint64_t addr, uint64_t start,
    uint64_t map_offset, uint64_t *va, const char **why);

#endif /* SYMBOLIZER_SYMTAB_H */
