/*
 * fetchers/s3.c: an S3-compatible object store over libcurl multi.
 *
 * Lookups go through an upstream set of one (upstream.c), which brings
 * the deadlines, retries with Range, the breaker and the metrics hooks.
 * Everything else is a "request" here: one easy handle at a time on a
 * curlev of our own, reading an upload's body from its file with pread
 * (so that memory stays one curl buffer whatever the size) and keeping at
 * most REPLY_MAX bytes of what the store answers.  An upload of part_size
 * bytes or more is a multipart upload, a chain of requests on one record:
 * initiate (POST ?uploads=), each part (PUT ?partNumber=N&uploadId=U, the
 * part's ETag kept), complete (POST ?uploadId=U with the list); a failure
 * on the way aborts it (DELETE ?uploadId=U) so that no parts linger.
 * s3_plan sizes the parts within S3's limits.  A purge is a chain too:
 * a page of the listing (GET ?list-type=2, at most 1000 keys), a
 * DeleteObjects of those keys (POST ?delete=), the next page by its
 * continuation token, until the listing is not truncated.  A store may
 * lie: the chain ends with an error at a continuation token it gave
 * before, at a page whose keys do not come after the last page's (S3
 * lists in key order), and past PURGE_PAGES_MAX pages; and only keys under
 * the exact prefix, in the names this server gives objects, are ever
 * deleted.  Every XML answer is read with expat (fetchers/s3xml.h).
 * Query parameters are written sorted and escaped, as libcurl 7.88 signs
 * them as given.
 */
#include "fetchers/s3.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "autoconf.h"
#include "fetchers/curlev.h"
#include "fetchers/s3xml.h"

/* S3's limits: a single PUT, a part, the parts of an object, an object. */
#define SINGLE_PUT_MAX (5ULL << 30)
#define PART_MIN (5ULL << 20)
#define PART_MAX (5ULL << 30)
#define PARTS_MAX 10000
#define OBJECT_SIZE_MAX (5ULL << 40)
/*
 * Pages of one purge's listing at most: 10 million keys, far more than the
 * objects of one build-id, and an end to a store that never says done.
 */
#define PURGE_PAGES_MAX 10000
/* Bytes of a store's answer body kept (an upload id, an error). */
#define REPLY_MAX 4096
#define NAME_MAX_LEN 2048

struct s3 {
	struct s3_conf c;
	struct upstream_set *us;
	struct upstream_conf uc;
	char *hdr_lines[1];
	char sigv4[96];
	char ua[128];
	struct curlev *cv;
	struct upstream_observer obs;
	struct s3_req *reqs; /* running */
};

enum req_phase {
	PHASE_ONE, /* a single request: PUT, DELETE or HEAD */
	PHASE_INIT, /* multipart: initiate */
	PHASE_PART,
	PHASE_COMPLETE,
	PHASE_ABORT,
	PHASE_LIST, /* a purge: a page of the listing */
	PHASE_DELETE_BATCH, /* a purge: DeleteObjects of that page */
};

struct s3_req {
	struct s3 *st;
	struct s3_req *prev, *next;
	CURL *easy;
	struct curl_slist *hdrs;
	enum req_phase phase;
	char name[NAME_MAX_LEN]; /* escaped */
	int fd; /* an upload's file, or -1 */
	uint64_t size; /* of the whole upload */
	uint64_t off, end; /* of the body being sent */
	char *meta; /* x-amz-meta-* lines of an upload, "\n"-separated */
	char upload_id[512]; /* escaped */
	char **etags; /* per part */
	unsigned parts, part; /* part counts from 1 */
	uint64_t part_size; /* s3_plan's */
	char *body; /* the complete request's */
	char *reply; /* NUL-terminated */
	size_t replylen, replymax;
	s3_purge_fn purged; /* a purge's, instead of done */
	char *prefix; /* a purge's, as given */
	char *qprefix; /* ... escaped for the query */
	char *token; /* its next page's continuation token, escaped */
	char **keys; /* its page's keys to delete, decoded */
	size_t nkeys;
	char *last; /* the last key listed so far */
	unsigned char (*seen)[32]; /* SHA-256 of each token given so far */
	unsigned pages;
	uint64_t outside; /* keys listed that are not under the prefix */
	int more; /* the listing has another page */
	uint64_t deleted;
	char md5[32]; /* the Content-MD5 of a DeleteObjects body */
	char etag[128]; /* of the part being sent */
	int ok_404; /* a deletion: gone is done */
	int failed; /* an abort after this failure */
	long status;
	char why[320];
	s3_done_fn done;
	void *arg;
};

static void req_next(struct s3_req *r);

int
s3_escape(const char *s, int keep_slash, char *out, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '.' ||
		    c == '_' || c == '~' || (keep_slash && c == '/')) {
			if (o + 1 >= len)
				return -1;
			out[o++] = (char)c;
		} else {
			if (o + 3 >= len)
				return -1;
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	if (o >= len)
		return -1;
	out[o] = '\0';
	return 0;
}

int
s3_plan(uint64_t size, uint64_t part_size, uint64_t *part, unsigned *parts)
{
	uint64_t p = part_size;

	if (size > OBJECT_SIZE_MAX)
		return -1;
	if (size == 0 || (size < part_size && size <= SINGLE_PUT_MAX)) {
		*part = size;
		*parts = 1;
		return 0;
	}
	if (p < PART_MIN)
		p = PART_MIN;
	/* At most PARTS_MAX parts: larger ones, in whole MiB. */
	if (p < (size + PARTS_MAX - 1) / PARTS_MAX)
		p = ((size + PARTS_MAX - 1) / PARTS_MAX + (1u << 20) - 1) &
		    ~(uint64_t)((1u << 20) - 1);
	if (p > PART_MAX)
		p = PART_MAX;
	*part = p;
	*parts = (unsigned)((size + p - 1) / p);
	return 1;
}

/* ------------------------------------------------------------ requests */

static void
keys_free(struct s3_req *r)
{
	size_t i;

	for (i = 0; i < r->nkeys; i++)
		free(r->keys[i]);
	free(r->keys);
	r->keys = NULL;
	r->nkeys = 0;
}

static void
req_free(struct s3_req *r)
{
	unsigned i;

	if (r->easy != NULL) {
		curlev_remove(r->st->cv, r->easy);
		curl_easy_cleanup(r->easy);
	}
	curl_slist_free_all(r->hdrs);
	if (r->prev != NULL)
		r->prev->next = r->next;
	else
		r->st->reqs = r->next;
	if (r->next != NULL)
		r->next->prev = r->prev;
	if (r->fd != -1)
		close(r->fd);
	for (i = 0; r->etags != NULL && i < r->parts; i++)
		free(r->etags[i]);
	free(r->etags);
	keys_free(r);
	free(r->prefix);
	free(r->qprefix);
	free(r->token);
	free(r->last);
	free(r->seen);
	free(r->meta);
	free(r->body);
	free(r->reply);
	free(r);
}

/* The end of the whole request: tell the asker, feed the breaker. */
static void
req_end(struct s3_req *r, int ok)
{
	struct s3 *st = r->st;

	upstream_outcome(st->us, 0, ok || r->status == 404,
	    r->status == 0       ? UPSTREAM_ERR_CONNECT
		: r->status >= 1 ? UPSTREAM_ERR_HTTP
				 : UPSTREAM_ERR_TRANSFER);
	if (r->purged != NULL)
		r->purged(r->arg, ok, r->deleted, r->why);
	else if (r->done != NULL)
		r->done(r->arg, ok, r->status, r->why);
	req_free(r);
}

static size_t
req_read_cb(char *buf, size_t size, size_t n, void *arg)
{
	struct s3_req *r = arg;
	size_t want = size * n;
	ssize_t got;

	if (r->off >= r->end)
		return 0;
	if (want > r->end - r->off)
		want = (size_t)(r->end - r->off);
	got = pread(r->fd, buf, want, (off_t)r->off);
	if (got <= 0)
		return CURL_READFUNC_ABORT;
	r->off += (uint64_t)got;
	return (size_t)got;
}

static size_t
req_write_cb(char *p, size_t size, size_t n, void *arg)
{
	struct s3_req *r = arg;
	size_t len = size * n, take = r->replymax - r->replylen;

	if (take > len)
		take = len;
	memcpy(r->reply + r->replylen, p, take);
	r->replylen += take;
	r->reply[r->replylen] = '\0';
	return len;
}

static size_t
req_header_cb(char *p, size_t size, size_t n, void *arg)
{
	struct s3_req *r = arg;
	size_t len = size * n, v;

	if (len > 5 && strncasecmp(p, "etag:", 5) == 0) {
		for (v = 5; v < len && (p[v] == ' ' || p[v] == '\t'); v++)
			continue;
		snprintf(r->etag, sizeof(r->etag), "%.*s", (int)(len - v),
		    p + v);
		r->etag[strcspn(r->etag, "\r\n")] = '\0';
	}
	return len;
}

static void req_done_cb(CURL *easy, CURLcode rc, void *arg);

/*
 * Start r's next transfer: method on url/NAME?query, sending body bytes
 * [off, end) of r->fd when upload, or the string body.  -1 on failure.
 */
static int
req_start(struct s3_req *r, const char *method, const char *query, int upload,
    const char *body)
{
	struct s3 *st = r->st;
	const char *m;
	char url[4096], line[1200];
	size_t i;
	CURL *e;

	snprintf(url, sizeof(url), "%s%s%s%s%s", st->c.url,
	    r->name[0] != '\0' ? "/" : "", r->name, query[0] != '\0' ? "?" : "",
	    query);
	if ((e = r->easy = curl_easy_init()) == NULL)
		return -1;
	r->hdrs =
	    curl_slist_append(NULL, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
	/* Metadata goes with the object's first request. */
	if (r->phase == PHASE_DELETE_BATCH) {
		snprintf(line, sizeof(line), "Content-MD5: %s", r->md5);
		r->hdrs = curl_slist_append(r->hdrs, line);
	}
	if (r->meta != NULL &&
	    (r->phase == PHASE_ONE || r->phase == PHASE_INIT))
		for (m = r->meta; *m != '\0'; m += i + 1) {
			i = strcspn(m, "\n");
			snprintf(line, sizeof(line), "%.*s", (int)i, m);
			r->hdrs = curl_slist_append(r->hdrs, line);
			if (m[i] == '\0')
				break;
		}
	r->replylen = 0;
	r->reply[0] = '\0';
	r->etag[0] = '\0';
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->hdrs);
	curl_easy_setopt(e, CURLOPT_USERAGENT, st->ua);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, (long)st->c.timeout);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, (long)st->c.transfer_timeout);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, req_write_cb);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, req_header_cb);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
	upstream_sign(e, &st->uc);
	if (st->c.proxy != NULL)
		curl_easy_setopt(e, CURLOPT_PROXY, st->c.proxy);
	if (st->c.ca_file != NULL)
		curl_easy_setopt(e, CURLOPT_CAINFO, st->c.ca_file);
	if (upload) {
		curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(e, CURLOPT_READFUNCTION, req_read_cb);
		curl_easy_setopt(e, CURLOPT_READDATA, r);
		curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE,
		    (curl_off_t)(r->end - r->off));
		curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, 256L * 1024);
	} else if (body != NULL) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
	} else if (strcmp(method, "HEAD") == 0) {
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	} else if (strcmp(method, "POST") == 0) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
	}
	if (!upload && strcmp(method, "GET") != 0 &&
	    strcmp(method, "HEAD") != 0)
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	if (curlev_add(st->cv, e, req_done_cb, r) == -1) {
		curl_easy_cleanup(e);
		r->easy = NULL;
		return -1;
	}
	if (st->obs.request != NULL)
		st->obs.request(st->obs.arg, 0);
	return 0;
}

/*
 * 1 when the answer to a multipart completion says it completed: an XML
 * document, whole (not cut at REPLY_MAX), without an <Error>.
 */
static int
complete_ok(const struct s3_req *r)
{
	struct s3xml_error e;

	return r->replylen < r->replymax &&
	    s3xml_error(r->reply, r->replylen, &e) == 0;
}

/* r's transfer ended with rc: judge it, then go on with the next. */
static void
req_done_cb(CURL *easy, CURLcode rc, void *arg)
{
	struct s3_req *r = arg;
	long code = 0;

	curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(easy);
	r->easy = NULL;
	curl_slist_free_all(r->hdrs);
	r->hdrs = NULL;
	r->status = code;
	if (rc != CURLE_OK) {
		snprintf(r->why, sizeof(r->why), "%s: %s", r->st->c.name,
		    curl_easy_strerror(rc));
		r->status = 0;
	} else if (code / 100 != 2 && !(code == 404 && r->ok_404)) {
		struct s3xml_error e;

		s3xml_error(r->reply, r->replylen, &e);
		snprintf(r->why, sizeof(r->why), "%s: HTTP %ld%s%s",
		    r->st->c.name, code, e.code[0] != '\0' ? " " : "", e.code);
	} else if (r->phase == PHASE_COMPLETE && !complete_ok(r)) {
		/* S3 may say 200 and fail in the body. */
		snprintf(r->why, sizeof(r->why),
		    "%s: completing the upload "
		    "failed",
		    r->st->c.name);
		r->status = 500;
	} else {
		r->why[0] = '\0';
	}
	req_next(r);
}

/* The byte range of part r->part into r->off and r->end. */
static void
part_range(struct s3_req *r)
{
	r->off = (uint64_t)(r->part - 1) * r->part_size;
	r->end = r->off + r->part_size;
	if (r->end > r->size)
		r->end = r->size;
}

static int
start_part(struct s3_req *r)
{
	char q[600];

	part_range(r);
	snprintf(q, sizeof(q), "partNumber=%u&uploadId=%s", r->part,
	    r->upload_id);
	return req_start(r, "PUT", q, 1, NULL);
}

/* Append s to b (o bytes used of len) with XML's five escapes. */
static size_t
xml_escaped(char *b, size_t o, size_t len, const char *s)
{
	static const char *const ent[] = { "&amp;", "&lt;", "&gt;", "&quot;",
		"&apos;" };
	static const char chr[] = "&<>\"'";
	const char *c;

	for (; *s != '\0'; s++) {
		c = strchr(chr, *s);
		o += (size_t)snprintf(b + o, len - o, "%s",
		    c != NULL ? ent[c - chr] : (char[]){ *s, '\0' });
	}
	return o;
}

static int
start_complete(struct s3_req *r)
{
	size_t len = 64, o;
	unsigned i;
	char q[600];

	for (i = 0; i < r->parts; i++)
		len += 80 + 6 * strlen(r->etags[i]);
	if ((r->body = malloc(len)) == NULL)
		return -1;
	o = (size_t)snprintf(r->body, len, "<CompleteMultipartUpload>");
	/* An ETag is the store's header: escaped like any text. */
	for (i = 0; i < r->parts; i++) {
		o += (size_t)snprintf(r->body + o, len - o,
		    "<Part><PartNumber>%u</PartNumber><ETag>", i + 1);
		o = xml_escaped(r->body, o, len, r->etags[i]);
		o += (size_t)snprintf(r->body + o, len - o, "</ETag></Part>");
	}
	snprintf(r->body + o, len - o, "</CompleteMultipartUpload>");
	snprintf(q, sizeof(q), "uploadId=%s", r->upload_id);
	return req_start(r, "POST", q, 0, r->body);
}

/* A purge's next page of the listing, after r->token when there is one. */
static int
start_list(struct s3_req *r)
{
	size_t len =
	    strlen(r->qprefix) + 64 + (r->token != NULL ? strlen(r->token) : 0);
	char *q;
	int rc;

	if ((q = malloc(len)) == NULL)
		return -1;
	/* The query's parameters in order, as signed. */
	snprintf(q, len, "%s%s%slist-type=2&prefix=%s",
	    r->token != NULL ? "continuation-token=" : "",
	    r->token != NULL ? r->token : "", r->token != NULL ? "&" : "",
	    r->qprefix);
	rc = req_start(r, "GET", q, 0, NULL);
	free(q);
	return rc;
}

/*
 * 1 when key is one the purge may delete: under the prefix, and spelled
 * as this server names objects (letters, digits, - . _ ~ and '/', no
 * empty, "." or ".." component), so that no key another writer made can
 * be reached through a store that lists what it should not.
 */
static int
key_deletable(const char *prefix, const char *key)
{
	size_t n = strlen(prefix), i;
	const char *c;

	if (strncmp(key, prefix, n) != 0 || key[n] == '\0')
		return 0;
	for (i = 0; key[i] != '\0'; i++) {
		unsigned char ch = (unsigned char)key[i];

		if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
			(ch >= '0' && ch <= '9') || ch == '-' || ch == '.' ||
			ch == '_' || ch == '~' || ch == '/'))
			return 0;
	}
	for (c = key + n; *c != '\0'; c += i + (c[i] == '/')) {
		i = strcspn(c, "/");
		if (i == 0 || (i == 1 && c[0] == '.') ||
		    (i == 2 && c[0] == '.' && c[1] == '.'))
			return 0;
	}
	return 1;
}

/*
 * Take a page of the listing: the keys to delete into r->keys (those
 * under the prefix; the others counted in r->outside), whether there is
 * another page into r->more and its token into r->token.  -1 with
 * r->why when the page cannot be read or the listing is not going
 * forward: a token given before, a key not after the last page's, more
 * pages than PURGE_PAGES_MAX.
 */
static int
list_page(struct s3_req *r)
{
	struct s3xml_page pg;
	unsigned char md[EVP_MAX_MD_SIZE], (*seen)[32];
	unsigned mdlen = 0, i;
	char err[120];
	size_t k, n;

	keys_free(r);
	free(r->token);
	r->token = NULL;
	/* A page cut by REPLY_MAX would lose keys. */
	if (r->replylen >= r->replymax ||
	    s3xml_page(r->reply, r->replylen, &pg, err, sizeof(err)) == -1) {
		snprintf(r->why, sizeof(r->why),
		    "%s: a listing it cannot read%s%s", r->st->c.name,
		    r->replylen >= r->replymax ? "" : ": ",
		    r->replylen >= r->replymax ? "" : err);
		if (r->replylen < r->replymax)
			s3xml_page_free(&pg);
		return -1;
	}
	if (++r->pages > PURGE_PAGES_MAX) {
		snprintf(r->why, sizeof(r->why),
		    "%s: the listing goes on past %u pages", r->st->c.name,
		    PURGE_PAGES_MAX);
		goto fail;
	}
	if (pg.nkeys > 0 && r->last != NULL &&
	    strcmp(pg.keys[0], r->last) <= 0) {
		snprintf(r->why, sizeof(r->why),
		    "%s: the listing does not move forward (a page starts "
		    "at or before the last one's end)",
		    r->st->c.name);
		goto fail;
	}
	if (pg.nkeys > 0) {
		free(r->last);
		if ((r->last = strdup(pg.keys[pg.nkeys - 1])) == NULL)
			goto nomem;
	}
	if ((r->keys = calloc(pg.nkeys + 1, sizeof(char *))) == NULL)
		goto nomem;
	for (k = 0; k < pg.nkeys; k++) {
		if (!key_deletable(r->prefix, pg.keys[k])) {
			r->outside++;
			continue;
		}
		r->keys[r->nkeys++] = pg.keys[k];
		pg.keys[k] = NULL;
	}
	r->more = pg.truncated;
	if (!r->more) {
		s3xml_page_free(&pg);
		return 0;
	}
	if (pg.token == NULL || pg.token[0] == '\0') {
		snprintf(r->why, sizeof(r->why),
		    "%s: a truncated listing without a continuation token",
		    r->st->c.name);
		goto fail;
	}
	if (EVP_Digest(pg.token, strlen(pg.token), md, &mdlen, EVP_sha256(),
		NULL) != 1 ||
	    mdlen != 32)
		goto nomem;
	for (i = 0; i + 1 < r->pages; i++)
		if (memcmp(r->seen[i], md, 32) == 0) {
			snprintf(r->why, sizeof(r->why),
			    "%s: the listing gives a continuation token it "
			    "gave before",
			    r->st->c.name);
			goto fail;
		}
	if ((seen = realloc(r->seen, r->pages * sizeof(*seen))) == NULL)
		goto nomem;
	r->seen = seen;
	memcpy(r->seen[r->pages - 1], md, 32);
	n = 3 * strlen(pg.token) + 1;
	if ((r->token = malloc(n)) == NULL ||
	    s3_escape(pg.token, 0, r->token, n) == -1)
		goto nomem;
	s3xml_page_free(&pg);
	return 0;
nomem:
	snprintf(r->why, sizeof(r->why), "out of memory");
fail:
	s3xml_page_free(&pg);
	return -1;
}

/* A purge: DeleteObjects of the page's keys (quiet: errors only). */
static int
start_delete_batch(struct s3_req *r)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen;
	size_t len = 64, o, i;

	for (i = 0; i < r->nkeys; i++)
		len += 32 + 6 * strlen(r->keys[i]);
	free(r->body);
	if ((r->body = malloc(len)) == NULL)
		return -1;
	o = (size_t)snprintf(r->body, len, "<Delete><Quiet>true</Quiet>");
	for (i = 0; i < r->nkeys; i++) {
		o += (size_t)snprintf(r->body + o, len - o, "<Object><Key>");
		o = xml_escaped(r->body, o, len, r->keys[i]);
		o += (size_t)snprintf(r->body + o, len - o, "</Key></Object>");
	}
	snprintf(r->body + o, len - o, "</Delete>");
	/* S3 wants the body's MD5 with a DeleteObjects. */
	if (EVP_Digest(r->body, strlen(r->body), md, &mdlen, EVP_md5(), NULL) !=
	    1)
		return -1;
	EVP_EncodeBlock((unsigned char *)r->md5, md, (int)mdlen);
	return req_start(r, "POST", "delete=", 0, r->body);
}

/*
 * The end of a purge that went through: failed all the same when the
 * listing named keys outside the prefix, which were left alone.
 */
static void
purge_end(struct s3_req *r)
{
	if (r->outside == 0) {
		req_end(r, 1);
		return;
	}
	snprintf(r->why, sizeof(r->why),
	    "%s: the listing named %" PRIu64 " keys outside %.100s (left "
	    "alone)",
	    r->st->c.name, r->outside, r->prefix);
	req_end(r, 0);
}

/* A purge after a transfer: the next page or batch, or the end. */
static void
purge_next(struct s3_req *r, int ok)
{
	struct s3xml_error e;
	int rc;

	if (ok && r->phase == PHASE_LIST) {
		if (list_page(r) == -1) {
			req_end(r, 0);
			return;
		}
		if (r->nkeys > 0) {
			r->phase = PHASE_DELETE_BATCH;
			if (start_delete_batch(r) == 0)
				return;
		} else if (!r->more) {
			purge_end(r);
			return;
		} else if (start_list(r) == 0) {
			return;
		}
		snprintf(r->why, sizeof(r->why), "out of memory");
		ok = 0;
	} else if (ok) {
		/* Quiet: the result lists the keys that failed, if any. */
		rc = r->replylen == 0 ? 0
				      : s3xml_error(r->reply, r->replylen, &e);
		if (rc != 0 || r->replylen >= r->replymax) {
			if (rc == 1)
				snprintf(r->why, sizeof(r->why),
				    "%s: deleting %.100s failed: %s",
				    r->st->c.name, e.key, e.code);
			else
				snprintf(r->why, sizeof(r->why),
				    "%s: a deletion result it cannot read",
				    r->st->c.name);
			req_end(r, 0);
			return;
		}
		r->deleted += r->nkeys;
		keys_free(r);
		if (!r->more) {
			purge_end(r);
			return;
		}
		r->phase = PHASE_LIST;
		if (start_list(r) == 0)
			return;
		snprintf(r->why, sizeof(r->why), "out of memory");
	}
	req_end(r, 0);
}

/* After a transfer of r: the next one, or the end. */
static void
req_next(struct s3_req *r)
{
	int ok = r->why[0] == '\0';
	char id[400], q[600];

	switch (r->phase) {
	case PHASE_LIST:
	case PHASE_DELETE_BATCH:
		purge_next(r, ok);
		return;
	case PHASE_ONE:
		req_end(r, ok);
		return;
	case PHASE_ABORT:
		req_end(r, 0);
		return;
	case PHASE_INIT:
		if (ok &&
		    (s3xml_upload_id(r->reply, r->replylen, id, sizeof(id)) ==
			    -1 ||
			s3_escape(id, 0, r->upload_id, sizeof(r->upload_id)) ==
			    -1)) {
			snprintf(r->why, sizeof(r->why),
			    "%s: no usable UploadId", r->st->c.name);
			ok = 0;
		}
		if (!ok) {
			req_end(r, 0);
			return;
		}
		r->phase = PHASE_PART;
		r->part = 1;
		if (start_part(r) == 0)
			return;
		break;
	case PHASE_PART:
		if (ok && (r->etags[r->part - 1] = strdup(r->etag)) != NULL &&
		    r->etag[0] != '\0') {
			if (r->part < r->parts) {
				r->part++;
				if (start_part(r) == 0)
					return;
			} else {
				r->phase = PHASE_COMPLETE;
				if (start_complete(r) == 0)
					return;
			}
		}
		break;
	case PHASE_COMPLETE:
		if (ok) {
			req_end(r, 1);
			return;
		}
		break;
	}
	/* A multipart upload failed on the way: abort it. */
	if (r->why[0] == '\0')
		snprintf(r->why, sizeof(r->why), "%s: multipart upload failed",
		    r->st->c.name);
	r->phase = PHASE_ABORT;
	snprintf(q, sizeof(q), "uploadId=%s", r->upload_id);
	if (req_start(r, "DELETE", q, 0, NULL) == -1)
		req_end(r, 0);
}

static struct s3_req *
req_new(struct s3 *st, const char *name, s3_done_fn done, void *arg)
{
	struct s3_req *r;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	r->replymax = REPLY_MAX;
	if ((r->reply = malloc(r->replymax + 1)) == NULL) {
		free(r);
		return NULL;
	}
	r->st = st;
	r->fd = -1;
	r->done = done;
	r->arg = arg;
	if (s3_escape(name, 1, r->name, sizeof(r->name)) == -1) {
		free(r->reply);
		free(r);
		return NULL;
	}
	r->next = st->reqs;
	if (st->reqs != NULL)
		st->reqs->prev = r;
	st->reqs = r;
	return r;
}

/* The x-amz-meta-* lines of an upload, "\n"-separated; NULL: no memory. */
static char *
meta_lines(const char *headers, size_t len, int64_t mtime)
{
	char date[64], *out, *o;
	const char *p = headers, *end = headers + len, *eol;
	struct tm tm;
	time_t t = (time_t)mtime;

	if ((out = malloc(2 * len + 128)) == NULL)
		return NULL;
	o = out;
	gmtime_r(&t, &tm);
	strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
	o += sprintf(o, "x-amz-meta-last-modified: %s", date);
	for (; p < end; p = eol + 2) {
		if ((eol = memmem(p, (size_t)(end - p), "\r\n", 2)) == NULL)
			break;
		o += sprintf(o, "\nx-amz-meta-%.*s", (int)(eol - p), p);
	}
	*o = '\0';
	return out;
}

int
s3_put(struct s3 *st, const char *name, int fd, uint64_t size,
    const char *headers, size_t headers_len, int64_t mtime, s3_done_fn done,
    void *arg)
{
	struct s3_req *r;

	if ((r = req_new(st, name, done, arg)) == NULL) {
		close(fd);
		return -1;
	}
	r->fd = fd;
	r->size = size;
	if ((r->meta = meta_lines(headers, headers_len, mtime)) == NULL)
		goto fail;
	switch (s3_plan(size, st->c.part_size, &r->part_size, &r->parts)) {
	case -1:
		goto fail; /* larger than an object may be */
	case 1:
		if ((r->etags = calloc(r->parts, sizeof(char *))) == NULL)
			goto fail;
		r->phase = PHASE_INIT;
		if (req_start(r, "POST", "uploads=", 0, NULL) == -1)
			goto fail;
		return 0;
	default:
		break;
	}
	r->phase = PHASE_ONE;
	r->off = 0;
	r->end = size;
	if (req_start(r, "PUT", "", 1, NULL) == -1)
		goto fail;
	return 0;
fail:
	r->done = NULL;
	req_free(r);
	return -1;
}

int
s3_delete(struct s3 *st, const char *name, s3_done_fn done, void *arg)
{
	struct s3_req *r;

	if ((r = req_new(st, name, done, arg)) == NULL)
		return -1;
	r->ok_404 = 1;
	if (req_start(r, "DELETE", "", 0, NULL) == -1) {
		req_free(r);
		return -1;
	}
	return 0;
}

int
s3_check(struct s3 *st, s3_done_fn done, void *arg)
{
	struct s3_req *r;

	if ((r = req_new(st, "", done, arg)) == NULL)
		return -1;
	if (req_start(r, "HEAD", "", 0, NULL) == -1) {
		req_free(r);
		return -1;
	}
	return 0;
}

int
s3_purge(struct s3 *st, const char *prefix, s3_purge_fn done, void *arg)
{
	struct s3_req *r;
	size_t n = 3 * strlen(prefix) + 1;
	char *big;

	if ((r = req_new(st, "", NULL, arg)) == NULL)
		return -1;
	r->purged = done;
	r->phase = PHASE_LIST;
	/* A page is 1000 keys at most, each well under 1 KiB of XML. */
	r->replymax = 1U << 20;
	if ((big = realloc(r->reply, r->replymax + 1)) == NULL)
		goto fail;
	r->reply = big;
	if ((r->prefix = strdup(prefix)) == NULL ||
	    (r->qprefix = malloc(n)) == NULL ||
	    s3_escape(prefix, 0, r->qprefix, n) == -1 || start_list(r) == -1)
		goto fail;
	return 0;
fail:
	r->purged = NULL;
	req_free(r);
	return -1;
}

/* ------------------------------------------------------------- lookups */

struct upstream_fetch *
s3_get(struct s3 *st, const char *name, uint64_t max_size,
    const struct upstream_sink *sink, void *arg, enum upstream_result *res)
{
	char path[NAME_MAX_LEN + 1];

	path[0] = '/';
	if (s3_escape(name, 1, path + 1, sizeof(path) - 1) == -1) {
		*res = UPSTREAM_FAILED;
		return NULL;
	}
	return upstream_fetch(st->us, path, NULL, NULL, NULL, 0, max_size, sink,
	    arg, res);
}

int
s3_usable(const struct s3 *st)
{
	return upstream_usable(st->us, 0);
}

/* ----------------------------------------------------------------- set */

struct s3 *
s3_new(const struct s3_conf *sc, struct event_base *base,
    const struct upstream_observer *obs, char *err, size_t errlen)
{
	struct upstream_opts o;
	struct s3 *st;

	if ((st = calloc(1, sizeof(*st))) == NULL)
		goto nomem;
	st->c = *sc;
	if (obs != NULL)
		st->obs = *obs;
	snprintf(st->sigv4, sizeof(st->sigv4), "aws:amz:%s:s3", sc->region);
	snprintf(st->ua, sizeof(st->ua), "%s",
	    sc->user_agent != NULL ? sc->user_agent
				   : PACKAGE_NAME "/" PACKAGE_VERSION);
	st->hdr_lines[0] = "x-amz-content-sha256: UNSIGNED-PAYLOAD";
	st->uc = (struct upstream_conf){
		.url = sc->url,
		.name = sc->name,
		.enabled = 1,
		.connect_timeout = sc->timeout,
		.first_byte_timeout = sc->timeout,
		.min_rate = sc->min_rate,
		.headers = st->hdr_lines,
		.nheaders = 1,
		.aws_sigv4 = st->sigv4,
		.user = sc->access_key,
		.password = sc->secret_key,
	};
	memset(&o, 0, sizeof(o));
	o.upstreams = &st->uc;
	o.n = 1;
	o.stall_timeout = sc->stall_timeout;
	o.timeout = sc->transfer_timeout;
	o.retries = sc->retries;
	o.breaker_failures = sc->breaker_failures;
	o.breaker_backoff = sc->breaker_backoff;
	o.breaker_backoff_max = sc->breaker_backoff_max;
	o.redirects = REDIRECT_NONE;
	o.proxy = sc->proxy;
	o.ca_file = sc->ca_file;
	o.user_agent = sc->user_agent;
	o.now_ns = sc->now_ns;
	if ((st->cv = curlev_new(base)) == NULL)
		goto nomem;
	if ((st->us = upstream_set_new(&o, base, obs, err, errlen)) == NULL) {
		s3_free(st);
		return NULL;
	}
	return st;
nomem:
	snprintf(err, errlen, "store: out of memory");
	s3_free(st);
	return NULL;
}

void
s3_free(struct s3 *st)
{
	if (st == NULL)
		return;
	while (st->reqs != NULL) {
		st->reqs->done = NULL;
		req_free(st->reqs);
	}
	upstream_set_free(st->us);
	curlev_free(st->cv);
	free(st);
}
