/*
 * tests/unit/test_src_upload.c: PUT /buildid/ID/debuginfo and /executable
 * (sources/upload.c) through the real daemon/conn.c on the test's loop
 * (tests/httploop.h), with the real index, blob store and pool; what an
 * upload stored is then asked for through the resolver (tests/rig.h).
 *
 * Checked: a verified upload is stored (201) as an upload, served from
 * the cache and clears the id's remembered misses; the same bytes again
 * are a 200, other bytes a 409, also against a local file of the id; a
 * cached copy of the same bytes becomes an upload (200); bytes that do
 * not verify are a 400; a chunked body a 411, one over max-upload-size a
 * 413, uploads over upload-size a 507, a section a 405; Expect:
 * 100-continue is answered before the body; a client that leaves
 * mid-body gets nothing and leaves no temp file.  Every wait is bounded.
 */
#include <dirent.h>

#include "tests/rig.h"

#include "sources/scan.h"
#include "sources/sources.h"
#include "sources/upload.h"
#include "tests/httploop.h"

static const char *ID_A = "abababababababababababababababababababab";
static const char *ID_B = "bcbcbcbcbcbcbcbcbcbcbcbcbcbcbcbcbcbcbcbc";
static const char *ID_C = "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd";
static const char *ID_D = "dededededededededededededededededededede";
static const char *ID_L = "efefefefefefefefefefefefefefefefefefefef";

static const struct source *const table[] = { &source_local, &source_cache,
	NULL };

static struct upload_deps ud;

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
		upload_start(&ud, c, &rt);
	else
		conn_send_not_allowed(c, "PUT");
}

/* PUT the file at path to target on a new connection: the response. */
static int
put_file(const char *target, const char *path, struct hresp *r)
{
	char head[512];
	struct hc c;
	size_t len;
	uint8_t *b = slurp(path, &len);
	int rc;

	hc_open(&c);
	snprintf(head, sizeof(head),
	    "PUT %s HTTP/1.1\r\nHost: t\r\nContent-Length: %zu\r\n\r\n", target,
	    len);
	hc_say(c.fd, head);
	hc_send(c.fd, (const char *)b, len);
	rc = hc_response(&c, r, 0);
	hc_close(&c);
	free(b);
	return rc;
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

int
main(void)
{
	static const char *const opts[] = { "--max-upload-size", "64K", NULL };
	static const struct blob_limits lim = { 0, 90, 80, 0, 40000 };
	struct http_handler handler = { NULL, NULL, handler_request, NULL };

	if (rig_open("test_src_upload", opts, &lim, table) == -1)
		return 1;
	ud.cfg = &rig.cfg;
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

	hloop_close();
	rig_close();
	return tap_done();
}
