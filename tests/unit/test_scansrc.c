/*
 * tests/unit/test_scansrc.c: the scan of local files (sources/scanfile.c),
 * the source files their DWARF names, end to end with sources/localsrc.c.
 *
 * Programs are compiled here (cc -g) in a source tree under the scan
 * directory (one kept unstripped, one split into a .debug file, one that
 * includes a header from beside the scan directory), next to the
 * project's fixtures (tests/fixtures/build.sh: a dwz pair and its alt
 * file).  scan_run() records the sources each names that exist; the
 * lookup then opens those under the source root and refuses those
 * outside it; the dwz pair's relative names are found through their alt
 * file; a record made without its sources is read again though
 * unchanged; and scan_changes() drops a deleted file with its sources.
 * A missing tool (cc, objcopy, dwz) is a failure, not a skip.
 */
#include "sources/scan.h"

#include <sys/stat.h>

#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/index.h"
#include "cache/pkgindex.h"
#include "conf/config.h"
#include "indexer/elf.h"
#include "sources/localsrc.h"
#include "tests/shell.h"
#include "tests/tap.h"
#include "tests/testdir.h"

#define MAPSIZE (64ull << 20)

static struct index *idx;
static struct index_reader *rd;

static int
write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");
	int rc;

	if (fp == NULL)
		return 0;
	rc = fputs(text, fp) != EOF;
	return fclose(fp) == 0 && rc;
}

/* The programs, in root/src; 1 when all went well. */
static int
make_fixtures(void)
{
	return mkdir(at("root"), 0755) == 0 &&
	    mkdir(at("root/src"), 0755) == 0 &&
	    mkdir(at("root/bin"), 0755) == 0 &&
	    mkdir(at("root/.dwz"), 0755) == 0 && mkdir(at("tmp"), 0755) == 0 &&
	    write_file(at("root/src/util.h"),
		"static inline int twice(int x) { return 2 * x; }\n") &&
	    write_file(at("root/src/main.c"),
		"#include \"util.h\"\nint main(void) { return twice(0); }\n") &&
	    write_file(at("root/src/split.c"),
		"int main(void) { return 0; }\n") &&
	    mkdir(at("outside"), 0755) == 0 &&
	    write_file(at("outside/ext.h"),
		"static inline int thrice(int x) { return 3 * x; }\n") &&
	    write_file(at("root/src/ext.c"),
		"#include \"ext.h\"\nint main(void) { return thrice(0); }\n") &&
	    shell("cd '%s' && cc -g -O0 -gdwarf-4 -o ../bin/prog main.c && "
		  "cc -g -O0 -o split split.c && "
		  "objcopy --only-keep-debug split ../split.debug && "
		  "rm split && cc -g -O0 -I../../outside -o ext ext.c",
		at("root/src")) &&
	    /* The project's fixtures: a dwz pair and its alt file. */
	    shell("'%s/tests/fixtures/build.sh' '%s' >/dev/null 2>&1",
		getenv("top_srcdir") != NULL ? getenv("top_srcdir") : "..",
		at("root/fx"));
}

static int
stop_cb(const struct pkg_rec *r, void *arg)
{
	(void)r;
	(void)arg;
	return 1;
}

/* 1 when the index says file of build-id of names src. */
static int
named(const char *file, const char *src)
{
	struct buildid id;
	int rc = 0;

	if (readelf_buildid(file, &id) != 0 || index_reader_begin(rd) != 0)
		return 0;
	rc = pkgidx_find_local_source(rd, &id, src, stop_cb, NULL) == 1;
	index_reader_end(rd);
	return rc;
}

/* localsrc_open() of src for file's build-id: 0, INDEX_NOTFOUND, -1. */
static int
open_src(const struct config_strlist *roots, const char *file, const char *src)
{
	struct buildid id;
	struct stat st;
	int fd, rc;

	if (readelf_buildid(file, &id) != 0)
		return -1;
	rc = localsrc_open(rd, roots, &id, src, &fd, &st);
	if (rc == 0)
		close(fd);
	return rc;
}

int
main(void)
{
	struct scan_opts opts;
	struct index_scan out;
	struct index_file rec;
	struct index_batch *b;
	atomic_int cancel = 0;
	char *rootv[1], tmp[PATH_MAX], err[256];
	struct config_strlist roots = { rootv, 1 };
	struct scan_change change;
	struct buildid split_id;

	if (!ok(testdir_make("test_scansrc") == 0, "a temporary directory"))
		return tap_done();
	if (elf_init() == -1 || !make_fixtures()) {
		ok(0, "fixtures (cc, objcopy, dwz)");
		testdir_remove();
		return tap_done();
	}
	mkdir(at("index"), 0755);
	idx = index_open(at("index"), 0, MAPSIZE, err, sizeof(err));
	if (!ok(idx != NULL && (rd = index_reader_new(idx)) != NULL,
		"an index")) {
		testdir_remove();
		return tap_done();
	}
	rootv[0] = strdup(at("root"));
	snprintf(tmp, sizeof(tmp), "%s", at("tmp"));
	memset(&opts, 0, sizeof(opts));
	opts.roots = rootv;
	opts.nroots = 1;
	opts.threads = 1;
	opts.tmpdir = tmp;
	opts.cancel = &cancel;

	is_int(scan_run(idx, &opts, &out), 0, "scan");
	ok(named(at("root/bin/prog"), at("root/src/main.c")),
	    "an unstripped program names its source ...");
	ok(named(at("root/bin/prog"), at("root/src/util.h")),
	    "... and the header its line table lists");
	ok(named(at("root/split.debug"), at("root/src/split.c")),
	    "a split .debug file names its source");
	ok(!named(at("root/bin/prog"), at("root/src/split.c")),
	    "... each its own");
	is_int(open_src(&roots, at("root/bin/prog"), at("root/src/main.c")), 0,
	    "the source opens, under the scan directory (the source root)");
	is_int(open_src(&roots, at("root/split.debug"), at("root/src/split.c")),
	    0, "... the split file's too");
	ok(named(at("root/fx/root/usr/lib/debug/prog_a.debug"),
	       at("root/fx/src/prog_a.c")) &&
		named(at("root/fx/root/usr/lib/debug/prog_b.debug"),
		    at("root/fx/src/prog_b.c")),
	    "the dwz pair's relative names, through their alt file");
	ok(index_reader_begin(rd) == 0 &&
		index_get_file(rd, at("root/bin/prog"), &rec) == 0 &&
		rec.sources == 1,
	    "the file's record says its sources are recorded");
	index_reader_end(rd);

	/* Sources outside the root are recorded, never served. */
	ok(named(at("root/src/ext"), at("outside/ext.h")),
	    "a header outside the scan directory is recorded (it exists)");
	is_int(open_src(&roots, at("root/src/ext"), at("outside/ext.h")),
	    INDEX_NOTFOUND, "... but not served: not under the source root");
	is_int(open_src(&roots, at("root/src/ext"), at("root/src/ext.c")), 0,
	    "... its own source is");

	/* A record without its sources (the request path made it). */
	ok(index_reader_begin(rd) == 0 &&
		index_get_file(rd, at("root/bin/prog"), &rec) == 0,
	    "the program's record");
	rec.sources = 0;
	rec.path = strdup(rec.path);
	index_reader_end(rd);
	b = index_batch_begin(idx, err, sizeof(err));
	ok(b != NULL && index_batch_put_file(b, &rec) == 0 &&
		pkgidx_del_local_sources(b, rec.path) == 0 &&
		index_batch_commit(b, err, sizeof(err)) == 0,
	    "... made again without its sources");
	free((char *)rec.path);
	ok(!named(at("root/bin/prog"), at("root/src/main.c")),
	    "... which are gone");
	is_int(scan_run(idx, &opts, &out), 0, "rescan");
	is_int(out.read, 1, "... reads that unchanged file again, alone");
	ok(named(at("root/bin/prog"), at("root/src/main.c")),
	    "... and records its sources");

	/* A source deleted: it no longer opens, though still named. */
	unlink(at("root/src/util.h"));
	is_int(open_src(&roots, at("root/bin/prog"), at("root/src/util.h")),
	    INDEX_NOTFOUND, "a source deleted since: not found");

	/* The file deleted: scan_changes() drops it and its sources. */
	ok(readelf_buildid(at("root/split.debug"), &split_id) == 0,
	    "the split file's build-id");
	unlink(at("root/split.debug"));
	change.path = strdup(at("root/split.debug"));
	change.pkg = 0;
	change.dir = 0;
	is_int(scan_changes(idx, &opts, &change, 1, &out), 0,
	    "scan_changes() of the deleted file");
	is_int(out.removed, 1, "... one record removed");
	ok(index_reader_begin(rd) == 0 &&
		index_get_file(rd, change.path, &rec) == INDEX_NOTFOUND,
	    "... its record is gone");
	index_reader_end(rd);
	free(change.path);
	ok(index_reader_begin(rd) == 0 &&
		pkgidx_find_local_source(rd, &split_id, at("root/src/split.c"),
		    stop_cb, NULL) == 0,
	    "... and its sources' records with it");
	index_reader_end(rd);

	free(rootv[0]);
	index_reader_free(rd);
	index_close(idx);
	testdir_remove();
	return tap_done();
}
