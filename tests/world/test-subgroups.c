/* SPDX-License-Identifier: MIT */
/*
 * subgroups: collective groups of some of 6 ranks, created by their
 * members only (Machin's K12 inverted: the others never call), K11 in
 * group ranks (a receive from any source in {2, 5} reports the sender's
 * group rank, 1, which maps back to world rank 5), overlapping groups
 * used back to back, two groups of the same members told apart, members
 * that disagree on the list (WORLD_EPROTO, never a hang), and a rank
 * that creates a group it is not in.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "wtap.h"

#define T 60000

static bool
in(const int *list, size_t n, int r)
{
	for (size_t i = 0; i < n; i++) {
		if (list[i] == r) {
			return true;
		}
	}
	return false;
}

/* K11 and K12 inverted: {2, 5} alone; the others do something else. */
static void
pair(struct world *w, int r)
{
	const int two_five[] = { 2, 5 };
	struct world_coll *c = NULL;
	struct world_coll_req *q = NULL;
	int v = r, src = -9, rc = 0;

	if (!in(two_five, 2, r)) {
		check(true, "K12: rank %d, not a member, does not call create", r);
		check(true, "K11: (members only)");
		return;
	}
	rc = world_coll_create(w, two_five, 2, T, &c);
	check(rc == 0 && world_coll_size(c) == 2 && world_coll_rank(c) == (r == 5),
	      "K12: members 2 and 5 create their group alone (%s)", world_strerror(rc));
	if (rc != 0) {
		check(false, "K11: no group");
		return;
	}
	if (r == 5) {
		rc = world_coll_send(c, &v, 1, WORLD_INT32, 0, 9, T);
		check(rc == 0, "K11: world rank 5 sends to group rank 0 (%d)", rc);
	} else {
		rc = world_coll_irecv(c, &v, 1, WORLD_INT32, WORLD_ANY_SOURCE, 9, &q);
		rc = rc == 0 ? world_coll_wait(q, T, &src) : rc;
		world_coll_req_free(q);
		check(rc == 0 && v == 5 && src == 1 && world_coll_world_rank(c, src) == 5,
		      "K11: any source reports group rank 1, which is world rank 5 (rc %d src %d)",
		      rc, src);
	}
	world_coll_destroy(c);
}

/* {0,1,2,3} and {2,3,4,5} share 2 and 3: back to back, interleaved. */
static void
overlapping(struct world *w, int r)
{
	const int lo[] = { 0, 1, 2, 3 }, hi[] = { 2, 3, 4, 5 };
	struct world_coll *a = NULL, *b = NULL;
	int x = r + 1, y = r + 1, rc = 0;

	if (in(lo, 4, r)) {
		rc = world_coll_create(w, lo, 4, T, &a);
	}
	if (rc == 0 && in(hi, 4, r)) {
		rc = world_coll_create(w, hi, 4, T, &b);
	}
	for (int round = 0; rc == 0 && round < 3; round++) {
		if (a != NULL) {
			rc = world_coll_all_reduce(a, &x, 1, WORLD_INT32, WORLD_SUM, T);
		}
		if (rc == 0 && b != NULL) {
			rc = world_coll_all_reduce(b, &y, 1, WORLD_INT32, WORLD_SUM, T);
		}
	}
	/* 1+2+3+4 = 10, three times: 10, 40, 160; 3+4+5+6 = 18: 18, 72, 288. */
	check(rc == 0 && (a == NULL || x == 160) && (b == NULL || y == 288),
	      "overlapping groups, all_reduce back to back (rc %d, %d, %d)", rc, x, y);
	world_coll_destroy(a);
	world_coll_destroy(b);
}

/* The same members twice: two groups, whose messages do not mix. */
static void
same_members(struct world *w, int r)
{
	const int all[] = { 0, 1, 2, 3, 4, 5 };
	struct world_coll *a = NULL, *b = NULL;
	int va = 1, vb = 100, rc;

	rc = world_coll_create(w, all, 6, T, &a);
	rc = rc == 0 ? world_coll_create(w, all, 6, T, &b) : rc;
	if (rc == 0) {
		rc = world_coll_all_reduce(b, &vb, 1, WORLD_INT32, WORLD_SUM, T);
	}
	if (rc == 0) {
		rc = world_coll_all_reduce(a, &va, 1, WORLD_INT32, WORLD_SUM, T);
	}
	check(rc == 0 && va == 6 && vb == 600,
	      "two groups of the same members are two (rc %d, %d, %d)", rc, va, vb);
	world_coll_destroy(b);
	world_coll_destroy(a);
}

/* Ranks 0 and 1 disagree: 0 says {0,1,2}, 1 says {0,1}; 2 does not come. */
static void
disagree(struct world *w, int r)
{
	const int three[] = { 0, 1, 2 }, two[] = { 0, 1 };
	struct world_coll *c = NULL;
	int rc = 0;

	/* Whichever join reaches the registry first, the second sees the clash. */
	if (r == 0) {
		rc = world_coll_create(w, three, 3, T, &c);
	} else if (r == 1) {
		rc = world_coll_create(w, two, 2, T, &c);
	}
	check(r > 1 || (rc == WORLD_EPROTO && c == NULL),
	      "members that disagree on the list get WORLD_EPROTO (%s)", world_strerror(rc));
	world_coll_destroy(c);
}

int
main(void)
{
	struct world *w = NULL;
	struct world_coll *c = (struct world_coll *)&w;
	const int others[] = { 1, 2 };
	int r, rc = world_open(&w);

	if (rc < 0 || world_size(w) != 6) {
		fprintf(stderr, "usage: worldrun -n 6 test-subgroups (%s)\n", world_strerror(rc));
		return 2;
	}
	r = world_rank(w);
	wtap_start(r, 7);
	pair(w, r);
	overlapping(w, r);
	same_members(w, r);
	rc = r == 0 ? world_coll_create(w, others, 2, T, &c) : WORLD_ENOTMEMBER;
	check(rc == WORLD_ENOTMEMBER && (r != 0 || c == NULL),
	      "a rank that is not in the list gets WORLD_ENOTMEMBER");
	disagree(w, r);
	rc = world_barrier(w, "end", T);
	rc = rc == 0 ? world_stop(w, T) : rc;
	check(rc == 0, "world_stop (%s)", world_strerror(rc));
	return wtap_done();
}
