/* SPDX-License-Identifier: MIT */
/*
 * kv: the job's key/value space as libworld offers it: TCPStore's
 * operations, each one registry request (ops.c in worldrun has their
 * schemas). Values travel as the frame's blob, so they may hold any byte.
 */
#include "worldint.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "regcall.h"
#include "regproto.h"

/* A copy of @blob with a NUL after it, so text values read as strings. */
static int
hand_back(void *blob, size_t len, void **val, size_t *vlen)
{
	char *v = realloc(blob, len + 1);

	if (v == NULL) {
		free(blob);
		return -ENOMEM;
	}
	v[len] = '\0';
	*val = v;
	if (vlen != NULL) {
		*vlen = len;
	}
	return 0;
}

static json_t *
keys_new(const char *const *keys, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a != NULL && i < n; i++) {
		if (keys[i] == NULL || json_array_append_new(a, json_string(keys[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

int
world_kv_set(struct world *w, const char *key, const void *val, size_t len)
{
	return wr_regcall_run(w, wr_regproto_key(WR_OP_KV_SET, key),
			      val, len, 0, NULL, NULL, NULL);
}

int
world_kv_append(struct world *w, const char *key, const void *val, size_t len)
{
	return wr_regcall_run(w, wr_regproto_key(WR_OP_KV_APPEND, key), val, len, 0, NULL, NULL, NULL);
}

int
world_kv_get(struct world *w, const char *key, void **val, size_t *len,
	     int timeout_ms)
{
	struct wr_wait rec = { .kind = WR_WAIT_KV_GET, .name = key, .peer = -1 };
	void *blob = NULL;
	size_t blen = 0;
	int rc = wr_regcall_run_as(w, &rec, wr_regproto_key(WR_OP_KV_GET, key),
				   timeout_ms, NULL, &blob, &blen);

	return rc < 0 ? rc : hand_back(blob, blen, val, len);
}

int
world_kv_add(struct world *w, const char *key, int64_t delta, int64_t *out)
{
	json_t *res = NULL;
	json_int_t v = 0;
	int rc = wr_regcall_run(w, wr_regproto_kv_add(key, delta),
				NULL, 0, 0, &res, NULL, NULL);

	if (rc == 0 && json_unpack(res, "{s:I}", "value", &v) < 0) {
		rc = WORLD_EPROTO;
	}
	if (rc == 0 && out != NULL) {
		*out = v;
	}
	json_decref(res);
	return rc;
}

int
world_kv_cas(struct world *w, const char *key, const void *expected,
	     size_t exp_len, const void *desired, size_t des_len, void **cur,
	     size_t *cur_len)
{
	char *both = malloc(exp_len + des_len + 1);
	void *blob = NULL;
	size_t blen = 0;
	int rc;

	if (both == NULL) {
		return -ENOMEM;
	}
	memcpy(both, expected, exp_len);
	memcpy(both + exp_len, desired, des_len);
	rc = wr_regcall_run(w, wr_regproto_kv_cas(key, exp_len),
			    both, exp_len + des_len, 0, NULL, &blob, &blen);
	free(both);
	if (rc < 0 || cur == NULL) {
		free(blob);
		return rc;
	}
	return hand_back(blob, blen, cur, cur_len);
}

int
world_kv_del(struct world *w, const char *key)
{
	json_t *res = NULL;
	int deleted = 0;
	int rc = wr_regcall_run(w, wr_regproto_key(WR_OP_KV_DEL, key),
				NULL, 0, 0, &res, NULL, NULL);

	if (rc == 0 && json_unpack(res, "{s:b}", "deleted", &deleted) < 0) {
		rc = WORLD_EPROTO;
	}
	json_decref(res);
	return rc == 0 && !deleted ? -ENOENT : rc;
}

int
world_kv_count(struct world *w, int64_t *n)
{
	json_t *res = NULL;
	json_int_t count = 0;
	int rc = wr_regcall_run(w, wr_regproto_op(WR_OP_KV_COUNT), NULL, 0, 0,
				&res, NULL, NULL);

	if (rc == 0 && json_unpack(res, "{s:I}", "count", &count) < 0) {
		rc = WORLD_EPROTO;
	}
	if (rc == 0) {
		*n = count;
	}
	json_decref(res);
	return rc;
}

int
world_kv_check(struct world *w, const char *const *keys, size_t n, bool *all)
{
	json_t *res = NULL;
	int present = 0;
	int rc = wr_regcall_run(w, wr_regproto_keys(WR_OP_KV_CHECK, keys_new(keys, n)),
				NULL, 0, 0, &res, NULL, NULL);

	if (rc == 0 && json_unpack(res, "{s:b}", "present", &present) < 0) {
		rc = WORLD_EPROTO;
	}
	if (rc == 0) {
		*all = present;
	}
	json_decref(res);
	return rc;
}

int
world_kv_wait(struct world *w, const char *const *keys, size_t n, int timeout_ms)
{
	struct wr_wait rec = { .kind = WR_WAIT_KV_WAIT, .keys = keys, .nkeys = n,
			       .peer = -1 };

	return wr_regcall_run_as(w, &rec, wr_regproto_keys(WR_OP_KV_WAIT, keys_new(keys, n)),
				 timeout_ms, NULL, NULL, NULL);
}
