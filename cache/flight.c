/*
 * cache/flight.c: the table of fills in flight (see flight.h for the
 * rules).
 *
 * The table is a small open hash of linked flights under one mutex: it is
 * touched once per miss, never per hit.  Readers are woken through their
 * wake callbacks, from whatever thread reports.  Progress wakes readers at
 * most every
 * NOTIFY_BYTES or NOTIFY_NS, whichever comes first, so a 100 MB fill with
 * hundreds of readers does not turn into millions of wake-ups.
 */
#include "cache/flight.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BUCKETS 256
#define NOTIFY_BYTES (256u << 10)
#define NOTIFY_NS (20 * 1000 * 1000)
#define WHY_MAX 200

struct flight_watcher {
	flight_wake_fn wake;
	void *arg;
	struct flight_watcher *next;
};

struct flight {
	struct flight_table *ft;
	struct flight *next; /* in its bucket */
	struct cache_key key;
	int in_table;
	int limited; /* counted against the table's max */
	unsigned refs;
	pthread_mutex_t mu;
	enum flight_state state;
	int fd;
	char *tmp_path;
	uint64_t length;
	uint64_t size; /* announced; UINT64_MAX: not yet */
	uint64_t limit;
	uint64_t written;
	int verified; /* flight_verified: every written byte may go */
	uint64_t notified; /* written at the last wake-up */
	int64_t notified_ns;
	int64_t mtime;
	struct cache_meta meta; /* its strings in metabuf */
	char *metabuf;
	char *source;
	char why[WHY_MAX];
	struct flight_watcher *watchers;
	unsigned nwatchers;
	int64_t created_ns;
	int64_t begun; /* stamp_ns() at its creation (flight_begun) */
	char label[FLIGHT_LABEL_MAX];
	unsigned mark;
	char unasked[WHY_MAX]; /* written once, under mu */
};

struct flight_table {
	pthread_mutex_t mu;
	int64_t (*now_ns)(void);
	int64_t (*stamp_ns)(void);
	unsigned max;
	unsigned n;
	unsigned nlimited; /* of them, those counted against max */
	uint64_t watchers;
	struct flight *b[BUCKETS];
};

struct flight_table *
flight_table_new(unsigned max, int64_t (*now_ns)(void),
    int64_t (*stamp_ns)(void))
{
	struct flight_table *ft;

	if ((ft = calloc(1, sizeof(*ft))) == NULL)
		return NULL;
	pthread_mutex_init(&ft->mu, NULL);
	ft->max = max;
	ft->now_ns = now_ns;
	ft->stamp_ns = stamp_ns;
	return ft;
}

void
flight_table_set_max(struct flight_table *ft, unsigned max)
{
	pthread_mutex_lock(&ft->mu);
	ft->max = max;
	pthread_mutex_unlock(&ft->mu);
}

void
flight_table_free(struct flight_table *ft)
{
	if (ft == NULL)
		return;
	pthread_mutex_destroy(&ft->mu);
	free(ft);
}

void
flight_table_counts(struct flight_table *ft, uint64_t *flights,
    uint64_t *watchers)
{
	pthread_mutex_lock(&ft->mu);
	*flights = ft->n;
	*watchers = ft->watchers;
	pthread_mutex_unlock(&ft->mu);
}

/* The oldest (the greatest age) first. */
static int
info_cmp(const void *a, const void *b)
{
	const struct flight_info *x = a, *y = b;

	return x->age_ns < y->age_ns ? 1 : x->age_ns > y->age_ns ? -1 : 0;
}

size_t
flight_table_list(struct flight_table *ft, struct flight_info *out, size_t max)
{
	struct flight_info *fi;
	struct flight *f;
	int64_t now = ft->now_ns();
	size_t n = 0, b;

	pthread_mutex_lock(&ft->mu);
	for (b = 0; b < BUCKETS; b++) {
		for (f = ft->b[b]; f != NULL && n < max; f = f->next) {
			fi = &out[n++];
			pthread_mutex_lock(&f->mu);
			memcpy(fi->label, f->label, sizeof(fi->label));
			snprintf(fi->source, sizeof(fi->source), "%s",
			    f->state != FLIGHT_WAITING && f->source != NULL
				? f->source
				: "");
			fi->state = f->state;
			fi->written = f->written;
			fi->length = f->length;
			fi->watchers = f->nwatchers;
			fi->age_ns = now - f->created_ns;
			pthread_mutex_unlock(&f->mu);
		}
	}
	pthread_mutex_unlock(&ft->mu);
	qsort(out, n, sizeof(*out), info_cmp);
	return n;
}

void
flight_set_label(struct flight *f, const char *label)
{
	pthread_mutex_lock(&f->mu);
	snprintf(f->label, sizeof(f->label), "%s", label);
	pthread_mutex_unlock(&f->mu);
}

static unsigned
bucket_of(const struct cache_key *k)
{
	return k->hash[0];
}

struct flight *
flight_join(struct flight_table *ft, const struct cache_key *k, int limited,
    int *created)
{
	struct flight *f, **pp;
	unsigned b = bucket_of(k);
	int retry;

	*created = 0;
	pthread_mutex_lock(&ft->mu);
	for (pp = &ft->b[b]; (f = *pp) != NULL; pp = &f->next) {
		if (!cache_key_equal(&f->key, k))
			continue;
		pthread_mutex_lock(&f->mu);
		retry = f->state == FLIGHT_TOOBIG || f->state == FLIGHT_ABSENT;
		if (!retry)
			f->refs++;
		pthread_mutex_unlock(&f->mu);
		if (!retry) {
			pthread_mutex_unlock(&ft->mu);
			return f;
		}
		/*
		 * It ended telling its readers to ask again: joining it would
		 * tell them again.  Out of the table, for a new one.
		 */
		*pp = f->next;
		f->in_table = 0;
		ft->n--;
		ft->nlimited -= f->limited;
		break;
	}
	if ((limited && ft->max > 0 && ft->nlimited >= ft->max) ||
	    (f = calloc(1, sizeof(*f))) == NULL) {
		pthread_mutex_unlock(&ft->mu);
		return NULL;
	}
	pthread_mutex_init(&f->mu, NULL);
	f->ft = ft;
	f->key = *k;
	f->refs = 1;
	f->fd = -1;
	f->length = UINT64_MAX;
	f->size = UINT64_MAX;
	f->mtime = -1;
	f->state = FLIGHT_WAITING;
	f->in_table = 1;
	f->created_ns = ft->now_ns();
	f->begun = ft->stamp_ns();
	f->limited = limited != 0;
	f->next = ft->b[b];
	ft->b[b] = f;
	ft->n++;
	ft->nlimited += f->limited;
	pthread_mutex_unlock(&ft->mu);
	*created = 1;
	return f;
}

void
flight_ref(struct flight *f)
{
	pthread_mutex_lock(&f->mu);
	f->refs++;
	pthread_mutex_unlock(&f->mu);
}

void
flight_detach(struct flight *f)
{
	struct flight_table *ft = f->ft;
	struct flight **pp;

	pthread_mutex_lock(&ft->mu);
	if (f->in_table) {
		for (pp = &ft->b[bucket_of(&f->key)]; *pp != NULL;
		     pp = &(*pp)->next) {
			if (*pp == f) {
				*pp = f->next;
				break;
			}
		}
		f->in_table = 0;
		ft->n--;
		ft->nlimited -= f->limited;
	}
	pthread_mutex_unlock(&ft->mu);
}

void
flight_unref(struct flight *f)
{
	unsigned refs;

	pthread_mutex_lock(&f->mu);
	refs = --f->refs;
	pthread_mutex_unlock(&f->mu);
	if (refs > 0)
		return;
	flight_detach(f);
	if (f->fd != -1)
		close(f->fd);
	/* A fill that did not publish leaves no temp file behind. */
	if (f->tmp_path != NULL && f->state != FLIGHT_READY)
		unlink(f->tmp_path);
	free(f->tmp_path);
	free(f->metabuf);
	free(f->source);
	pthread_mutex_destroy(&f->mu);
	free(f);
}

const struct cache_key *
flight_key(const struct flight *f)
{
	return &f->key;
}

void
flight_set_file(struct flight *f, int fd, const char *tmp_path)
{
	f->fd = fd;
	/* NULL: a published file, served from the cache; nothing to unlink. */
	f->tmp_path = tmp_path != NULL ? strdup(tmp_path) : NULL;
}

const char *
flight_tmp_path(const struct flight *f)
{
	return f->tmp_path;
}

/* Wake every reader; f->mu held. */
static void
wake_locked(struct flight *f)
{
	struct flight_watcher *w;

	f->notified = f->written;
	f->notified_ns = f->ft->now_ns();
	for (w = f->watchers; w != NULL; w = w->next)
		w->wake(w->arg);
}

int
flight_set_head(struct flight *f, uint64_t length, int64_t mtime,
    const struct cache_meta *meta, const char *source)
{
	char *m = malloc(cache_meta_size(meta)), *s = strdup(source);

	if (m == NULL || s == NULL) {
		free(m);
		free(s);
		return -1;
	}
	pthread_mutex_lock(&f->mu);
	free(f->metabuf);
	free(f->source);
	cache_meta_copy(&f->meta, meta, m);
	f->metabuf = m;
	f->source = s;
	f->length = length;
	f->mtime = mtime;
	/* Without a length, readers wait for the end to learn it. */
	if (length != UINT64_MAX) {
		f->state = FLIGHT_STREAMING;
		wake_locked(f);
	}
	pthread_mutex_unlock(&f->mu);
	return 0;
}

void
flight_announce(struct flight *f, uint64_t size)
{
	pthread_mutex_lock(&f->mu);
	f->size = size;
	wake_locked(f);
	pthread_mutex_unlock(&f->mu);
}

void
flight_set_limit(struct flight *f, uint64_t limit)
{
	pthread_mutex_lock(&f->mu);
	f->limit = limit;
	pthread_mutex_unlock(&f->mu);
}

void
flight_set_length(struct flight *f, uint64_t length)
{
	pthread_mutex_lock(&f->mu);
	if (f->state == FLIGHT_WAITING) {
		f->length = length;
		f->state = FLIGHT_STREAMING;
		wake_locked(f);
	}
	pthread_mutex_unlock(&f->mu);
}

void
flight_progress(struct flight *f, uint64_t written)
{
	pthread_mutex_lock(&f->mu);
	f->written = written;
	if (f->state == FLIGHT_STREAMING &&
	    (written - f->notified >= NOTIFY_BYTES ||
		f->ft->now_ns() - f->notified_ns >= NOTIFY_NS))
		wake_locked(f);
	pthread_mutex_unlock(&f->mu);
}

void
flight_verified(struct flight *f)
{
	pthread_mutex_lock(&f->mu);
	/* A length told and not reached is no complete answer. */
	if (f->source != NULL &&
	    (f->state == FLIGHT_WAITING || f->state == FLIGHT_STREAMING) &&
	    (f->length == UINT64_MAX || f->length == f->written)) {
		f->length = f->written;
		f->state = FLIGHT_STREAMING;
		f->verified = 1;
		wake_locked(f);
	}
	pthread_mutex_unlock(&f->mu);
}

void
flight_set_mark(struct flight *f, unsigned mark)
{
	pthread_mutex_lock(&f->mu);
	f->mark = mark;
	pthread_mutex_unlock(&f->mu);
}

void
flight_note_unasked(struct flight *f, const char *why)
{
	pthread_mutex_lock(&f->mu);
	if (f->unasked[0] == '\0')
		snprintf(f->unasked, sizeof(f->unasked), "%s",
		    why[0] != '\0' ? why : "a source");
	pthread_mutex_unlock(&f->mu);
}

void
flight_end(struct flight *f, enum flight_state state, const char *why)
{
	pthread_mutex_lock(&f->mu);
	f->state = state;
	if (state == FLIGHT_READY)
		f->length = f->written;
	snprintf(f->why, sizeof(f->why), "%s", why != NULL ? why : "");
	wake_locked(f);
	pthread_mutex_unlock(&f->mu);
}

int
flight_watch(struct flight *f, flight_wake_fn wake, void *arg)
{
	struct flight_watcher *w;

	if ((w = malloc(sizeof(*w))) == NULL)
		return -1;
	w->wake = wake;
	w->arg = arg;
	pthread_mutex_lock(&f->mu);
	w->next = f->watchers;
	f->watchers = w;
	f->nwatchers++;
	pthread_mutex_unlock(&f->mu);
	pthread_mutex_lock(&f->ft->mu);
	f->ft->watchers++;
	pthread_mutex_unlock(&f->ft->mu);
	return 0;
}

void
flight_unwatch(struct flight *f, void *arg)
{
	struct flight_watcher **pp, *w;
	int found = 0;

	pthread_mutex_lock(&f->mu);
	for (pp = &f->watchers; *pp != NULL; pp = &(*pp)->next) {
		if ((*pp)->arg == arg) {
			w = *pp;
			*pp = w->next;
			free(w);
			f->nwatchers--;
			found = 1;
			break;
		}
	}
	pthread_mutex_unlock(&f->mu);
	if (found) {
		pthread_mutex_lock(&f->ft->mu);
		f->ft->watchers--;
		pthread_mutex_unlock(&f->ft->mu);
	}
}

void
flight_view(struct flight *f, struct flight_view *v)
{
	pthread_mutex_lock(&f->mu);
	v->state = f->state;
	v->length = f->length;
	v->why = f->why;
	v->size = f->length != UINT64_MAX ? f->length : f->size;
	v->limit = f->limit;
	v->verified = f->state == FLIGHT_STREAMING && f->verified;
	v->mark = f->mark;
	v->unasked = f->unasked[0] != '\0' ? f->unasked : NULL;
	switch (f->state) {
	case FLIGHT_STREAMING:
		/* Never the last byte before verification. */
		v->sendable = f->verified || f->written < f->length
		    ? f->written
		    : f->length - 1;
		break;
	case FLIGHT_READY:
		v->sendable = f->written;
		break;
	default:
		v->sendable = 0;
		break;
	}
	pthread_mutex_unlock(&f->mu);
}

int64_t
flight_mtime(const struct flight *f)
{
	return f->mtime;
}

const struct cache_meta *
flight_meta(const struct flight *f)
{
	static const struct cache_meta none = { "", "", "", "", 0 };

	return f->metabuf != NULL ? &f->meta : &none;
}

int64_t
flight_begun(const struct flight *f)
{
	return f->begun;
}

const char *
flight_source(const struct flight *f)
{
	return f->source != NULL ? f->source : "";
}

int
flight_open(struct flight *f)
{
	int fd;

	pthread_mutex_lock(&f->mu);
	fd = f->fd == -1 ? -1 : fcntl(f->fd, F_DUPFD_CLOEXEC, 0);
	pthread_mutex_unlock(&f->mu);
	return fd;
}
