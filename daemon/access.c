/*
 * daemon/access.c: access rules per endpoint class, bearer tokens.
 *
 * The rules are parsed once at start-up and never change; the token
 * table is read from token-file at start-up and on SIGHUP and swapped
 * under a read-write lock (checks hold it for reading for a few
 * comparisons).
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
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "conf/config.h"

#define CONDS_MAX 4 /* conditions of one rule */
#define TOKEN_LINE_MAX 1024

static const char *const class_names[ACCESS_NCLASSES] = { "read", "metadata",
	"metrics", "status", "admin", "upload" };

struct cidr {
	int family; /* AF_INET or AF_INET6 */
	unsigned char addr[16];
	unsigned bits;
};

enum cond_kind { COND_ANY, COND_ADDR, COND_TOKEN, COND_SUBJECT };

struct cond {
	enum cond_kind kind;
	struct cidr net; /* COND_ADDR */
	char *subject; /* COND_SUBJECT */
};

/* All of its conditions must hold. */
struct rule {
	struct cond conds[CONDS_MAX];
	size_t n;
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
	struct cidr *proxies;
	size_t nproxies;
	char *token_file; /* NULL: no tokens */
	pthread_rwlock_t lock; /* over tokens, ntokens */
	struct token *tokens;
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

/* Scopes "read,upload" or "all" as a class bit set; -1 when unknown. */
static int
parse_scopes(const char *s, unsigned *out)
{
	char buf[256], *tok, *save = NULL;
	size_t k;

	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	*out = 0;
	for (tok = strtok_r(buf, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		if (strcmp(tok, "all") == 0) {
			*out |= (1u << ACCESS_NCLASSES) - 1;
			continue;
		}
		for (k = 0; k < ACCESS_NCLASSES; k++)
			if (strcmp(tok, class_names[k]) == 0)
				break;
		if (k == ACCESS_NCLASSES)
			return -1;
		*out |= 1u << k;
	}
	return *out == 0 ? -1 : 0;
}

/* Read path: "SHA256HEX SCOPES [NAME]" lines, '#' comments. */
static int
tokens_read(const char *path, struct token **out, size_t *nout, char *err,
    size_t errlen)
{
	char line[TOKEN_LINE_MAX], hash[80], scopes[256];
	struct token *v = NULL, *nv;
	size_t n = 0, i;
	unsigned lineno = 0;
	FILE *fp;

	if ((fp = fopen(path, "re")) == NULL) {
		snprintf(err, errlen, "token-file %s: %s", path,
		    strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), fp) != NULL) {
		lineno++;
		line[strcspn(line, "#\r\n")] = '\0';
		if (sscanf(line, "%79s %255s", hash, scopes) < 1)
			continue;
		for (i = 0; hash[i] != '\0'; i++)
			if (!((hash[i] >= '0' && hash[i] <= '9') ||
				(hash[i] >= 'a' && hash[i] <= 'f')))
				break;
		if (i != 64 || hash[i] != '\0') {
			snprintf(err, errlen,
			    "token-file %s:%u: expected the SHA-256 of a "
			    "token, 64 lowercase hex digits (dbgmirror token "
			    "makes the line)",
			    path, lineno);
			goto fail;
		}
		if ((nv = realloc(v, (n + 1) * sizeof(*v))) == NULL) {
			snprintf(err, errlen, "token-file: out of memory");
			goto fail;
		}
		v = nv;
		memcpy(v[n].hash, hash, 65);
		if (sscanf(line, "%*s %255s", scopes) != 1 ||
		    parse_scopes(scopes, &v[n].scopes) == -1) {
			snprintf(err, errlen,
			    "token-file %s:%u: expected scopes, a comma list "
			    "of read, metadata, metrics, status, admin, "
			    "upload or all",
			    path, lineno);
			goto fail;
		}
		n++;
	}
	fclose(fp);
	*out = v;
	*nout = n;
	return 0;
fail:
	fclose(fp);
	free(v);
	return -1;
}

enum token_state { TOKEN_NONE, TOKEN_BAD, TOKEN_VALID };

/* What the Authorization header holds; *scopes for a valid token. */
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
	pthread_rwlock_rdlock(&a->lock);
	for (i = 0; i < a->ntokens; i++) {
		if (CRYPTO_memcmp(hex, a->tokens[i].hash, 64) == 0) {
			*scopes = a->tokens[i].scopes;
			st = TOKEN_VALID;
		}
	}
	pthread_rwlock_unlock(&a->lock);
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
			if ((c->subject = strndup(p + 8, n - 8)) == NULL) {
				*why = "out of memory";
				return -1;
			}
		} else {
			*why = "a rule is any, addr=CIDR, token or subject=DN, "
			       "joined by +";
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
		free(r->conds[i].subject);
	r->n = 0;
}

static int
ruleset_add(struct ruleset *rs, const char *text, const char **why)
{
	struct rule r, *v;

	if (rule_parse(text, strlen(text), &r, why) == -1) {
		rule_clear(&r);
		return -1;
	}
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

/* One access line: "CLASS RULE ...". */
static int
access_line(struct access *a, const char *line, char *err, size_t errlen)
{
	char buf[1024], *w, *save = NULL;
	const char *why = NULL;
	size_t k;

	if (strlen(line) >= sizeof(buf)) {
		snprintf(err, errlen, "access: line too long");
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
	if ((w = strtok_r(NULL, " \t", &save)) == NULL) {
		snprintf(err, errlen, "access %s: no rule", class_names[k]);
		return -1;
	}
	for (; w != NULL; w = strtok_r(NULL, " \t", &save)) {
		if (ruleset_add(&a->classes[k], w, &why) == -1) {
			snprintf(err, errlen, "access %s: \"%.80s\": %s",
			    class_names[k], w, why);
			return -1;
		}
	}
	return 0;
badclass:
	snprintf(err, errlen,
	    "access: \"%.80s\": the class is read, metadata, metrics, "
	    "status, admin or upload",
	    line);
	return -1;
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
			rc |= ruleset_add(&a->classes[open[i]], "any", &why);
	for (i = 0; i < 2; i++) {
		struct ruleset *rs = &a->classes[stats[i]];

		if (rs->set)
			continue;
		rs->set = 1;
		if (cfg->metrics_access == CONFIG_ADMIN_ANY)
			rc |= ruleset_add(rs, "any", &why);
		else if (cfg->metrics_access == CONFIG_ADMIN_LOOPBACK)
			rc |= ruleset_add(rs, "addr=127.0.0.0/8", &why) |
			    ruleset_add(rs, "addr=::1", &why);
	}
	if (!a->classes[ACCESS_UPLOAD].set)
		rc |= ruleset_add(&a->classes[ACCESS_UPLOAD], "token", &why);
	return rc;
}

struct access *
access_new(const struct config *cfg, char *err, size_t errlen)
{
	struct access *a;
	size_t i;

	if ((a = calloc(1, sizeof(*a))) == NULL ||
	    pthread_rwlock_init(&a->lock, NULL) != 0) {
		free(a);
		snprintf(err, errlen, "access: out of memory");
		return NULL;
	}
	for (i = 0; i < cfg->access.n; i++)
		if (access_line(a, cfg->access.v[i], err, errlen) == -1)
			goto fail;
	if (defaults(a, cfg) != 0) {
		snprintf(err, errlen, "access: out of memory");
		goto fail;
	}
	if (cfg->trusted_proxies.n > 0 &&
	    (a->proxies = calloc(cfg->trusted_proxies.n,
		 sizeof(*a->proxies))) == NULL) {
		snprintf(err, errlen, "access: out of memory");
		goto fail;
	}
	for (i = 0; i < cfg->trusted_proxies.n; i++) {
		const char *s = cfg->trusted_proxies.v[i];

		if (cidr_parse(s, strlen(s), &a->proxies[i]) == -1) {
			snprintf(err, errlen,
			    "trusted-proxy: \"%.80s\": expected an address "
			    "or CIDR",
			    s);
			goto fail;
		}
		a->nproxies++;
	}
	if (cfg->token_file != NULL) {
		if ((a->token_file = strdup(cfg->token_file)) == NULL) {
			snprintf(err, errlen, "access: out of memory");
			goto fail;
		}
		if (tokens_read(a->token_file, &a->tokens, &a->ntokens, err,
			errlen) == -1)
			goto fail;
	}
	return a;
fail:
	access_free(a);
	return NULL;
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
	free(a->tokens);
	pthread_rwlock_destroy(&a->lock);
	free(a);
}

int
access_reload(struct access *a, char *err, size_t errlen)
{
	struct token *v, *old;
	size_t n;

	if (a->token_file == NULL)
		return 0;
	if (tokens_read(a->token_file, &v, &n, err, errlen) == -1)
		return -1;
	pthread_rwlock_wrlock(&a->lock);
	old = a->tokens;
	a->tokens = v;
	a->ntokens = n;
	pthread_rwlock_unlock(&a->lock);
	free(old);
	return 0;
}

int
access_has_rules(const struct access *a, enum access_class cls)
{
	return a->classes[cls].set;
}

enum access_verdict
access_check(struct access *a, enum access_class cls,
    const struct access_who *who, const char **why)
{
	const struct ruleset *rs = &a->classes[cls];
	enum token_state ts;
	struct cidr addr;
	unsigned scopes;
	int have_addr, token_ok, token_asked = 0, hold;
	size_t i, j;

	ts = token_lookup(a, who->authorization, &scopes);
	token_ok = ts == TOKEN_VALID && (scopes & (1u << cls)) != 0;
	have_addr = client_addr(a, who, &addr) == 0;
	for (i = 0; i < rs->n; i++) {
		hold = 1;
		for (j = 0; j < rs->v[i].n && hold; j++) {
			const struct cond *c = &rs->v[i].conds[j];

			switch (c->kind) {
			case COND_ANY:
				break;
			case COND_ADDR:
				hold = have_addr && cidr_match(&c->net, &addr);
				break;
			case COND_TOKEN:
				token_asked = 1;
				hold = token_ok;
				break;
			case COND_SUBJECT:
				hold = who->subject != NULL &&
				    strcmp(who->subject, c->subject) == 0;
				break;
			}
		}
		/* An upload needs its token even where a rule says less. */
		if (hold && (cls != ACCESS_UPLOAD || token_ok))
			return ACCESS_ALLOW;
	}
	if (cls == ACCESS_UPLOAD)
		token_asked = 1;
	if (ts == TOKEN_BAD) {
		*why = "the bearer token is not valid";
		return ACCESS_UNAUTHORIZED;
	}
	if (ts == TOKEN_NONE && token_asked) {
		*why = "this needs Authorization: Bearer with a token";
		return ACCESS_UNAUTHORIZED;
	}
	*why = cls == ACCESS_UPLOAD && ts == TOKEN_VALID && !token_ok
	    ? "the token has no upload scope"
	    : "not open to this client";
	return ACCESS_FORBIDDEN;
}
