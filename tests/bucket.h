/*
 * tests/bucket.h: a fake S3 bucket on a unit test's own loop (libevent's
 * evhttp), and the object store (sources/objstore.c, fetchers/s3.c) made
 * against it, for the tests of the request path (tests/rig.h).
 *
 * The bucket answers GET from the objects a test adds (a file's bytes, a
 * status, or a lookup held until the test answers it), takes PUTs (the
 * last one kept with its metadata), HEAD and DELETE, and logs every
 * request, which asked() counts.  bucket_open() starts it and makes the
 * object store of the rig's configuration against it; bucket_close()
 * frees both, after rig_stop().
 *
 * Header-only; include it once, after tests/rig.h.
 */
#ifndef TESTS_BUCKET_H
#define TESTS_BUCKET_H

#include <sys/queue.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <strings.h>

#include "conf/objstore.h"
#include "sources/objstore.h"

#define OBJECTS_MAX 16
#define LOG_MAX 64

/*
 * An object of the bucket: a file's bytes, or a status to answer, or
 * (HELD) a lookup held until the test answers it 404.
 */
#define HELD 0
struct object {
	char name[256]; /* "/bucket/HEX/debuginfo" */
	char path[PATH_MAX];
	int status;
	struct evhttp_request *held;
};

/* A request the bucket got: "GET /bucket/..." */
static char seen[LOG_MAX][300];
static size_t nseen;
static struct object objects[OBJECTS_MAX];
static size_t nobjects;
/* The last upload: its object, body and metadata. */
static char put_name[256], put_meta[512];
/* An upload of this object is never answered: it is in flight at the end. */
static char put_hold[256];
static uint8_t *put_body;
static size_t put_len;

/* An object of hex's debuginfo: path's bytes, or status, or HELD. */
static void object_add(const char *hex, const char *path, int status)
    __attribute__((unused));

static void
object_add(const char *hex, const char *path, int status)
{
	struct object *o = &objects[nobjects++];

	snprintf(o->name, sizeof(o->name), "/bucket/%s/debuginfo", hex);
	snprintf(o->path, sizeof(o->path), "%s", path != NULL ? path : "");
	o->status = status;
}

/* Requests of method for hex's object. */
static int asked(const char *method, const char *hex) __attribute__((unused));

static int
asked(const char *method, const char *hex)
{
	size_t i, n = strlen(method);
	int k = 0;

	for (i = 0; i < nseen; i++)
		k += strncmp(seen[i], method, n) == 0 && seen[i][n] == ' ' &&
		    strstr(seen[i], hex) != NULL;
	return k;
}

static void
bucket_cb(struct evhttp_request *req, void *arg)
{
	const char *uri = evhttp_request_get_uri(req), *m = "?";
	struct evkeyvalq *in = evhttp_request_get_input_headers(req);
	struct evkeyvalq *out = evhttp_request_get_output_headers(req);
	struct evbuffer *body = evbuffer_new();
	struct evkeyval *kv;
	uint8_t *bytes;
	size_t i, len;

	switch (evhttp_request_get_command(req)) {
	case EVHTTP_REQ_GET:
		m = "GET";
		break;
	case EVHTTP_REQ_HEAD:
		m = "HEAD";
		break;
	case EVHTTP_REQ_PUT:
		m = "PUT";
		break;
	case EVHTTP_REQ_DELETE:
		m = "DELETE";
		break;
	default:
		break;
	}
	if (nseen < LOG_MAX)
		snprintf(seen[nseen++], sizeof(seen[0]), "%s %s", m, uri);
	if (strcmp(m, "HEAD") == 0 || strcmp(m, "DELETE") == 0) {
		evhttp_send_reply(req, strcmp(m, "HEAD") == 0 ? 200 : 204, "OK",
		    NULL);
	} else if (strcmp(m, "PUT") == 0) {
		snprintf(put_name, sizeof(put_name), "%s", uri);
		put_meta[0] = '\0';
		for (kv = TAILQ_FIRST(in); kv != NULL;
		     kv = TAILQ_NEXT(kv, next)) {
			if (strncasecmp(kv->key, "x-amz-meta-", 11) != 0)
				continue;
			snprintf(put_meta + strlen(put_meta),
			    sizeof(put_meta) - strlen(put_meta), "%s: %s\n",
			    kv->key, kv->value);
		}
		free(put_body);
		put_len =
		    evbuffer_get_length(evhttp_request_get_input_buffer(req));
		put_body = malloc(put_len + 1);
		evbuffer_remove(evhttp_request_get_input_buffer(req), put_body,
		    put_len);
		evhttp_add_header(out, "ETag", "\"e\"");
		if (strcmp(uri, put_hold) != 0)
			evhttp_send_reply(req, 200, "OK", NULL);
	} else {
		for (i = 0; i < nobjects; i++)
			if (strcmp(objects[i].name, uri) == 0)
				break;
		if (i == nobjects) {
			evbuffer_add_printf(body,
			    "<Error><Code>NoSuchKey</Code>"
			    "</Error>");
			evhttp_send_reply(req, 404, "Not Found", body);
		} else if (objects[i].status == HELD) {
			objects[i].held = req;
		} else if (objects[i].status != 200) {
			evhttp_send_reply(req, objects[i].status, "Failing",
			    body);
		} else {
			bytes = slurp(objects[i].path, &len);
			evbuffer_add(body, bytes, len);
			free(bytes);
			evhttp_add_header(out, "x-amz-meta-x-debuginfod-file",
			    "/usr/lib/debug/from-store.debug");
			evhttp_add_header(out, "x-amz-meta-last-modified",
			    "Tue, 14 Nov 2023 22:13:20 GMT");
			evhttp_send_reply(req, 200, "OK", body);
		}
	}
	evbuffer_free(body);
}

/* The bucket on 127.0.0.1, its port; -1. */
static int
bucket_start(struct evhttp **hp)
{
	int port = rig_http(hp, bucket_cb);

	if (port != -1)
		evhttp_set_allowed_methods(*hp,
		    EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT |
			EVHTTP_REQ_DELETE);
	return port;
}

/*
 * Start the bucket and make the object store of the rig's configuration
 * against it (rig.d.objstore), its public name in shown; the store's
 * credentials are checked with a HEAD.  0, or -1 having said why.
 */
static int bucket_open(struct evhttp **hp, struct objstore **osp, char *shown,
    size_t len) __attribute__((unused));

static int
bucket_open(struct evhttp **hp, struct objstore **osp, char *shown, size_t len)
{
	char store[128], err[256];
	int port;

	setenv("AWS_ACCESS_KEY_ID", "test", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
	if ((port = bucket_start(hp)) == -1) {
		printf("Bail out! no bucket\n");
		return -1;
	}
	snprintf(store, sizeof(store), "s3 http://127.0.0.1:%d bucket", port);
	if (config_set(&rig.cfg, "store", store, "test", &rig.diag) == -1 ||
	    config_objstore_credentials(rig.cfg.store, "/", err, sizeof(err)) ==
		-1 ||
	    (*osp = objstore_new(&rig.cfg, rig.base, rig.bs, err,
		 sizeof(err))) == NULL) {
		printf("Bail out! %s\n",
		    rig.diag.n > 0 ? rig.diag.msgs[0] : err);
		return -1;
	}
	rig.d.objstore = *osp;
	config_objstore_public(rig.cfg.store, shown, len);
	return 0;
}

/* After rig_stop(): the object store and the bucket. */
static void bucket_close(struct evhttp *h, struct objstore *os)
    __attribute__((unused));

static void
bucket_close(struct evhttp *h, struct objstore *os)
{
	objstore_free(os);
	evhttp_free(h);
	free(put_body);
	put_body = NULL;
}

#endif /* TESTS_BUCKET_H */
