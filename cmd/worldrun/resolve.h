/* SPDX-License-Identifier: MIT */
/*
 * resolve: find the program once, before any rank starts, as a rank would
 * see it: relative paths and PATH entries count from the rank's working
 * directory, and PATH is the rank's. It checks; it does not execute.
 */
#ifndef WR_RESOLVE_H
#define WR_RESOLVE_H

/*
 * Find @prog as execvp() would, for a process in @wdir (NULL: ours) whose
 * PATH is @path (NULL: the system default). Returns 0 and an absolute path
 * in *out (free() it), -ENOENT if nothing was found (exit 127), -EACCES
 * if what was found cannot be executed (exit 126), or -ENOMEM.
 */
int wr_resolve(const char *prog, const char *path, const char *wdir,
	       char **out);

#endif
