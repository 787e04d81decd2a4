/* SPDX-License-Identifier: MIT */
/*
 * policyfx: the fixture of policy's unit tests (test-policy,
 * test-policy-spawn): a fake agent that starts and ends ranks as events
 * and obeys the policy's signal commands as ranks would, its output to a
 * file that stands in for stderr. Functions are static inline: each test
 * takes what it uses.
 */
#ifndef WR_POLICYFX_H
#define WR_POLICYFX_H

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

static inline void
emit(struct fx *f, struct wr_ev ev)
{
	f->ncfg.event(f->ncfg.arg, &ev);
}

static inline void
start(struct fx *f, int rank)
{
	f->running[rank] = true;
	emit(f, (struct wr_ev){ .kind = WR_EV_STARTED, .rank = rank,
				.pid = 1000 + rank, .mono = 10.0 });
}

/* Rank @rank reaped with @ws at its host's time @mono, then its streams end. */
static inline void
end(struct fx *f, int rank, int ws, double mono)
{
	f->running[rank] = false;
	emit(f, (struct wr_ev){ .kind = WR_EV_EXITED, .rank = rank,
				.pid = 1000 + rank, .wstatus = ws, .mono = mono });
	emit(f, (struct wr_ev){ .kind = WR_EV_FINISHED, .rank = rank });
}

static inline void
start_done(struct fx *f, int count)
{
	emit(f, (struct wr_ev){ .kind = WR_EV_START_DONE, .count = count });
}

/* Every rank started, and the start is over. */
static inline void
start_all(struct fx *f)
{
	for (int i = 0; i < f->map.nranks; i++) {
		start(f, i);
	}
	start_done(f, f->map.nranks);
}

/* What a signal did, as a reaping pass of the agent sees it. */
static inline void
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
static inline int
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
static inline void
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
static inline void
agent_flush(void *arg)
{
}

/* As nodes.c does: the remote nodes with ranks still running are lost. */
static inline void
agent_give_up(void *arg, const char *why)
{
	struct fx *f = arg;

	f->give_ups++;
	for (int node = 1; node < f->map.nnodes; node++) {
		f->ncfg.lost(f->ncfg.arg, node, 125, why);
	}
}

/* Whether the policy sent @sig to rank @rank (-1: all). */
static inline bool
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

static inline void
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

static inline void
on_limit(evutil_socket_t fd, short what, void *arg)
{
	struct fx *f = arg;

	f->overran = true;
	event_base_loopexit(f->base, NULL);
}

/* Run the loop until the policy ends it (or CASE_LIMIT): whether it did. */
static inline bool
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
static inline void
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

static inline bool
says(const char *said, const char *line)
{
	return strstr(said, line) != NULL;
}

#endif
