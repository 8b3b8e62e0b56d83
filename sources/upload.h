/*
 * sources/upload.h: PUT /buildid/ID/debuginfo and /executable.
 *
 * The body goes to a temp file of the blob store (at most
 * max-upload-size), is verified like any fill (ELF, the build-id of the
 * path, .debug_* sections for debuginfo) on a worker, and is published
 * judged against what every source serves for the id (the request path
 * itself, upstreams included), and published through blob_publish as an
 * uploaded entry only where nothing is served: kept apart from the
 * evictable cache, under upload-size.  Answers: 201 stored; 200 the same
 * bytes are served already; 409 other bytes are (the text says from
 * where); 503 with Retry-After when a source could not answer (the
 * upload cannot be judged; nothing is stored); 400 verification failed;
 * 411 no Content-Length; 413 too large; 507 no room.  The access rules
 * (an upload-scoped token) are checked by the caller first.
 */
#ifndef SOURCES_UPLOAD_H
#define SOURCES_UPLOAD_H

struct blobstore;
struct conn;
struct index;
struct pool;
struct resolve_deps;
struct resolve_origin;
struct resolve_thread;
struct route;

struct upload_deps {
	struct index *idx;
	struct blobstore *bs;
	struct pool *pool;
};

/*
 * Take the PUT request on c for route rt (debuginfo or executable), from
 * the uploader o (copied; its strings must live as long as c's request),
 * on th's loop, whose resolver judges it, under the limits and against
 * the sources of rd (the request's: it must outlive the upload).
 */
void upload_start(const struct upload_deps *d, struct resolve_thread *th,
    const struct resolve_deps *rd, struct conn *c, const struct route *rt,
    const struct resolve_origin *o);

#endif /* SOURCES_UPLOAD_H */
