/*
 * inccl_check — run every collective of libinccl on one rank and verify it.
 *
 *   inccl_check -r RANK -n NRANKS [-m MASTER] [-C CONTROLLER] [-T TIMEOUT_MS]
 *               [-c COUNT,COUNT,...] [-t TREE] [-p exact|ieee] [-D MS] [-d DTYPES]
 *
 * All ranks run the same sequence: AllReduce and Reduce for each dtype of -d
 * (default int32,float32; "all": the eight) × SUM/MAX/MIN, Broadcast for each
 * dtype, Barrier; for each COUNT, with user buffers at offsets that vary
 * (multiples of the element's size, which libinccl requires). Rank r's input element i is a fixed function of
 * (pattern, r, i, nranks), so every rank computes the expected result of all
 * ranks itself, independently of the switch (check_ref.c), and compares bit
 * for bit (any NaN matches any NaN: a NaN's payload is unspecified).
 *
 * -p exact: float inputs are small multiples of 1/8 (float16: of 1/4,
 *   bfloat16: integers) and integer inputs small, so every sum is exact in
 *   any order (over up to 64 ranks for float16/bfloat16).
 * -p ieee: float inputs with full mantissas, whose sums round so the order
 *   of additions matters, and NaN, +-Inf, +-0, subnormals, overflow to Inf;
 *   integer inputs over the whole range, whose sums wrap. The expectation is
 *   computed in the switches' arithmetic (proto/inc_proto.h) in the order of
 *   the switch tree given with -t: each switch folds its children left to
 *   right as listed, which is the order a switch folds a float SUM in at any
 *   fan-in, whatever the arrival order (proto/inc_proto.h), when -t lists
 *   each switch's children by their lowest rank, as the controller numbers
 *   them.
 * -t TREE: the aggregation tree as nested parentheses of ranks, e.g. "(0,1)"
 *   (one switch) or "((0,1),(2,3))" (the 1-2-4 lab), every rank 0..n-1 once.
 *   Without -t: one switch over all ranks. The default pattern is ieee with
 *   -t, exact without.
 *
 * Barrier: for each COUNT, one barrier (checked for its return code), then
 * rank L = k % NRANKS (k: the COUNT's index) sleeps D ms (-D, default 1000;
 * 0: no check) before entering a second one; every other rank must have
 * waited in it at least D/2, else "FAIL barrier: left after X ms, before
 * rank L entered (it was D ms late)".
 *
 * Ranks not due a result must find their buffer untouched. Prints one line
 * per collective and "rank R: N passed, M failed"; exit 0 when all passed,
 * 1 when one failed (or the bootstrap did), 2 for bad arguments, 3 when the
 * bootstrap found no room (INCCL_EBUSY: the switches are full; retry later).
 *
 * -H FILE: after the checks, keep the communicator (and its switch slots)
 * until FILE exists, at most HOLD_MAX_S; a test that runs several jobs at once
 * uses it to know they all hold their communicators while it asks for one
 * more. "holding the communicator until FILE exists" is printed first.
 *
 * Bootstrap: inccl_group_create() + inccl_comm_init() (rank 0 at MASTER,
 * the controller at CONTROLLER; default: the lab node's /etc/inclab/node.conf).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_ref.h"
#include "inccl.h"

/* The most elements a count may ask for: 2^30, 8 GiB per buffer of 8-byte
 * elements (three buffers of it must fit a host: use the wide dtypes with
 * smaller counts), far from where count * 8 + 32 wraps. */
#define MAX_COUNT (1ull << 30)

#define HOLD_MAX_S 600 /* -H: the longest a communicator is kept waiting for its file */
#define MAX_DELAY_MS 30000 /* -D: well under libinccl's default 60 s timeout, which the waiting ranks run into */

static const char *opn(int op) { return op == INCCL_SUM ? "sum" : op == INCCL_MAX ? "max" : "min"; }

static int pass, failed;

/** Count and print the outcome of one collective of @count elements of @w bytes: its return code @rc, else
 * @wrong elements (first at @first). */
static void report(const char *what, size_t count, size_t w, int rc, inccl_comm_t *c, size_t wrong, size_t first,
		   double secs)
{
	if (rc == INCCL_OK && wrong == 0) {
		pass++;
		printf("ok   %-28s count=%-8zu %8.1f ms %7.2f MB/s\n", what, count, secs * 1e3, (double)(count * w) / secs / 1e6);
	} else if (rc != INCCL_OK) {
		failed++;
		printf("FAIL %-28s count=%-8zu error %d: %s\n", what, count, rc, inccl_errmsg(c));
	} else {
		failed++;
		printf("FAIL %-28s count=%-8zu %zu wrong elements, first at %zu\n", what, count, wrong, first);
	}
	fflush(stdout);
}

/*
 * The barrier check of round @k: line the ranks up at one barrier, then the
 * late rank L = k % nranks sleeps @delay_ms and enters a second barrier;
 * every other rank times the second barrier and must have waited for L.
 * After the first barrier the ranks leave within the switches' delivery
 * skew (milliseconds; tens under TCG), so a correct barrier holds them about
 * @delay_ms; half of it is required, the other half is headroom for that
 * skew (check_ref.h). A barrier that releases ranks early (as soon as one
 * enters) lets them go within a round trip, and if it also released the
 * first barrier early, the ranks only drift further apart: still caught.
 */
static void barrier_check(inccl_comm_t *c, int rank, int nranks, int k, int delay_ms)
{
	int late = cref_barrier_late_rank(k, nranks), rc;
	double t0 = cref_now_ms();

	rc = inccl_barrier(c);
	report("barrier", 0, 0, rc, c, 0, 0, (cref_now_ms() - t0) / 1e3);
	if (delay_ms == 0)
		return;
	if (rank == late)
		cref_sleep_ms(delay_ms);
	t0 = cref_now_ms();
	rc = inccl_barrier(c);
	double waited = cref_now_ms() - t0;
	if (rc != INCCL_OK) {
		failed++;
		printf("FAIL barrier: error %d with rank %d %d ms late: %s\n", rc, late, delay_ms, inccl_errmsg(c));
	} else if (rank == late) {
		pass++;
		printf("ok   barrier: this rank (%d) entered %d ms late, left after %.1f ms\n", rank, delay_ms, waited);
	} else if (cref_barrier_left_early(waited, delay_ms)) {
		failed++;
		printf("FAIL barrier: left after %.1f ms, before rank %d entered (it was %d ms late)\n", waited, late,
		       delay_ms);
	} else {
		pass++;
		printf("ok   barrier: waited %.1f ms for rank %d (it was %d ms late)\n", waited, late, delay_ms);
	}
	fflush(stdout);
}

/** Parse a whole decimal int of [@min, @max] into *@out. Return 0 or -1. */
/* count_bad() - does the -c list hold anything but counts 1..MAX_COUNT separated by
 * single commas, or more than main()'s copy of it holds (255 characters)? */
static int count_bad(const char *list)
{
	const char *p = list;

	if (strlen(list) > 255)
		return 1;
	do {
		char *end;
		if (*p < '0' || *p > '9')
			return 1;
		unsigned long long n = strtoull(p, &end, 10);
		if (n == 0 || n > MAX_COUNT || (*end && *end != ','))
			return 1;
		p = *end ? end + 1 : end;
	} while (*p);
	return p[-1] == ',';
}

static int parse_int(const char *s, long min, long max, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (end == s || *end || v < min || v > max)
		return -1;
	*out = (int)v;
	return 0;
}

int main(int argc, char **argv)
{
	int rank = -1, nranks = 0, opt, delay_ms = CREF_BARRIER_DELAY_MS, have_pattern = 0;
	const char *counts = "1,255,256,257,1031,65539", *spec = NULL, *hold = NULL;
	enum inccl_dtype dtypes[CREF_NDTYPES] = { INCCL_INT32, INCCL_FLOAT32 };
	int ndtypes = 2;
	enum cref_pattern pattern = CREF_EXACT;
	static struct cref_tree tree; /* ~16 KiB */
	struct inccl_group_opts go = { 0 };
	inccl_group_t *g;
	inccl_comm_t *c;
	char err[512], treebuf[CREF_MAX_SPEC + 1];

	while ((opt = getopt(argc, argv, "r:n:m:C:T:c:t:p:D:H:d:")) != -1) {
		switch (opt) {
		case 'r': rank = atoi(optarg); break;
		case 'n': nranks = atoi(optarg); break;
		case 'm': go.master = optarg; break;
		case 'C': go.controller = optarg; break;
		case 'T': go.timeout_ms = atoi(optarg); break;
		case 'c': counts = optarg; break;
		case 'H': hold = optarg; break;
		case 'd':
			if ((ndtypes = cref_dtype_list(optarg, dtypes, CREF_NDTYPES)) < 0) {
				fprintf(stderr, "inccl_check: -d: bad dtype list '%s' (comma-separated, each once, of int32, "
						"uint32, int64, uint64, float16, bfloat16, float32, float64; or all)\n", optarg);
				goto usage;
			}
			break;
		case 't': spec = optarg; break;
		case 'p':
			if (cref_pattern_parse(optarg, &pattern)) {
				fprintf(stderr, "inccl_check: -p: unknown pattern '%s' (exact or ieee)\n", optarg);
				goto usage;
			}
			have_pattern = 1;
			break;
		case 'D':
			if (parse_int(optarg, 0, MAX_DELAY_MS, &delay_ms)) {
				fprintf(stderr, "inccl_check: -D: bad delay '%s' (0..%d ms)\n", optarg, MAX_DELAY_MS);
				goto usage;
			}
			break;
		default: goto usage;
		}
	}
	if (optind < argc || rank < 0 || nranks < 1 || rank >= nranks)
		goto usage;
	if (spec) {
		if (cref_tree_parse(spec, &tree, err, sizeof(err))) {
			fprintf(stderr, "inccl_check: -t '%s': %s\n", spec, err);
			return 2;
		}
		if (tree.nranks != nranks) {
			fprintf(stderr, "inccl_check: -t '%s' has %d ranks, -n says %d\n", spec, tree.nranks, nranks);
			return 2;
		}
		if (!have_pattern)
			pattern = CREF_IEEE;
	} else if (cref_tree_flat(&tree, nranks)) {
		fprintf(stderr, "inccl_check: -n %d: at most %d ranks\n", nranks, CREF_MAX_RANKS);
		return 2;
	}
	if (count_bad(counts)) {
		fprintf(stderr, "inccl_check: -c: bad count in '%s' (numbers 1..%llu separated by commas)\n", counts,
			(unsigned long long)MAX_COUNT);
		return 2;
	}
	double tb = cref_now_ms();
	int rc = inccl_group_create(&go, rank, nranks, &g);
	if (rc == INCCL_OK && (rc = inccl_comm_init(g, NULL, &c)) != INCCL_OK)
		inccl_group_destroy(g);
	if (rc) {
		fprintf(stderr, "inccl_check: rank %d: bootstrap failed (error %d): %s\n", rank, rc, inccl_last_error());
		printf("rank %d: bootstrap failed%s: %s\n", rank, rc == INCCL_EBUSY ? " (EBUSY)" : "", inccl_last_error());
		return rc == INCCL_EBUSY ? 3 : 1;
	}
	printf("rank %d of %d: group %d, communicator ready in %.1f s\n", rank, nranks, inccl_group_id(g),
	       (cref_now_ms() - tb) / 1e3);
	printf("rank %d: inputs %s, expected in the order of tree %s%s, barrier delay %d ms\n", rank,
	       cref_pattern_name(pattern), cref_tree_format(&tree, treebuf, sizeof(treebuf)),
	       spec ? "" : " (no -t: one switch)", delay_ms);
	fflush(stdout); /* a script waiting for "communicator ready" sees it now */
	char list[256];
	snprintf(list, sizeof(list), "%s", counts);
	int k = 0;
	for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ","), k++) {
		char *end;
		unsigned long long n = strtoull(tok, &end, 10);
		if (*end || !*tok || *tok == '-' || n == 0 || n > MAX_COUNT) {
			fprintf(stderr, "inccl_check: bad count '%s' (1..%llu elements)\n", tok, (unsigned long long)MAX_COUNT);
			return 2;
		}
		size_t count = (size_t)n;
		uint8_t *sraw = malloc(count * 8 + 32), *rraw = malloc(count * 8 + 32);
		uint64_t *want = malloc(count * 8);
		char what[64];
		if (!sraw || !rraw || !want) {
			fprintf(stderr, "inccl_check: no memory for %zu elements\n", count);
			return 1;
		}
		for (int d = 0; d < ndtypes; d++) {
			enum inccl_dtype dtype = dtypes[d];
			const char *dn = cref_dtype_name(dtype);
			/* 0..3 elements past malloc()'s alignment, the two buffers differently */
			size_t w = cref_dtype_size(dtype), misalign = (size_t)(k % 4) * w;
			uint8_t *send = sraw + misalign, *recv = rraw + (3 * w - misalign);
			for (int op = INCCL_SUM; op <= INCCL_MIN; op++) {
				for (size_t i = 0; i < count; i++)
					want[i] = cref_expect(&tree, pattern, dtype, op, i);
				for (int reduce = 0; reduce <= 1; reduce++) {
					int root = reduce ? (k + op) % nranks : 0;
					cref_fill(pattern, dtype, rank, nranks, send, count);
					memset(recv, 0xa5, count * w);
					double t0 = cref_now_ms();
					rc = reduce ? inccl_reduce(c, send, recv, count, dtype, op, root)
						    : inccl_allreduce(c, send, recv, count, dtype, op);
					double t = (cref_now_ms() - t0) / 1e3;
					size_t wrong = 0, first = 0;
					if (rc == INCCL_OK && (!reduce || rank == root)) {
						wrong = cref_count_wrong(dtype, recv, want, count, &first);
					} else if (rc == INCCL_OK) { /* not due a result: untouched */
						static const uint8_t poison[8] = { 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5 };
						for (size_t i = 0; i < count; i++)
							if (memcmp(recv + w * i, poison, w) && !wrong++)
								first = i;
					}
					snprintf(what, sizeof(what), "%s%s %s %s", reduce ? "reduce" : "allreduce",
						 reduce ? (char[8]){ '@', (char)('0' + root), 0 } : "", dn, opn(op));
					report(what, count, w, rc, c, wrong, first, t);
				}
			}
			int root = k % nranks;
			/* non-roots hold other data: the input of a rank that does not exist */
			cref_fill(pattern, dtype, rank == root ? root : nranks + 7, nranks, send, count);
			double t0 = cref_now_ms();
			rc = inccl_broadcast(c, send, count, dtype, root);
			double t = (cref_now_ms() - t0) / 1e3;
			size_t wrong = 0, first = 0;
			cref_fill(pattern, dtype, root, nranks, want, count); /* as the dtype's elements, packed */
			/* copied, not computed: bit for bit, NaNs too */
			for (size_t i = 0; rc == INCCL_OK && i < count; i++)
				if (memcmp(send + w * i, (uint8_t *)want + w * i, w) && !wrong++)
					first = i;
			snprintf(what, sizeof(what), "broadcast@%d %s", root, dn);
			report(what, count, w, rc, c, wrong, first, t);
		}
		barrier_check(c, rank, nranks, k, delay_ms);
		free(sraw);
		free(rraw);
		free(want);
	}
	/* bad arguments are refused with a message, nothing is sent */
	rc = inccl_reduce(c, NULL, NULL, 1, INCCL_INT32, INCCL_SUM, nranks);
	if (rc == INCCL_EINVAL && strstr(inccl_errmsg(c), "root")) {
		pass++;
		printf("ok   reduce to root %d refused: %s\n", nranks, inccl_errmsg(c));
	} else {
		failed++;
		printf("FAIL reduce to root %d: returned %d\n", nranks, rc);
	}
	/* NULL buffers: EINVAL naming the buffer, on every rank (nothing is sent, so no rank waits) */
	int32_t one = 1;
	for (int i = 0; i < 4; i++) {
		static const char *what[] = { "allreduce, send NULL", "allreduce, receive NULL", "reduce, send NULL",
					      "broadcast, buffer NULL" };
		static const char *words[] = { "send buffer is NULL", "receive buffer is NULL", "send buffer is NULL",
					       "the buffer is NULL" };
		rc = i == 0 ? inccl_allreduce(c, NULL, &one, 1, INCCL_INT32, INCCL_SUM)
		   : i == 1 ? inccl_allreduce(c, &one, NULL, 1, INCCL_INT32, INCCL_SUM)
		   : i == 2 ? inccl_reduce(c, NULL, &one, 1, INCCL_INT32, INCCL_SUM, 0)
			    : inccl_broadcast(c, NULL, 1, INCCL_INT32, 0);
		if (rc == INCCL_EINVAL && strstr(inccl_errmsg(c), words[i])) {
			pass++;
			printf("ok   %s refused: %s\n", what[i], inccl_errmsg(c));
		} else {
			failed++;
			printf("FAIL %s: returned %d (%s), not EINVAL\n", what[i], rc, inccl_errmsg(c));
		}
	}
	/* buffers not aligned to the element's size: EINVAL naming the buffer, nothing sent */
	static int64_t pair[2];
	rc = inccl_allreduce(c, (char *)pair + 4, pair, 1, INCCL_FLOAT64, INCCL_SUM);
	if (rc == INCCL_EINVAL && strstr(inccl_errmsg(c), "not aligned")) {
		pass++;
		printf("ok   allreduce float64, send buffer 4 bytes off alignment, refused: %s\n", inccl_errmsg(c));
	} else {
		failed++;
		printf("FAIL allreduce float64, misaligned send buffer: returned %d (%s), not EINVAL\n", rc, inccl_errmsg(c));
	}
	printf("rank %d: %d passed, %d failed\n", rank, pass, failed);
	if (hold) {
		printf("rank %d: holding the communicator until %s exists (at most %d s)\n", rank, hold, HOLD_MAX_S);
		fflush(stdout);
		for (int i = 0; i < HOLD_MAX_S * 10 && access(hold, F_OK) != 0; i++)
			usleep(100000);
	}
	inccl_comm_destroy(c);
	inccl_group_destroy(g);
	return failed ? 1 : 0;
usage:
	fprintf(stderr,
		"usage: inccl_check -r RANK -n NRANKS [-m MASTER[:PORT]] [-C CONTROLLER[:PORT]] [-T TIMEOUT_MS]\n"
		"                   [-c COUNT,...] [-t TREE] [-p exact|ieee] [-D MS] [-H FILE] [-d DTYPES]\n"
		"  -t TREE   the switches' aggregation tree, e.g. '(0,1)' or '((0,1),(2,3))': nested\n"
		"            parentheses are switches, numbers ranks, 0..NRANKS-1 each once (default: one\n"
		"            switch over all ranks)\n"
		"  -p PATT   exact: inputs whose sums are exact in any order; ieee: float sums that\n"
		"            round (expected in the tree's order: children by their lowest rank),\n"
		"            NaN, +-Inf, +-0, subnormals, overflow, integer sums that wrap\n"
		"            (default: ieee with -t, exact without)\n"
		"  -D MS     barrier check: each round one rank enters MS ms late, every other rank\n"
		"            must wait at least MS/2 for it (default %d, 0: no check; at most %d)\n"
		"  -H FILE   after the checks, keep the communicator until FILE exists (at most %d s)\n"
		"  -d LIST   dtypes, comma-separated: int32, uint32, int64, uint64, float16, bfloat16,\n"
		"            float32, float64, or all (default int32,float32)\n",
		CREF_BARRIER_DELAY_MS, MAX_DELAY_MS, HOLD_MAX_S);
	return 2;
}
