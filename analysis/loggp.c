/*
 * loggp.c — LogGP fit and predictions (see loggp.h for the model and why).
 */
#include "loggp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

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

/* The line through the points of measure @which. */
static int fit_measure(const struct res_point *p, size_t n, enum res_measure which, double *a, double *b, int *used)
{
	double *x = calloc(n ? n : 1, sizeof(double)), *y = calloc(n ? n : 1, sizeof(double));
	size_t k = 0;
	int rc = -1;

	if (x && y) {
		for (size_t i = 0; i < n; i++)
			if (p[i].measure == which) {
				x[k] = p[i].bytes;
				y[k++] = p[i].value_us;
			}
		rc = loggp_line(x, y, k, a, b);
	}
	*used = (int)k;
	free(x);
	free(y);
	return rc;
}

int loggp_fit(const struct res_point *p, size_t n, struct loggp *m, char *err, size_t errlen)
{
	double g0;

	if (fit_measure(p, n, RES_HALF_RTT, &m->a, &m->G_pp, &m->n_pp) < 0) {
		snprintf(err, errlen, "half_rtt measured at %d size(s): the fit needs two or more sizes", m->n_pp);
		return -1;
	}
	if (fit_measure(p, n, RES_GAP, &g0, &m->G, &m->n_gap) < 0) {
		snprintf(err, errlen, "gap measured at %d size(s): the fit needs two or more sizes", m->n_gap);
		return -1;
	}
	if (m->G <= 0) {
		snprintf(err, errlen, "the streaming gap does not grow with the size (G = %.3g us/B): measurements too noisy", m->G);
		return -1;
	}
	/* a stream of tiny messages can fit a negative intercept: then no overhead is visible */
	m->o = m->g = g0 > 0 ? g0 : 0;
	m->L = m->a - 2 * m->o;
	m->L_clamped = m->L < 0;
	if (m->L_clamped)
		m->L = 0;
	return 0;
}

double loggp_p2p_us(const struct loggp *m, double bytes)
{
	return m->L + 2 * m->o + bytes * m->G;
}

double loggp_inc_allreduce_us(const struct loggp *m, double bytes)
{
	return loggp_p2p_us(m, bytes);
}

double loggp_ring_allreduce_us(const struct loggp *m, double bytes, int p)
{
	double steps = 2.0 * (p - 1);

	if (p < 2)
		return 0;
	return steps * (m->L + 2 * m->o) + steps / p * bytes * m->G;
}
