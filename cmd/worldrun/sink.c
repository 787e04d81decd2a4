/* SPDX-License-Identifier: MIT */
#include "sink.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define BLOCK_SIZE (256u << 10)
/* Written blocks kept for reuse: malloc would hand big ones back to the
 * kernel each time, and every new one would fault its pages in again. */
#define SPARE_BLOCKS 8

struct block {
	struct block *next;
	size_t len;
	size_t cap;
	char data[];
};

struct wr_sink {
	int fd;
	int wake_fd;
	pthread_t thread;
	bool started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* Guarded by mu. */
	struct block *head;
	struct block *tail;
	struct block *inflight; /* taken by the writer, not yet written */
	struct block *spare;
	int nspare;
	size_t queued;
	int err;
	bool closing;
	bool notify;
	bool err_told; /* a failed write wakes the loop once, asked or not */
	size_t threshold;
};

static void
free_blocks(struct block *b)
{
	while (b != NULL) {
		struct block *next = b->next;

		free(b);
		b = next;
	}
}

static int
write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n < 0 && errno == EAGAIN) {
			/* Someone else made the fd non-blocking: wait for room. */
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };

			poll(&pfd, 1, -1);
			continue;
		}
		if (n < 0) {
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Called with mu held. */
static void
maybe_notify(struct wr_sink *s)
{
	bool failed = s->err != 0 && !s->err_told;
	uint64_t one = 1;

	if ((s->notify && s->queued <= s->threshold) || failed) {
		s->notify = false;
		s->err_told = s->err != 0;
		if (write(s->wake_fd, &one, sizeof(one)) < 0) {
			/* The counter cannot overflow with one write per request. */
		}
	}
}

/* Called with mu held. */
static void
recycle(struct wr_sink *s, struct block *b)
{
	if (b->cap != BLOCK_SIZE || s->nspare >= SPARE_BLOCKS) {
		free(b);
		return;
	}
	b->next = s->spare;
	s->spare = b;
	s->nspare++;
}

/* Called with mu held. */
static struct block *
new_block(struct wr_sink *s, size_t max)
{
	struct block *b = s->spare;

	if (max <= BLOCK_SIZE && b != NULL) {
		s->spare = b->next;
		s->nspare--;
	} else {
		b = malloc(sizeof(*b) + (max > BLOCK_SIZE ? max : BLOCK_SIZE));
		if (b == NULL) {
			return NULL;
		}
		b->cap = max > BLOCK_SIZE ? max : BLOCK_SIZE;
	}
	b->next = NULL;
	b->len = 0;
	return b;
}

/*
 * The writer can be cancelled only inside write_all(), where it holds no
 * lock; whatever it had taken stays on s->inflight for close to free.
 */
static int
write_cancellable(struct wr_sink *s, const struct block *b)
{
	int rc;

	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	rc = write_all(s->fd, b->data, b->len);
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	return rc;
}

static void *
writer(void *arg)
{
	struct wr_sink *s = arg;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (s->head == NULL && !s->closing) {
			pthread_cond_wait(&s->cv, &s->mu);
		}
		if (s->head == NULL) {
			break;
		}
		s->inflight = s->head;
		s->head = s->tail = NULL;
		while (s->inflight != NULL) {
			struct block *b = s->inflight;
			int rc = 0;

			pthread_mutex_unlock(&s->mu);
			if (s->err == 0) {
				rc = write_cancellable(s, b);
			}
			pthread_mutex_lock(&s->mu);
			if (rc < 0 && s->err == 0) {
				s->err = rc;
			}
			s->inflight = b->next;
			s->queued -= b->len;
			recycle(s, b);
			maybe_notify(s);
		}
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

int
wr_sink_open(int fd, struct wr_sink **out)
{
	struct wr_sink *s = calloc(1, sizeof(*s));
	sigset_t all, old;
	int rc;

	*out = NULL;
	if (s == NULL) {
		return -ENOMEM;
	}
	s->fd = fd;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->wake_fd < 0) {
		rc = -errno;
		wr_sink_close(s, true);
		return rc;
	}
	/* Signals belong to the event loop's thread, never to the writer. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = -pthread_create(&s->thread, NULL, writer, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc < 0) {
		wr_sink_close(s, true);
		return rc;
	}
	s->started = true;
	*out = s;
	return 0;
}

void
wr_sink_close(struct wr_sink *s, bool abandon)
{
	if (s == NULL) {
		return;
	}
	if (s->started) {
		pthread_mutex_lock(&s->mu);
		s->closing = true;
		if (abandon) {
			free_blocks(s->head);
			s->head = s->tail = NULL;
		}
		pthread_cond_signal(&s->cv);
		pthread_mutex_unlock(&s->mu);
		if (abandon) {
			/* It may be stuck in write() to a reader that never reads. */
			pthread_cancel(s->thread);
		}
		pthread_join(s->thread, NULL);
	}
	free_blocks(s->inflight);
	free_blocks(s->head);
	free_blocks(s->spare);
	if (s->wake_fd >= 0) {
		close(s->wake_fd);
	}
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

char *
wr_sink_begin(struct wr_sink *s, size_t max)
{
	struct block *b;

	pthread_mutex_lock(&s->mu);
	b = s->tail;
	if (b == NULL || b->cap - b->len < max) {
		b = new_block(s, max);
		if (b == NULL) {
			pthread_mutex_unlock(&s->mu);
			return NULL;
		}
		if (s->tail != NULL) {
			s->tail->next = b;
		} else {
			s->head = b;
		}
		s->tail = b;
	}
	return b->data + b->len;
}

void
wr_sink_commit(struct wr_sink *s, size_t used)
{
	if (s->err != 0) {
		used = 0; /* the reader is gone: nothing more will be written */
	}
	s->tail->len += used;
	s->queued += used;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

size_t
wr_sink_queued(struct wr_sink *s)
{
	size_t n;

	pthread_mutex_lock(&s->mu);
	n = s->queued;
	pthread_mutex_unlock(&s->mu);
	return n;
}

int
wr_sink_error(struct wr_sink *s)
{
	int err;

	pthread_mutex_lock(&s->mu);
	err = s->err;
	pthread_mutex_unlock(&s->mu);
	return err;
}

int
wr_sink_wake_fd(const struct wr_sink *s)
{
	return s->wake_fd;
}

void
wr_sink_notify_below(struct wr_sink *s, size_t threshold)
{
	pthread_mutex_lock(&s->mu);
	s->notify = true;
	s->threshold = threshold;
	maybe_notify(s);
	pthread_mutex_unlock(&s->mu);
}

void
wr_sink_ack(struct wr_sink *s)
{
	uint64_t n;

	if (read(s->wake_fd, &n, sizeof(n)) < 0) {
		/* EAGAIN: nothing was pending. */
	}
}
