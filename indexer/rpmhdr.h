/*
 * indexer/rpmhdr.h: the per-file IMA signatures an RPM's header carries.
 *
 * An RPM is a 96-byte lead, a signature header padded to 8 bytes, the
 * main header, then the payload (which indexer/package.c reads with
 * libarchive).  A header is the magic 8e ad e8 01, four reserved bytes,
 * the big-endian entry count and store size, the index entries (tag,
 * type, offset, count, all big-endian), then the store.  The main header
 * names each file as DIRNAMES[DIRINDEXES[i]] + BASENAMES[i], and
 * FILESIGNATURES[i] is its IMA signature as hex ("" when none; always
 * for a symbolic link, whose target FILELINKTOS[i] holds).
 *
 * Everything read is bounded and checked: a header is at most
 * RPMHDR_STORE_MAX bytes, strings must end inside the store, and counts
 * must agree.  Blocking; for worker threads.
 */
#ifndef INDEXER_RPMHDR_H
#define INDEXER_RPMHDR_H

#include <stddef.h>
#include <stdint.h>

#define RPMHDR_STORE_MAX (64u << 20)
#define RPMHDR_ENTRIES_MAX 65536u

struct rpmhdr;

/*
 * Read the main header of the RPM open at fd (from offset 0), once for any
 * number of lookups.  1 with *rh; 0 with *rh NULL when fd is no RPM or its
 * header signs no files; -1 for a damaged header, with err.
 */
int rpmhdr_open(int fd, struct rpmhdr **rh, char *err, size_t errlen);
/*
 * rpmhdr_open() of a file still being written (a download, whose header
 * comes first): where a read finds its end, grow(have, arg) blocks until
 * the file holds more than have bytes (1), or says it never will (0, -1:
 * the header is then cut short), as pkg_limits.grow does.
 */
int rpmhdr_open_grow(int fd, int (*grow)(uint64_t have, void *arg), void *arg,
    struct rpmhdr **rh, char *err, size_t errlen);
void rpmhdr_free(struct rpmhdr *rh);

/*
 * The file that path (normalised, absolute) names once its symbolic links
 * (FILELINKTOS) are followed within the package, at most PKG_LINK_HOPS
 * times, as pkg_extract() follows them: 0 with it in out (path itself
 * when it is no link, or unknown), -1 when a link leads nowhere or the
 * name does not fit.
 */
int rpmhdr_resolve(const struct rpmhdr *rh, const char *path, char *out,
    size_t outlen);

/*
 * The IMA signature (hex) of the file at path, links followed as
 * rpmhdr_resolve() does.
 * Returns 1 with it in out, 0 when the header has none for that file, -1
 * for a damaged file list or a signature that does not fit, with err.
 */
int rpmhdr_ima_signature(const struct rpmhdr *rh, const char *path, char *out,
    size_t outlen, char *err, size_t errlen);

#endif /* INDEXER_RPMHDR_H */
