/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for regproto: each builder makes the request the registry
 * checks (its fields, compact), stolen arguments are owned by the
 * request (refcounts), a timeout is added or the request released, and
 * every key/value name a client uses is one the registry's table serves.
 */
#include "kvops.h"
#include "regproto.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

/* @req (released) as compact JSON with sorted keys, in @buf. */
static const char *
text(json_t *req, char buf[256])
{
	char *s = req != NULL ? json_dumps(req, JSON_COMPACT | JSON_SORT_KEYS) : NULL;

	snprintf(buf, 256, "%s", s != NULL ? s : "(null)");
	free(s);
	json_decref(req);
	return buf;
}

static bool
served(const char *op)
{
	for (size_t i = 0; i < wr_kvops_count; i++) {
		if (strcmp(wr_kvops_table[i].name, op) == 0) {
			return true;
		}
	}
	return false;
}

int
main(void)
{
	const char *kv[] = { WR_OP_KV_ADD, WR_OP_KV_APPEND, WR_OP_KV_CAS, WR_OP_KV_CHECK,
			     WR_OP_KV_COUNT, WR_OP_KV_DEL, WR_OP_KV_GET, WR_OP_KV_MGET,
			     WR_OP_KV_MSET, WR_OP_KV_SET, WR_OP_KV_WAIT };
	json_t *members = json_pack("[i, i]", 0, 2);
	json_t *req;
	char b[256];
	bool all = true;

	plan(20);
	is_str(text(wr_regproto_key(WR_OP_KV_SET, "k"), b), "{\"key\":\"k\",\"op\":\"kv.set\"}",
	       "a key request");
	is_str(text(wr_regproto_kv_add("n", -3), b), "{\"delta\":-3,\"key\":\"n\",\"op\":\"kv.add\"}",
	       "kv.add carries its delta");
	is_str(text(wr_regproto_kv_cas("k", 5), b),
	       "{\"expected_len\":5,\"key\":\"k\",\"op\":\"kv.cas\"}", "kv.cas its expected length");
	is_str(text(wr_regproto_keys(WR_OP_KV_MGET, json_pack("[s]", "a")), b),
	       "{\"keys\":[\"a\"],\"op\":\"kv.mget\"}", "a keys request");
	is_str(text(wr_regproto_kv_mset(json_pack("[s]", "a"), json_pack("[i]", 1)), b),
	       "{\"keys\":[\"a\"],\"lens\":[1],\"op\":\"kv.mset\"}", "kv.mset with the lengths");
	is_str(text(wr_regproto_barrier("b", NULL), b), "{\"name\":\"b\",\"op\":\"barrier\"}",
	       "a barrier of the whole job names no members");
	json_incref(members);
	is_str(text(wr_regproto_barrier("b", members), b),
	       "{\"members\":[0,2],\"name\":\"b\",\"op\":\"barrier\"}", "a barrier of some");
	is_int((long long)members->refcount, 1, "the members went to the request, and with it");
	json_decref(members);
	is_str(text(wr_regproto_barrier_as("pmi/j", NULL, 5), b),
	       "{\"as\":5,\"name\":\"pmi/j\",\"op\":\"barrier\"}", "a barrier entered for a rank");
	is_str(text(wr_regproto_barrier_as("pmix/j", json_pack("[i,i]", 1, 5), 5), b),
	       "{\"as\":5,\"members\":[1,5],\"name\":\"pmix/j\",\"op\":\"barrier\"}",
	       "a barrier of some entered for one of them");
	is_str(text(wr_regproto_stop(json_pack("{s:i}", "7", 3)), b),
	       "{\"colls\":{\"7\":3},\"name\":\"world.stop\",\"op\":\"barrier\"}",
	       "the stop barrier says how far each collective group got");
	is_str(text(wr_regproto_group_join("g", json_pack("[i]", 1), true), b),
	       "{\"coll\":true,\"group\":\"g\",\"members\":[1],\"op\":\"group.join\"}",
	       "group.join of a collective group");
	is_str(text(wr_regproto_lut(WR_OP_LUT_WAIT, "v", "g", "k"), b),
	       "{\"group\":\"g\",\"key\":\"k\",\"op\":\"lut.wait\",\"table\":\"v\"}",
	       "a lookup-table request");
	is_str(text(wr_regproto_timeout(wr_regproto_key(WR_OP_KV_GET, "k"), -1), b),
	       "{\"key\":\"k\",\"op\":\"kv.get\",\"timeout_ms\":-1}", "a timeout, -1 included");
	ok(wr_regproto_timeout(NULL, 5) == NULL, "no request, no timeout");
	is_str(text(wr_regproto_id(wr_regproto_deaths_wait(3), 9), b),
	       "{\"id\":9,\"op\":\"deaths.wait\",\"seen\":3}", "an id added, to deaths.wait");
	is_str(text(wr_regproto_id(wr_regproto_op(WR_OP_LEASE), -1), b),
	       "{\"op\":\"lease\"}", "a negative id adds none");
	ok(wr_regproto_id(NULL, 5) == NULL, "no request, no id");
	req = wr_regproto_ranks(7);
	is_str(text(req, b), "{\"from\":7,\"op\":\"ranks\"}", "ranks from a rank on");
	for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++) {
		all = all && served(kv[i]);
	}
	ok(all, "the registry serves every key/value request by its name");
	return 0;
}
