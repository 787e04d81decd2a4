/* SPDX-License-Identifier: MIT */
/*
 * rpcbench: RPC speed between ranks, for rpc.sh. Every rank joins group
 * "bench", where rank 0 registers two services with empty replies:
 * "empty" and "sink" (which takes a blob). Then, by mode:
 *   rtt  (2 ranks): rank 1 times world_call("empty") one at a time, and
 *        in alternating blocks world_kv_get of a 3-byte value, so the
 *        registry's round trip through the same library is measured in
 *        the same sitting;
 *   tput (1 + C ranks): ranks 1..C call "empty" for S seconds; rank 0
 *        sums their calls;
 *   blob (2 ranks): rank 1 calls "sink" with a blob of B bytes, N times.
 * -t tcp moves the registry connection and the peer connections from the
 * Unix socket to loopback TCP. It prints name=value lines and compares
 * with nothing.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "latency.h"
#include "world.h"

#define CALL_TIMEOUT_MS 60000
#define BLOCK 500 /* rtt: calls per block before switching to kv gets */

struct bench {
	const char *mode; /* "rtt", "tput" or "blob" */
	bool tcp;
	long n;
	long warmup;
	double seconds;
	size_t bytes;
	struct world *w;
	struct world_group *g;
};

static int
empty(void *ctx, const json_t *args, const void *blob, size_t len,
      struct world_reply *reply)
{
	return 0;
}

static int
sink(void *ctx, const json_t *args, const void *blob, size_t len,
     struct world_reply *reply)
{
	const struct bench *b = ctx;

	return len == b->bytes ? 0 : world_reply_error(reply, -EINVAL, "wrong size");
}

/* The "tcp:" part of an "a,b,..." endpoint list, in @out. */
static int
tcp_part(const char *all, char *out, size_t size)
{
	const char *p = all != NULL ? strstr(all, "tcp:") : NULL;
	size_t len;

	if (p == NULL) {
		return -ENOENT;
	}
	len = strcspn(p, ",");
	if (len >= size) {
		return -ENAMETOOLONG;
	}
	memcpy(out, p, len);
	out[len] = '\0';
	return 0;
}

/* Before world_open: the registry over TCP. */
static int
registry_over_tcp(void)
{
	char ep[512];
	int rc = tcp_part(getenv("WORLD_REGISTRY"), ep, sizeof(ep));

	return rc < 0 ? rc : setenv("WORLD_REGISTRY", ep, 1) < 0 ? -errno : 0;
}

/* After world_open: publish only the TCP endpoint of this rank, so that
 * peers that look it up later connect over TCP. */
static int
peers_over_tcp(struct world *w)
{
	char key[64], ep[512];
	void *all = NULL;
	size_t len;
	int rc;

	snprintf(key, sizeof(key), "world.peer.%d", world_rank(w));
	rc = world_kv_get(w, key, &all, &len, CALL_TIMEOUT_MS);
	if (rc == 0) {
		rc = tcp_part(all, ep, sizeof(ep));
	}
	if (rc == 0) {
		rc = world_kv_set(w, key, ep, strlen(ep));
	}
	free(all);
	return rc;
}

static int
call_empty(struct bench *b)
{
	return world_call(b->g, "empty", NULL, NULL, 0, CALL_TIMEOUT_MS, NULL, NULL,
			  NULL);
}

static int
kv_get(struct bench *b)
{
	void *v = NULL;
	size_t len;
	int rc = world_kv_get(b->w, "bench.key", &v, &len, 0);

	free(v);
	return rc;
}

static void
print_rtt(const struct bench *b, const char *what, int64_t *lat)
{
	printf("rtt what=%s transport=%s n=%ld", what, b->tcp ? "tcp" : "unix", b->n);
	latency_print(lat, b->n);
	printf("\n");
}

/* Rank 1: calls and kv gets, BLOCK at a time each, alternating. */
static int
rtt(struct bench *b)
{
	int64_t *call = calloc((size_t)b->n, sizeof(int64_t));
	int64_t *get = calloc((size_t)b->n, sizeof(int64_t));
	int rc = call == NULL || get == NULL ? -ENOMEM
		: world_kv_set(b->w, "bench.key", "xxx", 3);

	for (long i = 0; rc == 0 && i < b->warmup; i++) {
		rc = call_empty(b);
		rc = rc < 0 ? rc : kv_get(b);
	}
	for (long at = 0; rc == 0 && at < b->n; at += BLOCK) {
		long end = at + BLOCK < b->n ? at + BLOCK : b->n;

		for (long i = at; rc == 0 && i < end; i++) {
			int64_t t = now_ns();

			rc = call_empty(b);
			call[i] = now_ns() - t;
		}
		for (long i = at; rc == 0 && i < end; i++) {
			int64_t t = now_ns();

			rc = kv_get(b);
			get[i] = now_ns() - t;
		}
	}
	if (rc == 0) {
		print_rtt(b, "call", call);
		print_rtt(b, "kv_get", get);
	}
	free(call);
	free(get);
	return rc;
}

/* Ranks 1..C: call for b->seconds, then publish "calls start end". */
static int
tput_caller(struct bench *b)
{
	int64_t start, end, deadline;
	long calls = 0;
	char key[64], val[96];
	int rc = 0;

	for (long i = 0; rc == 0 && i < b->warmup; i++) {
		rc = call_empty(b);
	}
	if (rc == 0) {
		rc = world_group_barrier(b->g, CALL_TIMEOUT_MS);
	}
	start = now_ns();
	deadline = start + (int64_t)(b->seconds * 1e9);
	for (end = start; rc == 0 && end < deadline; calls++) {
		rc = call_empty(b);
		end = now_ns();
	}
	snprintf(key, sizeof(key), "bench.tput.%d", world_rank(b->w));
	snprintf(val, sizeof(val), "%ld %lld %lld", rc == 0 ? calls : -1,
		 (long long)start, (long long)end);
	return rc < 0 ? rc : world_kv_set(b->w, key, val, strlen(val));
}

/* Rank 0: the callers' sum, once they have all published. */
static int
tput_total(struct bench *b)
{
	int64_t first = INT64_MAX, last = 0;
	long total = 0, lo = -1, hi = 0;
	int rc = world_group_barrier(b->g, CALL_TIMEOUT_MS);

	for (int r = 1; rc == 0 && r < world_size(b->w); r++) {
		char key[64], *val = NULL;
		long long s = 0, e = 0;
		long calls = -1;

		snprintf(key, sizeof(key), "bench.tput.%d", r);
		rc = world_kv_get(b->w, key, (void **)&val, NULL,
				  (int)(b->seconds * 1000) + CALL_TIMEOUT_MS);
		if (rc == 0 && (sscanf(val, "%ld %lld %lld", &calls, &s, &e) != 3 ||
				calls < 0)) {
			rc = -EIO;
		}
		free(val);
		total += calls;
		lo = lo < 0 || calls < lo ? calls : lo;
		hi = calls > hi ? calls : hi;
		first = s < first ? s : first;
		last = e > last ? e : last;
	}
	if (rc == 0) {
		double secs = (double)(last - first) / 1e9;

		printf("tput transport=%s callers=%d seconds=%.2f calls=%ld cps=%.0f "
		       "caller_min=%.0f caller_max=%.0f\n", b->tcp ? "tcp" : "unix",
		       world_size(b->w) - 1, secs, total, (double)total / secs,
		       (double)lo / b->seconds, (double)hi / b->seconds);
	}
	return rc;
}

/* Rank 1: b->n calls of "sink" with a blob of b->bytes. */
static int
blob(struct bench *b)
{
	int64_t *lat = calloc((size_t)b->n, sizeof(int64_t));
	char *data = malloc(b->bytes);
	int64_t start = 0;
	int rc = lat == NULL || data == NULL ? -ENOMEM : 0;

	if (data != NULL) {
		memset(data, 'b', b->bytes);
	}
	for (long i = 0; rc == 0 && i < b->warmup; i++) {
		rc = world_call(b->g, "sink", NULL, data, b->bytes, CALL_TIMEOUT_MS,
				NULL, NULL, NULL);
	}
	start = now_ns();
	for (long i = 0; rc == 0 && i < b->n; i++) {
		int64_t t = now_ns();

		rc = world_call(b->g, "sink", NULL, data, b->bytes, CALL_TIMEOUT_MS,
				NULL, NULL, NULL);
		lat[i] = now_ns() - t;
	}
	if (rc == 0) {
		double secs = (double)(now_ns() - start) / 1e9;

		printf("blob transport=%s bytes=%zu n=%ld mbps=%.0f", b->tcp ? "tcp" : "unix",
		       b->bytes, b->n, (double)b->bytes * (double)b->n / secs / 1e6);
		latency_print(lat, b->n);
		printf("\n");
	}
	free(data);
	free(lat);
	return rc;
}

/* The measurement of this rank, between the group's two barriers. */
static int
measure(struct bench *b)
{
	int rank = world_rank(b->w);

	if (strcmp(b->mode, "tput") == 0) {
		return rank == 0 ? tput_total(b) : tput_caller(b);
	}
	if (rank != 1) {
		return 0;
	}
	return strcmp(b->mode, "rtt") == 0 ? rtt(b) : blob(b);
}

static int
run(struct bench *b)
{
	const char *members[256];
	char names[256][12];
	int size = world_size(b->w), rc = 0;

	if (size < 2 || size > 256 || (strcmp(b->mode, "tput") != 0 && size != 2)) {
		fprintf(stderr, "rpcbench: %s wants %s ranks\n", b->mode,
			strcmp(b->mode, "tput") == 0 ? "2 to 256" : "2");
		return -EINVAL;
	}
	for (int r = 0; r < size; r++) {
		snprintf(names[r], sizeof(names[r]), "%d", r);
		members[r] = names[r];
	}
	if (b->tcp) {
		rc = peers_over_tcp(b->w);
	}
	if (rc == 0) {
		rc = world_group_create(b->w, "bench", members, (size_t)size,
					CALL_TIMEOUT_MS, &b->g);
	}
	if (rc == 0 && world_rank(b->w) == 0) {
		rc = world_register(b->g, "empty", empty, b, 0);
		rc = rc < 0 ? rc : world_register(b->g, "sink", sink, b, 0);
	}
	rc = rc < 0 ? rc : world_group_barrier(b->g, CALL_TIMEOUT_MS);
	rc = rc < 0 ? rc : measure(b);
	rc = rc < 0 ? rc : world_group_barrier(b->g, CALL_TIMEOUT_MS);
	return rc;
}

static void
usage(void)
{
	fprintf(stderr, "usage: worldrun -n 2 rpcbench rtt|blob [-t unix|tcp] "
		"[-n CALLS] [-w WARMUP] [-b BYTES]\n"
		"       worldrun -n 1+C rpcbench tput [-t unix|tcp] [-s SECONDS] "
		"[-w WARMUP]\n");
	exit(2);
}

static void
parse(struct bench *b, int argc, char **argv)
{
	int opt;

	*b = (struct bench){ .n = 20000, .warmup = 200, .seconds = 5,
			     .bytes = 16u << 20 };
	while ((opt = getopt(argc, argv, "t:n:w:s:b:")) != -1) {
		switch (opt) {
		case 't': b->tcp = strcmp(optarg, "tcp") == 0; break;
		case 'n': b->n = atol(optarg); break;
		case 'w': b->warmup = atol(optarg); break;
		case 's': b->seconds = atof(optarg); break;
		case 'b': b->bytes = (size_t)atol(optarg); break;
		default: usage();
		}
	}
	if (optind != argc - 1 || b->n < 1 || b->warmup < 0 || b->seconds <= 0) {
		usage();
	}
	b->mode = argv[optind];
	if (strcmp(b->mode, "rtt") != 0 && strcmp(b->mode, "tput") != 0 &&
	    strcmp(b->mode, "blob") != 0) {
		usage();
	}
}

int
main(int argc, char **argv)
{
	struct bench b;
	int rc, src;

	parse(&b, argc, argv);
	if (getenv("WORLD_REGISTRY") == NULL) {
		fprintf(stderr, "rpcbench: run me under worldrun (see usage)\n");
		return 2;
	}
	rc = b.tcp ? registry_over_tcp() : 0;
	rc = rc < 0 ? rc : world_open(&b.w);
	rc = rc < 0 ? rc : run(&b);
	if (rc < 0) {
		fprintf(stderr, "rpcbench: rank %d: %s: %s\n", b.w ? world_rank(b.w) : -1,
			b.mode, world_strerror(rc));
	}
	world_group_destroy(b.g);
	src = b.w != NULL ? world_stop(b.w, CALL_TIMEOUT_MS) : 0;
	return rc < 0 || src < 0 ? 1 : 0;
}
