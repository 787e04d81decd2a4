/* SPDX-License-Identifier: MIT */
#include "regcall.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "failure.h"

/* How much longer than the registry's own wait we wait for its answer. */
#define ANSWER_GRACE_MS 10000

/* The registry ends its own waits: give its verdict time to arrive. */
static int
registry_wait_ms(const struct world *w, int timeout_ms)
{
	int ms = wr_world_timeout(w, timeout_ms);

	if (ms < 0) {
		return ms;
	}
	return ms > INT_MAX - ANSWER_GRACE_MS ? INT_MAX : ms + ANSWER_GRACE_MS;
}

int
wr_regcall_ask(struct world *w, json_t *req_new, const void *blob, size_t len,
	       int timeout_ms, struct wr_result *out)
{
	int wait_ms = registry_wait_ms(w, timeout_ms);

	*out = (struct wr_result){ .dead_rank = -1 };
	if (w->prog == NULL || timeout_ms < WORLD_TIMEOUT_FOREVER || req_new == NULL) {
		json_decref(req_new);
		/* A request jansson could not build: a name that is not UTF-8. */
		out->rc = w->prog == NULL ? -ENOTSUP : -EINVAL;
		wr_failure_note(out);
		return out->rc;
	}
	json_object_set_new(req_new, "timeout_ms", json_integer(timeout_ms));
	wr_prog_call(w->prog, -1, NULL, req_new, blob, len, wait_ms, out);
	wr_failure_note(out);
	return out->rc;
}

int
wr_regcall_run(struct world *w, json_t *req_new, const void *blob, size_t len,
	       int timeout_ms, json_t **result, void **rblob, size_t *rlen)
{
	struct wr_result res;
	int rc = wr_regcall_ask(w, req_new, blob, len, timeout_ms, &res);

	if (rc == 0 && result != NULL) {
		*result = res.result;
		res.result = NULL;
	}
	if (rc == 0 && rblob != NULL) {
		*rblob = res.blob;
		*rlen = res.len;
		res.blob = NULL;
	}
	wr_result_finish(&res);
	return rc;
}

const char *
wr_regcall_peer(struct world *w, int rank)
{
	char key[32];
	void *ep = NULL;
	size_t len = 0;
	const char *known;

	pthread_mutex_lock(&w->mu);
	known = w->peer_ep[rank];
	pthread_mutex_unlock(&w->mu);
	if (known != NULL) {
		return known;
	}
	/* A rank publishes this in world_open(): wait for a late starter. */
	snprintf(key, sizeof(key), "world.peer.%d", rank);
	if (world_kv_get(w, key, &ep, &len, WORLD_TIMEOUT_DEFAULT) < 0) {
		return NULL;
	}
	pthread_mutex_lock(&w->mu);
	if (w->peer_ep[rank] == NULL) {
		w->peer_ep[rank] = ep;
		ep = NULL;
	}
	known = w->peer_ep[rank];
	pthread_mutex_unlock(&w->mu);
	free(ep);
	return known;
}

int
wr_regcall_run_as(struct world *w, struct wr_wait *rec, json_t *req_new,
		  int timeout_ms, json_t **result, void **rblob, size_t *rlen)
{
	int rc;

	if (rec == NULL || timeout_ms == 0 || w->prog == NULL) {
		return wr_regcall_run(w, req_new, NULL, 0, timeout_ms, result, rblob,
				      rlen);
	}
	wr_waits_enter(&w->waits, rec);
	rc = wr_regcall_run(w, req_new, NULL, 0, timeout_ms, result, rblob, rlen);
	wr_waits_leave(&w->waits, rec);
	return rc;
}
