/*
 * tests/fuzz/fuzz_xzseek.c: fuzz xzmap_open() and the decoder over its
 * map (indexer/xzseek.h), which read the block index of the .xz data of
 * packages from scanned directories and remote repositories, and then
 * decode single blocks of it.
 *
 * The input is a whole .xz stream, read from a memfd with pread as the
 * server reads a package member.  Its CRC32s of the stream header, the
 * footer, the index and the first block header are made right first:
 * otherwise nearly every mutation would stop at a checksum, and the
 * walk over the index, which is what this server's code does, would
 * never be reached.  A map is read sequentially (at most
 * READ_MAX bytes), then each of a few offsets taken from a hash of the
 * input is sought and read again.  Besides memory errors, the target
 * aborts when a result breaks the contract: a largest block larger than
 * the whole, a read or seek failing without a message, a position that
 * does not move by what was read or is not where a seek went, bytes read
 * after a seek that differ from the same bytes read in order, or a read
 * at the end that gives bytes.
 */
#include <lzma.h>

#include "indexer/xzseek.h"

#include "tests/fuzz/fuzz.h"

/* The most bytes decoded in order, and the memory a block may take. */
#define READ_MAX (256u << 10)
#define MEMLIMIT (64u << 20)
#define SEEKS 4
/* The largest input taken: what libFuzzer is told (-max_len) and more. */
#define INPUT_MAX (1u << 20)

static int memfd = -1;
static unsigned char *seq, piece[4096], *fixed;

static void
put_le32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

/*
 * Make the CRC32s of the stream header (bytes 8-11, of 6-7), the footer
 * (its first 4 bytes, of the 6 after them), the index (its last 4 bytes,
 * where the footer's backward size says it is) and the first block
 * header (at byte 12, its size from its first byte) match what they
 * cover.
 */
static void
fix_crcs(unsigned char *d, size_t size)
{
	unsigned char *foot;
	uint64_t back;
	size_t hs;

	if (size < 24)
		return;
	put_le32(d + 8, lzma_crc32(d + 6, 2, 0));
	foot = d + size - 12;
	put_le32(foot, lzma_crc32(foot + 4, 6, 0));
	back = ((uint64_t)foot[4] | (uint64_t)foot[5] << 8 |
		   (uint64_t)foot[6] << 16 | (uint64_t)foot[7] << 24) +
	    1;
	back *= 4;
	if (back >= 8 && back <= size - 24)
		put_le32(foot - 4,
		    lzma_crc32(foot - back, (size_t)back - 4, 0));
	hs = ((size_t)d[12] + 1) * 4;
	if (d[12] != 0 && 12 + hs <= size - 12)
		put_le32(d + 12 + hs - 4, lzma_crc32(d + 12, hs - 4, 0));
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	memfd = fuzz_memfd("fuzz_xzseek: memfd_create");
	if ((seq = malloc(READ_MAX)) == NULL ||
	    (fixed = malloc(INPUT_MAX)) == NULL) {
		fprintf(stderr, "fuzz_xzseek: out of memory\n");
		exit(1);
	}
	return 0;
}

/*
 * Read up to len bytes at d's position into buf: how many, until the end
 * or an error; -1 for an error before any byte.
 */
static ssize_t
read_some(struct xzdec *d, unsigned char *buf, size_t len)
{
	char err[256];
	size_t got = 0;
	uint64_t pos;
	ssize_t n;

	while (got < len) {
		pos = xzdec_pos(d);
		err[0] = '\0';
		n = xzdec_read(d, buf + got, len - got, err, sizeof(err));
		FUZZ_CHECK(n >= -1 && (n == -1 || (size_t)n <= len - got));
		if (n == -1) {
			FUZZ_CHECK(err[0] != '\0');
			return got > 0 ? (ssize_t)got : -1;
		}
		if (n == 0)
			break;
		FUZZ_CHECK(xzdec_pos(d) == pos + (uint64_t)n);
		got += (size_t)n;
	}
	return (ssize_t)got;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xzmap *m;
	struct xzdec *d;
	uint64_t total, pos;
	char err[256];
	ssize_t have, n;
	size_t i;

	if (memfd == -1)
		LLVMFuzzerInitialize(NULL, NULL);
	if (size > INPUT_MAX)
		return 0;
	memcpy(fixed, data, size);
	fix_crcs(fixed, size);
	if (fuzz_load(memfd, fixed, size) == -1)
		return 0;
	if ((m = xzmap_open(memfd, 0, size, MEMLIMIT)) == NULL)
		return 0;
	total = xzmap_total(m);
	FUZZ_CHECK(xzmap_block_max(m) <= total);
	if ((d = xzdec_new(m)) == NULL) {
		xzmap_free(m);
		return 0;
	}
	FUZZ_CHECK(xzdec_pos(d) == 0);
	have = read_some(d, seq, total < READ_MAX ? (size_t)total : READ_MAX);
	if (have == -1)
		have = 0;
	if ((uint64_t)have == total) {
		FUZZ_CHECK(read_some(d, piece, sizeof(piece)) == 0);
	}
	for (i = 0; i < SEEKS; i++) {
		/* Offsets the input chooses, though its ends are fixed. */
		pos = lzma_crc64(data, size, i) % (total + 1);
		err[0] = '\0';
		if (xzdec_seek(d, pos, err, sizeof(err)) == -1) {
			FUZZ_CHECK(err[0] != '\0');
			continue;
		}
		FUZZ_CHECK(xzdec_pos(d) == pos);
		if ((n = read_some(d, piece, sizeof(piece))) <= 0)
			continue;
		if (pos + (uint64_t)n <= (uint64_t)have)
			FUZZ_CHECK(memcmp(piece, seq + pos, (size_t)n) == 0);
	}
	xzdec_free(d);
	xzmap_free(m);
	return 0;
}
