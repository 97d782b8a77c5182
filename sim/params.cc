/*
 * params.cc — the figures of a lab run directory (params.h), read with the
 * lab's own readers (analysis/results.c) and the analytic model's
 * parameters (analysis/loggp.c loggp_params()).
 */
#include "params.h"

extern "C" {
#include "../analysis/loggp.h"
#include "../analysis/results.h"
}

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace incsim {

namespace {

/* Median() - of @v (not empty), the mean of the middle two for an even count. */
double Median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	size_t n = v.size();
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

} // namespace

bool ReadRun(const std::string &dir, RunFigures *f, std::string *err)
{
	char e[RES_ERR_LEN] = "";
	struct res_meta meta = {};
	std::string mp = dir + "/meta.yaml", lp = dir + "/loggp.csv", rp = dir + "/results.csv";
	std::string cp = dir + "/cpu.csv", sp = dir + "/switch-counters.txt";
	struct stat st;
	if (res_load_meta(mp.c_str(), &meta, e, sizeof e) < 0) {
		*err = e;
		return false;
	}
	if (meta.tree_levels < 1 || meta.nranks < 2) {
		*err = mp + ": no tree_levels or nranks: not a run of the lab's experiments (or of another version)";
		return false;
	}
	if (meta.host_cores < 1) {
		*err = mp + ": no host_cores: the cores the lab's nodes shared are unknown (give --cores)";
		return false;
	}
	f->tree_levels = meta.tree_levels;
	f->nranks = meta.nranks;
	f->topology = meta.topology;
	f->host_cores = meta.host_cores;

	struct res_points pts = {};
	if (res_load_loggp(lp.c_str(), &pts, e, sizeof e) < 0) {
		*err = std::string(e) + " (the run measured no LogGP: give --host-o-us, --host-G-us-per-byte and --link-latency-us)";
		res_points_free(&pts);
		return false;
	}
	/* the switches' CPU and frames over the INC measurements, as increport gives them to loggp_params() */
	struct loggp_cpu cpu = {};
	double sw_cpu = 0, sw_frames = 0, model_frames = 0;
	struct loggp_tree tree = {};
	bool uniform = loggp_tree_parse(meta.topology, &tree) == 0;
	if (stat(cp.c_str(), &st) == 0) {
		if (loggp_load_cpu(cp.c_str(), &cpu, e, sizeof e) < 0) {
			*err = e;
			res_points_free(&pts);
			return false;
		}
		for (size_t i = 0; i < cpu.n; i++) {
			double o;
			if (loggp_cpu_others(&cpu.r[i], &o))
				f->others.push_back(RunFigures::Others{cpu.r[i].algo, cpu.r[i].coll, cpu.r[i].bytes, o});
		}
		if (uniform && stat(sp.c_str(), &st) == 0) {
			if (loggp_load_frames(sp.c_str(), &sw_frames, e, sizeof e) < 0) {
				*err = e;
				res_points_free(&pts);
				loggp_cpu_free(&cpu);
				return false;
			}
			loggp_inc_switch_work(&cpu, &tree, &sw_cpu, &model_frames);
		}
		loggp_cpu_free(&cpu);
	}
	struct loggp m = {};
	int rc = loggp_params(pts.p, pts.n, meta.host_cores, sw_cpu, sw_frames, model_frames, &m, e, sizeof e);
	double small = -1;
	for (size_t i = 0; i < pts.n; i++)
		if (pts.p[i].measure == RES_HALF_RTT && (small < 0 || pts.p[i].bytes < small))
			small = pts.p[i].bytes;
	res_points_free(&pts);
	if (rc < 0) {
		*err = lp + ": " + e + " (the analytic model's parameters; give --host-o-us, --host-G-us-per-byte and --link-latency-us)";
		return false;
	}
	f->uc = m.uc;
	f->o_su = m.uc ? m.o_su : m.o_sb;
	f->o_ack = m.uc ? m.o_sb - m.o_su : 0;
	f->o_e = m.empty ? m.o_e : -1;
	f->o_s = m.o_s;
	f->o_r = m.o_r;
	f->signaled = m.signaled;
	f->signaled_seen = m.signaled_seen;
	f->waited_seen = m.waited_seen;
	f->o_c = m.signaled ? m.o_c : 0;
	f->waited = m.waited;
	f->o_w = m.waited ? m.o_w : 0;
	f->G_s = m.G_s;
	f->G_r = m.G_r;
	f->hostwork = m.hostwork;
	f->G_swap = m.G_swap;
	f->G_copy = m.G_copy;
	f->G_sum = m.G_sum;
	f->L_us = m.L;
	f->half_rtt_us = m.half_rtt;
	f->smallest = small;
	if (m.c_sw > 0) {
		f->c_sw_us = m.c_sw;
		f->f_sw = m.f_sw;
	}

	struct res_table t = {};
	if (res_load_csv(rp.c_str(), &t, e, sizeof e) < 0) {
		*err = e;
		res_table_free(&t);
		return false;
	}
	std::vector<double> ceil, bar_inc, bar_ring;
	for (size_t i = 0; i < t.n; i++) {
		const res_row &w = t.rows[i];
		if (!strcmp(w.algo, "ceiling") && w.wrong == 0 && w.algbw > 0)
			ceil.push_back(w.algbw);
		if (w.coll == RES_BARRIER && w.wrong == 0 && w.time_us > 0 && (!strcmp(w.algo, "inc") || !strcmp(w.algo, "ring")))
			(strcmp(w.algo, "inc") ? bar_ring : bar_inc).push_back(w.time_us);
	}
	if (!bar_inc.empty())
		f->barrier_inc_us = Median(bar_inc);
	if (!bar_ring.empty())
		f->barrier_ring_us = Median(bar_ring);
	res_table_free(&t);
	if (!ceil.empty()) /* else not given: the caller asks for --link-bw-MBps, which wins over the run anyway */
		f->ceiling_MBps = Median(ceil);
	return true;
}

double RunCores(const RunFigures &f, const std::string &algo, const std::string &coll, double bytes, std::string *how)
{
	std::vector<double> same, all;
	for (const RunFigures::Others &o : f.others) {
		all.push_back(o.cores);
		if (o.algo == algo && o.coll == coll && o.bytes == bytes)
			same.push_back(o.cores);
	}
	char b[200];
	if (!same.empty() || !all.empty()) {
		double oth = Median(same.empty() ? all : same);
		bool less = oth > 0 && f.host_cores - oth > 0; /* as REPORT's analytic model: only a positive use less */
		snprintf(b, sizeof b, "host_cores %d less %.3f the rest of the machine used (cpu.csv, median of %s)%s", f.host_cores,
			 oth, same.empty() ? "the run's measurements" : "the measurement's rounds", less ? "" : ": none");
		*how = b;
		return less ? f.host_cores - oth : f.host_cores;
	}
	snprintf(b, sizeof b, "host_cores %d (the rest of the machine's use not recorded)", f.host_cores);
	*how = b;
	return f.host_cores;
}

double LinkLatency(double L_us, int hops, double sw_frame_s, double bw, double bytes)
{
	double wire = double(hops) * (bytes + kFrameOverhead + kPppBytes) / bw; /* store-and-forward at every hop */
	double sw = double(hops - 1) * 2 * sw_frame_s;                           /* each switch: the frame in and out */
	return (L_us * 1e-6 - wire - sw) / hops;
}

} // namespace incsim
