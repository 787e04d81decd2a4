/* SPDX-License-Identifier: MIT */
/*
 * guardian: a tiny process forked at start that outlives worldrun by a
 * moment. It ignores every signal and waits for EOF on a pipe from
 * worldrun; at EOF (worldrun exited, however it ended, SIGKILL included)
 * it kills every process group it was told about and removes the paths
 * it was given. A process that left its rank's group (setsid) is out of
 * its reach.
 */
#ifndef WR_GUARDIAN_H
#define WR_GUARDIAN_H

#include <sys/types.h>

struct wr_guardian {
	pid_t pid;
	int fd; /* our end of the pipe; -1 once closed */
};

/* Fork the guardian. Call before any thread starts. Returns 0 or -errno. */
int wr_guardian_open(struct wr_guardian *g);

/* Kill group @pgid when worldrun is gone. */
int wr_guardian_watch(struct wr_guardian *g, pid_t pgid);

/* Forget @pgid: its group is empty and the number may be reused. */
int wr_guardian_forget(struct wr_guardian *g, pid_t pgid);

/* Remove @path (a file, or an empty directory) when worldrun is gone. */
int wr_guardian_remove(struct wr_guardian *g, const char *path);

/*
 * Close the pipe and wait for the guardian to finish its cleanup.
 * Accepts a guardian that never opened.
 */
void wr_guardian_close(struct wr_guardian *g);

#endif
