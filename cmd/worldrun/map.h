/* SPDX-License-Identifier: MIT */
/*
 * map: where a job's ranks run. Without a host list every rank is on this
 * machine, with no slot limit; with one (--hosts, -H, or a Slurm
 * allocation's nodes) the ranks are placed on its hosts (hosts.h), -n defaults to the slots they have, and
 * the nodes are the hosts that got ranks, numbered in the list's order.
 * Ranks of a node have consecutive local ranks. It starts nothing.
 */
#ifndef WR_MAP_H
#define WR_MAP_H

#include <stdbool.h>
#include <stdio.h>

#include "hosts.h"
#include "opts.h"

struct wr_map {
	int nranks;
	int nnodes;
	int *node;        /* [nranks] */
	int *local_rank;  /* [nranks] */
	int *local_size;  /* [nnodes] */
	int *slots;       /* [nnodes]: the ranks each takes before it is
			   * oversubscribed (INT_MAX: no bound) */
	bool by_node;     /* --map-by node: one rank a node in turn */
	const char **host; /* [nnodes]: borrowed from hosts, or the local name */
	const char **node_name; /* [nnodes]: host, or the local name for the
				 * first host that names this machine
				 * (localhost, 127.x) if no node has that name:
				 * the nodes' names for PMIx, all different */
	bool remote;      /* some node is not this machine */
	enum wr_launcher launcher; /* as chosen: never WR_LAUNCH_AUTO */
	bool from_slurm;  /* the hosts are the Slurm allocation's */
	int here;         /* the node this process runs the agent of, or -1 */
	struct wr_hosts hosts;
	char *pmi_mapping; /* PMI_process_mapping (wr_map_pmi); NULL: too long */
};

struct wr_slurm_env;

/*
 * Build @m from @o (o->np if given, else the hosts' slots), and inside a
 * Slurm allocation (@se) from its nodes unless a host list is given.
 * @here names this machine in local mode. Returns 0, or
 * -EINVAL / -errno with @err saying what is wrong (the caller prints
 * "worldrun: " and @err and exits 125).
 */
int wr_map_build(struct wr_map *m, const struct wr_opts *o, const char *here,
		 const struct wr_slurm_env *se, char err[WR_HOSTS_ERR_MAX]);

/* Whether host name @name means this machine: localhost and 127.x, until
 * ranks start on other hosts too. */
bool wr_map_is_local(const char *name);

/*
 * What a PMI server tells MPICH of the map: PMI_process_mapping,
 * "(vector,(NODE,NODES,RANKS),...)": blocks of
 * NODES nodes from NODE on with RANKS consecutive ranks each, repeated
 * until every rank has its node (NULL where that is longer than a PMI
 * value may be). 0 or -ENOMEM.
 */
int wr_map_pmi(struct wr_map *m);

/*
 * Where @count ranks of a spawn by a rank of node @asker go, into @node
 * (@count entries), as the job's ranks went: by slot, the free slots of
 * the asker's node first, then of the nodes after it in turn; by node,
 * one on each node with a free slot in turn from the asker's; the rest,
 * once every node is full, on the asker's node. Only the job's nodes
 * take them (a host without ranks has no agent).
 */
void wr_map_place_spawn(const struct wr_map *m, int asker, int count, int *node);

/* @count ranks more (a spawn's), on @node[i] each, after the others,
 * with their nodes' next local ranks. 0 or -ENOMEM (then as before).
 * The PMI mapping stays the job's start's. */
int wr_map_grow(struct wr_map *m, const int *node, int count);

/* The host rank @rank runs on, as the host list names it (this machine's
 * name without one). */
const char *wr_map_host(const struct wr_map *m, int rank);

/* One line per node: "worldrun: node 0 (HOST): ranks 0-3". */
void wr_map_print(const struct wr_map *m, FILE *f);

/* Accepts a zeroed @m. */
void wr_map_finish(struct wr_map *m);

#endif
