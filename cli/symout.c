/*
 * cli/symout.c: /symbolicate's answers read back, and printed as
 * eu-addr2line prints (cli/symout.h).
 *
 * The body is walked once; a member this does not know is skipped (the
 * daemon may add some), a known one of the wrong type fails the answer.
 * The first line eu-addr2line 0.188 prints for an inlined address names
 * the innermost function, where it was called from (the next frame's
 * place: "at FILE:LINE:COLUMN", "at FILE:LINE" without a column, "from
 * FILE" without a line) and then what holds them all: print_dwarf_function
 * walks dwarf_getscopes(), which after an inlined instance gives the
 * scopes of its abstract origin, never the concrete function, so it finds
 * no subprogram and eu-addr2line prints the ELF symbol instead
 * (dwfl_module_addrname: "around.constprop.0", "main.cold", demangled by
 * -C).  Its -i pairs then name each caller, from the DWARF, with the place
 * of the call.
 */
#include "cli/symout.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "indexer/json.h"
#include "symbolizer/demangle.h"

/* The longest string kept of an answer (a name, a path, a reason). */
#define STR_MAX (1u << 20)

static const char *const status_names[] = { "ok", "no_line", "no_symbol",
	"bad_address", "missing", "pending", "error" };

const char *
symout_status_name(enum symout_status s)
{
	return status_names[s];
}

struct rd {
	struct symout_answer *ans;
	char *why;
	size_t whylen;
	int failed;
	size_t capaddrs, capmodules;
	const char *body;
};

static int bad(struct rd *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
bad(struct rd *r, const char *fmt, ...)
{
	va_list ap;

	if (!r->failed) {
		va_start(ap, fmt);
		vsnprintf(r->why, r->whylen, fmt, ap);
		va_end(ap);
		r->failed = 1;
	}
	return -1;
}

/* A string or null into *out (malloc'd; NULL for null). */
static int
read_str(struct rd *r, struct json_in *j, const char *what, char **out)
{
	struct jbuf b = { .max = STR_MAX };

	if (json_peek(j) == JSON_NULL) {
		*out = NULL;
		return json_skip(j);
	}
	if (json_peek(j) != JSON_STRING)
		return bad(r, "%s: expected a string", what);
	if (json_string(j, &b) == -1) {
		jbuf_free(&b);
		return bad(r, "%s: a bad or too long string", what);
	}
	if (b.p == NULL && jbuf_put(&b, "", 0) == -1)
		return bad(r, "out of memory");
	free(*out);
	*out = b.p;
	return 0;
}

static int
read_u32(struct rd *r, struct json_in *j, const char *what, uint32_t *v)
{
	uint64_t x;
	int exact;

	if (json_peek(j) != JSON_NUMBER ||
	    json_number_u64(j, &x, &exact) == -1 || !exact || x > UINT32_MAX)
		return bad(r, "%s: expected a 32-bit count", what);
	*v = (uint32_t)x;
	return 0;
}

static int
read_status(struct rd *r, struct json_in *j, enum symout_status *s)
{
	char *name = NULL;
	size_t i;

	if (read_str(r, j, "status", &name) == -1)
		return -1;
	for (i = 0;
	     name != NULL && i < sizeof(status_names) / sizeof(*status_names);
	     i++)
		if (strcmp(name, status_names[i]) == 0) {
			*s = (enum symout_status)i;
			free(name);
			return 0;
		}
	free(name);
	return bad(r, "an unknown status");
}

/* A copy of the value the cursor passed over, from start. */
static char *
slice(const unsigned char *start, const unsigned char *end)
{
	char *s = malloc((size_t)(end - start) + 1);

	if (s != NULL) {
		memcpy(s, start, (size_t)(end - start));
		s[end - start] = '\0';
	}
	return s;
}

static int
frame_member(struct json_in *j, const char *name, void *arg)
{
	struct rd *r = ((void **)arg)[0];
	struct symout_frame *f = ((void **)arg)[1];

	if (strcmp(name, "function") == 0)
		return read_str(r, j, "function", &f->function);
	if (strcmp(name, "file") == 0)
		return read_str(r, j, "file", &f->file);
	if (strcmp(name, "line") == 0)
		return read_u32(r, j, "line", &f->line);
	if (strcmp(name, "column") == 0)
		return read_u32(r, j, "column", &f->column);
	if (strcmp(name, "inlined") == 0) {
		if (json_peek(j) != JSON_BOOL)
			return bad(r, "inlined: expected true or false");
		return json_bool(j, &f->inlined);
	}
	return json_skip(j);
}

static int
frame_elem(struct json_in *j, size_t index, void *arg)
{
	struct rd *r = ((void **)arg)[0];
	struct symout_addr *a = ((void **)arg)[1];
	struct symout_frame *f;
	void *ctx[2];

	(void)index;
	if (json_peek(j) != JSON_OBJECT)
		return bad(r, "frames: expected objects");
	if ((f = realloc(a->frames, (a->nframes + 1) * sizeof(*f))) == NULL)
		return bad(r, "out of memory");
	a->frames = f;
	f = &a->frames[a->nframes++];
	memset(f, 0, sizeof(*f));
	ctx[0] = r;
	ctx[1] = f;
	return json_object(j, frame_member, ctx);
}

static int
addr_member(struct json_in *j, const char *name, void *arg)
{
	struct rd *r = ((void **)arg)[0];
	struct symout_addr *a = ((void **)arg)[1];
	void *ctx[2] = { r, a };

	if (strcmp(name, "status") == 0)
		return read_status(r, j, &a->status);
	if (strcmp(name, "symbol") == 0)
		return read_str(r, j, "symbol", &a->symbol);
	if (strcmp(name, "reason") == 0)
		return read_str(r, j, "reason", &a->reason);
	if (strcmp(name, "frames") == 0) {
		if (json_peek(j) != JSON_ARRAY)
			return bad(r, "frames: expected an array");
		return json_array(j, frame_elem, ctx);
	}
	return json_skip(j);
}

static int
addr_elem(struct json_in *j, size_t index, void *arg)
{
	struct rd *r = arg;
	struct symout_answer *ans = r->ans;
	struct symout_addr *a;
	const unsigned char *start;
	void *ctx[2];

	if (json_peek(j) != JSON_OBJECT)
		return bad(r, "frames[%zu]: expected an object", index);
	if (ans->naddrs == r->capaddrs) {
		size_t cap = r->capaddrs == 0 ? 64 : 2 * r->capaddrs;

		if ((a = realloc(ans->addrs, cap * sizeof(*a))) == NULL)
			return bad(r, "out of memory");
		ans->addrs = a;
		r->capaddrs = cap;
	}
	a = &ans->addrs[ans->naddrs++];
	memset(a, 0, sizeof(*a));
	a->status = SYMOUT_ERROR;
	start = j->p;
	ctx[0] = r;
	ctx[1] = a;
	if (json_object(j, addr_member, ctx) == -1)
		return -1;
	if ((a->json = slice(start, j->p)) == NULL)
		return bad(r, "out of memory");
	return 0;
}

static int
module_member(struct json_in *j, const char *name, void *arg)
{
	struct rd *r = ((void **)arg)[0];
	struct symout_module *m = ((void **)arg)[1];

	if (strcmp(name, "status") == 0)
		return read_status(r, j, &m->status);
	if (strcmp(name, "reason") == 0)
		return read_str(r, j, "reason", &m->reason);
	return json_skip(j);
}

static int
module_elem(struct json_in *j, size_t index, void *arg)
{
	struct rd *r = arg;
	struct symout_answer *ans = r->ans;
	struct symout_module *m;
	const unsigned char *start;
	void *ctx[2];

	if (json_peek(j) != JSON_OBJECT)
		return bad(r, "modules[%zu]: expected an object", index);
	if (ans->nmodules == r->capmodules) {
		size_t cap = r->capmodules == 0 ? 8 : 2 * r->capmodules;

		if ((m = realloc(ans->modules, cap * sizeof(*m))) == NULL)
			return bad(r, "out of memory");
		ans->modules = m;
		r->capmodules = cap;
	}
	m = &ans->modules[ans->nmodules++];
	memset(m, 0, sizeof(*m));
	m->status = SYMOUT_ERROR;
	start = j->p;
	ctx[0] = r;
	ctx[1] = m;
	if (json_object(j, module_member, ctx) == -1)
		return -1;
	if ((m->json = slice(start, j->p)) == NULL)
		return bad(r, "out of memory");
	return 0;
}

static int
top_member(struct json_in *j, const char *name, void *arg)
{
	struct rd *r = arg;

	if (strcmp(name, "modules") == 0 || strcmp(name, "frames") == 0) {
		if (json_peek(j) != JSON_ARRAY)
			return bad(r, "\"%s\": expected an array", name);
		return json_array(j, name[0] == 'm' ? module_elem : addr_elem,
		    r);
	}
	return json_skip(j);
}

int
symout_parse(const char *body, size_t len, struct symout_answer *ans, char *why,
    size_t whylen)
{
	struct rd r = { .ans = ans, .why = why, .whylen = whylen };
	struct json_in j;

	memset(ans, 0, sizeof(*ans));
	json_in_init(&j, body, len);
	if (json_peek(&j) != JSON_OBJECT)
		bad(&r, "not a JSON object");
	else if (json_object(&j, top_member, &r) == -1 || json_end(&j) == -1)
		bad(&r, "malformed JSON at byte %zu", json_offset(&j));
	if (!r.failed)
		return 0;
	symout_answer_free(ans);
	return -1;
}

void
symout_addr_free(struct symout_addr *a)
{
	size_t i;

	for (i = 0; i < a->nframes; i++) {
		free(a->frames[i].function);
		free(a->frames[i].file);
	}
	free(a->frames);
	free(a->symbol);
	free(a->reason);
	free(a->json);
	memset(a, 0, sizeof(*a));
}

void
symout_answer_free(struct symout_answer *ans)
{
	size_t i;

	for (i = 0; i < ans->naddrs; i++)
		symout_addr_free(&ans->addrs[i]);
	for (i = 0; i < ans->nmodules; i++) {
		free(ans->modules[i].reason);
		free(ans->modules[i].json);
	}
	free(ans->addrs);
	free(ans->modules);
	memset(ans, 0, sizeof(*ans));
}

int
symout_answered(const struct symout_addr *a)
{
	return a->status != SYMOUT_MISSING && a->status != SYMOUT_PENDING &&
	    a->status != SYMOUT_ERROR;
}

/* FILE:LINE[:COLUMN], or ??:0. */
static void
place(FILE *fp, const struct symout_frame *f)
{
	if (f->file == NULL)
		fputs("??:0", fp);
	else if (f->column != 0)
		fprintf(fp, "%s:%u:%u", f->file, f->line, f->column);
	else
		fprintf(fp, "%s:%u", f->file, f->line);
}

static const char *
name(const struct symout_frame *f)
{
	return f->function != NULL ? f->function : "??";
}

void
symout_addr2line(FILE *fp, const struct symout_addr *a, int demangle)
{
	const struct symout_frame *f = a->frames;
	size_t i, n = symout_answered(a) ? a->nframes : 0;
	char *d;

	if (n == 0) {
		fputs("??\n??:0\n", fp);
		return;
	}
	fputs(name(&f[0]), fp);
	if (n > 1) {
		fputs(" inlined", fp);
		if (f[1].file != NULL && f[1].line == 0)
			fprintf(fp, " from %s", f[1].file);
		else if (f[1].file != NULL) {
			fputs(" at ", fp);
			place(fp, &f[1]);
		}
		d = demangle && a->symbol != NULL ? demangle_name(a->symbol)
						  : NULL;
		fprintf(fp, " in %s",
		    d != NULL               ? d
			: a->symbol != NULL ? a->symbol
					    : name(&f[n - 1]));
		free(d);
	}
	fputc('\n', fp);
	place(fp, &f[0]);
	fputc('\n', fp);
	for (i = 1; i < n; i++) {
		fprintf(fp, "%s\n", name(&f[i]));
		place(fp, &f[i]);
		fputc('\n', fp);
	}
}
