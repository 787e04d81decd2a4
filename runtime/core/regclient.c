/* SPDX-License-Identifier: MIT */
#include "regclient.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "clock.h"
#include "frame.h"
#include "greet.h"
#include "regproto.h"
#include "spin.h"
#include "world_errors.h"

struct wr_regclient {
	int fd;
	json_int_t next_id;
	struct evbuffer *in;
	struct wr_frame_reader rd;
	int recv_ms; /* SO_RCVTIMEO as set now, 0 before it is set */
	struct wr_spin spin; /* how long to look before read() blocks */
	char error[256];
	int dead_rank;
};

/* Milliseconds left until @deadline (-1: none), at least 0. */
static int
left(int64_t deadline)
{
	int64_t l;

	if (deadline < 0) {
		return -1;
	}
	l = deadline - wr_clock_ms();
	return l < 0 ? 0 : l > 1000000000 ? 1000000000 : (int)l;
}

/* Wait for @events on @fd until @deadline: 0, -ETIMEDOUT or -errno. */
static int
wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = events };

	for (;;) {
		int n = poll(&p, 1, left(deadline));

		if (n > 0) {
			return 0;
		}
		if (n == 0) {
			return -ETIMEDOUT;
		}
		if (errno != EINTR) {
			return -errno;
		}
	}
}

static int
connect_to(const struct sockaddr *sa, socklen_t len, int64_t deadline)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int err = 0, one = 1;
	socklen_t elen = sizeof(err);

	if (fd < 0) {
		return -errno;
	}
	if (connect(fd, sa, len) < 0 && errno != EINPROGRESS) {
		err = errno;
	} else if (wait_fd(fd, POLLOUT, deadline) < 0) {
		err = ETIMEDOUT;
	} else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0) {
		err = errno;
	}
	if (err != 0) {
		close(fd);
		return -err;
	}
	if (sa->sa_family == AF_INET) {
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	return fd;
}

/* One endpoint: "unix:PATH" or "tcp:HOST:PORT". */
static int
connect_endpoint(const char *ep, size_t len, int64_t deadline)
{
	char buf[512];

	if (len >= sizeof(buf)) {
		return -EINVAL;
	}
	memcpy(buf, ep, len);
	buf[len] = '\0';
	if (strncmp(buf, "unix:", 5) == 0) {
		struct sockaddr_un sun = { .sun_family = AF_UNIX };

		if (strlen(buf + 5) >= sizeof(sun.sun_path)) {
			return -EINVAL;
		}
		strcpy(sun.sun_path, buf + 5);
		return connect_to((struct sockaddr *)&sun, sizeof(sun), deadline);
	}
	if (strncmp(buf, "tcp:", 4) == 0) {
		char *port = strrchr(buf + 4, ':');
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
		int fd;

		if (port == NULL) {
			return -EINVAL;
		}
		*port++ = '\0';
		if (getaddrinfo(buf + 4, port, &hints, &ai) != 0 || ai == NULL) {
			return -EINVAL;
		}
		fd = connect_to(ai->ai_addr, ai->ai_addrlen, deadline);
		freeaddrinfo(ai);
		return fd;
	}
	return -EINVAL;
}

static int
connect_any(const char *endpoints, int64_t deadline)
{
	int fd = -EINVAL;

	for (const char *p = endpoints; p != NULL && *p != '\0';) {
		const char *comma = strchrnul(p, ',');

		fd = connect_endpoint(p, (size_t)(comma - p), deadline);
		if (fd >= 0 || *comma == '\0') {
			break;
		}
		p = comma + 1;
	}
	if (fd == -EINVAL) {
		return -EINVAL;
	}
	return fd < 0 ? WORLD_EREGISTRY : fd;
}

int
wr_regclient_connect(const char *endpoints, int timeout_ms)
{
	return connect_any(endpoints, wr_clock_ms() + timeout_ms);
}

static int
send_all(int fd, struct evbuffer *out, int64_t deadline)
{
	while (evbuffer_get_length(out) > 0) {
		ssize_t n = wr_frame_send(out, fd);

		if (n == -EAGAIN || n == -EINTR) {
			int rc = wait_fd(fd, POLLOUT, deadline);

			if (rc < 0) {
				return rc;
			}
			continue;
		}
		if (n <= 0) {
			return WORLD_EREGISTRY;
		}
	}
	return 0;
}

/*
 * The fd blocks in read(2) (its sends do not: MSG_DONTWAIT), so a wait
 * that outlasts the spin (spin.h) blocks in the read itself, with no
 * poll(2) and no extra wake-up. SO_RCVTIMEO bounds
 * each read by at most a second; it is set again only when @deadline is
 * nearer than what it holds, or it holds much less than a second, so most
 * calls set nothing. Returns 0, or -ETIMEDOUT once @deadline has passed.
 */
static int
arm_recv(struct wr_regclient *c, int64_t deadline)
{
	int ms = left(deadline);
	struct timeval tv;

	if (ms == 0) {
		return -ETIMEDOUT;
	}
	ms = ms < 0 || ms > 1000 ? 1000 : ms;
	if (c->recv_ms != 0 && c->recv_ms <= ms && c->recv_ms >= ms / 2) {
		return 0;
	}
	tv = (struct timeval){ .tv_sec = ms / 1000, .tv_usec = ms % 1000 * 1000 };
	if (setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0) {
		return -errno;
	}
	c->recv_ms = ms;
	return 0;
}

/* The next frame, within @deadline. */
static int
recv_frame(struct wr_regclient *c, int64_t deadline, json_t **msg, void **blob,
	   size_t *len)
{
	for (;;) {
		int rc = wr_frame_read(&c->rd, c->in, msg, blob, len);
		int64_t start;
		bool spun;
		ssize_t n;

		if (rc != 0) {
			return rc < 0 ? rc : 0;
		}
		rc = arm_recv(c, deadline);
		if (rc < 0) {
			return rc;
		}
		spun = wr_spin_wait(&c->spin, wr_spin_readable, &c->fd, &start);
		n = wr_frame_recv(&c->rd, c->in, c->fd);
		if (!spun) {
			wr_spin_blocked(&c->spin, start);
		}
		if (n == -EAGAIN || n == -EINTR) {
			continue;
		}
		if (n <= 0) {
			return WORLD_EREGISTRY;
		}
	}
}

/* Turn an answer into 0 and its result, or its error's code. */
static int
answer(struct wr_regclient *c, json_t *msg, json_t **result)
{
	json_t *err = json_object_get(msg, "error");
	const char *text = NULL;
	int code = WORLD_EPROTO, rank = -1;

	if (err == NULL) {
		if (result != NULL) {
			*result = json_incref(json_object_get(msg, "result"));
		}
		return 0;
	}
	json_unpack(err, "{s?i, s?s, s?i}", "code", &code, "message", &text,
		    "rank", &rank);
	snprintf(c->error, sizeof(c->error), "%s", text != NULL ? text : "");
	c->dead_rank = rank;
	/* A code from the wire must stay a code: negative, never 0. */
	return code < 0 ? code : WORLD_EPROTO;
}

int
wr_regclient_call(struct wr_regclient *c, json_t *req_new, const void *req_blob,
		  size_t req_len, int timeout_ms, json_t **result, void **blob,
		  size_t *blob_len)
{
	int64_t deadline = timeout_ms < 0 ? -1 : wr_clock_ms() + timeout_ms;
	struct evbuffer *out = evbuffer_new();
	json_int_t id = ++c->next_id;
	void *b = NULL;
	size_t len = 0;
	json_t *msg = NULL;
	int rc = -ENOMEM;

	c->error[0] = '\0';
	c->dead_rank = -1;
	if (out == NULL || req_new == NULL ||
	    json_object_set_new(req_new, "id", json_integer(id)) < 0) {
		goto out;
	}
	rc = wr_frame_write(out, &c->rd.lim, req_new, req_blob, req_len);
	if (rc == 0) {
		rc = send_all(c->fd, out, deadline);
	}
	/* Answers come in order: skip none, but check that this is ours. */
	while (rc == 0) {
		rc = recv_frame(c, deadline, &msg, &b, &len);
		if (rc == 0 && json_integer_value(json_object_get(msg, "id")) == id) {
			break;
		}
		json_decref(msg);
		free(b);
		msg = NULL;
		b = NULL;
	}
	if (rc == 0) {
		rc = answer(c, msg, result);
	}
	if (rc == 0 && blob != NULL) {
		*blob = b;
		*blob_len = len;
		b = NULL;
	}
out:
	free(b);
	json_decref(msg);
	json_decref(req_new);
	evbuffer_free(out);
	return rc;
}

/* O_NONBLOCK off (@on) or on. 0 or -1 with errno. */
static int
set_blocking(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0) {
		return -1;
	}
	return fcntl(fd, F_SETFL, on ? fl & ~O_NONBLOCK : fl | O_NONBLOCK);
}

/*
 * The handshake (greet.h): the hello with our nonce, the server's
 * challenge and proof checked, then our proof.
 */
static int
prove(struct wr_regclient *c, const struct wr_regclient_cfg *cfg, int64_t deadline)
{
	struct wr_greet_client g = {
		.secret = cfg->secret, .server = cfg->server != NULL ? cfg->server : "registry",
		.rank = cfg->rank, .role = cfg->role,
	};
	json_t *hello = wr_greet_hello_new(&g, -1), *res = NULL, *proof = NULL;
	int rc = hello != NULL ? 0 : -ENOMEM;

	if (rc == 0) {
		rc = wr_regclient_call(c, hello, NULL, 0, left(deadline), &res, NULL, NULL);
	}
	if (rc == 0) {
		rc = wr_greet_prove(&g, res, -1, &proof);
		if (rc == WORLD_EPROTO) {
			snprintf(c->error, sizeof(c->error), "hello: the answer has no challenge");
		} else if (rc == WORLD_EAUTH) {
			snprintf(c->error, sizeof(c->error), "wrong job secret, or not the "
				 "job's %s: its proof does not match the secret", g.server);
		}
	}
	if (rc == 0) {
		rc = wr_regclient_call(c, proof, NULL, 0, left(deadline), NULL, NULL, NULL);
	}
	json_decref(res);
	return rc;
}

/*
 * Connect and say hello. A connection closed before its hello is answered
 * (WORLD_EREGISTRY) was most likely pushed out of a server's gate by a
 * flood of strangers (listen.h): the caller may try again.
 */
static int
greet(struct wr_regclient *c, const struct wr_regclient_cfg *cfg, int64_t deadline,
      bool *connected)
{
	if (c->fd >= 0) {
		close(c->fd);
		wr_frame_reader_finish(&c->rd);
		evbuffer_drain(c->in, evbuffer_get_length(c->in));
	}
	wr_frame_reader_init(&c->rd, cfg->limits);
	c->fd = connect_any(cfg->endpoints, deadline);
	*connected = c->fd >= 0;
	if (c->fd < 0 || set_blocking(c->fd, true) < 0) {
		return c->fd < 0 ? c->fd : -errno;
	}
	return prove(c, cfg, deadline);
}

static int
pause_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000 };

	return nanosleep(&ts, NULL) < 0 && errno != EINTR ? -1 : 0;
}

int
wr_regclient_open(const struct wr_regclient_cfg *cfg, struct wr_regclient **out)
{
	int64_t deadline = wr_clock_ms() + cfg->timeout_ms;
	struct wr_regclient *c = calloc(1, sizeof(*c));
	bool connected = false;
	int rc;

	*out = NULL;
	if (c == NULL) {
		return -ENOMEM;
	}
	c->fd = -1;
	c->in = evbuffer_new();
	if (c->in == NULL) {
		free(c);
		return -ENOMEM;
	}
	wr_spin_init(&c->spin, cfg->spin_us);
	c->dead_rank = -1;
	do {
		rc = greet(c, cfg, deadline, &connected);
	} while (rc == WORLD_EREGISTRY && connected && left(deadline) > 0 &&
		 pause_ms(10) == 0);
	if (rc < 0) {
		if (cfg->why != NULL && cfg->why_len > 0) {
			snprintf(cfg->why, cfg->why_len, "%s", c->error);
		}
		wr_regclient_close(c);
		return rc;
	}
	*out = c;
	return 0;
}

void
wr_regclient_close(struct wr_regclient *c)
{
	if (c == NULL) {
		return;
	}
	if (c->fd >= 0) {
		close(c->fd);
	}
	wr_frame_reader_finish(&c->rd);
	evbuffer_free(c->in);
	free(c);
}

const char *
wr_regclient_error(const struct wr_regclient *c)
{
	return c->error;
}

int
wr_regclient_dead_rank(const struct wr_regclient *c)
{
	return c->dead_rank;
}

int
wr_regclient_release(struct wr_regclient *c)
{
	int fd = c->fd;

	if (set_blocking(fd, false) < 0) {
		fd = -errno;
		wr_regclient_close(c);
		return fd;
	}

	c->fd = -1;
	wr_regclient_close(c);
	return fd;
}
