/* SPDX-License-Identifier: MIT */
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CHILD_STACK (64 << 10)

/*
 * ThreadSanitizer turns vfork into fork, but not a clone that shares our
 * memory: its interceptors would run in the child and could wait there
 * for a lock that another of our threads holds. Under it, no slots.
 */
#ifdef __SANITIZE_THREAD__
#define UNDER_TSAN 1
#else
#define UNDER_TSAN 0
#endif

/* One start's borrowed fds (its 0, 1, 2, the failure pipe and its PMI
 * connection), and the stack its child runs on until exec. */
#define SLOT_FDS 5
struct slotset {
	int fd[SLOT_FDS];
	int busy;
	char *stack;
};

struct wr_spawn_slots {
	int placeholder; /* /dev/null: what a slot holds between starts */
	int below;       /* every slot's number is below this */
	int n;
	struct slotset sets[];
};

/*
 * The child's functions are not instrumented by AddressSanitizer: through
 * slots the child runs on a stack of its own, which ASan does not know,
 * and its bookkeeping before a call that does not return would fail.
 */
static void __attribute__((noreturn, no_sanitize_address))
fail(const struct wr_spawn *sp, int stage)
{
	struct wr_spawn_failure f = { sp->rank, errno, stage };

	if (write(sp->err_fd, &f, sizeof(f)) < 0) {
		/* Nothing more to do: the exit status still tells. */
	}
	_exit(wr_wire_start_status(stage, f.err));
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

/*
 * @below > 0: the child shares our fd table (CLONE_FILES) until it makes
 * its own here, a copy of the fds below @below only: its slots and the
 * few fds worldrun opened first, not the two of every rank started so far.
 */
/*
 * The PMI connection at WR_SPAWN_PMI_FD, where the failure pipe may be:
 * that one moves up first (in @sp, the child's own copy).
 */
static void __attribute__((no_sanitize_address))
place_pmi(struct wr_spawn *sp)
{
	if (sp->err_fd == WR_SPAWN_PMI_FD) {
		sp->err_fd = fcntl(WR_SPAWN_PMI_FD, F_DUPFD_CLOEXEC, WR_SPAWN_PMI_FD + 1);
		if (sp->err_fd < 0) {
			_exit(125);
		}
	}
	if (sp->pmi_fd != WR_SPAWN_PMI_FD && dup2(sp->pmi_fd, WR_SPAWN_PMI_FD) < 0) {
		fail(sp, WR_SPAWN_SETUP);
	}
}

static void __attribute__((noreturn, no_sanitize_address))
child(const struct wr_spawn *orig, int below)
{
	struct wr_spawn me = *orig, *sp = &me;
	sigset_t none;

	if (below > 0 && syscall(SYS_close_range, (unsigned)below, ~0U,
				 CLOSE_RANGE_UNSHARE) < 0 && unshare(CLONE_FILES) < 0) {
		fail(sp, WR_SPAWN_SETUP);
	}
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
	if (sp->pmi) {
		place_pmi(sp);
	}
	if (sp->nofile != NULL && setrlimit(RLIMIT_NOFILE, sp->nofile) < 0) {
		fail(sp, WR_SPAWN_SETUP);
	}
	if (sp->cpus != NULL && sched_setaffinity(0, sizeof(*sp->cpus), sp->cpus) < 0) {
		fail(sp, WR_SPAWN_SETUP);
	}
	close_others();
	if (sp->pmi && fcntl(WR_SPAWN_PMI_FD, F_SETFD, 0) < 0) {
		fail(sp, WR_SPAWN_SETUP);
	}
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
		child(sp, 0);
	}
	if (p < 0) {
		rc = -errno;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	*pid = p;
	return rc;
}

int
wr_spawn_slots_open(int sets, struct wr_spawn_slots **out)
{
	struct wr_spawn_slots *s = calloc(1, sizeof(*s) + (size_t)sets * sizeof(struct slotset));
	int rc = 0;

	*out = NULL;
	if (s == NULL || UNDER_TSAN) {
		free(s);
		return s == NULL ? -ENOMEM : -ENOTSUP;
	}
	s->placeholder = open("/dev/null", O_RDONLY | O_CLOEXEC);
	rc = s->placeholder < 0 ? -errno : 0;
	for (; rc == 0 && s->n < sets; s->n++) {
		s->sets[s->n].stack = mmap(NULL, CHILD_STACK, PROT_READ | PROT_WRITE,
					   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
		if (s->sets[s->n].stack == MAP_FAILED) {
			s->sets[s->n].stack = NULL;
			rc = -errno;
		}
		for (int i = 0; rc == 0 && i < SLOT_FDS; i++) {
			/* The lowest free number each time. */
			int fd = fcntl(s->placeholder, F_DUPFD_CLOEXEC, 0);

			s->sets[s->n].fd[i] = fd;
			if (fd < 0) {
				rc = -errno;
			}
			s->below = fd >= s->below ? fd + 1 : s->below;
		}
	}
	if (rc < 0) {
		wr_spawn_slots_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

void
wr_spawn_slots_close(struct wr_spawn_slots *s)
{
	if (s == NULL) {
		return;
	}
	for (int k = 0; k < s->n; k++) {
		for (int i = 0; i < SLOT_FDS; i++) {
			if (s->sets[k].fd[i] > 0) {
				close(s->sets[k].fd[i]);
			}
		}
		if (s->sets[k].stack != NULL) {
			munmap(s->sets[k].stack, CHILD_STACK);
		}
	}
	if (s->placeholder >= 0) {
		close(s->placeholder);
	}
	free(s);
}

struct clone_arg {
	const struct wr_spawn *sp;
	int below;
};

static int __attribute__((no_sanitize_address))
clone_child(void *arg)
{
	const struct clone_arg *ca = arg;

	child(ca->sp, ca->below);
}

/* A free set of @s, taken; NULL when every set is in use. */
static struct slotset *
take_set(struct wr_spawn_slots *s)
{
	for (int k = 0; k < s->n; k++) {
		int free_ = 0;

		if (__atomic_compare_exchange_n(&s->sets[k].busy, &free_, 1, false,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			return &s->sets[k];
		}
	}
	return NULL;
}

/*
 * As wr_spawn_start(), with the rank's fds moved into a set of slots
 * first; the child runs on the set's stack while we wait for its exec
 * (CLONE_VFORK), as in posix_spawn().
 */
static int
start_in_slots(const struct wr_spawn *sp, struct wr_spawn_slots *s,
	       struct slotset *set, pid_t *pid)
{
	const int mine[SLOT_FDS] = { sp->fd[0], sp->fd[1], sp->fd[2], sp->err_fd,
				     sp->pmi ? sp->pmi_fd : s->placeholder };
	struct wr_spawn csp = *sp;
	struct clone_arg ca = { &csp, s->below };
	pid_t p = -1;
	int rc = 0;

	for (int i = 0; i < SLOT_FDS && rc == 0; i++) {
		rc = dup3(mine[i], set->fd[i], O_CLOEXEC) < 0 ? -errno : 0;
	}
	memcpy(csp.fd, set->fd, sizeof(csp.fd));
	csp.err_fd = set->fd[3];
	csp.pmi_fd = set->fd[4];
	if (rc == 0) {
		p = clone(clone_child, set->stack + CHILD_STACK,
			  CLONE_VM | CLONE_VFORK | CLONE_FILES | SIGCHLD, &ca);
		rc = p < 0 ? -errno : 0;
	}
	/* The rank's fds leave the slots: only the caller's copies stay. */
	for (int i = 0; i < SLOT_FDS; i++) {
		dup3(s->placeholder, set->fd[i], O_CLOEXEC);
	}
	*pid = p;
	return rc;
}

int
wr_spawn_start_slots(const struct wr_spawn *sp, struct wr_spawn_slots *s, pid_t *pid)
{
	struct slotset *set = s != NULL ? take_set(s) : NULL;
	sigset_t all, old;
	int rc;

	if (set == NULL) {
		return wr_spawn_start(sp, pid);
	}
	/* As in wr_spawn_start(): no handler of ours may run in the child. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = start_in_slots(sp, s, set, pid);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	__atomic_store_n(&set->busy, 0, __ATOMIC_RELEASE);
	return rc;
}
