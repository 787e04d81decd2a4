/* SPDX-License-Identifier: MIT */
/*
 * agent: starts and watches the ranks of one host. The launcher talks to
 * it only through the commands and events of wire.h, so that a remote
 * host's agent, at the other end of an ssh channel, is the same code
 * behind that codec. In local mode the agent runs inside worldrun, on
 * its event loop. It applies no policy: who fails the job is the
 * launcher's call.
 */
#ifndef WR_AGENT_H
#define WR_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <event2/event.h>

#include "job.h"
#include "wire.h"

struct wr_agent;

typedef void wr_agent_ev_cb(void *arg, const struct wr_ev *ev);

/*
 * Open an agent for @job on @base; events go to @cb. @job is borrowed and
 * must outlive the agent. @guard_slots (or NULL): one slot per rank of
 * this agent, in a guardian's table (guardian.h), where each rank stores
 * its process group before it execs. Returns 0 or -errno.
 */
int wr_agent_open(struct event_base *base, const struct wr_job *job,
		  pid_t *guard_slots, wr_agent_ev_cb *cb, void *arg,
		  struct wr_agent **out);

/* Frees the agent and closes its fds; kills nothing. Accepts NULL. */
void wr_agent_close(struct wr_agent *a);

/*
 * Carry out @cmd; events may be delivered before it returns. Returns 0 or
 * -errno (WR_CMD_START: the start of some rank failed, after a
 * WR_EV_START_FAILED for it; the ranks before it run).
 */
int wr_agent_send(struct wr_agent *a, const struct wr_cmd *cmd);

#endif
