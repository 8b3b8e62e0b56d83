/*
 * sources/upstream.h: the upstream debuginfods as a source (federation),
 * and their /metadata answers.
 *
 * The upstream set (fetchers/upstream.h) lives on the producers' loop,
 * which drives libcurl: fills from upstreams run there, and /metadata
 * queries made on any thread are handed to it here.
 */
#ifndef SOURCES_UPSTREAM_H
#define SOURCES_UPSTREAM_H

#include <stddef.h>

#include "daemon/route.h"

struct config;
struct event_base;
struct producers;
struct upstream_changes;
struct upstream_meta_answer;
struct upstreams;

/*
 * The configuration's upstreams, on base's loop (the producers'); pc
 * learns the negative and error TTLs their misses are remembered for.
 * Redirects never lead to cfg's listen addresses (those of every later
 * configuration too: they change only with a restart).  NULL with err.
 */
struct upstreams *upstreams_new(const struct config *cfg,
    struct event_base *base, struct producers *pc, char *err, size_t errlen);
/* On the loop's thread, after it stopped. */
void upstreams_free(struct upstreams *us);
/* Any thread: 1 when there are upstreams to ask (us may be NULL). */
int upstreams_enabled(const struct upstreams *us);
/*
 * On the loop (SIGHUP): the upstreams and their settings become cfg's,
 * which must live until the next call (fetchers/upstream.h,
 * upstream_set_apply: fills under way finish with theirs; a kept upstream
 * keeps its breaker and its counters); *ch says what changed.  0, or -1
 * when out of memory.
 */
int upstreams_apply(struct upstreams *us, const struct config *cfg,
    struct upstream_changes *ch);

/* A /metadata query for the upstreams, made on any thread. */
struct upstreams_meta {
	char path[3 * ROUTE_PATH_MAX + 64]; /* "/metadata?...", escaped */
	char xff[2048]; /* X-Forwarded-For to send; "" for none */
	char via[1024]; /* Via to send */
	char ua[256]; /* the client's User-Agent; "" for none */
	/*
	 * On the loop: the answers of the n enabled upstreams (NULL: none
	 * could be asked, for want of memory or at shutdown).
	 */
	void (*done)(struct upstreams_meta *m,
	    const struct upstream_meta_answer *answers, unsigned n);
	struct upstreams_meta *next; /* in the queue */
};

/*
 * Any thread: ask every enabled upstream m's query at once, each given
 * metadata-timeout; m must live until m->done has run.
 */
void upstreams_metadata(struct upstreams *us, struct upstreams_meta *m);

#endif /* SOURCES_UPSTREAM_H */
