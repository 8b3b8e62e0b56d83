/*
 * cli/prefetch.h: dbgmirror prefetch, warming a running dbgmirrord.
 *
 * Collects build-ids from its operands (ids, ELF files with the shared
 * libraries they load, directories of them, core files) and asks the
 * daemon for each, so that the daemon's own sources fill its cache.
 */
#ifndef CLI_PREFETCH_H
#define CLI_PREFETCH_H

#include <stddef.h>

struct prefetch_opts {
	unsigned jobs; /* requests at once */
	const char *url; /* the daemon, without a trailing '/' */
	int executables; /* ask for executables too */
	int json; /* the summary as JSON; a line per id on stderr */
};

/*
 * Prefetch what the operands name (none: read them from standard input,
 * whitespace-separated; "-" does the same).  Returns the exit status: 0
 * when nothing failed, 1 when something did, 2 for an operand that is
 * neither a build-id nor a readable file.
 */
int prefetch_run(const struct prefetch_opts *o, char *const *operands,
    size_t n);

#endif /* CLI_PREFETCH_H */
