/*
 * cli/perfscript.c: perf script's text, read and written back with the
 * frames perf could not name symbolized (cli/perfscript.h).
 *
 * A frame is found from the end of its line: the DSO in the last
 * parentheses, "[unknown]" before them, the address before that; what
 * comes first (indentation, or the sample's fields) is kept as it is.
 * The mappings are kept per file in a small hash table of chains, the
 * newest first, so that a mapping made again later wins.
 */
#include "cli/perfscript.h"

#include <stdlib.h>
#include <string.h>

#define UNKNOWN "[unknown]"
#define UNKNOWN_LEN (sizeof(UNKNOWN) - 1)
#define MAP_BUCKETS 256

static int
blank(char c)
{
	return c == ' ' || c == '\t';
}

/* The end of line[0..len) without the blanks and line ends after it. */
static size_t
trimmed(const char *line, size_t len)
{
	while (len > 0 &&
	    (blank(line[len - 1]) || line[len - 1] == '\r' ||
		line[len - 1] == '\n'))
		len--;
	return len;
}

/* The hex digits s[0..n) (an optional 0x first) as *v; -1 if not. */
static int
hex(const char *s, size_t n, uint64_t *v)
{
	uint64_t x = 0;
	size_t i = 0;
	int d;

	if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		i = 2;
	if (i == n)
		return -1;
	for (; i < n; i++) {
		if ((d = buildid_hexval((unsigned char)s[i])) == -1 ||
		    x >> 60 != 0)
			return -1;
		x = x << 4 | (uint64_t)d;
	}
	*v = x;
	return 0;
}

int
perfscript_frame_parse(const char *line, size_t len, struct perfscript_frame *f)
{
	size_t e = trimmed(line, len), open, plus, i;
	int depth = 0;

	if (e < 2 || line[e - 1] != ')')
		return 0;
	/* The parenthesis that opens the last group. */
	for (open = e; open-- > 0;) {
		depth += line[open] == ')' ? 1 : line[open] == '(' ? -1 : 0;
		if (depth == 0)
			break;
	}
	if (depth != 0 || open <= UNKNOWN_LEN + 1 || line[open - 1] != ' ')
		return 0;
	memset(f, 0, sizeof(*f));
	f->dso_at = open + 1;
	f->dso_end = e - 1;
	/* -F +dsoff: "DSO+0xOFFSET". */
	for (plus = f->dso_end; plus > f->dso_at && line[plus - 1] != '+';
	     plus--)
		;
	if (plus > f->dso_at + 1 && f->dso_end - plus > 2 &&
	    line[plus] == '0' && line[plus + 1] == 'x' &&
	    hex(line + plus, f->dso_end - plus, &f->dsoff) == 0) {
		f->has_dsoff = 1;
		f->dso_end = plus - 1;
	}
	if (line[f->dso_at] != '/' &&
	    !(f->dso_end - f->dso_at == 6 &&
		memcmp(line + f->dso_at, "[vdso]", 6) == 0))
		return 0;
	f->sym_end = open - 1;
	f->sym_at = f->sym_end - UNKNOWN_LEN;
	if (memcmp(line + f->sym_at, UNKNOWN, UNKNOWN_LEN) != 0 ||
	    f->sym_at == 0 || !blank(line[f->sym_at - 1]))
		return 0;
	for (f->addr_end = f->sym_at;
	     f->addr_end > 0 && blank(line[f->addr_end - 1]); f->addr_end--)
		;
	for (i = f->addr_end;
	     i > 0 && buildid_hexval((unsigned char)line[i - 1]) != -1; i--)
		;
	f->addr_at = i;
	if (f->addr_at == f->addr_end || f->addr_end - f->addr_at > 16 ||
	    (f->addr_at > 0 && !blank(line[f->addr_at - 1])) ||
	    hex(line + f->addr_at, f->addr_end - f->addr_at, &f->addr) == -1)
		return 0;
	f->callchain = line[0] == '\t';
	return 1;
}

/* Pass s over the literal lit at line[*at]; 0 if it is not there. */
static int
lit(const char *line, size_t len, size_t *at, const char *lit)
{
	size_t n = strlen(lit);

	if (*at + n > len || memcmp(line + *at, lit, n) != 0)
		return 0;
	*at += n;
	return 1;
}

/* The hex number at line[*at] (0x optional), up to a byte not hex. */
static int
number(const char *line, size_t len, size_t *at, uint64_t *v)
{
	size_t s = *at;

	if (s + 1 < len && line[s] == '0' && line[s + 1] == 'x')
		*at += 2;
	while (*at < len && buildid_hexval((unsigned char)line[*at]) != -1)
		(*at)++;
	return *at > s && hex(line + s, *at - s, v) == 0;
}

int
perfscript_mmap_parse(const char *line, size_t len, struct perfscript_mmap *m)
{
	const char *p = memmem(line, len, "PERF_RECORD_MMAP", 16);
	const char *q;
	size_t at, e = trimmed(line, len);

	if (p == NULL ||
	    (q = memmem(p, len - (size_t)(p - line), ": [", 3)) == NULL)
		return 0;
	at = (size_t)(q - line) + 3;
	memset(m, 0, sizeof(*m));
	if (!number(line, len, &at, &m->start) || !lit(line, len, &at, "(") ||
	    !number(line, len, &at, &m->len) || !lit(line, len, &at, ") @ ") ||
	    !number(line, len, &at, &m->pgoff) ||
	    (q = memmem(line + at, len - at, "]: ", 3)) == NULL)
		return 0;
	/* "]: PROT PATH" */
	at = (size_t)(q - line) + 3;
	while (at < len && !blank(line[at]))
		at++;
	while (at < len && blank(line[at]))
		at++;
	m->path_at = at;
	m->path_end = e;
	return e > at && m->len > 0;
}

struct map {
	struct map *next;
	uint64_t start, len, pgoff;
	size_t pathlen;
	char path[];
};

struct perfscript_maps {
	struct map *bucket[MAP_BUCKETS];
};

static size_t
path_hash(const char *s, size_t n)
{
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h % MAP_BUCKETS;
}

struct perfscript_maps *
perfscript_maps_new(void)
{
	return calloc(1, sizeof(struct perfscript_maps));
}

void
perfscript_maps_free(struct perfscript_maps *maps)
{
	struct map *m, *next;
	size_t i;

	if (maps == NULL)
		return;
	for (i = 0; i < MAP_BUCKETS; i++)
		for (m = maps->bucket[i]; m != NULL; m = next) {
			next = m->next;
			free(m);
		}
	free(maps);
}

int
perfscript_maps_add(struct perfscript_maps *maps, const char *line,
    const struct perfscript_mmap *mm)
{
	size_t n = mm->path_end - mm->path_at;
	size_t h = path_hash(line + mm->path_at, n);
	struct map *m;

	if ((m = malloc(sizeof(*m) + n)) == NULL)
		return -1;
	m->start = mm->start;
	m->len = mm->len;
	m->pgoff = mm->pgoff;
	m->pathlen = n;
	memcpy(m->path, line + mm->path_at, n);
	m->next = maps->bucket[h];
	maps->bucket[h] = m;
	return 0;
}

int
perfscript_offset(const struct perfscript_maps *maps, const char *line,
    const struct perfscript_frame *f, uint64_t *off)
{
	size_t n = f->dso_end - f->dso_at;
	const struct map *m;

	if (f->has_dsoff) {
		*off = f->dsoff;
		return 0;
	}
	for (m = maps->bucket[path_hash(line + f->dso_at, n)]; m != NULL;
	     m = m->next)
		if (m->pathlen == n &&
		    memcmp(m->path, line + f->dso_at, n) == 0 &&
		    f->addr >= m->start && f->addr - m->start < m->len) {
			*off = f->addr - m->start + m->pgoff;
			return 0;
		}
	if (!f->callchain)
		return -1;
	*off = f->addr;
	return 0;
}

int
perfscript_buildid_parse(const char *line, size_t len, struct buildid *id,
    size_t *path_at, size_t *path_end)
{
	const char *why;
	size_t n = 0, e = trimmed(line, len);

	while (n < e && !blank(line[n]))
		n++;
	if (n == 0 || n >= e || buildid_parse(id, line, n, &why) == -1)
		return 0;
	while (n < e && blank(line[n]))
		n++;
	*path_at = n;
	*path_end = e;
	return e > n;
}

void
perfscript_write(FILE *fp, const char *line, size_t len,
    const struct perfscript_frame *f, const struct symout_addr *a)
{
	size_t k, i, n = symout_answered(a) ? a->nframes : 0;

	if (n == 0) {
		fwrite(line, 1, len, fp);
		fputc('\n', fp);
		return;
	}
	for (k = 0; k < n; k++) {
		const struct symout_frame *fr = &a->frames[k];

		if (k == 0)
			fwrite(line, 1, f->addr_at, fp);
		else
			for (i = 0; i < f->addr_at; i++)
				fputc(blank(line[i]) ? line[i] : ' ', fp);
		fwrite(line + f->addr_at, 1, f->sym_at - f->addr_at, fp);
		fputs(fr->function != NULL ? fr->function : "??", fp);
		if (k + 1 < n)
			fputs(" (inlined)", fp);
		else
			fwrite(line + f->sym_end, 1, len - f->sym_end, fp);
		fputc('\n', fp);
		if (fr->file != NULL)
			fprintf(fp, "  %s:%u\n", fr->file, fr->line);
	}
}
