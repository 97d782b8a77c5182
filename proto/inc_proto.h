/*
 * inc_proto.h — what an INC collective looks like on the wire, above RoCE.
 *
 * Immediate data (32 bits, SPEC.md): dest_rank:16 | primitive:2 | operator:2 |
 * dtype:4 | last:1 | reserved:7 (bits 31..16, 15..14, 13..12, 11..8, 7, 6..0).
 * last (INC_IMM_LAST) marks the last packet of one collective call: a
 * sender sets it on exactly that packet (a one-packet call's packet 0, else
 * the SEND_LAST_WITH_IMM or SEND_ONLY_WITH_IMM that ends the call's last
 * message), and every switch keeps it in the slot's immediate and in the
 * results it sends. A switch compares its children's immediates per packet,
 * so ranks whose calls have different numbers of packets (their counts
 * differ by a whole packet or more) mismatch at the first packet where one
 * call ends and another goes on: NAKed, never combined with another call.
 * Payload elements are big-endian (network byte order), each as wide as its
 * dtype (inc_dtype_size()): integers as two's complement (int*) or plain
 * binary (uint*), floats as their IEEE 754 bits (float16: binary16, bfloat16:
 * the top 16 bits of a binary32, float32: binary32, float64: binary64).
 * 1024-byte packets carry 1024 / width elements (512, 256 or 128).
 * A collective's packet 0 is a SEND_ONLY_WITH_IMM; later packets may travel in
 * messages (SEND_FIRST, SEND_MIDDLE*, SEND_LAST_WITH_IMM) whose FIRST and
 * MIDDLE packets, a whole MTU each, carry no immediate and belong to packet
 * 0's; the switch aggregates per packet and answers in the same cut.
 * Hosts, switches and the controller share this header.
 */
#ifndef INCLAB_INC_PROTO_H
#define INCLAB_INC_PROTO_H

#include <stddef.h>
#include <stdint.h>

/*
 * The primitives (2 bits of the immediate):
 * - ALLREDUCE: every rank contributes, every rank gets op over all (dest_rank INC_RANK_ALL).
 * - REDUCE: every rank contributes, only dest_rank gets the result.
 * - BROADCAST: only the root (dest_rank) carries data, every other rank gets it.
 * - ROUTE: per packet exactly one rank (any) carries data, and only dest_rank
 *   gets it; the other ranks send the packet empty. AllToAll is a ROUTE for
 *   each (source, destination) pair (hostlib/coll.c): every rank sends every
 *   packet of every pair, n(n-1) blocks' packets instead of a pairwise
 *   exchange's n-1 (the data itself crosses each link once, the empty frames
 *   are the price of the switches' per-PSN slots).
 */
enum inc_prim { INC_ALLREDUCE = 0, INC_REDUCE = 1, INC_BROADCAST = 2, INC_ROUTE = 3 };
enum inc_op { INC_OP_BARRIER = 0, INC_OP_SUM = 1, INC_OP_MAX = 2, INC_OP_MIN = 3 };
/* dtype: 4 bits on the wire; 0 and 1 are the original two (wire compatible), 8..15 undefined */
enum inc_dtype {
	INC_INT32 = 0,
	INC_FLOAT32 = 1,
	INC_UINT32 = 2,
	INC_INT64 = 3,
	INC_UINT64 = 4,
	INC_FLOAT16 = 5,
	INC_BFLOAT16 = 6,
	INC_FLOAT64 = 7,
};
#define INC_NDTYPES 8 /* dtypes 0..INC_NDTYPES-1 are defined */

/** inc_dtype_size() - bytes per element of @t (2, 4 or 8); 0 for a value that is no dtype. */
static inline size_t inc_dtype_size(enum inc_dtype t)
{
	switch (t) {
	case INC_FLOAT16:
	case INC_BFLOAT16: return 2;
	case INC_INT32:
	case INC_UINT32:
	case INC_FLOAT32: return 4;
	case INC_INT64:
	case INC_UINT64:
	case INC_FLOAT64: return 8;
	}
	return 0;
}

/*
 * A switch's queue pair numbers say what they are and whose they are, so a
 * switch serving several communicators hands each frame to the right one by
 * its destination QPN alone, and a stale frame of an earlier communicator
 * never matches a new one (the controller never gives two communicators
 * alive at once the same id modulo 4096):
 *   0x1CCCkk  the switch's end towards its child kk (host or switch)
 *   0x2CCC00  the switch's end towards its parent
 * with CCC the communicator id modulo 4096 (INC_COMM_KEY()).
 */
#define INC_COMM_KEY(comm) ((unsigned)(comm) & 0xfffu)
#define INC_QPN_TO_CHILD(comm, k) (0x100000u | INC_COMM_KEY(comm) << 8 | (unsigned)(k))
#define INC_QPN_TO_PARENT(comm) (0x200000u | INC_COMM_KEY(comm) << 8)
/* the communicator key of a switch QPN (0x1CCCkk or 0x2CCC00), or -1 for any other QPN */
#define INC_QPN_COMM_KEY(qpn) \
	(((qpn) >> 20) == 1 || (((qpn) >> 20) == 2 && ((qpn) & 0xffu) == 0) ? (int)(((qpn) >> 8) & 0xfffu) : -1)

#define INC_RANK_ALL 0xffff /* dest_rank of AllReduce / Broadcast: every rank */
#define INC_IMM_LAST 0x80u  /* bit 7 of the immediate: the last packet of a collective call */
#define INC_IMM_RESERVED 0x7fu /* bits 6..0: zero (a switch refuses anything else: drop_bad_imm) */

struct inc_imm {
	uint16_t dest_rank;
	enum inc_prim prim;
	enum inc_op op;
	enum inc_dtype dtype;
};

/** inc_imm_encode() - the 32-bit immediate of @m (host order; the wire is big-endian), without
 * INC_IMM_LAST: the sender ORs it into the last packet's. (No field of struct inc_imm: the
 * switch keeps a decoded one in each of its slots, which must not grow.) */
static inline uint32_t inc_imm_encode(const struct inc_imm *m)
{
	return (uint32_t)m->dest_rank << 16 | ((uint32_t)m->prim & 3) << 14 | ((uint32_t)m->op & 3) << 12 |
	       ((uint32_t)m->dtype & 15) << 8;
}

/**
 * inc_imm_decode() - split an immediate into its fields; INC_IMM_LAST, which
 * is no field, may be set or not (the caller tests imm & INC_IMM_LAST).
 * Return: 0, or -1 for values the protocol does not define (dtype >=
 * INC_NDTYPES, reserved bits 6..0 set) so a switch can count and drop them.
 * Every primitive (0..3) is defined.
 */
int inc_imm_decode(uint32_t imm, struct inc_imm *m);

/** inc_op_name(), inc_dtype_name(), inc_prim_name() - for messages and CSV. */
const char *inc_op_name(enum inc_op op);
const char *inc_dtype_name(enum inc_dtype t);
const char *inc_prim_name(enum inc_prim p);
/** inc_dtype_parse() - the dtype named @s (as inc_dtype_name() names it) to *@t. Return: 0, or -1. */
int inc_dtype_parse(const char *s, enum inc_dtype *t);

/**
 * inc_combine() - acc[i] = op(acc[i], in[i]) for @n elements of @dtype, both
 * in wire format (big-endian). Barrier carries no data: nothing to combine.
 *
 * Arithmetic (what hosts may rely on, and check bit for bit):
 * - Integer SUM wraps modulo 2^width (two's complement for int32/int64, plain
 *   binary for uint32/uint64: the same bits either way). MAX/MIN compare
 *   signed for int32/int64, unsigned for uint32/uint64.
 * - float32 SUM is one IEEE single-precision addition per combine, rounded
 *   to nearest-even (so +0 + -0 = +0, -0 + -0 = -0, Inf + -Inf = NaN, an
 *   overflow gives +-Inf, subnormals are kept). float64 SUM likewise, one
 *   IEEE double addition per combine.
 * - float16 and bfloat16 SUM: each combine converts both operands to float32
 *   (exact), adds them in float32 and rounds the sum to the element type,
 *   to nearest-even (overflow: +-Inf; the type's subnormals kept). Nothing is
 *   accumulated wider across combines: every partial sum the switch keeps or
 *   forwards is of the element type, so a host reproduces it by the same
 *   steps. This is the correctly rounded sum of the two operands: the exact
 *   sum of two values of a p-bit significand rounded to float32 (24 bits)
 *   and then to p bits rounds as the exact sum rounded once to p bits,
 *   because 24 >= 2p + 2 (p = 11 for float16, 8 for bfloat16; Figueroa,
 *   "When is double rounding innocuous?", 1995), overflow and subnormals
 *   included (float32's exponent range holds both types' exactly).
 * - Float MAX/MIN (every float type) give the same result in either order:
 *   a NaN loses to a number, two NaNs give a NaN, and -0 < +0 (MAX(+0, -0)
 *   = +0, MIN(+0, -0) = -0 whichever comes first). Otherwise the larger
 *   (smaller) value, Inf included; the result is one operand's bits.
 * - A NaN result is only a NaN: its sign and payload are unspecified.
 *
 * Order (what makes a float SUM reproducible): per PSN slot a switch folds
 * a float SUM (float16, bfloat16, float32, float64) in child order, whatever order the children's packets arrive
 * in: acc = c0, then acc = acc + c1, acc = acc + c2, ... up to its last
 * child, where ci is the contribution of the switch's child i. Children are
 * numbered as the controller's rules list them (switch/engine.h, struct
 * sw_cfg child[]): by the ranks below them, lowest first, hosts and child
 * switches alike (in 1-2-2-2, sw1's child 0 is pku1, rank 0, and child 1
 * is sw2, ranks 1-2). A contribution that arrives before its turn waits in
 * the switch until every child before it was folded (switch/README.md).
 * So a float SUM over a tree is ((c0 + c1) + c2) + ... at every switch,
 * the tree's order written as nested lists of children by lowest rank
 * (hostlib/tools/check_ref.h: "((0,1),(2,3))"), bit for bit the same in
 * every run, loss pattern and arrival order, and in every topology of the
 * same shape. Integer SUMs (they wrap) and every MAX/MIN give the same result
 * in any order: the switch folds those as they arrive (acc = op(acc, in)).
 */
void inc_combine(void *acc, const void *in, size_t n, enum inc_op op, enum inc_dtype dtype);

/*
 * A sum kept in host order while its packets arrive, as the switch does: one
 * byte swap per element and packet instead of three, the same results.
 *
 * inc_load() - the first packet: @len bytes from @in (wire format) to @acc,
 * each element of @dtype in host order (the last len % width bytes copied
 * as they are).
 * inc_combine_host() - inc_combine() with @acc in host order, @in in wire format.
 * inc_store() - @acc (@len bytes of @dtype) back to wire format, in place,
 * when the sum is complete.
 */
void inc_load(void *acc, const void *in, size_t len, enum inc_dtype dtype);
void inc_combine_host(void *acc, const void *in, size_t n, enum inc_op op, enum inc_dtype dtype);
void inc_store(void *acc, size_t len, enum inc_dtype dtype);

/*
 * The kernels that combine and byte-swap (agg.c), chosen at run time:
 * SIMD (AVX2 where the CPU has it, else SSE2) for native CPUs, SCALAR (one
 * element at a time, bswap) for CPUs that QEMU TCG emulates, which runs
 * SSE2 shuffles through helper calls. AUTO picks SCALAR under TCG (CPUID
 * hypervisor signature "TCGTCGTCGTCG"), else SIMD. Both give the same
 * results, bit for bit. The SIMD kernels cover the 4-byte dtypes (int32,
 * uint32, float32); 2- and 8-byte dtypes run the scalar kernels in both sets.
 *
 * inc_kernel_parse() - "auto", "simd" or "scalar" to @k. Return: 0, or -1.
 * inc_kernel_use() - run kernels @k from now on (AUTO: detect); @why: what
 *   chose them, for inc_kernel_name(). Without it the first combine or
 *   inc_kernel_name() chooses by the environment's INCSWITCH_KERNEL
 *   (unset or not understood: auto).
 * inc_kernel_name() - "simd-avx2", "simd-sse2" or "scalar": the kernels
 *   that run; @why (may be NULL) gets what chose them.
 */
enum inc_kernel { INC_KERNEL_AUTO, INC_KERNEL_SIMD, INC_KERNEL_SCALAR };
int inc_kernel_parse(const char *s, enum inc_kernel *k);
void inc_kernel_use(enum inc_kernel k, const char *why);
const char *inc_kernel_name(const char **why);

#endif
