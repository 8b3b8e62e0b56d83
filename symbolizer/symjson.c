/*
 * symbolizer/symjson.c: /symbolicate's requests and answers
 * (symbolizer/symjson.h).
 *
 * The body is walked once by indexer/json.h's strict reader; each member
 * the request knows is checked as it is read, the first problem found is
 * the one reason given, and the counts are checked as elements come, so a
 * body with a million frames stops at the first one too many.  Frames may
 * come before modules, so their module indexes are checked at the end.
 * The answer is written member by member into a bounded jbuf.
 */
#include "symbolizer/symjson.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer/demangle.h"

/* The longest address string read, "0x" and leading zeros included. */
#define ADDR_MAX 64

struct parse {
	const struct symjson_limits *lim;
	struct symjson_request *req;
	size_t capmodules, capframes;
	char *why;
	size_t whylen;
	int failed; /* why is set */
	int nomem;
	int have_modules, have_frames;
};

/* One module or frame being read, with the members seen. */
struct elem {
	struct parse *p;
	size_t index;
	int has_id, has_start, has_offset, has_module, has_addr;
	uint64_t module;
};

static int bad(struct parse *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Say why (the first reason only) and fail. */
static int
bad(struct parse *p, const char *fmt, ...)
{
	va_list ap;

	if (!p->failed) {
		va_start(ap, fmt);
		vsnprintf(p->why, p->whylen, fmt, ap);
		va_end(ap);
		p->failed = 1;
	}
	return -1;
}

static int
nomem(struct parse *p)
{
	p->nomem = 1;
	return bad(p, "out of memory");
}

/* A string of at most max - 1 bytes into buf (NUL-terminated). */
static int
read_str(struct parse *p, struct json_in *j, char *buf, size_t max,
    const char *what, size_t index, const char *field)
{
	struct jbuf b = { .max = max };

	if (json_peek(j) != JSON_STRING)
		return bad(p, "%s[%zu].%s: expected a string", what, index,
		    field);
	if (json_string(j, &b) == -1) {
		jbuf_free(&b);
		return b.full
		    ? bad(p, "%s[%zu].%s: too long", what, index, field)
		    : -1;
	}
	snprintf(buf, max, "%s", b.p != NULL ? b.p : "");
	if (b.p != NULL && strlen(b.p) != b.len) {
		jbuf_free(&b);
		return bad(p, "%s[%zu].%s: a NUL in it", what, index, field);
	}
	jbuf_free(&b);
	return 0;
}

/*
 * An address from its text: "0x" and hex digits, or decimal digits.
 * 0, -1 when it is no address, -2 when it is beyond 64 bits.
 */
static int
parse_addr(const char *s, size_t n, uint64_t *v)
{
	size_t i = 0;
	uint64_t x = 0;
	int d, hex = 0;

	if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		hex = 1;
		i = 2;
	}
	if (i == n)
		return -1;
	for (; i < n; i++) {
		if (hex) {
			if ((d = buildid_hexval((unsigned char)s[i])) == -1)
				return -1;
			if (x >> 60 != 0)
				return -2;
			x = x << 4 | (uint64_t)d;
		} else {
			if (s[i] < '0' || s[i] > '9')
				return -1;
			d = s[i] - '0';
			if (x > (UINT64_MAX - (uint64_t)d) / 10)
				return -2;
			x = x * 10 + (uint64_t)d;
		}
	}
	*v = x;
	return 0;
}

/* An address member: a string (parse_addr) or a JSON integer. */
static int
read_addr(struct parse *p, struct json_in *j, const char *what, size_t index,
    const char *field, uint64_t *v)
{
	char buf[ADDR_MAX];
	const unsigned char *start;
	int exact, rc;

	if (json_peek(j) == JSON_NUMBER) {
		start = j->p;
		if (json_number_u64(j, v, &exact) == -1)
			return -1;
		if (exact)
			return 0;
		/* Digits alone that did not fit: too big; else not whole. */
		while (start < j->p && *start >= '0' && *start <= '9')
			start++;
		return bad(p, "%s[%zu].%s: %s", what, index, field,
		    start == j->p ? "beyond 64 bits" : "not an address");
	}
	if (json_peek(j) != JSON_STRING)
		return bad(p, "%s[%zu].%s: expected an address", what, index,
		    field);
	if (read_str(p, j, buf, sizeof(buf), what, index, field) == -1)
		return -1;
	if ((rc = parse_addr(buf, strlen(buf), v)) != 0)
		return bad(p, "%s[%zu].%s: %s", what, index, field,
		    rc == -2 ? "beyond 64 bits"
			     : "not an address (\"0x\" and hex digits, or "
			       "decimal digits)");
	return 0;
}

static int
read_bool(struct parse *p, struct json_in *j, const char *what, size_t index,
    const char *field, int *v)
{
	if (json_peek(j) != JSON_BOOL)
		return bad(p, "%s[%zu].%s: expected true or false", what, index,
		    field);
	return json_bool(j, v);
}

static int
module_member(struct json_in *j, const char *name, void *arg)
{
	struct elem *e = arg;
	struct parse *p = e->p;
	struct symjson_module *m = &p->req->modules[e->index];
	char buf[BUILDID_HEX_MAX + 8];
	const char *why;

	if (strcmp(name, "build_id") == 0) {
		if (read_str(p, j, buf, sizeof(buf), "modules", e->index,
			name) == -1)
			return -1;
		if (buildid_parse(&m->id, buf, strlen(buf), &why) == -1)
			return bad(p, "modules[%zu].build_id: %s", e->index,
			    why);
		e->has_id = 1;
	} else if (strcmp(name, "addr_mode") == 0) {
		if (read_str(p, j, buf, sizeof(buf), "modules", e->index,
			name) == -1)
			return -1;
		if (strcmp(buf, "va") == 0)
			m->mode = SYMJSON_VA;
		else if (strcmp(buf, "file_offset") == 0)
			m->mode = SYMJSON_FILE_OFFSET;
		else if (strcmp(buf, "abs") == 0)
			m->mode = SYMJSON_ABS;
		else
			return bad(p,
			    "modules[%zu].addr_mode: not va, file_offset or "
			    "abs",
			    e->index);
	} else if (strcmp(name, "start") == 0) {
		e->has_start = 1;
		return read_addr(p, j, "modules", e->index, name, &m->start);
	} else if (strcmp(name, "file_offset") == 0) {
		e->has_offset = 1;
		return read_addr(p, j, "modules", e->index, name,
		    &m->file_offset);
	} else {
		return json_skip(j);
	}
	return 0;
}

static int
module_elem(struct json_in *j, size_t index, void *arg)
{
	struct parse *p = arg;
	struct symjson_request *r = p->req;
	struct elem e = { .p = p, .index = index };

	if (index >= p->lim->max_modules)
		return bad(p, "more than %zu modules", p->lim->max_modules);
	if (json_peek(j) != JSON_OBJECT)
		return bad(p, "modules[%zu]: expected an object", index);
	if (r->nmodules == p->capmodules) {
		size_t cap = p->capmodules == 0 ? 8 : p->capmodules * 2;
		struct symjson_module *m =
		    realloc(r->modules, cap * sizeof(*m));

		if (m == NULL)
			return nomem(p);
		r->modules = m;
		p->capmodules = cap;
	}
	memset(&r->modules[r->nmodules], 0, sizeof(r->modules[0]));
	r->modules[r->nmodules].mode = SYMJSON_VA;
	r->nmodules++;
	if (json_object(j, module_member, &e) == -1)
		return -1;
	if (!e.has_id)
		return bad(p, "modules[%zu]: no build_id", index);
	if (r->modules[index].mode == SYMJSON_ABS &&
	    (!e.has_start || !e.has_offset))
		return bad(p, "modules[%zu]: abs needs start and file_offset",
		    index);
	return 0;
}

static int
frame_member(struct json_in *j, const char *name, void *arg)
{
	struct elem *e = arg;
	struct parse *p = e->p;
	struct symjson_frame *f = &p->req->frames[e->index];
	int exact;

	if (strcmp(name, "module") == 0) {
		if (json_peek(j) != JSON_NUMBER)
			return bad(p, "frames[%zu].module: expected a number",
			    e->index);
		if (json_number_u64(j, &e->module, &exact) == -1)
			return -1;
		if (!exact || e->module > UINT32_MAX)
			e->module = UINT64_MAX;
		e->has_module = 1;
		return 0;
	}
	if (strcmp(name, "addr") == 0) {
		e->has_addr = 1;
		return read_addr(p, j, "frames", e->index, name, &f->addr);
	}
	if (strcmp(name, "return_address") == 0)
		return read_bool(p, j, "frames", e->index, name,
		    &f->return_address);
	return json_skip(j);
}

static int
frame_elem(struct json_in *j, size_t index, void *arg)
{
	struct parse *p = arg;
	struct symjson_request *r = p->req;
	struct elem e = { .p = p, .index = index };

	if (index >= p->lim->max_frames)
		return bad(p, "more than %zu frames", p->lim->max_frames);
	if (json_peek(j) != JSON_OBJECT)
		return bad(p, "frames[%zu]: expected an object", index);
	if (r->nframes == p->capframes) {
		size_t cap = p->capframes == 0 ? 64 : p->capframes * 2;
		struct symjson_frame *f = realloc(r->frames, cap * sizeof(*f));

		if (f == NULL)
			return nomem(p);
		r->frames = f;
		p->capframes = cap;
	}
	memset(&r->frames[r->nframes], 0, sizeof(r->frames[0]));
	r->nframes++;
	if (json_object(j, frame_member, &e) == -1)
		return -1;
	if (!e.has_module || !e.has_addr)
		return bad(p, "frames[%zu]: no %s", index,
		    e.has_module ? "addr" : "module");
	/* Checked against the modules at the end: they may come later. */
	r->frames[index].module =
	    e.module > UINT32_MAX ? UINT32_MAX : (uint32_t)e.module;
	return 0;
}

static int
option_member(struct json_in *j, const char *name, void *arg)
{
	struct parse *p = arg;
	uint64_t v;
	int exact;

	if (strcmp(name, "demangle") == 0)
		return read_bool(p, j, "options", 0, name, &p->req->demangle);
	if (strcmp(name, "timeout_ms") != 0)
		return json_skip(j);
	if (json_peek(j) != JSON_NUMBER ||
	    json_number_u64(j, &v, &exact) == -1 || !exact ||
	    v > SYMJSON_TIMEOUT_MAX)
		return bad(p,
		    "options.timeout_ms: expected an integer from 0 to %d",
		    SYMJSON_TIMEOUT_MAX);
	p->req->timeout_ms = (uint32_t)v;
	return 0;
}

static int
top_member(struct json_in *j, const char *name, void *arg)
{
	struct parse *p = arg;

	if (strcmp(name, "modules") == 0) {
		if (p->have_modules)
			return bad(p, "\"modules\" given twice");
		if (json_peek(j) != JSON_ARRAY)
			return bad(p, "\"modules\": expected an array");
		p->have_modules = 1;
		return json_array(j, module_elem, p);
	}
	if (strcmp(name, "frames") == 0) {
		if (p->have_frames)
			return bad(p, "\"frames\" given twice");
		if (json_peek(j) != JSON_ARRAY)
			return bad(p, "\"frames\": expected an array");
		p->have_frames = 1;
		return json_array(j, frame_elem, p);
	}
	if (strcmp(name, "options") == 0) {
		if (json_peek(j) != JSON_OBJECT)
			return bad(p, "\"options\": expected an object");
		return json_object(j, option_member, p);
	}
	return json_skip(j);
}

static void
request_init(struct symjson_request *req)
{
	memset(req, 0, sizeof(*req));
	req->demangle = 1;
	req->timeout_ms = SYMJSON_TIMEOUT_DEFAULT;
}

void
symjson_request_free(struct symjson_request *req)
{
	free(req->modules);
	free(req->frames);
	req->modules = NULL;
	req->frames = NULL;
	req->nmodules = req->nframes = 0;
}

/* Every frame names a module there is. */
static int
check_frames(struct parse *p)
{
	size_t i;

	for (i = 0; i < p->req->nframes; i++)
		if (p->req->frames[i].module >= p->req->nmodules)
			return bad(p,
			    "frames[%zu].module: no such module (%zu "
			    "given)",
			    i, p->req->nmodules);
	return 0;
}

static int
finish(struct parse *p, int rc)
{
	if (rc == 0)
		return 0;
	symjson_request_free(p->req);
	return p->nomem ? SYMJSON_NOMEM : SYMJSON_BAD;
}

int
symjson_parse_request(const char *body, size_t len,
    const struct symjson_limits *lim, struct symjson_request *req, char *why,
    size_t whylen)
{
	struct parse p = { .lim = lim,
		.req = req,
		.why = why,
		.whylen = whylen };
	struct json_in j;
	int rc = 0;

	request_init(req);
	if (len > lim->max_body)
		return finish(&p,
		    bad(&p, "body over %zu bytes", lim->max_body));
	json_in_init(&j, body, len);
	if (json_peek(&j) != JSON_OBJECT)
		rc = bad(&p, "not a JSON object");
	else if (json_object(&j, top_member, &p) == -1 || json_end(&j) == -1)
		rc = bad(&p, "malformed JSON at byte %zu", json_offset(&j));
	else if (!p.have_modules || !p.have_frames)
		rc = bad(&p, "no \"%s\" array",
		    p.have_modules ? "frames" : "modules");
	else
		rc = check_frames(&p);
	return finish(&p, rc);
}

/* The %XX-decoded value s[0..n) into out (outlen bytes, NUL added). */
static int
pct_decode(const char *s, size_t n, char *out, size_t outlen)
{
	size_t i, k = 0;
	int hi, lo;

	for (i = 0; i < n; i++) {
		char c = s[i];

		if (c == '%') {
			if (i + 2 >= n)
				return -1;
			if ((hi = buildid_hexval((unsigned char)s[i + 1])) ==
				-1 ||
			    (lo = buildid_hexval((unsigned char)s[i + 2])) ==
				-1)
				return -1;
			c = (char)(hi << 4 | lo);
			i += 2;
		}
		if (c == '\0' || k + 1 >= outlen)
			return -1;
		out[k++] = c;
	}
	out[k] = '\0';
	return 0;
}

/* The addresses of addr=A,B,... as frames of module 0. */
static int
query_addrs(struct parse *p, const char *v)
{
	struct symjson_request *r = p->req;
	const char *s = v, *comma;
	int rc;

	do {
		size_t n;

		comma = strchr(s, ',');
		n = comma != NULL ? (size_t)(comma - s) : strlen(s);
		if (r->nframes >= p->lim->max_frames)
			return bad(p, "more than %zu addresses",
			    p->lim->max_frames);
		if (r->nframes == p->capframes) {
			size_t cap = p->capframes == 0 ? 64 : p->capframes * 2;
			struct symjson_frame *f =
			    realloc(r->frames, cap * sizeof(*f));

			if (f == NULL)
				return nomem(p);
			r->frames = f;
			p->capframes = cap;
		}
		memset(&r->frames[r->nframes], 0, sizeof(r->frames[0]));
		if ((rc = parse_addr(s, n, &r->frames[r->nframes].addr)) != 0)
			return bad(p, "addr #%zu: %s", r->nframes + 1,
			    rc == -2 ? "beyond 64 bits" : "not an address");
		r->nframes++;
		s = comma != NULL ? comma + 1 : s + n;
	} while (comma != NULL);
	return 0;
}

/* A 0 or 1 parameter. */
static int
query_flag(struct parse *p, const char *key, const char *v, int *flag)
{
	if (strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
		return bad(p, "%s: expected 0 or 1", key);
	*flag = v[0] == '1';
	return 0;
}

int
symjson_parse_query(const char *query, size_t len, const struct buildid *id,
    const struct symjson_limits *lim, struct symjson_request *req, char *why,
    size_t whylen)
{
	struct parse p = { .lim = lim,
		.req = req,
		.why = why,
		.whylen = whylen };
	const char *s = query, *end = query + len;
	char *v = NULL;
	int seen[4] = { 0 }, ret = 0, rc = 0;
	size_t k;
	static const char *const keys[4] = { "addr", "mode", "return",
		"demangle" };

	request_init(req);
	if ((req->modules = calloc(1, sizeof(*req->modules))) == NULL ||
	    (v = malloc(len + 1)) == NULL)
		return finish(&p, nomem(&p));
	req->nmodules = 1;
	req->modules[0].id = *id;
	req->modules[0].mode = SYMJSON_VA;
	while (rc == 0 && s < end) {
		const char *amp = memchr(s, '&', (size_t)(end - s));
		const char *pe = amp != NULL ? amp : end;
		const char *eq = memchr(s, '=', (size_t)(pe - s));

		for (k = 0; k < 4 && eq != NULL; k++)
			if ((size_t)(eq - s) == strlen(keys[k]) &&
			    memcmp(s, keys[k], (size_t)(eq - s)) == 0)
				break;
		if (eq == NULL || k == 4)
			rc = bad(&p,
			    "unknown parameter (addr, mode, return or "
			    "demangle)");
		else if (seen[k]++)
			rc = bad(&p, "%s given twice", keys[k]);
		else if (pct_decode(eq + 1, (size_t)(pe - eq - 1), v,
			     len + 1) == -1)
			rc = bad(&p, "%s: bad percent-encoding", keys[k]);
		else if (k == 0)
			rc = query_addrs(&p, v);
		else if (k == 1 && strcmp(v, "va") == 0)
			req->modules[0].mode = SYMJSON_VA;
		else if (k == 1 && strcmp(v, "file_offset") == 0)
			req->modules[0].mode = SYMJSON_FILE_OFFSET;
		else if (k == 1)
			rc = bad(&p, "mode: expected va or file_offset");
		else if (k == 2)
			rc = query_flag(&p, "return", v, &ret);
		else
			rc = query_flag(&p, "demangle", v, &req->demangle);
		s = pe + (pe < end);
	}
	free(v);
	if (rc == 0 && !seen[0])
		rc = bad(&p, "no addr");
	for (k = 0; rc == 0 && k < req->nframes; k++)
		req->frames[k].return_address = ret;
	return finish(&p, rc);
}

/* ---------------------------------------------------------- answer */

/* The members of one object: a comma before each but the first. */
struct obj {
	struct jbuf *b;
	int n;
	int err;
};

static void
obj_open(struct obj *o, struct jbuf *b)
{
	o->b = b;
	o->n = 0;
	o->err = jbuf_put(b, "{", 1) == -1;
}

static void
obj_key(struct obj *o, const char *key)
{
	if (!o->err &&
	    jbuf_fmt(o->b, "%s\"%s\":", o->n++ > 0 ? "," : "", key) == -1)
		o->err = 1;
}

static void
obj_str(struct obj *o, const char *key, const char *s)
{
	obj_key(o, key);
	if (!o->err &&
	    (s == NULL ? jbuf_put(o->b, "null", 4)
		       : jbuf_str(o->b, s, strlen(s))) == -1)
		o->err = 1;
}

static void
obj_hex(struct obj *o, const char *key, uint64_t v)
{
	obj_key(o, key);
	if (!o->err && jbuf_fmt(o->b, "\"0x%" PRIx64 "\"", v) == -1)
		o->err = 1;
}

static void
obj_uint(struct obj *o, const char *key, uint64_t v)
{
	obj_key(o, key);
	if (!o->err && jbuf_fmt(o->b, "%" PRIu64, v) == -1)
		o->err = 1;
}

static void
obj_bool(struct obj *o, const char *key, int v)
{
	obj_key(o, key);
	if (!o->err && jbuf_put(o->b, v ? "true" : "false", v ? 4 : 5) == -1)
		o->err = 1;
}

static int
obj_close(struct obj *o)
{
	return o->err || jbuf_put(o->b, "}", 1) == -1 ? -1 : 0;
}

static const char *const status_names[] = { "ok", "missing", "pending",
	"error" };

static int
write_module(struct jbuf *b, const struct symjson_module *m,
    const struct symjson_answer_module *a)
{
	char hex[BUILDID_HEX_MAX];
	struct buildid alt;
	struct obj o;

	obj_open(&o, b);
	buildid_format(&m->id, hex);
	obj_str(&o, "build_id", hex);
	obj_str(&o, "status", status_names[a->status]);
	if (a->status == SYMJSON_OK) {
		symtab_altid(a->table, &alt);
		buildid_format(&alt, hex);
		obj_str(&o, "source",
		    symtab_source_name(symtab_source(a->table)));
		obj_str(&o, "alt", alt.len > 0 ? hex : NULL);
	} else if (a->reason != NULL) {
		obj_str(&o, "reason", a->reason);
	}
	return obj_close(&o);
}

/* The address to look up, or NULL with why it cannot be. */
static const char *
lookup_addr(const struct symjson_module *m, const struct symtab *t,
    const struct symjson_frame *f, uint64_t *va)
{
	const char *why = NULL;
	uint64_t a = f->addr;

	if (f->return_address) {
		if (a == 0)
			return "return address 0";
		a--;
	}
	switch (m->mode) {
	case SYMJSON_VA:
		*va = a;
		return NULL;
	case SYMJSON_FILE_OFFSET:
		return symtab_offset_to_va(t, a, va, &why) == 0 ? NULL : why;
	case SYMJSON_ABS:
		return symtab_abs_to_va(t, a, m->start, m->file_offset, va,
			   &why) == 0
		    ? NULL
		    : why;
	}
	return "unknown mode";
}

/* The frames of one address, innermost first. */
static int
write_frames(struct jbuf *b, const struct symtab_result *r, int demangle)
{
	struct obj o;
	size_t i;

	if (jbuf_put(b, "[", 1) == -1)
		return -1;
	for (i = 0; i < r->nframes; i++) {
		const struct symtab_frame *f = &r->frames[i];
		char *d = demangle && f->function != NULL
		    ? demangle_name(f->function)
		    : NULL;

		if (i > 0 && jbuf_put(b, ",", 1) == -1) {
			free(d);
			return -1;
		}
		obj_open(&o, b);
		obj_str(&o, "function", d != NULL ? d : f->function);
		free(d);
		obj_str(&o, "file", f->file);
		obj_uint(&o, "line", f->line);
		obj_uint(&o, "column", f->column);
		obj_bool(&o, "inlined", f->inlined);
		if (obj_close(&o) == -1)
			return -1;
	}
	return jbuf_put(b, "]", 1);
}

static const char *const lookup_status[] = { "ok", "no_line", "no_symbol" };

static int
write_frame(struct jbuf *b, const struct symjson_request *req,
    const struct symjson_frame *f, const struct symjson_answer_module *a,
    struct symtab_result *r)
{
	const struct symjson_module *m = &req->modules[f->module];
	const char *why;
	uint64_t va = 0;
	struct obj o;

	obj_open(&o, b);
	if (a->status != SYMJSON_OK) {
		obj_str(&o, "status", status_names[a->status]);
		obj_hex(&o, "addr", f->addr);
		if (a->reason != NULL)
			obj_str(&o, "reason", a->reason);
		return obj_close(&o);
	}
	if ((why = lookup_addr(m, a->table, f, &va)) != NULL) {
		obj_str(&o, "status", "bad_address");
		obj_hex(&o, "addr", f->addr);
		obj_str(&o, "reason", why);
		return obj_close(&o);
	}
	symtab_lookup(a->table, va, r);
	obj_str(&o, "status", lookup_status[r->status]);
	obj_hex(&o, "addr", f->addr);
	obj_hex(&o, "lookup_addr", va);
	if (r->symbol != NULL) {
		obj_str(&o, "symbol", r->symbol);
		obj_hex(&o, "sym_addr", r->sym_addr);
		obj_uint(&o, "sym_offset", va - r->sym_addr);
		if (r->nearest)
			obj_bool(&o, "nearest", 1);
	}
	obj_key(&o, "frames");
	if (o.err || write_frames(b, r, req->demangle) == -1)
		return -1;
	return obj_close(&o);
}

int
symjson_write_answer(struct jbuf *out, const struct symjson_request *req,
    const struct symjson_answer_module *mods)
{
	struct symtab_result *r;
	size_t i;
	int rc = -1;

	if ((r = malloc(sizeof(*r))) == NULL)
		return -1;
	if (jbuf_put(out, "{\"modules\":[", 12) == -1)
		goto out;
	for (i = 0; i < req->nmodules; i++)
		if ((i > 0 && jbuf_put(out, ",", 1) == -1) ||
		    write_module(out, &req->modules[i], &mods[i]) == -1)
			goto out;
	if (jbuf_put(out, "],\"frames\":[", 12) == -1)
		goto out;
	for (i = 0; i < req->nframes; i++)
		if ((i > 0 && jbuf_put(out, ",", 1) == -1) ||
		    write_frame(out, req, &req->frames[i],
			&mods[req->frames[i].module], r) == -1)
			goto out;
	rc = jbuf_put(out, "]}", 2);
out:
	free(r);
	return rc;
}
