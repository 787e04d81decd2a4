/* SPDX-License-Identifier: MIT */
/*
 * collalgo: every collective with every algorithm it has, at group sizes
 * 1 to 8, many lengths and every root, over a fake backend of threads
 * whose sends complete only when matched by a receive (so an algorithm
 * that could deadlock on a rendezvous transport does, and times out);
 * exact results against a plain reference on small integers in every
 * dtype; the same bits on every rank for all_reduce of random floats;
 * injected failures reaching every rank; names, WORLD_COLL_ALGO parsing
 * and the thresholds. WORLD_TEST_SEED replays a run, WORLD_TEST_FULL=1
 * sweeps every combination instead of a sample.
 */
#include "coll/algos.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "coll/reduce.h"
#include "coll/shmcoll.h"
#include "fake-p2p.h"
#include "tap.h"

#define MAX_P 8

/* ---- one collective across a group of threads ---- */

struct job {
	enum wr_coll_kind kind;
	enum wr_algo algo;
	int p, root;
	size_t count; /* elements (of dt: the move kinds too) */
	enum world_dtype dt;
	enum world_op op;
	bool random_floats; /* any floats, checking only agreement */
	bool alias;	    /* all_gather: in inside out */
	bool hook, over;
	size_t segment;
	size_t eager; /* the backend's eager length: messages go in pieces */
	size_t slot;  /* a shared area with slots of this length; 0: none */
	long fail_at;
	uint64_t seed;
};

struct group;

struct rank_run {
	const struct job *j;
	struct group *g;
	struct fake f;
	struct wr_shm shm; /* this rank's view of the group's area */
	unsigned char *in, *out, *orig; /* orig: the input as it was */
	size_t in_len, out_len;
	bool barrier_early; /* left the barrier before all had come */
	int rc;
};

static uint64_t
mix(uint64_t a, uint64_t b)
{
	uint64_t z = a * 0x9e3779b97f4a7c15ull + b + 0x632be59bd9b4e019ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static bool
is_float(enum world_dtype dt)
{
	return dt >= WORLD_FLOAT16;
}

static bool
is_reduction(enum wr_coll_kind k)
{
	return k == WR_COLL_ALL_REDUCE || k == WR_COLL_REDUCE ||
	       k == WR_COLL_REDUCE_SCATTER;
}

static void
put_float(enum world_dtype dt, unsigned char *p, double v)
{
	float f = (float)v;
	uint16_t h;

	switch (dt) {
	case WORLD_FLOAT16:
		h = wr_reduce_f16_from_f32(f);
		memcpy(p, &h, 2);
		break;
	case WORLD_BFLOAT16:
		h = wr_reduce_bf16_from_f32(f);
		memcpy(p, &h, 2);
		break;
	case WORLD_FLOAT32:
		memcpy(p, &f, 4);
		break;
	default:
		memcpy(p, &v, 8);
		break;
	}
}

static double
get_float(enum world_dtype dt, const unsigned char *p)
{
	uint16_t h;
	float f;
	double d;

	switch (dt) {
	case WORLD_FLOAT16:
		memcpy(&h, p, 2);
		return wr_reduce_f16_to_f32(h);
	case WORLD_BFLOAT16:
		memcpy(&h, p, 2);
		return wr_reduce_bf16_to_f32(h);
	case WORLD_FLOAT32:
		memcpy(&f, p, 4);
		return f;
	default:
		memcpy(&d, p, 8);
		return d;
	}
}

/* Small integers, so that every partial result is exact in every dtype
 * (bfloat16 holds integers up to 256, products of +-1 and +-2 are powers
 * of two) and any order of combination gives the same bits. */
static int64_t
small_value(enum world_op op, bool is_unsigned, uint64_t h)
{
	static const int64_t prods[4] = {-2, -1, 1, 2};

	switch (op) {
	case WORLD_PROD:
		return is_unsigned ? 1 + (int64_t)(h % 3) : prods[h % 4];
	case WORLD_MIN:
	case WORLD_MAX:
		return is_unsigned ? (int64_t)(h % 201) : (int64_t)(h % 201) - 100;
	default:
		return is_unsigned ? (int64_t)(h % 9) : (int64_t)(h % 17) - 8;
	}
}

static void
fill_element(const struct job *j, int rank, size_t i, unsigned char *p)
{
	uint64_t h = mix(j->seed ^ (uint64_t)rank << 48, i);
	size_t es = wr_dtype_size(j->dt);
	bool uns = j->dt >= WORLD_UINT8 && j->dt <= WORLD_UINT64;
	int64_t v;

	if (!is_reduction(j->kind) || j->op == WORLD_BAND ||
	    j->op == WORLD_BOR || j->op == WORLD_BXOR) {
		memcpy(p, &h, es);
		return;
	}
	if (j->random_floats) {
		/* Any magnitude, now and then a NaN with a random payload. */
		double m = ldexp((double)(h >> 12) / (double)(1ull << 52),
				 (int)(h % 40) - 20);
		uint32_t nan = 0x7f800001u | (uint32_t)(h >> 41);
		float fnan;

		memcpy(&fnan, &nan, 4);
		put_float(j->dt, p, (h & 255) == 0 ? fnan : (h & 256) ? -m : m);
		return;
	}
	v = small_value(j->op, uns, h >> 8);
	if (is_float(j->dt)) {
		put_float(j->dt, p, (double)v);
	} else {
		memcpy(p, &v, es);
	}
}

struct group {
	const struct job *j;
	struct engine e;
	int arrived; /* barrier: ranks that have entered; __atomic */
	unsigned char *area; /* the shared area, if j->slot */
	struct rank_run r[MAX_P];
};

static unsigned char *
xalloc(size_t len)
{
	unsigned char *p = malloc(len + 1);

	if (p == NULL) {
		abort();
	}
	return p;
}

/* Lay out rank @r's buffers for the job and fill its input. */
static void
setup_rank(struct group *g, int r)
{
	const struct job *j = g->j;
	struct rank_run *rr = &g->r[r];
	size_t es = wr_dtype_size(j->dt), bytes = j->count * es;
	size_t all = (size_t)j->p * bytes;
	bool root = r == j->root;
	static const size_t ins[WR_COLL_NKINDS][2] = {
		/* {in, out} in units: 0 none, 1 bytes, 2 all, 3 all on root
		 * only, 4 bytes but the root's in filled only */
		[WR_COLL_BARRIER] = {0, 0},    [WR_COLL_BROADCAST] = {4, 0},
		[WR_COLL_ALL_REDUCE] = {1, 0}, [WR_COLL_REDUCE] = {1, 0},
		[WR_COLL_ALL_GATHER] = {1, 2}, [WR_COLL_GATHER] = {1, 3},
		[WR_COLL_SCATTER] = {3, 1},    [WR_COLL_REDUCE_SCATTER] = {2, 1},
		[WR_COLL_ALL_TO_ALL] = {2, 2},
	};
	size_t in_u = ins[j->kind][0], out_u = ins[j->kind][1];

	rr->j = j;
	rr->g = g;
	rr->f = (struct fake){.e = &g->e, .rank = r};
	rr->in_len = in_u == 1 || in_u == 4 ? bytes : in_u == 2 || (in_u == 3 && root) ? all : 0;
	rr->out_len = out_u == 1 ? bytes : out_u == 2 || (out_u == 3 && root) ? all : 0;
	rr->in = in_u == 0 || (in_u == 3 && !root) ? NULL : xalloc(rr->in_len);
	rr->out = out_u == 0 || (out_u == 3 && !root) ? NULL : xalloc(rr->out_len);
	if (rr->out != NULL) {
		memset(rr->out, 0xa5, rr->out_len);
	}
	if (rr->in != NULL) {
		memset(rr->in, 0xaa, rr->in_len);
		if (in_u != 4 || root) {
			for (size_t i = 0; i < rr->in_len / es; i++) {
				fill_element(j, r, i, rr->in + i * es);
			}
		}
		rr->orig = xalloc(rr->in_len);
		memcpy(rr->orig, rr->in, rr->in_len);
	}
	if (j->kind == WR_COLL_ALL_GATHER && j->alias) {
		memcpy(rr->out + (size_t)r * bytes, rr->in, bytes);
	}
}

static void *
rank_main(void *arg)
{
	struct rank_run *rr = arg;
	const struct job *j = rr->j;
	struct group *g = rr->g;
	struct wr_coll_ctx c = {
		.rank = rr->f.rank, .size = j->p, .be = &fake_be,
		.impl = &rr->f, .oversubscribed = j->over,
		.scratch = j->hook ? fake_scratch : NULL, .segment = j->segment,
		.eager = j->eager, .shm = j->slot > 0 ? &rr->shm : NULL,
	};
	size_t es = wr_dtype_size(j->dt), bytes = j->count * es;
	const void *in = rr->in;

	if (j->kind == WR_COLL_ALL_GATHER && j->alias) {
		in = rr->out + (size_t)c.rank * bytes;
	}
	switch (j->kind) {
	case WR_COLL_BARRIER:
		__atomic_add_fetch(&g->arrived, 1, __ATOMIC_SEQ_CST);
		rr->rc = wr_algo_barrier(&c, j->algo);
		rr->barrier_early =
			__atomic_load_n(&g->arrived, __ATOMIC_SEQ_CST) < j->p;
		break;
	case WR_COLL_BROADCAST:
		rr->rc = wr_algo_broadcast(&c, rr->in, bytes, j->root, j->algo);
		break;
	case WR_COLL_ALL_REDUCE:
		rr->rc = wr_algo_all_reduce(&c, rr->in, j->count, j->dt, j->op,
					    j->algo);
		break;
	case WR_COLL_REDUCE:
		rr->rc = wr_algo_reduce(&c, rr->in, j->count, j->dt, j->op,
					j->root, j->algo);
		break;
	case WR_COLL_ALL_GATHER:
		rr->rc = wr_algo_all_gather(&c, in, rr->out, bytes, j->algo);
		break;
	case WR_COLL_GATHER:
		rr->rc = wr_algo_gather(&c, rr->in, rr->out, bytes, j->root,
					j->algo);
		break;
	case WR_COLL_SCATTER:
		rr->rc = wr_algo_scatter(&c, rr->in, rr->out, bytes, j->root,
					 j->algo);
		break;
	case WR_COLL_REDUCE_SCATTER:
		rr->rc = wr_algo_reduce_scatter(&c, rr->in, rr->out, j->count,
						j->dt, j->op, j->algo);
		break;
	case WR_COLL_ALL_TO_ALL:
		rr->rc = wr_algo_all_to_all(&c, rr->in, rr->out, bytes, j->algo);
		break;
	case WR_COLL_NKINDS:
		break;
	}
	free(rr->f.scratch);
	return NULL;
}

static int64_t
sign_extend(uint64_t u, size_t es)
{
	unsigned sh = 64 - 8 * (unsigned)es;

	return (int64_t)(u << sh) >> sh;
}

static uint64_t
int_op(enum world_op op, bool sign, size_t es, uint64_t a, uint64_t b)
{
	int64_t sa = sign_extend(a, es), sb = sign_extend(b, es);
	uint64_t mask = es == 8 ? ~0ull : (1ull << (8 * es)) - 1;

	a &= mask;
	b &= mask;
	switch (op) {
	case WORLD_SUM:
		return a + b;
	case WORLD_PROD:
		return a * b;
	case WORLD_MIN:
		return sign ? (sa < sb ? a : b) : (a < b ? a : b);
	case WORLD_MAX:
		return sign ? (sa > sb ? a : b) : (a > b ? a : b);
	case WORLD_BAND:
		return a & b;
	case WORLD_BOR:
		return a | b;
	default:
		return a ^ b;
	}
}

static double
float_op(enum world_op op, double a, double b)
{
	switch (op) {
	case WORLD_PROD:
		return a * b;
	case WORLD_MIN:
		return a < b ? a : b;
	case WORLD_MAX:
		return a > b ? a : b;
	default:
		return a + b;
	}
}

/* Element @i of the reduction of all ranks' inputs, straightforwardly. */
static void
ref_elem(const struct group *g, size_t i, unsigned char *out)
{
	const struct job *j = g->j;
	size_t es = wr_dtype_size(j->dt);
	bool sign = j->dt <= WORLD_INT64;

	if (is_float(j->dt)) {
		double acc = get_float(j->dt, g->r[0].orig + i * es);

		for (int r = 1; r < j->p; r++) {
			acc = float_op(j->op, acc,
				       get_float(j->dt, g->r[r].orig + i * es));
		}
		if (j->op == WORLD_AVG) {
			acc = j->dt == WORLD_FLOAT64
				      ? acc / j->p
				      : (double)((float)acc / (float)j->p);
		}
		put_float(j->dt, out, acc);
	} else {
		uint64_t acc = 0, v;

		memcpy(&acc, g->r[0].orig + i * es, es);
		for (int r = 1; r < j->p; r++) {
			v = 0;
			memcpy(&v, g->r[r].orig + i * es, es);
			acc = int_op(j->op, sign, es, acc, v);
		}
		memcpy(out, &acc, es);
	}
}

static void
describe(const struct job *j, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s p=%d count=%zu root=%d dtype=%d op=%d slot=%zu%s%s",
		 wr_algo_kind_name(j->kind), wr_algo_name(j->algo), j->p,
		 j->count, j->root, j->dt, j->op, j->slot,
		 j->random_floats ? " random" : "", j->alias ? " alias" : "");
}

/* Whether @n bytes at @got equal @want; if not, say where. */
static bool
same(const struct job *j, const char *what, int rank,
     const unsigned char *got, const unsigned char *want, size_t n)
{
	char d[160];

	if (n == 0 || memcmp(got, want, n) == 0) {
		return true;
	}
	for (size_t i = 0; i < n; i++) {
		if (got[i] != want[i]) {
			describe(j, d, sizeof(d));
			printf("# %s: rank %d %s differs at byte %zu\n", d, rank,
			       what, i);
			break;
		}
	}
	return false;
}

/* The reduced vector of the job (count, or size * count, elements). */
static unsigned char *
reference(const struct group *g, size_t n)
{
	size_t es = wr_dtype_size(g->j->dt);
	unsigned char *want = xalloc(n * es);

	for (size_t i = 0; i < n; i++) {
		ref_elem(g, i, want + i * es);
	}
	return want;
}

static bool
check_reduction(const struct group *g)
{
	const struct job *j = g->j;
	size_t es = wr_dtype_size(j->dt), bytes = j->count * es;
	bool good = true;
	unsigned char *want;

	if (j->random_floats) {
		for (int r = 1; r < j->p; r++) {
			good &= same(j, "bits", r, g->r[r].in, g->r[0].in, bytes);
		}
		return good;
	}
	want = reference(g, j->kind == WR_COLL_REDUCE_SCATTER
				    ? (size_t)j->p * j->count
				    : j->count);
	for (int r = 0; r < j->p; r++) {
		const struct rank_run *rr = &g->r[r];

		if (j->kind == WR_COLL_ALL_REDUCE ||
		    (j->kind == WR_COLL_REDUCE && r == j->root)) {
			good &= same(j, "result", r, rr->in, want, bytes);
		} else if (j->kind == WR_COLL_REDUCE) {
			good &= same(j, "untouched buf", r, rr->in, rr->orig, bytes);
		} else {
			good &= same(j, "block", r, rr->out,
				     want + (size_t)r * bytes, bytes);
			good &= same(j, "input", r, rr->in, rr->orig, rr->in_len);
		}
	}
	free(want);
	return good;
}

static bool
check_move(const struct group *g)
{
	const struct job *j = g->j;
	size_t bytes = j->count * wr_dtype_size(j->dt);
	const struct rank_run *root = &g->r[j->root];
	bool good = true;

	for (int r = 0; r < j->p; r++) {
		const struct rank_run *rr = &g->r[r];

		for (int i = 0; i < j->p; i++) {
			const struct rank_run *ri = &g->r[i];
			size_t ob = (size_t)i * bytes, rb = (size_t)r * bytes;

			if (j->kind == WR_COLL_ALL_GATHER ||
			    (j->kind == WR_COLL_GATHER && r == j->root)) {
				good &= same(j, "gathered", r, rr->out + ob,
					     ri->orig, bytes);
			} else if (j->kind == WR_COLL_ALL_TO_ALL) {
				good &= same(j, "exchanged", r, rr->out + ob,
					     ri->orig + rb, bytes);
			}
		}
		if (j->kind == WR_COLL_BROADCAST) {
			good &= same(j, "broadcast", r, rr->in, root->orig, bytes);
		} else if (j->kind == WR_COLL_SCATTER) {
			good &= same(j, "scattered", r, rr->out,
				     root->orig + (size_t)r * bytes, bytes);
		}
		if (rr->in != NULL && j->kind != WR_COLL_BROADCAST &&
		    !(j->kind == WR_COLL_ALL_GATHER && j->alias)) {
			good &= same(j, "input", r, rr->in, rr->orig, rr->in_len);
		}
	}
	return good;
}

/* Run the job on j->p threads: whether it did what it should. */
static bool
run_case(const struct job *j)
{
	struct group *g = calloc(1, sizeof(*g));
	pthread_t t[MAX_P];
	bool good = true, failed = false;
	char d[160];

	if (g == NULL) {
		abort();
	}
	g->j = j;
	fake_engine_init(&g->e, 20000, j->fail_at);
	if (j->slot > 0) {
		g->area = calloc(1, wr_shm_size(j->p, j->slot));
	}
	for (int r = 0; r < j->p; r++) {
		setup_rank(g, r);
		g->r[r].shm = (struct wr_shm){.base = g->area, .slot = j->slot};
	}
	for (int r = 0; r < j->p; r++) {
		if (pthread_create(&t[r], NULL, rank_main, &g->r[r]) != 0) {
			abort();
		}
	}
	for (int r = 0; r < j->p; r++) {
		int rc;

		pthread_join(t[r], NULL);
		rc = g->r[r].rc;
		failed |= rc != 0;
		/* An injected failure: a rank whose part was over may have
		 * returned 0, the others the failure, none a timeout. */
		good &= j->fail_at > 0 ? rc == 0 || rc == -EIO : rc == 0;
		good &= rc != 0 || !g->r[r].barrier_early;
	}
	if (j->fail_at > 0) {
		good &= failed && g->e.poison == -EIO;
	}
	describe(j, d, sizeof(d));
	if (!good) {
		printf("# %s: rc", d);
		for (int r = 0; r < j->p; r++) {
			printf(" %d%s", g->r[r].rc,
			       g->r[r].barrier_early ? " (left early)" : "");
		}
		printf("%s\n", g->e.poison == -ETIMEDOUT ? " (deadlock)" : "");
	}
	if (g->e.sends != NULL || g->e.recvs != NULL) {
		printf("# %s: requests left posted\n", d);
		good = false;
	}
	if (good && !failed) {
		good = is_reduction(j->kind) ? check_reduction(g) : check_move(g);
	}
	for (int r = 0; r < j->p; r++) {
		free(g->r[r].in);
		free(g->r[r].out);
		free(g->r[r].orig);
	}
	fake_engine_finish(&g->e);
	free(g->area);
	free(g);
	return good;
}

/* ---- the sweep ---- */

struct sweep {
	uint64_t seed;
	bool full;
	unsigned combo;	  /* the next dtype x op pair, round robin */
	unsigned cases, fails;
};

/* The @n-th valid dtype x op pair, cycling; floats only if @floats. */
static void
next_combo(struct sweep *sw, struct job *j, bool floats)
{
	for (;;) {
		unsigned k = sw->combo++ % (12 * 8);
		enum world_dtype dt = (enum world_dtype)(k / 8);
		enum world_op op = (enum world_op)(k % 8);

		if (wr_reduce_check(dt, op) == 0 && (!floats || is_float(dt))) {
			j->dt = dt;
			j->op = op;
			return;
		}
	}
}

static bool
run_counted(struct sweep *sw, const struct job *j)
{
	bool good = run_case(j);

	sw->cases++;
	sw->fails += !good;
	return good;
}

/* The shm algorithm always has an area, with slots small enough to
 * take many chunks, or of the size a group of p gets; the others have
 * one now and then, so that AUTO picks it. */
static size_t
slot_for(const struct job *j)
{
	static const size_t slots[] = {64, 192, 4096};
	unsigned k = (unsigned)(j->seed >> 6) % 4;

	if (j->algo != WR_ALGO_SHM && (j->seed & 1024) == 0) {
		return 0;
	}
	return k < 3 ? slots[k] : wr_shm_slot(j->p);
}

/* One job of the sweep, with its dtype and op (the next pair in turn,
 * or in the full sweep every pair), segment and scratch varied. */
static bool
sweep_job(struct sweep *sw, struct job j)
{
	static const size_t segments[] = {0, 64, 1000, 4096};
	bool good = true;

	j.seed = mix(sw->seed, sw->cases);
	j.hook = (j.seed & 1) != 0;
	j.over = (j.seed & 2) != 0;
	j.alias = j.kind == WR_COLL_ALL_GATHER && (j.seed & 4) != 0;
	j.segment = segments[(j.seed >> 3) % 4];
	j.eager = (j.seed & 32) != 0 ? 16 : 0;
	j.slot = slot_for(&j);
	if (!sw->full || !is_reduction(j.kind) || j.count > 1009) {
		next_combo(sw, &j, false);
		return run_counted(sw, &j);
	}
	for (unsigned k = 0; k < 12 * 8; k++) {
		j.dt = (enum world_dtype)(k / 8);
		j.op = (enum world_op)(k % 8);
		if (wr_reduce_check(j.dt, j.op) == 0) {
			good &= run_counted(sw, &j);
		}
	}
	return good;
}

static void
sweep_pair(struct sweep *sw, enum wr_coll_kind kind, enum wr_algo algo)
{
	static const size_t sample[] = {0, 1, 7, 1009};
	static const size_t full[] = {0, 1, 2, 3, 7, 64, 1009, 4099, 65537};
	const size_t *counts = sw->full ? full : sample;
	size_t ncounts = sw->full ? 9 : 4;
	bool rooted = kind == WR_COLL_BROADCAST || kind == WR_COLL_REDUCE ||
		      kind == WR_COLL_GATHER || kind == WR_COLL_SCATTER;
	unsigned before = sw->fails;

	for (int p = 1; p <= MAX_P; p++) {
		for (size_t c = 0; c < ncounts; c++) {
			for (int root = 0; root < (rooted ? p : 1); root++) {
				sweep_job(sw, (struct job){.kind = kind,
							   .algo = algo,
							   .p = p,
							   .root = root,
							   .count = counts[c]});
			}
		}
		/* The long vector once per size, at a random root, in the
		 * sample: multi-segment rings, step numbers past 255. */
		if (!sw->full && (kind != WR_COLL_BARRIER)) {
			sweep_job(sw, (struct job){
				.kind = kind, .algo = algo, .p = p,
				.root = (int)(mix(sw->seed, (uint64_t)p) % (uint64_t)p),
				.count = 65537});
		}
	}
	ok(sw->fails == before, "%s/%s: sizes 1-%d, every root",
	   wr_algo_kind_name(kind), wr_algo_name(algo), MAX_P);
}

/* How many (kind, algorithm) pairs, AUTO included. */
static int
count_pairs(void)
{
	int n = 0;

	for (int k = 0; k < WR_COLL_NKINDS; k++) {
		for (int a = 0; a < WR_ALGO_NALGOS; a++) {
			n += wr_algo_valid(k, a);
		}
	}
	return n;
}

static void
sweep_all(struct sweep *sw)
{
	for (int k = 0; k < WR_COLL_NKINDS; k++) {
		for (int a = 0; a < WR_ALGO_NALGOS; a++) {
			if (wr_algo_valid(k, a)) {
				sweep_pair(sw, k, a);
			}
		}
	}
}

/* Random floats, NaNs too: all_reduce gives every rank the same bits. */
static void
sweep_identical(struct sweep *sw)
{
	static const enum wr_algo algos[] = {
		WR_ALGO_RECURSIVE_DOUBLING, WR_ALGO_RABENSEIFNER, WR_ALGO_RING,
		WR_ALGO_SHM,
	};
	static const size_t counts[] = {1, 7, 1009, 65537};

	for (size_t a = 0; a < 4; a++) {
		unsigned before = sw->fails;

		for (int p = 2; p <= MAX_P; p++) {
			for (size_t c = 0; c < 4; c++) {
				struct job j = {.kind = WR_COLL_ALL_REDUCE,
						.algo = algos[a], .p = p,
						.count = counts[c],
						.random_floats = true};

				j.seed = mix(sw->seed, sw->cases);
				j.segment = (j.seed & 1) ? 1000 : 0;
				j.slot = slot_for(&j);
				next_combo(sw, &j, true);
				run_counted(sw, &j);
			}
		}
		ok(sw->fails == before,
		   "all_reduce/%s of random floats: the same bits on every rank",
		   wr_algo_name(algos[a]));
	}
}

/* A post fails part way: the ranks get the error (or 0 if their part was
 * done), and none hangs or leaves a request behind. The shm algorithm
 * posts nothing: test_shm_missing fails it. */
static void
test_failures(struct sweep *sw)
{
	for (int k = 0; k < WR_COLL_NKINDS; k++) {
		unsigned before = sw->fails;

		for (int a = 1; a < WR_ALGO_NALGOS; a++) {
			for (long at = 1; at <= 8 && a != WR_ALGO_SHM && wr_algo_valid(k, a);
			     at += 3) {
				struct job j = {.kind = k, .algo = a, .p = 5,
						.root = 2, .count = 1009,
						.fail_at = at};

				j.seed = mix(sw->seed, sw->cases);
				next_combo(sw, &j, false);
				run_counted(sw, &j);
			}
		}
		ok(sw->fails == before, "%s: a failed post fails the collective",
		   wr_algo_kind_name(k));
	}
}

/* One rank of test_shm_missing. */
struct absent_run {
	struct fake f;
	struct wr_shm shm;
	enum wr_coll_kind kind;
	int root;
	size_t count;
	int rc;
};

static void *
absent_main(void *arg)
{
	struct absent_run *a = arg;
	struct wr_coll_ctx c = {.rank = a->f.rank, .size = 5, .be = &fake_be,
				.impl = &a->f, .shm = &a->shm};
	int32_t buf[2048] = {0};

	if (a->kind == WR_COLL_BARRIER) {
		a->rc = wr_algo_barrier(&c, WR_ALGO_SHM);
	} else if (a->kind == WR_COLL_BROADCAST) {
		a->rc = wr_algo_broadcast(&c, buf, a->count * 4, a->root, WR_ALGO_SHM);
	} else {
		a->rc = wr_algo_all_reduce(&c, buf, a->count, WORLD_INT32, WORLD_SUM,
					   WR_ALGO_SHM);
	}
	return NULL;
}

/* Rank 3 of 5 never comes: every other rank's wait ends (at the fake's
 * deadline here), and what it says is missing, for the hang report, is
 * rank 3; so it is when rank 3 is a small broadcast's root (one from
 * rank 0 of up to 4 KiB needs only rank 0). */
static void
test_shm_missing(void)
{
	static const struct { enum wr_coll_kind kind; int root; size_t count; } cases[] = {
		{WR_COLL_BARRIER, 0, 0}, {WR_COLL_BROADCAST, 0, 2048},
		{WR_COLL_BROADCAST, 3, 7}, {WR_COLL_ALL_REDUCE, 0, 7},
		{WR_COLL_ALL_REDUCE, 0, 2048},
	};
	bool good = true;

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct engine e;
		struct absent_run a[5];
		unsigned char *area = calloc(1, wr_shm_size(5, 4096));
		pthread_t t[5];

		fake_engine_init(&e, 200, 0);
		for (int r = 0; r < 5; r++) {
			a[r] = (struct absent_run){
				.f = {.e = &e, .rank = r, .missing = -1},
				.shm = {.base = area, .slot = 4096},
				.kind = cases[k].kind, .root = cases[k].root,
				.count = cases[k].count,
			};
			if (r != 3) {
				pthread_create(&t[r], NULL, absent_main, &a[r]);
			}
		}
		for (int r = 0; r < 5; r++) {
			if (r != 3) {
				pthread_join(t[r], NULL);
				good &= a[r].rc == -ETIMEDOUT && a[r].f.missing == 3;
			}
		}
		if (!good) {
			printf("# case %zu: rc %d %d %d %d, missing %d %d %d %d\n", k,
			       a[0].rc, a[1].rc, a[2].rc, a[4].rc, a[0].f.missing,
			       a[1].f.missing, a[2].f.missing, a[4].f.missing);
		}
		fake_engine_finish(&e);
		free(area);
	}
	ok(good, "shm: a member that never comes ends the others' waits, named as missing");
}

/* ---- back to back through one area ---- */

#define SEQ_OPS 400
#define SEQ_MAX 3000 /* elements */

struct seq_run {
	struct fake f;
	struct wr_shm shm;
	int p;
	uint64_t seed;
	long bad; /* the first op that went wrong, or -1 */
};

/* What rank @r contributes at element @i of op @k. */
static int32_t
seq_value(long k, int r, size_t i)
{
	return (int32_t)((k * 7 + r * 13 + (long)i) % 1000);
}

/* One op of the sequence, the same on every rank: 0 if it went right. */
static int
seq_op(struct wr_coll_ctx *c, long k, uint64_t seed, int32_t *buf, int32_t *out)
{
	static const size_t counts[] = {1, 9, 600, 1100, SEQ_MAX};
	uint64_t h = mix(seed, (uint64_t)k);
	size_t n = counts[h % 5];
	int what = (int)((h >> 8) % 4), root = (int)((h >> 16) % (uint64_t)c->size);
	int rc;

	for (size_t i = 0; i < n; i++) {
		buf[i] = what == 1 && c->rank != root ? -1 : seq_value(k, c->rank, i);
	}
	switch (what) {
	case 0:
		return wr_algo_barrier(c, WR_ALGO_SHM);
	case 1:
		rc = wr_algo_broadcast(c, buf, n * 4, root, WR_ALGO_SHM);
		for (size_t i = 0; rc == 0 && i < n; i++) {
			rc = buf[i] == seq_value(k, root, i) ? 0 : -EBADMSG;
		}
		return rc;
	case 2:
		rc = wr_algo_all_reduce(c, buf, n, WORLD_INT32, WORLD_SUM, WR_ALGO_SHM);
		for (size_t i = 0; rc == 0 && i < n; i++) {
			int32_t want = 0;

			for (int q = 0; q < c->size; q++) {
				want += seq_value(k, q, i);
			}
			rc = buf[i] == want ? 0 : -EBADMSG;
		}
		return rc;
	default:
		rc = wr_algo_all_gather(c, buf, out, n * 4, WR_ALGO_SHM);
		for (size_t i = 0; rc == 0 && i < n * (size_t)c->size; i++) {
			rc = out[i] == seq_value(k, (int)(i / n), i % n) ? 0 : -EBADMSG;
		}
		return rc;
	}
}

static void *
seq_main(void *arg)
{
	struct seq_run *s = arg;
	struct wr_coll_ctx c = {.rank = s->f.rank, .size = s->p, .be = &fake_be,
				.impl = &s->f, .shm = &s->shm};
	int32_t *buf = calloc(SEQ_MAX, 4), *out = calloc(SEQ_MAX * MAX_P, 4);

	s->bad = -1;
	for (long k = 0; k < SEQ_OPS && s->bad < 0 && buf != NULL && out != NULL; k++) {
		/* Now and then a rank lags, so that the others run ahead. */
		for (uint64_t y = mix(s->seed ^ (uint64_t)s->f.rank, (uint64_t)k) % 64; y < 3; y++) {
			sched_yield();
		}
		if (seq_op(&c, k, s->seed, buf, out) != 0) {
			s->bad = k;
		}
	}
	free(buf);
	free(out);
	return NULL;
}

/* Barriers, broadcasts, all_reduces and all_gathers of every size, one
 * after another through one area with 8 KiB slots (so each of their
 * ways: the halves, the last member combining, chunks), some ranks
 * lagging: each result is right, so no operation wrote what another
 * still read. */
static void
test_shm_sequence(uint64_t seed)
{
	bool good = true;

	for (int p = 2; p <= MAX_P; p += 3) {
		struct engine e;
		struct seq_run r[MAX_P];
		unsigned char *area = calloc(1, wr_shm_size(p, 8192));
		pthread_t t[MAX_P];

		fake_engine_init(&e, 20000, 0);
		for (int q = 0; q < p; q++) {
			r[q] = (struct seq_run){.f = {.e = &e, .rank = q}, .p = p,
						.shm = {.base = area, .slot = 8192},
						.seed = seed};
			pthread_create(&t[q], NULL, seq_main, &r[q]);
		}
		for (int q = 0; q < p; q++) {
			pthread_join(t[q], NULL);
			if (r[q].bad >= 0) {
				printf("# p=%d: rank %d wrong at op %ld\n", p, q, r[q].bad);
				good = false;
			}
		}
		fake_engine_finish(&e);
		free(area);
	}
	ok(good, "shm: %d mixed operations back to back, lagging ranks, all right", SEQ_OPS);
}

/* One rank of test_shm_ring. */
static void *
ring_main(void *arg)
{
	struct seq_run *s = arg;
	struct wr_coll_ctx c = {.rank = s->f.rank, .size = s->p, .be = &fake_be,
				.impl = &s->f, .shm = &s->shm};
	struct timespec late = {0, 20000000};
	int32_t v[3];

	s->bad = -1;
	if (s->f.rank == 2) {
		nanosleep(&late, NULL);
	}
	for (long k = 0; k < 100 && s->bad < 0; k++) {
		for (int i = 0; i < 3; i++) {
			v[i] = s->f.rank == 0 ? seq_value(k, 0, (size_t)i) : -1;
		}
		if (wr_algo_broadcast(&c, v, sizeof(v), 0, WR_ALGO_SHM) != 0 ||
		    v[0] != seq_value(k, 0, 0) || v[2] != seq_value(k, 0, 2)) {
			s->bad = k;
		}
	}
	return NULL;
}

/* 100 small broadcasts from rank 0 while rank 2 starts late: the root
 * runs ahead only as far as the ring holds, and every rank reads each. */
static void
test_shm_ring(void)
{
	struct engine e;
	struct seq_run r[4];
	unsigned char *area = calloc(1, wr_shm_size(4, 8192));
	pthread_t t[4];
	bool good = true;

	fake_engine_init(&e, 20000, 0);
	for (int q = 0; q < 4; q++) {
		r[q] = (struct seq_run){.f = {.e = &e, .rank = q}, .p = 4,
					.shm = {.base = area, .slot = 8192}};
		pthread_create(&t[q], NULL, ring_main, &r[q]);
	}
	for (int q = 0; q < 4; q++) {
		pthread_join(t[q], NULL);
		if (r[q].bad >= 0) {
			printf("# rank %d wrong at broadcast %ld\n", q, r[q].bad);
			good = false;
		}
	}
	fake_engine_finish(&e);
	free(area);
	ok(good, "shm: small broadcasts while a rank lags: the root waits for the ring");
}

struct blind {
	struct fake f;
	int rc;
};

/* Both ends send first and wait, as a blocking send would. */
static void *
blind_send(void *arg)
{
	struct blind *b = arg;
	struct wr_coll_xfer x[2];
	static const char msg[] = "hello";
	char in[sizeof(msg)];

	b->rc = fake_isend(&b->f, 1 - b->f.rank, 0, msg, sizeof(msg), &x[0]);
	if (b->rc == 0) {
		b->rc = fake_waitall(&b->f, x, 1);
	}
	if (b->rc == 0 &&
	    fake_irecv(&b->f, 1 - b->f.rank, 0, in, sizeof(in), &x[1]) == 0) {
		fake_waitall(&b->f, &x[1], 1);
	}
	return NULL;
}

/* The fake is as strict as a rendezvous transport: two sends that wait
 * for their receives before posting them deadlock, and time out. */
static void
test_fake(void)
{
	struct engine e;
	struct blind b[2] = {{.f = {.e = &e, .rank = 0}},
			     {.f = {.e = &e, .rank = 1}}};
	pthread_t t[2];

	fake_engine_init(&e, 200, 0);
	for (int i = 0; i < 2; i++) {
		pthread_create(&t[i], NULL, blind_send, &b[i]);
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
	}
	ok(b[0].rc == -ETIMEDOUT && b[1].rc == -ETIMEDOUT &&
		   e.sends == NULL && e.recvs == NULL,
	   "fake backend: blind sends deadlock and time out, nothing left");
	fake_engine_finish(&e);
}

static void
test_invalid(void)
{
	struct fake f = {0};
	struct wr_coll_ctx c = {.rank = 0, .size = 4, .be = &fake_be,
				.impl = &f};
	unsigned char buf[8] = {0}, out[32];

	is_int(wr_algo_all_reduce(&c, buf, 2, WORLD_INT32, WORLD_SUM,
				  WR_ALGO_BINOMIAL),
	       -EINVAL, "all_reduce has no binomial: -EINVAL");
	is_int(wr_algo_barrier(&c, WR_ALGO_RING), -EINVAL,
	       "barrier has no ring: -EINVAL");
	is_int(wr_algo_all_to_all(&c, buf, out, 2, WR_ALGO_NALGOS), -EINVAL,
	       "an algorithm past the enum: -EINVAL");
	is_int(wr_algo_reduce_scatter(&c, out, buf, 1, WORLD_INT8, WORLD_SUM,
				      WR_ALGO_RABENSEIFNER),
	       -EINVAL, "reduce_scatter has no rabenseifner: -EINVAL");
}

static bool
forced_is(const enum wr_algo *got, const enum wr_algo *want)
{
	return memcmp(got, want, sizeof(enum wr_algo) * WR_COLL_NKINDS) == 0;
}

static void
test_names(void)
{
	enum wr_algo f[WR_COLL_NKINDS], want[WR_COLL_NKINDS] = {0};
	bool named = true;

	for (int a = 0; a < WR_ALGO_NALGOS; a++) {
		named &= wr_algo_name(a) != NULL;
	}
	ok(named, "every algorithm has a name");
	is_str(wr_algo_name(WR_ALGO_RECURSIVE_DOUBLING), "recursive_doubling",
	       "name: recursive_doubling");
	ok(wr_algo_name(WR_ALGO_NALGOS) == NULL &&
		   wr_algo_kind_name(WR_COLL_NKINDS) == NULL,
	   "no name past the enums");
	is_str(wr_algo_kind_name(WR_COLL_ALL_TO_ALL), "all_to_all",
	       "kind name: all_to_all");
	ok(wr_algo_valid(WR_COLL_GATHER, WR_ALGO_AUTO) &&
		   !wr_algo_valid(WR_COLL_GATHER, WR_ALGO_RING) &&
		   wr_algo_valid(WR_COLL_ALL_GATHER, WR_ALGO_BRUCK),
	   "validity table");

	want[WR_COLL_ALL_REDUCE] = WR_ALGO_RING;
	want[WR_COLL_BROADCAST] = WR_ALGO_BINOMIAL;
	ok(wr_algo_parse("all_reduce=ring,broadcast=binomial", f) == 0 &&
		   forced_is(f, want),
	   "parse: kind=algorithm items");
	memset(want, 0, sizeof(want));
	want[WR_COLL_ALL_REDUCE] = WR_ALGO_RING;
	want[WR_COLL_ALL_GATHER] = WR_ALGO_RING;
	want[WR_COLL_REDUCE_SCATTER] = WR_ALGO_RING;
	ok(wr_algo_parse("ring", f) == 0 && forced_is(f, want),
	   "parse: a bare name applies to every kind that has it");
	want[WR_COLL_ALL_REDUCE] = WR_ALGO_AUTO;
	ok(wr_algo_parse("ring,all_reduce=auto", f) == 0 && forced_is(f, want),
	   "parse: later items override, auto included");
	memset(want, 0, sizeof(want));
	ok(wr_algo_parse("", f) == 0 && forced_is(f, want) &&
		   wr_algo_parse(NULL, f) == 0 && forced_is(f, want),
	   "parse: empty and NULL are all auto");
	f[0] = WR_ALGO_LINEAR;
	ok(wr_algo_parse("bogus", f) == -EINVAL &&
		   wr_algo_parse("all_reduce=binomial", f) == -EINVAL &&
		   wr_algo_parse("nokind=ring", f) == -EINVAL &&
		   wr_algo_parse("ring,", f) == -EINVAL &&
		   wr_algo_parse(",ring", f) == -EINVAL &&
		   wr_algo_parse("all_reduce=", f) == -EINVAL &&
		   wr_algo_parse("Ring", f) == -EINVAL && f[0] == WR_ALGO_LINEAR,
	   "parse: -EINVAL for unknown or misplaced names, nothing written");
}

static void
test_pick(void)
{
	enum wr_algo f[WR_COLL_NKINDS] = {0};
	size_t K = 1024, M = 1024 * 1024;

	ok(wr_algo_pick(WR_COLL_ALL_REDUCE, 8, 1 * K, 0, NULL) ==
			   WR_ALGO_RECURSIVE_DOUBLING &&
		   wr_algo_pick(WR_COLL_ALL_REDUCE, 8, 64 * K, 0, NULL) ==
			   WR_ALGO_RABENSEIFNER &&
		   wr_algo_pick(WR_COLL_ALL_REDUCE, 8, 8 * M, 0, NULL) ==
			   WR_ALGO_RING &&
		   wr_algo_pick(WR_COLL_ALL_REDUCE, 8, 2 * M, 0, NULL) ==
			   WR_ALGO_RABENSEIFNER &&
		   wr_algo_pick(WR_COLL_ALL_REDUCE, 8, 1 * M, WR_PICK_OVER, NULL) ==
			   WR_ALGO_RING &&
		   wr_algo_pick(WR_COLL_ALL_REDUCE, 8, M / 2, WR_PICK_OVER, NULL) ==
			   WR_ALGO_RABENSEIFNER,
	   "pick all_reduce: 16 KiB, and 4 MiB (1 MiB when oversubscribed)");
	ok(wr_algo_pick(WR_COLL_BROADCAST, 4, M, 0, NULL) ==
			   WR_ALGO_BINOMIAL &&
		   wr_algo_pick(WR_COLL_BROADCAST, 8, 32 * K, 0, NULL) ==
			   WR_ALGO_BINOMIAL &&
		   wr_algo_pick(WR_COLL_BROADCAST, 8, M, 0, NULL) ==
			   WR_ALGO_SCATTER_ALLGATHER,
	   "pick broadcast: binomial below 8 ranks or 64 KiB");
	ok(wr_algo_pick(WR_COLL_ALL_GATHER, 8, K, 0, NULL) ==
			   WR_ALGO_RECURSIVE_DOUBLING &&
		   wr_algo_pick(WR_COLL_ALL_GATHER, 6, K, 0, NULL) ==
			   WR_ALGO_BRUCK &&
		   wr_algo_pick(WR_COLL_ALL_GATHER, 6, M, 0, NULL) ==
			   WR_ALGO_RING,
	   "pick all_gather: 80 KiB in all");
	ok(wr_algo_pick(WR_COLL_REDUCE, 8, K, 0, NULL) ==
			   WR_ALGO_BINOMIAL &&
		   wr_algo_pick(WR_COLL_REDUCE, 8, M, 0, NULL) ==
			   WR_ALGO_REDUCE_SCATTER_GATHER &&
		   wr_algo_pick(WR_COLL_GATHER, 8, K, 0, NULL) ==
			   WR_ALGO_BINOMIAL &&
		   wr_algo_pick(WR_COLL_SCATTER, 8, M, 0, NULL) ==
			   WR_ALGO_LINEAR,
	   "pick reduce, gather, scatter");
	ok(wr_algo_pick(WR_COLL_ALL_TO_ALL, 8, 64, 0, NULL) ==
			   WR_ALGO_BRUCK &&
		   wr_algo_pick(WR_COLL_ALL_TO_ALL, 8, 64 * K, 0, NULL) ==
			   WR_ALGO_PAIRWISE &&
		   wr_algo_pick(WR_COLL_REDUCE_SCATTER, 8, K, 0, NULL) ==
			   WR_ALGO_RECURSIVE_HALVING &&
		   wr_algo_pick(WR_COLL_REDUCE_SCATTER, 8, M, 0, NULL) ==
			   WR_ALGO_RING,
	   "pick all_to_all, reduce_scatter");
	ok(wr_algo_pick(WR_COLL_ALL_REDUCE, 8, 16 * M, WR_PICK_SHM | WR_PICK_OVER, NULL) ==
			   WR_ALGO_SHM &&
		   wr_algo_pick(WR_COLL_ALL_REDUCE, 2, M - 1, WR_PICK_SHM, NULL) == WR_ALGO_SHM &&
		   wr_algo_pick(WR_COLL_ALL_REDUCE, 2, M, WR_PICK_SHM, NULL) ==
			   WR_ALGO_RABENSEIFNER &&
		   wr_algo_pick(WR_COLL_BARRIER, 2, 0, WR_PICK_SHM, NULL) == WR_ALGO_SHM &&
		   wr_algo_pick(WR_COLL_BROADCAST, 8, 4 * K, WR_PICK_SHM | WR_PICK_OVER, NULL) ==
			   WR_ALGO_SHM &&
		   wr_algo_pick(WR_COLL_BROADCAST, 8, 4, WR_PICK_SHM | WR_PICK_OVER, NULL) ==
			   WR_ALGO_SHM &&
		   wr_algo_pick(WR_COLL_BROADCAST, 2, 16 * K - 1, WR_PICK_SHM, NULL) ==
			   WR_ALGO_SHM &&
		   wr_algo_pick(WR_COLL_BROADCAST, 2, 16 * K, WR_PICK_SHM, NULL) ==
			   WR_ALGO_BINOMIAL &&
		   wr_algo_pick(WR_COLL_ALL_GATHER, 8, 32 * K - 1, WR_PICK_SHM, NULL) ==
			   WR_ALGO_SHM &&
		   wr_algo_pick(WR_COLL_ALL_GATHER, 8, 32 * K, WR_PICK_SHM, NULL) ==
			   WR_ALGO_RING &&
		   wr_algo_pick(WR_COLL_ALL_GATHER, 8, M, WR_PICK_SHM | WR_PICK_OVER, NULL) ==
			   WR_ALGO_SHM &&
		   wr_algo_pick(WR_COLL_GATHER, 8, K, WR_PICK_SHM, NULL) == WR_ALGO_BINOMIAL,
	   "pick: shm where the group has an area, by size and load");
	f[WR_COLL_ALL_REDUCE] = WR_ALGO_SHM;
	ok(wr_algo_pick(WR_COLL_ALL_REDUCE, 8, 1, 0, f) == WR_ALGO_RECURSIVE_DOUBLING &&
		   wr_algo_pick(WR_COLL_ALL_REDUCE, 8, 1, WR_PICK_SHM, f) == WR_ALGO_SHM,
	   "pick: shm forced without an area is the automatic choice");
	f[WR_COLL_ALL_REDUCE] = WR_ALGO_RING;
	ok(wr_algo_pick(WR_COLL_ALL_REDUCE, 8, 1, 0, f) == WR_ALGO_RING &&
		   wr_algo_pick(WR_COLL_BARRIER, 8, 0, 0, f) ==
			   WR_ALGO_DISSEMINATION,
	   "pick: what is forced wins");
}

int
main(void)
{
	struct sweep sw = {.seed = (uint64_t)time(NULL)};
	const char *env = getenv("WORLD_TEST_SEED");
	const char *full = getenv("WORLD_TEST_FULL");

	if (env != NULL) {
		sw.seed = strtoull(env, NULL, 0);
	}
	sw.full = full != NULL && strcmp(full, "1") == 0;
	plan(count_pairs() + 4 + WR_COLL_NKINDS + 1 + 3 + 4 + 10 + 8);
	printf("# seed %llu (WORLD_TEST_SEED=%llu replays)%s\n",
	       (unsigned long long)sw.seed, (unsigned long long)sw.seed,
	       sw.full ? ", full sweep" : "");
	test_names();
	test_pick();
	test_fake();
	test_shm_missing();
	test_shm_sequence(sw.seed);
	test_shm_ring();
	test_invalid();
	sweep_all(&sw);
	sweep_identical(&sw);
	test_failures(&sw);
	printf("# %u cases, %u failed\n", sw.cases, sw.fails);
	return done_testing();
}
