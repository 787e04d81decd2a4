/* SPDX-License-Identifier: MIT */
/*
 * shell: start the program that reaches another host (ssh, an --rsh
 * command, srun) as a process group of its own, on fds the caller gives
 * as its 0, 1 and 2, killed when worldrun dies (PDEATHSIG) and, through
 * a guardian slot, however worldrun ends. It waits for nothing.
 */
#ifndef WR_SHELL_H
#define WR_SHELL_H

#include <sys/types.h>

/*
 * Start @argv (argv[0] found on PATH) with @fd0, @fd1 and @fd2 as its
 * standard fds and nothing else open; its pid goes to *@guard_slot (if
 * not NULL) before it runs. Returns its pid, or -errno when it could not
 * be found or executed (then nothing runs).
 */
pid_t wr_shell_start(char *const *argv, int fd0, int fd1, int fd2, pid_t *guard_slot);

#endif
