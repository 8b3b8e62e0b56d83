/*
 * sources/sources.h: the sources of the request path (resolver/source.h)
 * and their order, the one place it is written (sources/table.c).
 *
 *   local      indexed local files, served as a static file server would
 *   cache      the blob store: what fills brought, uploads
 *   cut        a section, cut from a whole file the sources above and
 *              below hold (a request of its own for that file)
 *   repo       remote repositories: a package downloaded, a debug file
 *              streamed out of it as it comes; then the package step
 *   package    members of indexed packages, one pass per package
 *   objstore   the object store shared by a fleet
 *   symbuild   symbol tables, built from the files the other sources
 *              give (requests of their own for them)
 *   negative   a remembered miss or failure
 *   upstream   the upstream debuginfods
 */
#ifndef SOURCES_SOURCES_H
#define SOURCES_SOURCES_H

#include "resolver/source.h"

extern const struct source source_local;
extern const struct source source_cache;
extern const struct source source_cut;
extern const struct source source_repo;
extern const struct source source_package;
extern const struct source source_objstore;
extern const struct source source_symbuild;
extern const struct source source_negative;
extern const struct source source_upstream;

/* The order of the sources, NULL-terminated. */
extern const struct source *const sources_table[];

#endif /* SOURCES_SOURCES_H */
