/*
 * cache/meta.c: copies of an answer's X-DEBUGINFOD-* values
 * (cache/meta.h).  Any thread.
 */
#include "cache/meta.h"

#include <string.h>

static const char *
or_empty(const char *s)
{
	return s != NULL ? s : "";
}

size_t
cache_meta_size(const struct cache_meta *m)
{
	return strlen(or_empty(m->file)) + strlen(or_empty(m->archive)) +
	    strlen(or_empty(m->imasig)) +
	    (m->extra != NULL ? m->extra_len : 0) + 4;
}

/* Copy n bytes of s and a NUL to *p, moving it on; the copy. */
static const char *
put(char **p, const char *s, size_t n)
{
	char *at = *p;

	memcpy(at, s, n);
	at[n] = '\0';
	*p += n + 1;
	return at;
}

void
cache_meta_copy(struct cache_meta *out, const struct cache_meta *m, char *buf)
{
	const char *file = or_empty(m->file), *archive = or_empty(m->archive);
	const char *imasig = or_empty(m->imasig);
	size_t extra_len = m->extra != NULL ? m->extra_len : 0;

	out->file = put(&buf, file, strlen(file));
	out->archive = put(&buf, archive, strlen(archive));
	out->imasig = put(&buf, imasig, strlen(imasig));
	out->extra = put(&buf, or_empty(m->extra), extra_len);
	out->extra_len = extra_len;
}
