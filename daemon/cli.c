/*
 * daemon/cli.c: dbgmirror, the admin command line.
 *
 * Reads the daemon's index directly (LMDB allows readers in other processes
 * while the daemon writes), so it works whether or not dbgmirrord runs.
 * The cache directory comes from the same configuration as the daemon's.
 */
#include <sys/stat.h>

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache/index.h"
#include "conf/config.h"
#include "config.h"
#include "daemon/scan.h"
#include "indexer/buildid.h"

static void
usage(FILE *fp)
{
	fprintf(fp,
	    "usage: dbgmirror [--config FILE] [--cache-dir DIR] COMMAND\n"
	    "\n"
	    "  lookup ID   what the index holds for build-id ID, every kind\n"
	    "  stats       index entries, bytes, and the last scan\n"
	    "\n"
	    "Exit status: 0 done; 1 not found or error; 2 bad usage.\n");
}

static void
format_time(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

struct lookup {
	const char *kind;
	int found;
};

static int
lookup_cb(const struct index_file *f, void *arg)
{
	struct lookup *lk = arg;
	char when[32];
	struct stat st;
	const char *note = "";

	format_time(f->mtime_sec, when, sizeof(when));
	if (stat(f->path, &st) == -1)
		note = "  (file is gone)";
	else if (!scan_unchanged(f, &st))
		note = "  (changed since indexed)";
	printf("%-10s  %s  %" PRIu64 " bytes  %s%s\n", lk->kind, f->path,
	    f->size, when, note);
	lk->found++;
	return 0;
}

static int
cmd_lookup(struct index_reader *rd, const char *hex)
{
	struct buildid id;
	struct lookup lk = { NULL, 0 };
	const char *why;
	char canon[BUILDID_HEX_MAX];

	if (buildid_parse(&id, hex, strlen(hex), &why) == -1) {
		fprintf(stderr, "dbgmirror: %s: %s\n", hex, why);
		return 2;
	}
	lk.kind = elf_kind_name(ELF_KIND_DEBUGINFO);
	if (index_find(rd, &id, ELF_KIND_DEBUGINFO, lookup_cb, &lk) == -1)
		goto fail;
	lk.kind = elf_kind_name(ELF_KIND_EXECUTABLE);
	if (index_find(rd, &id, ELF_KIND_EXECUTABLE, lookup_cb, &lk) == -1)
		goto fail;
	if (lk.found == 0) {
		buildid_format(&id, canon);
		printf("%s: not indexed\n", canon);
		return 1;
	}
	return 0;
fail:
	fprintf(stderr, "dbgmirror: index read failed\n");
	return 1;
}

static int
cmd_stats(struct index_reader *rd, const char *path)
{
	struct index_stats st;
	char start[32], end[32];

	if (index_stats(rd, &st) == -1) {
		fprintf(stderr, "dbgmirror: index read failed\n");
		return 1;
	}
	printf("index:       %s\n", path);
	printf("files:       %" PRIu64 "\n", st.files);
	printf("debuginfo:   %" PRIu64 " build-ids\n", st.debuginfo);
	printf("executable:  %" PRIu64 " build-ids\n", st.executable);
	printf("bytes:       %" PRIu64 "\n", st.bytes);
	if (st.scan.started == 0) {
		printf("last scan:   never\n");
		return 0;
	}
	format_time(st.scan.started, start, sizeof(start));
	if (st.scan.finished == 0) {
		printf("last scan:   running since %s\n", start);
		return 0;
	}
	format_time(st.scan.finished, end, sizeof(end));
	printf("last scan:   %s to %s: %" PRIu64 " seen, %" PRIu64
	       " read, %" PRIu64 " removed, %" PRIu64 " not indexable\n",
	    start, end, st.scan.seen, st.scan.read, st.scan.removed,
	    st.scan.failed);
	return 0;
}

int
main(int argc, char **argv)
{
	struct config cfg;
	struct config_args args = { 0 };
	struct config_diag diag = { 0 };
	struct index *idx = NULL;
	struct index_reader *rd = NULL;
	char path[PATH_MAX], err[512];
	const char *cmd;
	size_t i;
	int rc;

	if (config_init(&cfg) == -1) {
		fprintf(stderr, "dbgmirror: out of memory\n");
		return 1;
	}
	rc = config_parse_args(&args, argc, argv, &diag);
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
	cmd = args.nrest > 0 ? args.rest[0] : NULL;
	if (cmd == NULL ||
	    !((strcmp(cmd, "lookup") == 0 && args.nrest == 2) ||
		(strcmp(cmd, "stats") == 0 && args.nrest == 1))) {
		usage(stderr);
		rc = 2;
		goto out;
	}

	snprintf(path, sizeof(path), "%s/index", cfg.cache_dir);
	if ((idx = index_open(path, INDEX_RDONLY, cfg.index_map_size, err,
		 sizeof(err))) == NULL) {
		fprintf(stderr, "dbgmirror: %s\n", err);
		rc = 1;
		goto out;
	}
	if ((rd = index_reader_new(idx)) == NULL ||
	    index_reader_begin(rd) == -1) {
		fprintf(stderr, "dbgmirror: %s: cannot read the index\n", path);
		rc = 1;
		goto out;
	}
	if (strcmp(cmd, "lookup") == 0)
		rc = cmd_lookup(rd, args.rest[1]);
	else
		rc = cmd_stats(rd, path);
out:
	index_reader_free(rd);
	index_close(idx);
	config_diag_free(&diag);
	config_args_free(&args);
	config_free(&cfg);
	return rc;
}
