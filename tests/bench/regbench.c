/* SPDX-License-Identifier: MIT */
/*
 * regbench: the registry's speed as a client of it sees it, for
 * registry.sh. It runs as a rank of a job (worldrun -n 1 regbench ...).
 * "rtt" times one kv.get at a time from the calling thread, through a
 * blocking regclient on the Unix socket or on TCP, with -r as raw frames
 * made once (the client redis-benchmark is), or through libworld
 * (world_kv_get); "tput" has C connections in one thread with one poll
 * loop, as redis-benchmark has, each doing kv.set and then kv.get, one
 * request at a time (no pipelining), each request a frame made once and
 * written again (as redis-benchmark does with its command), and gives
 * the ops/s of each phase.
 * It prints one line of name=value pairs and compares with nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "frame.h"
#include "latency.h"
#include "regclient.h"
#include "spin.h"
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
	bool raw;              /* rtt: frames made once, as redis-benchmark */
	int spin_us;           /* WORLD_SPIN_US, as worldctl reads it */
};

/* A request frame made once, sent as it is every time. */
struct request {
	unsigned char *bytes;
	size_t len;
};

/* One connection of "tput": its socket, what it has read, what is left. */
struct conn {
	int fd;
	struct evbuffer *in;
	struct wr_frame_reader rd;
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
		.role = "tool", .timeout_ms = CALL_TIMEOUT_MS, .spin_us = b->spin_us,
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

/*
 * One request, written as prepared (as redis-benchmark writes its
 * command): what is measured is the registry, not this client's JSON.
 */
static int
send_request(struct conn *c, const struct request *req)
{
	for (size_t off = 0; off < req->len;) {
		ssize_t n = send(c->fd, req->bytes + off, req->len - off, MSG_NOSIGNAL);

		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			return -errno;
		}
		off += n > 0 ? (size_t)n : 0;
	}
	return 0;
}

/* Read what @c has; for each whole answer, check it and send the next. */
static int
on_readable(struct conn *c, const struct request *req, size_t want, int *busy)
{
	ssize_t n = wr_frame_recv(&c->rd, c->in, c->fd);
	json_t *msg;
	void *blob;
	size_t len;
	int rc;

	if (n == -EAGAIN || n == -EINTR) {
		return 0;
	}
	if (n <= 0) {
		return WORLD_EREGISTRY;
	}
	while ((rc = wr_frame_read(&c->rd, c->in, &msg, &blob, &len)) == 1) {
		bool bad = json_object_get(msg, "error") != NULL || len != want;

		json_decref(msg);
		free(blob);
		if (bad) {
			return WORLD_EPROTO;
		}
		if (--c->left > 0) {
			rc = send_request(c, req);
		} else {
			--*busy;
		}
		if (rc < 0) {
			return rc;
		}
	}
	return rc;
}

/* One phase: every connection sends its share of @req, one at a time.
 * Its time in ns, or a negative code. */
static int64_t
run_phase(struct conn *cs, int nconns, const struct request *req, size_t want)
{
	struct pollfd *pf = calloc((size_t)nconns, sizeof(*pf));
	int64_t start = now_ns(), deadline = start + (int64_t)CALL_TIMEOUT_MS * 1000000;
	int busy = nconns, rc = pf == NULL ? -ENOMEM : 0;

	for (int i = 0; rc == 0 && i < nconns; i++) {
		pf[i] = (struct pollfd){ .fd = cs[i].fd, .events = POLLIN };
		cs[i].left = cs[i].n;
		rc = send_request(&cs[i], req);
	}
	while (rc == 0 && busy > 0) {
		if (now_ns() > deadline || poll(pf, (nfds_t)nconns, CALL_TIMEOUT_MS) <= 0) {
			rc = -ETIMEDOUT;
		}
		for (int i = 0; rc == 0 && i < nconns; i++) {
			if (pf[i].revents != 0) {
				rc = on_readable(&cs[i], req, want, &busy);
			}
		}
	}
	free(pf);
	return rc < 0 ? rc : now_ns() - start;
}

/* @op's request frame, made once. */
static int
request_init(struct request *req, const struct bench *b, const char *op,
	     bool with_value)
{
	struct evbuffer *buf = evbuffer_new();
	json_t *msg = json_pack("{s:s, s:s, s:i}", "op", op, "key", KEY, "id", 1);
	int rc = buf == NULL || msg == NULL ? -ENOMEM
		: wr_frame_write(buf, NULL, msg, with_value ? b->value : NULL,
				 with_value ? b->data : 0);

	req->len = buf != NULL ? evbuffer_get_length(buf) : 0;
	req->bytes = rc == 0 ? malloc(req->len) : NULL;
	if (req->bytes != NULL) {
		evbuffer_remove(buf, req->bytes, req->len);
	}
	if (buf != NULL) {
		evbuffer_free(buf);
	}
	json_decref(msg);
	return req->bytes != NULL ? 0 : -ENOMEM;
}

static int
tput(const struct bench *b)
{
	struct conn *cs = calloc((size_t)b->conns, sizeof(*cs));
	struct request set = { 0 }, get = { 0 };
	int64_t set_ns = 0, get_ns = 0;
	int rc = cs == NULL ? -ENOMEM : request_init(&set, b, "kv.set", true);

	rc = rc < 0 ? rc : request_init(&get, b, "kv.get", false);

	for (int i = 0; cs != NULL && i < b->conns; i++) {
		struct wr_regclient *c = NULL;

		cs[i] = (struct conn){ .fd = -1, .in = evbuffer_new(),
				       .n = b->n / b->conns + (i < b->n % b->conns) };
		wr_frame_reader_init(&cs[i].rd, NULL);
		rc = rc < 0 ? rc : cs[i].in == NULL ? -ENOMEM : client_open(b, &c);
		if (rc == 0) {
			cs[i].fd = wr_regclient_release(c);
			rc = cs[i].fd < 0 ? cs[i].fd : 0;
		}
	}
	set_ns = rc < 0 ? rc : run_phase(cs, b->conns, &set, 0);
	get_ns = set_ns < 0 ? set_ns : run_phase(cs, b->conns, &get, b->data);
	rc = get_ns < 0 ? (int)get_ns : 0;
	if (rc == 0) {
		printf("tput transport=%s conns=%d n=%ld set_rps=%.0f get_rps=%.0f\n",
		       b->transport, b->conns, b->n, (double)b->n * 1e9 / (double)set_ns,
		       (double)b->n * 1e9 / (double)get_ns);
	}
	for (int i = 0; cs != NULL && i < b->conns; i++) {
		close(cs[i].fd);
		evbuffer_free(cs[i].in);
		wr_frame_reader_finish(&cs[i].rd);
	}
	free(cs);
	free(set.bytes);
	free(get.bytes);
	return rc;
}

/* "rtt -r": one connection, its get request made once; it waits for
 * answers as regclient does. */
struct raw {
	struct conn c;
	struct request get;
	struct wr_spin spin;
};

static int
raw_get(void *arg, size_t want)
{
	struct raw *r = arg;
	int64_t deadline = now_ns() + (int64_t)CALL_TIMEOUT_MS * 1000000;
	int busy = 1, rc;

	r->c.left = 1;
	rc = send_request(&r->c, &r->get);
	while (rc == 0 && busy > 0) {
		int64_t start;
		bool spun = wr_spin_wait(&r->spin, wr_spin_readable, &r->c.fd, &start);

		rc = now_ns() > deadline ? -ETIMEDOUT
			: on_readable(&r->c, &r->get, want, &busy);
		if (!spun) {
			wr_spin_blocked(&r->spin, start);
		}
	}
	return rc;
}

/* Reads block (up to the call timeout), as regclient's do. */
static int
block_reads(int fd)
{
	struct timeval tv = { .tv_sec = CALL_TIMEOUT_MS / 1000 };
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0) {
		return -errno;
	}
	return 0;
}

static int
rtt_raw(const struct bench *b)
{
	struct raw r = { .c = { .fd = -1, .in = evbuffer_new() } };
	struct wr_regclient *c = NULL;
	int rc = r.c.in == NULL ? -ENOMEM : client_open(b, &c);

	wr_frame_reader_init(&r.c.rd, NULL);
	wr_spin_init(&r.spin, b->spin_us);
	rc = rc < 0 ? rc : reg_set(c, b->value, b->data);
	rc = rc < 0 ? rc : request_init(&r.get, b, "kv.get", false);
	if (rc == 0) {
		r.c.fd = wr_regclient_release(c);
		c = NULL;
		rc = r.c.fd < 0 ? r.c.fd : block_reads(r.c.fd);
		rc = rc < 0 ? rc : time_gets(b, raw_get, &r);
	}
	wr_regclient_close(c);
	close(r.c.fd);
	evbuffer_free(r.c.in);
	wr_frame_reader_finish(&r.c.rd);
	free(r.get.bytes);
	return rc;
}

static void
usage(void)
{
	fprintf(stderr, "usage: worldrun -n 1 regbench rtt|tput [-t unix|tcp|world] [-r] "
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
	while ((opt = getopt(argc, argv, "t:n:w:c:d:r")) != -1) {
		switch (opt) {
		case 'r': b->raw = true; break;
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
	wr_spin_parse(getenv("WORLD_SPIN_US"), &b.spin_us);
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
		rc = strcmp(b.mode, "rtt") != 0 ? tput(&b) : b.raw ? rtt_raw(&b)
							      : rtt_regclient(&b);
	}
	if (rc < 0) {
		fprintf(stderr, "regbench: %s over %s: %s\n", b.mode, b.transport,
			world_strerror(rc));
	}
	free(b.value);
	return rc < 0 ? 1 : 0;
}
