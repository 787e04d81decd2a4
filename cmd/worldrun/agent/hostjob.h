/* SPDX-License-Identifier: MIT */
/*
 * hostjob: the job as one host's agent runs it, made from that host's
 * SETUP alone (wire.h), in worldrun's own process (local mode) as on a
 * remote host: the ranks' base environment, the program as found here
 * and the directory they run in. Its maker adds what only it knows of
 * the host (an agent's job directory, the registry's address from there)
 * before the agent opens; the agent reads it and adds START's address.
 */
#ifndef WR_HOSTJOB_H
#define WR_HOSTJOB_H

#include <stdbool.h>
#include <sys/resource.h>

#include "env.h"
#include "wire.h"

struct wr_hostjob {
	char jobid[13];
	int size;
	int nnodes;
	char **argv;      /* borrowed from the setup */
	char *path;       /* the program as found here, absolute */
	char **sh_argv;   /* "/bin/sh", path, args: for scripts without #! */
	struct wr_env env;
	char *wdir;       /* absolute; NULL: the agent's own */
	bool pty;
	enum wr_stdin_mode stdin_mode;
	int stdin_rank;   /* with WR_STDIN_RANK: the rank that reads stdin */
	double kill_grace;
	const char *master_addr; /* borrowed from the setup, or loopback */
	int master_port;
	struct rlimit nofile;    /* the limit ranks get back */
	bool pmi;
	bool pmi_port;           /* on a loopback port, not an inherited fd */
	bool pmix;               /* serve PMIx too */
	const char *pmi_mapping; /* borrowed from the setup; NULL: none */
	char *const *node_name;  /* borrowed from the setup; NULL: none */
	int bind;                /* enum wr_bind_level (bind.h) */
	int cpus_per_rank;       /* 1 or more */
	bool report_bindings;
	struct wr_bind *cpus;    /* the ranks' CPUs (wr_hostjob_bind); NULL:
				  * they run where the agent may */
};

/*
 * @job from @s: its fields, and its environment as SETUP gives it (to
 * which @secret, when not NULL, adds WORLD_SECRET). An empty master
 * address (rank 0 beside the launcher) reads as loopback here. What @s
 * points to must outlive @job: its argv, master address and PMI mapping
 * are borrowed (@s itself need not). Returns 0 or -ENOMEM;
 * wr_hostjob_finish() either way.
 */
int wr_hostjob_init(struct wr_hostjob *job, const struct wr_setup *s,
		    const char *secret);

/*
 * This host's own variables from @envp (env.h: SSH_CONNECTION, DISPLAY...,
 * as sshd gave them; PWD and OLDPWD are the shells' business), in place
 * of the launcher's. 0 or -ENOMEM.
 */
int wr_hostjob_add_hosts_own(struct wr_hostjob *job, char *const *envp);

/*
 * The host's part: @wdir (NULL: ours) made absolute in job->wdir, and
 * job->argv[0] found as a rank there would find it (resolve.h), in
 * job->path and job->sh_argv. Returns 0, or the exit status it calls for
 * (125; 126 for a program that cannot be executed, 127 for one not
 * found) with why in @why, without "worldrun: ".
 */
int wr_hostjob_locate(struct wr_hostjob *job, const char *wdir, char *why,
		      size_t size);

/*
 * Plan where this host's @nranks ranks run (bind.h), when --bind-to or
 * --report-bindings asked: 0, or 125 with why in @why (no topology, no
 * object of the level asked for).
 */
int wr_hostjob_bind(struct wr_hostjob *job, int nranks, char *why, size_t size);

/* Accepts a zeroed @job. */
void wr_hostjob_finish(struct wr_hostjob *job);

#endif
