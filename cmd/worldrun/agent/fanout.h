/* SPDX-License-Identifier: MIT */
/*
 * fanout: one stream of chunks copied to many pipes (--stdin all). A
 * chunk counts as taken once every reader has taken it, or was dropped:
 * a reader whose pipe fails (its rank is gone) is dropped, never waited
 * for. One chunk at a time: the caller sends the next only after the
 * taken callback, so memory stays at one chunk.
 */
#ifndef WR_FANOUT_H
#define WR_FANOUT_H

#include <stddef.h>

#include <event2/event.h>

struct wr_fanout;

typedef void wr_fanout_taken_cb(void *arg);

/* Room for @n readers, numbered 0 to n-1. Returns 0 or -ENOMEM. */
int wr_fanout_open(struct event_base *base, int n, wr_fanout_taken_cb *cb,
		   void *arg, struct wr_fanout **out);

/* Closes every reader's pipe. Accepts NULL. */
void wr_fanout_close(struct wr_fanout *f);

/* Reader @i writes to @fd (non-blocking), which the fanout owns from now. */
void wr_fanout_attach(struct wr_fanout *f, int i, int fd);

/* Close reader @i's pipe; a chunk it had not taken no longer waits for it. */
void wr_fanout_drop(struct wr_fanout *f, int i);

/* Hand @data to every reader; the taken callback follows. 0 or -ENOMEM. */
int wr_fanout_chunk(struct wr_fanout *f, const char *data, size_t len);

/* End of input: close every pipe, so every reader sees EOF. */
void wr_fanout_eof(struct wr_fanout *f);

#endif
