/* SPDX-License-Identifier: MIT */
/*
 * policy-ranks: the policy's half that follows each rank (policyint.h):
 * the agents' events turned into rank states and failures, the stdin
 * feed they take, the registry's losses, and the lines that tell how a
 * rank ended, in DESIGN's words.
 */
#include "policyint.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "errfile.h"
#include "quote.h"

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
			 wr_policy_signame(WTERMSIG(ws)));
	} else {
		snprintf(buf, size, "exited with status %d", status_of(ws));
	}
	return buf;
}

/* "rank 3", or "rank 3 \"learner\"" for a rank that named itself. */
static const char *
tag(const struct wr_policy *p, int rank, char *buf, size_t room)
{
	char name[80];

	wr_reghost_rank_name(p->registry, rank, name, sizeof(name));
	snprintf(buf, room, name[0] != '\0' ? "rank %d \"%s\"" : "rank %d%s", rank, name);
	return buf;
}

void
wr_policy_say_failure(struct wr_policy *p, int rank)
{
	struct wr_rank *r = &p->ranks[rank];
	const char *host = wr_map_host(p->cfg.map, rank);
	double t = r->end_mono - r->start_mono;
	char e[64], who[96];

	tag(p, rank, who, sizeof(who));
	if (r->lost_killed) {
		wr_output_say(p->out, "%s (pid %d on %s) was lost: %s; killed "
			      "after %.2f s", who, (int)r->pid, host, r->lost, t);
	} else if (r->pmi_left && WIFEXITED(r->wstatus) && WEXITSTATUS(r->wstatus) == 0) {
		wr_output_say(p->out, "%s (pid %d on %s) left PMI without finalize, "
			      "then %s after %.2f s", who, (int)r->pid, host,
			      ending(e, sizeof(e), r->wstatus), t);
	} else if (r->no_lib != NULL && WIFEXITED(r->wstatus) && WEXITSTATUS(r->wstatus) == 127) {
		wr_output_say(p->out, "%s (pid %d on %s) %s after %.2f s: the dynamic loader "
			      "could not find %s (LD_LIBRARY_PATH%s)", who, (int)r->pid, host,
			      ending(e, sizeof(e), r->wstatus), t, r->no_lib,
			      strncmp(r->no_lib, "libworld.", 9) == 0 ?
				      "; from a build tree, meson devenv" : "");
	} else {
		wr_output_say(p->out, "%s (pid %d on %s) %s after %.2f s%s%s", who,
			      (int)r->pid, host, ending(e, sizeof(e), r->wstatus), t,
			      r->exception != NULL && r->failing == NULL ? ": " : "",
			      r->exception != NULL && r->failing == NULL ? r->exception : "");
	}
}

static void
on_started(struct wr_policy *p, const struct wr_ev *ev)
{
	struct wr_rank *r = &p->ranks[ev->rank];

	r->state = WR_RANK_RUNNING;
	r->pid = ev->pid;
	r->far = p->cfg.map->node[ev->rank] != wr_nodes_inprocess(p->cfg.map);
	r->start_mono = ev->mono;
	r->seen_mono = wr_clock_mono();
	r->start_epoch = wr_clock_epoch();
	p->nstarted++;
	/* --report-bindings: its agent said where it runs. */
	if (ev->len > 0) {
		char who[96];

		wr_output_say(p->out, "%s (pid %d on %s) %.*s", tag(p, ev->rank, who, sizeof(who)),
			      (int)ev->pid, wr_map_host(p->cfg.map, ev->rank), (int)ev->len, ev->data);
	}
	/* A remote host's rank may be announced after the stop went out: its
	 * agent had started it by then, and signals it in turn. */
	if (p->stopping) {
		r->signaled = true;
	}
}

/* The directory rank @rank was to run in, for messages. */
static const char *
wdir_of(const struct wr_policy *p, int rank)
{
	const char *d = rank >= 0 && rank < p->nranks && p->ranks[rank].far
			? p->cfg.far_wdir : p->cfg.wdir;

	return d != NULL ? d : ".";
}

static void
on_start_failed(struct wr_policy *p, const struct wr_ev *ev)
{
	char q[WR_QUOTE_MAX], qd[WR_QUOTE_MAX], spawned[WR_WIRE_WHY_MAX + 1];
	const char *prog = p->cfg.program;
	int status;

	/* A spawn's rank runs a program of its own. */
	if (ev->len > 0) {
		snprintf(spawned, sizeof(spawned), "%.*s", (int)ev->len, ev->data);
		prog = spawned;
	}
	prog = wr_quote(q, sizeof(q), prog);
	if (ev->rank >= 0 && ev->rank < p->nranks) {
		p->ranks[ev->rank].start_failed = true;
	}
	switch (ev->stage) {
	case WR_SPAWN_EXEC:
		status = wr_wire_start_status(ev->stage, ev->err);
		wr_output_say(p->out, "rank %d: unable to execute %s: %s", ev->rank,
			      prog, strerror(ev->err));
		wr_policy_fail(p, status, status == 127 ? "not-found" : "not-executable", -1);
		return;
	case WR_SPAWN_CHDIR:
		wr_output_say(p->out, "rank %d: unable to enter %s: %s", ev->rank,
			      wr_quote(qd, sizeof(qd), wdir_of(p, ev->rank)),
			      strerror(ev->err));
		break;
	default:
		wr_output_say(p->out, "unable to start rank %d (%s): %s%s", ev->rank,
			      prog, strerror(ev->err),
			      ev->err == EAGAIN ? " (the process limit, ulimit -u, "
						  "is reached)"
			      : ev->err == EMFILE ? " (the open-file limit, ulimit "
						    "-n, is reached)"
						  : "");
		break;
	}
	wr_policy_fail(p, 125, "start-failed", -1);
}

/* A rank other than @except that the registry lost and that is still on
 * its way out (it will end, or be killed, within a second); -1: none. */
static int
lost_running(const struct wr_policy *p, int except)
{
	for (int i = 0; i < p->nranks; i++) {
		const struct wr_rank *r = &p->ranks[i];

		if (i != except && r->lost != NULL && r->state == WR_RANK_RUNNING &&
		    !r->signaled) {
			return i;
		}
	}
	return -1;
}

/* The line of a rank that said it failed (world_fail). */
static void
say_failing(struct wr_policy *p, int rank, const char *why)
{
	char who[96];

	wr_output_say(p->out, "%s (pid %d on %s) failed: %s", tag(p, rank, who, sizeof(who)),
		      (int)p->ranks[rank].pid, wr_map_host(p->cfg.map, rank), why);
}

/* The rank in world_stop() whose stop failed the excused rank's wait
 * (PeerDeadError: "rank 1 is stopping"), while it still runs; -1: none,
 * or it has had WR_POLICY_STOPPER_S to end. */
static int
stopper_running(const struct wr_policy *p)
{
	const struct wr_rank *r = p->stopper >= 0 ? &p->ranks[p->stopper] : NULL;

	if (r == NULL || p->stopper_expired || r->state != WR_RANK_RUNNING || r->signaled) {
		return -1;
	}
	return p->stopper;
}

/* Whether @rank's wait failed because a rank is in world_stop(). */
static bool
failed_by_stopper(const struct wr_policy *p, int rank)
{
	int d = p->ranks[rank].dead_peer;

	return d >= 0 && d != rank && p->ranks[d].state == WR_RANK_RUNNING &&
	       !p->ranks[d].signaled && wr_reghost_rank_stopping(p->registry, d);
}

/*
 * The registry lost a rank (its connection dropped: os._exit, a crash)
 * and failed the waits that need it at once; a peer woken so may end
 * before the lost rank is reaped, or in the same reaping pass, where the
 * lower rank would come first. Its failure is excused: the lost rank's
 * own end decides, as world_fail's does. So does the end of a stopping
 * rank that failed its wait (sys.exit(3) while the others wait for it in
 * a barrier: its status 3 is the job's), for a while: a stop can wait
 * for ranks that have work left, and then the excused failure stands.
 */
static bool
excuse(struct wr_policy *p, int rank, int status, const char *cause)
{
	struct timeval tv = wr_clock_tv(WR_POLICY_STOPPER_S);
	bool stopper = p->excused < 0 && failed_by_stopper(p, rank);

	if (p->cfg.keep_going || p->status >= 0 ||
	    (lost_running(p, rank) < 0 && !stopper && stopper_running(p) < 0)) {
		return false;
	}
	if (p->excused < 0) {
		p->excused = rank;
		p->excused_status = status;
		p->excused_cause = cause;
	}
	if (stopper) {
		p->stopper = p->ranks[rank].dead_peer;
		evtimer_add(p->stopper_ev, &tv);
	}
	return true;
}

/* The lost ranks and the stopping one all ended, and none failed (or
 * the stopping one took too long): the excused one's failure stands
 * after all, with its line. */
void
wr_policy_settle_excused(struct wr_policy *p)
{
	struct wr_rank *r;

	if (p->excused < 0 || p->status >= 0 || lost_running(p, -1) >= 0 ||
	    stopper_running(p) >= 0) {
		return;
	}
	r = &p->ranks[p->excused];
	r->failed = true;
	if (r->failing != NULL) {
		say_failing(p, p->excused, r->failing);
	}
	if (r->state == WR_RANK_FINISHED) {
		wr_policy_say_failure(p, p->excused);
	}
	wr_policy_fail(p, p->excused_status, p->excused_cause, p->excused);
}

/* @s with its control characters made '?' (NULL stays NULL). */
static char *
printable(char *s)
{
	for (char *c = s; c != NULL && *c != '\0'; c++) {
		*c = (unsigned char)*c < 0x20 || *c == 0x7f ? '?' : *c;
	}
	return s;
}

/*
 * What the rank's error file said (the EXITED event's bytes: a line, then
 * its traceback), kept for its failure line and --report. An agent of
 * another host sent it: the line is made printable again here.
 */
static void
keep_exception(struct wr_rank *r, const struct wr_ev *ev)
{
	const char *nl = ev->len > 0 ? memchr(ev->data, '\n', ev->len) : NULL;
	size_t n = nl != NULL ? (size_t)(nl - ev->data) : 0;

	if (nl == NULL || r->exception != NULL || n == 0) {
		return;
	}
	r->exception = printable(strndup(ev->data, n < WR_ERRFILE_LINE_MAX ? n : WR_ERRFILE_LINE_MAX));
	r->traceback = strndup(nl + 1, ev->len - n - 1);
}

/*
 * The dynamic loader's own line, when a program cannot start for want of
 * a library ("app: error while loading shared libraries: libworld.so.0:
 * cannot open shared object file: ..."): the library's name, kept for
 * the rank's failure line, whose status 127 alone reads as a program
 * not found. Looked for within one chunk of its stderr: the loader
 * writes the line at once, first.
 */
static void
keep_loader_line(struct wr_rank *r, const char *data, size_t len)
{
	static const char says[] = "error while loading shared libraries: ";
	const char *at, *end, *nl;
	size_t n;

	/* Only the first bytes: output is not searched all job long. */
	if (r->no_lib != NULL || r->err_seen >= WR_LOADER_LOOK || len < sizeof(says)) {
		r->err_seen += len;
		return;
	}
	r->err_seen += len;
	if ((at = memmem(data, len, says, sizeof(says) - 1)) == NULL) {
		return;
	}
	at += sizeof(says) - 1;
	nl = memchr(at, '\n', len - (size_t)(at - data));
	end = memmem(at, (nl != NULL ? nl : data + len) - at, ": ", 2);
	n = end != NULL ? (size_t)(end - at) : 0;
	if (n == 0 || n > WR_NO_LIB_MAX) {
		return;
	}
	r->no_lib = printable(strndup(at, n));
}

static void
exited(struct wr_policy *p, const struct wr_ev *ev)
{
	struct wr_rank *r = &p->ranks[ev->rank];
	bool bad = !(WIFEXITED(ev->wstatus) && WEXITSTATUS(ev->wstatus) == 0) ||
		   r->pmi_left;
	/* Gone from PMI, then exit 0: MPICH's ranks never do that when well. */
	int status = status_of(ev->wstatus) != 0 ? status_of(ev->wstatus) : 1;
	const char *cause;

	r->state = WR_RANK_EXITED;
	r->wstatus = ev->wstatus;
	keep_exception(r, ev);
	if (bad) {
		wr_reghost_rank_dead(p->registry, ev->rank);
	} else {
		wr_reghost_rank_done(p->registry, ev->rank);
	}
	r->maxrss_kib = ev->maxrss_kib;
	r->end_mono = ev->mono;
	r->end_epoch = wr_clock_epoch();
	if (p->cfg.verbose > 1) {
		char e[64];

		wr_output_say(p->out, "rank %d (pid %d) %s after %.2f s", ev->rank,
			      (int)r->pid, ending(e, sizeof(e), ev->wstatus),
			      r->end_mono - r->start_mono);
	}
	if (r->signaled) {
		p->nstopped++;
		return;
	}
	if (!bad || r->start_failed || r->aborted) {
		return;
	}
	/* A wait of its failed because the rank whose end decided the job
	 * died (PeerDeadError): that end is the failure, and this one is
	 * among those the stop ends, even reaped in the same pass before the
	 * stop went out (as a peer reaped before that rank is excused). */
	if (!p->cfg.keep_going && p->status >= 0 && r->dead_peer >= 0 &&
	    r->dead_peer == p->failed_rank) {
		r->signaled = true;
		p->nstopped++;
		return;
	}
	/* The stopping rank whose stop failed because of the excused one
	 * and which ended with status 1 (its stop's PeerDeadError, most
	 * likely): the excused failure stands. A status of its own (3, from
	 * sys.exit(3)) decides the job instead. */
	if (ev->rank == p->stopper && p->status < 0 && p->excused >= 0 &&
	    r->dead_peer == p->excused && status == 1) {
		r->signaled = true;
		p->nstopped++;
		p->stopper_expired = true;
		return;
	}
	/* Its failure was decided when it said so: now its line (none
	 * while it is excused). */
	if (r->failing != NULL) {
		r->failed = p->excused != ev->rank &&
			    !(p->stopper >= 0 && r->dead_peer == p->stopper);
		return;
	}
	cause = r->lost_killed ? "rank-lost" : r->pmi_left ? "rank-left-pmi"
		: WIFSIGNALED(ev->wstatus) ? "rank-killed" : "rank-exited";
	if (excuse(p, ev->rank, status, cause)) {
		return;
	}
	r->failed = true;
	if (p->cfg.keep_going) {
		wr_policy_decide(p, status, cause, ev->rank);
		return;
	}
	wr_policy_fail(p, status, cause, ev->rank);
}

static void
on_exited(struct wr_policy *p, const struct wr_ev *ev)
{
	exited(p, ev);
	wr_policy_settle_excused(p);
}

static void
on_finished(struct wr_policy *p, const struct wr_ev *ev)
{
	struct wr_rank *r = &p->ranks[ev->rank];

	r->state = WR_RANK_FINISHED;
	p->nfinished++;
	/* Printed once its output is through, so the line comes after it. */
	if (r->failed) {
		wr_policy_say_failure(p, ev->rank);
	}
	if (ev->forced) {
		wr_output_say(p->out, "rank %d: a process outside its process group "
			      "kept its output open; stopped reading it", ev->rank);
	}
	wr_policy_check_done(p);
}

static void
on_feed(void *arg, const char *data, size_t len)
{
	struct wr_policy *p = arg;
	struct wr_cmd cmd = { .kind = len > 0 ? WR_CMD_STDIN : WR_CMD_STDIN_EOF,
			      .data = data, .len = len };

	p->cfg.agents.send(p->cfg.agents.arg, &cmd);
}

/*
 * Stdin travels as data to every rank for "all", and to a stdin rank
 * that another node runs: read from once the ranks are there to take it.
 */
static void
open_feed(struct wr_policy *p)
{
	int rc;

	if (!p->cfg.feed || p->nstarted == 0 || p->stopping) {
		return;
	}
	rc = wr_feed_open(p->cfg.base, STDIN_FILENO, on_feed, p, &p->feed);
	if (rc < 0) {
		wr_output_say(p->out, "unable to read stdin: %s", strerror(-rc));
		wr_policy_fail(p, 125, "setup-failed", -1);
	}
}

/* The agents' START is over: from here on the job may end. */
static void
on_start_done(struct wr_policy *p, const struct wr_ev *ev)
{
	p->start_done = true;
	open_feed(p);
	/* A START that failed before any rank could say so itself (memory,
	 * the stdin fan-out) is the job's failure all the same. */
	if (ev->err != 0 && ev->count < p->nranks && p->status < 0) {
		wr_output_say(p->out, "unable to start the ranks: %s",
			      strerror(ev->err));
		wr_policy_fail(p, 125, "start-failed", -1);
	}
	if (p->cfg.verbose) {
		wr_output_say(p->out, "started %d rank%s in %.1f ms", ev->count,
			      wr_policy_plural(ev->count),
			      (wr_clock_mono() - p->cfg.t0) * 1e3);
	}
	wr_policy_check_done(p);
}

/* MPI_Abort: the job ends with the status its code calls for, --keep-going
 * or not. */
static void
on_abort(struct wr_policy *p, const struct wr_ev *ev)
{
	struct wr_rank *r = &p->ranks[ev->rank];
	char status[48] = "";

	if (r->state != WR_RANK_RUNNING || p->closing) {
		return;
	}
	/* 256 is status 0 to a shell: say which status it gave. */
	if (ev->code != ev->status) {
		snprintf(status, sizeof(status), " (exit status %d)", ev->status);
	}
	wr_output_say(p->out, "rank %d (pid %d on %s) called abort with exit code %d%s%s%.*s",
		      ev->rank, (int)r->pid, wr_map_host(p->cfg.map, ev->rank), ev->code,
		      status, ev->len > 0 ? ": " : "", (int)ev->len, ev->data);
	r->aborted = true;
	wr_policy_fail(p, ev->status, "rank-aborted", ev->rank);
}

/* A rank gone from PMI without finalize has failed: if it does not end
 * by itself, it is lost, as one the registry lost. */
static void
on_left(struct wr_policy *p, const struct wr_ev *ev)
{
	struct wr_rank *r = &p->ranks[ev->rank];

	if (r->state != WR_RANK_RUNNING || p->stopping || r->pmi_left) {
		return;
	}
	r->pmi_left = true;
	if (ev->len > 0) {
		wr_output_say(p->out, "rank %d: %.*s", ev->rank, (int)ev->len, ev->data);
	}
	wr_policy_on_rank_lost(p, ev->rank, "it left PMI without finalize");
}

/*
 * A rank whose program links an MPI library ended well without a word
 * to PMI: it most likely took itself for a job of one (an Open MPI
 * program with --pmi fd, say). Said once a job: its peers did the same.
 */
static void
on_alone(struct wr_policy *p, const struct wr_ev *ev)
{
	if (p->alone_said || p->closing) {
		return;
	}
	p->alone_said = true;
	wr_output_say(p->out, "rank %d linked %.*s but spoke to no PMI server: it most likely "
		      "ran as a job of one rank (see --pmi)", ev->rank, (int)ev->len, ev->data);
}

void
wr_policy_on_agent_event(void *arg, const struct wr_ev *ev)
{
	struct wr_policy *p = arg;

	switch (ev->kind) {
	case WR_EV_STARTED:
		on_started(p, ev);
		return;
	case WR_EV_START_FAILED:
		on_start_failed(p, ev);
		return;
	case WR_EV_OUTPUT:
		if (ev->stream == WR_ERR) {
			keep_loader_line(&p->ranks[ev->rank], ev->data, ev->len);
		}
		wr_output_data(p->out, ev->rank, ev->stream, ev->data, ev->len,
			       ev->partial, ev->eof);
		return;
	case WR_EV_EXITED:
		on_exited(p, ev);
		return;
	case WR_EV_FINISHED:
		on_finished(p, ev);
		return;
	case WR_EV_STDIN_TAKEN:
		wr_feed_next(p->feed);
		return;
	case WR_EV_START_DONE:
		on_start_done(p, ev);
		return;
	case WR_EV_ABORT:
		on_abort(p, ev);
		return;
	case WR_EV_LEFT:
		on_left(p, ev);
		return;
	case WR_EV_ALONE:
		on_alone(p, ev);
		return;
	case WR_EV_STACK:
		wr_status_stack(&p->hang, ev->rank, ev->err, ev->tool, ev->data, ev->len);
		return;
	case WR_EV_SPAWN:
		wr_policy_spawn(p, ev);
		return;
	case WR_EV_JOINED:
		wr_policy_spawn_joined(p, ev);
		return;
	case WR_EV_READY:
	case WR_EV_BEAT:
	case WR_EV_GAVE_UP:
	case WR_EV_AGAIN:
	case WR_EV_NKINDS:
		return;
	}
}

/*
 * The registry lost a rank that is still running (it dropped its
 * connection, or its lease lapsed): it is dead to the job now. It may just
 * be on its way out, and then its exit status tells more: give it a
 * second before killing it as a failure.
 */
void
wr_policy_on_peer_dead(void *arg, int rank, int dead)
{
	struct wr_policy *p = arg;

	if (rank < p->nranks && p->ranks[rank].dead_peer < 0) {
		p->ranks[rank].dead_peer = dead;
	}
}

void
wr_policy_on_rank_lost(void *arg, int rank, const char *why)
{
	struct wr_policy *p = arg;
	struct wr_rank *r = &p->ranks[rank];
	struct timeval tv = wr_clock_tv(1.0);
	bool first = r->state == WR_RANK_RUNNING && r->lost == NULL && !p->stopping;

	/* Before the waits it fails are told, so that they can say why. */
	if (first) {
		r->lost = why;
	}
	wr_reghost_rank_dead(p->registry, rank);
	if (!first) {
		return;
	}
	if (!evtimer_pending(p->lost_ev, NULL)) {
		evtimer_add(p->lost_ev, &tv);
	}
}

void
wr_policy_on_lost_check(evutil_socket_t fd, short what, void *arg)
{
	struct wr_policy *p = arg;

	for (int i = 0; i < p->nranks; i++) {
		struct wr_rank *r = &p->ranks[i];

		if (r->lost != NULL && r->state == WR_RANK_RUNNING && !r->lost_killed) {
			r->lost_killed = true;
			wr_policy_send(p, WR_CMD_SIGNAL, i, SIGKILL);
			wr_policy_send(p, WR_CMD_SIGNAL, i, SIGCONT);
		}
	}
}

/*
 * A rank says it failed (world_fail; an uncaught Python exception), and
 * will exit with @status: that is the job's failure now, so that a peer
 * that its death wakes, and that exits first, is not blamed; the waits
 * that need it fail at once. It ends by itself (its line comes then);
 * the others are stopped now, not at the end of a reaping pass: a peer
 * that ends before its signal ends because of this rank.
 */
void
wr_policy_on_rank_failed(void *arg, int rank, int status, const char *why)
{
	struct wr_policy *p = arg;
	struct wr_rank *r = &p->ranks[rank];

	if (r->state != WR_RANK_RUNNING || r->failing != NULL || p->stopping) {
		wr_reghost_rank_dead(p->registry, rank);
		return;
	}
	r->failing = strdup(why);
	wr_reghost_rank_dead(p->registry, rank);
	/* Most likely it failed because of a rank the registry lost first,
	 * or one that stops while it waited for it (a PeerDeadError nobody
	 * caught): that one's end decides. */
	if (excuse(p, rank, status, "rank-failed")) {
		return;
	}
	say_failing(p, rank, why);
	if (p->cfg.keep_going) {
		wr_policy_decide(p, status, "rank-failed", rank);
		return;
	}
	wr_policy_fail_now(p, status, "rank-failed", rank);
}

/* How rank @rank ended, for the words of the waits it failed. */
void
wr_policy_rank_fate(void *arg, int rank, char *buf, size_t room)
{
	struct wr_policy *p = arg;
	const struct wr_rank *r = rank >= 0 && rank < p->nranks ? &p->ranks[rank] : NULL;

	if (r != NULL && r->state >= WR_RANK_EXITED && WIFSIGNALED(r->wstatus)) {
		snprintf(buf, room, "was killed by signal %d (%s)", WTERMSIG(r->wstatus),
			 wr_policy_signame(WTERMSIG(r->wstatus)));
	} else if (r != NULL && r->state >= WR_RANK_EXITED) {
		snprintf(buf, room, "exited (status %d)", WEXITSTATUS(r->wstatus));
	} else if (r != NULL && r->failing != NULL) {
		snprintf(buf, room, "failed (%s)", r->failing);
	} else if (r != NULL && r->lost != NULL) {
		snprintf(buf, room, "was lost (%s)", r->lost);
	} else if (r != NULL && wr_reghost_rank_left(p->registry, rank)) {
		snprintf(buf, room, "left the job");
	}
}
