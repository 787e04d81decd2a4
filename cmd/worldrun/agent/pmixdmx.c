/* SPDX-License-Identifier: MIT */
/*
 * pmixdmx: PMIx's direct modex across hosts. When a fence did not
 * collect the ranks' data (Open MPI with pmix_base_collect_data=0 or an
 * async modex), PMIx asks its host for a remote rank's data the first
 * time a local rank wants it. In a job of several hosts, each host puts
 * each of its ranks' data in the registry (pmix/JOBID/dmx/RANK) once the
 * rank has committed it (a spawn's ranks too, keyed by their index in
 * the job), and a host asked for a rank's data waits for that key. A job
 * of one host has no remote ranks and puts nothing; a rank's later
 * commits are not put again.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmireg.h"
#include "pmixint.h"
#include "regproto.h"
#include "world_errors.h"

static void
dmx_key(const struct wr_pmixsrv *s, int rank, char *key, size_t size)
{
	snprintf(key, size, "pmix/%s/dmx/%d", s->cfg.jobid, rank);
}

/* On PMIx's thread: @cbdata's rank has committed @data (PMIx's: copied).
 * A rank that committed nothing for other hosts is put as nothing, so
 * that a host asking for it hears so at once. */
static void
on_committed(pmix_status_t st, char *data, size_t sz, void *cbdata)
{
	struct ask *a = wr_pmixsrv_ask_new(ASK_DMX_PUT, NULL);

	if (a == NULL) {
		return;
	}
	a->rank = (int)(intptr_t)cbdata;
	if (st != PMIX_SUCCESS || data == NULL) {
		sz = 0;
	}
	a->data = malloc(sz > 0 ? sz : 1);
	if (a->data == NULL) {
		wr_pmixsrv_ask_free(a);
		return;
	}
	if (sz > 0) {
		memcpy(a->data, data, sz);
	}
	a->ndata = sz;
	wr_pmixsrv_hand_over(a);
}

void
wr_pmixdmx_watch(struct wr_pmixsrv *s, int rank)
{
	const struct ns *ns = wr_pmixsrv_ns_of(s, rank);
	pmix_proc_t proc;

	if (s->cfg.nnodes < 2 || ns == NULL) {
		return;
	}
	PMIX_LOAD_PROCID(&proc, ns->name, (pmix_rank_t)(rank - ns->base));
	/* Answered when the rank commits (PMIx waits for it), or never. */
	PMIx_server_dmodex_request(&proc, on_committed, (void *)(intptr_t)rank);
}

pmix_status_t
wr_pmixdmx_request(const pmix_proc_t *proc, const pmix_info_t info[], size_t ninfo,
		   pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
	struct wr_pmixsrv *s = wr_pmixsrv_current();
	int base, size, index = wr_pmixsrv_index(proc, &base, &size);
	struct ask *a;

	if (s == NULL || base < 0) {
		return PMIX_ERR_NOT_FOUND;
	}
	if (index < 0) {
		return PMIX_ERR_BAD_PARAM;
	}
	a = wr_pmixsrv_ask_new(ASK_DMX_GET, proc);
	if (a == NULL) {
		return PMIX_ERR_NOMEM;
	}
	a->timeout_ms = -1;
	for (size_t i = 0; i < ninfo; i++) {
		if (PMIX_CHECK_KEY(&info[i], PMIX_TIMEOUT) && info[i].value.type == PMIX_INT &&
		    info[i].value.data.integer > 0) {
			a->timeout_ms = (long long)info[i].value.data.integer * 1000;
		}
	}
	a->mdx_cb = cbfunc;
	a->cbdata = cbdata;
	return wr_pmixsrv_hand_over(a);
}

static void
release_data(void *cbdata)
{
	free(cbdata);
}

static void
on_put(void *arg, int rc, json_t *result, const void *blob, size_t len)
{
	wr_pmixsrv_ask_free(arg);
}

static void
on_got(void *arg, int rc, json_t *result, const void *blob, size_t len)
{
	struct ask *a = arg;
	char *copy = rc == 0 ? malloc(len > 0 ? len : 1) : NULL;
	pmix_status_t st = rc == -ETIMEDOUT ? PMIX_ERR_TIMEOUT
			   : rc < 0 ? PMIX_ERR_NOT_FOUND
			   : copy == NULL ? PMIX_ERR_NOMEM : PMIX_SUCCESS;

	if (st == PMIX_SUCCESS) {
		if (len > 0) {
			memcpy(copy, blob, len);
		}
		/* PMIx reads the data on its thread, then releases it. */
		a->mdx_cb(st, copy, len, a->cbdata, release_data, copy);
	} else {
		free(copy);
		a->mdx_cb(st, NULL, 0, a->cbdata, NULL, NULL);
	}
	wr_pmixsrv_ask_free(a);
}

void
wr_pmixdmx_start(struct wr_pmixsrv *s, struct ask *a)
{
	char key[128];
	int rc = wr_pmixsrv_registry(s);

	dmx_key(s, a->rank, key, sizeof(key));
	if (a->kind == ASK_DMX_PUT) {
		if (rc == 0) {
			rc = wr_pmireg_call(s->reg, wr_regproto_key(WR_OP_KV_SET, key), a->data,
					    a->ndata, on_put, a);
		}
		if (rc < 0) {
			wr_pmixsrv_ask_free(a);
		}
		return;
	}
	/* kv.mget waits for its keys (kv.get would not): one key, one value. */
	if (rc == 0) {
		rc = wr_pmireg_call(s->reg,
				    wr_regproto_timeout(wr_regproto_keys(WR_OP_KV_MGET,
									 json_pack("[s]", key)),
							a->timeout_ms),
				    NULL, 0, on_got, a);
	}
	if (rc < 0) {
		a->mdx_cb(rc == -ENOMEM ? PMIX_ERR_NOMEM : PMIX_ERR_UNREACH, NULL, 0, a->cbdata,
			  NULL, NULL);
		wr_pmixsrv_ask_free(a);
	}
}
