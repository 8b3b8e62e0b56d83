/*
 * cli/cli.c: dbgmirror, the admin command line.
 *
 * Reads the daemon's index directly (LMDB allows readers in other processes
 * while the daemon writes), so it works whether or not dbgmirrord runs:
 * lookup, stats, and misses (the missing-id report of daemon/misses.h).
 * purge writes it too: LMDB orders its write transactions with the
 * daemon's.  The cache directory comes from the same configuration as the
 * daemon's.  prefetch is a client of the running daemon instead
 * (cli/prefetch.c).
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "cache/blobstore.h"
#include "cache/files.h"
#include "cache/index.h"
#include "cache/negative.h"
#include "cache/pkgindex.h"
#include "cache/repoidx.h"
#include "conf/config.h"
#include "autoconf.h"
#include "daemon/access.h"
#include "daemon/clock.h"
#include "daemon/httpdate.h"
#include "daemon/log.h"
#include "daemon/misses.h"
#include "cli/prefetch.h"
#include "sources/repo.h"
#include "sources/scan.h"
#include "sources/objstore.h"
#include "fetchers/put.h"
#include "indexer/buildid.h"
#include "indexer/elf.h"
#include "indexer/file.h"

/* Repositories dbgmirror lookup and stats read at most. */
#define CLI_REPOS_MAX 64

static void
usage(FILE *fp)
{
	fprintf(fp,
	    "usage: dbgmirror [--config FILE] [--cache-dir DIR] COMMAND\n"
	    "\n"
	    "  lookup ID   where build-id ID (or that of an ELF file) is "
	    "known:\n"
	    "              local files, package members, cached answers, "
	    "misses\n"
	    "  stats       index entries, bytes, and the last scan\n"
	    "  purge ID    drop the cached files and misses of build-id ID\n"
	    "              (and its objects in the store, unless "
	    "--keep-store)\n"
	    "  purge --negative        drop every remembered miss\n"
	    "  purge --upstream URL    drop the files fetched from URL\n"
	    "  misses [--top N] [--since DURATION] [--json]\n"
	    "              the build-ids asked for and not found, the most "
	    "missed\n"
	    "              first (those missed within DURATION, e.g. 1d)\n"
	    "  prefetch [--jobs N] [--url URL] [--executable] "
	    "[ID|FILE|DIR|-]...\n"
	    "              have the daemon fetch the debuginfo of build-ids,\n"
	    "              of ELF files and the libraries they load, of the\n"
	    "              objects a core file had mapped (standard input\n"
	    "              when no operand is given)\n"
	    "  token NAME [--scopes LIST]\n"
	    "              a new bearer token and its token-file line "
	    "(LIST:\n"
	    "              read,metadata,metrics,status,admin,upload or "
	    "all)\n"
	    "  upload [--url URL] [--token-file FILE] FILE...\n"
	    "              PUT each ELF file (its build-id read from it) as\n"
	    "              debuginfo or executable; the token from FILE or\n"
	    "              DBGMIRROR_TOKEN\n"
	    "\n"
	    "Exit status: 0 done; 1 not found or error; 2 bad usage.\n");
}

struct lookup {
	struct index_reader *rd;
	const char *kind;
	int found;
};

/* What has become of the local file rec was made from, as a note. */
static const char *
file_note(const struct index_file *rec, const char *what)
{
	static char note[64];
	struct stat st;

	note[0] = '\0';
	if (stat(rec->path, &st) == -1)
		snprintf(note, sizeof(note), "  (%s is gone)", what);
	else if (!index_file_unchanged(rec, &st))
		snprintf(note, sizeof(note), "  (%s changed since indexed)",
		    what);
	return note;
}

static int
lookup_cb(const struct index_file *f, void *arg)
{
	struct lookup *lk = arg;
	char when[HTTPDATE_ISO_LEN];

	httpdate_iso((time_t)f->mtime_sec, when);
	printf("%-10s  %s  %" PRIu64 " bytes  %s%s\n", lk->kind, f->path,
	    f->size, when, file_note(f, "file"));
	lk->found++;
	return 0;
}

static int
lookup_member_cb(const struct pkg_rec *m, void *arg)
{
	struct lookup *lk = arg;
	struct index_file pkg;
	const char *note = "";

	if (pkgidx_get_package(lk->rd, m->package, &pkg) == 0)
		note = file_note(&pkg, "package");
	printf("%-10s  %s  %s  %" PRIu64 " bytes%s\n", lk->kind, m->package,
	    m->member, m->size, note);
	lk->found++;
	return 0;
}

/*
 * The build-id an operand names: hex digits, or the path of an ELF file
 * whose build-id is read.  0, or 2 (bad usage) having said why.
 */
static int
operand_id(const char *arg, struct buildid *id)
{
	struct elf_info info;
	struct stat st;
	const char *why;
	char err[256];
	int fd, rc;

	if (buildid_parse(id, arg, strlen(arg), &why) == 0)
		return 0;
	if ((fd = file_open_regular(arg, &st)) == -1) {
		fprintf(stderr,
		    "dbgmirror: %s: not a build-id (%s) nor a readable file\n",
		    arg, why);
		return 2;
	}
	rc = elf_read_info(fd, &info, err, sizeof(err));
	close(fd);
	if (rc != 0 || info.id.len == 0) {
		fprintf(stderr, "dbgmirror: %s: %s\n", arg,
		    rc == ELF_NOTFOUND ? "neither a build-id nor an ELF file"
			: rc != 0      ? err
				       : "an ELF file without a GNU build-id");
		return 2;
	}
	*id = info.id;
	return 0;
}

/*
 * The cache's answers and remembered misses for the whole files of id: how
 * many, the answers alone in *answers.
 */
static int
lookup_cache(struct index_reader *rd, const struct buildid *id, int *answers)
{
	static const enum cache_kind kinds[] = { CACHE_DEBUGINFO,
		CACHE_EXECUTABLE };
	struct blob_info bi;
	struct neg_entry ne;
	struct cache_key k;
	char when[HTTPDATE_ISO_LEN];
	int64_t now = clock_now();
	size_t i;
	int found = 0;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		cache_key_make(&k, id, kinds[i], "");
		if (blob_lookup(rd, &k, &bi) == 0) {
			httpdate_iso((time_t)bi.stored, when);
			printf("%-10s  cached  %" PRIu64
			       " bytes  from %s  since "
			       "%s\n",
			    cache_kind_name(kinds[i]), bi.size,
			    bi.source[0] != '\0' ? bi.source : "(unknown)",
			    when);
			found++;
			(*answers)++;
		}
		if (neg_get(rd, &k, now, &ne) == 0) {
			printf("%-10s  %s, remembered for %llds more\n",
			    cache_kind_name(kinds[i]),
			    ne.kind == NEG_NOTFOUND
				? "not found anywhere (negative entry)"
				: "the upstreams failed (error entry)",
			    (long long)(ne.expires - now));
			found++;
		}
	}
	return found;
}

/* A kernel image or module by its file name: vmlinux*, *.ko, *.ko.*. */
static int
kernel_file(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base != NULL ? base + 1 : path;
	return strncmp(base, "vmlinux", 7) == 0 ||
	    strstr(base, ".ko.") != NULL ||
	    (strlen(base) > 3 && strcmp(base + strlen(base) - 3, ".ko") == 0);
}

/*
 * The configured repositories that map id to a package: how many.  With
 * explain, when none does, why each one cannot serve it (kernel: the
 * operand is a kernel's file).
 */
static int
lookup_repos(struct index_reader *rd, const struct config *cfg,
    const struct buildid *id, int explain, int kernel)
{
	static char names[CLI_REPOS_MAX][1100];
	static uint8_t keys[CLI_REPOS_MAX][REPOIDX_KEY_LEN];

	static const struct {
		enum repoidx_kind kind;
		const char *as;
	} kinds[] = {
		{ REPOIDX_DEBUGINFO, "debuginfo" },
		{ REPOIDX_EXECUTABLE, "executable" },
		{ REPOIDX_EXECUTABLE_WEAK, "executable, by a debug link" },
	};
	struct repoidx_state st;
	struct repoidx_pkg p;
	char sha[65], why[512];
	size_t n, i, k;
	int found = 0;

	n = repos_config_keys(cfg, names, keys, CLI_REPOS_MAX);
	for (i = 0; i < n; i++) {
		for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
			if (repoidx_find(rd, keys[i], id, kinds[k].kind, &p) !=
			    0)
				continue;
			buildid_hex(p.sha256, 32, sha);
			printf("repo %s: package %.*s (%" PRIu64
			       " bytes, sha256 %s) as %s\n",
			    names[i], (int)p.file_len, p.file, p.size, sha,
			    kinds[k].as);
			found++;
		}
	}
	for (i = 0; i < n && found == 0 && explain; i++) {
		if (repoidx_state(rd, keys[i], &st) == -1)
			continue;
		repos_why_absent(&st, kernel, why, sizeof(why));
		printf("repo %s: %s\n", names[i], why);
	}
	return found;
}

static int
cmd_lookup(struct index_reader *rd, const char *arg, const struct config *cfg)
{
	static const enum elf_kind kinds[] = { ELF_KIND_DEBUGINFO,
		ELF_KIND_EXECUTABLE };
	struct buildid id;
	struct lookup lk = { rd, NULL, 0 };
	char canon[BUILDID_HEX_MAX];
	size_t i;
	int rc, local, answers = 0;

	if ((rc = operand_id(arg, &id)) != 0)
		return rc;
	buildid_format(&id, canon);
	if (strcmp(canon, arg) != 0)
		printf("build-id %s\n", canon);
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		lk.kind = elf_kind_name(kinds[i]);
		if (index_find(rd, &id, kinds[i], lookup_cb, &lk) == -1 ||
		    pkgidx_find(rd, &id, kinds[i], lookup_member_cb, &lk) == -1)
			goto fail;
	}
	/* Why the repositories lack it, when nothing here serves it. */
	local = lk.found;
	lk.found += lookup_cache(rd, &id, &answers);
	lk.found +=
	    lookup_repos(rd, cfg, &id, local + answers == 0, kernel_file(arg));
	if (lk.found == 0) {
		printf("%s: unknown here: no local file, package member, "
		       "repository package, cached answer or remembered "
		       "miss\n",
		    canon);
		return 1;
	}
	return 0;
fail:
	fprintf(stderr, "dbgmirror: index read failed\n");
	return 1;
}

/* How a scan that ended did, in words. */
static const char *
outcome_name(uint32_t outcome)
{
	switch (outcome) {
	case INDEX_SCAN_DONE:
		return "complete";
	case INDEX_SCAN_CANCELLED:
		return "cancelled: the daemon stopped";
	case INDEX_SCAN_FAILED:
		return "failed: the index could not be written";
	}
	return "unknown";
}

/* What the scan counted so far, or in all. */
static void
print_scan_counts(const struct index_scan *sc)
{
	printf("%" PRIu64 " files seen, %" PRIu64 " new or changed, %" PRIu64
	       " read, %" PRIu64 " not indexable; %" PRIu64
	       " packages seen, %" PRIu64 " new or changed, %" PRIu64
	       " read (%" PRIu64 " servable members)",
	    sc->seen, sc->queued, sc->read, sc->failed, sc->pkg_seen,
	    sc->pkg_queued, sc->packages, sc->members);
}

/*
 * The scan's record: the one running with its progress as of its last
 * committed batch, and the last one that ended.
 */
static void
print_scan(const struct index_scan *sc)
{
	char start[HTTPDATE_ISO_LEN], end[HTTPDATE_ISO_LEN];

	if (sc->started == 0) {
		printf("last scan:   never\n");
		return;
	}
	httpdate_iso((time_t)sc->started, start);
	if (sc->finished == 0) {
		printf("scan:        running since %s: ", start);
		print_scan_counts(sc);
		printf(" so far\n");
		if (sc->ended == 0) {
			printf("last scan:   none ended yet\n");
			return;
		}
		httpdate_iso((time_t)sc->ended, end);
		printf("last scan:   ended %s after %.1fs, %s\n", end,
		    (double)sc->ended_ms / 1000, outcome_name(sc->outcome));
		return;
	}
	httpdate_iso((time_t)sc->finished, end);
	printf("last scan:   %s to %s (%.1fs, %s): ", start, end,
	    (double)sc->ended_ms / 1000, outcome_name(sc->outcome));
	print_scan_counts(sc);
	printf(", %" PRIu64 " records of vanished ones removed\n", sc->removed);
}

/*
 * Whether a daemon runs on the cache directory: it holds the lock of
 * daemon/main.c's lock_cache_dir() for its life.
 */
static int
daemon_running(const struct config *cfg)
{
	char path[PATH_MAX];
	int fd, held;

	snprintf(path, sizeof(path), "%s/lock", cfg->cache_dir);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return 0;
	held = flock(fd, LOCK_SH | LOCK_NB) == -1 && errno == EWOULDBLOCK;
	close(fd);
	return held;
}

/* The refresh that began at t: running, or cut short by a stop. */
static void
print_running(const struct config *cfg, int64_t t, const char *what)
{
	char when[HTTPDATE_ISO_LEN];

	httpdate_iso((time_t)t, when);
	if (daemon_running(cfg))
		printf("%s running since %s", what, when);
	else
		printf("%s began %s and did not end (no daemon runs)", what,
		    when);
}

/* Each configured repository: ids, packages, last refresh, errors. */
static void
print_repos(struct index_reader *rd, const struct config *cfg)
{
	static char names[CLI_REPOS_MAX][1100];
	static uint8_t keys[CLI_REPOS_MAX][REPOIDX_KEY_LEN];
	struct repoidx_state st;
	struct repoidx_error er;
	char when[HTTPDATE_ISO_LEN];
	size_t n, i;

	n = repos_config_keys(cfg, names, keys, CLI_REPOS_MAX);
	for (i = 0; i < n; i++) {
		if (repoidx_state(rd, keys[i], &st) == -1 ||
		    repoidx_get_error(rd, keys[i], &er) == -1)
			continue;
		printf("repo:        %s: ", names[i]);
		if (st.gen == 0 && st.running != 0) {
			print_running(cfg, st.running, "first refresh");
		} else if (st.gen == 0) {
			printf("never refreshed");
		} else {
			httpdate_iso((time_t)st.refreshed, when);
			/* A generation written before they were counted. */
			if (st.pkgs_with_ids == 0 && st.ids > 0)
				printf("%" PRIu64 " ids in %" PRIu64
				       " packages, refreshed %s",
				    st.ids, st.pkgs, when);
			else
				printf("%" PRIu64 " ids in %" PRIu64
				       " of %" PRIu64 " packages, refreshed %s",
				    st.ids, st.pkgs_with_ids, st.pkgs, when);
			if (st.checked != 0) {
				httpdate_iso((time_t)st.checked, when);
				printf(", found unchanged %s", when);
			}
			if (st.running != 0) {
				printf("; ");
				print_running(cfg, st.running, "a refresh");
			}
		}
		if (er.when != 0) {
			httpdate_iso((time_t)er.when, when);
			printf("; %" PRIu64
			       " refreshes failed, the last at %s: "
			       "%s",
			    er.count, when, er.why);
		}
		printf("\n");
	}
}

static int
cmd_stats(struct index_reader *rd, const char *path, const struct config *cfg)
{
	struct index_stats st;
	struct blob_stats bst;
	uint64_t pkgs, members, downloaded = 0;
	char repodir[PATH_MAX];

	/* What repositories downloaded is indexed beside scan-packages. */
	snprintf(repodir, sizeof(repodir), "%s/repo-packages", cfg->cache_dir);
	if (index_stats(rd, &st) == -1 ||
	    pkgidx_count(rd, &pkgs, &members) == -1 ||
	    pkgidx_count_under(rd, repodir, &downloaded) == -1 ||
	    blob_stats(rd, NULL, &bst) == -1) {
		fprintf(stderr, "dbgmirror: index read failed\n");
		return 1;
	}
	/* Each line says what its numbers count. */
	printf("index:       %s\n", path);
	printf("files:       %" PRIu64 " local files indexed (scan-dir)\n",
	    st.files);
	printf("debuginfo:   %" PRIu64 " build-ids with a local debuginfo\n",
	    st.debuginfo);
	printf("executable:  %" PRIu64 " build-ids with a local executable\n",
	    st.executable);
	printf("bytes:       %" PRIu64 " in those local files\n", st.bytes);
	printf("packages:    %" PRIu64 " indexed (scan-packages), %" PRIu64
	       " downloaded from repositories (repo-cache-size); %" PRIu64
	       " servable members in both (one per ELF member and kind)\n",
	    pkgs - downloaded, downloaded, members);
	printf("cache:       %" PRIu64 " answers kept, %" PRIu64 " bytes",
	    bst.entries, bst.bytes);
	if (cfg->cache_size > 0)
		printf(" of %" PRIu64 " (cache-size), %" PRIu64 "%%\n",
		    cfg->cache_size, bst.bytes * 100 / cfg->cache_size);
	else
		printf(" (no cache-size cap)\n");
	printf("uploads:     %" PRIu64
	       " bytes, kept apart (upload-size %" PRIu64 ")\n",
	    bst.upload_bytes, cfg->upload_size);
	printf("misses:      %" PRIu64 " negative and error entries "
	       "(negative-max %u)\n",
	    bst.negatives, cfg->negative_max);
	print_scan(&st.scan);
	print_repos(rd, cfg);
	return 0;
}

/*
 * The options of purge, misses and prefetch, which are their own, not
 * configuration.
 */
struct cmd_opts {
	int negative; /* purge --negative */
	int keep_store; /* purge --keep-store */
	const char *upstream; /* purge --upstream URL */
	const char *top; /* misses --top N */
	const char *since; /* misses --since DURATION */
	int json; /* misses --json */
	const char *jobs; /* prefetch --jobs N */
	const char *url; /* prefetch --url URL */
	int executable; /* prefetch --executable */
	const char *scopes; /* token --scopes LIST */
	const char *token_file; /* upload --token-file FILE */
	int purge, misses, prefetch, token, upload; /* options of each */
	int bad; /* repeated, or without its value */
};

/*
 * An option with a value, "--name VALUE" or "--name=VALUE", at argv[*i]:
 * 1 (and *val; *i moved past it) when it is that option, else 0.
 */
static int
value_opt(int argc, char **argv, int *i, const char *name, const char **val,
    int *bad)
{
	size_t n = strlen(name);

	if (strncmp(argv[*i], name, n) != 0 ||
	    (argv[*i][n] != '\0' && argv[*i][n] != '='))
		return 0;
	*bad |= *val != NULL;
	if (argv[*i][n] == '=')
		*val = argv[*i] + n + 1;
	else if (*i + 1 < argc)
		*val = argv[++*i];
	else
		*bad = 1;
	return 1;
}

/*
 * Copy argv into out (argc + 1 entries), leaving out the command's options
 * when they follow the word purge, misses or prefetch.  That word is found by a
 * first parse: the operands it returns point into argv.  Returns the new
 * argc.
 */
static int
cmd_split(int argc, char **argv, char **out, struct cmd_opts *co)
{
	struct config_args probe;
	struct config_diag diag = { 0 };
	int i, n = 0, cmd = argc;

	memset(co, 0, sizeof(*co));
	config_parse_args(&probe, argc, argv, &diag);
	if (probe.nrest > 0 &&
	    (strcmp(probe.rest[0], "purge") == 0 ||
		strcmp(probe.rest[0], "misses") == 0 ||
		strcmp(probe.rest[0], "prefetch") == 0 ||
		strcmp(probe.rest[0], "token") == 0 ||
		strcmp(probe.rest[0], "upload") == 0))
		for (cmd = 1; cmd < argc && argv[cmd] != probe.rest[0]; cmd++)
			;
	config_args_free(&probe);
	config_diag_free(&diag);
	for (i = 0; i < argc; i++) {
		if (i <= cmd) {
			out[n++] = argv[i];
		} else if (strcmp(argv[i], "--") == 0) {
			/* Operands from here on. */
			cmd = argc;
			out[n++] = argv[i];
		} else if (strcmp(argv[i], "--negative") == 0) {
			co->bad |= co->negative++;
			co->purge = 1;
		} else if (strcmp(argv[i], "--keep-store") == 0) {
			co->bad |= co->keep_store++;
			co->purge = 1;
		} else if (value_opt(argc, argv, &i, "--upstream",
			       &co->upstream, &co->bad)) {
			co->purge = 1;
		} else if (strcmp(argv[i], "--json") == 0) {
			co->bad |= co->json++;
			co->misses = 1;
		} else if (value_opt(argc, argv, &i, "--top", &co->top,
			       &co->bad) ||
		    value_opt(argc, argv, &i, "--since", &co->since,
			&co->bad)) {
			co->misses = 1;
		} else if (strcmp(argv[i], "--executable") == 0) {
			co->bad |= co->executable++;
			co->prefetch = 1;
		} else if (value_opt(argc, argv, &i, "--jobs", &co->jobs,
			       &co->bad)) {
			co->prefetch = 1;
		} else if (value_opt(argc, argv, &i, "--url", &co->url,
			       &co->bad)) {
			/* prefetch's and upload's */
		} else if (value_opt(argc, argv, &i, "--scopes", &co->scopes,
			       &co->bad)) {
			co->token = 1;
		} else if (value_opt(argc, argv, &i, "--token-file",
			       &co->token_file, &co->bad)) {
			co->upload = 1;
		} else {
			out[n++] = argv[i];
		}
	}
	out[n] = NULL;
	return n;
}

static int
cmd_purge(struct index *idx, const struct config *cfg, const char *hex,
    const struct cmd_opts *po)
{
	static const struct blob_limits nolimits = { 0, 0, 0, 0, 0 };
	const char *cache_dir = cfg->cache_dir;
	uint64_t objects = 0;
	struct blobstore *bs;
	struct buildid id;
	const char *why;
	char url[4096], err[512];
	uint64_t blobs = 0, negs = 0;
	int rc = 0;

	if (hex != NULL && buildid_parse(&id, hex, strlen(hex), &why) == -1) {
		fprintf(stderr, "dbgmirror: %s: %s\n", hex, why);
		return 2;
	}
	if (po->upstream != NULL) {
		config_url_public(po->upstream, url, sizeof(url));
		if (url[0] == '\0' || strlen(po->upstream) >= sizeof(url)) {
			fprintf(stderr, "dbgmirror: --upstream: bad URL\n");
			return 2;
		}
	}
	if ((bs = blobstore_new(idx, cache_dir, &nolimits, err, sizeof(err))) ==
	    NULL) {
		fprintf(stderr, "dbgmirror: %s\n", err);
		return 1;
	}
	if (hex != NULL)
		rc = blob_purge(bs, &id, NULL, clock_stamp_ns(), &blobs, err,
		    sizeof(err));
	else if (po->upstream != NULL)
		rc = blob_purge(bs, NULL, url, clock_stamp_ns(), &blobs, err,
		    sizeof(err));
	if (rc == 0 && (hex != NULL || po->negative))
		rc = neg_purge(idx, hex != NULL ? &id : NULL, &negs, err,
		    sizeof(err));
	blobstore_free(bs);
	/* The fleet's copies too, unless asked to keep them. */
	if (rc == 0 && hex != NULL && cfg->store != NULL && !po->keep_store)
		rc = objstore_purge(cfg, &id, &objects, err, sizeof(err));
	if (rc == -1) {
		fprintf(stderr, "dbgmirror: purge: %s\n", err);
		return 1;
	}
	printf("purged %" PRIu64 " entries, %" PRIu64 " negative", blobs, negs);
	if (hex != NULL && cfg->store != NULL && !po->keep_store)
		printf(", %" PRIu64 " store objects", objects);
	printf("\n");
	return 0;
}

/* misses: the report of the ids asked for and not found. */
static int
cmd_misses(struct index_reader *rd, const struct cmd_opts *co)
{
	struct misses_query q = { 0, 0, co->json };
	const char *why;
	char *text;
	size_t len;

	if (co->top != NULL && misses_query_top(&q, co->top, &why) == -1) {
		fprintf(stderr, "dbgmirror: --top %s: %s\n", co->top, why);
		return 2;
	}
	if (co->since != NULL &&
	    misses_query_since(&q, co->since, clock_now(), &why) == -1) {
		fprintf(stderr, "dbgmirror: --since %s: %s\n", co->since, why);
		return 2;
	}
	if ((text = misses_report(rd, &q, &len)) == NULL) {
		fprintf(stderr, "dbgmirror: index read failed\n");
		return 1;
	}
	fwrite(text, 1, len, stdout);
	free(text);
	return 0;
}

/*
 * The daemon's URL for prefetch: --url, else the first listen address of
 * the configuration (a wildcard address meaning this host's loopback).
 */
static int
daemon_url(const struct config *cfg, const char *url, char *out, size_t len)
{
	const char *text, *colon, *scheme;

	if (url != NULL) {
		if (strncmp(url, "http://", 7) != 0 &&
		    strncmp(url, "https://", 8) != 0)
			return -1;
		snprintf(out, len, "%s", url);
	} else {
		if (cfg->nlisten == 0)
			return -1;
		text = cfg->listen[0].text;
		if ((colon = strrchr(text, ':')) == NULL)
			return -1;
		scheme = cfg->listen[0].tls ? "https" : "http";
		if (strncmp(text, "0.0.0.0:", 8) == 0)
			snprintf(out, len, "%s://127.0.0.1%s", scheme, colon);
		else if (strncmp(text, "[::]:", 5) == 0)
			snprintf(out, len, "%s://[::1]%s", scheme, colon);
		else
			snprintf(out, len, "%s://%s", scheme, text);
	}
	while (strlen(out) > 0 && out[strlen(out) - 1] == '/')
		out[strlen(out) - 1] = '\0';
	return 0;
}

/*
 * dbgmirror token NAME [--scopes LIST]: a new random token, and the line
 * of token-file that allows it (its SHA-256, the scopes, the name).  The
 * token is shown once: only its hash is kept.
 */
static int
cmd_token(const char *name, const char *scopes)
{
	unsigned char raw[32];
	char token[5 + 2 * sizeof(raw) + 1], hash[65];
	size_t i;

	if (scopes == NULL)
		scopes = "read";
	if (strspn(scopes, "abcdefghijklmnopqrstuvwxyz,") != strlen(scopes) ||
	    scopes[0] == '\0' || strpbrk(name, " \t\r\n#") != NULL ||
	    name[0] == '\0') {
		fprintf(stderr,
		    "dbgmirror: token: NAME is one word; --scopes a comma "
		    "list of read, metadata, metrics, status, admin, upload "
		    "or all\n");
		return 2;
	}
	if (RAND_bytes(raw, sizeof(raw)) != 1) {
		fprintf(stderr, "dbgmirror: token: no random bytes\n");
		return 1;
	}
	memcpy(token, "dbgm_", 5);
	for (i = 0; i < sizeof(raw); i++)
		snprintf(token + 5 + 2 * i, 3, "%02x", raw[i]);
	if (access_token_hash(token, strlen(token), hash) == -1) {
		fprintf(stderr, "dbgmirror: token: cannot hash\n");
		return 1;
	}
	printf("token: %s\nline: %s %s %s\n", token, hash, scopes, name);
	return 0;
}

/* The upload token: the first line of file, else $DBGMIRROR_TOKEN. */
static int
upload_token(const char *file, char *out, size_t len)
{
	const char *env = getenv("DBGMIRROR_TOKEN");
	FILE *fp;

	out[0] = '\0';
	if (file != NULL) {
		if ((fp = fopen(file, "re")) == NULL) {
			fprintf(stderr, "dbgmirror: upload: %s: %s\n", file,
			    strerror(errno));
			return -1;
		}
		if (fgets(out, (int)len, fp) == NULL)
			out[0] = '\0';
		fclose(fp);
		out[strcspn(out, " \t\r\n")] = '\0';
	} else if (env != NULL) {
		snprintf(out, len, "%s", env);
	}
	if (out[0] == '\0') {
		fprintf(stderr,
		    "dbgmirror: upload: no token (--token-file "
		    "FILE or DBGMIRROR_TOKEN)\n");
		return -1;
	}
	return 0;
}

/*
 * dbgmirror upload FILE...: each file's build-id read from it, PUT as
 * debuginfo when it has .debug_* sections and as executable when it has
 * loadable code (an unstripped binary is both).  Exit 0 when every PUT
 * was taken (201 stored, 200 the same bytes were there).
 */
static int
cmd_upload(const struct config *cfg, const struct cmd_opts *co,
    char *const *files, size_t n)
{
	static const struct {
		unsigned kind;
		const char *name;
	} kinds[] = { { ELF_KIND_DEBUGINFO, "debuginfo" },
		{ ELF_KIND_EXECUTABLE, "executable" } };
	struct put_opts o = { NULL, cfg->ca_file };
	struct elf_info info;
	char base[4096], url[4300], hex[BUILDID_HEX_MAX], token[1024];
	char msg[512];
	size_t i, k;
	long status;
	int fd, rc = 0, r;

	if (daemon_url(cfg, co->url, base, sizeof(base)) == -1) {
		fprintf(stderr,
		    "dbgmirror: upload: no daemon URL (--url "
		    "https://HOST:PORT)\n");
		return 2;
	}
	if (upload_token(co->token_file, token, sizeof(token)) == -1)
		return 2;
	o.token = token;
	for (i = 0; i < n; i++) {
		if ((fd = open(files[i], O_RDONLY | O_CLOEXEC)) == -1) {
			fprintf(stderr, "dbgmirror: upload: %s: %s\n", files[i],
			    strerror(errno));
			rc = 1;
			continue;
		}
		r = elf_read_info(fd, &info, msg, sizeof(msg));
		close(fd);
		if (r != 0 || info.id.len == 0) {
			fprintf(stderr, "dbgmirror: upload: %s: %s\n", files[i],
			    r == ELF_NOTFOUND ? "not an ELF file"
				: r == -1     ? msg
					      : "no GNU build-id");
			rc = 1;
			continue;
		}
		buildid_format(&info.id, hex);
		for (k = 0; k < 2; k++) {
			if ((info.kinds & kinds[k].kind) == 0)
				continue;
			snprintf(url, sizeof(url), "%s/buildid/%s/%s", base,
			    hex, kinds[k].name);
			if (put_file(url, files[i], &o, &status, msg,
				sizeof(msg)) == -1) {
				fprintf(stderr, "dbgmirror: upload: %s\n", msg);
				rc = 1;
				continue;
			}
			printf("%s %s %s: %ld %s\n", files[i], hex,
			    kinds[k].name, status, msg);
			if (status != 200 && status != 201)
				rc = 1;
		}
	}
	return rc;
}

static int
cmd_prefetch(const struct config *cfg, const struct cmd_opts *co,
    char *const *operands, size_t n)
{
	struct prefetch_opts o;
	char url[4096], *end;
	unsigned long jobs = 8;

	if (co->jobs != NULL) {
		errno = 0;
		jobs = strtoul(co->jobs, &end, 10);
		if (errno != 0 || end == co->jobs || *end != '\0' ||
		    jobs == 0 || jobs > 1024) {
			fprintf(stderr,
			    "dbgmirror: prefetch: --jobs: 1 to 1024\n");
			return 2;
		}
	}
	if (daemon_url(cfg, co->url, url, sizeof(url)) == -1) {
		fprintf(stderr,
		    "dbgmirror: prefetch: no daemon URL (--url "
		    "http://HOST:PORT)\n");
		return 2;
	}
	o.jobs = (unsigned)jobs;
	o.url = url;
	o.executables = co->executable;
	return prefetch_run(&o, operands, n);
}

/* 1 when the operands and the command's options make a command. */
static int
command_ok(const struct config_args *args, const struct cmd_opts *co)
{
	const char *cmd = args->nrest > 0 ? args->rest[0] : NULL;
	int purge_opts = co->negative + (co->upstream != NULL);

	/* --keep-store goes with an ID only. */
	if (co->keep_store && (args->nrest != 2 || purge_opts != 0))
		return 0;
	if (cmd == NULL) {
		fprintf(stderr, "dbgmirror: no command given\n");
		return 0;
	}
	if (co->bad)
		return 0;
	if (strcmp(cmd, "purge") != 0 && strcmp(cmd, "lookup") != 0 &&
	    strcmp(cmd, "stats") != 0 && strcmp(cmd, "misses") != 0 &&
	    strcmp(cmd, "prefetch") != 0 && strcmp(cmd, "token") != 0 &&
	    strcmp(cmd, "upload") != 0) {
		fprintf(stderr, "dbgmirror: unknown command '%s'\n", cmd);
		return 0;
	}
	if (co->purge && strcmp(cmd, "purge") != 0)
		return 0;
	if (co->misses && strcmp(cmd, "misses") != 0)
		return 0;
	if (co->prefetch && strcmp(cmd, "prefetch") != 0)
		return 0;
	if (co->token && strcmp(cmd, "token") != 0)
		return 0;
	if (co->upload && strcmp(cmd, "upload") != 0)
		return 0;
	if (co->url != NULL && strcmp(cmd, "prefetch") != 0 &&
	    strcmp(cmd, "upload") != 0)
		return 0;
	if (strcmp(cmd, "prefetch") == 0)
		return 1;
	if (strcmp(cmd, "token") == 0)
		return args->nrest == 2;
	if (strcmp(cmd, "upload") == 0)
		return args->nrest >= 2;
	if (strcmp(cmd, "purge") == 0)
		return args->nrest == 2 ? purge_opts == 0
					: args->nrest == 1 && purge_opts == 1;
	return (strcmp(cmd, "lookup") == 0 && args->nrest == 2) ||
	    (strcmp(cmd, "stats") == 0 && args->nrest == 1) ||
	    (strcmp(cmd, "misses") == 0 && args->nrest == 1);
}

int
main(int argc, char **argv)
{
	struct config cfg;
	struct config_args args = { 0 };
	struct config_diag diag = { 0 };
	struct index *idx = NULL;
	struct index_reader *rd = NULL;
	struct cmd_opts po;
	char path[PATH_MAX], err[512], **av;
	const char *cmd;
	size_t i;
	int rc, ac;

	if ((av = calloc((size_t)argc + 1, sizeof(*av))) == NULL ||
	    config_init(&cfg) == -1) {
		fprintf(stderr, "dbgmirror: out of memory\n");
		free(av);
		return 1;
	}
	if (elf_init() == -1) {
		fprintf(stderr, "dbgmirror: libelf: version mismatch\n");
		free(av);
		return 1;
	}
	if ((rc = clock_init(err, sizeof(err))) == 1)
		log_info("%s", err);
	else if (rc == -1)
		log_warnx("%s", err);
	ac = cmd_split(argc, argv, av, &po);
	rc = config_parse_args(&args, ac, av, &diag);
	if (rc == 0 && args.help) {
		usage(stdout);
		rc = 0;
		goto out;
	}
	if (rc == 0 && args.version) {
		printf("dbgmirror %s\n", PACKAGE_VERSION);
		goto out;
	}
	if (rc == 0)
		rc = config_load(&cfg, &args, &diag);
	for (i = 0; i < diag.n; i++)
		fprintf(stderr, "dbgmirror: %s\n", diag.msgs[i]);
	if (rc != 0) {
		rc = 2;
		goto out;
	}
	if (!command_ok(&args, &po)) {
		usage(stderr);
		rc = 2;
		goto out;
	}
	cmd = args.rest[0];
	if (strcmp(cmd, "token") == 0) {
		rc = cmd_token(args.rest[1], po.scopes);
		goto out;
	}
	if (strcmp(cmd, "upload") == 0) {
		rc = cmd_upload(&cfg, &po, args.rest + 1, args.nrest - 1);
		goto out;
	}
	if (strcmp(cmd, "prefetch") == 0) {
		rc = cmd_prefetch(&cfg, &po, args.rest + 1, args.nrest - 1);
		goto out;
	}

	snprintf(path, sizeof(path), "%s/index", cfg.cache_dir);
	if ((idx = index_open(path,
		 strcmp(cmd, "purge") == 0 ? INDEX_EXISTING : INDEX_RDONLY,
		 cfg.index_map_size, err, sizeof(err))) == NULL) {
		fprintf(stderr, "dbgmirror: %s\n", err);
		rc = 1;
		goto out;
	}
	if (strcmp(cmd, "purge") == 0) {
		rc = cmd_purge(idx, &cfg, args.nrest == 2 ? args.rest[1] : NULL,
		    &po);
		goto out;
	}
	if ((rd = index_reader_new(idx)) == NULL ||
	    index_reader_begin(rd) == -1) {
		fprintf(stderr, "dbgmirror: %s: cannot read the index\n", path);
		rc = 1;
		goto out;
	}
	if (strcmp(cmd, "lookup") == 0)
		rc = cmd_lookup(rd, args.rest[1], &cfg);
	else if (strcmp(cmd, "misses") == 0)
		rc = cmd_misses(rd, &po);
	else
		rc = cmd_stats(rd, path, &cfg);
out:
	index_reader_free(rd);
	index_close(idx);
	config_diag_free(&diag);
	config_args_free(&args);
	config_free(&cfg);
	free(av);
	return rc;
}
