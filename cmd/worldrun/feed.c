/* SPDX-License-Identifier: MIT */
#include "feed.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#define CHUNK (64u << 10)

struct wr_feed {
	int fd;
	struct event *ev;
	bool pollable; /* false for regular files and /dev/null: epoll refuses them */
	bool done;
	wr_feed_cb *cb;
	void *arg;
	char buf[CHUNK];
};

static void
on_readable(evutil_socket_t fd, short what, void *arg)
{
	struct wr_feed *f = arg;
	ssize_t n;

	do {
		n = read(f->fd, f->buf, sizeof(f->buf));
	} while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN) {
		if (f->pollable) {
			event_add(f->ev, NULL);
		}
		return;
	}
	if (n <= 0) {
		f->done = true;
		f->cb(f->arg, NULL, 0);
		return;
	}
	f->cb(f->arg, f->buf, (size_t)n);
}

int
wr_feed_open(struct event_base *base, int fd, wr_feed_cb *cb, void *arg,
	     struct wr_feed **out)
{
	struct wr_feed *f = calloc(1, sizeof(*f));

	*out = NULL;
	if (f == NULL) {
		return -ENOMEM;
	}
	f->fd = fd;
	f->cb = cb;
	f->arg = arg;
	/* One-shot: after each chunk it waits for wr_feed_next(). */
	f->ev = event_new(base, fd, EV_READ, on_readable, f);
	if (f->ev == NULL) {
		free(f);
		return -ENOMEM;
	}
	f->pollable = event_add(f->ev, NULL) == 0;
	if (!f->pollable) {
		event_active(f->ev, EV_READ, 0);
	}
	*out = f;
	return 0;
}

void
wr_feed_next(struct wr_feed *f)
{
	if (f == NULL || f->done) {
		return;
	}
	if (f->pollable) {
		event_add(f->ev, NULL);
	} else {
		event_active(f->ev, EV_READ, 0);
	}
}

void
wr_feed_close(struct wr_feed *f)
{
	if (f == NULL) {
		return;
	}
	event_free(f->ev);
	free(f);
}
