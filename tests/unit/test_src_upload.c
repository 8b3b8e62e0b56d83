/*
 * tests/unit/test_src_upload.c: PUT /buildid/ID/debuginfo and /executable
 * (sources/upload.c) through the real daemon/conn.c on the test's loop
 * (tests/httploop.h), with the real index, blob store, pool and request
 * path: local files, the cache, package members (a package made with tar,
 * passes on the real pool), the object store against a fake bucket
 * (tests/bucket.h), remembered misses, and a scripted source that plays
 * the upstreams (tests/tsrc.h); what an upload stored is then asked for
 * through the resolver (tests/rig.h).
 *
 * Checked: a verified upload is stored (201) as an upload, served from
 * the cache and clears the id's remembered misses; the same bytes again
 * are a 200, other bytes a 409, also against a local file of the id; a
 * cached copy of the same bytes becomes an upload (200); bytes that do
 * not verify are a 400; a chunked body a 411, one over max-upload-size a
 * 413, uploads over upload-size a 507, a section a 405; Expect:
 * 100-continue is answered before the body; a client that leaves
 * mid-body gets nothing and leaves no temp file.  Judged against every
 * source: other bytes than an indexed package member never extracted, an
 * upstream's file or the object store's are a 409 naming it, and what
 * that source has is served from then on; the same bytes a 200; a source
 * that fails (an upstream, the store) a 503 with Retry-After and nothing
 * stored; a remembered miss is asked past; a fill that lands between the
 * judgement and the publish (a scripted source after the others) is not
 * replaced: the upload is judged against it.  Eight uploads of one id at
 * once: one stored, the others judged against it.  Every wait is bounded.
 */
#include <dirent.h>

#include "tests/rig.h"

#include "sources/pass.h"
#include "sources/scan.h"
#include "sources/sources.h"
#include "sources/upload.h"
#include "tests/bucket.h"
#include "tests/httploop.h"
#include "tests/tsrc.h"

static const char *ID_A = "abababababababababababababababababababab";
static const char *ID_B = "bcbcbcbcbcbcbcbcbcbcbcbcbcbcbcbcbcbcbcbc";
static const char *ID_C = "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd";
static const char *ID_D = "dededededededededededededededededededede";
static const char *ID_L = "efefefefefefefefefefefefefefefefefefefef";

/* Package members, the upstreams, the store, a late fill. */
static const char *ID_P = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1";
static const char *ID_R = "a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2";
static const char *ID_U = "a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3";
static const char *ID_V = "a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4";
static const char *ID_O = "a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5";
static const char *ID_E = "a6a6a6a6a6a6a6a6a6a6a6a6a6a6a6a6a6a6a6a6";
static const char *ID_F = "a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7";
static const char *ID_N = "a8a8a8a8a8a8a8a8a8a8a8a8a8a8a8a8a8a8a8a8";
static const char *ID_X = "a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9";
static const char *ID_Y = "b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1";
static const char *ID_H = "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2";
static const char *ID_I = "b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3";

#define PACKAGE "dbg-1-1-x86_64.pkg.tar.gz"
#define HERD 8

/*
 * A fill that lands after the sources were asked, before the upload
 * publishes: armed with a file, the source's lookup publishes it under
 * the key asked (as a fill of http://late would), then passes.
 */
static const char *late_path;

static enum src_result
late_lookup(struct rq *rq)
{
	char hex[BUILDID_HEX_MAX];

	if (late_path != NULL) {
		buildid_format(&rq->rt->id, hex);
		rig_publish(hex, rq_kind(rq), "", late_path, "http://late");
		late_path = NULL;
	}
	return SRC_ABSENT;
}

static const struct source late = { .name = "late", .lookup = late_lookup };

static struct tsrc up;
static const struct source *const table[] = { &source_local, &source_cache,
	&source_package, &source_objstore, &source_negative, &up.s, &late,
	NULL };

static struct upload_deps ud;

/* The uploader, as the judgement tells upstreams. */
static const struct resolve_origin origin = { .peer = "127.0.0.1" };

/* PUT to upload_start, as serve.c hands it over; anything else 405. */
static void
handler_request(struct conn *c, void *state)
{
	const struct request *req = conn_request(c);
	const char *why;
	struct route rt;
	int rc;

	if ((rc = route_parse(&rt, req->target.p, req->target.n, &why)) != 0)
		conn_send_error(c, rc, why);
	else if (req->method == METHOD_PUT)
		upload_start(&ud, &rig.th, &rig.d, c, &rt, &origin);
	else
		conn_send_not_allowed(c, "PUT");
}

/* Begin a PUT of the file at path to target on a new connection c. */
static void
put_begin(struct hc *c, const char *target, const char *path)
{
	char head[512];
	size_t len;
	uint8_t *b = slurp(path, &len);

	hc_open(c);
	snprintf(head, sizeof(head),
	    "PUT %s HTTP/1.1\r\nHost: t\r\nContent-Length: %zu\r\n\r\n", target,
	    len);
	hc_say(c->fd, head);
	hc_send(c->fd, (const char *)b, len);
	free(b);
}

/* Its response (the loop turning meanwhile); the connection goes. */
static int
put_end(struct hc *c, struct hresp *r)
{
	int rc = hc_response(c, r, 0);

	hc_close(c);
	return rc;
}

/* PUT the file at path to target on a new connection: the response. */
static int
put_file(const char *target, const char *path, struct hresp *r)
{
	struct hc c;

	put_begin(&c, target, path);
	return put_end(&c, r);
}

static int
upload(const char *hex, const char *what, const char *path)
{
	struct hresp r;
	int status;

	put_file(rig_path(hex, what), path, &r);
	status = r.status;
	hresp_free(&r);
	return status;
}

/* Temp files left in the cache's tmp/ and the upload directory's. */
static int
temp_files(void)
{
	static const char *const dirs[] = { "cache/tmp", "uploads/tmp" };
	struct dirent *de;
	size_t i;
	DIR *d;
	int n = 0;

	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if ((d = opendir(at(dirs[i]))) == NULL)
			continue;
		while ((de = readdir(d)) != NULL)
			n += de->d_name[0] != '.';
		closedir(d);
	}
	return n;
}

static void
test_stored(void)
{
	struct hresp r;
	struct client c;
	struct cache_key k;
	char source[256], head[256], text[128];

	rig_mkelf("a.debug",
	    "--type dyn --build-id abababababababababababab"
	    "abababababababab --debug .debug_info:4000");
	rig_mkelf("a2.debug",
	    "--type dyn --build-id abababababababababababab"
	    "abababababababab --debug .debug_info:4500");
	rig_remember(ID_A, CACHE_DEBUGINFO, "", NEG_NOTFOUND, 600);
	rig_remember(ID_A, CACHE_SECTION, ".debug_info", NEG_NOTFOUND, 600);
	put_file(rig_path(ID_A, "debuginfo"), at("a.debug"), &r);
	is_int(r.status, 201, "an upload that verifies: 201");
	snprintf(text, sizeof(text), "%s: stored\n", ID_A);
	is_str(r.body, text, "... saying it is stored");
	hresp_free(&r);
	rig_key(&k, ID_A, CACHE_DEBUGINFO, "");
	ok(rig_cached_as(&k, at("a.debug")), "... in the cache");
	ok(rig_blob_head(&k, source, head, sizeof(source)) &&
		strcmp(source, "upload") == 0,
	    "... as an upload");
	ok(rig_negative(&k, NULL) == -1,
	    "... and the id's remembered misses are gone");
	rig_key(&k, ID_A, CACHE_SECTION, ".debug_info");
	ok(rig_negative(&k, NULL) == -1, "... its sections' too");
	client_get(&c, rig_path(ID_A, "debuginfo"));
	ok(c.answered && c.result == METRICS_HIT &&
		client_body_is(&c, at("a.debug")),
	    "it is served: a cache hit");
	client_free(&c);

	is_int(upload(ID_A, "debuginfo", at("a.debug")), 200,
	    "the same bytes again: 200");
	is_int(upload(ID_A, "debuginfo", at("a2.debug")), 409,
	    "other bytes of the id: 409");
	rig_key(&k, ID_A, CACHE_DEBUGINFO, "");
	ok(rig_cached_as(&k, at("a.debug")), "... which the cache keeps");
}

static void
test_refused(void)
{
	struct hresp r;

	rig_mkelf("b.exe",
	    "--type dyn --build-id bcbcbcbcbcbcbcbcbcbcbcbcbc"
	    "bcbcbcbcbcbcbc --text 3000");
	put_file(rig_path(ID_B, "debuginfo"), at("b.exe"), &r);
	ok(r.status == 400 && strstr(r.body, "refused: ") == r.body,
	    "an executable uploaded as debuginfo: 400, refused");
	hresp_free(&r);
	is_int(upload(ID_C, "executable", at("b.exe")), 400,
	    "a file of another build-id: 400");
	is_int(upload(ID_B, "executable", at("b.exe")), 201,
	    "... the same as the executable it is: 201");
	is_int(temp_files(), 0, "no temp file left behind");
}

static void
test_cached_copy(void)
{
	struct cache_key k;
	char source[256], head[256];

	rig_mkelf("d.debug",
	    "--type dyn --build-id dededededededededededede"
	    "dededededededede --debug .debug_info:3000");
	rig_publish(ID_D, CACHE_DEBUGINFO, "", at("d.debug"), "http://up");
	is_int(upload(ID_D, "debuginfo", at("d.debug")), 200,
	    "the bytes a fill cached: 200");
	rig_key(&k, ID_D, CACHE_DEBUGINFO, "");
	ok(rig_blob_head(&k, source, head, sizeof(source)) &&
		strcmp(source, "upload") == 0,
	    "... kept as an upload from now on");
}

static void
test_local(void)
{
	struct index_file rec;
	struct index_batch *b;
	struct stat st;
	char err[256];
	int fd;

	rig_mkelf("l.debug",
	    "--type dyn --build-id efefefefefefefefefefefef"
	    "efefefefefefefef --debug .debug_info:3000");
	rig_mkelf("l2.debug",
	    "--type dyn --build-id efefefefefefefefefefefef"
	    "efefefefefefefef --debug .debug_info:3300");
	fd = open(at("l.debug"), O_RDONLY);
	fstat(fd, &st);
	scan_identify(fd, at("l.debug"), &st, &rec, err, sizeof(err));
	close(fd);
	b = index_batch_begin(rig.idx, err, sizeof(err));
	ok(b != NULL && index_batch_put_file(b, &rec) == 0 &&
		index_batch_commit(b, err, sizeof(err)) == 0,
	    "a local file of an id");
	is_int(upload(ID_L, "debuginfo", at("l.debug")), 200,
	    "its bytes uploaded: 200, served already");
	is_int(upload(ID_L, "debuginfo", at("l2.debug")), 409,
	    "other bytes: 409");
}

static void
test_limits(void)
{
	static const char chunked[] =
	    "PUT /buildid/cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd/debuginfo "
	    "HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "5\r\nhello\r\n0\r\n\r\n";
	struct hresp r;
	struct hc c;

	hc_open(&c);
	hc_say(c.fd, chunked);
	hc_response(&c, &r, 0);
	is_int(r.status, 411, "a chunked upload: 411");
	hresp_free(&r);
	hc_close(&c);

	rig_mkelf("big.debug",
	    "--type dyn --build-id cdcdcdcdcdcdcdcdcdcdcdcd"
	    "cdcdcdcdcdcdcdcd --debug .debug_info:70000");
	is_int(upload(ID_C, "debuginfo", at("big.debug")), 413,
	    "one over max-upload-size: 413");
	rig_mkelf("c.debug",
	    "--type dyn --build-id cdcdcdcdcdcdcdcdcdcdcdcd"
	    "cdcdcdcdcdcdcdcd --debug .debug_info:30000");
	is_int(upload(ID_C, "debuginfo", at("c.debug")), 507,
	    "uploads that would exceed upload-size: 507");
	is_int(upload(ID_C, "section/.debug_info", at("c.debug")), 405,
	    "an upload of a section: 405");
	is_int(temp_files(), 0, "no temp file left behind");
}

static void
test_continue(void)
{
	struct hresp r;
	struct hc c;
	char head[512];
	size_t len;
	uint8_t *b;

	rig_mkelf("e.debug",
	    "--type dyn --build-id eaeaeaeaeaeaeaeaeaeaeaea"
	    "eaeaeaeaeaeaeaea --debug .debug_info:3000");
	b = slurp(at("e.debug"), &len);
	hc_open(&c);
	snprintf(head, sizeof(head),
	    "PUT /buildid/eaeaeaeaeaeaeaeaeaeaeaeaeaeaeaeaeaeaeaea/debuginfo "
	    "HTTP/1.1\r\nHost: t\r\nContent-Length: %zu\r\n"
	    "Expect: 100-continue\r\n\r\n",
	    len);
	hc_say(c.fd, head);
	hc_response(&c, &r, 1);
	is_int(r.status, 100, "Expect: 100-continue: 100 before the body");
	hresp_free(&r);
	hc_send(c.fd, (const char *)b, len);
	hc_response(&c, &r, 0);
	is_int(r.status, 201, "... then the upload's answer");
	hresp_free(&r);
	hc_close(&c);

	/* A client that leaves mid-body. */
	hc_open(&c);
	snprintf(head, sizeof(head),
	    "PUT /buildid/eaeaeaeaeaeaeaeaeaeaeaeaeaeaeaeaeaeaeaea/executable "
	    "HTTP/1.1\r\nHost: t\r\nContent-Length: %zu\r\n\r\n",
	    len);
	hc_say(c.fd, head);
	hc_send(c.fd, (const char *)b, len / 2);
	RUN_UNTIL(hl.t.conns != NULL && hl.t.conns->state == CS_BODY);
	ok(hl.t.conns != NULL && hl.t.conns->state == CS_BODY &&
		temp_files() == 1,
	    "mid-body: the body goes to a temp file");
	hc_close(&c);
	RUN_UNTIL(hloop_conns() == 0);
	ok(hloop_conns() == 0 && temp_files() == 0,
	    "a client that leaves mid-body: its connection and temp file go");
	free(b);
}

/* mkelf a debug file of hex with n bytes of .debug_info at name. */
static int
debug_file(const char *name, const char *hex, unsigned n)
{
	char args[256];

	snprintf(args, sizeof(args),
	    "--type dyn --build-id %s --debug .debug_info:%u", hex, n);
	return rig_mkelf(name, args);
}

/* 1 when a GET of hex's debuginfo now gives the bytes of the file at path. */
static int
served_as(const char *hex, const char *path)
{
	struct client c;
	int same;

	client_get(&c, rig_path(hex, "debuginfo"));
	RUN_UNTIL(c.ended);
	same = c.status == 200 && client_body_is(&c, path);
	client_free(&c);
	return same;
}

/* 1 when the answer r is status and its body holds text. */
static int
says(const struct hresp *r, int status, const char *text)
{
	if (r->status == status && r->body != NULL &&
	    strstr(r->body, text) != NULL)
		return 1;
	printf("# got %d: %s", r->status, r->body != NULL ? r->body : "");
	return 0;
}

/* 1 when hex's debuginfo is in the blob store as an upload. */
static int
uploaded(const char *hex)
{
	struct cache_key k;
	char source[256], head[256];

	rig_key(&k, hex, CACHE_DEBUGINFO, "");
	return rig_blob_head(&k, source, head, sizeof(source)) &&
	    strcmp(source, "upload") == 0;
}

/* A member of an indexed package that was never extracted. */
static void
test_package(void)
{
	struct hresp r;
	struct cache_key k;

	ok(debug_file("p.debug", ID_P, 900) &&
		debug_file("p2.debug", ID_P, 1000) &&
		debug_file("r.debug", ID_R, 900) &&
		shell("cd '%s' && d=root/usr/lib/debug/.build-id && "
		      "mkdir -p $d/a1 $d/a2 && cp p.debug $d/a1/%s.debug && "
		      "cp r.debug $d/a2/%s.debug && tar -czf " PACKAGE
		      " -C root .",
		    tmpdir, ID_P + 2, ID_R + 2) &&
		rig_index_package(at(PACKAGE)),
	    "a package of two debug files, indexed");
	rig_key(&k, ID_P, CACHE_DEBUGINFO, "");
	ok(!rig_cached(&k, NULL), "... none of them extracted");
	put_file(rig_path(ID_P, "debuginfo"), at("p2.debug"), &r);
	ok(says(&r, 409, "from package " PACKAGE),
	    "other bytes than a package member never extracted: 409, naming "
	    "the package");
	hresp_free(&r);
	ok(!uploaded(ID_P), "... nothing stored as an upload");
	ok(served_as(ID_P, at("p.debug")), "... the package's bytes served");
	is_int(upload(ID_P, "debuginfo", at("p.debug")), 200,
	    "the package's own bytes: 200");
	ok(served_as(ID_P, at("p.debug")), "... which are served");
	rig_key(&k, ID_R, CACHE_DEBUGINFO, "");
	ok(!rig_cached(&k, NULL), "another member, never extracted");
	is_int(upload(ID_R, "debuginfo", at("r.debug")), 200,
	    "... its own bytes uploaded: 200");
	ok(served_as(ID_R, at("r.debug")), "... and served");
}

/* An id only the upstreams have. */
static void
test_upstream(void)
{
	struct hresp r;
	struct hc c;

	ok(debug_file("u.debug", ID_U, 900) &&
		debug_file("u2.debug", ID_U, 1000) &&
		debug_file("v.debug", ID_V, 900),
	    "an upstream's files");
	up.produce = TS_HOLD;
	up.p = NULL;
	put_begin(&c, rig_path(ID_U, "debuginfo"), at("u2.debug"));
	RUN_UNTIL(up.p != NULL);
	ok(up.p != NULL,
	    "an upload of an id no one here has: the upstreams "
	    "are asked");
	ts_serve(up.p, at("u.debug"));
	put_end(&c, &r);
	ok(says(&r, 409, "from upstream http://fake"),
	    "other bytes than an upstream's: 409, naming it");
	hresp_free(&r);
	ok(!uploaded(ID_U), "... nothing stored as an upload");
	ok(served_as(ID_U, at("u.debug")), "... the upstream's bytes served");
	up.p = NULL;
	put_begin(&c, rig_path(ID_V, "debuginfo"), at("v.debug"));
	RUN_UNTIL(up.p != NULL);
	ts_serve(up.p, at("v.debug"));
	put_end(&c, &r);
	ok(says(&r, 200, "now kept as an upload"),
	    "the upstream's own bytes: 200, its copy kept as an upload");
	hresp_free(&r);
	ok(uploaded(ID_V) && served_as(ID_V, at("v.debug")), "... and served");
	up.produce = TS_ABSENT;
}

/* An id only the object store has. */
static void
test_objstore(void)
{
	struct hresp r;

	ok(debug_file("o.debug", ID_O, 900) &&
		debug_file("o2.debug", ID_O, 1000),
	    "the object store's file");
	object_add(ID_O, at("o.debug"), 200);
	put_file(rig_path(ID_O, "debuginfo"), at("o2.debug"), &r);
	ok(says(&r, 409, "from the object store"),
	    "other bytes than the object store's: 409, naming it");
	hresp_free(&r);
	ok(!uploaded(ID_O) && served_as(ID_O, at("o.debug")),
	    "... nothing stored as an upload, the store's bytes served");
}

/* Sources that cannot answer: the upload cannot be judged. */
static void
test_unjudged(void)
{
	struct hresp r;
	struct hc c;
	struct cache_key k;
	double unjudged = rig_metric("dbgmirror_uploads_total{result="
				     "\"unjudged\"}");

	ok(debug_file("e.debug", ID_E, 900) && debug_file("f.debug", ID_F, 900),
	    "two files no source has");
	up.produce = TS_HOLD;
	up.p = NULL;
	put_begin(&c, rig_path(ID_E, "debuginfo"), at("e.debug"));
	RUN_UNTIL(up.p != NULL);
	ts_end(up.p, UPSTREAM_FAILED, "upstream down");
	put_end(&c, &r);
	ok(says(&r, 503, "the upstreams did not answer (upstream down)"),
	    "the upstreams fail: 503, naming them");
	ok(hc_header(&r, "Retry-After") != NULL, "... with Retry-After");
	hresp_free(&r);
	rig_key(&k, ID_E, CACHE_DEBUGINFO, "");
	ok(!rig_cached(&k, NULL), "... nothing stored");
	up.produce = TS_ABSENT;
	/* The store fails: the upstreams answer the same flight, not found. */
	object_add(ID_F, NULL, 500);
	put_file(rig_path(ID_F, "debuginfo"), at("f.debug"), &r);
	ok(says(&r, 503, "the object store: "),
	    "the object store fails (the upstreams have nothing): 503, "
	    "naming the store");
	hresp_free(&r);
	rig_key(&k, ID_F, CACHE_DEBUGINFO, "");
	ok(!rig_cached(&k, NULL), "... nothing stored");
	is_int(temp_files(), 0, "... no temp file left behind");
	is_int(rig_metric("dbgmirror_uploads_total{result=\"unjudged\"}"),
	    unjudged + 2, "... counted as unjudged");
}

/* A remembered miss is no answer: the sources are asked again. */
static void
test_remembered(void)
{
	struct hresp r;
	struct hc c;

	ok(debug_file("n.debug", ID_N, 900), "a file no source has");
	rig_remember(ID_N, CACHE_DEBUGINFO, "", NEG_NOTFOUND, 600);
	up.produce = TS_HOLD;
	up.p = NULL;
	put_begin(&c, rig_path(ID_N, "debuginfo"), at("n.debug"));
	RUN_UNTIL(up.p != NULL);
	ok(up.p != NULL, "a remembered miss: the upstreams are asked again");
	ts_end(up.p, UPSTREAM_NOTFOUND, NULL);
	put_end(&c, &r);
	ok(says(&r, 201, "stored"), "... none has it: 201");
	hresp_free(&r);
	up.produce = TS_ABSENT;
}

/* A fill that lands between the judgement and the publish. */
static void
test_late_fill(void)
{
	struct hresp r;
	struct cache_key k;
	char source[256], head[256];

	ok(debug_file("x.debug", ID_X, 900) &&
		debug_file("x2.debug", ID_X, 1000) &&
		debug_file("y.debug", ID_Y, 900),
	    "files of two ids no source has");
	late_path = at("x.debug");
	put_file(rig_path(ID_X, "debuginfo"), at("x2.debug"), &r);
	ok(late_path == NULL, "a fill lands once every source was asked");
	ok(says(&r, 409, "from the cache (a copy from http://late)"),
	    "... other bytes: 409, naming it");
	hresp_free(&r);
	rig_key(&k, ID_X, CACHE_DEBUGINFO, "");
	ok(rig_blob_head(&k, source, head, sizeof(source)) &&
		strcmp(source, "http://late") == 0 &&
		rig_cached_as(&k, at("x.debug")),
	    "... the fill stays, the upload was not stored");
	late_path = at("y.debug");
	is_int(upload(ID_Y, "debuginfo", at("y.debug")), 200,
	    "the same bytes landing: 200");
	ok(uploaded(ID_Y), "... the fill's copy kept as the upload");
}

/* n PUTs of hex's debuginfo at once, files[i] each: their statuses. */
static void
put_herd(const char *hex, char files[HERD][32], int *status)
{
	struct hc c[HERD];
	struct hresp r;
	size_t i;

	for (i = 0; i < HERD; i++)
		put_begin(&c[i], rig_path(hex, "debuginfo"), at(files[i]));
	for (i = 0; i < HERD; i++) {
		put_end(&c[i], &r);
		status[i] = r.status;
		hresp_free(&r);
	}
}

/* Eight uploads of one id at once: one is stored, and is what is served. */
static void
test_herd(void)
{
	char files[HERD][32];
	int status[HERD], created = 0, other = 0, winner = -1;
	size_t i;

	for (i = 0; i < HERD; i++) {
		snprintf(files[i], sizeof(files[i]), "h%zu.debug", i);
		debug_file(files[i], ID_H, 800 + 16 * (unsigned)i);
	}
	put_herd(ID_H, files, status);
	for (i = 0; i < HERD; i++) {
		created += status[i] == 201;
		other += status[i] == 409;
		if (status[i] == 201)
			winner = (int)i;
	}
	ok(created == 1 && other == HERD - 1,
	    "eight uploads of other bytes at once: one 201, seven 409");
	ok(winner != -1 && served_as(ID_H, at(files[winner])),
	    "... the 201's bytes are served");
	debug_file("i.debug", ID_I, 800);
	for (i = 0; i < HERD; i++)
		snprintf(files[i], sizeof(files[i]), "i.debug");
	put_herd(ID_I, files, status);
	for (i = 0, created = other = 0; i < HERD; i++) {
		created += status[i] == 201;
		other += status[i] == 200;
	}
	ok(created == 1 && other == HERD - 1,
	    "eight uploads of the same bytes at once: one 201, seven 200");
}

int
main(void)
{
	static const char *const opts[] = { "--max-upload-size", "64K",
		"--package-coextract", "0", NULL };
	static const struct blob_limits lim = { 0, 90, 80, 0, 40000 };
	struct http_handler handler = { NULL, NULL, handler_request, NULL };
	struct objstore *os;
	struct passes *ps;
	struct evhttp *h;
	char shown[1400];

	if (testdir_make("test_src_upload") == -1 || upstream_init() == -1 ||
	    rig_open("test_src_upload", opts, &lim, table) == -1 ||
	    bucket_open(&h, &os, shown, sizeof(shown)) == -1)
		return 1;
	ts_init(&up, "upstream", 0, 1, 1, 0);
	up.lookup = TS_JOIN;
	up.produce = TS_ABSENT;
	ps = passes_new(&rig.d, rig.inbox);
	rig.d.packages = ps;
	ud.idx = rig.idx;
	ud.bs = rig.bs;
	ud.pool = rig.pool;
	if (hloop_open(&rig.cfg, &handler, rig.base, rig.inbox) == -1) {
		printf("Bail out! cannot listen\n");
		return 1;
	}

	test_stored();
	test_refused();
	test_cached_copy();
	test_local();
	test_limits();
	test_continue();
	test_package();
	test_upstream();
	test_objstore();
	test_unjudged();
	test_remembered();
	test_late_fill();
	test_herd();

	hloop_close();
	RUN_UNTIL(rig_flights() == 0);
	rig_stop();
	passes_free(ps);
	bucket_close(h, os);
	upstream_shutdown();
	rig_close();
	return tap_done();
}
