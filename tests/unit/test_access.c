/*
 * tests/unit/test_access.c: the access rules (daemon/access.c): rule and
 * CIDR parsing, who the client is behind trusted proxies, token hashing
 * and scopes, and when a denial is 401 or 403.
 */
#include "daemon/access.c"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/tap.h"

static struct slice
sl(const char *s)
{
	struct slice r = { s, s != NULL ? strlen(s) : 0 };

	return r;
}

/* An access object from rule lines, proxies and a token file. */
static struct access *
make(struct config *cfg, const char *const *lines, const char *proxy,
    const char *tokens, char *err, size_t errlen)
{
	config_init(cfg);
	for (; lines != NULL && *lines != NULL; lines++)
		config_set(cfg, "access", *lines, "test", NULL);
	if (proxy != NULL)
		config_set(cfg, "trusted-proxy", proxy, "test", NULL);
	if (tokens != NULL)
		config_set(cfg, "token-file", tokens, "test", NULL);
	return access_new(cfg, err, errlen);
}

static enum access_verdict
check(struct access *a, enum access_class cls, const char *peer,
    const char *xff, const char *auth, const char *subject)
{
	struct access_who w = { peer, sl(xff), sl(auth), subject };
	const char *why = NULL;

	return access_check(a, cls, &w, &why);
}

static void
test_cidr(void)
{
	struct cidr net, a;

	ok(cidr_parse("10.0.0.0/8", 10, &net) == 0, "10.0.0.0/8 parses");
	ok(cidr_parse("10.200.3.4", 10, &a) == 0 && cidr_match(&net, &a),
	    "10.200.3.4 is in it");
	ok(cidr_parse("11.0.0.1", 8, &a) == 0 && !cidr_match(&net, &a),
	    "11.0.0.1 is not");
	ok(cidr_parse("192.168.1.0/23", 14, &net) == 0, "a /23");
	ok(cidr_parse("192.168.0.255", 13, &a) == 0 && cidr_match(&net, &a),
	    "192.168.0.255 is in 192.168.1.0/23's network bits");
	ok(cidr_parse("192.168.2.0", 11, &a) == 0 && !cidr_match(&net, &a),
	    "192.168.2.0 is not");
	ok(cidr_parse("::1", 3, &net) == 0 && net.bits == 128, "::1 is /128");
	ok(cidr_parse("127.0.0.1", 9, &a) == 0 && !cidr_match(&net, &a),
	    "IPv4 never matches IPv6");
	ok(cidr_parse("10.0.0.0/33", 11, &net) == -1, "/33 is refused");
	ok(cidr_parse("10.0.0.0/", 9, &net) == -1, "an empty length is");
	ok(cidr_parse("host", 4, &net) == -1, "a name is");
}

static void
test_proxies(void)
{
	static const char *const lines[] = { "read addr=10.1.0.0/16", NULL };
	struct config cfg;
	struct access *a;
	char err[256];

	a = make(&cfg, lines, "127.0.0.0/8", NULL, err, sizeof(err));
	if (!ok(a != NULL, "rules with a trusted proxy"))
		return;
	is_int(check(a, ACCESS_READ, "127.0.0.1", NULL, NULL, ""),
	    ACCESS_FORBIDDEN, "the proxy itself is not allowed");
	is_int(check(a, ACCESS_READ, "127.0.0.1", "10.1.2.3", NULL, ""),
	    ACCESS_ALLOW, "its X-Forwarded-For names the client");
	is_int(check(a, ACCESS_READ, "127.0.0.1", " 10.1.2.3 , 127.0.0.9 ",
		   NULL, ""),
	    ACCESS_ALLOW, "trusted proxies on the right are skipped");
	is_int(check(a, ACCESS_READ, "127.0.0.1", "10.1.2.3, 192.0.2.1", NULL,
		   ""),
	    ACCESS_FORBIDDEN, "the rightmost untrusted entry counts");
	is_int(check(a, ACCESS_READ, "127.0.0.1", "10.1.2.3/8", NULL, ""),
	    ACCESS_FORBIDDEN, "a CIDR in the header is no address");
	is_int(check(a, ACCESS_READ, "127.0.0.1", ",", NULL, ""),
	    ACCESS_FORBIDDEN, "an empty entry is no address");
	is_int(check(a, ACCESS_READ, "192.0.2.1", "10.1.2.3", NULL, ""),
	    ACCESS_FORBIDDEN, "from an untrusted peer the header is ignored");
	access_free(a);
	config_free(&cfg);
}

static void
test_tokens(void)
{
	static const char *const lines[] = { "read token addr=10.0.0.0/8",
		"metrics token+addr=127.0.0.1", "upload any", NULL };
	char path[] = "/tmp/test_access.XXXXXX", hex[65], err[256];
	struct config cfg;
	struct access *a;
	FILE *fp;
	int fd;

	ok(access_token_hash("abc", 3, hex) == 0 &&
		strcmp(hex,
		    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff6"
		    "1f20015ad") == 0,
	    "the hash is SHA-256 in lowercase hex");
	if ((fd = mkstemp(path)) == -1 || (fp = fdopen(fd, "w")) == NULL) {
		ok(0, "a token file");
		return;
	}
	access_token_hash("r-token", 7, hex);
	fprintf(fp, "# comment\n%s read reader\n", hex);
	access_token_hash("m-token", 7, hex);
	fprintf(fp, "%s metrics,upload   ci  # note\n\n", hex);
	fclose(fp);
	a = make(&cfg, lines, NULL, path, err, sizeof(err));
	if (!ok(a != NULL, "rules and tokens load")) {
		printf("# %s\n", err);
		unlink(path);
		return;
	}
	is_int(check(a, ACCESS_READ, "192.0.2.1", NULL, NULL, ""),
	    ACCESS_UNAUTHORIZED, "no token where one could help: 401");
	is_int(check(a, ACCESS_READ, "192.0.2.1", NULL, "Bearer x", ""),
	    ACCESS_UNAUTHORIZED, "a bad token: 401");
	is_int(check(a, ACCESS_READ, "192.0.2.1", NULL, "Basic eDp5", ""),
	    ACCESS_UNAUTHORIZED, "not a bearer: 401");
	is_int(check(a, ACCESS_READ, "192.0.2.1", NULL, "bearer r-token", ""),
	    ACCESS_ALLOW, "the read token (the scheme in any case)");
	is_int(check(a, ACCESS_READ, "192.0.2.1", NULL, "Bearer m-token", ""),
	    ACCESS_FORBIDDEN, "a token without the scope: 403");
	is_int(check(a, ACCESS_READ, "10.9.9.9", NULL, NULL, ""), ACCESS_ALLOW,
	    "the address alone");
	is_int(check(a, ACCESS_METRICS, "127.0.0.1", NULL, "Bearer m-token",
		   ""),
	    ACCESS_ALLOW, "token+addr: both hold");
	is_int(check(a, ACCESS_METRICS, "127.0.0.2", NULL, "Bearer m-token",
		   ""),
	    ACCESS_FORBIDDEN, "token+addr: one fails");
	is_int(check(a, ACCESS_UPLOAD, "127.0.0.1", NULL, NULL, ""),
	    ACCESS_UNAUTHORIZED, "upload any still needs a token");
	is_int(check(a, ACCESS_UPLOAD, "127.0.0.1", NULL, "Bearer r-token", ""),
	    ACCESS_FORBIDDEN, "... with the upload scope");
	is_int(check(a, ACCESS_UPLOAD, "127.0.0.1", NULL, "Bearer m-token", ""),
	    ACCESS_ALLOW, "... which it has");
	is_int(check(a, ACCESS_STATUS, "127.0.0.1", NULL, NULL, ""),
	    ACCESS_ALLOW, "a class without lines keeps metrics-access (any)");

	/* Reload: a damaged file keeps the old tokens. */
	fp = fopen(path, "w");
	fprintf(fp, "nothex read x\n");
	fclose(fp);
	ok(access_reload(a, err, sizeof(err)) == -1 &&
		strstr(err, "64 lowercase hex") != NULL,
	    "a damaged token file is refused on reload");
	is_int(check(a, ACCESS_READ, "192.0.2.1", NULL, "Bearer r-token", ""),
	    ACCESS_ALLOW, "... and the old tokens stay");
	fp = fopen(path, "w");
	fclose(fp);
	is_int(access_reload(a, err, sizeof(err)), 0, "an empty file loads");
	is_int(check(a, ACCESS_READ, "192.0.2.1", NULL, "Bearer r-token", ""),
	    ACCESS_UNAUTHORIZED, "... and knows no token");
	access_free(a);
	config_free(&cfg);
	unlink(path);
}

static void
test_subjects_and_errors(void)
{
	static const char *const lines[] = { "status subject=CN=ci,O=Example",
		NULL };
	static const char *const bad[][2] = {
		{ "reed any", "the class is read" },
		{ "read", "no rule" },
		{ "read addr=10.0.0.0/33", "addr= needs" },
		{ "read tokens", "a rule is any" },
		{ "read any+any+any+any+any", "more than 4" },
	};
	struct config cfg;
	struct access *a;
	char err[256];
	size_t i;

	a = make(&cfg, lines, NULL, NULL, err, sizeof(err));
	if (ok(a != NULL, "a subject rule")) {
		is_int(check(a, ACCESS_STATUS, "1.2.3.4", NULL, NULL,
			   "CN=ci,O=Example"),
		    ACCESS_ALLOW, "the subject matches");
		is_int(check(a, ACCESS_STATUS, "1.2.3.4", NULL, NULL,
			   "CN=dev,O=Example"),
		    ACCESS_FORBIDDEN, "another subject: 403");
		is_int(check(a, ACCESS_STATUS, "1.2.3.4", NULL, NULL, ""),
		    ACCESS_FORBIDDEN, "no certificate: 403");
		access_free(a);
	}
	config_free(&cfg);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *one[] = { bad[i][0], NULL };

		err[0] = '\0';
		a = make(&cfg, one, NULL, NULL, err, sizeof(err));
		ok(a == NULL && strstr(err, bad[i][1]) != NULL, bad[i][0]);
		access_free(a);
		config_free(&cfg);
	}
}

int
main(void)
{
	test_cidr();
	test_proxies();
	test_tokens();
	test_subjects_and_errors();
	return tap_done();
}
