/* SPDX-License-Identifier: MIT */
/*
 * collcheck: the comparison of the members' arguments (coll/collcheck.c)
 * on threads over fake-p2p.h: its message, and long sequences of
 * collectives through a shared area with small slots and over messages,
 * some ranks lagging, where now and then some members call differently
 * (another collective, count, dtype or root): those fail on every member
 * naming the same member, with no wait left hanging, and every
 * operation called alike gives the right result, so a mismatch left
 * nothing out of step.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/collcheck.h"
#include "coll/reduce.h"
#include "coll/shmcoll.h"
#include "fake-p2p.h"
#include "tap.h"

#define MAX_P 8
#define OPS 400
#define MAX_COUNT 3000 /* over half of an 8 KiB slot in int32: chunks */

static uint64_t
mix(uint64_t a, uint64_t b)
{
	uint64_t x = a * 0x9e3779b97f4a7c15ULL ^ (b + 0x632be59bd9b4e019ULL);

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ULL;
	return x ^ (x >> 29);
}

/* One operation of the sequence as one member calls it. */
struct op {
	enum wr_coll_kind kind;
	size_t count;
	enum world_dtype dt;
	int root;
	int differs; /* the first member that calls it differently, or -1 */
};

static const enum wr_coll_kind kinds[] = {
	WR_COLL_BARRIER, WR_COLL_BROADCAST, WR_COLL_ALL_REDUCE, WR_COLL_ALL_GATHER,
};

/* Operation @k as member @r calls it: from @seed, the same on every
 * member except, in a third of them, members from @differs on (or that
 * one alone). */
static struct op
op_of(uint64_t seed, long k, int r, int p)
{
	static const size_t counts[] = {1, 9, 600, MAX_COUNT};
	uint64_t h = mix(seed, (uint64_t)k);
	struct op o = {.kind = kinds[h % 4], .count = counts[(h >> 4) % 4],
		       .dt = WORLD_INT32, .root = (int)((h >> 8) % (uint64_t)p),
		       .differs = -1};
	int m = 1 + (int)((h >> 16) % (uint64_t)(p - 1));
	bool alone = (h >> 24) & 1;

	if ((h >> 28) % 3 != 0) {
		return o;
	}
	o.differs = m;
	if (r != m && !(r > m && !alone)) {
		return o;
	}
	switch ((h >> 32) % 4) {
	case 0:
		o.kind = kinds[(h % 4 + 1 + (h >> 36) % 3) % 4];
		break;
	case 1:
		o.count = o.count == 1 ? MAX_COUNT : o.count - 1;
		break;
	case 2:
		o.dt = WORLD_INT64;
		break;
	default:
		/* Where the others call no broadcast, the collective differs too. */
		o.root = (o.root + 1) % p;
		o.kind = WR_COLL_BROADCAST;
		break;
	}
	/* A barrier has no count nor dtype to differ in: then an all_reduce. */
	o.kind = o.kind == WR_COLL_BARRIER && (h >> 32) % 4 != 0 ? WR_COLL_ALL_REDUCE : o.kind;
	return o;
}

static int32_t
value(long k, int r, size_t i)
{
	return (int32_t)((k * 7 + r * 13 + (long)i) % 1000);
}

/* As collops.c's dispatch: through the area the shm algorithms compare
 * at their first synchronisation; otherwise the members agree first. */
static int
run(struct wr_coll_ctx *c, const struct op *o, struct wr_check *chk, int32_t *buf,
    int32_t *out)
{
	size_t bytes = o->count * wr_dtype_size(o->dt);
	enum wr_algo a = c->shm != NULL ? WR_ALGO_SHM : WR_ALGO_AUTO;
	int rc = 0;

	wr_check_init(chk, o->kind, o->count, o->dt, WORLD_SUM, o->root);
	c->check = chk;
	if (c->shm == NULL || o->kind == WR_COLL_BARRIER) {
		rc = wr_check_agree(c);
		c->check = NULL;
	}
	if (rc < 0 || o->kind == WR_COLL_BARRIER) {
		return rc;
	}
	switch (o->kind) {
	case WR_COLL_BROADCAST:
		return wr_algo_broadcast(c, buf, bytes, o->root, a);
	case WR_COLL_ALL_REDUCE:
		return wr_algo_all_reduce(c, buf, o->count, o->dt, WORLD_SUM, a);
	default:
		return wr_algo_all_gather(c, buf, out, bytes, a);
	}
}

/* Whether a matched operation's result is right. */
static bool
right(const struct wr_coll_ctx *c, const struct op *o, long k, const int32_t *buf,
      const int32_t *out)
{
	for (size_t i = 0; i < o->count; i++) {
		int32_t want = 0;

		switch (o->kind) {
		case WR_COLL_BROADCAST:
			want = value(k, o->root, i);
			break;
		case WR_COLL_ALL_REDUCE:
			for (int q = 0; q < c->size; q++) {
				want += value(k, q, i);
			}
			break;
		case WR_COLL_ALL_GATHER:
			for (int q = 0; q < c->size; q++) {
				if (out[(size_t)q * o->count + i] != value(k, q, i)) {
					return false;
				}
			}
			continue;
		default:
			return true;
		}
		if (buf[i] != want) {
			return false;
		}
	}
	return true;
}

struct member {
	struct fake f;
	struct wr_shm shm;
	bool area;
	int p;
	uint64_t seed;
	long bad, mismatches; /* the first op that went wrong (-1), how many failed alike */
	char why[160];
};

static void *
member_main(void *arg)
{
	struct member *m = arg;
	struct wr_coll_ctx c = {.rank = m->f.rank, .size = m->p, .be = &fake_be,
				.impl = &m->f, .scratch = fake_scratch,
				.shm = m->area ? &m->shm : NULL};
	int32_t *buf = calloc(MAX_COUNT * 2, 4), *out = calloc(MAX_COUNT * 2 * MAX_P, 4);

	m->bad = -1;
	for (long k = 0; k < OPS && m->bad < 0 && buf != NULL && out != NULL; k++) {
		struct op o = op_of(m->seed, k, c.rank, c.size);
		struct wr_check chk;
		int rc;

		for (uint64_t y = mix(m->seed ^ (uint64_t)c.rank, (uint64_t)k) % 64; y < 3; y++) {
			sched_yield();
		}
		for (size_t i = 0; i < o.count; i++) {
			buf[i] = value(k, c.rank, i);
		}
		rc = run(&c, &o, &chk, buf, out);
		if (o.differs >= 0 && (rc != WORLD_EMISMATCH || chk.member != o.differs)) {
			m->bad = k;
			snprintf(m->why, sizeof(m->why), "rc %d, member %d for %d", rc, chk.member,
				 o.differs);
		} else if (o.differs < 0 && (rc != 0 || !right(&c, &o, k, buf, out))) {
			m->bad = k;
			snprintf(m->why, sizeof(m->why), "rc %d or a wrong result", rc);
		}
		m->mismatches += rc == WORLD_EMISMATCH;
	}
	free(buf);
	free(out);
	return NULL;
}

/* The members of one group of @p, each a thread; their sum of failures
 * (member 0's), or -1 when one went wrong. */
static long
group_of(int p, bool area, uint64_t seed)
{
	struct engine e;
	struct member *m = calloc((size_t)p, sizeof(*m));
	pthread_t *t = calloc((size_t)p, sizeof(*t));
	unsigned char *mem = calloc(1, wr_shm_size(p, 8192));
	long failed = m != NULL && t != NULL && mem != NULL ? 0 : -1;

	fake_engine_init(&e, 20000, 0);
	for (int q = 0; failed == 0 && q < p; q++) {
		m[q] = (struct member){.f = {.e = &e, .rank = q}, .p = p, .area = area,
				       .shm = {.base = mem, .slot = 8192}, .seed = seed};
		pthread_create(&t[q], NULL, member_main, &m[q]);
	}
	for (int q = 0; failed >= 0 && q < p; q++) {
		pthread_join(t[q], NULL);
	}
	for (int q = p - 1; failed >= 0 && q >= 0; q--) {
		if (m[q].bad >= 0) {
			printf("# p=%d: rank %d wrong at op %ld: %s\n", p, q, m[q].bad, m[q].why);
		}
		failed = m[q].bad >= 0 ? -1 : m[q].mismatches;
	}
	fake_engine_finish(&e);
	for (int q = 0; m != NULL && q < p; q++) {
		free(m[q].f.scratch);
	}
	free(mem);
	free(t);
	free(m);
	return failed;
}

static void
sequence(bool area, uint64_t seed)
{
	long failed = 0;

	for (int p = 2; p <= MAX_P && failed >= 0; p += 3) {
		long n = group_of(p, area, seed);

		failed = n < 0 ? -1 : failed + n;
	}
	ok(failed > 0, "%s: %d operations on 2, 5 and 8 members, a third called "
	   "differently (%ld failed): those fail alike, the others are right",
	   area ? "shared area" : "messages", OPS, failed);
}

static const struct wr_sig *
table_sig(const void *arg, int member)
{
	return (const struct wr_sig *)arg + member;
}

static void
messages(void)
{
	struct wr_check k[3];
	struct wr_sig all[3];
	char text[128];

	wr_check_init(&k[0], WR_COLL_ALL_REDUCE, 4, WORLD_FLOAT32, WORLD_SUM, 7);
	wr_check_init(&k[1], WR_COLL_ALL_REDUCE, 3, WORLD_FLOAT64, WORLD_MAX, 0);
	wr_check_init(&k[2], WR_COLL_GATHER, 4, WORLD_FLOAT32, WORLD_MAX, 2);
	for (int i = 0; i < 3; i++) {
		all[i] = k[i].mine;
	}
	ok(k[0].mine.root == 0 && k[2].mine.op == 0,
	   "a root or an op that the collective does not take is never compared");
	ok(wr_check_compare(&k[0], 3, table_sig, all) == WORLD_EMISMATCH && k[0].member == 1,
	   "the first member that differs is named");
	wr_check_message(&k[0], text, sizeof(text));
	is_str(text, "member 1 has count 3 where member 0 has 4", "count comes before dtype");
	all[1] = k[2].mine;
	wr_check_compare(&k[0], 3, table_sig, all);
	wr_check_message(&k[0], text, sizeof(text));
	is_str(text, "member 1 calls gather where member 0 calls all_reduce",
	       "the collective comes first");
	all[1] = all[0];
	all[1].dtype = WORLD_BFLOAT16;
	all[2].kind = WR_COLL_ALL_REDUCE;
	wr_check_compare(&k[0], 3, table_sig, all);
	wr_check_message(&k[0], text, sizeof(text));
	is_str(text, "member 1 has dtype bfloat16 where member 0 has float32", "dtype names");
	all[1] = all[0];
	all[1].op = WORLD_BXOR;
	wr_check_compare(&k[0], 2, table_sig, all);
	wr_check_message(&k[0], text, sizeof(text));
	is_str(text, "member 1 has op bxor where member 0 has sum", "op names");
	all[1] = all[0];
	all[1].carried = 1;
	wr_check_compare(&k[0], 2, table_sig, all);
	wr_check_message(&k[0], text, sizeof(text));
	is_str(text, "member 1 runs another algorithm than member 0 (WORLD_COLL_ALGO differs)",
	       "a member whose data travels with the agreement where another's does not");
	all[1] = all[0];
	ok(wr_check_compare(&k[0], 2, table_sig, all) == 0, "members alike: 0");
}

int
main(void)
{
	uint64_t seed = (uint64_t)time(NULL);
	const char *s = getenv("COLLCHECK_SEED");

	if (s != NULL) {
		seed = strtoull(s, NULL, 0);
	}
	plan(10);
	printf("# seed %llu (COLLCHECK_SEED replays it)\n", (unsigned long long)seed);
	messages();
	sequence(true, seed);
	sequence(false, seed);
	return done_testing();
}
