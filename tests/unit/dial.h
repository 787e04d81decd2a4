/* SPDX-License-Identifier: MIT */
/*
 * dial.h: a client of a server on this thread's event loop, for the unit
 * tests of the servers (regserver, serve), header only: connect to its
 * Unix socket, send a request, and turn the loop until its answer comes.
 */
#ifndef WR_DIAL_H
#define WR_DIAL_H

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>

#include "frame.h"

struct dial {
	struct event_base *base; /* the server's */
	int fd;
	struct evbuffer *in;
	struct wr_frame_reader r;
	void *blob; /* the last answer's */
	size_t len;
	bool eof;   /* the server closed the connection */
};

/* Connect to @path; w->fd is -1 if that failed. */
static inline void
dial_open(struct dial *w, struct event_base *base, const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };

	*w = (struct dial){ .base = base, .in = evbuffer_new() };
	wr_frame_reader_init(&w->r, NULL);
	strncpy(sun.sun_path, path, sizeof(sun.sun_path) - 1);
	w->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (connect(w->fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		close(w->fd);
		w->fd = -1;
	}
}

static inline void
dial_close(struct dial *w)
{
	if (w->fd >= 0) {
		close(w->fd);
	}
	wr_frame_reader_finish(&w->r);
	evbuffer_free(w->in);
	free(w->blob);
}

/* The next answer (a new reference), or NULL at end of file (w->eof) or
 * when none came in 5 s. */
static inline json_t *
dial_answer(struct dial *w)
{
	for (int turns = 0; turns < 5000 && !w->eof; turns++) {
		struct pollfd p = { .fd = w->fd, .events = POLLIN };
		json_t *msg = NULL;

		free(w->blob);
		w->blob = NULL;
		if (wr_frame_read(&w->r, w->in, &msg, &w->blob, &w->len) == 1) {
			return msg;
		}
		event_base_loop(w->base, EVLOOP_NONBLOCK);
		if (poll(&p, 1, 1) == 1 && wr_frame_recv(&w->r, w->in, w->fd) <= 0) {
			w->eof = true;
		}
	}
	return NULL;
}

/* Send @json (with @len bytes of @blob) and return the answer, or NULL. */
static inline json_t *
dial_ask(struct dial *w, const char *json, const void *blob, size_t len)
{
	struct evbuffer *out = evbuffer_new();
	json_t *msg = json_loads(json, 0, NULL);
	int rc = msg != NULL ? wr_frame_write(out, NULL, msg, blob, len) : -EINVAL;

	while (rc == 0 && evbuffer_get_length(out) > 0) {
		rc = wr_frame_send(out, w->fd) < 0 ? -EIO : 0;
	}
	json_decref(msg);
	evbuffer_free(out);
	return rc == 0 ? dial_answer(w) : NULL;
}

/* The answer to @json has a result (and w's blob), not an error. */
static inline bool
dial_ask_ok(struct dial *w, const char *json, const void *blob, size_t len)
{
	json_t *a = dial_ask(w, json, blob, len);
	bool good = a != NULL && json_object_get(a, "result") != NULL;

	json_decref(a);
	return good;
}

#endif
