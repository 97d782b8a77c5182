/*
 * crc32.c — the gzip CRC-32 by ISA-L or libdeflate (see crc32.h), the
 * ICRC's masked fields on a copy of the buffer's first bytes, and the
 * arithmetic modulo the polynomial that moves a CRC past data (zlib's).
 *
 * Both libraries share zlib's convention: crc32_gzip_refl(crc, p, n) and
 * libdeflate_crc32(crc, p, n) take and return the finished CRC (inverted
 * in and out), 0 to start, so a CRC runs on across split buffers
 * (tests/unit/test_roce.c checks both against libdeflate).
 */
#include "crc32.h"

#include <isa-l/crc.h>
#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_COPY32 1 /* masked_copy32(), for AVX2 */
#endif

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
		b = crc32_mulx(b);
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

/* The library in use, CRC32_ISAL or CRC32_LIBDEFLATE: chosen by crc32_use() or, on the first CRC without it, by choose(). */
static enum crc32_impl crc_kind = CRC32_AUTO;
static const char *crc_label = "?", *crc_why = "";
static uint32_t masked_isal(uint32_t crc, const uint8_t *p, size_t len, const uint8_t *mask);
#ifdef HAVE_COPY32
static uint32_t masked_isal_avx2(uint32_t crc, const uint8_t *p, size_t len, const uint8_t *mask);
#endif
static uint32_t masked_lib(uint32_t crc, const uint8_t *p, size_t len, const uint8_t *mask);
/* crc32_masked()'s code for the library in use (one function per library: no prologue for the registers of both) */
static uint32_t (*masked_impl)(uint32_t, const uint8_t *, size_t, const uint8_t *);

void crc32_use(enum crc32_impl k, const char *why)
{
	crc_why = why ? why : "";
	if (k == CRC32_AUTO) {
		int tcg = cpu_is_tcg();

		k = tcg ? CRC32_LIBDEFLATE : CRC32_ISAL;
		crc_why = tcg ? "auto: CPU emulated by QEMU TCG" : "auto: no QEMU TCG";
	}
	crc_kind = k;
	crc_label = k == CRC32_ISAL ? "isa-l" : "libdeflate";
	masked_impl = k == CRC32_ISAL ? masked_isal : masked_lib;
#ifdef HAVE_COPY32
	if (k == CRC32_ISAL && __builtin_cpu_supports("avx2"))
		masked_impl = masked_isal_avx2;
#endif
}

/* choose() - nothing chose yet: choose by INCSWITCH_KERNEL ("scalar": libdeflate, "simd": isa-l, else auto). */
static void choose(void)
{
	const char *k = getenv("INCSWITCH_KERNEL");

	if (k && !strcmp(k, "scalar"))
		crc32_use(CRC32_LIBDEFLATE, "INCSWITCH_KERNEL");
	else if (k && !strcmp(k, "simd"))
		crc32_use(CRC32_ISAL, "INCSWITCH_KERNEL");
	else
		crc32_use(CRC32_AUTO, NULL);
}

const char *crc32_name(const char **why)
{
	if (crc_kind == CRC32_AUTO)
		choose();
	if (why)
		*why = crc_why;
	return crc_label;
}

/* ISA-L's dispatcher picks VPCLMULQDQ on 512-bit vectors, PCLMULQDQ or tables by CPUID, once. */
uint32_t crc32_gzip(uint32_t crc, const void *p, size_t len)
{
	if (__builtin_expect(crc_kind == CRC32_AUTO, 0))
		choose();
	return crc_kind == CRC32_ISAL ? crc32_gzip_refl(crc, p, len) : libdeflate_crc32(crc, p, len);
}

/*
 * masked_copy() - @n bytes (n <= 64) of @p ORed with @mask into @d: from 16
 * bytes on as two overlapping pieces of 16 or 32 bytes (fixed sizes: vector
 * moves; an ACK's or a result's 48 bytes, roce.c's, take two of 32).
 */
static inline void masked_copy(uint8_t *d, const uint8_t *p, size_t n, const uint8_t *mask)
{
	size_t e;

	if (n >= 32) {
		e = n - 32;
		for (size_t i = 0; i < 32; i++)
			d[i] = p[i] | mask[i];
		for (size_t i = 0; i < 32; i++)
			d[e + i] = p[e + i] | mask[e + i];
	} else if (n >= 16) {
		e = n - 16;
		for (size_t i = 0; i < 16; i++)
			d[i] = p[i] | mask[i];
		for (size_t i = 0; i < 16; i++)
			d[e + i] = p[e + i] | mask[e + i];
	} else {
		for (size_t i = 0; i < n; i++)
			d[i] = p[i] | mask[i];
	}
}

#ifdef HAVE_COPY32
/*
 * masked_copy32() - masked_copy() for 32 <= n <= 64 with AVX2, for ISA-L:
 * the last 32 bytes in one store, then the first 16 (and the next 16 when
 * n > 48). ISA-L reads the copy back at once, 16 bytes at 0, 16, ... and
 * the last 16 at n - 16, and a load takes its bytes from the store buffer
 * only if one store holds them all, else it waits until the stores reach
 * the cache. The loads at n - 16 and the one before it overlap: one 32-byte
 * store holds both. masked_copy()'s 16-byte stores stalled two loads of a
 * 44-byte copy (an ACK's, before roce.c added 4 bytes: 48 now, no overlap);
 * this, none (bench_engine: ~5 % more data frames/s).
 */
__attribute__((target("avx2"))) static void masked_copy32(uint8_t *restrict d, const uint8_t *restrict p, size_t n,
							  const uint8_t *restrict mask)
{
	size_t e = n - 32;

	for (size_t i = 0; i < 32; i++)
		d[e + i] = p[e + i] | mask[e + i];
	for (size_t i = 0; i < 16; i++)
		d[i] = p[i] | mask[i];
	if (n > 48)
		for (size_t i = 16; i < 32; i++)
			d[i] = p[i] | mask[i];
}
#endif

/*
 * head_cut() - how many of @len bytes crc32_masked() masks in a copy (the
 * rest goes to the CRC where it is). Up to 64 bytes all of them, one call;
 * a longer buffer cut after h = 44..59 bytes, h = 44 + (len - 44) mod 16,
 * so that the rest is whole 16-byte blocks: behind 4 + 40 or 4 + 44 bytes
 * of headers (the LRH's last 4 bytes, roce.c; BTH; BTH and ImmDt or AETH)
 * a 1 KiB payload is the rest, which ISA-L folds 128 bytes at a time and
 * libdeflate 64, with nothing left over (cut after 64 bytes, the rest's
 * 108-byte remainder, 16 bytes a step, took ~60 % longer per data frame
 * with ISA-L; libdeflate ran ~30 more instructions per data frame).
 */
static inline size_t head_cut(size_t len)
{
	return len <= CRC32_MASK_LEN ? len : CRC32_MASK_HEAD + (len - CRC32_MASK_HEAD) % 16;
}

/* masked_lib() - crc32_masked() by libdeflate: the first head_cut() bytes masked in a copy, the rest where it is. */
static uint32_t masked_lib(uint32_t crc, const uint8_t *p, size_t len, const uint8_t *mask)
{
	uint8_t head[CRC32_MASK_LEN];

	if (len > sizeof(head)) {
		size_t h = head_cut(len);

		masked_copy(head, p, h, mask);
		return libdeflate_crc32(libdeflate_crc32(crc, head, h), p + h, len - h);
	}
	masked_copy(head, p, len, mask);
	return libdeflate_crc32(crc, head, len);
}

/* masked_isal() - crc32_masked() by ISA-L, the copy by masked_copy(). */
static uint32_t masked_isal(uint32_t crc, const uint8_t *p, size_t len, const uint8_t *mask)
{
	uint8_t head[CRC32_MASK_LEN];
	size_t h = head_cut(len);

	if (!len) /* nothing copied: the CRC as it was (and no read of the copy) */
		return crc;
	masked_copy(head, p, h, mask);
	crc = crc32_gzip_refl(crc, head, h);
	return h < len ? crc32_gzip_refl(crc, p + h, len - h) : crc;
}

#ifdef HAVE_COPY32
static uint32_t masked_isal_avx2_long(uint32_t crc, const uint8_t *p, size_t len, const uint8_t *mask);

/*
 * isal_copy - where masked_isal_avx2() masks a copy, one per thread. On the
 * stack, GCC aligns an array of 32 bytes or more to 32 with AVX (a frame
 * pointer and a realignment per call), and the call to ISA-L could not be
 * a jump (the copy would still be live): 5 instructions more a call.
 */
static _Thread_local uint8_t isal_copy[CRC32_MASK_LEN];

/*
 * masked_isal_avx2() - crc32_masked() by ISA-L, the copy by masked_copy32():
 * 32..64 bytes (a frame's headers: an ACK's, a result's; a data frame's
 * first head_cut() bytes) masked into isal_copy, then ISA-L by a jump (~15
 * instructions of its own; 36 when one function did every length with the
 * copy on its stack); other lengths by masked_isal_avx2_long().
 */
__attribute__((target("avx2"))) static uint32_t masked_isal_avx2(uint32_t crc, const uint8_t *p, size_t len,
								 const uint8_t *mask)
{
	if (len - 32 > CRC32_MASK_LEN - 32) /* unsigned: len < 32 or len > 64 */
		return masked_isal_avx2_long(crc, p, len, mask);
	masked_copy32(isal_copy, p, len, mask);
	return crc32_gzip_refl(crc, isal_copy, len);
}

/*
 * masked_isal_avx2_long() - masked_isal_avx2() of fewer than 32 bytes (by
 * masked_isal()) or more than 64: the first head_cut() bytes by
 * masked_isal_avx2(), then the rest where it is.
 */
__attribute__((target("avx2"), noinline)) static uint32_t masked_isal_avx2_long(uint32_t crc, const uint8_t *p,
									size_t len, const uint8_t *mask)
{
	size_t h = head_cut(len);

	if (len < 32)
		return masked_isal(crc, p, len, mask);
	crc = masked_isal_avx2(crc, p, h, mask);
	return crc32_gzip_refl(crc, p + h, len - h);
}
#endif

/* masked_choose() - the first crc32_masked() without crc32_use(): choose(), then compute. */
static uint32_t masked_choose(uint32_t crc, const uint8_t *p, size_t len, const uint8_t *mask)
{
	choose();
	return masked_impl(crc, p, len, mask);
}

/* masked_impl's definition: masked_choose() until crc32_use() sets it */
static uint32_t (*masked_impl)(uint32_t, const uint8_t *, size_t, const uint8_t *) = masked_choose;

uint32_t crc32_masked(uint32_t crc, const void *p, size_t len, const uint8_t *mask)
{
	return masked_impl(crc, p, len, mask);
}
