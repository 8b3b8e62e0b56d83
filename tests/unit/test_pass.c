/*
 * tests/unit/test_pass.c: sources/pass.c over a package that is still
 * being written (a download: struct pass_growth), with the real producer
 * core, index, blob store, flights and pool; the test writes the package,
 * piece by piece, and plays the downloading source (a source of its own
 * whose fills join the passes, the growth's callbacks).
 *
 * The package (dpkg-deb, gzip): the first debug file, 150 KB of noise, the
 * second debug file, the dwz alt file both name, 150 KB more.  Checked,
 * as the test writes it: the first member's readers may send its last
 * byte long before the package is whole; the alt file's flight exists
 * before that byte, named by the member's .gnu_debugaltlink (no index maps
 * its id: passes_find finds it); a fill of the second, made while the
 * pass runs, joins it; one pass serves the three; nothing is published
 * before the package's checksum is known; passed, the three are
 * published; failed, none is, and their flights end failed.  Every wait
 * is bounded; the fixtures are built with gcc, dwz and dpkg-deb (a missing
 * tool is a failure).
 */
#include <sys/stat.h>

#include <event2/event.h>
#include <event2/thread.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache/blobstore.h"
#include "cache/flight.h"
#include "cache/index.h"
#include "conf/config.h"
#include "daemon/clock.h"
#include "daemon/pool.h"
#include "indexer/elf.h"
#include "resolver/produce.h"
#include "resolver/resolve.h"
#include "resolver/source.h"
#include "sources/pass.h"
#include "tests/shell.h"
#include "tests/tap.h"
#include "tests/testdir.h"

#define MAPSIZE (64ull << 20)
#define WAIT_SECONDS 60
#define PIECE 4096

static struct event_base *base;
static struct passes *ps;
static struct producers *pc;
static struct resolve_deps rd;

/* The package as the test writes it, and what the passes did with it. */
struct growing {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char path[PATH_MAX]; /* the file being written */
	uint64_t written;
	int complete;
	uint64_t waits_at; /* a pass waits for more past this; else 0 */
	int opens; /* passes that read it */
	size_t (*done)(void *darg, int ok, const char *why); /* checked */
	void *darg;
	int handed_on;
	struct pass_growth gr;
};

static struct growing tg;

static int
t_open(void *arg, char *why, size_t len)
{
	struct growing *g = arg;
	int fd;

	pthread_mutex_lock(&g->mu);
	g->opens++;
	pthread_mutex_unlock(&g->mu);
	if ((fd = open(g->path, O_RDONLY | O_CLOEXEC)) == -1)
		snprintf(why, len, "cannot open the package");
	return fd;
}

static int
t_grow(uint64_t have, void *arg)
{
	struct growing *g = arg;
	int rc;

	pthread_mutex_lock(&g->mu);
	g->waits_at = have;
	pthread_cond_broadcast(&g->cv);
	while (g->written <= have && !g->complete)
		pthread_cond_wait(&g->cv, &g->mu);
	g->waits_at = 0;
	rc = g->written > have ? 1 : 0;
	pthread_mutex_unlock(&g->mu);
	return rc;
}

static void
t_checked(void *arg, size_t (*done)(void *darg, int ok, const char *why),
    void *darg)
{
	struct growing *g = arg;

	g->done = done;
	g->darg = darg;
}

static void
t_hand_on(void *arg, struct prod *pr)
{
	struct growing *g = arg;

	g->handed_on++;
	produce_end(pr, FLIGHT_FAILED, "handed on");
}

static void
t_hold(void *arg, int take)
{
}

/* The test's source: its fills join passes over the growing package. */
static void
t_produce(struct prod *p)
{
	if (passes_join_growing(ps, p, &tg.gr, 0) == -1)
		produce_end(p, FLIGHT_FAILED, "no pass");
}

static void
t_lock(const struct resolve_deps *d, int take)
{
	passes_lock(ps, take);
}

static void
t_release(void *data)
{
	free(data);
}

static const struct source t_source = {
	.name = "growing",
	.held = 1,
	.produce = t_produce,
	.produce_anywhere = 1,
	.lock = t_lock,
	.release = t_release,
};

static const struct source *const table[] = { &t_source, NULL };

/* A description made with printf's format (a few rotating buffers). */
static const char *say(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

static const char *
say(const char *fmt, ...)
{
	static char bufs[4][256];
	static unsigned next;
	char *b = bufs[next++ % 4];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b, sizeof(bufs[0]), fmt, ap);
	va_end(ap);
	return b;
}

/* Run the loop until cond(arg), WAIT_SECONDS at most: 1 when it holds. */
static int
wait_for(int (*cond)(void *arg), void *arg)
{
	struct timespec pause = { 0, 2000000 };
	int64_t end = clock_mono_ns() + (int64_t)WAIT_SECONDS * 1000000000;

	while (!cond(arg)) {
		if (clock_mono_ns() > end)
			return 0;
		event_base_loop(base, EVLOOP_NONBLOCK);
		nanosleep(&pause, NULL);
	}
	return 1;
}

static int
is_verified(void *arg)
{
	struct flight_view v;

	flight_view(arg, &v);
	return v.verified || v.state == FLIGHT_READY;
}

static int
has_ended(void *arg)
{
	struct flight_view v;

	flight_view(arg, &v);
	return v.state != FLIGHT_WAITING && v.state != FLIGHT_STREAMING;
}

/* The pass waits for bytes past all written, or f is verified. */
static int
caught_up_or(void *arg)
{
	int waiting;

	pthread_mutex_lock(&tg.mu);
	waiting = tg.waits_at != 0 && tg.waits_at >= tg.written;
	pthread_mutex_unlock(&tg.mu);
	return waiting || is_verified(arg);
}

static int
checked_asked(void *arg)
{
	return tg.done != NULL;
}

/* Append the next piece of the package (the whole rest when all). */
static void
write_more(const char *pkg, size_t total, int all)
{
	size_t n = total - tg.written;
	int fd;

	if (!all && n > PIECE)
		n = PIECE;
	if (n > 0) {
		fd = open(tg.path, O_WRONLY | O_CLOEXEC);
		if (fd == -1 ||
		    pwrite(fd, pkg + tg.written, n, (off_t)tg.written) !=
			(ssize_t)n)
			printf("# cannot write the package\n");
		if (fd != -1)
			close(fd);
	}
	pthread_mutex_lock(&tg.mu);
	tg.written += n;
	tg.complete = tg.written == total;
	pthread_cond_broadcast(&tg.cv);
	pthread_mutex_unlock(&tg.mu);
}

/*
 * Write the package until f is verified (or all is written): the bytes
 * written by then.
 */
static uint64_t
write_until(const char *pkg, size_t total, struct flight *f)
{
	while (tg.written < total) {
		write_more(pkg, total, 0);
		if (!wait_for(caught_up_or, f))
			break;
		if (is_verified(f))
			break;
	}
	return tg.written;
}

/* A fill of (id, debuginfo) for member, made by the test's source. */
static struct flight *
fill(const char *package, const char *member, const struct buildid *id,
    int *created)
{
	struct pass_want *pw;
	struct prod_what w;
	struct cache_key k;

	memset(&w, 0, sizeof(w));
	w.id = *id;
	w.kind = CACHE_DEBUGINFO;
	w.reach = RESOLVE_ALL;
	if ((pw = calloc(1, sizeof(*pw))) == NULL)
		return NULL;
	snprintf(pw->package, sizeof(pw->package), "%s", package);
	snprintf(pw->member, sizeof(pw->member), "%s", member);
	cache_key_make(&k, id, CACHE_DEBUGINFO, "");
	return produce_join(pc, &k, &w, 0, pw, created);
}

/* 1 when (id, debuginfo) is published in the cache. */
static int
published(const struct buildid *id)
{
	struct index_reader *r = index_reader_new(rd.idx);
	struct cache_key k;
	struct blob_info bi;
	int rc = 0;

	cache_key_make(&k, id, CACHE_DEBUGINFO, "");
	if (r != NULL && index_reader_begin(r) == 0) {
		rc = blob_lookup(r, &k, &bi) == 0;
		index_reader_end(r);
	}
	index_reader_free(r);
	return rc;
}

/* The debug file's member path of id. */
static void
debug_member(const struct buildid *id, char *out, size_t len)
{
	char hex[BUILDID_HEX_MAX];

	buildid_format(id, hex);
	snprintf(out, len, "/usr/lib/debug/.build-id/%.2s/%s.debug", hex,
	    hex + 2);
}

/* The ids the fixtures' build wrote. */
static int
read_ids(struct buildid *a, struct buildid *b, struct buildid *alt)
{
	char line[256], name[64], hex[200];
	const char *why;
	FILE *fp;
	int got = 0;

	if ((fp = fopen(at("fx/ids"), "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), fp) != NULL) {
		if (sscanf(line, "%63s %199s", name, hex) != 2)
			continue;
		if (strcmp(name, "prog_a") == 0)
			got += buildid_parse(a, hex, strlen(hex), &why) == 0;
		else if (strcmp(name, "prog_b") == 0)
			got += buildid_parse(b, hex, strlen(hex), &why) == 0;
		else if (strcmp(name, "shapes") == 0)
			got += buildid_parse(alt, hex, strlen(hex), &why) == 0;
	}
	fclose(fp);
	return got == 3 ? 0 : -1;
}

/*
 * One download of the package: the first member asked for, then the
 * second while the pass runs; the package's checksum then passes (ok) or
 * not.
 */
static void
round_of(int ok_sum, const char *pkg, size_t total, const struct buildid *first,
    const struct buildid *second, const struct buildid *alt)
{
	const char *label = ok_sum ? "checksum passes" : "checksum fails";
	char m1[PATH_MAX], m2[PATH_MAX];
	struct cache_key k;
	struct flight *f1, *f2, *fa;
	struct flight_view v;
	uint64_t at1, at2;
	size_t revoked;
	int created;

	pthread_mutex_lock(&tg.mu);
	tg.written = 0;
	tg.complete = 0;
	tg.opens = 0;
	tg.done = NULL;
	pthread_mutex_unlock(&tg.mu);
	if (!ok(shell("rm -f '%s' && touch '%s'", tg.path, tg.path),
		say("%s: an empty package file", label)))
		return;
	debug_member(first, m1, sizeof(m1));
	debug_member(second, m2, sizeof(m2));
	f1 = fill(at("pkg.deb"), m1, first, &created);
	ok(f1 != NULL && created, say("%s: a fill of the first member", label));
	if (f1 == NULL)
		return;
	at1 = write_until(pkg, total, f1);
	ok(is_verified(f1),
	    say("%s: the first member is out and checked", label));
	ok(at1 < total / 2,
	    say("%s: ... its last byte may go out with %llu of %zu bytes in",
		label, (unsigned long long)at1, total));
	cache_key_make(&k, alt, CACHE_DEBUGINFO, "");
	fa = passes_find(ps, &k);
	ok(fa != NULL,
	    say("%s: the alt file it names has a flight already", label));
	if (fa != NULL) {
		flight_view(fa, &v);
		ok(!v.verified,
		    say("%s: ... which the pass has not met yet", label));
	}
	f2 = fill(at("pkg.deb"), m2, second, &created);
	ok(f2 != NULL && created,
	    say("%s: a fill of the second, as the pass runs", label));
	at2 = f2 != NULL ? write_until(pkg, total, f2) : total;
	ok(f2 != NULL && is_verified(f2) && at2 < total,
	    say("%s: ... out of the same pass before the package is whole",
		label));
	ok(fa != NULL && wait_for(is_verified, fa),
	    say("%s: the alt file out of it too", label));
	write_more(pkg, total, 1);
	ok(wait_for(checked_asked, NULL),
	    say("%s: the pass over, what it extracted waits for the checksum",
		label));
	is_int(tg.opens, 1, say("%s: one pass read the package", label));
	is_int(tg.handed_on, 0, say("%s: no fill handed on", label));
	ok(!published(first) && !published(second) && !published(alt),
	    say("%s: nothing published before the checksum", label));
	flight_view(f1, &v);
	ok(v.state == FLIGHT_STREAMING && v.verified,
	    say("%s: ... the first member's readers may finish meanwhile",
		label));
	revoked = tg.done != NULL
	    ? tg.done(tg.darg, ok_sum, ok_sum ? NULL : "checksum differs")
	    : 0;
	is_int((long)revoked, ok_sum ? 0 : 3,
	    say("%s: members that went out and are not kept", label));
	ok(wait_for(has_ended, f1) && (f2 == NULL || wait_for(has_ended, f2)) &&
		(fa == NULL || wait_for(has_ended, fa)),
	    say("%s: the three flights end", label));
	flight_view(f1, &v);
	is_int(v.state, ok_sum ? FLIGHT_READY : FLIGHT_FAILED,
	    say("%s: ... %s", label, ok_sum ? "ready" : "failed"));
	if (ok_sum)
		ok(published(first) && published(second) && published(alt),
		    say("%s: the three are published", label));
	else
		ok(!published(first) && !published(second) && !published(alt),
		    say("%s: none is published", label));
	flight_unref(f1);
	if (f2 != NULL)
		flight_unref(f2);
	if (fa != NULL)
		flight_unref(fa);
}

int
main(void)
{
	struct buildid a, b, alt, *first, *second;
	struct producers_deps pd;
	struct config cfg;
	struct blob_limits lim;
	struct index *idx;
	struct blobstore *bs;
	struct pool *pool;
	struct pool_inbox *inbox;
	char err[256], cache[PATH_MAX], hex[BUILDID_HEX_MAX], *pkg = NULL;
	size_t total = 0;
	int fd;

	if (testdir_make("test_pass") == -1 || elf_init() == -1) {
		printf("Bail out! no test directory or libelf\n");
		return 1;
	}
	evthread_use_pthreads();
	if (!ok(shell("'%s/tests/fixtures/build.sh' '%s' >/dev/null 2>&1",
		    getenv("top_srcdir") != NULL ? getenv("top_srcdir") : "..",
		    at("fx")) &&
		    read_ids(&a, &b, &alt) == 0,
		"the fixtures build (gcc, dwz)"))
		return tap_done();
	/* dpkg-deb sorts its members: the noise comes after the first. */
	first = memcmp(a.bytes, b.bytes, a.len) < 0 ? &a : &b;
	second = first == &a ? &b : &a;
	buildid_format(first, hex);
	ok(shell("cd '%s' && d=one/usr/lib/debug && "
		 "mkdir -p $d/.build-id $d/.dwz/dbgmirror-test one/usr/share "
		 "one/DEBIAN && "
		 "for p in prog_a prog_b; do "
		 "id=$(awk -v p=$p '$1 == p { print $2 }' fx/ids); "
		 "mkdir -p $d/.build-id/$(echo $id | cut -c1-2) && "
		 "cp fx/root/usr/lib/debug/$p.debug "
		 "$d/.build-id/$(echo $id | cut -c1-2)/$(echo $id | cut "
		 "-c3-).debug; "
		 "done && "
		 "cp fx/root/usr/lib/debug/.dwz/shapes.debug "
		 "$d/.dwz/dbgmirror-test/ && "
		 "head -c 150000 /dev/urandom >$d/.build-id/%.2s/%s.zz && "
		 "head -c 150000 /dev/urandom >one/usr/share/zz && "
		 "printf 'Package: one\\nVersion: 1\\nArchitecture: amd64\\n"
		 "Maintainer: T <t@example.org>\\nDescription: f\\n' "
		 ">one/DEBIAN/control && "
		 "dpkg-deb --root-owner-group -Zgzip -z1 --build one pkg.src "
		 ">/dev/null",
	       tmpdir, hex, hex + 2),
	    "dpkg-deb makes the package");
	if ((fd = open(at("pkg.src"), O_RDONLY)) != -1) {
		struct stat st;

		if (fstat(fd, &st) == 0 && (pkg = malloc(st.st_size)) != NULL &&
		    read(fd, pkg, st.st_size) == st.st_size)
			total = (size_t)st.st_size;
		close(fd);
	}
	if (!ok(total > 300000, "the package is read"))
		return tap_done();

	snprintf(cache, sizeof(cache), "%s", at("cache"));
	if (config_init(&cfg) == -1 ||
	    config_set(&cfg, "cache-dir", cache, "test", NULL) == -1 ||
	    config_set(&cfg, "package-coextract", "0", "test", NULL) == -1 ||
	    !shell("mkdir -p '%s/tmp'", cache)) {
		printf("Bail out! configuration\n");
		return 1;
	}
	memset(&lim, 0, sizeof(lim));
	if ((idx = index_open(at("cache/index"), 0, MAPSIZE, err,
		 sizeof(err))) == NULL ||
	    (bs = blobstore_new(idx, cache, &lim, err, sizeof(err))) == NULL) {
		printf("Bail out! %s\n", err);
		return 1;
	}
	base = event_base_new();
	inbox = pool_inbox_new(base);
	pool = pool_new(4, 2);
	rd.cfg = &cfg;
	rd.idx = idx;
	rd.pool = pool;
	rd.bs = bs;
	rd.ft = flight_table_new(0, clock_mono_ns, clock_stamp_ns);
	rd.sources = table;
	pd.rd = &rd;
	pd.inbox = inbox;
	pd.base = base;
	if (base == NULL || inbox == NULL || pool == NULL || rd.ft == NULL ||
	    (pc = producers_new(&pd, err, sizeof(err))) == NULL ||
	    (ps = passes_new(&rd, inbox)) == NULL) {
		printf("Bail out! set-up\n");
		return 1;
	}
	rd.prod = pc;
	rd.packages = ps;
	pthread_mutex_init(&tg.mu, NULL);
	pthread_cond_init(&tg.cv, NULL);
	snprintf(tg.path, sizeof(tg.path), "%s", at("pkg.part"));
	tg.gr.open = t_open;
	tg.gr.grow = t_grow;
	tg.gr.checked = t_checked;
	tg.gr.hand_on = t_hand_on;
	tg.gr.hold = t_hold;
	tg.gr.arg = &tg;

	round_of(0, pkg, total, first, second, &alt);
	round_of(1, pkg, total, first, second, &alt);

	pool_free(pool);
	pool_inbox_free(inbox);
	producers_free(pc);
	passes_free(ps);
	flight_table_free(rd.ft);
	blobstore_free(bs);
	index_close(idx);
	event_base_free(base);
	config_free(&cfg);
	free(pkg);
	testdir_remove();
	return tap_done();
}
