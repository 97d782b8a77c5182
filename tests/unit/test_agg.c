/*
 * test_agg.c — immediate data and aggregation arithmetic (switch/agg.c), cmocka.
 * Expectations are computed independently in host arithmetic on host-order
 * values; inputs go through the wire format (big-endian) like on the network.
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
			for (int t = 0; t < 2; t++) {
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
	assert_int_equal(inc_imm_decode(0xffff1200, &d), -1); /* dtype 2 */
	assert_int_equal(inc_imm_decode(0xffff1101, &d), -1); /* reserved bits */
	assert_string_equal(inc_op_name(INC_OP_MAX), "max");
	assert_string_equal(inc_dtype_name(INC_FLOAT32), "float32");
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

static int is_nan_bits(uint32_t h)
{
	return (h & 0x7f800000u) == 0x7f800000u && (h & 0x007fffffu);
}

/* One pair of operands (host-order bits) and the expected result of each op. */
struct pair_case {
	uint32_t a, b;
	uint32_t sum, max, min; /* ANY_NAN: a NaN of any sign and payload */
	const char *what;
};

/*
 * Combine every case's a with its b (and then b with a) in one call of
 * inc_combine() on unaligned buffers, so the vectorised loop runs as in the
 * switch, and compare bit for bit (a NaN matches any NaN).
 */
static void check_pairs(const struct pair_case *c, size_t n, enum inc_op op, enum inc_dtype dtype)
{
	static uint8_t accbuf[N * 4 + PAYLOAD_OFF], inbuf[N * 4 + PAYLOAD_OFF];
	uint8_t *acc = accbuf + PAYLOAD_OFF, *in = inbuf + PAYLOAD_OFF;

	assert_true(n <= N);
	for (int swap = 0; swap <= 1; swap++) {
		for (size_t i = 0; i < n; i++) {
			uint32_t x = htonl(swap ? c[i].b : c[i].a), y = htonl(swap ? c[i].a : c[i].b);
			memcpy(acc + 4 * i, &x, 4);
			memcpy(in + 4 * i, &y, 4);
		}
		inc_combine(acc, in, n, op, dtype);
		for (size_t i = 0; i < n; i++) {
			uint32_t got, want = op == INC_OP_SUM ? c[i].sum : op == INC_OP_MAX ? c[i].max : c[i].min;
			memcpy(&got, acc + 4 * i, 4);
			got = ntohl(got);
			int ok = dtype == INC_FLOAT32 && want == ANY_NAN ? is_nan_bits(got) : got == want;
			if (!ok)
				fail_msg("%s %s(0x%08x, 0x%08x) = 0x%08x, want 0x%08x (%s)", inc_dtype_name(dtype),
					 inc_op_name(op), (unsigned)(swap ? c[i].b : c[i].a),
					 (unsigned)(swap ? c[i].a : c[i].b), (unsigned)got, (unsigned)want, c[i].what);
		}
	}
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
	};
	return cmocka_run_group_tests_name("aggregation", tests, NULL, NULL);
}
