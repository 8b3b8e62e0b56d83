/*
 * symbolizer/maps.c: the units' line and scope intervals made into the
 * table's maps (symbolizer/build_int.h, symbolizer/format.h).
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
 * their maps: blocks of FMT_BLOCK entries, each block's first entry whole,
 * the others as deltas (LEB128).
 *
 * Single-threaded: one build, one struct bld.
 */
#include <stdlib.h>
#include <string.h>

#include "symbolizer/build_int.h"

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
	return bld_vec_append(v, buf, n);
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
	return bld_vec_append(v, buf, n);
}

static int
put_u32(struct vec *v, uint32_t x)
{
	uint32_t *p = bld_vec_push(v, sizeof(x));

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

void
bld_enc_free(struct mapenc *m)
{
	bld_vec_free(&m->keys);
	bld_vec_free(&m->offs);
	bld_vec_free(&m->data);
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

int
bld_kmerge(struct bld *b, const struct vec *items, size_t elt,
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
		return bld_nomem(b);
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
				if ((p = bld_vec_push(&out, elt)) == NULL) {
					bld_vec_free(&out);
					return bld_nomem(b);
				}
				memcpy(p, it, elt);
				memcpy(p, &a, 4);
				memcpy(p + 4, &e, 4);
			}
		}
		r[i].first = nfirst;
		r[i].n = out.n - nfirst;
	}
	bld_vec_free(items);
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
		bld_nomem(b);
		goto out;
	}
	/* Units are numbered from 1 here, as the bitmap wants. */
	for (i = 0; i < b->claims.n; i++) {
		ev[2 * i] = (struct event){ c[i].start, c[i].id + 1, 1 };
		ev[2 * i + 1] = (struct event){ c[i].end, c[i].id + 1, 0 };
	}
	bld_sort(ev, 2 * b->claims.n, sizeof(*ev), bld_event_cmp);
	for (i = 0; i < 2 * b->claims.n; i++) {
		uint32_t at = (uint32_t)ev[i].addr, u = ev[i].id;

		if (any && prev < at && bld_bits_next(&valid, 1) != 0) {
			if (last != NULL && last->end == prev &&
			    count[last->id + 1] > 0) {
				last->end = at;
			} else {
				if ((last = bld_vec_push(own, sizeof(*last))) ==
				    NULL) {
					bld_nomem(b);
					goto out;
				}
				last->start = prev;
				last->end = at;
				last->id = bld_bits_next(&valid, 1) - 1;
			}
		}
		if (ev[i].open && count[u]++ == 0)
			bld_bits_set(&valid, u, 1);
		else if (!ev[i].open && --count[u] == 0)
			bld_bits_set(&valid, u, 0);
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
int
bld_ownership(struct bld *b)
{
	struct vec own = { 0 };
	size_t *first = NULL, i, nunits = b->lruns.n;
	int rc = -1;

	if (owners(b, &own) == -1)
		goto out;
	bld_sort(own.p, own.n, sizeof(struct iv_id), own_cmp);
	if ((first = calloc(nunits + 1, sizeof(*first))) == NULL) {
		bld_nomem(b);
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
	bld_vec_free(&own);
	bld_vec_free(&b->claims);
	return rc;
}

/*
 * Whether an interval [*start, end) of the merge adds to the map taken so
 * far: 1, *start moved past what earlier intervals covered; 0 when it is
 * empty or covered already.
 */
static int
take_clip(const struct take *t, uint32_t *start, uint32_t end)
{
	if (end <= *start)
		return 0;
	if (t->any && *start < t->end) {
		if (end <= t->end)
			return 0;
		*start = t->end;
	}
	return 1;
}

static int
take_line(void *arg, const void *item)
{
	struct take *t = arg;
	const struct iv_line *v = item;
	uint32_t start = v->start;

	if (!take_clip(t, &start, v->end))
		return 0;
	if (t->any && start > t->end &&
	    enc_line(t->m, t->end, 1, 0, 0, 0) == -1)
		return bld_nomem(t->b);
	if (!(t->any && start == t->end && t->prev_line != NULL &&
		t->prev_line->file == v->file &&
		t->prev_line->line == v->line &&
		t->prev_line->column == v->column) &&
	    enc_line(t->m, start, 0, v->file, v->line, v->column) == -1)
		return bld_nomem(t->b);
	t->prev_line = v;
	t->end = v->end;
	t->any = 1;
	return 0;
}

int
bld_take_id(void *arg, const void *item)
{
	struct take *t = arg;
	const struct iv_id *v = item;
	uint32_t start = v->start;

	if (!take_clip(t, &start, v->end))
		return 0;
	if (t->any && start > t->end) {
		if (enc_id(t->m, t->end, 0) == -1)
			return bld_nomem(t->b);
		t->prev_id = 0;
	}
	if (!(t->any && start == t->end && t->prev_id == v->id) &&
	    enc_id(t->m, start, v->id) == -1)
		return bld_nomem(t->b);
	t->prev_id = v->id;
	t->end = v->end;
	t->any = 1;
	return 0;
}

/* A merged map ends with a gap, unless it reaches the limit. */
int
bld_take_end(struct take *t, int line)
{
	if (t->any && t->end < t->b->limit - t->b->base &&
	    (line ? enc_line(t->m, t->end, 1, 0, 0, 0)
		  : enc_id(t->m, t->end, 0)) == -1)
		return bld_nomem(t->b);
	return enc_finish(t->m) == -1 ? bld_nomem(t->b) : 0;
}

int
bld_encode_lines(struct bld *b)
{
	struct take t = { b, &b->lmap, 0, 0, NULL, 0 };

	b->lmap.line = 1;
	if (bld_kmerge(b, &b->lines, sizeof(struct iv_line), &b->lruns,
		take_line, &t) == -1 ||
	    bld_take_end(&t, 1) == -1)
		return -1;
	bld_vec_free(&b->lines);
	bld_vec_free(&b->lruns);
	return 0;
}

int
bld_encode_scopes(struct bld *b)
{
	struct take t = { b, &b->smap, 0, 0, NULL, 0 };

	if (bld_kmerge(b, &b->ids, sizeof(struct iv_id), &b->sruns, bld_take_id,
		&t) == -1 ||
	    bld_take_end(&t, 0) == -1)
		return -1;
	bld_vec_free(&b->ids);
	bld_vec_free(&b->sruns);
	return 0;
}
