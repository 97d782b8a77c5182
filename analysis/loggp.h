/*
 * loggp.h — the LogGP model of the lab (seeds/004: one message T = L + 2o +
 * n·G), every parameter measured, not fitted to the collectives it predicts,
 * and the collective times it predicts.
 *
 * Parameters (experiments/loggp.sh's loggp.csv, cpu.csv and
 * switch-counters.txt of the same run, meta.yaml):
 *   o_s, o_r   host CPU per message, sending and receiving: the CPU time of
 *              each host's process on the lab machine (its VM) over a stream
 *              of small messages, per message (cpu_send, cpu_recv at the
 *              smallest size; the median of the repetitions); o = (o_s + o_r) / 2
 *   o_sb       o_s with the work requests posted LOGGP_BATCH (32, libinccl's
 *              POST_BATCH) per ibv_post_send() (cpu_send_batch); o_s when
 *              not measured (then every post counts alone)
 *   o_su, o_ru the batched stream over UC (cpu_send_uc, cpu_recv_uc): no
 *              acknowledgements. rxe acknowledges every message of an RC
 *              stream, so a = o_sb - o_su is what one ACK costs its sender;
 *              the switch acknowledges a host's sends once per LOGGP_SW_ACK
 *              (32, switch/engine.c ACK_EVERY) packets, so libinccl's send of
 *              k packets costs o_su + a·min(k, 32)/32 (an empty packet o_su +
 *              a/32 without o_e); o_sb when not measured
 *   o_e        an empty packet's send in a host that is receiving (a
 *              Broadcast's non-root, AllGather's and AllToAll's blocks of
 *              others): the 16 KiB stream's receiver while it sends 16
 *              messages of 8 B back over UC for each, 32 per post
 *              (cpu_empty_recv), less the same repetition's cpu_recv at
 *              16 KiB, measured a minute before it, over 16; the median of the
 *              repetitions (the difference of the medians when they do not
 *              pair). An empty packet then costs o_e and its share of the
 *              switch's ACK, a/32; o_su + a/32 when not measured or not
 *              above 0. The UC stream prices a send in a host that only
 *              sends. The hope was that a receiving host, awake anyway, pays
 *              less (the collectives of sweep-20261129-112412 left ~25 us an
 *              empty packet where o_su + a/32 said 64); measured, it paid
 *              52 - 71 us on the lab of 2026-11-29 (analysis/README.md)
 *   o_c        CPU per completion a send asks for (cpu_send_signaled: the
 *              stream of 16 KiB with every send signaled, less cpu_send at
 *              16 KiB, whose perftest asks one in LOGGP_PERFTEST_CQ = 100, per
 *              1 - 1/100; the median of each repetition's difference, the two
 *              streams measured back to back, when every repetition has both,
 *              else the difference of the medians): the streams' o already hold one in 100, the model
 *              adds o_c for every completion beyond that; 0 when not measured
 *   o_w        what a 16 KiB message costs its receiver beyond a stream's
 *              (o_r + G_r per byte) when the receiver sleeps waiting for it:
 *              the CPU per round trip of a ping-pong of 16 KiB sleeping on CQ
 *              events (each host sends one message and receives one; the
 *              mean of the two hosts) less the CPU per message of a 16 KiB
 *              stream's sender plus its receiver, measured as pairs: the
 *              stream and the ping-pong back to back (cpu_pair_send,
 *              cpu_pair_recv, cpu_pair_waited_send, cpu_pair_waited_recv),
 *              with each pair's guest interrupts per message and round trip
 *              (intr_pair_*). o_w is the median over the pairs of the
 *              interrupts a wait adds (the ping-pong's per round trip, the
 *              mean of the hosts, less the stream's per message sent and
 *              received) times the ping-pong's CPU per interrupt: the
 *              interrupts are steady where the CPU is not, so this holds
 *              where the difference of CPU swings (analysis/README.md: the
 *              medians of groups of 3 pairs 1,290 - 1,596 us against 718 -
 *              1,649); that price also carries a share of the ping-pong's
 *              per-byte work, so it is above the difference of CPU by some
 *              10 % (1,550 against 1,412 us over 20 pairs). Without every pair's interrupts: the median of the
 *              pairs' differences of CPU, which REPORT shows either way. A run from
 *              before the pairs: the mean of the two hosts' medians of
 *              cpu_waited_send, cpu_waited_recv less the medians of cpu_send +
 *              cpu_recv at 16 KiB, measured at other times. The guest is idle when the
 *              message comes, so it wakes for it and takes its packets a few
 *              interrupts at a time instead of a stream's NAPI batches (under
 *              TCG an interrupt costs the CPU of several packets). Counted
 *              for each message the ring receives that gates its next send
 *              (ring.c: a step sends what the step before received) where
 *              those gates go round the ring (AllReduce, AllGather,
 *              ReduceScatter; not a Broadcast's chain nor the AllToAll,
 *              whose forwarded pieces come well ahead of need), so the rank
 *              has nothing else to do meanwhile (loggp.c ring_waits());
 *              0 when not measured
 *   step_inc,  the time one step of a collective takes beyond its work, for
 *   step_ring  INC and the ring: the run's median Barrier of that algorithm
 *              (inccl_perf: after the barrier before each timed call the ranks
 *              start at different times, and a step waits for the last; the
 *              ring's Barrier is 2(P-1) steps of an empty message), set by the
 *              caller; 0: L + 2o (a run without Barriers)
 *   G_s, G_r   host CPU per byte sending and receiving: (CPU per message of
 *              the largest size - o) / its bytes
 *   L          half a ping-pong at the smallest size (half_rtt) - 2o: the
 *              time on the wire and in the switches
 *   G_swap,    the host's own CPU per byte in libinccl's loops (hostwork.c in
 *   G_copy,    the sending host, per pass over `bytes`): INC swaps the byte
 *   G_sum      order of every byte it sends and receives; the ring copies each
 *              byte it sends into a message and each it receives in a copy
 *              step, and sums each it receives in a reduce step (float32);
 *              0 when not measured (a run from before them), said in REPORT;
 *              a median within one clock tick (per pass) of 0 is 0, with that
 *              tick as its bound: smaller than /proc's clock can show
 *   g, G       the stream's wall time per small message (gap at the smallest
 *              size) and per byte (slope of gap over the sizes): shown, the
 *              lab's hosts are CPU-bound, so the work terms use G_s, G_r
 *   c_sw       switch CPU per frame: the switches' CPU time (cpu.csv) over
 *              the frames they received and sent (rx_frames + tx_frames of
 *              switch-counters.txt) in the run's INC measurements
 *   f_sw       the frames the switches counted per frame the model counts
 *              (loggp_frames(): data and the engine's ACKs; the measuring
 *              tool's barriers and tally in loggp_inc_switch_work()), in
 *              the same INC measurements: a check of the count (1.02 on
 *              the sweep of 2026-11-27; the rest is the ACKs a switch sends
 *              at the end of a round, which depend on its timing), not a
 *              factor of the prediction
 *   C          cores of the lab machine (meta.yaml host_cores): every host's
 *              VM and every switch shares them
 *
 * The time of a collective of N bytes (loggp_predict()):
 *   T = max(W_max, W_total / C) + steps · (L + 2o)
 * W_max is the busiest host's CPU work, W_total every host's plus the
 * switches' (frames · c_sw, loggp_frames()); each host's work counts its messages
 * (o per message, libinccl's sends as o_su, o_sb above, posted POST_BATCH
 * at a time), the completions its sends ask for (o_c), the messages it
 * waits for (o_w) and bytes (G per byte); steps are the steps on the critical path, each step_inc or
 * step_ring (L + 2o without them).
 * loggp_predict() documents each collective and algorithm.
 */
#ifndef LOGGP_H
#define LOGGP_H

#include <stdbool.h>
#include <stddef.h>

#include "results.h"

#define LOGGP_PKT 1024         /* the lab's RoCE MTU: one switch slot, one frame of data */
#define LOGGP_INC_MESSAGE 16   /* libinccl's packets per message (hostlib/comm.c default; meta.yaml message) */
#define LOGGP_INC_POST 32      /* libinccl's work requests per ibv_post_send() (POST_BATCH) */
#define LOGGP_RING_PIECE 16384 /* libinccl ring's bytes per message (ring.c RING_PIECE) */
#define LOGGP_RING_SIGNAL 16   /* the ring's sends per completion asked (ring.c RING_SIGNAL) */
#define LOGGP_INC_SIGNAL 16    /* libinccl's packets per completion asked, at least 4 messages (comm.c SIGNAL_EVERY) */
#define LOGGP_INC_WINDOW 512   /* libinccl's default window: a completion at least once per half of it */
#define LOGGP_SW_ACK 32        /* packets of a host the switch acknowledges with one ACK (switch/engine.c ACK_EVERY) */
#define LOGGP_SWITCH_ACK 2     /* a switch's frames to another switch per ACK (switch/engine.c SWITCH_ACK_EVERY) */
#define LOGGP_HOST_ACK 32      /* results to a host per ACK it sends (switch/engine.c HOST_ACK_EVERY: the AckReq bit) */
#define LOGGP_PERF_EXTRA 1     /* inccl_perf's calls of one packet per measurement besides a barrier before each
                                * call: the tally of wrong elements (hostlib/tools/inccl_perf.c run_size()) */
#define LOGGP_PERF_BARRIER_VERIFY 2 /* and a Barrier's verification round: two more barriers (verify_barrier()) */
#define LOGGP_PERFTEST_CQ 100  /* perftest's sends per completion asked (its default --cq-mod) */
#define LOGGP_MAX_LEVELS 8
#define LOGGP_PROBE_BYTES 16777216.0 /* the speed probe's pass (experiments/lib.sh EXP_PROBE_BYTES) */
#define LOGGP_SPEED_PROBES 3         /* the fewest probes whose median scales the hosts' work: one swings by half */
#define LOGGP_TICK_US 10000.0  /* /proc/PID/stat counts CPU time in ticks of 1/USER_HZ = 1/100 s */

/* The measured parameters; times in microseconds, per byte in us/B. */
struct loggp {
	double L, o, o_s, o_r, o_sb, G_s, G_r;
	double G_swap, G_copy, G_sum; /* host CPU per byte of libinccl's own loops; 0: not measured */
	bool hostwork;       /* G_swap, G_copy, G_sum measured */
	double hostwork_bound[3]; /* swap, copy, sum: when measured as 0 (within a clock tick), the most it can be (us/B) */
	double g, G;         /* the stream's wall time per small message and per byte */
	double half_rtt;     /* the ping-pong at the smallest size */
	double small, large; /* the sizes o and G were measured at */
	double c_sw, f_sw;   /* us per switch frame, frames per modelled data frame; 0: not measured */
	double C;            /* cores: the machine's, or those the lab had (the machine's less the rest's use) */
	int message;         /* libinccl's packets per message (meta.yaml; LOGGP_INC_MESSAGE by default) */
	bool batch;          /* o_sb measured */
	double o_su, o_ru;   /* the batched stream over UC, send and receive: no ACKs */
	bool uc_seen, uc;    /* the UC stream measured; and used (an ACK costs more than nothing) */
	double o_e;          /* an empty packet's send in a receiving host, without its ACK */
	bool empty_seen, empty; /* o_e measured; and used (above 0) */
	int n_empty_pairs;   /* o_e from the median of this many back-to-back plain and answered streams; 0: medians apart */
	double o_c;          /* CPU per completion asked */
	bool signaled_seen, signaled; /* o_c measured; and used (above 0) */
	int n_signaled_pairs; /* o_c from the median of this many back-to-back plain and signaled streams; 0: medians apart */
	double o_w;          /* a message received waiting, beyond a stream's */
	bool waited_seen, waited; /* o_w measured; and used (above 0) */
	int n_pairs;         /* o_w's pairs (cpu_pair_*) it is the median of; 0: from cpu_waited_* (a run before them) */
	double o_w_cpu;      /* the median of the pairs' differences of CPU (ping-pong less stream) */
	double o_w_min, o_w_max; /* the pairs' least and greatest difference of CPU */
	bool o_w_by_intr;    /* o_w is the interrupt-priced median (every pair's interrupts counted), else o_w_cpu */
	int n_intr;          /* the first pairs whose guest interrupts were counted (intr_pair_*); 0: none */
	double i_stream;     /* a host's interrupts per message sent and one received in the stream (send + receive) */
	double i_waited;     /* a host's interrupts per round trip of the ping-pong (the mean of the two hosts) */
	double i_extra;      /* the median over those pairs of i_waited - i_stream: the interrupts a wait adds */
	double o_intr;       /* the CPU per such interrupt: the same pairs' median o_w / i_extra; 0 when i_extra <= 0 */
	double o_intr_stream, o_intr_waited; /* the CPU per interrupt of the stream and of the ping-pong as a whole
					      * (medians over those pairs; 0 when a pair counted none): o_intr's check */
	double step_inc, step_ring; /* time per step (us) from the run's Barriers; 0: L + 2o */
	double probe_ref;    /* the speed probes' reference: cpu_sum's CPU per pass over LOGGP_PROBE_BYTES (us); 0: none */
	double speed;        /* how much slower the machine ran the collectives than loggp.sh's measures: the run's
			      * probes' median over probe_ref, which scales every host's work (the caller's; 0 or
			      * 1: as measured) */
	int n_cpu;           /* repetitions of each CPU measure used */
};

enum loggp_coll { LOGGP_ALLREDUCE, LOGGP_REDUCE, LOGGP_BROADCAST, LOGGP_ALLGATHER, LOGGP_REDUCESCATTER,
		  LOGGP_ALLTOALL, LOGGP_NCOLL };
enum loggp_algo { LOGGP_INC, LOGGP_RING };

/* A uniform tree: count[0] = 1 root switch, count[i] nodes at level i, hosts at the last level. */
struct loggp_tree {
	int levels;                   /* levels of nodes, hosts included (1-2-4: 3) */
	int count[LOGGP_MAX_LEVELS];
};

/* A prediction and its terms (us). */
struct loggp_pred {
	double t;             /* the prediction */
	double w_max;         /* the busiest host's work */
	double w_hosts;       /* every host's work */
	double w_sw;          /* the switches' work: frames · c_sw */
	double frames;        /* the frames the switches receive and send (loggp_frames()) */
	double acks;          /* of them, acknowledgements */
	double steps;         /* steps on the critical path */
	double step;          /* the time of one (step_inc, step_ring or L + 2o) */
	double waits;         /* messages each host receives waiting (o_w each): every rank waits alike */
	double idle;          /* the cores' time the waits leave idle: every host's waits x L */
	double extra_intr;    /* loggp_predict_intr(): the interrupts per call beyond the streams' rate */
	bool cpu_bound;       /* W_total / C > W_max */
};

/**
 * loggp_coll_parse() - the collective named @s (allreduce, reduce, broadcast,
 * allgather, reducescatter, alltoall), -1 if none.
 */
int loggp_coll_parse(const char *s);

/**
 * loggp_tree_parse() - the uniform tree of topology name @name ("1-2-4":
 * node counts per level, each a multiple of the one before, hosts last).
 * Returns 0, or -1 when @name is not such a list (2..LOGGP_MAX_LEVELS levels).
 */
int loggp_tree_parse(const char *name, struct loggp_tree *t);

/**
 * loggp_line() - least-squares line y = a + b·x through @n points.
 * Returns 0, or -1 when fewer than two distinct x are given.
 */
int loggp_line(const double *x, const double *y, size_t n, double *a, double *b);

/**
 * loggp_median() - sort @v[0..@n) ascending in place and return its median:
 * the middle value, or the mean of the middle two for an even @n; NAN when
 * @n is 0. Every median of the analysis (the model's measures, the report's
 * rounds) is this one, so that they agree. Values are compared with < and >
 * only: a NaN among them sorts anywhere.
 */
double loggp_median(double *v, size_t n);

/**
 * loggp_params() - the parameters from the points of loggp.csv (see above),
 * @cores (C), and the switches' @sw_cpu_us, @sw_frames (counted) and
 * @model_frames over the run's INC measurements (c_sw and f_sw; 0 when not
 * measured). Returns 0, or -1 with the reason in @err: a measure missing
 * (half_rtt and gap at two sizes or more, cpu_send and cpu_recv at two
 * sizes), or a parameter that is not physically meaningful (o_s, o_r, G_s,
 * G_r or L not above 0): the model refuses such data rather than clamp it.
 */
int loggp_params(const struct res_point *p, size_t n, int cores, double sw_cpu_us, double sw_frames,
		 double model_frames, struct loggp *m, char *err, size_t errlen);

/* The frames the switches of a tree receive and send for one collective, by kind. */
struct loggp_frames {
	double data; /* packets of data, empty packets and results, as they cross each link */
	double acks; /* the engine's acknowledgements of them */
};

/**
 * loggp_frames() - the frames the switches of @t receive and send (their
 * rx_frames + tx_frames, summed over every switch) for collective @c of
 * @bytes with in-network aggregation (@root for Reduce and Broadcast): per
 * packet of 1 KiB the data frames each link carries (a frame between two
 * switches counts at both, one on a host's link at its switch) and the ACKs
 * the switch engine's protocol sends for them: one per LOGGP_SWITCH_ACK
 * frames between switches, per LOGGP_SW_ACK of a host's sends, per
 * LOGGP_HOST_ACK results to a host. Returns data + ACKs; each in *@kinds
 * unless NULL. See loggp.c.
 */
double loggp_frames(const struct loggp_tree *t, enum loggp_coll c, double bytes, int root, struct loggp_frames *kinds);

/**
 * loggp_lone_frames() - the frames the switches of @t handle for a call of
 * one packet alone (a Barrier, inccl_perf's barrier before each call and its
 * tally): an AllReduce's data frames of one packet, each acknowledged on
 * its own (nothing follows it: the switch acknowledges at the end of its
 * round, the host the result that asks as the first after idle).
 */
double loggp_lone_frames(const struct loggp_tree *t);

/**
 * loggp_host_work() - the CPU (us) host @h (rank 0..@p-1) spends in
 * collective @c of @bytes by algorithm @a among @p ranks (@root for Reduce
 * and Broadcast): its sends, receives, completions, byte loops and, in the
 * ring, its waits, scaled by m->speed; loggp_predict()'s W per host. *@steps
 * (when not NULL): the steps on the critical path. Returns -1 when @a has no
 * such collective or a rank is out of range.
 */
double loggp_host_work(const struct loggp *m, int p, enum loggp_coll c, enum loggp_algo a, double bytes, int root,
		       int h, double *steps);

/**
 * loggp_predict() - the time of collective @c of @bytes by algorithm @a on
 * tree @t (@root for Reduce and Broadcast), with its terms in @out.
 * @bytes is inccl_perf's size: the buffer each rank reduces (AllReduce,
 * Reduce, ReduceScatter's input), sends (Broadcast's root, AllToAll: @bytes /
 * P to each rank) or gathers (AllGather's result, @bytes / P from each).
 * Returns the prediction, or -1 when @a has no such collective.
 */
double loggp_predict(const struct loggp *m, const struct loggp_tree *t, enum loggp_coll c, enum loggp_algo a,
		     double bytes, int root, struct loggp_pred *out);

/**
 * loggp_predict_intr() - @pr, loggp_predict()'s prediction on tree @t, with
 * the hosts' interrupts measured inside the calls in place of the streams':
 * @intr interrupts and @pkts rxe packets sent and received per call, all
 * hosts together (rxe.csv's timed_intr and timed_pkts over the timed calls).
 * Every term of the model is priced from perftest's streams, which took
 * m->i_stream interrupts per 16 KiB message sent and received (its 16
 * packets and the ACK, each counted by the host that sends it and the one
 * that receives it: 34); each interrupt the collective took beyond that rate
 * costs m->o_intr, each one fewer saves it, spread evenly over the hosts.
 * The counts hold the ring's waits, so their o_w (priced the same way) goes.
 * The interrupts are measured, not predicted: this shows what the price of
 * an interrupt explains. Fills @out (extra_intr: the interrupts beyond the
 * streams' rate); returns its time, or -1 without o_intr (no pairs counted
 * interrupts, or a wait added none) or without packets.
 */
double loggp_predict_intr(const struct loggp *m, const struct loggp_tree *t, const struct loggp_pred *pr,
			  double intr, double pkts, struct loggp_pred *out);

/* cpu.csv's header (experiments/lib.sh EXP_CPU_HEADER). */
#define LOGGP_CPU_HEADER "algorithm,collective,bytes,round,calls,node,role,cpu_us,wall_us"

/* One libinccl measurement of cpu.csv: its nodes' CPU time, summed by role. */
struct loggp_cpu_row {
	char algo[16];
	char coll[16];
	double bytes;
	int round, calls, hosts, switches;
	double host_max, host_sum, sw_sum; /* us of CPU during the whole measurement (calls collectives) */
	double machine;                    /* the whole machine's busy time meanwhile (us); -1: not recorded */
	double probe;                      /* the speed probe just before it: CPU of one pass of hostwork's float sum
					    * (us, as loggp.csv's cpu_sum); -1: not recorded */
	double wall;                       /* us */
};
struct loggp_cpu {
	struct loggp_cpu_row *r;
	size_t n, cap;
};

/**
 * loggp_load_cpu() - read cpu.csv (LOGGP_CPU_HEADER; each line one node of
 * one measurement, role host, switch, machine (the whole machine's busy
 * time) or probe (the machine's speed just before it: one pass of hostwork's
 * float sum, above 0), cpu_us and wall_us numbers;
 * consecutive lines of one measurement joined) into @c. Returns 0, or -1 with
 * "path:LINE: reason" in @err. A missing file is an error (the caller asks
 * first).
 */
int loggp_load_cpu(const char *path, struct loggp_cpu *c, char *err, size_t errlen);
void loggp_cpu_free(struct loggp_cpu *c);

/**
 * loggp_inc_switch_work() - what loggp_params() takes of a run's cpu.csv
 * (@c) on its tree @t: the switches' CPU (*@sw_cpu_us) and the frames the
 * model counts (*@model_frames) over the run's INC measurements: per
 * measurement of `calls` collectives loggp_frames() times the calls, and
 * inccl_perf's calls of one packet (loggp_lone_frames()): a barrier before
 * each call and the tally (LOGGP_PERF_EXTRA), a Barrier measurement's
 * verification round (LOGGP_PERF_BARRIER_VERIFY) besides; both 0 without.
 */
void loggp_inc_switch_work(const struct loggp_cpu *c, const struct loggp_tree *t, double *sw_cpu_us,
			   double *model_frames);

/**
 * loggp_cpu_others() - the cores the rest of the lab machine used during
 * measurement @r: its busy time (the machine row) less the lab's nodes',
 * over the wall time, in *@others (below 0 when the lab's own count ran
 * ahead of the machine's). Returns false when the machine was not recorded.
 */
bool loggp_cpu_others(const struct loggp_cpu_row *r, double *others);

/**
 * loggp_load_frames() - the frames every switch received and sent
 * (rx_frames + tx_frames) summed over every communicator in
 * switch-counters.txt ("... SWITCH comm N: name=value ..." lines; a
 * communicator's counters grow, so its last line counts, and a drop in
 * rx_frames starts a new one of the same number). Returns 0 with the sum in
 * *@frames, or -1 with the reason in @err (no such file, a counter that is
 * not a number).
 */
int loggp_load_frames(const char *path, double *frames, char *err, size_t errlen);

#endif
