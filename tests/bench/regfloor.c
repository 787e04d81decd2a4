/* SPDX-License-Identifier: MIT */
/*
 * regfloor SOCKET [-d BYTES]: the registry's floor. A server that answers
 * every frame with {"id": N, "result": {}, "blob": BYTES} and BYTES bytes,
 * taking N from the request by a plain scan: no JSON parsing, no event
 * library, no state. regbench run against it measures what the transport
 * and the client alone cost, so registry.sh can show how much of a round
 * trip the registry itself adds. It listens on the Unix socket SOCKET and
 * on 127.0.0.1 at a free port, prints "unix:SOCKET,tcp:127.0.0.1:PORT"
 * (a WORLD_REGISTRY value) and serves until killed, or until nothing has
 * happened for 10 minutes. Not a registry: it checks no secret, and drops
 * a connection whose frame is over 64 KiB.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define IDLE_MS (10 * 60 * 1000)
#define MAX_CONNS 64

struct conn {
	int fd;
	size_t have;
	unsigned char in[1 << 16];
};

struct floor {
	int ep, unix_fd, tcp_fd;
	size_t data;
	struct conn *conns[MAX_CONNS];
};

static int
listen_unix(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || strlen(path) >= sizeof(sun.sun_path)) {
		return -1;
	}
	strcpy(sun.sun_path, path);
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 || listen(fd, 16) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* On 127.0.0.1, port chosen by the kernel; *port says which. */
static int
listen_tcp(int *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    listen(fd, 16) < 0 || getsockname(fd, (struct sockaddr *)&sin, &len) < 0) {
		if (fd >= 0) {
			close(fd);
		}
		return -1;
	}
	*port = ntohs(sin.sin_port);
	return fd;
}

static void
drop(struct floor *f, int slot)
{
	close(f->conns[slot]->fd);
	free(f->conns[slot]);
	f->conns[slot] = NULL;
}

static void
accept_one(struct floor *f, int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), one = 1, slot = 0;
	struct epoll_event ev = { .events = EPOLLIN };

	if (fd < 0) {
		return;
	}
	while (slot < MAX_CONNS && f->conns[slot] != NULL) {
		slot++;
	}
	if (slot == MAX_CONNS || (f->conns[slot] = calloc(1, sizeof(struct conn))) == NULL) {
		close(fd);
		return;
	}
	f->conns[slot]->fd = fd;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	ev.data.u32 = (uint32_t)slot;
	if (epoll_ctl(f->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
		drop(f, slot);
	}
}

/* The unsigned number after @name in the @len bytes at @p, or 0. */
static unsigned long long
field(const unsigned char *p, size_t len, const char *name)
{
	const unsigned char *at = memmem(p, len, name, strlen(name));
	unsigned long long v = 0;

	if (at == NULL) {
		return 0;
	}
	for (at += strlen(name); at < p + len && *at >= '0' && *at <= '9'; at++) {
		v = v * 10 + (unsigned long long)(*at - '0');
	}
	return v;
}

/* Answer every whole frame @c holds; false when the peer must go. */
static bool
answer_all(struct floor *f, struct conn *c)
{
	unsigned char out[8192];
	size_t used = 0, off = 0;

	while (c->have - off >= 4) {
		const unsigned char *p = c->in + off;
		size_t len = (size_t)p[0] << 24 | (size_t)p[1] << 16 | (size_t)p[2] << 8 | p[3];
		unsigned long long blob = field(p + 4, len < c->have - off - 4 ? len : c->have - off - 4,
						"\"blob\":");
		int n;

		if (len == 0 || 4 + len + blob > sizeof(c->in)) {
			return false;
		}
		if (c->have - off < 4 + len + blob) {
			break;
		}
		if (used + 4 + 64 + f->data > sizeof(out)) {
			return false;
		}
		n = snprintf((char *)out + used + 4, 64, "{\"id\":%llu,\"result\":{},\"blob\":%zu}",
			     field(p + 4, len, "\"id\":"), f->data);
		out[used] = 0;
		out[used + 1] = 0;
		out[used + 2] = (unsigned char)(n >> 8);
		out[used + 3] = (unsigned char)n;
		memset(out + used + 4 + n, 'x', f->data);
		used += 4 + (size_t)n + f->data;
		off += 4 + len + blob;
	}
	memmove(c->in, c->in + off, c->have - off);
	c->have -= off;
	return used == 0 || send(c->fd, out, used, MSG_NOSIGNAL) == (ssize_t)used;
}

static void
serve(struct floor *f, int slot)
{
	struct conn *c = f->conns[slot];
	ssize_t n = read(c->fd, c->in + c->have, sizeof(c->in) - c->have);

	if (n == 0 || (n < 0 && errno != EINTR)) {
		drop(f, slot);
		return;
	}
	c->have += n > 0 ? (size_t)n : 0;
	if (!answer_all(f, c)) {
		drop(f, slot);
	}
}

int
main(int argc, char **argv)
{
	struct floor f = { .data = 3 };
	struct epoll_event ev = { .events = EPOLLIN };
	int port = 0;

	if (argc == 4 && strcmp(argv[2], "-d") == 0) {
		f.data = strtoul(argv[3], NULL, 10);
	}
	if ((argc != 2 && argc != 4) || f.data > 4096) {
		fprintf(stderr, "usage: regfloor SOCKET [-d BYTES (at most 4096)]\n");
		return 2;
	}
	f.ep = epoll_create1(EPOLL_CLOEXEC);
	f.unix_fd = listen_unix(argv[1]);
	f.tcp_fd = listen_tcp(&port);
	ev.data.u32 = MAX_CONNS;
	if (f.ep < 0 || f.unix_fd < 0 || f.tcp_fd < 0 ||
	    epoll_ctl(f.ep, EPOLL_CTL_ADD, f.unix_fd, &ev) < 0 ||
	    (ev.data.u32 = MAX_CONNS + 1, epoll_ctl(f.ep, EPOLL_CTL_ADD, f.tcp_fd, &ev)) < 0) {
		fprintf(stderr, "regfloor: unable to listen: %s\n", strerror(errno));
		return 1;
	}
	printf("unix:%s,tcp:127.0.0.1:%d\n", argv[1], port);
	fflush(stdout);
	for (;;) {
		struct epoll_event e[16];
		int n = epoll_wait(f.ep, e, 16, IDLE_MS);

		if (n == 0) {
			break;
		}
		for (int i = 0; i < n; i++) {
			uint32_t slot = e[i].data.u32;

			if (slot >= MAX_CONNS) {
				accept_one(&f, slot == MAX_CONNS ? f.unix_fd : f.tcp_fd);
			} else if (f.conns[slot] != NULL) {
				serve(&f, (int)slot);
			}
		}
	}
	unlink(argv[1]);
	return 0;
}
