/*
 * tests/fuzz/fuzz_records.c: fuzz the decoders of the records the cache
 * keeps in LMDB: index_file_decode() (files, and packages through
 * pkgidx_package_decode()), pkgidx_member_decode(), neg_decode(),
 * blob_decode() and index_time_decode().
 *
 * An index is trusted no more than the disk under it: a damaged or
 * planted map must give "damaged", never a read outside the record or a
 * path that is not one.  The input is one byte for the key's length, the
 * key, and the value; key and value are heap copies of their exact size,
 * so AddressSanitizer sees a decoder reading a byte past either, and every
 * decoder gets the same record.
 *
 * Besides memory errors, the target aborts when a decoded record breaks
 * its contract: a string that does not lie in the value with its NUL, an
 * id over BUILDID_MAX, kinds or a kind out of range, a package or member
 * path that is not absolute, blob_decode() answering differently with and
 * without info, or a file record that does not decode to itself once
 * encoded again.  Times must encode back to their bytes, in order.
 */
#include "cache/blobstore.h"
#include "cache/files.h"
#include "cache/index.h"
#include "cache/negative.h"
#include "cache/pkgindex.h"

#include "tests/fuzz/fuzz.h"

/* 1 when s and its NUL lie in [base, base + len). */
static int
string_inside(const char *s, const char *base, size_t len)
{
	return fuzz_inside(s, 1, base, len) &&
	    memchr(s, '\0', (size_t)(base + len - s)) != NULL;
}

static void
check_file(const char *val, size_t len)
{
	struct index_file f, g;
	char *buf;
	size_t n;

	memset(&f, 0x5a, sizeof(f));
	if (index_file_decode(val, len, &f) == -1)
		return;
	FUZZ_CHECK(string_inside(f.path, val, len));
	FUZZ_CHECK(f.id.len <= BUILDID_MAX);
	FUZZ_CHECK((f.kinds & ~(unsigned)ELF_KIND_ALL) == 0);
	/* A path cut short by a NUL inside it encodes shorter: still itself. */
	if ((buf = malloc(len)) == NULL)
		return;
	n = index_file_encode(&f, buf, len);
	FUZZ_CHECK(n > 0 && n <= len);
	FUZZ_CHECK(index_file_decode(buf, n, &g) == 0);
	FUZZ_CHECK(strcmp(g.path, f.path) == 0 && g.size == f.size &&
	    g.mtime_sec == f.mtime_sec && g.mtime_nsec == f.mtime_nsec &&
	    g.ino == f.ino && g.dev == f.dev && g.kinds == f.kinds &&
	    buildid_equal(&g.id, &f.id));
	free(buf);
}

static void
check_package(const struct index_rec *r)
{
	struct index_file f;

	if (pkgidx_package_decode(r, &f) == -1)
		return;
	FUZZ_CHECK(string_inside(f.path, r->val, r->vallen));
	FUZZ_CHECK(f.path[0] == '/');
}

static void
check_member(const struct index_rec *r)
{
	struct pkg_rec m;

	memset(&m, 0x5a, sizeof(m));
	if (pkgidx_member_decode(r, &m) == -1)
		return;
	FUZZ_CHECK(string_inside(m.package, r->val, r->vallen));
	FUZZ_CHECK(string_inside(m.member, r->val, r->vallen));
	FUZZ_CHECK(m.package[0] == '/' && m.member[0] == '/');
	FUZZ_CHECK(m.id.len <= BUILDID_MAX);
	if (m.kinds == PKG_REC_FILE)
		FUZZ_CHECK(m.id.len == 0);
	else
		FUZZ_CHECK(m.id.len > 0 &&
		    (m.kinds == PKG_REC_SOURCE ||
			(m.kinds != 0 &&
			    (m.kinds & ~(unsigned)ELF_KIND_ALL) == 0)));
}

static void
check_negative(const struct index_rec *r)
{
	struct neg_rec nr;

	if (neg_decode(r, &nr) == -1)
		return;
	FUZZ_CHECK(nr.kind == NEG_NOTFOUND || nr.kind == NEG_ERROR);
	FUZZ_CHECK(nr.idlen <= BUILDID_MAX);
}

static void
check_blob(const struct index_rec *r)
{
	struct blob_hdr h, h2;
	struct blob_info info;
	int rc;

	memset(&info, 0x5a, sizeof(info));
	rc = blob_decode(r, &h, &info);
	FUZZ_CHECK(rc == 0 || rc == -1);
	FUZZ_CHECK(blob_decode(r, &h2, NULL) == rc);
	if (rc == -1)
		return;
	FUZZ_CHECK(r->keylen == CACHE_KEY_LEN);
	FUZZ_CHECK(string_inside(info.arg, r->val, r->vallen));
	FUZZ_CHECK(string_inside(info.source, r->val, r->vallen));
	FUZZ_CHECK(string_inside(info.meta.file, r->val, r->vallen));
	FUZZ_CHECK(string_inside(info.meta.archive, r->val, r->vallen));
	FUZZ_CHECK(string_inside(info.meta.imasig, r->val, r->vallen));
	FUZZ_CHECK(fuzz_inside(info.meta.extra, info.meta.extra_len + 1, r->val,
	    r->vallen));
	FUZZ_CHECK(info.meta.extra[info.meta.extra_len] == '\0');
	FUZZ_CHECK(h.version <= BLOB_VERSION);
	FUZZ_CHECK(cache_kind_name(info.kind) != NULL);
	FUZZ_CHECK(info.id.len <= BUILDID_MAX);
	FUZZ_CHECK(info.size == h.size && info.mtime == h.mtime &&
	    info.stored == h.stored && info.atime == h.atime);
}

static void
check_times(const uint8_t *key, size_t len)
{
	uint8_t out[INDEX_TIME_LEN];
	int64_t a, b;
	int order;

	if (len < INDEX_TIME_LEN)
		return;
	a = index_time_decode(key);
	index_time_encode(a, out);
	FUZZ_CHECK(memcmp(out, key, INDEX_TIME_LEN) == 0);
	if (len < 2 * INDEX_TIME_LEN)
		return;
	b = index_time_decode(key + INDEX_TIME_LEN);
	order = memcmp(key, key + INDEX_TIME_LEN, INDEX_TIME_LEN);
	FUZZ_CHECK((order < 0) == (a < b) && (order == 0) == (a == b));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct index_rec r;
	char *key, *val;
	size_t keylen;

	if (size == 0)
		return 0;
	keylen = data[0] < size - 1 ? data[0] : size - 1;
	key = fuzz_copy(data + 1, keylen);
	val = fuzz_copy(data + 1 + keylen, size - 1 - keylen);
	if (key != NULL && val != NULL) {
		r.key = key;
		r.keylen = keylen;
		r.val = val;
		r.vallen = size - 1 - keylen;
		check_file(val, r.vallen);
		check_package(&r);
		check_member(&r);
		check_negative(&r);
		check_blob(&r);
		check_times((const uint8_t *)key, keylen);
	}
	free(key);
	free(val);
	return 0;
}
