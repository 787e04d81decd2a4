/* SPDX-License-Identifier: MIT */
/*
 * env: the environment every rank starts with. The base is worldrun's own
 * environment without inherited WORLD_* variables and without the names
 * worldrun sets itself, plus -x; each rank then gets its identity (the
 * contract variables of worldrun(1)) on top. It does not read files.
 */
#ifndef WR_ENV_H
#define WR_ENV_H

#include <stdbool.h>
#include <stddef.h>

struct wr_env {
	char **vars; /* "NAME=VALUE", each owned */
	size_t n;
	size_t cap;
};

/* What a rank learns about itself and its job. */
struct wr_ident {
	int rank;
	int size;
	int local_rank;
	int local_size;
	int node_rank;
	int nnodes;
	const char *jobid;
	const char *master_addr;
	int master_port;
	bool pmi;         /* PMI-1 is served: PMI_FD, PMI_RANK, PMI_SIZE */
	int pmi_fd;       /* the rank's end of its PMI connection */
	int pmi_port;     /* > 0: served on 127.0.0.1's port instead:
			   * PMI_PORT, PMI_ID, PMI_SIZE */
	char *const *extra; /* more "NAME=VALUE" (PMIx's), NULL-terminated,
			     * borrowed; NULL: none */
};

/* Copy @inherited into @env, leaving out what wr_env_is_ours() names. */
int wr_env_init(struct wr_env *env, char *const *inherited);

void wr_env_finish(struct wr_env *env);

/*
 * Apply one -x argument: NAME=VALUE sets, NAME forwards the value from
 * @inherited. Returns 0, -ENOENT (NAME is not set), -EPERM (NAME is a
 * variable worldrun sets for every rank) or -ENOMEM.
 */
int wr_env_apply_x(struct wr_env *env, const char *arg, char *const *inherited);

/*
 * Set @name to @value for every rank, whatever was there: for the
 * variables worldrun sets for the whole job. Returns 0 or -ENOMEM.
 */
int wr_env_set(struct wr_env *env, const char *name, const char *value);

/* The value of @name in the NULL-terminated "NAME=VALUE" list @vars (an
 * environ), or NULL; the first where it is there twice, as getenv()
 * reads it. Borrowed from @vars. */
const char *wr_env_value(char *const *vars, const char *name);

/* The value of @name in @env, or NULL. Borrowed from @env. */
const char *wr_env_get(const struct wr_env *env, const char *name);

/*
 * True for the names worldrun sets in every rank: the contract, and the
 * registry's (WORLD_REGISTRY, WORLD_SECRET, WORLD_LEASE_INTERVAL,
 * WORLD_WAIT_TIMEOUT).
 */
bool wr_env_is_contract(const char *name, size_t len);

/*
 * True for the names that belong to the host a process runs on, which a
 * remote host's ranks get from that host, not from worldrun's (as Hydra
 * does): SSH_*, DISPLAY, XAUTHORITY, HOSTNAME, PWD, OLDPWD, SHLVL.
 */
bool wr_env_is_hosts_own(const char *name, size_t len);

/*
 * A NULL-terminated environment for one rank: @base plus @id. One
 * allocation that also holds the new strings: release it with free().
 * Returns NULL on ENOMEM.
 */
char **wr_env_for_rank(const struct wr_env *base, const struct wr_ident *id);

#endif
