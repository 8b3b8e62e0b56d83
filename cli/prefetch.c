/*
 * cli/prefetch.c: dbgmirror prefetch.
 *
 * First the build-ids are gathered, each with where it came from: an
 * operand that is a build-id is taken as it is; an ELF file gives its own
 * id and those of the libraries it loads (indexer/needed.h); a core file
 * the ids of every object it had mapped (indexer/core.h), falling back to
 * the file on this machine when the core's memory lacks an object's note;
 * a directory, all of that for every file under it.  Then the daemon is
 * asked for the debuginfo (and with --executable the executable) of each
 * id, --jobs at a time (fetchers/batch.h): an answer with X-Cache: HIT was
 * already cached, another 200 was fetched (its body read to the end, so
 * the fill is over: verified and kept), a 404 is missing, anything else
 * failed.  On a terminal a progress bar is redrawn on standard error;
 * otherwise each outcome is a line on standard output.  The summary line
 * comes last.
 */
#include "cli/prefetch.h"

#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/clock.h"
#include "fetchers/batch.h"
#include "indexer/buildid.h"
#include "indexer/core.h"
#include "indexer/elf.h"
#include "indexer/file.h"
#include "indexer/needed.h"

/* Longest token read from standard input. */
#define TOKEN_MAX PATH_MAX
/* Width of the progress bar, in characters. */
#define BAR_WIDTH 30
/* The bar is redrawn at most this often, in nanoseconds. */
#define BAR_EVERY_NS (100 * 1000 * 1000)

enum outcome {
	OUT_FETCHED,
	OUT_CACHED,
	OUT_MISSING,
	OUT_FAILED,
	OUT_N,
};

static const char *const outcome_words[OUT_N] = {
	"fetched",
	"cached",
	"missing",
	"failed",
};

struct want {
	struct buildid id;
	char *from; /* the file or operand it came from */
};

/* One request to the daemon. */
struct ask {
	struct prefetch *pf;
	const struct want *w;
	const char *kind;
};

struct prefetch {
	const struct prefetch_opts *o;
	struct want *v;
	size_t n, cap;
	struct needed *needed;
	int bad; /* an operand was neither id nor file */
	int lost; /* ids were lost for want of memory */
	/* While asking. */
	struct ask *asks;
	size_t nasks, done;
	uint64_t counts[OUT_N];
	int tty;
	int64_t drawn_ns; /* when the bar was last drawn */
};

/* The prefetch of the current directory walk (nftw has no argument). */
static struct prefetch *walking;

static void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
warn(const char *fmt, ...)
{
	va_list ap;

	fputs("dbgmirror: prefetch: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Remember id, from from (out of memory: said once, and the run fails). */
static void
want_add(struct prefetch *pf, const struct buildid *id, const char *from)
{
	struct want *v;
	size_t cap;

	if (id->len == 0)
		return;
	if (pf->n == pf->cap) {
		cap = pf->cap == 0 ? 64 : 2 * pf->cap;
		if ((v = realloc(pf->v, cap * sizeof(*v))) == NULL)
			goto lost;
		pf->v = v;
		pf->cap = cap;
	}
	if ((pf->v[pf->n].from = strdup(from)) == NULL)
		goto lost;
	pf->v[pf->n].id = *id;
	pf->n++;
	return;
lost:
	if (!pf->lost)
		warn("out of memory: build-ids left out");
	pf->lost = 1;
}

/* The build-id of the ELF file at path (len 0 when it has none). */
static int
file_buildid(const char *path, struct buildid *id)
{
	struct elf_info info;
	struct stat st;
	char err[256];
	int fd, rc;

	id->len = 0;
	if ((fd = file_open_regular(path, &st)) == -1)
		return -1;
	rc = elf_read_info(fd, &info, err, sizeof(err));
	close(fd);
	if (rc == 0)
		*id = info.id;
	return rc;
}

static void
library_cb(const char *name, const char *path, const char *by, void *arg)
{
	struct prefetch *pf = arg;
	struct buildid id;

	if (path == NULL) {
		warn("%s (needed by %s): not found", name, by);
		return;
	}
	if (file_buildid(path, &id) == 0 && id.len > 0)
		want_add(pf, &id, path);
}

static void
module_cb(const struct core_module *m, void *arg)
{
	struct prefetch *pf = arg;
	struct buildid id = m->id;

	if (m->elf == 0)
		return; /* not an ELF object: data the process mapped */
	/* Its headers not in the core: the file here, if it is still there. */
	if (m->elf == -1) {
		if (m->path[0] != '/' || file_buildid(m->path, &id) != 0 ||
		    id.len == 0)
			return;
		warn("%s: not in the core, build-id read from the file",
		    m->path);
	}
	if (id.len == 0) {
		warn("%s: no build-id found", m->path);
		return;
	}
	want_add(pf, &id, m->path);
}

/*
 * An ELF file: a core's objects, or its own id and its libraries'.
 * quiet (a file found in a directory): one that is not ELF, or has no
 * build-id, is skipped silently, one that cannot be read is no usage
 * error.  An operand that gives no build-id says so and is one.
 */
static void
add_file(struct prefetch *pf, const char *path, int quiet)
{
	struct elf_info info;
	struct stat st;
	char err[256];
	size_t before = pf->n;
	int fd, rc;

	if ((fd = file_open_regular(path, &st)) == -1) {
		warn("%s: %s", path, strerror(errno));
		if (!quiet)
			pf->bad = 1;
		return;
	}
	rc = core_modules(fd, module_cb, pf, err, sizeof(err));
	if (rc == 0) {
		close(fd);
		/* A core: its objects are added. */
		if (pf->n == before && !quiet) {
			warn("%s: a core file without an object that has a "
			     "build-id",
			    path);
			pf->bad = 1;
		}
		return;
	}
	if (rc == ELF_NOTFOUND)
		rc = elf_read_info(fd, &info, err, sizeof(err));
	close(fd);
	if (rc == ELF_NOTFOUND) {
		if (!quiet) {
			warn("%s: not an ELF file", path);
			pf->bad = 1;
		}
		return;
	}
	if (rc == -1) {
		warn("%s: %s", path, err);
		if (!quiet)
			pf->bad = 1;
		return;
	}
	if (info.id.len == 0) {
		if (!quiet) {
			warn("%s: an ELF file without a build-id", path);
			pf->bad = 1;
		}
		return;
	}
	want_add(pf, &info.id, path);
	if (needed_add(pf->needed, path, library_cb, pf, err, sizeof(err)) ==
	    -1)
		warn("%s: %s", path, err);
}

static int
walk_cb(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)ftw;
	if (type == FTW_F && S_ISREG(st->st_mode))
		add_file(walking, path, 1);
	return 0;
}

/* One operand: a build-id (from where: "argument" or "standard input"),
 * a file or a directory. */
static void
add_operand(struct prefetch *pf, const char *arg, const char *where)
{
	struct buildid id;
	struct stat st;
	const char *why;

	if (stat(arg, &st) == 0) {
		if (S_ISDIR(st.st_mode)) {
			walking = pf;
			if (nftw(arg, walk_cb, 16, FTW_PHYS) == -1)
				warn("%s: %s", arg, strerror(errno));
			walking = NULL;
		} else {
			add_file(pf, arg, 0);
		}
		return;
	}
	if (buildid_parse(&id, arg, strlen(arg), &why) == 0) {
		want_add(pf, &id, where);
		return;
	}
	warn("%s: neither a file nor a build-id (%s)", arg, why);
	pf->bad = 1;
}

/* Operands from standard input, separated by white space. */
static void
add_stdin(struct prefetch *pf)
{
	char tok[TOKEN_MAX];
	size_t n = 0;
	int ch;

	for (;;) {
		ch = getchar();
		if (ch == EOF || isspace(ch)) {
			if (n > 0) {
				tok[n] = '\0';
				add_operand(pf, tok, "standard input");
				n = 0;
			}
			if (ch == EOF)
				return;
		} else if (n + 1 < sizeof(tok)) {
			tok[n++] = (char)ch;
		}
	}
}

static int
want_cmp(const void *a, const void *b)
{
	const struct want *x = a, *y = b;

	if (x->id.len != y->id.len)
		return x->id.len < y->id.len ? -1 : 1;
	return memcmp(x->id.bytes, y->id.bytes, x->id.len);
}

/* Sort the ids and keep one of each (with the origin of any of them). */
static void
want_unique(struct prefetch *pf)
{
	size_t i, k = 0;

	if (pf->n == 0)
		return; /* qsort() takes no NULL array, even of nothing */
	qsort(pf->v, pf->n, sizeof(*pf->v), want_cmp);
	for (i = 0; i < pf->n; i++) {
		if (k > 0 && want_cmp(&pf->v[k - 1], &pf->v[i]) == 0) {
			free(pf->v[i].from);
			continue;
		}
		pf->v[k++] = pf->v[i];
	}
	pf->n = k;
}

/* The progress bar, redrawn in place on standard error. */
static void
progress_draw(struct prefetch *pf, int last)
{
	char bar[BAR_WIDTH + 1];
	size_t fill = pf->nasks > 0 ? pf->done * BAR_WIDTH / pf->nasks : 0, i;

	for (i = 0; i < BAR_WIDTH; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[BAR_WIDTH] = '\0';
	fprintf(stderr,
	    "\r[%s] %zu/%zu  fetched %" PRIu64 "  cached %" PRIu64
	    "  missing %" PRIu64 "  failed %" PRIu64 "%s",
	    bar, pf->done, pf->nasks, pf->counts[OUT_FETCHED],
	    pf->counts[OUT_CACHED], pf->counts[OUT_MISSING],
	    pf->counts[OUT_FAILED], last ? "\n" : "");
	fflush(stderr);
}

static void
tick_cb(void *arg)
{
	struct prefetch *pf = arg;
	int64_t now;

	if (!pf->tty)
		return;
	now = clock_mono_ns();
	if (now - pf->drawn_ns < BAR_EVERY_NS && pf->done < pf->nasks)
		return;
	pf->drawn_ns = now;
	progress_draw(pf, 0);
}

static void
done_cb(void *arg, const struct batch_result *r)
{
	struct ask *a = arg;
	struct prefetch *pf = a->pf;
	char hex[BUILDID_HEX_MAX], why[300] = "";
	enum outcome out;

	if (r->error != NULL) {
		out = OUT_FAILED;
		snprintf(why, sizeof(why), "  (%s)", r->error);
	} else if (r->status == 200) {
		out = r->hit ? OUT_CACHED : OUT_FETCHED;
	} else if (r->status == 404) {
		out = OUT_MISSING;
	} else {
		out = OUT_FAILED;
		snprintf(why, sizeof(why), "  (HTTP %ld)", r->status);
	}
	pf->counts[out]++;
	pf->done++;
	buildid_format(&a->w->id, hex);
	/* On a terminal only failures get a line, above the bar. */
	if (pf->tty && out != OUT_FAILED)
		return;
	if (pf->tty)
		fputs("\r\033[K", stderr);
	fprintf(pf->tty || pf->o->json ? stderr : stdout,
	    "%-7s  %s %-10s  %s%s\n", outcome_words[out], hex, a->kind,
	    a->w->from, why);
}

/* Ask the daemon for everything gathered. */
static int
ask_all(struct prefetch *pf)
{
	static const char *const kinds[] = { "debuginfo", "executable" };
	size_t nk = pf->o->executables ? 2 : 1, i, k;
	char url[4096], hex[BUILDID_HEX_MAX], err[256];
	struct batch *b;
	int rc;

	if ((b = batch_new(pf->o->jobs, err, sizeof(err))) == NULL) {
		warn("%s", err);
		return -1;
	}
	if ((pf->asks = calloc(pf->n * nk + 1, sizeof(*pf->asks))) == NULL) {
		batch_free(b);
		warn("out of memory");
		return -1;
	}
	for (i = 0; i < pf->n; i++) {
		buildid_format(&pf->v[i].id, hex);
		for (k = 0; k < nk; k++) {
			struct ask *a = &pf->asks[pf->nasks++];

			a->pf = pf;
			a->w = &pf->v[i];
			a->kind = kinds[k];
			snprintf(url, sizeof(url), "%s/buildid/%s/%s",
			    pf->o->url, hex, a->kind);
			if (batch_add(b, url, done_cb, a) == -1) {
				batch_free(b);
				warn("out of memory");
				return -1;
			}
		}
	}
	rc = batch_run(b, tick_cb, pf, err, sizeof(err));
	if (rc == -1)
		warn("%s", err);
	if (pf->tty)
		progress_draw(pf, 1);
	batch_free(b);
	return rc;
}

int
prefetch_run(const struct prefetch_opts *o, char *const *operands, size_t n)
{
	static const struct needed_paths sys = { NULL, NULL, NULL };
	struct needed_paths paths = sys;
	struct prefetch pf;
	size_t i;
	int rc;

	memset(&pf, 0, sizeof(pf));
	pf.o = o;
	pf.tty = isatty(STDERR_FILENO);
	paths.ld_library_path = getenv("LD_LIBRARY_PATH");
	if ((pf.needed = needed_new(&paths)) == NULL) {
		warn("out of memory");
		return 1;
	}
	if (n == 0)
		add_stdin(&pf);
	for (i = 0; i < n; i++) {
		if (strcmp(operands[i], "-") == 0)
			add_stdin(&pf);
		else
			add_operand(&pf, operands[i], "argument");
	}
	needed_free(pf.needed);
	want_unique(&pf);
	rc = pf.n > 0 ? ask_all(&pf) : 0;
	printf(o->json ? "{\"fetched\":%" PRIu64 ",\"cached\":%" PRIu64
			 ",\"missing\":%" PRIu64 ",\"failed\":%" PRIu64 "}\n"
		       : "fetched %" PRIu64 ", already cached %" PRIu64
			 ", missing %" PRIu64 ", failed %" PRIu64 "\n",
	    pf.counts[OUT_FETCHED], pf.counts[OUT_CACHED],
	    pf.counts[OUT_MISSING], pf.counts[OUT_FAILED]);
	for (i = 0; i < pf.n; i++)
		free(pf.v[i].from);
	free(pf.v);
	free(pf.asks);
	if (pf.bad)
		return 2;
	return rc == -1 || pf.lost || pf.counts[OUT_FAILED] > 0 ? 1 : 0;
}
