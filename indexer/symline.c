/*
 * indexer/symline.c: one unit's line program run into rows, sequence by
 * sequence (indexer/symline.h).
 *
 * The program is run as DWARF 5 section 6.2 says (with one operation per
 * instruction, as every target but IA-64 has) into the rows of each
 * sequence in order.  A row holds from its address up to the next row of
 * its sequence: one followed by a row at the same or a lower address
 * holds nothing and is dropped, as is a sequence left with no row.  The
 * sequences are then put in order of their first address and written out
 * one after the other, each cut to start where the previous one ended.
 */
#include "indexer/symline.h"

#include <stdlib.h>
#include <string.h>

struct cur {
	const unsigned char *p, *end;
	int big;
	int bad;
};

/* A sequence's kept rows: [first, first + n) of the kept array. */
struct seq {
	uint64_t start; /* its first row's address */
	size_t first, n;
	size_t order; /* in the program */
};

static uint64_t
get_n(struct cur *c, size_t n)
{
	uint64_t v = 0;
	size_t i;

	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = 1;
		return 0;
	}
	for (i = 0; i < n; i++)
		v |= (uint64_t)c->p[i] << (8 * (c->big ? n - 1 - i : i));
	c->p += n;
	return v;
}

/* A LEB128's bits; *shift ends past them, *last is its last byte. */
static uint64_t
leb(struct cur *c, unsigned *shift, unsigned char *last)
{
	uint64_t v = 0;
	unsigned char b;

	*shift = 0;
	do {
		if (c->bad || c->p >= c->end) {
			c->bad = 1;
			*last = 0;
			return 0;
		}
		b = *c->p++;
		if (*shift < 64)
			v |= (uint64_t)(b & 0x7f) << *shift;
		*shift += 7;
	} while (b & 0x80);
	*last = b;
	return v;
}

static uint64_t
uleb(struct cur *c)
{
	unsigned shift;
	unsigned char last;

	return leb(c, &shift, &last);
}

static int64_t
sleb(struct cur *c)
{
	unsigned shift;
	unsigned char last;
	uint64_t v = leb(c, &shift, &last);

	if (shift < 64 && (last & 0x40))
		v |= ~(uint64_t)0 << shift;
	return (int64_t)v;
}

static int
push(struct symline *sl, const struct symline_row *r)
{
	if (sl->n == sl->cap) {
		size_t cap = sl->cap == 0 ? 256 : sl->cap * 2;
		struct symline_row *p = realloc(sl->r, cap * sizeof(*p));

		if (p == NULL)
			return -1;
		sl->r = p;
		sl->cap = cap;
	}
	sl->r[sl->n++] = *r;
	return 0;
}

/* The registers as a row. */
static struct symline_row
row_of(uint64_t addr, uint64_t file, int64_t line, uint64_t column, int end)
{
	struct symline_row r;

	r.addr = addr;
	r.file = file > UINT32_MAX ? 0 : (uint32_t)file;
	r.line = line < 0 || line > UINT32_MAX ? 0 : (uint32_t)line;
	r.column = column > UINT32_MAX ? 0 : (uint32_t)column;
	r.end = end;
	return r;
}

struct header {
	unsigned min_inst;
	int line_base;
	unsigned line_range, opcode_base;
	const unsigned char *lengths; /* of standard opcodes 1 .. base - 1 */
};

/* The header of the program at off: c is left on its opcodes. */
static int
header(struct cur *c, const unsigned char *sec, size_t len, uint64_t off,
    struct header *h, const char **why)
{
	uint64_t unit, hlen;
	unsigned version, offsz = 4;
	const unsigned char *start;

	*why = "line program out of its section";
	if (off >= len)
		return -1;
	c->p = sec + off;
	c->end = sec + len;
	unit = get_n(c, 4);
	if (unit == 0xffffffff) {
		unit = get_n(c, 8);
		offsz = 8;
	} else if (unit >= 0xfffffff0) {
		c->bad = 1;
	}
	if (c->bad || unit > (uint64_t)(c->end - c->p))
		return -1;
	c->end = c->p + unit;
	version = (unsigned)get_n(c, 2);
	if (!c->bad && (version < 2 || version > 5)) {
		*why = "unknown line table version";
		return -1;
	}
	if (version >= 5)
		get_n(c, 2); /* address and segment selector sizes */
	hlen = get_n(c, offsz);
	start = c->p;
	h->min_inst = (unsigned)get_n(c, 1);
	if (version >= 4 && get_n(c, 1) != 1 && !c->bad) {
		*why = "line table of several operations per instruction";
		return -1;
	}
	get_n(c, 1); /* default_is_stmt */
	h->line_base = (int)(signed char)get_n(c, 1);
	h->line_range = (unsigned)get_n(c, 1);
	h->opcode_base = (unsigned)get_n(c, 1);
	h->lengths = c->p;
	if (c->bad || h->line_range == 0 || h->opcode_base == 0 ||
	    (size_t)(c->end - c->p) < h->opcode_base - 1 ||
	    hlen > (uint64_t)(c->end - start)) {
		*why = "bad line table header";
		return -1;
	}
	c->p = start + hlen;
	return 0;
}

/* Run the program into sl: every row of every sequence, in order. */
static int
run(struct cur *c, const struct header *h, struct symline *sl, const char **why)
{
	uint64_t addr = 0, file = 1, column = 0, n;
	int64_t line = 1;
	struct symline_row r;
	unsigned op, adj, i;

	while (c->p < c->end && !c->bad) {
		op = *c->p++;
		if (op >= h->opcode_base) {
			adj = op - h->opcode_base;
			addr += (uint64_t)(adj / h->line_range) * h->min_inst;
			line += h->line_base + (int)(adj % h->line_range);
			r = row_of(addr, file, line, column, 0);
			if (push(sl, &r) == -1)
				goto nomem;
			continue;
		}
		switch (op) {
		case 0: /* extended */
			n = uleb(c);
			if (c->bad || n > (uint64_t)(c->end - c->p)) {
				c->bad = 1;
				break;
			}
			if (n == 0)
				continue;
			op = *c->p++;
			n--;
			if (op == 1) { /* DW_LNE_end_sequence */
				r = row_of(addr, file, line, column, 1);
				if (push(sl, &r) == -1)
					goto nomem;
				addr = 0;
				file = 1;
				line = 1;
				column = 0;
			} else if (op == 2) { /* DW_LNE_set_address */
				if (n == 0 || n > 8) {
					c->bad = 1;
					break;
				}
				addr = get_n(c, (size_t)n);
				continue;
			}
			c->p += n;
			break;
		case 1: /* DW_LNS_copy */
			r = row_of(addr, file, line, column, 0);
			if (push(sl, &r) == -1)
				goto nomem;
			break;
		case 2: /* DW_LNS_advance_pc */
			addr += uleb(c) * h->min_inst;
			break;
		case 3: /* DW_LNS_advance_line */
			line += sleb(c);
			break;
		case 4: /* DW_LNS_set_file */
			file = uleb(c);
			break;
		case 5: /* DW_LNS_set_column */
			column = uleb(c);
			break;
		case 8: /* DW_LNS_const_add_pc */
			addr +=
			    (uint64_t)((255 - h->opcode_base) / h->line_range) *
			    h->min_inst;
			break;
		case 9: /* DW_LNS_fixed_advance_pc */
			addr += get_n(c, 2);
			break;
		default: /* flags and the rest: skip their operands */
			for (i = 0; i < h->lengths[op - 1]; i++)
				uleb(c);
			break;
		}
	}
	if (c->bad) {
		*why = "line program out of its unit";
		return -1;
	}
	return 0;
nomem:
	*why = "out of memory";
	return -1;
}

static int
seq_cmp(const void *a, const void *b)
{
	const struct seq *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/*
 * The rows that hold bytes, moved to the front of sl->r in place (a row
 * is never written past where it was read), with the sequences they
 * make in *seqs.
 */
static int
keep(struct symline *sl, struct seq **seqs, size_t *nseqs)
{
	struct seq *s = NULL, *p;
	size_t i, kept = 0, n = 0, cap = 0, first = 0;

	for (i = 0; i < sl->n; i++) {
		const struct symline_row *r = &sl->r[i];

		if (!r->end) {
			if (i + 1 < sl->n && sl->r[i + 1].addr > r->addr)
				sl->r[kept++] = *r;
			continue;
		}
		if (kept > first) {
			if (n == cap) {
				cap = cap == 0 ? 16 : cap * 2;
				if ((p = realloc(s, cap * sizeof(*p))) ==
				    NULL) {
					free(s);
					return -1;
				}
				s = p;
			}
			sl->r[kept++] = *r;
			s[n].start = sl->r[first].addr;
			s[n].first = first;
			s[n].n = kept - first;
			s[n].order = n;
			n++;
		}
		first = kept;
	}
	/* Rows after the last end, of no sequence that ends, are dropped. */
	sl->n = first;
	*seqs = s;
	*nseqs = n;
	return 0;
}

int
symline_read(struct symline *sl, const unsigned char *sec, size_t len,
    uint64_t off, int big, const char **why)
{
	struct symline out = { 0 };
	struct header h;
	struct cur c = { 0 };
	struct seq *s;
	size_t ns, i, j;
	uint64_t floor = 0;
	int open;

	sl->n = 0;
	c.big = big;
	if (header(&c, sec, len, off, &h, why) == -1 ||
	    run(&c, &h, sl, why) == -1)
		return -1;
	if (keep(sl, &s, &ns) == -1) {
		*why = "out of memory";
		return -1;
	}
	if (ns > 1)
		qsort(s, ns, sizeof(*s), seq_cmp);
	/*
	 * floor: where what was written so far stops holding; a row starts
	 * there at the lowest, and one that would hold nothing above it is
	 * left out.  An end is written where its sequence's rows stopped.
	 */
	for (i = 0; i < ns; i++) {
		open = 0;
		for (j = s[i].first; j < s[i].first + s[i].n; j++) {
			struct symline_row r = sl->r[j];

			if (r.end) {
				if (!open)
					continue;
				r.addr = floor;
			} else {
				/* It holds up to the next row of its sequence. */
				uint64_t to = sl->r[j + 1].addr;

				if (r.addr < floor)
					r.addr = floor;
				if (to <= r.addr)
					continue;
				floor = to;
				open = 1;
			}
			if (push(&out, &r) == -1) {
				free(s);
				free(out.r);
				*why = "out of memory";
				return -1;
			}
		}
	}
	free(s);
	free(sl->r);
	*sl = out;
	return 0;
}

void
symline_free(struct symline *sl)
{
	free(sl->r);
	memset(sl, 0, sizeof(*sl));
}
