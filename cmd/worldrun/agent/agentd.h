/* SPDX-License-Identifier: MIT */
/*
 * agentd: worldrun in agent mode (worldrun --agent), on a host that a
 * remote shell (or srun) reached. It reads SETUP and then commands as frames on
 * its stdin, runs this host's ranks with a guardian of its own (agent.h),
 * and writes events as frames on its stdout; it says anything else on
 * stderr. When the channel closes, whatever still runs here is killed:
 * nothing outlives the launcher's connection. It applies no policy.
 */
#ifndef WR_AGENTD_H
#define WR_AGENTD_H

#include <stdbool.h>

/*
 * Serve one job on fds 0 and 1, or with @dial (srun's agents: reach.h)
 * on a connection to the launcher; returns the exit status.
 */
int wr_agentd_main(bool dial);

#endif
