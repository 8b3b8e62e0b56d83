/*
 * fetchers/upstream.h: ask upstream debuginfod servers, in parallel.
 *
 * One upstream_fetch asks every usable upstream for the same path at once.
 * The first answer whose opening bytes the caller accepts wins and the
 * others are cancelled; its body is handed over in order, resumed with
 * Range (or re-read and skipped) when the connection breaks.  All upstreams
 * said 404 → NOTFOUND; none answered usefully and one failed → FAILED.
 *
 * Each upstream has a circuit breaker: after breaker-failures failures in
 * a row it is skipped without waiting, and probed in the background after
 * breaker-backoff (doubling while the probes fail).
 *
 * Everything runs on the thread of the event base given to
 * upstream_set_new; callbacks run there too.
 */
#ifndef FETCHERS_UPSTREAM_H
#define FETCHERS_UPSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include "fetchers/redirect.h"

struct event_base;
struct upstream_set;
struct upstream_fetch;

/* Bytes of an answer shown to the sink's accept() before it wins. */
#define UPSTREAM_PREFIX 64
/* Most bytes of X-DEBUGINFOD-* headers kept from one answer. */
#define UPSTREAM_HEADERS_MAX 2048

#define UPSTREAM_SINK_LOCAL (-2)
#define UPSTREAM_SINK_PAUSE (-3)

enum upstream_result {
	UPSTREAM_OK,
	UPSTREAM_NOTFOUND,
	UPSTREAM_FAILED,
	UPSTREAM_LOCAL, /* the sink could not keep the bytes: not the upstream */
	/*
	 * None gave it, and one answered 406 to the X-DEBUGINFOD-MAXSIZE
	 * sent: it exists but is larger.  Not a failure of the upstream.
	 */
	UPSTREAM_TOOBIG,
};

/* What failed, for metrics; the same order as the daemon's metrics. */
enum upstream_err {
	UPSTREAM_ERR_CONNECT,
	UPSTREAM_ERR_TIMEOUT,
	UPSTREAM_ERR_HTTP,
	UPSTREAM_ERR_TRANSFER,
	UPSTREAM_ERR_CONTENT,
	UPSTREAM_ERR_BREAKER,
};

enum upstream_breaker {
	UPSTREAM_CLOSED,
	UPSTREAM_OPEN,
	UPSTREAM_PROBING,
};

/* The head of the winning answer. */
struct upstream_head {
	unsigned upstream; /* its id (upstream_conf.id) */
	const char *url; /* its base URL */
	uint64_t length; /* body bytes; UINT64_MAX when not announced */
	int64_t mtime; /* Last-Modified; -1 when none */
	/* X-DEBUGINFOD-FILE, -ARCHIVE, -IMASIGNATURE values; "": none. */
	const char *file, *archive, *imasig;
	/* Its other X-DEBUGINFOD-* lines "Name: value\r\n", to replay. */
	const char *extra;
	size_t extra_len;
};

struct upstream_sink {
	/*
	 * The first UPSTREAM_PREFIX bytes of an answer (fewer when the body
	 * is shorter).  0 takes the answer, -1 refuses it as wrong content.
	 */
	int (*accept)(void *arg, const struct upstream_head *h, const void *buf,
	    size_t len);
	/*
	 * The accepted body, in order from its first byte; -1 aborts it as
	 * wrong content, UPSTREAM_SINK_LOCAL as a local failure (a full
	 * disk), which is never held against the upstream.
	 * UPSTREAM_SINK_PAUSE takes none of buf: the same bytes come again
	 * after upstream_resume() (never returned for the first piece).
	 */
	int (*data)(void *arg, const void *buf, size_t len);
	/* The end; the fetch is freed after this returns. */
	void (*done)(void *arg, enum upstream_result res, const char *why);
};

/* Hooks for metrics; any may be NULL. */
struct upstream_observer {
	void (*request)(void *arg, unsigned i);
	void (*latency)(void *arg, unsigned i, double seconds);
	void (*error)(void *arg, unsigned i, enum upstream_err kind);
	/*
	 * The breaker moved to state: why in words (the last failure, what
	 * the probe got); backoff the seconds until the next probe (OPEN).
	 */
	void (*breaker)(void *arg, unsigned i, enum upstream_breaker state,
	    const char *why, unsigned backoff);
	/*
	 * Upstream i has sent nothing for path in seconds, but answers
	 * "GET /": it is at work, and is waited for again.
	 */
	void (*working)(void *arg, unsigned i, const char *path,
	    unsigned seconds);
	void *arg; /* given to each */
};

/* One upstream server. */
struct upstream_conf {
	/*
	 * What the caller calls it: the number its observer hooks and its
	 * answers (upstream_head.upstream) are told, which stays the same
	 * while it stays in the set (upstream_set_apply).
	 */
	unsigned id;
	const char *url; /* http:// or https://, no trailing '/' */
	const char *name; /* url without user:password@: how it is shown */
	int enabled;
	unsigned connect_timeout; /* seconds to a connection */
	/*
	 * Seconds an upstream that took the request may keep its answer's
	 * head; then it is asked "GET /" and waited for again as long as it
	 * answers that (see upstream.c, "Deadlines").
	 */
	unsigned first_byte_timeout;
	unsigned min_rate; /* bytes/s a body must keep up over stall_timeout */
	char *const *headers; /* "Name: value" lines sent with each request */
	size_t nheaders;
	/*
	 * An object store (fetchers/s3.h) rather than a debuginfod:
	 * requests signed with AWS SigV4 ("aws:amz:REGION:s3") as user and
	 * password, and X-DEBUGINFOD-* lines read from the object's
	 * metadata; its head not there within first_byte_timeout is a failure
 * (no "GET /" to see whether it is at work).  NULL for a debuginfod.
	 */
	const char *aws_sigv4;
	const char *user;
	const char *password;
};

/*
 * Everything the set is told.  It copies what it keeps, but listeners,
 * which must outlive the set.
 */
struct upstream_opts {
	const struct upstream_conf *upstreams;
	size_t n;
	unsigned stall_timeout; /* seconds of a body slower than min_rate */
	unsigned timeout; /* seconds for a whole fetch */
	unsigned retries; /* after a transport error */
	unsigned breaker_failures; /* in a row that open a breaker */
	unsigned breaker_backoff; /* seconds to the first probe */
	unsigned breaker_backoff_max; /* seconds; the doubling stops here */
	enum redirect_mode redirects; /* fetchers/redirect.h */
	const char *proxy; /* NULL: none */
	const char *ca_file; /* NULL: the system's */
	const char *user_agent; /* NULL: PACKAGE/VERSION */
	/*
	 * This server's own listeners, "host:port": never a redirect's
	 * target.  Read at each redirect: the text may change (a port 0
	 * becoming the one bound) while the loop is not running.
	 */
	const char *const *listeners;
	size_t nlisteners;
	int64_t (*now_ns)(void); /* the monotonic clock, in nanoseconds */
};

/* Process-wide set-up of libcurl, before any thread starts; and after. */
int upstream_init(void);
void upstream_shutdown(void);

struct upstream_set *upstream_set_new(const struct upstream_opts *opts,
    struct event_base *base, const struct upstream_observer *obs, char *err,
    size_t errlen);
/*
 * Cancels every fetch without calling back; metadata queries still
 * running are told NULL answers.
 */
void upstream_set_free(struct upstream_set *us);

/* What upstream_set_apply did to the upstreams. */
struct upstream_changes {
	unsigned added, removed, kept;
};
/*
 * The set becomes what opts says (SIGHUP): an upstream whose URL it had
 * is kept, with its breaker, and takes its new settings; one it had not
 * starts with a closed breaker; one opts no longer names leaves the set,
 * and fetches under way finish with it.  Fetches started from now on ask
 * the new set.  -1 when out of memory: the set is then the old one, or,
 * for an upstream's own settings, part new.
 */
int upstream_set_apply(struct upstream_set *us,
    const struct upstream_opts *opts, struct upstream_changes *ch);

/*
 * Ask for path ("/buildid/ID/debuginfo", already escaped).  xff and via
 * are the X-Forwarded-For and Via values to send and ua the client's
 * User-Agent (each NULL for none); limit, when not 0, is sent as
 * X-DEBUGINFOD-MAXSIZE.  Returns NULL without calling back when
 * no upstream can be asked; *res then says NOTFOUND (none enabled) or
 * FAILED (all breakers open).
 */
struct upstream_fetch *upstream_fetch(struct upstream_set *us, const char *path,
    const char *xff, const char *via, const char *ua, uint64_t limit,
    uint64_t max_size, const struct upstream_sink *sink, void *arg,
    enum upstream_result *res);
/* Stop a fetch before its done callback; none will run. */
void upstream_cancel(struct upstream_fetch *f);
/* Go on with a fetch whose sink paused it. */
void upstream_resume(struct upstream_fetch *f);
/* The accepted answer of upstream id turned out wrong after all. */
void upstream_blame(struct upstream_set *us, unsigned id);
/*
 * Other transfers with upstream id (an object store's uploads) share its
 * breaker: 1 while it is closed; and the outcome of one such transfer
 * (ok, else the kind of failure).
 */
int upstream_usable(const struct upstream_set *us, unsigned id);
/* Sign the curl easy handle e as cu says (nothing for a debuginfod). */
void upstream_sign(void *e, const struct upstream_conf *cu);
void upstream_outcome(struct upstream_set *us, unsigned id, int ok,
    enum upstream_err kind);

/* One upstream's answer to a metadata query. */
struct upstream_meta_answer {
	unsigned upstream; /* its id (upstream_conf.id) */
	const char *url; /* its name (URL without userinfo) */
	int ok; /* a 200 whose body is below */
	char *body; /* NUL-terminated; the query's, valid during the callback */
	size_t len;
	char why[128]; /* when not ok */
};

struct upstream_meta;
/*
 * The answers of the n enabled upstreams, in configuration order (NULL
 * when out of memory, then all count as failed); the query is freed
 * after this returns.
 */
typedef void (*upstream_meta_fn)(void *arg,
    const struct upstream_meta_answer *answers, unsigned n);

/*
 * Ask every enabled upstream for path ("/metadata?key=...", escaped) at
 * once, each given timeout seconds, keeping bodies up to max_body bytes.
 * xff, via and ua as for upstream_fetch.  done runs on the set's loop,
 * never inside this call.  NULL when out of memory (done will not run).
 */
struct upstream_meta *upstream_metadata(struct upstream_set *us,
    const char *path, const char *xff, const char *via, const char *ua,
    unsigned timeout, size_t max_body, upstream_meta_fn done, void *arg);
/* Stop a query before its callback; it will not run. */
void upstream_metadata_cancel(struct upstream_meta *m);

#endif /* FETCHERS_UPSTREAM_H */
