/* SPDX-License-Identifier: MIT */
/*
 * world: this process as a rank: its identity from the environment, its
 * registry connection (through the progress thread), barriers, stop. It
 * never prints and never exits the process.
 */
#include "worldint.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How much longer than the registry's own wait we wait for its answer. */
#define ANSWER_GRACE_MS 10000
#define CONNECT_TIMEOUT_MS 10000

static int
env_int(const char *name, long lo, long hi, int *out)
{
	const char *v = getenv(name);
	char *end = NULL;
	long n;

	if (v == NULL || v[0] == '\0') {
		return -EINVAL;
	}
	errno = 0;
	n = strtol(v, &end, 10);
	if (errno != 0 || *end != '\0' || n < lo || n > hi) {
		return -EINVAL;
	}
	*out = (int)n;
	return 0;
}

/* Seconds from the environment as milliseconds, or @dflt. */
static double
env_seconds(const char *name, double dflt)
{
	const char *v = getenv(name);
	char *end = NULL;
	double s;

	if (v == NULL) {
		return dflt;
	}
	s = strtod(v, &end);
	return end != v && *end == '\0' && s > 0 && s < 1e7 ? s : dflt;
}

static int
connect_job(struct world *w)
{
	struct wr_prog_cfg cfg = {
		.endpoints = getenv("WORLD_REGISTRY"),
		.secret = getenv("WORLD_SECRET"),
		.rank = w->rank,
		.lease_interval = env_seconds("WORLD_LEASE_INTERVAL", 5),
		.connect_timeout_ms = CONNECT_TIMEOUT_MS,
	};

	if (cfg.secret == NULL) {
		return -EINVAL;
	}
	return wr_prog_open(&cfg, &w->prog);
}

int
world_open(struct world **out)
{
	struct world *w = calloc(1, sizeof(*w));
	const char *jobid = getenv("WORLD_JOBID");
	int rc = 0;

	*out = NULL;
	if (w == NULL) {
		return -ENOMEM;
	}
	w->size = 1;
	w->wait_ms = (int)(env_seconds("WORLD_WAIT_TIMEOUT", 300) * 1000);
	if (getenv("WORLD_REGISTRY") != NULL) {
		rc = env_int("WORLD_SIZE", 1, INT_MAX, &w->size);
		if (rc == 0) {
			rc = env_int("WORLD_RANK", 0, w->size - 1, &w->rank);
		}
		if (rc == 0) {
			rc = connect_job(w);
		}
	}
	if (rc < 0) {
		free(w);
		return rc;
	}
	snprintf(w->name, sizeof(w->name), "%d", w->rank);
	snprintf(w->jobid, sizeof(w->jobid), "%s", jobid != NULL ? jobid : "");
	*out = w;
	return 0;
}

int
wr_world_call(struct world *w, json_t *req_new, const void *blob, size_t len,
	      int timeout_ms, json_t **result, void **rblob, size_t *rlen)
{
	int wait_ms;

	if (w->prog == NULL || timeout_ms < WORLD_TIMEOUT_FOREVER) {
		json_decref(req_new);
		return w->prog == NULL ? -ENOTSUP : -EINVAL;
	}
	if (timeout_ms == WORLD_TIMEOUT_FOREVER) {
		wait_ms = -1;
	} else {
		wait_ms = (timeout_ms == WORLD_TIMEOUT_DEFAULT ? w->wait_ms : timeout_ms);
		wait_ms = wait_ms > INT_MAX - ANSWER_GRACE_MS ? INT_MAX
							      : wait_ms + ANSWER_GRACE_MS;
	}
	if (req_new != NULL) {
		json_object_set_new(req_new, "timeout_ms", json_integer(timeout_ms));
	}
	return wr_prog_call(w->prog, req_new, blob, len, wait_ms, result, rblob,
			    rlen, NULL);
}

int
world_barrier(struct world *w, const char *name, int timeout_ms)
{
	if (w->prog == NULL) {
		return timeout_ms < WORLD_TIMEOUT_FOREVER ? -EINVAL : 0;
	}
	return wr_world_call(w, json_pack("{s:s, s:s}", "op", "barrier", "name",
					  name), NULL, 0, timeout_ms, NULL, NULL,
			     NULL);
}

int
world_stop(struct world *w, int timeout_ms)
{
	int rc = 0;

	if (w == NULL) {
		return 0;
	}
	if (w->prog != NULL) {
		/* Everyone keeps answering peers until the last rank is here. */
		rc = world_barrier(w, "world.stop", timeout_ms);
	}
	wr_prog_close(w->prog, 1);
	free(w);
	return rc;
}

void
world_abort(struct world *w)
{
	if (w == NULL) {
		return;
	}
	wr_prog_close(w->prog, 1);
	free(w);
}

int
world_rank(const struct world *w)
{
	return w->rank;
}

int
world_size(const struct world *w)
{
	return w->size;
}

const char *
world_name(const struct world *w)
{
	return w->name;
}

const char *
world_jobid(const struct world *w)
{
	return w->jobid;
}
