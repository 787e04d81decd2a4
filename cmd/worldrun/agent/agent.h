/* SPDX-License-Identifier: MIT */
/*
 * agent: starts and watches the ranks of one host. The launcher talks to
 * it only through wire.h: the host's job comes from its SETUP (made into
 * a struct wr_hostjob by hostjob.h, on both paths), then commands come
 * and events go, so that a remote host's agent, at the other end of an
 * ssh channel, is the same code behind that codec. In local mode the
 * agent runs inside worldrun, on its event loop. It applies no policy:
 * who fails the job is the launcher's call.
 */
#ifndef WR_AGENT_H
#define WR_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <event2/event.h>

#include "hostjob.h"
#include "wire.h"

struct wr_agent;

typedef void wr_agent_ev_cb(void *arg, const struct wr_ev *ev);

/*
 * What an agent runs: @job (borrowed, must outlive the agent; START's
 * address goes into its environment), on @base. @stdin_fd: what the stdin
 * rank reads (worldrun's own stdin, in-process), or -1: it reads chunks
 * (WR_CMD_STDIN). @ranks: the world ranks of this host, rising, borrowed (NULL:
 * ranks 0 to nranks-1); local rank i is ranks[i]. @guard_slots (or
 * NULL): one slot per local rank, in a guardian's table (guardian.h),
 * where each rank stores its process group before it execs; @spare_slots
 * (or NULL): @nspare more, for the ranks spawns start, each taken once.
 */
struct wr_agent_cfg {
	struct event_base *base;
	struct wr_hostjob *job;
	int stdin_fd;
	const int *ranks;
	int nranks;
	int node;
	pid_t *guard_slots;
	pid_t *spare_slots;
	int nspare;
	wr_agent_ev_cb *cb;
	/* The agent reaps every child of the process; those not its ranks
	 * go here (NULL: their status is dropped). */
	void (*other_child)(void *arg, pid_t pid, int wstatus);
	void *arg;
};

/* Open an agent; events go to cfg->cb. Returns 0 or -errno. */
int wr_agent_open(const struct wr_agent_cfg *cfg, struct wr_agent **out);

/* Frees the agent and closes its fds; kills nothing. Accepts NULL. */
void wr_agent_close(struct wr_agent *a);

/*
 * Carry out @cmd; events may be delivered before it returns. Returns 0 or
 * -errno (WR_CMD_START: the start of some rank failed, after a
 * WR_EV_START_FAILED for it; the ranks before it run). START's first and
 * count are local ranks: indices into the host's ranks.
 */
int wr_agent_send(struct wr_agent *a, const struct wr_cmd *cmd);

/*
 * Stop reading every rank's output while @hold (the channel to the
 * launcher is full), apart from the launcher's own PAUSE and RESUME.
 */
void wr_agent_hold(struct wr_agent *a, bool hold);

#endif
