/*
 * check_ref.h — what a rank must find after an INC collective, computed on
 * the host independently of the switches (shared by inccl_check and
 * inccl_perf; no network, unit tested by tests/unit/test_check_ref.c):
 *
 * - the aggregation tree, from a spec such as "((0,1),(2,3))": nested
 *   parentheses are switches, numbers are ranks, 0..n-1 each exactly once;
 * - the input patterns of every dtype: "exact" (small multiples of 1/8 and
 *   small integers: every sum exact in any order) and "ieee" (floats with
 *   full mantissas of varied exponents, whose sums round and depend on the
 *   order of addition, NaN, +-Inf, +-0, subnormals, overflow; integers over
 *   their whole range, whose sums wrap);
 * - the expected result of SUM/MAX/MIN over every rank, folded in the
 *   tree's order (the switches' order of a float SUM at any fan-in) with the
 *   switches' documented arithmetic (proto/inc_proto.h, inc_combine()), and
 *   its bit-exact comparison (any NaN matches any NaN);
 * - the timing rule of the barrier check (a rank enters late by a known
 *   delay; every other rank must have waited for it).
 *
 * Elements are handled as bit patterns in host order in a uint64_t, zero-
 * extended from the dtype's width (cref_dtype_size()): integers as two's
 * complement, floats as their IEEE 754 (or bfloat16) bits.
 */
#ifndef CHECK_REF_H
#define CHECK_REF_H

#include <stddef.h>
#include <stdint.h>

#include "inccl.h"

#define CREF_MAX_SPEC 1024            /* longest tree spec accepted, in characters */
#define CREF_MAX_DEPTH 16             /* switches nested deeper than this are refused */
#define CREF_MAX_NODES CREF_MAX_SPEC  /* every node takes at least one character of the spec */
#define CREF_MAX_RANKS (CREF_MAX_NODES - 1) /* a tree of n ranks has at least one switch */
#define CREF_BARRIER_DELAY_MS 1000    /* default delay of the late rank in the barrier check */
#define CREF_NDTYPES 8                /* enum inccl_dtype's values 0..7 */

/** cref_dtype_size() - bytes of an element of @t (2, 4 or 8; 0 for no dtype). */
size_t cref_dtype_size(enum inccl_dtype t);

/** cref_dtype_name() - "int32", "float32", "uint32", "int64", "uint64", "float16", "bfloat16", "float64" or "?". */
const char *cref_dtype_name(enum inccl_dtype t);

/**
 * cref_dtype_list() - the dtypes named in @s ("int32,float16" or "all", in
 * that order, none twice) into @out (room for @max). Return: how many, or
 * -1 for an unknown or repeated name, an empty list or too many.
 */
int cref_dtype_list(const char *s, enum inccl_dtype *out, int max);

/** One node of a tree: a rank (a leaf) or a switch with an ordered list of children. */
struct cref_node {
	int rank;  /* the rank, or -1 for a switch */
	int child; /* a switch's first child (node index); -1 for a rank */
	int next;  /* the next child of the same switch, -1 after the last */
	int col;   /* where the node starts in the spec, 1-based (0: not from a spec) */
};

/** An aggregation tree; node[0] is the top switch. */
struct cref_tree {
	int nranks;    /* ranks 0..nranks-1, each a leaf exactly once */
	int nnodes;
	int max_fanin; /* the most children of one switch */
	int max_fanin_col; /* the column of a switch with that many (0: not from a spec) */
	struct cref_node node[CREF_MAX_NODES];
};

/**
 * cref_tree_parse() - read tree @spec into @t. Grammar: switch = '(' item
 * (',' item)* ')'; item = switch | rank; rank = a decimal number without
 * leading zeros; blanks (space, tab) between tokens are ignored. The whole
 * spec is one switch; the ranks must be 0..n-1, each exactly once. At most
 * CREF_MAX_SPEC characters and CREF_MAX_DEPTH nested switches.
 * Return: 0, or -1 with "column C: reason" (or a reason about the whole
 * spec) in @err, and *@t unspecified. Never reads past the terminating NUL
 * or CREF_MAX_SPEC + 1 characters; recursion is bounded by CREF_MAX_DEPTH.
 */
int cref_tree_parse(const char *spec, struct cref_tree *t, char *err, size_t errlen);

/** cref_tree_flat() - one switch over ranks 0..@nranks-1 in that order. Return 0, or -1 outside 1..CREF_MAX_RANKS. */
int cref_tree_flat(struct cref_tree *t, int nranks);

/** cref_tree_format() - @t written as a spec ("((0,1),(2,3))") into @buf, truncated to @len. Return @buf. */
const char *cref_tree_format(const struct cref_tree *t, char *buf, size_t len);

/** The input patterns. */
enum cref_pattern { CREF_EXACT = 0, CREF_IEEE = 1 };

/** cref_pattern_parse() - "exact" or "ieee" into *@p. Return 0 or -1. */
int cref_pattern_parse(const char *s, enum cref_pattern *p);

/** cref_pattern_name() - "exact", "ieee" or "?". */
const char *cref_pattern_name(enum cref_pattern p);

/**
 * cref_input() - element @i of rank @rank's input of pattern @p and @dtype in
 * a communicator of @nranks ranks, as bits. @rank may be any int (broadcast
 * non-roots use a rank that does not exist to hold data to be overwritten).
 * The exact pattern does not depend on @nranks; the ieee pattern uses it to
 * choose which ranks hold a special value (NaN, Inf, ...) at an element.
 */
uint64_t cref_input(enum cref_pattern p, enum inccl_dtype dtype, int rank, int nranks, size_t i);

/** cref_fill() - @count elements of rank @rank's input into @buf (host order, each of the dtype's width, any alignment). */
void cref_fill(enum cref_pattern p, enum inccl_dtype dtype, int rank, int nranks, void *buf, size_t count);

/**
 * cref_combine() - one combine of the switches' documented arithmetic
 * (proto/inc_proto.h), written here independently of switch/agg.c and
 * proto/inc_elem.h: integer SUM modulo 2^width, MAX/MIN signed (int32,
 * int64) or unsigned; float32 SUM one float addition rounded to nearest,
 * float64 one double addition; float16/bfloat16 SUM one float32 addition of
 * the two values, rounded again to the type (to nearest-even, by rint() in
 * double); float MAX/MIN with a NaN losing to a number and -0 < +0.
 */
uint64_t cref_combine(enum inccl_dtype dtype, enum inccl_op op, uint64_t acc, uint64_t in);

/**
 * cref_expect() - element @i of @op over every rank's input (pattern @p) as
 * the switches of @t compute it: each switch folds its children from left to
 * right in the order the spec lists them (the first child's value, then
 * acc = op(acc, next child)). That is the switches' order of a float SUM at
 * any fan-in, whatever order the children's packets arrive in, when the
 * spec lists each switch's children as the switch numbers them: by their
 * lowest rank (proto/inc_proto.h); integer SUMs and MAX/MIN are the same in
 * any order.
 */
uint64_t cref_expect(const struct cref_tree *t, enum cref_pattern p, enum inccl_dtype dtype, enum inccl_op op,
		     size_t i);

/** cref_same() - whether @got is @want: equal bits, except that for a float dtype any NaN matches any NaN. */
int cref_same(enum inccl_dtype dtype, uint64_t got, uint64_t want);

/**
 * cref_count_wrong() - elements of @buf (@count, host order, any alignment)
 * that are not cref_same() as @want[0..@count-1]; the index of the first in
 * *@first (untouched when none is wrong).
 */
size_t cref_count_wrong(enum inccl_dtype dtype, const void *buf, const uint64_t *want, size_t count, size_t *first);

/*
 * The barrier check. The ranks line up at one barrier, then rank L enters
 * the next one @delay_ms late (sleeping first); every other rank times that
 * second barrier. No rank may leave it before L entered, so each must have
 * waited about @delay_ms minus the skew with which the ranks left the first
 * barrier. That skew is the switches' delivery of one result to every rank:
 * milliseconds, tens under TCG. Requiring half the delay leaves the other
 * half as headroom for it; a barrier that lets ranks go early returns within
 * a round trip instead.
 */

/** cref_barrier_late_rank() - the rank that enters late in round @k (k % @nranks). */
int cref_barrier_late_rank(int k, int nranks);

/** cref_barrier_left_early() - whether waiting @waited_ms for a rank @delay_ms late is too short (< delay / 2). */
int cref_barrier_left_early(double waited_ms, int delay_ms);

/** cref_now_ms() - monotonic time in milliseconds. */
double cref_now_ms(void);

/** cref_sleep_ms() - sleep @ms milliseconds (whole, even across signals). */
void cref_sleep_ms(int ms);

#endif
