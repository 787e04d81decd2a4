/* SPDX-License-Identifier: MIT */
/*
 * group: RPC groups (Machin's RpcGroup): membership through the
 * registry's rendezvous, and values and services claimed in its lookup
 * table and held in this process's handler tables. Owners found in the
 * registry are cached per world. Calls to them are call.c's.
 */
#include "worldint.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "regcall.h"
#include "regproto.h"
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

/* ---- names and membership ---- */

/* The rank named @name (names.h), or -1. */
static int
rank_of(struct world *w, const char *name)
{
	int r = wr_names_rank(w, name);

	return r >= 0 ? r : -1;
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
			: w->stopping ? -ESHUTDOWN : group_new(w, name, ranks, n, &g);
	}
	free(ranks);
	if (rc == 0) {
		struct wr_wait rec = { .kind = WR_WAIT_GROUP_CREATE, .group = name,
				       .peer = -1 };

		rc = wr_regcall_run_as(w, &rec, wr_regproto_group_join(name, ranks_new(g), false),
				       timeout_ms, NULL, NULL, NULL);
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
	rc = wr_regcall_run(w, wr_regproto_group(WR_OP_GROUP_MEMBERS, name), NULL, 0, 0, &res, NULL, NULL);
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
	const char table[2] = { t, '\0' };
	const char *parts[] = { table, group, key };

	return wr_table_key(parts, 3);
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

void
wr_group_cache_drop(struct world *w, char t, const char *group, const char *key,
		    int owner)
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

/*
 * The owner of (t, group, key): from the cache, else the registry. A
 * cached owner known dead is dropped with all it held: the registry
 * purged its entries, and another rank may own the key by now.
 */
int
wr_group_owner(struct world_group *g, char t, const char *key)
{
	json_t *res = NULL;
	int owner = cache_get(g->w, t, g->name, key);
	int rc;

	if (owner >= 0 && wr_world_is_dead(g->w, owner)) {
		wr_group_cache_drop(g->w, t, g->name, key, owner);
		owner = -1;
	}
	if (owner >= 0) {
		return owner;
	}
	rc = wr_regcall_run(g->w, wr_regproto_lut(WR_OP_LUT_LOOKUP, table_name(t),
						    g->name, key), NULL, 0, 0, &res, NULL, NULL);
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
	struct wr_wait rec = { .kind = WR_WAIT_PAIRED, .group = g->name,
			       .name = key, .peer = -1 };

	/* Of the LUT's requests only lut.wait blocks. */
	return wr_regcall_run_as(g->w, strcmp(op, WR_OP_LUT_WAIT) == 0 ? &rec : NULL,
				 wr_regproto_lut(op, table_name(t), g->name, key),
				 timeout_ms, NULL, NULL, NULL);
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
		rc = wr_regcall_run(w, wr_regproto_group(WR_OP_GROUP_LEAVE, g->name), NULL, 0, 0, NULL, NULL,
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
	const char *known = i < g->n ? wr_names_known(g->w, g->ranks[i]) : NULL;

	/* Ranks named by their number, unless the names are known here. */
	return known != NULL ? known : i < g->n ? g->names[i] : NULL;
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
	struct wr_wait rec = { .kind = WR_WAIT_GROUP_BARRIER, .group = g->name,
			       .peer = -1 };
	char name[512];

	if (!g->member) {
		return WORLD_ENOTMEMBER;
	}
	if (g->w->stopping) {
		return -ESHUTDOWN;
	}
	snprintf(name, sizeof(name), "group.%s", g->name);
	return wr_regcall_run_as(g->w, &rec, wr_regproto_barrier(name, ranks_new(g)),
				 timeout_ms, NULL, NULL, NULL);
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
		rc = lut(g, WR_OP_LUT_CLAIM, 'v', key, 0);
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
	rc = lut(g, WR_OP_LUT_RELEASE, 'v', key, 0);
	if (rc == 0) {
		wr_handlers_unpair(g->w->handlers, g->name, key);
	}
	wr_group_cache_drop(g->w, 'v', g->name, key, -1);
	return rc;
}

static int
exists(struct world_group *g, char t, const char *key, bool *out)
{
	int rc = lut(g, WR_OP_LUT_LOOKUP, t, key, 0);

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
	return lut(g, WR_OP_LUT_WAIT, 'v', key, timeout_ms);
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
		rc = lut(g, WR_OP_LUT_CLAIM, 's', key, 0);
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
	rc = lut(g, WR_OP_LUT_RELEASE, 's', key, 0);
	if (rc == 0) {
		wr_handlers_remove(g->w->handlers, WR_H_SERVICE, g->name, key);
	}
	wr_group_cache_drop(g->w, 's', g->name, key, -1);
	return rc;
}

int
world_is_registered(struct world_group *g, const char *key, bool *out)
{
	return exists(g, 's', key, out);
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
