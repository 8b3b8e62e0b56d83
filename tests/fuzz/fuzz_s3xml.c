/*
 * tests/fuzz/fuzz_s3xml.c: fuzz the readers of an object store's XML
 * answers (fetchers/s3xml.h): a ListObjectsV2 page, an <Error>, an
 * UploadId.  A store is outside this server: a purge deletes what its
 * listing names, an upload goes on with the id its answer gives.
 *
 * The input is one answer, given to all three.  Besides memory errors,
 * the target aborts when a result breaks the contract: a return other
 * than its documented values, an error without a message, more keys than
 * a page holds, a key or token longer than the bound, or an error code,
 * key or upload id that is not NUL-terminated within its buffer.
 */
#include "fetchers/s3xml.h"

#include "tests/fuzz/fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct s3xml_page p;
	struct s3xml_error e;
	char err[256], id[512];
	char *copy;
	size_t i;
	int rc;

	if ((copy = fuzz_copy(data, size)) == NULL)
		return 0;
	err[0] = '\0';
	rc = s3xml_page(copy, size, &p, err, sizeof(err));
	FUZZ_CHECK(rc == 0 || rc == -1);
	if (rc == -1)
		FUZZ_CHECK(err[0] != '\0');
	FUZZ_CHECK(p.nkeys <= S3XML_KEYS_MAX);
	for (i = 0; i < p.nkeys; i++)
		FUZZ_CHECK(
		    p.keys[i] != NULL && strlen(p.keys[i]) <= S3XML_TEXT_MAX);
	if (p.token != NULL)
		FUZZ_CHECK(strlen(p.token) <= S3XML_TEXT_MAX);
	s3xml_page_free(&p);

	rc = s3xml_error(copy, size, &e);
	FUZZ_CHECK(rc == 1 || rc == 0 || rc == -1);
	FUZZ_CHECK(memchr(e.code, '\0', sizeof(e.code)) != NULL);
	FUZZ_CHECK(memchr(e.key, '\0', sizeof(e.key)) != NULL);
	if (rc != 1)
		FUZZ_CHECK(e.code[0] == '\0' || rc == -1);

	memset(id, 'x', sizeof(id));
	rc = s3xml_upload_id(copy, size, id, sizeof(id));
	FUZZ_CHECK(rc == 0 || rc == -1);
	if (rc == 0)
		FUZZ_CHECK(
		    memchr(id, '\0', sizeof(id)) != NULL && id[0] != '\0');
	free(copy);
	return 0;
}
