/* SPDX-License-Identifier: MIT */
/*
 * torchrun: what torchrun's own options mean to worldrun, and the command
 * a rank runs under them: a script run by the Python torchrun would use
 * (PYTHON_EXEC, else the interpreter of the torchrun on PATH, else
 * python3), with "-u", or "-m MODULE", or the program itself
 * (--no-python). It reads the options and the script's first bytes; the
 * job's environment and restarts are elsewhere (job, policy).
 */
#ifndef WR_TORCHRUN_H
#define WR_TORCHRUN_H

#include <stdbool.h>

enum wr_torch_opt {
	WR_TORCH_NONE,
	WR_TORCH_NPROC,        /* --nproc-per-node N|auto|cpu */
	WR_TORCH_NNODES,       /* --nnodes N or N:N */
	WR_TORCH_STANDALONE,
	WR_TORCH_ROLE,         /* --role NAME: ROLE_NAME */
	WR_TORCH_MODULE,       /* -m: the program is a module */
	WR_TORCH_NO_PYTHON,
	WR_TORCH_RUN_PATH,     /* runpy.run_path: run by Python all the same */
	WR_TORCH_MASTER_ADDR,
	WR_TORCH_MASTER_PORT,
	WR_TORCH_RDZV_ID,      /* TORCHELASTIC_RUN_ID */
	WR_TORCH_MONITOR,      /* --monitor-interval S */
};

struct wr_torch_opts {
	bool used;               /* one of torchrun's own options was given */
	long nproc;              /* --nproc-per-node; 0: not given */
	long nnodes;             /* --nnodes; 0: not given */
	bool module;
	bool no_python;
	const char *role;        /* NULL: "default" */
	const char *master_addr; /* NULL: worldrun's choice */
	int master_port;         /* 0: a free port */
	const char *run_id;      /* --rdzv-id; NULL: the job id */
	double monitor;          /* --monitor-interval; 0: not given */
	char **argv;             /* the command made by wr_torchrun_command(),
				  * owned (wr_torchrun_finish) */
};

/*
 * Apply torchrun's option @what with its value @val (NULL for a flag);
 * @as is the option as typed. Returns 0, or -1 after one line on stderr.
 */
int wr_torchrun_apply(struct wr_torch_opts *t, enum wr_torch_opt what,
		      const char *val, const char *as);

/*
 * The command torchrun would run for the program @argv (@argc words):
 * when @t->used and not --no-python, for -m or for a Python script (a
 * name ending in ".py", or a file at that path from @wdir that is not a
 * compiled program or a script of another interpreter), Python's command
 * line in @t->argv, which *argv and *argc then name; else @argv as it
 * is. @envp is worldrun's environment (PYTHON_EXEC, PATH). Returns 0, or
 * -1 after one line on stderr.
 */
int wr_torchrun_command(struct wr_torch_opts *t, char ***argv, int *argc,
			const char *wdir, char *const *envp);

/* Release what wr_torchrun_command() made. Accepts NULL. */
void wr_torchrun_finish(struct wr_torch_opts *t);

#endif
