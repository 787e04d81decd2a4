/* SPDX-License-Identifier: MIT */
#include "link.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/util.h>

struct wr_link {
	struct wr_link_cfg cfg;
	int fd;
	struct event *rd, *wr;
	struct evbuffer *in, *out;
	struct wr_frame_reader reader;
	int busy;       /* our callbacks under way: freeing waits for them */
	bool closed;    /* wr_link_close() came while busy */
	bool stopped;   /* no more reading: end of file, a bad frame, shutdown */
	bool dead;      /* the socket is of no more use: no more callbacks */
	bool shutting;  /* lost(0) once the output is out */
	bool reading;   /* rd is added */
	bool flushing;  /* a write is due: wr is active or added, or a poke is */
	bool refused;   /* a bad frame: its rest may still be unread at close */
	int failed;     /* shared: a write error for the loop to report */
};

/*
 * Closing a socket with unread bytes resets the connection, and a reset
 * can overtake the error answer still on its way: after a bad frame,
 * read what has come (a little, without waiting) before the close.
 */
static void
discard_input(int fd)
{
	char buf[4096];

	for (int i = 0; i < 16 && recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0; i++) {
	}
}

static void
destroy(struct wr_link *l)
{
	if (l->rd != NULL) {
		event_free(l->rd);
	}
	if (l->wr != NULL) {
		event_free(l->wr);
	}
	if (l->in != NULL) {
		evbuffer_free(l->in);
	}
	if (l->out != NULL) {
		evbuffer_free(l->out);
	}
	wr_frame_reader_finish(&l->reader);
	if (l->refused) {
		discard_input(l->fd);
	}
	close(l->fd);
	free(l);
}

/* Enter one of our callbacks, on the loop thread. */
static void
enter(struct wr_link *l)
{
	if (l->cfg.mu != NULL) {
		pthread_mutex_lock(l->cfg.mu);
	}
	l->busy++;
}

/* Our work on the link is over: free it if it was closed meanwhile. */
static void
done(struct wr_link *l)
{
	if (--l->busy == 0 && l->closed) {
		destroy(l);
	}
}

/* Leave one of our callbacks. */
static void
leave(struct wr_link *l)
{
	pthread_mutex_t *mu = l->cfg.mu;

	done(l);
	if (mu != NULL) {
		pthread_mutex_unlock(mu);
	}
}

/* More is queued to be sent than the peer may make us hold. */
static bool
over_high(struct wr_link *l)
{
	return l->cfg.out_high != 0 && evbuffer_get_length(l->out) > l->cfg.out_high;
}

/* Read while the link is open and its peer takes what we send. Loop only. */
static void
update_reading(struct wr_link *l)
{
	bool want = !l->stopped && !l->closed && !over_high(l);

	if (want == l->reading) {
		return;
	}
	if (want ? event_add(l->rd, NULL) == 0 : event_del(l->rd) == 0) {
		l->reading = want;
	}
}

/* Tell the owner; after a bad frame (@dead false) it may still answer. */
static void
lose(struct wr_link *l, int rc, bool dead)
{
	if (l->dead || l->closed) {
		return;
	}
	l->stopped = true;
	l->dead = dead;
	l->refused = !dead;
	update_reading(l);
	l->cfg.lost(l, rc, l->cfg.arg);
}

/* Write what the socket takes now. 0, or -errno for a broken socket. */
static int
write_some(struct wr_link *l)
{
	ssize_t n = evbuffer_get_length(l->out) > 0 ? wr_frame_send(l->out, l->fd) : 0;

	return n < 0 && n != -EAGAIN && n != -EINTR ? (int)n : 0;
}

static void deliver(struct wr_link *l);

/*
 * What follows a write, on the loop thread: wait for the socket to take
 * the rest, report a broken one, or end a shutdown; and once the output
 * is under its bound again, handle the requests that were read meanwhile.
 */
static void
after_write(struct wr_link *l, int rc)
{
	l->flushing = false;
	if (rc < 0) {
		lose(l, rc, true);
	} else if (evbuffer_get_length(l->out) > 0) {
		l->flushing = event_add(l->wr, NULL) == 0;
	} else if (l->shutting) {
		lose(l, 0, true);
	}
	update_reading(l);
	if (l->cfg.out_high != 0 && !over_high(l) && evbuffer_get_length(l->in) > 0) {
		deliver(l);
		update_reading(l);
	}
}

static void
on_writable(evutil_socket_t fd, short what, void *arg)
{
	struct wr_link *l = arg;

	enter(l);
	after_write(l, write_some(l));
	leave(l);
}

/*
 * Have the loop look at the link soon. A private link writes at the end
 * of this turn of the loop: event_active() runs the callback after the
 * ones already due, without asking epoll, so every answer to one read
 * goes out in one writev. A shared link may be on another thread: the
 * owner wakes its loop, which calls wr_link_poke().
 */
static void
schedule(struct wr_link *l)
{
	if (l->flushing) {
		return;
	}
	l->flushing = true;
	if (l->cfg.mu == NULL) {
		event_active(l->wr, EV_WRITE, 1);
	} else {
		l->cfg.kick(l->cfg.arg);
	}
}

void
wr_link_poke(struct wr_link *l)
{
	if (l->flushing && !l->closed && event_pending(l->wr, EV_WRITE, NULL) == 0) {
		int rc = l->failed;

		/*
		 * The caller holds mu already, so this is enter() without the
		 * lock: the write may end in lost(), whose owner closes the
		 * link, and it must not be freed before after_write() is done
		 * (nor while it hands on frames that were held back).
		 */
		l->busy++;
		l->failed = 0;
		after_write(l, rc < 0 ? rc : write_some(l));
		done(l);
	}
}

/*
 * Hand on the frames read, but none while the output is over its bound:
 * a client that sends requests and reads no answers makes us hold at
 * most one answer more than the bound, however many it sent.
 */
static void
deliver(struct wr_link *l)
{
	while (!l->stopped && !l->closed && !over_high(l)) {
		json_t *msg;
		void *blob;
		size_t len;
		int rc = wr_frame_read(&l->reader, l->in, &msg, &blob, &len);

		if (rc == 0) {
			return;
		}
		if (rc < 0) {
			lose(l, rc, false);
			return;
		}
		l->cfg.frame(l, msg, blob, len, l->cfg.arg);
	}
}

static void
on_readable(evutil_socket_t fd, short what, void *arg)
{
	struct wr_link *l = arg;
	ssize_t n;

	enter(l);
	n = wr_frame_recv(&l->reader, l->in, fd);
	if (n > 0) {
		deliver(l);
	} else if (n != -EAGAIN && n != -EINTR) {
		lose(l, (int)n, true);
	}
	/* Sends from other threads may have filled the output meanwhile. */
	update_reading(l);
	leave(l);
}

int
wr_link_open(const struct wr_link_cfg *cfg, int fd, struct wr_link **out)
{
	struct wr_link *l = calloc(1, sizeof(*l));

	*out = NULL;
	if (l == NULL) {
		close(fd);
		return -ENOMEM;
	}
	l->cfg = *cfg;
	l->fd = fd;
	wr_frame_reader_init(&l->reader, cfg->limits);
	evutil_make_socket_nonblocking(fd);
	l->rd = event_new(cfg->base, fd, EV_READ | EV_PERSIST, on_readable, l);
	l->wr = event_new(cfg->base, fd, EV_WRITE, on_writable, l);
	l->in = evbuffer_new();
	l->out = evbuffer_new();
	if (l->rd == NULL || l->wr == NULL || l->in == NULL || l->out == NULL) {
		destroy(l);
		return -ENOMEM;
	}
	update_reading(l);
	*out = l;
	return 0;
}

void
wr_link_close(struct wr_link *l)
{
	if (l == NULL) {
		return;
	}
	if (l->busy == 0) {
		destroy(l);
		return;
	}
	l->closed = true;
	event_del(l->rd);
	event_del(l->wr);
}

/*
 * After a frame was queued: a private link writes at the end of the
 * loop's turn; a shared one writes at once, in the sender's thread, when
 * nothing else waits to go out, and leaves the rest to its loop.
 */
static int
queued(struct wr_link *l, int rc)
{
	if (rc < 0 || l->dead || l->closed) {
		return rc;
	}
	if (l->cfg.mu != NULL && !l->flushing) {
		l->failed = write_some(l);
		if (l->failed == 0 && evbuffer_get_length(l->out) == 0) {
			return 0;
		}
	}
	schedule(l);
	return 0;
}

int
wr_link_send(struct wr_link *l, json_t *msg, const void *blob, size_t len)
{
	return queued(l, wr_frame_write(l->out, &l->reader.lim, msg, blob, len));
}

int
wr_link_send_attach(struct wr_link *l, json_t *msg, void *blob, size_t len)
{
	return queued(l, wr_frame_write_attach(l->out, &l->reader.lim, msg, blob, len));
}

int
wr_link_send_text(struct wr_link *l, const char *json, size_t json_len,
		  const void *blob, size_t len, const struct wr_frame_ref *ref)
{
	return queued(l, wr_frame_write_text_ref(l->out, &l->reader.lim, json, json_len,
						 blob, len, ref));
}

void
wr_link_set_limits(struct wr_link *l, const struct wr_frame_limits *lim)
{
	l->reader.lim = *lim;
}

int
wr_link_fd(const struct wr_link *l)
{
	return l->fd;
}

void
wr_link_shutdown(struct wr_link *l)
{
	if (l->shutting || l->dead || l->closed) {
		return;
	}
	l->shutting = true;
	l->stopped = true;
	if (l->cfg.mu == NULL) {
		update_reading(l);
	}
	schedule(l);
}
