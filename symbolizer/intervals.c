/*
 * symbolizer/intervals.c: the symbol table builder's building blocks
 * (symbolizer/build_int.h): growable arrays, the executable sections that
 * every interval is kept to, ranges flattened into disjoint id intervals
 * (where the range that starts last wins), sets of ids as bitmaps, and
 * the order of range events.
 *
 * Single-threaded: one build, one struct bld.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer/build_int.h"

void *
bld_vec_push(struct vec *v, size_t elt)
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
int
bld_vec_append(struct vec *v, const void *p, size_t n)
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
void
bld_sort(void *p, size_t n, size_t elt, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(p, n, elt, cmp);
}

void
bld_vec_free(struct vec *v)
{
	free(v->p);
	memset(v, 0, sizeof(*v));
}

int
bld_nomem(struct bld *b)
{
	snprintf(b->err, b->errlen, "out of memory");
	return -1;
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
int
bld_prepare(struct bld *b)
{
	struct sec *s = b->secs.p;
	size_t i, n;

	if (b->prepared)
		return 0;
	if (b->secs.n == 0) {
		snprintf(b->err, b->errlen, "no executable code in the file");
		return -1;
	}
	bld_sort(s, b->secs.n, sizeof(*s), sec_cmp);
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
const struct sec *
bld_sec_find(const struct bld *b, uint64_t addr)
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
int
bld_clip(const struct bld *b, uint64_t lo, uint64_t *hi)
{
	const struct sec *s = bld_sec_find(b, lo);

	if (s == NULL || *hi <= lo)
		return 0;
	if (*hi > s->hi)
		*hi = s->hi;
	return 1;
}

/* Append an id interval to the current run, joining a neighbour. */
int
bld_put_id(struct bld *b, struct vec *v, const struct run *r, uint64_t lo,
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
	if ((p = bld_vec_push(v, sizeof(*p))) == NULL)
		return bld_nomem(b);
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
int
bld_flatten(struct bld *b, struct urange *r, size_t n, struct vec *v,
    struct vec *runs)
{
	size_t *stack, sp = 0, i;
	struct run *run;
	uint64_t cur = 0;
	int rc = -1;

	if ((run = bld_vec_push(runs, sizeof(*run))) == NULL)
		return bld_nomem(b);
	run->first = v->n;
	run->n = 0;
	if (n == 0)
		return 0;
	if ((stack = malloc(n * sizeof(*stack))) == NULL)
		return bld_nomem(b);
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
			if (bld_put_id(b, v, run, cur, e, t->id) == -1)
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

void
bld_bits_set(struct bits *s, uint32_t id, int on)
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
uint32_t
bld_bits_next(const struct bits *s, uint64_t id)
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

int
bld_event_cmp(const void *x, const void *y)
{
	const struct event *a = x, *c = y;

	if (a->addr != c->addr)
		return a->addr < c->addr ? -1 : 1;
	if (a->open != c->open)
		return a->open - c->open; /* ends first */
	return a->id < c->id ? -1 : a->id > c->id;
}
