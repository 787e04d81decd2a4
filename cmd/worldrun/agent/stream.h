/* SPDX-License-Identifier: MIT */
/*
 * stream: the read end of one rank's stdout or stderr, cut into whole
 * lines. Complete lines go on at once; a partial line is held until its
 * newline arrives, until it reaches WR_LINE_MAX (then it goes on as a
 * piece of a longer line), or until the stream ends. Memory per stream
 * is at most WR_LINE_MAX. It does not know where the lines go.
 */
#ifndef WR_STREAM_H
#define WR_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define WR_LINE_MAX (64u << 10)

struct wr_stream {
	int fd;
	char *buf; /* the held partial line; WR_LINE_MAX bytes once used */
	size_t len;
};

/*
 * Receives bytes that leave the stream. @partial: they do not end with a
 * newline (a piece of a longer line, or the last bytes of the stream).
 * The bytes are valid during the call only.
 */
typedef void wr_stream_emit_cb(void *arg, const char *data, size_t len,
			       bool partial);

void wr_stream_init(struct wr_stream *st, int fd);

/* Closes the fd and frees the buffer. Accepts NULL. */
void wr_stream_finish(struct wr_stream *st);

/*
 * Read once into @scratch (WR_LINE_MAX bytes, shared by all streams) or
 * into the held line, and emit what is complete. Returns the bytes read,
 * 0 at end of stream (after emitting what was held), or -errno (-EAGAIN:
 * nothing to read now).
 */
ssize_t wr_stream_read(struct wr_stream *st, char *scratch,
		       wr_stream_emit_cb *emit, void *arg);

#endif
