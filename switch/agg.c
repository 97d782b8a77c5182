/*
 * agg.c — the arithmetic of in-network aggregation (see inc_proto.h).
 *
 * One loop per (operator, dtype) so each is a straight, vectorisable pass over
 * a packet's elements; the switch calls inc_combine() once per arriving packet
 * after the first (the first is copied). Elements stay in wire format in the
 * switch's buffers: converted here on the way in and out of the arithmetic.
 */
#include <arpa/inet.h>
#include <string.h>

#include "inc_proto.h"

int inc_imm_decode(uint32_t imm, struct inc_imm *m)
{
	uint32_t prim = (imm >> 14) & 3, dtype = (imm >> 8) & 15;

	if (prim > INC_BROADCAST || dtype > INC_FLOAT32 || (imm & 0xff) != 0)
		return -1;
	m->dest_rank = (uint16_t)(imm >> 16);
	m->prim = (enum inc_prim)prim;
	m->op = (enum inc_op)((imm >> 12) & 3);
	m->dtype = (enum inc_dtype)dtype;
	return 0;
}

const char *inc_op_name(enum inc_op op)
{
	static const char *const n[] = { "barrier", "sum", "max", "min" };
	return (unsigned)op < 4 ? n[op] : "?";
}

const char *inc_dtype_name(enum inc_dtype t)
{
	return t == INC_INT32 ? "int32" : t == INC_FLOAT32 ? "float32" : "?";
}

const char *inc_prim_name(enum inc_prim p)
{
	static const char *const n[] = { "allreduce", "reduce", "broadcast" };
	return (unsigned)p < 3 ? n[p] : "?";
}

static float f_of(uint32_t wire)
{
	uint32_t h = ntohl(wire);
	float f;
	memcpy(&f, &h, 4);
	return f;
}

static uint32_t wire_of(float f)
{
	uint32_t h;
	memcpy(&h, &f, 4);
	return htonl(h);
}

/*
 * float32 MAX of two wire-format elements, the same in either order (see
 * inc_proto.h): the larger number; a NaN loses to a number; two NaNs give
 * the first; of two equal values, their bits ANDed, which only matters for
 * zeros: +0 (sign bit clear) unless both are -0. Equal non-zero floats have
 * equal bits. Byte order does not matter to AND and OR, so the equal case
 * works on the wire values. Selects only, no branches: vectorisable.
 */
static inline uint32_t fmax_wire(uint32_t a, uint32_t b)
{
	float fa = f_of(a), fb = f_of(b);
	uint32_t r = fa > fb ? a : b; /* unordered (a NaN) or equal: b, fixed below */

	r = fa == fb ? (a & b) : r;
	return fb != fb ? a : r;      /* b is NaN: a (a NaN too if both are) */
}

/* float32 MIN, the mirror of fmax_wire(): of two zeros, -0 unless both are +0 (bits ORed). */
static inline uint32_t fmin_wire(uint32_t a, uint32_t b)
{
	float fa = f_of(a), fb = f_of(b);
	uint32_t r = fa < fb ? a : b;

	r = fa == fb ? (a | b) : r;
	return fb != fb ? a : r;
}

/* A wire-format int32 as a signed host value (SUM adds as uint32: wraps, no UB). */
#define I(w) ((int32_t)ntohl(w))

/* A frame's payload starts at offset 58 (Ethernet + IPv4 + UDP + BTH + ImmDt):
 * its 32-bit elements are not 4-byte aligned. Access them through a type that
 * says so; x86 loads them just as fast, and the compiler may not assume more. */
typedef uint32_t __attribute__((aligned(1), may_alias)) u32_any;

void inc_combine(void *accp, const void *inp, size_t n, enum inc_op op, enum inc_dtype dtype)
{
	u32_any *acc = accp;
	const u32_any *in = inp;

	if (dtype == INC_INT32) {
		switch (op) {
		case INC_OP_SUM:
			for (size_t i = 0; i < n; i++)
				acc[i] = htonl(ntohl(acc[i]) + ntohl(in[i]));
			break;
		case INC_OP_MAX:
			for (size_t i = 0; i < n; i++)
				acc[i] = I(in[i]) > I(acc[i]) ? in[i] : acc[i];
			break;
		case INC_OP_MIN:
			for (size_t i = 0; i < n; i++)
				acc[i] = I(in[i]) < I(acc[i]) ? in[i] : acc[i];
			break;
		case INC_OP_BARRIER:
			break;
		}
	} else {
		switch (op) {
		case INC_OP_SUM:
			for (size_t i = 0; i < n; i++)
				acc[i] = wire_of(f_of(acc[i]) + f_of(in[i]));
			break;
		case INC_OP_MAX:
			for (size_t i = 0; i < n; i++)
				acc[i] = fmax_wire(acc[i], in[i]);
			break;
		case INC_OP_MIN:
			for (size_t i = 0; i < n; i++)
				acc[i] = fmin_wire(acc[i], in[i]);
			break;
		case INC_OP_BARRIER:
			break;
		}
	}
}
