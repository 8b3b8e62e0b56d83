/*
 * indexer/xzseek.h: read an .xz stream from any uncompressed offset, by the
 * block index at its end.
 *
 * Multi-threaded xz (dpkg-deb's since Debian 12) cuts a stream into blocks
 * of a few MiB that decode on their own, and lists their sizes in the
 * index after them.  A package scan that needs only some bytes of a large
 * member (the headers and line tables of a debug file, not its
 * .debug_info) then decodes only the blocks that hold them.
 *
 * Only a whole, single stream in a file on disk is mapped (pread; never a
 * file still growing); anything else (one block, several streams, stream
 * padding, an index that does not add up) is no map, and the caller reads
 * the stream in order instead.  A block is checked (its sizes and its
 * check) only when it is decoded to its end: bytes taken from a block
 * left half-way are as the data says, which is what a scan may rely on,
 * never what is served.  Not thread-safe; one map per open package.
 */
#ifndef INDEXER_XZSEEK_H
#define INDEXER_XZSEEK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct xzmap;
struct xzdec;

/*
 * The map of the xz stream of size bytes at offset base in fd (kept open
 * by the caller while the map lives), whose blocks each decode within
 * memlimit bytes; NULL when it has fewer than two blocks or is not a
 * single whole stream.
 */
struct xzmap *xzmap_open(int fd, uint64_t base, uint64_t size,
    uint64_t memlimit);
void xzmap_free(struct xzmap *m);
/* What the stream decompresses to; its largest block's share of that. */
uint64_t xzmap_total(const struct xzmap *m);
uint64_t xzmap_block_max(const struct xzmap *m);

/* A decoder over m, at offset 0; NULL out of memory. */
struct xzdec *xzdec_new(const struct xzmap *m);
void xzdec_free(struct xzdec *d);
/* The offset of the next byte xzdec_read() gives. */
uint64_t xzdec_pos(const struct xzdec *d);
/* 1 when pos can be reached from here by decoding on in the same block. */
int xzdec_near(const struct xzdec *d, uint64_t pos);
/* Bytes decompressed so far, those passed over included. */
uint64_t xzdec_decoded(const struct xzdec *d);

/*
 * Go to offset pos (<= the total): on in the current block, else from the
 * start of the block that holds it.  0, or -1 with err.
 */
int xzdec_seek(struct xzdec *d, uint64_t pos, char *err, size_t errlen);
/* Up to len bytes: how many, 0 at the end, -1 with err. */
ssize_t xzdec_read(struct xzdec *d, void *buf, size_t len, char *err,
    size_t errlen);

#endif /* INDEXER_XZSEEK_H */
