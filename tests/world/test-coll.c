/* SPDX-License-Identifier: MIT */
/*
 * coll: Machin's collective-group scenarios K1-K9 (reference/machin.md
 * section b) on 3 ranks, float32 vectors of 5, with Machin's inputs and
 * expected values, in group ranks; then the calls' bad arguments, and
 * the started forms of the collectives.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "wtap.h"
#include "now.h"

#define T 60000
#define N 5

static void
fill(float *a, float v)
{
	for (int i = 0; i < N; i++) {
		a[i] = v;
	}
}

static bool
all(const float *a, float v)
{
	for (int i = 0; i < N; i++) {
		if (a[i] != v) {
			return false;
		}
	}
	return true;
}

/*
 * Started receives from every peer, then sends to every peer, and the
 * waits in that order, receives first: the group's first traffic, so
 * that over tcp;ofi_rxm the sends meet peers not connected yet. A send
 * the fabric could not take at once must still go out while its rank
 * waits for a receive (MPI's progress rule), not only in its own wait.
 */
static void
receives_first(struct world_coll *c, int r)
{
	enum { ROUNDS = 20, P = 3, K = 4 };
	float in[P][K][N], out[K][N];
	struct world_coll_req *q[2 * P * K];
	int rc = 0, n = 0, bad = 0;

	for (int round = 0; round < ROUNDS && rc == 0; round++) {
		n = 0;
		for (int k = 0; k < K; k++) {
			fill(out[k], (float)(100 * r + 10 * k + round));
		}
		for (int p = 0; p < P && rc == 0; p++) {
			for (int k = 0; k < K && rc == 0 && p != r; k++) {
				rc = world_coll_irecv(c, in[p][k], N, WORLD_FLOAT32, p, 3, &q[n++]);
			}
		}
		/* K messages of one tag to each peer: they must arrive in order. */
		for (int p = 0; p < P && rc == 0; p++) {
			for (int k = 0; k < K && rc == 0 && p != r; k++) {
				rc = world_coll_isend(c, out[k], N, WORLD_FLOAT32, p, 3, &q[n++]);
			}
		}
		for (int i = 0; i < n && rc == 0; i++) {
			rc = world_coll_wait(q[i], T, NULL);
		}
		for (int p = 0; p < P && rc == 0; p++) {
			for (int k = 0; k < K && p != r; k++) {
				bad += !all(in[p][k], (float)(100 * p + 10 * k + round));
			}
		}
		for (int i = 0; i < n; i++) {
			world_coll_req_free(q[i]);
		}
	}
	check(rc == 0 && bad == 0, "irecv and isend to every peer, receives waited first: "
	      "%d rounds, %d messages of one tag to each peer in order (%s, %d wrong)",
	      ROUNDS, K, world_strerror(rc), bad);
}

/*
 * Rank 0 starts M sends of one tag to rank 1 at once, more than a shm
 * queue holds, so that some are deferred while rank 1 drains the others;
 * rank 1 receives them in order: each must be where it was sent.
 */
static void
many_in_order(struct world_coll *c, int r)
{
	enum { M = 500 };
	static int32_t v[M];
	static struct world_coll_req *q[M];
	int rc = 0, n = 0, bad = 0;

	for (int i = 0; i < M && r <= 1; i++) {
		v[i] = r == 0 ? i : -1;
		rc = r == 0 ? world_coll_isend(c, &v[i], 1, WORLD_INT32, 1, 4, &q[i])
			    : world_coll_irecv(c, &v[i], 1, WORLD_INT32, 0, 4, &q[i]);
		if (rc != 0) {
			break;
		}
		n++;
	}
	for (int i = 0; i < n && rc == 0; i++) {
		rc = world_coll_wait(q[i], T, NULL);
		bad += r == 1 && v[i] != i;
	}
	for (int i = 0; i < n; i++) {
		world_coll_req_free(q[i]);
	}
	check(rc == 0 && bad == 0, "%d started sends of one tag arrive in order (%s, %d misplaced)",
	      M, world_strerror(rc), bad);
}

/* K1, K2: rank 0 sends zeros to 1 and 2, who receive from anyone. */
static void
k1_k2(struct world_coll *c, int r)
{
	float a[N];
	int src = -9, rc;
	struct world_coll_req *q = NULL;

	if (r == 0) {
		fill(a, 0);
		rc = world_coll_send(c, a, N, WORLD_FLOAT32, 1, 0, T);
		rc = rc == 0 ? world_coll_send(c, a, N, WORLD_FLOAT32, 2, 0, T) : rc;
		check(rc == 0, "K1: rank 0 sends to 1 and 2 (%s)", world_strerror(rc));
	} else {
		fill(a, 1);
		rc = world_coll_recv(c, a, N, WORLD_FLOAT32, WORLD_ANY_SOURCE, 0, T, &src);
		check(rc == 0 && src == 0 && all(a, 0),
		      "K1: recv from any source returns sender 0 and zeros (rc %d, src %d)", rc, src);
	}
	if (r == 0) {
		fill(a, 0);
		for (int to = 1; to <= 2; to++) {
			rc = world_coll_isend(c, a, N, WORLD_FLOAT32, to, 0, &q);
			rc = rc == 0 ? world_coll_wait(q, T, NULL) : rc;
			world_coll_req_free(q);
			check(rc == 0, "K2: isend to %d, waited (%s)", to, world_strerror(rc));
		}
	} else {
		fill(a, 1);
		rc = world_coll_irecv(c, a, N, WORLD_FLOAT32, WORLD_ANY_SOURCE, 0, &q);
		rc = rc == 0 ? world_coll_wait(q, T, &src) : rc;
		world_coll_req_free(q);
		check(rc == 0 && src == 0 && all(a, 0),
		      "K2: irecv's wait returns sender 0 and zeros (rc %d, src %d)", rc, src);
		check(true, "K2: (one check on each side)");
	}
}

static void
k3_to_k6(struct world_coll *c, int r)
{
	float a[N], list[3][N];
	int rc;
	bool good = true;

	fill(a, r == 0 ? 1 : 0);
	rc = world_coll_broadcast(c, a, N, WORLD_FLOAT32, 0, T);
	check(rc == 0 && all(a, 1), "K3: broadcast from 0 leaves ones (rc %d)", rc);
	fill(a, (float)r);
	rc = world_coll_all_reduce(c, a, N, WORLD_FLOAT32, WORLD_SUM, T);
	check(rc == 0 && all(a, 3), "K4: all_reduce sum of ranks is 3 (rc %d)", rc);
	fill(a, (float)(5 - r));
	rc = world_coll_reduce(c, a, N, WORLD_FLOAT32, WORLD_SUM, 1, T);
	check(rc == 0 && (r != 1 || all(a, 12)) && (r == 1 || all(a, (float)(5 - r))),
	      "K5: reduce to 1 gives 12 there, leaves the others (rc %d)", rc);
	fill(a, (float)r);
	memset(list, 0xff, sizeof(list));
	rc = world_coll_all_gather(c, a, list, N, WORLD_FLOAT32, T);
	for (int i = 0; i < 3; i++) {
		good = good && all(list[i], (float)i);
	}
	check(rc == 0 && good, "K6: all_gather gives list[i] == i (rc %d)", rc);
}

static void
k7_to_k9(struct world_coll *c, int r)
{
	float a[N], list[3][N], out[N];
	int rc;
	bool good = true;

	fill(a, (float)r);
	memset(list, 0xff, sizeof(list));
	rc = world_coll_gather(c, a, r == 1 ? list : NULL, N, WORLD_FLOAT32, 1, T);
	for (int i = 0; r == 1 && i < 3; i++) {
		good = good && all(list[i], (float)i);
	}
	check(rc == 0 && good, "K7: gather to 1 gives list[i] == i there (rc %d)", rc);
	for (int i = 0; i < 3; i++) {
		fill(list[i], (float)i);
	}
	fill(out, -1);
	rc = world_coll_scatter(c, r == 0 ? list : NULL, out, N, WORLD_FLOAT32, 0, T);
	check(rc == 0 && all(out, (float)r), "K8: scatter from 0 gives rank r list[r] (rc %d)", rc);
	rc = world_coll_barrier(c, T);
	check(rc == 0 && world_coll_size(c) == 3, "K9: size is 3 and barrier returns (rc %d)", rc);
}

static void
bad_arguments(struct world_coll *c, int r)
{
	float a[N] = { 0 };
	struct world_coll_req *q = NULL;

	check(world_coll_broadcast(c, a, N, WORLD_FLOAT32, 3, T) == -EINVAL,
	      "a root out of the group is -EINVAL, at once");
	check(world_coll_all_reduce(c, a, N, WORLD_FLOAT32, WORLD_BXOR, T) == -EINVAL,
	      "bxor of floats is -EINVAL");
	check(world_coll_all_reduce(c, a, N, WORLD_INT32, WORLD_AVG, T) == -EINVAL,
	      "avg of integers is -EINVAL");
	check(world_coll_all_reduce(c, a, N, (enum world_dtype)99, WORLD_SUM, T) == -EINVAL,
	      "a dtype that is none is -EINVAL");
	check(world_coll_send(c, a, N, WORLD_FLOAT32, r, 0, T) == -EINVAL,
	      "a send to oneself is -EINVAL");
	check(world_coll_send(c, a, N, WORLD_FLOAT32, (r + 1) % 3, WORLD_TAG_MAX + 1, T) == -EINVAL,
	      "a tag past WORLD_TAG_MAX is -EINVAL");
	check(world_coll_irecv(c, a, N, WORLD_FLOAT32, 7, 0, &q) == -EINVAL && q == NULL,
	      "a receive from a rank out of the group is -EINVAL");
	check(world_coll_world_rank(c, 3) == -EINVAL && world_coll_world_rank(c, r) == r,
	      "world_coll_world_rank maps, and refuses a rank out of range");
	check(world_coll_group_rank(c, 7) == WORLD_ENOTMEMBER,
	      "world_coll_group_rank of a non-member is WORLD_ENOTMEMBER");
	check(world_dtype_size(WORLD_BFLOAT16) == 2 && world_dtype_size(WORLD_FLOAT64) == 8 &&
	      world_dtype_size((enum world_dtype)-1) == 0, "world_dtype_size");
}

/*
 * A short timeout ends when it says, not at the transport's next sleep:
 * the fastest of 20 receives of 10 ms (the fastest, so that a loaded
 * machine's delays do not count) ends within 9 to 40 ms.
 */
static void
late(struct world_coll *c, int r)
{
	float a[N];
	double fastest = 1e9;
	int src, timed_out = 0;
	char what[64] = "on rank 2";

	for (int i = 0; r == 2 && i < 20; i++) {
		double t0 = tests_now_s();
		int rc = world_coll_recv(c, a, N, WORLD_FLOAT32, 0, 78, 10, &src);
		double took = tests_now_s() - t0;

		timed_out += rc == -ETIMEDOUT;
		fastest = took < fastest ? took : fastest;
	}
	if (r == 2) {
		snprintf(what, sizeof(what), "%d timed out, the fastest in %.1f ms", timed_out,
			 fastest * 1e3);
	}
	check(r != 2 || (timed_out == 20 && fastest >= 0.009 && fastest < 0.040),
	      "20 receives of 10 ms time out, the fastest within 9 to 40 ms (%s)", what);
}

/* A receive that nobody answers times out, and the group goes on. */
static void
timeouts(struct world_coll *c, int r)
{
	float a[N];
	int rc = 0, src = -9;

	if (r == 2) {
		rc = world_coll_recv(c, a, N, WORLD_FLOAT32, 0, 77, 200, &src);
	}
	check(r != 2 || (rc == -ETIMEDOUT && src == -1),
	      "a receive nobody sends to times out (%s)", world_strerror(rc));
	late(c, r);
	fill(a, 1);
	rc = world_coll_all_reduce(c, a, N, WORLD_FLOAT32, WORLD_SUM, T);
	check(rc == 0 && all(a, 3), "after a receive timed out, the group works (rc %d)", rc);
}

/* The started forms run in the order started, before a later blocking call. */
static void
started(struct world_coll *c, int r)
{
	float a[N], b[N], sum[N];
	struct world_coll_req *q1 = NULL, *q2 = NULL;
	int rc1, rc2, rc3;

	fill(a, (float)r);
	fill(b, r == 2 ? 7 : 0);
	rc1 = world_coll_iall_reduce(c, a, N, WORLD_FLOAT32, WORLD_MAX, &q1);
	rc2 = world_coll_ibroadcast(c, b, N, WORLD_FLOAT32, 2, &q2);
	fill(sum, 1);
	rc3 = world_coll_all_reduce(c, sum, N, WORLD_FLOAT32, WORLD_SUM, T);
	check(rc1 == 0 && rc2 == 0 && rc3 == 0 && all(sum, 3),
	      "started collectives, then a blocking one (%d %d %d)", rc1, rc2, rc3);
	check(world_coll_test(q1) == 1 && world_coll_test(q2) == 1,
	      "the started ones are done before the blocking one returns");
	rc1 = world_coll_wait(q1, T, NULL);
	rc2 = world_coll_wait(q2, T, NULL);
	check(rc1 == 0 && all(a, 2) && rc2 == 0 && all(b, 7),
	      "iall_reduce max and ibroadcast give their results (%d %d)", rc1, rc2);
	world_coll_req_free(q1);
	world_coll_req_free(q2);
	rc1 = world_coll_ibarrier(c, &q1);
	rc1 = rc1 == 0 ? world_coll_wait(q1, T, NULL) : rc1;
	world_coll_req_free(q1);
	check(rc1 == 0, "ibarrier (rc %d)", rc1);
}

/* 1024 started collectives whose requests are held: the next is -EAGAIN. */
static void
started_bound(struct world_coll *c)
{
	static struct world_coll_req *q[1024];
	struct world_coll_req *one_more = NULL;
	int rc = 0, over, rc2;

	for (int i = 0; i < 1024 && rc == 0; i++) {
		rc = world_coll_ibarrier(c, &q[i]);
	}
	over = world_coll_ibarrier(c, &one_more);
	for (int i = 0; i < 1024; i++) {
		world_coll_req_free(q[i]);
	}
	rc2 = world_coll_barrier(c, T);
	check(rc == 0 && over == -EAGAIN && one_more == NULL && rc2 == 0,
	      "the 1025th started collective whose forerunners are not freed is -EAGAIN "
	      "(%d, %s), and the group goes on", rc, world_strerror(over));
}

/* A started collective that no thread waits for runs all the same: after
 * a quiet spell the start wakes the group's worker, and while the group
 * is busy the worker finds it in its poll. Rank 0 starts a barrier and
 * waits in the registry's until the others are through theirs. */
static void
started_unwaited(struct world *w, struct world_coll *c, int r)
{
	const struct timespec quiet = { 0, 150 * 1000000 };
	static const char *const name[] = { "unwaited-quiet", "unwaited-busy" };
	struct world_coll_req *q = NULL;
	int rc, rc2;

	for (int round = 0; round < 2; round++) {
		if (round == 0) {
			nanosleep(&quiet, NULL);
		}
		rc = r == 0 ? world_coll_ibarrier(c, &q) : world_coll_barrier(c, T);
		rc2 = world_barrier(w, name[round], T);
		if (r == 0) {
			rc = rc == 0 ? world_coll_wait(q, T, NULL) : rc;
			world_coll_req_free(q);
		}
		check(rc == 0 && rc2 == 0, "a started collective nobody waits for runs, %s (%d %d)",
		      round == 0 ? "after a quiet spell" : "while the group is busy", rc, rc2);
	}
}

/* A group's started collectives end by its own deadline, which a wait
 * as long runs on its own thread: rank 0's barrier, that the others join
 * only after it, times out in 300 ms, not in the world's 300 s. */
static void
started_timeout(struct world *w, int r)
{
	const int members[] = { 0, 1, 2 };
	struct world_coll *c = NULL;
	struct world_coll_req *q = NULL;
	double t0 = tests_now_s();
	int rc = world_coll_create(w, members, 3, T, &c), bad = 0, rc2;

	if (rc == 0) {
		bad = world_coll_set_timeout(c, -7);
		rc = world_coll_set_timeout(c, 300);
	}
	if (rc == 0 && r == 0) {
		rc = world_coll_ibarrier(c, &q);
		rc = rc == 0 ? world_coll_wait(q, WORLD_TIMEOUT_FOREVER, NULL) : rc;
		world_coll_req_free(q);
	}
	rc2 = world_barrier(w, "started-timeout", T);
	check(bad == -EINVAL, "a bad timeout is -EINVAL (%s)", world_strerror(bad));
	if (r == 0) {
		check(rc == -ETIMEDOUT && tests_now_s() - t0 < 30,
		      "a started collective ends by its group's timeout (%s)", world_strerror(rc));
	} else {
		check(rc == 0 && rc2 == 0, "the others wait for it (%d %d)", rc, rc2);
	}
	world_coll_destroy(c);
}

/* Rank 1 waits in a barrier while rank 0's 64 KiB send to it, which
 * moves only while rank 1 reads its queue, must end before rank 0 comes:
 * a wait in the group's shared area progresses the fabric too. */
static void
send_across_barrier(struct world_coll *c, int r)
{
	static float big[16384];
	struct world_coll_req *q = NULL;
	int rc = 0;

	if (r == 1) {
		rc = world_coll_irecv(c, big, 16384, WORLD_FLOAT32, 0, 7, &q);
	}
	if (rc == 0 && r == 0) {
		for (int i = 0; i < 16384; i++) {
			big[i] = (float)i;
		}
		rc = world_coll_send(c, big, 16384, WORLD_FLOAT32, 1, 7, 10000);
	}
	rc = rc == 0 ? world_coll_barrier(c, 10000) : rc;
	if (r == 1) {
		rc = rc == 0 ? world_coll_wait(q, 10000, NULL) : rc;
		rc = rc == 0 && (big[0] != 0.0f || big[16383] != 16383.0f) ? -EBADMSG : rc;
		world_coll_req_free(q);
	}
	check(rc == 0, "a 64 KiB send to a rank in a barrier ends before the sender comes (%s)",
	      world_strerror(rc));
}

int
main(void)
{
	struct world *w = NULL;
	struct world_coll *c = NULL;
	const int members[] = { 0, 1, 2 };
	int r, rc = world_open(&w);

	if (rc < 0 || world_size(w) != 3) {
		fprintf(stderr, "usage: worldrun -n 3 test-coll (%s)\n", world_strerror(rc));
		return 2;
	}
	r = world_rank(w);
	wtap_start(r, 37);
	rc = world_coll_create(w, members, 3, T, &c);
	check(rc == 0 && world_coll_rank(c) == r, "create the group of 0, 1, 2 (%s)",
	      world_strerror(rc));
	if (rc == 0) {
		receives_first(c, r);
		many_in_order(c, r);
		k1_k2(c, r);
		k3_to_k6(c, r);
		k7_to_k9(c, r);
		bad_arguments(c, r);
		timeouts(c, r);
		started(c, r);
		started_bound(c);
		send_across_barrier(c, r);
		started_unwaited(w, c, r);
		world_coll_destroy(c);
		world_coll_destroy(NULL);
	}
	started_timeout(w, r);
	rc = world_stop(w, T);
	check(rc == 0, "world_stop (%s)", world_strerror(rc));
	return wtap_done();
}
