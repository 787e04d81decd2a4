/* SPDX-License-Identifier: MIT */
/*
 * jobdir: the job's private directory, TMP/worldrun-<jobid>-XXXXXX (mode
 * 0700), and its removal with whatever is in it: the sockets of ranks that
 * ended without world_stop(), and anything else a process of ours put
 * there. Removal never follows a symbolic link (a link is removed as a
 * link), never leaves the directory's file system, goes at most
 * WR_JOBDIR_DEPTH levels down, and does nothing unless the path still
 * names the directory that was made (its device and inode as recorded,
 * our owner, mode 0700). It does not know what the files are for.
 *
 * While its job lives, the directory is locked (flock, held by the agent
 * and its guardian): one whose holders were all killed at once (SIGKILL
 * of a Slurm step: nothing of the job was left to remove it) is
 * unlocked, and the next job directory made in the same TMP sweeps it.
 */
#ifndef WR_JOBDIR_H
#define WR_JOBDIR_H

#include <limits.h>
#include <sys/types.h>

/* Levels below the directory itself that removal descends into. */
#define WR_JOBDIR_DEPTH 8

struct wr_jobdir {
	char path[PATH_MAX]; /* "" if none */
	dev_t dev;
	ino_t ino;
	int lock;            /* an fd on it, locked while the job lives;
			      * 0: none (fds 0-2 are never it) */
};

/*
 * Make a new directory under @tmp (from the working directory if it is
 * relative: the path made is absolute) named after @jobid, lock it and
 * record what it is; first, remove our job directories in @tmp that no
 * live job holds (older than a few seconds). Returns 0 or -errno; on
 * failure @d->path is "".
 */
int wr_jobdir_make(struct wr_jobdir *d, const char *tmp, const char *jobid);

/*
 * Remove the directory and everything in it. Returns 0 (also when it is
 * already gone), -ESTALE if the path names another directory now (left
 * alone), or the first error met (what could be removed is removed).
 * Accepts NULL and a directory never made.
 */
int wr_jobdir_remove(const struct wr_jobdir *d);

/* Let go of the lock (after wr_jobdir_remove(), in the process that made
 * the directory). Accepts NULL and a directory never made. */
void wr_jobdir_release(struct wr_jobdir *d);

#endif
