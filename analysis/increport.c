/*
 * increport.c — turns stored experiment runs (experiments/exp.sh) into
 * gnuplot charts and results/REPORT.md. `make plots` runs it, then gnuplot
 * on every script it wrote (analysis/plots.sh).
 *
 *   increport check FILE...        check results.csv / loggp.csv files (by header)
 *   increport show RUN_DIR         a run as read: metadata, rows, LogGP fit
 *   increport plots RESULTS_DIR    per run: RUN/plots/ data and gnuplot scripts
 *                                  (their paths on stdout); RESULTS_DIR/REPORT.md
 *
 * A run is a directory of RESULTS_DIR holding results.csv (and usually
 * meta.yaml, loggp.csv). A run whose files do not read is reported as
 * "FILE:LINE: reason" and left out, the others are still drawn, and the exit
 * status is 1. Only rows with no wrong element are drawn or reported.
 *
 * Per run: for each collective measured, a throughput chart (algorithm
 * bandwidth vs size, every algorithm and the ib_send_bw ceiling of the same
 * run) and a time chart; barrier: time per algorithm; with loggp.csv, the
 * LogGP fit and its AllReduce predictions against the measured times. Each
 * chart as PNG and SVG, titled with the topology and the accelerator.
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

#include "loggp.h"
#include "results.h"

#define MIB 1048576.0

/* Algorithms in the order they are drawn and tabled, with their legend. */
static const struct {
	const char *name, *label;
} algos[] = {
	{ "inc", "INC (aggregated in the switches)" },
	{ "ring", "ring (host-based, switches route)" },
	{ "mpi-tcp", "OpenMPI over TCP" },
	{ "mpi-ucx", "OpenMPI over UCX/rxe" },
};
#define NALGOS (sizeof(algos) / sizeof(algos[0]))

static const char *const coll_titles[RES_NCOLL] = { "AllReduce", "Reduce", "Broadcast", "Barrier", "point to point" };

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

struct run {
	char dir[4096];
	char name[256];
	struct res_meta meta;
	struct res_table t;
	struct res_points pts;
	bool has_loggp, fitted;
	struct loggp fit;
	char fit_err[RES_ERR_LEN];
	size_t unverified;       /* rows with wrong elements, left out */
};

static int errors;

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

/* Read run directory @dir into @r; 0, or -1 after complaining. */
static int load_run(const char *dir, struct run *r)
{
	char path[4200], err[RES_ERR_LEN];
	const char *slash;

	memset(r, 0, sizeof(*r));
	snprintf(r->dir, sizeof(r->dir), "%s", dir);
	slash = strrchr(dir, '/');
	snprintf(r->name, sizeof(r->name), "%s", slash && slash[1] ? slash + 1 : dir);
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
	if (!r->meta.date[0]) /* no meta.yaml yet (a run in progress): the time in its name, NAME-YYYYmmdd-HHMMSS */
		date_from_name(r->name, r->meta.date, sizeof(r->meta.date));
	if (!r->meta.topology[0])
		snprintf(r->meta.topology, sizeof(r->meta.topology), "unknown topology");
	if (!r->meta.accelerator[0])
		snprintf(r->meta.accelerator, sizeof(r->meta.accelerator), "unknown");
	snprintf(path, sizeof(path), "%s/loggp.csv", dir);
	if (exists(path)) {
		if (res_load_loggp(path, &r->pts, err, sizeof(err)) < 0) {
			complain("%s", err);
			return -1;
		}
		r->has_loggp = true;
		r->fitted = loggp_fit(r->pts.p, r->pts.n, &r->fit, r->fit_err, sizeof(r->fit_err)) == 0;
	}
	for (size_t i = 0; i < r->t.n; i++)
		r->unverified += r->t.rows[i].wrong != 0;
	return 0;
}

static void free_run(struct run *r)
{
	res_table_free(&r->t);
	res_points_free(&r->pts);
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

static double ceiling_of(const struct run *r)
{
	const struct res_row *c = find_row(r, "ceiling", RES_P2P, -1);
	return c ? c->algbw : -1;
}

static int nranks_of(const struct run *r)
{
	for (size_t i = 0; i < r->t.n; i++)
		if (r->t.rows[i].coll != RES_P2P)
			return r->t.rows[i].nranks;
	return r->meta.nranks;
}

/* ---- output files ----------------------------------------------------------- */

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

/* gnuplot: a string in single quotes ('' is a quote). */
static void gp_string(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', f);
		fputc(*s, f);
	}
	fputc('\'', f);
}

static void gp_title(FILE *f, const char *title)
{
	fprintf(f, "set title ");
	gp_string(f, title);
	fputc('\n', f);
}

static void gp_header(FILE *f, const char *what)
{
	fprintf(f, "# %s — written by increport (make plots); run from this directory: gnuplot FILE.gp\n", what);
	fprintf(f, "set encoding utf8\nset grid\nset key below\nset datafile separator whitespace\n");
}

/* Draw the current plot into NAME.png and NAME.svg. */
static void gp_outputs(FILE *f, const char *name, const char *plot)
{
	fprintf(f, "set terminal pngcairo size 960,600 font 'sans,10' noenhanced\nset output '%s.png'\n%s\n", name, plot);
	fprintf(f, "set terminal svg size 960,600 dynamic font 'sans,10' noenhanced\nset output '%s.svg'\nreplot\nunset output\n", name);
}

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

/*
 * Write @coll-@algo.dat (MiB, time s, algbw, busbw per size, ascending, the
 * first row of each size) for every algorithm measured; which ones in @have.
 */
static int write_coll_data(const struct run *r, const char *pdir, enum res_coll coll, bool have[NALGOS])
{
	char name[96], path[4400];

	for (size_t a = 0; a < NALGOS; a++) {
		FILE *f = NULL;
		uint64_t last = 0;

		have[a] = false;
		for (;;) { /* rows in ascending size: pick the smallest size above the last */
			const struct res_row *best = NULL;
			for (size_t i = 0; i < r->t.n; i++) {
				const struct res_row *x = &r->t.rows[i];
				if (x->coll == coll && x->wrong == 0 && !strcmp(x->algo, algos[a].name) && x->bytes > last &&
				    (!best || x->bytes < best->bytes))
					best = x;
			}
			if (!best)
				break;
			if (!have[a]) {
				snprintf(name, sizeof(name), "%s-%s.dat", res_coll_name(coll), algos[a].name);
				if (!(f = create(pdir, name, path, sizeof(path))))
					return -1;
				fprintf(f, "# %s %s (run %s): MiB time_s algbw_MBps busbw_MBps\n", algos[a].name, res_coll_name(coll),
					r->name);
				have[a] = true;
			}
			fprintf(f, "%.9g %.9g %.6g %.6g\n", (double)best->bytes / MIB, best->time_us / 1e6, best->algbw,
				best->busbw);
			last = best->bytes;
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
	char name[64], path[4400], title[512], plot[4096];
	double lo, hi, ceil_mbps = ceiling_of(r);
	size_t n = 0;
	FILE *f;

	if (!size_range(r, coll, &lo, &hi))
		return 0;
	snprintf(name, sizeof(name), "%s.gp", res_coll_name(coll));
	if (!(f = create(pdir, name, path, sizeof(path))))
		return -1;
	gp_header(f, coll_titles[coll]);
	fprintf(f, "set logscale x 2\nset xrange [%.9g:%.9g]\nset format x '%%g'\n", lo / MIB / 2, hi / MIB * 2);
	fprintf(f, "set xlabel 'message size per rank (MiB)'\n");

	/* throughput */
	chart_title(title, sizeof(title), r, coll_titles[coll]);
	gp_title(f, title);
	fprintf(f, "set ylabel 'algorithm bandwidth (MB/s = 10^6 B/s)'\nset yrange [0:*]\n");
	n = (size_t)snprintf(plot, sizeof(plot), "plot");
	for (size_t a = 0; a < NALGOS; a++)
		if (have[a])
			n += (size_t)snprintf(plot + n, sizeof(plot) - n, "%s '%s-%s.dat' using 1:3 with linespoints lw 2 title '%s'",
					      n > 4 ? "," : "", res_coll_name(coll), algos[a].name, algos[a].label);
	if (ceil_mbps > 0)
		n += (size_t)snprintf(plot + n, sizeof(plot) - n,
				      ", %.6g with lines dt 2 lc 'black' title 'RDMA ceiling, ib_send_bw -e across the tree (%.2f MB/s)'",
				      ceil_mbps, ceil_mbps);
	if (r->meta.ceiling_poll > 0)
		snprintf(plot + n, sizeof(plot) - n, ", %.6g with lines dt 3 lc 'gray' title 'the same, busy polling (%.2f MB/s)'",
			 r->meta.ceiling_poll, r->meta.ceiling_poll);
	snprintf(name, sizeof(name), "%s-throughput", res_coll_name(coll));
	gp_outputs(f, name, plot);

	/* time */
	fprintf(f, "set logscale y 10\nset yrange [*:*]\nset ylabel 'time per collective (s)'\n");
	snprintf(name, sizeof(name), "%s time", coll_titles[coll]);
	chart_title(title, sizeof(title), r, name);
	gp_title(f, title);
	n = (size_t)snprintf(plot, sizeof(plot), "plot");
	for (size_t a = 0; a < NALGOS; a++)
		if (have[a])
			n += (size_t)snprintf(plot + n, sizeof(plot) - n, "%s '%s-%s.dat' using 1:2 with linespoints lw 2 title '%s'",
					      n > 4 ? "," : "", res_coll_name(coll), algos[a].name, algos[a].label);
	snprintf(name, sizeof(name), "%s-time", res_coll_name(coll));
	gp_outputs(f, name, plot);
	if (finish(f, path) < 0)
		return -1;
	fprintf(list, "%s\n", path);
	return 0;
}

/* barrier.gp: time per algorithm as bars. */
static int write_barrier(const struct run *r, const char *pdir, FILE *list)
{
	char path[4400], title[512];
	FILE *d, *f;
	int k = 0;

	for (size_t a = 0; a < NALGOS; a++)
		k += find_row(r, algos[a].name, RES_BARRIER, -1) != NULL;
	if (!k)
		return 0;
	if (!(d = create(pdir, "barrier.dat", path, sizeof(path))))
		return -1;
	fprintf(d, "# algorithm time_us (run %s)\n", r->name);
	for (size_t a = 0; a < NALGOS; a++) {
		const struct res_row *x = find_row(r, algos[a].name, RES_BARRIER, -1);
		if (x)
			fprintf(d, "%s %.6g\n", algos[a].name, x->time_us);
	}
	if (finish(d, path) < 0 || !(f = create(pdir, "barrier.gp", path, sizeof(path))))
		return -1;
	gp_header(f, "Barrier");
	chart_title(title, sizeof(title), r, "Barrier time");
	gp_title(f, title);
	fprintf(f, "set ylabel 'time per barrier (us)'\nset yrange [0:*]\nset style fill solid 0.6\n"
		   "set boxwidth 0.5\nset xlabel 'algorithm'\nunset key\n");
	gp_outputs(f, "barrier-time", "plot 'barrier.dat' using 0:2:xtic(1) with boxes");
	if (finish(f, path) < 0)
		return -1;
	fprintf(list, "%s\n", path);
	return 0;
}

/* loggp.gp: the fit over the measurements, and the AllReduce predictions against the measured times. */
static int write_loggp(const struct run *r, const char *pdir, FILE *list)
{
	char path[4400], title[512];
	double lo, hi;
	bool ar = size_range(r, RES_ALLREDUCE, &lo, &hi);
	int p = nranks_of(r);
	FILE *f;

	if (!r->fitted)
		return 0;
	if (!(f = create(pdir, "loggp-points.dat", path, sizeof(path))))
		return -1;
	fprintf(f, "# bytes value_us: index 0 half_rtt, index 1 gap (run %s)\n", r->name);
	for (int m = 0; m < 2; m++) {
		for (size_t i = 0; i < r->pts.n; i++)
			if ((int)r->pts.p[i].measure == m)
				fprintf(f, "%.9g %.6g\n", r->pts.p[i].bytes, r->pts.p[i].value_us);
		fprintf(f, "\n\n");
	}
	if (finish(f, path) < 0)
		return -1;
	if (!ar) { /* no AllReduce: predict over the usual range anyway */
		lo = 1024;
		hi = 1024 * MIB;
	}
	if (!(f = create(pdir, "loggp-predicted.dat", path, sizeof(path))))
		return -1;
	fprintf(f, "# MiB inc_s ring_s: LogGP predictions for %d ranks (run %s)\n", p, r->name);
	for (int i = 0; i <= 48; i++) {
		double b = lo / 2 * pow(hi * 2 / (lo / 2), i / 48.0);
		if (p >= 2)
			fprintf(f, "%.9g %.9g %.9g\n", b / MIB, loggp_inc_allreduce_us(&r->fit, b) / 1e6,
				loggp_ring_allreduce_us(&r->fit, b, p) / 1e6);
		else /* no ring of one rank (or of an unknown number): gnuplot skips NaN */
			fprintf(f, "%.9g %.9g NaN\n", b / MIB, loggp_inc_allreduce_us(&r->fit, b) / 1e6);
	}
	if (finish(f, path) < 0 || !(f = create(pdir, "loggp.gp", path, sizeof(path))))
		return -1;
	gp_header(f, "LogGP");
	fprintf(f, "L = %.9g\no = %.9g\nG = %.9g\na = %.9g\nGpp = %.9g\n", r->fit.L, r->fit.o, r->fit.G, r->fit.a, r->fit.G_pp);
	chart_title(title, sizeof(title), r, "LogGP fit: ping-pong and streaming between two hosts");
	gp_title(f, title);
	fprintf(f, "set logscale x 2\nset format x '%%g'\nset xlabel 'message size (bytes)'\n"
		   "set ylabel 'time (us)'\nset logscale y 10\n");
	gp_outputs(f, "loggp-fit",
		   "plot 'loggp-points.dat' index 0 using 1:2 with points pt 7 ps 1.3 title 'half round trip (ib_send_lat)', "
		   "a + Gpp * x with lines title sprintf('fit: L + 2o + n G_pp = %.1f us + n %.4f us/B', a, Gpp), "
		   "'loggp-points.dat' index 1 using 1:2 with points pt 5 ps 1.3 title 'gap per message of a stream (ib_send_bw -e)', "
		   "o + G * x with lines title sprintf('fit: o + n G = %.1f us + n %.4f us/B', o, G)");
	if (ar) {
		bool have[NALGOS] = { false };
		char plot[2048];
		size_t n;

		for (size_t a = 0; a < 2; a++) /* inc and ring: the two the model predicts */
			have[a] = find_row(r, algos[a].name, RES_ALLREDUCE, -1) != NULL;
		chart_title(title, sizeof(title), r, "AllReduce: LogGP predicted vs measured");
		gp_title(f, title);
		fprintf(f, "set logscale y 10\nset yrange [*:*]\nset xrange [%.9g:%.9g]\n"
			   "set xlabel 'message size per rank (MiB)'\nset ylabel 'time per AllReduce (s)'\n",
			lo / MIB / 2, hi / MIB * 2);
		n = (size_t)snprintf(plot, sizeof(plot),
				     "plot 'loggp-predicted.dat' using 1:2 with lines lw 2 dt 2 lc 1 title 'INC predicted: L + 2o + nG', "
				     "'loggp-predicted.dat' using 1:3 with lines lw 2 dt 2 lc 2 title 'ring predicted: 2(p-1)(L + 2o) + 2(p-1)/p nG'");
		for (size_t a = 0; a < 2; a++)
			if (have[a])
				n += (size_t)snprintf(plot + n, sizeof(plot) - n,
						      ", 'allreduce-%s.dat' using 1:2 with points pt 7 ps 1.5 lc %zu title '%s measured'",
						      algos[a].name, a + 1, algos[a].name);
		gp_outputs(f, "loggp-allreduce", plot);
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
	for (int c = RES_ALLREDUCE; c <= RES_BROADCAST; c++) {
		if (write_coll_data(r, pdir, (enum res_coll)c, have) < 0 ||
		    write_coll_script(r, pdir, (enum res_coll)c, have, list) < 0)
			return -1;
	}
	if (write_barrier(r, pdir, list) < 0 || write_loggp(r, pdir, list) < 0)
		return -1;
	return 0;
}

/* ---- REPORT.md ---------------------------------------------------------------- */

static void fmt_time(char *buf, size_t len, double us)
{
	if (us >= 1e6)
		snprintf(buf, len, "%.1f s", us / 1e6);
	else if (us >= 1e3)
		snprintf(buf, len, "%.1f ms", us / 1e3);
	else
		snprintf(buf, len, "%.1f us", us);
}

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

/* Two table cells: @ceiling and @mbps as a fraction of it, or "not measured". */
static void fraction(FILE *f, double mbps, double ceiling)
{
	if (ceiling > 0)
		fprintf(f, " %.2f | %.2f |", ceiling, mbps / ceiling);
	else
		fprintf(f, " not measured | |");
}

/* The seed's table, each row next to the newest run of the seed's topology that measured it. */
static void report_seed(FILE *f, struct run *runs, size_t n)
{
	fprintf(f, "## The seed's published table next to ours\n\n"
		   "The seed's rows (SPEC.md: 1-2-4 tree, 4 hosts) and, for each, the newest run of topology %s here "
		   "with a verified in-network (`inc`) row of that collective and size (any dtype and operator). "
		   "Throughput is algorithm bandwidth (bytes per rank / time) in Mbps (10^6 bit/s) as the seed gives it "
		   "and in MB/s; *of ceiling* divides it by the `ib_send_bw` ceiling measured across the tree in the "
		   "same run with both ends sleeping on completion events (`-e`, as libinccl does), *of polling ceiling* "
		   "by the same measured with perftest's default busy polling. The seed published no ceiling.\n\n",
		SEED_TOPOLOGY);
	fprintf(f, "| collective | size | seed time | seed Mbps | our time | our Mbps | our MB/s | ceiling MB/s | of ceiling "
		   "| polling ceiling MB/s | of polling ceiling | run |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
	for (size_t s = 0; s < sizeof(seed) / sizeof(seed[0]); s++) {
		const struct res_row *x = NULL;
		const struct run *from = NULL;
		char t[32], size[32];

		for (size_t i = n; i-- > 0 && !x;) /* runs are oldest first */
			if (!strcmp(runs[i].meta.topology, SEED_TOPOLOGY) &&
			    (x = find_row(&runs[i], "inc", seed[s].coll, (int64_t)seed[s].mib << 20)))
				from = &runs[i];
		fmt_size(size, sizeof(size), (uint64_t)seed[s].mib << 20);
		fprintf(f, "| %s | %s | %.1f s | %.1f |", coll_titles[seed[s].coll], size, seed[s].time_s, seed[s].mbps);
		if (!x) {
			fprintf(f, " not measured | | | | | | | |\n");
			continue;
		}
		fmt_time(t, sizeof(t), x->time_us);
		fprintf(f, " %s | %.1f | %.2f |", t, x->algbw * 8, x->algbw);
		fraction(f, x->algbw, ceiling_of(from));
		fraction(f, x->algbw, from->meta.ceiling_poll);
		fprintf(f, " %s |\n", from->name);
	}
	fprintf(f, "\n");
}

/* INC against every host-based baseline measured in the same run at the same size. */
static void report_speedups(FILE *f, struct run *runs, size_t n)
{
	double logsum[NALGOS] = { 0 };
	int count[NALGOS] = { 0 };
	bool any = false;

	fprintf(f, "## INC speed-up over the host-based baselines\n\n"
		   "Time of the baseline / time of INC for the same collective and size in the same run "
		   "(> 1: in-network aggregation is faster).\n\n"
		   "| run | collective | size | INC time | ring | ring / INC | OpenMPI TCP | TCP / INC | OpenMPI UCX | UCX / INC |\n"
		   "|---|---|---|---|---|---|---|---|---|---|\n");
	for (size_t i = n; i-- > 0;) {
		const struct run *r = &runs[i];
		for (size_t k = 0; k < r->t.n; k++) {
			const struct res_row *x = &r->t.rows[k];
			char t[32], size[32];
			bool row = false;

			if (strcmp(x->algo, "inc") || x->wrong || find_row(r, "inc", x->coll, (int64_t)x->bytes) != x)
				continue;
			for (size_t a = 1; a < NALGOS; a++)
				row |= find_row(r, algos[a].name, x->coll, (int64_t)x->bytes) != NULL;
			if (!row)
				continue;
			any = true;
			fmt_time(t, sizeof(t), x->time_us);
			fmt_size(size, sizeof(size), x->bytes);
			fprintf(f, "| %s | %s | %s | %s |", r->name, coll_titles[x->coll], x->coll == RES_BARRIER ? "-" : size, t);
			for (size_t a = 1; a < NALGOS; a++) {
				const struct res_row *b = find_row(r, algos[a].name, x->coll, (int64_t)x->bytes);
				if (b) {
					fmt_time(t, sizeof(t), b->time_us);
					fprintf(f, " %s | **%.2f** |", t, b->time_us / x->time_us);
					logsum[a] += log(b->time_us / x->time_us);
					count[a]++;
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
		if (count[a])
			fprintf(f, "- INC over %s: geometric mean speed-up **%.2f** over %d comparison(s)\n", algos[a].label,
				exp(logsum[a] / count[a]), count[a]);
	fprintf(f, "\n");
}

static void report_loggp(FILE *f, struct run *runs, size_t n)
{
	bool any = false;

	fprintf(f, "## LogGP\n\n"
		   "Fitted per run from `loggp.csv` (ib_send_lat half round trips and ib_send_bw -e message gaps between rank 0 "
		   "and a rank under another leaf): half_rtt(n) = L + 2o + n·G_pp and gap(n) = o + n·G by least squares "
		   "(the ends are software, so a stream is limited by the per-message overhead: g = o). "
		   "Predictions for p ranks: INC AllReduce = L + 2o + n·G (one message across the tree, aggregated in flight); "
		   "ring AllReduce = 2(p-1)(L + 2o) + 2(p-1)/p·n·G.\n\n");
	for (size_t i = n; i-- > 0;) {
		const struct run *r = &runs[i];

		if (!r->has_loggp)
			continue;
		any = true;
		if (!r->fitted) {
			fprintf(f, "- %s: no fit: %s\n\n", r->name, r->fit_err);
			continue;
		}
		fprintf(f, "### %s\n\n| L | o = g | G | 1/G | G_pp | points |\n|---|---|---|---|---|---|\n"
			   "| %.1f us%s | %.1f us | %.5f us/B | %.2f MB/s | %.5f us/B | %d half_rtt, %d gap |\n\n",
			r->name, r->fit.L, r->fit.L_clamped ? " (clamped: L + 2o < 2o)" : "", r->fit.o, r->fit.G, 1 / r->fit.G,
			r->fit.G_pp, r->fit.n_pp, r->fit.n_gap);
		fprintf(f, "| algorithm | size | measured | predicted | measured / predicted |\n|---|---|---|---|---|\n");
		for (size_t k = 0; k < r->t.n; k++) {
			const struct res_row *x = &r->t.rows[k];
			char t1[32], t2[32], size[32];
			double pred;

			if (x->coll != RES_ALLREDUCE || x->wrong || (strcmp(x->algo, "inc") && strcmp(x->algo, "ring")))
				continue;
			pred = !strcmp(x->algo, "inc") ? loggp_inc_allreduce_us(&r->fit, (double)x->bytes)
						       : loggp_ring_allreduce_us(&r->fit, (double)x->bytes, x->nranks);
			if (pred <= 0)
				continue; /* a ring of one rank: nothing to predict */
			fmt_time(t1, sizeof(t1), x->time_us);
			fmt_time(t2, sizeof(t2), pred);
			fmt_size(size, sizeof(size), x->bytes);
			fprintf(f, "| %s | %s | %s | %s | %.2f |\n", x->algo, size, t1, t2, x->time_us / pred);
		}
		fprintf(f, "\n");
	}
	if (!any)
		fprintf(f, "No run has loggp.csv (BASELINES without loggp).\n\n");
}

static void report_runs(FILE *f, struct run *runs, size_t n)
{
	static const char *const charts[] = { "allreduce-throughput", "allreduce-time", "reduce-throughput", "reduce-time",
					      "broadcast-throughput", "broadcast-time", "barrier-time", "loggp-fit",
					      "loggp-allreduce" };

	fprintf(f, "## Runs and their charts (newest first)\n\n");
	for (size_t i = n; i-- > 0;) {
		const struct run *r = &runs[i];
		char path[4400];

		fprintf(f, "### %s\n\n- experiment `%s`, %s, commit `%s`\n- topology %s, accelerator %s, host CPU %s\n"
			   "- status: %s\n",
			r->name, r->meta.experiment[0] ? r->meta.experiment : "?", r->meta.date[0] ? r->meta.date : "date unknown",
			r->meta.commit[0] ? r->meta.commit : "?", r->meta.topology, r->meta.accelerator,
			r->meta.host_cpu[0] ? r->meta.host_cpu : "unknown", r->meta.status[0] ? r->meta.status : "unknown");
		if (ceiling_of(r) > 0)
			fprintf(f, "- RDMA ceiling (ib_send_bw across the tree): %.2f MB/s\n", ceiling_of(r));
		if (r->unverified)
			fprintf(f, "- %zu row(s) with wrong elements left out of the charts and tables\n", r->unverified);
		fprintf(f, "\n");
		for (size_t c = 0; c < sizeof(charts) / sizeof(charts[0]); c++) {
			/* drawn when the script named by the chart's first word was written (see write_run_plots) */
			double lo, hi;
			snprintf(path, sizeof(path), "%s/plots/%.*s.gp", r->dir, (int)strcspn(charts[c], "-"), charts[c]);
			if (exists(path) && (strcmp(charts[c], "loggp-allreduce") || size_range(r, RES_ALLREDUCE, &lo, &hi)))
				fprintf(f, "![%s](%s/plots/%s.png)\n", charts[c], r->name, charts[c]);
		}
		fprintf(f, "\n");
	}
}

static int write_report(const char *dir, struct run *runs, size_t n, size_t bad)
{
	char path[4400];
	FILE *f = create(dir, "REPORT.md", path, sizeof(path));

	if (!f)
		return -1;
	fprintf(f, "# inclab results\n\nWritten by `make plots` from %zu run(s) in this directory", n);
	if (bad)
		fprintf(f, " (%zu more could not be read: see make plots' errors)", bad);
	fprintf(f, ". Every figure is from rows whose every element was verified on every rank; "
		   "MB/s are 10^6 bytes/s.\n\n");
	report_seed(f, runs, n);
	report_speedups(f, runs, n);
	report_loggp(f, runs, n);
	report_runs(f, runs, n);
	return finish(f, path);
}

/* ---- commands ------------------------------------------------------------------- */

static int cmp_runs(const void *a, const void *b)
{
	const struct run *x = a, *y = b;
	int c = strcmp(x->meta.date, y->meta.date);
	return c ? c : strcmp(x->name, y->name);
}

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

static int cmd_check(int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		char line[256] = "", err[RES_ERR_LEN];
		FILE *f = fopen(argv[i], "r");
		int rc;

		if (!f) {
			complain("%s: %s", argv[i], strerror(errno));
			continue;
		}
		if (!fgets(line, sizeof(line), f))
			line[0] = 0;
		rewind(f);
		if (!strncmp(line, RES_LOGGP_HEADER, strlen(RES_LOGGP_HEADER))) {
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
		printf("row %d: %s %s bytes=%llu nranks=%d time_us=%.2f algbw=%.2f busbw=%.2f wrong=%llu\n", x->line, x->algo,
		       res_coll_name(x->coll), (unsigned long long)x->bytes, x->nranks, x->time_us, x->algbw, x->busbw,
		       (unsigned long long)x->wrong);
	}
	if (ceiling_of(&r) > 0)
		printf("ceiling %.2f MB/s\n", ceiling_of(&r));
	if (r.fitted)
		printf("loggp L=%.3f o=%.3f G=%.6f a=%.3f G_pp=%.6f%s\n", r.fit.L, r.fit.o, r.fit.G, r.fit.a, r.fit.G_pp,
		       r.fit.L_clamped ? " (L clamped)" : "");
	else if (r.has_loggp)
		printf("loggp: no fit: %s\n", r.fit_err);
	free_run(&r);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: increport check FILE...       check results.csv / loggp.csv files\n"
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
