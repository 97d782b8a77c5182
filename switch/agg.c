/*
 * agg.c — the arithmetic of in-network aggregation (see inc_proto.h).
 *
 * One loop per (operator, dtype) so each is a straight pass over a packet's
 * elements, a vector at a time. The switch keeps a slot's sum in host order
 * while packets arrive (inc_load(), then inc_combine_host() per packet) and
 * turns it into wire format once, when the slot completes (inc_store()):
 * one byte swap per element and packet instead of three. inc_combine() works
 * on wire format throughout, as the hosts' reference does.
 *
 * Two sets of kernels, chosen once at run time (inc_kernel_use()): SIMD
 * for native CPUs, scalar for CPUs that QEMU TCG emulates; see
 * switch/README.md for why and for the figures.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "../proto/inc_elem.h"
#include "../proto/inc_proto.h"

#define W4 4 /* the width of the dtypes the SIMD kernels take: int32, uint32, float32 */

int inc_imm_decode(uint32_t imm, struct inc_imm *m)
{
	uint32_t prim = (imm >> 14) & 3, dtype = (imm >> 8) & 15;

	if (dtype >= INC_NDTYPES || (imm & INC_IMM_RESERVED) != 0)
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
	static const char *const n[INC_NDTYPES] = { "int32",  "float32", "uint32",   "int64",
						    "uint64", "float16", "bfloat16", "float64" };
	return (unsigned)t < INC_NDTYPES ? n[t] : "?";
}

int inc_dtype_parse(const char *s, enum inc_dtype *t)
{
	for (int i = 0; s && i < INC_NDTYPES; i++)
		if (!strcmp(s, inc_dtype_name((enum inc_dtype)i))) {
			*t = (enum inc_dtype)i;
			return 0;
		}
	return -1;
}

const char *inc_prim_name(enum inc_prim p)
{
	static const char *const n[] = { "allreduce", "reduce", "broadcast", "route" };
	return (unsigned)p < 4 ? n[p] : "?";
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
#define MAX_U32(U, I, F, BSWAP, HOST, a, ah, bh, br) SEL((U)((bh) > (ah)), br, a)
#define MIN_U32(U, I, F, BSWAP, HOST, a, ah, bh, br) SEL((U)((bh) < (ah)), br, a)
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
 * operator and dtype (int32, uint32 or float32: the 4-byte ones); @ATTR: the
 * function's target.
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
		} else if (dtype == INC_UINT32) {                                                        \
			if (op == INC_OP_SUM)                                                            \
				COMBINE_LOOP(SUM_I32, U, I, F, BSWAP, HOST)                              \
			else if (op == INC_OP_MAX)                                                       \
				COMBINE_LOOP(MAX_U32, U, I, F, BSWAP, HOST)                              \
			else if (op == INC_OP_MIN)                                                       \
				COMBINE_LOOP(MIN_U32, U, I, F, BSWAP, HOST)                              \
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
 * kernel @host or not, zeros in the spare lanes. Out of line: combine_simd()
 * saves no registers.
 */
static __attribute__((noinline)) void combine_tail(uint8_t *acc, const uint8_t *in, size_t n, enum inc_op op,
						    enum inc_dtype dtype, int host)
{
	uint8_t a[16] = { 0 }, b[16] = { 0 };

	memcpy(a, acc, n * W4);
	memcpy(b, in, n * W4);
	if (host)
		combine_host_v4(a, b, 1, op, dtype);
	else
		combine_v4(a, b, 1, op, dtype);
	memcpy(acc, a, n * W4);
}

/*
 * combine_simd() - inc_combine() (@host 0) or inc_combine_host() (@host 1):
 * the 32-byte kernel if @v8 (the CPU has AVX2), the 16-byte one, then the rest.
 */
static inline void combine_simd(uint8_t *acc, const uint8_t *in, size_t n, enum inc_op op, enum inc_dtype dtype,
				int host, int v8)
{
	size_t done = 0;

	(void)v8;
	if (op == INC_OP_BARRIER)
		return;
#ifdef HAVE_V8
	if (n >= 8 && v8) {
		done = n & ~(size_t)7;
		if (host)
			combine_host_v8(acc, in, done / 8, op, dtype);
		else
			combine_v8(acc, in, done / 8, op, dtype);
	}
#endif
	if (n - done >= 4) {
		uint8_t *a = acc + done * W4;
		const uint8_t *b = in + done * W4;

		if (host)
			combine_host_v4(a, b, (n - done) / 4, op, dtype);
		else
			combine_v4(a, b, (n - done) / 4, op, dtype);
	}
	done = n & ~(size_t)3;
	if (done < n)
		combine_tail(acc + done * W4, in + done * W4, n - done, op, dtype, host);
}

/*
 * swap_simd() - @len bytes from @src to @dst (the same buffer, or not
 * overlapping), each whole 4-byte element between wire and host order
 * (32-byte kernel first if @v8); the last len % 4 bytes are copied as they are.
 */
static inline void swap_simd(uint8_t *dst, const uint8_t *src, size_t len, int v8)
{
	size_t n = len / W4, done = 0;

	(void)v8;
#ifdef HAVE_V8
	if (n >= 8 && v8) {
		done = n & ~(size_t)7;
		swap_v8(dst, src, done / 8);
	}
#endif
	if (n - done >= 4)
		swap_v4(dst + done * W4, src + done * W4, (n - done) / 4);
	for (done = n & ~(size_t)3; done < n; done++) {
		uint32_t x;

		memcpy(&x, src + done * W4, 4);
		x = WIRE_IS_HOST ? x : __builtin_bswap32(x);
		memcpy(dst + done * W4, &x, 4);
	}
	if (dst != src && len % W4)
		memcpy(dst + n * W4, src + n * W4, len % W4);
}

/*
 * The scalar kernels: one element at a time, a byte swap being one bswap.
 * For CPUs emulated by QEMU TCG (the lab's switch VMs without KVM): TCG
 * turns bswap, integer adds and compares into a few host instructions each
 * but calls a C helper for most SSE2 instructions (the shuffles and shifts
 * of bswap_v4() among them), so the SIMD kernels are the slower there
 * (see switch/README.md). Same arithmetic and byte order as the vectors.
 *
 * A frame's payload starts at offset 58 (Ethernet + IPv4 + UDP + BTH +
 * ImmDt): its elements are not 4-byte aligned, hence u32_any.
 */
typedef uint32_t __attribute__((aligned(1), may_alias)) u32_any;

/*
 * NO_VECTORIZE - keeps the compiler from turning a scalar kernel's loop
 * back into SSE2 (GCC -O3, Clang -O2): the point of these is to have none.
 */
#if defined(__clang__)
#define NO_VECTORIZE
#define SCALAR_LOOP_PRAGMA _Pragma("clang loop vectorize(disable) interleave(disable)")
#elif defined(__GNUC__)
#define NO_VECTORIZE __attribute__((optimize("no-tree-vectorize")))
#define SCALAR_LOOP_PRAGMA
#else
#define NO_VECTORIZE
#define SCALAR_LOOP_PRAGMA
#endif

/* bswap_s() - one element between wire and host order. */
static inline uint32_t bswap_s(uint32_t x)
{
	return WIRE_IS_HOST ? x : __builtin_bswap32(x);
}

/*
 * fmaxmin_s() - float MAX (@max 1) or MIN of @fa (the accumulator) and @fb
 * (the input), as MAXMIN_F32() does it; @a and @b are their bits in the
 * accumulator's order, the result too.
 */
static inline uint32_t fmaxmin_s(float fa, float fb, uint32_t a, uint32_t b, int max)
{
	uint32_t r = (max ? fa > fb : fa < fb) ? a : b; /* unordered (a NaN) or equal: b, fixed below */

	r = fa == fb ? (max ? a & b : a | b) : r;
	return fb != fb ? a : r;                        /* b is NaN: a (a NaN too if both are) */
}

/* The operators on one element, as the vector ones above (same arguments, @r a host-order result). */
#define OUT_S(HOST, r) ((HOST) ? (r) : bswap_s(r))
#define SUM_I32_S(HOST, a, ah, bh, br) OUT_S(HOST, (ah) + (bh))
#define MAX_I32_S(HOST, a, ah, bh, br) ((int32_t)(bh) > (int32_t)(ah) ? (br) : (a))
#define MIN_I32_S(HOST, a, ah, bh, br) ((int32_t)(bh) < (int32_t)(ah) ? (br) : (a))
#define MAX_U32_S(HOST, a, ah, bh, br) ((bh) > (ah) ? (br) : (a))
#define MIN_U32_S(HOST, a, ah, bh, br) ((bh) < (ah) ? (br) : (a))
#define SUM_F32_S(HOST, a, ah, bh, br) OUT_S(HOST, inc_f32_bits(inc_f32_of(ah) + inc_f32_of(bh)))
#define MAX_F32_S(HOST, a, ah, bh, br) fmaxmin_s(inc_f32_of(ah), inc_f32_of(bh), a, br, 1)
#define MIN_F32_S(HOST, a, ah, bh, br) fmaxmin_s(inc_f32_of(ah), inc_f32_of(bh), a, br, 0)

/* acc[i] = OP(acc[i], in[i]) for @n elements, the accumulator in host order if @HOST. */
#define SCALAR_LOOP(OP, HOST)                                                                            \
	SCALAR_LOOP_PRAGMA                                                                               \
	for (size_t i = 0; i < n; i++) {                                                                 \
		uint32_t a = acc[i], b = in[i];                                                          \
		uint32_t ah = (HOST) ? a : bswap_s(a), bh = bswap_s(b), br = (HOST) ? bh : b;            \
		(void)br;                                                                                \
		acc[i] = OP(HOST, a, ah, bh, br);                                                        \
	}

/* SCALAR_KERNEL() - defines @name(acc, in, n, op, dtype): the scalar COMBINE_KERNEL(), @HOST alike. */
#define SCALAR_KERNEL(name, HOST)                                                                        \
	NO_VECTORIZE static void name(void *accp, const void *inp, size_t n, enum inc_op op,            \
				      enum inc_dtype dtype)                                              \
	{                                                                                                \
		u32_any *acc = accp;                                                                     \
		const u32_any *in = inp;                                                                 \
                                                                                                         \
		if (dtype == INC_INT32) {                                                                \
			if (op == INC_OP_SUM)                                                            \
				SCALAR_LOOP(SUM_I32_S, HOST)                                             \
			else if (op == INC_OP_MAX)                                                       \
				SCALAR_LOOP(MAX_I32_S, HOST)                                             \
			else if (op == INC_OP_MIN)                                                       \
				SCALAR_LOOP(MIN_I32_S, HOST)                                             \
		} else if (dtype == INC_UINT32) {                                                        \
			if (op == INC_OP_SUM)                                                            \
				SCALAR_LOOP(SUM_I32_S, HOST)                                             \
			else if (op == INC_OP_MAX)                                                       \
				SCALAR_LOOP(MAX_U32_S, HOST)                                             \
			else if (op == INC_OP_MIN)                                                       \
				SCALAR_LOOP(MIN_U32_S, HOST)                                             \
		} else {                                                                                 \
			if (op == INC_OP_SUM)                                                            \
				SCALAR_LOOP(SUM_F32_S, HOST)                                             \
			else if (op == INC_OP_MAX)                                                       \
				SCALAR_LOOP(MAX_F32_S, HOST)                                             \
			else if (op == INC_OP_MIN)                                                       \
				SCALAR_LOOP(MIN_F32_S, HOST)                                             \
		}                                                                                        \
	}

SCALAR_KERNEL(combine4_scalar, 0)
SCALAR_KERNEL(combine4_host_scalar, 1)

/* swap4_scalar() - swap_simd() one element at a time. */
NO_VECTORIZE static void swap4_scalar(void *dstp, const void *srcp, size_t len)
{
	size_t n = len / W4;
	uint8_t *dst = dstp;
	const uint8_t *src = srcp;
	u32_any *d = dstp;
	const u32_any *s = srcp;

	SCALAR_LOOP_PRAGMA
	for (size_t i = 0; i < n; i++)
		d[i] = bswap_s(s[i]);
	if (dst != src && len % W4)
		memcpy(dst + n * W4, src + n * W4, len % W4);
}

/*
 * The 2- and 8-byte dtypes (float16, bfloat16; int64, uint64, float64): one
 * element at a time through inc_elem_combine() in both kernel sets, so the
 * SIMD and scalar sets agree on them by construction. float16/bfloat16 go
 * through float32 and back per element (inc_elem.h); 64-bit integers and
 * doubles are one native operation each.
 */

/* bswap_w() - a @w-byte element (2, 4 or 8) between wire and host order. */
static inline uint64_t bswap_w(uint64_t x, size_t w)
{
	if (WIRE_IS_HOST)
		return x;
	return w == 2 ? __builtin_bswap16((uint16_t)x) : w == 4 ? __builtin_bswap32((uint32_t)x) : __builtin_bswap64(x);
}

/*
 * wide_loop() - acc = op(acc, in) for @n elements of @t (@w bytes each),
 * the accumulator in host order if @host. Inlined with constant @op, @t,
 * @w and @host (wide_combine()), so each case is a loop of its own.
 */
static inline __attribute__((always_inline)) void wide_loop(uint8_t *acc, const uint8_t *in, size_t n, enum inc_op op,
							    enum inc_dtype t, size_t w, int host)
{
	SCALAR_LOOP_PRAGMA
	for (size_t i = 0; i < n; i++, acc += w, in += w) {
		uint64_t a = inc_elem_get(acc, w), b = bswap_w(inc_elem_get(in, w), w);
		uint64_t r = inc_elem_combine(host ? a : bswap_w(a, w), b, op, t);
		inc_elem_put(acc, host ? r : bswap_w(r, w), w);
	}
}

/* WIDE_CASE() - the case of dtype @T (@W bytes) in wide_combine(): its operator's loop. */
#define WIDE_CASE(T, W, HOST)                                                                            \
	case T:                                                                                          \
		if (op == INC_OP_SUM)                                                                    \
			wide_loop(acc, in, n, INC_OP_SUM, T, W, HOST);                                   \
		else if (op == INC_OP_MAX)                                                               \
			wide_loop(acc, in, n, INC_OP_MAX, T, W, HOST);                                   \
		else if (op == INC_OP_MIN)                                                               \
			wide_loop(acc, in, n, INC_OP_MIN, T, W, HOST);                                   \
		break;

/* WIDE_KERNEL() - defines @name(acc, in, n, op, dtype) for the 2- and 8-byte dtypes, @HOST as SCALAR_KERNEL(). */
#define WIDE_KERNEL(name, HOST)                                                                          \
	NO_VECTORIZE static void name(void *accp, const void *inp, size_t n, enum inc_op op,            \
				      enum inc_dtype dtype)                                              \
	{                                                                                                \
		uint8_t *acc = accp;                                                                     \
		const uint8_t *in = inp;                                                                 \
                                                                                                         \
		switch (dtype) {                                                                         \
			WIDE_CASE(INC_INT64, 8, HOST)                                                    \
			WIDE_CASE(INC_UINT64, 8, HOST)                                                   \
			WIDE_CASE(INC_FLOAT64, 8, HOST)                                                  \
			WIDE_CASE(INC_FLOAT16, 2, HOST)                                                  \
			WIDE_CASE(INC_BFLOAT16, 2, HOST)                                                 \
		default: break; /* the 4-byte dtypes have kernels of their own */                        \
		}                                                                                        \
	}

WIDE_KERNEL(combine_wide, 0)
WIDE_KERNEL(combine_host_wide, 1)

/* swap_wide() - @len bytes from @src to @dst (the same, or not overlapping), each whole
 * @w-byte element byte-swapped, the last len % w bytes copied as they are. */
NO_VECTORIZE static void swap_wide(void *dstp, const void *srcp, size_t len, size_t w)
{
	size_t n = len / w;
	uint8_t *dst = dstp;
	const uint8_t *src = srcp;

	SCALAR_LOOP_PRAGMA
	for (size_t i = 0; i < n; i++)
		inc_elem_put(dst + i * w, bswap_w(inc_elem_get(src + i * w, w), w), w);
	if (dst != src && len % w)
		memcpy(dst + n * w, src + n * w, len % w);
}

/* combine_scalar(), combine_host_scalar(), swap_scalar() - the scalar set: by the dtype's width. */
static void combine_scalar(void *acc, const void *in, size_t n, enum inc_op op, enum inc_dtype dtype)
{
	if (inc_dtype_size(dtype) == W4)
		combine4_scalar(acc, in, n, op, dtype);
	else
		combine_wide(acc, in, n, op, dtype);
}

static void combine_host_scalar(void *acc, const void *in, size_t n, enum inc_op op, enum inc_dtype dtype)
{
	if (inc_dtype_size(dtype) == W4)
		combine4_host_scalar(acc, in, n, op, dtype);
	else
		combine_host_wide(acc, in, n, op, dtype);
}

static void swap_scalar(void *dst, const void *src, size_t len, size_t w)
{
	if (w == W4)
		swap4_scalar(dst, src, len);
	else
		swap_wide(dst, src, len, w);
}

int inc_kernel_parse(const char *s, enum inc_kernel *k)
{
	static const char *const names[] = { "auto", "simd", "scalar" };

	for (int i = 0; i < 3; i++)
		if (s && !strcmp(s, names[i])) {
			*k = (enum inc_kernel)i;
			return 0;
		}
	return -1;
}

/* A set of kernels: what inc_combine(), inc_combine_host(), inc_load() and inc_store() run. */
struct kernels {
	const char *name; /* for inc_kernel_name() */
	void (*combine)(void *acc, const void *in, size_t n, enum inc_op op, enum inc_dtype dtype);
	void (*combine_host)(void *acc, const void *in, size_t n, enum inc_op op, enum inc_dtype dtype);
	void (*swap)(void *dst, const void *src, size_t len, size_t w); /* @w: element width */
};

/* SIMD_KERNELS() - defines struct kernels @name: the SIMD kernels, AVX2 ones first if @V8. */
#define SIMD_KERNELS(name, V8, label)                                                                    \
	static void name##_combine(void *acc, const void *in, size_t n, enum inc_op op, enum inc_dtype dtype) \
	{                                                                                                \
		if (inc_dtype_size(dtype) == W4)                                                         \
			combine_simd(acc, in, n, op, dtype, 0, V8);                                      \
		else                                                                                     \
			combine_wide(acc, in, n, op, dtype);                                             \
	}                                                                                                \
	static void name##_combine_host(void *acc, const void *in, size_t n, enum inc_op op,            \
					enum inc_dtype dtype)                                            \
	{                                                                                                \
		if (inc_dtype_size(dtype) == W4)                                                         \
			combine_simd(acc, in, n, op, dtype, 1, V8);                                      \
		else                                                                                     \
			combine_host_wide(acc, in, n, op, dtype);                                        \
	}                                                                                                \
	static void name##_swap(void *dst, const void *src, size_t len, size_t w)                       \
	{                                                                                                \
		if (w == W4)                                                                             \
			swap_simd(dst, src, len, V8);                                                    \
		else                                                                                     \
			swap_wide(dst, src, len, w);                                                     \
	}                                                                                                \
	static const struct kernels name = { label, name##_combine, name##_combine_host, name##_swap };

SIMD_KERNELS(k_sse2, 0, "simd-sse2")
#ifdef HAVE_V8
SIMD_KERNELS(k_avx2, 1, "simd-avx2")
#endif
static const struct kernels k_scalar = { "scalar", combine_scalar, combine_host_scalar, swap_scalar };

/*
 * Which kernels run: chosen once, by inc_kernel_use() or, on the first call
 * without it, by INCSWITCH_KERNEL (auto if unset or not understood): until
 * then the k_choose stubs, which choose and pass the call on.
 */
static const struct kernels k_choose;
static const struct kernels *kern = &k_choose;
static const char *kernel_why = ""; /* what chose them, for inc_kernel_name() */

/* choose() - the kernels in use, chosen by INCSWITCH_KERNEL (else auto) if nothing chose them yet. */
static const struct kernels *choose(void)
{
	if (kern == &k_choose) {
		enum inc_kernel k = INC_KERNEL_AUTO;

		inc_kernel_use(inc_kernel_parse(getenv("INCSWITCH_KERNEL"), &k) ? INC_KERNEL_AUTO : k,
			       "INCSWITCH_KERNEL");
	}
	return kern;
}

/* choose_combine(), choose_combine_host(), choose_swap() - k_choose: choose(), then the chosen kernel. */
static void choose_combine(void *acc, const void *in, size_t n, enum inc_op op, enum inc_dtype dtype)
{
	choose()->combine(acc, in, n, op, dtype);
}

static void choose_combine_host(void *acc, const void *in, size_t n, enum inc_op op, enum inc_dtype dtype)
{
	choose()->combine_host(acc, in, n, op, dtype);
}

static void choose_swap(void *dst, const void *src, size_t len, size_t w)
{
	choose()->swap(dst, src, len, w);
}

static const struct kernels k_choose = { "?", choose_combine, choose_combine_host, choose_swap };

void inc_kernel_use(enum inc_kernel k, const char *why)
{
	const struct kernels *simd = &k_sse2;

#ifdef HAVE_V8
	if (has_avx2())
		simd = &k_avx2;
#endif
	if (k == INC_KERNEL_AUTO) {
		int tcg = cpu_is_tcg();

		k = tcg ? INC_KERNEL_SCALAR : INC_KERNEL_SIMD;
		why = tcg ? "auto: CPU emulated by QEMU TCG" : "auto: no QEMU TCG";
	}
	kernel_why = why ? why : "";
	kern = k == INC_KERNEL_SCALAR ? &k_scalar : simd;
}

const char *inc_kernel_name(const char **why)
{
	const char *name = choose()->name;

	if (why)
		*why = kernel_why;
	return name;
}

void inc_combine(void *acc, const void *in, size_t n, enum inc_op op, enum inc_dtype dtype)
{
	kern->combine(acc, in, n, op, dtype);
}

void inc_combine_host(void *acc, const void *in, size_t n, enum inc_op op, enum inc_dtype dtype)
{
	kern->combine_host(acc, in, n, op, dtype);
}

/* inc_load(), inc_store(): an unknown @dtype is taken as 4 bytes wide (inc_imm_decode() lets none through) */
void inc_load(void *acc, const void *in, size_t len, enum inc_dtype dtype)
{
	size_t w = inc_dtype_size(dtype);

	kern->swap(acc, in, len, w ? w : W4);
}

void inc_store(void *acc, size_t len, enum inc_dtype dtype)
{
	size_t w = inc_dtype_size(dtype);

	kern->swap(acc, acc, len, w ? w : W4);
}
