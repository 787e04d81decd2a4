/* SPDX-License-Identifier: MIT */
#include "fanout.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct reader {
	struct wr_fanout *f;
	int fd;
	struct event *ev;
	size_t off; /* bytes of the current chunk it has taken */
};

struct wr_fanout {
	struct event_base *base;
	wr_fanout_taken_cb *cb;
	void *arg;
	struct reader *readers;
	int n;
	char *buf; /* the chunk being handed out */
	size_t len;
	int pending; /* readers that have not taken all of it */
};

static void
check_taken(struct wr_fanout *f)
{
	if (f->buf != NULL && f->pending == 0) {
		free(f->buf);
		f->buf = NULL;
		f->cb(f->arg);
	}
}

static void
drop(struct reader *r)
{
	struct wr_fanout *f = r->f;

	if (r->ev != NULL) {
		event_free(r->ev);
		r->ev = NULL;
	}
	if (r->fd < 0) {
		return;
	}
	close(r->fd);
	r->fd = -1;
	if (f->buf != NULL && r->off < f->len) {
		f->pending--;
		check_taken(f);
	}
}

/* Returns true when the reader has taken the whole chunk or was dropped. */
static bool
push(struct reader *r)
{
	struct wr_fanout *f = r->f;

	while (r->off < f->len) {
		ssize_t n = write(r->fd, f->buf + r->off, f->len - r->off);

		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n < 0 && errno == EAGAIN) {
			return false;
		}
		if (n < 0) {
			drop(r);
			return true;
		}
		r->off += (size_t)n;
	}
	return true;
}

static void
on_writable(evutil_socket_t fd, short what, void *arg)
{
	struct reader *r = arg;
	struct wr_fanout *f = r->f;

	if (r->fd < 0 || !push(r)) {
		return;
	}
	if (r->ev != NULL) {
		event_del(r->ev);
	}
	if (r->fd >= 0) {
		f->pending--;
	}
	check_taken(f);
}

/* Start handing the chunk to @r; false if it must wait for room. */
static bool
start(struct wr_fanout *f, struct reader *r)
{
	r->off = 0;
	if (push(r)) {
		return true;
	}
	if (r->ev == NULL) {
		r->ev = event_new(f->base, r->fd, EV_WRITE | EV_PERSIST, on_writable, r);
	}
	if (r->ev == NULL || event_add(r->ev, NULL) < 0) {
		drop(r);
		return true;
	}
	return false;
}

int
wr_fanout_chunk(struct wr_fanout *f, const char *data, size_t len)
{
	f->buf = malloc(len ? len : 1);
	if (f->buf == NULL) {
		return -ENOMEM;
	}
	memcpy(f->buf, data, len);
	f->len = len;
	/* One count for this loop, so that no drop inside it ends the chunk. */
	f->pending = 1;
	for (int i = 0; i < f->n; i++) {
		struct reader *r = &f->readers[i];

		if (r->fd < 0) {
			continue;
		}
		f->pending++;
		if (start(f, r) && r->fd >= 0) {
			f->pending--;
		}
	}
	f->pending--;
	check_taken(f);
	return 0;
}

void
wr_fanout_eof(struct wr_fanout *f)
{
	for (int i = 0; i < f->n; i++) {
		drop(&f->readers[i]);
	}
}

void
wr_fanout_attach(struct wr_fanout *f, int i, int fd)
{
	f->readers[i].fd = fd;
}

void
wr_fanout_drop(struct wr_fanout *f, int i)
{
	if (f != NULL) {
		drop(&f->readers[i]);
	}
}

int
wr_fanout_open(struct event_base *base, int n, wr_fanout_taken_cb *cb,
	       void *arg, struct wr_fanout **out)
{
	struct wr_fanout *f = calloc(1, sizeof(*f));

	*out = NULL;
	if (f == NULL) {
		return -ENOMEM;
	}
	f->readers = calloc((size_t)n, sizeof(*f->readers));
	if (f->readers == NULL) {
		free(f);
		return -ENOMEM;
	}
	*f = (struct wr_fanout){ .base = base, .cb = cb, .arg = arg,
				 .readers = f->readers, .n = n };
	for (int i = 0; i < n; i++) {
		f->readers[i] = (struct reader){ .f = f, .fd = -1 };
	}
	*out = f;
	return 0;
}

void
wr_fanout_close(struct wr_fanout *f)
{
	if (f == NULL) {
		return;
	}
	for (int i = 0; i < f->n; i++) {
		if (f->readers[i].ev != NULL) {
			event_free(f->readers[i].ev);
		}
		if (f->readers[i].fd >= 0) {
			close(f->readers[i].fd);
		}
	}
	free(f->readers);
	free(f->buf);
	free(f);
}
