/* SPDX-License-Identifier: MIT */
/*
 * endpoint: the world's one fabric endpoint, opened on the provider
 * worldrun chose (WORLD_FABRIC) at the first group that needs it, and its
 * address published for the other members. A failure to open it is kept,
 * not retried.
 */
#include "endpoint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"

static int
env_int(const char *name, int dflt)
{
	const char *v = getenv(name);
	char *end = NULL;
	long n = v != NULL ? strtol(v, &end, 10) : 0;

	return v != NULL && end != v && *end == '\0' && n > 0 && n < (1 << 20) ? (int)n
		: dflt;
}

bool
wr_endpoint_oversubscribed(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	return cpus > 0 && env_int("WORLD_LOCAL_SIZE", 1) > cpus;
}

static int
open_fab(struct world *w, struct wr_fab **out)
{
	const char *provider = getenv("WORLD_FABRIC");
	/* A world without worldrun spans hosts when rank 0 is not on
	 * loopback: then over the network, as worldrun's worlds of nodes. */
	bool far = w->alone ? w->advertise[0] != '\0' : env_int("WORLD_NNODES", 1) > 1;
	char key[32];
	struct wr_fab_cfg cfg = {
		.provider = provider != NULL && provider[0] != '\0' ? provider
			    : far ? "net" : "shm",
		.prefix = w->shm_prefix, .rank = w->rank, .size = w->size,
		.loopback = !far,
		.bind_addr = w->alone ? (far ? w->advertise : NULL) : getenv("WORLD_ADVERTISE"),
		.oversubscribed = wr_endpoint_oversubscribed(), .spin_us = 20,
	};
	const char *addr;
	int rc;

	/* The regions and doorbells of the shm provider: names that no other
	 * user can take first. */
	rc = wr_auth_shm_prefix(w->secret, w->jobid, w->shm_prefix);
	if (rc < 0) {
		return rc;
	}
	rc = wr_fab_open(&cfg, out);
	if (rc == -ENOENT) {
		return WORLD_EFABRIC;
	}
	if (rc < 0) {
		return rc;
	}
	addr = wr_fab_addr(*out);
	snprintf(key, sizeof(key), WR_ENDPOINT_ADDR_KEY, w->rank);
	rc = world_kv_set(w, key, addr, strlen(addr));
	if (rc < 0) {
		wr_fab_close(*out);
		*out = NULL;
	}
	return rc;
}

int
wr_endpoint_get(struct world *w, struct wr_fab **out)
{
	int rc;

	pthread_mutex_lock(&w->fab_mu);
	if (w->fab == NULL && w->fab_rc == 0) {
		w->fab_rc = open_fab(w, &w->fab);
	}
	*out = w->fab;
	rc = w->fab_rc;
	pthread_mutex_unlock(&w->fab_mu);
	return rc;
}

void
wr_endpoint_close(struct world *w)
{
	wr_fab_close(w->fab);
	w->fab = NULL;
}
