/* SPDX-License-Identifier: MIT */
/*
 * starter: the command line that starts an agent for a node: the remote
 * shell (--rsh, or an ssh that never prompts), the host, then this
 * worldrun's own path and --agent, as words that ssh joins for the
 * remote shell. A node on this machine other than the first gets the
 * agent itself, with no shell. In a Slurm allocation it is one srun for
 * all nodes instead. It starts nothing.
 */
#ifndef WR_STARTER_H
#define WR_STARTER_H

#include <stdbool.h>

/* Words a --rsh command may have. */
#define WR_STARTER_WORDS_MAX 64

struct wr_starter {
	char **argv; /* NULL-terminated; everything owned */
	char *self;  /* this worldrun, absolute */
	char *words; /* the split --rsh */
};

/*
 * The command line for an agent on @host (@local: this machine, no
 * shell). @rsh is the remote shell's words, split at blanks (no quoting),
 * or NULL for "ssh -o BatchMode=yes -o ConnectTimeout=@timeout ...".
 * Returns 0, -EINVAL (an empty @rsh, or too many words) or -errno.
 */
int wr_starter_init(struct wr_starter *s, const char *rsh, double timeout,
		    const char *host, bool local);

/*
 * The command line of the step that starts an agent on each of @nodes
 * (@n names) at once, one task per node: srun, its agents dialing in
 * (reach.h) to the port srun's stdin gives them (srun.h). 0 or -ENOMEM.
 */
int wr_starter_init_srun(struct wr_starter *s, const char *const *nodes, int n);

/* Accepts a zeroed @s. */
void wr_starter_finish(struct wr_starter *s);

#endif
