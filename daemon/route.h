/*
 * daemon/route.h: turn a request target into what is asked for.
 *
 * The target is percent-decoded once, checked (no NUL, no "..", no
 * malformed escapes), and split into an endpoint and its arguments.  Pure
 * function of its input: no I/O, no allocation.
 */
#ifndef DAEMON_ROUTE_H
#define DAEMON_ROUTE_H

#include <stddef.h>

#include "indexer/buildid.h"

/* The longest section name accepted. */
#define ROUTE_SECTION_MAX 255
/* The longest decoded path accepted (source paths). */
#define ROUTE_PATH_MAX 4096

enum route_endpoint {
	ROUTE_BANNER, /* / */
	ROUTE_DEBUGINFO, /* /buildid/ID/debuginfo */
	ROUTE_EXECUTABLE, /* /buildid/ID/executable */
	ROUTE_SECTION, /* /buildid/ID/section/NAME */
	ROUTE_SOURCE, /* /buildid/ID/source/PATH */
	ROUTE_METRICS, /* /metrics */
	ROUTE_PURGE, /* /admin/purge?QUERY; arg is the raw query */
	ROUTE_MISSES, /* /admin/misses[?QUERY]; arg is the raw query */
	ROUTE_STATUS, /* /status */
	ROUTE_METADATA, /* /metadata?QUERY; arg is the raw query, or "" */
	ROUTE_ADMIN_CONFIG, /* /admin/config: the settings the CLI takes */
	ROUTE_RESCAN, /* /admin/rescan: POST asks for one, GET how it went */
};

struct route {
	enum route_endpoint endpoint;
	struct buildid id;
	/* Section name, canonical absolute source path, query, or "". */
	char arg[ROUTE_PATH_MAX + 1];
};

/*
 * Parse target[0..len).  Returns 0, or the HTTP status to answer (400 for a
 * malformed request, 404 for a path that names no endpoint) with *why.
 */
int route_parse(struct route *rt, const char *target, size_t len,
    const char **why);

/*
 * Percent-decode in[0..len) into out (len + 1 bytes), refusing malformed
 * escapes and NUL; with form, '+' is a space (a query's form encoding).
 * Returns the decoded length, or -1 with *why.
 */
long route_decode(const char *in, size_t len, char *out, int form,
    const char **why);

/* What route_encode leaves as it is. */
enum route_enc {
	ROUTE_ENC_PATH, /* printable ASCII but '%', '?', '#': a path */
	ROUTE_ENC_QUERY, /* letters, digits, "-._~/": a query's value */
};

/*
 * Percent-encode the C string in into out (len bytes, NUL-terminated),
 * keeping what how says.  Returns 0, or -1 when out is too short.
 */
int route_encode(const char *in, enum route_enc how, char *out, size_t len);

#endif /* DAEMON_ROUTE_H */
