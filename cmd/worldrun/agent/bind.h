/* SPDX-License-Identifier: MIT */
/*
 * bind: which CPUs each rank of a host runs on (--bind-to, --cpus-per-rank),
 * from that host's topology as hwloc sees it within the CPUs the agent
 * itself may use (a Slurm step's, a taskset's), and the words that say so
 * (--report-bindings). Ranks take cores (or hardware threads) in turn, as
 * Open MPI maps by core, each then bound to the objects of its level that
 * hold them; more ranks than there are cores wrap around and share, as
 * srun and Hydra do. It computes; spawn.c applies a set in the child.
 */
#ifndef WR_BIND_H
#define WR_BIND_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>

enum wr_bind_level {
	WR_BIND_NONE = 0,
	WR_BIND_HWTHREAD,
	WR_BIND_CORE,
	WR_BIND_L3CACHE,
	WR_BIND_NUMA,
	WR_BIND_PACKAGE,
	WR_BIND_NLEVELS,
};

/* The most CPUs a rank may ask for (--cpus-per-rank). */
#define WR_BIND_CPUS_MAX 4096

/* "none", "core", ... (NULL for a bad value). */
const char *wr_bind_name(enum wr_bind_level level);

/* A level by its name, Open MPI's and srun's spellings too (socket for
 * package, hwthread's "thread"): 0 or -EINVAL. */
int wr_bind_parse(const char *name, enum wr_bind_level *out);

struct wr_bind;

/*
 * The plan for @nranks ranks of this host at @level, @cpus units (cores,
 * or hardware threads at WR_BIND_HWTHREAD) each. WR_BIND_NONE binds
 * nothing, but still describes what the ranks may use. 0, or a negative
 * code with @err (@errlen bytes) saying why in words ("this host's
 * topology has no L3 cache").
 */
int wr_bind_open(enum wr_bind_level level, int cpus, int nranks,
		 struct wr_bind **out, char *err, size_t errlen);
void wr_bind_close(struct wr_bind *b);

/* Local rank @i's CPUs, or NULL when it is not bound. */
const cpu_set_t *wr_bind_cpus(const struct wr_bind *b, int i);

/* "bound to core 1 (cpu 1)", "bound to cores 0-1 (cpus 0-1), shared: more
 * ranks than cores", "not bound (cpus 0-1)": what local rank @i gets, in
 * words. */
const char *wr_bind_describe(const struct wr_bind *b, int i);

#endif
