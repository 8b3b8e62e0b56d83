/*
 * sources/table.c: the order of the sources (sources/sources.h): cheapest
 * and nearest first, the network last.  The repositories come before the
 * packages: a package a repository downloads is a local package from then
 * on, whose members the package step extracts.  A symbol table is built
 * only when neither the cache nor the object store has it.
 */
#include "sources/sources.h"

#include <stddef.h>

const struct source *const sources_table[] = {
	&source_local,
	&source_cache,
	&source_cut,
	&source_repo,
	&source_package,
	&source_objstore,
	&source_symbuild,
	&source_negative,
	&source_upstream,
	NULL,
};
