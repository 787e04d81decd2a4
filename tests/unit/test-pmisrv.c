/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for pmisrv, driven through a rank's end of its socket pair
 * with no registry behind it: the local answers, the registry's requests
 * refused in words, and bad input of every kind (garbage, a truncated
 * line, an overlong one, requests out of order, unknown commands, a
 * multi-line request) answered or closed, never a crash; abort and a
 * departure without finalize reach their callbacks, and a rank that
 * never spoke PMI leaves nothing. A rank that sends without reading its
 * answers stops being read, and loses nothing once it reads; so does one
 * whose requests wait for a registry that does not answer, whose last
 * line still counts when its rank is reaped. On a port,
 * the 65th connection that has not said who it is is closed at once.
 */
#include "pmisrv.h"
#include "pmiwire.h"
#include "tap.h"

#include <fcntl.h>
#include <linux/sockios.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <netinet/in.h>

struct seen {
	int aborted, code, left;
	char why[128];
};

static void
on_abort(void *arg, int rank, int code, const char *msg)
{
	struct seen *s = arg;

	s->aborted = rank + 1;
	s->code = code;
}

static void
on_left(void *arg, int rank, const char *why)
{
	struct seen *s = arg;

	s->left = rank + 1;
	snprintf(s->why, sizeof(s->why), "%s", why);
}

/* Turn the loop until @fd has something (or its end), 2 s at most:
 * whether it has. */
static bool
pump(struct event_base *base, int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	for (int i = 0; i < 200; i++) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		if (poll(&p, 1, 10) > 0) {
			return true;
		}
	}
	return false;
}

/* Send @line and read one answer line into @out ("EOF" when closed). */
static const char *
ask(struct event_base *base, int fd, const char *line, char out[256])
{
	size_t n = 0;

	/* "": only read the next answer (the connection may be closed). */
	if (line[0] != '\0' && write(fd, line, strlen(line)) < 0) {
		strcpy(out, "EOF");
		return out;
	}
	while (n < 255) {
		ssize_t r;

		if (!pump(base, fd)) {
			strcpy(out, "TIMEOUT");
			return out;
		}
		r = read(fd, out + n, 1);
		if (r <= 0) {
			strcpy(out, n == 0 ? "EOF" : "partial");
			return out;
		}
		if (out[n] == '\n') {
			break;
		}
		n++;
	}
	out[n] = '\0';
	return out;
}

#define MAXES_Q "cmd=get_maxes\n"
#define MAXES_A "cmd=maxes rc=0 kvsname_max=256 keylen_max=64 vallen_max=1024\n"

/* Write as much of an endless run of @MAXES_Q as @fd takes now, from
 * byte *@sent of that run on. */
static void
flood(int fd, size_t *sent)
{
	static char run[4096 / 14 * 14];
	size_t q = strlen(MAXES_Q);
	ssize_t n;

	if (run[0] == '\0') {
		for (size_t i = 0; i + q <= sizeof(run); i += q) {
			memcpy(run + i, MAXES_Q, q);
		}
	}
	while ((n = write(fd, run + *sent % sizeof(run),
			  sizeof(run) - *sent % sizeof(run))) > 0) {
		*sent += (size_t)n;
	}
}

/* Read what @fd has now: the answers' bytes, checked against @MAXES_A. */
static bool
drain_answers(int fd, size_t *got)
{
	char buf[4096];
	size_t a = strlen(MAXES_A);
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++, (*got)++) {
			if (buf[i] != MAXES_A[*got % a]) {
				return false;
			}
		}
	}
	return true;
}

/* A client that never reads: how much it could write before the server
 * stopped reading it (bounded by @limit); then, reading, whether every
 * line was answered, in order. */
static void
unread_answers(struct event_base *base, int fd)
{
	size_t sent = 0, got = 0, before, q = strlen(MAXES_Q), limit = 64u << 20;
	bool same = true;
	int still = 0;

	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	while (sent < limit && still < 100) {
		before = sent;
		event_base_loop(base, EVLOOP_NONBLOCK);
		flood(fd, &sent);
		still = sent == before ? still + 1 : 0;
	}
	ok(sent < (4u << 20), "a rank that does not read its answers is no longer read "
	   "(it could send %zu bytes)", sent);
	/* Its last line whole, then everything read back. */
	while (sent % q != 0 && still < 1000) {
		ssize_t n = write(fd, &MAXES_Q[sent % q], q - sent % q);

		sent += n > 0 ? (size_t)n : 0;
		event_base_loop(base, EVLOOP_NONBLOCK);
		same = same && drain_answers(fd, &got);
		still++;
	}
	while (same && got < sent / q * strlen(MAXES_A) && pump(base, fd)) {
		same = drain_answers(fd, &got);
	}
	ok(same && got == sent / q * strlen(MAXES_A),
	   "once it reads, each of its %zu requests is answered, in order", sent / q);
}

static int client(struct wr_pmisrv *s, int rank);

/* A registry that takes connections and never answers: requests wait
 * for the proof forever. 500 puts are sent at once; the server reads
 * its first 16 requests (and a line or two ahead), the rest stay in the
 * socket. */
static void
silent_registry(struct event_base *base, struct wr_pmisrv_cfg cfg)
{
	static char puts[500 * 96];
	char dir[] = "/tmp/test-pmisrv.XXXXXX", ep[128];
	size_t len = 0;
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct seen *seen = cfg.arg;
	struct wr_pmisrv *s = NULL;
	int l = -1, fd = -1, left = -1;

	if (mkdtemp(dir) != NULL) {
		snprintf(a.sun_path, sizeof(a.sun_path), "%s/sock", dir);
		snprintf(ep, sizeof(ep), "unix:%s", a.sun_path);
		l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	}
	cfg.registry = ep;
	cfg.secret = "0123456789abcdef0123456789abcdef";
	if (l >= 0 && bind(l, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(l, 4) == 0 &&
	    wr_pmisrv_open(&cfg, &s) == 0) {
		fd = client(s, 0);
	}
	/* One write: a socket pair counts its buffer in messages' memory. */
	for (int i = 0; fd >= 0 && i < 500; i++) {
		len += (size_t)snprintf(puts + len, sizeof(puts) - len,
					"cmd=put kvsname=kvs_0123456789ab key=k%d value=%040d\n", i, i);
	}
	if (fd >= 0 && write(fd, puts, len) != (ssize_t)len) {
		close(fd);
		fd = -1;
	}
	for (int i = 0; fd >= 0 && i < 50; i++) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		poll(NULL, 0, 2);
	}
	if (fd >= 0) {
		ioctl(fd, SIOCOUTQ, &left);
	}
	ok(left > 16384, "a rank whose requests wait for the registry is read no further "
	   "(%d bytes of its 500 puts wait in its socket)", left);
	/* It finalizes and is reaped, still stalled: its last line counts. */
	seen->left = 0;
	if (fd >= 0 && write(fd, "cmd=finalize\n", 13) == 13) {
		wr_pmisrv_reaped(s, 0);
	}
	ok(fd >= 0 && seen->left == 0,
	   "its finalize, behind them, still counts when its rank is reaped stalled");
	if (fd >= 0) {
		close(fd);
	}
	wr_pmisrv_close(s);
	if (l >= 0) {
		close(l);
		unlink(a.sun_path);
	}
	rmdir(dir);
}

/* 65 connections to the port that say nothing: the last is closed at
 * once, the first is still served. */
static void
strangers(struct event_base *base, struct wr_pmisrv_cfg cfg)
{
	static const int ranks[4] = { 0, 1, 2, 3 };
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct pollfd p = { .events = POLLIN };
	struct wr_pmisrv *s = NULL;
	int fds[65], n = 0;
	char out[256], c = 0;

	cfg.port = true;
	cfg.ranks = ranks;
	if (wr_pmisrv_open(&cfg, &s) == 0) {
		a.sin_port = htons((uint16_t)wr_pmisrv_port(s));
	}
	for (; s != NULL && n < 65; n++) {
		fds[n] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fds[n] >= 0 && connect(fds[n], (struct sockaddr *)&a, sizeof(a)) < 0) {
			close(fds[n]);
			fds[n] = -1;
		}
		if (fds[n] < 0) {
			break;
		}
		/* Accepted before the next one comes. */
		for (int i = 0; i < 5; i++) {
			event_base_loop(base, EVLOOP_NONBLOCK);
			poll(NULL, 0, 1);
		}
	}
	p.fd = n == 65 ? fds[64] : -1;
	ok(n == 65 && poll(&p, 1, 2000) == 1 && read(fds[64], &c, 1) == 0,
	   "the 65th connection that has not said who it is is closed at once");
	is_str(n == 65 ? ask(base, fds[0], "cmd=initack pmiid=1\n", out) : "none",
	       "cmd=initack", "while the first 64 wait, and are served");
	while (n > 0) {
		close(fds[--n]);
	}
	wr_pmisrv_close(s);
}

static int
client(struct wr_pmisrv *s, int rank)
{
	int fds[2];

	if (wr_pmisrv_pair(fds) < 0 || wr_pmisrv_attach(s, rank, fds[0]) < 0) {
		return -1;
	}
	return fds[1];
}

/* The code that @line, from a new connection of rank 0, aborts with. */
static int
abort_code(struct event_base *base, struct wr_pmisrv *s, struct seen *seen,
	   const char *line, char *out)
{
	int fd = client(s, 0);

	seen->aborted = 0;
	seen->code = -999;
	ask(base, fd, line, out);
	close(fd);
	return seen->aborted == 1 ? seen->code : -998;
}

int
main(void)
{
	struct event_base *base = event_base_new();
	struct seen seen = { 0 };
	struct wr_pmisrv_cfg cfg = {
		.base = base, .jobid = "0123456789ab", .size = 4, .nlocal = 4,
		.mapping = "(vector,(0,1,4))", .abort = on_abort, .left = on_left, .arg = &seen,
	};
	struct wr_pmisrv *s;
	char out[256], big[WR_PMI_LINE_MAX + 64];
	int a, b, c, d;

	/* As worldrun and its agents: a write to a closed socket is EPIPE. */
	signal(SIGPIPE, SIG_IGN);
	plan(29);
	if (base == NULL || wr_pmisrv_open(&cfg, &s) < 0) {
		skip_all("no event base or server");
	}
	a = client(s, 0);
	b = client(s, 1);
	c = client(s, 2);
	d = client(s, 3);
	ok(a >= 0 && b >= 0 && c >= 0 && d >= 0, "four ranks get their ends");
	is_str(ask(base, a, "cmd=get kvsname=kvs_0123456789ab key=PMI_process_mapping\n", out),
	       "cmd=get_result rc=0 msg=success value=(vector,(0,1,4)) found=TRUE",
	       "a get before init is answered (the map is local)");
	is_str(ask(base, a, "cmd=init pmi_version=1 pmi_subversion=1\n", out),
	       "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0", "init");
	is_str(ask(base, a, "cmd=get_universe_size\n", out), "cmd=universe_size rc=0 size=4",
	       "the universe is the job");
	is_str(ask(base, a, "cmd=get_my_kvsname\n", out),
	       "cmd=my_kvsname rc=0 kvsname=kvs_0123456789ab", "the kvsname names the job");
	is_str(ask(base, a, "cmd=put kvsname=kvs_0123456789ab key=k value=v\n", out),
	       "cmd=put_result rc=-1 msg=the_job's_registry_cannot_be_reached",
	       "without a registry a put is refused in words");
	is_str(ask(base, a, "cmd=put kvsname=kvs_0123456789ab key=k\n", out),
	       "cmd=put_result rc=-1 msg=kvsname,_key_and_value_are_needed",
	       "a put without its value is refused");
	is_str(ask(base, a, "cmd=barrier_in\n", out),
	       "cmd=barrier_out rc=-1 msg=the_job's_registry_cannot_be_reached",
	       "so is a barrier");
	is_str(ask(base, a, "cmd=bogus x=1\n", out), "cmd=bogus_result rc=-1 msg=not_supported_by_worldrun",
	       "an unknown command gets an answer");
	is_str(ask(base, a, "mcmd=spawn\nnprocs=1\nendcmd\n", out),
	       "cmd=spawn_result rc=-1 errmsg=spawn_is_not_supported_by_worldrun",
	       "a multi-line spawn is read to its end and refused");
	is_str(ask(base, a, "cmd=finalize\n", out), "cmd=finalize_ack rc=0", "finalize");
	close(a);
	pump(base, b);
	is_int(seen.left, 0, "a rank that finalized leaves nothing when it closes");

	is_str(ask(base, b, "cmd=init\n\001garbage\n", out), "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0",
	       "init, then garbage");
	is_str(ask(base, b, "", out), "cmd=error rc=-1 msg=not_a_PMI-1_request",
	       "garbage gets an error answer");
	ok(seen.left == 2 && strcmp(seen.why, "a line that is not a PMI-1 request") == 0,
	   "and its rank has left, with why");

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	seen.left = 0;
	is_str(ask(base, c, big, out), "EOF", "an overlong line closes the connection");
	is_int(seen.left, 3, "and that rank has left");

	seen.left = 0;
	ask(base, d, "cmd=abort exitcode=17 message=bye\n", out);
	ok(seen.aborted == 4 && seen.code == 17, "abort reaches the agent with its code");
	if (write(d, "cmd=init", 8) < 0) {
		/* A truncated line: its end never comes. */
	}
	close(d);
	pump(base, b);
	wr_pmisrv_reaped(s, 3);
	is_int(seen.left, 0, "a truncated line, then the end, after abort: no departure");

	a = client(s, 0);
	unread_answers(base, a);
	close(a);
	is_int(abort_code(base, s, &seen, "cmd=abort exitcode=256\n", out), 256,
	       "abort with 256: the code as given (the agent turns it into status 1)");
	is_int(abort_code(base, s, &seen, "cmd=abort exitcode=x7 message=m\n", out), 1,
	       "abort with a code that is not a number: 1");
	is_int(abort_code(base, s, &seen, "cmd=abort exitcode=4294967296\n", out), 1,
	       "abort with a code past an int: 1");
	is_int(abort_code(base, s, &seen, "cmd=abort exitcode=-3\n", out), -3,
	       "abort with -3: the code as given");
	silent_registry(base, cfg);
	strangers(base, cfg);
	wr_pmisrv_close(s);
	event_base_free(base);
	return 0;
}
