/* SPDX-License-Identifier: MIT */
/*
 * collcheck: the members' signatures of a collective, their comparison
 * and its message, and the agreement for the algorithms that do not carry
 * it themselves. See collcheck.h.
 */
#include "collcheck.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shmcoll.h"

_Static_assert(sizeof(struct wr_sig) == 16, "a signature is 16 bytes");
_Static_assert(sizeof(struct wr_check_block) == WR_CHECK_BLOCK, "a block has no padding");

/* Up to this many members, the signatures' table is on the stack. */
#define STACK_MEMBERS 64

void
wr_check_init(struct wr_check *k, enum wr_coll_kind kind, size_t count,
	      enum world_dtype dt, enum world_op op, int root)
{
	/* A barrier has no buffer: neither its count nor its dtype differ. */
	bool moves = kind != WR_COLL_BARRIER;

	memset(k, 0, sizeof(*k));
	k->member = -1;
	k->mine.kind = (uint8_t)kind;
	k->mine.dtype = moves ? (uint8_t)dt : 0;
	k->mine.op = wr_algo_reduces(kind) ? (uint8_t)op : 0;
	k->mine.root = wr_algo_has_root(kind) ? root : 0;
	k->mine.count = moves ? (uint64_t)count : 0;
}

int
wr_check_compare(struct wr_check *k, int size, wr_sig_fn *sig_of, const void *arg)
{
	const struct wr_sig *ref = sig_of(arg, 0);

	for (int q = 1; q < size; q++) {
		const struct wr_sig *s = sig_of(arg, q);

		if (memcmp(s, ref, sizeof(*s)) != 0) {
			k->member = q;
			k->ref = *ref;
			k->theirs = *s;
			return WORLD_EMISMATCH;
		}
	}
	return 0;
}

static const char *
dtype_name(unsigned dt)
{
	static const char *const names[] = {
		"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
		"uint64", "float16", "bfloat16", "float32", "float64",
	};

	return dt < sizeof(names) / sizeof(names[0]) ? names[dt] : "?";
}

static const char *
op_name(unsigned op)
{
	static const char *const names[] = {
		"sum", "prod", "min", "max", "band", "bor", "bxor", "avg",
	};

	return op < sizeof(names) / sizeof(names[0]) ? names[op] : "?";
}

void
wr_check_message(const struct wr_check *k, char *buf, size_t len)
{
	const struct wr_sig *a = &k->theirs, *b = &k->ref;
	int q = k->member;

	if (a->kind != b->kind) {
		const char *x = wr_algo_kind_name(a->kind), *y = wr_algo_kind_name(b->kind);

		snprintf(buf, len, "member %d calls %s where member 0 calls %s", q,
			 x != NULL ? x : "?", y != NULL ? y : "?");
	} else if (a->count != b->count) {
		snprintf(buf, len, "member %d has count %llu where member 0 has %llu", q,
			 (unsigned long long)a->count, (unsigned long long)b->count);
	} else if (a->dtype != b->dtype) {
		snprintf(buf, len, "member %d has dtype %s where member 0 has %s", q,
			 dtype_name(a->dtype), dtype_name(b->dtype));
	} else if (a->op != b->op) {
		snprintf(buf, len, "member %d has op %s where member 0 has %s", q,
			 op_name(a->op), op_name(b->op));
	} else if (a->root != b->root) {
		snprintf(buf, len, "member %d has root %d where member 0 has %d", q,
			 (int)a->root, (int)b->root);
	} else {
		snprintf(buf, len, "member %d runs another algorithm than member 0 "
			 "(WORLD_COLL_ALGO differs)", q);
	}
}

static const struct wr_sig *
table_sig(const void *arg, int member)
{
	return &((const struct wr_check_block *)arg)[member].sig;
}

/* Over messages: an all_gather whose every message is a whole number of
 * blocks whatever the members called, so none can wait for more than is
 * sent; at its end every member has every one. For a power of two,
 * recursive doubling: its pairs wake each other, where Bruck's steps are
 * chains (rank r waits for r + k, which waits for r + 2k), which cost
 * 1.28x instead of 1.12x on a 4 B all_reduce of 8 ranks over tcp on 2
 * cores (collcheck.sh); for other sizes Bruck, lg p steps where recursive
 * doubling's folding takes two more. */
int
wr_check_carry(struct wr_coll_ctx *c, const void *data, size_t len,
	       struct wr_check_block *all)
{
	struct wr_check_block mine = { .sig = c->check->mine };
	bool pow2 = (c->size & (c->size - 1)) == 0;
	int rc;

	if (len > 0) {
		memcpy(mine.data, data, len);
	}
	rc = wr_algo_all_gather(c, &mine, all, sizeof(mine), pow2
				? WR_ALGO_RECURSIVE_DOUBLING : WR_ALGO_BRUCK);
	return rc < 0 ? rc : wr_check_compare(c->check, c->size, table_sig, all);
}

static int
agree_messages(struct wr_coll_ctx *c)
{
	struct wr_check_block here[STACK_MEMBERS];
	struct wr_check_block *all = c->size <= STACK_MEMBERS ? here
		: malloc((size_t)c->size * sizeof(*all));
	int rc;

	if (all == NULL) {
		return -ENOMEM;
	}
	rc = wr_check_carry(c, NULL, 0, all);
	if (all != here) {
		free(all);
	}
	return rc;
}

int
wr_check_agree(struct wr_coll_ctx *c)
{
	if (c->check == NULL) {
		return 0;
	}
	return c->shm != NULL ? wr_shm_check(c) : agree_messages(c);
}
