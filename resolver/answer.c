/*
 * resolver/answer.c: the answer table (resolver/answer.h).
 *
 * A remembered failure is no miss: clients cache a 404 for long
 * (debuginfod-find for 10 minutes), so an upstream's failure is a 502 that
 * says when to retry; and a section's failure is a 503, on which clients
 * fetch the whole file and cut the section themselves.
 */
#include "resolver/answer.h"

#include <stddef.h>

#define LOCAL_RETRY_AFTER 30 /* the maintenance job evicts every few seconds */

static const struct answer_row rows[ANSWER_OUTCOMES] = {
	[ANSWER_NOT_FOUND] = { 404, 404, METRICS_NOTFOUND, "local",
	    ANSWER_MAX_AGE, 0, "not found", "no such section for this build-id",
	    1 },
	[ANSWER_LOOP] = { 404, 404, METRICS_NOTFOUND, "loop", ANSWER_NO_SECONDS,
	    0, "not forwarded: a request loop", "not forwarded: a request loop",
	    0 },
	[ANSWER_REMEMBERED_MISS] = { 404, 404, METRICS_NEGATIVE, "cache",
	    ANSWER_MAX_AGE, 0, "not found", "not found", 1 },
	[ANSWER_REMEMBERED_ERROR] = { 502, 503, METRICS_NEGATIVE, "cache",
	    ANSWER_RETRY_AFTER, 0, "upstreams failing; try again later",
	    "upstreams failing; try again later", 0 },
	[ANSWER_REPO_FAILING] = { 502, 503, METRICS_NEGATIVE, "repo",
	    ANSWER_RETRY_AFTER, 0,
	    "repository download failing; try again later",
	    "repository download failing; try again later", 0 },
	[ANSWER_FILL_NOT_FOUND] = { 404, 404, METRICS_NOTFOUND, "upstream",
	    ANSWER_MAX_AGE, 0, "not found", "not found", 1 },
	[ANSWER_FILL_FAILED] = { 502, 503, METRICS_ERROR, "upstream",
	    ANSWER_RETRY_AFTER, 0, "every source failed", "every source failed",
	    0 },
	[ANSWER_UNAVAILABLE] = { 503, 503, METRICS_ERROR, "local",
	    ANSWER_RETRY_AFTER, LOCAL_RETRY_AFTER,
	    "this server cannot keep it now", "this server cannot keep it now",
	    0 },
	[ANSWER_TOO_BIG] = { 406, 406, METRICS_MISS, "upstream",
	    ANSWER_NO_SECONDS, 0, "larger than X-DEBUGINFOD-MAXSIZE",
	    "larger than X-DEBUGINFOD-MAXSIZE", 0 },
	[ANSWER_INTERNAL] = { 503, 503, METRICS_ERROR, "-", ANSWER_NO_SECONDS,
	    0, "server error", "server error", 0 },
};

const struct answer_row *
answer_row(enum answer_outcome o)
{
	return &rows[o];
}

int
answer_status(enum answer_outcome o, int section)
{
	return section ? rows[o].section_status : rows[o].status;
}

const char *
answer_why(enum answer_outcome o, int section, const char *why)
{
	if (why != NULL)
		return why;
	return section ? rows[o].section_why : rows[o].why;
}

const char *
answer_label(enum metrics_result r)
{
	switch (r) {
	case METRICS_HIT:
		return "HIT";
	case METRICS_JOINED:
		return "JOINED";
	case METRICS_NEGATIVE:
		return "NEGATIVE";
	case METRICS_ERROR:
	case METRICS_BAD:
		return "ERROR";
	case METRICS_MISS:
	case METRICS_NOTFOUND:
		break;
	}
	return "MISS";
}
