/*
 * tests/unit/test_blobstore.c: cache/blobstore.c and cache/negative.c, the
 * blob store and the remembered misses, over a real LMDB index.
 *
 * It #includes blobstore.c to reach the eviction arithmetic (the free-space
 * half of eviction cannot be driven from a test).  Every part opens its own
 * cache directory in one mkdtemp directory, removed at the end.  Time is
 * passed in, never slept: "now" moves by hand.  Damaged records are written
 * through the index's own record functions, under the store's API.  All of
 * it runs on one thread.
 */
#include "cache/blobstore.c"

#include <sys/stat.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/index.h"
#include "cache/negative.h"
#include "tests/tap.h"
#include "tests/testdir.h"

#define MAPSIZE (64ull << 20)
#define ERRLEN 256
/* When purges happen, where no fill is stamped (blob_purge's now_ns). */
#define STAMP 1700000000000000000ll

/* One cache directory: its index, its store, a reader; its uploads. */
struct bstore {
	char dir[PATH_MAX];
	char updir[PATH_MAX + 16];
	struct index *idx;
	struct blobstore *bs;
	struct index_reader *rd;
};

static int
store_open(struct bstore *s, const char *name, const struct blob_limits *lim)
{
	char path[PATH_MAX], err[ERRLEN];

	memset(s, 0, sizeof(*s));
	snprintf(s->dir, sizeof(s->dir), "%s", at(name));
	mkdir(s->dir, 0755);
	snprintf(s->updir, sizeof(s->updir), "%s-uploads", s->dir);
	mkdir(s->updir, 0755);
	if (snprintf(path, sizeof(path), "%s/index", s->dir) >=
	    (int)sizeof(path))
		return -1;
	if ((s->idx = index_open(path, 0, MAPSIZE, err, sizeof(err))) == NULL ||
	    (s->bs = blobstore_new(s->idx, s->dir, lim, err, sizeof(err))) ==
		NULL ||
	    blobstore_set_upload_dir(s->bs, s->updir, err, sizeof(err)) == -1 ||
	    (s->rd = index_reader_new(s->idx)) == NULL) {
		printf("# %s: %s\n", name, err);
		return -1;
	}
	return 0;
}

static void
store_close(struct bstore *s)
{
	index_reader_free(s->rd);
	blobstore_free(s->bs);
	index_close(s->idx);
}

static struct buildid
make_id(unsigned seed)
{
	struct buildid id;
	size_t i;

	memset(&id, 0, sizeof(id));
	id.len = 20;
	for (i = 0; i < id.len; i++)
		id.bytes[i] = (uint8_t)(seed * 131 + i * 7 + 3);
	return id;
}

/* What a test publishes: the blob's fields besides its bytes. */
static struct blob_info
make_info(const struct buildid *id, enum cache_kind kind, const char *arg,
    const char *source)
{
	struct blob_info bi;

	memset(&bi, 0, sizeof(bi));
	bi.mtime = 1600000000;
	bi.id = *id;
	bi.kind = kind;
	bi.arg = arg;
	bi.source = source;
	bi.meta.file = "/usr/lib/debug/x.debug";
	bi.meta.archive = "x-dbg.deb";
	bi.meta.imasig = "0302ab";
	bi.meta.extra = "X-DEBUGINFOD-PAD: 1\r\n";
	bi.meta.extra_len = strlen(bi.meta.extra);
	return bi;
}

/*
 * Fill a temp file (a fill's, or an upload's) with len bytes of c; its
 * path in tmp.
 */
static int
fill_tmp_of(struct bstore *s, int upload, char c, size_t len,
    char tmp[PATH_MAX])
{
	char err[ERRLEN], buf[4096];
	size_t n;
	int fd;

	fd = upload
	    ? blob_upload_tmp_new(s->bs, tmp, PATH_MAX, err, sizeof(err))
	    : blob_tmp_new(s->bs, tmp, PATH_MAX, err, sizeof(err));
	if (fd == -1) {
		printf("# tmp: %s\n", err);
		return -1;
	}
	memset(buf, c, sizeof(buf));
	for (; len > 0; len -= n) {
		n = len < sizeof(buf) ? len : sizeof(buf);
		if (write(fd, buf, n) != (ssize_t)n) {
			close(fd);
			return -1;
		}
	}
	close(fd);
	return 0;
}

static int
fill_tmp(struct bstore *s, char c, size_t len, char tmp[PATH_MAX])
{
	return fill_tmp_of(s, 0, c, len, tmp);
}

/* Publish len bytes of c as (id, kind, arg) from source at now. */
static int
put_blob(struct bstore *s, struct cache_key *k, unsigned seed, char c,
    size_t len, const char *source, int64_t now)
{
	struct buildid id = make_id(seed);
	struct blob_info bi = make_info(&id, CACHE_DEBUGINFO, "", source);
	char tmp[PATH_MAX], err[ERRLEN];
	int rc;

	cache_key_make(k, &id, CACHE_DEBUGINFO, "");
	if (fill_tmp(s, c, len, tmp) == -1)
		return -1;
	bi.size = len;
	rc = blob_publish(s->bs, k, tmp, &bi, now, err, sizeof(err));
	if (rc == -1)
		printf("# publish: %s\n", err);
	return rc;
}

static struct blob_stats
stats(struct bstore *s)
{
	struct blob_stats st;

	memset(&st, 0xff, sizeof(st));
	if (index_reader_begin(s->rd) == 0) {
		if (blob_stats(s->rd, s->bs, &st) == -1)
			printf("# blob_stats failed\n");
		index_reader_end(s->rd);
	}
	return st;
}

/* blob_lookup in a fresh snapshot; INDEX_NOTFOUND, 0 or -1. */
static int
lookup(struct bstore *s, const struct cache_key *k)
{
	struct blob_info bi;
	int rc;

	if (index_reader_begin(s->rd) == -1)
		return -2;
	rc = blob_lookup(s->rd, k, &bi);
	index_reader_end(s->rd);
	return rc;
}

static int
neg_lookup(struct bstore *s, const struct cache_key *k, int64_t now,
    struct neg_entry *ne)
{
	int rc;

	if (index_reader_begin(s->rd) == -1)
		return -2;
	rc = neg_get(s->rd, k, now, ne);
	index_reader_end(s->rd);
	return rc;
}

static int
exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static const char *
blob_file(struct bstore *s, const struct cache_key *k)
{
	static char path[PATH_MAX];

	blob_path(s->bs, k->hash, 0, path);
	return path;
}

/* Where an upload of k lives. */
static const char *
upload_file(struct bstore *s, const struct cache_key *k)
{
	static char path[PATH_MAX];

	blob_path(s->bs, k->hash, 1, path);
	return path;
}

/* Files in DIR/tmp. */
static int
count_tmp(struct bstore *s)
{
	char path[PATH_MAX];
	DIR *d;
	struct dirent *de;
	int n = 0;

	snprintf(path, sizeof(path), "%s/tmp", s->dir);
	if ((d = opendir(path)) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* Write val under key in table t with the index's record functions. */
static int
raw_put(struct bstore *s, enum index_table t, const void *key, size_t keylen,
    const void *val, size_t vallen)
{
	struct index_batch *b;
	char err[ERRLEN];

	if ((b = index_batch_begin(s->idx, err, sizeof(err))) == NULL)
		return -1;
	index_batch_put_rec(b, t, key, keylen, val, vallen);
	return index_batch_commit(b, err, sizeof(err));
}

static const struct blob_limits nolimits = { 0, 90, 70, 0, 0 };

static void
test_publish(void)
{
	struct bstore s;
	struct buildid id = make_id(1);
	struct blob_info bi =
	    make_info(&id, CACHE_SECTION, ".debug_line", "http://up.example/");
	struct cache_key k, k2;
	struct blob_stats st;
	char tmp[PATH_MAX], err[ERRLEN], buf[64], hex[CACHE_KEY_HEX];
	char want[PATH_MAX + 100];
	ssize_t n;
	int fd;

	if (!ok(store_open(&s, "publish", &nolimits) == 0, "publish: open"))
		return;
	cache_key_make(&k, &id, CACHE_SECTION, ".debug_line");
	is_int(lookup(&s, &k), INDEX_NOTFOUND, "nothing cached at first");
	ok(blob_open(s.bs, &k) == -1, "and no file to open");

	fill_tmp(&s, 'a', 5, tmp);
	ok(strncmp(tmp, s.dir, strlen(s.dir)) == 0 && strstr(tmp, "/tmp/"),
	    "the temp file is in DIR/tmp");
	bi.size = 5;
	bi.stored = bi.atime = 7; /* ignored: now is what counts */
	is_int(blob_publish(s.bs, &k, tmp, &bi, 1000, err, sizeof(err)), 0,
	    "publish 5 bytes");
	ok(!exists(tmp), "the temp file is gone");
	ok(exists(blob_file(&s, &k)), "the blob is in blobs/xx/");
	/* The layout older caches have on disk: DIR/blobs/HE/HEX. */
	cache_key_hex(&k, hex);
	snprintf(want, sizeof(want), "%s/blobs/%.2s/%s", s.dir, hex, hex);
	is_str(blob_file(&s, &k), want, "blob_path: DIR/blobs/HE/HEX");
	snprintf(want, sizeof(want), "%s/%.2s/%s", s.updir, hex, hex);
	is_str(upload_file(&s, &k), want, "... an upload's: UPDIR/HE/HEX");

	memset(&bi, 0, sizeof(bi));
	index_reader_begin(s.rd);
	is_int(blob_lookup(s.rd, &k, &bi), 0, "lookup finds it");
	is_int(bi.size, 5, "size");
	is_int(bi.mtime, 1600000000, "mtime");
	is_int(bi.stored, 1000, "stored is now");
	is_int(bi.atime, 1000, "atime is now");
	ok(buildid_equal(&bi.id, &id), "build-id");
	is_int(bi.kind, CACHE_SECTION, "kind");
	is_str(bi.arg, ".debug_line", "arg");
	is_str(bi.source, "http://up.example/", "source");
	is_str(bi.meta.file, "/usr/lib/debug/x.debug", "file");
	is_str(bi.meta.archive, "x-dbg.deb", "archive");
	is_str(bi.meta.imasig, "0302ab", "IMA signature");
	ok(bi.meta.extra_len == strlen("X-DEBUGINFOD-PAD: 1\r\n") &&
		strcmp(bi.meta.extra, "X-DEBUGINFOD-PAD: 1\r\n") == 0,
	    "the other lines, as they were");
	index_reader_end(s.rd);

	fd = blob_open(s.bs, &k);
	ok(fd != -1, "blob_open");
	n = fd == -1 ? -1 : read(fd, buf, sizeof(buf));
	ok(n == 5 && memcmp(buf, "aaaaa", 5) == 0, "the bytes are the same");
	if (fd != -1)
		close(fd);
	st = stats(&s);
	is_int(st.entries, 1, "one entry");
	is_int(st.bytes, 5, "of 5 bytes");

	/* Replace: the total counts the new size only. */
	is_int(put_blob(&s, &k2, 2, 'b', 300, "", 1001), 0, "another blob");
	fill_tmp(&s, 'c', 11, tmp);
	bi = make_info(&id, CACHE_SECTION, ".debug_line", "");
	bi.size = 11;
	is_int(blob_publish(s.bs, &k, tmp, &bi, 1002, err, sizeof(err)), 0,
	    "replace the first with 11 bytes");
	st = stats(&s);
	is_int(st.entries, 2, "two entries");
	is_int(st.bytes, 311, "300 + 11 bytes");
	fd = blob_open(s.bs, &k);
	n = fd == -1 ? -1 : read(fd, buf, sizeof(buf));
	ok(n == 11 && buf[0] == 'c', "the new bytes are served");
	if (fd != -1)
		close(fd);

	/* A temp file of the wrong size is refused and removed. */
	fill_tmp(&s, 'd', 10, tmp);
	bi.size = 12;
	err[0] = '\0';
	is_int(blob_publish(s.bs, &k, tmp, &bi, 1003, err, sizeof(err)), -1,
	    "a short temp file is refused");
	printf("#   %s\n", err);
	ok(!exists(tmp), "and removed");
	is_int(stats(&s).bytes, 311, "the total is unchanged");
	is_int(count_tmp(&s), 0, "tmp/ is empty");
	store_close(&s);
}

static void
test_too_big(void)
{
	struct blob_limits lim = { 100, 90, 50, 0, 0 };
	struct bstore s;
	struct cache_key k;
	char tmp[PATH_MAX], err[ERRLEN];
	struct buildid id = make_id(3);
	struct blob_info bi = make_info(&id, CACHE_DEBUGINFO, "", "");

	if (!ok(store_open(&s, "big", &lim) == 0, "big: open"))
		return;
	cache_key_make(&k, &id, CACHE_DEBUGINFO, "");
	fill_tmp(&s, 'x', 101, tmp);
	bi.size = 101;
	is_int(blob_publish(s.bs, &k, tmp, &bi, 1000, err, sizeof(err)),
	    BLOB_TOO_BIG, "101 bytes in a cache of 100: BLOB_TOO_BIG");
	ok(!exists(tmp), "the temp file is removed");
	is_int(lookup(&s, &k), INDEX_NOTFOUND, "nothing stored");
	is_int(stats(&s).bytes, 0, "no bytes counted");
	is_int(put_blob(&s, &k, 3, 'x', 100, "", 1000), 0,
	    "exactly 100 bytes are stored");
	store_close(&s);
}

static void
test_recover(void)
{
	struct bstore s;
	struct cache_key keep, gone, resized, orphan;
	struct buildid oid = make_id(99);
	char tmp[PATH_MAX], junk[PATH_MAX], subdir[PATH_MAX], err[ERRLEN];
	char misplaced[PATH_MAX], *slash;
	struct blob_recovery rec;
	int fd;

	if (!ok(store_open(&s, "recover", &nolimits) == 0, "recover: open"))
		return;
	put_blob(&s, &keep, 10, 'k', 10, "", 1000);
	put_blob(&s, &gone, 11, 'g', 20, "", 1000);
	put_blob(&s, &resized, 12, 'r', 40, "", 1000);
	is_int(stats(&s).bytes, 70, "three blobs, 70 bytes");

	fill_tmp(&s, 't', 3, tmp); /* a fill that never finished */
	unlink(blob_file(&s, &gone));
	ok(truncate(blob_file(&s, &resized), 39) == 0, "shorten a blob");
	/* A blob renamed in, the crash before its commit. */
	cache_key_make(&orphan, &oid, CACHE_EXECUTABLE, "");
	snprintf(subdir, sizeof(subdir), "%s", blob_file(&s, &orphan));
	*strrchr(subdir, '/') = '\0';
	mkdir(subdir, 0755);
	fd = open(blob_file(&s, &orphan), O_WRONLY | O_CREAT, 0644);
	close(fd);
	if (snprintf(junk, sizeof(junk), "%s/junk", subdir) < (int)sizeof(junk))
		close(open(junk, O_WRONLY | O_CREAT, 0644));
	/* The good blob's name, in another blobs/xx/. */
	snprintf(misplaced, sizeof(misplaced), "%s", blob_file(&s, &keep));
	slash = strrchr(misplaced, '/');
	slash[-2] = slash[-2] == '0' ? '1' : '0';
	*slash = '\0';
	mkdir(misplaced, 0755);
	*slash = '/';
	close(open(misplaced, O_WRONLY | O_CREAT, 0644));

	is_int(blobstore_recover(s.bs, &rec, err, sizeof(err)), 0, "recover");
	is_int(rec.files, 5,
	    "removed the temp, orphan, junk, misplaced and resized files");
	is_int(rec.entries, 2, "removed the entries of the gone and resized");
	ok(!exists(tmp), "the temp file is gone");
	ok(!exists(blob_file(&s, &orphan)), "the orphan blob is gone");
	ok(!exists(junk), "the junk is gone");
	ok(!exists(misplaced), "the misplaced copy is gone");
	ok(!exists(blob_file(&s, &resized)), "the resized blob is gone");
	ok(exists(blob_file(&s, &keep)), "the good blob stays");
	is_int(lookup(&s, &keep), 0, "and its entry");
	is_int(lookup(&s, &gone), INDEX_NOTFOUND, "the gone entry is gone");
	is_int(lookup(&s, &resized), INDEX_NOTFOUND,
	    "the resized entry is gone");
	is_int(stats(&s).entries, 1, "one entry left");
	is_int(stats(&s).bytes, 10, "of 10 bytes");

	is_int(blobstore_recover(s.bs, &rec, err, sizeof(err)), 0,
	    "recover again");
	ok(rec.files == 0 && rec.entries == 0, "removes nothing more");
	store_close(&s);
}

/* Flush the touches; 0 or -1. */
static int
flush(struct bstore *s)
{
	char err[ERRLEN];

	if (blob_flush_touches(s->bs, err, sizeof(err)) == -1) {
		printf("# flush: %s\n", err);
		return -1;
	}
	return 0;
}

static void
test_evict(void)
{
	struct blob_limits lim = { 1000, 90, 50, 0, 0 };
	struct bstore s;
	struct cache_key k[6];
	struct blob_stats st;
	struct blob_info bi;
	char err[ERRLEN];
	uint8_t lk[LRUKEY_LEN];
	uint64_t n, bytes;
	int i;

	if (!ok(store_open(&s, "evict", &lim) == 0, "evict: open"))
		return;
	/* Published a second apart: 0 is the oldest. */
	for (i = 0; i < 5; i++)
		put_blob(&s, &k[i], 20 + (unsigned)i, 'e', 150, "", 1000 + i);
	is_int(stats(&s).bytes, 750, "5 x 150 bytes, under the high mark");
	ok(pin_bucket(s.bs, k[1].hash) != pin_bucket(s.bs, k[2].hash) &&
		pin_bucket(s.bs, k[1].hash) != pin_bucket(s.bs, k[3].hash) &&
		pin_bucket(s.bs, k[1].hash) != pin_bucket(s.bs, k[4].hash),
	    "the test's keys do not share a pin bucket");

	/* The oldest is used again; the next oldest is being sent. */
	blob_touch(s.bs, &k[0], 2000);
	blob_touch(s.bs, &k[0], 1500); /* older: does not move it back */
	is_int(flush(&s), 0, "flush the touches");
	index_reader_begin(s.rd);
	ok(blob_lookup(s.rd, &k[0], &bi) == 0 && bi.atime == 2000,
	    "the hit's atime is written");
	index_reader_end(s.rd);
	blob_pin(s.bs, &k[1]);

	is_int(blob_evict(s.bs, &n, &bytes, err, sizeof(err)), 0,
	    "evict under the high mark");
	is_int(n, 0, "removes nothing");

	/* 950 > 900: down to 500, least recently used first. */
	is_int(put_blob(&s, &k[5], 25, 'f', 200, "", 1005), 0,
	    "publish past the high mark");
	is_int(lookup(&s, &k[0]), 0, "the touched one stays");
	is_int(lookup(&s, &k[1]), 0, "the pinned one stays");
	ok(exists(blob_file(&s, &k[1])), "with its file");
	for (i = 2; i < 5; i++) {
		is_int(lookup(&s, &k[i]), INDEX_NOTFOUND,
		    "an old unpinned one is evicted");
		ok(!exists(blob_file(&s, &k[i])), "with its file");
	}
	is_int(lookup(&s, &k[5]), 0, "the new one stays");
	st = stats(&s);
	is_int(st.bytes, 500, "500 bytes left");
	ok(st.bytes <= lim.max_bytes * lim.low_pct / 100, "at the low mark");
	is_int(st.entries, 3, "3 entries");
	is_int(st.evictions, 3, "3 evictions counted");
	is_int(st.evicted_bytes, 450, "of 450 bytes");

	/* Nothing evictable: all pinned; eviction stops, no loop. */
	blob_unpin(s.bs, &k[1]);
	blob_pin(s.bs, &k[0]);
	blob_pin(s.bs, &k[1]);
	blob_pin(s.bs, &k[5]);
	is_int(put_blob(&s, &k[2], 22, 'g', 450, "", 3000), 0,
	    "publish 450 more with the rest pinned");
	is_int(lookup(&s, &k[2]), INDEX_NOTFOUND,
	    "the newest unpinned is the one evicted");
	is_int(stats(&s).bytes, 500, "500 bytes again");
	blob_unpin(s.bs, &k[0]);
	blob_unpin(s.bs, &k[1]);
	blob_unpin(s.bs, &k[5]);

	/* A full touch buffer drops, it does not grow or crash. */
	for (i = 0; i < TOUCH_MAX + 10; i++)
		blob_touch(s.bs, &k[5], 4000 + i);
	is_int(s.bs->ntouches, TOUCH_MAX, "the touch buffer is bounded");
	is_int(flush(&s), 0, "flush a full buffer");
	index_reader_begin(s.rd);
	ok(blob_lookup(s.rd, &k[5], &bi) == 0 &&
		bi.atime == 4000 + TOUCH_MAX - 1,
	    "the last kept touch wins");
	index_reader_end(s.rd);
	is_int(flush(&s), 0, "flush with nothing to do");

	/* An LRU key that no longer matches its entry is not followed. */
	lru_key(1, 1005, k[5].hash, lk); /* its stored, an old atime */
	is_int(raw_put(&s, INDEX_LRU, lk, sizeof(lk), "", 0), 0,
	    "write a stale LRU key for the newest");
	s.bs->lim.high_pct = 50;
	s.bs->lim.low_pct = 40;
	is_int(put_blob(&s, &k[3], 23, 'h', 10, "", 5000), 0,
	    "publish past a high mark of 500");
	is_int(lookup(&s, &k[5]), 0, "the stale key's entry stays");
	is_int(lookup(&s, &k[1]), INDEX_NOTFOUND, "the real LRU one goes");
	is_int(stats(&s).bytes, 360, "150 + 200 + 10 bytes left");

	/* Fills in tmp/ count with the blobs against the cap. */
	is_int(blob_evict(s.bs, &n, &bytes, err, sizeof(err)), 0,
	    "evict at 360 of a high mark of 500");
	is_int(n, 0, "removes nothing");
	blob_tmp_add(s.bs, 300, 0);
	is_int(stats(&s).tmp_bytes, 300, "300 bytes of fills in tmp/");
	is_int(blob_evict(s.bs, &n, &bytes, err, sizeof(err)), 0,
	    "evict at 360 + 300 in tmp/");
	ok(n > 0 && stats(&s).bytes + 300 <= 400,
	    "cached files go down to the low mark, the fills counted");
	blob_tmp_add(s.bs, 0, 300);
	is_int(stats(&s).tmp_bytes, 0, "the fills published: none left");

	/* Room for a fill that found the disk full, whatever the marks. */
	put_blob(&s, &k[4], 24, 'i', 100, "", 6000);
	st = stats(&s);
	ok(st.bytes > 0 && st.bytes <= 400, "under the high mark again");
	is_int(blob_make_room(s.bs, UINT64_MAX / 2, &n, &bytes, err,
		   sizeof(err)),
	    0, "make room for more than the disk holds");
	is_int(stats(&s).entries, 0, "everything evictable goes");
	store_close(&s);
}

static void
test_arithmetic(void)
{
	struct blob_limits lim = { 1000, 90, 50, 0, 0 };
	struct blob_limits fs = { 0, 90, 50, 10, 0 };

	is_int(pct_of(1000, 90), 900, "90% of 1000");
	is_int(pct_of(199, 50), 99, "50% of 199 rounds down");
	ok(pct_of(UINT64_MAX, 100) == UINT64_MAX, "100% of 2^64-1");
	ok(pct_of(UINT64_MAX, 50) == UINT64_MAX / 2, "50% of 2^64-1");
	is_int(evict_need(&lim, 900, 0, 0), 0, "at the high mark: nothing");
	is_int(evict_need(&lim, 901, 0, 0), 401, "past it: down to the low");
	is_int(evict_need(&fs, 1u << 30, 0, 0), 0,
	    "no cap, fs size unknown: nothing");
	is_int(evict_need(&fs, 0, 10, 100), 0, "10% free of 10%: nothing");
	is_int(evict_need(&fs, 0, 4, 100), 6, "4% free of 10%: 6 bytes");
	fs.max_bytes = 1000;
	is_int(evict_need(&fs, 950, 4, 100), 450,
	    "both: the larger need (the cap's)");
	is_int(evict_need(&fs, 950, 4, 10000), 996,
	    "both: the larger need (the fs's)");
}

static void
test_negative(void)
{
	struct bstore s;
	struct buildid id = make_id(40), other = make_id(41);
	struct cache_key k, k2, k3;
	struct neg_entry ne;
	char err[ERRLEN];
	uint8_t ek[INDEX_TIME_LEN + CACHE_KEY_LEN];
	uint64_t n;

	if (!ok(store_open(&s, "neg", &nolimits) == 0, "negative: open"))
		return;
	cache_key_make(&k, &id, CACHE_DEBUGINFO, "");
	cache_key_make(&k2, &id, CACHE_SOURCE, "/usr/src/a.c");
	cache_key_make(&k3, &other, CACHE_DEBUGINFO, "");
	is_int(neg_lookup(&s, &k, 1000, &ne), INDEX_NOTFOUND, "no entry");
	is_int(neg_put(s.idx, &k, &id, NEG_NOTFOUND, 1100, err, sizeof(err)), 0,
	    "remember a miss until 1100");
	memset(&ne, 0, sizeof(ne));
	is_int(neg_lookup(&s, &k, 1000, &ne), 0, "valid at 1000");
	is_int(ne.kind, NEG_NOTFOUND, "kind");
	is_int(ne.expires, 1100, "expires");
	is_int(neg_lookup(&s, &k, 1099, &ne), 0, "valid at 1099");
	is_int(neg_lookup(&s, &k, 1100, &ne), INDEX_NOTFOUND,
	    "expired at 1100");
	is_int(stats(&s).negatives, 1, "one negative");

	is_int(neg_expire(s.idx, 1099, 0, &n, err, sizeof(err)), 0,
	    "expire 1099");
	is_int(n, 0, "removes nothing");
	is_int(neg_expire(s.idx, 1100, 0, &n, err, sizeof(err)), 0,
	    "expire 1100");
	is_int(n, 1, "removes it");
	is_int(neg_lookup(&s, &k, 0, &ne), INDEX_NOTFOUND, "it is gone");
	is_int(stats(&s).negatives, 0, "no negatives");

	/* Replaced: the old expiry key must not drop the new entry. */
	neg_put(s.idx, &k, &id, NEG_ERROR, 1200, err, sizeof(err));
	neg_put(s.idx, &k, &id, NEG_ERROR, 1300, err, sizeof(err));
	is_int(neg_expire(s.idx, 1250, 0, &n, err, sizeof(err)), 0,
	    "expire 1250");
	is_int(n, 0, "the replaced entry's old time removes nothing");
	is_int(neg_lookup(&s, &k, 1250, &ne), 0, "the new one holds");
	is_int(ne.kind, NEG_ERROR, "an error entry");
	/* An expiry key left by a damaged record: only the key goes. */
	index_time_encode(1260, ek);
	memcpy(ek + INDEX_TIME_LEN, k.hash, CACHE_KEY_LEN);
	is_int(raw_put(&s, INDEX_NEG_EXPIRY, ek, sizeof(ek), "", 0), 0,
	    "write a stale expiry key");
	is_int(neg_expire(s.idx, 1270, 0, &n, err, sizeof(err)), 0,
	    "expire 1270");
	is_int(n, 0, "the stale key removes nothing");
	is_int(neg_lookup(&s, &k, 1270, &ne), 0, "the entry holds");

	/* Publishing the key forgets the miss. */
	is_int(put_blob(&s, &k, 40, 'p', 8, "", 1280), 0, "publish k");
	is_int(neg_lookup(&s, &k, 1280, &ne), INDEX_NOTFOUND,
	    "publish clears the negative");
	is_int(neg_expire(s.idx, 1300, 0, &n, err, sizeof(err)), 0,
	    "its expiry time comes");
	is_int(n, 0, "nothing left to expire");

	/* Purges: by id, then all. */
	neg_put(s.idx, &k, &id, NEG_NOTFOUND, 5000, err, sizeof(err));
	neg_put(s.idx, &k2, &id, NEG_NOTFOUND, 5000, err, sizeof(err));
	neg_put(s.idx, &k3, &other, NEG_ERROR, 5000, err, sizeof(err));
	is_int(neg_purge(s.idx, &id, &n, err, sizeof(err)), 0, "purge id");
	is_int(n, 2, "both of its entries");
	is_int(neg_lookup(&s, &k2, 1000, &ne), INDEX_NOTFOUND, "gone");
	is_int(neg_lookup(&s, &k3, 1000, &ne), 0, "the other id's stays");
	is_int(neg_purge(s.idx, NULL, &n, err, sizeof(err)), 0, "purge all");
	is_int(n, 1, "the last one");
	is_int(stats(&s).negatives, 0, "no negatives");
	is_int(neg_expire(s.idx, 9999, 0, &n, err, sizeof(err)), 0,
	    "expire after the purges");
	is_int(n, 0, "finds only stale keys");
	is_int(neg_put(s.idx, &k, &id, 7, 5000, err, sizeof(err)), -1,
	    "a bad kind is refused");
	store_close(&s);
}

static void
test_purge(void)
{
	struct bstore s;
	struct buildid a = make_id(50);
	struct blob_info bi = make_info(&a, CACHE_EXECUTABLE, "", "http://a");
	struct cache_key ka1, ka2, kb, kc;
	char tmp[PATH_MAX], err[ERRLEN];
	uint64_t n;

	if (!ok(store_open(&s, "purge", &nolimits) == 0, "purge: open"))
		return;
	put_blob(&s, &ka1, 50, '1', 10, "http://a", 1000);
	cache_key_make(&ka2, &a, CACHE_EXECUTABLE, "");
	fill_tmp(&s, '2', 20, tmp);
	bi.size = 20;
	blob_publish(s.bs, &ka2, tmp, &bi, 1000, err, sizeof(err));
	put_blob(&s, &kb, 51, '3', 40, "http://b", 1000);
	put_blob(&s, &kc, 52, '4', 80, "http://b/x", 1000);
	is_int(stats(&s).entries, 4, "four entries");

	is_int(blob_purge(s.bs, &a, NULL, STAMP, &n, err, sizeof(err)), 0,
	    "purge an id");
	is_int(n, 2, "both of its kinds");
	ok(!exists(blob_file(&s, &ka1)) && !exists(blob_file(&s, &ka2)),
	    "their files are gone");
	is_int(lookup(&s, &ka2), INDEX_NOTFOUND, "and their entries");
	is_int(stats(&s).bytes, 120, "120 bytes left");

	is_int(blob_purge(s.bs, NULL, "http://b", STAMP, &n, err, sizeof(err)),
	    0, "purge a source");
	is_int(n, 1, "only the exact source");
	is_int(lookup(&s, &kb), INDEX_NOTFOUND, "its entry is gone");
	is_int(lookup(&s, &kc), 0, "another source stays");
	is_int(stats(&s).bytes, 80, "80 bytes left");

	is_int(blob_purge(s.bs, NULL, NULL, STAMP, &n, err, sizeof(err)), 0,
	    "purge all");
	is_int(n, 1, "the last one");
	is_int(stats(&s).bytes, 0, "no bytes");
	is_int(stats(&s).entries, 0, "no entries");
	store_close(&s);
}

/* Publish 10 bytes as seed's debuginfo, for a fill begun at begun. */
static int
put_begun(struct bstore *s, struct cache_key *k, unsigned seed, int64_t begun)
{
	struct buildid id = make_id(seed);
	struct blob_info bi = make_info(&id, CACHE_DEBUGINFO, "", "http://a");
	char tmp[PATH_MAX], err[ERRLEN];

	cache_key_make(k, &id, CACHE_DEBUGINFO, "");
	if (fill_tmp(s, 'p', 10, tmp) == -1)
		return -1;
	bi.size = 10;
	bi.begun = begun;
	return blob_publish(s->bs, k, tmp, &bi, 1000, err, sizeof(err));
}

/*
 * A fill that began before a purge and publishes after it is dropped: a
 * client may have had its bytes (and asked for the purge) before the
 * entry was written.  By id for a purge of one id; every fill for a purge
 * by source.
 */
static void
test_purge_stamps(void)
{
	struct bstore s;
	struct buildid a = make_id(70);
	struct cache_key k;
	char err[ERRLEN];
	uint64_t n;

	if (!ok(store_open(&s, "stamps", &nolimits) == 0, "stamps: open"))
		return;
	is_int(blob_purge(s.bs, &a, NULL, 1000, &n, err, sizeof(err)), 0,
	    "a purge of an id nothing holds yet");
	is_int(put_begun(&s, &k, 70, 999), BLOB_PURGED,
	    "... drops the fill of that id begun before it");
	is_int(lookup(&s, &k), INDEX_NOTFOUND, "... which is not stored");
	is_int(stats(&s).tmp_bytes, 0, "... nor left in tmp/");
	is_int(put_begun(&s, &k, 70, 1000), BLOB_PURGED,
	    "... and the fill begun when it was");
	is_int(put_begun(&s, &k, 71, 999), 0,
	    "a fill of another id begun before it is kept");
	is_int(put_begun(&s, &k, 70, 1001), 0,
	    "a fill of the id begun after it is kept");
	is_int(lookup(&s, &k), 0, "... and found");
	is_int(blob_purge(s.bs, NULL, "http://elsewhere", 2000, &n, err,
		   sizeof(err)),
	    0, "a purge by source");
	is_int(put_begun(&s, &k, 72, 1999), BLOB_PURGED,
	    "... drops every fill begun before it");
	is_int(put_begun(&s, &k, 72, 0), 0,
	    "an upload (no begun) is never dropped");
	store_close(&s);
}

static void
test_corrupt(void)
{
	struct bstore s;
	struct cache_key k, good;
	struct blob_hdr h;
	struct neg_entry ne;
	struct blob_info bi;
	struct buildid id = make_id(60);
	uint8_t rec[sizeof(h) + 8], lk[LRUKEY_LEN];
	static const uint8_t nuls[] = { 2, 4, 7 }, v1_nuls[] = { 4, 5, 6 };
	char err[ERRLEN];
	uint64_t n, bytes;
	struct blob_recovery rv;
	int rc, fails = 0;
	size_t i;

	if (!ok(store_open(&s, "corrupt", &nolimits) == 0, "corrupt: open"))
		return;
	put_blob(&s, &good, 61, 'g', 10, "", 1000);
	cache_key_make(&k, &id, CACHE_DEBUGINFO, "");

	is_int(raw_put(&s, INDEX_BLOBS, k.hash, CACHE_KEY_LEN, "junk", 4), 0,
	    "write a short blob record");
	is_int(lookup(&s, &k), -1, "lookup says error");
	/* Lengths that point past the record, then missing NULs. */
	memset(&h, 0, sizeof(h));
	h.kind = CACHE_DEBUGINFO;
	h.arglen = 0xffffffffu;
	h.sourcelen = 2;
	memcpy(rec, &h, sizeof(h));
	memset(rec + sizeof(h), 'x', 8);
	raw_put(&s, INDEX_BLOBS, k.hash, CACHE_KEY_LEN, rec, sizeof(rec));
	is_int(lookup(&s, &k), -1, "huge lengths: error");
	h.arglen = 2;
	h.sourcelen = 1;
	h.metalen = 2;
	memcpy(rec, &h, sizeof(h));
	raw_put(&s, INDEX_BLOBS, k.hash, CACHE_KEY_LEN, rec, sizeof(rec));
	is_int(lookup(&s, &k), -1, "lengths right, no NULs: error");
	/*
	 * A version 0 entry, as older programs wrote them: "aa\0s\0hh\0"
	 * is valid, its header lines "hh" reading back as the opaque lines;
	 * each NUL replaced is not.
	 */
	memcpy(rec + sizeof(h), "aa\0s\0hh\0", 8);
	raw_put(&s, INDEX_BLOBS, k.hash, CACHE_KEY_LEN, rec, sizeof(rec));
	index_reader_begin(s.rd);
	rc = blob_lookup(s.rd, &k, &bi);
	ok(rc == 0 && strcmp(bi.arg, "aa") == 0 &&
		strcmp(bi.source, "s") == 0 && bi.meta.extra_len == 2 &&
		strcmp(bi.meta.extra, "hh") == 0 && bi.meta.file[0] == '\0' &&
		bi.meta.archive[0] == '\0' && bi.meta.imasig[0] == '\0',
	    "a hand-made version 0 record reads back, its lines as they were");
	index_reader_end(s.rd);
	for (i = 0; i < sizeof(nuls); i++) {
		rec[sizeof(h) + nuls[i]] = 'x';
		raw_put(&s, INDEX_BLOBS, k.hash, CACHE_KEY_LEN, rec,
		    sizeof(rec));
		is_int(lookup(&s, &k), -1, "a string without its NUL: error");
		rec[sizeof(h) + nuls[i]] = '\0';
	}
	/*
	 * Version 1: arg "a", source "", then file "f", archive "" and
	 * imasig "" each with a NUL, no other lines, and the last NUL.
	 */
	h.version = 1;
	h.arglen = 1;
	h.sourcelen = 0;
	h.metalen = 4;
	memcpy(rec, &h, sizeof(h));
	memcpy(rec + sizeof(h), "a\0\0f\0\0\0\0", 8);
	raw_put(&s, INDEX_BLOBS, k.hash, CACHE_KEY_LEN, rec, sizeof(rec));
	index_reader_begin(s.rd);
	rc = blob_lookup(s.rd, &k, &bi);
	ok(rc == 0 && strcmp(bi.meta.file, "f") == 0 &&
		bi.meta.archive[0] == '\0' && bi.meta.imasig[0] == '\0' &&
		bi.meta.extra_len == 0,
	    "a hand-made version 1 record reads back");
	index_reader_end(s.rd);
	for (i = 0; i < sizeof(v1_nuls); i++) {
		rec[sizeof(h) + v1_nuls[i]] = 'x';
		raw_put(&s, INDEX_BLOBS, k.hash, CACHE_KEY_LEN, rec,
		    sizeof(rec));
		is_int(lookup(&s, &k), -1,
		    "version 1: a value without its NUL: error");
		rec[sizeof(h) + v1_nuls[i]] = '\0';
	}
	h.version = 2;
	memcpy(rec, &h, sizeof(h));
	raw_put(&s, INDEX_BLOBS, k.hash, CACHE_KEY_LEN, rec, sizeof(rec));
	is_int(lookup(&s, &k), -1, "an unknown version: error");
	h.version = 0;
	h.arglen = 2;
	h.sourcelen = 1;
	h.metalen = 2;
	memcpy(rec + sizeof(h), "aa\0s\0hh\0", 8);
	h.kind = 9;
	memcpy(rec, &h, sizeof(h));
	raw_put(&s, INDEX_BLOBS, k.hash, CACHE_KEY_LEN, rec, sizeof(rec));
	is_int(lookup(&s, &k), -1, "a bad kind: error");
	/* Each single byte of a valid record's header flipped: no crash. */
	h.kind = CACHE_DEBUGINFO;
	h.idlen = 20;
	for (i = 0; i < sizeof(h); i++) {
		memcpy(rec, &h, sizeof(h));
		rec[i] ^= 0xa5;
		raw_put(&s, INDEX_BLOBS, k.hash, CACHE_KEY_LEN, rec,
		    sizeof(rec));
		index_reader_begin(s.rd);
		rc = blob_lookup(s.rd, &k, &bi);
		index_reader_end(s.rd);
		fails += rc == -1;
	}
	ok(fails > 0, "flipped headers are found out, no crash");
	printf("#   %d of %zu flips caught\n", fails, sizeof(h));
	raw_put(&s, INDEX_BLOBS, k.hash, CACHE_KEY_LEN, "junk", 4);

	raw_put(&s, INDEX_NEG, k.hash, CACHE_KEY_LEN, "junk", 4);
	is_int(neg_lookup(&s, &k, 1000, &ne), -1, "a short negative: error");
	/* LRU keys of the wrong length or for no entry. */
	raw_put(&s, INDEX_LRU, "x", 1, "", 0);
	lru_key(5, 5, k.hash, lk);
	raw_put(&s, INDEX_LRU, lk, sizeof(lk), "", 0);
	raw_put(&s, INDEX_NEG_EXPIRY, "y", 1, "", 0);

	blob_touch(s.bs, &k, 2000);
	is_int(flush(&s), 0, "touching a damaged entry is harmless");
	is_int(neg_expire(s.idx, 1000, 0, &n, err, sizeof(err)), 0,
	    "expire over a damaged key");
	s.bs->lim.max_bytes = 5;
	s.bs->lim.high_pct = 0;
	s.bs->lim.low_pct = 0;
	is_int(blob_evict(s.bs, &n, &bytes, err, sizeof(err)), 0,
	    "evict over damaged keys");
	is_int(n, 1, "evicts the good entry only");
	s.bs->lim = nolimits;
	is_int(put_blob(&s, &good, 61, 'g', 10, "", 1000), 0, "publish again");
	is_int(blobstore_recover(s.bs, &rv, err, sizeof(err)), 0, "recover");
	is_int(rv.entries, 1, "drops the damaged entry");
	is_int(lookup(&s, &k), INDEX_NOTFOUND, "it is gone");
	is_int(lookup(&s, &good), 0, "the good one stays");
	is_int(stats(&s).bytes, 10, "the total is recounted");
	raw_put(&s, INDEX_BLOBS, k.hash, CACHE_KEY_LEN, "junk", 4);
	is_int(blob_purge(s.bs, &id, NULL, STAMP, &n, err, sizeof(err)), 0,
	    "purge an id over a damaged entry");
	is_int(n, 0, "it does not match");
	is_int(blob_purge(s.bs, NULL, NULL, STAMP, &n, err, sizeof(err)), 0,
	    "purge all");
	is_int(n, 2, "takes the damaged one too");
	is_int(neg_purge(s.idx, NULL, &n, err, sizeof(err)), 0,
	    "purge all negatives");
	is_int(n, 1, "the damaged one too");
	store_close(&s);
}

/* The schema number and a read-only index of a cache the store wrote. */
static void
test_index_flags(void)
{
	struct index *idx;
	char err[ERRLEN];

	err[0] = '\0';
	idx = index_open(at("nocache/index"), INDEX_EXISTING, MAPSIZE, err,
	    sizeof(err));
	ok(idx == NULL, "INDEX_EXISTING does not create an index");
	printf("#   %s\n", err);
	index_close(idx);
	idx = index_open(at("publish/index"), INDEX_EXISTING, MAPSIZE, err,
	    sizeof(err));
	ok(idx != NULL, "and opens an existing one writable");
	index_close(idx);
}

/* A distinct build-id and key for each n. */
static void
neg_key(uint32_t n, struct buildid *id, struct cache_key *k)
{
	memset(id, 0, sizeof(*id));
	id->len = 20;
	memcpy(id->bytes, &n, sizeof(n));
	cache_key_make(k, id, CACHE_DEBUGINFO, "");
}

/*
 * A flood of misses in a tiny map: new entries are refused before the map
 * is full, deleting them all works, and the map takes new ones again; and
 * the bound on their number drops the soonest to expire first.
 */
static void
test_negative_full(void)
{
	char path[PATH_MAX], err[ERRLEN];
	struct index_reader *rd;
	struct cache_key k;
	struct neg_entry ne;
	struct buildid id;
	struct index *idx;
	uint64_t n = 0, count = 0;
	uint32_t i, kept = 0;

	snprintf(path, sizeof(path), "%s", at("tinymap"));
	if (!ok((idx = index_open(path, 0, 1u << 20, err, sizeof(err))) != NULL,
		"an index with a 1 MiB map"))
		return;
	for (i = 0; i < 100000; i++) {
		neg_key(i, &id, &k);
		if (neg_put(idx, &k, &id, NEG_NOTFOUND, 5000 + i, err,
			sizeof(err)) == -1)
			break;
		kept++;
	}
	ok(i < 100000 && strstr(err, "index-map-size") != NULL,
	    "a flood of misses: new ones are refused before the map is full, "
	    "saying what to raise");
	printf("# %u kept, then: %s\n", kept, err);
	if (!ok(neg_purge(idx, NULL, &n, err, sizeof(err)) == 0 && n == kept,
		"purge --negative still works, and deletes them all"))
		printf("# %llu deleted: %s\n", (unsigned long long)n, err);
	neg_key(1, &id, &k);
	ok(neg_put(idx, &k, &id, NEG_NOTFOUND, 9000, err, sizeof(err)) == 0,
	    "... after which new misses are kept again");
	ok(neg_purge(idx, NULL, &n, err, sizeof(err)) == 0, "empty it");

	/* The bound: 500 entries, at most 100 kept, soonest to expire out. */
	for (i = 0; i < 500; i++) {
		neg_key(i, &id, &k);
		neg_put(idx, &k, &id, NEG_NOTFOUND, 5000 + i, err, sizeof(err));
	}
	ok(neg_expire(idx, 1000, 100, &n, err, sizeof(err)) == 0 && n == 400,
	    "negative-max 100: 400 of 500 unexpired entries go");
	rd = index_reader_new(idx);
	if (rd != NULL && index_reader_begin(rd) == 0) {
		index_count(rd, INDEX_NEG, &count);
		neg_key(399, &id, &k);
		is_int(neg_get(rd, &k, 1000, &ne), INDEX_NOTFOUND,
		    "... the soonest to expire first");
		neg_key(400, &id, &k);
		is_int(neg_get(rd, &k, 1000, &ne), 0,
		    "... the later ones kept");
		index_reader_end(rd);
	}
	is_int(count, 100, "... 100 left");
	index_reader_free(rd);
	index_close(idx);
}

/*
 * Fill a store's map with entries (no files: removing them finds none) in
 * batches, halved at each failed commit, until not even one fits; how
 * many were kept.
 */
static uint32_t
fill_map(struct bstore *s, uint32_t seed)
{
	struct index_batch *b;
	struct blob_info bi;
	struct cache_key k;
	struct buildid id;
	uint8_t *rec, lk[LRUKEY_LEN];
	uint64_t total;
	size_t len;
	uint32_t kept = 0, batch = 100, i;
	char err[ERRLEN];

	while (batch > 0) {
		if ((b = index_batch_begin(s->idx, err, sizeof(err))) == NULL)
			return kept;
		for (i = 0; i < batch; i++) {
			neg_key(seed + kept + i, &id, &k);
			bi = make_info(&id, CACHE_DEBUGINFO, "", "http://up/");
			bi.size = 10;
			/*
			 * Entries of the size this test was written with
			 * (a meta area of 23 bytes): whether a sweep can
			 * start in a map filled to the last page depends on
			 * what the last failed batch left free.
			 */
			memset(&bi.meta, 0, sizeof(bi.meta));
			bi.meta.extra = "X-Debuginfod-Size: 1";
			bi.meta.extra_len = strlen(bi.meta.extra);
			if ((rec = blob_encode(&bi, 1000, &len)) == NULL)
				break;
			lru_key(1000, 1000, k.hash, lk);
			index_batch_put_rec(b, INDEX_BLOBS, k.hash,
			    CACHE_KEY_LEN, rec, len);
			index_batch_put_rec(b, INDEX_LRU, lk, sizeof(lk), "",
			    0);
			free(rec);
		}
		counter_add(b, BYTES_COUNTER, 10 * i, 0, &total);
		if (index_batch_commit(b, err, sizeof(err)) == -1)
			batch /= 2;
		else
			kept += i;
	}
	return kept;
}

/* A map full of cache entries: purge and eviction still empty it. */
static void
test_blobs_full(void)
{
	static const struct blob_limits all = { 1, 0, 0, 0, 0 };
	char path[PATH_MAX], err[ERRLEN];
	struct bstore s;
	uint64_t n = 0, bytes = 0;
	uint32_t kept;

	memset(&s, 0, sizeof(s));
	snprintf(s.dir, sizeof(s.dir), "%s", at("fullmap"));
	mkdir(s.dir, 0755);
	if (snprintf(path, sizeof(path), "%s/index", s.dir) >=
	    (int)sizeof(path))
		return;
	if (!ok((s.idx = index_open(path, 0, 1u << 20, err, sizeof(err))) !=
			NULL &&
		    (s.bs = blobstore_new(s.idx, s.dir, &nolimits, err,
			 sizeof(err))) != NULL &&
		    (s.rd = index_reader_new(s.idx)) != NULL,
		"a store with a 1 MiB map"))
		return;
	kept = fill_map(&s, 0);
	printf("# %u entries fill the map\n", kept);
	if (!ok(blob_purge(s.bs, NULL, NULL, STAMP, &n, err, sizeof(err)) ==
			0 &&
		    n == kept,
		"purging every entry of a full map works, and removes them "
		"all"))
		printf("# %llu removed: %s\n", (unsigned long long)n, err);
	is_int(stats(&s).entries, 0, "no entry left");
	is_int(stats(&s).bytes, 0, "no byte left");

	kept = fill_map(&s, 1000000);
	s.bs->lim = all;
	if (!ok(blob_evict(s.bs, &n, &bytes, err, sizeof(err)) == 0 &&
		    n == kept && bytes == 10ull * kept,
		"eviction in a full map works, and evicts them all"))
		printf("# %llu evicted: %s\n", (unsigned long long)n, err);
	is_int(stats(&s).entries, 0, "no entry left");
	is_int(stats(&s).evictions, kept, "each counted");
	store_close(&s);
}

/* The temp file of the last put_upload_over or put_fill. */
static char last_tmp[PATH_MAX];

/*
 * Publish len bytes of c under id seed as an upload that may replace the
 * cached file open as fd replaces (-1: none).
 */
static int
put_upload_over(struct bstore *s, struct cache_key *k, unsigned seed, char c,
    size_t len, int64_t now, int replaces)
{
	struct buildid id = make_id(seed);
	struct blob_info bi =
	    make_info(&id, CACHE_DEBUGINFO, "", BLOB_UPLOAD_SOURCE);
	struct stat st;
	char err[ERRLEN];

	cache_key_make(k, &id, CACHE_DEBUGINFO, "");
	if (fill_tmp_of(s, 1, c, len, last_tmp) == -1)
		return -1;
	bi.size = len;
	bi.uploaded = 1;
	if (replaces != -1 && fstat(replaces, &st) == 0) {
		bi.replaces_dev = (uint64_t)st.st_dev;
		bi.replaces_ino = (uint64_t)st.st_ino;
	}
	return blob_publish(s->bs, k, last_tmp, &bi, now, err, sizeof(err));
}

/* Publish len bytes of c under id seed as an upload. */
static int
put_upload(struct bstore *s, struct cache_key *k, unsigned seed, char c,
    size_t len, int64_t now)
{
	return put_upload_over(s, k, seed, c, len, now, -1);
}

/* Publish len bytes of c under id seed as a fill, from last_tmp. */
static int
put_fill(struct bstore *s, struct cache_key *k, unsigned seed, char c,
    size_t len, int64_t now)
{
	struct buildid id = make_id(seed);
	struct blob_info bi = make_info(&id, CACHE_DEBUGINFO, "", "http://up");
	char err[ERRLEN];

	cache_key_make(k, &id, CACHE_DEBUGINFO, "");
	if (fill_tmp(s, c, len, last_tmp) == -1)
		return -1;
	bi.size = len;
	return blob_publish(s->bs, k, last_tmp, &bi, now, err, sizeof(err));
}

/* The first byte of k's blob; -1 when there is none. */
static int
first_byte(struct bstore *s, const struct cache_key *k)
{
	char b;
	int fd = blob_open(s->bs, k), rc = -1;

	if (fd != -1 && read(fd, &b, 1) == 1)
		rc = (unsigned char)b;
	if (fd != -1)
		close(fd);
	return rc;
}

/*
 * Which entry of a key gives way: a fill replaces a cached entry, never an
 * upload; an upload replaces nothing but the cached entry it names by its
 * file, and a key that has no entry.  What does not give way is
 * BLOB_EXISTS, the temp file left to the caller.
 */
static void
test_publish_exists(void)
{
	struct bstore s;
	struct cache_key k, up;
	int old, cached;

	if (!ok(store_open(&s, "exists", &nolimits) == 0, "exists: open"))
		return;
	is_int(put_fill(&s, &k, 60, 'a', 10, 1000), 0, "a fill of a key");
	is_int(put_fill(&s, &k, 60, 'b', 10, 1001), 0,
	    "... another fill replaces it");
	is_int(first_byte(&s, &k), 'b', "... the second one's bytes");
	is_int(put_upload(&s, &up, 60, 'u', 10, 1002), BLOB_EXISTS,
	    "an upload that names no entry: the cached one stays");
	ok(exists(last_tmp), "... the upload's temp file left to the caller");
	unlink(last_tmp);
	is_int(first_byte(&s, &k), 'b', "... its bytes served");
	old = blob_open(s.bs, &k);
	is_int(put_fill(&s, &k, 60, 'c', 10, 1003), 0,
	    "a fill replaces the cached entry meanwhile");
	is_int(put_upload_over(&s, &up, 60, 'u', 10, 1004, old), BLOB_EXISTS,
	    "... an upload that names the file it compared, now replaced: "
	    "the new one stays");
	unlink(last_tmp);
	close(old);
	is_int(first_byte(&s, &k), 'c', "... its bytes served");
	cached = blob_open(s.bs, &k);
	is_int(put_upload_over(&s, &up, 60, 'u', 10, 1006, cached), 0,
	    "an upload that names the cached file: replaces it");
	close(cached);
	is_int(first_byte(&s, &up), 'u', "... the upload's bytes served");
	is_int(put_fill(&s, &k, 60, 'd', 10, 1007), BLOB_EXISTS,
	    "a fill over an upload: the upload stays");
	ok(exists(last_tmp), "... the fill's temp file left to the caller");
	unlink(last_tmp);
	is_int(first_byte(&s, &up), 'u', "... its bytes served");
	is_int(put_upload(&s, &up, 60, 'v', 10, 1008), BLOB_EXISTS,
	    "an upload over an upload: the first stays");
	unlink(last_tmp);
	is_int(first_byte(&s, &up), 'u', "... its bytes served");
	is_int(stats(&s).upload_bytes, 10, "... the uploads' bytes: one's");
	is_int(stats(&s).bytes, 0, "... the cache's: none");
	store_close(&s);
}

/* Uploads: counted apart, capped apart, never evicted, purged. */
static void
test_uploaded(void)
{
	struct blob_limits lim = { 100, 90, 50, 0, 50 };
	struct bstore s;
	struct cache_key up, k1, k2, k3;
	struct buildid id = make_id(40);
	struct blob_stats st;
	struct blob_recovery rec;
	uint64_t n = 0, bytes = 0, cached;
	char err[ERRLEN];

	if (!ok(store_open(&s, "uploaded", &lim) == 0, "uploaded: open"))
		return;
	is_int(put_upload(&s, &up, 40, 'u', 40, 1000), 0, "upload 40 bytes");
	ok(exists(upload_file(&s, &up)) && !exists(blob_file(&s, &up)),
	    "... kept in the upload directory, not in blobs/");
	st = stats(&s);
	is_int(st.bytes, 0, "not in the cache's bytes");
	is_int(st.upload_bytes, 40, "in the uploads' bytes");
	is_int(put_upload(&s, &k3, 41, 'v', 20, 1001), BLOB_TOO_BIG,
	    "an upload over upload-size is refused");
	is_int(lookup(&s, &k3), INDEX_NOTFOUND, "... and not stored");
	/* The upload is the oldest entry and was hit long ago. */
	blob_touch(s.bs, &up, 1002);
	is_int(blob_flush_touches(s.bs, err, sizeof(err)), 0, "touch it");
	is_int(put_blob(&s, &k1, 42, 'a', 60, "", 1003), 0, "cache 60");
	is_int(put_blob(&s, &k2, 43, 'b', 60, "", 1004), 0,
	    "cache 60 more: over the cap, eviction runs");
	blob_evict(s.bs, &n, &bytes, err, sizeof(err));
	is_int(lookup(&s, &up), 0, "the upload is never evicted");
	ok(exists(upload_file(&s, &up)), "... nor its file");
	is_int(lookup(&s, &k1), INDEX_NOTFOUND, "the cached LRU entry is");
	st = stats(&s);
	is_int(st.upload_bytes, 40, "uploads still 40 bytes");
	ok(st.bytes <= 60, "the cache's bytes fell");
	cached = st.bytes;
	is_int(blobstore_recover(s.bs, &rec, err, sizeof(err)), 0, "recover");
	st = stats(&s);
	is_int(st.upload_bytes, 40, "recovery counts uploads apart");
	is_int(st.bytes, cached, "... and the cache's bytes as before");
	is_int(rec.files, 0, "... and removes no upload file");
	is_int(blob_purge(s.bs, &id, NULL, STAMP, &n, err, sizeof(err)), 0,
	    "purge the upload's id");
	is_int(lookup(&s, &up), INDEX_NOTFOUND, "the upload is gone");
	ok(!exists(upload_file(&s, &up)), "... and its file");
	is_int(stats(&s).upload_bytes, 0, "uploads: 0 bytes");
	store_close(&s);
}

/*
 * The upload directory: what is read from it, what becomes of a cached
 * copy an upload replaces, and what recovery does there: no file of it is
 * ever deleted, uploads kept in blobs/ by older versions move to it.
 */
static void
test_upload_dir(void)
{
	struct bstore s;
	struct cache_key up, cached, old;
	struct buildid oldid = make_id(52);
	struct blob_info bi = make_info(&oldid, CACHE_DEBUGINFO, "", "");
	struct blob_recovery rec;
	char junk[2 * PATH_MAX], tmp[PATH_MAX], err[ERRLEN], buf[8];
	int fd;

	if (!ok(store_open(&s, "updir", &nolimits) == 0, "updir: open"))
		return;
	/* The same key cached, then uploaded: one file, the upload's. */
	is_int(put_blob(&s, &cached, 50, 'c', 8, "", 1000), 0, "cache 8 bytes");
	ok(exists(blob_file(&s, &cached)), "... in blobs/");
	fd = blob_open(s.bs, &cached);
	is_int(put_upload_over(&s, &up, 50, 'u', 8, 1001, fd), 0,
	    "upload the same key, replacing the cached file");
	close(fd);
	ok(exists(upload_file(&s, &up)), "... now in the upload directory");
	ok(!exists(blob_file(&s, &up)), "... and no longer in blobs/");
	fd = blob_open(s.bs, &up);
	ok(fd != -1 && read(fd, buf, 8) == 8 && buf[0] == 'u',
	    "blob_open finds it there");
	if (fd != -1)
		close(fd);
	is_int(stats(&s).bytes, 0, "the cache's bytes: 0");
	is_int(stats(&s).upload_bytes, 8, "the uploads': 8");

	/* An upload kept in blobs/ by an older version. */
	cache_key_make(&old, &oldid, CACHE_DEBUGINFO, "");
	bi.size = 6;
	bi.uploaded = 1;
	/* As if none: blob_path gives blobs/. */
	free(s.bs->updir);
	s.bs->updir = NULL;
	fill_tmp(&s, 'o', 6, tmp);
	is_int(blob_publish(s.bs, &old, tmp, &bi, 1002, err, sizeof(err)), 0,
	    "an upload published as older versions did");
	blobstore_set_upload_dir(s.bs, s.updir, err, sizeof(err));
	ok(exists(blob_file(&s, &old)), "... in blobs/");
	fd = blob_open(s.bs, &old);
	ok(fd != -1, "blob_open finds it there too");
	if (fd != -1)
		close(fd);

	/* Junk, and an upload's leftover temp file. */
	snprintf(junk, sizeof(junk), "%s/notes.txt", s.updir);
	close(open(junk, O_WRONLY | O_CREAT, 0644));
	snprintf(junk, sizeof(junk), "%s/ab", s.updir);
	mkdir(junk, 0755);
	snprintf(junk, sizeof(junk), "%s/ab/not-a-key", s.updir);
	close(open(junk, O_WRONLY | O_CREAT, 0644));
	fill_tmp_of(&s, 1, 't', 3, tmp);
	is_int(blobstore_recover(s.bs, &rec, err, sizeof(err)), 0, "recover");
	is_int(rec.uploads_moved, 1, "moves the old upload");
	ok(exists(upload_file(&s, &old)) && !exists(blob_file(&s, &old)),
	    "... from blobs/ to the upload directory");
	is_int(lookup(&s, &old), 0, "... keeping its entry");
	is_int(rec.uploads_unknown, 1, "counts the file that is no upload");
	ok(exists(junk), "... and keeps it");
	snprintf(junk, sizeof(junk), "%s/notes.txt", s.updir);
	ok(exists(junk), "a file beside the uploads' directories is kept");
	ok(!exists(tmp), "an upload's temp file is removed");
	is_int(rec.files, 1, "... and counted");
	is_int(stats(&s).upload_bytes, 14, "the uploads: 8 and 6 bytes");
	store_close(&s);
}

int
main(void)
{
	if (!ok(testdir_make("test_blobstore") == 0,
		"make a temporary directory"))
		return tap_done();

	test_publish();
	test_too_big();
	test_recover();
	test_evict();
	test_arithmetic();
	test_negative();
	test_negative_full();
	test_blobs_full();
	test_purge();
	test_purge_stamps();
	test_corrupt();
	test_index_flags();
	test_uploaded();
	test_upload_dir();
	test_publish_exists();

	testdir_remove();
	return tap_done();
}
