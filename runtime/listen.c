/* SPDX-License-Identifier: MIT */
#include "listen.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static struct evconnlistener *
listen_on(struct event_base *base, evconnlistener_cb cb, void *arg,
	  const struct sockaddr *sa, socklen_t len)
{
	return evconnlistener_new_bind(base, cb, arg,
				       LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC,
				       128, sa, (int)len);
}

static int
listen_unix(struct wr_listeners *l, struct event_base *base, const char *path,
	    evconnlistener_cb cb, void *arg)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	size_t n = strlen(path);

	if (n >= sizeof(sun.sun_path)) {
		return -ENAMETOOLONG;
	}
	memcpy(sun.sun_path, path, n + 1);
	memcpy(l->path, path, n + 1);
	unlink(path);
	l->unix_l = listen_on(base, cb, arg, (struct sockaddr *)&sun, sizeof(sun));
	return l->unix_l != NULL ? 0 : -errno;
}

/* Loopback, port 0: the kernel picks a free port, so jobs never collide. */
static int
listen_tcp(struct wr_listeners *l, struct event_base *base,
	   evconnlistener_cb cb, void *arg, int *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l->tcp_l = listen_on(base, cb, arg, (struct sockaddr *)&sin, sizeof(sin));
	if (l->tcp_l == NULL) {
		return -errno;
	}
	if (getsockname(evconnlistener_get_fd(l->tcp_l), (struct sockaddr *)&sin,
			&len) < 0) {
		return -errno;
	}
	*port = ntohs(sin.sin_port);
	return 0;
}

int
wr_listen_open(struct wr_listeners *l, struct event_base *base, const char *path,
	       evconnlistener_cb cb, void *arg)
{
	int port = 0, n = 0;
	int rc = 0;

	*l = (struct wr_listeners){ 0 };
	if (path != NULL) {
		rc = listen_unix(l, base, path, cb, arg);
	}
	if (rc == 0) {
		rc = listen_tcp(l, base, cb, arg, &port);
	}
	if (rc < 0) {
		wr_listen_close(l);
		return rc;
	}
	if (l->unix_l != NULL) {
		n = snprintf(l->endpoints, sizeof(l->endpoints), "unix:%s,", l->path);
	}
	snprintf(l->endpoints + n, sizeof(l->endpoints) - (size_t)n,
		 "tcp:127.0.0.1:%d", port);
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
	l->unix_l = NULL;
	l->tcp_l = NULL;
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
