/* SPDX-License-Identifier: MIT */
/*
 * kvops: the registry's key/value requests (kv.*), TCPStore's operations,
 * each with its schema as the json_unpack format it checks. Values always
 * travel as the frame's blob, so they may hold any bytes. The dispatch and
 * what handlers share are in ops.c.
 */
#include "kvops.h"
#include "regproto.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "world_errors.h"

static int
start_kv_wait(struct wr_regwait *w, wr_reg_wait_cb *cb, void *arg,
	      struct wr_reg_wait **cw)
{
	return wr_reg_kv_wait(w->reg, w->str, w->n, w->rank, cb, arg, cw);
}

/*
 * The values of @d's first keys, concatenated into one blob, lengths
 * apart: as many as fit in one answer (WORLD_BLOB_MAX for the values,
 * WORLD_MSG_MAX for their lengths, "18446744073709551615," each). When
 * not all fit, "next" is the first key left out: the client asks again
 * for the rest. A value fits alone, being no larger than a blob may be.
 */
static void
done_mget(struct wr_regwait *w, struct wr_regconn *c, json_int_t id)
{
	size_t room = (wr_regconn_msg_max(c) - 256) / 21, total = 0, at = 0, n = 0;
	json_t *lens = json_array(), *result;
	char *blob;

	for (; n < w->n && n < room; n++) {
		const void *v;
		size_t len = 0;

		if (wr_reg_kv_get(w->reg, w->str[n], &v, &len) < 0) {
			json_decref(lens);
			wr_regconn_fail(c, id, -ENOENT, -1, "a key went away");
			return;
		}
		if (n > 0 && len > wr_regconn_blob_max(c) - total) {
			break;
		}
		total += len;
		json_array_append_new(lens, json_integer((json_int_t)len));
	}
	blob = malloc(total ? total : 1);
	for (size_t i = 0; blob != NULL && i < n; i++) {
		const void *v;
		size_t len;

		wr_reg_kv_get(w->reg, w->str[i], &v, &len);
		memcpy(blob + at, v, len);
		at += len;
	}
	result = json_pack("{s:o}", "lens", lens);
	if (blob == NULL || result == NULL) {
		free(blob);
		json_decref(result);
		wr_regconn_fail(c, id, -ENOMEM, -1, NULL);
		return;
	}
	if (n < w->n) {
		json_object_set_new(result, "next", json_integer((json_int_t)n));
	}
	wr_regconn_reply(c, id, result, blob, total);
	free(blob);
}

/*
 * A value: its bytes go out without a copy, so that many gets of a large
 * value, unread, cost its size once (and the link reads no more of a
 * client whose answers are over its bound).
 */
static int
reply_value(struct wr_regconn *c, json_int_t id, struct wr_reg *reg, const char *key)
{
	const void *v;
	size_t len;
	void *hold;
	int rc = wr_reg_kv_hold(reg, key, &v, &len, &hold);

	if (rc == 0) {
		wr_regconn_reply_held(c, id, v, len, hold);
	}
	return rc;
}

static void
done_get(struct wr_regwait *w, struct wr_regconn *c, json_int_t id)
{
	if (reply_value(c, id, w->reg, w->str[0]) < 0) {
		wr_regconn_fail(c, id, -ENOENT, -1, "the key went away");
	}
}

/* Wait for @n keys, then answer with @done; timeout 0: answer now. */
static void
wait_keys(struct wr_regreq *rq, const char *const *keys, size_t n,
	  int64_t timeout_ms, wr_regwait_done_fn *done)
{
	struct wr_regwait *w;

	if (timeout_ms == 0 && !wr_reg_kv_check(rq->reg, keys, n)) {
		wr_regconn_fail(rq->conn, rq->id, -ENOENT, -1, NULL);
		return;
	}
	w = wr_regops_wait_create(rq, start_kv_wait, done, timeout_ms, keys, n);
	if (w == NULL) {
		wr_regconn_fail(rq->conn, rq->id, -ENOMEM, -1, NULL);
		return;
	}
	wr_regconn_wait(rq, w);
}

typedef int store_fn(struct wr_reg *reg, const char *key, const void *val,
		     size_t len);

/* Answer a store, saying which limit refused it. */
static void
answer_store(struct wr_regreq *rq, int rc, json_t *result_new)
{
	if (rc == -EMSGSIZE || rc == -ENOSPC) {
		json_decref(result_new);
		wr_regconn_fail(rq->conn, rq->id, rc, -1, rc == -EMSGSIZE
				? "the value would be longer than WORLD_BLOB_MAX"
				: "the key/value space is full (WORLD_KV_MAX)");
		return;
	}
	wr_regops_answer(rq, rc, result_new);
}

/* {key}: store the blob with @store (set or append); answer {}. */
static void
store_op(struct wr_regreq *rq, store_fn *store)
{
	const char *key;

	if (wr_regops_check(rq, "{s:s}", "key", &key)) {
		answer_store(rq, store(rq->reg, key, rq->blob, rq->blob_len), NULL);
	}
}

static void
op_kv_set(struct wr_regreq *rq)
{
	store_op(rq, wr_reg_kv_set);
}

static void
op_kv_append(struct wr_regreq *rq)
{
	store_op(rq, wr_reg_kv_append);
}

static void
op_kv_get(struct wr_regreq *rq)
{
	json_int_t timeout = 0;
	const char *key;

	if (!wr_regops_check(rq, "{s:s, s?:I}", "key", &key, "timeout_ms", &timeout)) {
		return;
	}
	/* The common case, a key that is there, needs no wait to be set up. */
	if (timeout >= WORLD_TIMEOUT_FOREVER &&
	    reply_value(rq->conn, rq->id, rq->reg, key) == 0) {
		return;
	}
	wait_keys(rq, &key, 1, timeout, done_get);
}

/* {keys: [...], timeout_ms?}: wait for every key, then answer with @done. */
static void
keys_op(struct wr_regreq *rq, json_int_t timeout, wr_regwait_done_fn *done)
{
	const char **keys;
	json_t *a;
	size_t n;

	if (!wr_regops_check(rq, "{s:o, s?:I}", "keys", &a, "timeout_ms", &timeout)) {
		return;
	}
	keys = wr_regops_strings(rq, a, &n);
	if (keys != NULL) {
		wait_keys(rq, keys, n, timeout, done);
		free(keys);
	}
}

static void
op_kv_wait(struct wr_regreq *rq)
{
	keys_op(rq, WORLD_TIMEOUT_DEFAULT, NULL);
}

static void
op_kv_mget(struct wr_regreq *rq)
{
	keys_op(rq, 0, done_mget);
}

static void
op_kv_mset(struct wr_regreq *rq)
{
	const char **keys;
	json_t *a, *lens;
	size_t n, at = 0;
	int rc = 0;

	if (!wr_regops_check(rq, "{s:o, s:o}", "keys", &a, "lens", &lens)) {
		return;
	}
	keys = wr_regops_strings(rq, a, &n);
	if (keys == NULL) {
		return;
	}
	/* Check every length first, so that a bad request sets nothing. */
	for (size_t i = 0; i < n && rc == 0; i++) {
		json_t *l = json_array_get(lens, i);

		if (!json_is_integer(l) || json_integer_value(l) < 0 ||
		    (size_t)json_integer_value(l) > rq->blob_len - at) {
			rc = WORLD_EPROTO;
		} else {
			at += (size_t)json_integer_value(l);
		}
	}
	if (rc == 0 && (json_array_size(lens) != n || at != rq->blob_len)) {
		rc = WORLD_EPROTO;
	}
	if (rc == WORLD_EPROTO) {
		free(keys);
		wr_regops_bad(rq, "lens must give one length per key, summing to the blob");
		return;
	}
	for (size_t i = 0, off = 0; i < n && rc == 0; i++) {
		size_t len = (size_t)json_integer_value(json_array_get(lens, i));

		rc = wr_reg_kv_set(rq->reg, keys[i], (const char *)rq->blob + off, len);
		off += len;
	}
	free(keys);
	answer_store(rq, rc, NULL);
}

static void
op_kv_add(struct wr_regreq *rq)
{
	json_int_t delta;
	const char *key;
	int64_t value = 0;
	int rc;

	if (wr_regops_check(rq, "{s:s, s:I}", "key", &key, "delta", &delta)) {
		rc = wr_reg_kv_add(rq->reg, key, delta, &value);
		answer_store(rq, rc, json_pack("{s:I}", "value", (json_int_t)value));
	}
}

static void
op_kv_cas(struct wr_regreq *rq)
{
	json_int_t exp_len;
	const char *key;
	const void *cur;
	size_t cur_len;
	int rc;

	if (!wr_regops_check(rq, "{s:s, s:I}", "key", &key, "expected_len", &exp_len)) {
		return;
	}
	if (exp_len < 0 || (size_t)exp_len > rq->blob_len) {
		wr_regops_bad(rq, "expected_len is beyond the blob");
		return;
	}
	rc = wr_reg_kv_cas(rq->reg, key, rq->blob, (size_t)exp_len,
			   (const char *)rq->blob + exp_len,
			   rq->blob_len - (size_t)exp_len, &cur, &cur_len);
	if (rc < 0) {
		answer_store(rq, rc, NULL);
		return;
	}
	wr_regconn_reply(rq->conn, rq->id, NULL, cur, cur_len);
}

static void
op_kv_del(struct wr_regreq *rq)
{
	const char *key;

	if (wr_regops_check(rq, "{s:s}", "key", &key)) {
		int rc = wr_reg_kv_del(rq->reg, key);

		wr_regops_answer(rq, rc == -ENOENT ? 0 : rc,
				 json_pack("{s:b}", "deleted", rc == 0));
	}
}

static void
op_kv_count(struct wr_regreq *rq)
{
	wr_regops_answer(rq, 0, json_pack("{s:I}", "count",
			 (json_int_t)wr_reg_kv_count(rq->reg)));
}

static void
op_kv_check(struct wr_regreq *rq)
{
	const char **keys;
	json_t *a;
	size_t n;

	if (!wr_regops_check(rq, "{s:o}", "keys", &a)) {
		return;
	}
	keys = wr_regops_strings(rq, a, &n);
	if (keys != NULL) {
		wr_regops_answer(rq, 0, json_pack("{s:b}", "present",
				 wr_reg_kv_check(rq->reg, keys, n)));
		free(keys);
	}
}

const struct wr_regop wr_kvops_table[] = {
	{ WR_OP_KV_ADD, op_kv_add },
	{ WR_OP_KV_APPEND, op_kv_append },
	{ WR_OP_KV_CAS, op_kv_cas },
	{ WR_OP_KV_CHECK, op_kv_check },
	{ WR_OP_KV_COUNT, op_kv_count },
	{ WR_OP_KV_DEL, op_kv_del },
	{ WR_OP_KV_GET, op_kv_get },
	{ WR_OP_KV_MGET, op_kv_mget },
	{ WR_OP_KV_MSET, op_kv_mset },
	{ WR_OP_KV_SET, op_kv_set },
	{ WR_OP_KV_WAIT, op_kv_wait },
};

const size_t wr_kvops_count = sizeof(wr_kvops_table) / sizeof(wr_kvops_table[0]);
