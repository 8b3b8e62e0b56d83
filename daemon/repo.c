/*
 * daemon/repo.c: remote repositories, refreshed and downloaded from on the
 * fills' loop, checked and parsed on workers (see daemon/repo.h).
 *
 * A refresh of an apt repository is a chain of steps, each started by the
 * end of the one before, alternating between the loop (transfers) and a
 * worker (everything that reads a file or writes the index):
 *
 *   loop    GET dists/SUITE/InRelease (conditional on the last one's ETag
 *           and date: a 304 ends the refresh, nothing changed); on a 404,
 *           GET Release and Release.gpg
 *   worker  gpgv against the keyring; the signature must be good, valid
 *           and unexpired, as apt wants (its --status-fd lines say so), and
 *           Release not past its Valid-Until; then the index files to
 *           fetch: each component's binary-ARCH/Packages and Contents-ARCH,
 *           in the first compression Release lists
 *   loop    GET each of them in turn, but for those whose SHA-256 a copy
 *           kept since an earlier refresh has (kept_path: no GET at all);
 *           a GET is conditional on the validators of the last answer
 *           for a file of its name, and a 304, which contradicts the
 *           new checksum, makes it a GET of the whole file
 *   worker  each one's size and SHA-256 against Release, then a new
 *           generation of the repository in the index (cache/repoidx.h):
 *           Packages stanzas with their Build-Ids, then the Contents
 *           lines naming .build-id/ debug files, for packages the
 *           Packages files listed; then the flip, and the fetched files
 *           are kept by their checksums (those Release no longer lists
 *           go)
 *
 * rpm: repodata/repomd.xml (and repomd.xml.asc with gpgkey=), then its
 * primary and filelists (kept and skipped by checksum the same way), whose
 * usr/lib/.build-id/ links name executables (indexer/repometa.h).  Arch: NAME.files (and NAME.files.sig with key=,
 * checked before the database is parsed).  A key file may be armored: it
 * is dearmored into the repository's directory first (repo_keyring).
 *
 * Any failure ends the refresh with the reason logged and counted; the
 * generation in the index stays what it was (a repository never verified
 * has none, so nothing of it is served).
 *
 * A package download is a flight of its own key, made from the package's
 * SHA-256: requests for any of its ids join it.  At most repo-downloads
 * run at once; the others wait in a queue, oldest first, and start as
 * running ones end (their requests wait with them).  The loop fetches it into
 * a temp file of the package cache (<cache-dir>/repo-packages); a worker
 * checks size and SHA-256, renames it into place, indexes its members
 * (daemon/scan.h) and trims the package cache to repo-cache-size, oldest
 * downloads first; only then does the flight end READY.  A failed download
 * ends FAILED, leaves nothing behind, counts against the repository's
 * breaker and is remembered for error-ttl (an error entry under the
 * package's key).
 *
 * Threads: the repositories' state and the transfers belong to the fills'
 * loop; the download queue and the counters are shared (mu, atomics).
 */
#include "daemon/repo.h"

#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/blobstore.h"
#include "cache/flight.h"
#include "cache/index.h"
#include "cache/negative.h"
#include "cache/pkgindex.h"
#include "conf/config.h"
#include "daemon/clock.h"
#include "daemon/fill.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/pool.h"
#include "daemon/scan.h"
#include "daemon/spawn.h"
#include "fetchers/repofetch.h"
#include "indexer/elf.h"
#include "indexer/package.h"
#include "indexer/repometa.h"
#include "indexer/rpmhdr.h"

/* Directories of ours, so that the files in them fit in PATH_MAX. */
#define DIR_MAX 2048
/* Index files of one refresh at most. */
#define FILES_MAX 64
/* Largest metadata file (decompressed sizes are bounded by the parser). */
#define META_MAX (4ull << 30)
/* Consecutive failures that open a repository's breaker, and its backoff. */
#define BREAKER_FAILURES 5
#define BREAKER_BACKOFF 30
/* The kind of cache key of a package download. */
#define PKG_KEY_ARG "repo-package"

enum refresh_step {
	R_IDLE,
	R_INRELEASE,
	R_RELEASE,
	R_RELEASE_GPG,
	R_VERIFY,
	R_FILES,
	R_BUILD,
};

/* An index file to fetch, as Release lists it. */
struct ifile {
	char name[256]; /* relative to dists/SUITE/ */
	uint64_t size;
	uint8_t sha256[32];
	int contents; /* a Contents file, else Packages */
	char arch[64];
	int kept; /* a copy of that SHA-256 is kept: no GET */
	int whole; /* a 304 contradicted the checksum: ask unconditionally */
	char etag[256]; /* of its last answer; "" when none */
	int64_t last_modified; /* of its last answer; -1 when none */
};

struct repo {
	struct repos *rs;
	unsigned i;
	struct config_repo *cr;
	uint8_t key[REPOIDX_KEY_LEN];
	char dir[DIR_MAX]; /* its work directory */
	char label[1400]; /* its metric labels: repo="URL",suite="SUITE" */
	/* The refresh, on the loop (and its worker steps). */
	enum refresh_step step;
	int again; /* asked to refresh while one ran */
	struct repofetch *rf;
	int fd;
	int inline_sig; /* InRelease, else Release + Release.gpg */
	char etag[256]; /* of the last verified InRelease */
	int64_t last_modified;
	struct ifile files[FILES_MAX];
	size_t nfiles, cur;
	/* The files of the last refresh that succeeded, for validators. */
	struct ifile last[FILES_MAX];
	size_t nlast;
	int ok; /* worker's verdict */
	char why[512];
	/* Counters, any thread. */
	atomic_uint_fast64_t refreshes, refresh_failures, downloads,
	    download_failures, timeouts, http_errors, checksum_errors;
	atomic_int failures_in_row;
	atomic_int_fast64_t open_until; /* breaker: skipped until then */
	atomic_int_fast64_t last_refresh; /* the last that succeeded */
};

/*
 * A package as it downloads, shared by the download (the loop writes
 * written and state) and the extractions that read it as it grows
 * (workers wait on cv); freed with its last reference.
 */
struct growing {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t written;
	int complete; /* the transfer: 0 running, 1 every byte in, -1 failed */
	int state; /* 0 downloading, 1 checked and indexed, -1 failed */
	struct stream *waiting; /* extractions done, for the verdict; loop */
	int refs;
	char why[256];
	char tmp[PATH_MAX], path[PATH_MAX];
};

static struct growing *
growing_new(void)
{
	struct growing *g;

	if ((g = calloc(1, sizeof(*g))) == NULL)
		return NULL;
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
	g->refs = 1;
	return g;
}

static void
growing_unref(struct growing *g)
{
	int last;

	if (g == NULL)
		return;
	pthread_mutex_lock(&g->mu);
	last = --g->refs == 0;
	pthread_mutex_unlock(&g->mu);
	if (last) {
		pthread_mutex_destroy(&g->mu);
		pthread_cond_destroy(&g->cv);
		free(g);
	}
}

/* Tell the readers of g: more bytes, or the end. */
static void
growing_set(struct growing *g, uint64_t written, int complete, int state,
    const char *why)
{
	pthread_mutex_lock(&g->mu);
	g->written = written;
	g->complete = complete;
	g->state = state;
	if (why != NULL)
		snprintf(g->why, sizeof(g->why), "%s", why);
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

/* A package download. */
struct dl {
	struct growing *g; /* its bytes, for extractions while it runs */
	struct repos *rs;
	struct dl *next; /* in the queue */
	struct repo *r;
	struct flight *f;
	struct repos_hit hit;
	struct repofetch *rf;
	int fd;
	char tmp[PATH_MAX], path[PATH_MAX];
	uint64_t bytes;
	struct dl *rnext; /* among rs->running */
	int started; /* holds one of the repo-downloads slots; under mu */
	/* Extractions asked for before it started, not yet submitted; mu. */
	struct stream *pending;
	int ok, timeout, checksum;
	char why[256];
};

struct repos {
	struct fill_deps d;
	struct repo *v;
	size_t n;
	struct curlev *cv;
	struct repofetch_opts fo, dlo;
	char pkgdir[DIR_MAX];
	char tmpdir[DIR_MAX]; /* for members a scan inspects */
	struct event *timer, *kick;
	pthread_mutex_t mu;
	struct dl *queue, **queue_tail; /* under mu, oldest first */
	atomic_uint active; /* downloads started and not ended */
	struct dl *running; /* downloads begun, under mu, by ->rnext */
	atomic_int refresh_asked;
};

static void refresh_next(struct repo *r);
static void stream_submit(struct stream *st);
static void streams_fail(struct stream *st, const char *why);
static void stream_verdicts(struct growing *g);
static void refresh_end(struct repo *r, int ok, const char *why);

/* ------------------------------------------------------------ helpers */

static int
mkdirs(const char *path)
{
	char p[PATH_MAX], *s;

	if (snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p))
		return -1;
	for (s = p + 1; *s != '\0'; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) == -1 && errno != EEXIST)
			return -1;
		*s = '/';
	}
	return mkdir(p, 0755) == -1 && errno != EEXIST ? -1 : 0;
}

/* SHA-256 of the file at path: 0, or -1. */
static int
file_sha256(const char *path, uint8_t out[32], uint64_t *size)
{
	static _Thread_local unsigned char buf[1 << 16];
	EVP_MD_CTX *c;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	if ((c = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(c);
		close(fd);
		return -1;
	}
	*size = 0;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		EVP_DigestUpdate(c, buf, (size_t)n);
		*size += (uint64_t)n;
	}
	close(fd);
	if (n == -1 || EVP_DigestFinal_ex(c, out, NULL) != 1) {
		EVP_MD_CTX_free(c);
		return -1;
	}
	EVP_MD_CTX_free(c);
	return 0;
}

/* A temp file in r's directory for what is fetched next: fd, or -1. */
static int
repo_tmp(struct repo *r, const char *name, char *path, size_t len)
{
	int fd;

	if (snprintf(path, len, "%s/%s", r->dir, name) >= (int)len)
		return -1;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	return fd;
}

/* ------------------------------------------------------------ refresh */

/*
 * Where the copy of an index file with that SHA-256 is kept between
 * refreshes, in r's directory: a refresh whose Release (or repomd.xml)
 * lists it again reads it there, with no GET.
 */
static void
kept_path(const struct repo *r, const uint8_t sha256[32], char *out, size_t len)
{
	char hex[65];

	buildid_hex(sha256, 32, hex);
	snprintf(out, len, "%s/idx-%s", r->dir, hex);
}

/* Worker: mark the index files to fetch whose checksum a copy has. */
static void
mark_kept(struct repo *r)
{
	char path[PATH_MAX];
	size_t i;

	for (i = 0; i < r->nfiles; i++) {
		kept_path(r, r->files[i].sha256, path, sizeof(path));
		r->files[i].kept = access(path, R_OK) == 0;
	}
}

/* The file index file i of r is read from: its kept copy, or the GET's. */
static void
ifile_path(const struct repo *r, size_t i, char *out, size_t len)
{
	if (r->files[i].kept)
		kept_path(r, r->files[i].sha256, out, len);
	else
		snprintf(out, len, "%s/index.%zu", r->dir, i);
}

/*
 * Worker, after a generation was written from r's index files: keep the
 * fetched ones under their checksums, drop copies no longer listed.
 */
static void
keep_files(struct repo *r)
{
	char path[PATH_MAX], kept[PATH_MAX], hex[65];
	struct dirent *de;
	size_t i;
	DIR *d;

	for (i = 0; i < r->nfiles; i++) {
		if (r->files[i].kept)
			continue;
		snprintf(path, sizeof(path), "%s/index.%zu", r->dir, i);
		kept_path(r, r->files[i].sha256, kept, sizeof(kept));
		if (rename(path, kept) == -1)
			unlink(path);
	}
	if ((d = opendir(r->dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "idx-", 4) != 0)
			continue;
		for (i = 0; i < r->nfiles; i++) {
			buildid_hex(r->files[i].sha256, 32, hex);
			if (strcmp(de->d_name + 4, hex) == 0)
				break;
		}
		if (i == r->nfiles)
			unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
}

/* Run gpgv; 0 when its status lines say a good, valid, unexpired signature. */
static int
run_gpgv(struct repo *r, char *const argv[], char *why, size_t whylen)
{
	char status[PATH_MAX], line[512];
	int fd, rc, st, good = 0, valid = 0, bad = 0;
	FILE *fp;

	snprintf(status, sizeof(status), "%s/gpgv.status", r->dir);
	if ((fd = open(status, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
		 0600)) == -1) {
		snprintf(why, whylen, "cannot write %.200s", status);
		return -1;
	}
	/* Workers may not run programs: the spawning thread does. */
	rc = spawn_wait(argv, fd, &st);
	close(fd);
	if (rc != 0) {
		snprintf(why, whylen, "cannot run gpgv: %s", strerror(rc));
		return -1;
	}
	if ((fp = fopen(status, "r")) == NULL) {
		snprintf(why, whylen, "gpgv said nothing");
		return -1;
	}
	while (fgets(line, sizeof(line), fp) != NULL) {
		if (strncmp(line, "[GNUPG:] ", 9) != 0)
			continue;
		if (strncmp(line + 9, "GOODSIG ", 8) == 0)
			good = 1;
		else if (strncmp(line + 9, "VALIDSIG ", 9) == 0)
			valid = 1;
		else if (strncmp(line + 9, "EXPSIG", 6) == 0 ||
		    strncmp(line + 9, "EXPKEYSIG", 9) == 0 ||
		    strncmp(line + 9, "REVKEYSIG", 9) == 0 ||
		    strncmp(line + 9, "BADSIG", 6) == 0 ||
		    strncmp(line + 9, "ERRSIG", 6) == 0 ||
		    strncmp(line + 9, "NO_PUBKEY", 9) == 0) {
			if (!bad)
				snprintf(why, whylen,
				    "signature refused by gpgv: %.*s",
				    (int)strcspn(line + 9, " \n"), line + 9);
			bad = 1;
		}
	}
	fclose(fp);
	if (bad)
		return -1;
	if (!good || !valid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		snprintf(why, whylen, "no valid signature (gpgv exit %d)",
		    WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		return -1;
	}
	return 0;
}

/*
 * Worker: the keyring for gpgv in kr: the configured file, or, when it is
 * ASCII-armored (as apt takes signed-by=), its binary form written to r's
 * directory (gpgv reads only binary keyrings).  0, or -1 with r->why.
 */
static int
repo_keyring(struct repo *r, char *kr, size_t len)
{
	char out[PATH_MAX], err[256];

	snprintf(out, sizeof(out), "%s/keyring.gpg", r->dir);
	switch (repometa_dearmor(r->cr->keyring, out, err, sizeof(err))) {
	case 0:
		snprintf(kr, len, "%s", out);
		return 0;
	case 1:
		snprintf(kr, len, "%s", r->cr->keyring);
		return 0;
	default:
		snprintf(r->why, sizeof(r->why), "key %.200s: %.200s",
		    r->cr->keyring, err);
		return -1;
	}
}

/* What verify_work collects from Release. */
struct pick {
	struct repo *r;
	/* Per component and arch: the Packages and Contents chosen, by rank. */
	int rank[FILES_MAX];
};

/* The rank of a compression: lower is preferred; -1 when not one of ours. */
static int
comp_rank(const char *rest)
{
	if (strcmp(rest, ".xz") == 0)
		return 0;
	if (strcmp(rest, ".gz") == 0)
		return 1;
	if (strcmp(rest, "") == 0)
		return 2;
	return -1;
}

static int
pick_cb(const struct repometa_entry *e, void *arg)
{
	struct pick *pk = arg;
	struct repo *r = pk->r;
	const struct config_repo *cr = r->cr;
	char base[300];
	size_t c, a, slot, n;
	int kind, rank;

	for (c = 0; c < cr->ncomponents; c++) {
		for (a = 0; a < cr->narchs; a++) {
			for (kind = 0; kind < 2; kind++) {
				if (kind == 0)
					snprintf(base, sizeof(base),
					    "%s/binary-%s/Packages",
					    cr->components[c], cr->archs[a]);
				else
					snprintf(base, sizeof(base),
					    "%s/Contents-%s", cr->components[c],
					    cr->archs[a]);
				n = strlen(base);
				if (strncmp(e->name, base, n) != 0 ||
				    (rank = comp_rank(e->name + n)) == -1)
					continue;
				slot = 2 * (c * cr->narchs + a) + (size_t)kind;
				if (slot >= FILES_MAX)
					continue;
				if (pk->rank[slot] != -1 &&
				    pk->rank[slot] <= rank)
					continue;
				if (strlen(e->name) >=
					sizeof(r->files[slot].name) ||
				    repometa_sha256_parse(e->sha256, 64,
					r->files[slot].sha256) == -1)
					continue;
				pk->rank[slot] = rank;
				strcpy(r->files[slot].name, e->name);
				r->files[slot].size = e->size;
				r->files[slot].contents = kind;
				snprintf(r->files[slot].arch,
				    sizeof(r->files[slot].arch), "%s",
				    cr->archs[a]);
			}
		}
	}
	return 0;
}

static int
repomd_cb(const struct repometa_rpmdata *d, void *arg)
{
	struct repo *r = arg;
	struct ifile *f;
	int kind;

	if (strcmp(d->type, "primary") == 0)
		kind = 0;
	else if (strcmp(d->type, "filelists") == 0)
		kind = 1;
	else
		return 0;
	f = &r->files[kind];
	if (strlen(d->href) >= sizeof(f->name) || d->sha256[0] == '\0' ||
	    repometa_sha256_parse(d->sha256, strlen(d->sha256), f->sha256) ==
		-1)
		return 0;
	strcpy(f->name, d->href);
	f->size = d->size;
	f->contents = kind;
	return 0;
}

/*
 * Worker: an rpm repository's repomd.xml, checked against gpgkey= when
 * given (repomd.xml.asc), and its primary and filelists files.
 */
static void
verify_rpm(struct repo *r)
{
	char kr[PATH_MAX], in[PATH_MAX], sig[PATH_MAX], home[PATH_MAX];
	char err[256];

	snprintf(home, sizeof(home), "%s", r->dir);
	snprintf(in, sizeof(in), "%s/repomd.xml", r->dir);
	snprintf(sig, sizeof(sig), "%s/repomd.xml.asc", r->dir);
	if (r->cr->keyring[0] != '\0') {
		char *argv[] = { "gpgv", "--homedir", home, "--status-fd", "1",
			"--keyring", kr, sig, in, NULL };

		if (repo_keyring(r, kr, sizeof(kr)) == -1 ||
		    run_gpgv(r, argv, r->why, sizeof(r->why)) == -1)
			return;
	}
	memset(r->files, 0, sizeof(r->files));
	if (repometa_repomd(in, repomd_cb, r, err, sizeof(err)) == -1) {
		snprintf(r->why, sizeof(r->why), "repomd.xml: %s", err);
		return;
	}
	if (r->files[0].name[0] == '\0' || r->files[1].name[0] == '\0') {
		snprintf(r->why, sizeof(r->why),
		    "repomd.xml names no primary and filelists with a SHA-256");
		return;
	}
	r->nfiles = 2;
	mark_kept(r);
	r->ok = 1;
}

/* Worker: an Arch repository's NAME.files against key= (NAME.files.sig). */
static void
verify_arch(struct repo *r)
{
	char kr[PATH_MAX], in[PATH_MAX], sig[PATH_MAX], home[PATH_MAX];
	char *argv[] = { "gpgv", "--homedir", home, "--status-fd", "1",
		"--keyring", kr, sig, in, NULL };

	snprintf(home, sizeof(home), "%s", r->dir);
	snprintf(in, sizeof(in), "%s/index.0", r->dir);
	snprintf(sig, sizeof(sig), "%s/files.sig", r->dir);
	if (repo_keyring(r, kr, sizeof(kr)) == -1 ||
	    run_gpgv(r, argv, r->why, sizeof(r->why)) == -1)
		return;
	r->ok = 1;
}

/* Worker: check the signature, read Release, choose the index files. */
static void
verify_work(void *arg)
{
	struct repo *r = arg;
	char kr[PATH_MAX], in[PATH_MAX], out[PATH_MAX], sig[PATH_MAX];
	char home[PATH_MAX], err[256];
	struct pick pk;
	struct ifile files[FILES_MAX];
	int64_t valid_until;
	size_t i, n = 0;

	r->ok = 0;
	if (r->cr->type == CONFIG_REPO_RPM) {
		verify_rpm(r);
		return;
	}
	if (r->cr->type == CONFIG_REPO_ARCH) {
		verify_arch(r);
		return;
	}
	if (repo_keyring(r, kr, sizeof(kr)) == -1)
		return;
	snprintf(home, sizeof(home), "%s", r->dir);
	snprintf(out, sizeof(out), "%s/Release.verified", r->dir);
	if (r->inline_sig) {
		char *argv[] = { "gpgv", "--homedir", home, "--status-fd", "1",
			"--keyring", kr, "--output", out, in, NULL };

		snprintf(in, sizeof(in), "%s/InRelease", r->dir);
		unlink(out);
		if (run_gpgv(r, argv, r->why, sizeof(r->why)) == -1)
			return;
	} else {
		char *argv[] = { "gpgv", "--homedir", home, "--status-fd", "1",
			"--keyring", kr, sig, in, NULL };

		snprintf(in, sizeof(in), "%s/Release", r->dir);
		snprintf(sig, sizeof(sig), "%s/Release.gpg", r->dir);
		if (run_gpgv(r, argv, r->why, sizeof(r->why)) == -1)
			return;
		if (rename(in, out) == -1) {
			snprintf(r->why, sizeof(r->why), "rename: %s",
			    strerror(errno));
			return;
		}
	}
	memset(&pk, 0, sizeof(pk));
	pk.r = r;
	for (i = 0; i < FILES_MAX; i++)
		pk.rank[i] = -1;
	memset(r->files, 0, sizeof(r->files));
	if (repometa_release(out, pick_cb, &pk, &valid_until, err,
		sizeof(err)) == -1) {
		snprintf(r->why, sizeof(r->why), "Release: %s", err);
		return;
	}
	if (valid_until != 0 && valid_until < clock_now()) {
		snprintf(r->why, sizeof(r->why),
		    "Release is past its Valid-Until");
		return;
	}
	/* Packages before Contents: Contents names packages they list. */
	for (i = 0; i < FILES_MAX; i += 2)
		if (pk.rank[i] != -1)
			files[n++] = r->files[i];
	for (i = 1; i < FILES_MAX; i += 2)
		if (pk.rank[i] != -1)
			files[n++] = r->files[i];
	if (n == 0) {
		snprintf(r->why, sizeof(r->why),
		    "Release lists no Packages file of the components and "
		    "architectures asked for");
		return;
	}
	memcpy(r->files, files, n * sizeof(files[0]));
	r->nfiles = n;
	mark_kept(r);
	r->ok = 1;
}

static void
verify_done(void *arg)
{
	struct repo *r = arg;

	if (!r->ok) {
		refresh_end(r, 0, r->why);
		return;
	}
	r->step = R_FILES;
	/* An Arch repository's one index file is the database checked. */
	r->cur = r->cr->type == CONFIG_REPO_ARCH ? 1 : 0;
	refresh_next(r);
}

/* What build_work records while parsing. */
struct build {
	struct repoidx_writer *w;
	const char *arch;
	char name[REPOIDX_NAME_MAX + 1];
	uint64_t ids;
};

static int
packages_cb(const struct repometa_deb *d, void *arg)
{
	struct build *b = arg;
	struct buildid id;
	const char *why;
	const char *p = d->build_ids, *e;

	if (snprintf(b->name, sizeof(b->name), "%s/%s", b->arch, d->package) >=
	    (int)sizeof(b->name))
		return 0;
	if (repoidx_put_pkg(b->w, b->name, d->filename, d->size, d->sha256) ==
	    -1)
		return -1;
	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\0')
			break;
		e = p + strcspn(p, " \t");
		if (buildid_parse(&id, p, (size_t)(e - p), &why) == 0) {
			if (repoidx_put_id(b->w, &id, REPOIDX_DEBUGINFO,
				b->name, 0) == -1)
				return -1;
			b->ids++;
		}
		p = e;
	}
	return 0;
}

static int
contents_cb(const struct buildid *id, const char *packages, void *arg)
{
	struct build *b = arg;
	char word[REPOIDX_NAME_MAX];
	const char *p = packages, *e, *slash;
	size_t n;
	int rc;

	while (*p != '\0') {
		e = p + strcspn(p, ",");
		n = (size_t)(e - p);
		if (n < sizeof(word)) {
			memcpy(word, p, n);
			word[n] = '\0';
			slash = strrchr(word, '/');
			snprintf(b->name, sizeof(b->name), "%s/%s", b->arch,
			    slash != NULL ? slash + 1 : word);
			if ((rc = repoidx_has_pkg(b->w, b->name)) == -1)
				return -1;
			if (rc == 1) {
				b->ids++;
				return repoidx_put_id(b->w, id,
					   REPOIDX_DEBUGINFO, b->name, 1) == -1
				    ? -1
				    : 0;
			}
		}
		p = *e == ',' ? e + 1 : e;
	}
	return 0;
}

static int
primary_cb(const struct repometa_rpm *p, void *arg)
{
	struct build *b = arg;

	/* A package whose checksum is not SHA-256 cannot be checked. */
	if (!p->has_sha256)
		return 0;
	return repoidx_put_pkg(b->w, p->pkgid, p->href, p->size, p->sha256) ==
		-1
	    ? -1
	    : 0;
}

/* The index's kind for what a .build-id path names. */
static enum repoidx_kind
repo_kind(int kind)
{
	switch (kind) {
	case REPOMETA_EXECUTABLE:
		return REPOIDX_EXECUTABLE;
	case REPOMETA_EXECUTABLE_WEAK:
		return REPOIDX_EXECUTABLE_WEAK;
	default:
		return REPOIDX_DEBUGINFO;
	}
}

/* An id of a package named pkgid (rpm filelists). */
static int
filelists_cb(const char *pkgid, const struct buildid *id, int kind, void *arg)
{
	struct build *b = arg;
	int rc;

	if ((rc = repoidx_has_pkg(b->w, pkgid)) != 1)
		return rc;
	b->ids++;
	return repoidx_put_id(b->w, id, repo_kind(kind), pkgid, 1) == -1 ? -1
									 : 0;
}

static int
arch_desc_cb(const struct repometa_arch *p, void *arg)
{
	struct build *b = arg;

	return repoidx_put_pkg(b->w, p->dir, p->filename, p->size, p->sha256) ==
		-1
	    ? -1
	    : 0;
}

/*
 * An id of an Arch package, named by its directory in the database: its
 * desc may come after its files list, and an id whose package has none
 * is never found (repoidx_find finds no package).
 */
static int
arch_file_cb(const char *dir, const struct buildid *id, int kind, void *arg)
{
	struct build *b = arg;

	b->ids++;
	return repoidx_put_id(b->w, id, repo_kind(kind), dir, 1) == -1 ? -1 : 0;
}

/* Parse index file i of r (checked) into b: 0, or -1 with err. */
static int
build_file(struct repo *r, size_t i, const char *path, struct build *b,
    char *err, size_t errlen)
{
	if (r->cr->type == CONFIG_REPO_ARCH)
		return repometa_arch_files(path, arch_desc_cb, arch_file_cb, b,
		    err, errlen);
	if (r->cr->type == CONFIG_REPO_RPM)
		return r->files[i].contents
		    ? repometa_rpm_filelists(path, filelists_cb, b, err, errlen)
		    : repometa_rpm_primary(path, primary_cb, b, err, errlen);
	b->arch = r->files[i].arch;
	return r->files[i].contents
	    ? repometa_contents(path, contents_cb, b, err, errlen)
	    : repometa_packages(path, packages_cb, b, err, errlen);
}

/* Worker: check every index file, then write the new generation. */
static void
build_work(void *arg)
{
	struct repo *r = arg;
	struct build b;
	char path[PATH_MAX], err[256];
	uint8_t sha[32];
	uint64_t size;
	size_t i;

	r->ok = 0;
	for (i = 0; i < r->nfiles; i++) {
		if (r->cr->type == CONFIG_REPO_ARCH)
			break; /* nothing lists its checksum */
		ifile_path(r, i, path, sizeof(path));
		/* repomd.xml may leave the size out: 0. */
		if (file_sha256(path, sha, &size) == -1 ||
		    (size != r->files[i].size &&
			(r->cr->type != CONFIG_REPO_RPM ||
			    r->files[i].size != 0)) ||
		    memcmp(sha, r->files[i].sha256, 32) != 0) {
			snprintf(r->why, sizeof(r->why),
			    "%s: size or SHA256 differs from Release's",
			    r->files[i].name);
			return;
		}
	}
	memset(&b, 0, sizeof(b));
	if ((b.w = repoidx_writer_new(r->rs->d.idx, r->key, err,
		 sizeof(err))) == NULL) {
		snprintf(r->why, sizeof(r->why), "index: %s", err);
		return;
	}
	for (i = 0; i < r->nfiles; i++) {
		ifile_path(r, i, path, sizeof(path));
		if (build_file(r, i, path, &b, err, sizeof(err)) == -1) {
			snprintf(r->why, sizeof(r->why), "%s: %s",
			    r->files[i].name, err);
			repoidx_writer_abort(b.w);
			return;
		}
	}
	if (repoidx_writer_commit(b.w, clock_now(), err, sizeof(err)) == -1) {
		snprintf(r->why, sizeof(r->why), "index: %s", err);
		return;
	}
	/* An Arch database has no checksum to keep it by. */
	if (r->cr->type == CONFIG_REPO_ARCH) {
		snprintf(path, sizeof(path), "%s/index.0", r->dir);
		unlink(path);
	} else
		keep_files(r);
	r->ok = 1;
}

static void
build_done(void *arg)
{
	struct repo *r = arg;

	if (r->ok) {
		memcpy(r->last, r->files, r->nfiles * sizeof(r->files[0]));
		r->nlast = r->nfiles;
	}
	refresh_end(r, r->ok, r->why);
}

/* The last refresh's file of that name, or NULL. */
static const struct ifile *
last_file(const struct repo *r, const char *name)
{
	size_t i;

	for (i = 0; i < r->nlast; i++)
		if (strcmp(r->last[i].name, name) == 0)
			return &r->last[i];
	return NULL;
}

/* The loop: a metadata transfer ended. */
static void
meta_done(void *arg, const struct repofetch_result *res)
{
	struct repo *r = arg;
	char why[600];

	r->rf = NULL;
	close(r->fd);
	r->fd = -1;
	if (res->error != NULL ||
	    (res->status != 200 && res->status != 304 && res->status != 404)) {
		if (res->error != NULL)
			snprintf(why, sizeof(why), "%s", res->error);
		else
			snprintf(why, sizeof(why), "HTTP status %ld",
			    res->status);
		refresh_end(r, 0, why);
		return;
	}
	switch (r->step) {
	case R_INRELEASE:
		if (res->status == 304) {
			refresh_end(r, 1, NULL);
			return;
		}
		if (res->status == 404 && r->cr->type != CONFIG_REPO_DEB) {
			refresh_end(r, 0,
			    r->cr->type == CONFIG_REPO_RPM
				? "no repodata/repomd.xml (404)"
				: "no NAME.files database (404)");
			return;
		}
		if (r->cr->type == CONFIG_REPO_ARCH) {
			/*
			 * The .files database is the whole index.  With key=,
			 * NAME.files.sig must sign it; without, nothing to
			 * check it against but TLS (each package's SHA-256
			 * is): Arch signs packages, rarely databases.
			 */
			snprintf(r->etag, sizeof(r->etag), "%s", res->etag);
			r->last_modified = res->last_modified;
			r->nfiles = 1;
			if (r->cr->keyring[0] != '\0') {
				r->step = R_RELEASE_GPG;
				break;
			}
			r->step = R_FILES;
			r->cur = 1;
			break;
		}
		if (res->status == 404) {
			r->inline_sig = 0;
			r->step = R_RELEASE;
			break;
		}
		snprintf(r->etag, sizeof(r->etag), "%s", res->etag);
		r->last_modified = res->last_modified;
		if (r->cr->type == CONFIG_REPO_RPM) {
			/* repomd.xml.asc, when a key is given. */
			r->inline_sig = 0;
			r->step = r->cr->keyring[0] != '\0' ? R_RELEASE_GPG
							    : R_VERIFY;
		} else {
			r->inline_sig = 1;
			r->step = R_VERIFY;
		}
		break;
	case R_RELEASE:
	case R_RELEASE_GPG:
	case R_FILES:
		/*
		 * An index file is asked for when Release lists a checksum no
		 * copy kept has: a 304 contradicts that signed listing
		 * (validators too coarse, a mirror mid-sync).  Once more,
		 * whole: its checksum decides.
		 */
		if (r->step == R_FILES && res->status == 304 &&
		    !r->files[r->cur].whole) {
			r->files[r->cur].whole = 1;
			break;
		}
		if (r->step == R_FILES && res->status == 200) {
			snprintf(r->files[r->cur].etag,
			    sizeof(r->files[r->cur].etag), "%s", res->etag);
			r->files[r->cur].last_modified = res->last_modified;
		}
		if (res->status != 200) {
			snprintf(why, sizeof(why), "%s: HTTP status %ld",
			    r->step == R_RELEASE     ? "Release"
				: r->step == R_FILES ? r->files[r->cur].name
				: r->cr->type == CONFIG_REPO_RPM
				? "repomd.xml.asc"
				: r->cr->type == CONFIG_REPO_ARCH
				? "the database's signature (.files.sig)"
				: "Release.gpg",
			    res->status);
			refresh_end(r, 0, why);
			return;
		}
		if (r->step == R_FILES)
			r->cur++;
		else
			r->step++;
		break;
	default:
		break;
	}
	refresh_next(r);
}

/*
 * Start a GET of the repository's metadata file name (apt: under
 * dists/SUITE/; rpm: under the repository URL) into the temp file tmp,
 * conditional on etag (NULL: none) and last_modified (-1: none).
 */
static void
meta_get(struct repo *r, const char *name, const char *tmp, const char *etag,
    int64_t last_modified)
{
	char url[2048], path[PATH_MAX];

	if (r->cr->type != CONFIG_REPO_DEB)
		snprintf(url, sizeof(url), "%s/%s", r->cr->url, name);
	else
		snprintf(url, sizeof(url), "%s/dists/%s/%s", r->cr->url,
		    r->cr->suite, name);
	if ((r->fd = repo_tmp(r, tmp, path, sizeof(path))) == -1) {
		refresh_end(r, 0, "cannot write the repository's directory");
		return;
	}
	/*
	 * With an ETag, no date (RFC 9110 13.1.3): a date is to the second,
	 * and a file replaced within it would seem unchanged.
	 */
	r->rf = repofetch_get(r->rs->cv, &r->rs->fo, url, r->fd, etag,
	    etag != NULL && etag[0] != '\0' ? -1 : last_modified, NULL,
	    meta_done, r);
	if (r->rf == NULL) {
		close(r->fd);
		r->fd = -1;
		refresh_end(r, 0, "cannot start a transfer");
	}
}

/* The loop: the next step of r's refresh. */
static void
refresh_next(struct repo *r)
{
	char tmp[sizeof(r->files[0].name) + 8]; /* NAME.files.sig */

	const struct ifile *was;

	switch (r->step) {
	case R_INRELEASE:
		if (r->cr->type == CONFIG_REPO_RPM) {
			meta_get(r, "repodata/repomd.xml", "repomd.xml",
			    r->etag, r->last_modified);
		} else if (r->cr->type == CONFIG_REPO_ARCH) {
			snprintf(r->files[0].name, sizeof(r->files[0].name),
			    "%.200s.files", r->cr->suite);
			meta_get(r, r->files[0].name, "index.0", r->etag,
			    r->last_modified);
		} else
			meta_get(r, "InRelease", "InRelease", r->etag,
			    r->last_modified);
		break;
	case R_RELEASE:
		meta_get(r, "Release", "Release", NULL, -1);
		break;
	case R_RELEASE_GPG:
		if (r->cr->type == CONFIG_REPO_RPM)
			meta_get(r, "repodata/repomd.xml.asc", "repomd.xml.asc",
			    NULL, -1);
		else if (r->cr->type == CONFIG_REPO_ARCH) {
			snprintf(tmp, sizeof(tmp), "%s.sig", r->files[0].name);
			meta_get(r, tmp, "files.sig", NULL, -1);
		} else
			meta_get(r, "Release.gpg", "Release.gpg", NULL, -1);
		break;
	case R_VERIFY:
		if (pool_submit_long(r->rs->d.pool, verify_work, r->rs->d.inbox,
			verify_done, r) == -1)
			refresh_end(r, 0, "server is shutting down");
		break;
	case R_FILES:
		/* A file whose checksum a kept copy has is not fetched. */
		while (r->cur < r->nfiles && r->files[r->cur].kept)
			r->cur++;
		if (r->cur == r->nfiles) {
			r->step = R_BUILD;
			if (pool_submit_long(r->rs->d.pool, build_work,
				r->rs->d.inbox, build_done, r) == -1)
				refresh_end(r, 0, "server is shutting down");
			break;
		}
		/* Conditional on the last answer for a file of its name. */
		snprintf(tmp, sizeof(tmp), "index.%zu", r->cur);
		r->files[r->cur].etag[0] = '\0';
		r->files[r->cur].last_modified = -1;
		was = r->files[r->cur].whole
		    ? NULL
		    : last_file(r, r->files[r->cur].name);
		meta_get(r, r->files[r->cur].name, tmp,
		    was != NULL ? was->etag : NULL,
		    was != NULL ? was->last_modified : -1);
		break;
	default:
		break;
	}
}

/* Worker: the failed refresh of a repository, for dbgmirror stats. */
struct noted {
	struct repo *r;
	int64_t when;
	char why[256];
};

static void
note_work(void *arg)
{
	struct noted *n = arg;
	char err[256];

	if (repoidx_note_error(n->r->rs->d.idx, n->r->key, n->when, n->why, err,
		sizeof(err)) == -1)
		log_warnx("%s: %s", __func__, err);
	free(n);
}

static void
refresh_end(struct repo *r, int ok, const char *why)
{
	struct noted *n;

	r->step = R_IDLE;
	if (ok) {
		atomic_fetch_add(&r->refreshes, 1);
		atomic_store(&r->last_refresh, clock_now());
		log_info("repo %s: refreshed", r->cr->name);
	} else {
		/* A later InRelease (and index files) whole again. */
		r->etag[0] = '\0';
		r->last_modified = -1;
		r->nlast = 0;
		atomic_fetch_add(&r->refresh_failures, 1);
		log_warnx("repo %s: refresh failed, repository refused: %s",
		    r->cr->name, why != NULL ? why : "?");
		if ((n = malloc(sizeof(*n))) != NULL) {
			n->r = r;
			n->when = clock_now();
			snprintf(n->why, sizeof(n->why), "%s",
			    why != NULL ? why : "?");
			if (pool_submit(r->rs->d.pool, note_work, NULL, NULL,
				n) == -1)
				free(n);
		}
	}
	if (r->again) {
		r->again = 0;
		r->step = R_INRELEASE;
		refresh_next(r);
	}
}

/* The loop: refresh r now, or right after the refresh that runs. */
static void
refresh_start(struct repo *r)
{
	if (r->step != R_IDLE) {
		r->again = 1;
		return;
	}
	r->step = R_INRELEASE;
	refresh_next(r);
}

/* ----------------------------------------------------------- downloads */

/* The directory name in dir, open; NULL when it is none. */
static DIR *
opendir_at(DIR *dir, const char *name)
{
	DIR *d;
	int fd;

	fd = openat(dirfd(dir), name,
	    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return NULL;
	if ((d = fdopendir(fd)) == NULL)
		close(fd);
	return d;
}

/* A package in the package cache. */
struct cached {
	char path[PATH_MAX];
	int64_t mtime_ns;
	uint64_t size;
	int evicted;
};

struct trim {
	struct cached *v;
	size_t n;
};

/* pkgidx_prune: keep what was not evicted. */
static int
trim_keep(const char *path, void *arg)
{
	struct trim *t = arg;
	size_t i;

	for (i = 0; i < t->n; i++)
		if (t->v[i].evicted && strcmp(t->v[i].path, path) == 0)
			return 0;
	return 1;
}

/*
 * Worker: trim the package cache to repo-cache-size, oldest downloads
 * first (never the last one), and forget the members of what went.
 */
static void
trim_cache(struct repos *rs)
{
	struct trim t = { NULL, 0 };
	struct cached *nv;
	struct index_batch *b;
	size_t cap = 0, i, j, left;
	uint64_t total = 0, removed;
	struct dirent *de, *se;
	struct stat st;
	char err[256], *slash;
	int any = 0;
	DIR *dir, *sub;

	if ((dir = opendir(rs->pkgdir)) == NULL)
		return;
	/* DIR/HEX/NAME: one package in each directory. */
	while ((de = readdir(dir)) != NULL) {
		if (de->d_name[0] == '.' ||
		    (sub = opendir_at(dir, de->d_name)) == NULL)
			continue;
		while ((se = readdir(sub)) != NULL) {
			if (se->d_name[0] == '.' ||
			    fstatat(dirfd(sub), se->d_name, &st, 0) == -1 ||
			    !S_ISREG(st.st_mode))
				continue;
			if (t.n == cap) {
				cap = cap == 0 ? 64 : 2 * cap;
				if ((nv = realloc(t.v, cap * sizeof(*t.v))) ==
				    NULL)
					break;
				t.v = nv;
			}
			snprintf(t.v[t.n].path, sizeof(t.v[t.n].path),
			    "%s/%s/%s", rs->pkgdir, de->d_name, se->d_name);
			t.v[t.n].mtime_ns =
			    (int64_t)st.st_mtim.tv_sec * 1000000000 +
			    st.st_mtim.tv_nsec;
			t.v[t.n].size = (uint64_t)st.st_size;
			t.v[t.n].evicted = 0;
			total += t.v[t.n].size;
			t.n++;
		}
		closedir(sub);
	}
	closedir(dir);
	for (left = t.n; total > rs->d.cfg->repo_cache_size && left > 1;
	     left--) {
		for (i = SIZE_MAX, j = 0; j < t.n; j++)
			if (!t.v[j].evicted &&
			    (i == SIZE_MAX ||
				t.v[j].mtime_ns < t.v[i].mtime_ns))
				i = j;
		t.v[i].evicted = 1;
		total -= t.v[i].size;
		if (unlink(t.v[i].path) == 0) {
			any = 1;
			log_info("repo package cache: %s evicted", t.v[i].path);
			if ((slash = strrchr(t.v[i].path, '/')) != NULL) {
				*slash = '\0';
				rmdir(t.v[i].path);
				*slash = '/';
			}
		}
	}
	if (any &&
	    (b = index_batch_begin(rs->d.idx, err, sizeof(err))) != NULL) {
		/* A failed prune makes the commit fail: nothing half done. */
		pkgidx_prune(b, trim_keep, &t, &removed);
		if (index_batch_commit(b, err, sizeof(err)) == -1)
			log_warnx("%s: %s", __func__, err);
	}
	free(t.v);
}

/* Worker: a package downloaded already, indexed unless it is. */
static void
dl_have_work(void *arg)
{
	struct dl *dl = arg;
	struct index_reader *rd;
	struct index_file pf;
	char err[256];
	int have = 0;

	if ((rd = index_reader_new(dl->rs->d.idx)) != NULL &&
	    index_reader_begin(rd) == 0) {
		have = pkgidx_get_package(rd, dl->path, &pf) == 0;
		index_reader_end(rd);
	}
	index_reader_free(rd);
	dl->ok = have ||
	    scan_package(dl->rs->d.idx, dl->path, dl->rs->tmpdir,
		dl->rs->d.cfg->min_free_disk, err, sizeof(err)) == 0;
	if (!dl->ok)
		snprintf(dl->why, sizeof(dl->why), "%.150s: %.90s",
		    dl->hit.file, err);
}

/* Worker: check the download, put it in place and index it. */
static void
dl_work(void *arg)
{
	struct dl *dl = arg;
	struct repos *rs = dl->rs;
	uint8_t sha[32];
	uint64_t size;
	char err[256], dir[PATH_MAX], *slash;

	dl->ok = 0;
	if (file_sha256(dl->tmp, sha, &size) == -1 || size != dl->hit.size ||
	    memcmp(sha, dl->hit.sha256, 32) != 0) {
		dl->checksum = 1;
		snprintf(dl->why, sizeof(dl->why),
		    "%.150s: size or SHA256 differs from the repository's "
		    "index",
		    dl->hit.file);
		unlink(dl->tmp);
		return;
	}
	snprintf(dir, sizeof(dir), "%s", dl->path);
	if ((slash = strrchr(dir, '/')) != NULL)
		*slash = '\0';
	if ((mkdir(dir, 0755) == -1 && errno != EEXIST) ||
	    rename(dl->tmp, dl->path) == -1) {
		snprintf(dl->why, sizeof(dl->why), "rename: %s",
		    strerror(errno));
		unlink(dl->tmp);
		return;
	}
	if (scan_package(rs->d.idx, dl->path, rs->tmpdir,
		rs->d.cfg->min_free_disk, err, sizeof(err)) == -1) {
		snprintf(dl->why, sizeof(dl->why), "%.150s: %.90s",
		    dl->hit.file, err);
		return;
	}
	trim_cache(rs);
	dl->ok = 1;
}

/* Worker: remember a failed download for error-ttl. */
static void
dl_fail_work(void *arg)
{
	struct dl *dl = arg;
	char err[256];

	if (dl->rs->d.cfg->error_ttl > 0 &&
	    neg_put(dl->rs->d.idx, &dl->hit.key, &(struct buildid){ 0 },
		NEG_ERROR, clock_now() + dl->rs->d.cfg->error_ttl, err,
		sizeof(err)) == -1)
		log_warnx("%s: %s", __func__, err);
}

/* The loop: the end of a download. */
static void
dl_end(struct dl *dl)
{
	struct repo *r = dl->r;
	struct stream *st;
	struct dl **pp;

	if (dl->ok) {
		atomic_fetch_add(&r->downloads, 1);
		atomic_store(&r->failures_in_row, 0);
		flight_end(dl->f, FLIGHT_READY, NULL);
	} else {
		atomic_fetch_add(&r->download_failures, 1);
		if (dl->timeout)
			atomic_fetch_add(&r->timeouts, 1);
		if (dl->checksum)
			atomic_fetch_add(&r->checksum_errors, 1);
		log_warnx("repo %s: download failed: %s", r->cr->name, dl->why);
		if (atomic_fetch_add(&r->failures_in_row, 1) + 1 >=
		    BREAKER_FAILURES) {
			atomic_store(&r->open_until,
			    clock_now() + BREAKER_BACKOFF);
			log_warnx("repo %s: breaker open: skipped for %ds",
			    r->cr->name, BREAKER_BACKOFF);
		}
		flight_end(dl->f, FLIGHT_FAILED, dl->why);
	}
	flight_detach(dl->f);
	flight_unref(dl->f);
	pthread_mutex_lock(&dl->rs->mu);
	for (pp = &dl->rs->running; *pp != NULL; pp = &(*pp)->rnext)
		if (*pp == dl) {
			*pp = dl->rnext;
			break;
		}
	st = dl->pending; /* a download ended before it started */
	dl->pending = NULL;
	pthread_mutex_unlock(&dl->rs->mu);
	streams_fail(st, dl->why);
	if (dl->started) {
		/* Its slot to the oldest download waiting. */
		atomic_fetch_sub(&dl->rs->active, 1);
		event_active(dl->rs->kick, EV_READ, 1);
	}
	if (dl->g != NULL) {
		growing_set(dl->g, dl->bytes, dl->ok ? 1 : -1, dl->ok ? 1 : -1,
		    dl->why);
		stream_verdicts(dl->g);
		growing_unref(dl->g);
	}
	free(dl);
}

static void
dl_done(void *arg)
{
	struct dl *dl = arg;

	if (!dl->ok &&
	    pool_submit(dl->rs->d.pool, dl_fail_work, dl->rs->d.inbox,
		(pool_fn)dl_end, dl) == 0)
		return;
	dl_end(dl);
}

static void
dl_fetched(void *arg, const struct repofetch_result *res)
{
	struct dl *dl = arg;

	dl->rf = NULL;
	close(dl->fd);
	dl->fd = -1;
	if (res->error != NULL || res->status != 200) {
		if (res->error != NULL)
			snprintf(dl->why, sizeof(dl->why), "%.150s: %.90s",
			    dl->hit.file, res->error);
		else
			snprintf(dl->why, sizeof(dl->why),
			    "%.150s: HTTP status %ld", dl->hit.file,
			    res->status);
		if (res->status >= 400)
			atomic_fetch_add(&dl->r->http_errors, 1);
		dl->timeout = res->timeout;
		unlink(dl->tmp);
		dl->ok = 0;
		dl_done(dl);
		return;
	}
	/* Every byte is in: extractions may read to the end. */
	if (dl->g != NULL)
		growing_set(dl->g, dl->bytes, 1, 0, NULL);
	if (pool_submit_long(dl->rs->d.pool, dl_work, dl->rs->d.inbox, dl_done,
		dl) == -1) {
		snprintf(dl->why, sizeof(dl->why), "server is shutting down");
		dl_end(dl);
	}
}

/* The loop: more of the package is in its temp file. */
static void
dl_progress(void *arg, uint64_t bytes)
{
	struct dl *dl = arg;

	dl->bytes = bytes;
	if (dl->g != NULL)
		growing_set(dl->g, bytes, 0, 0, NULL);
}

/* The loop: start a queued download. */
static void
dl_start(struct dl *dl)
{
	char url[2 * REPOIDX_FILE_MAX + 64];

	/* A download that ended just before this request joined it. */
	if (access(dl->path, F_OK) == 0) {
		if (pool_submit(dl->rs->d.pool, dl_have_work, dl->rs->d.inbox,
			dl_done, dl) == -1) {
			snprintf(dl->why, sizeof(dl->why),
			    "server is shutting down");
			dl_end(dl);
		}
		return;
	}
	snprintf(url, sizeof(url), "%s/%s", dl->r->cr->url, dl->hit.file);
	snprintf(dl->tmp, sizeof(dl->tmp), "%s/.dl-XXXXXX", dl->rs->pkgdir);
	if ((dl->fd = mkstemp(dl->tmp)) == -1) {
		snprintf(dl->why, sizeof(dl->why),
		    "cannot write the package cache: %s", strerror(errno));
		dl_end(dl);
		return;
	}
	if (dl->g != NULL) {
		pthread_mutex_lock(&dl->g->mu);
		snprintf(dl->g->tmp, sizeof(dl->g->tmp), "%s", dl->tmp);
		pthread_cond_broadcast(&dl->g->cv);
		pthread_mutex_unlock(&dl->g->mu);
	}
	dl->rf = repofetch_get(dl->rs->cv, &dl->rs->dlo, url, dl->fd, NULL, -1,
	    dl_progress, dl_fetched, dl);
	if (dl->rf == NULL) {
		close(dl->fd);
		unlink(dl->tmp);
		snprintf(dl->why, sizeof(dl->why), "cannot start a transfer");
		dl_end(dl);
	}
}

/* The path of a package in the package cache: DIR/SHA256[0:16]/NAME. */
static void
pkg_path(const struct repos *rs, const struct repos_hit *hit, char *out,
    size_t len)
{
	char hex[17];
	const char *base = strrchr(hit->file, '/');

	/*
	 * A directory per package keeps its own file name, which
	 * X-DEBUGINFOD-ARCHIVE shows, and apart from a namesake's.
	 */
	buildid_hex(hit->sha256, 8, hex);
	snprintf(out, len, "%s/%s/%s", rs->pkgdir, hex,
	    base != NULL ? base + 1 : hit->file);
}

struct flight *
repos_join(struct repos *rs, const struct repos_hit *hit)
{
	struct flight *f;
	struct dl *dl;
	int created;
	char label[200];

	if ((f = flight_join(rs->d.ft, &hit->key, 0, &created)) == NULL)
		return NULL;
	if (!created)
		return f;
	flight_ref(f); /* the download's */
	snprintf(label, sizeof(label), "package %.100s from %.40s", hit->file,
	    rs->v[hit->repo].cr->name);
	flight_set_label(f, label);
	if ((dl = calloc(1, sizeof(*dl))) == NULL) {
		flight_end(f, FLIGHT_FAILED, "out of memory");
		flight_detach(f);
		flight_unref(f);
		return f;
	}
	dl->rs = rs;
	dl->r = &rs->v[hit->repo];
	dl->f = f;
	dl->hit = *hit;
	dl->fd = -1;
	pkg_path(rs, hit, dl->path, sizeof(dl->path));
	if ((dl->g = growing_new()) != NULL)
		snprintf(dl->g->path, sizeof(dl->g->path), "%s", dl->path);
	pthread_mutex_lock(&rs->mu);
	*rs->queue_tail = dl;
	rs->queue_tail = &dl->next;
	dl->rnext = rs->running;
	rs->running = dl;
	pthread_mutex_unlock(&rs->mu);
	event_active(rs->kick, EV_READ, 1);
	return f;
}

int
repos_find(struct repos *rs, struct index_reader *rd, const struct buildid *id,
    int executable, struct repos_hit *hit, unsigned *retry)
{
	static const enum repoidx_kind debuginfo[] = { REPOIDX_DEBUGINFO },
				       exec[] = { REPOIDX_EXECUTABLE,
					       REPOIDX_EXECUTABLE_WEAK };
	const enum repoidx_kind *kinds = executable ? exec : debuginfo;
	size_t nkinds = executable ? 2 : 1, k, i;
	struct repoidx_pkg p;
	struct neg_entry ne;
	struct buildid pid;
	struct index_file pf;
	char path[PATH_MAX];
	int64_t now = clock_now();
	int rc;

	/* Strong kinds in every repository before weak ones in any. */
	for (k = 0; k < nkinds; k++) {
		for (i = 0; i < rs->n; i++) {
			if (atomic_load(&rs->v[i].open_until) > now)
				continue;
			rc = repoidx_find(rd, rs->v[i].key, id, kinds[k], &p);
			if (rc == INDEX_NOTFOUND)
				continue;
			if (rc != 0)
				return -1;
			hit->repo = (unsigned)i;
			memcpy(hit->file, p.file, p.file_len);
			hit->file[p.file_len] = '\0';
			hit->size = p.size;
			memcpy(hit->sha256, p.sha256, 32);
			pid.len = 32;
			memcpy(pid.bytes, p.sha256, 32);
			cache_key_make(&hit->key, &pid, CACHE_SOURCE,
			    PKG_KEY_ARG);
			/* Downloaded and indexed: the package step had it. */
			pkg_path(rs, hit, path, sizeof(path));
			if (pkgidx_get_package(rd, path, &pf) == 0)
				continue;
			if (neg_get(rd, &hit->key, now, &ne) == 0) {
				*retry = (unsigned)(ne.expires - now);
				return 2;
			}
			return 1;
		}
	}
	return 0;
}

/* ------------------------------------------- extraction while downloading */

/*
 * A member extracted from a package while it downloads: a long job reads
 * the growing temp file through pkg_extract_watch (its pkg_limits.grow
 * waits for the download), writing the member into its flight's temp
 * file, so that readers stream it as it comes out; its length is told
 * once the opening bytes name the right build-id, as for an upstream
 * answer.  The last byte waits for the verdict on the whole package
 * (checked and indexed: growing state 1), then the member's final check
 * and publishing (fill_verify_publish); a package that fails leaves the
 * readers cut short and nothing published.
 */
struct stream {
	struct repos *rs;
	struct flight *f;
	struct growing *g;
	struct buildid id;
	char member[PATH_MAX];
	int fd;
	uint64_t
	    length; /* the member's, from its header; UINT64_MAX: not yet */
	uint64_t written;
	int told;
	int rc; /* pkg_extract_watch's */
	char err[256];
	struct stream *next; /* in its growing's waiting list */
	enum flight_state end;
	char why[256];
};

/* pkg_limits.grow: wait for more of the package, or its end. */
static int
stream_grow(uint64_t have, void *arg)
{
	struct stream *st = arg;
	struct growing *g = st->g;
	int rc;

	pthread_mutex_lock(&g->mu);
	while (g->written <= have && g->complete == 0 && g->state == 0)
		pthread_cond_wait(&g->cv, &g->mu);
	rc = g->written > have ? 1 : g->complete == 1 || g->state == 1 ? 0 : -1;
	pthread_mutex_unlock(&g->mu);
	return rc;
}

static void
stream_size(uint64_t size, void *arg)
{
	struct stream *st = arg;

	st->length = size;
	flight_announce(st->f, size);
}

/* After each piece: readers follow, once the prefix names our id. */
static void
stream_progress(uint64_t end, void *arg)
{
	static _Thread_local char buf[64 << 10];
	struct stream *st = arg;
	size_t n = end < sizeof(buf) ? (size_t)end : sizeof(buf);
	int rc;

	st->written = end;
	flight_progress(st->f, end);
	if (st->told || st->length == UINT64_MAX)
		return;
	if (pread(st->fd, buf, n, 0) != (ssize_t)n ||
	    (rc = elf_prefix_check(buf, n, &st->id)) == -1) {
		st->told = 1; /* wrong: the final check says so */
		return;
	}
	if (rc == 1 || n == sizeof(buf) || end == st->length) {
		flight_set_length(st->f, st->length);
		st->told = 1;
	}
}

/* The package of st, open: the temp file while it downloads, else its place. */
static int
stream_open(struct stream *st)
{
	struct growing *g = st->g;
	int fd = -1;

	pthread_mutex_lock(&g->mu);
	while (g->tmp[0] == '\0' && g->state == 0)
		pthread_cond_wait(&g->cv, &g->mu);
	if (g->state == 0)
		fd = open(g->tmp, O_RDONLY | O_CLOEXEC);
	/* Renamed into place meanwhile: wait for the end, then there. */
	while (fd == -1 && g->state == 0)
		pthread_cond_wait(&g->cv, &g->mu);
	if (fd == -1 && g->state == 1)
		fd = open(g->path, O_RDONLY | O_CLOEXEC);
	pthread_mutex_unlock(&g->mu);
	return fd;
}

/* Worker: extract st's member as the package comes, then the verdict. */
static void
stream_work(void *arg)
{
	struct stream *st = arg;
	struct growing *g = st->g;
	struct pkg_limits lim = pkg_default_limits;
	struct pkg_watch watch = { stream_progress, NULL, NULL, st,
		stream_size };
	char pkg[64], tpath[PATH_MAX], headers[FILL_MEMBER_HEADERS_MAX];
	char err[256], file[PATH_MAX];
	const char *base = strrchr(g->path, '/');
	struct rpmhdr *rh = NULL;
	int pfd, n;

	st->end = FLIGHT_FAILED;
	if ((pfd = stream_open(st)) == -1) {
		snprintf(st->why, sizeof(st->why), "%s",
		    g->why[0] != '\0' ? g->why : "package unavailable");
		return;
	}
	if ((st->fd = blob_tmp_new(st->rs->d.bs, tpath, sizeof(tpath), err,
		 sizeof(err))) == -1) {
		close(pfd);
		snprintf(st->why, sizeof(st->why), "cannot store the file");
		return;
	}
	flight_set_file(st->f, st->fd, tpath);
	/*
	 * An rpm's header, which holds its files' IMA signatures, comes
	 * before its payload: waiting for it costs the member nothing, and
	 * the first answer is signed like those from the package cache.
	 */
	if (rpmhdr_open_grow(pfd, stream_grow, st, &rh, err, sizeof(err)) == -1)
		log_info("repo: %s: %s", g->path, err);
	/* The file a .build-id link names, as the package cache shows it. */
	if (rh == NULL ||
	    rpmhdr_resolve(rh, st->member, file, sizeof(file)) == -1)
		snprintf(file, sizeof(file), "%s", st->member);
	n = fill_member_headers(rh, base != NULL ? base + 1 : g->path, file,
	    headers, sizeof(headers));
	rpmhdr_free(rh);
	if (n < 0 ||
	    flight_set_head(st->f, UINT64_MAX, clock_now(), headers, (size_t)n,
		g->path) == -1) {
		close(pfd);
		snprintf(st->why, sizeof(st->why), "out of memory");
		return;
	}
	snprintf(pkg, sizeof(pkg), "/proc/self/fd/%d", pfd);
	lim.min_free_pct = st->rs->d.cfg->min_free_disk;
	lim.grow = stream_grow;
	lim.grow_arg = st;
	st->rc = pkg_extract_watch(pkg, st->member, st->fd, &lim, &watch,
	    st->err, sizeof(st->err));
	close(pfd);
	st->end = FLIGHT_STREAMING; /* extracted: the verdict is due */
}

/* Worker: the package's verdict is in; the member's, then publishing. */
static void
stream_verdict_work(void *arg)
{
	struct stream *st = arg;
	struct growing *g = st->g;
	const char *base = strrchr(g->path, '/');

	st->end = FLIGHT_FAILED;
	if (g->state != 1) {
		snprintf(st->why, sizeof(st->why), "%s", g->why);
		return;
	}
	if (st->rc == ELF_NOTFOUND) {
		st->end = FLIGHT_NOTFOUND;
		snprintf(st->why, sizeof(st->why), "not in its package");
		return;
	}
	if (st->rc == -1) {
		snprintf(st->why, sizeof(st->why), "%.120s: %.120s",
		    base != NULL ? base + 1 : g->path, st->err);
		return;
	}
	if (fill_verify_publish(st->rs->d.bs, st->f, st->fd, &st->id,
		CACHE_DEBUGINFO, "", st->written, clock_now(), 0, 0, st->why,
		sizeof(st->why)) == 0)
		st->end = FLIGHT_READY;
}

/* The loop: the end of an extraction. */
static void
stream_end(void *arg)
{
	struct stream *st = arg;

	if (st->end != FLIGHT_READY)
		log_warnx("repo: %s: %s", st->member, st->why);
	flight_end(st->f, st->end, st->why);
	flight_detach(st->f);
	flight_unref(st->f);
	growing_unref(st->g);
	free(st);
}

/* The loop: the verdict of st's package is in (g->state): judge st. */
static void
stream_judge(struct stream *st)
{
	if (pool_submit(st->rs->d.pool, stream_verdict_work, st->rs->d.inbox,
		stream_end, st) == -1) {
		snprintf(st->why, sizeof(st->why), "server is shutting down");
		st->end = FLIGHT_FAILED;
		stream_end(st);
	}
}

/* The loop: g's package has its verdict: judge the extractions waiting. */
static void
stream_verdicts(struct growing *g)
{
	struct stream *st, *next;

	st = g->waiting;
	g->waiting = NULL;
	for (; st != NULL; st = next) {
		next = st->next;
		stream_judge(st);
	}
}

/*
 * The loop: the extraction is over.  It waits for its package's verdict
 * (dl_end gives it) unless that is in already, or the extraction failed.
 */
static void
stream_done(void *arg)
{
	struct stream *st = arg;
	int state;

	if (st->end != FLIGHT_STREAMING) {
		stream_end(st);
		return;
	}
	pthread_mutex_lock(&st->g->mu);
	state = st->g->state;
	pthread_mutex_unlock(&st->g->mu);
	if (state != 0) {
		stream_judge(st);
		return;
	}
	st->next = st->g->waiting;
	st->g->waiting = st;
}

struct flight *
repos_member(struct repos *rs, const struct repos_hit *hit,
    const struct buildid *id, int *created, int *package)
{
	struct flight *df, *f;
	struct stream *st;
	struct cache_key k;
	struct growing *g = NULL;
	struct dl *dl, *owner = NULL;
	char hex[BUILDID_HEX_MAX];

	*package = 0;
	if (rs->d.bs == NULL || id->len < 2 ||
	    (df = repos_join(rs, hit)) == NULL)
		return NULL;
	pthread_mutex_lock(&rs->mu);
	for (dl = rs->running; dl != NULL; dl = dl->rnext)
		if (cache_key_equal(&dl->hit.key, &hit->key) && dl->g != NULL) {
			owner = dl;
			g = dl->g;
			pthread_mutex_lock(&g->mu);
			g->refs++;
			pthread_mutex_unlock(&g->mu);
			break;
		}
	pthread_mutex_unlock(&rs->mu);
	if (g == NULL) {
		/* It ended just now: its end says what to do. */
		*package = 1;
		*created = 1;
		return df;
	}
	flight_unref(df); /* the download holds its own */
	cache_key_make(&k, id, CACHE_DEBUGINFO, "");
	if ((f = flight_join(rs->d.ft, &k, 0, created)) == NULL || !*created) {
		growing_unref(g);
		return f;
	}
	flight_ref(f); /* the extraction's */
	if ((st = calloc(1, sizeof(*st))) == NULL) {
		growing_unref(g);
		flight_end(f, FLIGHT_FAILED, "out of memory");
		flight_detach(f);
		flight_unref(f);
		return f;
	}
	st->rs = rs;
	st->f = f;
	st->g = g;
	st->id = *id;
	st->fd = -1;
	st->length = UINT64_MAX;
	buildid_format(id, hex);
	snprintf(st->member, sizeof(st->member),
	    "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
	snprintf(hex, sizeof(hex), "debuginfo from %.60s", hit->file);
	flight_set_label(f, hex);
	/*
	 * A download still queued gets its extractions when it starts: they
	 * would hold long workers, which running downloads need, while they
	 * wait.  (The download found above, if it is still there.)
	 */
	pthread_mutex_lock(&rs->mu);
	for (dl = rs->running; dl != NULL; dl = dl->rnext)
		if (dl == owner && dl->g == g) {
			if (!dl->started) {
				st->next = dl->pending;
				dl->pending = st;
				st = NULL;
			}
			break;
		}
	pthread_mutex_unlock(&rs->mu);
	if (st != NULL)
		stream_submit(st);
	return f;
}

/* End the extractions of list st (by ->next), never started, with why. */
static void
streams_fail(struct stream *st, const char *why)
{
	struct stream *next;

	for (; st != NULL; st = next) {
		next = st->next;
		snprintf(st->why, sizeof(st->why), "%s", why);
		st->end = FLIGHT_FAILED;
		stream_end(st);
	}
}

/* Start the extraction st on a long worker. */
static void
stream_submit(struct stream *st)
{
	if (pool_submit_long(st->rs->d.pool, stream_work, st->rs->d.inbox,
		stream_done, st) == -1) {
		snprintf(st->why, sizeof(st->why), "server is shutting down");
		st->end = FLIGHT_FAILED;
		stream_end(st);
	}
}

/* ---------------------------------------------------------------- loop */

static void
kick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct repos *rs = arg;
	struct stream *st = NULL, *next;
	struct dl *dl;
	size_t i;

	/* Oldest first, while fewer than repo-downloads run; dl_end kicks. */
	while (atomic_load(&rs->active) < rs->d.cfg->repo_downloads) {
		pthread_mutex_lock(&rs->mu);
		if ((dl = rs->queue) != NULL) {
			if ((rs->queue = dl->next) == NULL)
				rs->queue_tail = &rs->queue;
			dl->started = 1;
			st = dl->pending;
			dl->pending = NULL;
		}
		pthread_mutex_unlock(&rs->mu);
		if (dl == NULL)
			break;
		atomic_fetch_add(&rs->active, 1);
		for (; st != NULL; st = next) {
			next = st->next;
			stream_submit(st);
		}
		dl_start(dl);
	}
	if (atomic_exchange(&rs->refresh_asked, 0))
		for (i = 0; i < rs->n; i++)
			refresh_start(&rs->v[i]);
}

static void
timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct repos *rs = arg;
	size_t i;

	for (i = 0; i < rs->n; i++)
		refresh_start(&rs->v[i]);
}

void
repos_refresh(struct repos *rs)
{
	if (rs == NULL || rs->n == 0)
		return;
	atomic_store(&rs->refresh_asked, 1);
	event_active(rs->kick, EV_READ, 1);
}

size_t
repos_count(const struct repos *rs)
{
	return rs == NULL ? 0 : rs->n;
}

static void
metrics_cb(FILE *fp, void *arg)
{
	struct repos *rs = arg;
	struct index_reader *rd;
	struct repoidx_state st;
	static const struct {
		const char *name, *help;
		size_t off;
	} counters[] = {
		{ "dbgmirror_repo_refreshes_total",
		    "Refreshes of a repository's metadata that succeeded.",
		    offsetof(struct repo, refreshes) },
		{ "dbgmirror_repo_refresh_failures_total",
		    "Refreshes that failed (transfer, signature, checksum, "
		    "parse).",
		    offsetof(struct repo, refresh_failures) },
		{ "dbgmirror_repo_downloads_total",
		    "Packages downloaded, checked and indexed.",
		    offsetof(struct repo, downloads) },
		{ "dbgmirror_repo_download_failures_total",
		    "Package downloads that failed.",
		    offsetof(struct repo, download_failures) },
		{ "dbgmirror_repo_timeouts_total",
		    "Package downloads that failed for a deadline.",
		    offsetof(struct repo, timeouts) },
		{ "dbgmirror_repo_http_errors_total",
		    "Package downloads answered with an HTTP error.",
		    offsetof(struct repo, http_errors) },
		{ "dbgmirror_repo_checksum_errors_total",
		    "Packages whose size or SHA256 differed from the index.",
		    offsetof(struct repo, checksum_errors) },
	};
	struct dl *dl;
	size_t c, i, waiting = 0;

	pthread_mutex_lock(&rs->mu);
	for (dl = rs->queue; dl != NULL; dl = dl->next)
		waiting++;
	pthread_mutex_unlock(&rs->mu);
	fprintf(fp,
	    "# HELP dbgmirror_repo_downloads_running Package downloads "
	    "under way (at most repo-downloads).\n"
	    "# TYPE dbgmirror_repo_downloads_running gauge\n"
	    "dbgmirror_repo_downloads_running %u\n"
	    "# HELP dbgmirror_repo_downloads_waiting Package downloads "
	    "waiting for one of those to end.\n"
	    "# TYPE dbgmirror_repo_downloads_waiting gauge\n"
	    "dbgmirror_repo_downloads_waiting %zu\n",
	    atomic_load(&rs->active), waiting);
	for (c = 0; c < sizeof(counters) / sizeof(counters[0]); c++) {
		fprintf(fp, "# HELP %s %s\n# TYPE %s counter\n",
		    counters[c].name, counters[c].help, counters[c].name);
		for (i = 0; i < rs->n; i++)
			fprintf(fp, "%s{%s} %llu\n", counters[c].name,
			    rs->v[i].label,
			    (unsigned long long)atomic_load(
				(atomic_uint_fast64_t *)((char *)&rs->v[i] +
				    counters[c].off)));
	}
	fprintf(fp,
	    "# HELP dbgmirror_repo_breaker_open 1 while a "
	    "repository is skipped after failures.\n"
	    "# TYPE dbgmirror_repo_breaker_open gauge\n");
	for (i = 0; i < rs->n; i++)
		fprintf(fp, "dbgmirror_repo_breaker_open{%s} %d\n",
		    rs->v[i].label,
		    atomic_load(&rs->v[i].open_until) > clock_now());
	if ((rd = index_reader_new(rs->d.idx)) == NULL)
		return;
	fprintf(fp,
	    "# HELP dbgmirror_repo_ids Build-ids a repository's "
	    "index maps to packages.\n"
	    "# TYPE dbgmirror_repo_ids gauge\n");
	if (index_reader_begin(rd) == 0) {
		for (i = 0; i < rs->n; i++)
			if (repoidx_state(rd, rs->v[i].key, &st) == 0)
				fprintf(fp, "dbgmirror_repo_ids{%s} %llu\n",
				    rs->v[i].label, (unsigned long long)st.ids);
		index_reader_end(rd);
	}
	index_reader_free(rd);
}

struct repos *
repos_new(const struct fill_deps *d, char *err, size_t errlen)
{
	const struct config *cfg = d->cfg;
	struct repos *rs;
	char ident[CONFIG_REPO_TEXT + 64], hex[2 * REPOIDX_KEY_LEN + 1];
	const char *why;
	struct timeval tv;
	size_t i;

	if ((rs = calloc(1, sizeof(*rs))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	rs->d = *d;
	pthread_mutex_init(&rs->mu, NULL);
	rs->queue_tail = &rs->queue;
	if (cfg->repos.n == 0)
		return rs;
	if ((rs->v = calloc(cfg->repos.n, sizeof(*rs->v))) == NULL)
		goto nomem;
	snprintf(rs->pkgdir, sizeof(rs->pkgdir), "%s/repo-packages",
	    cfg->cache_dir);
	snprintf(rs->tmpdir, sizeof(rs->tmpdir), "%s/tmp", cfg->cache_dir);
	if (mkdirs(rs->pkgdir) == -1) {
		snprintf(err, errlen, "%s: %s", rs->pkgdir, strerror(errno));
		repos_free(rs);
		return NULL;
	}
	for (i = 0; i < cfg->repos.n; i++) {
		struct repo *r = &rs->v[i];

		if ((r->cr = malloc(sizeof(*r->cr))) == NULL)
			goto nomem;
		rs->n++;
		if (config_repo_parse(cfg->repos.v[i], r->cr, &why) == -1) {
			snprintf(err, errlen, "repo %s: %s", cfg->repos.v[i],
			    why);
			repos_free(rs);
			return NULL;
		}
		r->rs = rs;
		r->i = (unsigned)i;
		r->fd = -1;
		r->last_modified = -1;
		repos_ident(r->cr, ident, sizeof(ident));
		repoidx_key(ident, r->key);
		config_url_public(r->cr->url, ident, sizeof(ident));
		snprintf(r->label, sizeof(r->label),
		    "repo=\"%.1100s\",suite=\"%s\"", ident, r->cr->suite);
		buildid_hex(r->key, REPOIDX_KEY_LEN, hex);
		snprintf(r->dir, sizeof(r->dir), "%s/repos/%s", cfg->cache_dir,
		    hex);
		if (mkdirs(r->dir) == -1) {
			snprintf(err, errlen, "%s: %s", r->dir,
			    strerror(errno));
			repos_free(rs);
			return NULL;
		}
	}
	if ((rs->cv = repofetch_loop_new(d->base)) == NULL ||
	    (rs->kick = event_new(d->base, -1, 0, kick_cb, rs)) == NULL ||
	    (rs->timer = event_new(d->base, -1, EV_PERSIST, timer_cb, rs)) ==
		NULL)
		goto nomem;
	rs->fo = (struct repofetch_opts){
		.proxy = cfg->proxy,
		.ca_file = cfg->ca_file,
		.user_agent =
		    cfg->user_agent != NULL ? cfg->user_agent : "dbgmirror",
		.connect_timeout = cfg->upstream_connect_timeout,
		.stall_timeout = cfg->upstream_stall_timeout,
		.timeout = cfg->upstream_timeout,
		.max_size = META_MAX,
	};
	rs->dlo = rs->fo;
	rs->dlo.max_size = cfg->max_object_size;
	if (cfg->repo_refresh > 0) {
		tv.tv_sec = cfg->repo_refresh;
		tv.tv_usec = 0;
		event_add(rs->timer, &tv);
	}
	metrics_set_extra(metrics_cb, rs);
	/* The first refresh, once the loop runs. */
	repos_refresh(rs);
	return rs;
nomem:
	snprintf(err, errlen, "out of memory");
	repos_free(rs);
	return NULL;
}

void
repos_free(struct repos *rs)
{
	struct dl *dl;
	size_t i;

	if (rs == NULL)
		return;
	if (rs->n > 0)
		metrics_set_extra(NULL, NULL);
	while ((dl = rs->queue) != NULL) {
		rs->queue = dl->next;
		snprintf(dl->why, sizeof(dl->why), "server is shutting down");
		dl_end(dl);
	}
	for (i = 0; i < rs->n; i++) {
		repofetch_cancel(rs->v[i].rf);
		if (rs->v[i].fd != -1)
			close(rs->v[i].fd);
		free(rs->v[i].cr);
	}
	if (rs->cv != NULL)
		repofetch_loop_free(rs->cv);
	if (rs->kick != NULL)
		event_free(rs->kick);
	if (rs->timer != NULL)
		event_free(rs->timer);
	free(rs->v);
	pthread_mutex_destroy(&rs->mu);
	free(rs);
}
