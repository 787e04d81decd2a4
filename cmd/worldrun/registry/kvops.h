/* SPDX-License-Identifier: MIT */
/*
 * kvops: the handlers of the registry's key/value requests, by name, for
 * ops.c's dispatch.
 */
#ifndef WR_REG_KVOPS_H
#define WR_REG_KVOPS_H

#include <stddef.h>

#include "ops.h"

extern const struct wr_regop wr_kvops_table[];
extern const size_t wr_kvops_count;

#endif
