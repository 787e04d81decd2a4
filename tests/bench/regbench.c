/* SPDX-License-Identifier: MIT */
/*
 * regbench: the registry's speed as a client of it sees it, for
 * registry.sh. It runs as a rank of a job (worldrun -n 1 regbench ...).
 * "rtt" times one kv.get at a time from the calling thread, through a
 * blocking regclient on the Unix socket or on TCP, or through libworld
 * (world_kv_get, via its progress thread); "tput" runs C threads, each
 * with its own regclient connection, doing kv.set and then kv.get, one
 * request at a time, and gives the ops/s of each phase. It prints one line
 * of name=value pairs and compares with nothing.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "latency.h"
#include "regclient.h"
#include "world.h"

#define CALL_TIMEOUT_MS 30000
#define KEY "key:__rand_int__" /* the key redis-benchmark uses without -r */

struct bench {
	const char *mode;      /* "rtt" or "tput" */
	const char *transport; /* "unix", "tcp" or "world" */
	char endpoint[512];    /* the one endpoint of that transport */
	const char *secret;
	long n;                /* requests in all, as redis-benchmark's -n */
	long warmup;
	int conns;
	size_t data;           /* value bytes, as redis-benchmark's -d */
	char *value;
};

/* One thread of "tput": its connection, and how it went. */
struct worker {
	const struct bench *b;
	pthread_barrier_t *phase;
	struct wr_regclient *c;
	long n;
	int rc;
};

/* The endpoint of WORLD_REGISTRY that starts with "unix:" or "tcp:". */
static int
pick_endpoint(struct bench *b)
{
	const char *all = getenv("WORLD_REGISTRY");
	size_t plen = strlen(b->transport);

	for (const char *p = all; p != NULL && *p != '\0';) {
		const char *comma = strchrnul(p, ',');
		size_t len = (size_t)(comma - p);

		if (len > plen && p[plen] == ':' && strncmp(p, b->transport, plen) == 0 &&
		    len < sizeof(b->endpoint)) {
			memcpy(b->endpoint, p, len);
			b->endpoint[len] = '\0';
			return 0;
		}
		p = *comma == ',' ? comma + 1 : comma;
	}
	return -ENOENT;
}

static int
client_open(const struct bench *b, struct wr_regclient **c)
{
	struct wr_regclient_cfg cfg = {
		.endpoints = b->endpoint, .secret = b->secret, .rank = 0,
		.role = "tool", .timeout_ms = CALL_TIMEOUT_MS,
	};

	return wr_regclient_open(&cfg, c);
}

static int
reg_set(struct wr_regclient *c, const void *val, size_t len)
{
	return wr_regclient_call(c, json_pack("{s:s, s:s}", "op", "kv.set", "key", KEY),
				 val, len, CALL_TIMEOUT_MS, NULL, NULL, NULL);
}

/* A get whose value must have @want bytes. */
static int
reg_get(void *conn, size_t want)
{
	void *blob = NULL;
	size_t len = 0;
	int rc = wr_regclient_call(conn, json_pack("{s:s, s:s}", "op", "kv.get",
						   "key", KEY),
				   NULL, 0, CALL_TIMEOUT_MS, NULL, &blob, &len);

	free(blob);
	return rc == 0 && len != want ? WORLD_EPROTO : rc;
}

static int
world_get(void *conn, size_t want)
{
	void *val = NULL;
	size_t len = 0;
	int rc = world_kv_get(conn, KEY, &val, &len, 0);

	free(val);
	return rc == 0 && len != want ? WORLD_EPROTO : rc;
}

/* Times b->n gets after b->warmup untimed ones; prints the line. */
static int
time_gets(const struct bench *b, int (*get)(void *, size_t), void *conn)
{
	int64_t *lat = calloc((size_t)b->n, sizeof(*lat));
	int64_t start;
	int rc = lat == NULL ? -ENOMEM : 0;

	for (long i = 0; rc == 0 && i < b->warmup; i++) {
		rc = get(conn, b->data);
	}
	start = now_ns();
	for (long i = 0; rc == 0 && i < b->n; i++) {
		int64_t t = now_ns();

		rc = get(conn, b->data);
		lat[i] = now_ns() - t;
	}
	if (rc == 0) {
		double secs = (double)(now_ns() - start) / 1e9;

		printf("rtt transport=%s n=%ld rps=%.0f", b->transport, b->n,
		       (double)b->n / secs);
		latency_print(lat, b->n);
		printf("\n");
	}
	free(lat);
	return rc;
}

static int
rtt_world(const struct bench *b)
{
	struct world *w = NULL;
	int rc = world_open(&w);

	if (rc == 0) {
		rc = world_kv_set(w, KEY, b->value, b->data);
	}
	if (rc == 0) {
		rc = time_gets(b, world_get, w);
	}
	if (w != NULL) {
		int src = world_stop(w, CALL_TIMEOUT_MS);

		rc = rc < 0 ? rc : src;
	}
	return rc;
}

static int
rtt_regclient(const struct bench *b)
{
	struct wr_regclient *c = NULL;
	int rc = client_open(b, &c);

	if (rc == 0) {
		rc = reg_set(c, b->value, b->data);
	}
	if (rc == 0) {
		rc = time_gets(b, reg_get, c);
	}
	wr_regclient_close(c);
	return rc;
}

/* One thread of "tput": sets, then gets, each phase between barriers. */
static void *
tput_thread(void *arg)
{
	struct worker *k = arg;
	const struct bench *b = k->b;

	pthread_barrier_wait(k->phase); /* every connection is open */
	for (long i = 0; k->rc == 0 && i < k->n; i++) {
		k->rc = reg_set(k->c, b->value, b->data);
	}
	pthread_barrier_wait(k->phase); /* the sets are done */
	pthread_barrier_wait(k->phase); /* the gets start */
	for (long i = 0; k->rc == 0 && i < k->n; i++) {
		k->rc = reg_get(k->c, b->data);
	}
	pthread_barrier_wait(k->phase); /* the gets are done */
	return NULL;
}

/* Runs the threads through the phases; t[0..3]: the phases' edges. */
static void
tput_phases(const struct bench *b, struct worker *ks, pthread_barrier_t *phase,
	    int64_t t[4])
{
	pthread_t *th = calloc((size_t)b->conns, sizeof(*th));
	int started = 0, rc = th == NULL ? -ENOMEM : 0;

	for (; rc == 0 && started < b->conns; started++) {
		rc = -pthread_create(&th[started], NULL, tput_thread, &ks[started]);
	}
	if (rc < 0) {
		/* Threads that started wait at a barrier nobody completes. */
		fprintf(stderr, "regbench: unable to start threads: %s\n",
			world_strerror(rc));
		exit(1);
	}
	for (int i = 0; i < 4; i++) {
		pthread_barrier_wait(phase);
		t[i] = now_ns();
	}
	for (int i = 0; i < started; i++) {
		pthread_join(th[i], NULL);
	}
	free(th);
}

static int
tput(const struct bench *b)
{
	struct worker *ks = calloc((size_t)b->conns, sizeof(*ks));
	pthread_barrier_t phase;
	int64_t t[4];
	int rc = ks == NULL ? -ENOMEM : 0;

	for (int i = 0; rc == 0 && i < b->conns; i++) {
		ks[i] = (struct worker){ .b = b, .phase = &phase,
					 .n = b->n / b->conns + (i < b->n % b->conns) };
		rc = client_open(b, &ks[i].c);
	}
	if (rc == 0) {
		pthread_barrier_init(&phase, NULL, (unsigned)b->conns + 1);
		tput_phases(b, ks, &phase, t);
		pthread_barrier_destroy(&phase);
	}
	for (int i = 0; ks != NULL && i < b->conns; i++) {
		rc = rc < 0 ? rc : ks[i].rc;
		wr_regclient_close(ks[i].c);
	}
	if (rc == 0) {
		printf("tput transport=%s conns=%d n=%ld set_rps=%.0f get_rps=%.0f\n",
		       b->transport, b->conns, b->n,
		       (double)b->n * 1e9 / (double)(t[1] - t[0]),
		       (double)b->n * 1e9 / (double)(t[3] - t[2]));
	}
	free(ks);
	return rc;
}

static void
usage(void)
{
	fprintf(stderr, "usage: worldrun -n 1 regbench rtt|tput [-t unix|tcp|world] "
		"[-n REQUESTS] [-w WARMUP] [-c CONNS] [-d BYTES]\n");
	exit(2);
}

/* Options into @b; exits on a bad one. */
static void
parse(struct bench *b, int argc, char **argv)
{
	int opt;

	*b = (struct bench){ .transport = "unix", .n = 100000, .warmup = 1000,
			     .conns = 8, .data = 3 };
	while ((opt = getopt(argc, argv, "t:n:w:c:d:")) != -1) {
		switch (opt) {
		case 't': b->transport = optarg; break;
		case 'n': b->n = atol(optarg); break;
		case 'w': b->warmup = atol(optarg); break;
		case 'c': b->conns = atoi(optarg); break;
		case 'd': b->data = (size_t)atol(optarg); break;
		default: usage();
		}
	}
	if (optind != argc - 1 || b->n < 1 || b->warmup < 0 || b->conns < 1 ||
	    b->data > (1u << 20)) {
		usage();
	}
	b->mode = argv[optind];
	if (strcmp(b->mode, "rtt") != 0 && strcmp(b->mode, "tput") != 0) {
		usage();
	}
}

int
main(int argc, char **argv)
{
	struct bench b;
	int rc = 0;

	parse(&b, argc, argv);
	b.secret = getenv("WORLD_SECRET");
	b.value = malloc(b.data + 1);
	if (b.value == NULL || b.secret == NULL || getenv("WORLD_REGISTRY") == NULL) {
		fprintf(stderr, "regbench: run me as a rank: worldrun -n 1 regbench ...\n");
		return 2;
	}
	memset(b.value, 'x', b.data);
	if (strcmp(b.transport, "world") == 0) {
		rc = strcmp(b.mode, "rtt") == 0 ? rtt_world(&b) : -EINVAL;
	} else if (pick_endpoint(&b) < 0) {
		fprintf(stderr, "regbench: no %s endpoint in WORLD_REGISTRY\n", b.transport);
		return 2;
	} else {
		rc = strcmp(b.mode, "rtt") == 0 ? rtt_regclient(&b) : tput(&b);
	}
	if (rc < 0) {
		fprintf(stderr, "regbench: %s over %s: %s\n", b.mode, b.transport,
			world_strerror(rc));
	}
	free(b.value);
	return rc < 0 ? 1 : 0;
}
