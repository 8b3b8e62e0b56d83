/*
 * tests/unit/test_src_repo.c: remote repositories as a source of packages
 * (sources/repo.c) on the real path, against a fake repository served on
 * the test's own loop (libevent's evhttp) with .deb packages the test
 * builds with dpkg-deb; the repository's index records are written
 * directly (cache/repoidx.h), not refreshed.  Downloads go through
 * fetchers/repofetch.c and libcurl; members come out through the real
 * extraction, the package step's passes and the producer core.
 *
 * Checked: a debug file streams out of its package while the package
 * downloads, its last byte included (the member passed its own check)
 * while the rest of the package is held back, and is published once the
 * package's checksum passed; a herd costs one download; a member the
 * pass over the download does not meet (an executable whose .build-id
 * link the package lacks) waits for the package and is handed on, in the
 * same flight, to the package step; a failed download
 * (a checksum that differs, a 404 from the repository) is a 502, never a
 * 404, and is remembered for the package (502 with a Retry-After) without
 * another download; a package already in the package cache but not
 * indexed (a download that ended just before the fill joined it) is
 * indexed again, not downloaded again.  Every wait is bounded.
 */

#include <event2/buffer.h>
#include <event2/http.h>
#include <openssl/evp.h>

#include "tests/rig.h"
#include "tests/tsrc.h"

#include "cache/pkgindex.h"
#include "cache/repoidx.h"
#include "fetchers/upstream.h"
#include "sources/pass.h"
#include "sources/repo.h"
#include "sources/sources.h"

#define HERD 3

static const char *ID_D = "dadadadadadadadadadadadadadadadadadadada";
static const char *ID_E = "eaeaeaeaeaeaeaeaeaeaeaeaeaeaeaeaeaeaeaea";
static const char *ID_Y = "fafafafafafafafafafafafafafafafafafafafa";
static const char *ID_B = "bababababababababababababababababababab1";
static const char *ID_M = "cacacacacacacacacacacacacacacacacacacaca";

static struct tsrc up;
static const struct source *const table[] = { &source_cache, &source_repo,
	&source_package, &up.s, NULL };

/* ------------------------------------------------ the fake repository */

#define FILES_MAX 8

/* A package of the repository, sent whole or held after some bytes. */
struct rfile {
	char uri[256];
	char path[PATH_MAX];
	size_t hold_at; /* bytes sent before holding; SIZE_MAX: none */
	int gets;
	struct evhttp_request *held;
	uint8_t *bytes;
	size_t len;
};

static struct rfile files[FILES_MAX];
static size_t nfiles;
static int port;

static struct rfile *
rfile_add(const char *name, size_t hold_at)
{
	struct rfile *f = &files[nfiles++];

	snprintf(f->uri, sizeof(f->uri), "/debian/pool/main/%s", name);
	snprintf(f->path, sizeof(f->path), "%s", at(name));
	f->hold_at = hold_at;
	return f;
}

/* Send the rest of f's held answer. */
static void
rfile_release(struct rfile *f)
{
	struct evbuffer *b = evbuffer_new();

	evbuffer_add(b, f->bytes + f->hold_at, f->len - f->hold_at);
	evhttp_send_reply_chunk(f->held, b);
	evhttp_send_reply_end(f->held);
	evbuffer_free(b);
	f->held = NULL;
}

static void
repo_cb(struct evhttp_request *req, void *arg)
{
	const char *uri = evhttp_request_get_uri(req);
	struct evbuffer *b = evbuffer_new();
	struct rfile *f = NULL;
	char len[32];
	size_t i;

	for (i = 0; i < nfiles; i++)
		if (strcmp(files[i].uri, uri) == 0)
			f = &files[i];
	if (f == NULL || evhttp_request_get_command(req) != EVHTTP_REQ_GET) {
		/* The refreshes' index files, and what the repository lacks. */
		evhttp_send_reply(req, 404, "Not Found", NULL);
		evbuffer_free(b);
		return;
	}
	f->gets++;
	free(f->bytes);
	f->bytes = slurp(f->path, &f->len);
	snprintf(len, sizeof(len), "%zu", f->len);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Length", len);
	if (f->hold_at >= f->len) {
		evbuffer_add(b, f->bytes, f->len);
		evhttp_send_reply(req, 200, "OK", b);
	} else {
		evhttp_send_reply_start(req, 200, "OK");
		evbuffer_add(b, f->bytes, f->hold_at);
		evhttp_send_reply_chunk(req, b);
		f->held = req;
	}
	evbuffer_free(b);
}

/* --------------------------------------------------------- fixtures */

/* The repository's new generation, as a refresh would write it. */
static struct repoidx_writer *writer;

/*
 * Build package name (a .deb of package dir) from the tree dir/, and
 * record it in the repository's index with its size and SHA-256 (a wrong
 * one with wrong_sum).  0, or -1.
 */
static int
package(const char *name, const char *dir, int wrong_sum)
{
	unsigned char sha[32];
	char file[300];
	unsigned int n;
	size_t len;
	uint8_t *b;

	if (!shell("cd '%s' && mkdir -p %s/DEBIAN && printf 'Package: %s\\n"
		   "Version: 1.0\\nArchitecture: amd64\\nMaintainer: t <t@t>\\n"
		   "Description: fixture\\n' >%s/DEBIAN/control && "
		   "dpkg-deb --root-owner-group -Zxz --build %s %s >/dev/null",
		tmpdir, dir, dir, dir, dir, name))
		return -1;
	if ((b = slurp(at(name), &len)) == NULL)
		return -1;
	EVP_Digest(b, len, sha, &n, EVP_sha256(), NULL);
	free(b);
	if (wrong_sum)
		sha[0] ^= 0xff;
	snprintf(file, sizeof(file), "pool/main/%s", name);
	return repoidx_put_pkg(writer, name, file, len, sha);
}

static int
maps(const char *hex, enum repoidx_kind kind, const char *name)
{
	struct buildid id;
	const char *why;

	buildid_parse(&id, hex, strlen(hex), &why);
	return repoidx_put_id(writer, &id, kind, name, 0);
}

static int
fixtures(void)
{
	char names[1][1100], err[256];
	uint8_t keys[1][REPOIDX_KEY_LEN];
	static const uint8_t digest[REPOIDX_DIGEST_LEN];

	if (repos_config_keys(&rig.cfg, names, keys, 1) != 1 ||
	    (writer = repoidx_writer_new(rig.idx, keys[0], err, sizeof(err))) ==
		NULL)
		return 0;
	/* prog: D's debug file first, then a megabyte no codec shrinks. */
	if (!rig_mkelf("d.debug",
		"--type dyn --build-id dadadadadadadadadada"
		"dadadadadadadadadada --debug "
		".debug_info:300K") ||
	    !rig_mkelf("e.debug",
		"--type dyn --build-id eaeaeaeaeaeaeaeaeaea"
		"eaeaeaeaeaeaeaeaeaea --debug "
		".debug_info:3000") ||
	    !rig_mkelf("y.exe",
		"--type dyn --build-id fafafafafafafafafafafa"
		"fafafafafafafafafa --text 5000") ||
	    !rig_mkelf("b.debug",
		"--type dyn --build-id babababababababababa"
		"bababababababababab1 --debug "
		".debug_info:3000") ||
	    !shell("cd '%s' && d=prog/usr/lib/debug/.build-id && "
		   "mkdir -p $d/da $d/ea prog/usr/share/doc/prog tool/usr/bin "
		   "bad/$d/ba && cp d.debug $d/da/%s.debug && "
		   "cp e.debug $d/ea/%s.debug && "
		   "head -c 1500000 /dev/urandom "
		   ">prog/usr/share/doc/prog/noise && cp y.exe "
		   "tool/usr/bin/tool "
		   "&& cp b.debug bad/$d/ba/%s.debug",
		tmpdir, ID_D + 2, ID_E + 2, ID_B + 2) ||
	    package("prog_1.0_amd64.deb", "prog", 0) == -1 ||
	    package("tool_1.0_amd64.deb", "tool", 0) == -1 ||
	    package("bad_1.0_amd64.deb", "bad", 1) == -1 ||
	    repoidx_put_pkg(writer, "gone_1.0_amd64.deb",
		"pool/main/gone_1.0_amd64.deb", 1000,
		(const uint8_t[32]){ 1 }) == -1 ||
	    maps(ID_D, REPOIDX_DEBUGINFO, "prog_1.0_amd64.deb") == -1 ||
	    maps(ID_E, REPOIDX_DEBUGINFO, "prog_1.0_amd64.deb") == -1 ||
	    maps(ID_Y, REPOIDX_EXECUTABLE, "tool_1.0_amd64.deb") == -1 ||
	    maps(ID_B, REPOIDX_DEBUGINFO, "bad_1.0_amd64.deb") == -1 ||
	    maps(ID_M, REPOIDX_DEBUGINFO, "gone_1.0_amd64.deb") == -1)
		return 0;
	return repoidx_writer_commit(writer, clock_now(), digest, err,
		   sizeof(err)) == 0;
}

/* -------------------------------------------------------------- tests */

static int
any_cb(const struct pkg_rec *r, void *arg)
{
	return 1;
}

static int
indexed_member(const char *hex, enum elf_kind kind)
{
	struct index_reader *rd = index_reader_new(rig.idx);
	struct buildid id;
	const char *why;
	int n = 0;

	buildid_parse(&id, hex, strlen(hex), &why);
	if (rd != NULL && index_reader_begin(rd) == 0) {
		n = pkgidx_find(rd, &id, kind, any_cb, NULL) == 1;
		index_reader_end(rd);
	}
	index_reader_free(rd);
	return n;
}

static void
test_stream(struct rfile *prog)
{
	struct client cs[HERD];
	struct cache_key k;
	size_t i;
	int complete = 0;

	client_get(&cs[0], rig_path(ID_D, "debuginfo"));
	RUN_UNTIL(cs[0].ended);
	ok(prog->gets == 1 && prog->held != NULL,
	    "a debug file a repository maps: its package downloads");
	ok(cs[0].kind == RESOLVE_STREAM && cs[0].status == 200 &&
		cs[0].complete && client_body_is(&cs[0], at("d.debug")),
	    "... and the debug file comes out of it whole, its last byte "
	    "included, while the rest of the package is held back");
	rig_key(&k, ID_D, CACHE_DEBUGINFO, "");
	ok(!rig_cached_as(&k, at("d.debug")),
	    "... not published before the package's checksum");
	for (i = 1; i < HERD; i++)
		client_get(&cs[i], rig_path(ID_D, "debuginfo"));
	rfile_release(prog);
	for (i = 0; i < HERD; i++)
		RUN_UNTIL(cs[i].ended);
	for (i = 0; i < HERD; i++)
		complete += cs[i].status == 200 &&
		    client_body_is(&cs[i], at("d.debug"));
	is_int(complete, HERD,
	    "the package in and checked: every client has "
	    "the whole file");
	is_int(prog->gets, 1, "... out of one download");
	RUN_UNTIL(rig_flights() == 0);
	ok(rig_cached_as(&k, at("d.debug")), "... which is published");
	/* Indexed once the passes over it have ended. */
	RUN_UNTIL(indexed_member(ID_E, ELF_KIND_DEBUGINFO));
	ok(indexed_member(ID_E, ELF_KIND_DEBUGINFO),
	    "the package is indexed: its other members are the package "
	    "step's");
	for (i = 0; i < HERD; i++)
		client_free(&cs[i]);
}

static void
test_handed_on(struct rfile *tool)
{
	struct client c;
	double passes = rig_metric("dbgmirror_package_passes_total"), now;

	client_get(&c, rig_path(ID_Y, "executable"));
	RUN_UNTIL(tool->held != NULL);
	rig_spin(5);
	ok(tool->gets == 1 && c.waited && !c.answered,
	    "an executable a repository maps: it waits for its package");
	rfile_release(tool);
	RUN_UNTIL(c.ended);
	ok(c.status == 200 && client_body_is(&c, at("y.exe")),
	    "... and is extracted from it once it is in");
	/*
	 * A pass over the download looks for its .build-id link, which this
	 * package lacks (that pass counts when it got to open the download);
	 * the package step finds it by its build-id, in one pass.  The
	 * package is indexed once no pass reads the download.
	 */
	RUN_UNTIL(indexed_member(ID_Y, ELF_KIND_EXECUTABLE));
	now = rig_metric("dbgmirror_package_passes_total");
	ok(now >= passes + 1 && now <= passes + 2,
	    "... by the package step, in one pass of its own");
	is_int(up.produced + up.lookups, 0, "... nothing after asked");
	client_free(&c);
}

static void
test_failed(struct rfile *bad)
{
	struct client c;

	client_get(&c, rig_path(ID_B, "debuginfo"));
	RUN_UNTIL(c.ended);
	ok(bad->gets == 1 && c.status == 502 && c.outcome == ANSWER_FILL_FAILED,
	    "a package whose checksum differs from the index: 502");
	ok(strstr(c.why, "size or SHA256 differs") != NULL, "... saying why");
	client_free(&c);
	RUN_UNTIL(rig_flights() == 0);
	client_get(&c, rig_path(ID_B, "debuginfo"));
	ok(c.answered && c.status == 502 && c.outcome == ANSWER_REPO_FAILING &&
		c.seconds == 30,
	    "asked again: remembered, 502 with a Retry-After of error-ttl");
	is_int(bad->gets, 1, "... without another download");
	client_free(&c);

	client_get(&c, rig_path(ID_M, "debuginfo"));
	RUN_UNTIL(c.ended);
	ok(c.status == 502 && c.outcome == ANSWER_FILL_FAILED,
	    "a package the repository answers 404: 502, not a 404");
	ok(strstr(c.why, "HTTP status 404") != NULL, "... saying why");
	is_int(up.lookups + up.produced, 0,
	    "... and nothing after the repository asked");
	client_free(&c);
}

static int
keep_none(const char *path, void *arg)
{
	return strstr(path, (const char *)arg) == NULL;
}

static void
test_in_cache_unindexed(struct rfile *prog)
{
	struct index_batch *b;
	struct client c;
	uint64_t removed = 0;
	char err[256];

	b = index_batch_begin(rig.idx, err, sizeof(err));
	ok(b != NULL &&
		pkgidx_prune(b, keep_none, "prog_1.0_amd64.deb", &removed) ==
		    0 &&
		index_batch_commit(b, err, sizeof(err)) == 0 && removed == 1,
	    "the downloaded package's index record is lost");
	ok(!indexed_member(ID_E, ELF_KIND_DEBUGINFO),
	    "... its members unknown");
	client_get(&c, rig_path(ID_E, "debuginfo"));
	RUN_UNTIL(c.ended);
	ok(c.status == 200 && client_body_is(&c, at("e.debug")),
	    "a member of it asked: served");
	is_int(prog->gets, 1,
	    "... from the package in the package cache, not downloaded again");
	RUN_UNTIL(indexed_member(ID_E, ELF_KIND_DEBUGINFO));
	ok(indexed_member(ID_E, ELF_KIND_DEBUGINFO), "... indexed again");
	client_free(&c);
}

int
main(void)
{
	/* No sibling co-extracted: each member is asked for on its own. */
	static const char *const opts[] = { "--repo-refresh", "0",
		"--repo-ready-timeout", "0", "--package-coextract", "0", NULL };
	struct repos_deps rpd;
	struct rfile *prog, *tool, *bad;
	struct repos *rs;
	struct passes *ps;
	struct evhttp *h;
	char repo[128], err[256];

	if (testdir_make("test_src_repo") == -1 || upstream_init() == -1)
		return 1;
	if (rig_open("test_src_repo", opts, NULL, table) == -1 ||
	    (port = rig_http(&h, repo_cb)) == -1) {
		printf("Bail out! no repository\n");
		return 1;
	}
	snprintf(repo, sizeof(repo),
	    "deb http://127.0.0.1:%u/debian stable main", (unsigned)port);
	if (config_set(&rig.cfg, "repo", repo, "test", &rig.diag) == -1) {
		printf("Bail out! %s\n", rig.diag.msgs[0]);
		return 1;
	}
	if (!ok(fixtures(), "packages built, the repository's index written")) {
		printf("Bail out! no fixtures\n");
		return 1;
	}
	prog = rfile_add("prog_1.0_amd64.deb", 700000);
	tool = rfile_add("tool_1.0_amd64.deb", 500);
	bad = rfile_add("bad_1.0_amd64.deb", SIZE_MAX);
	memset(&rpd, 0, sizeof(rpd));
	rpd.cfg = &rig.cfg;
	rpd.idx = rig.idx;
	rpd.bs = rig.bs;
	rpd.ft = rig.ft;
	rpd.pool = rig.pool;
	rpd.inbox = rig.inbox;
	rpd.base = rig.base;
	ps = passes_new(&rig.d, rig.inbox);
	rig.d.packages = ps;
	rpd.passes = ps;
	if ((rs = repos_new(&rpd, err, sizeof(err))) == NULL) {
		printf("Bail out! %s\n", err);
		return 1;
	}
	rig.d.repos = rs;
	ts_init(&up, "upstream", 0, 1, 1, 0);
	up.lookup = TS_JOIN;

	test_stream(prog);
	test_handed_on(tool);
	test_failed(bad);
	test_in_cache_unindexed(prog);

	RUN_UNTIL(rig_flights() == 0);
	rig_stop();
	repos_free(rs);
	passes_free(ps);
	evhttp_free(h);
	while (nfiles > 0)
		free(files[--nfiles].bytes);
	upstream_shutdown();
	rig_close();
	return tap_done();
}
