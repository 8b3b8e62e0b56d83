/*
 * tests/symtool.c: the symbolizer from the command line, for the tests'
 * comparisons with eu-addr2line and llvm-symbolizer and for bench/.
 *
 *   symtool build TABLE DEBUG|- ALT|- EXEC|- [TMPDIR]
 *       build TABLE from the files ("-": none); print the build's numbers
 *       and the peak resident size of the process
 *   symtool info TABLE
 *   symtool lookup TABLE [ADDR...]
 *       look up each address (hex, 0x optional; read from standard
 *       input, one a line, when none is given) and print
 *         @ADDR STATUS SYMBOL SYM_ADDR NEAREST LINE_ADDR
 *       then one line per frame, innermost first, fields tab-separated:
 *         F FUNCTION FILE LINE COLUMN INLINED
 *       names demangled, "??" for none
 *   symtool bench TABLE ROUNDS
 *       look up the addresses of standard input ROUNDS times over and
 *       print lookups per second (one thread)
 *   symtool answer TABLE FRAMES ROUNDS
 *       make a POST /symbolicate body of FRAMES of the addresses of
 *       standard input (return addresses, demangled), parse it and write
 *       its answer ROUNDS times over; print the time of one and the
 *       answer's size
 *
 * Single-threaded; exits 1 with a message on any failure.
 */
#include <sys/resource.h>

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "indexer/elf.h"
#include "symbolizer/build.h"
#include "symbolizer/demangle.h"
#include "symbolizer/symjson.h"
#include "symbolizer/symtab.h"

#define ADDRS_MAX (1u << 24)

static int
open_or_none(const char *path)
{
	int fd;

	if (strcmp(path, "-") == 0)
		return -1;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		perror(path);
		exit(1);
	}
	return fd;
}

static int
cmd_build(int argc, char **argv)
{
	struct symbuild_in in;
	struct symbuild_stats st;
	struct rusage ru;
	char err[512];
	struct timespec t0, t1;
	int out;

	if (argc < 6)
		return 2;
	in.debug_fd = open_or_none(argv[3]);
	in.alt_fd = open_or_none(argv[4]);
	in.exec_fd = open_or_none(argv[5]);
	in.tmpdir = argc > 6 ? argv[6] : NULL;
	if ((out = open(argv[2], O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC,
		 0644)) == -1) {
		perror(argv[2]);
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (symbuild_run(&in, out, &st, err, sizeof(err)) == -1) {
		fprintf(stderr, "symtool: build: %s\n", err);
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	getrusage(RUSAGE_SELF, &ru);
	printf("seconds=%.3f dwarf_bytes=%" PRIu64 " table_bytes=%" PRIu64
	       " ratio=%.4f units=%u scopes=%" PRIu64 " line_entries=%" PRIu64
	       " scope_entries=%" PRIu64 " symbols=%" PRIu64
	       " maxrss_kib=%ld\n",
	    (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9,
	    st.dwarf_bytes, st.table_bytes,
	    st.dwarf_bytes > 0 ? (double)st.table_bytes / (double)st.dwarf_bytes
			       : 0.0,
	    st.units, st.scopes, st.line_entries, st.scope_entries, st.symbols,
	    ru.ru_maxrss);
	return 0;
}

static struct symtab *
open_table(const char *path)
{
	struct symtab *t;
	const char *why;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		perror(path);
		exit(1);
	}
	if ((t = symtab_open(fd, &why)) == NULL) {
		fprintf(stderr, "symtool: %s: %s\n", path, why);
		exit(1);
	}
	close(fd);
	return t;
}

static int
cmd_info(int argc, char **argv)
{
	struct symtab *t;
	struct buildid id;
	char hex[BUILDID_HEX_MAX];
	const uint8_t *sum;
	int i;

	if (argc < 3)
		return 2;
	t = open_table(argv[2]);
	symtab_buildid(t, &id);
	buildid_format(&id, hex);
	printf("build_id=%s", hex);
	symtab_altid(t, &id);
	buildid_format(&id, hex);
	printf(" alt=%s source=%s symsource=%s phdrs=%d size=%" PRIu64
	       " sha256=",
	    id.len > 0 ? hex : "-", symtab_source_name(symtab_source(t)),
	    symtab_source_name(symtab_symsource(t)), (int)symtab_phdrs(t),
	    symtab_size(t));
	sum = symtab_checksum(t);
	for (i = 0; i < 32; i++)
		printf("%02x", sum[i]);
	printf("\n");
	symtab_close(t);
	return 0;
}

static const char *
status_name(enum symtab_status s)
{
	return s == SYMTAB_OK     ? "ok"
	    : s == SYMTAB_NO_LINE ? "no_line"
				  : "no_symbol";
}

static void
print_name(const char *name)
{
	char *d = demangle_name(name);

	fputs(d != NULL ? d : name != NULL ? name : "??", stdout);
	free(d);
}

static void
lookup_one(const struct symtab *t, struct symtab_result *r, const char *s)
{
	uint64_t va = strtoull(s, NULL, 16);
	size_t i;

	symtab_lookup(t, va, r);
	printf("@%" PRIx64 " %s ", va, status_name(r->status));
	print_name(r->symbol);
	printf(" %" PRIx64 " %d %" PRIx64 "\n", r->sym_addr, r->nearest,
	    r->line_addr);
	for (i = 0; i < r->nframes; i++) {
		const struct symtab_frame *f = &r->frames[i];

		printf("F\t");
		print_name(f->function);
		printf("\t%s\t%u\t%u\t%d\n", f->file != NULL ? f->file : "??",
		    f->line, f->column, f->inlined);
	}
}

static int
cmd_lookup(int argc, char **argv)
{
	struct symtab_result *r = malloc(sizeof(*r));
	struct symtab *t;
	char line[256];
	int i;

	if (argc < 3 || r == NULL)
		return 2;
	t = open_table(argv[2]);
	for (i = 3; i < argc; i++)
		lookup_one(t, r, argv[i]);
	if (argc == 3)
		while (fgets(line, sizeof(line), stdin) != NULL)
			lookup_one(t, r, line);
	symtab_close(t);
	free(r);
	return 0;
}

static int
cmd_bench(int argc, char **argv)
{
	struct symtab_result *r = malloc(sizeof(*r));
	uint64_t *addr = malloc(ADDRS_MAX * sizeof(*addr)), sink = 0;
	size_t n = 0, i;
	struct timespec t0, t1;
	struct symtab *t;
	char line[256];
	long rounds, k;
	double secs;

	if (argc < 4 || r == NULL || addr == NULL)
		return 2;
	t = open_table(argv[2]);
	rounds = strtol(argv[3], NULL, 10);
	while (n < ADDRS_MAX && fgets(line, sizeof(line), stdin) != NULL)
		addr[n++] = strtoull(line, NULL, 16);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (k = 0; k < rounds; k++)
		for (i = 0; i < n; i++) {
			symtab_lookup(t, addr[i], r);
			sink += r->nframes;
		}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs =
	    (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("lookups=%ld seconds=%.3f lookups_per_second=%.0f "
	       "frames=%" PRIu64 "\n",
	    rounds * (long)n, secs,
	    secs > 0 ? (double)rounds * (double)n / secs : 0, sink);
	symtab_close(t);
	free(addr);
	free(r);
	return 0;
}

static double
since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) +
	    (t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static int
cmd_answer(int argc, char **argv)
{
	struct symjson_limits lim = { 100000, 1000, 64u << 20 };
	struct symjson_answer_module mod = { SYMJSON_OK, NULL, NULL };
	struct jbuf body = { .max = 64u << 20 }, out;
	struct symjson_request req;
	struct buildid id;
	char hex[BUILDID_HEX_MAX], line[256], why[256];
	struct timespec t0;
	double parse = 0, write = 0;
	long frames, rounds, k, n = 0;
	size_t size = 0;

	if (argc < 5)
		return 2;
	mod.table = open_table(argv[2]);
	frames = strtol(argv[3], NULL, 10);
	rounds = strtol(argv[4], NULL, 10);
	symtab_buildid(mod.table, &id);
	buildid_format(&id, hex);
	jbuf_fmt(&body, "{\"modules\":[{\"build_id\":\"%s\"}],\"frames\":[",
	    hex);
	while (n < frames && fgets(line, sizeof(line), stdin) != NULL)
		jbuf_fmt(&body,
		    "%s{\"module\":0,\"addr\":\"0x%llx\","
		    "\"return_address\":true}",
		    n++ > 0 ? "," : "", strtoull(line, NULL, 16) + 1);
	jbuf_put(&body, "]}", 2);
	for (k = 0; k < rounds && !body.full; k++) {
		memset(&out, 0, sizeof(out));
		out.max = 256u << 20;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (symjson_parse_request(body.p, body.len, &lim, &req, why,
			sizeof(why)) != 0) {
			fprintf(stderr, "symtool: answer: %s\n", why);
			return 1;
		}
		parse += since(&t0);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (symjson_write_answer(&out, &req, &mod) == -1) {
			fprintf(stderr, "symtool: answer: out of room\n");
			return 1;
		}
		write += since(&t0);
		size = out.len;
		symjson_request_free(&req);
		jbuf_free(&out);
	}
	printf("frames=%ld rounds=%ld parse_ms=%.3f answer_ms=%.3f "
	       "answer_bytes=%zu\n",
	    n, rounds, rounds > 0 ? parse * 1e3 / (double)rounds : 0,
	    rounds > 0 ? write * 1e3 / (double)rounds : 0, size);
	jbuf_free(&body);
	symtab_close((struct symtab *)mod.table);
	return 0;
}

int
main(int argc, char **argv)
{
	int rc = 2;

	if (elf_init() == -1)
		return 1;
	if (argc >= 2 && strcmp(argv[1], "build") == 0)
		rc = cmd_build(argc, argv);
	else if (argc >= 2 && strcmp(argv[1], "info") == 0)
		rc = cmd_info(argc, argv);
	else if (argc >= 2 && strcmp(argv[1], "lookup") == 0)
		rc = cmd_lookup(argc, argv);
	else if (argc >= 2 && strcmp(argv[1], "bench") == 0)
		rc = cmd_bench(argc, argv);
	else if (argc >= 2 && strcmp(argv[1], "answer") == 0)
		rc = cmd_answer(argc, argv);
	if (rc == 2)
		fprintf(stderr,
		    "usage: symtool build|info|lookup|bench|answer ...\n");
	return rc;
}
