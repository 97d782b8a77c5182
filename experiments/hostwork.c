/*
 * hostwork.c — the host's own work on a collective's bytes, for the LogGP
 * model (experiments/loggp.sh measures its CPU time from outside the VM):
 *
 *   hostwork swap|copy|sum|stage BYTES ROUNDS
 *
 * runs ROUNDS times over a buffer of BYTES (a multiple of 4) the same loop
 * libinccl runs on every byte of a collective:
 *   swap  comm.c to_wire()/from_wire(): each 32-bit element to the other
 *         byte order (INC sends and receives every byte through it)
 *   copy  memcpy() in pieces of 16 KiB, as ring.c stages each message it
 *         sends and copies each one it receives in an all-gather step
 *   sum   ring.c combine() for float32 SUM (the same function, its type and
 *         operator known at run time): a reduce-scatter step, per byte received
 *   stage ring.c's staging of a ReduceScatter or AllToAll: a buffer of BYTES
 *         malloc()ed, the input copied into it whole, freed, each round (above
 *         glibc's largest mmap threshold, 32 MiB, every round maps fresh pages
 *         and takes a page fault on each; less copy: what that costs)
 * and prints "KIND BYTES ROUNDS CHECK" (CHECK: a figure of the result, so
 * the loops are not optimised away). Exit 0, or 2 with a message on bad
 * arguments (BYTES 4 .. 1 GiB and a multiple of 4, ROUNDS 1 .. 100000) or
 * when the buffers cannot be had.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../proto/inc_elem.h"

#define PIECE 16384 /* ring.c RING_PIECE: bytes per message */

/* swap() - comm.c to_wire(): @n elements of @src to @dst in the other byte order. */
static void swap(uint8_t *dst, const uint8_t *src, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t v;
		memcpy(&v, src + 4 * i, 4);
		v = htonl(v);
		memcpy(dst + 4 * i, &v, 4);
	}
}

/*
 * combine() - ring.c combine() as it is: acc[i] = op(acc[i], in[i]) for @n
 * elements through proto/inc_elem.h, the type and operator known only at
 * run time; called with float32 SUM.
 */
static void combine(uint8_t *acc, const uint8_t *in, size_t n, enum inc_dtype t, enum inc_op op)
{
	size_t w = inc_dtype_size(t);

	for (size_t i = 0; i < n; i++, acc += w, in += w)
		inc_elem_put(acc, inc_elem_combine(inc_elem_get(acc, w), inc_elem_get(in, w), op, t), w);
}

/* number() - @s as a whole number lo..hi, or -1. */
static long long number(const char *s, long long lo, long long hi)
{
	char *end;
	long long v = strtoll(s, &end, 10);

	return *s && !*end && v >= lo && v <= hi ? v : -1;
}

int main(int argc, char **argv)
{
	long long bytes, rounds;
	uint8_t *a, *b;
	double check = 0;
	volatile int kind_dtype = INC_FLOAT32, kind_op = INC_OP_SUM; /* known only at run time, as in libinccl */

	if (argc != 4 || (strcmp(argv[1], "swap") && strcmp(argv[1], "copy") && strcmp(argv[1], "sum") &&
			  strcmp(argv[1], "stage"))) {
		fprintf(stderr, "usage: hostwork swap|copy|sum|stage BYTES ROUNDS\n");
		return 2;
	}
	bytes = number(argv[2], 4, 1LL << 30);
	rounds = number(argv[3], 1, 100000);
	if (bytes < 0 || bytes % 4 || rounds < 0) {
		fprintf(stderr, "hostwork: BYTES must be 4 .. 1073741824 and a multiple of 4, ROUNDS 1 .. 100000\n");
		return 2;
	}
	a = malloc((size_t)bytes);
	b = malloc((size_t)bytes);
	if (!a || !b) {
		fprintf(stderr, "hostwork: cannot allocate 2 x %lld bytes\n", bytes);
		return 2;
	}
	for (long long i = 0; i < bytes / 4; i++) { /* small floats: sums stay exact and finite */
		float v = (float)(i % 7);
		memcpy(a + 4 * i, &v, 4);
		memcpy(b + 4 * i, &v, 4);
	}
	for (long long r = 0; r < rounds; r++) {
		if (!strcmp(argv[1], "swap")) {
			swap(b, a, (size_t)bytes / 4);
		} else if (!strcmp(argv[1], "copy")) {
			for (long long off = 0; off < bytes; off += PIECE)
				memcpy(b + off, a + off, (size_t)(bytes - off < PIECE ? bytes - off : PIECE));
		} else if (!strcmp(argv[1], "stage")) {
			uint8_t *c = malloc((size_t)bytes);
			if (!c) {
				fprintf(stderr, "hostwork: cannot allocate a staging buffer of %lld bytes\n", bytes);
				return 2;
			}
			memcpy(c, a, (size_t)bytes);
			check += c[(r * 13) % bytes];
			free(c);
		} else {
			combine(a, b, (size_t)bytes / 4, (enum inc_dtype)kind_dtype, (enum inc_op)kind_op);
		}
		check += b[r % bytes] + a[(r * 7) % bytes];
	}
	printf("%s %lld %lld %.0f\n", argv[1], bytes, rounds, check);
	free(a);
	free(b);
	return 0;
}
