/*
 * cli/report.c: the dbgmirror commands that read (and purge) the
 * daemon's index: lookup, stats, misses, purge.
 *
 * They read the index directly (LMDB allows readers in other processes
 * while the daemon writes), so they work whether or not dbgmirrord runs;
 * purge writes it too, its write transactions ordered with the daemon's
 * by LMDB.  Each prints text for a person (sizes in KiB, MiB...) or, with
 * --json, one JSON object with the exact numbers.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/blobstore.h"
#include "cache/index.h"
#include "cache/misses.h"
#include "cache/negative.h"
#include "cache/pkgindex.h"
#include "cache/repoidx.h"
#include "cli/cli.h"
#include "daemon/clock.h"
#include "daemon/httpdate.h"
#include "daemon/json.h"
#include "daemon/misses.h"
#include "sources/scan.h"
#include "indexer/buildid.h"
#include "indexer/elf.h"
#include "indexer/file.h"
#include "sources/objstore.h"
#include "sources/repo.h"

/* Repositories dbgmirror lookup and stats read at most. */
#define CLI_REPOS_MAX 64

const char *
cli_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB",
		"PiB" };
	double v = (double)bytes;
	size_t u = 0;

	if (bytes < 1024) {
		snprintf(buf, len, "%" PRIu64 " bytes", bytes);
		return buf;
	}
	for (v /= 1024; v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0]);
	     u++)
		v /= 1024;
	snprintf(buf, len, v < 10 ? "%.1f %s" : "%.0f %s", v, units[u]);
	return buf;
}

void
cli_json_str(FILE *fp, const char *s)
{
	struct jbuf b = { NULL, 0, 0, 1 << 20, 0 };

	if (s == NULL)
		fputs("null", fp);
	else if (jbuf_str(&b, s, strlen(s)) == 0)
		fwrite(b.p, 1, b.len, fp);
	else
		fputs("\"\"", fp);
	jbuf_free(&b);
}

/* ------------------------------------------------------------- lookup */

/*
 * One lookup: what it found, printed as found.  In JSON each place is
 * an object of "results"; in text a line, the kind first.
 */
struct lookup {
	struct cli *c;
	struct index_reader *rd;
	const char *kind; /* the kind being looked up */
	int results; /* places printed */
	unsigned here; /* ELF kinds found in a place that serves them */
};

/* Start one result: the comma, kind and source in JSON; the text head. */
static void
result_begin(struct lookup *lk, const char *source)
{
	if (lk->c->json)
		printf("%s{\"kind\":\"%s\",\"source\":\"%s\"",
		    lk->results > 0 ? "," : "", lk->kind, source);
	else
		printf("%-10s  ", lk->kind);
	lk->results++;
}

static void
result_end(struct lookup *lk)
{
	fputs(lk->c->json ? "}" : "\n", stdout);
}

/* What has become of the local file rec was made from, or NULL. */
static const char *
file_note(const struct index_file *rec)
{
	struct stat st;

	if (stat(rec->path, &st) == -1)
		return "gone";
	if (!index_file_unchanged(rec, &st))
		return "changed since indexed";
	return NULL;
}

static int
lookup_cb(const struct index_file *f, void *arg)
{
	struct lookup *lk = arg;
	const char *note = file_note(f);
	char when[HTTPDATE_ISO_LEN], size[32];

	httpdate_iso((time_t)f->mtime_sec, when);
	result_begin(lk, "local");
	if (lk->c->json) {
		printf(",\"path\":");
		cli_json_str(stdout, f->path);
		printf(",\"size\":%" PRIu64 ",\"mtime\":\"%s\",\"note\":",
		    f->size, when);
		cli_json_str(stdout, note);
	} else {
		printf("local file  %s  %s  %s%s%s%s", f->path,
		    cli_bytes(f->size, size, sizeof(size)), when,
		    note != NULL ? "  (" : "", note != NULL ? note : "",
		    note != NULL ? ")" : "");
	}
	result_end(lk);
	return 0;
}

static int
lookup_member_cb(const struct pkg_rec *m, void *arg)
{
	struct lookup *lk = arg;
	struct index_file pkg;
	const char *note = NULL;
	char size[32];

	if (pkgidx_get_package(lk->rd, m->package, &pkg) == 0)
		note = file_note(&pkg);
	result_begin(lk, "package");
	if (lk->c->json) {
		printf(",\"package\":");
		cli_json_str(stdout, m->package);
		printf(",\"member\":");
		cli_json_str(stdout, m->member);
		printf(",\"size\":%" PRIu64 ",\"note\":", m->size);
		cli_json_str(stdout, note);
	} else {
		printf("package     %s  %s  %s%s%s%s", m->package, m->member,
		    cli_bytes(m->size, size, sizeof(size)),
		    note != NULL ? "  (package " : "", note != NULL ? note : "",
		    note != NULL ? ")" : "");
	}
	result_end(lk);
	return 0;
}

/* The cache's answer and remembered miss of the whole file of kind. */
static void
lookup_cache(struct lookup *lk, const struct buildid *id, enum cache_kind kind)
{
	struct blob_info bi;
	struct neg_entry ne;
	struct cache_key k;
	char when[HTTPDATE_ISO_LEN], size[32];
	int64_t now = clock_now();

	cache_key_make(&k, id, kind, "");
	if (blob_lookup(lk->rd, &k, &bi) == 0) {
		httpdate_iso((time_t)bi.stored, when);
		result_begin(lk, bi.uploaded ? "upload" : "cache");
		if (lk->c->json) {
			printf(",\"size\":%" PRIu64 ",\"from\":", bi.size);
			cli_json_str(stdout, bi.source);
			printf(",\"since\":\"%s\"", when);
		} else {
			printf("%s  %s  from %s  since %s",
			    bi.uploaded ? "uploaded  " : "cached    ",
			    cli_bytes(bi.size, size, sizeof(size)),
			    bi.source[0] != '\0' ? bi.source : "(unknown)",
			    when);
		}
		result_end(lk);
		lk->here |= kind == CACHE_DEBUGINFO ? ELF_KIND_DEBUGINFO
						    : ELF_KIND_EXECUTABLE;
	}
	if (neg_get(lk->rd, &k, now, &ne) == 0) {
		result_begin(lk,
		    ne.kind == NEG_NOTFOUND ? "negative" : "error");
		if (lk->c->json)
			printf(",\"expires_in\":%lld",
			    (long long)(ne.expires - now));
		else
			printf("%s, remembered for %llds more (dbgmirror purge "
			       "ID forgets it)",
			    ne.kind == NEG_NOTFOUND
				? "every upstream said not found"
				: "the upstreams failed",
			    (long long)(ne.expires - now));
		result_end(lk);
	}
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
 * When nothing here serves id: why each configured repository cannot
 * (kernel: the operand is a kernel's file), a line each.
 */
static void
lookup_repos_absent(struct lookup *lk, int kernel)
{
	static char names[CLI_REPOS_MAX][1100];
	static uint8_t keys[CLI_REPOS_MAX][REPOIDX_KEY_LEN];
	struct repoidx_state st;
	char why[512];
	size_t n, i;

	n = repos_config_keys(&lk->c->cfg, names, keys, CLI_REPOS_MAX);
	for (i = 0; i < n; i++) {
		if (repoidx_state(lk->rd, keys[i], &st) == -1)
			continue;
		repos_why_absent(&st, kernel, why, sizeof(why));
		if (!lk->c->json) {
			printf("repo %s: %s\n", names[i], why);
			continue;
		}
		lk->kind = "-";
		result_begin(lk, "repository-absent");
		printf(",\"repository\":");
		cli_json_str(stdout, names[i]);
		printf(",\"why\":");
		cli_json_str(stdout, why);
		result_end(lk);
	}
}

/* The configured repositories that map id to a package as kind. */
static void
lookup_repos(struct lookup *lk, const struct buildid *id, unsigned elf_kind)
{
	static char names[CLI_REPOS_MAX][1100];
	static uint8_t keys[CLI_REPOS_MAX][REPOIDX_KEY_LEN];
	static const struct {
		enum repoidx_kind kind;
		unsigned elf;
		const char *as;
	} kinds[] = {
		{ REPOIDX_DEBUGINFO, ELF_KIND_DEBUGINFO, "debuginfo" },
		{ REPOIDX_EXECUTABLE, ELF_KIND_EXECUTABLE, "executable" },
		{ REPOIDX_EXECUTABLE_WEAK, ELF_KIND_EXECUTABLE,
		    "executable, by a debug link" },
	};
	struct repoidx_pkg p;
	char sha[65], size[32], file[1024];
	size_t n, i, k;

	n = repos_config_keys(&lk->c->cfg, names, keys, CLI_REPOS_MAX);
	for (i = 0; i < n; i++) {
		for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
			if (kinds[k].elf != elf_kind ||
			    repoidx_find(lk->rd, keys[i], id, kinds[k].kind,
				&p) != 0)
				continue;
			buildid_hex(p.sha256, 32, sha);
			result_begin(lk, "repository");
			snprintf(file, sizeof(file), "%.*s", (int)p.file_len,
			    p.file);
			if (lk->c->json) {
				printf(",\"repository\":");
				cli_json_str(stdout, names[i]);
				printf(",\"package\":");
				cli_json_str(stdout, file);
				printf(",\"size\":%" PRIu64
				       ",\"sha256\":\"%s\",\"as\":\"%s\"",
				    p.size, sha, kinds[k].as);
			} else {
				printf("repository  %s: package %s (%s, sha256 "
				       "%s) as %s",
				    names[i], file,
				    cli_bytes(p.size, size, sizeof(size)), sha,
				    kinds[k].as);
			}
			result_end(lk);
			lk->here |= elf_kind;
		}
	}
}

/*
 * The upstreams a request would go to when nothing here has the file:
 * the running daemon's, else the configuration's.  Blank-separated, in
 * buf; "" when none.
 */
static const char *
lookup_upstreams(const struct cli *c, char *buf, size_t len)
{
	size_t i, n = 0;

	if (c->from_daemon)
		return c->daemon_upstreams;
	buf[0] = '\0';
	for (i = 0; i < c->cfg.nupstreams; i++)
		if (c->cfg.upstreams[i].enabled)
			n += (size_t)snprintf(buf + n, n < len ? len - n : 0,
			    "%s%s", n > 0 ? " " : "", c->cfg.upstreams[i].name);
	return buf;
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
 * dbgmirror lookup ID|FILE: where the daemon would find the debuginfo and
 * the executable of a build-id (or of an ELF file's): local files, package
 * members, the cache and uploads, remote repositories; else the upstreams
 * it would ask, or nowhere, with what to do about it.  0 when one of them
 * is here, 1 when neither is, 2 for a bad operand.
 */
int
cmd_lookup(struct cli *c, struct index_reader *rd, const char *index)
{
	static const struct {
		unsigned elf;
		enum cache_kind cache;
	} kinds[] = { { ELF_KIND_DEBUGINFO, CACHE_DEBUGINFO },
		{ ELF_KIND_EXECUTABLE, CACHE_EXECUTABLE } };
	struct lookup lk = { c, rd, NULL, 0, 0 };
	const char *arg = c->operands[0], *ups;
	struct config_distro distro;
	char canon[BUILDID_HEX_MAX], upbuf[4096], advice[512];
	struct buildid id;
	size_t i;
	int rc, before, file;

	(void)index;
	if ((rc = operand_id(arg, &id)) != 0)
		return rc;
	buildid_format(&id, canon);
	file = strcmp(canon, arg) != 0;
	if (c->json) {
		printf("{\"build_id\":\"%s\",\"file\":", canon);
		cli_json_str(stdout, file ? arg : NULL);
		printf(",\"results\":[");
	} else if (file) {
		printf("build-id    %s (of %s)\n", canon, arg);
	}
	ups = lookup_upstreams(c, upbuf, sizeof(upbuf));
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		lk.kind = elf_kind_name(kinds[i].elf);
		before = lk.results;
		if (index_find(rd, &id, kinds[i].elf, lookup_cb, &lk) == -1 ||
		    pkgidx_find(rd, &id, kinds[i].elf, lookup_member_cb, &lk) ==
			-1) {
			fprintf(stderr, "dbgmirror: index read failed\n");
			return 1;
		}
		if (lk.results > before)
			lk.here |= kinds[i].elf;
		lookup_cache(&lk, &id, kinds[i].cache);
		lookup_repos(&lk, &id, kinds[i].elf);
		if ((lk.here & kinds[i].elf) != 0 || c->json)
			continue;
		if (ups[0] != '\0')
			printf("%-10s  not here: a request would ask the "
			       "upstreams %s\n",
			    lk.kind, ups);
		else
			printf("%-10s  nowhere: not indexed here, and no "
			       "upstream to ask\n",
			    lk.kind);
	}
	/* Why the repositories lack it, when nothing here serves it. */
	if (lk.here == 0)
		lookup_repos_absent(&lk, file && kernel_file(arg));
	/* What a user can do when no debug file is to be had. */
	advice[0] = '\0';
	if ((lk.here & ELF_KIND_DEBUGINFO) == 0 && ups[0] == '\0') {
		config_distro(&distro);
		snprintf(advice, sizeof(advice),
		    "no debug file for this build-id is indexed; install its "
		    "-dbgsym or -dbg package (or scan-dir its directory)%s%s%s",
		    distro.upstream[0] != '\0' ? ", or add `upstream = " : "",
		    distro.upstream, distro.upstream[0] != '\0' ? "`" : "");
	}
	if (c->json) {
		printf("],\"here\":%s,\"upstreams\":",
		    lk.here != 0 ? "true" : "false");
		cli_json_str(stdout, ups);
		printf(",\"advice\":");
		cli_json_str(stdout, advice[0] != '\0' ? advice : NULL);
		printf("}\n");
	} else if (advice[0] != '\0') {
		printf("%s\n", advice);
	}
	return lk.here != 0 ? 0 : 1;
}

/* -------------------------------------------------------------- stats */

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

static void
json_scan(const struct index_scan *sc)
{
	printf(",\"scan\":{\"running\":%s,\"started\":%lld,\"finished\":%lld,"
	       "\"files_seen\":%" PRIu64 ",\"files_new\":%" PRIu64
	       ",\"files_read\":%" PRIu64 ",\"not_indexable\":%" PRIu64
	       ",\"removed\":%" PRIu64 ",\"packages_seen\":%" PRIu64
	       ",\"packages_new\":%" PRIu64 ",\"packages_read\":%" PRIu64
	       ",\"members\":%" PRIu64 ",\"ended\":%lld,\"seconds\":%.3f,"
	       "\"outcome\":\"%s\"}",
	    sc->started != 0 && sc->finished == 0 ? "true" : "false",
	    (long long)sc->started, (long long)sc->finished, sc->seen,
	    sc->queued, sc->read, sc->failed, sc->removed, sc->pkg_seen,
	    sc->pkg_queued, sc->packages, sc->members, (long long)sc->ended,
	    (double)sc->ended_ms / 1000,
	    sc->outcome == INDEX_SCAN_DONE            ? "complete"
		: sc->outcome == INDEX_SCAN_CANCELLED ? "cancelled"
						      : "failed");
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
print_repos(struct cli *c, struct index_reader *rd)
{
	static char names[CLI_REPOS_MAX][1100];
	static uint8_t keys[CLI_REPOS_MAX][REPOIDX_KEY_LEN];
	struct repoidx_state st;
	struct repoidx_error er;
	char when[HTTPDATE_ISO_LEN];
	size_t n, i, shown = 0;

	n = repos_config_keys(&c->cfg, names, keys, CLI_REPOS_MAX);
	if (c->json)
		printf(",\"repositories\":[");
	for (i = 0; i < n; i++) {
		if (repoidx_state(rd, keys[i], &st) == -1 ||
		    repoidx_get_error(rd, keys[i], &er) == -1)
			continue;
		if (c->json) {
			printf("%s{\"name\":", shown++ > 0 ? "," : "");
			cli_json_str(stdout, names[i]);
			printf(",\"ids\":%" PRIu64 ",\"packages\":%" PRIu64
			       ",\"refreshed\":%lld,\"failed_refreshes\":"
			       "%" PRIu64 ",\"last_error\":",
			    st.gen != 0 ? st.ids : 0, st.gen != 0 ? st.pkgs : 0,
			    st.gen != 0 ? (long long)st.refreshed : 0LL,
			    er.when != 0 ? er.count : 0);
			cli_json_str(stdout, er.when != 0 ? er.why : NULL);
			printf("}");
			continue;
		}
		printf("repo:        %s: ", names[i]);
		if (st.gen == 0 && st.running != 0) {
			print_running(&c->cfg, st.running, "first refresh");
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
				print_running(&c->cfg, st.running, "a refresh");
			}
		}
		if (er.when != 0) {
			httpdate_iso((time_t)er.when, when);
			printf("; %" PRIu64
			       " refreshes failed, the last at %s: %s",
			    er.count, when, er.why);
		}
		printf("\n");
	}
	if (c->json)
		printf("]");
}

/* Where the index came from, in words: the daemon's, or the file's. */
static void
print_origin(const struct cli *c, const char *index)
{
	if (c->from_daemon)
		printf("index:       %s (the cache-dir of the dbgmirrord at "
		       "%s, "
		       "pid %ld)\n",
		    index, c->daemon_url, c->daemon_pid);
	else if (c->cache_dir_given)
		printf("index:       %s (--cache-dir)\n", index);
	else
		printf("index:       %s (the cache-dir of %s)\n", index,
		    c->cfg.config_file != NULL ? c->cfg.config_file
					       : "the embedded defaults");
}

int
cmd_stats(struct cli *c, struct index_reader *rd, const char *index)
{
	const struct config *cfg = &c->cfg;
	struct index_stats st;
	struct blob_stats bst;
	uint64_t pkgs, members, missing = 0, downloaded = 0;
	char a[32], b[32], repodir[PATH_MAX];

	/* What repositories downloaded is indexed beside scan-packages. */
	snprintf(repodir, sizeof(repodir), "%s/repo-packages", cfg->cache_dir);
	if (index_stats(rd, &st) == -1 ||
	    pkgidx_count(rd, &pkgs, &members) == -1 ||
	    pkgidx_count_under(rd, repodir, &downloaded) == -1 ||
	    blob_stats(rd, NULL, &bst) == -1) {
		fprintf(stderr, "dbgmirror: index read failed\n");
		return 1;
	}
	miss_count(rd, &missing);
	if (c->json) {
		printf("{\"index\":");
		cli_json_str(stdout, index);
		printf(",\"settings_from\":\"%s\",\"daemon_pid\":",
		    c->from_daemon ? "daemon" : "configuration");
		if (c->from_daemon)
			printf("%ld", c->daemon_pid);
		else
			printf("null");
		printf(",\"files\":%" PRIu64 ",\"debuginfo\":%" PRIu64
		       ",\"executable\":%" PRIu64 ",\"bytes\":%" PRIu64
		       ",\"packages\":%" PRIu64
		       ",\"downloaded_packages\":%" PRIu64
		       ",\"members\":%" PRIu64 ",\"cache_entries\":%" PRIu64
		       ",\"cache_bytes\":%" PRIu64 ",\"cache_size\":%" PRIu64
		       ",\"upload_bytes\":%" PRIu64 ",\"upload_size\":%" PRIu64
		       ",\"upload_dir\":",
		    st.files, st.debuginfo, st.executable, st.bytes,
		    pkgs - downloaded, downloaded, members, bst.entries,
		    bst.bytes, cfg->cache_size, bst.upload_bytes,
		    cfg->upload_size);
		cli_json_str(stdout, cfg->upload_dir);
		printf(",\"negative_entries\":%" PRIu64
		       ",\"negative_max\":%u,\"missing_ids\":%" PRIu64,
		    bst.negatives, cfg->negative_max, missing);
		json_scan(&st.scan);
		print_repos(c, rd);
		printf("}\n");
		return 0;
	}
	/* Each line says what its numbers count. */
	print_origin(c, index);
	printf("files:       %" PRIu64 " local files indexed (scan-dir)\n",
	    st.files);
	printf("debuginfo:   %" PRIu64 " build-ids with a local debuginfo\n",
	    st.debuginfo);
	printf("executable:  %" PRIu64 " build-ids with a local executable\n",
	    st.executable);
	printf("bytes:       %s in those local files\n",
	    cli_bytes(st.bytes, a, sizeof(a)));
	printf("packages:    %" PRIu64 " indexed (scan-packages), %" PRIu64
	       " downloaded from repositories (repo-cache-size); %" PRIu64
	       " servable members in both (one per ELF member and kind)\n",
	    pkgs - downloaded, downloaded, members);
	printf("cache:       %" PRIu64 " answers kept, %s", bst.entries,
	    cli_bytes(bst.bytes, a, sizeof(a)));
	if (cfg->cache_size > 0)
		printf(" of %s (cache-size), %" PRIu64 "%%\n",
		    cli_bytes(cfg->cache_size, b, sizeof(b)),
		    bst.bytes * 100 / cfg->cache_size);
	else
		printf(" (no cache-size cap)\n");
	printf("uploads:     %s in %s, kept apart (upload-size %s)\n",
	    cli_bytes(bst.upload_bytes, a, sizeof(a)), cfg->upload_dir,
	    cli_bytes(cfg->upload_size, b, sizeof(b)));
	printf("misses:      %" PRIu64 " negative and error entries "
	       "(negative-max %u); %" PRIu64
	       " build-ids in the missing-id report\n",
	    bst.negatives, cfg->negative_max, missing);
	print_scan(&st.scan);
	print_repos(c, rd);
	return 0;
}

/* ------------------------------------------------------------- misses */

/* misses: the report of the ids asked for and not found. */
int
cmd_misses(struct cli *c, struct index_reader *rd)
{
	struct misses_query q = { 0, 0, c->json };
	const char *why;
	char *text;
	size_t len;

	if (c->top != NULL && misses_query_top(&q, c->top, &why) == -1) {
		fprintf(stderr, "dbgmirror: --top %s: %s\n", c->top, why);
		return 2;
	}
	if (c->since != NULL &&
	    misses_query_since(&q, c->since, clock_now(), &why) == -1) {
		fprintf(stderr, "dbgmirror: --since %s: %s\n", c->since, why);
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

/* -------------------------------------------------------------- purge */

/*
 * dbgmirror purge ID: the cached files, negative entries and missing-id
 * record of ID (and its store objects unless --keep-store); --negative:
 * every negative entry; --misses: the whole missing-id report;
 * --upstream URL: what came from URL.
 */
int
cmd_purge(struct cli *c, struct index *idx)
{
	static const struct blob_limits nolimits = { 0, 0, 0, 0, 0 };
	const struct config *cfg = &c->cfg;
	const char *hex = c->noperands > 0 ? c->operands[0] : NULL;
	uint64_t blobs = 0, negs = 0, ids = 0, objects = 0;
	struct blobstore *bs;
	struct buildid id;
	const char *why;
	char url[4096], err[512];
	int rc = 0, store;

	if (hex != NULL && buildid_parse(&id, hex, strlen(hex), &why) == -1) {
		fprintf(stderr, "dbgmirror: %s: %s\n", hex, why);
		return 2;
	}
	if (c->upstream != NULL) {
		config_url_public(c->upstream, url, sizeof(url));
		if (url[0] == '\0' || strlen(c->upstream) >= sizeof(url)) {
			fprintf(stderr, "dbgmirror: --upstream: bad URL\n");
			return 2;
		}
	}
	if ((bs = blobstore_new(idx, cfg->cache_dir, &nolimits, err,
		 sizeof(err))) == NULL ||
	    blobstore_set_upload_dir(bs, cfg->upload_dir, err, sizeof(err)) ==
		-1) {
		fprintf(stderr, "dbgmirror: %s\n", err);
		blobstore_free(bs);
		return 1;
	}
	if (hex != NULL)
		rc = blob_purge(bs, &id, NULL, clock_stamp_ns(), &blobs, err,
		    sizeof(err));
	else if (c->upstream != NULL)
		rc = blob_purge(bs, NULL, url, clock_stamp_ns(), &blobs, err,
		    sizeof(err));
	if (rc == 0 && (hex != NULL || c->negative))
		rc = neg_purge(idx, hex != NULL ? &id : NULL, &negs, err,
		    sizeof(err));
	if (rc == 0 && (hex != NULL || c->misses))
		rc = miss_purge(idx, hex != NULL ? &id : NULL, &ids, err,
		    sizeof(err));
	blobstore_free(bs);
	/* The fleet's copies too, unless asked to keep them. */
	store = hex != NULL && cfg->store != NULL && !c->keep_store;
	if (rc == 0 && store)
		rc = objstore_purge(cfg, &id, &objects, err, sizeof(err));
	if (rc == -1) {
		fprintf(stderr, "dbgmirror: purge: %s\n", err);
		return 1;
	}
	if (c->json) {
		printf("{\"entries\":%" PRIu64 ",\"negative\":%" PRIu64
		       ",\"missing_ids\":%" PRIu64,
		    blobs, negs, ids);
		if (store)
			printf(",\"store_objects\":%" PRIu64, objects);
		printf("}\n");
		return 0;
	}
	printf("purged %" PRIu64 " entries, %" PRIu64 " negative, %" PRIu64
	       " missing ids",
	    blobs, negs, ids);
	if (store)
		printf(", %" PRIu64 " store objects", objects);
	printf("\n");
	return 0;
}
