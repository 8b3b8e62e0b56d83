/*
 * daemon/access.c: access rules per endpoint class, bearer tokens.
 *
 * The rules are parsed once at start-up and never change; the token
 * table (token-file's lines and the admin-token) is read at start-up and
 * on SIGHUP and swapped under a read-write lock (checks hold it for
 * reading for a few comparisons).  A reload never keeps an old token: a
 * line that does not parse is dropped and said, with its file and line; a
 * file that cannot be read leaves none of its tokens valid.
 *
 * The client address of addr= rules is the socket peer, except when the
 * peer is a trusted proxy: then it is the rightmost X-Forwarded-For entry
 * that is not itself a trusted proxy (entries left of it were written by
 * whoever the client is, so they prove nothing).  An entry that is not an
 * address matches no addr= rule.
 */
#include "daemon/access.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "conf/config.h"

#define CONDS_MAX 4 /* conditions of one rule */
#define TOKEN_LINE_MAX 1024

static const char *const class_names[ACCESS_NCLASSES] = { "read", "metadata",
	"metrics", "status", "admin", "upload", "symbolicate" };

struct cidr {
	int family; /* AF_INET or AF_INET6 */
	unsigned char addr[16];
	unsigned bits;
};

enum cond_kind { COND_ANY, COND_ADDR, COND_TOKEN, COND_SUBJECT, COND_CA };

struct cond {
	enum cond_kind kind;
	struct cidr net; /* COND_ADDR */
	char *text; /* COND_SUBJECT: the DN; COND_CA: the absolute path */
};

/* All of its conditions must hold. */
struct rule {
	struct cond conds[CONDS_MAX];
	size_t n;
	size_t line; /* its access line: an index of cfg->access */
};

struct ruleset {
	struct rule *v;
	size_t n;
	int set; /* lines (or a default) exist for the class */
};

struct token {
	char hash[65]; /* SHA-256 hex */
	unsigned scopes; /* 1 << class */
};

struct access {
	struct ruleset classes[ACCESS_NCLASSES];
	unsigned closed; /* classes denied to all (access_new_failsafe) */
	struct cidr *proxies;
	size_t nproxies;
	int admin_access; /* enum config_admin: admin without lines */
	char *token_file; /* NULL: no tokens */
	char *admin_file; /* admin-token; NULL: admin needs no token */
	struct token *tokens; /* token-file's, then the admin-token */
	size_t ntokens;
};

const char *
access_class_name(enum access_class cls)
{
	return (unsigned)cls < ACCESS_NCLASSES ? class_names[cls] : "?";
}

/* ---------------------------------------------------------- addresses */

/* "ADDR" or "ADDR/BITS"; 0, or -1 when it is not one. */
static int
cidr_parse(const char *s, size_t len, struct cidr *c)
{
	char buf[INET6_ADDRSTRLEN + 8], *slash, *end;
	unsigned long bits;

	if (len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	memset(c, 0, sizeof(*c));
	if ((slash = strchr(buf, '/')) != NULL)
		*slash = '\0';
	if (inet_pton(AF_INET, buf, c->addr) == 1) {
		c->family = AF_INET;
		c->bits = 32;
	} else if (inet_pton(AF_INET6, buf, c->addr) == 1) {
		c->family = AF_INET6;
		c->bits = 128;
	} else {
		return -1;
	}
	if (slash != NULL) {
		errno = 0;
		bits = strtoul(slash + 1, &end, 10);
		if (slash[1] < '0' || slash[1] > '9' || *end != '\0' ||
		    bits > c->bits)
			return -1;
		c->bits = (unsigned)bits;
	}
	return 0;
}

static int
cidr_match(const struct cidr *net, const struct cidr *a)
{
	unsigned full = net->bits / 8, rest = net->bits % 8;
	unsigned char mask;

	if (net->family != a->family || memcmp(net->addr, a->addr, full) != 0)
		return 0;
	if (rest == 0)
		return 1;
	mask = (unsigned char)(0xff << (8 - rest));
	return (net->addr[full] & mask) == (a->addr[full] & mask);
}

static int
is_proxy(const struct access *a, const struct cidr *addr)
{
	size_t i;

	for (i = 0; i < a->nproxies; i++)
		if (cidr_match(&a->proxies[i], addr))
			return 1;
	return 0;
}

/*
 * The client's address (see the top of the file) into *out: 0, or -1 when
 * it is not an address.
 */
static int
client_addr(const struct access *a, const struct access_who *who,
    struct cidr *out)
{
	const char *p, *end, *start, *begin;
	size_t n;

	if (cidr_parse(who->peer, strlen(who->peer), out) == -1)
		return -1;
	if (!is_proxy(a, out) || who->forwarded_for.p == NULL)
		return 0;
	p = who->forwarded_for.p;
	end = p + who->forwarded_for.n;
	for (;;) {
		begin = end;
		while (begin > p && begin[-1] != ',')
			begin--;
		start = begin;
		n = (size_t)(end - start);
		while (n > 0 && (*start == ' ' || *start == '\t')) {
			start++;
			n--;
		}
		while (n > 0 && (start[n - 1] == ' ' || start[n - 1] == '\t'))
			n--;
		if (memchr(start, '/', n) != NULL ||
		    cidr_parse(start, n, out) == -1)
			return -1;
		/* Proxies all the way: the leftmost one stands for the client. */
		if (!is_proxy(a, out) || begin == p)
			return 0;
		end = begin - 1;
	}
}

/* --------------------------------------------------------------- tokens */

int
access_token_hash(const char *token, size_t len, char hex[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0, i;

	if (EVP_Digest(token, len, md, &mdlen, EVP_sha256(), NULL) != 1 ||
	    mdlen != 32)
		return -1;
	for (i = 0; i < mdlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	return 0;
}

int
access_scopes_parse(const char *s, unsigned *scopes, char *why, size_t whylen)
{
	const char *p = s, *end;
	size_t n, k;

	*scopes = 0;
	for (;;) {
		end = p + strcspn(p, ",");
		n = (size_t)(end - p);
		if (n == 3 && strncmp(p, "all", 3) == 0) {
			*scopes |= (1u << ACCESS_NCLASSES) - 1;
		} else {
			for (k = 0; k < ACCESS_NCLASSES; k++)
				if (strlen(class_names[k]) == n &&
				    strncmp(p, class_names[k], n) == 0)
					break;
			if (k == ACCESS_NCLASSES) {
				snprintf(why, whylen,
				    "\"%.*s\" is not a scope: the scopes are "
				    "a comma list of read, metadata, metrics, "
				    "status, admin, upload, symbolicate or "
				    "all",
				    (int)(n > 40 ? 40 : n), p);
				return -1;
			}
			*scopes |= 1u << k;
		}
		if (*end == '\0')
			return 0;
		p = end + 1;
	}
}

int
access_token_line(const char *line, char hash[65], unsigned *scopes, char *why,
    size_t whylen)
{
	const char *p = line, *w;
	char buf[256];
	size_t n, i;

	p += strspn(p, " \t");
	if (*p == '\0' || *p == '#' || *p == '\r' || *p == '\n')
		return 0;
	n = strcspn(p, " \t#\r\n");
	for (i = 0; i < n; i++)
		if (!((p[i] >= '0' && p[i] <= '9') ||
			(p[i] >= 'a' && p[i] <= 'f')))
			break;
	if (i != 64 || n != 64) {
		snprintf(why, whylen,
		    "expected the SHA-256 of a token, 64 lowercase hex "
		    "digits (dbgmirror token makes the line)");
		return -1;
	}
	memcpy(hash, p, 64);
	hash[64] = '\0';
	w = p + n + strspn(p + n, " \t");
	n = strcspn(w, " \t#\r\n");
	if (n == 0) {
		snprintf(why, whylen,
		    "no scopes after the hash (a comma list of read, "
		    "metadata, metrics, status, admin, upload, symbolicate "
		    "or all)");
		return -1;
	}
	if (n >= sizeof(buf)) {
		snprintf(why, whylen, "scopes too long");
		return -1;
	}
	memcpy(buf, w, n);
	buf[n] = '\0';
	return access_scopes_parse(buf, scopes, why, whylen) == -1 ? -1 : 1;
}

/* Append a token to *v (n of them); -1 when out of memory. */
static int
tokens_push(struct token **v, size_t *n, const char *hash, unsigned scopes)
{
	struct token *nv;

	if ((nv = realloc(*v, (*n + 1) * sizeof(**v))) == NULL)
		return -1;
	*v = nv;
	memcpy(nv[*n].hash, hash, 65);
	nv[*n].scopes = scopes;
	(*n)++;
	return 0;
}

/* Tell say "FILE:LINE: why; ...", when there is a say. */
static void
say_line(access_say_fn say, void *arg, const char *what, const char *path,
    unsigned lineno, const char *why)
{
	char msg[1024];

	if (say == NULL)
		return;
	snprintf(msg, sizeof(msg), "%s %s:%u: %s; the line is ignored", what,
	    path, lineno, why);
	say(arg, msg);
}

/*
 * Append the tokens of token-file path to *v: every line that parses;
 * each other one is told to say.  -1 with err when the file cannot be
 * read (what was appended stays for the caller to drop).
 */
static int
tokens_read(const char *path, struct token **v, size_t *n, access_say_fn say,
    void *arg, char *err, size_t errlen)
{
	char line[TOKEN_LINE_MAX], hash[65], why[256];
	unsigned lineno = 0, scopes;
	int rc = 0, whole;
	FILE *fp;

	if ((fp = fopen(path, "re")) == NULL) {
		snprintf(err, errlen, "token-file %s: %s", path,
		    strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), fp) != NULL) {
		lineno++;
		whole = strchr(line, '\n') != NULL || feof(fp);
		if (!whole) {
			int c;

			/* The rest of a line too long: dropped with it. */
			while ((c = getc(fp)) != EOF && c != '\n')
				continue;
			say_line(say, arg, "token-file", path, lineno,
			    "a line longer than 1023 bytes");
			continue;
		}
		switch (
		    access_token_line(line, hash, &scopes, why, sizeof(why))) {
		case 1:
			if (tokens_push(v, n, hash, scopes) == -1) {
				snprintf(err, errlen,
				    "token-file: out of "
				    "memory");
				rc = -1;
			}
			break;
		case -1:
			say_line(say, arg, "token-file", path, lineno, why);
			break;
		}
		if (rc == -1)
			break;
	}
	if (rc == 0 && ferror(fp)) {
		snprintf(err, errlen, "token-file %s: read error", path);
		rc = -1;
	}
	fclose(fp);
	return rc;
}

/*
 * Append the admin-token of path, its first line without surrounding
 * blanks, to *v with the admin scope.  -1 with err when the file cannot
 * be read or holds no token.
 */
static int
admin_token_read(const char *path, struct token **v, size_t *n, char *err,
    size_t errlen)
{
	char buf[4096], hash[65], *p, *end;
	FILE *fp;

	if ((fp = fopen(path, "re")) == NULL) {
		snprintf(err, errlen, "admin-token %s: %s", path,
		    strerror(errno));
		return -1;
	}
	p = fgets(buf, sizeof(buf), fp);
	fclose(fp);
	if (p == NULL) {
		snprintf(err, errlen, "admin-token %s: empty", path);
		return -1;
	}
	p += strspn(p, " \t");
	end = p + strcspn(p, "\r\n");
	while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	if (end == p) {
		snprintf(err, errlen,
		    "admin-token %s: no token on its first "
		    "line",
		    path);
		return -1;
	}
	if (access_token_hash(p, (size_t)(end - p), hash) == -1 ||
	    tokens_push(v, n, hash, 1u << ACCESS_ADMIN) == -1) {
		snprintf(err, errlen, "admin-token: out of memory");
		return -1;
	}
	return 0;
}

/*
 * The token table of a's files into *v and *n: 0, or -1 with err when a
 * file could not be read (its tokens left out, the other's kept).
 */
static int
tokens_load(const struct access *a, struct token **v, size_t *n,
    access_say_fn say, void *arg, char *err, size_t errlen)
{
	struct token *tv = NULL;
	size_t tn = 0;
	char e2[512];
	int rc = 0;

	*v = NULL;
	*n = 0;
	if (a->token_file != NULL &&
	    tokens_read(a->token_file, &tv, &tn, say, arg, err, errlen) == -1) {
		free(tv);
		tv = NULL;
		tn = 0;
		rc = -1;
	}
	if (a->admin_file != NULL &&
	    admin_token_read(a->admin_file, &tv, &tn, rc == 0 ? err : e2,
		rc == 0 ? errlen : sizeof(e2)) == -1)
		rc = -1;
	*v = tv;
	*n = tn;
	return rc;
}

enum token_state { TOKEN_NONE, TOKEN_BAD, TOKEN_VALID };

/*
 * What the Authorization header holds; *scopes for a valid token.  The
 * header's token is hashed and every entry compared in constant time, so
 * neither the comparison nor the table's order tells anything.
 */
static enum token_state
token_lookup(struct access *a, struct slice auth, unsigned *scopes)
{
	char hex[65];
	enum token_state st = TOKEN_BAD;
	size_t i;

	*scopes = 0;
	if (auth.p == NULL)
		return TOKEN_NONE;
	if (auth.n <= 7 || strncasecmp(auth.p, "Bearer ", 7) != 0 ||
	    access_token_hash(auth.p + 7, auth.n - 7, hex) == -1)
		return TOKEN_BAD;
	for (i = 0; i < a->ntokens; i++) {
		if (CRYPTO_memcmp(hex, a->tokens[i].hash, 64) == 0) {
			*scopes |= a->tokens[i].scopes;
			st = TOKEN_VALID;
		}
	}
	return st;
}

/* ---------------------------------------------------------------- rules */

/* One "cond+cond" word into r; 0, or -1 with *why. */
static int
rule_parse(const char *w, size_t len, struct rule *r, const char **why)
{
	const char *p = w, *end = w + len, *plus;
	struct cond *c;
	size_t n;
	char *cwd;

	memset(r, 0, sizeof(*r));
	while (p < end) {
		if ((plus = memchr(p, '+', (size_t)(end - p))) == NULL)
			plus = end;
		n = (size_t)(plus - p);
		if (r->n == CONDS_MAX) {
			*why = "more than 4 conditions in one rule";
			return -1;
		}
		c = &r->conds[r->n++];
		if (n == 3 && strncmp(p, "any", 3) == 0) {
			c->kind = COND_ANY;
		} else if (n == 5 && strncmp(p, "token", 5) == 0) {
			c->kind = COND_TOKEN;
		} else if (n > 5 && strncmp(p, "addr=", 5) == 0) {
			c->kind = COND_ADDR;
			if (cidr_parse(p + 5, n - 5, &c->net) == -1) {
				*why = "addr= needs an address or CIDR, as in "
				       "10.0.0.0/8 or ::1/128";
				return -1;
			}
		} else if (n > 8 && strncmp(p, "subject=", 8) == 0) {
			c->kind = COND_SUBJECT;
			if ((c->text = strndup(p + 8, n - 8)) == NULL) {
				*why = "out of memory";
				return -1;
			}
		} else if (n > 3 && strncmp(p, "ca=", 3) == 0) {
			/* Relative as the listen line's client-ca= is. */
			c->kind = COND_CA;
			cwd = p[3] == '/' ? NULL : getcwd(NULL, 0);
			if (p[3] != '/' && cwd == NULL) {
				*why = "ca=: the current directory is unknown";
				return -1;
			}
			if (asprintf(&c->text, "%s%s%.*s",
				cwd != NULL ? cwd : "", cwd != NULL ? "/" : "",
				(int)(n - 3), p + 3) < 0)
				c->text = NULL;
			free(cwd);
			if (c->text == NULL) {
				*why = "out of memory";
				return -1;
			}
		} else {
			*why = "a rule is any, addr=CIDR, token, subject=DN "
			       "or ca=FILE, joined by +";
			return -1;
		}
		p = plus + 1;
	}
	if (r->n == 0) {
		*why = "empty rule";
		return -1;
	}
	return 0;
}

static void
rule_clear(struct rule *r)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		free(r->conds[i].text);
	r->n = 0;
}

static int
ruleset_add(struct ruleset *rs, const char *text, size_t line, const char **why)
{
	struct rule r, *v;

	if (rule_parse(text, strlen(text), &r, why) == -1) {
		rule_clear(&r);
		return -1;
	}
	r.line = line;
	if ((v = realloc(rs->v, (rs->n + 1) * sizeof(*v))) == NULL) {
		rule_clear(&r);
		*why = "out of memory";
		return -1;
	}
	v[rs->n++] = r;
	rs->v = v;
	rs->set = 1;
	return 0;
}

/* Where access line i came from. */
static const char *
line_where(const struct config *cfg, size_t i)
{
	return config_where(cfg, "access", i);
}

/*
 * One access line, line i of cfg: "CLASS RULE ...".  -1 with err when it
 * does not parse, and *cls its class (ACCESS_NCLASSES when even that
 * cannot be read).
 */
static int
access_line(struct access *a, const struct config *cfg, size_t i,
    enum access_class *cls, char *err, size_t errlen)
{
	const char *line = cfg->access.v[i];
	const char *where = line_where(cfg, i);
	char buf[1024], *w, *save = NULL;
	const char *why = NULL;
	size_t k;

	*cls = ACCESS_NCLASSES;
	if (strlen(line) >= sizeof(buf)) {
		snprintf(err, errlen, "%s: access: line too long", where);
		return -1;
	}
	strcpy(buf, line);
	if ((w = strtok_r(buf, " \t", &save)) == NULL)
		goto badclass;
	for (k = 0; k < ACCESS_NCLASSES; k++)
		if (strcmp(w, class_names[k]) == 0)
			break;
	if (k == ACCESS_NCLASSES)
		goto badclass;
	*cls = (enum access_class)k;
	if ((w = strtok_r(NULL, " \t", &save)) == NULL) {
		snprintf(err, errlen, "%s: access %s: no rule", where,
		    class_names[k]);
		return -1;
	}
	for (; w != NULL; w = strtok_r(NULL, " \t", &save)) {
		if (ruleset_add(&a->classes[k], w, i, &why) == -1) {
			snprintf(err, errlen, "%s: access %s: \"%.80s\": %s",
			    where, class_names[k], w, why);
			return -1;
		}
	}
	return 0;
badclass:
	snprintf(err, errlen,
	    "%s: access: \"%.80s\": the class is read, metadata, metrics, "
	    "status, admin, upload or symbolicate",
	    where, line);
	return -1;
}

/*
 * A failsafe set (a->closed's bit ACCESS_NCLASSES set) fails closed where
 * access_new fails: classes, the problem in err told to say.  0 when the
 * caller goes on; else -1, err for its caller.
 */
static int
access_fail_closed(struct access *a, unsigned classes, access_say_fn say,
    void *arg, const char *err)
{
	char msg[1024];
	size_t k;

	if (!(a->closed & (1u << ACCESS_NCLASSES)))
		return 0;
	a->closed |= classes;
	for (k = 0; k < ACCESS_NCLASSES && classes != 1u << k; k++)
		continue;
	if (classes == 0)
		snprintf(msg, sizeof(msg),
		    "%s: none of its tokens is valid until it can be read",
		    err);
	else if (k < ACCESS_NCLASSES)
		snprintf(msg, sizeof(msg),
		    "%s; access %s is denied to every client until a reload "
		    "fixes it",
		    err, class_names[k]);
	else
		snprintf(msg, sizeof(msg),
		    "%s; every class is denied to every client until a "
		    "reload fixes it",
		    err);
	if (say != NULL)
		say(arg, msg);
	return 1;
}

/* The distinct client-ca files of cfg's listeners: how many, the first. */
static size_t
client_cas(const struct config *cfg, const char **first)
{
	size_t i, j, n = 0;

	*first = NULL;
	for (i = 0; i < cfg->nlisten; i++) {
		if (cfg->listen[i].client_ca == NULL)
			continue;
		for (j = 0; j < i; j++)
			if (cfg->listen[j].client_ca != NULL &&
			    strcmp(cfg->listen[j].client_ca,
				cfg->listen[i].client_ca) == 0)
				break;
		if (j < i)
			continue;
		if (n++ == 0)
			*first = cfg->listen[i].client_ca;
	}
	return n;
}

/*
 * Bind the certificate conditions to the CA that verifies them: a ca=
 * must name a listener's client-ca; a subject= without a ca= means the
 * one client-ca there is, and is refused when listeners verify with
 * different CAs, since a certificate of either could show the DN.
 */
static int
rules_bind_cas(struct access *a, const struct config *cfg, access_say_fn say,
    void *arg, char *err, size_t errlen)
{
	const char *first, *where;
	size_t ncas = client_cas(cfg, &first), k, i, j, l;
	int has_subject, has_ca, bad;

	for (k = 0; k < ACCESS_NCLASSES; k++) {
		for (i = 0; i < a->classes[k].n && !(a->closed & (1u << k));
		     i++) {
			struct rule *r = &a->classes[k].v[i];

			has_subject = has_ca = 0;
			where = line_where(cfg, r->line);
			for (j = 0; j < r->n; j++) {
				if (r->conds[j].kind == COND_SUBJECT)
					has_subject = 1;
				if (r->conds[j].kind != COND_CA)
					continue;
				has_ca = 1;
				for (l = 0; l < cfg->nlisten; l++)
					if (cfg->listen[l].client_ca != NULL &&
					    strcmp(cfg->listen[l].client_ca,
						r->conds[j].text) == 0)
						break;
				if (l == cfg->nlisten) {
					snprintf(err, errlen,
					    "%s: access %s: ca=%.200s: no "
					    "listen line has this client-ca",
					    where, class_names[k],
					    r->conds[j].text);
					break;
				}
			}
			bad = j < r->n;
			if (!bad && has_subject && !has_ca && ncas >= 2) {
				snprintf(err, errlen,
				    "%s: access %s: a subject= rule without "
				    "ca=, but listeners verify client "
				    "certificates with %zu different client-ca "
				    "files: bind it to one with +ca=FILE",
				    where, class_names[k], ncas);
				bad = 1;
			}
			if (bad &&
			    !access_fail_closed(a, 1u << k, say, arg, err))
				return -1;
		}
	}
	return 0;
}

/* The defaults of the classes no line named (see access.h). */
static int
defaults(struct access *a, const struct config *cfg)
{
	static const enum access_class open[] = { ACCESS_READ,
		ACCESS_METADATA };
	static const enum access_class stats[] = { ACCESS_METRICS,
		ACCESS_STATUS };
	const char *why;
	size_t i;
	int rc = 0;

	for (i = 0; i < 2; i++)
		if (!a->classes[open[i]].set)
			rc |= ruleset_add(&a->classes[open[i]], "any", SIZE_MAX,
			    &why);
	for (i = 0; i < 2; i++) {
		struct ruleset *rs = &a->classes[stats[i]];

		if (rs->set)
			continue;
		rs->set = 1;
		if (cfg->metrics_access == CONFIG_ADMIN_ANY)
			rc |= ruleset_add(rs, "any", SIZE_MAX, &why);
		else if (cfg->metrics_access == CONFIG_ADMIN_LOOPBACK)
			rc |= ruleset_add(rs, "addr=127.0.0.0/8", SIZE_MAX,
				  &why) |
			    ruleset_add(rs, "addr=::1", SIZE_MAX, &why);
	}
	if (!a->classes[ACCESS_UPLOAD].set)
		rc |= ruleset_add(&a->classes[ACCESS_UPLOAD], "token", SIZE_MAX,
		    &why);
	return rc;
}

/* access_new, or access_new_failsafe when closed has bit ACCESS_NCLASSES. */
static struct access *
access_build(const struct config *cfg, unsigned closed, access_say_fn say,
    void *arg, char *err, size_t errlen)
{
	enum access_class cls;
	struct access *a;
	size_t i;

	if ((a = calloc(1, sizeof(*a))) == NULL) {
		snprintf(err, errlen, "access: out of memory");
		return NULL;
	}
	a->closed = closed;
	for (i = 0; i < cfg->access.n; i++)
		if (access_line(a, cfg, i, &cls, err, errlen) == -1 &&
		    !access_fail_closed(a,
			cls == ACCESS_NCLASSES ? ACCESS_ALL : 1u << cls, say,
			arg, err))
			goto fail;
	if (rules_bind_cas(a, cfg, say, arg, err, errlen) == -1)
		goto fail;
	if (defaults(a, cfg) != 0) {
		snprintf(err, errlen, "access: out of memory");
		goto fail;
	}
	a->admin_access = (int)cfg->admin_access;
	if (cfg->trusted_proxies.n > 0 &&
	    (a->proxies = calloc(cfg->trusted_proxies.n,
		 sizeof(*a->proxies))) == NULL) {
		snprintf(err, errlen, "access: out of memory");
		goto fail;
	}
	for (i = 0; i < cfg->trusted_proxies.n; i++) {
		const char *s = cfg->trusted_proxies.v[i];

		if (cidr_parse(s, strlen(s), &a->proxies[a->nproxies]) == -1) {
			snprintf(err, errlen,
			    "%s: trusted-proxy: \"%.80s\": expected an "
			    "address or CIDR",
			    config_where(cfg, "trusted-proxy", i), s);
			if (!access_fail_closed(a, ACCESS_ALL, say, arg, err))
				goto fail;
			continue;
		}
		a->nproxies++;
	}
	if ((cfg->token_file != NULL &&
		(a->token_file = strdup(cfg->token_file)) == NULL) ||
	    (cfg->admin_token_file != NULL &&
		(a->admin_file = strdup(cfg->admin_token_file)) == NULL)) {
		snprintf(err, errlen, "access: out of memory");
		goto fail;
	}
	/* A failsafe set keeps the tokens it could read, as a reload did. */
	if (tokens_load(a, &a->tokens, &a->ntokens, say, arg, err, errlen) ==
		-1 &&
	    !access_fail_closed(a, 0, say, arg, err))
		goto fail;
	return a;
fail:
	access_free(a);
	return NULL;
}

struct access *
access_new(const struct config *cfg, access_say_fn say, void *arg, char *err,
    size_t errlen)
{
	return access_build(cfg, 0, say, arg, err, errlen);
}

struct access *
access_new_failsafe(const struct config *cfg, unsigned closed,
    access_say_fn say, void *arg)
{
	char err[512];

	return access_build(cfg, (closed & ACCESS_ALL) | 1u << ACCESS_NCLASSES,
	    say, arg, err, sizeof(err));
}

unsigned
access_closed(const struct access *a)
{
	return a->closed & ACCESS_ALL;
}

void
access_free(struct access *a)
{
	size_t k, i;

	if (a == NULL)
		return;
	for (k = 0; k < ACCESS_NCLASSES; k++) {
		for (i = 0; i < a->classes[k].n; i++)
			rule_clear(&a->classes[k].v[i]);
		free(a->classes[k].v);
	}
	free(a->proxies);
	free(a->token_file);
	free(a->admin_file);
	free(a->tokens);
	free(a);
}

/* 1 when the peer address is open to who, as admin-access says. */
static int
admin_access_allows(int who, const char *peer)
{
	switch (who) {
	case CONFIG_ADMIN_ANY:
		return 1;
	case CONFIG_ADMIN_LOOPBACK:
		return strncmp(peer, "127.", 4) == 0 ||
		    strcmp(peer, "::1") == 0;
	default:
		return 0;
	}
}

/* The client's address, parsed when a rule first asks for it. */
struct who_addr {
	int state; /* 0 not parsed yet, 1 parsed, -1 not an address */
	struct cidr addr;
};

/* 1 when condition c holds for who. */
static int
cond_holds(const struct access *a, const struct cond *c,
    const struct access_who *who, struct who_addr *wa, int token_ok)
{
	switch (c->kind) {
	case COND_ANY:
		return 1;
	case COND_ADDR:
		if (wa->state == 0)
			wa->state =
			    client_addr(a, who, &wa->addr) == 0 ? 1 : -1;
		return wa->state == 1 && cidr_match(&c->net, &wa->addr);
	case COND_TOKEN:
		return token_ok;
	case COND_SUBJECT:
		return who->subject != NULL && who->subject[0] != '\0' &&
		    strcmp(who->subject, c->text) == 0;
	case COND_CA:
		return who->subject != NULL && who->subject[0] != '\0' &&
		    who->client_ca != NULL &&
		    strcmp(who->client_ca, c->text) == 0;
	}
	return 0;
}

enum access_verdict
access_check(struct access *a, enum access_class cls,
    const struct access_who *who, const char **why)
{
	const struct ruleset *rs;
	enum token_state ts;
	struct who_addr wa = { 0 };
	unsigned scopes;
	int token_ok, token_asked = 0, hold, needs_token, met = 0;
	size_t i, j;

	/*
	 * /symbolicate reads what /buildid/ would: read's, unless said;
	 * closed when its own line did not load or read is closed.
	 */
	if (cls == ACCESS_SYMBOLICATE && !a->classes[cls].set &&
	    !(a->closed & (1u << cls)))
		cls = ACCESS_READ;
	if (a->closed & (1u << cls)) {
		*why = "closed: the access configuration did not load";
		return ACCESS_FORBIDDEN;
	}
	rs = &a->classes[cls];
	ts = token_lookup(a, who->authorization, &scopes);
	token_ok = ts == TOKEN_VALID && (scopes & (1u << cls)) != 0;
	/* These need their token whatever the rules say. */
	needs_token = cls == ACCESS_UPLOAD ||
	    (cls == ACCESS_ADMIN && a->admin_file != NULL);
	if (cls == ACCESS_ADMIN && !rs->set)
		met = admin_access_allows(a->admin_access, who->peer);
	for (i = 0; i < rs->n && !met; i++) {
		hold = 1;
		for (j = 0; j < rs->v[i].n && hold; j++) {
			if (rs->v[i].conds[j].kind == COND_TOKEN)
				token_asked = 1;
			hold = cond_holds(a, &rs->v[i].conds[j], who, &wa,
			    token_ok);
		}
		met = hold;
	}
	if (met && (!needs_token || token_ok))
		return ACCESS_ALLOW;
	/* Admin asks for its token only of clients its rules let in. */
	if (needs_token && (met || cls == ACCESS_UPLOAD))
		token_asked = 1;
	if (ts == TOKEN_BAD) {
		*why = "the bearer token is not valid";
		return ACCESS_UNAUTHORIZED;
	}
	if (ts == TOKEN_NONE && token_asked) {
		*why = cls == ACCESS_ADMIN && a->admin_file != NULL
		    ? "this needs Authorization: Bearer with the admin-token "
		      "or a token with the admin scope"
		    : "this needs Authorization: Bearer with a token";
		return ACCESS_UNAUTHORIZED;
	}
	if (needs_token && token_asked && ts == TOKEN_VALID && !token_ok)
		*why = cls == ACCESS_UPLOAD ? "the token has no upload scope"
					    : "the token has no admin scope";
	else
		*why = "not open to this client";
	return ACCESS_FORBIDDEN;
}

/* ---------------------------------------------------------------- audit */

/* 1 when every condition of r holds for any client: any, addr=X/0. */
static int
rule_open(const struct rule *r)
{
	size_t j;

	for (j = 0; j < r->n; j++)
		if (r->conds[j].kind != COND_ANY &&
		    !(r->conds[j].kind == COND_ADDR &&
			r->conds[j].net.bits == 0))
			return 0;
	return 1;
}

static void audit_say(access_say_fn say, void *arg, unsigned *n,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void
audit_say(access_say_fn say, void *arg, unsigned *n, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	say(arg, msg);
	(*n)++;
}

unsigned
access_audit(const struct access *a, const struct config *cfg,
    access_say_fn say, void *arg)
{
	static const char *const admin_words[] = { "none", "loopback", "any" };
	const struct ruleset *adm = &a->classes[ACCESS_ADMIN];
	const char *first;
	unsigned n = 0;
	size_t k, i, j;

	if (adm->set && adm->n > 0) {
		audit_say(say, arg, &n,
		    "access = %.200s (%s) and the other access = admin lines "
		    "override admin-access = %s (%s): the admin endpoints "
		    "are open to whom those lines let in%s",
		    cfg->access.v[adm->v[0].line],
		    line_where(cfg, adm->v[0].line),
		    admin_words[a->admin_access % 3],
		    config_where(cfg, "admin-access", 0),
		    a->admin_file != NULL
			? ", and admin-token still applies: each admin "
			  "request also needs the admin-token or a token "
			  "with the admin scope"
			: ", without a token unless the lines ask for one");
		for (i = 0; i < adm->n; i++)
			if (rule_open(&adm->v[i]))
				audit_say(say, arg, &n,
				    "access = %.200s (%s) opens the admin "
				    "endpoints (purges, the missing-id report) "
				    "to every client%s",
				    cfg->access.v[adm->v[i].line],
				    line_where(cfg, adm->v[i].line),
				    a->admin_file != NULL
					? " that has the admin-token"
					: ", without a token");
	} else if (a->admin_access == CONFIG_ADMIN_ANY &&
	    a->admin_file == NULL) {
		audit_say(say, arg, &n,
		    "admin-access = any (%s) without admin-token opens the "
		    "admin endpoints (purges, the missing-id report) to "
		    "every client",
		    config_where(cfg, "admin-access", 0));
	}
	for (i = 0; i < a->nproxies; i++)
		if (a->proxies[i].bits <
		    (a->proxies[i].family == AF_INET ? 8u : 16u))
			audit_say(say, arg, &n,
			    "trusted-proxy = %.80s (%s) trusts the "
			    "X-Forwarded-For of that many addresses that a "
			    "client among them chooses the address addr= "
			    "rules see",
			    cfg->trusted_proxies.v[i],
			    config_where(cfg, "trusted-proxy", i));
	if (client_cas(cfg, &first) > 0)
		return n;
	for (k = 0; k < ACCESS_NCLASSES; k++)
		for (i = 0; i < a->classes[k].n; i++)
			for (j = 0; j < a->classes[k].v[i].n; j++)
				if (a->classes[k].v[i].conds[j].kind ==
				    COND_SUBJECT) {
					audit_say(say, arg, &n,
					    "access = %.200s (%s): no listen "
					    "line has client-ca=, so no client "
					    "certificate is verified and its "
					    "subject= never holds",
					    cfg->access
						.v[a->classes[k].v[i].line],
					    line_where(cfg,
						a->classes[k].v[i].line));
					break;
				}
	return n;
}
