/* SPDX-License-Identifier: MIT */
/*
 * The collectives that combine: all_reduce, reduce and reduce_scatter.
 * Where two ranks exchange and both combine, each puts the lower rank's
 * data on the left; where one rank combines and the result travels on,
 * the order is the tree's or the ring's. Either way each element's final
 * value is computed once (or identically by both partners) and then
 * copied, which is what gives every rank the same bits.
 */
#include "algos.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "reduce.h"
#include "shmcoll.h"
#include "xchg.h"

/* What a reduction combines, and how. */
struct red {
	enum world_dtype dt;
	enum world_op op;
	size_t es;
};

static size_t
zmin(size_t a, size_t b)
{
	return a < b ? a : b;
}

static int
log2_of(int pof2)
{
	int lg = 0;

	while (1 << lg < pof2) {
		lg++;
	}
	return lg;
}

/* @acc = @tmp op @acc if @tmp came from a lower rank, else @acc op @tmp. */
static void
combine(const struct red *rd, void *acc, const void *tmp, size_t count,
	bool tmp_lower)
{
	if (tmp_lower) {
		wr_reduce_rev(rd->op, rd->dt, acc, tmp, count);
	} else {
		wr_reduce(rd->op, rd->dt, acc, tmp, count);
	}
}

/* The first 2*rem ranks pair up: the even one's @count elements go into
 * the odd one's (even's op odd's), and the even one sits out. */
static int
fold_in(struct wr_coll_ctx *c, const struct wr_fold *f, const struct red *rd,
	unsigned char *buf, unsigned char *tmp, size_t count, unsigned step)
{
	int r = c->rank, rc;

	if (r >= 2 * f->rem) {
		return 0;
	}
	if (r % 2 == 0) {
		return wr_xchg_sendrecv(c, r + 1, buf, count * rd->es, 0, NULL,
					0, step);
	}
	rc = wr_xchg_sendrecv(c, 0, NULL, 0, r - 1, tmp, count * rd->es, step);
	if (rc == 0) {
		combine(rd, buf, tmp, count, true);
	}
	return rc;
}

/* The odd ranks of the fold hand their @len-byte result to the even. */
static int
fold_out(struct wr_coll_ctx *c, const struct wr_fold *f, unsigned char *buf,
	 size_t len, unsigned step)
{
	int r = c->rank;

	if (r >= 2 * f->rem) {
		return 0;
	}
	if (r % 2 == 1) {
		return wr_xchg_sendrecv(c, r - 1, buf, len, 0, NULL, 0, step);
	}
	return wr_xchg_sendrecv(c, 0, NULL, 0, r + 1, buf, len, step);
}

/*
 * Reduce-scatter by recursive halving among the newranks of @f: at
 * distance pof2/2 first, the lower partner keeps the lower half of the
 * window, and so on down to distance 1, after which newrank i holds the
 * reduced block i of @b. @tmp: room for half the window. Steps @step0 ..
 * @step0 + lg(pof2) - 1.
 */
static int
halving(struct wr_coll_ctx *c, const struct wr_fold *f,
	const struct wr_blocks *b, const struct red *rd, unsigned char *buf,
	unsigned char *tmp, unsigned step0)
{
	int me = f->newrank, lo = 0, hi = f->pof2;
	unsigned step = step0;

	for (int mask = f->pof2 / 2; mask >= 1; mask /= 2, step++) {
		bool upper = (me & mask) != 0;
		int mid = lo + mask, peer = wr_xchg_fold_rank(f, me ^ mask);
		int klo = upper ? mid : lo, khi = upper ? hi : mid;
		int glo = upper ? lo : mid, ghi = upper ? mid : hi;
		size_t k0 = wr_xchg_block_off(b, klo);
		size_t kn = wr_xchg_block_off(b, khi) - k0;
		size_t g0 = wr_xchg_block_off(b, glo);
		size_t gn = wr_xchg_block_off(b, ghi) - g0;
		int rc = wr_xchg_sendrecv(c, peer, buf + g0 * rd->es,
					  gn * rd->es, peer, tmp, kn * rd->es,
					  step);

		if (rc < 0) {
			return rc;
		}
		combine(rd, buf + k0 * rd->es, tmp, kn, upper);
		lo = klo;
		hi = khi;
	}
	return 0;
}

static int
allreduce_doubling(struct wr_coll_ctx *c, const struct wr_fold *f,
		   const struct red *rd, unsigned char *buf,
		   unsigned char *tmp, size_t count)
{
	size_t len = count * rd->es;
	int lg = log2_of(f->pof2);
	int rc = fold_in(c, f, rd, buf, tmp, count, 0);

	for (int k = 0; k < lg && rc == 0 && f->newrank >= 0; k++) {
		int peer = wr_xchg_fold_rank(f, f->newrank ^ (1 << k));

		rc = wr_xchg_sendrecv(c, peer, buf, len, peer, tmp, len,
				      (unsigned)k + 1);
		/* Both partners run the very same kernel on the same operands
		 * (the lower one's as inout): the two operand orders are two
		 * functions, whose code may pick a different NaN of two. */
		if (rc == 0 && peer < c->rank) {
			wr_reduce(rd->op, rd->dt, tmp, buf, count);
			memcpy(buf, tmp, len);
		} else if (rc == 0) {
			wr_reduce(rd->op, rd->dt, buf, tmp, count);
		}
	}
	return rc == 0 ? fold_out(c, f, buf, len, (unsigned)lg + 1) : rc;
}

/* Rabenseifner: fold, reduce-scatter by halving, allgather by doubling,
 * unfold. */
static int
allreduce_rabenseifner(struct wr_coll_ctx *c, const struct wr_fold *f,
		       const struct red *rd, unsigned char *buf,
		       unsigned char *tmp, size_t count)
{
	struct wr_blocks b = {.n = f->pof2, .total = count};
	int lg = log2_of(f->pof2);
	int rc = fold_in(c, f, rd, buf, tmp, count, 0);

	if (rc == 0 && f->newrank >= 0) {
		rc = halving(c, f, &b, rd, buf, tmp, 1);
	}
	if (rc == 0 && f->newrank >= 0) {
		rc = wr_xchg_doubling_gather(c, f, &b, rd->es, buf,
					     (unsigned)lg + 1);
	}
	if (rc < 0) {
		return rc;
	}
	return fold_out(c, f, buf, count * rd->es, 2 * (unsigned)lg + 1);
}

/*
 * One ring reduce-scatter and allgather of @count elements cut into size
 * blocks: block j is summed up the ring from rank j to rank j - 1 (each
 * partial on the left), which then owns it; then the owners' blocks go
 * round. Steps @step0 .. @step0 + 2(size-1) - 1.
 */
static int
ring_chunk(struct wr_coll_ctx *c, const struct red *rd, unsigned char *buf,
	   unsigned char *tmp, size_t count, unsigned step0)
{
	int p = c->size, r = c->rank, next = (r + 1) % p, prev = (r - 1 + p) % p;
	struct wr_blocks b = {.n = p, .total = count};
	unsigned step = step0;
	int rc = 0;

	for (int s = 0; s < 2 * (p - 1) && rc == 0; s++, step++) {
		bool rs = s < p - 1;
		int t = rs ? s : s - (p - 1);
		int sb = ((rs ? r : r + 1) - t + 2 * p) % p;
		int rb = ((rs ? r - 1 : r) - t + 2 * p) % p;
		size_t s0 = wr_xchg_block_off(&b, sb), r0 = wr_xchg_block_off(&b, rb);
		size_t sn = wr_xchg_block_off(&b, sb + 1) - s0;
		size_t rn = wr_xchg_block_off(&b, rb + 1) - r0;
		unsigned char *dst = rs ? tmp : buf + r0 * rd->es;

		rc = wr_xchg_sendrecv(c, next, buf + s0 * rd->es, sn * rd->es,
				      prev, dst, rn * rd->es, step);
		if (rc == 0 && rs) {
			combine(rd, buf + r0 * rd->es, tmp, rn, true);
		}
	}
	return rc;
}

/* The elements of one ring segment, at least one. */
static size_t
segment_elems(const struct wr_coll_ctx *c, size_t es)
{
	size_t seg = c->segment > 0 ? c->segment : WR_COLL_SEGMENT;

	return seg / es > 0 ? seg / es : 1;
}

/* The ring in chunks of size segments, so that scratch is one segment. */
static int
allreduce_ring(struct wr_coll_ctx *c, const struct red *rd, unsigned char *buf,
	       size_t count)
{
	size_t seg = segment_elems(c, rd->es);
	size_t chunk = seg * (size_t)c->size;
	unsigned step = 0;
	bool owned;
	unsigned char *tmp = wr_xchg_scratch(c, zmin(seg, count) * rd->es, true,
					     &owned);
	int rc = 0;

	if (tmp == NULL) {
		return -ENOMEM;
	}
	for (size_t off = 0; off < count && rc == 0; off += chunk) {
		rc = ring_chunk(c, rd, buf + off * rd->es, tmp,
				zmin(chunk, count - off), step);
		step += 2 * (unsigned)(c->size - 1);
	}
	wr_xchg_scratch_free(tmp, owned);
	return rc;
}

/* The two that fold: scratch for a whole vector, which the fold needs. */
static int
allreduce_folded(struct wr_coll_ctx *c, const struct red *rd,
		 unsigned char *buf, size_t count, enum wr_algo a)
{
	struct wr_fold f;
	bool owned;
	unsigned char *tmp = wr_xchg_scratch(c, count * rd->es, true, &owned);
	int rc;

	if (tmp == NULL) {
		return -ENOMEM;
	}
	wr_xchg_fold_init(&f, c->rank, c->size);
	if (a == WR_ALGO_RABENSEIFNER) {
		rc = allreduce_rabenseifner(c, &f, rd, buf, tmp, count);
	} else {
		rc = allreduce_doubling(c, &f, rd, buf, tmp, count);
	}
	wr_xchg_scratch_free(tmp, owned);
	return rc;
}

int
wr_algo_all_reduce(struct wr_coll_ctx *c, void *buf, size_t count,
		   enum world_dtype dt, enum world_op op, enum wr_algo a)
{
	struct red rd = {dt, op, wr_dtype_size(dt)};
	int rc;

	if (a == WR_ALGO_AUTO) {
		a = wr_algo_pick(WR_COLL_ALL_REDUCE, c->size, count * rd.es,
				 wr_algo_flags(c), NULL);
	}
	if (!wr_algo_valid(WR_COLL_ALL_REDUCE, a) || (a == WR_ALGO_SHM && c->shm == NULL)) {
		return -EINVAL;
	}
	if (count == 0) {
		return 0;
	}
	if (a == WR_ALGO_SHM) {
		rc = wr_shm_all_reduce(c, buf, count, dt, op);
	} else if (a == WR_ALGO_RING) {
		rc = allreduce_ring(c, &rd, buf, count);
	} else {
		rc = allreduce_folded(c, &rd, buf, count, a);
	}
	if (rc == 0) {
		wr_reduce_finish(op, dt, buf, count, c->size);
	}
	return rc;
}

static int
rel(int rank, int root, int size)
{
	return (rank - root + size) % size;
}

/*
 * Binomial reduce: relative rank v takes in the subtrees of v+1, v+2,
 * v+4, ... in that order, each on the right of what it has, and sends the
 * result to its parent; so the root computes the elements left to right
 * in relative rank order. A leaf sends @buf itself; an inner rank other
 * than the root works on a copy, since its @buf must stay as it was.
 */
static int
reduce_binomial(struct wr_coll_ctx *c, const struct red *rd,
		unsigned char *buf, size_t count, int root)
{
	int p = c->size, vr = rel(c->rank, root, p), mask = 1, rc = 0;
	size_t len = count * rd->es;
	bool owned = false, leaf = vr % 2 == 1 || vr + 1 >= p;
	unsigned char *acc = buf, *tmp = NULL;

	if (!leaf) {
		tmp = wr_xchg_scratch(c, (vr == 0 ? 1 : 2) * len, true, &owned);
		if (tmp == NULL) {
			return -ENOMEM;
		}
		if (vr != 0) {
			acc = tmp + len;
			memcpy(acc, buf, len);
		}
	}
	for (; mask < p && (vr & mask) == 0 && rc == 0; mask <<= 1) {
		if (vr + mask < p) {
			rc = wr_xchg_sendrecv(c, 0, NULL, 0,
					      (vr + mask + root) % p, tmp, len,
					      0);
			if (rc == 0) {
				combine(rd, acc, tmp, count, false);
			}
		}
	}
	if (rc == 0 && vr != 0) {
		rc = wr_xchg_sendrecv(c, (vr - mask + root) % p, acc, len, 0,
				      NULL, 0, 0);
	}
	wr_xchg_scratch_free(tmp, owned);
	return rc;
}

/* Each newrank sends its reduced block straight to the root, which posts
 * a receive for every block but its own. */
static int
gather_blocks(struct wr_coll_ctx *c, const struct wr_fold *f,
	      const struct wr_blocks *b, size_t es, unsigned char *buf,
	      int root, unsigned step)
{
	struct wr_coll_xfer *xs;
	struct wr_xchg x;
	size_t lo;
	int rc;

	if (c->rank != root) {
		if (f->newrank < 0) {
			return 0;
		}
		lo = wr_xchg_block_off(b, f->newrank);
		return wr_xchg_sendrecv(
			c, root, buf + lo * es,
			(wr_xchg_block_off(b, f->newrank + 1) - lo) * es, 0,
			NULL, 0, step);
	}
	xs = malloc((size_t)f->pof2 * WR_XCHG_PIECES * sizeof(*xs));
	if (xs == NULL) {
		return -ENOMEM;
	}
	wr_xchg_init(&x, c, xs, (size_t)f->pof2 * WR_XCHG_PIECES);
	for (int i = 0; i < f->pof2; i++) {
		if (i != f->newrank) {
			lo = wr_xchg_block_off(b, i);
			wr_xchg_recv(&x, wr_xchg_fold_rank(f, i), step,
				     buf + lo * es,
				     (wr_xchg_block_off(b, i + 1) - lo) * es);
		}
	}
	rc = wr_xchg_wait(&x);
	free(xs);
	return rc;
}

/* Rabenseifner's reduce: fold, reduce-scatter by halving, then gather the
 * blocks at the root. The root works in @buf, the others on a copy. */
static int
reduce_scatter_gather(struct wr_coll_ctx *c, const struct red *rd,
		      unsigned char *buf, size_t count, int root)
{
	size_t len = count * rd->es;
	bool is_root = c->rank == root, owned;
	unsigned char *tmp = wr_xchg_scratch(c, (is_root ? 1 : 2) * len, true,
					     &owned);
	unsigned char *work = buf;
	struct wr_fold f;
	struct wr_blocks b;
	int rc;

	if (tmp == NULL) {
		return -ENOMEM;
	}
	if (!is_root) {
		work = tmp + len;
		memcpy(work, buf, len);
	}
	wr_xchg_fold_init(&f, c->rank, c->size);
	b = (struct wr_blocks){.n = f.pof2, .total = count};
	rc = fold_in(c, &f, rd, work, tmp, count, 0);
	if (rc == 0 && f.newrank >= 0) {
		rc = halving(c, &f, &b, rd, work, tmp, 1);
	}
	if (rc == 0) {
		rc = gather_blocks(c, &f, &b, rd->es, work, root,
				   (unsigned)log2_of(f.pof2) + 1);
	}
	wr_xchg_scratch_free(tmp, owned);
	return rc;
}

int
wr_algo_reduce(struct wr_coll_ctx *c, void *buf, size_t count,
	       enum world_dtype dt, enum world_op op, int root, enum wr_algo a)
{
	struct red rd = {dt, op, wr_dtype_size(dt)};
	int rc;

	if (a == WR_ALGO_AUTO) {
		a = wr_algo_pick(WR_COLL_REDUCE, c->size, count * rd.es,
				 wr_algo_flags(c), NULL);
	}
	if (!wr_algo_valid(WR_COLL_REDUCE, a)) {
		return -EINVAL;
	}
	if (count == 0) {
		return 0;
	}
	if (a == WR_ALGO_REDUCE_SCATTER_GATHER) {
		rc = reduce_scatter_gather(c, &rd, buf, count, root);
	} else {
		rc = reduce_binomial(c, &rd, buf, count, root);
	}
	if (rc == 0 && c->rank == root) {
		wr_reduce_finish(op, dt, buf, count, c->size);
	}
	return rc;
}

/*
 * Ring reduce-scatter, a segment of every block at a time: in step s rank
 * r passes on its partial of block r - s - 1 and takes in the partial of
 * block r - s - 2 from the left, which goes on the left of its own data;
 * the last step's block is r's own, which lands in @out.
 */
static int
rs_ring(struct wr_coll_ctx *c, const struct red *rd, const unsigned char *in,
	unsigned char *out, size_t count)
{
	int p = c->size, r = c->rank, next = (r + 1) % p, prev = (r - 1 + p) % p;
	size_t seg = zmin(segment_elems(c, rd->es), count);
	size_t blk = count * rd->es;
	bool owned;
	unsigned char *tmp = wr_xchg_scratch(c, 2 * seg * rd->es, true, &owned);
	unsigned char *acc;
	unsigned step = 0;
	int rc = 0;

	if (tmp == NULL) {
		return -ENOMEM;
	}
	acc = tmp + seg * rd->es;
	for (size_t off = 0; off < count && rc == 0; off += seg) {
		size_t n = zmin(seg, count - off), len = n * rd->es;
		const unsigned char *mine = in + off * rd->es;

		for (int s = 0; s < p - 1 && rc == 0; s++, step++) {
			int b = (r - s - 2 + 2 * p) % p;
			const unsigned char *src =
				s == 0 ? mine + (size_t)prev * blk : acc;
			unsigned char *dst = s == p - 2 ? out + off * rd->es : acc;

			rc = wr_xchg_sendrecv(c, next, src, len, prev, tmp, len,
					      step);
			if (rc == 0) {
				memcpy(dst, mine + (size_t)b * blk, len);
				combine(rd, dst, tmp, n, true);
			}
		}
	}
	wr_xchg_scratch_free(tmp, owned);
	return rc;
}

/* Recursive halving over the blocks of the fold's newranks (an odd rank
 * of the fold stands for its even neighbour too, and hands it its block
 * at the end). */
static int
rs_halving(struct wr_coll_ctx *c, const struct red *rd,
	   const unsigned char *in, unsigned char *out, size_t count)
{
	int r = c->rank;
	size_t all = (size_t)c->size * count * rd->es, blk = count * rd->es;
	bool owned;
	unsigned char *work = wr_xchg_scratch(c, 2 * all, true, &owned);
	struct wr_fold f;
	struct wr_blocks b;
	int rc, lg;

	if (work == NULL) {
		return -ENOMEM;
	}
	memcpy(work, in, all);
	wr_xchg_fold_init(&f, r, c->size);
	lg = log2_of(f.pof2);
	b = (struct wr_blocks){.n = f.pof2, .rem = f.rem, .unit = count,
			       .per_rank = true};
	rc = fold_in(c, &f, rd, work, work + all, (size_t)c->size * count, 0);
	if (rc == 0 && f.newrank >= 0) {
		rc = halving(c, &f, &b, rd, work, work + all, 1);
	}
	if (rc == 0 && r < 2 * f.rem && r % 2 == 0) {
		rc = wr_xchg_sendrecv(c, 0, NULL, 0, r + 1, out, blk,
				      (unsigned)lg + 1);
	} else if (rc == 0) {
		if (r < 2 * f.rem) {
			rc = wr_xchg_sendrecv(c, r - 1, work + (size_t)(r - 1) * blk,
					      blk, 0, NULL, 0, (unsigned)lg + 1);
		}
		memcpy(out, work + (size_t)r * blk, blk);
	}
	wr_xchg_scratch_free(work, owned);
	return rc;
}

/* The fallback: reduce everything at rank 0, then scatter it. The copy
 * is malloc'd, not the scratch hook's, which reduce and scatter use. */
static int
rs_reduce_then_scatter(struct wr_coll_ctx *c, const struct red *rd,
		       const unsigned char *in, unsigned char *out,
		       size_t count)
{
	size_t all = (size_t)c->size * count * rd->es;
	unsigned char *tmp = malloc(all);
	int rc;

	if (tmp == NULL) {
		return -ENOMEM;
	}
	memcpy(tmp, in, all);
	rc = reduce_binomial(c, rd, tmp, (size_t)c->size * count, 0);
	if (rc == 0) {
		rc = wr_algo_scatter(c, tmp, out, count * rd->es, 0,
				     WR_ALGO_AUTO);
	}
	free(tmp);
	return rc;
}

int
wr_algo_reduce_scatter(struct wr_coll_ctx *c, const void *in, void *out,
		       size_t count, enum world_dtype dt, enum world_op op,
		       enum wr_algo a)
{
	struct red rd = {dt, op, wr_dtype_size(dt)};
	int rc;

	if (a == WR_ALGO_AUTO) {
		a = wr_algo_pick(WR_COLL_REDUCE_SCATTER, c->size, count * rd.es,
				 wr_algo_flags(c), NULL);
	}
	if (!wr_algo_valid(WR_COLL_REDUCE_SCATTER, a)) {
		return -EINVAL;
	}
	if (count == 0) {
		return 0;
	}
	if (c->size == 1) {
		memcpy(out, in, count * rd.es);
		rc = 0;
	} else if (a == WR_ALGO_RING) {
		rc = rs_ring(c, &rd, in, out, count);
	} else if (a == WR_ALGO_RECURSIVE_HALVING) {
		rc = rs_halving(c, &rd, in, out, count);
	} else {
		rc = rs_reduce_then_scatter(c, &rd, in, out, count);
	}
	if (rc == 0) {
		wr_reduce_finish(op, dt, out, count, c->size);
	}
	return rc;
}
