/* SPDX-License-Identifier: MIT */
#include "stream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void
wr_stream_init(struct wr_stream *st, int fd)
{
	*st = (struct wr_stream){ .fd = fd };
}

void
wr_stream_finish(struct wr_stream *st)
{
	if (st == NULL) {
		return;
	}
	if (st->fd >= 0) {
		close(st->fd);
	}
	free(st->buf);
	*st = (struct wr_stream){ .fd = -1 };
}

static int
hold(struct wr_stream *st, const char *data, size_t len)
{
	if (len == 0) {
		st->len = 0;
		return 0;
	}
	if (st->buf == NULL) {
		st->buf = malloc(WR_LINE_MAX);
		if (st->buf == NULL) {
			return -ENOMEM;
		}
	}
	if (data != st->buf) {
		memmove(st->buf, data, len);
	}
	st->len = len;
	return 0;
}

/*
 * @data holds @total bytes of which the last @fresh are new. Emit whole
 * lines, keep the rest.
 */
static int
split(struct wr_stream *st, const char *data, size_t total, size_t fresh,
      wr_stream_emit_cb *emit, void *arg)
{
	const char *nl = memrchr(data + total - fresh, '\n', fresh);

	if (nl != NULL) {
		size_t used = (size_t)(nl - data) + 1;

		emit(arg, data, used, false);
		return hold(st, data + used, total - used);
	}
	if (total == WR_LINE_MAX) {
		emit(arg, data, total, true);
		st->len = 0;
		return 0;
	}
	return hold(st, data, total);
}

static ssize_t
read_some(int fd, char *p, size_t len)
{
	ssize_t n = read(fd, p, len);

	if (n >= 0) {
		return n;
	}
	/* A pty's master reads EIO once every slave fd is closed. */
	return errno == EIO ? 0 : -errno;
}

ssize_t
wr_stream_read(struct wr_stream *st, char *scratch, wr_stream_emit_cb *emit,
	       void *arg)
{
	ssize_t n;
	int rc;

	if (st->len == 0) {
		n = read_some(st->fd, scratch, WR_LINE_MAX);
		if (n <= 0) {
			return n;
		}
		rc = split(st, scratch, (size_t)n, (size_t)n, emit, arg);
		return rc < 0 ? rc : n;
	}
	n = read_some(st->fd, st->buf + st->len, WR_LINE_MAX - st->len);
	if (n == 0) {
		size_t len = st->len;

		st->len = 0;
		emit(arg, st->buf, len, true);
		return 0;
	}
	if (n < 0) {
		return n;
	}
	rc = split(st, st->buf, st->len + (size_t)n, (size_t)n, emit, arg);
	return rc < 0 ? rc : n;
}
