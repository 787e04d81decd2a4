/* SPDX-License-Identifier: MIT */
/*
 * collbench.c: libworld's side of coll.sh, the same benchmark as
 * collmpi.c (modes, options, timing, rows) over one collective group of
 * every rank: ping-pong latency and windowed bandwidth between group
 * ranks 0 and 1, all_reduce (float32 sum), broadcast, all_gather and
 * barrier, and the straggler. It links libworld's objects so that the
 * algo column names the algorithm libworld runs, picked as collops.c
 * picks it. Before timing a size it checks one result once; it does not
 * compare with anything. Rows on stdout, tab-separated:
 *   impl op ranks bytes algo median_us cpu_us_per_op
 *
 * Usage: worldrun -n N collbench MODE [-s MIN] [-S MAX] [-l LIST] [-n ITERS]
 *            [-r REPS] [-t MS]
 *        collbench straggler K WORK | collbench alone WORK
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "collwork.h"
#include "world.h"

#define WINDOW 64
#define MAX_REPS 64
#define MAX_SIZES 64
#define TIMEOUT_MS 600000 /* every call; a hang ends as an error, not a stuck job */

enum op { OP_LATENCY, OP_BANDWIDTH, OP_ALL_REDUCE, OP_BROADCAST, OP_ALL_GATHER, OP_BARRIER };

static const char *const op_names[] = {
	[OP_LATENCY] = "latency",
	[OP_BANDWIDTH] = "bandwidth",
	[OP_ALL_REDUCE] = "all_reduce",
	[OP_BROADCAST] = "broadcast",
	[OP_ALL_GATHER] = "all_gather",
	[OP_BARRIER] = "barrier",
};

/* One run's settings, buffers and group; a sweep of sizes reuses them. */
struct bench {
	const char *impl;
	enum op op;
	int rank, size;
	long sizes[MAX_SIZES]; /* bytes, in the order measured */
	int nsizes;
	long max;	/* the largest of sizes */
	long iters;	/* timed ops per size up to 8 KiB, halved per doubling above */
	int reps;	/* timed blocks per size; the row is their median */
	double budget_us; /* timed blocks of one size take about this much at most */
	char *sbuf, *rbuf;
	struct world *w;
	struct world_coll *c;
};

static double
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* User+system CPU of this process (every thread), in microseconds. */
static double
cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 + ru.ru_utime.tv_usec +
	       ru.ru_stime.tv_usec;
}

/* The one place that reports a failed call; returns @rc. */
static int
failed(const struct bench *b, const char *what, long bytes, int rc)
{
	fprintf(stderr, "collbench: rank %d: %s (%ld B): %s\n", b->rank, what, bytes,
		world_strerror(rc));
	return rc;
}

/* *@x becomes the largest of every rank's. */
static int
all_max(const struct bench *b, double *x)
{
	int rc = world_coll_all_reduce(b->c, x, 1, WORLD_FLOAT64, WORLD_MAX, TIMEOUT_MS);

	return rc < 0 ? failed(b, "all_reduce of the slowest time", 8, rc) : 0;
}

/* *@x becomes the sum of every rank's, on rank 0. */
static int
sum_at_root(const struct bench *b, double *x)
{
	int rc = world_coll_reduce(b->c, x, 1, WORLD_FLOAT64, WORLD_SUM, 0, TIMEOUT_MS);

	return rc < 0 ? failed(b, "reduce of the CPU time", 8, rc) : 0;
}

static int
barrier(const struct bench *b)
{
	int rc = world_coll_barrier(b->c, TIMEOUT_MS);

	return rc < 0 ? failed(b, "barrier", 0, rc) : 0;
}

static int
pingpong(const struct bench *b, long bytes)
{
	struct world_coll *c = b->c;
	size_t n = (size_t)bytes;
	int rc = 0;

	if (b->rank == 0) {
		rc = world_coll_send(c, b->sbuf, n, WORLD_UINT8, 1, 1, TIMEOUT_MS);
		rc = rc < 0 ? rc : world_coll_recv(c, b->rbuf, n, WORLD_UINT8, 1, 1, TIMEOUT_MS, NULL);
	} else if (b->rank == 1) {
		rc = world_coll_recv(c, b->rbuf, n, WORLD_UINT8, 0, 1, TIMEOUT_MS, NULL);
		rc = rc < 0 ? rc : world_coll_send(c, b->sbuf, n, WORLD_UINT8, 0, 1, TIMEOUT_MS);
	}
	return rc;
}

/* Waits for and frees @n requests; the first error. */
static int
wait_all(struct world_coll_req **req, int n)
{
	int rc = 0, one;

	for (int i = 0; i < n; i++) {
		one = world_coll_wait(req[i], TIMEOUT_MS, NULL);
		rc = rc < 0 ? rc : one;
		world_coll_req_free(req[i]);
	}
	return rc;
}

/* osu_bw's window: WINDOW messages in flight from rank 0, one ack back. */
static int
window(const struct bench *b, long bytes)
{
	struct world_coll_req *req[WINDOW];
	struct world_coll *c = b->c;
	char ack[4] = { 0 };
	int rc = 0, n = 0, one;

	if (b->rank == 0) {
		while (rc == 0 && n < WINDOW) {
			rc = world_coll_isend(c, b->sbuf, (size_t)bytes, WORLD_UINT8, 1, 2, &req[n]);
			n += rc == 0;
		}
		one = wait_all(req, n);
		rc = rc < 0 ? rc : one;
		rc = rc < 0 ? rc : world_coll_recv(c, ack, 4, WORLD_UINT8, 1, 3, TIMEOUT_MS, NULL);
	} else if (b->rank == 1) {
		while (rc == 0 && n < WINDOW) {
			rc = world_coll_irecv(c, b->rbuf, (size_t)bytes, WORLD_UINT8, 0, 2, &req[n]);
			n += rc == 0;
		}
		one = wait_all(req, n);
		rc = rc < 0 ? rc : one;
		rc = rc < 0 ? rc : world_coll_send(c, ack, 4, WORLD_UINT8, 0, 3, TIMEOUT_MS);
	}
	return rc;
}

static int
one_op(const struct bench *b, long bytes)
{
	struct world_coll *c = b->c;

	switch (b->op) {
	case OP_LATENCY:
		return pingpong(b, bytes);
	case OP_BANDWIDTH:
		return window(b, bytes);
	case OP_ALL_REDUCE:
		return world_coll_all_reduce(c, b->rbuf, (size_t)bytes / 4, WORLD_FLOAT32,
					     WORLD_SUM, TIMEOUT_MS);
	case OP_BROADCAST:
		return world_coll_broadcast(c, b->sbuf, (size_t)bytes, WORLD_UINT8, 0, TIMEOUT_MS);
	case OP_ALL_GATHER:
		return world_coll_all_gather(c, b->sbuf, b->rbuf, (size_t)bytes, WORLD_UINT8,
					     TIMEOUT_MS);
	case OP_BARRIER:
		return world_coll_barrier(c, TIMEOUT_MS);
	}
	return 0;
}

/* k operations of one size; *@us is this rank's time for them. */
static int
run_ops(const struct bench *b, long bytes, long k, double *us)
{
	double t0 = now_us();
	int rc = 0;

	for (long i = 0; i < k && rc == 0; i++) {
		rc = one_op(b, bytes);
	}
	*us = now_us() - t0;
	return rc < 0 ? failed(b, op_names[b->op], bytes, rc) : 0;
}

/* The algorithm libworld runs for this op and size (collops.c execute()). */
static const char *
algo_of(const struct bench *b, long bytes)
{
	enum wr_coll_kind k;

	switch (b->op) {
	case OP_ALL_REDUCE: k = WR_COLL_ALL_REDUCE; break;
	case OP_BROADCAST: k = WR_COLL_BROADCAST; break;
	case OP_ALL_GATHER: k = WR_COLL_ALL_GATHER; break;
	case OP_BARRIER: k = WR_COLL_BARRIER; break;
	default: return "-";
	}
	return wr_algo_name(wr_coll_pick(b->c, k, (size_t)bytes));
}

/* The byte rank @r puts in its messages for the check. */
static unsigned char
mark(int r)
{
	return (unsigned char)(r * 31 + 7);
}

/* Whether @n bytes of @p all equal @v. */
static bool
all_are(const char *p, size_t n, unsigned char v)
{
	for (size_t i = 0; i < n; i++) {
		if ((unsigned char)p[i] != v) {
			return false;
		}
	}
	return true;
}

/* Whether @n floats of @p all equal @v. */
static bool
floats_are(const char *p, size_t n, float v)
{
	float x;

	for (size_t i = 0; i < n; i++) {
		memcpy(&x, p + i * 4, 4);
		if (x != v) {
			return false;
		}
	}
	return true;
}

/* Fills the buffers for the check of one op; what rank r sends carries mark(r). */
static void
check_fill(const struct bench *b, long bytes)
{
	float one = (float)(b->rank + 1);

	memset(b->rbuf, 0, (size_t)bytes * (b->op == OP_ALL_GATHER ? (size_t)b->size : 1));
	memset(b->sbuf, b->rank == 0 || b->op != OP_BROADCAST ? mark(b->rank) : 0, (size_t)bytes);
	for (long i = 0; b->op == OP_ALL_REDUCE && i < bytes / 4; i++) {
		memcpy(b->rbuf + i * 4, &one, 4);
	}
}

/* Whether this rank's result of the check is right. */
static bool
check_result(const struct bench *b, long bytes)
{
	size_t n = (size_t)bytes;
	bool good = true;

	switch (b->op) {
	case OP_LATENCY:
	case OP_BANDWIDTH:
		return b->rank > 1 || all_are(b->rbuf, n, mark(1 - b->rank));
	case OP_ALL_REDUCE:
		return floats_are(b->rbuf, n / 4, (float)b->size * (b->size + 1) / 2);
	case OP_BROADCAST:
		return all_are(b->sbuf, n, mark(0));
	case OP_ALL_GATHER:
		for (int r = 0; r < b->size && good; r++) {
			good = all_are(b->rbuf + (size_t)r * n, n, mark(r));
		}
		return good;
	case OP_BARRIER:
		break;
	}
	return good;
}

/*
 * One op of each size, checked, untimed; every rank learns whether one
 * saw a wrong result, so that all of them stop alike. A ping-pong checks
 * both directions, a bandwidth window what rank 1 received.
 */
static int
check(const struct bench *b, long bytes)
{
	double bad, us;
	int rc;

	check_fill(b, bytes);
	rc = run_ops(b, bytes, 1, &us);
	if (rc < 0) {
		return rc;
	}
	bad = b->op == OP_BANDWIDTH && b->rank == 0 ? 0 : !check_result(b, bytes);
	if (bad) {
		fprintf(stderr, "collbench: rank %d: %s (%ld B, %s): wrong result\n", b->rank,
			op_names[b->op], bytes, algo_of(b, bytes));
	}
	rc = all_max(b, &bad);
	/* Keep sums from growing to infinity over the timed ops. */
	memset(b->rbuf, 0, (size_t)bytes * (b->op == OP_ALL_GATHER ? (size_t)b->size : 1));
	return rc < 0 ? rc : bad ? -1 : 0;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static long
clamp(double x, long lo, long hi)
{
	return x < lo ? lo : x > hi ? hi : (long)x;
}

/* The row of one size: the median of @blocks, per one-way message or per message. */
static void
print_row(const struct bench *b, long bytes, double *blocks, double cpu, long k)
{
	double t, per_op = b->op == OP_LATENCY ? 2 : b->op == OP_BANDWIDTH ? WINDOW : 1;

	qsort(blocks, (size_t)b->reps, sizeof(double), cmp_double);
	t = b->reps % 2 ? blocks[b->reps / 2] : (blocks[b->reps / 2 - 1] + blocks[b->reps / 2]) / 2;
	printf("%s\t%s\t%d\t%ld\t%s\t%.3f\t%.3f\n", b->impl, op_names[b->op], b->size, bytes,
	       algo_of(b, bytes), t / per_op, cpu / (b->reps * k * per_op));
	fflush(stdout);
}

/*
 * One size: a probe op and a warm-up (both bounded by the budget) give
 * the time per op that every rank agrees on (the slowest rank's), which
 * bounds the count of each of the reps timed blocks. A block's time is the
 * slowest rank's; the row gives their median (collmpi.c's measure()).
 */
static int
measure(const struct bench *b, long bytes)
{
	double blocks[MAX_REPS], cpu = 0, est, t, c0;
	long n, w, k;
	int rc;

	n = bytes <= 8192 ? b->iters : clamp(b->iters * 8192.0 / bytes, 1, b->iters);
	rc = check(b, bytes);
	rc = rc < 0 ? rc : barrier(b);
	rc = rc < 0 ? rc : run_ops(b, bytes, 1, &est);
	rc = rc < 0 ? rc : all_max(b, &est);
	if (rc < 0) {
		return rc;
	}
	w = clamp(b->budget_us / 4 / (est > 0 ? est : 1), 1, n / 10 > 1 ? n / 10 : 1);
	rc = barrier(b);
	rc = rc < 0 ? rc : run_ops(b, bytes, w, &est);
	est /= w;
	rc = rc < 0 ? rc : all_max(b, &est);
	if (rc < 0) {
		return rc;
	}
	k = clamp(b->budget_us / b->reps / (est > 0 ? est : 1), 1, n / b->reps > 1 ? n / b->reps : 1);
	for (int r = 0; r < b->reps && rc == 0; r++) {
		rc = barrier(b);
		c0 = cpu_us();
		rc = rc < 0 ? rc : run_ops(b, bytes, k, &t);
		cpu += cpu_us() - c0;
		t /= k;
		rc = rc < 0 ? rc : all_max(b, &t);
		blocks[r] = t;
	}
	rc = rc < 0 ? rc : sum_at_root(b, &cpu);
	if (rc == 0 && b->rank == 0) {
		print_row(b, bytes, blocks, cpu, k);
		fprintf(stderr, "collbench: %s %ld B: %ld warm-up, %d x %ld timed\n",
			op_names[b->op], bytes, w, b->reps, k);
	}
	return rc;
}

static int
sweep(struct bench *b)
{
	size_t cap = (size_t)b->max * (b->op == OP_ALL_GATHER ? (size_t)b->size : 1);
	double us;
	int rc;

	if ((b->op == OP_LATENCY || b->op == OP_BANDWIDTH) && b->size < 2) {
		fprintf(stderr, "collbench: %s needs 2 ranks\n", op_names[b->op]);
		return 2;
	}
	b->sbuf = malloc((size_t)b->max + 1);
	b->rbuf = malloc(cap + 1);
	if (b->sbuf == NULL || b->rbuf == NULL) {
		fprintf(stderr, "collbench: out of memory for %zu B\n", cap);
		rc = 1;
		goto out;
	}
	memset(b->sbuf, 1, (size_t)b->max + 1);
	memset(b->rbuf, 0, cap + 1);
	/* The first ops may set up connections: keep it out of the probe. */
	rc = run_ops(b, b->sizes[0], 3, &us);
	for (int i = 0; i < b->nsizes && rc == 0; i++) {
		rc = measure(b, b->sizes[i]);
	}
	rc = rc < 0 ? 1 : rc;
out:
	free(b->sbuf);
	free(b->rbuf);
	return rc;
}

/*
 * Ranks below computing do WORK steps, then every rank enters one
 * all_reduce of one float, which the others have been waiting in. The
 * row: the slowest computing rank's time, and the CPU of all ranks.
 * With computing 0 (alone, one rank) it is the same work by itself.
 */
static int
straggle(const struct bench *b, int computing, long work)
{
	float x = 0, y = 0;
	double t0, c0, t, cpu;
	int rc = 0, last = computing ? computing : 1;

	for (int i = 0; i < 3 && rc == 0; i++) {
		rc = world_coll_all_reduce(b->c, &y, 1, WORLD_FLOAT32, WORLD_SUM, TIMEOUT_MS);
	}
	rc = rc < 0 ? failed(b, "all_reduce", 4, rc) : barrier(b);
	if (rc < 0) {
		return 1;
	}
	c0 = cpu_us();
	t0 = now_us();
	if (b->rank < last) {
		x = (float)coll_work(work);
	}
	y = x;
	rc = world_coll_all_reduce(b->c, &y, 1, WORLD_FLOAT32, WORLD_SUM, TIMEOUT_MS);
	t = now_us() - t0;
	cpu = cpu_us() - c0;
	t = b->rank < last ? t : 0;
	rc = rc < 0 ? failed(b, "all_reduce", 4, rc) : all_max(b, &t);
	rc = rc < 0 ? rc : sum_at_root(b, &cpu);
	if (rc < 0) {
		return 1;
	}
	if (b->rank == 0) {
		if (computing) {
			printf("%s\tstraggler%d\t%d\t4\t%s\t%.1f\t%.1f\n", b->impl, computing, b->size,
			       wr_algo_name(wr_coll_pick(b->c, WR_COLL_ALL_REDUCE, 4)), t, cpu);
		} else {
			printf("%s\talone\t1\t4\t-\t%.1f\t%.1f\n", b->impl, t, cpu);
		}
		fprintf(stderr, "collbench: result %g\n", y);
	}
	return 0;
}

/*
 * wake ROUNDS: how soon a receive blocked for 1 s wakes. Rank 1 sleeps 1 s,
 * reads CLOCK_MONOTONIC (one clock for every process of this machine) and
 * sends it; rank 0, blocked in its receive meanwhile, reads the clock when
 * the receive returns. The row's time is the median of the differences.
 */
static int
wake(struct bench *b, int rounds)
{
	double lat[MAX_REPS], sent = 0;
	struct timespec one = { 1, 0 };
	int rc = 0;

	for (int i = 0; i < rounds && rc == 0; i++) {
		rc = barrier(b);
		if (rc == 0 && b->rank == 1) {
			nanosleep(&one, NULL);
			sent = now_us();
			rc = world_coll_send(b->c, &sent, 1, WORLD_FLOAT64, 0, 7, TIMEOUT_MS);
		} else if (rc == 0 && b->rank == 0) {
			rc = world_coll_recv(b->c, &sent, 1, WORLD_FLOAT64, 1, 7, TIMEOUT_MS, NULL);
			lat[i] = now_us() - sent;
		}
	}
	if (rc < 0) {
		return failed(b, "wake", 8, rc);
	}
	if (b->rank == 0) {
		for (int i = 1; i < rounds; i++) {
			for (int j = i; j > 0 && lat[j - 1] > lat[j]; j--) {
				double t = lat[j];

				lat[j] = lat[j - 1];
				lat[j - 1] = t;
			}
		}
		printf("%s\twake\t%d\t8\t-\t%.1f\t-\n", b->impl, b->size, lat[rounds / 2]);
	}
	return 0;
}

/*
 * The sizes: LIST ("8,1024,65536") as given, else powers of 2 from min to
 * max; all_reduce leaves out sizes below one float, barrier has size 0.
 */
static int
make_sizes(struct bench *b, char *list, long min, long max)
{
	char *tok, *save = NULL;
	long x;

	b->nsizes = 0;
	b->max = 0;
	if (b->op == OP_BARRIER) {
		b->sizes[b->nsizes++] = 0;
		return 0;
	}
	for (tok = list ? strtok_r(list, ",", &save) : NULL, x = min;
	     list ? tok != NULL : x <= max;
	     tok = list ? strtok_r(NULL, ",", &save) : NULL, x *= 2) {
		long bytes = list ? atol(tok) : x;

		if (bytes < 1 || bytes > (1L << 30) || b->nsizes == MAX_SIZES) {
			return -1;
		}
		if (b->op != OP_ALL_REDUCE || bytes >= 4) {
			b->sizes[b->nsizes++] = bytes;
			b->max = bytes > b->max ? bytes : b->max;
		}
	}
	return b->nsizes > 0 ? 0 : -1;
}

static int
parse_sweep(struct bench *b, int argc, char **argv)
{
	int c;
	long min = b->op == OP_LATENCY || b->op == OP_BANDWIDTH ? 8 : 4;
	long max = b->op == OP_LATENCY || b->op == OP_BANDWIDTH ? 4194304 : 16777216;
	char *list = NULL;

	b->iters = b->op == OP_LATENCY ? 10000 : b->op == OP_BANDWIDTH ? 100 : 1000;
	b->reps = 5;
	b->budget_us = 300000;
	while ((c = getopt(argc, argv, "s:S:l:n:r:t:")) != -1) {
		switch (c) {
		case 's': min = atol(optarg); break;
		case 'S': max = atol(optarg); break;
		case 'l': list = optarg; break;
		case 'n': b->iters = atol(optarg); break;
		case 'r': b->reps = atoi(optarg); break;
		case 't': b->budget_us = atof(optarg) * 1000; break;
		default: return -1;
		}
	}
	if (optind != argc || min < 1 || b->iters < 1 || b->reps < 1 || b->reps > MAX_REPS ||
	    b->budget_us <= 0) {
		return -1;
	}
	return make_sizes(b, list, min, max);
}

/* -1 for bad arguments (every rank sees the same), else the exit status. */
static int
run_mode(struct bench *b, int argc, char **argv)
{
	const char *mode = argv[0];

	if (strcmp(mode, "straggler") == 0 && argc == 3 && atoi(argv[1]) >= 1 &&
	    atoi(argv[1]) <= b->size && atol(argv[2]) > 0) {
		return straggle(b, atoi(argv[1]), atol(argv[2]));
	}
	if (strcmp(mode, "alone") == 0 && argc == 2 && b->size == 1 && atol(argv[1]) > 0) {
		return straggle(b, 0, atol(argv[1]));
	}
	if (strcmp(mode, "wake") == 0 && argc == 2 && b->size >= 2 && atoi(argv[1]) >= 1 &&
	    atoi(argv[1]) <= MAX_REPS) {
		return wake(b, atoi(argv[1]));
	}
	for (size_t i = 0; i < sizeof(op_names) / sizeof(op_names[0]); i++) {
		if (strcmp(mode, op_names[i]) == 0) {
			b->op = (enum op)i;
			return parse_sweep(b, argc, argv) < 0 ? -1 : sweep(b);
		}
	}
	return -1;
}

/* The world and the group of all its ranks, in @b. */
static int
open_group(struct bench *b)
{
	int ranks[1024], rc;

	rc = world_open(&b->w);
	if (rc < 0) {
		fprintf(stderr, "collbench: unable to join the job: %s\n", world_strerror(rc));
		return rc;
	}
	b->rank = world_rank(b->w);
	b->size = world_size(b->w);
	if (b->size > (int)(sizeof(ranks) / sizeof(ranks[0]))) {
		fprintf(stderr, "collbench: at most 1024 ranks, not %d\n", b->size);
		return -1;
	}
	for (int i = 0; i < b->size; i++) {
		ranks[i] = i;
	}
	rc = world_coll_create(b->w, ranks, (size_t)b->size, TIMEOUT_MS, &b->c);
	return rc < 0 ? failed(b, "unable to create the group", 0, rc) : 0;
}

int
main(int argc, char **argv)
{
	/* A build without the argument check says so in every row. */
#ifdef WR_COLL_NOCHECK
	struct bench b = { .impl = "libworld-nocheck" };
#else
	struct bench b = { .impl = "libworld" };
#endif
	int rc;

	if (open_group(&b) < 0) {
		world_coll_destroy(b.c);
		world_abort(b.w);
		return 1;
	}
	rc = argc < 2 ? -1 : run_mode(&b, argc - 1, argv + 1);
	if (rc < 0 && b.rank == 0) {
		fprintf(stderr, "usage: collbench latency|bandwidth|all_reduce|broadcast|"
				"all_gather|barrier [-s MIN] [-S MAX] [-l LIST]\n"
				"       [-n ITERS] [-r REPS] [-t MS]\n"
				"       collbench straggler N WORK | alone WORK | wake ROUNDS\n"
				"(alone on 1 rank; straggler N at most the ranks)\n");
	}
	world_coll_destroy(b.c);
	/* A rank that failed may leave others inside a collective: let them see it go. */
	if (rc > 0) {
		world_abort(b.w);
	} else if (world_stop(b.w, TIMEOUT_MS) < 0) {
		rc = 1;
	}
	return rc < 0 ? 2 : rc;
}
