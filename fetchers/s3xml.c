/*
 * fetchers/s3xml.c: S3's XML answers through expat (see s3xml.h).
 *
 * One walk serves every kind of answer: expat's callbacks keep the names
 * of the open elements (to DEPTH_MAX) and the text of the current one (to
 * S3XML_TEXT_MAX bytes), and hand each element's end to the kind's own
 * function, which looks at where it is and takes what it wants.  A DTD is
 * refused outright (S3 never sends one), so no entity is ever declared.
 */
#include "fetchers/s3xml.h"

#include <expat.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEPTH_MAX 16
#define ELEM_NAME_MAX 64

struct walk {
	XML_Parser xp;
	int depth; /* open elements */
	int extra; /* open beyond DEPTH_MAX (the walk is stopping) */
	char names[DEPTH_MAX][ELEM_NAME_MAX]; /* names[0] is the root */
	char text[S3XML_TEXT_MAX + 1]; /* of the element open last */
	size_t tlen;
	int over; /* its text passed S3XML_TEXT_MAX */
	const char *why; /* set when a function stopped the walk */
	/* The kind's: an element opened (its name is names[depth - 1]). */
	void (*start)(struct walk *w);
	/* ... an element ends: its text, NUL-ended, unless it was over. */
	void (*end)(struct walk *w, const char *text);
	void *arg;
};

static void
walk_stop(struct walk *w, const char *why)
{
	if (w->why == NULL)
		w->why = why;
	XML_StopParser(w->xp, XML_FALSE);
}

/* 1 when the open elements are exactly the n names given. */
static int
walk_at(const struct walk *w, int n, const char *const *path)
{
	int i;

	if (w->depth != n)
		return 0;
	for (i = 0; i < n; i++)
		if (strcmp(w->names[i], path[i]) != 0)
			return 0;
	return 1;
}

static void XMLCALL
walk_start(void *arg, const char *name, const char **attrs)
{
	struct walk *w = arg;

	(void)attrs;
	if (w->depth == DEPTH_MAX) {
		w->extra++;
		walk_stop(w, "nested too deep");
		return;
	}
	snprintf(w->names[w->depth++], ELEM_NAME_MAX, "%s", name);
	w->tlen = 0;
	w->over = 0;
	if (w->start != NULL && w->why == NULL)
		w->start(w);
}

static void XMLCALL
walk_text(void *arg, const char *s, int len)
{
	struct walk *w = arg;

	if (len <= 0 || w->over)
		return;
	if (w->tlen + (size_t)len > S3XML_TEXT_MAX) {
		w->over = 1;
		return;
	}
	memcpy(w->text + w->tlen, s, (size_t)len);
	w->tlen += (size_t)len;
}

static void XMLCALL
walk_end(void *arg, const char *name)
{
	struct walk *w = arg;

	(void)name;
	/* Expat may still call after a stop: only the count goes on. */
	if (w->extra > 0) {
		w->extra--;
		return;
	}
	w->text[w->tlen] = '\0';
	if (w->why == NULL)
		w->end(w, w->over ? NULL : w->text);
	w->depth--;
	w->tlen = 0;
	w->over = 0;
}

static void XMLCALL
walk_doctype(void *arg, const XML_Char *name, const XML_Char *sysid,
    const XML_Char *pubid, int has_internal_subset)
{
	(void)name;
	(void)sysid;
	(void)pubid;
	(void)has_internal_subset;
	walk_stop(arg, "a document type declaration");
}

/* Walk xml[0..len) with w's functions: 0, or -1 with err (may be NULL). */
static int
walk_run(struct walk *w, const char *xml, size_t len, char *err, size_t errlen)
{
	enum XML_Status st;

	if (len > INT_MAX || (w->xp = XML_ParserCreate(NULL)) == NULL) {
		if (err != NULL)
			snprintf(err, errlen, "%s",
			    len > INT_MAX ? "too large" : "out of memory");
		return -1;
	}
	XML_SetUserData(w->xp, w);
	XML_SetElementHandler(w->xp, walk_start, walk_end);
	XML_SetCharacterDataHandler(w->xp, walk_text);
	XML_SetStartDoctypeDeclHandler(w->xp, walk_doctype);
	st = XML_Parse(w->xp, xml, (int)len, 1);
	if (st != XML_STATUS_OK && err != NULL) {
		if (w->why != NULL)
			snprintf(err, errlen, "%s", w->why);
		else
			snprintf(err, errlen, "not XML (line %lu: %s)",
			    (unsigned long)XML_GetCurrentLineNumber(w->xp),
			    XML_ErrorString(XML_GetErrorCode(w->xp)));
	}
	XML_ParserFree(w->xp);
	w->xp = NULL;
	return st == XML_STATUS_OK && w->why == NULL ? 0 : -1;
}

/* ------------------------------------------------------------- listing */

static void
page_start(struct walk *w)
{
	if (w->depth == 1 && strcmp(w->names[0], "ListBucketResult") != 0)
		walk_stop(w, "not a ListBucketResult");
}

static void
page_end(struct walk *w, const char *text)
{
	static const char *const key[] = { "ListBucketResult", "Contents",
		"Key" };
	static const char *const trunc[] = { "ListBucketResult",
		"IsTruncated" };
	static const char *const token[] = { "ListBucketResult",
		"NextContinuationToken" };
	struct s3xml_page *p = w->arg;
	char **v;

	if (walk_at(w, 3, key)) {
		if (text == NULL) {
			walk_stop(w, "a key too long");
			return;
		}
		if (p->nkeys == S3XML_KEYS_MAX) {
			walk_stop(w, "more keys than a page holds");
			return;
		}
		if ((v = realloc(p->keys, (p->nkeys + 1) * sizeof(*v))) ==
		    NULL) {
			walk_stop(w, "out of memory");
			return;
		}
		p->keys = v;
		if ((v[p->nkeys] = strdup(text)) == NULL) {
			walk_stop(w, "out of memory");
			return;
		}
		p->nkeys++;
	} else if (walk_at(w, 2, trunc)) {
		if (text != NULL && strcmp(text, "true") == 0)
			p->truncated = 1;
		else if (text != NULL && strcmp(text, "false") == 0)
			p->truncated = 0;
		else
			walk_stop(w, "IsTruncated neither true nor false");
	} else if (walk_at(w, 2, token)) {
		if (text == NULL || p->token != NULL) {
			walk_stop(w,
			    text == NULL ? "a continuation token too "
					   "long"
					 : "two continuation tokens");
			return;
		}
		if ((p->token = strdup(text)) == NULL)
			walk_stop(w, "out of memory");
	}
}

int
s3xml_page(const char *xml, size_t len, struct s3xml_page *p, char *err,
    size_t errlen)
{
	struct walk *w;
	int rc;

	memset(p, 0, sizeof(*p));
	/* The text buffer is too large for a worker's stack. */
	if ((w = calloc(1, sizeof(*w))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	w->start = page_start;
	w->end = page_end;
	w->arg = p;
	rc = walk_run(w, xml, len, err, errlen);
	free(w);
	return rc;
}

void
s3xml_page_free(struct s3xml_page *p)
{
	size_t i;

	for (i = 0; i < p->nkeys; i++)
		free(p->keys[i]);
	free(p->keys);
	free(p->token);
	memset(p, 0, sizeof(*p));
}

/* --------------------------------------------------------------- errors */

struct err_state {
	struct s3xml_error *e;
	int found;
	int in; /* the depth of the <Error> being read; 0: none */
};

static void
error_start(struct walk *w)
{
	struct err_state *s = w->arg;

	if (s->found || strcmp(w->names[w->depth - 1], "Error") != 0)
		return;
	if (w->depth == 1 ||
	    (w->depth == 2 && strcmp(w->names[0], "DeleteResult") == 0)) {
		s->found = 1;
		s->in = w->depth;
	}
}

static void
error_end(struct walk *w, const char *text)
{
	struct err_state *s = w->arg;
	const char *name = w->names[w->depth - 1];

	if (s->in == 0)
		return;
	if (w->depth == s->in) {
		s->in = 0;
		return;
	}
	if (w->depth != s->in + 1 || text == NULL)
		return;
	if (strcmp(name, "Code") == 0)
		snprintf(s->e->code, sizeof(s->e->code), "%s", text);
	else if (strcmp(name, "Key") == 0)
		snprintf(s->e->key, sizeof(s->e->key), "%s", text);
}

int
s3xml_error(const char *xml, size_t len, struct s3xml_error *e)
{
	struct err_state s = { e, 0, 0 };
	struct walk *w;
	int rc;

	memset(e, 0, sizeof(*e));
	if ((w = calloc(1, sizeof(*w))) == NULL)
		return -1;
	w->start = error_start;
	w->end = error_end;
	w->arg = &s;
	rc = walk_run(w, xml, len, NULL, 0);
	free(w);
	if (rc == -1)
		return -1;
	return s.found;
}

/* ------------------------------------------------------------ upload id */

struct id_state {
	char *out;
	size_t len;
	int found;
};

static void
id_end(struct walk *w, const char *text)
{
	static const char *const path[] = { "InitiateMultipartUploadResult",
		"UploadId" };
	struct id_state *s = w->arg;

	if (!walk_at(w, 2, path) || s->found)
		return;
	if (text == NULL || text[0] == '\0' || strlen(text) >= s->len) {
		walk_stop(w, "no usable UploadId");
		return;
	}
	memcpy(s->out, text, strlen(text) + 1);
	s->found = 1;
}

int
s3xml_upload_id(const char *xml, size_t len, char *out, size_t outlen)
{
	struct id_state s = { out, outlen, 0 };
	struct walk *w;
	int rc;

	if ((w = calloc(1, sizeof(*w))) == NULL)
		return -1;
	w->end = id_end;
	w->arg = &s;
	rc = walk_run(w, xml, len, NULL, 0);
	free(w);
	return rc == 0 && s.found ? 0 : -1;
}
