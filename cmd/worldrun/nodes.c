/* SPDX-License-Identifier: MIT */
#include "nodesint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "dialin.h"
#include "remote.h"
#include "resolve.h"
#include "srun.h"
#include "world_errors.h"
#include "starter.h"

/* Seconds the remote shells have to end once their channels closed. */
#define SHELLS_WAIT 2.0
/* Remote shells that connect at once: more hosts start as these answer. */
#define CONNECTING_MAX 64

static int open_remote(struct wr_nodes *n, struct node *d);

/*
 * Start remote shells, CONNECTING_MAX at a time: each host that answers
 * (or fails) lets the next one start, so that a thousand hosts do not
 * make a thousand ssh connections at once.
 */
static int
open_more(struct wr_nodes *n)
{
	int rc = 0;

	if (n->opening) {
		return 0;
	}
	n->opening = true;
	while (rc == 0 && !n->started && n->connecting < CONNECTING_MAX &&
	       n->next_open < n->nnodes) {
		struct node *d = &n->nodes[n->next_open++];

		if (d->index == n->inproc) {
			continue;
		}
		d->connecting = true;
		n->connecting++;
		rc = open_remote(n, d);
	}
	n->opening = false;
	return rc;
}

/* Node @d's agent answered, or the node is lost: one more may connect. */
static void
connected(struct node *d)
{
	if (!d->connecting) {
		return;
	}
	d->connecting = false;
	d->n->connecting--;
	if (open_more(d->n) < 0) {
		wr_nodes_lose(&d->n->nodes[d->n->next_open - 1], 125, "out of memory");
	}
}

int
wr_nodes_inprocess(const struct wr_map *m)
{
	return m->here;
}

static void
emit(struct wr_nodes *n, const struct wr_ev *ev)
{
	n->cfg.event(n->cfg.arg, ev);
}

/* Once every started node is done starting (or lost): one START_DONE. */
static void
check_start_done(struct wr_nodes *n)
{
	struct wr_ev ev = { .kind = WR_EV_START_DONE };

	if (!n->started || n->done_told) {
		return;
	}
	for (int i = 0; i < n->nnodes; i++) {
		const struct node *d = &n->nodes[i];

		if (d->start_sent && !d->start_done && !d->lost) {
			return;
		}
	}
	n->done_told = true;
	ev.count = n->start_count;
	ev.err = n->start_err;
	emit(n, &ev);
}

static void
send_to(struct node *d, const struct wr_cmd *cmd)
{
	if (d->lost) {
		return;
	}
	if (d->remote != NULL) {
		wr_remote_send(d->remote, cmd);
	} else {
		wr_agent_send(d->n->agent, cmd);
	}
}

/*
 * START goes out once every agent is ready: a program that is missing on
 * one host starts nowhere. If a node was lost before, nothing starts.
 */
static void
maybe_start(struct wr_nodes *n)
{
	if (!n->want_start || n->started) {
		return;
	}
	for (int i = 0; i < n->nnodes; i++) {
		if (!n->nodes[i].ready && !n->nodes[i].lost) {
			return;
		}
	}
	n->started = true;
	if (wr_nodes_any_lost(n)) {
		check_start_done(n);
		return;
	}
	/* All are marked first: the in-process agent's START_DONE comes
	 * inside its send, and must not look like the last one. */
	for (int i = 0; i < n->nnodes; i++) {
		n->nodes[i].start_sent = true;
	}
	for (int i = 0; i < n->nnodes; i++) {
		struct wr_cmd cmd = { .kind = WR_CMD_START, .count = n->nodes[i].nranks };

		/* In a job of several nodes the ranks here publish the address
		 * that the other hosts reached this machine at (their ssh
		 * connections'), or loopback when no agent saw one (stand-ins
		 * here). Their agents found their own (agentd.c). */
		if (i == n->inproc && n->nnodes > 1) {
			cmd.addr = n->launcher[0] != '\0' ? n->launcher : "127.0.0.1";
		}
		send_to(&n->nodes[i], &cmd);
	}
	check_start_done(n);
}

void
wr_nodes_cancel(struct wr_nodes *n)
{
	if (n->started) {
		return;
	}
	n->started = true;
	check_start_done(n);
}

void
wr_nodes_start(struct wr_nodes *n)
{
	n->want_start = true;
	maybe_start(n);
}

static void
stdin_taken(struct node *d)
{
	struct wr_nodes *n = d->n;
	struct wr_ev ev = { .kind = WR_EV_STDIN_TAKEN };

	if (!d->stdin_pending) {
		return;
	}
	d->stdin_pending = false;
	if (--n->stdin_waiting == 0) {
		emit(n, &ev);
	}
}

void
wr_nodes_lose(struct node *d, int status, const char *why)
{
	struct wr_nodes *n = d->n;

	if (d->lost) {
		return;
	}
	d->lost = true;
	connected(d);
	/* Its agent stops what runs there when its channel goes. */
	if (d->remote != NULL) {
		wr_remote_hangup(d->remote);
	}
	n->cfg.lost(n->cfg.arg, d->index, status, why);
	stdin_taken(d);
	maybe_start(n);
	check_start_done(n);
}

static void broke(struct node *d, const char *what);

/* A host answered JOINED: once, for the ranks it was told of. */
static void
joined(struct node *d, const struct wr_ev *ev)
{
	if (d->joined != ev->rank) {
		broke(d, "answered a spawn it was not told of");
		return;
	}
	d->joined = -1;
	emit(d->n, ev);
}

static void
on_event(struct node *d, const struct wr_ev *ev)
{
	struct wr_nodes *n = d->n;

	switch (ev->kind) {
	case WR_EV_READY:
		d->ready = true;
		connected(d);
		if (ev->status != 0) {
			char why[WR_WIRE_WHY_MAX + 1];

			snprintf(why, sizeof(why), "%.*s", (int)ev->len, ev->data);
			wr_nodes_lose(d, ev->status, why);
			return;
		}
		if (ev->addr != NULL && n->launcher[0] == '\0') {
			snprintf(n->launcher, sizeof(n->launcher), "%s", ev->addr);
		}
		maybe_start(n);
		return;
	case WR_EV_START_DONE:
		d->start_done = true;
		n->start_count += ev->count;
		if (n->start_err == 0) {
			n->start_err = ev->err;
		}
		check_start_done(n);
		return;
	case WR_EV_STDIN_TAKEN:
		stdin_taken(d);
		return;
	case WR_EV_JOINED:
		joined(d, ev);
		return;
	default:
		emit(n, ev);
		return;
	}
}

static void
on_local_event(void *arg, const struct wr_ev *ev)
{
	struct wr_nodes *n = arg;

	if (n->inproc >= 0) {
		on_event(&n->nodes[n->inproc], ev);
	}
}

/* Move *@s from @from to @to; false if it is not at @from. */
static bool
advance(unsigned char *s, enum seen from, enum seen to)
{
	if (*s != from) {
		return false;
	}
	*s = (unsigned char)to;
	return true;
}

/*
 * Whether @ev may come now from remote node @d, which moves the rank on:
 * STARTED once, after START; output between STARTED and FINISHED; EXITED
 * once, then FINISHED once; one START_DONE after START, counting the
 * ranks it announced. The launcher's counts rest on it.
 */
static bool
in_order(struct node *d, const struct wr_ev *ev)
{
	unsigned char *s = d->n->seen;
	int started = 0;

	switch (ev->kind) {
	case WR_EV_STARTED:
		return d->start_sent && advance(&s[ev->rank], SEEN_NONE, SEEN_STARTED);
	case WR_EV_START_FAILED:
		return d->start_sent;
	case WR_EV_OUTPUT:
		return s[ev->rank] == SEEN_STARTED || s[ev->rank] == SEEN_EXITED;
	case WR_EV_EXITED:
		return advance(&s[ev->rank], SEEN_STARTED, SEEN_EXITED);
	case WR_EV_FINISHED:
		return advance(&s[ev->rank], SEEN_EXITED, SEEN_FINISHED);
	case WR_EV_ABORT:
	case WR_EV_LEFT:
	case WR_EV_ALONE:
		return s[ev->rank] == SEEN_STARTED;
	case WR_EV_START_DONE:
		for (int i = 0; i < d->nranks; i++) {
			started += s[d->ranks[i]] != SEEN_NONE;
		}
		return d->start_sent && !d->start_done && ev->count == started;
	default:
		return true;
	}
}

/* A remote agent broke the protocol: nothing it says counts any more. */
static void
broke(struct node *d, const char *what)
{
	char why[128];

	snprintf(why, sizeof(why), "its agent %s", what);
	wr_nodes_lose(d, 125, why);
}

/* An event of a remote agent, about one of its own ranks or none. */
static void
on_remote_event(void *arg, int node, const struct wr_ev *ev)
{
	struct wr_nodes *n = arg;
	struct node *d = &n->nodes[node];
	bool has_rank = ev->kind != WR_EV_READY && ev->kind != WR_EV_START_DONE &&
			ev->kind != WR_EV_STDIN_TAKEN && ev->kind != WR_EV_JOINED;

	if (d->lost) {
		return;
	}
	if (has_rank && (ev->rank >= n->cfg.map->nranks ||
			 n->cfg.map->node[ev->rank] != node)) {
		broke(d, "spoke of a rank that is not its own");
		return;
	}
	if (!in_order(d, ev)) {
		broke(d, "told of its ranks out of order");
		return;
	}
	on_event(d, ev);
}

static int open_remote(struct wr_nodes *n, struct node *d);

/* A new shell for node @arg, from the loop: not inside the lost one's
 * own callback. */
static void
reopen(evutil_socket_t fd, short what, void *arg)
{
	struct node *d = arg;

	wr_remote_close(d->remote);
	d->remote = NULL;
	wr_starter_finish(&d->starter);
	if (open_remote(d->n, d) < 0) {
		wr_nodes_lose(d, 125, "out of memory");
	}
}

/*
 * A shell the last attempt kept can be lost before its agent is ready:
 * the agent died while worldrun waited to restart, and the shell said
 * so only after this attempt took it over. The node gets a new shell,
 * as it would have, and no restart goes for it.
 */
static void
on_remote_lost(void *arg, int node, const char *why)
{
	struct wr_nodes *n = arg;
	struct node *d = &n->nodes[node];
	struct timeval now = { 0, 0 };

	if (d->kept && !d->ready && !d->lost &&
	    event_base_once(n->cfg.base, -1, EV_TIMEOUT, reopen, d, &now) == 0) {
		d->kept = false;
		return;
	}
	wr_nodes_lose(d, 125, why);
}

static void
on_remote_said(void *arg, int node, const char *line)
{
	struct wr_nodes *n = arg;

	n->cfg.said(n->cfg.arg, node, line);
}

/* A child that is not a rank here: a remote shell, maybe. */
static void
on_other_child(void *arg, pid_t pid, int wstatus)
{
	struct wr_nodes *n = arg;

	if (n->srun != NULL && wr_srun_pid(n->srun) == pid) {
		wr_nodes_step_ended(n, wstatus);
		return;
	}
	for (int i = 0; i < n->nnodes; i++) {
		struct wr_remote *r = n->nodes[i].remote;

		if (r != NULL && wr_remote_pid(r) == pid) {
			wr_remote_reaped(r, wstatus);
			return;
		}
	}
}

void
wr_nodes_give_up(struct wr_nodes *n, const char *why)
{
	for (int i = 0; i < n->nnodes; i++) {
		struct node *d = &n->nodes[i];
		bool open = false;

		for (int k = 0; k < d->nranks && d->remote != NULL; k++) {
			open = open || n->seen[d->ranks[k]] == SEEN_STARTED ||
			       n->seen[d->ranks[k]] == SEEN_EXITED;
		}
		if (open) {
			wr_nodes_lose(d, 125, why);
		}
	}
}

int
wr_nodes_grow(struct wr_nodes *n, int nranks)
{
	unsigned char *seen = realloc(n->seen, (size_t)nranks + 1);

	if (seen == NULL) {
		return -ENOMEM;
	}
	n->seen = seen;
	memset(seen + n->nseen, SEEN_NONE, (size_t)(nranks + 1 - n->nseen));
	n->nseen = nranks;
	return 0;
}

int
wr_nodes_ready(const struct wr_nodes *n)
{
	int ready = 0;

	for (int i = 0; n != NULL && n->nodes != NULL && i < n->nnodes; i++) {
		ready += n->nodes[i].ready;
	}
	return ready;
}

bool
wr_nodes_any_lost(const struct wr_nodes *n)
{
	for (int i = 0; i < n->nnodes; i++) {
		if (n->nodes[i].lost) {
			return true;
		}
	}
	return false;
}

/* JOINED to every live host but the spawn's; each is marked first, as
 * the in-process agent answers inside its send. */
static int
send_joined(struct wr_nodes *n, const struct wr_cmd *cmd)
{
	int sent = 0;

	for (int i = 0; i < n->nnodes; i++) {
		struct node *d = &n->nodes[i];

		if (i != cmd->node && d->start_sent && !d->lost && d->joined < 0) {
			d->joined = cmd->first;
			sent++;
			send_to(d, cmd);
		}
	}
	return sent;
}

int
wr_nodes_send(struct wr_nodes *n, const struct wr_cmd *cmd)
{
	struct wr_ev taken = { .kind = WR_EV_STDIN_TAKEN };

	switch (cmd->kind) {
	case WR_CMD_STDIN:
	case WR_CMD_STDIN_EOF:
		/* All are counted first: the in-process agent may take the chunk
		 * inside its send, and must not look like the last to take it. */
		n->stdin_waiting = 0;
		for (int i = 0; i < n->nnodes; i++) {
			struct node *d = &n->nodes[i];

			d->stdin_pending = cmd->kind == WR_CMD_STDIN && d->reads_stdin &&
					   !d->lost && d->start_sent;
			n->stdin_waiting += d->stdin_pending;
		}
		for (int i = 0; i < n->nnodes; i++) {
			struct node *d = &n->nodes[i];

			if (d->reads_stdin && !d->lost && d->start_sent) {
				send_to(d, cmd);
			}
		}
		/* Nobody reads any more: the chunk counts as taken. */
		if (cmd->kind == WR_CMD_STDIN && n->stdin_waiting == 0) {
			emit(n, &taken);
		}
		return 0;
	case WR_CMD_START:
		wr_nodes_start(n);
		return 0;
	case WR_CMD_JOINED:
		return send_joined(n, cmd);
	default:
		if (cmd->rank >= 0 && cmd->rank < n->cfg.map->nranks) {
			send_to(&n->nodes[n->cfg.map->node[cmd->rank]], cmd);
			return 1;
		}
		for (int i = 0; i < n->nnodes; i++) {
			if (n->nodes[i].start_sent) {
				send_to(&n->nodes[i], cmd);
			}
		}
		return 0;
	}
}

void
wr_nodes_flush(struct wr_nodes *n)
{
	double end = wr_clock_mono() + 1.0;

	for (int i = 0; i < n->nnodes; i++) {
		if (n->nodes[i].remote != NULL && !n->nodes[i].lost) {
			wr_remote_flush(n->nodes[i].remote, end - wr_clock_mono());
		}
	}
}

/* Each node's ranks, rising, in one allocation. */
static int
list_ranks(struct wr_nodes *n)
{
	const struct wr_map *m = n->cfg.map;
	int *next = calloc((size_t)n->nnodes, sizeof(*next));
	int at = 0;

	n->rank_store = calloc((size_t)m->nranks + 1, sizeof(int));
	n->seen = calloc((size_t)m->nranks + 1, 1);
	n->nseen = m->nranks;
	if (next == NULL || n->rank_store == NULL || n->seen == NULL) {
		free(next);
		return -ENOMEM;
	}
	for (int i = 0; i < n->nnodes; i++) {
		n->nodes[i].ranks = n->rank_store + at;
		at += m->local_size[i];
	}
	for (int r = 0; r < m->nranks; r++) {
		struct node *d = &n->nodes[m->node[r]];

		d->ranks[next[m->node[r]]++] = r;
		d->nranks++;
	}
	free(next);
	return 0;
}

/* Whether node @d's ranks read chunks of worldrun's stdin. */
static bool
reads_stdin(const struct wr_nodes *n, const struct node *d)
{
	const struct wr_job *job = n->cfg.job;

	if (job->stdin_mode == WR_STDIN_ALL) {
		return true;
	}
	return job->stdin_mode == WR_STDIN_RANK && job->stdin_fd < 0 &&
	       n->cfg.map->node[job->stdin_rank] == d->index;
}

/* worldrun's environment for the ranks, without what belongs to this
 * host (env.h): the agent adds its own host's. */
static int
far_env(struct wr_nodes *n)
{
	const struct wr_env *env = &n->cfg.job->env;
	size_t k = 0;

	n->far_env = calloc(env->n + 1, sizeof(char *));
	if (n->far_env == NULL) {
		return -ENOMEM;
	}
	for (size_t i = 0; i < env->n; i++) {
		size_t len = strcspn(env->vars[i], "=");

		/* srun's agents dial in over plain TCP: the secret came on stdin. */
		if (!wr_env_is_hosts_own(env->vars[i], len) &&
		    !(n->cfg.slurm && len == 12 && memcmp(env->vars[i], "WORLD_SECRET", 12) == 0)) {
			n->far_env[k++] = env->vars[i];
		}
	}
	n->far_envc = (int)k;
	return 0;
}

void
wr_nodes_fill_setup(struct wr_nodes *n, struct node *d, struct wr_setup *s)
{
	const struct wr_job *job = n->cfg.job;

	*s = (struct wr_setup){
		.size = job->size, .nnodes = n->nnodes, .node = d->index,
		.nranks = d->nranks, .ranks = d->ranks, .argv = job->argv,
		.env = n->far_env, .envc = n->far_envc, .wdir = job->far_wdir,
		.wdir_soft = job->far_wdir_soft,
		.pty = job->pty, .kill_grace = job->kill_grace,
		.host_timeout = n->cfg.host_timeout,
		.registry_port = n->cfg.registry_port,
		.master_addr = (char *)job->master_addr, .master_port = job->master_port,
		.nofile_cur = job->nofile.rlim_cur, .nofile_max = job->nofile.rlim_max,
		.pmi = job->pmi, .pmi_port = job->pmi_port, .pmix = job->pmix,
		.pmi_mapping = (char *)job->pmi_mapping,
		.node_name = (char **)job->node_name,
		.bind = job->bind, .cpus_per_rank = job->cpus_per_rank,
		.report_bindings = job->report_bindings,
		.stdin_rank = job->stdin_mode == WR_STDIN_ALL ? WR_SETUP_STDIN_ALL
			      : d->reads_stdin ? job->stdin_rank : WR_SETUP_STDIN_NONE,
	};
	/* Rank 0 here: its agent names us as it reaches us (wire.h). */
	if (job->master_given) {
		s->master_addr = (char *)job->master_addr;
	} else if (n->inproc >= 0 && n->cfg.map->node[0] == n->inproc) {
		s->master_addr = (char *)"";
	} else if (n->master[0] != '\0') {
		s->master_addr = n->master;
	}
	memcpy(s->jobid, job->jobid, sizeof(s->jobid));
	while (s->argv[s->argc] != NULL) {
		s->argc++;
	}
}

/*
 * The in-process node's SETUP: as another host's, but with this host's
 * whole environment, the directory found here (run.c), the stdin rank
 * here whether it reads worldrun's stdin itself or chunks, and
 * MASTER_ADDR as the launcher has it.
 */
static void
fill_here_setup(struct wr_nodes *n, struct node *d, struct wr_setup *s)
{
	const struct wr_job *job = n->cfg.job;

	wr_nodes_fill_setup(n, d, s);
	s->env = job->env.vars;
	s->envc = (int)job->env.n;
	s->wdir = job->wdir;
	s->wdir_soft = false;
	s->registry_port = 0;
	s->master_addr = (char *)(n->cfg.map->node[0] == d->index && !job->master_given
				  ? "" : job->master_addr);
	if (job->stdin_mode == WR_STDIN_RANK && n->cfg.map->node[job->stdin_rank] == d->index) {
		s->stdin_rank = job->stdin_rank;
	}
}

/*
 * The in-process agent's job, from its SETUP through the same steps as
 * a remote agent's (hostjob.h). run.c found the program here already, so
 * only a change since (or memory) fails it: the node is lost, as one
 * whose agent said so. 0 or -ENOMEM.
 */
static int
make_here(struct wr_nodes *n)
{
	struct node *d = &n->nodes[n->inproc];
	char why[WR_RESOLVE_WHY_MAX];
	struct wr_setup s;
	int status;

	fill_here_setup(n, d, &s);
	if (wr_hostjob_init(&n->here, &s, NULL) < 0) {
		return -ENOMEM;
	}
	status = wr_hostjob_locate(&n->here, s.wdir, why, sizeof(why));
	if (status == 0) {
		status = wr_hostjob_bind(&n->here, s.nranks, why, sizeof(why));
	}
	if (status != 0) {
		wr_nodes_lose(d, status, why);
	}
	return 0;
}

struct wr_remote_cfg
wr_nodes_remote_cfg(struct wr_nodes *n, struct node *d, bool guarded)
{
	return (struct wr_remote_cfg){
		.base = n->cfg.base, .node = d->index, .host = n->cfg.map->host[d->index],
		.timeout = n->cfg.connect_timeout, .host_timeout = n->cfg.host_timeout,
		.guard_slot = guarded ? wr_guardian_slot(n->cfg.guardian,
							 (size_t)(n->cfg.map->nranks + d->index))
				      : NULL,
		.event = on_remote_event, .lost = on_remote_lost,
		.said = on_remote_said, .arg = n,
	};
}

static int
open_remote(struct wr_nodes *n, struct node *d)
{
	const char *host = n->cfg.map->host[d->index];
	struct wr_remote_cfg rc = wr_nodes_remote_cfg(n, d, true);
	struct wr_setup s;
	int err;

	struct wr_remote_kept kept;

	wr_nodes_fill_setup(n, d, &s);
	err = wr_starter_init(&d->starter, n->cfg.rsh, n->cfg.connect_timeout,
			      host, wr_map_is_local(host));
	if (err == 0) {
		rc.argv = d->starter.argv;
		/* The shell the last attempt kept, while it is there. */
		err = wr_restart_take(n->cfg.restart, d->index, host, &kept)
		      ? wr_remote_attach_kept(&rc, &s, &kept, &d->remote) : -EPIPE;
		d->kept = err == 0;
		if (err == -EPIPE) {
			err = wr_remote_open(&rc, &s, &d->remote);
		}
	}
	/* Said like every other loss of a node, naming its host. */
	if (err < 0) {
		char why[256];

		if (err == -EINVAL && d->starter.argv != NULL && d->starter.argv[0] == NULL) {
			snprintf(why, sizeof(why), "--rsh: a command of 1 to %d words",
				 WR_STARTER_WORDS_MAX);
		} else {
			snprintf(why, sizeof(why), "unable to start %s: %s",
				 d->starter.argv != NULL && d->starter.argv[0] != NULL
				 ? d->starter.argv[0] : "its agent", world_strerror(err));
		}
		wr_nodes_lose(d, 125, why);
	}
	return err == -ENOMEM ? err : 0;
}

int
wr_nodes_open(const struct wr_nodes_cfg *cfg, struct wr_nodes **out)
{
	struct wr_nodes *n = calloc(1, sizeof(*n));
	struct wr_agent_cfg acfg = { .base = cfg->base, .stdin_fd = cfg->job->stdin_fd,
				     .guard_slots = cfg->guardian->slots,
				     .spare_slots = wr_guardian_slot(cfg->guardian,
					(size_t)(cfg->map->nranks + cfg->map->nnodes)),
				     .nspare = WR_GUARD_SPARE,
				     .cb = on_local_event,
				     .other_child = on_other_child };
	int rc;

	*out = n;
	if (n == NULL) {
		return -ENOMEM;
	}
	n->cfg = *cfg;
	n->nnodes = cfg->map->nnodes;
	n->inproc = wr_nodes_inprocess(cfg->map);
	n->nodes = calloc((size_t)n->nnodes, sizeof(*n->nodes));
	if (n->nodes == NULL || list_ranks(n) < 0) {
		return -ENOMEM;
	}
	for (int i = 0; i < n->nnodes; i++) {
		n->nodes[i] = (struct node){ .n = n, .index = i, .ranks = n->nodes[i].ranks,
					     .nranks = n->nodes[i].nranks, .early_fd = -1,
					     .joined = -1 };
		n->nodes[i].reads_stdin = reads_stdin(n, &n->nodes[i]);
	}
	if (n->inproc >= 0) {
		acfg.ranks = n->nodes[n->inproc].ranks;
		acfg.nranks = n->nodes[n->inproc].nranks;
		acfg.node = n->inproc;
		n->nodes[n->inproc].ready = true;
		rc = make_here(n);
		if (rc < 0) {
			return rc;
		}
	}
	acfg.job = &n->here;
	acfg.arg = n;
	rc = wr_agent_open(&acfg, &n->agent);
	if (rc == 0) {
		rc = far_env(n);
	}
	if (rc == 0 && n->cfg.slurm) {
		return wr_nodes_open_step(n);
	}
	return rc == 0 ? open_more(n) : rc;
}

/*
 * Wait (SHELLS_WAIT at most) for the remote shells to end once their
 * channels closed, and reap them: a zombie would hold its process group,
 * which the guardian then waits for. Those still there are killed.
 */
/* The pid of shell @i: node @i's, or srun's for @i == nnodes; 0: none. */
static pid_t
shell_pid(const struct wr_nodes *n, int i)
{
	if (i == n->nnodes) {
		return n->srun != NULL && wr_srun_pid(n->srun) > 0 ? wr_srun_pid(n->srun) : 0;
	}
	return n->nodes[i].remote != NULL && wr_remote_pid(n->nodes[i].remote) > 0
	       ? wr_remote_pid(n->nodes[i].remote) : 0;
}

static void
shell_reaped(struct wr_nodes *n, int i, int wstatus)
{
	if (i == n->nnodes) {
		wr_srun_reaped(n->srun, wstatus);
	} else {
		wr_remote_reaped(n->nodes[i].remote, wstatus);
	}
}

static void
reap_shells(struct wr_nodes *n)
{
	struct pollfd *fds = calloc((size_t)n->nnodes + 1, sizeof(*fds));
	double end = wr_clock_mono() + SHELLS_WAIT;
	int left = 0;

	for (int i = 0; fds != NULL && i <= n->nnodes; i++) {
		fds[i] = (struct pollfd){ .fd = -1, .events = POLLIN };
		if (shell_pid(n, i) > 0) {
			fds[i].fd = (int)syscall(SYS_pidfd_open, shell_pid(n, i), 0);
			left += fds[i].fd >= 0;
		}
	}
	while (left > 0 && wr_clock_mono() < end &&
	       poll(fds, (nfds_t)n->nnodes + 1, (int)((end - wr_clock_mono()) * 1e3) + 1) > 0) {
		for (int i = 0; i <= n->nnodes; i++) {
			int ws;

			if (fds[i].fd >= 0 && fds[i].revents != 0 &&
			    waitpid(shell_pid(n, i), &ws, WNOHANG) > 0) {
				shell_reaped(n, i, ws);
				close(fds[i].fd);
				fds[i].fd = -1;
				left--;
			}
		}
	}
	for (int i = 0; fds != NULL && i <= n->nnodes; i++) {
		if (fds[i].fd >= 0) {
			close(fds[i].fd);
		}
	}
	free(fds);
}

void
wr_nodes_keep(struct wr_nodes *n, struct wr_restart *r, double seconds)
{
	double end = wr_clock_mono() + seconds;
	int again = 0;
	bool *asked;

	if (n == NULL || (asked = calloc((size_t)n->nnodes, 1)) == NULL) {
		return;
	}
	/* All are asked first (the loop is over: written now), so that they
	 * clean up at once; then their answers are read. */
	for (int i = 0; i < n->nnodes; i++) {
		double left = end - wr_clock_mono();

		asked[i] = n->nodes[i].remote != NULL && wr_remote_again(n->nodes[i].remote) == 0;
		if (asked[i]) {
			wr_remote_flush(n->nodes[i].remote, left > 0 ? left : 0);
		}
	}
	for (int i = 0; i < n->nnodes; i++) {
		struct wr_remote_kept k;
		double left = end - wr_clock_mono();

		if (!asked[i] || wr_remote_keep(n->nodes[i].remote, left > 0 ? left : 0, &k) < 0) {
			continue;
		}
		again++;
		if (k.pid > 0 && wr_restart_attach_agent(r, i, n->cfg.map->host[i], &k) == 0) {
			wr_remote_close(n->nodes[i].remote);
			n->nodes[i].remote = NULL;
		}
	}
	/* Slurm's step, if every agent of it dials the next attempt. */
	if (n->srun != NULL && again == n->nstep) {
		struct wr_remote_kept k;

		if (wr_srun_keep(n->srun, &k) == 0) {
			wr_restart_attach_agent(r, WR_NODES_STEP, "srun", &k);
		}
	}
	free(asked);
}

void
wr_nodes_close(struct wr_nodes *n)
{
	if (n == NULL) {
		return;
	}
	/* Every channel closes first, so that the agents all stop at once. */
	for (int i = 0; n->nodes != NULL && i < n->nnodes; i++) {
		if (n->nodes[i].remote != NULL) {
			wr_remote_hangup(n->nodes[i].remote);
		}
		if (n->nodes[i].early_fd >= 0) {
			close(n->nodes[i].early_fd);
		}
	}
	wr_dialin_close(n->dialin);
	reap_shells(n);
	for (int i = 0; n->nodes != NULL && i < n->nnodes; i++) {
		wr_remote_close(n->nodes[i].remote);
		wr_starter_finish(&n->nodes[i].starter);
	}
	wr_srun_close(n->srun);
	wr_starter_finish(&n->step);
	free(n->step_node);
	wr_agent_close(n->agent);
	wr_hostjob_finish(&n->here);
	free(n->nodes);
	free(n->rank_store);
	free(n->far_env);
	free(n->seen);
	free(n);
}
