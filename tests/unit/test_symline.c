/*
 * tests/unit/test_symline.c: indexer/symline.c, a unit's line program
 * read sequence by sequence, on programs written here byte by byte
 * (DWARF 4, little-endian): two sequences and an empty one at the
 * second's start, rows out by address, each holding to the next row of
 * its own sequence; a hostile sequence whose addresses go back, still out
 * in address order; and truncated or unknown programs refused.
 */
#include "indexer/symline.h"

#include <stdio.h>
#include <string.h>

#include "tests/tap.h"

static unsigned char buf[512];
static size_t len;

static void
put(const unsigned char *p, size_t n)
{
	memcpy(buf + len, p, n);
	len += n;
}

#define PUT(...) \
	do { \
		const unsigned char b_[] = { __VA_ARGS__ }; \
		put(b_, sizeof(b_)); \
	} while (0)

/* The header: one file, a.c; the program follows. */
static void
begin(void)
{
	len = 0;
	PUT(0, 0, 0, 0, 4, 0, 27, 0, 0, 0); /* length later, v4, header */
	PUT(1, 1, 1, (unsigned char)-5, 14, 13);
	PUT(0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1);
	PUT(0, 'a', '.', 'c', 0, 0, 0, 0, 0);
}

static void
set_address(unsigned a)
{
	PUT(0, 9, 2, a & 0xff, (a >> 8) & 0xff, 0, 0, 0, 0, 0, 0);
}

static void
end(void)
{
	uint32_t n = (uint32_t)len - 4;

	memcpy(buf, &n, 4);
}

/* The rows as "addr:line" or "addr:end", blank-separated. */
static const char *
rows(const struct symline *sl)
{
	static char out[512];
	size_t i, n = 0;

	out[0] = '\0';
	for (i = 0; i < sl->n && n < sizeof(out) - 32; i++) {
		if (sl->r[i].end)
			n += (size_t)snprintf(out + n, sizeof(out) - n,
			    "%s%llx:end", i > 0 ? " " : "",
			    (unsigned long long)sl->r[i].addr);
		else
			n += (size_t)snprintf(out + n, sizeof(out) - n,
			    "%s%llx:%u", i > 0 ? " " : "",
			    (unsigned long long)sl->r[i].addr, sl->r[i].line);
	}
	return out;
}

int
main(void)
{
	struct symline sl = { 0 };
	const char *why = NULL;
	size_t i;
	int sorted = 1;

	/* 0x2000: lines 10, 11 at +8, to +0x11; an empty sequence at
	 * 0x2000 (line 295) after it; 0x1000: line 5 to 0x1004. */
	begin();
	set_address(0x2000);
	PUT(3, 9, 1, 2, 8, 3, 1, 1, 2, 9, 0, 1, 1);
	set_address(0x2000);
	PUT(3, 0xa6, 2, 1, 0, 1, 1); /* advance_line 294 */
	set_address(0x1000);
	PUT(3, 4, 1, 2, 4, 0, 1, 1);
	end();
	ok(symline_read(&sl, buf, len, 0, 0, &why) == 0, "a program read");
	is_str(rows(&sl), "1000:5 1004:end 2000:10 2008:11 2011:end",
	    "... by address, each sequence's own rows, the empty one left out");

	/* Addresses that go back within a sequence. */
	begin();
	set_address(0x1000);
	PUT(1, 2, 0x50, 1, 2, 0x10, 1);
	set_address(0x1005);
	PUT(1, 2, 2, 0, 1, 1);
	end();
	ok(symline_read(&sl, buf, len, 0, 0, &why) == 0,
	    "a sequence whose addresses go back");
	for (i = 1; i < sl.n; i++)
		if (sl.r[i].addr < sl.r[i - 1].addr)
			sorted = 0;
	ok(sorted, "... its rows still out by address");
	printf("# %s\n", rows(&sl));

	/* Refused. */
	ok(symline_read(&sl, buf, len - 3, 0, 0, &why) == -1,
	    "a program cut short: refused");
	printf("# %s\n", why);
	ok(symline_read(&sl, buf, len, len, 0, &why) == -1,
	    "an offset past the section: refused");
	buf[4] = 6;
	ok(symline_read(&sl, buf, len, 0, 0, &why) == -1 &&
		strstr(why, "version") != NULL,
	    "version 6: refused, saying so");
	symline_free(&sl);
	return tap_done();
}
