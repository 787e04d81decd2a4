/* SPDX-License-Identifier: MIT */
/*
 * collsweep: every collective with every algorithm it has, and with the
 * one the group picks itself for small counts, against a
 * straightforward reference, on the whole job and on two overlapping
 * subgroups used back to back, with user messages between collectives.
 * Inputs are small integers (exact in every dtype, float16 and bfloat16
 * included), from a seed that rank 0 prints (COLLSWEEP_SEED replays it);
 * dtypes, ops, counts and roots are sampled from it. all_reduce of random
 * floats must give every member the same bytes. COLLSWEEP_FULL=1 takes
 * every dtype x op pair and counts over 4 MiB for every algorithm (the
 * long suite); otherwise one count over 4 MiB per collective.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "reduce.h"
#include "wtap.h"

#define T 30000
#define NDT 12
#define NOP 8
#define BIG (4 * 1024 * 1024 / 4 + 17) /* elements: over 4 MiB of int32 */

struct sweep {
	struct world *w;
	uint64_t seed;
	bool full;
	int iter;
	char what[200]; /* the first failure */
};

static uint64_t
mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

/* Element @i of world rank @r's input in case @iter: a small integer. */
static int
value(const struct sweep *s, int r, size_t i, enum world_op op, bool is_signed)
{
	uint64_t h = mix(s->seed ^ mix((uint64_t)s->iter << 32 ^ (uint64_t)r << 20 ^ i));

	if (op == WORLD_PROD) {
		return is_signed && h % 5 == 0 ? -1 : (int)(h % 2) + 1;
	}
	return is_signed ? (int)(h % 7) - 3 : (int)(h % 7);
}

static void
store(enum world_dtype dt, void *buf, size_t i, int v)
{
	char *p = (char *)buf + i * wr_dtype_size(dt);

	switch (dt) {
	case WORLD_INT8: case WORLD_UINT8: *(int8_t *)p = (int8_t)v; break;
	case WORLD_INT16: case WORLD_UINT16: *(int16_t *)p = (int16_t)v; break;
	case WORLD_INT32: case WORLD_UINT32: *(int32_t *)p = v; break;
	case WORLD_INT64: case WORLD_UINT64: *(int64_t *)p = v; break;
	case WORLD_FLOAT16: *(uint16_t *)p = wr_reduce_f16_from_f32((float)v); break;
	case WORLD_BFLOAT16: *(uint16_t *)p = wr_reduce_bf16_from_f32((float)v); break;
	case WORLD_FLOAT32: *(float *)p = (float)v; break;
	case WORLD_FLOAT64: *(double *)p = v; break;
	}
}

static bool
is_signed(enum world_dtype dt)
{
	return dt <= WORLD_INT64 || dt >= WORLD_FLOAT16;
}

/* World rank @r's input: @n elements, from element @first on. */
static void
input(const struct sweep *s, int r, enum world_dtype dt, enum world_op op,
      void *buf, size_t n, size_t first)
{
	for (size_t i = 0; i < n; i++) {
		store(dt, buf, i, value(s, r, first + i, op, is_signed(dt)));
	}
}

/* The reduction of every member's elements [first, first + n). */
static void
reference(const struct sweep *s, const struct world_coll *c, enum world_dtype dt,
	  enum world_op op, void *out, size_t n, size_t first)
{
	void *tmp = malloc(n * wr_dtype_size(dt) + 1);

	input(s, c->world[0], dt, op, out, n, first);
	for (int g = 1; g < c->size; g++) {
		input(s, c->world[g], dt, op, tmp, n, first);
		wr_reduce(op, dt, out, tmp, n);
	}
	wr_reduce_finish(op, dt, out, n, c->size);
	free(tmp);
}

/* The sampled cases of one collective: (dtype, op) pairs that are valid. */
static int
pick_pairs(struct sweep *s, bool reduces, enum world_dtype *dts, enum world_op *ops)
{
	int n = 0;

	for (int d = 0; d < NDT; d++) {
		for (int o = 0; o < (reduces ? NOP : 1); o++) {
			if (reduces && wr_reduce_check(d, o) < 0) {
				continue;
			}
			/* Sampled: every pair in the full sweep, about 1 in 6 otherwise. */
			if (s->full || mix(s->seed ^ (uint64_t)(s->iter * 131 + d * 8 + o)) % 6 == 0) {
				dts[n] = (enum world_dtype)d;
				ops[n++] = (enum world_op)o;
			}
		}
	}
	if (n == 0) {
		dts[n] = WORLD_INT32;
		ops[n++] = WORLD_SUM;
	}
	return n;
}

static bool
fail(struct sweep *s, const char *kind, const char *algo, enum world_dtype dt,
     enum world_op op, size_t count, int root, const char *why)
{
	if (s->what[0] == '\0') {
		snprintf(s->what, sizeof(s->what), "%s/%s dtype %d op %d count %zu root %d: %s",
			 kind, algo, dt, op, count, root, why);
	}
	return false;
}

/* One collective call of @k on @c and its check against the reference. */
static bool
one(struct sweep *s, struct world_coll *c, enum wr_coll_kind k, const char *algo,
    enum world_dtype dt, enum world_op op, size_t count, int root)
{
	size_t es = wr_dtype_size(dt), blk = count * es;
	/* Only the collectives of blocks need room for every member's. */
	size_t all = k == WR_COLL_BROADCAST || k == WR_COLL_ALL_REDUCE || k == WR_COLL_REDUCE
		? blk : blk * (size_t)c->size;
	char *in = malloc(all + 1), *out = malloc(all + 1), *ref = malloc(all + 1);
	int me = c->world[c->rank], rc = 0;
	bool good = in != NULL && out != NULL && ref != NULL;
	const char *kind = wr_algo_kind_name(k);

	s->iter++;
	if (!good) {
		free(in); free(out); free(ref);
		return fail(s, kind, algo, dt, op, count, root, "out of memory");
	}
	memset(out, 0x5a, all + 1);
	memset(ref, 0x5a, all + 1);
	switch (k) {
	case WR_COLL_BARRIER:
		rc = world_coll_barrier(c, T);
		break;
	case WR_COLL_BROADCAST:
		input(s, c->world[root], dt, op, ref, count, 0);
		if (c->rank == root) {
			memcpy(out, ref, blk);
		}
		rc = world_coll_broadcast(c, out, count, dt, root, T);
		good = rc == 0 && memcmp(out, ref, blk) == 0;
		break;
	case WR_COLL_ALL_REDUCE:
	case WR_COLL_REDUCE:
		input(s, me, dt, op, out, count, 0);
		memcpy(in, out, blk);
		rc = k == WR_COLL_REDUCE ? world_coll_reduce(c, out, count, dt, op, root, T)
			: world_coll_all_reduce(c, out, count, dt, op, T);
		if (k == WR_COLL_REDUCE && c->rank != root) {
			memcpy(ref, in, blk); /* left as it was */
		} else {
			reference(s, c, dt, op, ref, count, 0);
		}
		good = rc == 0 && memcmp(out, ref, blk) == 0;
		break;
	case WR_COLL_ALL_GATHER:
	case WR_COLL_GATHER:
		input(s, me, dt, op, in, count, 0);
		for (int g = 0; g < c->size; g++) {
			input(s, c->world[g], dt, op, ref + (size_t)g * blk, count, 0);
		}
		rc = k == WR_COLL_GATHER ? world_coll_gather(c, in, out, count, dt, root, T)
			: world_coll_all_gather(c, in, out, count, dt, T);
		good = rc == 0 && (k == WR_COLL_GATHER && c->rank != root ? true
				   : memcmp(out, ref, all) == 0);
		break;
	case WR_COLL_SCATTER:
		input(s, c->world[root], dt, op, in, count * (size_t)c->size, 0);
		rc = world_coll_scatter(c, in, out, count, dt, root, T);
		good = rc == 0 && memcmp(out, in + (size_t)c->rank * blk, blk) == 0;
		break;
	case WR_COLL_REDUCE_SCATTER:
		input(s, me, dt, op, in, count * (size_t)c->size, 0);
		rc = world_coll_reduce_scatter(c, in, out, count, dt, op, T);
		reference(s, c, dt, op, ref, count, (size_t)c->rank * count);
		good = rc == 0 && memcmp(out, ref, blk) == 0;
		break;
	case WR_COLL_ALL_TO_ALL:
		/* Block j of rank g's input: rank g's elements from j * count. */
		input(s, me, dt, op, in, count * (size_t)c->size, 0);
		for (int g = 0; g < c->size; g++) {
			input(s, c->world[g], dt, op, ref + (size_t)g * blk, count,
			      (size_t)c->rank * count);
		}
		rc = world_coll_all_to_all(c, in, out, count, dt, T);
		good = rc == 0 && memcmp(out, ref, all) == 0;
		break;
	default:
		good = false;
	}
	/* Nothing written past the output: all for the collectives of
	 * every member's block (and gather), one block for the others. */
	if (good && rc == 0 && out[all > blk ? all : blk] != 0x5a) {
		good = false;
	}
	free(in); free(out); free(ref);
	return good ? true : fail(s, kind, algo, dt, op, count, root,
				  rc < 0 ? world_strerror(rc) : "wrong result");
}

/* User messages between collectives: a ring, received from any source. */
static bool
ring(struct sweep *s, struct world_coll *c)
{
	int n = c->size, r = c->rank, got = -1, src = -1, v = r * 1000 + s->iter;
	struct world_coll_req *q = NULL;
	int rc;

	if (n == 1) {
		return true;
	}
	rc = world_coll_irecv(c, &got, 1, WORLD_INT32, WORLD_ANY_SOURCE, s->iter % 1000, &q);
	rc = rc == 0 ? world_coll_send(c, &v, 1, WORLD_INT32, (r + 1) % n, s->iter % 1000, T) : rc;
	rc = rc == 0 ? world_coll_wait(q, T, &src) : rc;
	world_coll_req_free(q);
	if (rc != 0 || src != (r + n - 1) % n || got != src * 1000 + s->iter) {
		return fail(s, "ring", "-", WORLD_INT32, 0, 1, -1, "user message");
	}
	return true;
}

/* Random floats: every member ends with the same bytes. */
static bool
same_bytes(struct sweep *s, struct world_coll *c, size_t count)
{
	float *a = malloc(count * sizeof(*a));
	uint64_t h = 1469598103934665603ULL, *all = calloc((size_t)c->size, sizeof(*all));
	bool good = a != NULL && all != NULL;

	for (size_t i = 0; good && i < count; i++) {
		a[i] = (float)(mix(s->seed ^ (uint64_t)c->world[c->rank] << 40 ^ i) % 2000001) / 1e6f - 1.0f;
	}
	good = good && world_coll_all_reduce(c, a, count, WORLD_FLOAT32, WORLD_SUM, T) == 0;
	for (size_t i = 0; good && i < count * sizeof(*a); i++) {
		h = (h ^ ((unsigned char *)a)[i]) * 1099511628211ULL;
	}
	good = good && world_coll_all_gather(c, &h, all, 1, WORLD_UINT64, T) == 0;
	for (int g = 0; good && g < c->size; g++) {
		good = all[g] == h;
	}
	free(a);
	free(all);
	return good ? true : fail(s, "all_reduce", "-", WORLD_FLOAT32, WORLD_SUM, count, -1,
				  "ranks differ in their bytes");
}

/* Every case of collective @k with algorithm @a on @c. */
static bool
cases(struct sweep *s, struct world_coll *c, enum wr_coll_kind k, enum wr_algo a,
      bool big)
{
	enum world_dtype dts[NDT * NOP];
	enum world_op ops[NDT * NOP];
	bool reduces = k == WR_COLL_ALL_REDUCE || k == WR_COLL_REDUCE || k == WR_COLL_REDUCE_SCATTER;
	int n = pick_pairs(s, reduces, dts, ops);
	/* What the group picks itself: small counts, whose data may travel
	 * with the members' agreement (collops.c), and the first above. */
	const size_t counts[] = { 0, 1, 1009, 65537 }, small[] = { 1, 5, 6, 7 };
	const size_t *cs = a == WR_ALGO_AUTO ? small : counts;
	bool good = true;

	/* Every member makes every call, whatever went wrong before, so
	 * that one failure does not leave the others waiting. */
	c->forced[k] = a;
	for (int p = 0; p < n; p++) {
		size_t ci = mix(s->seed ^ (uint64_t)(s->iter + p)) % 4;
		int root = (int)(mix(s->seed + (uint64_t)s->iter) % (uint64_t)c->size);

		good &= one(s, c, k, wr_algo_name(a), dts[p], ops[p], cs[ci], root);
		good &= one(s, c, k, wr_algo_name(a), dts[p], ops[p], cs[p % 3],
			    (root + 1) % c->size);
		good &= ring(s, c);
	}
	if (big && k != WR_COLL_BARRIER) {
		bool whole = k == WR_COLL_BROADCAST || k == WR_COLL_ALL_REDUCE || k == WR_COLL_REDUCE;

		good &= one(s, c, k, wr_algo_name(a), WORLD_INT32, WORLD_SUM,
			    whole ? BIG : BIG / (size_t)c->size + 1, 0);
	}
	c->forced[k] = WR_ALGO_AUTO;
	return good;
}

static bool
member(const int *list, int n, int r)
{
	for (int i = 0; i < n; i++) {
		if (list[i] == r) {
			return true;
		}
	}
	return false;
}

int
main(void)
{
	struct sweep s = { .full = getenv("COLLSWEEP_FULL") != NULL };
	int size, r, rc = world_open(&s.w), lists[3][64], lens[3], checks = 0, iters[3] = { 0 };
	struct world_coll *c[3] = { NULL };
	const char *seed = getenv("COLLSWEEP_SEED");

	if (rc < 0 || world_size(s.w) < 2 || world_size(s.w) > 64) {
		fprintf(stderr, "usage: worldrun -n 2..64 test-collsweep (%s)\n", world_strerror(rc));
		return 2;
	}
	size = world_size(s.w);
	r = world_rank(s.w);
	/* Every rank starts from the seed of the job's first rank. */
	s.seed = seed != NULL ? strtoull(seed, NULL, 0)
		: mix((uint64_t)time(NULL) ^ (uint64_t)getpid() << 16);
	/* The whole job; the odd ranks; all but the last: overlapping. */
	lens[0] = size;
	lens[1] = 0;
	lens[2] = size - 1;
	for (int i = 0; i < size; i++) {
		lists[0][i] = i;
		lists[2][i] = i;
		if (i % 2 == 1) {
			lists[1][lens[1]++] = i;
		}
	}
	for (int k = 0; k < WR_COLL_NKINDS; k++) {
		for (int a = 0; a < WR_ALGO_NALGOS; a++) {
			checks += a == WR_ALGO_AUTO || wr_algo_valid(k, a) ? 3 : 0;
		}
	}
	wtap_start(r, checks + 6);
	{
		uint64_t shared = s.seed;
		struct world_coll *all = NULL;

		rc = world_coll_create(s.w, lists[0], (size_t)size, T, &all);
		rc = rc == 0 ? world_coll_broadcast(all, &shared, 1, WORLD_UINT64, 0, T) : rc;
		s.seed = shared;
		world_coll_destroy(all);
		if (r == 0) {
			printf("# seed %llu (COLLSWEEP_SEED replays it)\n", (unsigned long long)s.seed);
		}
		check(rc == 0, "the seed reaches every rank (%s)", world_strerror(rc));
	}
	for (int g = 0; g < 3; g++) {
		rc = member(lists[g], lens[g], r) ? world_coll_create(s.w, lists[g], (size_t)lens[g], T, &c[g]) : 0;
		check(rc == 0, "create group %d of %d ranks (%s)", g, lens[g], world_strerror(rc));
	}
	{
		const char *fabric = getenv("WORLD_FABRIC");
		bool on_shm = fabric == NULL || strcmp(fabric, "shm") == 0;

		check(c[0] == NULL || c[0]->size == 1 || (c[0]->shm != NULL) == on_shm,
		      "the whole job's group has a shared area on shm, none elsewhere");
	}
	for (int k = 0; k < WR_COLL_NKINDS; k++) {
		for (int a = 0; a < WR_ALGO_NALGOS; a++) {
			/* The long count for what a group picks: shm, where it
			 * has an area, else a message algorithm. */
			bool big = s.full || a == WR_ALGO_SHM ||
				   a == (int)wr_algo_pick(k, size, 4 << 20, 0, NULL);

			if (a != WR_ALGO_AUTO && !wr_algo_valid(k, a)) {
				continue;
			}
			/* Interleaved: the three groups back to back, per algorithm. */
			for (int g = 0; g < 3; g++) {
				bool good;

				/* Members of a group count its cases alike, whatever else they do. */
				s.iter = iters[g];
				good = c[g] == NULL || cases(&s, c[g], k, a, big && g == 0);
				iters[g] = s.iter;

				check(good, "%s %s on group %d (%d ranks)%s%s", wr_algo_kind_name(k),
				      wr_algo_name(a), g, lens[g], good ? "" : ": ", good ? "" : s.what);
				s.what[0] = '\0';
			}
		}
	}
	check(c[0] == NULL || same_bytes(&s, c[0], 100003), "random floats: the same bytes on every rank");
	for (int g = 2; g >= 0; g--) {
		world_coll_destroy(c[g]);
	}
	rc = world_stop(s.w, T);
	return wtap_done() || rc != 0;
}
