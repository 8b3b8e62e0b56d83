/*
 * indexer/json.h: JSON as a format, for every module that reads or writes
 * it: a growing output buffer with a string writer that always produces
 * valid UTF-8 JSON, and a strict reader (RFC 8259) that walks a document in
 * place through callbacks.
 *
 * Strings are bytes (paths may hold any byte but NUL); what is written is
 * always valid UTF-8 JSON: control bytes become \u00XX escapes, and each
 * byte of a sequence that is not valid UTF-8 (a stray continuation byte,
 * an overlong form, a surrogate, past U+10FFFF, a cut sequence) becomes
 * U+FFFD (its UTF-8 bytes), so that writing what was read changes it no
 * more.
 *
 * The reader checks every byte it passes over: a value it skips is checked
 * like one it reads, nesting is bounded by JSON_DEPTH_MAX, member names by
 * JSON_NAME_MAX bytes, and decoded strings (escapes, surrogate pairs; a
 * lone surrogate is U+FFFD) go into a jbuf, never copied through.  Every
 * function returns 0 or -1; after -1 the cursor is somewhere inside the
 * bad value and the document is to be refused.  Pure functions of their
 * input; no I/O, no global state: any thread, one cursor per thread.
 */
#ifndef INDEXER_JSON_H
#define INDEXER_JSON_H

#include <stddef.h>
#include <stdint.h>

/* A growing, NUL-terminated buffer of at most max bytes. */
struct jbuf {
	char *p;
	size_t len, cap;
	size_t max;
	int full; /* something did not fit in max (or memory) */
};

void jbuf_free(struct jbuf *b);
/* Append n bytes; -1 (and full set) when they do not fit. */
int jbuf_put(struct jbuf *b, const char *s, size_t n);
/* Append the n bytes at s as a JSON string, quotes included. */
int jbuf_str(struct jbuf *b, const char *s, size_t n);
/* Append printf output (at most 255 bytes of it); -1 when it does not fit. */
int jbuf_fmt(struct jbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Cut b back to its first len bytes (a mark taken before a failed write). */
void jbuf_cut(struct jbuf *b, size_t len);

/* ---------------------------------------------------------------- reader */

#define JSON_DEPTH_MAX 32
#define JSON_NAME_MAX 4096

/* What the next value is, by its first byte. */
enum json_type {
	JSON_BAD, /* the end, or a byte no value starts with */
	JSON_OBJECT,
	JSON_ARRAY,
	JSON_STRING,
	JSON_NUMBER,
	JSON_BOOL,
	JSON_NULL,
};

/* A cursor over a document s[0..len). */
struct json_in {
	const unsigned char *p, *start, *end;
	int depth;
};

void json_in_init(struct json_in *j, const char *s, size_t len);

/* The byte offset of the cursor, for messages. */
size_t json_offset(const struct json_in *j);

/* The type of the value at the cursor (white space skipped). */
enum json_type json_peek(struct json_in *j);

/* Check and pass over any value. */
int json_skip(struct json_in *j);

/* A string, decoded into out (appended); out NULL checks and skips it. */
int json_string(struct json_in *j, struct jbuf *out);

/* true or false. */
int json_bool(struct json_in *j, int *v);

/*
 * A number.  *v is its value when it is a non-negative integer (no
 * fraction, no exponent) of at most 64 bits, and *exact is then 1;
 * otherwise *exact is 0 (a valid number all the same: the caller says
 * what it wanted).
 */
int json_number_u64(struct json_in *j, uint64_t *v, int *exact);

/*
 * An object: member(j, name, arg) is called with the cursor at each
 * member's value, which it must read or skip; it returns 0 to go on or -1
 * to fail the document.
 */
int json_object(struct json_in *j,
    int (*member)(struct json_in *j, const char *name, void *arg), void *arg);

/* An array: elem(j, index, arg) for each element, as json_object's. */
int json_array(struct json_in *j,
    int (*elem)(struct json_in *j, size_t index, void *arg), void *arg);

/* 0 when only white space is left. */
int json_end(struct json_in *j);

#endif /* INDEXER_JSON_H */
