/*
 * sources/negative.c: remembered misses and failures (cache/negative.h).
 *
 * On the request side, a live entry answers at once: a miss is a 404 whose
 * max-age is what is left of the entry, a failure a 502 (503 for a
 * section) whose Retry-After is.  In a flight that the object store passed
 * on (it had nothing), the same entry ends the flight before the upstreams
 * are asked, so that a herd costs one object-store lookup and no upstream
 * request while the entry lives.  An upload's judgement (and its fill) is
 * never answered here: an entry may be as old as its TTL, and may have
 * been written while a source was down, so the sources are asked again.
 */
#include "sources/sources.h"

#include "cache/index.h"
#include "cache/negative.h"
#include "daemon/clock.h"
#include "resolver/produce.h"
#include "resolver/rq.h"

static enum src_result
negative_lookup(struct rq *rq)
{
	struct cache_key k;
	struct neg_entry ne;
	int64_t now = clock_now();

	if (rq->cl.judge)
		return SRC_ABSENT;
	if (rq_txn(rq) == -1)
		return rq_fail(rq, "index unavailable");
	rq_key(rq, &k);
	if (neg_get(rq->th->rd, &k, now, &ne) != 0)
		return SRC_ABSENT;
	return rq_outcome(rq,
	    ne.kind == NEG_NOTFOUND ? ANSWER_REMEMBERED_MISS
				    : ANSWER_REMEMBERED_ERROR,
	    NULL, (unsigned)(ne.expires - now), NULL);
}

/* The loop: a remembered outcome ends p, else the next source fills it. */
static void
negative_produce(struct prod *p)
{
	struct index_reader *rd = produce_reader(p);
	struct neg_entry ne;
	int rc = -1;

	if (p->w.fresh) {
		produce_absent(p);
		return;
	}
	if (rd != NULL && index_reader_begin(rd) == 0) {
		rc = neg_get(rd, &p->key, clock_now(), &ne);
		index_reader_end(rd);
	}
	if (rc == 0) {
		produce_unasked(p, "a remembered miss or failure");
		produce_end(p,
		    ne.kind == NEG_NOTFOUND ? FLIGHT_NOTFOUND : FLIGHT_FAILED,
		    "a recent attempt failed");
	} else {
		produce_absent(p);
	}
}

const struct source source_negative = {
	.name = "negative",
	.lookup = negative_lookup,
	.produce = negative_produce,
};
