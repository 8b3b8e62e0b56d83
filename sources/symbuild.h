/*
 * sources/symbuild.h: the source that makes symbol tables
 * (symbolizer/build.h) from the files of a build-id, which the resolver
 * brings (sources/symbuild.c says how), for requests of the CACHE_SYMTAB
 * kind that the cache and the object store could not answer.
 *
 * Its state lives on the producers' loop: the child requests it makes run
 * there, and the builds it queues report there.
 */
#ifndef SOURCES_SYMBUILD_H
#define SOURCES_SYMBUILD_H

#include <stddef.h>

struct event_base;
struct pool_inbox;
struct resolve_deps;
struct snapshot;
struct symbuilds;

/*
 * The builder of the request path d, on base's loop (the producers', whose
 * pool completions arrive in inbox): at most builds tables built at once
 * (the others wait in order), their decompressed sections in tmpdir (under
 * the cache, where the sandboxed workers may write).  NULL with err.
 */
struct symbuilds *symbuilds_new(const struct resolve_deps *d,
    struct event_base *base, struct pool_inbox *inbox, const char *tmpdir,
    unsigned builds, char *err, size_t errlen);
/*
 * On the loop's thread, at start-up and at each reload: the configuration
 * from now on, s (daemon/snapshot.h), of which sb takes a reference.  A
 * table's files are asked for under the snapshot that was current when
 * its fill began (s->rd: its settings, its missing-id report), held to
 * the fill's end; at most s's symbolicate-builds are built at once from
 * now on (waiting builds start when it is more).  Before the first
 * switch, the files are asked for under d of symbuilds_new.
 */
void symbuilds_switch(struct symbuilds *sb, struct snapshot *s);
/* On the loop's thread, after the producers were freed. */
void symbuilds_free(struct symbuilds *sb);

/* Tables being built now, and waiting for their turn (any thread). */
void symbuilds_counts(struct symbuilds *sb, unsigned *running,
    unsigned *waiting);

#endif /* SOURCES_SYMBUILD_H */
