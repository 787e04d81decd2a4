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
};

/*
 * Make a new directory under @tmp (from the working directory if it is
 * relative: the path made is absolute) named after @jobid, and record
 * what it is. Returns 0 or -errno; on failure @d->path is "".
 */
int wr_jobdir_make(struct wr_jobdir *d, const char *tmp, const char *jobid);

/*
 * Remove the directory and everything in it. Returns 0 (also when it is
 * already gone), -ESTALE if the path names another directory now (left
 * alone), or the first error met (what could be removed is removed).
 * Accepts NULL and a directory never made.
 */
int wr_jobdir_remove(const struct wr_jobdir *d);

#endif
