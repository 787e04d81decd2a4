/* SPDX-License-Identifier: MIT */
/*
 * The collectives that move data without combining it: barrier,
 * broadcast, all_gather, gather, scatter and all_to_all. Trees are rooted
 * at 0 in relative ranks ((rank - root) mod size), so any root works.
 */
#include "algos.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shmcoll.h"
#include "xchg.h"

/* A binomial tree has at most one child per bit of a group rank, which
 * is below 2^20 (the transport's source bits), and each message to one
 * may take WR_XCHG_PIECES posts. */
#define MAX_CHILDREN 20
#define MAX_POSTS (MAX_CHILDREN * WR_XCHG_PIECES)

static int
rel(int rank, int root, int size)
{
	return (rank - root + size) % size;
}

static int
real(int vr, int root, int size)
{
	return (vr + root) % size;
}

static int
imin(int a, int b)
{
	return a < b ? a : b;
}

/* The span of relative rank @vr's subtree in a binomial tree: its lowest
 * set bit, or for the root the smallest power of two >= @size. Its
 * parent is vr - span, its children vr + m for the powers of two m below
 * the span (those < size). */
static int
tree_span(int vr, int size)
{
	int m = 1;

	while (m < size && (vr & m) == 0) {
		m <<= 1;
	}
	return m;
}

/* Where relative rank @v's piece starts when pieces are @unit bytes, all
 * but the last few perhaps cut short by @limit. */
static size_t
piece(int v, size_t unit, size_t limit)
{
	size_t off = (size_t)v * unit;

	return off < limit ? off : limit;
}

/*
 * Binomial scatter: @mine holds the pieces of this rank's subtree, its own
 * first; a rank receives them from its parent, then passes its children
 * theirs. On the root, @mine holds all the pieces.
 */
static int
tree_scatter(struct wr_coll_ctx *c, int root, unsigned char *mine,
	     size_t unit, size_t limit, unsigned step)
{
	int p = c->size, vr = rel(c->rank, root, p), span = tree_span(vr, p);
	size_t base = piece(vr, unit, limit);
	struct wr_coll_xfer xs[MAX_POSTS];
	struct wr_xchg x;
	int rc;

	if (vr != 0) {
		size_t end = piece(imin(vr + span, p), unit, limit);

		rc = wr_xchg_sendrecv(c, 0, NULL, 0, real(vr - span, root, p),
				      mine, end - base, step);
		if (rc < 0) {
			return rc;
		}
	}
	wr_xchg_init(&x, c, xs, MAX_POSTS);
	for (int m = span / 2; m >= 1; m /= 2) {
		if (vr + m < p) {
			size_t lo = piece(vr + m, unit, limit);
			size_t hi = piece(imin(vr + 2 * m, p), unit, limit);

			wr_xchg_send(&x, real(vr + m, root, p), step,
				     mine + (lo - base), hi - lo);
		}
	}
	return wr_xchg_wait(&x);
}

/* Binomial gather, the reverse: the children's pieces come in, then the
 * whole subtree goes up to the parent. */
static int
tree_gather(struct wr_coll_ctx *c, int root, unsigned char *mine,
	    size_t unit, size_t limit, unsigned step)
{
	int p = c->size, vr = rel(c->rank, root, p), span = tree_span(vr, p);
	size_t base = piece(vr, unit, limit);
	struct wr_coll_xfer xs[MAX_POSTS];
	struct wr_xchg x;
	int rc;

	wr_xchg_init(&x, c, xs, MAX_POSTS);
	for (int m = span / 2; m >= 1; m /= 2) {
		if (vr + m < p) {
			size_t lo = piece(vr + m, unit, limit);
			size_t hi = piece(imin(vr + 2 * m, p), unit, limit);

			wr_xchg_recv(&x, real(vr + m, root, p), step,
				     mine + (lo - base), hi - lo);
		}
	}
	rc = wr_xchg_wait(&x);
	if (rc < 0 || vr == 0) {
		return rc;
	}
	return wr_xchg_sendrecv(c, real(vr - span, root, p), mine,
				piece(imin(vr + span, p), unit, limit) - base,
				0, NULL, 0, step);
}

static int
barrier_dissemination(struct wr_coll_ctx *c)
{
	unsigned char token = 0, sink;
	int p = c->size, r = c->rank;
	unsigned step = 0;

	for (int k = 1; k < p; k <<= 1, step++) {
		int rc = wr_xchg_sendrecv(c, (r + k) % p, &token, 1,
					  (r - k + p) % p, &sink, 1, step);

		if (rc < 0) {
			return rc;
		}
	}
	return 0;
}

int
wr_algo_barrier(struct wr_coll_ctx *c, enum wr_algo a)
{
	if (a == WR_ALGO_AUTO) {
		a = wr_algo_pick(WR_COLL_BARRIER, c->size, 0, wr_algo_flags(c),
				 NULL);
	}
	if (!wr_algo_valid(WR_COLL_BARRIER, a) || (a == WR_ALGO_SHM && c->shm == NULL)) {
		return -EINVAL;
	}
	return a == WR_ALGO_SHM ? wr_shm_barrier(c) : barrier_dissemination(c);
}

static int
bcast_binomial(struct wr_coll_ctx *c, unsigned char *buf, size_t bytes,
	       int root)
{
	int p = c->size, vr = rel(c->rank, root, p), span = tree_span(vr, p);
	struct wr_coll_xfer xs[MAX_POSTS];
	struct wr_xchg x;
	int rc;

	if (vr != 0) {
		rc = wr_xchg_sendrecv(c, 0, NULL, 0, real(vr - span, root, p),
				      buf, bytes, 0);
		if (rc < 0) {
			return rc;
		}
	}
	wr_xchg_init(&x, c, xs, MAX_POSTS);
	for (int m = span / 2; m >= 1; m /= 2) {
		if (vr + m < p) {
			wr_xchg_send(&x, real(vr + m, root, p), 0, buf, bytes);
		}
	}
	return wr_xchg_wait(&x);
}

/* van de Geijn: scatter the buffer in size pieces down a binomial tree,
 * then pass the pieces round a ring, in place; relative rank v owns
 * piece v. Each byte crosses two links instead of lg p. */
static int
bcast_scatter_allgather(struct wr_coll_ctx *c, unsigned char *buf,
			size_t bytes, int root)
{
	int p = c->size, vr = rel(c->rank, root, p);
	size_t unit = (bytes + (size_t)p - 1) / (size_t)p;
	int rc = tree_scatter(c, root, buf + piece(vr, unit, bytes), unit,
			      bytes, 0);

	for (int s = 0; s < p - 1 && rc == 0; s++) {
		int out = (vr - s + p) % p, in = (vr - s - 1 + p) % p;
		size_t so = piece(out, unit, bytes), ro = piece(in, unit, bytes);

		rc = wr_xchg_sendrecv(c, real((vr + 1) % p, root, p), buf + so,
				      piece(out + 1, unit, bytes) - so,
				      real((vr - 1 + p) % p, root, p), buf + ro,
				      piece(in + 1, unit, bytes) - ro,
				      (unsigned)s + 1);
	}
	return rc;
}

int
wr_algo_broadcast(struct wr_coll_ctx *c, void *buf, size_t bytes, int root,
		  enum wr_algo a)
{
	if (a == WR_ALGO_AUTO) {
		a = wr_algo_pick(WR_COLL_BROADCAST, c->size, bytes,
				 wr_algo_flags(c), NULL);
	}
	if (!wr_algo_valid(WR_COLL_BROADCAST, a) || (a == WR_ALGO_SHM && c->shm == NULL)) {
		return -EINVAL;
	}
	if (bytes == 0 || c->size == 1) {
		return 0;
	}
	if (a == WR_ALGO_SHM) {
		return wr_shm_broadcast(c, buf, bytes, root);
	}
	if (a == WR_ALGO_SCATTER_ALLGATHER) {
		return bcast_scatter_allgather(c, buf, bytes, root);
	}
	return bcast_binomial(c, buf, bytes, root);
}

static int
allgather_ring(struct wr_coll_ctx *c, unsigned char *out, size_t bytes)
{
	int p = c->size, r = c->rank, rc = 0;

	for (int s = 0; s < p - 1 && rc == 0; s++) {
		int sb = (r - s + p) % p, rb = (r - s - 1 + p) % p;

		rc = wr_xchg_sendrecv(c, (r + 1) % p, out + (size_t)sb * bytes,
				      bytes, (r - 1 + p) % p,
				      out + (size_t)rb * bytes, bytes,
				      (unsigned)s);
	}
	return rc;
}

/* Fold the extra ranks' blocks into their odd neighbours, gather by
 * recursive doubling among a power of two, and hand the odd neighbours'
 * whole result back. */
static int
allgather_doubling(struct wr_coll_ctx *c, unsigned char *out, size_t bytes)
{
	struct wr_fold f;
	struct wr_blocks b;
	int r = c->rank, lg = 0, rc;
	size_t total = (size_t)c->size * bytes;

	wr_xchg_fold_init(&f, r, c->size);
	while (1 << lg < f.pof2) {
		lg++;
	}
	if (r < 2 * f.rem) {
		rc = r % 2 == 0 ? wr_xchg_sendrecv(c, r + 1,
						   out + (size_t)r * bytes,
						   bytes, 0, NULL, 0, 0)
				: wr_xchg_sendrecv(c, 0, NULL, 0, r - 1,
						   out + (size_t)(r - 1) * bytes,
						   bytes, 0);
		if (rc < 0) {
			return rc;
		}
	}
	if (f.newrank >= 0) {
		b = (struct wr_blocks){.n = f.pof2, .rem = f.rem, .unit = bytes,
				       .per_rank = true};
		rc = wr_xchg_doubling_gather(c, &f, &b, 1, out, 1);
		if (rc < 0) {
			return rc;
		}
	}
	if (r >= 2 * f.rem) {
		return 0;
	}
	return r % 2 == 1
		       ? wr_xchg_sendrecv(c, r - 1, out, total, 0, NULL, 0,
					  (unsigned)lg + 1)
		       : wr_xchg_sendrecv(c, 0, NULL, 0, r + 1, out, total,
					  (unsigned)lg + 1);
}

/* Bruck: after the step of distance k, a rank holds the blocks of the
 * 2k ranks from itself on, in a scratch buffer rotated by its rank. */
static int
allgather_bruck(struct wr_coll_ctx *c, const void *in, unsigned char *out,
		size_t bytes)
{
	int p = c->size, r = c->rank, rc = 0;
	bool owned;
	unsigned char *tmp = wr_xchg_scratch(c, (size_t)p * bytes, true, &owned);
	unsigned step = 0;

	if (tmp == NULL) {
		return -ENOMEM;
	}
	memcpy(tmp, in, bytes);
	for (int k = 1; k < p && rc == 0; k <<= 1, step++) {
		size_t n = (size_t)imin(k, p - k) * bytes;

		rc = wr_xchg_sendrecv(c, (r - k + p) % p, tmp, n, (r + k) % p,
				      tmp + (size_t)k * bytes, n, step);
	}
	if (rc == 0) {
		size_t head = (size_t)(p - r) * bytes;

		memcpy(out + (size_t)r * bytes, tmp, head);
		memcpy(out, tmp + head, (size_t)r * bytes);
	}
	wr_xchg_scratch_free(tmp, owned);
	return rc;
}

int
wr_algo_all_gather(struct wr_coll_ctx *c, const void *in, void *out,
		   size_t bytes, enum wr_algo a)
{
	unsigned char *mine = (unsigned char *)out + (size_t)c->rank * bytes;

	if (a == WR_ALGO_AUTO) {
		a = wr_algo_pick(WR_COLL_ALL_GATHER, c->size, bytes,
				 wr_algo_flags(c), NULL);
	}
	if (!wr_algo_valid(WR_COLL_ALL_GATHER, a) || (a == WR_ALGO_SHM && c->shm == NULL)) {
		return -EINVAL;
	}
	if (bytes == 0) {
		return 0;
	}
	if (a == WR_ALGO_SHM) {
		return wr_shm_all_gather(c, in, out, bytes);
	}
	if (a == WR_ALGO_BRUCK) {
		return allgather_bruck(c, in, out, bytes);
	}
	if (in != mine) {
		memcpy(mine, in, bytes);
	}
	if (a == WR_ALGO_RING) {
		return allgather_ring(c, out, bytes);
	}
	return allgather_doubling(c, out, bytes);
}

/* The size * @bytes of relative order (block v from relative rank v) put
 * into group order, or back (@to_rel). */
static void
rotate(unsigned char *dst, const unsigned char *src, size_t bytes, int root,
       int size, bool to_rel)
{
	size_t head = (size_t)(size - root) * bytes, tail = (size_t)root * bytes;

	if (to_rel) {
		memcpy(dst, src + tail, head);
		memcpy(dst + head, src, tail);
	} else {
		memcpy(dst + tail, src, head);
		memcpy(dst, src + head, tail);
	}
}

/* Leaves send their block straight from @in; the others collect their
 * subtree's blocks in scratch (the root all of them, then reorders). */
static int
gather_binomial(struct wr_coll_ctx *c, const void *in, unsigned char *out,
		size_t bytes, int root)
{
	int p = c->size, vr = rel(c->rank, root, p), span = tree_span(vr, p);
	int blocks = imin(span, p - vr), rc;
	bool owned;
	unsigned char *tmp;

	if (blocks == 1 && vr != 0) {
		return wr_xchg_sendrecv(c, real(vr - span, root, p), in, bytes,
					0, NULL, 0, 0);
	}
	tmp = wr_xchg_scratch(c, (size_t)blocks * bytes, true, &owned);
	if (tmp == NULL) {
		return -ENOMEM;
	}
	memcpy(tmp, in, bytes);
	rc = tree_gather(c, root, tmp, bytes, (size_t)p * bytes, 0);
	if (rc == 0 && vr == 0) {
		rotate(out, tmp, bytes, root, p, false);
	}
	wr_xchg_scratch_free(tmp, owned);
	return rc;
}

/* The root posts a receive (or a send) per rank, all at once. */
static int
root_linear(struct wr_coll_ctx *c, unsigned char *out, const unsigned char *in,
	    size_t bytes)
{
	int p = c->size, r = c->rank, rc;
	size_t cap = (size_t)p * WR_XCHG_PIECES;
	struct wr_coll_xfer *xs = malloc(cap * sizeof(*xs));
	struct wr_xchg x;

	if (xs == NULL) {
		return -ENOMEM;
	}
	wr_xchg_init(&x, c, xs, cap);
	for (int i = 0; i < p; i++) {
		if (i == r) {
			continue;
		}
		if (out != NULL) {
			wr_xchg_recv(&x, i, 0, out + (size_t)i * bytes, bytes);
		} else {
			wr_xchg_send(&x, i, 0, in + (size_t)i * bytes, bytes);
		}
	}
	rc = wr_xchg_wait(&x);
	free(xs);
	return rc;
}

int
wr_algo_gather(struct wr_coll_ctx *c, const void *in, void *out, size_t bytes,
	       int root, enum wr_algo a)
{
	unsigned char *o = out;

	if (a == WR_ALGO_AUTO) {
		a = wr_algo_pick(WR_COLL_GATHER, c->size, bytes,
				 wr_algo_flags(c), NULL);
	}
	if (!wr_algo_valid(WR_COLL_GATHER, a)) {
		return -EINVAL;
	}
	if (bytes == 0) {
		return 0;
	}
	if (a == WR_ALGO_BINOMIAL) {
		return gather_binomial(c, in, o, bytes, root);
	}
	if (c->rank != root) {
		return wr_xchg_sendrecv(c, root, in, bytes, 0, NULL, 0, 0);
	}
	memcpy(o + (size_t)root * bytes, in, bytes);
	return root_linear(c, o, NULL, bytes);
}

/* The root sends from a copy of @in in relative order; leaves receive
 * straight into @out, the others their subtree's blocks into scratch. */
static int
scatter_binomial(struct wr_coll_ctx *c, const void *in, unsigned char *out,
		 size_t bytes, int root)
{
	int p = c->size, vr = rel(c->rank, root, p), span = tree_span(vr, p);
	int blocks = imin(span, p - vr), rc;
	bool owned;
	unsigned char *tmp;

	if (blocks == 1 && vr != 0) {
		return tree_scatter(c, root, out, bytes, (size_t)p * bytes, 0);
	}
	tmp = wr_xchg_scratch(c, (size_t)blocks * bytes, true, &owned);
	if (tmp == NULL) {
		return -ENOMEM;
	}
	if (vr == 0) {
		rotate(tmp, in, bytes, root, p, true);
	}
	rc = tree_scatter(c, root, tmp, bytes, (size_t)p * bytes, 0);
	if (rc == 0) {
		memcpy(out, tmp, bytes);
	}
	wr_xchg_scratch_free(tmp, owned);
	return rc;
}

int
wr_algo_scatter(struct wr_coll_ctx *c, const void *in, void *out, size_t bytes,
		int root, enum wr_algo a)
{
	const unsigned char *i = in;

	if (a == WR_ALGO_AUTO) {
		a = wr_algo_pick(WR_COLL_SCATTER, c->size, bytes,
				 wr_algo_flags(c), NULL);
	}
	if (!wr_algo_valid(WR_COLL_SCATTER, a)) {
		return -EINVAL;
	}
	if (bytes == 0) {
		return 0;
	}
	if (a == WR_ALGO_BINOMIAL) {
		return scatter_binomial(c, in, out, bytes, root);
	}
	if (c->rank != root) {
		return wr_xchg_sendrecv(c, 0, NULL, 0, root, out, bytes, 0);
	}
	memcpy(out, i + (size_t)root * bytes, bytes);
	return root_linear(c, NULL, i, bytes);
}

/* Step s: send to the rank s ahead, receive from the one s behind. */
static int
alltoall_pairwise(struct wr_coll_ctx *c, const unsigned char *in,
		  unsigned char *out, size_t bytes)
{
	int p = c->size, r = c->rank, rc = 0;

	memcpy(out + (size_t)r * bytes, in + (size_t)r * bytes, bytes);
	for (int s = 1; s < p && rc == 0; s++) {
		int dst = (r + s) % p, src = (r - s + p) % p;

		rc = wr_xchg_sendrecv(c, dst, in + (size_t)dst * bytes, bytes,
				      src, out + (size_t)src * bytes, bytes,
				      (unsigned)s);
	}
	return rc;
}

/* Move the blocks of @tmp whose index has bit @k into @pack, or back. */
static size_t
bruck_pack(unsigned char *tmp, unsigned char *pack, int p, int k,
	   size_t bytes, bool unpack)
{
	size_t n = 0;

	for (int i = 0; i < p; i++) {
		if ((i & k) == 0) {
			continue;
		}
		if (unpack) {
			memcpy(tmp + (size_t)i * bytes, pack + n, bytes);
		} else {
			memcpy(pack + n, tmp + (size_t)i * bytes, bytes);
		}
		n += bytes;
	}
	return n;
}

/* Bruck: rotate so that block i is bound for the rank i ahead; in the
 * step of distance k, every block whose index has bit k moves k ranks on;
 * at the end block i came from the rank i behind. lg p steps, each of
 * about half the data. */
static int
alltoall_bruck(struct wr_coll_ctx *c, const unsigned char *in,
	       unsigned char *out, size_t bytes)
{
	int p = c->size, r = c->rank, rc = 0;
	size_t half = (size_t)(p + 1) / 2 * bytes, all = (size_t)p * bytes;
	bool owned;
	unsigned char *tmp = wr_xchg_scratch(c, all + 2 * half, true, &owned);
	unsigned char *sbuf = tmp + all, *rbuf = sbuf + half;
	unsigned step = 0;

	if (tmp == NULL) {
		return -ENOMEM;
	}
	rotate(tmp, in, bytes, r, p, true);
	for (int k = 1; k < p && rc == 0; k <<= 1, step++) {
		size_t n = bruck_pack(tmp, sbuf, p, k, bytes, false);

		rc = wr_xchg_sendrecv(c, (r + k) % p, sbuf, n, (r - k + p) % p,
				      rbuf, n, step);
		if (rc == 0) {
			bruck_pack(tmp, rbuf, p, k, bytes, true);
		}
	}
	for (int i = 0; i < p && rc == 0; i++) {
		memcpy(out + (size_t)((r - i + p) % p) * bytes,
		       tmp + (size_t)i * bytes, bytes);
	}
	wr_xchg_scratch_free(tmp, owned);
	return rc;
}

int
wr_algo_all_to_all(struct wr_coll_ctx *c, const void *in, void *out,
		   size_t bytes, enum wr_algo a)
{
	if (a == WR_ALGO_AUTO) {
		a = wr_algo_pick(WR_COLL_ALL_TO_ALL, c->size, bytes,
				 wr_algo_flags(c), NULL);
	}
	if (!wr_algo_valid(WR_COLL_ALL_TO_ALL, a)) {
		return -EINVAL;
	}
	if (bytes == 0) {
		return 0;
	}
	if (a == WR_ALGO_BRUCK) {
		return alltoall_bruck(c, in, out, bytes);
	}
	return alltoall_pairwise(c, in, out, bytes);
}
