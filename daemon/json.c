/*
 * daemon/json.c: writing /metadata results, and reading an upstream's.
 *
 * The reader is a strict recursive-descent parser of RFC 8259 over a
 * buffer: every byte of an answer is checked (the whole document must be
 * one object, with nothing after it), nesting is bounded by DEPTH_MAX,
 * and strings are decoded (escapes, surrogate pairs; a lone surrogate is
 * U+FFFD) so that what is kept is written again by this file's writer,
 * never copied through.
 */
#include "daemon/json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DEPTH_MAX 32
/* Bytes of a member name; an answer with a longer one is refused. */
#define NAME_MAX 4096

void
jbuf_free(struct jbuf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

int
jbuf_put(struct jbuf *b, const char *s, size_t n)
{
	size_t cap;
	char *np;

	if (b->full || b->len + n + 1 > b->max) {
		b->full = 1;
		return -1;
	}
	if (b->len + n + 1 > b->cap) {
		cap = b->cap == 0 ? 256 : b->cap;
		while (cap < b->len + n + 1)
			cap *= 2;
		if ((np = realloc(b->p, cap)) == NULL) {
			b->full = 1;
			return -1;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

/*
 * The length of the valid UTF-8 sequence at s[0..n) (n > 0, s[0] >= 0x80),
 * or 0 when it is not one.
 */
static size_t
utf8_len(const unsigned char *s, size_t n)
{
	size_t len, i;
	unsigned lo = 0x80, hi = 0xbf;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (len > n)
		return 0;
	/* The second byte's range rules out overlongs, surrogates, > 10FFFF. */
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

int
jbuf_str(struct jbuf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, run, k;
	char esc[8];

	if (jbuf_put(b, "\"", 1) == -1)
		return -1;
	while (i < n) {
		/* A run of bytes that need nothing. */
		for (run = i; run < n && u[run] >= 0x20 && u[run] < 0x80 &&
		     u[run] != '"' && u[run] != '\\';
		     run++)
			;
		if (run > i && jbuf_put(b, s + i, run - i) == -1)
			return -1;
		if ((i = run) == n)
			break;
		if (u[i] == '"' || u[i] == '\\') {
			esc[0] = '\\';
			esc[1] = (char)u[i];
			k = 2;
		} else if (u[i] < 0x20) {
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[u[i] >> 4];
			esc[5] = hex[u[i] & 0xf];
			k = 6;
		} else if ((k = utf8_len(u + i, n - i)) > 0) {
			if (jbuf_put(b, s + i, k) == -1)
				return -1;
			i += k;
			continue;
		} else {
			memcpy(esc, "\xef\xbf\xbd", 3); /* U+FFFD */
			k = 3;
		}
		if (jbuf_put(b, esc, k) == -1)
			return -1;
		i++;
	}
	return jbuf_put(b, "\"", 1);
}

int
json_result(struct jbuf *b, const char *type, const char *buildid,
    const char *file, const char *archive)
{
	size_t mark = b->len;

	if ((b->len > 0 && jbuf_put(b, ",", 1) == -1) ||
	    jbuf_put(b, "{\"type\":", 8) == -1 ||
	    jbuf_str(b, type, strlen(type)) == -1 ||
	    jbuf_put(b, ",\"buildid\":", 11) == -1 ||
	    jbuf_str(b, buildid, strlen(buildid)) == -1 ||
	    jbuf_put(b, ",\"file\":", 8) == -1 ||
	    jbuf_str(b, file, strlen(file)) == -1 ||
	    (archive != NULL && archive[0] != '\0' &&
		(jbuf_put(b, ",\"archive\":", 11) == -1 ||
		    jbuf_str(b, archive, strlen(archive)) == -1)) ||
	    jbuf_put(b, "}", 1) == -1) {
		/* All or nothing: cut what was written. */
		b->len = mark;
		if (b->p != NULL)
			b->p[mark] = '\0';
		return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------- reader */

struct jp {
	const unsigned char *p, *end;
	int depth;
};

static void
ws(struct jp *j)
{
	while (j->p < j->end &&
	    (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static int
eat(struct jp *j, char c)
{
	ws(j);
	if (j->p < j->end && *j->p == (unsigned char)c) {
		j->p++;
		return 1;
	}
	return 0;
}

static int
hex4(struct jp *j, unsigned *v)
{
	int i, d;

	if (j->end - j->p < 4)
		return -1;
	for (*v = 0, i = 0; i < 4; i++) {
		unsigned char c = j->p[i];

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return -1;
		*v = *v << 4 | (unsigned)d;
	}
	j->p += 4;
	return 0;
}

/* Append code point cp as UTF-8. */
static int
put_cp(struct jbuf *out, unsigned cp)
{
	char u[4];
	size_t n;

	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | cp >> 6);
		u[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | cp >> 12);
		u[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		u[0] = (char)(0xf0 | cp >> 18);
		u[1] = (char)(0x80 | (cp >> 12 & 0x3f));
		u[2] = (char)(0x80 | (cp >> 6 & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return jbuf_put(out, u, n);
}

/* An escape after its backslash, decoded into out (NULL: checked only). */
static int
escape(struct jp *j, struct jbuf *out)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *e;
	unsigned cp, lo;

	if (j->p == j->end)
		return -1;
	if (*j->p != 'u') {
		if (*j->p == '\0' || (e = strchr(from, *j->p)) == NULL)
			return -1;
		j->p++;
		return out == NULL ? 0 : jbuf_put(out, &to[e - from], 1);
	}
	j->p++;
	if (hex4(j, &cp) == -1)
		return -1;
	if (cp >= 0xd800 && cp <= 0xdbff && j->end - j->p >= 6 &&
	    j->p[0] == '\\' && j->p[1] == 'u') {
		const unsigned char *save = j->p;

		j->p += 2;
		if (hex4(j, &lo) == -1)
			return -1;
		if (lo >= 0xdc00 && lo <= 0xdfff)
			cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
		else
			j->p = save; /* the next escape stands alone */
	}
	if (cp >= 0xd800 && cp <= 0xdfff)
		cp = 0xfffd;
	return out == NULL ? 0 : put_cp(out, cp);
}

/* A string, at its opening quote; its bytes into out (NULL: skipped). */
static int
string(struct jp *j, struct jbuf *out)
{
	const unsigned char *run;

	if (!eat(j, '"'))
		return -1;
	for (;;) {
		for (run = j->p; j->p < j->end && *j->p != '"' &&
		     *j->p != '\\' && *j->p >= 0x20;
		     j->p++)
			;
		if (out != NULL && j->p > run &&
		    jbuf_put(out, (const char *)run, (size_t)(j->p - run)) ==
			-1)
			return -1;
		if (j->p == j->end || *j->p < 0x20)
			return -1;
		if (*j->p++ == '"')
			return 0;
		if (escape(j, out) == -1)
			return -1;
	}
}

static int
digits(struct jp *j)
{
	const unsigned char *s = j->p;

	while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
		j->p++;
	return j->p > s ? 0 : -1;
}

static int
number(struct jp *j)
{
	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p < j->end && *j->p == '0')
		j->p++;
	else if (digits(j) == -1)
		return -1;
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		if (digits(j) == -1)
			return -1;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (digits(j) == -1)
			return -1;
	}
	return 0;
}

static int
word(struct jp *j, const char *w)
{
	size_t n = strlen(w);

	if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n) != 0)
		return -1;
	j->p += n;
	return 0;
}

static int value(struct jp *j);

/*
 * The members of an object or the elements of an array, after its
 * opening bracket, each read by item (given the member's name for an
 * object, "" for an element), up to the closing bracket.
 */
static int
items(struct jp *j, char close, int named,
    int (*item)(struct jp *j, const char *name, void *arg), void *arg)
{
	struct jbuf name = { .max = NAME_MAX };
	int rc = 0;

	if (++j->depth > DEPTH_MAX)
		return -1;
	if (eat(j, close)) {
		j->depth--;
		return 0;
	}
	do {
		if (named) {
			name.len = 0;
			if (name.p != NULL)
				name.p[0] = '\0';
			ws(j);
			if (string(j, &name) == -1 || !eat(j, ':'))
				rc = -1;
		}
		ws(j);
		if (rc == 0)
			rc =
			    item(j, named && name.p != NULL ? name.p : "", arg);
	} while (rc == 0 && eat(j, ','));
	jbuf_free(&name);
	if (rc == 0 && !eat(j, close))
		rc = -1;
	j->depth--;
	return rc;
}

static int
skip_item(struct jp *j, const char *name, void *arg)
{
	(void)name;
	(void)arg;
	return value(j);
}

/* Any value, checked and skipped. */
static int
value(struct jp *j)
{
	ws(j);
	if (j->p == j->end)
		return -1;
	switch (*j->p) {
	case '{':
		j->p++;
		return items(j, '}', 1, skip_item, NULL);
	case '[':
		j->p++;
		return items(j, ']', 0, skip_item, NULL);
	case '"':
		return string(j, NULL);
	case 't':
		return word(j, "true");
	case 'f':
		return word(j, "false");
	case 'n':
		return word(j, "null");
	default:
		return number(j);
	}
}

/* One result's members of interest, decoded. */
struct result {
	struct jbuf f[4]; /* type, buildid, file, archive */
	int has[4];
};

static const char *const result_names[4] = { "type", "buildid", "file",
	"archive" };

static int
result_member(struct jp *j, const char *name, void *arg)
{
	struct result *r = arg;
	int i;

	for (i = 0; i < 4; i++)
		if (strcmp(name, result_names[i]) == 0)
			break;
	if (i == 4 || j->p == j->end || *j->p != '"')
		return value(j);
	r->f[i].len = 0;
	if (r->f[i].p != NULL)
		r->f[i].p[0] = '\0';
	r->has[i] = string(j, &r->f[i]) == 0;
	return r->has[i] ? 0 : -1;
}

/* 1 when field i of r is there and holds no NUL. */
static int
field_ok(const struct result *r, int i)
{
	return r->has[i] && r->f[i].p != NULL &&
	    strlen(r->f[i].p) == r->f[i].len;
}

struct read {
	struct jbuf *out;
	int results; /* appended */
	int complete;
	int seen_results;
	int dropped; /* a result of ours could not be kept */
};

/*
 * An element of "results": kept when it is a whole result.  One whose
 * type is another than ours (a "source") is no result of this answer;
 * any other that is not kept (a field missing, not a string, holding a
 * NUL, or no room) makes the answer incomplete.
 */
static int
results_item(struct jp *j, const char *name, void *arg)
{
	struct read *rd = arg;
	struct result r;
	const char *type;
	int i, rc, ours, kept = 0;

	(void)name;
	if (j->p == j->end || *j->p != '{')
		return -1;
	j->p++;
	memset(&r, 0, sizeof(r));
	for (i = 0; i < 4; i++)
		r.f[i].max = 2 * 4096;
	rc = items(j, '}', 1, result_member, &r);
	type = r.f[0].p;
	ours = !field_ok(&r, 0) || strcmp(type, "executable") == 0 ||
	    strcmp(type, "debuginfo") == 0;
	if (rc == 0 && ours && field_ok(&r, 0) && field_ok(&r, 1) &&
	    field_ok(&r, 2) &&
	    json_result(rd->out, type, r.f[1].p, r.f[2].p,
		field_ok(&r, 3) ? r.f[3].p : NULL) == 0)
		kept = 1;
	rd->results += kept;
	if (ours && !kept)
		rd->dropped = 1;
	for (i = 0; i < 4; i++)
		jbuf_free(&r.f[i]);
	return rc;
}

static int
top_member(struct jp *j, const char *name, void *arg)
{
	struct read *rd = arg;

	if (strcmp(name, "results") == 0) {
		if (j->p == j->end || *j->p != '[')
			return -1;
		j->p++;
		rd->seen_results = 1;
		return items(j, ']', 0, results_item, rd);
	}
	if (strcmp(name, "complete") == 0) {
		if (word(j, "true") == 0) {
			rd->complete = 1;
			return 0;
		}
		rd->complete = 0;
		return word(j, "false");
	}
	return value(j);
}

int
json_read_results(const char *s, size_t len, struct jbuf *b, int *complete)
{
	struct jp j = { (const unsigned char *)s,
		(const unsigned char *)s + len, 0 };
	struct read rd = { b, 0, 1, 0, 0 };
	size_t mark = b->len;

	if (eat(&j, '{') && items(&j, '}', 1, top_member, &rd) == 0 &&
	    rd.seen_results) {
		ws(&j);
		if (j.p == j.end) {
			*complete = rd.complete && !rd.dropped;
			return rd.results;
		}
	}
	b->len = mark;
	if (b->p != NULL)
		b->p[mark] = '\0';
	return -1;
}

struct get {
	const char *name;
	struct jbuf *out;
	int found;
};

/* A member of the object json_get reads: kept when it is the one. */
static int
get_member(struct jp *j, const char *name, void *arg)
{
	struct get *g = arg;
	const unsigned char *start = j->p;

	if (g->found || strcmp(name, g->name) != 0)
		return value(j);
	g->found = 1;
	if (j->p < j->end && *j->p == '"')
		return string(j, g->out);
	if (j->p < j->end && (*j->p == '{' || *j->p == '['))
		return -1;
	if (value(j) == -1)
		return -1;
	return jbuf_put(g->out, (const char *)start, (size_t)(j->p - start));
}

int
json_get(const char *s, size_t len, const char *name, struct jbuf *out)
{
	struct jp j = { (const unsigned char *)s,
		(const unsigned char *)s + len, 0 };
	struct get g = { name, out, 0 };

	if (!eat(&j, '{') || items(&j, '}', 1, get_member, &g) == -1)
		return -1;
	ws(&j);
	return j.p == j.end ? g.found : -1;
}
