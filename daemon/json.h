/*
 * daemon/json.h: the JSON of /metadata: writing results, and reading the
 * results of an upstream's answer; and one member of an object (what
 * dbgmirror reads of the daemon's admin answers).  The buffer, the string
 * writer and the reader are indexer/json.h's, which says what is written
 * for any bytes.  Pure functions of their input; no I/O.
 */
#ifndef DAEMON_JSON_H
#define DAEMON_JSON_H

#include <stddef.h>

#include "indexer/json.h"

/*
 * Append one result, {"type":..,"buildid":..,"file":..[,"archive":..]},
 * after a comma when b is not empty; archive NULL or "" leaves it out.
 * Nothing is appended when it does not fit: -1.
 */
int json_result(struct jbuf *b, const char *type, const char *buildid,
    const char *file, const char *archive);

/*
 * Read an upstream's answer s[0..len): a JSON object whose "results" is
 * an array of objects and whose "complete", when there, is a boolean.
 * Each result whose type is "executable" or "debuginfo" and which has a
 * string buildid and file is appended to b with json_result (other
 * members dropped); results of other types are no results of ours.
 * *complete is the answer's (1 when it does not say), and 0 when a result
 * of ours had to be dropped (a field missing, not a string, holding a
 * NUL, or no room left in b).
 * Returns the results appended, or -1 when s is not such an answer (b
 * then unchanged).  Nesting is bounded.
 */
int json_read_results(const char *s, size_t len, struct jbuf *b, int *complete);

/*
 * The member name of the JSON object s[0..len), appended to out: a
 * string's bytes (unescaped), a number, true, false or null as written.
 * 1 when it is there, 0 when not, -1 when s is no JSON object or the
 * member is an object or array.
 */
int json_get(const char *s, size_t len, const char *name, struct jbuf *out);

#endif /* DAEMON_JSON_H */
