/*
 * indexer/dwread.h: reading the DWARF of an ELF file through small
 * windows, for readers that walk a few of its tables (indexer/sources.c).
 *
 * dwr_file_open() finds the debug sections that are read and checks each
 * to lie inside the file and to stay under DWR_SECTION_MAX, compressed or
 * not; dwr_file_load() decompresses those that are compressed (zlib,
 * SHF_COMPRESSED or .zdebug_) into an unlinked temp file, a block at a
 * time, except .debug_info, which a cursor inflates as it reads it in
 * order.  A cursor (struct dwr_cur) reads one section through a window of
 * DWR_WINDOW bytes, pread from the file: memory stays the same whatever
 * the size of the file or of its sections.  Every read is bounded by the
 * cursor's end; a read past it, or one that fails, sets bad, which sticks
 * until the next dwr_cur_seek(), and values read then are 0.
 *
 * Files are hostile: nothing here trusts an offset, a length or a form it
 * has not checked.  Blocking; for worker threads, once elf_init() has run;
 * one dwr_file and its cursors per thread.
 */
#ifndef INDEXER_DWREAD_H
#define INDEXER_DWREAD_H

#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

/* The largest debug section loaded, in the file or decompressed. */
#define DWR_SECTION_MAX ((unsigned long long)1 << 30)
/* Bytes pread at once by a cursor. */
#define DWR_WINDOW (16u << 10)

/*
 * DWARF numbers this reader needs (DWARF 5, section 7, and the GNU
 * extensions dwz and split DWARF use).
 */
enum {
	DWR_FORM_addr = 0x01,
	DWR_FORM_block2 = 0x03,
	DWR_FORM_block4 = 0x04,
	DWR_FORM_data2 = 0x05,
	DWR_FORM_data4 = 0x06,
	DWR_FORM_data8 = 0x07,
	DWR_FORM_string = 0x08,
	DWR_FORM_block = 0x09,
	DWR_FORM_block1 = 0x0a,
	DWR_FORM_data1 = 0x0b,
	DWR_FORM_flag = 0x0c,
	DWR_FORM_sdata = 0x0d,
	DWR_FORM_strp = 0x0e,
	DWR_FORM_udata = 0x0f,
	DWR_FORM_ref_addr = 0x10,
	DWR_FORM_ref1 = 0x11,
	DWR_FORM_ref2 = 0x12,
	DWR_FORM_ref4 = 0x13,
	DWR_FORM_ref8 = 0x14,
	DWR_FORM_ref_udata = 0x15,
	DWR_FORM_indirect = 0x16,
	DWR_FORM_sec_offset = 0x17,
	DWR_FORM_exprloc = 0x18,
	DWR_FORM_flag_present = 0x19,
	DWR_FORM_strx = 0x1a,
	DWR_FORM_addrx = 0x1b,
	DWR_FORM_ref_sup4 = 0x1c,
	DWR_FORM_strp_sup = 0x1d,
	DWR_FORM_data16 = 0x1e,
	DWR_FORM_line_strp = 0x1f,
	DWR_FORM_ref_sig8 = 0x20,
	DWR_FORM_implicit_const = 0x21,
	DWR_FORM_loclistx = 0x22,
	DWR_FORM_rnglistx = 0x23,
	DWR_FORM_ref_sup8 = 0x24,
	DWR_FORM_strx1 = 0x25,
	DWR_FORM_strx2 = 0x26,
	DWR_FORM_strx3 = 0x27,
	DWR_FORM_strx4 = 0x28,
	DWR_FORM_addrx1 = 0x29,
	DWR_FORM_addrx2 = 0x2a,
	DWR_FORM_addrx3 = 0x2b,
	DWR_FORM_addrx4 = 0x2c,
	DWR_FORM_GNU_addr_index = 0x1f01,
	DWR_FORM_GNU_str_index = 0x1f02,
	DWR_FORM_GNU_ref_alt = 0x1f20,
	DWR_FORM_GNU_strp_alt = 0x1f21,

	DWR_AT_name = 0x03,
	DWR_AT_stmt_list = 0x10,
	DWR_AT_comp_dir = 0x1b,
	DWR_AT_str_offsets_base = 0x72,

	DWR_TAG_compile_unit = 0x11,
	DWR_TAG_partial_unit = 0x3c,
	DWR_TAG_skeleton_unit = 0x4a,

	DWR_UT_compile = 1,
	DWR_UT_partial = 3,
	DWR_UT_skeleton = 4,
	DWR_UT_split_compile = 5,
	DWR_UT_type = 2,
	DWR_UT_split_type = 6,

	DWR_LNCT_path = 1,
	DWR_LNCT_directory_index = 2,
};

/* The sections read, by their names after ".debug_" or ".zdebug_". */
enum {
	DWR_SEC_INFO,
	DWR_SEC_ABBREV,
	DWR_SEC_LINE,
	DWR_SEC_STR,
	DWR_SEC_LINE_STR,
	DWR_SEC_STROFF,
	DWR_SEC_N
};

/* Where a section's bytes are: in the file, or decompressed into tmp. */
struct dwr_sect {
	int fd; /* -1: absent */
	uint64_t off, size;
	/* zlen > 0: a zlib stream of zlen bytes at off, inflated as read. */
	uint64_t zlen;
};

/* The DWARF of one ELF file, as far as its readers read it. */
struct dwr_file {
	int big; /* big-endian */
	int class64;
	int tmp; /* the decompressed sections, or -1 */
	uint64_t tmp_end;
	struct dwr_sect sec[DWR_SEC_N];
	/* A compressed section not decompressed yet: its zlib stream. */
	struct {
		uint64_t zoff, zlen, size;
	} z[DWR_SEC_N];
	unsigned loaded; /* 1 << section: dwr_file_load() done */
};

void dwr_file_init(struct dwr_file *d);
/* Close d's temp file, if any; d is as dwr_file_init() left it. */
void dwr_file_close(struct dwr_file *d);
/*
 * Find the sections of the ELF file at fd that are read, every debug
 * section checked first.  Compressed ones are decompressed by
 * dwr_file_load() when they are needed, but for .debug_info, which is read
 * in order and inflated as it is read.  Returns 1 when there is a
 * .debug_info to read, 0 when there is none, -1 with err.
 */
int dwr_file_open(struct dwr_file *d, int fd, char *err, size_t errlen);
/*
 * Make the sections in mask (1 << section) of d readable: decompress those
 * that are compressed into d's temporary file (file_tmp_open(tmpdir)),
 * check that string sections end in a NUL.  Each section once.
 */
int dwr_file_load(struct dwr_file *d, unsigned mask, const char *tmpdir,
    char *err, size_t errlen);

/*
 * A read position in one section, bounded by end, with a window of the
 * bytes around it.  Reads past end or failing set bad, which sticks until
 * the next dwr_cur_seek(); values read then are 0.
 */
struct dwr_cur {
	const struct dwr_sect *s;
	int big;
	uint64_t pos, end;
	uint64_t wpos;
	size_t wlen;
	int bad;
	/* A zlib stream: the window ends where inflate is. */
	z_stream *z;
	unsigned char *zin; /* ZBLOCK of compressed bytes */
	uint64_t zused; /* compressed bytes read */
	unsigned char win[DWR_WINDOW];
};

/* A cursor on s (bad when s is absent), at 0 with end 0: seek first. */
void dwr_cur_init(struct dwr_cur *c, const struct dwr_sect *s, int big);
/* Read [pos, end) of the section next; -1 (and bad) when out of it. */
int dwr_cur_seek(struct dwr_cur *c, uint64_t pos, uint64_t end);
/* Free the inflate state of a cursor on a compressed section. */
void dwr_cur_free(struct dwr_cur *c);
/* n (<= DWR_WINDOW) bytes at the cursor, which moves past them, or NULL. */
const unsigned char *dwr_cur_take(struct dwr_cur *c, size_t n);
/* An unsigned integer of n bytes, in the file's byte order. */
uint64_t dwr_cur_uint(struct dwr_cur *c, size_t n);
/* An unsigned LEB128; also skips a signed one. */
uint64_t dwr_cur_uleb(struct dwr_cur *c);
void dwr_cur_skip(struct dwr_cur *c, uint64_t n);
/*
 * The NUL-terminated string at the cursor, which moves past it, copied to
 * out (when not NULL); NULL when it does not fit in outlen or is not
 * terminated before end (bad is then set).
 */
const char *dwr_cur_str(struct dwr_cur *c, char *out, size_t outlen);
/* The string at off in c's section, into out, or NULL. */
const char *dwr_str_at(struct dwr_cur *c, uint64_t off, char *out,
    size_t outlen);
/* Read a unit or table length at c: 4, or 8 after 0xffffffff. */
uint64_t dwr_read_length(struct dwr_cur *c, unsigned *off_size);

/* What a unit's forms are read with. */
struct dwr_unit {
	unsigned version, off_size, addr_size;
	uint64_t str_base; /* of its entries in .debug_str_offsets */
};

/* Skip a value of form; -1 for a form this reader does not know. */
int dwr_skip_form(struct dwr_cur *c, unsigned form, const struct dwr_unit *u);

/* A string attribute: where its bytes are, not read yet. */
struct dwr_strref {
	enum {
		DWR_REF_NONE,
		DWR_REF_READY,
		DWR_REF_AT_LINE,
		DWR_REF_STRP,
		DWR_REF_LINE_STRP,
		DWR_REF_STRX,
		DWR_REF_ALT
	} kind;
	uint64_t v; /* an offset, or an index for DWR_REF_STRX */
	const char *s; /* DWR_REF_READY */
};

/*
 * Read a value of form at c as a string reference.  An inline string is
 * copied to buf (DWR_REF_READY), or with buf NULL remembered by its place
 * in .debug_line (DWR_REF_AT_LINE).  Forms that are no strings are skipped
 * (DWR_REF_NONE).  -1 when the value cannot be read.
 */
int dwr_read_strref(struct dwr_cur *c, unsigned form, const struct dwr_unit *u,
    struct dwr_strref *r, char *buf, size_t buflen);

#endif /* INDEXER_DWREAD_H */
