/*
 * test_perf_opts.c — the network-free parts of inccl_perf (hostlib/tools/
 * perf_opts.c), cmocka: command line, sizes and the sweep, bandwidth
 * formulas, the report in text/CSV/JSON, the input pattern and its checks,
 * and the wrong-count tally. Collectives are simulated here in plain C.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../proto/inc_elem.h"
#include "perf_opts.h"

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])))

/** Parse @argv (without environment defaults unless the test set them). */
static enum perf_parse_result parse(int argc, char *const argv[], struct perf_opts *o, char *err)
{
	return perf_parse_args(argc, argv, o, err, 256);
}

static int setup_env(void **state)
{
	unsetenv("INCCL_RANK");
	unsetenv("INCCL_NRANKS");
	return 0;
}

static void test_parse_size(void **state)
{
	static const char *const bad[] = { "", "K", "-1", "+1", " 1", "1X", "1KB", "1.5K", "1 K", "0x10",
					   "99999999999999999999", "17179869184G" };
	size_t v;

	assert_int_equal(perf_parse_size("4096", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(perf_parse_size("1K", &v), 0);
	assert_int_equal(v, 1024);
	assert_int_equal(perf_parse_size("1k", &v), 0);
	assert_int_equal(v, 1024);
	assert_int_equal(perf_parse_size("512M", &v), 0);
	assert_int_equal(v, (size_t)512 << 20);
	assert_int_equal(perf_parse_size("2G", &v), 0);
	assert_int_equal(v, (size_t)2 << 30);
	assert_int_equal(perf_parse_size("0", &v), 0); /* the option refuses it, the parser not */
	assert_int_equal(v, 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(perf_parse_size(bad[i], &v), -1);
	assert_int_equal(perf_parse_size(NULL, &v), -1);
}

static void test_round_bytes(void **state)
{
	const enum inccl_dtype I = INCCL_INT32;

	assert_int_equal(perf_round_bytes(0, I), 4);
	assert_int_equal(perf_round_bytes(1, I), 4);
	assert_int_equal(perf_round_bytes(3, I), 4);
	assert_int_equal(perf_round_bytes(4, I), 4);
	assert_int_equal(perf_round_bytes(7, I), 4);
	assert_int_equal(perf_round_bytes(8, I), 8);
	assert_int_equal(perf_round_bytes(1023, I), 1020);
	assert_int_equal(perf_round_bytes((size_t)2 << 30, I), (size_t)2 << 30);
	/* the type's width */
	assert_int_equal(perf_round_bytes(1, INCCL_FLOAT16), 2);
	assert_int_equal(perf_round_bytes(1023, INCCL_BFLOAT16), 1022);
	assert_int_equal(perf_round_bytes(1, INCCL_INT64), 8);
	assert_int_equal(perf_round_bytes(1023, INCCL_FLOAT64), 1016);
	assert_int_equal(perf_round_bytes(1023, INCCL_UINT32), 1020);
	static const size_t w[PERF_NDTYPES] = { 4, 4, 4, 8, 8, 2, 2, 8 };
	for (int t = 0; t < PERF_NDTYPES; t++)
		assert_int_equal(perf_dtype_size((enum inccl_dtype)t), w[t]);
}

/** The sweep of MIN..MAX by FACTOR for allreduce. */
static size_t sweep(size_t min, size_t max, size_t factor, size_t sizes[PERF_MAX_SIZES])
{
	struct perf_opts o = { .coll = PERF_ALLREDUCE, .min_bytes = min, .max_bytes = max, .factor = factor };

	return perf_sweep(&o, sizes);
}

static void test_sweep(void **state)
{
	size_t s[PERF_MAX_SIZES], n;

	n = sweep(1 << 10, (size_t)512 << 20, 2, s); /* -b 1K -e 512M -f 2 */
	assert_int_equal(n, 20);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(s[i], (size_t)1024 << i);

	n = sweep(1, 16, 2, s); /* 1, 2 and 4 all round to one element */
	assert_int_equal(n, 3);
	assert_int_equal(s[0], 4);
	assert_int_equal(s[1], 8);
	assert_int_equal(s[2], 16);

	n = sweep(3 << 10, 10 << 10, 2, s); /* MAX off the grid is not added */
	assert_int_equal(n, 2);
	assert_int_equal(s[0], 3072);
	assert_int_equal(s[1], 6144);

	n = sweep(1001, 1001, 1, s); /* one size, rounded down */
	assert_int_equal(n, 1);
	assert_int_equal(s[0], 1000);

	n = sweep((size_t)2 << 30, (size_t)2 << 30, 2, s); /* 2 GiB = 536,870,912 elements */
	assert_int_equal(n, 1);
	assert_int_equal(s[0] / 4, 536870912);

	n = sweep(1, SIZE_MAX, 2, s); /* 4, 8, ... up to the top bit, then stops before overflowing */
	assert_int_equal(n, sizeof(size_t) * 8 - 2);
	assert_int_equal(s[0], 4);
	for (size_t i = 1; i < n; i++)
		assert_int_equal(s[i], 2 * s[i - 1]);
	assert_int_equal(s[n - 1], SIZE_MAX / 2 + 1);

	n = sweep(100, 1000, 3, s);
	assert_int_equal(n, 3);
	assert_int_equal(s[2], 900);

	struct perf_opts barrier = { .coll = PERF_BARRIER, .min_bytes = 1, .max_bytes = 1 << 20, .factor = 2 };
	assert_int_equal(perf_sweep(&barrier, s), 1);
	assert_int_equal(s[0], 0);
}

static void test_bandwidth(void **state)
{
	double alg = perf_algbw_MBps(1000000, 1e6); /* 1 MB in 1 s */

	assert_true(fabs(alg - 1.0) < 1e-12);
	assert_true(fabs(perf_algbw_MBps((size_t)2 << 30, 1e6) - 2147.483648) < 1e-9);
	assert_true(perf_algbw_MBps(1024, 0) == 0);
	assert_true(fabs(perf_busbw_MBps(PERF_ALLREDUCE, 4, 100) - 150) < 1e-12); /* 2 * 3/4 */
	assert_true(fabs(perf_busbw_MBps(PERF_ALLREDUCE, 2, 100) - 100) < 1e-12);
	assert_true(perf_busbw_MBps(PERF_ALLREDUCE, 1, 100) == 0);
	assert_true(perf_busbw_MBps(PERF_REDUCE, 8, 100) == 100);
	assert_true(perf_busbw_MBps(PERF_BROADCAST, 8, 100) == 100);
	assert_true(perf_busbw_MBps(PERF_BARRIER, 8, 100) == 0);
	/* nccl-tests: AllGather, ReduceScatter, AllToAll move (n-1)/n of the buffer per rank */
	assert_true(fabs(perf_busbw_MBps(PERF_ALLGATHER, 4, 100) - 75) < 1e-12);
	assert_true(fabs(perf_busbw_MBps(PERF_REDUCESCATTER, 8, 100) - 87.5) < 1e-12);
	assert_true(fabs(perf_busbw_MBps(PERF_ALLTOALL, 2, 100) - 50) < 1e-12);
	assert_true(perf_busbw_MBps(PERF_ALLTOALL, 1, 100) == 0);
}

static void test_format_size(void **state)
{
	char b[32];

	assert_string_equal(perf_format_size(100, b, sizeof(b)), "100 B");
	assert_string_equal(perf_format_size(1024, b, sizeof(b)), "1 KiB");
	assert_string_equal(perf_format_size(1536, b, sizeof(b)), "1.5 KiB");
	assert_string_equal(perf_format_size((size_t)512 << 20, b, sizeof(b)), "512 MiB");
	assert_string_equal(perf_format_size((size_t)2 << 30, b, sizeof(b)), "2 GiB");
}

static void test_parse_defaults_and_env(void **state)
{
	char *argv[] = { "inccl_perf" }, err[256];
	struct perf_opts o;

	assert_int_equal(parse(ARGC(argv), argv, &o, err), PERF_PARSE_ERROR);
	assert_non_null(strstr(err, "INCCL_RANK"));
	setenv("INCCL_RANK", "2", 1);
	assert_int_equal(parse(ARGC(argv), argv, &o, err), PERF_PARSE_ERROR);
	assert_non_null(strstr(err, "INCCL_NRANKS"));
	setenv("INCCL_NRANKS", "4", 1);
	assert_int_equal(parse(ARGC(argv), argv, &o, err), PERF_PARSE_OK);
	assert_int_equal(o.rank, 2);
	assert_int_equal(o.nranks, 4);
	assert_int_equal(o.coll, PERF_ALLREDUCE);
	assert_int_equal(o.dtype, INCCL_FLOAT32);
	assert_int_equal(o.op, INCCL_SUM);
	assert_int_equal(o.iters, 5);
	assert_int_equal(o.warmup, 1);
	assert_int_equal(o.root, 0);
	assert_int_equal(o.format, PERF_TEXT);
	assert_null(o.master);
	assert_null(o.controller);
	assert_null(o.out_path);
	assert_null(o.windows_path); /* -X off: no windows file */
	assert_int_equal(o.timeout_ms, 0);
	assert_int_equal(o.comm_timeout_ms, 0);
	assert_int_equal(o.verbose, 0);

	char *given[] = { "inccl_perf", "-r", "0", "-N", "3" }; /* the command line wins */
	assert_int_equal(parse(ARGC(given), given, &o, err), PERF_PARSE_OK);
	assert_int_equal(o.rank, 0);
	assert_int_equal(o.nranks, 3);

	setenv("INCCL_RANK", "4", 1); /* not a rank of 0..3 */
	assert_int_equal(parse(ARGC(argv), argv, &o, err), PERF_PARSE_ERROR);
	assert_non_null(strstr(err, "rank 4"));
	setenv("INCCL_RANK", "x", 1);
	assert_int_equal(parse(ARGC(argv), argv, &o, err), PERF_PARSE_ERROR);
	assert_non_null(strstr(err, "INCCL_RANK='x'"));
}

static void test_parse_everything(void **state)
{
	char *argv[] = { "inccl_perf", "-C", "reduce", "-b1K", "-e", "512M", "-f", "4", "-d", "int32", "-o", "max",
			 "-R", "3", "-n", "7", "-w", "0", "-r", "1", "-N", "4", "-m", "10.0.0.1:5000", "-c", "ctl",
			 "-t", "30", "-T", "600", "-F", "json", "-O", "out.json", "-X", "win.csv", "-v" }, err[256];
	struct perf_opts o;

	assert_int_equal(parse(ARGC(argv), argv, &o, err), PERF_PARSE_OK);
	assert_int_equal(o.coll, PERF_REDUCE);
	assert_int_equal(o.min_bytes, 1024);
	assert_int_equal(o.max_bytes, (size_t)512 << 20);
	assert_int_equal(o.factor, 4);
	assert_int_equal(o.dtype, INCCL_INT32);
	assert_int_equal(o.op, INCCL_MAX);
	assert_int_equal(o.root, 3);
	assert_int_equal(o.iters, 7);
	assert_int_equal(o.warmup, 0);
	assert_int_equal(o.rank, 1);
	assert_int_equal(o.nranks, 4);
	assert_string_equal(o.master, "10.0.0.1:5000");
	assert_string_equal(o.controller, "ctl");
	assert_int_equal(o.timeout_ms, 30000);
	assert_int_equal(o.comm_timeout_ms, 600000);
	assert_int_equal(o.format, PERF_JSON);
	assert_string_equal(o.out_path, "out.json");
	assert_string_equal(o.windows_path, "win.csv");
	assert_int_equal(o.verbose, 1);
	assert_int_equal(o.algorithm, INCCL_ALGO_INC);
	char *ring[] = { "inccl_perf", "-r", "0", "-N", "4", "-A", "ring" };
	assert_int_equal(parse(ARGC(ring), ring, &o, err), PERF_PARSE_OK);
	assert_int_equal(o.algorithm, INCCL_ALGO_RING);

	char *help[] = { "inccl_perf", "-C", "barrier", "-h" };
	assert_int_equal(parse(ARGC(help), help, &o, err), PERF_PARSE_HELP);
}

/** Expect @argv (after "inccl_perf -r 0 -N 4") to be refused with a reason containing @why. */
static void refused(const char *why, int argc, char *const args[])
{
	char *argv[32] = { "inccl_perf", "-r", "0", "-N", "4" }, err[256];
	struct perf_opts o;

	for (int i = 0; i < argc; i++)
		argv[5 + i] = args[i];
	assert_int_equal(parse(5 + argc, argv, &o, err), PERF_PARSE_ERROR);
	if (!strstr(err, why))
		fail_msg("reason '%s' does not say '%s'", err, why);
}

#define REFUSED(why, ...)                                                    \
	do {                                                                 \
		char *a_[] = { __VA_ARGS__ };                                \
		refused(why, ARGC(a_), a_);                                  \
	} while (0)

static void test_parse_errors(void **state)
{
	REFUSED("unknown collective 'alltogether'", "-C", "alltogether");
	REFUSED("MIN (2 MiB) is larger than MAX (1 MiB)", "-b", "2M", "-e", "1M");
	REFUSED("factor 1", "-b", "1K", "-e", "2K", "-f", "1");
	REFUSED("bad factor '0'", "-f", "0");
	REFUSED("bad factor '1.5'", "-f", "1.5");
	REFUSED("-b: bad size '1X'", "-b", "1X");
	REFUSED("-e: bad size '4KB'", "-e", "4KB");
	REFUSED("-b: bad size '0'", "-b", "0");
	REFUSED("-e: bad size '-4'", "-e", "-4");
	REFUSED("root 4 is not a rank of 0..3", "-C", "reduce", "-R", "4");
	REFUSED("bad root '-1'", "-R", "-1");
	REFUSED("unknown dtype 'float128'", "-d", "float128");
	REFUSED("unknown dtype 'half'", "-d", "half");
	REFUSED("unknown op 'prod'", "-o", "prod");
	REFUSED("unknown format 'xml'", "-F", "xml");
	REFUSED("unknown algorithm 'tree'", "-A", "tree");
	REFUSED("the ring baseline has no reduce", "-A", "ring", "-C", "reduce");
	REFUSED("bad iteration count '0'", "-n", "0");
	REFUSED("bad warm-up count '-1'", "-w", "-1");
	REFUSED("-t: bad timeout '0'", "-t", "0");
	REFUSED("-T: bad timeout 'x'", "-T", "x");
	REFUSED("unknown option '-x'", "-x");
	REFUSED("unknown option '--size'", "--size", "1K");
	REFUSED("unexpected argument 'extra'", "extra");
	REFUSED("option -n needs a value", "-n");
	REFUSED("-O: empty value", "-O", "");
	REFUSED("-X: empty value", "-X", "");
	REFUSED("option -X needs a value", "-X");
	REFUSED("rank 5 is not a rank of 0..3", "-r", "5");

	char *ok[] = { "inccl_perf", "-r", "0", "-N", "1", "-b", "4K", "-e", "4K", "-f", "1" }, err[256];
	struct perf_opts o;
	assert_int_equal(parse(ARGC(ok), ok, &o, err), PERF_PARSE_OK); /* MIN = MAX needs no factor */
	char *barrier[] = { "inccl_perf", "-r", "0", "-N", "2", "-C", "barrier", "-b", "2K", "-e", "1K" };
	assert_int_equal(parse(ARGC(barrier), barrier, &o, err), PERF_PARSE_OK); /* sizes do not matter */
	/* every dtype by name; float16/bfloat16 sums only as far as they stay exact */
	for (int t = 0; t < PERF_NDTYPES; t++) {
		char *d[] = { "inccl_perf", "-r", "0", "-N", "128", "-d", (char *)perf_dtype_name((enum inccl_dtype)t) };
		assert_int_equal(parse(ARGC(d), d, &o, err), PERF_PARSE_OK);
		assert_int_equal(o.dtype, t);
	}
	char *f16[] = { "inccl_perf", "-r", "0", "-N", "257", "-d", "float16" };
	assert_int_equal(parse(ARGC(f16), f16, &o, err), PERF_PARSE_ERROR);
	assert_non_null(strstr(err, "float16 sums of 257 ranks are not exact for the input pattern (at most 256 ranks)"));
	char *bf16[] = { "inccl_perf", "-r", "0", "-N", "129", "-d", "bfloat16", "-C", "reduce" };
	assert_int_equal(parse(ARGC(bf16), bf16, &o, err), PERF_PARSE_ERROR);
	assert_non_null(strstr(err, "at most 128 ranks"));
	char *bc[] = { "inccl_perf", "-r", "0", "-N", "129", "-d", "bfloat16", "-C", "broadcast" };
	assert_int_equal(parse(ARGC(bc), bc, &o, err), PERF_PARSE_OK); /* copies: any number */
}

/** The report of @o with @nrows rows, as one string (caller frees). */
static char *report(const struct perf_opts *o, const struct perf_row *rows, int nrows, int complete)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct perf_report rep;

	assert_non_null(f);
	perf_report_begin(&rep, f, o);
	for (int i = 0; i < nrows; i++)
		perf_report_row(&rep, &rows[i]);
	perf_report_end(&rep, complete);
	fclose(f);
	return text;
}

static const struct perf_row rows[] = {
	{ .bytes = 1024, .elements = 256, .iters = 5, .time_us = 10.0, .wrong = 0, .time_max_us = 12.5 },
	{ .bytes = 2048, .elements = 512, .iters = 5, .time_us = 16.0, .wrong = 3, .time_max_us = 16.0 },
};

/* The windows file's lines (-X): the phase by name, the times as given, to the nanosecond. */
static void test_window_lines(void **state)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);

	assert_non_null(f);
	assert_int_equal(perf_window_line(f, 3, 1, 4096, 1, 1700000000123456789LL, 1700000000223456790LL, 1234, 5000),
			 0);
	assert_int_equal(perf_window_line(f, 0, 0, (size_t)16 << 20, 12, 5, 7, -1, 0), 0);
	fclose(f);
	assert_string_equal(s, "3,warmup,4096,1,1700000000123456789,1700000000223456790,1234,5000\n"
			       "0,timed,16777216,12,5,7,-1,0\n");
	assert_string_equal(PERF_WINDOWS_HEADER, "rank,phase,bytes,iter,start_ns,end_ns,intr,pkts");
	free(s);
}

static void test_report_csv(void **state)
{
	struct perf_opts o = { .coll = PERF_ALLREDUCE, .dtype = INCCL_FLOAT32, .op = INCCL_SUM, .nranks = 4,
			       .format = PERF_CSV };
	char *s = report(&o, rows, 2, 1);

	/* time_max_us last (the slowest rank's); the bandwidths from time_us (the reporting rank's) */
	assert_string_equal(s, "algorithm,collective,dtype,op,root,nranks,bytes,elements,iters,time_us,algbw_MBps,busbw_MBps,wrong,"
			       "time_max_us\n"
			       "inc,allreduce,float32,sum,-,4,1024,256,5,10.00,102.40,153.60,0,12.50\n"
			       "inc,allreduce,float32,sum,-,4,2048,512,5,16.00,128.00,192.00,3,16.00\n");
	free(s);
	o = (struct perf_opts){ .coll = PERF_BROADCAST, .dtype = INCCL_INT32, .op = INCCL_MAX, .root = 2, .nranks = 3,
				.format = PERF_CSV, .algorithm = INCCL_ALGO_RING };
	s = report(&o, rows, 1, 1);
	assert_non_null(strstr(s, "\nring,broadcast,int32,-,2,3,1024,256,5,10.00,102.40,102.40,0,12.50\n"));
	free(s);
}

static void test_report_json(void **state)
{
	struct perf_opts o = { .coll = PERF_REDUCE, .dtype = INCCL_INT32, .op = INCCL_MIN, .root = 1, .nranks = 2,
			       .format = PERF_JSON };
	char *s = report(&o, rows, 2, 1);

	assert_string_equal(s, "[\n"
			       "  {\"algorithm\": \"inc\", \"collective\": \"reduce\", \"dtype\": \"int32\", \"op\": \"min\", \"root\": 1, "
			       "\"nranks\": 2, \"bytes\": 1024, \"elements\": 256, \"iters\": 5, \"time_us\": 10.00, "
			       "\"algbw_MBps\": 102.40, \"busbw_MBps\": 102.40, \"wrong\": 0, \"time_max_us\": 12.50},\n"
			       "  {\"algorithm\": \"inc\", \"collective\": \"reduce\", \"dtype\": \"int32\", \"op\": \"min\", \"root\": 1, "
			       "\"nranks\": 2, \"bytes\": 2048, \"elements\": 512, \"iters\": 5, \"time_us\": 16.00, "
			       "\"algbw_MBps\": 128.00, \"busbw_MBps\": 128.00, \"wrong\": 3, \"time_max_us\": 16.00}\n"
			       "]\n");
	free(s);
	s = report(&o, rows, 0, 0); /* nothing ran: still a JSON array */
	assert_string_equal(s, "[\n]\n");
	free(s);
	struct perf_row barrier = { .iters = 10, .time_us = 42.5, .time_max_us = 43.25 };
	o = (struct perf_opts){ .coll = PERF_BARRIER, .op = INCCL_SUM, .nranks = 8, .format = PERF_JSON };
	s = report(&o, &barrier, 1, 1);
	assert_string_equal(s, "[\n"
			       "  {\"algorithm\": \"inc\", \"collective\": \"barrier\", \"dtype\": null, \"op\": null, \"root\": null, "
			       "\"nranks\": 8, \"bytes\": 0, \"elements\": 0, \"iters\": 10, \"time_us\": 42.50, "
			       "\"algbw_MBps\": null, \"busbw_MBps\": null, \"wrong\": 0, \"time_max_us\": 43.25}\n"
			       "]\n");
	free(s);
}

static void test_report_text(void **state)
{
	struct perf_opts o = { .coll = PERF_ALLREDUCE, .dtype = INCCL_FLOAT32, .op = INCCL_SUM, .nranks = 4,
			       .iters = 5, .warmup = 1, .format = PERF_TEXT };
	char *s = report(&o, rows, 2, 1);

	assert_non_null(strstr(s, "# inccl_perf: algorithm inc, collective allreduce, dtype float32, op sum, root -, nranks 4, "
				  "iterations 5, warm-up 1 (rank 0)\n"));
	assert_non_null(strstr(s, "#        bytes     elements      time_us   algbw_MB/s   busbw_MB/s      wrong  time_max_us\n"));
	assert_non_null(strstr(s, "\n          1024          256        10.00       102.40       153.60          0        12.50\n"));
	assert_non_null(strstr(s, "# wrong elements: 3  FAILED\n"));
	assert_non_null(strstr(s, "# average busbw: 172.80 MB/s\n"));
	free(s);
	s = report(&o, rows, 1, 0);
	assert_non_null(strstr(s, "# incomplete"));
	free(s);
}

#define N 1031 /* elements: not a multiple of anything convenient */
#define RANKS 5

/**
 * What the switches should compute: @op over the inputs of @nranks ranks,
 * ranks taken in reverse order, with the switches' own arithmetic
 * (proto/inc_elem.h, tested against an independent reference by test_agg).
 */
static void simulate(void *out, size_t count, enum inccl_dtype dtype, enum inccl_op op, int nranks)
{
	static uint8_t in[RANKS][N * 8];
	size_t w = perf_dtype_size(dtype);

	for (int r = 0; r < nranks; r++)
		perf_fill(in[r], count, dtype, r);
	for (size_t i = 0; i < count; i++) {
		uint64_t a = inc_elem_get(in[nranks - 1] + w * i, w);
		for (int r = nranks - 2; r >= 0; r--)
			a = inc_elem_combine(a, inc_elem_get(in[r] + w * i, w), (enum inc_op)op, (enum inc_dtype)dtype);
		inc_elem_put((uint8_t *)out + w * i, a, w);
	}
}

static void test_inputs(void **state)
{
	int argmax_changes = 0, prev = -1;

	for (size_t i = 0; i < N; i++) {
		float f = perf_input_f32(3, i);
		int32_t v = perf_input_i32(3, i);
		assert_true(f >= -256 && f < 256 && f * 8 == floorf(f * 8)); /* multiples of 1/8 */
		assert_true(v >= -(1 << 19) && v < (1 << 19));
		int best = 0;
		for (int r = 1; r < RANKS; r++)
			if (perf_input_i32(r, i) > perf_input_i32(best, i))
				best = r;
		argmax_changes += prev >= 0 && best != prev;
		prev = best;
	}
	assert_true(argmax_changes > N / 2); /* MAX takes each element from a different rank */
	assert_true(perf_input_i32(0, 7) != perf_input_i32(1, 7) || perf_input_i32(0, 8) != perf_input_i32(1, 8));
	/* size_t indices past 2^32 differ from their low 32 bits */
	assert_true(perf_input_i32(0, (size_t)1 << 33) != perf_input_i32(0, 0) ||
		    perf_input_i32(0, ((size_t)1 << 33) + 1) != perf_input_i32(0, 1));
}

static void test_verify_reduced(void **state)
{
	static uint8_t buf[N * 8];

	for (int dtype = 0; dtype < PERF_NDTYPES; dtype++)
		for (int op = INCCL_SUM; op <= INCCL_MIN; op++)
			for (int nranks = 1; nranks <= RANKS; nranks++) {
				size_t w = perf_dtype_size((enum inccl_dtype)dtype);
				simulate(buf, N, dtype, op, nranks);
				assert_int_equal(perf_count_wrong_reduced(buf, N, dtype, op, nranks), 0);
				/* a result missing one rank: SUM differs almost everywhere, MAX/MIN
				 * wherever that rank holds the extreme value (about 1 in nranks + 1) */
				size_t missing = perf_count_wrong_reduced(buf, N, dtype, op, nranks + 1);
				assert_true(missing > (op == INCCL_SUM ? N / 2 : N / (4 * (size_t)(nranks + 1))));
				buf[w * 17] ^= 0x01;         /* the lowest bit of element 17 */
				buf[w * 1030 + w - 1] ^= 0x40; /* a high bit of the last (exponent, in a float) */
				if (perf_count_wrong_reduced(buf, N, dtype, op, nranks) != 2)
					fail_msg("%s %s of %d ranks: %zu wrong, not 2", perf_dtype_name(dtype),
						 perf_op_name(op), nranks, perf_count_wrong_reduced(buf, N, dtype, op, nranks));
			}
}

/** The float32 with bit pattern @bits. */
static float f32_bits(uint32_t bits)
{
	float f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}

/* A float32 check under test: perf_count_wrong_reduced() of @op over ranks
 * 0..@nranks-1, or (@input) perf_count_wrong_input() of rank @rank. */
struct f32_check {
	int input;
	enum inccl_op op;
	int nranks;
	int rank;
};

#define ZERO_SEARCH (1 << 16) /* elements searched for an expected value of exactly 0 */

/** What the check @c should find at element @i, computed here from perf_input_f32(). */
static float f32_want(const struct f32_check *c, size_t i)
{
	float a;

	if (c->input)
		return perf_input_f32(c->rank, i);
	a = perf_input_f32(0, i);
	for (int r = 1; r < c->nranks; r++) {
		float v = perf_input_f32(r, i);
		a = c->op == INCCL_SUM ? a + v : c->op == INCCL_MAX ? fmaxf(a, v) : fminf(a, v);
	}
	return a;
}

/** @c for a failure message, in @name (64 bytes). */
static const char *f32_check_name(const struct f32_check *c, char *name)
{
	if (c->input)
		snprintf(name, 64, "input of rank %d", c->rank);
	else
		snprintf(name, 64, "%s of %d ranks", perf_op_name(c->op), c->nranks);
	return name;
}

/** The wrong elements the check @c under test finds in @buf[0..@count-1]. */
static size_t f32_wrong(const struct f32_check *c, const float *buf, size_t count)
{
	if (c->input)
		return perf_count_wrong_input(buf, count, INCCL_FLOAT32, c->rank);
	return perf_count_wrong_reduced(buf, count, INCCL_FLOAT32, c->op, c->nranks);
}

/*
 * expect_ieee_specials() - the check @c counts -0 as the 0 it expects (SUM
 * of the same values in another order may give either), and NaN (any sign,
 * quiet or signaling, any payload), +-Inf and the denormals next to 0 as
 * wrong, where it expects 0 as well as where it expects a value that is not
 * 0. Both elements are put, one special value at a time, into a result that
 * is right everywhere else.
 */
static void expect_ieee_specials(const struct f32_check *c)
{
	static const struct { uint32_t bits; size_t wrong_at_zero; } special[] = {
		{ 0x00000000, 0 }, /* +0 */
		{ 0x80000000, 0 }, /* -0 */
		{ 0x7fc00000, 1 }, /* quiet NaN */
		{ 0xffc00000, 1 }, /* negative quiet NaN */
		{ 0x7f800001, 1 }, /* signaling NaN */
		{ 0x7fc00123, 1 }, /* NaN with a payload */
		{ 0x7f800000, 1 }, /* +Inf */
		{ 0xff800000, 1 }, /* -Inf */
		{ 0x00000001, 1 }, /* the smallest denormal */
		{ 0x80000001, 1 }, /* and its negative */
	};
	static float buf[ZERO_SEARCH];
	size_t zero = 0, other, count;
	char name[64];

	while (zero < ZERO_SEARCH && (buf[zero] = f32_want(c, zero)) != 0)
		zero++;
	if (zero == ZERO_SEARCH)
		fail_msg("no element of %d expects 0 (%s)", ZERO_SEARCH, f32_check_name(c, name));
	buf[zero] = 0.0f;
	other = zero ? 0 : 1;
	buf[other] = f32_want(c, other);
	assert_true(buf[other] != 0);
	count = (zero > other ? zero : other) + 1; /* both, and every element before them */
	assert_int_equal(f32_wrong(c, buf, count), 0);
	for (size_t k = 0; k < sizeof(special) / sizeof(special[0]); k++) {
		buf[zero] = f32_bits(special[k].bits);
		if (f32_wrong(c, buf, count) != special[k].wrong_at_zero)
			fail_msg("0x%08x where 0 is expected: %zu wrong, want %zu (%s)", (unsigned)special[k].bits,
				 f32_wrong(c, buf, count), special[k].wrong_at_zero, f32_check_name(c, name));
		buf[zero] = 0.0f;
		float keep = buf[other];
		buf[other] = f32_bits(special[k].bits);
		if (f32_wrong(c, buf, count) != 1)
			fail_msg("0x%08x where %g is expected: %zu wrong, want 1 (%s)", (unsigned)special[k].bits,
				 (double)keep, f32_wrong(c, buf, count), f32_check_name(c, name));
		buf[other] = keep;
	}
}

/* -0, NaN, Inf and denormals in a float32 result, for every check and operator. */
static void test_verify_ieee_specials(void **state)
{
	for (int op = INCCL_SUM; op <= INCCL_MIN; op++)
		for (int nranks = 1; nranks <= RANKS; nranks++)
			expect_ieee_specials(&(struct f32_check){ .op = (enum inccl_op)op, .nranks = nranks });
	for (int rank = 0; rank < RANKS; rank++)
		expect_ieee_specials(&(struct f32_check){ .input = 1, .rank = rank });
}

static void test_verify_input(void **state)
{
	static uint8_t buf[N * 8];

	for (int dtype = 0; dtype < PERF_NDTYPES; dtype++) {
		perf_fill(buf, N, dtype, 2);
		assert_int_equal(perf_count_wrong_input(buf, N, dtype, 2), 0);
		assert_true(perf_count_wrong_input(buf, N, dtype, 1) > N / 2);
		assert_true(perf_count_wrong_input(buf, N, dtype, -1) > N / 2); /* broadcast non-roots' filler */
		buf[perf_dtype_size(dtype) * 100] ^= 0x10;
		assert_int_equal(perf_count_wrong_input(buf, N, dtype, 2), 1);
	}
	assert_int_equal(perf_count_wrong_input(buf, 0, INCCL_INT32, 2), 0);
}

/** Sum the tallies of ranks @ranks[0..n-1] with wrong counts @wrong, as the int32 allreduce would. */
static void sum_tallies(int n, const int *ranks, const uint64_t *wrong, int32_t sum[PERF_TALLY_LEN])
{
	memset(sum, 0, PERF_TALLY_LEN * sizeof(sum[0]));
	for (int k = 0; k < n; k++) {
		int32_t v[PERF_TALLY_LEN];
		perf_tally_encode(wrong[k], ranks[k], v);
		for (int j = 0; j < PERF_TALLY_LEN; j++)
			sum[j] += v[j];
	}
}

/*
 * The block collectives' sizes (whole blocks of nranks elements) and checks:
 * a correct result computed here element by element passes, one changed
 * element in any block (or the wrong block's data) is counted.
 */
static void test_blocks(void **state)
{
	struct perf_opts o = { .coll = PERF_ALLGATHER, .dtype = INCCL_INT32, .op = INCCL_SUM, .rank = 2, .nranks = 3,
			       .min_bytes = 10, .max_bytes = 100, .factor = 3 };
	size_t sizes[PERF_MAX_SIZES], n = perf_sweep(&o, sizes), count = 12, blk = 4;
	int32_t buf[12], res[12];

	/* 10 -> 12 (3 ranks x 4 B), 30 -> 24, 90 -> 84 */
	assert_int_equal(n, 3);
	assert_int_equal(sizes[0], 12);
	assert_int_equal(sizes[1], 24);
	assert_int_equal(sizes[2], 84);
	o.min_bytes = o.max_bytes = 4; /* below one element per rank: one each */
	assert_int_equal(perf_sweep(&o, sizes), 1);
	assert_int_equal(sizes[0], 12);
	assert_true(perf_coll_blocks(PERF_ALLTOALL) && perf_coll_blocks(PERF_REDUCESCATTER) && !perf_coll_blocks(PERF_BROADCAST));

	/* AllGather: rank 2's own block holds its input; the result block b is rank b's input 0..3 */
	perf_fill_blocks(&o, buf, count);
	for (size_t i = 0; i < blk; i++)
		assert_int_equal(buf[2 * blk + i], perf_input_i32(2, i));
	assert_true(perf_count_wrong_blocks(&o, buf, count) >= blk * 2 - 1); /* the others' blocks are not theirs yet */
	for (int b = 0; b < 3; b++)
		for (size_t i = 0; i < blk; i++)
			res[b * blk + i] = perf_input_i32(b, i);
	assert_int_equal(perf_count_wrong_blocks(&o, res, count), 0);
	res[5] ^= 1;
	assert_int_equal(perf_count_wrong_blocks(&o, res, count), 1);

	/* AllToAll: result block b is rank b's input at rank 2's offset 2 * 4 */
	o.coll = PERF_ALLTOALL;
	perf_fill_blocks(&o, buf, count);
	for (size_t i = 0; i < count; i++)
		assert_int_equal(buf[i], perf_input_i32(2, i));
	for (int b = 0; b < 3; b++)
		for (size_t i = 0; i < blk; i++)
			res[b * blk + i] = perf_input_i32(b, 2 * blk + i);
	assert_int_equal(perf_count_wrong_blocks(&o, res, count), 0);
	res[0] = perf_input_i32(0, 0); /* rank 0's block for rank 0, not for rank 2 */
	assert_int_equal(perf_count_wrong_blocks(&o, res, count), res[0] != perf_input_i32(0, 2 * blk));

	/* ReduceScatter: rank 2's block of the sum, elements 8..11 of every rank's input */
	o.coll = PERF_REDUCESCATTER;
	for (int op = INCCL_SUM; op <= INCCL_MIN; op++) {
		o.op = (enum inccl_op)op;
		for (size_t i = 0; i < blk; i++) {
			int32_t v = perf_input_i32(0, 2 * blk + i);
			for (int r = 1; r < 3; r++) {
				int32_t x = perf_input_i32(r, 2 * blk + i);
				v = op == INCCL_SUM ? v + x : op == INCCL_MAX ? (x > v ? x : v) : (x < v ? x : v);
			}
			res[i] = v;
		}
		assert_int_equal(perf_count_wrong_blocks(&o, res, count), 0);
		res[3]++;
		assert_int_equal(perf_count_wrong_blocks(&o, res, count), 1);
	}
}

static void test_tally(void **state)
{
	int ranks[4] = { 0, 1, 2, 3 };
	uint64_t wrong[4] = { 0, 536870912, 5, (uint64_t)1 << 40 }, total = 0;
	int32_t sum[PERF_TALLY_LEN];

	sum_tallies(4, ranks, wrong, sum);
	assert_int_equal(perf_tally_decode(sum, 4, &total), 0);
	assert_int_equal(total, 536870912ull + 5 + (1ull << 40));

	uint64_t zeros[4] = { 0 };
	sum_tallies(1, ranks, zeros, sum);
	assert_int_equal(perf_tally_decode(sum, 1, &total), 0);
	assert_int_equal(total, 0);

	uint64_t max[4] = { UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX }; /* saturates, no overflow */
	sum_tallies(4, ranks, max, sum);
	assert_int_equal(perf_tally_decode(sum, 4, &total), 0);
	assert_int_equal(total, 4 * ((1ull << 45) - 1));

	sum_tallies(3, ranks, wrong, sum); /* rank 3 missing */
	assert_int_equal(perf_tally_decode(sum, 4, &total), -1);
	int dup[4] = { 0, 1, 1, 3 };       /* rank 1 twice, rank 2 never */
	sum_tallies(4, dup, wrong, sum);
	assert_int_equal(perf_tally_decode(sum, 4, &total), -1);
	sum_tallies(4, ranks, wrong, sum);
	sum[0] = -1;                       /* garbage */
	assert_int_equal(perf_tally_decode(sum, 4, &total), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_round_bytes),
		cmocka_unit_test(test_sweep),
		cmocka_unit_test(test_bandwidth),
		cmocka_unit_test(test_format_size),
		cmocka_unit_test_setup(test_parse_defaults_and_env, setup_env),
		cmocka_unit_test_setup(test_parse_everything, setup_env),
		cmocka_unit_test_setup(test_parse_errors, setup_env),
		cmocka_unit_test(test_window_lines),
		cmocka_unit_test(test_report_csv),
		cmocka_unit_test(test_report_json),
		cmocka_unit_test(test_report_text),
		cmocka_unit_test(test_inputs),
		cmocka_unit_test(test_verify_reduced),
		cmocka_unit_test(test_verify_input),
		cmocka_unit_test(test_verify_ieee_specials),
		cmocka_unit_test(test_blocks),
		cmocka_unit_test(test_tally),
	};

	return cmocka_run_group_tests_name("inccl_perf options, report and checks", tests, NULL, NULL);
}
