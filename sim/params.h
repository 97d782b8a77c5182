/*
 * params.h — where incsim's measured parameters come from: a lab run
 * directory (what `make exp-*` stores) or the command line. A parameter that
 * neither gives is an error that names it, never a default.
 *
 * From a run directory RUN, as the analytic model (analysis/loggp.c
 * loggp_params(), its own readers of loggp.csv, cpu.csv, switch-counters.txt)
 * measures them:
 *   host o_su, o_ack (a = o_sb - o_su), o_e, o_s, o_r, o_c, o_w, G_s, G_r,
 *               G_swap, G_copy, G_sum   the hosts' CPU per message,
 *               completion, message waited for and byte (loggp.h says how
 *               each is measured; o_su is o_sb and the ACK's share 0 when the
 *               UC stream was not measured, o_c 0 when the signaled stream was
 *               not, o_w 0 when the ping-pong on events was not, the loops' G
 *               0 when hostwork was not: as the analytic model, and said in
 *               meta.yaml)
 *   L           half a ping-pong at the smallest size - 2o, o = (o_s + o_r) / 2
 *   link bw     RUN/results.csv's `ceiling` (ib_send_bw between two hosts
 *               across the tree), the median over the rounds
 *   link lat    the one-way latency per link that makes the model's smallest
 *               message take L on the wire: (L - switch frames' cost -
 *               serialisation) / links of the measured path (2 · tree_levels
 *               of RUN/meta.yaml: rank 0 to a rank under another leaf)
 *   c_sw        the switches' CPU in the run's INC measurements (RUN/cpu.csv)
 *               over the frames they received and sent (RUN/switch-counters.txt)
 *   a call's    what a libinccl call takes beyond its path: the run's Barrier
 *   own time    (the median of its verified rows in results.csv, INC and the
 *               ring) less half a ping-pong (half_rtt = L + 2o, the path's one
 *               crossing without a call around it); the ring's per step, its
 *               Barrier over 2(P-1) steps. 0 when RUN has no Barrier of that
 *               algorithm (said in meta.yaml), or when the Barrier is quicker
 *   C           the lab machine's cores (meta.yaml host_cores) less those the
 *               rest of the machine used during the measurement simulated
 *               (cpu.csv's machine row; the median over its rounds, or over
 *               the run's measurements when it has none of that one)
 */
#ifndef INCSIM_PARAMS_H
#define INCSIM_PARAMS_H

#include "model.h"

#include <string>
#include <vector>

namespace incsim {

/** What a run directory gives (us, us/B); a value < 0 is not given. */
struct RunFigures {
	double o_su = -1, o_ack = -1, o_s = -1, o_r = -1, o_c = -1, o_w = -1;
	double o_e = -1;               /* an empty packet's send in a receiving host; < 0: not measured or not used (o_su) */
	double G_s = -1, G_r = -1, G_swap = -1, G_copy = -1, G_sum = -1;
	bool uc = false, signaled = false, waited = false, hostwork = false; /* measured and used (else the analytic
									     * model's stand-ins above) */
	bool signaled_seen = false, waited_seen = false; /* measured, used or not (not above 0: noise) */
	double L_us = -1;              /* latency of the measured path */
	double half_rtt_us = -1, smallest = -1;
	double ceiling_MBps = -1;      /* the median `ceiling` row */
	double c_sw_us = -1;           /* switch CPU per frame */
	double f_sw = -1;              /* frames the switches counted per frame the analytic model counts (shown) */
	double barrier_inc_us = -1, barrier_ring_us = -1; /* the median of results.csv's verified Barrier rows */
	int host_cores = 0;            /* meta.yaml host_cores */
	struct Others {
		std::string algo, coll;
		double bytes, cores;       /* the cores the rest of the machine used meanwhile */
	};
	std::vector<Others> others;    /* per measurement and round of cpu.csv that recorded the machine */
	int tree_levels = 0, nranks = 0;
	std::string topology;
};

/**
 * ReadRun() - the figures of run directory @dir (loggp.csv, results.csv,
 * meta.yaml; cpu.csv and switch-counters.txt when there). Returns true, or
 * false with a precise reason in @err: a file missing or refused by the
 * lab's readers (analysis/results.c, loggp.c), loggp.csv without the CPU
 * measures (a run from before them: give the host's o and G by hand), no
 * tree_levels or host_cores. A run without a verified `ceiling` row leaves
 * ceiling_MBps not given (below 0): the link bandwidth is then asked for.
 */
bool ReadRun(const std::string &dir, RunFigures *f, std::string *err);

/**
 * RunCores() - the cores the lab had for measurement @algo / @coll / @bytes
 * of run @f: host_cores less the median of what the rest of the machine
 * used in its rounds; in the run's measurements of other sizes when it has
 * none of that one; host_cores when the machine was never recorded. @how
 * says which.
 */
double RunCores(const RunFigures &f, const std::string &algo, const std::string &coll, double bytes, std::string *how);

/**
 * LinkLatency() - the one-way latency of each link that makes the model's
 * message of @bytes over @hops links and @hops - 1 switches (each frame costs
 * c_sw in and out) take @L_us on the wire at @bw bytes/s. Returns seconds,
 * or a negative value when L is too short for the rest.
 */
double LinkLatency(double L_us, int hops, double sw_frame_s, double bw, double bytes);

} // namespace incsim

#endif
