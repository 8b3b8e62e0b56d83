/*
 * tests/rig.h: the request path's real parts on a unit test's own loop,
 * and a client that records what the resolver answers.
 *
 * rig_open() makes, in the test's directory (tests/testdir.h): the
 * configuration (--no-config, the cache there, and the test's options),
 * the index, the blob store, the flight table, the worker pool, one event
 * loop with its pool inbox, and the producer core on that loop, with the
 * test's table of sources (its own fakes beside real ones, or
 * sources_table).  The loop is the test's thread: the resolver's requests,
 * the producers and every fake server of the test run on it, and
 * RUN_UNTIL turns it until a condition holds, for WAIT_SECONDS at most.
 * Time is the test clock (daemon/clock.h): rig_clock() moves it.
 *
 * A struct client asks like daemon/serve.c's connections do (or like an
 * internal consumer, whole = 1, or an upload's judgement, judge = 1) and
 * consumes its answer as a connection
 * would: a file is read at once, a stream as far as avail says on each
 * wake, to the end or to a cut; an outcome is recorded with the HTTP
 * status the answer table gives it.  Then it ends the exchange (the
 * function the resolver gave on_end), unless the test holds it.  A
 * struct reader instead joins a flight through the producer core, as a
 * source's lookup does, and watches it.  rig_stop() ends the workers and
 * the fills before a test frees parts of its own that fills use.
 *
 * Header-only, like tests/tap.h; a test includes it once.
 */
#ifndef TESTS_RIG_H
#define TESTS_RIG_H

#include <sys/socket.h>
#include <sys/stat.h>

#include <event2/event.h>
#include <event2/http.h>
#include <event2/thread.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache/blobstore.h"
#include "cache/flight.h"
#include "cache/index.h"
#include "cache/negative.h"
#include "conf/config.h"
#include "daemon/clock.h"
#include "daemon/metrics.h"
#include "daemon/pool.h"
#include "daemon/route.h"
#include "fetchers/headers.h"
#include "indexer/elf.h"
#include "resolver/answer.h"
#include "resolver/produce.h"
#include "resolver/resolve.h"
#include "sources/scan.h"
#include "tests/shell.h"
#include "tests/tap.h"
#include "tests/testdir.h"

/* Seconds any wait may take: a bound, never an expectation. */
#define WAIT_SECONDS 30
/* The test clock's start. */
#define NOW 1700000000
#define RIG_OPTS_MAX 32

struct rig {
	struct config cfg;
	struct config_args args;
	struct config_diag diag;
	struct index *idx;
	struct blobstore *bs;
	struct pool *pool;
	struct event_base *base;
	struct pool_inbox *inbox;
	struct event *tick;
	struct flight_table *ft;
	struct producers *prod;
	struct resolve_deps d;
	struct resolve_thread th;
	time_t deadline;
	char cache_dir[PATH_MAX];
	char upload_dir[PATH_MAX];
};

static struct rig rig;

static void
rig_tick_cb(evutil_socket_t fd, short what, void *arg)
{
}

/*
 * Turn the loop until cond holds or WAIT_SECONDS have passed; the test
 * then asserts cond.  A timer keeps a turn from blocking for long.
 */
#define RUN_UNTIL(cond) \
	for (rig.deadline = time(NULL) + WAIT_SECONDS; \
	     !(cond) && time(NULL) <= rig.deadline;) \
	event_base_loop(rig.base, EVLOOP_ONCE)

/* Turn the loop n times without waiting (what is due now runs). */
static void rig_spin(int n) __attribute__((unused));

static void
rig_spin(int n)
{
	while (n-- > 0)
		event_base_loop(rig.base, EVLOOP_NONBLOCK);
}

/* Flights in the table: 0 once every fill has ended. */
static uint64_t rig_flights(void) __attribute__((unused));

static uint64_t
rig_flights(void)
{
	uint64_t n, w;

	flight_table_counts(rig.ft, &n, &w);
	return n;
}

/* The build directory, where tests/mkelf and tests/fakeupstream are. */
static const char *
rig_top(void)
{
	const char *top = getenv("top_builddir");

	return top != NULL ? top : ".";
}

/* tests/mkelf ARGS OUT (in the test directory); 1 when it worked. */
static int rig_mkelf(const char *name, const char *args)
    __attribute__((unused));

static int
rig_mkelf(const char *name, const char *args)
{
	return shell("'%s/tests/mkelf' %s '%s'", rig_top(), args, at(name));
}

/* Move the test clock to t. */
static void rig_clock(int64_t t) __attribute__((unused));

static void
rig_clock(int64_t t)
{
	shell("touch -d @%lld '%s'", (long long)t, at("clock"));
}

/*
 * Everything but the producers, with options opts (NULL-terminated, as
 * on a command line; NULL for none), blob limits lim (NULL: no cap) and
 * sources table (NULL: no fills).  0, or -1 having said why.
 */
static int
rig_open(const char *name, const char *const *opts,
    const struct blob_limits *lim, const struct source *const *table)
{
	static const struct blob_limits nolim = { 0, 90, 80, 0, 0 };
	char *argv[RIG_OPTS_MAX + 7];
	char err[256];
	int argc = 0;
	struct producers_deps pd;

	evthread_use_pthreads();
	elf_init();
	/* A test may have made its directory first, for its fixtures. */
	if (tmpdir[0] == '\0' && testdir_make(name) == -1)
		return -1;
	rig_clock(NOW);
	setenv("DBGMIRROR_TEST_CLOCK", at("clock"), 1);
	/* Nothing of the environment's own debuginfods. */
	unsetenv("DEBUGINFOD_URLS");
	clock_init(err, sizeof(err));
	metrics_init();
	shell("mkdir -p '%s' '%s'", at("cache/index"), at("uploads"));
	argv[argc++] = (char *)name;
	argv[argc++] = "--no-config";
	argv[argc++] = "--cache-dir";
	snprintf(rig.cache_dir, sizeof(rig.cache_dir), "%s", at("cache"));
	argv[argc++] = rig.cache_dir;
	argv[argc++] = "--upload-dir";
	snprintf(rig.upload_dir, sizeof(rig.upload_dir), "%s", at("uploads"));
	argv[argc++] = rig.upload_dir;
	while (opts != NULL && *opts != NULL && argc < RIG_OPTS_MAX + 6)
		argv[argc++] = (char *)*opts++;
	argv[argc] = NULL;
	config_init(&rig.cfg);
	if (config_parse_args(&rig.args, argc, argv, &rig.diag) == -1 ||
	    config_load(&rig.cfg, &rig.args, &rig.diag) == -1) {
		printf("Bail out! %s\n",
		    rig.diag.n > 0 ? rig.diag.msgs[0] : "config");
		return -1;
	}
	rig.idx = index_open(at("cache/index"), 0, 64u << 20, err, sizeof(err));
	rig.bs = rig.idx != NULL
	    ? blobstore_new(rig.idx, at("cache"), lim != NULL ? lim : &nolim,
		  err, sizeof(err))
	    : NULL;
	if (rig.bs == NULL ||
	    blobstore_set_upload_dir(rig.bs, rig.upload_dir, err,
		sizeof(err)) == -1) {
		printf("Bail out! %s\n", err);
		return -1;
	}
	rig.pool = pool_new(4, 2);
	rig.base = event_base_new();
	rig.inbox = pool_inbox_new(rig.base);
	rig.tick = event_new(rig.base, -1, EV_PERSIST, rig_tick_cb, NULL);
	event_add(rig.tick, &(struct timeval){ 0, 20000 });
	rig.ft = flight_table_new(0, clock_mono_ns, clock_stamp_ns);
	rig.d.cfg = &rig.cfg;
	rig.d.idx = rig.idx;
	rig.d.pool = rig.pool;
	rig.d.bs = rig.bs;
	rig.d.ft = rig.ft;
	rig.d.via_token = "dbgmirror-test";
	rig.d.sources = table;
	rig.th.d = &rig.d;
	rig.th.rd = index_reader_new(rig.idx);
	rig.th.base = rig.base;
	rig.th.inbox = rig.inbox;
	if (table == NULL)
		return 0;
	pd.rd = &rig.d;
	pd.inbox = rig.inbox;
	pd.base = rig.base;
	if ((rig.prod = producers_new(&pd, err, sizeof(err))) == NULL) {
		printf("Bail out! %s\n", err);
		return -1;
	}
	rig.d.prod = rig.prod;
	return 0;
}

/*
 * Stop the workers, run their completions and end the fills: what a test
 * does before it frees parts of its own that fills use (the upstreams).
 */
static void
rig_stop(void)
{
	pool_free(rig.pool);
	rig.pool = NULL;
	pool_inbox_free(rig.inbox);
	rig.inbox = NULL;
	producers_free(rig.prod);
	rig.prod = NULL;
	rig.d.prod = NULL;
}

/* Free everything rig_open made; the test's own parts first. */
static void
rig_close(void)
{
	rig_stop();
	index_reader_free(rig.th.rd);
	event_free(rig.tick);
	event_base_free(rig.base);
	flight_table_free(rig.ft);
	blobstore_free(rig.bs);
	index_close(rig.idx);
	config_args_free(&rig.args);
	config_free(&rig.cfg);
	config_diag_free(&rig.diag);
	metrics_free();
	testdir_remove();
}

/* ----------------------------------------------------------- lookups */

/* The key of a build-id (hex), kind and arg. */
static void rig_key(struct cache_key *k, const char *hex, enum cache_kind kind,
    const char *arg) __attribute__((unused));

static void
rig_key(struct cache_key *k, const char *hex, enum cache_kind kind,
    const char *arg)
{
	struct buildid id;
	const char *why;

	buildid_parse(&id, hex, strlen(hex), &why);
	cache_key_make(k, &id, kind, arg);
}

/* 1 when the blob of k is in the index; its size in *size. */
static int rig_cached(const struct cache_key *k, uint64_t *size)
    __attribute__((unused));

static int
rig_cached(const struct cache_key *k, uint64_t *size)
{
	struct index_reader *rd = index_reader_new(rig.idx);
	struct blob_info bi;
	int rc = 0;

	if (rd != NULL && index_reader_begin(rd) == 0) {
		rc = blob_lookup(rd, k, &bi) == 0;
		if (rc && size != NULL)
			*size = bi.size;
		index_reader_end(rd);
	}
	index_reader_free(rd);
	return rc;
}

/*
 * The source and X-DEBUGINFOD-* lines the blob of k was published with,
 * into source and headers (each len bytes); 1 when it is cached.
 */
static int rig_blob_head(const struct cache_key *k, char *source, char *headers,
    size_t len) __attribute__((unused));

static int
rig_blob_head(const struct cache_key *k, char *source, char *headers,
    size_t len)
{
	struct index_reader *rd = index_reader_new(rig.idx);
	struct blob_info bi;
	int rc = 0;

	if (rd != NULL && index_reader_begin(rd) == 0) {
		if ((rc = blob_lookup(rd, k, &bi) == 0)) {
			snprintf(source, len, "%s", bi.source);
			headers[headers_format(headers, len - 1, bi.meta.file,
			    bi.meta.archive, bi.meta.imasig, bi.meta.extra,
			    bi.meta.extra_len)] = '\0';
		}
		index_reader_end(rd);
	}
	index_reader_free(rd);
	return rc;
}

/* Index the package at path as a scan would; 1 when it was. */
static int rig_index_package(const char *path) __attribute__((unused));

static int
rig_index_package(const char *path)
{
	char err[256], tmp[PATH_MAX + 8];

	snprintf(tmp, sizeof(tmp), "%s/tmp", rig.cache_dir);
	if (scan_package(rig.idx, path, tmp, 0, err, sizeof(err)) == -1) {
		printf("# scan_package %s: %s\n", path, err);
		return 0;
	}
	return 1;
}

/*
 * The negative entry of k now: its kind (NEG_NOTFOUND, NEG_ERROR) and
 * expiry, or -1 when there is none.
 */
static int rig_negative(const struct cache_key *k, int64_t *expires)
    __attribute__((unused));

static int
rig_negative(const struct cache_key *k, int64_t *expires)
{
	struct index_reader *rd = index_reader_new(rig.idx);
	struct neg_entry ne;
	int rc = -1;

	if (rd != NULL && index_reader_begin(rd) == 0) {
		if (neg_get(rd, k, clock_now(), &ne) == 0) {
			rc = (int)ne.kind;
			if (expires != NULL)
				*expires = ne.expires;
		}
		index_reader_end(rd);
	}
	index_reader_free(rd);
	return rc;
}

/* Write a negative entry of kind for k (hex's) lasting ttl seconds. */
static int rig_remember(const char *hex, enum cache_kind kind, const char *arg,
    enum neg_kind nk, unsigned ttl) __attribute__((unused));

static int
rig_remember(const char *hex, enum cache_kind kind, const char *arg,
    enum neg_kind nk, unsigned ttl)
{
	struct cache_key k;
	struct buildid id;
	const char *why;
	char err[256];

	buildid_parse(&id, hex, strlen(hex), &why);
	cache_key_make(&k, &id, kind, arg);
	return neg_put(rig.idx, &k, &id, nk, clock_now() + ttl, err,
	    sizeof(err));
}

/*
 * Publish the file at path (copied first) as the blob of (hex, kind,
 * arg), as a fill would.  0, or -1.
 */
static int rig_publish(const char *hex, enum cache_kind kind, const char *arg,
    const char *path, const char *source) __attribute__((unused));

static int
rig_publish(const char *hex, enum cache_kind kind, const char *arg,
    const char *path, const char *source)
{
	struct blob_info bi;
	struct cache_key k;
	struct stat st;
	char tmp[PATH_MAX], err[256];
	const char *why;
	int fd;

	if ((fd = blob_tmp_new(rig.bs, tmp, sizeof(tmp), err, sizeof(err))) ==
	    -1)
		return -1;
	close(fd);
	if (!shell("cp '%s' '%s'", path, tmp) || stat(tmp, &st) == -1)
		return -1;
	memset(&bi, 0, sizeof(bi));
	buildid_parse(&bi.id, hex, strlen(hex), &why);
	cache_key_make(&k, &bi.id, kind, arg);
	bi.size = (uint64_t)st.st_size;
	bi.mtime = NOW;
	bi.kind = kind;
	bi.arg = arg;
	bi.source = source;
	return blob_publish(rig.bs, &k, tmp, &bi, clock_now(), err,
		   sizeof(err)) == 0
	    ? 0
	    : -1;
}

/*
 * A test's own HTTP server on 127.0.0.1 on the rig's loop, any free port,
 * every request to cb: its port, or -1.  *hp is the server, for
 * evhttp_free.
 */
static int rig_http(struct evhttp **hp,
    void (*cb)(struct evhttp_request *, void *)) __attribute__((unused));

static int
rig_http(struct evhttp **hp, void (*cb)(struct evhttp_request *, void *))
{
	struct evhttp_bound_socket *s;
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);

	if ((*hp = evhttp_new(rig.base)) == NULL ||
	    (s = evhttp_bind_socket_with_handle(*hp, "127.0.0.1", 0)) == NULL ||
	    getsockname(evhttp_bound_socket_get_fd(s), (struct sockaddr *)&sin,
		&len) == -1)
		return -1;
	evhttp_set_gencb(*hp, cb, NULL);
	return ntohs(sin.sin_port);
}

/* The value of metric line name (with its labels, if any), or -1. */
static double rig_metric(const char *name) __attribute__((unused));

static double
rig_metric(const char *name)
{
	size_t len, n = strlen(name);
	char *text = metrics_render(&len), *p;
	double v = -1;

	for (p = text; p != NULL && *p != '\0'; p = strchr(p, '\n')) {
		if (*p == '\n')
			p++;
		if (strncmp(p, name, n) == 0 && p[n] == ' ') {
			v = strtod(p + n + 1, NULL);
			break;
		}
	}
	free(text);
	return v;
}

/* 1 when the files at a and b hold the same bytes. */
static int rig_same_file(int fa, const char *b) __attribute__((unused));

static int
rig_same_file(int fa, const char *b)
{
	char x[4096], y[4096];
	ssize_t n, m;
	off_t off = 0;
	int fb = open(b, O_RDONLY), same = fa != -1 && fb != -1;

	while (same) {
		n = pread(fa, x, sizeof(x), off);
		m = read(fb, y, sizeof(y));
		same = n == m && n >= 0 && memcmp(x, y, (size_t)n) == 0;
		if (n <= 0)
			break;
		off += n;
	}
	if (fb != -1)
		close(fb);
	return same;
}

/* 1 when the blob of k holds the bytes of the file at path. */
static int rig_cached_as(const struct cache_key *k, const char *path)
    __attribute__((unused));

static int
rig_cached_as(const struct cache_key *k, const char *path)
{
	int fd = blob_open(rig.bs, k), same;

	same = rig_same_file(fd, path);
	if (fd != -1)
		close(fd);
	return same;
}

/* ------------------------------------------------------------ clients */

#define CLIENT_BODY_MAX (4u << 20)

struct client {
	struct resolve_client cl;
	struct resolve_origin o;
	int whole; /* an internal consumer */
	int judge; /* an upload's judgement */
	int hold; /* a file answer is kept until client_release */
	int waited; /* the resolver said the answer comes later */
	int answered; /* answers given: 1 at most */
	int ended; /* the exchange is over: answered and sent, or left */
	int left; /* it went away before its answer */
	int cut; /* a stream failed: the connection was cut */
	int complete; /* every byte of the file arrived */
	enum resolve_answer_kind kind;
	enum answer_outcome outcome;
	enum metrics_result result;
	int status; /* as serve.c answers: 200, the table's, -1 when cut */
	unsigned seconds; /* of an outcome */
	unsigned max_age; /* of a file */
	char why[256];
	char source[256];
	char by[32]; /* the table's source that answered; "" none */
	char unasked[256]; /* a source gone past without its answer; "" */
	char file[PATH_MAX];
	char extra[2048];
	uint64_t size, offset;
	uint64_t got; /* bytes received */
	uint64_t streamed_before; /* bytes had before the stream's end */
	unsigned char *body; /* the bytes received, CLIENT_BODY_MAX at most */
	int fd;
	int (*avail)(void *arg, uint64_t *n);
	void *avail_arg;
	void (*end_fn)(void *);
	void *end_arg;
	int section;
};

static void
client_end(struct client *c)
{
	void (*fn)(void *) = c->end_fn;

	c->ended = 1;
	c->end_fn = NULL;
	if (c->fd != -1) {
		close(c->fd);
		c->fd = -1;
	}
	if (fn != NULL)
		fn(c->end_arg);
}

/* Read bytes [got, n) of the answer from its file. */
static void
client_read(struct client *c, uint64_t n)
{
	ssize_t r;

	while (c->got < n) {
		size_t want = (size_t)(n - c->got);

		if (c->got >= CLIENT_BODY_MAX) {
			c->got = n;
			break;
		}
		if (want > CLIENT_BODY_MAX - c->got)
			want = (size_t)(CLIENT_BODY_MAX - c->got);
		r = pread(c->fd, c->body + c->got, want,
		    (off_t)(c->offset + c->got));
		if (r <= 0)
			break;
		c->got += (uint64_t)r;
	}
}

/* A stream has more, or failed: send what may go, as a connection does. */
static void
client_pull(struct client *c)
{
	uint64_t n = 0;

	if (c->ended || c->avail == NULL)
		return;
	if (c->avail(c->avail_arg, &n) == -1) {
		c->cut = 1;
		c->status = -1;
		client_end(c);
		return;
	}
	client_read(c, n);
	if (n == c->size) {
		c->complete = c->got == c->size;
		client_end(c);
	} else {
		c->streamed_before = n;
	}
}

static void
client_answer(void *arg, const struct resolve_answer *a)
{
	struct client *c = arg;
	size_t n;

	c->answered++;
	c->kind = a->kind;
	c->result = a->result;
	snprintf(c->source, sizeof(c->source), "%s",
	    a->source != NULL ? a->source : "");
	snprintf(c->by, sizeof(c->by), "%s", a->by != NULL ? a->by : "");
	snprintf(c->unasked, sizeof(c->unasked), "%s",
	    a->unasked != NULL ? a->unasked : "");
	c->section = a->rt->endpoint == ROUTE_SECTION;
	if (a->kind == RESOLVE_OUTCOME) {
		c->outcome = a->outcome;
		c->status = answer_status(a->outcome, c->section);
		c->seconds = a->seconds;
		snprintf(c->why, sizeof(c->why), "%s",
		    a->why != NULL ? a->why : "");
		client_end(c);
		return;
	}
	c->status = 200;
	c->fd = a->fd;
	c->size = a->size;
	c->offset = a->offset;
	c->max_age = a->max_age;
	snprintf(c->file, sizeof(c->file), "%s",
	    a->file != NULL ? a->file : "");
	n = a->meta == NULL
	    ? 0
	    : headers_format(c->extra, sizeof(c->extra) - 1, a->meta->file,
		  a->meta->archive, a->meta->imasig, a->meta->extra,
		  a->meta->extra_len);
	c->extra[n < sizeof(c->extra) ? n : 0] = '\0';
	if (c->body == NULL)
		c->body = malloc(CLIENT_BODY_MAX);
	if (a->kind == RESOLVE_STREAM) {
		c->avail = a->avail;
		c->avail_arg = a->avail_arg;
		client_pull(c);
		return;
	}
	client_read(c, c->size);
	c->complete = c->got == c->size;
	if (!c->hold)
		client_end(c);
}

static void
client_wake(void *arg)
{
	client_pull(arg);
}

static void
client_on_end(void *arg, void (*fn)(void *), void *fnarg)
{
	struct client *c = arg;

	c->end_fn = fn;
	c->end_arg = fnarg;
}

static void
client_wait(void *arg)
{
	struct client *c = arg;

	c->waited = 1;
}

static const struct resolve_client_ops client_ops = {
	client_answer,
	client_wake,
	client_on_end,
	client_wait,
};

/*
 * Make c ready to ask (no request yet); maxsize 0: none.  client_free
 * then frees what it received.
 */
static void
client_init(struct client *c, uint64_t maxsize)
{
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->o.peer = "127.0.0.1";
	c->o.user_agent.p = "rig/1";
	c->o.user_agent.n = 5;
	c->o.maxsize = maxsize;
	c->cl.ops = &client_ops;
	c->cl.arg = c;
	c->cl.origin = &c->o;
}

/* c asks for target (a request path) with reach. */
static void
client_ask(struct client *c, const char *target, enum resolve_reach reach)
{
	struct route rt;
	const char *why;

	if (route_parse(&rt, target, strlen(target), &why) != 0) {
		printf("Bail out! route_parse %s: %s\n", target, why);
		exit(1);
	}
	c->cl.whole = c->whole;
	c->cl.judge = c->judge;
	resolve_start(&rig.th, &c->cl, &rt, reach);
}

/* A fresh client asks for target, every source asked. */
static void client_get(struct client *c, const char *target)
    __attribute__((unused));

static void
client_get(struct client *c, const char *target)
{
	client_init(c, 0);
	client_ask(c, target, RESOLVE_ALL);
}

/* The client goes away before its exchange is over. */
static void client_leave(struct client *c) __attribute__((unused));

static void
client_leave(struct client *c)
{
	c->left = 1;
	client_end(c);
}

/* A held answer is sent: the exchange ends. */
static void client_release(struct client *c) __attribute__((unused));

static void
client_release(struct client *c)
{
	if (!c->ended)
		client_end(c);
}

static void client_free(struct client *c) __attribute__((unused));

static void
client_free(struct client *c)
{
	free(c->body);
	c->body = NULL;
}

/* 1 when the body received equals the file at path. */
static int client_body_is(const struct client *c, const char *path)
    __attribute__((unused));

static int
client_body_is(const struct client *c, const char *path)
{
	size_t len;
	uint8_t *b = slurp(path, &len);
	int same = b != NULL && c->body != NULL && len == c->got &&
	    memcmp(b, c->body, len) == 0;

	free(b);
	return same;
}

/* The request path of (hex, what): "/buildid/HEX/WHAT". */
static const char *rig_path(const char *hex, const char *what)
    __attribute__((unused));

static const char *
rig_path(const char *hex, const char *what)
{
	static char bufs[4][ROUTE_PATH_MAX];
	static unsigned next;
	char *b = bufs[next++ % 4];

	snprintf(b, ROUTE_PATH_MAX, "/buildid/%s/%s", hex, what);
	return b;
}

/* ------------------------------------------------------------ readers */

/*
 * Readers of flights, as the requests waiting on fills are: a test of the
 * producers joins flights through produce_join, as a source's lookup
 * does, and watches them.
 */

/* A reader of a flight, as a request waiting on a fill. */
struct reader {
	struct flight *f;
	int created;
	int wakes;
	int negative_at_wake; /* the key's entry was there at the last wake */
	uint64_t most; /* the most it was ever allowed to send */
	struct cache_key k;
};

/* Called with the flight's lock held: looks at the index, not the flight. */
static void
reader_wake(void *arg)
{
	struct reader *r = arg;

	r->wakes++;
	r->negative_at_wake = rig_negative(&r->k, NULL) != -1;
}

/*
 * Join the fill of (hex, kind) made by source src of the table with data
 * (NULL: none), reach ALL or HELD.  0, or -1.
 */
static int reader_join_as(struct reader *r, const char *hex,
    enum cache_kind kind, unsigned src, void *data, enum resolve_reach reach)
    __attribute__((unused));

static int
reader_join_as(struct reader *r, const char *hex, enum cache_kind kind,
    unsigned src, void *data, enum resolve_reach reach)
{
	struct prod_what w;
	const char *why;

	memset(r, 0, sizeof(*r));
	memset(&w, 0, sizeof(w));
	buildid_parse(&w.id, hex, strlen(hex), &why);
	w.kind = kind;
	w.reach = reach;
	snprintf(w.path, sizeof(w.path), "/buildid/%s/%s", hex,
	    cache_kind_name(kind));
	snprintf(w.xff, sizeof(w.xff), "127.0.0.1");
	snprintf(w.via, sizeof(w.via), "1.1 dbgmirror-test");
	cache_key_make(&r->k, &w.id, kind, "");
	r->f = produce_join(rig.prod, &r->k, &w, src, data, &r->created);
	if (r->f == NULL)
		return -1;
	return flight_watch(r->f, reader_wake, r);
}

static int reader_join(struct reader *r, const char *hex, enum cache_kind kind)
    __attribute__((unused));

static int
reader_join(struct reader *r, const char *hex, enum cache_kind kind)
{
	return reader_join_as(r, hex, kind, 0, NULL, RESOLVE_ALL);
}

/* What r's flight lets it do now (remembering the most it could send). */
static void reader_look(struct reader *r, struct flight_view *v)
    __attribute__((unused));

static void
reader_look(struct reader *r, struct flight_view *v)
{
	flight_view(r->f, v);
	if (v->sendable > r->most)
		r->most = v->sendable;
}

static enum flight_state reader_state(struct reader *r) __attribute__((unused));

static enum flight_state
reader_state(struct reader *r)
{
	struct flight_view v;

	reader_look(r, &v);
	return v.state;
}

static int reader_ended(struct reader *r) __attribute__((unused));

static int
reader_ended(struct reader *r)
{
	enum flight_state st = reader_state(r);

	return st != FLIGHT_WAITING && st != FLIGHT_STREAMING;
}

static void reader_leave(struct reader *r) __attribute__((unused));

static void
reader_leave(struct reader *r)
{
	if (r->f == NULL)
		return;
	flight_unwatch(r->f, r);
	flight_unref(r->f);
	r->f = NULL;
}

#endif /* TESTS_RIG_H */
