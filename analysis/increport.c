/*
 * increport.c — turns stored experiment runs (experiments/exp.sh) into
 * gnuplot charts and results/REPORT.md. `make plots` runs it, then gnuplot
 * on every script it wrote (analysis/plots.sh).
 *
 *   increport check FILE...        check results.csv / loggp.csv / cpuwin.csv files (by header)
 *   increport show RUN_DIR         a run as read: metadata, rows, LogGP fit
 *   increport plots RESULTS_DIR    per run: RUN/plots/ data and gnuplot scripts
 *                                  (their paths on stdout); RESULTS_DIR/REPORT.md
 *
 * A run is a directory of RESULTS_DIR holding results.csv (and usually
 * meta.yaml, loggp.csv). A run whose files do not read is reported as
 * "FILE:LINE: reason" and left out, the others are still drawn, and the exit
 * status is 1. Only rows with no wrong element are drawn or reported.
 *
 * Per run: a summary chart (INC against every baseline and ceiling, per
 * collective and size); for each collective measured, a throughput chart
 * (algorithm bandwidth vs size, every algorithm and the ceilings of the same
 * run) and a time chart; barrier: time per algorithm; with loggp.csv, the
 * LogGP fit and its AllReduce predictions against the measured times. Each
 * chart as PNG and SVG, titled with the topology, the accelerator and the
 * run's conditions; medians with min - max bars where a size ran several
 * rounds. With no run to read, REPORT.md says so and how to make one.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpuwin.h"
#include "loggp.h"
#include "results.h"

#define MIB 1048576.0
/*
 * Runs (or rounds of a run) whose 1-minute load averages as they began differ
 * by more than this are said to be made under different load: one busy core's
 * worth more on the machine that runs the lab's VMs. Only the load before a
 * round counts: the load after it includes the lab's own work in the round.
 */
#define LOAD_SPREAD 1.0

/*
 * Algorithms in the order they are drawn and tabled, with their legend and
 * colour (purple, then three of the Okabe-Ito colour-blind safe set; none is
 * the grid's grey or a ceiling's colour).
 */
static const struct {
	const char *name, *label, *colour;
} algos[] = {
	{ "inc", "INC (aggregated in the switches)", "#7b2cbf" },
	{ "ring", "ring (host-based, switches route)", "#009e73" },
	{ "mpi-tcp", "OpenMPI over TCP", "#0072b2" },
	{ "mpi-ucx", "OpenMPI over UCX/rxe", "#e69f00" },
};
#define NALGOS (sizeof(algos) / sizeof(algos[0]))

static const char *const coll_titles[RES_NCOLL] = { "AllReduce", "Reduce",   "Broadcast", "AllGather",
						     "ReduceScatter", "AllToAll", "Barrier",   "point to point" };

/* The seed's published results (SPEC.md; 1-2-4 tree, 4 hosts; MB = MiB). */
static const struct seed_row {
	enum res_coll coll;
	int mib;
	double time_s, mbps;
} seed[] = {
	{ RES_ALLREDUCE, 32, 5.9, 45 },   { RES_ALLREDUCE, 128, 3.4, 300 }, { RES_ALLREDUCE, 256, 6.4, 320 },
	{ RES_ALLREDUCE, 512, 13.8, 300 }, { RES_ALLREDUCE, 1024, 89, 90 }, { RES_REDUCE, 32, 5.3, 50.8 },
	{ RES_REDUCE, 512, 130, 31 },
};
#define SEED_TOPOLOGY "1-2-4"

/* One measurement's counters, summed over the switches (switch.csv) or the hosts (rxe.csv). */
struct cnt_meas {
	char algo[16], coll[16];
	double bytes;
	long round, calls;
	double timeouts, retransmits; /* switch.csv */
	double intr, pkts;            /* rxe.csv: the guests' interrupts; rxe's packets sent and received */
	double tintr, tpkts;          /* rxe.csv's timed_intr, timed_pkts: the same inside the timed calls only */
};

struct run {
	char dir[4096];
	char name[256];
	struct res_meta meta;
	struct res_table t;
	struct res_points pts;
	bool has_loggp, fitted;
	struct loggp fit;
	char fit_err[RES_ERR_LEN];
	struct loggp_tree tree;  /* the topology as a uniform tree (when fitted) */
	int speed_n;             /* cpu.csv's speed probes (model_speed()); fit.speed set from LOGGP_SPEED_PROBES */
	double speed_lo, speed_hi; /* their least and greatest over probe_ref */
	struct loggp_cpu cpu;    /* cpu.csv: the nodes' CPU per measurement; n = 0 without */
	double sw_cpu, sw_frames, model_frames; /* over the INC measurements: switch CPU (us), frames counted, modelled */
	struct cnt_meas *swm;    /* switch.csv: the switches' timeouts per measurement; nswm = 0 without */
	size_t nswm;
	struct cnt_meas *hm;     /* rxe.csv: the hosts' interrupts and packets per measurement; nhm = 0 without */
	size_t nhm;
	struct cpuwin_table cw;  /* cpuwin.csv: the CPU inside the timed calls per measurement; n = 0 without */
	size_t unverified;       /* rows with wrong elements, left out */
};

static int errors;

/* complain() - one line "increport: MESSAGE" on stderr, counted in errors: any complaint makes the exit status 1. */
static void complain(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "increport: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	errors++;
}

/* exists() - whether stat() finds @path (a file, a directory, anything; not a dangling link). */
static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* ---- loading ------------------------------------------------------------------ */

/* "YYYY-mm-ddTHH:MM:SSZ" from a run name ending in -YYYYmmdd-HHMMSS[-K], or "" if it does not. */
static void date_from_name(const char *name, char *out, size_t len)
{
	int y, mo, d, h, mi, sec;
	const char *p = name;

	out[0] = 0;
	for (; (p = strchr(p, '-')); p++)
		if (sscanf(p, "-%4d%2d%2d-%2d%2d%2d", &y, &mo, &d, &h, &mi, &sec) == 6) {
			snprintf(out, len, "%04d-%02d-%02dT%02d:%02d:%02dZ", y, mo, d, h, mi, sec);
			return;
		}
}

/*
 * model_inputs() - what the model needs of run @r besides loggp.csv: its
 * topology as a uniform tree, and from cpu.csv and switch-counters.txt (when
 * both are there) the switches' CPU and frames over the INC measurements,
 * and the frames the model counts for them. Returns 0, or -1 with the
 * reason in r->fit_err (a cpu.csv or counters file that does not read is
 * also complained about: the run is still drawn).
 */
static int model_inputs(struct run *r)
{
	char path[4200], err[RES_ERR_LEN];

	if (loggp_tree_parse(r->meta.topology, &r->tree) < 0 ||
	    (r->meta.nranks && r->tree.count[r->tree.levels - 1] != r->meta.nranks)) {
		snprintf(r->fit_err, sizeof(r->fit_err), "topology '%.60s' is not a uniform tree of its ranks (1-2-4, 1-4-16, ...)",
			 r->meta.topology);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/cpu.csv", r->dir);
	if (!exists(path))
		return 0;
	if (loggp_load_cpu(path, &r->cpu, err, sizeof(err)) < 0) {
		complain("%s", err);
		snprintf(r->fit_err, sizeof(r->fit_err), "%s", err);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/switch-counters.txt", r->dir);
	if (!exists(path))
		return 0;
	if (loggp_load_frames(path, &r->sw_frames, err, sizeof(err)) < 0) {
		complain("%s", err);
		snprintf(r->fit_err, sizeof(r->fit_err), "%s", err);
		return -1;
	}
	loggp_inc_switch_work(&r->cpu, &r->tree, &r->sw_cpu, &r->model_frames);
	return 0;
}

/*
 * load_counters_csv() - read @path, switch.csv ("algorithm,collective,bytes,
 * round,calls,switch,counter,delta") or, with @hosts, rxe.csv (the same with
 * "node"): one node's counter per line, the lines of one measurement
 * together. Into r->swm, per measurement, the retransmit timeouts and
 * retransmits of all switches; with @hosts into r->hm the guest interrupts
 * (guest_intr) and rxe's packets sent and received (sent_pkts, rcvd_pkts) of
 * all hosts, and the same inside the timed calls (timed_intr, timed_pkts:
 * inccl_perf's windows, whose rows carry the timed calls' count). Every field is checked (names of at most 15 characters, whole
 * numbers, a counter of [a-z_]); the first bad line is complained about with
 * its number and nothing of the file is kept. Returns 0, or -1.
 */
static int load_counters_csv(struct run *r, const char *path, bool hosts)
{
	const char *header = hosts ? "algorithm,collective,bytes,round,calls,node,counter,delta"
				   : "algorithm,collective,bytes,round,calls,switch,counter,delta";
	struct cnt_meas **arr = hosts ? &r->hm : &r->swm;
	size_t *narr = hosts ? &r->nhm : &r->nswm;
	FILE *f = fopen(path, "r");
	char buf[512];
	int line = 0;
	size_t cap = 0;

	if (!f) {
		complain("%s: cannot open", path);
		return -1;
	}
	while (fgets(buf, sizeof(buf), f)) {
		char *v[9], *s = buf, *nl = strchr(buf, '\n'), *e1, *e2, *e3, *e4;
		int nf = 0;

		line++;
		if (!nl && !feof(f)) {
			complain("%s:%d: line longer than %zu characters", path, line, sizeof(buf) - 2);
			goto bad;
		}
		if (nl)
			*nl = 0;
		if (line == 1) {
			if (strcmp(buf, header)) {
				complain("%s:1: header is not '%s'", path, header);
				goto bad;
			}
			continue;
		}
		if (!buf[0])
			continue;
		for (v[nf++] = s; *s && nf < 9; s++)
			if (*s == ',') {
				*s = 0;
				v[nf++] = s + 1;
			}
		if (nf != 8) {
			complain("%s:%d: not '%s' (8 fields)", path, line, header);
			goto bad;
		}
		double bytes = strtod(v[2], &e1), delta = strtod(v[7], &e4);
		long round = strtol(v[3], &e2, 10), calls = strtol(v[4], &e3, 10);
		if (*e1 || *e2 || *e3 || *e4 || !v[2][0] || !v[7][0] || !(bytes >= 0) || round < 1 || calls < 1 ||
		    !(delta >= 0 && delta < 1e19) || strlen(v[0]) >= 16 || strlen(v[1]) >= 16 || !v[5][0] ||
		    strlen(v[5]) > 64 || !v[6][0] || strlen(v[6]) > 40 || strspn(v[6], "abcdefghijklmnopqrstuvwxyz_") != strlen(v[6])) {
			complain("%s:%d: not '%s' (names, whole numbers)", path, line, header);
			goto bad;
		}
		struct cnt_meas *m = *narr ? &(*arr)[*narr - 1] : NULL;
		if (!m || strcmp(m->algo, v[0]) || strcmp(m->coll, v[1]) || m->bytes != bytes || m->round != round ||
		    m->calls != calls) {
			if (*narr == cap) {
				size_t nc = cap ? 2 * cap : 64;
				void *p = realloc(*arr, nc * sizeof(**arr));
				if (!p) {
					complain("%s:%d: out of memory", path, line);
					goto bad;
				}
				*arr = p;
				cap = nc;
			}
			m = &(*arr)[(*narr)++];
			memset(m, 0, sizeof(*m));
			snprintf(m->algo, sizeof(m->algo), "%s", v[0]);
			snprintf(m->coll, sizeof(m->coll), "%s", v[1]);
			m->bytes = bytes;
			m->round = round;
			m->calls = calls;
		}
		if (!strcmp(v[6], "timeouts"))
			m->timeouts += delta;
		else if (!strcmp(v[6], "retransmits"))
			m->retransmits += delta;
		else if (!strcmp(v[6], "guest_intr"))
			m->intr += delta;
		else if (!strcmp(v[6], "sent_pkts") || !strcmp(v[6], "rcvd_pkts"))
			m->pkts += delta;
		else if (!strcmp(v[6], "timed_intr"))
			m->tintr += delta;
		else if (!strcmp(v[6], "timed_pkts"))
			m->tpkts += delta;
	}
	fclose(f);
	return 0;
bad:
	fclose(f);
	free(*arr);
	*arr = NULL;
	*narr = 0;
	return -1;
}

/* per_call_timeouts() - meas_median()'s figure: @m's switch retransmit timeouts per collective (calls >= 1 when read). */
static double per_call_timeouts(const struct cnt_meas *m) { return m->timeouts / m->calls; }
/* intr_per_packet() - meas_median()'s figure: @m's guest interrupts per rxe packet; -1 (none in it) without packets. */
static double intr_per_packet(const struct cnt_meas *m) { return m->pkts > 0 ? m->intr / m->pkts : -1; }
/* timed_intr_per_packet() - the same inside the timed calls (timed_intr, timed_pkts); -1 without them. */
static double timed_intr_per_packet(const struct cnt_meas *m) { return m->tpkts > 0 ? m->tintr / m->tpkts : -1; }

/* timed_intr_per_call() - meas_median()'s figure: @m's interrupts per timed call (timed_intr); -1 without them. */
static double timed_intr_per_call(const struct cnt_meas *m) { return m->tpkts > 0 ? m->tintr / m->calls : -1; }
/* timed_pkts_per_call() - the same of rxe's packets sent and received (timed_pkts). */
static double timed_pkts_per_call(const struct cnt_meas *m) { return m->tpkts > 0 ? m->tpkts / m->calls : -1; }

/*
 * meas_median() - the median over the rounds of @fig of the measurements
 * @m[0..@n) of @algo / @coll / @bytes that have one, in *@out. Returns the
 * rounds found, 0 when none (the file absent, an older run, no such rows).
 */
static int meas_median(const struct cnt_meas *m, size_t n, double (*fig)(const struct cnt_meas *), const char *algo,
		       const char *coll, double bytes, double *out)
{
	double v[RES_MAX_ROUNDS + 1];
	int k = 0;

	for (size_t i = 0; i < n && k <= RES_MAX_ROUNDS; i++)
		if (!strcmp(m[i].algo, algo) && !strcmp(m[i].coll, coll) && m[i].bytes == bytes && fig(&m[i]) >= 0)
			v[k++] = fig(&m[i]);
	if (k)
		*out = loggp_median(v, (size_t)k);
	return k;
}

/* switch_timeouts() - meas_median() of the switches' retransmit timeouts per collective (switch.csv; not the ring's). */
static int switch_timeouts(const struct run *r, const char *algo, const char *coll, double bytes, double *per_call)
{
	return meas_median(r->swm, r->nswm, per_call_timeouts, algo, coll, bytes, per_call);
}

/* host_intr_per_packet() - meas_median() of the hosts' guest interrupts per rxe packet sent and received (rxe.csv). */
static int host_intr_per_packet(const struct run *r, const char *algo, const char *coll, double bytes, double *ratio)
{
	return meas_median(r->hm, r->nhm, intr_per_packet, algo, coll, bytes, ratio);
}

/* host_timed_intr_per_packet() - meas_median() of the same inside the timed calls (rxe.csv's timed_* rows). */
static int host_timed_intr_per_packet(const struct run *r, const char *algo, const char *coll, double bytes,
				      double *ratio)
{
	return meas_median(r->hm, r->nhm, timed_intr_per_packet, algo, coll, bytes, ratio);
}

/*
 * host_timed_per_call() - meas_median() of the hosts' interrupts and of their rxe packets per timed call
 * (rxe.csv's timed_* rows: all hosts), in *@intr and *@pkts. Returns the rounds with both, 0 without.
 */
static int host_timed_per_call(const struct run *r, const char *algo, const char *coll, double bytes, double *intr,
			       double *pkts)
{
	int k = meas_median(r->hm, r->nhm, timed_intr_per_call, algo, coll, bytes, intr);
	return k && meas_median(r->hm, r->nhm, timed_pkts_per_call, algo, coll, bytes, pkts) == k ? k : 0;
}

static void model_steps(struct run *r);
static void model_speed(struct run *r);

/* Read run directory @dir into @r; 0, or -1 after complaining. */
static int load_run(const char *dir, struct run *r)
{
	char path[4200], err[RES_ERR_LEN];
	const char *slash;

	memset(r, 0, sizeof(*r));
	snprintf(r->dir, sizeof(r->dir), "%s", dir);
	slash = strrchr(dir, '/');
	snprintf(r->name, sizeof(r->name), "%s", slash && slash[1] ? slash + 1 : dir);
	for (const char *p = r->name; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			complain("%s: a run directory whose name holds a control character is not read (rename it)", dir);
			return -1;
		}
	snprintf(path, sizeof(path), "%s/results.csv", dir);
	if (res_load_csv(path, &r->t, err, sizeof(err)) < 0) {
		complain("%s", err);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/meta.yaml", dir);
	if (exists(path) && res_load_meta(path, &r->meta, err, sizeof(err)) < 0) {
		complain("%s", err);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/results.csv", dir);
	if (res_check_rounds(&r->t, &r->meta, path, err, sizeof(err)) < 0) {
		complain("%s", err);
		return -1;
	}
	if (!r->meta.date[0]) /* no meta.yaml yet (a run in progress): the time in its name, NAME-YYYYmmdd-HHMMSS */
		date_from_name(r->name, r->meta.date, sizeof(r->meta.date));
	if (!r->meta.topology[0])
		snprintf(r->meta.topology, sizeof(r->meta.topology), "unknown topology");
	if (!r->meta.accelerator[0])
		snprintf(r->meta.accelerator, sizeof(r->meta.accelerator), "unknown");
	if (!r->meta.switch_mode[0]) /* runs from before the key: the switches were VMs */
		snprintf(r->meta.switch_mode, sizeof(r->meta.switch_mode), "vm");
	snprintf(path, sizeof(path), "%s/loggp.csv", dir);
	if (exists(path)) {
		if (res_load_loggp(path, &r->pts, err, sizeof(err)) < 0) {
			complain("%s", err);
			return -1;
		}
		r->has_loggp = true;
		if (model_inputs(r) == 0)
			r->fitted = loggp_params(r->pts.p, r->pts.n, r->meta.host_cores, r->sw_cpu, r->sw_frames, r->model_frames,
						 &r->fit, r->fit_err, sizeof(r->fit_err)) == 0;
		if (r->fitted && r->meta.message > 0)
			r->fit.message = r->meta.message;
		if (r->fitted) {
			model_steps(r);
			model_speed(r);
		}
	}
	snprintf(path, sizeof(path), "%s/switch.csv", dir);
	if (exists(path))
		load_counters_csv(r, path, false); /* complained about when bad: the run is still drawn, without the column */
	snprintf(path, sizeof(path), "%s/rxe.csv", dir);
	if (exists(path))
		load_counters_csv(r, path, true); /* the same */
	snprintf(path, sizeof(path), "%s/cpuwin.csv", dir);
	if (exists(path)) { /* the same: complained about when bad, the run drawn without the column */
		FILE *f = fopen(path, "r");
		if (!f)
			complain("%s: cannot open: %s", path, strerror(errno));
		else if (cpuwin_parse_csv(f, path, &r->cw, err, sizeof(err)) < 0)
			complain("%s", err);
		if (f)
			fclose(f);
	}
	for (size_t i = 0; i < r->t.n; i++)
		r->unverified += r->t.rows[i].wrong != 0;
	return 0;
}

/* free_run() - free what load_run() allocated in @r, also after it failed (it zeroes @r first). */
static void free_run(struct run *r)
{
	res_table_free(&r->t);
	res_points_free(&r->pts);
	loggp_cpu_free(&r->cpu);
	free(r->swm);
	free(r->hm);
	cpuwin_table_free(&r->cw);
}

/* The first verified row of @algo / @coll / @bytes in @r (bytes ignored when -1), or NULL. */
static const struct res_row *find_row(const struct run *r, const char *algo, enum res_coll coll, int64_t bytes)
{
	for (size_t i = 0; i < r->t.n; i++) {
		const struct res_row *x = &r->t.rows[i];
		if (x->wrong == 0 && x->coll == coll && !strcmp(x->algo, algo) && (bytes < 0 || x->bytes == (uint64_t)bytes))
			return x;
	}
	return NULL;
}

/* Figures of one measurement over the rounds of a run: medians, min-max, how many rows. */
struct agg {
	int n;
	double t_med, t_min, t_max;  /* time_us */
	double bw_med, bw_min, bw_max; /* algbw, -1 when it does not apply */
	double bb_med;                 /* busbw */
};

/* med_range() - sort @v[0..@n) (@n >= 1) and give its median (loggp_median()), min and max. */
static void med_range(double *v, int n, double *med, double *lo, double *hi)
{
	*med = loggp_median(v, (size_t)n);
	*lo = v[0];
	*hi = v[n - 1];
}

/* aggregate_by() - aggregate() of time_us or time_max_us: below. */
static bool aggregate_by(const struct run *r, const char *algo, enum res_coll coll, int64_t bytes, bool slowest,
			 struct agg *a);

/*
 * aggregate() - @a: the verified rows of @algo / @coll / @bytes in @r
 * (bytes ignored when -1) taken together (one row per round): the median and
 * min-max of their times and algorithm bandwidths. With bytes > 0 the median
 * bandwidth is bytes / the median time, and the median busbw that times the
 * rows' busbw / algbw factor (their median), so that time and bandwidth never
 * disagree (with an even count each median is a mean of two middle values,
 * and those of time and bandwidth are not each other's); without bytes (-1, a
 * barrier) the medians of the rows. False when there is none (or no memory).
 */
static bool aggregate(const struct run *r, const char *algo, enum res_coll coll, int64_t bytes, struct agg *a)
{
	return aggregate_by(r, algo, coll, bytes, false, a);
}

/*
 * model_time_max() - whether the LogGP model's comparisons in @r use the
 * slowest rank's time: the run has the time_max_us column and every row of
 * inc and ring (the algorithms the model predicts) gives one. Else rank 0's
 * time_us (a run from before time_max_us), which is early where rank 0
 * returns before the others (a Broadcast's root).
 */
static bool model_time_max(const struct run *r)
{
	if (!r->t.with_time_max)
		return false;
	for (size_t i = 0; i < r->t.n; i++) {
		const struct res_row *x = &r->t.rows[i];
		if ((!strcmp(x->algo, "inc") || !strcmp(x->algo, "ring")) && x->time_max_us <= 0)
			return false;
	}
	return true;
}

/* What model_time_max() chose for @r, as REPORT names it. */
static const char *model_time_what(const struct run *r)
{
	return model_time_max(r) ? "the slowest rank's time (time_max_us)" : "rank 0's time (the run has no time_max_us)";
}

/*
 * aggregate_by() - aggregate() of the rows' time_us, or with @slowest of
 * their time_max_us (a row without one: its time_us): the figure the LogGP
 * model is compared with (model_time_max()).
 */
static bool aggregate_by(const struct run *r, const char *algo, enum res_coll coll, int64_t bytes, bool slowest,
			 struct agg *a)
{
	double *t, *bw, *bb, lo, hi;
	int n = 0, nf = 0;

	memset(a, 0, sizeof(*a));
	if (!find_row(r, algo, coll, bytes))
		return false;
	t = malloc(3 * r->t.n * sizeof(*t));
	if (!t)
		return false;
	bw = t + r->t.n;
	bb = bw + r->t.n;
	for (size_t i = 0; i < r->t.n; i++) {
		const struct res_row *x = &r->t.rows[i];
		if (x->wrong == 0 && x->coll == coll && !strcmp(x->algo, algo) && (bytes < 0 || x->bytes == (uint64_t)bytes)) {
			t[n] = slowest && x->time_max_us > 0 ? x->time_max_us : x->time_us;
			bw[n++] = x->algbw;
		}
	}
	a->n = n;
	med_range(t, n, &a->t_med, &a->t_min, &a->t_max);
	med_range(bw, n, &a->bw_med, &a->bw_min, &a->bw_max);
	for (size_t i = 0; i < r->t.n; i++) { /* busbw / algbw of each row where both apply */
		const struct res_row *x = &r->t.rows[i];
		if (x->wrong == 0 && x->coll == coll && !strcmp(x->algo, algo) && (bytes < 0 || x->bytes == (uint64_t)bytes) &&
		    x->algbw > 0 && x->busbw >= 0)
			bb[nf++] = x->busbw / x->algbw;
	}
	if (bytes > 0 && a->bw_med >= 0) {
		a->bw_med = (double)bytes / a->t_med; /* MB/s: bytes / us */
		a->bb_med = -1;
		if (nf) {
			med_range(bb, nf, &a->bb_med, &lo, &hi);
			a->bb_med *= a->bw_med;
		}
	} else {
		n = 0;
		for (size_t i = 0; i < r->t.n; i++) {
			const struct res_row *x = &r->t.rows[i];
			if (x->wrong == 0 && x->coll == coll && !strcmp(x->algo, algo) && (bytes < 0 || x->bytes == (uint64_t)bytes))
				bb[n++] = x->busbw;
		}
		med_range(bb, n, &a->bb_med, &lo, &hi);
	}
	free(t);
	return true;
}

/*
 * model_steps() - the time of a step of run @r's collectives, from its
 * verified Barriers (the median over its rounds): INC's Barrier is one step
 * (every rank's empty packet up and down the tree, after the barrier before
 * it released the ranks at different times); the ring's is 2(P-1) steps of
 * an empty message. Left 0 (the model then takes L + 2o) without them.
 */
static void model_steps(struct run *r)
{
	struct agg g;
	int p = r->tree.count[r->tree.levels - 1];

	if (aggregate(r, "inc", RES_BARRIER, -1, &g) && g.t_med > 0)
		r->fit.step_inc = g.t_med;
	if (p > 1 && aggregate(r, "ring", RES_BARRIER, -1, &g) && g.t_med > 0)
		r->fit.step_ring = g.t_med / (2.0 * (p - 1));
}

/*
 * model_speed() - the machine's speed during the run's collectives against
 * loggp.sh's: the median of every measurement's probe (cpu.csv: one pass of
 * hostwork's float sum in rank 0's host, just before it) over loggp.sh's
 * pass (probe_ref), into r->fit.speed, which scales every host's work
 * (loggp_predict()), with the count, least and greatest in r->speed_*. Left
 * at 0 (as measured) with fewer than LOGGP_SPEED_PROBES probes or no reference.
 */
static void model_speed(struct run *r)
{
	double *v;
	size_t n = 0;

	r->speed_n = 0;
	if (!(r->fit.probe_ref > 0) || !r->cpu.n || !(v = malloc(r->cpu.n * sizeof(*v))))
		return;
	for (size_t i = 0; i < r->cpu.n; i++)
		if (r->cpu.r[i].probe > 0)
			v[n++] = r->cpu.r[i].probe / r->fit.probe_ref;
	r->speed_n = (int)n;
	if (n >= LOGGP_SPEED_PROBES) {
		r->fit.speed = loggp_median(v, n); /* sorts v */
		r->speed_lo = v[0];
		r->speed_hi = v[n - 1];
	}
	free(v);
}

/*
 * @a: the p2p rows of @algo (a ceiling) over the rounds, MB/s in a->bw_*:
 * bytes / the median time when every row has the same size (aggregate()),
 * else the median of the rows' figures. False when not measured.
 */
static bool p2p_agg(const struct run *r, const char *algo, struct agg *a)
{
	const struct res_row *first = find_row(r, algo, RES_P2P, -1);
	int64_t bytes;

	if (!first)
		return false;
	bytes = (int64_t)first->bytes;
	for (size_t i = 0; i < r->t.n; i++)
		if (r->t.rows[i].wrong == 0 && r->t.rows[i].coll == RES_P2P && !strcmp(r->t.rows[i].algo, algo) &&
		    r->t.rows[i].bytes != first->bytes)
			bytes = -1;
	return aggregate(r, algo, RES_P2P, bytes, a);
}

/* The median of @algo's p2p rows (a ceiling) in MB/s, -1 when not measured (p2p_agg()). */
static double p2p_of(const struct run *r, const char *algo)
{
	struct agg a;

	return p2p_agg(r, algo, &a) ? a.bw_med : -1;
}

/* The RDMA ceiling of @r: ib_send_bw across the tree, an unloaded pair (p2p_of() "ceiling"), MB/s; -1 when not measured. */
static double ceiling_of(const struct run *r)
{
	return p2p_of(r, "ceiling");
}

/* The same-load ceiling: every host sending and receiving at once (ceiling.sh CEILING_MODE=load), per host. */
static double load_ceiling_of(const struct run *r)
{
	return p2p_of(r, "ceiling-load");
}

/* The highest 1-minute load average as a round of @r began, -1 when none was
 * recorded (the load after a round includes the round's own work). */
static double max_load(const struct run *r)
{
	double m = -1;

	for (int i = 0; i < r->meta.ncond; i++)
		m = fmax(m, r->meta.cond[i].load_before);
	return m;
}

/* The lowest, -1 when none was recorded. */
static double min_load(const struct run *r)
{
	double m = INFINITY;

	for (int i = 0; i < r->meta.ncond; i++)
		if (r->meta.cond[i].load_before >= 0)
			m = fmin(m, r->meta.cond[i].load_before);
	return isinf(m) ? -1 : m;
}

/* The ranks of @r's collectives: the first row's that is not p2p, else meta.yaml's nranks (0 when it has none). */
static int nranks_of(const struct run *r)
{
	for (size_t i = 0; i < r->t.n; i++)
		if (r->t.rows[i].coll != RES_P2P)
			return r->t.rows[i].nranks;
	return r->meta.nranks;
}

/* ---- output files ----------------------------------------------------------- */

/*
 * create() - open @dir/@name for writing (truncated), its path into @path
 * (@len bytes, cut if longer). Returns the stream, to close with finish(),
 * or NULL after complaining.
 */
static FILE *create(const char *dir, const char *name, char *path, size_t len)
{
	FILE *f;

	snprintf(path, len, "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		complain("cannot write %s: %s", path, strerror(errno));
	return f;
}

/* Close @f written to @path; a full disk shows here. */
static int finish(FILE *f, const char *path)
{
	bool bad = ferror(f);

	if (fclose(f) != 0 || bad) {
		complain("writing %s failed: %s", path, strerror(errno ? errno : EIO));
		return -1;
	}
	return 0;
}

/* Whether @c is a control character (below 0x20, or DEL): never written into a script or the report. */
static bool is_ctl(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

/*
 * gnuplot: @s as one single-quoted string ('' is a quote; no backquote or
 * macro substitution happens inside single quotes); a control character
 * becomes a space, so no newline can end the command and start another.
 */
static void gp_string(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', f);
		fputc(is_ctl((unsigned char)*s) ? ' ' : *s, f);
	}
	fputc('\'', f);
}

/*
 * Markdown: @s as plain text in @buf (a paragraph, a list item or a table
 * cell): control characters become spaces and every character that could
 * start markup (\ ` * _ [ ] < > | & ~ ! #) is escaped with a backslash, so a
 * value from a file shows as written and never as a link, an image, HTML or
 * another table cell. Truncated to fit, never in the middle of an escape.
 */
static const char *md_text(char *buf, size_t len, const char *s)
{
	size_t n = 0;

	for (; *s && n + 3 <= len; s++) {
		unsigned char c = (unsigned char)*s;
		if (strchr("\\`*_[]<>|&~!#", c))
			buf[n++] = '\\';
		buf[n++] = is_ctl(c) ? ' ' : (char)c;
	}
	buf[n] = 0;
	return buf;
}

/*
 * Markdown: @s as an inline code span in @buf, delimited by one backtick more
 * than the longest run of backticks in it (CommonMark), control characters
 * as spaces; for paragraphs and list items (not table cells). Truncated to fit.
 */
static const char *md_code(char *buf, size_t len, const char *s)
{
	size_t run = 0, longest = 0, n = 0, k, ticks;
	bool pad;

	for (const char *p = s; *p; p++) {
		run = *p == '`' ? run + 1 : 0;
		if (run > longest)
			longest = run;
	}
	ticks = longest + 1;
	pad = s[0] == '`' || (s[0] && s[strlen(s) - 1] == '`');
	if (len < 2 * ticks + 3 || ticks > 8) { /* absurd input: no code span, plain text */
		return md_text(buf, len, s);
	}
	for (k = 0; k < ticks; k++)
		buf[n++] = '`';
	if (pad)
		buf[n++] = ' ';
	for (; *s && n + ticks + 2 < len; s++)
		buf[n++] = is_ctl((unsigned char)*s) ? ' ' : *s;
	if (pad)
		buf[n++] = ' ';
	for (k = 0; k < ticks; k++)
		buf[n++] = '`';
	buf[n] = 0;
	return buf;
}

/* Markdown: @s as a relative link destination in @buf, every byte but A-Z a-z 0-9 - . _ ~ / percent-encoded. */
static const char *md_url(char *buf, size_t len, const char *s)
{
	size_t n = 0;

	for (; *s && n + 4 <= len; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || strchr("-._~/", c))
			buf[n++] = (char)c;
		else
			n += (size_t)snprintf(buf + n, len - n, "%%%02X", c);
	}
	buf[n] = 0;
	return buf;
}

/* ---- charts ------------------------------------------------------------------- */

/*
 * How charts look. The grid is light grey and dotted (GRID_STYLE); no data
 * line or ceiling is grey, and every ceiling is a thick dashed line in its
 * own colour with its own label, so none reads as a grid line. The key goes
 * below the x axis label, one entry per line: `set bmargin` reserves the
 * x tic labels, the x label, a blank line and one line per entry
 * (KEY_MARGIN_LINES + entries, in character heights), so gnuplot never puts
 * the key over the x label (which it does with `set key below` alone). The
 * canvas grows by KEY_ROW_PX per entry (a line of sans 10 pt at 96 dpi is
 * about 17 px) so the plot keeps its CHART_H - title - axes height.
 */
#define GRID_STYLE "lc rgb '#c0c0c0' lw 1 dt 3"
#define CHART_W 960
#define CHART_H 560
#define KEY_ROW_PX 18
#define KEY_MARGIN_LINES 4
/* Headroom above the highest value or ceiling, so the top of an error bar or a ceiling is not on the frame. */
#define Y_HEADROOM 1.18

static void fmt_size(char *buf, size_t len, uint64_t bytes);

/* A ceiling as drawn: its key title, its label on the chart, its style. */
struct ceil_line {
	char key[200], label[80];
	double mbps;
	const char *style;
};

/*
 * The run's ceilings into @c[3] (the unloaded pair, the same-load ceiling,
 * the unloaded pair busy polling), in that order; returns how many were
 * measured. Each names its median and, over several rounds, min – max.
 */
static int ceilings(const struct run *r, struct ceil_line c[3])
{
	static const struct {
		const char *algo, *what, *label, *style;
	} kinds[] = {
		{ "ceiling", "RDMA ceiling: ib_send_bw -e across the tree, unloaded pair", "RDMA",
		  "lw 3 dt 2 lc rgb '#d62728'" },
		{ "ceiling-load", "same-load ceiling per host: every host ib_send_bw -b -e at once", "same load",
		  "lw 3 dt 4 lc rgb '#e7298a'" },
		{ NULL, "RDMA ceiling with busy polling (perftest default), unloaded pair", "busy poll",
		  "lw 3 dt 5 lc rgb '#8c564b'" },
	};
	int n = 0;

	for (size_t k = 0; k < 3; k++) {
		struct agg a;
		struct ceil_line *x = &c[n];

		if (kinds[k].algo) {
			if (!p2p_agg(r, kinds[k].algo, &a) || a.bw_med <= 0)
				continue;
		} else {
			if (r->meta.ceiling_poll <= 0)
				continue;
			memset(&a, 0, sizeof(a));
			a.n = 1;
			a.bw_med = r->meta.ceiling_poll;
		}
		x->mbps = a.bw_med;
		x->style = kinds[k].style;
		if (a.n > 1)
			snprintf(x->key, sizeof(x->key), "%s: %.2f MB/s, median of %d rounds (%.2f – %.2f)", kinds[k].what,
				 a.bw_med, a.n, a.bw_min, a.bw_max);
		else
			snprintf(x->key, sizeof(x->key), "%s: %.2f MB/s", kinds[k].what, a.bw_med);
		snprintf(x->label, sizeof(x->label), "%s %.2f MB/s", kinds[k].label, a.bw_med);
		n++;
	}
	return n;
}

/*
 * Ceiling labels sit in the right margin, outside the plot, level with their
 * lines: nothing in the plot is covered (an opaque label inside it hid a bar
 * where a ceiling crossed one). Two labels closer than LABEL_GAP of the
 * plot's height are moved apart (the plot is about 420 px high whatever the
 * key: gp_outputs() grows the canvas per entry; a line of sans 10 pt is
 * about 17 px, so 0.05 is 21 px), keeping the order of their values.
 */
#define LABEL_GAP 0.05

/*
 * gnuplot: the ceilings @c[@n] as labels in the right margin at their lines'
 * heights on a y axis from 0 to @ytop (see LABEL_GAP), never on each other,
 * and the right margin that holds the longest.
 */
static void gp_ceiling_labels(FILE *f, const struct ceil_line *c, int n, double ytop)
{
	int order[3] = { 0, 1, 2 };
	double y[3];
	size_t width = 0;

	for (int i = 0; i < n; i++) /* by value, ascending */
		for (int j = i + 1; j < n; j++)
			if (c[order[j]].mbps < c[order[i]].mbps) {
				int t = order[i];
				order[i] = order[j];
				order[j] = t;
			}
	for (int i = 0; i < n; i++) { /* upwards: each at least LABEL_GAP over the one below */
		y[i] = ytop > 0 ? c[order[i]].mbps / ytop : 0;
		if (i && y[i] < y[i - 1] + LABEL_GAP)
			y[i] = y[i - 1] + LABEL_GAP;
	}
	for (int i = n - 1; i >= 0; i--) /* downwards: none above the top */
		if (y[i] > (i == n - 1 ? 1.0 : y[i + 1] - LABEL_GAP))
			y[i] = i == n - 1 ? 1.0 : y[i + 1] - LABEL_GAP;
	for (int i = 0; i < n; i++) {
		const struct ceil_line *x = &c[order[i]];
		const char *colour = strstr(x->style, "rgb ");

		fprintf(f, "set label %d '%s' at graph 1, graph %.4f offset 1,0 left front tc %s\n", i + 1, x->label, y[i],
			colour ? colour : "rgb 'black'");
		if (strlen(x->label) > width)
			width = strlen(x->label);
	}
	if (n)
		fprintf(f, "set rmargin %zu\n", width + 2);
}

/*
 * gnuplot: the ceilings @c[@n] as plot elements without key entries (after
 * "plot" with @first, else each after a comma), or (@keys) their key
 * entries as NaN lines, so that the key lists them after the data wherever
 * the lines are drawn: first under line charts (data on a ceiling stays
 * visible), last over bar charts (a bar does not hide them).
 */
static size_t gp_ceiling_plots(char *plot, size_t len, const struct ceil_line *c, int n, bool keys, bool first)
{
	size_t k = 0;

	if (first)
		k += (size_t)snprintf(plot, len, "plot");
	for (int i = 0; i < n && k < len; i++)
		if (keys)
			k += (size_t)snprintf(plot + k, len - k, ", NaN with lines %s title '%s'", c[i].style, c[i].key);
		else
			k += (size_t)snprintf(plot + k, len - k, "%s %.6g with lines %s notitle", first && !i ? "" : ",",
					      c[i].mbps, c[i].style);
	return k;
}

/*
 * The most rounds any one size of @algo / @coll has verified rows in (all
 * sizes as one with @any_size), 0 if none: above 1, its charts draw min – max bars.
 */
static int rounds_of(const struct run *r, const char *algo, enum res_coll coll, bool any_size)
{
	int best = 0;

	for (size_t i = 0; i < r->t.n; i++) {
		const struct res_row *x = &r->t.rows[i];
		int k = 0;

		if (x->wrong || x->coll != coll || strcmp(x->algo, algo))
			continue;
		for (size_t j = 0; j < r->t.n; j++) {
			const struct res_row *y = &r->t.rows[j];
			k += !y->wrong && y->coll == coll && (any_size || y->bytes == x->bytes) && !strcmp(y->algo, algo);
		}
		if (k > best)
			best = k;
	}
	return best;
}

/*
 * gp_header() - the first lines of a gnuplot script on @f: a comment of what
 * it draws (@what) and how to run it, UTF-8, the grid, data split at white space.
 */
static void gp_header(FILE *f, const char *what)
{
	fprintf(f, "# %s — written by increport (make plots); run from this directory: gnuplot FILE.gp\n", what);
	fprintf(f, "set encoding utf8\nset grid " GRID_STYLE "\nset datafile separator whitespace\n");
}

/* gnuplot: @n key entries below the x label (see GRID_STYLE), or none; x tic labels of @tic_lines lines. */
static void gp_key(FILE *f, int n, int tic_lines)
{
	if (n)
		fprintf(f, "set key below center vertical maxcols 1 spacing 1.1 samplen 5\nset bmargin %d\n",
			KEY_MARGIN_LINES + tic_lines - 1 + n);
	else
		fprintf(f, "unset key\nset bmargin %d\n", KEY_MARGIN_LINES + tic_lines - 1);
}

/* Draw the current plot into NAME.png and NAME.svg; the canvas grows with the @nkey entries of the key. */
static void gp_outputs(FILE *f, const char *name, const char *plot, int nkey)
{
	int h = CHART_H + KEY_ROW_PX * nkey;

	fprintf(f, "set terminal pngcairo size %d,%d font 'sans,10' noenhanced\nset output '%s.png'\n%s\n", CHART_W, h, name,
		plot);
	fprintf(f, "set terminal svg size %d,%d dynamic font 'sans,10' noenhanced\nset output '%s.svg'\nreplot\nunset output\n",
		CHART_W, h, name);
}

/* The chart's first title line: what, topology, accelerator, ranks, run. */
static void chart_title(char *buf, size_t len, const struct run *r, const char *what)
{
	char acc[16];
	size_t i;

	for (i = 0; r->meta.accelerator[i] && i < sizeof(acc) - 1; i++)
		acc[i] = (char)(r->meta.accelerator[i] >= 'a' && r->meta.accelerator[i] <= 'z' ? r->meta.accelerator[i] - 32
											   : r->meta.accelerator[i]);
	acc[i] = 0;
	snprintf(buf, len, "%s — topology %s, %s, %d ranks (run %s)", what, r->meta.topology, acc, nranks_of(r), r->name);
}

/* The chart's second title line: the run's conditions (switch mode, the hypervisors when several, commit, date, rounds). */
static void chart_conditions(char *buf, size_t len, const struct run *r)
{
	int rounds = r->meta.rounds ? r->meta.rounds : 1;

	char hyp[40] = "";

	if (r->meta.hypervisors > 1)
		snprintf(hyp, sizeof(hyp), ", over %d hypervisors", r->meta.hypervisors);
	snprintf(buf, len, "switches %s%s, commit %s, %s, %d round%s%s", r->meta.switch_mode, hyp,
		 r->meta.commit[0] ? r->meta.commit : "unknown", r->meta.date[0] ? r->meta.date : "date unknown", rounds,
		 rounds > 1 ? "s: medians, bars min – max" : "", r->t.with_rounds ? "" : " (a run from before rounds)");
}

/* gnuplot: the title of @r's chart @what, two lines, each one single-quoted string (gp_string). */
static void gp_title(FILE *f, const struct run *r, const char *what)
{
	char t[512], c[400];

	chart_title(t, sizeof(t), r, what);
	chart_conditions(c, sizeof(c), r);
	fprintf(f, "set title ");
	gp_string(f, t);
	fprintf(f, " . \"\\n\" . ");
	gp_string(f, c);
	fputc('\n', f);
}

/*
 * gnuplot: one line per algorithm of @coll in @have, from @coll-ALGO.dat
 * with y column @ycol; with several rounds at a size, min – max bars from
 * columns @lo and @hi; appended to @plot. Returns the number of lines.
 */
static int gp_algo_lines(char *plot, size_t len, size_t *n, const struct run *r, enum res_coll coll,
			 const bool have[NALGOS], int ycol, int lo, int hi)
{
	int k = 0;
	bool first = *n == 4; /* nothing after "plot" yet */

	for (size_t a = 0; a < NALGOS; a++) {
		int rounds;

		if (!have[a])
			continue;
		rounds = rounds_of(r, algos[a].name, coll, false);
		if (rounds > 1)
			*n += (size_t)snprintf(plot + *n, len - *n,
					       "%s '%s-%s.dat' using 1:%d:%d:%d with yerrorlines lw 2 pt 7 ps 0.8 lc rgb '%s' "
					       "title '%s: median of %d rounds, bars min – max'",
					       first && !k ? "" : ",", res_coll_name(coll), algos[a].name, ycol, lo, hi,
					       algos[a].colour, algos[a].label, rounds);
		else
			*n += (size_t)snprintf(plot + *n, len - *n,
					       "%s '%s-%s.dat' using 1:%d with linespoints lw 2 pt 7 ps 1.2 lc rgb '%s' "
					       "title '%s (one round)'",
					       first && !k ? "" : ",", res_coll_name(coll), algos[a].name, ycol, algos[a].colour,
					       algos[a].label);
		k++;
	}
	return k;
}

/* Whether algorithm @name is one the charts draw (algos[]). */
static bool drawn(const char *name)
{
	for (size_t a = 0; a < NALGOS; a++)
		if (!strcmp(name, algos[a].name))
			return true;
	return false;
}

/* Sizes of @coll's verified rows of the drawn algorithms: the x range of its charts. */
static bool size_range(const struct run *r, enum res_coll coll, double *lo, double *hi)
{
	*lo = INFINITY;
	*hi = 0;
	for (size_t i = 0; i < r->t.n; i++) {
		const struct res_row *x = &r->t.rows[i];
		if (x->coll == coll && x->wrong == 0 && x->bytes > 0 && drawn(x->algo)) {
			*lo = fmin(*lo, (double)x->bytes);
			*hi = fmax(*hi, (double)x->bytes);
		}
	}
	return *hi > 0;
}

/* The highest algorithm bandwidth (MB/s) of @coll's verified rows of the drawn algorithms, 0 if none. */
static double max_algbw(const struct run *r, enum res_coll coll)
{
	double m = 0;

	for (size_t i = 0; i < r->t.n; i++) {
		const struct res_row *x = &r->t.rows[i];
		if (x->coll == coll && x->wrong == 0 && x->bytes > 0 && drawn(x->algo))
			m = fmax(m, x->algbw);
	}
	return m;
}

/*
 * next_size() - of @r's verified rows of @coll by @algo, one of the smallest
 * size above @last: walking the sizes in ascending order from 0. NULL when
 * none is left.
 */
static const struct res_row *next_size(const struct run *r, enum res_coll coll, const char *algo, uint64_t last)
{
	const struct res_row *best = NULL;

	for (size_t i = 0; i < r->t.n; i++) {
		const struct res_row *x = &r->t.rows[i];
		if (x->coll == coll && x->wrong == 0 && !strcmp(x->algo, algo) && x->bytes > last &&
		    (!best || x->bytes < best->bytes))
			best = x;
	}
	return best;
}

/*
 * Write @coll-@algo.dat (per size, ascending: MiB, then the medians over the
 * rounds of time s, algbw, busbw, then algbw min and max, time min and max)
 * for every algorithm measured; which ones in @have.
 */
static int write_coll_data(const struct run *r, const char *pdir, enum res_coll coll, bool have[NALGOS])
{
	char name[96], path[4400];

	for (size_t a = 0; a < NALGOS; a++) {
		FILE *f = NULL;
		uint64_t last = 0;

		have[a] = false;
		for (const struct res_row *best; (best = next_size(r, coll, algos[a].name, last)); last = best->bytes) {
			if (!have[a]) {
				snprintf(name, sizeof(name), "%s-%s.dat", res_coll_name(coll), algos[a].name);
				if (!(f = create(pdir, name, path, sizeof(path))))
					return -1;
				fprintf(f, "# %s %s (run %s): MiB time_s algbw_MBps busbw_MBps (medians over the rounds) "
					   "algbw_min algbw_max time_min_s time_max_s\n",
					algos[a].name, res_coll_name(coll), r->name);
				have[a] = true;
			}
			struct agg g;
			aggregate(r, algos[a].name, coll, (int64_t)best->bytes, &g);
			fprintf(f, "%.9g %.9g %.6g %.6g %.6g %.6g %.9g %.9g\n", (double)best->bytes / MIB, g.t_med / 1e6, g.bw_med,
				g.bb_med, g.bw_min, g.bw_max, g.t_min / 1e6, g.t_max / 1e6);
		}
		if (have[a] && finish(f, path) < 0)
			return -1;
	}
	return 0;
}

/* @coll.gp: throughput and time charts of a collective with sizes. */
static int write_coll_script(const struct run *r, const char *pdir, enum res_coll coll, const bool have[NALGOS],
			     FILE *list)
{
	char name[64], path[4400], plot[8192];
	double lo, hi, ymax;
	struct ceil_line c[3];
	int nc = ceilings(r, c), nk;
	size_t n = 0;
	FILE *f;

	if (!size_range(r, coll, &lo, &hi))
		return 0;
	snprintf(name, sizeof(name), "%s.gp", res_coll_name(coll));
	if (!(f = create(pdir, name, path, sizeof(path))))
		return -1;
	gp_header(f, coll_titles[coll]);
	fprintf(f, "set logscale x 2\nset xrange [%.9g:%.9g]\nset format x '%%g'\n", lo / MIB / 2, hi / MIB * 2);
	/* the block collectives' size is the whole buffer of nranks blocks, as nccl-tests counts it */
	fprintf(f, "set xlabel '%s'\n", coll >= RES_ALLGATHER && coll <= RES_ALLTOALL
						? "buffer size per rank, all nranks blocks (MiB)"
						: "message size per rank (MiB)");

	/* throughput: the y range holds every bar and ceiling with room for the ceilings' labels */
	ymax = max_algbw(r, coll);
	for (int i = 0; i < nc; i++)
		ymax = fmax(ymax, c[i].mbps);
	gp_title(f, r, coll_titles[coll]);
	fprintf(f, "set ylabel 'algorithm bandwidth (MB/s = 10^6 B/s)'\nset yrange [0:%.6g]\n", ymax * Y_HEADROOM);
	gp_ceiling_labels(f, c, nc, ymax * Y_HEADROOM);
	n = gp_ceiling_plots(plot, sizeof(plot), c, nc, false, true);
	nk = gp_algo_lines(plot, sizeof(plot), &n, r, coll, have, 3, 5, 6);
	n += gp_ceiling_plots(plot + n, sizeof(plot) - n, c, nc, true, false);
	gp_key(f, nk + nc, 1);
	snprintf(name, sizeof(name), "%s-throughput", res_coll_name(coll));
	gp_outputs(f, name, plot, nk + nc);

	/* time */
	fprintf(f, "unset label\nset rmargin -1\nset logscale y 10\nset yrange [*:*]\nset ylabel 'time per collective (s)'\n");
	snprintf(name, sizeof(name), "%s time", coll_titles[coll]);
	gp_title(f, r, name);
	n = (size_t)snprintf(plot, sizeof(plot), "plot");
	nk = gp_algo_lines(plot, sizeof(plot), &n, r, coll, have, 2, 7, 8);
	gp_key(f, nk, 1);
	snprintf(name, sizeof(name), "%s-time", res_coll_name(coll));
	gp_outputs(f, name, plot, nk);
	if (finish(f, path) < 0)
		return -1;
	fprintf(list, "%s\n", path);
	return 0;
}

/*
 * summary.gp: the run at a glance, INC against every baseline and ceiling:
 * per collective and size (groups), a bar per algorithm (median algorithm
 * bandwidth, min – max bars when a size ran several rounds), the ceilings as
 * lines across, over the bars. summary.dat: per group the collective, the size, then per
 * algorithm of the run its median, min and max MB/s ('-' when not measured).
 */
static int write_summary(const struct run *r, const char *pdir, FILE *list)
{
	char path[4400], plot[8192];
	bool any[NALGOS] = { false };
	int most[NALGOS] = { 0 }; /* the most rounds of a size, per algorithm */
	int groups = 0, bars = 0, rounds = 0, nc, col;
	double ymax = 0;
	struct ceil_line c[3];
	size_t n;
	FILE *f;

	for (int cl = RES_ALLREDUCE; cl <= RES_LAST_SIZED; cl++)
		for (size_t a = 0; a < NALGOS; a++)
			if (find_row(r, algos[a].name, (enum res_coll)cl, -1)) {
				int k = rounds_of(r, algos[a].name, (enum res_coll)cl, false);
				any[a] = true;
				most[a] = k > most[a] ? k : most[a];
				rounds = k > rounds ? k : rounds;
			}
	for (size_t a = 0; a < NALGOS; a++)
		bars += any[a];
	if (!bars)
		return 0;
	if (!(f = create(pdir, "summary.dat", path, sizeof(path))))
		return -1;
	fprintf(f, "# collective size then per algorithm median min max algbw_MBps (run %s):", r->name);
	for (size_t a = 0; a < NALGOS; a++)
		if (any[a])
			fprintf(f, " %s", algos[a].name);
	fputc('\n', f);
	for (int cl = RES_ALLREDUCE; cl <= RES_LAST_SIZED; cl++) {
		uint64_t last = 0;

		for (;;) { /* sizes ascending, of any drawn algorithm */
			uint64_t next = 0;
			char size[32];

			for (size_t i = 0; i < r->t.n; i++) {
				const struct res_row *x = &r->t.rows[i];
				if ((int)x->coll == cl && !x->wrong && drawn(x->algo) && x->bytes > last && (!next || x->bytes < next))
					next = x->bytes;
			}
			if (!next)
				break;
			fmt_size(size, sizeof(size), next);
			fprintf(f, "%s \"%s\"", coll_titles[cl], size);
			for (size_t a = 0; a < NALGOS; a++) {
				struct agg g;
				if (!any[a])
					continue;
				if (aggregate(r, algos[a].name, (enum res_coll)cl, (int64_t)next, &g)) {
					fprintf(f, " %.6g %.6g %.6g", g.bw_med, g.bw_min, g.bw_max);
					ymax = fmax(ymax, g.bw_max);
				} else {
					fprintf(f, " - - -");
				}
			}
			fputc('\n', f);
			groups++;
			last = next;
		}
	}
	if (finish(f, path) < 0 || !(f = create(pdir, "summary.gp", path, sizeof(path))))
		return -1;
	nc = ceilings(r, c);
	for (int i = 0; i < nc; i++)
		ymax = fmax(ymax, c[i].mbps);
	gp_header(f, "Summary");
	gp_title(f, r, "INC against every baseline and ceiling");
	fprintf(f, "set datafile missing '-'\nset style data histogram\n");
	if (rounds > 1)
		fprintf(f, "set style histogram errorbars gap 1 lw 1.5\n");
	else
		fprintf(f, "set style histogram clustered gap 1\n");
	fprintf(f, "set style fill solid 0.8 border -1\nset grid noxtics\nset xtics nomirror\nset xrange [-0.6:%g]\n"
		   "set yrange [0:%.6g]\nset xlabel 'collective and message size per rank (MiB)'\n"
		   "set ylabel 'algorithm bandwidth (MB/s = 10^6 B/s)'\n",
		groups - 0.4, ymax * Y_HEADROOM);
	gp_ceiling_labels(f, c, nc, ymax * Y_HEADROOM);
	n = (size_t)snprintf(plot, sizeof(plot), "plot");
	col = 3;
	for (size_t a = 0; a < NALGOS; a++) {
		if (!any[a])
			continue;
		n += (size_t)snprintf(plot + n, sizeof(plot) - n, "%s 'summary.dat' using %d", col > 3 ? "," : "", col);
		if (rounds > 1)
			n += (size_t)snprintf(plot + n, sizeof(plot) - n, ":%d:%d", col + 1, col + 2);
		if (col == 3) /* the first: the groups' names, collective over size */
			n += (size_t)snprintf(plot + n, sizeof(plot) - n, ":xtic(strcol(1) . \"\\n\" . strcol(2))");
		if (most[a] > 1)
			n += (size_t)snprintf(plot + n, sizeof(plot) - n, " lc rgb '%s' title '%s: median of %d rounds, bars min – max'",
					      algos[a].colour, algos[a].label, most[a]);
		else
			n += (size_t)snprintf(plot + n, sizeof(plot) - n, " lc rgb '%s' title '%s (one round)'", algos[a].colour,
					      algos[a].label);
		col += 3;
	}
	n += gp_ceiling_plots(plot + n, sizeof(plot) - n, c, nc, false, false);
	n += gp_ceiling_plots(plot + n, sizeof(plot) - n, c, nc, true, false);
	fprintf(f, "set xlabel offset 0,-1\n"); /* below the two lines of each x tic label */
	gp_key(f, bars + nc, 2);
	gp_outputs(f, "summary", plot, bars + nc);
	if (finish(f, path) < 0)
		return -1;
	fprintf(list, "%s\n", path);
	return 0;
}

/* barrier.gp: time per algorithm as bars, min – max bars over several rounds. */
static int write_barrier(const struct run *r, const char *pdir, FILE *list)
{
	char path[4400], plot[1024];
	FILE *d, *f;
	int k = 0, rounds = 0;
	double ymax = 0;

	for (size_t a = 0; a < NALGOS; a++)
		if (find_row(r, algos[a].name, RES_BARRIER, -1)) {
			int q = rounds_of(r, algos[a].name, RES_BARRIER, true);
			k++;
			rounds = q > rounds ? q : rounds;
		}
	if (!k)
		return 0;
	if (!(d = create(pdir, "barrier.dat", path, sizeof(path))))
		return -1;
	fprintf(d, "# algorithm time_us (median over the rounds) min max (run %s)\n", r->name);
	for (size_t a = 0; a < NALGOS; a++) {
		struct agg g;
		if (aggregate(r, algos[a].name, RES_BARRIER, -1, &g)) {
			fprintf(d, "%s %.6g %.6g %.6g\n", algos[a].name, g.t_med, g.t_min, g.t_max);
			ymax = fmax(ymax, g.t_max);
		}
	}
	if (finish(d, path) < 0 || !(f = create(pdir, "barrier.gp", path, sizeof(path))))
		return -1;
	gp_header(f, "Barrier");
	gp_title(f, r, "Barrier time");
	fprintf(f, "set ylabel 'time per barrier (us)'\nset yrange [0:%.6g]\nset style fill solid 0.6\n"
		   "set boxwidth 0.5\nset xlabel 'algorithm'\nset grid noxtics\nset xrange [-0.6:%g]\n",
		ymax * Y_HEADROOM, k - 0.4);
	if (rounds > 1) {
		snprintf(plot, sizeof(plot),
			 "plot 'barrier.dat' using 0:2:xtic(1) with boxes lc rgb '%s' title 'median time per barrier', "
			 "'' using 0:2:3:4 with yerrorbars lw 2 pt 0 lc rgb 'black' title 'min – max of up to %d rounds'",
			 algos[0].colour, rounds);
		gp_key(f, 2, 1);
		gp_outputs(f, "barrier-time", plot, 2);
	} else {
		snprintf(plot, sizeof(plot),
			 "plot 'barrier.dat' using 0:2:xtic(1) with boxes lc rgb '%s' title 'time per barrier (one round)'",
			 algos[0].colour);
		gp_key(f, 1, 1);
		gp_outputs(f, "barrier-time", plot, 1);
	}
	if (finish(f, path) < 0)
		return -1;
	fprintf(list, "%s\n", path);
	return 0;
}

/*
 * write_model_data() - loggp-allreduce-@algo.dat of @r in @pdir: per verified
 * AllReduce size of @algo, ascending, MiB and the median, min and max over the
 * rounds of the time (s) the model is compared with (model_time_max()).
 * Return 0 (also when @algo measured none), or -1 if it cannot be written.
 */
static int write_model_data(const struct run *r, const char *pdir, const char *algo)
{
	char name[96], path[4400];
	uint64_t last = 0;
	bool slow = model_time_max(r);
	FILE *f;

	snprintf(name, sizeof(name), "loggp-allreduce-%s.dat", algo);
	if (!(f = create(pdir, name, path, sizeof(path))))
		return -1;
	fprintf(f, "# %s allreduce (run %s): MiB time_s time_min_s time_max_s: %s, over the rounds\n", algo, r->name,
		slow ? "the slowest rank's time (time_max_us)" : "rank 0's time (time_us: the run has no time_max_us)");
	for (const struct res_row *best; (best = next_size(r, RES_ALLREDUCE, algo, last)); last = best->bytes) {
		struct agg g;
		if (aggregate_by(r, algo, RES_ALLREDUCE, (int64_t)best->bytes, slow, &g))
			fprintf(f, "%.9g %.9g %.9g %.9g\n", (double)best->bytes / MIB, g.t_med / 1e6, g.t_min / 1e6,
				g.t_max / 1e6);
	}
	return finish(f, path);
}

/* loggp.gp: the measurements and the parameters drawn from them, and the AllReduce predictions against the measured times. */
static int write_loggp(const struct run *r, const char *pdir, FILE *list)
{
	char path[4400];
	double lo, hi, x[64], y[64], g0 = 0, G = 0;
	bool ar = size_range(r, RES_ALLREDUCE, &lo, &hi);
	size_t k = 0;
	FILE *f;

	if (!r->fitted)
		return 0;
	if (!(f = create(pdir, "loggp-points.dat", path, sizeof(path))))
		return -1;
	fprintf(f, "# bytes value_us: index 0 half_rtt, 1 gap, 2 cpu_send, 3 cpu_recv (run %s)\n", r->name);
	for (int m = 0; m < 4; m++) {
		for (size_t i = 0; i < r->pts.n; i++)
			if ((int)r->pts.p[i].measure == m)
				fprintf(f, "%.9g %.6g\n", r->pts.p[i].bytes, r->pts.p[i].value_us);
		fprintf(f, "\n\n");
	}
	for (size_t i = 0; i < r->pts.n && k < 64; i++)
		if (r->pts.p[i].measure == RES_GAP) {
			x[k] = r->pts.p[i].bytes;
			y[k++] = r->pts.p[i].value_us;
		}
	loggp_line(x, y, k, &g0, &G); /* the stream's line, as loggp_params() took its slope */
	if (finish(f, path) < 0)
		return -1;
	if (!ar) { /* no AllReduce: predict over the usual range anyway */
		lo = 1024;
		hi = 1024 * MIB;
	}
	if (!(f = create(pdir, "loggp-predicted.dat", path, sizeof(path))))
		return -1;
	fprintf(f, "# MiB inc_s ring_s: the model's AllReduce for %d ranks (run %s)\n", r->tree.count[r->tree.levels - 1],
		r->name);
	for (int i = 0; i <= 48; i++) {
		double b = lo / 2 * pow(hi * 2 / (lo / 2), i / 48.0);
		fprintf(f, "%.9g %.9g %.9g\n", b / MIB,
			loggp_predict(&r->fit, &r->tree, LOGGP_ALLREDUCE, LOGGP_INC, b, 0, NULL) / 1e6,
			loggp_predict(&r->fit, &r->tree, LOGGP_ALLREDUCE, LOGGP_RING, b, 0, NULL) / 1e6);
	}
	if (finish(f, path) < 0 || !(f = create(pdir, "loggp.gp", path, sizeof(path))))
		return -1;
	gp_header(f, "LogGP");
	fprintf(f, "L = %.9g\no = %.9g\ng0 = %.9g\nG = %.9g\nosnd = %.9g\norcv = %.9g\nGs = %.9g\nGr = %.9g\n", r->fit.L,
		r->fit.o, g0, G, r->fit.o_s, r->fit.o_r, r->fit.G_s, r->fit.G_r);
	gp_title(f, r, "LogGP measurements: ping-pong, stream, host CPU per message");
	fprintf(f, "set logscale x 2\nset format x '%%g'\nset xlabel 'message size (bytes)'\n"
		   "set ylabel 'time per message (us)'\nset logscale y 10\n");
	gp_key(f, 9, 1); /* 8 entries, and a line for their spacing (1.1 lines each) */
	gp_outputs(f, "loggp-fit",
		   "plot 'loggp-points.dat' index 0 using 1:2 with points pt 7 ps 1.3 lc rgb '#7b2cbf' title 'half round trip (ib_send_lat)', "
		   "L + 2 * o with lines lw 2 lc rgb '#7b2cbf' title sprintf('L + 2o = %.1f us + %.1f us', L, 2 * o), "
		   "'loggp-points.dat' index 1 using 1:2 with points pt 5 ps 1.3 lc rgb '#009e73' title 'gap per message of a stream (ib_send_bw -e)', "
		   "g0 + G * x with lines lw 2 lc rgb '#009e73' title sprintf('stream: %.1f us + n %.4f us/B', g0, G), "
		   "'loggp-points.dat' index 2 using 1:2 with points pt 9 ps 1.3 lc rgb '#d55e00' title 'sending host CPU per message', "
		   "osnd + Gs * x with lines lw 2 dt 2 lc rgb '#d55e00' title sprintf('o_s + n G_s = %.1f us + n %.4f us/B', osnd, Gs), "
		   "'loggp-points.dat' index 3 using 1:2 with points pt 11 ps 1.3 lc rgb '#0072b2' title 'receiving host CPU per message', "
		   "orcv + Gr * x with lines lw 2 dt 2 lc rgb '#0072b2' title sprintf('o_r + n G_r = %.1f us + n %.4f us/B', orcv, Gr)",
		   9);
	if (ar) {
		bool have[NALGOS] = { false };
		char plot[2048];
		size_t n;
		int nk = 2;

		for (size_t a = 0; a < 2; a++) { /* inc and ring: the two the model predicts */
			have[a] = find_row(r, algos[a].name, RES_ALLREDUCE, -1) != NULL;
			if (have[a] && write_model_data(r, pdir, algos[a].name) < 0) {
				fclose(f);
				return -1;
			}
		}
		const char *who = model_time_max(r) ? "slowest rank" : "rank 0";
		gp_title(f, r, "AllReduce: LogGP predicted vs measured");
		fprintf(f, "set logscale y 10\nset yrange [*:*]\nset xrange [%.9g:%.9g]\n"
			   "set xlabel 'message size per rank (MiB)'\nset ylabel 'time per AllReduce (s)'\n",
			lo / MIB / 2, hi / MIB * 2);
		n = (size_t)snprintf(plot, sizeof(plot),
				     "plot 'loggp-predicted.dat' using 1:2 with lines lw 2 dt 2 lc rgb '%s' title 'INC predicted: max(W_max, W/C) + step', "
				     "'loggp-predicted.dat' using 1:3 with lines lw 2 dt 2 lc rgb '%s' title 'ring predicted: max(W_max, W/C) + 2(p-1) steps'",
				     algos[0].colour, algos[1].colour);
		for (size_t a = 0; a < 2; a++) {
			int rounds = rounds_of(r, algos[a].name, RES_ALLREDUCE, false);
			if (!have[a])
				continue;
			if (rounds > 1)
				n += (size_t)snprintf(plot + n, sizeof(plot) - n,
						      ", 'loggp-allreduce-%s.dat' using 1:2:3:4 with yerrorbars pt 7 ps 1.5 lw 2 lc rgb '%s' "
						      "title '%s measured (%s): median of %d rounds, bars min – max'",
						      algos[a].name, algos[a].colour, algos[a].name, who, rounds);
			else
				n += (size_t)snprintf(plot + n, sizeof(plot) - n,
						      ", 'loggp-allreduce-%s.dat' using 1:2 with points pt 7 ps 1.5 lc rgb '%s' title '%s measured (%s, one round)'",
						      algos[a].name, algos[a].colour, algos[a].name, who);
			nk++;
		}
		gp_key(f, nk, 1);
		gp_outputs(f, "loggp-allreduce", plot, nk);
	}
	if (finish(f, path) < 0)
		return -1;
	fprintf(list, "%s\n", path);
	return 0;
}

/* Remove what an earlier `make plots` wrote in @pdir (charts, data, scripts). */
static void clear_plots(const char *pdir)
{
	static const char *const ours[] = { ".gp", ".dat", ".png", ".svg" };
	DIR *d = opendir(pdir);
	struct dirent *e;
	char path[4500];

	if (!d)
		return;
	while ((e = readdir(d))) {
		const char *dot = strrchr(e->d_name, '.');
		for (size_t i = 0; dot && i < sizeof(ours) / sizeof(ours[0]); i++)
			if (!strcmp(dot, ours[i])) {
				snprintf(path, sizeof(path), "%s/%s", pdir, e->d_name);
				unlink(path);
			}
	}
	closedir(d);
}

/* Every data file and script of run @r into @r/plots/; script paths to @list. */
static int write_run_plots(const struct run *r, FILE *list)
{
	char pdir[4200];
	bool have[NALGOS];

	snprintf(pdir, sizeof(pdir), "%s/plots", r->dir);
	if (mkdir(pdir, 0755) < 0 && errno != EEXIST) {
		complain("cannot create %s: %s", pdir, strerror(errno));
		return -1;
	}
	clear_plots(pdir);
	for (int c = RES_ALLREDUCE; c <= RES_LAST_SIZED; c++) {
		if (write_coll_data(r, pdir, (enum res_coll)c, have) < 0 ||
		    write_coll_script(r, pdir, (enum res_coll)c, have, list) < 0)
			return -1;
	}
	if (write_barrier(r, pdir, list) < 0 || write_loggp(r, pdir, list) < 0 || write_summary(r, pdir, list) < 0)
		return -1;
	return 0;
}

/* ---- REPORT.md ---------------------------------------------------------------- */

/* fmt_time() - @us into @buf (@len) with one decimal in s from 1 s, ms from 1 ms, else us ("2.5 ms"). */
static void fmt_time(char *buf, size_t len, double us)
{
	if (us >= 1e6)
		snprintf(buf, len, "%.1f s", us / 1e6);
	else if (us >= 1e3)
		snprintf(buf, len, "%.1f ms", us / 1e3);
	else
		snprintf(buf, len, "%.1f us", us);
}

/* fmt_size() - @bytes into @buf (@len) in the largest of GiB, MiB, KiB it is a whole number of, else B ("1500 B"). */
static void fmt_size(char *buf, size_t len, uint64_t bytes)
{
	if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0)
		snprintf(buf, len, "%llu GiB", (unsigned long long)(bytes >> 30));
	else if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0)
		snprintf(buf, len, "%llu MiB", (unsigned long long)(bytes >> 20));
	else if (bytes >= 1024 && bytes % 1024 == 0)
		snprintf(buf, len, "%llu KiB", (unsigned long long)(bytes >> 10));
	else
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
}

/* A load average with 2 decimals, or "unknown" (recorded as such: -1). */
static const char *fmt_load(char *buf, size_t len, double load)
{
	if (load < 0)
		snprintf(buf, len, "unknown");
	else
		snprintf(buf, len, "%.2f", load);
	return buf;
}

/* A time cell: the median, and with several rounds their min-max and count. */
static void time_cell(FILE *f, const struct agg *g)
{
	char t[32], lo[32], hi[32];

	fmt_time(t, sizeof(t), g->t_med);
	if (g->n > 1) {
		fmt_time(lo, sizeof(lo), g->t_min);
		fmt_time(hi, sizeof(hi), g->t_max);
		fprintf(f, " %s (%s – %s, %d rounds) |", t, lo, hi, g->n);
	} else {
		fprintf(f, " %s |", t);
	}
}

/*
 * Whether runs @used[] of @runs[@n] were made under different conditions:
 * if so, one line saying how (accelerator, switch mode, commit, topology,
 * number of ranks, number of hypervisors, or their highest 1-minute load averages more than
 * LOAD_SPREAD apart) after @what,
 * as a warning; and how many recorded no load average.
 */
static void warn_conditions(FILE *f, const struct run *runs, const bool *used, size_t n, const char *what)
{
	const struct run *first = NULL;
	double lo = INFINITY, hi = -1;
	const struct run *lo_run = NULL, *hi_run = NULL;
	char why[2048] = "";
	size_t k = 0, len = 0;
	int unknown = 0;
	static const char *const fields[] = { "accelerator", "switch mode", "commit", "topology", "ranks", "hypervisors" };

	for (size_t i = 0; i < n; i++) {
		const struct run *r = &runs[i];
		double b = max_load(r); /* a run's load: the highest of its rounds */

		if (!used[i])
			continue;
		k++;
		if (!first)
			first = r;
		if (b < 0) {
			unknown++;
		} else {
			if (b < lo) { lo = b; lo_run = r; }
			if (b > hi) { hi = b; hi_run = r; }
		}
		for (int fi = 0; fi < 6; fi++) {
			const char *const xs[] = { first->meta.accelerator, first->meta.switch_mode, first->meta.commit,
						   first->meta.topology, NULL, NULL };
			const char *const ys[] = { r->meta.accelerator, r->meta.switch_mode, r->meta.commit, r->meta.topology,
						   NULL, NULL };
			char xr[16], yr[16];
			const char *x = xs[fi], *y = ys[fi];
			char tag[64], cx[160], cy[160], nx[600], ny[600];

			if (fi == 4) { /* the number of ranks, from the rows (else meta.yaml) */
				snprintf(xr, sizeof(xr), "%d", nranks_of(first));
				snprintf(yr, sizeof(yr), "%d", nranks_of(r));
				x = xr;
				y = yr;
			} else if (fi == 5) { /* the machines: a run from before the key ran on one */
				snprintf(xr, sizeof(xr), "%d", first->meta.hypervisors ? first->meta.hypervisors : 1);
				snprintf(yr, sizeof(yr), "%d", r->meta.hypervisors ? r->meta.hypervisors : 1);
				x = xr;
				y = yr;
			}
			snprintf(tag, sizeof(tag), "%s ", fields[fi]);
			if (strcmp(x, y) && !strstr(why, tag) && len < sizeof(why) - 1)
				len += (size_t)snprintf(why + len, sizeof(why) - len, "%s%s %s (%s) vs %s (%s)", len ? "; " : "",
							fields[fi], md_code(cx, sizeof(cx), x[0] ? x : "?"),
							md_text(nx, sizeof(nx), first->name), md_code(cy, sizeof(cy), y[0] ? y : "?"),
							md_text(ny, sizeof(ny), r->name));
		}
	}
	if (k < 2)
		return;
	if (hi_run && lo_run && hi - lo > LOAD_SPREAD && len < sizeof(why) - 1) {
		char nl[600], nh[600];
		len += (size_t)snprintf(why + len, sizeof(why) - len, "%sload average %.2f (%s) vs %.2f (%s), more than %.1f apart",
					len ? "; " : "", lo, md_text(nl, sizeof(nl), lo_run->name), hi,
					md_text(nh, sizeof(nh), hi_run->name), LOAD_SPREAD);
	}
	if (len)
		fprintf(f, "\n**Warning: %s combines %zu runs made under different conditions:** %s.\n", what, k, why);
	if (unknown)
		fprintf(f, "\n%s: %d of the %zu runs it combines recorded no load average (made before rounds).\n", what, unknown, k);
}

/* Two table cells: @ceiling and @mbps as a fraction of it, or "not measured". */
static void fraction(FILE *f, double mbps, double ceiling)
{
	if (ceiling > 0)
		fprintf(f, " %.2f | %.2f |", ceiling, mbps / ceiling);
	else
		fprintf(f, " not measured | |");
}

/*
 * The newest lab run (not simulated) of topology @topo with a verified row of
 * @algo / @coll / @bytes, or NULL.
 */
static const struct run *measured_run(const struct run *runs, size_t n, const char *topo, const char *algo,
				      enum res_coll coll, uint64_t bytes)
{
	for (size_t i = n; i-- > 0;) /* runs are oldest first */
		if (!runs[i].meta.simulated && !strcmp(runs[i].meta.topology, topo) &&
		    find_row(&runs[i], algo, coll, (int64_t)bytes))
			return &runs[i];
	return NULL;
}

/* The seed's table, each row next to the newest run of the seed's topology that measured it. */
static void report_seed(FILE *f, struct run *runs, size_t n)
{
	fprintf(f, "## The seed's published table next to ours\n\n"
		   "The seed's rows (SPEC.md: 1-2-4 tree, 4 hosts) and, for each, the newest run of topology %s here "
		   "with a verified in-network (`inc`) row of that collective and size (any dtype and operator). "
		   "Throughput is algorithm bandwidth (bytes per rank / time) in Mbps (10^6 bit/s) as the seed gives it "
		   "and in MB/s; *of ceiling* divides it by the `ib_send_bw` ceiling measured across the tree in the "
		   "same run with both ends sleeping on completion events (`-e`, as libinccl does), *of load ceiling* "
		   "by the same-load ceiling (every host sending and receiving at once, hosts paired across the leaves, "
		   "`ib_send_bw -b -e`, what each host sent), *of polling ceiling* "
		   "by the unloaded pair measured with perftest's default busy polling. The seed published no ceiling. "
		   "Our figures are medians over the rounds of the run (min – max and their number when several); "
		   "the ceilings too.\n\n",
		SEED_TOPOLOGY);
	fprintf(f, "| collective | size | seed time | seed Mbps | our time | our Mbps | our MB/s | ceiling MB/s | of ceiling "
		   "| load ceiling MB/s | of load ceiling | polling ceiling MB/s | of polling ceiling | run |\n"
		   "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
	bool *used = calloc(n ? n : 1, sizeof(*used));

	for (size_t s = 0; s < sizeof(seed) / sizeof(seed[0]); s++) {
		const struct res_row *x = NULL;
		const struct run *from = NULL;
		char size[32];
		struct agg g;

		from = measured_run(runs, n, SEED_TOPOLOGY, "inc", seed[s].coll, (uint64_t)seed[s].mib << 20);
		if (from)
			x = find_row(from, "inc", seed[s].coll, (int64_t)seed[s].mib << 20);
		fmt_size(size, sizeof(size), (uint64_t)seed[s].mib << 20);
		fprintf(f, "| %s | %s | %.1f s | %.1f |", coll_titles[seed[s].coll], size, seed[s].time_s, seed[s].mbps);
		if (!x) {
			fprintf(f, " not measured | | | | | | | | | |\n");
			continue;
		}
		aggregate(from, "inc", seed[s].coll, (int64_t)seed[s].mib << 20, &g);
		if (used)
			used[from - runs] = true;
		time_cell(f, &g);
		fprintf(f, " %.1f | %.2f |", g.bw_med * 8, g.bw_med);
		fraction(f, g.bw_med, ceiling_of(from));
		fraction(f, g.bw_med, load_ceiling_of(from));
		fraction(f, g.bw_med, from->meta.ceiling_poll);
		{
			char nm[600];
			fprintf(f, " %s |\n", md_text(nm, sizeof(nm), from->name));
		}
	}
	if (used)
		warn_conditions(f, runs, used, n, "This table");
	free(used);
	fprintf(f, "\n");
}

/* INC against every host-based baseline measured in the same run at the same size. */
static void report_speedups(FILE *f, struct run *runs, size_t n)
{
	double logsum[NALGOS] = { 0 };
	int count[NALGOS] = { 0 };
	bool any = false, *used[NALGOS] = { NULL };

	for (size_t a = 0; a < NALGOS; a++)
		used[a] = calloc(n ? n : 1, sizeof(bool));
	fprintf(f, "## INC speed-up over the host-based baselines\n\n"
		   "Time of the baseline / time of INC for the same collective and size in the same run, "
		   "medians over the run's rounds (> 1: in-network aggregation is faster); INC's min – max and rounds "
		   "when several. Lab runs only: simulated runs are compared with the lab below.\n\n"
		   "| run | collective | size | INC time | ring | ring / INC | OpenMPI TCP | TCP / INC | OpenMPI UCX | UCX / INC |\n"
		   "|---|---|---|---|---|---|---|---|---|---|\n");
	for (size_t i = n; i-- > 0;) {
		const struct run *r = &runs[i];
		if (r->meta.simulated) /* in "Simulated against measured" */
			continue;
		for (size_t k = 0; k < r->t.n; k++) {
			const struct res_row *x = &r->t.rows[k];
			char t[32], size[32], nm[600];
			bool row = false;
			struct agg gi, gb;

			if (strcmp(x->algo, "inc") || x->wrong || find_row(r, "inc", x->coll, (int64_t)x->bytes) != x)
				continue;
			for (size_t a = 1; a < NALGOS; a++)
				row |= find_row(r, algos[a].name, x->coll, (int64_t)x->bytes) != NULL;
			if (!row)
				continue;
			any = true;
			aggregate(r, "inc", x->coll, (int64_t)x->bytes, &gi);
			fmt_size(size, sizeof(size), x->bytes);
			fprintf(f, "| %s | %s | %s |", md_text(nm, sizeof(nm), r->name), coll_titles[x->coll],
				x->coll == RES_BARRIER ? "-" : size);
			time_cell(f, &gi);
			for (size_t a = 1; a < NALGOS; a++) {
				if (aggregate(r, algos[a].name, x->coll, (int64_t)x->bytes, &gb)) {
					fmt_time(t, sizeof(t), gb.t_med);
					fprintf(f, " %s | **%.2f** |", t, gb.t_med / gi.t_med);
					logsum[a] += log(gb.t_med / gi.t_med);
					count[a]++;
					if (used[a])
						used[a][i] = true;
				} else {
					fprintf(f, " - | - |");
				}
			}
			fprintf(f, "\n");
		}
	}
	if (!any)
		fprintf(f, "| no run measured INC next to a baseline | | | | | | | | | |\n");
	fprintf(f, "\n");
	for (size_t a = 1; a < NALGOS; a++)
		if (count[a]) {
			char what[128];
			fprintf(f, "- INC over %s: geometric mean speed-up **%.2f** over %d comparison(s)\n", algos[a].label,
				exp(logsum[a] / count[a]), count[a]);
			snprintf(what, sizeof(what), "The geometric mean over %s", algos[a].label);
			if (used[a])
				warn_conditions(f, runs, used[a], n, what);
		}
	for (size_t a = 0; a < NALGOS; a++)
		free(used[a]);
	fprintf(f, "\n");
}

/* SIM_TOLERANCE: how far a simulated time may be from the lab's median and still agree (issue 19: ±25 %). */
#define SIM_TOLERANCE 0.25

/*
 * Each simulated run's times next to the lab's: for every verified row of a
 * simulated run, the newest lab run of the same topology that measured the
 * same collective, algorithm and size (its median, min – max), the error
 * (simulated / measured - 1) and, where both ran INC and ring at a size, the
 * ring / INC ratio of each. Nothing when there is no simulated run.
 */
static void report_sim(FILE *f, struct run *runs, size_t n)
{
	int compared = 0, within = 0, sims = 0;

	for (size_t i = 0; i < n; i++)
		sims += runs[i].meta.simulated;
	if (!sims)
		return;
	fprintf(f, "## Simulated against measured\n\n"
		   "Each simulated run (sim/, `simulated: true`) next to the newest lab run of the same topology that "
		   "measured the same collective, algorithm and size (the lab's median over its rounds, min – max). "
		   "Error = simulated / measured − 1; within ±%.0f %% agrees. *ring / INC* is the ratio of the ring's "
		   "time to INC's at that size, simulated and measured (each from its own run).\n\n"
		   "| simulated run | collective | algorithm | size | simulated | measured | error | ring / INC simulated "
		   "| ring / INC measured | lab run |\n"
		   "|---|---|---|---|---|---|---|---|---|---|\n",
		SIM_TOLERANCE * 100);
	for (size_t i = n; i-- > 0;) {
		const struct run *r = &runs[i];
		if (!r->meta.simulated)
			continue;
		for (size_t k = 0; k < r->t.n; k++) {
			const struct res_row *x = &r->t.rows[k];
			char size[32], t[32], nm[600], lab[600];
			struct agg gs, gm, gi, gr;

			if (x->wrong || find_row(r, x->algo, x->coll, (int64_t)x->bytes) != x ||
			    !aggregate(r, x->algo, x->coll, (int64_t)x->bytes, &gs))
				continue;
			fmt_size(size, sizeof(size), x->bytes);
			fmt_time(t, sizeof(t), gs.t_med);
			fprintf(f, "| %s | %s | %s | %s | %s |", md_text(nm, sizeof(nm), r->name), coll_titles[x->coll],
				md_text(lab, sizeof(lab), x->algo), size, t);
			const struct run *m = measured_run(runs, n, r->meta.topology, x->algo, x->coll, x->bytes);
			if (!m || !aggregate(m, x->algo, x->coll, (int64_t)x->bytes, &gm)) {
				fprintf(f, " not measured on the lab | | | | |\n");
				continue;
			}
			double err = gs.t_med / gm.t_med - 1;
			bool ok = fabs(err) <= SIM_TOLERANCE;
			compared++;
			within += ok;
			time_cell(f, &gm);
			fprintf(f, " %s%+.0f %%%s |", ok ? "" : "**", err * 100, ok ? "" : "**");
			if (aggregate(r, "inc", x->coll, (int64_t)x->bytes, &gi) &&
			    aggregate(r, "ring", x->coll, (int64_t)x->bytes, &gr))
				fprintf(f, " %.2f |", gr.t_med / gi.t_med);
			else
				fprintf(f, " - |");
			if (aggregate(m, "inc", x->coll, (int64_t)x->bytes, &gi) &&
			    aggregate(m, "ring", x->coll, (int64_t)x->bytes, &gr))
				fprintf(f, " %.2f |", gr.t_med / gi.t_med);
			else
				fprintf(f, " - |");
			fprintf(f, " %s |\n", md_text(lab, sizeof(lab), m->name));
		}
	}
	fprintf(f, "\n%d of %d simulated times within ±%.0f %% of the lab's median", within, compared,
		SIM_TOLERANCE * 100);
	fprintf(f, compared ? ".\n\n" : " (no simulated row has a lab run of the same topology, collective, "
					  "algorithm and size to compare with).\n\n");
}

/*
 * cpu_per_call() - the medians over the run's rounds of @algo / @coll / @bytes
 * (cpu.csv): the busiest host's CPU per collective, every node's, and the
 * cores the rest of the machine used meanwhile (*@others: its busy time less
 * the lab's over the wall time; -1 when not recorded). Returns the rounds
 * found, 0 when none.
 */
static int cpu_per_call(const struct run *r, const char *algo, const char *coll, double bytes, double *host_max,
			double *all, double *others)
{
	double hm[RES_MAX_ROUNDS + 1], al[RES_MAX_ROUNDS + 1], ot[RES_MAX_ROUNDS + 1];
	int k = 0, ko = 0;

	for (size_t i = 0; i < r->cpu.n && k <= RES_MAX_ROUNDS; i++) {
		const struct loggp_cpu_row *c = &r->cpu.r[i];
		if (strcmp(c->algo, algo) || strcmp(c->coll, coll) || c->bytes != bytes)
			continue;
		hm[k] = c->host_max / c->calls;
		al[k++] = (c->host_sum + c->sw_sum) / c->calls;
		if (loggp_cpu_others(c, &ot[ko]))
			ko++;
	}
	if (!k)
		return 0;
	*host_max = loggp_median(hm, (size_t)k);
	*all = loggp_median(al, (size_t)k);
	*others = ko ? loggp_median(ot, (size_t)ko) : -1;
	return k;
}

/*
 * speed_of() - how much slower than at loggp.sh's measures the machine ran (REPORT's speed column, shown)
 * just before @algo / @coll / @bytes: the median over the run's rounds of
 * cpu.csv's probe (one pass of hostwork's float sum) over the model's
 * reference (loggp.csv's cpu_sum of the same pass), in *@k. Returns the
 * rounds with a probe, 0 when none (or no reference).
 */
static int speed_of(const struct run *r, const char *algo, const char *coll, double bytes, double *k)
{
	double s[RES_MAX_ROUNDS + 1];
	int n = 0;

	for (size_t i = 0; r->fit.probe_ref > 0 && i < r->cpu.n && n <= RES_MAX_ROUNDS; i++) {
		const struct loggp_cpu_row *c = &r->cpu.r[i];
		if (!strcmp(c->algo, algo) && !strcmp(c->coll, coll) && c->bytes == bytes && c->probe > 0)
			s[n++] = c->probe / r->fit.probe_ref;
	}
	if (n)
		*k = loggp_median(s, (size_t)n);
	return n;
}

/*
 * window_cpu_per_call() - the medians over the run's rounds of @algo /
 * @coll / @bytes (cpuwin.csv): the busiest host's CPU inside the timed calls
 * per call (*@host_max) and every sampled process's (*@all), each with the
 * largest bound of the rounds per call (*@host_bound, *@all_bound), the
 * largest clock offset uncertainty (*@offset, us), and the cores the rest of
 * the machine used inside the calls (*@others: the machine's busy time less
 * every sampled process's, over the windows' span, never below 0; the median
 * of the rounds with a machine line, -1 when none has one), and the cores the
 * lab's processes kept busy on average inside the calls (*@cores: all of their
 * CPU over the windows' span, the median of the rounds; -1 without a span).
 * Returns the rounds found, 0 when none.
 */
static int window_cpu_per_call(const struct run *r, const char *algo, const char *coll, double bytes, double *host_max,
			       double *host_bound, double *all, double *all_bound, double *offset, double *others,
			       double *cores)
{
	double hm[RES_MAX_ROUNDS + 1], al[RES_MAX_ROUNDS + 1], ot[RES_MAX_ROUNDS + 1], co[RES_MAX_ROUNDS + 1];
	int k = 0, ko = 0, kc = 0;

	*host_bound = *all_bound = *offset = 0;
	*others = -1;
	for (size_t i = 0; i < r->cw.n && k <= RES_MAX_ROUNDS; i++) {
		const struct cpuwin_meas *m = &r->cw.m[i];
		if (strcmp(m->algo, algo) || strcmp(m->coll, coll) || m->bytes != bytes || !m->hosts)
			continue;
		hm[k] = m->host_max / m->calls;
		al[k++] = m->sum / m->calls;
		if (m->span > 0)
			co[kc++] = m->sum / m->span;
		if (m->machine >= 0 && m->span > 0)
			ot[ko++] = fmax(0, m->machine - m->sum) / m->span;
		*host_bound = fmax(*host_bound, m->host_max_bound / m->calls);
		*all_bound = fmax(*all_bound, m->sum_bound / m->calls);
		*offset = fmax(*offset, m->offset);
	}
	if (!k)
		return 0;
	*host_max = loggp_median(hm, (size_t)k);
	*all = loggp_median(al, (size_t)k);
	*cores = kc ? loggp_median(co, (size_t)kc) : -1;
	if (ko)
		*others = loggp_median(ot, (size_t)ko);
	return k;
}

/*
 * window_host_per_call() - host @h's CPU inside the timed calls of @algo /
 * @coll / @bytes per call (cpuwin.csv: the measurement's @h-th host line,
 * exp.sh writes them in rank order), the median over the run's rounds, in
 * *@cpu, and its node's name in @node (@len bytes). Returns the rounds found,
 * 0 when none has that host.
 */
static int window_host_per_call(const struct run *r, const char *algo, const char *coll, double bytes, int h,
				double *cpu, char *node, size_t len)
{
	double v[RES_MAX_ROUNDS + 1];
	int k = 0;

	for (size_t i = 0; i < r->cw.n && k <= RES_MAX_ROUNDS; i++) {
		const struct cpuwin_meas *m = &r->cw.m[i];
		if (strcmp(m->algo, algo) || strcmp(m->coll, coll) || m->bytes != bytes || h >= m->hosts)
			continue;
		v[k++] = m->host_cpu[h] / m->calls;
		snprintf(node, len, "%s", m->host_node[h]);
	}
	if (k)
		*cpu = loggp_median(v, (size_t)k);
	return k;
}

/* pairs_text() - how a paired parameter was taken, into @buf: "the median of @n repetitions, @each", or
 * "the difference of their medians" when its rows did not pair (@n 0). */
static void pairs_text(char *buf, size_t len, int n, const char *each)
{
	if (n)
		snprintf(buf, len, "the median of %d repetitions, %s", n, each);
	else
		snprintf(buf, len, "the difference of their medians");
}

/* The model's parameters of run @r, each with how it was measured. */
static void report_params(FILE *f, const struct run *r)
{
	const struct loggp *m = &r->fit;
	char buf[32];

	fprintf(f, "| parameter | value | how it was measured |\n|---|---|---|\n");
	fprintf(f, "| o_s | %.1f us | sending host's CPU per message: its VM's CPU time (/proc/PID/stat) over a stream of "
		   "%.0f B messages, per message (difference of two stream lengths; median of %d) |\n", m->o_s, m->small, m->n_cpu);
	fprintf(f, "| o_r | %.1f us | receiving host's CPU per message, the same stream |\n", m->o_r);
	fprintf(f, "| o | %.1f us | (o_s + o_r) / 2 |\n", m->o);
	if (m->batch)
		fprintf(f, "| o_sb | %.1f us | o_s with %d work requests per post, as libinccl posts them (ib_send_bw -l) |\n",
			m->o_sb, LOGGP_INC_POST);
	else
		fprintf(f, "| o_sb | %.1f us | not measured: o_s (every post counted alone) |\n", m->o_sb);
	if (m->uc)
		fprintf(f, "| o_su, o_ru | %.1f, %.1f us | the batched stream over UC (ib_send_bw -c UC -l %d), which has no ACKs: "
			   "sending and receiving host's CPU per message. rxe ACKs every message of an RC stream, so an ACK "
			   "costs the sender a = o_sb - o_su = %.1f us; the switch ACKs a host's sends once per %d packets "
			   "(switch/engine.c), so libinccl's empty packet costs o_su + a/%d = %.1f us (without o_e), a message "
			   "of %d packets o_su + a·%d/%d |\n",
			m->o_su, m->o_ru, LOGGP_INC_POST, m->o_sb - m->o_su, LOGGP_SW_ACK, LOGGP_SW_ACK,
			m->o_su + (m->o_sb - m->o_su) / LOGGP_SW_ACK, m->message, m->message < LOGGP_SW_ACK ? m->message : LOGGP_SW_ACK,
			LOGGP_SW_ACK);
	else if (m->uc_seen)
		fprintf(f, "| o_su, o_ru | %.1f, %.1f us | the batched stream over UC (no ACKs): not below o_sb, so an ACK's "
			   "cost is not above 0 (noise): not used, every libinccl send costs o_sb |\n", m->o_su, m->o_ru);
	else
		fprintf(f, "| o_su, o_ru | - | not measured (loggp.csv without cpu_send_uc): every libinccl send costs o_sb, "
			   "an ACK each |\n");
	char pairs_said[96];
	pairs_text(pairs_said, sizeof(pairs_said), m->n_empty_pairs, "each against its own plain stream");
	if (m->empty)
		fprintf(f, "| o_e | %.1f us | an empty packet's send in a host that is receiving (a Broadcast's non-root, the "
			   "blocks of others in AllGather; an AllToAll's rank sends those of the Routes it takes no part in "
			   "while it receives nothing, as the UC stream's sender): (the receiver's CPU per message of a %d KiB stream while "
			   "it sends %d messages of 8 B back over UC for each, %d per post - the plain stream's) / %d, %s; an "
			   "empty packet costs o_e%s = %.1f us |\n",
			m->o_e, LOGGP_RING_PIECE / 1024, LOGGP_RING_PIECE / LOGGP_PKT, LOGGP_INC_POST, LOGGP_RING_PIECE / LOGGP_PKT,
			pairs_said, m->uc ? " + a/32" : "", m->o_e + (m->uc ? (m->o_sb - m->o_su) / LOGGP_SW_ACK : 0));
	else if (m->empty_seen)
		fprintf(f, "| o_e | %.1f us | an empty packet's send in a receiving host (%d KiB stream answered over UC, less "
			   "the plain one): not above 0 (noise): not used, an empty packet costs as the UC stream's send |\n",
			m->o_e, LOGGP_RING_PIECE / 1024);
	else
		fprintf(f, "| o_e | - | not measured (loggp.csv without cpu_empty_recv): an empty packet costs as the UC "
			   "stream's send |\n");
	pairs_text(pairs_said, sizeof(pairs_said), m->n_signaled_pairs, "each stream measured right after its plain one");
	if (m->signaled)
		fprintf(f, "| o_c | %.1f us | CPU per completion a send asks for: (CPU per message of a 16 KiB stream with "
			   "every send signaled (ib_send_bw -Q 1) - the same with perftest's one in %d) / (1 - 1/%d), %s; added "
			   "for every completion beyond the streams' one in %d: libinccl asks one per %d packets, the ring "
			   "one per %d messages |\n",
			m->o_c, LOGGP_PERFTEST_CQ, LOGGP_PERFTEST_CQ, pairs_said, LOGGP_PERFTEST_CQ,
			(int)(LOGGP_INC_SIGNAL > 4 * m->message ? LOGGP_INC_SIGNAL : 4 * m->message), LOGGP_RING_SIGNAL);
	else if (m->signaled_seen)
		fprintf(f, "| o_c | %.1f us | CPU per completion (16 KiB stream, every send signaled, less one in %d): not "
			   "above 0 (noise): not used |\n", m->o_c, LOGGP_PERFTEST_CQ);
	else
		fprintf(f, "| o_c | - | not measured (loggp.csv without cpu_send_signaled): completions are in o as the "
			   "streams asked them |\n");
	if (m->n_pairs) {
		fprintf(f, "| o_w | %.1f us | a %d KiB message received by a host that sleeps waiting for it, beyond a "
			   "stream's, from %d pairs, each a %d KiB stream (ib_send_bw -e) and right after it a ping-pong "
			   "sleeping on CQ events (ib_send_lat -e)%s; per pair the ping-pong's CPU per round trip (one "
			   "message sent, one received; the mean of the two hosts) less the stream's sender's + receiver's "
			   "CPU per message: median %.1f us (%.1f to %.1f)",
			m->o_w, LOGGP_RING_PIECE / 1024, m->n_pairs, LOGGP_RING_PIECE / 1024,
			m->o_w_by_intr ? ": the median of the interrupts a wait adds times the ping-pong's CPU per "
					 "interrupt, pair by pair (the interrupts are steadier than the CPU)" : "",
			m->o_w_cpu, m->o_w_min, m->o_w_max);
		if (m->n_intr) {
			snprintf(buf, sizeof(buf), m->o_intr > 0 ? "%.0f us" : "-", m->o_intr);
			fprintf(f, "; guest interrupts (%d pairs): %.2f per message sent and received in the stream, "
				   "%.2f per round trip: %.2f more, %s of CPU each",
				m->n_intr, m->i_stream, m->i_waited, m->i_extra, buf);
			if (m->o_intr_stream > 0 && m->o_intr_waited > 0)
				fprintf(f, " (CPU per interrupt of the whole ping-pong %.0f us, of the stream %.0f us)",
					m->o_intr_waited, m->o_intr_stream);
		} else
			fprintf(f, "; guest interrupts not counted");
		fprintf(f, m->waited ? "; added for every message the ring receives that gates its next send "
				       "(analysis/loggp.c ring_waits()) |\n"
				     : "; not above 0 (noise): not used |\n");
	} else if (m->waited)
		fprintf(f, "| o_w | %.1f us | a %d KiB message received by a host that sleeps waiting for it, beyond a "
			   "stream's: each host's CPU per round trip of a ping-pong of %d KiB sleeping on CQ events "
			   "(ib_send_lat -e; one message sent, one received) less cpu_send + cpu_recv at %d KiB; added for "
			   "every message the ring receives that gates its next send (analysis/loggp.c ring_waits()) |\n",
			m->o_w, LOGGP_RING_PIECE / 1024, LOGGP_RING_PIECE / 1024, LOGGP_RING_PIECE / 1024);
	else if (m->waited_seen)
		fprintf(f, "| o_w | %.1f us | a message received waiting (%d KiB ping-pong on CQ events less the stream's "
			   "send and receive): not above 0 (noise): not used |\n", m->o_w, LOGGP_RING_PIECE / 1024);
	else
		fprintf(f, "| o_w | - | not measured (loggp.csv without cpu_pair_* or cpu_waited_send, cpu_waited_recv): a message the "
			   "ring waits for costs what a stream's does |\n");
	fprintf(f, "| G_s | %.5f us/B | sending host's CPU per byte: (CPU per %.0f B message - o_s) / the bytes |\n", m->G_s,
		m->large);
	fprintf(f, "| G_r | %.5f us/B | receiving host's CPU per byte, the same |\n", m->G_r);
	if (m->hostwork) {
		static const char *const what[3] = {
			"G_swap | %s | libinccl's byte-order swap (comm.c to_wire) per byte: the sending host's CPU over passes "
			"of hostwork (experiments/hostwork.c)",
			"G_copy | %s | the ring's copy into and out of its messages, per byte, the same way",
			"G_sum | %s | the ring's float32 sum (ring.c combine) per byte, the same way" };
		const double g[3] = { m->G_swap, m->G_copy, m->G_sum };
		for (int i = 0; i < 3; i++) {
			char v[96];
			if (g[i] > 0)
				snprintf(v, sizeof(v), "%.5f us/B", g[i]);
			else
				snprintf(v, sizeof(v), "0 (below the clock's tick: under %.5f us/B)", m->hostwork_bound[i]);
			fprintf(f, "| ");
			fprintf(f, what[i], v);
			fprintf(f, " |\n");
		}
	} else
		fprintf(f, "| G_swap, G_copy, G_sum | - | not measured (loggp.csv without cpu_swap, cpu_copy, cpu_sum): "
			   "the hosts' own loops are left out |\n");
	fprintf(f, "| L | %.1f us | half a ping-pong of %.0f B (ib_send_lat, %.1f us) - 2o |\n", m->L, m->small, m->half_rtt);
	fprintf(f, "| g | %.1f us | wall time per message of a stream of small messages (ib_send_bw -e) |\n", m->g);
	fprintf(f, "| G | %.5f us/B (%.2f MB/s) | wall time per byte of a stream: slope of the gap over the sizes |\n", m->G,
		1 / m->G);
	if (m->c_sw > 0)
		fprintf(f, "| c_sw | %.2f us | switch CPU per frame: the switches' CPU in the INC measurements (cpu.csv) / "
			   "their rx + tx frames (switch-counters.txt, %.0f) |\n"
			   "| f_sw | %.3f | the frames the switches counted per frame the model counts (data and the engine's "
			   "ACKs, one per 2 frames between switches and per 32 of a host's; inccl_perf's lone calls): a "
			   "check of the count, not a factor (the rest: ACKs at the end of a switch's round) |\n",
			m->c_sw, r->sw_frames, m->f_sw);
	else
		fprintf(f, "| c_sw | - | not measured (no cpu.csv with INC measurements and switch-counters.txt): the "
			   "switches' work is left out |\n");
	int p = r->tree.count[r->tree.levels - 1];
	if (m->step_inc > 0)
		fprintf(f, "| step (INC) | %.1f ms | the run's INC Barrier (median): every rank's empty packet up and down the "
			   "tree, the ranks starting at different times after the barrier before each timed call |\n",
			m->step_inc / 1000);
	else
		fprintf(f, "| step (INC) | %.1f ms | L + 2o (no INC Barrier in the run) |\n", (m->L + 2 * m->o) / 1000);
	if (m->step_ring > 0)
		fprintf(f, "| step (ring) | %.1f ms | the run's ring Barrier (median) over its 2(P-1) = %d steps of an empty "
			   "message |\n", m->step_ring / 1000, 2 * (p - 1));
	else
		fprintf(f, "| step (ring) | %.1f ms | L + 2o (no ring Barrier in the run) |\n", (m->L + 2 * m->o) / 1000);
	fprintf(f, "| C | %g | cores of the lab machine (meta.yaml host_cores), shared by every VM and switch; per "
		   "measurement less the cores the rest of the machine used meanwhile (cpu.csv's machine row: its busy "
		   "time, niced work left out, less the lab's, over the wall time), when recorded |\n", m->C);
	if (m->probe_ref > 0 && m->speed > 0)
		fprintf(f, "| speed | %.1f ms a pass; the run %.2f (%.2f - %.2f) | the machine's speed when loggp.sh measured: "
			   "the CPU of one pass of hostwork's float sum over %.0f MiB in rank 0's host (cpu_sum, median); "
			   "each measurement's probe of the same pass just before it (cpu.csv) over this is its speed "
			   "column. Applied: the median of the run's %d probes (least - greatest in brackets) scales every "
			   "host's work, the machine's drift between loggp.sh and the collectives (the switches' c_sw is "
			   "measured in the collectives themselves); a measurement's own probe is shown, not applied (one "
			   "of 4 passes swung 0.48 - 1.25 of the reference within one quiet run; analysis/README.md) |\n\n",
			m->probe_ref / 1000, m->speed, r->speed_lo, r->speed_hi, LOGGP_PROBE_BYTES / 1048576, r->speed_n);
	else if (m->probe_ref > 0)
		fprintf(f, "| speed | %.1f ms a pass | the machine's speed when loggp.sh measured: the CPU of one pass of "
			   "hostwork's float sum over %.0f MiB in rank 0's host (cpu_sum, median); each measurement's probe "
			   "of the same pass just before it (cpu.csv) over this is its speed column: shown, not applied: "
			   "probes in the run: %d, and the hosts' work is scaled by their median from %d on (one of 4 passes "
			   "swung 0.48 - 1.25 of the reference within one quiet run; analysis/README.md) |\n\n",
			m->probe_ref / 1000, LOGGP_PROBE_BYTES / 1048576, r->speed_n, LOGGP_SPEED_PROBES);
	else
		fprintf(f, "| speed | - | no reference (loggp.csv without cpu_sum over %.0f MiB): every measurement taken as "
			   "fast as loggp.sh's |\n\n", LOGGP_PROBE_BYTES / 1048576);
}

/*
 * model_row() - whether row @x of run @r gets a line of the model's tables:
 * verified, the first row of its algorithm, collective and size (it stands
 * for its rounds), a collective and algorithm (INC or the ring) the model
 * knows; their loggp enums in *@lc and *@algo.
 */
static bool model_row(const struct run *r, const struct res_row *x, int *lc, int *algo)
{
	*lc = loggp_coll_parse(res_coll_name(x->coll));
	*algo = !strcmp(x->algo, "inc") ? LOGGP_INC : !strcmp(x->algo, "ring") ? LOGGP_RING : -1;
	return !x->wrong && *lc >= 0 && *algo >= 0 && find_row(r, x->algo, x->coll, (int64_t)x->bytes) == x;
}

/*
 * report_hosts() - each host's work in the model (loggp_host_work(), at the
 * run's speed) against its CPU inside the timed calls (cpuwin.csv, per call,
 * median of the rounds), one line per verified collective, algorithm and size:
 * which host's term misses, where the predictions table tells only that the
 * busiest or the sum does. Nothing without cpuwin.csv; hosts beyond
 * REPORT_HOSTS are summarised as their range of errors.
 */
#define REPORT_HOSTS 8
static void report_hosts(FILE *f, const struct run *r)
{
	int p = r->tree.count[r->tree.levels - 1], shown = p < REPORT_HOSTS ? p : REPORT_HOSTS; /* a fitted run's tree */
	bool head = false;

	if (!r->cw.n || p < 2)
		return;
	for (int c = 0; c < RES_NCOLL; c++)
		for (size_t k = 0; k < r->t.n; k++) {
			const struct res_row *x = &r->t.rows[k];
			char size[32], node[CPUWIN_NODE_LEN], b1[32], b2[32];
			double cpu, lo = 0, hi = 0;
			int seen = 0, lc, algo;

			if ((int)x->coll != c || !model_row(r, x, &lc, &algo))
				continue;
			if (!window_host_per_call(r, x->algo, res_coll_name(x->coll), (double)x->bytes, 0, &cpu, node,
						  sizeof(node)))
				continue;
			if (!head) {
				fprintf(f, "Each host's work in the model against its CPU inside the timed calls (cpuwin.csv, "
					   "per call, the median of the rounds; hosts in rank order): model / measured "
					   "(model / measured - 1). It tells which host's term misses where the table above "
					   "gives only the busiest host and the sum.\n\n| collective | algorithm | size |");
				for (int h = 0; h < shown; h++)
					fprintf(f, " rank %d |", h);
				fprintf(f, "%s\n|---|---|---|", p > shown ? " the other hosts |" : "");
				for (int h = 0; h < shown + (p > shown); h++)
					fprintf(f, "---|");
				fputc('\n', f);
				head = true;
			}
			fmt_size(size, sizeof(size), x->bytes);
			fprintf(f, "| %s | %s | %s |", coll_titles[x->coll], x->algo, size);
			for (int h = 0; h < p; h++) {
				double w = loggp_host_work(&r->fit, p, (enum loggp_coll)lc, (enum loggp_algo)algo,
							   (double)x->bytes, x->root > 0 ? x->root : 0, h, NULL);
				int got = window_host_per_call(r, x->algo, res_coll_name(x->coll), (double)x->bytes, h, &cpu,
							       node, sizeof(node));
				double e = got && cpu > 0 && w >= 0 ? w / cpu - 1 : NAN;
				if (h >= shown) {
					if (!isnan(e)) {
						lo = seen++ ? fmin(lo, e) : e;
						hi = seen > 1 ? fmax(hi, e) : e;
					}
					continue;
				}
				if (!got || w < 0) {
					fprintf(f, " - |");
					continue;
				}
				fmt_time(b1, sizeof(b1), w);
				fmt_time(b2, sizeof(b2), cpu);
				if (isnan(e))
					fprintf(f, " %s: %s / %s |", node, b1, b2);
				else
					fprintf(f, " %s: %s / %s (%+.0f %%) |", node, b1, b2, 100 * e);
			}
			if (p > shown) {
				if (seen)
					fprintf(f, " %d hosts: %+.0f … %+.0f %% |", seen, 100 * lo, 100 * hi);
				else
					fprintf(f, " - |");
			}
			fputc('\n', f);
		}
	if (head)
		fputc('\n', f);
}

/*
 * report_loggp() - REPORT.md's "LogGP model" section on @f: the model, then
 * per run of @runs[0..@n) with loggp.csv (newest first) why it has no model,
 * or its parameters and a line per verified INC and ring collective and size
 * the model predicts (the first row of each stands for its rounds): the
 * prediction against the measured median, on the cores the lab had and on
 * all the machine's, and the measured CPU, switch timeouts and interrupts
 * beside. Write errors show in finish().
 */
static void report_loggp(FILE *f, struct run *runs, size_t n)
{
	bool any = false;

	fprintf(f, "## LogGP model\n\n"
		   "Every parameter measured in the run itself (`loggp.csv`, `cpu.csv`, `switch-counters.txt`, "
		   "analysis/loggp.h), none fitted to the collectives. The time of a collective is "
		   "T = max(W_max, W / C) + steps·step: W_max the busiest host's CPU work, W every host's and "
		   "switch's, C the cores they share; a host's work is o per message (libinccl's sends, posted "
		   "%d at a time, o_su and the share of an ACK the switch sends, or o_sb; messages of 16 packets, the "
		   "ring's of 16 KiB), o_c per completion its sends ask beyond the streams' one in 100, and G_s, G_r "
		   "per byte (plus its own loops: G_swap for INC, G_copy or G_sum for the ring), o_w per message the ring "
		   "receives while it waits for it; the switches' "
		   "frames (data and ACKs) · c_sw. INC takes one step (a Broadcast, Reduce or Route per block: P or P(P-1) for "
		   "the block collectives), the ring 2(P-1) (AllReduce) or P-1; a step is the run's Barrier of that "
		   "algorithm (per step), L + 2o without one. Measured: the median over the run's rounds (min – max and their number "
		   "when several) of the slowest rank's time (time_max_us: when the whole collective is done, what the model "
		   "predicts), or of rank 0's (time_us) in a run without it; each run says which; error = predicted / measured - 1. C: the machine's cores less "
		   "those the rest of the machine used inside the timed calls (cpuwin.csv's machine line less its "
		   "processes' over the calls' span; median of the rounds), else during the whole measurement "
		   "(cpu.csv: the tool's start-up and the lab's commands included), when recorded: other work on the "
		   "machine takes them from the lab; the prediction on all the machine's "
		   "cores is shown beside. Speed: how much slower than when loggp.sh measured the machine ran just "
		   "before the measurement (cpu.csv's probe: one pass of hostwork's float sum in rank 0's host, over "
		   "the same pass in loggp.csv; median of the rounds; `-` without probes): shown beside; the prediction "
		   "scales the hosts' work by the median of all the run's probes instead (the speed row), when it has "
		   "enough of them. CPU per collective: the lab's measured CPU (cpu.csv, start-up and the "
		   "tool's checks of the result included) against the model's W_max and W / C. Switch timeouts: the "
		   "retransmit timers that expired in the switches per collective (switch.csv, all switches, median of "
		   "the rounds; `-` for the ring and runs without the file): each a wait of at least the timeout's floor "
		   "(50 ms by default) for an ACK, which the model does not count. Interrupts per packet: the hosts' guest "
		   "interrupts over the packets rxe sent and received (rxe.csv, all hosts, median of the rounds): a rank "
		   "that sleeps waiting for a peer takes its packets a few interrupts at a time, and under TCG each costs "
		   "the CPU of several packets: what o_w counts (analysis/README.md); (calls X): the same inside the "
		   "timed calls only (rxe.csv's timed_intr and timed_pkts: inccl_perf's counts around each call, its "
		   "start-up, barriers and checks left out). With the calls' interrupts: the prediction with the "
		   "interrupts the hosts took inside the timed calls (rxe.csv's timed_intr over its timed_pkts, all "
		   "hosts, median of the rounds) in place of the streams' rate: each beyond it at o_intr, each fewer "
		   "saving it, spread over the hosts, the ring's waits (o_w) then left out (the counts hold them); "
		   "`+N a call`: the interrupts beyond the streams' rate per collective. The interrupts are measured in "
		   "the calls, not predicted: the column shows how much of the error the price of an interrupt "
		   "explains; `-` without timed counts or o_intr.\n\n",
		LOGGP_INC_POST);
	for (size_t i = n; i-- > 0;) {
		struct run *r = &runs[i];
		char nm[600];
		int total = 0, within = 0, itotal = 0, iwithin = 0;

		if (!r->has_loggp)
			continue;
		any = true;
		md_text(nm, sizeof(nm), r->name);
		if (!r->fitted) {
			fprintf(f, "- %s: no model: %s\n\n", nm, r->fit_err);
			continue;
		}
		fprintf(f, "### %s\n\n", nm);
		bool slow = model_time_max(r);
		fprintf(f, "Measured: %s.\n\n", model_time_what(r));
		report_params(f, r);
		if (r->cw.n)
			fprintf(f, "CPU inside the timed calls (cpuwin.csv, last column): per collective, the busiest host's "
				   "CPU inside the union of the ranks' timed windows (next to W_max) and every sampled "
				   "process's over C (next to W / C), each ± its bound (the samples' ticks around each edge "
				   "of the windows); the clock offsets that moved the guests' windows onto this machine's "
				   "clock are uncertain by the ± in brackets, each edge then missing or gaining up to that "
				   "much CPU per core. Median of the rounds, the largest bound.\n\n");
		fprintf(f, "| collective | algorithm | size | measured | predicted | error | C | speed | bound | W_max | W / C | "
			   "steps·step | on all %g cores (error) | measured CPU per collective: busiest host, all / C | "
			   "switch timeouts per collective | interrupts per packet | with the calls' interrupts (error) |%s\n"
			   "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|%s\n", r->fit.C,
			r->cw.n ? " CPU inside the timed calls per collective: busiest host, all / C (clock offset) | "
				  "cores busy inside the calls: of C (share) |" : "",
			r->cw.n ? "---|---|" : "");
		for (int c = 0; c < RES_NCOLL; c++)
			for (size_t k = 0; k < r->t.n; k++) { /* one line per algorithm and size: its first row stands for its rounds */
				const struct res_row *x = &r->t.rows[k];
				char t2[32], size[32], w1[32], w2[32], w3[32], cc[64];
				struct loggp_pred pr, all;
				struct loggp mc = r->fit;
				struct agg g;
				double hm = 0, al = 0, ot = -1, sp;
				int nc, lc, algo;
				char spd[32] = "-";

				if ((int)x->coll != c || !model_row(r, x, &lc, &algo))
					continue;
				nc = cpu_per_call(r, x->algo, res_coll_name(x->coll), (double)x->bytes, &hm, &al, &ot);
				double wh, whb, wa, wab, woff, wot, wco;
				int nw = r->cw.n ? window_cpu_per_call(r, x->algo, res_coll_name(x->coll), (double)x->bytes,
								      &wh, &whb, &wa, &wab, &woff, &wot, &wco)
						 : 0;
				/*
				 * the cores the lab had: the machine's less what the rest of it used meanwhile
				 * (measured): inside the timed calls where cpuwin.csv has the machine's line,
				 * else over the whole measurement (cpu.csv: the tool's start-up included)
				 */
				/* the machine's speed just before it (cpu.csv's probes) against loggp.sh's: shown, not
				 * applied (REPORT's speed row says why) */
				if (speed_of(r, x->algo, res_coll_name(x->coll), (double)x->bytes, &sp))
					snprintf(spd, sizeof(spd), "%.2f", sp);
				snprintf(cc, sizeof(cc), "%g", r->fit.C);
				if (nw && wot >= 0 && r->fit.C - wot > 0) {
					mc.C = r->fit.C - wot;
					snprintf(cc, sizeof(cc), "%.2f (%g - %.2f others in the calls)", mc.C, r->fit.C, wot);
				} else if (nc && ot > 0 && r->fit.C - ot > 0) {
					mc.C = r->fit.C - ot;
					snprintf(cc, sizeof(cc), "%.2f (%g - %.2f others)", mc.C, r->fit.C, ot);
				}
				if (loggp_predict(&mc, &r->tree, (enum loggp_coll)lc, (enum loggp_algo)algo, (double)x->bytes,
						  x->root > 0 ? x->root : 0, &pr) <= 0 ||
				    loggp_predict(&r->fit, &r->tree, (enum loggp_coll)lc, (enum loggp_algo)algo, (double)x->bytes,
						  x->root > 0 ? x->root : 0, &all) <= 0 ||
				    !aggregate_by(r, x->algo, x->coll, (int64_t)x->bytes, slow, &g))
					continue;
				double e = pr.t / g.t_med - 1;
				total++;
				within += fabs(e) <= 0.25;
				fmt_time(t2, sizeof(t2), pr.t);
				fmt_size(size, sizeof(size), x->bytes);
				fprintf(f, "| %s | %s | %s |", coll_titles[x->coll], x->algo, size);
				time_cell(f, &g);
				fmt_time(w1, sizeof(w1), pr.w_max);
				fmt_time(w2, sizeof(w2), (pr.w_hosts + pr.w_sw) / mc.C);
				fmt_time(w3, sizeof(w3), pr.steps * pr.step);
				fprintf(f, " %s | %+.0f %%%s | %s | %s | %s | %s | %s | %s |", t2, 100 * e, fabs(e) <= 0.25 ? "" : " **miss**",
					cc, spd, pr.cpu_bound ? "W / C" : "W_max", w1, w2, w3);
				fmt_time(w1, sizeof(w1), all.t);
				fprintf(f, " %s (%+.0f %%) |", w1, 100 * (all.t / g.t_med - 1));
				if (nc) {
					fmt_time(w1, sizeof(w1), hm);
					fmt_time(w2, sizeof(w2), al / mc.C);
					fprintf(f, " %s, %s |", w1, w2);
				} else {
					fprintf(f, " - |");
				}
				double to, ipp, tipp;
				if (switch_timeouts(r, x->algo, res_coll_name(x->coll), (double)x->bytes, &to))
					fprintf(f, " %.1f |", to);
				else
					fprintf(f, " - |");
				int has_ipp = host_intr_per_packet(r, x->algo, res_coll_name(x->coll), (double)x->bytes, &ipp);
				if (host_timed_intr_per_packet(r, x->algo, res_coll_name(x->coll), (double)x->bytes, &tipp)) {
					if (has_ipp)
						fprintf(f, " %.3f (calls %.3f) |", ipp, tipp);
					else
						fprintf(f, " - (calls %.3f) |", tipp);
				} else if (has_ipp) {
					fprintf(f, " %.3f |", ipp);
				} else {
					fprintf(f, " - |");
				}
				/* the prediction with the interrupts counted inside the calls (loggp_predict_intr()) */
				struct loggp_pred pi;
				double ci, cp;
				if (host_timed_per_call(r, x->algo, res_coll_name(x->coll), (double)x->bytes, &ci, &cp) &&
				    loggp_predict_intr(&mc, &r->tree, &pr, ci, cp, &pi) > 0) {
					double ei = pi.t / g.t_med - 1;
					itotal++;
					iwithin += fabs(ei) <= 0.25;
					fmt_time(w1, sizeof(w1), pi.t);
					fprintf(f, " %s (%+.0f %%%s; %+.0f a call) |", w1, 100 * ei, fabs(ei) <= 0.25 ? "" : " **miss**",
						pi.extra_intr);
				} else {
					fprintf(f, " - |");
				}
				if (!r->cw.n) {
					fputc('\n', f);
				} else if (nw) {
					char b1[32], b2[32], b3[32], b4[32], b5[32];
					fmt_time(b1, sizeof(b1), wh);
					fmt_time(b2, sizeof(b2), whb);
					fmt_time(b3, sizeof(b3), wa / mc.C);
					fmt_time(b4, sizeof(b4), wab / mc.C);
					fmt_time(b5, sizeof(b5), woff);
					fprintf(f, " %s ± %s, %s ± %s (± %s) |", b1, b2, b3, b4, b5);
					if (wco >= 0)
						fprintf(f, " %.2f of %.2f (%.0f %%) |\n", wco, mc.C, 100 * wco / mc.C);
					else
						fprintf(f, " - |\n");
				} else {
					fprintf(f, " - | - |\n");
				}
			}
		fprintf(f, "\n%d of %d predictions within ±25 %% of the measured median.", within, total);
		if (itotal)
			fprintf(f, " With the interrupts counted inside the calls: %d of %d.", iwithin, itotal);
		fprintf(f, "\n\n");
		report_hosts(f, r);
	}
	if (!any)
		fprintf(f, "No run has loggp.csv (BASELINES without loggp).\n\n");
}

/*
 * The sizes @r measured of collective @coll (-1: of every collective with
 * sizes; RES_P2P: none) in its verified rows of the drawn algorithms, into
 * @buf: "16 MiB, 64 MiB", "1 KiB – 1 GiB (12 sizes)" when many, or "-".
 */
static void sizes_of(const struct run *r, int coll, char *buf, size_t len)
{
	uint64_t last = 0, next, first = 0;
	size_t k = 0;
	int count = 0;
	char one[32];

	buf[0] = 0;
	for (;; last = next) {
		next = 0;
		for (size_t i = 0; i < r->t.n; i++) {
			const struct res_row *x = &r->t.rows[i];
			if (coll != RES_P2P && (coll < 0 ? x->coll <= RES_LAST_SIZED : (int)x->coll == coll) && !x->wrong &&
			    drawn(x->algo) && x->bytes > last && (!next || x->bytes < next))
				next = x->bytes;
		}
		if (!next)
			break;
		if (!count++)
			first = next;
		fmt_size(one, sizeof(one), next);
		if (k < len)
			k += (size_t)snprintf(buf + k, len - k, "%s%s", k ? ", " : "", one);
	}
	if (count > 8) { /* too many to list: the range */
		char lo[32];
		fmt_size(lo, sizeof(lo), first);
		snprintf(buf, len, "%s – %s (%d sizes)", lo, one, count);
	} else if (!count) {
		snprintf(buf, len, "-");
	}
}

/*
 * report_runs() - REPORT.md's "Runs and their charts" section on @f: per run
 * of @runs[0..@n) (sorted oldest first: written newest first) its metadata,
 * rounds and their load, ceilings and rows left out, then each chart whose
 * script write_run_plots() wrote (plots/NAME.gp) as a figure with its
 * caption. Write errors show in finish().
 */
static void report_runs(FILE *f, struct run *runs, size_t n)
{
	/* each chart, what it shows and the collective whose sizes it draws (-1: all, RES_P2P: none) */
	static const struct {
		const char *name, *what;
		int coll;
	} charts[] = {
		{ "summary", "INC against every baseline and ceiling", -1 },
		{ "allreduce-throughput", "AllReduce bandwidth vs size", RES_ALLREDUCE },
		{ "allreduce-time", "AllReduce time vs size", RES_ALLREDUCE },
		{ "reduce-throughput", "Reduce bandwidth vs size", RES_REDUCE },
		{ "reduce-time", "Reduce time vs size", RES_REDUCE },
		{ "broadcast-throughput", "Broadcast bandwidth vs size", RES_BROADCAST },
		{ "broadcast-time", "Broadcast time vs size", RES_BROADCAST },
		{ "allgather-throughput", "AllGather bandwidth vs size", RES_ALLGATHER },
		{ "allgather-time", "AllGather time vs size", RES_ALLGATHER },
		{ "reducescatter-throughput", "ReduceScatter bandwidth vs size", RES_REDUCESCATTER },
		{ "reducescatter-time", "ReduceScatter time vs size", RES_REDUCESCATTER },
		{ "alltoall-throughput", "AllToAll bandwidth vs size", RES_ALLTOALL },
		{ "alltoall-time", "AllToAll time vs size", RES_ALLTOALL },
		{ "barrier-time", "Barrier time per algorithm", RES_P2P },
		{ "loggp-fit", "LogGP fit", RES_P2P },
		{ "loggp-allreduce", "AllReduce, LogGP predicted vs measured", RES_ALLREDUCE },
	};

	fprintf(f, "## Runs and their charts (newest first)\n\n");
	for (size_t i = n; i-- > 0;) {
		const struct run *r = &runs[i];
		char path[4400], nm[600], ex[80], dt[100], cm[120], tp[160], ac[50], cpu[300], st[600], sw[80], url[800];
		char cd[600], rd[100];
		int rounds = r->meta.rounds ? r->meta.rounds : 1;

		fprintf(f, "### %s\n\n- experiment %s, %s, commit %s\n- topology %s, accelerator %s, host CPU %s\n"
			   "- status: %s\n",
			md_text(nm, sizeof(nm), r->name), md_code(ex, sizeof(ex), r->meta.experiment[0] ? r->meta.experiment : "?"),
			md_text(dt, sizeof(dt), r->meta.date[0] ? r->meta.date : "date unknown"),
			md_code(cm, sizeof(cm), r->meta.commit[0] ? r->meta.commit : "?"), md_text(tp, sizeof(tp), r->meta.topology),
			md_text(ac, sizeof(ac), r->meta.accelerator),
			md_text(cpu, sizeof(cpu), r->meta.host_cpu[0] ? r->meta.host_cpu : "unknown"),
			md_text(st, sizeof(st), r->meta.status[0] ? r->meta.status : "unknown"));
		fprintf(f, "- conditions: switches %s, %d round(s)%s\n", md_code(sw, sizeof(sw), r->meta.switch_mode),
			rounds, r->t.with_rounds ? "" : " (a run from before rounds: one of each)");
		if (r->meta.hypervisors > 1)
			fprintf(f, "- **spans %d hypervisors**: its nodes ran on %d machines' libvirt connections (meta.yaml "
				   "`placement` says which node ran where); crossing edges went through tunnels\n",
				r->meta.hypervisors, r->meta.hypervisors);
		snprintf(rd, sizeof(rd), "%d round%s", rounds, rounds > 1 ? "s (medians, bars min – max)" : "");
		md_url(url, sizeof(url), r->name);
		for (int c = 0; c < r->meta.ncond; c++) {
			const struct res_round *q = &r->meta.cond[c];
			char start[100], before[32], after[32];
			fprintf(f, "  - round %d%s%s: load average %s before, %s after", q->round, q->start[0] ? " from " : "",
				md_text(start, sizeof(start), q->start), fmt_load(before, sizeof(before), q->load_before),
				fmt_load(after, sizeof(after), q->load_after));
			if (q->steal_pct > 0)
				fprintf(f, ", %.2f %% of the CPU stolen", q->steal_pct);
			fprintf(f, "\n");
		}
		if (max_load(r) >= 0 && max_load(r) - min_load(r) > LOAD_SPREAD)
			fprintf(f, "- **warning: its rounds ran under different load** (load average %.2f to %.2f, more than %.1f "
				   "apart); its medians combine them\n", min_load(r), max_load(r), LOAD_SPREAD);
		if (ceiling_of(r) > 0)
			fprintf(f, "- RDMA ceiling (ib_send_bw across the tree, unloaded pair): %.2f MB/s\n", ceiling_of(r));
		if (load_ceiling_of(r) > 0)
			fprintf(f, "- same-load ceiling (every host ib_send_bw -b at once, per host): %.2f MB/s\n", load_ceiling_of(r));
		if (r->unverified)
			fprintf(f, "- %zu row(s) with wrong elements left out of the charts and tables\n", r->unverified);
		fprintf(f, "\n");
		for (size_t c = 0; c < sizeof(charts) / sizeof(charts[0]); c++) {
			/* drawn when the script named by the chart's first word was written (see write_run_plots) */
			double lo, hi;
			char sizes[400];

			snprintf(path, sizeof(path), "%s/plots/%.*s.gp", r->dir, (int)strcspn(charts[c].name, "-"), charts[c].name);
			if (!exists(path) || (!strcmp(charts[c].name, "loggp-allreduce") && !size_range(r, RES_ALLREDUCE, &lo, &hi)))
				continue;
			/* the figure, its alt text naming the run; under it the run directory and the conditions */
			sizes_of(r, charts[c].coll, sizes, sizeof(sizes));
			if (!strcmp(charts[c].name, "barrier-time")) {
				snprintf(sizes, sizeof(sizes), "none (a barrier carries no data)");
			} else if (!strcmp(charts[c].name, "loggp-fit")) {
				double lo_b = INFINITY, hi_b = 0;
				for (size_t k = 0; k < r->pts.n; k++) {
					lo_b = fmin(lo_b, r->pts.p[k].bytes);
					hi_b = fmax(hi_b, r->pts.p[k].bytes);
				}
				snprintf(sizes, sizeof(sizes), "%.0f B – %.0f B (%zu LogGP measurements)", lo_b, hi_b, r->pts.n);
			}
			fprintf(f, "![%s, run %s](%s/plots/%s.png)\n\n", charts[c].what, nm, url, charts[c].name);
			fprintf(f, "*Figure %s: run directory %s; topology %s, switches %s, accelerator %s, %d ranks, date %s, "
				   "commit %s, sizes %s, %s.*\n\n",
				charts[c].name, md_code(cd, sizeof(cd), r->name), tp, sw, ac, nranks_of(r), dt, cm, sizes, rd);
		}
	}
}

/*
 * write_report() - @dir/REPORT.md from @runs[0..@n), sorted oldest first,
 * naming the @bad runs that could not be read; without runs a page that says
 * so and how to make one. Returns 0, or -1 after complaining (the file could
 * not be created or written).
 */
static int write_report(const char *dir, struct run *runs, size_t n, size_t bad)
{
	char path[4400];
	FILE *f = create(dir, "REPORT.md", path, sizeof(path));

	if (!f)
		return -1;
	if (!n) { /* never a report of empty tables: say there is nothing, and how to make something */
		fprintf(f, "# inclab results\n\n**No runs here yet**: `make plots` found no run that it could read in this "
			   "directory (a run is a directory holding `results.csv` and `meta.yaml`)");
		if (bad)
			fprintf(f, "; %zu run(s) could not be read: make plots' errors name the file and line", bad);
		fprintf(f, ".\n\nTo make one, with the lab up (`make lab-up`):\n\n"
			   "```\nmake exp-allreduce SIZE=64M   # INC AllReduce next to its baselines and ceilings, stored "
			   "under results/\nmake plots                    # its charts and this report\n```\n\n"
			   "experiments/README.md lists every experiment.\n");
		return finish(f, path);
	}
	fprintf(f, "# inclab results\n\nWritten by `make plots` from %zu run(s) in this directory", n);
	if (bad)
		fprintf(f, " (%zu more could not be read: see make plots' errors)", bad);
	fprintf(f, ". Every figure is from rows whose every element was verified on every rank; "
		   "MB/s are 10^6 bytes/s.\n\n");
	report_seed(f, runs, n);
	report_speedups(f, runs, n);
	report_sim(f, runs, n);
	report_loggp(f, runs, n);
	report_runs(f, runs, n);
	return finish(f, path);
}

/* ---- commands ------------------------------------------------------------------- */

/* cmp_runs() - qsort's order of runs: by meta.date (ISO 8601 UTC, so as text is by time; "" first), then by name. */
static int cmp_runs(const void *a, const void *b)
{
	const struct run *x = a, *y = b;
	int c = strcmp(x->meta.date, y->meta.date);
	return c ? c : strcmp(x->name, y->name);
}

/*
 * cmd_plots() - `increport plots DIR`: every directory in @dir holding
 * results.csv or meta.yaml is a run; those that read are sorted (cmp_runs()),
 * each gets its plots (write_run_plots(): the scripts' paths on stdout), and
 * @dir gets REPORT.md. A run that does not read is complained about, counted
 * in REPORT.md and left out; out of memory, the runs read so far are used.
 * Returns the exit status: 1 when anything was complained about, else 0.
 */
static int cmd_plots(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct run *runs = NULL;
	size_t n = 0, cap = 0, bad = 0;

	if (!d) {
		complain("cannot read %s: %s", dir, strerror(errno));
		return 1;
	}
	while ((e = readdir(d))) {
		char sub[4200], csv[4300], meta[4300];
		struct stat st;

		if (e->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name);
		snprintf(csv, sizeof(csv), "%s/results.csv", sub);
		snprintf(meta, sizeof(meta), "%s/meta.yaml", sub);
		if (stat(sub, &st) < 0 || !S_ISDIR(st.st_mode) || (!exists(csv) && !exists(meta)))
			continue; /* not a run */
		if (n == cap) {
			struct run *p = realloc(runs, (cap = cap ? 2 * cap : 16) * sizeof(*p));
			if (!p) {
				complain("out of memory");
				break;
			}
			runs = p;
		}
		if (load_run(sub, &runs[n]) < 0) {
			free_run(&runs[n]);
			bad++;
			continue;
		}
		n++;
	}
	closedir(d);
	if (n)
		qsort(runs, n, sizeof(*runs), cmp_runs);
	for (size_t i = 0; i < n; i++)
		if (write_run_plots(&runs[i], stdout) < 0)
			complain("%s: charts incomplete", runs[i].dir);
	if (!n && !bad)
		fprintf(stderr, "increport: no runs in %s (make exp-allreduce SIZE=64M stores one)\n", dir);
	write_report(dir, runs, n, bad);
	for (size_t i = 0; i < n; i++)
		free_run(&runs[i]);
	free(runs);
	return errors ? 1 : 0;
}

/*
 * cmd_check() - `increport check FILE...`: each of @argv[0..@argc) read by
 * the reader its first line names (cpuwin.csv's or loggp.csv's header, else
 * results.csv's), a line of what it holds on stdout when it reads; one that
 * does not (or a directory, or not a regular file) is complained about, and
 * the rest are still checked. Returns the exit status: 1 when anything was
 * complained about, else 0.
 */
static int cmd_check(int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		char line[256] = "", err[RES_ERR_LEN];
		FILE *f = fopen(argv[i], "r");
		struct stat st;
		int rc;

		if (!f) {
			complain("%s: %s", argv[i], strerror(errno));
			continue;
		}
		if (fstat(fileno(f), &st) == 0 && !S_ISREG(st.st_mode)) { /* a directory opens, and reads as nothing */
			complain("%s: %s", argv[i], S_ISDIR(st.st_mode) ? "a directory, not a file" : "not a regular file");
			fclose(f);
			continue;
		}
		if (!fgets(line, sizeof(line), f))
			line[0] = 0;
		rewind(f);
		if (!strncmp(line, CPUWIN_CSV_HEADER, strlen(CPUWIN_CSV_HEADER))) {
			struct cpuwin_table t = { 0 };
			if ((rc = cpuwin_parse_csv(f, argv[i], &t, err, sizeof(err))) == 0)
				printf("%s: %zu measurement(s) of CPU inside the timed calls\n", argv[i], t.n);
			cpuwin_table_free(&t);
		} else if (!strncmp(line, RES_LOGGP_HEADER, strlen(RES_LOGGP_HEADER))) {
			struct res_points p = { 0 };
			if ((rc = res_parse_loggp(f, argv[i], &p, err, sizeof(err))) == 0)
				printf("%s: %zu LogGP measurement(s)\n", argv[i], p.n);
			res_points_free(&p);
		} else {
			struct res_table t = { 0 };
			if ((rc = res_parse_csv(f, argv[i], &t, err, sizeof(err))) == 0)
				printf("%s: %zu row(s)\n", argv[i], t.n);
			res_table_free(&t);
		}
		fclose(f);
		if (rc < 0)
			complain("%s", err);
	}
	return errors ? 1 : 0;
}

/*
 * cmd_show() - `increport show RUN_DIR`: run @dir as load_run() reads it on
 * stdout, a line each: metadata, every row, the ceilings, the LogGP
 * parameters (or why there are none). Returns 0, or 1 when the run does not
 * read (complained about).
 */
static int cmd_show(const char *dir)
{
	struct run r;

	if (load_run(dir, &r) < 0) {
		free_run(&r);
		return 1;
	}
	printf("run %s: experiment %s, topology %s, accelerator %s, status %s\n", r.name, r.meta.experiment,
	       r.meta.topology, r.meta.accelerator, r.meta.status);
	for (size_t i = 0; i < r.t.n; i++) {
		const struct res_row *x = &r.t.rows[i];
		char tm[32] = "-"; /* absent: no column, or "-" */
		if (x->time_max_us > 0)
			snprintf(tm, sizeof(tm), "%.2f", x->time_max_us);
		printf("row %d: %s %s bytes=%llu nranks=%d time_us=%.2f algbw=%.2f busbw=%.2f wrong=%llu round=%d "
		       "time_max_us=%s\n",
		       x->line, x->algo, res_coll_name(x->coll), (unsigned long long)x->bytes, x->nranks, x->time_us, x->algbw,
		       x->busbw, (unsigned long long)x->wrong, x->round, tm);
	}
	if (ceiling_of(&r) > 0)
		printf("ceiling %.2f MB/s\n", ceiling_of(&r));
	if (load_ceiling_of(&r) > 0)
		printf("ceiling-load %.2f MB/s\n", load_ceiling_of(&r));
	if (r.fitted)
		printf("loggp L=%.3f o=%.3f o_s=%.3f o_r=%.3f o_sb=%.3f G_s=%.6f G_r=%.6f G_swap=%.6f G_copy=%.6f G_sum=%.6f "
		       "g=%.3f G=%.6f c_sw=%.3f f_sw=%.3f C=%d o_su=%.3f o_ru=%.3f%s o_e=%.3f%s o_c=%.3f%s o_w=%.3f%s step_inc=%.1f "
		       "step_ring=%.1f speed=%.3f\n",
		       r.fit.L, r.fit.o, r.fit.o_s, r.fit.o_r, r.fit.o_sb, r.fit.G_s, r.fit.G_r, r.fit.G_swap, r.fit.G_copy,
		       r.fit.G_sum, r.fit.g, r.fit.G, r.fit.c_sw, r.fit.f_sw, (int)r.fit.C, r.fit.uc_seen ? r.fit.o_su : 0,
		       r.fit.uc_seen ? r.fit.o_ru : 0, r.fit.uc_seen && !r.fit.uc ? "(unused)" : "", r.fit.o_e,
		       r.fit.empty_seen && !r.fit.empty ? "(unused)" : "", r.fit.o_c,
		       r.fit.signaled_seen && !r.fit.signaled ? "(unused)" : "", r.fit.o_w,
		       r.fit.waited_seen && !r.fit.waited ? "(unused)" : "", r.fit.step_inc, r.fit.step_ring,
		       r.fit.speed > 0 ? r.fit.speed : 1);
	else if (r.has_loggp)
		printf("loggp: no model: %s\n", r.fit_err);
	free_run(&r);
	return 0;
}

/* usage() - the command lines increport takes, on @f (stdout for --help, stderr after a wrong call). */
static void usage(FILE *f)
{
	fprintf(f, "usage: increport check FILE...       check results.csv / loggp.csv / cpuwin.csv files\n"
		   "       increport show RUN_DIR        one run as read, with its LogGP fit\n"
		   "       increport plots RESULTS_DIR   charts' data and gnuplot scripts of every run, and REPORT.md\n");
}

int main(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "check"))
		return cmd_check(argc - 2, argv + 2);
	if (argc == 3 && !strcmp(argv[1], "show"))
		return cmd_show(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "plots"))
		return cmd_plots(argv[2]);
	usage(stderr);
	return 2;
}
