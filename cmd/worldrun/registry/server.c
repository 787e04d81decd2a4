/* SPDX-License-Identifier: MIT */
#include "server.h"

#include <errno.h>
#include <malloc.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>

#include "clock.h"
#include "conn.h"
#include "link.h"
#include "listen.h"
#include "regproto.h"
#include "srvint.h"
#include "world_errors.h"

/* Stop reading a client that does not read its answers. */
#define OUT_HIGH (16u << 20)
/* A connection whose waits held more than this gives memory back at its close. */
#define TRIM_AFTER (1u << 20)
/* Strangers (from other machines) that have not said hello: at most
 * this many at once (listen.h). */
#define STRANGERS_MAX 64
/*
 * The loop looks at the clock this often; a look that comes more than
 * one period late means worldrun did not run meanwhile (stopped, frozen
 * with its job, starved), and that time is no rank's silence.
 */
#define TICK 0.5

static void conn_close(struct wr_regconn *c);

/*
 * After a send: an answer the limits forbid (a JSON part over
 * WORLD_MSG_MAX, a value over WORLD_BLOB_MAX) becomes an error answer,
 * and the connection goes on; any other failure (out of memory) ends it.
 */
static void
sent(struct wr_regconn *c, json_int_t id, int rc)
{
	if (rc == WORLD_EFRAME) {
		wr_regconn_fail(c, id, -EMSGSIZE, -1, "the answer would be larger "
				"than a message may be (WORLD_MSG_MAX, WORLD_BLOB_MAX)");
	} else if (rc < 0) {
		wr_regconn_abort(c);
	}
}

/*
 * {"id": N, "result": {}} and its blob answer most requests, a get among
 * them, so that one shape is written out here rather than built as a
 * message: that saves the allocations of two objects and their members,
 * about 5% of the registry's throughput with 8 connections (one CPU).
 */
static void
reply_empty(struct wr_regconn *c, json_int_t id, const void *blob, size_t len,
	    const struct wr_frame_ref *ref)
{
	char text[96];
	int n = len > 0 ? snprintf(text, sizeof(text),
				   "{\"id\":%" JSON_INTEGER_FORMAT ",\"result\":{},\"blob\":%zu}",
				   id, len)
			: snprintf(text, sizeof(text),
				   "{\"id\":%" JSON_INTEGER_FORMAT ",\"result\":{}}", id);

	sent(c, id, wr_link_send_text(c->link, text, (size_t)n, blob, len, ref));
}

void
wr_regconn_reply(struct wr_regconn *c, json_int_t id, json_t *result_new,
		 const void *blob, size_t len)
{
	json_t *msg;

	if (result_new == NULL) {
		reply_empty(c, id, blob, len, NULL);
		return;
	}
	msg = json_pack("{s:I, s:o}", "id", id, "result", result_new);
	if (msg != NULL) {
		sent(c, id, wr_link_send(c->link, msg, blob, len));
	}
	json_decref(msg);
}

void
wr_regconn_reply_held(struct wr_regconn *c, json_int_t id, const void *blob,
		      size_t len, void *hold)
{
	struct wr_frame_ref ref = { .release = wr_reg_hold_release, .arg = hold };

	reply_empty(c, id, blob, len, &ref);
}

size_t
wr_regconn_blob_max(const struct wr_regconn *c)
{
	return c->s->cfg.limits.blob_max;
}

size_t
wr_regconn_msg_max(const struct wr_regconn *c)
{
	return c->s->cfg.limits.json_max;
}

void
wr_regconn_fail(struct wr_regconn *c, json_int_t id, int code, int dead_rank,
		const char *why)
{
	char text[128];
	json_t *err, *msg;

	if (code == WORLD_EPEERDEAD && why == NULL) {
		snprintf(text, sizeof(text), "rank %d is dead", dead_rank);
		why = text;
	}
	err = json_pack("{s:i, s:s, s:s}", "code", code, "name", world_err_name(code),
			"message", why != NULL ? why : world_strerror(code));
	if (err != NULL && dead_rank >= 0) {
		json_object_set_new(err, "rank", json_integer(dead_rank));
	}
	if (code == WORLD_EPEERDEAD && dead_rank >= 0 && c->role == WR_ROLE_RANK &&
	    c->rank >= 0 && c->s->cfg.peer_dead != NULL) {
		c->s->cfg.peer_dead(c->s->cfg.arg, c->rank, dead_rank);
	}
	msg = json_pack("{s:I, s:o}", "id", id, "error", err);
	if (msg == NULL || wr_link_send(c->link, msg, NULL, 0) < 0) {
		wr_regconn_abort(c);
	}
	json_decref(msg);
}

void
wr_regconn_abort(struct wr_regconn *c)
{
	wr_link_shutdown(c->link); /* close once the last answer is out */
}

void
wr_regconn_goodbye(struct wr_regconn *c)
{
	c->goodbye = true;
}

void
wr_regconn_failed(struct wr_regconn *c, int status, const char *why)
{
	const struct wr_regsrv_cfg *cfg = &c->s->cfg;

	c->goodbye = true;
	if (cfg->rank_failed != NULL) {
		cfg->rank_failed(cfg->arg, c->rank, status, why);
	} else {
		cfg->rank_lost(cfg->arg, c->rank, why);
	}
}

json_t *
wr_regconn_stats_new(struct wr_regconn *c)
{
	json_t *conns = json_array();

	for (struct wr_regconn *k = c->s->conns; conns != NULL && k != NULL; k = k->next) {
		json_array_append_new(conns, json_pack(
			"{s:i, s:s, s:I, s:b}", "rank", k->rank,
			"role", k->role == WR_ROLE_RANK ? "rank"
				: k->role == WR_ROLE_TOOL ? "tool"
				: k->role == WR_ROLE_OBSERVER ? "observer" : "none",
			"requests", (json_int_t)k->requests, "self", k == c));
	}
	return json_pack("{s:o, s:I}", "connections", conns, "pending",
			 (json_int_t)wr_reg_pending(c->s->cfg.reg));
}

/* Look at the lease again in @secs (0: never: no lease, or paused). */
static void
arm(struct wr_regconn *c, double secs)
{
	struct timeval tv = wr_clock_tv(secs);

	if (c->role == WR_ROLE_RANK && c->s->leases_paused) {
		secs = 0;
	}
	if (secs > 0) {
		evtimer_add(c->timer, &tv);
	} else {
		evtimer_del(c->timer);
	}
}

/*
 * If the loop has not looked at the clock for more than a tick, worldrun
 * was not running: the ranks' silence did not grow meanwhile.
 */
static void
check_stall(struct wr_regsrv *s)
{
	double now = wr_clock_mono(), gap = now - s->last_tick - TICK;

	if (gap > 0) {
		for (struct wr_regconn *c = s->conns; c != NULL; c = c->next) {
			c->heard += gap;
		}
	}
	s->last_tick = now;
}

static void
on_tick(evutil_socket_t fd, short what, void *arg)
{
	check_stall(arg);
}

/*
 * A rank's lease is due: it lapses if the rank has been silent that long,
 * not counting the time worldrun was not running. The timer may come
 * late or early (it is armed once, requests only note the time), and
 * after a stall it may come before the tick that would have seen it.
 */
static void
on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct wr_regconn *c = arg;
	int rank = c->rank;
	double due;

	check_stall(c->s);
	due = c->heard + c->s->cfg.lease_timeout - wr_clock_mono();
	if (due > 0) {
		arm(c, due);
		return;
	}
	c->s->rank_conn[rank] = NULL;
	c->goodbye = true; /* reported here, not again at close */
	c->s->cfg.rank_lost(c->s->cfg.arg, rank, "its lease lapsed");
	conn_close(c);
}

/* The role a hello names; WR_ROLE_NONE for none we know. */
static enum wr_regrole
role_of(const char *role)
{
	return strcmp(role, "rank") == 0 ? WR_ROLE_RANK
	       : strcmp(role, "tool") == 0 ? WR_ROLE_TOOL
	       : strcmp(role, "observer") == 0 ? WR_ROLE_OBSERVER : WR_ROLE_NONE;
}

/* Whom a hello may act for: an observer for no rank, the rest for one. */
static const char *
check_hello(void *arg, const char *role, long long rank)
{
	struct wr_regsrv *s = arg;

	if (role_of(role) == WR_ROLE_OBSERVER) {
		return rank != -1 ? "hello: an observer acts for no rank (rank -1)" : NULL;
	}
	return rank < 0 || rank >= s->size ? "hello: no such rank" : NULL;
}

/* It proved the secret: it acts for @rank in @role from now on. */
static int
admit(struct wr_regconn *c, json_int_t id, json_int_t rank, const char *role)
{
	struct wr_regsrv *s = c->s;
	enum wr_regrole as = role_of(role);

	if (as == WR_ROLE_RANK && s->rank_conn[rank] != NULL) {
		wr_regconn_fail(c, id, -EEXIST, -1, "this rank is connected already");
		return -1;
	}
	if (as != WR_ROLE_RANK && s->cfg.tools_max > 0 &&
	    s->ntools >= s->cfg.tools_max) {
		wr_regconn_fail(c, id, -EMFILE, -1, "the registry has as many tool "
				"connections as it takes (WORLD_CONN_MAX)");
		return -1;
	}
	c->rank = (int)rank;
	c->role = as;
	if (c->role == WR_ROLE_RANK) {
		s->rank_conn[rank] = c;
	} else {
		s->ntools++;
	}
	/* No longer a stranger: the job's limits from the next frame on. */
	wr_gate_leave(&s->gate, &c->gate);
	wr_link_set_limits(c->link, &s->cfg.limits);
	c->heard = wr_clock_mono();
	arm(c, c->role == WR_ROLE_RANK ? s->cfg.lease_timeout : 0);
	wr_regconn_reply(c, id, json_pack("{s:i, s:i, s:s}", "rank", c->rank, "size",
					  s->size, "jobid", s->cfg.jobid), NULL, 0);
	return 0;
}

/* A frame before the connection is admitted: the handshake (greet.h). */
static void
greet(struct wr_regconn *c, json_t *msg, json_int_t id)
{
	struct wr_greet_step st;

	wr_greet_take(&c->greet, msg, &st);
	if (st.code == 0 && !st.admitted) {
		wr_regconn_reply(c, id, st.answer_new, NULL, 0);
	} else if (st.code != 0) {
		wr_regconn_fail(c, id, st.code, -1, st.why);
	}
	if (st.code != 0 || (st.admitted && admit(c, id, st.rank, st.role) < 0)) {
		wr_regconn_abort(c);
	}
}

static void
handle(struct wr_regconn *c, json_t *msg, const void *blob, size_t len)
{
	const json_t *jid = json_object_get(msg, "id");
	const char *op = json_string_value(json_object_get(msg, "op"));
	json_int_t id = json_is_integer(jid) ? json_integer_value(jid) : -1;
	/* Handlers cut the blob into parts: never a NULL one, even empty. */
	struct wr_regreq rq = { .conn = c, .reg = c->s->cfg.reg, .id = id,
				.msg = msg, .blob = blob != NULL ? blob : "",
				.blob_len = len, .rank = c->rank, .role = c->role };

	c->requests++;
	if (op == NULL && c->role == WR_ROLE_RANK && id >= 0) {
		/* No request: the answer to one of ours (survey.c). */
		wr_regsurvey_answer(c->s, c->rank, msg);
		return;
	}
	if (op == NULL || id < 0) {
		wr_regconn_fail(c, id, WORLD_EPROTO, -1,
				"a request is {op: string, id: integer >= 0, ...}");
		wr_regconn_abort(c);
		return;
	}
	if (c->role == WR_ROLE_NONE) {
		greet(c, msg, id);
		return;
	}
	if (c->role == WR_ROLE_RANK) {
		c->heard = wr_clock_mono(); /* any request renews the lease */
	}
	wr_regops_dispatch(&rq, op);
}

static void
on_frame(struct wr_link *l, json_t *msg, void *blob, size_t len, void *arg)
{
	handle(arg, msg, blob, len);
	json_decref(msg);
	free(blob);
}

/* End of file, a broken socket, a bad frame, or the last answer is out. */
static void
on_lost(struct wr_link *l, int rc, void *arg)
{
	struct wr_regconn *c = arg;

	if (rc == WORLD_EFRAME || rc == WORLD_EPROTO || rc == -ENOMEM) {
		/* The stream cannot be resynchronised: answer, then close. */
		wr_regconn_fail(c, -1, rc, -1, c->role == WR_ROLE_NONE ? WR_HELLO_WHY : NULL);
		wr_regconn_abort(c);
		return;
	}
	conn_close(c);
}

static void
conn_close(struct wr_regconn *c)
{
	struct wr_regsrv *s = c->s;
	bool big = c->wait_bytes > TRIM_AFTER;

	wr_regconn_drop_waits(c);
	wr_regsurvey_forget(s, c);
	if (c->role == WR_ROLE_RANK && s->rank_conn[c->rank] == c) {
		s->rank_conn[c->rank] = NULL;
		wr_regsurvey_gone(s, c->rank);
		if (!c->goodbye) {
			s->cfg.rank_lost(s->cfg.arg, c->rank,
					 "it dropped its registry connection");
		}
	}
	s->ntools -= c->role == WR_ROLE_TOOL || c->role == WR_ROLE_OBSERVER;
	wr_gate_leave(&s->gate, &c->gate);
	if (c->prev != NULL) {
		c->prev->next = c->next;
	} else {
		s->conns = c->next;
	}
	if (c->next != NULL) {
		c->next->prev = c->prev;
	}
	wr_link_close(c->link);
	event_free(c->timer);
	free(c);
	/*
	 * Waits that held many keys leave the allocator with free pages it
	 * keeps for itself (6 MB after 16 MiB of waits): give them back.
	 */
	if (big) {
		malloc_trim(0);
	}
}

/* A stranger that was pushed out by newer ones, or did not say hello in time. */
static void
on_gate_drop(struct wr_gate_entry *e, void *arg)
{
	conn_close((struct wr_regconn *)(void *)((char *)e -
						 offsetof(struct wr_regconn, gate)));
}

static void
on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
	  int salen, void *arg)
{
	struct wr_regsrv *s = arg;
	struct wr_regconn *c = calloc(1, sizeof(*c));
	/* Until its hello, a connection may send one small frame, no blob. */
	struct wr_link_cfg lcfg = {
		.base = s->cfg.base, .limits = &wr_hello_limits, .out_high = OUT_HIGH,
		.frame = on_frame, .lost = on_lost, .arg = c,
	};

	wr_listen_tune(fd, sa);
	if (c == NULL) {
		close(fd);
		return;
	}
	c->s = s;
	c->rank = -1;
	wr_greet_init(&c->greet, &s->greet, wr_listen_is_local(sa));
	c->timer = evtimer_new(s->cfg.base, on_timer, c);
	if (c->timer == NULL || wr_link_open(&lcfg, fd, &c->link) < 0) {
		if (c->timer == NULL) {
			close(fd);
		} else {
			event_free(c->timer);
		}
		free(c);
		return;
	}
	c->next = s->conns;
	if (s->conns != NULL) {
		s->conns->prev = c;
	}
	s->conns = c;
	wr_gate_enter(&s->gate, &c->gate, s->listen.ours);
}

static void
on_full(void *arg, int err)
{
	struct wr_regsrv *s = arg;

	if (s->cfg.full != NULL) {
		s->cfg.full(s->cfg.arg, err);
	}
}

int
wr_regsrv_open(const struct wr_regsrv_cfg *cfg, struct wr_regsrv **out)
{
	static const char *const roles[] = { "rank", "tool", "observer", NULL };
	struct wr_regsrv *s = calloc(1, sizeof(*s));
	char path[512];
	int rc;

	*out = NULL;
	if (s == NULL) {
		return -ENOMEM;
	}
	s->cfg = *cfg;
	s->greet = (struct wr_greet_cfg){
		.secret = cfg->secret, .who = "registry", .roles = roles, .clear = true,
		.expected = "hello: expected {nonce or secret, rank, role: rank|tool|observer}",
		.check = check_hello, .arg = s,
	};
	ring_init(&s->surveys);
	s->size = wr_reg_size(cfg->reg);
	s->rank_conn = calloc((size_t)s->size, sizeof(*s->rank_conn));
	rc = cfg->dir != NULL &&
	     snprintf(path, sizeof(path), "%s/registry", cfg->dir) >= (int)sizeof(path)
		? -ENAMETOOLONG : 0;
	if (rc == 0 && s->rank_conn == NULL) {
		rc = -ENOMEM;
	}
	if (rc == 0) {
		struct wr_listen_cfg lc = { .base = cfg->base,
					    .path = cfg->dir != NULL ? path : NULL,
					    .tcp_addr = cfg->tcp_addr, .tcp_port = cfg->tcp_port,
					    .any_tcp = cfg->far, .accept = on_accept,
					    .full = on_full, .arg = s };

		rc = wr_listen_open(&s->listen, &lc);
	}
	if (rc == 0) {
		rc = wr_gate_init(&s->gate, &s->listen, STRANGERS_MAX, cfg->hello_timeout,
				  on_gate_drop, s);
	}
	if (rc == 0) {
		struct timeval tv = wr_clock_tv(TICK);

		s->last_tick = wr_clock_mono();
		s->tick = event_new(cfg->base, -1, EV_PERSIST, on_tick, s);
		rc = s->tick == NULL || event_add(s->tick, &tv) < 0 ? -ENOMEM : 0;
	}
	if (rc < 0) {
		wr_regsrv_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

void
wr_regsrv_close(struct wr_regsrv *s)
{
	if (s == NULL) {
		return;
	}
	wr_regsurvey_close_all(s);
	while (s->conns != NULL) {
		s->conns->goodbye = true; /* closed by us: no rank is lost */
		conn_close(s->conns);
	}
	wr_listen_close(&s->listen);
	wr_gate_finish(&s->gate);
	if (s->tick != NULL) {
		event_free(s->tick);
	}
	free(s->rank_conn);
	free(s);
}

void
wr_regsrv_pause_leases(struct wr_regsrv *s, bool paused)
{
	s->leases_paused = paused;
	for (struct wr_regconn *c = s->conns; c != NULL; c = c->next) {
		if (c->role == WR_ROLE_RANK) {
			c->heard = wr_clock_mono();
			arm(c, s->cfg.lease_timeout);
		}
	}
}

const char *
wr_regsrv_socket(const struct wr_regsrv *s)
{
	return s->listen.path;
}

const char *
wr_regsrv_endpoints(const struct wr_regsrv *s)
{
	return s->listen.endpoints;
}

int
wr_regsrv_far_port(const struct wr_regsrv *s)
{
	return s->listen.any_port;
}
