/* SPDX-License-Identifier: MIT */
/*
 * policy: what worldrun decides while the job runs. It turns the agents'
 * events and the registry's losses into rank states, decides the exit
 * status (the first failure wins), stops the job (the stop signal, then
 * SIGKILL after the grace period) and prints the failure lines. It never
 * touches a process itself: agents do. run.c sets the job up around it.
 */
#include "policy.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "clock.h"
#include "feed.h"
#include "nodes.h"
#include "output.h"
#include "quote.h"
#include "spawn.h"
#include "status.h"

/* Seconds, beyond --kill-grace, that remote ranks have to report their end
 * once SIGKILL was sent. */
#define GIVE_UP_AFTER 2.0

static const char *
signame(int sig)
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

static int
status_of(int ws)
{
	if (WIFEXITED(ws)) {
		return WEXITSTATUS(ws);
	}
	return WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : 125;
}

/*
 * How a rank ended, in the words of the failure lines: "exited with
 * status 3" or "killed by signal 15 (SIGTERM)". Every message about a
 * rank's end says it so, never as a 128+S status.
 */
static const char *
ending(char *buf, size_t size, int ws)
{
	if (WIFSIGNALED(ws)) {
		snprintf(buf, size, "killed by signal %d (%s)", WTERMSIG(ws),
			 signame(WTERMSIG(ws)));
	} else {
		snprintf(buf, size, "exited with status %d", status_of(ws));
	}
	return buf;
}

static const char *
plural(int n)
{
	return n == 1 ? "" : "s";
}

static void
send_cmd(struct wr_run *run, enum wr_cmd_kind kind, int rank, int sig)
{
	struct wr_cmd cmd = { .kind = kind, .rank = rank, .stream = -1, .sig = sig };

	if (run->nodes != NULL) {
		wr_nodes_send(run->nodes, &cmd);
	}
}

/* The first cause decides the exit status; later ones change nothing. */
static bool
decide(struct wr_run *run, int status, const char *cause, int rank)
{
	if (run->status >= 0) {
		return false;
	}
	run->status = status;
	run->cause = cause;
	run->failed_rank = rank;
	return true;
}

static int
count_running(struct wr_run *run)
{
	int n = 0;

	for (int i = 0; i < run->nranks; i++) {
		n += run->ranks[i].state == WR_RANK_RUNNING;
	}
	return n;
}

/* Send @sig to every running rank's group, then SIGKILL after the grace. */
static void
stop(struct wr_run *run, int sig)
{
	struct timeval tv = wr_clock_tv(run->opts.kill_grace);
	int n = count_running(run);

	run->stopping = true;
	for (int i = 0; i < run->nranks; i++) {
		if (run->ranks[i].state == WR_RANK_RUNNING && !run->ranks[i].aborted) {
			run->ranks[i].signaled = true;
		}
	}
	if (run->opts.verbose && n > 0) {
		wr_output_say(run->out, "sending %s to %d rank%s", signame(sig), n,
			      plural(n));
	}
	send_cmd(run, WR_CMD_SIGNAL, -1, sig);
	/* A stopped rank cannot act on the signal until it runs again. */
	send_cmd(run, WR_CMD_SIGNAL, -1, SIGCONT);
	if (!evtimer_pending(run->grace_ev, NULL)) {
		evtimer_add(run->grace_ev, &tv);
	}
}

static void
kill_all(struct wr_run *run)
{
	if (run->opts.verbose) {
		wr_output_say(run->out, "sending SIGKILL to what is left of the job");
	}
	for (int i = 0; i < run->nranks; i++) {
		if (run->ranks[i].state == WR_RANK_RUNNING && !run->ranks[i].aborted) {
			run->ranks[i].signaled = true;
		}
	}
	run->stopping = true;
	run->killed = true;
	send_cmd(run, WR_CMD_SIGNAL, -1, SIGKILL);
	send_cmd(run, WR_CMD_SIGNAL, -1, SIGCONT);
	if (!evtimer_pending(run->give_up_ev, NULL)) {
		struct timeval tv = wr_clock_tv(run->opts.kill_grace + GIVE_UP_AFTER);

		evtimer_add(run->give_up_ev, &tv);
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
	struct wr_run *run = arg;
	char why[128];

	snprintf(why, sizeof(why), "its agent did not report its ranks' end "
		 "within %g s of their SIGKILL", run->opts.kill_grace + GIVE_UP_AFTER);
	wr_nodes_give_up(run->nodes, why);
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
static void check_done(struct wr_run *run);
static void on_drain_deadline(evutil_socket_t fd, short what, void *arg);

static void
on_stop(evutil_socket_t fd, short what, void *arg)
{
	struct wr_run *run = arg;

	if (!run->stopping) {
		stop(run, SIGTERM);
	}
	check_done(run);
}

static void
fail(struct wr_run *run, int status, const char *cause, int rank)
{
	decide(run, status, cause, rank);
	if (!run->stopping) {
		event_active(run->stop_ev, EV_TIMEOUT, 0);
	}
}

/* The hang report is out: now the TERM/KILL ladder. */
static void
stop_timed_out(struct wr_run *run)
{
	if (!run->stopping) {
		stop(run, SIGTERM);
	}
}

/*
 * Stopped (a signal, --timeout) while agents are still connecting: their
 * ranks never start. A host that failed to answer is not such a stop: the
 * others still answer, so that every host's fault is said.
 */
static void
cancel_start(struct wr_run *run)
{
	if (run->nodes != NULL && !run->start_done) {
		wr_nodes_cancel(run->nodes);
	}
}

static void
on_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct wr_run *run = arg;

	cancel_start(run);
	if (decide(run, 124, "timeout", -1)) {
		wr_output_say(run->out, "timed out after %g s", run->opts.timeout);
	}
	if (!run->stopping) {
		wr_status_print(run, run->opts.timeout_stacks, stop_timed_out);
	}
}

void
wr_policy_signal(struct wr_run *run, int sig)
{
	switch (sig) {
	case SIGINT:
	case SIGTERM:
	case SIGHUP:
		if (run->stopping) {
			/* A second Ctrl-C means now. */
			if (sig == SIGINT && !run->killed) {
				kill_all(run);
			}
			/* Asked again: nobody waits for a slow reader any more. */
			if (run->self_signal != 0) {
				on_drain_deadline(-1, 0, run);
			}
			return;
		}
		if (decide(run, 128 + sig, "signal", -1)) {
			struct timeval tv = wr_clock_tv(2 * run->opts.kill_grace);

			run->self_signal = sig;
			evtimer_add(run->drain_ev, &tv);
		}
		wr_output_say(run->out, "received %s: stopping %d rank%s",
			      signame(sig), count_running(run),
			      plural(count_running(run)));
		cancel_start(run);
		stop(run, sig);
		return;
	case SIGTSTP:
		wr_reghost_pause_leases(&run->registry, true);
		send_cmd(run, WR_CMD_SIGNAL, -1, SIGSTOP);
		raise(SIGSTOP);
		return;
	case SIGCONT:
		send_cmd(run, WR_CMD_SIGNAL, -1, SIGCONT);
		wr_reghost_pause_leases(&run->registry, false);
		return;
	case SIGQUIT:
		/* As a JVM dumps its threads: the job goes on. */
		if (!run->opts.forward_quit) {
			wr_status_print(run, false, NULL);
			return;
		}
		send_cmd(run, WR_CMD_SIGNAL, -1, sig);
		return;
	default:
		/* USR1, USR2 and, with --forward-quit, QUIT: the ranks decide. */
		send_cmd(run, WR_CMD_SIGNAL, -1, sig);
		return;
	}
}

static void
say_failure(struct wr_run *run, int rank)
{
	struct wr_rank *r = &run->ranks[rank];
	double t = r->end_mono - r->start_mono;
	char e[64];

	if (r->lost_killed) {
		wr_output_say(run->out, "rank %d (pid %d on %s) was lost: %s; killed "
			      "after %.2f s", rank, (int)r->pid, wr_map_host(&run->map, rank),
			      r->lost, t);
	} else if (r->pmi_left && WIFEXITED(r->wstatus) && WEXITSTATUS(r->wstatus) == 0) {
		wr_output_say(run->out, "rank %d (pid %d on %s) left PMI without finalize, "
			      "then %s after %.2f s", rank, (int)r->pid,
			      wr_map_host(&run->map, rank), ending(e, sizeof(e), r->wstatus), t);
	} else {
		wr_output_say(run->out, "rank %d (pid %d on %s) %s after %.2f s", rank,
			      (int)r->pid, wr_map_host(&run->map, rank),
			      ending(e, sizeof(e), r->wstatus), t);
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
	struct wr_run *run = arg;

	run->abandon = true;
	event_base_loopexit(run->base, NULL);
}

static void
check_done(struct wr_run *run)
{
	if (!run->start_done || run->nfinished < run->nstarted ||
	    evtimer_pending(run->stop_ev, NULL)) {
		return;
	}
	/* A closed stdout ends worldrun quietly, as it ends any filter. */
	if (run->nstopped > 0 && (run->opts.verbose ||
				  run->self_signal != SIGPIPE)) {
		wr_output_say(run->out, "stopped %d%s rank%s", run->nstopped,
			      run->failed_rank >= 0 ? " other" : "",
			      plural(run->nstopped));
		run->nstopped = 0;
	}
	if (run->opts.verbose) {
		wr_output_say(run->out, "all %d rank%s finished after %.2f s",
			      run->nstarted, plural(run->nstarted),
			      wr_clock_mono() - run->t0);
	}
	if (wr_output_error(run->out) != 0 || wr_output_is_drained(run->out)) {
		event_base_loopexit(run->base, NULL);
	} else {
		wr_output_watch_drain(run->out);
	}
}

static void
on_started(struct wr_run *run, const struct wr_ev *ev)
{
	struct wr_rank *r = &run->ranks[ev->rank];

	r->state = WR_RANK_RUNNING;
	r->pid = ev->pid;
	r->far = run->map.node[ev->rank] != wr_nodes_inprocess(&run->map);
	r->start_mono = ev->mono;
	r->seen_mono = wr_clock_mono();
	r->start_epoch = wr_clock_epoch();
	run->nstarted++;
	/* A remote host's rank may be announced after the stop went out: its
	 * agent had started it by then, and signals it in turn. */
	if (run->stopping) {
		r->signaled = true;
	}
}

/* The directory rank @rank was to run in, for messages. */
static const char *
wdir_of(const struct wr_run *run, int rank)
{
	const char *d = rank >= 0 && rank < run->nranks && run->ranks[rank].far
			? run->job.far_wdir : run->job.wdir;

	return d != NULL ? d : ".";
}

static void
on_start_failed(struct wr_run *run, const struct wr_ev *ev)
{
	char q[WR_QUOTE_MAX], qd[WR_QUOTE_MAX];
	const char *prog = wr_quote(q, sizeof(q), run->job.path);
	int status;

	if (ev->rank >= 0 && ev->rank < run->nranks) {
		run->ranks[ev->rank].start_failed = true;
	}
	switch (ev->stage) {
	case WR_SPAWN_EXEC:
		status = wr_spawn_status(ev->stage, ev->err);
		wr_output_say(run->out, "rank %d: unable to execute %s: %s", ev->rank,
			      prog, strerror(ev->err));
		fail(run, status, status == 127 ? "not-found" : "not-executable", -1);
		return;
	case WR_SPAWN_CHDIR:
		wr_output_say(run->out, "rank %d: unable to enter %s: %s", ev->rank,
			      wr_quote(qd, sizeof(qd), wdir_of(run, ev->rank)),
			      strerror(ev->err));
		break;
	default:
		wr_output_say(run->out, "unable to start rank %d (%s): %s%s", ev->rank,
			      prog, strerror(ev->err),
			      ev->err == EAGAIN ? " (the process limit, ulimit -u, "
						  "is reached)"
			      : ev->err == EMFILE ? " (the open-file limit, ulimit "
						    "-n, is reached)"
						  : "");
		break;
	}
	fail(run, 125, "start-failed", -1);
}

static void
on_exited(struct wr_run *run, const struct wr_ev *ev)
{
	struct wr_rank *r = &run->ranks[ev->rank];
	bool bad = !(WIFEXITED(ev->wstatus) && WEXITSTATUS(ev->wstatus) == 0) ||
		   r->pmi_left;
	/* Gone from PMI, then exit 0: MPICH's ranks never do that when well. */
	int status = status_of(ev->wstatus) != 0 ? status_of(ev->wstatus) : 1;
	const char *cause;

	r->state = WR_RANK_EXITED;
	r->wstatus = ev->wstatus;
	if (bad) {
		wr_reghost_rank_dead(&run->registry, ev->rank);
	} else {
		wr_reghost_rank_done(&run->registry, ev->rank);
	}
	r->maxrss_kib = ev->maxrss_kib;
	r->end_mono = ev->mono;
	r->end_epoch = wr_clock_epoch();
	if (run->opts.verbose > 1 || (run->opts.verbose && !bad)) {
		char e[64];

		wr_output_say(run->out, "rank %d (pid %d) %s after %.2f s", ev->rank,
			      (int)r->pid, ending(e, sizeof(e), ev->wstatus),
			      r->end_mono - r->start_mono);
	}
	if (r->signaled) {
		run->nstopped++;
		return;
	}
	if (!bad || r->start_failed || r->aborted) {
		return;
	}
	r->failed = true;
	cause = r->lost_killed ? "rank-lost" : r->pmi_left ? "rank-left-pmi"
		: WIFSIGNALED(ev->wstatus) ? "rank-killed" : "rank-exited";
	if (run->opts.keep_going) {
		decide(run, status, cause, ev->rank);
		return;
	}
	fail(run, status, cause, ev->rank);
}

static void
on_finished(struct wr_run *run, const struct wr_ev *ev)
{
	struct wr_rank *r = &run->ranks[ev->rank];

	r->state = WR_RANK_FINISHED;
	run->nfinished++;
	/* Printed once its output is through, so the line comes after it. */
	if (r->failed) {
		say_failure(run, ev->rank);
	}
	if (ev->forced) {
		wr_output_say(run->out, "rank %d: a process outside its process group "
			      "kept its output open; stopped reading it", ev->rank);
	}
	check_done(run);
}

static void on_feed(void *arg, const char *data, size_t len);

/*
 * Stdin travels as data to every rank for "all", and to a stdin rank
 * that another node runs: read from once the ranks are there to take it.
 */
static void
open_feed(struct wr_run *run)
{
	int rc;

	if ((run->opts.stdin_mode != WR_STDIN_ALL &&
	     (run->opts.stdin_mode != WR_STDIN_RANK || run->job.stdin_fd >= 0)) ||
	    run->nstarted == 0 || run->stopping) {
		return;
	}
	rc = wr_feed_open(run->base, STDIN_FILENO, on_feed, run, &run->feed);
	if (rc < 0) {
		wr_output_say(run->out, "unable to read stdin: %s", strerror(-rc));
		fail(run, 125, "setup-failed", -1);
	}
}

/* The agents' START is over: from here on the job may end. */
static void
on_start_done(struct wr_run *run, const struct wr_ev *ev)
{
	run->start_done = true;
	open_feed(run);
	/* A START that failed before any rank could say so itself (memory,
	 * the stdin fan-out) is the job's failure all the same. */
	if (ev->err != 0 && ev->count < run->nranks && run->status < 0) {
		wr_output_say(run->out, "unable to start the ranks: %s",
			      strerror(ev->err));
		fail(run, 125, "start-failed", -1);
	}
	if (run->opts.verbose) {
		wr_output_say(run->out, "started %d rank%s in %.1f ms", ev->count,
			      plural(ev->count), (wr_clock_mono() - run->t0) * 1e3);
	}
	check_done(run);
}

static void on_rank_lost(void *arg, int rank, const char *why);

/* MPI_Abort: the job ends with its code, --keep-going or not. */
static void
on_abort(struct wr_run *run, const struct wr_ev *ev)
{
	struct wr_rank *r = &run->ranks[ev->rank];

	if (r->state != WR_RANK_RUNNING || run->closing) {
		return;
	}
	wr_output_say(run->out, "rank %d (pid %d on %s) called abort with exit code %d%s%.*s",
		      ev->rank, (int)r->pid, wr_map_host(&run->map, ev->rank), ev->status,
		      ev->len > 0 ? ": " : "", (int)ev->len, ev->data);
	r->aborted = true;
	fail(run, ev->status, "rank-aborted", ev->rank);
}

/* A rank gone from PMI without finalize has failed: if it does not end
 * by itself, it is lost, as one the registry lost. */
static void
on_left(struct wr_run *run, const struct wr_ev *ev)
{
	struct wr_rank *r = &run->ranks[ev->rank];

	if (r->state != WR_RANK_RUNNING || run->stopping || r->pmi_left) {
		return;
	}
	r->pmi_left = true;
	if (ev->len > 0) {
		wr_output_say(run->out, "rank %d: %.*s", ev->rank, (int)ev->len, ev->data);
	}
	on_rank_lost(run, ev->rank, "it left PMI without finalize");
}

static void
on_agent_event(void *arg, const struct wr_ev *ev)
{
	struct wr_run *run = arg;

	switch (ev->kind) {
	case WR_EV_STARTED:
		on_started(run, ev);
		return;
	case WR_EV_START_FAILED:
		on_start_failed(run, ev);
		return;
	case WR_EV_OUTPUT:
		wr_output_data(run->out, ev->rank, ev->stream, ev->data, ev->len,
			       ev->partial, ev->eof);
		return;
	case WR_EV_EXITED:
		on_exited(run, ev);
		return;
	case WR_EV_FINISHED:
		on_finished(run, ev);
		return;
	case WR_EV_STDIN_TAKEN:
		wr_feed_next(run->feed);
		return;
	case WR_EV_START_DONE:
		on_start_done(run, ev);
		return;
	case WR_EV_ABORT:
		on_abort(run, ev);
		return;
	case WR_EV_LEFT:
		on_left(run, ev);
		return;
	case WR_EV_READY:
	case WR_EV_NKINDS:
		return;
	}
}

static void
on_output_flow(void *arg, int rank, int stream, bool pause)
{
	struct wr_run *run = arg;
	struct wr_cmd cmd = { .kind = pause ? WR_CMD_PAUSE : WR_CMD_RESUME,
			      .rank = rank, .stream = stream };

	if (run->nodes != NULL) {
		wr_nodes_send(run->nodes, &cmd);
	}
}

/*
 * A file under --output-dir could not be written (a full disk): the job
 * loses what it was told to keep, which decides the status as worldrun's
 * own failure (125), and the job stops.
 */
static void
check_file_error(struct wr_run *run)
{
	int rank, stream, err = wr_output_file_error(run->out, &rank, &stream);

	if (err == 0 || run->file_rank >= 0) {
		return;
	}
	run->file_rank = rank;
	run->file_stream = stream;
	run->file_err = -err;
	decide(run, 125, "output-dir-failed", -1);
	if (!run->stopping) {
		stop(run, SIGTERM);
	}
}

static void
on_output_changed(void *arg)
{
	struct wr_run *run = arg;

	check_file_error(run);
	if (wr_output_error(run->out) == -EPIPE) {
		/* Our reader is gone (yes | head): end as a filter does, by SIGPIPE. */
		if (decide(run, 128 + SIGPIPE, "output-closed", -1)) {
			run->self_signal = SIGPIPE;
		}
		if (!run->stopping) {
			stop(run, SIGTERM);
		}
	} else if (wr_output_error(run->out) != 0) {
		if (decide(run, 125, "output-failed", -1)) {
			fprintf(stderr, "worldrun: unable to write output: %s\n",
				strerror(-wr_output_error(run->out)));
		}
		if (!run->stopping) {
			stop(run, SIGTERM);
		}
	}
	if (run->nfinished == run->nstarted &&
	    (wr_output_error(run->out) != 0 || wr_output_is_drained(run->out))) {
		event_base_loopexit(run->base, NULL);
	}
}

static void
on_feed(void *arg, const char *data, size_t len)
{
	struct wr_run *run = arg;
	struct wr_cmd cmd = { .kind = len > 0 ? WR_CMD_STDIN : WR_CMD_STDIN_EOF,
			      .data = data, .len = len };

	wr_nodes_send(run->nodes, &cmd);
}

/*
 * The registry lost a rank that is still running (it dropped its
 * connection, or its lease lapsed): it is dead to the job now. It may just
 * be on its way out, and then its exit status tells more: give it a
 * second before killing it as a failure.
 */
static void
on_rank_lost(void *arg, int rank, const char *why)
{
	struct wr_run *run = arg;
	struct wr_rank *r = &run->ranks[rank];
	struct timeval tv = wr_clock_tv(1.0);
	bool first = r->state == WR_RANK_RUNNING && r->lost == NULL && !run->stopping;

	/* Before the waits it fails are told, so that they can say why. */
	if (first) {
		r->lost = why;
	}
	wr_reghost_rank_dead(&run->registry, rank);
	if (!first) {
		return;
	}
	if (!evtimer_pending(run->lost_ev, NULL)) {
		evtimer_add(run->lost_ev, &tv);
	}
}

static void
on_lost_check(evutil_socket_t fd, short what, void *arg)
{
	struct wr_run *run = arg;

	for (int i = 0; i < run->nranks; i++) {
		struct wr_rank *r = &run->ranks[i];

		if (r->lost != NULL && r->state == WR_RANK_RUNNING && !r->lost_killed) {
			r->lost_killed = true;
			send_cmd(run, WR_CMD_SIGNAL, i, SIGKILL);
			send_cmd(run, WR_CMD_SIGNAL, i, SIGCONT);
		}
	}
}

/* How rank @rank ended, for the words of the waits it failed. */
static void
rank_fate(void *arg, int rank, char *buf, size_t room)
{
	struct wr_run *run = arg;
	const struct wr_rank *r = rank >= 0 && rank < run->nranks ? &run->ranks[rank] : NULL;

	if (r != NULL && r->state >= WR_RANK_EXITED && WIFSIGNALED(r->wstatus)) {
		snprintf(buf, room, "was killed by signal %d (%s)", WTERMSIG(r->wstatus),
			 signame(WTERMSIG(r->wstatus)));
	} else if (r != NULL && r->state >= WR_RANK_EXITED) {
		snprintf(buf, room, "exited (status %d)", WEXITSTATUS(r->wstatus));
	} else if (r != NULL && r->lost != NULL) {
		snprintf(buf, room, "was lost (%s)", r->lost);
	} else if (r != NULL && wr_reghost_rank_left(&run->registry, rank)) {
		snprintf(buf, room, "left the job");
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
	struct wr_run *run = arg;
	int lost = 0, open = 0;

	for (int i = 0; i < run->nranks; i++) {
		struct wr_rank *r = &run->ranks[i];

		if (run->map.node[i] != node || r->state == WR_RANK_FINISHED) {
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
		} else if (r->failed && !run->closing) {
			say_failure(run, i);
		}
		r->state = WR_RANK_FINISHED;
		run->nfinished++;
		wr_reghost_rank_dead(&run->registry, i);
	}
	if (open == 0 || run->closing) {
		return;
	}
	wr_output_say(run->out, "host %s: %s", run->map.host[node], why);
	if (lost > 0) {
		wr_output_say(run->out, "host %s: lost %d running rank%s with it",
			      run->map.host[node], lost, plural(lost));
	}
	fail(run, status, status == 127 ? "not-found"
		      : status == 126 ? "not-executable" : "host-lost", -1);
	check_done(run);
}

/*
 * Every agent is ready. In a job of several nodes the ranks here publish
 * the address that the other hosts reached this machine at (their ssh
 * connections'), or loopback when no agent saw one (stand-ins here).
 */
static void
on_nodes_ready(void *arg, const char *addr)
{
	struct wr_run *run = arg;

	if (run->map.nnodes > 1 &&
	    wr_env_set(&run->job.env, "WORLD_ADVERTISE", addr != NULL ? addr : "127.0.0.1") < 0) {
		wr_output_say(run->out, "unable to set WORLD_ADVERTISE: %s", strerror(ENOMEM));
		fail(run, 125, "setup-failed", -1);
	}
}

/* What a node's remote shell or agent says goes to our stderr, named;
 * srun's own lines (@node -1) name srun themselves. */
static void
on_node_said(void *arg, int node, const char *line)
{
	struct wr_run *run = arg;

	if (!run->closing && node >= 0) {
		wr_output_say(run->out, "host %s: %s", run->map.host[node], line);
	} else if (!run->closing) {
		wr_output_say(run->out, "%s", line);
	}
}

/* The registry's accept() ran out of fds: it pauses, and says so once. */
static void
on_registry_full(void *arg, int err)
{
	struct wr_run *run = arg;

	wr_output_say(run->out, "registry: unable to accept a connection: %s; "
		      "new connections wait while those open are served",
		      strerror(err));
}

int
wr_policy_open(struct wr_run *run)
{
	run->stop_ev = event_new(run->base, -1, 0, on_stop, run);
	run->grace_ev = evtimer_new(run->base, on_grace, run);
	run->give_up_ev = evtimer_new(run->base, on_give_up, run);
	run->timeout_ev = evtimer_new(run->base, on_timeout, run);
	run->drain_ev = evtimer_new(run->base, on_drain_deadline, run);
	run->lost_ev = evtimer_new(run->base, on_lost_check, run);
	if (run->stop_ev == NULL || run->grace_ev == NULL || run->timeout_ev == NULL ||
	    run->drain_ev == NULL || run->give_up_ev == NULL || run->lost_ev == NULL) {
		return -ENOMEM;
	}
	return 0;
}

void
wr_policy_wire(struct wr_run *run, struct wr_output_cfg *out,
	       struct wr_reghost_cfg *reg, struct wr_nodes_cfg *nodes)
{
	out->flow = on_output_flow;
	out->changed = on_output_changed;
	out->arg = run;
	reg->rank_lost = on_rank_lost;
	reg->full = on_registry_full;
	reg->fate = rank_fate;
	reg->arg = run;
	nodes->event = on_agent_event;
	nodes->lost = on_node_lost;
	nodes->said = on_node_said;
	nodes->ready = on_nodes_ready;
	nodes->arg = run;
}

void
wr_policy_close(struct wr_run *run)
{
	struct event **evs[] = { &run->stop_ev, &run->grace_ev, &run->give_up_ev,
				 &run->timeout_ev, &run->drain_ev, &run->lost_ev };

	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++) {
		if (*evs[i] != NULL) {
			event_free(*evs[i]);
			*evs[i] = NULL;
		}
	}
}
