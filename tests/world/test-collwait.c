/* SPDX-License-Identifier: MIT */
/*
 * collwait: a receive blocked for about 2 s costs its rank little CPU:
 * rank 1 sleeps 2 s before it sends, rank 0 waits in world_coll_recv;
 * rank 0's CPU time (getrusage, all its threads) over the wait must stay
 * under a quarter of the wall time the wait took. A bound on CPU use, not
 * on how long anything takes. Then the same for an all_reduce that waits
 * for a late rank; and first, a member whose first collective comes 11 s
 * after the group's creation: until it reads its queue once, an shm
 * sender cannot even post to it, and must wait asleep, past any bound of
 * the transport's own (it once gave up after 10 s).
 */
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

#include "wtap.h"

#define T 60000

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double
cpu(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static void
late_by(time_t s)
{
	struct timespec ts = { s, 0 };

	nanosleep(&ts, NULL);
}

static void
late(void)
{
	late_by(2);
}

int
main(void)
{
	struct world *w = NULL;
	struct world_coll *c = NULL;
	const int both[] = { 0, 1 };
	float v = 1;
	double t0, c0, wall, used;
	int r, rc = world_open(&w);

	if (rc < 0 || world_size(w) != 2) {
		fprintf(stderr, "usage: worldrun -n 2 test-collwait (%s)\n", world_strerror(rc));
		return 2;
	}
	r = world_rank(w);
	wtap_start(r, 5);
	rc = world_coll_create(w, both, 2, T, &c);
	check(rc == 0, "group of 2 (%s)", world_strerror(rc));
	t0 = now();
	c0 = cpu();
	if (r == 1) {
		late_by(11);
	}
	rc = world_coll_all_reduce(c, &v, 1, WORLD_FLOAT32, WORLD_SUM, T);
	wall = now() - t0;
	used = cpu() - c0;
	check(rc == 0 && v == 2 && (r == 1 || used < 0.25 * wall),
	      "a first all_reduce 11 s after creation: %s, %.3f s of CPU in %.2f s",
	      world_strerror(rc), used, wall);
	v = 1;
	rc = world_coll_barrier(c, T);
	t0 = now();
	c0 = cpu();
	if (r == 1) {
		late();
		rc = world_coll_send(c, &v, 1, WORLD_FLOAT32, 0, 1, T);
	} else {
		rc = world_coll_recv(c, &v, 1, WORLD_FLOAT32, 1, 1, T, NULL);
	}
	wall = now() - t0;
	used = cpu() - c0;
	check(rc == 0 && (r == 1 || used < 0.25 * wall),
	      "a receive blocked %.2f s used %.3f s of CPU (at most a quarter)", wall, used);
	t0 = now();
	c0 = cpu();
	if (r == 1) {
		late();
	}
	rc = world_coll_all_reduce(c, &v, 1, WORLD_FLOAT32, WORLD_SUM, T);
	wall = now() - t0;
	used = cpu() - c0;
	check(rc == 0 && (r == 1 || used < 0.25 * wall),
	      "an all_reduce blocked %.2f s used %.3f s of CPU (at most a quarter)", wall, used);
	world_coll_destroy(c);
	rc = world_stop(w, T);
	check(rc == 0, "world_stop (%s)", world_strerror(rc));
	return wtap_done();
}
