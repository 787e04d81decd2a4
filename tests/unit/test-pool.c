/* SPDX-License-Identifier: MIT */
/*
 * pool: every index of a loop is handled exactly once, on the threads and
 * the caller, loop after loop; a pool of no threads runs on the caller.
 */
#include "pool.h"

#include <pthread.h>
#include <string.h>

#include "tap.h"

#define N 5000

struct seen {
	int count[N];
	pthread_t who[N];
};

static void
mark(void *arg, int i)
{
	struct seen *s = arg;

	__atomic_fetch_add(&s->count[i], 1, __ATOMIC_RELAXED);
	s->who[i] = pthread_self();
}

static bool
each_once(const struct seen *s, int n)
{
	for (int i = 0; i < n; i++) {
		if (s->count[i] != 1) {
			return false;
		}
	}
	return true;
}

static void
test_loops(int nthreads)
{
	static struct seen s;
	struct wr_pool *pool = NULL;
	bool all_once = true, caller_only = true;

	ok(wr_pool_open(nthreads, &pool) == 0, "pool: opens with %d threads",
	   nthreads);
	for (int round = 0; round < 50; round++) {
		int n = round == 0 ? 0 : round * 97 % N;

		memset(&s, 0, sizeof(s));
		wr_pool_for(pool, n, mark, &s);
		all_once = all_once && each_once(&s, n);
		for (int i = 0; i < n; i++) {
			caller_only = caller_only && pthread_equal(s.who[i], pthread_self());
		}
	}
	ok(all_once, "pool: %d threads: 50 loops, each index handled once",
	   nthreads);
	if (nthreads == 0) {
		ok(caller_only, "pool: with no threads the caller does all the work");
	}
	wr_pool_close(pool);
}

int
main(void)
{
	plan(7);
	test_loops(0);
	test_loops(1);
	test_loops(3);
	wr_pool_close(NULL);
	return done_testing();
}
