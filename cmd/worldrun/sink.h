/* SPDX-License-Identifier: MIT */
/*
 * sink: one of worldrun's own output fds (stdout, stderr, or both when they
 * are the same file), written by a thread of its own. The fd is inherited,
 * so it stays blocking (others share its file description); the thread
 * keeps a blocked write from stalling the event loop. Bytes are queued
 * unbounded here: the caller watches wr_sink_queued() and stops reading
 * ranks when it is high.
 */
#ifndef WR_SINK_H
#define WR_SINK_H

#include <stdbool.h>
#include <stddef.h>

struct wr_sink;

/* Start a writer for @fd, which stays the caller's. Returns 0 or -errno. */
int wr_sink_open(int fd, struct wr_sink **out);

/*
 * Stop the writer. With @abandon false it first writes everything queued;
 * with @abandon true it drops what is left. Accepts NULL.
 */
void wr_sink_close(struct wr_sink *s, bool abandon);

/*
 * Room for @max bytes at the end of the queue. Every call is paired with
 * wr_sink_commit(), which queues the bytes written there.
 */
char *wr_sink_begin(struct wr_sink *s, size_t max);
void wr_sink_commit(struct wr_sink *s, size_t used);

/* Bytes queued and not yet written. */
size_t wr_sink_queued(struct wr_sink *s);

/* 0, or the -errno of the write that failed (-EPIPE: the reader is gone). */
int wr_sink_error(struct wr_sink *s);

/*
 * An eventfd that becomes readable once the queue has shrunk to
 * @threshold bytes or fewer, or a write failed, after
 * wr_sink_notify_below() asked for it. wr_sink_ack() clears it.
 */
int wr_sink_wake_fd(const struct wr_sink *s);
void wr_sink_notify_below(struct wr_sink *s, size_t threshold);
void wr_sink_ack(struct wr_sink *s);

#endif
