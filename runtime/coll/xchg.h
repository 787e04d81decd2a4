/* SPDX-License-Identifier: MIT */
/*
 * xchg: the pieces the collective algorithms are built from: a batch of
 * posts waited for together (receives posted before sends), scratch
 * memory, the fold that turns any group into a power of two, and the
 * recursive-doubling gather of blocks that several algorithms end with.
 * It knows nothing of dtypes or reductions.
 */
#ifndef WR_XCHG_H
#define WR_XCHG_H

#include "p2p.h"

/* Up to @cap posts; the first failure sticks and skips the later posts.
 * A message over the context's eager length but at most WR_XCHG_PIECES
 * times it goes as that many eager pieces, in order (a rendezvous costs
 * more than the copies it saves at these sizes; both ends cut the same
 * pieces): each message may take WR_XCHG_PIECES posts. */
#define WR_XCHG_PIECES 4

struct wr_xchg {
	struct wr_coll_ctx *c;
	struct wr_coll_xfer *xs;
	size_t n, cap;
	int err;
};

void wr_xchg_init(struct wr_xchg *x, struct wr_coll_ctx *c,
		  struct wr_coll_xfer *xs, size_t cap);
/* Post a receive or a send; one of 0 bytes is not posted at all (both
 * ends compute the same length, so both skip it). */
void wr_xchg_recv(struct wr_xchg *x, int peer, unsigned step, void *buf,
		  size_t len);
void wr_xchg_send(struct wr_xchg *x, int peer, unsigned step,
		  const void *buf, size_t len);
/* Wait for everything posted: 0 or the first error. The batch is empty
 * afterwards and can be used again. */
int wr_xchg_wait(struct wr_xchg *x);
/* One step: receive @rlen bytes from @src while sending @slen to @dst. */
int wr_xchg_sendrecv(struct wr_coll_ctx *c, int dst, const void *sbuf,
		     size_t slen, int src, void *rbuf, size_t rlen,
		     unsigned step);

/* @len bytes from the group's scratch hook, else malloc'd (*owned): NULL
 * when out of memory. An algorithm that calls another one must not hold
 * the hook's buffer across the call (the callee may get the same one):
 * it mallocs instead, with @hook false. */
void *wr_xchg_scratch(struct wr_coll_ctx *c, size_t len, bool hook,
		      bool *owned);
void wr_xchg_scratch_free(void *p, bool owned);

/*
 * The fold of a group of size p into pof2, the largest power of two <= p:
 * the first 2*rem ranks (rem = p - pof2) pair up, the even one of each
 * pair hands its data to the odd one and sits out (newrank -1); the odd
 * rank 2i+1 becomes newrank i, and rank r >= 2*rem newrank r - rem. The
 * mapping keeps the order of ranks.
 */
struct wr_fold {
	int pof2, rem, newrank;
};

void wr_xchg_fold_init(struct wr_fold *f, int rank, int size);
/* The group rank of @newrank. */
int wr_xchg_fold_rank(const struct wr_fold *f, int newrank);

/*
 * How a buffer is cut into one block per newrank of a fold: @total units
 * split evenly (the first total % n blocks one unit longer), or, with
 * @per_rank, block i holding @unit units for each group rank that newrank
 * i stands for (ranks 2i and 2i+1, or i + rem).
 */
struct wr_blocks {
	int n, rem;
	size_t total, unit;
	bool per_rank;
};

/* Where block @i starts, in units; block n starts at the end. */
size_t wr_xchg_block_off(const struct wr_blocks *b, int i);

/* Recursive doubling among the newranks of @f, each of which holds its
 * own block (of @b, in units of @scale bytes) of @buf: afterwards every
 * one holds them all. Steps @step0 .. @step0 + lg(pof2) - 1. */
int wr_xchg_doubling_gather(struct wr_coll_ctx *c, const struct wr_fold *f,
			    const struct wr_blocks *b, size_t scale,
			    unsigned char *buf, unsigned step0);

#endif
