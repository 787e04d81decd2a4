/* SPDX-License-Identifier: MIT */
#include "reduce.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

/*
 * Each kernel walks its buffers in blocks of a fixed length with an inner
 * loop the compiler unrolls into vector instructions even at -O2 (its
 * cheapest vectorizer model wants a known trip count), then finishes the
 * tail one element at a time. A and B name the buffers that supply the
 * left operand a and the right operand b; the result goes to io.
 */
#define BLOCK 16
#define KERNEL(name, T, A, B, expr)                                       \
	static void name(void *restrict io_, const void *restrict in_,    \
			 size_t n)                                        \
	{                                                                 \
		T *restrict io = io_;                                     \
		const T *restrict in = in_;                               \
		size_t i = 0;                                             \
		for (; i + BLOCK <= n; i += BLOCK) {                      \
			for (size_t j = 0; j < BLOCK; j++) {              \
				T a = A[i + j], b = B[i + j];             \
				io[i + j] = (expr);                       \
			}                                                 \
		}                                                         \
		for (; i < n; i++) {                                      \
			T a = A[i], b = B[i];                             \
			io[i] = (expr);                                   \
		}                                                         \
	}

typedef void kernel_fn(void *io, const void *in, size_t n);

/* Integer SUM, PROD and the bitwise ops give the same bits for signed and
 * unsigned operands, so they run on the unsigned type of each width. The
 * 1u factor lifts uint8_t and uint16_t to unsigned int, not int, whose
 * overflow would be undefined. */
#define UINT_KERNELS(w)                                                   \
	KERNEL(u##w##_sum, uint##w##_t, io, in, (uint##w##_t)(1u * a + b)) \
	KERNEL(u##w##_prod, uint##w##_t, io, in, (uint##w##_t)(1u * a * b)) \
	KERNEL(u##w##_band, uint##w##_t, io, in, a & b)                    \
	KERNEL(u##w##_bor, uint##w##_t, io, in, a | b)                     \
	KERNEL(u##w##_bxor, uint##w##_t, io, in, a ^ b)                    \
	KERNEL(u##w##_min, uint##w##_t, io, in, a < b ? a : b)             \
	KERNEL(u##w##_max, uint##w##_t, io, in, a > b ? a : b)             \
	KERNEL(i##w##_min, int##w##_t, io, in, a < b ? a : b)              \
	KERNEL(i##w##_max, int##w##_t, io, in, a > b ? a : b)

UINT_KERNELS(8)
UINT_KERNELS(16)
UINT_KERNELS(32)
UINT_KERNELS(64)

/* a != a: a is NaN, a test that vectorizes where isnan() may not. */
#define FMIN(a, b) ((a) != (a) ? (a) : (b) != (b) ? (b) : (a) < (b) ? (a) : (b))
#define FMAX(a, b) ((a) != (a) ? (a) : (b) != (b) ? (b) : (a) > (b) ? (a) : (b))

/* The floating kernels come in both operand orders: with two NaN operands
 * the order decides which NaN (and for MIN and MAX which zero) survives. */
#define FLOAT_KERNELS(s, T)                                               \
	KERNEL(s##_sum, T, io, in, a + b)                                 \
	KERNEL(s##_prod, T, io, in, a * b)                                \
	KERNEL(s##_min, T, io, in, FMIN(a, b))                            \
	KERNEL(s##_max, T, io, in, FMAX(a, b))                            \
	KERNEL(s##_sum_rev, T, in, io, a + b)                             \
	KERNEL(s##_prod_rev, T, in, io, a * b)                            \
	KERNEL(s##_min_rev, T, in, io, FMIN(a, b))                        \
	KERNEL(s##_max_rev, T, in, io, FMAX(a, b))

FLOAT_KERNELS(f32, float)
FLOAT_KERNELS(f64, double)

size_t
wr_dtype_size(enum world_dtype dt)
{
	switch (dt) {
	case WORLD_INT8:
	case WORLD_UINT8:
		return 1;
	case WORLD_INT16:
	case WORLD_UINT16:
	case WORLD_FLOAT16:
	case WORLD_BFLOAT16:
		return 2;
	case WORLD_INT32:
	case WORLD_UINT32:
	case WORLD_FLOAT32:
		return 4;
	case WORLD_INT64:
	case WORLD_UINT64:
	case WORLD_FLOAT64:
		return 8;
	}
	return 0;
}

size_t
world_dtype_size(enum world_dtype dtype)
{
	return wr_dtype_size(dtype);
}

static bool
is_float(enum world_dtype dt)
{
	return dt == WORLD_FLOAT16 || dt == WORLD_BFLOAT16 ||
	       dt == WORLD_FLOAT32 || dt == WORLD_FLOAT64;
}

int
wr_reduce_check(enum world_dtype dt, enum world_op op)
{
	if (wr_dtype_size(dt) == 0) {
		return -EINVAL;
	}
	switch (op) {
	case WORLD_SUM:
	case WORLD_PROD:
	case WORLD_MIN:
	case WORLD_MAX:
		return 0;
	case WORLD_BAND:
	case WORLD_BOR:
	case WORLD_BXOR:
		return is_float(dt) ? -EINVAL : 0;
	case WORLD_AVG:
		return is_float(dt) ? 0 : -EINVAL;
	}
	return -EINVAL;
}

/* The kernel of the unsigned type of width @size for the ops whose bits do
 * not depend on signedness, NULL for the others. */
static kernel_fn *
width_kernel(enum world_op op, size_t size)
{
	static kernel_fn *const table[4][5] = {
		{u8_sum, u8_prod, u8_band, u8_bor, u8_bxor},
		{u16_sum, u16_prod, u16_band, u16_bor, u16_bxor},
		{u32_sum, u32_prod, u32_band, u32_bor, u32_bxor},
		{u64_sum, u64_prod, u64_band, u64_bor, u64_bxor},
	};
	int row = size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : 3;

	switch (op) {
	case WORLD_SUM:
	case WORLD_AVG:
		return table[row][0];
	case WORLD_PROD:
		return table[row][1];
	case WORLD_BAND:
		return table[row][2];
	case WORLD_BOR:
		return table[row][3];
	case WORLD_BXOR:
		return table[row][4];
	case WORLD_MIN:
	case WORLD_MAX:
		break;
	}
	return NULL;
}

/* MIN and MAX of the integer types, which do depend on signedness. */
static kernel_fn *
order_kernel(enum world_op op, enum world_dtype dt)
{
	bool min = op == WORLD_MIN;

	switch (dt) {
	case WORLD_INT8:
		return min ? i8_min : i8_max;
	case WORLD_INT16:
		return min ? i16_min : i16_max;
	case WORLD_INT32:
		return min ? i32_min : i32_max;
	case WORLD_INT64:
		return min ? i64_min : i64_max;
	case WORLD_UINT8:
		return min ? u8_min : u8_max;
	case WORLD_UINT16:
		return min ? u16_min : u16_max;
	case WORLD_UINT32:
		return min ? u32_min : u32_max;
	case WORLD_UINT64:
		return min ? u64_min : u64_max;
	case WORLD_FLOAT16:
	case WORLD_BFLOAT16:
	case WORLD_FLOAT32:
	case WORLD_FLOAT64:
		break;
	}
	return NULL;
}

/* The float32 (for the 16-bit types too) or float64 kernel of @op. */
static kernel_fn *
float_kernel(enum world_op op, bool f64, bool rev)
{
	static kernel_fn *const table[2][2][4] = {
		{{f32_sum, f32_prod, f32_min, f32_max},
		 {f32_sum_rev, f32_prod_rev, f32_min_rev, f32_max_rev}},
		{{f64_sum, f64_prod, f64_min, f64_max},
		 {f64_sum_rev, f64_prod_rev, f64_min_rev, f64_max_rev}},
	};

	switch (op) {
	case WORLD_SUM:
	case WORLD_AVG:
		return table[f64][rev][0];
	case WORLD_PROD:
		return table[f64][rev][1];
	case WORLD_MIN:
		return table[f64][rev][2];
	case WORLD_MAX:
		return table[f64][rev][3];
	case WORLD_BAND:
	case WORLD_BOR:
	case WORLD_BXOR:
		break;
	}
	return NULL;
}

/* The 16-bit floats widen a stack-sized run at a time, reduce it with the
 * float32 kernel and narrow it back, so every step rounds to the type. */
static void
half_combine(kernel_fn *k, bool bf16, void *inout, const void *in,
	     size_t count)
{
	enum { RUN = 256 };
	float fa[RUN], fb[RUN];
	uint16_t *io = inout;
	const uint16_t *src = in;

	for (size_t i = 0; i < count; i += RUN) {
		size_t m = count - i < RUN ? count - i : RUN;

		for (size_t j = 0; j < m; j++) {
			fa[j] = bf16 ? wr_reduce_bf16_to_f32(io[i + j])
				     : wr_reduce_f16_to_f32(io[i + j]);
			fb[j] = bf16 ? wr_reduce_bf16_to_f32(src[i + j])
				     : wr_reduce_f16_to_f32(src[i + j]);
		}
		k(fa, fb, m);
		for (size_t j = 0; j < m; j++) {
			io[i + j] = bf16 ? wr_reduce_bf16_from_f32(fa[j])
					 : wr_reduce_f16_from_f32(fa[j]);
		}
	}
}

static void
combine(enum world_op op, enum world_dtype dt, void *inout, const void *in,
	size_t count, bool rev)
{
	kernel_fn *k;

	assert(wr_reduce_check(dt, op) == 0);
	switch (dt) {
	case WORLD_FLOAT16:
	case WORLD_BFLOAT16:
		k = float_kernel(op, false, rev);
		half_combine(k, dt == WORLD_BFLOAT16, inout, in, count);
		return;
	case WORLD_FLOAT32:
	case WORLD_FLOAT64:
		k = float_kernel(op, dt == WORLD_FLOAT64, rev);
		break;
	default:
		/* Integer ops are commutative bit for bit: rev changes
		 * nothing. */
		k = width_kernel(op, wr_dtype_size(dt));
		if (k == NULL) {
			k = order_kernel(op, dt);
		}
		break;
	}
	k(inout, in, count);
}

void
wr_reduce(enum world_op op, enum world_dtype dt, void *inout, const void *in,
	  size_t count)
{
	combine(op, dt, inout, in, count, false);
}

void
wr_reduce_rev(enum world_op op, enum world_dtype dt, void *inout,
	      const void *in, size_t count)
{
	combine(op, dt, inout, in, count, true);
}

void
wr_reduce_finish(enum world_op op, enum world_dtype dt, void *buf,
		 size_t count, int group_size)
{
	float *f = buf;
	double *d = buf;
	uint16_t *h = buf;

	if (op != WORLD_AVG) {
		return;
	}
	for (size_t i = 0; i < count; i++) {
		switch (dt) {
		case WORLD_FLOAT16:
			h[i] = wr_reduce_f16_from_f32(
				wr_reduce_f16_to_f32(h[i]) / (float)group_size);
			break;
		case WORLD_BFLOAT16:
			h[i] = wr_reduce_bf16_from_f32(
				wr_reduce_bf16_to_f32(h[i]) / (float)group_size);
			break;
		case WORLD_FLOAT32:
			f[i] /= (float)group_size;
			break;
		case WORLD_FLOAT64:
			d[i] /= group_size;
			break;
		default:
			assert(!"AVG of an integer type");
			return;
		}
	}
}

static uint32_t
f32_bits(float f)
{
	uint32_t x;

	memcpy(&x, &f, sizeof(x));
	return x;
}

static float
bits_f32(uint32_t x)
{
	float f;

	memcpy(&f, &x, sizeof(f));
	return f;
}

/* Drop the low @shift bits of @m, rounding to nearest, ties to even. */
static uint32_t
round_shift(uint32_t m, unsigned shift)
{
	uint32_t r = m >> shift;
	uint32_t rest = m & ((1u << shift) - 1);
	uint32_t half = 1u << (shift - 1);

	return r + (rest > half || (rest == half && (r & 1)));
}

uint16_t
wr_reduce_f16_from_f32(float f)
{
	uint32_t x = f32_bits(f);
	uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
	uint32_t ax = x & 0x7fffffff;

	if (ax > 0x7f800000) {
		return sign | 0x7e00 | ((ax >> 13) & 0x3ff);
	}
	/* 65520 is halfway from 65504, the largest finite, to 2^16: ties go
	 * to the even one, which is infinity. */
	if (ax >= 0x477ff000) {
		return sign | 0x7c00;
	}
	if (ax >= 0x38800000) {
		/* Normal: rebias the exponent (127 -> 15); a carry out of the
		 * mantissa moves into the exponent, as it should. */
		return sign | (uint16_t)round_shift(ax - 0x38000000, 13);
	}
	if (ax < 0x33000000) {
		return sign; /* below half the smallest subnormal, 2^-25 */
	}
	/* Subnormal: the significand with its implicit bit, in units of the
	 * smallest subnormal 2^-24; 0x400 (the smallest normal) may result. */
	return sign | (uint16_t)round_shift((ax & 0x7fffff) | 0x800000,
					    126 - (ax >> 23));
}

float
wr_reduce_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t e = (h >> 10) & 0x1f;
	uint32_t m = h & 0x3ff;
	float sub;

	if (e == 0x1f) {
		return bits_f32(sign | 0x7f800000 | (m << 13));
	}
	if (e != 0) {
		return bits_f32(sign | ((e + 112) << 23) | (m << 13));
	}
	sub = (float)m * 0x1p-24f; /* subnormal or zero, exact */
	return bits_f32(sign | f32_bits(sub));
}

uint16_t
wr_reduce_bf16_from_f32(float f)
{
	uint32_t x = f32_bits(f);

	if ((x & 0x7fffffff) > 0x7f800000) {
		return (uint16_t)((x >> 16) | 0x40);
	}
	/* Round to nearest even; a carry may reach the exponent, and past
	 * the largest finite it gives infinity. */
	return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

float
wr_reduce_bf16_to_f32(uint16_t h)
{
	return bits_f32((uint32_t)h << 16);
}
