/*
 * loggp.c — the LogGP parameters from the lab's measurements and the
 * collective times they predict (see loggp.h for the model and why).
 */
#include "loggp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int loggp_coll_parse(const char *s)
{
	static const char *const names[LOGGP_NCOLL] = { "allreduce", "reduce", "broadcast", "allgather",
							"reducescatter", "alltoall" };

	for (int i = 0; i < LOGGP_NCOLL; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

int loggp_tree_parse(const char *name, struct loggp_tree *t)
{
	const char *s = name;

	memset(t, 0, sizeof(*t));
	while (*s) {
		char *end;
		long v = strtol(s, &end, 10);
		if (end == s || v < 1 || v > 1000000 || t->levels == LOGGP_MAX_LEVELS)
			return -1;
		if (t->levels == 0 ? v != 1 : v % t->count[t->levels - 1] != 0)
			return -1;
		t->count[t->levels++] = (int)v;
		if (*end == '-' && end[1])
			end++;
		else if (*end)
			return -1;
		s = end;
	}
	return t->levels >= 2 ? 0 : -1;
}

int loggp_line(const double *x, const double *y, size_t n, double *a, double *b)
{
	double mx = 0, my = 0, sxx = 0, sxy = 0;

	if (n < 2)
		return -1;
	for (size_t i = 0; i < n; i++) {
		mx += x[i];
		my += y[i];
	}
	mx /= (double)n;
	my /= (double)n;
	for (size_t i = 0; i < n; i++) {
		sxx += (x[i] - mx) * (x[i] - mx);
		sxy += (x[i] - mx) * (y[i] - my);
	}
	if (sxx <= 0)
		return -1;
	*b = sxy / sxx;
	*a = my - *b * mx;
	return 0;
}

/* cmp_double() - qsort's ascending order of doubles: -1, 0 or 1 (0 for equal values, and for a NaN). */
static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double loggp_median(double *v, size_t n)
{
	if (!n)
		return NAN;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * median_at() - the median of the values of measure @which at @bytes (the
 * mean of the middle two for an even count; the first 64 such points at
 * most), its count in *@k; NAN when none.
 */
static double median_at(const struct res_point *p, size_t n, enum res_measure which, double bytes, int *k)
{
	double v[64];
	int m = 0;

	for (size_t i = 0; i < n && m < 64; i++)
		if (p[i].measure == which && p[i].bytes == bytes)
			v[m++] = p[i].value_us;
	*k = m;
	return loggp_median(v, (size_t)m);
}

/*
 * values_at() - the values of measure @which at @bytes in the file's order,
 * the first @max of them into @v; returns how many rows there are (beyond
 * @max too, so that a count compared with another's is the file's).
 */
static int values_at(const struct res_point *p, size_t n, enum res_measure which, double bytes, double *v, int max)
{
	int k = 0;

	for (size_t i = 0; i < n; i++)
		if (p[i].measure == which && p[i].bytes == bytes) {
			if (k < max)
				v[k] = p[i].value_us;
			k++;
		}
	return k;
}

#define LOGGP_MAX_PAIRS 64

/*
 * waited_pairs() - o_w from o_w's pairs (loggp.sh: the 16 KiB stream and the
 * ping-pong on events right after it, each pair's four CPU rows, then its
 * four interrupt rows, written together): per pair the ping-pong's CPU per
 * round trip (the mean of the two hosts) less the stream's send + receive
 * per message, their median o_w_cpu with their least and greatest; the
 * interrupts the same way over the first pairs that counted them (loggp.sh
 * stops counting at the first pair it could not, so they are the first
 * ones), and the CPU per interrupt of the stream and of the ping-pong as a
 * whole. o_w: when every pair counted its interrupts (each above 0), the
 * median of the interrupts a wait adds times the ping-pong's CPU per
 * interrupt, per pair; else o_w_cpu. Sets m->n_pairs (0: the file has no pairs, nothing else set);
 * returns -1 with @err when the rows are not whole pairs.
 */
static int waited_pairs(const struct res_point *p, size_t n, struct loggp *m, char *err, size_t errlen)
{
	static const enum res_measure cpu[4] = { RES_CPU_PAIR_SEND, RES_CPU_PAIR_RECV, RES_CPU_PAIR_WAITED_SEND,
						 RES_CPU_PAIR_WAITED_RECV },
				      intr[4] = { RES_INTR_PAIR_SEND, RES_INTR_PAIR_RECV, RES_INTR_PAIR_WAITED_SEND,
						  RES_INTR_PAIR_WAITED_RECV };
	double c[4][LOGGP_MAX_PAIRS], q[4][LOGGP_MAX_PAIRS], ow[LOGGP_MAX_PAIRS], owi[LOGGP_MAX_PAIRS],
	       is[LOGGP_MAX_PAIRS], iw[LOGGP_MAX_PAIRS], ix[LOGGP_MAX_PAIRS], ps[LOGGP_MAX_PAIRS], pw[LOGGP_MAX_PAIRS],
	       op[LOGGP_MAX_PAIRS];
	bool priced = true;
	int k[4], ki[4];

	for (int j = 0; j < 4; j++) {
		k[j] = values_at(p, n, cpu[j], LOGGP_RING_PIECE, c[j], LOGGP_MAX_PAIRS);
		ki[j] = values_at(p, n, intr[j], LOGGP_RING_PIECE, q[j], LOGGP_MAX_PAIRS);
	}
	m->n_pairs = 0;
	if (!k[0] && !k[1] && !k[2] && !k[3] && !ki[0] && !ki[1] && !ki[2] && !ki[3])
		return 0;
	if (k[0] != k[1] || k[0] != k[2] || k[0] != k[3] || !k[0] || k[0] > LOGGP_MAX_PAIRS) {
		snprintf(err, errlen, "loggp.csv has %d cpu_pair_send, %d cpu_pair_recv, %d cpu_pair_waited_send and %d "
				      "cpu_pair_waited_recv rows at %d B: not whole pairs of o_w (loggp.sh writes a pair's "
				      "four together, %d pairs at most)",
			 k[0], k[1], k[2], k[3], LOGGP_RING_PIECE, LOGGP_MAX_PAIRS);
		return -1;
	}
	if (ki[0] != ki[1] || ki[0] != ki[2] || ki[0] != ki[3] || ki[0] > k[0]) {
		snprintf(err, errlen, "loggp.csv has %d intr_pair_send, %d intr_pair_recv, %d intr_pair_waited_send and "
				      "%d intr_pair_waited_recv rows at %d B for %d pairs of o_w: not one of each for the "
				      "first pairs (loggp.sh writes a pair's four together)",
			 ki[0], ki[1], ki[2], ki[3], LOGGP_RING_PIECE, k[0]);
		return -1;
	}
	m->n_pairs = k[0];
	for (int i = 0; i < k[0]; i++) /* per host and round trip: one message sent, one received waiting */
		ow[i] = owi[i] = (c[2][i] + c[3][i]) / 2 - (c[0][i] + c[1][i]);
	m->o_w = m->o_w_cpu = loggp_median(ow, (size_t)k[0]); /* sorts ow */
	m->o_w_min = ow[0];
	m->o_w_max = ow[k[0] - 1];
	m->n_intr = ki[0];
	if (ki[0]) {
		for (int i = 0; i < ki[0]; i++) {
			is[i] = q[0][i] + q[1][i];
			iw[i] = (q[2][i] + q[3][i]) / 2;
			ix[i] = iw[i] - is[i];
			priced = priced && is[i] > 0 && iw[i] > 0;
			if (priced) { /* each regime's CPU per interrupt, the same pair's figures */
				ps[i] = (c[0][i] + c[1][i]) / is[i];
				pw[i] = (c[2][i] + c[3][i]) / 2 / iw[i];
				op[i] = ix[i] * pw[i]; /* the interrupts a wait adds at the ping-pong's price */
			}
		}
		if (priced) {
			m->o_intr_stream = loggp_median(ps, (size_t)ki[0]);
			m->o_intr_waited = loggp_median(pw, (size_t)ki[0]);
		}
		m->o_w_by_intr = priced && ki[0] == k[0];
		if (m->o_w_by_intr)
			m->o_w = loggp_median(op, (size_t)ki[0]);
		m->i_stream = loggp_median(is, (size_t)ki[0]);
		m->i_waited = loggp_median(iw, (size_t)ki[0]);
		m->i_extra = loggp_median(ix, (size_t)ki[0]);
		m->o_intr = m->i_extra > 0 ? loggp_median(owi, (size_t)ki[0]) / m->i_extra : 0;
	}
	return 0;
}

/*
 * paired_diff() - how much a 16 KiB stream of kind @other costs beyond the
 * plain one of kind @plain, per message: loggp.sh measures each repetition's
 * plain stream and, later in the same repetition, the other, so when there
 * are as many of each (the file's order pairs them) the median of the
 * repetitions' differences; else (a repetition whose other stream failed, a
 * file from elsewhere) the difference of the medians @plain_med and
 * @other_med. A run's slow drift cancels within a pair. *@pairs: how many
 * pairs, 0 for the medians' difference. o_c's (cpu_send_signaled against
 * cpu_send, measured right after it) and o_e's (cpu_empty_recv against
 * cpu_recv, a minute after it, the signaled stream between).
 */
static double paired_diff(const struct res_point *p, size_t n, enum res_measure plain, enum res_measure other,
			  double plain_med, double other_med, int *pairs)
{
	double pl[LOGGP_MAX_PAIRS], ot[LOGGP_MAX_PAIRS];
	int kp = values_at(p, n, plain, LOGGP_RING_PIECE, pl, LOGGP_MAX_PAIRS),
	    ko = values_at(p, n, other, LOGGP_RING_PIECE, ot, LOGGP_MAX_PAIRS);

	*pairs = 0;
	if (kp != ko || kp < 1 || kp > LOGGP_MAX_PAIRS)
		return other_med - plain_med;
	for (int i = 0; i < kp; i++)
		ot[i] -= pl[i];
	*pairs = kp;
	return loggp_median(ot, (size_t)kp);
}

/* The smallest (@want_max false) or largest size measured of @which; -1 when none. */
static double size_of(const struct res_point *p, size_t n, enum res_measure which, bool want_max)
{
	double s = -1;

	for (size_t i = 0; i < n; i++)
		if (p[i].measure == which && (s < 0 || (want_max ? p[i].bytes > s : p[i].bytes < s)))
			s = p[i].bytes;
	return s;
}

int loggp_params(const struct res_point *p, size_t n, int cores, double sw_cpu_us, double sw_frames,
		 double model_frames, struct loggp *m, char *err, size_t errlen)
{
	double x[64], y[64], a;
	size_t k = 0;
	int c1, c2, c3, c4;

	memset(m, 0, sizeof(*m));
	m->small = size_of(p, n, RES_CPU_SEND, false);
	m->large = size_of(p, n, RES_CPU_SEND, true);
	if (m->small < 0 || m->large <= m->small || size_of(p, n, RES_CPU_RECV, false) != m->small ||
	    size_of(p, n, RES_CPU_RECV, true) != m->large) {
		snprintf(err, errlen, "loggp.csv has no cpu_send and cpu_recv at two sizes (a run from before the CPU "
				      "measures): o and G cannot be measured");
		return -1;
	}
	m->o_s = median_at(p, n, RES_CPU_SEND, m->small, &c1);
	m->o_r = median_at(p, n, RES_CPU_RECV, m->small, &c2);
	m->G_s = (median_at(p, n, RES_CPU_SEND, m->large, &c3) - m->o_s) / (m->large - m->small);
	m->G_r = (median_at(p, n, RES_CPU_RECV, m->large, &c4) - m->o_r) / (m->large - m->small);
	m->n_cpu = c1 < c2 ? c1 : c2;
	m->o = (m->o_s + m->o_r) / 2;
	m->o_sb = median_at(p, n, RES_CPU_SEND_BATCH, m->small, &c1);
	m->batch = c1 > 0;
	if (!m->batch)
		m->o_sb = m->o_s;
	/* the refinements: each used only when measured and physically meaningful (an ACK, a completion,
	 * a message waited for that costs more than nothing); REPORT's parameter table says why one is not */
	m->o_su = median_at(p, n, RES_CPU_SEND_UC, m->small, &c3);
	m->o_ru = median_at(p, n, RES_CPU_RECV_UC, m->small, &c4);
	m->uc_seen = m->batch && c3 > 0 && c4 > 0;
	m->uc = m->uc_seen && m->o_su > 0 && m->o_sb - m->o_su > 0;
	double plain16 = median_at(p, n, RES_CPU_SEND, LOGGP_RING_PIECE, &c3),
	       sig16 = median_at(p, n, RES_CPU_SEND_SIGNALED, LOGGP_RING_PIECE, &c4);
	if (c3 > 0 && c4 > 0)
		m->o_c = paired_diff(p, n, RES_CPU_SEND, RES_CPU_SEND_SIGNALED, plain16, sig16, &m->n_signaled_pairs) /
			 (1 - 1.0 / LOGGP_PERFTEST_CQ);
	m->signaled_seen = c3 > 0 && c4 > 0;
	double r16 = median_at(p, n, RES_CPU_RECV, LOGGP_RING_PIECE, &c1),
	       e16 = median_at(p, n, RES_CPU_EMPTY_RECV, LOGGP_RING_PIECE, &c2);
	if (c1 > 0 && c2 > 0)
		m->o_e = paired_diff(p, n, RES_CPU_RECV, RES_CPU_EMPTY_RECV, r16, e16, &m->n_empty_pairs) /
			 (LOGGP_RING_PIECE / LOGGP_PKT); /* an empty packet per packet received (hostlib/comm.c) */
	m->empty_seen = c1 > 0 && c2 > 0;
	m->empty = m->empty_seen && m->o_e > 0;
	m->signaled = m->signaled_seen && m->o_c > 0;
	if (waited_pairs(p, n, m, err, errlen) < 0)
		return -1;
	if (m->n_pairs) {
		m->waited_seen = true;
	} else { /* a run from before the pairs: the medians of runs at other times */
		double ws = median_at(p, n, RES_CPU_WAITED_SEND, LOGGP_RING_PIECE, &c1),
		       wr = median_at(p, n, RES_CPU_WAITED_RECV, LOGGP_RING_PIECE, &c2),
		       recv16 = median_at(p, n, RES_CPU_RECV, LOGGP_RING_PIECE, &c4);
		m->waited_seen = c1 > 0 && c2 > 0 && c3 > 0 && c4 > 0;
		if (m->waited_seen) /* per host and round trip: one message sent, one received waiting */
			m->o_w = (ws + wr) / 2 - (plain16 + recv16);
	}
	m->waited = m->waited_seen && m->o_w > 0;
	if (!(m->o_s > 0) || !(m->o_r > 0) || !(m->o_sb > 0)) {
		snprintf(err, errlen, "host CPU per message not above 0 (o_s %.3g, o_r %.3g, batched o_s %.3g us): "
				      "the CPU measures are noise, not a parameter", m->o_s, m->o_r, m->o_sb);
		return -1;
	}
	if (!(m->G_s > 0) || !(m->G_r > 0)) {
		snprintf(err, errlen, "host CPU per byte not above 0 (G_s %.3g, G_r %.3g us/B): the CPU measures are "
				      "noise, not a parameter", m->G_s, m->G_r);
		return -1;
	}
	double small_rtt = size_of(p, n, RES_HALF_RTT, false);
	if (small_rtt < 0) {
		snprintf(err, errlen, "loggp.csv has no half_rtt: L cannot be measured");
		return -1;
	}
	m->half_rtt = median_at(p, n, RES_HALF_RTT, small_rtt, &c1);
	m->L = m->half_rtt - 2 * m->o;
	if (!(m->L > 0)) {
		snprintf(err, errlen, "L = half round trip %.3g us - 2o %.3g us is not above 0", m->half_rtt, 2 * m->o);
		return -1;
	}
	for (size_t i = 0; i < n && k < 64; i++)
		if (p[i].measure == RES_GAP) {
			x[k] = p[i].bytes;
			y[k++] = p[i].value_us;
		}
	if (loggp_line(x, y, k, &a, &m->G) < 0) {
		snprintf(err, errlen, "gap measured at fewer than two sizes: G (the stream's time per byte) unknown");
		return -1;
	}
	m->g = median_at(p, n, RES_GAP, size_of(p, n, RES_GAP, false), &c1);
	if (cores < 1) {
		snprintf(err, errlen, "the lab machine's cores (meta.yaml host_cores) unknown");
		return -1;
	}
	static const enum res_measure hw[3] = { RES_CPU_SWAP, RES_CPU_COPY, RES_CPU_SUM };
	double *hg[3] = { &m->G_swap, &m->G_copy, &m->G_sum };
	int hk = 0;
	for (int i = 0; i < 3; i++) {
		double bytes = size_of(p, n, hw[i], true), v = median_at(p, n, hw[i], bytes, &c1), tick = 0;
		if (!c1)
			continue;
		hk++;
		for (size_t j = 0; j < n; j++) /* one clock tick per pass of the difference: its resolution */
			if (p[j].measure == hw[i] && p[j].bytes == bytes)
				tick = LOGGP_TICK_US / p[j].iters;
		if (v > 0) {
			*hg[i] = v / bytes;
		} else if (v >= -tick) { /* within a tick of 0: smaller than the clock can show */
			*hg[i] = 0;
			m->hostwork_bound[i] = tick / bytes;
		} else {
			snprintf(err, errlen, "host work per pass of %.0f B is %.3g us, below 0 by more than a clock tick "
					      "(%.3g us): the hostwork measures are noise, not a parameter", bytes, v, tick);
			return -1;
		}
	}
	m->hostwork = hk == 3;
	if (!m->hostwork)
		m->G_swap = m->G_copy = m->G_sum = 0;
	double ref = median_at(p, n, RES_CPU_SUM, LOGGP_PROBE_BYTES, &c1);
	m->probe_ref = c1 > 0 && ref > 0 ? ref : 0;
	m->C = cores;
	m->message = LOGGP_INC_MESSAGE;
	if (sw_cpu_us > 0 && sw_frames > 0 && model_frames > 0) {
		m->c_sw = sw_cpu_us / sw_frames;
		m->f_sw = sw_frames / model_frames;
	}
	return 0;
}

/* ---- the tree ------------------------------------------------------------------ */

/* The hosts of @t (P): the count of its last level. */
static int hosts_of(const struct loggp_tree *t)
{
	return t->count[t->levels - 1];
}

/* Links between two switches: one up from every switch but the root. */
static double switch_links(const struct loggp_tree *t)
{
	double e = 0;

	for (int i = 1; i + 1 < t->levels; i++)
		e += t->count[i];
	return e;
}

/* Links between two switches on the root's path whose lower switch has the root host alone under it. */
static double root_alone_links(const struct loggp_tree *t)
{
	double e = 0;

	for (int i = 1; i + 1 < t->levels; i++)
		e += hosts_of(t) == t->count[i];
	return e;
}

/* The packets of LOGGP_PKT bytes that @bytes take, the last one short; 1 for none (a call of no data sends one empty). */
static double packets(double bytes)
{
	return bytes > 0 ? ceil(bytes / LOGGP_PKT) : 1;
}

/*
 * Per packet, the frames on each kind of link: between two switches up
 * (@sw_up) and down (@sw_down), a host's sends (@h_up) and results to hosts
 * (@h_down). Every rank sends every packet (a Broadcast's and a Route's
 * ranks without data an empty one: the slot fills from every child), up the
 * whole tree; down:
 *   AllReduce   to every host
 *   Broadcast   to every host but the root, and no switch with the root
 *               alone under it (switch/engine.c child_wants())
 *   Reduce      one path, to the root (a Route's: to its destination)
 */
static void per_packet(const struct loggp_tree *t, enum loggp_coll c, double *sw_up, double *sw_down, double *h_up,
		       double *h_down)
{
	double p = hosts_of(t);

	*sw_up = *sw_down = switch_links(t);
	*h_up = *h_down = p;
	if (c == LOGGP_BROADCAST || c == LOGGP_ALLGATHER) {
		*sw_down -= root_alone_links(t);
		*h_down = p - 1;
	} else if (c != LOGGP_ALLREDUCE) {
		*sw_down = t->levels - 2;
		*h_down = 1;
	}
}

/*
 * The switches' frames of collective @c of @bytes: per packet (1 KiB) of
 * each primitive call, a frame between two switches counts twice (sent by
 * one, received by the other), one on a host's link once; and the ACKs
 * the engine sends for them (switch/engine.c): a switch acknowledges
 * another's frames once per SWITCH_ACK_EVERY (every such frame asks), a
 * host's sends once per ACK_EVERY, and a host acknowledges its results
 * once per HOST_ACK_EVERY (the AckReq bit). These are the protocol's
 * least; a switch also acknowledges what it took in a round at the round's
 * end, and a host that paused at once: more ACKs as the timing makes them
 * (the sweep of 2026-11-27 counted 2 % more frames than this, the
 * Broadcast's empty packets 4 - 6 %). libinccl makes AllGather,
 * ReduceScatter and AllToAll of one primitive per block of N/P
 * (hostlib/coll.c): P Broadcasts, P Reduces, P(P-1) Routes (a Reduce's
 * path to its destination).
 */
double loggp_frames(const struct loggp_tree *t, enum loggp_coll c, double bytes, int root, struct loggp_frames *kinds)
{
	double su, sd, hu, hd, npk;
	int p = hosts_of(t);

	(void)root; /* a uniform tree: every root's path is alike */
	switch (c) {
	case LOGGP_ALLREDUCE:
	case LOGGP_BROADCAST:
	case LOGGP_REDUCE: npk = packets(bytes); break;
	case LOGGP_ALLGATHER:
	case LOGGP_REDUCESCATTER: npk = p * packets(bytes / p); break;
	case LOGGP_ALLTOALL: npk = p * (p - 1.0) * packets(bytes / p); break;
	default: npk = 0; break;
	}
	per_packet(t, c, &su, &sd, &hu, &hd);
	struct loggp_frames f = { npk * (2 * (su + sd) + hu + hd),
				  npk * (2 * (su + sd) / LOGGP_SWITCH_ACK + hu / LOGGP_SW_ACK + hd / LOGGP_HOST_ACK) };
	if (kinds)
		*kinds = f;
	return f.data + f.acks;
}

double loggp_lone_frames(const struct loggp_tree *t)
{
	struct loggp_frames f;

	loggp_frames(t, LOGGP_ALLREDUCE, 1, 0, &f);
	return 2 * f.data; /* each frame and its own ACK, counted where the frame is */
}

/* ---- host work ------------------------------------------------------------------- */

/* libinccl's packets per message after packet 0: m->message, LOGGP_INC_MESSAGE when not set (not above 0). */
static int inc_message(const struct loggp *m)
{
	return m->message > 0 ? m->message : LOGGP_INC_MESSAGE;
}

/* libinccl's messages for @bytes: packet 0 alone, then messages of m->message packets. */
static double inc_msgs(const struct loggp *m, double bytes)
{
	return 1 + ceil((packets(bytes) - 1) / inc_message(m));
}

/*
 * CPU of one libinccl send of @k packets to the switch, posted LOGGP_INC_POST
 * at a time: the UC stream's o_su and 1/LOGGP_SW_ACK of an ACK per packet
 * (the switch acknowledges once per 32), a whole one at most; o_sb (an RC
 * stream's, an ACK per message) when the UC stream was not measured.
 */
static double inc_post(const struct loggp *m, double k)
{
	if (!m->uc)
		return m->o_sb;
	return m->o_su + (m->o_sb - m->o_su) * (k < LOGGP_SW_ACK ? k : LOGGP_SW_ACK) / LOGGP_SW_ACK;
}

/*
 * CPU of the completions @wrs sends of @npk packets ask for beyond the
 * perftest streams' one in LOGGP_PERFTEST_CQ (which their o holds): one per
 * @every packets, rounded up. 0 when o_c was not measured.
 */
static double completions(const struct loggp *m, double wrs, double npk, double every)
{
	double extra = ceil(npk / every) - wrs / LOGGP_PERFTEST_CQ;

	return m->signaled && extra > 0 ? extra * m->o_c : 0;
}

/* libinccl's packets per completion asked (comm.c post_sends()): SIGNAL_EVERY, at least 4 messages, at most half the window. */
static double inc_signal(const struct loggp *m)
{
	double every = LOGGP_INC_SIGNAL > 4 * inc_message(m) ? LOGGP_INC_SIGNAL : 4 * inc_message(m);

	return every > LOGGP_INC_WINDOW / 2 ? LOGGP_INC_WINDOW / 2 : every;
}

/* CPU of sending @bytes through libinccl: packet 0 alone, messages of m->message packets, every byte swapped. */
static double inc_send(const struct loggp *m, double bytes)
{
	double npk = packets(bytes), msg = inc_message(m), full = floor((npk - 1) / msg), rest = npk - 1 - full * msg;

	return inc_post(m, 1) + full * inc_post(m, msg) + (rest > 0 ? inc_post(m, rest) : 0) +
	       completions(m, inc_msgs(m, bytes), npk, inc_signal(m)) + bytes * (m->G_s + m->G_swap);
}

/*
 * CPU of @npk empty packets through libinccl (a rank without data): a work
 * request each and its share of the switch's ACK (a/32, as inc_post()), the
 * same completions as data. A rank @receiving meanwhile (a Broadcast's
 * non-root, AllGather's other blocks) sends each at o_e, what loggp.sh
 * measured for one (inc_post(m, 1) without o_e); one that only sends them (an
 * AllToAll's rank in the Routes of blocks neither its own nor for it) at
 * inc_post(m, 1), as the UC stream's sender, which did nothing else either.
 */
static double inc_empty(const struct loggp *m, double npk, bool receiving)
{
	double each = receiving && m->empty ? m->o_e + (m->uc ? (m->o_sb - m->o_su) / LOGGP_SW_ACK : 0) : inc_post(m, 1);

	return npk * each + completions(m, npk, npk, inc_signal(m));
}

/* CPU of receiving @bytes of results through libinccl: a completion and a repost per message, every byte swapped. */
static double inc_recv(const struct loggp *m, double bytes)
{
	return inc_msgs(m, bytes) * m->o_r + bytes * (m->G_r + m->G_swap);
}

enum ring_way { RING_SEND, RING_COPY, RING_SUM };

/* The messages of at most LOGGP_RING_PIECE bytes that @bytes take in the ring (at least one). */
static double ring_msgs(double bytes)
{
	double k = ceil(bytes / LOGGP_RING_PIECE);

	return k < 1 ? 1 : k;
}

/*
 * CPU of @k messages of @each bytes the ring sends (each byte copied into its
 * message) or receives (each byte copied out, or summed in a reduce step):
 * one post, one completion per message of at most 16 KiB.
 */
static double ring_xfer(const struct loggp *m, double k, double each, enum ring_way way)
{
	double msgs = k * ring_msgs(each), b = k * each;

	if (way == RING_SEND) /* a completion per LOGGP_RING_SIGNAL sends */
		return msgs * m->o_s + completions(m, msgs, msgs, LOGGP_RING_SIGNAL) + b * (m->G_s + m->G_copy);
	return msgs * m->o_r + b * (m->G_r + (way == RING_SUM ? m->G_sum : m->G_copy));
}

/*
 * ring_waits() - the messages a host receives in ring collective @c while it
 * sleeps waiting for them (o_w each), P ranks, @b = N/P bytes per block: those
 * that gate its next send (ring.c: a send's `need`) where the gates go round
 * the ring, each rank's send waiting for its left's, which waited for its
 * left's: the ranks move in step, and each has caught up with its left when
 * the next message comes.
 *   AllReduce      every step's but a round's last: 2P-3 pieces of N/P per round
 *   AllGather,     the same of P-1 steps: P-2 per round (none at P = 2: one step,
 *   ReduceScatter  every send its own)
 *   Broadcast      none: the chain starts at a root that waits for nobody, and a
 *                  rank that forwards has more to do than the root (it receives
 *                  and sends), so its messages queue up rather than find it idle
 *   AllToAll       none: step s forwards what step s-1 brought, but step 1 is
 *                  the longest (P-1 blocks) and each step after it shorter, so
 *                  what a step forwards has long arrived when it is sent
 *   Reduce         none: the model of MPI's chain, whose ranks poll rather than sleep
 * The 1-2-4 sweeps of 2026-11-27 (analysis/README.md) show the two regimes: the
 * hosts' guest interrupts per rxe packet are 0.17 - 0.21 in the ring's
 * AllReduce, AllGather and ReduceScatter, 0.09 - 0.12 in its Broadcast and
 * AllToAll (a stream's, as INC's 0.06 - 0.09); a wait per forwarded message
 * put the Broadcast at +23..+40 % and the AllToAll at +17..+55 %.
 */
static double ring_waits(enum loggp_coll c, int p, double bytes)
{
	double b = bytes / p;

	switch (c) {
	case LOGGP_ALLREDUCE: return (2.0 * p - 3) * ring_msgs(b);
	case LOGGP_ALLGATHER:
	case LOGGP_REDUCESCATTER: return (p - 2.0) * ring_msgs(b);
	default: return 0;
	}
}

/*
 * Each host's work and the steps, per collective and algorithm (P ranks, N bytes):
 *   INC AllReduce      every host sends N and receives N; 1 step (up and down the
 *                      tree is the path the ping-pong crossed)
 *   INC Reduce         every host sends N, the root also receives N (the root is the
 *                      busiest: its receiving holds back the switches' slots and so
 *                      every sender, the back-pressure); 1 step
 *   INC Broadcast      the root sends N; every other rank sends one empty packet per
 *                      packet (a work request each, inc_empty()) and receives N; 1 step
 * libinccl's block collectives, one primitive per block of N/P, each block waiting
 * for its results before the next (hostlib/README.md, coll.c):
 *   INC AllGather      P Broadcasts: a host sends its block, and for each other block
 *                      its empty packets, and receives it; P steps
 *   INC ReduceScatter  P Reduces: a host sends its part of every block (N in all)
 *                      and receives its own block; P steps
 *   INC AllToAll       per-peer puts done one after another, as the seed's CPU proxy
 *                      (seeds/004, IBRC: T = L + 2o + M·G, M = (P-1)·N/P, the overhead
 *                      paid per peer, serially): a Route of each of the P(P-1) blocks,
 *                      every host sending its packets (data in its own P-1, empty in the
 *                      others') and receiving its P-1; P(P-1) steps
 *   ring AllReduce     reduce-scatter then all-gather: 2(P-1) steps, each host sends and
 *                      receives 2(P-1) pieces of N/P
 *   ring Broadcast     a chain from the root: every rank but the last receives and
 *                      forwards N, the root only sends, the last only receives; P-1 steps
 *   ring Reduce        the chain the other way (not in libinccl: the model for MPI's)
 *   ring AllGather,    P-1 steps, each host sends and receives P-1 pieces of N/P
 *   ReduceScatter
 *   ring AllToAll      forwarded hop by hop: each link carries P(P-1)/2 blocks, so each
 *                      host sends and receives P(P-1)/2 blocks of N/P; P-1 steps
 * Every byte a host handles also costs its own loops (G_swap, G_copy, G_sum: see loggp.h);
 * every completion its sends ask for beyond the streams' one in 100, o_c (libinccl one per
 * inc_signal() packets, the ring one per LOGGP_RING_SIGNAL messages); every message the
 * ring waits for (ring_waits()), o_w. A host's work is then scaled by m->speed (the
 * machine's speed during the collectives against loggp.sh's; the switches' c_sw is measured
 * in the collectives themselves). A step takes
 * step_inc or step_ring (the run's Barriers), L + 2o without them.
 *
 * loggp_predict() then adds what the waits cost beyond their CPU: a message a host waits
 * for reaches it L after its sender is done with it (LogGP's latency: the wire, the
 * switches, the wake-up, none of it any host's CPU), and for that time the waiting host's
 * core does nothing. So each wait adds L to its host's timeline (W_max + waits·L) and to
 * the cores' (W + P·waits·L over C). INC waits for nothing (its sends are windowed, not
 * gated by receives), and the cores stay busy in its calls; in the ring's they are not.
 * The 1-2-4 sweep of 2026-11-30 (analysis/README.md): inside the calls the lab's processes
 * kept 93 - 99 % of C busy in INC, 86 - 89 % in the ring; its AllReduce left 276 - 355 us
 * of a core idle per message waited for at 1, 8 and 512 MiB, where L was 232 us.
 */
double loggp_host_work(const struct loggp *m, int p, enum loggp_coll c, enum loggp_algo a, double bytes, int root,
		       int h, double *steps)
{
	double w, st = 1, npk = packets(bytes), b = bytes / p;

	if (p < 2 || root < 0 || root >= p || h < 0 || h >= p)
		return -1;
	if (a == LOGGP_INC) {
		switch (c) {
		case LOGGP_ALLREDUCE: w = inc_send(m, bytes) + inc_recv(m, bytes); break;
		case LOGGP_REDUCE: w = inc_send(m, bytes) + (h == root ? inc_recv(m, bytes) : 0); break;
		case LOGGP_BROADCAST: w = h == root ? inc_send(m, bytes) : inc_empty(m, npk, true) + inc_recv(m, bytes); break;
		case LOGGP_ALLGATHER: /* its block, and the others' as a non-root of their Broadcasts */
			w = inc_send(m, b) + (p - 1) * (inc_empty(m, packets(b), true) + inc_recv(m, b));
			st = p;
			break;
		case LOGGP_REDUCESCATTER: /* its part of every block, and its own block's result */
			w = p * inc_send(m, b) + inc_recv(m, b);
			st = p;
			break;
		case LOGGP_ALLTOALL: /* its P-1 blocks, empty packets in the others' P(P-1) - (P-1) */
			w = (p - 1) * (inc_send(m, b) + inc_recv(m, b)) + (p - 1.0) * (p - 1) * inc_empty(m, packets(b), false);
			st = p * (p - 1.0);
			break;
		default: return -1;
		}
	} else {
		int last = (root + p - 1) % p; /* the chain's end */
		switch (c) {
		case LOGGP_ALLREDUCE: /* P-1 pieces summed, P-1 copied */
			w = ring_xfer(m, 2.0 * (p - 1), b, RING_SEND) + ring_xfer(m, p - 1.0, b, RING_SUM) +
			    ring_xfer(m, p - 1.0, b, RING_COPY);
			st = 2.0 * (p - 1);
			break;
		case LOGGP_BROADCAST:
			w = (h != last ? ring_xfer(m, 1, bytes, RING_SEND) : 0) + (h != root ? ring_xfer(m, 1, bytes, RING_COPY) : 0);
			st = p - 1;
			break;
		case LOGGP_REDUCE: /* the chain ends at the root: the rank after it starts */
			w = (h != root ? ring_xfer(m, 1, bytes, RING_SEND) : 0) +
			    (h != (root + 1) % p ? ring_xfer(m, 1, bytes, RING_SUM) : 0);
			st = p - 1;
			break;
		case LOGGP_ALLGATHER:
		case LOGGP_REDUCESCATTER:
			w = ring_xfer(m, p - 1.0, b, RING_SEND) +
			    ring_xfer(m, p - 1.0, b, c == LOGGP_REDUCESCATTER ? RING_SUM : RING_COPY);
			st = p - 1;
			break;
		case LOGGP_ALLTOALL:
			w = ring_xfer(m, p * (p - 1) / 2.0, b, RING_SEND) + ring_xfer(m, p * (p - 1) / 2.0, b, RING_COPY);
			st = p - 1;
			break;
		default: return -1;
		}
		if (m->waited)
			w += ring_waits(c, p, bytes) * m->o_w;
	}
	if (steps)
		*steps = st;
	return w * (m->speed > 0 ? m->speed : 1); /* the machine as fast as when loggp.sh measured, or slower */
}

double loggp_predict(const struct loggp *m, const struct loggp_tree *t, enum loggp_coll c, enum loggp_algo a,
		     double bytes, int root, struct loggp_pred *out)
{
	int p = hosts_of(t);
	double steps = 1;
	struct loggp_pred r = { 0 };

	if (p < 2 || p > 4096 || root < 0 || root >= p)
		return -1;
	if (a == LOGGP_RING && m->waited) /* every rank waits alike */
		r.waits = ring_waits(c, p, bytes);
	for (int h = 0; h < p; h++) {
		double w = loggp_host_work(m, p, c, a, bytes, root, h, &steps);
		if (w < 0)
			return -1;
		r.w_hosts += w;
		if (w > r.w_max)
			r.w_max = w;
	}
	if (a == LOGGP_INC) {
		struct loggp_frames k;
		r.frames = loggp_frames(t, c, bytes, root, &k);
		r.acks = k.acks;
		r.w_sw = r.frames * m->c_sw;
	}
	r.steps = steps;
	r.step = a == LOGGP_INC ? m->step_inc : m->step_ring;
	if (!(r.step > 0))
		r.step = m->L + 2 * m->o;
	/* each message waited for keeps its host's core idle for its latency L (loggp_host_work()'s comment) */
	r.idle = p * r.waits * m->L;
	double shared = (r.w_hosts + r.w_sw + r.idle) / m->C, one = r.w_max + r.waits * m->L;
	r.cpu_bound = shared > one;
	r.t = (r.cpu_bound ? shared : one) + steps * r.step;
	if (out)
		*out = r;
	return r.t;
}

double loggp_predict_intr(const struct loggp *m, const struct loggp_tree *t, const struct loggp_pred *pr,
			  double intr, double pkts, struct loggp_pred *out)
{
	int p = hosts_of(t);
	/* the stream's packets per 16 KiB message, counted at both ends: its data and one ACK (rxe asks
	 * for an ACK on a message's last packet, and every 64 packets: never more in a 16-packet one) */
	double counted = 2 * (packets(LOGGP_RING_PIECE) + 1);
	struct loggp_pred r = *pr;

	if (!(m->n_intr > 0 && m->o_intr > 0 && m->i_stream > 0) || !(pkts > 0) || !(intr >= 0) || p < 1)
		return -1;
	r.extra_intr = intr - m->i_stream / counted * pkts;
	double sp = m->speed > 0 ? m->speed : 1; /* as loggp_predict() scales the hosts' work */
	double price = r.extra_intr * m->o_intr * sp, waited = r.waits * m->o_w * sp;
	r.w_max = pr->w_max - waited + price / p;
	r.w_hosts = pr->w_hosts - p * waited + price;
	if (r.w_max < 0)
		r.w_max = 0;
	if (r.w_hosts < 0)
		r.w_hosts = 0;
	r.waits = 0;
	double shared = (r.w_hosts + r.w_sw + r.idle) / m->C, one = r.w_max + r.idle / p;
	r.cpu_bound = shared > one;
	r.t = (r.cpu_bound ? shared : one) + r.steps * r.step;
	if (out)
		*out = r;
	return r.t;
}

/* ---- the run's CPU and frame records ---------------------------------------------------- */

int loggp_load_cpu(const char *path, struct loggp_cpu *c, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char buf[512];
	int line = 0;

	memset(c, 0, sizeof(*c));
	if (!f) {
		snprintf(err, errlen, "%s: cannot open", path);
		return -1;
	}
	while (fgets(buf, sizeof(buf), f)) {
		char *v[10], *s = buf, *nl = strchr(buf, '\n');
		int nf = 0;
		line++;
		if (!nl && !feof(f)) {
			snprintf(err, errlen, "%s:%d: line longer than %zu characters", path, line, sizeof(buf) - 2);
			goto bad;
		}
		if (nl)
			*nl = 0;
		if (line == 1) {
			if (strcmp(buf, LOGGP_CPU_HEADER)) {
				snprintf(err, errlen, "%s:1: header is not '%s'", path, LOGGP_CPU_HEADER);
				goto bad;
			}
			continue;
		}
		if (!buf[0])
			continue;
		for (v[nf++] = s; *s && nf < 10; s++)
			if (*s == ',') {
				*s = 0;
				v[nf++] = s + 1;
			}
		char *e1, *e2, *e3, *e4, *e5, *e6;
		double bytes = strtod(v[2], &e1), cpu = nf == 9 ? strtod(v[7], &e4) : 0, wall = nf == 9 ? strtod(v[8], &e5) : 0;
		long round = strtol(v[3], &e2, 10), calls = nf == 9 ? strtol(v[4], &e3, 10) : 0;
		(void)e6;
		if (nf != 9 || *e1 || *e2 || *e3 || *e4 || *e5 || !v[2][0] || !v[7][0] || !v[8][0] || bytes < 0 ||
		    round < 1 || calls < 1 || cpu < 0 || wall < 0 || strlen(v[0]) >= 16 || strlen(v[1]) >= 16 ||
		    (strcmp(v[6], "host") && strcmp(v[6], "switch") && strcmp(v[6], "machine") && strcmp(v[6], "probe")) ||
		    (!strcmp(v[6], "probe") && !(cpu > 0))) {
			snprintf(err, errlen,
				 "%s:%d: not 'algorithm,collective,bytes,round,calls,node,host|switch|machine|probe,cpu_us,wall_us' "
				 "(a probe's cpu_us above 0)",
				 path, line);
			goto bad;
		}
		struct loggp_cpu_row *r = c->n ? &c->r[c->n - 1] : NULL;
		if (!r || strcmp(r->algo, v[0]) || strcmp(r->coll, v[1]) || r->bytes != bytes || r->round != round ||
		    r->calls != calls || r->wall != wall) {
			if (c->n == c->cap) {
				size_t cap = c->cap ? 2 * c->cap : 64;
				void *p = realloc(c->r, cap * sizeof(*c->r));
				if (!p) {
					snprintf(err, errlen, "%s:%d: out of memory", path, line);
					goto bad;
				}
				c->r = p;
				c->cap = cap;
			}
			r = &c->r[c->n++];
			memset(r, 0, sizeof(*r));
			snprintf(r->algo, sizeof(r->algo), "%s", v[0]);
			snprintf(r->coll, sizeof(r->coll), "%s", v[1]);
			r->bytes = bytes;
			r->round = (int)round;
			r->calls = (int)calls;
			r->wall = wall;
			r->machine = -1;
			r->probe = -1;
		}
		if (!strcmp(v[6], "machine")) {
			r->machine = cpu;
		} else if (!strcmp(v[6], "probe")) {
			r->probe = cpu;
		} else if (!strcmp(v[6], "host")) {
			r->hosts++;
			r->host_sum += cpu;
			if (cpu > r->host_max)
				r->host_max = cpu;
		} else {
			r->switches++;
			r->sw_sum += cpu;
		}
	}
	if (line == 0) {
		snprintf(err, errlen, "%s: empty: no header line", path);
		goto bad;
	}
	fclose(f);
	return 0;
bad:
	fclose(f);
	loggp_cpu_free(c);
	return -1;
}

void loggp_cpu_free(struct loggp_cpu *c)
{
	free(c->r);
	memset(c, 0, sizeof(*c));
}

void loggp_inc_switch_work(const struct loggp_cpu *c, const struct loggp_tree *t, double *sw_cpu_us,
			   double *model_frames)
{
	*sw_cpu_us = *model_frames = 0;
	for (size_t i = 0; i < c->n; i++) {
		const struct loggp_cpu_row *r = &c->r[i];
		int coll = loggp_coll_parse(r->coll);
		bool barrier = !strcmp(r->coll, "barrier");
		if (strcmp(r->algo, "inc") || (coll < 0 && !barrier))
			continue;
		/* inccl_perf: a barrier before each call, the tally; a Barrier's calls are lone calls too */
		double lone = r->calls + LOGGP_PERF_EXTRA + (barrier ? r->calls + LOGGP_PERF_BARRIER_VERIFY : 0);
		*sw_cpu_us += r->sw_sum;
		*model_frames += lone * loggp_lone_frames(t) +
				 (barrier ? 0 : r->calls * loggp_frames(t, (enum loggp_coll)coll, r->bytes, 0, NULL));
	}
}

bool loggp_cpu_others(const struct loggp_cpu_row *r, double *others)
{
	if (r->machine < 0 || !(r->wall > 0))
		return false;
	*others = (r->machine - r->host_sum - r->sw_sum) / r->wall;
	return true;
}

/* The value of counter @name= in @line, or -1 (absent); -2 when it is not a whole number. */
static double counter(const char *line, const char *name)
{
	char key[40];
	const char *p;

	snprintf(key, sizeof(key), " %s=", name);
	if (!(p = strstr(line, key)))
		return -1;
	p += strlen(key);
	if (*p < '0' || *p > '9')
		return -2;
	char *end;
	double v = strtod(p, &end);
	return *end && *end != ' ' && *end != '\n' ? -2 : v;
}

int loggp_load_frames(const char *path, double *frames, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char buf[4096];
	struct { char key[80]; double rx, tx; } seen[512];
	int nseen = 0, line = 0;
	double total = 0;

	if (!f) {
		snprintf(err, errlen, "%s: cannot open", path);
		return -1;
	}
	while (fgets(buf, sizeof(buf), f)) {
		char *c = strstr(buf, " comm "), key[80];
		unsigned comm;
		line++;
		if (!c || sscanf(c, " comm %u:", &comm) != 1)
			continue;
		const char *w = c; /* the switch: the word before " comm " */
		while (w > buf && w[-1] != ' ')
			w--;
		snprintf(key, sizeof(key), "%.*s/%u", (int)(c - w) < 60 ? (int)(c - w) : 60, w, comm);
		double rx = counter(c, "rx_frames"), tx = counter(c, "tx_frames");
		if (rx == -1 && tx == -1)
			continue; /* another message of that communicator (a fault armed) */
		if (rx < 0 || tx < 0) {
			snprintf(err, errlen, "%s:%d: rx_frames or tx_frames missing or not a number", path, line);
			fclose(f);
			return -1;
		}
		int i = 0;
		while (i < nseen && strcmp(seen[i].key, key))
			i++;
		if (i == nseen) {
			if (nseen == 512) {
				snprintf(err, errlen, "%s:%d: more than 512 communicators", path, line);
				fclose(f);
				return -1;
			}
			snprintf(seen[nseen].key, sizeof(seen[nseen].key), "%s", key);
			seen[nseen].rx = seen[nseen].tx = 0;
			nseen++;
		} else if (rx < seen[i].rx) { /* counters start again: a new communicator of that number */
			total += seen[i].rx + seen[i].tx;
		}
		seen[i].rx = rx;
		seen[i].tx = tx;
	}
	fclose(f);
	for (int i = 0; i < nseen; i++)
		total += seen[i].rx + seen[i].tx;
	*frames = total;
	return 0;
}
