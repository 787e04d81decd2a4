/* SPDX-License-Identifier: MIT */
/*
 * bindwork MODE SECONDS: what a rank's CPU binding changes, the work of
 * bind.sh. For about SECONDS (at most 60) it runs, then prints one line
 * "RANK MODE GBPS MIGRATIONS": the bytes it moved per second (10^9 B)
 * and how many times it changed CPU while it did.
 *   mem    STREAM's triad, a[i] = b[i] + 3 c[i], over three arrays of
 *          32 MiB (far beyond any cache): bound by memory bandwidth
 *   cache  sums over an array of 256 KiB, again and again: bound by the
 *          core's caches, which a move to another core leaves behind
 * It sleeps on nothing and reads the clock once per pass.
 */
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "now.h"

#define MEM_LEN (4u << 20)   /* doubles per array: 32 MiB */
#define CACHE_LEN (32u << 10) /* doubles: 256 KiB */

struct run {
	double bytes;
	long migrations;
	int cpu;
};

static void
seen_cpu(struct run *r)
{
	int cpu = sched_getcpu();

	if (r->cpu >= 0 && cpu != r->cpu) {
		r->migrations++;
	}
	r->cpu = cpu;
}

static double
mem_pass(double *a, const double *b, const double *c)
{
	for (size_t i = 0; i < MEM_LEN; i++) {
		a[i] = b[i] + 3.0 * c[i];
	}
	return 3.0 * MEM_LEN * sizeof(double);
}

static double
cache_pass(const double *a, double *sink)
{
	double s = 0;

	for (int k = 0; k < 64; k++) {
		for (size_t i = 0; i < CACHE_LEN; i++) {
			s += a[i];
		}
	}
	*sink += s;
	return 64.0 * CACHE_LEN * sizeof(double);
}

int
main(int argc, char **argv)
{
	const char *rank = getenv("WORLD_RANK");
	struct run r = { .cpu = -1 };
	double secs = argc == 3 ? atof(argv[2]) : 0, sink = 0, t0, t = 0;
	bool mem = argc == 3 && strcmp(argv[1], "mem") == 0;
	double *a, *b, *c;

	if (argc != 3 || (!mem && strcmp(argv[1], "cache") != 0) || !(secs > 0 && secs <= 60)) {
		fprintf(stderr, "usage: bindwork mem|cache SECONDS (0 < SECONDS <= 60)\n");
		return 2;
	}
	a = malloc(MEM_LEN * sizeof(double));
	b = malloc(MEM_LEN * sizeof(double));
	c = malloc(MEM_LEN * sizeof(double));
	if (a == NULL || b == NULL || c == NULL) {
		fprintf(stderr, "bindwork: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < MEM_LEN; i++) {
		a[i] = 0;
		b[i] = (double)i;
		c[i] = 1.0;
	}
	t0 = tests_now_s();
	/* Bounded: a pass takes milliseconds, and 60 s at most are asked. */
	for (long pass = 0; pass < 10000000 && (t = tests_now_s() - t0) < secs; pass++) {
		r.bytes += mem ? mem_pass(a, b, c) : cache_pass(a, &sink);
		seen_cpu(&r);
	}
	printf("%s %s %.3f %ld%s\n", rank != NULL ? rank : "0", argv[1], r.bytes / t / 1e9,
	       r.migrations, sink < 0 || a[1] < 0 ? " (never)" : "");
	free(a);
	free(b);
	free(c);
	return 0;
}
