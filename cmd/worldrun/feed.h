/* SPDX-License-Identifier: MIT */
/*
 * feed: worldrun's stdin, read for --stdin all, one chunk at a time: the
 * next chunk is read only once every rank took the last one, so worldrun
 * reads no faster than the ranks do. It never makes fd 0 non-blocking.
 */
#ifndef WR_FEED_H
#define WR_FEED_H

#include <stddef.h>

#include <event2/event.h>

struct wr_feed;

/* Receives a chunk; @len 0 is end of input. @data is valid during the call. */
typedef void wr_feed_cb(void *arg, const char *data, size_t len);

int wr_feed_open(struct event_base *base, int fd, wr_feed_cb *cb, void *arg,
		 struct wr_feed **out);

/* The last chunk was taken: read the next one. */
void wr_feed_next(struct wr_feed *f);

void wr_feed_close(struct wr_feed *f);

#endif
