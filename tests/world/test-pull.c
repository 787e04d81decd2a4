/* SPDX-License-Identifier: MIT */
/*
 * pull: calls whose blob is lent in pieces (world_callv), on 2 ranks of
 * one host, where the callee pulls a large one from the caller's memory.
 * Rank 0 calls rank 1: the bytes arrive whole and in order (pieces of
 * every size, an empty one among them), small and large, copied and
 * lent, in few pieces and in many, waited for and through a future, to a
 * service, a direct handler and this very process; each lent blob is released exactly once, also
 * when the call fails at once; a call that times out keeps its pieces
 * lent until its answer, and the callee still gets what was sent. With
 * "refuse", rank 1 does not pull (WORLD_PULL=0 there alone): every call
 * goes through the refusal and the bytes are sent instead.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "wtap.h"

#define T 60000
#define BIG (3u << 20) /* at least 2000 pieces of 1000 bytes */

/* FNV-1a, 64 bits, over @n pieces, as a string. */
static void
checksum(const struct iovec *iov, size_t n, char out[17])
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t k = 0; k < n; k++) {
		const unsigned char *b = iov[k].iov_base;

		for (size_t i = 0; i < iov[k].iov_len; i++) {
			h = (h ^ b[i]) * 0x100000001b3ull;
		}
	}
	snprintf(out, 17, "%016llx", (unsigned long long)h);
}

/* "sum": {"sum", "len"} of what came. With {"wait": true}, only once the
 * key "go" exists, and then the sum goes to the key "slow.sum" too. */
static int
sum(void *ctx, const json_t *args, const void *blob, size_t len,
    struct world_reply *reply)
{
	struct iovec one = { (void *)blob, len };
	char s[17];
	void *v = NULL;
	size_t vlen;

	checksum(&one, 1, s);
	if (json_is_true(json_object_get(args, "wait"))) {
		if (world_kv_get(ctx, "go", &v, &vlen, T) < 0) {
			return world_reply_error(reply, -ETIMEDOUT, "sum: no go");
		}
		free(v);
		world_kv_set(ctx, "slow.sum", s, strlen(s));
	}
	return world_reply_result_new(reply, json_pack("{s:s, s:I}", "sum", s, "len",
						       (json_int_t)len));
}

/* How often each lent blob was released. */
static int released;

static void
on_release(void *arg)
{
	__atomic_add_fetch((int *)arg, 1, __ATOMIC_SEQ_CST);
}

static int
times_released(void)
{
	return __atomic_load_n(&released, __ATOMIC_SEQ_CST);
}

/* The answer says the callee saw exactly the @n pieces at @iov. */
static bool
summed_right(const json_t *res, const struct iovec *iov, size_t n)
{
	size_t len = 0;
	char s[17];

	for (size_t i = 0; i < n; i++) {
		len += iov[i].iov_len;
	}
	checksum(iov, n, s);
	return res != NULL &&
	       strcmp(json_string_value(json_object_get(res, "sum")) ?: "", s) == 0 &&
	       json_integer_value(json_object_get(res, "len")) == (json_int_t)len;
}

/* One call of @s's kind with the pieces at @iov (lent if @lend), waited
 * for or through a future (@async); whether it summed right. */
static bool
call_ok(struct world_group *g, struct world_call_spec s, const struct iovec *iov,
	size_t n, bool lend, bool async)
{
	struct world_future *f = NULL;
	json_t *res = NULL;
	int rc;
	bool right;

	s.iov = iov;
	s.iovcnt = n;
	s.release = lend ? on_release : NULL;
	s.release_arg = &released;
	s.timeout_ms = T;
	if (async) {
		rc = world_callv_async(g, &s, &f);
		rc = rc < 0 ? rc : world_future_wait(f, T, &res, NULL, NULL);
		world_future_free(f);
	} else {
		rc = world_callv(g, &s, &res, NULL, NULL);
	}
	right = rc == 0 && summed_right(res, iov, n);
	json_decref(res);
	return right;
}

static unsigned char *
pattern_new(size_t len, uint32_t seed)
{
	unsigned char *b = malloc(len);
	uint32_t x = seed | 1;

	for (size_t i = 0; b != NULL && i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		b[i] = (unsigned char)x;
	}
	return b;
}

static void
test_calls(struct world_group *g, const struct iovec *big, size_t n)
{
	struct world_call_spec svc = { .key = "sum" }, direct = { .member = "1", .key = "sum" };
	struct iovec small[2] = { big[0], { big[2].iov_base, 1000 } };
	int before = times_released();

	check(call_ok(g, svc, big, n, true, false),
	      "lent pieces (%zu, an empty one among them) reach the service whole", n);
	check(times_released() == before + 1, "and are released once, by the return");
	check(call_ok(g, svc, big, n, false, false), "the same pieces copied");
	check(times_released() == before + 1, "a copied blob is not released");
	check(call_ok(g, svc, small, 2, true, false), "a small lent blob");
	check(call_ok(g, svc, big, n, true, true), "lent pieces through a future");
	check(call_ok(g, direct, big, n, true, false), "lent pieces to a direct handler");
	check(call_ok(g, direct, big, n, true, true),
	      "lent pieces to a direct handler through a future");
	check(times_released() == before + 5, "each lent blob released once: %d of 5",
	      times_released() - before);
}

/* Many small pieces: pulled, or sent as bytes when their list would be
 * over WORLD_MSG_MAX (16 KiB for this test) or a pull cannot take them. */
static void
test_pieces(struct world_group *g, unsigned char *a)
{
	static const size_t counts[] = { 300, 1000, 2000 };
	static const char *how[] = { "pulled", "their list over WORLD_MSG_MAX",
				     "more than a pull takes" };
	struct world_call_spec s = { .key = "sum" };
	struct iovec *iov = calloc(2000, sizeof(*iov));

	for (size_t k = 0; k < 3; k++) {
		for (size_t i = 0; iov != NULL && i < counts[k]; i++) {
			iov[i] = (struct iovec){ a + i * 1000, 999 };
		}
		check(iov != NULL && call_ok(g, s, iov, counts[k], true, false),
		      "%zu pieces of 999 bytes (%s)", counts[k], how[k]);
	}
	free(iov);
}

static void
test_failures(struct world_group *g, const struct iovec *big, size_t n)
{
	struct world_call_spec s = { .key = "nothing", .iov = big, .iovcnt = n,
				     .release = on_release, .release_arg = &released,
				     .timeout_ms = T };
	struct iovec huge[2] = { big[0], { big[2].iov_base, (size_t)1 << 30 } };
	struct world_future *f = NULL;
	int before = times_released();

	check(world_callv(g, &s, NULL, NULL, NULL) == -ENOENT,
	      "a lent blob to no such service: -ENOENT");
	check(world_callv_async(g, &s, &f) == 0 &&
	      world_future_wait(f, T, NULL, NULL, NULL) == -ENOENT,
	      "the same through a future");
	world_future_free(f);
	s.key = "sum";
	s.iov = huge;
	s.iovcnt = 2;
	check(world_callv(g, &s, NULL, NULL, NULL) == -EMSGSIZE,
	      "a lent blob over WORLD_BLOB_MAX: -EMSGSIZE, none of it read");
	check(times_released() == before + 3, "and each released once: %d of 3",
	      times_released() - before);
}

/*
 * A call that times out while the callee waits: the callee still reads
 * the pieces (they stay lent until the answer) and sees what was sent.
 */
static void
test_timeout(struct world *w, struct world_group *g, const struct iovec *big,
	     size_t n, bool pulled)
{
	json_t *args = json_pack("{s:b}", "wait", 1);
	struct world_call_spec s = { .key = "sum", .args = args, .iov = big,
				     .iovcnt = n, .release = on_release,
				     .release_arg = &released, .timeout_ms = 300 };
	struct timespec tick = { 0, 10 * 1000 * 1000 };
	int before = times_released();
	char want[17];
	void *got = NULL;
	size_t len = 0;

	checksum(big, n, want);
	check(world_callv(g, &s, NULL, NULL, NULL) == -ETIMEDOUT,
	      "a call the callee holds up times out");
	/* Copied at once when the callee cannot pull; lent until answered
	 * when it does. */
	check(times_released() == before + !pulled,
	      "its pieces are %s", pulled ? "still lent" : "released");
	world_kv_set(w, "go", "1", 1);
	for (int i = 0; i < 3000 && times_released() == before; i++) {
		nanosleep(&tick, NULL);
	}
	check(times_released() == before + 1, "and released once the answer comes");
	check(world_kv_get(w, "slow.sum", &got, &len, T) == 0 && len == 16 &&
	      memcmp(got, want, 16) == 0,
	      "the callee saw the bytes the caller lent");
	free(got);
	json_decref(args);
}

int
main(int argc, char **argv)
{
	const char *r = getenv("WORLD_RANK");
	bool refuse = argc > 1 && strcmp(argv[1], "refuse") == 0;
	const char *members[] = { "0", "1" };
	unsigned char *a = pattern_new(BIG, 1), *b = pattern_new(BIG + 7, 2);
	struct iovec big[4] = { { a, 100 }, { b, 0 }, { a + 100, BIG - 100 },
				{ b, BIG + 7 } };
	const char *pull_env = getenv("WORLD_PULL");
	struct world_group *g = NULL;
	struct world *w = NULL;
	int rc;

	if (refuse && r != NULL && strcmp(r, "1") == 0) {
		setenv("WORLD_PULL", "0", 1);
	}
	rc = world_open(&w);
	if (rc < 0 || a == NULL || b == NULL) {
		fprintf(stderr, "world_open: %s\n", world_strerror(rc));
		return 1;
	}
	wtap_start(world_rank(w), 21);
	check(world_group_create(w, "g", members, 2, T, &g) == 0, "the group");
	if (world_rank(w) == 1) {
		world_register(g, "sum", sum, w, 0);
		world_export(w, "sum", sum, w, 0);
	}
	world_group_barrier(g, T);
	if (world_rank(w) == 0) {
		test_calls(g, big, 4);
		test_pieces(g, a);
		test_failures(g, big, 4);
		test_timeout(w, g, big, 4, !refuse && (pull_env == NULL ||
						      strcmp(pull_env, "0") != 0));
	} else {
		/* This very process: the handler runs here on the pieces (a
		 * failure is a "not ok" line of this rank's own). */
		struct world_call_spec s = { .key = "sum" };
		int before = times_released();

		check(call_ok(g, s, big, 4, true, false) && call_ok(g, s, big, 4, true, true),
		      "lent pieces to a service of this very process");
		check(times_released() == before + 2, "released once each");
	}
	world_group_barrier(g, T);
	world_group_destroy(g);
	world_stop(w, T);
	free(a);
	free(b);
	return wtap_done();
}
