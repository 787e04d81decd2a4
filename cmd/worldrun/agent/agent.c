/* SPDX-License-Identifier: MIT */
/*
 * agent: the ranks of one host once started (agent-start.c starts them):
 * their output cut into lines, their ends reaped and told in order, the
 * launcher's signals, pauses and stdin; the commands' dispatch, and the
 * agent's open and close.
 */
#include "agentint.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "errfile.h"
#include "fanout.h"
#include "pmisrv.h"
#include "mpilib.h"
#include "pmixsrv.h"
#include "pool.h"
#include "spawn.h"

/* A piece of output goes to the launcher in one event. */
_Static_assert(WR_LINE_MAX <= WR_WIRE_DATA_MAX, "a line piece fits an event");

/* The only way an event leaves the agent. */
void
wr_agent_emit(struct wr_agent *a, const struct wr_ev *ev)
{
	a->cb(a->arg, ev);
}

struct wr_agent *
wr_agent_next(const struct wr_agent *a, const struct wr_agent *x)
{
	return x == a ? a->kids : x->next_kid;
}

struct wr_pmixsrv *
wr_agent_pmix(const struct wr_agent *a)
{
	return a->parent != NULL ? a->parent->pmixsrv : a->pmixsrv;
}

/* The started rank whose world rank is @rank, or NULL. */
struct proc *
wr_agent_find_rank(struct wr_agent *a, int rank)
{
	for (struct wr_agent *x = a; x != NULL; x = wr_agent_next(a, x)) {
		for (int i = 0; i < x->count; i++) {
			if (x->procs[i].rank == rank) {
				return &x->procs[i];
			}
		}
	}
	return NULL;
}

static struct proc *
find_pid(struct wr_agent *a, pid_t pid)
{
	for (struct wr_agent *x = a; x != NULL; x = wr_agent_next(a, x)) {
		for (int i = 0; i < x->count; i++) {
			if (x->procs[i].started && !x->procs[i].reaped &&
			    x->procs[i].pid == pid) {
				return &x->procs[i];
			}
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
	wr_agent_emit(p->a, &ev);
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
	wr_agent_emit(o->p->a, &ev);
}

static void
on_line(void *arg, const char *data, size_t len, bool partial)
{
	struct ostream *o = arg;
	struct wr_ev ev = { .kind = WR_EV_OUTPUT, .rank = o->p->rank,
			    .stream = o->id, .data = data, .len = len,
			    .partial = partial };

	wr_agent_emit(o->p->a, &ev);
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

int
wr_agent_open_stream(struct ostream *o, struct proc *p, int id, int fd)
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

void
wr_agent_close_fds(int *fds, int n)
{
	for (int i = 0; i < n; i++) {
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
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

/* @p ended well without a word to PMI: if its program links MPI, it
 * most likely ran alone. The program is read once, at the first such
 * end. */
static void
say_alone(struct wr_agent *a, struct proc *p)
{
	if (a->mpilib_known == 0) {
		a->mpilib_known = wr_mpilib_linked(a->job->path, a->mpilib, sizeof(a->mpilib))
				  ? 1 : -1;
	}
	if (a->mpilib_known > 0) {
		struct wr_ev ev = { .kind = WR_EV_ALONE, .rank = p->rank, .data = a->mpilib,
				    .len = strlen(a->mpilib) };

		wr_agent_emit(a, &ev);
	}
}

/* What a rank that ended badly wrote to its error file (errfile.h), as
 * the EXITED event's bytes: the launcher's failure line says it. */
static void
error_of(const struct wr_agent *a, int rank, int status, struct wr_ev *ev)
{
	const char *dir = wr_env_get(&a->job->env, "WORLD_JOBDIR");
	char path[4096], *out = NULL;
	size_t len = 0;

	if ((WIFEXITED(status) && WEXITSTATUS(status) == 0) || dir == NULL ||
	    wr_errfile_path(path, sizeof(path), dir, rank) < 0 ||
	    wr_errfile_read(path, &out, &len) < 0) {
		return;
	}
	ev->data = out;
	ev->len = len;
}

static void
handle_exit(struct proc *p, int status, const struct rusage *ru)
{
	struct wr_agent *a = p->a;
	bool spoke;
	struct wr_ev ev = { .kind = WR_EV_EXITED, .rank = p->rank, .pid = p->pid,
			    .wstatus = status, .maxrss_kib = ru->ru_maxrss,
			    .mono = wr_clock_mono() };

	p->reaped = true;
	if (p->fail_stage != 0) {
		struct wr_ev fev = { .kind = WR_EV_START_FAILED, .rank = p->rank,
				     .pid = p->pid, .err = p->fail_err,
				     .stage = p->fail_stage };

		wr_agent_spawned_prog(a, &fev);
		wr_agent_emit(a, &fev);
	}
	wr_fanout_drop(a->fanout, (int)(p - a->procs));
	/* What it said to PMI before it ended is heard before its end. */
	spoke = wr_pmisrv_reaped(a->pmisrv, p->rank);
	spoke |= wr_pmixsrv_reaped(wr_agent_pmix(a), p->rank);
	if (!spoke && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	    (a->pmisrv != NULL || wr_agent_pmix(a) != NULL)) {
		say_alone(a, p);
	}
	error_of(a, p->rank, status, &ev);
	wr_agent_emit(a, &ev);
	free((char *)ev.data);
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
reap(struct wr_agent *a)
{
	struct reaped *r;
	size_t all = 1;
	int n = 0, status;
	struct rusage ru;
	pid_t pid;

	for (struct wr_agent *x = a; x != NULL; x = wr_agent_next(a, x)) {
		all += (size_t)x->count;
		wr_agent_read_failures(x);
	}
	r = calloc(all, sizeof(*r));
	for (;;) {
		pid = wait4(-1, &status, WNOHANG, &ru);
		if (pid <= 0) {
			break;
		}
		struct proc *p = find_pid(a, pid);

		if (p != NULL && r != NULL) {
			r[n++] = (struct reaped){ p, status, ru };
		} else if (p != NULL) {
			handle_exit(p, status, &ru);
		} else if (a->other_child != NULL) {
			a->other_child(a->arg, pid, status);
		}
	}
	if (r != NULL) {
		qsort(r, (size_t)n, sizeof(*r), by_rank);
		for (int i = 0; i < n; i++) {
			handle_exit(r[i].p, r[i].status, &r[i].ru);
		}
	}
	free(r);
}

static void
on_sigchld(evutil_socket_t fd, short what, void *arg)
{
	reap(arg);
}

/* Whether @sig kills @pid at once: neither caught, ignored nor blocked. */
static bool
kills(pid_t pid, int sig)
{
	unsigned long long blk = 0, ign = 0, cgt = 0, bit = 1ULL << (sig - 1);
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (sig == SIGKILL || (f = fopen(path, "re")) == NULL) {
		return true;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		sscanf(line, "SigBlk: %llx", &blk);
		sscanf(line, "SigIgn: %llx", &ign);
		sscanf(line, "SigCgt: %llx", &cgt);
	}
	fclose(f);
	return ((blk | ign | cgt) & bit) == 0;
}

/* Into @ranks (room for @room), the ranks of @a and its spawns' agents
 * that @sig to @rank (-1: all) kills at once; their count. */
static int
killed_ranks(struct wr_agent *a, int rank, int sig, int *ranks, int room)
{
	int n = 0;

	for (struct wr_agent *x = a->kids; x != NULL; x = x->next_kid) {
		n += killed_ranks(x, rank, sig, ranks + n, room - n);
	}
	for (int i = 0; i < a->count && n < room; i++) {
		struct proc *p = &a->procs[i];

		if (p->started && !p->finished && (rank < 0 || p->rank == rank) &&
		    kills(p->pid, sig)) {
			ranks[n++] = p->rank;
		}
	}
	return n;
}

static int
count_procs(const struct wr_agent *a)
{
	int n = a->count;

	for (const struct wr_agent *x = a->kids; x != NULL; x = x->next_kid) {
		n += count_procs(x);
	}
	return n;
}

/*
 * A stop's @sig is about to reach @rank (-1: all): PMIx forgets those of
 * its clients that it kills at once (pmixsrv.h). A rank that catches it
 * (to checkpoint, or to finalize) keeps its server.
 */
static void
forget_killed(struct wr_agent *a, int rank, int sig)
{
	struct wr_pmixsrv *s = wr_agent_pmix(a);
	int room = s != NULL ? count_procs(a) : 0;
	int *ranks = room > 0 ? malloc((size_t)room * sizeof(*ranks)) : NULL;

	if (ranks != NULL) {
		wr_pmixsrv_stopping(s, ranks, killed_ranks(a, rank, sig, ranks, room));
	}
	free(ranks);
}

static int
signal_ranks(struct wr_agent *a, int rank, int sig)
{
	for (struct wr_agent *x = a->kids; x != NULL; x = x->next_kid) {
		signal_ranks(x, rank, sig);
	}
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
	for (struct wr_agent *x = a->kids; x != NULL; x = x->next_kid) {
		set_paused(x, cmd, paused);
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

void
wr_agent_hold(struct wr_agent *a, bool hold)
{
	a->held = hold;
	for (struct wr_agent *x = a->kids; x != NULL; x = x->next_kid) {
		wr_agent_hold(x, hold);
	}
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
			rc = wr_agent_start(a, cmd->first, cmd->count);
		}
		done = (struct wr_ev){ .kind = WR_EV_START_DONE, .count = a->nstarted,
				       .err = rc < 0 ? -rc : 0 };
		wr_agent_emit(a, &done);
		return rc;
	case WR_CMD_SIGNAL:
		/* Only a stop sends these (wr_policy_signal). */
		if (cmd->sig == SIGTERM || cmd->sig == SIGKILL || cmd->sig == SIGINT ||
		    cmd->sig == SIGHUP) {
			forget_killed(a, cmd->rank, cmd->sig);
		}
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
	case WR_CMD_BEAT:
		/* The channel's own business (agentd.c), nothing for the ranks. */
		return 0;
	case WR_CMD_STACK:
		return wr_agent_stack(a, cmd->rank);
	case WR_CMD_SPAWN:
		return wr_agent_spawn_cmd(a, cmd);
	case WR_CMD_JOINED:
		return wr_agent_spawn_joined(a, cmd);
	case WR_CMD_AGAIN:      /* the agent process's (agentd.c) */
	case WR_CMD_NKINDS:
		break;
	}
	return -EINVAL;
}

int
wr_agent_open(const struct wr_agent_cfg *cfg, struct wr_agent **out)
{
	return wr_agent_open_in(cfg, NULL, out);
}

int
wr_agent_open_in(const struct wr_agent_cfg *cfg, struct wr_agent *parent,
		 struct wr_agent **out)
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
				.spare_slots = cfg->spare_slots, .nspare = cfg->nspare,
				.other_child = cfg->other_child, .fail_rd = -1,
				.fail_wr = -1, .devnull = -1, .parent = parent };
	a->scratch = malloc(WR_LINE_MAX);
	/* A spawn's ranks are reaped by the host's agent, with its own. */
	a->sigchld = parent == NULL ? evsignal_new(a->base, SIGCHLD, on_sigchld, a) : NULL;
	if (a->scratch == NULL || (parent == NULL && a->sigchld == NULL) ||
	    (a->sigchld != NULL && evsignal_add(a->sigchld, NULL) < 0)) {
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
	wr_agent_stacks_close(a);
	wr_agent_spawns_close(a);
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
	wr_agent_close_fds((int[]){ a->fail_rd, a->fail_wr, a->devnull }, 3);
	free(a->scratch);
	wr_fanout_close(a->fanout);
	wr_pmisrv_close(a->pmisrv);
	wr_pmixsrv_close(a->pmixsrv);
	free(a);
}
