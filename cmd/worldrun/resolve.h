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

#endif
