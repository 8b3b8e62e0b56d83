/*
 * tests/fuzz/fuzz_package.c: fuzz pkg_scan() and pkg_extract(), the walk
 * over the members of packages from scanned directories and remote
 * repositories (indexer/package.h): .deb (an ar archive and the tar in
 * it), .rpm (its headers and cpio payload) and Arch's compressed tars.
 *
 * The input is a whole package, read from a memfd by path as the server
 * reads a package file, under small limits (members to 1 MiB, 8 MiB read,
 * 2000 members) so that a bomb costs little; ELF members go to a memfd.
 * The first members the scan reports are then extracted by name, and the
 * first of them again with the xz stream decoded on two threads, which
 * must end the same, with the same bytes (or succeed where one thread's
 * memory limit refused the stream: two have twice the memory).  Besides
 * memory errors, the target aborts when a result breaks the contract: a
 * return other than 0 and -1 (and ELF_NOTFOUND for an extraction), an
 * error without a message, a member path that is not absolute and
 * normalised (no "." or ".." component, no "//", no '/' at its end), a
 * symlink without a target, an ELF member without its descriptor or with
 * a size over the limit, or an extraction that writes more than the limit.
 */
#include <sys/stat.h>

#include "indexer/elf.h"
#include "indexer/package.h"

#include "tests/fuzz/fuzz.h"

#define EXTRACTS 4

static int memfd = -1, outfd = -1;
static char path[64];

static const struct pkg_limits limits = {
	.max_member = 1u << 20,
	.max_total = 8u << 20,
	.max_members = 2000,
}, threaded = {
	.max_member = 1u << 20,
	.max_total = 8u << 20,
	.max_members = 2000,
	.xz_threads = 2,
};

/* What an extraction wrote to outfd, malloc'd; NULL when it cannot tell. */
static unsigned char *
out_bytes(size_t *len)
{
	unsigned char *buf;
	struct stat st;

	if (fstat(outfd, &st) == -1 || (buf = malloc(st.st_size + 1)) == NULL)
		return NULL;
	*len = (size_t)st.st_size;
	if (pread(outfd, buf, *len, 0) != (ssize_t)*len) {
		free(buf);
		return NULL;
	}
	return buf;
}

struct seen {
	char *names[EXTRACTS];
	unsigned n, members;
};

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	if (elf_init() == -1) {
		fprintf(stderr, "fuzz_package: elf_init failed\n");
		exit(1);
	}
	memfd = fuzz_memfd("fuzz_package: memfd_create");
	outfd = fuzz_memfd("fuzz_package: memfd_create");
	snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	return 0;
}

/* 1 when p is absolute and normalised. */
static int
normalised(const char *p)
{
	size_t n = strlen(p);

	if (p[0] != '/' || strstr(p, "//") != NULL ||
	    strstr(p, "/./") != NULL || strstr(p, "/../") != NULL)
		return 0;
	if (n > 1 && p[n - 1] == '/')
		return 0;
	if ((n >= 2 && strcmp(p + n - 2, "/.") == 0) ||
	    (n >= 3 && strcmp(p + n - 3, "/..") == 0))
		return 0;
	return 1;
}

static int
member_cb(const struct pkg_member *m, void *arg)
{
	struct seen *s = arg;

	FUZZ_CHECK(m->path != NULL && normalised(m->path));
	FUZZ_CHECK(m->type == PKG_ELF || m->type == PKG_SYMLINK ||
	    m->type == PKG_OTHER);
	if (m->type == PKG_SYMLINK)
		FUZZ_CHECK(m->link_target != NULL);
	if (m->type == PKG_ELF) {
		FUZZ_CHECK(m->fd >= 0 && m->regular);
		FUZZ_CHECK(m->size <= limits.max_member);
	} else {
		FUZZ_CHECK(m->fd == -1);
	}
	FUZZ_CHECK(++s->members <= limits.max_members);
	if (s->n < EXTRACTS && (s->names[s->n] = strdup(m->path)) != NULL)
		s->n++;
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen s;
	struct stat st;
	unsigned char *one = NULL, *two;
	size_t onelen = 0, twolen;
	char err[256];
	unsigned i;
	int rc, rc0 = 0, memory0 = 0;

	if (memfd == -1)
		LLVMFuzzerInitialize(NULL, NULL);
	if (fuzz_load(memfd, data, size) == -1)
		return 0;
	memset(&s, 0, sizeof(s));
	err[0] = '\0';
	rc = pkg_scan(path, NULL, &limits, member_cb, &s, err, sizeof(err));
	FUZZ_CHECK(rc == 0 || rc == -1);
	if (rc == -1)
		FUZZ_CHECK(err[0] != '\0');
	for (i = 0; i < s.n; i++) {
		err[0] = '\0';
		if (ftruncate(outfd, 0) == -1)
			break;
		rc = pkg_extract(path, s.names[i], outfd, &limits, err,
		    sizeof(err));
		FUZZ_CHECK(rc == 0 || rc == -1 || rc == ELF_NOTFOUND);
		if (rc == -1)
			FUZZ_CHECK(err[0] != '\0');
		if (rc == 0)
			FUZZ_CHECK(fstat(outfd, &st) == 0 &&
			    (uint64_t)st.st_size <= limits.max_member);
		if (i == 0) {
			rc0 = rc;
			memory0 = rc == -1 &&
			    strstr(err, "MiB to decompress") != NULL;
			one = out_bytes(&onelen);
		}
	}
	if (s.n > 0 && one != NULL && ftruncate(outfd, 0) == 0) {
		rc = pkg_extract(path, s.names[0], outfd, &threaded, err,
		    sizeof(err));
		FUZZ_CHECK(rc == rc0 || (memory0 && rc != -1));
		if (rc == 0 && rc0 == 0 && (two = out_bytes(&twolen)) != NULL) {
			FUZZ_CHECK(
			    twolen == onelen && memcmp(one, two, onelen) == 0);
			free(two);
		}
	}
	free(one);
	for (i = 0; i < s.n; i++)
		free(s.names[i]);
	return 0;
}
