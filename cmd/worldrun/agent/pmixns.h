/* SPDX-License-Identifier: MIT */
/*
 * pmixns: the job as PMIx's namespace, what PMIx_server_register_nspace
 * is given (the keys Open MPI's orted and Slurm's slurmstepd give:
 * sizes, local peers, node and process maps, each rank's local and node
 * rank), and the map of ranks to nodes it is made from. It registers
 * nothing itself.
 */
#ifndef WR_PMIXNS_H
#define WR_PMIXNS_H

#include <stddef.h>

#include <pmix_server.h>

#include "pmixsrv.h"

/*
 * The namespace's info for @cfg, in @info (PMIX_INFO_FREE(*info, *n)
 * frees it). 0, -ENOMEM, or WORLD_EPROTO (PMIx could not make a map:
 * why in @why).
 */
int wr_pmixns_info(const struct wr_pmixsrv_cfg *cfg, pmix_info_t **info, size_t *n,
		   char *why, size_t size);

/*
 * The node of each of @size ranks from a PMI_process_mapping @mapping
 * ("(vector,(node,nodes,ranks per node),...)", repeated until every rank
 * has one) into @node_of. 0, or -EINVAL for one that is not such a
 * vector or names nodes outside 0 to @nnodes - 1.
 */
int wr_pmixns_nodes_of(const char *mapping, int size, int nnodes, int *node_of);

#endif
