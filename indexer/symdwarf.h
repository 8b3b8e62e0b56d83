/*
 * indexer/symdwarf.h: what a symbol table is made of, read out of a
 * debuginfo file (its DWARF, and its dwz alt file's), its .symtab, and the
 * executable's .symtab, .dynsym and .gnu_debugdata, and handed to a sink
 * as neutral records: the symbolizer (symbolizer/build.c) decides what to
 * keep and how to store it, and never sees a libdw type.
 *
 * What eu-addr2line -f -i prints is the model: a function's name is its
 * DW_AT_linkage_name (or DW_AT_MIPS_linkage_name), else DW_AT_name, looked
 * up through DW_AT_abstract_origin and DW_AT_specification; a file is the
 * line table's name as libdw spells it, joined with the unit's
 * DW_AT_comp_dir by a "/" when relative; rows are libdw's, sorted as it
 * sorts them.
 *
 * Memory stays bounded whatever the size of the DWARF: the debug sections
 * are first copied, decompressed, into an unlinked file in tmpdir, which
 * libelf maps; libdw reads them there instead of inflating them onto the
 * heap, and the handles are closed and opened again every
 * SYMDWARF_BATCH bytes of units, which gives back what libdw cached
 * (abbreviations, line tables) and the pages the mapping touched.
 *
 * Blocking (reads and writes files, decompresses); for worker threads,
 * once elf_init() has run.  No global state: calls with distinct
 * descriptors may run at once.  No file is opened by name: the alt file is
 * the caller's descriptor, checked against the build-id the debuginfo
 * names; split units (.dwo) are skipped.
 */
#ifndef INDEXER_SYMDWARF_H
#define INDEXER_SYMDWARF_H

#include <stddef.h>
#include <stdint.h>

#include "indexer/buildid.h"

/*
 * Bytes of .debug_info units read between two openings of the DWARF: on
 * libjvm.so (257 MB of units) 48 MiB peaks at 283 MB resident, 16 MiB at
 * 235 MB, 4 MiB at 208 MB (the rest is the table being built), and
 * is no slower: reopening costs less than the pages it gives back.
 */
#define SYMDWARF_BATCH ((uint64_t)4 << 20)
/* The largest debug section copied, decompressed. */
#define SYMDWARF_SECTION_MAX ((uint64_t)4 << 30)
/* Nested scopes followed below a unit's DIE; deeper ones are skipped. */
#define SYMDWARF_NEST_MAX 128

/* Where the functions (or the symbols) came from: symtab.h's values. */
enum symdwarf_source {
	SYMDWARF_SRC_NONE = 0,
	SYMDWARF_SRC_DWARF = 1,
	SYMDWARF_SRC_DEBUG_SYMTAB = 2,
	SYMDWARF_SRC_EXEC_SYMTAB = 3,
	SYMDWARF_SRC_EXEC_DYNSYM = 4,
	SYMDWARF_SRC_EXEC_MINIDEBUG = 5,
};

/* A function (subprogram, entry point) or an inlined instance. */
struct symdwarf_scope {
	uint32_t name; /* a string id */
	uint32_t parent; /* for an inlined instance, the id of the scope it
			    was inlined into; 0 for a function */
	uint32_t call_file; /* file id + 1, 0: none */
	uint32_t call_line, call_column;
	/*
	 * A function nested in another one (a member of a local class, a
	 * GNU C nested function) that the DWARF names by DW_AT_name alone,
	 * not by a linkage name: the ELF symbol's name says more.
	 */
	int plain_nested;
};

struct symdwarf_sym {
	uint64_t addr, size;
	uint32_t name; /* a string id */
	unsigned char bind, type; /* STB_*, STT_* */
};

#define SYMDWARF_SEGMENTS_MAX 64

struct symdwarf_segment {
	uint64_t vaddr, memsz, offset, filesz;
	uint32_t flags;
};

/*
 * The sink.  Every callback returns 0 to go on, -1 to stop the read (which
 * then fails with "stopped by the sink").  Calls come in this order: the
 * executable sections (section), then for each unit its scopes with their
 * ranges (a scope before its ranges and before the scopes inside it) and
 * its rows, then unit_end; then the ELF symbols.  Strings passed are valid
 * during the call only.  A unit passes its own ranges (DW_AT_ranges, or
 * DW_AT_low_pc and DW_AT_high_pc), if it has any, before its scopes.
 */
struct symdwarf_sink {
	void *arg;
	/* An id for a name; the same name always gets the same id. */
	int (*string)(void *arg, const char *s, uint32_t *id);
	/* An id for a file path (the same path, the same id). */
	int (*file)(void *arg, const char *path, uint32_t *id);
	/* An allocated, executable section: [addr, addr + size). */
	int (*section)(void *arg, uint64_t addr, uint64_t size);
	/* One range of the addresses the unit claims. */
	int (*unit_range)(void *arg, uint64_t lo, uint64_t hi);
	/* A scope; *id is the id the sink gives it (not 0). */
	int (*scope)(void *arg, const struct symdwarf_scope *s, uint32_t *id);
	/*
	 * One range of a scope, already cut to the ranges of the scopes and
	 * blocks enclosing it (an inlined instance's never reach past its
	 * caller's).  Scopes come in the order of the DIEs (preorder), so an
	 * instance inlined into another has a greater id.
	 */
	int (*range)(void *arg, uint32_t scope, uint64_t lo, uint64_t hi);
	/*
	 * One row of the unit's line table, in libdw's order, at most one
	 * per address (the one libdw would pick): file is a file id + 1, or
	 * 0 for the end of a sequence (no row from addr on).
	 */
	int (*row)(void *arg, uint64_t addr, uint32_t file, uint32_t line,
	    uint32_t column);
	int (*unit_end)(void *arg);
	int (*symbol)(void *arg, const struct symdwarf_sym *s);
};

struct symdwarf_in {
	int debug_fd; /* the debuginfo, or -1 */
	int alt_fd; /* its dwz alt file, or -1 */
	int exec_fd; /* the executable, or -1 */
	const char *tmpdir; /* for the decompressed copy; NULL: a memfd */
};

struct symdwarf_info {
	struct buildid id; /* the debuginfo's, else the executable's */
	struct buildid alt_id; /* len 0: no alt file */
	enum symdwarf_source source; /* of the functions */
	enum symdwarf_source symsource; /* of the ELF symbols */
	int phdrs; /* 0: none usable, 1: the executable's, 2: the debuginfo's */
	struct symdwarf_segment seg[SYMDWARF_SEGMENTS_MAX];
	unsigned nseg;
	uint64_t dwarf_bytes; /* .debug_* of the debuginfo and alt, inflated */
	unsigned units; /* compilation units read */
};

/*
 * Read what in names into sink, and fill info.  At least one of debug_fd
 * and exec_fd.  Both given, their build-ids must agree.  A debuginfo that
 * names a dwz alt file (.gnu_debugaltlink or .debug_sup) needs alt_fd,
 * which must carry that build-id.  Functions and lines come from the DWARF
 * when there is any; ELF symbols from the debuginfo's .symtab, else the
 * executable's .symtab, else its .dynsym with its .gnu_debugdata
 * (MiniDebugInfo) if any.  0, or -1 with err: not ELF, build-ids that
 * disagree, a missing or wrong alt file, damaged DWARF or sections, a
 * section over SYMDWARF_SECTION_MAX, nothing to make a table of, or the
 * sink said stop.
 */
int symdwarf_read(const struct symdwarf_in *in,
    const struct symdwarf_sink *sink, struct symdwarf_info *info, char *err,
    size_t errlen);

#endif /* INDEXER_SYMDWARF_H */
