/* SPDX-License-Identifier: MIT */
/*
 * provider: which libfabric provider the job's collectives use, decided
 * here because the launcher knows how many nodes the job has: shm on one
 * node, net across nodes; WORLD_FABRIC in worldrun's environment
 * overrides. It checks the name's form, not that this machine has the
 * provider: a rank that cannot open it says so at its first collective.
 */
#ifndef WR_PROVIDER_H
#define WR_PROVIDER_H

#include <stddef.h>

/*
 * The provider for a job of @nnodes nodes, from @envp's WORLD_FABRIC or
 * the default, in @out (@size bytes). 0, or -EINVAL with the reason in
 * @why (a static string) for a value that names no provider; @out then
 * holds the value given, cut to fit.
 */
int wr_provider_choose(char *const *envp, int nnodes, char *out, size_t size,
		     const char **why);

#endif
