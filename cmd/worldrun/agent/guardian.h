/* SPDX-License-Identifier: MIT */
/*
 * guardian: a tiny process forked at start that outlives worldrun by a
 * moment. It ignores every signal and waits for EOF on a pipe from
 * worldrun; at EOF (worldrun exited, however it ended, SIGKILL included)
 * it kills every process group in its slot table and removes the job
 * directories it was given, with all they hold (see jobdir.h), the
 * job's entries in the runtime directory (see rundir.h) and its /dev/shm
 * entries (by prefix). The slot
 * table is memory shared with it, one slot per rank, which each rank
 * fills itself before it execs: no rank can run a line of its program
 * before the guardian knows its group. A process that left its rank's
 * group (setsid) is out of its reach.
 */
#ifndef WR_GUARDIAN_H
#define WR_GUARDIAN_H

#include <sys/types.h>

#include <stddef.h>

/* Slots beyond the ranks' a guardian has for ranks spawns start (a
 * rank spawned beyond them has none: see agent.h). */
#define WR_GUARD_SPARE 1024

struct wr_guardian {
	pid_t pid;
	int fd;       /* our end of the pipe; -1 once closed */
	pid_t *slots; /* shared with the guardian; 0: nothing to kill */
	size_t nslots;
};

/*
 * Fork the guardian with @nslots slots. Call before any thread starts.
 * Returns 0 or -errno.
 */
int wr_guardian_open(struct wr_guardian *g, size_t nslots);

/*
 * The address of slot @i, for a rank to store its process group in with
 * __atomic_store_n() before it execs; NULL if there is no such slot.
 */
pid_t *wr_guardian_slot(struct wr_guardian *g, size_t i);

/* Kill group @pgid when worldrun is gone. Returns 0, -EBADF or -ERANGE. */
int wr_guardian_watch(struct wr_guardian *g, size_t i, pid_t pgid);

/* Empty slot @i: its group is gone and the number may be reused. */
int wr_guardian_forget(struct wr_guardian *g, size_t i);

struct wr_jobdir;

/*
 * Remove job directory @d with everything in it when worldrun is gone, if
 * it is still the one made. Returns 0, -EBADF, -ENAMETOOLONG (a path that
 * does not fit in one message of PIPE_BUF bytes) or -errno.
 */
int wr_guardian_remove_dir(struct wr_guardian *g, const struct wr_jobdir *d);

struct wr_rundir;

/*
 * Remove the job's entry @jobid in runtime directory @d (see rundir.h)
 * when worldrun is gone, if the directory is still the one recorded.
 * Returns 0, -EBADF, -EINVAL, -ENAMETOOLONG or -errno.
 */
int wr_guardian_remove_entry(struct wr_guardian *g, const struct wr_rundir *d,
			     const char *jobid);

/* The longest prefix wr_guardian_remove_shm() takes. */
#define WR_GUARDIAN_SHM_MAX 64

/*
 * Remove every entry of /dev/shm whose name starts with @prefix when
 * worldrun is gone (the job's fabric segments and doorbells: SIGKILL and
 * abort() leave them). Returns 0, -EBADF, or -EINVAL for a prefix under
 * 4 or over WR_GUARDIAN_SHM_MAX bytes, or with a '/'.
 */
int wr_guardian_remove_shm(struct wr_guardian *g, const char *prefix);

/* The same for every /dev/shm name the ranks of job @jobid make: they
 * start with "wr-JOBID" (the fabric's segments, libworld's areas). */
int wr_guardian_remove_job_shm(struct wr_guardian *g, const char *jobid);

/*
 * Close the pipe and wait for the guardian to finish its cleanup.
 * Accepts a guardian that never opened.
 */
void wr_guardian_close(struct wr_guardian *g);

#endif
