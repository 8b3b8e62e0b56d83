/*
 * tests/fuzz/fuzz_json.c: fuzz json_read_results(), which reads the
 * answers upstreams send to /metadata, and the reader and writer behind
 * it (daemon/json.h, indexer/json.h).
 *
 * The input is one answer.  Besides memory errors the target aborts when
 * a refused answer left bytes behind, when what was kept is not valid
 * UTF-8 or holds a raw control byte, or when it does not read back, as
 * the results of {"results":[...]}, into the same bytes and count.  The
 * input up to its first NUL is also written as a result's file: that too
 * must be valid UTF-8 and read back unchanged.
 */
#include "indexer/json.c"
#include "daemon/json.c"

#include "tests/fuzz/fuzz.h"

/* 1 when s[0..n) is valid UTF-8 without a control byte. */
static int
clean(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, k;

	while (i < n) {
		if (u[i] < 0x20)
			return 0;
		if (u[i] < 0x80) {
			i++;
			continue;
		}
		if ((k = utf8_len(u + i, n - i)) == 0)
			return 0;
		i += k;
	}
	return 1;
}

/* out (count results) reads back as itself. */
static void
check_round_trip(const struct jbuf *out, int count)
{
	struct jbuf doc = { .max = 1 << 26 }, again = { .max = 1 << 26 };
	int c;

	if (jbuf_put(&doc, "{\"results\":[", 12) == -1 ||
	    (out->len > 0 && jbuf_put(&doc, out->p, out->len) == -1) ||
	    jbuf_put(&doc, "]}", 2) == -1) {
		jbuf_free(&doc);
		return;
	}
	FUZZ_CHECK(json_read_results(doc.p, doc.len, &again, &c) == count);
	FUZZ_CHECK(c == 1);
	FUZZ_CHECK(again.len == out->len);
	FUZZ_CHECK(out->len == 0 || memcmp(again.p, out->p, out->len) == 0);
	jbuf_free(&doc);
	jbuf_free(&again);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jbuf out = { .max = 1 << 24 };
	char *s;
	int n, c = -1;

	if ((s = malloc(size + 1)) == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	n = json_read_results(s, size, &out, &c);
	if (n < 0) {
		FUZZ_CHECK(out.len == 0);
	} else {
		FUZZ_CHECK(c == 0 || c == 1);
		FUZZ_CHECK(clean(out.p != NULL ? out.p : "", out.len));
		check_round_trip(&out, n);
	}
	jbuf_free(&out);
	out.full = 0;
	/* An empty file is no result: the reader drops it. */
	if (s[0] != '\0' &&
	    json_result(&out, "debuginfo", "ab", s, NULL) == 0) {
		FUZZ_CHECK(clean(out.p, out.len));
		check_round_trip(&out, 1);
	}
	jbuf_free(&out);
	free(s);
	return 0;
}
