/* SPDX-License-Identifier: MIT */
#include "spin.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

/* Below this a window is not worth a turn of the loop: it closes. */
#define MIN_WINDOW_NS 1000

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int
wr_spin_parse(const char *text, int *max_us)
{
	char *end = NULL;
	long n;

	*max_us = WR_SPIN_US_DEFAULT;
	if (text == NULL) {
		return 0;
	}
	errno = 0;
	n = strtol(text, &end, 10);
	if (text[0] < '0' || text[0] > '9' || errno != 0 || *end != '\0' ||
	    n > WR_SPIN_US_MAX) {
		return -EINVAL;
	}
	*max_us = (int)n;
	return 0;
}

void
wr_spin_init(struct wr_spin *s, int max_us)
{
	s->max_ns = (int64_t)max_us * 1000;
	s->window_ns = s->max_ns;
}

bool
wr_spin_wait(struct wr_spin *s, bool (*ready)(void *), void *arg,
	     int64_t *start)
{
	int64_t window = __atomic_load_n(&s->window_ns, __ATOMIC_RELAXED);
	int64_t t0 = s->max_ns > 0 ? now_ns() : 0;

	*start = t0;
	if (window <= 0) {
		return ready(arg);
	}
	for (;;) {
		if (ready(arg)) {
			return true;
		}
		if (now_ns() - t0 >= window) {
			return false;
		}
		sched_yield();
	}
}

void
wr_spin_blocked(struct wr_spin *s, int64_t start)
{
	int64_t window = __atomic_load_n(&s->window_ns, __ATOMIC_RELAXED);

	if (s->max_ns == 0) {
		return;
	}
	if (now_ns() - start <= s->max_ns) {
		window = s->max_ns;
	} else {
		window = window / 2 < MIN_WINDOW_NS ? 0 : window / 2;
	}
	__atomic_store_n(&s->window_ns, window, __ATOMIC_RELAXED);
}

bool
wr_spin_word_moved(void *word_ptr)
{
	const struct wr_spin_word *w = word_ptr;

	return __atomic_load_n(w->word, __ATOMIC_ACQUIRE) != w->seen;
}

bool
wr_spin_readable(void *fd_ptr)
{
	struct pollfd p = { .fd = *(int *)fd_ptr, .events = POLLIN };

	return poll(&p, 1, 0) != 0;
}
