/*
 * crc32.h — the gzip CRC-32 (polynomial 0x04C11DB7, bit-reflected; the
 * IBTA's ICRC) for the switch, and arithmetic modulo its polynomial.
 *
 * Two libraries, chosen once at run time (crc32_use()), with the same
 * results bit for bit:
 *   isa-l      ISA-L's crc32_gzip_refl(): its dispatcher takes VPCLMULQDQ
 *              on 512-bit vectors where the CPU has AVX-512, else
 *              PCLMULQDQ, else tables;
 *   libdeflate libdeflate_crc32() (its own PCLMULQDQ code, or slice-by-8
 *              tables on a CPU without it): for CPUs that QEMU TCG emulates,
 *              which runs table look-ups faster than emulated vector code.
 * Polynomials in a uint32_t are bit-reflected as the CRC works on them:
 * bit 31 is x^0, bit 0 is x^31.
 */
#ifndef INCLAB_CRC32_H
#define INCLAB_CRC32_H

#include <stddef.h>
#include <stdint.h>

/*
 * crc32_masked()'s mask: CRC32_MASK_LEN bytes, of which the first
 * CRC32_MASK_HEAD are ORed into the data's (the ICRC's: the 4 bytes before
 * the IPv4 header as the masked LRH's second half, then the variant fields
 * of the IPv4, UDP and BTH headers, 40 bytes); the rest zero (read: ORed
 * in as whole vectors).
 */
#define CRC32_MASK_LEN 64
#define CRC32_MASK_HEAD 44

enum crc32_impl { CRC32_AUTO, CRC32_ISAL, CRC32_LIBDEFLATE };

/**
 * crc32_use() - compute CRCs with @k from now on: AUTO takes isa-l unless
 * the CPU is emulated by QEMU TCG. @why: what chose it, for crc32_name().
 * Without a call the first CRC chooses by INCSWITCH_KERNEL: "scalar" gives
 * libdeflate, "simd" isa-l, anything else auto (as the combine kernels choose).
 */
void crc32_use(enum crc32_impl k, const char *why);

/** crc32_name() - "isa-l" or "libdeflate"; @why (may be NULL): what chose it. */
const char *crc32_name(const char **why);

/** crc32_gzip() - the CRC of @len bytes at @p after those whose CRC is @crc (libdeflate_crc32()'s convention; 0 to start). */
uint32_t crc32_gzip(uint32_t crc, const void *p, size_t len);

/**
 * crc32_masked() - crc32_gzip() of the @len bytes at @p with bytes 0..43
 * ORed with @mask (CRC32_MASK_LEN bytes, zero from CRC32_MASK_HEAD on): the
 * ICRC's fields counted as ones. The frame is not written: its first bytes
 * are masked in a copy.
 */
uint32_t crc32_masked(uint32_t crc, const void *p, size_t len, const uint8_t *mask);

/* the polynomial, bit-reflected, without its x^32 term */
#define CRC32_POLY 0xedb88320u

/** crc32_mulx() - @a * x modulo the polynomial (bit-reflected: x^31 shifts out of bit 0). */
static inline uint32_t crc32_mulx(uint32_t a)
{
	return a & 1 ? (a >> 1) ^ CRC32_POLY : a >> 1;
}

/** crc32_mulmod() - @a * @b modulo the polynomial (zlib's multmodp()). */
uint32_t crc32_mulmod(uint32_t a, uint32_t b);

/** crc32_xpow() - x^@n modulo the polynomial: a CRC moved past @n bits of data is multiplied by it. */
uint32_t crc32_xpow(uint64_t n);

#endif
