/* SPDX-License-Identifier: MIT */
#include "shell.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "resolve.h"

extern char **environ;

struct child {
	char *const *argv;
	const char *path;
	int fd[3];
	int fail;
	pid_t parent;
	pid_t *guard_slot;
};

/* In the child: become the shell. Only async-signal-safe calls. */
static void
exec_shell(const struct child *c)
{
	sigset_t none;
	int fail = c->fail, e;

	sigemptyset(&none);
	for (int sig = 1; sig < NSIG; sig++) {
		signal(sig, SIG_DFL);
	}
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (setsid() < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 ||
	    getppid() != c->parent || dup2(c->fd[0], 0) < 0 || dup2(c->fd[1], 1) < 0 ||
	    dup2(c->fd[2], 2) < 0 || dup2(fail, 3) < 0) {
		goto out;
	}
	/* Fd 3 is the pipe from here on: what fails is said there. */
	fail = 3;
	if (fcntl(3, F_SETFD, FD_CLOEXEC) < 0) {
		goto out;
	}
	if (c->guard_slot != NULL) {
		__atomic_store_n(c->guard_slot, getpid(), __ATOMIC_SEQ_CST);
	}
	close_range(4, ~0U, 0);
	execve(c->path, c->argv, environ);
out:
	e = errno;
	if (write(fail, &e, sizeof(e)) < 0) {
		_exit(127);
	}
	_exit(127);
}

pid_t
wr_shell_start(char *const *argv, int fd0, int fd1, int fd2, pid_t *guard_slot)
{
	struct child c = { .argv = argv, .fd = { fd0, fd1, fd2 }, .parent = getpid(),
			   .guard_slot = guard_slot };
	int fail[2], e = 0;
	sigset_t all, old;
	char *path = NULL;
	pid_t pid;
	int rc;

	/* Found here: the child calls only what is async-signal-safe. */
	rc = wr_resolve(argv[0], getenv("PATH"), NULL, &path);
	if (rc < 0) {
		return rc;
	}
	if (pipe2(fail, O_CLOEXEC) < 0) {
		free(path);
		return -errno;
	}
	c.path = path;
	c.fail = fail[1];
	/*
	 * vfork, as spawn does for ranks: fork() copied our page tables and
	 * then took copy-on-write faults until each child's exec, about 2 ms
	 * a host with 64 of them starting on 2 cores. No handler of ours may
	 * run in the child: signals stay blocked until it has reset them.
	 */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pid = vfork();
	if (pid == 0) {
		exec_shell(&c);
	}
	e = pid < 0 ? errno : 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	free(path);
	close(fail[1]);
	/* Nothing to read means exec went through (the pipe closed on it). */
	while (pid > 0 && read(fail[0], &e, sizeof(e)) < 0 && errno == EINTR) {
	}
	close(fail[0]);
	if (pid > 0 && e != 0) {
		waitpid(pid, NULL, 0);
	}
	return e != 0 ? -e : pid;
}
