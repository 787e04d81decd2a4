/* SPDX-License-Identifier: MIT */
/*
 * algos: libworld's collective algorithms over point-to-point messages
 * (p2p.h), for any group size, and the choice among them by size and load
 * (fabric.md §8) or by WORLD_COLL_ALGO. Reductions combine (lower group
 * rank's data) op (higher's), or in ring order for the rings, and each
 * element's final value is computed by one rank and copied to the others,
 * so every rank ends with the same bits. Arguments are the caller's to
 * check (dtype/op pairs: wr_reduce_check), except the algorithm: one that
 * the collective does not have fails with -EINVAL.
 */
#ifndef WR_ALGOS_H
#define WR_ALGOS_H

#include <stdbool.h>
#include <stddef.h>

#include "p2p.h"
#include "world.h"

enum wr_algo {
	WR_ALGO_AUTO = 0,
	WR_ALGO_RECURSIVE_DOUBLING,
	WR_ALGO_RABENSEIFNER,
	WR_ALGO_RING,
	WR_ALGO_BINOMIAL,
	WR_ALGO_SCATTER_ALLGATHER,
	WR_ALGO_DISSEMINATION,
	WR_ALGO_BRUCK,
	WR_ALGO_LINEAR,
	WR_ALGO_PAIRWISE,
	WR_ALGO_REDUCE_SCATTER_GATHER,
	WR_ALGO_RECURSIVE_HALVING,
	WR_ALGO_REDUCE_THEN_SCATTER,
	WR_ALGO_SHM,
	WR_ALGO_NALGOS,
};

enum wr_coll_kind {
	WR_COLL_BARRIER,
	WR_COLL_BROADCAST,
	WR_COLL_ALL_REDUCE,
	WR_COLL_REDUCE,
	WR_COLL_ALL_GATHER,
	WR_COLL_GATHER,
	WR_COLL_SCATTER,
	WR_COLL_REDUCE_SCATTER,
	WR_COLL_ALL_TO_ALL,
	WR_COLL_NKINDS,
};

/* "recursive_doubling", "ring", ... ("auto"; NULL for a bad value). */
const char *wr_algo_name(enum wr_algo a);
/* "all_reduce", "broadcast", ... (NULL for a bad value). */
const char *wr_algo_kind_name(enum wr_coll_kind k);
/* Whether collective @k takes a root; whether it takes an op. */
bool wr_algo_has_root(enum wr_coll_kind k);
bool wr_algo_reduces(enum wr_coll_kind k);
/* Whether collective @k has algorithm @a (every one has AUTO). */
bool wr_algo_valid(enum wr_coll_kind k, enum wr_algo a);

/*
 * Parse WORLD_COLL_ALGO: comma-separated items, each "kind=algorithm"
 * (e.g. "all_reduce=ring,broadcast=binomial") or a bare algorithm, which
 * applies to every kind that has it ("ring"); "auto" is an algorithm too,
 * and later items override earlier ones. NULL or "" is all AUTO. 0, or
 * -EINVAL for an unknown name, an algorithm the kind does not have, or a
 * bare one that no kind has; @forced is written only on success.
 */
int wr_algo_parse(const char *spec, enum wr_algo forced[WR_COLL_NKINDS]);

/* What wr_algo_pick() knows of the group: more local ranks than cores,
 * and a shared area (shmcoll.h). */
#define WR_PICK_OVER 1u
#define WR_PICK_SHM 2u

static inline unsigned
wr_pick_flags(bool oversubscribed, bool shm)
{
	return (oversubscribed ? WR_PICK_OVER : 0) | (shm ? WR_PICK_SHM : 0);
}

static inline unsigned
wr_algo_flags(const struct wr_coll_ctx *c)
{
	return wr_pick_flags(c->oversubscribed, c->shm != NULL);
}

/*
 * The algorithm for collective @k in a group of @size: forced[k] if that
 * is not AUTO (@forced may be NULL) and can run (shm only with
 * WR_PICK_SHM), else by the thresholds of fabric.md §8. @bytes is the
 * message: per rank for broadcast, all_reduce and reduce (the whole
 * vector), one block for all_gather, gather, scatter, reduce_scatter (a
 * rank's share) and all_to_all; ignored for barrier. @flags: WR_PICK_*.
 */
enum wr_algo wr_algo_pick(enum wr_coll_kind k, int size, size_t bytes,
			  unsigned flags,
			  const enum wr_algo forced[WR_COLL_NKINDS]);

/*
 * The collectives. Every rank of the group calls the same one with the
 * same sizes, root, dtype, op and algorithm. They return 0 or a negative
 * code: the backend's, -ENOMEM, or -EINVAL for an algorithm the
 * collective does not have (or shm, where the context has no area). @a
 * AUTO picks by size (wr_algo_pick, nothing forced). Input and output
 * buffers must not overlap unless said.
 */
int wr_algo_barrier(struct wr_coll_ctx *c, enum wr_algo a);
int wr_algo_broadcast(struct wr_coll_ctx *c, void *buf, size_t bytes,
		      int root, enum wr_algo a);
/* In place; WORLD_AVG divides by the group size at the end. */
int wr_algo_all_reduce(struct wr_coll_ctx *c, void *buf, size_t count,
		       enum world_dtype dt, enum world_op op, enum wr_algo a);
/* The result lands in @buf on @root; the others' @buf is left as it was. */
int wr_algo_reduce(struct wr_coll_ctx *c, void *buf, size_t count,
		   enum world_dtype dt, enum world_op op, int root,
		   enum wr_algo a);
/* @out: size * @bytes, block i from rank i; @in may be out + rank*bytes. */
int wr_algo_all_gather(struct wr_coll_ctx *c, const void *in, void *out,
		       size_t bytes, enum wr_algo a);
/* @out (size * @bytes) only on @root; the others may pass NULL. */
int wr_algo_gather(struct wr_coll_ctx *c, const void *in, void *out,
		   size_t bytes, int root, enum wr_algo a);
/* @in (size * @bytes) only on @root; the others may pass NULL. */
int wr_algo_scatter(struct wr_coll_ctx *c, const void *in, void *out,
		    size_t bytes, int root, enum wr_algo a);
/* @in: size * @count elements; @out: the @count of block rank, reduced. */
int wr_algo_reduce_scatter(struct wr_coll_ctx *c, const void *in, void *out,
			   size_t count, enum world_dtype dt,
			   enum world_op op, enum wr_algo a);
/* Block j of @in (@bytes each) goes to rank j; block i of @out came from
 * rank i. */
int wr_algo_all_to_all(struct wr_coll_ctx *c, const void *in, void *out,
		       size_t bytes, enum wr_algo a);

#endif
