/*
 * params.h — where incsim's measured parameters come from: a lab run
 * directory (what `make exp-*` stores) or the command line. A parameter that
 * neither gives is an error that names it, never a default.
 *
 * From a run directory RUN:
 *   host o, G   RUN/loggp.csv's stream: gap(n) = o + n·G, least squares over
 *               the sizes measured (the lab's hosts are CPU-bound software
 *               RDMA: a stream's time per message is one end's o + n·G, which
 *               the model charges at each end)
 *   L           RUN/loggp.csv's half round trip at the smallest size - 2o
 *   link bw     RUN/results.csv's `ceiling` (ib_send_bw between two hosts
 *               across the tree), the median over the rounds
 *   link lat    the one-way latency per link that makes the model's smallest
 *               message take L on the wire: (L - switch frames' cost -
 *               serialisation) / links of the measured path (2 · tree_levels
 *               of RUN/meta.yaml: rank 0 to a rank under another leaf)
 *   c_sw        the switches' CPU in the run's INC measurements (RUN/cpu.csv)
 *               over the frames they received and sent (RUN/switch-counters.txt),
 *               as analysis/loggp.c has it; runs without both: --switch-frame-us
 */
#ifndef INCSIM_PARAMS_H
#define INCSIM_PARAMS_H

#include "model.h"

#include <string>

namespace incsim {

/** What a run directory gives; a value < 0 is not given. */
struct RunFigures {
	double o_us = -1, G_us = -1;   /* host CPU per message, per byte */
	double L_us = -1;              /* latency of the measured path */
	double half_rtt_us = -1, smallest = -1;
	double ceiling_MBps = -1;      /* the median `ceiling` row */
	double c_sw_us = -1;           /* switch CPU per frame */
	int tree_levels = 0, nranks = 0;
	std::string topology;
};

/**
 * ReadRun() - the figures of run directory @dir (loggp.csv, results.csv,
 * meta.yaml). Returns true, or false with a precise reason in @err: a file
 * missing or refused by the lab's readers (analysis/results.c), fewer than
 * two gap sizes, a negative per-byte time, no `ceiling` row, no tree_levels.
 */
bool ReadRun(const std::string &dir, RunFigures *f, std::string *err);

/**
 * LinkLatency() - the one-way latency of each link that makes the model's
 * message of @bytes over @hops links and @hops - 1 switches (each frame costs
 * c_sw in and out) take @L_us on the wire at @bw bytes/s. Returns seconds,
 * or a negative value when L is too short for the rest.
 */
double LinkLatency(double L_us, int hops, double sw_frame_s, double bw, double bytes);

} // namespace incsim

#endif
