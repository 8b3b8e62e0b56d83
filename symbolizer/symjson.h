/*
 * symbolizer/symjson.h: the requests and answers of /symbolicate, as pure
 * functions: a POST body or a GET query in, a checked request out; a
 * request and its modules' tables in, the JSON answer out.  No I/O, no
 * HTTP, no global state: any thread.
 *
 * POST /symbolicate:
 *   {"modules":[{"build_id":"HEX","addr_mode":"va|file_offset|abs",
 *                "start":ADDR,"file_offset":ADDR}],
 *    "frames":[{"module":N,"addr":ADDR,"return_address":BOOL}],
 *    "options":{"demangle":BOOL,"timeout_ms":N}}
 * ADDR is a string, "0x" and hex digits or decimal digits, or a JSON
 * integer; "addr_mode" is "va" when left out, "start" and "file_offset"
 * are needed for "abs" only.  Members not named here are ignored.
 *
 * GET /buildid/ID/symbolicate?addr=ADDR,ADDR...[&mode=va|file_offset]
 *   [&return=0|1][&demangle=0|1]: one module, every frame of it.
 *
 * The answer: {"modules":[{"build_id","status","source","alt"|"reason"}],
 * "frames":[{"status","addr","lookup_addr","symbol","sym_addr",
 * "sym_offset","nearest","frames":[{"function","file","line","column",
 * "inlined"}]}]}, frames in request order, one for each (see
 * symjson_write_answer for which members go with which status).
 */
#ifndef SYMBOLIZER_SYMJSON_H
#define SYMBOLIZER_SYMJSON_H

#include <stddef.h>
#include <stdint.h>

#include "indexer/buildid.h"
#include "indexer/json.h"
#include "symbolizer/symtab.h"

/* What a request may hold (the configuration's symbolicate-max-*). */
struct symjson_limits {
	size_t max_frames; /* 10,000 by default */
	size_t max_modules; /* 1,000 by default */
	size_t max_body; /* bytes of a POST body */
};

/* The default of options.timeout_ms, and the most it may be. */
#define SYMJSON_TIMEOUT_DEFAULT 2000
#define SYMJSON_TIMEOUT_MAX 600000

enum symjson_mode {
	SYMJSON_VA, /* an ELF virtual address */
	SYMJSON_FILE_OFFSET, /* an offset in the ELF file */
	SYMJSON_ABS, /* a process address in a mapping */
};

struct symjson_module {
	struct buildid id;
	enum symjson_mode mode;
	uint64_t start, file_offset; /* SYMJSON_ABS: the mapping */
};

struct symjson_frame {
	uint32_t module; /* an index into modules */
	uint64_t addr;
	int return_address; /* look up addr - 1 */
};

struct symjson_request {
	struct symjson_module *modules;
	size_t nmodules;
	struct symjson_frame *frames;
	size_t nframes;
	int demangle; /* 1 unless options.demangle is false */
	uint32_t timeout_ms;
};

/* The results of the parsers. */
#define SYMJSON_BAD (-1) /* bad input: a 400, with why */
#define SYMJSON_NOMEM (-2) /* out of memory: a 503 */

/*
 * Read a POST body into req.  0; SYMJSON_BAD with a one-line reason in why
 * (malformed JSON, a member of the wrong type, too many frames or modules,
 * a body over lim->max_body, a bad build-id, an address beyond 64 bits,
 * an unknown addr_mode, abs without start and file_offset, a module index
 * out of range, ...); or SYMJSON_NOMEM.  Only 0 leaves req to
 * symjson_request_free().
 */
int symjson_parse_request(const char *body, size_t len,
    const struct symjson_limits *lim, struct symjson_request *req, char *why,
    size_t whylen);

/*
 * Read the query string of GET /buildid/ID/symbolicate (without the "?")
 * into req: one module, id, and a frame for each address.  Values may be
 * percent-encoded.  Results as symjson_parse_request's; an unknown or
 * repeated parameter is SYMJSON_BAD too.
 */
int symjson_parse_query(const char *query, size_t len, const struct buildid *id,
    const struct symjson_limits *lim, struct symjson_request *req, char *why,
    size_t whylen);

void symjson_request_free(struct symjson_request *req);

/* Where a module stands. */
enum symjson_status {
	SYMJSON_OK, /* its table is ready */
	SYMJSON_MISSING, /* no source has the build-id */
	SYMJSON_PENDING, /* being fetched or built */
	SYMJSON_ERROR, /* failed: reason says why */
};

struct symjson_answer_module {
	enum symjson_status status;
	const char *reason; /* SYMJSON_ERROR: one line; else NULL */
	const struct symtab *table; /* SYMJSON_OK */
};

/*
 * Write the answer to req, mods[i] being where req->modules[i] stands, to
 * out (which the caller bounds with out->max).  Every frame of req has its
 * entry, in order: for a module that is ok, the lookup of its address
 * (mapped by the module's addr_mode, less one for a return address):
 * "ok", "no_line", "no_symbol" (with the nearest symbol below, if any,
 * and "nearest":true) or "bad_address" (with a reason: no program
 * headers, an offset in no segment, below the mapping, return address 0);
 * else the module's status ("missing", "pending", "error" with its
 * reason).  Function names are demangled when req->demangle; "symbol" is
 * always the raw name.  0, or -1 when out is full or memory ran out (out
 * then holds a cut answer, not to be sent).
 */
int symjson_write_answer(struct jbuf *out, const struct symjson_request *req,
    const struct symjson_answer_module *mods);

#endif /* SYMBOLIZER_SYMJSON_H */
