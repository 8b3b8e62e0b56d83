/*
 * tests/tap.h: a minimal TAP producer for the C unit tests.
 *
 * Each check prints one "ok N - what" or "not ok N - what (file:line)" line;
 * tap_done() prints the plan.  Failures are counted by their "not ok" lines,
 * so the exit status is 0 unless the program dies (a sanitizer report, a
 * crash), which the harness then counts as an error of its own.  Header-only
 * so a unit test can #include the .c file it tests and still use it.
 */
#ifndef TESTS_TAP_H
#define TESTS_TAP_H

#include <stdio.h>
#include <string.h>

static int tap_count;
static int tap_failed;

static int
tap_check(int cond, const char *file, int line, const char *what)
{
	tap_count++;
	if (cond) {
		printf("ok %d - %s\n", tap_count, what);
	} else {
		tap_failed++;
		printf("not ok %d - %s (%s:%d)\n", tap_count, what, file, line);
	}
	fflush(stdout);
	return cond;
}

/* ok(cond, "what"): the basic assertion. */
#define ok(cond, what) tap_check(!!(cond), __FILE__, __LINE__, (what))

/* is_int(a, b, "what"): equal integers, both printed on failure. */
#define is_int(a, b, what) \
	do { \
		long long tap_a_ = (long long)(a), tap_b_ = (long long)(b); \
		if (!tap_check(tap_a_ == tap_b_, __FILE__, __LINE__, (what))) \
			printf("#   got %lld, expected %lld\n", tap_a_, \
			    tap_b_); \
	} while (0)

/* is_str(a, b, "what"): equal strings (NULL equals only NULL). */
#define is_str(a, b, what) \
	do { \
		const char *tap_a_ = (a), *tap_b_ = (b); \
		int tap_eq_ = (tap_a_ == NULL || tap_b_ == NULL) \
		    ? tap_a_ == tap_b_ \
		    : strcmp(tap_a_, tap_b_) == 0; \
		if (!tap_check(tap_eq_, __FILE__, __LINE__, (what))) \
			printf("#   got \"%s\", expected \"%s\"\n", \
			    tap_a_ ? tap_a_ : "(null)", \
			    tap_b_ ? tap_b_ : "(null)"); \
	} while (0)

/* skip("why"): one check this machine cannot make ("# SKIP"). */
#define skip(why) \
	do { \
		printf("ok %d # SKIP %s\n", ++tap_count, (why)); \
		fflush(stdout); \
	} while (0)

static int
tap_done(void)
{
	printf("1..%d\n", tap_count);
	if (tap_failed > 0)
		printf("# %d of %d failed\n", tap_failed, tap_count);
	return 0;
}

#endif /* TESTS_TAP_H */
