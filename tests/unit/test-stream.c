/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for stream: bytes written into a pipe come out of
 * wr_stream_read as whole lines, held partial lines, WR_LINE_MAX pieces of
 * longer lines, and a partial last line at end of stream.
 */
#include "stream.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#define MAX_EMITS 64

struct emitted {
	char *data;
	size_t len;
	bool partial;
};

/* Every emit callback since the last reset, copied. */
struct record {
	struct emitted e[MAX_EMITS];
	int n;
	bool overflow;
};

static void
record_emit(void *arg, const char *data, size_t len, bool partial)
{
	struct record *r = arg;

	if (r->n == MAX_EMITS) {
		r->overflow = true;
		return;
	}
	r->e[r->n].data = malloc(len + 1);
	memcpy(r->e[r->n].data, data, len);
	r->e[r->n].data[len] = '\0';
	r->e[r->n].len = len;
	r->e[r->n].partial = partial;
	r->n++;
}

static void
record_reset(struct record *r)
{
	for (int i = 0; i < r->n; i++) {
		free(r->e[i].data);
	}
	*r = (struct record){ 0 };
}

/* True if exactly one emit was recorded, of @want with @partial. */
static bool
one_emit(const struct record *r, const char *want, size_t len, bool partial)
{
	return r->n == 1 && r->e[0].len == len &&
	       memcmp(r->e[0].data, want, len) == 0 && r->e[0].partial == partial;
}

/* A pipe with a nonblocking read end and room for @size bytes. */
static int
open_pipe(int p[2], int size)
{
	if (pipe(p) < 0 || fcntl(p[0], F_SETFL, O_NONBLOCK) < 0) {
		return -1;
	}
	if (size > 0 && fcntl(p[1], F_SETPIPE_SZ, size) < size) {
		return -1;
	}
	return 0;
}

static void
put(int fd, const void *data, size_t len)
{
	if (write(fd, data, len) != (ssize_t)len) {
		printf("# short write to the pipe: %s\n", strerror(errno));
	}
}

/* Read until the pipe is empty (-EAGAIN) or ends; returns the last result. */
static ssize_t
drain(struct wr_stream *st, char *scratch, struct record *r)
{
	ssize_t n;
	int rounds = 0;

	do {
		n = wr_stream_read(st, scratch, record_emit, r);
	} while (n > 0 && ++rounds < 1000);
	return n;
}

static void
test_lines(char *scratch)
{
	struct record r = { 0 };
	struct wr_stream st;
	int p[2];
	ssize_t n;

	if (open_pipe(p, 0) < 0) {
		printf("# pipe: %s\n", strerror(errno));
	}
	wr_stream_init(&st, p[0]);
	n = wr_stream_read(&st, scratch, record_emit, &r);
	ok(n == -EAGAIN && r.n == 0,
	   "stream: reading an empty nonblocking pipe returns -EAGAIN");

	put(p[1], "a\n", 2);
	n = wr_stream_read(&st, scratch, record_emit, &r);
	ok(n == 2 && one_emit(&r, "a\n", 2, false),
	   "stream: passes a complete line at once");
	record_reset(&r);

	put(p[1], "b\nc\nd\n", 6);
	n = wr_stream_read(&st, scratch, record_emit, &r);
	ok(n == 6 && one_emit(&r, "b\nc\nd\n", 6, false),
	   "stream: passes several lines of one read in one emit");
	record_reset(&r);

	put(p[1], "x\ny\nhe", 6);
	n = wr_stream_read(&st, scratch, record_emit, &r);
	ok(n == 6 && one_emit(&r, "x\ny\n", 4, false),
	   "stream: emits up to the last newline and holds the rest");
	record_reset(&r);

	put(p[1], "ll", 2);
	n = wr_stream_read(&st, scratch, record_emit, &r);
	ok(n == 2 && r.n == 0, "stream: holds a partial line until its newline");
	n = wr_stream_read(&st, scratch, record_emit, &r);
	ok(n == -EAGAIN && r.n == 0,
	   "stream: a held line with nothing new to read returns -EAGAIN");

	put(p[1], "o\nwor", 5);
	n = wr_stream_read(&st, scratch, record_emit, &r);
	ok(n == 5 && one_emit(&r, "hello\n", 6, false),
	   "stream: emits the held line whole once its newline arrives");
	record_reset(&r);

	put(p[1], "ld\0z\n", 5);
	n = wr_stream_read(&st, scratch, record_emit, &r);
	ok(n == 5 && one_emit(&r, "world\0z\n", 8, false),
	   "stream: passes NUL bytes through untouched");
	record_reset(&r);

	put(p[1], "tail", 4);
	n = wr_stream_read(&st, scratch, record_emit, &r);
	close(p[1]);
	n = wr_stream_read(&st, scratch, record_emit, &r);
	ok(n == 0 && one_emit(&r, "tail", 4, true),
	   "stream: at EOF emits the held partial line as partial and returns 0");
	record_reset(&r);
	n = wr_stream_read(&st, scratch, record_emit, &r);
	ok(n == 0 && r.n == 0, "stream: after EOF returns 0 and emits nothing more");

	wr_stream_finish(&st);
	ok(st.fd == -1 && st.buf == NULL && fcntl(p[0], F_GETFD) < 0 &&
		   errno == EBADF,
	   "stream: finish closes the fd and frees the buffer");
	wr_stream_finish(NULL);
}

static void
test_eof_empty(char *scratch)
{
	struct record r = { 0 };
	struct wr_stream st;
	int p[2];
	ssize_t n;

	open_pipe(p, 0);
	wr_stream_init(&st, p[0]);
	put(p[1], "whole\n", 6);
	close(p[1]);
	n = drain(&st, scratch, &r);
	ok(n == 0 && one_emit(&r, "whole\n", 6, false),
	   "stream: at EOF after whole lines emits nothing extra");
	record_reset(&r);
	wr_stream_finish(&st);
}

/* Checks a run of emits for one line of @len bytes (@len - 1 'x', '\n'). */
static bool
pieces_ok(const struct record *r, size_t len)
{
	size_t total = 0;

	if (r->overflow || r->n < 2) {
		return false;
	}
	for (int i = 0; i < r->n; i++) {
		bool last = i == r->n - 1;

		if (r->e[i].partial == last ||
		    (!last && r->e[i].len != WR_LINE_MAX) ||
		    r->e[i].len > WR_LINE_MAX) {
			printf("#   piece %d: %zu bytes, partial %d\n", i,
			       r->e[i].len, r->e[i].partial);
			return false;
		}
		for (size_t k = 0; k < r->e[i].len; k++) {
			if (r->e[i].data[k] != (total + k == len - 1 ? '\n' : 'x')) {
				printf("#   piece %d: wrong byte at %zu\n", i, k);
				return false;
			}
		}
		total += r->e[i].len;
	}
	return total == len;
}

static void
test_long_lines(char *scratch)
{
	const size_t len = 3 * WR_LINE_MAX + 100;
	char *line = malloc(len);
	struct record r = { 0 };
	struct wr_stream st;
	int p[2];
	ssize_t n;

	memset(line, 'x', len - 1);
	line[len - 1] = '\n';
	if (open_pipe(p, 1 << 20) < 0) {
		printf("# pipe of 1 MiB: %s\n", strerror(errno));
	}
	wr_stream_init(&st, p[0]);

	put(p[1], line, len);
	n = drain(&st, scratch, &r);
	ok(n == -EAGAIN && pieces_ok(&r, len),
	   "stream: a line longer than WR_LINE_MAX goes in WR_LINE_MAX pieces "
	   "marked partial, then its end");
	record_reset(&r);

	/* The same, starting with a held partial line. */
	put(p[1], line, 10);
	n = wr_stream_read(&st, scratch, record_emit, &r);
	put(p[1], line + 10, len - 10);
	n = drain(&st, scratch, &r);
	ok(n == -EAGAIN && pieces_ok(&r, len),
	   "stream: a held partial line that grows past WR_LINE_MAX goes in pieces");
	record_reset(&r);

	put(p[1], line, WR_LINE_MAX - 1);
	n = drain(&st, scratch, &r);
	ok(n == -EAGAIN && r.n == 0,
	   "stream: holds a partial line of WR_LINE_MAX - 1 bytes");
	put(p[1], "\n", 1);
	n = drain(&st, scratch, &r);
	line[WR_LINE_MAX - 1] = '\n';
	ok(n == -EAGAIN && one_emit(&r, line, WR_LINE_MAX, false),
	   "stream: a line of exactly WR_LINE_MAX bytes passes whole");
	line[WR_LINE_MAX - 1] = 'x';
	record_reset(&r);

	put(p[1], line, WR_LINE_MAX);
	n = drain(&st, scratch, &r);
	ok(n == -EAGAIN && one_emit(&r, line, WR_LINE_MAX, true),
	   "stream: exactly WR_LINE_MAX bytes without newline go on as a piece");
	record_reset(&r);
	put(p[1], "\n", 1);
	n = drain(&st, scratch, &r);
	ok(n == -EAGAIN && one_emit(&r, "\n", 1, false),
	   "stream: the newline after a full piece ends the line");
	record_reset(&r);

	put(p[1], "a\n", 2);
	put(p[1], line, WR_LINE_MAX);
	n = drain(&st, scratch, &r);
	ok(n == -EAGAIN && r.n == 2 && r.e[0].len == 2 && !r.e[0].partial &&
		   r.e[1].len == WR_LINE_MAX && r.e[1].partial,
	   "stream: a line after a newline fills the held buffer to WR_LINE_MAX");
	record_reset(&r);

	put(p[1], line, 100);
	close(p[1]);
	n = drain(&st, scratch, &r);
	ok(n == 0 && one_emit(&r, line, 100, true),
	   "stream: at EOF the held rest of a long line is emitted as partial");
	record_reset(&r);
	wr_stream_finish(&st);
	free(line);
}

int
main(void)
{
	char *scratch = malloc(WR_LINE_MAX);

	plan(20);
	test_lines(scratch);
	test_eof_empty(scratch);
	test_long_lines(scratch);
	free(scratch);
	return done_testing();
}
