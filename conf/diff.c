/*
 * conf/diff.c: the settings two configurations differ in, and which of
 * them a running daemon cannot take (conf/diff.h).
 *
 * Two values are the same when their texts are (config_option_text), so
 * every option of the schema is compared the same way, a new one
 * included.  The settings that need a restart are listed here, once, with
 * why in a word each:
 *
 *   listen                  the sockets are bound once, before root is
 *                           given up, and each loop thread has its own
 *   threads, workers        the loop threads and the pool are started once
 *   cache-dir, upload-dir   locked, fenced in by the sandbox, and owned by
 *                           the index and the blob store
 *   index-map-size          the index's memory map
 *   user, sandbox           given up and entered for good at start-up
 *   store, store-*          the object store's client, breaker and upload
 *                           queue are one object made at start-up; a swap
 *                           would drop or duplicate queued uploads
 *   repo-ready-timeout      a start-up wait, over once the daemon is ready
 *   access-log              between stderr and a file only (see diff.h)
 */
#include "conf/diff.h"

#include <stdlib.h>
#include <string.h>

#include "conf/objstore.h"
#include "conf/options.h"

static const char *const restart_names[] = {
	"listen",
	"threads",
	"workers",
	"cache-dir",
	"upload-dir",
	"index-map-size",
	"user",
	"sandbox",
	"store",
	"store-timeout",
	"store-upload-queue",
	"store-multipart-size",
	"repo-ready-timeout",
};

#define NRESTART (sizeof(restart_names) / sizeof(restart_names[0]))

int
config_restart_only(const char *name, const struct config *old,
    const struct config *now)
{
	size_t i;

	if (strcmp(name, "access-log") == 0)
		return now->access_log &&
		    (now->access_log_file == NULL) !=
		    (old->access_log_file == NULL);
	for (i = 0; i < NRESTART; i++)
		if (strcmp(name, restart_names[i]) == 0)
			return 1;
	return 0;
}

void
config_diff_free(struct config_diff *d)
{
	size_t i;

	for (i = 0; i < d->n; i++) {
		free(d->v[i].was);
		free(d->v[i].now);
	}
	free(d->v);
	d->v = NULL;
	d->n = 0;
}

/* 1 when option i has the same value in a and b; -1 out of memory. */
static int
same(const struct config *a, const struct config *b, size_t i)
{
	char *ta = config_option_text(a, i, 0);
	char *tb = config_option_text(b, i, 0);
	int rc = ta == NULL || tb == NULL ? -1 : strcmp(ta, tb) == 0;

	free(ta);
	free(tb);
	return rc;
}

int
config_diff(const struct config *old, const struct config *now,
    struct config_diff *d)
{
	struct config_change *v, *c;
	const char *name;
	size_t i;
	int rc;

	memset(d, 0, sizeof(*d));
	for (i = 0; (name = config_option_name(i)) != NULL; i++) {
		if ((rc = same(old, now, i)) == 1)
			continue;
		if (rc == -1 ||
		    (v = realloc(d->v, (d->n + 1) * sizeof(*v))) == NULL)
			goto nomem;
		d->v = v;
		c = &v[d->n++];
		memset(c, 0, sizeof(*c));
		c->name = name;
		c->restart = config_restart_only(name, old, now);
		if (!c->restart)
			continue;
		if ((c->was = config_option_text(old, i, 1)) == NULL ||
		    (c->now = config_option_text(now, i, 1)) == NULL)
			goto nomem;
	}
	return 0;
nomem:
	config_diff_free(d);
	return -1;
}

/* *dst becomes a copy of src (NULL stays NULL): 0, or -1. */
static int
copy_string(char **dst, const char *src)
{
	char *s = NULL;

	if (src != NULL && (s = strdup(src)) == NULL)
		return -1;
	free(*dst);
	*dst = s;
	return 0;
}

static int
copy_listen(struct config *now, const struct config *old)
{
	struct config_listen *v = NULL;
	size_t i, n;

	if (old->nlisten > 0 && (v = calloc(old->nlisten, sizeof(*v))) == NULL)
		return -1;
	for (n = 0; n < old->nlisten; n++) {
		const struct config_listen *l = &old->listen[n];

		v[n] = *l;
		v[n].cert = v[n].key = v[n].client_ca = NULL;
		if (copy_string(&v[n].cert, l->cert) == -1 ||
		    copy_string(&v[n].key, l->key) == -1 ||
		    copy_string(&v[n].client_ca, l->client_ca) == -1) {
			n++;
			goto fail;
		}
	}
	for (i = 0; i < now->nlisten; i++) {
		free(now->listen[i].cert);
		free(now->listen[i].key);
		free(now->listen[i].client_ca);
	}
	free(now->listen);
	now->listen = v;
	now->nlisten = old->nlisten;
	return 0;
fail:
	for (i = 0; i < n; i++) {
		free(v[i].cert);
		free(v[i].key);
		free(v[i].client_ca);
	}
	free(v);
	return -1;
}

static int
copy_store(struct config *now, const struct config *old)
{
	const struct config_objstore *o = old->store;
	struct config_objstore *st = NULL;

	if (o != NULL) {
		if ((st = calloc(1, sizeof(*st))) == NULL)
			return -1;
		st->virtual_host = o->virtual_host;
		if (copy_string(&st->endpoint, o->endpoint) == -1 ||
		    copy_string(&st->bucket, o->bucket) == -1 ||
		    copy_string(&st->prefix, o->prefix) == -1 ||
		    copy_string(&st->region, o->region) == -1 ||
		    copy_string(&st->key_file, o->key_file) == -1 ||
		    copy_string(&st->access_key, o->access_key) == -1 ||
		    copy_string(&st->secret_key, o->secret_key) == -1) {
			config_objstore_free(st);
			free(st);
			return -1;
		}
	}
	config_objstore_free(now->store);
	free(now->store);
	now->store = st;
	return 0;
}

int
config_keep_restart(struct config *now, const struct config *old)
{
	now->threads = old->threads;
	now->workers = old->workers;
	now->index_map_size = old->index_map_size;
	now->sandbox = old->sandbox;
	now->store_timeout = old->store_timeout;
	now->store_upload_queue = old->store_upload_queue;
	now->store_multipart_size = old->store_multipart_size;
	now->repo_ready_timeout = old->repo_ready_timeout;
	if (copy_listen(now, old) == -1 ||
	    copy_string(&now->cache_dir, old->cache_dir) == -1 ||
	    copy_string(&now->upload_dir, old->upload_dir) == -1 ||
	    copy_string(&now->user, old->user) == -1 ||
	    copy_store(now, old) == -1)
		return -1;
	/* The access log's destination stays; while off, it is kept too. */
	if (config_restart_only("access-log", old, now)) {
		now->access_log = old->access_log;
		return copy_string(&now->access_log_file, old->access_log_file);
	}
	if (!now->access_log)
		return copy_string(&now->access_log_file, old->access_log_file);
	return 0;
}
