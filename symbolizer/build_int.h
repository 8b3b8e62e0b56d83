/*
 * symbolizer/build_int.h: what the files of the symbol table builder
 * share; nothing else includes it.
 *
 * symbolizer/build.c is the builder: the sink of indexer/symdwarf.h's
 * records, which turns each unit's into runs of intervals, and
 * symbuild_run.  It calls the rest, which never calls it back:
 * symbolizer/maps.c (the units' runs cut to the addresses each unit owns,
 * merged and encoded into the table's maps), symbolizer/elfsyms.c (which
 * ELF symbol covers each address), symbolizer/writer.c (the file, its
 * checksum); all of them use symbolizer/intervals.c (growable arrays, the
 * executable sections, intervals flattened, sets of ids, range events).
 *
 * Single-threaded: one build, one struct bld.
 */
#ifndef SYMBOLIZER_BUILD_INT_H
#define SYMBOLIZER_BUILD_INT_H

#include <stddef.h>
#include <stdint.h>

#include "indexer/symdwarf.h"
#include "symbolizer/format.h"

/* A growable array of n elements of elt bytes. */
struct vec {
	void *p;
	size_t n, cap;
};

/* Strings, each once: an open-addressing set of offsets into the table. */
struct strtab {
	struct vec bytes;
	uint32_t *slot; /* offset + 1, 0: empty */
	size_t cap; /* a power of two */
	size_t n;
};

/* A u32 -> u32 map (a file's string offset -> its index). */
struct idmap {
	uint32_t *key, *val; /* key + 1, 0: empty */
	size_t cap, n;
};

struct sec {
	uint64_t lo, hi;
};

struct urange {
	uint64_t lo, hi;
	uint32_t id;
};

/* A function named by DW_AT_name alone, nested in another: its entry. */
struct plain {
	uint32_t id;
	uint64_t entry;
};

struct urow {
	uint64_t addr;
	uint32_t file, line, column;
};

/* Intervals [start, end) of offsets from base; both start with them. */
struct iv_line {
	uint32_t start, end;
	uint32_t file, line, column;
};

struct iv_id {
	uint32_t start, end;
	uint32_t id;
};

struct run {
	size_t first, n;
};

struct bsym {
	uint64_t addr, size;
	uint32_t name;
	uint8_t bind, type;
	uint32_t order;
};

/* A map being encoded. */
struct mapenc {
	int line; /* a line map, else an id map */
	struct vec keys, offs, data;
	uint64_t count;
	unsigned inblock;
	uint32_t addr, id, file, lineno;
	int file_set;
};

struct bld {
	struct strtab str;
	struct vec files; /* u32 string offsets */
	struct idmap filemap;
	struct vec secs; /* struct sec */
	int prepared;
	uint64_t base, limit;
	struct vec scopes; /* struct fmt_scope */
	struct vec ur, uw; /* the unit's urange, urow */
	struct vec lines, lruns; /* iv_line, run */
	struct vec ids, sruns; /* iv_id, run */
	struct vec cur; /* the unit's own ranges: struct sec */
	struct vec claims; /* iv_id: every unit's ranges, id its index */
	struct vec syms; /* bsym */
	struct vec plains; /* struct plain */
	struct mapenc lmap, smap, ymap;
	struct vec symout; /* fmt_symbol */
	char *err;
	size_t errlen;
};

/* A set of scope numbers, as a bitmap with a summary of its words. */
struct bits {
	uint64_t *w, *sum;
	size_t nw, nsum;
	uint32_t base;
};

/* Where a range starts or ends, for the sweeps over them. */
struct event {
	uint64_t addr;
	uint32_t id;
	int open; /* 1: a range starts, 0: one ends */
};

/* The merge's consumer: clips overlaps, fills gaps, encodes. */
struct take {
	struct bld *b;
	struct mapenc *m;
	int any;
	uint32_t end;
	const struct iv_line *prev_line;
	uint32_t prev_id;
};

/* symbolizer/intervals.c */

/* A new element at the end of v (elt bytes each), NULL: no memory. */
void *bld_vec_push(struct vec *v, size_t elt);
/* Append n bytes (a vector of bytes). */
int bld_vec_append(struct vec *v, const void *p, size_t n);
void bld_vec_free(struct vec *v);
/* qsort, for arrays that may be empty (and NULL). */
void bld_sort(void *p, size_t n, size_t elt,
    int (*cmp)(const void *, const void *));
/* Says "out of memory" in b's error; -1. */
int bld_nomem(struct bld *b);
/* Sort and merge the sections; base and limit.  Once, at first need. */
int bld_prepare(struct bld *b);
/* The section that holds addr, or NULL. */
const struct sec *bld_sec_find(const struct bld *b, uint64_t addr);
/* Keep [lo, *hi) only from inside a section, cut at its end: 1, else 0. */
int bld_clip(const struct bld *b, uint64_t lo, uint64_t *hi);
/* Append an id interval to the run r of v, joining a neighbour. */
int bld_put_id(struct bld *b, struct vec *v, const struct run *r, uint64_t lo,
    uint64_t hi, uint32_t id);
/* Ranges r[0..n), sorted by start, into one run of v where the range
 * that starts last wins. */
int bld_flatten(struct bld *b, struct urange *r, size_t n, struct vec *v,
    struct vec *runs);
void bld_bits_set(struct bits *s, uint32_t id, int on);
/* The first member at or above id, or 0. */
uint32_t bld_bits_next(const struct bits *s, uint64_t id);
/* Events by address, ends first, then by id. */
int bld_event_cmp(const void *x, const void *y);

/* symbolizer/maps.c */

/* Every unit's line and scope intervals cut to the addresses it owns. */
int bld_ownership(struct bld *b);
int bld_encode_lines(struct bld *b);
int bld_encode_scopes(struct bld *b);
/* The k-way merge of runs of intervals, each handed to take(). */
int bld_kmerge(struct bld *b, const struct vec *items, size_t elt,
    const struct vec *runs, int (*take)(void *arg, const void *item),
    void *arg);
/* bld_kmerge's taker of id intervals (struct iv_id) into t->m. */
int bld_take_id(void *arg, const void *item);
/* The end of a merged map (line: a line map). */
int bld_take_end(struct take *t, int line);
void bld_enc_free(struct mapenc *m);

/* symbolizer/elfsyms.c */

/* Which symbol covers each address, into b->ymap and b->symout. */
int bld_encode_symbols(struct bld *b);

/* symbolizer/writer.c */

/* The table into fd, its size in *size. */
int bld_write_table(struct bld *b, const struct symdwarf_info *info, int fd,
    uint64_t *size);

#endif /* SYMBOLIZER_BUILD_INT_H */
