/* SPDX-License-Identifier: MIT */
/*
 * fabping: ping-pong latency and streaming bandwidth between two forked
 * ranks over the transport, on the provider named by argv[1] (default
 * shm), one "size us MB/s" row per size from 8 B to 4 MiB: us is half a
 * round trip, MB/s comes from a window of sends answered by one ack. For
 * comparing against fi_pingpong; not a test.
 */
#include "fabric.h"

#include <stdlib.h>

#include "ranks.h"

#define MAX_LEN (4 << 20)
#define WINDOW 16
#define DEADLINE_MS 60000

struct bench {
	unsigned char *buf;
	int iters;
};

static int
wait1(struct wr_fab *f, struct wr_fab_req *r)
{
	struct wr_fab_req *p[] = {r};
	int rc = wr_fab_wait(f, p, 1, tests_now_ms() + DEADLINE_MS, NULL, NULL);

	return rc != 0 ? rc : r->err;
}

/* @iters round trips of @len bytes; rank 0 returns the seconds taken. */
static double
latency(struct wr_fab *f, int rank, size_t len, int iters, unsigned char *buf)
{
	struct wr_fab_req s, r, *both[] = {&r, &s};
	long long t0 = 0;
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < iters; i++) {
		(void)t0;
		if (rank == 0) {
			wr_fab_irecv(f, 1, 1, 0, buf, len, &r);
			send_retry(f, 1, 1, buf, len, &s);
			wr_fab_wait(f, both, 2, tests_now_ms() + DEADLINE_MS, NULL, NULL);
		} else {
			wr_fab_irecv(f, 0, 1, 0, buf, len, &r);
			wait1(f, &r);
			send_retry(f, 0, 1, buf, len, &s);
			wait1(f, &s);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
}

/* @iters windows of WINDOW sends, each window acknowledged. */
static double
bandwidth(struct wr_fab *f, int rank, size_t len, int iters, unsigned char *buf)
{
	struct wr_fab_req w[WINDOW], ack, *p[WINDOW];
	struct timespec a, b;
	char token = 0;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < iters; i++) {
		for (int k = 0; k < WINDOW; k++) {
			p[k] = &w[k];
			if (rank == 0) {
				send_retry(f, 1, 2, buf, len, &w[k]);
			} else {
				wr_fab_irecv(f, 0, 2, 0, buf, len, &w[k]);
			}
		}
		wr_fab_wait(f, p, WINDOW, tests_now_ms() + DEADLINE_MS, NULL, NULL);
		if (rank == 0) {
			wr_fab_irecv(f, 1, 3, 0, &token, 1, &ack);
		} else {
			send_retry(f, 0, 3, &token, 1, &ack);
		}
		wait1(f, &ack);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
}

static int
run(struct wr_fab *f, int rank, int n, void *arg)
{
	unsigned char *buf = calloc(1, MAX_LEN);

	if (buf == NULL) {
		return 20;
	}
	if (rank == 0) {
		diag("# %s: size us MB/s", wr_fab_provider(f));
	}
	for (size_t len = 8; len <= MAX_LEN; len *= 2) {
		int iters = len <= 65536 ? 10000 : 200;
		int bw_iters = len <= 65536 ? 200 : 10;
		double lat, bw;

		latency(f, rank, len, iters / 10, buf); /* warm-up */
		lat = latency(f, rank, len, iters, buf) / iters / 2 * 1e6;
		bw = (double)len * WINDOW * bw_iters /
		     bandwidth(f, rank, len, bw_iters, buf) / 1e6;
		if (rank == 0) {
			diag("%zu %.2f %.1f", len, lat, bw);
		}
	}
	free(buf);
	return 0;
}

int
main(int argc, char **argv)
{
	char prefix[64];
	struct ranks rs = {
		.provider = argc > 1 ? argv[1] : "shm", .prefix = prefix, .n = 2,
		.spin_us = argc > 2 ? atoi(argv[2]) : 20,
	};

	snprintf(prefix, sizeof(prefix), "wr-fabping%d", (int)getpid());
	return ranks_run(&rs, run, NULL) ? 0 : 1;
}
