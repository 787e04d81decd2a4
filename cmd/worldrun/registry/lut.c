/* SPDX-License-Identifier: MIT */
/*
 * lut: the lookup table (group, key) -> owner rank, one for values and one
 * for services: claim (first writer wins), release, lookup, waits for an
 * owner, and the release of a rank's entries when it dies or leaves.
 */
#include "core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coreint.h"
#include "table.h"
#include "world_errors.h"

static bool
table_ok(enum wr_reg_table t)
{
	return t == WR_REG_VALUES || t == WR_REG_SERVICES;
}

/* The watch key of (@group, @key): a length prefix keeps pairs apart. */
static char *
lut_key(const char *group, const char *key)
{
	char *s;

	if (asprintf(&s, "%zu:%s%s", strlen(group), group, key) < 0) {
		return NULL;
	}
	return s;
}

/* @group's table in @t, made if @make; NULL if none (or ENOMEM). */
static struct wr_table *
lut_group(struct wr_reg *reg, enum wr_reg_table t, const char *group,
	  bool make)
{
	struct wr_table *keys = wr_table_get(reg->lut[t], group);

	if (keys != NULL || !make) {
		return keys;
	}
	keys = wr_table_create(free);
	if (keys != NULL && wr_table_put(reg->lut[t], group, keys) < 0) {
		wr_table_destroy(keys);
		keys = NULL;
	}
	return keys;
}

/* Release @rank's entries in @keys; true if @keys is empty afterwards. */
static bool
drop_owned(struct wr_reg *reg, struct wr_table *keys, int rank)
{
	const char *key;
	void *owner;
	size_t pos = 0;

	while (wr_table_next(keys, &pos, &key, &owner)) {
		if (*(int *)owner == rank) {
			wr_table_del(keys, key);
			reg->owned[rank]--;
		}
	}
	return wr_table_count(keys) == 0;
}

/* Release @rank's entries in @group (NULL: in every group). */
void
wr_reg_lut_drop(struct wr_reg *reg, const char *group, int rank)
{
	for (int t = 0; t < 2 && reg->owned[rank] > 0; t++) {
		struct wr_table *keys;
		const char *name;
		size_t pos = 0;
		void *v;

		if (group != NULL) {
			keys = wr_table_get(reg->lut[t], group);
			if (keys != NULL && drop_owned(reg, keys, rank)) {
				wr_table_del(reg->lut[t], group);
			}
			continue;
		}
		while (wr_table_next(reg->lut[t], &pos, &name, &v)) {
			if (drop_owned(reg, v, rank)) {
				wr_table_del(reg->lut[t], name);
			}
		}
	}
}

int
wr_reg_lut_claim(struct wr_reg *reg, enum wr_reg_table t,
		 const char *group, const char *key, int rank)
{
	struct wr_table *keys;
	char *wkey;
	int *owner;
	int rc = -ENOMEM;

	if (reg == NULL || !table_ok(t) || group == NULL || key == NULL ||
	    !rank_ok(reg, rank)) {
		return -EINVAL;
	}
	/* Its entries were purged: a late claim would point at nobody. */
	if (reg->gone[rank]) {
		return WORLD_EPEERDEAD;
	}
	keys = lut_group(reg, t, group, false);
	if (keys != NULL && wr_table_get(keys, key) != NULL) {
		return -EEXIST;
	}
	wkey = lut_key(group, key);
	owner = malloc(sizeof(*owner));
	keys = lut_group(reg, t, group, true);
	if (wkey != NULL && owner != NULL && keys != NULL) {
		*owner = rank;
		rc = wr_table_put(keys, key, owner);
	}
	if (rc < 0) {
		free(owner);
		if (keys != NULL && wr_table_count(keys) == 0) {
			wr_table_del(reg->lut[t], group);
		}
	} else {
		reg->owned[rank]++;
		wr_reg_watch_fire(reg->lut_watch[t], wkey);
	}
	free(wkey);
	return rc;
}

int
wr_reg_lut_release(struct wr_reg *reg, enum wr_reg_table t,
		   const char *group, const char *key, int rank)
{
	struct wr_table *keys;
	const int *owner;

	if (reg == NULL || !table_ok(t) || group == NULL || key == NULL ||
	    !rank_ok(reg, rank)) {
		return -EINVAL;
	}
	keys = lut_group(reg, t, group, false);
	owner = keys == NULL ? NULL : wr_table_get(keys, key);
	if (owner == NULL) {
		return -ENOENT;
	}
	if (*owner != rank) {
		return -EPERM;
	}
	wr_table_del(keys, key);
	reg->owned[rank]--;
	if (wr_table_count(keys) == 0) {
		wr_table_del(reg->lut[t], group);
	}
	return 0;
}

int
wr_reg_lut_lookup(const struct wr_reg *reg, enum wr_reg_table t,
		  const char *group, const char *key, int *owner)
{
	const struct wr_table *keys;
	const int *o;

	if (reg == NULL || !table_ok(t) || group == NULL || key == NULL ||
	    owner == NULL) {
		return -EINVAL;
	}
	keys = wr_table_get(reg->lut[t], group);
	o = keys == NULL ? NULL : wr_table_get(keys, key);
	if (o == NULL) {
		return -ENOENT;
	}
	*owner = *o;
	return 0;
}

int
wr_reg_lut_wait(struct wr_reg *reg, enum wr_reg_table t,
		const char *group, const char *key, int rank,
		wr_reg_wait_cb *cb, void *arg, struct wr_reg_wait **w)
{
	const struct req rq = {.kind = WR_REG_WAIT_LUT, .rank = rank, .cb = cb,
			       .arg = arg, .out = w};
	char *wkey;
	int owner, rc;

	if (w != NULL) {
		*w = NULL;
	}
	if (reg == NULL || !table_ok(t) || group == NULL || key == NULL ||
	    cb == NULL || rank < -1 || rank >= reg->nranks) {
		return -EINVAL;
	}
	if (reg->closing) {
		return -ECANCELED;
	}
	if (wr_reg_lut_lookup(reg, t, group, key, &owner) == 0) {
		return wr_reg_end_now(&rq, 0, -1);
	}
	wkey = lut_key(group, key);
	if (wkey == NULL) {
		return -ENOMEM;
	}
	rc = wr_reg_keys_wait(reg, reg->lut_watch[t], NULL,
			      (const char *const[]){wkey}, 1, &rq);
	free(wkey);
	return rc;
}

size_t
wr_reg_lut_count(const struct wr_reg *reg, int rank)
{
	return reg == NULL || !rank_ok(reg, rank) ? 0 : reg->owned[rank];
}
