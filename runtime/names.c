/* SPDX-License-Identifier: MIT */
/*
 * names: what ranks are called. A rank is named by its decimal rank
 * unless it named itself when it opened its world (Machin's
 * World(name=...)): any other string, unique in the world. Every rank
 * publishes its name as it opens its world ("world.name.RANK"); the
 * table of all names is fetched once, when it is first needed (a name
 * that is not a number, the name of another rank, or the open of a rank
 * that named itself, which checks that no two ranks share one), and kept
 * for the world's life. Fetching waits until every rank has opened its
 * world.
 */
#include "names.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "failure.h"
#include "regcall.h"
#include "regproto.h"
#include "worldint.h"

/* Keys asked for in one request (the registry takes up to 4096). */
#define CHUNK 1024

int
wr_names_check(const char *name, int rank)
{
	size_t n = strlen(name), digits = strspn(name, "0123456789");
	char own[16];

	if (n == 0 || n >= WR_NAME_MAX) {
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f) {
			return -EINVAL;
		}
	}
	/* Digits are a rank's number: only its own. */
	snprintf(own, sizeof(own), "%d", rank);
	return digits == n && strcmp(name, own) != 0 ? -EINVAL : 0;
}

static void
name_key(char *buf, size_t room, int rank)
{
	snprintf(buf, room, WR_NAME_KEY, rank);
}

int
wr_names_publish(struct world *w)
{
	char key[32];

	name_key(key, sizeof(key), w->rank);
	return world_kv_set(w, key, w->name, strlen(w->name));
}

/* Ranks @from to @to - 1 into @table, waiting for each to publish. */
static int
fetch(struct world *w, int from, int to, char **table, int timeout_ms)
{
	json_t *keys = json_array(), *res = NULL, *lens;
	void *blob = NULL;
	size_t rlen = 0, at = 0, n;
	int rc = keys == NULL ? -ENOMEM : 0;

	for (int r = from; rc == 0 && r < to; r++) {
		char key[32];

		name_key(key, sizeof(key), r);
		rc = json_array_append_new(keys, json_string(key)) < 0 ? -ENOMEM : 0;
	}
	if (rc == 0) {
		rc = wr_regcall_run(w, wr_regproto_timeout(wr_regproto_keys(WR_OP_KV_MGET, keys),
							   timeout_ms),
				    NULL, 0, timeout_ms, &res, &blob, &rlen);
		keys = NULL;
	}
	lens = json_object_get(res, "lens");
	n = json_array_size(lens);
	for (size_t i = 0; rc == 0 && i < n && from + (int)i < to; i++) {
		json_int_t len = json_integer_value(json_array_get(lens, i));

		table[from + i] = len > 0 && (size_t)len <= rlen - at
			? strndup((char *)blob + at, (size_t)len) : NULL;
		rc = table[from + i] == NULL ? WORLD_EPROTO : 0;
		at += (size_t)len;
	}
	json_decref(keys);
	json_decref(res);
	free(blob);
	/* A long answer stops early: the caller asks again from there. */
	return rc < 0 ? rc : (int)n;
}

/* The first two ranks that share a name, or -1. */
static int
shared(char **table, int size, int *other)
{
	for (int i = 0; i < size; i++) {
		for (int j = i + 1; j < size; j++) {
			if (strcmp(table[i], table[j]) == 0) {
				*other = j;
				return i;
			}
		}
	}
	return -1;
}

static void
table_free(char **table, int size)
{
	for (int i = 0; table != NULL && i < size; i++) {
		free(table[i]);
	}
	free(table);
}

/* Refuse a table in which two ranks share a name, saying which. */
static int
refuse_shared(char **table, int size)
{
	int j = -1, i = size > 1000 ? -1 : shared(table, size, &j);
	struct wr_result r = { .rc = -EEXIST };

	if (i < 0) {
		return 0;
	}
	snprintf(r.message, sizeof(r.message), "ranks %d and %d are both named \"%.180s\"",
		 i, j, table[i]);
	wr_failure_note(&r);
	return -EEXIST;
}

int
wr_names_load(struct world *w, int timeout_ms)
{
	char **table;
	int rc = 0;

	pthread_mutex_lock(&w->mu);
	rc = w->names != NULL ? 1 : 0;
	pthread_mutex_unlock(&w->mu);
	if (rc == 1 || w->prog == NULL) {
		return 0;
	}
	table = calloc((size_t)w->size, sizeof(*table));
	if (table == NULL) {
		return -ENOMEM;
	}
	for (int from = 0; rc >= 0 && from < w->size; from += rc) {
		int to = from + CHUNK < w->size ? from + CHUNK : w->size;

		rc = fetch(w, from, to, table, timeout_ms);
		rc = rc == 0 ? WORLD_EPROTO : rc;
	}
	rc = rc < 0 ? rc : refuse_shared(table, w->size);
	pthread_mutex_lock(&w->mu);
	if (rc == 0 && w->names == NULL) {
		w->names = table;
		table = NULL;
	}
	pthread_mutex_unlock(&w->mu);
	table_free(table, w->size);
	return rc;
}

const char *
wr_names_known(struct world *w, int rank)
{
	const char *name = NULL;

	pthread_mutex_lock(&w->mu);
	if (w->names != NULL && rank >= 0 && rank < w->size) {
		name = w->names[rank];
	}
	pthread_mutex_unlock(&w->mu);
	return name;
}

int
wr_names_rank(struct world *w, const char *name)
{
	size_t n = name != NULL ? strspn(name, "0123456789") : 0;
	int rc;

	if (name == NULL || name[0] == '\0') {
		return -EINVAL;
	}
	if (n == strlen(name)) {
		long r = n < 10 ? strtol(name, NULL, 10) : -1;

		return r >= 0 && r < w->size ? (int)r : -ENOENT;
	}
	if (strcmp(name, w->name) == 0) {
		return w->rank;
	}
	rc = wr_names_load(w, WORLD_TIMEOUT_DEFAULT);
	for (int r = 0; rc == 0 && r < w->size; r++) {
		if (strcmp(w->names[r], name) == 0) {
			return r;
		}
	}
	return rc < 0 ? rc : -ENOENT;
}

void
wr_names_finish(struct world *w)
{
	table_free(w->names, w->size);
	w->names = NULL;
}

int
world_rank_name(struct world *w, int rank, const char **name)
{
	int rc;

	*name = NULL;
	if (rank < 0 || rank >= w->size) {
		return -EINVAL;
	}
	if (rank == w->rank || w->prog == NULL) {
		*name = w->name;
		return 0;
	}
	rc = wr_names_load(w, WORLD_TIMEOUT_DEFAULT);
	*name = rc == 0 ? wr_names_known(w, rank) : NULL;
	return rc;
}

int
world_name_rank(struct world *w, const char *name)
{
	return wr_names_rank(w, name);
}
