/*
 * tests/unit/test_src_cache.c: the blob store as a source
 * (sources/cache.c), with the real index, blob store and resolver, and a
 * test source after it (tests/tsrc.h) that shows when the request goes
 * on.
 *
 * Checked: a cached blob is sent at once as a HIT with its head
 * (X-DEBUGINFOD-* lines, Last-Modified, a week's max-age), pinned while it
 * goes out so that making room cannot evict it, and evictable once the
 * exchange is over; a blob whose file is not the size its entry says, or
 * is gone, is not sent (the request goes on); a section's own entry (one
 * an upstream cut) is the cache's to send.  Every wait is bounded.
 */
#include "tests/rig.h"
#include "tests/tsrc.h"

#include "sources/sources.h"

static const char *ID_A = "a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5";
static const char *ID_B = "b5b5b5b5b5b5b5b5b5b5b5b5b5b5b5b5b5b5b5b5";
static const char *ID_C = "c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5";

#define CACHE_MAX 10000

static struct tsrc next;
static const struct source *const table[] = { &source_cache, &next.s, NULL };

/* The path of k's blob file. */
static const char *
blob_path(const struct cache_key *k)
{
	static char path[PATH_MAX + 2 * CACHE_KEY_HEX];
	char hex[CACHE_KEY_HEX];

	cache_key_hex(k, hex);
	snprintf(path, sizeof(path), "%s/blobs/%.2s/%s", rig.cache_dir, hex,
	    hex);
	return path;
}

/* Make room for bytes more, as a fill that could not write would. */
static uint64_t
make_room(uint64_t bytes)
{
	uint64_t n = 0, b = 0;
	char err[256];

	blob_make_room(rig.bs, bytes, &n, &b, err, sizeof(err));
	return n;
}

static void
test_hit_pinned(void)
{
	struct blob_info bi;
	struct cache_key k;
	struct client c;
	struct stat st;
	char tmp[PATH_MAX], err[256];
	const char *why;
	int fd;

	rig_mkelf("a.debug",
	    "--type dyn --build-id a5a5a5a5a5a5a5a5a5a5a5a5a5"
	    "a5a5a5a5a5a5a5 --debug .debug_info:5000");
	/* Published as a fill does, with the head it had. */
	fd = blob_tmp_new(rig.bs, tmp, sizeof(tmp), err, sizeof(err));
	close(fd);
	shell("cp '%s' '%s'", at("a.debug"), tmp);
	stat(tmp, &st);
	memset(&bi, 0, sizeof(bi));
	buildid_parse(&bi.id, ID_A, strlen(ID_A), &why);
	cache_key_make(&k, &bi.id, CACHE_DEBUGINFO, "");
	bi.size = (uint64_t)st.st_size;
	bi.mtime = NOW - 100;
	bi.kind = CACHE_DEBUGINFO;
	bi.arg = "";
	bi.source = "http://up";
	bi.meta.file = "/usr/lib/debug/a.debug";
	ok(blob_publish(rig.bs, &k, tmp, &bi, NOW, err, sizeof(err)) == 0,
	    "a blob published");

	client_init(&c, 0);
	c.hold = 1;
	client_ask(&c, rig_path(ID_A, "debuginfo"), RESOLVE_ALL);
	ok(c.answered && !c.waited && c.kind == RESOLVE_FILE,
	    "a cached blob: sent at once");
	ok(c.complete && client_body_is(&c, at("a.debug")),
	    "... its bytes whole");
	is_int(c.result, METRICS_HIT, "... a HIT");
	is_str(c.source, "cache", "... from the cache");
	is_str(c.extra, "X-DEBUGINFOD-FILE: /usr/lib/debug/a.debug\r\n",
	    "... with the head it was published with");
	is_int(c.max_age, 7 * 24 * 3600, "... cacheable for a week");
	is_int(next.lookups, 0, "... no other source asked");
	is_int(make_room(CACHE_MAX - 1000), 0,
	    "while it goes out, making room cannot evict it");
	ok(rig_cached(&k, NULL), "... it is still cached");
	client_release(&c);
	ok(make_room(CACHE_MAX - 1000) == 1 && !rig_cached(&k, NULL),
	    "once sent, it can be evicted");
	client_free(&c);
}

static void
test_sizes(void)
{
	struct cache_key k;
	struct client c;

	rig_mkelf("b.debug",
	    "--type dyn --build-id b5b5b5b5b5b5b5b5b5b5b5b5b5"
	    "b5b5b5b5b5b5b5 --debug .debug_info:3000");
	rig_publish(ID_B, CACHE_DEBUGINFO, "", at("b.debug"), "http://up");
	rig_key(&k, ID_B, CACHE_DEBUGINFO, "");
	shell("truncate -s 100 '%s'", blob_path(&k));
	client_get(&c, rig_path(ID_B, "debuginfo"));
	ok(c.answered && c.outcome == ANSWER_NOT_FOUND && next.lookups == 1,
	    "a blob whose file is not the size of its entry is not sent: the "
	    "request goes on");
	client_free(&c);
	unlink(blob_path(&k));
	client_get(&c, rig_path(ID_B, "debuginfo"));
	ok(c.answered && c.outcome == ANSWER_NOT_FOUND && next.lookups == 2,
	    "one whose file is gone: the same");
	client_free(&c);
}

static void
test_section_entry(void)
{
	struct client c;

	write_text("sec", "section bytes\n");
	rig_publish(ID_C, CACHE_SECTION, ".gdb_index", at("sec"), "http://up");
	client_get(&c,
	    "/buildid/c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5/"
	    "section/.gdb_index");
	ok(c.answered && c.kind == RESOLVE_FILE && c.size == 14 &&
		client_body_is(&c, at("sec")),
	    "a section's own entry, cut by an upstream: sent from the cache");
	client_free(&c);
	client_get(&c,
	    "/buildid/c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5/"
	    "section/.debug_line");
	ok(c.outcome == ANSWER_NOT_FOUND,
	    "... another section of the id is not that entry");
	client_free(&c);
}

int
main(void)
{
	static const struct blob_limits lim = { CACHE_MAX, 90, 50, 0, 0 };

	if (rig_open("test_src_cache", NULL, &lim, table) == -1)
		return 1;
	ts_init(&next, "next", 1, 0, 0, 0);

	test_hit_pinned();
	test_sizes();
	test_section_entry();

	rig_close();
	return tap_done();
}
