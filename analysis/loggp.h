/*
 * loggp.h — the LogGP model of seeds/004 (T = L + 2o + n·G) fitted from the
 * lab's ping-pong and streaming measurements (experiments/loggp.sh), and the
 * collective times it predicts.
 *
 * The fit (loggp_fit):
 *   half_rtt(n) = a + n·G_pp     least squares over every size measured;
 *                                a = L + 2o (one message, both ends' overhead)
 *   gap(n)      = g0 + n·G       least squares over every size measured;
 *                                G = time per byte of a back-to-back stream,
 *                                g0 = time per message of that stream at 0 B
 *   o = g0                       the ends are software (rxe, and under TCG an
 *                                emulated CPU): a stream is limited by the
 *                                per-message overhead, so g = o
 *   L = a - 2o                   (clamped at 0, and said so, if negative)
 * Times in microseconds, G in microseconds per byte (1/G is MB/s).
 */
#ifndef LOGGP_H
#define LOGGP_H

#include <stdbool.h>
#include <stddef.h>

#include "results.h"

struct loggp {
	double L, o, g, G;   /* us, us, us, us/byte */
	double a, G_pp;      /* the ping-pong line: a + n·G_pp */
	int n_pp, n_gap;     /* points in each fit */
	bool L_clamped;      /* a < 2o: L set to 0 */
};

/**
 * loggp_line() - least-squares line y = a + b·x through @n points.
 * Returns 0, or -1 when fewer than two distinct x are given.
 */
int loggp_line(const double *x, const double *y, size_t n, double *a, double *b);

/**
 * loggp_fit() - the parameters from the points of loggp.csv (see above).
 * Returns 0, or -1 with the reason in @err (fewer than two sizes of
 * half_rtt or gap, or a negative per-byte time).
 */
int loggp_fit(const struct res_point *p, size_t n, struct loggp *m, char *err, size_t errlen);

/** loggp_p2p_us() - one message of @bytes between two hosts: L + 2o + n·G. */
double loggp_p2p_us(const struct loggp *m, double bytes);

/**
 * loggp_inc_allreduce_us() - in-network AllReduce of @bytes per rank: every
 * rank's data goes up the tree and the result comes down, aggregated in
 * flight, over the same path as the measured host-to-host message (rank 0
 * to a rank under another leaf, through every level), so its time is one
 * such message: L + 2o + n·G. The switches' own work is not in the model;
 * measured against predicted shows what it costs.
 */
double loggp_inc_allreduce_us(const struct loggp *m, double bytes);

/**
 * loggp_ring_allreduce_us() - host-based ring AllReduce of @bytes on @p
 * ranks: 2(p-1) steps (reduce-scatter, then allgather), each one message of
 * n/p bytes to the next rank: 2(p-1)·(L + 2o) + 2(p-1)/p·n·G.
 */
double loggp_ring_allreduce_us(const struct loggp *m, double bytes, int p);

#endif
