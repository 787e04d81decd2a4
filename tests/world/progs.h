/* SPDX-License-Identifier: MIT */
/*
 * progs.h: what the prog-*.c programs that reach inside libworld
 * (worldint.h) share, header only: a plain pause, and the number of waits
 * the job's registry holds, as its stats say.
 */
#ifndef WR_PROGS_H
#define WR_PROGS_H

#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "regcall.h"
#include "worldint.h"

/* Die by SIGKILL, as a crash or the OOM killer would, without a core. */
static inline void __attribute__((noreturn))
die(void)
{
	struct rlimit none = { 0, 0 };

	setrlimit(RLIMIT_CORE, &none);
	raise(SIGKILL);
	abort();
}

static inline void
pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/*
 * A handler that answers only after 60 s (the job ends before), counting
 * the calls that came in, in the int that @ctx points to.
 */
static inline int
hold_call(void *ctx, const json_t *args, const void *blob, size_t len,
	  struct world_reply *reply)
{
	__atomic_add_fetch((int *)ctx, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < 600; i++) {
		pause_ms(100);
	}
	return world_reply_result_new(reply, json_string("too late"));
}

/* The waits the registry holds now (its stats), or a negative code. */
static inline json_int_t
pending(struct world *w)
{
	json_int_t n = -1;
	json_t *st = NULL;
	int rc = wr_regcall_run(w, json_pack("{s:s}", "op", "stats"), NULL, 0, 0,
				&st, NULL, NULL);

	if (rc == 0 && json_unpack(st, "{s:I}", "pending", &n) < 0) {
		rc = WORLD_EPROTO;
	}
	json_decref(st);
	return rc < 0 ? rc : n;
}

#endif
