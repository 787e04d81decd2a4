/* SPDX-License-Identifier: MIT */
/*
 * ops: what the registry's request handlers share (ops.c, kvops.c):
 * checking a request against its schema, answering it, and making the
 * waits that answer it later (conn.h). Internal to the registry's JSON
 * front end.
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

/* A wait for @rq (conn.h) that @start starts and @done answers, within
 * @timeout_ms, with copies of @n strings; NULL when out of memory. */
struct wr_regwait *wr_regops_wait_create(const struct wr_regreq *rq,
					 wr_regwait_start_fn *start,
					 wr_regwait_done_fn *done, int64_t timeout_ms,
					 const char *const *strs, size_t n);

#endif
