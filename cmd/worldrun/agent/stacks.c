/* SPDX-License-Identifier: MIT */
#include "stacks.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "procinfo.h"
#include "resolve.h"

/*
 * How the tool is started, and why. worldrun's agent reaps with
 * wait4(-1, WNOHANG) on SIGCHLD, and a waitpid() of ours could not keep
 * that from taking the tool's status first. A "clone" child, made with
 * no exit signal, is one that wait4() without __WCLONE or __WALL never
 * reports and whose end sends no SIGCHLD; but execve() makes it an
 * ordinary child again (the kernel resets its exit signal to SIGCHLD).
 * So our clone child never execs: it runs the tool as its own child,
 * waits for it, and exits with a code that says how the tool ended
 * (RAN_*). We alone reap it, by its pid with __WCLONE, which takes no
 * other child's status either. It leads a process group of its own that
 * the tool is in, and since it is not reaped before we kill that group,
 * the group's id cannot have passed to anyone else.
 */
/* Room for the sanitizers' interceptors too, which need far more. */
#define CHILD_STACK (1 << 20)
#define CUT_NOTE "... (cut)\n"

/* The clone child's exit codes; Linux's errno values are below 134. */
enum { RAN_OK, RAN_FAILED, RAN_SIGNALED, RAN_ERRNO /* + the errno */ };

struct tool {
	char *path;
	char *argv[9];
	char pid[16];
	int null_fd, out_fd;
};

struct output {
	char *buf;
	size_t len;
	bool cut;
};

static const char *const tool_names[] = { "eu-stack", "gdb" };

static int
find_tool(char **path)
{
	for (size_t i = 0; i < sizeof(tool_names) / sizeof(tool_names[0]); i++) {
		if (wr_resolve(tool_names[i], getenv("PATH"), NULL, path) == 0) {
			return (int)i;
		}
	}
	return -ENOENT;
}

const char *
wr_stacks_tool(void)
{
	char *path = NULL;
	int i = find_tool(&path);

	free(path);
	return i >= 0 ? tool_names[i] : NULL;
}

static void
fill_argv(struct tool *t, int which, pid_t pid)
{
	static const char *const eu[] = { "eu-stack", "-p", NULL };
	static const char *const gdb[] = { "gdb", "-batch", "-nx", "-q", "-p",
					   NULL, "-ex", "thread apply all bt" };
	const char *const *v = which == 0 ? eu : gdb;
	size_t n = which == 0 ? 3 : 8;

	snprintf(t->pid, sizeof(t->pid), "%d", (int)pid);
	for (size_t i = 0; i < n; i++) {
		t->argv[i] = (char *)(v[i] != NULL ? v[i] : t->pid);
	}
	t->argv[n] = NULL;
}

/*
 * The clone child runs on a stack of its own, which AddressSanitizer
 * does not know: its functions are not instrumented. It is a copy of one
 * thread of ours, so it makes system calls only, and never returns into
 * our code.
 */

/* dup2() that also clears close-on-exec when @from is @to already. */
static int __attribute__((no_sanitize_address))
move_fd(int from, int to)
{
	if (from == to) {
		return fcntl(to, F_SETFD, 0);
	}
	return dup2(from, to);
}

static int __attribute__((no_sanitize_address))
prepare_child(const struct tool *t)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t none;

	/* Our handlers and our ignored SIGPIPE are not the tool's. */
	for (int sig = 1; sig < NSIG; sig++) {
		sigaction(sig, &dfl, NULL);
	}
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (setpgid(0, 0) < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 ||
	    move_fd(t->null_fd, 0) < 0 || move_fd(t->out_fd, 1) < 0 ||
	    move_fd(t->out_fd, 2) < 0) {
		return -1;
	}
	if (syscall(SYS_close_range, 3U, ~0U, 0) < 0) {
		for (int fd = 3; fd < 65536; fd++) {
			close(fd);
		}
	}
	return 0;
}

static int __attribute__((noreturn, no_sanitize_address))
tool_child(void *arg)
{
	const struct tool *t = arg;
	int status, exec_err = 0, errp[2];
	pid_t p;

	/* The tool's exec error comes back through a pipe its exec closes. */
	if (prepare_child(t) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		_exit(RAN_ERRNO + errno);
	}
	/*
	 * fork, not vfork: under AddressSanitizer a vfork child on this
	 * clone's stack corrupts the parent it shares memory with.
	 */
	p = fork();
	if (p == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execv(t->path, t->argv);
		exec_err = errno;
		if (write(errp[1], &exec_err, sizeof(exec_err)) < 0) {
			_exit(126);
		}
		_exit(127);
	}
	if (p < 0) {
		_exit(RAN_ERRNO + errno);
	}
	close(errp[1]);
	while (waitpid(p, &status, 0) < 0) {
		if (errno != EINTR) {
			_exit(RAN_ERRNO + errno);
		}
	}
	if (read(errp[0], &exec_err, sizeof(exec_err)) == sizeof(exec_err) &&
	    exec_err != 0) {
		_exit(RAN_ERRNO + exec_err);
	}
	_exit(WIFSIGNALED(status) ? RAN_SIGNALED :
	      WEXITSTATUS(status) == 0 ? RAN_OK : RAN_FAILED);
}

static int
start_tool(struct tool *t, pid_t *child)
{
	char *stack = mmap(NULL, CHILD_STACK, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	sigset_t all, old;
	pid_t p;
	int rc;

	if (stack == MAP_FAILED) {
		return -ENOMEM;
	}
	/* No handler of ours may run in the child (libevent's would write to
	 * the loop's socket, which the child holds too) before it resets them. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	/* No CLONE_VM: a copy of our memory, as fork() makes, and the stack
	 * is the child's copy: ours can go. No exit signal: a clone child. */
	p = clone(tool_child, stack + CHILD_STACK, 0, t);
	rc = p < 0 ? -errno : 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	munmap(stack, CHILD_STACK);
	*child = p;
	return rc;
}

/* Keep what fits, drain the rest: a tool blocked on a full pipe would
 * only end at the timeout. */
static void
take(struct output *o, const char *buf, size_t n)
{
	size_t room = WR_STACKS_MAX - o->len;

	if (n > room) {
		n = room;
		o->cut = true;
	}
	memcpy(o->buf + o->len, buf, n);
	o->len += n;
}

/* Read @fd to its end: 0, or -ETIMEDOUT at @deadline (ms), or -errno. */
static int
read_all(int fd, struct output *o, long long deadline)
{
	char buf[4096];

	for (;;) {
		struct pollfd pfd = { fd, POLLIN, 0 };
		long long left = deadline - wr_clock_ms();
		int n = left > 0 ? poll(&pfd, 1, (int)left) : 0;
		ssize_t got;

		if (n == 0) {
			return -ETIMEDOUT;
		}
		if (n < 0) {
			if (errno == EINTR) {
				continue;
			}
			return -errno;
		}
		got = read(fd, buf, sizeof(buf));
		if (got == 0) {
			return 0;
		}
		if (got < 0 && errno != EINTR && errno != EAGAIN) {
			return -errno;
		}
		if (got > 0) {
			take(o, buf, (size_t)got);
		}
	}
}

/*
 * Wait for @child to have exited, without reaping it (WNOWAIT): its
 * output can end before it does. 0, or -ETIMEDOUT at @deadline.
 */
static int
await_exit(pid_t child, long long deadline)
{
	const struct timespec nap = { 0, 1000 * 1000 };

	for (;;) {
		siginfo_t si = { .si_pid = 0 };

		if (waitid(P_PID, (id_t)child, &si,
			   WEXITED | WNOHANG | WNOWAIT | __WCLONE) == 0 && si.si_pid == child) {
			return 0;
		}
		if (wr_clock_ms() >= deadline) {
			return -ETIMEDOUT;
		}
		nanosleep(&nap, NULL);
	}
}

/*
 * Kill what is left of the tool's group, then reap the tool. Its pid is
 * not reaped yet, so the group's id cannot belong to anyone else.
 */
static int
end_tool(pid_t child)
{
	int status = -1; /* not an exit: should the wait fail, a failure */

	kill(-child, SIGKILL);
	while (waitpid(child, &status, __WCLONE) < 0 && errno == EINTR) {
		continue;
	}
	return status;
}

/* The tools exit 0 after some failures (gdb: "ptrace: Operation not
 * permitted."), so their text decides too: a stack has a frame "#0". */
static int
verdict(int rc, int status, const char *text)
{
	int ran = WIFEXITED(status) ? WEXITSTATUS(status) : RAN_SIGNALED;

	if (rc != 0) {
		return rc;
	}
	if (ran >= RAN_ERRNO) {
		return -(ran - RAN_ERRNO);
	}
	if (strstr(text, "not permitted") != NULL ||
	    strstr(text, "Permission denied") != NULL) {
		return -EPERM;
	}
	if (ran != RAN_OK || strstr(text, "#0") == NULL) {
		return -EIO;
	}
	return 0;
}

/*
 * A tool killed while it held @pid in a ptrace stop can leave it stopped
 * by the SIGSTOP of its attach: continue it, unless it was stopped before.
 */
static void
resume_if_left_stopped(pid_t pid, char before)
{
	struct wr_procinfo pi;

	if (before != 'T' && before != 't' && wr_procinfo_read(pid, &pi) == 0 &&
	    pi.state == 'T') {
		kill(pid, SIGCONT);
	}
}

static int
run_tool(struct tool *t, struct output *o, int timeout_ms, int read_fd)
{
	long long deadline = wr_clock_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	pid_t child = -1;
	int rc, status;

	rc = start_tool(t, &child);
	close(t->out_fd);
	t->out_fd = -1;
	if (rc < 0) {
		return rc;
	}
	rc = read_all(read_fd, o, deadline);
	if (rc == 0) {
		rc = await_exit(child, deadline);
	}
	status = end_tool(child);
	if (o->cut) {
		memcpy(o->buf + o->len, CUT_NOTE, sizeof(CUT_NOTE));
	} else {
		o->buf[o->len] = '\0';
	}
	return verdict(rc, status, o->buf);
}

/* The tool's stdin (/dev/null) and its stdout and stderr (@p[1]). */
static int
open_fds(struct tool *t, int p[2])
{
	t->null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (t->null_fd < 0 || pipe2(p, O_CLOEXEC) < 0) {
		return -errno;
	}
	t->out_fd = p[1];
	return 0;
}

int
wr_stacks_capture(pid_t pid, int timeout_ms, char **text)
{
	struct tool t = { .null_fd = -1, .out_fd = -1 };
	struct output o = { NULL, 0, false };
	struct wr_procinfo before = { .state = '?' };
	int which, rc, p[2] = { -1, -1 };

	*text = NULL;
	which = find_tool(&t.path);
	if (which < 0) {
		return which;
	}
	rc = wr_procinfo_read(pid, &before);
	if (rc == 0) {
		o.buf = malloc(WR_STACKS_MAX + sizeof(CUT_NOTE));
		rc = o.buf != NULL ? open_fds(&t, p) : -ENOMEM;
	}
	if (o.buf != NULL) {
		o.buf[0] = '\0';
	}
	if (rc == 0) {
		fill_argv(&t, which, pid);
		rc = run_tool(&t, &o, timeout_ms, p[0]);
		*text = o.buf;
		o.buf = NULL;
		if (rc == -ETIMEDOUT) {
			resume_if_left_stopped(pid, before.state);
		}
	}
	if (p[0] >= 0) {
		close(p[0]);
	}
	if (t.null_fd >= 0) {
		close(t.null_fd);
	}
	free(o.buf);
	free(t.path);
	return rc;
}
