/* SPDX-License-Identifier: MIT */
/*
 * ranks.h: N forked processes, each with an endpoint, that know each
 * other's addresses, for the fabric tests and fabping; header only. The
 * parent hands the addresses around through socketpairs made before the
 * fork, so no launcher or registry is involved. A rank's function
 * returns 0 or a failure code, which becomes its exit status.
 */
#ifndef WR_TEST_RANKS_H
#define WR_TEST_RANKS_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fabric.h"
#include "now.h"

#define RANKS_MAX 8
/* A rank that is still running after this is killed by its alarm. */
#define RANKS_ALARM_S 120

struct ranks {
	const char *provider;
	const char *prefix;
	int n;
	bool oversubscribed;
	int spin_us;
};

typedef int ranks_fn(struct wr_fab *f, int rank, int n, void *arg);

/* A diagnostic line, written at once, so the ranks' lines do not mix. */
static void __attribute__((format(printf, 1, 2)))
diag(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (len < 0) {
		return;
	}
	if (len > (int)sizeof(line) - 2) {
		len = (int)sizeof(line) - 2;
	}
	line[len++] = '\n';
	if (write(STDOUT_FILENO, line, (size_t)len) < 0) {
		return;
	}
}

static bool
io_full(int fd, void *buf, size_t len, bool out)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = out ? send(fd, p, len, MSG_NOSIGNAL) : read(fd, p, len);

		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n <= 0) {
			return false;
		}
		p += n;
		len -= (size_t)n;
	}
	return true;
}

/* Strings on the socketpairs: a 2-byte length, then the bytes. */
static bool
put_str(int fd, const char *s)
{
	uint16_t len = (uint16_t)strlen(s);

	return io_full(fd, &len, sizeof(len), true) &&
	       io_full(fd, (void *)s, len, true);
}

static bool
get_str(int fd, char *buf, size_t size)
{
	uint16_t len;

	if (!io_full(fd, &len, sizeof(len), false) || len >= size) {
		return false;
	}
	buf[len] = '\0';
	return io_full(fd, buf, len, false);
}

static int
rank_main(const struct ranks *rs, int rank, int fd, ranks_fn *fn, void *arg)
{
	struct wr_fab_cfg cfg = {
		.provider = rs->provider, .prefix = rs->prefix, .rank = rank,
		.size = rs->n, .loopback = true,
		.oversubscribed = rs->oversubscribed, .spin_us = rs->spin_us,
	};
	struct wr_fab *f = NULL;
	char addr[1024], token = 0;
	int rc;

	alarm(RANKS_ALARM_S);
	rc = wr_fab_open(&cfg, &f);
	if (rc < 0) {
		diag("# rank %d: wr_fab_open(%s): %d", rank, rs->provider, rc);
		return 10;
	}
	if (!put_str(fd, wr_fab_addr(f))) {
		rc = 11;
	}
	for (int i = 0; rc == 0 && i < rs->n; i++) {
		if (!get_str(fd, addr, sizeof(addr)) ||
		    wr_fab_set_peer(f, i, addr) != 0) {
			rc = 12;
		}
	}
	if (rc == 0) {
		rc = fn(f, rank, rs->n, arg);
	}
	/* Close only once every rank is done: a provider may drop a message
	 * whose sender closes before it is matched (net does). */
	if (rc == 0 && (!io_full(fd, &token, 1, true) || !io_full(fd, &token, 1, false))) {
		rc = 13;
	}
	/* A rank that failed may have left requests posted in storage that
	 * is gone: it exits without closing (the parent cleans /dev/shm). */
	if (rc == 0) {
		wr_fab_close(f);
	}
	return rc;
}

/* Collect every rank's address, then give each rank all of them. */
static void
hand_addresses(const struct ranks *rs, const int *fds)
{
	static char addrs[RANKS_MAX][1024];

	for (int i = 0; i < rs->n; i++) {
		if (!get_str(fds[i], addrs[i], sizeof(addrs[i]))) {
			return; /* that rank failed: the others read EOF */
		}
	}
	for (int i = 0; i < rs->n; i++) {
		for (int j = 0; j < rs->n; j++) {
			put_str(fds[i], addrs[j]);
		}
	}
}

/* Wait for every rank's "done" (or its end), then let them all close. */
static void
release_all(const struct ranks *rs, const int *fds)
{
	char token;

	for (int i = 0; i < rs->n; i++) {
		io_full(fds[i], &token, 1, false);
	}
	for (int i = 0; i < rs->n; i++) {
		token = 0;
		io_full(fds[i], &token, 1, true);
	}
}

/* Run @fn on @rs->n forked ranks: true if every one exited 0. */
static bool
ranks_run(const struct ranks *rs, ranks_fn *fn, void *arg)
{
	int fds[RANKS_MAX], sv[2], status, failed = 0, started = 0;
	pid_t pids[RANKS_MAX];

	fflush(stdout);
	for (; started < rs->n; started++) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
			break;
		}
		pids[started] = fork();
		if (pids[started] == 0) {
			close(sv[0]);
			_exit(rank_main(rs, started, sv[1], fn, arg));
		}
		close(sv[1]);
		fds[started] = sv[0];
		if (pids[started] < 0) {
			close(sv[0]);
			break;
		}
	}
	if (started == rs->n) {
		hand_addresses(rs, fds);
		release_all(rs, fds);
	}
	for (int i = 0; i < started; i++) {
		close(fds[i]);
	}
	for (int i = 0; i < started; i++) {
		if (waitpid(pids[i], &status, 0) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0) {
			diag("# rank %d: status 0x%x", i, status);
			failed++;
		}
	}
	return failed == 0 && started == rs->n;
}

/*
 * wr_fab_isend(), posted again while the peer cannot take it yet
 * (-EAGAIN: an shm peer that has not read its queue yet), for at most
 * about 10 s: what a caller of the transport does.
 */
static inline int
send_retry(struct wr_fab *f, int peer, uint64_t tag, const void *buf, size_t len,
	   struct wr_fab_req *r)
{
	struct timespec ms = { 0, 1000000 };
	int rc = wr_fab_isend(f, peer, tag, buf, len, r);

	for (int i = 0; rc == -EAGAIN && i < 10000; i++) {
		nanosleep(&ms, NULL);
		wr_fab_progress(f);
		rc = wr_fab_isend(f, peer, tag, buf, len, r);
	}
	return rc;
}

#endif
