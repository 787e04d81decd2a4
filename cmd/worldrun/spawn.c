/* SPDX-License-Identifier: MIT */
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int
wr_spawn_status(int stage, int err)
{
	if (stage != WR_SPAWN_EXEC) {
		return 125;
	}
	return err == ENOENT || err == ENOTDIR ? 127 : 126;
}

static void __attribute__((noreturn))
fail(const struct wr_spawn *sp, int stage)
{
	struct wr_spawn_failure f = { sp->rank, errno, stage };

	if (write(sp->err_fd, &f, sizeof(f)) < 0) {
		/* Nothing more to do: the exit status still tells. */
	}
	_exit(wr_spawn_status(stage, f.err));
}

static void
reset_signals(const struct wr_spawn *sp)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };

	for (int sig = 1; sig < NSIG; sig++) {
		if (sigismember(sp->nondefault, sig) == 1) {
			sigaction(sig, &dfl, NULL);
		}
	}
}

static void
close_others(void)
{
	/* Everything from 3 up closes at exec; err_fd stays usable until then. */
	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) < 0) {
		for (int fd = 3; fd < 65536; fd++) {
			fcntl(fd, F_SETFD, FD_CLOEXEC);
		}
	}
}

static void __attribute__((noreturn))
child(const struct wr_spawn *sp)
{
	sigset_t none;

	reset_signals(sp);
	if (setsid() < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) {
		fail(sp, WR_SPAWN_SETUP);
	}
	/* The guardian learns our group before our program runs. */
	if (sp->guard_slot != NULL) {
		__atomic_store_n(sp->guard_slot, getpid(), __ATOMIC_SEQ_CST);
	}
	/* worldrun may have died before PDEATHSIG was armed. */
	if (getppid() != sp->parent) {
		_exit(125);
	}
	for (int i = 0; i < 3; i++) {
		if (sp->fd[i] != i && dup2(sp->fd[i], i) < 0) {
			fail(sp, WR_SPAWN_SETUP);
		}
	}
	if (sp->nofile != NULL && setrlimit(RLIMIT_NOFILE, sp->nofile) < 0) {
		fail(sp, WR_SPAWN_SETUP);
	}
	close_others();
	if (sp->wdir != NULL && chdir(sp->wdir) < 0) {
		fail(sp, WR_SPAWN_CHDIR);
	}
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execve(sp->path, sp->argv, sp->envp);
	if (errno == ENOEXEC) {
		/* A script without "#!": run it with sh, as execvp() does. */
		execve(sp->sh_argv[0], sp->sh_argv, sp->envp);
	}
	fail(sp, WR_SPAWN_EXEC);
}

int
wr_spawn_start(const struct wr_spawn *sp, pid_t *pid)
{
	sigset_t all, old;
	pid_t p;
	int rc = 0;

	/*
	 * vfork: the child borrows our memory until it execs, so there are no
	 * page tables to copy and no copy-on-write faults afterwards; we wait
	 * for its exec, which costs less (see tests/bench). The child only
	 * makes system calls on its own stack and never returns here. No
	 * handler of ours may run in it: signals stay blocked until it has
	 * reset their dispositions.
	 */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	p = vfork();
	if (p == 0) {
		child(sp);
	}
	if (p < 0) {
		rc = -errno;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	*pid = p;
	return rc;
}
