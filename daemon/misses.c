/*
 * daemon/misses.c: the missing-id report's recorder and its rendering
 * (daemon/misses.h).
 *
 * The queue is two arrays: producers fold a request into q under mu (the
 * event of its id and kind, found through slot, an open-addressing table
 * of indexes into q, or a new one); the one flush job swaps q with spare
 * under mu and writes spare without it, so producers never wait for the
 * index.  flushing is set while a flush job is queued or running;
 * misses_tick starts one, once a second, when the queue holds anything:
 * a flood of 404s costs a memory write per request and one transaction a
 * second, not a pool job and a transaction per handful of requests
 * (which halved the 404s a thread could answer).  So a job writes one
 * batch and leaves what came meanwhile to the next tick, unless the queue
 * is half full again (a flood of distinct ids, which would otherwise be
 * dropped): a job that wrote until the queue was empty never ended under
 * a steady flood, and committed (an fdatasync) back to back.
 */
#include "daemon/httpdate.h"
#include "daemon/misses.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache/misses.h"
#include "conf/config.h"
#include "daemon/clock.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/pool.h"

/* Hash slots of the queue: a power of two, twice its events. */
#define SLOTS (2 * MISSES_QUEUE_MAX)

struct misses {
	struct index *idx;
	struct pool *pool;
	atomic_uint_fast64_t max; /* misses_set_max */
	pthread_mutex_t mu;
	struct miss_event *q; /* filling, under mu */
	struct miss_event *spare; /* the flush's */
	size_t n; /* events in q */
	uint16_t slot[SLOTS]; /* 1 + the index in q of an event; 0: free */
	int flushing;
};

struct misses *
misses_new(struct index *idx, struct pool *pool, uint64_t max)
{
	struct misses *m;

	if ((m = calloc(1, sizeof(*m))) == NULL ||
	    (m->q = calloc(MISSES_QUEUE_MAX, sizeof(*m->q))) == NULL ||
	    (m->spare = calloc(MISSES_QUEUE_MAX, sizeof(*m->spare))) == NULL) {
		if (m != NULL)
			free(m->q);
		free(m);
		return NULL;
	}
	pthread_mutex_init(&m->mu, NULL);
	m->idx = idx;
	m->pool = pool;
	atomic_init(&m->max, max);
	return m;
}

void
misses_set_max(struct misses *m, uint64_t max)
{
	atomic_store(&m->max, max);
}

/*
 * Write the queue to the index, on any thread: one batch, and more while
 * the queue is half full again; with all, until it is empty.
 */
static void
flush(struct misses *m, int all)
{
	struct miss_event *batch;
	char err[256];
	uint64_t evicted;
	size_t n, more = 0;

	for (;; more = all ? 1 : MISSES_QUEUE_MAX / 2) {
		pthread_mutex_lock(&m->mu);
		if (m->n == 0 || m->n < more) {
			m->flushing = 0;
			pthread_mutex_unlock(&m->mu);
			return;
		}
		batch = m->q;
		m->q = m->spare;
		m->spare = batch;
		n = m->n;
		m->n = 0;
		memset(m->slot, 0, sizeof(m->slot));
		pthread_mutex_unlock(&m->mu);
		if (miss_record(m->idx, batch, n, err, sizeof(err)) == -1) {
			log_warnx("%s: %s", __func__, err);
			metrics_misses_dropped(n);
		}
		if (miss_evict(m->idx, atomic_load(&m->max), &evicted, err,
			sizeof(err)) == -1)
			log_warnx("%s: %s", __func__, err);
	}
}

static void
flush_work(void *arg)
{
	flush(arg, 0);
}

void
misses_free(struct misses *m)
{
	if (m == NULL)
		return;
	flush(m, 1);
	pthread_mutex_destroy(&m->mu);
	free(m->q);
	free(m->spare);
	free(m);
}

void
misses_tick(struct misses *m)
{
	int start;

	if (m == NULL)
		return;
	pthread_mutex_lock(&m->mu);
	start = !m->flushing && m->n > 0;
	if (start)
		m->flushing = 1;
	pthread_mutex_unlock(&m->mu);
	/* Not queued (shutting down): misses_free writes what is left. */
	if (start && pool_submit(m->pool, flush_work, NULL, NULL, m) == -1) {
		pthread_mutex_lock(&m->mu);
		m->flushing = 0;
		pthread_mutex_unlock(&m->mu);
	}
}

/* The slot of (id, kind) in m->slot: its event's, or the free one. */
static size_t
slot_of(const struct misses *m, const struct buildid *id, enum cache_kind kind)
{
	uint32_t h = 2166136261u ^ (uint32_t)kind;
	const struct miss_event *ev;
	size_t i;

	for (i = 0; i < id->len; i++)
		h = (h ^ id->bytes[i]) * 16777619u;
	for (i = h & (SLOTS - 1); m->slot[i] != 0; i = (i + 1) & (SLOTS - 1)) {
		ev = &m->q[m->slot[i] - 1];
		if (ev->kind == kind && buildid_equal(&ev->id, id))
			break;
	}
	return i;
}

void
misses_note(struct misses *m, const struct buildid *id, enum cache_kind kind,
    const char *ua, size_t ualen, const char *addr)
{
	struct miss_event *ev;
	int64_t now;
	size_t i;

	if (m == NULL)
		return;
	now = clock_now();
	if (ualen >= MISS_UA_MAX)
		ualen = MISS_UA_MAX - 1;
	pthread_mutex_lock(&m->mu);
	i = slot_of(m, id, kind);
	if (m->slot[i] != 0) {
		ev = &m->q[m->slot[i] - 1];
		ev->count++;
	} else if (m->n == MISSES_QUEUE_MAX) {
		pthread_mutex_unlock(&m->mu);
		metrics_misses_dropped(1);
		return;
	} else {
		ev = &m->q[m->n++];
		m->slot[i] = (uint16_t)m->n;
		ev->id = *id;
		ev->kind = kind;
		ev->count = 1;
		ev->first = now;
	}
	ev->when = now;
	if (ua != NULL && ualen > 0)
		memcpy(ev->ua, ua, ualen);
	ev->ua[ua != NULL ? ualen : 0] = '\0';
	snprintf(ev->addr, sizeof(ev->addr), "%s", addr);
	pthread_mutex_unlock(&m->mu);
}

/* ------------------------------------------------------------- report */

#define TOP_MAX 1000000

int
misses_query_top(struct misses_query *q, const char *s, const char **why)
{
	unsigned long n;
	char *end;

	n = strtoul(s, &end, 10);
	if (*s < '0' || *s > '9' || *end != '\0' || n > TOP_MAX) {
		*why = "expected a number up to 1000000";
		return -1;
	}
	q->top = (unsigned)n;
	return 0;
}

int
misses_query_since(struct misses_query *q, const char *s, int64_t now,
    const char **why)
{
	uint64_t secs;

	if (config_parse_duration(s, &secs, why) == -1)
		return -1;
	q->since = now - (int64_t)(secs < INT32_MAX ? secs : INT32_MAX);
	/* 0 would mean "since ever"; a time before 1970 is the same. */
	if (q->since <= 0)
		q->since = 1;
	return 0;
}

const char *
misses_kinds(unsigned kinds, char *buf, size_t len)
{
	enum cache_kind k;
	size_t n = 0;

	buf[0] = '\0';
	for (k = CACHE_DEBUGINFO; k <= CACHE_SOURCE; k++) {
		if ((kinds & (1u << k)) == 0 || n >= len)
			continue;
		n += (size_t)snprintf(buf + n, len - n, "%s%s",
		    n > 0 ? "," : "", cache_kind_name(k));
	}
	return buf;
}

/*
 * A JSON string.  Bytes outside printable ASCII are escaped as \u00XX
 * (read as Latin-1), so that any User-Agent gives valid JSON.
 */
static void
put_json_str(FILE *fp, const char *s)
{
	putc('"', fp);
	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(fp, "\\%c", ch);
		else if (ch < 0x20 || ch >= 0x7f)
			fprintf(fp, "\\u%04x", ch);
		else
			putc(ch, fp);
	}
	putc('"', fp);
}

struct misses_writer {
	FILE *fp;
	const struct misses_query *q;
	unsigned shown;
};

static int
report_cb(const struct miss_info *mi, void *arg)
{
	struct misses_writer *r = arg;
	char id[BUILDID_HEX_MAX], first[HTTPDATE_ISO_LEN],
	    last[HTTPDATE_ISO_LEN], kinds[64];
	enum cache_kind k;
	int n = 0;

	if (r->q->top > 0 && r->shown == r->q->top)
		return 1;
	if (mi->last < r->q->since)
		return 0;
	buildid_format(&mi->id, id);
	httpdate_iso((time_t)mi->first, first);
	httpdate_iso((time_t)mi->last, last);
	if (!r->q->json) {
		fprintf(r->fp, "%8llu  %s  %s  %-20s  %s  %s  %s\n",
		    (unsigned long long)mi->count, last, first,
		    misses_kinds(mi->kinds, kinds, sizeof(kinds)), id,
		    mi->addr[0] != '\0' ? mi->addr : "-",
		    mi->ua[0] != '\0' ? mi->ua : "-");
		r->shown++;
		return 0;
	}
	fprintf(r->fp,
	    "%s\n{\"buildid\":\"%s\",\"count\":%llu,\"first_seen\":\"%s\","
	    "\"last_seen\":\"%s\",\"kinds\":[",
	    r->shown > 0 ? "," : "", id, (unsigned long long)mi->count, first,
	    last);
	for (k = CACHE_DEBUGINFO; k <= CACHE_SOURCE; k++)
		if (mi->kinds & (1u << k))
			fprintf(r->fp, "%s\"%s\"", n++ > 0 ? "," : "",
			    cache_kind_name(k));
	fputs("],\"user_agent\":", r->fp);
	put_json_str(r->fp, mi->ua);
	fputs(",\"client\":", r->fp);
	put_json_str(r->fp, mi->addr);
	putc('}', r->fp);
	r->shown++;
	return 0;
}

char *
misses_report(struct index_reader *rd, const struct misses_query *q,
    size_t *len)
{
	struct misses_writer r = { NULL, q, 0 };
	char since[HTTPDATE_ISO_LEN], *buf = NULL;
	uint64_t total;
	size_t size = 0;
	int failed;

	if (miss_count(rd, &total) == -1 ||
	    (r.fp = open_memstream(&buf, &size)) == NULL)
		return NULL;
	if (q->since > 0)
		httpdate_iso((time_t)q->since, since);
	if (q->json)
		fprintf(r.fp, "{\"ids\":%llu,\"misses\":[",
		    (unsigned long long)total);
	else
		fprintf(r.fp,
		    "%llu build-ids missing; the most missed%s%s:\n"
		    "   COUNT  LAST SEEN             FIRST SEEN            "
		    "KINDS                 BUILD-ID  CLIENT  USER-AGENT\n",
		    (unsigned long long)total, q->since > 0 ? " since " : "",
		    q->since > 0 ? since : "");
	failed = miss_walk(rd, report_cb, &r) == -1;
	if (q->json)
		fputs("\n]}\n", r.fp);
	failed |= ferror(r.fp);
	if (fclose(r.fp) != 0 || failed) {
		free(buf);
		return NULL;
	}
	*len = size;
	return buf;
}
