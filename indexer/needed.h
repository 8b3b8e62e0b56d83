/*
 * indexer/needed.h: the shared libraries a program loads, found as the
 * dynamic loader finds them.
 *
 * For each ELF file added, its interpreter (PT_INTERP) and its DT_NEEDED
 * libraries, and theirs in turn, are looked up in the loader's order:
 * DT_RPATH (of the object, then of the program, unless the object has a
 * DT_RUNPATH), LD_LIBRARY_PATH, DT_RUNPATH, /etc/ld.so.cache, then the
 * default directories; $ORIGIN is expanded.  A candidate counts only when
 * it is ELF of the program's class and machine, as for the loader.  Each
 * library is reported once per struct needed, however many files load it.
 * No network and no threads; files are read with libelf.
 */
#ifndef INDEXER_NEEDED_H
#define INDEXER_NEEDED_H

#include <stddef.h>

struct needed;

/* Where libraries are looked for; NULL members take the system's. */
struct needed_paths {
	const char *ld_cache; /* /etc/ld.so.cache */
	const char *ld_library_path; /* getenv("LD_LIBRARY_PATH") */
	const char *const *default_dirs; /* NULL-terminated */
};

/* A library found (its path), or one not found (path NULL). */
typedef void (*needed_fn)(const char *name, const char *path,
    const char *needed_by, void *arg);

/* NULL when out of memory. */
struct needed *needed_new(const struct needed_paths *paths);
void needed_free(struct needed *n);

/*
 * Report the libraries the ELF file at path loads, transitively, that no
 * earlier call reported.  0; ELF_NOTFOUND when path is not ELF; -1 with err
 * when it cannot be read (a library that cannot be read is reported as not
 * found instead).  Files that load nothing (static, or a debug file) give
 * no calls.
 */
int needed_add(struct needed *n, const char *path, needed_fn fn, void *arg,
    char *err, size_t errlen);

#endif /* INDEXER_NEEDED_H */
