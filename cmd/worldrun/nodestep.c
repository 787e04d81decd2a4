/* SPDX-License-Identifier: MIT */
/*
 * nodestep: the agents of a Slurm allocation's nodes (nodes.h): one srun
 * for all of them (srun.h), and their channels as they dial in
 * (dialin.h), each matched to its node and given its SETUP.
 */
#include "nodesint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dialin.h"
#include "srun.h"
#include "world_errors.h"

/* Node @d's channel: SETUP goes out on it. */
static void
attach(struct node *d, int fd)
{
	struct wr_setup s;

	d->early_fd = -1;
	wr_nodes_fill_setup(d->n, d, &s);
	wr_remote_attach(d->remote, fd, &s);
}

/*
 * The node an agent that dialed in names: by Slurm's name for it, else
 * by its task's place in the step; NULL for none that waits for it.
 */
static struct node *
dialed_node(struct wr_nodes *n, const struct wr_dialin_agent *a)
{
	struct node *d = NULL;

	for (int i = 0; a->name[0] != '\0' && i < n->nnodes; i++) {
		if (i != n->inproc && strcmp(n->cfg.map->host[i], a->name) == 0) {
			d = &n->nodes[i];
		}
	}
	if (d == NULL && a->name[0] == '\0' && a->nodeid < n->nstep) {
		d = &n->nodes[n->step_node[a->nodeid]];
	}
	if (d == NULL || d->lost || d->early_fd >= 0 || wr_remote_attached(d->remote)) {
		return NULL;
	}
	return d;
}

/*
 * An agent of the step is in. SETUP names rank 0's address for
 * MASTER_ADDR, so while rank 0's node is remote and not in yet, the
 * channels of the others wait for it.
 */
static void
on_dialed(void *arg, const struct wr_dialin_agent *a, int fd)
{
	struct wr_nodes *n = arg;
	struct node *d = dialed_node(n, a);
	int zero = n->cfg.map->node[0];
	char line[WR_HOSTS_NAME_MAX + 128];

	if (d == NULL) {
		snprintf(line, sizeof(line), "an agent of node %.*s (SLURM_NODEID %d) "
			 "dialed in, but no such node waits for one", WR_HOSTS_NAME_MAX,
			 a->name, a->nodeid);
		n->cfg.said(n->cfg.arg, -1, line);
		close(fd);
		return;
	}
	if (a->nodeid < n->nstep) {
		n->step_node[a->nodeid] = d->index;
	}
	if (zero != n->inproc && n->master[0] == '\0' && d->index != zero) {
		d->early_fd = fd;
		return;
	}
	if (zero != n->inproc && d->index == zero) {
		snprintf(n->master, sizeof(n->master), "%s", a->addr);
	}
	attach(d, fd);
	for (int i = 0; d->index == zero && i < n->nnodes; i++) {
		if (n->nodes[i].early_fd >= 0) {
			attach(&n->nodes[i], n->nodes[i].early_fd);
		}
	}
}

/* A line of srun's, or of the agent of one of its tasks. */
static void
on_step_said(void *arg, int task, const char *line)
{
	struct wr_nodes *n = arg;

	n->cfg.said(n->cfg.arg, task >= 0 && task < n->nstep ? n->step_node[task] : -1, line);
}

void
wr_nodes_step_ended(struct wr_nodes *n, int wstatus)
{
	char why[160];

	wr_srun_reaped(n->srun, wstatus);
	snprintf(why, sizeof(why), "%s before its agent connected", wr_srun_end(n->srun));
	for (int i = 0; i < n->nnodes; i++) {
		struct node *d = &n->nodes[i];

		if (d->remote != NULL && !d->lost && d->early_fd < 0 &&
		    !wr_remote_attached(d->remote)) {
			wr_remote_fail(d->remote, why);
		}
	}
}

/* srun's guardian slot is the first remote node's. */
int
wr_nodes_open_step(struct wr_nodes *n)
{
	const char **names = calloc((size_t)n->nnodes + 1, sizeof(*names));
	const char *secret = wr_env_get(&n->cfg.job->env, "WORLD_SECRET");
	struct wr_dialin_cfg dc = { .base = n->cfg.base, .secret = secret,
				    .timeout = n->cfg.connect_timeout, .agent = on_dialed,
				    .arg = n };
	struct wr_srun_cfg sc = { .base = n->cfg.base, .secret = secret,
				  .said = on_step_said, .arg = n,
				  .keep_input = n->cfg.restart != NULL &&
						n->cfg.restart->count < n->cfg.restart->max };
	struct wr_remote_kept kept;
	char why[256];
	int rc = 0, first = -1;

	n->step_node = calloc((size_t)n->nnodes + 1, sizeof(int));
	for (int i = 0; rc == 0 && i < n->nnodes; i++) {
		struct wr_remote_cfg c = wr_nodes_remote_cfg(n, &n->nodes[i], false);

		if (i == n->inproc || names == NULL || n->step_node == NULL) {
			continue;
		}
		first = first < 0 ? i : first;
		names[n->nstep] = n->cfg.map->host[i];
		n->step_node[n->nstep++] = i;
		rc = wr_remote_open_waiting(&c, &n->nodes[i].remote);
	}
	if (names == NULL || n->step_node == NULL || secret == NULL) {
		rc = -ENOMEM;
	}
	if (rc == 0 && n->nstep > 0) {
		rc = wr_dialin_open(&dc, &n->dialin);
		if (rc == 0) {
			rc = wr_starter_init_srun(&n->step, names, n->nstep);
		}
		sc.port = rc == 0 ? wr_dialin_port(n->dialin) : 0;
		sc.argv = n->step.argv;
		sc.guard_slot = wr_guardian_slot(n->cfg.guardian,
						 (size_t)(n->cfg.map->nranks + first));
		/* The step of the last attempt, whose agents dial again. */
		if (rc == 0) {
			rc = wr_restart_take(n->cfg.restart, WR_NODES_STEP, "srun", &kept)
			     ? wr_srun_attach_kept(&sc, &kept, &n->srun) : -EPIPE;
			rc = rc == -EPIPE ? wr_srun_open(&sc, &n->srun) : rc;
		}
		if (rc < 0 && rc != -ENOMEM) {
			snprintf(why, sizeof(why), "unable to start srun: %s", world_strerror(rc));
			for (int i = 0; i < n->nstep; i++) {
				wr_nodes_lose(&n->nodes[n->step_node[i]], 125, why);
			}
			rc = 0;
		}
	}
	free(names);
	return rc;
}
