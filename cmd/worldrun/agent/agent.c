/* SPDX-License-Identifier: MIT */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "clock.h"
#include "fanout.h"
#include "pmisrv.h"
#include "pool.h"
#include "spawn.h"
#include "stream.h"

#define POOL_MIN_RANKS 32

/* A piece of output goes to the launcher in one event. */
_Static_assert(WR_LINE_MAX <= WR_WIRE_DATA_MAX, "a line piece fits an event");

struct proc;

struct ostream {
	struct proc *p;
	int id; /* enum wr_stream_id */
	struct wr_stream st;
	struct event *ev;
	bool paused;
};

struct proc {
	struct wr_agent *a;
	int rank;
	pid_t pid;
	bool started;
	bool reaped;
	bool finished;
	bool group_killed;
	int dying_looks; /* drain looks since the group was killed */
	int fail_err;
	int fail_stage;
	struct ostream io[2];
	struct event *drain;
	double start_mono;
	int start_err;
	int in_wr; /* our end of its stdin pipe, until the fanout has it */
	int pmi;   /* our end of its PMI connection, until the server has it */
};

struct wr_agent {
	struct event_base *base;
	struct wr_hostjob *job;
	int stdin_fd;     /* what the stdin rank reads; -1: chunks */
	wr_agent_ev_cb *cb;
	void *arg;
	const int *ranks; /* NULL: 0 to nranks-1 */
	int nranks;       /* the host's ranks */
	int node;
	struct proc *procs;
	int first;        /* the local ranks started: first to first+count-1 */
	int count;
	struct event *sigchld;
	int fail_rd;
	int fail_wr;
	int devnull;
	struct wr_spawn_slots *slots; /* NULL: plain vfork */
	char *scratch;
	sigset_t nondefault;
	bool paused_all;
	bool held;      /* wr_agent_hold(): the channel is full */
	void (*other_child)(void *arg, pid_t pid, int wstatus);
	struct wr_fanout *fanout; /* for the ranks that read chunks */
	struct wr_pool *pool;     /* starts ranks in parallel */
	bool start_failed;
	int nstarted; /* ranks announced with WR_EV_STARTED */
	pid_t *guard_slots;
	struct wr_pmisrv *pmisrv; /* with job->pmi: the ranks' PMI-1 server */
};

static void
emit(struct wr_agent *a, const struct wr_ev *ev)
{
	a->cb(a->arg, ev);
}

/* The started rank whose world rank is @rank, or NULL. */
static struct proc *
find_rank(struct wr_agent *a, int rank)
{
	for (int i = 0; i < a->count; i++) {
		if (a->procs[i].rank == rank) {
			return &a->procs[i];
		}
	}
	return NULL;
}

static struct proc *
find_pid(struct wr_agent *a, pid_t pid)
{
	for (int i = 0; i < a->count; i++) {
		if (a->procs[i].started && !a->procs[i].reaped &&
		    a->procs[i].pid == pid) {
			return &a->procs[i];
		}
	}
	return NULL;
}

static void
stream_watch(struct ostream *o)
{
	if (o->ev == NULL) {
		return;
	}
	if (o->paused || o->p->a->paused_all || o->p->a->held) {
		event_del(o->ev);
	} else {
		event_add(o->ev, NULL);
	}
}

/* A finished rank's process group, once empty, leaves the guardian's
 * table: its number may be reused by another process. A group that still
 * has members (an escapee of the stop) stays, for the guardian to kill. */
static void
forget_if_gone(struct proc *p)
{
	pid_t *slot = p->a->guard_slots != NULL ? &p->a->guard_slots[p->a->first + (p - p->a->procs)]
						: NULL;

	if (slot != NULL && kill(-p->pid, 0) < 0 && errno == ESRCH) {
		__atomic_store_n(slot, 0, __ATOMIC_SEQ_CST);
	}
}

static void
maybe_finish(struct proc *p, bool forced)
{
	struct wr_ev ev = { .kind = WR_EV_FINISHED, .rank = p->rank,
			    .pid = p->pid, .forced = forced };

	if (p->finished || !p->reaped || p->io[WR_OUT].st.fd >= 0 ||
	    p->io[WR_ERR].st.fd >= 0) {
		return;
	}
	p->finished = true;
	if (p->drain != NULL) {
		event_free(p->drain);
		p->drain = NULL;
	}
	forget_if_gone(p);
	emit(p->a, &ev);
}

static void
stream_close(struct ostream *o)
{
	struct wr_ev ev = { .kind = WR_EV_OUTPUT, .rank = o->p->rank,
			    .stream = o->id, .eof = true };

	if (o->st.fd < 0) {
		return;
	}
	if (o->ev != NULL) {
		event_free(o->ev);
		o->ev = NULL;
	}
	wr_stream_finish(&o->st);
	emit(o->p->a, &ev);
}

static void
on_line(void *arg, const char *data, size_t len, bool partial)
{
	struct ostream *o = arg;
	struct wr_ev ev = { .kind = WR_EV_OUTPUT, .rank = o->p->rank,
			    .stream = o->id, .data = data, .len = len,
			    .partial = partial };

	emit(o->p->a, &ev);
}

static void
on_readable(evutil_socket_t fd, short what, void *arg)
{
	struct ostream *o = arg;
	struct proc *p = o->p;
	ssize_t n = wr_stream_read(&o->st, p->a->scratch, on_line, o);

	if (n == -EAGAIN || n == -EINTR || n > 0) {
		return;
	}
	stream_close(o);
	maybe_finish(p, false);
}

static int
open_stream(struct ostream *o, struct proc *p, int id, int fd)
{
	o->p = p;
	o->id = id;
	wr_stream_init(&o->st, fd);
	if (fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
		return -errno;
	}
	o->ev = event_new(p->a->base, fd, EV_READ | EV_PERSIST, on_readable, o);
	if (o->ev == NULL) {
		return -ENOMEM;
	}
	stream_watch(o);
	return 0;
}

/*
 * A pseudo-terminal for the rank's stdout: raw, so "\n" stays "\n", and
 * as wide as ours or 80 columns.
 */
static int
open_pty(int *master, int *slave)
{
	struct winsize ws = { .ws_row = 24, .ws_col = 80 };
	struct termios t;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) < 0 || ws.ws_col == 0) {
		ws = (struct winsize){ .ws_row = 24, .ws_col = 80 };
	}
	if (openpty(master, slave, NULL, NULL, &ws) < 0) {
		return -errno;
	}
	if (tcgetattr(*slave, &t) == 0) {
		cfmakeraw(&t);
		tcsetattr(*slave, TCSANOW, &t);
	}
	if (fcntl(*master, F_SETFD, FD_CLOEXEC) < 0 ||
	    fcntl(*slave, F_SETFD, FD_CLOEXEC) < 0) {
		return -errno;
	}
	return 0;
}

static int
make_pipe(int fd[2], bool want_pty)
{
	if (want_pty) {
		return open_pty(&fd[0], &fd[1]);
	}
	return pipe2(fd, O_CLOEXEC) < 0 ? -errno : 0;
}

static void
close_fds(int *fds, int n)
{
	for (int i = 0; i < n; i++) {
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
	}
}

/*
 * Whether rank @rank reads a pipe that the fan-out fills: every rank for
 * "all", and the stdin rank where this host has no fd for it (a remote
 * host: its stdin travels as data).
 */
static bool
reads_chunks(const struct wr_agent *a, int rank)
{
	return a->job->stdin_mode == WR_STDIN_ALL ||
	       (a->job->stdin_mode == WR_STDIN_RANK && a->job->stdin_rank == rank &&
		a->stdin_fd < 0);
}

/* Whether any rank of @a's START reads chunks. */
static bool
wants_fanout(const struct wr_agent *a)
{
	for (int i = 0; i < a->count; i++) {
		if (reads_chunks(a, a->procs[i].rank)) {
			return true;
		}
	}
	return false;
}

/*
 * The rank's stdin: a pipe of ours for the ranks that read chunks, our
 * own fd for the stdin rank, /dev/null for the rest. Only the pipe is
 * new: in[0] may be an fd of ours that the child dup2()s, so the caller
 * closes it only if it is the pipe's.
 */
static int
stdin_for(struct wr_agent *a, struct proc *p, int in[2])
{
	const struct wr_hostjob *job = a->job;

	if (reads_chunks(a, p->rank)) {
		if (pipe2(in, O_CLOEXEC) < 0) {
			return -errno;
		}
		/* The rank reads in[0]; we write in[1]. */
		return fcntl(in[1], F_SETFL, O_NONBLOCK) < 0 ? -errno : 0;
	}
	if (job->stdin_mode == WR_STDIN_RANK && job->stdin_rank == p->rank) {
		in[0] = a->stdin_fd;
	} else {
		in[0] = a->devnull;
	}
	return 0;
}

static int
fork_rank(struct wr_agent *a, struct proc *p, int in, int out, int err, int pmi)
{
	const struct wr_hostjob *job = a->job;
	struct wr_ident id = {
		.rank = p->rank, .size = job->size,
		.local_rank = a->first + (int)(p - a->procs), .local_size = a->nranks,
		.node_rank = a->node, .nnodes = job->nnodes, .jobid = job->jobid,
		.master_addr = job->master_addr, .master_port = job->master_port,
		.pmi = pmi >= 0 || a->job->pmi_port, .pmi_fd = WR_SPAWN_PMI_FD,
		.pmi_port = wr_pmisrv_port(a->pmisrv),
	};
	char **envp = wr_env_for_rank(&job->env, &id);
	struct wr_spawn sp = {
		.rank = p->rank, .path = job->path, .argv = job->argv,
		.sh_argv = job->sh_argv, .envp = envp, .wdir = job->wdir,
		.fd = { in, out, err }, .err_fd = a->fail_wr, .pmi = pmi >= 0, .pmi_fd = pmi,
		.nondefault = &a->nondefault, .nofile = &job->nofile,
		.guard_slot = a->guard_slots != NULL ? &a->guard_slots[a->first + (p - a->procs)]
						      : NULL,
		.parent = getpid(),
	};
	int rc;

	if (envp == NULL) {
		return -ENOMEM;
	}
	rc = wr_spawn_start_slots(&sp, a->slots, &p->pid);
	free(envp);
	return rc;
}

/*
 * Make the rank's pipes and start it. Runs on the pool's threads, so it
 * touches only @p and what is read-only while ranks start; libevent and
 * the events wait for watch_rank(), on the loop's thread.
 */
static void
start_rank(void *arg, int i)
{
	struct wr_agent *a = arg;
	struct proc *p = &a->procs[i];
	int out[2] = { -1, -1 }, err[2] = { -1, -1 }, in[2] = { -1, -1 };
	int pmi[2] = { -1, -1 };
	int rc;

	if (__atomic_load_n(&a->start_failed, __ATOMIC_RELAXED)) {
		p->start_err = -ECANCELED;
		return;
	}
	rc = make_pipe(out, a->job->pty);
	if (rc == 0) {
		rc = make_pipe(err, false);
	}
	if (rc == 0) {
		rc = stdin_for(a, p, in);
	}
	if (rc == 0 && a->pmisrv != NULL && !a->job->pmi_port) {
		rc = wr_pmisrv_pair(pmi);
	}
	if (rc == 0) {
		rc = fork_rank(a, p, in[0], out[1], err[1], pmi[1]);
	}
	p->start_mono = wr_clock_mono();
	if (in[1] < 0) {
		in[0] = -1; /* ours, not the pipe's */
	}
	close_fds((int[]){ in[0], out[1], err[1], pmi[1] }, 4);
	if (rc < 0) {
		close_fds((int[]){ in[1], out[0], err[0], pmi[0] }, 4);
		p->start_err = rc;
		__atomic_store_n(&a->start_failed, true, __ATOMIC_RELAXED);
		return;
	}
	p->started = true;
	p->io[WR_OUT].st.fd = out[0];
	p->io[WR_ERR].st.fd = err[0];
	p->in_wr = in[1];
	p->pmi = pmi[0];
}

/* On the loop's thread: watch a started rank's streams and announce it. */
static int
watch_rank(struct wr_agent *a, struct proc *p)
{
	struct wr_ev ev = { .kind = WR_EV_STARTED, .rank = p->rank, .pid = p->pid,
			    .mono = p->start_mono };
	int rc;

	if (p->in_wr >= 0) {
		wr_fanout_attach(a->fanout, (int)(p - a->procs), p->in_wr);
		p->in_wr = -1;
	}
	if (p->pmi >= 0) {
		rc = wr_pmisrv_attach(a->pmisrv, p->rank, p->pmi);
		p->pmi = -1;
		if (rc < 0) {
			return rc;
		}
	}
	/* The streams own the read ends already, even if watching fails. */
	rc = open_stream(&p->io[WR_OUT], p, WR_OUT, p->io[WR_OUT].st.fd);
	if (rc == 0) {
		rc = open_stream(&p->io[WR_ERR], p, WR_ERR, p->io[WR_ERR].st.fd);
	}
	a->nstarted++;
	emit(a, &ev);
	return rc;
}

/*
 * Ranks start on the pool (in parallel, through slots: see spawn.h),
 * then are announced in rank order. After the first failure no more
 * ranks start; the ones already running are reported, and so is that
 * failure.
 */
static int
start_all(struct wr_agent *a)
{
	int rc = 0;

	if (a->pool != NULL) {
		wr_pool_for(a->pool, a->count, start_rank, a);
	} else {
		for (int i = 0; i < a->count; i++) {
			start_rank(a, i);
		}
	}
	for (int i = 0; i < a->count; i++) {
		struct proc *p = &a->procs[i];
		int r = p->started ? watch_rank(a, p) : p->start_err;

		if (r < 0 && r != -ECANCELED && rc == 0) {
			struct wr_ev ev = { .kind = WR_EV_START_FAILED,
					    .rank = p->rank, .err = -r };

			emit(a, &ev);
			rc = r;
		}
	}
	return rc;
}

/* Children that failed before exec said why on the failure pipe. */
static void
read_failures(struct wr_agent *a)
{
	struct wr_spawn_failure f;

	while (read(a->fail_rd, &f, sizeof(f)) == (ssize_t)sizeof(f)) {
		struct proc *p = find_rank(a, f.rank);

		if (p != NULL) {
			p->fail_err = f.err;
			p->fail_stage = f.stage;
		}
	}
}

/* Back-pressure holds this stream: its bytes wait for our reader. */
static bool
held_back(const struct ostream *o)
{
	return o->st.fd >= 0 && (o->paused || o->p->a->paused_all || o->p->a->held);
}

/*
 * Read what is left in a stream's pipe (a bounded number of reads)
 * before letting go of it, so that what was written is not lost. True
 * if it reached the end of the stream: nobody held it after all.
 */
static bool
stream_drain(struct ostream *o)
{
	for (int i = 0; i < 64 && o->st.fd >= 0; i++) {
		ssize_t n = wr_stream_read(&o->st, o->p->a->scratch, on_line, o);

		if (n == 0) {
			return true;
		}
		if (n < 0) {
			break;
		}
	}
	return o->st.fd < 0;
}

static void
on_drain_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct proc *p = arg;
	struct timeval tv = wr_clock_tv(p->a->job->kill_grace);
	bool forced = false;

	/*
	 * A stream that back-pressure paused is no sign of anyone else: the
	 * rank wrote into its pipe and ended, and our reader is slow. Wait
	 * for it, however slow; the grace starts once we read again.
	 */
	if (held_back(&p->io[WR_OUT]) || held_back(&p->io[WR_ERR])) {
		evtimer_add(p->drain, &tv);
		return;
	}
	/*
	 * The rank is gone but something still holds its stdout or stderr:
	 * a grandchild. Kill its process group; if the streams still do not
	 * close, a process that left the group holds them: take what they
	 * hold, then let go of them.
	 */
	if (!p->group_killed) {
		p->group_killed = true;
		kill(-p->pid, SIGKILL);
		kill(-p->pid, SIGCONT);
		evtimer_add(p->drain, &tv);
		return;
	}
	for (int s = 0; s < 2; s++) {
		if (stream_drain(&p->io[s])) {
			stream_close(&p->io[s]);
		}
	}
	/*
	 * kill() sends SIGKILL, it does not wait for it: a process of the
	 * group may still hold a stream for the moment it takes to die.
	 * While the group exists, look again every 10 ms (at most 1 s: a
	 * zombie nobody reaps stays in the group, though its files are shut).
	 */
	if (p->io[WR_OUT].st.fd >= 0 || p->io[WR_ERR].st.fd >= 0) {
		if (kill(-p->pid, 0) == 0 && p->dying_looks++ < 100) {
			tv = (struct timeval){ .tv_usec = 10000 };
			evtimer_add(p->drain, &tv);
			return;
		}
		forced = true;
	}
	for (int s = 0; s < 2; s++) {
		stream_close(&p->io[s]);
	}
	maybe_finish(p, forced);
}

static void
handle_exit(struct wr_agent *a, struct proc *p, int status,
	    const struct rusage *ru)
{
	struct wr_ev ev = { .kind = WR_EV_EXITED, .rank = p->rank, .pid = p->pid,
			    .wstatus = status, .maxrss_kib = ru->ru_maxrss,
			    .mono = wr_clock_mono() };

	p->reaped = true;
	if (p->fail_stage != 0) {
		struct wr_ev fev = { .kind = WR_EV_START_FAILED, .rank = p->rank,
				     .pid = p->pid, .err = p->fail_err,
				     .stage = p->fail_stage };

		emit(a, &fev);
	}
	wr_fanout_drop(a->fanout, (int)(p - a->procs));
	/* What it said to PMI before it ended is heard before its end. */
	wr_pmisrv_reaped(a->pmisrv, p->rank);
	emit(a, &ev);
	if (!p->finished && (p->io[WR_OUT].st.fd >= 0 || p->io[WR_ERR].st.fd >= 0)) {
		struct timeval tv = wr_clock_tv(a->job->kill_grace);

		p->drain = evtimer_new(a->base, on_drain_timeout, p);
		if (p->drain != NULL) {
			evtimer_add(p->drain, &tv);
		}
	}
	maybe_finish(p, false);
}

struct reaped {
	struct proc *p;
	int status;
	struct rusage ru;
};

static int
by_rank(const void *x, const void *y)
{
	const struct reaped *a = x, *b = y;

	return (a->p->rank > b->p->rank) - (a->p->rank < b->p->rank);
}

/*
 * Reap everything that has exited, unknown pids included. Exits found in
 * one pass are reported lowest rank first: that is the tie rule of the
 * exit status contract.
 */
static void
on_sigchld(evutil_socket_t fd, short what, void *arg)
{
	struct wr_agent *a = arg;
	struct reaped *r = calloc((size_t)a->count + 1, sizeof(*r));
	int n = 0, status;
	struct rusage ru;
	pid_t pid;

	read_failures(a);
	for (;;) {
		pid = wait4(-1, &status, WNOHANG, &ru);
		if (pid <= 0) {
			break;
		}
		struct proc *p = find_pid(a, pid);

		if (p != NULL && r != NULL) {
			r[n++] = (struct reaped){ p, status, ru };
		} else if (p != NULL) {
			handle_exit(a, p, status, &ru);
		} else if (a->other_child != NULL) {
			a->other_child(a->arg, pid, status);
		}
	}
	if (r != NULL) {
		qsort(r, (size_t)n, sizeof(*r), by_rank);
		for (int i = 0; i < n; i++) {
			handle_exit(a, r[i].p, r[i].status, &r[i].ru);
		}
	}
	free(r);
}

static void
on_stdin_taken(void *arg)
{
	struct wr_agent *a = arg;
	struct wr_ev ev = { .kind = WR_EV_STDIN_TAKEN };

	emit(a, &ev);
}

static int
signal_ranks(struct wr_agent *a, int rank, int sig)
{
	for (int i = 0; i < a->count; i++) {
		struct proc *p = &a->procs[i];

		if (!p->started || p->finished || (rank >= 0 && p->rank != rank)) {
			continue;
		}
		/*
		 * Each rank leads its own group: this reaches its children too.
		 * A rank still before its setsid() has no group yet; the signal
		 * then waits, blocked, until it has its default action back.
		 */
		if (kill(-p->pid, sig) < 0 && errno == ESRCH && !p->reaped) {
			kill(p->pid, sig);
		}
	}
	return 0;
}

static int
set_paused(struct wr_agent *a, const struct wr_cmd *cmd, bool paused)
{
	if (cmd->rank < 0) {
		a->paused_all = paused;
	}
	for (int i = 0; i < a->count; i++) {
		struct proc *p = &a->procs[i];

		if (cmd->rank >= 0 && p->rank != cmd->rank) {
			continue;
		}
		for (int s = 0; s < 2; s++) {
			if (cmd->rank >= 0 && (cmd->stream < 0 || cmd->stream == s)) {
				p->io[s].paused = paused;
			}
			stream_watch(&p->io[s]);
		}
	}
	return 0;
}

/* The signals whose disposition a rank must not inherit. */
static void
find_nondefault(sigset_t *set)
{
	sigemptyset(set);
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction sa;

		if (sig != SIGKILL && sig != SIGSTOP && sigaction(sig, NULL, &sa) == 0 &&
		    sa.sa_handler != SIG_DFL) {
			sigaddset(set, sig);
		}
	}
}

/* Helpers beside the loop's thread: one per further CPU, at most 3. */
static int
pool_threads(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	return cpus <= 1 ? 0 : cpus > 4 ? 3 : (int)cpus - 1;
}

static void
on_pmi_abort(void *arg, int rank, int code, const char *msg)
{
	struct wr_ev ev = { .kind = WR_EV_ABORT, .rank = rank, .status = code,
			    .data = msg, .len = strnlen(msg, WR_WIRE_WHY_MAX) };

	emit(arg, &ev);
}

static void
on_pmi_left(void *arg, int rank, const char *why)
{
	struct wr_ev ev = { .kind = WR_EV_LEFT, .rank = rank, .data = why,
			    .len = strnlen(why, WR_WIRE_WHY_MAX) };

	emit(arg, &ev);
}

/* The PMI-1 server of the @count ranks about to start. */
static int
open_pmi(struct wr_agent *a, int count)
{
	const struct wr_hostjob *job = a->job;
	int *ranks = calloc((size_t)(count > 0 ? count : 1), sizeof(*ranks));
	struct wr_pmisrv_cfg cfg = {
		.base = a->base, .jobid = job->jobid, .size = job->size, .nlocal = count,
		.mapping = job->pmi_mapping, .ranks = ranks, .port = job->pmi_port,
		.rep = a->procs[0].rank, .registry = wr_env_get(&job->env, "WORLD_REGISTRY"),
		.secret = wr_env_get(&job->env, "WORLD_SECRET"), .abort = on_pmi_abort,
		.left = on_pmi_left, .arg = a,
	};
	int rc = ranks == NULL ? -ENOMEM : 0;

	for (int i = 0; rc == 0 && i < count; i++) {
		ranks[i] = a->procs[i].rank;
	}
	if (rc == 0 && count > 0) {
		rc = wr_pmisrv_open(&cfg, &a->pmisrv);
	}
	free(ranks);
	return rc;
}

static int
start(struct wr_agent *a, int first, int count)
{
	if (a->procs != NULL || count < 0 || first < 0 || first > a->nranks - count) {
		return -EINVAL;
	}
	a->procs = calloc((size_t)count + 1, sizeof(*a->procs));
	if (a->procs == NULL) {
		return -ENOMEM;
	}
	a->first = first;
	a->count = count;
	for (int i = 0; i < count; i++) {
		struct proc *p = &a->procs[i];

		p->a = a;
		p->rank = a->ranks != NULL ? a->ranks[first + i] : first + i;
		p->in_wr = -1;
		p->pmi = -1;
		wr_stream_init(&p->io[WR_OUT].st, -1);
		wr_stream_init(&p->io[WR_ERR].st, -1);
	}
	find_nondefault(&a->nondefault);
	if (a->job->pmi && open_pmi(a, count) < 0) {
		return -ENOMEM;
	}
	if (wants_fanout(a) &&
	    wr_fanout_open(a->base, count, on_stdin_taken, a, &a->fanout) < 0) {
		return -ENOMEM;
	}
	/* Threads pay off only with many ranks; without, the loop starts all. */
	if (count >= POOL_MIN_RANKS) {
		wr_pool_open(pool_threads(), &a->pool);
	}
	/* One set of slots per thread that starts ranks; without, vfork. */
	wr_spawn_slots_open(pool_threads() + 1, &a->slots);
	return start_all(a);
}

void
wr_agent_hold(struct wr_agent *a, bool hold)
{
	a->held = hold;
	for (int i = 0; a->procs != NULL && i < a->count; i++) {
		stream_watch(&a->procs[i].io[WR_OUT]);
		stream_watch(&a->procs[i].io[WR_ERR]);
	}
}

int
wr_agent_send(struct wr_agent *a, const struct wr_cmd *cmd)
{
	struct wr_ev done;
	int rc;

	switch (cmd->kind) {
	case WR_CMD_START:
		rc = cmd->addr != NULL ? wr_env_set(&a->job->env, "WORLD_ADVERTISE", cmd->addr)
				       : 0;
		if (rc == 0) {
			rc = start(a, cmd->first, cmd->count);
		}
		done = (struct wr_ev){ .kind = WR_EV_START_DONE, .count = a->nstarted,
				       .err = rc < 0 ? -rc : 0 };
		emit(a, &done);
		return rc;
	case WR_CMD_SIGNAL:
		return signal_ranks(a, cmd->rank, cmd->sig);
	case WR_CMD_PAUSE:
		return set_paused(a, cmd, true);
	case WR_CMD_RESUME:
		return set_paused(a, cmd, false);
	case WR_CMD_STDIN:
		return a->fanout != NULL ? wr_fanout_chunk(a->fanout, cmd->data, cmd->len)
					 : -EINVAL;
	case WR_CMD_STDIN_EOF:
		if (a->fanout != NULL) {
			wr_fanout_eof(a->fanout);
		}
		return 0;
	case WR_CMD_NKINDS:
		break;
	}
	return -EINVAL;
}

int
wr_agent_open(const struct wr_agent_cfg *cfg, struct wr_agent **out)
{
	struct wr_agent *a = calloc(1, sizeof(*a));
	int fail[2] = { -1, -1 };
	int rc = -ENOMEM;

	*out = NULL;
	if (a == NULL) {
		return -ENOMEM;
	}
	*a = (struct wr_agent){ .base = cfg->base, .job = cfg->job,
				.stdin_fd = cfg->stdin_fd, .cb = cfg->cb,
				.arg = cfg->arg, .ranks = cfg->ranks,
				.nranks = cfg->nranks, .node = cfg->node,
				.guard_slots = cfg->guard_slots,
				.other_child = cfg->other_child, .fail_rd = -1,
				.fail_wr = -1, .devnull = -1 };
	a->scratch = malloc(WR_LINE_MAX);
	a->sigchld = evsignal_new(a->base, SIGCHLD, on_sigchld, a);
	if (a->scratch == NULL || a->sigchld == NULL || evsignal_add(a->sigchld, NULL) < 0) {
		goto fail;
	}
	if (pipe2(fail, O_CLOEXEC | O_NONBLOCK) < 0) {
		rc = -errno;
		goto fail;
	}
	a->fail_rd = fail[0];
	a->fail_wr = fail[1];
	a->devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (a->devnull < 0) {
		rc = -errno;
		goto fail;
	}
	*out = a;
	return 0;
fail:
	wr_agent_close(a);
	return rc;
}

static void
proc_finish(struct proc *p)
{
	for (int s = 0; s < 2; s++) {
		if (p->io[s].ev != NULL) {
			event_free(p->io[s].ev);
		}
		wr_stream_finish(&p->io[s].st);
	}
	if (p->drain != NULL) {
		event_free(p->drain);
	}
	if (p->pmi >= 0) {
		close(p->pmi);
	}
}

void
wr_agent_close(struct wr_agent *a)
{
	if (a == NULL) {
		return;
	}
	for (int i = 0; a->procs != NULL && i < a->count; i++) {
		proc_finish(&a->procs[i]);
	}
	/* Only now: a rank gets SIGKILL when the thread that started it ends. */
	wr_pool_close(a->pool);
	wr_spawn_slots_close(a->slots);
	free(a->procs);
	if (a->sigchld != NULL) {
		event_free(a->sigchld);
	}
	close_fds((int[]){ a->fail_rd, a->fail_wr, a->devnull }, 3);
	free(a->scratch);
	wr_fanout_close(a->fanout);
	wr_pmisrv_close(a->pmisrv);
	free(a);
}
