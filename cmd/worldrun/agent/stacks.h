/* SPDX-License-Identifier: MIT */
/*
 * stacks: one process's stack as text, from eu-stack or else gdb, for the
 * hang report's --timeout-stacks: worldrun takes its own host's, and an
 * agent those of its host's ranks (agent-stacks.c). It runs the tool and
 * bounds it in time and output; it does not read or symbolize stacks
 * itself.
 */
#ifndef WR_STACKS_H
#define WR_STACKS_H

#include <sys/types.h>

/* How long each stack may take: a stopped or traced process can hang gdb. */
#define WR_STACKS_TIMEOUT_MS 5000

/* What a stack's text is cut to; "... (cut)" follows when it was. */
#define WR_STACKS_MAX (64 << 10)

/*
 * The tool wr_stacks_capture() would run now: "eu-stack" or "gdb", the
 * first found on PATH (on /usr/bin:/bin without PATH), or NULL when
 * neither is installed. Static storage.
 */
const char *wr_stacks_tool(void);

/*
 * Run the tool on @pid for at most @timeout_ms and take what it writes
 * (stdout and stderr together, up to WR_STACKS_MAX). Returns 0 with the
 * stacks; -ENOENT when no tool is installed; -ESRCH when @pid is gone;
 * -ETIMEDOUT when the tool ran out of time (killed, with its whole
 * process group); -EPERM when it was refused ptrace; -EIO when it failed
 * otherwise or wrote no frame; -ENOMEM; another -errno when it could not
 * be started. In every case *text is NULL or the tool's output so far,
 * a string the caller free()s: with an error, the tool's own message.
 * The tool is always reaped before this returns, and no other child's
 * status is taken, nor is a SIGCHLD sent (see stacks.c). It blocks for
 * up to @timeout_ms: off the event loop's thread, or with a short one.
 */
int wr_stacks_capture(pid_t pid, int timeout_ms, char **text);

#endif
