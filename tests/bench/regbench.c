/* SPDX-License-Identifier: MIT */
/*
 * regbench: the registry's speed as a client of it sees it, for
 * registry.sh. It runs as a rank of a job (worldrun -n 1 regbench ...).
 * "rtt" times one kv.get at a time from the calling thread, through a
 * blocking regclient on the Unix socket or on TCP, or through libworld
 * (world_kv_get); "tput" has C connections on one event loop in one
 * thread, as redis-benchmark has, each doing kv.set and then kv.get, one
 * request at a time (no pipelining), and gives the ops/s of each phase.
 * It prints one line of name=value pairs and compares with nothing.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "latency.h"
#include "link.h"
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

/* "tput": the loop, its connections, and the phase under way. */
struct tput {
	const struct bench *b;
	struct event_base *base;
	struct conn *cs;
	bool set;  /* kv.set, else kv.get */
	int busy;  /* connections with requests left in this phase */
	int rc;
};

/* One connection of "tput": its share of requests, and what is left. */
struct conn {
	struct tput *t;
	struct wr_link *l;
	long n, left;
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

static void
send_next(struct conn *c)
{
	const struct bench *b = c->t->b;
	json_t *req = json_pack("{s:s, s:s, s:I}", "op", c->t->set ? "kv.set" : "kv.get",
				"key", KEY, "id", (json_int_t)c->left);
	int rc = req == NULL ? -ENOMEM
		: wr_link_send(c->l, req, c->t->set ? b->value : NULL, c->t->set ? b->data : 0);

	json_decref(req);
	if (rc < 0) {
		c->t->rc = rc;
		event_base_loopbreak(c->t->base);
	}
}

/* An answer: check it, then the next request, or this connection is done. */
static void
on_answer(struct wr_link *l, json_t *msg, void *blob, size_t len, void *arg)
{
	struct conn *c = arg;
	struct tput *t = c->t;

	if (json_object_get(msg, "error") != NULL || (!t->set && len != t->b->data)) {
		t->rc = WORLD_EPROTO;
	}
	json_decref(msg);
	free(blob);
	if (t->rc == 0 && --c->left > 0) {
		send_next(c);
	} else if (--t->busy == 0 || t->rc < 0) {
		event_base_loopbreak(t->base);
	}
}

static void
on_lost(struct wr_link *l, int rc, void *arg)
{
	struct conn *c = arg;

	c->t->rc = rc < 0 ? rc : WORLD_EREGISTRY;
	event_base_loopbreak(c->t->base);
}

/* One phase: every connection sends its share; its time in ns, or < 0. */
static int64_t
run_phase(struct tput *t, bool set)
{
	struct timeval limit = { CALL_TIMEOUT_MS / 1000, 0 };
	int64_t start = now_ns();

	t->set = set;
	t->busy = t->b->conns;
	for (int i = 0; i < t->b->conns; i++) {
		t->cs[i].left = t->cs[i].n;
		send_next(&t->cs[i]);
	}
	event_base_loopexit(t->base, &limit);
	event_base_dispatch(t->base);
	if (t->rc == 0 && t->busy > 0) {
		t->rc = -ETIMEDOUT;
	}
	return t->rc < 0 ? t->rc : now_ns() - start;
}

/* Connect (hello as a tool) and put the socket on the loop. */
static int
conn_open(struct tput *t, struct conn *c)
{
	struct wr_link_cfg cfg = {
		.base = t->base, .frame = on_answer, .lost = on_lost, .arg = c,
	};
	struct wr_regclient *rc = NULL;
	int err = client_open(t->b, &rc);

	c->t = t;
	return err < 0 ? err : wr_link_open(&cfg, wr_regclient_release(rc), &c->l);
}

static int
tput(const struct bench *b)
{
	struct tput t = { .b = b, .base = event_base_new(),
			  .cs = calloc((size_t)b->conns, sizeof(*t.cs)) };
	int64_t set_ns = 0, get_ns = 0;

	t.rc = t.base == NULL || t.cs == NULL ? -ENOMEM : 0;
	for (int i = 0; t.rc == 0 && i < b->conns; i++) {
		t.cs[i].n = b->n / b->conns + (i < b->n % b->conns);
		t.rc = conn_open(&t, &t.cs[i]);
	}
	if (t.rc == 0) {
		set_ns = run_phase(&t, true);
	}
	if (t.rc == 0) {
		get_ns = run_phase(&t, false);
	}
	if (t.rc == 0) {
		printf("tput transport=%s conns=%d n=%ld set_rps=%.0f get_rps=%.0f\n",
		       b->transport, b->conns, b->n, (double)b->n * 1e9 / (double)set_ns,
		       (double)b->n * 1e9 / (double)get_ns);
	}
	for (int i = 0; t.cs != NULL && i < b->conns; i++) {
		wr_link_close(t.cs[i].l);
	}
	free(t.cs);
	if (t.base != NULL) {
		event_base_free(t.base);
	}
	return t.rc;
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
