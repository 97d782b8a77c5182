/*
 * perf_opts.c — the network-free parts of inccl_perf (see perf_opts.h): the
 * command line, sizes and the sweep, bandwidth formulas, the report in text,
 * CSV or JSON, the input pattern and its verification, and the wrong-count
 * tally. Unit tested by tests/unit/test_perf_opts.c.
 */
#include "perf_opts.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "../../proto/inc_elem.h"

const char perf_usage[] =
	"usage: inccl_perf [-C allreduce|reduce|broadcast|barrier|allgather|reducescatter|alltoall]\n"
	"                  [-b MIN] [-e MAX] [-f FACTOR]\n"
	"                  [-d int32|float32] [-o sum|max|min] [-R ROOT] [-n ITERS] [-w WARMUP]\n"
	"                  [-r RANK] [-N NRANKS] [-m HOST[:PORT]] [-c HOST[:PORT]] [-t SECONDS]\n"
	"                  [-T SECONDS] [-W PACKETS] [-A inc|ring] [-D MS] [-F text|csv|json] [-O FILE]\n"
	"                  [-X FILE] [-v] [-h]\n";

const char perf_help[] =
	"Times a libinccl collective over a range of sizes on every rank and checks every result.\n"
	"\n"
	"  -C COLL     allreduce (default), reduce, broadcast, barrier (one row, sizes ignored),\n"
	"              allgather, reducescatter or alltoall (sizes: the whole buffer, nccl-tests'\n"
	"              way, rounded down to whole blocks of NRANKS)\n"
	"  -b MIN      smallest size in bytes, K/M/G = 2^10/2^20/2^30 (default 1K)\n"
	"  -e MAX      largest size (default 16M); sizes are rounded down to whole\n"
	"              4-byte elements, at least one\n"
	"  -f FACTOR   multiply the size by this integer (>= 2 unless MIN = MAX; default 2)\n"
	"  -d DTYPE    int32, uint32, int64, uint64, float16, bfloat16, float32 (default)\n"
	"              or float64 (float16 at most 256 ranks, bfloat16 128: exact sums)\n"
	"  -o OP       sum (default), max or min (allreduce, reduce, reducescatter)\n"
	"  -R ROOT     root rank of reduce and broadcast (default 0)\n"
	"  -n ITERS    timed iterations per size (default 5)\n"
	"  -w WARMUP   untimed iterations before them, checked too (default 1)\n"
	"  -r RANK     this rank (default $INCCL_RANK)\n"
	"  -N NRANKS   number of ranks (default $INCCL_NRANKS)\n"
	"  -m MASTER   rank 0 as host[:port] (default $INCCL_MASTER, else node.conf)\n"
	"  -c CTRL     the controller as host[:port], used by rank 0 (default $INCCL_CONTROLLER,\n"
	"              else node.conf)\n"
	"  -t SECONDS  bootstrap timeout: every rank must join within it (default 120)\n"
	"  -T SECONDS  a collective fails after this long without progress (default 60);\n"
	"              raise it if checking the largest size on the slowest rank (the\n"
	"              root of reduce: nranks inputs per element) takes longer\n"
	"  -W PACKETS  packets of 1 KiB a rank keeps in flight (libinccl's window, 1..16384;\n"
	"              default 512)\n"
	"  -M PACKETS  packets per RDMA message (libinccl's message, 1..64; default 16)\n"
	"  -A ALGO     inc (default): aggregated in the switches; ring: the host-based\n"
	"              baseline, a ring of RDMA connections between the hosts (every\n"
	"              collective but reduce), the switches only routing\n"
	"  -D MS       barrier: the late rank's delay in the verification round (default 1000,\n"
	"              0: no verification round; at most 30000)\n"
	"  -F FORMAT   text (default), csv or json\n"
	"  -O FILE     write the report to FILE instead of stdout\n"
	"  -X FILE     append to FILE one line per iteration, warm-up too: rank, phase (warmup,\n"
	"              timed), bytes, iteration, CLOCK_REALTIME ns just before and after the\n"
	"              collective, this machine's interrupts and RDMA packets sent and received\n"
	"              across it (-1: unreadable) (the header " PERF_WINDOWS_HEADER "\n"
	"              first when FILE is empty)\n"
	"  -v          every rank reports (not only rank 0)\n"
	"  -h          this help\n"
	"\n"
	"Each iteration refills the buffer (in place: send = receive buffer), meets the\n"
	"other ranks at a barrier, then times the collective; neither refill nor barrier\n"
	"is timed. time_us is the reporting rank's average over the timed iterations,\n"
	"time_max_us the largest of every rank's average (one extra float64 MAX\n"
	"allreduce per size, untimed): when the slowest rank was done, e.g. a\n"
	"broadcast's receivers after its root returned; bandwidths use time_us,\n"
	"algbw = bytes / time, busbw as in nccl-tests (allreduce: algbw * 2(n-1)/n;\n"
	"allgather, reducescatter, alltoall: algbw * (n-1)/n; reduce, broadcast: algbw). Every rank checks its result of every iteration,\n"
	"warm-up included, against the exact expected values (floats by value: -0\n"
	"passes for 0, a NaN never); 'wrong' counts the wrong elements of all ranks and\n"
	"iterations, summed by one extra int32 allreduce per size, and every rank names\n"
	"a non-zero total on stderr. Barrier moves no data: after its iterations comes a\n"
	"verification round: the ranks meet at a barrier, then rank NRANKS-1 enters the\n"
	"next one -D ms late; every other rank must wait at least half of that in it,\n"
	"else it says on stderr \"barrier: left after X ms, before rank L entered\" and\n"
	"counts as one wrong (the rest of the delay is headroom for the ranks leaving\n"
	"the first barrier apart). Sizes of 64 MiB and more show their progress on stderr.\n"
	"Exit status: 0 all correct, 1 a wrong element or a failed call, 2 bad arguments,\n"
	"3 could not start (allocation, report file or bootstrap failed: no collective ran).\n";

/* ---- names --------------------------------------------------------------- */

static const char *const coll_names[PERF_NCOLLS] = { "allreduce", "reduce",    "broadcast",    "barrier",
							"allgather", "reducescatter", "alltoall" };
static const char *const dtype_names[PERF_NDTYPES] = { "int32",  "float32", "uint32",   "int64",
							 "uint64", "float16", "bfloat16", "float64" };
static const char *const op_names[] = { "sum", "max", "min" };
static const char *const format_names[] = { "text", "csv", "json" };
static const char *const algo_names[] = { "inc", "ring" };

/** Index of @s in @names, or -1. */
static int find_name(const char *s, const char *const names[], int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

const char *perf_coll_name(enum perf_coll coll)
{
	return (unsigned)coll < PERF_NCOLLS ? coll_names[coll] : "?";
}

int perf_coll_blocks(enum perf_coll coll)
{
	return coll == PERF_ALLGATHER || coll == PERF_REDUCESCATTER || coll == PERF_ALLTOALL;
}

const char *perf_dtype_name(enum inccl_dtype dtype)
{
	return (unsigned)dtype < PERF_NDTYPES ? dtype_names[dtype] : "?";
}

const char *perf_op_name(enum inccl_op op)
{
	return op >= INCCL_SUM && op <= INCCL_MIN ? op_names[op - INCCL_SUM] : "?";
}

const char *perf_algo_name(enum inccl_algo algo)
{
	return (unsigned)algo < 2 ? algo_names[algo] : "?";
}

/* ---- sizes and numbers ----------------------------------------------------- */

int perf_parse_size(const char *s, size_t *bytes)
{
	char *end;
	unsigned long long v, unit = 1;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	switch (*end) {
	case 'K': case 'k': unit = 1ull << 10; end++; break;
	case 'M': case 'm': unit = 1ull << 20; end++; break;
	case 'G': case 'g': unit = 1ull << 30; end++; break;
	default: break;
	}
	if (*end || v > SIZE_MAX / unit)
		return -1;
	*bytes = (size_t)(v * unit);
	return 0;
}

size_t perf_dtype_size(enum inccl_dtype dtype)
{
	size_t w = inc_dtype_size((enum inc_dtype)dtype); /* libinccl's dtypes are the wire's (inccl.h) */

	return w ? w : 4; /* not a dtype: perf_parse_args() lets none through */
}

size_t perf_round_bytes(size_t bytes, enum inccl_dtype dtype)
{
	size_t w = perf_dtype_size(dtype);

	return bytes < w ? w : bytes - bytes % w;
}

int perf_parse_int(const char *s, long min, long max, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	*out = (int)v;
	return 0;
}

size_t perf_sweep(const struct perf_opts *o, size_t sizes[PERF_MAX_SIZES])
{
	size_t n = 0;

	if (o->coll == PERF_BARRIER) {
		sizes[n++] = 0;
		return n;
	}
	for (size_t raw = o->min_bytes; raw <= o->max_bytes && n < PERF_MAX_SIZES; raw *= o->factor) {
		size_t bytes = perf_round_bytes(raw, o->dtype);
		size_t whole = (size_t)(o->nranks > 0 ? o->nranks : 1) * perf_dtype_size(o->dtype);
		if (perf_coll_blocks(o->coll)) /* whole blocks: nranks elements at least */
			bytes = bytes < whole ? whole : bytes - bytes % whole;
		if (n == 0 || bytes != sizes[n - 1])
			sizes[n++] = bytes;
		if (o->factor < 2 || raw > o->max_bytes / o->factor)
			break; /* the next size is past MAX (or would overflow) */
	}
	return n;
}

double perf_algbw_MBps(size_t bytes, double time_us)
{
	return time_us > 0 ? (double)bytes / time_us : 0; /* bytes per microsecond = MB/s */
}

double perf_busbw_MBps(enum perf_coll coll, int nranks, double algbw)
{
	switch (coll) {
	case PERF_ALLREDUCE: return nranks > 0 ? algbw * 2.0 * (nranks - 1) / nranks : 0;
	case PERF_ALLGATHER:
	case PERF_REDUCESCATTER:
	case PERF_ALLTOALL: return nranks > 0 ? algbw * (nranks - 1) / nranks : 0;
	case PERF_REDUCE:
	case PERF_BROADCAST: return algbw;
	default: return 0;
	}
}

const char *perf_format_size(size_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;
	double v = (double)bytes;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (v == (double)(size_t)v)
		snprintf(buf, len, "%zu %s", (size_t)v, units[u]);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

/* ---- command line ----------------------------------------------------------- */

static enum perf_parse_result fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/** Write the reason into @err; return PERF_PARSE_ERROR. */
static enum perf_parse_result fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return PERF_PARSE_ERROR;
}

/** The defaults: allreduce float32 sum, 1K..16M by 2, 5 iterations after 1 warm-up. */
static void set_defaults(struct perf_opts *o)
{
	*o = (struct perf_opts){
		.coll = PERF_ALLREDUCE, .dtype = INCCL_FLOAT32, .op = INCCL_SUM, .root = 0,
		.min_bytes = 1 << 10, .max_bytes = 16 << 20, .factor = 2, .iters = 5, .warmup = 1,
		.rank = -1, .nranks = -1, .format = PERF_TEXT, .barrier_delay_ms = PERF_BARRIER_DELAY_MS,
	};
}

/** Apply option -@flag with @val to @o. */
static enum perf_parse_result set_option(struct perf_opts *o, char flag, const char *val, char *err, size_t errlen)
{
	int i;

	switch (flag) {
	case 'C':
		if ((i = find_name(val, coll_names, PERF_NCOLLS)) < 0)
			return fail(err, errlen,
				    "unknown collective '%s' (allreduce, reduce, broadcast, barrier, allgather, reducescatter, "
				    "alltoall)", val);
		o->coll = (enum perf_coll)i;
		return PERF_PARSE_OK;
	case 'd':
		if ((i = find_name(val, dtype_names, PERF_NDTYPES)) < 0)
			return fail(err, errlen,
				    "unknown dtype '%s' (int32, uint32, int64, uint64, float16, bfloat16, float32, float64)",
				    val);
		o->dtype = (enum inccl_dtype)i;
		return PERF_PARSE_OK;
	case 'o':
		if ((i = find_name(val, op_names, 3)) < 0)
			return fail(err, errlen, "unknown op '%s' (sum, max, min)", val);
		o->op = (enum inccl_op)(INCCL_SUM + i);
		return PERF_PARSE_OK;
	case 'A':
		if ((i = find_name(val, algo_names, 2)) < 0)
			return fail(err, errlen, "unknown algorithm '%s' (inc, ring)", val);
		o->algorithm = (enum inccl_algo)i;
		return PERF_PARSE_OK;
	case 'F':
		if ((i = find_name(val, format_names, 3)) < 0)
			return fail(err, errlen, "unknown format '%s' (text, csv, json)", val);
		o->format = (enum perf_format)i;
		return PERF_PARSE_OK;
	case 'b':
	case 'e': {
		size_t bytes;
		if (perf_parse_size(val, &bytes) || bytes == 0)
			return fail(err, errlen, "-%c: bad size '%s' (a positive number of bytes, optionally with K, M or G)",
				    flag, val);
		*(flag == 'b' ? &o->min_bytes : &o->max_bytes) = bytes;
		return PERF_PARSE_OK;
	}
	case 'f':
		if (perf_parse_int(val, 1, 1 << 20, &i))
			return fail(err, errlen, "-f: bad factor '%s' (an integer >= 1)", val);
		o->factor = (size_t)i;
		return PERF_PARSE_OK;
	case 'R':
		if (perf_parse_int(val, 0, PERF_MAX_NRANKS - 1, &o->root))
			return fail(err, errlen, "-R: bad root '%s'", val);
		return PERF_PARSE_OK;
	case 'n':
		if (perf_parse_int(val, 1, 1000000, &o->iters))
			return fail(err, errlen, "-n: bad iteration count '%s' (1..1000000)", val);
		return PERF_PARSE_OK;
	case 'w':
		if (perf_parse_int(val, 0, 1000000, &o->warmup))
			return fail(err, errlen, "-w: bad warm-up count '%s' (0..1000000)", val);
		return PERF_PARSE_OK;
	case 'r':
		if (perf_parse_int(val, 0, PERF_MAX_NRANKS - 1, &o->rank))
			return fail(err, errlen, "-r: bad rank '%s'", val);
		return PERF_PARSE_OK;
	case 'N':
		if (perf_parse_int(val, 1, PERF_MAX_NRANKS, &o->nranks))
			return fail(err, errlen, "-N: bad number of ranks '%s' (1..%d)", val, PERF_MAX_NRANKS);
		return PERF_PARSE_OK;
	case 't':
	case 'T':
		if (perf_parse_int(val, 1, 86400, &i))
			return fail(err, errlen, "-%c: bad timeout '%s' (1..86400 seconds)", flag, val);
		*(flag == 't' ? &o->timeout_ms : &o->comm_timeout_ms) = i * 1000;
		return PERF_PARSE_OK;
	case 'M':
		if (perf_parse_int(val, 1, 64, &o->message))
			return fail(err, errlen, "-M: bad message size '%s' (1..64 packets)", val);
		return PERF_PARSE_OK;
	case 'W':
		if (perf_parse_int(val, 1, 16384, &o->window))
			return fail(err, errlen, "-W: bad window '%s' (1..16384 packets)", val);
		return PERF_PARSE_OK;
	case 'D':
		if (perf_parse_int(val, 0, PERF_MAX_DELAY_MS, &o->barrier_delay_ms))
			return fail(err, errlen, "-D: bad delay '%s' (0..%d ms)", val, PERF_MAX_DELAY_MS);
		return PERF_PARSE_OK;
	case 'm':
	case 'c':
	case 'O':
	case 'X':
		if (!*val)
			return fail(err, errlen, "-%c: empty value", flag);
		*(flag == 'm' ? &o->master : flag == 'c' ? &o->controller : flag == 'O' ? &o->out_path : &o->windows_path) = val;
		return PERF_PARSE_OK;
	default:
		return fail(err, errlen, "unknown option -%c", flag);
	}
}

/**
 * Fill *@v, if the command line left it unset (-1), from environment variable
 * @name; @what and @flag name it in the error.
 */
static enum perf_parse_result from_env(int *v, const char *name, const char *what, char flag, long min, long max,
				       char *err, size_t errlen)
{
	const char *s = getenv(name);

	if (*v >= 0)
		return PERF_PARSE_OK;
	if (!s)
		return fail(err, errlen, "%s unknown: give -%c or set %s", what, flag, name);
	if (perf_parse_int(s, min, max, v))
		return fail(err, errlen, "bad %s='%s' (%ld..%ld)", name, s, min, max);
	return PERF_PARSE_OK;
}

/** Check the options against each other. */
static enum perf_parse_result validate(const struct perf_opts *o, char *err, size_t errlen)
{
	char a[32], b[32];

	if (o->rank >= o->nranks)
		return fail(err, errlen, "rank %d is not a rank of 0..%d", o->rank, o->nranks - 1);
	if (o->root >= o->nranks)
		return fail(err, errlen, "root %d is not a rank of 0..%d", o->root, o->nranks - 1);
	if (o->algorithm == INCCL_ALGO_RING && o->coll == PERF_REDUCE)
		return fail(err, errlen, "the ring baseline has no reduce (every other collective)");
	if (o->coll != PERF_BARRIER && o->coll != PERF_BROADCAST && o->coll != PERF_ALLGATHER &&
	    o->coll != PERF_ALLTOALL && o->nranks > perf_max_nranks(o->dtype))
		return fail(err, errlen, "%s sums of %d ranks are not exact for the input pattern (at most %d ranks)",
			    perf_dtype_name(o->dtype), o->nranks, perf_max_nranks(o->dtype));
	if (o->coll == PERF_BARRIER && o->comm_timeout_ms && o->barrier_delay_ms >= o->comm_timeout_ms)
		return fail(err, errlen, "-D %d ms is not below -T (%d s): the ranks waiting for the late one would time out",
			    o->barrier_delay_ms, o->comm_timeout_ms / 1000);
	if (o->coll == PERF_BARRIER)
		return PERF_PARSE_OK; /* moves no data: sizes do not matter */
	if (o->min_bytes > o->max_bytes)
		return fail(err, errlen, "MIN (%s) is larger than MAX (%s)", perf_format_size(o->min_bytes, a, sizeof(a)),
			    perf_format_size(o->max_bytes, b, sizeof(b)));
	if (o->factor < 2 && o->min_bytes != o->max_bytes)
		return fail(err, errlen, "factor %zu would never reach MAX: give -f 2 or more", o->factor);
	return PERF_PARSE_OK;
}

/* Options that take a value; -v and -h take none. */
#define VALUE_FLAGS "CbefdoRnwrNmctTWMADFOX"

enum perf_parse_result perf_parse_args(int argc, char *const argv[], struct perf_opts *o, char *err, size_t errlen)
{
	set_defaults(o);
	snprintf(err, errlen, "%s", "");
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		if (!strcmp(arg, "-h") || !strcmp(arg, "--help"))
			return PERF_PARSE_HELP;
		if (!strcmp(arg, "-v")) {
			o->verbose = 1;
			continue;
		}
		if (arg[0] != '-' || !arg[1] || !strchr(VALUE_FLAGS, arg[1]))
			return fail(err, errlen, arg[0] == '-' ? "unknown option '%s'" : "unexpected argument '%s'", arg);
		const char *val = arg[2] ? arg + 2 : i + 1 < argc ? argv[++i] : NULL;
		if (!val)
			return fail(err, errlen, "option %s needs a value", arg);
		if (set_option(o, arg[1], val, err, errlen))
			return PERF_PARSE_ERROR;
	}
	if (from_env(&o->rank, "INCCL_RANK", "rank", 'r', 0, PERF_MAX_NRANKS - 1, err, errlen) ||
	    from_env(&o->nranks, "INCCL_NRANKS", "number of ranks", 'N', 1, PERF_MAX_NRANKS, err, errlen))
		return PERF_PARSE_ERROR;
	return validate(o, err, errlen);
}

int perf_window_line(FILE *f, int rank, int warmup, size_t bytes, int iter, int64_t start_ns, int64_t end_ns,
		     int64_t intr, int64_t pkts)
{
	return fprintf(f, "%d,%s,%zu,%d,%lld,%lld,%lld,%lld\n", rank, warmup ? "warmup" : "timed", bytes, iter,
		       (long long)start_ns, (long long)end_ns, (long long)intr, (long long)pkts) < 0 ? -1 : 0;
}

/* ---- report ------------------------------------------------------------------ */

/* Fields that do not apply (root of allreduce, op of broadcast, ...) are "-"
 * in text and CSV, null in JSON. */
static int has_root(const struct perf_opts *o) { return o->coll == PERF_REDUCE || o->coll == PERF_BROADCAST; }
static int has_op(const struct perf_opts *o)
{
	return o->coll == PERF_ALLREDUCE || o->coll == PERF_REDUCE || o->coll == PERF_REDUCESCATTER;
}
static int has_data(const struct perf_opts *o) { return o->coll != PERF_BARRIER; }

/** Print "-" / "" / null (by format) when !@applies, else the string @s. */
static void put_str(struct perf_report *rep, int applies, const char *s)
{
	if (applies)
		fprintf(rep->f, rep->o->format == PERF_JSON ? "\"%s\"" : "%s", s);
	else
		fputs(rep->o->format == PERF_JSON ? "null" : "-", rep->f);
}

/** Like put_str() for a number printed with two decimals. */
static void put_num(struct perf_report *rep, int applies, double v)
{
	if (applies)
		fprintf(rep->f, "%.2f", v);
	else
		put_str(rep, 0, NULL);
}

/** Like put_str() for the root rank. */
static void put_root(struct perf_report *rep)
{
	if (has_root(rep->o))
		fprintf(rep->f, "%d", rep->o->root);
	else
		put_str(rep, 0, NULL);
}

void perf_report_begin(struct perf_report *rep, FILE *f, const struct perf_opts *o)
{
	char note[32];

	snprintf(note, sizeof(note), " (rank %d)", o->rank);
	perf_report_begin_as(rep, f, o, "inccl_perf", perf_algo_name(o->algorithm), note);
}

void perf_report_begin_as(struct perf_report *rep, FILE *f, const struct perf_opts *o, const char *prog,
			  const char *label, const char *note)
{
	*rep = (struct perf_report){ .f = f, .o = o, .label = label };
	switch (o->format) {
	case PERF_TEXT:
		fprintf(f, "# %s: algorithm %s, collective %s, dtype ", prog, label, perf_coll_name(o->coll));
		put_str(rep, has_data(o), perf_dtype_name(o->dtype));
		fputs(", op ", f);
		put_str(rep, has_op(o), perf_op_name(o->op));
		fputs(", root ", f);
		put_root(rep);
		fprintf(f, ", nranks %d, iterations %d, warm-up %d%s\n", o->nranks, o->iters, o->warmup, note);
		fprintf(f, "# %12s %12s %12s %12s %12s %10s %12s\n", "bytes", "elements", "time_us", "algbw_MB/s",
			"busbw_MB/s", "wrong", "time_max_us");
		break;
	case PERF_CSV:
		fputs(PERF_CSV_HEADER "\n", f);
		break;
	case PERF_JSON:
		fputs("[\n", f);
		break;
	}
	fflush(f);
}

/** The text line of @row. */
static void row_text(struct perf_report *rep, const struct perf_row *row, double algbw, double busbw)
{
	const char *na = "-";

	fprintf(rep->f, "  %12zu %12zu %12.2f ", row->bytes, row->elements, row->time_us);
	if (has_data(rep->o))
		fprintf(rep->f, "%12.2f %12.2f ", algbw, busbw);
	else
		fprintf(rep->f, "%12s %12s ", na, na);
	fprintf(rep->f, "%10llu %12.2f\n", (unsigned long long)row->wrong, row->time_max_us);
}

/** Start field @key of a CSV record or JSON object: the separator, then the key in JSON. */
static void put_key(struct perf_report *rep, const char *key, int first)
{
	int json = rep->o->format == PERF_JSON;

	if (!first)
		fputs(json ? ", " : ",", rep->f);
	if (json)
		fprintf(rep->f, "\"%s\": ", key);
}

/** The CSV record or the JSON object of @row, fields in the order of the CSV header. */
static void row_record(struct perf_report *rep, const struct perf_row *row, double algbw, double busbw)
{
	const struct perf_opts *o = rep->o;
	int json = o->format == PERF_JSON;

	if (json)
		fprintf(rep->f, "%s  {", rep->rows ? ",\n" : "");
	put_key(rep, "algorithm", 1);
	put_str(rep, 1, rep->label);
	put_key(rep, "collective", 0);
	put_str(rep, 1, perf_coll_name(o->coll));
	put_key(rep, "dtype", 0);
	put_str(rep, has_data(o), perf_dtype_name(o->dtype));
	put_key(rep, "op", 0);
	put_str(rep, has_op(o), perf_op_name(o->op));
	put_key(rep, "root", 0);
	put_root(rep);
	put_key(rep, "nranks", 0);
	fprintf(rep->f, "%d", o->nranks);
	put_key(rep, "bytes", 0);
	fprintf(rep->f, "%zu", row->bytes);
	put_key(rep, "elements", 0);
	fprintf(rep->f, "%zu", row->elements);
	put_key(rep, "iters", 0);
	fprintf(rep->f, "%d", row->iters);
	put_key(rep, "time_us", 0);
	fprintf(rep->f, "%.2f", row->time_us);
	put_key(rep, "algbw_MBps", 0);
	put_num(rep, has_data(o), algbw);
	put_key(rep, "busbw_MBps", 0);
	put_num(rep, has_data(o), busbw);
	put_key(rep, "wrong", 0);
	fprintf(rep->f, "%llu", (unsigned long long)row->wrong);
	put_key(rep, "time_max_us", 0);
	fprintf(rep->f, "%.2f%s", row->time_max_us, json ? "}" : "\n");
}

void perf_report_row(struct perf_report *rep, const struct perf_row *row)
{
	double algbw = perf_algbw_MBps(row->bytes, row->time_us);
	double busbw = perf_busbw_MBps(rep->o->coll, rep->o->nranks, algbw);

	if (rep->o->format == PERF_TEXT)
		row_text(rep, row, algbw, busbw);
	else
		row_record(rep, row, algbw, busbw);
	rep->rows++;
	rep->wrong += row->wrong;
	rep->busbw_sum += busbw;
	fflush(rep->f);
}

void perf_report_end(struct perf_report *rep, int complete)
{
	switch (rep->o->format) {
	case PERF_TEXT:
		if (!complete)
			fputs("# incomplete: a call failed (see the errors)\n", rep->f);
		fprintf(rep->f, "# wrong elements: %llu%s\n", (unsigned long long)rep->wrong, rep->wrong ? "  FAILED" : "");
		if (has_data(rep->o) && rep->rows)
			fprintf(rep->f, "# average busbw: %.2f MB/s\n", rep->busbw_sum / rep->rows);
		break;
	case PERF_CSV:
		break;
	case PERF_JSON:
		fputs(rep->rows ? "\n]\n" : "]\n", rep->f);
		break;
	}
	fflush(rep->f);
}

/* ---- input pattern and verification ----------------------------------------- */

/*
 * A hash of (rank, element index): which rank holds the largest value changes
 * from element to element, so MAX/MIN results that come from one rank only,
 * or from the wrong element, are caught.
 */
static inline uint32_t mix(int rank, size_t i)
{
	uint64_t i64 = (uint64_t)i;
	uint32_t x = (uint32_t)i64 ^ (uint32_t)(i64 >> 32) * 0x27d4eb2fu;

	x = x * 0x9e3779b1u ^ ((uint32_t)rank + 0x632be5abu) * 0x85ebca77u;
	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	x ^= x >> 12;
	return x;
}

/*
 * Inputs are small integers taken from the hash, of a range per dtype so
 * that the sums of every rank's element are exact in any order and the
 * switches' order of additions does not matter; expectations are computed
 * on these integers (int64 arithmetic):
 * - int32 in [-2^19, 2^19): sums of PERF_MAX_NRANKS ranks fit an int32;
 *   uint32 in [0, 2^20) (sums may wrap, checked modulo 2^32);
 * - int64 and uint64: those times 1048583 (a prime above 2^20, so the
 *   high bytes take part), sums far from 2^63;
 * - float32 and float64: the integers of [-2048, 2048) divided by 8, every
 *   partial sum of up to 8192 ranks exact;
 * - float16: the integers of [-8, 8): partial sums within 2^11 (exact in
 *   float16's 11 bits) for up to 256 ranks;
 * - bfloat16: the integers of [-2, 2): partial sums within 2^8 for up to
 *   128 ranks (perf_max_nranks()).
 */
#define I32_SHIFT 12
#define I32_BIAS (1 << 19)
#define I64_SCALE 1048583
#define F32_SHIFT 20
#define F32_BIAS 2048
#define F16_SHIFT 28 /* 4 bits: [-8, 8) */
#define F16_BIAS 8
#define BF16_SHIFT 30 /* 2 bits: [-2, 2) */
#define BF16_BIAS 2

int perf_max_nranks(enum inccl_dtype dtype)
{
	return dtype == INCCL_FLOAT16 ? 256 : dtype == INCCL_BFLOAT16 ? 128 : PERF_MAX_NRANKS;
}

/** The integer behind element @i of rank @rank's input (of dtype @dtype). */
static inline int64_t raw_input(enum inccl_dtype dtype, int rank, size_t i)
{
	uint32_t h = mix(rank, i);

	switch (dtype) {
	case INCCL_INT32: return (int32_t)(h >> I32_SHIFT) - I32_BIAS;
	case INCCL_UINT32: return h >> I32_SHIFT;
	case INCCL_INT64: return ((int64_t)(h >> I32_SHIFT) - I32_BIAS) * I64_SCALE;
	case INCCL_UINT64: return (int64_t)(h >> I32_SHIFT) * I64_SCALE;
	case INCCL_FLOAT16: return (int32_t)(h >> F16_SHIFT) - F16_BIAS;
	case INCCL_BFLOAT16: return (int32_t)(h >> BF16_SHIFT) - BF16_BIAS;
	case INCCL_FLOAT32:
	case INCCL_FLOAT64: break;
	}
	return (int32_t)(h >> F32_SHIFT) - F32_BIAS;
}

/** The value of integer @raw of @dtype: floats 32/64 in eighths, everything else the integer itself. */
static inline double raw_value(enum inccl_dtype dtype, int64_t raw)
{
	return dtype == INCCL_FLOAT32 || dtype == INCCL_FLOAT64 ? (double)raw / 8.0 : (double)raw;
}

int32_t perf_input_i32(int rank, size_t i)
{
	return (int32_t)raw_input(INCCL_INT32, rank, i);
}

float perf_input_f32(int rank, size_t i)
{
	return (float)raw_input(INCCL_FLOAT32, rank, i) / 8.0f;
}

/** The host-order bits of value @raw of @dtype (exact in it; zero-extended to 64 bits). */
static inline uint64_t raw_bits(enum inccl_dtype dtype, int64_t raw)
{
	switch (dtype) {
	case INCCL_INT32:
	case INCCL_UINT32: return (uint32_t)raw;
	case INCCL_INT64:
	case INCCL_UINT64: return (uint64_t)raw;
	case INCCL_FLOAT32: return inc_f32_bits((float)raw_value(dtype, raw));
	case INCCL_FLOAT64: return inc_f64_bits(raw_value(dtype, raw));
	case INCCL_FLOAT16: return inc_f32_to_f16((float)raw);  /* exact: small integers */
	case INCCL_BFLOAT16: return inc_f32_to_bf16((float)raw);
	}
	return 0;
}

void perf_fill(void *buf, size_t count, enum inccl_dtype dtype, int rank)
{
	uint8_t *p = buf;
	size_t w = perf_dtype_size(dtype);

	for (size_t i = 0; i < count; i++, p += w)
		inc_elem_put(p, raw_bits(dtype, raw_input(dtype, rank, i)), w);
}

/** SUM of the integers behind element @i of ranks 0..@nranks-1 (no overflow, see above). */
static inline int64_t raw_sum(enum inccl_dtype dtype, int nranks, size_t i)
{
	int64_t sum = 0;

	for (int r = 0; r < nranks; r++)
		sum += raw_input(dtype, r, i);
	return sum;
}

/** MAX (@want_max) or MIN of the integers behind element @i of ranks 0..@nranks-1. */
static inline int64_t raw_extreme(enum inccl_dtype dtype, int want_max, int nranks, size_t i)
{
	int64_t best = raw_input(dtype, 0, i);

	for (int r = 1; r < nranks; r++) {
		int64_t v = raw_input(dtype, r, i);
		best = want_max ? (v > best ? v : best) : (v < best ? v : best);
	}
	return best;
}

/** Whether the element at @p (of @dtype) is the one whose integer is @raw: integers by their bits
 * (sums modulo 2^width), floats by value (-0 equals 0; a NaN never matches). */
static inline int matches(const uint8_t *p, enum inccl_dtype dtype, int64_t raw)
{
	switch (dtype) {
	case INCCL_INT32:
	case INCCL_UINT32: {
		uint32_t got;
		memcpy(&got, p, sizeof(got));
		return got == (uint32_t)raw;
	}
	case INCCL_INT64:
	case INCCL_UINT64: {
		uint64_t got;
		memcpy(&got, p, sizeof(got));
		return got == (uint64_t)raw;
	}
	case INCCL_FLOAT32: {
		float got;
		memcpy(&got, p, sizeof(got));
		return got == (float)raw / 8.0f;
	}
	case INCCL_FLOAT64: {
		double got;
		memcpy(&got, p, sizeof(got));
		return got == (double)raw / 8.0;
	}
	case INCCL_FLOAT16:
	case INCCL_BFLOAT16: {
		uint16_t got;
		memcpy(&got, p, sizeof(got));
		return (dtype == INCCL_FLOAT16 ? inc_f16_to_f32(got) : inc_bf16_to_f32(got)) == (float)raw;
	}
	}
	return 0;
}

/*
 * One loop per dtype and operator (the constant arguments of the inline
 * helpers fold away): the check of 2 GiB must not take much longer than
 * moving it.
 */
#define COUNT_WRONG(dtype, expr)                                               \
	for (size_t j = 0, i = first; j < count; j++, i++)                     \
		wrong += !matches(p + j * perf_dtype_size(dtype), dtype, (expr))

/* REDUCED_CASE() - the case of @T in perf_count_wrong_reduced(): its operator's loop. */
#define REDUCED_CASE(T)                                                        \
	case T:                                                                \
		if (op == INCCL_SUM)                                           \
			COUNT_WRONG(T, raw_sum(T, nranks, i));                 \
		else                                                           \
			COUNT_WRONG(T, raw_extreme(T, op == INCCL_MAX, nranks, i)); \
		break;

/* count_wrong_reduced(), count_wrong_input() - as the public ones, for elements @first.. of the inputs */
static size_t count_wrong_reduced(const void *buf, size_t count, enum inccl_dtype dtype, enum inccl_op op, int nranks,
				  size_t first)
{
	const uint8_t *p = buf;
	size_t wrong = 0;

	switch (dtype) { /* integer SUM wraps modulo 2^width like the switch: matches() compares the low bits */
		REDUCED_CASE(INCCL_INT32)
		REDUCED_CASE(INCCL_UINT32)
		REDUCED_CASE(INCCL_INT64)
		REDUCED_CASE(INCCL_UINT64)
		REDUCED_CASE(INCCL_FLOAT16)
		REDUCED_CASE(INCCL_BFLOAT16)
		REDUCED_CASE(INCCL_FLOAT32)
		REDUCED_CASE(INCCL_FLOAT64)
	}
	return wrong;
}

/* INPUT_CASE() - the case of @T in count_wrong_input(). */
#define INPUT_CASE(T)                                                          \
	case T:                                                                \
		COUNT_WRONG(T, raw_input(T, rank, i));                         \
		break;

static size_t count_wrong_input(const void *buf, size_t count, enum inccl_dtype dtype, int rank, size_t first)
{
	const uint8_t *p = buf;
	size_t wrong = 0;

	switch (dtype) {
		INPUT_CASE(INCCL_INT32)
		INPUT_CASE(INCCL_UINT32)
		INPUT_CASE(INCCL_INT64)
		INPUT_CASE(INCCL_UINT64)
		INPUT_CASE(INCCL_FLOAT16)
		INPUT_CASE(INCCL_BFLOAT16)
		INPUT_CASE(INCCL_FLOAT32)
		INPUT_CASE(INCCL_FLOAT64)
	}
	return wrong;
}

#undef COUNT_WRONG
#undef REDUCED_CASE
#undef INPUT_CASE

size_t perf_count_wrong_reduced(const void *buf, size_t count, enum inccl_dtype dtype, enum inccl_op op,
				int nranks)
{
	return count_wrong_reduced(buf, count, dtype, op, nranks, 0);
}

size_t perf_count_wrong_input(const void *buf, size_t count, enum inccl_dtype dtype, int rank)
{
	return count_wrong_input(buf, count, dtype, rank, 0);
}

/* fill_at() - @count elements of rank @rank's input from element @first on into @buf. */
static void fill_at(void *buf, size_t count, enum inccl_dtype dtype, int rank, size_t first)
{
	uint8_t *p = buf;
	size_t w = perf_dtype_size(dtype);

	for (size_t i = first; i < first + count; i++, p += w)
		inc_elem_put(p, raw_bits(dtype, raw_input(dtype, rank, i)), w);
}

#define PERF_NOT_A_RANK (-1) /* allgather's blocks to be overwritten hold this "rank's" input */

void perf_fill_blocks(const struct perf_opts *o, void *buf, size_t count)
{
	size_t blk = count / (size_t)o->nranks;
	uint8_t *p = buf;

	if (o->coll != PERF_ALLGATHER) {
		fill_at(buf, count, o->dtype, o->rank, 0);
		return;
	}
	for (int b = 0; b < o->nranks; b++)
		fill_at(p + (size_t)b * blk * perf_dtype_size(o->dtype), blk, o->dtype, b == o->rank ? b : PERF_NOT_A_RANK, 0);
}

size_t perf_count_wrong_blocks(const struct perf_opts *o, const void *res, size_t count)
{
	size_t blk = count / (size_t)o->nranks, wrong = 0;
	const uint8_t *p = res;

	if (o->coll == PERF_REDUCESCATTER)
		return count_wrong_reduced(res, blk, o->dtype, o->op, o->nranks, (size_t)o->rank * blk);
	for (int b = 0; b < o->nranks; b++)
		wrong += count_wrong_input(p + (size_t)b * blk * perf_dtype_size(o->dtype), blk, o->dtype, b,
					   o->coll == PERF_ALLTOALL ? (size_t)o->rank * blk : 0);
	return wrong;
}

/* ---- tally of wrong counts --------------------------------------------------- */

#define TALLY_BITS 15
#define TALLY_MASK ((1u << TALLY_BITS) - 1)

void perf_tally_encode(uint64_t wrong, int rank, int32_t v[PERF_TALLY_LEN])
{
	const uint64_t max = (1ull << (3 * TALLY_BITS)) - 1;

	if (wrong > max)
		wrong = max;
	for (int k = 0; k < 3; k++)
		v[k] = (int32_t)((wrong >> (k * TALLY_BITS)) & TALLY_MASK);
	v[3] = 1;
	v[4] = rank;
}

int perf_tally_decode(const int32_t v[PERF_TALLY_LEN], int nranks, uint64_t *total)
{
	uint64_t sum = 0;

	if (nranks < 1 || nranks > PERF_MAX_NRANKS || v[3] != nranks ||
	    (int64_t)v[4] != (int64_t)nranks * (nranks - 1) / 2)
		return -1;
	for (int k = 0; k < 3; k++) {
		if (v[k] < 0 || (int64_t)v[k] > (int64_t)nranks * TALLY_MASK)
			return -1;
		sum += (uint64_t)v[k] << (k * TALLY_BITS);
	}
	*total = sum;
	return 0;
}
