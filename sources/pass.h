/*
 * sources/pass.h: one decompression pass over a package file serves every
 * member fill that can catch it (sources/pass.c), for the sources that
 * extract members (packages).
 */
#ifndef SOURCES_PASS_H
#define SOURCES_PASS_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

struct cache_meta;
struct config;
struct passes;
struct pool_inbox;
struct prod;
struct resolve_deps;
struct rpmhdr;

/* What a member fill (prod.data) extracts. */
struct pass_want {
	char package[PATH_MAX]; /* the package file */
	char member[PATH_MAX]; /* the member's path in it */
	int64_t mtime;
	uint64_t size; /* as indexed */
	/* private to sources/pass.c */
	int found;
	struct prod *next;
};

/*
 * The passes of a process: members extracted on rd's pool, under the
 * settings of rd's configuration.
 */
struct passes *passes_new(const struct resolve_deps *rd,
    struct pool_inbox *inbox);
void passes_free(struct passes *ps);
/*
 * Any thread (SIGHUP): passes begun from now on take cfg's settings
 * (package-coextract, archive-full-path, min-free-disk).
 */
void passes_apply(struct passes *ps, const struct config *cfg);
/*
 * Take (take 1) or give back ps's lock, which a source holds while it
 * makes a member's flight and joins it to a pass (passes_join).
 */
void passes_lock(struct passes *ps, int take);
/*
 * ps locked: member fill pr joins the open pass of its package that has
 * not read past its member, else one that has not begun, else starts one
 * (queued behind the passes of the package that run).  -1 when none can.
 */
int passes_join(struct passes *ps, struct prod *pr);

/* A package as flight labels show it: its file name. */
void pass_label(const char *package, char *out, size_t len);

/* An IMA signature in hex. */
#define PASS_RPM_SIG_MAX 2048

/*
 * What the answer of a package member says of it (cache/meta.h): its
 * archive (as archive shows the package), its file (member), and its IMA
 * signature when rh, the package's RPM header (NULL for other packages),
 * signs that file, written in sig.  m points at archive, member and sig.
 */
void pass_member_meta(const struct rpmhdr *rh, const char *archive,
    const char *member, char sig[PASS_RPM_SIG_MAX], struct cache_meta *m);

#endif /* SOURCES_PASS_H */
