/* SPDX-License-Identifier: MIT */
/*
 * spin: how a thread of ours waits for an answer that may be microseconds
 * away. It checks, hands its CPU to anyone else who can run (sched_yield),
 * and checks again, for at most a window of time, and only then blocks.
 * An answer from another CPU then finds this one awake: putting a CPU to
 * sleep and waking it costs tens of microseconds in a VM. An answer from a
 * thread on this CPU gets the CPU at the first yield. The window adapts, as
 * KVM's halt polling does: a wait that blocked but ended within the longest
 * window opens it fully, a longer one halves it, so threads whose waits are
 * long (many ranks to a CPU, big transfers) soon stop spinning.
 */
#ifndef WR_SPIN_H
#define WR_SPIN_H

#include <stdbool.h>
#include <stdint.h>

/* The longest window when WORLD_SPIN_US does not say, in microseconds. */
#define WR_SPIN_US_DEFAULT 100
/* The most WORLD_SPIN_US may say: 10 ms. */
#define WR_SPIN_US_MAX 10000

struct wr_spin {
	int64_t max_ns; /* the longest window; 0: never spin */
	/* The next wait's window. Threads sharing a wr_spin read and write
	 * it without a lock: it is a hint, and any value in range is safe. */
	int64_t window_ns;
};

/* WORLD_SPIN_US's text (NULL: unset) as microseconds in *@max_us: 0, or
 * -EINVAL when it is not a whole number from 0 to WR_SPIN_US_MAX, and
 * then *@max_us is the default, as it is for NULL. */
int wr_spin_parse(const char *text, int *max_us);

/* A wait whose window is at most @max_us (0: it never spins). */
void wr_spin_init(struct wr_spin *s, int max_us);

/*
 * Call @ready(@arg) until it returns true (then returns true) or the
 * window has passed (then false: block, and call wr_spin_blocked() once
 * the wait is over). *@start gets the time the wait began.
 */
bool wr_spin_wait(struct wr_spin *s, bool (*ready)(void *), void *arg,
		  int64_t *start);

/* The wait that began at @start blocked, and is over: adapt the window. */
void wr_spin_blocked(struct wr_spin *s, int64_t start);

/* A futex word and the value a waiter read from it. */
struct wr_spin_word {
	const uint32_t *word;
	uint32_t seen;
};

/* A @ready for wr_spin_wait(): @word_ptr (a struct wr_spin_word *) no
 * longer holds the value seen. */
bool wr_spin_word_moved(void *word_ptr);

/* A @ready for wr_spin_wait(): @fd_ptr (an int *) has something to read,
 * or an error or hang-up to report (poll(2), no waiting). */
bool wr_spin_readable(void *fd_ptr);

#endif
