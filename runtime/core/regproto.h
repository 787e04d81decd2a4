/* SPDX-License-Identifier: MIT */
/*
 * regproto: the registry protocol's one home: the name of every request,
 * and a builder for each but the handshake's (hello and proof, which
 * greet.h builds for every server of the job), so that libworld, worldctl
 * and the agents' PMI servers ask in the same words, and the registry's
 * tables answer to the same names. A builder returns a new reference
 * (NULL without memory); the wire's "id" is the caller's to add
 * (wr_regproto_id), as are blobs (a value is the frame's blob) and
 * "timeout_ms" (wr_regproto_timeout). The registry checks each request
 * against its schema (registry/ops.c, kvops.c).
 */
#ifndef WR_REGPROTO_H
#define WR_REGPROTO_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/* The handshake and the link's own. */
#define WR_OP_HELLO "hello"
#define WR_OP_PROOF "proof"
#define WR_OP_LEASE "lease"
#define WR_OP_GOODBYE "goodbye"
#define WR_OP_FAIL "fail"

/* The barrier of every rank that world_stop() waits in: a rank there is
 * stopping, and will enter no other barrier (the registry acts on it). */
#define WR_STOP_BARRIER "world.stop"

/* The key where rank N keeps the name it goes by (libworld's names.c);
 * the registry's reports show it. */
#define WR_NAME_KEY "world.name.%d"
/* The key/value space (TCPStore's operations). */
#define WR_OP_KV_ADD "kv.add"
#define WR_OP_KV_APPEND "kv.append"
#define WR_OP_KV_CAS "kv.cas"
#define WR_OP_KV_CHECK "kv.check"
#define WR_OP_KV_COUNT "kv.count"
#define WR_OP_KV_DEL "kv.del"
#define WR_OP_KV_GET "kv.get"
#define WR_OP_KV_MGET "kv.mget"
#define WR_OP_KV_MSET "kv.mset"
#define WR_OP_KV_SET "kv.set"
#define WR_OP_KV_WAIT "kv.wait"
/* The lookup table, groups, barriers and liveness. */
#define WR_OP_LUT_CLAIM "lut.claim"
#define WR_OP_LUT_LOOKUP "lut.lookup"
#define WR_OP_LUT_RELEASE "lut.release"
#define WR_OP_LUT_WAIT "lut.wait"
#define WR_OP_GROUP_JOIN "group.join"
#define WR_OP_GROUP_LEAVE "group.leave"
#define WR_OP_GROUP_MEMBERS "group.members"
#define WR_OP_BARRIER "barrier"
#define WR_OP_RANKS "ranks"
#define WR_OP_DEATHS_WAIT "deaths.wait"
/* What the job is doing; "waits" is the registry's question to a rank. */
#define WR_OP_STATS "stats"
#define WR_OP_STATUS "status"
#define WR_OP_WAITS "waits"

/* {"op": @op}: kv.count, stats, status, lease, goodbye. */
json_t *wr_regproto_op(const char *op);

/* {"op": @op, "key": @key}: kv.set, kv.append (value in the blob),
 * kv.get, kv.del. */
json_t *wr_regproto_key(const char *op, const char *key);

/* kv.add of @delta to the counter @key; the answer is {"value": N}. */
json_t *wr_regproto_kv_add(const char *key, long long delta);

/* kv.cas: the blob is the expected value (@expected_len bytes), then the
 * desired one. */
json_t *wr_regproto_kv_cas(const char *key, size_t expected_len);

/* {"op": @op, "keys": @keys_new}: kv.check, kv.wait, kv.mget. */
json_t *wr_regproto_keys(const char *op, json_t *keys_new);

/* kv.mset: the values one after another in the blob, @lens_new their
 * lengths, in the order of @keys_new. */
json_t *wr_regproto_kv_mset(json_t *keys_new, json_t *lens_new);

/* barrier @name among @members_new (an array of ranks), or, with NULL,
 * every rank of the job. */
json_t *wr_regproto_barrier(const char *name, json_t *members_new);

/* The same barrier entered for @rank by a tool that acts for another
 * (a host's PMI servers, for each of its ranks). */
json_t *wr_regproto_barrier_as(const char *name, json_t *members_new, int rank);

/* The stop barrier (WR_STOP_BARRIER), saying @colls_new: {"<collective
 * group id>": operations started, ...}, which the others' deaths watches
 * hear, so that they wait for no operation this rank never started. */
json_t *wr_regproto_stop(json_t *colls_new);

/* {"op": @op, "group": @group}: group.leave, group.members. */
json_t *wr_regproto_group(const char *op, const char *group);

/* group.join of @group with @members_new; @coll: a collective group. */
json_t *wr_regproto_group_join(const char *group, json_t *members_new, bool coll);

/* lut.claim, lut.release, lut.lookup, lut.wait of (@group, @key) in @table. */
json_t *wr_regproto_lut(const char *op, const char *table, const char *group,
			const char *key);

/* ranks, from rank @from on. */
json_t *wr_regproto_ranks(long long from);

/* fail: this rank has failed and ends with exit status @status (1-255),
 * for the reason @why (at most WR_FAIL_WHY_MAX bytes). */
#define WR_FAIL_WHY_MAX 200
json_t *wr_regproto_fail(int status, const char *why);

/* deaths.wait for a death beyond the @seen already known. */
json_t *wr_regproto_deaths_wait(long long seen);

/* Add "timeout_ms" (-1: the job's default wait) to @req_new and return
 * it; without memory, release it and return NULL. Accepts NULL. */
json_t *wr_regproto_timeout(json_t *req_new, long long timeout_ms);

/* The same for "id" @id, for a caller that numbers its requests itself;
 * a negative @id adds none. */
json_t *wr_regproto_id(json_t *req_new, long long id);

#endif
