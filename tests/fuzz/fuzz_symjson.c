/*
 * tests/fuzz/fuzz_symjson.c: fuzz symjson_parse_request() and
 * symjson_parse_query(), the readers of /symbolicate's POST bodies and GET
 * queries, and symjson_write_answer() after them (symbolizer/symjson.h).
 *
 * An input that starts with '?' is a query string (the rest), any other a
 * body.  Modules take turns being ok (a table built once, at start, from
 * this program itself), missing, pending and in error.  Besides memory
 * errors the target aborts when a result breaks the contract: a result
 * other than 0, SYMJSON_BAD and SYMJSON_NOMEM; a refusal without a
 * one-line reason; more frames or modules than the limits; a frame of a
 * module that is not there; an answer that is not one JSON object with as
 * many frames as the request.
 */
#include "symbolizer/symjson.h"

#include <fcntl.h>

#include "indexer/elf.h"
#include "symbolizer/build.h"
#include "tests/fuzz/fuzz.h"

static const struct symjson_limits lim = { 64, 8, 1 << 16 };
static struct symtab *table;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct symbuild_in in = { -1, -1, -1, NULL };
	char err[256];
	const char *why;
	int out = fuzz_memfd("fuzz_symjson: memfd_create");

	if (elf_init() == -1 ||
	    (in.debug_fd = open("/proc/self/exe", O_RDONLY)) == -1 ||
	    symbuild_run(&in, out, NULL, err, sizeof(err)) == -1 ||
	    (table = symtab_open(out, &why)) == NULL) {
		fprintf(stderr, "fuzz_symjson: no table of itself\n");
		exit(1);
	}
	close(in.debug_fd);
	close(out);
	return 0;
}

static int
count_elem(struct json_in *j, size_t index, void *arg)
{
	(*(size_t *)arg)++;
	return json_skip(j);
}

struct top {
	size_t frames;
	int seen;
};

static int
top_member(struct json_in *j, const char *name, void *arg)
{
	struct top *t = arg;

	if (strcmp(name, "frames") != 0)
		return json_skip(j);
	t->seen = 1;
	return json_array(j, count_elem, &t->frames);
}

static void
check_answer(const struct symjson_request *req)
{
	struct symjson_answer_module *mods;
	struct jbuf b = { .max = 1 << 24 };
	struct json_in j;
	struct top t = { 0, 0 };
	size_t i;

	if ((mods = calloc(req->nmodules + 1, sizeof(*mods))) == NULL)
		return;
	for (i = 0; i < req->nmodules; i++) {
		mods[i].status = (enum symjson_status)(i % 4);
		mods[i].table = table;
		mods[i].reason =
		    i % 4 == SYMJSON_ERROR ? "broken\n\"x\"" : NULL;
	}
	if (symjson_write_answer(&b, req, mods) == 0) {
		json_in_init(&j, b.p, b.len);
		FUZZ_CHECK(json_object(&j, top_member, &t) == 0);
		FUZZ_CHECK(json_end(&j) == 0);
		FUZZ_CHECK(t.seen && t.frames == req->nframes);
	}
	jbuf_free(&b);
	free(mods);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct symjson_request req;
	struct buildid id = { 2, { 0xab, 0xcd } };
	char why[256], *s;
	size_t i;
	int rc;

	if ((s = fuzz_copy(data, size)) == NULL)
		return 0;
	why[0] = '\0';
	if (size > 0 && s[0] == '?')
		rc = symjson_parse_query(s + 1, size - 1, &id, &lim, &req, why,
		    sizeof(why));
	else
		rc = symjson_parse_request(s, size, &lim, &req, why,
		    sizeof(why));
	free(s);
	FUZZ_CHECK(rc == 0 || rc == SYMJSON_BAD || rc == SYMJSON_NOMEM);
	if (rc != 0) {
		FUZZ_CHECK(why[0] != '\0' && strchr(why, '\n') == NULL);
		return 0;
	}
	FUZZ_CHECK(req.nframes <= lim.max_frames);
	FUZZ_CHECK(req.nmodules <= lim.max_modules);
	FUZZ_CHECK(req.timeout_ms <= SYMJSON_TIMEOUT_MAX);
	for (i = 0; i < req.nframes; i++)
		FUZZ_CHECK(req.frames[i].module < req.nmodules);
	check_answer(&req);
	symjson_request_free(&req);
	return 0;
}
