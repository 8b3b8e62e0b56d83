/*
 * daemon/clock.c: the cache's clock, and the test clock behind it
 * (daemon/clock.h).
 */
#include "daemon/clock.h"

#include <sys/stat.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "daemon/log.h"

/* The test clock's file; "" in production.  Written once at start-up. */
static char test_file[PATH_MAX];

void
clock_init(void)
{
	const char *p = getenv("DBGMIRROR_TEST_CLOCK");

	if (p == NULL || *p == '\0')
		return;
	if (snprintf(test_file, sizeof(test_file), "%s", p) >=
	    (int)sizeof(test_file)) {
		test_file[0] = '\0';
		log_warnx("%s: DBGMIRROR_TEST_CLOCK: path too long; ignored",
		    __func__);
		return;
	}
	log_info("the cache's clock is the mtime of %s (a test clock)",
	    test_file);
}

int64_t
clock_now(void)
{
	struct stat sb;

	if (test_file[0] == '\0')
		return (int64_t)time(NULL);
	/* A test that removed its clock file gets the real time back. */
	if (stat(test_file, &sb) == -1)
		return (int64_t)time(NULL);
	return (int64_t)sb.st_mtime;
}

int64_t
clock_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
