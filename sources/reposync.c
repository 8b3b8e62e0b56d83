/*
 * sources/reposync.c: the refresh of remote repositories' metadata, on
 * the fills' loop, checked and parsed on workers (see sources/repo.h).
 *
 * A refresh of an apt repository is a chain of steps, each started by the
 * end of the one before, alternating between the loop (transfers) and a
 * worker (everything that reads a file or writes the index):
 *
 *   worker  note in the index that a refresh runs (a short job: dbgmirror
 *           stats says so; its end, however it ends, clears it)
 *   loop    GET dists/SUITE/InRelease (conditional on the last one's ETag
 *           and date: a 304 ends the refresh, nothing changed); on a 404,
 *           GET Release and Release.gpg
 *   worker  gpgv against the keyring; the signature must be good, valid
 *           and unexpired, as apt wants (its --status-fd lines say so), and
 *           Release not past its Valid-Until.  A Release whose digest is
 *           the one the current generation was made from ends the refresh
 *           here, unchanged: no index file is read (archives send no
 *           validators, so the GET above is rarely a 304).  Else the
 *           index files to fetch: each component's binary-ARCH/Packages
 *           and Contents-ARCH, in the compression comp_rank() prefers of
 *           those Release lists
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
 * usr/lib/.build-id/ links name executables (indexer/repometa.h).  Arch:
 * NAME.files (and NAME.files.sig with key=, checked before the database is
 * parsed).  A key file may be armored: it is dearmored into the
 * repository's directory first (repo_keyring).  Both end unchanged, like
 * apt's, when repomd.xml or the database is the one of the generation.
 *
 * Any failure ends the refresh with the reason logged (every transfer's
 * names its URL) and counted; the generation in the index stays what it
 * was (a repository never verified has none, so nothing of it is served),
 * and the refresh is tried again after repo-retry seconds, doubling after
 * each failure in a row up to repo-refresh, jittered by a tenth.
 *
 * Readiness: each repository's first refresh that ends, well or not,
 * counts towards the end of the repositories' start (repos_starting());
 * the last one, or repo-ready-timeout, ends it (repo_ready(),
 * sources/repoready.c).
 */
#include "sources/repo_int.h"

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

#include "cache/index.h"
#include "conf/config.h"
#include "daemon/clock.h"
#include "daemon/httpdate.h"
#include "daemon/log.h"
#include "daemon/pool.h"
#include "sources/scan.h"
#include "daemon/spawn.h"
#include "fetchers/repofetch.h"
#include "indexer/repometa.h"

static void refresh_next(struct repo *r);
static void refresh_end(struct repo *r, int ok, const char *why);
static void reposync_begin(struct repo *r);

/*
 * What a generation is made from is digested with this text first: a
 * version of dbgmirror that indexes the same metadata differently changes
 * it, and its first refresh then parses everything anew.
 */
#define INDEX_FORMAT "dbgmirror repository index 1"

/* ------------------------------------------------------------ helpers */

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

/* Any thread: what r's refresh does now, to which file, of what size. */
static void
prog_set(struct repo *r, const char *doing, const char *file, uint64_t size)
{
	pthread_mutex_lock(&r->rs->pmu);
	r->prog.doing = doing;
	snprintf(r->prog.file, sizeof(r->prog.file), "%s", file);
	r->prog.got = 0;
	r->prog.size = size;
	pthread_mutex_unlock(&r->rs->pmu);
}

/* The loop: tell the one who asked that r's refresh made a step. */
static void
prog_told(struct repo *r)
{
	if (r->rs->on_progress != NULL)
		r->rs->on_progress(r->rs->progress_arg);
}

/* Worker: the ids r's refresh has indexed so far. */
static void
prog_ids(struct repo *r, uint64_t ids)
{
	pthread_mutex_lock(&r->rs->pmu);
	r->prog.ids = ids;
	pthread_mutex_unlock(&r->rs->pmu);
}

/* The loop: bytes of the file being fetched so far. */
static void
meta_progress(void *arg, uint64_t bytes)
{
	struct repo *r = arg;

	pthread_mutex_lock(&r->rs->pmu);
	r->prog.got = bytes;
	pthread_mutex_unlock(&r->rs->pmu);
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

/*
 * Why gpgv refused a signature, from the first status line that refused
 * it (word; errsig_rc, ERRSIG's reason) and the key that signed (signer,
 * a fingerprint when a line gave one), naming the keyring checked against.
 */
static void
gpgv_why(const struct repo *r, const char *word, const char *errsig_rc,
    const char *signer, char *why, size_t whylen)
{
	const char *what = "cannot check a signature by";

	if (strcmp(word, "NO_PUBKEY") == 0 ||
	    (strcmp(word, "ERRSIG") == 0 && strcmp(errsig_rc, "9") == 0)) {
		snprintf(why, whylen,
		    "signature refused by gpgv: %s: signed by key %.64s, which "
		    "keyring %.200s does not hold",
		    word, signer, r->cr->keyring);
		return;
	}
	if (strcmp(word, "BADSIG") == 0)
		what = "a bad signature (text changed since) by";
	else if (strcmp(word, "EXPSIG") == 0)
		what = "an expired signature by";
	else if (strcmp(word, "EXPKEYSIG") == 0)
		what = "a signature by the expired";
	else if (strcmp(word, "REVKEYSIG") == 0)
		what = "a signature by the revoked";
	snprintf(why, whylen,
	    "signature refused by gpgv: %s: %s key %.64s (keyring %.200s)",
	    word, what, signer, r->cr->keyring);
}

/* Run gpgv; 0 when its status lines say a good, valid, unexpired signature. */
static int
run_gpgv(struct repo *r, char *const argv[], char *why, size_t whylen)
{
	static const char *const refusals[] = { "EXPSIG", "EXPKEYSIG",
		"REVKEYSIG", "BADSIG", "ERRSIG", "NO_PUBKEY" };
	char status[PATH_MAX], line[512], word[32] = "", rc_word[32] = "";
	char signer[128] = "", *tok[8], *p, *save;
	int fd, rc, st, good = 0, valid = 0;
	size_t i, nt;
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
	/*
	 * "[GNUPG:] WORD KEYID ...": the key that signed is the first
	 * argument of each line below; ERRSIG's sixth is why it failed (9:
	 * no such key) and its seventh, when given, the key's fingerprint.
	 */
	while (fgets(line, sizeof(line), fp) != NULL) {
		if (strncmp(line, "[GNUPG:] ", 9) != 0)
			continue;
		nt = 0;
		for (p = strtok_r(line + 9, " \n", &save); p != NULL && nt < 8;
		     p = strtok_r(NULL, " \n", &save))
			tok[nt++] = p;
		if (nt == 0)
			continue;
		if (strcmp(tok[0], "GOODSIG") == 0)
			good = 1;
		else if (strcmp(tok[0], "VALIDSIG") == 0)
			valid = 1;
		for (i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++)
			if (strcmp(tok[0], refusals[i]) == 0)
				break;
		if (i == sizeof(refusals) / sizeof(refusals[0]))
			continue;
		if (word[0] == '\0') {
			snprintf(word, sizeof(word), "%s", tok[0]);
			snprintf(signer, sizeof(signer), "%s",
			    nt > 1 ? tok[1] : "(unknown)");
			if (strcmp(tok[0], "ERRSIG") == 0 && nt > 6)
				snprintf(rc_word, sizeof(rc_word), "%s",
				    tok[6]);
		}
		if (strcmp(tok[0], "ERRSIG") == 0 && nt > 7 &&
		    strlen(tok[7]) >= 32)
			snprintf(signer, sizeof(signer), "%s", tok[7]);
	}
	fclose(fp);
	if (word[0] != '\0') {
		gpgv_why(r, word, rc_word, signer, why, whylen);
		return -1;
	}
	if (!good || !valid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		snprintf(why, whylen,
		    "no valid signature (gpgv exit %d, keyring %.200s)",
		    WIFEXITED(st) ? WEXITSTATUS(st) : -1, r->cr->keyring);
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

/* Worker: the index's state of r into r->st: 0, or -1. */
static int
read_state(struct repo *r)
{
	struct index_reader *rd;
	int rc = -1;

	if ((rd = index_reader_new(r->rs->d.idx)) != NULL &&
	    index_reader_begin(rd) == 0) {
		rc = repoidx_state(rd, r->key, &r->st);
		index_reader_end(rd);
	}
	index_reader_free(rd);
	return rc;
}

/* What a refresh of r verifies and digests: in words, for its log lines. */
static const char *
verified_name(const struct repo *r)
{
	switch (r->cr->type) {
	case CONFIG_REPO_RPM:
		return "repomd.xml";
	case CONFIG_REPO_ARCH:
		return "the .files database";
	default:
		return r->inline_sig ? "InRelease" : "Release";
	}
}

/*
 * Worker: digest what this refresh of r verified, the file at path (the
 * text Release signs, repomd.xml, the .files database), into r->digest,
 * and read the repository's state in the index into r->st.  1 when the
 * current generation was made from the same (the refresh ends there,
 * noted as unchanged), 0 when not, -1 with r->why.
 */
static int
refresh_unchanged(struct repo *r, const char *path)
{
	char text[sizeof(INDEX_FORMAT) + 65], hex[65], err[256];
	uint8_t sha[32];
	uint64_t size;

	if (repo_file_sha256(path, sha, &size) == -1) {
		snprintf(r->why, sizeof(r->why), "cannot read %s", path);
		return -1;
	}
	buildid_hex(sha, 32, hex);
	snprintf(text, sizeof(text), "%s %s", INDEX_FORMAT, hex);
	if (EVP_Digest(text, strlen(text), r->digest, NULL, EVP_sha256(),
		NULL) != 1) {
		snprintf(r->why, sizeof(r->why), "cannot digest %s", path);
		return -1;
	}
	if (read_state(r) == -1) {
		snprintf(r->why, sizeof(r->why),
		    "index: cannot read the repository's state");
		return -1;
	}
	if (r->st.gen == 0 ||
	    memcmp(r->st.digest, r->digest, sizeof(r->digest)) != 0)
		return 0;
	if (repoidx_note_unchanged(r->rs->d.idx, r->key, clock_now(), err,
		sizeof(err)) == -1)
		log_warnx("%s: %s", __func__, err);
	r->unchanged = 1;
	return 1;
}

/* What verify_work collects from Release. */
struct pick {
	struct repo *r;
	/* Per component and arch: the Packages and Contents chosen, by rank. */
	int rank[FILES_MAX];
};

/*
 * The rank of a compression: lower is preferred (smaller first, then
 * quicker to read); -1 when not one of ours.
 */
static int
comp_rank(const char *rest)
{
	static const char *const exts[] = { ".xz", ".zst", ".gz", ".bz2", "" };
	size_t i;

	for (i = 0; i < sizeof(exts) / sizeof(exts[0]); i++)
		if (strcmp(rest, exts[i]) == 0)
			return (int)i;
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
	switch (refresh_unchanged(r, in)) {
	case 1:
		r->ok = 1;
		return;
	case -1:
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

/*
 * Worker: Release lists no Packages for slot (component and architecture)
 * of r: nothing of it is indexed, which the log says (a suite with nothing
 * indexable is still refreshed, with no ids).
 */
static void
missing_packages(const struct repo *r, size_t slot)
{
	const struct config_repo *cr = r->cr;

	if (slot >= cr->ncomponents * cr->narchs)
		return;
	log_warnx("repo %s: Release lists no %s/binary-%s/Packages: nothing "
		  "of it indexed",
	    cr->name, cr->components[slot / cr->narchs],
	    cr->archs[slot % cr->narchs]);
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
	/* A snapshot's is long past: check-valid-until=no, as apt has it. */
	if (valid_until != 0 && valid_until < clock_now() &&
	    !r->cr->ignore_valid_until) {
		snprintf(r->why, sizeof(r->why),
		    "Release is past its Valid-Until");
		return;
	}
	switch (refresh_unchanged(r, out)) {
	case 1:
		r->ok = 1;
		return;
	case -1:
		return;
	}
	/* Packages before Contents: Contents names packages they list. */
	for (i = 0; i < FILES_MAX; i += 2)
		if (pk.rank[i] != -1)
			files[n++] = r->files[i];
		else
			missing_packages(r, i / 2);
	for (i = 1; i < FILES_MAX; i += 2)
		if (pk.rank[i] != -1)
			files[n++] = r->files[i];
	memcpy(r->files, files, n * sizeof(files[0]));
	r->nfiles = n;
	mark_kept(r);
	r->ok = 1;
}

static void
verify_done(void *arg)
{
	struct repo *r = arg;

	if (!r->ok || r->unchanged) {
		refresh_end(r, r->ok, r->why);
		return;
	}
	r->step = R_FILES;
	/* An Arch repository's one index file is the database checked. */
	r->cur = r->cr->type == CONFIG_REPO_ARCH ? 1 : 0;
	refresh_next(r);
}

/* What build_work records while parsing. */
struct build {
	struct repo *r;
	struct repoidx_writer *w;
	const char *arch;
	char name[REPOIDX_NAME_MAX + 1];
	uint64_t ids;
};

/* One id more recorded by b: now and then, its progress. */
static void
build_counted(struct build *b)
{
	if (++b->ids % 4096 == 0)
		prog_ids(b->r, repoidx_writer_ids(b->w));
}

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
			build_counted(b);
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
				build_counted(b);
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
	build_counted(b);
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

	build_counted(b);
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
	if (r->cr->type == CONFIG_REPO_ARCH) {
		/* Its one file is the database: nothing lists its checksum. */
		snprintf(path, sizeof(path), "%s/index.0", r->dir);
		switch (refresh_unchanged(r, path)) {
		case 1:
			unlink(path);
			r->ok = 1;
			return;
		case -1:
			return;
		}
	}
	for (i = 0; i < r->nfiles; i++) {
		if (r->cr->type == CONFIG_REPO_ARCH)
			break;
		ifile_path(r, i, path, sizeof(path));
		prog_set(r, "checking", r->files[i].name, r->files[i].size);
		/* repomd.xml may leave the size out: 0. */
		if (repo_file_sha256(path, sha, &size) == -1 ||
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
	b.r = r;
	if ((b.w = repoidx_writer_new(r->rs->d.idx, r->key, err,
		 sizeof(err))) == NULL) {
		snprintf(r->why, sizeof(r->why), "index: %s", err);
		return;
	}
	for (i = 0; i < r->nfiles; i++) {
		ifile_path(r, i, path, sizeof(path));
		prog_set(r, "indexing", r->files[i].name, r->files[i].size);
		if (build_file(r, i, path, &b, err, sizeof(err)) == -1) {
			snprintf(r->why, sizeof(r->why), "%s: %s",
			    r->files[i].name, err);
			repoidx_writer_abort(b.w);
			return;
		}
	}
	if (repoidx_writer_commit(b.w, clock_now(), r->digest, err,
		sizeof(err)) == -1) {
		snprintf(r->why, sizeof(r->why), "index: %s", err);
		return;
	}
	read_state(r);
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

/* Worker: a 304 for what the generation was made from: noted. */
static void
notmodified_work(void *arg)
{
	struct repo *r = arg;
	char err[256];

	if (repoidx_note_unchanged(r->rs->d.idx, r->key, clock_now(), err,
		sizeof(err)) == -1)
		log_warnx("%s: %s", __func__, err);
	read_state(r);
}

static void
notmodified_done(void *arg)
{
	refresh_end(arg, 1, NULL);
}

/* The loop: a metadata transfer ended. */
static void
meta_done(void *arg, const struct repofetch_result *res)
{
	struct repo *r = arg;
	char why[sizeof(r->url) + 300];

	r->rf = NULL;
	close(r->fd);
	r->fd = -1;
	if (res->error != NULL ||
	    (res->status != 200 && res->status != 304 && res->status != 404)) {
		if (res->error != NULL)
			snprintf(why, sizeof(why), "GET %s: %s", r->url,
			    res->error);
		else
			snprintf(why, sizeof(why), "GET %s: HTTP status %ld",
			    r->url, res->status);
		refresh_end(r, 0, why);
		return;
	}
	/* Arch's one index file is the database itself. */
	pthread_mutex_lock(&r->rs->pmu);
	r->prog.bytes += res->bytes;
	if (res->status == 200 &&
	    (r->step == R_FILES ||
		(r->step == R_INRELEASE && r->cr->type == CONFIG_REPO_ARCH)))
		r->prog.fetched++;
	pthread_mutex_unlock(&r->rs->pmu);
	switch (r->step) {
	case R_INRELEASE:
		if (res->status == 304) {
			/* Validators of the last verified one: unchanged. */
			r->unchanged = 1;
			if (pool_submit(r->rs->d.pool, notmodified_work,
				r->rs->d.inbox, notmodified_done, r) == -1)
				refresh_end(r, 0, "server is shutting down");
			return;
		}
		if (res->status == 404 && r->cr->type != CONFIG_REPO_DEB) {
			snprintf(why, sizeof(why), "GET %s: HTTP status 404%s",
			    r->url,
			    r->cr->type == CONFIG_REPO_RPM
				? ": no repodata/repomd.xml"
				: ": no NAME.files database");
			refresh_end(r, 0, why);
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
			snprintf(why, sizeof(why), "GET %s: HTTP status %ld%s",
			    r->url, res->status,
			    r->step == R_RELEASE ? " (and no InRelease: 404)"
				: r->step == R_RELEASE_GPG &&
				    r->cr->type == CONFIG_REPO_ARCH
				? ": the database's signature (key= is set)"
				: "");
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
	config_url_public(url, r->url, sizeof(r->url));
	prog_set(r, "fetching", name,
	    r->step == R_FILES ? r->files[r->cur].size : 0);
	prog_told(r);
	if ((r->fd = repo_tmp(r, tmp, path, sizeof(path))) == -1) {
		refresh_end(r, 0, "cannot write the repository's directory");
		return;
	}
	/*
	 * With an ETag, no date (RFC 9110 13.1.3): a date is to the second,
	 * and a file replaced within it would seem unchanged.
	 */
	r->rf = repofetch_get(r->rs->cv, &r->rs->fo, url, r->fd, etag,
	    etag != NULL && etag[0] != '\0' ? -1 : last_modified, meta_progress,
	    meta_done, r);
	if (r->rf == NULL) {
		close(r->fd);
		r->fd = -1;
		refresh_end(r, 0, "cannot start a transfer");
	}
}

/* Worker (short): the index says r's refresh runs, from now. */
static void
start_work(void *arg)
{
	struct repo *r = arg;
	char err[256];

	if (repoidx_note_start(r->rs->d.idx, r->key, clock_now(), err,
		sizeof(err)) == -1)
		log_warnx("%s: %s", __func__, err);
	/* What the index has of it, for the log lines of its end. */
	read_state(r);
}

static void
start_done(void *arg)
{
	struct repo *r = arg;

	r->step = R_INRELEASE;
	refresh_next(r);
}

/* The loop: the next step of r's refresh. */
static void
refresh_next(struct repo *r)
{
	char tmp[sizeof(r->files[0].name) + 8]; /* NAME.files.sig */

	const struct ifile *was;

	/* Out of the configuration: this refresh goes no further. */
	if (!atomic_load(&r->live)) {
		refresh_end(r, 0, "no longer configured");
		return;
	}
	switch (r->step) {
	case R_START:
		if (pool_submit(r->rs->d.pool, start_work, r->rs->d.inbox,
			start_done, r) == -1)
			refresh_end(r, 0, "server is shutting down");
		break;
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
		while (r->cur < r->nfiles && r->files[r->cur].kept) {
			pthread_mutex_lock(&r->rs->pmu);
			r->prog.kept++;
			pthread_mutex_unlock(&r->rs->pmu);
			r->cur++;
		}
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

/*
 * The loop: the wait before the next try of r, whose refresh failed:
 * repo-retry, doubled after each failure in a row up to repo-refresh (or
 * an hour when repo-refresh is 0), give or take a tenth.
 */
static unsigned
retry_delay(struct repo *r)
{
	const struct config *cfg = r->rs->d.cfg;
	unsigned cap = cfg->repo_refresh > 0 ? cfg->repo_refresh : 3600;
	unsigned d, span;

	if (cap < cfg->repo_retry)
		cap = cfg->repo_retry;
	d = r->backoff == 0        ? cfg->repo_retry
	    : r->backoff > cap / 2 ? cap
				   : 2 * r->backoff;
	r->backoff = d;
	span = d / 5;
	d = d - d / 10 +
	    (span > 0 ? (unsigned)rand_r(&r->rs->seed) % (span + 1) : 0);
	return d > 0 ? d : 1;
}

/* The loop: ends the repositories' start when r's first refresh was last. */
static void
first_ended(struct repo *r)
{
	struct repos *rs = r->rs;
	int all;

	if (r->first_ended)
		return;
	r->first_ended = 1;
	pthread_mutex_lock(&rs->pmu);
	r->prog.first_ended = 1;
	all = ++rs->first_ended >= repos_count(rs);
	pthread_mutex_unlock(&rs->pmu);
	if (all)
		repo_ready(rs, 0);
}

static void
refresh_end(struct repo *r, int ok, const char *why)
{
	double secs = (double)(clock_mono_ns() - r->t0) / 1e9;
	struct repos_progress p;
	struct timeval tv;
	char when[HTTPDATE_ISO_LEN], size[32];
	struct noted *n;
	unsigned delay;

	r->step = R_IDLE;
	pthread_mutex_lock(&r->rs->pmu);
	p = r->prog;
	r->prog.running = 0;
	r->prog.ok = ok;
	r->prog.doing = "";
	r->prog.file[0] = '\0';
	if (ok)
		r->prog.ids = r->st.ids;
	pthread_mutex_unlock(&r->rs->pmu);
	atomic_store(&r->last_end, clock_now());
	atomic_store(&r->state, ok ? REPOS_OK : REPOS_FAILED);
	if (ok) {
		atomic_fetch_add(&r->refreshes, 1);
		atomic_store(&r->last_refresh, clock_now());
		r->backoff = 0;
		event_del(r->retry);
		if (r->unchanged) {
			atomic_fetch_add(&r->refreshes_unchanged, 1);
			log_info("repo %s: refreshed: unchanged, %s as last "
				 "verified: nothing parsed, %llu ids in %llu "
				 "of %llu packages kept (%.2fs)",
			    r->cr->name, verified_name(r),
			    (unsigned long long)r->st.ids,
			    (unsigned long long)r->st.pkgs_with_ids,
			    (unsigned long long)r->st.pkgs, secs);
		} else
			log_info("repo %s: refreshed: %llu ids in %llu of %llu "
				 "packages; %u index files fetched, %u "
				 "kept; %s; %.2fs",
			    r->cr->name, (unsigned long long)r->st.ids,
			    (unsigned long long)r->st.pkgs_with_ids,
			    (unsigned long long)r->st.pkgs, p.fetched, p.kept,
			    repo_size_text(p.bytes, size, sizeof(size)), secs);
	} else if (!atomic_load(&r->live)) {
		log_info("repo %s: refresh stopped: %s", r->cr->name,
		    why != NULL ? why : "no longer configured");
		r->again = 0;
	} else {
		pthread_mutex_lock(&r->rs->mu);
		snprintf(r->last_why, sizeof(r->last_why), "%s",
		    why != NULL ? why : "?");
		pthread_mutex_unlock(&r->rs->mu);
		/* A later InRelease (and index files) whole again. */
		r->etag[0] = '\0';
		r->last_modified = -1;
		r->nlast = 0;
		atomic_fetch_add(&r->refresh_failures, 1);
		delay = retry_delay(r);
		httpdate_iso((time_t)(clock_now() + delay), when);
		log_warnx("repo %s: refresh failed, %s: %s; next try in %us, "
			  "at %s",
		    r->cr->name,
		    r->st.gen != 0 ? "its last generation kept"
				   : "repository refused",
		    why != NULL ? why : "?", delay, when);
		tv.tv_sec = delay;
		tv.tv_usec = 0;
		event_add(r->retry, &tv);
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
	/* Not refreshing for the requests the first refreshes' end wakes. */
	if (!r->again)
		atomic_fetch_sub(&r->rs->refreshing, 1);
	first_ended(r);
	if (r->again) {
		r->again = 0;
		reposync_begin(r);
		return;
	}
	prog_told(r);
}

/* The loop: r's refresh begins (none runs). */
static void
reposync_begin(struct repo *r)
{
	r->t0 = clock_mono_ns();
	r->unchanged = 0;
	atomic_store(&r->state, REPOS_REFRESHING);
	pthread_mutex_lock(&r->rs->pmu);
	r->prog.running = 1;
	r->prog.fetched = r->prog.kept = 0;
	r->prog.bytes = 0;
	pthread_mutex_unlock(&r->rs->pmu);
	r->step = R_START;
	refresh_next(r);
}

/* The loop: refresh r now, or right after the refresh that runs. */
void
reposync_start(struct repo *r)
{
	if (r->step != R_IDLE) {
		r->again = 1;
		return;
	}
	atomic_fetch_add(&r->rs->refreshing, 1);
	reposync_begin(r);
}

void
reposync_stop(struct repo *r)
{
	event_del(r->retry);
	r->again = 0;
	r->due = 0;
	if (r->rf == NULL)
		return; /* idle, or a worker's step: it ends when that does */
	repofetch_cancel(r->rf);
	r->rf = NULL;
	close(r->fd);
	r->fd = -1;
	refresh_end(r, 0, "no longer configured");
}

void
reposync_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	reposync_start(arg);
}
