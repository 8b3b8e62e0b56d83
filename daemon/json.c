/*
 * daemon/json.c: writing /metadata results, and reading an upstream's.
 *
 * Both go through indexer/json.h: the reader walks an answer strictly (the
 * whole document must be one object, with nothing after it) and what is
 * kept of it is decoded and written again by the writer, never copied
 * through.
 */
#include "daemon/json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int
json_result(struct jbuf *b, const char *type, const char *buildid,
    const char *file, const char *archive)
{
	size_t mark = b->len;

	if ((b->len > 0 && jbuf_put(b, ",", 1) == -1) ||
	    jbuf_put(b, "{\"type\":", 8) == -1 ||
	    jbuf_str(b, type, strlen(type)) == -1 ||
	    jbuf_put(b, ",\"buildid\":", 11) == -1 ||
	    jbuf_str(b, buildid, strlen(buildid)) == -1 ||
	    jbuf_put(b, ",\"file\":", 8) == -1 ||
	    jbuf_str(b, file, strlen(file)) == -1 ||
	    (archive != NULL && archive[0] != '\0' &&
		(jbuf_put(b, ",\"archive\":", 11) == -1 ||
		    jbuf_str(b, archive, strlen(archive)) == -1)) ||
	    jbuf_put(b, "}", 1) == -1) {
		/* All or nothing: cut what was written. */
		jbuf_cut(b, mark);
		return -1;
	}
	return 0;
}

/* One result's members of interest, decoded. */
struct result {
	struct jbuf f[4]; /* type, buildid, file, archive */
	int has[4];
};

static const char *const result_names[4] = { "type", "buildid", "file",
	"archive" };

static int
result_member(struct json_in *j, const char *name, void *arg)
{
	struct result *r = arg;
	int i;

	for (i = 0; i < 4; i++)
		if (strcmp(name, result_names[i]) == 0)
			break;
	if (i == 4 || json_peek(j) != JSON_STRING)
		return json_skip(j);
	jbuf_cut(&r->f[i], 0);
	r->has[i] = json_string(j, &r->f[i]) == 0;
	return r->has[i] ? 0 : -1;
}

/* 1 when field i of r is there and holds no NUL. */
static int
field_ok(const struct result *r, int i)
{
	return r->has[i] && r->f[i].p != NULL &&
	    strlen(r->f[i].p) == r->f[i].len;
}

struct read {
	struct jbuf *out;
	int results; /* appended */
	int complete;
	int seen_results;
	int dropped; /* a result of ours could not be kept */
};

/*
 * An element of "results": kept when it is a whole result.  One whose
 * type is another than ours (a "source") is no result of this answer;
 * any other that is not kept (a field missing, not a string, holding a
 * NUL, or no room) makes the answer incomplete.
 */
static int
results_item(struct json_in *j, size_t index, void *arg)
{
	struct read *rd = arg;
	struct result r;
	const char *type;
	int i, rc, ours, kept = 0;

	(void)index;
	if (json_peek(j) != JSON_OBJECT)
		return -1;
	memset(&r, 0, sizeof(r));
	for (i = 0; i < 4; i++)
		r.f[i].max = 2 * 4096;
	rc = json_object(j, result_member, &r);
	type = r.f[0].p;
	ours = !field_ok(&r, 0) || strcmp(type, "executable") == 0 ||
	    strcmp(type, "debuginfo") == 0;
	if (rc == 0 && ours && field_ok(&r, 0) && field_ok(&r, 1) &&
	    field_ok(&r, 2) &&
	    json_result(rd->out, type, r.f[1].p, r.f[2].p,
		field_ok(&r, 3) ? r.f[3].p : NULL) == 0)
		kept = 1;
	rd->results += kept;
	if (ours && !kept)
		rd->dropped = 1;
	for (i = 0; i < 4; i++)
		jbuf_free(&r.f[i]);
	return rc;
}

static int
top_member(struct json_in *j, const char *name, void *arg)
{
	struct read *rd = arg;

	if (strcmp(name, "results") == 0) {
		if (json_peek(j) != JSON_ARRAY)
			return -1;
		rd->seen_results = 1;
		return json_array(j, results_item, rd);
	}
	if (strcmp(name, "complete") == 0)
		return json_bool(j, &rd->complete);
	return json_skip(j);
}

int
json_read_results(const char *s, size_t len, struct jbuf *b, int *complete)
{
	struct json_in j;
	struct read rd = { b, 0, 1, 0, 0 };
	size_t mark = b->len;

	json_in_init(&j, s, len);
	if (json_object(&j, top_member, &rd) == 0 && rd.seen_results &&
	    json_end(&j) == 0) {
		*complete = rd.complete && !rd.dropped;
		return rd.results;
	}
	jbuf_cut(b, mark);
	return -1;
}

struct get {
	const char *name;
	struct jbuf *out;
	int found;
};

/* A member of the object json_get reads: kept when it is the one. */
static int
get_member(struct json_in *j, const char *name, void *arg)
{
	struct get *g = arg;
	const unsigned char *start;

	if (g->found || strcmp(name, g->name) != 0)
		return json_skip(j);
	g->found = 1;
	switch (json_peek(j)) {
	case JSON_STRING:
		return json_string(j, g->out);
	case JSON_OBJECT:
	case JSON_ARRAY:
		return -1;
	default:
		/* json_peek() passed the white space: the value starts here. */
		start = j->p;
		if (json_skip(j) == -1)
			return -1;
		return jbuf_put(g->out, (const char *)start,
		    (size_t)(j->p - start));
	}
}

int
json_get(const char *s, size_t len, const char *name, struct jbuf *out)
{
	struct json_in j;
	struct get g = { name, out, 0 };

	json_in_init(&j, s, len);
	if (json_object(&j, get_member, &g) == -1 || json_end(&j) == -1)
		return -1;
	return g.found;
}
