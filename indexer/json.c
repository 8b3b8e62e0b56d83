/*
 * indexer/json.c: the JSON writer and the strict reader (indexer/json.h).
 *
 * The reader is a recursive-descent parser of RFC 8259 over a buffer
 * (moved here from daemon/json.c so that /metadata and /symbolicate share
 * one): objects and arrays hand each member or element to a callback with
 * the cursor at its value, and whatever the callback does not read it
 * skips through json_skip(), which checks as strictly as it reads.  Depth
 * is counted in the cursor, so a document nested past JSON_DEPTH_MAX is
 * refused before the stack notices.
 */
#include "indexer/json.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
jbuf_fmt(struct jbuf *b, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp)) {
		b->full = 1;
		return -1;
	}
	return jbuf_put(b, tmp, (size_t)n);
}

void
jbuf_cut(struct jbuf *b, size_t len)
{
	if (len > b->len)
		return;
	b->len = len;
	if (b->p != NULL)
		b->p[len] = '\0';
}

/* ---------------------------------------------------------------- reader */

void
json_in_init(struct json_in *j, const char *s, size_t len)
{
	j->start = j->p = (const unsigned char *)s;
	j->end = j->p + len;
	j->depth = 0;
}

size_t
json_offset(const struct json_in *j)
{
	return (size_t)(j->p - j->start);
}

static void
ws(struct json_in *j)
{
	while (j->p < j->end &&
	    (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static int
eat(struct json_in *j, char c)
{
	ws(j);
	if (j->p < j->end && *j->p == (unsigned char)c) {
		j->p++;
		return 1;
	}
	return 0;
}

static int
hex4(struct json_in *j, unsigned *v)
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
escape(struct json_in *j, struct jbuf *out)
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

int
json_string(struct json_in *j, struct jbuf *out)
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
digits(struct json_in *j)
{
	const unsigned char *s = j->p;

	while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
		j->p++;
	return j->p > s ? 0 : -1;
}

int
json_number_u64(struct json_in *j, uint64_t *v, int *exact)
{
	const unsigned char *s;
	uint64_t n = 0;
	int neg = 0, fits = 1;

	ws(j);
	if (j->p < j->end && *j->p == '-') {
		j->p++;
		neg = 1;
	}
	s = j->p;
	if (j->p < j->end && *j->p == '0')
		j->p++;
	else if (digits(j) == -1)
		return -1;
	for (; s < j->p; s++) {
		if (n > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			fits = 0;
		n = n * 10 + (uint64_t)(*s - '0');
	}
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		fits = 0;
		if (digits(j) == -1)
			return -1;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		fits = 0;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (digits(j) == -1)
			return -1;
	}
	*exact = fits && !(neg && n != 0);
	*v = *exact ? n : 0;
	return 0;
}

static int
word(struct json_in *j, const char *w)
{
	size_t n = strlen(w);

	if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n) != 0)
		return -1;
	j->p += n;
	return 0;
}

int
json_bool(struct json_in *j, int *v)
{
	ws(j);
	if (word(j, "true") == 0) {
		*v = 1;
		return 0;
	}
	*v = 0;
	return word(j, "false");
}

enum json_type
json_peek(struct json_in *j)
{
	ws(j);
	if (j->p == j->end)
		return JSON_BAD;
	switch (*j->p) {
	case '{':
		return JSON_OBJECT;
	case '[':
		return JSON_ARRAY;
	case '"':
		return JSON_STRING;
	case 't':
	case 'f':
		return JSON_BOOL;
	case 'n':
		return JSON_NULL;
	case '-':
		return JSON_NUMBER;
	default:
		return *j->p >= '0' && *j->p <= '9' ? JSON_NUMBER : JSON_BAD;
	}
}

/*
 * The members of an object or the elements of an array, after its
 * opening bracket, each read by one of the callbacks, up to the closing
 * bracket.
 */
static int
items(struct json_in *j, char close,
    int (*member)(struct json_in *j, const char *name, void *arg),
    int (*elem)(struct json_in *j, size_t index, void *arg), void *arg)
{
	struct jbuf name = { .max = JSON_NAME_MAX };
	size_t index = 0;
	int rc = 0;

	if (++j->depth > JSON_DEPTH_MAX)
		return -1;
	if (eat(j, close)) {
		j->depth--;
		return 0;
	}
	do {
		if (member != NULL) {
			jbuf_cut(&name, 0);
			ws(j);
			if (json_string(j, &name) == -1 || !eat(j, ':'))
				rc = -1;
		}
		ws(j);
		if (rc == 0 && member != NULL)
			rc = member(j, name.p != NULL ? name.p : "", arg);
		else if (rc == 0)
			rc = elem(j, index++, arg);
	} while (rc == 0 && eat(j, ','));
	jbuf_free(&name);
	if (rc == 0 && !eat(j, close))
		rc = -1;
	j->depth--;
	return rc;
}

static int
skip_member(struct json_in *j, const char *name, void *arg)
{
	(void)name;
	(void)arg;
	return json_skip(j);
}

static int
skip_elem(struct json_in *j, size_t index, void *arg)
{
	(void)index;
	(void)arg;
	return json_skip(j);
}

int
json_object(struct json_in *j,
    int (*member)(struct json_in *j, const char *name, void *arg), void *arg)
{
	if (!eat(j, '{'))
		return -1;
	return items(j, '}', member, NULL, arg);
}

int
json_array(struct json_in *j,
    int (*elem)(struct json_in *j, size_t index, void *arg), void *arg)
{
	if (!eat(j, '['))
		return -1;
	return items(j, ']', NULL, elem, arg);
}

int
json_skip(struct json_in *j)
{
	uint64_t v;
	int b;

	switch (json_peek(j)) {
	case JSON_OBJECT:
		return json_object(j, skip_member, NULL);
	case JSON_ARRAY:
		return json_array(j, skip_elem, NULL);
	case JSON_STRING:
		return json_string(j, NULL);
	case JSON_BOOL:
		return json_bool(j, &b);
	case JSON_NULL:
		return word(j, "null");
	case JSON_NUMBER:
		return json_number_u64(j, &v, &b);
	default:
		return -1;
	}
}

int
json_end(struct json_in *j)
{
	ws(j);
	return j->p == j->end ? 0 : -1;
}
