/* SPDX-License-Identifier: MIT */
/*
 * call: calls to the owners and members of RPC groups (Machin's
 * rpc_sync, rpc_async, remote and their registered_ forms, and the fetch
 * of a paired value), over peer connections, or in the calling thread
 * when the owner is this process; and the results kept on a callee
 * (RRefs). group.c finds the owners.
 */
#include "worldint.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "failure.h"
#include "peerproto.h"
#include "regcall.h"

struct world_rref {
	struct world *w;
	int owner;
	int64_t id;
};

/* ---- calls to owners ---- */

/* The request a peer's serve.c answers. */
static json_t *
call_new(const char *group, const char *kind, const char *key,
	 const json_t *args, int64_t rref)
{
	json_t *req = json_pack("{s:s, s:s, s:s, s:s}", "op", WR_PEER_OP_CALL, "kind", kind,
				"group", group, "key", key);

	/* A copy: the caller may change @args while the loop still sends it. */
	if (req != NULL && args != NULL) {
		json_object_set_new(req, "args", json_deep_copy(args));
	}
	if (req != NULL && rref > 0) {
		json_object_set_new(req, "rref", json_integer(rref));
	}
	return req;
}

/* An answer's {"value": X} becomes X. */
void
wr_result_unwrap(struct wr_result *r)
{
	json_t *v;

	if (r->rc == 0 && r->result != NULL) {
		v = json_incref(json_object_get(r->result, "value"));
		json_decref(r->result);
		r->result = v;
	}
}

/* @a's blob as pieces: its own, or its blob and length as one (in @one
 * and @own, which nobody releases). */
static struct wr_payload *
payload_of(const struct wr_ask *a, struct iovec *one, struct wr_payload *own)
{
	if (a->pl != NULL) {
		return a->pl;
	}
	*one = (struct iovec){ (void *)a->blob, a->len };
	*own = (struct wr_payload){ one, 1, NULL, NULL };
	return own;
}

/* Send @a without waiting for it. */
static int
submit(struct world *w, const struct wr_ask *a, struct wr_call **out)
{
	struct iovec one;
	struct wr_payload own;
	const char *ep;

	*out = NULL;
	if (w->prog == NULL) {
		return -ENOTSUP;
	}
	ep = wr_regcall_peer(w, a->rank);
	if (ep == NULL) {
		return WORLD_EPEERDEAD;
	}
	*out = wr_prog_submit(w->prog, a->rank, ep,
			      call_new(a->group, a->kind, a->key, a->args, a->rref),
			      payload_of(a, &one, &own));
	return *out == NULL ? -ENOMEM : 0;
}

int
wr_group_submit(struct world_group *g, const struct wr_ask *a,
		struct wr_call **out)
{
	struct wr_ask in_group = *a;

	in_group.group = wr_group_name(g);
	return submit(wr_group_world(g), &in_group, out);
}

/* Ask @a->rank, and wait: the answer in @out, its value unwrapped. */
static int
ask(struct world *w, const struct wr_ask *a, struct wr_result *out)
{
	int wait_ms = wr_world_timeout(w, a->timeout_ms);
	struct wr_wait rec = { .kind = WR_WAIT_CALL, .group = a->group, .name = a->key,
			       .detail = a->kind, .peer = a->rank };
	struct wr_call *c = NULL;
	int rc;

	*out = (struct wr_result){ .dead_rank = -1 };
	rc = wait_ms == -EINVAL ? -EINVAL : submit(w, a, &c);
	if (rc == 0) {
		wr_waits_enter(&w->waits, &rec);
		rc = wr_prog_wait(w->prog, c, wait_ms);
		wr_waits_leave(&w->waits, &rec);
	}
	if (rc < 0 && c != NULL) {
		/* Timed out, or interrupted (world_set_interrupt). */
		wr_prog_drop(w->prog, c);
	} else if (rc == 0) {
		rc = wr_prog_take(w->prog, c, out);
	}
	out->rc = rc;
	if (rc == WORLD_EPEERDEAD && out->dead_rank < 0) {
		out->dead_rank = a->rank;
	}
	wr_result_unwrap(out);
	return rc;
}

/* A call to this very process: the handler runs in the calling thread. */
int
wr_group_run_here(struct world *w, enum wr_hkind kind, const char *group,
		  const char *key, const json_t *args, const void *blob,
		  size_t len, struct wr_result *out)
{
	struct wr_handler *x = wr_handlers_get(w->handlers, kind, group, key);
	struct wr_answer a;

	*out = (struct wr_result){ .dead_rank = -1 };
	if (x == NULL) {
		out->rc = -ENOENT;
		return -ENOENT;
	}
	wr_handlers_run(x, args, blob, len, NULL, &a);
	wr_handlers_put(w->handlers, x);
	if (a.rc < 0) {
		out->rc = WORLD_EREMOTE;
		out->remote_code = a.rc;
		snprintf(out->message, sizeof(out->message), "%s", a.message);
		wr_answer_finish(&a);
		return out->rc;
	}
	out->result = a.result != NULL ? a.result : json_null();
	out->blob = a.blob;
	out->len = a.len;
	return 0;
}

int
wr_group_run_ask(struct world *w, enum wr_hkind kind, const char *group,
		 const struct wr_ask *a, struct wr_result *out)
{
	struct iovec one;
	struct wr_payload own, *pl = payload_of(a, &one, &own);
	const void *blob = pl->n == 1 ? pl->iov[0].iov_base : NULL;
	size_t len = pl->n == 1 ? pl->iov[0].iov_len : 0;
	void *flat = NULL;
	int rc = pl->n == 1 ? 0 : wr_payload_gather(pl, &flat, &len);

	if (rc < 0) {
		*out = (struct wr_result){ .rc = rc, .dead_rank = -1 };
	} else {
		rc = wr_group_run_here(w, kind, group, a->key, a->args,
				       flat != NULL ? flat : blob, len, out);
	}
	free(flat);
	wr_payload_release(pl);
	return rc;
}

/* Hand a result to the caller's pointers (any may be NULL) and record a
 * failure for world_last_failure(). */
static int
hand_over(struct wr_result *r, json_t **result, void **blob, size_t *len)
{
	int rc = r->rc;

	wr_failure_note(r);
	if (rc == 0 && result != NULL) {
		*result = r->result;
		r->result = NULL;
	}
	if (rc == 0 && blob != NULL) {
		*blob = r->blob;
		*len = r->len;
		r->blob = NULL;
	}
	wr_result_finish(r);
	return rc;
}

int
world_get_paired(struct world_group *g, const char *key, json_t **value,
		 void **blob, size_t *len, int timeout_ms)
{
	struct world *w = wr_group_world(g);
	const char *name = wr_group_name(g);
	struct wr_result r = { .dead_rank = -1 };
	int owner = wr_group_owner(g, 'v', key);

	if (owner < 0) {
		return owner;
	}
	if (owner == w->rank) {
		r.rc = wr_handlers_value(w->handlers, name, key, &r.result, &r.blob,
					 &r.len);
	} else {
		ask(w, &(struct wr_ask){ .group = name, .rank = owner, .kind = WR_PEER_VALUE,
					 .key = key, .timeout_ms = timeout_ms }, &r);
	}
	if (r.rc == -ENOENT || r.rc == WORLD_EPEERDEAD) {
		wr_group_cache_drop(w, 'v', name, key, r.rc == WORLD_EPEERDEAD ? owner : -1);
	}
	return hand_over(&r, value, blob, len);
}

/* Run service @a->key wherever it is: @a->kind "service" or "remote". */
static int
serve_call(struct world_group *g, struct wr_ask *a, struct wr_result *r, int *owner)
{
	struct world *w = wr_group_world(g);
	const char *name = wr_group_name(g);

	*owner = wr_group_owner(g, 's', a->key);
	*r = (struct wr_result){ .rc = *owner < 0 ? *owner : 0, .dead_rank = -1 };
	a->group = name;
	a->rank = *owner;
	if (*owner < 0) {
		return r->rc;
	}
	if (*owner == w->rank) {
		wr_group_run_ask(w, WR_H_SERVICE, name, a, r);
	} else {
		ask(w, a, r);
	}
	if (r->rc == -ENOENT || r->rc == WORLD_EPEERDEAD) {
		wr_group_cache_drop(w, 's', name, a->key,
				    r->rc == WORLD_EPEERDEAD ? *owner : -1);
	}
	return r->rc;
}

int
world_call(struct world_group *g, const char *key, const json_t *args,
	   const void *blob, size_t len, int timeout_ms, json_t **result,
	   void **rblob, size_t *rlen)
{
	struct wr_ask a = { .kind = WR_PEER_SERVICE, .key = key, .args = args, .blob = blob,
			    .len = len, .timeout_ms = timeout_ms };
	struct wr_result r;
	int owner;

	serve_call(g, &a, &r, &owner);
	return hand_over(&r, result, rblob, rlen);
}

/* ---- direct handlers ---- */

int
world_export(struct world *w, const char *name, world_handler_fn *fn, void *ctx,
	     unsigned flags)
{
	return wr_handlers_add(w->handlers, WR_H_DIRECT, NULL, name, fn, ctx, flags);
}

/* Run direct handler @a->key on @member: @a->kind "direct" or
 * "direct_remote". Returns the member's rank. */
static int
direct_call(struct world_group *g, const char *member, struct wr_ask *a,
	    struct wr_result *r)
{
	struct world *w = wr_group_world(g);
	int rank = wr_group_member_rank(g, member);

	*r = (struct wr_result){ .dead_rank = -1 };
	a->group = wr_group_name(g);
	a->rank = rank;
	/* Machin: "RPC target is not a member of group." */
	if (rank < 0) {
		r->rc = WORLD_ENOTMEMBER;
	} else if (rank == w->rank) {
		wr_group_run_ask(w, WR_H_DIRECT, NULL, a, r);
	} else {
		ask(w, a, r);
	}
	return rank;
}

int
world_call_direct(struct world_group *g, const char *member, const char *name,
		  const json_t *args, const void *blob, size_t len, int timeout_ms,
		  json_t **result, void **rblob, size_t *rlen)
{
	struct wr_ask a = { .kind = WR_PEER_DIRECT, .key = name, .args = args, .blob = blob,
			    .len = len, .timeout_ms = timeout_ms };
	struct wr_result r;

	direct_call(g, member, &a, &r);
	return hand_over(&r, result, rblob, rlen);
}

/*
 * A call as a spec, its blob in pieces: lent ones are released once,
 * whatever happens (by whoever took them over, or here).
 */
int
world_callv(struct world_group *g, const struct world_call_spec *s,
	    json_t **result, void **rblob, size_t *rlen)
{
	struct wr_payload pl = { s->iov, s->iovcnt, s->release, s->release_arg };
	struct wr_ask a = { .kind = s->member != NULL ? WR_PEER_DIRECT : WR_PEER_SERVICE,
			    .key = s->key, .args = s->args, .pl = &pl,
			    .timeout_ms = s->timeout_ms };
	struct wr_result r;
	int owner;

	if (s->member != NULL) {
		direct_call(g, s->member, &a, &r);
	} else {
		serve_call(g, &a, &r, &owner);
	}
	wr_payload_release(&pl);
	return hand_over(&r, result, rblob, rlen);
}

void
world_blob_free(void *blob, size_t len)
{
	wr_payload_keep(blob, len);
}

/* ---- remote results (RRefs) ---- */

/*
 * The answer @r of a remote call to @owner as an RRef in *@out. A result
 * computed here is kept here, like any callee does.
 */
static int
to_rref(struct world_group *g, int owner, struct wr_result *r,
	struct world_rref **out)
{
	struct world_rref *ref = r->rc == 0 ? calloc(1, sizeof(*ref)) : NULL;
	json_int_t id = 0;

	*out = NULL;
	if (r->rc == 0 && ref == NULL) {
		r->rc = -ENOMEM;
	}
	if (r->rc == 0 && owner == wr_group_world(g)->rank) {
		id = wr_handlers_keep(wr_group_world(g)->handlers, r->result, r->blob, r->len);
		r->result = NULL;
		r->blob = NULL;
		r->rc = id < 0 ? (int)id : 0;
	} else if (r->rc == 0 && json_unpack(r->result, "{s:I}", "rref", &id) < 0) {
		r->rc = WORLD_EPROTO;
	}
	if (r->rc < 0) {
		free(ref);
		return hand_over(r, NULL, NULL, NULL);
	}
	wr_result_finish(r);
	*ref = (struct world_rref){ wr_group_world(g), owner, id };
	*out = ref;
	return 0;
}

int
world_call_remote(struct world_group *g, const char *key, const json_t *args,
		  const void *blob, size_t len, int timeout_ms,
		  struct world_rref **out)
{
	struct wr_ask a = { .kind = WR_PEER_REMOTE, .key = key, .args = args, .blob = blob,
			    .len = len, .timeout_ms = timeout_ms };
	struct wr_result r;
	int owner;

	serve_call(g, &a, &r, &owner);
	return to_rref(g, owner, &r, out);
}

int
world_call_direct_remote(struct world_group *g, const char *member,
			 const char *name, const json_t *args, const void *blob,
			 size_t len, int timeout_ms, struct world_rref **out)
{
	struct wr_ask a = { .kind = WR_PEER_DIRECT_REMOTE, .key = name, .args = args,
			    .blob = blob, .len = len, .timeout_ms = timeout_ms };
	struct wr_result r;
	int rank = direct_call(g, member, &a, &r);

	return to_rref(g, rank, &r, out);
}

int
world_rref_fetch(struct world_rref *ref, json_t **result, void **blob,
		 size_t *len, int timeout_ms)
{
	struct wr_result r = { .dead_rank = -1 };

	if (ref->owner == ref->w->rank) {
		r.rc = wr_handlers_fetch(ref->w->handlers, ref->id, &r.result, &r.blob,
					 &r.len);
	} else {
		ask(ref->w, &(struct wr_ask){ .group = "", .rank = ref->owner,
					    .kind = WR_PEER_FETCH, .key = "", .rref = ref->id,
					    .timeout_ms = timeout_ms }, &r);
	}
	return hand_over(&r, result, blob, len);
}

void
world_rref_release(struct world_rref *ref)
{
	struct wr_result r;

	if (ref == NULL) {
		return;
	}
	if (ref->owner == ref->w->rank) {
		wr_handlers_release(ref->w->handlers, ref->id);
	} else {
		ask(ref->w, &(struct wr_ask){ .group = "", .rank = ref->owner,
					    .kind = WR_PEER_RELEASE, .key = "", .rref = ref->id,
					    .timeout_ms = 5000 }, &r);
		wr_result_finish(&r);
	}
	free(ref);
}
