/*
 * symbolizer/build.h: make the symbol table of a build-id from its
 * debuginfo (with its dwz alt file) and, or, its executable.
 *
 * Descriptors in, a descriptor out: the caller fetched the files (the
 * resolver) and publishes the result (the blob store, the object store);
 * nothing here opens a file by name, and the table that comes out is the
 * same bytes for the same inputs (the fleet compares checksums).  Memory
 * stays bounded whatever the size of the DWARF (indexer/symdwarf.h says
 * how): the debug sections are decompressed into unlinked files in tmpdir.
 *
 * Blocking, seconds for the largest files: for a worker thread, once
 * elf_init() has run.  No global state; builds of different tables may
 * run at once, each with its own memory.
 */
#ifndef SYMBOLIZER_BUILD_H
#define SYMBOLIZER_BUILD_H

#include <stddef.h>
#include <stdint.h>

struct symbuild_in {
	int debug_fd; /* the debuginfo, or -1 */
	int alt_fd; /* its dwz alt file, or -1 (needed when it names one) */
	int exec_fd; /* the executable, or -1 */
	const char *tmpdir; /* for decompressed sections; NULL: memfds */
};

struct symbuild_stats {
	uint64_t dwarf_bytes; /* the .debug_* sections read, inflated */
	uint64_t table_bytes;
	uint64_t scopes, line_entries, scope_entries, symbols;
	unsigned units;
};

/*
 * Build the table and write it to out_fd, an empty file open for reading
 * and writing (it is read back for the checksum), from offset 0.  0 with
 * *st (when not NULL), or -1 with err (what indexer/symdwarf.h's reader
 * refuses, code spread over more than 4 GiB, out of memory, a write that
 * failed); out_fd then holds nothing useful.
 */
int symbuild_run(const struct symbuild_in *in, int out_fd,
    struct symbuild_stats *st, char *err, size_t errlen);

#endif /* SYMBOLIZER_BUILD_H */
