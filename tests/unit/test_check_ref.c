/*
 * test_check_ref.c — the host-side reference of inccl_check and inccl_perf
 * (hostlib/tools/check_ref.c), cmocka: tree specs good and bad, the
 * reference against values computed by hand, the comparison, the barrier
 * rule, and — the point — the switches simulated with the real inc_combine()
 * of switch/agg.c in every child arrival order must give the reference's
 * result bit for bit: a float SUM folded in child order (as switch/engine.c
 * does, whatever the arrival order), the rest as they arrive.
 */
#include <arpa/inet.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "check_ref.h"
#include "../../proto/inc_proto.h"

#define N 1031         /* elements: 16 periods of the ieee pattern and some */
#define PAYLOAD_OFF 2  /* the switch's elements sit 2 bytes past 4-byte alignment (frame offset 58) */

static struct cref_tree tree; /* ~16 KiB: not on the stack */

/** Parse @spec into the file's tree, failing the test with the error if it is refused. */
static void parse_ok(const char *spec)
{
	char err[256];

	if (cref_tree_parse(spec, &tree, err, sizeof(err)))
		fail_msg("'%s' refused: %s", spec, err);
}

static float f_of(uint32_t h)
{
	float f;
	memcpy(&f, &h, 4);
	return f;
}

static uint32_t b_of(float f)
{
	uint32_t h;
	memcpy(&h, &f, 4);
	return h;
}

static int is_nan(uint32_t h) { return (h & 0x7fffffffu) > 0x7f800000u; }

/* is_float_t() - is @t a float dtype? */
static int is_float_t(enum inccl_dtype t)
{
	return t == INCCL_FLOAT16 || t == INCCL_BFLOAT16 || t == INCCL_FLOAT32 || t == INCCL_FLOAT64;
}


/* ---- tree specs ---------------------------------------------------------- */

static void test_parse_good(void **state)
{
	char buf[CREF_MAX_SPEC + 1];

	parse_ok("(0,1)");
	assert_int_equal(tree.nranks, 2);
	assert_int_equal(tree.nnodes, 3);
	assert_int_equal(tree.max_fanin, 2);
	assert_string_equal(cref_tree_format(&tree, buf, sizeof(buf)), "(0,1)");

	parse_ok("((0,1),(2,3))"); /* the lab's 1-2-4 */
	assert_int_equal(tree.nranks, 4);
	assert_int_equal(tree.nnodes, 7);
	assert_int_equal(tree.max_fanin, 2);
	assert_int_equal(tree.node[0].rank, -1);
	int leaf1 = tree.node[0].child, leaf2 = tree.node[leaf1].next;
	assert_int_equal(tree.node[leaf2].next, -1);
	assert_int_equal(tree.node[tree.node[leaf1].child].rank, 0);
	assert_int_equal(tree.node[tree.node[tree.node[leaf2].child].next].rank, 3);
	assert_string_equal(cref_tree_format(&tree, buf, sizeof(buf)), "((0,1),(2,3))");

	parse_ok(" ( (1 , 0) ,\t(3,2) ) "); /* blanks, ranks in any order */
	assert_string_equal(cref_tree_format(&tree, buf, sizeof(buf)), "((1,0),(3,2))");
	parse_ok("(0)");
	assert_int_equal(tree.nranks, 1);
	assert_int_equal(tree.max_fanin, 1);
	parse_ok("((0,1,2),3)");
	assert_int_equal(tree.max_fanin, 3);
	assert_int_equal(tree.max_fanin_col, 2);
	parse_ok("((((((((((((((((0))))))))))))))))"); /* 16 deep: the limit */
	assert_int_equal(tree.nranks, 1);
	parse_ok("((0,1),(2,3),(4,5),(6,7),(8,9),(10,11),(12,13),(14,15))"); /* 1-4-16 as the leaves' pairs */
	assert_int_equal(tree.nranks, 16);

	assert_int_equal(cref_tree_flat(&tree, 4), 0);
	assert_string_equal(cref_tree_format(&tree, buf, sizeof(buf)), "(0,1,2,3)");
	assert_int_equal(tree.max_fanin, 4);
	assert_int_equal(cref_tree_flat(&tree, 0), -1);
	assert_int_equal(cref_tree_flat(&tree, CREF_MAX_RANKS + 1), -1);
	assert_string_equal(cref_tree_format(&tree, buf, 4), "(0,"); /* truncated, terminated */
}

/** @spec must be refused with a message that contains @why. */
static void refused(const char *spec, const char *why)
{
	char err[256];

	if (cref_tree_parse(spec, &tree, err, sizeof(err)) != -1)
		fail_msg("'%s' accepted", spec ? spec : "(null)");
	if (!strstr(err, why))
		fail_msg("'%s': \"%s\", want \"%s\"", spec ? spec : "(null)", err, why);
}

static void test_parse_bad(void **state)
{
	static char deep[64], wide[CREF_MAX_SPEC + 2], opens[CREF_MAX_SPEC + 1];

	refused(NULL, "empty tree spec");
	refused("", "empty tree spec");
	refused("0", "column 1: a tree starts with '(' (its top switch), found '0'");
	refused("  ", "column 3: a tree starts with '(' (its top switch), found the end");
	refused("(0,1", "column 5: expected ',' or ')', found the end");
	refused("(0,,1)", "column 4: expected a rank or '(', found ','");
	refused("(0,1,)", "column 6: expected a rank or '(', found ')'");
	refused("()", "column 2: empty switch '()'");
	refused("((0,1),())", "column 9: empty switch '()'");
	refused("(0,1))", "column 6: unexpected ')' after the tree's last ')'");
	refused("(0,1)(2)", "column 6: unexpected '(' after the tree's last ')'");
	refused("(0,0)", "column 4: rank 0 appears twice (first at column 2)");
	refused("((0,1),(1,2))", "column 9: rank 1 appears twice (first at column 5)");
	refused("(0,2)", "column 4: rank 2, but a tree of 2 ranks holds 0..1, each once (rank 1 is missing)");
	refused("(1)", "column 2: rank 1, but a tree of 1 ranks holds 0..0, each once (rank 0 is missing)");
	refused("(01,1)", "column 2: rank '01' has a leading zero");
	refused("(-1,0)", "column 2: expected a rank or '(', found '-'");
	refused("(0;1)", "column 3: expected ',' or ')', found ';'");
	refused("(0,1)\x01", "column 6: unexpected byte 0x01");
	refused("(0,1\xff)", "column 5: expected ',' or ')', found byte 0xff");
	refused("(99999999999999999999999999,0)", "column 2: rank '999999999999' is too large (at most 1022)");
	refused("(1022)", "rank 1022, but a tree of 1 ranks");
	refused("(1023)", "column 2: rank '1023' is too large");

	/* 17 nested switches */
	memset(deep, 0, sizeof(deep));
	for (int k = 0; k < 17; k++)
		deep[k] = '(';
	strcat(deep, "0");
	for (int k = 0; k < 17; k++)
		strcat(deep, ")");
	refused(deep, "column 17: switches nested more than 16 deep");
	/* as long as allowed, all '(': refused at the depth limit, nothing overflows */
	memset(opens, '(', CREF_MAX_SPEC);
	refused(opens, "column 17: switches nested more than 16 deep");
	/* one character too long, not terminated where the parser could read past the limit */
	memset(wide, '(', sizeof(wide) - 1);
	wide[sizeof(wide) - 1] = 0;
	refused(wide, "longer than 1024 characters");
}

/*
 * Hostile input: random strings over the spec's alphabet (and a few bytes
 * more) are refused or accepted without crashing; every accepted one is a
 * tree of ranks 0..n-1 once each whose formatted spec reads back the same.
 */
static void test_parse_random(void **state)
{
	static const char alphabet[] = "(((())),,,0123456789 \t x\x80";
	static struct cref_tree again;
	char spec[80], buf[CREF_MAX_SPEC + 1], buf2[CREF_MAX_SPEC + 1], err[256];
	int accepted = 0;

	srand(42);
	for (int k = 0; k < 200000; k++) {
		int len = rand() % 24;
		for (int j = 0; j < len; j++)
			spec[j] = alphabet[rand() % (int)(sizeof(alphabet) - 1)];
		spec[len] = 0;
		if (k % 4 == 0 && len > 2) { /* a well-formed prefix makes acceptance likely */
			spec[0] = '(';
			spec[len - 1] = ')';
		}
		if (cref_tree_parse(spec, &tree, err, sizeof(err))) {
			assert_true(strlen(err) > 0);
			continue;
		}
		accepted++;
		int seen[64] = { 0 };
		for (int j = 0; j < tree.nnodes; j++)
			if (tree.node[j].rank >= 0) {
				assert_in_range(tree.node[j].rank, 0, tree.nranks - 1);
				assert_false(seen[tree.node[j].rank]++);
			}
		cref_tree_format(&tree, buf, sizeof(buf));
		assert_int_equal(cref_tree_parse(buf, &again, err, sizeof(err)), 0);
		assert_string_equal(cref_tree_format(&again, buf2, sizeof(buf2)), buf);
	}
	assert_true(accepted > 100);
}

/* ---- patterns and their checkability --------------------------------------------------- */

static void test_pattern_parse(void **state)
{
	enum cref_pattern p;

	assert_int_equal(cref_pattern_parse("exact", &p), 0);
	assert_int_equal(p, CREF_EXACT);
	assert_int_equal(cref_pattern_parse("ieee", &p), 0);
	assert_int_equal(p, CREF_IEEE);
	assert_int_equal(cref_pattern_parse("IEEE", &p), -1);
	assert_int_equal(cref_pattern_parse(NULL, &p), -1);
	assert_string_equal(cref_pattern_name(CREF_IEEE), "ieee");
}

/* The exact pattern is inccl_check's of old, unchanged. */
static void test_exact_pattern_unchanged(void **state)
{
	for (int r = -1; r < 9; r++)
		for (size_t i = 0; i < N; i++) {
			int32_t vi = (int32_t)(((uint32_t)i * 2654435761u + (uint32_t)r * 97u) % 200001u) - 100000;
			int vf8 = (int)(((uint32_t)i * 2246822519u + (uint32_t)r * 31u) % 4097u) - 2048;
			float vf = (float)vf8 / 8.0f;
			assert_int_equal(cref_input(CREF_EXACT, INCCL_INT32, r, 4, i), (uint32_t)vi);
			assert_int_equal(cref_input(CREF_EXACT, INCCL_FLOAT32, r, 4, i), b_of(vf));
		}
}

/* ---- the reference against values computed by hand ----------------------------------- */

static void test_combine_by_hand(void **state)
{
	const enum inccl_dtype F = INCCL_FLOAT32, I = INCCL_INT32;

	/* float32 SUM rounds in single precision at every step */
	/* 1 + 2^-24: a tie, to even */
	assert_int_equal(cref_combine(F, INCCL_SUM, 0x3f800000u, 0x33800000u), 0x3f800000u);
	assert_int_equal(cref_combine(F, INCCL_SUM, 0x3f800001u, 0x33800000u), 0x3f800002u);
	assert_int_equal(cref_combine(F, INCCL_SUM, 0x4b800000u, 0x3f800000u), 0x4b800000u); /* 2^24 + 1 */
	assert_int_equal(cref_combine(F, INCCL_SUM, 0x00000000u, 0x80000000u), 0x00000000u); /* +0 + -0 = +0 */
	assert_int_equal(cref_combine(F, INCCL_SUM, 0x80000000u, 0x80000000u), 0x80000000u); /* -0 + -0 = -0 */
	assert_int_equal(cref_combine(F, INCCL_SUM, 0x7f7fffffu, 0x7f7fffffu), 0x7f800000u); /* overflow: +Inf */
	assert_true(is_nan(cref_combine(F, INCCL_SUM, 0x7f800000u, 0xff800000u)));            /* Inf + -Inf */
	/* float32 MAX/MIN: -0 < +0, a NaN loses, in either order */
	for (int swap = 0; swap <= 1; swap++) {
		uint32_t pz = 0, nz = 0x80000000u, nan = 0x7fc00001u, three = 0x40400000u;
#define BOTH(op, a, b) (swap ? cref_combine(F, op, b, a) : cref_combine(F, op, a, b))
#define BOTH_I(op, a, b) (swap ? cref_combine(I, op, b, a) : cref_combine(I, op, a, b))
		assert_int_equal(BOTH(INCCL_MAX, pz, nz), pz);
		assert_int_equal(BOTH(INCCL_MIN, pz, nz), nz);
		assert_int_equal(BOTH(INCCL_MAX, nan, three), three);
		assert_int_equal(BOTH(INCCL_MIN, nan, nz), nz);
		assert_true(is_nan(BOTH(INCCL_MAX, nan, 0xffc00000u)));
		assert_int_equal(BOTH(INCCL_MAX, 0x7f800000u, 0x7f7fffffu), 0x7f800000u);
		assert_int_equal(BOTH(INCCL_MIN, 0xff800000u, 0xff7fffffu), 0xff800000u);
		assert_int_equal(BOTH(INCCL_MAX, 0xbf800000u, nz), nz);          /* -1 < -0 */
		assert_int_equal(BOTH(INCCL_MIN, 0x00000001u, nz), nz);          /* -0 < smallest subnormal */
		/* int32: wraps, signed comparison */
		assert_int_equal(BOTH_I(INCCL_SUM, 0x7fffffffu, 1), 0x80000000u);
		assert_int_equal(BOTH_I(INCCL_MAX, 0xffffffffu, 0), 0);
		assert_int_equal(BOTH_I(INCCL_MIN, 0x80000000u, 0x7fffffffu), 0x80000000u);
#undef BOTH
#undef BOTH_I
	}
	assert_int_equal(cref_combine(I, INCCL_SUM, 0x80000000u, 0x80000000u), 0);

	/* The exact pattern's element 0, by hand: int32 -100000 + -99903 + -99806 + -99709;
	 * float32 -256 + -252.125 + -248.25 + -244.375 (r * 31 % 4097 - 2048, over 8). */
	cref_tree_flat(&tree, 4);
	assert_int_equal((int32_t)cref_expect(&tree, CREF_EXACT, I, INCCL_SUM, 0), -399418);
	assert_int_equal((int32_t)cref_expect(&tree, CREF_EXACT, I, INCCL_MAX, 0), -99709);
	assert_int_equal((int32_t)cref_expect(&tree, CREF_EXACT, I, INCCL_MIN, 0), -100000);
	assert_true(f_of(cref_expect(&tree, CREF_EXACT, F, INCCL_SUM, 0)) == -1000.75f);
	assert_true(f_of(cref_expect(&tree, CREF_EXACT, F, INCCL_MAX, 0)) == -244.375f);
}

/* The ieee pattern's SUM in the tree's order, written out: ((a+b)+(c+d)) for
 * the 1-2-4 tree, (((a+b)+c)+d) for a chain; and the order really matters. */
static void test_ieee_tree_order(void **state)
{
	static struct cref_tree chain, lab;
	size_t differ = 0, normal = 0, rounded = 0;
	char err[256];

	assert_int_equal(cref_tree_parse("((0,1),(2,3))", &lab, err, sizeof(err)), 0);
	assert_int_equal(cref_tree_parse("(((0,1),2),3)", &chain, err, sizeof(err)), 0);
	for (size_t i = 0; i < N; i++) {
		float v[4];
		for (int r = 0; r < 4; r++)
			v[r] = f_of(cref_input(CREF_IEEE, INCCL_FLOAT32, r, 4, i));
		float pairs = (v[0] + v[1]) + (v[2] + v[3]), left = ((v[0] + v[1]) + v[2]) + v[3];
		uint32_t want_lab = cref_expect(&lab, CREF_IEEE, INCCL_FLOAT32, INCCL_SUM, i);
		uint32_t want_chain = cref_expect(&chain, CREF_IEEE, INCCL_FLOAT32, INCCL_SUM, i);
		assert_true(cref_same(INCCL_FLOAT32, want_lab, b_of(pairs)));
		assert_true(cref_same(INCCL_FLOAT32, want_chain, b_of(left)));
		differ += !cref_same(INCCL_FLOAT32, want_lab, want_chain);
		if (isfinite(pairs) && isnormal(v[0]) && isnormal(v[1]) && isnormal(v[2]) && isnormal(v[3])) {
			normal++;
			rounded += (double)pairs != ((double)v[0] + v[1]) + ((double)v[2] + v[3]);
		}
	}
	print_message("ieee float32 SUM of 4 ranks: %zu of %d elements differ between ((a+b)+c)+d and "
		      "(a+b)+(c+d); %zu of %zu normal ones round\n", differ, N, rounded, normal);
	assert_true(differ > N / 4);    /* the order of addition matters: many elements */
	assert_true(rounded > normal * 3 / 4);  /* the rest happen to be exact */
	assert_true(normal > N / 2);
}

/* The ieee pattern holds the special values it promises, and their results are the documented ones. */
static void test_ieee_specials(void **state)
{
	enum { NAN_SUM, INF_MINUS_INF, NEG_ZERO, POS_ZERO_OF_MIX, SUBNORMAL, OVERFLOW_INF, OVERFLOW_NINF, NAN_MAX_NUM,
	       I_WRAP, I_MAX_LIMIT, I_MIN_LIMIT, KINDS };
	size_t seen[KINDS] = { 0 };

	parse_ok("((0,1),(2,3))");
	for (size_t i = 0; i < 4 * 64; i++) {
		uint32_t f[4];
		int32_t v[4];
		int nans = 0, pinf = 0, ninf = 0, pz = 0, nz = 0, fmax = 0, nfmax = 0;
		int64_t exact = 0;
		for (int r = 0; r < 4; r++) {
			f[r] = cref_input(CREF_IEEE, INCCL_FLOAT32, r, 4, i);
			v[r] = (int32_t)cref_input(CREF_IEEE, INCCL_INT32, r, 4, i);
			nans += is_nan(f[r]);
			pinf += f[r] == 0x7f800000u;
			ninf += f[r] == 0xff800000u;
			pz += f[r] == 0;
			nz += f[r] == 0x80000000u;
			fmax += f[r] == 0x7f7fffffu;
			nfmax += f[r] == 0xff7fffffu;
			exact += v[r];
		}
		uint32_t sum = cref_expect(&tree, CREF_IEEE, INCCL_FLOAT32, INCCL_SUM, i);
		uint32_t max = cref_expect(&tree, CREF_IEEE, INCCL_FLOAT32, INCCL_MAX, i);
		uint32_t min = cref_expect(&tree, CREF_IEEE, INCCL_FLOAT32, INCCL_MIN, i);
		if (nans) {
			seen[NAN_SUM]++;
			assert_true(is_nan(sum));
			if (nans < 4) { /* a NaN loses to a number */
				seen[NAN_MAX_NUM]++;
				assert_false(is_nan(max));
				assert_false(is_nan(min));
			}
		}
		if (pinf && ninf) {
			seen[INF_MINUS_INF]++;
			assert_true(is_nan(sum));
			assert_int_equal(max, 0x7f800000u);
			assert_int_equal(min, 0xff800000u);
		}
		if (nz == 4) {
			seen[NEG_ZERO]++;
			assert_int_equal(sum, 0x80000000u);
		}
		if (nz && pz && nz + pz == 4) {
			seen[POS_ZERO_OF_MIX]++;
			assert_int_equal(sum, 0);
			assert_int_equal(max, 0);
			assert_int_equal(min, 0x80000000u);
		}
		if (!nans && !pinf && !ninf && (sum & 0x7f800000u) == 0 && (sum & 0x007fffffu))
			seen[SUBNORMAL]++;
		if (fmax == 2) {
			seen[OVERFLOW_INF]++;
			assert_int_equal(sum, 0x7f800000u);
			assert_int_equal(max, 0x7f7fffffu);
		}
		if (nfmax == 2) {
			seen[OVERFLOW_NINF]++;
			assert_int_equal(sum, 0xff800000u);
			assert_int_equal(min, 0xff7fffffu);
		}
		uint32_t isum = cref_expect(&tree, CREF_IEEE, INCCL_INT32, INCCL_SUM, i);
		assert_int_equal(isum, (uint32_t)(uint64_t)exact); /* modulo 2^32 */
		seen[I_WRAP] += exact > INT32_MAX || exact < INT32_MIN;
		seen[I_MAX_LIMIT] += cref_expect(&tree, CREF_IEEE, INCCL_INT32, INCCL_MAX, i) == 0x7fffffffu;
		seen[I_MIN_LIMIT] += cref_expect(&tree, CREF_IEEE, INCCL_INT32, INCCL_MIN, i) == 0x80000000u;
	}
	for (int k = 0; k < KINDS; k++)
		if (seen[k] < 4) /* each at least once per period of 64 */
			fail_msg("ieee pattern: case %d seen %zu times in 256 elements", k, seen[k]);
	/* element 0 is an ordinary value on every rank (a count of 1 must catch a lost contribution) */
	for (int r = 0; r < 4; r++) {
		float x = f_of(cref_input(CREF_IEEE, INCCL_FLOAT32, r, 4, 0));
		assert_true(isnormal(x));
	}
}

/* ---- comparison ------------------------------------------------------------------------- */

static void test_compare(void **state)
{
	const enum inccl_dtype F = INCCL_FLOAT32, I = INCCL_INT32;
	uint64_t want[4] = { 0x3f800000u, 0x00000000u, 0x40490fdbu, 0x7fc00000u };
	uint32_t got[4];
	uint8_t buf[4 * 4 + 3], *p = buf + 3; /* any alignment */
	size_t first = 99;

	assert_true(cref_same(F, 0x3f800000u, 0x3f800000u));
	assert_false(cref_same(F, 0x3f800001u, 0x3f800000u)); /* 1 ulp */
	assert_false(cref_same(F, 0x3f7fffffu, 0x3f800000u)); /* 1 ulp below */
	assert_false(cref_same(F, 0x80000000u, 0x00000000u)); /* -0 is not +0 */
	assert_false(cref_same(F, 0x00000000u, 0x80000000u));
	assert_false(cref_same(F, 0x7fc00000u, 0x3f800000u)); /* NaN for a number */
	assert_false(cref_same(F, 0x3f800000u, 0x7fc00000u)); /* a number for NaN */
	assert_false(cref_same(F, 0x7f800000u, 0x7fc00000u)); /* Inf is not NaN */
	assert_true(cref_same(F, 0xffc00123u, 0x7fc00000u));  /* any NaN for a NaN */
	assert_true(cref_same(F, 0x7f800001u, 0x7fc00000u));  /* signaling too */
	assert_false(cref_same(I, 0x7fc00001u, 0x7fc00000u)); /* int32 has no NaN */
	assert_false(cref_same(I, 0x80000000u, 0));

	for (int i = 0; i < 4; i++)
		got[i] = (uint32_t)want[i];
	memcpy(p, got, sizeof(got));
	assert_int_equal(cref_count_wrong(F, p, want, 4, &first), 0);
	assert_int_equal(first, 99);
	got[1] = 0x80000000u; /* -0 for +0 */
	got[2] ^= 1;          /* 1 ulp */
	got[3] = 0xffc00001u; /* another NaN: fine */
	memcpy(p, got, sizeof(got));
	assert_int_equal(cref_count_wrong(F, p, want, 4, &first), 2);
	assert_int_equal(first, 1);
	assert_int_equal(cref_count_wrong(I, p, want, 4, &first), 3);
	/* 2- and 8-byte elements: NaN of the type's own layout */
	assert_true(cref_same(INCCL_FLOAT16, 0xfe01u, 0x7e00u));
	assert_false(cref_same(INCCL_FLOAT16, 0x7c00u, 0x7e00u));      /* Inf is not NaN */
	assert_false(cref_same(INCCL_FLOAT16, 0x8000u, 0x0000u));      /* -0 is not +0 */
	assert_true(cref_same(INCCL_BFLOAT16, 0xff81u, 0x7fc0u));
	assert_false(cref_same(INCCL_BFLOAT16, 0x7f80u, 0x7fc0u));
	assert_true(cref_same(INCCL_FLOAT64, 0xfff0000000000001ull, 0x7ff8000000000000ull));
	assert_false(cref_same(INCCL_FLOAT64, 0x7ff0000000000000ull, 0x7ff8000000000000ull));
	assert_false(cref_same(INCCL_UINT64, 0x7ff8000000000001ull, 0x7ff8000000000000ull)); /* no NaN */
	uint64_t w16[3] = { 0x3c00u, 0x7e00u, 0x0001u }, w64[2] = { 0x3ff0000000000000ull, 5 };
	uint8_t b16[6 + 1], b64[16 + 3];
	uint16_t g16[3] = { 0x3c00u, 0xfe00u, 0x0002u };
	memcpy(b16 + 1, g16, 6);
	assert_int_equal(cref_count_wrong(INCCL_FLOAT16, b16 + 1, w16, 3, &first), 1);
	assert_int_equal(first, 2);
	memcpy(b64 + 3, w64, 16);
	assert_int_equal(cref_count_wrong(INCCL_INT64, b64 + 3, w64, 2, &first), 0);
	b64[3 + 15] ^= 0x80; /* the top byte of element 1 */
	assert_int_equal(cref_count_wrong(INCCL_INT64, b64 + 3, w64, 2, &first), 1);
	assert_int_equal(first, 1);
}

/* ---- the switches, simulated with switch/agg.c --------------------------------------------- */

/* Every rank's input in wire format, and a buffer per switch; 2 bytes past alignment as in a frame. */
#define MAXR 8
static uint8_t rank_raw[MAXR][N * 8 + PAYLOAD_OFF];
static uint8_t node_raw[2 * MAXR][N * 8 + PAYLOAD_OFF];

/** Rank @r's input (@p, @dtype, @nranks ranks) encoded as libinccl's to_wire() does: big-endian. */
static void encode_rank(int r, enum cref_pattern p, enum inccl_dtype dtype, int nranks)
{
	uint8_t *w = rank_raw[r] + PAYLOAD_OFF;
	size_t width = cref_dtype_size(dtype);

	for (size_t i = 0; i < N; i++) {
		uint64_t v = cref_input(p, dtype, r, nranks, i);
		for (size_t b = 0; b < width; b++)
			w[width * i + b] = (uint8_t)(v >> (8 * (width - 1 - b)));
	}
}

/** A switch's children in arrival order: in the listed order, or for @perm the @perm-th permutation. */
static int arrival_order(const struct cref_tree *t, int k, unsigned perm, int order[3])
{
	int n = 0, c;

	for (c = t->node[k].child; c >= 0 && n < 3; c = t->node[c].next)
		order[n++] = c;
	assert_int_equal(c, -1); /* the simulation handles fan-in <= 3 */
	if (n == 2 && perm % 2) {
		int x = order[0];
		order[0] = order[1];
		order[1] = x;
	} else if (n == 3) {
		static const int perms[6][3] = {
			{ 0, 1, 2 }, { 0, 2, 1 }, { 1, 0, 2 }, { 1, 2, 0 }, { 2, 0, 1 }, { 2, 1, 0 },
		};
		int o[3] = { order[0], order[1], order[2] };
		for (int j = 0; j < 3; j++)
			order[j] = o[perms[perm % 6][j]];
	}
	return n;
}

/** How many arrival orders node @k's switch has: 1, 2 or 6 (fan-in 1, 2, 3). */
static unsigned orders_of(const struct cref_tree *t, int k)
{
	int n = 0;

	for (int c = t->node[k].child; c >= 0; c = t->node[c].next)
		n++;
	return n == 2 ? 2 : n == 3 ? 6 : 1;
}

/* Simulate switches that fold a float SUM in arrival order too, as they did before (test_fanin3_order()). */
static int sum_in_arrival_order;

/**
 * What node @k sends up: a rank's wire input, or a switch's aggregate: the
 * first child to arrive is copied, later ones are combined into it with
 * inc_combine(), as switch/engine.c does; a float SUM in child order (the
 * listed order) whenever the children arrive. @sel picks each switch's
 * arrival order (mixed radix over the switches in node order). Return the
 * buffer.
 */
static const uint8_t *simulate(const struct cref_tree *t, int k, unsigned long long sel, enum inc_op op,
			       enum inc_dtype dtype)
{
	int order[3], n, sw = 0;
	unsigned long long s = sel;

	if (t->node[k].rank >= 0)
		return rank_raw[t->node[k].rank] + PAYLOAD_OFF;
	for (int j = 0; j < k; j++) /* this switch's digit of @sel */
		if (t->node[j].rank < 0) {
			s /= orders_of(t, j);
			sw++;
		}
	assert_true(sw < 2 * MAXR);
	n = arrival_order(t, k, op == INC_OP_SUM && is_float_t((enum inccl_dtype)dtype) && !sum_in_arrival_order ? 0 :
				      (unsigned)(s % orders_of(t, k)), order);
	uint8_t *acc = node_raw[sw] + PAYLOAD_OFF;
	for (int j = 0; j < n; j++) {
		const uint8_t *in = simulate(t, order[j], sel, op, dtype);
		if (j == 0)
			memcpy(acc, in, N * inc_dtype_size(dtype));
		else
			inc_combine(acc, in, N, op, dtype);
	}
	return acc;
}

/** Every arrival order of every switch of @t: the number of choices of simulate()'s @sel. */
static unsigned long long all_orders(const struct cref_tree *t)
{
	unsigned long long n = 1;

	for (int k = 0; k < t->nnodes; k++)
		if (t->node[k].rank < 0)
			n *= orders_of(t, k);
	return n;
}

/** Elements where the simulated switches of @t (order @sel) differ from the reference; @tell: print the first. */
static size_t switch_vs_reference(const struct cref_tree *t, enum cref_pattern p, enum inccl_dtype dtype,
				  enum inccl_op op, unsigned long long sel, int tell)
{
	const uint8_t *out = simulate(t, 0, sel, (enum inc_op)op, (enum inc_dtype)dtype);
	size_t wrong = 0;

	size_t w = cref_dtype_size(dtype);

	for (size_t i = 0; i < N; i++) {
		uint64_t got = 0, want = cref_expect(t, p, dtype, op, i);
		for (size_t b = 0; b < w; b++)
			got = got << 8 | out[w * i + b];
		if (!cref_same(dtype, got, want) && !wrong++ && tell)
			print_message("element %zu: switches 0x%llx, reference 0x%llx\n", i, (unsigned long long)got,
				      (unsigned long long)want);
	}
	return wrong;
}

/** Every operator of @dtype on tree @t (@spec), pattern @p, in every arrival order: no element may differ. */
static void expect_all_orders_match(const struct cref_tree *t, const char *spec, enum cref_pattern p,
				    enum inccl_dtype dtype)
{
	static const char *const opname[] = { "", "sum", "max", "min" };

	for (int r = 0; r < t->nranks; r++)
		encode_rank(r, p, dtype, t->nranks);
	for (int op = INCCL_SUM; op <= INCCL_MIN; op++)
		for (unsigned long long sel = 0; sel < all_orders(t); sel++) {
			size_t wrong = switch_vs_reference(t, p, dtype, (enum inccl_op)op, sel, 1);
			if (wrong)
				fail_msg("tree %s, %s %s %s, arrival orders %llu: %zu elements differ", spec,
					 cref_pattern_name(p), cref_dtype_name(dtype), opname[op], sel,
					 wrong);
		}
}

/*
 * The key test: for trees of fan-in <= 3 (the simulation's limit; the real
 * engine at fan-in 4 and 16: test_order.c, test_tree.c), the switches'
 * arithmetic in every combination of child arrival orders gives the
 * reference bit for bit (NaN as NaN), for both patterns, every dtype and
 * every operator.
 */
static void test_switches_match_reference(void **state)
{
	static const char *const specs[] = {
		"(0,1)", "((0,1),(2,3))", "(((0,1),2),3)", "((0,(1,2)),((3,4),5))", "((0,1),((2,3),(4,5)),(6,7))",
		"(0)", "((1,0),(3,2))", "(0,1,2)", "((0,1,2),(3,4,5))", "((0,1),2,(3,(4,5,6)))",
	};
	static struct cref_tree t;
	char err[256];

	for (size_t s = 0; s < sizeof(specs) / sizeof(specs[0]); s++) {
		assert_int_equal(cref_tree_parse(specs[s], &t, err, sizeof(err)), 0);
		assert_true(t.nranks <= MAXR);
		for (int p = CREF_EXACT; p <= CREF_IEEE; p++)
			for (int dtype = 0; dtype < CREF_NDTYPES; dtype++)
				expect_all_orders_match(&t, specs[s], (enum cref_pattern)p, (enum inccl_dtype)dtype);
	}
}

/*
 * Why the switches fold a float SUM in child order: folded in arrival order
 * (as they did before, when inccl_check refused -p ieee at fan-in 3), a
 * float32 SUM at fan-in 3 depends on the arrival order (some orders differ
 * from the reference), while MAX/MIN, int32 and the exact pattern match in
 * all 6 orders. (The ieee pattern can tell the orders apart.)
 */
static void test_fanin3_order(void **state)
{
	static struct cref_tree t;
	char err[256];
	size_t orders_differ = 0;

	sum_in_arrival_order = 1;
	assert_int_equal(cref_tree_parse("(0,1,2)", &t, err, sizeof(err)), 0);
	for (int p = CREF_EXACT; p <= CREF_IEEE; p++)
		for (int dtype = 0; dtype < CREF_NDTYPES; dtype++) {
			for (int r = 0; r < 3; r++)
				encode_rank(r, (enum cref_pattern)p, (enum inccl_dtype)dtype, 3);
			for (int op = INCCL_SUM; op <= INCCL_MIN; op++)
				for (unsigned long long sel = 0; sel < 6; sel++) {
					size_t wrong = switch_vs_reference(&t, (enum cref_pattern)p,
									   (enum inccl_dtype)dtype, (enum inccl_op)op, sel, 0);
					if (p == CREF_IEEE && is_float_t((enum inccl_dtype)dtype) && op == INCCL_SUM)
						orders_differ += wrong > 0;
					else
						assert_int_equal(wrong, 0);
				}
		}
	sum_in_arrival_order = 0;
	assert_true(orders_differ >= 4 * 4); /* per float dtype: only the listed order (and its mirror) agree */
}

/* decode() - the value of bits @h of float dtype @t (not a NaN), field by field. */
static double decode(enum inccl_dtype t, uint64_t h)
{
	int mbits = t == INCCL_FLOAT16 ? 10 : t == INCCL_BFLOAT16 ? 7 : t == INCCL_FLOAT32 ? 23 : 52;
	int ebits = t == INCCL_FLOAT16 ? 5 : t == INCCL_FLOAT64 ? 11 : 8, bias = (1 << (ebits - 1)) - 1;
	int e = (int)(h >> mbits & ((1u << ebits) - 1));
	uint64_t m = h & ((1ull << mbits) - 1);
	double v = e == 0 ? ldexp((double)m, 1 - bias - mbits) : ldexp((double)(m | 1ull << mbits), e - bias - mbits);

	return h >> (mbits + ebits) & 1 ? -v : v;
}

/* The dtype names, sizes and lists of -d. */
static void test_dtypes(void **state)
{
	enum inccl_dtype l[CREF_NDTYPES];
	static const char *const names[] = { "int32", "float32", "uint32", "int64", "uint64", "float16", "bfloat16", "float64" };
	static const size_t sizes[] = { 4, 4, 4, 8, 8, 2, 2, 8 };

	for (int t = 0; t < CREF_NDTYPES; t++) {
		assert_string_equal(cref_dtype_name((enum inccl_dtype)t), names[t]);
		assert_int_equal(cref_dtype_size((enum inccl_dtype)t), sizes[t]);
	}
	assert_string_equal(cref_dtype_name((enum inccl_dtype)8), "?");
	assert_int_equal(cref_dtype_size((enum inccl_dtype)8), 0);
	assert_int_equal(cref_dtype_list("all", l, CREF_NDTYPES), 8);
	assert_int_equal(l[7], INCCL_FLOAT64);
	assert_int_equal(cref_dtype_list("float16,int64", l, CREF_NDTYPES), 2);
	assert_int_equal(l[0], INCCL_FLOAT16);
	assert_int_equal(l[1], INCCL_INT64);
	assert_int_equal(cref_dtype_list("float16,float16", l, CREF_NDTYPES), -1);
	assert_int_equal(cref_dtype_list("float128", l, CREF_NDTYPES), -1);
	assert_int_equal(cref_dtype_list("", l, CREF_NDTYPES), -1);
	assert_int_equal(cref_dtype_list("int32,", l, CREF_NDTYPES), 1);
	assert_int_equal(cref_dtype_list("int32,uint32", l, 1), -1); /* no room */
	assert_int_equal(cref_dtype_list(NULL, l, CREF_NDTYPES), -1);
}

/* The new dtypes' arithmetic by hand: wraps, unsigned order, float16/bfloat16 rounding to the type. */
static void test_combine_by_hand_every_dtype(void **state)
{
	assert_int_equal(cref_combine(INCCL_UINT32, INCCL_SUM, 0xffffffffu, 2), 1);
	assert_int_equal(cref_combine(INCCL_UINT32, INCCL_MAX, 0x80000000u, 1), 0x80000000u); /* unsigned */
	assert_int_equal(cref_combine(INCCL_INT32, INCCL_MAX, 0x80000000u, 1), 1);            /* signed */
	assert_int_equal(cref_combine(INCCL_INT64, INCCL_SUM, 0x7fffffffffffffffull, 1), 0x8000000000000000ull);
	assert_int_equal(cref_combine(INCCL_INT64, INCCL_MIN, 0x8000000000000000ull, 0), 0x8000000000000000ull);
	assert_int_equal(cref_combine(INCCL_UINT64, INCCL_MIN, 0x8000000000000000ull, 0), 0);
	assert_int_equal(cref_combine(INCCL_UINT64, INCCL_SUM, ~0ull, ~0ull), ~0ull - 1);
	assert_int_equal(cref_combine(INCCL_INT64, INCCL_SUM, 0xffffffffull, 1), 0x100000000ull); /* carries past 32 */
	/* float16: 1 + 2^-11 ties to 1; (1 + 2^-10) + 2^-11 to 1 + 2^-9; 65504 + 16 to Inf */
	assert_int_equal(cref_combine(INCCL_FLOAT16, INCCL_SUM, 0x3c00u, 0x1000u), 0x3c00u);
	assert_int_equal(cref_combine(INCCL_FLOAT16, INCCL_SUM, 0x3c01u, 0x1000u), 0x3c02u);
	assert_int_equal(cref_combine(INCCL_FLOAT16, INCCL_SUM, 0x7bffu, 0x4c00u), 0x7c00u);
	assert_int_equal(cref_combine(INCCL_FLOAT16, INCCL_SUM, 0x03ffu, 0x0001u), 0x0400u);
	assert_int_equal(cref_combine(INCCL_FLOAT16, INCCL_SUM, 0x8000u, 0x8000u), 0x8000u);
	assert_int_equal(cref_combine(INCCL_FLOAT16, INCCL_MAX, 0x8000u, 0x0000u), 0x0000u);
	assert_int_equal(cref_combine(INCCL_FLOAT16, INCCL_MIN, 0x7e00u, 0xbc00u), 0xbc00u); /* NaN loses */
	/* bfloat16: 1 + 2^-8 ties to 1; past it, up */
	assert_int_equal(cref_combine(INCCL_BFLOAT16, INCCL_SUM, 0x3f80u, 0x3b80u), 0x3f80u);
	assert_int_equal(cref_combine(INCCL_BFLOAT16, INCCL_SUM, 0x3f80u, 0x3b81u), 0x3f81u);
	assert_int_equal(cref_combine(INCCL_BFLOAT16, INCCL_SUM, 0x7f7fu, 0x7f7fu), 0x7f80u);
	/* float64: 1 + 2^-53 ties to 1 */
	assert_int_equal(cref_combine(INCCL_FLOAT64, INCCL_SUM, 0x3ff0000000000000ull, 0x3ca0000000000000ull),
			 0x3ff0000000000000ull);
	assert_int_equal(cref_combine(INCCL_FLOAT64, INCCL_MIN, 0ull, 0x8000000000000000ull), 0x8000000000000000ull);
}

/*
 * The exact pattern of every dtype: its sums over 16 ranks are exact (equal
 * to the sum in long double arithmetic of the values) in the listed order,
 * so in any order; and the ieee pattern of every dtype holds its cases.
 */
static void test_patterns_every_dtype(void **state)
{
	static struct cref_tree t16;

	parse_ok("((0,1),(2,3))");
	cref_tree_flat(&t16, 16);
	for (int d = 0; d < CREF_NDTYPES; d++) {
		enum inccl_dtype t = (enum inccl_dtype)d;
		size_t w = cref_dtype_size(t);
		uint64_t mask = w == 8 ? ~0ull : (1ull << (8 * w)) - 1;
		int nan_sums = 0, wraps = 0, inf_sums = 0, nzero_sums = 0;
		for (size_t i = 0; i < 256; i++) {
			unsigned __int128 isum = 0;
			for (int r = 0; r < 16; r++) {
				uint64_t v = cref_input(CREF_EXACT, t, r, 16, i);
				assert_int_equal(v & ~mask, 0);
				isum += v;
			}
			uint64_t sum = cref_expect(&t16, CREF_EXACT, t, INCCL_SUM, i);
			if (!is_float_t(t)) {
				assert_int_equal(sum, (uint64_t)isum & mask);
			} else {
				/* every partial sum exact: the result is the sum in double of the values */
				double exact_sum = 0;
				for (int r = 0; r < 16; r++)
					exact_sum += decode(t, cref_input(CREF_EXACT, t, r, 16, i));
				if (decode(t, sum) != exact_sum)
					fail_msg("%s exact: element %zu sums to %g, not %g", cref_dtype_name(t), i,
						 decode(t, sum), exact_sum);
			}
			/* the ieee pattern over 4 ranks */
			uint64_t is = 0;
			unsigned __int128 exact = 0;
			for (int r = 0; r < 4; r++)
				exact += cref_input(CREF_IEEE, t, r, 4, i);
			is = cref_expect(&tree, CREF_IEEE, t, INCCL_SUM, i);
			if (!is_float_t(t)) {
				assert_int_equal(is, (uint64_t)exact & mask);
				wraps += (exact >> (8 * w)) != 0;
			} else {
				int ebits = t == INCCL_FLOAT16 ? 5 : t == INCCL_FLOAT64 ? 11 : 8, mbits = 8 * (int)w - 1 - ebits;
				uint64_t inf = ((1ull << ebits) - 1) << mbits, sign = 1ull << (8 * w - 1);
				nan_sums += (is & ~sign) > inf;
				inf_sums += (is & ~sign) == inf;
				nzero_sums += is == sign;
			}
		}
		if (is_float_t(t)) {
			if (nan_sums < 4 * 3 || inf_sums < 4 * 2 || nzero_sums < 4)
				fail_msg("%s ieee: %d NaN, %d Inf, %d -0 sums in 256 elements", cref_dtype_name(t), nan_sums,
					 inf_sums, nzero_sums);
		} else if (wraps < 8) {
			fail_msg("%s ieee: %d sums wrap in 256 elements", cref_dtype_name(t), wraps);
		}
	}
}

/* ---- barrier timing ----------------------------------------------------------------------- */

static void test_barrier_rule(void **state)
{
	assert_int_equal(cref_barrier_late_rank(0, 4), 0);
	assert_int_equal(cref_barrier_late_rank(5, 4), 1);
	assert_int_equal(cref_barrier_late_rank(7, 1), 0);
	assert_true(cref_barrier_left_early(2.0, 1000));
	assert_true(cref_barrier_left_early(499.9, 1000));
	assert_false(cref_barrier_left_early(500.0, 1000));
	assert_false(cref_barrier_left_early(1003.0, 1000));
	assert_false(cref_barrier_left_early(0.0, 0)); /* no delay: nothing to wait for */

	double t0 = cref_now_ms();
	cref_sleep_ms(30);
	double slept = cref_now_ms() - t0;
	assert_true(slept >= 30.0);
	assert_true(slept < 1000.0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_good),
		cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_parse_random),
		cmocka_unit_test(test_pattern_parse),
		cmocka_unit_test(test_exact_pattern_unchanged),
		cmocka_unit_test(test_combine_by_hand),
		cmocka_unit_test(test_ieee_tree_order),
		cmocka_unit_test(test_ieee_specials),
		cmocka_unit_test(test_compare),
		cmocka_unit_test(test_switches_match_reference),
		cmocka_unit_test(test_fanin3_order),
		cmocka_unit_test(test_barrier_rule),
		cmocka_unit_test(test_dtypes),
		cmocka_unit_test(test_combine_by_hand_every_dtype),
		cmocka_unit_test(test_patterns_every_dtype),
	};
	return cmocka_run_group_tests_name("check_ref", tests, NULL, NULL);
}
