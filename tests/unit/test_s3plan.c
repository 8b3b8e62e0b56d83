/*
 * tests/unit/test_s3plan.c: store_plan (fetchers/s3.c), how an
 * upload to the object store is cut: one PUT below the multipart size and
 * up to 5 GiB; above, parts of at least 5 MiB (but the last), at most
 * 5 GiB, at most 10000 of them, covering the object exactly.  Nothing is
 * uploaded: the arithmetic alone.
 */
#include <stdint.h>
#include <stdio.h>

#include "fetchers/s3.h"
#include "tests/tap.h"

#define MiB (1ULL << 20)
#define GiB (1ULL << 30)
#define TiB (1ULL << 40)

/* The rules S3 sets on a multipart upload, for one plan. */
static int
within_limits(uint64_t size, uint64_t part, unsigned parts)
{
	return part >= 5 * MiB && part <= 5 * GiB && parts >= 1 &&
	    parts <= 10000 && (uint64_t)(parts - 1) * part < size &&
	    (uint64_t)parts * part >= size;
}

static void
test_single(void)
{
	uint64_t part;
	unsigned parts;

	is_int(s3_plan(1 * MiB, 64 * MiB, &part, &parts), 0,
	    "1 MiB under a 64 MiB multipart size: one PUT");
	ok(part == 1 * MiB && parts == 1, "... of the whole object");
	is_int(s3_plan(0, 64 * MiB, &part, &parts), 0,
	    "an empty object: one PUT");
	is_int(s3_plan(5 * GiB, 6 * GiB, &part, &parts), 0,
	    "5 GiB under a larger threshold: one PUT (S3's largest)");
}

static void
test_multipart(void)
{
	uint64_t part;
	unsigned parts;

	is_int(s3_plan(64 * MiB, 64 * MiB, &part, &parts), 1,
	    "the multipart size itself: multipart");
	ok(part == 64 * MiB && parts == 1, "... in one part");
	is_int(s3_plan(6 * MiB, 5 * MiB, &part, &parts), 1,
	    "6 MiB at 5 MiB: multipart");
	ok(part == 5 * MiB && parts == 2,
	    "... two parts of 5 MiB (the last 1)");
	is_int(s3_plan(6 * MiB, 1 * MiB, &part, &parts), 1,
	    "a threshold under S3's smallest part: multipart");
	ok(part == 5 * MiB && parts == 2, "... parts raised to 5 MiB");

	/* Over 5 GiB: multipart whatever the threshold. */
	is_int(s3_plan(5 * GiB + 1, 6 * GiB, &part, &parts), 1,
	    "5 GiB + 1 byte under a larger threshold: multipart all the same");
	ok(within_limits(5 * GiB + 1, part, parts),
	    "... parts within S3's limits");
	ok(part <= 5 * GiB && parts == 2, "... two parts of at most 5 GiB");
	is_int(s3_plan(20 * GiB, 5 * GiB, &part, &parts), 1,
	    "20 GiB at the largest multipart size (5 GiB): multipart");
	ok(part == 5 * GiB && parts == 4, "... four parts of 5 GiB");

	/* Small parts on a huge object: no more than 10000 of them. */
	is_int(s3_plan(100 * GiB, 5 * MiB, &part, &parts), 1,
	    "100 GiB at 5 MiB: multipart");
	ok(within_limits(100 * GiB, part, parts),
	    "... at most 10000 parts, each within S3's limits");
	ok(part % MiB == 0 && part > 5 * MiB, "... larger parts, in whole MiB");
	is_int(s3_plan(5 * TiB, 5 * MiB, &part, &parts), 1,
	    "5 TiB, S3's largest object: multipart");
	ok(within_limits(5 * TiB, part, parts), "... within the limits");
	is_int(s3_plan(5 * TiB + 1, 64 * MiB, &part, &parts), -1,
	    "larger than 5 TiB: no plan");
}

/* Every plan of a spread of sizes and thresholds keeps the rules. */
static void
test_spread(void)
{
	static const uint64_t sizes[] = { 5 * MiB, 64 * MiB + 1, GiB - 1,
		5 * GiB, 5 * GiB + 1, 48 * GiB, 49 * GiB + 12345, 333 * GiB,
		TiB + 7, 5 * TiB };
	static const uint64_t thresholds[] = { 5 * MiB, 8 * MiB, 64 * MiB, GiB,
		5 * GiB };
	uint64_t part;
	unsigned parts;
	size_t i, j;
	int all = 1;
	int rc;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (j = 0; j < sizeof(thresholds) / sizeof(thresholds[0]);
		     j++) {
			rc = s3_plan(sizes[i], thresholds[j], &part, &parts);
			if (rc == 1 ? !within_limits(sizes[i], part, parts)
				    : rc != 0 || sizes[i] > 5 * GiB ||
				    sizes[i] >= thresholds[j]) {
				printf("# size %llu, threshold %llu: %d, "
				       "%u parts of %llu\n",
				    (unsigned long long)sizes[i],
				    (unsigned long long)thresholds[j], rc,
				    parts, (unsigned long long)part);
				all = 0;
			}
		}
	ok(all, "50 sizes and thresholds: every plan within S3's limits");
}

int
main(void)
{
	test_single();
	test_multipart();
	test_spread();
	return tap_done();
}
