/*
 * cpuwin.h — the CPU processes used inside time windows: experiments/
 * cpusample.c's samples of each process's cumulative CPU ticks, and the
 * windows of inccl_perf -X (one line per iteration: the span of the timed
 * collective). The cumulative CPU between samples is interpolated linearly;
 * the CPU inside the union of the windows is the sum over its intervals of
 * C(end) - C(start), with a bound on how far off that can be.
 */
#ifndef CPUWIN_H
#define CPUWIN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CPUWIN_ERR_LEN 256
/* inccl_perf's PERF_WINDOWS_HEADER (hostlib/tools/perf_opts.h; test_cpuwin checks they agree) */
#define CPUWIN_WINDOWS_HEADER "rank,phase,bytes,iter,start_ns,end_ns,intr,pkts"
/* the same file written before inccl_perf counted interrupts and packets: still read, the counters -1 */
#define CPUWIN_WINDOWS_HEADER_6 "rank,phase,bytes,iter,start_ns,end_ns"
#define CPUWIN_SAMPLES_HEADER "time_ns,pid,ticks"
#define CPUWIN_MAX_PIDS 65 /* cpusample's CPUSAMPLE_MAX_PIDS processes and the machine */
#define CPUWIN_MACHINE_PID 0 /* cpusample -m: the whole machine's busy time (no process has PID 0) */

/** One process's samples, in increasing time. */
struct cpuwin_series {
	long pid;
	size_t n, cap;
	int64_t *t_ns;      /* CLOCK_REALTIME of the lab machine */
	uint64_t *ticks;    /* utime + stime, cumulative */
	size_t *line;       /* the file's line of each sample, for errors */
};

/** A samples file. */
struct cpuwin_samples {
	char path[128];
	long clk_tck;       /* ticks per second */
	int interval_ms;    /* the sampler's interval */
	int nseries;
	struct cpuwin_series series[CPUWIN_MAX_PIDS];
};

/** One line of a windows file. */
struct cpuwin_window {
	int rank;
	int warmup;         /* 1: a warm-up iteration, 0: a timed one */
	uint64_t bytes;
	int iter;
	int64_t start_ns, end_ns; /* the guest's CLOCK_REALTIME */
	int64_t intr, pkts;       /* the guest's interrupts and RDMA packets across the window; -1: not counted */
};

/** A windows file. */
struct cpuwin_windows {
	size_t n, cap;
	struct cpuwin_window *w;
};

/** What cpuwin_cpu() found for one process. */
struct cpuwin_result {
	double cpu_us;      /* CPU inside the union of the windows */
	double span_us;     /* the union's length */
	double bound_us;    /* |cpu_us - the true CPU| is below this (see cpuwin_cpu()) */
	double tick_us;     /* resolution: one tick, 1e6 / clk_tck */
	int interval_ms;    /* resolution: the sampler's interval */
	int intervals;      /* the union's disjoint intervals */
};

/**
 * cpuwin_read_samples() - parse cpusample's file @f (named @path in errors)
 * into *@s: "# cpusample clk_tck=T interval_ms=MS", the column header, then
 * "time_ns,pid,ticks" lines (PID 0: the machine's busy time, cpusample -m);
 * each PID's times must increase and its ticks never decrease. Return 0, or -1 with "PATH:LINE: reason" in @err (*@s
 * then holds nothing to free).
 */
int cpuwin_read_samples(FILE *f, const char *path, struct cpuwin_samples *s, char *err, size_t errlen);

/**
 * cpuwin_read_windows() - parse an inccl_perf -X file @f (named @path) into
 * *@w: header lines (one per run appended) and "rank,warmup|timed,bytes,iter,
 * start_ns,end_ns" lines with start_ns <= end_ns. Return 0, or -1 with
 * "PATH:LINE: reason" in @err.
 */
int cpuwin_read_windows(FILE *f, const char *path, struct cpuwin_windows *w, char *err, size_t errlen);

/**
 * cpuwin_cpu() - the CPU of process @pid of @s inside the union of the
 * windows of @w that @want accepts (NULL: every one), whose times are the
 * guest's clock: machine ns = guest ns - @offset_ns. Each edge of the union
 * reads the cumulative ticks interpolated between the two samples around it;
 * the true value lies between the first sample and one tick more than the
 * second, so bound_us adds (ticks of that interval + 1) ticks per edge.
 * Return 0, or -1 with a reason in @err: no such PID, no window chosen, or
 * a window outside the PID's sampled span (never a silent 0).
 */
int cpuwin_cpu(const struct cpuwin_samples *s, long pid, const struct cpuwin_windows *w,
	       int (*want)(const struct cpuwin_window *, void *), void *arg, int64_t offset_ns,
	       struct cpuwin_result *r, char *err, size_t errlen);

/*
 * An experiment's cpuwin.csv (experiments/exp.sh, experiments/README.md): per
 * inccl_perf run (algorithm, collective, size, round) and process, its CPU
 * inside the timed windows (calls of them), the windows' union, the bound of
 * cpuwin_cpu() and the uncertainty of the clock offsets (offset_us: a window
 * shifted by that much gains or loses up to that much CPU per core at each edge).
 * A line of role "machine" (node "machine", PID 0) is the whole machine's busy
 * time inside the same windows: less the processes' lines, what the rest of
 * the machine took from the lab's cores meanwhile.
 */
#define CPUWIN_CSV_HEADER "algorithm,collective,bytes,round,calls,node,role,pid,cpu_us,span_us,bound_us,offset_us"
#define CPUWIN_CSV_FIELDS 12
#define CPUWIN_NAME_LEN 16 /* an algorithm's or collective's name, as cpu.csv's (loggp.h) */
#define CPUWIN_NODE_LEN 65 /* a node's name: 1..64 characters */

/** One measurement of cpuwin.csv: its processes summed (consecutive lines of one measurement joined). */
struct cpuwin_meas {
	char algo[CPUWIN_NAME_LEN], coll[CPUWIN_NAME_LEN];
	double bytes;
	int round, calls;
	int hosts, procs;        /* processes of role host; of any role */
	double host_max, host_max_bound; /* us: the host with the most CPU inside the windows, and its bound */
	double sum, sum_bound;   /* us: every process's (hosts and switches) */
	double machine, machine_bound; /* us: the machine's busy time inside the windows; -1: no machine line */
	double span;             /* us: the union of the windows (the same for every process) */
	double offset;           /* us: the clock offsets' uncertainty */
	double host_cpu[CPUWIN_MAX_PIDS];               /* us: each host's, in the file's order (exp.sh: the ranks') */
	char host_node[CPUWIN_MAX_PIDS][CPUWIN_NODE_LEN]; /* and its node */
};
struct cpuwin_table {
	struct cpuwin_meas *m;
	size_t n, cap;
};

/**
 * cpuwin_parse_csv() - read cpuwin.csv @f (named @path) into *@t: the
 * header CPUWIN_CSV_HEADER, then lines of 12 fields: names of 1..15
 * characters of a-z 0-9 and '-', whole bytes, round 1..20 and calls >= 1,
 * a node of 1..64 of A-Z a-z 0-9 _ . -, role host or switch and a PID
 * 1..2^31-1, or role machine with PID 0 (at most one such line per
 * measurement), and cpu_us, span_us, bound_us, offset_us finite numbers >= 0.
 * The lines of one measurement must be together and agree on calls, span_us
 * and offset_us.
 * Return 0, or -1 with "PATH:LINE: reason" in @err (*@t then holds nothing).
 */
int cpuwin_parse_csv(FILE *f, const char *path, struct cpuwin_table *t, char *err, size_t errlen);
void cpuwin_table_free(struct cpuwin_table *t);

/** cpuwin_free_samples(), cpuwin_free_windows() - release what the readers allocated. */
void cpuwin_free_samples(struct cpuwin_samples *s);
void cpuwin_free_windows(struct cpuwin_windows *w);

#endif
