/*
 * sources/upload.h: PUT /buildid/ID/debuginfo and /executable.
 *
 * The body goes to a temp file of the blob store (at most
 * max-upload-size), is verified like any fill (ELF, the build-id of the
 * path, .debug_* sections for debuginfo) on a worker, and is published
 * through blob_publish as an uploaded entry: kept apart from the
 * evictable cache, under upload-size.  Answers: 201 stored; 200 the same
 * bytes were there already; 409 other bytes are; 400 verification
 * failed; 411 no Content-Length; 413 too large; 507 no room.  The access
 * rules (an upload-scoped token) are checked by the caller first.
 */
#ifndef SOURCES_UPLOAD_H
#define SOURCES_UPLOAD_H

struct blobstore;
struct config;
struct conn;
struct index;
struct pool;
struct route;

struct upload_deps {
	struct index *idx;
	struct blobstore *bs;
	struct pool *pool;
};

/*
 * Take the PUT request on c for route rt (debuginfo or executable), under
 * the limits of cfg (the request's).
 */
void upload_start(const struct upload_deps *d, const struct config *cfg,
    struct conn *c, const struct route *rt);

#endif /* SOURCES_UPLOAD_H */
