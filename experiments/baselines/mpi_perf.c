/*
 * mpi_perf — the OpenMPI baseline of the experiments: times MPI_Allreduce,
 * MPI_Reduce, MPI_Bcast or MPI_Barrier over a range of sizes and verifies
 * every result, exactly as hostlib/tools/inccl_perf does for libinccl, so
 * the rows of both land side by side in an experiment's results.csv.
 *
 *   mpirun ... mpi_perf -a mpi-tcp -F csv -C allreduce -d float32 -b 1K -e 512M
 *   mpi_perf -h            (every option)
 *
 * experiments/lib.sh (exp_run_mpi) starts it through mpirun on every host of
 * the lab, once over OpenMPI's TCP transport (-a mpi-tcp) and once over UCX
 * on Soft-RoCE (-a mpi-ucx); see experiments/baselines/README.md.
 *
 * Shared with inccl_perf (hostlib/tools/perf_opts.c, linked as is; it needs
 * only inccl.h's dtype and op enums, not libinccl): sizes with K/M/G
 * suffixes, the size sweep, the bandwidth formulas, the names, and the
 * deterministic input pattern with its verification (small integers, for
 * float32 multiples of 1/8, so every sum is exact in any order). The report
 * is written here because its first column is this tool's -a label; its
 * format is inccl_perf's, byte for byte.
 *
 * Each size: -w warm-up iterations, then -n timed ones. Before each
 * iteration the buffer (in place: MPI_IN_PLACE, so 2 GiB fit a host with
 * 3 GiB) is refilled with this rank's input and the ranks meet at an
 * MPI_Barrier; only the collective is timed. After the last iteration every
 * rank checks every element against what it computes itself from all
 * ranks' inputs (reduce non-roots: still their own input); the wrong counts
 * are summed with MPI_Allreduce. time_us is the largest over the ranks of
 * each rank's mean time per iteration (-S rank0: rank 0's own mean, which
 * is what inccl_perf reports); time_max_us is always the largest. Only
 * rank 0 prints.
 *
 * MPI counts are ints: a collective on more than MPI_PERF_CHUNK_BYTES
 * (1 GiB) is issued as several calls on consecutive pieces of the buffer.
 *
 * Test hooks (tests/experiments/test-mpi-perf.sh; not for measurements):
 *   MPI_PERF_CORRUPT=RANK      rank RANK flips one bit of one element of its
 *                              result after the last iteration of each size
 *                              (not barrier: no data), so the check must find
 *                              exactly one wrong element per size
 *   MPI_PERF_CHUNK_BYTES=SIZE  the largest piece per MPI call (K/M/G, a whole
 *                              number of elements) instead of 1 GiB
 *
 * Exit status (mpirun passes it on: the first non-zero status of a rank, or
 * the code given to MPI_Abort) — experiments/lib.sh tells a baseline that
 * could not start from one that failed by it:
 *   0 every element right on every rank
 *   1 a wrong element (the report is complete: its rows show how many)
 *   2 bad arguments
 *   3 could not start, nothing was measured: allocation, the report file, or
 *     the first exchange between the ranks (an MPI_Allreduce before any
 *     measured collective: a transport that cannot connect fails here)
 *   4 a failure after the measurement began: an MPI call (the job is
 *     aborted) or writing the report
 * OpenMPI itself aborts a failed MPI_Init with 1 before mpi_perf can say
 * anything; that is told from a wrong element by the missing report header.
 */
#include <mpi.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../proto/inc_elem.h"
#include "inccl.h"
#include "perf_opts.h"

#define PROG "mpi_perf"
#define NOT_A_RANK (-1)                       /* broadcast non-roots start with this "rank's" input */
#define MPI_PERF_CHUNK_BYTES ((size_t)1 << 30) /* the largest 2^k elements whose bytes fit an int */
#define MAX_LABEL 32

/* Exit statuses (see the top of the file). */
enum { EXIT_WRONG = 1, EXIT_USAGE = 2, EXIT_NOT_STARTED = 3, EXIT_FAILED = 4 };

static const char usage[] =
	"usage: mpirun [MPIRUN OPTIONS] mpi_perf [-C allreduce|reduce|broadcast|barrier|allgather|reducescatter|alltoall]\n"
	"       [-b MIN] [-e MAX]\n"
	"                  [-f FACTOR] [-d int32|float32] [-o sum|max|min] [-R ROOT] [-n ITERS]\n"
	"                  [-w WARMUP] [-a LABEL] [-S max|rank0] [-F text|csv|json] [-O FILE] [-h]\n";

static const char help[] =
	"Times an OpenMPI collective over a range of sizes on every rank and checks every result;\n"
	"the baseline of inccl_perf, with the same options, report and checks.\n"
	"\n"
	"  -C COLL     allreduce (default), reduce, broadcast, barrier (one row, sizes ignored),\n"
	"              allgather, reducescatter or alltoall (MPI_Allgather, MPI_Reduce_scatter_block,\n"
	"              MPI_Alltoall, in place but MPI_Alltoall; sizes: the whole buffer, as inccl_perf)\n"
	"  -b MIN      smallest size in bytes, K/M/G = 2^10/2^20/2^30 (default 1K)\n"
	"  -e MAX      largest size (default 16M); sizes are rounded down to whole\n"
	"              4-byte elements, at least one\n"
	"  -f FACTOR   multiply the size by this integer (>= 2 unless MIN = MAX; default 2)\n"
	"  -d DTYPE    int32 or float32 (default)\n"
	"  -o OP       sum (default), max or min (allreduce, reduce)\n"
	"  -R ROOT     root rank of reduce and broadcast (default 0)\n"
	"  -n ITERS    timed iterations per size (default 5)\n"
	"  -w WARMUP   untimed iterations before them (default 1)\n"
	"  -a LABEL    the algorithm column of the report (default mpi; the experiments\n"
	"              use mpi-tcp and mpi-ucx): letters, digits and . _ + -\n"
	"  -S STAT     time_us: max (default) = the slowest rank's mean time per\n"
	"              iteration; rank0 = rank 0's own mean (what inccl_perf reports);\n"
	"              the time_max_us column is the slowest rank's either way\n"
	"  -F FORMAT   text (default), csv or json\n"
	"  -O FILE     rank 0 writes the report to FILE instead of stdout\n"
	"  -h          this help\n"
	"\n"
	"Each iteration refills the buffer (in place: MPI_IN_PLACE), meets the other\n"
	"ranks at an MPI_Barrier, then times the collective; neither refill nor barrier\n"
	"is timed. algbw = bytes / time (MB/s = 10^6 bytes/s), busbw as in nccl-tests\n"
	"(allreduce: algbw * 2(n-1)/n; reduce, broadcast: algbw). Every rank checks every\n"
	"element of its result of the last iteration; 'wrong' sums all ranks' wrong\n"
	"elements. Only rank 0 prints.\n"
	"Exit status: 0 all correct, 1 a wrong element, 2 bad arguments, 3 could not start\n"
	"(allocation, report file, or the first exchange between the ranks failed: nothing\n"
	"measured), 4 a failure after the measurement began (an MPI call, writing the report).\n";

/** Everything the command line decides; @p holds what inccl_perf's parser would fill. */
struct mpi_opts {
	struct perf_opts p;   /* coll, dtype, op, root, sizes, iters, warmup, format, out_path, rank, nranks */
	const char *label;    /* -a: the algorithm column */
	int time_rank0;       /* -S rank0 */
	int help;             /* -h */
};

/** One run: options, the buffer, the report (rank 0), test hooks. */
struct bench {
	const struct mpi_opts *o;
	void *buf;            /* holds the largest size; NULL for barrier */
	void *a2a;           /* alltoall: the receive buffer (out of place), copied to buf after the timing */
	FILE *out;            /* the report; NULL except on rank 0 */
	size_t chunk_elems;   /* the most elements per MPI call */
	int corrupt_rank;     /* MPI_PERF_CORRUPT, -1: off */
	struct perf_report rep; /* rank 0's report (hostlib/tools/perf_opts.c, as inccl_perf's) */
	uint64_t wrong;       /* over all sizes and ranks */
	int started;          /* every rank is ready: a failure from here on is EXIT_FAILED, before it EXIT_NOT_STARTED */
};

/* ---- command line ------------------------------------------------------------ */

/** Write the reason into @err (@errlen bytes); return -1. */
static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/** Index i of [0, @n) whose @name(i) is @s, or -1 (the names are perf_opts.c's). */
static int find_name(const char *s, const char *(*name)(int), int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(s, name(i)))
			return i;
	return -1;
}

static const char *coll_name(int i) { return perf_coll_name((enum perf_coll)i); }
static const char *dtype_name(int i) { return perf_dtype_name((enum inccl_dtype)i); }
static const char *op_name(int i) { return perf_op_name((enum inccl_op)(i + INCCL_SUM)); }
static const char *format_name(int i)
{
	static const char *const names[] = { "text", "csv", "json" };

	return names[i];
}

/** Whether @s is a usable -a label: 1..MAX_LABEL characters of [A-Za-z0-9._+-] (safe in CSV and JSON). */
static int good_label(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > MAX_LABEL)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      strchr("._+-", *s)))
			return 0;
	return 1;
}

/** Apply option -@flag with value @val. Return 0 or -1 with the reason in @err. */
static int set_option(struct mpi_opts *o, char flag, const char *val, char *err, size_t errlen)
{
	int i;
	size_t bytes;

	switch (flag) {
	case 'C':
		if ((i = find_name(val, coll_name, PERF_NCOLLS)) < 0)
			return fail(err, errlen,
				    "unknown collective '%s' (allreduce, reduce, broadcast, barrier, allgather, "
				    "reducescatter, alltoall)", val);
		o->p.coll = (enum perf_coll)i;
		return 0;
	case 'd':
		if ((i = find_name(val, dtype_name, PERF_NDTYPES)) < 0)
			return fail(err, errlen,
				    "unknown dtype '%s' (int32, uint32, int64, uint64, float16, bfloat16, float32, float64)",
				    val);
		o->p.dtype = (enum inccl_dtype)i;
		return 0;
	case 'o':
		if ((i = find_name(val, op_name, 3)) < 0)
			return fail(err, errlen, "unknown op '%s' (sum, max, min)", val);
		o->p.op = (enum inccl_op)(i + INCCL_SUM);
		return 0;
	case 'F':
		if ((i = find_name(val, format_name, 3)) < 0)
			return fail(err, errlen, "unknown format '%s' (text, csv, json)", val);
		o->p.format = (enum perf_format)i;
		return 0;
	case 'b':
	case 'e':
		if (perf_parse_size(val, &bytes) || bytes == 0)
			return fail(err, errlen, "-%c: bad size '%s' (a positive number of bytes, optionally with K, M or G)",
				    flag, val);
		*(flag == 'b' ? &o->p.min_bytes : &o->p.max_bytes) = bytes;
		return 0;
	case 'f':
		if (perf_parse_int(val, 1, 1 << 20, &i))
			return fail(err, errlen, "-f: bad factor '%s' (an integer >= 1)", val);
		o->p.factor = (size_t)i;
		return 0;
	case 'R':
		if (perf_parse_int(val, 0, PERF_MAX_NRANKS - 1, &o->p.root))
			return fail(err, errlen, "-R: bad root '%s'", val);
		return 0;
	case 'n':
		if (perf_parse_int(val, 1, 1000000, &o->p.iters))
			return fail(err, errlen, "-n: bad iteration count '%s' (1..1000000)", val);
		return 0;
	case 'w':
		if (perf_parse_int(val, 0, 1000000, &o->p.warmup))
			return fail(err, errlen, "-w: bad warm-up count '%s' (0..1000000)", val);
		return 0;
	case 'a':
		if (!good_label(val))
			return fail(err, errlen, "-a: bad label '%s' (1..%d of letters, digits, . _ + -)", val, MAX_LABEL);
		o->label = val;
		return 0;
	case 'S':
		if (strcmp(val, "max") && strcmp(val, "rank0"))
			return fail(err, errlen, "-S: unknown statistic '%s' (max, rank0)", val);
		o->time_rank0 = !strcmp(val, "rank0");
		return 0;
	case 'O':
		if (!*val)
			return fail(err, errlen, "-O: empty file name");
		o->p.out_path = val;
		return 0;
	default:
		return fail(err, errlen, "unknown option -%c", flag);
	}
}

/* Options that take a value; -h takes none. */
#define VALUE_FLAGS "CbefdoRnwaSFO"

/**
 * parse_args() - fill @o from @argv for a job of @nranks ranks (this one
 * @rank). Return 0 (-h sets o->help) or -1 with a one-line reason in @err.
 */
static int parse_args(int argc, char *const argv[], int rank, int nranks, struct mpi_opts *o, char *err,
		      size_t errlen)
{
	char a[32], b[32];

	*o = (struct mpi_opts){
		.p = { .coll = PERF_ALLREDUCE, .dtype = INCCL_FLOAT32, .op = INCCL_SUM, .root = 0,
		       .min_bytes = 1 << 10, .max_bytes = 16 << 20, .factor = 2, .iters = 5, .warmup = 1,
		       .rank = rank, .nranks = nranks, .format = PERF_TEXT },
		.label = "mpi",
	};
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
			o->help = 1;
			return 0;
		}
		if (arg[0] != '-' || !arg[1] || !strchr(VALUE_FLAGS, arg[1]))
			return fail(err, errlen, arg[0] == '-' ? "unknown option '%s'" : "unexpected argument '%s'", arg);
		const char *val = arg[2] ? arg + 2 : i + 1 < argc ? argv[++i] : NULL;
		if (!val)
			return fail(err, errlen, "option %s needs a value", arg);
		if (set_option(o, arg[1], val, err, errlen))
			return -1;
	}
	if (nranks > PERF_MAX_NRANKS)
		return fail(err, errlen, "%d ranks: at most %d (the int32 sums of the input pattern must be exact)",
			    nranks, PERF_MAX_NRANKS);
	if (o->p.root >= nranks)
		return fail(err, errlen, "root %d is not a rank of 0..%d", o->p.root, nranks - 1);
	if (o->p.coll != PERF_BARRIER && o->p.coll != PERF_BROADCAST && nranks > perf_max_nranks(o->p.dtype))
		return fail(err, errlen, "%s sums of %d ranks are not exact for the input pattern (at most %d ranks)",
			    perf_dtype_name(o->p.dtype), nranks, perf_max_nranks(o->p.dtype));
	if (o->p.coll == PERF_BARRIER)
		return 0; /* moves no data: sizes do not matter */
	if (o->p.min_bytes > o->p.max_bytes)
		return fail(err, errlen, "MIN (%s) is larger than MAX (%s)", perf_format_size(o->p.min_bytes, a, sizeof(a)),
			    perf_format_size(o->p.max_bytes, b, sizeof(b)));
	if (o->p.factor < 2 && o->p.min_bytes != o->p.max_bytes)
		return fail(err, errlen, "factor %zu would never reach MAX: give -f 2 or more", o->p.factor);
	return 0;
}

/**
 * test_hooks() - read MPI_PERF_CORRUPT and MPI_PERF_CHUNK_BYTES (see the top
 * of the file) into @b. Return 0 or -1 with the reason in @err.
 */
static int test_hooks(struct bench *b, char *err, size_t errlen)
{
	const char *s;
	size_t bytes;

	size_t w = perf_dtype_size(b->o->p.dtype);

	b->chunk_elems = MPI_PERF_CHUNK_BYTES / w;
	b->corrupt_rank = -1;
	if ((s = getenv("MPI_PERF_CORRUPT")) && perf_parse_int(s, 0, b->o->p.nranks - 1, &b->corrupt_rank))
		return fail(err, errlen, "MPI_PERF_CORRUPT='%s' is not a rank of 0..%d", s, b->o->p.nranks - 1);
	if ((s = getenv("MPI_PERF_CHUNK_BYTES"))) {
		if (perf_parse_size(s, &bytes) || bytes < w || bytes % w || bytes > MPI_PERF_CHUNK_BYTES)
			return fail(err, errlen, "MPI_PERF_CHUNK_BYTES='%s' is not a whole number of %zu-byte elements up to 1G",
				    s, w);
		b->chunk_elems = bytes / w;
	}
	return 0;
}

/* ---- the measurement ------------------------------------------------------------ */

/** Monotonic time in microseconds (the clock inccl_perf uses). */
static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/**
 * check_mpi() - if MPI call @what returned @rc (not MPI_SUCCESS), say why on
 * stderr and abort the job: the other ranks would wait for this one forever.
 * The abort code (mpirun's exit status) says whether the measurement had
 * begun: EXIT_FAILED, else EXIT_NOT_STARTED.
 */
static void check_mpi(const struct bench *b, int rc, const char *what, size_t bytes)
{
	char msg[MPI_MAX_ERROR_STRING], size[32];
	int len = 0;

	if (rc == MPI_SUCCESS)
		return;
	if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS)
		snprintf(msg, sizeof(msg), "error %d", rc);
	fprintf(stderr, PROG ": rank %d: %s%s%s failed: %s\n", b->o->p.rank, what, bytes ? " of " : "",
		bytes ? perf_format_size(bytes, size, sizeof(size)) : "", msg);
	MPI_Abort(MPI_COMM_WORLD, b->started ? EXIT_FAILED : EXIT_NOT_STARTED);
	exit(b->started ? EXIT_FAILED : EXIT_NOT_STARTED); /* not reached */
}

/*
 * float16 and bfloat16: MPI has no such types; they travel as MPI_UINT16_T
 * and combine through operators of our own (MPI_Op_create()) with the
 * switches' arithmetic (proto/inc_elem.h: each combine in float32, rounded
 * back to the type), so the baseline reduces what the switches reduce.
 */
static enum inc_dtype half_dtype; /* the type half_combine() works on (one per job) */
static enum inc_op half_op;

/** half_combine() - MPI_User_function: inout[i] = op(in[i], inout[i]) for *@len 16-bit elements. */
static void half_combine(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	uint16_t *a = inout;
	const uint16_t *b = in;

	(void)dt;
	for (int i = 0; i < *len; i++)
		a[i] = (uint16_t)inc_elem_combine(b[i], a[i], half_op, half_dtype);
}

/** The MPI datatype of the options. */
static MPI_Datatype mpi_dtype(const struct perf_opts *p)
{
	switch (p->dtype) {
	case INCCL_INT32: return MPI_INT32_T;
	case INCCL_UINT32: return MPI_UINT32_T;
	case INCCL_INT64: return MPI_INT64_T;
	case INCCL_UINT64: return MPI_UINT64_T;
	case INCCL_FLOAT32: return MPI_FLOAT;
	case INCCL_FLOAT64: return MPI_DOUBLE;
	case INCCL_FLOAT16:
	case INCCL_BFLOAT16: return MPI_UINT16_T;
	}
	return MPI_FLOAT;
}

/** The MPI operation of the options (float16/bfloat16: half_combine(), created on first use). */
static MPI_Op mpi_op(const struct perf_opts *p)
{
	static MPI_Op half = MPI_OP_NULL;

	if (p->dtype == INCCL_FLOAT16 || p->dtype == INCCL_BFLOAT16) {
		if (half == MPI_OP_NULL) {
			half_dtype = (enum inc_dtype)p->dtype;
			half_op = (enum inc_op)p->op;
			if (MPI_Op_create(half_combine, 1, &half) != MPI_SUCCESS)
				MPI_Abort(MPI_COMM_WORLD, EXIT_NOT_STARTED);
		}
		return half;
	}
	return p->op == INCCL_MAX ? MPI_MAX : p->op == INCCL_MIN ? MPI_MIN : MPI_SUM;
}

/**
 * collective() - one call of the collective on the first @count elements of
 * the buffer, in place; pieces of at most b->chunk_elems elements (an int).
 */
static void collective(struct bench *b, size_t count)
{
	const struct perf_opts *p = &b->o->p;
	MPI_Datatype dt = mpi_dtype(p);
	MPI_Op op = mpi_op(p);
	MPI_Comm w = MPI_COMM_WORLD;
	int root = p->root, me = p->rank;

	if (p->coll == PERF_BARRIER) {
		check_mpi(b, MPI_Barrier(w), "MPI_Barrier", 0);
		return;
	}
	if (perf_coll_blocks(p->coll)) { /* one call: a block of at most 2G / 4 ranks elements fits an int */
		int n = (int)(count / (size_t)p->nranks);
		size_t bytes = count * perf_dtype_size(p->dtype);
		if (p->coll == PERF_ALLGATHER)
			check_mpi(b, MPI_Allgather(MPI_IN_PLACE, 0, dt, b->buf, n, dt, w), "MPI_Allgather", bytes);
		else if (p->coll == PERF_ALLTOALL)
			/* out of place: Open MPI 4.1's in-place MPI_Alltoall crashed here now and then (SIGSEGV,
			 * "address not mapped", in 1 of 4 make check runs; its IN_PLACE offsets were fixed for 5.0) */
			check_mpi(b, MPI_Alltoall(b->buf, n, dt, b->a2a, n, dt, w), "MPI_Alltoall", bytes);
		else /* in place: the input from the buffer, the result to its start */
			check_mpi(b, MPI_Reduce_scatter_block(MPI_IN_PLACE, b->buf, n, dt, op, w), "MPI_Reduce_scatter_block",
				  bytes);
		return;
	}
	for (size_t off = 0; off < count; off += b->chunk_elems) {
		size_t left = count - off;
		int n = (int)(left < b->chunk_elems ? left : b->chunk_elems);
		char *piece = (char *)b->buf + off * perf_dtype_size(p->dtype);
		size_t bytes = (size_t)n * perf_dtype_size(p->dtype);

		switch (p->coll) {
		case PERF_ALLREDUCE:
			check_mpi(b, MPI_Allreduce(MPI_IN_PLACE, piece, n, dt, op, w), "MPI_Allreduce", bytes);
			break;
		case PERF_REDUCE: /* the root reduces into its buffer; the others' buffers are only read */
			check_mpi(b, MPI_Reduce(me == root ? MPI_IN_PLACE : piece, me == root ? piece : NULL, n, dt, op,
						root, w),
				  "MPI_Reduce", bytes);
			break;
		default:
			check_mpi(b, MPI_Bcast(piece, n, dt, root, w), "MPI_Bcast", bytes);
			break;
		}
	}
}

/** One iteration on @bytes: refill, MPI_Barrier, then the collective, whose time is added to *@elapsed_us. */
static void iterate(struct bench *b, size_t bytes, double *elapsed_us)
{
	const struct perf_opts *p = &b->o->p;
	size_t count = bytes / perf_dtype_size(p->dtype);

	if (perf_coll_blocks(p->coll))
		perf_fill_blocks(p, b->buf, count);
	else if (p->coll != PERF_BARRIER)
		perf_fill(b->buf, count, p->dtype, p->coll == PERF_BROADCAST && p->rank != p->root ? NOT_A_RANK : p->rank);
	check_mpi(b, MPI_Barrier(MPI_COMM_WORLD), "the MPI_Barrier before an iteration", bytes);
	double t0 = now_us();
	collective(b, count);
	*elapsed_us += now_us() - t0;
	if (p->coll == PERF_ALLTOALL) /* the result where the checks look, after the timing */
		memcpy(b->buf, b->a2a, bytes);
}

/** Wrong elements in this rank's buffer after an iteration on @count elements. */
static size_t count_wrong(const struct bench *b, size_t count)
{
	const struct perf_opts *p = &b->o->p;

	switch (p->coll) {
	case PERF_ALLREDUCE:
		return perf_count_wrong_reduced(b->buf, count, p->dtype, p->op, p->nranks);
	case PERF_REDUCE: /* non-roots receive nothing: their buffer must still hold their input */
		return p->rank == p->root ? perf_count_wrong_reduced(b->buf, count, p->dtype, p->op, p->nranks)
					  : perf_count_wrong_input(b->buf, count, p->dtype, p->rank);
	case PERF_BROADCAST:
		return perf_count_wrong_input(b->buf, count, p->dtype, p->root);
	case PERF_ALLGATHER:
	case PERF_REDUCESCATTER: /* MPI_IN_PLACE: its block of the result at the buffer's start */
	case PERF_ALLTOALL:
		return perf_count_wrong_blocks(p, b->buf, count);
	default:
		return 0;
	}
}

/** The MPI_PERF_CORRUPT test hook: flip the lowest bit of the middle element on the chosen rank. */
static void corrupt(struct bench *b, size_t count)
{
	uint8_t *e;

	if (b->corrupt_rank != b->o->p.rank || !b->buf || !count)
		return;
	e = (uint8_t *)b->buf + count / 2 * perf_dtype_size(b->o->p.dtype);
	*e ^= 1; /* its lowest byte (host order): a different integer, or float (0 becomes the smallest denormal) */
}

/** Run one size: warm-up, timed iterations, check, sums over the ranks; fill @row (valid on rank 0). */
static void run_size(struct bench *b, size_t bytes, struct perf_row *row)
{
	const struct perf_opts *p = &b->o->p;
	double elapsed_us = 0, warmup_us = 0, mean_us, slowest_us;
	size_t count = bytes / perf_dtype_size(p->dtype);
	uint64_t local, total;

	for (int k = 0; k < p->warmup; k++)
		iterate(b, bytes, &warmup_us);
	for (int k = 0; k < p->iters; k++)
		iterate(b, bytes, &elapsed_us);
	corrupt(b, count);
	local = count_wrong(b, count);
	if (local)
		fprintf(stderr, PROG ": rank %d: %s of %zu bytes: %llu of %zu elements wrong\n", p->rank,
			perf_coll_name(p->coll), bytes, (unsigned long long)local, count);
	check_mpi(b, MPI_Allreduce(&local, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD),
		  "the MPI_Allreduce of the wrong counts", bytes);
	mean_us = elapsed_us / p->iters;
	check_mpi(b, MPI_Reduce(&mean_us, &slowest_us, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD),
		  "the MPI_Reduce of the times", bytes);
	*row = (struct perf_row){ .bytes = bytes, .elements = count, .iters = p->iters,
				  .time_us = b->o->time_rank0 ? mean_us : slowest_us, .wrong = total,
				  .time_max_us = slowest_us };
}

/**
 * prepare() - allocate the buffer for the @largest size and (rank 0) open the
 * report; every rank learns whether all succeeded (the first exchange between
 * the ranks). Return 0 or -1 (each failing rank said why).
 */
static int prepare(struct bench *b, size_t largest)
{
	const struct perf_opts *p = &b->o->p;
	char size[32];
	int ok = 1, all_ok = 0;

	if ((p->coll != PERF_BARRIER && !(b->buf = malloc(largest))) ||
	    (p->coll == PERF_ALLTOALL && !(b->a2a = malloc(largest)))) {
		fprintf(stderr, PROG ": rank %d: cannot allocate %s for the largest size\n", p->rank,
			perf_format_size(largest, size, sizeof(size)));
		ok = 0;
	}
	if (p->rank == 0) {
		b->out = p->out_path ? fopen(p->out_path, "w") : stdout;
		if (!b->out) {
			fprintf(stderr, PROG ": cannot write %s: %s\n", p->out_path, strerror(errno));
			ok = 0;
		}
	}
	check_mpi(b, MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "the MPI_Allreduce of readiness", 0);
	return all_ok ? 0 : -1;
}

/** Close the report (rank 0) and free the buffer. Return -1 if the report could not be written. */
static int cleanup(struct bench *b)
{
	int bad = 0;

	free(b->buf);
	b->buf = NULL;
	free(b->a2a);
	b->a2a = NULL;
	if (b->out) {
		bad = ferror(b->out);
		bad |= b->out == stdout ? fflush(b->out) : fclose(b->out);
		if (bad)
			fprintf(stderr, PROG ": cannot write the report to %s\n", b->o->p.out_path ? b->o->p.out_path : "stdout");
		b->out = NULL;
	}
	return bad ? -1 : 0;
}

/** Run every size of the sweep and report. Return the exit status. */
static int run(struct bench *b)
{
	size_t sizes[PERF_MAX_SIZES], nsizes = perf_sweep(&b->o->p, sizes);

	if (prepare(b, sizes[nsizes - 1]))
		return EXIT_NOT_STARTED;
	b->started = 1;
	if (b->out)
		perf_report_begin_as(&b->rep, b->out, &b->o->p, PROG, b->o->label,
				     b->o->time_rank0 ? ", time of rank 0" : ", time of the slowest rank");
	for (size_t k = 0; k < nsizes; k++) {
		struct perf_row row;
		run_size(b, sizes[k], &row);
		if (b->out)
			perf_report_row(&b->rep, &row);
		b->wrong += row.wrong; /* the same total on every rank */
	}
	if (b->out)
		perf_report_end(&b->rep, 1);
	if (b->wrong && b->o->p.rank == 0)
		fprintf(stderr, PROG ": %llu wrong elements over all ranks\n", (unsigned long long)b->wrong);
	return b->wrong ? EXIT_WRONG : 0;
}

int main(int argc, char **argv)
{
	struct mpi_opts o;
	struct bench b = { .o = &o };
	char err[256];
	int rank, nranks, status;

	if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
		fprintf(stderr, PROG ": MPI_Init failed\n");
		return EXIT_NOT_STARTED;
	}
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); /* failures are reported by check_mpi() */
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (parse_args(argc, argv, rank, nranks, &o, err, sizeof(err)) || test_hooks(&b, err, sizeof(err))) {
		if (rank == 0)
			fprintf(stderr, PROG ": %s\n%s", err, usage);
		MPI_Finalize();
		return EXIT_USAGE;
	}
	if (o.help) {
		if (rank == 0)
			printf("%s\n%s", usage, help);
		MPI_Finalize();
		return 0;
	}
	signal(SIGPIPE, SIG_IGN); /* a closed pipe is an error to report, not a crash */
	status = run(&b);
	if (cleanup(&b)) /* before MPI_Finalize: the report is complete before any rank exits */
		status = b.started ? EXIT_FAILED : status;
	MPI_Finalize();
	return status;
}
