/*
 * tests/fuzz/fuzz_response.c: fuzz response_plan(), which turns the
 * conditional, Range and X-DEBUGINFOD-MAXSIZE headers of a request into a
 * status and a byte range (daemon/response.h).
 *
 * The input is what a client sent; every head request_parse() accepts in it
 * (pipelined, as the server reads them) is planned against a fixed artifact
 * of 0, 1, 1000 and 2^40 bytes, whole or a section of a file (the two ETag
 * shapes), with a Last-Modified date that seeds can name.  Besides memory
 * errors the target aborts when a plan breaks its contract: a status other
 * than 200, 206, 304, 406 or 416; a body range outside the artifact; an
 * empty 206; a 304, 406, 206 or 416 without the header that asks for it; a
 * reason missing or present where it should not be.  The planned head is
 * then built and must fit, end in one blank line and carry a Content-Range
 * that matches the plan.
 */
#include "daemon/response.h"

#include <inttypes.h>

#include "tests/fuzz/fuzz.h"

/* Sun, 06 Nov 1994 08:49:37 GMT: Last-Modified of the artifact. */
#define MTIME 784111777
#define DATE "Sun, 06 Nov 1994 08:49:37 GMT"
#define HEAD_MAX 2048

static const uint64_t sizes[] = { 0, 1, 1000, 1ULL << 40 };
/* Where the artifact starts in its file: 0 for a whole file. */
static const uint64_t offsets[] = { 0, 4096 };

static int
present(struct slice s)
{
	return s.p != NULL;
}

static void
check_plan(const struct request *req, const struct artifact *art,
    const struct plan *plan)
{
	FUZZ_CHECK(plan->offset <= art->size);
	FUZZ_CHECK(plan->length <= art->size - plan->offset);
	switch (plan->status) {
	case 200:
		FUZZ_CHECK(plan->offset == 0 && plan->length == art->size);
		FUZZ_CHECK(plan->why == NULL);
		break;
	case 206:
		FUZZ_CHECK(present(req->range));
		FUZZ_CHECK(plan->length >= 1);
		FUZZ_CHECK(plan->why == NULL);
		break;
	case 304:
		FUZZ_CHECK(present(req->if_none_match) ||
		    present(req->if_modified_since));
		FUZZ_CHECK(plan->length == 0 && plan->why == NULL);
		break;
	case 406:
		FUZZ_CHECK(present(req->maxsize));
		FUZZ_CHECK(art->size > 0);
		FUZZ_CHECK(plan->length == 0 && plan->why != NULL);
		break;
	case 416:
		FUZZ_CHECK(present(req->range));
		FUZZ_CHECK(plan->length == 0 && plan->why != NULL);
		break;
	default:
		FUZZ_CHECK(!"unknown status");
	}
	if (!present(req->if_none_match) && !present(req->if_modified_since) &&
	    !present(req->maxsize) && !present(req->range))
		FUZZ_CHECK(plan->status == 200);
}

/* The head of the plan fits, ends once, and says the planned range. */
static void
check_head(const struct request *req, const struct artifact *art,
    const struct plan *plan)
{
	char buf[HEAD_MAX + 1], want[128];
	struct hbuf hb;
	char *end;

	hbuf_start(&hb, buf, HEAD_MAX, plan->status, DATE);
	response_artifact_head(&hb, plan, art);
	hbuf_end(&hb, req->keepalive, req->minor == 0);
	FUZZ_CHECK(!hb.overflow && hb.len <= HEAD_MAX);
	buf[hb.len] = '\0';
	FUZZ_CHECK(strlen(buf) == hb.len);
	end = strstr(buf, "\r\n\r\n");
	FUZZ_CHECK(end != NULL && end + 4 == buf + hb.len);
	if (plan->status == 206) {
		snprintf(want, sizeof(want),
		    "\r\nContent-Range: bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64
		    "\r\n",
		    plan->offset, plan->offset + plan->length - 1, art->size);
		FUZZ_CHECK(strstr(buf, want) != NULL);
	}
}

static void
plan_all(const struct request *req)
{
	struct artifact art;
	struct plan plan;
	size_t i, j;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (j = 0; j < sizeof(offsets) / sizeof(offsets[0]); j++) {
			memset(&art, 0, sizeof(art));
			art.size = sizes[i];
			art.mtime = MTIME;
			response_etag(&art, sizes[i],
			    (int64_t)MTIME * 1000000000, offsets[j]);
			art.file = "/usr/src/debug/prog.c";
			art.cache = "HIT";
			memset(&plan, 0x5a, sizeof(plan));
			response_plan(req, &art, &plan);
			check_plan(req, &art, &plan);
			check_head(req, &art, &plan);
		}
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct request req;
	const char *why;
	size_t off = 0;
	char *buf;

	if ((buf = fuzz_copy(data, size)) == NULL)
		return 0;
	while (off < size &&
	    request_parse(&req, buf + off, size - off, 8192, &why) ==
		REQUEST_OK) {
		plan_all(&req);
		off += req.head_len;
	}
	free(buf);
	return 0;
}
