/* SPDX-License-Identifier: MIT */
/*
 * srun: the one Slurm step that starts the agents of a job's nodes, one
 * task per node (starter.h): the srun process (a process group of its
 * own, in a guardian slot, so that worldrun's death ends the step), the
 * job secret and the agents' port written once on its stdin (srun
 * gives each agent a copy: reach.h), and its stderr, where srun and, labelled, the agents speak.
 * The agents' channels are not here: they dial in (dialin.h).
 */
#ifndef WR_SRUN_H
#define WR_SRUN_H

#include <sys/types.h>

#include <event2/event.h>

#include "remote.h"

struct wr_srun;

struct wr_srun_cfg {
	struct event_base *base;
	char *const *argv;  /* srun's command line (starter.h); borrowed */
	const char *secret; /* borrowed */
	int port;           /* where the agents dial in (dialin.h) */
	pid_t *guard_slot;  /* where srun's process group goes, or NULL */
	bool keep_input;    /* the job may restart: srun's stdin stays open
			     * for the next attempt's secret and port */
	/* A line srun said (@task -1) or the agent of the step's task
	 * @task, without its newline. */
	void (*said)(void *arg, int task, const char *line);
	void *arg;
};

/*
 * A line of srun's stderr: "N: text" (--label, N padded with blanks) is
 * task N's agent saying text; the task, and in *@text what was said
 * (into @line). Else -1, and *@text is srun's own words.
 */
int wr_srun_label(const char *line, const char **text);

/* Start srun. 0, or -errno (it could not be started: nothing runs). */
int wr_srun_open(const struct wr_srun_cfg *cfg, struct wr_srun **out);

/*
 * The step of an earlier attempt (@k, srun's pid, its stdin and stderr,
 * the caller's no more, even on failure), whose agents dial again: the
 * secret and port go on its stdin, as wr_srun_open does. -EPIPE when srun
 * is gone meanwhile (the caller starts a new one), or as wr_srun_open.
 */
int wr_srun_attach_kept(const struct wr_srun_cfg *cfg, const struct wr_remote_kept *k,
		  struct wr_srun **out);

/*
 * The job restarts and every agent of the step started anew (AGAIN):
 * hand srun and its stdin (kept open, cfg.keep_input) and stderr over to
 * @k; closing @s leaves them be. 0, or -EPIPE (no stdin kept, or srun
 * is gone), -EMFILE.
 */
int wr_srun_keep(struct wr_srun *s, struct wr_remote_kept *k);

/* srun's pid, or -1 once it was reaped. */
pid_t wr_srun_pid(const struct wr_srun *s);

/* srun was reaped with @wstatus: what it said last is passed on first. */
void wr_srun_reaped(struct wr_srun *s, int wstatus);

/* How srun ended, in words ("srun exited with status 1"), once reaped. */
const char *wr_srun_end(const struct wr_srun *s);

/* Kill srun's group if it was not reaped, and free @s. Accepts NULL. */
void wr_srun_close(struct wr_srun *s);

#endif
