/*
 * inccl_check — run every collective of libinccl on one rank and verify it.
 *
 *   inccl_check -r RANK -n NRANKS [-m MASTER] [-C CONTROLLER] [-T TIMEOUT_MS]
 *               [-c COUNT,COUNT,...] [-t TREE] [-p exact|ieee] [-D MS] [-d DTYPES]
 *               [-A inc|ring] [-k COLL,COLL,...] [-W MS]
 *
 * -W MS: a collective gives up after MS ms without progress (libinccl's
 *   timeout_ms, default 60000): a test of ranks that disagree on purpose
 *   sets it low, so a rank that waits for a peer that gave up says so soon.
 *
 * -A: the communicator's algorithm (inc: the switches; ring: the host
 *   baseline, which has no Reduce and adds floats in its own order: exact
 *   inputs only). -k: the collectives to run (allreduce, reduce, broadcast,
 *   barrier, allgather, reducescatter, alltoall, or all; default allreduce,
 *   reduce, broadcast, barrier, without reduce on the ring: the block
 *   collectives cost a round trip per block, and the callers that check
 *   large counts ask for them by name). AllGather, ReduceScatter (each op) and AllToAll run for each
 *   dtype out of place and in place (nccl's conventions); every element of
 *   every rank's result is compared with the expectation computed here:
 *   AllGather's block b is rank b's input, ReduceScatter's element i is the
 *   tree-ordered op over every rank's input at rank * count + i, AllToAll's
 *   block b is rank b's input at rank * count.
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
#include "perf_opts.h"
#include "inccl.h"

/* The most elements a count may ask for: 2^30, 8 GiB per buffer of 8-byte
 * elements (three buffers of it must fit a host: use the wide dtypes with
 * smaller counts), far from where count * 8 + 32 wraps. */
#define MAX_COUNT (1ull << 30)

#define HOLD_MAX_S 600 /* -H: the longest a communicator is kept waiting for its file */
#define MAX_DELAY_MS 30000 /* -D: well under libinccl's default 60 s timeout, which the waiting ranks run into */
#define MAX_WAIT_MS 600000 /* -W: ten minutes without progress at most (the lab's largest collectives make
                            * progress every second) */

static const char *opn(int op) { return op == INCCL_SUM ? "sum" : op == INCCL_MAX ? "max" : "min"; }

static int pass, failed;

/* The collectives -k chooses from, in the order they run. */
enum { K_ALLREDUCE, K_REDUCE, K_BROADCAST, K_BARRIER, K_ALLGATHER, K_REDUCESCATTER, K_ALLTOALL, K_N };
static const char *const coll_names[K_N] = { "allreduce", "reduce", "broadcast", "barrier",
					     "allgather", "reducescatter", "alltoall" };

/* parse_colls() - the -k list into @on[]. Return 0, or -1 for an unknown name (said on stderr). */
static int parse_colls(const char *list, int on[K_N])
{
	char buf[256], *save = NULL;

	if (strlen(list) >= sizeof(buf))
		return -1;
	snprintf(buf, sizeof(buf), "%s", list);
	memset(on, 0, K_N * sizeof(on[0]));
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int k = 0;
		if (!strcmp(t, "all")) {
			for (k = 0; k < K_N; k++)
				on[k] = 1;
			continue;
		}
		while (k < K_N && strcmp(t, coll_names[k]))
			k++;
		if (k == K_N) {
			fprintf(stderr, "inccl_check: -k: unknown collective '%s' (allreduce, reduce, broadcast, barrier, "
					"allgather, reducescatter, alltoall, all)\n", t);
			return -1;
		}
		on[k] = 1;
	}
	return 0;
}

static void report(const char *what, size_t count, size_t w, int rc, inccl_comm_t *c, size_t wrong, size_t first,
		   double secs);

/* The 0xa5 bytes a buffer holds before a call: what a rank not due a result must still find. */
#define POISON 0xa5

/* diff_elems() - elements of @w bytes of @got that differ from @want in any bit (@n of them); the first in *@first. */
static size_t diff_elems(const uint8_t *got, const uint8_t *want, size_t n, size_t w, size_t *first)
{
	size_t wrong = 0;

	for (size_t i = 0; i < n; i++)
		if (memcmp(got + i * w, want + i * w, w) && !wrong++)
			*first = i;
	return wrong;
}

/*
 * check_blocks() - AllGather, ReduceScatter (every op) and AllToAll of @count
 * elements of @dtype per block on @c, out of place and in place, the
 * buffers 0..3 elements past malloc's alignment (by round @k); each result
 * checked element by element against what this rank computes from every
 * rank's input: AllGather's and AllToAll's copies bit for bit,
 * ReduceScatter's sums in the tree's order (cref_expect()).
 */
static void check_blocks(inccl_comm_t *c, const int on[K_N], const struct cref_tree *tree, enum cref_pattern pattern,
			 enum inccl_dtype dtype, int rank, int nranks, size_t count, int k)
{
	size_t w = cref_dtype_size(dtype), total = count * (size_t)nranks, blk = count * w, first = 0, wrong;
	size_t off = (size_t)(k % 4) * w;
	uint8_t *sraw = malloc(total * w + 4 * w), *rraw = malloc(total * w + 4 * w), *exp = malloc(total * w);
	uint8_t *tmp = malloc(total * w);
	uint64_t *want = malloc(count * sizeof(*want));
	uint8_t *send = sraw + off, *recv = rraw + 3 * w - off;
	const char *dn = cref_dtype_name(dtype);
	char what[64];
	int rc;

	if (!sraw || !rraw || !exp || !tmp || !want) {
		failed++;
		printf("FAIL allgather/reducescatter/alltoall: no memory for %zu elements\n", total);
		goto out;
	}
	for (int inplace = 0; inplace <= 1; inplace++) {
		const char *ip = inplace ? " in-place" : "";
		if (on[K_ALLGATHER]) { /* block b of the result: rank b's input 0..count-1 */
			uint8_t *mine = recv + (size_t)rank * blk;
			memset(recv, POISON, total * w);
			cref_fill(pattern, dtype, rank, nranks, inplace ? mine : send, count);
			for (int b = 0; b < nranks; b++)
				cref_fill(pattern, dtype, b, nranks, exp + (size_t)b * blk, count);
			double t0 = cref_now_ms();
			rc = inccl_allgather(c, inplace ? mine : send, recv, count, dtype);
			double t = (cref_now_ms() - t0) / 1e3;
			wrong = rc == INCCL_OK ? diff_elems(recv, exp, total, w, &first) : 0;
			snprintf(what, sizeof(what), "allgather %s%s", dn, ip);
			report(what, count, w, rc, c, wrong, first, t);
		}
		for (int op = INCCL_SUM; on[K_REDUCESCATTER] && op <= INCCL_MIN; op++) {
			/* element i: op over every rank's input at rank * count + i, in the tree's order */
			uint8_t *out = inplace ? send + (size_t)rank * blk : recv;
			cref_fill(pattern, dtype, rank, nranks, send, total);
			if (!inplace)
				memset(recv, POISON, blk);
			for (size_t i = 0; i < count; i++)
				want[i] = cref_expect(tree, pattern, dtype, op, (size_t)rank * count + i);
			double t0 = cref_now_ms();
			rc = inccl_reducescatter(c, send, out, count, dtype, op);
			double t = (cref_now_ms() - t0) / 1e3;
			wrong = rc == INCCL_OK ? cref_count_wrong(dtype, out, want, count, &first) : 0;
			snprintf(what, sizeof(what), "reducescatter %s %s%s", dn, opn(op), ip);
			report(what, count, w, rc, c, wrong, first, t);
		}
		if (on[K_ALLTOALL]) { /* block b of the result: rank b's input at rank * count */
			uint8_t *out = inplace ? send : recv;
			cref_fill(pattern, dtype, rank, nranks, send, total);
			if (!inplace)
				memset(recv, POISON, total * w);
			for (int b = 0; b < nranks; b++) {
				cref_fill(pattern, dtype, b, nranks, tmp, total);
				memcpy(exp + (size_t)b * blk, tmp + (size_t)rank * blk, blk);
			}
			double t0 = cref_now_ms();
			rc = inccl_alltoall(c, send, out, count, dtype);
			double t = (cref_now_ms() - t0) / 1e3;
			wrong = rc == INCCL_OK ? diff_elems(out, exp, total, w, &first) : 0;
			snprintf(what, sizeof(what), "alltoall %s%s", dn, ip);
			report(what, count, w, rc, c, wrong, first, t);
		}
	}
out:
	free(sraw);
	free(rraw);
	free(exp);
	free(tmp);
	free(want);
}

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

/** expect_refused() - count a bad-argument call @what as passed when it returned
 * INCCL_EINVAL with @words in the communicator's message, failed otherwise. */
static void expect_refused(inccl_comm_t *c, int rc, const char *what, const char *words)
{
	if (rc == INCCL_EINVAL && strstr(inccl_errmsg(c), words)) {
		pass++;
		printf("ok   %s refused: %s\n", what, inccl_errmsg(c));
	} else {
		failed++;
		printf("FAIL %s: returned %d (%s), not EINVAL\n", what, rc, inccl_errmsg(c));
	}
}

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

int main(int argc, char **argv)
{
	int rank = -1, nranks = 0, opt, delay_ms = CREF_BARRIER_DELAY_MS, have_pattern = 0;
	const char *counts = "1,255,256,257,1031,65539", *spec = NULL, *hold = NULL, *colls = NULL;
	int on[K_N] = { 1, 1, 1, 1, 0, 0, 0 }; /* the block collectives by name or "all" (-k) */
	struct inccl_comm_opts co = { 0 };
	enum inccl_dtype dtypes[CREF_NDTYPES] = { INCCL_INT32, INCCL_FLOAT32 };
	int ndtypes = 2;
	enum cref_pattern pattern = CREF_EXACT;
	static struct cref_tree tree; /* ~16 KiB */
	struct inccl_group_opts go = { 0 };
	inccl_group_t *g;
	inccl_comm_t *c;
	char err[512], treebuf[CREF_MAX_SPEC + 1];

	while ((opt = getopt(argc, argv, "r:n:m:C:T:c:t:p:D:H:d:A:k:W:")) != -1) {
		switch (opt) {
		case 'r': rank = atoi(optarg); break;
		case 'n': nranks = atoi(optarg); break;
		case 'm': go.master = optarg; break;
		case 'C': go.controller = optarg; break;
		case 'T': go.timeout_ms = atoi(optarg); break;
		case 'c': counts = optarg; break;
		case 'H': hold = optarg; break;
		case 'k': colls = optarg; break;
		case 'A':
			if (!strcmp(optarg, "inc") || !strcmp(optarg, "ring")) {
				co.algorithm = optarg[0] == 'r' ? INCCL_ALGO_RING : INCCL_ALGO_INC;
				break;
			}
			fprintf(stderr, "inccl_check: -A: unknown algorithm '%s' (inc or ring)\n", optarg);
			goto usage;
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
		case 'W':
			if (perf_parse_int(optarg, 1, MAX_WAIT_MS, &co.timeout_ms)) {
				fprintf(stderr, "inccl_check: -W: bad timeout '%s' (1..%d ms)\n", optarg, MAX_WAIT_MS);
				goto usage;
			}
			break;
		case 'D':
			if (perf_parse_int(optarg, 0, MAX_DELAY_MS, &delay_ms)) {
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
	if (colls && parse_colls(colls, on))
		return 2;
	if (co.algorithm == INCCL_ALGO_RING) {
		if (colls && on[K_REDUCE]) {
			fprintf(stderr, "inccl_check: -k reduce: the ring baseline has no reduce\n");
			return 2;
		}
		on[K_REDUCE] = 0;
		if (have_pattern && pattern == CREF_IEEE) {
			fprintf(stderr, "inccl_check: -p ieee: the ring adds floats in its own order, not the tree's: "
					"exact inputs only with -A ring\n");
			return 2;
		}
		pattern = CREF_EXACT;
	}
	if (count_bad(counts)) {
		fprintf(stderr, "inccl_check: -c: bad count in '%s' (numbers 1..%llu separated by commas)\n", counts,
			(unsigned long long)MAX_COUNT);
		return 2;
	}
	double tb = cref_now_ms();
	int rc = inccl_group_create(&go, rank, nranks, &g);
	if (rc == INCCL_OK && (rc = inccl_comm_init(g, &co, &c)) != INCCL_OK)
		inccl_group_destroy(g);
	if (rc) {
		fprintf(stderr, "inccl_check: rank %d: bootstrap failed (error %d): %s\n", rank, rc, inccl_last_error());
		printf("rank %d: bootstrap failed%s: %s\n", rank, rc == INCCL_EBUSY ? " (EBUSY)" : "", inccl_last_error());
		return rc == INCCL_EBUSY ? 3 : 1;
	}
	printf("rank %d of %d: group %d, communicator ready in %.1f s\n", rank, nranks, inccl_group_id(g),
	       (cref_now_ms() - tb) / 1e3);
	printf("rank %d: %s, inputs %s, expected in the order of tree %s%s, barrier delay %d ms\n", rank,
	       co.algorithm == INCCL_ALGO_RING ? "ring" : "inc", cref_pattern_name(pattern),
	       cref_tree_format(&tree, treebuf, sizeof(treebuf)), spec ? "" : " (no -t: one switch)", delay_ms);
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
			for (int op = INCCL_SUM; (on[K_ALLREDUCE] || on[K_REDUCE]) && op <= INCCL_MIN; op++) {
				for (size_t i = 0; i < count; i++)
					want[i] = cref_expect(&tree, pattern, dtype, op, i);
				for (int reduce = 0; reduce <= 1; reduce++) {
					if (!on[reduce ? K_REDUCE : K_ALLREDUCE])
						continue;
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
			check_blocks(c, on, &tree, pattern, dtype, rank, nranks, count, k);
			if (!on[K_BROADCAST])
				continue;
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
		if (on[K_BARRIER])
			barrier_check(c, rank, nranks, k, delay_ms);
		free(sraw);
		free(rraw);
		free(want);
	}
	/* bad arguments are refused with a message, nothing is sent */
	rc = inccl_reduce(c, NULL, NULL, 1, INCCL_INT32, INCCL_SUM, nranks);
	expect_refused(c, rc, "reduce to root NRANKS", "root");
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
		expect_refused(c, rc, what[i], words[i]);
	}
	/* the block collectives: a NULL buffer and overlapping buffers refused before anything is sent */
	int32_t two[8];
	for (int i = 0; i < 3; i++) {
		static const char *what[] = { "allgather, send NULL", "reducescatter, receive NULL",
					      "alltoall, overlapping buffers" };
		static const char *words[] = { "send buffer is NULL", "receive buffer is NULL", "overlap" };
		rc = i == 0 ? inccl_allgather(c, NULL, two, 1, INCCL_INT32)
		   : i == 1 ? inccl_reducescatter(c, two, NULL, 1, INCCL_INT32, INCCL_SUM)
			    : inccl_alltoall(c, two + 1, two, 1, INCCL_INT32);
		if (nranks == 1 && i == 2)
			continue; /* one rank: one element each, they do not overlap */
		expect_refused(c, rc, what[i], words[i]);
	}
	/* buffers not aligned to the element's size: EINVAL naming the buffer, nothing sent */
	static int64_t pair[2];
	rc = inccl_allreduce(c, (char *)pair + 4, pair, 1, INCCL_FLOAT64, INCCL_SUM);
	expect_refused(c, rc, "allreduce float64, send buffer 4 bytes off alignment", "not aligned");
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
		"                   [-A inc|ring] [-k COLL,...] [-W MS]\n"
		"  -A ALGO   inc (default): through the switches; ring: the host baseline (no reduce,\n"
		"            exact inputs only)\n"
		"  -k COLLS  the collectives to check: allreduce, reduce, broadcast, barrier, allgather,\n"
		"            reducescatter, alltoall or all, separated by commas (default: allreduce,\n"
		"            reduce, broadcast, barrier; the ring has no reduce)\n"
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
		"            float32, float64, or all (default int32,float32)\n"
		"  -W MS     a collective gives up after MS ms without progress (default 60000, at most %d)\n",
		CREF_BARRIER_DELAY_MS, MAX_DELAY_MS, HOLD_MAX_S, MAX_WAIT_MS);
	return 2;
}
