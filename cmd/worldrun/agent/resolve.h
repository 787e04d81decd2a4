/* SPDX-License-Identifier: MIT */
/*
 * resolve: find the program once, before any rank starts, as a rank would
 * see it: relative paths and PATH entries count from the rank's working
 * directory, and PATH is the rank's. It checks; it does not execute.
 */
#ifndef WR_RESOLVE_H
#define WR_RESOLVE_H

#include <stddef.h>

/*
 * Find @prog as execvp() would, for a process in @wdir (NULL: ours) whose
 * PATH is @path (NULL: the system default). Returns 0 and an absolute path
 * in *out (free() it), -ENOENT if nothing was found (exit 127), -EISDIR
 * if it is a directory or -EACCES if it cannot be executed otherwise
 * (exit 126), or -ENOMEM.
 */
int wr_resolve(const char *prog, const char *path, const char *wdir,
	       char **out);

/*
 * Check the interpreter that a "#!" line of the file at @path names, as
 * the kernel would find it for a process in @wdir. Returns 0 when there
 * is no such line or its interpreter is an executable file; -ENOENT,
 * -EISDIR or -EACCES for an interpreter that is absent, a directory or
 * not executable, with its name in *interp (free() it); or -ENOMEM.
 */
int wr_resolve_interp(const char *path, const char *wdir, char **interp);

/* The longest reason wr_resolve_locate() gives. */
#define WR_RESOLVE_WHY_MAX 1024

/* What wr_resolve_locate() finds, each absolute and owned (free()). */
struct wr_resolved {
	char *path; /* the program */
	char *wdir; /* the ranks' working directory; NULL: ours */
};

/*
 * A job's program and working directory as its ranks on this host would
 * find them: @wdir (NULL: ours) checked and made absolute, then @argv0
 * found for a rank there whose PATH is @path, and the interpreter of a
 * "#!" script checked. Returns 0, or the exit status it calls for (125,
 * 126 for a program that cannot be executed, 127 for one not found) with
 * why in @why, without "worldrun: ". What it found is in @r either way.
 */
int wr_resolve_locate(struct wr_resolved *r, const char *argv0, const char *wdir,
		      const char *path, char *why, size_t size);

#endif
