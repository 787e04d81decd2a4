/* SPDX-License-Identifier: MIT */
/*
 * spin: WORLD_SPIN_US is read strictly, with the default for anything
 * else; a wait returns as soon as it is ready and gives up once its
 * window has passed; a window of 0 looks once; long waits close the
 * window by halves, a short one opens it fully again.
 */
#include "spin.h"

#include <errno.h>
#include <time.h>

#include "tap.h"

struct counter {
	int calls;
	int ready_at; /* the call that finds it ready; 0: never */
};

static bool
count_ready(void *arg)
{
	struct counter *c = arg;

	c->calls++;
	return c->ready_at > 0 && c->calls >= c->ready_at;
}

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
test_parse(void)
{
	static const char *const bad[] = {
		"", "-1", "+5", " 5", "5 ", "5x", "0x10", "10001",
		"99999999999999999999", "abc",
	};
	int us = -1;

	is_int(wr_spin_parse(NULL, &us), 0, "unset: accepted");
	is_int(us, WR_SPIN_US_DEFAULT, "unset: the default");
	is_int(wr_spin_parse("0", &us), 0, "0: accepted");
	is_int(us, 0, "0: never spin");
	is_int(wr_spin_parse("10000", &us), 0, "the largest: accepted");
	is_int(us, WR_SPIN_US_MAX, "the largest: read");
	is_int(wr_spin_parse("250", &us), 0, "250: accepted");
	is_int(us, 250, "250: read");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		us = -1;
		ok(wr_spin_parse(bad[i], &us) == -EINVAL && us == WR_SPIN_US_DEFAULT,
		   "\"%s\": -EINVAL, and the default", bad[i]);
	}
}

static void
test_never(void)
{
	struct wr_spin s;
	struct counter c = { 0, 0 };
	int64_t start;

	wr_spin_init(&s, 0);
	ok(!wr_spin_wait(&s, count_ready, &c, &start), "window 0: not ready");
	is_int(c.calls, 1, "window 0: looked once");
	wr_spin_blocked(&s, start);
	is_int(s.window_ns, 0, "window 0: a short wait does not open it");
	c = (struct counter){ 0, 1 };
	ok(wr_spin_wait(&s, count_ready, &c, &start), "window 0: ready at once");
}

static void
test_spins(void)
{
	struct wr_spin s;
	struct counter c = { 0, 5 };
	int64_t start;

	wr_spin_init(&s, WR_SPIN_US_MAX);
	is_int(s.window_ns, (long long)WR_SPIN_US_MAX * 1000, "starts fully open");
	ok(wr_spin_wait(&s, count_ready, &c, &start), "ready on the 5th look");
	is_int(c.calls, 5, "stopped looking once ready");
	wr_spin_init(&s, 1);
	c = (struct counter){ 0, 0 };
	ok(!wr_spin_wait(&s, count_ready, &c, &start), "never ready: gives up");
	ok(c.calls >= 1, "never ready: looked (%d times)", c.calls);
}

static void
test_adapts(void)
{
	struct wr_spin s;
	struct counter c = { 0, 0 };
	int64_t full = (long long)WR_SPIN_US_MAX * 1000, start;
	int halvings = 0;

	wr_spin_init(&s, WR_SPIN_US_MAX);
	wr_spin_blocked(&s, now_ns() - 1000000000);
	is_int(s.window_ns, full / 2, "a long wait halves the window");
	while (s.window_ns > 0 && halvings < 64) {
		wr_spin_blocked(&s, now_ns() - 1000000000);
		halvings++;
	}
	is_int(s.window_ns, 0, "long waits close it");
	ok(halvings < 20, "within a few halvings (%d)", halvings);
	ok(!wr_spin_wait(&s, count_ready, &c, &start), "closed: not ready");
	is_int(c.calls, 1, "closed: looked once");
	/* Just after the look: far less than the 10 ms window. */
	wr_spin_blocked(&s, start);
	is_int(s.window_ns, full, "a short wait opens it fully");
}

int
main(void)
{
	plan(33);
	test_parse();
	test_never();
	test_spins();
	test_adapts();
	return done_testing();
}
