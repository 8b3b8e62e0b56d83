/*
 * conf/objstore.c: parse the "store" option and read the store's credentials.
 *
 * Everything here is checked so that the object keys and URLs built from
 * it need no escaping: a bucket of DNS-name characters, a prefix of
 * unreserved characters and '/', a region of letters, digits and '-'.
 * Credential files and variables hold secrets: nothing read from them is
 * ever quoted in a message.
 */
#include "conf/objstore.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STORE_WORD_MAX 1024

static int
is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/* The next blank-separated word of *p into w (len bytes): 0, or -1. */
static int
next_word(const char **p, char *w, size_t len)
{
	const char *s = *p, *end;

	while (is_blank(*s))
		s++;
	for (end = s; *end != '\0' && !is_blank(*end); end++)
		continue;
	if (end == s || (size_t)(end - s) >= len)
		return -1;
	memcpy(w, s, (size_t)(end - s));
	w[end - s] = '\0';
	*p = end;
	return 0;
}

static int
all_of(const char *s, const char *extra)
{
	for (; *s != '\0'; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
			strchr(extra, *s) != NULL))
			return 0;
	return 1;
}

/* http(s)://host[:port] with nothing after it but '/'s, which go. */
static char *
parse_endpoint(const char *s, const char **why)
{
	const char *host;
	size_t n = strlen(s);

	if (strncmp(s, "http://", 7) == 0)
		host = s + 7;
	else if (strncmp(s, "https://", 8) == 0)
		host = s + 8;
	else {
		*why = "ENDPOINT must be an http:// or https:// URL";
		return NULL;
	}
	while (n > (size_t)(host - s) && s[n - 1] == '/')
		n--;
	if (n == (size_t)(host - s) ||
	    memchr(host, '/', n - (size_t)(host - s)) != NULL ||
	    strpbrk(host, "@?#") != NULL) {
		*why = "ENDPOINT must be scheme://host[:port], without a "
		       "path, user or query";
		return NULL;
	}
	return strndup(s, n);
}

static int
store_setting(struct config_objstore *st, const char *w, const char **why)
{
	const char *eq = strchr(w, '='), *v;
	size_t n;

	if (eq == NULL || eq == w) {
		*why = "expected key=value after ENDPOINT BUCKET";
		return -1;
	}
	v = eq + 1;
	n = (size_t)(eq - w);
	if (n == 6 && strncmp(w, "prefix", 6) == 0) {
		size_t len = strlen(v);

		if (!all_of(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZ-._~/") ||
		    v[0] == '/' || strstr(v, "//") != NULL || len > 256) {
			*why = "prefix= takes letters, digits, - . _ ~ and "
			       "single inner '/', up to 256 bytes";
			return -1;
		}
		free(st->prefix);
		/* Kept with one '/' after it, unless empty. */
		if (asprintf(&st->prefix, "%s%s", v,
			len > 0 && v[len - 1] != '/' ? "/" : "") < 0) {
			st->prefix = NULL;
			*why = "out of memory";
			return -1;
		}
		return 0;
	}
	if (n == 6 && strncmp(w, "region", 6) == 0) {
		if (v[0] == '\0' || strlen(v) > 64 || !all_of(v, "-")) {
			*why = "region= takes lower-case letters, digits and -";
			return -1;
		}
		free(st->region);
		return (st->region = strdup(v)) == NULL ? -1 : 0;
	}
	if (n == 15 && strncmp(w, "access-key-file", 15) == 0) {
		if (v[0] == '\0') {
			*why = "access-key-file= needs a file";
			return -1;
		}
		free(st->key_file);
		return (st->key_file = strdup(v)) == NULL ? -1 : 0;
	}
	if (n == 10 && strncmp(w, "addressing", 10) == 0) {
		if (strcmp(v, "path") == 0)
			st->virtual_host = 0;
		else if (strcmp(v, "virtual") == 0)
			st->virtual_host = 1;
		else {
			*why = "addressing= takes path or virtual";
			return -1;
		}
		return 0;
	}
	*why = "unknown setting; expected prefix, region, access-key-file or "
	       "addressing";
	return -1;
}

int
config_objstore_parse(const char *s, struct config_objstore *st,
    const char **why)
{
	char w[STORE_WORD_MAX];
	size_t n;

	memset(st, 0, sizeof(*st));
	if (next_word(&s, w, sizeof(w)) == -1 || strcmp(w, "s3") != 0) {
		*why = "expected \"s3 ENDPOINT BUCKET [key=value ...]\"";
		return -1;
	}
	if (next_word(&s, w, sizeof(w)) == -1) {
		*why = "expected an ENDPOINT after s3";
		return -1;
	}
	if ((st->endpoint = parse_endpoint(w, why)) == NULL)
		goto fail;
	if (next_word(&s, w, sizeof(w)) == -1) {
		*why = "expected a BUCKET after the ENDPOINT";
		goto fail;
	}
	n = strlen(w);
	if (n < 3 || n > 63 || !all_of(w, "-.") || w[0] == '-' || w[0] == '.') {
		*why = "BUCKET must be 3 to 63 lower-case letters, digits, - "
		       "and .";
		goto fail;
	}
	if ((st->bucket = strdup(w)) == NULL ||
	    (st->prefix = strdup("")) == NULL ||
	    (st->region = strdup("us-east-1")) == NULL) {
		*why = "out of memory";
		goto fail;
	}
	while (next_word(&s, w, sizeof(w)) == 0)
		if (store_setting(st, w, why) == -1)
			goto fail;
	while (is_blank(*s))
		s++;
	if (*s != '\0') {
		*why = "a setting longer than 1024 bytes";
		goto fail;
	}
	return 0;
fail:
	config_objstore_free(st);
	return -1;
}

/* A credential: printable ASCII but blanks, 1 to 256 bytes. */
static int
good_secret(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 256)
		return 0;
	for (; *s != '\0'; s++)
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
			return 0;
	return 1;
}

/* The first line of fp, without its end, into buf: 0, or -1. */
static int
read_line(FILE *fp, char *buf, size_t len)
{
	if (fgets(buf, (int)len, fp) == NULL)
		return -1;
	buf[strcspn(buf, "\r\n")] = '\0';
	return 0;
}

int
config_objstore_credentials(struct config_objstore *st, const char *cwd,
    char *err, size_t errlen)
{
	char ak[300], sk[300];
	const char *a, *s;
	FILE *fp;
	char *abs;

	if (st->key_file != NULL) {
		if (st->key_file[0] != '/' && cwd != NULL) {
			if (asprintf(&abs, "%s/%s", cwd, st->key_file) < 0) {
				snprintf(err, errlen, "out of memory");
				return -1;
			}
			free(st->key_file);
			st->key_file = abs;
		}
		if ((fp = fopen(st->key_file, "re")) == NULL) {
			snprintf(err, errlen, "access-key-file %s: %s",
			    st->key_file, strerror(errno));
			return -1;
		}
		if (read_line(fp, ak, sizeof(ak)) == -1 ||
		    read_line(fp, sk, sizeof(sk)) == -1) {
			ak[0] = sk[0] = '\0';
		}
		fclose(fp);
		a = ak;
		s = sk;
		if (!good_secret(a) || !good_secret(s)) {
			snprintf(err, errlen,
			    "access-key-file %s: expected the access key id "
			    "on the first line and the secret key on the "
			    "second",
			    st->key_file);
			return -1;
		}
	} else {
		a = getenv("AWS_ACCESS_KEY_ID");
		s = getenv("AWS_SECRET_ACCESS_KEY");
		if (a == NULL || s == NULL || !good_secret(a) ||
		    !good_secret(s)) {
			snprintf(err, errlen,
			    "no credentials: give access-key-file= or set "
			    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
			return -1;
		}
	}
	free(st->access_key);
	free(st->secret_key);
	st->access_key = strdup(a);
	st->secret_key = strdup(s);
	explicit_bzero(sk, sizeof(sk));
	if (st->access_key == NULL || st->secret_key == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

void
config_objstore_free(struct config_objstore *st)
{
	if (st == NULL)
		return;
	free(st->endpoint);
	free(st->bucket);
	free(st->prefix);
	free(st->region);
	free(st->key_file);
	free(st->access_key);
	if (st->secret_key != NULL) {
		explicit_bzero(st->secret_key, strlen(st->secret_key));
		free(st->secret_key);
	}
	memset(st, 0, sizeof(*st));
}

int
config_objstore_url(const struct config_objstore *st, char *out, size_t len)
{
	const char *host = strstr(st->endpoint, "://") + 3;
	int w;

	if (st->virtual_host)
		w = snprintf(out, len, "%.*s%s.%s", (int)(host - st->endpoint),
		    st->endpoint, st->bucket, host);
	else
		w = snprintf(out, len, "%s/%s", st->endpoint, st->bucket);
	return w < 0 || (size_t)w >= len ? -1 : 0;
}

void
config_objstore_public(const struct config_objstore *st, char *out, size_t len)
{
	snprintf(out, len, "%s/%s/%s", st->endpoint, st->bucket, st->prefix);
}
