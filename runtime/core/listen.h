/* SPDX-License-Identifier: MIT */
/*
 * listen: what both servers (worldrun's registry, and serve.c in every
 * rank) do alike: listen on a Unix socket and on an ephemeral loopback
 * TCP port, set TCP_NODELAY on what they accept, pause when accept()
 * runs out of file descriptors, keep strangers (connections that have
 * not proven they hold the job secret) few and brief, and compare the
 * secret in constant time. They differ in everything they say.
 */
#ifndef WR_LISTEN_H
#define WR_LISTEN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "frame.h"

/* What a stranger may send: one hello frame, small, with no blob. */
#define WR_HELLO_MAX 1024
#define WR_HELLO_WHY "before its hello a connection may send one frame " \
	"of at most 1024 bytes, without a blob"
extern const struct wr_frame_limits wr_hello_limits;

/* How long accepting pauses after accept() failed for want of fds. */
#define WR_LISTEN_PAUSE 0.1

struct wr_listen_cfg {
	struct event_base *base;
	const char *path; /* NULL: no Unix socket; an old file there is replaced */
	const char *tcp_addr; /* the TCP listener's IPv4 address; NULL: 127.0.0.1 */
	int tcp_port;     /* and its port; 0: one the kernel picks */
	bool any_tcp;     /* and one more on every address (0.0.0.0), for
			   * other hosts: its port in any_port */
	evconnlistener_cb accept;
	/*
	 * accept() failed (EMFILE, ENFILE, ENOMEM...): new connections wait
	 * in the kernel's backlog while accepting pauses; those already open
	 * are served. Called the first time only, with the errno; NULL: quiet.
	 */
	void (*full)(void *arg, int err);
	void *arg;
};

struct wr_listeners {
	struct evconnlistener *unix_l;
	struct evconnlistener *tcp_l;
	struct evconnlistener *any_l;
	int any_port;
	struct event *resume;
	struct event_base *base;
	bool out_of_fds; /* paused until resume fires */
	bool gate_full;  /* TCP paused until one of the job's own leaves */
	/* In the accept callback: whether the kernel names the other end as
	 * a process of this user (a Unix socket, or TCP from this machine). */
	bool ours;
	evconnlistener_cb accept;
	void (*full)(void *arg, int err);
	void *arg;
	bool told;
	unsigned long refused; /* other users' connections closed at accept */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char endpoints[512]; /* "unix:PATH,tcp:127.0.0.1:PORT" */
};

/*
 * Listen on cfg->path and on cfg->tcp_addr (127.0.0.1), cfg->tcp_port (0), and with
 * cfg->any_tcp on 0.0.0.0, port 0; connections go to cfg->accept. Returns
 * 0, -EINVAL (tcp_addr is no IPv4 address) or -errno (then nothing
 * listens).
 */
int wr_listen_open(struct wr_listeners *l, const struct wr_listen_cfg *cfg);

/* Stop listening and remove the socket file. Accepts a zeroed struct. */
void wr_listen_close(struct wr_listeners *l);

/*
 * The user of the process at the other end of TCP connection @fd, if it
 * is on this machine (in this network namespace), as the kernel's socket
 * table says (sock_diag, which ss(8) asks too). 0; -ENOENT when the other
 * end is elsewhere; another -errno when the kernel could not say.
 * Connections whose other end is another user's are refused at accept.
 */
int wr_listen_peer_uid(int fd, uid_t *uid);

/* For an accepted @fd: no Nagle delay on TCP. */
void wr_listen_tune(int fd, const struct sockaddr *sa);

/*
 * Whether a connection from @sa is from this machine (a Unix socket, or
 * 127.0.0.0/8), where the secret may still be taken in clear: nothing
 * but root sees loopback traffic.
 */
bool wr_listen_is_local(const struct sockaddr *sa);

/* Whether @got is the secret @want; time depends on @want's length only. */
bool wr_secret_ok(const char *want, const char *got);

/*
 * A gate for connections that have not proved the secret yet: each may
 * stay at most @timeout seconds, and each kind at most @max at once.
 * Strangers (connections whose other end the kernel cannot name as this
 * user's: from other machines) never hold anyone back: one more pushes
 * the oldest stranger out at once. While @max of the job's own
 * (wr_listeners.ours) wait, accepting on TCP pauses, so that a burst of
 * them is read (and leaves the gate with its hello) before more are
 * accepted and the program's fds are not spent; after WR_GATE_GRACE the
 * oldest of them is pushed out. Either kind, pushed out before its hello
 * is answered, connects again (regclient). The owner embeds an entry in
 * each connection; drop() is told to close one that is pushed out or
 * late, after the gate let go of it. On the loop's thread only.
 */
#define WR_GATE_GRACE 0.5

struct wr_gate_entry {
	struct wr_gate_entry *prev, *next;
	double entered;
	bool in;
	bool ours;
};

struct wr_gate {
	struct event *timer;
	struct wr_listeners *listen; /* TCP paused while the job's own fill it */
	struct wr_gate_entry *head, *tail; /* oldest first */
	int ours, strangers;
	int max;
	double timeout;
	void (*drop)(struct wr_gate_entry *e, void *arg);
	void *arg;
};

/* For what @l accepts. 0 or -ENOMEM. */
int wr_gate_init(struct wr_gate *g, struct wr_listeners *l, int max,
		 double timeout, void (*drop)(struct wr_gate_entry *e, void *arg),
		 void *arg);

/* Lets go of the entries without dropping them. Accepts a zeroed struct. */
void wr_gate_finish(struct wr_gate *g);

/* A new connection; @ours: wr_listeners.ours at its accept. May drop()
 * older strangers before it returns. */
void wr_gate_enter(struct wr_gate *g, struct wr_gate_entry *e, bool ours);

/* It said hello, or it is closing: a no-op if it is not in the gate. */
void wr_gate_leave(struct wr_gate *g, struct wr_gate_entry *e);

#endif
