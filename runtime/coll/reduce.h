/* SPDX-License-Identifier: MIT */
/*
 * reduce: the element-wise reduction kernels of the collectives, one
 * op x dtype table of loops the compiler vectorizes, and the float16 and
 * bfloat16 conversions they need. It combines buffers in memory only; which
 * rank's data goes on which side is the algorithms' business (algos.h).
 */
#ifndef WR_REDUCE_H
#define WR_REDUCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "world.h"

/* The size of one element in bytes, 0 for a value outside the enum. */
size_t wr_dtype_size(enum world_dtype dt);

/* 0 if @op applies to @dt, else -EINVAL: the bitwise ops take integers
 * only, WORLD_AVG floating types only, and values outside either enum
 * fail. Call it before wr_reduce(), which assumes a valid pair. */
int wr_reduce_check(enum world_dtype dt, enum world_op op);

/*
 * inout[i] = inout[i] op in[i] for i < @count: @inout holds the left
 * operand. The algorithms keep the lower group rank's data on the left,
 * so every rank that computes an element computes it the same way. The
 * buffers must not overlap. WORLD_AVG sums here; wr_reduce_finish()
 * divides.
 *
 * Integer SUM and PROD wrap modulo 2^bits, for the signed types too.
 * Floating SUM and PROD are IEEE operations of the type (float16 and
 * bfloat16: in float32, then rounded to nearest even, each step), which
 * give the same bits in either order, except that of two NaN operands the
 * hardware picks the one that survives. MIN and MAX propagate NaN, as
 * torch does: a NaN operand is the result (the left one if both are); of
 * -0 and +0, which compare equal, they return the right operand.
 */
void wr_reduce(enum world_op op, enum world_dtype dt, void *inout,
	       const void *in, size_t count);
/* The same with the operands swapped: inout[i] = in[i] op inout[i], for
 * when the received data belongs to the lower rank. */
void wr_reduce_rev(enum world_op op, enum world_dtype dt, void *inout,
		   const void *in, size_t count);
/* What is left once the last element is combined: for WORLD_AVG, divide
 * each of @count elements by @group_size (in float32 for the 16-bit
 * types); nothing for the other ops. */
void wr_reduce_finish(enum world_op op, enum world_dtype dt, void *buf,
		      size_t count, int group_size);

/* IEEE binary16 and bfloat16 from and to float32, by bits. Narrowing
 * rounds to nearest even, overflows to infinity, and keeps a NaN a NaN
 * (quiet, with its sign and top payload bits). */
uint16_t wr_reduce_f16_from_f32(float f);
float wr_reduce_f16_to_f32(uint16_t h);
uint16_t wr_reduce_bf16_from_f32(float f);
float wr_reduce_bf16_to_f32(uint16_t h);

#endif
