/* SPDX-License-Identifier: MIT */
/*
 * pmixfence: a PMIx fence of some ranks as an all-gather through the
 * job's registry: each host appends its ranks' data to the fence's key,
 * enters the fence's barrier for each of its ranks in it, then reads the
 * data of all. Fences of the same ranks are numbered in order on every
 * host, as PMIx calls them in order.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmireg.h"
#include "pmixint.h"
#include "regproto.h"
#include "world_errors.h"

/* A fence of some ranks under way here: its barrier and its data. */
struct fence {
	struct wr_pmixsrv *s;
	struct ask *a;
	char name[96];
	int due;                  /* registry answers still to come */
	int rc;
};

static int
by_value(const void *x, const void *y)
{
	int a = *(const int *)x, b = *(const int *)y;

	return (a > b) - (a < b);
}

/* Append @proc's ranks (the job's indices) to @a's members, or -1:
 * not of a namespace served here, or beyond its size. */
static int
add_members(struct ask *a, const pmix_proc_t *proc, size_t *room)
{
	int base, size, index = wr_pmixsrv_index(proc, &base, &size);
	int from = index, to = index + 1;

	if (base < 0 || (index < 0 && proc->rank != PMIX_RANK_WILDCARD)) {
		return -1;
	}
	if (index < 0) {
		from = base;
		to = base + size;
	}
	if (a->nmembers + (size_t)(to - from) > *room) {
		size_t more = (a->nmembers + (size_t)(to - from)) * 2;
		int *m = realloc(a->members, more * sizeof(*m));

		if (m == NULL) {
			return -ENOMEM;
		}
		a->members = m;
		*room = more;
	}
	for (int r = from; r < to; r++) {
		a->members[a->nmembers++] = r;
	}
	return 0;
}

/* A fence's ranks: all of the job's own (NULL), or some (the job's
 * indices: a spawn's namespace is a range of them), rising, each once. */
static pmix_status_t
fence_members(struct ask *a, const pmix_proc_t procs[], size_t nprocs)
{
	struct wr_pmixsrv *s = wr_pmixsrv_current();
	size_t n = 0, room = 0;

	if (nprocs == 1 && procs[0].rank == PMIX_RANK_WILDCARD &&
	    PMIX_CHECK_NSPACE(procs[0].nspace, s->nspace)) {
		return PMIX_SUCCESS;
	}
	for (size_t i = 0; i < nprocs; i++) {
		int rc = add_members(a, &procs[i], &room);

		if (rc < 0) {
			return rc == -ENOMEM ? PMIX_ERR_NOMEM
			       : wr_pmixsrv_ours(&procs[i]) ? PMIX_ERR_BAD_PARAM
							      : PMIX_ERR_NOT_SUPPORTED;
		}
	}
	if (a->nmembers == 0) {
		return PMIX_ERR_BAD_PARAM;
	}
	qsort(a->members, a->nmembers, sizeof(*a->members), by_value);
	for (size_t i = 0; i < a->nmembers; i++) {
		if (n == 0 || a->members[n - 1] != a->members[i]) {
			a->members[n++] = a->members[i];
		}
	}
	a->nmembers = n;
	return PMIX_SUCCESS;
}

/* A fence's or a connect's ranks and directives, into a new @*out. */
static pmix_status_t
collective_ask(enum ask_kind kind, const pmix_proc_t procs[], size_t nprocs,
	       const pmix_info_t info[], size_t ninfo, struct ask **out)
{
	struct ask *a = wr_pmixsrv_ask_new(kind, NULL);
	pmix_status_t st;

	*out = NULL;
	if (a == NULL || wr_pmixsrv_current() == NULL) {
		free(a);
		return PMIX_ERR_NOMEM;
	}
	st = fence_members(a, procs, nprocs);
	a->timeout_ms = -1;
	for (size_t i = 0; st == PMIX_SUCCESS && i < ninfo; i++) {
		if (PMIX_CHECK_KEY(&info[i], PMIX_COLLECT_DATA)) {
			a->collect = kind == ASK_FENCE && PMIX_INFO_TRUE(&info[i]);
		} else if (PMIX_CHECK_KEY(&info[i], PMIX_TIMEOUT) &&
			   info[i].value.type == PMIX_INT && info[i].value.data.integer > 0) {
			a->timeout_ms = (long long)info[i].value.data.integer * 1000;
		}
	}
	if (st != PMIX_SUCCESS) {
		wr_pmixsrv_ask_free(a);
		return st;
	}
	*out = a;
	return PMIX_SUCCESS;
}

/*
 * Connect and disconnect of ranks of this job (MPI_Comm_connect and
 * MPI_Comm_accept between them): a barrier of those ranks, through the
 * registry as a fence's, without data; ranks a spawn made (another
 * namespace) are the job's too.
 */
static pmix_status_t
connect_ask(enum ask_kind kind, const pmix_proc_t procs[], size_t nprocs,
	    const pmix_info_t info[], size_t ninfo, pmix_op_cbfunc_t cbfunc, void *cbdata)
{
	struct ask *a;
	pmix_status_t st = collective_ask(kind, procs, nprocs, info, ninfo, &a);

	if (st != PMIX_SUCCESS) {
		return st;
	}
	a->op_cb = cbfunc;
	a->cbdata = cbdata;
	return wr_pmixsrv_hand_over(a);
}

pmix_status_t
wr_pmixfence_connect(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t info[],
		     size_t ninfo, pmix_op_cbfunc_t cbfunc, void *cbdata)
{
	return connect_ask(ASK_CONNECT, procs, nprocs, info, ninfo, cbfunc, cbdata);
}

pmix_status_t
wr_pmixfence_disconnect(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t info[],
			size_t ninfo, pmix_op_cbfunc_t cbfunc, void *cbdata)
{
	return connect_ask(ASK_DISCONNECT, procs, nprocs, info, ninfo, cbfunc, cbdata);
}

pmix_status_t
wr_pmixfence_nb(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t info[],
		size_t ninfo, char *data, size_t ndata, pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
	struct ask *a;
	pmix_status_t st = collective_ask(ASK_FENCE, procs, nprocs, info, ninfo, &a);

	if (st != PMIX_SUCCESS) {
		return st;
	}
	if (a->collect && ndata > 0) {
		a->data = malloc(ndata);
		st = a->data == NULL ? PMIX_ERR_NOMEM : PMIX_SUCCESS;
		if (st == PMIX_SUCCESS) {
			memcpy(a->data, data, ndata);
			a->ndata = ndata;
		}
	}
	if (st != PMIX_SUCCESS) {
		wr_pmixsrv_ask_free(a);
		return st;
	}
	a->mdx_cb = cbfunc;
	a->cbdata = cbdata;
	return wr_pmixsrv_hand_over(a);
}

/* FNV-1a of a fence's ranks: fences of the same ranks share a count. */
static uint64_t
members_sig(const struct ask *a)
{
	uint64_t h = 14695981039346656037ULL;

	for (size_t i = 0; i < a->nmembers; i++) {
		uint32_t r = (uint32_t)a->members[i];

		for (int b = 0; b < 4; b++) {
			h = (h ^ ((r >> (8 * b)) & 255)) * 1099511628211ULL;
		}
	}
	return a->members == NULL ? 0 : h | 1;
}

static unsigned long
next_seq(struct wr_pmixsrv *s, uint64_t sig)
{
	struct fence_seq *f;

	for (f = s->seqs; f != NULL && f->sig != sig; f = f->next) {
	}
	if (f == NULL) {
		f = calloc(1, sizeof(*f));
		if (f == NULL) {
			return ULONG_MAX;
		}
		f->sig = sig;
		f->next = s->seqs;
		s->seqs = f;
	}
	return f->next_seq++;
}

static void
release_data(void *cbdata)
{
	free(cbdata);
}

static void
fence_done(struct fence *f, int rc, const void *blob, size_t len)
{
	struct ask *a = f->a;
	char *copy = len > 0 ? malloc(len) : NULL;
	pmix_status_t st = rc == 0 ? PMIX_SUCCESS
			   : rc == -ETIMEDOUT ? PMIX_ERR_TIMEOUT : PMIX_ERROR;

	if (len > 0 && copy == NULL && st == PMIX_SUCCESS) {
		st = PMIX_ERR_NOMEM;
	}
	if (copy != NULL) {
		memcpy(copy, blob, len);
	}
	if (a->mdx_cb != NULL) {
		a->mdx_cb(st, st == PMIX_SUCCESS ? copy : NULL, st == PMIX_SUCCESS ? len : 0,
			  a->cbdata, release_data, st == PMIX_SUCCESS ? copy : NULL);
	} else if (a->op_cb != NULL) {
		a->op_cb(st, a->cbdata);
	}
	if (st != PMIX_SUCCESS || a->mdx_cb == NULL) {
		free(copy);
	}
	wr_pmixsrv_ask_free(a);
	free(f);
}

static void
on_data(void *arg, int rc, json_t *result, const void *blob, size_t len)
{
	struct fence *f = arg;

	/* No host had data for it: the key was never made. */
	fence_done(f, rc == -ENOENT ? 0 : rc, rc == 0 ? blob : NULL, rc == 0 ? len : 0);
}

static void
on_fence_step(void *arg, int rc, json_t *result, const void *blob, size_t len)
{
	struct fence *f = arg;
	char key[128];

	if (rc < 0 && f->rc == 0) {
		f->rc = rc;
	}
	if (--f->due > 0) {
		return;
	}
	if (f->rc < 0 || !f->a->collect) {
		fence_done(f, f->rc, NULL, 0);
		return;
	}
	snprintf(key, sizeof(key), "%s/data", f->name);
	if (wr_pmireg_call(f->s->reg, wr_regproto_key(WR_OP_KV_GET, key), NULL, 0, on_data,
			   f) < 0) {
		fence_done(f, WORLD_EREGISTRY, NULL, 0);
	}
}

static json_t *
members_json(const struct ask *a)
{
	json_t *m;

	if (a->members == NULL) {
		return NULL;
	}
	m = json_array();
	for (size_t i = 0; m != NULL && i < a->nmembers; i++) {
		json_array_append_new(m, json_integer(a->members[i]));
	}
	return m;
}

/* Enter the fence's barrier for each of this host's ranks in it, so that
 * the hang report sees who waits and for whom. The fence counts itself as
 * one answer due until every barrier is asked, and then drops it. */
static void
fence_enter(struct fence *f)
{
	struct wr_pmixsrv *s = f->s;
	struct ask *a = f->a;
	int rc = 0;

	f->due = 1;
	for (int i = 0; rc == 0 && i < s->nclients; i++) {
		int r = s->clients[i].rank;
		json_t *req;

		if (a->members == NULL ? r >= s->cfg.size
				       : bsearch(&r, a->members, a->nmembers, sizeof(r),
						 by_value) == NULL) {
			continue;
		}
		req = wr_regproto_timeout(wr_regproto_barrier_as(f->name, members_json(a), r),
					  a->timeout_ms);
		rc = wr_pmireg_call(s->reg, req, NULL, 0, on_fence_step, f);
		f->due += rc == 0;
	}
	on_fence_step(f, rc, NULL, NULL, 0);
}

static void
on_appended(void *arg, int rc, json_t *result, const void *blob, size_t len)
{
	struct fence *f = arg;

	if (rc < 0) {
		fence_done(f, rc, NULL, 0);
	} else {
		fence_enter(f);
	}
}

/* A fence: this host's data added to the fence's, its barrier, then all
 * of the data. (PMIx asks none of ranks all of this host: it has all of
 * their data itself. A spawn's ranks are all on one host, so a fence
 * here is of them only with other ranks: a connect to their parents.) */
void
wr_pmixfence_start(struct wr_pmixsrv *s, struct ask *a)
{
	struct fence *f = calloc(1, sizeof(*f));
	uint64_t sig = members_sig(a) ^ (uint64_t)a->kind;
	unsigned long seq = next_seq(s, sig);
	char key[128];
	int rc = f == NULL || seq == ULONG_MAX ? -ENOMEM : wr_pmixsrv_registry(s);

	if (rc < 0) {
		free(f);
		if (a->mdx_cb != NULL) {
			a->mdx_cb(rc == -ENOMEM ? PMIX_ERR_NOMEM : PMIX_ERR_UNREACH, NULL, 0,
				  a->cbdata, NULL, NULL);
		} else if (a->op_cb != NULL) {
			a->op_cb(rc == -ENOMEM ? PMIX_ERR_NOMEM : PMIX_ERR_UNREACH, a->cbdata);
		}
		wr_pmixsrv_ask_free(a);
		return;
	}
	f->s = s;
	f->a = a;
	/* Each kind counts its own: the hang report tells them apart. */
	snprintf(f->name, sizeof(f->name), "pmix/%s/%s/%016llx/%lu", s->cfg.jobid,
		 a->kind == ASK_FENCE ? "fence" : a->kind == ASK_CONNECT ? "connect" : "disconnect",
		 (unsigned long long)sig, seq);
	if (a->ndata == 0) {
		fence_enter(f);
		return;
	}
	snprintf(key, sizeof(key), "%s/data", f->name);
	rc = wr_pmireg_call(s->reg, wr_regproto_key(WR_OP_KV_APPEND, key), a->data, a->ndata,
			    on_appended, f);
	if (rc < 0) {
		fence_done(f, rc, NULL, 0);
	}
}

