/*
 * tests/unit/test_json.c: daemon/json.c, the JSON of /metadata: strings
 * escaped into valid UTF-8 JSON whatever their bytes, results written
 * all or nothing, and upstream answers read strictly.
 */
#include "daemon/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"

/* s as a JSON string, in a static buffer. */
static const char *
str(const char *s, size_t n)
{
	static char out[512];
	struct jbuf b = { .max = 1 << 20 };

	if (jbuf_str(&b, s, n) == -1 || b.len >= sizeof(out)) {
		jbuf_free(&b);
		return "(failed)";
	}
	memcpy(out, b.p, b.len + 1);
	jbuf_free(&b);
	return out;
}

#define STR(lit) str(lit, sizeof(lit) - 1)

static void
test_strings(void)
{
	is_str(STR("/usr/lib/libc.so.6"), "\"/usr/lib/libc.so.6\"",
	    "plain bytes pass");
	is_str(STR("a\"b\\c"), "\"a\\\"b\\\\c\"", "quote and backslash");
	is_str(STR("a\nb\x01\x1f"), "\"a\\u000ab\\u0001\\u001f\"",
	    "control bytes as \\u00XX");
	is_str(STR("\x7f"), "\"\x7f\"", "DEL passes");
	is_str(STR("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
	    "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"",
	    "valid UTF-8 of 2, 3 and 4 bytes passes");
	is_str(STR("a\xff"
		   "b"),
	    "\"a\xef\xbf\xbd"
	    "b\"",
	    "a stray byte: U+FFFD");
	is_str(STR("\x80"), "\"\xef\xbf\xbd\"", "a lone continuation byte");
	is_str(STR("\xc0\xaf"), "\"\xef\xbf\xbd\xef\xbf\xbd\"",
	    "an overlong form: each byte");
	is_str(STR("\xed\xa0\x80"), "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"",
	    "an encoded surrogate");
	is_str(STR("\xf4\x90\x80\x80"),
	    "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"",
	    "past U+10FFFF");
	is_str(STR("x\xe2\x82"), "\"x\xef\xbf\xbd\xef\xbf\xbd\"",
	    "a cut sequence");
	is_str(STR("\xe2\x82x"), "\"\xef\xbf\xbd\xef\xbf\xbdx\"",
	    "a sequence broken by ASCII");
	is_str(str("a\0b", 3), "\"a\\u0000b\"", "NUL as \\u0000");
}

static void
test_results(void)
{
	struct jbuf b = { .max = 1 << 20 };
	struct jbuf small = { .max = 60 };

	ok(json_result(&b, "executable", "ab", "/bin/x", NULL) == 0,
	    "a result");
	ok(json_result(&b, "debuginfo", "ab", "/bin/x", "") == 0,
	    "another, empty archive");
	ok(json_result(&b, "debuginfo", "cd", "/m", "p.deb") == 0,
	    "one with an archive");
	is_str(b.p,
	    "{\"type\":\"executable\",\"buildid\":\"ab\",\"file\":\"/bin/x\"},"
	    "{\"type\":\"debuginfo\",\"buildid\":\"ab\",\"file\":\"/bin/x\"},"
	    "{\"type\":\"debuginfo\",\"buildid\":\"cd\",\"file\":\"/m\","
	    "\"archive\":\"p.deb\"}",
	    "comma-separated, archive only when there is one");
	ok(json_result(&small, "executable", "ab", "/bin/x", NULL) == 0,
	    "one fits in 60 bytes");
	ok(json_result(&small, "executable", "ab", "/bin/y", NULL) == -1,
	    "a second does not");
	is_str(small.p,
	    "{\"type\":\"executable\",\"buildid\":\"ab\",\"file\":\"/bin/x\"}",
	    "and left nothing of itself");
	ok(small.full, "the buffer says it was full");
	jbuf_free(&b);
	jbuf_free(&small);
}

/* Read s; the results appended, in a static buffer, or "(-1)". */
static const char *
rd(const char *s, int *complete)
{
	static char out[2048];
	struct jbuf b = { .max = 1 << 20 };
	int n;

	*complete = -1;
	if ((n = json_read_results(s, strlen(s), &b, complete)) < 0) {
		ok(b.len == 0, "a refused answer appends nothing");
		jbuf_free(&b);
		return "(-1)";
	}
	snprintf(out, sizeof(out), "%d:%s", n, b.p != NULL ? b.p : "");
	jbuf_free(&b);
	return out;
}

static void
test_read(void)
{
	char deep[300];
	int c;

	is_str(rd("{\"results\":[],\"complete\":true}", &c),
	    "0:", "no results");
	is_int(c, 1, "complete");
	is_str(rd(" { \"complete\" : false , \"results\" : [ { \"type\" : "
		  "\"debuginfo\", \"buildid\":\"ab\", \"file\":\"/x\", "
		  "\"archive\":\"p.rpm\", \"extra\": {\"a\":[1,2.5e-3,null]}"
		  " } ] } \n",
		   &c),
	    "1:{\"type\":\"debuginfo\",\"buildid\":\"ab\",\"file\":\"/x\","
	    "\"archive\":\"p.rpm\"}",
	    "a result kept, spaces and other members skipped");
	is_int(c, 0, "an upstream's incomplete answer");
	is_str(rd("{\"results\":[{\"type\":\"executable\",\"buildid\":\"ab\","
		  "\"file\":\"/caf\\u00e9\\ud83d\\ude00\\ud800\\n\\/\"}]}",
		   &c),
	    "1:{\"type\":\"executable\",\"buildid\":\"ab\",\"file\":"
	    "\"/caf\xc3\xa9\xf0\x9f\x98\x80\xef\xbf\xbd\\u000a/\"}",
	    "escapes decoded, written again; a lone surrogate is U+FFFD");
	is_int(c, 1, "no complete member: complete");
	is_str(rd("{\"results\":[{\"type\":\"source\",\"buildid\":\"ab\","
		  "\"file\":\"/s.c\"},{\"type\":\"debuginfo\",\"file\":\"/y\"},"
		  "{\"type\":\"debuginfo\",\"buildid\":1,\"file\":\"/z\"},"
		  "{\"type\":\"debuginfo\",\"buildid\":\"ab\",\"file\":"
		  "\"/\\u0000\"}]}",
		   &c),
	    "0:", "source, missing or non-string fields, NUL: dropped");
	is_int(c, 0, "... and the answer, which said complete, is not");
	is_str(rd("{\"results\":[{\"type\":\"debuginfo\",\"buildid\":\"ab\","
		  "\"file\":\"/\\u0000\"}],\"complete\":true}",
		   &c),
	    "0:", "a file holding \\u0000: dropped");
	is_int(c, 0, "... so complete is false");
	is_str(rd("{\"results\":[{\"type\":\"source\",\"buildid\":\"ab\","
		  "\"file\":\"/s.c\"}],\"complete\":true}",
		   &c),
	    "0:", "a result of another type: not ours");
	is_int(c, 1, "... and the answer stays complete");
	is_str(rd("{\"results\":[]} x", &c), "(-1)", "trailing bytes");
	is_str(rd("{\"complete\":true}", &c), "(-1)", "no results");
	is_str(rd("{\"results\":{}}", &c), "(-1)", "results not an array");
	is_str(rd("{\"results\":[1]}", &c), "(-1)", "a result not an object");
	is_str(rd("{\"results\":[],\"complete\":1}", &c), "(-1)",
	    "complete not a boolean");
	is_str(rd("{\"results\":[{\"file\":\"/a\nb\"}]}", &c), "(-1)",
	    "a raw control byte in a string");
	is_str(rd("{\"results\":[{\"file\":\"\\x\"}]}", &c), "(-1)",
	    "a bad escape");
	is_str(rd("{\"results\":[{\"file\":\"\\u12\"}]}", &c), "(-1)",
	    "a short \\u escape");
	is_str(rd("{\"results\":[{\"a\":01}]}", &c), "(-1)",
	    "a number with a leading zero");
	is_str(rd("{\"results\":[{\"a\":1.}]}", &c), "(-1)",
	    "a number without fraction digits");
	is_str(rd("{\"results\":[{\"a\":tru}]}", &c), "(-1)", "a cut literal");
	is_str(rd("{\"results\":[,]}", &c), "(-1)", "an empty element");
	is_str(rd("{\"results\":[{\"type\":\"debuginfo\",\"buildid\":\"ab\","
		  "\"file\":\"/x\"}",
		   &c),
	    "(-1)", "a cut document, after a good result");
	is_str(rd("", &c), "(-1)", "nothing");
	is_str(rd("<html>", &c), "(-1)", "HTML");
	memset(deep, '[', sizeof(deep) - 1);
	deep[sizeof(deep) - 1] = '\0';
	memcpy(deep, "{\"results\":[{\"a\":", 17);
	is_str(rd(deep, &c), "(-1)", "nesting past the bound");
}

int
main(void)
{
	test_strings();
	test_results();
	test_read();
	return tap_done();
}
