/*
 * conf/values.c: the parsers of single option values (conf/values.h):
 * numbers with their suffixes, booleans, words, listen addresses, URLs,
 * upstream, repo and header lines.
 *
 * Each takes the value's text and either stores what it means or says
 * why not in one phrase, which conf/options.c puts after the file, line
 * and option name.  Nothing is printed.  Uses only conf/settings.h's
 * types: the table of options (conf/options.c) calls these, never the
 * other way round.
 */
#include "conf/values.h"

#include <sys/stat.h>
#include <sys/un.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define DAY (24 * 60 * 60)

/* A number suffix and what it multiplies by. */
struct suffix {
	const char *s;
	uint64_t mult;
};

static const struct suffix duration_suffixes[] = {
	{ "s", 1 },
	{ "m", 60 },
	{ "h", 60 * 60 },
	{ "d", DAY },
	{ NULL, 0 },
};

/*
 * K, M, G, T and KiB, MiB, GiB, TiB are powers of 1024, as in most
 * servers' configurations (nginx, systemd); KB, MB, GB, TB powers of
 * 1000, as the SI and disk makers have them.  Any case.
 */
static const struct suffix size_suffixes[] = {
	{ "K", 1ULL << 10 },
	{ "M", 1ULL << 20 },
	{ "G", 1ULL << 30 },
	{ "T", 1ULL << 40 },
	{ "KiB", 1ULL << 10 },
	{ "MiB", 1ULL << 20 },
	{ "GiB", 1ULL << 30 },
	{ "TiB", 1ULL << 40 },
	{ "KB", 1000ULL },
	{ "MB", 1000ULL * 1000 },
	{ "GB", 1000ULL * 1000 * 1000 },
	{ "TB", 1000ULL * 1000 * 1000 * 1000 },
	{ NULL, 0 },
};

static const struct suffix no_suffixes[] = {
	{ NULL, 0 },
};

/*
 * Numbers: decimal digits, then at most one suffix from tab.  Signs, hex
 * and blanks are refused; so is anything above UINT64_MAX after scaling.
 */
static int
parse_number(const char *s, const struct suffix *tab, int nocase, uint64_t *out,
    const char **why)
{
	uint64_t v = 0;
	const struct suffix *sf;

	if (*s == '-') {
		*why = "must not be negative";
		return -1;
	}
	if (*s < '0' || *s > '9') {
		*why = NULL; /* the caller says what was expected */
		return -1;
	}
	for (; *s >= '0' && *s <= '9'; s++) {
		unsigned d = (unsigned)(*s - '0');

		if (v > (UINT64_MAX - d) / 10) {
			*why = "number too large";
			return -1;
		}
		v = v * 10 + d;
	}
	if (*s != '\0') {
		for (sf = tab; sf->s != NULL; sf++)
			if (strcmp(s, sf->s) == 0 ||
			    (nocase && strcasecmp(s, sf->s) == 0))
				break;
		if (sf->s == NULL) {
			*why = NULL;
			return -1;
		}
		if (v > UINT64_MAX / sf->mult) {
			*why = "number too large";
			return -1;
		}
		v *= sf->mult;
	}
	*out = v;
	return 0;
}

/* The suffixes numbers of a kind may have, and what to say if wrong. */
static const struct suffix *
number_syntax(enum config_number kind, const char **expect)
{
	switch (kind) {
	case CONFIG_NUMBER_DURATION:
		*expect = "expected seconds, or a number with suffix s, m, h "
			  "or d";
		return duration_suffixes;
	case CONFIG_NUMBER_SIZE:
		*expect = "expected bytes, or a number with suffix K, M, G "
			  "or T (also KiB... powers of 1024; KB... of 1000)";
		return size_suffixes;
	default:
		*expect = "expected a decimal number";
		return no_suffixes;
	}
}

int
config_parse_number(const char *s, enum config_number kind, uint64_t *out,
    const char **why)
{
	const char *expect;
	const struct suffix *tab = number_syntax(kind, &expect);

	if (parse_number(s, tab, kind == CONFIG_NUMBER_SIZE, out, why) == -1) {
		if (*why == NULL)
			*why = expect;
		return -1;
	}
	return 0;
}
int
config_parse_duration(const char *s, uint64_t *seconds, const char **why)
{
	return config_parse_number(s, CONFIG_NUMBER_DURATION, seconds, why);
}

int
config_parse_bool(const char *s, int *out)
{
	static const char *const yes[] = { "on", "yes", "true", "1" };
	static const char *const no[] = { "off", "no", "false", "0" };
	size_t i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = 1;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = 0;
			return 0;
		}
	}
	return -1;
}

/*
 * A word of words[] (any case): *out is its index, which is the value of
 * the enum the words spell.
 */
int
config_parse_word(const char *s, const char *const words[], size_t n, int *out)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (strcasecmp(s, words[i]) == 0) {
			*out = (int)i;
			return 0;
		}
	}
	return -1;
}

/*
 * A listen address: "IPv4:PORT" or "[IPv6]:PORT", numeric only, since
 * resolving names at start-up would make the daemon depend on DNS.
 */
static int
parse_address(const char *s, struct config_listen *l, const char **why)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *h, *end, *port;
	size_t hlen;
	unsigned long pn = 0;
	int family;

	if (strlen(s) >= sizeof(l->text)) {
		*why = "too long";
		return -1;
	}
	if (s[0] == '[') {
		h = s + 1;
		if ((end = strchr(h, ']')) == NULL) {
			*why = "missing ']' after the IPv6 address";
			return -1;
		}
		if (end[1] != ':') {
			*why = "missing :PORT after ']'";
			return -1;
		}
		hlen = (size_t)(end - h);
		port = end + 2;
		family = AF_INET6;
	} else {
		h = s;
		if ((end = strrchr(s, ':')) == NULL) {
			*why = "missing :PORT";
			return -1;
		}
		if (memchr(s, ':', (size_t)(end - s)) != NULL) {
			*why =
			    "an IPv6 address needs brackets, as in [::1]:8002";
			return -1;
		}
		hlen = (size_t)(end - h);
		port = end + 1;
		family = AF_INET;
	}
	if (*port == '\0') {
		*why = "missing port after ':'";
		return -1;
	}
	for (; *port != '\0'; port++) {
		if (*port < '0' || *port > '9' || pn > 65535) {
			*why = "port must be a number from 0 to 65535";
			return -1;
		}
		pn = pn * 10 + (unsigned long)(*port - '0');
	}
	if (pn > 65535) {
		*why = "port must be a number from 0 to 65535";
		return -1;
	}

	memset(l, 0, sizeof(*l));
	if (hlen >= sizeof(host))
		goto notnumeric;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	if (family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&l->addr;

		if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
			goto notnumeric;
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)pn);
		l->addrlen = sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&l->addr;

		if (inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1)
			goto notnumeric;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)pn);
		l->addrlen = sizeof(*sin6);
	}
	strcpy(l->text, s);
	return 0;

notnumeric:
	*why = "numeric address required, as in 127.0.0.1:8002 or [::1]:8002";
	return -1;
}

void
config_listen_clear(struct config_listen *l)
{
	free(l->cert);
	free(l->key);
	free(l->client_ca);
	l->cert = l->key = l->client_ca = NULL;
}
/* A copy of path, made absolute against the current directory. */
static char *
absolute_copy(const char *path, size_t len)
{
	char cwd[PATH_MAX], *s;

	if (len > 0 && path[0] == '/')
		return strndup(path, len);
	if (getcwd(cwd, sizeof(cwd)) == NULL)
		return NULL;
	if (asprintf(&s, "%s/%.*s", cwd, (int)len, path) == -1)
		return NULL;
	return s;
}

int
config_listen_any(const char *s, char *v4, char *v6, size_t len)
{
	size_t digits;

	s += *s == ':';
	digits = strspn(s, "0123456789");
	if (digits == 0 ||
	    (s[digits] != '\0' && s[digits] != ' ' && s[digits] != '\t'))
		return 0;
	snprintf(v4, len, "0.0.0.0:%s", s);
	snprintf(v6, len, "[::]:%s", s);
	return 1;
}

/*
 * A listen line: the address, then for HTTPS the word "tls" and
 * key=value words (cert, key, client-ca, client-cert).  On failure *why
 * says what is wrong and l holds nothing to free.
 */
int
config_parse_listen(const char *s, struct config_listen *l, const char **why)
{
	char addr[sizeof(l->text) + 1];
	const char *w, *eq;
	char **slot;
	size_t n;

	n = strcspn(s, " \t");
	if (n >= sizeof(addr)) {
		*why = "too long";
		return -1;
	}
	memcpy(addr, s, n);
	addr[n] = '\0';
	if (parse_address(addr, l, why) == -1)
		return -1;
	for (w = s + n; *w != '\0'; w += n) {
		w += strspn(w, " \t");
		if ((n = strcspn(w, " \t")) == 0)
			break;
		if (n == 3 && strncmp(w, "tls", 3) == 0) {
			l->tls = 1;
			continue;
		}
		if ((eq = memchr(w, '=', n)) == NULL || eq + 1 == w + n) {
			*why =
			    "expected tls, cert=FILE, key=FILE, "
			    "client-ca=FILE or client-cert=required|optional";
			goto fail;
		}
		slot = NULL;
		if ((size_t)(eq - w) == 4 && strncmp(w, "cert", 4) == 0)
			slot = &l->cert;
		else if ((size_t)(eq - w) == 3 && strncmp(w, "key", 3) == 0)
			slot = &l->key;
		else if ((size_t)(eq - w) == 9 &&
		    strncmp(w, "client-ca", 9) == 0)
			slot = &l->client_ca;
		else if ((size_t)(eq - w) == 11 &&
		    strncmp(w, "client-cert", 11) == 0) {
			if (strncmp(eq + 1, "optional", 8) == 0 &&
			    w + n == eq + 9)
				l->client_cert_optional = 1;
			else if (!(strncmp(eq + 1, "required", 8) == 0 &&
				     w + n == eq + 9)) {
				*why = "client-cert is required or optional";
				goto fail;
			}
			continue;
		}
		if (slot == NULL) {
			*why = "unknown listen option; expected cert, key, "
			       "client-ca or client-cert";
			goto fail;
		}
		free(*slot);
		if ((*slot = absolute_copy(eq + 1, (size_t)(w + n - eq - 1))) ==
		    NULL) {
			*why = "out of memory";
			goto fail;
		}
	}
	if (!l->tls &&
	    (l->cert != NULL || l->key != NULL || l->client_ca != NULL ||
		l->client_cert_optional)) {
		*why = "cert, key and client-ca need the word tls";
		goto fail;
	}
	if (l->tls && (l->cert == NULL || l->key == NULL)) {
		*why = "tls needs cert=FILE and key=FILE";
		goto fail;
	}
	return 0;
fail:
	config_listen_clear(l);
	return -1;
}
void
config_strlist_clear(struct config_strlist *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* Append s to l, taking ownership of it (freed on failure). */
int
config_strlist_add(struct config_strlist *l, char *s)
{
	char **v;

	if ((v = realloc(l->v, (l->n + 1) * sizeof(*v))) == NULL) {
		free(s);
		return -1;
	}
	v[l->n++] = s;
	l->v = v;
	return 0;
}

int
config_is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/*
 * An upstream base URL: http:// or https://, a host, no blanks or control
 * characters, no query or fragment (the protocol paths are appended to
 * it).  Trailing '/'s are dropped so that the same server is always
 * spelled the same, in the cache's records and in purge --upstream.
 */
static char *
parse_url(const char *s, size_t len, const char **why)
{
	const char *host;
	size_t i;

	if (len > 7 && strncmp(s, "http://", 7) == 0)
		host = s + 7;
	else if (len > 8 && strncmp(s, "https://", 8) == 0)
		host = s + 8;
	else {
		*why = "expected an http:// or https:// URL";
		return NULL;
	}
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= 0x20 || c == 0x7f || c == '?' || c == '#') {
			*why = "URL with a blank, control character, "
			       "query or fragment";
			return NULL;
		}
	}
	while (len > (size_t)(host - s) && s[len - 1] == '/')
		len--;
	if (len == (size_t)(host - s) || *host == '/') {
		*why = "URL without a host";
		return NULL;
	}
	if (len > 1024) {
		*why = "URL longer than 1024 bytes";
		return NULL;
	}
	return strndup(s, len);
}

void
config_url_public(const char *url, char *out, size_t outlen)
{
	const char *auth = strstr(url, "://"), *at, *end;
	size_t n;

	auth = auth != NULL ? auth + 3 : url;
	end = auth + strcspn(auth, "/?#");
	/* The last '@' of the authority ends the userinfo. */
	at = NULL;
	for (const char *q = auth; q < end; q++)
		if (*q == '@')
			at = q;
	if (at == NULL)
		snprintf(out, outlen, "%s", url);
	else
		snprintf(out, outlen, "%.*s%s", (int)(auth - url), url, at + 1);
	n = strlen(out);
	while (n > 0 && out[n - 1] == '/')
		out[--n] = '\0';
}

void
config_upstream_clear(struct config_upstream *u)
{
	free(u->url);
	free(u->name);
	config_strlist_clear(&u->headers);
}

/* The settings an "upstream" line may give after its URL. */
static int
upstream_setting(struct config_upstream *u, const char *key, size_t klen,
    const char *val, const char **why)
{
	static const struct {
		const char *key;
		size_t off;
	} nums[] = {
		{ "connect-timeout",
		    offsetof(struct config_upstream, connect_timeout) },
		{ "first-byte-timeout",
		    offsetof(struct config_upstream, first_byte_timeout) },
		{ "negative-ttl",
		    offsetof(struct config_upstream, negative_ttl) },
		{ "error-ttl", offsetof(struct config_upstream, error_ttl) },
	};
	uint64_t n;
	size_t i;

	if (klen == 8 && strncmp(key, "min-rate", 8) == 0) {
		if (parse_number(val, no_suffixes, 0, &n, why) == -1 ||
		    n == 0 || n > 1U << 30) {
			*why = "min-rate= expects bytes per second, 1 to 2^30";
			return -1;
		}
		u->min_rate = (unsigned)n;
		return 0;
	}

	if (klen == 7 && strncmp(key, "enabled", 7) == 0) {
		if (config_parse_bool(val, &u->enabled) == -1) {
			*why = "enabled= expects on or off";
			return -1;
		}
		return 0;
	}
	for (i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		if (strlen(nums[i].key) != klen ||
		    strncmp(nums[i].key, key, klen) != 0)
			continue;
		if (parse_number(val, duration_suffixes, 0, &n, why) == -1 ||
		    n > 365 * DAY) {
			*why = "a duration from 0 to 365d expected after '='";
			return -1;
		}
		*(unsigned *)(void *)((char *)u + nums[i].off) = (unsigned)n;
		return 0;
	}
	*why = "unknown setting; expected enabled, connect-timeout, "
	       "first-byte-timeout, min-rate, negative-ttl or error-ttl";
	return -1;
}

/* "URL [key=value ...]", blank-separated. */
int
config_parse_upstream(const char *s, struct config_upstream *u,
    const char **why)
{
	const char *p, *end, *eq;
	char val[64];

	memset(u, 0, sizeof(*u));
	u->enabled = 1;
	u->connect_timeout = u->first_byte_timeout = u->min_rate = CONFIG_UNSET;
	u->negative_ttl = u->error_ttl = CONFIG_UNSET;
	for (p = s; *p != '\0' && !config_is_blank(*p); p++)
		continue;
	if ((u->url = parse_url(s, (size_t)(p - s), why)) == NULL)
		return -1;
	if ((u->name = strdup(u->url)) == NULL) {
		*why = "out of memory";
		config_upstream_clear(u);
		return -1;
	}
	config_url_public(u->url, u->name, strlen(u->name) + 1);
	for (;;) {
		while (config_is_blank(*p))
			p++;
		if (*p == '\0')
			return 0;
		for (end = p; *end != '\0' && !config_is_blank(*end); end++)
			continue;
		eq = memchr(p, '=', (size_t)(end - p));
		if (eq == NULL || eq == p || (size_t)(end - eq) > sizeof(val)) {
			*why = "expected key=value after the URL";
			break;
		}
		memcpy(val, eq + 1, (size_t)(end - eq - 1));
		val[end - eq - 1] = '\0';
		if (upstream_setting(u, p, (size_t)(eq - p), val, why) == -1)
			break;
		p = end;
	}
	config_upstream_clear(u);
	return -1;
}

/* The keyring apt uses for Debian's archives when none is named. */
#define DEFAULT_DEB_KEYRING "/usr/share/keyrings/debian-archive-keyring.gpg"

/* Split v at ',' into words (pointing into v): their count, or -1. */
static int
repo_list(char *v, char **out, size_t *n)
{
	char *w, *save;

	for (w = strtok_r(v, ",", &save); w != NULL;
	     w = strtok_r(NULL, ",", &save)) {
		if (*n == CONFIG_REPO_WORDS)
			return -1;
		out[(*n)++] = w;
	}
	return *n > 0 ? 0 : -1;
}

/* A word of a repo line: no '/' games, nothing a URL path cannot hold. */
static int
repo_word_ok(const char *w)
{
	if (w[0] == '\0' || strcmp(w, ".") == 0 || strstr(w, "..") != NULL)
		return 0;
	for (; *w != '\0'; w++)
		if (!isalnum((unsigned char)*w) && strchr("-_.+~/", *w) == NULL)
			return 0;
	return 1;
}

int
config_repo_parse(const char *line, struct config_repo *r, const char **why)
{
	char *w, *save, *p;
	size_t len;
	int nwords = 0;

	memset(r, 0, sizeof(*r));
	if (strlen(line) >= sizeof(r->text)) {
		*why = "too long";
		return -1;
	}
	strcpy(r->text, line);
	for (w = strtok_r(r->text, " \t", &save); w != NULL;
	     w = strtok_r(NULL, " \t", &save), nwords++) {
		if (nwords == 0) {
			if (strcmp(w, "deb") == 0)
				r->type = CONFIG_REPO_DEB;
			else if (strcmp(w, "rpm") == 0)
				r->type = CONFIG_REPO_RPM;
			else if (strcmp(w, "arch") == 0)
				r->type = CONFIG_REPO_ARCH;
			else {
				*why = "expected deb, rpm or arch first";
				return -1;
			}
			continue;
		}
		if (nwords == 1) {
			if (strncmp(w, "http://", 7) != 0 &&
			    strncmp(w, "https://", 8) != 0) {
				*why = "the URL must be http:// or https://";
				return -1;
			}
			len = strlen(w);
			while (len > 0 && w[len - 1] == '/')
				len--;
			if (len >= sizeof(r->url)) {
				*why = "URL too long";
				return -1;
			}
			memcpy(r->url, w, len);
			r->url[len] = '\0';
			continue;
		}
		if ((p = strchr(w, '=')) != NULL) {
			*p++ = '\0';
			if (strcmp(w, "arch") == 0 &&
			    r->type == CONFIG_REPO_DEB) {
				if (repo_list(p, r->archs, &r->narchs) == -1) {
					*why = "arch= needs 1 to 16 names";
					return -1;
				}
			} else if ((strcmp(w, "signed-by") == 0 &&
				       r->type == CONFIG_REPO_DEB) ||
			    (strcmp(w, "gpgkey") == 0 &&
				r->type == CONFIG_REPO_RPM) ||
			    (strcmp(w, "key") == 0 &&
				r->type == CONFIG_REPO_ARCH)) {
				if (p[0] != '/' ||
				    strlen(p) >= sizeof(r->keyring)) {
					*why = "the key file must be an "
					       "absolute path";
					return -1;
				}
				strcpy(r->keyring, p);
			} else if (strcmp(w, "check-valid-until") == 0 &&
			    r->type == CONFIG_REPO_DEB) {
				if (strcmp(p, "no") != 0 &&
				    strcmp(p, "yes") != 0) {
					*why =
					    "check-valid-until= is yes or no";
					return -1;
				}
				r->ignore_valid_until = strcmp(p, "no") == 0;
			} else {
				*why = "unknown setting for this kind of "
				       "repository";
				return -1;
			}
			continue;
		}
		if (!repo_word_ok(w)) {
			*why = "a suite, component or name with odd characters";
			return -1;
		}
		if (r->suite[0] == '\0' && r->type != CONFIG_REPO_RPM) {
			if (strlen(w) >= sizeof(r->suite)) {
				*why = "suite too long";
				return -1;
			}
			strcpy(r->suite, w);
		} else if (r->type == CONFIG_REPO_DEB &&
		    r->ncomponents < CONFIG_REPO_WORDS) {
			r->components[r->ncomponents++] = w;
		} else {
			*why = "too many words";
			return -1;
		}
	}
	if (r->url[0] == '\0' ||
	    (r->type == CONFIG_REPO_DEB &&
		(r->suite[0] == '\0' || r->ncomponents == 0)) ||
	    (r->type == CONFIG_REPO_ARCH && r->suite[0] == '\0')) {
		*why = r->type == CONFIG_REPO_DEB
		    ? "expected deb URL SUITE COMPONENT..."
		    : r->type == CONFIG_REPO_ARCH ? "expected arch URL NAME"
						  : "expected rpm URL";
		return -1;
	}
	if (r->type == CONFIG_REPO_DEB && r->keyring[0] == '\0')
		strcpy(r->keyring, DEFAULT_DEB_KEYRING);
	if (r->type == CONFIG_REPO_DEB && r->narchs == 0) {
		static char amd64[] = "amd64";

		r->archs[r->narchs++] = amd64;
	}
	config_url_public(r->url, r->name, sizeof(r->name) - 260);
	if (r->suite[0] != '\0') {
		len = strlen(r->name);
		snprintf(r->name + len, sizeof(r->name) - len, " %s", r->suite);
	}
	return 0;
}

/*
 * "URL|* Name: value": the URL of a listed upstream, or '*' for all; a
 * header name of token characters; a value without control characters,
 * so that no line can be split into two headers.
 */
int
config_check_header(const char *s, const char **why)
{
	const char *p, *name;

	for (p = s; *p != '\0' && !config_is_blank(*p); p++)
		continue;
	while (config_is_blank(*p))
		p++;
	for (name = p; *p != '\0' && *p != ':'; p++) {
		if (strchr("!#$%&'*+-.^_`|~", *p) == NULL &&
		    !((*p >= '0' && *p <= '9') ||
			((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z'))) {
			*why = "expected \"URL|* Name: value\" with a header "
			       "name of letters, digits and -";
			return -1;
		}
	}
	if (*p != ':' || p == name) {
		*why = "expected \"URL|* Name: value\"";
		return -1;
	}
	for (; *p != '\0'; p++) {
		if ((unsigned char)*p < 0x20 && *p != '\t') {
			*why = "control character in the header value";
			return -1;
		}
	}
	return 0;
}