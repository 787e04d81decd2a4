/* SPDX-License-Identifier: MIT */
/*
 * spawn: start one rank (vfork, or clone with a shared fd table, then
 * exec). The child becomes a session leader with a parent-death signal,
 * default signal dispositions and mask, the three fds it is given and no
 * other, then execs. It calls only
 * async-signal-safe functions and never returns into worldrun. A failure
 * before exec is written as a struct wr_spawn_failure to err_fd.
 */
#ifndef WR_SPAWN_H
#define WR_SPAWN_H

#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "wire.h" /* enum wr_spawn_stage */

/* What a child that could not exec reports; small enough to be atomic. */
struct wr_spawn_failure {
	int32_t rank;
	int32_t err; /* errno */
	int32_t stage;
};

/* Where a rank finds its PMI connection (PMI_FD), when it has one. */
#define WR_SPAWN_PMI_FD 3

struct wr_spawn {
	int rank;
	const char *path;      /* resolved program */
	char *const *argv;
	char *const *sh_argv;  /* {"/bin/sh", path, args..., NULL}: for ENOEXEC */
	char *const *envp;
	const char *wdir;      /* NULL: stay in ours */
	int fd[3];             /* become the child's 0, 1 and 2 */
	bool pmi;              /* pmi_fd becomes the child's WR_SPAWN_PMI_FD */
	int pmi_fd;
	int err_fd;            /* close-on-exec pipe for wr_spawn_failure */
	const sigset_t *nondefault; /* signals whose disposition to reset */
	const struct rlimit *nofile; /* restored in the child; NULL: keep */
	const cpu_set_t *cpus; /* the child's CPUs (bind.h); NULL: ours */
	pid_t *guard_slot;     /* the child stores its process group here */
	pid_t parent;
};

/* Start one rank. Returns 0 and its pid in *pid, or -errno of fork(). */
int wr_spawn_start(const struct wr_spawn *sp, pid_t *pid);

/*
 * Slots: sets of low fd numbers that starts borrow, one set per start
 * under way. A child started through them shares worldrun's fd table
 * until it makes its own, a copy of only the fds below the slots (those
 * worldrun opened first). vfork copies the whole table instead, two fds
 * for every rank started so far, and the child then closes each one:
 * a cost that grows with the square of the ranks. Open them early, while
 * fd numbers are low. Returns 0 or -errno (-ENOTSUP when built with
 * ThreadSanitizer: then starts use vfork).
 */
struct wr_spawn_slots;
int wr_spawn_slots_open(int sets, struct wr_spawn_slots **out);

/* Accepts NULL. Only once no start is under way. */
void wr_spawn_slots_close(struct wr_spawn_slots *s);

/* wr_spawn_start() through a free set of @s (thread-safe); without one
 * (or with @s NULL), wr_spawn_start() itself. */
int wr_spawn_start_slots(const struct wr_spawn *sp, struct wr_spawn_slots *s,
			 pid_t *pid);

#endif
