/*
 * tests/fuzz/fuzz_pkgpath.c: fuzz pkg_member_path() and pkg_link_resolve(),
 * which turn the member names and link targets that packages carry into
 * the paths the server looks members up by (indexer/package.h).
 *
 * The input is one byte for the size of the output buffer (bit 7 set:
 * PATH_MAX; else the byte itself, 0 and 1 included), then a member name,
 * a NUL and a link target; each is a heap string of its exact size, and so
 * is the output buffer, so that AddressSanitizer sees a byte written or
 * read too far.
 *
 * The oracle is a model of the contract, built another way: the name (or
 * the link's directory and the target) as a list of components, where
 * empty and "." ones go and ".." pops one (for a name: is refused; popping
 * the root: is an escape).  Every intermediate path must fit the buffer,
 * the result is "/" and the components joined by "/".  The functions must
 * answer 0 exactly when the model has a result, with that result; and an
 * accepted name, passed through again, must come back unchanged.
 */
#include <limits.h>

#include "indexer/package.h"

#include "tests/fuzz/fuzz.h"

/* A component: n bytes at p. */
struct comp {
	const char *p;
	size_t n;
};

/* The components of a path being built, and the longest it has been. */
struct model {
	struct comp *v;
	size_t n;
	size_t len; /* of "/a/b": the sum of 1 + each length */
	size_t peak;
};

/* A heap copy of n bytes with a NUL after them. */
static char *
string_copy(const uint8_t *data, size_t n)
{
	char *s = malloc(n + 1);

	if (s != NULL) {
		memcpy(s, data, n);
		s[n] = '\0';
	}
	return s;
}

/*
 * Walk the components of s into m.  Returns 0, or -1 for a ".." when pop
 * is 0 or the list is empty.
 */
static int
model_walk(struct model *m, const char *s, int pop)
{
	const char *e;
	size_t n;

	for (; *s != '\0'; s = e) {
		if ((e = strchr(s, '/')) == NULL)
			e = s + strlen(s);
		n = (size_t)(e - s);
		if (*e == '/')
			e++;
		if (n == 0 || (n == 1 && s[0] == '.'))
			continue;
		if (n == 2 && s[0] == '.' && s[1] == '.') {
			if (!pop || m->n == 0)
				return -1;
			m->len -= 1 + m->v[--m->n].n;
			continue;
		}
		m->v[m->n].p = s;
		m->v[m->n++].n = n;
		m->len += 1 + n;
		if (m->len > m->peak)
			m->peak = m->len;
	}
	return 0;
}

/* 1 when out holds what m says, "/" for no component. */
static int
model_equal(const struct model *m, const char *out)
{
	size_t i;

	if (m->n == 0)
		return strcmp(out, "/") == 0;
	for (i = 0; i < m->n; i++) {
		if (*out++ != '/' || strncmp(out, m->v[i].p, m->v[i].n) != 0)
			return 0;
		out += m->v[i].n;
	}
	return *out == '\0';
}

/* An empty model with room for the components of a path of len bytes. */
static int
model_init(struct model *m, size_t len)
{
	memset(m, 0, sizeof(*m));
	return (m->v = calloc(len / 2 + 1, sizeof(*m->v))) == NULL ? -1 : 0;
}

static void
check_member(const char *name, char *out, size_t outlen)
{
	struct model m;
	char *again;
	int rc, want;

	if (model_init(&m, strlen(name)) == -1)
		return;
	want = name[0] != '\0' && outlen >= 2 && model_walk(&m, name, 0) == 0 &&
	    m.peak < outlen;
	rc = pkg_member_path(name, out, outlen);
	FUZZ_CHECK(rc == 0 || rc == -1);
	FUZZ_CHECK((rc == 0) == want);
	if (rc == 0) {
		FUZZ_CHECK(model_equal(&m, out));
		if ((again = malloc(outlen)) != NULL) {
			FUZZ_CHECK(pkg_member_path(out, again, outlen) == 0);
			FUZZ_CHECK(strcmp(again, out) == 0);
			free(again);
		}
	}
	free(m.v);
}

static void
check_link(const char *link, const char *target, char *out, size_t outlen)
{
	struct model m;
	char *dir = NULL;
	int rc, want;

	if (model_init(&m, strlen(link) + strlen(target)) == -1)
		return;
	want = target[0] != '\0' && outlen >= 2;
	/* A relative target starts from the link's directory, copied whole. */
	if (want && target[0] != '/') {
		if ((dir = strndup(link,
			 (size_t)(strrchr(link, '/') - link))) == NULL) {
			free(m.v);
			return;
		}
		want = model_walk(&m, dir, 0) == 0;
		m.peak = m.len;
	}
	want = want && model_walk(&m, target, 1) == 0 && m.peak < outlen;
	rc = pkg_link_resolve(link, target, out, outlen);
	FUZZ_CHECK(rc == 0 || rc == -1);
	FUZZ_CHECK((rc == 0) == want);
	if (rc == 0)
		FUZZ_CHECK(model_equal(&m, out));
	free(dir);
	free(m.v);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul;
	char *name, *target, *out, link[PATH_MAX];
	size_t outlen, namelen;

	if (size == 0)
		return 0;
	outlen = (data[0] & 0x80) != 0 ? PATH_MAX : data[0];
	data++;
	size--;
	nul = memchr(data, '\0', size);
	namelen = nul != NULL ? (size_t)(nul - data) : size;
	name = string_copy(data, namelen);
	target = nul != NULL ? string_copy(nul + 1, size - namelen - 1)
			     : string_copy(data, 0);
	out = malloc(outlen > 0 ? outlen : 1);
	if (name == NULL || target == NULL || out == NULL)
		goto out;
	check_member(name, out, outlen);
	/* The link is a member, so its name is normalised first. */
	if (pkg_member_path(name, link, sizeof(link)) == 0)
		check_link(link, target, out, outlen);
out:
	free(name);
	free(target);
	free(out);
	return 0;
}
