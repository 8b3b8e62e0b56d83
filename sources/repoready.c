/*
 * sources/repoready.c: what the repositories' files share (sources/
 * repo_int.h): the repositories' readiness (their start ends with the
 * last first refresh, or repo-ready-timeout), the refreshes' progress as
 * repos_status() tells it, and the file helpers the refresh and the
 * downloads both use.  It calls none of the other repository files: the
 * refresh (sources/reposync.c) and the downloads (sources/repodl.c) tell
 * it, the request side (sources/repo.c) asks it.
 *
 * Threads: any thread; pmu guards the readiness, the watchers and each
 * repository's progress; repo_ready() runs on the fills' loop.
 */
#include "sources/repo_int.h"

#include <sys/stat.h>

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf/config.h"
#include "daemon/log.h"

/* ------------------------------------------------------------ helpers */

int
repo_mkdirs(const char *path)
{
	char p[PATH_MAX], *s;

	if (snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p))
		return -1;
	for (s = p + 1; *s != '\0'; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) == -1 && errno != EEXIST)
			return -1;
		*s = '/';
	}
	return mkdir(p, 0755) == -1 && errno != EEXIST ? -1 : 0;
}

/* SHA-256 of the file at path: 0, or -1. */
int
repo_file_sha256(const char *path, uint8_t out[32], uint64_t *size)
{
	static _Thread_local unsigned char buf[1 << 16];
	EVP_MD_CTX *c;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	if ((c = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(c);
		close(fd);
		return -1;
	}
	*size = 0;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		EVP_DigestUpdate(c, buf, (size_t)n);
		*size += (uint64_t)n;
	}
	close(fd);
	if (n == -1 || EVP_DigestFinal_ex(c, out, NULL) != 1) {
		EVP_MD_CTX_free(c);
		return -1;
	}
	EVP_MD_CTX_free(c);
	return 0;
}

const char *
repo_size_text(uint64_t n, char *out, size_t len)
{
	static const char *const unit[] = { "kB", "MB", "GB", "TB" };
	double v = (double)n / 1000;
	size_t u = 0;

	if (n < 1000) {
		snprintf(out, len, "%llu B", (unsigned long long)n);
		return out;
	}
	while (v >= 1000 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
		v /= 1000;
		u++;
	}
	snprintf(out, len, "%.1f %s", v, unit[u]);
	return out;
}

/* ---------------------------------------------------------- readiness */

size_t
repos_count(const struct repos *rs)
{
	size_t i, n, live = 0;

	if (rs == NULL)
		return 0;
	n = rs->n;
	for (i = 0; i < n; i++)
		live += atomic_load(&rs->v[i].live) != 0;
	return live;
}

int
repos_starting(struct repos *rs)
{
	return rs != NULL && atomic_load(&rs->starting);
}

int
repos_refreshing(struct repos *rs)
{
	return rs != NULL && atomic_load(&rs->refreshing) > 0;
}

int
repos_when_ready(struct repos *rs, void (*cb)(void *arg), void *arg)
{
	struct repos_watcher *w, **pp;

	if (rs == NULL)
		return 1;
	if ((w = malloc(sizeof(*w))) == NULL)
		return -1;
	w->cb = cb;
	w->arg = arg;
	w->next = NULL;
	pthread_mutex_lock(&rs->pmu);
	if (!atomic_load(&rs->starting)) {
		pthread_mutex_unlock(&rs->pmu);
		free(w);
		return 1;
	}
	/* Called in the order they came. */
	for (pp = &rs->watchers; *pp != NULL; pp = &(*pp)->next)
		continue;
	*pp = w;
	pthread_mutex_unlock(&rs->pmu);
	return 0;
}

void
repos_progress(struct repos *rs, size_t i, struct repos_progress *p)
{
	pthread_mutex_lock(&rs->pmu);
	*p = rs->v[i].prog;
	pthread_mutex_unlock(&rs->pmu);
}

void
repos_on_progress(struct repos *rs, void (*cb)(void *arg), void *arg)
{
	rs->on_progress = cb;
	rs->progress_arg = arg;
}

void
repo_ready(struct repos *rs, int timed_out)
{
	struct repos_watcher *w, *next;
	size_t ended;

	pthread_mutex_lock(&rs->pmu);
	if (!atomic_load(&rs->starting)) {
		pthread_mutex_unlock(&rs->pmu);
		return;
	}
	atomic_store(&rs->starting, 0);
	w = rs->watchers;
	rs->watchers = NULL;
	ended = rs->first_ended;
	pthread_mutex_unlock(&rs->pmu);
	if (rs->ready_timer != NULL)
		event_del(rs->ready_timer);
	if (timed_out)
		log_warnx("repositories: %zu of %zu have not ended their first "
			  "refresh after %us (repo-ready-timeout): ready "
			  "without them",
		    repos_count(rs) - ended, repos_count(rs),
		    rs->d.cfg->repo_ready_timeout);
	else
		log_info("repositories: every first refresh has ended");
	for (; w != NULL; w = next) {
		next = w->next;
		w->cb(w->arg);
		free(w);
	}
}

void
repos_status(struct repos *rs, char *out, size_t len)
{
	struct repos_progress p, cur;
	size_t i, ended = 0, ok = 0, failed = 0, n;
	uint64_t ids = 0;
	char got[32], size[32];
	size_t total = repos_count(rs), nslots = rs->n;
	int have = 0;

	for (i = 0; i < nslots; i++) {
		if (!atomic_load(&rs->v[i].live))
			continue;
		repos_progress(rs, i, &p);
		if (!p.first_ended) {
			if (!have)
				cur = p;
			have = 1;
			continue;
		}
		ended++;
		if (p.ok) {
			ok++;
			ids += p.ids;
		} else
			failed++;
	}
	if (have && repos_starting(rs)) {
		n = (size_t)snprintf(out, len,
		    "refreshing repositories, %zu of %zu done: %s: ", ended,
		    total, cur.name);
		if (n >= len)
			return;
		if (cur.file[0] == '\0')
			snprintf(out + n, len - n, "starting");
		else if (strcmp(cur.doing, "indexing") == 0)
			snprintf(out + n, len - n,
			    "indexing %s, %llu ids so far", cur.file,
			    (unsigned long long)cur.ids);
		else if (strcmp(cur.doing, "fetching") == 0 && cur.size > 0)
			snprintf(out + n, len - n, "fetching %s, %s of %s",
			    cur.file, repo_size_text(cur.got, got, sizeof(got)),
			    repo_size_text(cur.size, size, sizeof(size)));
		else if (strcmp(cur.doing, "fetching") == 0)
			snprintf(out + n, len - n, "fetching %s, %s", cur.file,
			    repo_size_text(cur.got, got, sizeof(got)));
		else
			snprintf(out + n, len - n, "%s %s", cur.doing,
			    cur.file);
		return;
	}
	n = (size_t)snprintf(out, len,
	    "repositories: %zu of %zu refreshed (%llu ids)", ok, total,
	    (unsigned long long)ids);
	if (failed > 0 && n < len)
		n += (size_t)snprintf(out + n, len - n, "; %zu failed", failed);
	if (total > ended && n < len)
		snprintf(out + n, len - n, "; %zu still in a first refresh",
		    total - ended);
}
