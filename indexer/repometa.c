/*
 * indexer/repometa.c: stream the metadata files of Debian repositories,
 * line by line, through libarchive's raw reader (which undoes whatever
 * compression the file has, natively, or passes plain text through).
 *
 * Lines are gathered in one buffer that grows to at most REPOMETA_LINE_MAX
 * bytes; nothing else is held.  See indexer/repometa.h.
 */
#include "indexer/repometa.h"

#include <archive.h>
#include <archive_entry.h>
#include <ctype.h>
#include <errno.h>
#include <expat.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define READ_BLOCK (64 * 1024)

/* A file read a line at a time. */
struct lines {
	struct archive *a;
	char *buf;
	size_t len, cap;
	const char *blk; /* the rest of the current data block */
	size_t blen;
	int eof;
};

static int
lines_open(struct lines *l, const char *path, char *err, size_t errlen)
{
	static int (*const filters[])(struct archive *) = {
		archive_read_support_filter_gzip,
		archive_read_support_filter_xz,
		archive_read_support_filter_bzip2,
		archive_read_support_filter_zstd,
	};
	struct archive_entry *e;
	size_t i;

	memset(l, 0, sizeof(*l));
	/*
	 * The raw format wants a byte to bid on: a file that decompresses to
	 * nothing (a valid empty gzip, xz, bzip2 or zstd stream, as archives
	 * publish for a Contents with no lines) is the empty format's.
	 */
	if ((l->a = archive_read_new()) == NULL ||
	    archive_read_support_format_raw(l->a) != ARCHIVE_OK ||
	    archive_read_support_format_empty(l->a) != ARCHIVE_OK) {
		snprintf(err, errlen, "cannot set up a reader");
		return -1;
	}
	for (i = 0; i < sizeof(filters) / sizeof(filters[0]); i++)
		if (filters[i](l->a) != ARCHIVE_OK) {
			snprintf(err, errlen,
			    "libarchive lacks a native "
			    "decompressor");
			return -1;
		}
	if (archive_read_open_filename(l->a, path, READ_BLOCK) != ARCHIVE_OK) {
		snprintf(err, errlen, "%s", archive_error_string(l->a));
		return -1;
	}
	switch (archive_read_next_header(l->a, &e)) {
	case ARCHIVE_OK:
		return 0;
	case ARCHIVE_EOF: /* the empty format: no lines */
		l->eof = 1;
		return 0;
	default:
		snprintf(err, errlen, "%s", archive_error_string(l->a));
		return -1;
	}
}

static void
lines_close(struct lines *l)
{
	if (l->a != NULL)
		archive_read_free(l->a);
	free(l->buf);
}

/* Append n bytes to the line: 0, or -1 when it would be too long. */
static int
lines_add(struct lines *l, const char *p, size_t n)
{
	size_t cap;
	char *b;

	if (l->len + n + 1 > l->cap) {
		if (l->len + n + 1 > REPOMETA_LINE_MAX)
			return -1;
		cap = l->cap == 0 ? 4096 : l->cap;
		while (cap < l->len + n + 1)
			cap *= 2;
		if (cap > REPOMETA_LINE_MAX)
			cap = REPOMETA_LINE_MAX;
		if ((b = realloc(l->buf, cap)) == NULL)
			return -1;
		l->buf = b;
		l->cap = cap;
	}
	memcpy(l->buf + l->len, p, n);
	l->len += n;
	l->buf[l->len] = '\0';
	return 0;
}

/*
 * The next line, without its '\n' (and '\r'), NUL-ended in l->buf: 1, 0 at
 * the end, -1 with err.
 */
static int
lines_next(struct lines *l, char *err, size_t errlen)
{
	const char *nl;
	const void *blk;
	size_t size, n;
	la_int64_t off;
	int rc;

	l->len = 0;
	if (lines_add(l, "", 0) == -1)
		goto toolong;
	for (;;) {
		if (l->blen == 0) {
			if (l->eof)
				return l->len > 0 ? 1 : 0;
			rc = archive_read_data_block(l->a, &blk, &size, &off);
			if (rc == ARCHIVE_EOF) {
				l->eof = 1;
				continue;
			}
			if (rc < ARCHIVE_WARN) {
				snprintf(err, errlen, "%s",
				    archive_error_string(l->a) != NULL
					? archive_error_string(l->a)
					: "read error");
				return -1;
			}
			l->blk = blk;
			l->blen = size;
			continue;
		}
		nl = memchr(l->blk, '\n', l->blen);
		n = nl != NULL ? (size_t)(nl - l->blk) : l->blen;
		if (lines_add(l, l->blk, n) == -1)
			goto toolong;
		l->blk += n;
		l->blen -= n;
		if (nl != NULL) {
			l->blk++;
			l->blen--;
			if (l->len > 0 && l->buf[l->len - 1] == '\r')
				l->buf[--l->len] = '\0';
			return 1;
		}
	}
toolong:
	snprintf(err, errlen, "a line longer than %u bytes", REPOMETA_LINE_MAX);
	return -1;
}

/* The value of "Name: value" when line is that field, else NULL. */
static const char *
field(const char *line, const char *name)
{
	size_t n = strlen(name);

	if (strncasecmp(line, name, n) != 0 || line[n] != ':')
		return NULL;
	line += n + 1;
	while (*line == ' ' || *line == '\t')
		line++;
	return line;
}

int
repometa_sha256_parse(const char *hex, size_t len, uint8_t out[32])
{
	struct buildid id;
	const char *why;

	if (len != 64 || buildid_parse(&id, hex, len, &why) == -1 ||
	    id.len != 32)
		return -1;
	memcpy(out, id.bytes, 32);
	return 0;
}

/* "Thu, 01 Jan 2026 00:00:00 UTC" as unix seconds; 0 when unreadable. */
static int64_t
release_date(const char *s)
{
	struct tm tm;
	const char *end;

	memset(&tm, 0, sizeof(tm));
	if ((end = strptime(s, "%a, %d %b %Y %H:%M:%S", &tm)) == NULL)
		return 0;
	return (int64_t)timegm(&tm);
}

int
repometa_release(const char *path,
    int (*cb)(const struct repometa_entry *e, void *arg), void *arg,
    int64_t *valid_until, char *err, size_t errlen)
{
	struct repometa_entry e;
	struct lines l;
	char *p, *hash, *size, *name, *save, *end;
	const char *v;
	int rc, in_sha = 0;

	*valid_until = 0;
	if (lines_open(&l, path, err, errlen) == -1) {
		lines_close(&l);
		return -1;
	}
	while ((rc = lines_next(&l, err, errlen)) == 1) {
		p = l.buf;
		if (p[0] != ' ' && p[0] != '\t') {
			in_sha = field(p, "SHA256") != NULL;
			if ((v = field(p, "Valid-Until")) != NULL)
				*valid_until = release_date(v);
			continue;
		}
		if (!in_sha)
			continue;
		hash = strtok_r(p, " \t", &save);
		size = strtok_r(NULL, " \t", &save);
		name = strtok_r(NULL, " \t", &save);
		if (hash == NULL || size == NULL || name == NULL ||
		    strlen(hash) != 64 || !isdigit((unsigned char)size[0]))
			continue;
		errno = 0;
		e.size = strtoull(size, &end, 10);
		if (errno != 0 || *end != '\0')
			continue;
		e.name = name;
		e.sha256 = hash;
		if (cb(&e, arg) != 0)
			break;
	}
	lines_close(&l);
	return rc == -1 ? -1 : 0;
}

/* The fields of a stanza being read, copied out of the line buffer. */
struct stanza {
	char package[256], arch[64], filename[1024];
	char *build_ids; /* malloc'ed; NULL when none */
	uint64_t size;
	uint8_t sha256[32];
	int has_size, has_sha;
};

static void
stanza_reset(struct stanza *s)
{
	free(s->build_ids);
	memset(s, 0, sizeof(*s));
}

/* Copy v into a field of len bytes; a value that does not fit is "". */
static void
copy_field(char *out, size_t len, const char *v)
{
	if (strlen(v) < len)
		strcpy(out, v);
	else
		out[0] = '\0';
}

int
repometa_packages(const char *path,
    int (*cb)(const struct repometa_deb *d, void *arg), void *arg, char *err,
    size_t errlen)
{
	struct repometa_deb d;
	struct stanza s;
	struct lines l;
	const char *v;
	char *end;
	int rc, stop = 0;

	memset(&s, 0, sizeof(s));
	if (lines_open(&l, path, err, errlen) == -1) {
		lines_close(&l);
		return -1;
	}
	for (;;) {
		rc = lines_next(&l, err, errlen);
		if (rc == 1 && l.buf[0] != '\0') {
			if ((v = field(l.buf, "Package")) != NULL)
				copy_field(s.package, sizeof(s.package), v);
			else if ((v = field(l.buf, "Architecture")) != NULL)
				copy_field(s.arch, sizeof(s.arch), v);
			else if ((v = field(l.buf, "Filename")) != NULL)
				copy_field(s.filename, sizeof(s.filename), v);
			else if ((v = field(l.buf, "Size")) != NULL) {
				errno = 0;
				s.size = strtoull(v, &end, 10);
				s.has_size =
				    errno == 0 && end != v && *end == '\0';
			} else if ((v = field(l.buf, "SHA256")) != NULL)
				s.has_sha = repometa_sha256_parse(v, strlen(v),
						s.sha256) == 0;
			else if ((v = field(l.buf, "Build-Ids")) != NULL) {
				free(s.build_ids);
				s.build_ids = strdup(v);
			}
			continue;
		}
		/* A blank line or the end closes a stanza. */
		if (rc != -1 && s.package[0] != '\0' && s.filename[0] != '\0' &&
		    s.has_size && s.has_sha) {
			d.package = s.package;
			d.arch = s.arch;
			d.filename = s.filename;
			d.size = s.size;
			memcpy(d.sha256, s.sha256, 32);
			d.build_ids = s.build_ids != NULL ? s.build_ids : "";
			if ((stop = cb(&d, arg)) != 0)
				break;
		}
		stanza_reset(&s);
		if (rc != 1)
			break;
	}
	stanza_reset(&s);
	lines_close(&l);
	if (stop == -1)
		snprintf(err, errlen, "cannot record the index");
	return rc == -1 || stop == -1 ? -1 : 0;
}

/*
 * The id of hex digits xx/rest at f, where rest ends at f + n: 0, or -1.
 */
static int
hex_path_id(const char *f, size_t n, struct buildid *id)
{
	char hex[BUILDID_HEX_MAX];
	const char *why;

	if (n < 2 + 1 + 1 || f[2] != '/' || n - 1 >= sizeof(hex))
		return -1;
	memcpy(hex, f, 2);
	memcpy(hex + 2, f + 3, n - 3);
	hex[n - 1] = '\0';
	return buildid_parse(id, hex, n - 1, &why);
}

#define DEBUG_BUILDID "usr/lib/debug/.build-id/"
#define EXEC_BUILDID "usr/lib/.build-id/"

int
repometa_buildid_path(const char *f, struct buildid *id)
{
	size_t n;

	if (strncmp(f, EXEC_BUILDID, sizeof(EXEC_BUILDID) - 1) == 0) {
		f += sizeof(EXEC_BUILDID) - 1;
		return hex_path_id(f, strlen(f), id) == 0 ? REPOMETA_EXECUTABLE
							  : -1;
	}
	if (strncmp(f, DEBUG_BUILDID, sizeof(DEBUG_BUILDID) - 1) != 0)
		return -1;
	f += sizeof(DEBUG_BUILDID) - 1;
	n = strlen(f);
	if (n > 6 && strcmp(f + n - 6, ".debug") == 0)
		return hex_path_id(f, n - 6, id) == 0 ? REPOMETA_DEBUGINFO : -1;
	return hex_path_id(f, n, id) == 0 ? REPOMETA_EXECUTABLE_WEAK : -1;
}

int
repometa_contents(const char *path,
    int (*cb)(const struct buildid *id, const char *packages, void *arg),
    void *arg, char *err, size_t errlen)
{
	struct buildid id;
	struct lines l;
	char *p, *sp, *file;
	int rc, stop = 0;

	if (lines_open(&l, path, err, errlen) == -1) {
		lines_close(&l);
		return -1;
	}
	while ((rc = lines_next(&l, err, errlen)) == 1) {
		file = l.buf;
		if (file[0] == '.' && file[1] == '/')
			file += 2;
		else if (file[0] == '/')
			file++;
		if (strncmp(file, DEBUG_BUILDID, strlen(DEBUG_BUILDID)) != 0)
			continue;
		/*
		 * The location is the last word, after the last blank of
		 * either kind; the path may hold blanks.
		 */
		sp = file + strlen(file);
		while (sp > file && (sp[-1] == ' ' || sp[-1] == '\t'))
			sp--;
		*sp = '\0';
		for (p = sp; p > file && p[-1] != ' ' && p[-1] != '\t'; p--)
			continue;
		if (p == file || *p == '\0')
			continue;
		sp = p - 1;
		while (sp > file && (sp[-1] == ' ' || sp[-1] == '\t'))
			sp--;
		*sp = '\0';
		/* Debian's debug packages ship debug files alone. */
		if (repometa_buildid_path(file, &id) != REPOMETA_DEBUGINFO)
			continue;
		if ((stop = cb(&id, p, arg)) != 0)
			break;
	}
	lines_close(&l);
	if (stop == -1)
		snprintf(err, errlen, "cannot record the index");
	return rc == -1 || stop == -1 ? -1 : 0;
}

/* ---------------------------------------------------------------- RPM */

/*
 * The repodata files are XML; expat reads them from the same decompressing
 * reader as the Debian files, a block at a time.  What an element says is
 * gathered into struct xml as its tags open and close.
 */
struct xml {
	int kind; /* XML_REPOMD, XML_PRIMARY, XML_FILELISTS */
	void *cb, *arg;
	int stop;
	int depth;
	int in_text; /* gathering text of the current element */
	char text[REPOMETA_TEXT_MAX];
	size_t tlen;
	int text_over;
	/* The record being read. */
	char type[64], href[REPOMETA_TEXT_MAX], sum[128], sumtype[16];
	char pkgid[128];
	uint64_t size;
	int in_record;
};

enum { XML_REPOMD, XML_PRIMARY, XML_FILELISTS };

static const char *
xml_attr(const char **attrs, const char *name)
{
	for (; attrs[0] != NULL; attrs += 2)
		if (strcmp(attrs[0], name) == 0)
			return attrs[1];
	return NULL;
}

static void
xml_copy(char *out, size_t len, const char *v)
{
	if (v != NULL && strlen(v) < len)
		strcpy(out, v);
	else
		out[0] = '\0';
}

static void XMLCALL
xml_start(void *arg, const char *name, const char **attrs)
{
	struct xml *x = arg;
	const char *v;
	char *end;

	x->depth++;
	x->in_text = 0;
	if ((x->kind == XML_REPOMD && strcmp(name, "data") == 0) ||
	    (x->kind == XML_PRIMARY && strcmp(name, "package") == 0)) {
		x->in_record = 1;
		x->href[0] = x->sum[0] = x->sumtype[0] = '\0';
		x->size = 0;
		xml_copy(x->type, sizeof(x->type), xml_attr(attrs, "type"));
		return;
	}
	if (x->kind == XML_FILELISTS && strcmp(name, "package") == 0) {
		xml_copy(x->pkgid, sizeof(x->pkgid), xml_attr(attrs, "pkgid"));
		return;
	}
	if (x->kind == XML_FILELISTS && strcmp(name, "file") == 0) {
		v = xml_attr(attrs, "type");
		x->in_text = v == NULL; /* not a dir or ghost */
		x->tlen = 0;
		x->text_over = 0;
		return;
	}
	if (!x->in_record)
		return;
	if (strcmp(name, "location") == 0) {
		xml_copy(x->href, sizeof(x->href), xml_attr(attrs, "href"));
	} else if (strcmp(name, "checksum") == 0) {
		xml_copy(x->sumtype, sizeof(x->sumtype),
		    xml_attr(attrs, "type"));
		x->in_text = 1;
		x->tlen = 0;
		x->text_over = 0;
	} else if (strcmp(name, "size") == 0) {
		if ((v = xml_attr(attrs, "package")) != NULL) {
			errno = 0;
			x->size = strtoull(v, &end, 10);
			if (errno != 0 || *end != '\0')
				x->size = 0;
		} else if (x->kind == XML_REPOMD) {
			x->in_text = 1;
			x->tlen = 0;
			x->text_over = 0;
		}
	}
}

static void XMLCALL
xml_text(void *arg, const char *s, int len)
{
	struct xml *x = arg;

	if (!x->in_text || len <= 0)
		return;
	if (x->tlen + (size_t)len >= sizeof(x->text)) {
		x->text_over = 1;
		return;
	}
	memcpy(x->text + x->tlen, s, (size_t)len);
	x->tlen += (size_t)len;
}

/* The text gathered, NUL-ended, or NULL when it was cut. */
static const char *
xml_gathered(struct xml *x)
{
	if (x->text_over)
		return NULL;
	x->text[x->tlen] = '\0';
	return x->text;
}

/* The end of a <file> of filelists: a .build-id file's id and kind. */
static void
xml_file(struct xml *x)
{
	int (*cb)(const char *, const struct buildid *, int, void *) = x->cb;
	const char *f = xml_gathered(x);
	struct buildid id;
	int kind;

	if (f == NULL || f[0] != '/' || x->pkgid[0] == '\0' ||
	    (kind = repometa_buildid_path(f + 1, &id)) == -1)
		return;
	if (cb(x->pkgid, &id, kind, x->arg) != 0)
		x->stop = 1;
}

static void XMLCALL
xml_end(void *arg, const char *name)
{
	struct xml *x = arg;
	const char *t;

	x->depth--;
	if (x->kind == XML_FILELISTS) {
		if (strcmp(name, "file") == 0 && x->in_text)
			xml_file(x);
		x->in_text = 0;
		return;
	}
	if (x->in_record && x->in_text) {
		t = xml_gathered(x);
		if (strcmp(name, "checksum") == 0)
			xml_copy(x->sum, sizeof(x->sum), t);
		else if (strcmp(name, "size") == 0 && t != NULL)
			x->size = strtoull(t, NULL, 10);
		x->in_text = 0;
	}
	if (x->kind == XML_REPOMD && strcmp(name, "data") == 0 &&
	    x->in_record) {
		int (*cb)(const struct repometa_rpmdata *, void *) = x->cb;
		struct repometa_rpmdata d;

		x->in_record = 0;
		d.type = x->type;
		d.href = x->href;
		d.sha256 = strcmp(x->sumtype, "sha256") == 0 ? x->sum : "";
		d.size = x->size;
		if (x->href[0] != '\0' && cb(&d, x->arg) != 0)
			x->stop = 1;
	} else if (x->kind == XML_PRIMARY && strcmp(name, "package") == 0 &&
	    x->in_record) {
		int (*cb)(const struct repometa_rpm *, void *) = x->cb;
		struct repometa_rpm p;

		x->in_record = 0;
		p.pkgid = x->sum;
		p.href = x->href;
		p.size = x->size;
		p.has_sha256 = strcmp(x->sumtype, "sha256") == 0 &&
		    repometa_sha256_parse(x->sum, strlen(x->sum), p.sha256) ==
			0;
		if (x->href[0] != '\0' && x->sum[0] != '\0' && x->size > 0 &&
		    cb(&p, x->arg) != 0)
			x->stop = 1;
	}
}

/* Feed the (decompressed) file at path to expat with x's handlers. */
static int
xml_read(const char *path, struct xml *x, char *err, size_t errlen)
{
	struct lines l;
	XML_Parser xp;
	const void *blk;
	size_t size, fed;
	la_int64_t off;
	int rc = 0, ar;

	if (lines_open(&l, path, err, errlen) == -1) {
		lines_close(&l);
		return -1;
	}
	if ((xp = XML_ParserCreate(NULL)) == NULL) {
		lines_close(&l);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	XML_SetUserData(xp, x);
	XML_SetElementHandler(xp, xml_start, xml_end);
	XML_SetCharacterDataHandler(xp, xml_text);
	/* A file of no bytes at all is an empty list, not bad XML. */
	fed = 0;
	while (!x->stop && !l.eof) {
		ar = archive_read_data_block(l.a, &blk, &size, &off);
		if (ar == ARCHIVE_EOF)
			break;
		if (ar < ARCHIVE_WARN) {
			snprintf(err, errlen, "%s",
			    archive_error_string(l.a) != NULL
				? archive_error_string(l.a)
				: "read error");
			rc = -1;
			break;
		}
		fed += size;
		if (size > INT_MAX ||
		    XML_Parse(xp, blk, (int)size, 0) != XML_STATUS_OK) {
			snprintf(err, errlen, "XML, line %lu: %s",
			    (unsigned long)XML_GetCurrentLineNumber(xp),
			    XML_ErrorString(XML_GetErrorCode(xp)));
			rc = -1;
			break;
		}
	}
	if (rc == 0 && !x->stop && fed > 0 &&
	    XML_Parse(xp, "", 0, 1) != XML_STATUS_OK) {
		snprintf(err, errlen, "XML: %s",
		    XML_ErrorString(XML_GetErrorCode(xp)));
		rc = -1;
	}
	XML_ParserFree(xp);
	lines_close(&l);
	return rc;
}

/* Run a parse of kind with cb; a struct xml is too large for a stack. */
static int
xml_run(const char *path, int kind, void *cb, void *arg, char *err,
    size_t errlen)
{
	struct xml *x;
	int rc;

	if ((x = calloc(1, sizeof(*x))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	x->kind = kind;
	x->cb = cb;
	x->arg = arg;
	rc = xml_read(path, x, err, errlen);
	free(x);
	return rc;
}

int
repometa_repomd(const char *path,
    int (*cb)(const struct repometa_rpmdata *d, void *arg), void *arg,
    char *err, size_t errlen)
{
	return xml_run(path, XML_REPOMD, (void *)cb, arg, err, errlen);
}

int
repometa_rpm_primary(const char *path,
    int (*cb)(const struct repometa_rpm *p, void *arg), void *arg, char *err,
    size_t errlen)
{
	return xml_run(path, XML_PRIMARY, (void *)cb, arg, err, errlen);
}

int
repometa_rpm_filelists(const char *path,
    int (*cb)(const char *pkgid, const struct buildid *id, int kind, void *arg),
    void *arg, char *err, size_t errlen)
{
	return xml_run(path, XML_FILELISTS, (void *)cb, arg, err, errlen);
}

/* --------------------------------------------------------------- Arch */

/* The lines of the current entry of a, one at a time, into *l's buffer. */
static int
entry_lines(struct archive *a, struct lines *l, char *err, size_t errlen)
{
	struct archive *saved = l->a;
	int rc;

	l->a = a;
	rc = lines_next(l, err, errlen);
	l->a = saved;
	return rc;
}

int
repometa_arch_files(const char *path,
    int (*desc)(const struct repometa_arch *p, void *arg),
    int (*file)(const char *dir, const struct buildid *id, int kind, void *arg),
    void *arg, char *err, size_t errlen)
{
	static int (*const filters[])(struct archive *) = {
		archive_read_support_filter_gzip,
		archive_read_support_filter_xz,
		archive_read_support_filter_bzip2,
		archive_read_support_filter_zstd,
	};
	struct repometa_arch p;
	struct archive_entry *e;
	struct archive *a;
	struct buildid id;
	struct lines l;
	char dir[256], field[32], filename[1024];
	const char *name, *slash;
	size_t i;
	int rc = 0, stop = 0, is_desc, has_sha, r, kind;

	memset(&l, 0, sizeof(l));
	/* A database of no packages may be a tar of nothing, or nothing. */
	if ((a = archive_read_new()) == NULL ||
	    archive_read_support_format_tar(a) != ARCHIVE_OK ||
	    archive_read_support_format_empty(a) != ARCHIVE_OK) {
		snprintf(err, errlen, "cannot set up a reader");
		if (a != NULL)
			archive_read_free(a);
		return -1;
	}
	for (i = 0; i < sizeof(filters) / sizeof(filters[0]); i++)
		filters[i](a);
	if (archive_read_open_filename(a, path, READ_BLOCK) != ARCHIVE_OK) {
		snprintf(err, errlen, "%s", archive_error_string(a));
		archive_read_free(a);
		return -1;
	}
	while (!stop && (r = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		name = archive_entry_pathname(e);
		if (name == NULL || (slash = strchr(name, '/')) == NULL ||
		    (size_t)(slash - name) >= sizeof(dir))
			continue;
		is_desc = strcmp(slash, "/desc") == 0;
		if (!is_desc && strcmp(slash, "/files") != 0)
			continue;
		memcpy(dir, name, (size_t)(slash - name));
		dir[slash - name] = '\0';
		/* Each entry is read as lines from scratch. */
		l.blen = 0;
		l.eof = 0;
		field[0] = filename[0] = '\0';
		has_sha = 0;
		p.size = 0;
		while ((rc = entry_lines(a, &l, err, errlen)) == 1) {
			if (l.buf[0] == '%') {
				snprintf(field, sizeof(field), "%s", l.buf);
				continue;
			}
			if (l.buf[0] == '\0')
				continue;
			if (!is_desc) {
				if (strcmp(field, "%FILES%") == 0 &&
				    (kind = repometa_buildid_path(l.buf,
					 &id)) != -1 &&
				    (stop = file(dir, &id, kind, arg)) != 0)
					break;
			} else if (strcmp(field, "%FILENAME%") == 0) {
				copy_field(filename, sizeof(filename), l.buf);
			} else if (strcmp(field, "%CSIZE%") == 0) {
				p.size = strtoull(l.buf, NULL, 10);
			} else if (strcmp(field, "%SHA256SUM%") == 0) {
				has_sha = repometa_sha256_parse(l.buf,
					      strlen(l.buf), p.sha256) == 0;
			}
		}
		if (rc == -1)
			break;
		rc = 0;
		if (is_desc && !stop && filename[0] != '\0' && p.size > 0 &&
		    has_sha) {
			p.dir = dir;
			p.filename = filename;
			stop = desc(&p, arg);
		}
	}
	if (rc == 0 && !stop && r != ARCHIVE_EOF && r != ARCHIVE_OK) {
		snprintf(err, errlen, "%s", archive_error_string(a));
		rc = -1;
	}
	free(l.buf);
	archive_read_free(a);
	if (stop == -1) {
		snprintf(err, errlen, "cannot record the index");
		rc = -1;
	}
	return rc;
}

/* ------------------------------------------------------------ armored keys */

#define ARMOR_BEGIN "-----BEGIN PGP PUBLIC KEY BLOCK-----"
#define ARMOR_END "-----END PGP PUBLIC KEY BLOCK-----"

/* The CRC-24 of OpenPGP's armor (RFC 4880, 6.1), continued from crc. */
static uint32_t
crc24(uint32_t crc, const uint8_t *p, size_t n)
{
	int i;

	while (n-- > 0) {
		crc ^= (uint32_t)*p++ << 16;
		for (i = 0; i < 8; i++) {
			crc <<= 1;
			if (crc & 0x1000000)
				crc ^= 0x1864cfb;
		}
	}
	return crc & 0xffffff;
}

/* The value of a base64 digit, or -1. */
static int
b64_value(int c)
{
	static const char digits[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *p;

	if (c == '\0' || (p = strchr(digits, c)) == NULL)
		return -1;
	return (int)(p - digits);
}

/*
 * Decode a line of base64 (padding allowed only at its end) into out:
 * the number of bytes, or -1.  4 digits make 3 bytes; armor lines hold
 * whole groups.
 */
static int
b64_line(const char *s, size_t len, uint8_t *out)
{
	size_t i, n = 0, pad;
	int k, v[4];

	if (len % 4 != 0)
		return -1;
	for (i = 0; i < len; i += 4) {
		pad = 0;
		for (k = 0; k < 4; k++) {
			if (s[i + (size_t)k] == '=' && k >= 2 && i + 4 == len) {
				v[k] = 0;
				pad++;
			} else if (pad > 0 ||
			    (v[k] = b64_value(s[i + (size_t)k])) == -1)
				return -1;
		}
		out[n++] = (uint8_t)(v[0] << 2 | v[1] >> 4);
		if (pad < 2)
			out[n++] = (uint8_t)((v[1] & 0xf) << 4 | v[2] >> 2);
		if (pad < 1)
			out[n++] = (uint8_t)((v[2] & 0x3) << 6 | v[3]);
	}
	return (int)n;
}

int
repometa_dearmor(const char *in, const char *out, char *err, size_t errlen)
{
	enum { OUTSIDE, HEADERS, BODY, ENDED } st = OUTSIDE;
	char line[1024];
	uint8_t bytes[sizeof(line)], crc[4];
	uint32_t sum = 0;
	size_t len, blocks = 0;
	int n, rc = -1, first = 1, whole;
	FILE *fp, *op = NULL;

	if ((fp = fopen(in, "r")) == NULL) {
		snprintf(err, errlen, "%s: %s", in, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), fp) != NULL) {
		len = strlen(line);
		whole = len < sizeof(line) - 1 || line[len - 1] == '\n';
		while (len > 0 && isspace((unsigned char)line[len - 1]))
			line[--len] = '\0';
		if (first && len > 0) {
			first = 0;
			if (strcmp(line, ARMOR_BEGIN) != 0) {
				rc = 1; /* binary, or not ours to judge */
				goto out;
			}
			if ((op = fopen(out, "w")) == NULL) {
				snprintf(err, errlen, "%s: %s", out,
				    strerror(errno));
				goto out;
			}
		}
		if (!whole) {
			snprintf(err, errlen, "a line too long");
			goto out;
		}
		switch (st) {
		case OUTSIDE:
			if (strcmp(line, ARMOR_BEGIN) == 0) {
				st = HEADERS;
				sum = 0xb704ce;
			}
			break;
		case HEADERS:
			if (len == 0)
				st = BODY;
			else if (strchr(line, ':') == NULL) {
				snprintf(err, errlen,
				    "no blank line after the armor headers");
				goto out;
			}
			break;
		case BODY:
		case ENDED:
			if (strcmp(line, ARMOR_END) == 0) {
				st = OUTSIDE;
				blocks++;
				break;
			}
			if (st == ENDED) {
				snprintf(err, errlen,
				    "base64 after the checksum line");
				goto out;
			}
			if (line[0] == '=') {
				if (b64_line(line + 1, len - 1, crc) != 3) {
					snprintf(err, errlen,
					    "a bad checksum line");
					goto out;
				}
				if (((uint32_t)crc[0] << 16 |
					(uint32_t)crc[1] << 8 | crc[2]) !=
				    sum) {
					snprintf(err, errlen,
					    "CRC-24 mismatch: the key is "
					    "damaged");
					goto out;
				}
				st = ENDED;
				break;
			}
			if ((n = b64_line(line, len, bytes)) == -1) {
				snprintf(err, errlen, "bad base64");
				goto out;
			}
			sum = crc24(sum, bytes, (size_t)n);
			if (fwrite(bytes, 1, (size_t)n, op) != (size_t)n) {
				snprintf(err, errlen, "%s: %s", out,
				    strerror(errno));
				goto out;
			}
			break;
		}
	}
	if (ferror(fp))
		snprintf(err, errlen, "%s: %s", in, strerror(errno));
	else if (first)
		snprintf(err, errlen, "%s: empty", in);
	else if (st != OUTSIDE || blocks == 0)
		snprintf(err, errlen, "cut short: no END line");
	else
		rc = 0;
out:
	fclose(fp);
	if (op != NULL && fclose(op) != 0 && rc == 0) {
		snprintf(err, errlen, "%s: %s", out, strerror(errno));
		rc = -1;
	}
	if (rc != 0 && op != NULL)
		unlink(out);
	return rc;
}
