/*
 * indexer/sources.h: the source files a debuginfo file names, spelled as
 * the keys /buildid/ID/source/PATH is looked up by.
 *
 * Only the unit entries and line table headers that name files are read,
 * through small windows (pread, never mmap), so memory does not grow with
 * the file: compressed debug sections are decompressed into an unlinked
 * file in tmpdir first.  No file is opened by name: not the dwz alt file a
 * .gnu_debugaltlink names (the caller finds it by build-id and hands it
 * over), not a split .dwo.  Blocking; for worker threads, once elf_init()
 * has run.
 */
#ifndef INDEXER_SOURCES_H
#define INDEXER_SOURCES_H

#include <stddef.h>

/*
 * Call cb with each source file the DWARF of the ELF file open at fd names:
 * for every compilation unit, the CU's DW_AT_name and every file of its
 * line table, joined with DW_AT_comp_dir (or the line table's include
 * directory) when relative, then canonicalised as the protocol does ("/./"
 * and "//" collapsed, "x/../" removed, never above the root); relative
 * results that cannot be made absolute are skipped.  Each path once
 * (dedupe), at most max_files paths, each < PATH_MAX.  cb returns 0 to go
 * on, non-zero to stop.  Returns 0, or -1 with err for a file whose DWARF
 * cannot be read (not ELF, no .debug_info is 0 with no calls).
 *
 * Compressed debug sections that are read are decompressed into an
 * unlinked file in tmpdir (file_tmp_open(): a memfd when tmpdir is NULL,
 * which counts against memory), at most DWR_SECTION_MAX (1 GiB) bytes
 * each; .debug_info is inflated as it is read instead, so damage found in its
 * stream ends the list there, as a malformed unit does.
 *
 * dwz moves strings that several files share, DW_AT_comp_dir among them,
 * into the alt file.  alt_fd is that file open, or -1: it must carry the
 * build-id the file's .gnu_debugaltlink names and pass the same checks,
 * else the result is -1.  Without it, attributes in the alt are skipped
 * (so are the relative names they would have made absolute) and
 * *alt_missing, when not NULL, is set to 1 if there were any.
 *
 * In detail: a file that is not ELF, or whose headers or debug sections are
 * malformed, out of the file, or larger than DWR_SECTION_MAX (also once
 * decompressed), is -1 before any call.  An ELF file without .debug_info is
 * 0 with no calls.  When the unit list or a unit's line table turns out to
 * be unreadable half-way, what could be read has been passed to cb already
 * and the result is -1.  gcc's "<built-in>" and "<artificial>" pseudo-files
 * are not sources and are skipped.  The path cb gets is valid during the
 * call only.  Only the header of a line table is read: a table whose line
 * program is damaged still lists its files.
 */
int sources_list(int fd, int alt_fd, const char *tmpdir, unsigned max_files,
    int (*cb)(const char *path, void *arg), void *arg, int *alt_missing,
    char *err, size_t errlen);

/*
 * 1 when sources_list() on the ELF file at fd reads only its line tables
 * and the strings they name (.debug_line, .debug_line_str, .debug_str),
 * never .debug_info, .debug_abbrev or .debug_str_offsets: every line table
 * is DWARF 5 and names its paths in those sections, or there is no
 * .debug_info at all.  0 otherwise, and for a file it cannot read.
 */
int sources_from_lines(int fd, const char *tmpdir);

/*
 * Canonicalise an absolute path in place, as the debuginfod protocol does for
 * /buildid/ID/source/PATH (RFC 3986 section 5.2.4): collapse "//", drop "."
 * segments, let ".." remove the segment before it, never going above "/".
 * The result never grows, has no trailing "/" (except "/" itself).  The
 * daemon's route parser must canonicalise request paths the same way, or
 * lookups miss.
 */
void sources_canonicalise(char *path);

#endif /* INDEXER_SOURCES_H */
