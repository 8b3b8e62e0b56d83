/*
 * symbolizer/elfsyms.c: which ELF symbol covers each address, for the
 * symbol table builder (symbolizer/build_int.h).
 *
 * ELF symbols are chosen per address as libdwfl's dwfl_module_addrsym
 * does: among the sized symbols that contain it, global and weak ones
 * before locals, the closest start, then the strongest binding, then the
 * smallest size, then the first in the table; where none does, the
 * closest sizeless symbol (an assembly label) of the same section that no
 * sized symbol ends after.
 *
 * Single-threaded: one build, one struct bld.
 */
#include <elf.h>
#include <stdint.h>
#include <string.h>

#include "symbolizer/build_int.h"

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
		if ((u = bld_vec_push(&r, sizeof(*u))) == NULL) {
			bld_vec_free(&r);
			return bld_nomem(b);
		}
		u->lo = s[i].addr;
		u->hi = s[i].addr + s[i].size;
		u->id = (uint32_t)i + 1;
	}
	rc = bld_flatten(b, r.p, r.n, v, runs);
	bld_vec_free(&r);
	return rc;
}

/* Put an interval into v (absolute addresses) unless it is empty. */
static int
put_abs(struct bld *b, struct vec *v, uint64_t lo, uint64_t hi, uint32_t id)
{
	struct iv_id *p;

	if (hi <= lo)
		return 0;
	if ((p = bld_vec_push(v, sizeof(*p))) == NULL)
		return bld_nomem(b);
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
int
bld_encode_symbols(struct bld *b)
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
		    !bld_clip(b, s[i].addr, &hi))
			continue;
		if (s[i].size > 0)
			s[i].size = hi - s[i].addr;
		s[n++] = s[i];
	}
	b->syms.n = n;
	bld_sort(s, n, sizeof(*s), bsym_cmp);
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
		    (sec = bld_sec_find(b, a)) == NULL)
			continue;
		hi = k < n && s[k].addr < sec->hi ? s[k].addr : sec->hi;
		if (put_abs(b, &out, a, hi, (uint32_t)label + 1) == -1)
			goto out;
	}
	bld_sort(out.p, out.n, sizeof(struct iv_id), iv_cmp);
	rename_plain(b, out.p, out.n);
	one.first = 0;
	one.n = out.n;
	runs.n = 0;
	if (bld_vec_push(&runs, sizeof(one)) == NULL) {
		bld_nomem(b);
		goto out;
	}
	memcpy(runs.p, &one, sizeof(one));
	if (bld_kmerge(b, &out, sizeof(struct iv_id), &runs, bld_take_id, &t) ==
		-1 ||
	    bld_take_end(&t, 0) == -1)
		goto out;
	for (i = 0; i < n; i++) {
		struct fmt_symbol *f = bld_vec_push(&b->symout, sizeof(*f));

		if (f == NULL) {
			bld_nomem(b);
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
	bld_vec_free(&g);
	bld_vec_free(&l);
	bld_vec_free(&runs);
	bld_vec_free(&out);
	return rc;
}
