/*
 * tests/unit/test_access.c: the access rules (daemon/access.c): rule and
 * CIDR parsing, who the client is behind trusted proxies, token hashing,
 * token lines and scopes, reloads that fail closed (the failsafe set of
 * a file that did not load included), the admin-token,
 * subject= bound to a CA, when a denial is 401 or 403, and what the audit
 * says of weakened defaults.
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

/* What was said about dropped lines or weakened defaults, joined. */
static char said[4096];
static unsigned nsaid;

static void
say(void *arg, const char *msg)
{
	(void)arg;
	nsaid++;
	snprintf(said + strlen(said), sizeof(said) - strlen(said), "%s\n", msg);
}

static void
said_clear(void)
{
	said[0] = '\0';
	nsaid = 0;
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
	said_clear();
	return access_new(cfg, say, NULL, err, errlen);
}

static enum access_verdict
check_ca(struct access *a, enum access_class cls, const char *peer,
    const char *xff, const char *auth, const char *subject, const char *ca)
{
	struct access_who w = { peer, sl(xff), sl(auth), subject, ca };
	const char *why = NULL;

	return access_check(a, cls, &w, &why);
}

static enum access_verdict
check(struct access *a, enum access_class cls, const char *peer,
    const char *xff, const char *auth, const char *subject)
{
	return check_ca(a, cls, peer, xff, auth, subject,
	    subject[0] != '\0' ? "/ca.pem" : NULL);
}

/*
 * What SIGHUP does with cfg's access settings (daemon/reload.c): a new
 * set in *a, or the failsafe one when none can be made (-1, err).
 */
static int
reload(struct access **a, const struct config *cfg, char *err, size_t errlen)
{
	access_free(*a);
	if ((*a = access_new(cfg, say, NULL, err, errlen)) != NULL)
		return 0;
	*a = access_new_failsafe(cfg, 0, say, NULL);
	return -1;
}

/* Write text to path, replacing it. */
static void
put(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	if (fp != NULL) {
		fputs(text, fp);
		fclose(fp);
	}
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

	/*
	 * Reload fails closed: a line removed in the same edit that breaks
	 * another line is gone; the broken line is dropped and said with
	 * its file and line; the good ones are taken.
	 */
	fp = fopen(path, "w");
	access_token_hash("n-token", 7, hex);
	fprintf(fp, "nothex read x\n%s read new\n", hex);
	access_token_hash("u-token", 7, hex);
	fprintf(fp, "%s read,uplaod typo\n", hex);
	fclose(fp);
	said_clear();
	is_int(reload(&a, &cfg, err, sizeof(err)), 0,
	    "a token file with bad lines reloads");
	is_int(check(a, ACCESS_READ, "192.0.2.1", NULL, "Bearer r-token", ""),
	    ACCESS_UNAUTHORIZED, "... a token removed in that edit: 401");
	is_int(check(a, ACCESS_READ, "192.0.2.1", NULL, "Bearer n-token", ""),
	    ACCESS_ALLOW, "... a good new line is taken");
	is_int(check(a, ACCESS_READ, "192.0.2.1", NULL, "Bearer u-token", ""),
	    ACCESS_UNAUTHORIZED, "... a line with an unknown scope is not");
	is_int(nsaid, 2, "... both bad lines are said");
	snprintf(err, sizeof(err), "%s:1: expected the SHA-256", path);
	ok(strstr(said, err) != NULL, "... with the file and line (FILE:1)");
	snprintf(err, sizeof(err), "%s:3: \"uplaod\" is not a scope", path);
	ok(strstr(said, err) != NULL, "... and why (FILE:3: unknown scope)");

	unlink(path);
	said_clear();
	ok(reload(&a, &cfg, err, sizeof(err)) == -1 &&
		strstr(err, "No such file") != NULL,
	    "a token file that cannot be read fails the reload");
	is_int(check(a, ACCESS_READ, "192.0.2.1", NULL, "Bearer n-token", ""),
	    ACCESS_UNAUTHORIZED, "... and leaves no token valid");
	put(path, "");
	is_int(reload(&a, &cfg, err, sizeof(err)), 0, "an empty file loads");
	is_int(check(a, ACCESS_READ, "192.0.2.1", NULL, "Bearer n-token", ""),
	    ACCESS_UNAUTHORIZED, "... and knows no token");
	access_free(a);
	config_free(&cfg);

	/* At start-up the same rule: the good lines, the bad ones said. */
	access_token_hash("r-token", 7, hex);
	fp = fopen(path, "w");
	fprintf(fp, "%s read,uplaod typo\n%s read reader\n", hex, hex);
	fclose(fp);
	a = make(&cfg, lines, NULL, path, err, sizeof(err));
	ok(a != NULL && nsaid == 1, "a start with a bad line drops it alone");
	if (a != NULL)
		is_int(check(a, ACCESS_READ, "192.0.2.1", NULL,
			   "Bearer r-token", ""),
		    ACCESS_ALLOW, "... and takes the good ones");
	access_free(a);
	config_free(&cfg);
	unlink(path);
}

static void
test_token_lines(void)
{
	static const struct {
		const char *line;
		int rc;
		unsigned scopes;
	} cases[] = {
		{ "", 0, 0 },
		{ "   # a comment", 0, 0 },
		{ "\n", 0, 0 },
		{ "HASH read name", 1, 1u << ACCESS_READ },
		{ "HASH read,upload", 1,
		    1u << ACCESS_READ | 1u << ACCESS_UPLOAD },
		{ "  HASH\tall  ci # note", 1, (1u << ACCESS_NCLASSES) - 1 },
		{ "HASH read#comment", 1, 1u << ACCESS_READ },
		{ "HASH", -1, 0 },
		{ "HASH read,uplaod name", -1, 0 },
		{ "HASH read,,upload", -1, 0 },
		{ "HASH read,", -1, 0 },
		{ "HASH READ", -1, 0 },
		{ "ABC read", -1, 0 },
		{ "HASHa read", -1, 0 },
	};
	char hex[65], line[256], hash[65], why[256], what[300];
	unsigned scopes;
	size_t i;
	char *p;
	int rc;

	access_token_hash("t", 1, hex);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(line, sizeof(line), "%s", cases[i].line);
		if ((p = strstr(line, "HASH")) != NULL) {
			memmove(p + 64, p + 4, strlen(p + 4) + 1);
			memcpy(p, hex, 64);
		}
		scopes = 0;
		why[0] = '\0';
		rc = access_token_line(line, hash, &scopes, why, sizeof(why));
		snprintf(what, sizeof(what), "token line %zu: %d", i,
		    cases[i].rc);
		is_int(rc, cases[i].rc, what);
		if (rc == 1)
			ok(scopes == cases[i].scopes && strcmp(hash, hex) == 0,
			    "... its hash and scopes");
		if (rc == -1)
			ok(why[0] != '\0', "... says why");
	}
	ok(access_scopes_parse("read,uplaod", &scopes, why, sizeof(why)) ==
		    -1 &&
		strstr(why, "\"uplaod\"") != NULL,
	    "a scope list names its unknown word");
}

static void
test_admin_token(void)
{
	static const char *const lines[] = { "admin addr=10.0.0.0/8", NULL };
	char path[] = "/tmp/test_access.XXXXXX",
	     tpath[] = "/tmp/test_access.XXXXXX", hex[65], err[256];
	struct config cfg;
	struct access *a;
	FILE *fp;
	int fd;

	if ((fd = mkstemp(path)) == -1 || (fp = fdopen(fd, "w")) == NULL) {
		ok(0, "an admin-token file");
		return;
	}
	fputs("  s3cret \n", fp);
	fclose(fp);
	if ((fd = mkstemp(tpath)) == -1 || (fp = fdopen(fd, "w")) == NULL) {
		ok(0, "a token file");
		return;
	}
	access_token_hash("adm", 3, hex);
	fprintf(fp, "%s admin ops\n", hex);
	access_token_hash("rd", 2, hex);
	fprintf(fp, "%s read ci\n", hex);
	fclose(fp);

	/* Without access = admin lines: admin-access and the token. */
	config_init(&cfg);
	config_set(&cfg, "admin-token", path, "test", NULL);
	said_clear();
	a = access_new(&cfg, say, NULL, err, sizeof(err));
	if (!ok(a != NULL, "an admin-token loads")) {
		config_free(&cfg);
		return;
	}
	/*
	 * The admin-token is kept as its SHA-256 in the token table, so it
	 * is compared as every token is: a fixed-size digest, in constant
	 * time, whatever the lengths.
	 */
	access_token_hash("s3cret", 6, hex);
	ok(a->ntokens == 1 && strcmp(a->tokens[0].hash, hex) == 0 &&
		a->tokens[0].scopes == 1u << ACCESS_ADMIN,
	    "the admin-token is kept as its SHA-256, with the admin scope");
	is_int(check(a, ACCESS_ADMIN, "127.0.0.1", NULL, NULL, ""),
	    ACCESS_UNAUTHORIZED, "admin without the token: 401");
	is_int(check(a, ACCESS_ADMIN, "127.0.0.1", NULL, "Bearer s3cre", ""),
	    ACCESS_UNAUTHORIZED, "... a prefix of it: 401");
	is_int(check(a, ACCESS_ADMIN, "127.0.0.1", NULL, "Bearer s3cret", ""),
	    ACCESS_ALLOW, "... with it (blanks around it in the file): 200");
	is_int(check(a, ACCESS_ADMIN, "192.0.2.1", NULL, "Bearer s3cret", ""),
	    ACCESS_FORBIDDEN, "... not from loopback (admin-access): 403");
	is_int(check(a, ACCESS_READ, "192.0.2.1", NULL, "Bearer s3cret", ""),
	    ACCESS_ALLOW, "the admin-token does not close read");
	put(path, "\n");
	ok(reload(&a, &cfg, err, sizeof(err)) == -1 &&
		strstr(err, "no token") != NULL,
	    "an admin-token emptied fails the reload");
	is_int(check(a, ACCESS_ADMIN, "127.0.0.1", NULL, "Bearer s3cret", ""),
	    ACCESS_UNAUTHORIZED, "... and the old token is not valid");
	put(path, "n3w\n");
	is_int(reload(&a, &cfg, err, sizeof(err)), 0,
	    "a new admin-token reloads");
	is_int(check(a, ACCESS_ADMIN, "127.0.0.1", NULL, "Bearer n3w", ""),
	    ACCESS_ALLOW, "... and is valid");
	access_free(a);
	config_free(&cfg);

	/* access = admin lines with admin-token: both apply. */
	a = make(&cfg, lines, NULL, tpath, err, sizeof(err));
	access_free(a);
	config_set(&cfg, "admin-token", path, "test", NULL);
	a = access_new(&cfg, say, NULL, err, sizeof(err));
	if (!ok(a != NULL, "admin lines with an admin-token")) {
		config_free(&cfg);
		return;
	}
	is_int(check(a, ACCESS_ADMIN, "10.1.1.1", NULL, NULL, ""),
	    ACCESS_UNAUTHORIZED,
	    "the line's address without a token: 401, admin-token holds");
	is_int(check(a, ACCESS_ADMIN, "10.1.1.1", NULL, "Bearer n3w", ""),
	    ACCESS_ALLOW, "... with the admin-token: allowed");
	is_int(check(a, ACCESS_ADMIN, "10.1.1.1", NULL, "Bearer adm", ""),
	    ACCESS_ALLOW, "... with a token-file token of the admin scope");
	is_int(check(a, ACCESS_ADMIN, "10.1.1.1", NULL, "Bearer rd", ""),
	    ACCESS_FORBIDDEN, "... one without the admin scope: 403");
	is_int(check(a, ACCESS_ADMIN, "127.0.0.1", NULL, "Bearer n3w", ""),
	    ACCESS_FORBIDDEN, "the lines replace admin-access (loopback)");
	said_clear();
	access_audit(a, &cfg, say, NULL);
	ok(strstr(said,
	       "access = admin addr=10.0.0.0/8 (test) and the other "
	       "access = admin lines override admin-access = "
	       "loopback") != NULL &&
		strstr(said, "admin-token still applies") != NULL,
	    "the audit says the lines override admin-access, by which line, "
	    "and that admin-token still applies");
	access_free(a);
	config_free(&cfg);
	unlink(path);
	unlink(tpath);
}

static void
test_audit(void)
{
	static const char *const open_admin[] = { "admin any",
		"read subject=CN=x", NULL };
	struct config cfg;
	struct access *a;
	char err[256];

	a = make(&cfg, NULL, NULL, NULL, err, sizeof(err));
	said_clear();
	is_int(access_audit(a, &cfg, say, NULL), 0,
	    "the defaults weaken nothing");
	access_free(a);
	config_free(&cfg);

	a = make(&cfg, open_admin, "0.0.0.0/0", NULL, err, sizeof(err));
	if (!ok(a != NULL, "an admin line open to all"))
		return;
	said_clear();
	access_audit(a, &cfg, say, NULL);
	ok(strstr(said,
	       "access = admin any (test) opens the admin "
	       "endpoints") != NULL,
	    "the audit says access = admin any opens the admin endpoints");
	ok(strstr(said, "trusted-proxy = 0.0.0.0/0 (test)") != NULL,
	    "... and that trusted-proxy 0.0.0.0/0 lets clients choose");
	ok(strstr(said, "no listen line has client-ca=") != NULL,
	    "... and that a subject= rule cannot hold without a client-ca");
	access_free(a);
	config_free(&cfg);

	config_init(&cfg);
	config_set(&cfg, "admin-access", "any", "f.conf:3", NULL);
	said_clear();
	a = access_new(&cfg, say, NULL, err, sizeof(err));
	access_audit(a, &cfg, say, NULL);
	ok(strstr(said, "admin-access = any (f.conf:3) without admin-token") !=
		NULL,
	    "... and admin-access = any without a token");
	access_free(a);
	config_free(&cfg);
}

static void
test_ca_binding(void)
{
	static const char *const bound[] = {
		"read subject=CN=ci,O=Example+ca=/a/ca.pem",
		"status ca=/b/ca.pem", NULL
	};
	static const char *const loose[] = { "read subject=CN=ci,O=Example",
		NULL };
	struct config cfg;
	struct access *a;
	char err[512];

	/* Two listeners verifying with different CAs. */
	config_init(&cfg);
	config_set(&cfg, "listen",
	    "127.0.0.1:0 tls cert=/c.pem key=/c.key client-ca=/a/ca.pem",
	    "test", NULL);
	config_set(&cfg, "listen",
	    "127.0.0.1:0 tls cert=/c.pem key=/c.key client-ca=/b/ca.pem",
	    "test", NULL);
	for (const char *const *l = bound; *l != NULL; l++)
		config_set(&cfg, "access", *l, "test", NULL);
	a = access_new(&cfg, say, NULL, err, sizeof(err));
	if (ok(a != NULL, "subject= bound to a CA with +ca=")) {
		is_int(check_ca(a, ACCESS_READ, "1.2.3.4", NULL, NULL,
			   "CN=ci,O=Example", "/a/ca.pem"),
		    ACCESS_ALLOW, "the DN verified by that CA: allowed");
		is_int(check_ca(a, ACCESS_READ, "1.2.3.4", NULL, NULL,
			   "CN=ci,O=Example", "/b/ca.pem"),
		    ACCESS_FORBIDDEN, "the same DN from the other CA: 403");
		is_int(check_ca(a, ACCESS_STATUS, "1.2.3.4", NULL, NULL,
			   "CN=anyone", "/b/ca.pem"),
		    ACCESS_ALLOW, "ca= alone: any certificate of that CA");
		is_int(check_ca(a, ACCESS_STATUS, "1.2.3.4", NULL, NULL, "",
			   "/b/ca.pem"),
		    ACCESS_FORBIDDEN, "... but a certificate it is");
		access_free(a);
	}
	config_free(&cfg);

	config_init(&cfg);
	config_set(&cfg, "listen",
	    "127.0.0.1:0 tls cert=/c.pem key=/c.key client-ca=/a/ca.pem",
	    "test", NULL);
	config_set(&cfg, "listen",
	    "127.0.0.1:0 tls cert=/c.pem key=/c.key client-ca=/b/ca.pem",
	    "test", NULL);
	config_set(&cfg, "access", loose[0], "f.conf:7", NULL);
	err[0] = '\0';
	a = access_new(&cfg, say, NULL, err, sizeof(err));
	ok(a == NULL &&
		strstr(err,
		    "f.conf:7: access read: a subject= rule "
		    "without ca=") != NULL,
	    "subject= without ca= and two CAs is refused, naming the line");
	access_free(a);
	config_free(&cfg);

	config_init(&cfg);
	config_set(&cfg, "listen",
	    "127.0.0.1:0 tls cert=/c.pem key=/c.key client-ca=/a/ca.pem",
	    "test", NULL);
	config_set(&cfg, "access", "status ca=/c/ca.pem", "f.conf:8", NULL);
	a = access_new(&cfg, say, NULL, err, sizeof(err));
	ok(a == NULL &&
		strstr(err, "no listen line has this client-ca") != NULL,
	    "a ca= no listener verifies with is refused");
	access_free(a);
	config_set(&cfg, "access", "none", "test", NULL);
	config_set(&cfg, "access", loose[0], "test", NULL);
	a = access_new(&cfg, say, NULL, err, sizeof(err));
	if (ok(a != NULL, "subject= alone with one CA keeps its meaning"))
		is_int(check_ca(a, ACCESS_READ, "1.2.3.4", NULL, NULL,
			   "CN=ci,O=Example", "/a/ca.pem"),
		    ACCESS_ALLOW, "... that CA's certificate is allowed");
	access_free(a);
	config_free(&cfg);
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

/*
 * A file that did not load: what parses applies, a class whose line does
 * not parse denies everyone, and nothing of before is kept.
 */
static void
test_failsafe(void)
{
	static const char *const lines[] = { "read addr=10.0.0.0/8",
		"metrics addr=bogus", NULL };
	static const char *const typo[] = { "raed addr=10.0.0.0/8", NULL };
	struct config cfg;
	struct access *a;
	char err[512];

	a = make(&cfg, lines, NULL, NULL, err, sizeof(err));
	ok(a == NULL, "a bad access line: no set at start-up");
	said_clear();
	a = access_new_failsafe(&cfg, 0, say, NULL);
	if (!ok(a != NULL, "the failsafe set of the same lines")) {
		config_free(&cfg);
		return;
	}
	is_int(access_closed(a), 1u << ACCESS_METRICS,
	    "... closes the class of the bad line alone");
	is_int(check(a, ACCESS_METRICS, "127.0.0.1", NULL, NULL, ""),
	    ACCESS_FORBIDDEN, "... which denies everyone (403)");
	is_int(check(a, ACCESS_READ, "10.1.2.3", NULL, NULL, ""), ACCESS_ALLOW,
	    "... a good line applies");
	is_int(check(a, ACCESS_READ, "192.0.2.1", NULL, NULL, ""),
	    ACCESS_FORBIDDEN, "... and lets in no one else");
	is_int(check(a, ACCESS_STATUS, "192.0.2.1", NULL, NULL, ""),
	    ACCESS_ALLOW, "... a class without lines keeps its default");
	ok(strstr(said, "bogus") != NULL &&
		strstr(said, "access metrics is denied") != NULL,
	    "... the bad line is said, and what it closes");
	access_free(a);
	config_free(&cfg);

	a = make(&cfg, typo, NULL, NULL, err, sizeof(err));
	a = access_new_failsafe(&cfg, 0, say, NULL);
	ok(a != NULL && access_closed(a) == ACCESS_ALL,
	    "a line whose class is unknown closes every class");
	if (a != NULL)
		is_int(check(a, ACCESS_READ, "10.1.2.3", NULL, NULL, ""),
		    ACCESS_FORBIDDEN, "... read included");
	access_free(a);
	config_free(&cfg);

	a = make(&cfg, NULL, "not-a-cidr", NULL, err, sizeof(err));
	ok(a == NULL, "a bad trusted-proxy: no set at start-up");
	a = access_new_failsafe(&cfg, 0, say, NULL);
	ok(a != NULL && access_closed(a) == ACCESS_ALL,
	    "... the failsafe one closes every class");
	access_free(a);
	config_free(&cfg);

	config_init(&cfg);
	a = access_new_failsafe(&cfg, 1u << ACCESS_ADMIN, say, NULL);
	ok(a != NULL && access_closed(a) == 1u << ACCESS_ADMIN &&
		check(a, ACCESS_ADMIN, "127.0.0.1", NULL, NULL, "") ==
		    ACCESS_FORBIDDEN &&
		check(a, ACCESS_READ, "192.0.2.1", NULL, NULL, "") ==
		    ACCESS_ALLOW,
	    "the classes the caller closes deny everyone, the others not");
	access_free(a);
	config_free(&cfg);
}

int
main(void)
{
	test_cidr();
	test_proxies();
	test_tokens();
	test_token_lines();
	test_admin_token();
	test_audit();
	test_ca_binding();
	test_subjects_and_errors();
	test_failsafe();
	return tap_done();
}
