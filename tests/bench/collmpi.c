/* SPDX-License-Identifier: MIT */
/*
 * collmpi.c: the MPI anchors of coll.sh, OSU-style: ping-pong latency and
 * windowed bandwidth between ranks 0 and 1, all_reduce (float32 sum),
 * broadcast, all_gather and barrier over every rank, and the straggler.
 * coll.sh builds it with each MPI's own mpicc (never meson). Rows go to
 * stdout, one per measurement, tab-separated:
 *   impl op ranks bytes algo median_us cpu_us_per_op
 * and nothing else; collbench (libworld) takes the same MODE ARGS and
 * prints the same rows.
 *
 * Usage: collmpi IMPL MODE [-s MIN] [-S MAX] [-l LIST] [-n ITERS] [-r REPS] [-t MS]
 *        collmpi IMPL straggler N WORK | collmpi IMPL alone WORK
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "collwork.h"

#define WINDOW 64
#define MAX_REPS 64
#define MAX_SIZES 64

enum op { OP_LATENCY, OP_BANDWIDTH, OP_ALL_REDUCE, OP_BROADCAST, OP_ALL_GATHER, OP_BARRIER };

static const char *const op_names[] = {
	[OP_LATENCY] = "latency",
	[OP_BANDWIDTH] = "bandwidth",
	[OP_ALL_REDUCE] = "all_reduce",
	[OP_BROADCAST] = "broadcast",
	[OP_ALL_GATHER] = "all_gather",
	[OP_BARRIER] = "barrier",
};

/* One run's settings and buffers; a sweep of sizes reuses them. */
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

static double
all_max(double x)
{
	double y;

	MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	return y;
}

static double
sum_at_root(double x)
{
	double y = 0;

	MPI_Reduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
	return y;
}

static void
pingpong(const struct bench *b, long bytes)
{
	if (b->rank == 0) {
		MPI_Send(b->sbuf, (int)bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
		MPI_Recv(b->rbuf, (int)bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	} else if (b->rank == 1) {
		MPI_Recv(b->rbuf, (int)bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		MPI_Send(b->sbuf, (int)bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
	}
}

/* osu_bw's window: WINDOW messages in flight from rank 0, one ack back. */
static void
window(const struct bench *b, long bytes)
{
	MPI_Request req[WINDOW];
	MPI_Status st[WINDOW]; /* not MPI_STATUSES_IGNORE: gcc 12 misreads MPICH's */
	char ack[4] = { 0 };

	if (b->rank == 0) {
		for (int i = 0; i < WINDOW; i++) {
			MPI_Isend(b->sbuf, (int)bytes, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &req[i]);
		}
		MPI_Waitall(WINDOW, req, st);
		MPI_Recv(ack, 4, MPI_BYTE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	} else if (b->rank == 1) {
		for (int i = 0; i < WINDOW; i++) {
			MPI_Irecv(b->rbuf, (int)bytes, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &req[i]);
		}
		MPI_Waitall(WINDOW, req, st);
		MPI_Send(ack, 4, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
	}
}

/* k operations of one size; returns this rank's time for them. */
static double
run_ops(const struct bench *b, long bytes, long k)
{
	double t0 = now_us();

	for (long i = 0; i < k; i++) {
		switch (b->op) {
		case OP_LATENCY:
			pingpong(b, bytes);
			break;
		case OP_BANDWIDTH:
			window(b, bytes);
			break;
		case OP_ALL_REDUCE:
			MPI_Allreduce(b->sbuf, b->rbuf, (int)(bytes / 4), MPI_FLOAT, MPI_SUM,
				      MPI_COMM_WORLD);
			break;
		case OP_BROADCAST:
			MPI_Bcast(b->sbuf, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
			break;
		case OP_ALL_GATHER:
			MPI_Allgather(b->sbuf, (int)bytes, MPI_BYTE, b->rbuf, (int)bytes, MPI_BYTE,
				      MPI_COMM_WORLD);
			break;
		case OP_BARRIER:
			MPI_Barrier(MPI_COMM_WORLD);
			break;
		}
	}
	return now_us() - t0;
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

/*
 * One size: a probe op and a warm-up (both bounded by the budget) give
 * the time per op that every rank agrees on (the slowest rank's), which
 * bounds the count of each of the reps timed blocks. A block's time is the
 * slowest rank's; the row gives their median, per one-way message for
 * latency, per message for bandwidth.
 */
static void
measure(const struct bench *b, long bytes)
{
	double blocks[MAX_REPS], cpu = 0, est, t, c0, per_op = 1;
	long n, w, k;

	n = bytes <= 8192 ? b->iters : clamp(b->iters * 8192.0 / bytes, 1, b->iters);
	MPI_Barrier(MPI_COMM_WORLD);
	est = all_max(run_ops(b, bytes, 1));
	w = clamp(b->budget_us / 4 / (est > 0 ? est : 1), 1, n / 10 > 1 ? n / 10 : 1);
	MPI_Barrier(MPI_COMM_WORLD);
	est = all_max(run_ops(b, bytes, w) / w);
	k = clamp(b->budget_us / b->reps / (est > 0 ? est : 1), 1, n / b->reps > 1 ? n / b->reps : 1);
	for (int r = 0; r < b->reps; r++) {
		MPI_Barrier(MPI_COMM_WORLD);
		c0 = cpu_us();
		t = run_ops(b, bytes, k);
		cpu += cpu_us() - c0;
		blocks[r] = all_max(t) / k;
	}
	cpu = sum_at_root(cpu);
	if (b->op == OP_LATENCY) {
		per_op = 2;
	} else if (b->op == OP_BANDWIDTH) {
		per_op = WINDOW;
	}
	qsort(blocks, (size_t)b->reps, sizeof(double), cmp_double);
	t = b->reps % 2 ? blocks[b->reps / 2] : (blocks[b->reps / 2 - 1] + blocks[b->reps / 2]) / 2;
	if (b->rank == 0) {
		printf("%s\t%s\t%d\t%ld\t-\t%.3f\t%.3f\n", b->impl, op_names[b->op], b->size,
		       bytes, t / per_op, cpu / (b->reps * k * per_op));
		fflush(stdout);
		fprintf(stderr, "collmpi: %s %ld B: %ld warm-up, %d x %ld timed\n",
			op_names[b->op], bytes, w, b->reps, k);
	}
}

static int
sweep(struct bench *b)
{
	size_t cap = (size_t)b->max * (b->op == OP_ALL_GATHER ? (size_t)b->size : 1);

	if ((b->op == OP_LATENCY || b->op == OP_BANDWIDTH) && b->size < 2) {
		fprintf(stderr, "collmpi: %s needs 2 ranks\n", op_names[b->op]);
		return 2;
	}
	b->sbuf = malloc((size_t)b->max + 1);
	b->rbuf = malloc(cap + 1);
	if (b->sbuf == NULL || b->rbuf == NULL) {
		fprintf(stderr, "collmpi: out of memory for %zu B\n", cap);
		return 1;
	}
	memset(b->sbuf, 1, (size_t)b->max + 1);
	memset(b->rbuf, 0, cap + 1);
	/* The first ops may set up connections: keep it out of the probe. */
	run_ops(b, b->sizes[0], 3);
	for (int i = 0; i < b->nsizes; i++) {
		measure(b, b->sizes[i]);
	}
	free(b->sbuf);
	free(b->rbuf);
	return 0;
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

	for (int i = 0; i < 3; i++) {
		MPI_Allreduce(&x, &y, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	c0 = cpu_us();
	t0 = now_us();
	if (b->rank < (computing ? computing : 1)) {
		x = (float)coll_work(work);
	}
	MPI_Allreduce(&x, &y, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
	t = now_us() - t0;
	cpu = cpu_us() - c0;
	t = all_max(b->rank < (computing ? computing : 1) ? t : 0);
	cpu = sum_at_root(cpu);
	if (b->rank == 0) {
		if (computing) {
			printf("%s\tstraggler%d\t%d\t4\t-\t%.1f\t%.1f\n", b->impl, computing, b->size, t, cpu);
		} else {
			printf("%s\talone\t1\t4\t-\t%.1f\t%.1f\n", b->impl, t, cpu);
		}
		fprintf(stderr, "collmpi: result %g\n", y);
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
	for (size_t i = 0; i < sizeof(op_names) / sizeof(op_names[0]); i++) {
		if (strcmp(mode, op_names[i]) == 0) {
			b->op = (enum op)i;
			return parse_sweep(b, argc, argv) < 0 ? -1 : sweep(b);
		}
	}
	return -1;
}

int
main(int argc, char **argv)
{
	struct bench b = { 0 };
	int rc;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &b.size);
	rc = argc < 3 ? -1 : (b.impl = argv[1], run_mode(&b, argc - 2, argv + 2));
	if (rc < 0 && b.rank == 0) {
		fprintf(stderr, "usage: collmpi IMPL latency|bandwidth|all_reduce|broadcast|"
				"all_gather|barrier [-s MIN] [-S MAX] [-l LIST]\n"
				"       [-n ITERS] [-r REPS] [-t MS]\n"
				"       collmpi IMPL straggler N WORK | alone WORK\n"
				"(alone on 1 rank; straggler N at most the ranks)\n");
	}
	MPI_Finalize();
	return rc < 0 ? 2 : rc;
}
