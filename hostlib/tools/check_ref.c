/*
 * check_ref.c — host-side reference of INC collectives (see check_ref.h):
 * the tree spec parser, the exact and ieee input patterns, the expected
 * result in the switches' order and arithmetic, the comparison, and the
 * timing rule of the barrier check. Unit tested by tests/unit/test_check_ref.c,
 * which also runs the switches' own inc_combine() against it.
 */
#include "check_ref.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* The reference adds in float32: every operation must round to float, as the
 * switch's does (x86-64's SSE arithmetic; not x87's 80-bit registers). */
#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "check_ref.c needs float arithmetic evaluated in float (FLT_EVAL_METHOD 0)"
#endif

/* ---- tree spec ----------------------------------------------------------- */

/** Parser state: the spec, the next character, the tree being built, the error. */
struct parser {
	const char *s;
	size_t len;
	size_t pos;                   /* index of the next character */
	struct cref_tree *t;
	int seen[CREF_MAX_NODES];     /* column where each rank was first seen, 0: not yet */
	char *err;
	size_t errlen;
};

static int perr(struct parser *ps, size_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/** Write "column C: reason" into the parser's error. Return -1. */
static int perr(struct parser *ps, size_t pos, const char *fmt, ...)
{
	char why[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(ps->err, ps->errlen, "column %zu: %s", pos + 1, why);
	return -1;
}

/** The character at @pos for a message: "'x'", "byte 0x07" or "the end". Return @buf. */
static const char *shown(const struct parser *ps, size_t pos, char buf[16])
{
	unsigned char c = pos < ps->len ? (unsigned char)ps->s[pos] : 0;

	if (pos >= ps->len)
		snprintf(buf, 16, "the end");
	else if (c >= 0x20 && c < 0x7f)
		snprintf(buf, 16, "'%c'", c);
	else
		snprintf(buf, 16, "byte 0x%02x", c);
	return buf;
}

/** Skip blanks (space, tab). */
static void skip_blanks(struct parser *ps)
{
	while (ps->pos < ps->len && (ps->s[ps->pos] == ' ' || ps->s[ps->pos] == '\t'))
		ps->pos++;
}

/** A new node of the tree (rank -1 for a switch) starting at @pos. Return its index, or -1 (error set). */
static int new_node(struct parser *ps, int rank, size_t pos)
{
	struct cref_tree *t = ps->t;

	if (t->nnodes >= CREF_MAX_NODES) /* cannot happen: each node takes a character */
		return perr(ps, pos, "more than %d nodes", CREF_MAX_NODES);
	t->node[t->nnodes] = (struct cref_node){ .rank = rank, .child = -1, .next = -1, .col = (int)pos + 1 };
	return t->nnodes++;
}

/** A rank number at the current position (a digit). Return its node, or -1. */
static int parse_rank(struct parser *ps)
{
	size_t start = ps->pos;
	long v = 0;

	while (ps->pos < ps->len && ps->s[ps->pos] >= '0' && ps->s[ps->pos] <= '9') {
		if (v <= CREF_MAX_RANKS) /* stop growing past the limit: no overflow on long input */
			v = v * 10 + (ps->s[ps->pos] - '0');
		ps->pos++;
	}
	if (ps->pos - start > 1 && ps->s[start] == '0')
		return perr(ps, start, "rank '%.*s' has a leading zero", (int)(ps->pos - start), ps->s + start);
	if (v >= CREF_MAX_RANKS) /* shows at most 12 digits */
		return perr(ps, start, "rank '%.*s' is too large (at most %d)",
			    (int)(ps->pos - start > 12 ? 12 : ps->pos - start), ps->s + start, CREF_MAX_RANKS - 1);
	if (ps->seen[v])
		return perr(ps, start, "rank %ld appears twice (first at column %d)", v, ps->seen[v]);
	ps->seen[v] = (int)start + 1;
	return new_node(ps, (int)v, start);
}

/** A switch at the current position ('('), nested @depth deep (the top is 1). Return its node, or -1. */
static int parse_switch(struct parser *ps, int depth)
{
	size_t start = ps->pos;
	char c[16];
	int me, last = -1, fanin = 0;

	if (depth > CREF_MAX_DEPTH)
		return perr(ps, start, "switches nested more than %d deep", CREF_MAX_DEPTH);
	if ((me = new_node(ps, -1, start)) < 0)
		return -1;
	ps->pos++; /* '(' */
	for (;;) {
		int child;

		skip_blanks(ps);
		if (ps->pos < ps->len && ps->s[ps->pos] == '(')
			child = parse_switch(ps, depth + 1);
		else if (ps->pos < ps->len && ps->s[ps->pos] >= '0' && ps->s[ps->pos] <= '9')
			child = parse_rank(ps);
		else if (ps->pos < ps->len && ps->s[ps->pos] == ')' && fanin == 0)
			return perr(ps, ps->pos, "empty switch '()': a switch needs at least one child");
		else
			return perr(ps, ps->pos, "expected a rank or '(', found %s", shown(ps, ps->pos, c));
		if (child < 0)
			return -1;
		if (last < 0)
			ps->t->node[me].child = child;
		else
			ps->t->node[last].next = child;
		last = child;
		fanin++;
		skip_blanks(ps);
		if (ps->pos < ps->len && ps->s[ps->pos] == ',') {
			ps->pos++;
			continue;
		}
		if (ps->pos < ps->len && ps->s[ps->pos] == ')') {
			ps->pos++;
			break;
		}
		return perr(ps, ps->pos, "expected ',' or ')', found %s", shown(ps, ps->pos, c));
	}
	if (fanin > ps->t->max_fanin) {
		ps->t->max_fanin = fanin;
		ps->t->max_fanin_col = (int)start + 1;
	}
	return me;
}

int cref_tree_parse(const char *spec, struct cref_tree *t, char *err, size_t errlen)
{
	struct parser ps;
	char c[16];
	int missing = 0;

	memset(&ps, 0, sizeof(ps));
	ps.s = spec;
	ps.t = t;
	ps.err = err;
	ps.errlen = errlen;
	memset(t, 0, sizeof(*t));
	snprintf(err, errlen, "%s", "");
	if (!spec || !*spec) {
		snprintf(err, errlen, "empty tree spec (e.g. '(0,1)' or '((0,1),(2,3))')");
		return -1;
	}
	ps.len = strnlen(spec, CREF_MAX_SPEC + 1);
	if (ps.len > CREF_MAX_SPEC) {
		snprintf(err, errlen, "tree spec longer than %d characters", CREF_MAX_SPEC);
		return -1;
	}
	skip_blanks(&ps);
	if (ps.pos >= ps.len || spec[ps.pos] != '(')
		return perr(&ps, ps.pos, "a tree starts with '(' (its top switch), found %s", shown(&ps, ps.pos, c));
	if (parse_switch(&ps, 1) < 0)
		return -1;
	skip_blanks(&ps);
	if (ps.pos < ps.len)
		return perr(&ps, ps.pos, "unexpected %s after the tree's last ')'", shown(&ps, ps.pos, c));
	for (int k = 0; k < t->nnodes; k++)
		t->nranks += t->node[k].rank >= 0;
	while (ps.seen[missing])
		missing++;
	for (int k = 0; k < t->nnodes; k++)
		if (t->node[k].rank >= t->nranks)
			return perr(&ps, (size_t)t->node[k].col - 1,
				    "rank %d, but a tree of %d ranks holds 0..%d, each once (rank %d is missing)",
				    t->node[k].rank, t->nranks, t->nranks - 1, missing);
	/* n leaves, all < n, none twice: every rank of 0..n-1 is there */
	return 0;
}

int cref_tree_flat(struct cref_tree *t, int nranks)
{
	if (nranks < 1 || nranks > CREF_MAX_RANKS)
		return -1;
	memset(t, 0, sizeof(*t));
	t->node[0] = (struct cref_node){ .rank = -1, .child = 1, .next = -1 };
	for (int r = 0; r < nranks; r++)
		t->node[r + 1] = (struct cref_node){ .rank = r, .child = -1, .next = r + 1 < nranks ? r + 2 : -1 };
	t->nnodes = nranks + 1;
	t->nranks = nranks;
	t->max_fanin = nranks;
	return 0;
}

/** A bounded string being written. */
struct out {
	char *buf;
	size_t len, used;
};

/** Append @s to @o, truncating. */
static void put(struct out *o, const char *s)
{
	for (; *s && o->used + 1 < o->len; s++)
		o->buf[o->used++] = *s;
	if (o->len)
		o->buf[o->used] = 0;
}

/** Write node @k of @t (depth at most CREF_MAX_DEPTH + 1: bounded recursion). */
static void format_node(const struct cref_tree *t, int k, struct out *o)
{
	char num[16];

	if (t->node[k].rank >= 0) {
		snprintf(num, sizeof(num), "%d", t->node[k].rank);
		put(o, num);
		return;
	}
	put(o, "(");
	for (int c = t->node[k].child; c >= 0; c = t->node[c].next) {
		format_node(t, c, o);
		if (t->node[c].next >= 0)
			put(o, ",");
	}
	put(o, ")");
}

const char *cref_tree_format(const struct cref_tree *t, char *buf, size_t len)
{
	struct out o = { buf, len, 0 };

	if (len)
		buf[0] = 0;
	if (t->nnodes > 0)
		format_node(t, 0, &o);
	return buf;
}

/* ---- patterns ---------------------------------------------------------------- */

int cref_pattern_parse(const char *s, enum cref_pattern *p)
{
	if (s && !strcmp(s, "exact"))
		*p = CREF_EXACT;
	else if (s && !strcmp(s, "ieee"))
		*p = CREF_IEEE;
	else
		return -1;
	return 0;
}

const char *cref_pattern_name(enum cref_pattern p)
{
	return p == CREF_EXACT ? "exact" : p == CREF_IEEE ? "ieee" : "?";
}

/* ---- dtypes ------------------------------------------------------------------------ */

/* The layout of a float dtype: bytes, mantissa bits (after the point), exponent bits. */
struct ffmt {
	int w, mbits, ebits;
};

static const struct ffmt F16 = { 2, 10, 5 }, BF16 = { 2, 7, 8 }, F32 = { 4, 23, 8 }, F64 = { 8, 52, 11 };

/** The layout of float dtype @t, or NULL for an integer dtype. */
static const struct ffmt *ffmt_of(enum inccl_dtype t)
{
	switch (t) {
	case INCCL_FLOAT16: return &F16;
	case INCCL_BFLOAT16: return &BF16;
	case INCCL_FLOAT32: return &F32;
	case INCCL_FLOAT64: return &F64;
	default: return NULL;
	}
}

size_t cref_dtype_size(enum inccl_dtype t)
{
	switch (t) {
	case INCCL_FLOAT16:
	case INCCL_BFLOAT16: return 2;
	case INCCL_INT32:
	case INCCL_UINT32:
	case INCCL_FLOAT32: return 4;
	case INCCL_INT64:
	case INCCL_UINT64:
	case INCCL_FLOAT64: return 8;
	}
	return 0;
}

static const char *const dtype_names[CREF_NDTYPES] = { "int32",  "float32", "uint32",   "int64",
						       "uint64", "float16", "bfloat16", "float64" };

const char *cref_dtype_name(enum inccl_dtype t)
{
	return (unsigned)t < CREF_NDTYPES ? dtype_names[t] : "?";
}

int cref_dtype_list(const char *s, enum inccl_dtype *out, int max)
{
	char buf[256], *save = NULL;
	int n = 0;

	if (!s || strlen(s) >= sizeof(buf))
		return -1;
	if (!strcmp(s, "all")) {
		for (n = 0; n < CREF_NDTYPES && n < max; n++)
			out[n] = (enum inccl_dtype)n;
		return n;
	}
	snprintf(buf, sizeof(buf), "%s", s);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int t = 0;
		while (t < CREF_NDTYPES && strcmp(tok, dtype_names[t]))
			t++;
		if (t == CREF_NDTYPES || n >= max)
			return -1;
		for (int k = 0; k < n; k++)
			if (out[k] == (enum inccl_dtype)t)
				return -1; /* twice */
		out[n++] = (enum inccl_dtype)t;
	}
	return n ? n : -1;
}

/** The mask of a @w-byte element. */
static uint64_t wmask(int w)
{
	return w == 8 ? ~0ull : (1ull << (8 * w)) - 1;
}

/* The pieces of a float layout's bits. */
static uint64_t f_sign(const struct ffmt *f) { return 1ull << (8 * f->w - 1); }
static uint64_t f_inf(const struct ffmt *f) { return ((1ull << f->ebits) - 1) << f->mbits; }
static uint64_t f_mant(const struct ffmt *f) { return (1ull << f->mbits) - 1; }
static int f_bias(const struct ffmt *f) { return (1 << (f->ebits - 1)) - 1; }

/** Whether bits @h are a NaN of layout @f (exponent all ones, mantissa not zero). */
static int f_is_nan(const struct ffmt *f, uint64_t h)
{
	return (h & ~f_sign(f) & wmask(f->w)) > f_inf(f);
}

/** The value of bits @h of layout @f (not a NaN), decoded field by field: exact in a double. */
static double f_value(const struct ffmt *f, uint64_t h)
{
	uint64_t m = h & f_mant(f);
	int e = (int)((h >> f->mbits) & ((1u << f->ebits) - 1));
	double v;

	if (f == &F64 || f == &F32) { /* the machine's own types */
		if (f == &F64) {
			memcpy(&v, &h, 8);
			return v;
		}
		float x;
		uint32_t h32 = (uint32_t)h;
		memcpy(&x, &h32, 4);
		return x;
	}
	if (e == (1 << f->ebits) - 1)
		v = INFINITY;
	else if (e == 0)
		v = ldexp((double)m, 1 - f_bias(f) - f->mbits);
	else
		v = ldexp((double)(m | 1ull << f->mbits), e - f_bias(f) - f->mbits);
	return h & f_sign(f) ? -v : v;
}

/**
 * @x (a double, not a NaN) rounded once to layout @f (float16 or bfloat16),
 * to nearest-even, as bits: scaled to the quantum of its binade (or of the
 * subnormals), rint() (the default rounding mode: to nearest-even), scaled
 * back; at 2^(emax+1) or beyond +-Inf. Zeros keep their sign.
 */
static uint64_t f_round(const struct ffmt *f, double x)
{
	uint64_t sign = signbit(x) ? f_sign(f) : 0;
	int emax = f_bias(f), emin = 1 - emax, e;
	double a = fabs(x);

	if (a != 0 && !isinf(a)) {
		frexp(a, &e);
		int lead = e - 1 < emin ? emin : e - 1;
		double q = ldexp(1.0, lead - f->mbits);
		a = rint(a / q) * q;
	}
	if (isinf(a) || a >= ldexp(1.0, emax + 1))
		return sign | f_inf(f);
	if (a < ldexp(1.0, emin)) /* subnormal or zero: the quantum 2^(emin - mbits) */
		return sign | (uint64_t)ldexp(a, f->mbits - emin);
	frexp(a, &e);
	return sign | (uint64_t)(e - 1 + emax) << f->mbits | ((uint64_t)ldexp(a, f->mbits + 1 - e) & f_mant(f));
}

/** Whether integer dtype @t is signed (int32, int64). */
static int is_signed(enum inccl_dtype t)
{
	return t == INCCL_INT32 || t == INCCL_INT64;
}

/* ---- pattern inputs ------------------------------------------------------------------ */

/* The exact pattern, as inccl_check has always had it: int32 in
 * [-100000, 100000], float32 multiples of 1/8 in [-256, 256]: every partial
 * sum of up to 2^16 ranks is exact in float32, in any order. Integer sums
 * are exact modulo 2^width in any order anyway. */
static int32_t exact_i32(int r, size_t i)
{
	return (int32_t)(((uint32_t)i * 2654435761u + (uint32_t)r * 97u) % 200001u) - 100000;
}

static float exact_f32(int r, size_t i)
{
	return (float)((int)(((uint32_t)i * 2246822519u + (uint32_t)r * 31u) % 4097u) - 2048) / 8.0f;
}

/** The bits of float @f. */
static uint32_t bits_of(float f)
{
	uint32_t h;

	memcpy(&h, &f, sizeof(h));
	return h;
}

/** The bits of double @d. */
static uint64_t bits64_of(double d)
{
	uint64_t h;

	memcpy(&h, &d, sizeof(h));
	return h;
}

/*
 * exact_input() - element @i of @rank's exact input of @t: the old int32 and
 * float32 values; uint32 the int32 ones plus 100000; 64-bit integers those
 * times 4294967311 (a prime above 2^32: the high bytes take part); float64
 * the float32 values; float16 multiples of 1/4 in [-8, 8] and bfloat16
 * integers in [-4, 4], whose partial sums over up to 64 ranks are exact
 * (within 2^11 quarters, 2^8 units).
 */
static uint64_t exact_input(enum inccl_dtype t, int rank, size_t i)
{
	int32_t v = exact_i32(rank, i);

	switch (t) {
	case INCCL_INT32: return (uint32_t)v;
	case INCCL_UINT32: return (uint32_t)(v + 100000);
	case INCCL_INT64: return (uint64_t)((int64_t)v * 4294967311ll);
	case INCCL_UINT64: return (uint64_t)(v + 100000) * 4294967311ull;
	case INCCL_FLOAT32: return bits_of(exact_f32(rank, i));
	case INCCL_FLOAT64: return bits64_of((double)exact_f32(rank, i));
	case INCCL_FLOAT16:
		return f_round(&F16, (double)((int)(((uint32_t)i * 2246822519u + (uint32_t)rank * 31u) % 65u) - 32) / 4.0);
	case INCCL_BFLOAT16:
		return f_round(&BF16, (double)((int)(((uint32_t)i * 2246822519u + (uint32_t)rank * 31u) % 9u) - 4));
	}
	return 0;
}

/** A 32-bit mixer (a bijection with good avalanche: lowbias32). */
static uint32_t mix32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return x;
}

/** A hash of element @i (all 64 bits of it) and @salt, the same on every rank. */
static uint32_t elem_hash(size_t i, uint32_t salt)
{
	uint64_t i64 = (uint64_t)i;

	return mix32(mix32((uint32_t)i64 ^ salt * 0x9e3779b9u) ^ (uint32_t)(i64 >> 32));
}

/** A hash of (@rank, @i, @salt). */
static uint32_t rank_hash(int rank, size_t i, uint32_t salt)
{
	return mix32(elem_hash(i, salt) ^ mix32((uint32_t)rank + 0x632be5abu));
}

/* Salts: independent streams of the hash for each use. */
enum { SALT_VALUE = 1, SALT_MANTISSA = 2, SALT_WHO = 3, SALT_SPECIAL = 4, SALT_HIGH = 5 };

/** 64 hashed bits of (@rank, @i, @salt): two 32-bit streams. */
static uint64_t rank_hash64(int rank, size_t i, uint32_t salt)
{
	return (uint64_t)rank_hash(rank, i, salt + SALT_HIGH * 16) << 32 | rank_hash(rank, i, salt);
}

/*
 * The ieee pattern places its special cases at fixed positions: element i
 * with i % IEEE_PERIOD = 1 + case. Element 0, and most others, are "normal"
 * values; every count >= IEEE_PERIOD meets every case.
 */
#define IEEE_PERIOD 64

/* float special cases (every float dtype); "s" and "s+1" are two ranks chosen per element (see role()) */
enum f_case {
	F_NAN_ONE,      /* rank s: a NaN; others normal. SUM NaN; MAX/MIN: the others' */
	F_NAN_ALL,      /* every rank a NaN (quiet or signaling, any sign and payload) */
	F_PINF_ONE,     /* rank s: +Inf */
	F_NINF_ONE,     /* rank s: -Inf */
	F_INF_BOTH,     /* rank s: +Inf, rank s+1: -Inf: SUM NaN */
	F_ZERO_MIX,     /* -0 and +0 alternating from rank s: SUM +0, MAX +0, MIN -0 */
	F_NZERO_ALL,    /* every rank -0: -0 + -0 = -0 */
	F_CANCEL,       /* rank s: x, rank s+1: -x, others -0: x + -x = +0 */
	F_SUBNORMAL,    /* every rank a subnormal of either sign */
	F_TO_SUBNORMAL, /* rank s: the smallest normal, others negative subnormals: results fall below it */
	F_FMAX_PAIR,    /* ranks s, s+1: the largest finite value: SUM overflows to +Inf */
	F_NFMAX_PAIR,   /* ranks s, s+1: its negative: SUM overflows to -Inf */
	F_FMAX_CANCEL,  /* rank s: the largest, rank s+1: its negative, others normal */
	F_NAN_INF,      /* rank s: a NaN, rank s+1: +Inf */
	F_CASES
};

/* integer special cases (every integer dtype; for unsigned ones the limits are 0 and 2^w - 1) */
enum i_case {
	I_NEAR_MAX, /* every rank just below the maximum: SUM wraps */
	I_NEAR_MIN, /* every rank just above the minimum: SUM wraps (signed) */
	I_EXTREMES, /* rank s: the maximum, rank s+1: the minimum: MAX/MIN at the limits */
	I_ALL_MIN,  /* every rank the minimum */
	I_ALL_MAX,  /* every rank the maximum */
	I_MINUS_ONE, /* rank s: -1 (all ones), others 0 */
	I_CASES
};

/* Normal values lie in [2^-2, 2^2): 4 binades. Any two with different
 * exponents (or both odd mantissas) round when added; values this close
 * in magnitude make the order of additions matter most often (about 1 in 3
 * elements of 4 ranks differ between ((a+b)+c)+d and (a+b)+(c+d); with 16
 * binades, 1 in 4, as small addends vanish in either order). */
#define NORMAL_EXP_LOW (-2)
#define NORMAL_EXP_SPAN 4

/**
 * The rank s that holds the special value of element @i: chosen per element
 * so every rank (and every subtree) gets to hold each case. With one rank,
 * rank s+1 is rank s: only role 1 exists.
 */
static int chosen(int nranks, size_t i)
{
	return (int)(elem_hash(i, SALT_WHO) % (uint32_t)(nranks < 1 ? 1 : nranks));
}

/** The role of @rank at element @i (see chosen()): 1 for rank s, 2 for rank s+1 (mod @nranks), 0 for the others. */
static int role(int rank, int nranks, size_t i)
{
	int n = nranks < 1 ? 1 : nranks, s = chosen(nranks, i);

	return rank == s ? 1 : rank == (s + 1) % n ? 2 : 0;
}

/** A normal value of layout @f of @rank at @i: random sign, one of 4 binades, a full mantissa (lowest bit set). */
static uint64_t f_normal(const struct ffmt *f, int rank, size_t i)
{
	uint32_t h = rank_hash(rank, i, SALT_VALUE);
	uint64_t m = rank_hash64(rank, i, SALT_MANTISSA);

	return (h >> 31 ? f_sign(f) : 0) | (uint64_t)(f_bias(f) + NORMAL_EXP_LOW + (int)((h >> 23) % NORMAL_EXP_SPAN))
						   << f->mbits |
	       (m & f_mant(f)) | 1;
}

/** A NaN of layout @f of @rank at @i: any sign, quiet or signaling, any payload. */
static uint64_t f_nan(const struct ffmt *f, int rank, size_t i)
{
	uint64_t h = rank_hash64(rank, i, SALT_SPECIAL), mant = h & f_mant(f);

	return (h >> 63 ? f_sign(f) : 0) | f_inf(f) | (mant ? mant : 1ull << (f->mbits - 1));
}

/** A subnormal (not zero) of layout @f of @rank at @i with the sign of @sign (or random if @sign is 1). */
static uint64_t f_subnormal(const struct ffmt *f, int rank, size_t i, int sign)
{
	uint64_t h = rank_hash64(rank, i, SALT_SPECIAL);

	return (sign == 1 ? (h >> 63 ? f_sign(f) : 0) : sign < 0 ? f_sign(f) : 0) | (h & f_mant(f)) | 1;
}

/** Element @i of @rank's ieee input of float layout @f. */
static uint64_t ieee_float(const struct ffmt *f, int rank, int nranks, size_t i)
{
	size_t q = i % IEEE_PERIOD;
	int who = role(rank, nranks, i);
	uint64_t S = f_sign(f), INF = f_inf(f), FMAX = f_inf(f) - 1, FMIN = 1ull << f->mbits;

	if (q < 1 || q > F_CASES)
		return f_normal(f, rank, i);
	switch ((enum f_case)(q - 1)) {
	case F_NAN_ONE: return who == 1 ? f_nan(f, rank, i) : f_normal(f, rank, i);
	case F_NAN_ALL: return f_nan(f, rank, i);
	case F_PINF_ONE: return who == 1 ? INF : f_normal(f, rank, i);
	case F_NINF_ONE: return who == 1 ? S | INF : f_normal(f, rank, i);
	case F_INF_BOTH: return who == 1 ? INF : who == 2 ? S | INF : f_normal(f, rank, i);
	case F_ZERO_MIX: /* rank s -0, s+1 +0, s+2 -0, ... */
		return ((unsigned)rank - (unsigned)chosen(nranks, i)) & 1 ? 0 : S;
	case F_NZERO_ALL: return S;
	case F_CANCEL: {
		uint64_t x = f_normal(f, chosen(nranks, i), i); /* the same x on both ranks */
		return who == 1 ? x : who == 2 ? x ^ S : S;
	}
	case F_SUBNORMAL: return f_subnormal(f, rank, i, 1);
	case F_TO_SUBNORMAL: return who == 1 ? FMIN : f_subnormal(f, rank, i, -1);
	case F_FMAX_PAIR: return who ? FMAX : f_normal(f, rank, i);
	case F_NFMAX_PAIR: return who ? S | FMAX : f_normal(f, rank, i);
	case F_FMAX_CANCEL: return who == 1 ? FMAX : who == 2 ? S | FMAX : f_normal(f, rank, i);
	case F_NAN_INF: return who == 1 ? f_nan(f, rank, i) : who == 2 ? INF : f_normal(f, rank, i);
	case F_CASES: break;
	}
	return f_normal(f, rank, i);
}

/** Element @i of @rank's ieee input of integer dtype @t: the type's whole range (sums wrap), and the cases above. */
static uint64_t ieee_int(enum inccl_dtype t, int rank, int nranks, size_t i)
{
	size_t q = i % IEEE_PERIOD;
	int who = role(rank, nranks, i), w = (int)cref_dtype_size(t);
	uint64_t mask = wmask(w), h = rank_hash64(rank, i, SALT_VALUE) & mask, near = h % 1024; /* near a limit */
	uint64_t max = is_signed(t) ? mask >> 1 : mask, min = is_signed(t) ? (mask >> 1) + 1 : 0;

	if (t == INCCL_INT32) /* int32's values of old */
		h = rank_hash(rank, i, SALT_VALUE), near = h % 1024;
	if (q < 1 || q > I_CASES)
		return h;
	switch ((enum i_case)(q - 1)) {
	case I_NEAR_MAX: return max - near;
	case I_NEAR_MIN: return min + near;
	case I_EXTREMES: return who == 1 ? max : who == 2 ? min : h;
	case I_ALL_MIN: return min;
	case I_ALL_MAX: return max;
	case I_MINUS_ONE: return who == 1 ? mask : 0;
	case I_CASES: break;
	}
	return h;
}

uint64_t cref_input(enum cref_pattern p, enum inccl_dtype dtype, int rank, int nranks, size_t i)
{
	const struct ffmt *f = ffmt_of(dtype);

	if (p == CREF_IEEE)
		return f ? ieee_float(f, rank, nranks, i) : ieee_int(dtype, rank, nranks, i);
	return exact_input(dtype, rank, i);
}

/** put_elem(), get_elem() - a @w-byte element (host order) at @p, any alignment. */
static void put_elem(uint8_t *p, uint64_t v, size_t w)
{
	uint16_t h = (uint16_t)v;
	uint32_t s = (uint32_t)v;

	if (w == 2)
		memcpy(p, &h, 2);
	else if (w == 4)
		memcpy(p, &s, 4);
	else
		memcpy(p, &v, 8);
}

static uint64_t get_elem(const uint8_t *p, size_t w)
{
	uint16_t h;
	uint32_t s;
	uint64_t v;

	if (w == 2)
		return memcpy(&h, p, 2), h;
	if (w == 4)
		return memcpy(&s, p, 4), s;
	return memcpy(&v, p, 8), v;
}

void cref_fill(enum cref_pattern p, enum inccl_dtype dtype, int rank, int nranks, void *buf, size_t count)
{
	uint8_t *b = buf;
	size_t w = cref_dtype_size(dtype);

	for (size_t i = 0; i < count; i++)
		put_elem(b + w * i, cref_input(p, dtype, rank, nranks, i), w);
}

/* ---- arithmetic, expectation, comparison ----------------------------------------- */

/** A key of non-NaN bits of layout @f that orders as the values do, with -0 < +0 (both zeros distinct). */
static uint64_t order_key(const struct ffmt *f, uint64_t h)
{
	return h & f_sign(f) ? ~h & wmask(f->w) : h | f_sign(f);
}

uint64_t cref_combine(enum inccl_dtype dtype, enum inccl_op op, uint64_t acc, uint64_t in)
{
	const struct ffmt *f = ffmt_of(dtype);
	int w = (int)cref_dtype_size(dtype);

	if (!f) {
		uint64_t mask = wmask(w), flip = is_signed(dtype) ? (mask >> 1) + 1 : 0; /* signed: order by offset */
		switch (op) {
		case INCCL_SUM: return (acc + in) & mask; /* modulo 2^w: two's complement wrap */
		case INCCL_MAX: return (in ^ flip) > (acc ^ flip) ? in : acc;
		case INCCL_MIN: return (in ^ flip) < (acc ^ flip) ? in : acc;
		}
		return acc;
	}
	if (op == INCCL_SUM) {
		if (f == &F64)
			return bits64_of(f_value(f, acc) + f_value(f, in)); /* one double addition */
		if (f_is_nan(f, acc) || f_is_nan(f, in))
			return f_inf(f) | 1ull << (f->mbits - 1); /* a NaN (any will do) */
		float sum = (float)f_value(f, acc) + (float)f_value(f, in); /* one float32 addition, to nearest */
		if (f == &F32)
			return bits_of(sum);
		if (isnan(sum))
			return f_inf(f) | 1ull << (f->mbits - 1);
		return f_round(f, sum); /* float16/bfloat16: rounded again, to the type */
	}
	if (f_is_nan(f, acc))
		return in; /* a NaN loses to a number; two NaNs: a NaN */
	if (f_is_nan(f, in))
		return acc;
	if (op == INCCL_MAX)
		return order_key(f, in) > order_key(f, acc) ? in : acc;
	return order_key(f, in) < order_key(f, acc) ? in : acc;
}

/** The value node @k of @t computes at element @i (recursion bounded by CREF_MAX_DEPTH). */
static uint64_t eval(const struct cref_tree *t, int k, enum cref_pattern p, enum inccl_dtype dtype, enum inccl_op op,
		     size_t i)
{
	const struct cref_node *nd = &t->node[k];
	uint64_t acc;
	int c = nd->child;

	if (nd->rank >= 0)
		return cref_input(p, dtype, nd->rank, t->nranks, i);
	acc = eval(t, c, p, dtype, op, i); /* the first child's value is copied ... */
	for (c = t->node[c].next; c >= 0; c = t->node[c].next)
		acc = cref_combine(dtype, op, acc, eval(t, c, p, dtype, op, i)); /* ... the others folded in */
	return acc;
}

uint64_t cref_expect(const struct cref_tree *t, enum cref_pattern p, enum inccl_dtype dtype, enum inccl_op op,
		     size_t i)
{
	return eval(t, 0, p, dtype, op, i);
}

int cref_same(enum inccl_dtype dtype, uint64_t got, uint64_t want)
{
	const struct ffmt *f = ffmt_of(dtype);

	if (f && f_is_nan(f, got) && f_is_nan(f, want))
		return 1; /* a NaN's sign and payload are unspecified */
	return got == want;
}

size_t cref_count_wrong(enum inccl_dtype dtype, const void *buf, const uint64_t *want, size_t count, size_t *first)
{
	const uint8_t *b = buf;
	size_t wrong = 0, w = cref_dtype_size(dtype);

	for (size_t i = 0; i < count; i++)
		if (!cref_same(dtype, get_elem(b + w * i, w), want[i]) && !wrong++ && first)
			*first = i;
	return wrong;
}

/* ---- barrier timing ------------------------------------------------------------------ */

int cref_barrier_late_rank(int k, int nranks)
{
	return nranks > 0 ? (int)((unsigned)k % (unsigned)nranks) : 0;
}

int cref_barrier_left_early(double waited_ms, int delay_ms)
{
	return waited_ms < delay_ms / 2.0;
}

double cref_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void cref_sleep_ms(int ms)
{
	struct timespec until;

	if (ms <= 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
		; /* a signal: sleep on until the same deadline */
}
