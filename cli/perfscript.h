/*
 * cli/perfscript.h: what dbgmirror symbolicate --perf-script reads in the
 * text `perf script` prints, and how it writes a frame back symbolized.
 *
 * A frame is "ADDR SYMBOL (DSO)" at the end of a line: alone on a line
 * that starts with a tab for each entry of a callchain (perf record -g),
 * or after the sample's own fields (comm, tid, time, event...) when there
 * is no callchain; -F ip,sym,dso,... prints only some of those, srcline
 * and --inline add lines of their own.  Only frames perf could not name
 * ("[unknown]") in a DSO it knows are read.  Their addresses:
 *
 *   - on a callchain line, perf 4.13 to 6.4 (Debian 12 has 6.1) prints a
 *     user-space frame's address relative to its DSO, map__map_ip():
 *     ADDR - mapping start + mapping offset, i.e. an offset in the file;
 *     perf 6.5 and later print the process address there too;
 *   - the sample's own address (a line without a callchain) is always the
 *     process address;
 *   - perf 6.5's -F +dsoff prints "(DSO+0xOFFSET)", that file offset;
 *   - --show-mmap-events adds PERF_RECORD_MMAP[2] lines: "[0xSTART(0xLEN)
 *     @ 0xPGOFF ...]: PROT PATH", which map a process address to its file
 *     offset (ADDR - START + PGOFF).
 *
 * So every address becomes a file offset (the /symbolicate contract's
 * "file_offset"): a DSO offset as given; an address inside a mapping of
 * its DSO that an mmap line listed, through that mapping; any other
 * address on a callchain line as perf 4.13-6.4's offset.  A sample's own
 * address that no mmap line maps cannot be used.
 *
 * Pure functions of their input and output stream, besides the map set
 * the caller owns; one thread.
 */
#ifndef CLI_PERFSCRIPT_H
#define CLI_PERFSCRIPT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli/symout.h"
#include "indexer/buildid.h"

/* A frame perf printed without a name, as offsets into its line. */
struct perfscript_frame {
	size_t addr_at, addr_end; /* ADDR's hex digits */
	size_t sym_at, sym_end; /* "[unknown]" */
	size_t dso_at, dso_end; /* the DSO's name, without any +0xOFFSET */
	uint64_t addr;
	int has_dsoff;
	uint64_t dsoff; /* -F +dsoff: the file offset */
	int callchain; /* a callchain entry (the line starts with a tab) */
};

/*
 * 1 when line[0..len) (no newline) ends with a frame perf could not name,
 * in a DSO whose name is a path or "[vdso]", with *f set; 0 otherwise.
 */
int perfscript_frame_parse(const char *line, size_t len,
    struct perfscript_frame *f);

/* One mapping of a file, from a PERF_RECORD_MMAP or MMAP2 line. */
struct perfscript_mmap {
	uint64_t start, len, pgoff;
	size_t path_at, path_end;
};

/* 1 when line is an mmap event of --show-mmap-events, with *m; 0 if not. */
int perfscript_mmap_parse(const char *line, size_t len,
    struct perfscript_mmap *m);

/* The mappings seen so far, by file. */
struct perfscript_maps;

struct perfscript_maps *perfscript_maps_new(void);
void perfscript_maps_free(struct perfscript_maps *maps);
/* Remember m (path in line); -1 when out of memory. */
int perfscript_maps_add(struct perfscript_maps *maps, const char *line,
    const struct perfscript_mmap *m);

/*
 * The file offset of frame f of line, by the rules above.  0; -1 when it
 * is a sample's own address that no mapping of its DSO covers.
 */
int perfscript_offset(const struct perfscript_maps *maps, const char *line,
    const struct perfscript_frame *f, uint64_t *off);

/*
 * A line of `perf buildid-list` ("HEX PATH"): 1 with *id and the path's
 * place in line, 0 when it is not one.
 */
int perfscript_buildid_parse(const char *line, size_t len, struct buildid *id,
    size_t *path_at, size_t *path_end);

/*
 * Write line[0..len) and its newline to fp with frame f symbolized by a,
 * as perf script -F +srcline --inline prints a frame it can name: one
 * line per function, innermost first, the inlined ones marked
 * "(inlined)" in place of the DSO, each followed by "  FILE:LINE" when
 * the place is known; the lines after the first keep the first's
 * indentation, with the sample's fields (when the frame shares their
 * line) turned to blanks.  A frame a does not name is written unchanged.
 */
void perfscript_write(FILE *fp, const char *line, size_t len,
    const struct perfscript_frame *f, const struct symout_addr *a);

#endif /* CLI_PERFSCRIPT_H */
