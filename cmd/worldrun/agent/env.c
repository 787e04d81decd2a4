/* SPDX-License-Identifier: MIT */
#include "env.h"
#include "errfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum contract {
	C_WORLD_RANK,
	C_WORLD_SIZE,
	C_WORLD_LOCAL_RANK,
	C_WORLD_LOCAL_SIZE,
	C_WORLD_NODE_RANK,
	C_WORLD_NNODES,
	C_WORLD_JOBID,
	C_RANK,
	C_LOCAL_RANK,
	C_LOCAL_WORLD_SIZE,
	C_GROUP_RANK,
	C_MASTER_ADDR,
	C_MASTER_PORT,
	C_ROLE_RANK,
	C_ROLE_WORLD_SIZE,
	C_TORCHELASTIC_ERROR_FILE,
	NCONTRACT
};

/* The names every rank gets from worldrun; -x cannot override them. */
static const char *const contract_names[NCONTRACT] = {
	[C_WORLD_RANK] = "WORLD_RANK",
	[C_WORLD_SIZE] = "WORLD_SIZE",
	[C_WORLD_LOCAL_RANK] = "WORLD_LOCAL_RANK",
	[C_WORLD_LOCAL_SIZE] = "WORLD_LOCAL_SIZE",
	[C_WORLD_NODE_RANK] = "WORLD_NODE_RANK",
	[C_WORLD_NNODES] = "WORLD_NNODES",
	[C_WORLD_JOBID] = "WORLD_JOBID",
	[C_RANK] = "RANK",
	[C_LOCAL_RANK] = "LOCAL_RANK",
	[C_LOCAL_WORLD_SIZE] = "LOCAL_WORLD_SIZE",
	[C_GROUP_RANK] = "GROUP_RANK",
	[C_MASTER_ADDR] = "MASTER_ADDR",
	[C_MASTER_PORT] = "MASTER_PORT",
	[C_ROLE_RANK] = "ROLE_RANK",
	[C_ROLE_WORLD_SIZE] = "ROLE_WORLD_SIZE",
	[C_TORCHELASTIC_ERROR_FILE] = "TORCHELASTIC_ERROR_FILE",
};

/* Set per rank where worldrun serves PMI-1: MPICH's, not WORLD_*. The
 * first three on an inherited fd, the fourth, fifth and third on a port;
 * either way the last two, which mpiexec.hydra sets too and programs
 * written for it read (the local rank, to pick a GPU, say). */
static const char *const pmi_names[] = { "PMI_FD", "PMI_RANK", "PMI_SIZE", "PMI_PORT",
					 "PMI_ID", "MPI_LOCALRANKID", "MPI_LOCALNRANKS" };
#define NPMI (sizeof(pmi_names) / sizeof(pmi_names[0]))
#define PMI_SET 5

/* Set by worldrun for the whole job (wr_env_set), not per rank. */
static const char *const job_names[] = {
	"WORLD_REGISTRY", "WORLD_SECRET", "WORLD_LEASE_INTERVAL",
	"WORLD_WAIT_TIMEOUT", "WORLD_SPIN_US", "WORLD_FABRIC", "WORLD_JOBDIR",
	"WORLD_ADVERTISE", "WORLD_PULL",
	/* torchrun's, of the whole job (job.c) */
	"ROLE_NAME", "GROUP_WORLD_SIZE", "TORCHELASTIC_RESTART_COUNT", "WORLD_RESTART_COUNT",
	"TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE",
};

static bool
in_list(const char *const *list, size_t n, const char *name, size_t len)
{
	for (size_t i = 0; i < n; i++) {
		if (strlen(list[i]) == len && memcmp(list[i], name, len) == 0) {
			return true;
		}
	}
	return false;
}

bool
wr_env_is_contract(const char *name, size_t len)
{
	return in_list(contract_names, NCONTRACT, name, len) ||
	       in_list(pmi_names, NPMI, name, len) ||
	       in_list(job_names, sizeof(job_names) / sizeof(job_names[0]), name, len);
}

bool
wr_env_is_hosts_own(const char *name, size_t len)
{
	static const char *const own[] = {
		"DISPLAY", "XAUTHORITY", "HOSTNAME", "PWD", "OLDPWD", "SHLVL",
	};

	return (len >= 4 && memcmp(name, "SSH_", 4) == 0) ||
	       in_list(own, sizeof(own) / sizeof(own[0]), name, len);
}

static bool
starts(const char *var, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);

	return len >= n && memcmp(var, prefix, n) == 0;
}

/*
 * What a task of an srun step inherits that names the step and the task
 * (reference/slurm.md 5.2). A rank that kept them would take itself for
 * that task: PyTorch Lightning, for one, reads its rank from SLURM_PROCID
 * once SLURM_NTASKS is set; and what describes the launcher's node,
 * wrong on the others. What names the allocation (SLURM_JOB_*,
 * SLURM_NODELIST, SLURM_CLUSTER_NAME, ...) stays. Listed in worldrun(1).
 */
static bool
is_slurm_task(const char *var, size_t len)
{
	static const char *const names[] = {
		"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_GTIDS",
		"SLURM_TASK_PID", "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_NTASKS_PER_NODE",
		"SLURM_TASKS_PER_NODE", "SLURM_STEPID", "SLURM_SRUN_COMM_HOST",
		"SLURM_SRUN_COMM_PORT", "SLURM_LAUNCH_NODE_IPADDR", "SLURM_DISTRIBUTION",
		"SLURM_LABELIO", "SLURMD_NODENAME", "SLURM_TOPOLOGY_ADDR",
		"SLURM_TOPOLOGY_ADDR_PATTERN", "SLURM_CPUS_ON_NODE",
	};

	return starts(var, len, "SLURM_STEP_") || starts(var, len, "SLURM_CPU_BIND") ||
	       in_list(names, sizeof(names) / sizeof(names[0]), var, len);
}

/* Inherited WORLD_* belong to an outer job: a worldrun in a rank starts
 * anew. So do PMI_* and PMIX_*: under mpiexec or srun, they name a
 * server of that job; and the variables of an srun task. */
static bool
is_inherited_ours(const char *var, size_t len)
{
	return starts(var, len, "WORLD_") || starts(var, len, "PMI_") ||
	       starts(var, len, "PMIX_") || is_slurm_task(var, len) ||
	       wr_env_is_contract(var, len);
}

static size_t
name_len(const char *var)
{
	const char *eq = strchr(var, '=');

	return eq != NULL ? (size_t)(eq - var) : strlen(var);
}

/* Keeps room for one more variable and the terminating NULL. */
static int
reserve(struct wr_env *env)
{
	if (env->n + 2 > env->cap) {
		size_t cap = env->cap ? env->cap * 2 : 64;
		char **v = realloc(env->vars, cap * sizeof(*v));

		if (v == NULL) {
			return -ENOMEM;
		}
		env->vars = v;
		env->cap = cap;
	}
	return 0;
}

/* Appends @var, which @env owns from now on, even on failure. */
static int
push(struct wr_env *env, char *var)
{
	if (reserve(env) < 0) {
		free(var);
		return -ENOMEM;
	}
	env->vars[env->n++] = var;
	env->vars[env->n] = NULL;
	return 0;
}

static ssize_t
find(const struct wr_env *env, const char *name, size_t len)
{
	for (size_t i = 0; i < env->n; i++) {
		if (name_len(env->vars[i]) == len &&
		    memcmp(env->vars[i], name, len) == 0) {
			return (ssize_t)i;
		}
	}
	return -1;
}

int
wr_env_init(struct wr_env *env, char *const *inherited)
{
	*env = (struct wr_env){ 0 };
	if (reserve(env) < 0) {
		return -ENOMEM;
	}
	env->vars[0] = NULL;
	for (size_t i = 0; inherited != NULL && inherited[i] != NULL; i++) {
		const char *var = inherited[i];
		char *copy;

		/*
		 * A name set twice is kept once, as getenv() reads it (the first):
		 * else a -x would replace one of the two, and a program that
		 * reads the other (Python, a shell) would not see it.
		 */
		if (strchr(var, '=') == NULL || is_inherited_ours(var, name_len(var)) ||
		    find(env, var, name_len(var)) >= 0) {
			continue;
		}
		copy = strdup(var);
		if (copy == NULL || push(env, copy) < 0) {
			wr_env_finish(env);
			return -ENOMEM;
		}
	}
	return 0;
}

void
wr_env_finish(struct wr_env *env)
{
	if (env == NULL) {
		return;
	}
	for (size_t i = 0; i < env->n; i++) {
		free(env->vars[i]);
	}
	free(env->vars);
	*env = (struct wr_env){ 0 };
}

const char *
wr_env_get(const struct wr_env *env, const char *name)
{
	ssize_t i = find(env, name, strlen(name));

	return i < 0 ? NULL : env->vars[i] + strlen(name) + 1;
}

static const char *
lookup(char *const *vars, const char *name, size_t len)
{
	for (size_t i = 0; vars != NULL && vars[i] != NULL; i++) {
		if (name_len(vars[i]) == len && memcmp(vars[i], name, len) == 0 &&
		    vars[i][len] == '=') {
			return vars[i];
		}
	}
	return NULL;
}

const char *
wr_env_value(char *const *vars, const char *name)
{
	size_t len = strlen(name);
	const char *var = lookup(vars, name, len);

	return var != NULL ? var + len + 1 : NULL;
}

/* Replace @var ("NAME=...", which @env owns from now on) or add it. */
static int
put(struct wr_env *env, char *var)
{
	size_t len = name_len(var);
	ssize_t at = find(env, var, len);

	if (at >= 0) {
		free(env->vars[at]);
		env->vars[at] = var;
		return 0;
	}
	return push(env, var);
}

int
wr_env_set(struct wr_env *env, const char *name, const char *value)
{
	char *var = NULL;

	if (asprintf(&var, "%s=%s", name, value) < 0) {
		return -ENOMEM;
	}
	return put(env, var);
}

int
wr_env_apply_x(struct wr_env *env, const char *arg, char *const *inherited)
{
	size_t len = name_len(arg);
	const char *src = arg;
	char *copy;

	if (wr_env_is_contract(arg, len)) {
		return -EPERM;
	}
	if (arg[len] == '\0') {
		src = lookup(inherited, arg, len);
		if (src == NULL) {
			return -ENOENT;
		}
	}
	copy = strdup(src);
	if (copy == NULL) {
		return -ENOMEM;
	}
	return put(env, copy);
}

/*
 * torchrun's default for ranks that share a host: one OpenMP thread each,
 * unless the user set a number (worldrun(1) says so).
 */
#define OMP_ONE "OMP_NUM_THREADS=1"

char **
wr_env_for_rank(const struct wr_env *base, const struct wr_ident *id)
{
	char num[NCONTRACT][16], pmi[PMI_SET][32], errfile[4096];
	const char *values[NCONTRACT], *pname[PMI_SET], *dir = wr_env_get(base, "WORLD_JOBDIR");
	size_t npmi = id->pmi ? PMI_SET : 0, nextra = 0, bytes = 0;
	bool omp = id->local_size > 1 && wr_env_get(base, "OMP_NUM_THREADS") == NULL;
	char **envp;
	char *p;

	for (int i = 0; i < NCONTRACT; i++) {
		values[i] = num[i];
	}
	snprintf(num[C_WORLD_RANK], 16, "%d", id->rank);
	snprintf(num[C_WORLD_SIZE], 16, "%d", id->size);
	snprintf(num[C_WORLD_LOCAL_RANK], 16, "%d", id->local_rank);
	snprintf(num[C_WORLD_LOCAL_SIZE], 16, "%d", id->local_size);
	snprintf(num[C_WORLD_NODE_RANK], 16, "%d", id->node_rank);
	snprintf(num[C_WORLD_NNODES], 16, "%d", id->nnodes);
	snprintf(num[C_MASTER_PORT], 16, "%d", id->master_port);
	values[C_WORLD_JOBID] = id->jobid;
	values[C_MASTER_ADDR] = id->master_addr;
	/* torchrun's names carry the same numbers as ours. */
	values[C_RANK] = num[C_WORLD_RANK];
	values[C_LOCAL_RANK] = num[C_WORLD_LOCAL_RANK];
	values[C_LOCAL_WORLD_SIZE] = num[C_WORLD_LOCAL_SIZE];
	values[C_GROUP_RANK] = num[C_WORLD_NODE_RANK];
	values[C_ROLE_RANK] = num[C_WORLD_RANK];
	values[C_ROLE_WORLD_SIZE] = num[C_WORLD_SIZE];
	/* Where torch's @record (and world's) write the rank's exception. */
	values[C_TORCHELASTIC_ERROR_FILE] =
		dir != NULL && wr_errfile_path(errfile, sizeof(errfile), dir, id->rank) == 0
		? errfile : "";
	pname[0] = pmi_names[id->pmi_port > 0 ? 3 : 0];
	pname[1] = pmi_names[id->pmi_port > 0 ? 4 : 1];
	pname[2] = pmi_names[2];
	pname[3] = pmi_names[5];
	pname[4] = pmi_names[6];
	if (id->pmi_port > 0) {
		snprintf(pmi[0], sizeof(pmi[0]), "127.0.0.1:%d", id->pmi_port);
	} else {
		snprintf(pmi[0], sizeof(pmi[0]), "%d", id->pmi_fd);
	}
	snprintf(pmi[1], sizeof(pmi[1]), "%d", id->rank);
	snprintf(pmi[2], sizeof(pmi[2]), "%d", id->size);
	snprintf(pmi[3], sizeof(pmi[3]), "%d", id->local_rank);
	snprintf(pmi[4], sizeof(pmi[4]), "%d", id->local_size);
	for (int i = 0; i < NCONTRACT; i++) {
		bytes += strlen(contract_names[i]) + strlen(values[i]) + 2;
	}
	for (size_t i = 0; i < npmi; i++) {
		bytes += strlen(pname[i]) + strlen(pmi[i]) + 2;
	}
	while (id->extra != NULL && id->extra[nextra] != NULL) {
		nextra++;
	}
	envp = malloc((base->n + NCONTRACT + npmi + nextra + omp + 1) * sizeof(char *) + bytes);
	if (envp == NULL) {
		return NULL;
	}
	memcpy(envp, base->vars, base->n * sizeof(char *));
	p = (char *)(envp + base->n + NCONTRACT + npmi + nextra + omp + 1);
	for (int i = 0; i < NCONTRACT; i++) {
		envp[base->n + (size_t)i] = p;
		p += sprintf(p, "%s=%s", contract_names[i], values[i]) + 1;
	}
	for (size_t i = 0; i < npmi; i++) {
		envp[base->n + NCONTRACT + i] = p;
		p += sprintf(p, "%s=%s", pname[i], pmi[i]) + 1;
	}
	/* PMIx's own strings: they outlive the rank's start. */
	for (size_t i = 0; i < nextra; i++) {
		envp[base->n + NCONTRACT + npmi + i] = id->extra[i];
	}
	if (omp) {
		envp[base->n + NCONTRACT + npmi + nextra] = (char *)OMP_ONE;
	}
	envp[base->n + NCONTRACT + npmi + nextra + omp] = NULL;
	return envp;
}
