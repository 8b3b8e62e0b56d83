/*
 * tests/mkpaths.c: fill a cache's index with N paths, for the /metadata
 * row of the benchmark (bench/run, row 11).
 *
 *   mkpaths CACHE_DIR N
 *
 * Writes N entries of the path index (cache/pathindex.h) into
 * CACHE_DIR/index, before dbgmirrord opens it, as a distribution's
 * mirror would hold them: half are debug files under
 * /usr/lib/debug/.build-id/XX/ (256 directories), half are the programs
 * and libraries of packages, /opt/pkgNNNN/{bin,lib}/ (2,000 packages).
 * They are written as upstream answers, the one origin that no scan
 * prunes (a scan drops local files and packages it does not find on
 * disk), and a query reads every origin from the same table the same way.
 * Build-ids are a pure function of the entry's number: a run is
 * reproducible.  Prints nothing but errors; exits 1 on one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/index.h"
#include "cache/pathindex.h"
#include "indexer/elf.h"

#define BATCH 20000
#define MAPSIZE (64ull << 30)

/* A 20-byte build-id for entry i, spread over its bytes. */
static struct buildid
id_of(unsigned long i)
{
	struct buildid id;
	uint64_t x = i * 0x9e3779b97f4a7c15ull + 0x1234567;
	size_t k;

	id.len = 20;
	for (k = 0; k < id.len; k++) {
		x ^= x >> 29;
		x *= 0xbf58476d1ce4e5b9ull;
		id.bytes[k] = (uint8_t)(x >> 56);
	}
	return id;
}

int
main(int argc, char **argv)
{
	char dir[4096], path[256], hex[BUILDID_HEX_MAX], err[256];
	struct pathidx_entry e = { path, "", 0, { 0 }, PATHIDX_UPSTREAM };
	struct index_batch *b = NULL;
	struct index *idx;
	unsigned long n, i;

	if (argc != 3 || (n = strtoul(argv[2], NULL, 10)) == 0) {
		fprintf(stderr, "usage: mkpaths CACHE_DIR N\n");
		return 1;
	}
	snprintf(dir, sizeof(dir), "%s/index", argv[1]);
	if ((idx = index_open(dir, 0, MAPSIZE, err, sizeof(err))) == NULL) {
		fprintf(stderr, "mkpaths: %s\n", err);
		return 1;
	}
	for (i = 0; i < n; i++) {
		if (b == NULL &&
		    (b = index_batch_begin(idx, err, sizeof(err))) == NULL)
			break;
		e.id = id_of(i);
		buildid_format(&e.id, hex);
		if (i % 2 == 0) {
			snprintf(path, sizeof(path),
			    "/usr/lib/debug/.build-id/%.2s/%s.debug", hex,
			    hex + 2);
			e.kinds = ELF_KIND_DEBUGINFO;
		} else {
			snprintf(path, sizeof(path), "/opt/pkg%04lu/%s/%s%lu%s",
			    i / 2 % 2000, i % 4 == 1 ? "bin" : "lib",
			    i % 4 == 1 ? "prog" : "lib", i / 4000,
			    i % 4 == 1 ? "" : ".so.1");
			e.kinds = ELF_KIND_EXECUTABLE;
		}
		if (pathidx_put(b, &e) == -1)
			break;
		if ((i + 1) % BATCH == 0 || i + 1 == n) {
			if (index_batch_commit(b, err, sizeof(err)) == -1) {
				b = NULL;
				break;
			}
			b = NULL;
		}
	}
	if (i < n) {
		if (b != NULL)
			index_batch_abort(b);
		fprintf(stderr, "mkpaths: entry %lu: %s\n", i,
		    err[0] != '\0' ? err : "cannot write");
		index_close(idx);
		return 1;
	}
	index_close(idx);
	return 0;
}
