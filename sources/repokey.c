/*
 * sources/repokey.c: what the daemon and the CLI alike say of a configured
 * repository: the key its entries have in the index (cache/repoidx.h),
 * and why it does not serve an id.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "conf/config.h"
#include "daemon/httpdate.h"
#include "sources/repo.h"

/* The identity of a repository, which its key hashes. */
void
repos_ident(const struct config_repo *cr, char *out, size_t len)
{
	size_t i, n;

	n = (size_t)snprintf(out, len, "%d %s %s", (int)cr->type, cr->url,
	    cr->suite);
	for (i = 0; i < cr->ncomponents && n < len; i++)
		n += (size_t)snprintf(out + n, len - n, " c=%s",
		    cr->components[i]);
	for (i = 0; i < cr->narchs && n < len; i++)
		n += (size_t)snprintf(out + n, len - n, " a=%s", cr->archs[i]);
}

size_t
repos_config_keys(const struct config *cfg, char (*names)[1100],
    uint8_t (*keys)[REPOIDX_KEY_LEN], size_t max)
{
	struct config_repo *cr;
	char ident[CONFIG_REPO_TEXT + 64];
	const char *why;
	size_t i, n = 0;

	if ((cr = malloc(sizeof(*cr))) == NULL)
		return 0;
	for (i = 0; i < cfg->repos.n && n < max; i++) {
		if (config_repo_parse(cfg->repos.v[i], cr, &why) == -1)
			continue;
		repos_ident(cr, ident, sizeof(ident));
		repoidx_key(ident, keys[n]);
		snprintf(names[n], sizeof(names[n]), "%s", cr->name);
		n++;
	}
	free(cr);
	return n;
}

/*
 * The archives users front keep the debug packages of their current
 * builds only (a new upload replaces the old -dbg package); the kernel's
 * -dbg packages name no .build-id/ paths, so no index file maps their
 * ids (docs/repositories.md says what to do for both).
 */
void
repos_why_absent(const struct repoidx_state *st, int kernel, char *out,
    size_t len)
{
	char when[HTTPDATE_ISO_LEN];

	if (st->gen == 0 && st->running != 0) {
		httpdate_iso((time_t)st->running, when);
		snprintf(out, len,
		    "its first refresh is running (since %s): the id may come "
		    "with it",
		    when);
	} else if (st->gen == 0)
		snprintf(out, len,
		    "never refreshed: nothing of it is known (dbgmirror stats "
		    "says why)");
	else if (kernel)
		snprintf(out, len,
		    "not in its index: a kernel's vmlinux and modules have no "
		    ".build-id paths in the archive's Contents, nor Build-Ids "
		    "in Packages; put that kernel's linux-image-VERSION-dbg "
		    "package in a scan-packages directory");
	else
		snprintf(out, len,
		    "not in its index (%llu ids): an archive keeps the debug "
		    "packages of its current builds only, and an older build's "
		    "are not there; add a snapshot of the archive from that "
		    "build's time (snapshot.debian.org) as another repo",
		    (unsigned long long)st->ids);
}
