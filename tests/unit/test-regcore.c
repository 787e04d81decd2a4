/* SPDX-License-Identifier: MIT */
/*
 * regcore: the registry core through its C API: TCPStore's operations and
 * quirks, waits that end once (done, peer dead, cancelled, destroyed), the
 * lookup table and its purge, and callbacks that call back in. Barriers
 * and group rendezvous are tested in test-regsync.c.
 */
#include "core.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "regtest.h"
#include "world_errors.h"

static bool
has(struct wr_reg *reg, const char *key, const char *want)
{
	const void *v;
	size_t len;

	return wr_reg_kv_get(reg, key, &v, &len) == 0 &&
	       len == strlen(want) && memcmp(v, want, len) == 0;
}

static int
wait_key(struct wr_reg *reg, const char *key, int rank, struct rec *r,
	 struct wr_reg_wait **w)
{
	return wr_reg_kv_wait(reg, (const char *const[]){key}, 1, rank, on_end,
			      r, w);
}

static int
wait_2keys(struct wr_reg *reg, const char *a, const char *b, struct rec *r)
{
	return wr_reg_kv_wait(reg, (const char *const[]){a, b}, 2, 0, on_end, r,
			      NULL);
}

static void
test_create(void)
{
	struct wr_reg *reg = wr_reg_create(4);

	ok(wr_reg_create(0) == NULL && wr_reg_create(-1) == NULL,
	   "create: a size below 1 is refused");
	ok(reg != NULL && wr_reg_size(reg) == 4, "create: size 4");
	ok(wr_reg_rank_life(reg, 3) == WR_RANK_UP, "create: ranks start up");
	ok(wr_reg_rank_life(reg, 4) == WR_RANK_DEAD &&
	   wr_reg_rank_life(reg, -1) == WR_RANK_DEAD,
	   "create: a rank out of range reads as dead");
	wr_reg_destroy(reg);
	/* No-ops: a crash here fails the plan. */
	wr_reg_destroy(NULL);
	wr_reg_cancel(NULL, -ETIMEDOUT);
}

static void
test_kv(void)
{
	struct wr_reg *reg = wr_reg_create(2);
	const char bin[] = {'a', '\0', 'b'};
	const void *v;
	size_t len;

	is_int(wr_reg_kv_get(reg, "k", &v, &len), -ENOENT, "kv: get, missing");
	is_int(wr_reg_kv_set(reg, "k", bin, 3), 0, "kv: set");
	ok(wr_reg_kv_get(reg, "k", &v, &len) == 0 && len == 3 &&
	   memcmp(v, bin, 3) == 0, "kv: values are bytes, NULs included");
	wr_reg_kv_set(reg, "k", "xy", 2);
	ok(has(reg, "k", "xy"), "kv: set overwrites");
	is_int(wr_reg_kv_set(reg, "", NULL, 0), 0, "kv: empty key and value");
	ok(has(reg, "", ""), "kv: get of the empty value");
	ok(wr_reg_kv_set(reg, NULL, "a", 1) == -EINVAL &&
	   wr_reg_kv_set(reg, "k", NULL, 1) == -EINVAL &&
	   wr_reg_kv_get(reg, "k", NULL, &len) == -EINVAL &&
	   wr_reg_kv_append(reg, NULL, "a", 1) == -EINVAL,
	   "kv: NULL key, NULL bytes, get into NULL, append to NULL");
	is_int(wr_reg_kv_append(reg, "k", "z", 1), 0, "kv: append");
	ok(has(reg, "k", "xyz"), "kv: append concatenates");
	wr_reg_kv_append(reg, "new", "a", 1);
	ok(has(reg, "new", "a"), "kv: append creates");
	for (int i = 1; i < 5000; i++) {
		wr_reg_kv_append(reg, "new", i % 2 ? "b" : "a", 1);
	}
	ok(wr_reg_kv_get(reg, "new", &v, &len) == 0 && len == 5000 &&
	   memcmp((const char *)v + 4996, "abab", 4) == 0, "kv: 5000 appends");
	is_int((long long)wr_reg_kv_count(reg), 3, "kv: count");
	ok(wr_reg_kv_check(reg, (const char *const[]){"k", ""}, 2),
	   "kv: check sees present keys");
	ok(!wr_reg_kv_check(reg, (const char *const[]){"k", "nope"}, 2) &&
	   !wr_reg_kv_check(reg, (const char *const[]){"k", NULL}, 2) &&
	   !wr_reg_kv_check(reg, NULL, 1), "kv: check, missing or NULL key");
	is_int(wr_reg_kv_del(reg, "k"), 0, "kv: del");
	is_int(wr_reg_kv_del(reg, "k"), -ENOENT, "kv: del of a missing key");
	is_int(wr_reg_kv_del(reg, NULL), -EINVAL, "kv: del of NULL");
	is_int((long long)wr_reg_kv_count(reg), 2, "kv: count after del");
	wr_reg_destroy(reg);
}

/* The limits: a value's length, the space's budget; held bytes outlive changes. */
static void
test_kv_limits(void)
{
	struct wr_reg *reg = wr_reg_create(1);
	char big[4000] = { 0 };
	const void *v;
	size_t len, before;
	void *hold;

	wr_reg_limit(reg, 8, 4096);
	is_int(wr_reg_kv_set(reg, "k", "12345678", 8), 0, "limits: a value of the largest length is stored");
	is_int(wr_reg_kv_append(reg, "k", "9", 1), -EMSGSIZE, "limits: an append past it is EMSGSIZE");
	ok(has(reg, "k", "12345678"), "limits: and the value stays");
	is_int(wr_reg_kv_set(reg, "k2", "123456789", 9), -EMSGSIZE, "limits: so is a set past it");
	wr_reg_limit(reg, sizeof(big), 4096);
	before = wr_reg_kv_bytes(reg);
	is_int(wr_reg_kv_set(reg, "big", big, sizeof(big)), -ENOSPC,
	       "limits: a value the budget cannot take is ENOSPC");
	is_int((long long)wr_reg_kv_bytes(reg), (long long)before, "limits: and costs nothing");
	ok(!wr_reg_kv_check(reg, (const char *const[]){"big"}, 1), "limits: nor makes a key");
	wr_reg_kv_del(reg, "k");
	is_int((long long)wr_reg_kv_bytes(reg), 0, "limits: a deletion gives its bytes back");
	is_int(wr_reg_kv_set(reg, "big", big, sizeof(big) - 200), 0, "limits: which makes room");
	is_int(wr_reg_kv_hold(reg, "big", &v, &len, &hold), 0, "hold: a value's bytes held");
	wr_reg_kv_set(reg, "big", "x", 1);
	wr_reg_kv_del(reg, "big");
	ok(len == sizeof(big) - 200 && ((const char *)v)[0] == 0 && ((const char *)v)[len - 1] == 0,
	   "hold: stay as they were after a set and a delete of their key");
	wr_reg_hold_release(hold);
	is_int(wr_reg_kv_hold(reg, "big", &v, &len, &hold), -ENOENT, "hold: of no key is ENOENT");
	ok(hold == NULL, "hold: and holds nothing");
	wr_reg_destroy(reg);
}

static void
test_add(void)
{
	struct wr_reg *reg = wr_reg_create(1);
	const char *bad[] = {"abc", "", "12abc", " 1", "1 ", "-", "1\0002"};
	size_t badlen[] = {3, 0, 5, 2, 2, 1, 3};
	bool refused = true;
	int64_t out = 0;

	ok(wr_reg_kv_add(reg, "c", 5, &out) == 0 && out == 5,
	   "add: a missing key counts as 0");
	ok(has(reg, "c", "5"), "add: the sum is stored as decimal text");
	ok(wr_reg_kv_add(reg, "c", -7, &out) == 0 && out == -2 &&
	   has(reg, "c", "-2"), "add: negative delta");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		wr_reg_kv_set(reg, "s", bad[i], badlen[i]);
		refused = refused &&
			  wr_reg_kv_add(reg, "s", 1, &out) == -EINVAL;
	}
	ok(refused, "add: non-integers are -EINVAL (stricter than stoll)");
	wr_reg_kv_set(reg, "p", "+7", 2);
	ok(wr_reg_kv_add(reg, "p", 1, &out) == 0 && out == 8, "add: a plus");
	wr_reg_kv_set(reg, "big", "9223372036854775807", 19);
	is_int(wr_reg_kv_add(reg, "big", 1, &out), -ERANGE, "add: overflow");
	ok(has(reg, "big", "9223372036854775807"), "add: no change on error");
	wr_reg_kv_set(reg, "huge", "99999999999999999999", 20);
	is_int(wr_reg_kv_add(reg, "huge", 0, &out), -ERANGE,
	       "add: stored value too big");
	wr_reg_kv_set(reg, "min", "-9223372036854775808", 20);
	ok(wr_reg_kv_add(reg, "min", 0, &out) == 0 && out == INT64_MIN,
	   "add: INT64_MIN parses");
	is_int(wr_reg_kv_add(reg, "min", -1, &out), -ERANGE, "add: underflow");
	is_int(wr_reg_kv_add(reg, "c", 1, NULL), -EINVAL, "add: NULL out");
	wr_reg_destroy(reg);
}

static void
test_cas(void)
{
	struct wr_reg *reg = wr_reg_create(1);
	const char zero_one[] = {0, 1};
	struct rec r = {0};
	const void *cur;
	size_t len;

	ok(wr_reg_kv_cas(reg, "m", "x", 1, "y", 1, &cur, &len) == 0 &&
	   len == 1 && memcmp(cur, "x", 1) == 0,
	   "cas: missing key, expected not empty: answers expected (TCPStore)");
	is_int((long long)wr_reg_kv_count(reg), 0, "cas: ... stores nothing");
	wait_key(reg, "m", 0, &r, NULL);
	ok(wr_reg_kv_cas(reg, "m", "", 0, "y", 1, &cur, &len) == 0 &&
	   len == 1 && memcmp(cur, "y", 1) == 0 && has(reg, "m", "y"),
	   "cas: missing key, expected empty: stores desired");
	ok(ended(&r, 0, -1), "cas: creating the key wakes its waiter");
	ok(wr_reg_kv_cas(reg, "m", "y", 1, "zz", 2, &cur, &len) == 0 &&
	   len == 2 && has(reg, "m", "zz"), "cas: equal: swaps");
	ok(wr_reg_kv_cas(reg, "m", "nope", 4, "w", 1, &cur, &len) == 0 &&
	   len == 2 && memcmp(cur, "zz", 2) == 0,
	   "cas: different: answers the current value");
	ok(wr_reg_kv_cas(reg, "m", "", 0, "q", 1, &cur, &len) == 0 &&
	   has(reg, "m", "zz"), "cas: present key, expected empty: unchanged");
	wr_reg_kv_set(reg, "b", zero_one, 2);
	ok(wr_reg_kv_cas(reg, "b", zero_one, 2, "\0", 1, &cur, &len) == 0 &&
	   len == 1 && ((const char *)cur)[0] == 0, "cas: binary values");
	ok(wr_reg_kv_cas(reg, "b", NULL, 1, "a", 1, &cur, &len) == -EINVAL &&
	   wr_reg_kv_cas(reg, "b", "a", 1, NULL, 1, &cur, &len) == -EINVAL &&
	   wr_reg_kv_cas(reg, "b", "a", 1, "a", 1, NULL, &len) == -EINVAL,
	   "cas: NULL bytes with a length, NULL cur");
	wr_reg_destroy(reg);
}

static void
test_kv_wait(void)
{
	struct wr_reg *reg = wr_reg_create(4);
	const char *keys[] = {"x", "y", "z"};
	struct wr_reg_wait *w = (void *)1;
	struct rec r[3] = {{0}};
	int64_t out;

	ok(wr_reg_kv_wait(reg, NULL, 0, 0, on_end, &r[0], &w) == 0 &&
	   w == NULL && ended(&r[0], 0, -1), "wait: no keys ends at once");
	wr_reg_kv_set(reg, "a", "1", 1);
	ok(wait_key(reg, "a", 0, &r[1], &w) == 0 && w == NULL &&
	   ended(&r[1], 0, -1), "wait: a present key ends at once");
	ok(wr_reg_kv_wait(reg, keys, 3, 1, on_end, &r[2], &w) == 0 &&
	   w != NULL, "wait: three missing keys");
	is_int((long long)wr_reg_pending(reg), 1, "wait: one pending");
	wr_reg_kv_set(reg, "x", "", 0);
	wr_reg_kv_add(reg, "y", 1, &out);
	is_int(r[2].calls, 0, "wait: two of three keys: still waiting");
	wr_reg_kv_append(reg, "z", "!", 1);
	ok(ended(&r[2], 0, -1), "wait: ends on the last key");
	ok(wr_reg_kv_wait(reg, NULL, 1, 0, on_end, &r[0], &w) == -EINVAL &&
	   wr_reg_kv_wait(reg, (const char *const[]){NULL}, 1, 0, on_end,
			  &r[0], &w) == -EINVAL &&
	   wr_reg_kv_wait(reg, keys, 1, 0, NULL, NULL, &w) == -EINVAL,
	   "wait: NULL keys, a NULL key, a NULL callback");
	ok(wait_key(reg, "q", 4, &r[0], &w) == -EINVAL &&
	   wait_key(reg, "q", -2, &r[0], &w) == -EINVAL,
	   "wait: rank out of range");
	is_int((long long)wr_reg_pending(reg), 0, "wait: nothing pending");
	wr_reg_destroy(reg);
}

static void
test_kv_wake(void)
{
	struct wr_reg *reg = wr_reg_create(4);
	struct rec r[4] = {{0}};

	wr_reg_kv_set(reg, "a", "1", 1);
	wait_2keys(reg, "a", "b", &r[0]);
	wr_reg_kv_set(reg, "b", "", 0);
	ok(ended(&r[0], 0, -1), "wake: one key present, one missing");
	wait_key(reg, "g1", 2, &r[1], NULL);
	wr_reg_kv_set(reg, "g1", "v", 1);
	ok(ended(&r[1], 0, -1), "wake: a waiting get is woken by set");
	wait_key(reg, "g2", 2, &r[2], NULL);
	wr_reg_kv_append(reg, "g2", "v", 1);
	ok(ended(&r[2], 0, -1), "wake: ... and by append");
	wait_2keys(reg, "d", "d", &r[3]);
	wr_reg_kv_set(reg, "d", "v", 1);
	ok(ended(&r[3], 0, -1), "wake: a key named twice ends once");
	is_int((long long)wr_reg_pending(reg), 0, "wake: nothing pending");
	wr_reg_destroy(reg);
}

static void
test_kv_death(void)
{
	struct wr_reg *reg = wr_reg_create(4);
	struct rec r[5] = {{0}};
	struct wr_reg_wait *w[5];

	wait_key(reg, "never", 0, &r[0], &w[0]);
	wait_key(reg, "never", 3, &r[1], &w[1]);
	wait_key(reg, "never", -1, &r[2], &w[2]);
	wr_reg_lut_wait(reg, VAL, "g", "k", 0, on_end, &r[3], &w[3]);
	wr_reg_rank_dead(reg, 3);
	ok(ended(&r[0], WORLD_EPEERDEAD, 3),
	   "death: a kv wait fails, naming the dead rank");
	ok(ended(&r[2], WORLD_EPEERDEAD, 3), "death: ... of no rank too");
	ok(ended(&r[3], WORLD_EPEERDEAD, 3), "death: ... and a lut wait");
	is_int(r[1].calls, 0, "death: the dying rank's own wait goes on");
	is_int(wr_reg_rank_life(reg, 3), WR_RANK_DEAD, "death: rank 3 is dead");
	wr_reg_cancel(w[1], -ETIMEDOUT);
	ok(ended(&r[1], -ETIMEDOUT, -1), "cancel: ends with the code given");
	wait_key(reg, "later", 0, &r[4], &w[4]);
	wr_reg_rank_dead(reg, 3);
	is_int(r[4].calls, 0, "death: idempotent, and fails no later wait");
	wr_reg_rank_done(reg, 2);
	is_int(r[4].calls, 0, "death: a goodbye fails no kv wait");
	wr_reg_rank_dead(reg, 2);
	ok(r[4].calls == 0 && wr_reg_rank_life(reg, 2) == WR_RANK_DONE,
	   "death: a DONE rank that exits is no death");
	wr_reg_rank_dead(reg, 9);
	wr_reg_cancel(w[4], 0);
	ok(ended(&r[4], -ECANCELED, -1), "cancel: with 0 means -ECANCELED");
	is_int((long long)wr_reg_pending(reg), 0, "death: nothing pending");
	wr_reg_destroy(reg);
}

static void
test_lut(void)
{
	struct wr_reg *reg = wr_reg_create(4);

	is_int(wr_reg_lut_claim(reg, VAL, "g", "k", 0), 0, "lut: claim");
	is_int(wr_reg_lut_claim(reg, VAL, "g", "k", 0), -EEXIST,
	       "lut: claim twice (P2)");
	is_int(wr_reg_lut_claim(reg, VAL, "g", "k", 1), -EEXIST,
	       "lut: first writer wins (P4)");
	is_int(owner(reg, VAL, "g", "k"), 0, "lut: lookup");
	is_int(owner(reg, SVC, "g", "k"), -ENOENT, "lut: the tables are apart");
	is_int(wr_reg_lut_claim(reg, SVC, "g", "k", 1), 0,
	       "lut: claim in the other table");
	is_int(wr_reg_lut_release(reg, VAL, "g", "k", 1), -EPERM,
	       "lut: release by another rank (P5)");
	is_int(wr_reg_lut_release(reg, VAL, "g", "nope", 0), -ENOENT,
	       "lut: release of a missing key");
	ok(wr_reg_lut_count(reg, 0) == 1 && wr_reg_lut_count(reg, 1) == 1 &&
	   wr_reg_lut_count(reg, 9) == 0, "lut: count per rank");
	is_int(wr_reg_lut_release(reg, VAL, "g", "k", 0), 0, "lut: release");
	ok(owner(reg, VAL, "g", "k") == -ENOENT &&
	   wr_reg_lut_count(reg, 0) == 0, "lut: released");
	ok(wr_reg_lut_claim(reg, VAL, "g", "k", 4) == -EINVAL &&
	   wr_reg_lut_claim(reg, VAL, "g", "k", -1) == -EINVAL &&
	   wr_reg_lut_claim(reg, VAL, NULL, "k", 0) == -EINVAL &&
	   wr_reg_lut_claim(reg, VAL, "g", NULL, 0) == -EINVAL &&
	   wr_reg_lut_claim(reg, (enum wr_reg_table)7, "g", "k", 0) ==
		   -EINVAL &&
	   wr_reg_lut_release(reg, VAL, "g", "k", 9) == -EINVAL &&
	   wr_reg_lut_lookup(reg, VAL, "g", "k", NULL) == -EINVAL,
	   "lut: bad ranks, names, table or output are -EINVAL");
	ok(wr_reg_lut_claim(reg, VAL, "", "", 2) == 0 &&
	   owner(reg, VAL, "", "") == 2, "lut: empty group and key are names");
	wr_reg_destroy(reg);
}

static void
test_lut_wait(void)
{
	struct wr_reg *reg = wr_reg_create(4);
	struct rec r[3] = {{0}};

	wr_reg_lut_wait(reg, SVC, "g", "k", 2, on_end, &r[0], NULL);
	wr_reg_lut_claim(reg, VAL, "g", "k", 1);
	wr_reg_lut_claim(reg, SVC, "gg", "k", 1);
	is_int(r[0].calls, 0, "lut wait: not woken by another table or group");
	wr_reg_lut_claim(reg, SVC, "g", "k", 1);
	ok(ended(&r[0], 0, -1), "lut wait: woken by the claim");
	wr_reg_lut_wait(reg, SVC, "g", "k", 2, on_end, &r[1], NULL);
	ok(ended(&r[1], 0, -1), "lut wait: an owned key ends it at once");
	ok(wr_reg_lut_wait(reg, VAL, "g", NULL, 0, on_end, &r[2], NULL) ==
		   -EINVAL &&
	   wr_reg_lut_wait(reg, VAL, "g", "k", 4, on_end, &r[2], NULL) ==
		   -EINVAL &&
	   wr_reg_lut_wait(reg, VAL, "g", "k", 0, NULL, NULL, NULL) == -EINVAL,
	   "lut wait: NULL key, bad rank, NULL callback");
	is_int((long long)wr_reg_pending(reg), 0, "lut wait: nothing pending");
	wr_reg_destroy(reg);
}

static void
test_purge(void)
{
	struct wr_reg *reg = wr_reg_create(3);

	wr_reg_lut_claim(reg, VAL, "g", "a", 1);
	wr_reg_lut_claim(reg, VAL, "g", "b", 1);
	wr_reg_lut_claim(reg, VAL, "h", "a", 1);
	wr_reg_lut_claim(reg, SVC, "g", "c", 1);
	wr_reg_lut_claim(reg, VAL, "g", "z", 0);
	is_int((long long)wr_reg_lut_count(reg, 1), 4, "purge: four entries");
	wr_reg_rank_dead(reg, 1);
	is_int((long long)wr_reg_lut_count(reg, 1), 0, "purge: none left");
	ok(owner(reg, VAL, "g", "a") == -ENOENT &&
	   owner(reg, VAL, "h", "a") == -ENOENT &&
	   owner(reg, SVC, "g", "c") == -ENOENT,
	   "purge: in every group and both tables (X1)");
	is_int(owner(reg, VAL, "g", "z"), 0, "purge: others' entries stay");
	is_int(wr_reg_lut_claim(reg, VAL, "g", "q", 1), WORLD_EPEERDEAD,
	       "purge: a dead rank cannot claim");
	is_int(wr_reg_lut_claim(reg, VAL, "g", "a", 2), 0,
	       "purge: the name is free again");
	wr_reg_destroy(reg);
}

/* Callbacks that call back in: set, wait, cancel, enter, die. */
struct chain {
	struct wr_reg *reg;
	struct wr_reg_wait *victim;
	struct rec self, other;
	int rounds;
};

static void
set_next(void *arg, int err, int dead)
{
	struct chain *c = arg;

	on_end(&c->self, err, dead);
	wr_reg_kv_set(c->reg, "k2", "v", 1);
}

/* Cancels the victim: another wait, or this one (then a no-op). */
static void
cancel_victim(void *arg, int err, int dead)
{
	struct chain *c = arg;

	on_end(&c->self, err, dead);
	wr_reg_cancel(c->victim, -ETIMEDOUT);
}

static void
rewait(void *arg, int err, int dead)
{
	struct chain *c = arg;

	on_end(&c->self, err, dead);
	wr_reg_kv_del(c->reg, "x");
	wait_key(c->reg, "x", 0, &c->other, NULL);
}

static void
next_barrier(void *arg, int err, int dead)
{
	struct chain *c = arg;

	on_end(&c->self, err, dead);
	if (--c->rounds > 0) {
		c->self.calls = 0;
		wr_reg_barrier(c->reg, "loop", NULL, 0, 0, NULL, next_barrier,
			       c, NULL);
	}
}

static void
kill_next(void *arg, int err, int dead)
{
	struct chain *c = arg;

	on_end(&c->self, err, dead);
	wr_reg_rank_dead(c->reg, 2);
}

static int
wait_with(struct chain *c, const char *key, int rank, wr_reg_wait_cb *cb,
	  struct wr_reg_wait **w)
{
	return wr_reg_kv_wait(c->reg, (const char *const[]){key}, 1, rank, cb,
			      c, w);
}

static void
test_reentry_kv(void)
{
	struct wr_reg *reg = wr_reg_create(3);
	struct chain c[4] = {{.reg = reg}, {.reg = reg}, {.reg = reg},
			     {.reg = reg}};
	struct rec r[2] = {{0}};

	wait_key(reg, "k2", 1, &r[0], NULL);
	wait_with(&c[0], "k1", 0, set_next, NULL);
	wr_reg_kv_set(reg, "k1", "v", 1);
	ok(ended(&c[0].self, 0, -1) && ended(&r[0], 0, -1),
	   "reentry: a callback's set wakes another wait");
	wait_with(&c[1], "y", 0, cancel_victim, NULL);
	wait_key(reg, "y", 1, &r[1], &c[1].victim);
	wr_reg_kv_set(reg, "y", "v", 1);
	ok(ended(&c[1].self, 0, -1) && ended(&r[1], -ETIMEDOUT, -1),
	   "reentry: a callback cancels a wait due on the same key");
	wait_with(&c[2], "x", 0, rewait, NULL);
	wr_reg_kv_set(reg, "x", "v", 1);
	ok(ended(&c[2].self, 0, -1) && c[2].other.calls == 0,
	   "reentry: a callback deletes the key and waits anew");
	wr_reg_kv_set(reg, "x", "w", 1);
	ok(ended(&c[2].other, 0, -1), "reentry: ... the next set ends that");
	wait_with(&c[3], "s", -1, cancel_victim, &c[3].victim);
	wr_reg_kv_set(reg, "s", "v", 1);
	ok(ended(&c[3].self, 0, -1),
	   "reentry: cancelling itself in its callback is a no-op");
	is_int((long long)wr_reg_pending(reg), 0, "reentry: none pending");
	wr_reg_destroy(reg);
}

static void
test_reentry_rank(void)
{
	struct wr_reg *reg = wr_reg_create(3);
	struct chain c = {.reg = reg, .rounds = 5}, d = {.reg = reg};
	struct rec r[2] = {{0}};

	wr_reg_barrier(reg, "loop", NULL, 0, 0, NULL, next_barrier, &c, NULL);
	for (int i = 0; i < 5; i++) {
		enter(reg, "loop", 1, &r[0], NULL);
		enter(reg, "loop", 2, &r[0], NULL);
	}
	ok(c.rounds == 0 && c.self.calls == 1 && r[0].calls == 10,
	   "reentry: a barrier callback enters the next barrier");
	wait_key(reg, "z", 1, &r[1], NULL);
	wait_with(&d, "z", 2, kill_next, NULL);
	wr_reg_rank_dead(reg, 0);
	ok(ended(&d.self, WORLD_EPEERDEAD, 0) &&
	   ended(&r[1], WORLD_EPEERDEAD, 0),
	   "reentry: a death callback reports another death; each ends once");
	ok(wr_reg_rank_life(reg, 2) == WR_RANK_DEAD &&
	   wr_reg_pending(reg) == 0, "reentry: that death took; none pending");
	wr_reg_destroy(reg);
}

static void
wait_in_destroy(void *arg, int err, int dead)
{
	struct chain *c = arg;
	const int one[] = {0};

	on_end(&c->self, err, dead);
	c->rounds = wait_key(c->reg, "late", 0, &c->other, NULL);
	c->rounds += wr_reg_lut_wait(c->reg, VAL, "g", "k", 0, on_end,
				     &c->other, NULL);
	c->rounds += enter(c->reg, "late", 0, &c->other, NULL);
	c->rounds += join(c->reg, "late", one, 1, 0, &c->other, NULL);
}

static void
test_destroy(void)
{
	struct wr_reg *reg = wr_reg_create(3);
	struct chain c = {.reg = reg};
	struct rec r[4] = {{0}};

	wait_key(reg, "k", 0, &r[0], NULL);
	wr_reg_lut_wait(reg, SVC, "g", "s", 1, on_end, &r[1], NULL);
	enter(reg, "b", 2, &r[2], NULL);
	join(reg, "g", (const int[]){0, 1}, 2, 0, &r[3], NULL);
	wait_with(&c, "k", 0, wait_in_destroy, NULL);
	is_int((long long)wr_reg_pending(reg), 5, "destroy: five pending");
	wr_reg_destroy(reg);
	ok(ended(&r[0], -ECANCELED, -1) && ended(&r[1], -ECANCELED, -1) &&
	   ended(&r[2], -ECANCELED, -1) && ended(&r[3], -ECANCELED, -1) &&
	   ended(&c.self, -ECANCELED, -1),
	   "destroy: every kind of wait ends -ECANCELED");
	ok(c.rounds == 4 * -ECANCELED && c.other.calls == 0,
	   "destroy: meanwhile no new wait of any kind starts");
}

/* A stopping rank's peers learn it from their deaths watches, with what
 * it said as it stopped; its goodbye after is a loss of its own. */
static void
test_stopping_told(void)
{
	struct wr_reg *reg = wr_reg_create(2);
	struct rec watch = { 0 }, next = { 0 };
	struct wr_reg_wait *w = NULL;
	const int *order;
	const enum wr_loss *kind;

	wr_reg_deaths_wait(reg, 0, 0, on_end, &watch, &w);
	wr_reg_rank_stopping(reg, 1, "world.stop", "{\"3\":2}");
	ok(ended(&watch, 0, -1) && watch.dead == 1, "stopping: a deaths watch learns it");
	ok(wr_reg_losses(reg, &order, &kind) == 1 && order[0] == 1 &&
	   kind[0] == WR_LOSS_STOPPING, "stopping: as a loss of its kind");
	is_str(wr_reg_stop_note(reg, 1), "{\"3\":2}", "stopping: with what it said");
	ok(wr_reg_stop_note(reg, 0) == NULL, "stopping: nothing for a rank still up");
	wr_reg_deaths_wait(reg, 1, 0, on_end, &next, &w);
	wr_reg_rank_done(reg, 1);
	ok(ended(&next, 0, -1) && next.dead == 1 && wr_reg_losses(reg, &order, &kind) == 2 &&
	   kind[1] == WR_LOSS_LEFT, "stopping: its goodbye after is a second loss");
	wr_reg_destroy(reg);
}

/*
 * A rank in the stop barrier enters no other barrier and joins no group:
 * those waiting for it there fail at once, before and after it stops;
 * the stop barrier itself, barriers it is not in and key waits go on.
 */
static void
test_stopping(void)
{
	struct wr_reg *reg = wr_reg_create(3);
	struct rec early = { 0 }, late = { 0 }, joined = { 0 }, sub = { 0 }, key = { 0 };
	struct rec stop[3] = { { 0 } }, sub2 = { 0 };
	const int pair[] = { 0, 1 }, all[] = { 0, 1, 2 };
	const char *keys[] = { "k" };
	struct wr_reg_wait *w = NULL;

	enter(reg, "g", 0, &early, &w);
	join(reg, "grp", all, 3, 0, &joined, &w);
	wr_reg_kv_wait(reg, keys, 1, 0, on_end, &key, &w);
	wr_reg_barrier(reg, "sub", pair, 2, 0, NULL, on_end, &sub, &w);
	ok(!wr_reg_rank_is_stopping(reg, 2), "stopping: not before the stop barrier");
	wr_reg_rank_stopping(reg, 2, "world.stop", NULL);
	enter(reg, "world.stop", 2, &stop[2], &w);
	ok(wr_reg_rank_is_stopping(reg, 2), "stopping: once it stops");
	ok(ended(&early, WORLD_EPEERDEAD, 2), "stopping: a barrier waiting for it fails, naming it");
	ok(ended(&joined, WORLD_EPEERDEAD, 2), "stopping: a join waiting for it fails, naming it");
	enter(reg, "g2", 1, &late, &w);
	ok(ended(&late, WORLD_EPEERDEAD, 2), "stopping: a barrier entered later fails at once");
	ok(sub.calls == 0 && key.calls == 0,
	   "stopping: a barrier it is not in and a key wait go on");
	wr_reg_barrier(reg, "sub", pair, 2, 1, NULL, on_end, &sub2, &w);
	ok(ended(&sub, 0, -1) && ended(&sub2, 0, -1), "stopping: and that barrier completes");
	wr_reg_rank_stopping(reg, 0, "other.stop", NULL);
	ok(!wr_reg_rank_is_stopping(reg, 0), "stopping: only the first stop barrier's name counts");
	enter(reg, "world.stop", 0, &stop[0], &w);
	enter(reg, "world.stop", 1, &stop[1], &w);
	ok(ended(&stop[0], 0, -1) && ended(&stop[1], 0, -1) && ended(&stop[2], 0, -1),
	   "stopping: the stop barrier itself completes");
	wr_reg_destroy(reg);
	/* The usual order: one waits in the stop barrier as the others come. */
	reg = wr_reg_create(2);
	memset(stop, 0, sizeof(stop));
	wr_reg_rank_stopping(reg, 0, "world.stop", NULL);
	enter(reg, "world.stop", 0, &stop[0], &w);
	wr_reg_rank_stopping(reg, 1, "world.stop", NULL);
	ok(stop[0].calls == 0, "stopping: a later stopper fails no wait in the stop barrier");
	enter(reg, "world.stop", 1, &stop[1], &w);
	ok(ended(&stop[0], 0, -1) && ended(&stop[1], 0, -1), "stopping: and it completes");
	wr_reg_destroy(reg);
	test_stopping_told();
}

/* deaths.wait: a standing watch that a death or a goodbye ends, each
 * rank once. */
static void
test_deaths(void)
{
	struct wr_reg *reg = wr_reg_create(4);
	struct rec a = { 0 }, b = { 0 }, c = { 0 }, d = { 0 };
	struct wr_reg_wait *w = NULL;
	const int *order;
	const enum wr_loss *kind;

	is_int(wr_reg_deaths_wait(reg, 0, 0, on_end, &a, &w), 0, "deaths: a watch waits");
	ok(w != NULL && a.calls == 0, "deaths: pending while nobody is lost");
	wr_reg_rank_done(reg, 1);
	ok(ended(&a, 0, -1) && a.dead == 1, "deaths: a goodbye ends the watch, naming the rank");
	wr_reg_deaths_wait(reg, 1, 0, on_end, &b, &w);
	wr_reg_rank_dead(reg, 1);
	ok(b.calls == 0, "deaths: a rank that said goodbye and exits is no second loss");
	wr_reg_rank_dead(reg, 3);
	ok(ended(&b, 0, -1) && b.dead == 3, "deaths: a death ends the watch, naming the rank");
	ok(wr_reg_losses(reg, &order, &kind) == 2 && order[0] == 1 &&
	   kind[0] == WR_LOSS_LEFT && order[1] == 3 && kind[1] == WR_LOSS_DIED,
	   "deaths: the list has both, and which left");
	wr_reg_deaths_wait(reg, 0, 0, on_end, &c, &w);
	ok(ended(&c, 0, -1) && c.dead == 3 && w == NULL,
	   "deaths: a watch behind the count ends at once");
	wr_reg_deaths_wait(reg, 2, 0, on_end, &d, &w);
	wr_reg_rank_dead(reg, 2);
	ok(ended(&d, 0, -1) && d.dead == 2 && wr_reg_losses(reg, &order, &kind) == 3 &&
	   order[2] == 2, "deaths: the next death ends the next watch, in order");
	memset(&d, 0, sizeof(d));
	is_int(wr_reg_deaths_wait(reg, -1, 0, on_end, &d, NULL), -EINVAL,
	       "deaths: a negative count is refused");
	wr_reg_deaths_wait(reg, 3, 0, on_end, &d, &w);
	wr_reg_destroy(reg);
	ok(ended(&d, -ECANCELED, -1), "deaths: destroy ends a watch with -ECANCELED");
}

/* Group ids, and collective joins whose members disagree on the list. */
static void
test_group_ids(void)
{
	struct wr_reg *reg = wr_reg_create(4);
	const int ab[] = { 0, 1 }, abc[] = { 0, 1, 2 };
	struct rec a = { 0 }, b = { 0 }, c = { 0 };
	struct wr_reg_wait *w = NULL;
	uint32_t id = 0, id2 = 0;

	join(reg, "g", ab, 2, 0, &a, &w);
	is_int(wr_reg_group_id(reg, "g", &id), -ENOENT, "ids: none before the group completes");
	join(reg, "g", ab, 2, 1, &b, &w);
	ok(wr_reg_group_id(reg, "g", &id) == 0 && id > 0, "ids: a complete group has one");
	join(reg, "h", ab, 2, 0, &a, &w);
	join(reg, "h", ab, 2, 1, &b, &w);
	ok(wr_reg_group_id(reg, "h", &id2) == 0 && id2 != id,
	   "ids: another group with the same members has another");
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	wr_reg_group_join(reg, "c3", abc, 3, 0, true, on_end, &a, &w);
	ok(a.calls == 0, "coll: a join waits for the others");
	is_int(wr_reg_group_join(reg, "c2", ab, 2, 1, true, on_end, &b, &w), 0,
	       "coll: a join with another list is taken");
	ok(ended(&b, WORLD_EPROTO, -1), "coll: it ends WORLD_EPROTO at once");
	ok(ended(&a, WORLD_EPROTO, -1), "coll: so does the join it disagrees with");
	wr_reg_group_join(reg, "c3", abc, 3, 2, true, on_end, &c, &w);
	ok(c.calls == 0, "coll: the group is free again afterwards");
	memset(&b, 0, sizeof(b));
	is_int(wr_reg_group_join(reg, "c3", ab, 2, 1, true, on_end, &b, &w), WORLD_EPROTO,
	       "coll: a name taken with other members is WORLD_EPROTO");
	wr_reg_destroy(reg);
}

int
main(void)
{
	plan(151);
	test_create();
	test_kv();
	test_kv_limits();
	test_add();
	test_cas();
	test_kv_wait();
	test_kv_wake();
	test_kv_death();
	test_lut();
	test_lut_wait();
	test_purge();
	test_reentry_kv();
	test_reentry_rank();
	test_destroy();
	test_deaths();
	test_stopping();
	test_group_ids();
	return done_testing();
}
