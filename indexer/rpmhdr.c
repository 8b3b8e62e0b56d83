/*
 * indexer/rpmhdr.c: read the per-file IMA signatures of an RPM header.
 *
 * Only what X-DEBUGINFOD-IMASIGNATURE needs: the lead and the signature
 * header are skipped, the main header is read whole (bounded) and its
 * DIRINDEXES, BASENAMES, DIRNAMES and FILESIGNATURES entries are looked
 * up.  The payload is never touched.  Every offset and count read from the
 * file is checked before use: the file is as untrusted as the rest of the
 * package.
 */
#include "indexer/rpmhdr.h"

#include <limits.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "indexer/package.h"

#define LEAD_LEN 96
#define INTRO_LEN 16 /* magic, reserved, nindex, hsize */
#define ENTRY_LEN 16

#define TAG_DIRINDEXES 1116
#define TAG_BASENAMES 1117
#define TAG_DIRNAMES 1118
#define TAG_FILESIGNATURES 5090
#define TAG_FILELINKTOS 1036

#define TYPE_INT32 4
#define TYPE_STRING_ARRAY 8

static const unsigned char lead_magic[4] = { 0xed, 0xab, 0xee, 0xdb };
static const unsigned char header_magic[4] = { 0x8e, 0xad, 0xe8, 0x01 };

struct header {
	unsigned char *index; /* nindex entries */
	uint32_t nindex;
	const unsigned char *store;
	uint32_t hsize;
	unsigned char *buf;
};

static uint32_t
be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* A file that may still be growing (rpmhdr_open_grow). */
struct src {
	int fd;
	int (*grow)(uint64_t have, void *arg);
	void *arg;
};

static int
read_at(const struct src *s, void *buf, size_t len, off_t off)
{
	ssize_t n;
	size_t done = 0;

	while (done < len) {
		n = pread(s->fd, (char *)buf + done, len - done,
		    off + (off_t)done);
		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		/* Its end: wait for more when it grows, else short. */
		if (n < 0 || s->grow == NULL ||
		    s->grow((uint64_t)off + done, s->arg) != 1)
			return -1;
	}
	return 0;
}

/*
 * Read the header at *off into h and move *off past it (and, for the
 * signature header, past its padding to 8 bytes).  0, or -1 with err.
 */
static int
header_read(const struct src *s, off_t *off, int pad, struct header *h,
    char *err, size_t errlen)
{
	unsigned char intro[INTRO_LEN];
	size_t len;

	memset(h, 0, sizeof(*h));
	if (read_at(s, intro, sizeof(intro), *off) == -1 ||
	    memcmp(intro, header_magic, sizeof(header_magic)) != 0) {
		snprintf(err, errlen, "rpm header: bad magic");
		return -1;
	}
	h->nindex = be32(intro + 8);
	h->hsize = be32(intro + 12);
	if (h->nindex > RPMHDR_ENTRIES_MAX || h->hsize > RPMHDR_STORE_MAX) {
		snprintf(err, errlen, "rpm header: too large");
		return -1;
	}
	len = (size_t)h->nindex * ENTRY_LEN + h->hsize;
	if ((h->buf = malloc(len + 1)) == NULL ||
	    read_at(s, h->buf, len, *off + INTRO_LEN) == -1) {
		free(h->buf);
		h->buf = NULL;
		snprintf(err, errlen, "rpm header: truncated");
		return -1;
	}
	h->index = h->buf;
	h->store = h->buf + (size_t)h->nindex * ENTRY_LEN;
	*off += (off_t)(INTRO_LEN + len);
	if (pad)
		*off = (*off + 7) & ~(off_t)7;
	return 0;
}

/*
 * The entry of tag in h: its data (in the store), its count and type.
 * 0 when found, 1 when absent, -1 when its offset is outside the store.
 */
static int
header_find(const struct header *h, uint32_t tag, uint32_t type,
    const unsigned char **data, uint32_t *count)
{
	const unsigned char *e;
	uint32_t i, off;

	for (i = 0; i < h->nindex; i++) {
		e = h->index + (size_t)i * ENTRY_LEN;
		if (be32(e) != tag)
			continue;
		off = be32(e + 8);
		*count = be32(e + 12);
		if (be32(e + 4) != type || off >= h->hsize || *count > h->hsize)
			return -1;
		*data = h->store + off;
		return 0;
	}
	return 1;
}

/*
 * The n strings of the string array at data, into v: one pass over the
 * store, so the work is bounded by its size.  0, or -1 when one of them
 * does not end inside the store.
 */
static int
strings_split(const struct header *h, const unsigned char *data, uint32_t n,
    const char **v)
{
	const unsigned char *end = h->store + h->hsize, *p = data, *nul;
	uint32_t i;

	for (i = 0; i < n; i++) {
		if (p >= end ||
		    (nul = memchr(p, '\0', (size_t)(end - p))) == NULL)
			return -1;
		v[i] = (const char *)p;
		p = nul + 1;
	}
	return 0;
}

/* A file of the header: where its name's parts and its signature are. */
struct rfile {
	const char *dir; /* ends with '/' */
	const char *base;
	const char *sig;
	const char *link; /* a symbolic link's target; "" for others */
};

/* Lookups compare names this many times; a test reads it. */
static unsigned long rpmhdr_compares;

static int
rfile_cmp(const void *a, const void *b)
{
	const struct rfile *x = a, *y = b;
	int c;

	rpmhdr_compares++;
	if ((c = strcmp(x->base, y->base)) != 0)
		return c;
	return strcmp(x->dir, y->dir);
}

struct rpmhdr {
	struct header h;
	struct rfile *files; /* sorted by base name, then directory */
	uint32_t nfiles;
};

/*
 * Index the file list once: every string array split in one pass, then
 * the files sorted by name, so that each lookup is a binary search and a
 * header with many files and directories costs O(n log n) in all, however
 * many members of the package are looked up.
 */
static int
rpmhdr_index(struct rpmhdr *rh, const unsigned char *dirindexes,
    const unsigned char *basenames, const unsigned char *dirnames,
    uint32_t ndirs, const unsigned char *sigs, const unsigned char *links)
{
	const struct header *h = &rh->h;
	const char **dirs = NULL, **bases = NULL, **sv = NULL, **lv = NULL;
	uint32_t i, di;
	int rc = -1;

	if ((dirs = calloc(ndirs + 1, sizeof(*dirs))) == NULL ||
	    (bases = calloc(rh->nfiles + 1, sizeof(*bases))) == NULL ||
	    (sv = calloc(rh->nfiles + 1, sizeof(*sv))) == NULL ||
	    (lv = calloc(rh->nfiles + 1, sizeof(*lv))) == NULL ||
	    (rh->files = calloc(rh->nfiles + 1, sizeof(*rh->files))) == NULL)
		goto out;
	if (strings_split(h, dirnames, ndirs, dirs) == -1 ||
	    strings_split(h, basenames, rh->nfiles, bases) == -1 ||
	    strings_split(h, sigs, rh->nfiles, sv) == -1 ||
	    (links != NULL && strings_split(h, links, rh->nfiles, lv) == -1))
		goto out;
	for (i = 0; i < rh->nfiles; i++) {
		if ((di = be32(dirindexes + (size_t)i * 4)) >= ndirs)
			goto out;
		rh->files[i].dir = dirs[di];
		rh->files[i].base = bases[i];
		rh->files[i].sig = sv[i];
		rh->files[i].link = lv[i] != NULL ? lv[i] : "";
	}
	qsort(rh->files, rh->nfiles, sizeof(*rh->files), rfile_cmp);
	rc = 0;
out:
	free(dirs);
	free(bases);
	free(sv);
	free(lv);
	return rc;
}

int
rpmhdr_open(int fd, struct rpmhdr **hp, char *err, size_t errlen)
{
	return rpmhdr_open_grow(fd, NULL, NULL, hp, err, errlen);
}

int
rpmhdr_open_grow(int fd, int (*grow)(uint64_t have, void *arg), void *arg,
    struct rpmhdr **hp, char *err, size_t errlen)
{
	const struct src s = { fd, grow, arg };
	unsigned char lead[LEAD_LEN];
	const unsigned char *dirindexes, *basenames, *dirnames, *sigs, *links;
	struct rpmhdr *rh;
	struct header sh;
	uint32_t nbase, nsigs, ndirs, nlinks;
	off_t off = LEAD_LEN;
	int f1, f2, f3, f4, f5;

	*hp = NULL;
	if (read_at(&s, lead, sizeof(lead), 0) == -1 ||
	    memcmp(lead, lead_magic, sizeof(lead_magic)) != 0)
		return 0; /* no RPM: nothing to say */
	if (header_read(&s, &off, 1, &sh, err, errlen) == -1)
		return -1;
	free(sh.buf);
	if ((rh = calloc(1, sizeof(*rh))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (header_read(&s, &off, 0, &rh->h, err, errlen) == -1) {
		free(rh);
		return -1;
	}
	if ((f1 = header_find(&rh->h, TAG_FILESIGNATURES, TYPE_STRING_ARRAY,
		 &sigs, &nsigs)) == -1 ||
	    (f2 = header_find(&rh->h, TAG_DIRINDEXES, TYPE_INT32, &dirindexes,
		 &rh->nfiles)) == -1 ||
	    (f3 = header_find(&rh->h, TAG_BASENAMES, TYPE_STRING_ARRAY,
		 &basenames, &nbase)) == -1 ||
	    (f4 = header_find(&rh->h, TAG_DIRNAMES, TYPE_STRING_ARRAY,
		 &dirnames, &ndirs)) == -1 ||
	    (f5 = header_find(&rh->h, TAG_FILELINKTOS, TYPE_STRING_ARRAY,
		 &links, &nlinks)) == -1) {
		snprintf(err, errlen, "rpm header: an entry outside the store");
		rpmhdr_free(rh);
		return -1;
	}
	if (f1 != 0 || f2 != 0 || f3 != 0 || f4 != 0) {
		rpmhdr_free(rh); /* no signatures (or no file list): none */
		return 0;
	}
	if (f5 != 0)
		links = NULL; /* no links: every name is the file's */
	if (rh->nfiles != nbase || rh->nfiles != nsigs ||
	    (links != NULL && nlinks != rh->nfiles) ||
	    (size_t)(dirindexes - rh->h.store) + (size_t)rh->nfiles * 4 >
		rh->h.hsize) {
		snprintf(err, errlen, "rpm header: file lists disagree");
		rpmhdr_free(rh);
		return -1;
	}
	/* No more strings than bytes: bounds the arrays before allocating. */
	if (ndirs > rh->h.hsize || rh->nfiles > rh->h.hsize ||
	    rpmhdr_index(rh, dirindexes, basenames, dirnames, ndirs, sigs,
		links) == -1) {
		snprintf(err, errlen, "rpm header: bad file list");
		rpmhdr_free(rh);
		return -1;
	}
	*hp = rh;
	return 1;
}

void
rpmhdr_free(struct rpmhdr *rh)
{
	if (rh == NULL)
		return;
	free(rh->h.buf);
	free(rh->files);
	free(rh);
}

/* The file named path, or NULL. */
static const struct rfile *
rpmhdr_file(const struct rpmhdr *rh, const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[4096];
	struct rfile key;
	size_t dlen;

	if (slash == NULL || (dlen = (size_t)(slash - path) + 1) >= sizeof(dir))
		return NULL;
	memcpy(dir, path, dlen);
	dir[dlen] = '\0';
	key.dir = dir;
	key.base = slash + 1;
	return bsearch(&key, rh->files, rh->nfiles, sizeof(*rh->files),
	    rfile_cmp);
}

int
rpmhdr_resolve(const struct rpmhdr *rh, const char *path, char *out,
    size_t outlen)
{
	const struct rfile *f;
	char at[2][PATH_MAX];
	int hops = 0, cur = 0;

	while ((f = rpmhdr_file(rh, path)) != NULL && f->link[0] != '\0') {
		if (++hops > PKG_LINK_HOPS ||
		    pkg_link_resolve(path, f->link, at[cur], sizeof(at[cur])) ==
			-1)
			return -1;
		path = at[cur];
		cur ^= 1;
	}
	if (strlen(path) >= outlen)
		return -1;
	strcpy(out, path);
	return 0;
}

int
rpmhdr_ima_signature(const struct rpmhdr *rh, const char *path, char *out,
    size_t outlen, char *err, size_t errlen)
{
	const struct rfile *f;
	const char *sig;
	char file[PATH_MAX];

	/* A symbolic link is unsigned: its target's signature it is. */
	if (rpmhdr_resolve(rh, path, file, sizeof(file)) == -1 ||
	    (f = rpmhdr_file(rh, file)) == NULL || (sig = f->sig)[0] == '\0')
		return 0;
	if (strlen(sig) >= outlen ||
	    strspn(sig, "0123456789abcdefABCDEF") != strlen(sig)) {
		snprintf(err, errlen, "rpm header: bad signature for %s", file);
		return -1;
	}
	strcpy(out, sig);
	return 1;
}
