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

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The exact header of results.csv (inccl_perf -F csv, mpi_perf, ceiling.sh). */
#define RES_CSV_HEADER "algorithm,collective,dtype,op,root,nranks,bytes,elements,iters,time_us,algbw_MBps,busbw_MBps,wrong"
/* The exact header of loggp.csv (experiments/loggp.sh). */
#define RES_LOGGP_HEADER "measure,bytes,iters,value_us"

#define RES_ERR_LEN 512

enum res_coll { RES_ALLREDUCE, RES_REDUCE, RES_BROADCAST, RES_BARRIER, RES_P2P, RES_NCOLL };

/** One measurement: a row of results.csv. Fields shown as '-' are -1. */
struct res_row {
	char algo[32];       /* inc, ring, mpi-tcp, mpi-ucx, ceiling, ... */
	enum res_coll coll;
	char dtype[8];       /* int32, float32 or "-" */
	char op[4];          /* sum, max, min or "-" */
	int root;            /* -1: does not apply */
	int nranks;
	uint64_t bytes;
	int64_t elements;    /* -1: does not apply */
	int iters;
	double time_us;      /* mean time per iteration */
	double algbw;        /* MB/s (10^6 B/s), -1: does not apply */
	double busbw;        /* MB/s, -1: does not apply */
	uint64_t wrong;      /* wrong elements summed over every rank */
	int line;            /* line in the file, for messages */
};

struct res_table {
	struct res_row *rows;
	size_t n, cap;
};

/** One LogGP measurement: a row of loggp.csv. */
enum res_measure { RES_HALF_RTT, RES_GAP };
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

/** What the plots and the report need of meta.yaml ("" when absent). */
struct res_meta {
	char experiment[32];
	char date[40];
	char commit[48];
	char topology[64];
	char accelerator[16];
	char status[256];
	char host_cpu[128];
	int nranks;          /* 0 when absent */
	int tree_levels;     /* 0 when absent */
	double ceiling_poll; /* ceiling_busy_poll_MBps: ib_send_bw busy polling, 0 when absent */
};

const char *res_coll_name(enum res_coll c);
/** The collective named @s ("allreduce", ..., "p2p"), -1 if none. */
int res_coll_parse(const char *s);

/**
 * res_parse_csv() - read results.csv from @f (@name for messages) into @t,
 * appending. Returns 0, or -1 with "name:LINE: reason" in @err: a header
 * other than RES_CSV_HEADER, a row without exactly 13 fields, an unknown
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
 * half_rtt or gap, bytes >= 0, iters >= 1, value_us > 0) into @pts, appending.
 * Returns 0 or -1 with "name:LINE: reason" in @err.
 */
int res_parse_loggp(FILE *f, const char *name, struct res_points *pts, char *err, size_t errlen);
int res_load_loggp(const char *path, struct res_points *pts, char *err, size_t errlen);
void res_points_free(struct res_points *pts);

/**
 * res_load_meta() - the scalar keys of meta.yaml's top-level mapping that
 * struct res_meta names (libyaml; other keys are ignored). Returns 0, or -1
 * with the reason in @err when the file is missing, is not YAML, or its top
 * level is not a mapping.
 */
int res_load_meta(const char *path, struct res_meta *m, char *err, size_t errlen);

#endif
