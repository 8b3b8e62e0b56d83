/*
 * resolver/answer.h: the one table of how a request that gets no file
 * ends: its HTTP status (a section's, which clients then fetch whole, may
 * differ), the access log's result, the metric, the header that says when
 * to ask again, the reason, and whether it goes into the missing-id report.
 *
 * The resolver picks an outcome; a client (daemon/serve.c for connections)
 * reads its row.  No other place spells a status out.
 */
#ifndef RESOLVER_ANSWER_H
#define RESOLVER_ANSWER_H

#include "daemon/metrics.h"

enum answer_outcome {
	ANSWER_NOT_FOUND, /* every source said no */
	ANSWER_LOOP, /* not forwarded: it went round a loop of servers */
	ANSWER_REMEMBERED_MISS, /* a negative entry: not found a moment ago */
	ANSWER_REMEMBERED_ERROR, /* an error entry: the upstreams failed */
	ANSWER_REPO_FAILING, /* the package's download failed a moment ago */
	ANSWER_FILL_NOT_FOUND, /* a fill found nothing: the entry it left */
	ANSWER_FILL_FAILED, /* a fill failed: its error entry, if any */
	ANSWER_UNAVAILABLE, /* this server cannot keep the file now */
	ANSWER_TOO_BIG, /* over the client's X-DEBUGINFOD-MAXSIZE */
	ANSWER_INTERNAL, /* this server failed (index, memory, shutdown) */
	ANSWER_OUTCOMES
};

/* What the answer's seconds are. */
enum answer_seconds {
	ANSWER_NO_SECONDS,
	ANSWER_MAX_AGE, /* Cache-Control: max-age on a 404 */
	ANSWER_RETRY_AFTER, /* Retry-After on a 502 or 503 */
};

struct answer_row {
	int status;
	int section_status; /* for /section/ requests */
	enum metrics_result result; /* JOINED where a joined request's is */
	const char *source; /* the access log's source, unless one is given */
	enum answer_seconds seconds;
	unsigned fixed_seconds; /* when the seconds are always these; else 0 */
	const char *why; /* the reason, unless one is given */
	const char *section_why;
	int missed; /* noted in the missing-id report */
};

const struct answer_row *answer_row(enum answer_outcome o);
/* The status of o for a request that is (section) or is not a section's. */
int answer_status(enum answer_outcome o, int section);
/* The reason: why when given, else the row's. */
const char *answer_why(enum answer_outcome o, int section, const char *why);
/* The access log's label of a result. */
const char *answer_label(enum metrics_result r);

#endif /* RESOLVER_ANSWER_H */
