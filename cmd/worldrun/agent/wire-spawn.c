/* SPDX-License-Identifier: MIT */
/*
 * wire-spawn: a spawn as SPAWN and JOINED carry it, from the asking
 * host's agent to the launcher and from the launcher to the hosts that
 * start its ranks: the apps' shape in the JSON and their strings in the
 * blob, and the node of each rank.
 */
#include "wirespawn.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The strings of @app: the program, the arguments, the variables and
 * the directory it has, in that order, as they go in the blob. */
static size_t
app_strings(const struct wr_spawn_app *app, const char **v, size_t room)
{
	size_t n = 0;

	v[n++] = app->cmd;
	for (char **s = app->argv; s != NULL && *s != NULL && n < room; s++) {
		v[n++] = *s;
	}
	for (char **s = app->env; s != NULL && *s != NULL && n < room; s++) {
		v[n++] = *s;
	}
	if (app->cwd != NULL && n < room) {
		v[n++] = app->cwd;
	}
	return n;
}

static size_t
count(char **v)
{
	size_t n = 0;

	while (v != NULL && v[n] != NULL) {
		n++;
	}
	return n;
}

json_t *
wr_wire_apps_pack(const struct wr_spawn_app *apps, size_t napps, char **strings,
		  size_t *len)
{
	json_t *shape = json_array();
	size_t total = 0, at = 0;

	*strings = NULL;
	for (size_t i = 0; i < napps; i++) {
		size_t n = 3 + count(apps[i].argv) + count(apps[i].env);
		const char **v = calloc(n, sizeof(*v));
		size_t k = v != NULL ? app_strings(&apps[i], v, n) : 0;
		char *grown = NULL;
		size_t add = 0;

		for (size_t j = 0; j < k; j++) {
			add += strlen(v[j]) + 1;
		}
		if (v != NULL && add <= SIZE_MAX - total) {
			grown = realloc(*strings, total + add + 1);
		}
		if (grown == NULL || shape == NULL ||
		    json_array_append_new(shape, json_pack("[i, I, I, b]", apps[i].maxprocs,
							   (json_int_t)count(apps[i].argv),
							   (json_int_t)count(apps[i].env),
							   apps[i].cwd != NULL)) != 0) {
			free(v);
			free(grown != NULL ? grown : *strings);
			*strings = NULL;
			json_decref(shape);
			return NULL;
		}
		*strings = grown;
		total += add;
		for (size_t j = 0; j < k; j++) {
			size_t l = strlen(v[j]) + 1;

			memcpy(*strings + at, v[j], l);
			at += l;
		}
		free(v);
	}
	*len = total;
	return shape;
}

/* The next of the strings between *@p and @end, or NULL: none is left. */
static char *
take(char **p, const char *end)
{
	char *s = *p, *nul = s < end ? memchr(s, '\0', (size_t)(end - s)) : NULL;

	if (nul == NULL) {
		return NULL;
	}
	*p = nul + 1;
	return s;
}

/* @n strings into @v (NULL-terminated), each "NAME=VALUE" with @vars. */
static bool
take_all(char **p, const char *end, char **v, size_t n, bool vars)
{
	for (size_t i = 0; i < n; i++) {
		v[i] = take(p, end);
		if (v[i] == NULL || (vars && (v[i][0] == '=' || strchr(v[i], '=') == NULL))) {
			return false;
		}
	}
	v[n] = NULL;
	return true;
}

/* The shape of app @i: its counts, each in range; false if it is none. */
static bool
app_shape(json_t *shape, size_t i, json_int_t c[3], int *cwd)
{
	json_error_t err;

	return json_unpack_ex(json_array_get(shape, i), &err, JSON_STRICT, "[I, I, I, b]",
			      &c[0], &c[1], &c[2], cwd) == 0 &&
	       c[0] >= 1 && c[0] <= WR_WIRE_RANK_MAX && c[1] >= 1 &&
	       c[1] <= WR_WIRE_DATA_MAX && c[2] >= 0 && c[2] <= WR_WIRE_DATA_MAX;
}

struct wr_spawn_app *
wr_wire_apps_unpack(json_t *shape, char *strings, size_t len, int ranks, size_t *napps)
{
	size_t n = json_array_size(shape), ptrs = 0;
	json_int_t c[3], sum = 0;
	struct wr_spawn_app *apps;
	char **v, *p = strings;
	int cwd;

	if (!json_is_array(shape) || n == 0 || n > WR_SPAWN_APPS_MAX) {
		errno = EPROTO;
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		if (!app_shape(shape, i, c, &cwd)) {
			errno = EPROTO;
			return NULL;
		}
		ptrs += (size_t)(c[1] + c[2]) + 2;
		sum += c[0];
	}
	if (sum != ranks) {
		errno = EPROTO;
		return NULL;
	}
	apps = calloc(1, n * sizeof(*apps) + ptrs * sizeof(char *));
	if (apps == NULL) {
		return NULL;
	}
	v = (char **)(apps + n);
	for (size_t i = 0; i < n; i++) {
		app_shape(shape, i, c, &cwd);
		apps[i].maxprocs = (int)c[0];
		apps[i].argv = v;
		apps[i].env = v + c[1] + 1;
		v += c[1] + c[2] + 2;
		apps[i].cmd = take(&p, strings + len);
		if (apps[i].cmd == NULL || apps[i].cmd[0] == '\0' ||
		    !take_all(&p, strings + len, apps[i].argv, (size_t)c[1], false) ||
		    !take_all(&p, strings + len, apps[i].env, (size_t)c[2], true) ||
		    (cwd && (apps[i].cwd = take(&p, strings + len)) == NULL)) {
			break;
		}
		if (i + 1 == n && p == strings + len) {
			*napps = n;
			return apps;
		}
	}
	free(apps);
	errno = EPROTO;
	return NULL;
}

bool
wr_wire_apps_ok(json_t *apps, const void *blob, size_t len, int ranks)
{
	size_t n;
	struct wr_spawn_app *a = wr_wire_apps_unpack(apps, (char *)blob, len, ranks, &n);

	free(a);
	return a != NULL;
}

int
wr_wire_place_get(json_t *place, int count, int nnodes, int *node)
{
	if (!json_is_array(place) || json_array_size(place) != (size_t)count) {
		return -EPROTO;
	}
	for (int i = 0; i < count; i++) {
		json_t *v = json_array_get(place, (size_t)i);
		json_int_t n = json_is_integer(v) ? json_integer_value(v) : -1;

		if (n < 0 || n >= nnodes) {
			return -EPROTO;
		}
		if (node != NULL) {
			node[i] = (int)n;
		}
	}
	return 0;
}

bool
wr_wire_spawn_fields(json_t *msg, bool joined, const void *blob, size_t len,
		     struct wr_cmd *c)
{
	json_error_t err;
	json_int_t id = 0, a = 0, b = 0, node = 0;

	if (joined ? json_unpack_ex(msg, &err, 0, "{s:I, s:I, s:I, s:o, s:o}", "first", &a,
				    "count", &b, "node", &node, "apps", &c->apps, "place",
				    &c->place) != 0
		   : json_unpack_ex(msg, &err, 0, "{s:I, s:I, s:I, s?o, s?o}", "id", &id, "first",
				    &a, "count", &b, "apps", &c->apps, "place", &c->place) != 0) {
		return false;
	}
	if (id < 0 || id > INT_MAX || a < 0 || a > WR_WIRE_RANK_MAX ||
	    b < (joined ? 1 : 0) || b > WR_WIRE_RANK_MAX - a || node < 0 ||
	    node >= WR_WIRE_RANK_MAX || (b > 0) != (c->apps != NULL) ||
	    (c->apps != NULL) != (c->place != NULL) ||
	    (c->apps != NULL ? !wr_wire_apps_ok(c->apps, blob, len, (int)b) ||
				       wr_wire_place_get(c->place, (int)b, WR_WIRE_RANK_MAX, NULL) < 0
			     : blob != NULL)) {
		c->apps = c->place = NULL;
		return false;
	}
	c->id = (int)id;
	c->first = (int)a;
	c->count = (int)b;
	c->node = (int)node;
	return true;
}
