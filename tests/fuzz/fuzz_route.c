/*
 * tests/fuzz/fuzz_route.c: fuzz route_parse(), which decodes and checks
 * request targets (daemon/route.h), and buildid_parse() behind it.
 *
 * The input is one request target.  Besides memory errors the target aborts
 * when a result breaks what the router promises the rest of the server: an
 * unknown status or a missing reason, a NUL byte let through, a build-id
 * that does not survive a format/parse round trip, a source path that is
 * not canonical (a "." or ".." segment, an empty segment, no leading '/',
 * too long) or a section name the router should have refused.  The same
 * target in absolute form ("http://host" before it) and with a query
 * string after it must route the same way.
 */
#include "daemon/route.h"

#include "tests/fuzz/fuzz.h"

/* The longest target route_parse() decodes (route.c TARGET_MAX). */
#define TARGET_LIMIT 8192

#define ABS_PREFIX "http://debuginfod.example:8002"
#define QUERY "?x=1"

static struct route got, other;

static int
route_copy(struct route *rt, const char *target, size_t len, const char **why)
{
	char *copy = fuzz_copy((const uint8_t *)target, len);
	int rc;

	if (copy == NULL)
		return -1;
	memset(rt, 0x5a, sizeof(*rt));
	*why = NULL;
	rc = route_parse(rt, copy, len, why);
	free(copy);
	return rc;
}

/* A canonical absolute path: "/" or "/seg/seg", no "." or ".." segment. */
static void
check_canonical(const char *path)
{
	const char *seg = path, *next;
	size_t n;

	FUZZ_CHECK(path[0] == '/');
	if (strcmp(path, "/") == 0)
		return;
	while (*seg == '/') {
		seg++;
		next = strchr(seg, '/');
		n = next != NULL ? (size_t)(next - seg) : strlen(seg);
		FUZZ_CHECK(n > 0);
		FUZZ_CHECK(!(n == 1 && seg[0] == '.'));
		FUZZ_CHECK(!(n == 2 && seg[0] == '.' && seg[1] == '.'));
		seg += n;
	}
	FUZZ_CHECK(*seg == '\0');
}

/* An endpoint that takes no argument at all. */
static int
bare(enum route_endpoint e)
{
	return e == ROUTE_BANNER || e == ROUTE_METRICS || e == ROUTE_STATUS;
}

/* An endpoint whose argument is the raw query (its meaning is its query). */
static int
by_query(enum route_endpoint e)
{
	return e == ROUTE_PURGE || e == ROUTE_MISSES || e == ROUTE_METADATA;
}

static void
check_route(const struct route *rt, int rc, const char *why)
{
	struct buildid again;
	char hex[BUILDID_HEX_MAX];
	const char *why2;
	size_t i, n;

	if (rc != 0) {
		FUZZ_CHECK(rc == 400 || rc == 404 || rc == 414);
		FUZZ_CHECK(why != NULL && why[0] != '\0');
		return;
	}
	if (bare(rt->endpoint))
		return;
	if (by_query(rt->endpoint)) {
		/* The raw query, bounded; its endpoint parses it. */
		n = strnlen(rt->arg, sizeof(rt->arg));
		FUZZ_CHECK(n <= ROUTE_PATH_MAX);
		return;
	}
	FUZZ_CHECK(rt->endpoint == ROUTE_DEBUGINFO ||
	    rt->endpoint == ROUTE_EXECUTABLE || rt->endpoint == ROUTE_SECTION ||
	    rt->endpoint == ROUTE_SOURCE);
	FUZZ_CHECK(rt->id.len >= 1 && rt->id.len <= BUILDID_MAX);
	buildid_format(&rt->id, hex);
	FUZZ_CHECK(strlen(hex) == 2 * (size_t)rt->id.len);
	FUZZ_CHECK(buildid_parse(&again, hex, strlen(hex), &why2) == 0);
	FUZZ_CHECK(buildid_equal(&again, &rt->id));

	n = strnlen(rt->arg, sizeof(rt->arg));
	if (rt->endpoint == ROUTE_SOURCE) {
		FUZZ_CHECK(n <= ROUTE_PATH_MAX);
		check_canonical(rt->arg);
	} else if (rt->endpoint == ROUTE_SECTION) {
		FUZZ_CHECK(n >= 1 && n <= ROUTE_SECTION_MAX);
		for (i = 0; i < n; i++)
			FUZZ_CHECK((unsigned char)rt->arg[i] > 0x20 &&
			    (unsigned char)rt->arg[i] < 0x7f &&
			    rt->arg[i] != '/');
	}
}

/* The two routes ask for the same thing. */
static int
route_same(const struct route *a, int rca, const struct route *b, int rcb)
{
	if (rca != rcb)
		return 0;
	if (rca != 0 || a->endpoint != b->endpoint)
		return rca != 0;
	/* No build-id to compare; a query is its endpoint's own. */
	if (bare(a->endpoint) || by_query(a->endpoint))
		return 1;
	if (!buildid_equal(&a->id, &b->id))
		return 0;
	if (a->endpoint == ROUTE_SOURCE || a->endpoint == ROUTE_SECTION)
		return strcmp(a->arg, b->arg) == 0;
	return 1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *target = (const char *)data, *why, *q;
	size_t path_len;
	char *alt;
	int rc, rc2;

	rc = route_copy(&got, target, size, &why);
	if (rc == -1)
		return 0;
	check_route(&got, rc, why);

	if (size == 0 || target[0] != '/' || size > TARGET_LIMIT)
		return 0;
	q = memchr(target, '?', size);
	path_len = q != NULL ? (size_t)(q - target) : size;
	/* A NUL, raw or escaped, never reaches the C strings of the route. */
	if (memchr(target, '\0', path_len) != NULL)
		FUZZ_CHECK(rc == 400);
	/* Only a plain origin-form target has equivalent spellings. */
	if (q != NULL)
		return 0;
	if ((alt = malloc(sizeof(ABS_PREFIX) + size + sizeof(QUERY))) == NULL)
		return 0;

	memcpy(alt, ABS_PREFIX, strlen(ABS_PREFIX));
	memcpy(alt + strlen(ABS_PREFIX), target, size);
	rc2 = route_copy(&other, alt, strlen(ABS_PREFIX) + size, &why);
	check_route(&other, rc2, why);
	FUZZ_CHECK(route_same(&got, rc, &other, rc2));

	memcpy(alt, target, size);
	memcpy(alt + size, QUERY, strlen(QUERY));
	rc2 = route_copy(&other, alt, size + strlen(QUERY), &why);
	check_route(&other, rc2, why);
	/* Endpoints whose meaning is their query may answer otherwise. */
	if (!(rc2 == 0 && by_query(other.endpoint)))
		FUZZ_CHECK(route_same(&got, rc, &other, rc2));

	free(alt);
	return 0;
}
