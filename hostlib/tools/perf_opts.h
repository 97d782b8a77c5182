/*
 * perf_opts.h — the parts of inccl_perf that need no network, kept apart so
 * tests/unit/test_perf_opts.c can check them: the command line, sizes with
 * K/M/G suffixes, the size sweep, the bandwidth formulas, the report (text,
 * CSV, JSON), the deterministic input pattern with its verification, and the
 * tally that sums every rank's wrong-element count through one allreduce.
 */
#ifndef PERF_OPTS_H
#define PERF_OPTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "inccl.h"

enum perf_coll { PERF_ALLREDUCE, PERF_REDUCE, PERF_BROADCAST, PERF_BARRIER, PERF_ALLGATHER, PERF_REDUCESCATTER,
		 PERF_ALLTOALL };
#define PERF_NCOLLS 7

/** perf_coll_blocks() - whether @coll moves per-rank blocks (allgather, reducescatter, alltoall). */
int perf_coll_blocks(enum perf_coll coll);
enum perf_format { PERF_TEXT, PERF_CSV, PERF_JSON };

#define PERF_NDTYPES 8       /* enum inccl_dtype's 0..7 */
#define PERF_MAX_SIZES 64    /* a sweep with factor >= 2 has at most 64 sizes */
#define PERF_MAX_NRANKS 4096 /* keeps every int32 sum of the input pattern exact */

/** Everything the command line (and INCCL_RANK / INCCL_NRANKS) decide. */
struct perf_opts {
	enum perf_coll coll;      /* -C */
	enum inccl_dtype dtype;   /* -d */
	enum inccl_op op;         /* -o */
	int root;                 /* -R: for reduce and broadcast */
	size_t min_bytes;         /* -b, as given (perf_sweep() rounds) */
	size_t max_bytes;         /* -e */
	size_t factor;            /* -f */
	int iters;                /* -n: timed iterations per size */
	int warmup;               /* -w: untimed iterations before them */
	int rank, nranks;         /* -r, -N */
	const char *master;       /* -m host[:port], NULL: library default */
	const char *controller;   /* -c host[:port], NULL: library default */
	int timeout_ms;           /* -t (given in seconds): bootstrap, 0: library default */
	int comm_timeout_ms;      /* -T (given in seconds): collectives, 0: library default */
	int window;               /* -W: packets in flight, 0: library default */
	int message;              /* -M: packets per RDMA message, 0: library default */
	enum perf_format format;  /* -F */
	const char *out_path;     /* -O, NULL: stdout */
	int verbose;              /* -v */
	enum inccl_algo algorithm; /* -A: inc (in the switches) or ring (host-based baseline) */
	int barrier_delay_ms;     /* -D: barrier's verification round, the late rank's delay; 0: none */
	const char *windows_path; /* -X: append each iteration's window (perf_window_line()), NULL: none */
};

#define PERF_BARRIER_DELAY_MS 1000 /* default of -D (check_ref.h: CREF_BARRIER_DELAY_MS) */
#define PERF_MAX_DELAY_MS 30000    /* -D at most: well under the collectives' default timeout of 60 s */

/** What perf_parse_args() found. */
enum perf_parse_result { PERF_PARSE_OK = 0, PERF_PARSE_HELP = 1, PERF_PARSE_ERROR = -1 };

/** The one-line synopsis (printed with every argument error) and the full help. */
extern const char perf_usage[];
extern const char perf_help[];

/**
 * perf_parse_args() - fill @o from @argv (argv[0] is the program name) and,
 * for -r / -N not given, from $INCCL_RANK / $INCCL_NRANKS; check the result.
 * Return: PERF_PARSE_OK, PERF_PARSE_HELP (-h), or PERF_PARSE_ERROR with a
 * one-line reason in @err.
 */
enum perf_parse_result perf_parse_args(int argc, char *const argv[], struct perf_opts *o, char *err, size_t errlen);

/** perf_parse_size() - "4096", "1K", "512M", "2G" (powers of 1024) into *@bytes. Return 0 or -1. */
int perf_parse_size(const char *s, size_t *bytes);

/** perf_parse_int() - a whole decimal int of [@min, @max] (no sign-less junk, no
 * overflow, nothing after it) into *@out: 0, or -1 with *@out untouched. */
int perf_parse_int(const char *s, long min, long max, int *out);

/** perf_dtype_size() - bytes of an element of @dtype (2, 4 or 8). */
size_t perf_dtype_size(enum inccl_dtype dtype);

/** perf_round_bytes() - @bytes rounded down to whole elements of @dtype, at least one element. */
size_t perf_round_bytes(size_t bytes, enum inccl_dtype dtype);

/** perf_max_nranks() - the most ranks whose sums of the input pattern of @dtype stay exact. */
int perf_max_nranks(enum inccl_dtype dtype);

/**
 * perf_sweep() - the sizes to run in bytes, rounded, increasing, without
 * repeats: MIN, MIN*FACTOR, ... up to MAX (one size of 0 bytes for barrier).
 * A block collective's sizes are the whole buffer (nccl-tests' convention:
 * AllGather's received bytes, ReduceScatter's sent bytes, AllToAll's either),
 * rounded down to whole blocks of whole elements, nranks elements at least.
 * Return: how many were written to @sizes.
 */
size_t perf_sweep(const struct perf_opts *o, size_t sizes[PERF_MAX_SIZES]);

/** perf_algbw_MBps() - algorithm bandwidth: @bytes per @time_us, in MB/s (10^6 bytes). */
double perf_algbw_MBps(size_t bytes, double time_us);

/**
 * perf_busbw_MBps() - bus bandwidth as nccl-tests defines it: allreduce
 * algbw * 2(n-1)/n; allgather, reducescatter and alltoall algbw * (n-1)/n;
 * reduce and broadcast algbw; barrier 0 (has none).
 */
double perf_busbw_MBps(enum perf_coll coll, int nranks, double algbw);

/** Names as the command line and the report spell them. */
const char *perf_coll_name(enum perf_coll coll);
const char *perf_dtype_name(enum inccl_dtype dtype);
const char *perf_op_name(enum inccl_op op);
const char *perf_algo_name(enum inccl_algo algo);

/** perf_format_size() - @bytes for people: "512 MiB", "1.5 KiB", "100 B". Return @buf. */
const char *perf_format_size(size_t bytes, char *buf, size_t len);

/** One measured size, as the report shows it. */
struct perf_row {
	size_t bytes, elements;
	int iters;
	double time_us;  /* average of one iteration on the reporting rank */
	uint64_t wrong;  /* over all ranks */
	double time_max_us; /* the largest over the ranks of each rank's average (MAX of time_us) */
};

/** A report being written; fields are private to perf_report_*(). */
struct perf_report {
	FILE *f;
	const struct perf_opts *o;
	const char *label;   /* the algorithm column */
	int rows;
	uint64_t wrong;
	double busbw_sum;
};

/** perf_report_begin() - start the report of @o on @f (text header, CSV header or "["). */
void perf_report_begin(struct perf_report *rep, FILE *f, const struct perf_opts *o);

/**
 * perf_report_begin_as() - perf_report_begin() for another program (mpi_perf):
 * @prog names it in the text header, @label is the algorithm column, @note
 * ends the header's settings line (e.g. ", time of rank 0").
 */
void perf_report_begin_as(struct perf_report *rep, FILE *f, const struct perf_opts *o, const char *prog,
			  const char *label, const char *note);

/** perf_report_row() - add one size. */
void perf_report_row(struct perf_report *rep, const struct perf_row *row);

/**
 * perf_report_end() - finish the report (text summary, "]"); @complete 0
 * says a call failed before every size was run.
 */
void perf_report_end(struct perf_report *rep, int complete);

/** perf_input_i32(), perf_input_f32() - element @i of rank @rank's input (any int @rank). */
int32_t perf_input_i32(int rank, size_t i);
float perf_input_f32(int rank, size_t i);

/** perf_fill() - write rank @rank's input into @buf (@count elements of @dtype's width). */
void perf_fill(void *buf, size_t count, enum inccl_dtype dtype, int rank);

/**
 * perf_count_wrong_reduced() - elements of @buf that differ from @op over
 * the inputs of ranks 0..@nranks-1 (computed here, element by element).
 */
size_t perf_count_wrong_reduced(const void *buf, size_t count, enum inccl_dtype dtype, enum inccl_op op,
				int nranks);

/** perf_count_wrong_input() - elements of @buf that differ from rank @rank's input. */
size_t perf_count_wrong_input(const void *buf, size_t count, enum inccl_dtype dtype, int rank);

/*
 * The block collectives' input and check, in place as inccl_perf runs them,
 * for @count elements in all (nranks blocks of count / nranks). Element i of
 * rank r's input is perf_input(r, i):
 * - allgather: rank r's block r holds its input 0..count/n-1 (the other
 *   blocks the input of a rank that does not exist, to be overwritten);
 *   block b of the result must be rank b's input 0..count/n-1;
 * - reducescatter: every rank's whole buffer holds its input 0..count-1; the
 *   result (count/n elements at @res) must be op over every rank's input at
 *   rank * count/n + i;
 * - alltoall: as reducescatter's input; block b of the result must be rank
 *   b's input at rank * count/n + i.
 * perf_fill_blocks() - this rank's input. perf_count_wrong_blocks(): wrong
 * elements of the result at @res (reducescatter: its count/n elements;
 * else the whole buffer).
 */
void perf_fill_blocks(const struct perf_opts *o, void *buf, size_t count);
size_t perf_count_wrong_blocks(const struct perf_opts *o, const void *res, size_t count);

/*
 * The tally: each rank encodes its wrong count into PERF_TALLY_LEN int32
 * values, one inccl_allreduce (int32 SUM) adds them, and every rank decodes
 * the total. The count travels as three 15-bit parts so no sum can overflow;
 * a 1 and the rank travel along, so the sum is checked to come from exactly
 * ranks 0..n-1 once each.
 */
#define PERF_TALLY_LEN 5

/* The CSV report's header: the columns of every row, in this order (results.h: RES_CSV_HEADER_MAX). */
#define PERF_CSV_HEADER \
	"algorithm,collective,dtype,op,root,nranks,bytes,elements,iters,time_us,algbw_MBps,busbw_MBps,wrong,time_max_us"

/** perf_tally_encode() - this rank's contribution: @wrong (saturated at 2^45 - 1) and @rank. */
void perf_tally_encode(uint64_t wrong, int rank, int32_t v[PERF_TALLY_LEN]);

/** perf_tally_decode() - the total of the summed tally of @nranks ranks. Return 0, or -1 if inconsistent. */
int perf_tally_decode(const int32_t v[PERF_TALLY_LEN], int nranks, uint64_t *total);

/*
 * The windows file (-X): every rank appends one line per iteration, warm-up
 * ("warmup") and timed ("timed"), after the header when the file was empty:
 * the rank, the phase, the size in bytes, the iteration (1..), and
 * CLOCK_REALTIME in ns just before and just after the collective: the span
 * that time_us times, within the two clock reads. Then what the rank's
 * machine counted across the same span (read just outside the clock reads):
 * its interrupts (/proc/stat's intr total: every interrupt of every CPU, the
 * timer's included) and the packets its RDMA devices sent and received (the
 * sum of sent_pkts and rcvd_pkts of each device's port 1 hw_counters, resends
 * and ACKs included), each -1 where it could not be read (no /proc, no
 * device with those counters). analysis/cpuwin.c reads it
 * (CPUWIN_WINDOWS_HEADER is this header).
 */
#define PERF_WINDOWS_HEADER "rank,phase,bytes,iter,start_ns,end_ns,intr,pkts"

/** perf_window_line() - write one line of the windows file to @f. Return 0, or -1 if it failed. */
int perf_window_line(FILE *f, int rank, int warmup, size_t bytes, int iter, int64_t start_ns, int64_t end_ns,
		     int64_t intr, int64_t pkts);

#endif
