/* SPDX-License-Identifier: MIT */
/*
 * collcheck: whether the members of a group called the same collective
 * with the same count, dtype, op and root, and the words that say how
 * they did not. Each member's signature is compared by every member, so
 * all reach the same verdict: through the group's shared area at the
 * first synchronisation of the operation (shmcoll.c), or by an all_gather
 * of the signatures before the algorithm's first message. It does not
 * check a member's own arguments (collops.c does).
 */
#ifndef WR_COLLCHECK_H
#define WR_COLLCHECK_H

#include <stddef.h>
#include <stdint.h>

#include "algos.h"
#include "p2p.h"

/* What a member says of one collective, 16 bytes, the same on every
 * member when they agree: the fields the kind does not take are 0;
 * @carried is 1 when the operation's data travels with the agreement
 * (wr_check_carry()). */
struct wr_sig {
	uint8_t kind, dtype, op, carried;
	int32_t root;
	uint64_t count;
};

struct wr_check {
	struct wr_sig mine;
	/* The first member whose signature differs from member 0's, or -1;
	 * then member 0's and its. */
	int member;
	struct wr_sig ref, theirs;
};

void wr_check_init(struct wr_check *k, enum wr_coll_kind kind, size_t count,
		   enum world_dtype dt, enum world_op op, int root);

/* Compare the signatures of members 1 .. @size - 1 with member 0's, as
 * @sig_of(@arg, member) gives them: 0, or WORLD_EMISMATCH with the first
 * that differs in @k. */
typedef const struct wr_sig *wr_sig_fn(const void *arg, int member);
int wr_check_compare(struct wr_check *k, int size, wr_sig_fn *sig_of,
		     const void *arg);

/* "member 1 has count 3 where member 0 has 4", for a mismatch in @k. */
void wr_check_message(const struct wr_check *k, char *buf, size_t len);

/*
 * Every member's signature compared before an algorithm runs, for those
 * that do not compare them themselves: one synchronisation of the shared
 * area, or else an all_gather of the signatures over messages of 16
 * bytes, which are as long on every member whatever it called. 0 or
 * WORLD_EMISMATCH, the same on every member, or the backend's error.
 */
int wr_check_agree(struct wr_coll_ctx *c);

/*
 * Over messages, each member's signature travels in a block of
 * WR_CHECK_BLOCK bytes, whatever the operation, with room for
 * WR_CHECK_CARRY bytes of its data: an operation whose data fits is done
 * by its agreement alone, one exchange instead of two (collops.c).
 */
#define WR_CHECK_BLOCK 64
#define WR_CHECK_CARRY (WR_CHECK_BLOCK - sizeof(struct wr_sig))
struct wr_check_block {
	struct wr_sig sig;
	unsigned char data[WR_CHECK_CARRY];
};

/* The agreement over messages, with @len bytes of @data (at most
 * WR_CHECK_CARRY) in this member's block: every member's block in
 * @all[size]. 0 or WORLD_EMISMATCH, the same on every member, or the
 * backend's error. */
int wr_check_carry(struct wr_coll_ctx *c, const void *data, size_t len,
		   struct wr_check_block *all);

#endif
