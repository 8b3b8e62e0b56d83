/*
 * tests/unit/test_pkgscan.c: the scan of package roots (sources/scanpkg.c),
 * end to end.
 *
 * A small program compiled with a build-id is split into a stripped
 * executable and its .debug file, packed by dpkg-deb as a .deb and by tar
 * as an Arch .pkg.tar.zst, next to a file that only looks like a package.
 * scan_run() then indexes them into a fresh index, and the members are
 * looked up with pkgidx_find(); rescans must skip unchanged packages,
 * re-read touched ones and drop deleted ones.  A missing tool is a failure,
 * not a skip.  Everything lives in one temporary directory.
 */
#include "sources/scan.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache/pkgindex.h"
#include "daemon/pool.h"
#include "tests/shell.h"
#include "tests/tap.h"
#include "tests/testdir.h"

#define MAPSIZE (64ull << 20)
#define ERRLEN 256
#define WAIT_SECONDS 60

static const char prog_c[] = "int main(void) { return 0; }\n";
static const char control[] = "Package: prog\nVersion: 1.0\n"
			      "Architecture: amd64\nMaintainer: t <t@t>\n"
			      "Description: fixture\n";

static struct buildid id;
static char dbgpath[PATH_MAX];

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

/* Build the program, its packages and a fake one; 1 when all went well. */
static int
make_fixtures(void)
{
	struct elf_info info;
	char err[ERRLEN], hex[BUILDID_HEX_MAX], dir[64], link[256];
	int fd, rc;

	if (!write_file(at("prog.c"), prog_c) ||
	    !write_file(at("control"), control) ||
	    !write_file(at("pkgs/fake.deb"), "not a package\n") ||
	    !write_file(at("pkgs/notes.txt"), "not a package name\n"))
		return 0;
	if (!ok(shell("cd '%s' && gcc -g -O0 -Wl,--build-id=sha1 -o prog "
		      "prog.c && objcopy --only-keep-debug prog prog.debug && "
		      "strip -o prog.bin prog",
		    tmpdir),
		"build and split a program"))
		return 0;
	if ((fd = open(at("prog.bin"), O_RDONLY)) == -1)
		return 0;
	rc = elf_read_info(fd, &info, err, sizeof(err));
	close(fd);
	if (!ok(rc == 0 && info.id.len > 0, "it has a build-id"))
		return 0;
	id = info.id;
	buildid_format(&id, hex);
	snprintf(dir, sizeof(dir), "/usr/lib/debug/.build-id/%.2s", hex);
	snprintf(link, sizeof(link), "%s/%s", dir, hex + 2);
	snprintf(dbgpath, sizeof(dbgpath), "%s.debug", link);
	return ok(shell("cd '%s' && mkdir -p root/usr/bin root%s && "
			"cp prog.bin root/usr/bin/prog && cp prog.debug root%s "
			"&& "
			"ln -s ../../../../bin/prog root%s && "
			"cp -a root debroot && mkdir debroot/DEBIAN && "
			"cp control debroot/DEBIAN/control && "
			"chmod -R go-w debroot && "
			"dpkg-deb --root-owner-group --build debroot "
			"pkgs/prog_1.0_amd64.deb >/dev/null && "
			"tar --zstd -cf pkgs/sub/prog-1.0-1-x86_64.pkg.tar.zst "
			"-C root .",
		      tmpdir, dir, dbgpath, link),
	    "pack it as a .deb and a .pkg.tar.zst");
}

/* What a find saw. */
struct seen {
	int n;
	int deb; /* members from the .deb */
	char member[PATH_MAX];
};

static int
seen_cb(const struct pkg_rec *r, void *arg)
{
	struct seen *s = arg;
	size_t len = strlen(r->package);

	s->n++;
	s->deb += len > 4 && strcmp(r->package + len - 4, ".deb") == 0;
	snprintf(s->member, sizeof(s->member), "%s", r->member);
	return 0;
}

static int
find(struct index *idx, enum elf_kind kind, struct seen *s)
{
	struct index_reader *rd = index_reader_new(idx);
	int rc = -1;

	memset(s, 0, sizeof(*s));
	if (rd != NULL && index_reader_begin(rd) == 0)
		rc = pkgidx_find(rd, &id, kind, seen_cb, s);
	index_reader_free(rd);
	return rc == 0 ? s->n : -1;
}

/* The scan's record in idx, into *rec; 1 when it could be read. */
static int
recorded(struct index *idx, struct index_scan *rec)
{
	struct index_reader *rd = index_reader_new(idx);
	int rc = 0;

	if (rd != NULL && index_reader_begin(rd) == 0)
		rc = index_get_scan(rd, rec) == 0;
	index_reader_free(rd);
	return rc;
}

/* A scan in a long job of a pool, as the daemon runs it. */
struct pooled {
	struct index *idx;
	const struct scan_opts *opts;
	struct index_scan out;
	int rc;
	int done;
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

static void
pooled_scan(void *arg)
{
	struct pooled *p = arg;
	int rc;

	rc = scan_run(p->idx, p->opts, &p->out);
	pthread_mutex_lock(&p->mu);
	p->rc = rc;
	p->done = 1;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

/*
 * Scan idx with opts in a long job of a pool of nthreads workers, at most
 * max_long on long jobs, reading at once as many as opts says; 0 when the
 * scan ended within WAIT_SECONDS, *out its counts.
 */
static int
scan_on_pool(struct index *idx, struct scan_opts *opts, unsigned nthreads,
    unsigned max_long, struct index_scan *out)
{
	struct pooled p = { idx, opts, { 0 }, -1, 0, PTHREAD_MUTEX_INITIALIZER,
		PTHREAD_COND_INITIALIZER };
	struct timespec until;
	struct pool *pool;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if ((pool = pool_new(nthreads, max_long)) == NULL)
		return -1;
	opts->pool = pool;
	if (pool_submit_long(pool, pooled_scan, NULL, NULL, &p) == -1)
		p.done = 1;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += WAIT_SECONDS;
	pthread_mutex_lock(&p.mu);
	while (!p.done && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&p.cv, &p.mu, &until);
	rc = p.done ? p.rc : -1;
	pthread_mutex_unlock(&p.mu);
	opts->pool = NULL;
	/* A scan stuck for good is a failure; its pool is left. */
	if (p.done)
		pool_free(pool);
	*out = p.out;
	return rc;
}

/*
 * The first scan again in fresh indexes, its reads shared on pools: with
 * the scan in the only long place (the scan reads all alone), and with
 * room for helpers.  Both must end and find the same.
 */
static void
test_pooled(const struct scan_opts *serial)
{
	static const unsigned max_long[] = { 1, 3 };
	struct scan_opts opts = *serial;
	struct index_scan out;
	struct index *idx;
	struct seen s;
	char name[32], what[80], err[ERRLEN];
	size_t i;

	opts.threads = 4;
	opts.pkg_threads = 4;
	for (i = 0; i < sizeof(max_long) / sizeof(max_long[0]); i++) {
		snprintf(name, sizeof(name), "index-pool%u", max_long[i]);
		idx = index_open(at(name), 0, MAPSIZE, err, sizeof(err));
		if (!ok(idx != NULL, "a fresh index")) {
			printf("# %s\n", err);
			continue;
		}
		snprintf(what, sizeof(what),
		    "max_long %u: a scan reading 4 at once ends", max_long[i]);
		is_int(scan_on_pool(idx, &opts, max_long[i] + 1, max_long[i],
			   &out),
		    0, what);
		ok(out.packages == 2 && out.members == 4 && out.failed == 1,
		    "... having read what the scan alone read");
		is_int(find(idx, ELF_KIND_DEBUGINFO, &s), 2,
		    "... and indexed it");
		index_close(idx);
	}
}

/* VmHWM, the peak resident set of this process, in KiB; -1 unknown. */
static long
peak_rss_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *fp = fopen("/proc/self/status", "r");

	while (fp != NULL && fgets(line, sizeof(line), fp) != NULL)
		if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
			break;
	if (fp != NULL)
		fclose(fp);
	return kib;
}

/*
 * Memory does not follow what packages decompress to.  A debug file
 * whose compressed .debug_info holds PKG_MEM_SECTION MiB (zeros after
 * mkelf's first MiB: the package stays small) is indexed in two packages
 * at once: reading its sources must not take its sections into memory
 * (libdw did, and the scan peaked past twice their size).  The peak is
 * reset first (clear_refs; where the kernel refuses, the earlier scans
 * count too, and they are small).
 */
#define PKG_MEM_SECTION 192
#define PKG_MEM_PEAK_MAX (96 << 10) /* KiB */

static void
test_memory(struct scan_opts *opts)
{
	struct index *idx;
	struct index_scan out;
	char err[ERRLEN], *roots[1];
	long peak;
	int fd;

	if (!ok(shell("cd '%s' && mkdir -p big big1/usr/lib/debug "
		      "big1/DEBIAN && \"${top_builddir:-$OLDPWD}\"/tests/mkelf "
		      "--type rel --build-id "
		      "0123456789abcdef0123456789abcdef01234567 --debug "
		      ".debug_info:%dM big.raw && objcopy "
		      "--compress-debug-sections=zlib-gabi big.raw "
		      "big1/usr/lib/debug/big.debug && rm big.raw && "
		      "sed s/prog/big1/ control > big1/DEBIAN/control && "
		      "cp -a big1 big2 && sed -i s/big1/big2/ "
		      "big2/DEBIAN/control && for p in big1 big2; do "
		      "dpkg-deb --root-owner-group --build $p big/$p.deb "
		      ">/dev/null || exit 1; done",
		    tmpdir, PKG_MEM_SECTION),
		"two packages of a debug file with a big compressed section"))
		return;
	idx = index_open(at("index-big"), 0, MAPSIZE, err, sizeof(err));
	roots[0] = strdup(at("big"));
	opts->pkg_roots = roots;
	if ((fd = open("/proc/self/clear_refs", O_WRONLY)) != -1) {
		if (write(fd, "5", 1) != 1)
			printf("# clear_refs: the peak is not reset\n");
		close(fd);
	}
	is_int(idx != NULL ? scan_run(idx, opts, &out) : -1, 0,
	    "scan the big packages");
	peak = peak_rss_kib();
	printf("# peak RSS %ld KiB, sections of %d MiB\n", peak,
	    PKG_MEM_SECTION);
	is_int(out.packages, 2, "both read");
	ok(peak > 0 && peak < PKG_MEM_PEAK_MAX,
	    "the peak RSS stays under 96 MiB");
	if (idx != NULL)
		index_close(idx);
	free(roots[0]);
}

int
main(void)
{
	struct index *idx;
	struct index_scan out, rec;
	struct scan_opts opts;
	struct seen s;
	atomic_int cancel = 0;
	char *roots[1], tmp[PATH_MAX], err[ERRLEN];

	if (!ok(testdir_make("test_pkgscan") == 0,
		"make a temporary directory"))
		return tap_done();
	if (elf_init() == -1 || mkdir(at("pkgs"), 0755) == -1 ||
	    mkdir(at("pkgs/sub"), 0755) == -1 || mkdir(at("tmp"), 0755) == -1 ||
	    !make_fixtures()) {
		ok(0, "fixtures");
		testdir_remove();
		return tap_done();
	}
	idx = index_open(at("index"), 0, MAPSIZE, err, sizeof(err));
	if (!ok(idx != NULL, "open an index")) {
		testdir_remove();
		return tap_done();
	}
	snprintf(tmp, sizeof(tmp), "%s", at("tmp"));
	roots[0] = strdup(at("pkgs"));
	memset(&opts, 0, sizeof(opts));
	opts.threads = 1;
	opts.pkg_roots = roots;
	opts.npkg_roots = 1;
	opts.pkg_threads = 2;
	opts.tmpdir = tmp;
	opts.cancel = &cancel;

	is_int(scan_run(idx, &opts, &out), 0, "first scan");
	ok(out.pkg_seen == 3 && out.pkg_queued == 3,
	    "three files named like packages seen, all new");
	is_int(out.packages, 2, "two packages read");
	is_int(out.members, 4, "two servable members in each");
	is_int(out.failed, 1, "the fake .deb failed");
	is_int(find(idx, ELF_KIND_DEBUGINFO, &s), 2,
	    "the debuginfo is found in both packages");
	is_str(s.member, dbgpath, "under its .build-id path");
	is_int(s.deb, 1, "one of them from the .deb");
	is_int(find(idx, ELF_KIND_EXECUTABLE, &s), 2,
	    "the executable too, not its symbolic link");
	is_str(s.member, "/usr/bin/prog", "under its own path");
	test_pooled(&opts);

	is_int(scan_run(idx, &opts, &out), 0, "rescan");
	is_int(out.packages, 0, "unchanged packages are not read again");
	is_int(out.failed, 0, "nor is the fake one");
	is_int(out.removed, 0, "nothing removed");
	is_int(find(idx, ELF_KIND_DEBUGINFO, &s), 2, "both still found");

	ok(shell("touch -d '2001-02-03 04:05:06' '%s'",
	       at("pkgs/prog_1.0_amd64.deb")),
	    "touch the .deb");
	is_int(scan_run(idx, &opts, &out), 0, "rescan after the touch");
	is_int(out.packages, 1, "the touched package is read again");
	is_int(find(idx, ELF_KIND_DEBUGINFO, &s), 2, "both still found");

	/* Short of disk space: left as it was, read at the next scan. */
	ok(shell("touch -d '2002-02-03 04:05:06' '%s'",
	       at("pkgs/prog_1.0_amd64.deb")),
	    "touch the .deb again");
	opts.min_free_pct = 100;
	is_int(scan_run(idx, &opts, &out), 0, "rescan with no disk to spare");
	is_int(out.packages, 0, "the package is not taken as read");
	is_int(out.failed, 1, "it is counted as failed");
	is_int(find(idx, ELF_KIND_DEBUGINFO, &s), 2, "its old members stay");
	opts.min_free_pct = 0;
	is_int(scan_run(idx, &opts, &out), 0, "rescan with room");
	is_int(out.packages, 1, "now it is read");

	/* Without a tmpdir nothing is read, and nothing is dropped. */
	unlink(at("pkgs/prog_1.0_amd64.deb"));
	opts.tmpdir = NULL;
	is_int(scan_run(idx, &opts, &out), 0, "scan without a tmpdir");
	is_int(out.removed, 0, "drops nothing");
	is_int(find(idx, ELF_KIND_DEBUGINFO, &s), 2, "both still found");

	opts.tmpdir = tmp;
	is_int(scan_run(idx, &opts, &out), 0, "rescan after the delete");
	is_int(out.removed, 1, "the deleted package is dropped");
	is_int(find(idx, ELF_KIND_DEBUGINFO, &s), 1, "one package left");
	is_int(s.deb, 0, "the Arch one");

	/* A root may name one package; the others under pkgs/ are dropped. */
	free(roots[0]);
	roots[0] = strdup(at("pkgs/sub/prog-1.0-1-x86_64.pkg.tar.zst"));
	is_int(scan_run(idx, &opts, &out), 0, "scan one package file");
	is_int(out.packages, 0, "unchanged: not read");
	is_int(out.removed, 1, "the fake .deb's record is dropped");
	is_int(find(idx, ELF_KIND_EXECUTABLE, &s), 1, "the package is kept");

	ok(recorded(idx, &rec) && rec.finished == out.finished &&
		rec.ended == rec.finished && rec.outcome == INDEX_SCAN_DONE &&
		rec.pkg_seen == 1 && rec.removed == 1,
	    "the index records how the scan ended, and its counts");

	test_memory(&opts);

	cancel = 1;
	is_int(scan_run(idx, &opts, &out), -1, "a cancelled scan fails");
	ok(recorded(idx, &rec) && rec.finished != 0 &&
		rec.outcome == INDEX_SCAN_CANCELLED,
	    "... and is recorded as ended, cancelled");

	free(roots[0]);
	index_close(idx);
	testdir_remove();
	return tap_done();
}
