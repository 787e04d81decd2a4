/* SPDX-License-Identifier: MIT */
/*
 * agent: starts and watches the ranks of one host. The launcher talks to
 * it only through the commands and events below, so that a remote host's
 * agent, at the other end of an ssh channel, is the same code behind a
 * serialiser. In local mode the agent runs inside worldrun, on its event
 * loop. It applies no policy: who fails the job is the launcher's call.
 */
#ifndef WR_AGENT_H
#define WR_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <event2/event.h>

#include "job.h"

enum wr_stream_id {
	WR_OUT = 0,
	WR_ERR = 1,
};

enum wr_ev_kind {
	WR_EV_STARTED,      /* rank, pid, mono */
	WR_EV_START_FAILED, /* rank, err, stage (0: in worldrun, before fork) */
	WR_EV_OUTPUT,       /* rank, stream, data, len, partial, eof */
	WR_EV_EXITED,       /* rank, pid, wstatus, maxrss_kib, mono */
	WR_EV_FINISHED,     /* rank: reaped and both streams closed; forced */
	WR_EV_STDIN_TAKEN,  /* every live reader took the last stdin chunk */
};

struct wr_ev {
	enum wr_ev_kind kind;
	int rank;
	pid_t pid;
	int stream;
	const char *data; /* valid during the callback only */
	size_t len;
	bool partial; /* data does not end with a newline */
	bool eof;     /* the stream ended after data */
	int wstatus;
	long maxrss_kib;
	double mono;
	int err;      /* errno */
	int stage;    /* enum wr_spawn_stage */
	bool forced;  /* the streams closed only after the group was killed */
};

struct wr_agent;

typedef void wr_agent_ev_cb(void *arg, const struct wr_ev *ev);

enum wr_cmd_kind {
	WR_CMD_START,     /* first, count */
	WR_CMD_SIGNAL,    /* rank (-1: all), sig: to each unfinished group */
	WR_CMD_PAUSE,     /* rank (-1: all), stream (-1: both): stop reading */
	WR_CMD_RESUME,    /* undoes WR_CMD_PAUSE */
	WR_CMD_STDIN,     /* data, len: a chunk for every stdin reader */
	WR_CMD_STDIN_EOF, /* close every stdin reader's pipe */
};

struct wr_cmd {
	enum wr_cmd_kind kind;
	int rank;
	int stream;
	int sig;
	int first;
	int count;
	const char *data;
	size_t len;
};

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
