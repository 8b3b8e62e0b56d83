/*
 * cache/key.c: cache keys, the SHA-256 of (build-id, kind, arg).
 *
 * The hashed bytes are the id's length and bytes, the kind, then arg with
 * its NUL, so no two different triples hash the same input.
 */
#include "cache/key.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <string.h>

/*
 * One digest context per thread, as keys are made on every request for a
 * cached or missing file; freed when its thread exits.  The digest is
 * fetched once: EVP_sha256() makes OpenSSL 3 look SHA-256 up by name, under
 * its locks, at every EVP_DigestInit_ex, which was most of the 9% of a
 * negative-entry hit's CPU spent in libcrypto.  It lives as long as the
 * process.
 */
static pthread_key_t ctx_key;
static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;
static int ctx_key_ok;
static EVP_MD *sha256;

static void
ctx_free(void *ctx)
{
	EVP_MD_CTX_free(ctx);
}

static void
ctx_key_init(void)
{
	ctx_key_ok = pthread_key_create(&ctx_key, ctx_free) == 0;
	sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
}

static EVP_MD_CTX *
thread_ctx(void)
{
	EVP_MD_CTX *ctx;

	pthread_once(&ctx_once, ctx_key_init);
	if (!ctx_key_ok)
		return NULL;
	if ((ctx = pthread_getspecific(ctx_key)) == NULL &&
	    (ctx = EVP_MD_CTX_new()) != NULL &&
	    pthread_setspecific(ctx_key, ctx) != 0) {
		EVP_MD_CTX_free(ctx);
		ctx = NULL;
	}
	return ctx;
}

void
cache_key_make(struct cache_key *k, const struct buildid *id,
    enum cache_kind kind, const char *arg)
{
	EVP_MD_CTX *ctx;
	unsigned char kb = (unsigned char)kind;
	unsigned len = 0;

	if (arg == NULL)
		arg = "";
	ctx = thread_ctx();
	if (ctx == NULL ||
	    EVP_DigestInit_ex(ctx, sha256 != NULL ? sha256 : EVP_sha256(),
		NULL) != 1 ||
	    EVP_DigestUpdate(ctx, &id->len, 1) != 1 ||
	    EVP_DigestUpdate(ctx, id->bytes, id->len) != 1 ||
	    EVP_DigestUpdate(ctx, &kb, 1) != 1 ||
	    EVP_DigestUpdate(ctx, arg, strlen(arg) + 1) != 1 ||
	    EVP_DigestFinal_ex(ctx, k->hash, &len) != 1 ||
	    len != CACHE_KEY_LEN) {
		/* Cannot happen with a working libcrypto; never collide. */
		memset(k->hash, 0xff, sizeof(k->hash));
	}
}

void
cache_key_hex(const struct cache_key *k, char *out)
{
	buildid_hex(k->hash, CACHE_KEY_LEN, out);
}

int
cache_key_equal(const struct cache_key *a, const struct cache_key *b)
{
	return memcmp(a->hash, b->hash, CACHE_KEY_LEN) == 0;
}

const char *
cache_kind_name(enum cache_kind kind)
{
	switch (kind) {
	case CACHE_DEBUGINFO:
		return "debuginfo";
	case CACHE_EXECUTABLE:
		return "executable";
	case CACHE_SECTION:
		return "section";
	case CACHE_SOURCE:
		return "source";
	case CACHE_SYMTAB:
		return "symtab";
	}
	return NULL;
}
