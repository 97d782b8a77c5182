/*
 * crc32.h — the gzip CRC-32 (polynomial 0x04C11DB7, bit-reflected; the
 * IBTA's ICRC) for the switch, and arithmetic modulo its polynomial.
 *
 * Two implementations, chosen once at run time (crc32_use()), with the same
 * results bit for bit:
 *   clmul      carry-less multiplication (Intel's folding method): 4 x 512
 *              bits at a time with VPCLMULQDQ where the CPU has AVX-512,
 *              else 4 x 128 bits with PCLMULQDQ;
 *   libdeflate libdeflate_crc32() (its own PCLMULQDQ code, or slice-by-8
 *              tables on a CPU without it): for CPUs that QEMU TCG emulates,
 *              which runs table look-ups faster than emulated vector code,
 *              and for CPUs without PCLMULQDQ.
 * Polynomials in a uint32_t are bit-reflected as the CRC works on them:
 * bit 31 is x^0, bit 0 is x^31.
 */
#ifndef INCLAB_CRC32_H
#define INCLAB_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* crc32_masked()'s mask: bytes 0..63 ORed into the data's first 64, bytes 64..79 zero (read, never used) */
#define CRC32_MASK_LEN 80

enum crc32_impl { CRC32_AUTO, CRC32_CLMUL, CRC32_LIBDEFLATE };

/**
 * crc32_use() - compute CRCs with @k from now on: AUTO takes clmul unless
 * the CPU lacks PCLMULQDQ or is emulated by QEMU TCG; CLMUL where the CPU
 * cannot run it gives libdeflate. @why: what chose it, for crc32_name().
 * Without a call the first CRC chooses by INCSWITCH_KERNEL: "scalar" gives
 * libdeflate, anything else auto (as the combine kernels choose).
 */
void crc32_use(enum crc32_impl k, const char *why);

/** crc32_name() - "clmul-vpclmul512", "clmul-pclmul128" or "libdeflate"; @why (may be NULL): what chose it. */
const char *crc32_name(const char **why);

/** crc32_gzip() - the CRC of @len bytes at @p after those whose CRC is @crc (libdeflate_crc32()'s convention; 0 to start). */
uint32_t crc32_gzip(uint32_t crc, const void *p, size_t len);

/**
 * crc32_masked() - crc32_gzip() of the @len bytes at @p with bytes 0..63 ORed
 * with @mask (CRC32_MASK_LEN bytes): the ICRC's fields counted as ones,
 * without copying the frame. @len >= 16.
 */
uint32_t crc32_masked(uint32_t crc, const void *p, size_t len, const uint8_t *mask);

/** crc32_mulmod() - @a * @b modulo the polynomial (zlib's multmodp()). */
uint32_t crc32_mulmod(uint32_t a, uint32_t b);

/** crc32_xpow() - x^@n modulo the polynomial: a CRC moved past @n bits of data is multiplied by it. */
uint32_t crc32_xpow(uint64_t n);

#endif
