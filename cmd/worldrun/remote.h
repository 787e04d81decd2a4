/* SPDX-License-Identifier: MIT */
/*
 * remote: one agent on another host, as the launcher sees it: the remote
 * shell that starts it (its own process group, killed with the job), the
 * channel on that shell's stdin and stdout (or, for an agent that dials
 * in, the connection it made) (SETUP, then commands out and
 * events in, as wire.h frames), and the shell's stderr, passed on line by
 * line. It checks that the agent speaks the protocol and answers in time;
 * what its events mean is the caller's business.
 */
#ifndef WR_REMOTE_H
#define WR_REMOTE_H

#include <stdbool.h>
#include <sys/types.h>

#include <event2/event.h>

#include "wire.h"

struct wr_remote;

struct wr_remote_cfg {
	struct event_base *base;
	int node;
	const char *host;      /* for messages; borrowed */
	char *const *argv;     /* the remote shell's command line; borrowed */
	double timeout;        /* seconds for the agent's first answer */
	double host_timeout;   /* seconds of silence after which the agent is
				* lost, once it answered; 0: never. Beats go
				* both ways every quarter of it */
	pid_t *guard_slot;     /* where the shell's process group goes, or NULL */
	void (*event)(void *arg, int node, const struct wr_ev *ev);
	/* The channel is gone (or never came up): why, in words. Once. */
	void (*lost)(void *arg, int node, const char *why);
	/* A line the shell or the agent wrote on stderr, without its newline. */
	void (*said)(void *arg, int node, const char *line);
	void *arg;
};

/*
 * Start the remote shell and send it @setup. Returns 0, or -errno when
 * the shell could not be started at all (then nothing runs); a shell
 * that fails later is reported through lost().
 */
int wr_remote_open(const struct wr_remote_cfg *cfg, const struct wr_setup *setup,
		   struct wr_remote **out);

/*
 * What of a remote outlives an attempt of a job that restarts
 * (restart.h): its shell, still running, and the shell's channel and
 * stderr, which the next attempt (this program exec'd again) inherits,
 * with the agent on them started anew (WR_CMD_AGAIN).
 */
struct wr_remote_kept {
	pid_t pid;  /* the shell, the leader of its group */
	int chan;   /* FD_CLOEXEC but across the exec that hands it on */
	int err;    /* the shell's stderr, or -1 */
};

/*
 * @k: shell @pid with copies of @chan and @err (-1: none), close-on-exec.
 * 0, or -EMFILE (then @k holds nothing).
 */
int wr_remote_kept_copy(struct wr_remote_kept *k, pid_t pid, int chan, int err);

/*
 * Let go of @k: its fds close, and its shell's group is killed while the
 * shell is still an unreaped child of ours (never a pid reused since).
 */
void wr_remote_kept_end(const struct wr_remote_kept *k);

/*
 * As wr_remote_open, but on the shell and channel an earlier attempt
 * kept (@k's from now on, even on failure): no new shell. -EPIPE when
 * the shell or its agent is gone meanwhile (the caller starts a new one).
 */
int wr_remote_attach_kept(const struct wr_remote_cfg *cfg, const struct wr_setup *setup,
		    const struct wr_remote_kept *k, struct wr_remote **out);

/*
 * The job restarts: tell the agent (AGAIN), which starts anew once it
 * cleaned up. 0, or -EPIPE for an agent that cannot be kept (its channel
 * is down, or it never answered).
 */
int wr_remote_again(struct wr_remote *r);

/*
 * After wr_remote_again: wait for the agent's answer (at most @seconds;
 * the loop is over, beats that come first are dropped), then hand its
 * shell and channel over to @k: closing @r leaves them be. An agent that
 * dialed in (it dials the next attempt again) hands nothing on: @k's pid
 * is -1 and @r is the caller's to close. 0, or a negative code (then @r
 * is as it was).
 */
int wr_remote_keep(struct wr_remote *r, double seconds, struct wr_remote_kept *k);

/*
 * An agent that will dial in (srun's: dialin.h) rather than talk on a
 * shell of its own: cfg->argv is not used, and the deadline for its
 * channel starts now. 0 or -ENOMEM (*out is set either way: close it).
 */
int wr_remote_open_waiting(const struct wr_remote_cfg *cfg, struct wr_remote **out);

/*
 * Its channel came: @fd (r's from now on, even on failure) gets @setup
 * first. 0, -EPIPE (it is lost already: @fd is closed), -ENOMEM.
 */
int wr_remote_attach(struct wr_remote *r, int fd, const struct wr_setup *setup);

/* Whether its channel is there (an agent that dials in: once it came). */
bool wr_remote_attached(const struct wr_remote *r);

/* Lose it for @why, said as lost() says it (a starter's end, say). */
void wr_remote_fail(struct wr_remote *r, const char *why);

/* Send @cmd. 0, or -EPIPE once the channel is lost, WORLD_EFRAME, -ENOMEM. */
int wr_remote_send(struct wr_remote *r, const struct wr_cmd *cmd);

/* Write what is queued for the agent now, waiting at most @seconds. */
void wr_remote_flush(struct wr_remote *r, double seconds);

/* The shell's pid (the leader of its group). */
pid_t wr_remote_pid(const struct wr_remote *r);

/* The shell was reaped with @wstatus (from whoever reaps children). */
void wr_remote_reaped(struct wr_remote *r, int wstatus);

/*
 * Close the channel now (the agent then stops what still runs there);
 * nothing more is said of it, but what the shell writes on stderr.
 */
void wr_remote_hangup(struct wr_remote *r);

/*
 * Close the channel and free @r; a shell not reaped yet is killed, its
 * group with it, and left to whoever reaps children. Accepts NULL.
 */
void wr_remote_close(struct wr_remote *r);

#endif
