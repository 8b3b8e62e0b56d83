/*
 * cache/repoidx.h: which package of a remote repository holds a build-id.
 *
 * Each repository (known by an 8-byte key its configuration hashes to)
 * has generations of entries in the INDEX_REPO table: its packages (by a
 * name the caller chooses, unique in the repository) with their file
 * name, size and SHA-256, and its build-ids, each naming a package for
 * one kind (a debug file, or an executable or shared library: the same id
 * may name one package for each).  A
 * refresh writes a whole new generation beside the current one, in as
 * many write transactions as it takes, then flips the repository's
 * pointer to it in one transaction and deletes the old one: a reader
 * always sees one complete generation, the old or the new.  Writers run
 * on one worker thread (a batch belongs to the thread that began it).
 */
#ifndef CACHE_REPOIDX_H
#define CACHE_REPOIDX_H

#include <stddef.h>
#include <stdint.h>

#include "cache/index.h"
#include "indexer/buildid.h"

#define REPOIDX_KEY_LEN 8
#define REPOIDX_NAME_MAX 300 /* package names as the caller spells them */
#define REPOIDX_FILE_MAX 1024 /* file names, relative to the repository */

/* A package as the index gives it; strings point into the map. */
struct repoidx_pkg {
	const char *name;
	size_t name_len;
	const char *file; /* relative to the repository URL */
	size_t file_len;
	uint64_t size;
	uint8_t sha256[32];
};

#define REPOIDX_DIGEST_LEN 32

/* What a repository's current generation holds, and its refreshes. */
struct repoidx_state {
	uint32_t gen; /* 0: never indexed */
	uint64_t ids, pkgs;
	uint64_t pkgs_with_ids; /* packages that some id names */
	int64_t refreshed; /* when it was written, unix seconds */
	int64_t checked; /* the last refresh that found it unchanged; 0 */
	int64_t running; /* when the refresh running began; 0: none */
	/* What it was made from, as the refresh digests it; zeros: unknown */
	uint8_t digest[REPOIDX_DIGEST_LEN];
};

/* The key of a repository from the text that identifies it. */
void repoidx_key(const char *ident, uint8_t key[REPOIDX_KEY_LEN]);

/* 0 and *st (zeros when never indexed nor refreshed), or -1. */
int repoidx_state(struct index_reader *rd, const uint8_t key[REPOIDX_KEY_LEN],
    struct repoidx_state *st);

/*
 * What a package holds an id as: a debug file, an executable (or shared
 * library) a usr/lib/.build-id/ link names, or one only a debug package's
 * suffix-less usr/lib/debug/.build-id/ link names, which is usually in
 * another package (indexer/repometa.h): a caller tries it last.
 */
enum repoidx_kind {
	REPOIDX_DEBUGINFO = 'd',
	REPOIDX_EXECUTABLE = 'x',
	REPOIDX_EXECUTABLE_WEAK = 'w',
};

/*
 * The package holding id as kind in the current generation: 0,
 * INDEX_NOTFOUND, -1.
 */
int repoidx_find(struct index_reader *rd, const uint8_t key[REPOIDX_KEY_LEN],
    const struct buildid *id, enum repoidx_kind kind, struct repoidx_pkg *out);

/* The last refresh that failed, and how many did in all. */
struct repoidx_error {
	int64_t when; /* 0: none */
	uint64_t count;
	char why[256];
};

/*
 * A refresh of repository key began at now (state.running): until it
 * ends, by a commit, repoidx_note_error() or repoidx_note_unchanged().
 * Each in its own batch.
 */
int repoidx_note_start(struct index *idx, const uint8_t key[REPOIDX_KEY_LEN],
    int64_t now, char *err, size_t errlen);
/* Record a failed refresh of repository key at now. */
int repoidx_note_error(struct index *idx, const uint8_t key[REPOIDX_KEY_LEN],
    int64_t now, const char *why, char *err, size_t errlen);
/* A refresh found what the current generation was made from (checked). */
int repoidx_note_unchanged(struct index *idx,
    const uint8_t key[REPOIDX_KEY_LEN], int64_t now, char *err, size_t errlen);
/* 0 and *out (zeros when none), or -1. */
int repoidx_get_error(struct index_reader *rd,
    const uint8_t key[REPOIDX_KEY_LEN], struct repoidx_error *out);

struct repoidx_writer;

/* Begin a new generation of repository key; NULL with err. */
struct repoidx_writer *repoidx_writer_new(struct index *idx,
    const uint8_t key[REPOIDX_KEY_LEN], char *err, size_t errlen);
/* Record a package (replacing one of the same name): 0, or -1. */
int repoidx_put_pkg(struct repoidx_writer *w, const char *name,
    const char *file, uint64_t size, const uint8_t sha256[32]);
/* 1 when the new generation has a package of that name, else 0 (or -1). */
int repoidx_has_pkg(struct repoidx_writer *w, const char *name);
/*
 * Record that package name holds id as kind; with keep, not when the
 * generation has it as that kind already (Contents after Packages:
 * Build-Ids win), else replacing it (a duplicate is then counted twice).
 * The package counts among those with ids from then on.  At the commit,
 * ids the old generation did not have (as any kind) lose their negative
 * entries.
 */
int repoidx_put_id(struct repoidx_writer *w, const struct buildid *id,
    enum repoidx_kind kind, const char *name, int keep);
/* Ids and packages recorded so far, for progress reports. */
uint64_t repoidx_writer_ids(const struct repoidx_writer *w);
/*
 * Make the new generation current, stamped now and with the digest of
 * what it was made from, with the negative entries of its new ids
 * dropped in the same transaction (which ends the refresh running), and
 * delete the old one; or (abort) delete the new one.  Frees w.  0, or -1
 * with err.
 */
int repoidx_writer_commit(struct repoidx_writer *w, int64_t now,
    const uint8_t digest[REPOIDX_DIGEST_LEN], char *err, size_t errlen);
void repoidx_writer_abort(struct repoidx_writer *w);

#endif /* CACHE_REPOIDX_H */
