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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
	if ((l->a = archive_read_new()) == NULL ||
	    archive_read_support_format_raw(l->a) != ARCHIVE_OK) {
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
	if (archive_read_open_filename(l->a, path, READ_BLOCK) != ARCHIVE_OK ||
	    archive_read_next_header(l->a, &e) != ARCHIVE_OK) {
		/* An empty file has no raw entry: no lines. */
		if (archive_errno(l->a) == 0) {
			l->eof = 1;
			return 0;
		}
		snprintf(err, errlen, "%s", archive_error_string(l->a));
		return -1;
	}
	return 0;
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

#define CONTENTS_PREFIX "usr/lib/debug/.build-id/"

int
repometa_contents(const char *path,
    int (*cb)(const struct buildid *id, const char *packages, void *arg),
    void *arg, char *err, size_t errlen)
{
	struct buildid id;
	const char *why;
	struct lines l;
	char hex[BUILDID_HEX_MAX], *p, *sp, *file;
	size_t n, plen = strlen(CONTENTS_PREFIX);
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
		if (strncmp(file, CONTENTS_PREFIX, plen) != 0)
			continue;
		/* The location is the last word; the path may hold blanks. */
		if ((sp = strrchr(file, ' ')) == NULL &&
		    (sp = strrchr(file, '\t')) == NULL)
			continue;
		p = sp + 1;
		while (sp > file && (sp[-1] == ' ' || sp[-1] == '\t'))
			sp--;
		*sp = '\0';
		file += plen;
		/* xx/rest.debug */
		n = strlen(file);
		if (n < 2 + 1 + 1 + 6 || file[2] != '/' ||
		    strcmp(file + n - 6, ".debug") != 0 || n - 7 >= sizeof(hex))
			continue;
		memcpy(hex, file, 2);
		memcpy(hex + 2, file + 3, n - 3 - 6);
		hex[n - 7] = '\0';
		if (buildid_parse(&id, hex, strlen(hex), &why) == -1)
			continue;
		if ((stop = cb(&id, p, arg)) != 0)
			break;
	}
	lines_close(&l);
	if (stop == -1)
		snprintf(err, errlen, "cannot record the index");
	return rc == -1 || stop == -1 ? -1 : 0;
}
