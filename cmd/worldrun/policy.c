/* SPDX-License-Identifier: MIT */
/*
 * policy: what worldrun decides while the job runs. It turns the agents'
 * events and the registry's losses into rank states, decides the exit
 * status (the first failure wins), stops the job (the stop signal, then
 * SIGKILL after the grace period) and prints the failure lines. It never
 * touches a process itself: agents do. run.c sets the job up around it;
 * policy-ranks.c is the half that follows each rank.
 */
#include "policyint.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "clock.h"

/* Seconds, beyond --kill-grace, that remote ranks have to report their end
 * once SIGKILL was sent. */
#define GIVE_UP_AFTER 2.0

const char *
wr_policy_signame(int sig)
{
	static const char *const names[] = {
		[SIGHUP] = "SIGHUP", [SIGINT] = "SIGINT", [SIGQUIT] = "SIGQUIT",
		[SIGILL] = "SIGILL", [SIGTRAP] = "SIGTRAP", [SIGABRT] = "SIGABRT",
		[SIGBUS] = "SIGBUS", [SIGFPE] = "SIGFPE", [SIGKILL] = "SIGKILL",
		[SIGUSR1] = "SIGUSR1", [SIGSEGV] = "SIGSEGV", [SIGUSR2] = "SIGUSR2",
		[SIGPIPE] = "SIGPIPE", [SIGALRM] = "SIGALRM", [SIGTERM] = "SIGTERM",
		[SIGSTKFLT] = "SIGSTKFLT", [SIGCHLD] = "SIGCHLD", [SIGCONT] = "SIGCONT",
		[SIGSTOP] = "SIGSTOP", [SIGTSTP] = "SIGTSTP", [SIGTTIN] = "SIGTTIN",
		[SIGTTOU] = "SIGTTOU", [SIGURG] = "SIGURG", [SIGXCPU] = "SIGXCPU",
		[SIGXFSZ] = "SIGXFSZ", [SIGVTALRM] = "SIGVTALRM", [SIGPROF] = "SIGPROF",
		[SIGWINCH] = "SIGWINCH", [SIGIO] = "SIGIO", [SIGPWR] = "SIGPWR",
		[SIGSYS] = "SIGSYS",
	};

	if (sig > 0 && sig < (int)(sizeof(names) / sizeof(names[0])) &&
	    names[sig] != NULL) {
		return names[sig];
	}
	return sig >= SIGRTMIN && sig <= SIGRTMAX ? "SIGRT" : "unknown signal";
}

const char *
wr_policy_plural(int n)
{
	return n == 1 ? "" : "s";
}

void
wr_policy_send(struct wr_policy *p, enum wr_cmd_kind kind, int rank, int sig)
{
	struct wr_cmd cmd = { .kind = kind, .rank = rank, .stream = -1, .sig = sig };

	p->cfg.agents.send(p->cfg.agents.arg, &cmd);
}

bool
wr_policy_decide(struct wr_policy *p, int status, const char *cause, int rank)
{
	if (p->status >= 0) {
		return false;
	}
	p->status = status;
	p->cause = cause;
	p->failed_rank = rank;
	return true;
}

static int
count_running(struct wr_policy *p)
{
	int n = 0;

	for (int i = 0; i < p->nranks; i++) {
		n += p->ranks[i].state == WR_RANK_RUNNING;
	}
	return n;
}

/* Every running rank that did not abort or say it failed is one
 * worldrun signalled: those end by themselves. */
static void
mark_signaled(struct wr_policy *p)
{
	for (int i = 0; i < p->nranks; i++) {
		if (p->ranks[i].state == WR_RANK_RUNNING && !p->ranks[i].aborted &&
		    p->ranks[i].failing == NULL) {
			p->ranks[i].signaled = true;
		}
	}
}

/*
 * @sig to every rank worldrun stops: all at once, unless a rank that
 * said it failed is on its way out by itself (its status is its own).
 */
static void
signal_ranks(struct wr_policy *p, int sig)
{
	bool spare = false;

	for (int i = 0; i < p->nranks && !spare; i++) {
		spare = p->ranks[i].state == WR_RANK_RUNNING && p->ranks[i].failing != NULL;
	}
	if (!spare) {
		wr_policy_send(p, WR_CMD_SIGNAL, -1, sig);
		return;
	}
	for (int i = 0; i < p->nranks; i++) {
		if (p->ranks[i].signaled && p->ranks[i].state == WR_RANK_RUNNING) {
			wr_policy_send(p, WR_CMD_SIGNAL, i, sig);
		}
	}
}

/* Send @sig to every running rank's group, then SIGKILL after the grace. */
static void
stop(struct wr_policy *p, int sig)
{
	struct timeval tv = wr_clock_tv(p->cfg.kill_grace);
	int n = count_running(p);

	p->stopping = true;
	mark_signaled(p);
	if (p->cfg.verbose && n > 0) {
		wr_output_say(p->out, "sending %s to %d rank%s", wr_policy_signame(sig),
			      n, wr_policy_plural(n));
	}
	signal_ranks(p, sig);
	/* A stopped rank cannot act on the signal until it runs again. */
	signal_ranks(p, SIGCONT);
	if (!evtimer_pending(p->grace_ev, NULL)) {
		evtimer_add(p->grace_ev, &tv);
	}
}

static void
kill_all(struct wr_policy *p)
{
	if (p->cfg.verbose) {
		wr_output_say(p->out, "sending SIGKILL to what is left of the job");
	}
	mark_signaled(p);
	p->stopping = true;
	p->killed = true;
	wr_policy_send(p, WR_CMD_SIGNAL, -1, SIGKILL);
	wr_policy_send(p, WR_CMD_SIGNAL, -1, SIGCONT);
	if (!evtimer_pending(p->give_up_ev, NULL)) {
		struct timeval tv = wr_clock_tv(p->cfg.kill_grace + GIVE_UP_AFTER);

		evtimer_add(p->give_up_ev, &tv);
	}
}

/*
 * A remote agent that still reports ranks running this long after their
 * SIGKILL is not doing its job (or its host hangs): its node is lost, so
 * that worldrun ends.
 */
static void
on_give_up(evutil_socket_t fd, short what, void *arg)
{
	struct wr_policy *p = arg;
	char why[128];

	snprintf(why, sizeof(why), "its agent did not report its ranks' end "
		 "within %g s of their SIGKILL", p->cfg.kill_grace + GIVE_UP_AFTER);
	p->cfg.agents.give_up(p->cfg.agents.arg, why);
}

static void
on_grace(evutil_socket_t fd, short what, void *arg)
{
	kill_all(arg);
}

/*
 * Stopping is deferred to the end of the current callback, so that ranks
 * reaped in the same pass as the first failure count as failures of their
 * own, not as ranks that worldrun stopped.
 */
static void
on_stop(evutil_socket_t fd, short what, void *arg)
{
	struct wr_policy *p = arg;

	if (!p->stopping) {
		stop(p, SIGTERM);
	}
	wr_policy_check_done(p);
}

void
wr_policy_fail(struct wr_policy *p, int status, const char *cause, int rank)
{
	wr_policy_decide(p, status, cause, rank);
	if (!p->stopping) {
		event_active(p->stop_ev, EV_TIMEOUT, 0);
	}
}

void
wr_policy_fail_now(struct wr_policy *p, int status, const char *cause, int rank)
{
	wr_policy_decide(p, status, cause, rank);
	if (!p->stopping) {
		stop(p, SIGTERM);
	}
}

/* The hang report is out: now the TERM/KILL ladder. */
static void
stop_timed_out(void *arg)
{
	struct wr_policy *p = arg;

	if (!p->stopping) {
		stop(p, SIGTERM);
	}
}

/*
 * Stopped (a signal, --timeout) while agents are still connecting: their
 * ranks never start. A host that failed to answer is not such a stop: the
 * others still answer, so that every host's fault is said.
 */
static void
cancel_start(struct wr_policy *p)
{
	if (!p->start_done) {
		p->cfg.agents.cancel(p->cfg.agents.arg);
	}
}

static void
on_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct wr_policy *p = arg;

	cancel_start(p);
	if (wr_policy_decide(p, 124, "timeout", -1)) {
		wr_output_say(p->out, "timed out after %g s", p->cfg.timeout);
	}
	if (!p->stopping) {
		wr_status_print(&p->hang, p->cfg.timeout_stacks, stop_timed_out, p);
	}
}

/*
 * A worldrun told to stop by a signal does not wait for ever for a reader
 * that does not read: twice --kill-grace after the signal (the ranks'
 * grace, then the output's), or at a second signal, it drops what is
 * still queued or unread in the ranks' pipes and dies by the signal.
 */
static void
on_drain_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct wr_policy *p = arg;

	p->abandon = true;
	event_base_loopexit(p->cfg.base, NULL);
}


/* What -v says of the ranks at the end, in one line: how they ended, the
 * slowest and the one with the largest peak memory. (-vv tells each.) */
struct tally {
	int ok, failed, stopped;
	int slowest, largest; /* ranks; -1: none */
};

static double
ran_for(const struct wr_rank *r)
{
	return r->end_mono - r->start_mono;
}

static void
tally_ranks(const struct wr_policy *p, struct tally *t)
{
	*t = (struct tally){ .slowest = -1, .largest = -1 };
	for (int i = 0; i < p->nranks; i++) {
		const struct wr_rank *r = &p->ranks[i];

		if (r->state < WR_RANK_EXITED || r->start_failed) {
			continue;
		}
		if (r->signaled) {
			t->stopped++;
		} else if (WIFEXITED(r->wstatus) && WEXITSTATUS(r->wstatus) == 0 &&
			   !r->pmi_left && !r->host_lost) {
			t->ok++;
		} else {
			t->failed++;
		}
		if (!r->host_lost && (t->slowest < 0 || ran_for(r) > ran_for(&p->ranks[t->slowest]))) {
			t->slowest = i;
		}
		if (r->maxrss_kib > 0 && (t->largest < 0 ||
					  r->maxrss_kib > p->ranks[t->largest].maxrss_kib)) {
			t->largest = i;
		}
	}
}

/* "all 8 ranks finished after 1.30 s on 2 hosts: 7 ok, 1 failed; slowest
 * rank 3 (1.21 s); largest peak memory rank 5 (45.2 MiB)" */
static void
say_summary(const struct wr_policy *p)
{
	struct tally t;
	char ends[96], slow[64] = "", big[80] = "";
	int n, hosts = p->cfg.map->nnodes;

	tally_ranks(p, &t);
	n = snprintf(ends, sizeof(ends), "%d ok", t.ok);
	if (t.failed > 0) {
		n += snprintf(ends + n, sizeof(ends) - (size_t)n, ", %d failed", t.failed);
	}
	if (t.stopped > 0) {
		snprintf(ends + n, sizeof(ends) - (size_t)n, ", %d stopped", t.stopped);
	}
	if (t.slowest >= 0) {
		snprintf(slow, sizeof(slow), "; slowest rank %d (%.2f s)", t.slowest,
			 ran_for(&p->ranks[t.slowest]));
	}
	if (t.largest >= 0) {
		snprintf(big, sizeof(big), "; largest peak memory rank %d (%.1f MiB)",
			 t.largest, (double)p->ranks[t.largest].maxrss_kib / 1024);
	}
	wr_output_say(p->out, "all %d rank%s finished after %.2f s on %d host%s: %s%s%s",
		      p->nstarted, wr_policy_plural(p->nstarted), wr_clock_mono() - p->cfg.t0,
		      hosts, wr_policy_plural(hosts), ends, slow, big);
}

/* SIGINT, SIGTERM, SIGHUP: stop the job, and end by the signal. */
static void
stop_by(struct wr_policy *p, int sig)
{
	p->interrupted = true;
	if (p->stopping) {
		/* A second Ctrl-C means now. */
		if (sig == SIGINT && !p->killed) {
			kill_all(p);
		}
		/* Asked again: nobody waits for a slow reader any more. */
		if (p->self_signal != 0) {
			on_drain_deadline(-1, 0, p);
		}
		return;
	}
	if (wr_policy_decide(p, 128 + sig, "signal", -1)) {
		struct timeval tv = wr_clock_tv(2 * p->cfg.kill_grace);

		p->self_signal = sig;
		evtimer_add(p->drain_ev, &tv);
	}
	wr_output_say(p->out, "received %s: stopping %d rank%s",
		      wr_policy_signame(sig), count_running(p),
		      wr_policy_plural(count_running(p)));
	cancel_start(p);
	stop(p, sig);
}

void
wr_policy_signal(struct wr_policy *p, int sig)
{
	switch (sig) {
	case SIGINT:
	case SIGTERM:
	case SIGHUP:
		stop_by(p, sig);
		return;
	case SIGTSTP:
		wr_reghost_pause_leases(p->registry, true);
		wr_policy_send(p, WR_CMD_SIGNAL, -1, SIGSTOP);
		/* Other hosts' ranks stop now, not when we go on: and their
		 * agents then know that our silence is no loss. */
		p->cfg.agents.flush(p->cfg.agents.arg);
		raise(SIGSTOP);
		return;
	case SIGCONT:
		wr_policy_send(p, WR_CMD_SIGNAL, -1, SIGCONT);
		wr_reghost_pause_leases(p->registry, false);
		return;
	case SIGQUIT:
		/* As a JVM dumps its threads: the job goes on. */
		if (!p->cfg.forward_quit) {
			wr_status_print(&p->hang, false, NULL, NULL);
			return;
		}
		wr_policy_send(p, WR_CMD_SIGNAL, -1, sig);
		return;
	default:
		/* USR1, USR2 and, with --forward-quit, QUIT: the ranks decide. */
		wr_policy_send(p, WR_CMD_SIGNAL, -1, sig);
		return;
	}
}

void
wr_policy_check_done(struct wr_policy *p)
{
	if (!p->start_done || p->nfinished < p->nstarted ||
	    evtimer_pending(p->stop_ev, NULL)) {
		return;
	}
	/* A closed stdout ends worldrun quietly, as it ends any filter. */
	if (p->nstopped > 0 && (p->cfg.verbose || p->self_signal != SIGPIPE)) {
		wr_output_say(p->out, "stopped %d%s rank%s", p->nstopped,
			      p->failed_rank >= 0 ? " other" : "",
			      wr_policy_plural(p->nstopped));
		p->nstopped = 0;
	}
	if (p->cfg.verbose) {
		say_summary(p);
	}
	if (wr_output_error(p->out) != 0 || wr_output_is_drained(p->out)) {
		event_base_loopexit(p->cfg.base, NULL);
	} else {
		wr_output_watch_drain(p->out);
	}
}

static void
on_output_flow(void *arg, int rank, int stream, bool pause)
{
	struct wr_policy *p = arg;
	struct wr_cmd cmd = { .kind = pause ? WR_CMD_PAUSE : WR_CMD_RESUME,
			      .rank = rank, .stream = stream };

	p->cfg.agents.send(p->cfg.agents.arg, &cmd);
}

/*
 * A file under --output-dir could not be written (a full disk): the job
 * loses what it was told to keep, which decides the status as worldrun's
 * own failure (125), and the job stops.
 */
static void
check_file_error(struct wr_policy *p)
{
	int rank, stream, err = wr_output_file_error(p->out, &rank, &stream);

	if (err == 0 || p->file_rank >= 0) {
		return;
	}
	p->file_rank = rank;
	p->file_stream = stream;
	p->file_err = -err;
	wr_policy_decide(p, 125, "output-dir-failed", -1);
	if (!p->stopping) {
		stop(p, SIGTERM);
	}
}

static void
on_output_changed(void *arg)
{
	struct wr_policy *p = arg;

	check_file_error(p);
	if (wr_output_error(p->out) == -EPIPE) {
		/* Our reader is gone (yes | head): end as a filter does, by SIGPIPE. */
		if (wr_policy_decide(p, 128 + SIGPIPE, "output-closed", -1)) {
			p->self_signal = SIGPIPE;
		}
		if (!p->stopping) {
			stop(p, SIGTERM);
		}
	} else if (wr_output_error(p->out) != 0) {
		if (wr_policy_decide(p, 125, "output-failed", -1)) {
			fprintf(stderr, "worldrun: unable to write output: %s\n",
				strerror(-wr_output_error(p->out)));
		}
		if (!p->stopping) {
			stop(p, SIGTERM);
		}
	}
	if (p->nfinished == p->nstarted &&
	    (wr_output_error(p->out) != 0 || wr_output_is_drained(p->out))) {
		event_base_loopexit(p->cfg.base, NULL);
	}
}

/*
 * Node @node cannot go on: its agent refused the setup (the program is
 * missing there: 126, 127) or its channel is lost. Its ranks that did not
 * finish are lost with it, which fails the job, --keep-going or not.
 */
static void
on_node_lost(void *arg, int node, int status, const char *why)
{
	struct wr_policy *p = arg;
	const struct wr_map *map = p->cfg.map;
	int lost = 0, open = 0;

	for (int i = 0; i < p->nranks; i++) {
		struct wr_rank *r = &p->ranks[i];

		if (map->node[i] != node || r->state == WR_RANK_FINISHED) {
			continue;
		}
		open++;
		if (r->state == WR_RANK_PENDING) {
			continue;
		}
		/* One that ended already keeps its status and its line. */
		if (r->state == WR_RANK_RUNNING) {
			lost++;
			r->host_lost = true;
			r->lost = "its host was lost";
			r->end_mono = r->start_mono;
			r->end_epoch = wr_clock_epoch();
		} else if (r->failed && !p->closing) {
			wr_policy_say_failure(p, i);
		}
		r->state = WR_RANK_FINISHED;
		p->nfinished++;
		wr_reghost_rank_dead(p->registry, i);
	}
	if (open == 0 || p->closing) {
		return;
	}
	wr_output_say(p->out, "host %s: %s", map->host[node], why);
	if (lost > 0) {
		wr_output_say(p->out, "host %s: lost %d running rank%s with it",
			      map->host[node], lost, wr_policy_plural(lost));
	}
	wr_policy_fail(p, status, status == 127 ? "not-found"
		       : status == 126 ? "not-executable" : "host-lost", -1);
	wr_policy_check_done(p);
}

/* What a node's remote shell or agent says goes to our stderr, named;
 * srun's own lines (@node -1) name srun themselves. */
static void
on_node_said(void *arg, int node, const char *line)
{
	struct wr_policy *p = arg;

	if (!p->closing && node >= 0) {
		wr_output_say(p->out, "host %s: %s", p->cfg.map->host[node], line);
	} else if (!p->closing) {
		wr_output_say(p->out, "%s", line);
	}
}

/* The registry's accept() ran out of fds: it pauses, and says so once. */
static void
on_registry_full(void *arg, int err)
{
	struct wr_policy *p = arg;

	wr_output_say(p->out, "registry: unable to accept a connection: %s; "
		      "new connections wait while those open are served",
		      strerror(err));
}

/* A "status" request (worldctl status): the hang report, without stacks. */
/* The hang report wants the stack of a rank of another host. */
static void
ask_stack(void *arg, int rank)
{
	wr_policy_send(arg, WR_CMD_STACK, rank, 0);
}

static json_t *
on_status(void *arg, json_t *survey)
{
	struct wr_policy *p = arg;

	return wr_status_answer(&p->hang, survey);
}

/* The stopping rank that failed the excused one's wait did not end in
 * time: the excused failure stands. */
static void
on_stopper_late(evutil_socket_t fd, short what, void *arg)
{
	struct wr_policy *p = arg;

	p->stopper_expired = true;
	wr_policy_settle_excused(p);
}

int
wr_policy_create(const struct wr_policy_cfg *cfg, struct wr_policy **out)
{
	struct wr_policy *p = calloc(1, sizeof(*p));
	struct wr_status_cfg scfg = { .jobid = cfg->jobid, .host = cfg->host,
				      .t0 = cfg->t0, .map = cfg->map, .base = cfg->base,
				      .ask_stack = ask_stack, .ask_arg = p };

	*out = p;
	if (p == NULL) {
		return -ENOMEM;
	}
	p->cfg = *cfg;
	p->status = -1;
	p->failed_rank = -1;
	p->excused = -1;
	p->stopper = -1;
	p->file_rank = -1;
	p->nranks = cfg->map->nranks;
	p->ranks = calloc((size_t)p->nranks + 1, sizeof(*p->ranks));
	scfg.ranks = p->ranks;
	for (int i = 0; p->ranks != NULL && i < p->nranks; i++) {
		p->ranks[i].dead_peer = -1;
	}
	wr_status_init(&p->hang, &scfg);
	p->stop_ev = event_new(cfg->base, -1, 0, on_stop, p);
	p->grace_ev = evtimer_new(cfg->base, on_grace, p);
	p->give_up_ev = evtimer_new(cfg->base, on_give_up, p);
	p->timeout_ev = evtimer_new(cfg->base, on_timeout, p);
	p->drain_ev = evtimer_new(cfg->base, on_drain_deadline, p);
	p->lost_ev = evtimer_new(cfg->base, wr_policy_on_lost_check, p);
	p->stopper_ev = evtimer_new(cfg->base, on_stopper_late, p);
	if (p->ranks == NULL || p->stop_ev == NULL || p->grace_ev == NULL ||
	    p->timeout_ev == NULL || p->drain_ev == NULL || p->give_up_ev == NULL ||
	    p->lost_ev == NULL || p->stopper_ev == NULL) {
		return -ENOMEM;
	}
	return 0;
}

void
wr_policy_wire(struct wr_policy *p, struct wr_output_cfg *out,
	       struct wr_reghost_cfg *reg, struct wr_nodes_cfg *nodes)
{
	out->flow = on_output_flow;
	out->changed = on_output_changed;
	out->arg = p;
	reg->rank_lost = wr_policy_on_rank_lost;
	reg->rank_failed = wr_policy_on_rank_failed;
	reg->peer_dead = wr_policy_on_peer_dead;
	reg->full = on_registry_full;
	reg->status = on_status;
	reg->fate = wr_policy_rank_fate;
	reg->arg = p;
	nodes->event = wr_policy_on_agent_event;
	nodes->lost = on_node_lost;
	nodes->said = on_node_said;
	nodes->arg = p;
}

void
wr_policy_bind(struct wr_policy *p, struct wr_output *out, struct wr_reghost *registry)
{
	p->out = out;
	p->registry = registry;
	wr_status_bind(&p->hang, out, registry);
}

void
wr_policy_begin(struct wr_policy *p)
{
	struct timeval tv = wr_clock_tv(p->cfg.timeout);

	if (p->cfg.timeout > 0) {
		evtimer_add(p->timeout_ev, &tv);
	}
}

void
wr_policy_end(struct wr_policy *p)
{
	p->closing = true;
	p->hang.quiet = true;
}

void
wr_policy_outcome(const struct wr_policy *p, struct wr_policy_outcome *o)
{
	*o = (struct wr_policy_outcome){
		.status = p->status, .cause = p->cause, .failed_rank = p->failed_rank,
		.file_rank = p->file_rank, .file_stream = p->file_stream,
		.file_err = p->file_err, .self_signal = p->self_signal,
		.interrupted = p->interrupted,
		.abandon = p->abandon, .hang = wr_status_last(&p->hang),
	};
}

const struct wr_rank *
wr_policy_ranks(const struct wr_policy *p)
{
	return p->ranks;
}

static void
free_timers(struct wr_policy *p)
{
	struct event *const evs[] = { p->stop_ev, p->grace_ev, p->give_up_ev,
				      p->timeout_ev, p->drain_ev, p->lost_ev,
				      p->stopper_ev };

	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++) {
		if (evs[i] != NULL) {
			event_free(evs[i]);
		}
	}
}

int
wr_policy_started(const struct wr_policy *p, bool *done)
{
	*done = p->start_done;
	return p->nstarted;
}

void
wr_policy_destroy(struct wr_policy *p)
{
	if (p == NULL) {
		return;
	}
	free_timers(p);
	wr_policy_spawns_free(p);
	wr_feed_close(p->feed);
	wr_status_finish(&p->hang);
	for (int i = 0; p->ranks != NULL && i < p->nranks; i++) {
		free(p->ranks[i].failing);
		free(p->ranks[i].exception);
		free(p->ranks[i].traceback);
		free(p->ranks[i].no_lib);
	}
	free(p->ranks);
	free(p);
}
