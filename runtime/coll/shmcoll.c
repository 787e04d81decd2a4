/* SPDX-License-Identifier: MIT */
/*
 * The area: a line with the count of arrivals, a line with the number of
 * the last synchronisation completed, a line with the flag of a root that
 * waits for a ring entry, a line per member with the number of the
 * synchronisation it is at (for the hang report), of the last small
 * broadcast it is done with, and its signatures of the operations that
 * begin at an even and at an odd synchronisation (collcheck.h); then,
 * page-aligned, the ring of small broadcasts (entries of a line with the
 * broadcast's number and the data), the result area and the members'
 * slots.
 *
 * Rules keep the areas safe without more synchronisation than the
 * operations need. A member writes its own slot only at the start of an
 * operation, and a slot is read only before the synchronisation that ends
 * its use (the last arrival of a small all_reduce, the second of a chunk),
 * which the writer passed; except that after allreduce_each the others
 * read it once they leave that synchronisation, so small all_reduces
 * alternate between the two halves of the slots, and a member that
 * writes a whole slot first passes one more synchronisation (late). The
 * result area is written only once every member has arrived at the
 * operation, so all are done with what it held before, and it is read
 * only before a member's next arrival.
 *
 * The signatures: a member writes its own before it arrives at the first
 * synchronisation of an operation, and every member compares them all
 * once all have arrived, before it reads anything else of another
 * member's. Members that differ may run different algorithms, but each
 * begins with an arrival at the same synchronisation, and each wait there
 * ends: its last member to arrive sees the mismatch and publishes. A
 * member writes the signature of the same parity again two operations
 * later, past a synchronisation that every member reaches only after its
 * comparison.
 */
#include "shmcoll.h"

#include <stdbool.h>
#include <string.h>

#include "collcheck.h"
#include "reduce.h"
#include "xchg.h"

#define LINE 64
#define PAGE 4096
#define KIB ((size_t)1024)
#define MIB (1024 * KIB)
/* Up to this (and half a slot), an all_reduce takes one synchronisation:
 * the last member to arrive combines all the slots, or, up to EACH_BYTES
 * of them together, every member does; above it, every member combines
 * its share of each chunk (two). */
#define SMALL_BYTES (8 * KIB)
#define EACH_BYTES (16 * KIB)
/* Broadcasts up to RING_BYTES go through a ring of RING entries: the
 * root waits only when the members are RING broadcasts behind. */
#define RING 16
#define RING_BYTES (4 * KIB)
/* A large all_reduce combines this much at a time (a third of L1). */
#define TILE_BYTES (16 * KIB)

size_t
wr_shm_slot(int size)
{
	size_t slot = 16 * MIB / (size_t)(size > 0 ? size : 1) / PAGE * PAGE;

	if (slot > MIB) {
		return MIB;
	}
	return slot < 64 * KIB ? 64 * KIB : slot;
}

static size_t
pages(size_t bytes)
{
	return (bytes + PAGE - 1) / PAGE * PAGE;
}

static size_t
ring_off(int size)
{
	return pages((size_t)(3 + size) * LINE);
}

static size_t
res_off(int size)
{
	return ring_off(size) + pages(RING * (LINE + RING_BYTES));
}

size_t
wr_shm_size(int size, size_t slot)
{
	return res_off(size) + slot * (size_t)(1 + size);
}

static uint64_t *
arrived_of(const struct wr_coll_ctx *c)
{
	return (uint64_t *)(void *)c->shm->base;
}

static uint64_t *
done_of(const struct wr_coll_ctx *c)
{
	return (uint64_t *)(void *)(c->shm->base + LINE);
}

static uint64_t *
rootwait_of(const struct wr_coll_ctx *c)
{
	return (uint64_t *)(void *)(c->shm->base + 2 * LINE);
}

static uint64_t *
at_of(const struct wr_coll_ctx *c, int rank)
{
	return (uint64_t *)(void *)(c->shm->base + (size_t)(3 + rank) * LINE);
}

/* The same line as at_of(), written by its member only. */
static uint64_t *
consumed_of(const struct wr_coll_ctx *c, int rank)
{
	return at_of(c, rank) + 1;
}

/* Member @rank's signature of the operation that begins at
 * synchronisation @n, in the same line too. */
static struct wr_sig *
sig_of(const struct wr_coll_ctx *c, int rank, uint64_t n)
{
	return (struct wr_sig *)(void *)(at_of(c, rank) + 2 + 2 * (n & 1));
}

/* Ring entry @e: the number of the broadcast it holds, then its data. */
static uint64_t *
posted_of(const struct wr_coll_ctx *c, unsigned e)
{
	return (uint64_t *)(void *)(c->shm->base + ring_off(c->size) +
				    e * (LINE + RING_BYTES));
}

static unsigned char *
entry_of(const struct wr_coll_ctx *c, unsigned e)
{
	return (unsigned char *)posted_of(c, e) + LINE;
}

static unsigned char *
res_of(const struct wr_coll_ctx *c)
{
	return c->shm->base + res_off(c->size);
}

static unsigned char *
slot_of(const struct wr_coll_ctx *c, int rank)
{
	return res_of(c) + c->shm->slot * (size_t)(1 + rank);
}

/* ---- synchronisation ---- */

/* What a wait waits for: synchronisation @n done, or every member
 * arrived at it. Every member arrives once at each, so @n of them make
 * n * size arrivals. */
struct await {
	const struct wr_coll_ctx *c;
	uint64_t n;
	int root; /* who publishes, once all have come (-1: the last) */
};

static bool
done_ready(void *arg)
{
	const struct await *a = arg;

	return __atomic_load_n(done_of(a->c), __ATOMIC_ACQUIRE) >= a->n;
}

static bool
all_arrived(void *arg)
{
	const struct await *a = arg;

	return __atomic_load_n(arrived_of(a->c), __ATOMIC_ACQUIRE) >= a->n * (uint64_t)a->c->size;
}

static int
missing(void *arg)
{
	const struct await *a = arg;

	for (int q = 0; q < a->c->size; q++) {
		if (__atomic_load_n(at_of(a->c, q), __ATOMIC_RELAXED) < a->n) {
			return q;
		}
	}
	return a->root;
}

static int
await(struct wr_coll_ctx *c, struct await *a, bool (*ready)(void *))
{
	struct wr_coll_cond cond = {.ready = ready, .missing = missing, .arg = a};

	return ready(a) ? 0 : c->be->wait(c->impl, &cond);
}

/* Arrive at synchronisation @n: true for the last member to come, which
 * then sees what every member wrote before it arrived. */
static bool
arrive(struct wr_coll_ctx *c, uint64_t n)
{
	if (c->shm->pending) {
		*sig_of(c, c->rank, n) = c->check->mine;
	}
	__atomic_store_n(at_of(c, c->rank), n, __ATOMIC_RELAXED);
	return __atomic_add_fetch(arrived_of(c), 1, __ATOMIC_ACQ_REL) == n * (uint64_t)c->size;
}

static void
publish(struct wr_coll_ctx *c, uint64_t n)
{
	__atomic_store_n(done_of(c), n, __ATOMIC_RELEASE);
	c->be->wake(c->impl, -1);
}

/* The signatures of the operation that began at @n, for wr_check_compare. */
struct sigs {
	const struct wr_coll_ctx *c;
	uint64_t n;
};

static const struct wr_sig *
member_sig(const void *arg, int member)
{
	const struct sigs *g = arg;

	return sig_of(g->c, member, g->n);
}

/*
 * Once every member has arrived at @n, the operation's first
 * synchronisation: whether all called it alike. On a mismatch a member
 * that @publishes (the last to arrive, unless it publishes anyway) does,
 * since the member that would have may be running another operation.
 */
static int
verdict(struct wr_coll_ctx *c, uint64_t n, bool publishes)
{
	int rc;

	if (!c->shm->pending) {
		return 0;
	}
	c->shm->pending = false;
	rc = wr_check_compare(c->check, c->size, member_sig, &(struct sigs){.c = c, .n = n});
	if (rc < 0 && publishes) {
		publish(c, n);
	}
	return rc;
}

/* Every member arrives; afterwards each sees what all wrote before, and
 * none reads what it read before (late). */
static int
sync_all(struct wr_coll_ctx *c)
{
	struct await a = {.c = c, .n = ++c->shm->syncs, .root = -1};
	int rc = 0;

	if (arrive(c, a.n)) {
		rc = verdict(c, a.n, false);
		publish(c, a.n);
	} else {
		rc = await(c, &a, done_ready);
		rc = rc == 0 ? verdict(c, a.n, false) : rc;
	}
	c->shm->late = c->shm->late && rc < 0;
	return rc;
}

/* The start of every operation: its signature is to be compared. */
static void
begin(struct wr_coll_ctx *c, uint64_t *halves)
{
	c->shm->pending = c->check != NULL;
	*halves = c->shm->halves;
}

/*
 * The end: after a mismatch every member arrived once at the same
 * synchronisation and read nothing, so all put the area's state back
 * alike: the halves as they were, and nothing read late any more.
 */
static int
end(struct wr_coll_ctx *c, int rc, uint64_t halves)
{
	c->shm->pending = false;
	if (rc == WORLD_EMISMATCH) {
		c->shm->halves = halves;
		c->shm->late = false;
	}
	return rc;
}

int
wr_shm_barrier(struct wr_coll_ctx *c)
{
	uint64_t h;

	begin(c, &h);
	return end(c, sync_all(c), h);
}

int
wr_shm_check(struct wr_coll_ctx *c)
{
	return wr_shm_barrier(c);
}

/* ---- broadcast ---- */

/* The root copies @len bytes into the result area once every member has
 * arrived (so none still reads what it held), and the others copy them
 * out once it says so. */
static int
bcast_chunk(struct wr_coll_ctx *c, unsigned char *buf, size_t len, int root)
{
	struct await a = {.c = c, .n = ++c->shm->syncs, .root = root};
	bool last = arrive(c, a.n);
	int rc = 0;

	if (c->rank == root) {
		if (!last) {
			rc = await(c, &a, all_arrived);
		}
		rc = rc == 0 ? verdict(c, a.n, last) : rc;
		if (rc == 0) {
			memcpy(res_of(c), buf, len);
			publish(c, a.n);
			c->shm->late = false;
		}
		return rc;
	}
	if (last) {
		rc = verdict(c, a.n, true);
		/* The root may sleep, waiting for us. */
		c->be->wake(c->impl, root);
	}
	rc = rc == 0 ? await(c, &a, done_ready) : rc;
	rc = rc == 0 ? verdict(c, a.n, false) : rc;
	if (rc == 0) {
		memcpy(buf, res_of(c), len);
		c->shm->late = false;
	}
	return rc;
}

/* What a small broadcast waits for: its entry free (the root), or
 * holding broadcast @b (the others). */
struct rwait {
	const struct wr_coll_ctx *c;
	uint64_t b;
	int root;
};

static bool
entry_free(void *arg)
{
	const struct rwait *w = arg;

	for (int q = 0; q < w->c->size && w->b > RING; q++) {
		if (q != w->root &&
		    __atomic_load_n(consumed_of(w->c, q), __ATOMIC_ACQUIRE) < w->b - RING) {
			return false;
		}
	}
	return true;
}

static int
behind(void *arg)
{
	const struct rwait *w = arg;

	for (int q = 0; q < w->c->size; q++) {
		if (q != w->root &&
		    __atomic_load_n(consumed_of(w->c, q), __ATOMIC_RELAXED) < w->b - RING) {
			return q;
		}
	}
	return -1;
}

static bool
entry_posted(void *arg)
{
	const struct rwait *w = arg;

	return __atomic_load_n(posted_of(w->c, (unsigned)(w->b % RING)), __ATOMIC_ACQUIRE) >=
	       w->b;
}

static int
the_root(void *arg)
{
	return ((const struct rwait *)arg)->root;
}

/* Done with broadcast @b; a root waiting for that hears of it. The fence
 * and the root's (ring_post) make one of the two see the other's store. */
static void
consume(struct wr_coll_ctx *c, uint64_t b)
{
	__atomic_store_n(consumed_of(c, c->rank), b, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(rootwait_of(c), __ATOMIC_RELAXED) != 0) {
		c->be->wake(c->impl, -1);
	}
}

static int
ring_post(struct wr_coll_ctx *c, const struct rwait *w, const void *buf, size_t len)
{
	struct wr_coll_cond cond = {.ready = entry_free, .missing = behind, .arg = (void *)w};
	unsigned e = (unsigned)(w->b % RING);
	int rc = 0;

	if (!entry_free((void *)w)) {
		__atomic_store_n(rootwait_of(c), 1, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		rc = c->be->wait(c->impl, &cond);
		__atomic_store_n(rootwait_of(c), 0, __ATOMIC_RELAXED);
	}
	if (rc == 0) {
		memcpy(entry_of(c, e), buf, len);
		__atomic_store_n(posted_of(c, e), w->b, __ATOMIC_RELEASE);
		c->be->wake(c->impl, -1);
	}
	return rc;
}

/* A small broadcast: no member waits for the others, only for the root,
 * and the root only for members RING broadcasts behind. */
static int
bcast_ring(struct wr_coll_ctx *c, unsigned char *buf, size_t len, int root)
{
	struct rwait w = {.c = c, .b = ++c->shm->bcasts, .root = root};
	struct wr_coll_cond cond = {.ready = entry_posted, .missing = the_root, .arg = &w};
	int rc;

	if (c->rank == root) {
		rc = ring_post(c, &w, buf, len);
	} else {
		rc = entry_posted(&w) ? 0 : c->be->wait(c->impl, &cond);
		if (rc == 0) {
			memcpy(buf, entry_of(c, (unsigned)(w.b % RING)), len);
		}
	}
	if (rc == 0) {
		consume(c, w.b);
	}
	return rc;
}

int
wr_shm_broadcast(struct wr_coll_ctx *c, void *buf, size_t bytes, int root)
{
	unsigned char *b = buf;
	size_t slot = c->shm->slot;
	uint64_t h;
	int rc = 0;

	/* The ring's root does not wait for the others: no verdict of theirs
	 * would reach it. */
	if (bytes <= RING_BYTES && c->check == NULL) {
		return bcast_ring(c, b, bytes, root);
	}
	begin(c, &h);
	for (size_t off = 0; off < bytes && rc == 0; off += slot) {
		rc = bcast_chunk(c, b + off, bytes - off < slot ? bytes - off : slot,
				 root);
	}
	return end(c, rc, h);
}

/* ---- all_reduce ---- */

/* Where a small all_reduce or all_gather puts its data: half of the
 * slot, the other half than the one before, so that a member that reads
 * the last one's late (meet_half) is not overwritten. */
static unsigned char *
half_of(const struct wr_coll_ctx *c, int rank, unsigned half)
{
	return slot_of(c, rank) + half * (c->shm->slot / 2);
}

/* One synchronisation: the last member to arrive reduces every slot into
 * the result area, and each copies it out. */
static int
allreduce_small(struct wr_coll_ctx *c, unsigned char *buf, size_t count,
		enum world_dtype dt, enum world_op op)
{
	struct await a = {.c = c, .n = ++c->shm->syncs, .root = -1};
	unsigned half = c->shm->halves++ & 1;
	size_t len = count * wr_dtype_size(dt);
	unsigned char *res = res_of(c);
	int rc = 0;

	memcpy(half_of(c, c->rank, half), buf, len);
	if (arrive(c, a.n)) {
		rc = verdict(c, a.n, true);
		if (rc == 0) {
			memcpy(res, half_of(c, 0, half), len);
			for (int q = 1; q < c->size; q++) {
				wr_reduce(op, dt, res, half_of(c, q, half), count);
			}
			publish(c, a.n);
		}
	} else {
		rc = await(c, &a, done_ready);
		rc = rc == 0 ? verdict(c, a.n, false) : rc;
	}
	if (rc == 0) {
		memcpy(buf, res, len);
		c->shm->late = false;
	}
	return rc;
}

/* Put @len bytes of @src in this member's half of the slots for this
 * operation, and wait until every member has put its own: afterwards
 * all read all (late), in *@half. */
static int
meet_half(struct wr_coll_ctx *c, const void *src, size_t len, unsigned *half)
{
	struct await a = {.c = c, .n = ++c->shm->syncs, .root = -1};
	int rc = 0;

	*half = c->shm->halves++ & 1;
	memcpy(half_of(c, c->rank, *half), src, len);
	if (arrive(c, a.n)) {
		rc = verdict(c, a.n, true);
		if (rc == 0) {
			c->be->wake(c->impl, -1);
		}
	} else {
		rc = await(c, &a, all_arrived);
		rc = rc == 0 ? verdict(c, a.n, false) : rc;
	}
	c->shm->late = true;
	return rc;
}

/* One synchronisation, after which every member combines every slot
 * itself, in the same order: no member waits for another's result, and
 * nothing is copied out. */
static int
allreduce_each(struct wr_coll_ctx *c, unsigned char *buf, size_t count,
	       enum world_dtype dt, enum world_op op)
{
	size_t len = count * wr_dtype_size(dt);
	unsigned half;
	int rc = meet_half(c, buf, len, &half);

	if (rc == 0) {
		/* Rank 0's own @buf is the left operand already. */
		if (c->rank != 0) {
			memcpy(buf, half_of(c, 0, half), len);
		}
		for (int q = 1; q < c->size; q++) {
			wr_reduce(op, dt, buf, half_of(c, q, half), count);
		}
	}
	return rc;
}

/* Elements @b0 .. @b0 + @bn of every slot, combined into the result
 * area a tile at a time: the partial result stays in the first level of
 * cache while each slot's tile is read once. */
static void
reduce_block(struct wr_coll_ctx *c, size_t b0, size_t bn, enum world_dtype dt,
	     enum world_op op)
{
	size_t es = wr_dtype_size(dt), tile = TILE_BYTES / es;

	for (size_t t0 = b0; t0 < b0 + bn; t0 += tile) {
		size_t tn = b0 + bn - t0 < tile ? b0 + bn - t0 : tile;
		unsigned char *acc = res_of(c) + t0 * es;

		memcpy(acc, slot_of(c, 0) + t0 * es, tn * es);
		for (int q = 1; q < c->size; q++) {
			wr_reduce(op, dt, acc, slot_of(c, q) + t0 * es, tn);
		}
	}
}

/* Two: all slots are in, each member reduces its block of the chunk into
 * the result area, which all then copy out. */
static int
allreduce_chunk(struct wr_coll_ctx *c, unsigned char *buf, size_t count,
		enum world_dtype dt, enum world_op op)
{
	struct wr_blocks b = {.n = c->size, .total = count};
	size_t es = wr_dtype_size(dt), b0 = wr_xchg_block_off(&b, c->rank);
	size_t bn = wr_xchg_block_off(&b, c->rank + 1) - b0;
	int rc = c->shm->late ? sync_all(c) : 0;

	if (rc == 0) {
		memcpy(slot_of(c, c->rank), buf, count * es);
		rc = sync_all(c);
	}
	if (rc == 0) {
		reduce_block(c, b0, bn, dt, op);
	}
	if (rc == 0) {
		rc = sync_all(c);
	}
	if (rc == 0) {
		memcpy(buf, res_of(c), count * es);
	}
	return rc;
}

int
wr_shm_all_reduce(struct wr_coll_ctx *c, void *buf, size_t count,
		  enum world_dtype dt, enum world_op op)
{
	size_t es = wr_dtype_size(dt), per = c->shm->slot / es;
	unsigned char *b = buf;
	uint64_t h;
	int rc = 0;

	if (count == 0) {
		return 0;
	}
	begin(c, &h);
	if (count * es <= SMALL_BYTES && count * es <= c->shm->slot / 2) {
		rc = count * es * (size_t)c->size <= EACH_BYTES
			? allreduce_each(c, b, count, dt, op)
			: allreduce_small(c, b, count, dt, op);
		return end(c, rc, h);
	}
	for (size_t off = 0; off < count && rc == 0; off += per) {
		rc = allreduce_chunk(c, b + off * es,
				     count - off < per ? count - off : per, dt, op);
	}
	return end(c, rc, h);
}

/* ---- all_gather ---- */

/* In chunks of half a slot, each one synchronisation: a member reads the
 * last chunk late while the next goes into the other halves. */
int
wr_shm_all_gather(struct wr_coll_ctx *c, const void *in, void *out, size_t bytes)
{
	const unsigned char *src = in;
	unsigned char *dst = out;
	size_t chunk = c->shm->slot / 2;
	uint64_t h;
	int rc = 0;

	begin(c, &h);
	for (size_t off = 0; off < bytes && rc == 0; off += chunk) {
		size_t len = bytes - off < chunk ? bytes - off : chunk;
		unsigned half;

		rc = meet_half(c, src + off, len, &half);
		for (int q = 0; q < c->size && rc == 0; q++) {
			memcpy(dst + (size_t)q * bytes + off, half_of(c, q, half), len);
		}
	}
	return end(c, rc, h);
}
