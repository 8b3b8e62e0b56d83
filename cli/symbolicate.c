/*
 * cli/symbolicate.c: dbgmirror symbolicate: the addresses of a build-id
 * (or of an ELF file's), or the frames perf script could not name,
 * symbolized by the daemon's POST /symbolicate and printed as
 * eu-addr2line -f -i -C (or perf script) prints them.
 *
 * Everything is checked before the first request: a bad build-id, an
 * address that is not hex or is beyond 64 bits, options that do not go
 * together are bad usage (2).  Frames go in requests of at most
 * symbolicate-max-frames (and -max-modules, and -max-body bytes), one
 * at a time.
 * A request whose modules are still being fetched or built is asked
 * again for its pending frames, after the daemon's Retry-After, until
 * --timeout-ms has passed since it was first sent; a module still
 * pending then is given up (and not asked about again).
 *
 * perf script's text is read a batch at a time: lines are kept until
 * their distinct unknown frames fill a request (or 32 MiB of lines are
 * kept), then written back symbolized, so memory stays bounded however
 * long the profile is.  Answers are remembered by (build-id, offset,
 * return address) for the whole run.  One thread.
 */
#include <sys/stat.h>

#include <errno.h>
#include <inttypes.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/perfscript.h"
#include "cli/symout.h"
#include "daemon/clock.h"
#include "fetchers/ask.h"
#include "indexer/elf.h"
#include "indexer/file.h"
#include "indexer/json.h"
#include "symbolizer/symjson.h"

/* --timeout-ms when it is not given. */
#define TIMEOUT_DEFAULT_MS 60000
/* The largest answer taken: 10,000 frames of deep inline chains. */
#define ANSWER_MAX (256u << 20)
/* The most bytes of perf script lines kept before a request is sent. */
#define LINES_MAX (32u << 20)
/* The shortest and longest wait before a pending request is asked again. */
#define RETRY_MIN_MS 100
#define RETRY_MAX_MS 5000

/* A module as the run knows it. */
struct module {
	struct buildid id;
	enum symout_status status; /* SYMOUT_OK until an answer says more */
	int dead; /* missing, error or given up pending: not asked again */
	char *reason;
	char *json; /* its object in the last answer */
};

/* A frame to ask about, and its answer once there is one. */
struct ask {
	uint32_t module;
	uint64_t addr;
	int ret;
	struct symout_addr *answer;
};

struct run {
	struct cli *c;
	char url[4200];
	struct ask_opts post;
	char token[1024];
	enum symjson_mode mode;
	uint64_t start, map_offset;
	int demangle;
	long timeout_ms;
	size_t max_frames, max_modules, max_body;
	struct module *modules;
	size_t nmodules;
	size_t requests; /* answers received */
	char *body; /* the last answer's, for --json of one answer */
	int failed; /* a request failed: the exit status is 1 */
};

/* ------------------------------------------------------------- helpers */

/*
 * An address as eu-addr2line takes it: hex digits, "0x" optional, blanks
 * around.  0; -1 not hex; -2 beyond 64 bits.
 */
static int
parse_hex(const char *s, uint64_t *v)
{
	size_t n, i = 0;
	uint64_t x = 0;
	int d;

	s += strspn(s, " \t");
	n = strcspn(s, " \t\r\n");
	if (s[n + strspn(s + n, " \t\r\n")] != '\0')
		return -1;
	if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		i = 2;
	if (i == n)
		return -1;
	for (; i < n; i++) {
		if ((d = buildid_hexval((unsigned char)s[i])) == -1)
			return -1;
		if (x >> 60 != 0)
			return -2;
		x = x << 4 | (uint64_t)d;
	}
	*v = x;
	return 0;
}

/* An option's hex value into *v; 2 (bad usage) having said why. */
static int
option_hex(const char *opt, const char *s, uint64_t *v)
{
	int rc = parse_hex(s, v);

	if (rc == 0)
		return 0;
	fprintf(stderr, "dbgmirror: symbolicate: --%s %s: %s\n", opt, s,
	    rc == -2 ? "beyond 64 bits" : "not a hex address");
	return 2;
}

static void
sleep_ms(int64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000),
		(long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* The module of id, added when it is new; its index, or -1 (memory). */
static long
module_of(struct run *r, const struct buildid *id)
{
	struct module *m;
	size_t i;

	for (i = 0; i < r->nmodules; i++)
		if (buildid_equal(&r->modules[i].id, id))
			return (long)i;
	if ((m = realloc(r->modules, (r->nmodules + 1) * sizeof(*m))) == NULL)
		return -1;
	r->modules = m;
	m = &r->modules[r->nmodules];
	memset(m, 0, sizeof(*m));
	m->id = *id;
	return (long)r->nmodules++;
}

/* ------------------------------------------------------------ requests */

/*
 * The body of a request for the frames at idx[0..n) of asks: their
 * modules (numbered in the order first met, through local[]), then the
 * frames.
 */
static int
request_body(struct run *r, const struct ask *asks, const size_t *idx, size_t n,
    long timeout_ms, struct jbuf *b, long *local, size_t *nlocal)
{
	static const char *const modes[] = { "va", "file_offset", "abs" };
	char hex[BUILDID_HEX_MAX];
	size_t i, k;

	*nlocal = 0;
	jbuf_put(b, "{\"modules\":[", 12);
	for (i = 0; i < r->nmodules; i++)
		local[i] = -1;
	for (i = 0; i < n; i++) {
		const struct ask *a = &asks[idx[i]];

		if (local[a->module] != -1)
			continue;
		local[a->module] = (long)(*nlocal)++;
		buildid_format(&r->modules[a->module].id, hex);
		jbuf_fmt(b, "%s{\"build_id\":\"%s\",\"addr_mode\":\"%s\"",
		    *nlocal > 1 ? "," : "", hex, modes[r->mode]);
		if (r->mode == SYMJSON_ABS)
			jbuf_fmt(b,
			    ",\"start\":\"0x%" PRIx64
			    "\",\"file_offset\":\"0x%" PRIx64 "\"",
			    r->start, r->map_offset);
		jbuf_put(b, "}", 1);
	}
	jbuf_put(b, "],\"frames\":[", 12);
	for (k = 0; k < n; k++) {
		const struct ask *a = &asks[idx[k]];

		jbuf_fmt(b, "%s{\"module\":%ld,\"addr\":\"0x%" PRIx64 "\"%s}",
		    k > 0 ? "," : "", local[a->module], a->addr,
		    a->ret ? ",\"return_address\":true" : "");
	}
	jbuf_fmt(b, "],\"options\":{\"demangle\":%s,\"timeout_ms\":%ld}}",
	    r->demangle ? "true" : "false", timeout_ms);
	return b->full ? -1 : 0;
}

/* Why the daemon did not answer 200, for a person. */
static void
refused(struct run *r, const struct ask_answer *pa)
{
	size_t n = pa->body != NULL ? strcspn(pa->body, "\r\n") : 0;

	fprintf(stderr, "dbgmirror: symbolicate: %s: HTTP %ld%s%.*s%s\n",
	    r->url, pa->status, n > 0 ? ": " : "", (int)(n > 300 ? 300 : n),
	    n > 0 ? pa->body : "",
	    pa->status == 401       ? " (a token: --token-file FILE or "
				      "DBGMIRROR_TOKEN)"
		: pa->status == 404 ? " (a dbgmirrord without /symbolicate?)"
				    : "");
}

/* Take what an answer says of the modules of a request. */
static void
take_modules(struct run *r, struct symout_answer *ans, const long *local)
{
	struct module *m;
	size_t i;

	for (i = 0; i < r->nmodules; i++) {
		if (local[i] == -1)
			continue;
		m = &r->modules[i];
		m->status = ans->modules[local[i]].status;
		free(m->reason);
		free(m->json);
		m->reason = ans->modules[local[i]].reason;
		m->json = ans->modules[local[i]].json;
		ans->modules[local[i]].reason = NULL;
		ans->modules[local[i]].json = NULL;
		if (m->status == SYMOUT_MISSING || m->status == SYMOUT_ERROR)
			m->dead = 1;
	}
}

/*
 * One request for idx[0..n) of asks, asked again for its pending frames
 * until the deadline.  0; -1 having said why no answer came.
 */
static int
ask_batch(struct run *r, struct ask *asks, size_t *idx, size_t n)
{
	int64_t deadline = clock_mono_ns() + (int64_t)r->timeout_ms * 1000000;
	struct jbuf b = { .max = 64u << 20 };
	struct ask_answer pa;
	struct symout_answer ans;
	long *local, left, wait;
	size_t nlocal, i, still;
	char err[600];

	if ((local = calloc(r->nmodules, sizeof(*local))) == NULL)
		return -1;
	while (n > 0) {
		left = (long)((deadline - clock_mono_ns()) / 1000000);
		left = left < 0                  ? 0
		    : left > SYMJSON_TIMEOUT_MAX ? SYMJSON_TIMEOUT_MAX
						 : left;
		jbuf_cut(&b, 0);
		if (request_body(r, asks, idx, n, left, &b, local, &nlocal) ==
		    -1) {
			fprintf(stderr,
			    "dbgmirror: symbolicate: out of memory\n");
			break;
		}
		/* The daemon holds the request up to left ms, then answers. */
		r->post.timeout_ms = left + 30000;
		if (ask_request("POST", r->url, b.p, b.len, &r->post, &pa, err,
			sizeof(err)) == -1) {
			fprintf(stderr, "dbgmirror: symbolicate: %s\n", err);
			break;
		}
		if (pa.status != 200) {
			refused(r, &pa);
			ask_answer_free(&pa);
			break;
		}
		if (symout_parse(pa.body, pa.len, &ans, err, sizeof(err)) ==
			-1 ||
		    ans.naddrs != n || ans.nmodules != nlocal) {
			fprintf(stderr,
			    "dbgmirror: symbolicate: %s: a bad answer (%s)\n",
			    r->url,
			    ans.naddrs != n || ans.nmodules != nlocal
				? "not one entry per frame and module"
				: err);
			symout_answer_free(&ans);
			ask_answer_free(&pa);
			break;
		}
		r->requests++;
		free(r->body);
		r->body = pa.body;
		take_modules(r, &ans, local);
		for (i = still = 0; i < n; i++) {
			struct ask *a = &asks[idx[i]];

			symout_addr_free(a->answer);
			*a->answer = ans.addrs[i];
			memset(&ans.addrs[i], 0, sizeof(ans.addrs[i]));
			if (a->answer->status == SYMOUT_PENDING)
				idx[still++] = idx[i];
		}
		symout_answer_free(&ans);
		n = still;
		left = (long)((deadline - clock_mono_ns()) / 1000000);
		if (n > 0 && left <= 0) {
			/* Given up: said at the end, not asked again. */
			for (i = 0; i < n; i++)
				r->modules[asks[idx[i]].module].dead = 1;
			n = 0;
		}
		wait =
		    pa.retry_after > 0 ? pa.retry_after * 1000 : RETRY_MIN_MS;
		wait = wait < RETRY_MIN_MS ? RETRY_MIN_MS
		    : wait > RETRY_MAX_MS  ? RETRY_MAX_MS
					   : wait;
		if (n > 0)
			sleep_ms(wait < left ? wait : left);
	}
	jbuf_free(&b);
	free(local);
	if (n > 0)
		r->failed = 1;
	return n > 0 ? -1 : 0;
}

/*
 * The answer of a frame whose module is dead (missing, failed, given up
 * pending), as the daemon writes one for a module that is not ok.
 */
static int
dead_answer(const struct run *r, struct ask *a)
{
	const struct module *m = &r->modules[a->module];
	struct jbuf b = { .max = 1u << 20 };

	a->answer->status = m->status;
	jbuf_fmt(&b, "{\"status\":\"%s\",\"addr\":\"0x%" PRIx64 "\"",
	    symout_status_name(m->status), a->addr);
	if (m->reason != NULL) {
		jbuf_put(&b, ",\"reason\":", 10);
		jbuf_str(&b, m->reason, strlen(m->reason));
	}
	jbuf_put(&b, "}", 1);
	if (b.full) {
		jbuf_free(&b);
		return -1;
	}
	a->answer->json = b.p;
	return 0;
}

/*
 * The most bytes request_body() writes: the options and brackets, a
 * module (an abs one with the longest build-id), a frame (a return
 * address with the longest module index and address).
 */
#define BODY_FIXED 128
#define BODY_MODULE 256
#define BODY_FRAME 80

/*
 * Ask about every frame of asks[0..n), in requests of at most max_frames
 * frames, max_modules modules and max_body bytes.  A frame of a module that is dead is
 * not asked: it gets the module's status.  0, or -1 when a request
 * failed.
 */
static int
ask_all(struct run *r, struct ask *asks, size_t n)
{
	size_t *idx, k, i, nmods, bytes, more;
	char *seen;
	int rc = 0;

	/* Until an answer says more, a frame is unanswered. */
	for (i = 0; i < n; i++) {
		if (asks[i].answer == NULL &&
		    (asks[i].answer = calloc(1, sizeof(*asks[i].answer))) ==
			NULL)
			return -1;
		asks[i].answer->status = SYMOUT_ERROR;
	}
	/* After a request failed, nothing more is sent. */
	if (r->failed)
		return -1;
	if ((idx = calloc(r->max_frames, sizeof(*idx))) == NULL ||
	    (seen = calloc(r->nmodules, 1)) == NULL) {
		free(idx);
		return -1;
	}
	for (i = 0; i < n && rc == 0;) {
		memset(seen, 0, r->nmodules);
		bytes = BODY_FIXED;
		for (k = nmods = 0; i < n && k < r->max_frames; i++) {
			uint32_t m = asks[i].module;

			if (r->modules[m].dead) {
				if (dead_answer(r, &asks[i]) == -1)
					rc = -1;
				continue;
			}
			more = BODY_FRAME + (seen[m] ? 0 : BODY_MODULE);
			if ((!seen[m] && nmods == r->max_modules) ||
			    (k > 0 && bytes + more > r->max_body))
				break;
			bytes += more;
			nmods += !seen[m];
			seen[m] = 1;
			idx[k++] = i;
		}
		if (k > 0 && rc == 0)
			rc = ask_batch(r, asks, idx, k);
	}
	free(seen);
	free(idx);
	return rc;
}

/* What is left unknown of a module, said once at the end. */
static void
say_modules(const struct run *r)
{
	char hex[BUILDID_HEX_MAX];
	const struct module *m;
	size_t i;

	for (i = 0; i < r->nmodules; i++) {
		m = &r->modules[i];
		buildid_format(&m->id, hex);
		if (m->status == SYMOUT_MISSING)
			fprintf(stderr,
			    "dbgmirror: symbolicate: %s: missing: no source "
			    "of the daemon has it\n",
			    hex);
		else if (m->status == SYMOUT_PENDING)
			fprintf(stderr,
			    "dbgmirror: symbolicate: %s: still pending after "
			    "%ld ms (being fetched or its table built): ask "
			    "again later, or give a longer --timeout-ms\n",
			    hex, r->timeout_ms);
		else if (m->status == SYMOUT_ERROR)
			fprintf(stderr,
			    "dbgmirror: symbolicate: %s: error: %s\n", hex,
			    m->reason != NULL ? m->reason : "(no reason)");
	}
}

/* ------------------------------------------------------------ addresses */

/* --json: the one answer, or the answers joined in request order. */
static void
print_json(const struct run *r, const struct ask *asks, size_t n)
{
	size_t i;

	if (r->requests == 1 && r->body != NULL) {
		printf("%s\n", r->body);
		return;
	}
	printf("{\"modules\":[");
	for (i = 0; i < r->nmodules; i++)
		printf("%s%s", i > 0 ? "," : "",
		    r->modules[i].json != NULL ? r->modules[i].json : "null");
	printf("],\"frames\":[");
	for (i = 0; i < n; i++)
		printf("%s%s", i > 0 ? "," : "",
		    asks[i].answer != NULL ? asks[i].answer->json : "null");
	printf("]}\n");
}

/* The addresses of the operands after the first, or of standard input. */
static int
read_addrs(struct run *r, struct ask **asksp, size_t *np)
{
	struct cli *c = r->c;
	struct ask *asks = NULL, *na;
	size_t n = 0, cap = 0, i = 1, lineno = 0, lcap = 0;
	char *line = NULL;
	const char *s;
	uint64_t v;
	int rc;

	for (;;) {
		if (c->noperands > 1) {
			if (i == c->noperands)
				break;
			s = c->operands[i++];
		} else {
			if (getline(&line, &lcap, stdin) == -1)
				break;
			lineno++;
			if (line[strspn(line, " \t\r\n")] == '\0')
				continue;
			s = line;
		}
		if ((rc = parse_hex(s, &v)) != 0) {
			fprintf(stderr, "dbgmirror: symbolicate: ");
			if (c->noperands <= 1)
				fprintf(stderr,
				    "standard input, line %zu: ", lineno);
			fprintf(stderr, "%.*s: %s\n", (int)strcspn(s, "\r\n"),
			    s,
			    rc == -2 ? "beyond 64 bits"
				     : "not a hex address (0x optional)");
			free(line);
			free(asks);
			return 2;
		}
		if (n == cap) {
			cap = cap == 0 ? 64 : 2 * cap;
			if ((na = realloc(asks, cap * sizeof(*na))) == NULL) {
				free(line);
				free(asks);
				fprintf(stderr, "dbgmirror: out of memory\n");
				return 1;
			}
			asks = na;
		}
		memset(&asks[n], 0, sizeof(asks[n]));
		asks[n].addr = v;
		asks[n++].ret = c->ret;
	}
	free(line);
	*asksp = asks;
	*np = n;
	return 0;
}

static int
run_addresses(struct run *r)
{
	struct buildid id;
	struct ask *asks = NULL;
	size_t n = 0, i, unanswered = 0;
	int rc;

	if ((rc = cli_operand_id(r->c->operands[0], &id)) != 0)
		return rc;
	if ((rc = read_addrs(r, &asks, &n)) != 0)
		return rc;
	if (module_of(r, &id) == -1) {
		free(asks);
		return 1;
	}
	rc = ask_all(r, asks, n) == -1 ? 1 : 0;
	if (rc == 0 && r->c->json)
		print_json(r, asks, n);
	for (i = 0; i < n; i++) {
		struct symout_addr none = { .status = SYMOUT_PENDING };
		const struct symout_addr *a =
		    asks[i].answer != NULL ? asks[i].answer : &none;

		if (rc == 0 && !r->c->json)
			symout_addr2line(stdout, a, r->demangle);
		unanswered += !symout_answered(a);
		if (asks[i].answer != NULL)
			symout_addr_free(asks[i].answer);
		free(asks[i].answer);
	}
	free(asks);
	say_modules(r);
	return rc != 0 || unanswered > 0 ? 1 : 0;
}

/* ---------------------------------------------------------- perf script */

/* A file perf named, and the module it is (-1: no build-id known). */
struct dso {
	long module;
	char path[];
};

/* One frame's key; its answer once asked, for the whole run. */
struct key {
	uint32_t module;
	int ret;
	uint64_t off;
	struct symout_addr *answer;
	int queued;
};

/* A line kept until its batch is answered. */
struct pline {
	char *text;
	size_t len;
	struct key *key; /* NULL: written as it is */
	struct perfscript_frame f;
};

struct perf {
	struct run *r;
	void *dsos; /* tsearch tree of struct dso */
	void *ids; /* --buildids: tree of struct dso, module set */
	void *keys; /* tree of struct key */
	struct perfscript_maps *maps;
	struct pline *lines;
	size_t nlines, caplines, bytes;
	struct key **batch;
	size_t nbatch;
	/* The frames perf could not name, what became of them. */
	uint64_t frames, answered, named, no_id, no_map;
};

static int
dso_cmp(const void *a, const void *b)
{
	return strcmp(((const struct dso *)a)->path,
	    ((const struct dso *)b)->path);
}

static int
key_cmp(const void *pa, const void *pb)
{
	const struct key *a = pa, *b = pb;

	if (a->module != b->module)
		return a->module < b->module ? -1 : 1;
	if (a->off != b->off)
		return a->off < b->off ? -1 : 1;
	return a->ret - b->ret;
}

/* A tree entry for path[0..n), made when new; NULL out of memory. */
static struct dso *
dso_entry(void **tree, const char *path, size_t n, int *isnew)
{
	struct dso *d = malloc(sizeof(*d) + n + 1), **found;

	if (d == NULL)
		return NULL;
	memcpy(d->path, path, n);
	d->path[n] = '\0';
	d->module = -1;
	if ((found = tsearch(d, tree, dso_cmp)) == NULL) {
		free(d);
		return NULL;
	}
	*isnew = *found == d;
	if (!*isnew)
		free(d);
	return *found;
}

/* --buildids FILE: perf buildid-list's lines.  0, or 2 having said why. */
static int
load_buildids(struct perf *p, const char *file)
{
	FILE *fp;
	char *line = NULL;
	size_t cap = 0, at, end, lineno = 0;
	struct buildid id;
	struct dso *d;
	ssize_t len;
	int isnew, rc = 0;

	if ((fp = fopen(file, "re")) == NULL) {
		fprintf(stderr, "dbgmirror: symbolicate: --buildids %s: %s\n",
		    file, strerror(errno));
		return 2;
	}
	while (rc == 0 && (len = getline(&line, &cap, fp)) != -1) {
		lineno++;
		if (line[strspn(line, " \t\r\n")] == '\0')
			continue;
		if (!perfscript_buildid_parse(line, (size_t)len, &id, &at,
			&end)) {
			fprintf(stderr,
			    "dbgmirror: symbolicate: --buildids %s, line "
			    "%zu: not \"BUILD-ID PATH\" (perf buildid-list)\n",
			    file, lineno);
			rc = 2;
		} else if ((d = dso_entry(&p->ids, line + at, end - at,
				&isnew)) == NULL ||
		    (d->module = module_of(p->r, &id)) == -1) {
			fprintf(stderr, "dbgmirror: out of memory\n");
			rc = 1;
		}
	}
	free(line);
	fclose(fp);
	return rc;
}

/*
 * The module of the DSO perf named: from --buildids when it lists the
 * DSO (the build-id perf recorded, whatever the file holds now), else
 * from the file when it is readable ELF with a build-id; -1 when neither.
 */
static long
dso_module(struct perf *p, const char *path, size_t n)
{
	struct elf_info info;
	struct dso *d, *listed, **found;
	struct stat st;
	char err[256];
	int isnew, fd;

	if ((d = dso_entry(&p->dsos, path, n, &isnew)) == NULL)
		return -1;
	if (!isnew)
		return d->module;
	found = p->ids != NULL ? tfind(d, &p->ids, dso_cmp) : NULL;
	if (found != NULL) {
		listed = *found;
		d->module = listed->module;
	} else if (d->path[0] == '/' &&
	    (fd = file_open_regular(d->path, &st)) != -1) {
		if (elf_read_info(fd, &info, err, sizeof(err)) == 0 &&
		    info.id.len > 0)
			d->module = module_of(p->r, &info.id);
		close(fd);
	}
	return d->module;
}

/* Keep a line; -1 out of memory. */
static struct pline *
keep_line(struct perf *p, const char *text, size_t len)
{
	struct pline *pl;

	if (p->nlines == p->caplines) {
		size_t cap = p->caplines == 0 ? 1024 : 2 * p->caplines;

		if ((pl = realloc(p->lines, cap * sizeof(*pl))) == NULL)
			return NULL;
		p->lines = pl;
		p->caplines = cap;
	}
	pl = &p->lines[p->nlines];
	memset(pl, 0, sizeof(*pl));
	if ((pl->text = malloc(len + 1)) == NULL)
		return NULL;
	memcpy(pl->text, text, len);
	pl->text[len] = '\0';
	pl->len = len;
	p->nlines++;
	p->bytes += len + sizeof(*pl);
	return pl;
}

/* The key of a frame, queued for the next request when it is new. */
static struct key *
frame_key(struct perf *p, uint32_t module, uint64_t off, int ret)
{
	struct key *k = malloc(sizeof(*k)), **found;

	if (k == NULL)
		return NULL;
	memset(k, 0, sizeof(*k));
	k->module = module;
	k->off = off;
	k->ret = ret;
	if ((found = tsearch(k, &p->keys, key_cmp)) == NULL) {
		free(k);
		return NULL;
	}
	if (*found != k) {
		free(k);
		return *found;
	}
	return k;
}

/* Ask about the queued frames, then write the lines kept. */
static int
flush(struct perf *p)
{
	struct ask *asks = NULL;
	size_t i;
	int rc = 0;

	if (p->nbatch > 0) {
		if ((asks = calloc(p->nbatch, sizeof(*asks))) == NULL)
			return -1;
		for (i = 0; i < p->nbatch; i++) {
			asks[i].module = p->batch[i]->module;
			asks[i].addr = p->batch[i]->off;
			asks[i].ret = p->batch[i]->ret;
		}
		rc = ask_all(p->r, asks, p->nbatch);
		for (i = 0; i < p->nbatch; i++)
			p->batch[i]->answer = asks[i].answer;
		free(asks);
		p->nbatch = 0;
	}
	for (i = 0; i < p->nlines; i++) {
		struct pline *pl = &p->lines[i];

		if (pl->key != NULL && pl->key->answer != NULL) {
			perfscript_write(stdout, pl->text, pl->len, &pl->f,
			    pl->key->answer);
			p->answered += symout_answered(pl->key->answer);
			p->named += symout_answered(pl->key->answer) &&
			    pl->key->answer->nframes > 0;
		} else {
			fwrite(pl->text, 1, pl->len, stdout);
			fputc('\n', stdout);
		}
		free(pl->text);
	}
	p->nlines = p->bytes = 0;
	return rc;
}

/*
 * One line of perf script: an mmap event is remembered; a frame perf
 * could not name is given its module and file offset, and queued.
 * *chain says whether the line before was a callchain entry (or a
 * srcline under one), so that this one, when it is an entry too, holds
 * a return address.
 */
static int
perf_line(struct perf *p, char *text, size_t len, int *chain)
{
	struct perfscript_mmap mm;
	struct pline *pl;
	struct key *k;
	uint64_t off;
	long module;
	int leaf, was = *chain;

	if (perfscript_mmap_parse(text, len, &mm) &&
	    perfscript_maps_add(p->maps, text, &mm) == -1)
		return -1;
	*chain = text[0] == '\t' ||
	    (was && len > 2 && text[0] == ' ' && text[1] == ' ' &&
		text[2] != ' ' && text[2] != '\t');
	if ((pl = keep_line(p, text, len)) == NULL)
		return -1;
	if (!perfscript_frame_parse(text, len, &pl->f))
		return 0;
	p->frames++;
	leaf = !pl->f.callchain || !was;
	module =
	    dso_module(p, text + pl->f.dso_at, pl->f.dso_end - pl->f.dso_at);
	if (module == -1) {
		p->no_id++;
		return 0;
	}
	if (perfscript_offset(p->maps, text, &pl->f, &off) == -1) {
		p->no_map++;
		return 0;
	}
	if (p->r->modules[module].dead)
		return 0;
	if ((k = frame_key(p, (uint32_t)module, off, !leaf)) == NULL)
		return -1;
	pl->key = k;
	if (k->answer == NULL && !k->queued) {
		k->queued = 1;
		p->batch[p->nbatch++] = k;
	}
	return 0;
}

static void
key_free(void *k)
{
	struct key *key = k;

	if (key->answer != NULL)
		symout_addr_free(key->answer);
	free(key->answer);
	free(key);
}

static int
run_perf(struct run *r)
{
	struct perf p = { .r = r };
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int chain = 0, rc = 0;

	r->mode = SYMJSON_FILE_OFFSET;
	if (r->c->buildids != NULL &&
	    (rc = load_buildids(&p, r->c->buildids)) != 0)
		goto out;
	if ((p.maps = perfscript_maps_new()) == NULL ||
	    (p.batch = calloc(r->max_frames, sizeof(*p.batch))) == NULL) {
		rc = 1;
		goto out;
	}
	while ((len = getline(&line, &cap, stdin)) != -1) {
		if (len > 0 && line[len - 1] == '\n')
			line[--len] = '\0';
		if (perf_line(&p, line, (size_t)len, &chain) == -1) {
			fprintf(stderr, "dbgmirror: out of memory\n");
			rc = 1;
			goto out;
		}
		if ((p.nbatch == r->max_frames || p.bytes > LINES_MAX) &&
		    flush(&p) == -1)
			rc = 1;
	}
	if (flush(&p) == -1)
		rc = 1;
	say_modules(r);
	if (p.named < p.frames)
		fprintf(stderr,
		    "dbgmirror: symbolicate: %" PRIu64 " of %" PRIu64
		    " unknown frames symbolized; %" PRIu64
		    " in files of no known build-id (--buildids FILE from "
		    "perf buildid-list), %" PRIu64
		    " process addresses no mmap event maps "
		    "(perf script --show-mmap-events)\n",
		    p.named, p.frames, p.no_id, p.no_map);
	if (p.answered < p.frames && rc == 0)
		rc = 1;
out:
	free(line);
	free(p.batch);
	perfscript_maps_free(p.maps);
	tdestroy(p.keys, key_free);
	tdestroy(p.dsos, free);
	tdestroy(p.ids, free);
	free(p.lines);
	return rc;
}

/* ---------------------------------------------------------------- main */

int
cmd_symbolicate(struct cli *c)
{
	struct run r = { .c = c, .demangle = !c->no_demangle };
	char *end;
	size_t i;
	int rc;

	r.mode = SYMJSON_VA;
	r.timeout_ms = TIMEOUT_DEFAULT_MS;
	if (c->mode != NULL) {
		if (strcmp(c->mode, "va") == 0)
			r.mode = SYMJSON_VA;
		else if (strcmp(c->mode, "file_offset") == 0)
			r.mode = SYMJSON_FILE_OFFSET;
		else if (strcmp(c->mode, "abs") == 0)
			r.mode = SYMJSON_ABS;
		else {
			fprintf(stderr,
			    "dbgmirror: symbolicate: --mode %s: va, "
			    "file_offset or abs\n",
			    c->mode);
			return 2;
		}
	}
	if ((r.mode == SYMJSON_ABS) != (c->start != NULL) ||
	    (r.mode == SYMJSON_ABS) != (c->file_offset != NULL)) {
		fprintf(stderr,
		    "dbgmirror: symbolicate: --start and --file-offset go "
		    "with --mode abs, and it needs both\n");
		return 2;
	}
	if (c->start != NULL &&
	    ((rc = option_hex("start", c->start, &r.start)) != 0 ||
		(rc = option_hex("file-offset", c->file_offset,
		     &r.map_offset)) != 0))
		return rc;
	if (c->timeout_ms != NULL) {
		errno = 0;
		r.timeout_ms = strtol(c->timeout_ms, &end, 10);
		if (errno != 0 || end == c->timeout_ms || *end != '\0' ||
		    r.timeout_ms < 0 || r.timeout_ms > SYMJSON_TIMEOUT_MAX) {
			fprintf(stderr,
			    "dbgmirror: symbolicate: --timeout-ms: 0 to %d\n",
			    SYMJSON_TIMEOUT_MAX);
			return 2;
		}
	}
	if (c->perf_script &&
	    (c->noperands > 0 || c->mode != NULL || c->ret || c->json)) {
		fprintf(stderr,
		    "dbgmirror: symbolicate: --perf-script reads perf script's "
		    "output on standard input: no ID, ADDR, --mode, --return "
		    "or --json\n");
		return 2;
	}
	if (!c->perf_script && (c->noperands == 0 || c->buildids != NULL)) {
		fprintf(stderr, "dbgmirror: symbolicate: %s\n",
		    c->noperands == 0
			? "an ID or FILE is needed (or --perf-script)"
			: "--buildids goes with --perf-script");
		return 2;
	}
	if (cli_daemon_url(c, r.url, sizeof(r.url) - 16) == -1) {
		fprintf(stderr,
		    "dbgmirror: symbolicate: no daemon URL (--url "
		    "http://HOST:PORT)\n");
		return 2;
	}
	strcat(r.url, "/symbolicate");
	if (cli_token("symbolicate", c->token_file, r.token, sizeof(r.token)) ==
	    -1)
		return 2;
	r.post.token = r.token[0] != '\0' ? r.token : NULL;
	r.post.ca_file = c->cfg.ca_file;
	r.post.max_answer = ANSWER_MAX;
	r.post.connect_timeout = 10;
	r.max_frames = c->cfg.symbolicate_max_frames;
	r.max_modules = c->cfg.symbolicate_max_modules;
	r.max_body = c->cfg.symbolicate_max_body;
	rc = c->perf_script ? run_perf(&r) : run_addresses(&r);
	for (i = 0; i < r.nmodules; i++) {
		free(r.modules[i].reason);
		free(r.modules[i].json);
	}
	free(r.modules);
	free(r.body);
	if (fflush(stdout) == EOF && rc == 0) {
		fprintf(stderr, "dbgmirror: symbolicate: standard output: %s\n",
		    strerror(errno));
		rc = 1;
	}
	return rc != 0 || r.failed ? (rc == 2 ? 2 : 1) : 0;
}
