/* SPDX-License-Identifier: MIT */
/*
 * tap.h: the Test Anything Protocol for the unit tests, header only. A test
 * calls plan(), then ok() and friends, and returns done_testing() from
 * main(). Output is flushed at once, so a fork() never duplicates it.
 */
#ifndef WR_TAP_H
#define WR_TAP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The one mutable static: a test program is one file and one run. */
static struct {
	int planned, run, failed;
} tap;

static inline void
plan(int n)
{
	tap.planned = n;
	printf("1..%d\n", n);
	fflush(stdout);
}

static inline void __attribute__((noreturn))
skip_all(const char *reason)
{
	printf("1..0 # SKIP %s\n", reason);
	fflush(stdout);
	exit(0);
}

/* @n tests that cannot run here, each reported as a skip. */
static inline void
skip(int n, const char *reason)
{
	for (int i = 0; i < n; i++) {
		tap.run++;
		printf("ok %d # skip %s\n", tap.run, reason);
	}
	fflush(stdout);
}

static inline bool __attribute__((format(printf, 2, 3)))
ok(bool cond, const char *fmt, ...)
{
	va_list ap;

	tap.run++;
	tap.failed += !cond;
	printf("%sok %d - ", cond ? "" : "not ", tap.run);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	return cond;
}

static inline bool
is_int(long long got, long long want, const char *name)
{
	if (!ok(got == want, "%s", name)) {
		printf("#   got %lld, want %lld\n", got, want);
		fflush(stdout);
	}
	return got == want;
}

static inline bool
is_str(const char *got, const char *want, const char *name)
{
	bool same = got && want ? strcmp(got, want) == 0 : got == want;

	if (!ok(same, "%s", name)) {
		printf("#   got \"%s\", want \"%s\"\n", got ? got : "(null)",
		       want ? want : "(null)");
		fflush(stdout);
	}
	return same;
}

/* main()'s exit status: nonzero if a test failed or the plan was missed. */
static inline int
done_testing(void)
{
	if (tap.planned != tap.run) {
		printf("# planned %d tests but ran %d\n", tap.planned, tap.run);
	}
	if (tap.failed > 0) {
		printf("# failed %d of %d tests\n", tap.failed, tap.run);
	}
	fflush(stdout);
	return tap.failed > 0 || tap.planned != tap.run;
}

#endif
