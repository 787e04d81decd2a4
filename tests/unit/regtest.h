/* SPDX-License-Identifier: MIT */
/*
 * regtest.h: what the registry core's unit tests share: a record of how a
 * wait ended, and short forms of the calls they make most.
 */
#ifndef WR_REGTEST_H
#define WR_REGTEST_H

#include "core.h"
#include "tap.h"

#define VAL WR_REG_VALUES
#define SVC WR_REG_SERVICES

struct rec {
	int calls, err, dead;
};

static inline void
on_end(void *arg, int err, int dead)
{
	struct rec *r = arg;

	r->calls++;
	r->err = err;
	r->dead = dead;
}

/* Ended exactly once, with @err (and @dead for peer-dead). */
static inline bool
ended(const struct rec *r, int err, int dead)
{
	return r->calls == 1 && r->err == err && (err == 0 || r->dead == dead);
}

/* The owner of (@g, @k) in @t, or the error. */
static inline int
owner(struct wr_reg *reg, enum wr_reg_table t, const char *g, const char *k)
{
	int o = -1, rc = wr_reg_lut_lookup(reg, t, g, k, &o);

	return rc < 0 ? rc : o;
}

static inline int
enter(struct wr_reg *reg, const char *name, int rank, struct rec *r,
      struct wr_reg_wait **w)
{
	return wr_reg_barrier(reg, name, NULL, 0, rank, NULL, on_end, r, w);
}

static inline int
join(struct wr_reg *reg, const char *g, const int *m, size_t n, int rank,
     struct rec *r, struct wr_reg_wait **w)
{
	return wr_reg_group_join(reg, g, m, n, rank, false, on_end, r, w);
}

#endif
