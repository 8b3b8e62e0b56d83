/*
 * fetchers/s3xml.h: the XML answers of an S3-compatible store, read with
 * expat: a page of a ListObjectsV2 listing, the UploadId of a multipart
 * upload's initiation, and the <Error> of an error body, of a multipart
 * completion that failed with a 200 or of a DeleteObjects result.
 *
 * Answers are hostile: an element's text is kept to S3XML_TEXT_MAX bytes
 * and a page to S3XML_KEYS_MAX keys, and nesting is bounded; an answer
 * beyond a bound is refused, never cut.  Elements are matched by name
 * and place (no namespace prefix, as S3 and radosgw write them).  Plain
 * functions of their input; any thread.
 */
#ifndef FETCHERS_S3XML_H
#define FETCHERS_S3XML_H

#include <stddef.h>

/* An object key is at most 1024 bytes (S3); a continuation token more. */
#define S3XML_TEXT_MAX 4096
/* A page holds 1000 keys at most (S3's and radosgw's max-keys). */
#define S3XML_KEYS_MAX 1000

/* One page of ListObjectsV2: <ListBucketResult>. */
struct s3xml_page {
	char **keys; /* each <Contents><Key>, decoded */
	size_t nkeys;
	int truncated; /* <IsTruncated>true */
	char *token; /* <NextContinuationToken>; NULL when none */
};

/*
 * Read a page from xml[0..len): 0, or -1 with err (not XML, not a
 * ListBucketResult, IsTruncated neither true nor false, a bound passed,
 * out of memory).  Free it with s3xml_page_free, also after -1.
 */
int s3xml_page(const char *xml, size_t len, struct s3xml_page *p, char *err,
    size_t errlen);
void s3xml_page_free(struct s3xml_page *p);

/* The first <Error> of an answer: the root, or one in a DeleteResult. */
struct s3xml_error {
	char code[64]; /* <Code>, cut; "" when none */
	char key[256]; /* <Key>, cut; "" when none */
};

/*
 * 1 when xml[0..len) holds an <Error> (e filled), 0 when it is XML
 * without one, -1 when it is not XML (or passes a bound).
 */
int s3xml_error(const char *xml, size_t len, struct s3xml_error *e);

/*
 * The <UploadId> of <InitiateMultipartUploadResult> into out (len
 * bytes): 0, or -1 when there is none, or it does not fit.
 */
int s3xml_upload_id(const char *xml, size_t len, char *out, size_t outlen);

#endif /* FETCHERS_S3XML_H */
