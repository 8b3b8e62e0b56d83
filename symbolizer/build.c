/*
 * symbolizer/build.c: the symbol table builder (symbolizer/build.h): the
 * sink of indexer/symdwarf.h's records, and the writer of
 * symbolizer/format.h's bytes.
 *
 * Each unit's records are turned into sorted runs of intervals as the
 * unit ends, so only one unit's raw records are held at a time:
 *
 *  - line rows: row i holds from its address to row i+1's (libdw's rule:
 *    the last row at or below an address), unless it ends a sequence;
 *  - scope ranges: flattened so that each address has the scope
 *    dwarf_getscopes() (eu-addr2line's) finds there: from the unit down,
 *    the first child in DIE order that holds the address, then its first
 *    child that does, and so on.  Scopes are numbered in DIE order and an
 *    inlined instance's ranges lie within its caller's (the reader cut
 *    them), so that is found with a sweep over the range boundaries that
 *    keeps the open scopes in a bitmap: start at the lowest open number,
 *    and step to the next open number while it is an instance inlined
 *    into the current one.
 *
 * Intervals outside the executable sections are dropped (code that the
 * linker threw away keeps address 0 in the DWARF) and cut at a section's
 * end.
 *
 * Which unit speaks for an address is decided from the units' own ranges
 * (DW_AT_ranges, what .debug_aranges holds too), as llvm-symbolizer
 * decides it: where several units claim an address, the unit that owns
 * the bytes just below keeps it if it claims it too, else the first unit.
 * That matters for C++: each copy of an inline or template function that
 * the linker discarded keeps its DWARF, pointed at the copy it kept
 * ("pretend" relocations), so several units describe the same bytes, with
 * line tables for code that is not there (a discarded copy's sequence can
 * even end where it starts, and then never closes); the copy kept is the
 * first in link order, the first unit.  (eu-addr2line takes whichever
 * unit its binary search over the sorted ranges meets.)  So each unit's
 * intervals are cut to the addresses it owns, and the runs of all units,
 * now disjoint, are merged by start with a heap and encoded straight into
 * their maps.  A unit without ranges claims what its rows and scopes
 * cover.
 *
 * ELF symbols are chosen per address as libdwfl's dwfl_module_addrsym
 * does: among the sized symbols that contain it, global and weak ones
 * before locals, the closest start, then the strongest binding, then the
 * smallest size, then the first in the table; where none does, the
 * closest sizeless symbol (an assembly label) of the same section that no
 * sized symbol ends after.
 *
 * Everything is sorted on total orders and every byte written is set, so
 * the same inputs make the same table.  Single-threaded: one build, one
 * struct bld.
 */
#include "symbolizer/build.h"

#include <elf.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "indexer/symdwarf.h"
#include "symbolizer/format.h"
#include "symbolizer/symtab.h"

/* What the checksum reads back at a time. */
#define CHUNK_SUM (1u << 20)

/* A growable array of n elements of elt bytes. */
struct vec {
	void *p;
	size_t n, cap;
};

static void *
vec_push(struct vec *v, size_t elt)
{
	if (v->n == v->cap) {
		size_t cap = v->cap == 0 ? 64 : v->cap * 2;
		void *p;

		if (cap > SIZE_MAX / elt / 2 ||
		    (p = realloc(v->p, cap * elt)) == NULL)
			return NULL;
		v->p = p;
		v->cap = cap;
	}
	return (char *)v->p + elt * v->n++;
}

/* Append n bytes (a vector of bytes). */
static int
vec_append(struct vec *v, const void *p, size_t n)
{
	if (n == 0)
		return 0;
	while (v->cap - v->n < n) {
		size_t cap = v->cap == 0 ? 4096 : v->cap * 2;
		void *q;

		if (cap > SIZE_MAX / 2 || (q = realloc(v->p, cap)) == NULL)
			return -1;
		v->p = q;
		v->cap = cap;
	}
	memcpy((char *)v->p + v->n, p, n);
	v->n += n;
	return 0;
}

/* qsort, for arrays that may be empty (and NULL). */
static void
sort(void *p, size_t n, size_t elt, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(p, n, elt, cmp);
}

static void
vec_free(struct vec *v)
{
	free(v->p);
	memset(v, 0, sizeof(*v));
}

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

static int
nomem(struct bld *b)
{
	snprintf(b->err, b->errlen, "out of memory");
	return -1;
}

/* ----------------------------------------------------------- strings */

static uint64_t
hash_bytes(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ull;
	}
	return h ^ h >> 29;
}

static int
str_grow(struct strtab *t)
{
	size_t cap = t->cap == 0 ? 1024 : t->cap * 2, i, j;
	uint32_t *slot;
	const char *base = t->bytes.p;

	if ((slot = calloc(cap, sizeof(*slot))) == NULL)
		return -1;
	for (i = 0; i < t->cap; i++) {
		const char *s;

		if (t->slot[i] == 0)
			continue;
		s = base + t->slot[i] - 1;
		j = (size_t)hash_bytes(s, strlen(s)) & (cap - 1);
		while (slot[j] != 0)
			j = (j + 1) & (cap - 1);
		slot[j] = t->slot[i];
	}
	free(t->slot);
	t->slot = slot;
	t->cap = cap;
	return 0;
}

static int
str_intern(struct strtab *t, const char *s, uint32_t *off)
{
	size_t n = strlen(s), j;

	if ((t->n + 1) * 4 > t->cap * 3 && str_grow(t) == -1)
		return -1;
	j = (size_t)hash_bytes(s, n) & (t->cap - 1);
	while (t->slot[j] != 0) {
		const char *o = (const char *)t->bytes.p + t->slot[j] - 1;

		if (strcmp(o, s) == 0) {
			*off = t->slot[j] - 1;
			return 0;
		}
		j = (j + 1) & (t->cap - 1);
	}
	if (t->bytes.n + n + 1 >= UINT32_MAX)
		return -1;
	*off = (uint32_t)t->bytes.n;
	if (vec_append(&t->bytes, s, n + 1) == -1)
		return -1;
	t->slot[j] = *off + 1;
	t->n++;
	return 0;
}

static int
idmap_get(struct idmap *m, uint32_t key, uint32_t *val, uint32_t newval,
    int *added)
{
	size_t j, i;

	*added = 0;
	if ((m->n + 1) * 4 > m->cap * 3) {
		size_t cap = m->cap == 0 ? 256 : m->cap * 2;
		uint32_t *k = calloc(cap, sizeof(*k)),
			 *v = calloc(cap, sizeof(*v));

		if (k == NULL || v == NULL) {
			free(k);
			free(v);
			return -1;
		}
		for (i = 0; i < m->cap; i++) {
			if (m->key[i] == 0)
				continue;
			j = (m->key[i] * 2654435761u) & (cap - 1);
			while (k[j] != 0)
				j = (j + 1) & (cap - 1);
			k[j] = m->key[i];
			v[j] = m->val[i];
		}
		free(m->key);
		free(m->val);
		m->key = k;
		m->val = v;
		m->cap = cap;
	}
	j = ((key + 1) * 2654435761u) & (m->cap - 1);
	while (m->key[j] != 0 && m->key[j] != key + 1)
		j = (j + 1) & (m->cap - 1);
	if (m->key[j] == 0) {
		m->key[j] = key + 1;
		m->val[j] = newval;
		m->n++;
		*added = 1;
	}
	*val = m->val[j];
	return 0;
}

/* ------------------------------------------------------------- sink */

static int
sink_string(void *arg, const char *s, uint32_t *id)
{
	struct bld *b = arg;

	return str_intern(&b->str, s, id) == -1 ? nomem(b) : 0;
}

static int
sink_file(void *arg, const char *path, uint32_t *id)
{
	struct bld *b = arg;
	uint32_t off, *slot;
	int added;

	if (str_intern(&b->str, path, &off) == -1 ||
	    idmap_get(&b->filemap, off, id, (uint32_t)b->files.n, &added) == -1)
		return nomem(b);
	if (added) {
		if ((slot = vec_push(&b->files, sizeof(*slot))) == NULL)
			return nomem(b);
		*slot = off;
	}
	return 0;
}

static int
sink_section(void *arg, uint64_t addr, uint64_t size)
{
	struct bld *b = arg;
	struct sec *s;

	if (size == 0 || addr > UINT64_MAX - size)
		return 0;
	if ((s = vec_push(&b->secs, sizeof(*s))) == NULL)
		return nomem(b);
	s->lo = addr;
	s->hi = addr + size;
	return 0;
}

static int
sec_cmp(const void *x, const void *y)
{
	const struct sec *a = x, *c = y;

	if (a->lo != c->lo)
		return a->lo < c->lo ? -1 : 1;
	return a->hi < c->hi ? -1 : a->hi > c->hi;
}

/* Sort and merge the sections; base and limit.  Once, at first need. */
static int
prepare(struct bld *b)
{
	struct sec *s = b->secs.p;
	size_t i, n;

	if (b->prepared)
		return 0;
	if (b->secs.n == 0) {
		snprintf(b->err, b->errlen, "no executable code in the file");
		return -1;
	}
	sort(s, b->secs.n, sizeof(*s), sec_cmp);
	for (i = 1, n = 1; i < b->secs.n; i++) {
		if (s[i].lo <= s[n - 1].hi) {
			if (s[i].hi > s[n - 1].hi)
				s[n - 1].hi = s[i].hi;
		} else {
			s[n++] = s[i];
		}
	}
	b->secs.n = n;
	b->base = s[0].lo;
	b->limit = s[n - 1].hi;
	if (b->limit - b->base > UINT32_MAX) {
		snprintf(b->err, b->errlen, "code spread over more than 4 GiB");
		return -1;
	}
	b->prepared = 1;
	return 0;
}

/* The section that holds addr, or NULL. */
static const struct sec *
sec_find(const struct bld *b, uint64_t addr)
{
	const struct sec *s = b->secs.p;
	size_t lo = 0, hi = b->secs.n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (addr < s[mid].lo)
			hi = mid;
		else if (addr >= s[mid].hi)
			lo = mid + 1;
		else
			return &s[mid];
	}
	return NULL;
}

/* Keep [*lo, *hi) only from inside a section, cut at its end. */
static int
clip(const struct bld *b, uint64_t lo, uint64_t *hi)
{
	const struct sec *s = sec_find(b, lo);

	if (s == NULL || *hi <= lo)
		return 0;
	if (*hi > s->hi)
		*hi = s->hi;
	return 1;
}

static int
sink_unit_range(void *arg, uint64_t lo, uint64_t hi)
{
	struct bld *b = arg;
	struct sec *s;

	if ((s = vec_push(&b->cur, sizeof(*s))) == NULL)
		return nomem(b);
	s->lo = lo;
	s->hi = hi;
	return 0;
}

static int
sink_scope(void *arg, const struct symdwarf_scope *s, uint32_t *id)
{
	struct bld *b = arg;
	struct fmt_scope *f;

	if (b->scopes.n >= UINT32_MAX - 1 ||
	    (f = vec_push(&b->scopes, sizeof(*f))) == NULL)
		return nomem(b);
	f->name = s->name;
	f->parent = s->parent;
	f->call_file = s->call_file;
	f->call_line = s->call_line;
	f->call_column = s->call_column;
	*id = (uint32_t)b->scopes.n;
	if (s->plain_nested) {
		struct plain *p = vec_push(&b->plains, sizeof(*p));

		if (p == NULL)
			return nomem(b);
		p->id = *id;
		p->entry = UINT64_MAX;
	}
	return 0;
}

static int
sink_range(void *arg, uint32_t scope, uint64_t lo, uint64_t hi)
{
	struct bld *b = arg;
	struct plain *p;
	struct urange *r;

	if ((r = vec_push(&b->ur, sizeof(*r))) == NULL)
		return nomem(b);
	r->lo = lo;
	r->hi = hi;
	r->id = scope;
	/* A scope's ranges come right after it. */
	p = b->plains.n > 0 ? (struct plain *)b->plains.p + b->plains.n - 1
			    : NULL;
	if (p != NULL && p->id == scope && lo < p->entry)
		p->entry = lo;
	return 0;
}

static int
sink_row(void *arg, uint64_t addr, uint32_t file, uint32_t line,
    uint32_t column)
{
	struct bld *b = arg;
	struct urow *w;

	if ((w = vec_push(&b->uw, sizeof(*w))) == NULL)
		return nomem(b);
	w->addr = addr;
	w->file = file;
	w->line = line;
	w->column = column;
	return 0;
}

/* Append an id interval to the current run, joining a neighbour. */
static int
put_id(struct bld *b, struct vec *v, const struct run *r, uint64_t lo,
    uint64_t hi, uint32_t id)
{
	struct iv_id *p;

	if (hi <= lo)
		return 0;
	if (v->n > r->first) {
		p = (struct iv_id *)v->p + v->n - 1;
		if (p->end == lo - b->base && p->id == id) {
			p->end = (uint32_t)(hi - b->base);
			return 0;
		}
	}
	if ((p = vec_push(v, sizeof(*p))) == NULL)
		return nomem(b);
	p->start = (uint32_t)(lo - b->base);
	p->end = (uint32_t)(hi - b->base);
	p->id = id;
	return 0;
}

/*
 * Where the range that starts last wins: ranges r[0..n) sorted by start
 * (then with the one that must win a tie last), into id intervals
 * appended to v as one run.  The top of the stack is the range pushed
 * last that is still open.
 */
static int
flatten(struct bld *b, struct urange *r, size_t n, struct vec *v,
    struct vec *runs)
{
	size_t *stack, sp = 0, i;
	struct run *run;
	uint64_t cur = 0;
	int rc = -1;

	if ((run = vec_push(runs, sizeof(*run))) == NULL)
		return nomem(b);
	run->first = v->n;
	run->n = 0;
	if (n == 0)
		return 0;
	if ((stack = malloc(n * sizeof(*stack))) == NULL)
		return nomem(b);
	for (i = 0; i <= n; i++) {
		uint64_t x = i < n ? r[i].lo : UINT64_MAX;

		/* Close what ends before x, giving each its piece. */
		while (sp > 0) {
			struct urange *t = &r[stack[sp - 1]];
			uint64_t e = t->hi < x ? t->hi : x;

			if (t->hi <= cur) {
				sp--;
				continue;
			}
			if (put_id(b, v, run, cur, e, t->id) == -1)
				goto out;
			cur = e;
			if (t->hi <= x) {
				sp--;
				continue;
			}
			break;
		}
		if (i < n) {
			/* The loop left cur at x unless nothing was open. */
			cur = x;
			stack[sp++] = i;
		}
	}
	run->n = v->n - run->first;
	rc = 0;
out:
	free(stack);
	return rc;
}

/* A set of scope numbers, as a bitmap with a summary of its words. */
struct bits {
	uint64_t *w, *sum;
	size_t nw, nsum;
	uint32_t base;
};

static void
bits_set(struct bits *s, uint32_t id, int on)
{
	size_t i = id - s->base, k = i / 64;

	if (on)
		s->w[k] |= (uint64_t)1 << (i % 64);
	else
		s->w[k] &= ~((uint64_t)1 << (i % 64));
	if (s->w[k] != 0)
		s->sum[k / 64] |= (uint64_t)1 << (k % 64);
	else
		s->sum[k / 64] &= ~((uint64_t)1 << (k % 64));
}

/* The first member at or above id, or 0. */
static uint32_t
bits_next(const struct bits *s, uint64_t id)
{
	uint64_t i, k, m, q;

	if (id < s->base)
		id = s->base;
	i = id - s->base;
	k = i / 64;
	if (k >= s->nw)
		return 0;
	m = s->w[k] & (~(uint64_t)0 << (i % 64));
	if (m != 0)
		return s->base +
		    (uint32_t)(k * 64 + (uint64_t)__builtin_ctzll(m));
	/* The next word with a member, through the summary. */
	k++;
	for (q = k / 64; q < s->nsum; q++) {
		m = s->sum[q];
		if (q == k / 64)
			m &= k % 64 == 0 ? ~(uint64_t)0
					 : ~(uint64_t)0 << (k % 64);
		if (m != 0) {
			k = q * 64 + (uint64_t)__builtin_ctzll(m);
			return s->base +
			    (uint32_t)(k * 64 +
				(uint64_t)__builtin_ctzll(s->w[k]));
		}
	}
	return 0;
}

/* What dwarf_getscopes() would find among the open scopes, or 0. */
static uint32_t
innermost(const struct bld *b, const struct bits *open)
{
	const struct fmt_scope *sc = b->scopes.p;
	uint32_t x = bits_next(open, 0), y;

	while (x != 0 && (y = bits_next(open, (uint64_t)x + 1)) != 0 &&
	    sc[y - 1].parent == x)
		x = y;
	return x;
}

struct event {
	uint64_t addr;
	uint32_t id;
	int open; /* 1: a range starts, 0: one ends */
};

static int
event_cmp(const void *x, const void *y)
{
	const struct event *a = x, *c = y;

	if (a->addr != c->addr)
		return a->addr < c->addr ? -1 : 1;
	if (a->open != c->open)
		return a->open - c->open; /* ends first */
	return a->id < c->id ? -1 : a->id > c->id;
}

/* The unit's scope ranges r[0..n) into one run of id intervals. */
static int
scope_sweep(struct bld *b, const struct urange *r, size_t n)
{
	struct event *ev = NULL;
	struct bits open = { 0 };
	struct run *run;
	uint32_t lo = UINT32_MAX, hi = 0, cur = 0, w;
	uint64_t from = 0;
	size_t i;
	int rc = -1;

	if ((run = vec_push(&b->sruns, sizeof(*run))) == NULL)
		return nomem(b);
	run->first = b->ids.n;
	run->n = 0;
	if (n == 0)
		return 0;
	for (i = 0; i < n; i++) {
		lo = r[i].id < lo ? r[i].id : lo;
		hi = r[i].id > hi ? r[i].id : hi;
	}
	open.base = lo;
	open.nw = (size_t)(hi - lo) / 64 + 1;
	open.nsum = open.nw / 64 + 1;
	open.w = calloc(open.nw, sizeof(uint64_t));
	open.sum = calloc(open.nsum, sizeof(uint64_t));
	if (open.w == NULL || open.sum == NULL ||
	    (ev = malloc(2 * n * sizeof(*ev))) == NULL) {
		nomem(b);
		goto out;
	}
	for (i = 0; i < n; i++) {
		ev[2 * i] = (struct event){ r[i].lo, r[i].id, 1 };
		ev[2 * i + 1] = (struct event){ r[i].hi, r[i].id, 0 };
	}
	sort(ev, 2 * n, sizeof(*ev), event_cmp);
	for (i = 0; i < 2 * n;) {
		uint64_t at = ev[i].addr;

		for (; i < 2 * n && ev[i].addr == at; i++)
			bits_set(&open, ev[i].id, ev[i].open);
		if ((w = innermost(b, &open)) == cur)
			continue;
		if (cur != 0 && put_id(b, &b->ids, run, from, at, cur) == -1)
			goto out;
		cur = w;
		from = at;
	}
	run->n = b->ids.n - run->first;
	rc = 0;
out:
	free(open.w);
	free(open.sum);
	free(ev);
	return rc;
}

/* The unit's rows into one run of line intervals. */
static int
unit_lines(struct bld *b)
{
	const struct urow *w = b->uw.p;
	struct run *run;
	size_t i;

	if ((run = vec_push(&b->lruns, sizeof(*run))) == NULL)
		return nomem(b);
	run->first = b->lines.n;
	for (i = 0; i + 1 < b->uw.n; i++) {
		uint64_t lo = w[i].addr, hi = w[i + 1].addr;
		struct iv_line *p;

		if (w[i].file == 0 || !clip(b, lo, &hi))
			continue;
		lo -= b->base;
		hi -= b->base;
		p = b->lines.n > run->first
		    ? (struct iv_line *)b->lines.p + b->lines.n - 1
		    : NULL;
		if (p != NULL && p->end == lo && p->file == w[i].file - 1 &&
		    p->line == w[i].line && p->column == w[i].column) {
			p->end = (uint32_t)hi;
			continue;
		}
		if (p != NULL && lo < p->end)
			continue; /* rows out of order: libdw sorts them */
		if ((p = vec_push(&b->lines, sizeof(*p))) == NULL)
			return nomem(b);
		p->start = (uint32_t)lo;
		p->end = (uint32_t)hi;
		p->file = w[i].file - 1;
		p->line = w[i].line;
		p->column = w[i].column;
	}
	run->n = b->lines.n - run->first;
	return 0;
}

/* A claim of unit cu on [lo, hi), split at the sections. */
static int
claim(struct bld *b, uint64_t lo, uint64_t hi, uint32_t cu)
{
	const struct sec *s = b->secs.p;
	size_t i;

	for (i = 0; i < b->secs.n; i++) {
		uint64_t a = lo > s[i].lo ? lo : s[i].lo;
		uint64_t e = hi < s[i].hi ? hi : s[i].hi;
		struct iv_id *c;

		if (a >= e)
			continue;
		if ((c = vec_push(&b->claims, sizeof(*c))) == NULL)
			return nomem(b);
		c->start = (uint32_t)(a - b->base);
		c->end = (uint32_t)(e - b->base);
		c->id = cu;
	}
	return 0;
}

/* What the unit just read claims: its ranges, else what it describes. */
static int
unit_claims(struct bld *b)
{
	const struct run *lr = (const struct run *)b->lruns.p + b->lruns.n - 1;
	const struct run *sr = (const struct run *)b->sruns.p + b->sruns.n - 1;
	const struct sec *c = b->cur.p;
	uint32_t cu = (uint32_t)(b->lruns.n - 1);
	size_t i;

	for (i = 0; i < b->cur.n; i++)
		if (claim(b, c[i].lo, c[i].hi, cu) == -1)
			return -1;
	if (b->cur.n > 0)
		return 0;
	for (i = lr->first; i < lr->first + lr->n; i++) {
		const struct iv_line *l =
		    (const struct iv_line *)b->lines.p + i;

		if (claim(b, b->base + l->start, b->base + l->end, cu) == -1)
			return -1;
	}
	for (i = sr->first; i < sr->first + sr->n; i++) {
		const struct iv_id *d = (const struct iv_id *)b->ids.p + i;

		if (claim(b, b->base + d->start, b->base + d->end, cu) == -1)
			return -1;
	}
	return 0;
}

static int
sink_unit_end(void *arg)
{
	struct bld *b = arg;
	struct urange *r = b->ur.p;
	size_t i, n = 0;

	if (prepare(b) == -1 || unit_lines(b) == -1)
		return -1;
	for (i = 0; i < b->ur.n; i++)
		if (clip(b, r[i].lo, &r[i].hi))
			r[n++] = r[i];
	if (scope_sweep(b, r, n) == -1 || unit_claims(b) == -1)
		return -1;
	b->ur.n = b->uw.n = b->cur.n = 0;
	return 0;
}

static int
sink_symbol(void *arg, const struct symdwarf_sym *s)
{
	struct bld *b = arg;
	struct bsym *y;

	if (b->syms.n >= UINT32_MAX - 1 ||
	    (y = vec_push(&b->syms, sizeof(*y))) == NULL)
		return nomem(b);
	y->addr = s->addr;
	y->size = s->size;
	y->name = s->name;
	y->bind = s->bind;
	y->type = s->type;
	y->order = (uint32_t)(b->syms.n - 1);
	return 0;
}

/* ---------------------------------------------------------- encoding */

static int
put_uleb(struct vec *v, uint64_t x)
{
	uint8_t buf[10];
	size_t n = 0;

	do {
		buf[n] = x & 0x7f;
		x >>= 7;
		if (x != 0)
			buf[n] |= 0x80;
		n++;
	} while (x != 0);
	return vec_append(v, buf, n);
}

static int
put_sleb(struct vec *v, int64_t x)
{
	uint8_t buf[10];
	size_t n = 0;
	int more;

	do {
		buf[n] = x & 0x7f;
		x >>= 7; /* arithmetic: gcc and clang */
		more = !((x == 0 && (buf[n] & 0x40) == 0) ||
		    (x == -1 && (buf[n] & 0x40) != 0));
		if (more)
			buf[n] |= 0x80;
		n++;
	} while (more);
	return vec_append(v, buf, n);
}

static int
put_u32(struct vec *v, uint32_t x)
{
	uint32_t *p = vec_push(v, sizeof(x));

	if (p == NULL)
		return -1;
	*p = x;
	return 0;
}

/* Start an entry at addr: a new block when the last one is full. */
static int
enc_entry(struct mapenc *m, uint32_t addr, int *first)
{
	*first = m->inblock == 0 || m->inblock == FMT_BLOCK;
	if (*first) {
		if (m->data.n > UINT32_MAX || put_u32(&m->keys, addr) == -1 ||
		    put_u32(&m->offs, (uint32_t)m->data.n) == -1)
			return -1;
		m->inblock = 0;
		m->file_set = 0;
		m->lineno = 0;
	} else if (put_uleb(&m->data, addr - m->addr) == -1) {
		return -1;
	}
	m->addr = addr;
	m->inblock++;
	m->count++;
	return 0;
}

static int
enc_id(struct mapenc *m, uint32_t addr, uint32_t id)
{
	int first;

	if (enc_entry(m, addr, &first) == -1 ||
	    (first ? put_uleb(&m->data, id)
		   : put_sleb(&m->data, (int64_t)id - (int64_t)m->id)) == -1)
		return -1;
	m->id = id;
	return 0;
}

/* A line entry; gap: no row from addr on. */
static int
enc_line(struct mapenc *m, uint32_t addr, int gap, uint32_t file, uint32_t line,
    uint32_t column)
{
	int first;

	if (enc_entry(m, addr, &first) == -1)
		return -1;
	if (gap)
		return put_uleb(&m->data, 0);
	if (put_uleb(&m->data,
		m->file_set && m->file == file ? 1 : (uint64_t)file + 2) ==
		-1 ||
	    put_sleb(&m->data, (int64_t)line - (int64_t)m->lineno) == -1 ||
	    put_uleb(&m->data, column) == -1)
		return -1;
	m->file = file;
	m->file_set = 1;
	m->lineno = line;
	return 0;
}

static int
enc_finish(struct mapenc *m)
{
	if (m->data.n > UINT32_MAX)
		return -1;
	return put_u32(&m->offs, (uint32_t)m->data.n);
}

static void
enc_free(struct mapenc *m)
{
	vec_free(&m->keys);
	vec_free(&m->offs);
	vec_free(&m->data);
}

/*
 * The k-way merge of runs of intervals (each starting with u32 start,
 * end), by start then run, handing each to take(): a binary heap of the
 * runs' next intervals.
 */
struct heap {
	size_t *run; /* run indexes */
	size_t *pos; /* the next interval of each run */
	size_t n;
	const char *items;
	size_t elt;
	const struct run *runs;
};

static uint32_t
h_start(const struct heap *h, size_t run)
{
	uint32_t s;

	memcpy(&s, h->items + h->elt * (h->runs[run].first + h->pos[run]),
	    sizeof(s));
	return s;
}

static int
h_less(const struct heap *h, size_t a, size_t c)
{
	uint32_t x = h_start(h, a), y = h_start(h, c);

	return x < y || (x == y && a < c);
}

static void
h_down(struct heap *h, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i, t;

		if (l < h->n && h_less(h, h->run[l], h->run[m]))
			m = l;
		if (l + 1 < h->n && h_less(h, h->run[l + 1], h->run[m]))
			m = l + 1;
		if (m == i)
			return;
		t = h->run[i];
		h->run[i] = h->run[m];
		h->run[m] = t;
		i = m;
	}
}

static int
kmerge(struct bld *b, const struct vec *items, size_t elt,
    const struct vec *runs, int (*take)(void *arg, const void *item), void *arg)
{
	const struct run *r = runs->p;
	struct heap h;
	size_t i;
	int rc = 0;

	h.items = items->p;
	h.elt = elt;
	h.runs = r;
	h.n = 0;
	h.run = malloc((runs->n + 1) * sizeof(size_t));
	h.pos = calloc(runs->n + 1, sizeof(size_t));
	if (h.run == NULL || h.pos == NULL) {
		free(h.run);
		free(h.pos);
		return nomem(b);
	}
	for (i = 0; i < runs->n; i++)
		if (r[i].n > 0)
			h.run[h.n++] = i;
	for (i = h.n / 2; i-- > 0;)
		h_down(&h, i);
	while (h.n > 0 && rc == 0) {
		size_t k = h.run[0];

		rc = take(arg, h.items + elt * (r[k].first + h.pos[k]));
		if (++h.pos[k] == r[k].n)
			h.run[0] = h.run[--h.n];
		h_down(&h, 0);
	}
	free(h.run);
	free(h.pos);
	return rc;
}

static int
own_cmp(const void *x, const void *y)
{
	const struct iv_id *a = x, *c = y;

	if (a->id != c->id)
		return a->id < c->id ? -1 : 1;
	return a->start < c->start ? -1 : a->start > c->start;
}

/*
 * Cut the intervals of each run (run i is unit i's) to what unit i owns:
 * own[first[i]..first[i + 1]), sorted by start.
 */
static int
own_cut(struct bld *b, struct vec *items, size_t elt, struct vec *runs,
    const struct iv_id *own, const size_t *first)
{
	struct run *r = runs->p;
	struct vec out = { 0 };
	size_t i, k, j;
	char *p;

	for (i = 0; i < runs->n; i++) {
		size_t nfirst = out.n;

		j = first[i];
		for (k = 0; k < r[i].n; k++) {
			const char *it =
			    (const char *)items->p + elt * (r[i].first + k);
			uint32_t s0, e0, a, e;
			size_t q;

			memcpy(&s0, it, 4);
			memcpy(&e0, it + 4, 4);
			while (j < first[i + 1] && own[j].end <= s0)
				j++;
			for (q = j; q < first[i + 1] && own[q].start < e0;
			     q++) {
				a = s0 > own[q].start ? s0 : own[q].start;
				e = e0 < own[q].end ? e0 : own[q].end;
				if (a >= e)
					continue;
				if ((p = vec_push(&out, elt)) == NULL) {
					vec_free(&out);
					return nomem(b);
				}
				memcpy(p, it, elt);
				memcpy(p, &a, 4);
				memcpy(p + 4, &e, 4);
			}
		}
		r[i].first = nfirst;
		r[i].n = out.n - nfirst;
	}
	vec_free(items);
	*items = out;
	return 0;
}

/*
 * Which unit owns each address, into own (id intervals by start): a sweep
 * over the claims' ends with the claiming units counted, as
 * llvm-symbolizer's DWARFDebugAranges builds its map.
 */
static int
owners(struct bld *b, struct vec *own)
{
	const struct iv_id *c = b->claims.p;
	size_t nunits = b->lruns.n, i;
	struct event *ev;
	struct bits valid = { 0 };
	uint32_t *count, prev = 0;
	struct iv_id *last = NULL;
	int any = 0, rc = -1;

	ev = malloc((2 * b->claims.n + 1) * sizeof(*ev));
	count = calloc(nunits + 1, sizeof(*count));
	valid.base = 1;
	valid.nw = nunits / 64 + 1;
	valid.nsum = valid.nw / 64 + 1;
	valid.w = calloc(valid.nw, sizeof(uint64_t));
	valid.sum = calloc(valid.nsum, sizeof(uint64_t));
	if (ev == NULL || count == NULL || valid.w == NULL ||
	    valid.sum == NULL) {
		nomem(b);
		goto out;
	}
	/* Units are numbered from 1 here, as the bitmap wants. */
	for (i = 0; i < b->claims.n; i++) {
		ev[2 * i] = (struct event){ c[i].start, c[i].id + 1, 1 };
		ev[2 * i + 1] = (struct event){ c[i].end, c[i].id + 1, 0 };
	}
	sort(ev, 2 * b->claims.n, sizeof(*ev), event_cmp);
	for (i = 0; i < 2 * b->claims.n; i++) {
		uint32_t at = (uint32_t)ev[i].addr, u = ev[i].id;

		if (any && prev < at && bits_next(&valid, 1) != 0) {
			if (last != NULL && last->end == prev &&
			    count[last->id + 1] > 0) {
				last->end = at;
			} else {
				if ((last = vec_push(own, sizeof(*last))) ==
				    NULL) {
					nomem(b);
					goto out;
				}
				last->start = prev;
				last->end = at;
				last->id = bits_next(&valid, 1) - 1;
			}
		}
		if (ev[i].open && count[u]++ == 0)
			bits_set(&valid, u, 1);
		else if (!ev[i].open && --count[u] == 0)
			bits_set(&valid, u, 0);
		prev = at;
		any = 1;
	}
	rc = 0;
out:
	free(ev);
	free(count);
	free(valid.w);
	free(valid.sum);
	return rc;
}

/* Which unit owns each address; every unit's intervals cut to its own. */
static int
ownership(struct bld *b)
{
	struct vec own = { 0 };
	size_t *first = NULL, i, nunits = b->lruns.n;
	int rc = -1;

	if (owners(b, &own) == -1)
		goto out;
	sort(own.p, own.n, sizeof(struct iv_id), own_cmp);
	if ((first = calloc(nunits + 1, sizeof(*first))) == NULL) {
		nomem(b);
		goto out;
	}
	for (i = 0; i < own.n; i++)
		first[((struct iv_id *)own.p)[i].id + 1]++;
	for (i = 0; i < nunits; i++)
		first[i + 1] += first[i];
	if (own_cut(b, &b->lines, sizeof(struct iv_line), &b->lruns, own.p,
		first) == -1 ||
	    own_cut(b, &b->ids, sizeof(struct iv_id), &b->sruns, own.p,
		first) == -1)
		goto out;
	rc = 0;
out:
	free(first);
	vec_free(&own);
	vec_free(&b->claims);
	return rc;
}

/* The merge's consumer: clips overlaps, fills gaps, encodes. */
struct take {
	struct bld *b;
	struct mapenc *m;
	int any;
	uint32_t end;
	const struct iv_line *prev_line;
	uint32_t prev_id;
};

static int
take_line(void *arg, const void *item)
{
	struct take *t = arg;
	const struct iv_line *v = item;
	uint32_t start = v->start;

	if (v->end <= start)
		return 0;
	if (t->any && start < t->end) {
		if (v->end <= t->end)
			return 0;
		start = t->end;
	}
	if (t->any && start > t->end &&
	    enc_line(t->m, t->end, 1, 0, 0, 0) == -1)
		return nomem(t->b);
	if (!(t->any && start == t->end && t->prev_line != NULL &&
		t->prev_line->file == v->file &&
		t->prev_line->line == v->line &&
		t->prev_line->column == v->column) &&
	    enc_line(t->m, start, 0, v->file, v->line, v->column) == -1)
		return nomem(t->b);
	t->prev_line = v;
	t->end = v->end;
	t->any = 1;
	return 0;
}

static int
take_id(void *arg, const void *item)
{
	struct take *t = arg;
	const struct iv_id *v = item;
	uint32_t start = v->start;

	if (v->end <= start)
		return 0;
	if (t->any && start < t->end) {
		if (v->end <= t->end)
			return 0;
		start = t->end;
	}
	if (t->any && start > t->end) {
		if (enc_id(t->m, t->end, 0) == -1)
			return nomem(t->b);
		t->prev_id = 0;
	}
	if (!(t->any && start == t->end && t->prev_id == v->id) &&
	    enc_id(t->m, start, v->id) == -1)
		return nomem(t->b);
	t->prev_id = v->id;
	t->end = v->end;
	t->any = 1;
	return 0;
}

/* A merged map ends with a gap, unless it reaches the limit. */
static int
take_end(struct take *t, int line)
{
	if (t->any && t->end < t->b->limit - t->b->base &&
	    (line ? enc_line(t->m, t->end, 1, 0, 0, 0)
		  : enc_id(t->m, t->end, 0)) == -1)
		return nomem(t->b);
	return enc_finish(t->m) == -1 ? nomem(t->b) : 0;
}

static int
encode_lines(struct bld *b)
{
	struct take t = { b, &b->lmap, 0, 0, NULL, 0 };

	b->lmap.line = 1;
	if (kmerge(b, &b->lines, sizeof(struct iv_line), &b->lruns, take_line,
		&t) == -1 ||
	    take_end(&t, 1) == -1)
		return -1;
	vec_free(&b->lines);
	vec_free(&b->lruns);
	return 0;
}

static int
encode_scopes(struct bld *b)
{
	struct take t = { b, &b->smap, 0, 0, NULL, 0 };

	if (kmerge(b, &b->ids, sizeof(struct iv_id), &b->sruns, take_id, &t) ==
		-1 ||
	    take_end(&t, 0) == -1)
		return -1;
	vec_free(&b->ids);
	vec_free(&b->sruns);
	return 0;
}

/* --------------------------------------------------------- symbols */

static int
bind_value(uint8_t bind)
{
	switch (bind) {
	case STB_GLOBAL:
		return 3;
	case STB_WEAK:
		return 2;
	case STB_LOCAL:
		return 1;
	default:
		return 0;
	}
}

/* By address, the one that wins a tie last: binding, smaller size, first
 * in its table. */
static int
bsym_cmp(const void *x, const void *y)
{
	const struct bsym *a = x, *c = y;

	if (a->addr != c->addr)
		return a->addr < c->addr ? -1 : 1;
	if (bind_value(a->bind) != bind_value(c->bind))
		return bind_value(a->bind) < bind_value(c->bind) ? -1 : 1;
	if (a->size != c->size)
		return a->size > c->size ? -1 : 1;
	if (a->order != c->order)
		return a->order > c->order ? -1 : 1;
	return 0;
}

/* The sized symbols of one class (locals or not) swept into one run. */
static int
sym_sweep(struct bld *b, int locals, struct vec *v, struct vec *runs)
{
	const struct bsym *s = b->syms.p;
	struct vec r = { 0 };
	struct urange *u;
	size_t i;
	int rc;

	for (i = 0; i < b->syms.n; i++) {
		if (s[i].size == 0 || (s[i].bind == STB_LOCAL) != locals)
			continue;
		if ((u = vec_push(&r, sizeof(*u))) == NULL) {
			vec_free(&r);
			return nomem(b);
		}
		u->lo = s[i].addr;
		u->hi = s[i].addr + s[i].size;
		u->id = (uint32_t)i + 1;
	}
	rc = flatten(b, r.p, r.n, v, runs);
	vec_free(&r);
	return rc;
}

/* Put an interval into v (absolute addresses) unless it is empty. */
static int
put_abs(struct bld *b, struct vec *v, uint64_t lo, uint64_t hi, uint32_t id)
{
	struct iv_id *p;

	if (hi <= lo)
		return 0;
	if ((p = vec_push(v, sizeof(*p))) == NULL)
		return nomem(b);
	p->start = (uint32_t)(lo - b->base);
	p->end = (uint32_t)(hi - b->base);
	p->id = id;
	return 0;
}

static int
iv_cmp(const void *x, const void *y)
{
	const struct iv_id *a = x, *c = y;

	return a->start < c->start ? -1 : a->start > c->start;
}

/*
 * A function nested in another and named by DW_AT_name alone takes the
 * name of the symbol at its entry (cover: the symbol intervals, sorted),
 * as llvm-symbolizer, which names outermost frames from the symbol table,
 * and eu-addr2line, whose dwarf_getscopes() never reaches it, print it.
 */
static void
rename_plain(struct bld *b, const struct iv_id *cover, size_t n)
{
	const struct plain *p = b->plains.p;
	const struct bsym *s = b->syms.p;
	struct fmt_scope *sc = b->scopes.p;
	size_t i, lo, hi, mid;

	for (i = 0; i < b->plains.n; i++) {
		uint64_t rel = p[i].entry - b->base;

		if (p[i].entry < b->base || p[i].entry >= b->limit)
			continue;
		for (lo = 0, hi = n; lo < hi;) {
			mid = lo + (hi - lo) / 2;
			if (rel < cover[mid].start)
				hi = mid;
			else if (rel >= cover[mid].end)
				lo = mid + 1;
			else
				break;
		}
		if (lo < hi)
			sc[p[i].id - 1].name = s[cover[mid].id - 1].name;
	}
}

/*
 * Which symbol covers each address: the globals' sweep, the locals' where
 * no global is, then labels where no sized symbol is; one run, encoded.
 */
static int
encode_symbols(struct bld *b)
{
	struct vec g = { 0 }, l = { 0 }, runs = { 0 }, out = { 0 };
	struct bsym *s = b->syms.p;
	const struct iv_id *gv, *lv;
	struct take t = { b, &b->ymap, 0, 0, NULL, 0 };
	struct run one;
	uint64_t maxend = 0;
	size_t i, j, k, n = 0;
	int rc = -1;

	/* Keep symbols in code; cut them at their section's end. */
	for (i = 0; i < b->syms.n; i++) {
		uint64_t hi = s[i].addr + (s[i].size > 0 ? s[i].size : 1);

		if (s[i].addr > UINT64_MAX - s[i].size ||
		    !clip(b, s[i].addr, &hi))
			continue;
		if (s[i].size > 0)
			s[i].size = hi - s[i].addr;
		s[n++] = s[i];
	}
	b->syms.n = n;
	sort(s, n, sizeof(*s), bsym_cmp);
	/* The same symbol twice (a table read twice): once. */
	for (i = j = 0; i < n; i++)
		if (j == 0 || s[j - 1].addr != s[i].addr ||
		    s[j - 1].size != s[i].size || s[j - 1].name != s[i].name ||
		    s[j - 1].bind != s[i].bind)
			s[j++] = s[i];
	n = b->syms.n = j;
	if (sym_sweep(b, 0, &g, &runs) == -1 ||
	    sym_sweep(b, 1, &l, &runs) == -1)
		goto out;
	/* Locals where no global is: both lists sorted and disjoint. */
	gv = g.p;
	lv = l.p;
	for (i = j = 0; i < l.n; i++) {
		uint64_t lo = lv[i].start, hi = lv[i].end;

		while (j < g.n && gv[j].end <= lo)
			j++;
		for (k = j; k < g.n && gv[k].start < hi; k++) {
			if (put_abs(b, &out, b->base + lo,
				b->base + gv[k].start, lv[i].id) == -1)
				goto out;
			if (gv[k].end > lo)
				lo = gv[k].end;
		}
		if (put_abs(b, &out, b->base + lo, b->base + hi, lv[i].id) ==
		    -1)
			goto out;
	}
	for (i = 0; i < g.n; i++)
		if (put_abs(b, &out, b->base + gv[i].start, b->base + gv[i].end,
			gv[i].id) == -1)
			goto out;
	/*
	 * Labels, address by address: the last (preferred) sizeless symbol
	 * at an address holds from there to the next symbol's address or its
	 * section's end, when no sized symbol that starts at or below it
	 * ends above it.
	 */
	for (i = 0; i < n; i = k) {
		uint64_t a = s[i].addr, hi;
		size_t label = SIZE_MAX;
		const struct sec *sec;

		for (k = i; k < n && s[k].addr == a; k++) {
			if (s[k].size == 0)
				label = k;
			else if (a + s[k].size > maxend)
				maxend = a + s[k].size;
		}
		if (label == SIZE_MAX || a < maxend ||
		    (sec = sec_find(b, a)) == NULL)
			continue;
		hi = k < n && s[k].addr < sec->hi ? s[k].addr : sec->hi;
		if (put_abs(b, &out, a, hi, (uint32_t)label + 1) == -1)
			goto out;
	}
	sort(out.p, out.n, sizeof(struct iv_id), iv_cmp);
	rename_plain(b, out.p, out.n);
	one.first = 0;
	one.n = out.n;
	runs.n = 0;
	if (vec_push(&runs, sizeof(one)) == NULL) {
		nomem(b);
		goto out;
	}
	memcpy(runs.p, &one, sizeof(one));
	if (kmerge(b, &out, sizeof(struct iv_id), &runs, take_id, &t) == -1 ||
	    take_end(&t, 0) == -1)
		goto out;
	for (i = 0; i < n; i++) {
		struct fmt_symbol *f = vec_push(&b->symout, sizeof(*f));

		if (f == NULL) {
			nomem(b);
			goto out;
		}
		memset(f, 0, sizeof(*f));
		f->addr = (uint32_t)(s[i].addr - b->base);
		f->size = (uint32_t)s[i].size;
		f->name = s[i].name;
		f->bind = s[i].bind;
		f->type = s[i].type;
	}
	rc = 0;
out:
	vec_free(&g);
	vec_free(&l);
	vec_free(&runs);
	vec_free(&out);
	return rc;
}

/* ----------------------------------------------------------- writing */

struct out {
	int fd;
	uint64_t off;
	struct fmt_header h;
	char *err;
	size_t errlen;
};

static int
out_write(struct out *o, const void *p, size_t n)
{
	const char *c = p;
	ssize_t w;

	while (n > 0) {
		w = pwrite(o->fd, c, n, (off_t)o->off);
		if (w == -1 && errno == EINTR)
			continue;
		if (w <= 0) {
			snprintf(o->err, o->errlen, "write: %s",
			    w == 0 ? "nothing written" : strerror(errno));
			return -1;
		}
		c += w;
		n -= (size_t)w;
		o->off += (uint64_t)w;
	}
	return 0;
}

/* Section s: n bytes (count entries) at the next 8-aligned offset. */
static int
out_sect(struct out *o, enum fmt_sect s, const void *p, size_t n,
    uint64_t count)
{
	static const char zero[FMT_ALIGN];
	size_t pad = (size_t)((FMT_ALIGN - o->off % FMT_ALIGN) % FMT_ALIGN);

	if (out_write(o, zero, pad) == -1)
		return -1;
	o->h.dir[s].offset = o->off;
	o->h.dir[s].size = n;
	o->h.dir[s].count = count;
	return n > 0 ? out_write(o, p, n) : 0;
}

static int
out_map(struct out *o, enum fmt_sect keys, const struct mapenc *m)
{
	return out_sect(o, keys, m->keys.p, m->keys.n * 4, m->keys.n) == -1 ||
		out_sect(o, keys + 1, m->offs.p, m->offs.n * 4, m->offs.n) ==
		    -1 ||
		out_sect(o, keys + 2, m->data.p, m->data.n, m->count) == -1
	    ? -1
	    : 0;
}

/* The SHA-256 of what was written, read back, into the header. */
static int
out_checksum(struct out *o)
{
	EVP_MD_CTX *ctx;
	unsigned char *buf;
	uint64_t off = 0;
	unsigned len = 0;
	ssize_t n;
	int ok = 0;

	if ((buf = malloc(CHUNK_SUM)) == NULL ||
	    (ctx = EVP_MD_CTX_new()) == NULL) {
		free(buf);
		snprintf(o->err, o->errlen, "out of memory");
		return -1;
	}
	if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
		goto out;
	while (off < o->off) {
		n = pread(o->fd, buf, CHUNK_SUM, (off_t)off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0 || EVP_DigestUpdate(ctx, buf, (size_t)n) != 1)
			goto out;
		off += (uint64_t)n;
	}
	ok = EVP_DigestFinal_ex(ctx, o->h.checksum, &len) == 1 && len == 32;
out:
	EVP_MD_CTX_free(ctx);
	free(buf);
	if (!ok)
		snprintf(o->err, o->errlen, "cannot read the table back");
	return ok ? 0 : -1;
}

static int
write_table(struct bld *b, const struct symdwarf_info *info, int fd,
    uint64_t *size)
{
	struct out o;
	struct fmt_segment *seg = NULL;
	uint64_t end;
	unsigned i;
	int rc = -1;

	memset(&o, 0, sizeof(o));
	o.fd = fd;
	o.err = b->err;
	o.errlen = b->errlen;
	if (info->nseg > 0 && (seg = calloc(info->nseg, sizeof(*seg))) == NULL)
		return nomem(b);
	for (i = 0; i < info->nseg; i++) {
		seg[i].vaddr = info->seg[i].vaddr;
		seg[i].memsz = info->seg[i].memsz;
		seg[i].offset = info->seg[i].offset;
		seg[i].filesz = info->seg[i].filesz;
		seg[i].flags = info->seg[i].flags;
	}
	memcpy(o.h.magic, FMT_MAGIC, 8);
	o.h.version = FMT_VERSION;
	o.h.header_size = sizeof(o.h);
	o.h.base = b->base;
	o.h.limit = b->limit;
	o.h.id_len = info->id.len;
	memcpy(o.h.id, info->id.bytes, info->id.len);
	o.h.alt_len = info->alt_id.len;
	memcpy(o.h.alt, info->alt_id.bytes, info->alt_id.len);
	o.h.source = (uint8_t)info->source;
	o.h.symsource = (uint8_t)info->symsource;
	o.h.phdrs = info->phdrs == 1 ? SYMTAB_PHDRS_EXEC
	    : info->phdrs == 2       ? SYMTAB_PHDRS_DEBUG
				     : SYMTAB_PHDRS_NONE;
	o.h.block = FMT_BLOCK;
	o.off = sizeof(o.h);
	if (out_sect(&o, FMT_STRINGS, b->str.bytes.p, b->str.bytes.n,
		b->str.n) == -1 ||
	    out_sect(&o, FMT_FILES, b->files.p, b->files.n * 4, b->files.n) ==
		-1 ||
	    out_sect(&o, FMT_SCOPES, b->scopes.p,
		b->scopes.n * sizeof(struct fmt_scope), b->scopes.n) == -1 ||
	    out_sect(&o, FMT_SYMBOLS, b->symout.p,
		b->symout.n * sizeof(struct fmt_symbol), b->symout.n) == -1 ||
	    out_sect(&o, FMT_SEGMENTS, seg, info->nseg * sizeof(*seg),
		info->nseg) == -1 ||
	    out_map(&o, FMT_LINE_KEYS, &b->lmap) == -1 ||
	    out_map(&o, FMT_SCOPE_KEYS, &b->smap) == -1 ||
	    out_map(&o, FMT_SYM_KEYS, &b->ymap) == -1)
		goto out;
	end = o.off;
	o.h.file_size = end;
	o.off = 0;
	if (out_write(&o, &o.h, sizeof(o.h)) == -1)
		goto out;
	o.off = end;
	if (ftruncate(fd, (off_t)end) == -1) {
		snprintf(b->err, b->errlen, "ftruncate: %s", strerror(errno));
		goto out;
	}
	if (out_checksum(&o) == -1)
		goto out;
	o.off = 0;
	if (out_write(&o, &o.h, sizeof(o.h)) == -1)
		goto out;
	*size = end;
	rc = 0;
out:
	free(seg);
	return rc;
}

static void
bld_free(struct bld *b)
{
	vec_free(&b->str.bytes);
	free(b->str.slot);
	vec_free(&b->files);
	free(b->filemap.key);
	free(b->filemap.val);
	vec_free(&b->secs);
	vec_free(&b->scopes);
	vec_free(&b->ur);
	vec_free(&b->uw);
	vec_free(&b->lines);
	vec_free(&b->lruns);
	vec_free(&b->ids);
	vec_free(&b->sruns);
	vec_free(&b->cur);
	vec_free(&b->claims);
	vec_free(&b->syms);
	vec_free(&b->plains);
	vec_free(&b->symout);
	enc_free(&b->lmap);
	enc_free(&b->smap);
	enc_free(&b->ymap);
}

int
symbuild_run(const struct symbuild_in *in, int out_fd,
    struct symbuild_stats *st, char *err, size_t errlen)
{
	static const struct symdwarf_sink ops = { NULL, sink_string, sink_file,
		sink_section, sink_unit_range, sink_scope, sink_range, sink_row,
		sink_unit_end, sink_symbol };
	struct symdwarf_sink sink = ops;
	struct symdwarf_in rin = { in->debug_fd, in->alt_fd, in->exec_fd,
		in->tmpdir };
	struct symdwarf_info *info;
	struct bld b;
	uint64_t size = 0;
	uint32_t empty;
	int rc = -1;

	memset(&b, 0, sizeof(b));
	b.err = err;
	b.errlen = errlen;
	sink.arg = &b;
	/* The empty string first: a table's string table is never empty,
	 * even one whose DWARF names nothing. */
	if ((info = calloc(1, sizeof(*info))) == NULL ||
	    str_intern(&b.str, "", &empty) == -1) {
		free(info);
		bld_free(&b);
		return nomem(&b);
	}
	if (symdwarf_read(&rin, &sink, info, err, errlen) == -1)
		goto out;
	if (prepare(&b) == -1 || ownership(&b) == -1 ||
	    encode_lines(&b) == -1 || encode_scopes(&b) == -1 ||
	    encode_symbols(&b) == -1 ||
	    write_table(&b, info, out_fd, &size) == -1)
		goto out;
	if (st != NULL) {
		st->dwarf_bytes = info->dwarf_bytes;
		st->table_bytes = size;
		st->scopes = b.scopes.n;
		st->line_entries = b.lmap.count;
		st->scope_entries = b.smap.count;
		st->symbols = b.symout.n;
		st->units = info->units;
	}
	rc = 0;
out:
	free(info);
	bld_free(&b);
	return rc;
}
