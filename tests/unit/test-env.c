/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for env: the base environment (inherited WORLD_* and contract
 * names stripped), -x setting and forwarding, and the per-rank environment
 * with every contract variable.
 */
#include "env.h"
#include "tap.h"

#include <errno.h>

static char *const inherited[] = {
	"PATH=/usr/bin:/bin",
	"HOME=/root",
	"KEEP=a=b",
	"WORLDLY=yes",
	"FWD=forwarded",
	"WORLD_RANK=3",
	"WORLD_SIZE=8",
	"WORLD_JOBID=feedfeedfeed",
	"WORLD_DEBUG=2",
	"WORLD_SOMETHING=x",
	"RANK=3",
	"LOCAL_RANK=1",
	"LOCAL_WORLD_SIZE=4",
	"GROUP_RANK=0",
	"MASTER_ADDR=10.0.0.1",
	"MASTER_PORT=29500",
	"PMI_FD=8",
	"PMIX_RANK=2",
	"PMIX_SERVER_URI41=pmix-server.1;tcp4://127.0.0.1:4242",
	"SLURM_JOB_ID=42",
	"SLURM_PROCID=2",
	"SLURM_LOCALID=1",
	"SLURM_NODEID=1",
	"SLURM_NTASKS=4",
	"SLURM_STEP_ID=0",
	"SLURM_STEP_NODELIST=n[1-3]",
	"SLURM_CPU_BIND=quiet,mask_cpu:0x1",
	"SLURMD_NODENAME=n1",
	"NOEQUALS",
	NULL,
};

/* A parent may pass a name twice (execve does not mind). */
static char *const twice[] = { "A=first", "B=1", "A=second", NULL };

/* Occurrences of variable @name in a NULL-terminated @vars. */
static int
count_name(char *const *vars, const char *name)
{
	size_t len = strlen(name);
	int n = 0;

	for (size_t i = 0; vars[i] != NULL; i++) {
		n += strncmp(vars[i], name, len) == 0 && vars[i][len] == '=';
	}
	return n;
}

/* The value of @name in a NULL-terminated @vars, or NULL. */
static const char *
value_of(char *const *vars, const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; vars[i] != NULL; i++) {
		if (strncmp(vars[i], name, len) == 0 && vars[i][len] == '=') {
			return vars[i] + len + 1;
		}
	}
	return NULL;
}

static void
test_init(void)
{
	static const char *const stripped[] = {
		"WORLD_RANK", "WORLD_SIZE", "WORLD_JOBID", "WORLD_DEBUG",
		"WORLD_SOMETHING", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
		"GROUP_RANK", "MASTER_ADDR", "MASTER_PORT", "PMI_FD", "PMIX_RANK",
		"PMIX_SERVER_URI41", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID",
		"SLURM_NTASKS", "SLURM_STEP_ID", "SLURM_STEP_NODELIST", "SLURM_CPU_BIND",
		"SLURMD_NODENAME",
	};
	struct wr_env env;

	is_int(wr_env_init(&env, inherited), 0, "env: init succeeds");
	is_str(wr_env_get(&env, "PATH"), "/usr/bin:/bin", "env: keeps PATH");
	is_str(wr_env_get(&env, "HOME"), "/root", "env: keeps HOME");
	is_str(wr_env_get(&env, "KEEP"), "a=b",
	       "env: a value may contain '='");
	is_str(wr_env_get(&env, "WORLDLY"), "yes",
	       "env: keeps a name that merely starts with WORLD");
	for (size_t i = 0; i < sizeof(stripped) / sizeof(stripped[0]); i++) {
		ok(wr_env_get(&env, stripped[i]) == NULL,
		   "env: strips inherited %s", stripped[i]);
	}
	ok(wr_env_get(&env, "NOEQUALS") == NULL,
	   "env: drops an entry without '='");
	is_str(wr_env_get(&env, "SLURM_JOB_ID"), "42",
	       "env: keeps what names the Slurm allocation, not the step's task");
	is_int((long long)env.n, 6, "env: keeps exactly the 6 other variables");
	ok(env.vars[env.n] == NULL, "env: the base is NULL-terminated");
	wr_env_finish(&env);
	ok(env.vars == NULL && env.n == 0, "env: finish empties the env");
	wr_env_finish(&env);
	wr_env_finish(NULL);
	ok(env.vars == NULL && env.n == 0, "env: finish accepts a finished env (still empty) and NULL");

	is_int(wr_env_init(&env, twice), 0, "env: init with a name set twice");
	is_int((long long)env.n, 2, "env: a name set twice is kept once");
	is_str(wr_env_get(&env, "A"), "first", "env: the first one, as getenv() reads");
	is_int(wr_env_apply_x(&env, "A=x", twice), 0, "env: -x A=x after it");
	ok(env.n == 2 && strcmp(env.vars[0], "A=x") == 0 &&
	   strcmp(env.vars[1], "B=1") == 0, "env: then A is x, and only x");
	wr_env_finish(&env);

	is_int(wr_env_init(&env, NULL), 0, "env: init from no environment");
	ok(env.n == 0 && env.vars != NULL && env.vars[0] == NULL,
	   "env: an empty base is an empty NULL-terminated list");
	wr_env_finish(&env);
}

static void
test_apply_x(void)
{
	static const char *const contract[] = {
		"WORLD_RANK=1", "WORLD_SIZE", "WORLD_LOCAL_RANK=0",
		"WORLD_LOCAL_SIZE=1", "WORLD_NODE_RANK=0", "WORLD_NNODES=1",
		"WORLD_JOBID=x", "RANK=1", "LOCAL_RANK", "LOCAL_WORLD_SIZE=1",
		"GROUP_RANK=0", "MASTER_ADDR", "MASTER_ADDR=1.2.3.4",
		"MASTER_PORT=1",
	};
	struct wr_env env;
	size_t n;

	wr_env_init(&env, inherited);
	n = env.n;
	is_int(wr_env_apply_x(&env, "NEW=1", inherited), 0,
	       "env: -x NEW=1 succeeds");
	is_str(wr_env_get(&env, "NEW"), "1", "env: -x NAME=VALUE sets NAME");
	is_int((long long)env.n, (long long)n + 1, "env: -x of a new name adds one");
	is_int(wr_env_apply_x(&env, "HOME=/tmp", inherited), 0,
	       "env: -x HOME=/tmp succeeds");
	is_str(wr_env_get(&env, "HOME"), "/tmp",
	       "env: -x NAME=VALUE overrides an inherited value");
	is_int(count_name(env.vars, "HOME"), 1, "env: an override leaves one HOME");
	is_int(wr_env_apply_x(&env, "FWD", inherited), 0,
	       "env: -x FWD succeeds when FWD is set");
	is_str(wr_env_get(&env, "FWD"), "forwarded",
	       "env: -x NAME forwards the inherited value");
	is_int(wr_env_apply_x(&env, "EMPTY=", inherited), 0, "env: -x EMPTY=");
	is_str(wr_env_get(&env, "EMPTY"), "", "env: -x NAME= sets an empty value");
	n = env.n;
	is_int(wr_env_apply_x(&env, "MISSING", inherited), -ENOENT,
	       "env: -x NAME fails with ENOENT when NAME is not set");
	is_int(wr_env_apply_x(&env, "FW", inherited), -ENOENT,
	       "env: -x NAME does not match a longer inherited name");
	is_int(wr_env_apply_x(&env, "NOEQUALS", inherited), -ENOENT,
	       "env: -x NAME does not match an entry without '='");
	is_int((long long)env.n, (long long)n, "env: a failed -x adds nothing");
	for (size_t i = 0; i < sizeof(contract) / sizeof(contract[0]); i++) {
		ok(wr_env_apply_x(&env, contract[i], inherited) == -EPERM,
		   "env: -x %s fails with EPERM (a contract name)", contract[i]);
	}
	is_int((long long)env.n, (long long)n,
	       "env: a refused contract name adds nothing");
	is_int(wr_env_apply_x(&env, "WORLD_DEBUG=1", inherited), 0,
	       "env: -x WORLD_DEBUG=1 is allowed");
	is_str(wr_env_get(&env, "WORLD_DEBUG"), "1",
	       "env: -x WORLD_DEBUG=1 sets it");
	is_int(wr_env_apply_x(&env, "WORLD_DEBUG", inherited), 0,
	       "env: -x WORLD_DEBUG forwards a stripped WORLD_ variable");
	is_str(wr_env_get(&env, "WORLD_DEBUG"), "2",
	       "env: the forwarded WORLD_DEBUG has the inherited value");
	ok(wr_env_get(&env, "NOPE") == NULL, "env: get of an unset name is NULL");
	ok(wr_env_get(&env, "HOM") == NULL, "env: get does not match a prefix");
	ok(env.vars[env.n] == NULL, "env: stays NULL-terminated after -x");
	wr_env_finish(&env);
}

static void
test_is_contract(void)
{
	ok(wr_env_is_contract("RANK", 4), "env: RANK is a contract name");
	ok(wr_env_is_contract("MASTER_PORT=1", 11),
	   "env: is_contract looks at @len bytes only");
	ok(!wr_env_is_contract("RANKS", 5), "env: RANKS is not a contract name");
	ok(!wr_env_is_contract("RAN", 3), "env: RAN is not a contract name");
	ok(!wr_env_is_contract("WORLD_DEBUG", 11),
	   "env: WORLD_DEBUG is not a contract name");
}

static void
test_for_rank(void)
{
	static const char *const want[][2] = {
		{ "WORLD_RANK", "5" },
		{ "WORLD_SIZE", "8" },
		{ "WORLD_LOCAL_RANK", "1" },
		{ "WORLD_LOCAL_SIZE", "4" },
		{ "WORLD_NODE_RANK", "1" },
		{ "WORLD_NNODES", "2" },
		{ "WORLD_JOBID", "0123456789ab" },
		{ "RANK", "5" },
		{ "LOCAL_RANK", "1" },
		{ "LOCAL_WORLD_SIZE", "4" },
		{ "GROUP_RANK", "1" },
		{ "MASTER_ADDR", "127.0.0.1" },
		{ "MASTER_PORT", "29517" },
		{ "ROLE_RANK", "5" },
		{ "ROLE_WORLD_SIZE", "8" },
		{ "TORCHELASTIC_ERROR_FILE", "/tmp/wr-dir/error-5.json" },
		{ "OMP_NUM_THREADS", "1" },
	};
	const size_t nwant = sizeof(want) / sizeof(want[0]);
	struct wr_ident id = {
		.rank = 5, .size = 8, .local_rank = 1, .local_size = 4,
		.node_rank = 1, .nnodes = 2, .jobid = "0123456789ab",
		.master_addr = "127.0.0.1", .master_port = 29517,
	};
	struct wr_env env;
	char **envp;
	size_t n = 0;
	bool base_ok = true;

	wr_env_init(&env, inherited);
	wr_env_apply_x(&env, "EXTRA=1", inherited);
	wr_env_set(&env, "WORLD_JOBDIR", "/tmp/wr-dir");
	envp = wr_env_for_rank(&env, &id);
	if (!ok(envp != NULL, "env: for_rank builds an environment")) {
		wr_env_finish(&env);
		return;
	}
	for (size_t i = 0; i < nwant; i++) {
		const char *v = value_of(envp, want[i][0]);

		ok(v != NULL && strcmp(v, want[i][1]) == 0 &&
			   count_name(envp, want[i][0]) == 1,
		   "env: for_rank sets %s=%s once", want[i][0], want[i][1]);
	}
	for (size_t i = 0; i < env.n; i++) {
		for (n = 0; envp[n] != NULL && strcmp(envp[n], env.vars[i]) != 0;
		     n++) {
		}
		base_ok = base_ok && envp[n] != NULL;
	}
	ok(base_ok, "env: for_rank holds every base variable");
	for (n = 0; envp[n] != NULL; n++) {
	}
	is_int((long long)n, (long long)(env.n + nwant),
	       "env: for_rank is the base plus 16 contract variables and "
	       "OMP_NUM_THREADS, NULL-terminated");
	free(envp);
	wr_env_finish(&env);
}

/* torchrun's OpenMP default: ranks that share a host, unless set. */
static void
test_omp(void)
{
	struct wr_ident id = { .rank = 0, .size = 2, .local_size = 1, .jobid = "j",
			       .master_addr = "127.0.0.1" };
	struct wr_env env;
	char **envp;

	wr_env_init(&env, NULL);
	envp = wr_env_for_rank(&env, &id);
	ok(envp != NULL && value_of(envp, "OMP_NUM_THREADS") == NULL,
	   "env: a rank alone on its host gets no OMP_NUM_THREADS");
	free(envp);
	id.local_size = 2;
	wr_env_set(&env, "OMP_NUM_THREADS", "3");
	envp = wr_env_for_rank(&env, &id);
	ok(envp != NULL && count_name(envp, "OMP_NUM_THREADS") == 1 &&
		   strcmp(value_of(envp, "OMP_NUM_THREADS"), "3") == 0,
	   "env: the user's OMP_NUM_THREADS stands, once");
	free(envp);
	wr_env_finish(&env);
	ok(wr_env_is_contract("TORCHELASTIC_RUN_ID", 19) && wr_env_is_contract("ROLE_NAME", 9) &&
		   wr_env_is_contract("TORCHELASTIC_ERROR_FILE", 23),
	   "env: torchrun's names are worldrun's to set");
}

int
main(void)
{
	plan(104);
	test_init();
	test_apply_x();
	test_is_contract();
	test_for_rank();
	test_omp();
	return done_testing();
}
