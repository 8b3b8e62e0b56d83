/*
 * indexer/symline.h: one unit's line program (.debug_line, DWARF 2 to 5)
 * run into rows, sequence by sequence, for indexer/symdwarf.c.
 *
 * libdw's dwarf_getsrclines() sorts the rows of all the unit's sequences
 * together by address and forgets which sequence each came from, so where
 * a sequence ends at an address that another sequence covers, the row the
 * ending one had there (covering no byte: a copy of a function the linker
 * discarded, pointed at the one it kept, often starts and ends at the same
 * address) can be taken for the covering one.  Read here, each row holds
 * only up to the next row of its own sequence, as the DWARF means it
 * (llvm-symbolizer looks rows up per sequence too).
 *
 * Pure: bytes in, rows out; every read is bounded by the section.  No
 * global state; any thread.
 */
#ifndef INDEXER_SYMLINE_H
#define INDEXER_SYMLINE_H

#include <stddef.h>
#include <stdint.h>

struct symline_row {
	uint64_t addr;
	uint32_t file; /* the program's file register (libdw's index) */
	uint32_t line, column;
	int end; /* no row from addr on */
};

struct symline {
	struct symline_row *r;
	size_t n, cap;
};

/*
 * The rows of the line program at off in sec (the .debug_line section,
 * len bytes; big: big-endian) that cover at least a byte, in sl (emptied
 * first): each sequence's rows in order, the last of several at one
 * address, then its end; sequences by their first address (in program
 * order among equals); a sequence that covers nothing is left out, and
 * every row starts at the lowest where the rows before it stopped holding
 * (a sequence that starts below where the previous one ended, or whose
 * addresses go back, keeps only what lies above).  Consecutive rows are
 * at increasing addresses but for an end and the next sequence's first
 * row, which may share one.  0, or -1
 * with *why: bytes this reader does not take (out of the section, an
 * unknown version, VLIW operation indexes), or no memory.
 */
int symline_read(struct symline *sl, const unsigned char *sec, size_t len,
    uint64_t off, int big, const char **why);

void symline_free(struct symline *sl);

#endif /* INDEXER_SYMLINE_H */
