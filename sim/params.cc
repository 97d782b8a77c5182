/*
 * params.cc — the figures of a lab run directory (params.h), read with the
 * lab's own readers (analysis/results.c) and line fit (analysis/loggp.c).
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

bool ReadRun(const std::string &dir, RunFigures *f, std::string *err)
{
	char e[RES_ERR_LEN] = "";
	struct res_meta meta = {};
	std::string mp = dir + "/meta.yaml", lp = dir + "/loggp.csv", rp = dir + "/results.csv";
	if (res_load_meta(mp.c_str(), &meta, e, sizeof e) < 0) {
		*err = e;
		return false;
	}
	if (meta.tree_levels < 1 || meta.nranks < 2) {
		*err = mp + ": no tree_levels or nranks: not a run of the lab's experiments (or of another version)";
		return false;
	}
	f->tree_levels = meta.tree_levels;
	f->nranks = meta.nranks;
	f->topology = meta.topology;

	struct res_points pts = {};
	if (res_load_loggp(lp.c_str(), &pts, e, sizeof e) < 0) {
		*err = std::string(e) + " (the run measured no LogGP: give --host-o-us, --host-G-us-per-byte and --link-latency-us)";
		res_points_free(&pts);
		return false;
	}
	std::vector<double> gx, gy;
	double small = -1, half = -1;
	for (size_t i = 0; i < pts.n; i++) {
		const struct res_point &p = pts.p[i];
		if (p.measure == RES_GAP) {
			gx.push_back(p.bytes);
			gy.push_back(p.value_us);
		} else if (p.measure == RES_HALF_RTT && (small < 0 || p.bytes < small)) {
			small = p.bytes;
			half = p.value_us;
		}
	}
	res_points_free(&pts);
	double a, b;
	if (loggp_line(gx.data(), gy.data(), gx.size(), &a, &b) < 0) {
		*err = lp + ": fewer than two sizes of gap: o and G cannot be fitted";
		return false;
	}
	if (b <= 0 || a < 0) {
		*err = lp + ": the gap's fit gives o = " + std::to_string(a) + " us, G = " + std::to_string(b) +
		       " us/B: not a stream the model can use (give --host-o-us and --host-G-us-per-byte)";
		return false;
	}
	if (half < 0) {
		*err = lp + ": no half_rtt: L cannot be found (give --link-latency-us)";
		return false;
	}
	f->o_us = a;
	f->G_us = b;
	f->smallest = small;
	f->half_rtt_us = half;
	f->L_us = half - 2 * a;

	struct res_table t = {};
	if (res_load_csv(rp.c_str(), &t, e, sizeof e) < 0) {
		*err = e;
		res_table_free(&t);
		return false;
	}
	std::vector<double> ceil;
	for (size_t i = 0; i < t.n; i++)
		if (!strcmp(t.rows[i].algo, "ceiling") && t.rows[i].wrong == 0 && t.rows[i].algbw > 0)
			ceil.push_back(t.rows[i].algbw);
	res_table_free(&t);
	if (ceil.empty()) {
		*err = rp + ": no `ceiling` row: the link bandwidth is not measured (give --link-bw-MBps)";
		return false;
	}
	std::sort(ceil.begin(), ceil.end());
	/* c_sw as analysis/loggp.c's loggp_params() has it: the switches' CPU in the INC
	 * measurements (cpu.csv) over the frames they received and sent (switch-counters.txt) */
	std::string cp = dir + "/cpu.csv", sp = dir + "/switch-counters.txt";
	struct stat st;
	if (stat(cp.c_str(), &st) == 0 && stat(sp.c_str(), &st) == 0) {
		struct loggp_cpu cpu = {};
		double frames = 0, sw = 0;
		if (loggp_load_cpu(cp.c_str(), &cpu, e, sizeof e) < 0 || loggp_load_frames(sp.c_str(), &frames, e, sizeof e) < 0) {
			*err = e;
			loggp_cpu_free(&cpu);
			return false;
		}
		for (size_t i = 0; i < cpu.n; i++)
			if (!strcmp(cpu.r[i].algo, "inc"))
				sw += cpu.r[i].sw_sum;
		loggp_cpu_free(&cpu);
		if (sw > 0 && frames > 0)
			f->c_sw_us = sw / frames;
	}
	size_t n = ceil.size();
	f->ceiling_MBps = n % 2 ? ceil[n / 2] : (ceil[n / 2 - 1] + ceil[n / 2]) / 2;
	return true;
}

double LinkLatency(double L_us, int hops, double sw_frame_s, double bw, double bytes)
{
	double wire = double(hops) * (bytes + kFrameOverhead + kPppBytes) / bw; /* store-and-forward at every hop */
	double sw = double(hops - 1) * 2 * sw_frame_s;                           /* each switch: the frame in and out */
	return (L_us * 1e-6 - wire - sw) / hops;
}

} // namespace incsim
