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

#include "inc_proto.h"

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
	for (int p = 0; p < 3; p++)
		for (int o = 0; o < 4; o++)
			for (int t = 0; t < 2; t++) {
				m = (struct inc_imm){ (uint16_t)(p * 1000 + o * 10 + t), p, o, t };
				assert_int_equal(inc_imm_decode(inc_imm_encode(&m), &d), 0);
				assert_memory_equal(&m, &d, sizeof(m));
			}
	assert_int_equal(inc_imm_decode(0xffffc000, &d), -1); /* primitive 3 */
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
	/* a NaN loses to a number in MAX/MIN (fmaxf) */
	x[0] = NAN;
	y[0] = -3.0f;
	to_wire_f(wx, x);
	to_wire_f(wy, y);
	inc_combine(wx, wy, 1, INC_OP_MAX, INC_FLOAT32);
	assert_true(from_wire_f(wx[0]) == -3.0f);
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
		cmocka_unit_test(test_barrier_changes_nothing),
	};
	return cmocka_run_group_tests_name("aggregation", tests, NULL, NULL);
}
