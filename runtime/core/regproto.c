/* SPDX-License-Identifier: MIT */
#include "regproto.h"

json_t *
wr_regproto_op(const char *op)
{
	return json_pack("{s:s}", "op", op);
}

json_t *
wr_regproto_fail(int status, const char *why)
{
	return json_pack("{s:s, s:i, s:s}", "op", WR_OP_FAIL, "status", status, "why", why);
}

json_t *
wr_regproto_key(const char *op, const char *key)
{
	return json_pack("{s:s, s:s}", "op", op, "key", key);
}

json_t *
wr_regproto_kv_add(const char *key, long long delta)
{
	return json_pack("{s:s, s:s, s:I}", "op", WR_OP_KV_ADD, "key", key, "delta",
			 (json_int_t)delta);
}

json_t *
wr_regproto_kv_cas(const char *key, size_t expected_len)
{
	return json_pack("{s:s, s:s, s:I}", "op", WR_OP_KV_CAS, "key", key,
			 "expected_len", (json_int_t)expected_len);
}

json_t *
wr_regproto_keys(const char *op, json_t *keys_new)
{
	return json_pack("{s:s, s:o}", "op", op, "keys", keys_new);
}

json_t *
wr_regproto_kv_mset(json_t *keys_new, json_t *lens_new)
{
	return json_pack("{s:s, s:o, s:o}", "op", WR_OP_KV_MSET, "keys", keys_new,
			 "lens", lens_new);
}

json_t *
wr_regproto_barrier(const char *name, json_t *members_new)
{
	return members_new != NULL
		? json_pack("{s:s, s:s, s:o}", "op", WR_OP_BARRIER, "name", name,
			    "members", members_new)
		: json_pack("{s:s, s:s}", "op", WR_OP_BARRIER, "name", name);
}

json_t *
wr_regproto_barrier_as(const char *name, json_t *members_new, int rank)
{
	json_t *req = wr_regproto_barrier(name, members_new);

	if (req != NULL && json_object_set_new(req, "as", json_integer(rank)) < 0) {
		json_decref(req);
		return NULL;
	}
	return req;
}

json_t *
wr_regproto_stop(json_t *colls_new)
{
	return json_pack("{s:s, s:s, s:o}", "op", WR_OP_BARRIER, "name", WR_STOP_BARRIER,
			 "colls", colls_new);
}

json_t *
wr_regproto_group(const char *op, const char *group)
{
	return json_pack("{s:s, s:s}", "op", op, "group", group);
}

json_t *
wr_regproto_group_join(const char *group, json_t *members_new, bool coll)
{
	return json_pack("{s:s, s:s, s:o, s:b}", "op", WR_OP_GROUP_JOIN, "group", group,
			 "members", members_new, "coll", coll);
}

json_t *
wr_regproto_lut(const char *op, const char *table, const char *group, const char *key)
{
	return json_pack("{s:s, s:s, s:s, s:s}", "op", op, "table", table, "group", group,
			 "key", key);
}

json_t *
wr_regproto_ranks(long long from)
{
	return json_pack("{s:s, s:I}", "op", WR_OP_RANKS, "from", (json_int_t)from);
}

json_t *
wr_regproto_deaths_wait(long long seen)
{
	return json_pack("{s:s, s:I}", "op", WR_OP_DEATHS_WAIT, "seen", (json_int_t)seen);
}

json_t *
wr_regproto_timeout(json_t *req_new, long long timeout_ms)
{
	if (req_new != NULL &&
	    json_object_set_new(req_new, "timeout_ms", json_integer(timeout_ms)) < 0) {
		json_decref(req_new);
		return NULL;
	}
	return req_new;
}

json_t *
wr_regproto_id(json_t *req_new, long long id)
{
	if (req_new != NULL && id >= 0 &&
	    json_object_set_new(req_new, "id", json_integer(id)) < 0) {
		json_decref(req_new);
		return NULL;
	}
	return req_new;
}
