/* SPDX-License-Identifier: MIT */
#include "xchg.h"

#include <assert.h>
#include <stdlib.h>

void
wr_xchg_init(struct wr_xchg *x, struct wr_coll_ctx *c, struct wr_coll_xfer *xs,
	     size_t cap)
{
	x->c = c;
	x->xs = xs;
	x->n = 0;
	x->cap = cap;
	x->err = 0;
}

/* The pieces of a message of @len bytes: eager ones if it is over the
 * eager length and at most WR_XCHG_PIECES of them, else itself. */
static size_t
piece_len(const struct wr_coll_ctx *c, size_t len)
{
	size_t e = c->eager;

	return e == 0 || len <= e || len > e * WR_XCHG_PIECES ? len : e;
}

/* A send of @sbuf, or else a receive into @rbuf, in its pieces. */
static void
post(struct wr_xchg *x, int peer, unsigned step, const void *sbuf,
     void *rbuf, size_t len)
{
	const struct wr_coll_backend *be = x->c->be;
	size_t pl = piece_len(x->c, len);

	for (size_t off = 0; off < len && x->err == 0; off += pl) {
		size_t n = len - off < pl ? len - off : pl;
		int rc;

		assert(x->n < x->cap);
		rc = sbuf != NULL
			     ? be->isend(x->c->impl, peer, step & 0xff,
					 (const unsigned char *)sbuf + off, n,
					 &x->xs[x->n])
			     : be->irecv(x->c->impl, peer, step & 0xff,
					 (unsigned char *)rbuf + off, n,
					 &x->xs[x->n]);
		if (rc < 0) {
			x->err = rc;
			return;
		}
		x->n++;
	}
}

void
wr_xchg_recv(struct wr_xchg *x, int peer, unsigned step, void *buf,
	     size_t len)
{
	post(x, peer, step, NULL, buf, len);
}

void
wr_xchg_send(struct wr_xchg *x, int peer, unsigned step, const void *buf,
	     size_t len)
{
	post(x, peer, step, buf, NULL, len);
}

int
wr_xchg_wait(struct wr_xchg *x)
{
	int rc = 0;

	/* Even after a failed post the posted requests go to waitall, so
	 * that the backend lets go of them before their storage does. */
	if (x->n > 0) {
		rc = x->c->be->waitall(x->c->impl, x->xs, x->n);
	}
	if (x->err == 0) {
		x->err = rc;
	}
	rc = x->err;
	x->n = 0;
	x->err = 0;
	return rc;
}

int
wr_xchg_sendrecv(struct wr_coll_ctx *c, int dst, const void *sbuf, size_t slen,
		 int src, void *rbuf, size_t rlen, unsigned step)
{
	struct wr_coll_xfer xs[2 * WR_XCHG_PIECES];
	struct wr_xchg x;

	wr_xchg_init(&x, c, xs, 2 * WR_XCHG_PIECES);
	wr_xchg_recv(&x, src, step, rbuf, rlen);
	wr_xchg_send(&x, dst, step, sbuf, slen);
	return wr_xchg_wait(&x);
}

void *
wr_xchg_scratch(struct wr_coll_ctx *c, size_t len, bool hook, bool *owned)
{
	void *p = NULL;

	if (hook && c->scratch != NULL) {
		p = c->scratch(c->impl, len);
	}
	*owned = p == NULL;
	if (p == NULL) {
		p = malloc(len > 0 ? len : 1);
	}
	return p;
}

void
wr_xchg_scratch_free(void *p, bool owned)
{
	if (owned) {
		free(p);
	}
}

void
wr_xchg_fold_init(struct wr_fold *f, int rank, int size)
{
	f->pof2 = 1;
	while (f->pof2 <= size / 2) {
		f->pof2 *= 2;
	}
	f->rem = size - f->pof2;
	if (rank < 2 * f->rem) {
		f->newrank = rank % 2 == 1 ? rank / 2 : -1;
	} else {
		f->newrank = rank - f->rem;
	}
}

int
wr_xchg_fold_rank(const struct wr_fold *f, int newrank)
{
	return newrank < f->rem ? 2 * newrank + 1 : newrank + f->rem;
}

size_t
wr_xchg_block_off(const struct wr_blocks *b, int i)
{
	size_t q, r, first;

	if (b->per_rank) {
		first = (size_t)(i < b->rem ? 2 * i : i + b->rem);
		return first * b->unit;
	}
	q = b->total / (size_t)b->n;
	r = b->total % (size_t)b->n;
	return (size_t)i * q + ((size_t)i < r ? (size_t)i : r);
}

int
wr_xchg_doubling_gather(struct wr_coll_ctx *c, const struct wr_fold *f,
			const struct wr_blocks *b, size_t scale,
			unsigned char *buf, unsigned step0)
{
	int me = f->newrank, lo = me, hi = me + 1;
	unsigned step = step0;

	for (int mask = 1; mask < f->pof2; mask <<= 1, step++) {
		/* The partner holds the window of the same size next to ours,
		 * aligned to twice its size. */
		int plo = (me & mask) ? lo - mask : hi;
		int phi = plo + mask;
		size_t mine = wr_xchg_block_off(b, lo) * scale;
		size_t theirs = wr_xchg_block_off(b, plo) * scale;
		int peer = wr_xchg_fold_rank(f, me ^ mask);
		int rc = wr_xchg_sendrecv(
			c, peer, buf + mine,
			wr_xchg_block_off(b, hi) * scale - mine, peer,
			buf + theirs,
			wr_xchg_block_off(b, phi) * scale - theirs, step);

		if (rc < 0) {
			return rc;
		}
		lo = lo < plo ? lo : plo;
		hi = hi > phi ? hi : phi;
	}
	return 0;
}
