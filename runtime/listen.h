/* SPDX-License-Identifier: MIT */
/*
 * listen: what both servers (worldrun's registry, and serve.c in every
 * rank) do alike: listen on a Unix socket and on an ephemeral loopback
 * TCP port, set TCP_NODELAY on what they accept, and compare the job
 * secret in constant time. They differ in everything they say.
 */
#ifndef WR_LISTEN_H
#define WR_LISTEN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <event2/listener.h>

struct wr_listeners {
	struct evconnlistener *unix_l;
	struct evconnlistener *tcp_l;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char endpoints[512]; /* "unix:PATH,tcp:127.0.0.1:PORT" */
};

/*
 * Listen on @path (NULL: no Unix socket; an old file there is replaced)
 * and on 127.0.0.1, port 0; connections go to @cb. Returns 0 or -errno
 * (then nothing listens).
 */
int wr_listen_open(struct wr_listeners *l, struct event_base *base,
		   const char *path, evconnlistener_cb cb, void *arg);

/* Stop listening and remove the socket file. Accepts a zeroed struct. */
void wr_listen_close(struct wr_listeners *l);

/* For an accepted @fd: no Nagle delay on TCP. */
void wr_listen_tune(int fd, const struct sockaddr *sa);

/* Whether @got is the secret @want; time depends on @want's length only. */
bool wr_secret_ok(const char *want, const char *got);

#endif
