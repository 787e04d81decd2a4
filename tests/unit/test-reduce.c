/* SPDX-License-Identifier: MIT */
/*
 * reduce: every op of every dtype, in both operand orders, against a
 * one-element-at-a-time reference, at lengths around the kernels' block;
 * the pairs that must fail; float16 and bfloat16 rounding (ties to even,
 * subnormals, overflow to infinity, NaN) by hand and, where the compiler
 * has _Float16, against it; and AVG's final division.
 */
#include "coll/reduce.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "tap.h"

#define NDTYPES 12
#define NOPS 8

static const size_t counts[] = {0, 1, 7, 16, 33, 1000003};
#define NCOUNTS (sizeof(counts) / sizeof(counts[0]))

static uint64_t
rnd(uint64_t *s)
{
	/* splitmix64: reproducible, and good enough to fill buffers */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static bool
is_float(enum world_dtype dt)
{
	return dt >= WORLD_FLOAT16;
}

/* Random elements; floats are mostly ordinary numbers, with now and then a
 * NaN, an infinity or a zero of either sign. */
static void
fill(enum world_dtype dt, void *buf, size_t count, uint64_t *s)
{
	static const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY,
					 NAN, -NAN, 1.0f, 65504.0f};
	unsigned char *p = buf;
	size_t es = wr_dtype_size(dt);

	for (size_t i = 0; i < count; i++) {
		uint64_t r = rnd(s);
		double v = (double)(int64_t)(r >> 11) / (double)(1ull << 50);

		if (is_float(dt) && (r & 63) == 0) {
			v = specials[(r >> 6) & 7];
		}
		switch (dt) {
		case WORLD_FLOAT16: {
			uint16_t h = wr_reduce_f16_from_f32((float)v);
			memcpy(p + i * es, &h, 2);
			break;
		}
		case WORLD_BFLOAT16: {
			uint16_t h = wr_reduce_bf16_from_f32((float)v);
			memcpy(p + i * es, &h, 2);
			break;
		}
		case WORLD_FLOAT32: {
			float f = (float)v;
			memcpy(p + i * es, &f, 4);
			break;
		}
		case WORLD_FLOAT64:
			memcpy(p + i * es, &v, 8);
			break;
		default:
			memcpy(p + i * es, &r, es); /* little-endian low bytes */
			break;
		}
	}
}

static int64_t
load_int(enum world_dtype dt, const void *p)
{
	int8_t i8;
	int16_t i16;
	int32_t i32;
	int64_t i64;

	switch (dt) {
	case WORLD_INT8:
		memcpy(&i8, p, 1);
		return i8;
	case WORLD_INT16:
		memcpy(&i16, p, 2);
		return i16;
	case WORLD_INT32:
		memcpy(&i32, p, 4);
		return i32;
	default:
		memcpy(&i64, p, 8);
		return i64;
	}
}

static uint64_t
load_uint(size_t es, const void *p)
{
	uint64_t u = 0;

	memcpy(&u, p, es);
	return u;
}

static uint64_t
ref_int(enum world_op op, enum world_dtype dt, const void *pa, const void *pb)
{
	size_t es = wr_dtype_size(dt);
	bool sign = dt <= WORLD_INT64;
	uint64_t a = load_uint(es, pa), b = load_uint(es, pb);
	int64_t sa = sign ? load_int(dt, pa) : 0, sb = sign ? load_int(dt, pb) : 0;

	switch (op) {
	case WORLD_SUM:
		return a + b;
	case WORLD_PROD:
		return a * b;
	case WORLD_MIN:
		return sign ? (sa < sb ? a : b) : (a < b ? a : b);
	case WORLD_MAX:
		return sign ? (sa > sb ? a : b) : (a > b ? a : b);
	case WORLD_BAND:
		return a & b;
	case WORLD_BOR:
		return a | b;
	case WORLD_BXOR:
		return a ^ b;
	case WORLD_AVG:
		break;
	}
	return 0;
}

static double
ref_float(enum world_op op, double a, double b)
{
	switch (op) {
	case WORLD_SUM:
	case WORLD_AVG:
		return a + b;
	case WORLD_PROD:
		return a * b;
	case WORLD_MIN:
		return isnan(a) ? a : isnan(b) ? b : a < b ? a : b;
	case WORLD_MAX:
		return isnan(a) ? a : isnan(b) ? b : a > b ? a : b;
	default:
		return 0;
	}
}

/* out = a op b, one element. float32 operands are computed in float (a
 * double sum of two floats, rounded once to float, is the same number). */
static void
ref_elem(enum world_op op, enum world_dtype dt, const void *pa, const void *pb,
	 void *out)
{
	uint16_t ha, hb, hr;
	float fa, fb, fr;
	double da, db, dr;
	uint64_t u;

	switch (dt) {
	case WORLD_FLOAT16:
	case WORLD_BFLOAT16:
		memcpy(&ha, pa, 2);
		memcpy(&hb, pb, 2);
		fa = dt == WORLD_FLOAT16 ? wr_reduce_f16_to_f32(ha)
					 : wr_reduce_bf16_to_f32(ha);
		fb = dt == WORLD_FLOAT16 ? wr_reduce_f16_to_f32(hb)
					 : wr_reduce_bf16_to_f32(hb);
		fr = (float)ref_float(op, fa, fb);
		hr = dt == WORLD_FLOAT16 ? wr_reduce_f16_from_f32(fr)
					 : wr_reduce_bf16_from_f32(fr);
		memcpy(out, &hr, 2);
		return;
	case WORLD_FLOAT32:
		memcpy(&fa, pa, 4);
		memcpy(&fb, pb, 4);
		fr = op == WORLD_PROD ? fa * fb : (float)ref_float(op, fa, fb);
		memcpy(out, &fr, 4);
		return;
	case WORLD_FLOAT64:
		memcpy(&da, pa, 8);
		memcpy(&db, pb, 8);
		dr = ref_float(op, da, db);
		memcpy(out, &dr, 8);
		return;
	default:
		u = ref_int(op, dt, pa, pb);
		memcpy(out, &u, wr_dtype_size(dt));
		return;
	}
}

static bool
is_nan(enum world_dtype dt, const unsigned char *p)
{
	uint16_t h;
	float f;
	double d;

	switch (dt) {
	case WORLD_FLOAT16:
		memcpy(&h, p, 2);
		return (h & 0x7fff) > 0x7c00;
	case WORLD_BFLOAT16:
		memcpy(&h, p, 2);
		return (h & 0x7fff) > 0x7f80;
	case WORLD_FLOAT32:
		memcpy(&f, p, 4);
		return isnan(f);
	case WORLD_FLOAT64:
		memcpy(&d, p, 8);
		return isnan(d);
	default:
		return false;
	}
}

/* The first element where @got and @want differ as bytes, or -1. MIN and
 * MAX choose their NaN, so theirs must match bit for bit; for SUM and PROD
 * the hardware picks which of two NaN operands survives (the compiler may
 * swap the operands of a commutative +), so any NaN will do. */
static long
first_diff(enum world_dtype dt, enum world_op op, const unsigned char *got,
	   const unsigned char *want, size_t count)
{
	size_t es = wr_dtype_size(dt);
	bool any_nan = op != WORLD_MIN && op != WORLD_MAX;

	for (size_t i = 0; i < count; i++) {
		const unsigned char *g = got + i * es, *w = want + i * es;

		if (memcmp(g, w, es) != 0 &&
		    !(any_nan && is_nan(dt, g) && is_nan(dt, w))) {
			return (long)i;
		}
	}
	return -1;
}

static bool
check_one(enum world_dtype dt, enum world_op op, size_t count, bool rev,
	  uint64_t *seed)
{
	size_t es = wr_dtype_size(dt), len = count * es + 1;
	unsigned char *a = malloc(len), *b = malloc(len), *want = malloc(len);
	long bad;
	bool good;

	if (a == NULL || b == NULL || want == NULL) {
		abort();
	}
	fill(dt, a, count, seed);
	fill(dt, b, count, seed);
	for (size_t i = 0; i < count; i++) {
		if (rev) {
			ref_elem(op, dt, b + i * es, a + i * es, want + i * es);
		} else {
			ref_elem(op, dt, a + i * es, b + i * es, want + i * es);
		}
	}
	a[count * es] = 0x5a; /* a guard: nothing past the end is written */
	if (rev) {
		wr_reduce_rev(op, dt, a, b, count);
	} else {
		wr_reduce(op, dt, a, b, count);
	}
	bad = first_diff(dt, op, a, want, count);
	good = bad < 0 && a[count * es] == 0x5a;
	if (!good) {
		printf("# dtype %d op %d count %zu rev %d: element %ld differs\n",
		       dt, op, count, rev, bad);
	}
	free(a);
	free(b);
	free(want);
	return good;
}

/* One test per valid dtype x op: all lengths, both operand orders. */
static void
test_table(uint64_t *seed)
{
	for (int dt = 0; dt < NDTYPES; dt++) {
		for (int op = 0; op < NOPS; op++) {
			bool good = true;

			if (wr_reduce_check(dt, op) != 0) {
				continue;
			}
			for (size_t c = 0; c < NCOUNTS; c++) {
				good &= check_one(dt, op, counts[c], false, seed);
				good &= check_one(dt, op, counts[c], true, seed);
			}
			ok(good, "dtype %d op %d: every length, both orders", dt,
			   op);
		}
	}
}

/* 12 dtypes: 8 integer ones with 7 ops, 4 floating with 5. */
#define NVALID (8 * 7 + 4 * 5)

static void
test_check(void)
{
	static const size_t sizes[NDTYPES] = {1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8};
	bool sizes_ok = true, pairs_ok = true;

	for (int dt = 0; dt < NDTYPES; dt++) {
		sizes_ok &= wr_dtype_size(dt) == sizes[dt];
		for (int op = 0; op < NOPS; op++) {
			bool bitwise = op >= WORLD_BAND && op <= WORLD_BXOR;
			bool want = is_float(dt) ? !bitwise : op != WORLD_AVG;

			pairs_ok &= wr_reduce_check(dt, op) == (want ? 0 : -EINVAL);
		}
	}
	ok(sizes_ok, "dtype sizes");
	is_int((long long)wr_dtype_size((enum world_dtype)12), 0,
	       "size of a dtype past the enum: 0");
	is_int((long long)wr_dtype_size((enum world_dtype)-1), 0,
	       "size of a negative dtype: 0");
	ok(pairs_ok, "bitwise ops integers only, AVG floats only");
	is_int(wr_reduce_check(WORLD_FLOAT32, WORLD_BXOR), -EINVAL,
	       "float32 BXOR: -EINVAL");
	is_int(wr_reduce_check(WORLD_INT32, WORLD_AVG), -EINVAL,
	       "int32 AVG: -EINVAL");
	is_int(wr_reduce_check((enum world_dtype)12, WORLD_SUM), -EINVAL,
	       "a dtype past the enum: -EINVAL");
	is_int(wr_reduce_check(WORLD_INT8, (enum world_op)8), -EINVAL,
	       "an op past the enum: -EINVAL");
	is_int(wr_reduce_check(WORLD_INT8, (enum world_op)-1), -EINVAL,
	       "a negative op: -EINVAL");
}

static float
f32_of(uint32_t x)
{
	float f;

	memcpy(&f, &x, 4);
	return f;
}

struct narrow_case {
	uint32_t in; /* float32 bits */
	uint16_t f16, bf16;
	const char *what;
};

static void
test_narrow(void)
{
	static const struct narrow_case cases[] = {
		{0x3f800000, 0x3c00, 0x3f80, "1"},
		{0xbf800000, 0xbc00, 0xbf80, "-1"},
		{0x00000000, 0x0000, 0x0000, "+0"},
		{0x80000000, 0x8000, 0x8000, "-0"},
		/* 1 + 2^-11 is halfway for f16: to even, 1 */
		{0x3f801000, 0x3c00, 0x3f80, "f16 tie down to even"},
		/* 1 + 3*2^-11: halfway, to even 1 + 2^-9 */
		{0x3f803000, 0x3c02, 0x3f80, "f16 tie up to even"},
		/* 1 + 2^-8 is halfway for bf16, 1 + 3*2^-8 too */
		{0x3f808000, 0x3c04, 0x3f80, "bf16 tie down to even"},
		{0x3f818000, 0x3c0c, 0x3f82, "bf16 tie up to even"},
		{0x3f808001, 0x3c04, 0x3f81, "bf16 just above the tie"},
		{0x477fe000, 0x7bff, 0x4780, "65504, the largest f16"},
		{0x477fefff, 0x7bff, 0x4780, "just below 65520: 65504"},
		{0x477ff000, 0x7c00, 0x4780, "65520 ties to infinity"},
		{0x7f7fffff, 0x7c00, 0x7f80, "FLT_MAX: infinity"},
		{0xff7fffff, 0xfc00, 0xff80, "-FLT_MAX: -infinity"},
		{0x7f7f7fff, 0x7c00, 0x7f7f, "below bf16's halfway: finite"},
		{0x7f800000, 0x7c00, 0x7f80, "infinity"},
		{0xff800000, 0xfc00, 0xff80, "-infinity"},
		{0x7fc00000, 0x7e00, 0x7fc0, "quiet NaN"},
		{0xffc00000, 0xfe00, 0xffc0, "negative quiet NaN"},
		{0x7f800001, 0x7e00, 0x7fc0, "signalling NaN: quiet"},
		{0x7fa00000, 0x7f00, 0x7fe0, "NaN payload top bits kept"},
		{0x33800000, 0x0001, 0x3380, "2^-24, the smallest subnormal"},
		{0x33000000, 0x0000, 0x3300, "2^-25 ties to 0"},
		{0x33000001, 0x0001, 0x3300, "just above 2^-25"},
		{0x33c00000, 0x0002, 0x33c0, "1.5 * 2^-24 ties to 2"},
		{0x34200000, 0x0002, 0x3420, "2.5 * 2^-24 ties to 2"},
		{0x387fc000, 0x03ff, 0x3880, "the largest subnormal"},
		{0x387fe000, 0x0400, 0x3880, "tie to the smallest normal"},
		{0x38800000, 0x0400, 0x3880, "2^-14, the smallest normal"},
		{0x00000001, 0x0000, 0x0000, "float32 subnormal"},
		{0x80000001, 0x8000, 0x8000, "negative float32 subnormal"},
	};
	bool f16 = true, bf16 = true;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct narrow_case *c = &cases[i];
		uint16_t h = wr_reduce_f16_from_f32(f32_of(c->in));
		uint16_t b = wr_reduce_bf16_from_f32(f32_of(c->in));

		if (h != c->f16) {
			printf("# f16 %s: got 0x%04x want 0x%04x\n", c->what, h,
			       c->f16);
			f16 = false;
		}
		if (b != c->bf16) {
			printf("# bf16 %s: got 0x%04x want 0x%04x\n", c->what,
			       b, c->bf16);
			bf16 = false;
		}
	}
	ok(f16, "float16 narrowing cases");
	ok(bf16, "bfloat16 narrowing cases");
	ok(wr_reduce_f16_to_f32(0x0001) == 0x1p-24f &&
		   wr_reduce_f16_to_f32(0x03ff) == 1023 * 0x1p-24f &&
		   wr_reduce_f16_to_f32(0x3555) == 0.333251953125f &&
		   wr_reduce_f16_to_f32(0x7bff) == 65504.0f &&
		   wr_reduce_f16_to_f32(0xfc00) == -INFINITY &&
		   isnan(wr_reduce_f16_to_f32(0x7e00)) &&
		   signbit(wr_reduce_f16_to_f32(0x8000)),
	   "float16 widening cases");
	ok(wr_reduce_bf16_to_f32(0x3f80) == 1.0f &&
		   wr_reduce_bf16_to_f32(0xff80) == -INFINITY &&
		   isnan(wr_reduce_bf16_to_f32(0x7fc0)),
	   "bfloat16 widening cases");
}

/* Narrowing picks the nearest of the two neighbours that bracket the value
 * (ties: the even one); widening then narrowing is the identity. */
static void
test_round_trip(uint64_t *seed)
{
	bool nearest = true, back = true;

	for (uint32_t h = 0; h < 0x10000; h++) {
		float f = wr_reduce_f16_to_f32((uint16_t)h);
		float g = wr_reduce_bf16_to_f32((uint16_t)h);

		if (!isnan(f)) {
			back &= wr_reduce_f16_from_f32(f) == h;
		}
		if (!isnan(g)) {
			back &= wr_reduce_bf16_from_f32(g) == h;
		}
	}
	for (int i = 0; i < 1 << 20; i++) {
		uint32_t x = (uint32_t)rnd(seed);
		float f = f32_of(x);
		uint16_t b = wr_reduce_bf16_from_f32(f);
		uint16_t lo = (uint16_t)(x >> 16);
		double dlo, dhi, dx = f, db;

		if (isnan(f) || isinf(f) || (lo & 0x7fff) == 0x7f7f) {
			continue;
		}
		dlo = wr_reduce_bf16_to_f32(lo);
		dhi = wr_reduce_bf16_to_f32((uint16_t)(lo + 1));
		db = wr_reduce_bf16_to_f32(b);
		if (fabs(dx - dlo) == fabs(dhi - dx)) {
			nearest &= b == ((lo & 1) ? lo + 1 : lo);
		} else {
			nearest &= db == (fabs(dx - dlo) < fabs(dhi - dx) ? dlo : dhi);
		}
	}
	ok(back, "every float16 and bfloat16 survives widening and narrowing");
	ok(nearest, "bfloat16 narrowing picks the nearest neighbour");
#ifdef __FLT16_MAX__
	{
		bool same = true;

		for (int i = 0; i < 1 << 22; i++) {
			uint32_t x = (uint32_t)rnd(seed);
			_Float16 c = (_Float16)f32_of(x);
			uint16_t want, got = wr_reduce_f16_from_f32(f32_of(x));

			memcpy(&want, &c, 2);
			if (isnan(f32_of(x))) {
				same &= (got & 0x7e00) == 0x7e00;
			} else if (got != want) {
				printf("# 0x%08x: got 0x%04x, _Float16 0x%04x\n",
				       x, got, want);
				same = false;
			}
		}
		ok(same, "float16 narrowing agrees with the compiler's _Float16");
	}
#else
	skip(1, "no _Float16 in this compiler");
#endif
}

static uint16_t
h16(float f, bool bf)
{
	return bf ? wr_reduce_bf16_from_f32(f) : wr_reduce_f16_from_f32(f);
}

/* Each step of a 16-bit reduction rounds to the type. */
static void
test_half_steps(void)
{
	uint16_t a[4], b[4];

	a[0] = h16(1.0f, false), b[0] = h16(0x1p-11f, false);
	a[1] = h16(65504.0f, false), b[1] = h16(16.0f, false);
	a[2] = h16(NAN, false), b[2] = h16(1.0f, false);
	a[3] = h16(2.0f, false), b[3] = h16(-INFINITY, false);
	wr_reduce(WORLD_SUM, WORLD_FLOAT16, a, b, 4);
	ok(a[0] == 0x3c00 && a[1] == 0x7c00 && a[2] == 0x7e00 && a[3] == 0xfc00,
	   "float16 SUM: a tie to even, overflow to infinity, NaN");
	a[0] = h16(256.0f, true), b[0] = h16(1.0f, true);
	a[1] = h16(258.0f, true), b[1] = h16(1.0f, true);
	a[2] = h16(1.0f, true), b[2] = h16(NAN, true);
	a[3] = h16(0x1p127f, true), b[3] = h16(4.0f, true);
	wr_reduce(WORLD_SUM, WORLD_BFLOAT16, a, b, 3);
	wr_reduce(WORLD_PROD, WORLD_BFLOAT16, a + 3, b + 3, 1);
	ok(a[0] == h16(256.0f, true) && a[1] == h16(260.0f, true) &&
		   a[2] == 0x7fc0 && a[3] == 0x7f80,
	   "bfloat16 SUM and PROD: ties to even, NaN, overflow");
	a[0] = h16(NAN, false), b[0] = h16(1.0f, false);
	a[1] = h16(1.0f, false), b[1] = h16(NAN, false);
	a[2] = h16(-3.0f, false), b[2] = h16(2.0f, false);
	wr_reduce(WORLD_MAX, WORLD_FLOAT16, a, b, 3);
	ok(a[0] == 0x7e00 && a[1] == 0x7e00 && a[2] == h16(2.0f, false),
	   "float16 MAX propagates NaN from either side");
}

static void
test_finish(void)
{
	float f[3] = {3.0f, -1.0f, 1.0f};
	double d[2] = {1.0, 7.0};
	uint16_t h[2] = {h16(3.0f, false), h16(1.0f, false)};
	uint16_t bh[1] = {h16(5.0f, true)};
	int32_t i[2] = {7, 9};

	wr_reduce_finish(WORLD_AVG, WORLD_FLOAT32, f, 3, 2);
	wr_reduce_finish(WORLD_AVG, WORLD_FLOAT64, d, 2, 4);
	wr_reduce_finish(WORLD_AVG, WORLD_FLOAT16, h, 2, 3);
	wr_reduce_finish(WORLD_AVG, WORLD_BFLOAT16, bh, 1, 2);
	wr_reduce_finish(WORLD_SUM, WORLD_INT32, i, 2, 2);
	ok(f[0] == 1.5f && f[1] == -0.5f && f[2] == 0.5f, "float32 AVG");
	ok(d[0] == 0.25 && d[1] == 1.75, "float64 AVG");
	ok(h[0] == h16(1.0f, false) && h[1] == h16(1.0f / 3, false),
	   "float16 AVG divides in float32 and rounds once");
	ok(bh[0] == h16(2.5f, true), "bfloat16 AVG");
	ok(i[0] == 7 && i[1] == 9, "finish leaves other ops alone");
	f[0] = 3.0f;
	wr_reduce_finish(WORLD_AVG, WORLD_FLOAT32, f, 0, 2);
	ok(f[0] == 3.0f, "finish of 0 elements touches nothing");
}

int
main(void)
{
	uint64_t seed = 0x5eed;
	const char *env = getenv("WORLD_TEST_SEED");

	if (env != NULL) {
		seed = strtoull(env, NULL, 0);
	}
	plan(9 + NVALID + 4 + 3 + 3 + 6);
	printf("# seed %llu (WORLD_TEST_SEED replays)\n",
	       (unsigned long long)seed);
	test_check();
	test_table(&seed);
	test_narrow();
	test_round_trip(&seed);
	test_half_steps();
	test_finish();
	return done_testing();
}
