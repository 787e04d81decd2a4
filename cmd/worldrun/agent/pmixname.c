/* SPDX-License-Identifier: MIT */
/*
 * pmixname: PMIx's publish, lookup and unpublish on the job's registry
 * (pmix/JOBID/name/NAME): MPI_Publish_name and MPI_Lookup_name, and what
 * Open MPI exchanges through them when it connects ranks (strings and
 * byte objects). A name is published once until it is unpublished; a
 * lookup waits only when asked to (PMIX_WAIT), as long as PMIX_TIMEOUT
 * or the job's wait. A value is kept as one type byte ('s' or 'b') and
 * its bytes. PMIx's own directives ("pmix." keys) are not names.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmireg.h"
#include "pmixint.h"
#include "regproto.h"
#include "world_errors.h"

/* The longest name and value taken (PMI-1's are 1024 bytes). */
#define NAME_MAX_LEN 1024
#define VALUE_MAX_LEN (64 * 1024)
#define TAG_STRING 's'
#define TAG_BYTES 'b'

/* One call under way: its answers from the registry, one per name. */
struct names {
	struct wr_pmixsrv *s;
	struct ask *a;
	int due;          /* answers still to come, and the call's own */
	pmix_status_t st; /* the first refusal */
	char **found;     /* lookup's values as kept, [nkeys]; NULL: not there */
	size_t *flens;
};

/* One value to publish, kept as a type byte and its bytes. */
static pmix_status_t
take_value(struct ask *a, const pmix_info_t *in)
{
	const void *v = in->value.type == PMIX_STRING ? in->value.data.string
			: in->value.data.bo.bytes;
	size_t len = in->value.type == PMIX_STRING
		     ? (v != NULL ? strlen(v) : 0) : in->value.data.bo.size;
	size_t k = a->nkeys;

	if ((in->value.type != PMIX_STRING && in->value.type != PMIX_BYTE_OBJECT) ||
	    (v == NULL && len > 0)) {
		return PMIX_ERR_NOT_SUPPORTED;
	}
	if (strlen(in->key) > NAME_MAX_LEN || len > VALUE_MAX_LEN) {
		return PMIX_ERR_BAD_PARAM;
	}
	a->keys[k] = strdup(in->key);
	a->values[k] = malloc(len + 1);
	a->nkeys++;
	if (a->keys[k] == NULL || a->values[k] == NULL) {
		return PMIX_ERR_NOMEM;
	}
	a->values[k][0] = in->value.type == PMIX_STRING ? TAG_STRING : TAG_BYTES;
	memcpy(a->values[k] + 1, v, len);
	a->lens[k] = len + 1;
	return PMIX_SUCCESS;
}

/* What a call with @ninfo @info publishes: copied into @a. */
static pmix_status_t
take_values(struct ask *a, const pmix_info_t info[], size_t ninfo)
{
	pmix_status_t st = PMIX_SUCCESS;

	a->keys = calloc(ninfo + 1, sizeof(*a->keys));
	a->values = calloc(ninfo + 1, sizeof(*a->values));
	a->lens = calloc(ninfo + 1, sizeof(*a->lens));
	if (a->keys == NULL || a->values == NULL || a->lens == NULL) {
		return PMIX_ERR_NOMEM;
	}
	for (size_t i = 0; st == PMIX_SUCCESS && i < ninfo; i++) {
		if (strncmp(info[i].key, "pmix.", 5) != 0) {
			st = take_value(a, &info[i]);
		}
	}
	return st != PMIX_SUCCESS ? st : a->nkeys > 0 ? PMIX_SUCCESS : PMIX_ERR_BAD_PARAM;
}

/* The names of a lookup or an unpublish: copied into @a. */
static pmix_status_t
take_keys(struct ask *a, char **keys)
{
	size_t n = 0;

	while (keys != NULL && keys[n] != NULL) {
		n++;
	}
	/* Unpublish of "all this rank published": the registry does not say
	 * who published what. */
	if (n == 0) {
		return PMIX_ERR_NOT_SUPPORTED;
	}
	a->keys = calloc(n, sizeof(*a->keys));
	if (a->keys == NULL) {
		return PMIX_ERR_NOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		if (strlen(keys[i]) > NAME_MAX_LEN) {
			return PMIX_ERR_BAD_PARAM;
		}
		a->keys[a->nkeys] = strdup(keys[i]);
		if (a->keys[a->nkeys++] == NULL) {
			return PMIX_ERR_NOMEM;
		}
	}
	return PMIX_SUCCESS;
}

static pmix_status_t
handed(struct ask *a, pmix_status_t st)
{
	if (st != PMIX_SUCCESS) {
		wr_pmixsrv_ask_free(a);
		return st;
	}
	return wr_pmixsrv_hand_over(a);
}

pmix_status_t
wr_pmixname_publish(const pmix_proc_t *proc, const pmix_info_t info[], size_t ninfo,
		    pmix_op_cbfunc_t cbfunc, void *cbdata)
{
	struct ask *a;

	if (!wr_pmixsrv_ours(proc)) {
		return PMIX_ERR_NOT_FOUND;
	}
	a = wr_pmixsrv_ask_new(ASK_PUBLISH, proc);
	if (a == NULL) {
		return PMIX_ERR_NOMEM;
	}
	a->op_cb = cbfunc;
	a->cbdata = cbdata;
	return handed(a, take_values(a, info, ninfo));
}

pmix_status_t
wr_pmixname_lookup(const pmix_proc_t *proc, char **keys, const pmix_info_t info[],
		   size_t ninfo, pmix_lookup_cbfunc_t cbfunc, void *cbdata)
{
	struct ask *a;

	if (!wr_pmixsrv_ours(proc)) {
		return PMIX_ERR_NOT_FOUND;
	}
	a = wr_pmixsrv_ask_new(ASK_LOOKUP, proc);
	if (a == NULL) {
		return PMIX_ERR_NOMEM;
	}
	a->lookup_cb = cbfunc;
	a->cbdata = cbdata;
	a->timeout_ms = -1;
	for (size_t i = 0; i < ninfo; i++) {
		if (PMIX_CHECK_KEY(&info[i], PMIX_WAIT)) {
			a->wait = 1;
		} else if (PMIX_CHECK_KEY(&info[i], PMIX_TIMEOUT) &&
			   info[i].value.type == PMIX_INT && info[i].value.data.integer > 0) {
			a->timeout_ms = (long long)info[i].value.data.integer * 1000;
		}
	}
	return handed(a, take_keys(a, keys));
}

pmix_status_t
wr_pmixname_unpublish(const pmix_proc_t *proc, char **keys, const pmix_info_t info[],
		      size_t ninfo, pmix_op_cbfunc_t cbfunc, void *cbdata)
{
	struct ask *a;

	if (!wr_pmixsrv_ours(proc)) {
		return PMIX_ERR_NOT_FOUND;
	}
	a = wr_pmixsrv_ask_new(ASK_UNPUBLISH, proc);
	if (a == NULL) {
		return PMIX_ERR_NOMEM;
	}
	a->op_cb = cbfunc;
	a->cbdata = cbdata;
	return handed(a, take_keys(a, keys));
}

/* A lookup's answer: the names found, with their values. */
static void
answer_lookup(struct names *w)
{
	struct ask *a = w->a;
	pmix_pdata_t *pd = NULL;
	pmix_proc_t who;
	size_t n = 0;

	for (size_t i = 0; w->found != NULL && i < a->nkeys; i++) {
		n += w->found[i] != NULL;
	}
	if (w->st != PMIX_SUCCESS || n == 0) {
		a->lookup_cb(w->st != PMIX_SUCCESS ? w->st : PMIX_ERR_NOT_FOUND, NULL, 0, a->cbdata);
		return;
	}
	PMIX_PDATA_CREATE(pd, n);
	if (pd == NULL) {
		a->lookup_cb(PMIX_ERR_NOMEM, NULL, 0, a->cbdata);
		return;
	}
	/* The registry keeps the value only, not who published it. */
	PMIX_LOAD_PROCID(&who, w->s->nspace, PMIX_RANK_UNDEF);
	n = 0;
	for (size_t i = 0; i < a->nkeys; i++) {
		pmix_byte_object_t bo = { .bytes = w->found[i] + 1, .size = w->flens[i] - 1 };

		if (w->found[i] == NULL) {
			continue;
		}
		if (w->found[i][0] == TAG_STRING) {
			w->found[i][w->flens[i]] = '\0';
			PMIX_PDATA_LOAD(&pd[n], &who, a->keys[i], w->found[i] + 1, PMIX_STRING);
		} else {
			PMIX_PDATA_LOAD(&pd[n], &who, a->keys[i], &bo, PMIX_BYTE_OBJECT);
		}
		n++;
	}
	a->lookup_cb(PMIX_SUCCESS, pd, n, a->cbdata);
	PMIX_PDATA_FREE(pd, n);
}

/* One answer in: when the last is, answer PMIx and free the call. */
static void
name_done(struct names *w)
{
	if (--w->due > 0) {
		return;
	}
	if (w->a->kind == ASK_LOOKUP) {
		answer_lookup(w);
	} else if (w->a->op_cb != NULL) {
		w->a->op_cb(w->st, w->a->cbdata);
	}
	for (size_t i = 0; w->found != NULL && i < w->a->nkeys; i++) {
		free(w->found[i]);
	}
	free(w->found);
	free(w->flens);
	wr_pmixsrv_ask_free(w->a);
	free(w);
}

/* Which name of the call an answer is for: its index rides in the
 * pointer the registry hands back, beside the call. */
struct part {
	struct names *w;
	size_t i;
};

static void
on_answer(void *arg, int rc, json_t *result, const void *blob, size_t len)
{
	struct part *p = arg;
	struct names *w = p->w;
	struct ask *a = w->a;
	pmix_status_t st = PMIX_SUCCESS;

	if (a->kind == ASK_PUBLISH) {
		/* The registry kept ours unless the name had a value already. */
		st = rc < 0 ? PMIX_ERROR
		     : len == a->lens[p->i] && memcmp(blob, a->values[p->i], len) == 0
			? PMIX_SUCCESS : PMIX_ERR_DUPLICATE_KEY;
	} else if (a->kind == ASK_UNPUBLISH) {
		st = rc < 0 ? PMIX_ERROR
		     : json_is_true(json_object_get(result, "deleted")) ? PMIX_SUCCESS
		     : PMIX_ERR_NOT_FOUND;
	} else if (rc == 0 && len > 0 && (((const char *)blob)[0] == TAG_BYTES ||
					   (((const char *)blob)[0] == TAG_STRING &&
					    memchr(blob, '\0', len) == NULL))) {
		/* Room for a string's end. */
		w->found[p->i] = malloc(len + 1);
		if (w->found[p->i] != NULL) {
			memcpy(w->found[p->i], blob, len);
			w->flens[p->i] = len;
		}
	} else if (rc < 0 && rc != -ENOENT && w->st == PMIX_SUCCESS) {
		st = rc == -ETIMEDOUT ? PMIX_ERR_TIMEOUT : PMIX_ERROR;
	}
	if (st != PMIX_SUCCESS && w->st == PMIX_SUCCESS) {
		w->st = st;
	}
	free(p);
	name_done(w);
}

static int
ask_name(struct names *w, size_t i)
{
	struct ask *a = w->a;
	struct part *p = malloc(sizeof(*p));
	char key[NAME_MAX_LEN + 64];
	json_t *req;
	int rc;

	if (p == NULL) {
		return -ENOMEM;
	}
	p->w = w;
	p->i = i;
	snprintf(key, sizeof(key), "pmix/%s/name/%s", w->s->cfg.jobid, a->keys[i]);
	if (a->kind == ASK_PUBLISH) {
		req = wr_regproto_kv_cas(key, 0);
	} else if (a->kind == ASK_LOOKUP && a->wait) {
		/* kv.mget waits for its keys; one key, one value. */
		req = wr_regproto_timeout(wr_regproto_keys(WR_OP_KV_MGET, json_pack("[s]", key)),
					  a->timeout_ms);
	} else {
		req = wr_regproto_key(a->kind == ASK_LOOKUP ? WR_OP_KV_GET : WR_OP_KV_DEL, key);
	}
	rc = wr_pmireg_call(w->s->reg, req, a->kind == ASK_PUBLISH ? a->values[i] : NULL,
			    a->kind == ASK_PUBLISH ? a->lens[i] : 0, on_answer, p);
	if (rc < 0) {
		free(p);
	}
	return rc;
}

void
wr_pmixname_start(struct wr_pmixsrv *s, struct ask *a)
{
	struct names *w = calloc(1, sizeof(*w));
	int rc = w == NULL ? -ENOMEM : wr_pmixsrv_registry(s);

	if (rc == 0 && a->kind == ASK_LOOKUP) {
		w->found = calloc(a->nkeys, sizeof(*w->found));
		w->flens = calloc(a->nkeys, sizeof(*w->flens));
		rc = w->found == NULL || w->flens == NULL ? -ENOMEM : 0;
	}
	if (w == NULL) {
		if (a->kind == ASK_LOOKUP) {
			a->lookup_cb(PMIX_ERR_NOMEM, NULL, 0, a->cbdata);
		} else if (a->op_cb != NULL) {
			a->op_cb(PMIX_ERR_NOMEM, a->cbdata);
		}
		wr_pmixsrv_ask_free(a);
		return;
	}
	w->s = s;
	w->a = a;
	w->due = 1;
	for (size_t i = 0; rc == 0 && i < a->nkeys; i++) {
		rc = ask_name(w, i);
		w->due += rc == 0;
	}
	if (rc < 0) {
		w->st = rc == -ENOMEM ? PMIX_ERR_NOMEM : PMIX_ERR_UNREACH;
	}
	name_done(w);
}
