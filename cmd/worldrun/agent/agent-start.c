/* SPDX-License-Identifier: MIT */
/*
 * agent-start: the agent's half that starts the ranks of a START: each
 * rank's pipes (or a pty), its stdin (a pipe the fan-out fills, the
 * launcher's own stdin, or /dev/null), its PMI connection, the spawn
 * itself, in parallel on a pool past POOL_MIN_RANKS ranks, and the
 * STARTED events once they run.
 */
#include "agentint.h"

#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <termios.h>
#include <unistd.h>

#include "bind.h"
#include "clock.h"
#include "fanout.h"
#include "pmisrv.h"
#include "pmixsrv.h"
#include "pool.h"
#include "spawn.h"

#define POOL_MIN_RANKS 32

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
		.extra = wr_pmixsrv_env(wr_agent_pmix(a), p->rank),
	};
	char **envp = wr_env_for_rank(&job->env, &id);
	struct wr_spawn sp = {
		.rank = p->rank, .path = job->path, .argv = job->argv,
		.sh_argv = job->sh_argv, .envp = envp, .wdir = job->wdir,
		.fd = { in, out, err }, .err_fd = a->fail_wr, .pmi = pmi >= 0, .pmi_fd = pmi,
		.nondefault = &a->nondefault, .nofile = &job->nofile,
		.cpus = a->parent == NULL ? wr_bind_cpus(job->cpus, id.local_rank) : NULL,
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
	wr_agent_close_fds((int[]){ in[0], out[1], err[1], pmi[1] }, 4);
	if (rc < 0) {
		wr_agent_close_fds((int[]){ in[1], out[0], err[0], pmi[0] }, 4);
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
	int local = a->first + (int)(p - a->procs);
	int rc;

	/* Where it runs, when asked; a spawn's ranks run where we do. */
	if (a->job->report_bindings) {
		ev.data = a->parent == NULL ? wr_bind_describe(a->job->cpus, local) : NULL;
		ev.data = ev.data != NULL ? ev.data : "not bound (a spawn's rank)";
		ev.len = strlen(ev.data);
	}
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
	rc = wr_agent_open_stream(&p->io[WR_OUT], p, WR_OUT, p->io[WR_OUT].st.fd);
	if (rc == 0) {
		rc = wr_agent_open_stream(&p->io[WR_ERR], p, WR_ERR, p->io[WR_ERR].st.fd);
	}
	a->nstarted++;
	wr_agent_emit(a, &ev);
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

			wr_agent_spawned_prog(a, &ev);
			wr_agent_emit(a, &ev);
			rc = r;
		}
	}
	return rc;
}

/* Children that failed before exec said why on the failure pipe. */
void
wr_agent_read_failures(struct wr_agent *a)
{
	struct wr_spawn_failure f;

	while (read(a->fail_rd, &f, sizeof(f)) == (ssize_t)sizeof(f)) {
		struct proc *p = wr_agent_find_rank(a, f.rank);

		if (p != NULL) {
			p->fail_err = f.err;
			p->fail_stage = f.stage;
		}
	}
}

static void
on_stdin_taken(void *arg)
{
	struct wr_agent *a = arg;
	struct wr_ev ev = { .kind = WR_EV_STDIN_TAKEN };

	wr_agent_emit(a, &ev);
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

/*
 * The status an abort calls for is its code's low byte, as a process's
 * own exit(code) gives, but never 0: an aborted job has failed.
 */
static void
on_pmi_abort(void *arg, int rank, int code, const char *msg)
{
	struct wr_ev ev = { .kind = WR_EV_ABORT, .rank = rank, .code = code,
			    .status = (code & 255) != 0 ? code & 255 : 1,
			    .data = msg, .len = strnlen(msg, WR_WIRE_WHY_MAX) };

	wr_agent_emit(arg, &ev);
}

static void
on_pmi_left(void *arg, int rank, const char *why)
{
	struct wr_ev ev = { .kind = WR_EV_LEFT, .rank = rank, .data = why,
			    .len = strnlen(why, WR_WIRE_WHY_MAX) };

	wr_agent_emit(arg, &ev);
}

/*
 * Their PMIx server. A host where PMIx cannot start runs its ranks with
 * PMI-1 alone, and says so: a program that does not speak PMIx (most do
 * not) loses nothing.
 */
static void
open_pmix(struct wr_agent *a, const int *ranks, int count)
{
	const struct wr_hostjob *job = a->job;
	struct wr_pmixsrv_cfg cfg = {
		.base = a->base, .jobid = job->jobid, .size = job->size, .nnodes = job->nnodes,
		.node = a->node, .nlocal = count, .ranks = ranks, .mapping = job->pmi_mapping,
		.node_name = job->node_name,
		.dir = wr_env_get(&job->env, "WORLD_JOBDIR"),
		.registry = wr_env_get(&job->env, "WORLD_REGISTRY"),
		.secret = wr_env_get(&job->env, "WORLD_SECRET"), .abort = on_pmi_abort,
		.left = on_pmi_left, .spawn = wr_agent_spawn_ask, .arg = a,
		/* Unless the user chose for Open MPI already. */
		.ompi = wr_env_get(&job->env, "OMPI_MCA_ess") == NULL &&
			wr_env_get(&job->env, "OMPI_MCA_schizo") == NULL,
	};
	char why[256];

	if (count > 0 && cfg.dir != NULL &&
	    wr_pmixsrv_open(&cfg, &a->pmixsrv, why, sizeof(why)) < 0) {
		fprintf(stderr, "worldrun: PMIx is not served to the ranks of node %d: %s\n",
			a->node, why);
	}
}

/* The PMI-1 and PMIx servers of the @count ranks about to start, as the
 * job asks. */
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
	if (rc == 0 && count > 0 && job->pmi) {
		rc = wr_pmisrv_open(&cfg, &a->pmisrv);
	}
	if (rc == 0 && job->pmix) {
		open_pmix(a, ranks, count);
	}
	free(ranks);
	return rc;
}

int
wr_agent_start(struct wr_agent *a, int first, int count)
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
	if ((a->job->pmi || a->job->pmix) && open_pmi(a, count) < 0) {
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
