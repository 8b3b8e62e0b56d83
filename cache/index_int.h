/*
 * cache/index_int.h: the LMDB handles behind an index, its readers and
 * its batches, for the files that lay out the index's own tables
 * (cache/index.c, and cache/files.c for the local files' records).  No
 * other module includes it: the others go through cache/index.h.
 *
 * Threads: as cache/index.h says; txn is used only by the thread that
 * holds the reader or began the batch.
 */
#ifndef CACHE_INDEX_INT_H
#define CACHE_INDEX_INT_H

#include <lmdb.h>
#include <pthread.h>

/* The generic tables: enum index_table. */
#define INDEX_NTABLES 11

/*
 * Another process (the CLI) may grow the map: LMDB then answers
 * MDB_MAP_RESIZED, and this process must adopt the new size with
 * mdb_env_set_mapsize(env, 0) while none of its transactions is active.
 * Every transaction holds resize for reading from begin to end; adopting
 * takes it for writing.
 */
struct index {
	pthread_rwlock_t resize;
	MDB_env *env;
	MDB_dbi meta;
	MDB_dbi files; /* cache/files.c */
	MDB_dbi ids; /* cache/files.c */
	MDB_dbi tables[INDEX_NTABLES];
};

struct index_reader {
	struct index *idx;
	MDB_txn *txn;
	int active;
};

struct index_batch {
	struct index *idx;
	MDB_txn *txn;
	int rc; /* first LMDB error, 0 when none */
};

/* Remember b's first failure, LMDB's rc; later operations become no-ops.
 * Returns -1. */
int index_batch_fail(struct index_batch *b, int rc);

#endif /* CACHE_INDEX_INT_H */
