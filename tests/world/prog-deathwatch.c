/* SPDX-License-Identifier: MIT */
/*
 * deathwatch: how a peer's death reaches a thread that waits where no
 * registry answer comes, as the collectives will on a futex or a
 * completion queue. Ranks 0 and 1 sleep (FUTEX_WAIT, one 60 s wait) on
 * libworld's deaths word (worldint.h); rank 2 dies by SIGKILL once all
 * three have read it. Each sleeper prints whether it was woken or timed
 * out, and what it knows of rank 2. world-peerdead.bats runs it.
 */
#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "worldint.h"

#define T 60000

/* Sleep while *@word is @seen, until @deadline (ms): "woken" or "timed out". */
static const char *
sleep_on(const uint32_t *word, uint32_t seen, int64_t deadline)
{
	while (__atomic_load_n(word, __ATOMIC_SEQ_CST) == seen) {
		int64_t left = deadline - wr_clock_ms();
		struct timespec ts = { left / 1000, (left % 1000) * 1000000 };

		if (left <= 0) {
			return "timed out";
		}
		if (syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0) < 0 &&
		    errno == ETIMEDOUT) {
			return "timed out";
		}
	}
	return "woken";
}

int
main(void)
{
	struct world *w = NULL;
	const uint32_t *word;
	const char *how;
	uint32_t seen;
	int rank, dead = 0, rc = world_open(&w);

	word = rc == 0 ? wr_world_deaths_word(w) : NULL;
	if (word == NULL || world_size(w) != 3) {
		fprintf(stderr, "usage: worldrun -n 3 prog-deathwatch (%s)\n",
			world_strerror(rc));
		world_abort(w);
		return 2;
	}
	rank = world_rank(w);
	seen = __atomic_load_n(word, __ATOMIC_SEQ_CST);
	rc = world_barrier(w, "read", T);
	if (rc < 0) {
		fprintf(stderr, "rank %d: barrier: %s\n", rank, world_strerror(rc));
		return 1;
	}
	if (rank == 2) {
		raise(SIGKILL);
	}
	how = sleep_on(word, seen, wr_clock_ms() + T);
	/* The word counts goodbyes too (a rank lost either way), and the
	 * other sleeper may have said its own by now: count the dead. */
	for (int r = 0; r < world_size(w); r++) {
		dead += wr_world_is_dead(w, r);
	}
	printf("rank %d: %s: %d death(s) known, rank 2 %s\n", rank, how, dead,
	       wr_world_is_dead(w, 2) ? "dead" : "not known dead");
	fflush(stdout);
	world_stop(w, 5000);
	return 0;
}
