/*
 * tests/unit/test_src_symbuild.c: symbol tables made on the request path
 * (sources/symbuild.c) and kept open (daemon/symtabs.c), with the real
 * producer core, cache and pool, and a scripted source of files (the
 * debuginfo, executables and dwz alt files of programs compiled here)
 * that the builder's own requests reach after it in the table.
 *
 * Checked: a herd of requests for one cold table: one debuginfo fill, one
 * build, each request answered with the table, which opens and names the
 * id; a split debug file's executable asked for, an unstripped file's
 * not; no debuginfo and no executable: not found, nothing remembered of
 * the table, the files' misses remembered; an executable alone: a table
 * of its .symtab; a dwz'd debug file: its alt file asked for by the
 * alt's build-id, and the table names it; a debuginfo whose fill fails:
 * the table fails, remembered for error-ttl; the open tables: a second
 * want is a hit on the open table, a purge of the id makes the next one
 * build again (the old one closed at once, the gauge of open tables
 * down meanwhile), the bound in tables closes the least recently used,
 * and a cached table that does not verify is deleted, counted and built
 * again; a reload's snapshot handed to the builder: the files of the
 * tables begun after it are asked on its request path.
 */
#include "tests/rig.h"
#include "tests/tsrc.h"

#include "daemon/snapshot.h"
#include "daemon/symtabs.h"
#include "sources/sources.h"
#include "sources/symbuild.h"
#include "symbolizer/symtab.h"

static const char prog_c[] = "#include <stdio.h>\n"
			     "#include \"helper.h\"\n"
			     "__attribute__((noinline)) int\n"
			     "outer(int x)\n"
			     "{\n"
			     "\treturn helper_add(x) + 7;\n"
			     "}\n"
			     "int\n"
			     "main(int argc, char **argv)\n"
			     "{\n"
			     "\tprintf(\"%d\\n\", outer(argc));\n"
			     "\treturn 0;\n"
			     "}\n";

static const char other_c[] = "#include <stdio.h>\n"
			      "#include \"helper.h\"\n"
			      "int\n"
			      "main(int argc, char **argv)\n"
			      "{\n"
			      "\tprintf(\"%d\\n\", helper_add(argc));\n"
			      "\treturn 0;\n"
			      "}\n";

static const char helper_h[] =
    "static inline __attribute__((always_inline)) int\n"
    "helper_add(int x)\n"
    "{\n"
    "\treturn x ^ 0x5a5a;\n"
    "}\n";

/* ------------------------------------------------ the files' source */

struct file {
	char hex[BUILDID_HEX_MAX];
	enum cache_kind kind;
	char path[PATH_MAX];
	int fail; /* its fill fails */
};

#define FILES_MAX 16
static struct file files[FILES_MAX];
static size_t nfiles;
/* Fills the source was asked for, by cache kind. */
static unsigned asked[CACHE_SYMTAB + 1];

static void
file_add(const char *hex, enum cache_kind kind, const char *name, int fail)
{
	struct file *f = &files[nfiles++];

	snprintf(f->hex, sizeof(f->hex), "%s", hex);
	f->kind = kind;
	snprintf(f->path, sizeof(f->path), "%s", at(name));
	f->fail = fail;
}

static enum src_result
files_lookup(struct rq *rq)
{
	struct prod_what w;

	if (rq_kind(rq) != CACHE_DEBUGINFO && rq_kind(rq) != CACHE_EXECUTABLE)
		return SRC_ABSENT;
	rq_what(rq, &w);
	return rq_produce(rq, &w, NULL);
}

/* The loop: serve the file scripted for p's key, or its miss. */
static void
files_produce(struct prod *p)
{
	char hex[BUILDID_HEX_MAX];
	size_t i;

	asked[p->w.kind]++;
	buildid_format(&p->w.id, hex);
	for (i = 0; i < nfiles; i++)
		if (strcmp(files[i].hex, hex) == 0 &&
		    files[i].kind == p->w.kind)
			break;
	if (i == nfiles)
		ts_end(p, UPSTREAM_NOTFOUND, "not found");
	else if (files[i].fail)
		ts_end(p, UPSTREAM_FAILED, "the files' source failed");
	else
		ts_serve(p, files[i].path);
}

static const struct source source_files = {
	.name = "files",
	.held = 1,
	.lookup = files_lookup,
	.produce = files_produce,
	.remembers = 1,
};

static const struct source *const table[] = { &source_cache, &source_symbuild,
	&source_files, NULL };

/* ---------------------------------------------------------- helpers */

static char id_prog[BUILDID_HEX_MAX], id_other[BUILDID_HEX_MAX],
    id_alt[BUILDID_HEX_MAX], id_alone[BUILDID_HEX_MAX],
    id_full[BUILDID_HEX_MAX];

/* The build-id of the file name of the test directory, as hex. */
static int
hex_of(const char *name, char *hex)
{
	struct buildid id;

	if (readelf_buildid(at(name), &id) != 0)
		return 0;
	buildid_format(&id, hex);
	return 1;
}

/* The alt file's id, read from the dwz'd debug file's link. */
static int
alt_of(const char *name, char *hex)
{
	struct elf_info info;
	char err[256];
	int fd = open(at(name), O_RDONLY), rc;

	if (fd == -1)
		return 0;
	rc = elf_read_info(fd, &info, err, sizeof(err)) == 0 &&
	    info.alt_id.len > 0;
	close(fd);
	if (rc)
		buildid_format(&info.alt_id, hex);
	return rc;
}

static int
fixtures(void)
{
	FILE *fp;

	if ((fp = fopen(at("prog.c"), "w")) == NULL)
		return 0;
	fputs(prog_c, fp);
	fclose(fp);
	if ((fp = fopen(at("other.c"), "w")) == NULL)
		return 0;
	fputs(other_c, fp);
	fclose(fp);
	if ((fp = fopen(at("helper.h"), "w")) == NULL)
		return 0;
	fputs(helper_h, fp);
	fclose(fp);
	return shell(
		   "cd '%s' && gcc -O2 -g -o prog prog.c && "
		   "gcc -O2 -g -o other other.c && "
		   "objcopy --only-keep-debug prog prog.debug && "
		   "objcopy --strip-all prog prog.exe && "
		   "gcc -O2 -g "
		   "-Wl,--build-id=0x0102030405060708090a0b0c0d0e0f1011121314 "
		   "-o alone prog.c && "
		   "strip -g alone && "
		   "gcc -O2 -g "
		   "-Wl,--build-id=0x0a0b0c0d0e0f101112131415161718191a1b1c1d "
		   "-o full prog.c && "
		   "mkdir dwz && objcopy --only-keep-debug prog dwz/p.debug && "
		   "objcopy --only-keep-debug other dwz/o.debug && "
		   "cd dwz && dwz -m alt.debug -M alt.debug p.debug o.debug",
		   tmpdir) &&
	    hex_of("prog", id_prog) && hex_of("other", id_other) &&
	    hex_of("alone", id_alone) && hex_of("full", id_full) &&
	    alt_of("dwz/o.debug", id_alt);
}

/* c asks for the table of hex, as the open tables do. */
static void
ask_table(struct client *c, const char *hex)
{
	struct route rt;
	const char *why;

	client_init(c, 0);
	c->whole = c->cl.whole = 1;
	memset(&rt, 0, sizeof(rt));
	rt.endpoint = ROUTE_SYMTAB;
	buildid_parse(&rt.id, hex, strlen(hex), &why);
	snprintf(rt.arg, sizeof(rt.arg), "v%d", SYMTAB_VERSION);
	resolve_start(&rig.th, &c->cl, &rt, RESOLVE_HELD);
}

static void
table_key(struct cache_key *k, const char *hex)
{
	char arg[16];

	snprintf(arg, sizeof(arg), "v%d", SYMTAB_VERSION);
	rig_key(k, hex, CACHE_SYMTAB, arg);
}

/* The cached table of hex, open; NULL when there is none that opens. */
static struct symtab *
cached_table(const char *hex)
{
	struct cache_key k;
	struct symtab *t;
	const char *why;
	int fd;

	table_key(&k, hex);
	if ((fd = blob_open(rig.bs, &k)) == -1)
		return NULL;
	t = symtab_open(fd, &why);
	close(fd);
	return t;
}

/* 1 when t was built for hex. */
static int
table_is(const struct symtab *t, const char *hex)
{
	struct buildid id;
	char h[BUILDID_HEX_MAX];

	if (t == NULL)
		return 0;
	symtab_buildid(t, &id);
	buildid_format(&id, h);
	return strcmp(h, hex) == 0;
}

static double
builds(void)
{
	return rig_metric(
	    "dbgmirror_symtab_build_seconds_count{result=\"ok\"}");
}

/* ------------------------------------------------------------ tests */

#define HERD 20

static int
all_ended(const struct client *c, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (!c[i].ended)
			return 0;
	return 1;
}

static void
test_herd(void)
{
	static struct client c[HERD];
	struct symtab *t;
	double before = builds();
	int i, all;

	file_add(id_prog, CACHE_DEBUGINFO, "prog.debug", 0);
	file_add(id_prog, CACHE_EXECUTABLE, "prog.exe", 0);
	memset(asked, 0, sizeof(asked));
	for (i = 0; i < HERD; i++)
		ask_table(&c[i], id_prog);
	RUN_UNTIL(all_ended(c, HERD));
	for (all = 1, i = 0; i < HERD; i++)
		all &= c[i].status == 200 && c[i].kind == RESOLVE_FILE &&
		    c[i].got > 0;
	ok(all, "a herd of 20 requests for a cold table: each gets it");
	is_int(asked[CACHE_DEBUGINFO], 1, "... one debuginfo fill");
	is_int(asked[CACHE_EXECUTABLE], 1,
	    "... one executable fill (a split debug file's program headers)");
	ok(builds() == before + 1, "... one build");
	t = cached_table(id_prog);
	ok(table_is(t, id_prog), "... the table is cached and names the id");
	ok(t != NULL && symtab_source(t) == SYMTAB_SRC_DWARF &&
		symtab_phdrs(t) == SYMTAB_PHDRS_EXEC,
	    "... made from the DWARF, with the executable's program headers");
	if (t != NULL)
		symtab_close(t);
	for (i = 0; i < HERD; i++)
		client_free(&c[i]);
	RUN_UNTIL(rig_flights() == 0);
}

static void
test_unstripped(void)
{
	struct client c;

	file_add(id_full, CACHE_DEBUGINFO, "full", 0);
	memset(asked, 0, sizeof(asked));
	ask_table(&c, id_full);
	RUN_UNTIL(c.ended);
	is_int(c.status, 200, "an unstripped debuginfo: its table");
	is_int(asked[CACHE_EXECUTABLE], 0,
	    "... no executable asked for: its own program headers map");
	client_free(&c);
}

static void
test_missing(void)
{
	static const char *hex = "f00df00df00df00df00df00df00df00df00df00d";
	struct cache_key k;
	struct client c;

	memset(asked, 0, sizeof(asked));
	ask_table(&c, hex);
	RUN_UNTIL(c.ended);
	is_int(c.status, 404, "no debuginfo, no executable: not found");
	is_int(asked[CACHE_DEBUGINFO] + asked[CACHE_EXECUTABLE], 2,
	    "... both were asked for");
	table_key(&k, hex);
	is_int(rig_negative(&k, NULL), -1, "... nothing of the table's kept");
	rig_key(&k, hex, CACHE_DEBUGINFO, "");
	is_int(rig_negative(&k, NULL), NEG_NOTFOUND,
	    "... the debuginfo's miss is remembered");
	client_free(&c);
	ask_table(&c, hex);
	RUN_UNTIL(c.ended);
	is_int(c.status, 404, "asked again: not found");
	is_int(asked[CACHE_DEBUGINFO], 1,
	    "... from the files' entries: not asked again");
	client_free(&c);
}

static void
test_alone(void)
{
	struct client c;
	struct symtab *t;

	file_add(id_alone, CACHE_EXECUTABLE, "alone", 0);
	ask_table(&c, id_alone);
	RUN_UNTIL(c.ended);
	is_int(c.status, 200, "an executable alone: a table");
	t = cached_table(id_alone);
	ok(t != NULL && symtab_source(t) == SYMTAB_SRC_EXEC_SYMTAB,
	    "... of the executable's .symtab");
	if (t != NULL)
		symtab_close(t);
	client_free(&c);
}

static void
test_dwz(void)
{
	struct buildid alt;
	struct client c;
	struct symtab *t;
	char hex[BUILDID_HEX_MAX];

	file_add(id_other, CACHE_DEBUGINFO, "dwz/o.debug", 0);
	file_add(id_other, CACHE_EXECUTABLE, "other", 0);
	memset(asked, 0, sizeof(asked));
	ask_table(&c, id_other);
	RUN_UNTIL(c.ended);
	is_int(c.status, 502, "a dwz'd debug file whose alt file is missing");
	printf("# %s\n", c.why);
	ok(strstr(c.why, "dwz alt file is missing") != NULL &&
		strstr(c.why, id_alt) != NULL,
	    "... says so, with the alt's build-id");
	client_free(&c);
	/* The error entry of the table lasts error-ttl. */
	rig_clock(NOW + 3600);
	file_add(id_alt, CACHE_DEBUGINFO, "dwz/alt.debug", 0);
	memset(asked, 0, sizeof(asked));
	ask_table(&c, id_other);
	RUN_UNTIL(c.ended);
	is_int(c.status, 200, "the alt file there: the table");
	is_int(asked[CACHE_DEBUGINFO], 1,
	    "... the alt file asked for by its own build-id");
	t = cached_table(id_other);
	hex[0] = '\0';
	if (t != NULL) {
		symtab_altid(t, &alt);
		buildid_format(&alt, hex);
		symtab_close(t);
	}
	is_str(hex, id_alt, "... the table names its alt file");
	client_free(&c);
}

static void
test_fails(void)
{
	static const char *hex = "beefbeefbeefbeefbeefbeefbeefbeefbeefbeef";
	struct cache_key k;
	struct client c;

	file_add(hex, CACHE_DEBUGINFO, "prog.debug", 1);
	ask_table(&c, hex);
	RUN_UNTIL(c.ended);
	is_int(c.status, 502, "the debuginfo's fill fails: so does the table");
	printf("# %s\n", c.why);
	ok(strstr(c.why, "its debuginfo") != NULL, "... saying why");
	table_key(&k, hex);
	is_int(rig_negative(&k, NULL), NEG_ERROR,
	    "... remembered for error-ttl");
	client_free(&c);
}

/* ------------------------------------------------------- open tables */

static int decided;
/* The configuration requests ask under: the rig's. */
static struct snapshot snap;

static void
decided_cb(evutil_socket_t fd, short what, void *arg)
{
	decided++;
}

/* Want hex's table; its state once decided (or after the wait). */
static enum symtabs_state
want(struct symtabs_thread *tt, struct symtabs *st, struct event *ev,
    struct symtabs_want *w, const char *hex, int *at_once)
{
	struct resolve_origin o;
	const char *why;
	int before = decided;

	memset(&o, 0, sizeof(o));
	o.peer = "127.0.0.1";
	memset(w, 0, sizeof(*w));
	buildid_parse(&w->id, hex, strlen(hex), &why);
	symtabs_get(tt, w, ev, &o, &snap);
	*at_once = w->state != SYMTABS_WAITING;
	if (!*at_once)
		RUN_UNTIL(decided > before);
	return symtabs_poll(st, w);
}

static void
test_open(void)
{
	struct symtabs *st = symtabs_new(rig.bs, 2, 1ULL << 30);
	struct symtabs_thread *tt = symtabs_thread_new(st, &rig.th);
	struct event *ev = event_new(rig.base, -1, 0, decided_cb, NULL);
	struct symtabs_want w1, w2, w3;
	struct symtab *t;
	struct buildid id;
	struct cache_key k;
	unsigned tables;
	uint64_t bytes, n;
	double b;
	char err[256], garbage[PATH_MAX];
	const char *why;
	struct resolve_origin o;
	static const struct source *const cache_only[] = { &source_cache,
		NULL };
	struct resolve_deps bare;
	int now, before;

	memset(&o, 0, sizeof(o));
	o.peer = "127.0.0.1";
	is_int(want(tt, st, ev, &w1, id_prog, &now), SYMTABS_OPEN,
	    "open tables: a cached table opens");
	ok(!now && table_is(w1.table, id_prog), "... later, the id's table");
	memset(asked, 0, sizeof(asked));
	is_int(want(tt, st, ev, &w2, id_prog, &now), SYMTABS_OPEN,
	    "wanted again");
	ok(now && w2.table == w1.table,
	    "... at once: the same open table, not opened again");
	ok(rig_metric("dbgmirror_symtab_hits_total{where=\"open\"}") == 1,
	    "... counted as a hit on the open tables");
	symtabs_release(st, &w1);
	symtabs_release(st, &w2);

	/* A purge of the id: the table is no more. */
	buildid_parse(&id, id_prog, strlen(id_prog), &why);
	ok(blob_purge(rig.bs, &id, NULL, clock_stamp_ns(), &n, err,
	       sizeof(err)) == 0 &&
		n > 0,
	    "the id purged");
	b = builds();
	memset(&w1, 0, sizeof(w1));
	buildid_parse(&w1.id, id_prog, strlen(id_prog), &why);
	before = decided;
	symtabs_get(tt, &w1, ev, &o, &snap);
	ok(w1.state == SYMTABS_WAITING &&
		rig_metric("dbgmirror_symtabs_open") == 0,
	    "wanted after the purge: the old table closed, none open");
	RUN_UNTIL(decided > before);
	is_int(symtabs_poll(st, &w1), SYMTABS_OPEN, "... then a new one opens");
	ok(builds() == b + 1 && rig_metric("dbgmirror_symtabs_open") == 1,
	    "... built again, one open");
	symtabs_release(st, &w1);

	/* Three tables, a bound of two: the least recently used closes. */
	is_int(want(tt, st, ev, &w1, id_alone, &now), SYMTABS_OPEN,
	    "a second table");
	symtabs_release(st, &w1);
	is_int(want(tt, st, ev, &w1, id_full, &now), SYMTABS_OPEN,
	    "a third table");
	symtabs_release(st, &w1);
	symtabs_counts(st, &tables, &bytes);
	is_int(tables, 2, "... two open at most");
	is_int(want(tt, st, ev, &w1, id_prog, &now), SYMTABS_OPEN,
	    "the first one again");
	ok(!now, "... opened again: it was closed");
	symtabs_release(st, &w1);
	/* A reload's smaller bound closes the least recently used now. */
	symtabs_set_limits(st, 1, 1ULL << 30);
	symtabs_counts(st, &tables, &bytes);
	ok(tables == 1 && rig_metric("dbgmirror_symtabs_open") == 1,
	    "a bound of one set: one table open");
	is_int(want(tt, st, ev, &w1, id_prog, &now), SYMTABS_OPEN,
	    "... the most recently used one");
	ok(now, "... still open");
	symtabs_release(st, &w1);
	symtabs_set_limits(st, 2, 1ULL << 30);

	/*
	 * An opening asks the request's configuration's request path, not
	 * the thread's (which here has no builder).
	 */
	bare = rig.d;
	bare.sources = cache_only;
	rig.th.d = &bare;
	ok(blob_purge(rig.bs, &id, NULL, clock_stamp_ns(), &n, err,
	       sizeof(err)) == 0 &&
		n > 0,
	    "the id purged again");
	b = builds();
	is_int(want(tt, st, ev, &w1, id_prog, &now), SYMTABS_OPEN,
	    "wanted under a configuration whose sources build tables: built");
	ok(builds() == b + 1, "... by the snapshot's builder");
	symtabs_release(st, &w1);
	rig.th.d = &rig.d;

	/* A cached table that does not verify. */
	snprintf(garbage, sizeof(garbage), "%s", at("garbage"));
	shell("head -c 4096 /dev/urandom > '%s'", garbage);
	table_key(&k, id_other);
	b = builds();
	ok(rig_publish(id_other, CACHE_SYMTAB, "v1", garbage, "cache") == 0 &&
		rig_cached_as(&k, garbage),
	    "a damaged table in the cache");
	is_int(want(tt, st, ev, &w3, id_other, &now), SYMTABS_OPEN,
	    "wanted: the table");
	ok(rig_metric("dbgmirror_symtab_corrupt_total") == 1,
	    "... the damaged one counted");
	ok(builds() == b + 1 && table_is(w3.table, id_other),
	    "... and built again");
	symtabs_release(st, &w3);
	t = cached_table(id_other);
	ok(!rig_cached_as(&k, garbage) && table_is(t, id_other),
	    "... the cache holds the new one");
	if (t != NULL)
		symtab_close(t);

	/* Missing. */
	is_int(want(tt, st, ev, &w1, "f00df00df00df00df00df00df00df00df00df00d",
		   &now),
	    SYMTABS_MISSING, "an id no source has: missing");
	symtabs_release(st, &w1);
	symtabs_thread_free(tt);
	symtabs_free(st);
	event_free(ev);
}

/*
 * A reload: the builder takes the new snapshot, and the files of a table
 * begun after it are asked on that snapshot's request path, not on the
 * one the builder was made with (here: one whose sources hold no files).
 */
static void
test_switch(void)
{
	static const char *hex = "f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1";
	static const struct source *const no_files[] = { &source_cache,
		&source_symbuild, NULL };
	static struct snapshot reloaded;
	struct resolve_deps rd = rig.d;
	struct config cfg = rig.cfg;
	struct client c;

	rd.sources = no_files;
	rd.cfg = &cfg;
	cfg.symbolicate_builds = 2;
	atomic_init(&reloaded.refs, 1);
	reloaded.cfg = &cfg;
	reloaded.rd = &rd;
	symbuilds_switch(rig.d.symbuild, &reloaded);
	memset(asked, 0, sizeof(asked));
	ask_table(&c, hex);
	RUN_UNTIL(c.ended);
	is_int(c.status, 404,
	    "switched to a snapshot without the files' source: not found");
	is_int(asked[CACHE_DEBUGINFO] + asked[CACHE_EXECUTABLE], 0,
	    "... its files asked on the new snapshot's path, not the old");
	client_free(&c);
	symbuilds_switch(rig.d.symbuild, &snap);
	ask_table(&c, hex);
	RUN_UNTIL(c.ended);
	is_int(asked[CACHE_DEBUGINFO] + asked[CACHE_EXECUTABLE], 2,
	    "switched back: the files' source is asked again");
	client_free(&c);
	is_int(atomic_load(&reloaded.refs), 1,
	    "... and the builder holds the first snapshot no more");
}

int
main(void)
{
	static const char *const opts[] = { "--error-ttl", "60", NULL };
	char err[256], tmp[PATH_MAX + 8];

	if (testdir_make("test_src_symbuild") == -1 || elf_init() == -1)
		return 1;
	if (!ok(fixtures(), "programs, debug files and a dwz pair built"))
		return 1;
	if (rig_open("test_src_symbuild", opts, NULL, table) == -1)
		return 1;
	snprintf(tmp, sizeof(tmp), "%s/tmp", rig.cache_dir);
	rig.d.symbuild = symbuilds_new(&rig.d, rig.base, rig.inbox, tmp, 1, err,
	    sizeof(err));
	if (!ok(rig.d.symbuild != NULL, "the builder"))
		return 1;
	atomic_init(&snap.refs, 1);
	snap.cfg = &rig.cfg;
	snap.rd = &rig.d;
	symbuilds_switch(rig.d.symbuild, &snap);
	test_herd();
	test_unstripped();
	test_missing();
	test_alone();
	test_dwz();
	test_fails();
	test_open();
	test_switch();
	rig_stop();
	symbuilds_free(rig.d.symbuild);
	rig_close();
	return tap_done();
}
