/* SPDX-License-Identifier: MIT */
/*
 * procinfo: what /proc/PID/stat says of one process (state, CPU time,
 * threads), for the hang report's ranks that are not in a libworld wait.
 * It reads the one pid it is given: no children, no process group.
 */
#ifndef WR_PROCINFO_H
#define WR_PROCINFO_H

#include <sys/types.h>

struct wr_procinfo {
	char comm[64];  /* the kernel's name for it, without the parentheses */
	char state;     /* R, S, D, T, t, Z, X, I, ... as the kernel writes it */
	pid_t ppid;
	pid_t pgrp;
	long threads;
	double cpu_s;   /* utime + stime, of every thread of the process */
};

/*
 * Read /proc/@pid/stat into @out. Returns 0, -ESRCH when the process is
 * gone (a zombie is not gone: its state is Z), -EPROTO when the line is
 * not what the kernel writes, or another -errno from open() or read().
 */
int wr_procinfo_read(pid_t pid, struct wr_procinfo *out);

/*
 * Parse one /proc/PID/stat @line into @out. The name between the
 * parentheses may hold spaces and ')': the fields start after the last
 * ')'. Returns 0, or -EPROTO for a line that is not of that form.
 */
int wr_procinfo_parse(const char *line, struct wr_procinfo *out);

/* A word for a @state letter ("running", "sleeping", "zombie", ...);
 * "unknown" for a letter the kernel does not write. Static storage. */
const char *wr_procinfo_state_name(char state);

#endif
