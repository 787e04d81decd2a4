/* SPDX-License-Identifier: MIT */
/*
 * regclient against a scripted server thread on a Unix socket: answers
 * at once, late (past the one-second steps of its blocking reads), in
 * pieces, never (a timeout shorter than a step, and one longer), and a
 * server that hangs up mid-wait, each with a client that never spins and
 * with one that looks before it blocks (spin.h); the socket it releases
 * is non-blocking. Connects and hellos that fail (no socket, nobody
 * listening, a refused or unanswered hello) leave no fd open.
 */
#include "regclient.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "spin.h"
#include "tap.h"
#include "world_errors.h"

/* What the server does with each request after the hello; REFUSE and
 * MUTE: with the hello itself (an error, no answer); PUSHED_OUT: the
 * first connection is closed at its hello, as a server's gate does when
 * a flood pushes it out, and the next is served as ANSWER. */
enum script { ANSWER, LATE, PIECES, SILENT, HANG_UP, REFUSE, MUTE, PUSHED_OUT };

struct server {
	int listen_fd;
	enum script script;
	pthread_t thread;
};

static void
sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000 };

	nanosleep(&ts, NULL);
}

/* The last hello's nonce, for the server's challenge. */
static char last_nonce[64];

/* The next request's id, or -1 once the client has gone. */
static json_int_t
next_request(int fd, struct wr_frame_reader *rd, struct evbuffer *in)
{
	json_t *msg;
	void *blob;
	size_t len;
	json_int_t id;

	while (wr_frame_read(rd, in, &msg, &blob, &len) != 1) {
		if (wr_frame_recv(rd, in, fd) <= 0) {
			return -1;
		}
	}
	id = json_integer_value(json_object_get(msg, "id"));
	if (json_string_value(json_object_get(msg, "nonce")) != NULL) {
		snprintf(last_nonce, sizeof(last_nonce), "%s",
			 json_string_value(json_object_get(msg, "nonce")));
	}
	json_decref(msg);
	free(blob);
	return id;
}

/* The registry's challenge to the last hello, as auth.h has it. */
static void
challenge(int fd, json_int_t id, struct wr_auth_pending *p)
{
	struct evbuffer *out = evbuffer_new();
	char ns[WR_AUTH_NONCE_LEN + 1], proof[WR_AUTH_PROOF_LEN + 1];
	json_t *msg = NULL;

	if (wr_auth_challenge(p, "s", last_nonce, 0, "tool", "registry", ns, proof) == 0) {
		msg = json_pack("{s:I, s:{s:s, s:s}}", "id", id, "result", "challenge",
				ns, "proof", proof);
	}
	wr_frame_write(out, NULL, msg, NULL, 0);
	while (evbuffer_get_length(out) > 0 && wr_frame_send(out, fd) > 0) {
	}
	json_decref(msg);
	evbuffer_free(out);
}

static void
answer(int fd, json_int_t id, bool in_pieces)
{
	struct evbuffer *out = evbuffer_new();
	json_t *msg = json_pack("{s:I, s:{}}", "id", id, "result");
	unsigned char byte;

	wr_frame_write(out, NULL, msg, "abc", 3);
	while (in_pieces && evbuffer_remove(out, &byte, 1) == 1) {
		send(fd, &byte, 1, MSG_NOSIGNAL);
		sleep_ms(2);
	}
	while (evbuffer_get_length(out) > 0 && wr_frame_send(out, fd) > 0) {
	}
	json_decref(msg);
	evbuffer_free(out);
}

/* The registry's answer to a hello with the wrong secret. */
static void
refuse(int fd, json_int_t id)
{
	struct evbuffer *out = evbuffer_new();
	json_t *msg = json_pack("{s:I, s:{s:i, s:s, s:s}}", "id", id, "error", "code",
				WORLD_EAUTH, "name", "WORLD_EAUTH", "message",
				"wrong job secret");

	wr_frame_write(out, NULL, msg, NULL, 0);
	while (evbuffer_get_length(out) > 0 && wr_frame_send(out, fd) > 0) {
	}
	json_decref(msg);
	evbuffer_free(out);
}

/* One connection: the hello is answered, then each request by the script. */
static void *
serve(void *arg)
{
	struct server *s = arg;
	struct wr_frame_reader rd;
	struct evbuffer *in = evbuffer_new();
	int fd = accept(s->listen_fd, NULL, NULL);

	/* A client that never goes (a leaked fd) ends the wait, not the test. */
	struct timeval bound = { .tv_sec = 10 };
	json_int_t id;
	bool hello = true;

	if (s->script == PUSHED_OUT && fd >= 0) {
		wr_frame_reader_init(&rd, NULL);
		next_request(fd, &rd, in);
		wr_frame_reader_finish(&rd);
		evbuffer_drain(in, evbuffer_get_length(in));
		close(fd);
		s->script = ANSWER;
		/* A client that does not come back ends the wait, not the test. */
		fd = poll(&(struct pollfd){ .fd = s->listen_fd, .events = POLLIN }, 1,
			  10000) == 1 ? accept(s->listen_fd, NULL, NULL) : -1;
	}
	wr_frame_reader_init(&rd, NULL);
	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof(bound));
	}
	while (fd >= 0 && (id = next_request(fd, &rd, in)) >= 0) {
		if (s->script == REFUSE || s->script == MUTE) {
			if (s->script == REFUSE) {
				refuse(fd, id);
			}
		} else if (hello) {
			struct wr_auth_pending p = { 0 };

			/* The challenge, then the client's proof, answered. */
			challenge(fd, id, &p);
			id = next_request(fd, &rd, in);
			if (id < 0) {
				break;
			}
			answer(fd, id, false);
		} else if (s->script == ANSWER) {
			answer(fd, id, false);
		} else if (s->script == LATE) {
			sleep_ms(1300);
			answer(fd, id, false);
		} else if (s->script == PIECES) {
			answer(fd, id, true);
		} else if (s->script == HANG_UP) {
			sleep_ms(200);
			break;
		}
		hello = false;
	}
	if (fd >= 0) {
		close(fd);
	}
	wr_frame_reader_finish(&rd);
	evbuffer_free(in);
	return NULL;
}

/* A client of a fresh server thread that follows @script. */
static struct wr_regclient *
client_for(struct server *s, enum script script, const char *endpoint, int spin_us)
{
	struct wr_regclient_cfg cfg = {
		.endpoints = endpoint, .secret = "s", .rank = 0, .role = "tool",
		.timeout_ms = 5000, .spin_us = spin_us,
	};
	struct wr_regclient *c = NULL;

	s->script = script;
	pthread_create(&s->thread, NULL, serve, s);
	if (wr_regclient_open(&cfg, &c) < 0) {
		return NULL;
	}
	return c;
}

static int
get(struct wr_regclient *c, int timeout_ms, size_t *len)
{
	void *blob = NULL;
	int rc = wr_regclient_call(c, json_pack("{s:s, s:s}", "op", "kv.get", "key", "k"),
				   NULL, 0, timeout_ms, NULL, &blob, len);

	free(blob);
	return rc;
}

static void
finish(struct server *s, struct wr_regclient *c)
{
	wr_regclient_close(c);
	pthread_join(s->thread, NULL);
}

/* Every script, with a client that spins for up to @spin_us. */
static void
cases(struct server *s, const char *endpoint, int spin_us)
{
	char who[64];
	struct wr_regclient *c;
	size_t len = 0;

	snprintf(who, sizeof(who), "regclient (spin %d us)", spin_us);
	c = client_for(s, ANSWER, endpoint, spin_us);
	ok(c != NULL, "%s: opens (hello answered)", who);
	ok(c != NULL && get(c, 1000, &len) == 0 && len == 3, "%s: an answer at once", who);
	ok(c != NULL && get(c, 300, &len) == 0, "%s: again, with a shorter timeout", who);
	ok(c != NULL && get(c, -1, &len) == 0, "%s: and with none", who);
	finish(s, c);

	c = client_for(s, LATE, endpoint, spin_us);
	ok(c != NULL && get(c, 5000, &len) == 0 && len == 3,
	   "%s: an answer after 1.3 s, past a one-second read step", who);
	finish(s, c);

	c = client_for(s, PIECES, endpoint, spin_us);
	ok(c != NULL && get(c, 5000, &len) == 0 && len == 3,
	   "%s: an answer that comes a byte at a time", who);
	finish(s, c);

	c = client_for(s, SILENT, endpoint, spin_us);
	ok(c != NULL && get(c, 300, &len) == -ETIMEDOUT,
	   "%s: no answer within 0.3 s is -ETIMEDOUT", who);
	ok(c != NULL && get(c, 1500, &len) == -ETIMEDOUT,
	   "%s: no answer within 1.5 s is -ETIMEDOUT", who);
	finish(s, c);

	c = client_for(s, PUSHED_OUT, endpoint, spin_us);
	ok(c != NULL && get(c, 1000, &len) == 0 && len == 3,
	   "%s: a connection closed at its hello is made again, and serves", who);
	finish(s, c);

	c = client_for(s, HANG_UP, endpoint, spin_us);
	ok(c != NULL && get(c, 5000, &len) == WORLD_EREGISTRY,
	   "%s: a server that hangs up mid-wait is WORLD_EREGISTRY", who);
	finish(s, c);
}

/* The fds this process has open, or -1. */
static int
open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (d == NULL) {
		return -1;
	}
	while (readdir(d) != NULL) {
		n++;
	}
	closedir(d);
	return n;
}

/*
 * Opening a client of @endpoints fails with @want (with a server thread
 * that follows @script, if @s), and no fd is left open once the server
 * has seen the client go. Where nothing answers (WORLD_EREGISTRY), a
 * bare connect, without hello, must fail likewise.
 */
static void
fails_clean(struct server *s, enum script script, const char *endpoints, int want,
	    const char *what)
{
	struct wr_regclient_cfg cfg = {
		.endpoints = endpoints, .secret = "s", .rank = 0, .role = "tool",
		.timeout_ms = 300,
	};
	struct wr_regclient *c = NULL;
	int before = open_fds(), rc, fd;

	if (s != NULL) {
		s->script = script;
		pthread_create(&s->thread, NULL, serve, s);
	}
	rc = wr_regclient_open(&cfg, &c);
	wr_regclient_close(c);
	if (s != NULL) {
		pthread_join(s->thread, NULL);
	}
	if (rc == WORLD_EREGISTRY) {
		fd = wr_regclient_connect(endpoints, 300);
		rc = fd < 0 ? fd : 0;
		if (fd >= 0) {
			close(fd);
		}
	}
	is_int(rc, want, what);
	ok(before >= 0 && open_fds() == before, "%s: no fd left open", what);
}

/* A socket file with nobody listening behind it, and a closed TCP port. */
static int
dead_ends(const char *dir, char *unix_ep, size_t unix_len, char *tcp_ep,
	  size_t tcp_len)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sin);
	int u = socket(AF_UNIX, SOCK_STREAM, 0), t = socket(AF_INET, SOCK_STREAM, 0);
	int rc = -1;

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/dead", dir);
	if (u >= 0 && t >= 0 && bind(u, (struct sockaddr *)&sun, sizeof(sun)) == 0 &&
	    bind(t, (struct sockaddr *)&sin, sizeof(sin)) == 0 &&
	    getsockname(t, (struct sockaddr *)&sin, &len) == 0) {
		snprintf(unix_ep, unix_len, "unix:%s", sun.sun_path);
		snprintf(tcp_ep, tcp_len, "tcp:127.0.0.1:%d", ntohs(sin.sin_port));
		rc = 0;
	}
	if (u >= 0) {
		close(u);
	}
	if (t >= 0) {
		close(t);
	}
	return rc;
}

static void
failed_connects(struct server *s, const char *dir, const char *endpoint)
{
	char none[128], dead[128], port[64], all[512];

	snprintf(none, sizeof(none), "unix:%s/none", dir);
	if (dead_ends(dir, dead, sizeof(dead), port, sizeof(port)) < 0) {
		skip(12, "no socket to leave unlistened");
		return;
	}
	snprintf(all, sizeof(all), "%s,%s,%s", none, dead, port);
	fails_clean(NULL, ANSWER, none, WORLD_EREGISTRY, "regclient: no socket file");
	fails_clean(NULL, ANSWER, dead, WORLD_EREGISTRY, "regclient: nobody listening");
	fails_clean(NULL, ANSWER, port, WORLD_EREGISTRY, "regclient: a closed TCP port");
	fails_clean(NULL, ANSWER, all, WORLD_EREGISTRY, "regclient: three endpoints, none up");
	fails_clean(s, REFUSE, endpoint, WORLD_EAUTH, "regclient: a refused hello");
	fails_clean(s, MUTE, endpoint, -ETIMEDOUT, "regclient: an unanswered hello");
}

int
main(void)
{
	char dir[] = "/tmp/test-regclient.XXXXXX", endpoint[128];
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct server s = { .listen_fd = socket(AF_UNIX, SOCK_STREAM, 0) };
	struct wr_regclient *c;
	size_t len = 0;
	int fd;

	plan(2 * 10 + 3 + 12);
	if (mkdtemp(dir) == NULL || s.listen_fd < 0) {
		skip_all("no temporary directory or socket");
	}
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/sock", dir);
	snprintf(endpoint, sizeof(endpoint), "unix:%s", sun.sun_path);
	if (bind(s.listen_fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
	    listen(s.listen_fd, 4) < 0) {
		skip_all("unable to listen on a Unix socket");
	}

	cases(&s, endpoint, 0);
	cases(&s, endpoint, WR_SPIN_US_DEFAULT);
	c = client_for(&s, ANSWER, endpoint, WR_SPIN_US_DEFAULT);
	ok(c != NULL && get(c, 1000, &len) == 0, "regclient: a call before release");
	fd = c != NULL ? wr_regclient_release(c) : -1;
	ok(fd >= 0 && (fcntl(fd, F_GETFL) & O_NONBLOCK) != 0,
	   "regclient: release gives back a non-blocking socket");
	ok(fd >= 0 && (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0, "regclient: close-on-exec");
	if (fd >= 0) {
		close(fd);
	}
	pthread_join(s.thread, NULL);
	failed_connects(&s, dir, endpoint);

	close(s.listen_fd);
	unlink(sun.sun_path);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/dead", dir);
	unlink(sun.sun_path);
	rmdir(dir);
	return done_testing();
}
