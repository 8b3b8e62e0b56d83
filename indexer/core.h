/*
 * indexer/core.h: the objects a core file had mapped, and their build-ids.
 *
 * As eu-unstrip -n --core lists them: every file of the NT_FILE note that
 * is mapped from its first byte, and the vDSO (NT_AUXV's AT_SYSINFO_EHDR),
 * with the GNU build-id read from the process's memory saved in the core:
 * the object's ELF header and program headers, then its PT_NOTE segments.
 * Cores of the byte order of this machine only.  Read with libelf and
 * pread; the core is hostile input and every offset is checked.
 */
#ifndef INDEXER_CORE_H
#define INDEXER_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "indexer/buildid.h"

struct core_module {
	uint64_t start; /* where it was mapped */
	const char *path; /* as NT_FILE names it; "[vdso]" for the vDSO */
	struct buildid id; /* len 0: none in the core's memory */
	/*
	 * 1: the core holds its ELF header; 0: it holds other bytes there
	 * (not an ELF object: a locale file, a cache); -1: that memory was
	 * not saved.
	 */
	int elf;
};

typedef void (*core_module_fn)(const struct core_module *m, void *arg);

/*
 * Call fn for each object core file fd had mapped.  0; ELF_NOTFOUND when
 * fd is not an ELF core file; -1 with err when it is one that cannot be
 * read.
 */
int core_modules(int fd, core_module_fn fn, void *arg, char *err,
    size_t errlen);

#endif /* INDEXER_CORE_H */
