/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for sink: the writer thread delivers queued bytes to a pipe in
 * order, reports the queue shrinking through its wake fd, turns a vanished
 * reader into -EPIPE, and on close writes or drops what is left.
 */
#include "sink.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define WAIT_MS 20000 /* bound on every wait; the machine may be loaded */

static void
queue(struct wr_sink *s, const void *data, size_t len)
{
	char *p = wr_sink_begin(s, len);

	if (p == NULL) {
		printf("# wr_sink_begin(%zu) failed\n", len);
		return;
	}
	memcpy(p, data, len);
	wr_sink_commit(s, len);
}

static bool
readable(int fd, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, ms) == 1 && (pfd.revents & POLLIN) != 0;
}

/* Read exactly @len bytes from @fd into @buf, each wait bounded. */
static size_t
read_exactly(int fd, char *buf, size_t len)
{
	size_t got = 0;

	while (got < len && readable(fd, WAIT_MS)) {
		ssize_t n = read(fd, buf + got, len - got);

		if (n <= 0) {
			break;
		}
		got += (size_t)n;
	}
	return got;
}

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* Poll wr_sink_queued() until it reaches 0, bounded. */
static bool
queue_empties(struct wr_sink *s)
{
	for (int i = 0; i < WAIT_MS / 10; i++) {
		if (wr_sink_queued(s) == 0) {
			return true;
		}
		sleep_ms(10);
	}
	return false;
}

/* Wait until the pipe holds @fd's whole capacity: the writer is blocked. */
static bool
pipe_fills(int fd)
{
	int size = fcntl(fd, F_GETPIPE_SZ), n = 0;

	for (int i = 0; i < WAIT_MS / 10; i++) {
		if (ioctl(fd, FIONREAD, &n) == 0 && n >= size) {
			return true;
		}
		sleep_ms(10);
	}
	return false;
}

static void
test_order(void)
{
	const size_t big = 300u << 10;
	size_t total = 0;
	char *want = malloc(2 * big);
	char *got = malloc(2 * big);
	struct wr_sink *s = NULL;
	int p[2];

	if (pipe(p) < 0) {
		printf("# pipe: %s\n", strerror(errno));
	}
	is_int(wr_sink_open(p[1], &s), 0, "sink: opens on a pipe");
	for (int i = 0; i < 2000; i++) {
		int n = snprintf(want + total, 32, "line %d\n", i);

		queue(s, want + total, (size_t)n);
		total += (size_t)n;
	}
	for (size_t i = 0; i < big; i++) {
		want[total + i] = (char)('a' + i % 26);
	}
	queue(s, want + total, big);
	total += big;
	queue(s, "end\n", 4);
	memcpy(want + total, "end\n", 4);
	total += 4;
	ok(read_exactly(p[0], got, total) == total &&
		   memcmp(got, want, total) == 0,
	   "sink: delivers small and large writes whole and in order");
	ok(queue_empties(s), "sink: queued goes to 0 once everything is written");
	ok(!readable(p[0], 0), "sink: writes nothing more than was queued");
	is_int(wr_sink_error(s), 0, "sink: no error while the reader reads");
	wr_sink_close(s, false);
	ok(fcntl(p[1], F_GETFD) >= 0, "sink: close leaves the caller's fd open");
	close(p[0]);
	close(p[1]);
	free(want);
	free(got);
}

static void
test_notify(void)
{
	const size_t big = 1u << 20;
	char *data = calloc(1, big);
	char *got = malloc(big);
	struct wr_sink *s = NULL;
	int p[2];
	int wake;

	if (pipe(p) < 0 || wr_sink_open(p[1], &s) < 0) {
		printf("# cannot open a sink: %s\n", strerror(errno));
	}
	wake = wr_sink_wake_fd(s);
	ok(!readable(wake, 0), "sink: the wake fd is quiet before anyone asks");
	wr_sink_notify_below(s, 0);
	ok(readable(wake, WAIT_MS),
	   "sink: notify_below on an empty queue wakes at once");
	wr_sink_ack(s);
	ok(!readable(wake, 0), "sink: ack clears the wake fd");

	/* Nobody reads: the pipe fills and 1 MiB stays queued. */
	queue(s, data, big);
	ok(wr_sink_queued(s) > big / 2, "sink: queued counts what is not written");
	wr_sink_notify_below(s, 0);
	ok(!readable(wake, 0),
	   "sink: the wake fd stays quiet while the queue is above the threshold");
	ok(read_exactly(p[0], got, big) == big,
	   "sink: the reader gets the whole 1 MiB");
	ok(readable(wake, WAIT_MS),
	   "sink: the wake fd becomes readable once the queue drained");
	ok(wr_sink_queued(s) == 0, "sink: queued is 0 when the wake fd fires");
	wr_sink_ack(s);
	ok(!readable(wake, 0), "sink: ack clears the wake fd again");
	wr_sink_close(s, false);
	close(p[0]);
	close(p[1]);
	free(data);
	free(got);
}

static void
test_epipe(void)
{
	struct wr_sink *s = NULL;
	int p[2];
	int wake;

	if (pipe(p) < 0 || wr_sink_open(p[1], &s) < 0) {
		printf("# cannot open a sink: %s\n", strerror(errno));
	}
	close(p[0]);
	wake = wr_sink_wake_fd(s);
	queue(s, "lost\n", 5);
	wr_sink_notify_below(s, 0);
	ok(readable(wake, WAIT_MS),
	   "sink: the wake fd fires when the write fails");
	is_int(wr_sink_error(s), -EPIPE,
	       "sink: a reader that is gone gives -EPIPE");
	queue(s, "more\n", 5);
	is_int((long long)wr_sink_queued(s), 0,
	       "sink: after an error new bytes are not queued");
	wr_sink_close(s, false);
	close(p[1]);
}

static void
test_close(void)
{
	const size_t big = 600u << 10;
	char *data = malloc(big);
	char *got = malloc(big);
	struct wr_sink *s = NULL;
	int p[2];

	for (size_t i = 0; i < big; i++) {
		data[i] = (char)(i * 7);
	}
	if (pipe(p) < 0 || fcntl(p[1], F_SETPIPE_SZ, 1 << 20) < (1 << 20) ||
	    wr_sink_open(p[1], &s) < 0) {
		printf("# cannot open a sink on a 1 MiB pipe: %s\n",
		       strerror(errno));
	}
	queue(s, data, big / 2);
	queue(s, data + big / 2, big / 2);
	wr_sink_close(s, false);
	ok(read_exactly(p[0], got, big) == big && memcmp(got, data, big) == 0 &&
		   !readable(p[0], 0),
	   "sink: close without abandon writes everything queued first");
	close(p[0]);
	close(p[1]);

	/* A reader that never reads: abandon must not wait for it. */
	if (pipe(p) < 0 || wr_sink_open(p[1], &s) < 0) {
		printf("# cannot open a sink: %s\n", strerror(errno));
	}
	queue(s, data, big);
	queue(s, data, big);
	ok(pipe_fills(p[0]), "sink: the writer fills a pipe that nobody reads");
	/* Abandon must return while the writer is blocked: a hang here is
	 * the test's timeout. */
	wr_sink_close(s, true);
	ok(pipe_fills(p[0]), "sink: close with abandon returns, the pipe still full");
	close(p[0]);
	close(p[1]);
	wr_sink_close(NULL, false);
	free(data);
	free(got);
}

int
main(void)
{
	signal(SIGPIPE, SIG_IGN);
	plan(21);
	test_order();
	test_notify();
	test_epipe();
	test_close();
	return done_testing();
}
