/* SPDX-License-Identifier: MIT */
#include "dialin.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "frame.h"
#include "greet.h"
#include "listen.h"
#include "wire.h"
#include "world_errors.h"

/* Strangers (from other machines) at once; a job's agent pushed out by
 * newer ones connects again (regclient). */
#define STRANGERS_MAX 64

struct conn {
	struct wr_dialin *d;
	struct conn *prev, *next;
	struct wr_gate_entry gate;
	struct event *ev;
	struct evbuffer *in;
	struct wr_frame_reader rd;
	struct wr_greet greet;
	bool proven; /* its next frame names its node */
	int fd;
	char addr[INET_ADDRSTRLEN];
};

struct wr_dialin {
	struct wr_dialin_cfg cfg;
	struct wr_greet_cfg greet;
	struct wr_listeners listen;
	struct wr_gate gate;
	struct conn *conns;
};

static void
conn_close(struct conn *c)
{
	wr_gate_leave(&c->d->gate, &c->gate);
	if (c->prev != NULL) {
		c->prev->next = c->next;
	} else {
		c->d->conns = c->next;
	}
	if (c->next != NULL) {
		c->next->prev = c->prev;
	}
	if (c->ev != NULL) {
		event_free(c->ev);
	}
	if (c->fd >= 0) {
		close(c->fd);
	}
	evbuffer_free(c->in);
	wr_frame_reader_finish(&c->rd);
	free(c);
}

/* An answer as regclient reads it; small enough for an empty socket
 * buffer, so a short write is a peer that does not read: 0 or -1. */
static int
answer(struct conn *c, json_int_t id, json_t *result_new, int code, const char *why)
{
	struct evbuffer *out = evbuffer_new();
	json_t *msg;
	int rc = -1;

	if (why != NULL) {
		json_decref(result_new);
		msg = json_pack("{s:I, s:{s:i, s:s, s:s}}", "id", id, "error", "code", code,
				"name", world_err_name(code), "message", why);
	} else {
		msg = json_pack("{s:I, s:o}", "id", id, "result", result_new);
	}
	if (out != NULL && msg != NULL && wr_frame_write(out, NULL, msg, NULL, 0) == 0) {
		size_t len = evbuffer_get_length(out);

		rc = wr_frame_send(out, c->fd) == (ssize_t)len ? 0 : -1;
	}
	json_decref(msg);
	evbuffer_free(out);
	return why != NULL ? -1 : rc;
}

/* The handshake (greet.h): its challenge, then its proof. */
static int
greet(struct conn *c, json_t *msg, json_int_t id)
{
	struct wr_greet_step st;

	wr_greet_take(&c->greet, msg, &st);
	if (st.code != 0) {
		return answer(c, id, NULL, st.code,
			      st.why != NULL ? st.why : world_strerror(st.code));
	}
	if (!st.admitted) {
		return answer(c, id, st.answer_new, 0, NULL);
	}
	/* Still in the gate: its time runs until it names its node. */
	c->proven = true;
	return answer(c, id, json_object(), 0, NULL);
}

/* The node's name, the last frame before the channel is the caller's. */
static int
on_name(struct conn *c, json_t *msg)
{
	struct wr_dialin_agent a = { .nodeid = -1 };
	struct wr_dialin *d = c->d;
	const char *op = NULL;
	json_int_t node = -1;
	int fd = c->fd;

	if (json_unpack(msg, "{s:s, s:s, s:I}", "op", &op, "name", &a.name, "node",
			&node) < 0 || strcmp(op, WR_WIRE_DIAL_OP) != 0 || node < 0 || node > 1 << 20 ||
	    evbuffer_get_length(c->in) > 0) {
		return -1;
	}
	a.nodeid = (int)node;
	memcpy(a.addr, c->addr, sizeof(a.addr));
	event_del(c->ev);
	c->fd = -1;
	d->cfg.agent(d->cfg.arg, &a, fd);
	return 0;
}

static void
on_readable(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	ssize_t n = wr_frame_recv(&c->rd, c->in, c->fd);
	int rc = n > 0 || n == -EAGAIN ? 0 : -1;

	while (rc == 0) {
		json_t *msg = NULL, *jid;
		void *blob = NULL;
		size_t len = 0;
		int got = wr_frame_read(&c->rd, c->in, &msg, &blob, &len);

		free(blob);
		if (got <= 0) {
			rc = got;
			break;
		}
		jid = json_object_get(msg, "id");
		if (c->proven) {
			rc = on_name(c, msg);
			json_decref(msg);
			/* Handed on, or to be dropped: nothing more is read here. */
			rc = rc == 0 ? 1 : -1;
			break;
		}
		rc = json_is_integer(jid) ? greet(c, msg, json_integer_value(jid)) : -1;
		json_decref(msg);
	}
	if (rc != 0) {
		conn_close(c);
	}
}

/* A stranger that was pushed out by newer ones, or did not prove in time. */
static void
on_gate_drop(struct wr_gate_entry *e, void *arg)
{
	conn_close((struct conn *)(void *)((char *)e - offsetof(struct conn, gate)));
}

static void
on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
	  int salen, void *arg)
{
	struct wr_dialin *d = arg;
	struct conn *c = calloc(1, sizeof(*c));

	wr_listen_tune(fd, sa);
	if (c == NULL || (c->in = evbuffer_new()) == NULL ||
	    (c->ev = event_new(d->cfg.base, fd, EV_READ | EV_PERSIST, on_readable, c)) == NULL ||
	    event_add(c->ev, NULL) < 0) {
		if (c != NULL) {
			evbuffer_free(c->in);
			if (c->ev != NULL) {
				event_free(c->ev);
			}
		}
		free(c);
		close(fd);
		return;
	}
	c->d = d;
	c->fd = fd;
	wr_greet_init(&c->greet, &d->greet, false);
	wr_frame_reader_init(&c->rd, &wr_hello_limits);
	if (sa->sa_family == AF_INET) {
		inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)sa)->sin_addr, c->addr,
			  sizeof(c->addr));
	}
	c->next = d->conns;
	if (d->conns != NULL) {
		d->conns->prev = c;
	}
	d->conns = c;
	wr_gate_enter(&d->gate, &c->gate, d->listen.ours);
}

int
wr_dialin_open(const struct wr_dialin_cfg *cfg, struct wr_dialin **out)
{
	static const char *const roles[] = { WR_WIRE_DIAL_ROLE, NULL };
	struct wr_dialin *d = calloc(1, sizeof(*d));
	struct wr_listen_cfg lc = { .base = cfg->base, .any_tcp = true, .accept = on_accept };
	int rc;

	*out = NULL;
	if (d == NULL) {
		return -ENOMEM;
	}
	d->cfg = *cfg;
	/* Agents only, proven: no secret in clear, no other client. */
	d->greet = (struct wr_greet_cfg){
		.secret = cfg->secret, .who = WR_WIRE_DIAL_WHO, .roles = roles,
		.expected = "this port takes agents only: {op: hello, nonce, rank: its "
			    "node, role: agent}",
		.strict = true,
	};
	lc.arg = d;
	rc = wr_listen_open(&d->listen, &lc);
	if (rc == 0) {
		rc = wr_gate_init(&d->gate, &d->listen, STRANGERS_MAX, cfg->timeout,
				  on_gate_drop, d);
	}
	if (rc < 0) {
		wr_dialin_close(d);
		return rc;
	}
	*out = d;
	return 0;
}

int
wr_dialin_port(const struct wr_dialin *d)
{
	return d->listen.any_port;
}

void
wr_dialin_close(struct wr_dialin *d)
{
	if (d == NULL) {
		return;
	}
	while (d->conns != NULL) {
		conn_close(d->conns);
	}
	wr_gate_finish(&d->gate);
	wr_listen_close(&d->listen);
	free(d);
}
