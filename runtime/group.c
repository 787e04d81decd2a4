/* SPDX-License-Identifier: MIT */
/*
 * group: RPC groups (Machin's RpcGroup): membership through the
 * registry's rendezvous, values and services claimed in its lookup table
 * and held in this process's handler tables, and calls to their owners
 * over peer connections (or in the calling thread, when the owner is this
 * process). Owners found in the registry are cached per world.
 */
#include "worldint.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"

struct world_group {
	struct world *w;
	struct world_group *next; /* in w->groups, for groups created here */
	char *name;
	int *ranks; /* sorted */
	char (*names)[16];
	size_t n;
	bool member;
	bool opened; /* by world_group_open(): destroying it leaves nothing */
};

struct world_rref {
	struct world *w;
	int owner;
	int64_t id;
};

/* ---- names and membership ---- */

/* A member's name is its decimal rank: the rank, or -1. */
static int
rank_of(const struct world *w, const char *name)
{
	char *end = NULL;
	long r;

	if (name == NULL || name[0] < '0' || name[0] > '9') {
		return -1;
	}
	r = strtol(name, &end, 10);
	return *end == '\0' && r >= 0 && r < w->size ? (int)r : -1;
}

static int
by_int(const void *a, const void *b)
{
	return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

static void
group_free(struct world_group *g)
{
	if (g == NULL) {
		return;
	}
	free(g->name);
	free(g->ranks);
	free(g->names);
	free(g);
}

/* A handle for @name with @n ranks (sorted here, duplicates refused). */
static int
group_new(struct world *w, const char *name, const int *ranks, size_t n,
	  struct world_group **out)
{
	struct world_group *g = calloc(1, sizeof(*g));

	*out = NULL;
	if (g == NULL || n == 0) {
		free(g);
		return g == NULL ? -ENOMEM : -EINVAL;
	}
	g->w = w;
	g->name = strdup(name);
	g->ranks = calloc(n, sizeof(*g->ranks));
	g->names = calloc(n, sizeof(*g->names));
	if (g->name == NULL || g->ranks == NULL || g->names == NULL) {
		group_free(g);
		return -ENOMEM;
	}
	memcpy(g->ranks, ranks, n * sizeof(*ranks));
	qsort(g->ranks, n, sizeof(*g->ranks), by_int);
	for (size_t i = 0; i < n; i++) {
		if (i > 0 && g->ranks[i] == g->ranks[i - 1]) {
			group_free(g);
			return -EINVAL;
		}
		snprintf(g->names[i], sizeof(g->names[i]), "%d", g->ranks[i]);
	}
	g->n = n;
	*out = g;
	return 0;
}

static json_t *
ranks_new(const struct world_group *g)
{
	json_t *a = json_array();

	for (size_t i = 0; a != NULL && i < g->n; i++) {
		json_array_append_new(a, json_integer(g->ranks[i]));
	}
	return a;
}

static bool
has_group(struct world *w, const char *name)
{
	bool found = false;

	pthread_mutex_lock(&w->mu);
	for (struct world_group *g = w->groups; g != NULL && !found; g = g->next) {
		found = strcmp(g->name, name) == 0;
	}
	pthread_mutex_unlock(&w->mu);
	return found;
}

int
world_group_create(struct world *w, const char *name, const char *const *members,
		   size_t n, int timeout_ms, struct world_group **out)
{
	struct world_group *g = NULL;
	int *ranks = calloc(n ? n : 1, sizeof(*ranks));
	bool self = false;
	int rc = ranks == NULL ? -ENOMEM : 0;

	*out = NULL;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		ranks[i] = rank_of(w, members[i]);
		rc = ranks[i] < 0 ? -EINVAL : 0;
		self = self || ranks[i] == w->rank;
	}
	if (rc == 0) {
		rc = !self ? -EINVAL : has_group(w, name) ? -EEXIST
			: group_new(w, name, ranks, n, &g);
	}
	free(ranks);
	if (rc == 0) {
		rc = wr_world_call(w, json_pack("{s:s, s:s, s:o}", "op", "group.join",
						"group", name, "members", ranks_new(g)),
				   NULL, 0, timeout_ms, NULL, NULL, NULL);
	}
	if (rc < 0) {
		group_free(g);
		return rc;
	}
	g->member = true;
	pthread_mutex_lock(&w->mu);
	g->next = w->groups;
	w->groups = g;
	pthread_mutex_unlock(&w->mu);
	*out = g;
	return 0;
}

int
world_group_open(struct world *w, const char *name, struct world_group **out)
{
	json_t *res = NULL, *a;
	int *ranks = NULL;
	size_t n = 0;
	int rc;

	*out = NULL;
	rc = wr_world_call(w, json_pack("{s:s, s:s}", "op", "group.members", "group",
					name), NULL, 0, 0, &res, NULL, NULL);
	a = json_object_get(res, "members");
	if (rc == 0) {
		n = json_array_size(a);
		ranks = calloc(n ? n : 1, sizeof(*ranks));
		rc = ranks == NULL ? -ENOMEM : 0;
	}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		ranks[i] = (int)json_integer_value(json_array_get(a, i));
	}
	if (rc == 0) {
		rc = group_new(w, name, ranks, n, out);
	}
	free(ranks);
	json_decref(res);
	/* In a member's own process the handle acts as the member's, but
	 * destroying it leaves the group to the handle that created it. */
	if (rc == 0 && has_group(w, name)) {
		(*out)->member = true;
		(*out)->opened = true;
	}
	return rc;
}

/* ---- the lookup cache: (table, group, key) -> owner ---- */

static char *
cache_key(char t, const char *group, const char *key)
{
	char *s = NULL;

	return asprintf(&s, "%c\n%s\n%s", t, group, key) < 0 ? NULL : s;
}

static int
cache_get(struct world *w, char t, const char *group, const char *key)
{
	char *k = cache_key(t, group, key);
	uintptr_t v = 0;

	if (k != NULL) {
		pthread_mutex_lock(&w->mu);
		v = (uintptr_t)wr_table_get(w->cache, k);
		pthread_mutex_unlock(&w->mu);
	}
	free(k);
	return (int)v - 1;
}

static void
cache_put(struct world *w, char t, const char *group, const char *key, int owner)
{
	char *k = cache_key(t, group, key);

	if (k != NULL) {
		pthread_mutex_lock(&w->mu);
		wr_table_put(w->cache, k, (void *)(uintptr_t)(owner + 1));
		pthread_mutex_unlock(&w->mu);
	}
	free(k);
}

/* Forget (t, group, key); with @owner >= 0, also all that @owner held. */
static void
cache_drop(struct world *w, char t, const char *group, const char *key, int owner)
{
	char *k = cache_key(t, group, key);
	const char *ck;
	size_t pos = 0;
	void *v;

	pthread_mutex_lock(&w->mu);
	if (k != NULL) {
		wr_table_del(w->cache, k);
	}
	while (owner >= 0 && wr_table_next(w->cache, &pos, &ck, &v)) {
		if ((int)(uintptr_t)v - 1 == owner) {
			wr_table_del(w->cache, ck);
		}
	}
	pthread_mutex_unlock(&w->mu);
	free(k);
}

static const char *
table_name(char t)
{
	return t == 's' ? "services" : "values";
}

/* The owner of (t, group, key): from the cache, else the registry. */
int
wr_group_owner(struct world_group *g, char t, const char *key)
{
	json_t *res = NULL;
	int owner = cache_get(g->w, t, g->name, key);
	int rc;

	if (owner >= 0) {
		return owner;
	}
	rc = wr_world_call(g->w, json_pack("{s:s, s:s, s:s, s:s}", "op", "lut.lookup",
					   "table", table_name(t), "group", g->name,
					   "key", key), NULL, 0, 0, &res, NULL, NULL);
	if (rc == 0 && json_unpack(res, "{s:i}", "owner", &owner) < 0) {
		rc = WORLD_EPROTO;
	}
	json_decref(res);
	if (rc < 0) {
		return rc;
	}
	cache_put(g->w, t, g->name, key, owner);
	return owner;
}

static int
lut(struct world_group *g, const char *op, char t, const char *key, int timeout_ms)
{
	return wr_world_call(g->w, json_pack("{s:s, s:s, s:s, s:s}", "op", op,
					     "table", table_name(t), "group",
					     g->name, "key", key),
			     NULL, 0, timeout_ms, NULL, NULL, NULL);
}

/* ---- the group itself ---- */

int
world_group_destroy(struct world_group *g)
{
	struct world *w;
	int rc = 0;

	if (g == NULL) {
		return 0;
	}
	w = g->w;
	if (g->member && !g->opened) {
		/* Leaving releases this rank's entries; then drop our copies. */
		rc = wr_world_call(w, json_pack("{s:s, s:s}", "op", "group.leave",
						"group", g->name), NULL, 0, 0, NULL, NULL,
				   NULL);
		wr_handlers_drop_group(w->handlers, g->name);
		pthread_mutex_lock(&w->mu);
		for (struct world_group **at = &w->groups; *at != NULL; at = &(*at)->next) {
			if (*at == g) {
				*at = g->next;
				break;
			}
		}
		pthread_mutex_unlock(&w->mu);
	}
	group_free(g);
	return rc;
}

const char *
world_group_name(const struct world_group *g)
{
	return g->name;
}

size_t
world_group_size(const struct world_group *g)
{
	return g->n;
}

const char *
world_group_member(const struct world_group *g, size_t i)
{
	return i < g->n ? g->names[i] : NULL;
}

static bool
has_rank(const struct world_group *g, int rank)
{
	return bsearch(&rank, g->ranks, g->n, sizeof(int), by_int) != NULL;
}

bool
world_group_is_member(const struct world_group *g, const char *name)
{
	int r = name == NULL ? g->w->rank : rank_of(g->w, name);

	return r >= 0 && has_rank(g, r);
}

int
world_group_barrier(struct world_group *g, int timeout_ms)
{
	char name[512];

	if (!g->member) {
		return WORLD_ENOTMEMBER;
	}
	snprintf(name, sizeof(name), "group.%s", g->name);
	return wr_world_call(g->w, json_pack("{s:s, s:s, s:o}", "op", "barrier",
					     "name", name, "members", ranks_new(g)),
			     NULL, 0, timeout_ms, NULL, NULL, NULL);
}

/* ---- values ---- */

int
world_pair(struct world_group *g, const char *key, const json_t *value,
	   const void *blob, size_t len)
{
	int rc;

	if (!g->member) {
		return WORLD_ENOTMEMBER;
	}
	/* Held here before it is claimed, so a lookup never finds it missing. */
	rc = wr_handlers_pair(g->w->handlers, g->name, key, value, blob, len);
	if (rc == 0) {
		rc = lut(g, "lut.claim", 'v', key, 0);
		if (rc < 0) {
			wr_handlers_unpair(g->w->handlers, g->name, key);
		}
	}
	return rc;
}

int
world_unpair(struct world_group *g, const char *key)
{
	int rc;

	if (!g->member) {
		return WORLD_ENOTMEMBER;
	}
	rc = lut(g, "lut.release", 'v', key, 0);
	if (rc == 0) {
		wr_handlers_unpair(g->w->handlers, g->name, key);
	}
	cache_drop(g->w, 'v', g->name, key, -1);
	return rc;
}

static int
exists(struct world_group *g, char t, const char *key, bool *out)
{
	int rc = lut(g, "lut.lookup", t, key, 0);

	*out = rc == 0;
	return rc == -ENOENT ? 0 : rc;
}

int
world_is_paired(struct world_group *g, const char *key, bool *out)
{
	return exists(g, 'v', key, out);
}

int
world_wait_paired(struct world_group *g, const char *key, int timeout_ms)
{
	return lut(g, "lut.wait", 'v', key, timeout_ms);
}

/* ---- calls to owners ---- */

/* The request a peer's serve.c answers. */
static json_t *
call_new(const struct world_group *g, const char *kind, const char *key,
	 const json_t *args, int64_t rref)
{
	json_t *req = json_pack("{s:s, s:s, s:s, s:s}", "op", "call", "kind", kind,
				"group", g != NULL ? g->name : "", "key", key);

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

int
wr_group_submit(struct world_group *g, int rank, const char *kind,
		const char *key, const json_t *args, int64_t rref,
		const void *blob, size_t len, struct wr_call **out)
{
	const char *ep;

	*out = NULL;
	if (g->w->prog == NULL) {
		return -ENOTSUP;
	}
	ep = wr_world_peer(g->w, rank);
	if (ep == NULL) {
		return WORLD_EPEERDEAD;
	}
	*out = wr_prog_submit(g->w->prog, rank, ep, call_new(g, kind, key, args, rref),
			      blob, len);
	return *out == NULL ? -ENOMEM : 0;
}

/* Ask @rank, and wait: the answer in @out, its value unwrapped. */
static int
ask(struct world_group *g, int rank, const char *kind, const char *key,
    const json_t *args, int64_t rref, const void *blob, size_t len,
    int timeout_ms, struct wr_result *out)
{
	int wait_ms = wr_world_timeout(g->w, timeout_ms);
	struct wr_call *c = NULL;
	int rc;

	*out = (struct wr_result){ .dead_rank = -1 };
	rc = wait_ms == -EINVAL ? -EINVAL
		: wr_group_submit(g, rank, kind, key, args, rref, blob, len, &c);
	if (rc == 0 && wr_prog_wait(g->w->prog, c, wait_ms) < 0) {
		wr_prog_drop(g->w->prog, c);
		rc = -ETIMEDOUT;
	} else if (rc == 0) {
		rc = wr_prog_take(g->w->prog, c, out);
	}
	out->rc = rc;
	if (rc == WORLD_EPEERDEAD && out->dead_rank < 0) {
		out->dead_rank = rank;
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
	wr_handlers_run(x, args, blob, len, &a);
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

/* Hand a result to the caller's pointers (any may be NULL) and record a
 * failure for world_last_failure(). */
static int
hand_over(struct wr_result *r, json_t **result, void **blob, size_t *len)
{
	int rc = r->rc;

	wr_world_note(r);
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
	struct wr_result r = { .dead_rank = -1 };
	int owner = wr_group_owner(g, 'v', key);

	if (owner < 0) {
		return owner;
	}
	if (owner == g->w->rank) {
		r.rc = wr_handlers_value(g->w->handlers, g->name, key, &r.result,
					 &r.blob, &r.len);
	} else {
		ask(g, owner, "value", key, NULL, 0, NULL, 0, timeout_ms, &r);
	}
	if (r.rc == -ENOENT || r.rc == WORLD_EPEERDEAD) {
		cache_drop(g->w, 'v', g->name, key, r.rc == WORLD_EPEERDEAD ? owner : -1);
	}
	return hand_over(&r, value, blob, len);
}

/* ---- services ---- */

int
world_register(struct world_group *g, const char *key, world_handler_fn *fn,
	       void *ctx, unsigned flags)
{
	int rc;

	if (!g->member) {
		return WORLD_ENOTMEMBER;
	}
	rc = wr_handlers_add(g->w->handlers, WR_H_SERVICE, g->name, key, fn, ctx,
			     flags);
	if (rc == 0) {
		rc = lut(g, "lut.claim", 's', key, 0);
		if (rc < 0) {
			wr_handlers_remove(g->w->handlers, WR_H_SERVICE, g->name, key);
		}
	}
	return rc;
}

int
world_deregister(struct world_group *g, const char *key)
{
	int rc;

	if (!g->member) {
		return WORLD_ENOTMEMBER;
	}
	rc = lut(g, "lut.release", 's', key, 0);
	if (rc == 0) {
		wr_handlers_remove(g->w->handlers, WR_H_SERVICE, g->name, key);
	}
	cache_drop(g->w, 's', g->name, key, -1);
	return rc;
}

int
world_is_registered(struct world_group *g, const char *key, bool *out)
{
	return exists(g, 's', key, out);
}

/* Run service @key wherever it is: @kind "service" or "remote". */
static int
serve_call(struct world_group *g, const char *kind, const char *key,
	   const json_t *args, const void *blob, size_t len, int timeout_ms,
	   struct wr_result *r, int *owner)
{
	*owner = wr_group_owner(g, 's', key);
	*r = (struct wr_result){ .rc = *owner < 0 ? *owner : 0, .dead_rank = -1 };
	if (*owner < 0) {
		return r->rc;
	}
	if (*owner == g->w->rank) {
		wr_group_run_here(g->w, WR_H_SERVICE, g->name, key, args, blob, len, r);
	} else {
		ask(g, *owner, kind, key, args, 0, blob, len, timeout_ms, r);
	}
	if (r->rc == -ENOENT || r->rc == WORLD_EPEERDEAD) {
		cache_drop(g->w, 's', g->name, key, r->rc == WORLD_EPEERDEAD ? *owner : -1);
	}
	return r->rc;
}

int
world_call(struct world_group *g, const char *key, const json_t *args,
	   const void *blob, size_t len, int timeout_ms, json_t **result,
	   void **rblob, size_t *rlen)
{
	struct wr_result r;
	int owner;

	serve_call(g, "service", key, args, blob, len, timeout_ms, &r, &owner);
	return hand_over(&r, result, rblob, rlen);
}

/* ---- direct handlers ---- */

int
world_export(struct world *w, const char *name, world_handler_fn *fn, void *ctx,
	     unsigned flags)
{
	return wr_handlers_add(w->handlers, WR_H_DIRECT, NULL, name, fn, ctx, flags);
}

/* Run direct handler @name on @member: @kind "direct" or "direct_remote". */
static int
direct_call(struct world_group *g, const char *kind, const char *member,
	    const char *name, const json_t *args, const void *blob, size_t len,
	    int timeout_ms, struct wr_result *r)
{
	int rank = rank_of(g->w, member);

	*r = (struct wr_result){ .dead_rank = -1 };
	/* Machin: "RPC target is not a member of group." */
	if (rank < 0 || !has_rank(g, rank)) {
		r->rc = WORLD_ENOTMEMBER;
	} else if (rank == g->w->rank) {
		wr_group_run_here(g->w, WR_H_DIRECT, NULL, name, args, blob, len, r);
	} else {
		ask(g, rank, kind, name, args, 0, blob, len, timeout_ms, r);
	}
	return rank;
}

int
world_call_direct(struct world_group *g, const char *member, const char *name,
		  const json_t *args, const void *blob, size_t len, int timeout_ms,
		  json_t **result, void **rblob, size_t *rlen)
{
	struct wr_result r;

	direct_call(g, "direct", member, name, args, blob, len, timeout_ms, &r);
	return hand_over(&r, result, rblob, rlen);
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
	if (r->rc == 0 && owner == g->w->rank) {
		id = wr_handlers_keep(g->w->handlers, r->result, r->blob, r->len);
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
	*ref = (struct world_rref){ g->w, owner, id };
	*out = ref;
	return 0;
}

int
world_call_remote(struct world_group *g, const char *key, const json_t *args,
		  const void *blob, size_t len, int timeout_ms,
		  struct world_rref **out)
{
	struct wr_result r;
	int owner;

	serve_call(g, "remote", key, args, blob, len, timeout_ms, &r, &owner);
	return to_rref(g, owner, &r, out);
}

int
world_call_direct_remote(struct world_group *g, const char *member,
			 const char *name, const json_t *args, const void *blob,
			 size_t len, int timeout_ms, struct world_rref **out)
{
	struct wr_result r;
	int rank = direct_call(g, "direct_remote", member, name, args, blob, len,
			       timeout_ms, &r);

	return to_rref(g, rank, &r, out);
}

int
world_rref_fetch(struct world_rref *ref, json_t **result, void **blob,
		 size_t *len, int timeout_ms)
{
	struct world_group g = { .w = ref->w, .name = (char *)"" };
	struct wr_result r = { .dead_rank = -1 };

	if (ref->owner == ref->w->rank) {
		r.rc = wr_handlers_fetch(ref->w->handlers, ref->id, &r.result, &r.blob,
					 &r.len);
	} else {
		ask(&g, ref->owner, "fetch", "", NULL, ref->id, NULL, 0, timeout_ms, &r);
	}
	return hand_over(&r, result, blob, len);
}

void
world_rref_release(struct world_rref *ref)
{
	struct world_group g;
	struct wr_result r;

	if (ref == NULL) {
		return;
	}
	g = (struct world_group){ .w = ref->w, .name = (char *)"" };
	if (ref->owner == ref->w->rank) {
		wr_handlers_release(ref->w->handlers, ref->id);
	} else {
		ask(&g, ref->owner, "release", "", NULL, ref->id, NULL, 0, 5000, &r);
		wr_result_finish(&r);
	}
	free(ref);
}

int
wr_group_member_rank(const struct world_group *g, const char *name)
{
	int rank = rank_of(g->w, name);

	return rank >= 0 && has_rank(g, rank) ? rank : -1;
}

const char *
wr_group_name(const struct world_group *g)
{
	return g->name;
}

struct world *
wr_group_world(const struct world_group *g)
{
	return g->w;
}

struct world_group *
wr_group_next(const struct world_group *g)
{
	return g->next;
}

void
wr_group_free(struct world_group *g)
{
	group_free(g);
}
