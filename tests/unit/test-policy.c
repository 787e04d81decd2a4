/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for policy, without processes: a fake agent starts and
 * ends ranks as events, and obeys the policy's signal commands as ranks
 * would (SIGTERM ends them unless they are stubborn, SIGKILL always).
 * Each case checks a row of DESIGN's exit-status contract: the status,
 * its cause, the failure lines worldrun prints (to a file that stands in
 * for stderr), the stop it sends and what the registry is told.
 */
#include "policy.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core.h"

#define NMAX 8
#define CMDS_MAX 64
/* Seconds any case may run: a policy that never ends the loop fails. */
#define CASE_LIMIT 10.0

struct fx {
	struct event_base *base;
	struct wr_map map;
	int node[NMAX];
	int local_size[2], slots[2]; /* the nodes are full */
	const char *host[2];
	struct wr_output *out;
	struct wr_reghost reg;
	struct wr_policy *p;
	struct wr_nodes_cfg ncfg;   /* the policy's handlers, as nodes.c gets them */
	struct wr_reghost_cfg rcfg;
	/* The fake agent: its ranks, and the commands it was given. */
	bool running[NMAX];
	bool stubborn;              /* ranks outlive SIGTERM */
	bool deaf[NMAX];            /* and these SIGKILL: their agent never tells */
	int dying[NMAX];            /* the signal that ends a rank next; 0: none */
	struct event *reap;
	struct wr_cmd cmds[CMDS_MAX];
	int ncmds;
	int spawn_apps;   /* SPAWN answers whose apps were the asker's */
	int cancels;
	int give_ups;
	bool overran;               /* CASE_LIMIT passed */
	char log[64];
	int saved_err;
	int grown_node;             /* what the last grow asked: node, count */
	int grown;
};

static void
emit(struct fx *f, struct wr_ev ev)
{
	f->ncfg.event(f->ncfg.arg, &ev);
}

static void
start(struct fx *f, int rank)
{
	f->running[rank] = true;
	emit(f, (struct wr_ev){ .kind = WR_EV_STARTED, .rank = rank,
				.pid = 1000 + rank, .mono = 10.0 });
}

/* Rank @rank reaped with @ws at its host's time @mono, then its streams end. */
static void
end(struct fx *f, int rank, int ws, double mono)
{
	f->running[rank] = false;
	emit(f, (struct wr_ev){ .kind = WR_EV_EXITED, .rank = rank,
				.pid = 1000 + rank, .wstatus = ws, .mono = mono });
	emit(f, (struct wr_ev){ .kind = WR_EV_FINISHED, .rank = rank });
}

static void
start_done(struct fx *f, int count)
{
	emit(f, (struct wr_ev){ .kind = WR_EV_START_DONE, .count = count });
}

/* Every rank started, and the start is over. */
static void
start_all(struct fx *f)
{
	for (int i = 0; i < f->map.nranks; i++) {
		start(f, i);
	}
	start_done(f, f->map.nranks);
}

/* What a signal did, as a reaping pass of the agent sees it. */
static void
on_reap(evutil_socket_t fd, short what, void *arg)
{
	struct fx *f = arg;

	for (int i = 0; i < f->map.nranks; i++) {
		if (f->running[i] && f->dying[i] != 0) {
			end(f, i, f->dying[i], 12.0);
		}
		f->dying[i] = 0;
	}
}

/* As nodes.c: JOINED goes to every node but the spawn's, a command for
 * one rank to its node. */
static int
agent_send(void *arg, const struct wr_cmd *cmd)
{
	struct fx *f = arg;
	struct timeval now = { 0, 0 };

	if (cmd->kind == WR_CMD_SPAWN && cmd->count > 0) {
		size_t n;
		struct wr_spawn_app *apps = wr_wire_apps_unpack(cmd->apps, (char *)cmd->data,
								cmd->len, cmd->count, &n);

		f->spawn_apps += apps != NULL && n == 1 && strcmp(apps[0].cmd, "kid") == 0;
		free(apps);
	}
	if (f->ncmds < CMDS_MAX) {
		f->cmds[f->ncmds] = *cmd;
		/* Gone with the spawn once sent. */
		f->cmds[f->ncmds].apps = NULL;
		f->cmds[f->ncmds++].data = NULL;
	}
	if (cmd->kind == WR_CMD_JOINED) {
		return f->map.nnodes - 1;
	}
	if (cmd->kind != WR_CMD_SIGNAL || cmd->sig == SIGCONT ||
	    (f->stubborn && cmd->sig != SIGKILL)) {
		return cmd->rank >= 0;
	}
	for (int i = 0; i < f->map.nranks; i++) {
		if ((cmd->rank == -1 || cmd->rank == i) && f->running[i] && !f->deaf[i]) {
			f->dying[i] = cmd->sig;
		}
	}
	evtimer_add(f->reap, &now);
	return cmd->rank >= 0;
}

/* As nodes.c does: START_DONE follows, with the ranks that did start. */
static void
agent_cancel(void *arg)
{
	struct fx *f = arg;
	int n = 0;

	f->cancels++;
	for (int i = 0; i < f->map.nranks; i++) {
		n += f->running[i];
	}
	emit(f, (struct wr_ev){ .kind = WR_EV_START_DONE, .count = n });
}

/* Nothing is queued here: commands are recorded as they are sent. */
static void
agent_flush(void *arg)
{
}

/* As nodes.c does: the remote nodes with ranks still running are lost. */
static void
agent_give_up(void *arg, const char *why)
{
	struct fx *f = arg;

	f->give_ups++;
	for (int node = 1; node < f->map.nnodes; node++) {
		f->ncfg.lost(f->ncfg.arg, node, 125, why);
	}
}

/* Whether the policy sent @sig to rank @rank (-1: all). */
static bool
sent(const struct fx *f, int rank, int sig)
{
	for (int i = 0; i < f->ncmds; i++) {
		if (f->cmds[i].kind == WR_CMD_SIGNAL && f->cmds[i].rank == rank &&
		    f->cmds[i].sig == sig) {
			return true;
		}
	}
	return false;
}

static void
open_fx(struct fx *f, int nranks, struct wr_policy_cfg cfg)
{
	struct wr_output_cfg ocfg = { .nranks = nranks };
	int fd;

	*f = (struct fx){ .saved_err = -1 };
	f->base = event_base_new();
	f->reap = evtimer_new(f->base, on_reap, f);
	f->host[0] = "hostA";
	f->host[1] = "hostB";
	/* The last rank is on a second node when there are 4 or more. */
	for (int i = 0; i < nranks; i++) {
		f->node[i] = nranks >= 4 && i == nranks - 1;
	}
	f->local_size[0] = f->slots[0] = nranks >= 4 ? nranks - 1 : nranks;
	f->local_size[1] = f->slots[1] = 1;
	f->map = (struct wr_map){ .nranks = nranks, .nnodes = nranks >= 4 ? 2 : 1,
				  .node = f->node, .host = f->host, .here = 0,
				  .local_size = f->local_size, .slots = f->slots };
	f->reg.reg = wr_reg_create(nranks);
	cfg.base = f->base;
	cfg.map = &f->map;
	cfg.jobid = "0123456789ab";
	cfg.host = "hostA";
	cfg.program = "./prog";
	cfg.kill_grace = cfg.kill_grace > 0 ? cfg.kill_grace : 0.05;
	cfg.agents = (struct wr_policy_agents){ .send = agent_send, .cancel = agent_cancel,
						.give_up = agent_give_up, .flush = agent_flush,
						.arg = f };
	snprintf(f->log, sizeof(f->log), "/tmp/wr-test-policy-XXXXXX");
	fd = mkstemp(f->log);
	fflush(stderr);
	f->saved_err = dup(STDERR_FILENO);
	dup2(fd, STDERR_FILENO);
	close(fd);
	if (wr_policy_create(&cfg, &f->p) < 0) {
		abort();
	}
	ocfg.base = f->base;
	wr_policy_wire(f->p, &ocfg, &f->rcfg, &f->ncfg);
	if (wr_output_open(&ocfg, &f->out) < 0) {
		abort();
	}
	wr_policy_bind(f->p, f->out, &f->reg);
	wr_policy_begin(f->p);
}

static void
on_limit(evutil_socket_t fd, short what, void *arg)
{
	struct fx *f = arg;

	f->overran = true;
	event_base_loopexit(f->base, NULL);
}

/* Run the loop until the policy ends it (or CASE_LIMIT): whether it did. */
static bool
run(struct fx *f)
{
	struct timeval tv = { (time_t)CASE_LIMIT, 0 };
	struct event *limit = evtimer_new(f->base, on_limit, f);

	evtimer_add(limit, &tv);
	event_base_dispatch(f->base);
	event_free(limit);
	return !f->overran;
}

/* Close everything, put stderr back, and keep what worldrun said in @said. */
static void
close_fx(struct fx *f, struct wr_policy_outcome *o, char *said, size_t size)
{
	ssize_t n;
	int fd;

	wr_policy_outcome(f->p, o);
	wr_policy_end(f->p);
	wr_output_close(f->out, false);
	fflush(stderr);
	dup2(f->saved_err, STDERR_FILENO);
	close(f->saved_err);
	fd = open(f->log, O_RDONLY);
	n = fd >= 0 ? read(fd, said, size - 1) : -1;
	said[n > 0 ? n : 0] = '\0';
	if (fd >= 0) {
		close(fd);
	}
	unlink(f->log);
	/* The outcome's hang report is the policy's: keep none past it. */
	o->hang = NULL;
	wr_policy_destroy(f->p);
	wr_reg_destroy(f->reg.reg);
	event_free(f->reap);
	event_base_free(f->base);
}

static bool
says(const char *said, const char *line)
{
	return strstr(said, line) != NULL;
}

/* 0: every rank exited 0; nothing is said and nothing is stopped. */
static void
test_all_well(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];
	bool ended;

	open_fx(&f, 3, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	for (int i = 0; i < 3; i++) {
		end(&f, i, W_EXITCODE(0, 0), 11.0);
	}
	ended = run(&f);
	is_int(wr_reg_rank_life(f.reg.reg, 1), WR_RANK_DONE, "0: the registry is told each rank is done");
	close_fx(&f, &o, said, sizeof(said));
	ok(ended, "0: the policy ends the loop once every rank finished");
	is_int(o.status, -1, "0: no status is decided (worldrun exits 0)");
	is_str(o.cause, NULL, "0: no cause");
	is_int(f.ncmds, 0, "0: no command is sent");
	is_str(said, "", "0: worldrun says nothing");
}

/* N: the first rank to fail exits N; the others are stopped, not failures. */
static void
test_rank_exits(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];
	bool ended;
	const struct wr_rank *r;

	open_fx(&f, 4, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	end(&f, 2, W_EXITCODE(3, 0), 11.5);
	ok(!sent(&f, -1, SIGTERM), "N: the stop waits for the end of the callback");
	ended = run(&f);
	r = wr_policy_ranks(f.p);
	ok(r[0].signaled && r[3].signaled, "N: the others were signalled by worldrun");
	ok(!r[0].failed && !r[1].failed && !r[3].failed, "N: the stopped ranks are no failures");
	ok(r[2].failed && !r[2].signaled, "N: the failed rank is the failure");
	is_int(wr_reg_rank_life(f.reg.reg, 2), WR_RANK_DEAD, "N: the registry is told the rank died");
	close_fx(&f, &o, said, sizeof(said));
	ok(ended, "N: the job ends");
	is_int(o.status, 3, "N: the status is the rank's");
	is_str(o.cause, "rank-exited", "N: cause rank-exited");
	is_int(o.failed_rank, 2, "N: the failed rank");
	ok(sent(&f, -1, SIGTERM), "N: SIGTERM to every rank");
	ok(sent(&f, -1, SIGCONT), "N: SIGCONT after it, for stopped ranks");
	ok(!sent(&f, -1, SIGKILL), "N: no SIGKILL when all end within the grace");
	ok(says(said, "worldrun: rank 2 (pid 1002 on hostA) exited with status 3 after 1.50 s\n"),
	   "N: the failure line, literally");
	ok(says(said, "worldrun: stopped 3 other ranks\n"), "N: the stopped line, literally");
	ok(!says(said, "rank 0 (pid"), "N: no line for a stopped rank");
}

/* 128+S: the first rank to fail was killed by signal S. */
static void
test_rank_killed(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 4, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	end(&f, 3, W_EXITCODE(0, SIGSEGV), 10.4);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 128 + SIGSEGV, "128+S: the status");
	is_str(o.cause, "rank-killed", "128+S: cause rank-killed");
	ok(says(said, "worldrun: rank 3 (pid 1003 on hostB) killed by signal 11 (SIGSEGV) after 0.40 s\n"),
	   "128+S: the failure line names the signal and the rank's host");
}

/* "First" is the first reaped: two failures in one pass, the first wins,
 * and both are failures of their own. */
static void
test_first_reaped(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 3, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	end(&f, 2, W_EXITCODE(4, 0), 11.0);
	end(&f, 0, W_EXITCODE(5, 0), 11.0);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 4, "first: the first reaped decides");
	is_int(o.failed_rank, 2, "first: its rank");
	ok(says(said, "rank 0 (pid 1000 on hostA) exited with status 5"),
	   "first: a rank that failed in the same pass has its own line");
	ok(says(said, "worldrun: stopped 1 other rank\n"), "first: one rank was stopped");
}

/* A rank that itself exits 124-127 passes its status through. */
static void
test_rank_passes(int code)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 2, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	end(&f, 1, W_EXITCODE(code, 0), 11.0);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, code, "a rank's own 124-127: passed through");
	is_str(o.cause, "rank-exited", "a rank's own 124-127: the report tells it from ours");
}

/* 124: --timeout, here while a node still starts; the hang report first
 * (here the registry cannot make one), then the stop. */
static void
test_timeout(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];
	bool ended;

	open_fx(&f, 2, (struct wr_policy_cfg){ .timeout = 0.05 });
	start(&f, 0);
	start(&f, 1);
	ended = run(&f);
	close_fx(&f, &o, said, sizeof(said));
	ok(ended, "124: the job ends");
	is_int(o.status, 124, "124: the status");
	is_str(o.cause, "timeout", "124: cause timeout");
	ok(says(said, "worldrun: timed out after 0.05 s\n"), "124: the line");
	ok(says(said, "worldrun: no hang report: the registry cannot make one\n") &&
	   strstr(said, "no hang report") < strstr(said, "stopped 2 ranks"),
	   "124: the hang report is tried before the stop");
	ok(sent(&f, -1, SIGTERM), "124: SIGTERM to every rank");
	ok(says(said, "worldrun: stopped 2 ranks\n"), "124: the stopped ranks are said");
	is_int(f.cancels, 1, "124: a start still under way is cancelled");
}

/* 125: a spawn failure part-way; the ranks already started are stopped. */
static void
test_start_failed(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 3, (struct wr_policy_cfg){ 0 });
	start(&f, 0);
	emit(&f, (struct wr_ev){ .kind = WR_EV_START_FAILED, .rank = 1,
				 .stage = 0 /* fork */, .err = EAGAIN });
	start_done(&f, 1);
	run(&f);
	ok(wr_policy_ranks(f.p)[1].start_failed, "125: the rank is marked as never started");
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 125, "125: the status");
	is_str(o.cause, "start-failed", "125: cause start-failed");
	ok(says(said, "worldrun: unable to start rank 1 (./prog): Resource temporarily "
		"unavailable (the process limit, ulimit -u, is reached)\n"), "125: the line");
	ok(sent(&f, -1, SIGTERM), "125: the started rank is stopped");
}

/* 126 and 127: the program cannot be executed, or is not found. */
static void
test_exec_failed(int err, int want, const char *cause)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096], line[256];

	open_fx(&f, 2, (struct wr_policy_cfg){ 0 });
	emit(&f, (struct wr_ev){ .kind = WR_EV_START_FAILED, .rank = 0,
				 .stage = WR_SPAWN_EXEC, .err = err });
	start_done(&f, 0);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	snprintf(line, sizeof(line), "worldrun: rank 0: unable to execute ./prog: %s\n",
		 strerror(err));
	is_int(o.status, want, cause);
	is_str(o.cause, cause, "exec: the cause");
	ok(says(said, line), "exec: the line names the program and why");
}

/* A node whose agent finds no program: 127 for the job, its host named. */
static void
test_node_lost(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 4, (struct wr_policy_cfg){ 0 });
	f.ncfg.lost(f.ncfg.arg, 1, 127, "./prog: program not found");
	start_all(&f);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 127, "node lost: its status");
	is_str(o.cause, "not-found", "node lost: cause not-found");
	ok(says(said, "worldrun: host hostB: ./prog: program not found\n"),
	   "node lost: the line names the host");
}

/* 128+S: worldrun itself stopped by a signal, even if the ranks exit 0. */
static void
test_signalled(int sig)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096], line[128];

	open_fx(&f, 3, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	f.stubborn = true;
	wr_policy_signal(f.p, sig);
	/* The ranks catch it and exit 0. */
	for (int i = 0; i < 3; i++) {
		end(&f, i, W_EXITCODE(0, 0), 11.0);
	}
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	snprintf(line, sizeof(line), "worldrun: received %s: stopping 3 ranks\n",
		 sig == SIGINT ? "SIGINT" : "SIGTERM");
	is_int(o.status, 128 + sig, "signal: 128+S although the ranks exited 0");
	is_str(o.cause, "signal", "signal: cause signal");
	is_int(o.self_signal, sig, "signal: worldrun ends by the signal");
	ok(sent(&f, -1, sig), "signal: forwarded to every rank");
	ok(says(said, line), "signal: the line");
}

/* A signal while an agent is still starting: the start is cancelled, and
 * a rank that did start is stopped. */
static void
test_signal_during_start(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];
	bool ended;

	open_fx(&f, 2, (struct wr_policy_cfg){ 0 });
	start(&f, 0);
	wr_policy_signal(f.p, SIGTERM);
	ended = run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(f.cancels, 1, "signal in the start: the start is cancelled");
	ok(ended && sent(&f, -1, SIGTERM), "signal in the start: the started rank is stopped");
	is_int(o.status, 128 + SIGTERM, "signal in the start: 143");
}

/* After the start, a signal cancels nothing. */
static void
test_signal_after_start(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 2, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	wr_policy_signal(f.p, SIGHUP);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(f.cancels, 0, "signal after the start: nothing to cancel");
	is_int(o.status, 128 + SIGHUP, "signal after the start: SIGHUP is 129");
}

/* A second Ctrl-C: SIGKILL at once, without the grace. */
static void
test_second_interrupt(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 2, (struct wr_policy_cfg){ .kill_grace = 60 });
	start_all(&f);
	f.stubborn = true;
	wr_policy_signal(f.p, SIGINT);
	wr_policy_signal(f.p, SIGINT);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	ok(sent(&f, -1, SIGKILL), "second SIGINT: SIGKILL to every rank");
	is_int(o.status, 130, "second SIGINT: still 130");
}

/* Ranks that outlive SIGTERM get SIGKILL after --kill-grace, and are
 * still no failures. */
static void
test_grace(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 3, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	f.stubborn = true;
	end(&f, 0, W_EXITCODE(2, 0), 11.0);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	ok(sent(&f, -1, SIGKILL), "grace: SIGKILL after the grace");
	is_int(o.status, 2, "grace: the status stays the failed rank's");
	ok(says(said, "worldrun: stopped 2 other ranks\n"), "grace: the killed ranks are stopped ones");
	ok(!says(said, "SIGKILL) after"), "grace: no failure line for a rank worldrun killed");
}

/* A remote agent that never tells its ranks' end, even after SIGKILL:
 * its node is given up, and the job ends with the first failure. */
static void
test_give_up(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];
	bool ended;

	open_fx(&f, 4, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	f.stubborn = true;
	f.deaf[3] = true;
	end(&f, 1, W_EXITCODE(2, 0), 11.0);
	ended = run(&f);
	close_fx(&f, &o, said, sizeof(said));
	ok(ended, "give up: the job ends");
	is_int(f.give_ups, 1, "give up: once, after the grace and 2 s more");
	is_int(o.status, 2, "give up: the first failure still decides");
	ok(says(said, "worldrun: host hostB: its agent did not report its ranks' end within "
		"2.05 s of their SIGKILL\n"), "give up: the line names the host");
	ok(says(said, "worldrun: host hostB: lost 1 running rank with it\n"),
	   "give up: and the rank lost with it");
}

/* A host lost while its rank runs: the job fails (125), the host named. */
static void
test_host_lost(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];
	const struct wr_rank *r;

	open_fx(&f, 4, (struct wr_policy_cfg){ .keep_going = true });
	start_all(&f);
	f.ncfg.lost(f.ncfg.arg, 1, 125, "its channel closed");
	r = wr_policy_ranks(f.p);
	ok(r[3].host_lost && r[3].state == WR_RANK_FINISHED, "host lost: its rank is finished, lost");
	is_int(wr_reg_rank_life(f.reg.reg, 3), WR_RANK_DEAD, "host lost: the registry is told");
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 125, "host lost: 125, --keep-going or not");
	is_str(o.cause, "host-lost", "host lost: its cause");
	ok(says(said, "worldrun: host hostB: its channel closed\n") &&
	   says(said, "worldrun: host hostB: lost 1 running rank with it\n"), "host lost: its lines");
}

/* A START that failed before its ranks could say so is the job's failure. */
static void
test_start_done_error(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 2, (struct wr_policy_cfg){ 0 });
	start(&f, 0);
	emit(&f, (struct wr_ev){ .kind = WR_EV_START_DONE, .count = 1, .err = EMFILE });
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 125, "start done with an error: 125");
	is_str(o.cause, "start-failed", "start done with an error: start-failed");
	ok(says(said, "worldrun: unable to start the ranks: Too many open files\n"),
	   "start done with an error: the line");
}

/* Once worldrun closes, what the parts still call back with says nothing. */
static void
test_end_is_quiet(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 4, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	wr_policy_end(f.p);
	f.ncfg.said(f.ncfg.arg, 1, "a line from a closing shell");
	emit(&f, (struct wr_ev){ .kind = WR_EV_ABORT, .rank = 0, .status = 3, .code = 3 });
	f.ncfg.lost(f.ncfg.arg, 1, 125, "its channel closed");
	close_fx(&f, &o, said, sizeof(said));
	is_str(said, "", "after the end: no line");
	is_int(o.status, -1, "after the end: nothing decides the status");
}

/* --keep-going: the first failure decides, the others run on. */
static void
test_keep_going(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 3, (struct wr_policy_cfg){ .keep_going = true });
	start_all(&f);
	end(&f, 1, W_EXITCODE(6, 0), 11.0);
	end(&f, 0, W_EXITCODE(0, 0), 12.0);
	end(&f, 2, W_EXITCODE(7, 0), 13.0);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 6, "keep going: the first failure decides");
	is_int(f.ncmds, 0, "keep going: nothing is stopped");
	ok(says(said, "rank 2 (pid 1002 on hostA) exited with status 7"),
	   "keep going: every failure has its line");
}

/* MPI_Abort: the job ends with its code; the aborting rank is said once. */
static void
test_abort(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 2, (struct wr_policy_cfg){ .keep_going = true });
	start_all(&f);
	emit(&f, (struct wr_ev){ .kind = WR_EV_ABORT, .rank = 1, .status = 17,
				 .code = 17, .data = "oops", .len = 4 });
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 17, "abort: its code, --keep-going or not");
	is_str(o.cause, "rank-aborted", "abort: cause rank-aborted");
	ok(says(said, "worldrun: rank 1 (pid 1001 on hostA) called abort with exit code 17: oops\n"),
	   "abort: the line");
	ok(!says(said, "rank 1 (pid 1001 on hostA) killed"), "abort: no second line for its end");
}

/* As run.c does: the map and the output make room for a spawn's ranks. */
static int
fake_grow(void *arg, const int *node, int count)
{
	struct fx *f = arg;

	f->grown_node = node[0];
	f->grown = count;
	for (int i = 0; i < count; i++) {
		f->node[f->map.nranks + i] = node[i];
	}
	f->map.nranks += count;
	return wr_output_grow(f->out, f->map.nranks);
}

/* A SPAWN of @count ranks of one app, "kid", as an agent sends it; with
 * @apps false, one whose apps the agent could not send. */
static void
emit_spawn(struct fx *f, int rank, int count, int id, bool apps)
{
	json_t *shape = json_pack("[[i, i, i, b]]", count, 1, 0, 0);
	static const char strings[] = "kid\0kid";

	emit(f, (struct wr_ev){ .kind = WR_EV_SPAWN, .rank = rank, .count = count, .id = id,
				.apps = apps ? shape : NULL, .data = apps ? strings : NULL,
				.len = apps ? sizeof(strings) : 0 });
	json_decref(shape);
}

/* The SPAWN command the policy answered with, or NULL. */
static const struct wr_cmd *
spawn_answer(const struct fx *f)
{
	for (int i = 0; i < f->ncmds; i++) {
		if (f->cmds[i].kind == WR_CMD_SPAWN) {
			return &f->cmds[i];
		}
	}
	return NULL;
}

/* A spawn's ranks join the job after its own, and are ranks like them:
 * the job ends when they have, and a failure of theirs is the job's. */
static void
test_spawn(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	const struct wr_cmd *c;
	char said[4096];
	bool ended;

	open_fx(&f, 3, (struct wr_policy_cfg){ .grow = fake_grow, .grow_arg = &f });
	start_all(&f);
	emit_spawn(&f, 1, 2, 5, true);
	c = spawn_answer(&f);
	ok(c != NULL && c->id == 5 && c->rank == 1 && c->first == 3 && c->count == 2,
	   "spawn: answered to the asker's node with its id and ranks 3-4");
	is_int(f.spawn_apps, 1, "spawn: the answer carries the asker's apps back");
	ok(f.grown_node == 0 && f.grown == 2, "spawn: the launcher grew by 2 ranks on its node");
	start(&f, 3);
	start(&f, 4);
	for (int i = 0; i < 4; i++) {
		end(&f, i, W_EXITCODE(0, 0), 11.0);
	}
	event_base_loop(f.base, EVLOOP_NONBLOCK);
	ok(!event_base_got_exit(f.base) && wr_policy_ranks(f.p)[4].state == WR_RANK_RUNNING,
	   "spawn: the job waits for the spawned ranks too");
	end(&f, 4, W_EXITCODE(4, 0), 11.0);
	ended = run(&f);
	close_fx(&f, &o, said, sizeof(said));
	ok(ended, "spawn: the job ends when the spawned ranks have");
	is_int(o.status, 4, "spawn: a spawned rank's failure is the job's");
	is_int(o.failed_rank, 4, "spawn: and it is named");
	ok(says(said, "worldrun: rank 4 (pid 1004 on hostA) exited with status 4"),
	   "spawn: its failure line");
}

/* The SPAWN commands the policy sent, and the JOINED ones. */
static int
count_cmds(const struct fx *f, enum wr_cmd_kind kind)
{
	int n = 0;

	for (int i = 0; i < f->ncmds; i++) {
		n += f->cmds[i].kind == kind;
	}
	return n;
}

/* In a job of several hosts, every other host serves a spawn's ranks
 * before the asker's starts them, one spawn at a time. */
static void
test_spawn_hosts(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	const struct wr_cmd *c;
	char said[4096];

	open_fx(&f, 4, (struct wr_policy_cfg){ .grow = fake_grow, .grow_arg = &f });
	start_all(&f);
	emit_spawn(&f, 3, 2, 7, true);
	emit_spawn(&f, 0, 1, 8, true);
	c = &f.cmds[f.ncmds - 1];
	ok(count_cmds(&f, WR_CMD_JOINED) == 1 && c->kind == WR_CMD_JOINED && c->first == 4 &&
	   c->count == 2 && c->node == 1,
	   "spawn of hosts: the other hosts are told of ranks 4-5 on node 1, first");
	ok(f.grown_node == 0 && f.grown == 1 && f.map.nranks == 7,
	   "spawn of hosts: both spawns are numbered at once");
	is_int(count_cmds(&f, WR_CMD_SPAWN), 0, "spawn of hosts: none starts before its answer");
	emit(&f, (struct wr_ev){ .kind = WR_EV_JOINED, .rank = 6 });
	is_int(count_cmds(&f, WR_CMD_SPAWN), 0, "spawn of hosts: an answer for another is not it");
	emit(&f, (struct wr_ev){ .kind = WR_EV_JOINED, .rank = 4 });
	c = spawn_answer(&f);
	ok(c != NULL && c->rank == 3 && c->id == 7 && c->first == 4 && c->count == 2,
	   "spawn of hosts: answered, the asker's host starts ranks 4-5");
	c = &f.cmds[f.ncmds - 1];
	ok(c->kind == WR_CMD_JOINED && c->first == 6 && c->node == 0,
	   "spawn of hosts: then the next spawn's hosts are told");
	emit(&f, (struct wr_ev){ .kind = WR_EV_JOINED, .rank = 6 });
	is_int(count_cmds(&f, WR_CMD_SPAWN), 2, "spawn of hosts: and it starts once they answer");
	is_int(f.spawn_apps, 2, "spawn of hosts: each with its apps");
	for (int i = 4; i < 7; i++) {
		start(&f, i);
	}
	for (int i = 0; i < 7; i++) {
		end(&f, i, W_EXITCODE(0, 0), 11.0);
	}
	ok(run(&f), "spawn of hosts: the job ends when all seven have");
	close_fx(&f, &o, said, sizeof(said));
}

/* A spawn that cannot be served is refused, and the job stops with 125. */
static void
test_spawn_refused(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	const struct wr_cmd *c;
	char said[4096];

	/* One rank past what the wire numbers is refused before anything grows. */
	open_fx(&f, 3, (struct wr_policy_cfg){ .grow = fake_grow, .grow_arg = &f });
	start_all(&f);
	emit_spawn(&f, 0, WR_WIRE_RANK_MAX - 2, 0, true);
	c = spawn_answer(&f);
	ok(c != NULL && c->count == 0 && f.grown == 0, "spawn past the limit: refused, nothing grew");
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 125, "spawn past the limit: status 125");
	ok(says(said, "(MPI_Comm_spawn): the job would have too many ranks: stopping the job\n"),
	   "spawn past the limit: the line");
	/* Apps the agent could not send. */
	open_fx(&f, 3, (struct wr_policy_cfg){ .grow = fake_grow, .grow_arg = &f });
	start_all(&f);
	emit_spawn(&f, 2, 1, 0, false);
	c = spawn_answer(&f);
	ok(c != NULL && c->count == 0 && f.grown == 0, "spawn without apps: refused, nothing grew");
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 125, "spawn without apps: status 125");
	ok(says(said, "worldrun: rank 2 asked to start 1 rank more (MPI_Comm_spawn): more programs, "
		      "or longer arguments and variables, than worldrun carries (64 programs, 64 KiB): "
		      "stopping the job\n"),
	   "spawn without apps: the line");
}

/*
 * A rank that says it failed (world_fail) is the job's failure, though a
 * peer its death woke exits first; it is not signalled, it ends by
 * itself, and the others are stopped at once.
 */
static void
test_rank_failed(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096], fate[128] = "";

	open_fx(&f, 3, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	f.rcfg.rank_failed(f.rcfg.arg, 1, 1, "uncaught ValueError: boom");
	is_int(wr_reg_rank_life(f.reg.reg, 1), WR_RANK_DEAD, "failed: dead to the registry at once");
	f.rcfg.fate(f.rcfg.arg, 1, fate, sizeof(fate));
	is_str(fate, "failed (uncaught ValueError: boom)", "failed: its fate, for the peers");
	ok(sent(&f, 0, SIGTERM) && sent(&f, 2, SIGTERM), "failed: the others are stopped at once");
	end(&f, 0, W_EXITCODE(1, 0), 11.0);
	end(&f, 1, W_EXITCODE(1, 0), 11.5);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	ok(!sent(&f, 1, SIGTERM) && !sent(&f, -1, SIGTERM), "failed: it is not signalled");
	is_int(o.status, 1, "failed: its status");
	is_int(o.failed_rank, 1, "failed: it is the failed rank, though rank 0 ended first");
	is_str(o.cause, "rank-failed", "failed: cause rank-failed");
	ok(says(said, "worldrun: rank 1 (pid 1001 on hostA) failed: uncaught ValueError: boom\n"),
	   "failed: the line with its reason");
	ok(says(said, "worldrun: rank 1 (pid 1001 on hostA) exited with status 1 after"),
	   "failed: its failure line at its end");
	ok(!says(said, "rank 0 (pid"), "failed: rank 0 is not blamed");
	ok(says(said, "worldrun: stopped 2 other ranks\n"), "failed: the others were stopped");
}

/* A rank the registry lost is killed after a second, as a failure. */
static void
test_rank_lost(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 2, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	f.rcfg.rank_lost(f.rcfg.arg, 1, "its lease lapsed");
	is_int(wr_reg_rank_life(f.reg.reg, 1), WR_RANK_DEAD, "lost: dead to the registry at once");
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	ok(sent(&f, 1, SIGKILL), "lost: SIGKILL to that rank alone");
	is_int(o.status, 128 + SIGKILL, "lost: 137");
	is_str(o.cause, "rank-lost", "lost: cause rank-lost");
	ok(says(said, "worldrun: rank 1 (pid 1001 on hostA) was lost: its lease lapsed; killed after"),
	   "lost: the line says why");
}

/*
 * A rank the registry lost (its connection dropped) fails the waits of
 * its peers at once: a peer that ends before it, or in its reaping pass,
 * is not blamed; the lost rank's own end decides. If it ends well, the
 * peer's failure stands.
 */
static void
test_lost_decides(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 3, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	f.rcfg.rank_lost(f.rcfg.arg, 1, "its connection dropped");
	end(&f, 0, W_EXITCODE(1, 0), 11.0);
	end(&f, 1, W_EXITCODE(3, 0), 11.0);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 3, "lost first: its own status, not its woken peer's");
	ok(!says(said, "rank 0 (pid"), "lost first: the woken peer has no line");

	open_fx(&f, 3, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	f.rcfg.rank_lost(f.rcfg.arg, 1, "its connection dropped");
	end(&f, 0, W_EXITCODE(1, 0), 11.0);
	end(&f, 1, W_EXITCODE(0, 0), 11.0);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 1, "lost, then ended well: the peer's failure stands");
	ok(says(said, "worldrun: rank 0 (pid 1000 on hostA) exited with status 1"),
	   "and the peer's line comes");

	/* The woken peer says it failed (a Python PeerDeadError nobody
	 * caught) before the lost rank is reaped: still the lost rank's. */
	open_fx(&f, 3, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	f.rcfg.rank_lost(f.rcfg.arg, 1, "its connection dropped");
	f.rcfg.rank_failed(f.rcfg.arg, 0, 1, "uncaught PeerDeadError: rank 1 is dead");
	end(&f, 0, W_EXITCODE(1, 0), 11.0);
	end(&f, 1, W_EXITCODE(3, 0), 11.0);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 3, "lost first, a peer then says it failed: the lost rank's status");
	ok(!says(said, "rank 0 (pid"), "and the peer has no line");

	/* Reaped in the same pass after the lost rank, before the stop went
	 * out: a peer whose wait failed for it is not blamed; a rank that
	 * fails on its own in that pass is. */
	open_fx(&f, 3, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	f.rcfg.rank_lost(f.rcfg.arg, 1, "its connection dropped");
	f.rcfg.peer_dead(f.rcfg.arg, 2, 1);
	end(&f, 1, W_EXITCODE(3, 0), 11.0);
	end(&f, 2, W_EXITCODE(1, 0), 11.0);
	end(&f, 0, W_EXITCODE(1, 0), 11.0);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 3, "lost, reaped first: its status");
	ok(!says(said, "rank 2 (pid"), "the peer its death woke, reaped after it, has no line");
	ok(says(said, "worldrun: rank 0 (pid 1000 on hostA) exited with status 1"),
	   "a rank that failed on its own in that pass has its line");
}

/* Gone from PMI without finalize, then exit 0: still a failure. */
static void
test_left_pmi(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 2, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	emit(&f, (struct wr_ev){ .kind = WR_EV_LEFT, .rank = 0 });
	end(&f, 0, W_EXITCODE(0, 0), 11.0);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 1, "left PMI: exit 0 becomes 1");
	is_str(o.cause, "rank-left-pmi", "left PMI: its cause");
	ok(says(said, "left PMI without finalize, then exited with status 0"), "left PMI: the line");
}

/* SIGQUIT: a hang report, and the job goes on; USR1 goes to the ranks. */
static void
test_quit_and_usr1(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 2, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	wr_policy_signal(f.p, SIGQUIT);
	wr_policy_signal(f.p, SIGUSR1);
	end(&f, 0, W_EXITCODE(0, 0), 11.0);
	end(&f, 1, W_EXITCODE(0, 0), 11.0);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, -1, "SIGQUIT: the job goes on and ends well");
	ok(says(said, "no hang report"), "SIGQUIT: a hang report is tried");
	ok(sent(&f, -1, SIGUSR1), "SIGUSR1: forwarded");
	ok(!sent(&f, -1, SIGQUIT), "SIGQUIT: not forwarded without --forward-quit");
}

int
main(void)
{
	plan(93 - 1 + 3 * 2 + 5 + 5 + 3 + 2 + 11 + 6 + 3 + 7 + 5 + 3 + 3 + 5);
	test_all_well();
	test_rank_exits();
	test_rank_killed();
	test_first_reaped();
	for (int code = 124; code <= 127; code++) {
		test_rank_passes(code);
	}
	test_timeout();
	test_start_failed();
	test_exec_failed(EACCES, 126, "not-executable");
	test_exec_failed(ENOENT, 127, "not-found");
	test_node_lost();
	test_signalled(SIGTERM);
	test_signalled(SIGINT);
	test_signal_during_start();
	test_signal_after_start();
	test_second_interrupt();
	test_grace();
	test_give_up();
	test_host_lost();
	test_start_done_error();
	test_end_is_quiet();
	test_keep_going();
	test_abort();
	test_spawn();
	test_spawn_hosts();
	test_spawn_refused();
	test_rank_lost();
	test_lost_decides();
	test_rank_failed();
	test_left_pmi();
	test_quit_and_usr1();
	return done_testing();
}
