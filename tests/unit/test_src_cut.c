/*
 * tests/unit/test_src_cut.c: sections cut from whole files (sources/cut.c)
 * on the real path: local files, the cache, packages (a real package,
 * indexed by sources/scan.c, extracted by a pass), the producer core, and
 * test sources (tests/tsrc.h) for a whole file's fill that the test plays
 * and for what comes after the cut.
 *
 * Checked: a section of a local debug file, cut from it; a section the
 * debug file lacks, cut from the executable; one neither has, passed on
 * to the section's own sources; a section of a package's debug file: one
 * pass brings the whole file (published, named as the index names the
 * member) and one cut answers the section (the assertions the old
 * test_resolve made with its fake producer); a whole file's failed fill
 * answering the section with a 503; the section's client leaving while
 * the whole file is filled, which goes on and is cut for the next
 * request.  Every wait is bounded.
 */
#include "tests/rig.h"
#include "tests/tsrc.h"

#include "cache/pkgindex.h"
#include "sources/pass.h"
#include "sources/sources.h"

static const char *ID_X = "a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7";
static const char *ID_Y = "b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7";
static const char *ID_P = "d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0";
static const char *ID_F = "e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7";
static const char *ID_G = "f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7";

static struct tsrc whole, next;
static const struct source *const table[] = { &source_local, &source_cache,
	&source_cut, &source_package, &whole.s, &next.s, NULL };

/* Index the file at path as a scan would; 1 when it was. */
static int
index_path(const char *path)
{
	struct index_file rec;
	struct index_batch *b;
	struct stat st;
	char err[256];
	int fd, rc = 0;

	if ((fd = open(path, O_RDONLY)) == -1)
		return 0;
	if (fstat(fd, &st) == 0 &&
	    scan_identify(fd, path, &st, &rec, err, sizeof(err)) == 0 &&
	    (b = index_batch_begin(rig.idx, err, sizeof(err))) != NULL)
		rc = index_batch_put_file(b, &rec) == 0 &&
		    index_batch_commit(b, err, sizeof(err)) == 0;
	close(fd);
	return rc;
}

/* 1 when c received exactly section name of the file at path. */
static int
is_section_of(const struct client *c, const char *path, const char *name)
{
	struct elf_section sec;
	char err[256];
	uint8_t *b;
	int fd, same = 0;

	if ((fd = open(path, O_RDONLY)) == -1)
		return 0;
	if (elf_find_section(fd, name, &sec, err, sizeof(err)) == 0 &&
	    c->got == sec.size && (b = malloc(sec.size)) != NULL) {
		same = pread(fd, b, sec.size, (off_t)sec.offset) ==
			(ssize_t)sec.size &&
		    memcmp(b, c->body, sec.size) == 0;
		free(b);
	}
	close(fd);
	return same;
}

static void
test_local(void)
{
	struct client c;
	char target[160];

	ok(rig_mkelf("x.debug",
	       "--type dyn --build-id a7a7a7a7a7a7a7a7a7a7a7"
	       "a7a7a7a7a7a7a7a7a7 --debug .debug_info:3000 "
	       "--debug .debug_line:700") &&
		index_path(at("x.debug")),
	    "a local debug file");
	snprintf(target, sizeof(target), "/buildid/%s/section/.debug_line",
	    ID_X);
	client_get(&c, target);
	RUN_UNTIL(c.ended);
	ok(c.status == 200 && c.kind == RESOLVE_FILE &&
		is_section_of(&c, at("x.debug"), ".debug_line"),
	    "a section of it: 200, the section's bytes, cut from it");
	is_str(c.source, "local", "... from local files");
	is_str(c.file, at("x.debug"), "... the whole file's path its file");
	is_int(next.lookups, 0, "... nothing after the cut asked");
	client_free(&c);
}

static void
test_executable(void)
{
	struct client c;
	char target[160];

	ok(rig_mkelf("y.debug",
	       "--type rel --build-id b7b7b7b7b7b7b7b7b7b7b7"
	       "b7b7b7b7b7b7b7b7b7 --debug .debug_info:3000") &&
		rig_mkelf("y.exe",
		    "--type dyn --build-id b7b7b7b7b7b7b7b7b7b7"
		    "b7b7b7b7b7b7b7b7b7b7 --text 4000") &&
		index_path(at("y.debug")) && index_path(at("y.exe")),
	    "a debug file without .text, and its executable");
	snprintf(target, sizeof(target), "/buildid/%s/section/.text", ID_Y);
	client_get(&c, target);
	RUN_UNTIL(c.ended);
	ok(c.status == 200 && is_section_of(&c, at("y.exe"), ".text"),
	    "a section the debug file lacks: cut from the executable");
	client_free(&c);

	snprintf(target, sizeof(target), "/buildid/%s/section/.no_such", ID_Y);
	client_get(&c, target);
	RUN_UNTIL(c.ended);
	ok(next.lookups == 1,
	    "a section neither has: passed on to the sources after the cut");
	ok(c.status == 404 && c.outcome == ANSWER_NOT_FOUND,
	    "... which end it not found");
	is_str(c.why, "no such section for this build-id", "... saying so");
	client_free(&c);
}

static int
found_cb(const struct pkg_rec *r, void *arg)
{
	(*(int *)arg)++;
	return 1;
}

static void
test_package(void)
{
	struct index_reader *rd;
	struct elf_section sec;
	struct cache_key k;
	struct client c;
	struct buildid id;
	char target[160], err[256], member[256], source[1024], head[1024];
	double passes;
	const char *why;
	int fd, found = 0;

	ok(rig_mkelf("whole.debug",
	       "--type rel --build-id d0d0d0d0d0d0d0d0d0d0"
	       "d0d0d0d0d0d0d0d0d0d0 --debug "
	       ".debug_info:3000"),
	    "mkelf: a debug file with a 3000-byte .debug_info");
	fd = open(at("whole.debug"), O_RDONLY);
	ok(fd != -1 &&
		elf_find_section(fd, ".debug_info", &sec, err, sizeof(err)) ==
		    0,
	    "... whose section table says where it is");
	if (fd != -1)
		close(fd);
	snprintf(member, sizeof(member), "/usr/lib/debug/.build-id/d0/%s.debug",
	    ID_P + 2);
	shell("cd '%s' && mkdir -p 'root/usr/lib/debug/.build-id/d0' && "
	      "cp whole.debug 'root%s' && "
	      "tar -czf p-1-1-x86_64.pkg.tar.gz -C root .",
	    tmpdir, member);
	rig_index_package(at("p-1-1-x86_64.pkg.tar.gz"));
	buildid_parse(&id, ID_P, strlen(ID_P), &why);
	rd = index_reader_new(rig.idx);
	if (rd != NULL && index_reader_begin(rd) == 0) {
		pkgidx_find(rd, &id, ELF_KIND_DEBUGINFO, found_cb, &found);
		index_reader_end(rd);
	}
	index_reader_free(rd);
	ok(found, "the package index has the member");

	passes = rig_metric("dbgmirror_package_passes_total");
	snprintf(target, sizeof(target), "/buildid/%s/section/.debug_info",
	    ID_P);
	client_get(&c, target);
	ok(c.waited && !c.answered, "a section request starts a package fill");
	RUN_UNTIL(c.ended);
	ok(c.ended, "the fill's end resumes the request");
	is_int(c.status, 200, "... a 200");
	is_int(c.size, sec.size, "... of the section's bytes, cut from it");
	ok(is_section_of(&c, at("whole.debug"), ".debug_info"),
	    "... byte for byte");
	is_int(rig_metric("dbgmirror_package_passes_total"), passes + 1,
	    "... one pass");
	rig_key(&k, ID_P, CACHE_DEBUGINFO, "");
	RUN_UNTIL(rig_cached(&k, NULL));
	ok(rig_cached_as(&k, at("whole.debug")),
	    "the pass published the whole debuginfo");
	ok(rig_blob_head(&k, source, head, sizeof(source)) &&
		strstr(source, "p-1-1-x86_64.pkg.tar.gz") != NULL,
	    "... of the package");
	ok(strstr(head, member) != NULL,
	    "... of the member, named by the index");
	client_free(&c);
	client_get(&c, target);
	RUN_UNTIL(c.ended);
	ok(c.status == 200 && c.size == sec.size,
	    "the section again: cut from the cached file");
	is_int(rig_metric("dbgmirror_package_passes_total"), passes + 1,
	    "... no second fill");
	client_free(&c);
}

static void
test_failure(void)
{
	struct client c;
	char target[160];

	whole.lookup = TS_JOIN;
	snprintf(target, sizeof(target), "/buildid/%s/section/.debug_info",
	    ID_F);
	client_get(&c, target);
	RUN_UNTIL(whole.p != NULL);
	ok(whole.produced == 1 && strstr(whole.path, "/debuginfo") != NULL,
	    "a section of a whole file held elsewhere: its debuginfo's fill");
	ts_end(whole.p, UPSTREAM_FAILED, "the package download failed");
	RUN_UNTIL(c.ended);
	ok(c.status == 503 && c.outcome == ANSWER_FILL_FAILED,
	    "the whole file's fill fails: the section's 503");
	is_str(c.why, "the package download failed", "... saying why");
	client_free(&c);
	whole.p = NULL;
}

static void
test_leaving(void)
{
	struct client c, again;
	struct cache_key k;
	char target[160];
	unsigned before = whole.produced;

	rig_mkelf("g.debug",
	    "--type dyn --build-id f7f7f7f7f7f7f7f7f7f7f7f7f7"
	    "f7f7f7f7f7f7f7 --debug .debug_info:3000 "
	    "--debug .debug_str:400");
	snprintf(target, sizeof(target), "/buildid/%s/section/.debug_str",
	    ID_G);
	client_get(&c, target);
	RUN_UNTIL(whole.p != NULL);
	ok(whole.produced == before + 1 && c.waited && !c.answered,
	    "a section waits on its whole file's fill");
	client_leave(&c);
	ts_serve(whole.p, at("g.debug"));
	rig_key(&k, ID_G, CACHE_DEBUGINFO, "");
	RUN_UNTIL(rig_flights() == 0);
	ok(rig_cached(&k, NULL) && c.answered == 0,
	    "its client left: the fill goes on and is kept, nobody answered");
	client_get(&again, target);
	RUN_UNTIL(again.ended);
	ok(again.status == 200 &&
		is_section_of(&again, at("g.debug"), ".debug_str"),
	    "... the next request's section cut from it");
	is_int(whole.produced, before + 1, "... without another fill");
	client_free(&c);
	client_free(&again);
}

int
main(void)
{
	struct passes *ps;

	if (rig_open("test_src_cut", NULL, NULL, table) == -1)
		return 1;
	ts_init(&whole, "whole", 1, 0, 1, 0);
	ts_init(&next, "next", 0, 0, 0, 0);
	ps = passes_new(&rig.d, rig.inbox);
	rig.d.packages = ps;

	test_local();
	test_executable();
	test_package();
	test_failure();
	test_leaving();

	RUN_UNTIL(rig_flights() == 0);
	rig_stop();
	passes_free(ps);
	rig_close();
	return tap_done();
}
