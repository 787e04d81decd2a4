/* SPDX-License-Identifier: MIT */
/*
 * kv: libworld's world and key/value space on 4 ranks: identity from the
 * environment (Machin's W1), set/get across ranks, a get that waits for a
 * later set, add from every rank, compare-and-set, append, delete, count,
 * check, wait, and 10,000 back-to-back barriers with random jitter (B3).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "now.h"
#include "wtap.h"

#define ROUNDS 10000

static void
test_identity(struct world *w)
{
	char want[16];

	snprintf(want, sizeof(want), "%d", world_rank(w));
	check(world_size(w) == 4, "world: size is 4");
	check(strcmp(world_name(w), want) == 0, "world: a rank's name is its rank");
	check(strlen(world_jobid(w)) == 12, "world: the job id has 12 characters");
}

static void
test_exchange(struct world *w)
{
	int r = world_rank(w), next = (r + 1) % 4;
	char key[32], want[32];
	void *val = NULL;
	size_t len = 0;

	snprintf(key, sizeof(key), "k%d", r);
	check(world_kv_set(w, key, key + 1, strlen(key + 1)) == 0, "kv: set");
	snprintf(key, sizeof(key), "k%d", next);
	snprintf(want, sizeof(want), "%d", next);
	/* The next rank may not have set it yet: wait for it. */
	check(world_kv_get(w, key, &val, &len, 30000) == 0 && len == strlen(want) &&
		      strcmp(val, want) == 0,
	      "kv: get waits for the next rank's value and gets it");
	free(val);
	check(world_kv_get(w, "never", &val, &len, 0) == -ENOENT,
	      "kv: get without waiting answers -ENOENT for a missing key");
	check(world_kv_get(w, "never", &val, &len, 200) == -ETIMEDOUT,
	      "kv: get with a timeout gives up with -ETIMEDOUT");
}

static void
test_counters(struct world *w)
{
	int64_t v = 0;
	void *cur = NULL;
	size_t len = 0;
	bool all = false;
	const char *keys[] = { "k0", "k1", "k2", "k3" };

	for (int i = 0; i < 10; i++) {
		world_kv_add(w, "ctr", 1, &v);
	}
	check(world_barrier(w, "counted", 30000) == 0, "barrier: all counted");
	check(world_kv_add(w, "ctr", 0, &v) == 0 && v == 40,
	      "kv: 4 ranks adding 10 times make 40");
	check(world_kv_check(w, keys, 4, &all) == 0 && all, "kv: check sees all keys");
	check(world_kv_wait(w, keys, 4, 1000) == 0, "kv: wait for keys that exist");
	if (world_rank(w) == 0) {
		world_kv_cas(w, "cas", "", 0, "first", 5, NULL, NULL);
	}
	check(world_barrier(w, "cas", 30000) == 0, "barrier: cas set");
	check(world_kv_cas(w, "cas", "nope", 4, "x", 1, &cur, &len) == 0 &&
		      strcmp(cur, "first") == 0,
	      "kv: cas with the wrong expected value changes nothing");
	free(cur);
	world_kv_append(w, "log", "ab", 2);
	check(world_barrier(w, "appended", 30000) == 0, "barrier: appended");
	check(world_kv_get(w, "log", &cur, &len, 0) == 0 && len == 8,
	      "kv: 4 appends of 2 bytes make 8");
	free(cur);
}

static void
test_barriers(struct world *w)
{
	unsigned seed = (unsigned)(world_rank(w) * 7919 + 1);
	int failed = 0;

	for (int i = 0; i < ROUNDS; i++) {
		if (rand_r(&seed) % 64 == 0) {
			struct timespec jitter = { 0, (long)(rand_r(&seed) % 200) * 1000 };

			nanosleep(&jitter, NULL);
		}
		failed += world_barrier(w, "loop", 60000) != 0;
	}
	check(failed == 0, "barrier: %d back-to-back with jitter", ROUNDS);
}

/* world_set_interrupt(): the third time it is asked, the wait ends. */
static int
third_time(void *arg)
{
	int *asked = arg;

	return ++*asked >= 3;
}

static void
test_interrupt(struct world *w)
{
	const char *never[] = { "never-set" };
	int asked = 0, rc;
	long long t0 = tests_now_ms();

	world_set_interrupt(w, third_time, &asked);
	rc = world_kv_wait(w, never, 1, 30000);
	world_set_interrupt(w, NULL, NULL);
	check(rc == -EINTR && asked == 3,
	      "interrupt: a wait asks its check every 100 ms and ends with -EINTR when it "
	      "says so (%d, asked %d times)", rc, asked);
	check(tests_now_ms() - t0 < 5000, "interrupt: well before the wait's own timeout");
	check(world_kv_wait(w, never, 1, 50) == -ETIMEDOUT,
	      "interrupt: cleared, a wait times out as before");
}

int
main(void)
{
	struct world *w = NULL;
	int rc = world_open(&w);

	if (rc < 0) {
		fprintf(stderr, "world_open: %s\n", world_strerror(rc));
		return 1;
	}
	wtap_start(world_rank(w), 21);
	check(rc == 0, "world: opens from worldrun's environment");
	test_identity(w);
	test_exchange(w);
	test_counters(w);
	test_barriers(w);
	test_interrupt(w);
	check(world_stop(w, 60000) == 0, "world: graceful stop");
	return wtap_done();
}
