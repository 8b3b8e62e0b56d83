/*
 * cli/symout.h: the answers of POST /symbolicate as dbgmirror symbolicate
 * reads them back, and the lines eu-addr2line -f -i -C would print for
 * one address.
 *
 * The answer is read with indexer/json.h's strict reader into one entry
 * per module and per frame, each keeping the object the daemon wrote
 * (json), so that answers of several requests can be joined into one
 * document.  Pure functions of their input and output stream; one thread.
 */
#ifndef CLI_SYMOUT_H
#define CLI_SYMOUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A module's or a frame's status, as the answer spells it. */
enum symout_status {
	SYMOUT_OK,
	SYMOUT_NO_LINE,
	SYMOUT_NO_SYMBOL,
	SYMOUT_BAD_ADDRESS,
	SYMOUT_MISSING,
	SYMOUT_PENDING,
	SYMOUT_ERROR,
};

/* Its name in the answer ("ok", "no_line", ...). */
const char *symout_status_name(enum symout_status s);

/* One frame of an address, innermost first (the answer's "frames"). */
struct symout_frame {
	char *function; /* demangled unless the request said not; NULL */
	char *file; /* NULL when there is no line */
	uint32_t line, column;
	int inlined;
};

/* The answer for one address. */
struct symout_addr {
	enum symout_status status;
	char *symbol; /* the ELF symbol, raw; NULL */
	char *reason; /* bad_address, error: why; else NULL */
	struct symout_frame *frames;
	size_t nframes;
	char *json; /* the object as the daemon wrote it */
};

/* The answer for one module. */
struct symout_module {
	enum symout_status status; /* ok, missing, pending or error */
	char *reason; /* NULL */
	char *json;
};

struct symout_answer {
	struct symout_module *modules;
	size_t nmodules;
	struct symout_addr *addrs;
	size_t naddrs;
};

/*
 * Read an answer body into *ans.  0; -1 with a one-line reason in why
 * (not JSON, a member of the wrong type, an unknown status), *ans then
 * empty.
 */
int symout_parse(const char *body, size_t len, struct symout_answer *ans,
    char *why, size_t whylen);
void symout_answer_free(struct symout_answer *ans);
void symout_addr_free(struct symout_addr *a);

/*
 * 1 when the daemon answered the address for good: any status but
 * missing, pending and error (its module's), which leave it unknown.
 */
int symout_answered(const struct symout_addr *a);

/*
 * What eu-addr2line -f -i -C prints for an address: the innermost
 * function, "NAME inlined at CALL-SITE in SYMBOL" when it is inlined, its
 * FILE:LINE[:COLUMN], then a name and a place for every frame that calls
 * it inline, outwards; "??" and "??:0" for what is unknown.  SYMBOL is the
 * ELF symbol of the address, demangled when demangle is set (the
 * outermost function when there is no symbol).
 */
void symout_addr2line(FILE *fp, const struct symout_addr *a, int demangle);

#endif /* CLI_SYMOUT_H */
