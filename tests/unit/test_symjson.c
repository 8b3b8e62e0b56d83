/*
 * tests/unit/test_symjson.c: symbolizer/symjson.c, the requests and
 * answers of /symbolicate: every bad input the contract lists refused
 * with its reason, the GET form, and answers in the contract's shape for
 * every status, against a table of a C++ program compiled here.
 */
#include "symbolizer/symjson.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "indexer/elf.h"
#include "symbolizer/build.h"
#include "tests/shell.h"
#include "tests/tap.h"
#include "tests/testdir.h"

#define WHY 256

static const struct symjson_limits lim = { 3, 2, 4096 };

static const char id40[] = "0123456789abcdef0123456789abcdef01234567";

/* Parse body; the reason, "OK", or "NOMEM"; req freed unless keep. */
static const char *
req_why(const char *body, struct symjson_request *keep)
{
	static char why[WHY];
	struct symjson_request req;
	int rc = symjson_parse_request(body, strlen(body), &lim, &req, why,
	    sizeof(why));

	if (rc == SYMJSON_NOMEM)
		return "NOMEM";
	if (rc != 0)
		return why;
	if (keep != NULL)
		*keep = req;
	else
		symjson_request_free(&req);
	return "OK";
}

/* like() for C: s holds sub. */
#define has(s, sub, what) \
	do { \
		const char *has_s_ = (s); \
		if (!ok(strstr(has_s_, (sub)) != NULL, (what))) \
			printf("#   got \"%s\", expected to hold \"%s\"\n", \
			    has_s_, (sub)); \
	} while (0)

static void
test_good(void)
{
	struct symjson_request r;
	char body[1024];

	snprintf(body, sizeof(body),
	    "{\"modules\":[{\"build_id\":\"%s\",\"addr_mode\":\"va\"},"
	    "{\"build_id\":\"%s\",\"addr_mode\":\"abs\",\"start\":"
	    "\"0x7f0000001000\",\"file_offset\":4096,\"extra\":[1]}],"
	    "\"frames\":[{\"module\":0,\"addr\":\"0x1139\","
	    "\"return_address\":true},{\"addr\":\"42\",\"module\":1}],"
	    "\"options\":{\"demangle\":false,\"timeout_ms\":500},"
	    "\"future\":{}}",
	    id40, "ab");
	is_str(req_why(body, &r), "OK", "a request of both kinds of module");
	is_int(r.nmodules, 2, "two modules");
	is_int(r.modules[0].mode, SYMJSON_VA, "va");
	is_int(r.modules[0].id.len, 20, "a 20-byte build-id");
	is_int(r.modules[1].mode, SYMJSON_ABS, "abs");
	is_int(r.modules[1].start, 0x7f0000001000ull, "its start, a string");
	is_int(r.modules[1].file_offset, 4096, "its offset, a number");
	is_int(r.nframes, 2, "two frames");
	is_int(r.frames[0].addr, 0x1139, "a hex address");
	is_int(r.frames[0].return_address, 1, "a return address");
	is_int(r.frames[1].addr, 42, "a decimal address");
	is_int(r.frames[1].module, 1, "of module 1, given after addr");
	is_int(r.frames[1].return_address, 0, "not a return address");
	is_int(r.demangle, 0, "demangle off");
	is_int(r.timeout_ms, 500, "timeout_ms");
	symjson_request_free(&r);
	is_str(req_why("{\"frames\":[],\"modules\":[]}", &r), "OK",
	    "an empty request");
	is_int(r.demangle, 1, "demangles by default");
	is_int(r.timeout_ms, SYMJSON_TIMEOUT_DEFAULT, "the default timeout");
	symjson_request_free(&r);
	is_str(req_why("{\"modules\":[{\"build_id\":\"ab\"}],\"frames\":[{"
		       "\"module\":0,\"addr\":\"0x0000000000000000000001\"},{"
		       "\"module\":0,\"addr\":\"0xffffffffffffffff\"}]}",
		   NULL),
	    "OK", "leading zeros, and the largest address");
}

static void
test_bad(void)
{
	char body[8192];
	size_t n;

	has(req_why("{\"modules\":[] \"frames\":[]}", NULL),
	    "malformed JSON at byte 14", "malformed JSON, with where");
	has(req_why("{\"modules\":[}", NULL), "modules[0]: expected an object",
	    "a cut array");
	has(req_why("[]", NULL), "not a JSON object", "not an object");
	has(req_why("", NULL), "not a JSON object", "nothing");
	has(req_why("{\"modules\":[],\"frames\":[]} x", NULL), "malformed",
	    "bytes after the object");
	has(req_why("{\"modules\":{},\"frames\":[]}", NULL),
	    "\"modules\": expected an array", "modules not an array");
	has(req_why("{\"modules\":[],\"frames\":[1]}", NULL),
	    "frames[0]: expected an object", "a frame not an object");
	has(req_why("{\"modules\":[{\"build_id\":12}],\"frames\":[]}", NULL),
	    "modules[0].build_id: expected a string", "a build-id number");
	has(req_why("{\"modules\":[{\"build_id\":\"ab\"}],\"frames\":[{"
		    "\"module\":0,\"addr\":true}]}",
		NULL),
	    "frames[0].addr: expected an address", "an address boolean");
	has(req_why("{\"modules\":[{\"build_id\":\"ab\"}],\"frames\":[{"
		    "\"module\":\"0\",\"addr\":1}]}",
		NULL),
	    "frames[0].module: expected a number", "a module string");
	has(req_why("{\"modules\":[{\"build_id\":\"ab\"}],\"frames\":[{"
		    "\"module\":0,\"addr\":1,\"return_address\":1}]}",
		NULL),
	    "frames[0].return_address: expected true or false",
	    "return_address a number");
	has(req_why("{\"modules\":[],\"frames\":[],\"options\":{"
		    "\"timeout_ms\":\"5\"}}",
		NULL),
	    "options.timeout_ms", "timeout_ms a string");
	has(req_why("{\"modules\":[],\"frames\":[],\"options\":{"
		    "\"timeout_ms\":600001}}",
		NULL),
	    "options.timeout_ms", "timeout_ms too long");
	has(req_why("{\"modules\":[],\"frames\":[],\"options\":{"
		    "\"demangle\":0}}",
		NULL),
	    "options[0].demangle: expected true or false", "demangle a number");
	has(req_why("{\"modules\":[{\"build_id\":\"ab\"}],\"frames\":["
		    "{\"module\":0,\"addr\":1},{\"module\":0,\"addr\":1},"
		    "{\"module\":0,\"addr\":1},{\"module\":0,\"addr\":1}]}",
		NULL),
	    "more than 3 frames", "more frames than the limit");
	has(req_why("{\"modules\":[{\"build_id\":\"ab\"},{\"build_id\":"
		    "\"ab\"},{\"build_id\":\"ab\"}],\"frames\":[]}",
		NULL),
	    "more than 2 modules", "more modules than the limit");
	n = (size_t)snprintf(body, sizeof(body),
	    "{\"modules\":[],\"frames\""
	    ":[],\"pad\":\"");
	memset(body + n, 'x', 4200);
	snprintf(body + n + 4200, sizeof(body) - n - 4200, "\"}");
	has(req_why(body, NULL), "body over 4096 bytes", "a body over the cap");
	has(req_why("{\"modules\":[{\"build_id\":\"abc\"}],\"frames\":[]}",
		NULL),
	    "modules[0].build_id: ", "an odd-length build-id");
	has(req_why("{\"modules\":[{\"build_id\":\"zz\"}],\"frames\":[]}",
		NULL),
	    "modules[0].build_id: ", "a build-id not hex");
	has(req_why("{\"modules\":[{\"build_id\":\"\"}],\"frames\":[]}", NULL),
	    "modules[0].build_id: ", "an empty build-id");
	n = (size_t)snprintf(body, sizeof(body),
	    "{\"modules\":[{\"build_id\":\"");
	memset(body + n, 'a', 130);
	snprintf(body + n + 130, sizeof(body) - n - 130, "\"}],\"frames\":[]}");
	has(req_why(body, NULL),
	    "modules[0].build_id: ", "a build-id of 130 hex digits");
	has(req_why("{\"modules\":[{\"addr_mode\":\"va\"}],\"frames\":[]}",
		NULL),
	    "modules[0]: no build_id", "a module without build_id");
	has(req_why("{\"modules\":[{\"build_id\":\"ab\"}],\"frames\":[{"
		    "\"module\":0,\"addr\":\"0x10000000000000000\"}]}",
		NULL),
	    "frames[0].addr: beyond 64 bits", "a hex address of 65 bits");
	has(req_why("{\"modules\":[{\"build_id\":\"ab\"}],\"frames\":[{"
		    "\"module\":0,\"addr\":\"18446744073709551616\"}]}",
		NULL),
	    "frames[0].addr: beyond 64 bits", "a decimal string of 65 bits");
	has(req_why("{\"modules\":[{\"build_id\":\"ab\"}],\"frames\":[{"
		    "\"module\":0,\"addr\":18446744073709551616}]}",
		NULL),
	    "frames[0].addr: beyond 64 bits", "a number of 65 bits");
	has(req_why("{\"modules\":[{\"build_id\":\"ab\"}],\"frames\":[{"
		    "\"module\":0,\"addr\":-1}]}",
		NULL),
	    "frames[0].addr: not an address", "a negative address");
	has(req_why("{\"modules\":[{\"build_id\":\"ab\"}],\"frames\":[{"
		    "\"module\":0,\"addr\":1.5}]}",
		NULL),
	    "frames[0].addr: not an address", "a fraction");
	has(req_why("{\"modules\":[{\"build_id\":\"ab\"}],\"frames\":[{"
		    "\"module\":0,\"addr\":\"0x\"}]}",
		NULL),
	    "frames[0].addr: not an address", "0x alone");
	has(req_why("{\"modules\":[{\"build_id\":\"ab\",\"addr_mode\":"
		    "\"rel\"}],\"frames\":[]}",
		NULL),
	    "modules[0].addr_mode: not va, file_offset or abs",
	    "an unknown addr_mode");
	has(req_why("{\"modules\":[{\"build_id\":\"ab\",\"addr_mode\":"
		    "\"abs\",\"start\":1}],\"frames\":[]}",
		NULL),
	    "modules[0]: abs needs start and file_offset",
	    "abs without file_offset");
	has(req_why("{\"frames\":[{\"module\":1,\"addr\":1}],\"modules\":[{"
		    "\"build_id\":\"ab\"}]}",
		NULL),
	    "frames[0].module: no such module (1 given)",
	    "a module index out of range");
	has(req_why("{\"modules\":[{\"build_id\":\"ab\"}],\"frames\":[{"
		    "\"module\":4294967296,\"addr\":1}]}",
		NULL),
	    "frames[0].module: no such module", "a huge module index");
	has(req_why("{\"modules\":[],\"frames\":[{\"addr\":1}]}", NULL),
	    "frames[0]: no module", "a frame without module");
	has(req_why("{\"modules\":[{\"build_id\":\"ab\"}],\"frames\":[{"
		    "\"module\":0}]}",
		NULL),
	    "frames[0]: no addr", "a frame without addr");
	has(req_why("{\"modules\":[]}", NULL), "no \"frames\" array",
	    "no frames");
	has(req_why("{\"frames\":[]}", NULL), "no \"modules\" array",
	    "no modules");
	has(req_why("{\"modules\":[],\"modules\":[],\"frames\":[]}", NULL),
	    "\"modules\" given twice", "modules twice");
	has(req_why("{\"modules\":[{\"build_id\":\"a\\u0000b\"}],\"frames\":"
		    "[]}",
		NULL),
	    "a NUL in it", "a NUL in a string");
}

/* Parse a query; the reason or "OK". */
static const char *
query_why(const char *q, struct symjson_request *keep)
{
	static char why[WHY];
	struct symjson_request req;
	struct buildid id;
	const char *w;

	buildid_parse(&id, id40, strlen(id40), &w);
	if (symjson_parse_query(q, strlen(q), &id, &lim, &req, why,
		sizeof(why)) != 0)
		return why;
	if (keep != NULL)
		*keep = req;
	else
		symjson_request_free(&req);
	return "OK";
}

static void
test_query(void)
{
	struct symjson_request r;

	is_str(query_why("addr=0x1139,0x2a0f0&mode=va&return=1", &r), "OK",
	    "the GET form");
	is_int(r.nmodules, 1, "one module");
	is_int(r.modules[0].id.len, 20, "the build-id of the path");
	is_int(r.nframes, 2, "two addresses");
	is_int(r.frames[1].addr, 0x2a0f0, "in order");
	ok(r.frames[0].return_address && r.frames[1].return_address,
	    "return=1: all return addresses");
	symjson_request_free(&r);
	is_str(query_why("mode=file_offset&addr=0x1%2C16&demangle=0", &r), "OK",
	    "percent-encoded commas, file_offset, demangle=0");
	ok(r.nframes == 2 && r.frames[1].addr == 16 &&
		r.modules[0].mode == SYMJSON_FILE_OFFSET && !r.demangle,
	    "read as such");
	symjson_request_free(&r);
	has(query_why("addr=1&mode=abs", NULL), "mode: expected va or",
	    "abs needs the POST form");
	has(query_why("addr=1&x=2", NULL), "unknown parameter", "unknown key");
	has(query_why("addr=1&addr=2", NULL), "addr given twice",
	    "a repeated key");
	has(query_why("addr=", NULL), "addr #1: not an address", "empty addr");
	has(query_why("addr=1,,2", NULL), "addr #2: not an address",
	    "an empty element");
	has(query_why("mode=va", NULL), "no addr", "no addr");
	has(query_why("addr=1,2,3,4", NULL), "more than 3 addresses",
	    "more addresses than the limit");
	has(query_why("addr=%zz", NULL), "bad percent-encoding", "bad %XX");
	has(query_why("addr=%00", NULL), "bad percent-encoding", "a NUL");
	has(query_why("addr=1&return=2", NULL), "return: expected 0 or 1",
	    "return=2");
	has(query_why("addr=0x10000000000000000", NULL), "beyond 64 bits",
	    "a 65-bit address");
}

/* The answer to body against mods, or "(failed)"; static. */
static const char *
answer(const char *body, const struct symjson_answer_module *mods, size_t max)
{
	static char out[16384];
	struct symjson_limits big = { 100, 10, 1 << 20 };
	struct symjson_request req;
	struct jbuf b = { .max = max };
	char why[WHY];
	struct json_in j;

	if (symjson_parse_request(body, strlen(body), &big, &req, why,
		sizeof(why)) != 0) {
		printf("# %s\n", why);
		return "(bad request)";
	}
	if (symjson_write_answer(&b, &req, mods) == -1) {
		symjson_request_free(&req);
		jbuf_free(&b);
		return "(failed)";
	}
	json_in_init(&j, b.p, b.len);
	snprintf(out, sizeof(out), "%s",
	    json_skip(&j) == 0 && json_end(&j) == 0 ? b.p : "(not JSON)");
	symjson_request_free(&req);
	jbuf_free(&b);
	return out;
}

static void
test_answer(void)
{
	char err[512], body[4096], expect[PATH_MAX + 1024],
	    hex[BUILDID_HEX_MAX];
	struct symjson_answer_module mods[5];
	struct symbuild_in in = { -1, -1, -1, NULL };
	struct symtab *t = NULL;
	struct buildid id;
	const char *why, *a;
	uint64_t f = 0;
	int fd, out;
	FILE *fp;

	if (!ok(shell("cd '%s' && printf 'namespace ns {\\nstatic inline "
		      "__attribute__((always_inline)) int\\nhelper(int "
		      "x)\\n{\\n"
		      "\\treturn x ^ 0x5a5a;\\n}\\n__attribute__((noinline)) "
		      "int\\nf(int x)\\n{\\n\\treturn helper(x) * 3;\\n}\\n}\\n"
		      "int\\nmain(int argc, char **)\\n{\\n\\treturn "
		      "ns::f(argc) & 1;\\n}\\n' > p.cc && g++ -O2 -g -o p p.cc "
		      "&& nm p | awk '/ _ZN2ns1fEi$/ {print $1}' > f",
		    tmpdir),
		"a C++ program"))
		return;
	if ((fp = fopen(at("f"), "r")) != NULL) {
		if (fscanf(fp, "%lx", &f) != 1)
			f = 0;
		fclose(fp);
	}
	in.debug_fd = open(at("p"), O_RDONLY);
	in.tmpdir = tmpdir;
	out = open(at("p.tbl"), O_RDWR | O_CREAT | O_TRUNC, 0644);
	ok(f != 0 && symbuild_run(&in, out, NULL, err, sizeof(err)) == 0,
	    "its table");
	close(in.debug_fd);
	if ((fd = open(at("p.tbl"), O_RDONLY)) != -1)
		t = symtab_open(fd, &why);
	close(out);
	close(fd);
	if (!ok(t != NULL, "opens"))
		return;
	memset(mods, 0, sizeof(mods));
	mods[0] = (struct symjson_answer_module){ SYMJSON_OK, NULL, t };
	mods[1] = (struct symjson_answer_module){ SYMJSON_OK, NULL, t };
	mods[2].status = SYMJSON_MISSING;
	mods[3].status = SYMJSON_PENDING;
	mods[4] = (struct symjson_answer_module){ SYMJSON_ERROR,
		"the \"debuginfo\" is damaged", NULL };
	symtab_buildid(t, &id);
	buildid_format(&id, hex);
	snprintf(body, sizeof(body),
	    "{\"modules\":[{\"build_id\":\"%s\"},{\"build_id\":\"%s\","
	    "\"addr_mode\":\"file_offset\"},{\"build_id\":\"aa\"},"
	    "{\"build_id\":\"bb\"},{\"build_id\":\"cc\"}],\"frames\":["
	    "{\"module\":0,\"addr\":\"0x%lx\"},"
	    "{\"module\":0,\"addr\":\"0x%lx\",\"return_address\":true},"
	    "{\"module\":1,\"addr\":\"0x%lx\"},"
	    "{\"module\":0,\"addr\":\"0x10\"},"
	    "{\"module\":0,\"addr\":0,\"return_address\":true},"
	    "{\"module\":1,\"addr\":\"0xffffffffff\"},"
	    "{\"module\":2,\"addr\":1},{\"module\":3,\"addr\":2},"
	    "{\"module\":4,\"addr\":3}]}",
	    hex, hex, f, f + 1, f);
	a = answer(body, mods, 1 << 20);
	snprintf(expect, sizeof(expect),
	    "{\"modules\":[{\"build_id\":\"%s\",\"status\":\"ok\","
	    "\"source\":\"debuginfo\",\"alt\":null},",
	    hex);
	has(a, expect, "modules: ok, with the source and no alt");
	has(a,
	    "{\"build_id\":\"aa\",\"status\":\"missing\"},{\"build_id\":\"bb\","
	    "\"status\":\"pending\"},{\"build_id\":\"cc\",\"status\":\"error\","
	    "\"reason\":\"the \\\"debuginfo\\\" is damaged\"}]",
	    "missing, pending, error with its reason");
	snprintf(expect, sizeof(expect),
	    "\"frames\":[{\"status\":\"ok\",\"addr\":\"0x%lx\","
	    "\"lookup_addr\":\"0x%lx\",\"symbol\":\"_ZN2ns1fEi\",\"sym_addr\":"
	    "\"0x%lx\",\"sym_offset\":0,\"frames\":[{\"function\":"
	    "\"helper\",\"file\":\"%s/p.cc\",\"line\":5,",
	    f, f, f, tmpdir);
	has(a, expect, "an inlined frame first, demangled, the raw symbol");
	has(a, "\"inlined\":true},{\"function\":\"ns::f(int)\",\"file\":",
	    "then its caller");
	snprintf(expect, sizeof(expect),
	    "{\"status\":\"ok\",\"addr\":\"0x%lx\",\"lookup_addr\":\"0x%lx\"",
	    f + 1, f);
	has(a, expect, "a return address looks up the byte before");
	has(a,
	    "{\"status\":\"bad_address\",\"addr\":\"0xffffffffff\","
	    "\"reason\":\"file offset in no loaded segment\"}",
	    "a file offset in no segment: bad_address, saying why");
	has(a,
	    "{\"status\":\"no_symbol\",\"addr\":\"0x10\",\"lookup_addr\":"
	    "\"0x10\",\"frames\":[]}",
	    "an address in no function");
	has(a,
	    "{\"status\":\"bad_address\",\"addr\":\"0x0\",\"reason\":\"return "
	    "address 0\"}",
	    "return address 0");
	has(a,
	    "{\"status\":\"missing\",\"addr\":\"0x1\"},{\"status\":\"pending\","
	    "\"addr\":\"0x2\"},{\"status\":\"error\",\"addr\":\"0x3\","
	    "\"reason\":",
	    "frames of modules that are not ok say why, in order");
	is_str(answer(body, mods, 100), "(failed)",
	    "an answer over its bound fails");
	snprintf(body, sizeof(body),
	    "{\"modules\":[{\"build_id\":\"%s\"}],\"frames\":[{\"module\":0,"
	    "\"addr\":\"0x%lx\"}],\"options\":{\"demangle\":false}}",
	    hex, f + 2);
	has(answer(body, mods, 1 << 20), "\"function\":\"_ZN2ns1fEi\"",
	    "demangle false: raw names");
	symtab_close(t);
}

int
main(void)
{
	char real[PATH_MAX];

	test_good();
	test_bad();
	test_query();
	if (elf_init() == 0 && testdir_make("test_symjson") == 0 &&
	    realpath(tmpdir, real) != NULL) {
		snprintf(tmpdir, sizeof(tmpdir), "%s", real);
		test_answer();
		testdir_remove();
	}
	return tap_done();
}
