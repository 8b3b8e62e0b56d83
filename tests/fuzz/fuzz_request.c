/*
 * tests/fuzz/fuzz_request.c: fuzz request_parse(), which reads request
 * heads straight off the network (daemon/request.h).
 *
 * The input is what a client sent on one connection.  It is parsed the way
 * the server consumes it: one head after another while they parse
 * (pipelining), with the default max-header-size, the smallest one the
 * configuration allows, and a limit under the input's length so that 414
 * and 431 are reached.  Besides memory errors the target aborts on a result
 * that breaks the contract: an unknown result, an error without a reason,
 * INCOMPLETE at the size limit, a slice outside the head or holding bytes
 * the parser promises to refuse, or a head that parses differently once the
 * bytes after it are cut off or its last byte is still missing (what a
 * client trickling its request makes the server see).
 */
#include "daemon/request.h"

#include "tests/fuzz/fuzz.h"

/* RFC 9110 token characters, written out again to check the parser. */
static int
tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') ||
	    (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* A kept header value: inside the head, trimmed, no control bytes. */
static void
check_value(struct slice v, const char *head, size_t len)
{
	size_t i;

	if (v.p == NULL) {
		FUZZ_CHECK(v.n == 0);
		return;
	}
	FUZZ_CHECK(fuzz_inside(v.p, v.n, head, len));
	if (v.n > 0) {
		FUZZ_CHECK(v.p[0] != ' ' && v.p[0] != '\t');
		FUZZ_CHECK(v.p[v.n - 1] != ' ' && v.p[v.n - 1] != '\t');
	}
	for (i = 0; i < v.n; i++) {
		unsigned char c = (unsigned char)v.p[i];

		FUZZ_CHECK((c >= 0x20 || c == '\t') && c != 0x7f);
	}
}

static void
check_ok(const struct request *req, const char *buf, size_t len,
    size_t max_head)
{
	size_t i, hl = req->head_len;

	FUZZ_CHECK(hl > 0 && hl <= len && hl <= max_head);
	FUZZ_CHECK(buf[hl - 1] == '\n');

	FUZZ_CHECK(req->method_name.p != NULL && req->method_name.n > 0);
	FUZZ_CHECK(
	    fuzz_inside(req->method_name.p, req->method_name.n, buf, hl));
	for (i = 0; i < req->method_name.n; i++)
		FUZZ_CHECK(tchar((unsigned char)req->method_name.p[i]));
	switch (req->method) {
	case METHOD_GET:
		FUZZ_CHECK(req->method_name.n == 3 &&
		    memcmp(req->method_name.p, "GET", 3) == 0);
		break;
	case METHOD_HEAD:
		FUZZ_CHECK(req->method_name.n == 4 &&
		    memcmp(req->method_name.p, "HEAD", 4) == 0);
		break;
	case METHOD_POST:
		FUZZ_CHECK(req->method_name.n == 4 &&
		    memcmp(req->method_name.p, "POST", 4) == 0);
		break;
	case METHOD_PUT:
		FUZZ_CHECK(req->method_name.n == 3 &&
		    memcmp(req->method_name.p, "PUT", 3) == 0);
		break;
	case METHOD_OTHER:
		FUZZ_CHECK(
		    !(req->method_name.n == 3 &&
			(memcmp(req->method_name.p, "GET", 3) == 0 ||
			    memcmp(req->method_name.p, "PUT", 3) == 0)) &&
		    !(req->method_name.n == 4 &&
			(memcmp(req->method_name.p, "HEAD", 4) == 0 ||
			    memcmp(req->method_name.p, "POST", 4) == 0)));
		break;
	default:
		FUZZ_CHECK(!"unknown method");
	}

	FUZZ_CHECK(req->target.p != NULL && req->target.n > 0);
	FUZZ_CHECK(fuzz_inside(req->target.p, req->target.n, buf, hl));
	for (i = 0; i < req->target.n; i++) {
		unsigned char c = (unsigned char)req->target.p[i];

		FUZZ_CHECK(c > 0x20 && c < 0x7f);
	}

	FUZZ_CHECK(req->minor >= 0 && req->minor <= 9);
	FUZZ_CHECK(req->keepalive == 0 || req->keepalive == 1);
	FUZZ_CHECK(req->has_body == 0 || req->has_body == 1);
	FUZZ_CHECK(!req->chunked || req->has_body);
	FUZZ_CHECK(req->content_length == 0 || req->has_body);
	check_value(req->range, buf, hl);
	check_value(req->if_range, buf, hl);
	check_value(req->if_none_match, buf, hl);
	check_value(req->if_modified_since, buf, hl);
	check_value(req->maxsize, buf, hl);
	check_value(req->user_agent, buf, hl);
	check_value(req->forwarded_for, buf, hl);
	check_value(req->via, buf, hl);
	check_value(req->authorization, buf, hl);
}

static int
slice_same(struct slice a, struct slice b)
{
	return a.p == b.p && a.n == b.n;
}

/* Two parses of the same bytes found the same request. */
static int
request_same(const struct request *a, const struct request *b)
{
	return a->method == b->method &&
	    slice_same(a->method_name, b->method_name) &&
	    slice_same(a->target, b->target) && a->minor == b->minor &&
	    a->keepalive == b->keepalive && a->has_body == b->has_body &&
	    slice_same(a->range, b->range) &&
	    slice_same(a->if_range, b->if_range) &&
	    slice_same(a->if_none_match, b->if_none_match) &&
	    slice_same(a->if_modified_since, b->if_modified_since) &&
	    slice_same(a->maxsize, b->maxsize) &&
	    slice_same(a->user_agent, b->user_agent) &&
	    slice_same(a->forwarded_for, b->forwarded_for) &&
	    slice_same(a->via, b->via) &&
	    slice_same(a->authorization, b->authorization) &&
	    a->head_len == b->head_len;
}

/* Parse buf[0..len) and check the result; returns it. */
static int
parse_one(struct request *req, const char *buf, size_t len, size_t max_head)
{
	struct request again;
	const char *why = NULL, *why2 = NULL;
	int rc, rc2;

	rc = request_parse(req, buf, len, max_head, &why);
	switch (rc) {
	case REQUEST_OK:
		check_ok(req, buf, len, max_head);
		break;
	case REQUEST_INCOMPLETE:
		FUZZ_CHECK(len < max_head);
		return rc;
	case 400:
	case 414:
	case 431:
	case 505:
		FUZZ_CHECK(why != NULL && why[0] != '\0');
		FUZZ_CHECK(req->head_len <= len && req->head_len <= max_head);
		/*
		 * A head that never ended within the limit has no length;
		 * every other error was found in a complete head.
		 */
		if (req->head_len == 0) {
			FUZZ_CHECK(rc == 414 || rc == 431);
			FUZZ_CHECK(len >= max_head);
			return rc;
		}
		break;
	default:
		FUZZ_CHECK(!"unknown result");
	}

	/* What follows the head cannot change what the head says. */
	rc2 = request_parse(&again, buf, req->head_len, max_head, &why2);
	FUZZ_CHECK(rc2 == rc);
	if (rc == REQUEST_OK)
		FUZZ_CHECK(request_same(req, &again));
	/* One byte short, the head is not there yet. */
	if (req->head_len - 1 < max_head) {
		rc2 = request_parse(&again, buf, req->head_len - 1, max_head,
		    &why2);
		FUZZ_CHECK(rc2 == REQUEST_INCOMPLETE);
	}
	return rc;
}

/* Every head in buf, one after another, as a keep-alive connection. */
static void
parse_stream(const char *buf, size_t len, size_t max_head)
{
	struct request req;
	size_t off = 0;

	while (off < len &&
	    parse_one(&req, buf + off, len - off, max_head) == REQUEST_OK)
		off += req.head_len;
	FUZZ_CHECK(off <= len);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf;

	if ((buf = fuzz_copy(data, size)) == NULL)
		return 0;
	parse_stream(buf, size, 8192); /* the default max-header-size */
	parse_stream(buf, size, 1024); /* the smallest one allowed */
	parse_stream(buf, size, size / 2 + 1); /* reached by long inputs */
	free(buf);
	return 0;
}
