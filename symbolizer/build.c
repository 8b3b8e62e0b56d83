/*
 * symbolizer/build.c: the symbol table builder (symbolizer/build.h): the
 * sink of indexer/symdwarf.h's records, and symbuild_run, which reads
 * them and has the table encoded and written.
 *
 * Each unit's records are turned into sorted runs of intervals as the
 * unit ends, so only one unit's raw records are held at a time:
 *
 *  - line rows: row i holds from its address to row i+1's (the reader
 *    gives each sequence's rows that hold bytes, in address order),
 *    unless it ends a sequence;
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
 * Which unit speaks for an address, where several claim it, is
 * symbolizer/maps.c's (which encodes the maps), which ELF symbol covers
 * it symbolizer/elfsyms.c's; symbolizer/writer.c writes the file
 * (symbolizer/build_int.h says how the files call each other).
 *
 * Everything is sorted on total orders and every byte written is set, so
 * the same inputs make the same table.  Single-threaded: one build, one
 * struct bld.
 */
#include "symbolizer/build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "indexer/symdwarf.h"
#include "symbolizer/build_int.h"
#include "symbolizer/format.h"

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
	if (bld_vec_append(&t->bytes, s, n + 1) == -1)
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

	return str_intern(&b->str, s, id) == -1 ? bld_nomem(b) : 0;
}

static int
sink_file(void *arg, const char *path, uint32_t *id)
{
	struct bld *b = arg;
	uint32_t off, *slot;
	int added;

	if (str_intern(&b->str, path, &off) == -1 ||
	    idmap_get(&b->filemap, off, id, (uint32_t)b->files.n, &added) == -1)
		return bld_nomem(b);
	if (added) {
		if ((slot = bld_vec_push(&b->files, sizeof(*slot))) == NULL)
			return bld_nomem(b);
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
	if ((s = bld_vec_push(&b->secs, sizeof(*s))) == NULL)
		return bld_nomem(b);
	s->lo = addr;
	s->hi = addr + size;
	return 0;
}

static int
sink_unit_range(void *arg, uint64_t lo, uint64_t hi)
{
	struct bld *b = arg;
	struct sec *s;

	if ((s = bld_vec_push(&b->cur, sizeof(*s))) == NULL)
		return bld_nomem(b);
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
	    (f = bld_vec_push(&b->scopes, sizeof(*f))) == NULL)
		return bld_nomem(b);
	f->name = s->name;
	f->parent = s->parent;
	f->call_file = s->call_file;
	f->call_line = s->call_line;
	f->call_column = s->call_column;
	*id = (uint32_t)b->scopes.n;
	if (s->plain_nested) {
		struct plain *p = bld_vec_push(&b->plains, sizeof(*p));

		if (p == NULL)
			return bld_nomem(b);
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

	if ((r = bld_vec_push(&b->ur, sizeof(*r))) == NULL)
		return bld_nomem(b);
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

	if ((w = bld_vec_push(&b->uw, sizeof(*w))) == NULL)
		return bld_nomem(b);
	w->addr = addr;
	w->file = file;
	w->line = line;
	w->column = column;
	return 0;
}

/* What dwarf_getscopes() would find among the open scopes, or 0. */
static uint32_t
innermost(const struct bld *b, const struct bits *open)
{
	const struct fmt_scope *sc = b->scopes.p;
	uint32_t x = bld_bits_next(open, 0), y;

	while (x != 0 && (y = bld_bits_next(open, (uint64_t)x + 1)) != 0 &&
	    sc[y - 1].parent == x)
		x = y;
	return x;
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

	if ((run = bld_vec_push(&b->sruns, sizeof(*run))) == NULL)
		return bld_nomem(b);
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
		bld_nomem(b);
		goto out;
	}
	for (i = 0; i < n; i++) {
		ev[2 * i] = (struct event){ r[i].lo, r[i].id, 1 };
		ev[2 * i + 1] = (struct event){ r[i].hi, r[i].id, 0 };
	}
	bld_sort(ev, 2 * n, sizeof(*ev), bld_event_cmp);
	for (i = 0; i < 2 * n;) {
		uint64_t at = ev[i].addr;

		for (; i < 2 * n && ev[i].addr == at; i++)
			bld_bits_set(&open, ev[i].id, ev[i].open);
		if ((w = innermost(b, &open)) == cur)
			continue;
		if (cur != 0 &&
		    bld_put_id(b, &b->ids, run, from, at, cur) == -1)
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

	if ((run = bld_vec_push(&b->lruns, sizeof(*run))) == NULL)
		return bld_nomem(b);
	run->first = b->lines.n;
	for (i = 0; i + 1 < b->uw.n; i++) {
		uint64_t lo = w[i].addr, hi = w[i + 1].addr;
		struct iv_line *p;

		if (w[i].file == 0 || !bld_clip(b, lo, &hi))
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
			continue; /* rows out of order: the reader sorts them */
		if ((p = bld_vec_push(&b->lines, sizeof(*p))) == NULL)
			return bld_nomem(b);
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
		if ((c = bld_vec_push(&b->claims, sizeof(*c))) == NULL)
			return bld_nomem(b);
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

	if (bld_prepare(b) == -1 || unit_lines(b) == -1)
		return -1;
	for (i = 0; i < b->ur.n; i++)
		if (bld_clip(b, r[i].lo, &r[i].hi))
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
	    (y = bld_vec_push(&b->syms, sizeof(*y))) == NULL)
		return bld_nomem(b);
	y->addr = s->addr;
	y->size = s->size;
	y->name = s->name;
	y->bind = s->bind;
	y->type = s->type;
	y->order = (uint32_t)(b->syms.n - 1);
	return 0;
}

static void
bld_free(struct bld *b)
{
	bld_vec_free(&b->str.bytes);
	free(b->str.slot);
	bld_vec_free(&b->files);
	free(b->filemap.key);
	free(b->filemap.val);
	bld_vec_free(&b->secs);
	bld_vec_free(&b->scopes);
	bld_vec_free(&b->ur);
	bld_vec_free(&b->uw);
	bld_vec_free(&b->lines);
	bld_vec_free(&b->lruns);
	bld_vec_free(&b->ids);
	bld_vec_free(&b->sruns);
	bld_vec_free(&b->cur);
	bld_vec_free(&b->claims);
	bld_vec_free(&b->syms);
	bld_vec_free(&b->plains);
	bld_vec_free(&b->symout);
	bld_enc_free(&b->lmap);
	bld_enc_free(&b->smap);
	bld_enc_free(&b->ymap);
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
		return bld_nomem(&b);
	}
	if (symdwarf_read(&rin, &sink, info, err, errlen) == -1)
		goto out;
	if (bld_prepare(&b) == -1 || bld_ownership(&b) == -1 ||
	    bld_encode_lines(&b) == -1 || bld_encode_scopes(&b) == -1 ||
	    bld_encode_symbols(&b) == -1 ||
	    bld_write_table(&b, info, out_fd, &size) == -1)
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
