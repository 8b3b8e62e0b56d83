/*
 * tests/unit/test_route.c: daemon/route.c, request-target decoding,
 * validation and routing, with build-ids parsed by indexer/buildid.c.
 *
 * Each target is routed from a heap copy of exactly its bytes (no NUL
 * after it), so a read past the end is an AddressSanitizer report.  The
 * cases follow route.h: every endpoint with its build-id and argument,
 * absolute-form and query strings, percent-decoding, "..", source-path
 * canonicalisation, section names, and the 400/404/414 answers with a
 * reason.  No files, no set-up.
 */
#include "daemon/route.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"

#define ID20 "4ef383d1b23f47089d93da84d2cdb4ea0e347b0a"
/* The longest target route_parse decodes (route.c TARGET_MAX). */
#define TARGET_LIMIT 8192

static struct route rt;

/* Route target[0..len) from a heap copy of exactly len bytes. */
static int
route_n(const char *target, size_t len, const char **why)
{
	char *copy = malloc(len > 0 ? len : 1);
	int rc;

	if (copy == NULL) {
		perror("malloc");
		exit(1);
	}
	memcpy(copy, target, len);
	*why = NULL;
	memset(&rt, 0x5a, sizeof(rt));
	rc = route_parse(&rt, copy, len, why);
	free(copy);
	return rc;
}

static int
route(const char *target, const char **why)
{
	return route_n(target, strlen(target), why);
}

/* The build-id of the last route, as lowercase hex. */
static const char *
id_hex(void)
{
	static char hex[BUILDID_HEX_MAX];

	if (rt.id.len > BUILDID_MAX)
		return "(bad length)";
	buildid_format(&rt.id, hex);
	return hex;
}

/* After a helper's checks: name the calling line if any of them failed. */
static void
called_from(int failed_before, int line)
{
	if (tap_failed > failed_before)
		printf("#   case at %s:%d\n", __FILE__, line);
}

/* target routes to endpoint with build-id hex and, if not NULL, arg. */
static void
check_route_at(int line, const char *target, enum route_endpoint endpoint,
    const char *hex, const char *arg, const char *what)
{
	int failed = tap_failed;
	const char *why;
	char msg[200];
	int rc;

	rc = route(target, &why);
	snprintf(msg, sizeof(msg), "%s: accepted", what);
	is_int(rc, 0, msg);
	if (rc != 0)
		printf("#   why: %s\n", why != NULL ? why : "(null)");
	snprintf(msg, sizeof(msg), "%s: endpoint", what);
	is_int(rt.endpoint, endpoint, msg);
	if (hex != NULL) {
		snprintf(msg, sizeof(msg), "%s: build-id", what);
		is_str(rc == 0 ? id_hex() : "(none)", hex, msg);
	}
	if (arg != NULL) {
		snprintf(msg, sizeof(msg), "%s: argument", what);
		is_str(rc == 0 ? rt.arg : "(none)", arg, msg);
	}
	called_from(failed, line);
}

#define check_route(...) check_route_at(__LINE__, __VA_ARGS__)

/* target is refused with status and a reason. */
static void
check_refused_at(int line, const char *target, size_t len, int status,
    const char *what)
{
	int failed = tap_failed;
	const char *why;
	char msg[200];

	snprintf(msg, sizeof(msg), "%s: %d", what, status);
	is_int(route_n(target, len, &why), status, msg);
	snprintf(msg, sizeof(msg), "%s: says why", what);
	ok(why != NULL && why[0] != '\0', msg);
	called_from(failed, line);
}

#define check_refused_n(target, len, status, what) \
	check_refused_at(__LINE__, (target), (len), (status), (what))
#define check_refused(target, status, what) \
	check_refused_at(__LINE__, (target), strlen(target), (status), (what))

/* Like check_refused, and the reason is exactly reason. */
static void
check_reason_at(int line, const char *target, int status, const char *reason,
    const char *what)
{
	int failed = tap_failed;
	const char *why;
	char msg[200];

	snprintf(msg, sizeof(msg), "%s: %d", what, status);
	is_int(route(target, &why), status, msg);
	snprintf(msg, sizeof(msg), "%s: reason", what);
	is_str(why, reason, msg);
	called_from(failed, line);
}

#define check_reason(...) check_reason_at(__LINE__, __VA_ARGS__)

static void
test_endpoints(void)
{
	check_route("/", ROUTE_BANNER, NULL, NULL, "banner");
	/* The argument is part of the cache key: empty, never left over. */
	check_route("/buildid/" ID20 "/debuginfo", ROUTE_DEBUGINFO, ID20, "",
	    "debuginfo");
	check_route("/buildid/" ID20 "/executable", ROUTE_EXECUTABLE, ID20, "",
	    "executable");
	check_route("/buildid/" ID20 "/section/.debug_info", ROUTE_SECTION,
	    ID20, ".debug_info", "section");
	check_route("/buildid/" ID20 "/source/usr/src/debug/a.c", ROUTE_SOURCE,
	    ID20, "/usr/src/debug/a.c", "source");
	check_route("/buildid/ab/debuginfo", ROUTE_DEBUGINFO, "ab", NULL,
	    "two-digit build-id");
	check_route("/metrics", ROUTE_METRICS, NULL, "", "metrics");
	check_route("/status", ROUTE_STATUS, NULL, "", "status page");
	check_route("/status?x=1", ROUTE_STATUS, NULL, NULL,
	    "status page, a query ignored");
	check_route("/admin/purge?negative", ROUTE_PURGE, NULL, "negative",
	    "purge, its raw query");
	check_reason("/admin/purge", 400,
	    "purge what? id=ID, negative, misses or upstream=URL",
	    "purge without a query");
	check_route("/admin/config", ROUTE_ADMIN_CONFIG, NULL, "",
	    "the settings the CLI takes");
	check_route("/admin/rescan", ROUTE_RESCAN, NULL, "", "rescan");
	check_route("/admin/misses", ROUTE_MISSES, NULL, "",
	    "missing-id report, no query");
	check_route("/admin/misses?top=5&since=1d", ROUTE_MISSES, NULL,
	    "top=5&since=1d", "missing-id report, its raw query");
	check_refused("/admin/missesx", 404, "a near miss of the report");
	/* The query is the handler's to decode. */
	check_route("/metadata?key=glob&value=%2Fusr%2F*", ROUTE_METADATA, NULL,
	    "key=glob&value=%2Fusr%2F*", "metadata");
	check_route("/metadata", ROUTE_METADATA, NULL, "",
	    "metadata without a query");
	check_route("http://host/metadata?key=file&value=/x", ROUTE_METADATA,
	    NULL, "key=file&value=/x", "metadata in absolute form");
}

static void
test_buildids(void)
{
	char target[512], digits[200];
	const char *why;

	is_int(route("/buildid/0aFF/debuginfo", &why), 0, "mixed-case id");
	is_int(rt.id.len, 2, "mixed-case id: two bytes");
	ok(rt.id.bytes[0] == 0x0a && rt.id.bytes[1] == 0xff,
	    "mixed-case id: bytes 0a ff");
	check_route("/buildid/4EF383D1B23F47089D93DA84D2CDB4EA0E347B0A/"
		    "executable",
	    ROUTE_EXECUTABLE, ID20, NULL, "uppercase id folds");

	memset(digits, 'f', 128);
	digits[128] = '\0';
	snprintf(target, sizeof(target), "/buildid/%s/debuginfo", digits);
	check_route(target, ROUTE_DEBUGINFO, digits, NULL, "128-digit id");
	is_int(rt.id.len, 64, "128-digit id: 64 bytes");
	memset(digits, 'f', 130);
	digits[130] = '\0';
	snprintf(target, sizeof(target), "/buildid/%s/debuginfo", digits);
	check_refused(target, 400, "130-digit id");
	digits[129] = '\0';
	snprintf(target, sizeof(target), "/buildid/%s/debuginfo", digits);
	check_refused(target, 400, "129-digit id");

	check_refused("/buildid/abc/debuginfo", 400, "odd-length id");
	check_refused("/buildid/a/debuginfo", 400, "one-digit id");
	check_refused("/buildid//debuginfo", 400, "empty id");
	check_refused("/buildid/zz/debuginfo", 400, "non-hex id");
	check_refused("/buildid/0g/executable", 400, "half non-hex id");
	check_refused("/buildid/g0/executable", 400, "other half non-hex id");
	check_refused("/buildid/a%20/debuginfo", 400, "id with a space");
	check_refused("/buildid/-1/debuginfo", 400, "id with a sign");
}

static void
test_types(void)
{
	check_refused("/buildid/ab", 400, "missing type");
	check_refused("/buildid/" ID20, 400, "missing type after a long id");
	check_refused("/buildid/ab/", 400, "empty type");
	check_reason("/buildid/ab/foo", 400, "unknown artifact type",
	    "unknown type");
	check_refused("/buildid/ab/Debuginfo", 400, "types are case-sensitive");
	check_refused("/buildid/ab/debuginfox", 400, "type with a suffix");
	check_refused("/buildid/ab/sources/a.c", 400, "sources is not source");

	/* The reference ignores anything after debuginfo/executable. */
	check_route("/buildid/ab/debuginfo/extra/stuff", ROUTE_DEBUGINFO, "ab",
	    NULL, "extra path after debuginfo");
	check_route("/buildid/ab/debuginfo/", ROUTE_DEBUGINFO, "ab", NULL,
	    "trailing slash after debuginfo");
	check_route("/buildid/ab/executable/x.y", ROUTE_EXECUTABLE, "ab", NULL,
	    "extra path after executable");
}

static void
test_query_and_absolute_form(void)
{
	check_route("/?x=1", ROUTE_BANNER, NULL, NULL, "banner with a query");
	check_route("/buildid/ab/debuginfo?x=1&y=/../z", ROUTE_DEBUGINFO, "ab",
	    NULL, "query ignored");
	check_route("/buildid/ab/source/usr/a.c?v=%00", ROUTE_SOURCE, "ab",
	    "/usr/a.c", "query ignored in a source path");
	check_route("/buildid/ab/section/.text?", ROUTE_SECTION, "ab", ".text",
	    "empty query ignored in a section");
	check_refused("/buildid/ab/source?x=/a.c", 400,
	    "a query is not a source path");

	check_route("http://host:1/buildid/ab/debuginfo", ROUTE_DEBUGINFO, "ab",
	    NULL, "absolute-form http");
	check_route("HTTPS://host/buildid/ab/executable", ROUTE_EXECUTABLE,
	    "ab", NULL, "absolute-form HTTPS");
	check_route("hTtP://host/buildid/ab/section/.text", ROUTE_SECTION, "ab",
	    ".text", "absolute-form in mixed case");
	check_route("http://host", ROUTE_BANNER, NULL, NULL,
	    "absolute-form without a path");
	check_route("https://host:8002", ROUTE_BANNER, NULL, NULL,
	    "absolute-form https with a port, no path");
	check_route("http://host/", ROUTE_BANNER, NULL, NULL,
	    "absolute-form with /");
	check_route("http://host/buildid/ab/debuginfo?q", ROUTE_DEBUGINFO, "ab",
	    NULL, "absolute-form with a query");
	/* The authority ends at "?" too (RFC 3986 3.2): the path is empty. */
	check_route("http://host?x=/buildid/ab/debuginfo", ROUTE_BANNER, NULL,
	    NULL, "absolute-form, no path, slash in the query");
	check_refused("http://host/../buildid/ab/debuginfo", 400,
	    "absolute-form with ..");
	check_refused("ftp://host/buildid/ab/debuginfo", 400, "another scheme");
	check_refused("http:/host/buildid/ab/debuginfo", 400,
	    "scheme with one slash");

	check_refused("buildid/ab/debuginfo", 400, "relative target");
	check_refused("*", 400, "asterisk-form");
	check_refused("", 400, "empty target");
	check_refused("?x=1", 400, "only a query");
	check_refused("%2Fbuildid/ab/debuginfo", 400,
	    "an encoded first slash is not a slash");
}

static void
test_percent_decoding(void)
{
	check_route("/buildid/%61%62/debuginfo", ROUTE_DEBUGINFO, "ab", NULL,
	    "encoded id");
	check_route("/buildid%2Fab%2fdebuginfo", ROUTE_DEBUGINFO, "ab", NULL,
	    "decoded before splitting");
	check_route("/buildid/ab/section/%2Edebug_info", ROUTE_SECTION, "ab",
	    ".debug_info", "encoded section name");
	check_route("/buildid/ab/source/usr%2Fsrc%2fa%20b.c", ROUTE_SOURCE,
	    "ab", "/usr/src/a b.c", "encoded source path");
	check_route("/buildid/ab/source/a%25b%3fc%23d", ROUTE_SOURCE, "ab",
	    "/a%b?c#d", "encoded %, ? and # stay in the source path");
	check_route("/buildid/ab/source/caf%C3%A9.c", ROUTE_SOURCE, "ab",
	    "/caf\xc3\xa9.c", "encoded UTF-8 in a source path");
	check_refused("/%2F", 404, "an encoded slash after the first");

	check_refused("/buildid/ab/source/a%00b", 400, "%00");
	check_refused("/buildid/a%00/debuginfo", 400, "%00 in the id");
	check_refused("/buildid/ab/section/%00", 400, "%00 as a section name");
	check_refused("/buildid/ab/source/a%", 400, "lone % at the end");
	check_refused("/buildid/ab/source/a%4", 400, "% with one digit");
	check_refused("/buildid/ab/source/a%zz", 400, "%zz");
	check_refused("/buildid/ab/source/a%4g", 400, "%4g");
	check_refused("/buildid/ab/source/a%g4", 400, "%g4");
	check_refused("/buildid/ab/source/a%%41", 400, "%%");
	check_refused("/buildid/ab/source/a% 1", 400, "% followed by a space");
	check_refused("/%", 400, "lone % outside /buildid");
	check_refused("/buildid/ab/debuginfo%", 400, "lone % after the type");
	/* A raw NUL byte is a NUL byte too (route.h: "no NUL"). */
	check_refused_n("/buildid/ab/source/a\0b", 22, 400, "raw NUL byte");
}

static void
test_dot_dot(void)
{
	check_refused("/..", 400, "/..");
	check_refused("/../x", 400, "/../x");
	check_refused("/x/..", 400, "/x/..");
	check_refused("/x/../y", 400, "/x/../y");
	check_refused("/%2e%2e/x", 400, "/%2e%2e/x");
	check_refused("/%2E%2E", 400, "/%2E%2E");
	check_refused("/x/.%2e", 400, "/x/.%2e");
	check_refused("/x/../buildid/ab/debuginfo", 400, ".. before /buildid");
	check_refused("/buildid/../ab/debuginfo", 400, ".. as the id");
	check_refused("/buildid/ab/../debuginfo", 400, ".. as the type");
	check_refused("/buildid/ab/%2e%2e/executable", 400,
	    "encoded .. as the type");
	check_refused("/buildid/ab/debuginfo/..", 400, ".. after debuginfo");
	check_refused("/buildid/ab/debuginfo/../x", 400,
	    ".. inside the extra path");
	check_refused("/buildid/ab/executable/%2E%2e", 400,
	    "encoded .. after executable");
	check_refused("/buildid/ab/section/..", 400, "section name ..");
	check_refused("/buildid/ab/section/%2e%2e", 400,
	    "encoded section name ..");
	check_refused("/buildid/ab/section/../x", 400, ".. after section");
	check_refused("/buildid/ab/foo/../x", 400, ".. after an unknown type");
	/* Not under /buildid, a path with ".." anywhere is malformed, not
	   absent: the check is on the substring, not only on segments. */
	check_refused("/x..y", 400, ".. inside a segment");
	check_refused("/nothing/here", 404, "the same path without .. is 404");
}

static void
test_source_paths(void)
{
	check_route("/buildid/ab/source/usr/src/./a//b/../c.c", ROUTE_SOURCE,
	    "ab", "/usr/src/a/c.c", "., // and .. resolved");
	check_route("/buildid/ab/source/../../etc/passwd", ROUTE_SOURCE, "ab",
	    "/etc/passwd", ".. above the root stops at /");
	check_route("/buildid/ab/source/%2e%2e/%2E%2E/etc/passwd", ROUTE_SOURCE,
	    "ab", "/etc/passwd", "encoded .. above the root");
	check_route("/buildid/ab/source/a/../../../b", ROUTE_SOURCE, "ab", "/b",
	    "more .. than segments");
	check_route("/buildid/ab/source//usr///src/a.c", ROUTE_SOURCE, "ab",
	    "/usr/src/a.c", "runs of slashes collapse");
	check_route("/buildid/ab/source/usr/src%2F%2Fa.c", ROUTE_SOURCE, "ab",
	    "/usr/src/a.c", "encoded // collapses");
	check_route("/buildid/ab/source/a/./b/.", ROUTE_SOURCE, "ab", "/a/b",
	    ". segments dropped");
	check_route("/buildid/ab/source/.../..a/a../.b", ROUTE_SOURCE, "ab",
	    "/.../..a/a../.b", "names that only start with dots are kept");
	check_route("/buildid/ab/source/a/b/../../c/d/..", ROUTE_SOURCE, "ab",
	    "/c", "several .. in a row");
	/*
	 * A trailing slash, and the slash a trailing "." or ".." would leave
	 * (RFC 3986 5.2.4 keeps it), is dropped: the path is a key naming a
	 * file, and "/usr/src/" and "/usr/src" name the same thing.
	 */
	check_route("/buildid/ab/source/usr/src/", ROUTE_SOURCE, "ab",
	    "/usr/src", "trailing slash dropped");
	check_route("/buildid/ab/source/a/b/..", ROUTE_SOURCE, "ab", "/a",
	    "trailing .. leaves no slash");
	check_route("/buildid/ab/source/a/.", ROUTE_SOURCE, "ab", "/a",
	    "trailing . leaves no slash");
	/* A path that resolves to nothing is the root. */
	check_route("/buildid/ab/source//", ROUTE_SOURCE, "ab", "/",
	    "source // is the root");
	check_route("/buildid/ab/source/..", ROUTE_SOURCE, "ab", "/",
	    "source .. is the root");
	check_route("/buildid/ab/source/.", ROUTE_SOURCE, "ab", "/",
	    "source . is the root");

	check_reason("/buildid/ab/source", 400, "missing source path",
	    "source without a path");
	check_reason("/buildid/ab/source/", 400, "missing source path",
	    "source with an empty path");
	check_refused("/buildid/ab/source/?x", 400, "source with only a query");
}

static void
test_section_names(void)
{
	char target[512], name[300];

	check_route("/buildid/ab/section/.gnu_debugdata", ROUTE_SECTION, "ab",
	    ".gnu_debugdata", "section name with _");
	check_route("/buildid/ab/section/a$b-c~d", ROUTE_SECTION, "ab",
	    "a$b-c~d", "section name with punctuation");
	check_route("/buildid/ab/section/%25", ROUTE_SECTION, "ab", "%",
	    "section name %");

	check_reason("/buildid/ab/section", 400, "bad section name",
	    "section without a name");
	check_reason("/buildid/ab/section/", 400, "bad section name",
	    "empty section name");
	/* "/" splits only once: "a/b" is one name, and "/" is not allowed. */
	check_reason("/buildid/ab/section/a/b", 400, "bad section name",
	    "section a/b");
	check_reason("/buildid/ab/section/a%2Fb", 400, "bad section name",
	    "section a%2Fb");
	check_reason("/buildid/ab/section/.text/", 400, "bad section name",
	    "section name with a trailing slash");
	check_reason("/buildid/ab/section/a%20b", 400, "bad section name",
	    "section name with a space");
	check_reason("/buildid/ab/section/a%09b", 400, "bad section name",
	    "section name with a TAB");
	check_reason("/buildid/ab/section/a%0Ab", 400, "bad section name",
	    "section name with LF");
	check_reason("/buildid/ab/section/%01", 400, "bad section name",
	    "section name with 0x01");
	check_reason("/buildid/ab/section/a%7F", 400, "bad section name",
	    "section name with DEL");
	check_reason("/buildid/ab/section/a%80", 400, "bad section name",
	    "section name with 0x80");
	check_reason("/buildid/ab/section/%C3%A9", 400, "bad section name",
	    "section name with UTF-8");

	memset(name, 'n', ROUTE_SECTION_MAX);
	name[ROUTE_SECTION_MAX] = '\0';
	snprintf(target, sizeof(target), "/buildid/ab/section/%s", name);
	check_route(target, ROUTE_SECTION, "ab", name, "255-byte section name");
	memset(name, 'n', ROUTE_SECTION_MAX + 1);
	name[ROUTE_SECTION_MAX + 1] = '\0';
	snprintf(target, sizeof(target), "/buildid/ab/section/%s", name);
	check_reason(target, 400, "bad section name", "256-byte section name");
	is_int(ROUTE_SECTION_MAX, 255, "the documented section limit");
}

static void
test_not_found(void)
{
	check_reason("/nothing/here", 404, "no such endpoint", "unknown path");
	check_refused("/buildid", 404, "/buildid alone");
	check_refused("/buildidx/ab/debuginfo", 404, "/buildidx");
	check_refused("/BUILDID/ab/debuginfo", 404, "/BUILDID");
	check_refused("//buildid/ab/debuginfo", 404, "//buildid");
	check_refused("/x/buildid/ab/debuginfo", 404, "/buildid not first");
}

/* A target of exactly len bytes: prefix, then filler up to len. */
static char *
long_target(const char *prefix, const char *filler, size_t len)
{
	size_t n = strlen(prefix), f = strlen(filler);
	char *s = malloc(len + 1);

	if (s == NULL) {
		perror("malloc");
		exit(1);
	}
	memcpy(s, prefix, n);
	while (n < len) {
		s[n] = filler[(n - strlen(prefix)) % f];
		n++;
	}
	s[len] = '\0';
	return s;
}

static void
test_lengths(void)
{
	char *s, *arg;
	const char *why;
	size_t n;

	s = long_target("/x", "a", TARGET_LIMIT);
	check_refused(s, 404, "8192-byte target is decoded");
	free(s);
	s = long_target("/x", "a", TARGET_LIMIT + 1);
	check_refused(s, 414, "8193-byte target");
	free(s);
	s = long_target("/buildid/ab/debuginfo/", "a", 3 * TARGET_LIMIT);
	check_refused(s, 414, "24576-byte target");
	free(s);
	/* Thousands of "./" resolve to a short path: only the target counts. */
	s = long_target("/buildid/ab/source/", "./", TARGET_LIMIT);
	check_route(s, ROUTE_SOURCE, "ab", "/", "8192-byte source of ./");
	free(s);

	/* The canonical path has a limit of its own. */
	s = long_target("/buildid/ab/source/", "a", 19 + ROUTE_PATH_MAX - 1);
	is_int(route(s, &why), 0, "4096-byte source path accepted");
	n = strlen(rt.arg);
	is_int(n, ROUTE_PATH_MAX, "4096-byte source path: length");
	ok(rt.arg[0] == '/' && strspn(rt.arg + 1, "a") == ROUTE_PATH_MAX - 1,
	    "4096-byte source path: bytes");
	free(s);
	s = long_target("/buildid/ab/source/", "a", 19 + ROUTE_PATH_MAX);
	check_refused(s, 414, "4097-byte source path");
	free(s);
	s = long_target("/buildid/ab/source/", "a/", 19 + ROUTE_PATH_MAX + 104);
	check_refused(s, 414, "long source path of short segments");
	free(s);
	s = long_target("/metadata?", "a", 10 + ROUTE_PATH_MAX + 1);
	check_refused(s, 414, "4097-byte metadata query");
	free(s);
	/* Long before canonicalisation, short after: accepted. */
	arg = long_target("/buildid/ab/source/", "b/../", 6000);
	is_int(route(arg, &why), 0, "6000-byte target, short source path");
	ok(strlen(rt.arg) < 8, "6000-byte target: short canonical path");
	free(arg);
}

/* route_encode's output decodes back to its input; what it keeps. */
static void
test_encode(void)
{
	static const char in[] = "/usr/src/a b/c%d?e#f&g=h+i\x01\xff~x";
	char out[128], back[128], small[8];
	const char *why;
	long n;

	is_int(route_encode(in, ROUTE_ENC_PATH, out, sizeof(out)), 0,
	    "encode a path");
	is_str(out, "/usr/src/a%20b/c%25d%3Fe%23f&g=h+i%01%FF~x",
	    "a path keeps printable bytes but % ? # and space");
	n = route_decode(out, strlen(out), back, 0, &why);
	ok(n == (long)strlen(in) && memcmp(back, in, (size_t)n) == 0,
	    "... and decodes back to itself");
	is_int(route_encode(in, ROUTE_ENC_QUERY, out, sizeof(out)), 0,
	    "encode a query value");
	is_str(out, "/usr/src/a%20b/c%25d%3Fe%23f%26g%3Dh%2Bi%01%FF~x",
	    "a query value keeps letters, digits, -._~ and /");
	n = route_decode(out, strlen(out), back, 1, &why);
	ok(n == (long)strlen(in) && memcmp(back, in, (size_t)n) == 0,
	    "... and decodes back to itself as a form");
	is_int(route_encode("abcdefg", ROUTE_ENC_PATH, small, sizeof(small)), 0,
	    "seven bytes and a NUL fit in eight");
	is_int(route_encode("abcdefgh", ROUTE_ENC_PATH, small, sizeof(small)),
	    -1, "eight do not");
	is_int(route_encode("abcde f", ROUTE_ENC_PATH, small, sizeof(small)),
	    -1, "nor an escape that would end past the buffer");
}

int
main(void)
{
	test_endpoints();
	test_buildids();
	test_types();
	test_query_and_absolute_form();
	test_percent_decoding();
	test_dot_dot();
	test_source_paths();
	test_section_names();
	test_not_found();
	test_lengths();
	test_encode();
	return tap_done();
}
