/*
 * crc32.c — the gzip CRC-32 by carry-less multiplication, libdeflate's as
 * the fallback (see crc32.h).
 *
 * The folding method is Intel's ("Fast CRC Computation for Generic
 * Polynomials Using PCLMULQDQ Instruction", Gopal et al., 2009), for the
 * bit-reflected CRC as the Linux kernel's crc32-pclmul_asm.S and libdeflate
 * do it. The data is cut into 128-bit blocks. A block A that lies D bits
 * before the end of the data it is folded into contributes A * x^D modulo
 * the polynomial G: with A = Ah x^64 + Al (Ah the first 8 bytes, the low
 * quadword of the register: reflected, earlier bytes are higher degrees),
 * A x^D = Ah x^(D+64) + Al x^D. PCLMULQDQ of two bit-reflected 64-bit
 * values gives their product times x (bit 127 of the result stays 0), and a
 * 32-bit constant c in the low half of a quadword stands for c x^32; so
 * Ah is multiplied by x^(D+31) mod G and Al by x^(D-33) mod G, and the two
 * products XORed with the block D bits further on replace both (kfold()).
 * Independent accumulators fold 4 blocks at a time. What remains at the end
 * is one 128-bit value R, the data's remainder in disguise: reduce() turns
 * it into R x^32 mod G, the CRC (Barrett reduction, the kernel's steps).
 *
 * The constants are x^k mod G in the CRC's bit order (crc32_xpow(k));
 * tests/unit/test_roce.c recomputes every one.
 */
#include "crc32.h"

#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

/* the polynomial, bit-reflected, without its x^32 term */
#define CRC_POLY 0xedb88320u

uint32_t crc32_mulmod(uint32_t a, uint32_t b)
{
	uint32_t m = 1u << 31, p = 0;

	if (!a)
		return 0;
	for (;;) {
		if (a & m) {
			p ^= b;
			if (!(a & (m - 1)))
				break;
		}
		m >>= 1;
		b = b & 1 ? (b >> 1) ^ CRC_POLY : b >> 1;
	}
	return p;
}

/* x^(2^k) modulo the polynomial, k = 0..31 (zlib's x2n_table): squares of x, from 0x40000000 = x^1. */
static const uint32_t crc_x2n[32] = {
	0x40000000, 0x20000000, 0x08000000, 0x00800000, 0x00008000, 0xedb88320, 0xb1e6b092, 0xa06a2517,
	0xed627dae, 0x88d14467, 0xd7bbfe6a, 0xec447f11, 0x8e7ea170, 0x6427800e, 0x4d47bae0, 0x09fe548f,
	0x83852d0f, 0x30362f1a, 0x7b5a9cc3, 0x31fec169, 0x9fec022a, 0x6c8dedc4, 0x15d6874d, 0x5fde7a4e,
	0xbad90e37, 0x2e4e5eef, 0x4eaba214, 0xa8a472c0, 0x429a969e, 0x148d302a, 0xc40ba6d0, 0xc4e22c3c,
};

uint32_t crc32_xpow(uint64_t n)
{
	uint32_t p = 1u << 31; /* x^0 */

	/* x^(2^32) = x^1 modulo G, as x^(2^k) repeats with period 32 from k = 0 on (zlib's x2nmodp()) */
	for (unsigned k = 0; n; n >>= 1, k++)
		if (n & 1)
			p = crc32_mulmod(crc_x2n[k & 31], p);
	return p;
}

/*
 * masked_copy() - @n bytes (16 <= n < 64) of @p ORed with @mask into @d, as
 * two overlapping copies of 16 or 32 bytes (fixed sizes: vector moves).
 */
static inline void masked_copy(uint8_t *d, const uint8_t *p, size_t n, const uint8_t *mask)
{
	size_t w = n >= 32 ? 32 : 16, e = n - w;

	if (w == 32) {
		for (size_t i = 0; i < 32; i++)
			d[i] = p[i] | mask[i];
		for (size_t i = 0; i < 32; i++)
			d[e + i] = p[e + i] | mask[e + i];
	} else {
		for (size_t i = 0; i < 16; i++)
			d[i] = p[i] | mask[i];
		for (size_t i = 0; i < 16; i++)
			d[e + i] = p[e + i] | mask[e + i];
	}
}

/*
 * crc_lib() - the libdeflate implementation, @mask (may be NULL) ORed into
 * the first 64 bytes of a copy: the CRC of the copy, then of the rest.
 */
static uint32_t crc_lib(uint32_t crc, const uint8_t *p, size_t len, const uint8_t *mask)
{
	uint8_t head[64];

	if (!mask)
		return libdeflate_crc32(crc, p, len);
	if (len >= sizeof(head)) {
		for (size_t i = 0; i < sizeof(head); i++)
			head[i] = p[i] | mask[i];
		return libdeflate_crc32(libdeflate_crc32(crc, head, sizeof(head)), p + sizeof(head),
					len - sizeof(head));
	}
	if (len >= 16) {
		masked_copy(head, p, len, mask);
	} else {
		for (size_t i = 0; i < len; i++)
			head[i] = p[i] | mask[i];
	}
	return libdeflate_crc32(crc, head, len);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_CLMUL 1

#define CLMUL128 __attribute__((target("pclmul,avx")))
#define CLMUL512 __attribute__((target("pclmul,avx,avx512f,avx512vl,avx512bw,vpclmulqdq")))

/*
 * Fold constants for a distance of D bits: low quadword x^(D+31) mod G,
 * high quadword x^(D-33) mod G (see the top of the file).
 */
#define K128 0xae689191, 0xccaa009e  /* D = 128: one 16-byte block */
#define K256 0xf1da05aa, 0x81256527  /* D = 256 */
#define K384 0x3db1ecdc, 0xaf449247  /* D = 384 */
#define K512 0x8f352d95, 0x1d9513d7  /* D = 512: four 16-byte blocks, one 64-byte vector */
#define K1024 0x33fff533, 0x910eeec1 /* D = 1024 */
#define K1536 0x596c8d81, 0xf5e48c85 /* D = 1536 */
#define K2048 0xce3371cb, 0xe95c1271 /* D = 2048: four 64-byte vectors */

/* K() - a fold constant pair as a 128-bit vector, low quadword first (k128(): its pair spelt out). */
#define k128(lo, hi) _mm_set_epi64x((long long)(hi), (long long)(lo))
#define K(pair) k128(pair)

/* shift_tab: PSHUFB indices; 0x80 selects a zero byte. Windows of it shift a vector by bytes (fold_partial()). */
static const uint8_t shift_tab[48] = {
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
};

/* fold() - @x moved forward by the distance of constants @k (products of both quadwords, XORed). */
static inline CLMUL128 __m128i fold(__m128i x, __m128i k)
{
	return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

/* load16() - the 16 bytes at @p + @off, ORed with @mask's at @off while @off < 64 (@mask may be NULL). */
static inline CLMUL128 __m128i load16(const uint8_t *p, size_t off, const uint8_t *mask)
{
	__m128i v = _mm_loadu_si128((const void *)(p + off));

	if (mask && off < 64)
		v = _mm_or_si128(v, _mm_loadu_si128((const void *)(mask + off)));
	return v;
}

/*
 * fold_partial() - @x (the remainder of the data before @p + @off) followed
 * by the last @r bytes (1..15) at @p + @off: x's first r bytes become a
 * block of their own (zeros in front of data do not change a CRC), folded
 * into x's last 16 - r bytes followed by the r new ones. Reads the 16 bytes
 * that end with the data (r bytes before them were folded already).
 */
static inline CLMUL128 __m128i fold_partial(__m128i x, const uint8_t *p, size_t off, size_t r, const uint8_t *mask)
{
	__m128i lsh = _mm_loadu_si128((const void *)&shift_tab[r]);
	__m128i rsh = _mm_loadu_si128((const void *)&shift_tab[r + 16]);
	__m128i head = _mm_shuffle_epi8(x, lsh); /* 16 - r zero bytes, then x's first r */
	__m128i tail = _mm_blendv_epi8(_mm_shuffle_epi8(x, rsh), load16(p, off + r - 16, mask), rsh);

	return _mm_xor_si128(fold(head, K(K128)), tail);
}

/*
 * reduce() - the CRC register of remainder @x: x x^32 mod G, in three steps
 * (crc32-pclmul_asm.S): the first quadword folded into the rest (x^95: 128
 * -> 96 bits), the first 32 bits of that into the rest ((x^64 mod G) << 1,
 * 0x163cd6124: 96 -> 64 bits), then Barrett's reduction with
 * floor(x^64 / G) = 0x1f7011641 and G itself = 0x1db710641 (33 bits each,
 * reflected).
 */
static inline CLMUL128 uint32_t reduce(__m128i x)
{
	const __m128i k = _mm_set_epi64x(0xccaa009e, 0x163cd6124);
	const __m128i barrett = _mm_set_epi64x(0x1f7011641, 0x1db710641);
	const __m128i low32 = _mm_set_epi32(0, 0, 0, -1);
	__m128i t;

	x = _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x10), _mm_srli_si128(x, 8));
	x = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x, low32), k, 0x00), _mm_srli_si128(x, 4));
	t = _mm_clmulepi64_si128(_mm_and_si128(x, low32), barrett, 0x10);
	t = _mm_clmulepi64_si128(_mm_and_si128(t, low32), barrett, 0x00);
	return (uint32_t)_mm_extract_epi32(_mm_xor_si128(x, t), 1);
}

/*
 * finish() - fold the bytes @off..@len of @p into remainder @x, 16 at a
 * time and then the last 1..15, and reduce. @len - @off < 64 in practice.
 */
static inline CLMUL128 uint32_t finish(__m128i x, const uint8_t *p, size_t off, size_t len, const uint8_t *mask)
{
	for (; len - off >= 16; off += 16)
		x = _mm_xor_si128(fold(x, K(K128)), load16(p, off, mask));
	if (len > off)
		x = fold_partial(x, p, off, len - off, mask);
	return reduce(x);
}

/*
 * crc_pclmul() - crc32_masked() with PCLMULQDQ (AVX encoding): 4 x 128 bits
 * at a time; below 16 bytes crc_lib() (@mask may be NULL).
 */
static CLMUL128 uint32_t crc_pclmul(uint32_t crc, const uint8_t *p, size_t len, const uint8_t *mask)
{
	__m128i x0, x1, x2, x3;
	size_t off = 64;

	if (len < 16)
		return crc_lib(crc, p, len, mask);
	x0 = _mm_xor_si128(load16(p, 0, mask), _mm_cvtsi32_si128((int)~crc));
	if (len < 64)
		return ~finish(x0, p, 16, len, mask);
	x1 = load16(p, 16, mask);
	x2 = load16(p, 32, mask);
	x3 = load16(p, 48, mask);
	for (; len - off >= 64; off += 64) {
		x0 = _mm_xor_si128(fold(x0, K(K512)), _mm_loadu_si128((const void *)(p + off)));
		x1 = _mm_xor_si128(fold(x1, K(K512)), _mm_loadu_si128((const void *)(p + off + 16)));
		x2 = _mm_xor_si128(fold(x2, K(K512)), _mm_loadu_si128((const void *)(p + off + 32)));
		x3 = _mm_xor_si128(fold(x3, K(K512)), _mm_loadu_si128((const void *)(p + off + 48)));
	}
	/* the four accumulators into one: 384, 256, 128 and 0 bits before its end */
	x0 = _mm_xor_si128(_mm_xor_si128(fold(x0, K(K384)), fold(x1, K(K256))),
			   _mm_xor_si128(fold(x2, K(K128)), x3));
	return ~finish(x0, p, off, len, mask);
}

/* fold512() - 4 lanes of @x moved forward by the distance of @k (the pair in every lane), XORed with @d. */
static inline CLMUL512 __m512i fold512(__m512i x, __m512i k, __m512i d)
{
	/* 0x96: a ^ b ^ c */
	return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00), _mm512_clmulepi64_epi128(x, k, 0x11),
					 d, 0x96);
}

/* KZ() - a fold constant pair in every 128-bit lane. */
#define KZ(pair) _mm512_broadcast_i32x4(k128(pair))

/*
 * crc_vpclmul512() - crc32_masked() with VPCLMULQDQ on 512-bit vectors:
 * four accumulators of 64 bytes, 256 bytes per round; below 256 bytes
 * crc_pclmul() (@mask may be NULL).
 */
static CLMUL512 uint32_t crc_vpclmul512(uint32_t crc, const uint8_t *p, size_t len, const uint8_t *mask)
{
	__m512i z0, z1, z2, z3, lanes;
	__m128i x, last;
	size_t off = 256;

	if (len < 256)
		return crc_pclmul(crc, p, len, mask);
	z0 = _mm512_loadu_si512(p);
	if (mask)
		z0 = _mm512_or_si512(z0, _mm512_loadu_si512(mask));
	z0 = _mm512_xor_si512(z0, _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)~crc)));
	z1 = _mm512_loadu_si512(p + 64);
	z2 = _mm512_loadu_si512(p + 128);
	z3 = _mm512_loadu_si512(p + 192);
	for (; len - off >= 256; off += 256) {
		z0 = fold512(z0, KZ(K2048), _mm512_loadu_si512(p + off));
		z1 = fold512(z1, KZ(K2048), _mm512_loadu_si512(p + off + 64));
		z2 = fold512(z2, KZ(K2048), _mm512_loadu_si512(p + off + 128));
		z3 = fold512(z3, KZ(K2048), _mm512_loadu_si512(p + off + 192));
	}
	/* the accumulators into one: 1536, 1024, 512 and 0 bits before its end */
	z0 = fold512(z0, KZ(K1536), fold512(z1, KZ(K1024), fold512(z2, KZ(K512), z3)));
	for (; len - off >= 64; off += 64)
		z0 = fold512(z0, KZ(K512), _mm512_loadu_si512(p + off));
	/* its four lanes into one: lane i lies 384 - 128 i bits before the end of lane 3 */
	last = _mm512_extracti32x4_epi32(z0, 3);
	lanes = _mm512_inserti32x4(_mm512_inserti32x4(_mm512_inserti32x4(_mm512_castsi128_si512(K(K384)), K(K256), 1),
						      K(K128), 2),
				   _mm_setzero_si128(), 3);
	z0 = _mm512_xor_si512(_mm512_clmulepi64_epi128(z0, lanes, 0x00), _mm512_clmulepi64_epi128(z0, lanes, 0x11));
	x = _mm_xor_si128(_mm_xor_si128(_mm512_castsi512_si128(z0), _mm512_extracti32x4_epi32(z0, 1)),
			  _mm512_extracti32x4_epi32(z0, 2));
	x = _mm_xor_si128(x, last);
	return ~finish(x, p, off, len, NULL);
}
#endif

/*
 * The implementation in use: chosen once, by crc32_use() or, on the first
 * CRC without it, by INCSWITCH_KERNEL; until then crc_choose().
 */
static uint32_t crc_choose(uint32_t crc, const uint8_t *p, size_t len, const uint8_t *mask);
static uint32_t (*crc_impl)(uint32_t, const uint8_t *, size_t, const uint8_t *) = crc_choose;
static const char *crc_label = "?", *crc_why = "";

void crc32_use(enum crc32_impl k, const char *why)
{
	crc_impl = crc_lib;
	crc_label = "libdeflate";
	crc_why = why ? why : "";
	if (k == CRC32_AUTO) {
		int tcg = cpu_is_tcg();

		k = tcg ? CRC32_LIBDEFLATE : CRC32_CLMUL;
		crc_why = tcg ? "auto: CPU emulated by QEMU TCG" : "auto: no QEMU TCG";
	}
#ifdef HAVE_CLMUL
	/* libgcc checks that the OS saves the YMM registers for avx, the ZMM registers for avx512f */
	if (k == CRC32_CLMUL && __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("avx")) {
		crc_impl = crc_pclmul;
		crc_label = "clmul-pclmul128";
		if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
		    __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("vpclmulqdq")) {
			crc_impl = crc_vpclmul512;
			crc_label = "clmul-vpclmul512";
		}
	}
#endif
}

/* choose() - nothing chose yet: choose by INCSWITCH_KERNEL ("scalar": libdeflate, "simd": clmul, else auto). */
static void choose(void)
{
	const char *k = getenv("INCSWITCH_KERNEL");

	if (k && !strcmp(k, "scalar"))
		crc32_use(CRC32_LIBDEFLATE, "INCSWITCH_KERNEL");
	else if (k && !strcmp(k, "simd"))
		crc32_use(CRC32_CLMUL, "INCSWITCH_KERNEL");
	else
		crc32_use(CRC32_AUTO, NULL);
}

/* crc_choose() - the first CRC without crc32_use(): choose(), then compute. */
static uint32_t crc_choose(uint32_t crc, const uint8_t *p, size_t len, const uint8_t *mask)
{
	choose();
	return crc_impl(crc, p, len, mask);
}

const char *crc32_name(const char **why)
{
	if (crc_impl == crc_choose)
		choose();
	if (why)
		*why = crc_why;
	return crc_label;
}

uint32_t crc32_gzip(uint32_t crc, const void *p, size_t len)
{
	return crc_impl(crc, p, len, NULL);
}

uint32_t crc32_masked(uint32_t crc, const void *p, size_t len, const uint8_t *mask)
{
	return crc_impl(crc, p, len, mask);
}
