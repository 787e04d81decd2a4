/* SPDX-License-Identifier: MIT */
/*
 * The loop's part of the progress thread: its event_base, the links to
 * the registry and to peers, and routing queued calls onto them. The
 * registry link's own traffic (lease, deaths watch, the registry's
 * questions) is reglink.c; what user threads do to wait for answers is
 * progwait.c.
 */
#include "progress.h"
#include "progint.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "frame.h"
#include "link.h"
#include "regclient.h"
#include "regproto.h"
#include "serve.h"
#include "spin.h"
#include "world_errors.h"

static void
wake_callers(struct wr_prog *p)
{
	if (__atomic_load_n(&p->sleepers, __ATOMIC_ACQUIRE) > 0) {
		syscall(SYS_futex, &p->answers, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	}
}

/* Called with mu held: the answer is in; note it, or drop it. */
static bool
mark_done(struct wr_prog *p, struct wr_call *c)
{
	c->done = true;
	if (c->abandoned) {
		wr_call_free(c);
		return false;
	}
	__atomic_add_fetch(&p->answers, 1, __ATOMIC_RELEASE);
	return true;
}

/* Called with mu held: the answer is in; wake its caller or drop it. */
static void
finish(struct wr_prog *p, struct wr_call *c)
{
	if (mark_done(p, c)) {
		wake_callers(p);
	}
}

/*
 * The same on the loop thread, in a link's callback, which holds mu: the
 * callers are woken once the callback has let go of mu, by on_answered()
 * (woken at once, a caller would find mu taken and sleep again on it).
 */
static void
finish_later(struct wr_prog *p, struct wr_call *c)
{
	if (mark_done(p, c)) {
		event_active(p->answered_ev, 0, 0);
	}
}

/* After the callbacks of this turn, with mu free. */
static void
on_answered(evutil_socket_t fd, short what, void *arg)
{
	wake_callers(arg);
}

/* Called with mu held: every call in @list ends with @rc. */
static void
fail_list(struct wr_prog *p, struct wr_call *list, int rc, int dead_rank)
{
	while (list != NULL) {
		struct wr_call *c = list;

		list = c->next;
		c->res.rc = rc;
		c->res.dead_rank = dead_rank;
		if (rc == WORLD_EREGISTRY && p->gone != NULL) {
			snprintf(c->res.message, sizeof(c->res.message), "%s", p->gone);
		}
		finish(p, c);
	}
}

static void
fill(struct wr_result *r, json_t *msg, void *blob, size_t len)
{
	json_t *err = json_object_get(msg, "error");
	const char *text = NULL;

	r->dead_rank = -1;
	if (err == NULL) {
		r->rc = 0;
		r->result = json_incref(json_object_get(msg, "result"));
		r->blob = blob;
		r->len = len;
		return;
	}
	json_unpack(err, "{s?i, s?i, s?i, s?s}", "code", &r->rc, "rank",
		    &r->dead_rank, "remote_code", &r->remote_code, "message", &text);
	/* A code from the wire stays a code: negative, never 0. */
	r->rc = r->rc < 0 ? r->rc : WORLD_EPROTO;
	snprintf(r->message, sizeof(r->message), "%s", text != NULL ? text : "");
	free(blob);
}

static void send_call(struct wr_prog *p, struct link *l, struct wr_call *c);

static void
take_answer(struct link *l, json_t *msg, void *blob, size_t len)
{
	struct wr_prog *p = l->p;
	json_int_t id = json_integer_value(json_object_get(msg, "id"));
	struct wr_call **at, *c = NULL;

	for (at = &l->pending; *at != NULL; at = &(*at)->next) {
		if ((*at)->id == id) {
			c = *at;
			*at = c->next;
			break;
		}
	}
	if (c == NULL) {
		/* A lease's or a hello's answer: nobody waits for it. */
		free(blob);
		return;
	}
	if (c->pulled &&
	    json_is_true(json_object_get(json_object_get(msg, "error"), "pull"))) {
		/* The server may not read our memory (WORLD_PULL=0 there, or
		 * the system's ptrace rules): the bytes, then, from now on. */
		free(blob);
		l->pull = false;
		c->pulled = false;
		json_object_del(c->req, "pull");
		send_call(p, l, c);
		return;
	}
	fill(&c->res, msg, blob, len);
	finish_later(p, c);
}

/*
 * End @conn's connection now, for the peer to see: closing it may wait
 * until the link's callback returns, and a copy of the socket in a child
 * that forked without exec keeps it open for good. NULL: none.
 */
static void
hang_up(struct wr_link *conn)
{
	if (conn != NULL) {
		shutdown(wr_link_fd(conn), SHUT_RDWR);
	}
}

/* The link is gone: its calls fail, and a peer's link is forgotten. */
static void
link_lost(struct link *l)
{
	struct wr_prog *p = l->p;
	struct wr_call *pending;

	pending = l->pending;
	l->pending = NULL;
	/* Hung up before its calls are freed: a server pulling a blob from us
	 * sees it before it could read memory we took back. */
	hang_up(l->conn);
	wr_link_close(l->conn);
	l->conn = NULL;
	if (l->rank < 0) {
		p->broken = true;
		fail_list(p, pending, WORLD_EREGISTRY, -1);
	} else {
		/* Its owner may be alive and restarting; a later call reconnects. */
		fail_list(p, pending, WORLD_EPEERDEAD, l->rank);
		fail_list(p, l->held, WORLD_EPEERDEAD, l->rank);
		l->held = NULL;
	}
	if (l->rank >= 0) {
		p->peers[l->rank] = NULL;
		free(l);
	}
}

/* A link needs its loop: a send from a user thread left work for it. */
static void
kick(void *arg)
{
	struct link *l = arg;

	wr_prog_wake(l->p);
}

/*
 * The answer to a peer link's hello: the server's challenge and its proof
 * of being the rank we meant. Then our proof, then the calls that waited;
 * anything else and the link is lost, its calls failed.
 */
static void
take_challenge(struct link *l, json_t *msg)
{
	struct wr_prog *p = l->p;
	json_t *req = NULL;
	struct wr_call *held = l->held;

	/* Not the rank we meant (or not of this job): nothing goes to it. */
	if (json_integer_value(json_object_get(msg, "id")) != l->hello_id ||
	    wr_greet_prove(&l->greet, json_object_get(msg, "result"), ++p->next_id,
			   &req) != 0 ||
	    wr_link_send(l->conn, req, NULL, 0) < 0) {
		json_decref(req);
		link_lost(l);
		return;
	}
	json_decref(req);
	l->proving = false;
	l->held = NULL;
	while (held != NULL) {
		struct wr_call *c = held;

		held = c->next;
		send_call(p, l, c);
	}
}

static void
on_frame(struct wr_link *conn, json_t *msg, void *blob, size_t len, void *arg)
{
	struct link *l = arg;

	if (l->proving) {
		free(blob);
		take_challenge(l, msg);
		json_decref(msg);
		return;
	}
	if (l->rank < 0 && wr_prog_registry_frame(l->p, msg)) {
		free(blob);
	} else {
		take_answer(l, msg, blob, len);
	}
	json_decref(msg);
}

/* Anything but an answer, even a bad frame: nothing after it can be trusted. */
static void
on_lost(struct wr_link *conn, int rc, void *arg)
{
	link_lost(arg);
}

static int
link_start(struct wr_prog *p, struct link *l, int fd)
{
	struct wr_link_cfg cfg = {
		.base = p->base, .limits = &p->limits, .frame = on_frame,
		.lost = on_lost, .arg = l, .mu = &p->mu, .kick = kick,
	};

	l->p = p;
	return wr_link_open(&cfg, fd, &l->conn);
}

/* A Unix socket: the peer is on this host, where it can pull. */
static bool
on_this_host(int fd)
{
	struct sockaddr_storage ss;
	socklen_t n = sizeof(ss);

	return getsockname(fd, (struct sockaddr *)&ss, &n) == 0 && ss.ss_family == AF_UNIX;
}

/*
 * The link to rank @rank, connecting (briefly blocking: the peer is on
 * this machine or near) and saying hello first if there is none: with a
 * nonce, so that calls wait for the server's proof (take_challenge).
 * The answer to our proof matches no call and is dropped; a refusal
 * closes the link.
 */
static struct link *
peer_link(struct wr_prog *p, int rank, const char *endpoints)
{
	struct link *l = p->peers[rank];
	json_t *hello;
	int fd;

	if (l != NULL) {
		return l;
	}
	fd = wr_regclient_connect(endpoints, 5000);
	if (fd < 0) {
		return NULL;
	}
	l = calloc(1, sizeof(*l));
	if (l == NULL) {
		close(fd);
		return NULL;
	}
	l->rank = rank;
	l->pull = p->pull && on_this_host(fd);
	if (link_start(p, l, fd) < 0) {
		free(l);
		return NULL;
	}
	l->held_tail = &l->held;
	l->proving = true;
	l->hello_id = ++p->next_id;
	wr_greet_rank_who(l->who, rank);
	l->greet = (struct wr_greet_client){ .secret = p->secret, .server = l->who,
					     .rank = p->rank, .role = "peer" };
	hello = wr_greet_hello_new(&l->greet, l->hello_id);
	if (hello == NULL || wr_link_send(l->conn, hello, NULL, 0) < 0) {
		json_decref(hello);
		wr_link_close(l->conn);
		free(l);
		return NULL;
	}
	json_decref(hello);
	p->peers[rank] = l;
	return l;
}

/* @c with its blob in the frame: lent pieces are gathered first. */
static int
send_bytes(struct link *l, struct wr_call *c)
{
	int rc = 0;

	if (c->lent.iov != NULL) {
		rc = wr_payload_gather(&c->lent, &c->blob, &c->len);
		wr_payload_release(&c->lent);
		free((void *)c->lent.iov);
		c->lent.iov = NULL;
	}
	rc = rc < 0 ? rc : wr_link_send_attach(l->conn, c->req, c->blob, c->len);
	/* The blob is the link's now, even on failure. */
	c->blob = NULL;
	json_decref(c->req);
	c->req = NULL;
	return rc;
}

/*
 * @c with the address of its blob (lent pieces, or our copy) for the
 * server to pull: the request and the blob stay until the answer, which
 * may ask for the bytes after all.
 */
static int
send_pulled(struct link *l, struct wr_call *c)
{
	const struct iovec one = { c->blob, c->len };
	const struct iovec *iov = c->lent.iov != NULL ? c->lent.iov : &one;
	size_t n = c->lent.iov != NULL ? c->lent.n : 1;

	int rc;

	if (json_object_set_new(c->req, "pull", wr_payload_pull_desc(iov, n)) < 0) {
		return -ENOMEM;
	}
	rc = wr_link_send(l->conn, c->req, NULL, 0);
	if (rc == WORLD_EFRAME) {
		/* So many pieces that their list is over WORLD_MSG_MAX. */
		json_object_del(c->req, "pull");
		return send_bytes(l, c);
	}
	c->pulled = rc == 0;
	return rc;
}

/* Frame and send @c on @l; it joins @l's pending calls (or waits for the
 * link's proof). Called with mu held. */
static void
send_call(struct wr_prog *p, struct link *l, struct wr_call *c)
{
	int rc;

	if (l->proving) {
		c->next = NULL;
		*l->held_tail = c;
		l->held_tail = &c->next;
		return;
	}
	c->id = ++p->next_id;
	rc = json_object_set_new(c->req, "id", json_integer(c->id)) < 0 ? -ENOMEM
		: l->pull && c->len >= WR_PULL_MIN ? send_pulled(l, c)
		: send_bytes(l, c);
	if (rc < 0) {
		c->res.rc = rc == WORLD_EFRAME ? -EMSGSIZE : rc;
		finish(p, c);
		return;
	}
	c->next = l->pending;
	l->pending = c;
}

/* Called with mu held. */
void
wr_prog_route(struct wr_prog *p, struct wr_call *c)
{
	struct link *l;

	if (c->dest < 0) {
		if (p->broken) {
			c->next = NULL;
			fail_list(p, c, WORLD_EREGISTRY, -1);
			return;
		}
		send_call(p, &p->registry, c);
		return;
	}
	l = peer_link(p, c->dest, c->endpoints);
	if (l == NULL) {
		c->res.rc = WORLD_EPEERDEAD;
		c->res.dead_rank = c->dest;
		finish(p, c);
		return;
	}
	send_call(p, l, c);
}

/* Called with mu held: finish what user threads' sends left to do. */
static void
poke_all(struct wr_prog *p)
{
	if (p->registry.conn != NULL) {
		wr_link_poke(p->registry.conn);
	}
	for (int i = 0; i < p->size; i++) {
		if (p->peers[i] != NULL) {
			wr_link_poke(p->peers[i]->conn);
		}
	}
}

static void
on_wake(evutil_socket_t fd, short what, void *arg)
{
	struct wr_prog *p = arg;
	struct wr_call *list, *rev = NULL;
	uint64_t n;

	if (read(p->wake_fd, &n, sizeof(n)) < 0) {
		/* EAGAIN: another wake took it. */
	}
	pthread_mutex_lock(&p->mu);
	if (p->stopping) {
		event_base_loopbreak(p->base);
	}
	list = p->queue;
	p->queue = NULL;
	/* The queue is last-in first; send in the order calls came. */
	while (list != NULL) {
		struct wr_call *c = list;

		list = c->next;
		c->next = rev;
		rev = c;
	}
	while (rev != NULL) {
		struct wr_call *c = rev;

		rev = c->next;
		wr_prog_route(p, c);
	}
	poke_all(p);
	pthread_mutex_unlock(&p->mu);
}

static void *
loop(void *arg)
{
	struct wr_prog *p = arg;

	event_base_dispatch(p->base);
	return NULL;
}

static int
start_loop(struct wr_prog *p, const struct wr_prog_cfg *cfg, int fd)
{
	struct wr_serve_cfg scfg = {
		.secret = cfg->secret, .rank = cfg->rank, .size = cfg->size,
		.dir = cfg->dir, .handlers = cfg->handlers, .workers = cfg->workers,
		.limits = cfg->limits, .waits = cfg->waits, .tcp_addr = cfg->advertise,
		.no_pull = cfg->no_pull,
	};
	sigset_t all, old;
	int rc;

	p->base = event_base_new();
	if (p->base == NULL) {
		close(fd);
		return -ENOMEM;
	}
	p->registry.rank = -1;
	rc = link_start(p, &p->registry, fd);
	if (rc == 0) {
		/* The loop is not running yet; mu is for form. */
		pthread_mutex_lock(&p->mu);
		wr_prog_watch_deaths(p);
		pthread_mutex_unlock(&p->mu);
	}
	if (rc == 0) {
		scfg.base = p->base;
		rc = wr_serve_open(&scfg, &p->serve);
	}
	p->wake = event_new(p->base, p->wake_fd, EV_READ | EV_PERSIST, on_wake, p);
	p->answered_ev = event_new(p->base, -1, 0, on_answered, p);
	if (rc < 0 || p->wake == NULL || p->answered_ev == NULL ||
	    event_add(p->wake, NULL) < 0) {
		return rc < 0 ? rc : -ENOMEM;
	}
	rc = wr_prog_lease_start(p, cfg->lease_interval);
	if (rc < 0) {
		return rc;
	}
	/* Signals belong to the program's own threads, never to ours. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = -pthread_create(&p->thread, NULL, loop, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	p->started = rc == 0;
	return rc;
}

int
wr_prog_open(const struct wr_prog_cfg *cfg, struct wr_prog **out)
{
	struct wr_prog *p = calloc(1, sizeof(*p));
	int rc, fd = -1;

	*out = NULL;
	if (p == NULL) {
		return -ENOMEM;
	}
	pthread_mutex_init(&p->mu, NULL);
	p->rank = cfg->rank;
	p->waits = cfg->waits;
	p->size = cfg->size;
	p->limits = cfg->limits;
	p->pull = !cfg->no_pull;
	wr_spin_init(&p->spin, cfg->spin_us);
	p->secret = strdup(cfg->secret);
	p->gone = cfg->gone != NULL ? strdup(cfg->gone) : NULL;
	p->peers = calloc((size_t)cfg->size, sizeof(*p->peers));
	p->dead = calloc((size_t)cfg->size, sizeof(*p->dead));
	p->left = calloc((size_t)cfg->size, sizeof(*p->left));
	p->stopped = calloc((size_t)cfg->size, sizeof(*p->stopped));
	ring_init(&p->watchers);
	p->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	rc = p->secret == NULL || p->peers == NULL || p->dead == NULL ||
	     p->left == NULL || p->stopped == NULL ? -ENOMEM
		: p->wake_fd < 0 ? -errno : wr_prog_connect(cfg, &fd);
	if (rc == 0) {
		rc = start_loop(p, cfg, fd);
	}
	if (rc < 0) {
		wr_prog_close(p, false);
		return rc;
	}
	*out = p;
	return 0;
}

void
wr_prog_refuse(struct wr_prog *p)
{
	if (p != NULL && p->serve != NULL) {
		wr_serve_refuse(p->serve);
	}
}

const char *
wr_prog_endpoints(const struct wr_prog *p)
{
	return wr_serve_endpoints(p->serve);
}

void
wr_prog_wake(struct wr_prog *p)
{
	uint64_t one = 1;

	if (write(p->wake_fd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is full of wakes already. */
	}
}

/*
 * Close @l and fail its calls, in that order: a server pulling a blob
 * from us sees the hang-up before the blob is freed. Frees a peer's @l.
 */
static void
close_link(struct wr_prog *p, struct link *l)
{
	struct wr_call *pending = l->pending, *held = l->held;

	l->pending = NULL;
	l->held = NULL;
	hang_up(l->conn);
	wr_link_close(l->conn);
	l->conn = NULL;
	pthread_mutex_lock(&p->mu);
	fail_list(p, pending, WORLD_EREGISTRY, -1);
	fail_list(p, held, WORLD_EREGISTRY, -1);
	pthread_mutex_unlock(&p->mu);
	if (l != &p->registry) {
		free(l);
	}
}

void
wr_prog_close(struct wr_prog *p, bool goodbye)
{
	if (p == NULL) {
		return;
	}
	if (p->serve != NULL) {
		wr_serve_refuse(p->serve);
	}
	if (goodbye && p->started) {
		wr_prog_goodbye(p);
	}
	if (p->started) {
		pthread_mutex_lock(&p->mu);
		p->stopping = true;
		wr_prog_wake(p);
		pthread_mutex_unlock(&p->mu);
		pthread_join(p->thread, NULL);
	}
	pthread_mutex_lock(&p->mu);
	/* The loop may have stopped before on_answered() ran. */
	wake_callers(p);
	fail_list(p, p->queue, WORLD_EREGISTRY, -1);
	p->queue = NULL;
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; p->peers != NULL && i < p->size; i++) {
		if (p->peers[i] != NULL) {
			close_link(p, p->peers[i]);
			p->peers[i] = NULL;
		}
	}
	close_link(p, &p->registry);
	wr_serve_close(p->serve);
	if (p->lease != NULL) {
		event_free(p->lease);
	}
	if (p->wake != NULL) {
		event_free(p->wake);
	}
	if (p->answered_ev != NULL) {
		event_free(p->answered_ev);
	}
	if (p->base != NULL) {
		event_base_free(p->base);
	}
	if (p->wake_fd >= 0) {
		close(p->wake_fd);
	}
	pthread_mutex_destroy(&p->mu);
	free(p->peers);
	free(p->dead);
	free(p->left);
	for (int r = 0; p->stopped != NULL && r < p->size; r++) {
		json_decref(p->stopped[r]);
	}
	free(p->stopped);
	free(p->secret);
	free(p->gone);
	free(p);
}
