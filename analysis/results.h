/*
 * results.h — the stored results of an experiment run (experiments/exp.sh),
 * read strictly: results.csv (one row per measurement, the format inccl_perf
 * and mpi_perf print), loggp.csv (experiments/loggp.sh) and meta.yaml.
 *
 * Every loader checks every field and reports the first problem as
 * "FILE:LINE: what is wrong" in the caller's error buffer; nothing is
 * guessed. The plotting and report tool (increport.c) is built on these.
 */
#ifndef RESULTS_H
#define RESULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The exact header of the tools' reports (inccl_perf -F csv, mpi_perf, ceiling.sh), and of results.csv before rounds. */
#define RES_CSV_HEADER "algorithm,collective,dtype,op,root,nranks,bytes,elements,iters,time_us,algbw_MBps,busbw_MBps,wrong"
/* results.csv since exp.sh runs in rounds: the same and the round (1..RES_MAX_ROUNDS) of each row. */
#define RES_CSV_HEADER_ROUNDS RES_CSV_HEADER ",round"
/*
 * Either of them with the slowest rank's time last (the tools' report and
 * results.csv since inccl_perf and mpi_perf measure it): time_max_us, the
 * largest over the ranks of each rank's mean time per timed iteration, or
 * "-" where no rank's time was taken apart (ceiling.sh's pairs).
 */
#define RES_TIME_MAX ",time_max_us"
#define RES_CSV_HEADER_MAX RES_CSV_HEADER RES_TIME_MAX
#define RES_CSV_HEADER_ROUNDS_MAX RES_CSV_HEADER_ROUNDS RES_TIME_MAX
#define RES_MAX_ROUNDS 20
/* The exact header of loggp.csv (experiments/loggp.sh). */
#define RES_LOGGP_HEADER "measure,bytes,iters,value_us"

#define RES_ERR_LEN 512

/* The collectives with sizes first (RES_ALLREDUCE .. RES_LAST_SIZED), in the order the report draws them. */
enum res_coll { RES_ALLREDUCE, RES_REDUCE, RES_BROADCAST, RES_ALLGATHER, RES_REDUCESCATTER, RES_ALLTOALL, RES_BARRIER,
		RES_P2P, RES_NCOLL };
#define RES_LAST_SIZED RES_ALLTOALL

/** One measurement: a row of results.csv. Fields shown as '-' are -1. */
struct res_row {
	char algo[32];       /* inc, ring, mpi-tcp, mpi-ucx, ceiling, ... */
	enum res_coll coll;
	char dtype[12];      /* int32, uint32, int64, uint64, float16, bfloat16, float32, float64 or "-" */
	char op[4];          /* sum, max, min or "-" */
	int root;            /* -1: does not apply */
	int nranks;
	uint64_t bytes;
	int64_t elements;    /* -1: does not apply */
	int iters;
	double time_us;      /* rank 0's mean time per iteration */
	double time_max_us;  /* the slowest rank's mean time per iteration; -1: absent (no column, or "-") */
	double algbw;        /* MB/s (10^6 B/s), -1: does not apply */
	double busbw;        /* MB/s, -1: does not apply */
	uint64_t wrong;      /* wrong elements summed over every rank */
	int round;           /* 1..RES_MAX_ROUNDS; 0 in a results.csv without the round column */
	int line;            /* line in the file, for messages */
};

struct res_table {
	struct res_row *rows;
	size_t n, cap;
	int with_rounds;     /* the file had the round column */
	int with_time_max;   /* the file had the time_max_us column (a row may still say "-") */
};

/**
 * One LogGP measurement: a row of loggp.csv. half_rtt and gap are times (> 0);
 * cpu_send, cpu_recv, cpu_send_batch, cpu_send_uc, cpu_recv_uc and
 * cpu_send_signaled are CPU time per message, cpu_waited_send and
 * cpu_waited_recv per round trip of a ping-pong, cpu_swap,
 * cpu_copy and cpu_sum per pass over `bytes`; o_w's pairs (loggp.sh
 * LOGGP_WAIT_REPEAT, the four or eight rows of a pair written together, in
 * order): cpu_pair_send and cpu_pair_recv CPU time per message of the 16 KiB
 * stream, cpu_pair_waited_send and cpu_pair_waited_recv per round trip of the
 * ping-pong measured right after it, and intr_pair_send, intr_pair_recv,
 * intr_pair_waited_send, intr_pair_waited_recv the guest interrupts of the
 * same runs per message or round trip (a count in value_us, not a time);
 * cpu_empty_recv the receiver's CPU time per message of the 16 KiB stream
 * while it sends 16 messages of 8 B back over UC for each. Each
 * is the difference of two runs (experiments/loggp.sh), so noise may make one
 * 0 or negative: read as written (a leading '-' allowed), judged by the model.
 */
enum res_measure { RES_HALF_RTT, RES_GAP, RES_CPU_SEND, RES_CPU_RECV, RES_CPU_SEND_BATCH, RES_CPU_SWAP, RES_CPU_COPY,
		   RES_CPU_SUM, RES_CPU_SEND_UC, RES_CPU_RECV_UC, RES_CPU_SEND_SIGNALED,
		   RES_CPU_WAITED_SEND, RES_CPU_WAITED_RECV, RES_CPU_PAIR_SEND, RES_CPU_PAIR_RECV,
		   RES_CPU_PAIR_WAITED_SEND, RES_CPU_PAIR_WAITED_RECV, RES_INTR_PAIR_SEND, RES_INTR_PAIR_RECV,
		   RES_INTR_PAIR_WAITED_SEND, RES_INTR_PAIR_WAITED_RECV, RES_CPU_EMPTY_RECV };
struct res_point {
	enum res_measure measure;
	double bytes;
	int iters;
	double value_us;
};

struct res_points {
	struct res_point *p;
	size_t n, cap;
};

/** The conditions of one round (meta.yaml's round_conditions); loads -1 when unknown. */
struct res_round {
	int round;
	int line;                       /* of its item in meta.yaml, for messages */
	char start[40];
	double load_before, load_after; /* the 1-minute load averages of /proc/loadavg */
	double steal_pct;               /* CPU time stolen during the round, %; -1 when not recorded */
};

/** What the plots and the report need of meta.yaml ("" when absent). */
struct res_meta {
	char experiment[32];
	char date[40];
	char commit[48];
	char topology[64];
	char accelerator[16];
	char status[256];
	char host_cpu[128];
	char switch_mode[32];
	int rounds;          /* 0 when absent (a run before rounds) */
	struct res_round cond[RES_MAX_ROUNDS];
	int ncond;
	int nranks;          /* 0 when absent */
	int tree_levels;     /* 0 when absent */
	int host_cores;      /* cores of the machine that ran the lab; 0 when absent */
	int message;         /* libinccl's packets per message (meta.yaml message); 0: the default */
	double ceiling_poll; /* ceiling_busy_poll_MBps: ib_send_bw busy polling, 0 when absent */
	bool simulated;      /* simulated: true — a run of the simulator (sim/), not of the lab */
	int hypervisors;     /* the machines (libvirt connections) the lab's nodes ran on; 0 when absent */
};

const char *res_coll_name(enum res_coll c);
/** The collective named @s ("allreduce", ..., "p2p"), -1 if none. */
int res_coll_parse(const char *s);

/**
 * res_parse_csv() - read results.csv from @f (@name for messages) into @t,
 * appending. Returns 0, or -1 with "name:LINE: reason" in @err: a header
 * other than RES_CSV_HEADER (rows of 13 fields, round 0),
 * RES_CSV_HEADER_ROUNDS (14 fields, the 14th a round 1..RES_MAX_ROUNDS) or
 * either with RES_TIME_MAX (one more field, the last: time_max_us, a time
 * > 0 not below time_us by more than their printed rounding, or "-";
 * without the column every row's time_max_us is -1, absent), a
 * row without exactly that many fields, an unknown
 * collective, dtype or operator, a number that is not one or out of range,
 * elements that do not match bytes, a root outside 0..nranks-1, or an
 * algorithm bandwidth that does not equal bytes / time (1% slack for the
 * two printed decimals). Lines starting with '#' and empty lines are skipped.
 */
int res_parse_csv(FILE *f, const char *name, struct res_table *t, char *err, size_t errlen);
/** res_load_csv() - res_parse_csv() of the file at @path; a missing file is an error. */
int res_load_csv(const char *path, struct res_table *t, char *err, size_t errlen);
void res_table_free(struct res_table *t);

/**
 * res_parse_loggp() - read loggp.csv (header RES_LOGGP_HEADER; measure
 * half_rtt, gap (value_us > 0), cpu_send, cpu_recv, cpu_send_batch, cpu_swap,
 * cpu_copy or cpu_sum (value_us any finite number), bytes >= 0, iters >= 1) into @pts, appending.
 * Returns 0 or -1 with "name:LINE: reason" in @err.
 */
int res_parse_loggp(FILE *f, const char *name, struct res_points *pts, char *err, size_t errlen);
int res_load_loggp(const char *path, struct res_points *pts, char *err, size_t errlen);
void res_points_free(struct res_points *pts);

/**
 * res_load_meta() - the scalar keys of meta.yaml's top-level mapping that
 * struct res_meta names, and round_conditions: a sequence of at most
 * RES_MAX_ROUNDS mappings (round 1..RES_MAX_ROUNDS, start, loadavg_before
 * and loadavg_after as /proc/loadavg's "1min 5min 15min" or "unknown",
 * steal_pct) (libyaml; other keys are ignored). Text values are truncated
 * to their field, a control character (below 0x20, DEL) stored as a space:
 * they go into charts and REPORT.md. Returns 0, or -1 with the reason in
 * @err ("path:LINE: ...") when the file is missing, is not YAML, its top
 * level is not a mapping, a value it reads is not what it should be (a load
 * average other than three numbers or "unknown"), a round is listed twice in
 * round_conditions, or rounds is given and round_conditions does not hold
 * exactly rounds items, each of round 1..rounds.
 */
int res_load_meta(const char *path, struct res_meta *m, char *err, size_t errlen);
/** res_parse_meta() - res_load_meta() of the stream @f (@path names it in messages). */
int res_parse_meta(FILE *f, const char *path, struct res_meta *m, char *err, size_t errlen);

/**
 * res_check_rounds() - rows of @t (results.csv, @name for messages) against
 * @m (its meta.yaml): 0, or -1 with "name:LINE: ..." in @err for the first row
 * whose round exceeds @m's rounds (no check when meta.yaml gives none).
 */
int res_check_rounds(const struct res_table *t, const struct res_meta *m, const char *name, char *err, size_t errlen);

#endif
