/*
 * indexer/buildid.c: parse and format GNU build-ids.
 */
#include "indexer/buildid.h"

#include <string.h>

int
buildid_hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
buildid_parse(struct buildid *id, const char *s, size_t len, const char **why)
{
	size_t i;

	if (len < 2) {
		*why = "build-id must have at least 2 hex digits";
		return -1;
	}
	if (len > 2 * BUILDID_MAX) {
		*why = "build-id has more than 128 hex digits";
		return -1;
	}
	if (len % 2 != 0) {
		*why = "build-id has an odd number of hex digits";
		return -1;
	}
	for (i = 0; i < len; i += 2) {
		int hi = buildid_hexval((unsigned char)s[i]);
		int lo = buildid_hexval((unsigned char)s[i + 1]);

		if (hi < 0 || lo < 0) {
			*why = "build-id is not hexadecimal";
			return -1;
		}
		id->bytes[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	id->len = (uint8_t)(len / 2);
	return 0;
}

void
buildid_hex(const uint8_t *bytes, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[bytes[i] >> 4];
		out[2 * i + 1] = digits[bytes[i] & 0xf];
	}
	out[2 * n] = '\0';
}

void
buildid_format(const struct buildid *id, char *out)
{
	buildid_hex(id->bytes, id->len, out);
}

int
buildid_equal(const struct buildid *a, const struct buildid *b)
{
	return a->len == b->len && memcmp(a->bytes, b->bytes, a->len) == 0;
}
