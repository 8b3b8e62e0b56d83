/*
 * indexer/buildid.h: GNU build-ids as bytes, and their hex spelling.
 *
 * A build-id is 1 to BUILDID_MAX bytes (clients reject more than 128 hex
 * digits).  The wire form is lowercase hex of even length; uppercase is
 * accepted and folded, which is what a lookup by hand usually means.
 */
#ifndef INDEXER_BUILDID_H
#define INDEXER_BUILDID_H

#include <stddef.h>
#include <stdint.h>

#define BUILDID_MAX 64
/* Hex digits plus the terminating NUL. */
#define BUILDID_HEX_MAX (2 * BUILDID_MAX + 1)

struct buildid {
	uint8_t len;
	uint8_t bytes[BUILDID_MAX];
};

/*
 * Parse len hex digits at s into id.  Returns 0, or -1 with *why set to a
 * static string saying what is wrong (odd length, too short, too long, not
 * hex).
 */
int buildid_parse(struct buildid *id, const char *s, size_t len,
    const char **why);

/* Write the lowercase hex spelling of id into out (BUILDID_HEX_MAX bytes). */
void buildid_format(const struct buildid *id, char *out);

/* Write the lowercase hex of n bytes, and a NUL, into out (2n + 1 bytes). */
void buildid_hex(const uint8_t *bytes, size_t n, char *out);

/* The value of hex digit c (either case), or -1. */
int buildid_hexval(unsigned char c);

/* 1 when a and b are the same build-id. */
int buildid_equal(const struct buildid *a, const struct buildid *b);

#endif /* INDEXER_BUILDID_H */
