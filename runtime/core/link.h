/* SPDX-License-Identifier: MIT */
/*
 * link: one framed connection on an event loop, for the registry's
 * server and for libworld's peers and registry client. It reads once per
 * readable event (a blob straight into its own buffer), and what is sent
 * during one turn of the loop goes out in one write at the end of that
 * turn, with no wait for writability unless the socket is full: the
 * fewest system calls per round trip. It knows frames, not messages.
 * A private link is used from its loop's thread only; a shared one (with
 * a mutex) also takes frames from other threads, which write them at
 * once themselves, so that a call costs no wake-up of the loop.
 */
#ifndef WR_LINK_H
#define WR_LINK_H

#include <pthread.h>
#include <stddef.h>

#include <event2/event.h>
#include <jansson.h>

#include "frame.h"

struct wr_link;

struct wr_link_cfg {
	struct event_base *base;
	const struct wr_frame_limits *limits; /* NULL: the defaults */
	/* Stop reading, and handling what was read, while more than this
	 * waits to be sent; 0: never. */
	size_t out_high;
	/* A whole frame: @msg (a new reference) and @blob (malloc'd) are
	 * the callee's. */
	void (*frame)(struct wr_link *l, json_t *msg, void *blob, size_t len,
		      void *arg);
	/*
	 * Nothing more is read: @rc 0 at end of file or once wr_link_shutdown()
	 * has written everything, -errno for a broken socket, and for a bad
	 * frame WORLD_EFRAME, WORLD_EPROTO or -ENOMEM. After a bad frame the
	 * owner may still send an answer and call wr_link_shutdown() (lost(0)
	 * follows); otherwise no callback follows and it calls wr_link_close().
	 */
	void (*lost)(struct wr_link *l, int rc, void *arg);
	void *arg;
	/*
	 * Shared: other threads send while holding *mu, which the link's own
	 * callbacks take too (frame and lost run with it held). What a send
	 * leaves for the loop (the rest of a long write, a broken socket) it
	 * asks for with kick(arg), from any thread: the owner wakes its loop,
	 * which calls wr_link_poke(). NULL: a private link.
	 */
	pthread_mutex_t *mu;
	void (*kick)(void *arg);
};

/* A link on @fd, which it owns from now on, even on failure. 0 or -ENOMEM. */
int wr_link_open(const struct wr_link_cfg *cfg, int fd, struct wr_link **out);

/* Close the socket and free the link, also from inside its callbacks.
 * Accepts NULL. */
void wr_link_close(struct wr_link *l);

/*
 * Queue @msg (borrowed; its "blob" member is set as wr_frame_write()
 * says) and a copy of @blob. Returns 0, WORLD_EFRAME or -ENOMEM.
 */
int wr_link_send(struct wr_link *l, json_t *msg, const void *blob, size_t len);

/* The same with @blob (malloc'd) attached: freed once written, or on failure. */
int wr_link_send_attach(struct wr_link *l, json_t *msg, void *blob, size_t len);

/*
 * The same with a JSON part the caller wrote itself, and @blob copied or,
 * with @ref, held until written (wr_frame_write_text_ref).
 */
int wr_link_send_text(struct wr_link *l, const char *json, size_t json_len,
		      const void *blob, size_t len, const struct wr_frame_ref *ref);

/*
 * From the next frame on, read and send with @lim (copied): a server
 * lets a stranger send a small hello only, then the job's limits. From
 * inside the frame callback, or before the first frame.
 */
void wr_link_set_limits(struct wr_link *l, const struct wr_frame_limits *lim);

/* The socket, to look at (poll), never to read, write or close. */
int wr_link_fd(const struct wr_link *l);

/* Read no more; call lost(0) once everything queued has been written. */
void wr_link_shutdown(struct wr_link *l);

/* On a shared link's loop thread, with *mu held, after a kick: do what
 * the senders left to do. lost() may run (a broken socket, the end of a
 * shutdown) and may close the link: then @l is gone when this returns. */
void wr_link_poke(struct wr_link *l);

#endif
