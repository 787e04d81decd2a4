/* SPDX-License-Identifier: MIT */
#include "listen.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"

const struct wr_frame_limits wr_hello_limits = {
	.json_max = WR_HELLO_MAX, .blob_max = 0,
};

/*
 * Accept while nothing holds the listeners back. Too many of the job's
 * own waiting for their hello hold the TCP ones only (strangers never
 * do): the Unix socket, in a 0700 directory, is the job's own user's.
 */
static void
update(struct wr_listeners *l)
{
	struct evconnlistener *ls[3] = { l->unix_l, l->tcp_l, l->any_l };

	for (int i = 0; i < 3; i++) {
		bool on = !l->out_of_fds && (i == 0 || !l->gate_full);

		if (ls[i] != NULL && on) {
			evconnlistener_enable(ls[i]);
		} else if (ls[i] != NULL) {
			evconnlistener_disable(ls[i]);
		}
	}
}

static void
on_resume(evutil_socket_t fd, short what, void *arg)
{
	struct wr_listeners *l = arg;

	l->out_of_fds = false;
	update(l);
}

/* The kernel's answer to one sock_diag request on @nl: the uid it names. */
static int
diag_answer(int nl, uid_t *uid)
{
	union {
		struct nlmsghdr h;
		char buf[1024];
	} ans;
	ssize_t n = recv(nl, &ans, sizeof(ans), 0);
	const struct nlmsghdr *h = &ans.h;

	if (n < 0) {
		return -errno;
	}
	if (!NLMSG_OK(h, (size_t)n)) {
		return -EPROTO;
	}
	if (h->nlmsg_type == NLMSG_ERROR) {
		const struct nlmsgerr *e = NLMSG_DATA(h);

		return e->error < 0 ? e->error : -EPROTO;
	}
	if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
	    h->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
		return -EPROTO;
	}
	*uid = ((const struct inet_diag_msg *)NLMSG_DATA(h))->idiag_uid;
	return 0;
}

int
wr_listen_peer_uid(int fd, uid_t *uid)
{
	struct sockaddr_in self, peer;
	socklen_t a = sizeof(self), b = sizeof(peer);
	struct {
		struct nlmsghdr h;
		struct inet_diag_req_v2 r;
	} req = {
		.h = { .nlmsg_len = sizeof(req), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
		       .nlmsg_flags = NLM_F_REQUEST },
		.r = { .sdiag_family = AF_INET, .sdiag_protocol = IPPROTO_TCP,
		       .idiag_states = ~0U,
		       .id.idiag_cookie = { INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE } },
	};
	int nl, rc;

	if (getsockname(fd, (struct sockaddr *)&self, &a) < 0 ||
	    getpeername(fd, (struct sockaddr *)&peer, &b) < 0) {
		return -errno;
	}
	if (self.sin_family != AF_INET || peer.sin_family != AF_INET) {
		return -EAFNOSUPPORT;
	}
	/* The other end's socket, as it sees itself. */
	req.r.id.idiag_sport = peer.sin_port;
	req.r.id.idiag_dport = self.sin_port;
	req.r.id.idiag_src[0] = peer.sin_addr.s_addr;
	req.r.id.idiag_dst[0] = self.sin_addr.s_addr;
	nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nl < 0) {
		return -errno;
	}
	rc = send(nl, &req, sizeof(req), 0) < 0 ? -errno : diag_answer(nl, uid);
	close(nl);
	return rc;
}

/* Whether the process at the other end of Unix socket @fd is this user's. */
static bool
unix_ours(int fd)
{
	struct ucred cred;
	socklen_t n = sizeof(cred);

	return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &n) == 0 &&
	       cred.uid == geteuid();
}

/*
 * Another user's process on this machine is refused here, before it
 * costs more than this accept: it can see the port (ss, /proc/net/tcp)
 * but has no business with the job. A connection from elsewhere (or
 * one the kernel cannot place) goes on to the gate and the handshake.
 */
static void
on_accept(struct evconnlistener *el, evutil_socket_t fd, struct sockaddr *sa,
	  int salen, void *arg)
{
	struct wr_listeners *l = arg;
	uid_t uid;

	if (sa->sa_family == AF_INET) {
		int rc = wr_listen_peer_uid(fd, &uid);

		if (rc == 0 && uid != geteuid()) {
			close(fd);
			l->refused++;
			return;
		}
		l->ours = rc == 0;
	} else {
		l->ours = unix_ours(fd);
	}
	l->accept(el, fd, sa, salen, l->arg);
}

/*
 * accept() failed for a reason that retrying at once will not cure (out
 * of fds or memory): the pending connection keeps the socket readable,
 * so without a pause the loop would spin on it. Given this callback,
 * libevent does not log the failure either.
 */
static void
on_accept_error(struct evconnlistener *el, void *arg)
{
	struct wr_listeners *l = arg;
	struct timeval tv = wr_clock_tv(WR_LISTEN_PAUSE);
	int err = EVUTIL_SOCKET_ERROR();

	l->out_of_fds = true;
	update(l);
	evtimer_add(l->resume, &tv);
	if (!l->told && l->full != NULL) {
		l->full(l->arg, err);
	}
	l->told = true;
}

static struct evconnlistener *
listen_on(struct wr_listeners *l, struct event_base *base,
	  const struct sockaddr *sa, socklen_t len, unsigned flags)
{
	struct evconnlistener *el = evconnlistener_new_bind(
		base, on_accept, l, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC | flags,
		128, sa, (int)len);

	if (el != NULL) {
		evconnlistener_set_error_cb(el, on_accept_error);
	}
	return el;
}

static int
listen_unix(struct wr_listeners *l, struct event_base *base, const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	size_t n = strlen(path);

	if (n >= sizeof(sun.sun_path)) {
		return -ENAMETOOLONG;
	}
	memcpy(sun.sun_path, path, n + 1);
	memcpy(l->path, path, n + 1);
	unlink(path);
	l->unix_l = listen_on(l, base, (struct sockaddr *)&sun, sizeof(sun), 0);
	return l->unix_l != NULL ? 0 : -errno;
}

/*
 * @addr, port *@port; with 0 the kernel picks a free port, so jobs never
 * collide. A port given is one a program reuses run after run (Machin's
 * 9101): connections of the last run that linger in TIME_WAIT must not
 * keep it (SO_REUSEADDR; a live listener still does).
 */
static int
listen_tcp(struct wr_listeners *l, struct event_base *base, const char *addr,
	   struct evconnlistener **el, int *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(*port) };
	socklen_t len = sizeof(sin);

	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1) {
		return -EINVAL;
	}
	*el = listen_on(l, base, (struct sockaddr *)&sin, sizeof(sin),
			*port != 0 ? LEV_OPT_REUSEABLE : 0);
	if (*el == NULL) {
		return -errno;
	}
	if (getsockname(evconnlistener_get_fd(*el), (struct sockaddr *)&sin,
			&len) < 0) {
		return -errno;
	}
	*port = ntohs(sin.sin_port);
	return 0;
}

int
wr_listen_open(struct wr_listeners *l, const struct wr_listen_cfg *cfg)
{
	const char *addr = cfg->tcp_addr != NULL ? cfg->tcp_addr : "127.0.0.1";
	int port = cfg->tcp_port, n = 0;
	int rc = 0;

	*l = (struct wr_listeners){ .base = cfg->base, .accept = cfg->accept,
				    .full = cfg->full, .arg = cfg->arg };
	l->resume = evtimer_new(cfg->base, on_resume, l);
	if (l->resume == NULL) {
		rc = -ENOMEM;
	}
	if (rc == 0 && cfg->path != NULL) {
		rc = listen_unix(l, cfg->base, cfg->path);
	}
	if (rc == 0) {
		rc = listen_tcp(l, cfg->base, addr, &l->tcp_l, &port);
	}
	if (rc == 0 && cfg->any_tcp) {
		rc = listen_tcp(l, cfg->base, "0.0.0.0", &l->any_l, &l->any_port);
	}
	if (rc < 0) {
		wr_listen_close(l);
		return rc;
	}
	if (l->unix_l != NULL) {
		n = snprintf(l->endpoints, sizeof(l->endpoints), "unix:%s,", l->path);
	}
	snprintf(l->endpoints + n, sizeof(l->endpoints) - (size_t)n,
		 "tcp:%s:%d", addr, port);
	return 0;
}

void
wr_listen_close(struct wr_listeners *l)
{
	if (l->unix_l != NULL) {
		evconnlistener_free(l->unix_l);
		unlink(l->path);
	}
	if (l->tcp_l != NULL) {
		evconnlistener_free(l->tcp_l);
	}
	if (l->any_l != NULL) {
		evconnlistener_free(l->any_l);
	}
	if (l->resume != NULL) {
		event_free(l->resume);
	}
	l->unix_l = NULL;
	l->tcp_l = NULL;
	l->any_l = NULL;
	l->resume = NULL;
}

bool
wr_listen_is_local(const struct sockaddr *sa)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)(const void *)sa;

	return sa->sa_family == AF_UNIX ||
	       (sa->sa_family == AF_INET && (ntohl(sin->sin_addr.s_addr) >> 24) == 127);
}

void
wr_listen_tune(int fd, const struct sockaddr *sa)
{
	int one = 1;

	if (sa->sa_family == AF_INET) {
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
}

bool
wr_secret_ok(const char *want, const char *got)
{
	size_t n = strlen(want), m = strlen(got);
	unsigned char diff = n != m;

	for (size_t i = 0; i < n; i++) {
		diff |= (unsigned char)(want[i] ^ (i < m ? got[i] : 0));
	}
	return diff == 0;
}

/* ---- the gate ---- */

/* The oldest entry of the job's own (ours) or of the strangers. */
static struct wr_gate_entry *
oldest(const struct wr_gate *g, bool ours)
{
	struct wr_gate_entry *e = g->head;

	while (e != NULL && e->ours != ours) {
		e = e->next;
	}
	return e;
}

/* While the job's own fill the gate, the oldest goes past its grace. */
static double
grace_end(const struct wr_gate *g)
{
	const struct wr_gate_entry *e = g->ours >= g->max ? oldest(g, true) : NULL;

	return e != NULL ? e->entered + WR_GATE_GRACE : -1;
}

/* The TCP listeners accept while the job's own do not fill the gate. */
static void
hold(struct wr_gate *g)
{
	bool full = g->ours >= g->max;

	if (g->listen != NULL && g->listen->gate_full != full) {
		g->listen->gate_full = full;
		update(g->listen);
	}
}

/* Wake at the oldest's deadline, or at the end of a grace. */
static void
arm_gate(struct wr_gate *g)
{
	double at, grace = grace_end(g);
	struct timeval tv;

	evtimer_del(g->timer);
	if (g->head != NULL) {
		at = g->head->entered + g->timeout;
		at = grace >= 0 && grace < at ? grace : at;
		tv = wr_clock_tv(at - wr_clock_mono());
		evtimer_add(g->timer, &tv);
	}
}

static void
cut(struct wr_gate *g, struct wr_gate_entry *e)
{
	if (e->prev != NULL) {
		e->prev->next = e->next;
	} else {
		g->head = e->next;
	}
	if (e->next != NULL) {
		e->next->prev = e->prev;
	} else {
		g->tail = e->prev;
	}
	e->prev = e->next = NULL;
	e->in = false;
	if (e->ours) {
		g->ours--;
	} else {
		g->strangers--;
	}
}

static void
out(struct wr_gate *g, struct wr_gate_entry *e)
{
	cut(g, e);
	g->drop(e, g->arg);
}

static void
on_gate_timer(evutil_socket_t fd, short what, void *arg)
{
	struct wr_gate *g = arg;
	double now = wr_clock_mono(), grace;

	while (g->head != NULL && g->head->entered + g->timeout <= now) {
		out(g, g->head);
	}
	while ((grace = grace_end(g)) >= 0 && grace <= now) {
		out(g, oldest(g, true));
	}
	hold(g);
	arm_gate(g);
}

int
wr_gate_init(struct wr_gate *g, struct wr_listeners *l, int max, double timeout,
	     void (*drop)(struct wr_gate_entry *e, void *arg), void *arg)
{
	*g = (struct wr_gate){ .listen = l, .max = max, .timeout = timeout,
			       .drop = drop, .arg = arg };
	g->timer = evtimer_new(l->base, on_gate_timer, g);
	return g->timer != NULL ? 0 : -ENOMEM;
}

void
wr_gate_finish(struct wr_gate *g)
{
	while (g->head != NULL) {
		cut(g, g->head);
	}
	if (g->timer != NULL) {
		event_free(g->timer);
	}
	g->timer = NULL;
}

void
wr_gate_enter(struct wr_gate *g, struct wr_gate_entry *e, bool ours)
{
	/* A stranger more than the gate holds: the oldest stranger goes. */
	while (!ours && g->strangers >= g->max) {
		out(g, oldest(g, false));
	}
	*e = (struct wr_gate_entry){ .prev = g->tail, .in = true, .ours = ours,
				     .entered = wr_clock_mono() };
	if (g->tail != NULL) {
		g->tail->next = e;
	} else {
		g->head = e;
	}
	g->tail = e;
	if (ours) {
		g->ours++;
	} else {
		g->strangers++;
	}
	hold(g);
	if (g->head == e || g->ours == g->max) {
		arm_gate(g);
	}
}

void
wr_gate_leave(struct wr_gate *g, struct wr_gate_entry *e)
{
	if (!e->in) {
		return;
	}
	cut(g, e);
	hold(g);
	arm_gate(g);
}
