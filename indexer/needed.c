/*
 * indexer/needed.c: the libraries a program loads, as ld.so finds them.
 *
 * A breadth-first walk from the file added: each object's PT_INTERP and
 * DT_NEEDED names are looked up with that object's DT_RPATH/DT_RUNPATH
 * (and the program's DT_RPATH), LD_LIBRARY_PATH, the loader's cache and
 * the default directories, in glibc's order (ld.so(8)).  Objects are known
 * by their real path, so a library reached through two names is walked
 * once.  The loader's cache is read once, whole (it is small), and trusted
 * no further than its own bounds: every offset is checked.
 */
#include "indexer/needed.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "indexer/elf.h"
#include "indexer/file.h"

/* A larger loader cache than this is not read. */
#define LD_CACHE_MAX (64u << 20)
#define LD_CACHE_MAGIC "glibc-ld.so.cache1.1"
/* Header of the new format, then entries of this size. */
#define LD_CACHE_HEAD 48
#define LD_CACHE_ENTRY 24
/* Most DT_NEEDED entries read from one object. */
#define NEEDED_MAX 4096

static const char *const system_dirs[] = {
	"/lib64",
	"/usr/lib64",
	"/lib",
	"/usr/lib",
	NULL,
};

struct needed {
	struct needed_paths p;
	char *cache; /* the loader's cache; NULL: none or not read yet */
	size_t cache_len;
	size_t cache_new; /* offset of the new format's header */
	int cache_read;
	char **seen; /* real paths walked, and "?name" of names not found */
	size_t nseen, capseen;
};

/* What an object says about loading. */
struct dyn {
	int cls; /* ELFCLASS32 or 64 */
	unsigned machine;
	char *interp;
	char **needed;
	size_t nneeded;
	char *rpath;
	char *runpath;
};

struct needed *
needed_new(const struct needed_paths *paths)
{
	struct needed *n;

	if ((n = calloc(1, sizeof(*n))) == NULL)
		return NULL;
	n->p = *paths;
	if (n->p.ld_cache == NULL)
		n->p.ld_cache = "/etc/ld.so.cache";
	if (n->p.default_dirs == NULL)
		n->p.default_dirs = system_dirs;
	return n;
}

void
needed_free(struct needed *n)
{
	size_t i;

	if (n == NULL)
		return;
	for (i = 0; i < n->nseen; i++)
		free(n->seen[i]);
	free(n->seen);
	free(n->cache);
	free(n);
}

static void
dyn_free(struct dyn *d)
{
	size_t i;

	for (i = 0; i < d->nneeded; i++)
		free(d->needed[i]);
	free(d->needed);
	free(d->interp);
	free(d->rpath);
	free(d->runpath);
	memset(d, 0, sizeof(*d));
}

/* 1 when key was seen before; else it is remembered (0), or -1. */
static int
seen_add(struct needed *n, const char *key)
{
	char **v;
	size_t i, cap;

	for (i = 0; i < n->nseen; i++)
		if (strcmp(n->seen[i], key) == 0)
			return 1;
	if (n->nseen == n->capseen) {
		cap = n->capseen == 0 ? 32 : 2 * n->capseen;
		if ((v = realloc(n->seen, cap * sizeof(*v))) == NULL)
			return -1;
		n->seen = v;
		n->capseen = cap;
	}
	if ((n->seen[n->nseen] = strdup(key)) == NULL)
		return -1;
	n->nseen++;
	return 0;
}

/* The dynamic section's strings and the interpreter of an open file. */
static int
dyn_read_sections(struct elf_file *ef, struct dyn *d, char *err, size_t errlen)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Dyn dy;
	Elf_Data *data;
	const char *s;
	size_t i, cnt;
	char **v;

	while ((scn = elf_nextscn(ef->elf, scn)) != NULL) {
		if (gelf_getshdr(scn, &sh) == NULL || sh.sh_type != SHT_DYNAMIC)
			continue;
		if ((data = elf_getdata(scn, NULL)) == NULL ||
		    sh.sh_entsize == 0) {
			snprintf(err, errlen, "bad dynamic section: %s",
			    elf_errmsg(-1));
			return -1;
		}
		cnt = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < cnt && gelf_getdyn(data, (int)i, &dy) != NULL;
		     i++) {
			if (dy.d_tag == DT_NULL)
				break;
			if (dy.d_tag != DT_NEEDED && dy.d_tag != DT_RPATH &&
			    dy.d_tag != DT_RUNPATH)
				continue;
			s = elf_strptr(ef->elf, sh.sh_link, dy.d_un.d_val);
			/* No name is no library (the loader refuses it). */
			if (s == NULL ||
			    (dy.d_tag == DT_NEEDED && s[0] == '\0'))
				continue;
			if (dy.d_tag == DT_RPATH && d->rpath == NULL) {
				d->rpath = strdup(s);
			} else if (dy.d_tag == DT_RUNPATH &&
			    d->runpath == NULL) {
				d->runpath = strdup(s);
			} else if (dy.d_tag == DT_NEEDED &&
			    d->nneeded < NEEDED_MAX) {
				v = realloc(d->needed,
				    (d->nneeded + 1) * sizeof(*v));
				if (v == NULL)
					return -1;
				d->needed = v;
				if ((v[d->nneeded] = strdup(s)) == NULL)
					return -1;
				d->nneeded++;
			}
		}
		break;
	}
	return 0;
}

/* The program interpreter named by PT_INTERP, if any. */
static int
dyn_read_interp(struct elf_file *ef, int fd, struct dyn *d)
{
	GElf_Phdr ph;
	size_t i, n;
	char buf[PATH_MAX];

	if (elf_getphdrnum(ef->elf, &n) != 0)
		return 0;
	for (i = 0; i < n; i++) {
		if (gelf_getphdr(ef->elf, (int)i, &ph) == NULL ||
		    ph.p_type != PT_INTERP)
			continue;
		if (ph.p_filesz == 0 || ph.p_filesz >= sizeof(buf) ||
		    pread(fd, buf, ph.p_filesz, (off_t)ph.p_offset) !=
			(ssize_t)ph.p_filesz)
			return 0;
		buf[ph.p_filesz] = '\0';
		if (buf[0] == '\0')
			return 0;
		if ((d->interp = strdup(buf)) == NULL)
			return -1;
		return 0;
	}
	return 0;
}

/* Read what path says about loading: 0, ELF_NOTFOUND, or -1 with err. */
static int
dyn_read(const char *path, struct dyn *d, char *err, size_t errlen)
{
	struct elf_file ef;
	struct stat st;
	GElf_Ehdr eh;
	int fd, rc;

	memset(d, 0, sizeof(*d));
	if ((fd = file_open_regular(path, &st)) == -1) {
		snprintf(err, errlen, "%s", strerror(errno));
		return -1;
	}
	if ((rc = elf_file_open(&ef, fd, err, errlen)) != 0) {
		close(fd);
		return rc;
	}
	rc = 0;
	if (gelf_getehdr(ef.elf, &eh) == NULL) {
		snprintf(err, errlen, "bad ELF header");
		rc = -1;
	} else {
		d->cls = gelf_getclass(ef.elf);
		d->machine = eh.e_machine;
		if (dyn_read_sections(&ef, d, err, errlen) == -1 ||
		    dyn_read_interp(&ef, fd, d) == -1)
			rc = -1;
	}
	elf_file_close(&ef);
	close(fd);
	if (rc == -1)
		dyn_free(d);
	return rc;
}

/* 1 when path is an ELF file of class cls and machine mach. */
static int
candidate_ok(const char *path, int cls, unsigned mach)
{
	struct elf_file ef;
	struct stat st;
	GElf_Ehdr eh;
	char err[128];
	int fd, ok = 0;

	if ((fd = file_open_regular(path, &st)) == -1)
		return 0;
	if (elf_file_open(&ef, fd, err, sizeof(err)) == 0) {
		ok = gelf_getehdr(ef.elf, &eh) != NULL &&
		    gelf_getclass(ef.elf) == cls && eh.e_machine == mach;
		elf_file_close(&ef);
	}
	close(fd);
	return ok;
}

/*
 * Look for name in each directory of the colon-separated list dirs,
 * $ORIGIN (and ${ORIGIN}) standing for origin.  1 with out set when found.
 */
static int
search_dirs(const char *dirs, const char *origin, const char *name, int cls,
    unsigned mach, char *out, size_t outlen)
{
	const char *p = dirs, *end;
	char dir[PATH_MAX];
	size_t n, k;

	while (p != NULL && *p != '\0') {
		end = strchr(p, ':');
		n = end != NULL ? (size_t)(end - p) : strlen(p);
		for (k = 0; n > 0;) {
			size_t tl = strncmp(p, "${ORIGIN}", 9) == 0 ? 9
			    : strncmp(p, "$ORIGIN", 7) == 0         ? 7
								    : 0;
			size_t ol = strlen(origin);

			if (tl > 0 && tl <= n) {
				if (k + ol >= sizeof(dir))
					break;
				memcpy(dir + k, origin, ol);
				k += ol;
				p += tl;
				n -= tl;
			} else {
				if (k + 1 >= sizeof(dir))
					break;
				dir[k++] = *p++;
				n--;
			}
		}
		dir[k] = '\0';
		p = end != NULL ? end + 1 : NULL;
		if (k == 0)
			snprintf(dir, sizeof(dir), ".");
		if ((size_t)snprintf(out, outlen, "%s/%s", dir, name) <
			outlen &&
		    candidate_ok(out, cls, mach))
			return 1;
	}
	return 0;
}

/* Read the loader's cache once; a missing or odd cache is no cache. */
static void
cache_load(struct needed *n)
{
	struct stat st;
	const char *m;
	ssize_t r;
	int fd;

	if (n->cache_read)
		return;
	n->cache_read = 1;
	if ((fd = file_open_regular(n->p.ld_cache, &st)) == -1)
		return;
	if (st.st_size > LD_CACHE_HEAD && st.st_size <= LD_CACHE_MAX &&
	    (n->cache = malloc((size_t)st.st_size)) != NULL) {
		r = pread(fd, n->cache, (size_t)st.st_size, 0);
		n->cache_len = r > 0 ? (size_t)r : 0;
	}
	close(fd);
	/* The new format, alone or after the old one. */
	m = n->cache_len > 0 ? memmem(n->cache, n->cache_len, LD_CACHE_MAGIC,
				   strlen(LD_CACHE_MAGIC))
			     : NULL;
	if (m == NULL ||
	    n->cache_len - (size_t)(m - n->cache) < LD_CACHE_HEAD) {
		free(n->cache);
		n->cache = NULL;
		n->cache_len = 0;
		return;
	}
	n->cache_new = (size_t)(m - n->cache);
}

/* The NUL-terminated string at offset off of the new format, or NULL. */
static const char *
cache_str(const struct needed *n, uint32_t off)
{
	size_t at = n->cache_new + off;

	if (at >= n->cache_len ||
	    memchr(n->cache + at, '\0', n->cache_len - at) == NULL)
		return NULL;
	return n->cache + at;
}

/* Look name up in the loader's cache: 1 with out set when found. */
static int
search_cache(struct needed *n, const char *name, int cls, unsigned mach,
    char *out, size_t outlen)
{
	uint32_t nlibs, key, value;
	const char *k, *v;
	size_t i, at;

	cache_load(n);
	if (n->cache == NULL)
		return 0;
	memcpy(&nlibs, n->cache + n->cache_new + 20, sizeof(nlibs));
	for (i = 0; i < nlibs; i++) {
		at = n->cache_new + LD_CACHE_HEAD + i * LD_CACHE_ENTRY;
		if (at + LD_CACHE_ENTRY > n->cache_len)
			break;
		memcpy(&key, n->cache + at + 4, sizeof(key));
		memcpy(&value, n->cache + at + 8, sizeof(value));
		if ((k = cache_str(n, key)) == NULL || strcmp(k, name) != 0 ||
		    (v = cache_str(n, value)) == NULL)
			continue;
		if ((size_t)snprintf(out, outlen, "%s", v) < outlen &&
		    candidate_ok(out, cls, mach))
			return 1;
	}
	return 0;
}

/*
 * Find name needed by an object with dynamic info d at origin, in a
 * program whose DT_RPATH is prog_rpath: 1 with out set when found.
 */
static int
resolve(struct needed *n, const char *name, const struct dyn *d,
    const char *origin, const char *prog_rpath, int cls, unsigned mach,
    char *out, size_t outlen)
{
	const char *const *dir;

	if (strchr(name, '/') != NULL)
		return (size_t)snprintf(out, outlen, "%s", name) < outlen &&
		    candidate_ok(out, cls, mach);
	if (d->runpath == NULL &&
	    ((d->rpath != NULL &&
		 search_dirs(d->rpath, origin, name, cls, mach, out, outlen)) ||
		(prog_rpath != NULL &&
		    search_dirs(prog_rpath, origin, name, cls, mach, out,
			outlen))))
		return 1;
	if (n->p.ld_library_path != NULL &&
	    search_dirs(n->p.ld_library_path, origin, name, cls, mach, out,
		outlen))
		return 1;
	if (d->runpath != NULL &&
	    search_dirs(d->runpath, origin, name, cls, mach, out, outlen))
		return 1;
	if (search_cache(n, name, cls, mach, out, outlen))
		return 1;
	for (dir = n->p.default_dirs; *dir != NULL; dir++)
		if (search_dirs(*dir, origin, name, cls, mach, out, outlen))
			return 1;
	return 0;
}

/* The directory of path's real path, for $ORIGIN. */
static void
origin_of(const char *path, char *out)
{
	char *slash;

	if (realpath(path, out) == NULL)
		snprintf(out, PATH_MAX, "%s", path);
	if ((slash = strrchr(out, '/')) != NULL)
		*(slash == out ? slash + 1 : slash) = '\0';
	else
		snprintf(out, PATH_MAX, ".");
}

/*
 * One name an object needs: report it (found or not) unless reported
 * before, and queue what was found.  -1 when out of memory.
 */
static int
walk_name(struct needed *n, const char *name, const struct dyn *d,
    const char *obj, const char *prog_rpath, int cls, unsigned mach,
    char ***queue, size_t *nq, needed_fn fn, void *arg)
{
	char origin[PATH_MAX], found[PATH_MAX], real[PATH_MAX],
	    miss[NAME_MAX + 2];
	char **q;
	int rc;

	origin_of(obj, origin);
	if (!resolve(n, name, d, origin, prog_rpath, cls, mach, found,
		sizeof(found))) {
		snprintf(miss, sizeof(miss), "?%s", name);
		if ((rc = seen_add(n, miss)) == 0)
			fn(name, NULL, obj, arg);
		return rc == -1 ? -1 : 0;
	}
	if (realpath(found, real) == NULL)
		snprintf(real, sizeof(real), "%s", found);
	if ((rc = seen_add(n, real)) != 0)
		return rc == -1 ? -1 : 0;
	fn(name, found, obj, arg);
	if ((q = realloc(*queue, (*nq + 1) * sizeof(*q))) == NULL)
		return -1;
	*queue = q;
	if ((q[*nq] = strdup(found)) == NULL)
		return -1;
	(*nq)++;
	return 0;
}

int
needed_add(struct needed *n, const char *path, needed_fn fn, void *arg,
    char *err, size_t errlen)
{
	struct dyn prog, d;
	char **queue = NULL, real[PATH_MAX];
	size_t nq = 0, i, k;
	int rc;

	if ((rc = dyn_read(path, &prog, err, errlen)) != 0)
		return rc;
	/* The program itself is walked once, like its libraries. */
	if (realpath(path, real) == NULL)
		snprintf(real, sizeof(real), "%s", path);
	rc = seen_add(n, real);
	if (rc == 0 && prog.interp != NULL)
		rc = walk_name(n, prog.interp, &prog, path, NULL, prog.cls,
		    prog.machine, &queue, &nq, fn, arg);
	for (k = 0; rc == 0 && k < prog.nneeded; k++)
		rc = walk_name(n, prog.needed[k], &prog, path,
		    prog.runpath == NULL ? prog.rpath : NULL, prog.cls,
		    prog.machine, &queue, &nq, fn, arg);
	for (i = 0; rc == 0 && i < nq; i++) {
		if (dyn_read(queue[i], &d, err, errlen) != 0)
			continue; /* unreadable: it loads nothing we can tell */
		for (k = 0; rc == 0 && k < d.nneeded; k++)
			rc = walk_name(n, d.needed[k], &d, queue[i],
			    prog.runpath == NULL ? prog.rpath : NULL, prog.cls,
			    prog.machine, &queue, &nq, fn, arg);
		dyn_free(&d);
	}
	for (i = 0; i < nq; i++)
		free(queue[i]);
	free(queue);
	dyn_free(&prog);
	if (rc == 1)
		rc = 0; /* the program was walked before */
	if (rc == -1)
		snprintf(err, errlen, "out of memory");
	return rc;
}
