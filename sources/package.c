/*
 * sources/package.c: members of indexed packages (cache/pkgindex.h: the
 * local package directories the scan read, and the packages downloaded
 * from remote repositories).
 *
 * The request side finds a member that holds the debuginfo, executable or
 * source asked for and joins the fill of the key; the flight side hands
 * the fill to a decompression pass over its package (sources/pass.h),
 * under the passes' lock, which it holds from the moment the flight is
 * made.  A fill handed on by an earlier source (a repository whose
 * download just made the package local) looks its member up itself.
 * Package members are the package's: a member that cannot be extracted is
 * a failure, never remembered as a miss.
 */
#include "sources/sources.h"

#include <stdlib.h>
#include <string.h>

#include "cache/index.h"
#include "cache/pkgindex.h"
#include "daemon/log.h"
#include "indexer/elf.h"
#include "resolver/produce.h"
#include "resolver/rq.h"
#include "sources/pass.h"

static int
pkg_found_cb(const struct pkg_rec *r, void *arg)
{
	struct pass_want *pw = arg;

	if (strlen(r->package) >= sizeof(pw->package) ||
	    strlen(r->member) >= sizeof(pw->member))
		return 0;
	strcpy(pw->package, r->package);
	strcpy(pw->member, r->member);
	pw->mtime = r->mtime;
	pw->size = r->size;
	return 1;
}

/*
 * In rd's transaction: the member of id that holds kind (and for a source,
 * path arg) into pw; 1 found, 0 not.
 */
static int
package_find(struct index_reader *rd, const struct buildid *id,
    enum cache_kind kind, const char *arg, struct pass_want *pw)
{
	pw->package[0] = '\0';
	switch (kind) {
	case CACHE_DEBUGINFO:
		pkgidx_find(rd, id, ELF_KIND_DEBUGINFO, pkg_found_cb, pw);
		break;
	case CACHE_EXECUTABLE:
		pkgidx_find(rd, id, ELF_KIND_EXECUTABLE, pkg_found_cb, pw);
		break;
	case CACHE_SOURCE:
		pkgidx_find_source(rd, id, arg, pkg_found_cb, pw);
		break;
	case CACHE_SECTION:
	case CACHE_SYMTAB:
		break;
	}
	return pw->package[0] != '\0';
}

static enum src_result
package_lookup(struct rq *rq)
{
	struct pass_want found, *pw;
	struct prod_what w;

	if (rq->d->packages == NULL || rq->d->prod == NULL || rq_section(rq))
		return SRC_ABSENT;
	if (rq_txn(rq) == -1)
		return rq_fail(rq, "index unavailable");
	/* On the stack first: most requests that get here find nothing. */
	if (!package_find(rq->th->rd, &rq->rt->id, rq_kind(rq), rq->rt->arg,
		&found))
		return SRC_ABSENT;
	if ((pw = calloc(1, sizeof(*pw))) == NULL)
		return rq_fail(rq, "out of memory");
	strcpy(pw->package, found.package);
	strcpy(pw->member, found.member);
	pw->mtime = found.mtime;
	pw->size = found.size;
	rq_what(rq, &w);
	w.limit = 0; /* a member is never larger than its index says */
	w.announce = pw->size;
	pass_label(pw->package, w.from, sizeof(w.from));
	return rq_produce(rq, &w, pw);
}

/*
 * The passes' lock held: join a pass of p's package.  A fill handed on by
 * an earlier source finds its member first, with the lock given back
 * meanwhile: a read transaction is never opened under the passes' lock
 * (sources/pass.c).  What the lock guards, joining a pass, comes after.
 */
static void
package_produce(struct prod *p)
{
	const struct resolve_deps *d = produce_deps(p);
	struct index_reader *rd;
	struct pass_want *pw;
	int found = 0;

	if (p->data == NULL) {
		if (d->packages == NULL || p->w.kind == CACHE_SECTION ||
		    (pw = calloc(1, sizeof(*pw))) == NULL) {
			produce_absent(p);
			return;
		}
		passes_lock(d->packages, 0);
		if ((rd = index_reader_new(d->idx)) != NULL) {
			if (index_reader_begin(rd) == 0) {
				found = package_find(rd, &p->w.id, p->w.kind,
				    p->w.arg, pw);
				index_reader_end(rd);
			}
			index_reader_free(rd);
		}
		passes_lock(d->packages, 1);
		if (!found) {
			free(pw);
			produce_absent(p);
			return;
		}
		p->data = pw;
		flight_announce(p->f, pw->size);
	}
	if (passes_join(d->packages, p) == -1)
		produce_end(p, FLIGHT_FAILED, "server is shutting down");
}

static void
package_lock(const struct resolve_deps *d, int take)
{
	passes_lock(d->packages, take);
}

static void
package_release(void *data)
{
	free(data);
}

const struct source source_package = {
	.name = "package",
	.held = 1,
	.lookup = package_lookup,
	.produce = package_produce,
	.produce_anywhere = 1,
	.lock = package_lock,
	.release = package_release,
};
