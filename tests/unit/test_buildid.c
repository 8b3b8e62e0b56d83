/*
 * tests/unit/test_buildid.c: indexer/buildid.c, the hex spelling of GNU
 * build-ids.
 *
 * Round trips through parse and format, case folding, every error with its
 * reason, the 128-digit limit, and equality.  No files, no set-up.
 */
#include "indexer/buildid.h"

#include <stdio.h>
#include <string.h>

#include "tests/tap.h"

/* Parse s; 0 or -1 as buildid_parse, *why left NULL on success. */
static int
parse(struct buildid *id, const char *s, const char **why)
{
	*why = NULL;
	memset(id, 0xa5, sizeof(*id));
	return buildid_parse(id, s, strlen(s), why);
}

/* parse() must fail with a reason; what names the case. */
static void
check_rejected(const char *s, const char *what)
{
	struct buildid id;
	const char *why;
	char msg[160];
	int rc;

	rc = parse(&id, s, &why);
	snprintf(msg, sizeof(msg), "%s: rejected", what);
	is_int(rc, -1, msg);
	snprintf(msg, sizeof(msg), "%s: says why", what);
	ok(why != NULL && why[0] != '\0', msg);
}

static void
test_round_trip(void)
{
	static const char *const good[] = {
		"00",
		"ff",
		"0123456789abcdef",
		"4ef383d1b23f47089d93da84d2cdb4ea0e347b0a",
	};
	char hex[BUILDID_HEX_MAX], msg[200];
	struct buildid id;
	const char *why;
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(msg, sizeof(msg), "parse %.40s%s", good[i],
		    strlen(good[i]) > 40 ? "..." : "");
		is_int(parse(&id, good[i], &why), 0, msg);
		is_int(id.len, strlen(good[i]) / 2,
		    "length is half the digits");
		memset(hex, 'x', sizeof(hex));
		buildid_format(&id, hex);
		is_str(hex, good[i], "format gives the same digits back");
	}

	/* The bytes themselves, not just the round trip. */
	parse(&id, "00017f80feff", &why);
	ok(id.len == 6 && id.bytes[0] == 0x00 && id.bytes[1] == 0x01 &&
		id.bytes[2] == 0x7f && id.bytes[3] == 0x80 &&
		id.bytes[4] == 0xfe && id.bytes[5] == 0xff,
	    "parse gives the bytes in order");

	/* format from bytes, not from a parse. */
	memset(&id, 0, sizeof(id));
	id.len = 3;
	id.bytes[0] = 0xde;
	id.bytes[1] = 0x0a;
	id.bytes[2] = 0xd0;
	buildid_format(&id, hex);
	is_str(hex, "de0ad0", "format writes lowercase with leading zeros");

	id.len = 0;
	memset(hex, 'x', sizeof(hex));
	buildid_format(&id, hex);
	is_str(hex, "", "format of an empty id is the empty string");
}

static void
test_case_folding(void)
{
	char hex[BUILDID_HEX_MAX];
	struct buildid upper, lower;
	const char *why;

	is_int(parse(&upper, "ABCDEF0123DeadBeef", &why), 0,
	    "uppercase and mixed case are accepted");
	buildid_format(&upper, hex);
	is_str(hex, "abcdef0123deadbeef", "and fold to lowercase");
	parse(&lower, "abcdef0123deadbeef", &why);
	ok(buildid_equal(&upper, &lower), "folded id equals the lowercase one");
}

static void
test_errors(void)
{
	char digits[200];

	check_rejected("abc", "odd length");
	check_rejected("a", "one digit");
	check_rejected("", "empty");
	memset(digits, 'a', 130);
	digits[130] = '\0';
	check_rejected(digits, "130 digits");
	digits[129] = '\0';
	check_rejected(digits, "129 digits");
	check_rejected("0g", "non-hex digit g");
	check_rejected("zz", "non-hex zz");
	check_rejected("12 4", "a space");
	check_rejected("0x12", "a 0x prefix");
	check_rejected("abcd\xc3\xa9", "non-ASCII bytes");
	check_rejected("-1", "a sign");
}

static void
test_limits(void)
{
	char digits[2 * BUILDID_MAX + 8], hex[BUILDID_HEX_MAX];
	struct buildid id;
	const char *why;
	size_t i;

	for (i = 0; i < 2 * BUILDID_MAX; i++)
		digits[i] = "0123456789abcdef"[i % 16];
	digits[2 * BUILDID_MAX] = '\0';
	is_int(parse(&id, digits, &why), 0, "exactly 128 digits are accepted");
	is_int(id.len, BUILDID_MAX, "as a 64-byte id");
	buildid_format(&id, hex);
	is_str(hex, digits, "and format back whole");
	is_int(strlen(hex), 2 * BUILDID_MAX, "filling BUILDID_HEX_MAX");

	/* len is what counts, not a NUL: a longer buffer is cut at len. */
	is_int(buildid_parse(&id, "abcdefXX", 6, &why), 0,
	    "only len digits are read");
	buildid_format(&id, hex);
	is_str(hex, "abcdef", "the digits before len");

	is_int(buildid_parse(&id, "ab\0d", 4, &why), -1,
	    "an embedded NUL is not hex");

	/* An odd len inside a longer string: the digit after len is hex. */
	why = NULL;
	is_int(buildid_parse(&id, "abcdef", 3, &why), -1,
	    "odd len within a longer string is rejected");
	ok(why != NULL && strstr(why, "odd") != NULL, "as odd");
	why = NULL;
	is_int(buildid_parse(&id, "abcdef", 1, &why), -1,
	    "len 1 within a longer string is rejected");
	ok(why != NULL && why[0] != '\0', "with a reason");
}

static void
test_equal(void)
{
	struct buildid a, b;
	const char *why;

	parse(&a, "0102030405", &why);
	parse(&b, "0102030405", &why);
	ok(buildid_equal(&a, &b), "same ids are equal");
	ok(buildid_equal(&a, &a), "an id equals itself");
	parse(&b, "0102030406", &why);
	ok(!buildid_equal(&a, &b), "last byte differs");
	parse(&b, "1102030405", &why);
	ok(!buildid_equal(&a, &b), "first byte differs");
	parse(&b, "01020304", &why);
	ok(!buildid_equal(&a, &b), "a prefix is not equal");
	ok(!buildid_equal(&b, &a), "nor the other way round");
	parse(&b, "010203040500", &why);
	ok(!buildid_equal(&a, &b), "a longer id with a 00 tail is not equal");

	/* Bytes past len are not part of the id. */
	memset(&a, 0x11, sizeof(a));
	memset(&b, 0x22, sizeof(b));
	a.len = b.len = 2;
	a.bytes[0] = b.bytes[0] = 0xab;
	a.bytes[1] = b.bytes[1] = 0xcd;
	ok(buildid_equal(&a, &b), "bytes past len do not matter");
}

int
main(void)
{
	test_round_trip();
	test_case_folding();
	test_errors();
	test_limits();
	test_equal();
	return tap_done();
}
