/* SPDX-License-Identifier: MIT */
/*
 * opts: worldrun's command line. One option table is the source of the
 * parser and of --help. Parsing checks every value and prints one line
 * per usage error; it does not look at the file system beyond that.
 */
#ifndef WR_OPTS_H
#define WR_OPTS_H

#include <stdbool.h>
#include <stddef.h>

#include "torchrun.h"
#include "wire.h" /* enum wr_stdin_mode */

enum wr_launcher {
	WR_LAUNCH_AUTO,  /* slurm inside an allocation without a host list,
			  * ssh with one, else local */
	WR_LAUNCH_LOCAL, /* every rank on this machine */
	WR_LAUNCH_SSH,   /* an agent per host over ssh (or --rsh) */
	WR_LAUNCH_SLURM, /* the agents as one srun step */
};

struct wr_opts {
	long np;      /* 1 unless given */
	bool np_given; /* else a host list's slots decide */
	const char *hosts_file; /* --hosts */
	const char *hosts_list; /* -H */
	bool map_by_node;       /* --map-by node; else by slot */
	long ppn;               /* 0: by slots */
	bool oversubscribe;
	bool display_map;
	int bind;               /* enum wr_bind_level (agent/bind.h): --bind-to */
	bool bind_given;
	int map_bind;           /* --map-by core|hwthread: their level */
	long cpus_per_rank;     /* --cpus-per-rank (srun's -c); 1 unless given */
	bool report_bindings;
	enum wr_launcher launcher;
	const char *rsh;        /* --rsh: NULL for ssh */
	double connect_timeout; /* seconds for a host's agent to answer */
	double host_timeout;    /* seconds of silence that lose a host; 0: never */
	char **xvars; /* -x arguments, borrowed from argv or from made */
	size_t nxvars;
	char **made; /* NAME=VALUE of -genv NAME VALUE, owned */
	bool env_none; /* the ranks start from an empty environment */
	size_t nmade;
	const char *wdir;
	bool label;
	const char *output_dir;
	bool pty;
	bool no_pmi;   /* no PMI-1 server for the ranks */
	bool no_pmix;  /* no PMIx server for the ranks */
	bool pmi_port; /* PMI-1 on a loopback port (PMI_PORT), not PMI_FD */
	enum wr_stdin_mode stdin_mode;
	long stdin_rank;
	double kill_grace;
	bool keep_going;
	long max_restarts; /* start the whole job again this many times at most */
	double timeout; /* 0: none */
	bool timeout_stacks; /* stacks in the hang report */
	bool forward_quit;   /* SIGQUIT goes to the ranks, not to a report */
	const char *report;
	bool dry_run;
	int verbose;
	struct wr_torch_opts torch; /* torchrun's own options (torchrun.h) */
	bool done; /* --help or --version was printed */
	char **argv; /* the program and its arguments, borrowed */
	int argc;
};

/*
 * Fill @o from @argv. Returns 0, or -1 after printing a one-line error
 * to stderr (the caller exits 125). Allocates o->xvars: release it with
 * wr_opts_finish().
 */
int wr_opts_parse(struct wr_opts *o, int argc, char **argv);

void wr_opts_finish(struct wr_opts *o);

/* A rank count: decimal, 1 to 1048576. Returns 0 or -EINVAL. */
int wr_opts_parse_count(const char *s, long *out);

/* Seconds: decimal, >= 0, finite, at most a year. Returns 0 or -EINVAL. */
int wr_opts_parse_seconds(const char *s, double *out);

#endif
