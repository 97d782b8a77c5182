/*
 * agg.c — the arithmetic of in-network aggregation (see inc_proto.h).
 *
 * One loop per (operator, dtype) so each is a straight pass over a packet's
 * elements, a vector at a time. The switch keeps a slot's sum in host order
 * while packets arrive (inc_load(), then inc_combine_host() per packet) and
 * turns it into wire format once, when the slot completes (inc_store()):
 * one byte swap per element and packet instead of three. inc_combine() works
 * on wire format throughout, as the hosts' reference does.
 */
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

/*
 * The kernels work on vectors of elements (GCC/Clang vector extensions): a
 * 16-byte kernel every x86_64 has (SSE2; other targets lower it to their own
 * SIMD or to scalar code) and, on x86_64 CPUs that have AVX2, a 32-byte one
 * picked at run time. A byte swap is one instruction there (vpshufb); SSE2
 * has no byte shuffle, so the 16-byte kernel swaps the 16-bit halves of each
 * element (pshuflw/pshufhw) and then the bytes of each half (shifts). The
 * scalar loops these replace swapped every element three times with bswap.
 * SUM per element of a 1 KiB packet (callgrind): scalar 10 (int32) and 13
 * (float32) instructions; in wire format (inc_combine()) 6 with SSE2, 1.3
 * with AVX2; into a host-order accumulator (inc_combine_host()) 3 and 0.9,
 * plus 2.4 and 0.7 once per slot to load it and again to store it.
 *
 * Every operator is elementwise and exact in any vector width: the same
 * IEEE single additions and comparisons as scalar code (no reassociation,
 * no fused operations), selections by mask instead of branches.
 */
typedef uint32_t v4u __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));
typedef float v4f __attribute__((vector_size(16)));
typedef uint16_t v8h __attribute__((vector_size(16)));

#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define WIRE_IS_HOST 1 /* network byte order is the machine's: nothing to swap */
#else
#define WIRE_IS_HOST 0
#endif

/* bswap_v4() - each 32-bit element of @x between wire and host order, in SSE2 instructions. */
static inline v4u bswap_v4(v4u x)
{
	v8h h = (v8h)x;

	if (WIRE_IS_HOST)
		return x;
	h = __builtin_shufflevector(h, h, 1, 0, 3, 2, 5, 4, 7, 6); /* swap the halves of each element */
	return (v4u)(h << 8 | h >> 8);                             /* swap the bytes of each half */
}

/*
 * The operators on one vector, acc = op(acc, in). @a is the accumulator as
 * stored, in wire format or (@HOST 1) in host order; @ah and @bh are the
 * host-order values of the accumulator and the input, @br the input in the
 * accumulator's order; @U, @I, @F the unsigned, signed and float vectors of
 * the width, @BSWAP its conversion between wire and host order. Results are
 * in the accumulator's order. Only what is added or compared needs host
 * order: AND, OR and selections do not care about byte order.
 *
 * float MAX/MIN, lane by lane, the same in either order (inc_proto.h): the
 * larger (smaller) value; unordered (a NaN) or equal: b, then of two equal
 * values their bits ANDed (ORed), which only matters for zeros (+0 unless
 * both are -0, and the mirror); b a NaN: a (a NaN too if both are).
 * Comparisons give all-ones lanes where true.
 */
#define SEL(m, x, y) (((x) & (m)) | ((y) & ~(m))) /* x where mask m, else y */
#define OUT(HOST, BSWAP, r) ((HOST) ? (r) : BSWAP(r)) /* a host-order result in the accumulator's order */
#define SUM_I32(U, I, F, BSWAP, HOST, a, ah, bh, br) OUT(HOST, BSWAP, (ah) + (bh)) /* unsigned lanes: wraps */
#define MAX_I32(U, I, F, BSWAP, HOST, a, ah, bh, br) SEL((U)((I)(bh) > (I)(ah)), br, a)
#define MIN_I32(U, I, F, BSWAP, HOST, a, ah, bh, br) SEL((U)((I)(bh) < (I)(ah)), br, a)
#define SUM_F32(U, I, F, BSWAP, HOST, a, ah, bh, br) OUT(HOST, BSWAP, (U)((F)(ah) + (F)(bh)))
#define MAXMIN_F32(U, F, a, ah, bh, br, CMP, BITS)                                                       \
	({                                                                                               \
		F fa_ = (F)(ah), fb_ = (F)(bh);                                                          \
		U r_ = SEL((U)(fa_ CMP fb_), a, br);                                                     \
		r_ = SEL((U)(fa_ == fb_), ((a) BITS (br)), r_);                                          \
		SEL((U)(fb_ != fb_), a, r_);                                                             \
	})
#define MAX_F32(U, I, F, BSWAP, HOST, a, ah, bh, br) MAXMIN_F32(U, F, a, ah, bh, br, >, &)
#define MIN_F32(U, I, F, BSWAP, HOST, a, ah, bh, br) MAXMIN_F32(U, F, a, ah, bh, br, <, |)

/* acc = OP(acc, in) for @nvec vectors; loads and stores through memcpy():
 * payloads are not aligned (offset 58 in a frame). */
#define COMBINE_LOOP(OP, U, I, F, BSWAP, HOST)                                                           \
	_Pragma("GCC unroll 4") /* -O2 does not unroll: the loop's own cost halves */                    \
	for (size_t v = 0; v < nvec; v++, acc += sizeof(U), in += sizeof(U)) {                            \
		U a, b, ah, bh, br;                                                                      \
		memcpy(&a, acc, sizeof(U));                                                              \
		memcpy(&b, in, sizeof(U));                                                               \
		ah = (HOST) ? a : BSWAP(a);                                                              \
		bh = BSWAP(b);                                                                           \
		br = (HOST) ? bh : b;                                                                    \
		(void)br; /* the sums do not select */                                                   \
		a = OP(U, I, F, BSWAP, HOST, a, ah, bh, br);                                             \
		memcpy(acc, &a, sizeof(U));                                                              \
	}

/*
 * COMBINE_KERNEL() - defines @name(acc, in, nvec, op, dtype): acc = op(acc, in)
 * for @nvec vectors of one width (types @U, @I, @F, byte swap @BSWAP), the
 * accumulator in host order if @HOST, else in wire format; one loop per
 * operator and dtype; @ATTR: the function's target.
 */
#define COMBINE_KERNEL(name, U, I, F, BSWAP, HOST, ATTR)                                                 \
	ATTR static void name(uint8_t *acc, const uint8_t *in, size_t nvec, enum inc_op op,              \
			      enum inc_dtype dtype)                                                      \
	{                                                                                                \
		if (dtype == INC_INT32) {                                                                \
			if (op == INC_OP_SUM)                                                            \
				COMBINE_LOOP(SUM_I32, U, I, F, BSWAP, HOST)                              \
			else if (op == INC_OP_MAX)                                                       \
				COMBINE_LOOP(MAX_I32, U, I, F, BSWAP, HOST)                              \
			else if (op == INC_OP_MIN)                                                       \
				COMBINE_LOOP(MIN_I32, U, I, F, BSWAP, HOST)                              \
		} else {                                                                                 \
			if (op == INC_OP_SUM)                                                            \
				COMBINE_LOOP(SUM_F32, U, I, F, BSWAP, HOST)                              \
			else if (op == INC_OP_MAX)                                                       \
				COMBINE_LOOP(MAX_F32, U, I, F, BSWAP, HOST)                              \
			else if (op == INC_OP_MIN)                                                       \
				COMBINE_LOOP(MIN_F32, U, I, F, BSWAP, HOST)                              \
		}                                                                                        \
	}

/* SWAP_KERNEL() - defines @name(dst, src, nvec): @nvec vectors of type @U
 * from @src to @dst (the same or not overlapping), each element through @BSWAP. */
#define SWAP_KERNEL(name, U, BSWAP, ATTR)                                                                \
	ATTR static void name(uint8_t *dst, const uint8_t *src, size_t nvec)                             \
	{                                                                                                \
		_Pragma("GCC unroll 4")                                                                  \
		for (size_t v = 0; v < nvec; v++, dst += sizeof(U), src += sizeof(U)) {                  \
			U x;                                                                             \
			memcpy(&x, src, sizeof(U));                                                      \
			x = BSWAP(x);                                                                    \
			memcpy(dst, &x, sizeof(U));                                                      \
		}                                                                                        \
	}

COMBINE_KERNEL(combine_v4, v4u, v4i, v4f, bswap_v4, 0, )
COMBINE_KERNEL(combine_host_v4, v4u, v4i, v4f, bswap_v4, 1, )
SWAP_KERNEL(swap_v4, v4u, bswap_v4, )

/*
 * The AVX2 kernels: x86_64 only, compiled for AVX2 whatever the build's
 * flags and called only when the CPU has it (the lab's guests, QEMU's
 * default CPU model, do not: they run the 16-byte kernels). Building with
 * -DINC_AGG_PORTABLE leaves them out, to test the 16-byte kernels on a
 * machine that has AVX2.
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(INC_AGG_PORTABLE)
#define HAVE_V8 1
typedef uint32_t v8u __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef float v8f __attribute__((vector_size(32)));
typedef uint8_t v32b __attribute__((vector_size(32)));

/* BSWAP_V8() - each 32-bit element of a v8u byte-swapped: one vpshufb. */
#define BSWAP_V8(x)                                                                                     \
	((v8u)__builtin_shufflevector((v32b)(x), (v32b)(x), 3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, \
				      13, 12, 19, 18, 17, 16, 23, 22, 21, 20, 27, 26, 25, 24, 31, 30, 29,  \
				      28))
#define AVX2 __attribute__((target("avx2")))

COMBINE_KERNEL(combine_v8, v8u, v8i, v8f, BSWAP_V8, 0, AVX2)
COMBINE_KERNEL(combine_host_v8, v8u, v8i, v8f, BSWAP_V8, 1, AVX2)
SWAP_KERNEL(swap_v8, v8u, BSWAP_V8, AVX2)

/* has_avx2() - may the AVX2 kernels run here? (libgcc checks that the OS saves the YMM registers too) */
static inline int has_avx2(void)
{
	return __builtin_cpu_supports("avx2");
}
#endif

/*
 * combine_tail() - the last 1..3 elements (@n < 4) through the 16-byte
 * kernel @host or not, zeros in the spare lanes. Out of line: combine()
 * saves no registers.
 */
static __attribute__((noinline)) void combine_tail(uint8_t *acc, const uint8_t *in, size_t n, enum inc_op op,
						    enum inc_dtype dtype, int host)
{
	uint8_t a[16] = { 0 }, b[16] = { 0 };

	memcpy(a, acc, n * INC_ELEM_SIZE);
	memcpy(b, in, n * INC_ELEM_SIZE);
	if (host)
		combine_host_v4(a, b, 1, op, dtype);
	else
		combine_v4(a, b, 1, op, dtype);
	memcpy(acc, a, n * INC_ELEM_SIZE);
}

/* combine() - inc_combine() (@host 0) or inc_combine_host() (@host 1): the widest kernel, then the rest. */
static inline void combine(uint8_t *acc, const uint8_t *in, size_t n, enum inc_op op, enum inc_dtype dtype,
			   int host)
{
	size_t done = 0;

	if (op == INC_OP_BARRIER)
		return;
#ifdef HAVE_V8
	if (n >= 8 && has_avx2()) {
		done = n & ~(size_t)7;
		if (host)
			combine_host_v8(acc, in, done / 8, op, dtype);
		else
			combine_v8(acc, in, done / 8, op, dtype);
	}
#endif
	if (n - done >= 4) {
		uint8_t *a = acc + done * INC_ELEM_SIZE;
		const uint8_t *b = in + done * INC_ELEM_SIZE;

		if (host)
			combine_host_v4(a, b, (n - done) / 4, op, dtype);
		else
			combine_v4(a, b, (n - done) / 4, op, dtype);
	}
	done = n & ~(size_t)3;
	if (done < n)
		combine_tail(acc + done * INC_ELEM_SIZE, in + done * INC_ELEM_SIZE, n - done, op, dtype, host);
}

void inc_combine(void *acc, const void *in, size_t n, enum inc_op op, enum inc_dtype dtype)
{
	combine(acc, in, n, op, dtype, 0);
}

void inc_combine_host(void *acc, const void *in, size_t n, enum inc_op op, enum inc_dtype dtype)
{
	combine(acc, in, n, op, dtype, 1);
}

/*
 * swap() - @len bytes from @src to @dst (the same buffer, or not
 * overlapping), each whole 4-byte element between wire and host order; the
 * last len % 4 bytes are copied as they are.
 */
static void swap(uint8_t *dst, const uint8_t *src, size_t len)
{
	size_t n = len / INC_ELEM_SIZE, done = 0;

#ifdef HAVE_V8
	if (n >= 8 && has_avx2()) {
		done = n & ~(size_t)7;
		swap_v8(dst, src, done / 8);
	}
#endif
	if (n - done >= 4)
		swap_v4(dst + done * INC_ELEM_SIZE, src + done * INC_ELEM_SIZE, (n - done) / 4);
	for (done = n & ~(size_t)3; done < n; done++) {
		uint32_t x;

		memcpy(&x, src + done * INC_ELEM_SIZE, 4);
		x = WIRE_IS_HOST ? x : __builtin_bswap32(x);
		memcpy(dst + done * INC_ELEM_SIZE, &x, 4);
	}
	if (dst != src && len % INC_ELEM_SIZE)
		memcpy(dst + n * INC_ELEM_SIZE, src + n * INC_ELEM_SIZE, len % INC_ELEM_SIZE);
}

void inc_load(void *acc, const void *in, size_t len)
{
	swap(acc, in, len);
}

void inc_store(void *acc, size_t len)
{
	swap(acc, acc, len);
}
