/*
 * inc_elem.h — the arithmetic of one element of any dtype, in host order, as
 * inc_proto.h documents it: what the switch's scalar kernels (switch/agg.c)
 * and the hosts' ring baseline (hostlib/ring.c) compute, bit for bit.
 *
 * An element's bits travel in a uint64_t, zero-extended from the dtype's
 * width (inc_dtype_size()). float16 and bfloat16 are converted to float32
 * (exactly), combined there, and rounded back to nearest-even.
 */
#ifndef INCLAB_INC_ELEM_H
#define INCLAB_INC_ELEM_H

#include <stdint.h>
#include <string.h>

#include "inc_proto.h"

/* inc_f32_of(), inc_f32_bits() - the float whose bits are @h, and back. */
static inline float inc_f32_of(uint32_t h)
{
	float f;

	memcpy(&f, &h, 4);
	return f;
}

static inline uint32_t inc_f32_bits(float f)
{
	uint32_t h;

	memcpy(&h, &f, 4);
	return h;
}

/* inc_f64_of(), inc_f64_bits() - the double whose bits are @h, and back. */
static inline double inc_f64_of(uint64_t h)
{
	double f;

	memcpy(&f, &h, 8);
	return f;
}

static inline uint64_t inc_f64_bits(double f)
{
	uint64_t h;

	memcpy(&h, &f, 8);
	return h;
}

/*
 * inc_f16_to_f32() - the float32 of IEEE binary16 bits @h (exact: every
 * binary16 value is a float32 value; a NaN stays a NaN, payload shifted up).
 */
static inline float inc_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;

	if (e == 0x1f) /* Inf or NaN */
		return inc_f32_of(sign | 0x7f800000u | m << 13);
	if (e == 0) { /* zero or subnormal: m * 2^-24, exact in float32 (m < 2^10) */
		float f = (float)m * (1.0f / 16777216.0f);
		return inc_f32_of(sign | inc_f32_bits(f));
	}
	return inc_f32_of(sign | (e + 112) << 23 | m << 13); /* rebias: 127 - 15 = 112 */
}

/*
 * inc_f32_to_f16() - @f rounded to IEEE binary16, to nearest-even: past
 * 65504 + half an ulp (65520, a tie that goes to the even 2^16) +-Inf,
 * below 2^-14 the binary16 subnormals (quantum 2^-24), a NaN a quiet NaN.
 */
static inline uint16_t inc_f32_to_f16(float f)
{
	uint32_t x = inc_f32_bits(f), sign = (x >> 16) & 0x8000u;

	x &= 0x7fffffffu;
	if (x >= 0x7f800000u) /* Inf, or NaN (kept quiet, top payload bits kept) */
		return (uint16_t)(sign | (x > 0x7f800000u ? 0x7e00u | (x >> 13 & 0x1ffu) : 0x7c00u));
	if (x >= 0x477ff000u) /* >= 65520: rounds to 2^16, out of range */
		return (uint16_t)(sign | 0x7c00u);
	if (x >= 0x38800000u) { /* >= 2^-14: a normal binary16; round at bit 13, a carry bumps the exponent */
		uint32_t r = x + 0xfffu + (x >> 13 & 1);
		return (uint16_t)(sign | (r - 0x38000000u) >> 13); /* exponent 127 -> 15: minus 112 << 23 */
	}
	uint32_t e = x >> 23; /* biased float32 exponent, < 113 */
	if (e < 102)          /* below 2^-25 (half the smallest subnormal): +-0 */
		return (uint16_t)sign;
	/* value = m * 2^(e - 150) = (m >> (126 - e)) units of 2^-24, rounded to nearest-even */
	uint32_t m = (x & 0x7fffffu) | 0x800000u, shift = 126 - e, q = m >> shift;
	uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
	q += rem > half || (rem == half && (q & 1));
	return (uint16_t)(sign | q); /* q = 0x400 is the smallest normal: the same bits */
}

/* inc_bf16_to_f32() - the float32 of bfloat16 bits @h (exact: its top 16 bits). */
static inline float inc_bf16_to_f32(uint16_t h)
{
	return inc_f32_of((uint32_t)h << 16);
}

/* inc_f32_to_bf16() - @f rounded to bfloat16, to nearest-even (a NaN a quiet NaN). */
static inline uint16_t inc_f32_to_bf16(float f)
{
	uint32_t x = inc_f32_bits(f);

	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)(x >> 16 | 0x40u);
	return (uint16_t)((x + 0x7fffu + (x >> 16 & 1)) >> 16); /* carries into the exponent: up to Inf */
}

/*
 * inc_fpick() - float MAX (@max 1) or MIN of operands whose bits are @a
 * (the accumulator) and @b, given their comparisons: @a_wins (a > b for MAX,
 * a < b for MIN), @eq (a == b), @b_nan (b is a NaN). One operand's bits: of
 * equal values their bits ANDed (MAX) or ORed (MIN), which only changes
 * zeros (-0 < +0); a NaN loses to a number; two NaNs give a NaN (a).
 */
static inline uint64_t inc_fpick(int a_wins, int eq, int b_nan, uint64_t a, uint64_t b, int max)
{
	uint64_t r = a_wins ? a : b; /* unordered (a NaN) or equal: b, fixed below */

	r = eq ? (max ? a & b : a | b) : r;
	return b_nan ? a : r;
}

/* INC_FMAXMIN() - inc_fpick() of float values @fa, @fb (any float type) with bits @a, @b. */
#define INC_FMAXMIN(fa, fb, a, b, max) \
	inc_fpick((max) ? (fa) > (fb) : (fa) < (fb), (fa) == (fb), (fb) != (fb), (a), (b), (max))

/*
 * inc_elem_combine() - op(@a, @b) for host-order bits of @t (zero-extended
 * to 64 bits): integer SUM wraps, MAX/MIN compare signed (int*) or unsigned
 * (uint*); float SUM in the type (float16/bfloat16: in float32, rounded back
 * to nearest-even); float MAX/MIN as inc_fpick(). BARRIER (or an unknown
 * @t): @a. Return: the result's host-order bits, zero-extended.
 */
static inline uint64_t inc_elem_combine(uint64_t a, uint64_t b, enum inc_op op, enum inc_dtype t)
{
	int max = op == INC_OP_MAX;

	if (op != INC_OP_SUM && op != INC_OP_MAX && op != INC_OP_MIN)
		return a;
	switch (t) {
	case INC_INT32:
		if (op == INC_OP_SUM)
			return (uint32_t)(a + b);
		return (max ? (int32_t)(uint32_t)b > (int32_t)(uint32_t)a : (int32_t)(uint32_t)b < (int32_t)(uint32_t)a) ? b : a;
	case INC_UINT32:
		if (op == INC_OP_SUM)
			return (uint32_t)(a + b);
		return (max ? b > a : b < a) ? b : a;
	case INC_INT64:
		if (op == INC_OP_SUM)
			return a + b;
		return (max ? (int64_t)b > (int64_t)a : (int64_t)b < (int64_t)a) ? b : a;
	case INC_UINT64:
		if (op == INC_OP_SUM)
			return a + b;
		return (max ? b > a : b < a) ? b : a;
	case INC_FLOAT32: {
		float fa = inc_f32_of((uint32_t)a), fb = inc_f32_of((uint32_t)b);
		if (op == INC_OP_SUM)
			return inc_f32_bits(fa + fb);
		return INC_FMAXMIN(fa, fb, a, b, max);
	}
	case INC_FLOAT64: {
		double fa = inc_f64_of(a), fb = inc_f64_of(b);
		if (op == INC_OP_SUM)
			return inc_f64_bits(fa + fb);
		return INC_FMAXMIN(fa, fb, a, b, max);
	}
	case INC_FLOAT16: {
		float fa = inc_f16_to_f32((uint16_t)a), fb = inc_f16_to_f32((uint16_t)b);
		if (op == INC_OP_SUM)
			return inc_f32_to_f16(fa + fb);
		return INC_FMAXMIN(fa, fb, a, b, max);
	}
	case INC_BFLOAT16: {
		float fa = inc_bf16_to_f32((uint16_t)a), fb = inc_bf16_to_f32((uint16_t)b);
		if (op == INC_OP_SUM)
			return inc_f32_to_bf16(fa + fb);
		return INC_FMAXMIN(fa, fb, a, b, max);
	}
	}
	return a;
}

/* inc_elem_get(), inc_elem_put() - the host-order element of @w bytes (2, 4 or 8) at @p, unaligned. */
static inline uint64_t inc_elem_get(const void *p, size_t w)
{
	uint16_t h;
	uint32_t s;
	uint64_t d;

	if (w == 2)
		return memcpy(&h, p, 2), h;
	if (w == 4)
		return memcpy(&s, p, 4), s;
	return memcpy(&d, p, 8), d;
}

static inline void inc_elem_put(void *p, uint64_t v, size_t w)
{
	uint16_t h = (uint16_t)v;
	uint32_t s = (uint32_t)v;

	if (w == 2)
		memcpy(p, &h, 2);
	else if (w == 4)
		memcpy(p, &s, 4);
	else
		memcpy(p, &v, 8);
}

#endif
