/* SPDX-License-Identifier: MIT */
/*
 * collmismatch: every collective called differently by its members (in
 * kind, count, dtype, op or root), small and large, blocking and started:
 * every member fails with WORLD_EMISMATCH and the message naming the
 * first member that differs, and the group's next collectives, called
 * alike, give the right results. Runs on shm (through the group's shared
 * area) and on the TCP providers (through messages); 3 ranks or more.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wtap.h"

#define T 60000
/* A small count, and one that takes the large algorithms (800 KB of
 * float64, chunks of the shared area). */
#define SMALL 4
#define LARGE 100000

enum what { KIND, COUNT, DTYPE, OP, ROOT, NWHATS };

static const char *const what_names[NWHATS] = { "kind", "count", "dtype", "op", "root" };

enum kind { BARRIER, BROADCAST, ALL_REDUCE, REDUCE, ALL_GATHER, GATHER, SCATTER,
	    REDUCE_SCATTER, ALL_TO_ALL, NKINDS };

static const char *const kind_names[NKINDS] = {
	"barrier", "broadcast", "all_reduce", "reduce", "all_gather", "gather",
	"scatter", "reduce_scatter", "all_to_all",
};

/* One member's call. */
struct call {
	enum kind kind;
	size_t count;
	enum world_dtype dt;
	enum world_op op;
	int root;
};

static bool
has_root(enum kind k)
{
	return k == BROADCAST || k == REDUCE || k == GATHER || k == SCATTER;
}

static bool
reduces(enum kind k)
{
	return k == ALL_REDUCE || k == REDUCE || k == REDUCE_SCATTER;
}

static bool
applies(enum kind k, enum what x)
{
	return x == KIND || (k != BARRIER && (x == COUNT || x == DTYPE)) ||
	       (x == OP && reduces(k)) || (x == ROOT && has_root(k));
}

static int
run(struct world_coll *c, const struct call *a, bool started)
{
	size_t n = (size_t)world_coll_size(c) * (a->count + 1);
	void *in = calloc(n, 8), *out = calloc(n, 8);
	struct world_coll_req *q = NULL;
	int rc = -ENOMEM;

	if (in == NULL || out == NULL) {
		goto out;
	}
	switch (a->kind) {
	case BARRIER:
		rc = started ? world_coll_ibarrier(c, &q) : world_coll_barrier(c, T);
		break;
	case BROADCAST:
		rc = world_coll_broadcast(c, out, a->count, a->dt, a->root, T);
		break;
	case ALL_REDUCE:
		rc = started ? world_coll_iall_reduce(c, out, a->count, a->dt, a->op, &q)
			     : world_coll_all_reduce(c, out, a->count, a->dt, a->op, T);
		break;
	case REDUCE:
		rc = world_coll_reduce(c, out, a->count, a->dt, a->op, a->root, T);
		break;
	case ALL_GATHER:
		rc = world_coll_all_gather(c, in, out, a->count, a->dt, T);
		break;
	case GATHER:
		rc = world_coll_gather(c, in, out, a->count, a->dt, a->root, T);
		break;
	case SCATTER:
		rc = world_coll_scatter(c, in, out, a->count, a->dt, a->root, T);
		break;
	case REDUCE_SCATTER:
		rc = world_coll_reduce_scatter(c, in, out, a->count, a->dt, a->op, T);
		break;
	case ALL_TO_ALL:
		rc = world_coll_all_to_all(c, in, out, a->count, a->dt, T);
		break;
	case NKINDS:
		break;
	}
	if (rc == 0 && q != NULL) {
		rc = world_coll_wait(q, T, NULL);
	}
	world_coll_req_free(q);
out:
	free(in);
	free(out);
	return rc;
}

/* Member @d's call where the others make @a, differing in @x. */
static struct call
differ(const struct call *a, enum what x)
{
	struct call b = *a;

	switch (x) {
	case KIND:
		b.kind = a->kind == ALL_REDUCE ? BARRIER : ALL_REDUCE;
		break;
	case COUNT:
		/* Small against large: the members pick different algorithms. */
		b.count = a->count == SMALL ? LARGE : a->count + 1;
		break;
	case DTYPE:
		b.dt = WORLD_FLOAT64;
		break;
	case OP:
		b.op = WORLD_MAX;
		break;
	case ROOT:
		b.root = 1;
		break;
	case NWHATS:
		break;
	}
	return b;
}

static void
expected(char *buf, size_t len, const struct call *a, const struct call *b, enum what x,
	 int d)
{
	switch (x) {
	case KIND:
		snprintf(buf, len, "member %d calls %s where member 0 calls %s", d,
			 kind_names[b->kind], kind_names[a->kind]);
		break;
	case COUNT:
		snprintf(buf, len, "member %d has count %zu where member 0 has %zu", d,
			 b->count, a->count);
		break;
	case DTYPE:
		snprintf(buf, len, "member %d has dtype float64 where member 0 has float32", d);
		break;
	case OP:
		snprintf(buf, len, "member %d has op max where member 0 has sum", d);
		break;
	default:
		snprintf(buf, len, "member %d has root 1 where member 0 has 0", d);
		break;
	}
}

/* Afterwards the group works: an all_reduce and an all_gather of @n
 * (the shared area's halves, its chunks) give the right values. */
static bool
works(struct world_coll *c, size_t n)
{
	int r = world_coll_rank(c), p = world_coll_size(c);
	float *a = malloc(n * sizeof(*a)), *g = malloc(n * (size_t)p * sizeof(*g));
	bool good = a != NULL && g != NULL;

	for (size_t i = 0; good && i < n; i++) {
		a[i] = (float)(r + 1);
	}
	good = good && world_coll_all_reduce(c, a, n, WORLD_FLOAT32, WORLD_SUM, T) == 0;
	for (size_t i = 0; good && i < n; i++) {
		good = a[i] == (float)(p * (p + 1) / 2);
		a[i] = (float)r;
	}
	good = good && world_coll_all_gather(c, a, g, n, WORLD_FLOAT32, T) == 0;
	for (size_t i = 0; good && i < n * (size_t)p; i++) {
		good = g[i] == (float)(i / n);
	}
	free(a);
	free(g);
	return good;
}

/* One case: member @d (and, for @two, every member from 1 on) differs
 * from member 0 in @x. */
static void
one(struct world_coll *c, enum kind k, size_t n, enum what x, int d, bool started)
{
	struct call a = { .kind = k, .count = n, .dt = WORLD_FLOAT32, .op = WORLD_SUM };
	struct call b = differ(&a, x);
	int r = world_coll_rank(c), rc;
	char want[128];

	expected(want, sizeof(want), &a, &b, x, d);
	rc = run(c, r == d || (d == 1 && r > 1) ? &b : &a, started);
	check(rc == WORLD_EMISMATCH && strcmp(world_last_failure()->message, want) == 0,
	      "%s%s of %zu, %s differs on member %d: WORLD_EMISMATCH, \"%s\" (%s: \"%s\")",
	      started ? "started " : "", kind_names[k], n, what_names[x], d, want,
	      world_err_name(rc), rc < 0 ? world_last_failure()->message : "");
	check(works(c, n), "%s of %zu, %s: the group's next collectives are right",
	      kind_names[k], n, what_names[x]);
}

static int
cases(void)
{
	int n = 0;

	for (int k = 0; k < NKINDS; k++) {
		for (int x = 0; x < NWHATS; x++) {
			n += applies(k, x) ? 2 : 0;
		}
	}
	return 2 * n;
}

int
main(void)
{
	struct world *w = NULL;
	struct world_coll *c = NULL;
	int members[64], p, r, rc = world_open(&w), i = 0;

	if (rc < 0 || world_size(w) < 3 || world_size(w) > 64) {
		fprintf(stderr, "usage: worldrun -n 3 test-collmismatch (%s)\n", world_strerror(rc));
		return 2;
	}
	r = world_rank(w);
	p = world_size(w);
	for (int q = 0; q < p; q++) {
		members[q] = q;
	}
	wtap_start(r, 1 + cases() + 4 + 1);
	rc = world_coll_create(w, members, (size_t)p, T, &c);
	check(rc == 0, "create the group of every rank (%s)", world_strerror(rc));
	for (int k = 0; rc == 0 && k < NKINDS; k++) {
		for (int x = 0; x < NWHATS; x++) {
			if (!applies(k, x)) {
				continue;
			}
			/* Member 1 and all after it differ, or the last alone. */
			one(c, k, SMALL, x, i % 2 == 0 ? p - 1 : 1, false);
			one(c, k, LARGE, x, i % 2 == 0 ? 1 : p - 1, false);
			i++;
		}
	}
	if (rc == 0) {
		one(c, ALL_REDUCE, SMALL, COUNT, 1, true);
		one(c, BARRIER, SMALL, KIND, p - 1, true);
	}
	world_coll_destroy(c);
	rc = world_stop(w, T);
	check(rc == 0, "world_stop (%s)", world_strerror(rc));
	return wtap_done();
}
