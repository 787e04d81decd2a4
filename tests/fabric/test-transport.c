/* SPDX-License-Identifier: MIT */
/*
 * transport: libworld's libfabric endpoint layer on forked ranks, on
 * each of shm, tcp;ofi_rxm and net (skipped where fi_getinfo does not
 * offer it): ping-pong of sizes across the protocol thresholds, an
 * unexpected large message, any-source and directed receives,
 * truncation, timeouts, interrupts, CPU use while blocked, two threads
 * waiting at once, an oversubscribed all-to-all, and nothing left in
 * /dev/shm after close. Then bad configurations.
 */
#include "fabric.h"

#include <dirent.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "ranks.h"
#include "tap.h"

#define GENERIC 9
#define WAIT_MS 20000
#define BIG (8 << 20)

static char prefix_base[64];
static int job_seq;

static const char *const providers[] = {"shm", "tcp;ofi_rxm", "net"};

static int
wait_all(struct wr_fab *f, struct wr_fab_req *const *reqs, size_t n)
{
	return wr_fab_wait(f, reqs, n, tests_now_ms() + WAIT_MS, NULL, NULL);
}

static unsigned char
pattern(size_t i, int seed)
{
	return (unsigned char)(i * 131 + (size_t)seed * 7 + (i >> 8));
}

static void
fill(unsigned char *buf, size_t len, int seed)
{
	for (size_t i = 0; i < len; i++) {
		buf[i] = pattern(i, seed);
	}
}

static bool
verify(const unsigned char *buf, size_t len, int seed)
{
	for (size_t i = 0; i < len; i++) {
		if (buf[i] != pattern(i, seed)) {
			diag("# byte %zu of %zu differs", i, len);
			return false;
		}
	}
	return true;
}

/* A receive that ended well with @len bytes from @source. */
static bool
received(const struct wr_fab_req *r, size_t len, int source)
{
	if (r->err != 0 || r->len != len || r->source != source) {
		diag("# recv: err %d len %zu source %d, want len %zu source %d",
		     r->err, r->len, r->source, len, source);
		return false;
	}
	return true;
}

static int
pingpong(struct wr_fab *f, int rank, int n, void *arg)
{
	static const size_t sizes[] = {0, 1, 8, 4097, 1 << 20, BIG};
	unsigned char *sbuf = malloc(BIG), *rbuf = malloc(BIG);
	int rc = sbuf && rbuf ? 0 : 20;

	for (size_t i = 0; rc == 0 && i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct wr_fab_req s, r, *both[] = {&r, &s};
		size_t len = sizes[i];
		uint64_t tag = 1 + i;
		int me = (int)i, you = (int)i + 100;

		if (rank == 1) {
			me = you;
			you = (int)i;
		}
		fill(sbuf, len, me);
		memset(rbuf, 0, len);
		if (wr_fab_irecv(f, 1 - rank, tag, 0, rbuf, len, &r) != 0 ||
		    (rank == 1 && wait_all(f, both, 1) != 0) ||
		    send_retry(f, 1 - rank, tag, sbuf, len, &s) != 0 ||
		    wait_all(f, both, 2) != 0 || s.err != 0) {
			rc = 21;
		} else if (!received(&r, len, 1 - rank) || !verify(rbuf, len, you)) {
			rc = 22;
		}
	}
	free(sbuf);
	free(rbuf);
	return rc;
}

/* The 8 MiB send starts before the receive is posted: the receiver
 * looks away first (for ordering only; nothing is timed). A message
 * behind it could not serve as the signal: on net a large unexpected
 * message holds up its pair's stream until it is received. */
static int
unexpected(struct wr_fab *f, int rank, int n, void *arg)
{
	unsigned char *buf = malloc(BIG);
	struct wr_fab_req big, *p[] = {&big};
	struct timespec ts = {0, 300000000};
	int rc = buf ? 0 : 20;

	if (rc == 0 && rank == 0) {
		fill(buf, BIG, 3);
		if (send_retry(f, 1, 50, buf, BIG, &big) != 0 ||
		    wait_all(f, p, 1) != 0 || big.err != 0) {
			rc = 21;
		}
	} else if (rc == 0) {
		nanosleep(&ts, NULL);
		if (wr_fab_irecv(f, 0, 50, 0, buf, BIG, &big) != 0 ||
		    wait_all(f, p, 1) != 0) {
			rc = 21;
		} else if (!received(&big, BIG, 0) || !verify(buf, BIG, 3)) {
			rc = 22;
		}
	}
	free(buf);
	return rc;
}

/* Rank 0 receives from any source, once from each of the others. */
static int
any_source(struct wr_fab *f, int rank, int n, void *arg)
{
	struct wr_fab_req r[RANKS_MAX], *p[RANKS_MAX];
	int got[RANKS_MAX], seen[RANKS_MAX] = {0};

	if (rank != 0) {
		p[0] = &r[0];
		if (send_retry(f, 0, 60, &rank, sizeof(rank), &r[0]) != 0 ||
		    wait_all(f, p, 1) != 0 || r[0].err != 0) {
			return 21;
		}
		return 0;
	}
	for (int i = 0; i < n - 1; i++) {
		p[i] = &r[i];
		if (wr_fab_irecv(f, -1, 60, 0, &got[i], sizeof(got[i]), &r[i]) != 0) {
			return 21;
		}
	}
	if (wait_all(f, p, (size_t)n - 1) != 0) {
		return 22;
	}
	for (int i = 0; i < n - 1; i++) {
		int src = r[i].source;

		if (r[i].err != 0 || src < 1 || src >= n || got[i] != src ||
		    (int)((r[i].tag & WR_FAB_SRC_MASK) >> WR_FAB_SRC_SHIFT) != src ||
		    seen[src]++ != 0) {
			diag("# any source: err %d source %d payload %d",
			     r[i].err, src, got[i]);
			return 23;
		}
	}
	return 0;
}

static int
send_int(struct wr_fab *f, int peer, uint64_t tag, int value)
{
	struct wr_fab_req r, *p[] = {&r};

	if (send_retry(f, peer, tag, &value, sizeof(value), &r) != 0 ||
	    wait_all(f, p, 1) != 0) {
		return -1;
	}
	return r.err;
}

static int
recv_int(struct wr_fab *f, int peer, uint64_t tag, int *value)
{
	struct wr_fab_req r, *p[] = {&r};

	if (wr_fab_irecv(f, peer, tag, 0, value, sizeof(*value), &r) != 0 ||
	    wait_all(f, p, 1) != 0) {
		return -1;
	}
	return r.err;
}

/*
 * Rank 0's receive directed at rank 2 must let rank 1's message of the
 * same tag go by, though it arrives first (rank 1's note, ordered behind
 * it, proves that), and then take rank 2's.
 */
static int
directed(struct wr_fab *f, int rank, int n, void *arg)
{
	struct wr_fab_req from2, note, *p[] = {&from2, &note};
	int v2 = 0, v1 = 0, dummy = 0, rc;
	size_t index = 99;

	if (rank == 1) {
		return send_int(f, 0, 70, 1) == 0 && send_int(f, 0, 71, 0) == 0 ? 0 : 21;
	}
	if (rank == 2) {
		return recv_int(f, 0, 72, &dummy) == 0 && send_int(f, 0, 70, 2) == 0 ? 0 : 21;
	}
	if (wr_fab_irecv(f, 2, 70, 0, &v2, sizeof(v2), &from2) != 0 ||
	    wr_fab_irecv(f, 1, 71, 0, &dummy, sizeof(dummy), &note) != 0 ||
	    wr_fab_wait_any(f, p, 2, tests_now_ms() + WAIT_MS, NULL, NULL, &index) != 0) {
		return 22;
	}
	wr_fab_progress(f);
	if (index != 1 || wr_fab_done(&from2)) {
		diag("# directed: index %zu, from 2 done %d", index, wr_fab_done(&from2));
		return 23;
	}
	rc = send_int(f, 2, 72, 0);
	if (rc != 0 || wait_all(f, p, 1) != 0 ||
	    !received(&from2, sizeof(v2), 2) || v2 != 2) {
		diag("# directed: send %d, from 2: %d", rc, v2);
		return 24;
	}
	rc = recv_int(f, -1, 70, &v1);
	if (rc != 0 || v1 != 1) {
		diag("# directed: then from any source %d, %d", rc, v1);
		return 25;
	}
	return 0;
}

/* A message longer than its receive buffer fails that receive. */
static int
truncated(struct wr_fab *f, int rank, int n, void *arg)
{
	static unsigned char buf[64];
	struct wr_fab_req r, *p[] = {&r};

	if (rank == 1) {
		return send_retry(f, 0, 85, buf, sizeof(buf), &r) == 0 &&
		       wait_all(f, p, 1) == 0 ? 0 : 21;
	}
	if (wr_fab_irecv(f, 1, 85, 0, buf, 16, &r) != 0 || wait_all(f, p, 1) != 0) {
		return 22;
	}
	return r.err == -EMSGSIZE && r.len <= 16 ? 0 : 23;
}

/* Messages larger than their receive buffers fail those receives only. */
static int
truncation(struct wr_fab *f, int rank, int n, void *arg)
{
	static unsigned char big[65536], small[1024];
	struct wr_fab_req a, b, c, *p[] = {&a, &b, &c};
	int v = 0;

	if (rank == 1) {
		if (send_retry(f, 0, 80, big, 64, &a) != 0 ||
		    send_retry(f, 0, 81, big, sizeof(big), &b) != 0 ||
		    send_retry(f, 0, 82, &rank, sizeof(rank), &c) != 0 ||
		    wait_all(f, p, 3) != 0 || c.err != 0) {
			return 21;
		}
		diag("# truncation: the senders ended with %d and %d", a.err, b.err);
		return recv_int(f, 0, 83, &v) == 0 ? 0 : 24;
	}
	if (wr_fab_irecv(f, 1, 80, 0, small, 16, &a) != 0 ||
	    wr_fab_irecv(f, 1, 81, 0, small, sizeof(small), &b) != 0 ||
	    wr_fab_irecv(f, 1, 82, 0, &v, sizeof(v), &c) != 0 ||
	    wait_all(f, p, 3) != 0) {
		for (int i = 0; i < 3; i++) {
			diag("# truncation: receive %d: done %d err %d len %zu", i,
			     wr_fab_done(p[i]), p[i]->err, p[i]->len);
		}
		return 22;
	}
	if (a.err != -EMSGSIZE || b.err != -EMSGSIZE || !received(&c, sizeof(v), 1) ||
	    v != 1) {
		diag("# truncation: errors %d %d", a.err, b.err);
		return 23;
	}
	return send_int(f, 1, 83, 0) == 0 ? 0 : 24;
}

/* A receive nobody answers: the wait times out, the request stays
 * posted until it is cancelled. */
static int
timeout(struct wr_fab *f, int rank, int n, void *arg)
{
	struct wr_fab_req r, *p[] = {&r};
	int v, rc;

	if (wr_fab_irecv(f, 0, 90, 0, &v, sizeof(v), &r) != 0) {
		return 21;
	}
	rc = wr_fab_wait(f, p, 1, tests_now_ms() + 100, NULL, NULL);
	if (rc != -ETIMEDOUT || wr_fab_done(&r)) {
		diag("# timeout: %d, done %d", rc, wr_fab_done(&r));
		return 22;
	}
	wr_fab_cancel(f, &r);
	if (!wr_fab_done(&r) || r.err != -ECANCELED) {
		diag("# cancel: done %d err %d", wr_fab_done(&r), r.err);
		return 23;
	}
	return 0;
}

struct alarm_clock {
	struct wr_fab *f;
	int rung;
};

static void *
interrupter(void *arg)
{
	struct alarm_clock *a = arg;
	struct timespec ts = {0, 200000000};

	nanosleep(&ts, NULL);
	__atomic_store_n(&a->rung, 1, __ATOMIC_SEQ_CST);
	wr_fab_interrupt(a->f);
	return NULL;
}

static int
rung(void *arg)
{
	struct alarm_clock *a = arg;

	return __atomic_load_n(&a->rung, __ATOMIC_SEQ_CST) ? -ECONNABORTED : 0;
}

/* Another thread interrupts a wait whose check then ends it. */
static int
interrupt(struct wr_fab *f, int rank, int n, void *arg)
{
	struct alarm_clock a = {.f = f};
	struct wr_fab_req r, *p[] = {&r};
	pthread_t t;
	int v, rc;

	if (wr_fab_irecv(f, 0, 91, 0, &v, sizeof(v), &r) != 0 ||
	    pthread_create(&t, NULL, interrupter, &a) != 0) {
		return 21;
	}
	rc = wr_fab_wait(f, p, 1, tests_now_ms() + WAIT_MS, rung, &a);
	pthread_join(t, NULL);
	wr_fab_cancel(f, &r);
	if (rc != -ECONNABORTED) {
		diag("# interrupt: wait returned %d", rc);
		return 22;
	}
	return 0;
}

static double
cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* A receive blocked for 1.5 s sleeps rather than polls: a bound on CPU
 * use, not on time. */
static int
idle_cpu(struct wr_fab *f, int rank, int n, void *arg)
{
	struct timespec ts = {1, 500000000};
	double cpu, wall;
	long long t0;
	int v = 0;

	if (rank == 1) {
		nanosleep(&ts, NULL);
		return send_int(f, 0, 92, 7) == 0 ? 0 : 21;
	}
	cpu = cpu_seconds();
	t0 = tests_now_ms();
	if (recv_int(f, 1, 92, &v) != 0 || v != 7) {
		return 22;
	}
	cpu = cpu_seconds() - cpu;
	wall = (double)(tests_now_ms() - t0) / 1000;
	diag("# blocked %.2f s using %.3f s of CPU", wall, cpu);
	return cpu < 0.25 * wall ? 0 : 23;
}

struct reader {
	struct wr_fab *f;
	uint64_t tag;
	int value, rc;
};

static void *
read_one(void *arg)
{
	struct reader *r = arg;

	r->rc = recv_int(r->f, 1, r->tag, &r->value);
	return NULL;
}

/* Two threads wait on different receives at once; both complete, in
 * the order opposite to their posting. */
static int
threads(struct wr_fab *f, int rank, int n, void *arg)
{
	struct reader rd[2] = {{f, 110, 0, -1}, {f, 111, 0, -1}};
	struct timespec ts = {0, 100000000};
	pthread_t t[2];
	int go = 0;

	if (rank == 1) {
		nanosleep(&ts, NULL);
		return send_int(f, 0, 111, 11) == 0 && send_int(f, 0, 110, 10) == 0 &&
		       recv_int(f, 0, 112, &go) == 0 ? 0 : 21;
	}
	for (int i = 0; i < 2; i++) {
		if (pthread_create(&t[i], NULL, read_one, &rd[i]) != 0) {
			return 22;
		}
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
	}
	if (rd[0].rc != 0 || rd[0].value != 10 || rd[1].rc != 0 || rd[1].value != 11) {
		return 23;
	}
	return send_int(f, 1, 112, 0) == 0 ? 0 : 24;
}

/* Every rank sends to every other, 10 rounds, receives posted first. */
static int
all_to_all(struct wr_fab *f, int rank, int n, void *arg)
{
	struct wr_fab_req r[2 * RANKS_MAX], *p[2 * RANKS_MAX];
	int in[RANKS_MAX], out[RANKS_MAX];

	for (int round = 0; round < 10; round++) {
		size_t k = 0;

		for (int peer = 0; peer < n; peer++) {
			out[peer] = rank * 1000 + round;
			if (peer != rank) {
				p[k] = &r[k];
				if (wr_fab_irecv(f, peer, 100, 0, &in[peer], sizeof(int), &r[k++]) != 0) {
					return 21;
				}
			}
		}
		for (int peer = 0; peer < n; peer++) {
			if (peer == rank) {
				continue;
			}
			p[k] = &r[k];
			if (send_retry(f, peer, 100, &out[peer], sizeof(int), &r[k++]) != 0) {
				return 22;
			}
		}
		if (wait_all(f, p, k) != 0) {
			return 23;
		}
		for (int peer = 0; peer < n; peer++) {
			if (peer != rank && in[peer] != peer * 1000 + round) {
				return 24;
			}
		}
	}
	return 0;
}

struct scenario {
	const char *name;
	ranks_fn *fn;
	int n;
	bool oversubscribed;
	const char *skip_tcp; /* why it cannot pass but on shm (then it runs on
				 shm only, no skip), or NULL */
	bool truncates; /* cannot pass on shm without CMA: TRUNC_SAR */
};

/* Measured: net logs "posted rx buffer size is not big enough" and
 * drops the connection; rxm never completes the receive. */
#define TRUNC_TCP "libfabric 1.17 net and tcp;ofi_rxm lose the pair's later messages after a truncation"
/* Measured with FI_SHM_DISABLE_CMA=1 (transport-nocma): libfabric 1.17's
 * shm without CMA completes a truncated inject (64 B into 16) as a
 * success of 0 bytes, and never completes a truncated SAR receive. */
#define TRUNC_SAR "libfabric 1.17 shm without CMA does not report truncation"

static const struct scenario scenarios[] = {
	{"2 ranks: ping-pong of 0 B to 8 MiB, data intact", pingpong, 2, false, NULL, false},
	{"an 8 MiB message sent before its receive is posted", unexpected, 2, false, NULL, false},
	{"any-source receives get each of 7 senders once", any_source, 8, true, NULL, false},
	{"a directed receive lets another source's message by", directed, 3, false, NULL, false},
	{"a truncated message fails its receive (-EMSGSIZE)", truncated, 2, false, NULL, true},
	{"after truncations (64 B, 64 KiB) the pair keeps working", truncation, 2, false, TRUNC_TCP,
	 true},
	{"a wait times out (-ETIMEDOUT), then the receive is cancelled", timeout, 1, false, NULL, false},
	{"an interrupt from another thread ends a wait with its check's code", interrupt, 1, false, NULL, false},
	{"a receive blocked 1.5 s uses under 25% of a CPU", idle_cpu, 2, false, NULL, false},
	{"two threads wait on different receives, both complete", threads, 2, false, NULL, false},
	{"8 oversubscribed ranks exchange all-to-all", all_to_all, 8, true, NULL, false},
};

/* Entries in /dev/shm whose names begin with @prefix; removes them when
 * @remove (what a failed run left). */
static int
shm_entries(const char *prefix, bool remove)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *e;
	char path[512];
	int count = 0;

	if (d == NULL) {
		return 0;
	}
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, prefix, strlen(prefix)) != 0) {
			continue;
		}
		count++;
		if (remove) {
			snprintf(path, sizeof(path), "/dev/shm/%s", e->d_name);
			unlink(path);
		}
	}
	closedir(d);
	return count;
}

static int
probe(struct wr_fab *f, int rank, int n, void *arg)
{
	return 0;
}

static bool
cma_off(void)
{
	const char *e = getenv("FI_SHM_DISABLE_CMA");

	return e != NULL && e[0] != '\0' && strcmp(e, "0") != 0;
}

/* Whether scenario @s runs on provider @prov: what libfabric 1.17 cannot
 * do there is no test there. */
static bool
runs_on(const struct scenario *s, const char *prov)
{
	if (strcmp(prov, "shm") != 0) {
		return s->skip_tcp == NULL;
	}
	return !(s->truncates && cma_off());
}

/* The checks of provider @prov: its scenarios, and /dev/shm after them. */
static int
checks_of(const char *prov)
{
	size_t count = sizeof(scenarios) / sizeof(scenarios[0]);
	int n = 1;

	for (size_t i = 0; i < count; i++) {
		n += runs_on(&scenarios[i], prov);
	}
	return n;
}

/* @only: the one scenario to run (its index), or -1 for all. */
static void
test_provider(const char *prov, int only)
{
	char prefix[96];
	struct ranks rs = {.provider = prov, .prefix = prefix, .spin_us = 20};
	size_t count = sizeof(scenarios) / sizeof(scenarios[0]);

	snprintf(prefix, sizeof(prefix), "%s-%d", prefix_base, job_seq++);
	rs.n = 1;
	if (!ranks_run(&rs, probe, NULL)) {
		skip(checks_of(prov), "provider not available here");
		return;
	}
	for (size_t i = 0; i < count; i++) {
		if (!runs_on(&scenarios[i], prov)) {
			continue;
		}
		if (only >= 0 && (size_t)only != i) {
			skip(1, "not asked for");
			continue;
		}
		snprintf(prefix, sizeof(prefix), "%s-%d", prefix_base, job_seq++);
		rs.n = scenarios[i].n;
		rs.oversubscribed = scenarios[i].oversubscribed;
		ok(ranks_run(&rs, scenarios[i].fn, NULL), "%s: %s", prov,
		   scenarios[i].name);
	}
	is_int(shm_entries(prefix_base, true), 0,
	       "after close, /dev/shm holds nothing of the job's");
}

static int
open_code(const struct wr_fab_cfg *cfg)
{
	struct wr_fab *f = NULL;
	int rc = wr_fab_open(cfg, &f);

	wr_fab_close(f);
	return rc;
}

/* Run last: the parent calls libfabric itself only after its forks. */
static void
test_cfg(void)
{
	struct wr_fab_cfg good = {.provider = "shm", .prefix = prefix_base, .size = 2};
	struct wr_fab_cfg c;

	is_int(wr_fab_open(NULL, &(struct wr_fab *){NULL}), -EINVAL, "cfg: NULL");
	c = good, c.provider = NULL;
	is_int(open_code(&c), -EINVAL, "cfg: no provider");
	c = good, c.rank = 2;
	is_int(open_code(&c), -EINVAL, "cfg: rank past size");
	c = good, c.rank = -1;
	is_int(open_code(&c), -EINVAL, "cfg: negative rank");
	c = good, c.size = (1 << 20) + 1;
	is_int(open_code(&c), -EINVAL, "cfg: size past 2^20");
	c = good, c.prefix = NULL;
	is_int(open_code(&c), -EINVAL, "cfg: shm without a prefix");
	c = good, c.prefix = "a/b";
	is_int(open_code(&c), -EINVAL, "cfg: a prefix with a slash");
	c = good, c.spin_us = -1;
	is_int(open_code(&c), -EINVAL, "cfg: negative spin");
	c = good, c.provider = "no-such-provider";
	is_int(open_code(&c), -ENOENT, "cfg: an unknown provider is -ENOENT");
	shm_entries(prefix_base, true);
}

/* Arguments, to debug one case: a provider, then a scenario's index. */
int
main(int argc, char **argv)
{
	size_t nprov = sizeof(providers) / sizeof(providers[0]);
	int only = argc > 2 ? atoi(argv[2]) : -1, checks = GENERIC;

	snprintf(prefix_base, sizeof(prefix_base), "wr-test%d", (int)getpid());
	/* A provider not asked for is left out, not skipped: under CI a
	 * skip is a failure. */
	for (size_t i = 0; i < nprov; i++) {
		if (argc <= 1 || strcmp(argv[1], providers[i]) == 0) {
			checks += checks_of(providers[i]);
		}
	}
	plan(checks);
	for (size_t i = 0; i < nprov; i++) {
		if (argc <= 1 || strcmp(argv[1], providers[i]) == 0) {
			test_provider(providers[i], only);
		}
	}
	test_cfg();
	return done_testing();
}
