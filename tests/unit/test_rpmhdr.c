/*
 * tests/unit/test_rpmhdr.c: indexer/rpmhdr.c, IMA signatures from RPM
 * headers built here byte by byte: a lead, an empty signature header, and
 * a main header with the file lists and FILESIGNATURES; then the same
 * with every field that a hostile file could bend bent; then a header of
 * 20,000 files in 200,000 directories, every file looked up, with the
 * name comparisons counted (the .c is included to read the count).
 * Symbolic links (FILELINKTOS) lead to their targets' signatures; a
 * header read from a file that grows a few bytes at a time (a download)
 * reads as the whole file does.
 */
#include "indexer/rpmhdr.c"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/tap.h"
#include "tests/testdir.h"

#define SIG_A "0302046e6b2f6000473045022100aa"
#define SIG_B "0302046e6b2f6000473045022100bb"

/* A header under construction: index entries and a store. */
struct hdr {
	unsigned char index[16 * 8];
	unsigned nindex;
	unsigned char store[4096];
	size_t hsize;
};

static void
put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

/* Add an entry whose data are len bytes; returns its index slot. */
static unsigned char *
hdr_add(struct hdr *h, uint32_t tag, uint32_t type, uint32_t count,
    const void *data, size_t len)
{
	unsigned char *e = h->index + 16 * h->nindex++;

	put32(e, tag);
	put32(e + 4, type);
	put32(e + 8, (uint32_t)h->hsize);
	put32(e + 12, count);
	memcpy(h->store + h->hsize, data, len);
	h->hsize += len;
	return e;
}

static void
hdr_write(FILE *fp, const struct hdr *h, int pad)
{
	unsigned char intro[16] = { 0x8e, 0xad, 0xe8, 0x01 };
	size_t len = 16 + 16 * h->nindex + h->hsize;
	static const unsigned char zeros[8];

	put32(intro + 8, h->nindex);
	put32(intro + 12, (uint32_t)h->hsize);
	fwrite(intro, 1, sizeof(intro), fp);
	fwrite(h->index, 1, 16 * h->nindex, fp);
	fwrite(h->store, 1, h->hsize, fp);
	if (pad && len % 8 != 0)
		fwrite(zeros, 1, 8 - len % 8, fp);
}

enum bend {
	NONE,
	NO_SIGS,
	BAD_OFFSET,
	FEWER_SIGS,
	BAD_HEX,
	BIG_STORE,
	LINK, /* /usr/share/c is a link to ../bin/a */
	LOOP, /* /usr/share/c is a link to itself */
};

/* An RPM header naming /usr/bin/a (signed), /usr/lib/b.so (signed) and
 * /usr/share/c (not signed), bent as asked, written to name. */
static void
make_rpm(const char *name, enum bend bend)
{
	static const char dirs[] = "/usr/bin/\0/usr/lib/\0/usr/share/";
	static const char bases[] = "a\0b.so\0c";
	static const char sigs[] = SIG_A "\0" SIG_B "\0";
	static const char badsigs[] = SIG_A "\0zz-not-hex\0";
	unsigned char lead[96] = { 0xed, 0xab, 0xee, 0xdb };
	unsigned char idx[12];
	struct hdr sig = { 0 }, main = { 0 }, *m = &main;
	unsigned char *e;
	FILE *fp;

	put32(idx, 0);
	put32(idx + 4, 1);
	put32(idx + 8, 2);
	hdr_add(m, 1116, 4, 3, idx, sizeof(idx));
	hdr_add(m, 1117, 8, 3, bases, sizeof(bases));
	hdr_add(m, 1118, 8, 3, dirs, sizeof(dirs));
	if (bend == BAD_HEX)
		hdr_add(m, 5090, 8, 3, badsigs, sizeof(badsigs));
	else if (bend != NO_SIGS) {
		e = hdr_add(m, 5090, 8, bend == FEWER_SIGS ? 2 : 3, sigs,
		    sizeof(sigs));
		if (bend == BAD_OFFSET)
			put32(e + 8, 100000);
	}
	if (bend == LINK)
		hdr_add(m, 1036, 8, 3, "\0\0../bin/a", sizeof("\0\0../bin/a"));
	else if (bend == LOOP)
		hdr_add(m, 1036, 8, 3, "\0\0c", sizeof("\0\0c"));
	if ((fp = fopen(at(name), "w")) == NULL)
		return;
	fwrite(lead, 1, sizeof(lead), fp);
	hdr_write(fp, &sig, 1);
	if (bend == BIG_STORE) {
		unsigned char intro[16] = { 0x8e, 0xad, 0xe8, 0x01 };

		put32(intro + 8, 1);
		put32(intro + 12, 0x7fffffff);
		fwrite(intro, 1, sizeof(intro), fp);
	} else {
		hdr_write(fp, m, 0);
	}
	fwrite("payload", 1, 7, fp);
	fclose(fp);
}

/*
 * A header of nfiles files spread over ndirs directories (file i in
 * directory i * (ndirs / nfiles)), file i signed with its number in hex,
 * written as an RPM to name.
 */
static void
make_big_rpm(const char *name, uint32_t nfiles, uint32_t ndirs)
{
	unsigned char lead[96] = { 0xed, 0xab, 0xee, 0xdb };
	unsigned char index[4 * 16], intro[16] = { 0x8e, 0xad, 0xe8, 0x01 };
	struct hdr sig = { 0 };
	size_t cap = (size_t)ndirs * 16 + (size_t)nfiles * 40, len = 0;
	unsigned char *store = malloc(cap);
	size_t off[4];
	uint32_t i;
	FILE *fp;

	off[0] = len; /* DIRINDEXES */
	for (i = 0; i < nfiles; i++, len += 4)
		put32(store + len, i * (ndirs / nfiles));
	off[1] = len; /* BASENAMES */
	for (i = 0; i < nfiles; i++)
		len += (size_t)sprintf((char *)store + len, "f%u", i) + 1;
	off[2] = len; /* DIRNAMES */
	for (i = 0; i < ndirs; i++)
		len += (size_t)sprintf((char *)store + len, "/d/%u/", i) + 1;
	off[3] = len; /* FILESIGNATURES */
	for (i = 0; i < nfiles; i++)
		len += (size_t)sprintf((char *)store + len, "%08x", i + 1) + 1;
	put32(index, 1116);
	put32(index + 4, 4);
	put32(index + 8, (uint32_t)off[0]);
	put32(index + 12, nfiles);
	put32(index + 16, 1117);
	put32(index + 20, 8);
	put32(index + 24, (uint32_t)off[1]);
	put32(index + 28, nfiles);
	put32(index + 32, 1118);
	put32(index + 36, 8);
	put32(index + 40, (uint32_t)off[2]);
	put32(index + 44, ndirs);
	put32(index + 48, 5090);
	put32(index + 52, 8);
	put32(index + 56, (uint32_t)off[3]);
	put32(index + 60, nfiles);
	put32(intro + 8, 4);
	put32(intro + 12, (uint32_t)len);
	if ((fp = fopen(at(name), "w")) != NULL) {
		fwrite(lead, 1, sizeof(lead), fp);
		hdr_write(fp, &sig, 1);
		fwrite(intro, 1, sizeof(intro), fp);
		fwrite(index, 1, sizeof(index), fp);
		fwrite(store, 1, len, fp);
		fclose(fp);
	}
	free(store);
}

/*
 * Every file of a big header looked up: right signatures, and name
 * comparisons within a bound of n log n (the quadratic walk of old needed
 * billions, hours of CPU).
 */
static void
test_big_header(void)
{
	const uint32_t nfiles = 20000, ndirs = 200000;
	struct rpmhdr *rh = NULL;
	char err[256], path[64], sig[32], want[16];
	uint32_t i, right = 0;
	int fd;

	make_big_rpm("big.rpm", nfiles, ndirs);
	fd = open(at("big.rpm"), O_RDONLY);
	ok(fd != -1 && rpmhdr_open(fd, &rh, err, sizeof(err)) == 1,
	    "a header of 20,000 files in 200,000 directories opens");
	if (fd != -1)
		close(fd);
	if (rh == NULL)
		return;
	rpmhdr_compares = 0;
	for (i = 0; i < nfiles; i++) {
		snprintf(path, sizeof(path), "/d/%u/f%u", i * (ndirs / nfiles),
		    i);
		snprintf(want, sizeof(want), "%08x", i + 1);
		if (rpmhdr_ima_signature(rh, path, sig, sizeof(sig), err,
			sizeof(err)) == 1 &&
		    strcmp(sig, want) == 0)
			right++;
	}
	is_int(right, nfiles, "every one of its files has its own signature");
	ok(rpmhdr_compares <= 2 * 20000 * 16,
	    "the lookups cost O(log n) name comparisons each");
	printf("# %lu comparisons for 20,000 lookups\n", rpmhdr_compares);
	snprintf(path, sizeof(path), "/d/1/f0");
	is_int(rpmhdr_ima_signature(rh, path, sig, sizeof(sig), err,
		   sizeof(err)),
	    0, "a base name under another directory: none");
	rpmhdr_free(rh);
}

/* A download of the file src into fd, a few bytes per grow. */
struct trickle {
	int fd;
	FILE *src;
	unsigned calls;
};

static int
trickle_grow(uint64_t have, void *arg)
{
	struct trickle *t = arg;
	char buf[7];
	size_t n = fread(buf, 1, sizeof(buf), t->src);

	t->calls++;
	if (n == 0)
		return 0;
	return write(t->fd, buf, n) == (ssize_t)n ? 1 : -1;
}

/* rpmhdr_open_grow on good.rpm as it arrives: its signature. */
static void
test_grow(void)
{
	struct trickle t = { -1, NULL, 0 };
	struct rpmhdr *rh = NULL;
	char err[256], sig[256] = "";
	int rc = -2;

	t.fd = open(at("growing.rpm"), O_RDWR | O_CREAT | O_TRUNC, 0600);
	t.src = fopen(at("good.rpm"), "r");
	if (t.fd != -1 && t.src != NULL)
		rc = rpmhdr_open_grow(t.fd, trickle_grow, &t, &rh, err,
		    sizeof(err));
	is_int(rc, 1, "a header that arrives 7 bytes at a time reads");
	ok(t.calls > 40, "... waiting for it many times");
	ok(rh != NULL &&
		rpmhdr_ima_signature(rh, "/usr/bin/a", sig, sizeof(sig), err,
		    sizeof(err)) == 1 &&
		strcmp(sig, SIG_A) == 0,
	    "... with the signatures of the whole file");
	rpmhdr_free(rh);
	if (t.src != NULL)
		fclose(t.src);
	if (t.fd != -1)
		close(t.fd);
	/* Cut short: the download failed after the lead. */
	t.fd = open(at("growing.rpm"), O_RDWR | O_CREAT | O_TRUNC, 0600);
	t.src = fopen(at("cut.rpm"), "r");
	if (t.fd != -1 && t.src != NULL)
		rc = rpmhdr_open_grow(t.fd, trickle_grow, &t, &rh, err,
		    sizeof(err));
	is_int(rc, -1, "a header whose download ends early: error");
	if (t.src != NULL)
		fclose(t.src);
	if (t.fd != -1)
		close(t.fd);
}

/* rpmhdr_open and rpmhdr_ima_signature on the file name for path. */
static int
sig_of(const char *name, const char *path, char *out, size_t outlen)
{
	struct rpmhdr *rh;
	char err[256];
	int fd, rc;

	out[0] = '\0';
	if ((fd = open(at(name), O_RDONLY)) == -1)
		return -2;
	rc = rpmhdr_open(fd, &rh, err, sizeof(err));
	close(fd);
	if (rc == 1) {
		rc = rpmhdr_ima_signature(rh, path, out, outlen, err,
		    sizeof(err));
		rpmhdr_free(rh);
	}
	if (rc == -1)
		printf("# %s: %s\n", name, err);
	return rc;
}

int
main(void)
{
	char sig[256];

	if (testdir_make("test_rpmhdr") == -1) {
		perror("mkdtemp");
		return 1;
	}
	make_rpm("good.rpm", NONE);
	is_int(sig_of("good.rpm", "/usr/bin/a", sig, sizeof(sig)), 1,
	    "a signed file is found");
	is_str(sig, SIG_A, "... with its signature");
	is_int(sig_of("good.rpm", "/usr/lib/b.so", sig, sizeof(sig)), 1,
	    "the second file, in another directory");
	is_str(sig, SIG_B, "... with its own signature");
	is_int(sig_of("good.rpm", "/usr/share/c", sig, sizeof(sig)), 0,
	    "a file with an empty signature: none");
	is_int(sig_of("good.rpm", "/usr/bin/nope", sig, sizeof(sig)), 0,
	    "a file the package lacks: none");
	is_int(sig_of("good.rpm", "/usr/lib/a", sig, sizeof(sig)), 0,
	    "a base name under another directory: none");
	is_int(sig_of("good.rpm", "/usr/bin/a", sig, 10), -1,
	    "a signature longer than the buffer: error");

	test_big_header();

	make_rpm("nosigs.rpm", NO_SIGS);
	is_int(sig_of("nosigs.rpm", "/usr/bin/a", sig, sizeof(sig)), 0,
	    "no FILESIGNATURES tag: none");
	write_text("plain.deb",
	    "!<arch>\nnot an rpm at all, longer than a "
	    "lead of ninety-six bytes so that it is read "
	    "whole......................................\n");
	is_int(sig_of("plain.deb", "/usr/bin/a", sig, sizeof(sig)), 0,
	    "not an RPM: none");

	make_rpm("offset.rpm", BAD_OFFSET);
	is_int(sig_of("offset.rpm", "/usr/bin/a", sig, sizeof(sig)), -1,
	    "an entry pointing outside the store: error");
	make_rpm("fewer.rpm", FEWER_SIGS);
	is_int(sig_of("fewer.rpm", "/usr/bin/a", sig, sizeof(sig)), -1,
	    "fewer signatures than files: error");
	make_rpm("hex.rpm", BAD_HEX);
	is_int(sig_of("hex.rpm", "/usr/lib/b.so", sig, sizeof(sig)), -1,
	    "a signature that is not hex: error");
	is_int(sig_of("hex.rpm", "/usr/bin/a", sig, sizeof(sig)), 1,
	    "... the good one beside it still reads");
	make_rpm("big.rpm", BIG_STORE);
	is_int(sig_of("big.rpm", "/usr/bin/a", sig, sizeof(sig)), -1,
	    "a 2 GB store: refused, not allocated");
	write_text("cut.rpm", "");
	{
		unsigned char lead[100] = { 0xed, 0xab, 0xee, 0xdb };
		FILE *fp = fopen(at("cut.rpm"), "w");

		if (fp != NULL) {
			fwrite(lead, 1, sizeof(lead), fp);
			fclose(fp);
		}
	}
	is_int(sig_of("cut.rpm", "/usr/bin/a", sig, sizeof(sig)), -1,
	    "a lead and nothing after: error");
	test_grow();

	make_rpm("link.rpm", LINK);
	is_int(sig_of("link.rpm", "/usr/share/c", sig, sizeof(sig)), 1,
	    "a symbolic link: its target's signature");
	is_str(sig, SIG_A, "... /usr/bin/a's");
	is_int(sig_of("link.rpm", "/usr/lib/b.so", sig, sizeof(sig)), 1,
	    "... other files as they were");
	make_rpm("loop.rpm", LOOP);
	is_int(sig_of("loop.rpm", "/usr/share/c", sig, sizeof(sig)), 0,
	    "a link to itself: none, after a bounded number of hops");
	testdir_remove();
	return tap_done();
}
