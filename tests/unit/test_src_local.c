/*
 * tests/unit/test_src_local.c: indexed local files as a source
 * (sources/local.c), with the real index, pool and resolver, and a test
 * source after it (tests/tsrc.h) that shows when the request goes on.
 *
 * Checked: a file whose record still matches is served on the loop, at
 * once, as a static file server would (its path the X-DEBUGINFOD-FILE);
 * a record that no longer matches its file sends the request to a
 * worker, which indexes the file again and serves it when it still is
 * the id and kind asked for, drops it when it is gone or another id's
 * (the request then goes on to the next source), and tries the next
 * candidate; sections and sources are never local files.  Every wait is
 * bounded.
 */
#include "tests/rig.h"
#include "tests/tsrc.h"

#include "sources/scan.h"
#include "sources/sources.h"

static const char *ID_A = "a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4";
static const char *ID_B = "b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4";
static const char *ID_C = "c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4";

static struct tsrc next;
static const struct source *const table[] = { &source_local, &next.s, NULL };

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

static int
count_cb(const struct index_file *rec, void *arg)
{
	(*(int *)arg)++;
	return 0;
}

/* Records of (hex, kind) in the index. */
static int
indexed(const char *hex, enum elf_kind kind)
{
	struct index_reader *rd = index_reader_new(rig.idx);
	struct buildid id;
	const char *why;
	int n = 0;

	buildid_parse(&id, hex, strlen(hex), &why);
	if (rd != NULL && index_reader_begin(rd) == 0) {
		index_find(rd, &id, kind, count_cb, &n);
		index_reader_end(rd);
	}
	index_reader_free(rd);
	return n;
}

/* The size the index records for path; 0 when none. */
static uint64_t
indexed_size(const char *path)
{
	struct index_reader *rd = index_reader_new(rig.idx);
	struct index_file rec;
	uint64_t size = 0;

	if (rd != NULL && index_reader_begin(rd) == 0) {
		if (index_get_file(rd, path, &rec) == 0)
			size = rec.size;
		index_reader_end(rd);
	}
	index_reader_free(rd);
	return size;
}

static void
test_fast(void)
{
	struct client c;

	ok(rig_mkelf("a.debug",
	       "--type dyn --build-id a4a4a4a4a4a4a4a4a4a4a4"
	       "a4a4a4a4a4a4a4a4a4 --debug .debug_info:5000") &&
		rig_mkelf("a.exe",
		    "--type dyn --build-id a4a4a4a4a4a4a4a4a4a4"
		    "a4a4a4a4a4a4a4a4a4a4 --text 7000") &&
		index_path(at("a.debug")) && index_path(at("a.exe")),
	    "a debug file and its executable, indexed");
	client_get(&c, rig_path(ID_A, "debuginfo"));
	ok(c.answered && !c.waited,
	    "a debuginfo whose record matches: answered on the loop, at once");
	ok(c.kind == RESOLVE_FILE && c.complete &&
		client_body_is(&c, at("a.debug")),
	    "... the file, whole");
	is_str(c.source, "local", "... from local files");
	is_str(c.file, at("a.debug"), "... its path the X-DEBUGINFOD-FILE");
	is_int(c.result, METRICS_HIT, "... a HIT");
	is_int(next.lookups, 0, "... no other source asked");
	client_free(&c);
	client_get(&c, rig_path(ID_A, "executable"));
	ok(c.answered && !c.waited && client_body_is(&c, at("a.exe")),
	    "the executable of the id: its own file");
	client_free(&c);
}

static void
test_stale(void)
{
	struct client c;
	uint64_t was = indexed_size(at("a.debug"));

	/* The same id, rewritten: the record no longer matches. */
	rig_mkelf("a.debug",
	    "--type dyn --build-id a4a4a4a4a4a4a4a4a4a4a4a4a4"
	    "a4a4a4a4a4a4a4 --debug .debug_info:9000");
	client_get(&c, rig_path(ID_A, "debuginfo"));
	ok(c.waited && !c.answered,
	    "a record that no longer matches its file: a worker's job");
	RUN_UNTIL(c.ended);
	ok(c.kind == RESOLVE_FILE && client_body_is(&c, at("a.debug")),
	    "... which serves the file as it is now");
	ok(indexed_size(at("a.debug")) != was &&
		indexed_size(at("a.debug")) == c.size,
	    "... having indexed it again");
	client_free(&c);
	client_get(&c, rig_path(ID_A, "debuginfo"));
	ok(c.answered && !c.waited, "the next request: at once again");
	client_free(&c);

	/* Another id's file now. */
	rig_mkelf("a.exe",
	    "--type dyn --build-id b4b4b4b4b4b4b4b4b4b4b4b4b4b4"
	    "b4b4b4b4b4b4 --text 7100");
	client_get(&c, rig_path(ID_A, "executable"));
	RUN_UNTIL(c.ended);
	ok(c.waited && c.outcome == ANSWER_NOT_FOUND && next.lookups == 1,
	    "a file that is another id's now: the request goes on");
	is_int(indexed(ID_A, ELF_KIND_EXECUTABLE), 0,
	    "... the old id no longer indexed to it");
	is_int(indexed(ID_B, ELF_KIND_EXECUTABLE), 1, "... the new id is");
	client_free(&c);

	/* Gone. */
	unlink(at("a.debug"));
	client_get(&c, rig_path(ID_A, "debuginfo"));
	RUN_UNTIL(c.ended);
	ok(c.waited && c.outcome == ANSWER_NOT_FOUND && next.lookups == 2,
	    "a file that is gone: the request goes on");
	is_int(indexed(ID_A, ELF_KIND_DEBUGINFO), 0,
	    "... and it is dropped from the index");
	client_free(&c);
}

/* Of two candidates that changed, the one still of the id is served. */
static void
test_candidates(void)
{
	struct client c;

	rig_mkelf("c1.debug",
	    "--type dyn --build-id c4c4c4c4c4c4c4c4c4c4c4c4"
	    "c4c4c4c4c4c4c4c4 --debug .debug_info:4000");
	rig_mkelf("c2.debug",
	    "--type dyn --build-id c4c4c4c4c4c4c4c4c4c4c4c4"
	    "c4c4c4c4c4c4c4c4 --debug .debug_info:4000");
	index_path(at("c1.debug"));
	index_path(at("c2.debug"));
	is_int(indexed(ID_C, ELF_KIND_DEBUGINFO), 2, "two files of one id");
	unlink(at("c1.debug"));
	unlink(at("c2.debug"));
	rig_mkelf("c2.debug",
	    "--type dyn --build-id c4c4c4c4c4c4c4c4c4c4c4c4"
	    "c4c4c4c4c4c4c4c4 --debug .debug_info:6000");
	client_get(&c, rig_path(ID_C, "debuginfo"));
	RUN_UNTIL(c.ended);
	ok(c.waited && c.kind == RESOLVE_FILE &&
		client_body_is(&c, at("c2.debug")),
	    "both changed: the worker serves the one still of the id");
	client_free(&c);
}

static void
test_not_local(void)
{
	struct client c;
	unsigned before = next.lookups;

	client_get(&c,
	    "/buildid/c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4/"
	    "section/.debug_info");
	ok(c.answered && !c.waited && next.lookups == before + 1,
	    "a section is never a local file: passed on at once");
	client_free(&c);
	client_get(&c,
	    "/buildid/c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4/"
	    "source/usr/src/c.c");
	ok(c.answered && !c.waited && next.lookups == before + 2,
	    "... nor a source");
	client_free(&c);
}

int
main(void)
{
	if (rig_open("test_src_local", NULL, NULL, table) == -1)
		return 1;
	ts_init(&next, "next", 1, 0, 0, 0);

	test_fast();
	test_stale();
	test_candidates();
	test_not_local();

	rig_close();
	return tap_done();
}
