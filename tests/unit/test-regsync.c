/* SPDX-License-Identifier: MIT */
/*
 * regsync: the registry core's barriers (10,000 back to back with ranks
 * racing ahead; deaths and goodbyes before, during and after them) and
 * group rendezvous (joins, leaves, deaths and retries), through its C API.
 */
#include "core.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "regtest.h"
#include "world_errors.h"

#define NB 10000 /* back-to-back barriers */
#define NR 4     /* ranks in the race */
#define AHEAD 3  /* entries a rank may have pending at once */

/* Enter barrier @name among @n @members; *@gen gets the generation. */
static int
enter_some(struct wr_reg *reg, const char *name, const int *members,
	   size_t n, int rank, uint64_t *gen, struct rec *r)
{
	return wr_reg_barrier(reg, name, members, n, rank, gen, on_end, r,
			      NULL);
}

/* P10: three ranks race to claim one flag; after a barrier all see it. */
static void
test_p10(void)
{
	bool one = true, seen = true;

	for (int trial = 0; trial < 3; trial++) {
		struct wr_reg *reg = wr_reg_create(3);
		struct rec r[3] = {{0}};
		int wins = 0, lost = 0;

		for (int i = 0; i < 3; i++) {
			int rc = wr_reg_lut_claim(reg, VAL, "g", "solved",
						  (trial + i) % 3);

			wins += rc == 0;
			lost += rc == -EEXIST;
		}
		for (int i = 0; i < 3; i++) {
			enter(reg, "episode", (trial + 2 * i) % 3, &r[i], NULL);
		}
		one = one && wins == 1 && lost == 2;
		for (int i = 0; i < 3; i++) {
			seen = seen && ended(&r[i], 0, -1) &&
			       owner(reg, VAL, "g", "solved") == trial;
		}
		wr_reg_destroy(reg);
	}
	ok(one, "P10: exactly one claim wins, the others get -EEXIST");
	ok(seen, "P10: after the barrier every rank sees the winner");
}

static void
test_barrier(void)
{
	struct wr_reg *reg = wr_reg_create(3);
	struct wr_reg_wait *w = NULL, *w3 = NULL;
	struct rec r[6] = {{0}};
	uint64_t gen = 0;

	ok(enter(reg, "b", 0, &r[0], &w) == 0 && w != NULL,
	   "barrier: rank 0 waits");
	enter(reg, "b", 1, &r[1], &w);
	ok(r[0].calls == 0 && r[1].calls == 0, "barrier: none ends early (B2)");
	ok(enter(reg, "b", 2, &r[2], &w) == 0 && w == NULL,
	   "barrier: the last entry ends at once");
	ok(ended(&r[0], 0, -1) && ended(&r[1], 0, -1) && ended(&r[2], 0, -1),
	   "barrier: all three return (B1)");
	wr_reg_barrier(reg, "b", (const int[]){2, 0, 1}, 3, 0, &gen, on_end,
		       &r[3], &w3);
	is_int((long long)gen, 2, "barrier: all ranks listed is the NULL one");
	enter_some(reg, "b", (const int[]){1, 0}, 2, 0, &gen, &r[4]);
	is_int((long long)gen, 1, "barrier: other members, other counters");
	enter_some(reg, "b", (const int[]){0, 1}, 2, 1, NULL, &r[5]);
	ok(ended(&r[4], 0, -1) && ended(&r[5], 0, -1),
	   "barrier: a subset completes");
	wr_reg_cancel(w3, -ETIMEDOUT);
	ok(ended(&r[3], -ETIMEDOUT, -1), "barrier: a wait can be cancelled");
	is_int((long long)wr_reg_pending(reg), 0, "barrier: nothing pending");
	wr_reg_destroy(reg);
}

static void
test_barrier_args(void)
{
	struct wr_reg *reg = wr_reg_create(3);
	struct wr_reg_wait *w = NULL;
	struct rec r = {0};
	uint64_t g;

	is_int(enter_some(reg, "b", (const int[]){0, 1}, 2, 2, &g, &r), -EINVAL,
	       "barrier args: not a member (B4)");
	ok(enter_some(reg, "b", (const int[]){0, 5}, 2, 0, &g, &r) == -EINVAL &&
	   enter_some(reg, "b", (const int[]){0, -1}, 2, 0, &g, &r) == -EINVAL,
	   "barrier args: a member out of range");
	is_int(enter_some(reg, "b", (const int[]){0, 0}, 2, 0, &g, &r), -EINVAL,
	       "barrier args: a member twice");
	is_int(enter_some(reg, "b", (const int[]){0, 1, 2, 0}, 4, 0, &g, &r),
	       -EINVAL, "barrier args: more members than ranks");
	is_int(enter_some(reg, "b", (const int[]){0}, 0, 0, &g, &r), -EINVAL,
	       "barrier args: no members");
	ok(enter(reg, NULL, 0, &r, &w) == -EINVAL &&
	   enter(reg, "b", 3, &r, &w) == -EINVAL &&
	   wr_reg_barrier(reg, "b", NULL, 0, 0, &g, NULL, NULL, &w) == -EINVAL,
	   "barrier args: NULL name, bad rank, NULL callback");
	ok(r.calls == 0 && wr_reg_pending(reg) == 0,
	   "barrier args: nothing entered");
	wr_reg_destroy(reg);
}

/* Ranks a spawn added: members of barriers, never of "every rank". */
static void
test_barrier_grow(void)
{
	struct wr_reg *reg = wr_reg_create(2);
	const int m02[] = {0, 2}, m01[] = {0, 1}, m023[] = {0, 2, 3};
	struct rec r[8] = {{0}};
	uint64_t gen = 0;

	is_int(enter_some(reg, "s", m02, 2, 0, &gen, &r[0]), -EINVAL,
	       "grow: before it, a rank past the job's is out of range");
	is_int(wr_reg_grow(reg, 1), -EINVAL, "grow: the registry never shrinks");
	is_int(wr_reg_grow(reg, 4), 0, "grow: two ranks join");
	ok(wr_reg_size(reg) == 2 && wr_reg_nranks(reg) == 4,
	   "grow: every rank is still the job's two; four are known");
	ok(wr_reg_rank_life(reg, 3) == WR_RANK_UP, "grow: the new ranks are up");
	enter_some(reg, "s", m02, 2, 0, &gen, &r[0]);
	is_int(enter_some(reg, "s", m02, 2, 2, &gen, &r[1]), 0,
	       "grow: a new rank enters a barrier it is a member of");
	ok(ended(&r[0], 0, -1) && ended(&r[1], 0, -1),
	   "grow: a barrier of old and new ranks completes");
	is_int(enter(reg, "all", 2, &r[2], NULL), -EINVAL,
	       "grow: a new rank is no member of every rank's barrier");
	enter(reg, "all", 0, &r[3], NULL);
	enter_some(reg, "all", m01, 2, 1, &gen, &r[4]);
	ok(ended(&r[3], 0, -1) && ended(&r[4], 0, -1),
	   "grow: the job's ranks listed are still every rank's barrier");
	enter_some(reg, "d", m023, 3, 0, NULL, &r[5]);
	enter_some(reg, "d", m023, 3, 2, NULL, &r[6]);
	wr_reg_rank_dead(reg, 3);
	ok(ended(&r[5], WORLD_EPEERDEAD, 3) && ended(&r[6], WORLD_EPEERDEAD, 3),
	   "grow: a new rank's death fails the barriers it is missing from");
	is_int((long long)wr_reg_pending(reg), 0, "grow: nothing pending");
	wr_reg_destroy(reg);
}

static void
test_barrier_death(void)
{
	struct wr_reg *reg = wr_reg_create(4);
	const int m012[] = {0, 1, 2};
	struct rec r[8] = {{0}};
	uint64_t gen = 0;

	enter(reg, "d", 0, &r[0], NULL);
	enter(reg, "d", 3, &r[1], NULL);
	wr_reg_rank_dead(reg, 3);
	is_int(r[0].calls, 0, "barrier death: a member that entered may die");
	enter(reg, "d", 1, &r[2], NULL);
	enter(reg, "d", 2, &r[3], NULL);
	ok(ended(&r[0], 0, -1) && ended(&r[3], 0, -1),
	   "barrier death: ... and that generation still completes");
	enter(reg, "d", 0, &r[4], NULL);
	ok(ended(&r[4], WORLD_EPEERDEAD, 3),
	   "barrier death: the next fails at once, naming the dead member");
	enter_some(reg, "e", m012, 3, 0, NULL, &r[5]);
	enter_some(reg, "e", m012, 3, 1, NULL, &r[6]);
	wr_reg_rank_dead(reg, 2);
	ok(ended(&r[5], WORLD_EPEERDEAD, 2) && ended(&r[6], WORLD_EPEERDEAD, 2),
	   "barrier death: a member dead mid-barrier fails the waiters (X2)");
	memset(r, 0, sizeof(r));
	enter_some(reg, "f", (const int[]){0, 1}, 2, 0, NULL, &r[0]);
	enter_some(reg, "f", (const int[]){0, 1}, 2, 1, NULL, &r[1]);
	ok(ended(&r[0], 0, -1) && ended(&r[1], 0, -1),
	   "barrier death: barriers without the dead still work");
	enter_some(reg, "f", (const int[]){0, 3}, 2, 3, &gen, &r[2]);
	ok(ended(&r[2], WORLD_EPEERDEAD, 3) && gen == 1,
	   "barrier death: a dead rank cannot enter");
	wr_reg_destroy(reg);
	reg = wr_reg_create(3);
	enter(reg, "g", 0, &r[3], NULL);
	wr_reg_rank_done(reg, 2);
	ok(ended(&r[3], WORLD_EPEERDEAD, 2),
	   "barrier death: a goodbye before entering fails it");
	is_int(wr_reg_rank_life(reg, 2), WR_RANK_DONE, "barrier death: DONE");
	is_int((long long)wr_reg_pending(reg), 0, "barrier death: idle");
	wr_reg_destroy(reg);
}

struct race;

struct slot {
	struct race *race;
	int rank;
	uint64_t gen;
};

struct race {
	struct wr_reg *reg;
	uint64_t entered[NR], done[NR];
	struct slot slot[NR][AHEAD];
	int early, wrong, late;
	uint64_t lead; /* the most entries a rank got ahead of the last */
};

static uint64_t
least(const uint64_t *v)
{
	uint64_t m = v[0];

	for (int i = 1; i < NR; i++) {
		m = v[i] < m ? v[i] : m;
	}
	return m;
}

static void
race_end(void *arg, int err, int dead)
{
	struct slot *s = arg;
	struct race *r = s->race;

	r->early += err != 0 || s->gen > least(r->entered);
	r->wrong += s->gen != r->done[s->rank] + 1;
	r->done[s->rank]++;
}

/* One rank enters if it may; then no wait that should have ended is left. */
static void
race_step(struct race *r, int rank)
{
	uint64_t *in = r->entered, gen = 0, low;
	struct slot *s = &r->slot[rank][in[rank] % AHEAD];

	if (in[rank] == NB || in[rank] - r->done[rank] == AHEAD) {
		return;
	}
	*s = (struct slot){.race = r, .rank = rank, .gen = in[rank] + 1};
	in[rank]++;
	wr_reg_barrier(r->reg, "race", NULL, 0, rank, &gen, race_end, s, NULL);
	r->wrong += gen != s->gen;
	low = least(in);
	r->lead = in[rank] - low > r->lead ? in[rank] - low : r->lead;
	for (int i = 0; i < NR; i++) {
		r->late += r->done[i] < low;
	}
}

static void
test_race(void)
{
	struct race r = {.reg = wr_reg_create(NR)};
	uint64_t seed = 12345;

	while (least(r.done) < NB) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		race_step(&r, (int)(seed >> 33) % NR);
	}
	ok(r.early == 0, "race: %d barriers on %d ranks, none ends early",
	   NB, NR);
	ok(r.late == 0, "race: each ends as its last member enters");
	ok(r.wrong == 0, "race: generations count up, ending in order");
	ok(r.lead == AHEAD, "race: ranks raced %" PRIu64 " entries ahead",
	   r.lead);
	is_int((long long)wr_reg_pending(r.reg), 0, "race: nothing pending");
	wr_reg_destroy(r.reg);
}

static void
test_group(void)
{
	struct wr_reg *reg = wr_reg_create(4);
	const int m01[] = {1, 0}, m012[] = {0, 1, 2};
	struct wr_reg_wait *w = NULL;
	struct rec r[2] = {{0}};
	const int *mem;
	size_t n;

	ok(join(reg, "g", m01, 2, 0, &r[0], &w) == 0 && w != NULL,
	   "group: the first join waits");
	ok(wr_reg_group_members(reg, "g", &mem, &n) == 0 && n == 2 &&
	   mem[0] == 0 && mem[1] == 1, "group: members, sorted, for all (G4)");
	is_int(join(reg, "g", m01, 2, 0, &r[1], &w), -EEXIST,
	       "group: joining twice (G3)");
	is_int(join(reg, "g", m012, 3, 2, &r[1], &w), -EEXIST,
	       "group: the name is taken with other members");
	/* Rank 2 where rank 1 would be: the count and that slot match. */
	is_int(join(reg, "g", (const int[]){2, 0}, 2, 2, &r[1], &w), -EEXIST,
	       "group: the name is taken with as many other members");
	ok(join(reg, "g", (const int[]){2, 3}, 2, 0, &r[1], &w) == -EINVAL &&
	   join(reg, "g", (const int[]){0, 0}, 2, 0, &r[1], &w) == -EINVAL &&
	   join(reg, "g", (const int[]){0, 4}, 2, 0, &r[1], &w) == -EINVAL &&
	   join(reg, "g", NULL, 2, 0, &r[1], &w) == -EINVAL &&
	   join(reg, NULL, m01, 2, 0, &r[1], &w) == -EINVAL &&
	   wr_reg_group_members(reg, NULL, &mem, &n) == -EINVAL,
	   "group: not a member (G2), twice, out of range, NULL");
	ok(join(reg, "g", m01, 2, 1, &r[1], &w) == 0 && w == NULL &&
	   ended(&r[0], 0, -1) && ended(&r[1], 0, -1),
	   "group: the last join ends them all (G1)");
	is_int((long long)wr_reg_pending(reg), 0, "group: nothing pending");
	wr_reg_destroy(reg);
}

static void
test_group_leave(void)
{
	struct wr_reg *reg = wr_reg_create(4);
	const int m01[] = {1, 0}, m012[] = {0, 1, 2};
	struct rec r[5] = {{0}};
	const int *mem;
	size_t n;

	join(reg, "g", m01, 2, 0, &r[0], NULL);
	join(reg, "g", m01, 2, 1, &r[1], NULL);
	wr_reg_lut_claim(reg, VAL, "g", "k", 0);
	wr_reg_lut_claim(reg, SVC, "g", "s", 0);
	wr_reg_lut_claim(reg, VAL, "h", "k", 0);
	is_int(wr_reg_group_leave(reg, "g", 0), 0, "group: leave");
	ok(owner(reg, VAL, "g", "k") == -ENOENT &&
	   owner(reg, SVC, "g", "s") == -ENOENT &&
	   owner(reg, VAL, "h", "k") == 0,
	   "group: leaving releases the entries in that group only");
	ok(wr_reg_group_leave(reg, "g", 0) == -EPERM &&
	   wr_reg_group_leave(reg, "g", 2) == -EPERM &&
	   wr_reg_group_leave(reg, "nope", 0) == -ENOENT &&
	   wr_reg_group_leave(reg, "g", 7) == -EINVAL,
	   "group: leave twice, non-member, no group, bad rank");
	ok(wr_reg_group_members(reg, "g", &mem, &n) == 0,
	   "group: it exists while a member is in");
	wr_reg_group_leave(reg, "g", 1);
	is_int(wr_reg_group_members(reg, "g", &mem, &n), -ENOENT,
	       "group: gone when the last member left");
	for (int i = 0; i < 3; i++) {
		join(reg, "g", m012, 3, i, &r[2 + i], NULL);
	}
	ok(ended(&r[2], 0, -1) && ended(&r[3], 0, -1) && ended(&r[4], 0, -1),
	   "group: the name can be joined again, by others too (X8)");
	wr_reg_destroy(reg);
}

static void
test_group_death(void)
{
	struct wr_reg *reg = wr_reg_create(4);
	const int m012[] = {0, 1, 2}, m03[] = {0, 3};
	struct rec r[7] = {{0}};
	const int *mem;
	size_t n;

	join(reg, "d", m012, 3, 0, &r[0], NULL);
	join(reg, "d", m012, 3, 1, &r[1], NULL);
	wr_reg_rank_dead(reg, 2);
	ok(ended(&r[0], WORLD_EPEERDEAD, 2) && ended(&r[1], WORLD_EPEERDEAD, 2),
	   "group death: a dead member fails the pending joins (X2)");
	is_int(wr_reg_group_members(reg, "d", &mem, &n), -ENOENT,
	       "group death: the failed group is gone");
	join(reg, "d", m012, 3, 0, &r[2], NULL);
	ok(ended(&r[2], WORLD_EPEERDEAD, 2) &&
	   wr_reg_group_members(reg, "d", &mem, &n) == -ENOENT,
	   "group death: joining with a dead member fails at once");
	join(reg, "x", (const int[]){2, 3}, 2, 2, &r[3], NULL);
	ok(ended(&r[3], WORLD_EPEERDEAD, 2), "group death: the dead: no join");
	join(reg, "c", m03, 2, 0, &r[4], NULL);
	join(reg, "c", m03, 2, 3, &r[4], NULL);
	wr_reg_rank_dead(reg, 3);
	ok(wr_reg_group_members(reg, "c", &mem, &n) == 0 &&
	   wr_reg_group_leave(reg, "c", 3) == -EPERM,
	   "group death: in a complete group, the dead have left");
	join(reg, "e", (const int[]){0, 1}, 2, 0, &r[5], NULL);
	join(reg, "e", (const int[]){0, 1}, 2, 1, &r[5], NULL);
	wr_reg_group_leave(reg, "e", 1);
	wr_reg_rank_dead(reg, 0);
	ok(wr_reg_group_members(reg, "c", &mem, &n) == -ENOENT &&
	   wr_reg_group_members(reg, "e", &mem, &n) == -ENOENT,
	   "group death: the last member's death ends a group");
	is_int((long long)wr_reg_pending(reg), 0, "group death: none pending");
	wr_reg_destroy(reg);
}

static void
test_group_retry(void)
{
	struct wr_reg *reg = wr_reg_create(4);
	const int m03[] = {0, 3};
	struct wr_reg_wait *w = NULL;
	struct rec r[5] = {{0}};
	const int *mem;
	size_t n;

	join(reg, "r", m03, 2, 0, &r[0], &w);
	wr_reg_cancel(w, -ETIMEDOUT);
	ok(ended(&r[0], -ETIMEDOUT, -1) &&
	   wr_reg_group_members(reg, "r", &mem, &n) == -ENOENT,
	   "group retry: a cancelled join un-joins");
	join(reg, "r", m03, 2, 0, &r[1], NULL);
	wr_reg_group_leave(reg, "r", 0);
	ok(ended(&r[1], -ECANCELED, -1), "group retry: leave ends a join");
	join(reg, "r", m03, 2, 0, &r[2], NULL);
	wr_reg_rank_done(reg, 3);
	wr_reg_rank_done(reg, 3);
	wr_reg_rank_done(reg, 9);
	ok(ended(&r[2], WORLD_EPEERDEAD, 3),
	   "group retry: a goodbye before joining fails the join");
	join(reg, "r", m03, 2, 0, &r[3], NULL);
	ok(ended(&r[3], WORLD_EPEERDEAD, 3), "group retry: ... later joins");
	join(reg, "s", (const int[]){0}, 1, 0, &r[4], &w);
	ok(ended(&r[4], 0, -1) && w == NULL, "group retry: a group of one");
	is_int((long long)wr_reg_pending(reg), 0, "group retry: none pending");
	wr_reg_destroy(reg);
}

int
main(void)
{
	plan(70);
	test_p10();
	test_barrier();
	test_barrier_args();
	test_barrier_grow();
	test_barrier_death();
	test_race();
	test_group();
	test_group_leave();
	test_group_death();
	test_group_retry();
	return done_testing();
}
