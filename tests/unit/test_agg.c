/*
 * test_agg.c — immediate data and aggregation arithmetic (switch/agg.c), cmocka.
 * Expectations are computed independently in host arithmetic on host-order
 * values; inputs go through the wire format (big-endian) like on the network.
 * Every dtype x operator against an independent reference (ref_combine():
 * float16/bfloat16 sums rounded once from the exact sum, by rint() in double;
 * integers in wider arithmetic); both kernel sets, bit for bit. Results are
 * compared as values (host-order integers, field by field), never as
 * structs, so padding cannot matter (gcc and clang, -O0 and -O2).
 */
#include <arpa/inet.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../proto/inc_elem.h"
#include "../../proto/inc_proto.h"

#define N 257 /* not a multiple of anything convenient */
#define RANKS 4

static void test_imm_layout(void **state)
{
	struct inc_imm m = { INC_RANK_ALL, INC_ALLREDUCE, INC_OP_SUM, INC_FLOAT32 }, d;

	assert_int_equal(inc_imm_encode(&m), 0xffff1100); /* SPEC.md bit layout */
	m = (struct inc_imm){ 2, INC_REDUCE, INC_OP_MIN, INC_INT32 };
	assert_int_equal(inc_imm_encode(&m), 0x00027000);
	m = (struct inc_imm){ 1, INC_BROADCAST, INC_OP_BARRIER, INC_INT32 };
	assert_int_equal(inc_imm_encode(&m), 0x00018000);
	for (int p = 0; p < 4; p++) /* INC_ROUTE (3) included */
		for (int o = 0; o < 4; o++)
			for (int t = 0; t < INC_NDTYPES; t++) {
				m = (struct inc_imm){ (uint16_t)(p * 1000 + o * 10 + t), p, o, t };
				assert_int_equal(inc_imm_decode(inc_imm_encode(&m), &d), 0);
				/* field by field: the struct's padding is not part of its value */
				assert_int_equal(d.dest_rank, m.dest_rank);
				assert_int_equal(d.prim, m.prim);
				assert_int_equal(d.op, m.op);
				assert_int_equal(d.dtype, m.dtype);
			}
	assert_int_equal(inc_imm_decode(0x0002c100, &d), 0); /* primitive 3: route to rank 2 */
	assert_int_equal(d.prim, INC_ROUTE);
	assert_int_equal(d.dest_rank, 2);
	assert_string_equal(inc_prim_name(INC_ROUTE), "route");
	assert_int_equal(inc_imm_decode(0xffff1800, &d), -1); /* dtype 8: the first undefined */
	assert_int_equal(inc_imm_decode(0xffff1f00, &d), -1); /* dtype 15 */
	assert_int_equal(inc_imm_decode(0xffff1700, &d), 0);  /* dtype 7: float64 */
	assert_int_equal(d.dtype, INC_FLOAT64);
	assert_int_equal(inc_imm_decode(0xffff1101, &d), -1); /* reserved bits */
	assert_int_equal(inc_imm_decode(0xffff1140, &d), -1); /* bit 6: reserved too */
	assert_int_equal(INC_IMM_LAST, 0x80);                 /* bit 7: a call's last packet */
	assert_int_equal(inc_imm_decode(0x0002c180, &d), 0);  /* the last packet of a route to rank 2 */
	assert_int_equal(d.prim, INC_ROUTE);
	assert_int_equal(d.dest_rank, 2);
	assert_int_equal(d.dtype, INC_FLOAT32);
	assert_int_equal(inc_imm_decode(0xffff0080, &d), 0);  /* ... of a barrier */
	assert_int_equal(d.op, INC_OP_BARRIER);
	assert_string_equal(inc_op_name(INC_OP_MAX), "max");
	assert_string_equal(inc_dtype_name(INC_FLOAT32), "float32");
	assert_string_equal(inc_dtype_name((enum inc_dtype)8), "?");
	static const struct {
		enum inc_dtype t;
		const char *name;
		size_t size;
	} types[] = { { INC_INT32, "int32", 4 },      { INC_FLOAT32, "float32", 4 }, { INC_UINT32, "uint32", 4 },
		      { INC_INT64, "int64", 8 },      { INC_UINT64, "uint64", 8 },   { INC_FLOAT16, "float16", 2 },
		      { INC_BFLOAT16, "bfloat16", 2 }, { INC_FLOAT64, "float64", 8 } };
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		enum inc_dtype t = (enum inc_dtype)-1;
		assert_int_equal(types[i].t, (int)i); /* the wire values 0..7 */
		assert_string_equal(inc_dtype_name(types[i].t), types[i].name);
		assert_int_equal(inc_dtype_size(types[i].t), types[i].size);
		assert_int_equal(inc_dtype_parse(types[i].name, &t), 0);
		assert_int_equal(t, types[i].t);
	}
	enum inc_dtype t = INC_INT32;
	assert_int_equal(inc_dtype_parse("float128", &t), -1);
	assert_int_equal(inc_dtype_parse(NULL, &t), -1);
	assert_int_equal(inc_dtype_size((enum inc_dtype)8), 0);
	assert_string_equal(inc_prim_name(INC_REDUCE), "reduce");
}

static void to_wire_i(uint32_t *w, const int32_t *v) { for (int i = 0; i < N; i++) w[i] = htonl((uint32_t)v[i]); }
static void to_wire_f(uint32_t *w, const float *v)
{
	for (int i = 0; i < N; i++) {
		uint32_t h;
		memcpy(&h, &v[i], 4);
		w[i] = htonl(h);
	}
}
static float from_wire_f(uint32_t w)
{
	uint32_t h = ntohl(w);
	float f;
	memcpy(&f, &h, 4);
	return f;
}

static void test_int32_all_ops(void **state)
{
	static int32_t in[RANKS][N];
	static uint32_t wire[RANKS][N], acc[N];

	srand(7);
	for (int r = 0; r < RANKS; r++)
		for (int i = 0; i < N; i++)
			in[r][i] = (int32_t)(rand() % 2000001) - 1000000; /* negative values too */
	for (int op = INC_OP_SUM; op <= INC_OP_MIN; op++) {
		for (int r = 0; r < RANKS; r++)
			to_wire_i(wire[r], in[r]);
		memcpy(acc, wire[2], sizeof(acc)); /* first arrival copies, in any order */
		inc_combine(acc, wire[0], N, op, INC_INT32);
		inc_combine(acc, wire[3], N, op, INC_INT32);
		inc_combine(acc, wire[1], N, op, INC_INT32);
		for (int i = 0; i < N; i++) {
			int64_t want = in[0][i];
			for (int r = 1; r < RANKS; r++)
				want = op == INC_OP_SUM ? want + in[r][i]
				     : op == INC_OP_MAX ? (in[r][i] > want ? in[r][i] : want)
							: (in[r][i] < want ? in[r][i] : want);
			assert_int_equal((int32_t)ntohl(acc[i]), (int32_t)want);
		}
	}
	/* SUM wraps as two's complement */
	int32_t a[N] = { INT32_MAX }, b[N] = { 1 };
	uint32_t wa[N], wb[N];
	to_wire_i(wa, a);
	to_wire_i(wb, b);
	inc_combine(wa, wb, 1, INC_OP_SUM, INC_INT32);
	assert_int_equal((int32_t)ntohl(wa[0]), INT32_MIN);
}

static void test_float32_is_float_arithmetic(void **state)
{
	static float in[RANKS][N];
	static uint32_t wire[RANKS][N], acc[N];

	/* multiples of 1/8 in +-2^10: every partial sum is exact, in any order */
	srand(11);
	for (int r = 0; r < RANKS; r++)
		for (int i = 0; i < N; i++)
			in[r][i] = (float)(rand() % 16385 - 8192) / 8.0f;
	for (int op = INC_OP_SUM; op <= INC_OP_MIN; op++) {
		for (int r = 0; r < RANKS; r++)
			to_wire_f(wire[r], in[r]);
		memcpy(acc, wire[1], sizeof(acc));
		inc_combine(acc, wire[3], N, op, INC_FLOAT32);
		inc_combine(acc, wire[0], N, op, INC_FLOAT32);
		inc_combine(acc, wire[2], N, op, INC_FLOAT32);
		for (int i = 0; i < N; i++) {
			double want = in[0][i];
			for (int r = 1; r < RANKS; r++)
				want = op == INC_OP_SUM ? want + in[r][i] : op == INC_OP_MAX ? fmax(want, in[r][i]) : fmin(want, in[r][i]);
			assert_true(from_wire_f(acc[i]) == (float)want);
		}
	}
	/* 0.5 + 0.25 = 0.75: adding the bit patterns as integers would not give this */
	float x[N] = { 0.5f }, y[N] = { 0.25f };
	uint32_t wx[N], wy[N];
	to_wire_f(wx, x);
	to_wire_f(wy, y);
	inc_combine(wx, wy, 1, INC_OP_SUM, INC_FLOAT32);
	assert_true(from_wire_f(wx[0]) == 0.75f);
}

/* ---- the documented semantics (inc_proto.h), bit for bit, in both orders ---- */

#define ANY_NAN 0x7fc00000u /* in a table of expectations: any NaN will do */
#define PAYLOAD_OFF 2       /* a frame's payload starts at offset 58: 2 bytes past 4-byte alignment */

static uint32_t bits_of(float f)
{
	uint32_t h;
	memcpy(&h, &f, 4);
	return h;
}

/* One pair of operands (host-order bits of the dtype) and the expected result of each op. */
struct pair_case {
	uint64_t a, b;
	uint64_t sum, max, min; /* of a float dtype, a NaN: a NaN of any sign and payload */
	const char *what;
};

/* put_be(), get_be() - a @w-byte element @v at @p, big-endian (the wire), and back. */
static void put_be(uint8_t *p, uint64_t v, size_t w)
{
	for (size_t b = 0; b < w; b++)
		p[b] = (uint8_t)(v >> (8 * (w - 1 - b)));
}

static uint64_t get_be(const uint8_t *p, size_t w)
{
	uint64_t v = 0;

	for (size_t b = 0; b < w; b++)
		v = v << 8 | p[b];
	return v;
}

static int is_float(enum inc_dtype t)
{
	return t == INC_FLOAT16 || t == INC_BFLOAT16 || t == INC_FLOAT32 || t == INC_FLOAT64;
}

/* is_nan_t() - are @h the bits of a NaN of float dtype @t? (0 for integer dtypes) */
static int is_nan_t(enum inc_dtype t, uint64_t h)
{
	switch (t) {
	case INC_FLOAT16: return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu);
	case INC_BFLOAT16: return (h & 0x7f80u) == 0x7f80u && (h & 0x7fu);
	case INC_FLOAT32: return (h & 0x7f800000u) == 0x7f800000u && (h & 0x007fffffu);
	case INC_FLOAT64: return (h & 0x7ff0000000000000ull) == 0x7ff0000000000000ull && (h & 0x000fffffffffffffull);
	default: return 0;
	}
}

/* same_result() - does @got match @want of dtype @t: the same bits, or both NaNs of a float dtype? */
static int same_result(enum inc_dtype t, uint64_t got, uint64_t want)
{
	return got == want || (is_nan_t(t, want) && is_nan_t(t, got));
}

/*
 * Combine every case's a with its b (and then b with a) in one call of
 * inc_combine() on unaligned buffers, so the vectorised loop runs as in the
 * switch, and compare bit for bit (a NaN matches any NaN).
 */
static void check_pairs(const struct pair_case *c, size_t n, enum inc_op op, enum inc_dtype dtype)
{
	static uint8_t accbuf[N * 8 + PAYLOAD_OFF], inbuf[N * 8 + PAYLOAD_OFF];
	uint8_t *acc = accbuf + PAYLOAD_OFF, *in = inbuf + PAYLOAD_OFF;
	size_t w = inc_dtype_size(dtype);

	assert_true(n <= N);
	for (int kern = 0; kern <= 1; kern++) {
		inc_kernel_use(kern ? INC_KERNEL_SCALAR : INC_KERNEL_SIMD, "test");
		for (int swap = 0; swap <= 1; swap++) {
			for (size_t i = 0; i < n; i++) {
				put_be(acc + w * i, swap ? c[i].b : c[i].a, w);
				put_be(in + w * i, swap ? c[i].a : c[i].b, w);
			}
			inc_combine(acc, in, n, op, dtype);
			for (size_t i = 0; i < n; i++) {
				uint64_t got = get_be(acc + w * i, w);
				uint64_t want = op == INC_OP_SUM ? c[i].sum : op == INC_OP_MAX ? c[i].max : c[i].min;
				if (!same_result(dtype, got, want))
					fail_msg("%s %s %s(0x%llx, 0x%llx) = 0x%llx, want 0x%llx (%s)", inc_kernel_name(NULL),
						 inc_dtype_name(dtype), inc_op_name(op),
						 (unsigned long long)(swap ? c[i].b : c[i].a),
						 (unsigned long long)(swap ? c[i].a : c[i].b), (unsigned long long)got,
						 (unsigned long long)want, c[i].what);
			}
		}
	}
	inc_kernel_use(INC_KERNEL_AUTO, NULL);
}

/* host-order bit patterns of float32 values */
#define B_PZ 0x00000000u    /* +0 */
#define B_NZ 0x80000000u    /* -0 */
#define B_PINF 0x7f800000u  /* +Inf */
#define B_NINF 0xff800000u  /* -Inf */
#define B_QNAN 0x7fc00000u  /* quiet NaN */
#define B_NQNAN 0xffc00123u /* negative quiet NaN with a payload */
#define B_SNAN 0x7f800001u  /* signaling NaN */
#define B_FMAX 0x7f7fffffu  /* FLT_MAX */
#define B_NFMAX 0xff7fffffu /* -FLT_MAX */
#define B_SUB1 0x00000001u  /* the smallest subnormal */
#define B_NSUB1 0x80000001u /* and its negative */
#define B_ONE 0x3f800000u   /* 1 */
#define B_TWO 0x40000000u   /* 2 */
#define B_NONE 0xbf800000u  /* -1 */
#define B_THREE 0x40400000u /* 3 */

/* float32 SUM/MAX/MIN of special values: signed zeros, NaNs, infinities, subnormals. */
static void test_float32_special_values_both_orders(void **state)
{
	static const struct pair_case c[] = {
		{ B_PZ, B_NZ, B_PZ, B_PZ, B_NZ, "+0 and -0: +0 + -0 = +0, -0 < +0" },
		{ B_NZ, B_NZ, B_NZ, B_NZ, B_NZ, "-0 + -0 = -0" },
		{ B_PZ, B_PZ, B_PZ, B_PZ, B_PZ, "+0 and +0" },
		{ B_QNAN, B_THREE, ANY_NAN, B_THREE, B_THREE, "a NaN loses to a number" },
		{ B_NQNAN, B_NINF, ANY_NAN, B_NINF, B_NINF, "a negative NaN loses to -Inf" },
		{ B_SNAN, B_ONE, ANY_NAN, B_ONE, B_ONE, "a signaling NaN loses too" },
		{ B_QNAN, B_NZ, ANY_NAN, B_NZ, B_NZ, "a NaN loses to -0" },
		{ B_QNAN, B_NQNAN, ANY_NAN, ANY_NAN, ANY_NAN, "two NaNs give a NaN" },
		{ B_PINF, B_NINF, ANY_NAN, B_PINF, B_NINF, "Inf + -Inf = NaN" },
		{ B_PINF, B_FMAX, B_PINF, B_PINF, B_FMAX, "+Inf beats FLT_MAX" },
		{ B_NINF, B_NFMAX, B_NINF, B_NFMAX, B_NINF, "-Inf is below -FLT_MAX" },
		{ B_FMAX, B_FMAX, B_PINF, B_FMAX, B_FMAX, "FLT_MAX + FLT_MAX overflows to +Inf" },
		{ B_NFMAX, B_NFMAX, B_NINF, B_NFMAX, B_NFMAX, "-FLT_MAX + -FLT_MAX overflows to -Inf" },
		{ B_SUB1, B_NZ, B_SUB1, B_SUB1, B_NZ, "the smallest subnormal against -0" },
		{ B_SUB1, B_NSUB1, B_PZ, B_SUB1, B_NSUB1, "subnormals cancel to +0" },
		{ B_SUB1, B_SUB1, 0x00000002u, B_SUB1, B_SUB1, "subnormals add exactly" },
		{ B_ONE, B_TWO, B_THREE, B_TWO, B_ONE, "plain numbers" },
		{ B_NONE, B_NZ, B_NONE, B_NZ, B_NONE, "-1 against -0" },
		{ B_ONE, B_NONE, B_PZ, B_ONE, B_NONE, "x + -x = +0" },
	};

	for (int op = INC_OP_SUM; op <= INC_OP_MIN; op++)
		check_pairs(c, sizeof(c) / sizeof(c[0]), (enum inc_op)op, INC_FLOAT32);
}

/* float32 SUM rounds to nearest-even in single precision at each combine. */
static void test_float32_sum_rounds(void **state)
{
	static const struct pair_case c[] = {
		{ B_ONE, 0x33800000u /* 2^-24 */, B_ONE, 0, 0, "1 + 2^-24: a tie, to even (1)" },
		{ 0x3f800001u /* 1 + 2^-23 */, 0x33800000u, 0x3f800002u, 0, 0, "(1 + 2^-23) + 2^-24: a tie, to even" },
		{ B_ONE, 0x33800001u /* just over 2^-24 */, 0x3f800001u, 0, 0, "past the tie: rounds up" },
		{ 0x4b800000u /* 2^24 */, B_ONE, 0x4b800000u, 0, 0, "2^24 + 1 = 2^24 in float32" },
		{ 0x3dcccccdu /* 0.1f */, 0x3e4ccccdu /* 0.2f */, 0x3e99999au, 0, 0, "0.1f + 0.2f" },
		{ 0x00800000u /* FLT_MIN */, 0x80000001u, 0x007fffffu, 0, 0, "into the subnormals" },
	};

	check_pairs(c, sizeof(c) / sizeof(c[0]), INC_OP_SUM, INC_FLOAT32);

	/* random full-mantissa values of varied exponents: every combine is one rounded float addition */
	static float x[N], y[N];
	static uint32_t wx[N], wy[N];
	int rounded = 0;

	srand(13);
	for (int i = 0; i < N; i++) {
		x[i] = ldexpf(1.0f + (float)(rand() & 0x7fffff) / 8388608.0f, rand() % 40 - 20) * (rand() & 1 ? -1 : 1);
		y[i] = ldexpf(1.0f + (float)(rand() & 0x7fffff) / 8388608.0f, rand() % 40 - 20);
	}
	to_wire_f(wx, x);
	to_wire_f(wy, y);
	inc_combine(wx, wy, N, INC_OP_SUM, INC_FLOAT32);
	for (int i = 0; i < N; i++) {
		float want = x[i] + y[i]; /* C11 on x86-64: float arithmetic, rounded to float */
		assert_int_equal(ntohl(wx[i]), bits_of(want));
		rounded += (double)want != (double)x[i] + (double)y[i];
	}
	assert_true(rounded > N / 2); /* the inputs really do round */
}

/* int32: SUM wraps modulo 2^32; MAX/MIN at the extremes. */
static void test_int32_wraps_and_extremes(void **state)
{
	const uint32_t imax = 0x7fffffffu, imin = 0x80000000u, m1 = 0xffffffffu;
	const struct pair_case c[] = {
		{ imax, 1, imin, imax, 1, "INT32_MAX + 1 wraps to INT32_MIN" },
		{ imin, m1, imax, m1, imin, "INT32_MIN + -1 wraps to INT32_MAX" },
		{ imin, imin, 0, imin, imin, "INT32_MIN + INT32_MIN = 0" },
		{ imax, imax, 0xfffffffeu, imax, imax, "INT32_MAX + INT32_MAX = -2" },
		{ imax, imin, m1, imax, imin, "INT32_MAX + INT32_MIN = -1" },
		{ 0, m1, m1, 0, m1, "0 and -1: signed comparison" },
	};

	for (int op = INC_OP_SUM; op <= INC_OP_MIN; op++)
		check_pairs(c, sizeof(c) / sizeof(c[0]), (enum inc_op)op, INC_INT32);
}

static void test_barrier_changes_nothing(void **state)
{
	uint32_t a[4] = { 1, 2, 3, 4 }, b[4] = { 9, 9, 9, 9 }, c[4];

	memcpy(c, a, sizeof(a));
	inc_combine(a, b, 4, INC_OP_BARRIER, INC_INT32);
	assert_memory_equal(a, c, sizeof(a));
}

/* ---- every dtype x operator against an independent reference ---- */

/* dec() - the value of float bits @h of @t, decoded field by field (not through inc_elem.h). */
static double dec(enum inc_dtype t, uint64_t h)
{
	int p, ebits; /* significand bits after the point, exponent bits */
	double v;

	switch (t) {
	case INC_FLOAT16: p = 10, ebits = 5; break;
	case INC_BFLOAT16: p = 7, ebits = 8; break;
	case INC_FLOAT32: p = 23, ebits = 8; break;
	default: {
		memcpy(&v, &h, 8);
		return v;
	}
	}
	int bias = (1 << (ebits - 1)) - 1, e = (int)(h >> p & ((1u << ebits) - 1));
	uint64_t m = h & ((1ull << p) - 1);
	int neg = (int)(h >> (p + ebits) & 1);
	if (e == (1 << ebits) - 1)
		v = m ? NAN : INFINITY;
	else if (e == 0)
		v = ldexp((double)m, 1 - bias - p);
	else
		v = ldexp((double)(m | 1ull << p), e - bias - p);
	return neg ? -v : v;
}

/*
 * enc() - @x rounded once to float dtype @t, to nearest-even (rint() on the
 * value scaled to the type's quantum at its exponent; overflow: +-Inf), as
 * bits. @x's sign is kept for zeros.
 */
static uint64_t enc(enum inc_dtype t, double x)
{
	int p, emin, emax, ebits;

	if (t == INC_FLOAT64) {
		uint64_t h;
		memcpy(&h, &x, 8);
		return h;
	}
	if (t == INC_FLOAT32) {
		float f = (float)x; /* the C conversion: to nearest-even */
		uint32_t h;
		memcpy(&h, &f, 4);
		return h;
	}
	p = t == INC_FLOAT16 ? 11 : 8;
	ebits = t == INC_FLOAT16 ? 5 : 8;
	emax = (1 << (ebits - 1)) - 1;
	emin = 1 - emax;
	uint64_t sign = signbit(x) ? 1ull << (p - 1 + ebits) : 0, mag;
	if (isnan(x))
		return sign | (((1ull << ebits) - 1) << (p - 1)) | 1ull << (p - 2);
	double a = fabs(x);
	if (a != 0 && !isinf(a)) {
		int e;
		frexp(a, &e);
		int lead = e - 1 < emin ? emin : e - 1;
		double q = ldexp(1.0, lead - (p - 1));
		a = rint(a / q) * q;
	}
	if (isinf(a) || a >= ldexp(1.0, emax + 1))
		mag = ((1ull << ebits) - 1) << (p - 1);
	else if (a < ldexp(1.0, emin)) /* subnormal or zero */
		mag = (uint64_t)ldexp(a, p - 1 - emin);
	else {
		int e;
		frexp(a, &e);
		mag = (uint64_t)(e - 1 + emax) << (p - 1) | ((uint64_t)ldexp(a, p - e) & ((1ull << (p - 1)) - 1));
	}
	return sign | mag;
}

/* signed_val() - the integer value of @h as the signed dtype @t (int32, int64) */
static int64_t signed_val(enum inc_dtype t, uint64_t h)
{
	return t == INC_INT32 ? (int64_t)(int32_t)(uint32_t)h : (int64_t)h;
}

/*
 * ref_combine() - op(@a, @b) of dtype @t as inc_proto.h specifies it,
 * computed independently of inc_elem.h: integer SUM in 128 bits, truncated;
 * float SUM exact in double (float16; bfloat16 and double then rounded once
 * more, innocuous for 8 bits) rounded once to the type; float32 and float64
 * in their own C arithmetic; MAX/MIN from the rules.
 */
static uint64_t ref_combine(enum inc_dtype t, enum inc_op op, uint64_t a, uint64_t b)
{
	size_t w = inc_dtype_size(t);
	uint64_t mask = w == 8 ? ~0ull : (1ull << (8 * w)) - 1;

	if (!is_float(t)) {
		if (op == INC_OP_SUM)
			return (uint64_t)((unsigned __int128)a + b) & mask;
		int b_bigger = t == INC_INT32 || t == INC_INT64 ? signed_val(t, b) > signed_val(t, a) : b > a;
		int b_smaller = t == INC_INT32 || t == INC_INT64 ? signed_val(t, b) < signed_val(t, a) : b < a;
		return (op == INC_OP_MAX ? b_bigger : b_smaller) ? b : a;
	}
	double x = dec(t, a), y = dec(t, b);
	if (op == INC_OP_SUM) {
		if (t == INC_FLOAT32) {
			float fx = (float)x, fy = (float)y, r = fx + fy;
			return enc(t, r);
		}
		return enc(t, x + y);
	}
	if (isnan(x) && isnan(y))
		return a; /* any NaN */
	if (isnan(x))
		return b;
	if (isnan(y))
		return a;
	if (x == 0 && y == 0) /* -0 < +0 */
		return (op == INC_OP_MAX) == !signbit(x) ? a : b;
	return (op == INC_OP_MAX ? y > x : y < x) ? b : a;
}

/* xs() - a 64-bit pseudo-random number (xorshift64*), reproducible. */
static uint64_t xs(uint64_t *st)
{
	*st ^= *st >> 12;
	*st ^= *st << 25;
	*st ^= *st >> 27;
	return *st * 0x2545f4914f6cdd1dull;
}

/*
 * operand() - a test operand of dtype @t: a quarter special values (zeros,
 * infinities, NaNs, extremes, subnormals, ones), a quarter random bits, half
 * values near each other (same sign and exponent region) so that sums round,
 * tie and cancel.
 */
static uint64_t operand(enum inc_dtype t, uint64_t *st, uint64_t near)
{
	size_t w = inc_dtype_size(t);
	uint64_t mask = w == 8 ? ~0ull : (1ull << (8 * w)) - 1, r = xs(st);
	uint64_t top = 1ull << (8 * w - 1); /* the sign bit */
	int ebits = t == INC_FLOAT16 ? 5 : t == INC_FLOAT64 ? 11 : 8, p = 8 * (int)w - 1 - ebits;
	uint64_t inf = ((1ull << ebits) - 1) << p;

	if (r % 4 == 0) {
		static const int nspecial = 12;
		uint64_t sp[12] = { 0, top, 1, top | 1, mask, top - 1, top, 0, 0, 0, 0, 0 };
		if (is_float(t)) {
			uint64_t one = ((1ull << (ebits - 1)) - 1) << p;
			uint64_t sp2[12] = { 0, top, inf, top | inf, inf | 1ull << (p - 1), top | inf | 5, inf - 1,
					     top | (inf - 1), 1, top | 1, one, (1ull << p) - 1 };
			memcpy(sp, sp2, sizeof(sp));
		}
		return sp[(r >> 8) % (is_float(t) ? nspecial : 7)];
	}
	if (r % 4 == 1)
		return (r >> 2) & mask;
	/* near @near: the same top bits, the low half random */
	return (near & mask & ~(mask >> (4 * w))) | ((r >> 3) & (mask >> (4 * w)));
}

#define NR 1000 /* operand pairs per dtype and operator */

/* same_nan_aside() - are @x and @y of dtype @t the same bits, or both NaNs? */
static int same_nan_aside(enum inc_dtype t, uint64_t x, uint64_t y)
{
	return x == y || (is_nan_t(t, x) && is_nan_t(t, y));
}

/*
 * Every dtype x operator on NR pairs, each kernel set, in wire format
 * (inc_combine()) and in host order (inc_load(), inc_combine_host(),
 * inc_store()), from a payload offset like a frame's: each result against
 * ref_combine(), and the two kernel sets and two paths against each other
 * bit for bit, but for the sign and payload of a NaN result, which
 * inc_proto.h leaves unspecified (of two NaN operands, which one an
 * addition passes on is the compiler's choice of operand order).
 */

static void test_every_dtype_and_op(void **state)
{
	static uint8_t abuf[NR * 8 + PAYLOAD_OFF], bbuf[NR * 8 + PAYLOAD_OFF], got[4][NR * 8];
	uint64_t st = 0x9e3779b97f4a7c15ull;
	long rounded = 0;

	for (int t = 0; t < INC_NDTYPES; t++)
		for (int op = INC_OP_SUM; op <= INC_OP_MIN; op++) {
			size_t w = inc_dtype_size((enum inc_dtype)t);
			uint8_t *a = abuf + PAYLOAD_OFF, *b = bbuf + PAYLOAD_OFF;
			uint64_t av[NR], bv[NR];
			for (int i = 0; i < NR; i++) {
				av[i] = operand((enum inc_dtype)t, &st, xs(&st));
				bv[i] = operand((enum inc_dtype)t, &st, av[i]);
			}
			for (int k = 0; k < 4; k++) { /* SIMD wire, SIMD host, scalar wire, scalar host */
				inc_kernel_use(k < 2 ? INC_KERNEL_SIMD : INC_KERNEL_SCALAR, "test");
				for (int i = 0; i < NR; i++) {
					put_be(a + w * i, av[i], w);
					put_be(b + w * i, bv[i], w);
				}
				if (k % 2 == 0) {
					inc_combine(a, b, NR, (enum inc_op)op, (enum inc_dtype)t);
				} else {
					static uint8_t hacc[NR * 8];
					inc_load(hacc, a, NR * w, (enum inc_dtype)t);
					inc_combine_host(hacc, b, NR, (enum inc_op)op, (enum inc_dtype)t);
					inc_store(hacc, NR * w, (enum inc_dtype)t);
					memcpy(a, hacc, NR * w);
				}
				memcpy(got[k], a, NR * w);
			}
			for (int k = 1; k < 4; k++)
				for (int i = 0; i < NR; i++)
					if (!same_nan_aside((enum inc_dtype)t, get_be(got[0] + w * i, w), get_be(got[k] + w * i, w)))
						fail_msg("%s %s(0x%llx, 0x%llx): kernel path %d gives 0x%llx, SIMD in wire "
							 "format 0x%llx",
							 inc_dtype_name((enum inc_dtype)t), inc_op_name((enum inc_op)op),
							 (unsigned long long)av[i], (unsigned long long)bv[i], k,
							 (unsigned long long)get_be(got[k] + w * i, w),
							 (unsigned long long)get_be(got[0] + w * i, w));
			for (int i = 0; i < NR; i++) {
				uint64_t g = get_be(got[0] + w * i, w), want = ref_combine((enum inc_dtype)t, (enum inc_op)op,
											  av[i], bv[i]);
				if (!same_result((enum inc_dtype)t, g, want))
					fail_msg("%s %s(0x%llx, 0x%llx) = 0x%llx, want 0x%llx", inc_dtype_name((enum inc_dtype)t),
						 inc_op_name((enum inc_op)op), (unsigned long long)av[i],
						 (unsigned long long)bv[i], (unsigned long long)g, (unsigned long long)want);
				/* the operation commutes, NaN payloads aside */
				uint64_t rev = ref_combine((enum inc_dtype)t, (enum inc_op)op, bv[i], av[i]);
				assert_true(same_result((enum inc_dtype)t, g, rev));
				if (op == INC_OP_SUM && is_float((enum inc_dtype)t) && t != INC_FLOAT64)
					rounded += !isnan(dec((enum inc_dtype)t, g)) &&
						   dec((enum inc_dtype)t, g) != dec((enum inc_dtype)t, av[i]) + dec((enum inc_dtype)t, bv[i]);
			}
		}
	inc_kernel_use(INC_KERNEL_AUTO, NULL);
	assert_true(rounded > 300); /* the float sums really did round */
}

/* fp16 and bf16 bit patterns used below */
#define H_ONE 0x3c00u
#define H_MAX 0x7bffu /* 65504 */
#define H_INF 0x7c00u
#define H_NINF 0xfc00u
#define H_NAN 0x7e00u
#define H_NZ 0x8000u
#define BF_ONE 0x3f80u
#define BF_INF 0x7f80u
#define BF_NINF 0xff80u
#define BF_NAN 0x7fc0u
#define BF_NZ 0x8000u

/* float16: rounding ties to even at each combine, overflow, subnormals, zeros, NaN, Inf. */
static void test_float16_rounding_and_specials(void **state)
{
	static const struct pair_case c[] = {
		{ H_ONE, 0x1000u /* 2^-11 */, H_ONE, H_ONE, 0x1000u, "1 + 2^-11: a tie, to even (1)" },
		{ 0x3c01u /* 1 + 2^-10 */, 0x1000u, 0x3c02u, 0x3c01u, 0x1000u, "(1 + 2^-10) + 2^-11: a tie, to even (up)" },
		{ H_ONE, 0x1001u /* 2^-11 (1 + 2^-10) */, 0x3c01u, H_ONE, 0x1001u, "just past the tie: up (exact in float32)" },
		{ H_MAX, 0x4c00u /* 16 */, H_INF, H_MAX, 0x4c00u, "65504 + 16 = 65520: a tie, to Inf" },
		{ H_MAX, 0x4800u /* 8 */, H_MAX, H_MAX, 0x4800u, "65504 + 8 rounds back to 65504" },
		{ H_MAX, H_MAX, H_INF, H_MAX, H_MAX, "overflow to +Inf" },
		{ 0x0001u, 0x0001u, 0x0002u, 0x0001u, 0x0001u, "subnormals add exactly" },
		{ 0x03ffu, 0x0001u, 0x0400u, 0x03ffu, 0x0001u, "the largest subnormal + the smallest: the smallest normal" },
		{ 0x0001u, 0x8001u, 0x0000u, 0x0001u, 0x8001u, "subnormals cancel to +0" },
		{ 0x0000u, H_NZ, 0x0000u, 0x0000u, H_NZ, "+0 + -0 = +0, -0 < +0" },
		{ H_NZ, H_NZ, H_NZ, H_NZ, H_NZ, "-0 + -0 = -0" },
		{ H_NAN, H_ONE, H_NAN, H_ONE, H_ONE, "a NaN loses to a number" },
		{ 0xfe01u, H_NINF, H_NAN, H_NINF, H_NINF, "a negative NaN with a payload loses to -Inf" },
		{ H_NAN, 0xfe00u, H_NAN, H_NAN, H_NAN, "two NaNs give a NaN" },
		{ H_INF, H_NINF, H_NAN, H_INF, H_NINF, "Inf + -Inf = NaN" },
		{ H_INF, H_MAX, H_INF, H_INF, H_MAX, "+Inf beats 65504" },
		{ 0x7800u /* 32768 */, 0x0001u /* 2^-24 */, 0x7800u, 0x7800u, 0x0001u, "rounded twice, to 32768" },
	};

	for (int op = INC_OP_SUM; op <= INC_OP_MIN; op++)
		check_pairs(c, sizeof(c) / sizeof(c[0]), (enum inc_op)op, INC_FLOAT16);
}

/* bfloat16: rounding ties to even at each combine, overflow, subnormals, zeros, NaN, Inf. */
static void test_bfloat16_rounding_and_specials(void **state)
{
	static const struct pair_case c[] = {
		{ BF_ONE, 0x3b80u /* 2^-8 */, BF_ONE, BF_ONE, 0x3b80u, "1 + 2^-8: a tie, to even (1)" },
		{ 0x3f81u /* 1 + 2^-7 */, 0x3b80u, 0x3f82u, 0x3f81u, 0x3b80u, "(1 + 2^-7) + 2^-8: a tie, to even (up)" },
		{ BF_ONE, 0x3b81u, 0x3f81u, BF_ONE, 0x3b81u, "just past the tie: up" },
		{ 0x7f7fu /* the largest */, 0x7f7fu, BF_INF, 0x7f7fu, 0x7f7fu, "overflow to +Inf" },
		{ 0x0001u, 0x0001u, 0x0002u, 0x0001u, 0x0001u, "subnormals (2^-133) add exactly" },
		{ 0x0001u, 0x8001u, 0x0000u, 0x0001u, 0x8001u, "subnormals cancel to +0" },
		{ 0x0000u, BF_NZ, 0x0000u, 0x0000u, BF_NZ, "+0 + -0 = +0, -0 < +0" },
		{ BF_NZ, BF_NZ, BF_NZ, BF_NZ, BF_NZ, "-0 + -0 = -0" },
		{ BF_NAN, BF_ONE, BF_NAN, BF_ONE, BF_ONE, "a NaN loses to a number" },
		{ 0x7f81u /* signaling */, BF_NINF, BF_NAN, BF_NINF, BF_NINF, "a signaling NaN loses to -Inf" },
		{ BF_INF, BF_NINF, BF_NAN, BF_INF, BF_NINF, "Inf + -Inf = NaN" },
		{ 0x4f80u /* 2^32 */, BF_ONE, 0x4f80u, 0x4f80u, BF_ONE, "2^32 + 1 = 2^32" },
	};

	for (int op = INC_OP_SUM; op <= INC_OP_MIN; op++)
		check_pairs(c, sizeof(c) / sizeof(c[0]), (enum inc_op)op, INC_BFLOAT16);
}

/* float64: one IEEE double addition; the same NaN, zero and infinity rules. */
static void test_float64_specials(void **state)
{
	const uint64_t one = 0x3ff0000000000000ull, two = 0x4000000000000000ull, three = 0x4008000000000000ull;
	const uint64_t inf = 0x7ff0000000000000ull, ninf = 0xfff0000000000000ull, nan = 0x7ff8000000000000ull;
	const uint64_t nz = 0x8000000000000000ull, dmax = 0x7fefffffffffffffull, ulp = 0x3ca0000000000000ull;
	const struct pair_case c[] = {
		{ one, two, three, two, one, "plain numbers" },
		{ one, ulp /* 2^-53 */, one, one, ulp, "1 + 2^-53: a tie, to even" },
		{ 0x3ff0000000000001ull, ulp, 0x3ff0000000000002ull, 0x3ff0000000000001ull, ulp, "a tie, to even (up)" },
		{ dmax, dmax, inf, dmax, dmax, "overflow to +Inf" },
		{ 0, nz, 0, 0, nz, "+0 + -0 = +0, -0 < +0" },
		{ nz, nz, nz, nz, nz, "-0 + -0 = -0" },
		{ nan, three, nan, three, three, "a NaN loses to a number" },
		{ 0xfff8000000000123ull, ninf, nan, ninf, ninf, "a negative NaN loses to -Inf" },
		{ nan, nan | nz, nan, nan, nan, "two NaNs give a NaN" },
		{ inf, ninf, nan, inf, ninf, "Inf + -Inf = NaN" },
		{ 1, 1, 2, 1, 1, "subnormals add exactly" },
		{ 1, nz | 1, 0, 1, nz | 1, "subnormals cancel to +0" },
	};

	for (int op = INC_OP_SUM; op <= INC_OP_MIN; op++)
		check_pairs(c, sizeof(c) / sizeof(c[0]), (enum inc_op)op, INC_FLOAT64);
}

/* uint32, int64, uint64: SUM wraps; MAX/MIN compare unsigned or signed. */
static void test_wide_and_unsigned_integers_wrap(void **state)
{
	const uint64_t m1 = ~0ull, i64max = 0x7fffffffffffffffull, i64min = 0x8000000000000000ull;
	const struct pair_case u32[] = {
		{ 0xffffffffu, 1, 0, 0xffffffffu, 1, "UINT32_MAX + 1 wraps to 0; compared unsigned" },
		{ 0x80000000u, 0x7fffffffu, 0xffffffffu, 0x80000000u, 0x7fffffffu, "2^31 > 2^31 - 1 unsigned" },
		{ 0x80000000u, 0x80000000u, 0, 0x80000000u, 0x80000000u, "2^31 + 2^31 wraps to 0" },
	};
	const struct pair_case i64[] = {
		{ i64max, 1, i64min, i64max, 1, "INT64_MAX + 1 wraps to INT64_MIN" },
		{ i64min, m1, i64max, m1, i64min, "INT64_MIN + -1 wraps to INT64_MAX" },
		{ 0, m1, m1, 0, m1, "0 and -1: signed comparison" },
		{ 0x100000000ull, 0xffffffffull, 0x1ffffffffull, 0x100000000ull, 0xffffffffull, "a carry past bit 31" },
	};
	const struct pair_case u64[] = {
		{ m1, 1, 0, m1, 1, "UINT64_MAX + 1 wraps to 0" },
		{ i64min, i64max, m1, i64min, i64max, "2^63 > 2^63 - 1 unsigned" },
		{ 0, m1, m1, m1, 0, "0 and UINT64_MAX: unsigned comparison" },
	};

	for (int op = INC_OP_SUM; op <= INC_OP_MIN; op++) {
		check_pairs(u32, sizeof(u32) / sizeof(u32[0]), (enum inc_op)op, INC_UINT32);
		check_pairs(i64, sizeof(i64) / sizeof(i64[0]), (enum inc_op)op, INC_INT64);
		check_pairs(u64, sizeof(u64) / sizeof(u64[0]), (enum inc_op)op, INC_UINT64);
	}
}

/*
 * The reference itself: enc() of every float16 and bfloat16 value decodes
 * back to it (so a wrong rounding in the reference cannot hide one in the
 * kernels), and a few conversions by hand.
 */
static void test_reference_round_trips(void **state)
{
	for (uint32_t h = 0; h <= 0xffffu; h++) {
		double v16 = dec(INC_FLOAT16, h), vb = dec(INC_BFLOAT16, h);
		if (!isnan(v16))
			assert_int_equal(enc(INC_FLOAT16, v16), h);
		if (!isnan(vb))
			assert_int_equal(enc(INC_BFLOAT16, vb), h);
	}
	assert_true(dec(INC_FLOAT16, H_MAX) == 65504.0);
	assert_true(dec(INC_FLOAT16, 0x0001u) == ldexp(1, -24));
	assert_true(dec(INC_BFLOAT16, 0x0001u) == ldexp(1, -133));
	assert_int_equal(enc(INC_FLOAT16, 65519.99), H_MAX);
	assert_int_equal(enc(INC_FLOAT16, 65520.0), H_INF);
	assert_int_equal(enc(INC_FLOAT16, ldexp(1, -25)), 0);         /* a tie at the bottom: to even 0 */
	assert_int_equal(enc(INC_FLOAT16, ldexp(3, -26)), 0x0001u);   /* 0.75 of the quantum: up */
}

/*
 * inc_elem.h's conversions from float32 against enc() on float32 values of
 * every exponent (sums of two float16s never land between float16's
 * subnormals, so the combine tests cannot reach all of its rounding), and
 * back: exact for every float16 and bfloat16.
 */
static void test_conversions_from_float32(void **state)
{
	uint64_t st = 12345;

	for (long i = 0; i < 2000000; i++) {
		uint32_t x = (uint32_t)xs(&st);
		if (i % 2) /* half of them in float16's range: exponents 2^-26 .. 2^16 */
			x = (x & 0x807fffffu) | (uint32_t)(101 + xs(&st) % 42) << 23;
		float f;
		memcpy(&f, &x, 4);
		if (isnan(f))
			continue;
		if (inc_f32_to_f16(f) != enc(INC_FLOAT16, f))
			fail_msg("float32 0x%08x to float16: 0x%04x, want 0x%04x", (unsigned)x, inc_f32_to_f16(f),
				 (unsigned)enc(INC_FLOAT16, f));
		if (inc_f32_to_bf16(f) != enc(INC_BFLOAT16, f))
			fail_msg("float32 0x%08x to bfloat16: 0x%04x, want 0x%04x", (unsigned)x, inc_f32_to_bf16(f),
				 (unsigned)enc(INC_BFLOAT16, f));
	}
	for (uint32_t h = 0; h <= 0xffffu; h++) {
		if (!is_nan_t(INC_FLOAT16, h))
			assert_true((double)inc_f16_to_f32((uint16_t)h) == dec(INC_FLOAT16, h) &&
				    !signbit(inc_f16_to_f32((uint16_t)h)) == !signbit(dec(INC_FLOAT16, h)));
		else
			assert_true(isnan(inc_f16_to_f32((uint16_t)h)) && is_nan_t(INC_FLOAT16, inc_f32_to_f16(inc_f16_to_f32((uint16_t)h))));
		if (!is_nan_t(INC_BFLOAT16, h))
			assert_true((double)inc_bf16_to_f32((uint16_t)h) == dec(INC_BFLOAT16, h));
		else
			assert_true(is_nan_t(INC_BFLOAT16, inc_f32_to_bf16(inc_bf16_to_f32((uint16_t)h))));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_imm_layout),
		cmocka_unit_test(test_int32_all_ops),
		cmocka_unit_test(test_float32_is_float_arithmetic),
		cmocka_unit_test(test_float32_special_values_both_orders),
		cmocka_unit_test(test_float32_sum_rounds),
		cmocka_unit_test(test_int32_wraps_and_extremes),
		cmocka_unit_test(test_barrier_changes_nothing),
		cmocka_unit_test(test_reference_round_trips),
		cmocka_unit_test(test_conversions_from_float32),
		cmocka_unit_test(test_every_dtype_and_op),
		cmocka_unit_test(test_float16_rounding_and_specials),
		cmocka_unit_test(test_bfloat16_rounding_and_specials),
		cmocka_unit_test(test_float64_specials),
		cmocka_unit_test(test_wide_and_unsigned_integers_wrap),
	};
	return cmocka_run_group_tests_name("aggregation", tests, NULL, NULL);
}
