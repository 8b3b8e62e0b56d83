/*
 * symbolizer/symtab.c: opening a symbol table file and looking addresses
 * up in it (symbolizer/symtab.h; the bytes are symbolizer/format.h's).
 *
 * Opening maps the file read-only, checks its SHA-256, then every part:
 * the directory against the file, each fixed-size record against the
 * tables it names (a scope's parent must come before it, which also rules
 * out cycles; chains are at most FMT_DEPTH_MAX long), and each map by
 * decoding every one of its blocks once.  After that a lookup is three
 * binary searches over the maps' block keys and a few dozen bytes decoded
 * per map, with nothing to check but the block it is in: no allocation,
 * no lock, no write.
 */
#include "symbolizer/symtab.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer/format.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "symbol tables are little-endian and read in place"
#endif

enum { MAP_LINE, MAP_ID };

struct map {
	const uint32_t *keys, *offs;
	const uint8_t *data;
	uint64_t nblocks, count;
	int kind;
	uint64_t nvalues; /* MAP_ID: values go up to it; MAP_LINE: files */
	const struct fmt_symbol *syms; /* the symbol map's, else NULL */
	/*
	 * Made at open, in memory: page[p] is the number of blocks whose key
	 * is below p << shift, so that a lookup's binary search runs over
	 * the few blocks of one page instead of all of them.
	 */
	uint32_t *page;
	uint64_t npages;
	unsigned shift;
};

struct symtab {
	const uint8_t *base;
	size_t size;
	const struct fmt_header *h;
	const char *strings;
	uint64_t nstrings; /* bytes */
	const uint32_t *files;
	uint64_t nfiles;
	const struct fmt_scope *scopes;
	uint64_t nscopes;
	const struct fmt_symbol *symbols;
	uint64_t nsymbols;
	const struct fmt_segment *segments;
	uint64_t nsegments;
	uint64_t span; /* limit - base */
	struct map lines, scopemap, symmap;
};

/* One decoded map entry. */
struct ent {
	uint32_t addr;
	uint32_t id; /* MAP_ID */
	int gap; /* MAP_LINE: no row */
	uint32_t file, line, column;
};

/* A walk over the entries of one block. */
struct mapit {
	const struct map *m;
	const uint8_t *p, *end;
	uint64_t left; /* entries not yet decoded */
	int first;
	struct ent e;
};

const char *
symtab_source_name(enum symtab_source s)
{
	switch (s) {
	case SYMTAB_SRC_DWARF:
		return "debuginfo";
	case SYMTAB_SRC_DEBUG_SYMTAB:
		return "debuginfo_symtab";
	case SYMTAB_SRC_EXEC_SYMTAB:
		return "executable_symtab";
	case SYMTAB_SRC_EXEC_DYNSYM:
		return "executable_dynsym";
	case SYMTAB_SRC_EXEC_MINIDEBUG:
		return "executable_minidebuginfo";
	case SYMTAB_SRC_NONE:
		break;
	}
	return "none";
}

static inline int
uleb(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	unsigned shift = 0;
	uint64_t r = 0;

	/* Most values are one byte. */
	if (*p < end && **p < 0x80) {
		*v = *(*p)++;
		return 0;
	}
	for (;;) {
		uint8_t b;

		if (*p == end || shift > 63)
			return -1;
		b = *(*p)++;
		if (shift == 63 && (b & 0x7e) != 0)
			return -1;
		r |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if ((b & 0x80) == 0)
			break;
	}
	*v = r;
	return 0;
}

static inline int
sleb(const uint8_t **p, const uint8_t *end, int64_t *v)
{
	unsigned shift = 0;
	uint64_t r = 0;
	uint8_t b;

	if (*p < end && **p < 0x80) {
		b = *(*p)++;
		*v = (b & 0x40) ? (int64_t)b - 0x80 : (int64_t)b;
		return 0;
	}
	do {
		if (*p == end || shift > 63)
			return -1;
		b = *(*p)++;
		r |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (shift < 64 && (b & 0x40))
		r |= ~(uint64_t)0 << shift;
	*v = (int64_t)r;
	return 0;
}

static uint64_t
block_entries(const struct map *m, uint64_t b)
{
	return b + 1 < m->nblocks ? FMT_BLOCK
				  : m->count - (m->nblocks - 1) * FMT_BLOCK;
}

static void
mapit_init(struct mapit *it, const struct map *m, uint64_t b)
{
	it->m = m;
	it->p = m->data + m->offs[b];
	it->end = m->data + m->offs[b + 1];
	it->left = block_entries(m, b);
	it->first = 1;
	memset(&it->e, 0, sizeof(it->e));
	it->e.addr = m->keys[b];
}

/*
 * Decode the next entry of the block into it->e: 1, 0 at the end of the
 * block, -1 when the bytes are not a valid entry.
 */
static int
mapit_next(struct mapit *it)
{
	const struct map *m = it->m;
	uint64_t u, tag;
	int64_t d, v;

	if (it->left == 0)
		return 0;
	if (!it->first) {
		if (uleb(&it->p, it->end, &u) == -1 || u == 0 ||
		    u > UINT32_MAX - it->e.addr)
			return -1;
		it->e.addr += (uint32_t)u;
	}
	if (m->kind == MAP_ID) {
		if (it->first) {
			if (uleb(&it->p, it->end, &u) == -1 || u > m->nvalues)
				return -1;
			it->e.id = (uint32_t)u;
		} else {
			if (sleb(&it->p, it->end, &d) == -1)
				return -1;
			v = (int64_t)it->e.id + d;
			if (d < -(int64_t)UINT32_MAX ||
			    d > (int64_t)UINT32_MAX || v < 0 ||
			    (uint64_t)v > m->nvalues)
				return -1;
			it->e.id = (uint32_t)v;
		}
	} else {
		if (uleb(&it->p, it->end, &tag) == -1)
			return -1;
		if (tag == 0) {
			it->e.gap = 1;
		} else {
			if (tag == 1 && (it->first || it->e.file == UINT32_MAX))
				return -1;
			if (tag >= 2) {
				if (tag - 2 >= m->nvalues)
					return -1;
				it->e.file = (uint32_t)(tag - 2);
			}
			if (sleb(&it->p, it->end, &d) == -1 ||
			    d < -(int64_t)UINT32_MAX || d > (int64_t)UINT32_MAX)
				return -1;
			v = (int64_t)it->e.line + d;
			if (v < 0 || v > UINT32_MAX ||
			    uleb(&it->p, it->end, &u) == -1 || u > UINT32_MAX)
				return -1;
			it->e.line = (uint32_t)v;
			it->e.column = (uint32_t)u;
			it->e.gap = 0;
		}
		/*
		 * A gap keeps the file and line of the row before it, which
		 * the next row's are relative to; a block that starts with a
		 * gap has no file yet.
		 */
		if (it->first && tag == 0)
			it->e.file = UINT32_MAX;
	}
	it->first = 0;
	it->left--;
	return 1;
}

/* The entry that holds at rel: 1 with *e, 0 when none does. */
static int
map_find(const struct map *m, uint32_t rel, struct ent *e)
{
	uint64_t lo = 0, hi = m->nblocks, mid;
	struct mapit it;
	struct ent cur;

	uint64_t p = (uint64_t)rel >> m->shift;

	if (m->nblocks == 0 || rel < m->keys[0])
		return 0;
	/* How many keys are <= rel: between those below rel's page and
	 * those below the next page. */
	if (p < m->npages) {
		lo = m->page[p];
		hi = m->page[p + 1];
	}
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (m->keys[mid] <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	mapit_init(&it, m, lo - 1);
	if (mapit_next(&it) != 1)
		return 0;
	cur = it.e;
	while (mapit_next(&it) == 1 && it.e.addr <= rel)
		cur = it.e;
	*e = cur;
	return 1;
}

/* ---------------------------------------------------------------- open */

static int
checksum(const uint8_t *p, size_t n, uint8_t out[32])
{
	static const uint8_t zero[32];
	EVP_MD_CTX *ctx;
	size_t off = offsetof(struct fmt_header, checksum);
	unsigned len = 0;
	int ok;

	if ((ctx = EVP_MD_CTX_new()) == NULL)
		return -1;
	ok = EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
	    EVP_DigestUpdate(ctx, p, off) == 1 &&
	    EVP_DigestUpdate(ctx, zero, sizeof(zero)) == 1 &&
	    EVP_DigestUpdate(ctx, p + off + 32, n - off - 32) == 1 &&
	    EVP_DigestFinal_ex(ctx, out, &len) == 1 && len == 32;
	EVP_MD_CTX_free(ctx);
	return ok ? 0 : -1;
}

/* Where section s is, with entries of entsize bytes (0: bytes): 0 or -1. */
static int
sect(const struct symtab *t, enum fmt_sect s, size_t entsize, const void **p,
    uint64_t *count)
{
	const struct fmt_dirent *d = &t->h->dir[s];

	if (d->offset % FMT_ALIGN != 0 ||
	    d->offset < sizeof(struct fmt_header) || d->offset > t->size ||
	    d->size > t->size - d->offset)
		return -1;
	if (entsize != 0 &&
	    (d->size % entsize != 0 || d->count != d->size / entsize))
		return -1;
	*p = t->base + d->offset;
	*count = d->count;
	return 0;
}

/* The page index of m: pages of at least 4 KiB, at most 65,536 of them. */
static int
map_pages(const struct symtab *t, struct map *m)
{
	uint64_t p, b = 0;

	m->shift = 12;
	while ((t->span >> m->shift) >= 65536)
		m->shift++;
	m->npages = (t->span >> m->shift) + 1;
	if ((m->page = calloc(m->npages + 1, sizeof(*m->page))) == NULL)
		return -1;
	for (p = 0; p <= m->npages; p++) {
		while (b < m->nblocks && m->keys[b] < p << m->shift)
			b++;
		m->page[p] = (uint32_t)b;
	}
	return 0;
}

static int
map_open(struct symtab *t, struct map *m, enum fmt_sect keys, int kind,
    uint64_t nvalues)
{
	const void *k, *o, *d;
	uint64_t nkeys, noffs, count, b, prev_end = 0, total = 0;
	struct mapit it;
	int rc;

	if (sect(t, keys, 4, &k, &nkeys) == -1 ||
	    sect(t, keys + 1, 4, &o, &noffs) == -1 ||
	    sect(t, keys + 2, 0, &d, &count) == -1)
		return -1;
	m->keys = k;
	m->offs = o;
	m->data = d;
	m->nblocks = nkeys;
	m->count = count;
	m->kind = kind;
	m->nvalues = nvalues;
	m->syms = keys == FMT_SYM_KEYS ? t->symbols : NULL;
	if (nkeys >= UINT32_MAX || noffs != nkeys + 1 || m->offs[0] != 0 ||
	    m->offs[nkeys] != t->h->dir[keys + 2].size ||
	    nkeys != (count + FMT_BLOCK - 1) / FMT_BLOCK)
		return -1;
	for (b = 0; b < nkeys; b++) {
		if (m->offs[b + 1] < m->offs[b] || m->keys[b] >= t->span ||
		    (b > 0 && m->keys[b] < prev_end))
			return -1;
		mapit_init(&it, m, b);
		while ((rc = mapit_next(&it)) == 1) {
			/* A covering symbol starts at or below what it covers:
			 * an answer's sym_offset is never negative. */
			if (it.e.addr >= t->span ||
			    (m->syms != NULL && it.e.id != 0 &&
				m->syms[it.e.id - 1].addr > it.e.addr))
				return -1;
			total++;
		}
		if (rc == -1 || it.p != it.end)
			return -1;
		/* The next block starts after this one's last entry. */
		prev_end = (uint64_t)it.e.addr + 1;
	}
	if (total != count)
		return -1;
	return map_pages(t, m);
}

static int
check_tables(struct symtab *t)
{
	uint64_t i, n;
	uint8_t *depth;
	const void *p;
	uint32_t prev = 0;

	if (sect(t, FMT_STRINGS, 0, &p, &n) == -1 ||
	    t->h->dir[FMT_STRINGS].size == 0)
		return -1;
	t->strings = p;
	t->nstrings = t->h->dir[FMT_STRINGS].size;
	if (t->strings[t->nstrings - 1] != '\0')
		return -1;
	if (sect(t, FMT_FILES, 4, &p, &t->nfiles) == -1)
		return -1;
	t->files = p;
	for (i = 0; i < t->nfiles; i++)
		if (t->files[i] >= t->nstrings)
			return -1;
	if (sect(t, FMT_SYMBOLS, sizeof(struct fmt_symbol), &p, &t->nsymbols) ==
		-1 ||
	    t->nsymbols >= UINT32_MAX)
		return -1;
	t->symbols = p;
	for (i = 0; i < t->nsymbols; i++) {
		const struct fmt_symbol *s = &t->symbols[i];

		if (s->name >= t->nstrings || s->addr >= t->span ||
		    s->size > t->span - s->addr || s->addr < prev)
			return -1;
		prev = s->addr;
	}
	if (sect(t, FMT_SEGMENTS, sizeof(struct fmt_segment), &p,
		&t->nsegments) == -1)
		return -1;
	t->segments = p;
	for (i = 0; i < t->nsegments; i++) {
		const struct fmt_segment *g = &t->segments[i];

		if (g->filesz > UINT64_MAX - g->offset ||
		    g->filesz > UINT64_MAX - g->vaddr)
			return -1;
	}
	if (sect(t, FMT_SCOPES, sizeof(struct fmt_scope), &p, &t->nscopes) ==
		-1 ||
	    t->nscopes >= UINT32_MAX)
		return -1;
	t->scopes = p;
	if ((depth = malloc(t->nscopes + 1)) == NULL)
		return -1;
	for (i = 0; i < t->nscopes; i++) {
		const struct fmt_scope *s = &t->scopes[i];

		if (s->name >= t->nstrings || s->parent > i ||
		    s->call_file > t->nfiles)
			break;
		depth[i] = s->parent == 0 ? 1 : depth[s->parent - 1] + 1;
		if (depth[i] > FMT_DEPTH_MAX)
			break;
	}
	free(depth);
	if (i < t->nscopes)
		return -1;
	if (map_open(t, &t->lines, FMT_LINE_KEYS, MAP_LINE, t->nfiles) == -1 ||
	    map_open(t, &t->scopemap, FMT_SCOPE_KEYS, MAP_ID, t->nscopes) ==
		-1 ||
	    map_open(t, &t->symmap, FMT_SYM_KEYS, MAP_ID, t->nsymbols) == -1)
		return -1;
	return 0;
}

static const char *
check_header(struct symtab *t)
{
	const struct fmt_header *h = t->h;
	uint8_t sum[32];

	if (t->size < sizeof(*h) || memcmp(h->magic, FMT_MAGIC, 8) != 0)
		return "not a symbol table";
	if (h->version != FMT_VERSION)
		return "a symbol table of another version";
	if (h->header_size != sizeof(*h) || h->file_size != t->size)
		return "a truncated or padded symbol table";
	if (checksum(t->base, t->size, sum) == -1)
		return "cannot compute a checksum";
	if (memcmp(sum, h->checksum, sizeof(sum)) != 0)
		return "bad checksum";
	if (h->id_len == 0 || h->id_len > FMT_ID_MAX ||
	    h->alt_len > FMT_ID_MAX || h->block != FMT_BLOCK ||
	    h->source > SYMTAB_SRC_EXEC_MINIDEBUG ||
	    h->symsource > SYMTAB_SRC_EXEC_MINIDEBUG ||
	    h->phdrs > SYMTAB_PHDRS_DEBUG || h->base > h->limit ||
	    h->limit - h->base > (uint64_t)UINT32_MAX + 1)
		return "bad symbol table header";
	t->span = h->limit - h->base;
	return NULL;
}

struct symtab *
symtab_open(int fd, const char **why)
{
	struct symtab *t;
	struct stat st;
	void *p;

	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		*why = "not a regular file";
		return NULL;
	}
	if (st.st_size < (off_t)sizeof(struct fmt_header)) {
		*why = "not a symbol table";
		return NULL;
	}
	if ((t = calloc(1, sizeof(*t))) == NULL) {
		*why = "out of memory";
		return NULL;
	}
	t->size = (size_t)st.st_size;
	p = mmap(NULL, t->size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		free(t);
		*why = "cannot map the file";
		return NULL;
	}
	t->base = p;
	t->h = p;
	if ((*why = check_header(t)) != NULL) {
		symtab_close(t);
		return NULL;
	}
	if (check_tables(t) == -1) {
		symtab_close(t);
		*why = "inconsistent symbol table";
		return NULL;
	}
	return t;
}

void
symtab_close(struct symtab *t)
{
	if (t == NULL)
		return;
	free(t->lines.page);
	free(t->scopemap.page);
	free(t->symmap.page);
	munmap((void *)t->base, t->size);
	free(t);
}

void
symtab_buildid(const struct symtab *t, struct buildid *id)
{
	id->len = t->h->id_len;
	memcpy(id->bytes, t->h->id, id->len);
}

void
symtab_altid(const struct symtab *t, struct buildid *alt)
{
	alt->len = t->h->alt_len;
	memcpy(alt->bytes, t->h->alt, alt->len);
}

enum symtab_source
symtab_source(const struct symtab *t)
{
	return (enum symtab_source)t->h->source;
}

enum symtab_source
symtab_symsource(const struct symtab *t)
{
	return (enum symtab_source)t->h->symsource;
}

enum symtab_phdrs
symtab_phdrs(const struct symtab *t)
{
	return (enum symtab_phdrs)t->h->phdrs;
}

uint64_t
symtab_size(const struct symtab *t)
{
	return t->size;
}

const uint8_t *
symtab_checksum(const struct symtab *t)
{
	return t->h->checksum;
}

/* -------------------------------------------------------------- lookup */

/* The last symbol at or below rel (the preferred of equals comes last). */
static const struct fmt_symbol *
nearest_symbol(const struct symtab *t, uint64_t rel)
{
	uint64_t lo = 0, hi = t->nsymbols, mid;

	if (t->nsymbols == 0 || t->symbols[0].addr > rel)
		return NULL;
	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		if (t->symbols[mid].addr <= rel)
			lo = mid;
		else
			hi = mid;
	}
	return &t->symbols[lo];
}

void
symtab_lookup(const struct symtab *t, uint64_t va, struct symtab_result *r)
{
	const struct fmt_symbol *sym = NULL;
	const struct fmt_scope *s;
	struct ent scope, line, cover;
	struct symtab_frame *f = r->frames;
	int have_scope = 0, have_line = 0;
	uint32_t rel;

	r->status = SYMTAB_NO_SYMBOL;
	r->symbol = NULL;
	r->sym_addr = 0;
	r->nearest = 0;
	r->nframes = 0;
	r->line_addr = 0;
	if (va < t->h->base)
		return;
	if (va - t->h->base >= t->span) {
		if ((sym = nearest_symbol(t, t->span)) != NULL) {
			r->symbol = t->strings + sym->name;
			r->sym_addr = t->h->base + sym->addr;
			r->nearest = 1;
		}
		return;
	}
	rel = (uint32_t)(va - t->h->base);
	have_scope = map_find(&t->scopemap, rel, &scope) && scope.id != 0;
	have_line = map_find(&t->lines, rel, &line) && !line.gap;
	if (map_find(&t->symmap, rel, &cover) && cover.id != 0)
		sym = &t->symbols[cover.id - 1];
	else if ((sym = nearest_symbol(t, rel)) != NULL)
		r->nearest = 1;
	if (sym != NULL) {
		r->symbol = t->strings + sym->name;
		r->sym_addr = t->h->base + sym->addr;
	}
	if (have_line)
		r->line_addr = t->h->base + line.addr;
	f->file = have_line ? t->strings + t->files[line.file] : NULL;
	f->line = have_line ? line.line : 0;
	f->column = have_line ? line.column : 0;
	f->inlined = 0;
	if (have_scope) {
		s = &t->scopes[scope.id - 1];
		f->function = t->strings + s->name;
		r->nframes = 1;
		/* The open checked parents come first and chains are short. */
		while (s->parent != 0 && r->nframes < SYMTAB_FRAMES_MAX) {
			f->inlined = 1;
			f++;
			f->function =
			    t->strings + t->scopes[s->parent - 1].name;
			f->file = s->call_file == 0
			    ? NULL
			    : t->strings + t->files[s->call_file - 1];
			f->line = s->call_line;
			f->column = s->call_column;
			f->inlined = 0;
			s = &t->scopes[s->parent - 1];
			r->nframes++;
		}
		r->status = have_line ? SYMTAB_OK : SYMTAB_NO_LINE;
	} else if (sym != NULL && !r->nearest) {
		f->function = r->symbol;
		r->nframes = 1;
		r->status = have_line ? SYMTAB_OK : SYMTAB_NO_LINE;
	} else {
		/* In no function: the line row, if any, says where. */
		f->function = NULL;
		r->nframes = have_line ? 1 : 0;
	}
}

int
symtab_offset_to_va(const struct symtab *t, uint64_t off, uint64_t *va,
    const char **why)
{
	uint64_t i;

	if (t->h->phdrs == SYMTAB_PHDRS_NONE) {
		*why = "no usable program headers (a separate debug file's "
		       "are empty; the executable was not available)";
		return -1;
	}
	for (i = 0; i < t->nsegments; i++) {
		const struct fmt_segment *g = &t->segments[i];

		if (off >= g->offset && off - g->offset < g->filesz) {
			*va = g->vaddr + (off - g->offset);
			return 0;
		}
	}
	*why = "file offset in no loaded segment";
	return -1;
}

int
symtab_abs_to_va(const struct symtab *t, uint64_t addr, uint64_t start,
    uint64_t map_offset, uint64_t *va, const char **why)
{
	if (addr < start) {
		*why = "address below the mapping's start";
		return -1;
	}
	if (addr - start > UINT64_MAX - map_offset) {
		*why = "file offset beyond 64 bits";
		return -1;
	}
	return symtab_offset_to_va(t, addr - start + map_offset, va, why);
}
