/* SPDX-License-Identifier: MIT */
/*
 * ops: the registry's requests, one handler each, and each request's
 * schema as the json_unpack format its handler checks it with: the
 * dispatch, what handlers share, and every request but the key/value
 * ones (kvops.c). Timeouts are "timeout_ms" as in world.h; a request that
 * may wait and gives none does not wait.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "kvops.h"
#include "ops.h"
#include "regproto.h"
#include "world_errors.h"

#define MAX_KEYS 4096

void
wr_regops_bad(struct wr_regreq *rq, const char *why)
{
	wr_regconn_fail(rq->conn, rq->id, WORLD_EPROTO, -1, why);
	wr_regconn_abort(rq->conn);
}

bool
wr_regops_check(struct wr_regreq *rq, const char *fmt, ...)
{
	json_error_t jerr;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = json_vunpack_ex(rq->msg, &jerr, 0, fmt, ap);
	va_end(ap);
	if (rc < 0) {
		wr_regops_bad(rq, jerr.text);
		return false;
	}
	return true;
}

void
wr_regops_answer(struct wr_regreq *rq, int rc, json_t *result_new)
{
	if (rc < 0) {
		json_decref(result_new);
		wr_regconn_fail(rq->conn, rq->id, rc, -1, NULL);
	} else {
		wr_regconn_reply(rq->conn, rq->id, result_new, NULL, 0);
	}
}

const char **
wr_regops_strings(struct wr_regreq *rq, json_t *a, size_t *n)
{
	const char **v;

	*n = json_array_size(a);
	if (*n == 0 || *n > MAX_KEYS) {
		wr_regops_bad(rq, "expected 1 to 4096 keys");
		return NULL;
	}
	v = calloc(*n, sizeof(*v));
	for (size_t i = 0; v != NULL && i < *n; i++) {
		v[i] = json_string_value(json_array_get(a, i));
		if (v[i] == NULL) {
			wr_regops_bad(rq, "keys must be strings");
			free(v);
			return NULL;
		}
	}
	if (v == NULL) {
		wr_regconn_fail(rq->conn, rq->id, -ENOMEM, -1, NULL);
	}
	return v;
}

/* The ranks of array @a, or NULL after answering. An empty array is NULL
 * with *n 0 and no answer (meaning: every rank). */
static int *
ranks_of(struct wr_regreq *rq, json_t *a, size_t *n, bool *bad)
{
	int *v;

	*bad = false;
	*n = json_array_size(a);
	if (a != NULL && !json_is_array(a)) {
		wr_regops_bad(rq, "members must be an array of ranks");
		*bad = true;
		return NULL;
	}
	if (*n == 0) {
		return NULL;
	}
	v = calloc(*n, sizeof(*v));
	for (size_t i = 0; v != NULL && i < *n; i++) {
		json_t *r = json_array_get(a, i);

		if (!json_is_integer(r) || json_integer_value(r) < 0 ||
		    json_integer_value(r) >= wr_reg_nranks(rq->reg)) {
			wr_regops_bad(rq, "members must be ranks of the job");
			free(v);
			*bad = true;
			return NULL;
		}
		v[i] = (int)json_integer_value(r);
	}
	if (v == NULL) {
		wr_regconn_fail(rq->conn, rq->id, -ENOMEM, -1, NULL);
		*bad = true;
	}
	return v;
}

static bool
table_of(struct wr_regreq *rq, const char *name, enum wr_reg_table *t)
{
	if (strcmp(name, "values") == 0 || strcmp(name, "services") == 0) {
		*t = name[0] == 'v' ? WR_REG_VALUES : WR_REG_SERVICES;
		return true;
	}
	wr_regops_bad(rq, "table must be values or services");
	return false;
}

/* ---- waits ---- */

struct wr_regwait *
wr_regops_wait_create(const struct wr_regreq *rq, wr_regwait_start_fn *start,
		      wr_regwait_done_fn *done, int64_t timeout_ms,
		      const char *const *strs, size_t n)
{
	size_t bytes = sizeof(struct wr_regwait) + n * sizeof(char *);
	struct wr_regwait *w;
	char *p;

	for (size_t i = 0; i < n; i++) {
		bytes += strlen(strs[i]) + 1;
	}
	w = calloc(1, bytes);
	if (w == NULL) {
		return NULL;
	}
	w->start = start;
	w->done = done;
	w->timeout_ms = timeout_ms;
	w->reg = rq->reg;
	w->rank = rq->rank;
	w->bytes = bytes;
	w->n = n;
	p = (char *)&w->str[n];
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(strs[i]) + 1;

		memcpy(p, strs[i], len);
		w->str[i] = p;
		p += len;
	}
	return w;
}

/* ---- the lookup table ---- */

/* Checks {table, group, key}; false after answering. */
static bool
check_entry(struct wr_regreq *rq, enum wr_reg_table *t, const char **group,
	    const char **key, json_int_t *timeout)
{
	const char *table;

	return wr_regops_check(rq, "{s:s, s:s, s:s, s?:I}", "table", &table, "group", group,
			       "key", key, "timeout_ms", timeout) &&
	       table_of(rq, table, t);
}

enum lut_action { LUT_CLAIM, LUT_RELEASE, LUT_LOOKUP };

static void
lut_entry(struct wr_regreq *rq, enum lut_action action)
{
	const char *group, *key;
	enum wr_reg_table t;
	json_int_t timeout = 0;
	int owner = -1, rc;

	if (!check_entry(rq, &t, &group, &key, &timeout)) {
		return;
	}
	switch (action) {
	case LUT_CLAIM:
		wr_regops_answer(rq, wr_reg_lut_claim(rq->reg, t, group, key, rq->rank),
				 NULL);
		return;
	case LUT_RELEASE:
		wr_regops_answer(rq, wr_reg_lut_release(rq->reg, t, group, key, rq->rank),
				 NULL);
		return;
	case LUT_LOOKUP:
		rc = wr_reg_lut_lookup(rq->reg, t, group, key, &owner);
		wr_regops_answer(rq, rc, json_pack("{s:i}", "owner", owner));
		return;
	}
}

static void
op_lut_claim(struct wr_regreq *rq)
{
	lut_entry(rq, LUT_CLAIM);
}

static void
op_lut_release(struct wr_regreq *rq)
{
	lut_entry(rq, LUT_RELEASE);
}

static void
op_lut_lookup(struct wr_regreq *rq)
{
	lut_entry(rq, LUT_LOOKUP);
}

static int
start_lut_wait(struct wr_regwait *w, wr_reg_wait_cb *cb, void *arg,
	       struct wr_reg_wait **cw)
{
	return wr_reg_lut_wait(w->reg, w->table, w->str[0], w->str[1], w->rank,
			       cb, arg, cw);
}

static void
done_lut(struct wr_regwait *w, struct wr_regconn *c, json_int_t id)
{
	int owner = -1;

	if (wr_reg_lut_lookup(w->reg, w->table, w->str[0], w->str[1], &owner) < 0) {
		wr_regconn_fail(c, id, -ENOENT, -1, "the entry went away");
		return;
	}
	wr_regconn_reply(c, id, json_pack("{s:i}", "owner", owner), NULL, 0);
}

static void
op_lut_wait(struct wr_regreq *rq)
{
	json_int_t timeout = WORLD_TIMEOUT_DEFAULT;
	const char *gk[2];
	enum wr_reg_table t;
	struct wr_regwait *w;

	if (!check_entry(rq, &t, &gk[0], &gk[1], &timeout)) {
		return;
	}
	w = wr_regops_wait_create(rq, start_lut_wait, done_lut, timeout, gk, 2);
	if (w == NULL) {
		wr_regconn_fail(rq->conn, rq->id, -ENOMEM, -1, NULL);
		return;
	}
	w->table = t;
	wr_regconn_wait(rq, w);
}

/* ---- barriers and groups ---- */

/* A wait on @name among @members (valid for this call only). */
static void
start_with_members(struct wr_regreq *rq, const char *name, const int *members,
		   size_t n, int64_t timeout_ms, wr_regwait_done_fn *done,
		   wr_regwait_start_fn *start)
{
	struct wr_regwait *w = wr_regops_wait_create(rq, start, done, timeout_ms, &name, 1);

	if (w == NULL) {
		wr_regconn_fail(rq->conn, rq->id, -ENOMEM, -1, NULL);
		return;
	}
	w->members = members;
	w->nmembers = n;
	/* w may be gone when wr_regconn_wait() returns: the wait can end at once. */
	wr_regconn_wait(rq, w);
}

static int
start_barrier(struct wr_regwait *w, wr_reg_wait_cb *cb, void *arg,
	      struct wr_reg_wait **cw)
{
	return wr_reg_barrier(w->reg, w->str[0], w->members, w->nmembers, w->rank,
			      &w->gen, cb, arg, cw);
}

static void
done_barrier(struct wr_regwait *w, struct wr_regconn *c, json_int_t id)
{
	wr_regconn_reply(c, id, json_pack("{s:I}", "generation", (json_int_t)w->gen),
			 NULL, 0);
}

/*
 * A stopping rank's "colls": {"<group id>": operations started, ...},
 * kept as text for its peers' deaths watches; NULL (and the request
 * answered) when it is not that.
 */
static char *
stop_note(struct wr_regreq *rq, json_t *colls, bool *bad)
{
	const char *id;
	json_t *v;

	*bad = false;
	if (colls == NULL) {
		return NULL;
	}
	json_object_foreach(colls, id, v) {
		json_int_t n = json_integer_value(v);
		char *end;

		errno = 0;
		if (id[0] < '0' || id[0] > '9' || strtoul(id, &end, 10) > UINT32_MAX ||
		    errno != 0 ||
		    *end != '\0' || !json_is_integer(v) || n < 0 || n > UINT32_MAX) {
			*bad = true;
			wr_regops_bad(rq, "\"colls\": {\"<group id>\": operations started}");
			return NULL;
		}
	}
	return json_dumps(colls, JSON_COMPACT | JSON_SORT_KEYS);
}

static void
op_barrier(struct wr_regreq *rq)
{
	json_int_t timeout = WORLD_TIMEOUT_DEFAULT, as = rq->rank;
	json_t *members = NULL, *colls = NULL;
	const char *name;
	char *note;
	int *ranks;
	size_t n;
	bool bad;

	if (!wr_regops_check(rq, "{s:s, s?:o, s?:I, s?:I, s?:o}", "name", &name, "members",
			     &members, "timeout_ms", &timeout, "as", &as, "colls", &colls)) {
		return;
	}
	if (colls != NULL && (!json_is_object(colls) || members != NULL ||
			      strcmp(name, WR_STOP_BARRIER) != 0)) {
		wr_regops_bad(rq, "\"colls\": an object, in the stop barrier only");
		return;
	}
	/* A host's PMI server enters for each of its ranks (regproto.h). */
	if (as != rq->rank && (rq->role != WR_ROLE_TOOL || as < 0 ||
			       as >= wr_reg_nranks(rq->reg))) {
		wr_regops_bad(rq, "\"as\": a rank of the job, from a tool");
		return;
	}
	rq->rank = (int)as;
	ranks = ranks_of(rq, members, &n, &bad);
	if (bad) {
		return;
	}
	note = stop_note(rq, colls, &bad);
	if (bad) {
		free(ranks);
		return;
	}
	if (members == NULL && strcmp(name, WR_STOP_BARRIER) == 0) {
		wr_reg_rank_stopping(rq->reg, rq->rank, name, note);
	}
	free(note);
	start_with_members(rq, name, ranks, n, timeout, done_barrier, start_barrier);
	free(ranks);
}

static int
start_join(struct wr_regwait *w, wr_reg_wait_cb *cb, void *arg,
	   struct wr_reg_wait **cw)
{
	return wr_reg_group_join(w->reg, w->str[0], w->members, w->nmembers,
				 w->rank, false, cb, arg, cw);
}

static int
start_coll_join(struct wr_regwait *w, wr_reg_wait_cb *cb, void *arg,
		struct wr_reg_wait **cw)
{
	return wr_reg_group_join(w->reg, w->str[0], w->members, w->nmembers,
				 w->rank, true, cb, arg, cw);
}

/* The group is complete, so it has its id (its members are all in). */
static void
done_join(struct wr_regwait *w, struct wr_regconn *c, json_int_t id)
{
	uint32_t gid = 0;

	wr_reg_group_id(w->reg, w->str[0], &gid);
	wr_regconn_reply(c, id, json_pack("{s:I}", "id", (json_int_t)gid), NULL, 0);
}

static void
op_group_join(struct wr_regreq *rq)
{
	json_int_t timeout = WORLD_TIMEOUT_DEFAULT;
	const char *group;
	json_t *members;
	int coll = 0;
	int *ranks;
	size_t n;
	bool bad;

	if (!wr_regops_check(rq, "{s:s, s:o, s?:I, s?:b}", "group", &group, "members",
			     &members, "timeout_ms", &timeout, "coll", &coll)) {
		return;
	}
	ranks = ranks_of(rq, members, &n, &bad);
	if (!bad && ranks == NULL) {
		wr_regops_bad(rq, "a group has members");
	}
	if (ranks != NULL) {
		start_with_members(rq, group, ranks, n, timeout, done_join,
				   coll ? start_coll_join : start_join);
	}
	free(ranks);
}

static void
op_group_leave(struct wr_regreq *rq)
{
	const char *group;

	if (wr_regops_check(rq, "{s:s}", "group", &group)) {
		wr_regops_answer(rq, wr_reg_group_leave(rq->reg, group, rq->rank), NULL);
	}
}

static void
op_group_members(struct wr_regreq *rq)
{
	const char *group;
	const int *members;
	json_t *a;
	size_t n;
	int rc;

	if (!wr_regops_check(rq, "{s:s}", "group", &group)) {
		return;
	}
	rc = wr_reg_group_members(rq->reg, group, &members, &n);
	a = json_array();
	for (size_t i = 0; rc == 0 && i < n; i++) {
		json_array_append_new(a, json_integer(members[i]));
	}
	wr_regops_answer(rq, rc, json_pack("{s:o}", "members", a));
}

/* ---- ranks, stats, goodbye ---- */

/*
 * How many of @item bytes (each, written as JSON, with its comma) fit in
 * an answer: lists that grow with the job come in pages, so that no
 * answer is over WORLD_MSG_MAX however large the job.
 */
static size_t
page_of(const struct wr_regreq *rq, size_t item)
{
	size_t room = wr_regconn_msg_max(rq->conn) - 256;

	return room / item > 0 ? room / item : 1;
}

/* {from?}: {"ranks": [{rank, state}...], "next"?: the first not listed}. */
static void
op_ranks(struct wr_regreq *rq)
{
	static const char *const names[] = {
		[WR_RANK_UP] = "up", [WR_RANK_DONE] = "done", [WR_RANK_DEAD] = "dead",
	};
	json_int_t from = 0;
	json_t *a, *result;
	int size = wr_reg_size(rq->reg), end;
	size_t page = page_of(rq, 33); /* {"rank":1048575,"state":"done"}, */

	if (!wr_regops_check(rq, "{s?:I}", "from", &from)) {
		return;
	}
	if (from < 0 || from > size) {
		wr_regops_bad(rq, "from must be a rank of the job, or its size");
		return;
	}
	end = (size_t)(size - from) > page ? (int)from + (int)page : size;
	a = json_array();
	for (int r = (int)from; a != NULL && r < end; r++) {
		json_array_append_new(a, json_pack("{s:i, s:s}", "rank", r, "state",
						   names[wr_reg_rank_life(rq->reg, r)]));
	}
	result = json_pack("{s:o}", "ranks", a);
	if (result != NULL && end < size) {
		json_object_set_new(result, "next", json_integer(end));
	}
	wr_regops_answer(rq, result != NULL ? 0 : -ENOMEM, result);
}

/* ---- deaths ---- */

/* A deaths wait keeps how many deaths its caller has seen as gen. */
static int
start_deaths_wait(struct wr_regwait *w, wr_reg_wait_cb *cb, void *arg,
		  struct wr_reg_wait **cw)
{
	return wr_reg_deaths_wait(w->reg, (int)w->gen, w->rank, cb, arg, cw);
}

/* A stopping rank as its peers learn it: {"rank", "colls"?}; its note
 * only if it fits in @room, which it then shrinks. */
static json_t *
stopping_entry(const struct wr_reg *reg, int rank, size_t *room)
{
	const char *note = wr_reg_stop_note(reg, rank);
	json_t *colls = note != NULL && strlen(note) + 16 <= *room
		? json_loads(note, 0, NULL) : NULL;

	*room -= colls != NULL ? strlen(note) + 16 : 0;
	return colls != NULL ? json_pack("{s:i, s:o}", "rank", rank, "colls", colls)
			     : json_pack("{s:i}", "rank", rank);
}

/*
 * {"dead": [...], "left": [...], "stopping": [{"rank", "colls"?}...]}:
 * the losses after the first "seen", a page of them (a rank takes
 * "1048575," of it, a stopping rank ',{"rank":1048575}' and its note):
 * the caller counts them all and asks again for more.
 */
static void
done_deaths(struct wr_regwait *w, struct wr_regconn *c, json_int_t id)
{
	const int *order;
	const enum wr_loss *kind;
	int n = wr_reg_losses(w->reg, &order, &kind);
	size_t room = wr_regconn_msg_max(c) - 256;
	json_t *dead = json_array(), *gone = json_array(), *stopping = json_array();

	for (int i = (int)w->gen; dead != NULL && gone != NULL && stopping != NULL &&
	     i < n && room >= 24; i++) {
		if (kind[i] == WR_LOSS_STOPPING) {
			room -= 24;
			json_array_append_new(stopping, stopping_entry(w->reg, order[i], &room));
		} else {
			room -= 8;
			json_array_append_new(kind[i] == WR_LOSS_LEFT ? gone : dead,
					      json_integer(order[i]));
		}
	}
	wr_regconn_reply(c, id, json_pack("{s:o, s:o, s:o}", "dead", dead, "left", gone,
					  "stopping", stopping), NULL, 0);
}

/* Answered once more than "seen" ranks are lost (died or left): a standing watch. */
static void
op_deaths_wait(struct wr_regreq *rq)
{
	json_int_t seen = 0, timeout = WORLD_TIMEOUT_FOREVER;
	struct wr_regwait *w;

	if (!wr_regops_check(rq, "{s:I, s?:I}", "seen", &seen, "timeout_ms", &timeout)) {
		return;
	}
	if (seen < 0 || seen > INT_MAX) {
		wr_regops_bad(rq, "seen must be a count of deaths, >= 0");
		return;
	}
	w = wr_regops_wait_create(rq, start_deaths_wait, done_deaths, timeout, NULL, 0);
	if (w == NULL) {
		wr_regconn_fail(rq->conn, rq->id, -ENOMEM, -1, NULL);
		return;
	}
	w->gen = (uint64_t)seen;
	wr_regconn_wait(rq, w);
}

static void
op_stats(struct wr_regreq *rq)
{
	json_t *st = wr_regconn_stats_new(rq->conn);

	if (st != NULL) {
		json_object_set_new(st, "keys",
				    json_integer((json_int_t)wr_reg_kv_count(rq->reg)));
		json_object_set_new(st, "entries", json_integer((json_int_t)
				    wr_reg_lut_count(rq->reg, rq->rank)));
	}
	wr_regops_answer(rq, st != NULL ? 0 : -ENOMEM, st);
}

static void
op_goodbye(struct wr_regreq *rq)
{
	if (rq->role == WR_ROLE_RANK) {
		wr_regconn_goodbye(rq->conn);
		wr_reg_rank_done(rq->reg, rq->rank);
	}
	wr_regops_answer(rq, 0, NULL);
}

/* A rank that failed says so before it exits (world_fail): its host
 * learns who failed first, whatever order the processes end in. */
static void
op_fail(struct wr_regreq *rq)
{
	json_int_t status;
	const char *why;

	if (!wr_regops_check(rq, "{s:I, s:s}", "status", &status, "why", &why)) {
		return;
	}
	if (status < 1 || status > 255 || strlen(why) > WR_FAIL_WHY_MAX) {
		wr_regops_bad(rq, "fail takes a status from 1 to 255 and a reason of "
			      "at most 200 bytes");
		return;
	}
	if (rq->role != WR_ROLE_RANK) {
		wr_regconn_fail(rq->conn, rq->id, -EPERM, -1,
				"only a rank itself may say that it failed");
		return;
	}
	wr_regops_answer(rq, 0, NULL);
	wr_regconn_failed(rq->conn, (int)status, why);
}

static void
op_lease(struct wr_regreq *rq)
{
	wr_regops_answer(rq, 0, NULL); /* receiving it renewed the lease already */
}

static const struct wr_regop ops[] = {
	{ WR_OP_BARRIER, op_barrier },
	{ WR_OP_DEATHS_WAIT, op_deaths_wait },
	{ WR_OP_FAIL, op_fail },
	{ WR_OP_GOODBYE, op_goodbye },
	{ WR_OP_GROUP_JOIN, op_group_join },
	{ WR_OP_GROUP_LEAVE, op_group_leave },
	{ WR_OP_GROUP_MEMBERS, op_group_members },
	{ WR_OP_LEASE, op_lease },
	{ WR_OP_LUT_CLAIM, op_lut_claim },
	{ WR_OP_LUT_LOOKUP, op_lut_lookup },
	{ WR_OP_LUT_RELEASE, op_lut_release },
	{ WR_OP_LUT_WAIT, op_lut_wait },
	{ WR_OP_RANKS, op_ranks },
	{ WR_OP_STATS, op_stats },
	{ WR_OP_STATUS, wr_regsurvey_status },
};

static wr_regop_fn *
find(const struct wr_regop *table, size_t n, const char *op)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(table[i].name, op) == 0) {
			return table[i].fn;
		}
	}
	return NULL;
}

/*
 * What an observer (a tool from outside the job, acting for no rank) may
 * ask: reading, never a change, nothing that counts as a rank's.
 */
static const char *const observer_ops[] = {
	WR_OP_KV_CHECK, WR_OP_KV_COUNT, WR_OP_KV_GET, WR_OP_KV_MGET, WR_OP_KV_WAIT,
	WR_OP_RANKS, WR_OP_STATS, WR_OP_STATUS,
};

static bool
observer_may(const char *op)
{
	for (size_t i = 0; i < sizeof(observer_ops) / sizeof(observer_ops[0]); i++) {
		if (strcmp(observer_ops[i], op) == 0) {
			return true;
		}
	}
	return false;
}

void
wr_regops_dispatch(struct wr_regreq *rq, const char *op)
{
	wr_regop_fn *fn = strncmp(op, "kv.", 3) == 0
		? find(wr_kvops_table, wr_kvops_count, op)
		: find(ops, sizeof(ops) / sizeof(ops[0]), op);

	if (rq->role == WR_ROLE_OBSERVER && !observer_may(op)) {
		wr_regconn_fail(rq->conn, rq->id, -EPERM, -1, "an observer may only "
				"read: ranks, stats, status, kv get, mget, wait, "
				"check, count");
		return;
	}
	if (fn == NULL) {
		/* Unknown, not malformed: newer clients may try it; the line goes on. */
		wr_regconn_fail(rq->conn, rq->id, WORLD_EPROTO, -1, "unknown op");
		return;
	}
	fn(rq);
}
