/* SPDX-License-Identifier: MIT */
#include "serve.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "frame.h"
#include "greet.h"
#include "handlers.h"
#include "link.h"
#include "listen.h"
#include "payload.h"
#include "peerproto.h"
#include "waits.h"
#include "workers.h"
#include "world_errors.h"

/* Stop reading a peer that does not read its answers. */
#define OUT_HIGH (64u << 20)
/*
 * The host program's file descriptors are not ours to spend: at most
 * this many connections wait for their hello, each for at most
 * HELLO_TIMEOUT seconds, and greeted ones are one per peer, give or take.
 */
#define STRANGERS_MAX 16
#define HELLO_TIMEOUT 5.0
#define GREETED_SPARE 64

/* A peer's connection to us. */
struct sconn {
	struct wr_serve *s;
	struct sconn *prev, *next;
	uint64_t serial; /* how answers from workers find it, if still here */
	struct wr_link *link;
	struct wr_gate_entry gate; /* until its hello */
	struct wr_greet greet; /* until it is admitted (greet.h) */
	bool greeted;
	int rank;        /* the peer's, once greeted */
	pid_t pid;       /* the peer's process over a Unix socket, else 0 */
};

/* A call on its way through a worker, then its answer on its way back. */
struct job {
	struct wr_serve *s;
	uint64_t serial;
	json_int_t id;
	bool keep; /* a remote call: keep the result, answer with its id */
	struct wr_handler *x;
	json_t *args;
	void *blob;
	size_t len;
	/* A blob to pull from the caller's process first (pieces there). */
	pid_t pid;
	struct iovec *pull;
	size_t npull;
	int pull_rc;     /* how the pull failed, else 0 */
	size_t pulling;  /* what it counts in its server's pulling */
	struct wr_answer answer;
	int from;        /* the caller, */
	char *group;     /* and what it called: in the same allocation */
	char *key;
};

struct wr_serve {
	struct wr_serve_cfg cfg;
	struct wr_greet_cfg greet; /* peers only, of this job's ranks */
	char who[WR_GREET_WHO_MAX]; /* what it proves it is */
	struct wr_listeners listen;
	struct wr_gate gate;
	int ngreeted;
	int refusing; /* atomic */
	size_t pulling; /* atomic: bytes that pulls hold, from take to free */
	/*
	 * Guards the connections, which workers answer on directly; their
	 * links' callbacks hold it too. wake_fd brings the loop to finish what
	 * a worker's send left (see wr_link_poke()).
	 */
	pthread_mutex_t mu;
	struct sconn *conns;
	uint64_t next_serial;
	int wake_fd;
	struct event *wake;
};

static void sconn_close(struct sconn *c);

static json_t *
error_new(int code, const char *message)
{
	return json_pack("{s:i, s:s, s:s}", "code", code, "name", world_err_name(code),
			 "message", message != NULL && message[0] != '\0'
					    ? message : world_strerror(code));
}

/* Send {id, error: @err_new}; steals @err_new. */
static void
send_error_new(struct sconn *c, json_int_t id, json_t *err_new)
{
	json_t *msg = err_new != NULL ? json_pack("{s:I, s:o}", "id", id, "error", err_new)
				      : NULL;

	if (msg != NULL) {
		wr_link_send(c->link, msg, NULL, 0);
	}
	json_decref(msg);
}

static void
send_error(struct sconn *c, json_int_t id, int code, int remote_code,
	   const char *message)
{
	json_t *err = error_new(code, message);

	if (err != NULL && remote_code != 0) {
		json_object_set_new(err, "remote_code", json_integer(remote_code));
	}
	send_error_new(c, id, err);
}

/* A blob this rank does not pull: the caller sends the bytes instead. */
static void
refuse_pull(struct sconn *c, json_int_t id, int code, const char *why)
{
	json_t *err = error_new(code, why);

	if (err != NULL) {
		json_object_set_new(err, "pull", json_true());
	}
	send_error_new(c, id, err);
}

/* Answer with {"value": @value} and a blob. Steals @value and @blob. */
static void
send_value(struct sconn *c, json_int_t id, json_t *value, void *blob, size_t len)
{
	json_t *msg = json_pack("{s:I, s:{s:o}}", "id", id, "result", "value",
				value != NULL ? value : json_null());

	if (msg != NULL) {
		wr_link_send_attach(c->link, msg, blob, len);
	} else {
		free(blob);
	}
	json_decref(msg);
}

/* Pulls of @len bytes end (or never start): their room is free again. */
static void
pulls_done(struct wr_serve *s, size_t len)
{
	__atomic_sub_fetch(&s->pulling, len, __ATOMIC_RELAXED);
}

static void
job_free(struct job *j)
{
	pulls_done(j->s, j->pulling);
	json_decref(j->args);
	free(j->pull);
	free(j->blob);
	wr_answer_finish(&j->answer);
	free(j);
}

static void deliver(struct wr_serve *s, struct job *j);

static struct sconn *find(struct wr_serve *s, uint64_t serial);

/*
 * On a worker: the blob from the caller's memory. It is what the caller
 * sent if the caller is still connected after the read: it frees its
 * pieces only once answered or hung up. False: the job ends here (the
 * caller is gone, or told to send the bytes).
 */
static bool
pull_blob(struct job *j)
{
	struct wr_serve *s = j->s;
	int rc = wr_payload_pull(j->pid, j->pull, j->npull, j->len, &j->blob);
	struct sconn *c;
	bool go;

	pthread_mutex_lock(&s->mu);
	c = find(s, j->serial);
	go = c != NULL && rc == 0 && !wr_payload_hung_up(wr_link_fd(c->link));
	if (c != NULL && rc < 0) {
		refuse_pull(c, j->id, rc, "unable to read the blob from the caller's memory");
	}
	pthread_mutex_unlock(&s->mu);
	return go;
}

/* On a worker: run the handler, then answer from this thread. */
static void
run_job(void *arg)
{
	struct job *j = arg;
	struct wr_serve *s = j->s;
	struct wr_wait rec = { .kind = WR_WAIT_HANDLER, .group = j->group,
			       .name = j->key, .peer = j->from };

	if (j->pull != NULL && !pull_blob(j)) {
		wr_handlers_put(s->cfg.handlers, j->x);
		j->x = NULL;
		job_free(j);
		return;
	}
	wr_waits_enter(s->cfg.waits, &rec);
	wr_handlers_run(j->x, j->args, j->blob, j->len, &j->blob, &j->answer);
	wr_waits_leave(s->cfg.waits, &rec);
	wr_handlers_put(s->cfg.handlers, j->x);
	j->x = NULL;
	/* Free the pulled blob's room before the caller hears the answer:
	 * its next pull may come at once (the blob itself goes just after). */
	pulls_done(s, j->pulling);
	j->pulling = 0;
	pthread_mutex_lock(&s->mu);
	deliver(s, j);
	pthread_mutex_unlock(&s->mu);
	job_free(j);
}

static struct sconn *
find(struct wr_serve *s, uint64_t serial)
{
	for (struct sconn *c = s->conns; c != NULL; c = c->next) {
		if (c->serial == serial) {
			return c;
		}
	}
	return NULL;
}

static void
deliver(struct wr_serve *s, struct job *j)
{
	struct sconn *c = find(s, j->serial);
	struct wr_answer *a = &j->answer;

	if (c == NULL) {
		return; /* the caller hung up; its remote result is not kept */
	}
	if (a->rc < 0) {
		send_error(c, j->id, WORLD_EREMOTE, a->rc, a->message);
	} else if (j->keep) {
		int64_t id = wr_handlers_keep(s->cfg.handlers, a->result, a->blob, a->len);

		a->result = NULL;
		a->blob = NULL;
		if (id < 0) {
			send_error(c, j->id, (int)id, 0, NULL);
		} else {
			send_value(c, j->id, json_pack("{s:I}", "rref", (json_int_t)id),
				   NULL, 0);
		}
	} else {
		send_value(c, j->id, a->result, a->blob, a->len);
		a->result = NULL;
		a->blob = NULL;
	}
}

/* A worker's send left work for the loop. */
static void
on_kick(evutil_socket_t fd, short what, void *arg)
{
	struct wr_serve *s = arg;
	uint64_t n;

	if (read(s->wake_fd, &n, sizeof(n)) < 0) {
		/* EAGAIN: nothing new. */
	}
	pthread_mutex_lock(&s->mu);
	for (struct sconn *c = s->conns, *next; c != NULL; c = next) {
		next = c->next; /* a poke that ends a shutdown closes c */
		wr_link_poke(c->link);
	}
	pthread_mutex_unlock(&s->mu);
}

static void
kick(void *arg)
{
	struct sconn *c = arg;
	uint64_t one = 1;

	if (write(c->s->wake_fd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the loop has a wake pending already. */
	}
}

/* It proved the secret: a peer acting as @rank from now on. */
static void
admit(struct sconn *c, json_int_t id, json_int_t rank)
{
	if (c->s->ngreeted >= c->s->cfg.size + GREETED_SPARE) {
		send_error(c, id, -EMFILE, 0, "this rank has as many peer "
			   "connections as it takes");
		wr_link_shutdown(c->link);
		return;
	}
	c->greeted = true;
	c->rank = (int)rank;
	c->s->ngreeted++;
	wr_gate_leave(&c->s->gate, &c->gate);
	wr_link_set_limits(c->link, &c->s->cfg.limits);
	send_value(c, id, NULL, NULL, 0);
}

static void
refuse(struct sconn *c, json_int_t id, int code, const char *why)
{
	send_error(c, id, code, 0, why);
	wr_link_shutdown(c->link);
}

/* Whom a peer's hello may act for: a rank of the job. */
static const char *
check_hello(void *arg, const char *role, long long rank)
{
	struct wr_serve *s = arg;

	return rank < 0 || rank >= s->cfg.size ? "hello: no such rank" : NULL;
}

/*
 * A frame before the connection is admitted: the handshake (greet.h),
 * whose proof names this rank, so that the caller knows it reached the
 * rank it meant; or the secret itself, only from this machine.
 */
static void
greet(struct sconn *c, json_t *msg, json_int_t id)
{
	struct wr_greet_step st;

	wr_greet_take(&c->greet, msg, &st);
	if (st.code != 0) {
		refuse(c, id, st.code, st.why);
	} else if (!st.admitted) {
		send_value(c, id, st.answer_new, NULL, 0);
	} else {
		admit(c, id, st.rank);
	}
}

/* A call to run on a worker, as call() read it. */
struct call_in {
	const char *kind, *group, *key;
	json_t *args;
	void *blob;          /* malloc'd, or NULL */
	size_t len;          /* the blob's, or the pulled one's */
	struct iovec *pull;  /* malloc'd, or NULL: pieces to pull */
	size_t npull;
};

/* A service, direct handler or remote call: on a worker. Takes @in's
 * blob and pull. */
static void
dispatch(struct sconn *c, json_int_t id, struct call_in *in)
{
	struct wr_serve *s = c->s;
	bool direct = strncmp(in->kind, WR_PEER_DIRECT, strlen(WR_PEER_DIRECT)) == 0;
	struct wr_handler *x = wr_handlers_get(s->cfg.handlers,
					       direct ? WR_H_DIRECT : WR_H_SERVICE,
					       direct ? NULL : in->group, in->key);
	size_t glen = strlen(in->group) + 1, klen = strlen(in->key) + 1;
	struct job *j = x != NULL ? calloc(1, sizeof(*j) + glen + klen) : NULL;

	if (j == NULL) {
		if (x != NULL) {
			wr_handlers_put(s->cfg.handlers, x);
		}
		send_error(c, id, x == NULL ? -ENOENT : -ENOMEM, 0,
			   x == NULL ? "no such service here" : NULL);
		free(in->blob);
		if (in->pull != NULL) {
			pulls_done(s, in->len);
		}
		free(in->pull);
		return;
	}
	*j = (struct job){ .s = s, .serial = c->serial, .id = id, .x = x,
			   .keep = strcmp(in->kind, WR_PEER_REMOTE) == 0 ||
				   strcmp(in->kind, WR_PEER_DIRECT_REMOTE) == 0,
			   .args = json_incref(in->args), .blob = in->blob,
			   .len = in->len, .pid = c->pid, .pull = in->pull,
			   .npull = in->npull, .pulling = in->pull != NULL ? in->len : 0,
			   .from = c->rank, .key = (char *)(j + 1) };
	memcpy(j->key, in->key, klen);
	if (!direct) {
		j->group = j->key + klen;
		memcpy(j->group, in->group, glen);
	}
	if (wr_workers_run(s->cfg.workers, run_job, j) < 0) {
		send_error(c, id, -ENOMEM, 0, NULL);
		wr_handlers_put(s->cfg.handlers, x);
		j->x = NULL;
		job_free(j);
	}
}

static void
answer_now(struct sconn *c, json_int_t id, const char *kind, const char *group,
	   const char *key, json_int_t rref)
{
	struct wr_handlers *h = c->s->cfg.handlers;
	json_t *value = NULL;
	void *blob = NULL;
	size_t len = 0;
	int rc;

	if (strcmp(kind, WR_PEER_VALUE) == 0) {
		rc = wr_handlers_value(h, group, key, &value, &blob, &len);
	} else if (strcmp(kind, WR_PEER_FETCH) == 0) {
		rc = wr_handlers_fetch(h, rref, &value, &blob, &len);
	} else {
		rc = wr_handlers_release(h, rref);
	}
	if (rc < 0) {
		send_error(c, id, rc, 0, NULL);
		free(blob);
	} else {
		send_value(c, id, value, blob, len);
	}
}

/*
 * A call's blob to pull (its "pull" field), checked into @in; false when
 * answered here: a bad descriptor, or one this rank does not pull (not
 * over a Unix socket, or WORLD_PULL=0), which the caller then sends
 * as bytes.
 */
static bool
take_pull(struct sconn *c, json_int_t id, const json_t *desc, struct call_in *in)
{
	int rc;

	if (in->len > 0) {
		send_error(c, id, WORLD_EPROTO, 0, "call: a pull and a blob");
		return false;
	}
	rc = wr_payload_pull_parse(desc, c->s->cfg.limits.blob_max, &in->pull,
				   &in->npull, &in->len);
	if (rc < 0) {
		send_error(c, id, rc == -EPROTO ? WORLD_EPROTO : rc, 0,
			   "call: a pull is [[address, length], ...] (1 to 1024 pieces)");
		return false;
	}
	if (c->pid <= 0 || c->s->cfg.no_pull) {
		free(in->pull);
		in->pull = NULL;
		refuse_pull(c, id, -EPERM, "this rank does not read callers' memory");
		return false;
	}
	/*
	 * A pull costs its caller a few words and this rank the whole blob:
	 * what all pulls hold at once is at most one largest blob
	 * (WORLD_BLOB_MAX). Past that the caller sends its bytes, which come
	 * under back-pressure, so no caller can make this rank allocate more
	 * for little.
	 */
	if (__atomic_add_fetch(&c->s->pulling, in->len, __ATOMIC_RELAXED) >
	    c->s->cfg.limits.blob_max) {
		pulls_done(c->s, in->len);
		free(in->pull);
		in->pull = NULL;
		refuse_pull(c, id, -EBUSY, "pulls hold as much of this rank's memory "
			    "as WORLD_BLOB_MAX already");
		return false;
	}
	return true;
}

static void
call(struct sconn *c, json_t *msg, json_int_t id, void *blob, size_t len)
{
	struct call_in in = { .group = "", .key = "", .blob = blob, .len = len };
	json_int_t rref = 0;
	json_t *pull = NULL;

	if (json_unpack(msg, "{s:s, s?s, s?s, s?o, s?I, s?o}", "kind", &in.kind,
			"group", &in.group, "key", &in.key, "args", &in.args, "rref",
			&rref, "pull", &pull) < 0) {
		send_error(c, id, WORLD_EPROTO, 0, "call: bad fields");
		wr_link_shutdown(c->link);
	} else if (__atomic_load_n(&c->s->refusing, __ATOMIC_RELAXED)) {
		send_error(c, id, -ESHUTDOWN, 0, "this rank is stopping");
	} else if (pull == NULL && (strcmp(in.kind, WR_PEER_VALUE) == 0 ||
				    strcmp(in.kind, WR_PEER_FETCH) == 0 ||
				    strcmp(in.kind, WR_PEER_RELEASE) == 0)) {
		answer_now(c, id, in.kind, in.group, in.key, rref);
	} else if (strcmp(in.kind, WR_PEER_SERVICE) == 0 || strcmp(in.kind, WR_PEER_DIRECT) == 0 ||
		   strcmp(in.kind, WR_PEER_REMOTE) == 0 ||
		   strcmp(in.kind, WR_PEER_DIRECT_REMOTE) == 0) {
		if (pull == NULL || take_pull(c, id, pull, &in)) {
			dispatch(c, id, &in);
			return;
		}
	} else {
		send_error(c, id, WORLD_EPROTO, 0, "call: unknown kind");
	}
	free(blob);
}

static void
handle(struct sconn *c, json_t *msg, void *blob, size_t len)
{
	const char *op = json_string_value(json_object_get(msg, "op"));
	json_t *jid = json_object_get(msg, "id");
	json_int_t id = json_is_integer(jid) ? json_integer_value(jid) : -1;

	if (op == NULL || id < 0) {
		send_error(c, id, WORLD_EPROTO, 0, "a request is {op, id, ...}");
		wr_link_shutdown(c->link);
		free(blob);
	} else if (!c->greeted) {
		greet(c, msg, id);
		free(blob);
	} else if (strcmp(op, WR_PEER_OP_CALL) == 0) {
		call(c, msg, id, blob, len);
	} else {
		send_error(c, id, WORLD_EPROTO, 0, "unknown op");
		free(blob);
	}
}

static void
on_frame(struct wr_link *l, json_t *msg, void *blob, size_t len, void *arg)
{
	handle(arg, msg, blob, len);
	json_decref(msg);
}

/* End of file, a broken socket, a bad frame, or the last answer is out. */
static void
on_lost(struct wr_link *l, int rc, void *arg)
{
	struct sconn *c = arg;

	if (rc == WORLD_EFRAME || rc == WORLD_EPROTO || rc == -ENOMEM) {
		/* The stream cannot be resynchronised: answer, then close. */
		send_error(c, -1, rc, 0, c->greeted ? NULL : WR_HELLO_WHY);
		wr_link_shutdown(l);
		return;
	}
	sconn_close(c);
}

static void
sconn_close(struct sconn *c)
{
	struct wr_serve *s = c->s;

	s->ngreeted -= c->greeted;
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
	free(c);
}

/* Pushed out by newer strangers, or no hello in time: on the loop, mu free. */
static void
on_gate_drop(struct wr_gate_entry *e, void *arg)
{
	struct wr_serve *s = arg;

	pthread_mutex_lock(&s->mu);
	sconn_close((struct sconn *)(void *)((char *)e - offsetof(struct sconn, gate)));
	pthread_mutex_unlock(&s->mu);
}

/* Who connected over a Unix socket (the kernel's word, not the peer's);
 * 0 over TCP. */
static pid_t
peer_pid(int fd, const struct sockaddr *sa)
{
	struct ucred cred = { 0 };
	socklen_t n = sizeof(cred);

	if (sa->sa_family != AF_UNIX ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &n) < 0) {
		return 0;
	}
	return cred.pid;
}

static void
on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
	  int salen, void *arg)
{
	struct wr_serve *s = arg;
	struct sconn *c = calloc(1, sizeof(*c));
	/* Until its hello, a connection may send one small frame, no blob. */
	struct wr_link_cfg lcfg = {
		.base = s->cfg.base, .limits = &wr_hello_limits, .out_high = OUT_HIGH,
		.frame = on_frame,
		.lost = on_lost, .arg = c, .mu = &s->mu, .kick = kick,
	};

	wr_listen_tune(fd, sa);
	if (c == NULL) {
		close(fd);
		return;
	}
	if (wr_link_open(&lcfg, fd, &c->link) < 0) {
		free(c);
		return;
	}
	c->s = s;
	wr_greet_init(&c->greet, &s->greet, wr_listen_is_local(sa));
	c->pid = peer_pid(fd, sa);
	pthread_mutex_lock(&s->mu);
	c->serial = ++s->next_serial;
	c->next = s->conns;
	if (s->conns != NULL) {
		s->conns->prev = c;
	}
	s->conns = c;
	pthread_mutex_unlock(&s->mu);
	wr_gate_enter(&s->gate, &c->gate, s->listen.ours);
}

/* Out of fds, the listeners pause; a library says nothing of it. */
static int
listen_all(struct wr_serve *s)
{
	struct wr_listen_cfg lc = { .base = s->cfg.base, .tcp_addr = s->cfg.tcp_addr,
				    .accept = on_accept, .arg = s };
	char path[512];
	int rc;

	if (s->cfg.dir != NULL) {
		snprintf(path, sizeof(path), "%s/rank.%d", s->cfg.dir, s->cfg.rank);
		lc.path = path;
	}
	rc = wr_listen_open(&s->listen, &lc);
	return rc < 0 ? rc : wr_gate_init(&s->gate, &s->listen, STRANGERS_MAX,
					  HELLO_TIMEOUT, on_gate_drop, s);
}

int
wr_serve_open(const struct wr_serve_cfg *cfg, struct wr_serve **out)
{
	static const char *const roles[] = { "peer", NULL };
	struct wr_serve *s = calloc(1, sizeof(*s));
	int rc;

	*out = NULL;
	if (s == NULL) {
		return -ENOMEM;
	}
	s->cfg = *cfg;
	wr_greet_rank_who(s->who, cfg->rank);
	s->greet = (struct wr_greet_cfg){
		.secret = cfg->secret, .who = s->who, .roles = roles, .clear = true,
		.expected = "hello: expected {nonce or secret, rank, role: peer}",
		.check = check_hello, .arg = s,
	};
	pthread_mutex_init(&s->mu, NULL);
	s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	s->wake = s->wake_fd < 0 ? NULL
		: event_new(cfg->base, s->wake_fd, EV_READ | EV_PERSIST, on_kick, s);
	rc = s->wake == NULL || event_add(s->wake, NULL) < 0 ? -ENOMEM
							       : listen_all(s);
	if (rc < 0) {
		wr_serve_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

void
wr_serve_refuse(struct wr_serve *s)
{
	__atomic_store_n(&s->refusing, 1, __ATOMIC_RELAXED);
}

void
wr_serve_close(struct wr_serve *s)
{
	if (s == NULL) {
		return;
	}
	while (s->conns != NULL) {
		sconn_close(s->conns);
	}
	wr_listen_close(&s->listen);
	wr_gate_finish(&s->gate);
	if (s->wake != NULL) {
		event_free(s->wake);
	}
	if (s->wake_fd >= 0) {
		close(s->wake_fd);
	}
	pthread_mutex_destroy(&s->mu);
	free(s);
}

const char *
wr_serve_endpoints(const struct wr_serve *s)
{
	return s->listen.endpoints;
}
