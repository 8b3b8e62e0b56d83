/*
 * sources/repokey.c: which key a configured repository's entries have in
 * the index (cache/repoidx.h), for the daemon and the CLI alike.
 */
#include <stdio.h>
#include <stdlib.h>

#include "conf/config.h"
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
