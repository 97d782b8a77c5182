/*
 * fuzz.h — what every libFuzzer target of fuzz/ shares: a cursor over the
 * input, and a check that aborts (so libFuzzer keeps a reproducer) when a
 * property the code under test promises does not hold.
 *
 * A target decodes its input with the fz_*() readers; past the end of the
 * input every reader returns zeros, so any byte string is a valid input.
 */
#ifndef INCLAB_FUZZ_H
#define INCLAB_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The input not read yet. */
struct fz {
	const uint8_t *p;
	size_t n;
};

/** fz_left() - bytes not read yet. */
static inline size_t fz_left(const struct fz *f)
{
	return f->n;
}

/** fz_u8() - the next byte, 0 past the end. */
static inline unsigned fz_u8(struct fz *f)
{
	if (!f->n)
		return 0;
	f->n--;
	return *f->p++;
}

/** fz_u16() - the next two bytes, big-endian. */
static inline unsigned fz_u16(struct fz *f)
{
	unsigned hi = fz_u8(f);

	return hi << 8 | fz_u8(f);
}

/** fz_u32() - the next four bytes, big-endian. */
static inline uint32_t fz_u32(struct fz *f)
{
	uint32_t hi = fz_u16(f);

	return hi << 16 | fz_u16(f);
}

/** fz_take() - up to @want bytes of the input (*@got of them); a pointer into it. */
static inline const uint8_t *fz_take(struct fz *f, size_t want, size_t *got)
{
	const uint8_t *p = f->p;

	*got = want < f->n ? want : f->n;
	f->p += *got;
	f->n -= *got;
	return p;
}

/** fz_strndup() - @n bytes of @d as a NUL-terminated string to free() (a NUL inside ends it early). */
static inline char *fz_strndup(const uint8_t *d, size_t n)
{
	char *s = malloc(n + 1);

	if (!s)
		abort();
	memcpy(s, d, n);
	s[n] = 0;
	return s;
}

/* FZ_CHECK() - a promise of the code under test; its failure is a bug found (abort: libFuzzer saves the input). */
#define FZ_CHECK(cond)                                                                                             \
	do {                                                                                                       \
		if (!(cond)) {                                                                                     \
			fprintf(stderr, "%s:%d: property does not hold: %s\n", __FILE__, __LINE__, #cond);        \
			abort();                                                                                   \
		}                                                                                                  \
	} while (0)

/* The messages of the code under test go here, not to the terminal (libFuzzer runs it millions of times). */
static inline FILE *fz_devnull(void)
{
	static FILE *null;

	if (!null && !(null = fopen("/dev/null", "w")))
		abort();
	return null;
}

#endif
