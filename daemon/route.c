/*
 * daemon/route.c: request-target parsing and validation.
 *
 * Order matters: the target is decoded first, so "%2e%2e" is caught as "..",
 * and "%00" as a NUL.  A source path is the one place ".." may appear: it is
 * only ever a key, canonicalised as RFC 3986 section 5.2.4 says, with "//"
 * collapsed, exactly as clients and the reference server do.
 */
#include "daemon/route.h"

#include <string.h>
#include <strings.h>

#include "indexer/sources.h"

/* The longest target decoded; longer ones are refused before decoding. */
#define TARGET_MAX 8192

int
route_encode(const char *in, enum route_enc how, char *out, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;
	int keep;

	for (; *in != '\0'; in++) {
		unsigned char ch = (unsigned char)*in;

		if (how == ROUTE_ENC_PATH)
			keep = ch > 0x20 && ch < 0x7f && ch != '%' &&
			    ch != '?' && ch != '#';
		else
			keep = (ch >= 'a' && ch <= 'z') ||
			    (ch >= 'A' && ch <= 'Z') ||
			    (ch >= '0' && ch <= '9') ||
			    (ch != '\0' && strchr("-._~/", ch) != NULL);
		if (n + (keep ? 1 : 3) >= len)
			return -1;
		if (keep) {
			out[n++] = (char)ch;
		} else {
			out[n++] = '%';
			out[n++] = hex[ch >> 4];
			out[n++] = hex[ch & 0xf];
		}
	}
	if (n >= len)
		return -1;
	out[n] = '\0';
	return 0;
}

long
route_decode(const char *in, size_t len, char *out, int form, const char **why)
{
	size_t i, o = 0;
	int hi, lo;

	/* Most paths have nothing to decode: every request's does this. */
	if (!form && memchr(in, '%', len) == NULL &&
	    memchr(in, '\0', len) == NULL) {
		memmove(out, in, len);
		out[len] = '\0';
		return (long)len;
	}
	for (i = 0; i < len; i++) {
		if (in[i] == '\0') {
			*why = "NUL byte in the path";
			return -1;
		}
		if (in[i] != '%') {
			out[o++] = form && in[i] == '+' ? ' ' : in[i];
			continue;
		}
		if (len - i < 3) {
			*why = "malformed percent escape";
			return -1;
		}
		hi = buildid_hexval((unsigned char)in[i + 1]);
		lo = buildid_hexval((unsigned char)in[i + 2]);
		if (hi < 0 || lo < 0) {
			*why = "malformed percent escape";
			return -1;
		}
		out[o] = (char)(hi << 4 | lo);
		if (out[o] == '\0') {
			*why = "NUL byte in the path";
			return -1;
		}
		o++;
		i += 2;
	}
	out[o] = '\0';
	return (long)o;
}

static int
valid_section_name(const char *s)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > ROUTE_SECTION_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 ||
		    (unsigned char)s[i] >= 0x7f || s[i] == '/')
			return 0;
	return 1;
}

/*
 * Skip "http://authority" or "https://authority" in absolute-form.  The
 * authority ends at the first '/', '?' or '#'; without a '/' the path is
 * empty, which means "/".
 */
static void
skip_absolute_form(const char **target, size_t *len)
{
	const char *p = *target, *end = p + *len, *q;
	size_t skip;

	if (*len >= 7 && strncasecmp(p, "http://", 7) == 0)
		skip = 7;
	else if (*len >= 8 && strncasecmp(p, "https://", 8) == 0)
		skip = 8;
	else
		return;
	for (q = p + skip; q < end && *q != '/' && *q != '?' && *q != '#'; q++)
		;
	if (q == end || *q != '/') {
		*target = "/";
		*len = 1;
		return;
	}
	*len = (size_t)(end - q);
	*target = q;
}

int
route_parse(struct route *rt, const char *target, size_t len, const char **why)
{
	char path[TARGET_MAX + 1], *id, *type, *rest;
	const char *q;
	size_t qlen = 0;

	rt->arg[0] = '\0'; /* part of the cache key even where unused */
	skip_absolute_form(&target, &len);
	if ((q = memchr(target, '?', len)) != NULL) {
		qlen = len - (size_t)(q - target) - 1;
		len = (size_t)(q - target);
	}
	if (len == 0 || target[0] != '/') {
		*why = "request target must be an absolute path";
		return 400;
	}
	if (len > TARGET_MAX) {
		*why = "request target too long";
		return 414;
	}
	if (route_decode(target, len, path, 0, why) < 0)
		return 400;

	if (strcmp(path, "/") == 0) {
		rt->endpoint = ROUTE_BANNER;
		return 0;
	}
	if (strcmp(path, "/metrics") == 0) {
		rt->endpoint = ROUTE_METRICS;
		return 0;
	}
	if (strcmp(path, "/status") == 0) {
		rt->endpoint = ROUTE_STATUS;
		return 0;
	}
	if (strcmp(path, "/admin/purge") == 0 ||
	    strcmp(path, "/admin/misses") == 0) {
		rt->endpoint = path[7] == 'p' ? ROUTE_PURGE : ROUTE_MISSES;
		if ((q == NULL && rt->endpoint == ROUTE_PURGE) ||
		    qlen > ROUTE_PATH_MAX) {
			*why = q == NULL ? "purge what? id=ID, negative, "
					   "misses or upstream=URL"
					 : "query too long";
			return 400;
		}
		if (q != NULL)
			memcpy(rt->arg, q + 1, qlen);
		rt->arg[qlen] = '\0';
		return 0;
	}
	if (strcmp(path, "/admin/config") == 0 ||
	    strcmp(path, "/admin/rescan") == 0) {
		rt->endpoint =
		    path[7] == 'c' ? ROUTE_ADMIN_CONFIG : ROUTE_RESCAN;
		rt->arg[0] = '\0';
		return 0;
	}
	if (strcmp(path, "/symbolicate") == 0) {
		rt->endpoint = ROUTE_SYMBOLICATE;
		return 0;
	}
	if (strcmp(path, "/metadata") == 0) {
		if (qlen > ROUTE_PATH_MAX) {
			*why = "query too long";
			return 414;
		}
		if (q != NULL)
			memcpy(rt->arg, q + 1, qlen);
		rt->arg[q != NULL ? qlen : 0] = '\0';
		rt->endpoint = ROUTE_METADATA;
		return 0;
	}
	if (strncmp(path, "/buildid/", 9) != 0) {
		if (strstr(path, "..") != NULL) {
			*why = "\"..\" in the path";
			return 400;
		}
		*why = "no such endpoint";
		return 404;
	}

	id = path + 9;
	if ((type = strchr(id, '/')) == NULL) {
		*why = "missing artifact type after the build-id";
		return 400;
	}
	*type++ = '\0';
	if (buildid_parse(&rt->id, id, strlen(id), why) == -1)
		return 400;
	if ((rest = strchr(type, '/')) != NULL)
		*rest++ = '\0';

	if (strcmp(type, "source") == 0) {
		if (rest == NULL || *rest == '\0') {
			*why = "missing source path";
			return 400;
		}
		/* Keep the leading slash the split removed. */
		rest[-1] = '/';
		sources_canonicalise(rest - 1);
		if (strlen(rest - 1) > ROUTE_PATH_MAX) {
			*why = "source path too long";
			return 414;
		}
		strcpy(rt->arg, rest - 1);
		rt->endpoint = ROUTE_SOURCE;
		return 0;
	}
	if (rest != NULL && strstr(rest, "..") != NULL) {
		*why = "\"..\" in the path";
		return 400;
	}
	if (strcmp(type, "debuginfo") == 0) {
		/* The reference ignores anything after the type; so do we. */
		rt->endpoint = ROUTE_DEBUGINFO;
	} else if (strcmp(type, "executable") == 0) {
		rt->endpoint = ROUTE_EXECUTABLE;
	} else if (strcmp(type, "symbolicate") == 0 && rest == NULL) {
		if (qlen > ROUTE_PATH_MAX) {
			*why = "query too long: POST /symbolicate takes more";
			return 414;
		}
		if (q != NULL)
			memcpy(rt->arg, q + 1, qlen);
		rt->arg[q != NULL ? qlen : 0] = '\0';
		rt->endpoint = ROUTE_SYMBOLICATE_ID;
	} else if (strcmp(type, "section") == 0) {
		if (rest == NULL || !valid_section_name(rest)) {
			*why = "bad section name";
			return 400;
		}
		strcpy(rt->arg, rest);
		rt->endpoint = ROUTE_SECTION;
	} else {
		*why = strstr(type, "..") != NULL ? "\"..\" in the path"
						  : "unknown artifact type";
		return 400;
	}
	return 0;
}
