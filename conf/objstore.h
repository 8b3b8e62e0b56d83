/*
 * conf/objstore.h: the "store" option, a shared S3-compatible object store.
 *
 *   store = s3 ENDPOINT BUCKET [prefix=P] [region=R] [access-key-file=F]
 *           [addressing=path|virtual]
 *
 * The credentials come from access-key-file (the access key id on its
 * first line, the secret key on its second) or else from the environment
 * (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY); config_load() reads them, so
 * that --check-config reports a store it could not sign for.  The secret
 * is never shown: only config_objstore_public() spells the store.
 */
#ifndef CONF_OBJSTORE_H
#define CONF_OBJSTORE_H

#include <stddef.h>

struct config_objstore {
	char *endpoint; /* http:// or https://host[:port], no trailing '/' */
	char *bucket;
	char *prefix; /* "" or "a/b/": what every object key starts with */
	char *region; /* the SigV4 scope's region; us-east-1 by default */
	char *key_file; /* NULL: the credentials come from the environment */
	int virtual_host; /* addressing=virtual: BUCKET.host */
	char *access_key; /* from key_file or the environment */
	char *secret_key;
};

/* Parse a "store" value into st (zeroed first): 0, or -1 with *why. */
int config_objstore_parse(const char *s, struct config_objstore *st,
    const char **why);
/*
 * Read the credentials into st (key_file made absolute against cwd when
 * relative): 0, or -1 with the reason in err (which never quotes a key).
 */
int config_objstore_credentials(struct config_objstore *st, const char *cwd,
    char *err, size_t errlen);
void config_objstore_free(struct config_objstore *st);

/* The base URL of objects: ENDPOINT/BUCKET or BUCKET.host, and prefix. */
int config_objstore_url(const struct config_objstore *st, char *out,
    size_t len);
/* How the store is shown (logs, metrics): "ENDPOINT/BUCKET/PREFIX". */
void config_objstore_public(const struct config_objstore *st, char *out,
    size_t len);

#endif /* CONF_OBJSTORE_H */
