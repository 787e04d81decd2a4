/* SPDX-License-Identifier: MIT */
/*
 * ops: what the registry's request handlers share (ops.c, kvops.c):
 * checking a request against its schema, answering it, and waits that
 * answer it later. Internal to the registry's JSON front end.
 */
#ifndef WR_REG_OPS_H
#define WR_REG_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conn.h"

/* One request's handler: it answers @rq, now or when a wait ends. */
typedef void wr_regop_fn(struct wr_regreq *rq);

struct wr_regop {
	const char *name;
	wr_regop_fn *fn;
};

/* A request that breaks its schema: answer it, then end the connection. */
void wr_regops_bad(struct wr_regreq *rq, const char *why);

/* Checks @fmt (json_unpack) against the request; on a mismatch answers
 * it (wr_regops_bad) and returns false. */
bool wr_regops_check(struct wr_regreq *rq, const char *fmt, ...);

/* @rc < 0: answer with that error; else with @result_new (stolen, even on
 * failure; NULL for {}). */
void wr_regops_answer(struct wr_regreq *rq, int rc, json_t *result_new);

/* The strings of array @a (borrowed from it), 1 to 4096 of them, in an
 * array to free(); NULL after answering. */
const char **wr_regops_strings(struct wr_regreq *rq, json_t *a, size_t *n);

/* What a wait needs when it ends: one allocation, freed with free(). */
struct wr_regops_wait {
	struct wr_reg *reg;
	size_t bytes;       /* its own size */
	uint64_t gen;       /* a barrier's generation; deaths seen */
	enum wr_reg_table table;
	const int *members; /* for the start of a barrier or join only */
	size_t nmembers;
	size_t n;
	const char *str[]; /* n strings, stored after the array */
};

/* One with copies of @n strings; NULL when out of memory. */
struct wr_regops_wait *wr_regops_wait_create(struct wr_reg *reg,
					     const char *const *strs, size_t n);

/* A wr_regconn_done_fn for a wait whose answer is {}. */
void wr_regops_done_empty(struct wr_regconn *c, json_int_t id, void *data);

/*
 * Starts the core's wait for a request; wr_regops_wait_for() gives it the
 * pending answer's callback and argument. The core may end the wait at
 * once; then *w stays NULL.
 */
typedef int wr_regops_start_fn(struct wr_regreq *rq, void *data, wr_reg_wait_cb *cb,
			       void *pending, struct wr_reg_wait **w);

/*
 * Hand @data (freed with free() in every case) to a pending answer to @rq,
 * answered with @done when the wait ends well, and start the wait with
 * @start; @timeout_ms as in world.h (a bad one is a bad request). A
 * connection that holds WR_REGCONN_WAITS_MAX waits, or waits that cost
 * WR_REGCONN_WAIT_BYTES_MAX, gets -ENOBUFS instead.
 */
void wr_regops_wait_for(struct wr_regreq *rq, int64_t timeout_ms,
			wr_regconn_done_fn *done, struct wr_regops_wait *data,
			wr_regops_start_fn *start);

#endif
